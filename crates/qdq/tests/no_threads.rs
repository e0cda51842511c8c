//! The differential and small exhaustive checks without any thread: qemu user-mode
//! emulation in this sandbox hangs on `clone`, and libtest runs every test on a thread, so
//! the aarch64 / NEON run (`.ci/run`) uses this `harness = false` binary instead. It ends
//! with the line `N passed, M failed`.

mod common;

fn main() {
    common::NO_THREADS.store(true, std::sync::atomic::Ordering::Relaxed);
    println!("ISAs: {:?}", qdq::Isa::available());
    let checks: [(&str, fn()); 25] = [
        ("quantize_every_output_type_from_f32", common::differential::quantize_every_output_type_from_f32),
        (
            "quantize_from_f16_bf16_i32_and_other_scale_types",
            common::differential::quantize_from_f16_bf16_i32_and_other_scale_types,
        ),
        ("quantize_with_precision_attribute", common::differential::quantize_with_precision_attribute),
        ("quantize_with_middle_zero_points", common::differential::quantize_with_middle_zero_points),
        ("quantize_lengths_0_to_512_all_isas", common::differential::quantize_lengths_0_to_512_all_isas),
        ("dequantize_every_input_type", common::differential::dequantize_every_input_type),
        ("dynamic_quantize_matches_reference", common::differential::dynamic_quantize_matches_reference),
        ("large_parallel_per_axis_and_blocked", common::differential::large_parallel_per_axis_and_blocked),
        ("blocked_last_8bit", common::differential::blocked_last_8bit),
        ("per_axis_last_whole_bytes", common::differential::per_axis_last_whole_bytes),
        ("shards_match_the_whole_call", common::differential::shards_match_the_whole_call),
        (
            "every_f16_and_bf16_pattern_through_quantize",
            common::exhaustive::every_f16_and_bf16_pattern_through_quantize,
        ),
        (
            "every_code_of_every_type_through_dequantize",
            common::exhaustive::every_code_of_every_type_through_dequantize,
        ),
        (
            "training_matches_reference_every_type_and_layout",
            common::training::training_matches_reference_every_type_and_layout,
        ),
        ("training_lengths_0_to_512", common::training::training_lengths_0_to_512),
        ("scaled_rows_match_reference", common::scaled::rows_match_reference),
        ("scaled_blockwise_matches_reference", common::scaled::blockwise_matches_reference),
        ("scaled_onnxruntime_mode_matches_reference", common::scaled::onnxruntime_mode_matches_reference),
        ("scaled_onnxruntime_mode_ties", common::scaled::onnxruntime_mode_ties),
        ("scaled_blockwise_wide_columns", common::scaled::blockwise_wide_columns),
        ("scaled_mx_matches_reference", common::scaled::mx_matches_reference),
        ("scaled_nvfp4_matches_reference", common::scaled::nvfp4_matches_reference),
        ("scaled_large", common::scaled::large_scaled_parallel),
        ("scaled_round_trip", common::scaled::outputs_round_trip_through_dequantize),
        ("training_large_parallel", common::training::training_large_parallel),
    ];
    let (mut passed, mut failed) = (0, 0);
    for (name, check) in checks {
        let t = std::time::Instant::now();
        match std::panic::catch_unwind(check) {
            Ok(()) => {
                passed += 1;
                println!("ok {name} ({:.1} s)", t.elapsed().as_secs_f64());
            }
            Err(_) => {
                failed += 1;
                println!("FAILED {name}");
            }
        }
    }
    // The same bits under every non-default floating-point state of this target (FPCR on
    // aarch64: flush-to-zero, default NaN, alternative half precision, rounding modes).
    let under_states: [(&str, fn()); 6] = [
        ("quantize_every_output_type_from_f32", common::differential::quantize_every_output_type_from_f32),
        ("dequantize_every_input_type", common::differential::dequantize_every_input_type),
        ("dynamic_quantize_matches_reference", common::differential::dynamic_quantize_matches_reference),
        (
            "training_matches_reference_every_type_and_layout",
            common::training::training_matches_reference_every_type_and_layout,
        ),
        ("scaled_blockwise_matches_reference", common::scaled::blockwise_matches_reference),
        ("scaled_mx_matches_reference", common::scaled::mx_matches_reference),
    ];
    for state in common::fpstate::states() {
        for (name, check) in under_states {
            common::fpstate::set(Some(state));
            let t = std::time::Instant::now();
            let r = std::panic::catch_unwind(check);
            common::fpstate::set(None);
            if r.is_ok() {
                passed += 1;
                println!("ok {name} under {} ({:.1} s)", state.name, t.elapsed().as_secs_f64());
            } else {
                failed += 1;
                println!("FAILED {name} under {}", state.name);
            }
        }
    }
    println!("{passed} passed, {failed} failed");
    std::process::exit(if failed == 0 { 0 } else { 1 });
}
