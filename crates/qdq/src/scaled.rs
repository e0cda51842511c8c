//! Quantizers that compute their own scales: per-row dynamic quantization of activations,
//! blockwise quantization of weights (symmetric, asymmetric, onnxruntime-compatible), OCP
//! Microscaling (MXFP8, MXFP6, MXFP4, MXINT8) and NVFP4.
//!
//! The same functions as [`qdq_ref::scaled`], whose documentation states every formula and
//! edge case, vectorised and threaded, with bit-identical results on every ISA and thread
//! count. Each writes y, the scales and the zero points into caller buffers, allocates
//! nothing, and its outputs feed DequantizeLinear unchanged:
//!
//! | function | y | scales | zero points | DequantizeLinear |
//! |---|---|---|---|---|
//! | [`quantize_rows`] | u8, i8, float8e4m3fn `[rows, cols]` | f32 `[rows]` | u8 `[rows]` (u8 y only) | per-axis, axis 0 |
//! | [`quantize_blockwise`] | int8 / uint8 / int4 / uint4 / int2 / uint2, x's shape | f32, f16 or bf16, blocked shape | y's type, blocked shape | blocked, `block_size = B` |
//! | [`quantize_mx`] | e4m3fn, e5m2, e2m3, e3m2, e2m1, int8 | e8m0, blocked shape | – | blocked, opset 24+ |
//! | [`quantize_nvfp4`] | e2m1 | e4m3fn, blocked shape, times a global f32 scale | – | two nodes (see the function) |
//!
//! ```
//! use qdq::scaled::{quantize_blockwise, BlockMode};
//! use qdq::{DataType, Layout, PackedMut, Params};
//!
//! // A [4, 2] weight, int4 blocks of 2 along axis 0, symmetric.
//! let w = [0.5f32, 1.0, -1.0, 2.0, 3.5, 0.0, 7.0, -0.25];
//! let layout = Layout::blocked(&[4, 2], 0, 2)?;
//! let (mut q, mut scales) = ([0u8; 4], [0f32; 4]);
//! quantize_blockwise(&w, layout, BlockMode::Symmetric, PackedMut::new(DataType::I4, &mut q), &mut scales, None)?;
//! assert_eq!(scales, [1.0 / 7.0, 2.0 / 7.0, 1.0, 0.25 / 7.0]);
//!
//! // The outputs are a blocked DequantizeLinear's inputs.
//! let mut back = [0f32; 8];
//! let params = Params::blocked(&scales, &[4, 2], 0, 2)?;
//! qdq::dequantize(qdq::Packed::new(DataType::I4, 8, &q)?, &params, &mut back)?;
//! assert_eq!(back[6], 7.0);
//! # Ok::<(), qdq::Error>(())
//! ```

use crate::isa::fpenv::scoped;
use crate::quantize::Src;
use crate::scaled_kernels::{self as k, Rule};
use crate::Config;
use qdq_ref::element::bytes_of_mut;
use qdq_ref::scaled as r;
use qdq_ref::{DataType, Float8E4M3Fn, Float8E8M0, Layout, PackedMut, Result, TensorRef, Values, ValuesMut};

pub use qdq_ref::scaled::{BlockMode, Rows, ScaleRounding, Scaled, ScaledBackend, Scheme};

