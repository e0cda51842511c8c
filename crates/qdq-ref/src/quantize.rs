//! QuantizeLinear, element by element.
//!
//! For each element `x[i]` with scale `s = S[k]` and zero point `z = Z[k]`
//! (`k = layout.scale_index(i)`), in the division precision `P`:
//!
//! ```text
//! q = round_P( round_P(x) / round_P(s) )        IEEE division in P: s = 0 gives ±inf or NaN
//! integer y:   y = NaN(q) ? qmin : clamp(roundTiesEven(q) + z, qmin, qmax)
//! float8 y:    y = cast_float8(q, saturate)     z must be zero and is not used
//! float4/6 y:  y = cast_saturating(q + z)       z must be zero; adding +0 turns -0 into +0
//! ```
//!
//! * `P` is the `precision` attribute when set (f32, f16 or bf16 only), otherwise the
//!   scale's type: f32, f16, bf16 as themselves, e8m0 as f32 (its values are exact there),
//!   and **i32 as f64**. Dividing in f64 and rounding to f32/f16/bf16 is the correctly
//!   rounded division in that type (53 >= 2p + 2, so the double rounding is innocuous).
//! * The zero point is added **after** rounding (x = 0.5, 1.5, 2.5 with z = 1 give 1, 3, 3).
//! * Saturation is exact for every quotient: `±inf` and quotients beyond i32 clamp to
//!   `qmax`/`qmin`, and the zero-point add cannot overflow (ONNX reference bugs R1, R2, R6).
//! * NaN gives `qmin` for integer outputs (the zero point is not used), as both the ONNX
//!   reference and onnxruntime do; the spec leaves it undefined (R3).
//! * float8: `saturate = 1` clamps overflow and ±inf to ±max; `saturate = 0` gives NaN (or
//!   ±inf for e5m2). See [`crate::float`] for the full table.
//! * A non-zero float8/float4/float6 zero point is rejected (R9, R10): the reference
//!   ignores it for float8 and adds it for float4/float6, which contradicts itself.

use crate::dtype::DataType;
use crate::error::{bail, Result};
use crate::float::{FloatFormat, BF16, F16, F32};
use crate::layout::Layout;
use crate::packing;
use crate::params::Params;
use crate::tensor::{QuantizePlan, TensorRef};
use crate::values::{Packed, PackedMut, Read, Values};

/// The floating-point type the division `x / scale` is carried out in.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Precision {
    /// binary32.
    F32,
    /// binary16.
    F16,
    /// bfloat16.
    Bf16,
    /// binary64: only chosen for i32 scales (ONNX reference parity; the spec is silent).
    F64,
}

impl Precision {
    /// The precision a `precision` attribute names; only f32, f16 and bf16 are valid (R20).
    ///
    /// ```
    /// use qdq_ref::{DataType, Precision};
    /// assert_eq!(Precision::from_attribute(DataType::Bf16), Some(Precision::Bf16));
    /// assert_eq!(Precision::from_attribute(DataType::I32), None);
    /// ```
    pub fn from_attribute(t: DataType) -> Option<Precision> {
        match t {
            DataType::F32 => Some(Precision::F32),
            DataType::F16 => Some(Precision::F16),
            DataType::Bf16 => Some(Precision::Bf16),
            _ => None,
        }
    }

    /// The default precision for a scale type: f16 and bf16 as themselves, i32 as f64,
    /// f32 and e8m0 as f32.
    ///
    /// ```
    /// use qdq_ref::{DataType, Precision};
    /// assert_eq!(Precision::for_scale(DataType::F16), Precision::F16);
    /// assert_eq!(Precision::for_scale(DataType::I32), Precision::F64);
    /// assert_eq!(Precision::for_scale(DataType::E8M0), Precision::F32);
    /// ```
    pub fn for_scale(t: DataType) -> Precision {
        match t {
            DataType::F16 => Precision::F16,
            DataType::Bf16 => Precision::Bf16,
            DataType::I32 => Precision::F64,
            _ => Precision::F32,
        }
    }

    /// Rounds an exact value to this precision (RNE, overflow to ±inf).
    ///
    /// ```
    /// use qdq_ref::Precision;
    /// assert_eq!(Precision::F16.round(2049.0), 2048.0); // a tie, to even
    /// assert_eq!(Precision::F16.round(70000.0), f64::INFINITY);
    /// assert_eq!(Precision::F64.round(0.1), 0.1);
    /// ```
    pub fn round(self, v: f64) -> f64 {
        let fmt: FloatFormat = match self {
            Precision::F64 => return v,
            Precision::F32 => F32,
            Precision::F16 => F16,
            Precision::Bf16 => BF16,
        };
        fmt.round(v)
    }
}

