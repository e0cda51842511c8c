//! Shared check functions (see the test files that call them).
#![allow(dead_code)]

use qdq::{DataType, Layout, Opset, QuantizeAttributes, TensorRef};

fn scale_value(rng: &mut Rng) -> f32 {
    match rng.below(12) {
        0 => 2f32.powi(rng.below(20) as i32 - 10),
        1 => -(rng.unit() + 0.01),
        2 => 1e-30,
        3 => 1e-39, // subnormal
        4 if rng.below(4) == 0 => 0.0,
        5 => 3e30,
        6 => 5.0 / 255.0,
        _ => rng.unit() * 2.0 + 1e-3,
    }
}

/// Scales outside the finite range: both infinities, the default NaN, a signalling NaN and
/// a negative NaN with a payload.
const NONFINITE_SCALES: [f32; 5] =
    [f32::INFINITY, f32::NEG_INFINITY, f32::NAN, f32::from_bits(0x7fa0_0001), f32::from_bits(0xffc1_2345)];

fn x_value(rng: &mut Rng, s: f32) -> f32 {
    match rng.below(10) {
        0 | 1 => rng.pick(&F32_SPECIALS),
        2..=4 => ((rng.below(600) as f32 - 300.0) + 0.5) * s, // ties (exact or nearly)
        5 => (rng.unit() - 0.5) * 1e5,
        6 => f32::from_bits(rng.next_u64() as u32),
        _ => (rng.unit() - 0.5) * 600.0 * s.abs().max(1e-3),
    }
}

/// Encodes f32 values as a tensor of type `t` (f32, f16, bf16, i32, e8m0).
fn wide_bytes(t: DataType, v: &[f32]) -> Vec<u8> {
    match t {
        DataType::F32 => v.iter().flat_map(|x| x.to_le_bytes()).collect(),
        DataType::F16 => v.iter().flat_map(|x| qdq::f16::from_f32(*x).to_le_bytes()).collect(),
        DataType::Bf16 => v.iter().flat_map(|x| qdq::bf16::from_f32(*x).to_le_bytes()).collect(),
        DataType::I32 => v.iter().flat_map(|x| (*x as i32).to_le_bytes()).collect(),
        DataType::E8M0 => {
            v.iter().map(|x| qdq::float::encode_e8m0(x.abs(), qdq::float::E8m0Rounding::Nearest)).collect()
        }
        other => panic!("{other}"),
    }
}

/// f32 values held as f32, f16 or bf16, for [`qdq::Values`] of that type.
enum Typed {
    F32(Vec<f32>),
    F16(Vec<qdq::f16>),
    Bf16(Vec<qdq::bf16>),
}

impl Typed {
    fn new(t: DataType, v: &[f32]) -> Typed {
        match t {
            DataType::F16 => Typed::F16(v.iter().map(|x| qdq::f16::from_f32(*x)).collect()),
            DataType::Bf16 => Typed::Bf16(v.iter().map(|x| qdq::bf16::from_f32(*x)).collect()),
            _ => Typed::F32(v.to_vec()),
        }
    }

    fn values(&self) -> qdq::Values<'_> {
        match self {
            Typed::F32(v) => qdq::Values::F32(v),
            Typed::F16(v) => qdq::Values::F16(v),
            Typed::Bf16(v) => qdq::Values::Bf16(v),
        }
    }

    /// Element `i` as f32.
    fn get(&self, i: usize) -> f32 {
        match self {
            Typed::F32(v) => v[i],
            Typed::F16(v) => v[i].to_f32(),
            Typed::Bf16(v) => v[i].to_f32(),
        }
    }
}

use super::{
    configs, qparams, random_codes, zero_codes, Rng, F32_SPECIALS, MISALIGNMENTS, SHORT_LENGTHS, SWEEP_LENGTHS,
};

/// Shapes `(x_shape, layout kind)` covering per-tensor, per-axis first/middle/last and
/// blocked last/middle with remainder blocks.
fn shapes(rng: &mut Rng) -> Vec<(Vec<usize>, i64, i64, Vec<usize>)> {
    // (x shape, axis, block, scale shape)
    let mut v = vec![
        (vec![7, 64], 1, 0, vec![64]),
        // Per-axis along the last axis past one channel tile (16 vectors), ending in a
        // partial vector on AVX2 and AVX-512; and an odd channel count.
        (vec![3, 300], 1, 0, vec![300]),
        (vec![4, 37], 1, 0, vec![37]),
        (vec![5, 3], 1, 0, vec![3]),
        (vec![3, 5, 2], 1, 0, vec![5]),
        (vec![17, 9], 0, 0, vec![17]),
        (vec![4, 70], 1, 32, vec![4, 3]),
        (vec![3, 10], 1, 3, vec![3, 4]),
        (vec![2, 7, 6], 1, 4, vec![2, 2, 6]),
        (vec![5, 33, 3], 1, 32, vec![5, 2, 3]),
        (vec![2, 3, 40], 2, 16, vec![2, 3, 3]),
        // Blocked along a middle or the first axis with rows of at least a vector (the
        // row tiles, a group of rows per block): a short last block, a row ending in a
        // partial vector, rows past one tile of 16 AVX2 vectors.
        (vec![2, 70, 16], 1, 32, vec![2, 3, 16]),
        (vec![3, 9, 40], 1, 4, vec![3, 3, 40]),
        (vec![40, 24], 0, 16, vec![3, 24]),
        (vec![5, 136], 0, 2, vec![3, 136]),
        (vec![2, 40, 64], 1, 16, vec![2, 3, 64]),
        // Rows past 16 AVX2 / 8 AVX-512 vectors by less than a vector: a last tile of one
        // partial vector.
        (vec![2, 131], 1, 0, vec![131]),
        (vec![2, 4, 130], 1, 2, vec![2, 2, 130]),
        (vec![2, 4, 258], 1, 2, vec![2, 2, 258]),
        // Whole blocks of whole vectors along the last axis (the blocked-last kernels).
        (vec![3, 64], 1, 32, vec![3, 2]),
        (vec![2, 128], 1, 16, vec![2, 8]),
        (vec![5, 64], 1, 64, vec![5, 1]),
        // Whole groups of such blocks (a vector of blocks: 8 on AVX2, 16 on AVX-512), in
        // blocks of four vectors of 2-bit codes on AVX2 (32) and AVX-512 (64).
        (vec![2, 1024], 1, 32, vec![2, 32]),
        (vec![2, 1024], 1, 64, vec![2, 16]),
        (vec![9], 0, 2, vec![5]),
        (vec![0, 4], 1, 0, vec![4]),
        (vec![3, 0], 1, 2, vec![3, 0]),
    ];
    let d = 1 + rng.below(40);
    let o = 1 + rng.below(5);
    v.push((vec![o, d], 1, 0, vec![d]));
    v
}