/// Per-row dynamic quantization of `x` (`rows.rows` rows of `rows.cols` elements, row `r`
/// from element `r * rows.stride`) into y `[rows, cols]`: per row, a scale (and for u8 a
/// zero point) from the row's range, then QuantizeLinear with them. y's type picks the
/// rule:
///
/// * u8: DynamicQuantizeLinear-11 of each row alone, bit for bit (`zero_points` required);
/// * i8: symmetric, `s = amax / 127`, zero point 0 (`zero_points` must be `None`);
/// * float8e4m3fn: `s = amax / 448`, saturating (`zero_points` must be `None`).
///
/// A row without a nonzero element gets scale 1 (u8: DynamicQuantizeLinear's 0), a row
/// with ±inf the largest f32; NaN elements are ignored by the statistics. x is f32, f16
/// or bf16. The scales feed DequantizeLinear per-axis along axis 0.
///
/// ```
/// use qdq::scaled::{quantize_rows, Rows};
/// let x = [1.0f32, -2.0, 0.5, 4.0, 2.0, -1.0];
/// let (mut y, mut scales, mut zps) = ([0u8; 6], [0f32; 2], [0u8; 2]);
/// quantize_rows(&x, Rows::new(2, 3), &mut y, &mut scales, Some(&mut zps))?;
/// assert_eq!((scales, zps), ([3.0 / 255.0, 5.0 / 255.0], [170, 51]));
/// assert_eq!(y, [255, 0, 212, 255, 153, 0]);
/// # Ok::<(), qdq::Error>(())
/// ```
pub fn quantize_rows<'x, 'y>(
    x: impl Into<Values<'x>>,
    rows: Rows,
    y: impl Into<PackedMut<'y>>,
    scales: &mut [f32],
    zero_points: Option<&mut [u8]>,
) -> Result<()> {
    quantize_rows_with(&Config::default(), x, rows, y, scales, zero_points)
}

/// [`quantize_rows`] with an explicit [`Config`] (ISA, threads: rows are split over
/// them).
///
/// ```
/// use qdq::{scaled::{quantize_rows_with, Rows}, Config, Float8E4M3Fn};
/// let (mut y, mut scales) = ([Float8E4M3Fn(0); 2], [0f32; 1]);
/// quantize_rows_with(&Config::sequential(), &[896.0f32, -1.0], Rows::new(1, 2), &mut y, &mut scales, None)?;
/// assert_eq!((scales[0], y[0].to_f32(), y[1].to_f32()), (2.0, 448.0, -0.5));
/// # Ok::<(), qdq::Error>(())
/// ```
pub fn quantize_rows_with<'x, 'y>(
    cfg: &Config,
    x: impl Into<Values<'x>>,
    rows: Rows,
    y: impl Into<PackedMut<'y>>,
    scales: &mut [f32],
    zero_points: Option<&mut [u8]>,
) -> Result<()> {
    let (x, y) = (x.into(), y.into());
    scoped(|| {
        r::check_rows(&x, rows, &y, scales.len(), zero_points.as_ref().map(|z| z.len()))?;
        let isa = cfg.resolve_isa()?;
        k::rows(cfg, isa, x.dtype(), x.bytes(), rows, y.dtype, y.data, scales, zero_points);
        Ok(())
    })
}

/// Blockwise quantization with computed scales: blocks of `B` consecutive indices along
/// one axis of x (`layout`, from [`Layout::blocked`]; the last block of the axis may be
/// shorter), y packed in x's shape, and per block a scale (f32, f16 or bf16: `scales`'s
/// type) and zero point (y's type) in the blocked scale shape, `ceil(D / B)` at the axis.
///
/// * [`BlockMode::Symmetric`]: scale `amax / qmax'` (int4: 7), zero point 0 (signed y) or
///   the midpoint (unsigned y: 8 for uint4);
/// * [`BlockMode::Asymmetric`]: scale `(hi - lo) / (qmax - qmin)` with the range including
///   0, zero point `round(qmin - lo / s)`;
/// * [`BlockMode::Onnxruntime`]: onnxruntime's `MlasQDQQuantizeBlockwise` (its Python
///   `quantize_qdq_matmul_4bits`) bit for bit: int4 y symmetric, uint4 y asymmetric, f32 x
///   and scales.
///
/// `zero_points` may be `None` only for signed y in a symmetric mode (their zero points
/// are 0). y is then exactly QuantizeLinear of x with the stored scales and zero points
/// (the onnxruntime mode: its own element rule), so `Params::blocked(scales, shape, axis,
/// B)` dequantizes it. [`qdq_ref::scaled`] states every edge case (all-zero blocks, NaN,
/// ±inf, scales that underflow or overflow the scale type).
///
/// ```
/// use qdq::scaled::{quantize_blockwise, BlockMode};
/// use qdq::{DataType, Layout, PackedMut};
/// let w = [-1.0f32, 2.0, 0.5, 14.0];
/// let (mut q, mut s, mut z) = ([0u8; 2], [qdq::f16::ZERO; 1], [0u8; 1]);
/// let layout = Layout::blocked(&[4], 0, 4)?;
/// quantize_blockwise(&w, layout, BlockMode::Asymmetric, PackedMut::new(DataType::U4, &mut q), &mut s,
///                    Some(PackedMut::new(DataType::U4, &mut z)))?;
/// assert_eq!((s[0].to_f32(), z[0]), (1.0, 1));
/// assert_eq!(q, [0x30, 0xf1]); // 0, 3, 1 (0.5 rounds to 0, ties to even; plus 1), 15
/// # Ok::<(), qdq::Error>(())
/// ```
pub fn quantize_blockwise<'x, 'y, 's>(
    x: impl Into<Values<'x>>,
    layout: Layout,
    mode: BlockMode,
    y: impl Into<PackedMut<'y>>,
    scales: impl Into<ValuesMut<'s>>,
    zero_points: Option<PackedMut<'_>>,
) -> Result<()> {
    quantize_blockwise_with(&Config::default(), x, layout, mode, y, scales, zero_points)
}

