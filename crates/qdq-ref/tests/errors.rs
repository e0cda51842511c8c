//! Every error condition of the README's "Errors" section (and the bad-input rules): each returns
//! a typed error whose message names the offending input or attribute.

mod common;
use common::*;
use qdq_ref::{
    dequantize, dequantize_linear, dynamic_quantize, dynamic_quantize_linear, quantize, quantize_linear, run_node,
    Attribute, DataType, DequantizeAttributes, ErrorKind, Float8E4M3Fn, Float8E8M0, Layout, Opset, Packed, PackedMut,
    Params, QuantizeAttributes, Tensor, TensorRef, Values,
};

fn q_err(opset: Opset, x: &Tensor, s: &Tensor, zp: Option<&Tensor>, a: QuantizeAttributes) -> (ErrorKind, String) {
    let e = quantize_linear(opset, x.view(), s.view(), zp.map(|z| z.view()), &a).unwrap_err();
    (e.kind(), e.message().to_string())
}

fn dq_err(opset: Opset, x: &Tensor, s: &Tensor, zp: Option<&Tensor>, a: DequantizeAttributes) -> (ErrorKind, String) {
    let e = dequantize_linear(opset, x.view(), s.view(), zp.map(|z| z.view()), &a).unwrap_err();
    (e.kind(), e.message().to_string())
}

fn expect(got: (ErrorKind, String), kind: ErrorKind, needle: &str) {
    assert_eq!(got.0, kind, "{}", got.1);
    assert!(got.1.contains(needle), "message {:?} should mention {needle:?}", got.1);
}

fn x34() -> Tensor {
    f32s(&[3, 4], &[1.0; 12])
}

fn one() -> Tensor {
    f32_scalar(1.0)
}

const V25: Opset = Opset::onnx(25);

#[test]
fn quantize_output_dtype_rules() {
    let zp = ints(DataType::U8, &[], &[0]);
    let a = QuantizeAttributes { output_dtype: Some(DataType::I8), ..Default::default() };
    expect(
        q_err(V25, &x34(), &one(), Some(&zp), a),
        ErrorKind::TypeMismatch,
        "output_dtype INT8 does not match y_zero_point type UINT8",
    );
    let a = QuantizeAttributes { output_dtype: Some(DataType::F32), ..Default::default() };
    expect(q_err(V25, &x34(), &one(), None, a), ErrorKind::InvalidAttribute, "output_dtype FLOAT");
    let e = QuantizeAttributes::from_onnx(&[Attribute { name: "output_dtype", value: 12345 }]).unwrap_err();
    expect((e.kind(), e.message().to_string()), ErrorKind::InvalidAttribute, "output_dtype = 12345");
}

