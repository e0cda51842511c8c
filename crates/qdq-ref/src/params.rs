//! [`Params`]: the scales, zero points and layout of a slice-level quantize or dequantize.

use crate::dtype::DataType;
use crate::error::{bail, Result};
use crate::layout::Layout;
use crate::values::{Packed, Values};
use half::{bf16, f16};

/// Everything but the data of a QuantizeLinear / DequantizeLinear call: the scale(s), the
/// zero point(s), which scale applies to which element ([`Layout`]), and QuantizeLinear's
/// `saturate` and `precision` options. Built once and reused for every call with the same
/// parameters; it borrows the scale and zero-point slices.
///
/// * Scales are `f32`, [`f16`](struct@half::f16), [`bf16`], `i32` (QuantizeLinear only) or
///   [`Float8E8M0`](crate::Float8E8M0) values.
/// * Zero points have the quantized type: the output's for a quantize, x's for a
///   dequantize. Without one, the zero point is 0.
/// * The quantized type itself comes from the output (quantize) or input (dequantize)
///   buffer, not from `Params`, so one `Params` serves both directions.
///
/// ```
/// use qdq_ref::{quantize, dequantize, Params};
/// let params = Params::per_tensor(0.5).zero_point(10);
/// let mut q = [0u8; 3];
/// quantize(&[1.0f32, -2.0, 100.0], &params, &mut q)?;
/// assert_eq!(q, [12, 6, 210]);
/// let mut back = [0f32; 3];
/// dequantize(&q, &params, &mut back)?;
/// assert_eq!(back, [1.0, -2.0, 100.0]);
/// # Ok::<(), qdq_ref::Error>(())
/// ```
#[derive(Clone, Copy, Debug)]
pub struct Params<'a> {
    scales: Scales<'a>,
    zero_points: ZeroPoints<'a>,
    layout: Layout,
    saturate: bool,
    precision: Option<DataType>,
}

/// One scale held by value, or a borrowed slice.
#[derive(Clone, Copy, Debug)]
enum Scales<'a> {
    One(OneScale),
    Many(Values<'a>),
}

#[derive(Clone, Copy, Debug)]
enum OneScale {
    F32([f32; 1]),
    F16([f16; 1]),
    Bf16([bf16; 1]),
}

/// None, one zero point held by value (as an i32's little-endian bytes: the low bits of a
/// two's complement value are its code in every narrower integer type), or a slice.
#[derive(Clone, Copy, Debug)]
enum ZeroPoints<'a> {
    None,
    One(i32, [u8; 4]),
    Many(Packed<'a>),
}

impl Params<'static> {
    /// One f32 scale for the whole tensor, no zero point (add one with
    /// [`zero_point`](Params::zero_point)).
    ///
    /// ```
    /// use qdq_ref::{quantize, Params};
    /// let mut y = [0i8; 2];
    /// quantize(&[0.25f32, -300.0], &Params::per_tensor(0.125), &mut y)?;
    /// assert_eq!(y, [2, -128]);
    /// # Ok::<(), qdq_ref::Error>(())
    /// ```
    pub fn per_tensor(scale: f32) -> Self {
        Params::one(OneScale::F32([scale]))
    }

    /// One f16 scale for the whole tensor (the division then runs in f16, see
    /// [`precision`](Params::precision)).
    ///
    /// ```
    /// use qdq_ref::{f16, quantize, Params};
    /// let mut y = [0u8; 1];
    /// quantize(&[f16::from_f32(3.0)], &Params::per_tensor_f16(f16::from_f32(0.5)), &mut y)?;
    /// assert_eq!(y, [6]);
    /// # Ok::<(), qdq_ref::Error>(())
    /// ```
    pub fn per_tensor_f16(scale: f16) -> Self {
        Params::one(OneScale::F16([scale]))
    }

    /// One bf16 scale for the whole tensor (the division then runs in bf16).
    ///
    /// ```
    /// use qdq_ref::{bf16, quantize, Params};
    /// let mut y = [0u8; 1];
    /// quantize(&[bf16::from_f32(3.0)], &Params::per_tensor_bf16(bf16::from_f32(0.5)), &mut y)?;
    /// assert_eq!(y, [6]);
    /// # Ok::<(), qdq_ref::Error>(())
    /// ```
    pub fn per_tensor_bf16(scale: bf16) -> Self {
        Params::one(OneScale::Bf16([scale]))
    }

    fn one(scale: OneScale) -> Self {
        Params {
            scales: Scales::One(scale),
            zero_points: ZeroPoints::None,
            layout: Layout::PerTensor,
            saturate: true,
            precision: None,
        }
    }
}

impl<'a> Params<'a> {
    /// Scales laid out by `layout` (see [`Layout`]); the operators check that there are
    /// `layout.scale_count(n)` of them for `n` elements.
    ///
    /// ```
    /// use qdq_ref::{quantize, Layout, Params};
    /// let scales = [1.0f32, 0.5];
    /// let params = Params::new(&scales, Layout::per_axis(&[2, 2], 0)?);
    /// let mut y = [0u8; 4];
    /// quantize(&[1.0f32, 2.0, 1.0, 2.0], &params, &mut y)?;
    /// assert_eq!(y, [1, 2, 2, 4]);
    /// # Ok::<(), qdq_ref::Error>(())
    /// ```
    pub fn new(scales: impl Into<Values<'a>>, layout: Layout) -> Self {
        Params {
            scales: Scales::Many(scales.into()),
            zero_points: ZeroPoints::None,
            layout,
            saturate: true,
            precision: None,
        }
    }

