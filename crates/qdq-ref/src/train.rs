//! Training mode: QuantizeLinear / DequantizeLinear backward passes with the
//! straight-through estimator, the `lda` coefficient, bit-packed masks, fake quantization
//! and learnable scale / zero-point gradients (LSQ).
//!
//! None of this is part of ONNX. A deep-learning toolkit's QuantizeLinear gives
//! the op two training parameters: `training?` (store what the backward pass needs) and
//! `lda coeff` (a factor applied to the loss derivative before it is passed to the previous
//! layer). They are parameters of these functions, never node attributes.
//!
//! # Forward
//!
//! [`quantize_train`] computes `y` exactly as [`crate::quantize()`] (bit for bit, same
//! validation) plus a **mask**: one bit per element, element `i` in bit `i % 8` of byte
//! `i / 8`, `ceil(n / 8)` bytes, padding bits zero. The bit is 1 when the element was
//! *representable*, i.e. neither clamped nor NaN (see [`crate::quantize::representable`]):
//!
//! ```text
//! q = round_P(round_P(x) / round_P(s))               the quotient of QuantizeLinear
//! integer y: mask = !NaN(q) && qmin <= roundTiesEven(q) + zp <= qmax    (bounds included)
//! float y:   mask = !NaN(q) && |RNE_T(q)| <= max_T   (no overflow; independent of saturate)
//! ```
//!
//! [`fake_quantize`] fuses QuantizeLinear and DequantizeLinear, the usual QAT node:
//! `y = DequantizeLinear(QuantizeLinear(x))` with the same scale, zero point and layout,
//! i.e. `y = round_O(f32(c - zp) * s)` for integer codes `c` (`f32(decode(c)) * s` for float
//! codes), bit-identical to the two inference ops run one after the other, plus the same mask.
//!
//! # Backward (straight-through estimator)
//!
//! Rounding is treated as the identity in the backward pass; saturation is not. With `dy` the
//! loss derivative, `lda` the coefficient and `g` the gradient scale (LSQ, default 1):
//!
//! | function | result | f32 evaluation order |
//! |---|---|---|
//! | [`quantize_backward`] | `dx = lda * dy * mask / s` | `mask ? (lda * dy) / s_P : +0` |
//! | [`dequantize_backward`] | `dx = lda * dy * s` | `(lda * dy) * s` |
//! | [`dequantize_scale_grad`] | `ds_k = sum_k dy * (x - zp)` | terms `dy * d` (`d` as DequantizeLinear computes it) |
//! | [`fake_quantize_backward`] | `dx = lda * dy * mask` | `mask ? lda * dy : +0` |
//! | | `ds_k = g * sum_k t` | terms below, then one multiply by `g` |
//! | | `dzp_k = g * sum_k(-dy * s)` over clamped elements | `g * -(s_k * sum_k u)` |
//! | [`mask_backward`] | `dx = lda * dy * mask` from a stored mask | `mask ? lda * dy : +0` |
//!
//! `s_P` is the divisor the forward used (`round_P(s)`); `s` elsewhere is the scale's value
//! (exact in f32 for every accepted scale type). A masked-out element gets `+0` whatever
//! `dy` is (also for `dy = ±inf` or NaN): the gradient of a clamped value is zero. All
//! arithmetic is f32 with one rounding per operation; the result is rounded once more to
//! `dx`'s type (f16 / bf16). `dy` may be f32, f16 or bf16.
//!
//! **The LSQ terms** (Esser et al., 2020, "Learned Step Size Quantization"): for integer
//! outputs `y = (clamp(round(q) + zp, qmin, qmax) - zp) * s` with `q = x / s`, so with
//! the straight-through estimator
//!
//! ```text
//! dy/ds  = round(q) - q      if representable     dy/dzp = 0
//!        = qmin - zp         if clamped low       dy/dzp = -s
//!        = qmax - zp         if clamped high      dy/dzp = -s
//! t = dy * f32(round(q) - q)  or  dy * f32(qmin - zp)  or  dy * f32(qmax - zp)
//! u = -0  if representable,  dy  if clamped
//! ```
//!
//! `round(q) - q` is exact in f32 (a rounding error of a value of `P`), and so are the
//! integer bounds. NaN x counts as clamped low: QuantizeLinear sends it to qmin (R3).
//! `ds` and `dzp` are defined for integer outputs only (float8 / float4 / float6 give
//! `dx` only). `lda` scales only `dx`, the derivative passed to the previous layer.
//!
//! Every NaN in an output (`y` of fake quantization, `dx`, `ds`, `dzp`) is the canonical
//! NaN [`crate::float::CANONICAL_NAN`], whichever NaNs met to produce it (a `+NaN` and a
//! `-NaN` dy in one sum, a NaN dy times a NaN scale).
//!
//! # Summation order (deterministic on every ISA and thread count)
//!
//! A float sum depends on its order, so the order is part of the definition; `qdq`
//! reproduces it bit for bit, sequential or parallel, on every ISA:
//!
//! 1. **Runs.** The layout decides runs of consecutive elements that share a scale:
//!    per-tensor, one run `[0, n)`; per-axis with elements after the axis, the `inner`
//!    elements of each `(outer, axis)` row; blocked along the last axis, each block;
//!    per-axis along the last axis and blocked along another axis, single elements.
//! 2. **A run** of `m <= 16384` terms is summed in 16 interleaved partial sums (position
//!    `p` goes to partial `p % 16`, each a left fold starting at `-0`), then pairwise:
//!    `P[l] += P[l + w]` for `w = 8, 4, 2, 1` and `l < w`; the result is `P[0]`. A longer
//!    run is split after `16384 * ceil(ceil(m / 16384) / 2)` terms and its two parts summed
//!    recursively, then added. A single term sums to itself.
//! 3. **A group** (the elements of one scale) sums its runs left to right, starting at `-0`.
//!
//! `-0` is the neutral element of IEEE addition (`-0 + t == t` bit for bit, `-0 + -0 == -0`),
//! so padding lanes and empty partials never change a result. The 16 partials are what one
//! AVX-512 vector (or two AVX2, four NEON vectors) accumulates; the fixed split of long runs
//! is what lets `qdq` sum a per-tensor gradient on many threads and still get this result.
//!
//! Inputs are restricted to what training uses: x of type f32, f16 or bf16 and a float
//! scale (f32, f16, bf16 or e8m0; an i32 scale is rejected). The slice API allocates nothing.