fn quantize_case(rng: &mut Rng, x_type: DataType, s_type: DataType, out: DataType, sat: bool, prec: i64) {
    quantize_case_zp(rng, x_type, s_type, out, sat, prec, false);
}

/// [`quantize_case`], with every zero point the middle of the type (its code `2^(bits-1)`
/// for unsigned types, 0 for signed ones) where `mid`.
fn quantize_case_zp(rng: &mut Rng, x_type: DataType, s_type: DataType, out: DataType, sat: bool, prec: i64, mid: bool) {
    let opset = Opset::onnx(28);
    for (x_shape, axis, block, s_shape) in shapes(rng).into_iter().chain(SHORT_LENGTHS.map(|n| (vec![n], 0, 0, vec![])))
    {
        let n: usize = x_shape.iter().product();
        let ns: usize = s_shape.iter().product();
        let scales: Vec<f32> = (0..ns.max(1)).map(|_| scale_value(rng)).collect();
        let scales = if s_shape.is_empty() { scales[..1].to_vec() } else { scales[..ns].to_vec() };
        let sb = wide_bytes(s_type, &scales);
        let xs: Vec<f32> = (0..n).map(|i| x_value(rng, scales[i % scales.len()])).collect();
        let xb = wide_bytes(x_type, &xs);
        let middle = out.int_range().map_or(0, |(lo, hi)| if lo < 0 { 0 } else { (hi as u32).div_ceil(2) });
        let zp = match rng.below(4) {
            _ if mid => {
                let mut b = vec![0u8; out.byte_len(scales.len()).unwrap()];
                (0..scales.len()).for_each(|i| qdq::packing::set(out, &mut b, i, middle));
                Some(b)
            }
            0 => None,
            _ if out.is_minifloat() => Some(zero_codes(rng, out, scales.len())),
            _ => Some(random_codes(rng, out, scales.len())),
        };
        // misaligned starting offsets
        let off = rng.below(MISALIGNMENTS);
        let mut xbuf = vec![0u8; off];
        xbuf.extend_from_slice(&xb);
        let x = TensorRef { dtype: x_type, shape: &x_shape, data: &xbuf[off..] };
        let s = TensorRef { dtype: s_type, shape: &s_shape, data: &sb };
        let z = zp.as_ref().map(|d| TensorRef { dtype: out, shape: &s_shape, data: d });
        let attrs = QuantizeAttributes {
            axis: Some(axis),
            block_size: Some(block),
            saturate: Some(sat),
            output_dtype: Some(out),
            precision: DataType::from_onnx(prec),
        };
        let want = qdq_ref::quantize_linear(opset, x, s, z, &attrs);
        for (name, cfg) in configs() {
            let got = qdq_ref::tensor::quantize_linear_with(&qdq::Fast(cfg), opset, x, s, z, &attrs);
            match (&want, &got) {
                (Ok(w), Ok(g)) => {
                    if w.bytes() != g.bytes() {
                        let i = (0..n)
                            .find(|&i| qdq::packing::get(out, w.bytes(), i) != qdq::packing::get(out, g.bytes(), i));
                        let detail = i.map(|i| {
                            format!(
                                "element {i}: x={:e} ({:#010x}) scale={:e} want {:#x} got {:#x}",
                                xs[i],
                                xs[i].to_bits(),
                                scales[qdq::Layout::PerTensor.scale_index(0).min(scales.len() - 1)],
                                qdq::packing::get(out, w.bytes(), i),
                                qdq::packing::get(out, g.bytes(), i)
                            )
                        });
                        panic!(
                            "{name}: Q {x_type}->{out} scale {s_type} sat={sat} prec={prec} shape {x_shape:?} axis {axis} block {block}: {}",
                            detail.unwrap_or_else(|| "padding differs".into())
                        );
                    }
                }
                (Err(w), Err(g)) => assert_eq!(w, g),
                _ => panic!("{name}: ref {want:?} vs qdq {got:?}"),
            }
        }
    }
}

pub fn quantize_every_output_type_from_f32() {
    let mut rng = Rng::new(0x1234_5678_9abc_def1);
    for out in DataType::QUANTIZED {
        for sat in [true, false] {
            quantize_case(&mut rng, DataType::F32, DataType::F32, out, sat, 0);
        }
    }
}