/// [`quantize_blockwise`] with an explicit [`Config`].
///
/// ```
/// use qdq::{scaled::{quantize_blockwise_with, BlockMode}, Config, DataType, Layout, PackedMut};
/// let (mut q, mut s) = ([0u8; 1], [0f32; 1]);
/// quantize_blockwise_with(&Config::sequential(), &[-4.0f32, 1.0, 2.0, 3.0], Layout::blocked(&[4], 0, 4)?,
///                         BlockMode::Onnxruntime, PackedMut::new(DataType::I4, &mut q[..]), &mut s, None)
///     .unwrap_err(); // y needs 2 bytes for 4 int4 values
/// let mut q = [0u8; 2];
/// quantize_blockwise_with(&Config::sequential(), &[-4.0f32, 1.0, 2.0, 3.0], Layout::blocked(&[4], 0, 4)?,
///                         BlockMode::Onnxruntime, PackedMut::new(DataType::I4, &mut q), &mut s, None)?;
/// assert_eq!(s[0], 0.5); // -(-4) / 8: the largest magnitude maps to -8
/// assert_eq!(q, [0x28, 0x64]); // -8, 2, 4, 6: x * (1 / s)
/// # Ok::<(), qdq::Error>(())
/// ```
pub fn quantize_blockwise_with<'x, 'y, 's>(
    cfg: &Config,
    x: impl Into<Values<'x>>,
    layout: Layout,
    mode: BlockMode,
    y: impl Into<PackedMut<'y>>,
    scales: impl Into<ValuesMut<'s>>,
    zero_points: Option<PackedMut<'_>>,
) -> Result<()> {
    let (x, y, mut scales) = (x.into(), y.into(), scales.into());
    let mut zero_points = zero_points;
    scoped(|| {
        let zinfo = zero_points.as_ref().map(|z| (z.dtype, z.data.len()));
        let st = (scales.dtype(), scales.len());
        r::check_blockwise(&x, layout, mode, &y, st, zinfo)?;
        let isa = cfg.resolve_isa()?;
        let rule = Rule::Block { mode, scale_type: scales.dtype() };
        let zp = zero_points.as_mut().map(|z| &mut *z.data);
        k::blocks(cfg, isa, rule, x.dtype(), x.bytes(), layout, y.dtype, y.data, scales.bytes_mut(), zp);
        Ok(())
    })
}

