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
pub struct Fast(pub Config);

/// Each method runs under the default floating-point environment (`isa::fpenv`): `qdq_ref`'s
/// `*_with` functions may call it from a caller's thread in any state.
impl qdq_ref::Backend for Fast {
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

/// QuantizeLinear at an opset (see [`qdq_ref::quantize_linear`]), on the SIMD backend.
pub fn quantize_linear(
    opset: Opset,
    x: TensorRef<'_>,
    scale: TensorRef<'_>,
    zero_point: Option<TensorRef<'_>>,
    attrs: &QuantizeAttributes,
) -> Result<Tensor> {
    scoped(|| qdq_ref::tensor::quantize_linear_with(&Fast::default(), opset, x, scale, zero_point, attrs))
}

/// DequantizeLinear at an opset (see [`qdq_ref::dequantize_linear`]), on the SIMD backend.
pub fn dequantize_linear(
    opset: Opset,
    x: TensorRef<'_>,
    scale: TensorRef<'_>,
    zero_point: Option<TensorRef<'_>>,
    attrs: &DequantizeAttributes,
) -> Result<Tensor> {
    scoped(|| qdq_ref::tensor::dequantize_linear_with(&Fast::default(), opset, x, scale, zero_point, attrs))
}

/// DynamicQuantizeLinear (see [`qdq_ref::dynamic_quantize_linear`]), on the SIMD backend.
pub fn dynamic_quantize_linear(opset: Opset, x: TensorRef<'_>) -> Result<DynamicQuantized> {
    scoped(|| qdq_ref::tensor::dynamic_quantize_linear_with(&Fast::default(), opset, x))
}

/// Runs a node (see [`qdq_ref::run_node`]) on the SIMD backend.
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