/// The 8-bit types with every zero point the type's middle (u8: 128, i8: 0), the one
/// symmetric quantization uses, for which AVX2's stores skip adding it; and the other
/// integer types alike.
pub fn quantize_with_middle_zero_points() {
    let mut rng = Rng::new(0x0d0d_0128_0000_0008);
    for out in [DataType::U8, DataType::I8, DataType::U4, DataType::U16] {
        for (x, s) in [(DataType::F32, DataType::F32), (DataType::F16, DataType::F16), (DataType::Bf16, DataType::F32)]
        {
            for sat in [true, false] {
                quantize_case_zp(&mut rng, x, s, out, sat, 0, true);
            }
        }
    }
    // Long per-tensor runs of finite quotients within ±2^15 (ties at (k + 1/2) s among
    // them, and codes beyond both ends of the 8-bit range), where whole steps pass the
    // conversion check and take the store without the add; in some, one NaN, huge or
    // infinite x, whose step is redone with the clamps.
    for (out, mid) in [(DataType::U8, 128u32), (DataType::I8, 0)] {
        for case in 0..24 {
            let n = 4096 + rng.below(200);
            let s = if case % 3 == 0 { 1.0 } else { rng.unit() * 0.5 + 1e-3 };
            let span = [200.0f32, 1000.0, 40000.0][case % 3];
            let mut xs: Vec<f32> = (0..n)
                .map(|_| match rng.below(4) {
                    0 => ((rng.below(600) as f32 - 300.0) + 0.5) * s,
                    _ => (rng.unit() - 0.5) * span * s,
                })
                .collect();
            if case % 2 == 1 {
                for v in [f32::NAN, f32::INFINITY, f32::NEG_INFINITY, 3e38] {
                    xs[rng.below(n)] = v;
                }
            }
            let zp = [mid as u8];
            let params = qdq::Params::per_tensor(s).zero_points(qdq::Packed { dtype: out, len: 1, data: &zp });
            let mut want = vec![0u8; n];
            qdq_ref::quantize(&xs[..], &params, qdq::PackedMut::new(out, &mut want)).unwrap();
            for (name, cfg) in configs() {
                let mut got = vec![0u8; n];
                qdq::quantize_with(&cfg, &xs[..], &params, qdq::PackedMut::new(out, &mut got)).unwrap();
                if let Some(i) = (0..n).find(|&i| got[i] != want[i]) {
                    panic!(
                        "{name} {out} zero point {mid} scale {s:e}: element {i} x={:e} want {} got {}",
                        xs[i], want[i], got[i]
                    );
                }
            }
        }
    }
    // The layouts with 8-bit kernels of their own, f32 x and scales in the fast range,
    // long runs of whole groups: blocked along the last axis (the blocked kernel's groups of
    // 64 blocks; blocks of two, four, eight and sixteen vectors on AVX2), per axis along
    // the last axis and blocked along a middle one (the row tiles' groups; rows of one,
    // two, four and more vectors). Zero points: every one the middle; one off the middle
    // at a random place (the kernel that skips the add stops at its group, the general one
    // goes on); the first off the middle (the general kernel throughout); a scale outside
    // the fast range among middle zero points (the skipping kernel stops there and starts
    // again after it); none (i8's middle, not u8's). Whole calls and sub-ranges.
    for (out, mid) in [(DataType::I8, 0u8), (DataType::U8, 128)] {
        let mut layouts = Vec::new();
        for block in [16usize, 32, 64, 128] {
            let (outer, axis_len) = (1 + rng.below(3), block * (40 + rng.below(90)));
            layouts.push(Layout::Blocked { outer, axis_len, inner: 1, block });
        }
        for channels in [8usize, 16, 32, 64, 96, 200] {
            layouts.push(Layout::PerAxis { outer: 100 + rng.below(200), axis_len: channels, inner: 1 });
        }
        for (inner, block) in [(8usize, 32usize), (16, 4), (32, 32), (64, 8), (96, 16)] {
            let (outer, axis_len) = (1 + rng.below(3), block * (3 + rng.below(6)));
            layouts.push(Layout::Blocked { outer, axis_len, inner, block });
        }
        for layout in layouts {
            for pattern in 0..5 {
                let n = match layout {
                    Layout::PerAxis { outer, axis_len, inner } | Layout::Blocked { outer, axis_len, inner, .. } => {
                        outer * axis_len * inner
                    }
                    Layout::PerTensor => unreachable!(),
                };
                let k = layout.scale_count(n).unwrap();
                let mut scales: Vec<f32> = (0..k).map(|_| rng.unit() * 0.5 + 1e-3).collect();
                let mut zp = vec![mid; k];
                match pattern {
                    1 => zp[rng.below(k)] = mid ^ (1 + rng.below(255) as u8),
                    2 => zp[0] = mid.wrapping_add(1),
                    3 => scales[rng.below(k)] = 1e-30,
                    _ => {}
                }
                // Finite quotients within ±2^15 (ties among them), so that whole steps take
                // the store without the add; one element in 400 from the full mix (NaN,
                // inf, huge), whose step is redone with the clamps.
                let xs: Vec<f32> = (0..n)
                    .map(|i| {
                        let s = scales[layout.scale_index(i)];
                        match rng.below(400) {
                            0 => x_value(&mut rng, s),
                            1..=100 => ((rng.below(600) as f32 - 300.0) + 0.5) * s,
                            _ => (rng.unit() - 0.5) * 1000.0 * s,
                        }
                    })
                    .collect();
                let zpp = (pattern != 4).then_some(qdq::Packed { dtype: out, len: k, data: &zp });
                let opts = qdq::QuantizeOptions::new(out);
                let params = qparams(qdq::Values::F32(&scales), zpp, layout, &opts);
                let x = qdq::Values::F32(&xs);
                let mut want = vec![0u8; n];
                qdq_ref::quantize(x, &params, qdq::PackedMut::new(out, &mut want)).unwrap();
                for (name, cfg) in configs() {
                    let mut got = vec![0u8; n];
                    qdq::quantize_with(&cfg, x, &params, qdq::PackedMut::new(out, &mut got)).unwrap();
                    if let Some(i) = (0..n).find(|&i| got[i] != want[i]) {
                        panic!(
                            "{name} {out} {layout:?} pattern {pattern}: element {i} x={:e} want {} got {}",
                            xs[i], want[i], got[i]
                        );
                    }
                    let start = rng.below(n);
                    let stop = start + rng.below(n - start + 1);
                    let mut part = vec![0u8; stop - start];
                    qdq::quantize_range_with(&cfg, x, &params, start..stop, qdq::PackedMut::new(out, &mut part))
                        .unwrap();
                    assert!(
                        part == want[start..stop],
                        "{name} {out} {layout:?} pattern {pattern}: range {start}..{stop}"
                    );
                }
            }
        }
    }
}

pub fn quantize_from_f16_bf16_i32_and_other_scale_types() {
    let mut rng = Rng::new(0xfeed_beef_0bad_cafe);
    for out in [
        DataType::U8,
        DataType::I8,
        DataType::I16,
        DataType::U4,
        DataType::I2,
        DataType::E4M3Fn,
        DataType::E5M2,
        DataType::E2M1,
        DataType::E3M2,
    ] {
        for (x, s) in [
            (DataType::F16, DataType::F16),
            (DataType::Bf16, DataType::Bf16),
            (DataType::I32, DataType::F32),
            (DataType::F32, DataType::F16),
            (DataType::F32, DataType::Bf16),
            (DataType::F16, DataType::F32),
            (DataType::F32, DataType::E8M0),
            (DataType::I32, DataType::I32),
            (DataType::Bf16, DataType::E8M0),
        ] {
            quantize_case(&mut rng, x, s, out, true, 0);
        }
    }
}

pub fn quantize_with_precision_attribute() {
    let mut rng = Rng::new(0x0123_4567_89ab_cdef);
    for out in [DataType::U8, DataType::I16, DataType::U16, DataType::E4M3FnUz, DataType::E5M2FnUz, DataType::E2M3] {
        for prec in [1, 10, 16] {
            quantize_case(&mut rng, DataType::F32, DataType::F32, out, false, prec);
            quantize_case(&mut rng, DataType::I32, DataType::F32, out, true, prec);
        }
    }
}

