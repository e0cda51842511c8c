//! Shared check functions (see the test files that call them).
#![allow(dead_code)]

use qdq::{Config, DataType, Layout, Packed, QuantizeOptions, Values, ValuesMut};
use rayon::prelude::*;

use super::{dparams, isas, qparams};

fn compare_codes(what: &str, out: DataType, want: &[u8], got: &[u8], input: impl Fn(usize) -> String) {
    if want != got {
        let n = want.len() * 8 / out.bits() as usize;
        let i = (0..n).find(|&i| qdq::packing::get(out, want, i) != qdq::packing::get(out, got, i)).unwrap_or(0);
        panic!(
            "{what} -> {out}: element {i} ({}): want {:#x}, got {:#x}",
            input(i),
            qdq::packing::get(out, want, i),
            qdq::packing::get(out, got, i)
        );
    }
}

pub fn every_f16_and_bf16_pattern_through_quantize() {
    let patterns: Vec<u16> = (0..=u16::MAX).collect();
    let h: Vec<qdq::f16> = patterns.iter().map(|b| qdq::f16::from_bits(*b)).collect();
    let b: Vec<qdq::bf16> = patterns.iter().map(|b| qdq::bf16::from_bits(*b)).collect();
    for out in DataType::QUANTIZED {
        for (sat, scale) in [(true, 1.0f32), (false, 0.375), (true, 3.0e-3), (true, -7.5), (false, 1.0 / 3.0)] {
            let opts = QuantizeOptions { output: out, saturate: sat, precision: None };
            let bytes = out.byte_len(patterns.len()).unwrap();
            for (name, x, s) in [
                ("f16", Values::F16(&h), Values::F16(&[qdq::f16::from_f32(scale)])),
                ("bf16", Values::Bf16(&b), Values::Bf16(&[qdq::bf16::from_f32(scale)])),
                ("f16/f32 scale", Values::F16(&h), Values::F32(&[scale])),
            ] {
                let mut want = vec![0u8; bytes];
                qdq_ref::quantize(
                    x,
                    &qparams(s, None, Layout::PerTensor, &opts),
                    qdq::PackedMut::new(opts.output, &mut want),
                )
                .unwrap();
                for isa in isas() {
                    let mut got = vec![0u8; bytes];
                    qdq::quantize_with(
                        &Config::sequential().with_isa(isa),
                        x,
                        &qparams(s, None, Layout::PerTensor, &opts),
                        qdq::PackedMut::new(opts.output, &mut got),
                    )
                    .unwrap();
                    compare_codes(&format!("{isa} {name} s={scale} sat={sat}"), out, &want, &got, |i| {
                        format!("pattern {:#06x}", patterns[i])
                    });
                }
            }
        }
    }
}