#[test]
fn types_outside_the_version_lists() {
    // int2 at v24
    let zp = ints(DataType::I2, &[], &[0]);
    expect(
        q_err(Opset::onnx(24), &x34(), &one(), Some(&zp), Default::default()),
        ErrorKind::UnsupportedType,
        "y_zero_point has type i2",
    );
    // float6 at v25
    let a = QuantizeAttributes { output_dtype: Some(DataType::E2M3), ..Default::default() };
    expect(q_err(V25, &x34(), &one(), None, a), ErrorKind::InvalidAttribute, "FLOAT6E2M3");
    let zp = codes(DataType::E2M3, &[], &[0]);
    expect(q_err(V25, &x34(), &one(), Some(&zp), Default::default()), ErrorKind::UnsupportedType, "e2m3");
    // e8m0 scale at v23
    let s = codes(DataType::E8M0, &[], &[127]);
    expect(
        q_err(Opset::onnx(23), &x34(), &s, None, Default::default()),
        ErrorKind::UnsupportedType,
        "y_scale has type e8m0",
    );
    // f16 x at v13
    let x = half(DataType::F16, &[2], &[1.0, 2.0]);
    expect(q_err(Opset::onnx(13), &x, &one(), None, Default::default()), ErrorKind::UnsupportedType, "x has type f16");
    // DQ: float8 at v13, int4 at v19, float4 at v21, e8m0 scale at v23, float6 at v25, i32 scale
    let dq = |opset, x: &Tensor, s: &Tensor| dq_err(Opset::onnx(opset), x, s, None, Default::default());
    expect(dq(13, &codes(DataType::E4M3Fn, &[1], &[0]), &one()), ErrorKind::UnsupportedType, "x has type e4m3fn");
    expect(dq(19, &ints(DataType::I4, &[1], &[0]), &one()), ErrorKind::UnsupportedType, "x has type i4");
    expect(dq(21, &codes(DataType::E2M1, &[1], &[0]), &one()), ErrorKind::UnsupportedType, "x has type e2m1");
    expect(
        dq(23, &ints(DataType::I8, &[1], &[0]), &codes(DataType::E8M0, &[], &[1])),
        ErrorKind::UnsupportedType,
        "x_scale",
    );
    expect(dq(25, &codes(DataType::E3M2, &[1], &[0]), &one()), ErrorKind::UnsupportedType, "x has type e3m2");
    expect(
        dq(25, &ints(DataType::I8, &[1], &[0]), &i32s(&[], &[1])),
        ErrorKind::UnsupportedType,
        "x_scale has type i32",
    );
    // com.microsoft: no float8, no bf16
    let ms = Opset::microsoft();
    let zp = codes(DataType::E4M3Fn, &[], &[0]);
    expect(q_err(ms, &x34(), &one(), Some(&zp), Default::default()), ErrorKind::UnsupportedType, "e4m3fn");
    let x = half(DataType::Bf16, &[1], &[1.0]);
    let s = half(DataType::Bf16, &[], &[1.0]);
    expect(q_err(ms, &x, &s, None, Default::default()), ErrorKind::UnsupportedType, "x has type bf16");
    let a = QuantizeAttributes { block_size: Some(2), ..Default::default() };
    expect(q_err(ms, &x34(), &one(), None, a), ErrorKind::UnknownAttribute, "block_size");
}

#[test]
fn x_and_scale_must_share_a_type_at_v19_and_v21() {
    let s = half(DataType::F16, &[], &[1.0]);
    for v in [19, 21] {
        expect(
            q_err(Opset::onnx(v), &x34(), &s, None, Default::default()),
            ErrorKind::TypeMismatch,
            "y_scale has type f16 but x has type f32",
        );
    }
    // allowed from v23
    assert!(quantize_linear(Opset::onnx(23), x34().view(), s.view(), None, &Default::default()).is_ok());
}

#[test]
fn dequantize_type_rules() {
    let x = ints(DataType::U8, &[2], &[1, 2]);
    let zp = ints(DataType::I8, &[], &[0]);
    expect(
        dq_err(V25, &x, &one(), Some(&zp), Default::default()),
        ErrorKind::TypeMismatch,
        "x_zero_point has type i8 but x has type u8",
    );
    let a = DequantizeAttributes { output_dtype: Some(DataType::I8), ..Default::default() };
    expect(dq_err(V25, &x, &one(), None, a), ErrorKind::InvalidAttribute, "output_dtype INT8");
    let s = codes(DataType::E8M0, &[], &[127]);
    expect(dq_err(V25, &x, &s, None, Default::default()), ErrorKind::MissingAttribute, "set output_dtype");
    let a = DequantizeAttributes { output_dtype: Some(DataType::F32), ..Default::default() };
    for v in [10, 13, 19, 21] {
        expect(dq_err(Opset::onnx(v), &x, &one(), None, a), ErrorKind::UnknownAttribute, "output_dtype");
    }
    let a = DequantizeAttributes { block_size: Some(1), ..Default::default() };
    expect(dq_err(Opset::onnx(19), &x, &one(), None, a), ErrorKind::UnknownAttribute, "block_size");
    let a = DequantizeAttributes { axis: Some(0), ..Default::default() };
    expect(dq_err(Opset::onnx(10), &x, &one(), None, a), ErrorKind::UnknownAttribute, "axis");
}

