//! Quantizers that compute their own scales: per-row dynamic quantization of activations,
//! blockwise quantization of weights (symmetric, asymmetric, and onnxruntime's MLAS
//! rule), OCP Microscaling (MX v1.0) and NVIDIA's NVFP4.
//!
//! Each one computes the statistics of a row or block, derives its scale (and zero
//! point) with the scalar rule below, stores them in the caller's buffers, and then
//! quantizes with **exactly** those stored parameters:
//!
//! ```text
//! y = QuantizeLinear(x, scale_stored, zero_point_stored)       f32 division, saturate = 1
//! ```
//!
//! so the outputs plug straight into DequantizeLinear (per-axis for rows, blocked with
//! `block_size = B` for blocks), and every backend agrees bit for bit once the statistics
//! agree (they are exact: minima and maxima, no sums).
//!
//! # Statistics
//!
//! Over the elements of a row or block (f32, f16 and bf16 inputs are widened exactly):
//!
//! ```text
//! lo   = min(min x, 0)   hi = max(max x, 0)     NaN elements ignored (as DynamicQuantizeLinear)
//! amax = max(-lo, hi)                           = max |x| over the non-NaN elements
//! amax_nan = NaN if any element is NaN, else amax                      (MX, NVFP4)
//! ```
//!
//! # Per-row dynamic quantization ([`quantize_rows`])
//!
//! x is `[rows, cols]` with a row stride; y is `[rows, cols]` contiguous. The output type
//! picks the rule:
//!
//! | y | scale | zero point | every row is |
//! |---|---|---|---|
//! | u8 | `(hi - lo) / 255` | `roundTiesEven(clamp(0 - lo / s, 0, 255))` | DynamicQuantizeLinear-11 of the row alone, bit for bit (a range of 0 gives scale 0, zp 0) |
//! | i8 | `fix(amax / 127)` | 0 (not stored) | symmetric, y in `[-127, 127]` |
//! | float8 e4m3fn | `fix(amax / 448)` | 0 (not stored) | saturating |
//!
//! # Blockwise weights ([`quantize_blockwise`])
//!
//! Blocks of `B` consecutive indices along one axis (the last block of the axis may be
//! shorter), in the ONNX blocked layout: the scales (and zero points) have x's shape with
//! `ceil(D / B)` at the axis, so they feed DequantizeLinear-21+ with `block_size = B`.
//! Outputs int8 / uint8 / int4 / uint4 / int2 / uint2; scales f32, f16 or bf16
//! (`round_T` rounds the f32 value to that type, nearest-even).
//!
//! ```text
//! Symmetric:  m = qmax - z, where z = 0 (signed y) or 2^(bits-1) (unsigned y: 128, 8, 2)
//!             s = fix_T(round_T(amax / m))                                   zero point z
//!             signed y spans [-qmax, qmax]: int4 [-7, 7]; unsigned [1, 2^bits - 1]
//! Asymmetric: s = fix_T(round_T((hi - lo) / (qmax - qmin)))
//!             z = roundTiesEven(clamp(qmin - lo / s, qmin, qmax))  (with the stored s)
//! Onnxruntime: the arithmetic of onnxruntime's MLAS blockwise QDQ quantizer, see below
//! ```
//!
//! `fix_T`: a scale that is 0 (an all-zero block, or an amax so small that the division
//! or the rounding to T underflows) is stored as **1**, so the block quantizes to its zero
//! point and dequantizes to 0; a scale that is infinite (a block with ±inf, or a range
//! beyond the largest f32, or beyond T's largest value) is stored as **T's largest finite
//! value**, so that finite elements quantize to (nearly) the zero point and infinities
//! saturate. A NaN element quantizes as QuantizeLinear says (integer outputs: `qmin`).
//!
//! ## onnxruntime-compatible mode
//!
//! [`BlockMode::Onnxruntime`] reproduces onnxruntime's `MlasQDQQuantizeBlockwise` (what
//! its Python `quantize_qdq_matmul_4bits` calls) bit for bit, for int4 (symmetric) and
//! uint4 (asymmetric) outputs with f32 scales, see [`ort_params`] for the formulas.
//!
//! # OCP Microscaling, MX v1.0 ([`quantize_mx`])
//!
//! Blocks of `B` (32 in the spec) along an axis share one e8m0 scale `X = 2^e`. The
//! element type is y's type, and `emax` its largest power of two:
//!
//! | format | y | emax | max |
//! |---|---|---|---|
//! | MXFP8 | e4m3fn / e5m2 | 8 / 15 | 448 / 57344 |
//! | MXFP6 | e2m3 / e3m2 | 2 / 4 | 7.5 / 28 |
//! | MXFP4 | e2m1 | 2 | 6 |
//! | MXINT8 | i8 | 6 (see below) | 127 |
//!
//! ```text
//! Floor (the OCP rule):  e = floor(log2(amax)) - emax
//! Ceil (NVIDIA's RCEIL): d = amax * RN(1 / max) in f32;  e = ceil(log2(d))  (d's exponent, plus 1
//!                        if its mantissa is nonzero; d at most 2^-127 gives -127)
//! NearestEven:           e = floor(log2(round_elem(amax))) - emax, where round_elem rounds amax
//!                        to the element format's mantissa width (int8: 6 bits), nearest-even
//! e = clamp(e, -127, 127);   scale code = e + 127;   y = QuantizeLinear(x, 2^e, saturate = 1)
//! ```
//!
//! * A block holding a NaN or ±inf gets the NaN scale `0xff` (the OCP rule: its elements
//!   then mean NaN whatever they hold; y is QuantizeLinear's result for a NaN scale).
//! * An all-zero block gets code 0 (`2^-127`) and y = 0, as the OCP reference; so does a
//!   block whose exponent would fall below -127 (subnormal amax).
//! * **MXINT8** elements are int8 codes read with an implicit `2^-6`; the stored scale is
//!   the one DequantizeLinear needs for the int8 codes, `X * 2^-6`, i.e. `emax = 6` in
//!   the table (the int8 value 64 is 1.0). Elements saturate to `[-128, 127]` as
//!   QuantizeLinear's int8 does (the OCP range is `[-2, 127/64]`; the microxcaling
//!   emulator never emits -128).
//! * Ceil never lets the block maximum saturate beyond rounding: `d`'s f32 rounding can
//!   only land it on `max` itself. NearestEven bumps the exponent exactly when amax would
//!   round up to the next power of two in the element format (torchao's `EVEN`).
//! * Elements are rounded half to even (as NVIDIA's `cvt.rn.satfinite` and torchao; the
//!   microxcaling emulator's default rounds ties away from zero).
//!
//! # NVFP4 ([`quantize_nvfp4`])
//!
//! e2m1 elements in blocks of 16 along an axis, each block with an e4m3fn scale that is
//! itself relative to a per-tensor f32 global scale `g` (NVIDIA ModelOpt's convention):
//!
//! ```text
//! g  = amax_tensor / 2688                      (2688 = 448 * 6; see nvfp4_global_scale)
//! sb = e4m3fn(amax_nan / (6 * g))              f32 product and quotient, RNE, saturating
//! d  = f32(decode(sb) * g)                     = DequantizeLinear(sb, g)
//! y  = e2m1(x / d)                             = QuantizeLinear(x, d), nearest-even, saturating
//! ```
//!
//! As ModelOpt: a block scale value of 0 (an all-zero block) is stored as 1.0 (`0x38`);
//! others are clamped to `[2^-9, 448]` before rounding (a block holding ±inf gets 448); a
//! NaN block gets the NaN code `0x7f`. The global scale of a tensor whose amax is 0 (or NaN,
//! or ±inf) is 1.0. Elements follow QuantizeLinear's float4 rules: -0 stays `0x8` and NaN
//! gives the code QuantizeLinear gives (ModelOpt writes 0 and +6 there). The
//! outputs dequantize through two DequantizeLinear nodes: `sb` with scale `g` gives the
//! f32 block scales `d`, and y with those scales (blocked, `block_size = 16`) gives the
//! values.

use crate::dtype::DataType;
use crate::element::{slice_of_mut, Float8E4M3Fn, Float8E8M0};
use crate::error::{bail, Result};
use crate::float::{FloatFormat, BF16, E4M3FN, F16};
use crate::layout::Layout;
use crate::packing;
use crate::quantize::{quantize_value, Precision};
use crate::tensor::{Reference, Tensor, TensorRef};
use crate::values::{PackedMut, Read, Values, ValuesMut};

// ---------------------------------------------------------------------------------------
// Statistics and the scalar rules
// ---------------------------------------------------------------------------------------