/// Options of a quantize call at the slice level.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct QuantizeOptions {
    /// The output element type (one of [`DataType::QUANTIZED`]).
    pub output: DataType,
    /// float8 saturation (ignored by the other output types).
    pub saturate: bool,
    /// The `precision` attribute: `None` means "the scale's type".
    pub precision: Option<DataType>,
}

impl QuantizeOptions {
    /// Options for `output` with `saturate = true` and the scale's precision.
    ///
    /// ```
    /// use qdq_ref::{DataType, QuantizeOptions};
    /// let o = QuantizeOptions::new(DataType::E4M3Fn);
    /// assert!(o.saturate && o.precision.is_none());
    /// ```
    pub fn new(output: DataType) -> Self {
        QuantizeOptions { output, saturate: true, precision: None }
    }
}

/// Quantizes one value: the formula of the module docs. `x` and `scale` are the exact
/// values of the input elements (any f32/f16/bf16/i32/e8m0 value is exact in f64);
/// `zero_point` is the zero point's value (`None` when there is none). Returns the
/// output code (the low `output.bits()` bits).
///
/// ```
/// use qdq_ref::{quantize::quantize_value, DataType, Precision};
/// assert_eq!(quantize_value(2.5, 1.0, Some(1.0), DataType::U8, Precision::F32, true), 3); // 2 + 1
/// assert_eq!(quantize_value(-9.0, 1.0, None, DataType::I4, Precision::F32, true), 0x8); // -8
/// assert_eq!(quantize_value(1e6, 1.0, None, DataType::E4M3Fn, Precision::F32, false), 0x7f); // NaN
/// ```
pub fn quantize_value(
    x: f64,
    scale: f64,
    zero_point: Option<f64>,
    output: DataType,
    precision: Precision,
    saturate: bool,
) -> u32 {
    let q = quotient(x, scale, precision);
    if let Some((qmin, qmax)) = output.int_range() {
        let v = if q.is_nan() {
            qmin
        } else {
            // Exact while |q| < 2^53; beyond that the result saturates either way.
            let r = q.round_ties_even() + zero_point.unwrap_or(0.0);
            r.clamp(qmin as f64, qmax as f64) as i64
        };
        return (v as u32) & (((1u64 << output.bits()) - 1) as u32);
    }
    let fmt = FloatFormat::of(output).expect("quantized float output");
    if output.is_float8() {
        fmt.encode(q, saturate)
    } else {
        // float4/float6: the reference adds the (necessarily zero) zero point as a float,
        // which turns -0 into +0; without a zero point nothing is added and -0 stays -0.
        fmt.encode(zero_point.map_or(q, |z| q + z), true)
    }
}

/// The quotient `q = round_P(round_P(x) / round_P(s))` of the module docs (a value of `P`,
/// held exactly in an `f64`).
///
/// ```
/// use qdq_ref::{quantize::quotient, Precision};
/// assert_eq!(quotient(1.0, 3.0, Precision::F32), (1.0f32 / 3.0) as f64);
/// assert!(quotient(0.0, 0.0, Precision::F32).is_nan());
/// ```
pub fn quotient(x: f64, scale: f64, precision: Precision) -> f64 {
    precision.round(precision.round(x) / precision.round(scale))
}

/// Whether a quotient `q` (see [`quotient`]) is representable in `output` without
/// saturating: not NaN, and for integer outputs `qmin <= roundTiesEven(q) + zp <= qmax`
/// (the bounds themselves included), for float outputs no overflow (see
/// [`FloatFormat::rounds_in_range`]). This is the training-mode mask bit.
///
/// ```
/// use qdq_ref::{quantize::representable, DataType};
/// assert!(representable(127.4, None, DataType::I8));
/// assert!(!representable(127.5, None, DataType::I8)); // rounds to 128
/// assert!(!representable(f64::NAN, None, DataType::U8));
/// ```
pub fn representable(q: f64, zero_point: Option<f64>, output: DataType) -> bool {
    if let Some((qmin, qmax)) = output.int_range() {
        // NaN fails both comparisons.
        let r = q.round_ties_even() + zero_point.unwrap_or(0.0);
        r >= qmin as f64 && r <= qmax as f64
    } else {
        // Adding a float zero point (which must be ±0) cannot change the range.
        FloatFormat::of(output).is_some_and(|f| f.rounds_in_range(q))
    }
}

