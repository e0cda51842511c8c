//! Results do not depend on the caller's floating-point state: the differential suite's
//! key checks run with every qdq call made under denormals-are-zero, flush-to-zero, each
//! non-default rounding mode and unmasked exceptions (x86-64 MXCSR; FPCR's FZ, FZ16, DN,
//! AHP and rounding modes on aarch64), set on the calling thread and on every rayon pool
//! thread, on every ISA, sequential and parallel. The reference values are computed in the
//! default state. A second check shows that qdq hands the caller's state back.

mod common;

use common::{dparams, fpstate, qparams};

/// The checks run under each state (a subset of the differential suite that covers every
/// op, type and layout, with special values, subnormal scales and ties).
pub const CHECKS: [(&str, fn()); 11] = [
    ("quantize_every_output_type_from_f32", common::differential::quantize_every_output_type_from_f32),
    (
        "quantize_from_f16_bf16_i32_and_other_scale_types",
        common::differential::quantize_from_f16_bf16_i32_and_other_scale_types,
    ),
    ("dequantize_every_input_type", common::differential::dequantize_every_input_type),
    ("dynamic_quantize_matches_reference", common::differential::dynamic_quantize_matches_reference),
    ("blocked_last_8bit", common::differential::blocked_last_8bit),
    ("per_axis_last_whole_bytes", common::differential::per_axis_last_whole_bytes),
    (
        "training_matches_reference_every_type_and_layout",
        common::training::training_matches_reference_every_type_and_layout,
    ),
    ("scaled_rows_match_reference", common::scaled::rows_match_reference),
    ("scaled_blockwise_matches_reference", common::scaled::blockwise_matches_reference),
    ("scaled_mx_matches_reference", common::scaled::mx_matches_reference),
    ("scaled_nvfp4_matches_reference", common::scaled::nvfp4_matches_reference),
];

#[test]
fn results_do_not_depend_on_the_callers_floating_point_state() {
    let states = fpstate::states();
    assert!(!states.is_empty() || cfg!(not(any(target_arch = "x86_64", target_arch = "aarch64"))));
    for s in states {
        fpstate::set(Some(s));
        for (name, check) in CHECKS {
            check();
            println!("{}: {name} passed", s.name);
        }
        fpstate::set(None);
    }
}

#[test]
fn the_callers_state_is_handed_back() {
    let x: Vec<f32> = (0..70_000).map(|i| (i as f32 - 35_000.0) * 1e-3).collect();
    let mut y = vec![0u8; x.len()];
    for s in fpstate::states() {
        for isa in common::isas() {
            for cfg in [
                qdq::Config::sequential().with_isa(isa),
                qdq::Config { parallel_threshold: 0, ..qdq::Config::default() }.with_isa(isa),
            ] {
                let old = fpstate::apply(s, false);
                let r = qdq::dynamic_quantize_with(&cfg, &x, &mut y).map(|_| ());
                let now = fpstate::register();
                fpstate::restore(old, false);
                r.unwrap();
                // x86 keeps the exception flags the call raised (bits 0-5); the control bits
                // must be the caller's.
                let control = if cfg!(target_arch = "x86_64") { !0x3Fu64 } else { !0u64 };
                assert_eq!(now & control, s.bits & control, "{isa} {cfg:?}: state {} not restored", s.name);
            }
        }
    }
}