/// `(lo, hi)` of the module docs: the NaN-ignoring minimum and maximum, each clamped to
/// include 0 (as [`crate::dynamic::range`]).
///
/// ```
/// use qdq_ref::scaled::range;
/// assert_eq!(range([3.0, f32::NAN, -1.0]), (-1.0, 3.0));
/// assert_eq!(range([2.0, 5.0]), (0.0, 5.0));
/// ```
pub fn range(values: impl IntoIterator<Item = f32>) -> (f32, f32) {
    crate::dynamic::range(values.into_iter())
}

/// `amax_nan` of the module docs: NaN if any element is NaN, else the largest magnitude
/// (0 for no elements).
///
/// ```
/// use qdq_ref::scaled::abs_max_nan;
/// assert_eq!(abs_max_nan([1.0, -3.0]), 3.0);
/// assert!(abs_max_nan([1.0, f32::NAN, f32::INFINITY]).is_nan());
/// assert_eq!(abs_max_nan([f32::NEG_INFINITY]), f32::INFINITY);
/// ```
pub fn abs_max_nan(values: impl IntoIterator<Item = f32>) -> f32 {
    // The largest |x| bit pattern: NaN patterns are above +inf's, which is above every finite one.
    let m = values.into_iter().map(|v| v.to_bits() & 0x7fff_ffff).max().unwrap_or(0);
    f32::from_bits(m)
}

/// T's largest finite value (f32, f16 or bf16), as f32.
fn max_of(t: DataType) -> f32 {
    match t {
        DataType::F16 => 65504.0,
        DataType::Bf16 => f32::from_bits(0x7f7f_0000),
        _ => f32::MAX,
    }
}

/// `round_T(v)` for a scale type: f16 / bf16 nearest-even (overflowing to inf), f32 as is.
fn round_to(t: DataType, v: f32) -> f32 {
    match t {
        DataType::F16 => F16.round(v as f64) as f32,
        DataType::Bf16 => BF16.round(v as f64) as f32,
        _ => v,
    }
}

/// `fix_T(round_T(v))` of the module docs: a zero scale becomes 1, an infinite one T's
/// largest finite value. `v` is never NaN here (a non-negative quotient of non-NaN values).
///
/// ```
/// use qdq_ref::{scaled::fix_scale, DataType};
/// assert_eq!(fix_scale(0.0, DataType::F32), 1.0);
/// assert_eq!(fix_scale(1e-9, DataType::F16), 1.0); // underflows f16
/// assert_eq!(fix_scale(1e6, DataType::F16), 65504.0); // overflows f16
/// assert_eq!(fix_scale(0.1, DataType::Bf16), 0.10009765625);
/// ```
pub fn fix_scale(v: f32, scale_type: DataType) -> f32 {
    let r = round_to(scale_type, v);
    if r == 0.0 {
        1.0
    } else if r.is_infinite() {
        max_of(scale_type)
    } else {
        r
    }
}

/// The per-row rule of the module docs: `(scale, zero point)` from a row's `(lo, hi)` for
/// output `y` (u8, i8 or e4m3fn).
///
/// ```
/// use qdq_ref::{scaled::row_params, DataType};
/// assert_eq!(row_params(-1.0, 3.0, DataType::U8), (4.0 / 255.0, 64));
/// assert_eq!(row_params(-1.0, 3.0, DataType::I8), (3.0 / 127.0, 0));
/// assert_eq!(row_params(-896.0, 0.0, DataType::E4M3Fn), (2.0, 0));
/// assert_eq!(row_params(0.0, 0.0, DataType::I8), (1.0, 0)); // all-zero row
/// assert_eq!(row_params(0.0, 0.0, DataType::U8), (0.0, 0)); // DynamicQuantizeLinear's range 0
/// ```
pub fn row_params(lo: f32, hi: f32, y: DataType) -> (f32, i32) {
    match y {
        DataType::U8 => {
            let (s, z) = crate::dynamic::scale_and_zero_point(lo, hi);
            (s, z as i32)
        }
        DataType::E4M3Fn => (fix_scale((-lo).max(hi) / 448.0f32, DataType::F32), 0),
        _ => (fix_scale((-lo).max(hi) / 127.0f32, DataType::F32), 0),
    }
}

/// How [`quantize_blockwise`] derives a block's scale and zero point (formulas in the
/// module docs).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum BlockMode {
    /// Zero point 0 (signed y) or the midpoint (unsigned y); scale from the block's absmax.
    Symmetric,
    /// Scale and zero point from the block's min and max, the range including 0.
    Asymmetric,
    /// onnxruntime's `MlasQDQQuantizeBlockwise`, bit for bit: int4 y is its symmetric
    /// mode, uint4 y its asymmetric mode; f32 scales.
    Onnxruntime,
}

/// The symmetric / asymmetric block rule of the module docs: `(stored scale, zero point)`
/// from a block's `(lo, hi)`, for output `y` and scale type `scale_type`. `first` (the
/// block's first non-NaN element) is used by [`BlockMode::Onnxruntime`] only, see
/// [`ort_params`].
///
/// ```
/// use qdq_ref::{scaled::{block_params, BlockMode}, DataType};
/// let f32_ = DataType::F32;
/// assert_eq!(block_params(BlockMode::Symmetric, -7.0, 3.5, DataType::I4, f32_, || None), (1.0, 0));
/// assert_eq!(block_params(BlockMode::Symmetric, -7.0, 3.5, DataType::U4, f32_, || None), (1.0, 8));
/// assert_eq!(block_params(BlockMode::Asymmetric, -5.0, 10.0, DataType::U4, f32_, || None), (1.0, 5));
/// assert_eq!(block_params(BlockMode::Asymmetric, -5.0, 10.0, DataType::I4, f32_, || None), (1.0, -3));
/// assert_eq!(block_params(BlockMode::Asymmetric, 0.0, 0.0, DataType::U8, f32_, || None), (1.0, 0));
/// ```
pub fn block_params(
    mode: BlockMode,
    lo: f32,
    hi: f32,
    y: DataType,
    scale_type: DataType,
    first: impl FnOnce() -> Option<f32>,
) -> (f32, i32) {
    let (qmin, qmax) = y.int_range().unwrap_or((0, 255));
    let (qmin, qmax) = (qmin as i32, qmax as i32);
    match mode {
        BlockMode::Symmetric => {
            let z = if qmin < 0 { 0 } else { (qmax + 1) / 2 };
            let s = fix_scale((-lo).max(hi) / (qmax - z) as f32, scale_type);
            (s, z)
        }
        BlockMode::Asymmetric => {
            let s = fix_scale((hi - lo) / (qmax - qmin) as f32, scale_type);
            let z = qmin as f32 - lo / s;
            let z = if z.is_nan() { qmin as f32 } else { z.clamp(qmin as f32, qmax as f32).round_ties_even() };
            (s, z as i32)
        }
        BlockMode::Onnxruntime => ort_params(lo, hi, qmin < 0, first),
    }
}

/// onnxruntime's blockwise rule (`MlasQDQQuantizeBlockwise`, as its Python
/// `quantize_qdq_matmul_4bits` runs it): `(scale, zero point)` of a block from its
/// NaN-ignoring `(lo, hi)` (both include 0), for int4 (`signed`, symmetric) or uint4.
/// `first` gives the block's first non-NaN element (`None` if every element is NaN); it
/// is called only for a block without a nonzero element, where the sign of the zero scale
/// depends on it.
///
/// ```text
/// signed:   m = hi if |hi| > |lo| else lo     (the signed value of largest magnitude; lo on a tie)
///           s = -m / 8                        z = 0; the largest magnitude maps to -8, s may be negative
///           a block of zeros (and NaNs): m = its first non-NaN element (a signed zero);
///           an all-NaN block: m = f32::MAX
/// unsigned: s = (hi - lo) / 15                z = s == 0 ? 0 : roundHalfAway(clamp(0 - lo / s, 0, 15))
///           (a NaN zero point, from lo = -inf, is 0)
/// element:  r = s == 0 ? 0 : 1 / s;   q = x * r                 (f32; multiplication by the reciprocal)
///           i = roundHalfAway(q), or i32::MIN when q is NaN, ±inf or beyond ±2^31 (x86's conversion)
///           y = clamp(i + z, qmin, qmax)
/// ```
///
/// The element rule is not QuantizeLinear's (it rounds half away from zero, multiplies by
/// the f32 reciprocal and sends NaN, ±inf and huge quotients to qmin): [`ort_value`].
///
/// ```
/// use qdq_ref::scaled::ort_params;
/// assert_eq!(ort_params(-8.0, 4.0, true, || None), (1.0, 0));
/// assert_eq!(ort_params(-1.0, 4.0, true, || None), (-0.5, 0));
/// assert_eq!(ort_params(-4.0, 4.0, true, || None), (0.5, 0)); // a tie picks lo
/// assert_eq!(ort_params(0.0, 0.0, true, || Some(-0.0)).0.to_bits(), 0x0000_0000); // -(-0) / 8
/// assert_eq!(ort_params(0.0, 0.0, true, || None).0, -f32::MAX / 8.0); // all NaN
/// assert_eq!(ort_params(-6.5, 8.5, false, || None), (1.0, 7)); // 6.5 rounds away from zero
/// assert_eq!(ort_params(0.0, 0.0, false, || None), (0.0, 0));
/// ```
pub fn ort_params(lo: f32, hi: f32, signed: bool, first: impl FnOnce() -> Option<f32>) -> (f32, i32) {
    if signed {
        let m = if lo == 0.0 && hi == 0.0 {
            first().unwrap_or(f32::MAX)
        } else if hi.abs() > lo.abs() {
            hi
        } else {
            lo
        };
        (-m / 8.0f32, 0)
    } else {
        let s = (hi - lo) / 15.0f32;
        let z = if s == 0.0 { 0.0 } else { 0.0f32 - lo / s };
        let z = if z.is_nan() { 0 } else { z.clamp(0.0, 15.0).round() as i32 };
        (s, z)
    }
}

