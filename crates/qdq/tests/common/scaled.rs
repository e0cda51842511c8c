#![allow(clippy::needless_range_loop)] // element indices address several buffers at once
//! Differential checks of the quantizers that compute their own scales (`qdq::scaled`)
//! against `qdq_ref::scaled`, bit for bit (y, scales and zero points), on every ISA,
//! sequential and parallel; and the DequantizeLinear round trip of their outputs.

use super::{configs, Rng, F32_SPECIALS};
use qdq::scaled::{BlockMode, Rows, ScaleRounding};
use qdq::{bf16, f16, DataType, Float8E4M3Fn, Float8E8M0, Layout, PackedMut, Params, ValuesMut};

/// x in f32, f16 or bf16, from f32 values (rounded for the narrow types).
#[derive(Clone, Debug)]
pub enum X {
    F32(Vec<f32>),
    F16(Vec<f16>),
    Bf16(Vec<bf16>),
}

impl X {
    pub fn new(t: DataType, v: &[f32]) -> X {
        match t {
            DataType::F16 => X::F16(v.iter().map(|&x| f16::from_f32(x)).collect()),
            DataType::Bf16 => X::Bf16(v.iter().map(|&x| bf16::from_f32(x)).collect()),
            _ => X::F32(v.to_vec()),
        }
    }

    pub fn values(&self) -> qdq::Values<'_> {
        match self {
            X::F32(v) => v.into(),
            X::F16(v) => v.into(),
            X::Bf16(v) => v.into(),
        }
    }

    pub fn get(&self, i: usize) -> f32 {
        match self {
            X::F32(v) => v[i],
            X::F16(v) => v[i].to_f32(),
            X::Bf16(v) => v[i].to_f32(),
        }
    }
}

/// `n` values in one of several patterns that exercise the scale rules: plain random,
/// mostly zeros (all-zero and single-nonzero blocks), tiny (subnormal amax), specials
/// mixed in (NaN, ±inf, maxima), huge, exact format maxima and ties, and NaN alone now and
/// then (no infinity to decide a block on its own).
pub fn data(rng: &mut Rng, n: usize, pattern: usize) -> Vec<f32> {
    (0..n)
        .map(|_| match pattern % 7 {
            0 => rng.signed_unit() * 4.0,
            1 => {
                if rng.below(16) == 0 {
                    rng.signed_unit() * 100.0
                } else {
                    0.0
                }
            }
            2 => rng.signed_unit() * 1e-39,
            3 => {
                if rng.below(24) == 0 {
                    rng.pick(&F32_SPECIALS)
                } else {
                    rng.signed_unit() * 10.0
                }
            }
            4 => rng.signed_unit() * 3e38,
            // A NaN now and then and no infinity, so that every statistic must skip NaN
            // (an infinity would decide the block on its own).
            6 => {
                if rng.below(37) == 0 {
                    f32::NAN
                } else {
                    rng.signed_unit() * 8.0
                }
            }
            _ => rng.pick(&[448.0, -448.0, 6.0, -6.0, 0.25, 127.0, 57344.0, 28.0, 7.5, 0.75, -3.5, 0.0]),
        })
        .collect()
}

/// The outputs of one call: y, the scales and the zero points, as bytes.
type Out = (Vec<u8>, Vec<u8>, Vec<u8>);

fn check(what: &str, want: &Out, got: &Out) {
    for (part, w, g) in [("scales", &want.1, &got.1), ("zero points", &want.2, &got.2), ("y", &want.0, &got.0)] {
        assert_eq!(w.len(), g.len(), "{what}: {part} lengths");
        if let Some(i) = w.iter().zip(g.iter()).position(|(a, b)| a != b) {
            let bad = w.iter().zip(g.iter()).filter(|(a, b)| a != b).count();
            let (lo, hi) = (i.saturating_sub(2), (i + 3).min(w.len()));
            panic!("{what}: {part} differ at byte {i} ({bad} bytes differ): ref {:?} qdq {:?}", &w[lo..hi], &g[lo..hi]);
        }
    }
}

// ---------------------------------------------------------------------------------------
// Per-row
// ---------------------------------------------------------------------------------------

fn rows_once(cfg: Option<&qdq::Config>, x: &X, rows: Rows, out: DataType) -> Out {
    let n = rows.rows * rows.cols;
    let mut y = vec![0xa5u8; n];
    let mut s = vec![f32::from_bits(0xdead_beef); rows.rows];
    let mut z = vec![0x5au8; rows.rows];
    let zp = (out == DataType::U8).then_some(&mut z[..]);
    let yv = PackedMut::new(out, &mut y);
    match cfg {
        None => qdq_ref::scaled::quantize_rows(x.values(), rows, yv, &mut s, zp).unwrap(),
        Some(c) => qdq::scaled::quantize_rows_with(c, x.values(), rows, yv, &mut s, zp).unwrap(),
    }
    let z = if out == DataType::U8 { z } else { Vec::new() };
    (y, s.iter().flat_map(|v| v.to_le_bytes()).collect(), z)
}

