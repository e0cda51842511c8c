//! The tensor-level API on the SIMD backend: [`Fast`] executes the plans `qdq_ref`
//! validates (opset rules, shapes, attributes), and the `*_linear` / `run_node` functions
//! are `qdq_ref`'s with that backend.

use crate::isa::fpenv::scoped;
use crate::{dequantize_core, dynamic, quantize_core, Config};
use qdq_ref::{
    Attribute, DequantizeAttributes, DequantizePlan, DynamicQuantized, Opset, QuantizeAttributes, QuantizePlan, Result,
    Tensor, TensorRef,
};

/// The SIMD backend for the tensor-level API (executes [`qdq_ref`]'s validated plans).
#[derive(Clone, Copy, Debug, Default)]
pub struct Fast<'p>(pub Config<'p>);

/// Each method runs under the default floating-point environment (`isa::fpenv`): `qdq_ref`'s
/// `*_with` functions may call it from a caller's thread in any state.
impl qdq_ref::Backend for Fast<'_> {
    /// An ISA this CPU lacks is an error (never a silent fallback to the reference).
    fn quantize(&self, plan: &QuantizePlan<'_>, y: &mut [u8]) -> Result<()> {
        scoped(|| quantize_core(&self.0, plan, 0..plan.len, y))
    }

    fn dequantize(&self, plan: &DequantizePlan<'_>, y: &mut [u8]) -> Result<()> {
        scoped(|| dequantize_core(&self.0, plan, 0..plan.x.len, y))
    }

    fn dynamic_quantize(&self, x: &[u8], y: &mut [u8]) -> Result<(f32, u8)> {
        scoped(|| dynamic::run(&self.0, x, y))
    }
}

/// QuantizeLinear at an opset, on the SIMD backend: the node's inputs as tensors, its
/// attributes, the opset of its domain. Every per-version rule of the ONNX schema is
/// enforced (types, attributes, shapes, which layouts a version allows); the layout comes
/// from the shapes (a scalar or `[1]` scale is per-tensor, a 1-D scale per-axis along
/// `axis`, a scale of x's rank with `block_size > 0` blocked). The output type is
/// `output_dtype`, else the zero point's type, else u8. Same results and errors as
/// [`qdq_ref::quantize_linear`].
///
/// ```
/// use qdq::{DataType, Opset, QuantizeAttributes, TensorRef};
/// let x = TensorRef::new(&[2, 2], &[1.0f32, 2.0, 3.0, 4.0])?;
/// let scale = TensorRef::scalar(&0.5f32);
/// let attrs = QuantizeAttributes { output_dtype: Some(DataType::I4), ..Default::default() };
/// let y = qdq::quantize_linear(Opset::onnx(21), x, scale, None, &attrs)?;
/// assert_eq!((y.dtype(), y.bytes()), (DataType::I4, &[0x42, 0x76][..])); // 2, 4, 6, 7 (saturated)
/// # Ok::<(), qdq::Error>(())
/// ```
pub fn quantize_linear(
    opset: Opset,
    x: TensorRef<'_>,
    scale: TensorRef<'_>,
    zero_point: Option<TensorRef<'_>>,
    attrs: &QuantizeAttributes,
) -> Result<Tensor> {
    scoped(|| qdq_ref::tensor::quantize_linear_with(&Fast::default(), opset, x, scale, zero_point, attrs))
}

/// DequantizeLinear at an opset, on the SIMD backend: as [`quantize_linear`] for inputs,
/// attributes and layouts; the zero point must have x's type, and the output type is
/// `output_dtype`, else the scale's type (f32, f16 or bf16; an e8m0 scale needs
/// `output_dtype`). Same results and errors as [`qdq_ref::dequantize_linear`].
///
/// ```
/// use qdq::{DequantizeAttributes, Opset, TensorRef};
/// let x = TensorRef::new(&[3], &[0u8, 128, 255])?;
/// let (scale, zero_point) = (TensorRef::scalar(&0.5f32), TensorRef::scalar(&128u8));
/// let y = qdq::dequantize_linear(Opset::onnx(13), x, scale, Some(zero_point), &DequantizeAttributes::default())?;
/// assert_eq!(y.as_slice::<f32>()?, [-64.0, 0.0, 63.5]);
/// # Ok::<(), qdq::Error>(())
/// ```
pub fn dequantize_linear(
    opset: Opset,
    x: TensorRef<'_>,
    scale: TensorRef<'_>,
    zero_point: Option<TensorRef<'_>>,
    attrs: &DequantizeAttributes,
) -> Result<Tensor> {
    scoped(|| qdq_ref::tensor::dequantize_linear_with(&Fast::default(), opset, x, scale, zero_point, attrs))
}

