//! DequantizeLinear, element by element.
//!
//! For each element with scale `s = S[k]` and zero point `z = Z[k]`:
//!
//! ```text
//! integer x (u8 ... i32):   d = f32(x - z)       subtraction exact in i64, one rounding to f32
//! float8 / float4 / float6: d = f32(x)           exact; z must be zero and is not used
//! y = round_O( f32(d * f32(s)) )                 one f32 multiply, then the output type O
//! ```
//!
//! * `O` is `output_dtype` when set, otherwise the scale's type; it must be f32, f16 or
//!   bf16, so an e8m0 scale needs `output_dtype` (R13).
//! * The multiply is done in f32 and rounded once to `O`, as both the ONNX reference and
//!   onnxruntime do (strict f16 arithmetic would differ in about 25% of
//!   random u16 x f16 cases; nobody implements it).
//! * The zero point is subtracted exactly in integer arithmetic. The reference converts an
//!   i32 x to f32 first and then subtracts in f64, losing the low bits (R11): for
//!   x = 16777217, z = 1 it gives 16777215; this crate gives 16777216, as onnxruntime does.
//! * A float zero point must be zero (accepted by value, so -0 passes, as in the
//!   reference, R12); it does not take part in the arithmetic.
//! * Every NaN result (a NaN code, a NaN scale, `0 * inf`) is written as the canonical NaN
//!   [`crate::float::CANONICAL_NAN`] (`0x7fc00000`; f16 `0x7e00`, bf16 `0x7fc0`): IEEE 754
//!   leaves an arithmetic NaN's sign and payload open, and hardware differs.

use crate::dtype::DataType;
use crate::error::{bail, Result};
use crate::float::FloatFormat;
use crate::layout::Layout;
use crate::packing;
use crate::params::Params;
use crate::quantize::check_float_zero_point;
use crate::tensor::{DequantizePlan, TensorRef};
use crate::values::{Packed, Read, ValuesMut, Write};

/// The value `d` of the module docs for element `i`: `f32(x - z)` for integer x (exact
/// subtraction, one rounding), the decoded value for float x (a float zero point is zero
/// and not used).
///
/// ```
/// use qdq_ref::{dequantize::difference, Packed};
/// let x = Packed::from(&[250u8, 3]);
/// let zp = Packed::from(&[128u8]);
/// assert_eq!(difference(&x, 0, Some((&zp, 0))), 122.0);
/// assert_eq!(difference(&x, 1, None), 3.0);
/// ```
pub fn difference(x: &Packed<'_>, i: usize, zero_point: Option<(&Packed<'_>, usize)>) -> f32 {
    let t = x.dtype;
    if t.int_range().is_some() {
        let z = zero_point.map_or(0, |(zp, k)| packing::get_int(t, zp.data, k));
        (packing::get_int(t, x.data, i) - z) as f32
    } else {
        FloatFormat::of(t).map_or(f32::NAN, |f| f.decode(x.code(i)) as f32)
    }
}

/// Dequantizes one element: returns the f32 product `f32(d * s)` of the module docs. The
/// output type then rounds it once (a no-op for f32).
///
/// ```
/// use qdq_ref::{dequantize::dequantize_value, Packed};
/// let x = Packed::from(&[-3i8]);
/// assert_eq!(dequantize_value(&x, 0, None, 0.5), -1.5);
/// ```
pub fn dequantize_value(x: &Packed<'_>, i: usize, zero_point: Option<(&Packed<'_>, usize)>, scale: f32) -> f32 {
    difference(x, i, zero_point) * scale
}

/// Validates a dequantize call (x, zero point, scale and output types; lengths). Every
/// backend calls this, so all reject the same inputs identically. `names` are the scale's
/// and zero point's names in messages (`["x_scale", "x_zero_point"]` for a node).
///
/// ```
/// use qdq_ref::{dequantize::check, DataType, ErrorKind, Layout, Packed};
/// let x = Packed::from(&[1u8, 2, 3]);
/// let names = ["x_scale", "x_zero_point"];
/// assert!(check(&x, (DataType::F32, 1), None, &Layout::PerTensor, DataType::F32, 3, names).is_ok());
/// let err = check(&x, (DataType::F32, 2), None, &Layout::PerTensor, DataType::F32, 3, names).unwrap_err();
/// assert_eq!((err.kind(), err.message()), (ErrorKind::BufferLength, "x_scale has 2 elements but the layout PerTensor needs 1"));
/// ```
pub fn check(
    x: &Packed<'_>,
    scale: (DataType, usize),
    zero_point: Option<&Packed<'_>>,
    layout: &Layout,
    output: DataType,
    y_len: usize,
    names: [&str; 2],
) -> Result<()> {
    let [scale_name, zp_name] = names;
    let t = x.dtype;
    if !(DataType::QUANTIZED.contains(&t) || t == DataType::I32) {
        bail!(UnsupportedType, "x has type {t}; DequantizeLinear takes a quantized type or i32");
    }
    x.check("x")?;
    if !matches!(scale.0, DataType::F32 | DataType::F16 | DataType::Bf16 | DataType::E8M0) {
        bail!(UnsupportedType, "{scale_name} has type {}; expected f32, f16, bf16 or e8m0", scale.0);
    }
    if !output.is_wide_float() {
        bail!(InvalidAttribute, "the output type must be f32, f16 or bf16, got {output}");
    }
    let want = layout.scale_count(x.len)?;
    if scale.1 != want {
        bail!(BufferLength, "{scale_name} has {} elements but the layout {layout:?} needs {want}", scale.1);
    }
    if let Some(zp) = zero_point {
        if zp.dtype != t {
            bail!(TypeMismatch, "{zp_name} has type {} but x has type {t}; they must be equal", zp.dtype);
        }
        zp.check(zp_name)?;
        if zp.len != want {
            bail!(BufferLength, "{zp_name} has {} elements but {scale_name} has {want}", zp.len);
        }
        check_float_zero_point(zp, zp_name)?;
    }
    if y_len != x.len {
        bail!(BufferLength, "y has {y_len} elements but x has {}", x.len);
    }
    Ok(())
}