pub fn quantize_lengths_0_to_512_all_isas() {
    let mut rng = Rng::new(42);
    for out in DataType::QUANTIZED {
        for n in SWEEP_LENGTHS {
            let s = [scale_value(&mut rng)];
            let xs: Vec<f32> = (0..n).map(|_| x_value(&mut rng, s[0])).collect();
            let zp = match rng.below(3) {
                0 => None,
                _ if out.is_minifloat() => Some(zero_codes(&mut rng, out, 1)),
                _ => Some(random_codes(&mut rng, out, 1)),
            };
            let zpp = zp.as_ref().map(|d| qdq::Packed { dtype: out, len: 1, data: d });
            let opts = qdq::QuantizeOptions { output: out, saturate: n % 2 == 0, precision: None };
            let bytes = out.byte_len(n).unwrap();
            let mut want = vec![0u8; bytes];
            qdq_ref::quantize(
                qdq::Values::F32(&xs),
                &qparams(qdq::Values::F32(&s), zpp, Layout::PerTensor, &opts),
                qdq::PackedMut::new(opts.output, &mut want),
            )
            .unwrap();
            for (name, cfg) in configs() {
                let mut got = vec![0xa5u8; bytes]; // garbage: padding must be zeroed
                qdq::quantize_with(
                    &cfg,
                    qdq::Values::F32(&xs),
                    &qparams(qdq::Values::F32(&s), zpp, Layout::PerTensor, &opts),
                    qdq::PackedMut::new(opts.output, &mut got),
                )
                .unwrap();
                if got != want {
                    let i = (0..n).find(|&i| qdq::packing::get(out, &want, i) != qdq::packing::get(out, &got, i));
                    panic!(
                        "{name} {out} n={n} s={:e}: element {i:?} x={:?}: want {:?} got {:?}",
                        s[0],
                        i.map(|i| xs[i]),
                        i.map(|i| qdq::packing::get(out, &want, i)),
                        i.map(|i| qdq::packing::get(out, &got, i))
                    );
                }
            }
        }
    }
}

/// Quotients at and below the smallest subnormal, into float4 / float6 with a ±0 zero point:
/// the reference adds the zero point as a float, so `-0 + (+0)` is +0 while `-2^-149 + 0`
/// keeps its sign, and the code's sign bit tells an exactly-zero quotient from a tiny one.
/// x = ±k 2^-149 with s = 2k puts x / s on the tie at 2^-150 (which rounds to zero, though
/// `x * RN(1/s)` can round away from it); x in [2^-110, 2^-90] covers Markstein's underflow
/// zone. Per-tensor (each kernel family's whole-vector loop) and per-axis (runs of one
/// broadcast scale, and a scale per lane).
pub fn quantize_float4_6_tiny_quotients_with_zero_point() {
    let mut rng = Rng::new(0x0bad_5eed);
    let mut xs: Vec<f32> = Vec::new();
    for k in 1..=64u32 {
        xs.push(f32::from_bits(k) * if k % 2 == 0 { 1.0 } else { -1.0 });
        xs.push(-f32::from_bits(k) * if k % 2 == 0 { 1.0 } else { -1.0 });
    }
    for _ in 0..128 {
        let m = f32::from_bits(0x3f80_0000 | (rng.next_u64() as u32 & 0x7f_ffff));
        let e = 2f32.powi(-(90 + rng.below(21) as i32));
        xs.push(if rng.below(2) == 0 { -m * e } else { m * e });
    }
    xs.extend([0.0, -0.0, 1.0, -1.0]);
    let n = xs.len();
    let mut scales: Vec<f32> = (1..=64).map(|k| 2.0 * k as f32).collect();
    scales.extend((0..32).map(|_| (rng.unit() * 8.0 + 0.01) * if rng.below(4) == 0 { -1.0 } else { 1.0 }));
    for out in [DataType::E2M1, DataType::E2M3, DataType::E3M2] {
        for zcode in [0u32, 1 << (out.bits() - 1)] {
            let mut zb = vec![0u8; out.byte_len(1).unwrap()];
            qdq::packing::set(out, &mut zb, 0, zcode);
            let zp = qdq::Packed { dtype: out, len: 1, data: &zb };
            let opts = qdq::QuantizeOptions { output: out, saturate: true, precision: None };
            let check_on = |xs: &[f32], s: &[f32], layout: Layout, zp: qdq::Packed<'_>| {
                let (n, bytes) = (xs.len(), out.byte_len(xs.len()).unwrap());
                let mut want = vec![0u8; bytes];
                let p = qparams(qdq::Values::F32(s), Some(zp), layout, &opts);
                qdq_ref::quantize(qdq::Values::F32(xs), &p, qdq::PackedMut::new(out, &mut want)).unwrap();
                for (name, cfg) in configs() {
                    let mut got = vec![0xa5u8; bytes];
                    qdq::quantize_with(&cfg, qdq::Values::F32(xs), &p, qdq::PackedMut::new(out, &mut got)).unwrap();
                    if let Some(i) =
                        (0..n).find(|&i| qdq::packing::get(out, &want, i) != qdq::packing::get(out, &got, i))
                    {
                        panic!(
                            "{name} {out} zero point {zcode:#x} {layout:?}: x[{i}] = {:e} ({:#010x}), want {:#x} got {:#x}",
                            xs[i],
                            xs[i].to_bits(),
                            qdq::packing::get(out, &want, i),
                            qdq::packing::get(out, &got, i)
                        );
                    }
                }
            };
            let check = |s: &[f32], layout: Layout, zp: qdq::Packed<'_>| check_on(&xs, s, layout, zp);
            for s in &scales {
                check(core::slice::from_ref(s), Layout::PerTensor, zp);
            }
            // Per-axis, four channels, zero points repeated: x as [n / 4, 4] (a scale per
            // lane, the per-axis-last tiles) and as [4, n / 4] (a broadcast scale per run).
            let mut zb4 = vec![0u8; out.byte_len(4).unwrap()];
            for c in 0..4 {
                qdq::packing::set(out, &mut zb4, c, zcode);
            }
            let zp4 = qdq::Packed { dtype: out, len: 4, data: &zb4 };
            for s in scales.chunks_exact(4) {
                check(s, Layout::PerAxis { outer: n / 4, axis_len: 4, inner: 1 }, zp4);
                check(s, Layout::PerAxis { outer: 1, axis_len: 4, inner: n / 4 }, zp4);
            }
            // The first 256 values on the layouts of the row tiles (64 channels; rows of
            // blocks along a middle axis) and of whole blocks along the last axis (32), the
            // same zero point everywhere.
            let mut zb64 = vec![0u8; out.byte_len(64).unwrap()];
            for c in 0..64 {
                qdq::packing::set(out, &mut zb64, c, zcode);
            }
            let zp64 = qdq::Packed { dtype: out, len: 64, data: &zb64 };
            let (x256, s64) = (&xs[..256], &scales[..64]);
            check_on(x256, s64, Layout::PerAxis { outer: 4, axis_len: 64, inner: 1 }, zp64);
            check_on(
                x256,
                &s64[..8],
                Layout::Blocked { outer: 1, axis_len: 256, inner: 1, block: 32 },
                qdq::Packed { len: 8, data: &zb64[..out.byte_len(8).unwrap()], ..zp64 },
            );
            check_on(x256, s64, Layout::Blocked { outer: 1, axis_len: 8, inner: 32, block: 4 }, zp64);
            let s_rev: Vec<f32> = s64.iter().rev().copied().collect();
            check_on(x256, &s_rev, Layout::PerAxis { outer: 4, axis_len: 64, inner: 1 }, zp64);
        }
    }
}