#[test]
fn attributes_unknown_to_the_version() {
    let a = QuantizeAttributes { axis: Some(0), ..Default::default() };
    expect(
        q_err(Opset::onnx(10), &x34(), &one(), None, a),
        ErrorKind::UnknownAttribute,
        "QuantizeLinear-10 has no attribute 'axis'",
    );
    let a = QuantizeAttributes { saturate: Some(true), ..Default::default() };
    expect(q_err(Opset::onnx(13), &x34(), &one(), None, a), ErrorKind::UnknownAttribute, "saturate");
    let a = QuantizeAttributes { block_size: Some(2), ..Default::default() };
    expect(q_err(Opset::onnx(19), &x34(), &one(), None, a), ErrorKind::UnknownAttribute, "block_size");
    let a = QuantizeAttributes { precision: Some(DataType::F32), ..Default::default() };
    expect(q_err(Opset::onnx(21), &x34(), &one(), None, a), ErrorKind::UnknownAttribute, "precision");
    let e = QuantizeAttributes::from_onnx(&[Attribute { name: "saturate", value: 2 }]).unwrap_err();
    expect((e.kind(), e.message().to_string()), ErrorKind::InvalidAttribute, "saturate must be 0 or 1");
}

#[test]
fn axis_out_of_range_only_when_used() {
    let s4 = f32s(&[4], &[1.0; 4]);
    for axis in [2, -3, i64::MAX, i64::MIN] {
        let a = QuantizeAttributes { axis: Some(axis), ..Default::default() };
        expect(q_err(V25, &x34(), &s4, None, a), ErrorKind::AxisOutOfRange, &format!("axis {axis}"));
    }
    // ignored for per-tensor
    let a = QuantizeAttributes { axis: Some(7), ..Default::default() };
    assert!(quantize_linear(V25, x34().view(), one().view(), None, &a).is_ok());
    // rank-1 x with the default axis 1 and a per-axis scale
    let x = f32s(&[4], &[1.0; 4]);
    expect(q_err(V25, &x, &s4, None, Default::default()), ErrorKind::AxisOutOfRange, "rank 1");
    let a = QuantizeAttributes { axis: Some(0), ..Default::default() };
    assert!(quantize_linear(V25, x.view(), s4.view(), None, &a).is_ok());
}

#[test]
fn per_axis_and_zero_point_shapes() {
    let s3 = f32s(&[3], &[1.0; 3]);
    expect(
        q_err(V25, &x34(), &s3, None, Default::default()),
        ErrorKind::ShapeMismatch,
        "per-axis y_scale must have length x.shape[1] = 4",
    );
    let s4 = f32s(&[4], &[1.0; 4]);
    let zp = ints(DataType::U8, &[], &[0]);
    expect(
        q_err(V25, &x34(), &s4, Some(&zp), Default::default()),
        ErrorKind::ShapeMismatch,
        "y_zero_point has shape []",
    );
    let zp = ints(DataType::U8, &[1, 1], &[0]);
    expect(
        q_err(V25, &x34(), &one(), Some(&zp), Default::default()),
        ErrorKind::ShapeMismatch,
        "y_zero_point has shape [1, 1]",
    );
    // scalar <-> [1] is accepted both ways
    let zp1 = ints(DataType::U8, &[1], &[0]);
    assert!(quantize_linear(V25, x34().view(), one().view(), Some(zp1.view()), &Default::default()).is_ok());
    let s1 = f32s(&[1], &[1.0]);
    assert!(quantize_linear(V25, x34().view(), s1.view(), Some(zp.view()), &Default::default()).is_err());
    assert!(quantize_linear(
        V25,
        x34().view(),
        s1.view(),
        Some(ints(DataType::U8, &[], &[0]).view()),
        &Default::default()
    )
    .is_ok());
    // opset 10 is per-tensor only
    expect(q_err(Opset::onnx(10), &x34(), &s4, None, Default::default()), ErrorKind::ShapeMismatch, "per-tensor only");
    let x = ints(DataType::U8, &[3, 4], &[0; 12]);
    expect(
        dq_err(Opset::onnx(10), &x, &s4, None, Default::default()),
        ErrorKind::ShapeMismatch,
        "x_scale must be a scalar or [1]",
    );
}

