//! A crate that depends on qdq the way an engine does: by path, with cargo's default
//! profiles (opt-level 0 for `cargo run`), none of the qdq workspace's tuned settings.
//!
//! It runs the differential checks of qdq's own test suite (every op, every output and
//! input type, every layout, DynamicQuantizeLinear, the training functions, the
//! scale-computing quantizers; every ISA of
//! this CPU, sequential and parallel) against qdq-ref, once on the main thread and once on
//! a thread spawned with a 2 MiB stack (std's and rayon's default), so a kernel that needs
//! a large stack frame in an unoptimised build aborts the run. Run it with
//! `cargo xtask downstream` (or `cargo run --manifest-path xtask/downstream/Cargo.toml`).
//! Ends with the line `N passed, M failed`.

#[path = "../../../crates/qdq/tests/common/mod.rs"]
mod common;

type Check = (&'static str, fn());

const CHECKS: [Check; 13] = [
    ("quantize_every_output_type_from_f32", common::differential::quantize_every_output_type_from_f32),
    (
        "quantize_from_f16_bf16_i32_and_other_scale_types",
        common::differential::quantize_from_f16_bf16_i32_and_other_scale_types,
    ),
    ("dequantize_every_input_type", common::differential::dequantize_every_input_type),
    ("dynamic_quantize_matches_reference", common::differential::dynamic_quantize_matches_reference),
    ("large_parallel_per_axis_and_blocked", common::differential::large_parallel_per_axis_and_blocked),
    ("blocked_last_8bit", common::differential::blocked_last_8bit),
    ("per_axis_last_whole_bytes", common::differential::per_axis_last_whole_bytes),
    ("shards_match_the_whole_call", common::differential::shards_match_the_whole_call),
    (
        "training_matches_reference_every_type_and_layout",
        common::training::training_matches_reference_every_type_and_layout,
    ),
    ("scaled_rows_match_reference", common::scaled::rows_match_reference),
    ("scaled_onnxruntime_mode_matches_reference", common::scaled::onnxruntime_mode_matches_reference),
    ("scaled_mx_matches_reference", common::scaled::mx_matches_reference),
    ("scaled_nvfp4_matches_reference", common::scaled::nvfp4_matches_reference),
];

/// Runs every check; returns (passed, failed).
fn run_all(thread: &str) -> (usize, usize) {
    let (mut passed, mut failed) = (0, 0);
    for (name, check) in CHECKS {
        let t = std::time::Instant::now();
        match std::panic::catch_unwind(check) {
            Ok(()) => {
                passed += 1;
                println!("ok {thread} {name} ({:.1} s)", t.elapsed().as_secs_f64());
            }
            Err(_) => {
                failed += 1;
                println!("FAILED {thread} {name}");
            }
        }
    }
    (passed, failed)
}

fn main() {
    let profile = if cfg!(debug_assertions) { "debug assertions on" } else { "debug assertions off" };
    println!("qdq downstream check ({profile}); ISAs of this CPU: {:?}", qdq::Isa::available());
    // Two rayon workers with 2 MiB stacks, whatever this machine's core count.
    rayon::ThreadPoolBuilder::new().num_threads(2).stack_size(2 << 20).build_global().ok();
    let (p0, f0) = run_all("main");
    let small = std::thread::Builder::new()
        .name("stack-2MiB".into())
        .stack_size(2 << 20)
        .spawn(|| run_all("2MiB-thread"))
        .expect("spawn a thread");
    let (p1, f1) = small.join().expect("the 2 MiB thread's checks returned");
    let (passed, failed) = (p0 + p1, f0 + f1);
    println!("{passed} passed, {failed} failed");
    std::process::exit(if failed == 0 { 0 } else { 1 });
}