pub fn rows_match_reference() {
    let mut rng = Rng::new(301);
    let outs = [DataType::U8, DataType::I8, DataType::E4M3Fn];
    let mut cases = Vec::new();
    for cols in 0..=130usize {
        cases.push((3, cols, cols + (cols % 3)));
    }
    for (r, c) in [(1, 512), (7, 333), (256, 64), (0, 5), (4, 0), (40, 1000)] {
        cases.push((r, c, c));
    }
    cases.push((300, 700, 701)); // large: parallel parts of rows
    let n_mixed = cases.len();
    // f32 rows of several whole vector steps and a tail, in every data pattern: the 8-bit
    // path that reads the next row's statistics inside the current row's loop.
    for pattern in 0..7 {
        for (r, c) in [(5, 200), (4, 256), (3, 517)] {
            cases.push((r, c, c + pattern));
        }
    }
    for (i, &(nr, cols, stride)) in cases.iter().enumerate() {
        let rows = Rows::new(nr, cols).with_stride(stride);
        let len = if nr == 0 { 0 } else { (nr - 1) * stride + cols };
        let pattern = if i < n_mixed { i } else { (i - n_mixed) / 3 };
        let v = data(&mut rng, len, pattern);
        let xt = if i < n_mixed { [DataType::F32, DataType::F16, DataType::Bf16][i % 3] } else { DataType::F32 };
        let x = X::new(xt, &v);
        for out in outs {
            let want = rows_once(None, &x, rows, out);
            for (name, cfg) in configs() {
                let got = rows_once(Some(&cfg), &x, rows, out);
                check(&format!("{name}: rows {nr} x {cols} stride {stride} {xt} -> {out}"), &want, &got);
            }
        }
    }
}

/// Every row of a u8 per-row call is DynamicQuantizeLinear of that row alone.
pub fn rows_u8_is_dynamic_quantize_per_row() {
    let mut rng = Rng::new(302);
    for pattern in 0..7 {
        let (nr, cols) = (9, 77);
        let v = data(&mut rng, nr * cols, pattern);
        let (mut y, mut s, mut z) = (vec![0u8; nr * cols], vec![0f32; nr], vec![0u8; nr]);
        qdq::scaled::quantize_rows(&v, Rows::new(nr, cols), &mut y, &mut s, Some(&mut z)).unwrap();
        for r in 0..nr {
            let mut yr = vec![0u8; cols];
            let (sr, zr) = qdq_ref::dynamic_quantize(&v[r * cols..(r + 1) * cols], &mut yr).unwrap();
            assert_eq!((s[r].to_bits(), z[r]), (sr.to_bits(), zr), "pattern {pattern} row {r}");
            assert_eq!(&y[r * cols..(r + 1) * cols], &yr[..], "pattern {pattern} row {r}");
        }
    }
}

// ---------------------------------------------------------------------------------------
// Blocks
// ---------------------------------------------------------------------------------------

/// The shapes, axes and block sizes of the block checks: 1-D sweeps, every axis of 2-D and
/// 3-D shapes, blocks of 1, 2, 16, 32, 64, 128 and 256 with remainders.
pub fn block_cases(long: bool) -> Vec<(Vec<usize>, isize, usize)> {
    let mut v = Vec::new();
    let sweep = if long { 0..=300usize } else { 0..=70usize };
    for n in sweep {
        v.push((vec![n], 0, [1, 2, 16, 32, 64][n % 5]));
    }
    for b in [1, 2, 16, 32, 64, 128, 256] {
        v.push((vec![3, 2 * b + 5], 1, b));
        v.push((vec![2 * b + 3, 5], 0, b));
        v.push((vec![2 * b + 3, 6], 0, b)); // an even inner extent: onnxruntime's strip path
        v.push((vec![2, b + 1, 3], 1, b));
        v.push((vec![4, 3, b + 7], -1, b));
    }
    v.push((vec![70, 33], 0, 32));
    v.push((vec![33, 70], 1, 16));
    v
}

/// The large cases: several parallel parts, uniform and non-uniform block rows.
pub fn large_block_cases() -> Vec<(Vec<usize>, isize, usize)> {
    vec![
        (vec![200_003], 0, 32),
        (vec![512, 300], 1, 32),   // 300 % 32 != 0: parts of whole rows
        (vec![300, 512], 0, 32),   // blocks along axis 0 (onnxruntime's MatMul layout)
        (vec![64, 33, 96], 1, 16), // middle axis, short last block
        (vec![1024, 256], 1, 128),
    ]
}