/// One element of [`BlockMode::Onnxruntime`] (see [`ort_params`]): the output value.
///
/// ```
/// use qdq_ref::scaled::ort_value;
/// assert_eq!(ort_value(3.0, -0.5, 0, true), -6);
/// assert_eq!(ort_value(2.5, 1.0, 0, true), 3); // half away from zero
/// assert_eq!(ort_value(100.0, 1.0, 5, false), 15);
/// assert_eq!(ort_value(f32::INFINITY, 1.0, 5, false), 0); // x86's conversion gives i32::MIN
/// assert_eq!(ort_value(1.0, 0.0, 3, false), 3);
/// ```
pub fn ort_value(x: f32, scale: f32, zero_point: i32, signed: bool) -> i32 {
    let (qmin, qmax) = if signed { (-8, 7) } else { (0, 15) };
    let r = if scale == 0.0 { 0.0 } else { 1.0f32 / scale };
    let q = (x * r).round();
    const LIMIT: f32 = 2_147_483_648.0;
    let i = if q.is_nan() || !(-LIMIT..LIMIT).contains(&q) { i32::MIN } else { q as i32 };
    i.saturating_add(zero_point).clamp(qmin, qmax)
}

/// The rounding of an MX block's shared exponent (formulas in the module docs).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Default)]
pub enum ScaleRounding {
    /// `floor(log2(amax)) - emax`: the OCP MX v1.0 rule; the block maximum may saturate.
    #[default]
    Floor,
    /// The smallest exponent at which the block maximum does not saturate (NVIDIA's and
    /// cuDNN's "round up").
    Ceil,
    /// The exponent of amax rounded to the element format's precision, nearest-even.
    NearestEven,
}

/// `(emax, max)` of an MX element type (module docs), or `None` if y is no MX type.
///
/// ```
/// use qdq_ref::{scaled::mx_element, DataType};
/// assert_eq!(mx_element(DataType::E2M1), Some((2, 6.0)));
/// assert_eq!(mx_element(DataType::I8), Some((6, 127.0)));
/// assert_eq!(mx_element(DataType::U8), None);
/// ```
#[inline]
pub fn mx_element(y: DataType) -> Option<(i32, f32)> {
    Some(match y {
        DataType::E4M3Fn => (8, 448.0),
        DataType::E5M2 => (15, 57344.0),
        DataType::E2M3 => (2, 7.5),
        DataType::E3M2 => (4, 28.0),
        DataType::E2M1 => (2, 6.0),
        DataType::I8 => (6, 127.0),
        _ => return None,
    })
}

/// `floor(log2(a))` for a positive finite f32 (subnormals included).
#[inline]
fn floor_log2(a: f32) -> i32 {
    let b = a.to_bits();
    let e = (b >> 23) as i32;
    if e == 0 {
        // Subnormal: 2^-149 times the mantissa.
        31 - (b & 0x7f_ffff).leading_zeros() as i32 - 149
    } else {
        e - 127
    }
}

/// The e8m0 scale code of an MX block from its `amax_nan`, for element type `y` (see
/// [`mx_element`]) and a rounding.
///
/// ```
/// use qdq_ref::{scaled::{mx_scale, ScaleRounding}, DataType};
/// // e2m1: max 6, emax 2. Floor: floor(log2 amax) - 2.
/// assert_eq!(mx_scale(5.0, DataType::E2M1, ScaleRounding::Floor), 127);
/// assert_eq!(mx_scale(7.0, DataType::E2M1, ScaleRounding::Floor), 127); // 7 saturates to 6
/// assert_eq!(mx_scale(7.0, DataType::E2M1, ScaleRounding::Ceil), 128); // 7 / 2 = 3.5 fits
/// assert_eq!(mx_scale(0.0, DataType::E4M3Fn, ScaleRounding::Floor), 0);
/// assert_eq!(mx_scale(f32::NAN, DataType::E4M3Fn, ScaleRounding::Floor), 0xff);
/// assert_eq!(mx_scale(f32::INFINITY, DataType::E4M3Fn, ScaleRounding::Floor), 0xff);
/// ```
#[inline]
pub fn mx_scale(amax_nan: f32, y: DataType, rounding: ScaleRounding) -> u8 {
    let Some((emax, max)) = mx_element(y) else {
        return 0xff;
    };
    if !amax_nan.is_finite() {
        return 0xff;
    }
    if amax_nan == 0.0 {
        return 0;
    }
    let a = amax_nan;
    let e = match rounding {
        ScaleRounding::Floor => floor_log2(a) - emax,
        ScaleRounding::Ceil => {
            // NVIDIA's RCEIL: d = amax * RN(1 / max) in f32, rounded up to a power of two.
            let d = (a * (1.0f32 / max)).to_bits();
            let (e, m) = ((d >> 23) as i32, d & 0x7f_ffff);
            if e == 0 {
                // d below 2^-126: code 0 (2^-127) up to 2^-127, else code 1.
                return u8::from(m > 0x40_0000);
            }
            e + i32::from(m != 0) - 127
        }
        ScaleRounding::NearestEven => {
            let man = match FloatFormat::of(y) {
                Some(f) => f.man_bits,
                None => 6, // int8: the codes 64..=127 carry 6 bits below the leading one
            };
            let k = floor_log2(a);
            // a rounded to `man` fraction bits at its own exponent (nearest-even, exact in f64).
            let unit = 2f64.powi(k - man as i32);
            let r = ((a as f64) / unit).round_ties_even() * unit;
            let k = if r >= 2f64.powi(k + 1) { k + 1 } else { k };
            k - emax
        }
    };
    (e.clamp(-127, 127) + 127) as u8
}

/// The NVFP4 per-tensor global scale of the module docs: `amax_tensor / 2688`, from the
/// tensor's `amax_nan` (1.0 for a tensor whose amax is 0, NaN or infinite, so that the
/// block scales stay meaningful: documented fallback).
///
/// ```
/// use qdq_ref::scaled::nvfp4_global_scale_of;
/// assert_eq!(nvfp4_global_scale_of(2688.0), 1.0);
/// assert_eq!(nvfp4_global_scale_of(0.0), 1.0);
/// ```
pub fn nvfp4_global_scale_of(amax_nan: f32) -> f32 {
    let g = amax_nan / 2688.0f32;
    if g == 0.0 || !g.is_finite() {
        1.0
    } else {
        g
    }
}

/// The e4m3fn block scale code of an NVFP4 block from its `amax_nan` and the global scale
/// (module docs).
///
/// ```
/// use qdq_ref::scaled::nvfp4_block_scale;
/// assert_eq!(nvfp4_block_scale(6.0, 1.0), 0x38); // 1.0
/// assert_eq!(nvfp4_block_scale(0.0, 1.0), 0x38); // all-zero block: 1.0
/// assert_eq!(nvfp4_block_scale(2688.0, 1.0), 0x7e); // 448
/// assert_eq!(nvfp4_block_scale(f32::NAN, 1.0), 0x7f);
/// assert_eq!(nvfp4_block_scale(f32::INFINITY, 1.0), 0x7e); // 448
/// assert_eq!(nvfp4_block_scale(1e-6, 1.0), 0x01); // 2^-9, e4m3fn's smallest value
/// ```
pub fn nvfp4_block_scale(amax_nan: f32, global_scale: f32) -> u8 {
    let v = amax_nan / (6.0f32 * global_scale);
    if v.is_nan() {
        0x7f
    } else if v == 0.0 {
        0x38
    } else {
        // Between e4m3fn's smallest subnormal 2^-9 and its largest value 448.
        E4M3FN.encode(v.clamp(1.0 / 512.0, 448.0) as f64, true) as u8
    }
}