/// With every exception unmasked, a NaN, an overflow, a division by zero or an inexact
/// result would trap (SIGFPE) if qdq computed under the caller's state; it computes under
/// the default one, so the calls below (specials, tiny and zero scales) return the
/// reference's bits.
#[test]
fn unmasked_exceptions_do_not_trap() {
    use qdq::{DataType, Layout, Packed, QuantizeOptions, Values, ValuesMut};
    let specials = common::F32_SPECIALS;
    let x: Vec<f32> =
        (0..4096).map(|i| specials[i % specials.len()] * (1.0 + (i / specials.len()) as f32 * 1e-3)).collect();
    let mut rng = common::Rng::new(0x5eed);
    let codes: Vec<u8> = (0..x.len()).map(|_| rng.next_u64() as u8).collect();
    let types =
        [DataType::U8, DataType::I8, DataType::U16, DataType::I4, DataType::E4M3Fn, DataType::E5M2, DataType::E2M1];
    for s in fpstate::trapping_states() {
        for (name, cfg) in common::configs() {
            for scale in [0.0f32, 1e-40, 0.37, 3e38] {
                for t in types {
                    let opts = QuantizeOptions::new(t);
                    let n = t.byte_len(x.len()).unwrap();
                    let (mut want, mut got) = (vec![0u8; n], vec![0u8; n]);
                    let run = |cfg: Option<&qdq::Config>, y: &mut [u8]| match cfg {
                        None => qdq_ref::quantize(
                            Values::F32(&x),
                            &qparams(Values::F32(&[scale]), None, Layout::PerTensor, &opts),
                            qdq::PackedMut::new(opts.output, y),
                        ),
                        Some(c) => qdq::quantize_with(
                            c,
                            Values::F32(&x),
                            &qparams(Values::F32(&[scale]), None, Layout::PerTensor, &opts),
                            qdq::PackedMut::new(opts.output, y),
                        ),
                    };
                    run(None, &mut want).unwrap();
                    let old = fpstate::apply(s, false);
                    let r = run(Some(&cfg), &mut got);
                    fpstate::restore(old, false);
                    r.unwrap();
                    if let Some(i) = (0..n).find(|&i| want[i] != got[i]) {
                        panic!("{name} under {}: quantize f32 -> {t}, scale {scale:e}: byte {i}: want {:#04x}, got {:#04x}", s.name, want[i], got[i]);
                    }
                }
                for t in [DataType::U8, DataType::I8, DataType::E4M3Fn, DataType::E2M1] {
                    let len = x.len() * 8 / t.bits() as usize;
                    let xp = Packed { dtype: t, len, data: &codes[..t.byte_len(len).unwrap()] };
                    let (mut want, mut got) = (vec![0f32; len], vec![0f32; len]);
                    qdq_ref::dequantize(
                        xp,
                        &dparams(Values::F32(&[scale]), None, Layout::PerTensor),
                        ValuesMut::F32(&mut want),
                    )
                    .unwrap();
                    let old = fpstate::apply(s, false);
                    let r = qdq::dequantize_with(
                        &cfg,
                        xp,
                        &dparams(Values::F32(&[scale]), None, Layout::PerTensor),
                        ValuesMut::F32(&mut got),
                    );
                    fpstate::restore(old, false);
                    r.unwrap();
                    same_f32(&format!("{name} under {}: dequantize {t} -> f32, scale {scale:e}", s.name), &want, &got);
                }
            }
            let (mut want, mut got) = (vec![0u8; x.len()], vec![0u8; x.len()]);
            let w = qdq_ref::dynamic_quantize(&x, &mut want).unwrap();
            let old = fpstate::apply(s, false);
            let g = qdq::dynamic_quantize_with(&cfg, &x, &mut got);
            fpstate::restore(old, false);
            let g = g.unwrap();
            assert_eq!((w.0.to_bits(), w.1, &want), (g.0.to_bits(), g.1, &got), "{name} under {}: dynamic", s.name);
        }
        println!("{}: passed", s.name);
    }
}

/// Bit-identical f32 outputs; the first difference is reported.
fn same_f32(what: &str, want: &[f32], got: &[f32]) {
    assert_eq!(want.len(), got.len(), "{what}: lengths");
    for (i, (w, g)) in want.iter().zip(got).enumerate() {
        assert!(
            w.to_bits() == g.to_bits(),
            "{what}: element {i}: want {:#010x}, got {:#010x}",
            w.to_bits(),
            g.to_bits()
        );
    }
}