/// OCP Microscaling (MX v1.0) quantization: blocks of `B` (32 in the spec) along one axis
/// share an e8m0 scale `2^e`, `e = floor(log2(amax)) - emax` with [`ScaleRounding::Floor`]
/// (the spec's rule; `Ceil` and `NearestEven` as NVIDIA and torchao), and the elements are
/// `x / 2^e` rounded to nearest-even and saturated to y's type: float8e4m3fn / float8e5m2
/// (MXFP8), float6e2m3 / float6e3m2 (MXFP6), float4e2m1 (MXFP4) or int8 (MXINT8, whose
/// stored scale already includes the implicit `2^-6`). A block holding NaN or ±inf gets
/// the NaN scale `0xff`; an all-zero block `2^-127`. The outputs feed DequantizeLinear-24+
/// blocked with e8m0 scales.
///
/// ```
/// use qdq::scaled::{quantize_mx, ScaleRounding};
/// use qdq::{DataType, Float8E8M0, Layout, PackedMut};
/// let x: Vec<f32> = (0..32).map(|i| i as f32 - 16.0).collect();
/// let (mut y, mut s) = ([0u8; 16], [Float8E8M0(0); 1]);
/// quantize_mx(&x, Layout::blocked(&[32], 0, 32)?, ScaleRounding::Floor, PackedMut::new(DataType::E2M1, &mut y), &mut s)?;
/// assert_eq!(s[0].to_f32(), 4.0); // floor(log2 16) - 2
/// assert_eq!(y[0], 0xee); // -16 / 4 = -4, and -15 / 4 = -3.75 rounds to -4
/// # Ok::<(), qdq::Error>(())
/// ```
pub fn quantize_mx<'x, 'y>(
    x: impl Into<Values<'x>>,
    layout: Layout,
    rounding: ScaleRounding,
    y: impl Into<PackedMut<'y>>,
    scales: &mut [Float8E8M0],
) -> Result<()> {
    quantize_mx_with(&Config::default(), x, layout, rounding, y, scales)
}

/// [`quantize_mx`] with an explicit [`Config`].
///
/// ```
/// use qdq::scaled::{quantize_mx_with, ScaleRounding};
/// use qdq::{Config, Float8E8M0, Layout};
/// let (mut y, mut s) = ([0i8; 2], [Float8E8M0(0); 1]);
/// quantize_mx_with(&Config::sequential(), &[1.0f32, -0.5], Layout::blocked(&[2], 0, 32)?, ScaleRounding::Floor,
///                  &mut y, &mut s)?;
/// assert_eq!((s[0].to_f32(), y), (1.0 / 64.0, [64, -32])); // MXINT8: 1.0 is 64 * 2^-6
/// # Ok::<(), qdq::Error>(())
/// ```
pub fn quantize_mx_with<'x, 'y>(
    cfg: &Config,
    x: impl Into<Values<'x>>,
    layout: Layout,
    rounding: ScaleRounding,
    y: impl Into<PackedMut<'y>>,
    scales: &mut [Float8E8M0],
) -> Result<()> {
    let (x, y) = (x.into(), y.into());
    scoped(|| {
        r::check_mx(&x, layout, &y, scales.len())?;
        let isa = cfg.resolve_isa()?;
        let rule = Rule::Mx { rounding };
        k::blocks(cfg, isa, rule, x.dtype(), x.bytes(), layout, y.dtype, y.data, bytes_of_mut(scales), None);
        Ok(())
    })
}

/// The NVFP4 global scale of x: `amax / 2688` (448 * 6, NVIDIA ModelOpt's convention), or
/// 1.0 when x's largest magnitude is 0, NaN or infinite.
///
/// ```
/// assert_eq!(qdq::scaled::nvfp4_global_scale(&[1.0f32, -5376.0])?, 2.0);
/// # Ok::<(), qdq::Error>(())
/// ```
pub fn nvfp4_global_scale<'x>(x: impl Into<Values<'x>>) -> Result<f32> {
    nvfp4_global_scale_with(&Config::default(), x)
}