/// `d = f32(decode(sb) * g)`: the f32 scale of an NVFP4 block (DequantizeLinear of the
/// block scale code with the global scale).
///
/// ```
/// use qdq_ref::scaled::nvfp4_block_divisor;
/// assert_eq!(nvfp4_block_divisor(0x38, 0.5), 0.5);
/// ```
pub fn nvfp4_block_divisor(code: u8, global_scale: f32) -> f32 {
    Float8E4M3Fn(code).to_f32() * global_scale
}

// ---------------------------------------------------------------------------------------
// Geometry and argument checks
// ---------------------------------------------------------------------------------------

/// The rows of a per-row quantization: `rows` rows of `cols` elements, row `r` starting at
/// element `r * stride` of x (`stride >= cols`). y is always `[rows, cols]` contiguous.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct Rows {
    /// Number of rows.
    pub rows: usize,
    /// Elements per row.
    pub cols: usize,
    /// Distance in elements between the starts of consecutive rows of x.
    pub stride: usize,
}

impl Rows {
    /// `rows` contiguous rows of `cols` elements.
    ///
    /// ```
    /// assert_eq!(qdq_ref::scaled::Rows::new(2, 3).stride, 3);
    /// ```
    pub fn new(rows: usize, cols: usize) -> Rows {
        Rows { rows, cols, stride: cols }
    }

    /// The same rows with another stride.
    ///
    /// ```
    /// assert_eq!(qdq_ref::scaled::Rows::new(2, 3).with_stride(8).stride, 8);
    /// ```
    pub fn with_stride(self, stride: usize) -> Rows {
        Rows { stride, ..self }
    }

    /// Checks the geometry against x's length; returns the number of y elements.
    ///
    /// ```
    /// use qdq_ref::scaled::Rows;
    /// assert_eq!(Rows::new(2, 3).with_stride(4).check(7)?, 6);
    /// assert!(Rows::new(2, 3).with_stride(4).check(6).is_err());
    /// assert!(Rows::new(2, 3).with_stride(2).check(100).is_err());
    /// # Ok::<(), qdq_ref::Error>(())
    /// ```
    pub fn check(&self, x_len: usize) -> Result<usize> {
        let Rows { rows, cols, stride } = *self;
        if stride < cols && rows > 1 {
            bail!(InvalidArgument, "rows: stride {stride} is smaller than cols {cols}");
        }
        let n = rows.checked_mul(cols);
        let Some(n) = n else {
            bail!(ShapeOverflow, "rows: {rows} x {cols} elements overflow usize");
        };
        let need = if n == 0 { Some(0) } else { (rows - 1).checked_mul(stride).and_then(|v| v.checked_add(cols)) };
        match need {
            Some(need) if need <= x_len => Ok(n),
            Some(need) => {
                bail!(BufferLength, "x has {x_len} elements but {rows} rows of {cols} with stride {stride} need {need}")
            }
            None => bail!(ShapeOverflow, "rows: {rows} rows with stride {stride} overflow usize"),
        }
    }
}

/// `(outer, axis_len, inner, block)` of a layout that must be blocked.
fn blocked(layout: Layout, n: usize) -> Result<(usize, usize, usize, usize)> {
    match layout {
        Layout::Blocked { outer, axis_len, inner, block } => {
            layout.scale_count(n)?;
            Ok((outer, axis_len, inner, block))
        }
        other => bail!(
            InvalidArgument,
            "layout: these quantizers need Layout::Blocked (Layout::blocked(shape, axis, block)), got {other:?}"
        ),
    }
}

/// Checks `y`'s byte length for `n` elements of its type.
fn check_y(y: &PackedMut<'_>, n: usize) -> Result<()> {
    match y.dtype.byte_len(n) {
        Some(b) if b == y.data.len() => Ok(()),
        Some(b) => bail!(BufferLength, "y: {n} elements of {} need {b} bytes, got {}", y.dtype, y.data.len()),
        None => bail!(ShapeOverflow, "y: the byte size of {n} {} elements overflows usize", y.dtype),
    }
}

/// Checks x's type (f32, f16 or bf16).
fn check_x(x: &Values<'_>) -> Result<()> {
    if !x.dtype().is_wide_float() {
        bail!(UnsupportedType, "x has type {}; these quantizers take f32, f16 or bf16", x.dtype());
    }
    Ok(())
}

/// Checks a per-row call (`scales` and `zero_points`: the buffers' lengths); returns the
/// number of elements. Every problem is an error naming the argument.
///
/// ```
/// use qdq_ref::{scaled::{check_rows, Rows}, DataType, PackedMut, Values};
/// let x = [0f32; 6];
/// let mut y = [0u8; 6];
/// let yv = PackedMut::new(DataType::U8, &mut y);
/// assert_eq!(check_rows(&Values::from(&x), Rows::new(2, 3), &yv, 2, Some(2))?, 6);
/// let e = check_rows(&Values::from(&x), Rows::new(2, 3), &yv, 2, None).unwrap_err();
/// assert!(e.message().starts_with("zero_points"));
/// # Ok::<(), qdq_ref::Error>(())
/// ```
pub fn check_rows(
    x: &Values<'_>,
    rows: Rows,
    y: &PackedMut<'_>,
    scales: usize,
    zero_points: Option<usize>,
) -> Result<usize> {
    check_x(x)?;
    if !matches!(y.dtype, DataType::U8 | DataType::I8 | DataType::E4M3Fn) {
        bail!(UnsupportedType, "y has type {}; per-row quantization writes u8, i8 or float8e4m3fn", y.dtype);
    }
    let n = rows.check(x.len())?;
    check_y(y, n)?;
    if scales != rows.rows {
        bail!(BufferLength, "scales has {scales} elements but there are {} rows", rows.rows);
    }
    match (y.dtype, zero_points) {
        (DataType::U8, Some(z)) if z != rows.rows => {
            bail!(BufferLength, "zero_points has {z} elements but there are {} rows", rows.rows)
        }
        (DataType::U8, None) => bail!(InvalidArgument, "zero_points: u8 per-row quantization needs them"),
        (t, Some(_)) if t != DataType::U8 => {
            bail!(InvalidArgument, "zero_points: {t} per-row quantization is symmetric and has none (pass None)")
        }
        _ => Ok(n),
    }
}

/// Checks a blockwise call (`scales`: type and length; `zero_points`: type and byte
/// length); returns `(elements, scales)`.
///
/// ```
/// use qdq_ref::{scaled::{check_blockwise, BlockMode}, DataType, Layout, PackedMut, Values};
/// let x = [0f32; 64];
/// let mut y = [0u8; 32];
/// let yv = PackedMut::new(DataType::U4, &mut y);
/// let l = Layout::blocked(&[64], 0, 32)?;
/// let f32_ = (DataType::F32, 2);
/// assert_eq!(check_blockwise(&Values::from(&x), l, BlockMode::Asymmetric, &yv, f32_, Some((DataType::U4, 1)))?, (64, 2));
/// let e = check_blockwise(&Values::from(&x), l, BlockMode::Asymmetric, &yv, (DataType::F32, 3), None).unwrap_err();
/// assert!(e.message().starts_with("scales"));
/// # Ok::<(), qdq_ref::Error>(())
/// ```
pub fn check_blockwise(
    x: &Values<'_>,
    layout: Layout,
    mode: BlockMode,
    y: &PackedMut<'_>,
    scales: (DataType, usize),
    zero_points: Option<(DataType, usize)>,
) -> Result<(usize, usize)> {
    check_x(x)?;
    let n = x.len();
    blocked(layout, n)?;
    let k = layout.scale_count(n)?;
    let out = y.dtype;
    if !matches!(out, DataType::I8 | DataType::U8 | DataType::I4 | DataType::U4 | DataType::I2 | DataType::U2) {
        bail!(
            UnsupportedType,
            "y has type {out}; blockwise quantization writes int8 / uint8 / int4 / uint4 / int2 / uint2"
        );
    }
    if mode == BlockMode::Onnxruntime && !matches!(out, DataType::I4 | DataType::U4) {
        bail!(UnsupportedType, "y has type {out}; the onnxruntime mode writes int4 (symmetric) or uint4 (asymmetric)");
    }
    check_y(y, n)?;
    let (st, sn) = scales;
    if !st.is_wide_float() {
        bail!(UnsupportedType, "scales have type {st}; blockwise scales are f32, f16 or bf16");
    }
    if mode == BlockMode::Onnxruntime && st != DataType::F32 {
        bail!(UnsupportedType, "scales have type {st}; the onnxruntime mode computes f32 scales");
    }
    if sn != k {
        bail!(BufferLength, "scales has {sn} elements but the layout {layout:?} has {k} blocks");
    }
    if mode == BlockMode::Onnxruntime && x.dtype() != DataType::F32 {
        bail!(UnsupportedType, "x has type {}; the onnxruntime mode quantizes f32", x.dtype());
    }
    let signed = out.int_range().is_some_and(|q| q.0 < 0);
    match zero_points {
        None if mode == BlockMode::Asymmetric || !signed => {
            bail!(InvalidArgument, "zero_points: {out} blockwise quantization in mode {mode:?} has nonzero zero points; pass a buffer for them")
        }
        None => {}
        Some((zt, zb)) => {
            if zt != out {
                bail!(TypeMismatch, "zero_points have type {zt} but y has type {out}");
            }
            match zt.byte_len(k) {
                Some(b) if b == zb => {}
                Some(b) => bail!(BufferLength, "zero_points: the layout's {k} blocks need {b} bytes of {zt}, got {zb}"),
                None => bail!(ShapeOverflow, "zero_points: the byte size overflows usize"),
            }
        }
    }
    Ok((n, k))
}