/// DynamicQuantizeLinear (opset 11 and later) on the SIMD backend: u8 `y` with the scale
/// and zero point computed from x's range (see [`dynamic_quantize`](crate::dynamic_quantize)),
/// returned typed. Same results as [`qdq_ref::dynamic_quantize_linear`].
///
/// ```
/// use qdq::{Opset, TensorRef};
/// let out = qdq::dynamic_quantize_linear(Opset::onnx(11), TensorRef::new(&[3], &[-1.0f32, 0.0, 1.55])?)?;
/// assert_eq!((out.y_scale, out.y_zero_point), (0.01, 100));
/// assert_eq!(out.y.as_slice::<u8>()?, [0, 100, 255]);
/// # Ok::<(), qdq::Error>(())
/// ```
pub fn dynamic_quantize_linear(opset: Opset, x: TensorRef<'_>) -> Result<DynamicQuantized> {
    scoped(|| qdq_ref::tensor::dynamic_quantize_linear_with(&Fast::default(), opset, x))
}

/// Runs a node as a graph executor holds it, on the SIMD backend: the operator type
/// (`QuantizeLinear`, `DequantizeLinear` or `DynamicQuantizeLinear`), the opset of its
/// domain, its inputs (`None` for an omitted optional input), its raw integer attributes
/// and the number of outputs it declares; returns the outputs (DynamicQuantizeLinear's
/// scale and zero point as scalars). Unknown or repeated attributes, attributes the version
/// does not define, and wrong input or output counts are errors. Same results and errors
/// as [`qdq_ref::run_node`].
///
/// ```
/// use qdq::{Attribute, Opset, TensorRef};
/// let x = TensorRef::new(&[2], &[1.0f32, -1.0])?;
/// let scale = TensorRef::scalar(&0.25f32);
/// let attrs = [Attribute { name: "output_dtype", value: 3 }]; // INT8
/// let out = qdq::run_node("QuantizeLinear", Opset::onnx(21), &[Some(x), Some(scale)], &attrs, 1)?;
/// assert_eq!(out[0].as_slice::<i8>()?, [4, -4]);
/// # Ok::<(), qdq::Error>(())
/// ```
pub fn run_node(
    op_type: &str,
    opset: Opset,
    inputs: &[Option<TensorRef<'_>>],
    attributes: &[Attribute<'_>],
    num_outputs: usize,
) -> Result<Vec<Tensor>> {
    run_node_with(&Config::default(), op_type, opset, inputs, attributes, num_outputs)
}

/// [`run_node`] with an explicit [`Config`].
///
/// ```
/// use qdq::{Config, Opset, TensorRef};
/// let x = TensorRef::new(&[2], &[0.0f32, 2.55])?;
/// let out = qdq::run_node_with(&Config::sequential(), "DynamicQuantizeLinear", Opset::onnx(11), &[Some(x)], &[], 3)?;
/// assert_eq!((out[0].as_slice::<u8>()?, out[1].to_scalar::<f32>()?), (&[0u8, 255][..], 0.01));
/// # Ok::<(), qdq::Error>(())
/// ```
pub fn run_node_with(
    cfg: &Config,
    op_type: &str,
    opset: Opset,
    inputs: &[Option<TensorRef<'_>>],
    attributes: &[Attribute<'_>],
    num_outputs: usize,
) -> Result<Vec<Tensor>> {
    scoped(|| qdq_ref::tensor::run_node_with(&Fast(*cfg), op_type, opset, inputs, attributes, num_outputs))
}