pub fn dequantize_every_input_type() {
    let mut rng = Rng::new(7);
    let opset = Opset::onnx(28);
    for xt in DataType::QUANTIZED.into_iter().chain([DataType::I32]) {
        for (st, out) in [
            (DataType::F32, 0),
            (DataType::F16, 0),
            (DataType::Bf16, 0),
            (DataType::F32, 10),
            (DataType::F32, 16),
            (DataType::E8M0, 1),
            (DataType::E8M0, 10),
        ] {
            for (x_shape, axis, block, s_shape) in
                shapes(&mut rng).into_iter().chain(SHORT_LENGTHS.map(|n| (vec![n], 0, 0, vec![])))
            {
                let n: usize = x_shape.iter().product();
                let ns: usize = s_shape.iter().product::<usize>().max(if s_shape.is_empty() { 1 } else { 0 });
                // Now and then an infinite or NaN scale (payloads included): products that are
                // NaN (zero times infinity, or a NaN scale) the kernels canonicalise, where
                // their fast loops assume finite scales.
                let scales: Vec<f32> = (0..ns)
                    .map(|_| match rng.below(24) {
                        0 if st != DataType::E8M0 => rng.pick(&NONFINITE_SCALES),
                        _ => scale_value(&mut rng),
                    })
                    .collect();
                let sb = wide_bytes(st, &scales);
                let off = rng.below(MISALIGNMENTS);
                let mut xb = vec![0u8; off];
                xb.extend(random_codes(&mut rng, xt, n));
                let zp = if xt.is_minifloat() || rng.below(3) == 0 {
                    None
                } else if xt == DataType::I32 && rng.below(2) == 0 {
                    Some(random_codes(&mut rng, xt, ns))
                } else if xt == DataType::I32 {
                    None
                } else {
                    Some(random_codes(&mut rng, xt, ns))
                };
                let x = TensorRef { dtype: xt, shape: &x_shape, data: &xb[off..] };
                let s = TensorRef { dtype: st, shape: &s_shape, data: &sb };
                let z = zp.as_ref().map(|d| TensorRef { dtype: xt, shape: &s_shape, data: d });
                let attrs = qdq::DequantizeAttributes {
                    axis: Some(axis),
                    block_size: Some(block),
                    output_dtype: DataType::from_onnx(out),
                };
                let want = qdq_ref::dequantize_linear(opset, x, s, z, &attrs);
                for (name, cfg) in configs() {
                    let got = qdq_ref::tensor::dequantize_linear_with(&qdq::Fast(cfg), opset, x, s, z, &attrs);
                    match (&want, &got) {
                        (Ok(w), Ok(g)) => {
                            let es = w.dtype().bits() as usize / 8;
                            for i in 0..n {
                                let (a, b) = (&w.bytes()[i * es..(i + 1) * es], &g.bytes()[i * es..(i + 1) * es]);
                                let fmt = qdq::float::FloatFormat::of(w.dtype());
                                let val = |b: &[u8]| -> f64 {
                                    match fmt {
                                        Some(f) => f.decode(u16::from_le_bytes([b[0], b[1]]) as u32),
                                        None => f32::from_le_bytes([b[0], b[1], b[2], b[3]]) as f64,
                                    }
                                };
                                assert!(
                                    a == b,
                                    "{name}: DQ {xt} scale {st} -> {} shape {x_shape:?} axis {axis} block {block} element {i}: want {:e} ({a:02x?}) got {:e} ({b:02x?})",
                                    w.dtype(),
                                    val(a),
                                    val(b)
                                );
                            }
                        }
                        (Err(w), Err(g)) => assert_eq!(w, g),
                        _ => panic!("{name}: ref {want:?} vs qdq {got:?}"),
                    }
                }
            }
        }
    }
}

pub fn dynamic_quantize_matches_reference() {
    let mut rng = Rng::new(99);
    for n in (0..=300).chain([4096, 70_000, 200_003]) {
        let mut xs: Vec<f32> = (0..n).map(|_| (rng.unit() - 0.3) * 10.0).collect();
        if n > 5 && rng.below(3) == 0 {
            xs[rng.below(n)] = rng.pick(&F32_SPECIALS);
        }
        dynamic_case(&xs);
    }
    // Ranges of every kind (all positive, all negative, straddling zero, tiny and huge
    // scales), each with its end points present, so that the codes at both ends (where
    // the rounded zero point can push a code to -1 or 256 before saturation) occur; NaN
    // elements in half of them.
    for (i, n) in [37usize, 64, 1000, 4096, 70_001].into_iter().cycle().take(40).enumerate() {
        let e = rng.below(60) as i32 - 30;
        let scale = 2f32.powi(e);
        let (a, b) = ((rng.unit() - 0.5) * 600.0 * scale, (rng.unit() - 0.5) * 600.0 * scale);
        let (lo, hi) = (a.min(b), a.max(b));
        let mut xs: Vec<f32> = (0..n).map(|_| lo + (hi - lo) * rng.unit()).collect();
        xs[rng.below(n)] = lo;
        xs[rng.below(n)] = hi;
        if i % 2 == 0 {
            for _ in 0..3 {
                xs[rng.below(n)] = f32::NAN;
            }
        }
        dynamic_case(&xs);
    }
    // The lower bound's edge patterns (ones a pass that ranked bit patterns as u32 got wrong): NaN with
    // and without the sign bit and with payloads, -inf, -0, the smallest subnormals and
    // the largest finite magnitudes, alone and beside ordinary values, in the vector part
    // and in the tail of a call.
    let edges = [
        f32::from_bits(0xffc0_0000),
        f32::from_bits(0xff80_0001),
        f32::from_bits(0xffff_ffff),
        f32::from_bits(0x7fc0_0001),
        f32::from_bits(0x7f80_0001),
        f32::NEG_INFINITY,
        f32::INFINITY,
        -0.0,
        f32::from_bits(0x8000_0001),
        f32::from_bits(0x0000_0001),
        -f32::MAX,
        f32::MAX,
        -3.5,
    ];
    for n in [1usize, 7, 8, 31, 64, 100, 1000, 4099] {
        for (i, &a) in edges.iter().enumerate() {
            for &b in &edges[i..] {
                for base in [0.0f32, 1.25, -0.75] {
                    let mut xs = vec![base; n];
                    xs[rng.below(n)] = a;
                    let at = rng.below(n);
                    xs[at] = b;
                    xs[n - 1] = if i % 2 == 0 { a } else { xs[n - 1] };
                    dynamic_case(&xs);
                }
            }
        }
    }
}