/// Checks an MX call (`scales`: the buffer's length); returns `(elements, scales)`.
///
/// ```
/// use qdq_ref::{scaled::check_mx, DataType, Layout, PackedMut, Values};
/// let x = [0f32; 40];
/// let mut y = [0u8; 20];
/// let l = Layout::blocked(&[40], 0, 32)?;
/// assert_eq!(check_mx(&Values::from(&x), l, &PackedMut::new(DataType::E2M1, &mut y), 2)?, (40, 2));
/// let e = check_mx(&Values::from(&x), l, &PackedMut::new(DataType::U4, &mut y), 2).unwrap_err();
/// assert!(e.message().starts_with("y has type"));
/// # Ok::<(), qdq_ref::Error>(())
/// ```
pub fn check_mx(x: &Values<'_>, layout: Layout, y: &PackedMut<'_>, scales: usize) -> Result<(usize, usize)> {
    check_x(x)?;
    let n = x.len();
    blocked(layout, n)?;
    if mx_element(y.dtype).is_none() {
        bail!(
            UnsupportedType,
            "y has type {}; MX elements are float8e4m3fn / float8e5m2 (MXFP8), float6e2m3 / float6e3m2 (MXFP6), float4e2m1 (MXFP4) or int8 (MXINT8)",
            y.dtype
        );
    }
    check_y(y, n)?;
    let k = layout.scale_count(n)?;
    if scales != k {
        bail!(BufferLength, "scales has {scales} elements but the layout {layout:?} has {k} blocks");
    }
    Ok((n, k))
}

/// Checks an NVFP4 call (`scales`: the buffer's length); returns `(elements, scales)`.
///
/// ```
/// use qdq_ref::{scaled::check_nvfp4, DataType, Layout, PackedMut, Values};
/// let x = [0f32; 32];
/// let mut y = [0u8; 16];
/// let l = Layout::blocked(&[32], 0, 16)?;
/// let yv = PackedMut::new(DataType::E2M1, &mut y);
/// assert_eq!(check_nvfp4(&Values::from(&x), l, 1.0, &yv, 2)?, (32, 2));
/// assert!(check_nvfp4(&Values::from(&x), l, 0.0, &yv, 2).unwrap_err().message().starts_with("global_scale"));
/// # Ok::<(), qdq_ref::Error>(())
/// ```
pub fn check_nvfp4(
    x: &Values<'_>,
    layout: Layout,
    global_scale: f32,
    y: &PackedMut<'_>,
    scales: usize,
) -> Result<(usize, usize)> {
    check_x(x)?;
    let n = x.len();
    blocked(layout, n)?;
    if y.dtype != DataType::E2M1 {
        bail!(UnsupportedType, "y has type {}; NVFP4 elements are float4e2m1", y.dtype);
    }
    if !(global_scale.is_finite() && global_scale > 0.0) {
        bail!(InvalidArgument, "global_scale must be positive and finite, got {global_scale}");
    }
    check_y(y, n)?;
    let k = layout.scale_count(n)?;
    if scales != k {
        bail!(BufferLength, "scales has {scales} elements but the layout {layout:?} has {k} blocks");
    }
    Ok((n, k))
}

// ---------------------------------------------------------------------------------------
// The reference loops
// ---------------------------------------------------------------------------------------

/// The element indices of block `k` of a blocked layout (scale index order).
fn block_elements(layout: Layout, k: usize) -> impl Iterator<Item = usize> {
    let (d, inner, b) = match layout {
        Layout::Blocked { axis_len, inner, block, .. } => (axis_len, inner, block),
        _ => (0, 1, 1),
    };
    let nb = if b == 0 { 0 } else { d.div_ceil(b) };
    let (i, rest) = (k % inner.max(1), k / inner.max(1));
    let (blk, o) = if nb == 0 { (0, 0) } else { (rest % nb, rest / nb) };
    let start = blk * b;
    let stop = (start + b).min(d);
    (start..stop).map(move |j| (o * d + j) * inner + i)
}

/// Per-row dynamic quantization (module docs): y `[rows, cols]` of type u8, i8 or
/// float8e4m3fn, one f32 scale per row, and for u8 one zero point per row. Allocates
/// nothing.
///
/// ```
/// use qdq_ref::scaled::{quantize_rows, Rows};
/// let x = [1.0f32, -2.0, 0.5, /* padding */ 9.0, 4.0, 2.0, -1.0, 9.0];
/// let (mut y, mut scales) = ([0i8; 6], [0f32; 2]);
/// quantize_rows(&x, Rows::new(2, 3).with_stride(4), &mut y, &mut scales, None)?;
/// assert_eq!(scales, [2.0 / 127.0, 4.0 / 127.0]);
/// assert_eq!(y, [64, -127, 32, 127, 64, -32]);
/// # Ok::<(), qdq_ref::Error>(())
/// ```
pub fn quantize_rows<'x, 'y>(
    x: impl Into<Values<'x>>,
    rows: Rows,
    y: impl Into<PackedMut<'y>>,
    scales: &mut [f32],
    zero_points: Option<&mut [u8]>,
) -> Result<()> {
    let (x, y) = (x.into(), y.into());
    check_rows(&x, rows, &y, scales.len(), zero_points.as_ref().map(|z| z.len()))?;
    let mut zero_points = zero_points;
    for r in 0..rows.rows {
        let base = r * rows.stride;
        let (lo, hi) = range((0..rows.cols).map(|j| x.value(base + j) as f32));
        let (s, z) = row_params(lo, hi, y.dtype);
        scales[r] = s;
        if let Some(zp) = zero_points.as_deref_mut() {
            zp[r] = z as u8;
        }
        let zf = (y.dtype == DataType::U8).then_some(z as f64);
        for j in 0..rows.cols {
            let code = quantize_value(x.value(base + j), s as f64, zf, y.dtype, Precision::F32, true);
            packing::set(y.dtype, y.data, r * rows.cols + j, code);
        }
    }
    Ok(())
}