/// The value of zero-point element `i` as the quantize formula uses it.
///
/// ```
/// use qdq_ref::{quantize::zero_point_value, Packed};
/// assert_eq!(zero_point_value(&Packed::from(&[-5i8, 7]), 1), 7.0);
/// ```
pub fn zero_point_value(zp: &Packed<'_>, i: usize) -> f64 {
    let t = zp.dtype;
    if t.int_range().is_some() {
        packing::get_int(t, zp.data, i) as f64
    } else {
        FloatFormat::of(t).map_or(0.0, |f| f.decode(zp.code(i)))
    }
}

/// Rejects a float8/float4/float6 zero point that is not a zero (R9, R10, R12). ±0 is
/// accepted by value, as the ONNX reference does.
pub(crate) fn check_float_zero_point(zp: &Packed<'_>, name: &str) -> Result<()> {
    if let Some(fmt) = FloatFormat::of(zp.dtype) {
        for i in 0..zp.len {
            let v = fmt.decode(zp.code(i));
            if v != 0.0 {
                bail!(
                    NonZeroZeroPoint,
                    "{name}[{i}] is {v} (code {:#04x}): a {} zero point must be zero",
                    zp.code(i),
                    zp.dtype
                );
            }
        }
    }
    Ok(())
}

/// Validates a quantize call (types, lengths, zero point) and returns the division
/// precision. Every backend calls this, so all reject the same inputs identically.
/// `names` are the scale's and zero point's names in messages: `["y_scale",
/// "y_zero_point"]` for a node, `["scales", "zero_points"]` for [`Params`].
///
/// ```
/// use qdq_ref::{quantize::check, DataType, ErrorKind, Layout, Precision, QuantizeOptions};
/// let opts = QuantizeOptions::new(DataType::I8);
/// let names = ["y_scale", "y_zero_point"];
/// let p = check((DataType::F16, 4), (DataType::F16, 1), None, &Layout::PerTensor, &opts, 4, names)?;
/// assert_eq!(p, Precision::F16);
/// let err = check((DataType::F32, 4), (DataType::F32, 1), None, &Layout::PerTensor, &opts, 3, names).unwrap_err();
/// assert_eq!(err.kind(), ErrorKind::BufferLength);
/// # Ok::<(), qdq_ref::Error>(())
/// ```
pub fn check(
    x: (DataType, usize),
    scale: (DataType, usize),
    zero_point: Option<&Packed<'_>>,
    layout: &Layout,
    opts: &QuantizeOptions,
    y_len: usize,
    names: [&str; 2],
) -> Result<Precision> {
    let [scale_name, zp_name] = names;
    let out = opts.output;
    // The tensor API validates `output_dtype` and `precision` as attributes before this;
    // what reaches these two checks comes from a slice-level call.
    if !DataType::QUANTIZED.contains(&out) {
        bail!(
            UnsupportedType,
            "y has type {out}, which is not a quantized type (expected one of {})",
            crate::dtype::list(&DataType::QUANTIZED)
        );
    }
    if !matches!(x.0, DataType::F32 | DataType::F16 | DataType::Bf16 | DataType::I32) {
        bail!(UnsupportedType, "x has type {}; QuantizeLinear takes f32, f16, bf16 or i32", x.0);
    }
    if !matches!(scale.0, DataType::F32 | DataType::F16 | DataType::Bf16 | DataType::I32 | DataType::E8M0) {
        bail!(UnsupportedType, "{scale_name} has type {}; expected f32, f16, bf16, i32 or e8m0", scale.0);
    }
    let precision = match opts.precision {
        None => Precision::for_scale(scale.0),
        Some(t) => match Precision::from_attribute(t) {
            Some(p) => p,
            None => bail!(InvalidArgument, "precision must be f32, f16 or bf16, got {t}"),
        },
    };
    let n = x.1;
    let want = layout.scale_count(n)?;
    if scale.1 != want {
        bail!(BufferLength, "{scale_name} has {} elements but the layout {layout:?} needs {want}", scale.1);
    }
    if let Some(zp) = zero_point {
        if zp.dtype != out {
            bail!(TypeMismatch, "{zp_name} has type {} but the output type is {out}", zp.dtype);
        }
        zp.check(zp_name)?;
        if zp.len != want {
            bail!(BufferLength, "{zp_name} has {} elements but {scale_name} has {want}", zp.len);
        }
        check_float_zero_point(zp, zp_name)?;
    }
    match out.byte_len(n) {
        Some(b) if b == y_len => Ok(precision),
        Some(b) => bail!(BufferLength, "y: {n} elements of {out} need {b} bytes, got {y_len}"),
        None => bail!(ShapeOverflow, "y: the byte size of {n} {out} elements overflows usize"),
    }
}