/// DynamicQuantizeLinear of `xs` in every configuration against the reference: scale (by
/// bits), zero point and codes.
fn dynamic_case(xs: &[f32]) {
    let n = xs.len();
    let mut want = vec![0u8; n];
    let w = qdq_ref::dynamic_quantize(xs, &mut want).unwrap();
    for (name, cfg) in configs() {
        let mut got = vec![0u8; n];
        let g = qdq::dynamic_quantize_with(&cfg, xs, &mut got).unwrap();
        assert_eq!((w.0.to_bits(), w.1), (g.0.to_bits(), g.1), "{name} n={n}");
        if let Some(i) = (0..n).find(|&i| want[i] != got[i]) {
            panic!(
                "{name} n={n} scale {:e} zp {}: element {i} x={:e}: want {} got {}",
                w.0, w.1, xs[i], want[i], got[i]
            );
        }
    }
}

pub fn large_parallel_per_axis_and_blocked() {
    let mut rng = Rng::new(5);
    let n = 1 << 18;
    let xs: Vec<f32> = (0..n).map(|_| x_value(&mut rng, 0.1)).collect();
    let s64: Vec<f32> = (0..64).map(|_| scale_value(&mut rng)).collect();
    let sblk: Vec<f32> = (0..n / 32).map(|_| scale_value(&mut rng)).collect();
    for (layout, scales) in [
        (Layout::PerAxis { outer: n / 64, axis_len: 64, inner: 1 }, &s64),
        (Layout::PerAxis { outer: 1, axis_len: 64, inner: n / 64 }, &s64),
        (Layout::Blocked { outer: n / 64, axis_len: 64, inner: 1, block: 32 }, &sblk),
        (Layout::Blocked { outer: 4, axis_len: 64, inner: n / 256, block: 32 }, &sblk),
    ] {
        for out in [DataType::I8, DataType::U4, DataType::E4M3Fn, DataType::E2M3] {
            let opts = qdq::QuantizeOptions::new(out);
            let bytes = out.byte_len(n).unwrap();
            let mut want = vec![0u8; bytes];
            qdq_ref::quantize(
                qdq::Values::F32(&xs),
                &qparams(qdq::Values::F32(scales), None, layout, &opts),
                qdq::PackedMut::new(opts.output, &mut want),
            )
            .unwrap();
            for (name, cfg) in configs() {
                let mut got = vec![0u8; bytes];
                qdq::quantize_with(
                    &cfg,
                    qdq::Values::F32(&xs),
                    &qparams(qdq::Values::F32(scales), None, layout, &opts),
                    qdq::PackedMut::new(opts.output, &mut got),
                )
                .unwrap();
                assert!(got == want, "{name} {layout:?} {out}");
            }
        }
    }
}

/// The output types of the layout kernels' tests: the whole-byte, 4-bit and 16-bit integers,
/// and float8 / float4 formats of the four-vector encoder.
const LAYOUT_OUTS: [DataType; 14] = [
    DataType::U8,
    DataType::I8,
    DataType::U4,
    DataType::I4,
    DataType::U2,
    DataType::I2,
    DataType::E2M3,
    DataType::E3M2,
    DataType::U16,
    DataType::I16,
    DataType::E4M3Fn,
    DataType::E5M2,
    DataType::E5M2FnUz,
    DataType::E2M1,
];

/// Blocked along the last axis to 8-, 4-, 2- and 16-bit integer types and float8 / float4, the
/// layout with its own fast kernels: block sizes of one, two and four vector pairs and odd ones, rows with a short
/// last block, scales outside the fast range in some blocks, NaN / inf / huge x, random
/// zero points, and sub-ranges starting and ending inside blocks (on a byte); f32 x and scales, and
/// f16 / bf16 ones (their own precision: the kernel's 16-bit variants).
pub fn blocked_last_8bit() {
    let mut rng = Rng::new(0xb10c_ca5e_0000_0008);
    let sources = [DataType::F32, DataType::F16, DataType::Bf16];
    for (xt, out) in sources.into_iter().flat_map(|t| LAYOUT_OUTS.map(|o| (t, o))) {
        for block in [16usize, 32, 48, 64, 96, 128, 7] {
            for axis_len in [block * 3, block * 2 + 5, 1024, block, 2304] {
                let outer = 1 + rng.below(4);
                let n = outer * axis_len;
                let nb = axis_len.div_ceil(block);
                let layout = Layout::Blocked { outer, axis_len, inner: 1, block };
                // A third of the cases with every scale in the kernels' fast range, so that
                // runs of 64 blocks (the blocked kernel's group) occur; the rest with one
                // scale in 9 from the full mix, about one in 33 slow.
                let mixed = rng.below(3) != 0;
                let scales: Vec<f32> = (0..outer * nb)
                    .map(|_| if mixed && rng.below(9) == 0 { scale_value(&mut rng) } else { rng.unit() * 0.5 + 1e-3 })
                    .collect();
                let xs: Vec<f32> = (0..n).map(|i| x_value(&mut rng, scales[layout.scale_index(i)])).collect();
                let zp = random_codes(&mut rng, out, scales.len());
                let zpp = (!out.is_minifloat()).then_some(qdq::Packed { dtype: out, len: scales.len(), data: &zp });
                let opts = qdq::QuantizeOptions::new(out);
                let (xv, svv) = (Typed::new(xt, &xs), Typed::new(xt, &scales));
                let (x, sv) = (xv.values(), svv.values());
                let bytes = out.byte_len(n).unwrap();
                let mut want = vec![0u8; bytes];
                qdq_ref::quantize(x, &qparams(sv, zpp, layout, &opts), qdq::PackedMut::new(opts.output, &mut want))
                    .unwrap();
                for (name, cfg) in configs() {
                    let mut got = vec![0u8; bytes];
                    qdq::quantize_with(
                        &cfg,
                        x,
                        &qparams(sv, zpp, layout, &opts),
                        qdq::PackedMut::new(opts.output, &mut got),
                    )
                    .unwrap();
                    let code = |b: &[u8], i: usize| qdq::packing::get(out, b, i);
                    let i = (0..n).find(|&i| code(&got, i) != code(&want, i));
                    assert!(
                        i.is_none(),
                        "{name} {xt}->{out} block {block} axis {axis_len}: element {i:?} x={:?} want {:?} got {:?}",
                        i.map(|i| xv.get(i)),
                        i.map(|i| code(&want, i)),
                        i.map(|i| code(&got, i))
                    );
                    // A sub-range starting inside a block, at any byte, to the end or to a
                    // point inside a later block.
                    let step = byte_step(out);
                    let start = rng.below(n.max(1)) / step * step;
                    let stop = if rng.below(2) == 0 { n } else { (start + rng.below(n - start + 1)) / step * step };
                    let mut part = vec![0u8; out.byte_len(stop - start).unwrap()];
                    qdq::quantize_range_with(
                        &cfg,
                        x,
                        &qparams(sv, zpp, layout, &opts),
                        start..stop,
                        qdq::PackedMut::new(opts.output, &mut part),
                    )
                    .unwrap();
                    assert!(
                        part == want[out.byte_len(start).unwrap()..out.byte_len(stop).unwrap()],
                        "{name} {xt}->{out} block {block} axis {axis_len} range {start}..{stop}"
                    );
                }
            }
        }
    }
}