fn scale_buf(t: DataType, k: usize) -> (Vec<f32>, Vec<f16>, Vec<bf16>) {
    match t {
        DataType::F16 => (Vec::new(), vec![f16::from_bits(0x7bff); k], Vec::new()),
        DataType::Bf16 => (Vec::new(), Vec::new(), vec![bf16::from_bits(0x7f7f); k]),
        _ => (vec![f32::from_bits(0xdead_beef); k], Vec::new(), Vec::new()),
    }
}

#[allow(clippy::too_many_arguments)]
pub fn blockwise_once(
    cfg: Option<&qdq::Config>,
    x: &X,
    layout: Layout,
    mode: BlockMode,
    out: DataType,
    st: DataType,
    with_zp: bool,
) -> Out {
    let n = x.values().len();
    let k = layout.scale_count(n).unwrap();
    let mut y = vec![0xa5u8; out.byte_len(n).unwrap()];
    let mut z = vec![0x5au8; out.byte_len(k).unwrap()];
    let (mut a, mut b, mut c) = scale_buf(st, k);
    let sv: ValuesMut = match st {
        DataType::F16 => (&mut b).into(),
        DataType::Bf16 => (&mut c).into(),
        _ => (&mut a).into(),
    };
    let zp = with_zp.then(|| PackedMut::new(out, &mut z));
    let yv = PackedMut::new(out, &mut y);
    match cfg {
        None => qdq_ref::scaled::quantize_blockwise(x.values(), layout, mode, yv, sv, zp).unwrap(),
        Some(c) => qdq::scaled::quantize_blockwise_with(c, x.values(), layout, mode, yv, sv, zp).unwrap(),
    }
    let s: Vec<u8> = match st {
        DataType::F16 => b.iter().flat_map(|v| v.to_le_bytes()).collect(),
        DataType::Bf16 => c.iter().flat_map(|v| v.to_le_bytes()).collect(),
        _ => a.iter().flat_map(|v| v.to_le_bytes()).collect(),
    };
    (y, s, if with_zp { z } else { Vec::new() })
}

fn blockwise_cases(cases: &[(Vec<usize>, isize, usize)], seed: u64) {
    let mut rng = Rng::new(seed);
    let outs = [DataType::I4, DataType::U4, DataType::I8, DataType::U8, DataType::I2, DataType::U2];
    for (i, (shape, axis, b)) in cases.iter().enumerate() {
        let layout = Layout::blocked(shape, *axis, *b).unwrap();
        let n: usize = shape.iter().product();
        let v = data(&mut rng, n, i);
        let xt = [DataType::F32, DataType::F16, DataType::Bf16][i % 3];
        let x = X::new(xt, &v);
        let out = outs[i % outs.len()];
        let st = [DataType::F32, DataType::F16, DataType::Bf16][(i / 3) % 3];
        let signed = out.int_range().unwrap().0 < 0;
        let mut modes = vec![(BlockMode::Symmetric, st, !signed), (BlockMode::Asymmetric, st, true)];
        if signed {
            modes.push((BlockMode::Symmetric, st, true));
        }
        if matches!(out, DataType::I4 | DataType::U4) && xt == DataType::F32 {
            modes.push((BlockMode::Onnxruntime, DataType::F32, !signed || i % 2 == 0));
        }
        for (mode, st, zp) in modes {
            let want = blockwise_once(None, &x, layout, mode, out, st, zp);
            for (name, cfg) in configs() {
                let got = blockwise_once(Some(&cfg), &x, layout, mode, out, st, zp);
                check(
                    &format!("{name}: {shape:?} axis {axis} block {b} {xt} {mode:?} -> {out}, {st} scales"),
                    &want,
                    &got,
                );
            }
        }
    }
}

pub fn blockwise_matches_reference() {
    blockwise_cases(&block_cases(true), 303);
}

/// onnxruntime mode, every 4-bit case of the sweep with f32 x (the round-robin of
/// [`blockwise_matches_reference`] covers the others).
pub fn onnxruntime_mode_matches_reference() {
    let mut rng = Rng::new(304);
    let mut cases = block_cases(false);
    let plain = cases.len();
    // [40, 1100]: rows wider than one unit of the vector kernel (1024 columns), plus columns
    // past its last whole group of vectors. These wide cases take every data pattern
    // (subnormal blocks, whose reciprocal scales overflow, and infinities among them).
    cases.extend([(vec![300, 512], 0, 32), (vec![2, 96, 200], 1, 32), (vec![64, 130], 0, 16), (vec![40, 1100], 0, 16)]);
    for (i, (shape, axis, b)) in cases.iter().enumerate() {
        let layout = Layout::blocked(shape, *axis, *b).unwrap();
        let n: usize = shape.iter().product();
        let patterns = if i < plain { i..i + 1 } else { 0..7 };
        for pattern in patterns {
            let x = X::F32(data(&mut rng, n, pattern));
            for out in [DataType::I4, DataType::U4] {
                let zp = out == DataType::U4;
                let want = blockwise_once(None, &x, layout, BlockMode::Onnxruntime, out, DataType::F32, zp);
                for (name, cfg) in configs() {
                    let got = blockwise_once(Some(&cfg), &x, layout, BlockMode::Onnxruntime, out, DataType::F32, zp);
                    let what =
                        format!("{name}: {shape:?} axis {axis} block {b} pattern {pattern} onnxruntime -> {out}");
                    check(&what, &want, &got);
                }
            }
        }
    }
}