use crate::dequantize;
use crate::dtype::DataType;
use crate::error::{bail, Result};
use crate::float::{canonical_nan, FloatFormat};
use crate::layout::Layout;
use crate::packing;
use crate::quantize::{self, zero_point_value, Precision, QuantizeOptions};
use crate::values::{Packed, Read, Values, ValuesMut, Write};

/// The quantization parameters of a training forward call and its backward pass, exactly
/// as the inference op takes them (see [`crate::quantize()`]).
#[derive(Clone, Copy, Debug)]
pub struct QuantParams<'a> {
    /// The scale (f32, f16, bf16 or e8m0).
    pub scale: Values<'a>,
    /// The zero point (the output type, as many elements as the scale), if any.
    pub zero_point: Option<Packed<'a>>,
    /// The granularity.
    pub layout: Layout,
    /// Output type, float8 saturation, division precision.
    pub opts: QuantizeOptions,
}

/// Coefficients of the backward passes.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct GradOptions {
    /// `lda`: multiplies `dx`, the derivative passed to the previous layer (default 1).
    pub lda: f32,
    /// `g`: multiplies the scale and zero-point gradients (LSQ's gradient scale, default 1;
    /// the LSQ paper uses `1 / sqrt(elements per scale * qmax)`).
    pub grad_scale: f32,
}

impl Default for GradOptions {
    fn default() -> Self {
        GradOptions { lda: 1.0, grad_scale: 1.0 }
    }
}

/// The outputs of [`fake_quantize_backward`]; each is optional, so a caller computes only
/// what it trains.
#[derive(Debug, Default)]
pub struct FakeQuantGrads<'a> {
    /// `dx`, one element per x element (f32, f16 or bf16).
    pub dx: Option<ValuesMut<'a>>,
    /// `ds`, one f32 per scale (integer outputs only).
    pub ds: Option<&'a mut [f32]>,
    /// `dzp`, one f32 per zero point (integer outputs only; computed whether or not the
    /// forward had a zero point, which is then 0).
    pub dzp: Option<&'a mut [f32]>,
}

/// Bytes of the mask of `n` elements: `ceil(n / 8)`.
///
/// ```
/// use qdq_ref::train::mask_len;
/// assert_eq!(mask_len(0), 0);
/// assert_eq!(mask_len(8), 1);
/// assert_eq!(mask_len(9), 2);
/// ```
pub fn mask_len(n: usize) -> usize {
    n.div_ceil(8)
}

/// Bit `i` of a mask.
///
/// ```
/// use qdq_ref::train::mask_bit;
/// // Element i is bit i % 8 of byte i / 8: elements 0, 2 and 8 are set.
/// let mask = [0b0000_0101u8, 0b0000_0001];
/// let set: Vec<usize> = (0..16).filter(|&i| mask_bit(&mask, i)).collect();
/// assert_eq!(set, [0, 2, 8]);
/// ```
pub fn mask_bit(mask: &[u8], i: usize) -> bool {
    mask[i / 8] >> (i % 8) & 1 == 1
}

/// The longest run summed without splitting (see the module docs).
pub const SUM_TILE: usize = 16384;

/// Partial sums per run (see the module docs).
pub const SUM_LANES: usize = 16;

/// Sums terms `term(start) .. term(start + len)` of one run (module docs, step 2).
///
/// ```
/// use qdq_ref::train::run_sum;
/// // Terms 2, 3 and 4: the run of 3 elements starting at element 2.
/// assert_eq!(run_sum(2, 3, &|i| i as f32), 9.0);
/// // 1e8 then 31 ones: a left fold loses every 1 (f32's ulp at 1e8 is 8); 16 partials keep 24.
/// assert_eq!(run_sum(0, 32, &|i| if i == 0 { 1e8 } else { 1.0 }), 100_000_024.0);
/// // An empty run sums to -0.
/// assert_eq!(run_sum(0, 0, &|_| 1.0).to_bits(), (-0.0f32).to_bits());
/// ```
pub fn run_sum(start: usize, len: usize, term: &impl Fn(usize) -> f32) -> f32 {
    if len > SUM_TILE {
        let h = len.div_ceil(SUM_TILE).div_ceil(2) * SUM_TILE;
        return run_sum(start, h, term) + run_sum(start + h, len - h, term);
    }
    let mut p = [-0.0f32; SUM_LANES];
    for j in 0..len {
        p[j % SUM_LANES] += term(start + j);
    }
    fold_lanes(&mut p)
}

