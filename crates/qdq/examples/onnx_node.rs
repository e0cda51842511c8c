//! Task 6: run ONNX nodes through the tensor API, the way a graph executor does: tensors
//! with shapes, attributes as the node stores them, the operator version (opset), typed
//! outputs.
//!
//! `cargo run -p qdq --example onnx_node`

use qdq::{Attribute, DataType, Opset, QuantizeAttributes, TensorRef};

pub fn main() -> Result<(), qdq::Error> {
    let x = [0.0f32, 0.5, -1.0, 2.0, 3.0, -4.0];
    let scales = [0.5f32, 0.25];

    // --- the task, typed: 4 lines ---
    let attrs = QuantizeAttributes { axis: Some(1), output_dtype: Some(DataType::I8), ..Default::default() };
    let (x_t, s_t) = (TensorRef::new(&[3, 2], &x)?, TensorRef::new(&[2], &scales)?);
    let y = qdq::quantize_linear(Opset::onnx(21), x_t, s_t, None, &attrs)?;
    let q: &[i8] = y.as_slice()?;
    // ---
    println!("QuantizeLinear-21, per-axis (axis 1): {:?} -> {q:?} (shape {:?})", x, y.shape());
    assert_eq!(q, [0, 2, -2, 8, 6, -16]);

    // --- the task, from a graph's raw node: 3 lines ---
    let raw = [Attribute { name: "axis", value: 1 }];
    let inputs = [Some(y.view()), Some(s_t), None];
    let out = qdq::run_node("DequantizeLinear", Opset::onnx(21), &inputs, &raw, 1)?;
    // ---
    println!("DequantizeLinear-21 back: {:?}", out[0].as_slice::<f32>()?);
    assert_eq!(out[0].as_slice::<f32>()?, x);

    // A zero point of the wrong type is a typed error naming the input.
    let zp = [10u8, 20];
    let bad = [Some(y.view()), Some(s_t), Some(TensorRef::new(&[2], &zp)?)];
    let err = qdq::run_node("DequantizeLinear", Opset::onnx(21), &bad, &raw, 1).unwrap_err();
    println!("error ({:?}): {err}", err.kind());
    Ok(())
}