/// The symmetric and asymmetric rules with f32 x and f32 scales on blocks along an outer
/// axis whose rows span whole groups of vectors (the vector kernel shared with the
/// onnxruntime mode; rows wider than one unit of it, 1024 columns, too) and along the last
/// axis (a parameter vector per group of blocks): every integer y, every data pattern.
pub fn blockwise_wide_columns() {
    let mut rng = Rng::new(305);
    let cases: [(Vec<usize>, isize, usize); 8] = [
        (vec![70, 128], 0, 32),
        (vec![3, 40, 64], 1, 16),
        (vec![33, 1088], 0, 8),
        (vec![64, 192], 0, 1),
        // Blocks along the last axis, LANES blocks per parameter vector (short last blocks
        // of a row included, which the group kernel takes alone).
        (vec![7, 96], 1, 32),
        (vec![5, 100], 1, 16),
        (vec![3, 2, 640], 2, 64),
        (vec![9, 48], -1, 8),
    ];
    let outs = [DataType::I4, DataType::U4, DataType::I8, DataType::U8, DataType::I2, DataType::U2];
    for (i, (shape, axis, b)) in cases.iter().enumerate() {
        let layout = Layout::blocked(shape, *axis, *b).unwrap();
        let n: usize = shape.iter().product();
        for pattern in 0..7 {
            let x = X::F32(data(&mut rng, n, pattern + i));
            for (j, out) in outs.iter().enumerate() {
                let signed = out.int_range().unwrap().0 < 0;
                for mode in [BlockMode::Symmetric, BlockMode::Asymmetric] {
                    let zp = !signed || mode == BlockMode::Asymmetric || (i + j) % 2 == 0;
                    let want = blockwise_once(None, &x, layout, mode, *out, DataType::F32, zp);
                    for (name, cfg) in configs() {
                        let got = blockwise_once(Some(&cfg), &x, layout, mode, *out, DataType::F32, zp);
                        check(
                            &format!("{name}: {shape:?} axis {axis} block {b} pattern {pattern} {mode:?} -> {out}"),
                            &want,
                            &got,
                        );
                    }
                }
            }
        }
    }
}

/// onnxruntime mode on ties: blocks of 32 along axis 0 whose rows 0 and 1 are -8 and 7, so
/// that both rules get the scale 1 (and uint4 the zero point 8) and q = x exactly; the
/// other rows are half-integers and their neighbouring floats, where rounding half away
/// from zero differs from every other rounding.
pub fn onnxruntime_mode_ties() {
    let (rows, cols) = (96usize, 1100usize);
    let mut near = Vec::new();
    for k in -15..=13 {
        let h = k as f32 / 2.0;
        near.extend([h, h.next_down(), h.next_up()]);
    }
    let x: Vec<f32> = (0..rows * cols)
        .map(|i| match (i / cols) % 32 {
            0 => -8.0,
            1 => 7.0,
            _ => near[(i * 7 + i / cols) % near.len()],
        })
        .collect();
    let layout = Layout::blocked(&[rows, cols], 0, 32).unwrap();
    let x = X::F32(x);
    for out in [DataType::I4, DataType::U4] {
        let zp = out == DataType::U4;
        let want = blockwise_once(None, &x, layout, BlockMode::Onnxruntime, out, DataType::F32, zp);
        let expect_scale = 1.0f32.to_le_bytes();
        assert!(want.1.chunks(4).all(|c| c == expect_scale), "{out}: every scale is 1");
        for (name, cfg) in configs() {
            let got = blockwise_once(Some(&cfg), &x, layout, BlockMode::Onnxruntime, out, DataType::F32, zp);
            check(&format!("{name}: onnxruntime ties -> {out}"), &want, &got);
        }
    }
}

fn mx_once(cfg: Option<&qdq::Config>, x: &X, layout: Layout, rounding: ScaleRounding, out: DataType) -> Out {
    let n = x.values().len();
    let k = layout.scale_count(n).unwrap();
    let mut y = vec![0xa5u8; out.byte_len(n).unwrap()];
    let mut s = vec![Float8E8M0(0x5a); k];
    let yv = PackedMut::new(out, &mut y);
    match cfg {
        None => qdq_ref::scaled::quantize_mx(x.values(), layout, rounding, yv, &mut s).unwrap(),
        Some(c) => qdq::scaled::quantize_mx_with(c, x.values(), layout, rounding, yv, &mut s).unwrap(),
    }
    (y, s.iter().map(|v| v.0).collect(), Vec::new())
}