/// The pairwise reduction of the 16 partial sums (module docs, step 2).
///
/// ```
/// use qdq_ref::train::{fold_lanes, SUM_LANES};
/// let mut p = [1.0f32; SUM_LANES];
/// p[0] = 1e8;
/// // In lane order 1e8 + 1 + ... + 1 stays 1e8; pairwise, the ones meet first and 8 survive.
/// assert_eq!(fold_lanes(&mut p), 100_000_008.0);
/// ```
pub fn fold_lanes(p: &mut [f32; SUM_LANES]) -> f32 {
    let mut w = SUM_LANES / 2;
    while w > 0 {
        for l in 0..w {
            p[l] += p[l + w];
        }
        w /= 2;
    }
    p[0]
}

/// The runs of a layout over `n` elements as `(start, len, scale index)`, in element order
/// (module docs, step 1).
///
/// ```
/// use qdq_ref::{train::runs, Layout};
/// assert_eq!(runs(Layout::PerTensor, 5).collect::<Vec<_>>(), [(0, 5, 0)]);
/// // Shape [2, 2, 3], per-axis on axis 1: rows of 3 elements alternate between scales 0 and 1.
/// let r: Vec<_> = runs(Layout::PerAxis { outer: 2, axis_len: 2, inner: 3 }, 12).collect();
/// assert_eq!(r, [(0, 3, 0), (3, 3, 1), (6, 3, 0), (9, 3, 1)]);
/// ```
pub fn runs(layout: Layout, n: usize) -> impl Iterator<Item = (usize, usize, usize)> {
    let per_element = move |i: usize| (i, 1, layout.scale_index(i));
    let (rows, row_len, count): (usize, usize, usize) = match layout {
        Layout::PerTensor => (usize::from(n > 0), n, 0),
        Layout::PerAxis { outer, axis_len, inner } if inner > 1 => (outer * axis_len, inner, 0),
        Layout::Blocked { outer, axis_len, inner: 1, block } => (outer * axis_len.div_ceil(block), block, 0),
        _ => (0, 0, n),
    };
    let blocked = match layout {
        Layout::Blocked { axis_len, block, inner: 1, .. } => Some((axis_len, block)),
        _ => None,
    };
    let rows_iter = (0..rows).map(move |r| match blocked {
        // Block b of row o: the last block of a row may be short.
        Some((axis_len, block)) => {
            let per_row = axis_len.div_ceil(block);
            let (o, b) = (r / per_row, r % per_row);
            let start = o * axis_len + b * block;
            (start, block.min(axis_len - b * block), r)
        }
        None => {
            let k = match layout {
                Layout::PerAxis { axis_len, .. } => r % axis_len,
                _ => 0,
            };
            (r * row_len, row_len, k)
        }
    });
    rows_iter.chain((0..count).map(per_element))
}

/// Sums `term` over every group (module docs, step 3) into `out` (one entry per scale).
fn group_sums(layout: Layout, n: usize, term: &impl Fn(usize) -> f32, out: &mut [f32]) {
    out.fill(-0.0);
    for (start, len, k) in runs(layout, n) {
        out[k] += run_sum(start, len, term);
    }
}

fn check_float_scale(scale: &Values<'_>) -> Result<()> {
    if !matches!(scale.dtype(), DataType::F32 | DataType::F16 | DataType::Bf16 | DataType::E8M0) {
        bail!(
            UnsupportedType,
            "y_scale has type {}; the training ops take a float scale (f32, f16, bf16 or e8m0)",
            scale.dtype()
        );
    }
    Ok(())
}

/// Validates the parameters against `n` elements of x of type `x_type`; returns the
/// division precision.
fn check_params(p: &QuantParams<'_>, x_type: DataType, n: usize) -> Result<Precision> {
    if !x_type.is_wide_float() {
        bail!(UnsupportedType, "x has type {x_type}; the training ops take f32, f16 or bf16");
    }
    check_float_scale(&p.scale)?;
    let y_len = p.opts.output.byte_len(n).unwrap_or(usize::MAX);
    quantize::check(
        (x_type, n),
        (p.scale.dtype(), p.scale.len()),
        p.zero_point.as_ref(),
        &p.layout,
        &p.opts,
        y_len,
        ["scale", "zero_point"],
    )
}

/// A gradient input: f32, f16 or bf16 with `n` elements.
fn check_grad(name: &str, v: &Values<'_>, n: usize) -> Result<()> {
    if !v.dtype().is_wide_float() {
        bail!(UnsupportedType, "{name} has type {}; gradients are f32, f16 or bf16", v.dtype());
    }
    if v.len() != n {
        bail!(BufferLength, "{name} has {} elements but x has {n}", v.len());
    }
    Ok(())
}

fn check_out(name: &str, v: &ValuesMut<'_>, n: usize) -> Result<()> {
    if v.len() != n {
        bail!(BufferLength, "{name} has {} elements but x has {n}", v.len());
    }
    Ok(())
}

fn check_mask(len: usize, n: usize) -> Result<()> {
    if len != mask_len(n) {
        bail!(BufferLength, "mask: {n} elements need {} bytes (one bit each), got {len}", mask_len(n));
    }
    Ok(())
}

fn check_sums(name: &str, len: usize, scales: usize) -> Result<()> {
    if len != scales {
        bail!(BufferLength, "{name} has {len} elements but there are {scales} scales");
    }
    Ok(())
}

fn check_integer_output(name: &str, out: DataType) -> Result<()> {
    if out.int_range().is_none() {
        bail!(
            UnsupportedType,
            "{name}: learnable scale / zero-point gradients are defined for integer outputs, not {out}"
        );
    }
    Ok(())
}