/// Blockwise quantization with computed scales (module docs): y packed in x's shape,
/// `scales` (f32, f16 or bf16) and `zero_points` (y's type; needed by the asymmetric
/// modes, optional for the symmetric ones) in the blocked layout's scale shape.
/// Allocates nothing.
///
/// ```
/// use qdq_ref::{scaled::{quantize_blockwise, BlockMode}, DataType, Layout, PackedMut};
/// // [2, 4] weight, blocks of 2 along axis 1: 4 blocks.
/// let w = [1.0f32, -7.0, 3.5, 7.0, 0.0, 0.0, -14.0, 7.0];
/// let layout = Layout::blocked(&[2, 4], 1, 2)?;
/// let (mut y, mut scales) = ([0u8; 4], [0f32; 4]);
/// quantize_blockwise(&w, layout, BlockMode::Symmetric, PackedMut::new(DataType::I4, &mut y), &mut scales, None)?;
/// assert_eq!(scales, [1.0, 1.0, 1.0, 2.0]);
/// assert_eq!(y, [0x91, 0x74, 0x00, 0x49]); // [1, -7], [4, 7], [0, 0], [-7, 4] (ties to even)
/// # Ok::<(), qdq_ref::Error>(())
/// ```
pub fn quantize_blockwise<'x, 'y, 's>(
    x: impl Into<Values<'x>>,
    layout: Layout,
    mode: BlockMode,
    y: impl Into<PackedMut<'y>>,
    scales: impl Into<ValuesMut<'s>>,
    zero_points: Option<PackedMut<'_>>,
) -> Result<()> {
    let (x, y, mut scales) = (x.into(), y.into(), scales.into());
    let zinfo = zero_points.as_ref().map(|z| (z.dtype, z.data.len()));
    let (n, k) = check_blockwise(&x, layout, mode, &y, (scales.dtype(), scales.len()), zinfo)?;
    let mut zero_points = zero_points;
    let signed = y.dtype.int_range().is_some_and(|r| r.0 < 0);
    for b in 0..k {
        let (lo, hi) = range(block_elements(layout, b).map(|i| x.value(i) as f32));
        let first = || block_elements(layout, b).map(|i| x.value(i) as f32).find(|v| !v.is_nan());
        let (s, z) = block_params(mode, lo, hi, y.dtype, scales.dtype(), first);
        put_scale(&mut scales, b, s);
        if let Some(zp) = zero_points.as_mut() {
            packing::set_int(zp.dtype, zp.data, b, z as i64);
        }
        for i in block_elements(layout, b) {
            let code = if mode == BlockMode::Onnxruntime {
                let v = ort_value(x.value(i) as f32, s, z, signed);
                (v as u32) & ((1 << y.dtype.bits()) - 1)
            } else {
                quantize_value(x.value(i), s as f64, Some(z as f64), y.dtype, Precision::F32, true)
            };
            packing::set(y.dtype, y.data, i, code);
        }
    }
    packing::zero_padding(y.dtype, y.data, n);
    if let Some(zp) = zero_points.as_mut() {
        packing::zero_padding(zp.dtype, zp.data, k);
    }
    Ok(())
}

/// Stores scale `k` rounded to the scale type (already a value of it).
fn put_scale(scales: &mut ValuesMut<'_>, k: usize, v: f32) {
    match scales {
        ValuesMut::F32(s) => s[k] = v,
        ValuesMut::F16(s) => s[k] = half::f16::from_f32(v),
        ValuesMut::Bf16(s) => s[k] = half::bf16::from_f32(v),
    }
}

/// OCP MX quantization (module docs): y of an MX element type in x's shape, one e8m0
/// scale per block. Allocates nothing.
///
/// ```
/// use qdq_ref::{scaled::{quantize_mx, ScaleRounding}, DataType, Float8E8M0, Layout, PackedMut};
/// let x = [0.5f32, -3.0, 1.0, 6.5];
/// let (mut y, mut scales) = ([0u8; 2], [Float8E8M0(0); 1]);
/// let layout = Layout::blocked(&[4], 0, 32)?; // one short block
/// quantize_mx(&x, layout, ScaleRounding::Floor, PackedMut::new(DataType::E2M1, &mut y), &mut scales)?;
/// assert_eq!(scales[0].to_f32(), 1.0); // floor(log2 6.5) - 2 = 0
/// assert_eq!(y, [0xd1, 0x72]); // 0.5, -3, 1, 6 (6.5 saturates)
/// # Ok::<(), qdq_ref::Error>(())
/// ```
pub fn quantize_mx<'x, 'y>(
    x: impl Into<Values<'x>>,
    layout: Layout,
    rounding: ScaleRounding,
    y: impl Into<PackedMut<'y>>,
    scales: &mut [Float8E8M0],
) -> Result<()> {
    let (x, y) = (x.into(), y.into());
    let (n, k) = check_mx(&x, layout, &y, scales.len())?;
    for (b, sc) in scales.iter_mut().enumerate().take(k) {
        let code = mx_scale(abs_max_nan(block_elements(layout, b).map(|i| x.value(i) as f32)), y.dtype, rounding);
        *sc = Float8E8M0(code);
        let s = crate::float::decode_e8m0(code) as f64;
        for i in block_elements(layout, b) {
            let code = quantize_value(x.value(i), s, None, y.dtype, Precision::F32, true);
            packing::set(y.dtype, y.data, i, code);
        }
    }
    packing::zero_padding(y.dtype, y.data, n);
    Ok(())
}

/// The NVFP4 global scale of x: `amax / 2688` (module docs; 1.0 when amax is 0, NaN or
/// infinite).
///
/// ```
/// use qdq_ref::scaled::nvfp4_global_scale;
/// assert_eq!(nvfp4_global_scale(&[1.0f32, -5376.0]), 2.0);
/// ```
pub fn nvfp4_global_scale<'x>(x: impl Into<Values<'x>>) -> f32 {
    let x = x.into();
    nvfp4_global_scale_of(abs_max_nan((0..x.len()).map(|i| x.value(i) as f32)))
}

/// NVFP4 quantization (module docs): e2m1 y in x's shape, one e4m3fn scale per block
/// (blocks of 16 in NVIDIA's format), relative to `global_scale` (see
/// [`nvfp4_global_scale`]). Allocates nothing.
///
/// ```
/// use qdq_ref::{scaled::{nvfp4_global_scale, quantize_nvfp4}, DataType, Float8E4M3Fn, Layout, PackedMut};
/// let x = [3.0f32, -1.5, 0.25, 6.0];
/// let g = nvfp4_global_scale(&x); // 6 / 2688
/// let (mut y, mut scales) = ([0u8; 2], [Float8E4M3Fn(0); 1]);
/// quantize_nvfp4(&x, Layout::blocked(&[4], 0, 16)?, g, PackedMut::new(DataType::E2M1, &mut y), &mut scales)?;
/// assert_eq!(scales[0].to_f32(), 448.0);
/// assert_eq!(y, [0xb5, 0x70]); // 3, -1.5, 0, 6 (0.25 is halfway between 0 and 0.5: even)
/// # Ok::<(), qdq_ref::Error>(())
/// ```
pub fn quantize_nvfp4<'x, 'y>(
    x: impl Into<Values<'x>>,
    layout: Layout,
    global_scale: f32,
    y: impl Into<PackedMut<'y>>,
    scales: &mut [Float8E4M3Fn],
) -> Result<()> {
    let (x, y) = (x.into(), y.into());
    let (n, k) = check_nvfp4(&x, layout, global_scale, &y, scales.len())?;
    for (b, sc) in scales.iter_mut().enumerate().take(k) {
        let code = nvfp4_block_scale(abs_max_nan(block_elements(layout, b).map(|i| x.value(i) as f32)), global_scale);
        *sc = Float8E4M3Fn(code);
        let d = nvfp4_block_divisor(code, global_scale) as f64;
        for i in block_elements(layout, b) {
            let c = quantize_value(x.value(i), d, None, DataType::E2M1, Precision::F32, true);
            packing::set(DataType::E2M1, y.data, i, c);
        }
    }
    packing::zero_padding(DataType::E2M1, y.data, n);
    Ok(())
}

// ---------------------------------------------------------------------------------------
// Tensor level
// ---------------------------------------------------------------------------------------

/// Which quantizer [`quantize_scaled`] runs.
#[derive(Clone, Copy, Debug, PartialEq)]
pub enum Scheme {
    /// [`quantize_rows`] of a 2-D x `[rows, cols]`: scales (and u8 zero points) of shape
    /// `[rows]`, for DequantizeLinear per-axis along axis 0 (`axis` and `block_size` are
    /// not used).
    Rows,
    /// [`quantize_blockwise`] with this mode and scale type (f32, f16 or bf16).
    Blockwise {
        /// How the block's parameters are derived.
        mode: BlockMode,
        /// The scales' type.
        scale_type: DataType,
    },
    /// [`quantize_mx`] with this exponent rounding; e8m0 scales.
    Mx {
        /// The shared exponent's rounding.
        rounding: ScaleRounding,
    },
    /// [`quantize_nvfp4`]: e4m3fn block scales relative to this global scale, or to
    /// [`nvfp4_global_scale`] of x when `None`.
    Nvfp4 {
        /// The per-tensor global scale.
        global_scale: Option<f32>,
    },
}

/// The outputs of [`quantize_scaled`]: what DequantizeLinear takes.
#[derive(Clone, Debug, PartialEq)]
pub struct Scaled {
    /// The quantized tensor, x's shape.
    pub y: Tensor,
    /// The scales: `[rows]` (per-row), else x's shape with `ceil(D / B)` at the axis.
    pub scale: Tensor,
    /// The zero points (y's type, the scales' shape), where the scheme has nonzero ones:
    /// u8 rows, the asymmetric modes and unsigned symmetric blocks.
    pub zero_point: Option<Tensor>,
    /// NVFP4's global scale (the first DequantizeLinear's scale).
    pub global_scale: Option<f32>,
}