fn mx_cases(cases: &[(Vec<usize>, isize, usize)], seed: u64) {
    let mut rng = Rng::new(seed);
    let outs = [DataType::E4M3Fn, DataType::E5M2, DataType::E2M3, DataType::E3M2, DataType::E2M1, DataType::I8];
    let roundings = [ScaleRounding::Floor, ScaleRounding::Ceil, ScaleRounding::NearestEven];
    for (i, (shape, axis, b)) in cases.iter().enumerate() {
        let layout = Layout::blocked(shape, *axis, *b).unwrap();
        let n: usize = shape.iter().product();
        let v = data(&mut rng, n, i);
        let x = X::new([DataType::F32, DataType::F16, DataType::Bf16][i % 3], &v);
        for (j, out) in outs.iter().enumerate() {
            let rounding = roundings[(i + j) % 3];
            let want = mx_once(None, &x, layout, rounding, *out);
            for (name, cfg) in configs() {
                let got = mx_once(Some(&cfg), &x, layout, rounding, *out);
                check(&format!("{name}: {shape:?} axis {axis} block {b} MX {rounding:?} -> {out}"), &want, &got);
            }
        }
    }
}

pub fn mx_matches_reference() {
    mx_cases(&block_cases(false), 305);
    mx_varying_scales(306);
}

/// f32 blocks along the last axis whose magnitudes differ block by block (every block's
/// scale code its own, so a block quantized with a neighbour's scale shows), with
/// all-zero, subnormal, NaN and infinite blocks among them: the whole-block kernels and
/// their fallback to the general rule in the middle of a run.
fn mx_varying_scales(seed: u64) {
    let mut rng = Rng::new(seed);
    let outs = [DataType::E4M3Fn, DataType::E5M2, DataType::E2M3, DataType::E3M2, DataType::E2M1, DataType::I8];
    // The second set has runs of up to 23 ordinary blocks between the special ones, so
    // that whole groups of `LANES` blocks (16 on AVX-512) take the group kernels, and a
    // special block falls inside a group.
    let shapes: [(&[usize], usize, usize); 9] = [
        (&[5, 256], 32, 23),
        (&[3, 96], 32, 23),
        (&[1, 32], 32, 23),
        (&[4, 128], 16, 23),
        (&[2, 256], 64, 23),
        (&[3, 80], 32, 23),
        (&[4, 1024], 32, 53),
        (&[2, 4096], 64, 53),
        (&[3, 512], 16, 53),
    ];
    for (shape, b, period) in shapes {
        let layout = Layout::blocked(shape, -1, b).unwrap();
        let n: usize = shape.iter().product();
        let v = varying_blocks(&mut rng, n, b, period);
        let x = X::new(DataType::F32, &v);
        for out in outs {
            for rounding in [ScaleRounding::Floor, ScaleRounding::Ceil] {
                let want = mx_once(None, &x, layout, rounding, out);
                for (name, cfg) in configs() {
                    let got = mx_once(Some(&cfg), &x, layout, rounding, out);
                    check(&format!("{name}: {shape:?} block {b} varying MX {rounding:?} -> {out}"), &want, &got);
                }
            }
        }
    }
}

/// `n` f32 in blocks of `b` whose magnitudes differ block by block (2^-30 to 2^30), with
/// special blocks at fixed positions of every `period` blocks: all zero, subnormal, one
/// NaN, one -inf.
fn varying_blocks(rng: &mut Rng, n: usize, b: usize, period: usize) -> Vec<f32> {
    let (zero, sub, nan, inf) = if period == 23 { (5, 11, 17, 19) } else { (5, 30, 41, 47) };
    let mut v = Vec::with_capacity(n);
    for (j, block) in (0..n).collect::<Vec<_>>().chunks(b).enumerate() {
        let mag = 2f32.powi(rng.below(61) as i32 - 30);
        let at = rng.below(block.len());
        for k in 0..block.len() {
            let r = j % period;
            v.push(if r == zero {
                0.0
            } else if r == sub {
                rng.signed_unit() * 1e-40
            } else if r == nan && k == at {
                f32::NAN
            } else if r == inf && k == at {
                f32::NEG_INFINITY
            } else {
                rng.signed_unit() * mag
            });
        }
    }
    v
}

fn nvfp4_once(cfg: Option<&qdq::Config>, x: &X, layout: Layout, g: f32) -> Out {
    let n = x.values().len();
    let k = layout.scale_count(n).unwrap();
    let mut y = vec![0xa5u8; DataType::E2M1.byte_len(n).unwrap()];
    let mut s = vec![Float8E4M3Fn(0x5a); k];
    let yv = PackedMut::new(DataType::E2M1, &mut y);
    match cfg {
        None => qdq_ref::scaled::quantize_nvfp4(x.values(), layout, g, yv, &mut s).unwrap(),
        Some(c) => qdq::scaled::quantize_nvfp4_with(c, x.values(), layout, g, yv, &mut s).unwrap(),
    }
    (y, s.iter().map(|v| v.0).collect(), Vec::new())
}