/// Validates a [`quantize_train`] call.
///
/// ```
/// use qdq_ref::train::{check_quantize_train, QuantParams};
/// use qdq_ref::{DataType, ErrorKind, Layout, Precision, QuantizeOptions, Values};
/// let p = QuantParams { scale: Values::F32(&[0.5]), zero_point: None, layout: Layout::PerTensor,
///                       opts: QuantizeOptions::new(DataType::I8) };
/// let x = Values::F32(&[1.0; 9]);
/// assert_eq!(check_quantize_train(&x, &p, 9, 2)?, Precision::F32);
/// // 9 elements need a mask of 2 bytes.
/// assert_eq!(check_quantize_train(&x, &p, 9, 1).unwrap_err().kind(), ErrorKind::BufferLength);
/// # Ok::<(), qdq_ref::Error>(())
/// ```
pub fn check_quantize_train(x: &Values<'_>, p: &QuantParams<'_>, y_len: usize, mask_len: usize) -> Result<Precision> {
    let n = x.len();
    let precision = check_params(p, x.dtype(), n)?;
    let want = p.opts.output.byte_len(n).unwrap_or(usize::MAX);
    if y_len != want {
        bail!(BufferLength, "y: {n} elements of {} need {want} bytes, got {y_len}", p.opts.output);
    }
    check_mask(mask_len, n)?;
    Ok(precision)
}

/// Validates a [`quantize_backward`] call (`n` = elements of `dy`).
///
/// ```
/// use qdq_ref::train::{check_quantize_backward, QuantParams};
/// use qdq_ref::{DataType, ErrorKind, Layout, Precision, QuantizeOptions, Values};
/// let p = QuantParams { scale: Values::F32(&[0.5]), zero_point: None, layout: Layout::PerTensor,
///                       opts: QuantizeOptions::new(DataType::I8) };
/// let dy = Values::F32(&[1.0; 4]);
/// assert_eq!(check_quantize_backward(&dy, 1, &p, 4)?, Precision::F32);
/// // An i32 scale is rejected in training mode.
/// let p32 = QuantParams { scale: Values::I32(&[2]), ..p };
/// assert_eq!(check_quantize_backward(&dy, 1, &p32, 4).unwrap_err().kind(), ErrorKind::UnsupportedType);
/// # Ok::<(), qdq_ref::Error>(())
/// ```
pub fn check_quantize_backward(
    dy: &Values<'_>,
    mask_len: usize,
    p: &QuantParams<'_>,
    dx_len: usize,
) -> Result<Precision> {
    let n = dy.len();
    let precision = check_params(p, DataType::F32, n)?;
    check_grad("dy", dy, n)?;
    check_mask(mask_len, n)?;
    if dx_len != n {
        bail!(BufferLength, "dx has {dx_len} elements but dy has {n}");
    }
    Ok(precision)
}

/// Validates a [`mask_backward`] call.
///
/// ```
/// use qdq_ref::{train::check_mask_backward, ErrorKind, Values};
/// let dy = Values::F32(&[1.0; 9]);
/// check_mask_backward(&dy, 2, 9)?;
/// assert_eq!(check_mask_backward(&dy, 1, 9).unwrap_err().kind(), ErrorKind::BufferLength);
/// // Gradients are f32, f16 or bf16.
/// assert_eq!(check_mask_backward(&Values::I32(&[1]), 1, 1).unwrap_err().kind(), ErrorKind::UnsupportedType);
/// # Ok::<(), qdq_ref::Error>(())
/// ```
pub fn check_mask_backward(dy: &Values<'_>, mask_len: usize, dx_len: usize) -> Result<()> {
    let n = dy.len();
    check_grad("dy", dy, n)?;
    check_mask(mask_len, n)?;
    if dx_len != n {
        bail!(BufferLength, "dx has {dx_len} elements but dy has {n}");
    }
    Ok(())
}

/// Validates a [`fake_quantize`] call.
///
/// ```
/// use qdq_ref::train::{check_fake_quantize, QuantParams};
/// use qdq_ref::{DataType, ErrorKind, Layout, Precision, QuantizeOptions, Values};
/// let opts = QuantizeOptions { precision: Some(DataType::F16), ..QuantizeOptions::new(DataType::I8) };
/// let p = QuantParams { scale: Values::F32(&[0.5]), zero_point: None, layout: Layout::PerTensor, opts };
/// let x = Values::F32(&[1.0; 3]);
/// assert_eq!(check_fake_quantize(&x, &p, 3, Some(1))?, Precision::F16);
/// // y holds one float per element of x.
/// assert_eq!(check_fake_quantize(&x, &p, 2, None).unwrap_err().kind(), ErrorKind::BufferLength);
/// # Ok::<(), qdq_ref::Error>(())
/// ```
pub fn check_fake_quantize(
    x: &Values<'_>,
    p: &QuantParams<'_>,
    y_len: usize,
    mask_len: Option<usize>,
) -> Result<Precision> {
    let n = x.len();
    let precision = check_params(p, x.dtype(), n)?;
    if y_len != n {
        bail!(BufferLength, "y has {y_len} elements but x has {n}");
    }
    if let Some(m) = mask_len {
        check_mask(m, n)?;
    }
    Ok(precision)
}