/// Runs the slice-level quantizers for [`quantize_scaled_with`]: [`Reference`] here, the
/// SIMD kernels in the `qdq` crate.
pub trait ScaledBackend {
    /// [`quantize_rows`].
    fn rows(
        &self,
        x: Values<'_>,
        rows: Rows,
        y: PackedMut<'_>,
        scales: &mut [f32],
        zero_points: Option<&mut [u8]>,
    ) -> Result<()>;
    /// [`quantize_blockwise`].
    fn blockwise(
        &self,
        x: Values<'_>,
        layout: Layout,
        mode: BlockMode,
        y: PackedMut<'_>,
        scales: ValuesMut<'_>,
        zero_points: Option<PackedMut<'_>>,
    ) -> Result<()>;
    /// [`quantize_mx`].
    fn mx(
        &self,
        x: Values<'_>,
        layout: Layout,
        rounding: ScaleRounding,
        y: PackedMut<'_>,
        scales: &mut [Float8E8M0],
    ) -> Result<()>;
    /// [`nvfp4_global_scale`].
    fn nvfp4_global_scale(&self, x: Values<'_>) -> Result<f32>;
    /// [`quantize_nvfp4`].
    fn nvfp4(
        &self,
        x: Values<'_>,
        layout: Layout,
        global_scale: f32,
        y: PackedMut<'_>,
        scales: &mut [Float8E4M3Fn],
    ) -> Result<()>;
}

impl ScaledBackend for Reference {
    fn rows(
        &self,
        x: Values<'_>,
        rows: Rows,
        y: PackedMut<'_>,
        scales: &mut [f32],
        zero_points: Option<&mut [u8]>,
    ) -> Result<()> {
        quantize_rows(x, rows, y, scales, zero_points)
    }

    fn blockwise(
        &self,
        x: Values<'_>,
        layout: Layout,
        mode: BlockMode,
        y: PackedMut<'_>,
        scales: ValuesMut<'_>,
        zero_points: Option<PackedMut<'_>>,
    ) -> Result<()> {
        quantize_blockwise(x, layout, mode, y, scales, zero_points)
    }

    fn mx(
        &self,
        x: Values<'_>,
        layout: Layout,
        rounding: ScaleRounding,
        y: PackedMut<'_>,
        scales: &mut [Float8E8M0],
    ) -> Result<()> {
        quantize_mx(x, layout, rounding, y, scales)
    }

    fn nvfp4_global_scale(&self, x: Values<'_>) -> Result<f32> {
        check_x(&x)?;
        Ok(nvfp4_global_scale(x))
    }

    fn nvfp4(
        &self,
        x: Values<'_>,
        layout: Layout,
        global_scale: f32,
        y: PackedMut<'_>,
        scales: &mut [Float8E4M3Fn],
    ) -> Result<()> {
        quantize_nvfp4(x, layout, global_scale, y, scales)
    }
}

/// A typed, writable view of a fresh output tensor.
fn typed_mut<'t, T: crate::Element>(t: &'t mut Tensor, name: &str) -> Result<&'t mut [T]> {
    match slice_of_mut::<T>(t.bytes_mut()) {
        Some(s) => Ok(s),
        None => bail!(BufferLength, "{name}: the output tensor's bytes are not a whole number of {}", T::DTYPE),
    }
}

/// The scale-computing quantizers at tensor level: x (f32, f16 or bf16, any shape), the
/// output type, the axis and block size of the blocks (negative axes count from the end;
/// not used by [`Scheme::Rows`]), and the [`Scheme`]. Returns new tensors.
///
/// ```
/// use qdq_ref::scaled::{quantize_scaled, BlockMode, Scheme};
/// use qdq_ref::{DataType, TensorRef};
/// let w = [1.0f32, -7.0, 3.5, 7.0, 0.0, 0.0, -14.0, 7.0];
/// let scheme = Scheme::Blockwise { mode: BlockMode::Symmetric, scale_type: DataType::F32 };
/// let out = quantize_scaled(TensorRef::new(&[2, 4], &w)?, DataType::I4, 1, 2, scheme)?;
/// assert_eq!(out.scale.shape(), [2, 2]);
/// assert_eq!(out.scale.as_slice::<f32>()?, [1.0, 1.0, 1.0, 2.0]);
/// assert_eq!(out.y.bytes(), [0x91, 0x74, 0x00, 0x49]);
/// assert!(out.zero_point.is_none()); // int4 symmetric: zero points are 0
/// # Ok::<(), qdq_ref::Error>(())
/// ```
pub fn quantize_scaled(
    x: TensorRef<'_>,
    output: DataType,
    axis: i64,
    block_size: usize,
    scheme: Scheme,
) -> Result<Scaled> {
    quantize_scaled_with(&Reference, x, output, axis, block_size, scheme)
}