#[test]
fn block_size_rules() {
    let s = |shape: &[usize]| f32s(shape, &vec![1.0; shape.iter().product()]);
    let b = |v: i64| QuantizeAttributes { block_size: Some(v), ..Default::default() };
    expect(
        q_err(V25, &x34(), &s(&[3, 2]), None, b(0)),
        ErrorKind::ShapeMismatch,
        "a scale of rank 2 needs block_size > 0",
    );
    expect(q_err(V25, &x34(), &s(&[1, 1]), None, b(0)), ErrorKind::ShapeMismatch, "needs block_size > 0");
    expect(
        q_err(V25, &x34(), &s(&[3, 2]), None, b(-1)),
        ErrorKind::InvalidAttribute,
        "block_size must be non-negative",
    );
    expect(q_err(V25, &x34(), &one(), None, b(2)), ErrorKind::ShapeMismatch, "block_size must be 0 for per-tensor");
    expect(q_err(V25, &x34(), &s(&[2]), None, b(2)), ErrorKind::ShapeMismatch, "same rank as x");
    expect(q_err(V25, &x34(), &s(&[2, 2]), None, b(2)), ErrorKind::ShapeMismatch, "dimension 0 differs");
    expect(q_err(V25, &x34(), &s(&[3, 2]), None, b(1)), ErrorKind::ShapeMismatch, "ceil(4 / 1) = 4");
    expect(q_err(V25, &x34(), &s(&[3, 2]), None, b(4)), ErrorKind::ShapeMismatch, "ceil(4 / 4) = 1");
    expect(q_err(V25, &x34(), &s(&[3, 2]), None, b(i64::MAX)), ErrorKind::ShapeMismatch, "ceil(4 /");
    assert!(quantize_linear(V25, x34().view(), s(&[3, 2]).view(), None, &b(2)).is_ok());
    assert!(quantize_linear(V25, x34().view(), s(&[3, 2]).view(), None, &b(3)).is_ok());
    let x = ints(DataType::U8, &[3, 4], &[0; 12]);
    let a = DequantizeAttributes { block_size: Some(4), ..Default::default() };
    expect(dq_err(V25, &x, &s(&[3, 2]), None, a), ErrorKind::ShapeMismatch, "x_scale");
}

#[test]
fn float_zero_points_must_be_zero() {
    let x = codes(DataType::E4M3Fn, &[2], &[0x38, 0x40]);
    let zp = codes(DataType::E4M3Fn, &[], &[0x38]);
    expect(dq_err(V25, &x, &one(), Some(&zp), Default::default()), ErrorKind::NonZeroZeroPoint, "x_zero_point[0] is 1");
    let zp = codes(DataType::E4M3FnUz, &[], &[0x80]); // NaN in fnuz
    let xu = codes(DataType::E4M3FnUz, &[1], &[0]);
    expect(dq_err(V25, &xu, &one(), Some(&zp), Default::default()), ErrorKind::NonZeroZeroPoint, "x_zero_point");
    let xf = f32s(&[1], &[2.0]);
    for (t, code) in [
        (DataType::E4M3Fn, 0x38),
        (DataType::E5M2, 0x3c),
        (DataType::E2M1, 2),
        (DataType::E2M3, 8),
        (DataType::E3M2, 0xc),
    ] {
        let zp = codes(t, &[], &[code]);
        expect(
            q_err(Opset::onnx(28), &xf, &one(), Some(&zp), Default::default()),
            ErrorKind::NonZeroZeroPoint,
            "y_zero_point[0] is 1",
        );
    }
    let zp = codes(DataType::E2M1, &[], &[1]);
    let x4 = codes(DataType::E2M1, &[1], &[2]);
    expect(
        dq_err(V25, &x4, &one(), Some(&zp), Default::default()),
        ErrorKind::NonZeroZeroPoint,
        "x_zero_point[0] is 0.5",
    );
}