/// Validates a [`fake_quantize_backward`] call.
///
/// ```
/// use qdq_ref::train::{check_fake_quantize_backward, FakeQuantGrads, QuantParams};
/// use qdq_ref::{DataType, ErrorKind, Layout, Precision, QuantizeOptions, Values};
/// let p = QuantParams { scale: Values::F32(&[0.5]), zero_point: None, layout: Layout::PerTensor,
///                       opts: QuantizeOptions::new(DataType::I8) };
/// let (x, dy) = (Values::F32(&[1.0; 2]), Values::F32(&[1.0; 2]));
/// let mut ds = [0f32];
/// let grads = FakeQuantGrads { ds: Some(&mut ds), ..Default::default() };
/// assert_eq!(check_fake_quantize_backward(&dy, &x, &p, &grads)?, Precision::F32);
/// // ds and dzp exist for integer outputs only.
/// let f8 = QuantParams { opts: QuantizeOptions::new(DataType::E4M3Fn), ..p };
/// let err = check_fake_quantize_backward(&dy, &x, &f8, &grads).unwrap_err();
/// assert_eq!(err.kind(), ErrorKind::UnsupportedType);
/// # Ok::<(), qdq_ref::Error>(())
/// ```
pub fn check_fake_quantize_backward(
    dy: &Values<'_>,
    x: &Values<'_>,
    p: &QuantParams<'_>,
    grads: &FakeQuantGrads<'_>,
) -> Result<Precision> {
    let n = x.len();
    let precision = check_params(p, x.dtype(), n)?;
    check_grad("dy", dy, n)?;
    if let Some(dx) = &grads.dx {
        check_out("dx", dx, n)?;
    }
    let scales = p.scale.len();
    if let Some(ds) = &grads.ds {
        check_integer_output("ds", p.opts.output)?;
        check_sums("ds", ds.len(), scales)?;
    }
    if let Some(dzp) = &grads.dzp {
        check_integer_output("dzp", p.opts.output)?;
        check_sums("dzp", dzp.len(), scales)?;
    }
    Ok(precision)
}

/// Validates a [`dequantize_backward`] call.
///
/// ```
/// use qdq_ref::{train::check_dequantize_backward, ErrorKind, Layout, Values};
/// let dy = Values::F32(&[1.0; 4]);
/// let rows = Layout::PerAxis { outer: 1, axis_len: 2, inner: 2 };
/// check_dequantize_backward(&dy, &Values::F32(&[0.5, 2.0]), &rows, 4)?;
/// // Two rows need two scales.
/// let err = check_dequantize_backward(&dy, &Values::F32(&[0.5]), &rows, 4).unwrap_err();
/// assert_eq!(err.kind(), ErrorKind::BufferLength);
/// # Ok::<(), qdq_ref::Error>(())
/// ```
pub fn check_dequantize_backward(dy: &Values<'_>, scale: &Values<'_>, layout: &Layout, dx_len: usize) -> Result<()> {
    let n = dy.len();
    check_grad("dy", dy, n)?;
    check_float_scale(scale)?;
    let want = layout.scale_count(n)?;
    if scale.len() != want {
        bail!(BufferLength, "x_scale has {} elements but the layout {layout:?} needs {want}", scale.len());
    }
    if dx_len != n {
        bail!(BufferLength, "dx has {dx_len} elements but dy has {n}");
    }
    Ok(())
}

/// Validates a [`dequantize_scale_grad`] call.
///
/// ```
/// use qdq_ref::{train::check_dequantize_scale_grad, ErrorKind, Layout, Packed, Values};
/// let (dy, x) = (Values::F32(&[1.0; 3]), Packed::from(&[10u8, 12, 7]));
/// check_dequantize_scale_grad(&dy, &x, Some(&Packed::from(&[10u8])), &Layout::PerTensor, 1)?;
/// // The zero point has x's type.
/// let err = check_dequantize_scale_grad(&dy, &x, Some(&Packed::from(&[10i8])), &Layout::PerTensor, 1).unwrap_err();
/// assert_eq!(err.kind(), ErrorKind::TypeMismatch);
/// # Ok::<(), qdq_ref::Error>(())
/// ```
pub fn check_dequantize_scale_grad(
    dy: &Values<'_>,
    x: &Packed<'_>,
    zero_point: Option<&Packed<'_>>,
    layout: &Layout,
    ds_len: usize,
) -> Result<()> {
    let n = x.len;
    check_grad("dy", dy, n)?;
    // DequantizeLinear's own checks (types, zero point, lengths), with an f32 scale of the
    // right length standing in for the scale, which the gradient does not read.
    let want = layout.scale_count(n)?;
    dequantize::check(x, (DataType::F32, want), zero_point, layout, DataType::F32, n, ["scale", "zero_point"])?;
    check_sums("ds", ds_len, want)
}

/// Per-element view of validated parameters.
struct Params<'p, 'a> {
    p: &'p QuantParams<'a>,
    precision: Precision,
}

impl Params<'_, '_> {
    fn scale(&self, k: usize) -> f64 {
        self.p.scale.value(k)
    }

    fn zero_point(&self, k: usize) -> Option<f64> {
        self.p.zero_point.as_ref().map(|z| zero_point_value(z, k))
    }

    fn quotient(&self, x: f64, k: usize) -> f64 {
        quantize::quotient(x, self.scale(k), self.precision)
    }

    fn code(&self, x: f64, k: usize) -> u32 {
        let o = &self.p.opts;
        quantize::quantize_value(x, self.scale(k), self.zero_point(k), o.output, self.precision, o.saturate)
    }

    fn representable(&self, x: f64, k: usize) -> bool {
        quantize::representable(self.quotient(x, k), self.zero_point(k), self.p.opts.output)
    }
}

/// Writes mask bit `i` (the byte was zeroed first).
fn set_bit(mask: &mut [u8], i: usize, bit: bool) {
    mask[i / 8] |= u8::from(bit) << (i % 8);
}