    /// One scale per index of axis `axis` of a tensor of shape `shape` (ONNX's per-axis
    /// quantization; a negative axis counts from the end). Errors if the axis is out of
    /// range or the shape's element count overflows.
    ///
    /// ```
    /// use qdq_ref::{quantize, Params};
    /// // A 2x3 weight matrix, one scale per row (axis 0).
    /// let w = [1.0f32, 2.0, 3.0, 10.0, 20.0, 30.0];
    /// let mut q = [0i8; 6];
    /// quantize(&w, &Params::per_axis(&[0.1f32, 1.0], &[2, 3], 0)?, &mut q)?;
    /// assert_eq!(q, [10, 20, 30, 10, 20, 30]);
    /// # Ok::<(), qdq_ref::Error>(())
    /// ```
    pub fn per_axis(scales: impl Into<Values<'a>>, shape: &[usize], axis: isize) -> Result<Self> {
        Ok(Params::new(scales, Layout::per_axis(shape, axis)?))
    }

    /// One scale per block of `block` consecutive indices along axis `axis` of a tensor of
    /// shape `shape` (ONNX's blocked quantization): `shape` with `ceil(shape[axis] / block)`
    /// at the axis is the scales' shape. Errors if the axis is out of range, `block` is 0 or
    /// the shape's element count overflows.
    ///
    /// ```
    /// use qdq_ref::{quantize, DataType, PackedMut, Params};
    /// // One row of 4 weights, blocks of 2 along the last axis, int4 output.
    /// let w = [1.0f32, -2.0, 30.0, 40.0];
    /// let params = Params::blocked(&[1.0f32, 10.0], &[1, 4], -1, 2)?;
    /// let mut q = vec![0u8; DataType::I4.byte_len(w.len()).unwrap()];
    /// quantize(&w, &params, PackedMut::new(DataType::I4, &mut q))?;
    /// assert_eq!(q, [0xe1, 0x43]); // 1, -2, 3, 4, two per byte, low nibble first
    /// # Ok::<(), qdq_ref::Error>(())
    /// ```
    pub fn blocked(scales: impl Into<Values<'a>>, shape: &[usize], axis: isize, block: usize) -> Result<Self> {
        Ok(Params::new(scales, Layout::blocked(shape, axis, block)?))
    }

    /// One zero point for the whole tensor (per-tensor parameters only), given by value and
    /// converted to the quantized type at the call: it must lie in that type's range (0 to
    /// 255 for u8, -8 to 7 for i4, ...) and be 0 for float8 / float6 / float4 types.
    ///
    /// ```
    /// use qdq_ref::{quantize, Params};
    /// let mut y = [0u8; 2];
    /// quantize(&[0.0f32, 1.0], &Params::per_tensor(0.25).zero_point(128), &mut y)?;
    /// assert_eq!(y, [128, 132]);
    /// # Ok::<(), qdq_ref::Error>(())
    /// ```
    pub fn zero_point(self, zero_point: i32) -> Self {
        Params { zero_points: ZeroPoints::One(zero_point, zero_point.to_le_bytes()), ..self }
    }

    /// Zero points, one per scale, in the quantized type: a typed slice (`&[u8]`, `&[i8]`,
    /// `&[u16]`, `&[i16]`, `&[i32]`, float8) or, for sub-byte types, a [`Packed`] view.
    ///
    /// ```
    /// use qdq_ref::{quantize, Params};
    /// let zero_points: [u8; 2] = [100, 200];
    /// let params = Params::per_axis(&[1.0f32, 1.0], &[2], 0)?.zero_points(&zero_points);
    /// let mut y = [0u8; 2];
    /// quantize(&[5.0f32, -5.0], &params, &mut y)?;
    /// assert_eq!(y, [105, 195]);
    /// # Ok::<(), qdq_ref::Error>(())
    /// ```
    pub fn zero_points(self, zero_points: impl Into<Packed<'a>>) -> Self {
        Params { zero_points: ZeroPoints::Many(zero_points.into()), ..self }
    }

    /// float8 saturation for a quantize (ONNX `saturate`, default `true`): with `false`,
    /// values beyond the type's range become NaN (±inf for e5m2) instead of ±max. Other
    /// output types ignore it; a dequantize ignores it.
    ///
    /// ```
    /// use qdq_ref::{quantize, Float8E4M3Fn, Params};
    /// let mut y = [Float8E4M3Fn::default(); 1];
    /// quantize(&[1000.0f32], &Params::per_tensor(1.0).saturate(false), &mut y)?;
    /// assert!(y[0].to_f32().is_nan());
    /// quantize(&[1000.0f32], &Params::per_tensor(1.0), &mut y)?;
    /// assert_eq!(y[0].to_f32(), 448.0);
    /// # Ok::<(), qdq_ref::Error>(())
    /// ```
    pub fn saturate(self, saturate: bool) -> Self {
        Params { saturate, ..self }
    }

