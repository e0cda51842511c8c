//! Helpers shared by the integration tests: owned tensors built from plain values.
#![allow(dead_code)]

use qdq_ref::float::FloatFormat;
use qdq_ref::{packing, DataType, Tensor};

/// An f32 tensor.
pub fn f32s(shape: &[usize], v: &[f32]) -> Tensor {
    Tensor::new(DataType::F32, shape.to_vec(), &v.iter().flat_map(|x| x.to_le_bytes()).collect::<Vec<u8>>()).unwrap()
}

/// An f32 scalar.
pub fn f32_scalar(v: f32) -> Tensor {
    f32s(&[], &[v])
}

/// An i32 tensor.
pub fn i32s(shape: &[usize], v: &[i32]) -> Tensor {
    Tensor::new(DataType::I32, shape.to_vec(), &v.iter().flat_map(|x| x.to_le_bytes()).collect::<Vec<u8>>()).unwrap()
}

/// An f16 or bf16 tensor from f64 values (rounded RNE).
pub fn half(t: DataType, shape: &[usize], v: &[f64]) -> Tensor {
    let fmt = FloatFormat::of(t).unwrap();
    Tensor::new(
        t,
        shape.to_vec(),
        &v.iter().flat_map(|x| (fmt.encode(*x, false) as u16).to_le_bytes()).collect::<Vec<u8>>(),
    )
    .unwrap()
}

/// An integer-typed tensor (any quantized int type or i32) from values.
pub fn ints(t: DataType, shape: &[usize], v: &[i64]) -> Tensor {
    let mut data = vec![0u8; t.byte_len(v.len()).unwrap()];
    for (i, x) in v.iter().enumerate() {
        packing::set_int(t, &mut data, i, *x);
    }
    Tensor::new(t, shape.to_vec(), &data).unwrap()
}

/// A tensor of raw codes.
pub fn codes(t: DataType, shape: &[usize], v: &[u32]) -> Tensor {
    let mut data = vec![0u8; t.byte_len(v.len()).unwrap()];
    for (i, x) in v.iter().enumerate() {
        packing::set(t, &mut data, i, *x);
    }
    Tensor::new(t, shape.to_vec(), &data).unwrap()
}

/// Element values of an integer tensor.
pub fn int_values(t: &Tensor) -> Vec<i64> {
    (0..t.len()).map(|i| packing::get_int(t.dtype(), t.bytes(), i)).collect()
}

/// Raw codes of a tensor.
pub fn code_values(t: &Tensor) -> Vec<u32> {
    (0..t.len()).map(|i| packing::get(t.dtype(), t.bytes(), i)).collect()
}

/// Values of an f32 / f16 / bf16 tensor as f64.
pub fn float_values(t: &Tensor) -> Vec<f64> {
    match t.dtype() {
        DataType::F32 => t.bytes().chunks(4).map(|c| f32::from_le_bytes([c[0], c[1], c[2], c[3]]) as f64).collect(),
        other => {
            let fmt = FloatFormat::of(other).unwrap();
            (0..t.len()).map(|i| fmt.decode(packing::get(other, t.bytes(), i))).collect()
        }
    }
}

/// Bitwise float comparison, NaN payloads included.
pub fn assert_same_floats(got: &[f64], want: &[f64]) {
    assert_eq!(got.len(), want.len());
    for (i, (g, w)) in got.iter().zip(want).enumerate() {
        assert!(
            g.to_bits() == w.to_bits(),
            "element {i}: got {g:e} ({:#x}), want {w:e} ({:#x})",
            g.to_bits(),
            w.to_bits()
        );
    }
}