/// The loop shared by both API levels; inputs are already checked.
#[allow(clippy::too_many_arguments)]
pub(crate) fn run(
    x: &impl Read,
    n: usize,
    scale: &impl Read,
    zero_point: Option<&Packed<'_>>,
    layout: &Layout,
    opts: &QuantizeOptions,
    precision: Precision,
    y: &mut [u8],
) {
    for i in 0..n {
        let k = layout.scale_index(i);
        let z = zero_point.map(|zp| zero_point_value(zp, k));
        let code = quantize_value(x.value(i), scale.value(k), z, opts.output, precision, opts.saturate);
        packing::set(opts.output, y, i, code);
    }
    packing::zero_padding(opts.output, y, n);
}

/// Validates a slice-level quantize of `x` with `params` into an output of type `output`
/// and `y_bytes` bytes, as the plan every backend executes.
///
/// ```
/// use qdq_ref::{quantize, DataType, Params};
/// let params = Params::per_tensor(2.0);
/// let plan = quantize::plan((&[1.0f32, 2.0, 3.0]).into(), &params, DataType::I8, 3)?;
/// assert_eq!((plan.len, plan.opts.output), (3, DataType::I8));
/// assert!(quantize::plan((&[1.0f32]).into(), &params, DataType::I8, 2).is_err());
/// # Ok::<(), qdq_ref::Error>(())
/// ```
pub fn plan<'a>(x: Values<'a>, params: &'a Params<'_>, output: DataType, y_bytes: usize) -> Result<QuantizePlan<'a>> {
    let scale = params.scales();
    let zero_point = params.zero_points_as(output)?;
    let opts = QuantizeOptions { output, saturate: params.is_saturating(), precision: params.division_type() };
    let layout = params.layout();
    let n = x.len();
    let names = ["scales", "zero_points"];
    let precision =
        check((x.dtype(), n), (scale.dtype(), scale.len()), zero_point.as_ref(), &layout, &opts, y_bytes, names)?;
    Ok(QuantizePlan {
        x: TensorRef { dtype: x.dtype(), shape: &[], data: x.bytes() },
        scale: TensorRef { dtype: scale.dtype(), shape: &[], data: scale.bytes() },
        zero_point,
        layout,
        opts,
        precision,
        len: n,
        y_bytes,
    })
}

/// QuantizeLinear of `x` with `params` into `y`, whose type is the output type. Allocates
/// nothing.
///
/// * `x`: `&[f32]`, `&[f16]`, `&[bf16]` or `&[i32]` (a slice, `Vec` or array).
/// * `y`: as many elements as `x`: `&mut [u8]`, `&mut [i8]`, `&mut [u16]`, `&mut [i16]`, a
///   float8 slice, or a [`PackedMut`] of `output.byte_len(x.len())` bytes for the packed
///   sub-byte types (u4, i4, u2, i2, float4 e2m1, float6 e2m3 / e3m2).
/// * `params`: the scales (one per tensor, per axis index or per block, see [`Params`]),
///   optional zero points of the output type, `saturate` and `precision`.
///
/// Each element becomes `clamp(roundTiesEven(x / s) + z, qmin, qmax)` for integer outputs
/// (the module docs give the exact rounding of the division and every edge case).
///
/// ```
/// use qdq_ref::{quantize, Params};
/// let mut y = [0u8; 4];
/// quantize(&[-1.0f32, 0.0, 0.26, 1000.0], &Params::per_tensor(0.1).zero_point(10), &mut y)?;
/// assert_eq!(y, [0, 10, 13, 255]);
/// # Ok::<(), qdq_ref::Error>(())
/// ```
pub fn quantize<'x, 'y>(x: impl Into<Values<'x>>, params: &Params<'_>, y: impl Into<PackedMut<'y>>) -> Result<()> {
    quantize_views(x.into(), params, y.into())
}

fn quantize_views(x: Values<'_>, params: &Params<'_>, y: PackedMut<'_>) -> Result<()> {
    let plan = plan(x, params, y.dtype, y.data.len())?;
    // The typed views, not the plan's bytes: they read the same values on any byte order.
    let scale = params.scales();
    run(&x, plan.len, &scale, plan.zero_point.as_ref(), &plan.layout, &plan.opts, plan.precision, y.data);
    Ok(())
}