    /// The type a quantize divides in (ONNX `precision`): [`DataType::F32`],
    /// [`DataType::F16`] or [`DataType::Bf16`]. Without it the division runs in the
    /// scale's type (f32 for e8m0 scales, f64 for i32 scales). A dequantize ignores it.
    ///
    /// ```
    /// use qdq_ref::{f16, quantize, DataType, Params};
    /// let scale = [f16::from_f32(0.1)];
    /// let x = [f16::from_f32(1000.0)];
    /// let mut y = [0u16; 1];
    /// quantize(&x, &Params::new(&scale, qdq_ref::Layout::PerTensor), &mut y)?;
    /// assert_eq!(y, [10000]); // 1000 / 0.0999755859375 = 10002.44, rounded to f16
    /// quantize(&x, &Params::new(&scale, qdq_ref::Layout::PerTensor).precision(DataType::F32), &mut y)?;
    /// assert_eq!(y, [10002]);
    /// # Ok::<(), qdq_ref::Error>(())
    /// ```
    pub fn precision(self, precision: DataType) -> Self {
        Params { precision: Some(precision), ..self }
    }

    /// The layout.
    ///
    /// ```
    /// use qdq_ref::{Layout, Params};
    /// assert_eq!(Params::per_tensor(1.0).layout(), Layout::PerTensor);
    /// ```
    pub fn layout(&self) -> Layout {
        self.layout
    }

    /// The scales as a view (one element for the per-tensor constructors).
    ///
    /// ```
    /// use qdq_ref::{DataType, Params};
    /// let params = Params::per_tensor(0.5);
    /// assert_eq!((params.scales().dtype(), params.scales().len()), (DataType::F32, 1));
    /// ```
    pub fn scales(&self) -> Values<'_> {
        match &self.scales {
            Scales::One(OneScale::F32(s)) => Values::F32(s),
            Scales::One(OneScale::F16(s)) => Values::F16(s),
            Scales::One(OneScale::Bf16(s)) => Values::Bf16(s),
            Scales::Many(v) => *v,
        }
    }

    /// Whether float8 outputs saturate ([`saturate`](Params::saturate)).
    ///
    /// ```
    /// assert!(qdq_ref::Params::per_tensor(1.0).is_saturating());
    /// ```
    pub fn is_saturating(&self) -> bool {
        self.saturate
    }

    /// The division type set with [`precision`](Params::precision), if any.
    ///
    /// ```
    /// use qdq_ref::{DataType, Params};
    /// assert_eq!(Params::per_tensor(1.0).division_type(), None);
    /// assert_eq!(Params::per_tensor(1.0).precision(DataType::F16).division_type(), Some(DataType::F16));
    /// ```
    pub fn division_type(&self) -> Option<DataType> {
        self.precision
    }

    /// The zero points as a view of type `quantized` (the output type of a quantize, x's
    /// type of a dequantize), or `None` without zero points. A zero point given by value
    /// ([`zero_point`](Params::zero_point)) is checked against the type's range here; a
    /// slice's type is checked by the operator.
    ///
    /// ```
    /// use qdq_ref::{DataType, ErrorKind, Params};
    /// let params = Params::per_tensor(1.0).zero_point(-3);
    /// assert_eq!(params.zero_points_as(DataType::I4)?.unwrap().code(0), 0xd);
    /// let err = params.zero_points_as(DataType::U8).unwrap_err();
    /// assert_eq!(err.kind(), ErrorKind::InvalidArgument);
    /// # Ok::<(), qdq_ref::Error>(())
    /// ```
    pub fn zero_points_as(&self, quantized: DataType) -> Result<Option<Packed<'_>>> {
        let (value, bytes) = match &self.zero_points {
            ZeroPoints::None => return Ok(None),
            ZeroPoints::Many(p) => return Ok(Some(*p)),
            ZeroPoints::One(v, b) => (*v, b),
        };
        if self.layout != Layout::PerTensor {
            bail!(
                ShapeMismatch,
                "zero_point: one zero point given for {} parameters; give one per scale with `zero_points`",
                match self.layout {
                    Layout::PerAxis { .. } => "per-axis",
                    _ => "blocked",
                }
            );
        }
        match quantized.int_range() {
            Some((lo, hi)) if !(lo..=hi).contains(&(value as i64)) => {
                bail!(InvalidArgument, "zero_point {value} is outside the range of {quantized} ({lo} to {hi})")
            }
            None if value != 0 && quantized.is_minifloat() => {
                bail!(NonZeroZeroPoint, "zero_point is {value}: a {quantized} zero point must be zero")
            }
            _ => {}
        }
        // Types without a byte length for one element do not exist; 4 bytes cover i32.
        let len = quantized.byte_len(1).unwrap_or(4).min(4);
        Ok(Some(Packed { dtype: quantized, len: 1, data: &bytes[..len] }))
    }
}