/// Per-axis along the last axis and blocked along another axis, the layouts of the row
/// tiles (`walk::RowTiles`), with its own 8-bit kernel: channel counts (row lengths) below,
/// at and beyond a tile (16 vectors), not multiples of the vector width, scales outside
/// the fast range in some channels, NaN / inf / huge x, random zero points, every
/// whole-byte integer type, float8 and float4 (whose rows of whole tiles take the
/// four-vector encoder), sub-ranges starting inside rows; f32 x and scales, and (to 8-bit
/// integers, e4m3fn and e2m1) f16 / bf16 ones.
pub fn per_axis_last_whole_bytes() {
    let mut rng = Rng::new(0xa815_1a57_0000_0001);
    // Float8 / float4 rows of whole tiles take the four-vector encoder from any source.
    let cases = LAYOUT_OUTS.into_iter().map(|o| (DataType::F32, o)).chain(
        [DataType::F16, DataType::Bf16]
            .into_iter()
            .flat_map(|t| [(t, DataType::U8), (t, DataType::I8), (t, DataType::E4M3Fn), (t, DataType::E2M1)]),
    );
    for (xt, out) in cases {
        for (channels, blocked) in
            [8usize, 16, 48, 64, 100, 256, 300, 1000].into_iter().flat_map(|c| [(c, false), (c, true)])
        {
            // Per-axis `[rows, C]`, or blocked `[outer, D, C]` along D (the row tiles' groups
            // of rows, a short last block in some).
            let (rows, layout, ns) = if blocked {
                let (outer, d, b) = (1 + rng.below(2), 1 + rng.below(9), 1 + rng.below(4));
                (
                    outer * d,
                    Layout::Blocked { outer, axis_len: d, inner: channels, block: b },
                    outer * d.div_ceil(b) * channels,
                )
            } else {
                let rows = 1 + rng.below(6);
                (rows, Layout::PerAxis { outer: rows, axis_len: channels, inner: 1 }, channels)
            };
            let n = rows * channels;
            // Slow scales (outside the fast range) in some calls, two at most, so that the
            // groups around them take the fast kernels.
            let slow = if rng.below(3) == 0 { [rng.below(ns), rng.below(ns)] } else { [usize::MAX; 2] };
            let scales: Vec<f32> = (0..ns)
                .map(|i| if slow.contains(&i) { scale_value(&mut rng) } else { rng.unit() * 0.5 + 1e-3 })
                .collect();
            let xs: Vec<f32> = (0..n).map(|i| x_value(&mut rng, scales[layout.scale_index(i)])).collect();
            let zp = (!out.is_minifloat()).then(|| random_codes(&mut rng, out, ns));
            let zpp = zp.as_ref().map(|d| qdq::Packed { dtype: out, len: ns, data: d });
            let opts = qdq::QuantizeOptions { output: out, saturate: rng.below(2) == 0, precision: None };
            let (xv, svv) = (Typed::new(xt, &xs), Typed::new(xt, &scales));
            let (x, sv) = (xv.values(), svv.values());
            let bytes = out.byte_len(n).unwrap();
            let mut want = vec![0u8; bytes];
            qdq_ref::quantize(x, &qparams(sv, zpp, layout, &opts), qdq::PackedMut::new(opts.output, &mut want))
                .unwrap();
            for (name, cfg) in configs() {
                let mut got = vec![0u8; bytes];
                qdq::quantize_with(
                    &cfg,
                    x,
                    &qparams(sv, zpp, layout, &opts),
                    qdq::PackedMut::new(opts.output, &mut got),
                )
                .unwrap();
                let i = (0..n).find(|&i| qdq::packing::get(out, &got, i) != qdq::packing::get(out, &want, i));
                assert!(
                    i.is_none(),
                    "{name} {xt}->{out} {layout:?}: element {i:?} x={:?} scale {:?}",
                    i.map(|i| xv.get(i)),
                    i.map(|i| svv.get(layout.scale_index(i)))
                );
                let start = rng.below(n.max(1)) / byte_step(out) * byte_step(out);
                let mut part = vec![0u8; out.byte_len(n - start).unwrap()];
                qdq::quantize_range_with(
                    &cfg,
                    x,
                    &qparams(sv, zpp, layout, &opts),
                    start..n,
                    qdq::PackedMut::new(opts.output, &mut part),
                )
                .unwrap();
                let skip = out.byte_len(start).unwrap();
                assert!(part == want[skip..], "{name} {xt}->{out} {layout:?} range {start}..{n}");
            }
        }
    }
}