/// [`quantize_scaled`] executed by `backend`.
///
/// ```
/// use qdq_ref::scaled::{quantize_scaled_with, Scheme};
/// use qdq_ref::{tensor::Reference, DataType, TensorRef};
/// let x = [1.0f32, -2.0, 0.5, 4.0, 2.0, -1.0];
/// let out = quantize_scaled_with(&Reference, TensorRef::new(&[2, 3], &x)?, DataType::U8, 0, 0, Scheme::Rows)?;
/// assert_eq!(out.zero_point.unwrap().as_slice::<u8>()?, [170, 51]);
/// # Ok::<(), qdq_ref::Error>(())
/// ```
pub fn quantize_scaled_with<B: ScaledBackend + ?Sized>(
    backend: &B,
    x: TensorRef<'_>,
    output: DataType,
    axis: i64,
    block_size: usize,
    scheme: Scheme,
) -> Result<Scaled> {
    let n = x.checked_len("x")?;
    let xv: Values<'_> = match x.dtype {
        DataType::F32 => Values::F32(x.as_slice()?),
        DataType::F16 => Values::F16(x.as_slice()?),
        DataType::Bf16 => Values::Bf16(x.as_slice()?),
        t => bail!(UnsupportedType, "x has type {t}; these quantizers take f32, f16 or bf16"),
    };
    let y_bytes = match output.byte_len(n) {
        Some(b) => b,
        None => bail!(ShapeOverflow, "y: the byte size of {n} {output} elements overflows usize"),
    };
    let mut y = Tensor::zeroed(output, x.shape.to_vec(), y_bytes);
    if let Scheme::Rows = scheme {
        let [rows, cols] = x.shape[..] else {
            bail!(ShapeMismatch, "x has shape {:?}; per-row quantization takes a 2-D [rows, cols] tensor", x.shape);
        };
        let mut scale = Tensor::zeroed(DataType::F32, vec![rows], rows.saturating_mul(4));
        let mut zp = (output == DataType::U8).then(|| Tensor::zeroed(DataType::U8, vec![rows], rows));
        let zs = zp.as_mut().map(|z| z.bytes_mut());
        backend.rows(
            xv,
            Rows::new(rows, cols),
            PackedMut::new(output, y.bytes_mut()),
            typed_mut(&mut scale, "scale")?,
            zs,
        )?;
        return Ok(Scaled { y, scale, zero_point: zp, global_scale: None });
    }
    let axis_i = isize::try_from(axis).unwrap_or(isize::MAX);
    let layout = Layout::blocked(x.shape, axis_i, block_size)?;
    let k = layout.scale_count(n)?;
    let a = crate::layout::normalize_axis(axis, x.shape.len())?;
    let mut sshape = x.shape.to_vec();
    sshape[a] = x.shape[a].div_ceil(block_size);
    match scheme {
        Scheme::Blockwise { mode, scale_type } => {
            if !scale_type.is_wide_float() {
                bail!(UnsupportedType, "scale_type is {scale_type}; blockwise scales are f32, f16 or bf16");
            }
            let mut scale =
                Tensor::zeroed(scale_type, sshape.clone(), k.saturating_mul(scale_type.bits() as usize / 8));
            let signed = output.int_range().is_some_and(|q| q.0 < 0);
            let needs_zp = mode == BlockMode::Asymmetric || !signed;
            let mut zp = match (needs_zp, output.byte_len(k)) {
                (true, Some(b)) => Some(Tensor::zeroed(output, sshape, b)),
                _ => None,
            };
            let sv = match scale_type {
                DataType::F16 => ValuesMut::F16(typed_mut(&mut scale, "scale")?),
                DataType::Bf16 => ValuesMut::Bf16(typed_mut(&mut scale, "scale")?),
                _ => ValuesMut::F32(typed_mut(&mut scale, "scale")?),
            };
            let zv = zp.as_mut().map(|z| PackedMut::new(output, z.bytes_mut()));
            backend.blockwise(xv, layout, mode, PackedMut::new(output, y.bytes_mut()), sv, zv)?;
            Ok(Scaled { y, scale, zero_point: zp, global_scale: None })
        }
        Scheme::Mx { rounding } => {
            let mut scale = Tensor::zeroed(DataType::E8M0, sshape, k);
            backend.mx(xv, layout, rounding, PackedMut::new(output, y.bytes_mut()), typed_mut(&mut scale, "scale")?)?;
            Ok(Scaled { y, scale, zero_point: None, global_scale: None })
        }
        Scheme::Nvfp4 { global_scale } => {
            let g = match global_scale {
                Some(g) => g,
                None => backend.nvfp4_global_scale(xv)?,
            };
            let mut scale = Tensor::zeroed(DataType::E4M3Fn, sshape, k);
            backend.nvfp4(xv, layout, g, PackedMut::new(output, y.bytes_mut()), typed_mut(&mut scale, "scale")?)?;
            Ok(Scaled { y, scale, zero_point: None, global_scale: Some(g) })
        }
        // Returned above; kept as an error rather than a panic.
        Scheme::Rows => bail!(InvalidArgument, "scheme: per-row quantization takes the 2-D path"),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// `quantize_qdq_matmul_4bits` of onnxruntime 1.32.0 (x86-64) on `[K = 4, N = 2]` with
    /// blocks of 4 along K: one block per column. Each case: the two columns, the two
    /// scales' bits, the two columns' output nibbles, the two zero points (asymmetric).
    type OrtCase = ([f32; 4], [f32; 4], [u32; 2], [[u8; 4]; 2], [u8; 2]);

    fn ort_check(signed: bool, cases: &[OrtCase]) {
        for (c0, c1, sbits, nib, zps) in cases {
            let mut x = [0f32; 8];
            for k in 0..4 {
                x[2 * k] = c0[k];
                x[2 * k + 1] = c1[k];
            }
            let layout = Layout::blocked(&[4, 2], 0, 4).unwrap();
            let t = if signed { DataType::I4 } else { DataType::U4 };
            let (mut y, mut s, mut z) = ([0u8; 4], [0f32; 2], [0u8; 1]);
            let zp = (!signed).then(|| PackedMut::new(t, &mut z));
            quantize_blockwise(&x, layout, BlockMode::Onnxruntime, PackedMut::new(t, &mut y), &mut s, zp).unwrap();
            let got_bits = [s[0].to_bits(), s[1].to_bits()];
            assert_eq!(got_bits, *sbits, "{c0:?} / {c1:?}: scales {s:?}");
            for (col, want) in nib.iter().enumerate() {
                let got: Vec<u8> = (0..4).map(|k| packing::get(t, &y, 2 * k + col) as u8).collect();
                assert_eq!(got, want, "{c0:?} / {c1:?}: column {col}");
            }
            if !signed {
                assert_eq!([z[0] & 15, z[0] >> 4], *zps, "{c0:?} / {c1:?}: zero points");
            }
        }
    }

    #[test]
    fn onnxruntime_asymmetric_cases() {
        let (inf, nan) = (f32::INFINITY, f32::NAN);
        ort_check(
            false,
            &[
                ([0.0; 4], [-0.0; 4], [0, 0], [[0; 4], [0; 4]], [0, 0]),
                (
                    [0.0, 0.0, 3.0, 0.0],
                    [0.0, -3.0, 0.0, 0.0],
                    [0x3e4ccccd; 2],
                    [[0, 0, 15, 0], [15, 0, 15, 15]],
                    [0, 15],
                ),
                (
                    [-1.0, -2.0, -3.0, -4.0],
                    [1.0, 2.0, 3.0, 4.0],
                    [0x3e888889; 2],
                    [[11, 8, 4, 0], [4, 7, 11, 15]],
                    [15, 0],
                ),
                (
                    [0.0, 2.5, 15.0, 1.5],
                    [-15.0, -2.5, 0.0, -0.5],
                    [0x3f80_0000; 2],
                    [[0, 3, 15, 2], [0, 12, 15, 14]],
                    [0, 15],
                ),
                (
                    [-6.5, 8.5, 0.0, 1.0],
                    [8.0, 2.5, -0.5, 1.5],
                    [0x3f80_0000, 0x3f111111],
                    [[0, 15, 7, 8], [15, 5, 0, 4]],
                    [7, 1],
                ),
                (
                    [-8.0, 2.5, 0.5, -1.5],
                    [-4.0, 4.0, 2.0, -2.0],
                    [0x3f333333, 0x3f088889],
                    [[0, 15, 12, 9], [0, 14, 11, 3]],
                    [11, 7],
                ),
                ([1.0, nan, -2.0, 3.0], [nan; 4], [0x3eaaaaab, 0], [[9, 0, 0, 15], [0; 4]], [6, 0]),
                ([1.0, inf, -1.0, 0.0], [1.0, -inf, 2.0, 0.0], [0x7f80_0000; 2], [[0; 4], [0; 4]], [0, 0]),
                (
                    [inf, -inf, 0.0, 1.0],
                    [1e-38, 0.0, -2e-39, 5e-39],
                    [0x7f80_0000, 0x0008b613],
                    [[0; 4], [0; 4]],
                    [0, 3],
                ),
                ([1.4e-45, 0.0, 0.0, 2.8e-45], [3e38, -3.4e38, 1e38, 0.0], [0, 0x7f80_0000], [[0; 4], [0; 4]], [0, 0]),
            ],
        );
    }

    #[test]
    fn onnxruntime_symmetric_cases() {
        let (inf, nan) = (f32::INFINITY, f32::NAN);
        ort_check(
            true,
            &[
                ([0.0; 4], [-0.0; 4], [0x8000_0000, 0], [[0; 4], [0; 4]], [0, 0]),
                (
                    [0.0, 0.0, 3.0, 0.0],
                    [0.0, -3.0, 0.0, 0.0],
                    [0xbec0_0000, 0x3ec0_0000],
                    [[0, 0, 8, 0], [0, 8, 0, 0]],
                    [0; 2],
                ),
                (
                    [-1.0, -2.0, -3.0, -4.0],
                    [1.0, 2.0, 3.0, 4.0],
                    [0x3f00_0000, 0xbf00_0000],
                    [[14, 12, 10, 8], [14, 12, 10, 8]],
                    [0; 2],
                ),
                (
                    [0.0, 2.5, 15.0, 1.5],
                    [-15.0, -2.5, 0.0, -0.5],
                    [0xbff0_0000, 0x3ff0_0000],
                    [[0, 15, 8, 15], [8, 15, 0, 0]],
                    [0; 2],
                ),
                (
                    [-6.5, 8.5, 0.0, 1.0],
                    [8.0, 2.5, -0.5, 1.5],
                    [0xbf88_0000, 0xbf80_0000],
                    [[6, 8, 0, 15], [8, 13, 1, 14]],
                    [0; 2],
                ),
                (
                    [-8.0, 2.5, 0.5, -1.5],
                    [-4.0, 4.0, 2.0, -2.0],
                    [0x3f80_0000, 0x3f00_0000],
                    [[8, 3, 1, 14], [8, 7, 4, 12]],
                    [0; 2],
                ),
                ([1.0, nan, -2.0, 3.0], [nan; 4], [0xbec0_0000, 0xfdff_ffff], [[13, 8, 5, 8], [8; 4]], [0; 2]),
                (
                    [1.0, inf, -1.0, 0.0],
                    [1.0, -inf, 2.0, 0.0],
                    [0xff80_0000, 0x7f80_0000],
                    [[0, 8, 0, 0], [0, 8, 0, 0]],
                    [0; 2],
                ),
                (
                    [inf, -inf, 0.0, 1.0],
                    [1e-38, 0.0, -2e-39, 5e-39],
                    [0x7f80_0000, 0x800d9c7e],
                    [[8, 8, 0, 0], [8; 4]],
                    [0; 2],
                ),
                (
                    [1.4e-45, 0.0, 0.0, 2.8e-45],
                    [3e38, -3.4e38, 1e38, 0.0],
                    [0x8000_0000, 0x7dff_c99e],
                    [[0; 4], [7, 8, 2, 0]],
                    [0; 2],
                ),
            ],
        );
    }
}