#[test]
fn i32_dequantize_with_zero_point_is_allowed() {
    let y = dequantize_linear(
        V25,
        i32s(&[1], &[5]).view(),
        one().view(),
        Some(i32s(&[], &[2]).view()),
        &Default::default(),
    );
    assert_eq!(float_values(&y.unwrap()), [3.0]);
}

#[test]
fn precision_must_be_a_float_type() {
    for p in [3, 6, 17, 24, 11, 999] {
        let (kind, msg) = match DataType::from_onnx(p) {
            Some(t) => {
                q_err(V25, &x34(), &one(), None, QuantizeAttributes { precision: Some(t), ..Default::default() })
            }
            None => {
                let e = QuantizeAttributes::from_onnx(&[Attribute { name: "precision", value: p }]).unwrap_err();
                (e.kind(), e.message().to_string())
            }
        };
        assert_eq!(kind, ErrorKind::InvalidAttribute, "{p}: {msg}");
        assert!(msg.contains("precision"), "{msg}");
    }
}

#[test]
fn opsets_and_arity() {
    for v in [0, 9, 29, i64::MAX, i64::MIN] {
        expect(q_err(Opset::onnx(v), &x34(), &one(), None, Default::default()), ErrorKind::UnsupportedOpset, "opset");
    }
    let x = ints(DataType::U8, &[1], &[0]);
    expect(
        dq_err(Opset::onnx(9), &x, &one(), None, Default::default()),
        ErrorKind::UnsupportedOpset,
        "DequantizeLinear",
    );
    let e = dynamic_quantize_linear(Opset::onnx(10), x34().view()).unwrap_err();
    assert_eq!(e.kind(), ErrorKind::UnsupportedOpset);
    let e = dynamic_quantize_linear(Opset::microsoft(), x34().view()).unwrap_err();
    assert_eq!(e.kind(), ErrorKind::UnsupportedOpset);
    let e = dynamic_quantize_linear(Opset::onnx(11), x.view()).unwrap_err();
    expect((e.kind(), e.message().to_string()), ErrorKind::UnsupportedType, "x has type u8");
    // DynamicQuantizeLinear needs exactly 3 outputs
    let xs = x34();
    let e = run_node("DynamicQuantizeLinear", Opset::onnx(11), &[Some(xs.view())], &[], 1).unwrap_err();
    expect((e.kind(), e.message().to_string()), ErrorKind::Arity, "exactly 3 outputs");
    let e = run_node("QuantizeLinear", V25, &[Some(xs.view())], &[], 1).unwrap_err();
    expect((e.kind(), e.message().to_string()), ErrorKind::Arity, "2 or 3 inputs");
    let e = run_node("QuantizeLinear", V25, &[Some(xs.view()), None], &[], 1).unwrap_err();
    expect((e.kind(), e.message().to_string()), ErrorKind::Arity, "scale");
    let s = one();
    let attrs = [Attribute { name: "axis", value: 0 }, Attribute { name: "axis", value: 1 }];
    let e = run_node("QuantizeLinear", V25, &[Some(xs.view()), Some(s.view())], &attrs, 1).unwrap_err();
    expect((e.kind(), e.message().to_string()), ErrorKind::InvalidAttribute, "given twice");
    let attrs = [Attribute { name: "lda_coeff", value: 1 }];
    let e = run_node("QuantizeLinear", V25, &[Some(xs.view()), Some(s.view())], &attrs, 1).unwrap_err();
    expect((e.kind(), e.message().to_string()), ErrorKind::UnknownAttribute, "lda_coeff");
    let e = run_node("Relu", V25, &[Some(xs.view())], &[], 1).unwrap_err();
    assert_eq!(e.kind(), ErrorKind::UnsupportedOpset);
    let y = run_node("QuantizeLinear", V25, &[Some(xs.view()), Some(s.view()), None], &[], 1).unwrap();
    assert_eq!(y[0].dtype(), DataType::U8);
}