fn nvfp4_cases(cases: &[(Vec<usize>, isize, usize)], seed: u64) {
    let mut rng = Rng::new(seed);
    for (i, (shape, axis, b)) in cases.iter().enumerate() {
        let layout = Layout::blocked(shape, *axis, *b).unwrap();
        let n: usize = shape.iter().product();
        let v = data(&mut rng, n, i);
        let x = X::new([DataType::F32, DataType::F16, DataType::Bf16][i % 3], &v);
        let g_ref = qdq_ref::scaled::nvfp4_global_scale(x.values());
        for g in [g_ref, 1.0, 1e-3] {
            let want = nvfp4_once(None, &x, layout, g);
            for (name, cfg) in configs() {
                assert_eq!(
                    qdq::scaled::nvfp4_global_scale_with(&cfg, x.values()).unwrap().to_bits(),
                    g_ref.to_bits(),
                    "{name}: {shape:?} global scale"
                );
                let got = nvfp4_once(Some(&cfg), &x, layout, g);
                check(&format!("{name}: {shape:?} axis {axis} block {b} NVFP4 g {g:e}"), &want, &got);
            }
        }
    }
}

pub fn nvfp4_matches_reference() {
    nvfp4_cases(&block_cases(false), 306);
    nvfp4_scale_ties();
    nvfp4_varying_scales(309);
}

/// NVFP4 on f32 blocks of 16 along the last axis, every row whole, with block magnitudes
/// that differ block by block and all-zero, subnormal, NaN and -inf blocks among long runs
/// of ordinary ones (the group kernel's scale codes, special ones included, and its
/// fallback to the general rule).
fn nvfp4_varying_scales(seed: u64) {
    let mut rng = Rng::new(seed);
    for (shape, period) in [(&[4usize, 1024][..], 53), (&[3, 256][..], 23)] {
        let layout = Layout::blocked(shape, -1, 16).unwrap();
        let n: usize = shape.iter().product();
        let x = X::new(DataType::F32, &varying_blocks(&mut rng, n, 16, period));
        // 1e-8 and the subnormal 1e-40 put block scales below the kernels' fast range
        // (the tiny blocks' scales near 2^-33; the subnormal blocks', subnormal).
        for g in [1.0, 0.37, 3e-5, 1e-8, 1e-40] {
            let want = nvfp4_once(None, &x, layout, g);
            for (name, cfg) in configs() {
                let got = nvfp4_once(Some(&cfg), &x, layout, g);
                check(&format!("{name}: {shape:?} varying NVFP4 g {g:e}"), &want, &got);
            }
        }
    }
}

/// NVFP4 block scales on the ties of e4m3fn's rounding: with the global scale 0.5, a block
/// whose amax is 3 v has the exact scale value v = amax / 3, here every midpoint between
/// neighbouring e4m3fn values (subnormal and normal) and its neighbouring floats, f32 x
/// along the last axis in blocks of 16.
fn nvfp4_scale_ties() {
    let mut amax = Vec::new();
    for c in 1u8..0x7e {
        let (lo, hi) = (Float8E4M3Fn(c).to_f32(), Float8E4M3Fn(c + 1).to_f32());
        let mid = (lo + hi) / 2.0;
        for v in [mid, mid.next_down(), mid.next_up()] {
            amax.push(3.0 * v);
        }
    }
    let blocks = amax.len();
    let x: Vec<f32> = (0..blocks * 16)
        .map(|i| {
            let (b, t) = (i / 16, i % 16);
            // The amax in a varying position, the rest below it.
            if t == b % 16 {
                if b % 2 == 0 {
                    amax[b]
                } else {
                    -amax[b]
                }
            } else {
                amax[b] * ((t * 7 % 16) as f32 / 17.0)
            }
        })
        .collect();
    let layout = Layout::blocked(&[blocks, 16], 1, 16).unwrap();
    let x = X::F32(x);
    let want = nvfp4_once(None, &x, layout, 0.5);
    for (name, cfg) in configs() {
        let got = nvfp4_once(Some(&cfg), &x, layout, 0.5);
        check(&format!("{name}: NVFP4 scale ties"), &want, &got);
    }
}

/// Large shapes: parts of block rows on every executor, uniform and non-uniform.
pub fn large_scaled_parallel() {
    let cases = large_block_cases();
    blockwise_cases(&cases, 307);
    mx_cases(&cases[..2], 308);
    nvfp4_cases(&cases[..2], 309);
}

// ---------------------------------------------------------------------------------------
// DequantizeLinear round trips
// ---------------------------------------------------------------------------------------