/// QuantizeLinear forward in training mode: `y` exactly as [`crate::quantize()`], plus the
/// representability mask (`mask_len(x.len())` bytes). Allocates nothing.
///
/// ```
/// use qdq_ref::train::{self, QuantParams};
/// use qdq_ref::{DataType, Layout, QuantizeOptions, Values};
/// let p = QuantParams { scale: Values::F32(&[0.5]), zero_point: None, layout: Layout::PerTensor,
///                       opts: QuantizeOptions::new(DataType::I8) };
/// let x = [-1.0f32, 0.25, 0.75, 100.0, f32::NAN];
/// let (mut y, mut mask) = ([0u8; 5], [0u8; 1]);
/// train::quantize_train(Values::F32(&x), &p, &mut y, &mut mask)?;
/// // x / 0.5 rounded half to even (i8 bytes); 200 clamps to 127, NaN goes to -128.
/// assert_eq!(y.map(|b| b as i8), [-2, 0, 2, 127, -128]);
/// assert_eq!(mask, [0b00111]); // the two clamped elements get 0
/// # Ok::<(), qdq_ref::Error>(())
/// ```
pub fn quantize_train(x: Values<'_>, p: &QuantParams<'_>, y: &mut [u8], mask: &mut [u8]) -> Result<()> {
    let precision = check_quantize_train(&x, p, y.len(), mask.len())?;
    let n = x.len();
    quantize::run(&x, n, &p.scale, p.zero_point.as_ref(), &p.layout, &p.opts, precision, y);
    let pr = Params { p, precision };
    mask.fill(0);
    for i in 0..n {
        set_bit(mask, i, pr.representable(x.value(i), p.layout.scale_index(i)));
    }
    Ok(())
}

/// QuantizeLinear backward: `dx = mask ? (lda * dy) / round_P(s) : +0`. `mask` is the
/// forward's; `p` the forward's parameters (only the scale, layout and precision are used).
///
/// ```
/// use qdq_ref::train::{self, QuantParams};
/// use qdq_ref::{DataType, Layout, QuantizeOptions, Values, ValuesMut};
/// let p = QuantParams { scale: Values::F32(&[0.5]), zero_point: None, layout: Layout::PerTensor,
///                       opts: QuantizeOptions::new(DataType::I8) };
/// let dy = [1.0f32, -2.0, 0.5, 3.0];
/// let mut dx = [9.0f32; 4];
/// // dx = 2 * dy / 0.5; element 3 was clamped in the forward (mask bit 0).
/// train::quantize_backward(Values::F32(&dy), &[0b0111], &p, 2.0, ValuesMut::F32(&mut dx))?;
/// assert_eq!(dx, [4.0, -8.0, 2.0, 0.0]);
/// # Ok::<(), qdq_ref::Error>(())
/// ```
pub fn quantize_backward(
    dy: Values<'_>,
    mask: &[u8],
    p: &QuantParams<'_>,
    lda: f32,
    mut dx: ValuesMut<'_>,
) -> Result<()> {
    let precision = check_quantize_backward(&dy, mask.len(), p, dx.len())?;
    let n = dy.len();
    for i in 0..n {
        let s = precision.round(p.scale.value(p.layout.scale_index(i))) as f32;
        let g = lda * dy.value(i) as f32;
        dx.put(i, if mask_bit(mask, i) { g / s } else { 0.0 });
    }
    Ok(())
}

/// The straight-through gradient from a stored mask: `dx = mask ? lda * dy : +0` (the `dx`
/// of [`fake_quantize_backward`], for callers that kept the forward's mask instead of x).
///
/// ```
/// use qdq_ref::{train, Values, ValuesMut};
/// let mut dx = [9.0f32; 3];
/// train::mask_backward(Values::F32(&[1.0, 2.0, 3.0]), &[0b101], 0.5, ValuesMut::F32(&mut dx))?;
/// assert_eq!(dx, [0.5, 0.0, 1.5]);
/// assert!(dx[1].is_sign_positive()); // a masked-out element gets +0
/// # Ok::<(), qdq_ref::Error>(())
/// ```
pub fn mask_backward(dy: Values<'_>, mask: &[u8], lda: f32, mut dx: ValuesMut<'_>) -> Result<()> {
    check_mask_backward(&dy, mask.len(), dx.len())?;
    for i in 0..dy.len() {
        dx.put(i, if mask_bit(mask, i) { lda * dy.value(i) as f32 } else { 0.0 });
    }
    Ok(())
}

/// Fake quantization forward: `y = DequantizeLinear(QuantizeLinear(x))` with the same
/// parameters, rounded to `y`'s type, plus the mask when `mask` is given.
///
/// ```
/// use qdq_ref::train::{self, QuantParams};
/// use qdq_ref::{DataType, Layout, QuantizeOptions, Values, ValuesMut};
/// let p = QuantParams { scale: Values::F32(&[0.5]), zero_point: None, layout: Layout::PerTensor,
///                       opts: QuantizeOptions::new(DataType::I8) };
/// let (mut y, mut mask) = ([0f32; 3], [0u8; 1]);
/// train::fake_quantize(Values::F32(&[0.3, -0.7, 100.0]), &p, ValuesMut::F32(&mut y), Some(&mut mask))?;
/// // Codes 1, -1 and 127 (clamped) times the scale.
/// assert_eq!(y, [0.5, -0.5, 63.5]);
/// assert_eq!(mask, [0b011]);
/// # Ok::<(), qdq_ref::Error>(())
/// ```
pub fn fake_quantize(x: Values<'_>, p: &QuantParams<'_>, mut y: ValuesMut<'_>, mask: Option<&mut [u8]>) -> Result<()> {
    let precision = check_fake_quantize(&x, p, y.len(), mask.as_ref().map(|m| m.len()))?;
    let n = x.len();
    let pr = Params { p, precision };
    let out = p.opts.output;
    for i in 0..n {
        let k = p.layout.scale_index(i);
        let code = pr.code(x.value(i), k);
        let d = if out.int_range().is_some() {
            let z = pr.zero_point(k).unwrap_or(0.0) as i64;
            (packing::int_value(out, code) - z) as f32
        } else {
            FloatFormat::of(out).map_or(f32::NAN, |f| f.decode(code) as f32)
        };
        y.put(i, d * p.scale.value(k) as f32);
    }
    if let Some(mask) = mask {
        mask.fill(0);
        for i in 0..n {
            set_bit(mask, i, pr.representable(x.value(i), p.layout.scale_index(i)));
        }
    }
    Ok(())
}