/// The loop shared by both API levels; inputs are already checked.
pub(crate) fn run(
    x: &Packed<'_>,
    scale: &impl Read,
    zero_point: Option<&Packed<'_>>,
    layout: &Layout,
    y: &mut impl Write,
) {
    for i in 0..x.len {
        let k = layout.scale_index(i);
        // Every scale type (f32, f16, bf16, e8m0) is exact in f32.
        let s = scale.value(k) as f32;
        y.put(i, dequantize_value(x, i, zero_point.map(|z| (z, k)), s));
    }
}

/// Validates a slice-level dequantize of `x` with `params` into `y_len` elements of type
/// `output`, as the plan every backend executes.
///
/// ```
/// use qdq_ref::{dequantize, DataType, Params};
/// let params = Params::per_tensor(0.5);
/// let plan = dequantize::plan((&[1u8, 2]).into(), &params, DataType::F32, 2)?;
/// assert_eq!((plan.x.len, plan.output), (2, DataType::F32));
/// # Ok::<(), qdq_ref::Error>(())
/// ```
pub fn plan<'a>(x: Packed<'a>, params: &'a Params<'_>, output: DataType, y_len: usize) -> Result<DequantizePlan<'a>> {
    let scale = params.scales();
    let zero_point = params.zero_points_as(x.dtype)?;
    let layout = params.layout();
    let names = ["scales", "zero_points"];
    check(&x, (scale.dtype(), scale.len()), zero_point.as_ref(), &layout, output, y_len, names)?;
    let Some(y_bytes) = output.byte_len(y_len) else {
        bail!(ShapeOverflow, "y: the byte size of {y_len} {output} elements overflows usize");
    };
    let scale = TensorRef { dtype: scale.dtype(), shape: &[], data: scale.bytes() };
    Ok(DequantizePlan { x, shape: &[], scale, zero_point, layout, output, y_bytes })
}

/// DequantizeLinear of `x` with `params` into `y`, whose type is the output type.
/// Allocates nothing.
///
/// * `x`: `&[u8]`, `&[i8]`, `&[u16]`, `&[i16]`, `&[i32]`, a float8 slice, or a [`Packed`]
///   view of packed sub-byte data.
/// * `y`: `&mut [f32]`, `&mut [f16]` or `&mut [bf16]`, as many elements as `x`.
/// * `params`: the scales (f32, f16, bf16 or e8m0), optional zero points of x's type, and
///   the layout; `saturate` and `precision` do not apply.
///
/// Each element becomes `(x - z) * s`, computed in f32 and rounded once to y's type (the
/// module docs give every edge case).
///
/// ```
/// use qdq_ref::{dequantize, Params};
/// let mut y = [0f32; 3];
/// dequantize(&[0u8, 128, 255], &Params::per_tensor(0.5).zero_point(128), &mut y)?;
/// assert_eq!(y, [-64.0, 0.0, 63.5]);
/// # Ok::<(), qdq_ref::Error>(())
/// ```
pub fn dequantize<'x, 'y>(x: impl Into<Packed<'x>>, params: &Params<'_>, y: impl Into<ValuesMut<'y>>) -> Result<()> {
    dequantize_views(x.into(), params, y.into())
}

fn dequantize_views(x: Packed<'_>, params: &Params<'_>, mut y: ValuesMut<'_>) -> Result<()> {
    let plan = plan(x, params, y.dtype(), y.len())?;
    // The typed views, not the plan's bytes: they read and write the same values on any
    // byte order.
    run(&plan.x, &params.scales(), plan.zero_point.as_ref(), &plan.layout, &mut y);
    Ok(())
}