/// Every f16 and bf16 x through the 8- and 4-bit integer types, with the scales whose
/// reciprocal is furthest from exact. In a 16-bit precision the kernels round `x * RN(1/s)`
/// to the precision without Markstein's correction; the argument that this gives the same
/// integer (the `quantize` module docs) needs `|x * r - x / s|` below the distance from
/// `x / s` to the nearest midpoint of the precision, at least `1 / (M S)` relative to
/// the quotient for odd significands `M < 2^(p+1)`, `S < 2^p`: tightest for the widest
/// odd scale significands with the worst reciprocals, so those are the scales here.
pub fn every_f16_and_bf16_pattern_with_worst_reciprocals() {
    // The odd significands of `bits` bits whose reciprocal is furthest from exact, by
    // `|RN(1/s) * s - 1|` in f64 (exact for these widths).
    fn worst(bits: u32, count: usize) -> Vec<f32> {
        let mut v: Vec<(f64, f32)> = ((1u32 << (bits - 1)) + 1..1 << bits)
            .step_by(2)
            .map(|m| {
                let s = m as f32 / (1u32 << (bits - 1)) as f32;
                (((1.0 / s) as f64 * s as f64 - 1.0).abs(), s)
            })
            .collect();
        v.sort_by(|a, b| b.0.total_cmp(&a.0));
        v.into_iter().take(count).map(|(_, s)| s).collect()
    }
    let patterns: Vec<u16> = (0..=u16::MAX).collect();
    let h: Vec<qdq::f16> = patterns.iter().map(|b| qdq::f16::from_bits(*b)).collect();
    let b: Vec<qdq::bf16> = patterns.iter().map(|b| qdq::bf16::from_bits(*b)).collect();
    // 16-bit outputs reach the quotients up to 65504 (AVX2 takes them on a fast path too).
    let outs = [
        (DataType::I8, vec![0xfdu8]),
        (DataType::U8, vec![131]),
        (DataType::I4, vec![0x0e]),
        (DataType::U4, vec![9]),
        (DataType::I16, vec![0x85, 0xff]),
        (DataType::U16, vec![0x34, 0x12]),
    ];
    let cases: Vec<(&str, f32, f32)> = worst(11, 12)
        .into_iter()
        .flat_map(|s| [("f16", s, 1.0 / 64.0), ("f16", s, 1.0), ("f16", s, 32.0), ("f16", s, 2048.0)])
        .chain(
            worst(8, 8).into_iter().flat_map(|s| [("bf16", s, 1.0 / 64.0), ("bf16", s, 1.0), ("bf16", s, 1048576.0)]),
        )
        // Subnormal f16 scales (3 * 2^-24, and the worst significand at 2^-20, which f16
        // rounds to its subnormal grid): quotients up to 2^36, and reciprocals up to 2^22.
        .chain([("f16", 1.5, 2f32.powi(-23)), ("f16", worst(11, 1)[0], 2f32.powi(-20))])
        .collect();
    cases.par_iter().for_each(|&(name, m, e)| {
        for (out, z) in &outs {
            let out = *out;
            for sign in [1.0f32, -1.0] {
                let scale = sign * m * e;
                let opts = QuantizeOptions { output: out, saturate: true, precision: None };
                let bytes = out.byte_len(patterns.len()).unwrap();
                let zp = Packed { dtype: out, len: 1, data: z };
                let (sh, sb) = ([qdq::f16::from_f32(scale)], [qdq::bf16::from_f32(scale)]);
                let (x, sv) = match name {
                    "f16" => (Values::F16(&h), Values::F16(&sh)),
                    _ => (Values::Bf16(&b), Values::Bf16(&sb)),
                };
                let params = qparams(sv, Some(zp), Layout::PerTensor, &opts);
                let mut want = vec![0u8; bytes];
                qdq_ref::quantize(x, &params, qdq::PackedMut::new(out, &mut want)).unwrap();
                for isa in isas() {
                    let mut got = vec![0u8; bytes];
                    qdq::quantize_with(
                        &Config::sequential().with_isa(isa),
                        x,
                        &params,
                        qdq::PackedMut::new(out, &mut got),
                    )
                    .unwrap();
                    compare_codes(&format!("{isa} {name} s={scale:e}"), out, &want, &got, |i| {
                        format!("pattern {:#06x}", patterns[i])
                    });
                }
            }
        }
    });
}