#[test]
fn buffer_lengths_and_overflowing_shapes() {
    let bad = TensorRef { dtype: DataType::F32, shape: &[3, 4], data: &[0u8; 47] };
    let e = quantize_linear(V25, bad, one().view(), None, &Default::default()).unwrap_err();
    expect(
        (e.kind(), e.message().to_string()),
        ErrorKind::BufferLength,
        "x: shape [3, 4] of f32 needs 48 bytes, got 47",
    );
    let huge = TensorRef { dtype: DataType::F32, shape: &[usize::MAX, 2], data: &[] };
    let e = quantize_linear(V25, huge, one().view(), None, &Default::default()).unwrap_err();
    expect((e.kind(), e.message().to_string()), ErrorKind::ShapeOverflow, "x");
    let huge = TensorRef { dtype: DataType::F32, shape: &[usize::MAX / 2], data: &[] };
    let e = quantize_linear(V25, huge, one().view(), None, &Default::default()).unwrap_err();
    expect((e.kind(), e.message().to_string()), ErrorKind::ShapeOverflow, "x");
    let s = TensorRef { dtype: DataType::F32, shape: &[], data: &[0; 3] };
    let e = quantize_linear(V25, x34().view(), s, None, &Default::default()).unwrap_err();
    expect((e.kind(), e.message().to_string()), ErrorKind::BufferLength, "y_scale");
    let zp = TensorRef { dtype: DataType::U4, shape: &[3], data: &[0; 1] };
    let s3 = f32s(&[3], &[1.0; 3]);
    let a = QuantizeAttributes { axis: Some(0), ..Default::default() };
    let e = quantize_linear(V25, x34().view(), s3.view(), Some(zp), &a).unwrap_err();
    expect((e.kind(), e.message().to_string()), ErrorKind::BufferLength, "y_zero_point");
    let x = TensorRef { dtype: DataType::I4, shape: &[5], data: &[0; 2] };
    let e = dequantize_linear(V25, x, one().view(), None, &Default::default()).unwrap_err();
    expect((e.kind(), e.message().to_string()), ErrorKind::BufferLength, "x: shape [5] of i4 needs 3 bytes, got 2");
    let e = dynamic_quantize_linear(Opset::onnx(11), bad).unwrap_err();
    assert_eq!(e.kind(), ErrorKind::BufferLength);
}

fn slice_err(r: qdq_ref::Result<()>) -> (ErrorKind, String) {
    let e = r.unwrap_err();
    (e.kind(), e.message().to_string())
}