/// Every mode's outputs, fed to `qdq::dequantize` as they are, give `(y - z) * s` per
/// element (the documented dequantized values), and values within the scale's range come
/// back within one quantization step.
pub fn outputs_round_trip_through_dequantize() {
    let mut rng = Rng::new(310);
    let shape = [6usize, 70];
    let n = 6 * 70;
    for pattern in [0usize, 1, 5] {
        let v = data(&mut rng, n, pattern);
        // Blockwise, every output type and mode, f32 scales.
        for (axis, b) in [(1isize, 32usize), (0, 4)] {
            let layout = Layout::blocked(&shape, axis, b).unwrap();
            let k = layout.scale_count(n).unwrap();
            for out in [DataType::I4, DataType::U4, DataType::I8, DataType::U8, DataType::I2, DataType::U2] {
                for mode in [BlockMode::Symmetric, BlockMode::Asymmetric] {
                    let (mut y, mut s, mut z) =
                        (vec![0u8; out.byte_len(n).unwrap()], vec![0f32; k], vec![0u8; out.byte_len(k).unwrap()]);
                    qdq::scaled::quantize_blockwise(
                        &v,
                        layout,
                        mode,
                        PackedMut::new(out, &mut y),
                        &mut s,
                        Some(PackedMut::new(out, &mut z)),
                    )
                    .unwrap();
                    let params = Params::blocked(&s, &shape, axis, b)
                        .unwrap()
                        .zero_points(qdq::Packed::new(out, k, &z).unwrap());
                    let mut back = vec![0f32; n];
                    qdq::dequantize(qdq::Packed::new(out, n, &y).unwrap(), &params, &mut back).unwrap();
                    for i in 0..n {
                        let kk = layout.scale_index(i);
                        let (q, zz) = (qdq::packing::get_int(out, &y, i), qdq::packing::get_int(out, &z, kk));
                        let doc = ((q - zz) as f32) * s[kk];
                        assert_eq!(back[i].to_bits(), doc.to_bits(), "{out} {mode:?} element {i}");
                        if v[i].is_finite() {
                            let err = (back[i] - v[i]).abs();
                            assert!(
                                err <= s[kk] * 0.5001,
                                "{out} {mode:?} element {i}: {} -> {} (scale {})",
                                v[i],
                                back[i],
                                s[kk]
                            );
                        }
                    }
                }
            }
        }
        // MX: e8m0 scales, every element format.
        let layout = Layout::blocked(&shape, 1, 32).unwrap();
        let k = layout.scale_count(n).unwrap();
        for out in [DataType::E4M3Fn, DataType::E5M2, DataType::E2M3, DataType::E3M2, DataType::E2M1, DataType::I8] {
            let (mut y, mut s) = (vec![0u8; out.byte_len(n).unwrap()], vec![Float8E8M0(0); k]);
            qdq::scaled::quantize_mx(&v, layout, ScaleRounding::Floor, PackedMut::new(out, &mut y), &mut s).unwrap();
            let params = Params::blocked(&s, &shape, 1, 32).unwrap();
            let mut back = vec![0f32; n];
            qdq::dequantize(qdq::Packed::new(out, n, &y).unwrap(), &params, &mut back).unwrap();
            for i in 0..n {
                let kk = layout.scale_index(i);
                let code = qdq::packing::get(out, &y, i);
                let q = match qdq::float::FloatFormat::of(out) {
                    Some(f) => f.decode(code) as f32,
                    None => qdq::packing::get_int(out, &y, i) as f32,
                };
                let doc = q * s[kk].to_f32();
                assert_eq!(back[i].to_bits(), doc.to_bits(), "MX {out} element {i}");
            }
        }
        // NVFP4: the two-node chain.
        let layout = Layout::blocked(&shape, 1, 16).unwrap();
        let k = layout.scale_count(n).unwrap();
        let g = qdq::scaled::nvfp4_global_scale(&v).unwrap();
        let (mut y, mut sb) = (vec![0u8; DataType::E2M1.byte_len(n).unwrap()], vec![Float8E4M3Fn(0); k]);
        qdq::scaled::quantize_nvfp4(&v, layout, g, PackedMut::new(DataType::E2M1, &mut y), &mut sb).unwrap();
        let mut d = vec![0f32; k];
        qdq::dequantize(&sb, &Params::per_tensor(g), &mut d).unwrap();
        let mut back = vec![0f32; n];
        qdq::dequantize(
            qdq::Packed::new(DataType::E2M1, n, &y).unwrap(),
            &Params::blocked(&d, &shape, 1, 16).unwrap(),
            &mut back,
        )
        .unwrap();
        for i in 0..n {
            let kk = layout.scale_index(i);
            assert_eq!(d[kk].to_bits(), (sb[kk].to_f32() * g).to_bits(), "NVFP4 block scale {kk}");
            let q =
                qdq::float::FloatFormat::of(DataType::E2M1).unwrap().decode(qdq::packing::get(DataType::E2M1, &y, i))
                    as f32;
            assert_eq!(back[i].to_bits(), (q * d[kk]).to_bits(), "NVFP4 element {i}");
        }
    }
}