pub fn every_code_of_every_type_through_dequantize() {
    for t in DataType::QUANTIZED {
        let n = 1usize << t.bits();
        let mut x = vec![0u8; t.byte_len(n).unwrap()];
        for i in 0..n {
            qdq::packing::set(t, &mut x, i, i as u32);
        }
        let xp = Packed { dtype: t, len: n, data: &x };
        let zp_bytes = {
            let mut z = vec![0u8; t.byte_len(1).unwrap()];
            if t.int_range().is_some() {
                qdq::packing::set(t, &mut z, 0, 3);
            }
            z
        };
        let zp = t.int_range().map(|_| Packed { dtype: t, len: 1, data: &zp_bytes });
        for scale in [1.0f32, 0.1, -3.5, 1e-30, f32::INFINITY] {
            let mut want = vec![0f32; n];
            qdq_ref::dequantize(xp, &dparams(Values::F32(&[scale]), zp, Layout::PerTensor), ValuesMut::F32(&mut want))
                .unwrap();
            let mut want16 = vec![qdq::f16::ZERO; n];
            qdq_ref::dequantize(
                xp,
                &dparams(Values::F32(&[scale]), zp, Layout::PerTensor),
                ValuesMut::F16(&mut want16),
            )
            .unwrap();
            let mut wantb = vec![qdq::bf16::ZERO; n];
            qdq_ref::dequantize(
                xp,
                &dparams(Values::F32(&[scale]), zp, Layout::PerTensor),
                ValuesMut::Bf16(&mut wantb),
            )
            .unwrap();
            for isa in isas() {
                let cfg = Config::sequential().with_isa(isa);
                let mut got = vec![0f32; n];
                qdq::dequantize_with(
                    &cfg,
                    xp,
                    &dparams(Values::F32(&[scale]), zp, Layout::PerTensor),
                    ValuesMut::F32(&mut got),
                )
                .unwrap();
                let mut got16 = vec![qdq::f16::ZERO; n];
                qdq::dequantize_with(
                    &cfg,
                    xp,
                    &dparams(Values::F32(&[scale]), zp, Layout::PerTensor),
                    ValuesMut::F16(&mut got16),
                )
                .unwrap();
                let mut gotb = vec![qdq::bf16::ZERO; n];
                qdq::dequantize_with(
                    &cfg,
                    xp,
                    &dparams(Values::F32(&[scale]), zp, Layout::PerTensor),
                    ValuesMut::Bf16(&mut gotb),
                )
                .unwrap();
                for i in 0..n {
                    let same = |a: f32, b: f32| a.to_bits() == b.to_bits();
                    assert!(
                        same(want[i], got[i]),
                        "{isa} {t} code {i:#x} s={scale}: f32 want {} got {}",
                        want[i],
                        got[i]
                    );
                    assert_eq!(want16[i].to_bits(), got16[i].to_bits(), "{isa} {t} code {i:#x} s={scale}: f16");
                    assert_eq!(wantb[i].to_bits(), gotb[i].to_bits(), "{isa} {t} code {i:#x} s={scale}: bf16");
                }
            }
        }
    }
}

/// Every float format with its saturate modes (both for float8; float4 / float6 always
/// saturate).
fn minifloat_targets() -> Vec<(DataType, bool)> {
    DataType::QUANTIZED
        .iter()
        .filter(|t| t.is_minifloat())
        .flat_map(|t| if t.is_float8() { vec![(*t, true), (*t, false)] } else { vec![(*t, true)] })
        .collect()
}

/// Runs `check` on all 2^32 f32 bit patterns, in chunks of 2^20 on rayon's pool, printing
/// progress and, at the end, `what` with the elapsed time.
fn all_f32_chunks(what: &str, check: impl Fn(&[f32]) + Sync) {
    const CHUNK: u64 = 1 << 20;
    let chunks = (1u64 << 32) / CHUNK;
    let start = std::time::Instant::now();
    (0..chunks).into_par_iter().for_each(|c| {
        // The chunk's patterns in a scrambled order (times an odd constant, a bijection
        // modulo the chunk's size): in pattern order, a kernel that permuted elements
        // within a vector step would go unseen, as neighbouring patterns almost always
        // share a code and the codes change only at aligned patterns.
        let x: Vec<f32> = (0..CHUNK).map(|i| f32::from_bits((c * CHUNK + (i * 0x9e3b5) % CHUNK) as u32)).collect();
        check(&x);
        if c % 512 == 511 {
            eprintln!("{}/{} chunks, {:.0} s", c + 1, chunks, start.elapsed().as_secs_f64());
        }
    });
    eprintln!(
        "all 2^32 f32 inputs x {what} x {:?}: identical to qdq-ref ({:.0} s)",
        isas(),
        start.elapsed().as_secs_f64()
    );
}