/// 16-bit integer outputs on the layout kernels (per-axis along the last axis, rows of one
/// vector or several, blocked along the last and a middle axis) with quotients near and
/// beyond the i32 range and the i16 bounds, and zero points far from zero (a kernel that
/// added the zero point before clamping would wrap) or every one the middle of the type's
/// i16 view (the symmetric rule's, whose saturating packs are the clamp).
pub fn sixteen_bit_layouts_near_the_i32_range() {
    let mut rng = Rng::new(0x16b1_7000_0000_0016);
    let xs_pool = [
        2147483520.0f32,
        -2147483520.0,
        65535.5,
        -65536.5,
        32767.5,
        -32768.5,
        2147483648.0,
        -2147483648.0,
        1e10,
        -1e10,
        f32::INFINITY,
        f32::NEG_INFINITY,
        f32::NAN,
        0.5,
        -1.5,
    ];
    let layouts = [
        Layout::PerAxis { outer: 4, axis_len: 64, inner: 1 },
        Layout::Blocked { outer: 4, axis_len: 64, inner: 1, block: 32 },
        Layout::Blocked { outer: 1, axis_len: 4, inner: 64, block: 2 },
        Layout::PerAxis { outer: 32, axis_len: 8, inner: 1 },
        Layout::Blocked { outer: 1, axis_len: 16, inner: 16, block: 4 },
    ];
    // Quotients within the i32 range only (the first six, scale 1: steps the conversion
    // vouches for, so no redo clamps them), or any.
    let pools = [&xs_pool[..6], &xs_pool[..]];
    let cases = [DataType::U16, DataType::I16].into_iter().flat_map(|o| pools.map(|p| (o, p)));
    for ((out, pool), symmetric) in cases.flat_map(|c| [(c, false), (c, true)]) {
        let zps: &[i32] = match (out == DataType::U16, symmetric) {
            (true, false) => &[128, 32768, 65535, 1],
            (false, false) => &[-200, 200, -32768, 32767],
            (true, true) => &[32768],
            (false, true) => &[0],
        };
        for layout in layouts {
            let n = 256;
            let ns = layout.scale_count(n).unwrap();
            let scales = vec![1.0f32; ns];
            let xs: Vec<f32> = (0..n).map(|_| pool[rng.below(pool.len())]).collect();
            let mut zb = vec![0u8; out.byte_len(ns).unwrap()];
            for k in 0..ns {
                qdq::packing::set(out, &mut zb, k, zps[rng.below(zps.len())] as u16 as u32);
            }
            let zp = Some(qdq::Packed { dtype: out, len: ns, data: &zb });
            let opts = qdq::QuantizeOptions::new(out);
            let p = qparams(qdq::Values::F32(&scales), zp, layout, &opts);
            let mut want = vec![0u8; 2 * n];
            qdq_ref::quantize(qdq::Values::F32(&xs), &p, qdq::PackedMut::new(out, &mut want)).unwrap();
            for (name, cfg) in configs() {
                let mut got = vec![0u8; 2 * n];
                qdq::quantize_with(&cfg, qdq::Values::F32(&xs), &p, qdq::PackedMut::new(out, &mut got)).unwrap();
                let i = (0..n).find(|&i| got[2 * i..2 * i + 2] != want[2 * i..2 * i + 2]);
                assert!(
                    i.is_none(),
                    "{name} {out} {layout:?} symmetric {symmetric}: element {i:?} x={:?}",
                    i.map(|i| xs[i])
                );
            }
        }
    }
}

/// Elements per whole number of bytes of type `t`: a range of a packed output must start
/// at a multiple of it.
fn byte_step(t: DataType) -> usize {
    match t.bits() {
        2 | 6 => 4,
        4 => 2,
        _ => 1,
    }
}

/// Cut points `0 = c0 < c1 < ... = n` (at most four shards) at multiples of `step`.
fn cuts(rng: &mut Rng, n: usize, step: usize) -> Vec<usize> {
    let mut c: Vec<usize> = (0..rng.below(4)).map(|_| rng.below(n / step + 1) * step).collect();
    c.extend([0, n]);
    c.sort_unstable();
    c.dedup();
    c
}

/// An engine sharding one call over its own threads: the output cut at random byte
/// boundaries (any element for 8- and 16-bit types), each shard quantized or dequantized
/// with the `*_range` entry points, for every quantized type, every layout and every ISA;
/// the shards together must be the reference's whole call, bit for bit.
pub fn shards_match_the_whole_call() {
    let mut rng = Rng::new(0x5ba2_d000_0000_0013);
    // (layout, scales, elements, the dequantize shards' step); per-axis along the last axis
    // with 40 channels takes the channel tiles, shards starting inside a row. Blocks of 16
    // along the last axis, shards cut at any block (odd ones too): the dequantize kernel of
    // whole blocks, its groups of blocks starting anywhere in the zero points' bytes.
    let layouts = [
        (Layout::PerTensor, 1, 101, 1),
        (Layout::PerAxis { outer: 3, axis_len: 5, inner: 7 }, 5, 105, 1),
        (Layout::PerAxis { outer: 4, axis_len: 40, inner: 1 }, 40, 160, 1),
        (Layout::Blocked { outer: 2, axis_len: 9, inner: 6, block: 4 }, 2 * 3 * 6, 108, 1),
        (Layout::Blocked { outer: 2, axis_len: 16 * 37, inner: 1, block: 16 }, 2 * 37, 2 * 16 * 37, 16),
    ];
    for (layout, ns, n, dq_step) in layouts {
        let scales: Vec<f32> = (0..ns).map(|_| scale_value(&mut rng)).collect();
        let xs: Vec<f32> = (0..n).map(|i| x_value(&mut rng, scales[layout.scale_index(i)])).collect();
        for out in DataType::QUANTIZED {
            let zp = (!out.is_minifloat()).then(|| random_codes(&mut rng, out, ns));
            let zpp = zp.as_ref().map(|d| qdq::Packed { dtype: out, len: ns, data: d });
            let params = qparams(qdq::Values::F32(&scales), zpp, layout, &qdq::QuantizeOptions::new(out));
            let mut want = vec![0u8; out.byte_len(n).unwrap()];
            qdq_ref::quantize(&xs, &params, qdq::PackedMut::new(out, &mut want)).unwrap();
            let codes = qdq::Packed { dtype: out, len: n, data: &want };
            let mut want_dq = vec![0f32; n];
            qdq_ref::dequantize(codes, &params, &mut want_dq).unwrap();
            for (name, cfg) in configs() {
                let c = cuts(&mut rng, n, byte_step(out));
                let mut got = vec![0xa5u8; want.len()];
                let mut rest = &mut got[..];
                for w in c.windows(2) {
                    let bytes = out.byte_len(w[1]).unwrap() - out.byte_len(w[0]).unwrap();
                    let (part, tail) = rest.split_at_mut(bytes);
                    rest = tail;
                    qdq::quantize_range_with(&cfg, &xs, &params, w[0]..w[1], qdq::PackedMut::new(out, part)).unwrap();
                }
                assert!(got == want, "{name} {out} {layout:?} shards {c:?}: {got:?} want {want:?}");
                let c = cuts(&mut rng, n, dq_step);
                let mut got = vec![0f32; n];
                let mut rest = &mut got[..];
                for w in c.windows(2) {
                    let (part, tail) = rest.split_at_mut(w[1] - w[0]);
                    rest = tail;
                    qdq::dequantize_range_with(&cfg, codes, &params, w[0]..w[1], part).unwrap();
                }
                let same = got.iter().zip(&want_dq).all(|(g, w)| g.to_bits() == w.to_bits());
                assert!(same, "{name} dequantize {out} {layout:?} shards {c:?}");
            }
        }
    }
}