// ---------------------------------------------------------------------------------------
// Tensor level
// ---------------------------------------------------------------------------------------

/// `quantize_scaled` on every configuration equals the reference's, and its tensors run
/// through the DequantizeLinear node (opset 25) as they are: per-axis for rows, blocked
/// for blocks (e8m0 scales with `output_dtype`), and the two-node NVFP4 chain.
pub fn tensor_level_feeds_dequantize_linear() {
    use qdq::scaled::Scheme;
    use qdq::{Attribute, Opset, TensorRef};
    let mut rng = Rng::new(311);
    let shape = [5usize, 48];
    let v = data(&mut rng, 5 * 48, 0);
    let x = TensorRef::new(&shape, &v).unwrap();
    let schemes = [
        (Scheme::Rows, DataType::I8),
        (Scheme::Rows, DataType::U8),
        (Scheme::Blockwise { mode: BlockMode::Symmetric, scale_type: DataType::F16 }, DataType::I4),
        (Scheme::Blockwise { mode: BlockMode::Asymmetric, scale_type: DataType::F32 }, DataType::U4),
        (Scheme::Blockwise { mode: BlockMode::Onnxruntime, scale_type: DataType::F32 }, DataType::U4),
        (Scheme::Mx { rounding: ScaleRounding::Floor }, DataType::E4M3Fn),
        (Scheme::Mx { rounding: ScaleRounding::Ceil }, DataType::E2M1),
        (Scheme::Nvfp4 { global_scale: None }, DataType::E2M1),
    ];
    let opset = Opset::onnx(25);
    for (scheme, out) in schemes {
        let (axis, block) = match scheme {
            Scheme::Nvfp4 { .. } => (1i64, 16usize),
            _ => (1, 32),
        };
        let want = qdq_ref::scaled::quantize_scaled(x, out, axis, block, scheme).unwrap();
        for (name, cfg) in configs() {
            let got = qdq::scaled::quantize_scaled_with(&cfg, x, out, axis, block, scheme).unwrap();
            assert_eq!(want, got, "{name}: {scheme:?} -> {out}");
        }
        // DequantizeLinear of the outputs, as a node.
        let (scale, global) = match want.global_scale {
            Some(g) => {
                let gs = TensorRef::scalar(&g);
                let d = qdq::run_node("DequantizeLinear", opset, &[Some(want.scale.view()), Some(gs)], &[], 1).unwrap();
                (d.into_iter().next().unwrap(), Some(g))
            }
            None => (want.scale.clone(), None),
        };
        let mut attrs = vec![];
        match scheme {
            Scheme::Rows => attrs.push(Attribute { name: "axis", value: 0 }),
            _ => {
                attrs.push(Attribute { name: "axis", value: axis });
                attrs.push(Attribute { name: "block_size", value: block as i64 });
            }
        }
        if scale.dtype() == DataType::E8M0 {
            attrs.push(Attribute { name: "output_dtype", value: 1 });
        }
        let zp = want.zero_point.as_ref().map(|z| z.view());
        let back = qdq::run_node("DequantizeLinear", opset, &[Some(want.y.view()), Some(scale.view()), zp], &attrs, 1)
            .unwrap_or_else(|e| panic!("{scheme:?} -> {out}: {e}"));
        let f16_out = back[0].dtype() == DataType::F16;
        let back: Vec<f32> = if f16_out {
            back[0].as_slice::<f16>().unwrap().iter().map(|h| h.to_f32()).collect()
        } else {
            back[0].as_slice::<f32>().unwrap().to_vec()
        };
        // Each value is (q - z) * s, s the block's (per-row: the row's) f32 scale.
        let scales: Vec<f32> = match scale.dtype() {
            DataType::F16 => scale.as_slice::<f16>().unwrap().iter().map(|h| h.to_f32()).collect(),
            DataType::E8M0 => scale.as_slice::<Float8E8M0>().unwrap().iter().map(|e| e.to_f32()).collect(),
            _ => scale.as_slice::<f32>().unwrap().to_vec(),
        };
        for i in 0..v.len() {
            let k = match scheme {
                Scheme::Rows => i / 48,
                _ => (i / 48) * (48usize).div_ceil(block) + (i % 48) / block,
            };
            let code = qdq::packing::get(out, want.y.bytes(), i);
            let q = match qdq::float::FloatFormat::of(out) {
                Some(f) => f.decode(code) as f32,
                None => qdq::packing::int_value(out, code) as f32,
            };
            let z = want.zero_point.as_ref().map_or(0.0, |zt| qdq::packing::get_int(out, zt.bytes(), k) as f32);
            let doc = (q - z) * scales[k];
            let doc = if f16_out { f16::from_f32(doc).to_f32() } else { doc };
            assert_eq!(back[i].to_bits(), doc.to_bits(), "{scheme:?} -> {out}: element {i} (global {global:?})");
        }
    }
}