/// All 2^32 f32 bit patterns through every float8 / float6 / float4 encoder (scale 1, so the
/// quotient is the input), both saturate modes, every ISA, against the reference encoder.
pub fn all_f32_inputs_through_every_minifloat_encoder() {
    let targets = minifloat_targets();
    all_f32_chunks(&format!("{} encoders", targets.len()), |x| {
        for &(out, sat) in &targets {
            let fmt = qdq::float::FloatFormat::of(out).unwrap();
            let bytes = out.byte_len(x.len()).unwrap();
            let mut want = vec![0u8; bytes];
            for (i, v) in x.iter().enumerate() {
                qdq::packing::set(out, &mut want, i, fmt.encode(*v as f64, sat));
            }
            let opts = QuantizeOptions { output: out, saturate: sat, precision: None };
            for isa in isas() {
                let mut got = vec![0u8; bytes];
                qdq::quantize_with(
                    &Config::sequential().with_isa(isa),
                    Values::F32(x),
                    &qparams(Values::F32(&[1.0]), None, Layout::PerTensor, &opts),
                    qdq::PackedMut::new(opts.output, &mut got),
                )
                .unwrap();
                compare_codes(&format!("{isa} sat={sat}"), out, &want, &got, |i| {
                    format!("f32 bits {:#010x}", x[i].to_bits())
                });
            }
        }
    });
}

/// All 2^32 f32 inputs through fake quantization to every float format (both saturate
/// modes of float8), scale 1 and f32 output, with the mask, on every ISA: `y` must be the
/// reference's `decode(encode(x))` bit for bit (NaN as the canonical NaN) and the mask bit
/// the reference's `representable`. (The kernels round the quotient to the format's grid
/// in f32 instead of encoding it.)
pub fn all_f32_inputs_through_fake_quantize_to_every_minifloat() {
    let targets = minifloat_targets();
    all_f32_chunks(&format!("{} fake quantizations", targets.len()), |x| {
        let n = x.len();
        for &(out, sat) in &targets {
            let fmt = qdq::float::FloatFormat::of(out).unwrap();
            let mut want = vec![0f32; n];
            let mut want_mask = vec![0u8; n / 8];
            for (i, v) in x.iter().enumerate() {
                let d = fmt.decode(fmt.encode(*v as f64, sat)) as f32;
                want[i] = if d.is_nan() { qdq::float::CANONICAL_NAN } else { d };
                if qdq_ref::quantize::representable(*v as f64, None, out) {
                    want_mask[i / 8] |= 1 << (i % 8);
                }
            }
            let opts = QuantizeOptions { output: out, saturate: sat, precision: None };
            let p = qdq::train::QuantParams {
                scale: Values::F32(&[1.0]),
                zero_point: None,
                layout: Layout::PerTensor,
                opts,
            };
            for isa in isas() {
                let (mut got, mut mask) = (vec![0f32; n], vec![0u8; n / 8]);
                qdq::train::fake_quantize_with(
                    &Config::sequential().with_isa(isa),
                    Values::F32(x),
                    &p,
                    ValuesMut::F32(&mut got),
                    Some(&mut mask),
                )
                .unwrap();
                if let Some(i) = (0..n).find(|&i| got[i].to_bits() != want[i].to_bits()) {
                    panic!(
                        "{isa} {out} sat={sat}: x = {:#010x}: want {:#010x}, got {:#010x}",
                        x[i].to_bits(),
                        want[i].to_bits(),
                        got[i].to_bits()
                    );
                }
                if let Some(i) = (0..n).find(|&i| (mask[i / 8] ^ want_mask[i / 8]) >> (i % 8) & 1 != 0) {
                    panic!("{isa} {out} sat={sat}: mask of x = {:#010x}", x[i].to_bits());
                }
            }
        }
    });
}