/// [`nvfp4_global_scale`] with an explicit [`Config`].
///
/// ```
/// let g = qdq::scaled::nvfp4_global_scale_with(&qdq::Config::sequential(), &[qdq::f16::from_f32(-26.88)])?;
/// assert_eq!(g, qdq::f16::from_f32(-26.88).to_f32().abs() / 2688.0);
/// # Ok::<(), qdq::Error>(())
/// ```
pub fn nvfp4_global_scale_with<'x>(cfg: &Config, x: impl Into<Values<'x>>) -> Result<f32> {
    let x = x.into();
    scoped(|| {
        let Some(src) = Src::of(x.dtype()).filter(|_| x.dtype().is_wide_float()) else {
            return Err(qdq_ref::Error::new(
                qdq_ref::ErrorKind::UnsupportedType,
                format!("x has type {}; the NVFP4 global scale takes f32, f16 or bf16", x.dtype()),
            ));
        };
        let isa = cfg.resolve_isa()?;
        let amax = k::abs_max(cfg, isa, src, x.bytes());
        Ok(r::nvfp4_global_scale_of(amax))
    })
}

/// NVFP4 quantization: e2m1 y in x's shape, and per block (16 along the last axis in
/// NVIDIA's format) an e4m3fn scale relative to the f32 `global_scale` (see
/// [`nvfp4_global_scale`]): `sb = e4m3(amax / (6 * g))`, y = `e2m1(x / f32(sb * g))`.
///
/// The outputs dequantize through two DequantizeLinear nodes, as such models appear in
/// ONNX: `sb` with scale `g` gives the f32 block scales, then y with those (blocked,
/// `block_size = B`) gives the values.
///
/// ```
/// use qdq::scaled::{nvfp4_global_scale, quantize_nvfp4};
/// use qdq::{DataType, Float8E4M3Fn, Layout, PackedMut, Params};
/// let x = [3.0f32, -1.0, 0.25, 12.0];
/// let g = nvfp4_global_scale(&x)?;
/// let (mut y, mut sb) = ([0u8; 2], [Float8E4M3Fn(0); 1]);
/// let layout = Layout::blocked(&[4], 0, 16)?;
/// quantize_nvfp4(&x, layout, g, PackedMut::new(DataType::E2M1, &mut y), &mut sb)?;
/// // DequantizeLinear #1: block scales in f32.
/// let mut d = [0f32; 1];
/// qdq::dequantize(&sb, &Params::per_tensor(g), &mut d)?;
/// // DequantizeLinear #2: the values.
/// let mut back = [0f32; 4];
/// qdq::dequantize(qdq::Packed::new(DataType::E2M1, 4, &y)?, &Params::blocked(&d, &[4], 0, 16)?, &mut back)?;
/// assert_eq!(back, [3.0, -1.0, 0.0, 12.0]); // 0.25 / 2 rounds to 0
/// # Ok::<(), qdq::Error>(())
/// ```
pub fn quantize_nvfp4<'x, 'y>(
    x: impl Into<Values<'x>>,
    layout: Layout,
    global_scale: f32,
    y: impl Into<PackedMut<'y>>,
    scales: &mut [Float8E4M3Fn],
) -> Result<()> {
    quantize_nvfp4_with(&Config::default(), x, layout, global_scale, y, scales)
}

/// [`quantize_nvfp4`] with an explicit [`Config`].
///
/// ```
/// use qdq::{scaled::quantize_nvfp4_with, Config, DataType, Float8E4M3Fn, Layout, PackedMut};
/// let (mut y, mut sb) = ([0u8; 1], [Float8E4M3Fn(0); 1]);
/// quantize_nvfp4_with(&Config::sequential(), &[0.0f32, 0.0], Layout::blocked(&[2], 0, 16)?, 1.0,
///                     PackedMut::new(DataType::E2M1, &mut y), &mut sb)?;
/// assert_eq!((sb[0].to_f32(), y[0]), (1.0, 0)); // an all-zero block: scale 1.0
/// # Ok::<(), qdq::Error>(())
/// ```
pub fn quantize_nvfp4_with<'x, 'y>(
    cfg: &Config,
    x: impl Into<Values<'x>>,
    layout: Layout,
    global_scale: f32,
    y: impl Into<PackedMut<'y>>,
    scales: &mut [Float8E4M3Fn],
) -> Result<()> {
    let (x, y) = (x.into(), y.into());
    scoped(|| {
        r::check_nvfp4(&x, layout, global_scale, &y, scales.len())?;
        let isa = cfg.resolve_isa()?;
        let rule = Rule::Nvfp4 { global: global_scale };
        k::blocks(cfg, isa, rule, x.dtype(), x.bytes(), layout, y.dtype, y.data, bytes_of_mut(scales), None);
        Ok(())
    })
}