#[test]
fn slice_api_errors() {
    let x = [1.0f32; 12];
    let s = [1.0f32; 4];
    let mut y = [0u8; 12];
    let axis = Params::per_axis(&s, &[3, 4], 1).unwrap();
    assert!(quantize(&x, &axis, &mut y).is_ok());
    expect(
        slice_err(quantize(&x, &axis, &mut y[..11])),
        ErrorKind::BufferLength,
        "y: 12 elements of u8 need 12 bytes, got 11",
    );
    expect(
        slice_err(quantize(&x, &Params::per_axis(&s[..3], &[3, 4], 1).unwrap(), &mut y)),
        ErrorKind::BufferLength,
        "scales has 3 elements",
    );
    let wrong = Params::per_axis(&s, &[2, 4], 1).unwrap();
    expect(slice_err(quantize(&x, &wrong, &mut y)), ErrorKind::BufferLength, "describes 8 elements but x has 12");
    let overflow = Params::new(&s, Layout::Blocked { outer: usize::MAX, axis_len: 4, inner: 2, block: 1 });
    assert_eq!(slice_err(quantize(&x, &overflow, &mut y)).0, ErrorKind::BufferLength);
    let zero_block = Params::new(&s, Layout::Blocked { outer: 3, axis_len: 4, inner: 1, block: 0 });
    assert_eq!(slice_err(quantize(&x, &zero_block, &mut y)).0, ErrorKind::InvalidArgument);
    expect(
        slice_err(Params::blocked(&s, &[3, 4], 1, 0).map(|_| ())),
        ErrorKind::InvalidArgument,
        "block must be positive",
    );
    expect(
        slice_err(Params::per_axis(&s, &[3, 4], 2).map(|_| ())),
        ErrorKind::AxisOutOfRange,
        "axis 2 is out of range for shape [3, 4]",
    );
    expect(slice_err(Params::per_axis(&s, &[3, 4], -3).map(|_| ())), ErrorKind::AxisOutOfRange, "valid range [-2, 1]");
    expect(slice_err(Params::per_axis(&s, &[usize::MAX, 4, 2], 1).map(|_| ())), ErrorKind::ShapeOverflow, "shape");
    let zp = [0i8; 4];
    expect(
        slice_err(quantize(&x, &axis.zero_points(&zp), &mut y)),
        ErrorKind::TypeMismatch,
        "zero_points has type i8 but the output type is u8",
    );
    expect(
        slice_err(quantize(&x, &axis.zero_points(&[0u8; 3]), &mut y)),
        ErrorKind::BufferLength,
        "zero_points has 3 elements but scales has 4",
    );
    expect(
        slice_err(quantize(&x, &axis.zero_point(1), &mut y)),
        ErrorKind::ShapeMismatch,
        "zero_point: one zero point",
    );
    let pt = Params::per_tensor(1.0);
    expect(
        slice_err(quantize(&x, &pt.zero_point(256), &mut y)),
        ErrorKind::InvalidArgument,
        "zero_point 256 is outside the range of u8 (0 to 255)",
    );
    expect(
        slice_err(quantize(&x, &pt.zero_point(-9), PackedMut::new(DataType::I4, &mut y[..6]))),
        ErrorKind::InvalidArgument,
        "range of i4 (-8 to 7)",
    );
    let mut f8 = [Float8E4M3Fn::default(); 12];
    expect(slice_err(quantize(&x, &pt.zero_point(1), &mut f8)), ErrorKind::NonZeroZeroPoint, "zero_point is 1");
    assert!(quantize(&x, &pt.zero_point(0), &mut f8).is_ok());
    assert_eq!(Packed::new(DataType::U4, 4, &[0; 3]).unwrap_err().kind(), ErrorKind::BufferLength);
    expect(
        slice_err(quantize(&x, &pt, PackedMut::new(DataType::F32, &mut y))),
        ErrorKind::UnsupportedType,
        "y has type f32",
    );
    expect(
        slice_err(quantize(&x, &pt.precision(DataType::I8), &mut y)),
        ErrorKind::InvalidArgument,
        "precision must be f32, f16 or bf16, got i8",
    );
    let e8 = [Float8E8M0(127); 12];
    assert_eq!(slice_err(quantize(Values::E8M0(&[0; 12]), &pt, &mut y)).0, ErrorKind::UnsupportedType);
    assert_eq!(slice_err(quantize(&e8, &pt, &mut y)).0, ErrorKind::UnsupportedType);

    let xq = [3u8; 12];
    let mut out = [0f32; 12];
    assert!(dequantize(&xq, &axis, &mut out).is_ok());
    assert_eq!(out, [3.0; 12]);
    expect(slice_err(dequantize(&xq, &axis, &mut out[..5])), ErrorKind::BufferLength, "y has 5 elements but x has 12");
    expect(
        slice_err(dequantize(&xq, &Params::per_axis(&[1i32; 4], &[3, 4], 1).unwrap(), &mut out)),
        ErrorKind::UnsupportedType,
        "scales has type i32",
    );
    let xf = Packed { dtype: DataType::F32, len: 1, data: &[0; 4] };
    assert_eq!(slice_err(dequantize(xf, &Params::per_tensor(1.0), &mut out[..1])).0, ErrorKind::UnsupportedType);
    assert_eq!(dynamic_quantize(&x, &mut y[..3]).unwrap_err().kind(), ErrorKind::BufferLength);
}