/// Which side an element of an integer output falls on (see the module docs).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Side {
    In,
    Low,
    High,
}

impl Params<'_, '_> {
    fn side(&self, q: f64, k: usize) -> Side {
        let out = self.p.opts.output;
        if quantize::representable(q, self.zero_point(k), out) {
            return Side::In;
        }
        let (qmin, _) = out.int_range().unwrap_or((0, 0));
        let low = q.is_nan() || q.round_ties_even() + self.zero_point(k).unwrap_or(0.0) < qmin as f64;
        if low {
            Side::Low
        } else {
            Side::High
        }
    }

    /// The LSQ scale-gradient term `t` of element `i` (module docs).
    fn scale_term(&self, x: f64, dy: f32, k: usize) -> f32 {
        let q = self.quotient(x, k);
        let (qmin, qmax) = self.p.opts.output.int_range().unwrap_or((0, 0));
        let z = self.zero_point(k).unwrap_or(0.0);
        let d = match self.side(q, k) {
            // Exact: the rounding error of a value of P.
            Side::In => (q.round_ties_even() - q) as f32,
            Side::Low => (qmin as f64 - z) as f32,
            Side::High => (qmax as f64 - z) as f32,
        };
        dy * d
    }

    /// The zero-point gradient term `u` of element `i` (module docs).
    fn zero_point_term(&self, x: f64, dy: f32, k: usize) -> f32 {
        match self.side(self.quotient(x, k), k) {
            Side::In => -0.0,
            Side::Low | Side::High => dy,
        }
    }
}

/// Fake quantization backward (module docs): `dx = mask ? lda * dy : +0` with the mask
/// recomputed from x, and for integer outputs the LSQ gradients `ds` and `dzp`.
///
/// ```
/// use qdq_ref::train::{self, FakeQuantGrads, GradOptions, QuantParams};
/// use qdq_ref::{DataType, Layout, QuantizeOptions, Values, ValuesMut};
/// let p = QuantParams { scale: Values::F32(&[0.5]), zero_point: None, layout: Layout::PerTensor,
///                       opts: QuantizeOptions::new(DataType::I8) };
/// let (x, dy) = ([0.25f32, 0.75, 100.0, -100.0], [1.0f32, 2.0, 1.0, 1.0]);
/// let (mut dx, mut ds, mut dzp) = ([0f32; 4], [0f32; 1], [0f32; 1]);
/// let grads = FakeQuantGrads { dx: Some(ValuesMut::F32(&mut dx)), ds: Some(&mut ds), dzp: Some(&mut dzp) };
/// train::fake_quantize_backward(Values::F32(&dy), Values::F32(&x), &p, &GradOptions::default(), grads)?;
/// assert_eq!(dx, [1.0, 2.0, 0.0, 0.0]); // the clamped elements pass no gradient
/// // q = 0.5 and 1.5 round to 0 and 2; the clamped ones give qmax and qmin:
/// assert_eq!(ds, [1.0 * -0.5 + 2.0 * 0.5 + 127.0 - 128.0]);
/// assert_eq!(dzp, [-(0.5 * (1.0 + 1.0))]); // -s times the clamped elements' dy
/// # Ok::<(), qdq_ref::Error>(())
/// ```
pub fn fake_quantize_backward(
    dy: Values<'_>,
    x: Values<'_>,
    p: &QuantParams<'_>,
    opts: &GradOptions,
    grads: FakeQuantGrads<'_>,
) -> Result<()> {
    let precision = check_fake_quantize_backward(&dy, &x, p, &grads)?;
    let n = x.len();
    let pr = Params { p, precision };
    let layout = p.layout;
    let dyv = |i: usize| dy.value(i) as f32;
    if let Some(mut dx) = grads.dx {
        for i in 0..n {
            let ok = pr.representable(x.value(i), layout.scale_index(i));
            dx.put(i, if ok { opts.lda * dyv(i) } else { 0.0 });
        }
    }
    let g = opts.grad_scale;
    if let Some(ds) = grads.ds {
        group_sums(layout, n, &|i| pr.scale_term(x.value(i), dyv(i), layout.scale_index(i)), ds);
        for v in ds.iter_mut() {
            *v = canonical_nan(*v * g);
        }
    }
    if let Some(dzp) = grads.dzp {
        group_sums(layout, n, &|i| pr.zero_point_term(x.value(i), dyv(i), layout.scale_index(i)), dzp);
        for (k, v) in dzp.iter_mut().enumerate() {
            let s = p.scale.value(k) as f32;
            *v = canonical_nan(g * -(s * *v));
        }
    }
    Ok(())
}