impl ScaledBackend for crate::Fast<'_> {
    fn rows(
        &self,
        x: Values<'_>,
        rows: Rows,
        y: PackedMut<'_>,
        scales: &mut [f32],
        zero_points: Option<&mut [u8]>,
    ) -> Result<()> {
        quantize_rows_with(&self.0, x, rows, y, scales, zero_points)
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
        quantize_blockwise_with(&self.0, x, layout, mode, y, scales, zero_points)
    }

    fn mx(
        &self,
        x: Values<'_>,
        layout: Layout,
        rounding: ScaleRounding,
        y: PackedMut<'_>,
        scales: &mut [Float8E8M0],
    ) -> Result<()> {
        quantize_mx_with(&self.0, x, layout, rounding, y, scales)
    }

    fn nvfp4_global_scale(&self, x: Values<'_>) -> Result<f32> {
        nvfp4_global_scale_with(&self.0, x)
    }

    fn nvfp4(
        &self,
        x: Values<'_>,
        layout: Layout,
        global_scale: f32,
        y: PackedMut<'_>,
        scales: &mut [Float8E4M3Fn],
    ) -> Result<()> {
        quantize_nvfp4_with(&self.0, x, layout, global_scale, y, scales)
    }
}

/// The scale-computing quantizers at tensor level: x (f32, f16 or bf16, any shape; 2-D
/// for [`Scheme::Rows`]), the output type, the blocks' axis and size, and the
/// [`Scheme`]; returns y, the scale tensor and the zero-point tensor as DequantizeLinear
/// takes them (see [`qdq_ref::scaled::quantize_scaled`]).
///
/// ```
/// use qdq::scaled::{quantize_scaled, ScaleRounding, Scheme};
/// use qdq::{DataType, TensorRef};
/// let x: Vec<f32> = (0..64).map(|i| i as f32 / 8.0).collect();
/// let out = quantize_scaled(TensorRef::new(&[2, 32], &x)?, DataType::E4M3Fn, -1, 32,
///                           Scheme::Mx { rounding: ScaleRounding::Floor })?;
/// assert_eq!((out.scale.dtype(), out.scale.shape()), (DataType::E8M0, &[2usize, 1][..]));
/// assert_eq!(out.scale.bytes(), [120, 121]); // 2^(floor(log2 3.875) - 8), 2^(floor(log2 7.875) - 8)
/// # Ok::<(), qdq::Error>(())
/// ```
pub fn quantize_scaled(
    x: TensorRef<'_>,
    output: DataType,
    axis: i64,
    block_size: usize,
    scheme: Scheme,
) -> Result<Scaled> {
    quantize_scaled_with(&Config::default(), x, output, axis, block_size, scheme)
}

/// [`quantize_scaled`] with an explicit [`Config`].
///
/// ```
/// use qdq::scaled::{quantize_scaled_with, Scheme};
/// use qdq::{Config, DataType, TensorRef};
/// let x = [3.0f32, -1.0, 0.25, 12.0];
/// let out = quantize_scaled_with(&Config::sequential(), TensorRef::new(&[1, 4], &x)?, DataType::E2M1, 1, 16,
///                                Scheme::Nvfp4 { global_scale: None })?;
/// assert_eq!(out.global_scale, Some(12.0 / 2688.0));
/// assert_eq!((out.scale.bytes(), out.y.bytes()), (&[0x7e][..], &[0x93, 0x70][..]));
/// # Ok::<(), qdq::Error>(())
/// ```
pub fn quantize_scaled_with(
    cfg: &Config,
    x: TensorRef<'_>,
    output: DataType,
    axis: i64,
    block_size: usize,
    scheme: Scheme,
) -> Result<Scaled> {
    qdq_ref::scaled::quantize_scaled_with(&crate::Fast(*cfg), x, output, axis, block_size, scheme)
}