/// DequantizeLinear backward: `dx = (lda * dy) * s`.
///
/// ```
/// use qdq_ref::{train, Layout, Values, ValuesMut};
/// // Shape [2, 2] with one scale per row (per-axis on axis 0).
/// let rows = Layout::PerAxis { outer: 1, axis_len: 2, inner: 2 };
/// let (dy, scale, mut dx) = ([1.0f32, 2.0, 3.0, 4.0], [0.5f32, 2.0], [0f32; 4]);
/// train::dequantize_backward(Values::F32(&dy), Values::F32(&scale), rows, 2.0, ValuesMut::F32(&mut dx))?;
/// assert_eq!(dx, [1.0, 2.0, 12.0, 16.0]); // (2 * dy) * s
/// # Ok::<(), qdq_ref::Error>(())
/// ```
pub fn dequantize_backward(
    dy: Values<'_>,
    scale: Values<'_>,
    layout: Layout,
    lda: f32,
    mut dx: ValuesMut<'_>,
) -> Result<()> {
    check_dequantize_backward(&dy, &scale, &layout, dx.len())?;
    for i in 0..dy.len() {
        let s = scale.value(layout.scale_index(i)) as f32;
        dx.put(i, (lda * dy.value(i) as f32) * s);
    }
    Ok(())
}

/// DequantizeLinear scale gradient: `ds_k = sum over group k of dy * d` with `d` the
/// DequantizeLinear difference (`f32(x - zp)`, or the decoded float code), summed in the
/// order of the module docs.
///
/// ```
/// use qdq_ref::{train, Layout, Packed, Values};
/// let (x, zp) = (Packed::from(&[10u8, 12, 7]), Packed::from(&[10u8]));
/// let mut ds = [0f32; 1];
/// train::dequantize_scale_grad(Values::F32(&[1.0, 0.5, 2.0]), x, Some(zp), Layout::PerTensor, &mut ds)?;
/// // x - zp = [0, 2, -3]
/// assert_eq!(ds, [1.0 * 0.0 + 0.5 * 2.0 + 2.0 * -3.0]);
/// # Ok::<(), qdq_ref::Error>(())
/// ```
pub fn dequantize_scale_grad(
    dy: Values<'_>,
    x: Packed<'_>,
    zero_point: Option<Packed<'_>>,
    layout: Layout,
    ds: &mut [f32],
) -> Result<()> {
    check_dequantize_scale_grad(&dy, &x, zero_point.as_ref(), &layout, ds.len())?;
    let term = |i: usize| {
        let k = layout.scale_index(i);
        dy.value(i) as f32 * dequantize::difference(&x, i, zero_point.as_ref().map(|z| (z, k)))
    };
    group_sums(layout, x.len, &term, ds);
    ds.iter_mut().for_each(|v| *v = canonical_nan(*v));
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn runs_follow_the_layout() {
        let r: Vec<_> = runs(Layout::PerTensor, 5).collect();
        assert_eq!(r, [(0, 5, 0)]);
        assert_eq!(runs(Layout::PerTensor, 0).count(), 0);
        let r: Vec<_> = runs(Layout::PerAxis { outer: 2, axis_len: 2, inner: 3 }, 12).collect();
        assert_eq!(r, [(0, 3, 0), (3, 3, 1), (6, 3, 0), (9, 3, 1)]);
        let r: Vec<_> = runs(Layout::PerAxis { outer: 2, axis_len: 3, inner: 1 }, 6).collect();
        assert_eq!(r, [(0, 1, 0), (1, 1, 1), (2, 1, 2), (3, 1, 0), (4, 1, 1), (5, 1, 2)]);
        let r: Vec<_> = runs(Layout::Blocked { outer: 2, axis_len: 5, inner: 1, block: 2 }, 10).collect();
        assert_eq!(r, [(0, 2, 0), (2, 2, 1), (4, 1, 2), (5, 2, 3), (7, 2, 4), (9, 1, 5)]);
        let r: Vec<_> = runs(Layout::Blocked { outer: 1, axis_len: 3, inner: 2, block: 2 }, 6).collect();
        assert_eq!(r, [(0, 1, 0), (1, 1, 1), (2, 1, 0), (3, 1, 1), (4, 1, 2), (5, 1, 3)]);
    }

    #[test]
    fn run_sum_order() {
        // 1e8 then 31 ones; f32's ulp at 1e8 is 8. Lane 0: 1e8 + 1 = 1e8; lanes 1..15: 2.
        // Pairs: w=8: 1e8 + 2 = 1e8, others 4; w=4: 1e8 + 4 = 1e8 (tie, even mantissa),
        // others 8; w=2: 1e8 + 8, other 16; w=1: 100000024. An element-order fold would
        // give 1e8 (every single 1 is lost); this order keeps 24 of the 31.
        let t = |i: usize| if i == 0 { 1e8 } else { 1.0 };
        assert_eq!(run_sum(0, 32, &t), 100_000_024.0);
        // A single term sums to itself, signed zeros included.
        for v in [-0.0f32, 0.0, 1.5, f32::INFINITY] {
            assert_eq!(run_sum(7, 1, &|_| v).to_bits(), v.to_bits());
        }
        assert_eq!(run_sum(0, 0, &|_| 1.0).to_bits(), (-0.0f32).to_bits());
        // A long run splits at a tile multiple: three tiles go 2 + 1.
        let n = 2 * SUM_TILE + 5;
        let whole = run_sum(0, n, &|i| (i % 7) as f32 * 0.1);
        let split =
            run_sum(0, 2 * SUM_TILE, &|i| (i % 7) as f32 * 0.1) + run_sum(2 * SUM_TILE, 5, &|i| (i % 7) as f32 * 0.1);
        assert_eq!(whole.to_bits(), split.to_bits());
    }
}
