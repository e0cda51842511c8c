//! Exact expected values: the ONNX operator examples and the edge tables (ties, ±0, NaN,
//! ±inf, subnormals, saturation edges, every float8 saturate-table row, R1-R21).

mod common;
use common::*;
use qdq_ref::{
    dequantize_linear, dynamic_quantize_linear, quantize_linear, DataType, DequantizeAttributes, Opset,
    QuantizeAttributes, Tensor,
};

const V25: Opset = Opset::onnx(25);
const V28: Opset = Opset::onnx(28);

fn q(opset: Opset, x: &Tensor, s: &Tensor, zp: Option<&Tensor>, a: QuantizeAttributes) -> Tensor {
    quantize_linear(opset, x.view(), s.view(), zp.map(|z| z.view()), &a).unwrap()
}

fn q_int(x: &[f32], s: f32, zp: &Tensor) -> Vec<i64> {
    int_values(&q(V25, &f32s(&[x.len()], x), &f32_scalar(s), Some(zp), Default::default()))
}

fn q_codes(out: DataType, x: &[f32], saturate: bool) -> Vec<u32> {
    let a = QuantizeAttributes { output_dtype: Some(out), saturate: Some(saturate), ..Default::default() };
    code_values(&q(V28, &f32s(&[x.len()], x), &f32_scalar(1.0), None, a))
}

fn dq(opset: Opset, x: &Tensor, s: &Tensor, zp: Option<&Tensor>, a: DequantizeAttributes) -> Tensor {
    dequantize_linear(opset, x.view(), s.view(), zp.map(|z| z.view()), &a).unwrap()
}

fn u8zp(v: i64) -> Tensor {
    ints(DataType::U8, &[], &[v])
}

#[test]
fn seed_quantize_example_and_saturation() {
    let x = f32s(&[6], &[0.0, 2.0, 3.0, 1000.0, -254.0, -1000.0]);
    let y = q(Opset::onnx(10), &x, &f32_scalar(2.0), Some(&u8zp(128)), Default::default());
    assert_eq!(y.dtype(), DataType::U8);
    assert_eq!(int_values(&y), [128, 129, 130, 255, 1, 0]);
}

#[test]
fn ties_round_half_to_even_and_zero_point_after_rounding() {
    let i8zp = ints(DataType::I8, &[], &[0]);
    assert_eq!(q_int(&[0.5, 1.5, 2.5, -0.5, -1.5, -2.5], 1.0, &i8zp), [0, 2, 2, 0, -2, -2]);
    assert_eq!(q_int(&[254.5, 255.5], 1.0, &u8zp(0)), [254, 255]);
    assert_eq!(q_int(&[0.5, 1.5, 2.5], 1.0, &u8zp(1)), [1, 3, 3]);
    // -0.0 is 0 for integer outputs.
    assert_eq!(q_int(&[-0.0], 1.0, &i8zp), [0]);
    // ONNX issue 6433: -2.5 / (5/255) is -127.49999 by division (-127), -127.5 by reciprocal.
    assert_eq!(q_int(&[-2.5], 5.0 / 255.0, &i8zp), [-127]);
}

#[test]
fn saturation_is_exact_for_infinities_and_huge_quotients() {
    // R1
    assert_eq!(q_int(&[3e9, -3e9, f32::INFINITY, f32::NEG_INFINITY], 1.0, &u8zp(128)), [255, 0, 255, 0]);
    // R2
    assert_eq!(q_int(&[2147483520.0], 1.0, &u8zp(255)), [255]);
    // O4: 2-bit outputs from f32 too
    let i2 = ints(DataType::I2, &[], &[0]);
    assert_eq!(q_int(&[1e10, f32::INFINITY, -1e10], 1.0, &i2), [1, 1, -2]);
    // R6: f16 quotients that overflow to inf saturate
    let x = half(DataType::F16, &[2], &[60000.0, 300.0]);
    let s = half(DataType::F16, &[], &[2f64.powi(-14)]);
    assert_eq!(int_values(&q(V25, &x, &s, Some(&u8zp(7)), Default::default())), [255, 255]);
    let s = half(DataType::F16, &[], &[2f64.powi(-24)]);
    let x = half(DataType::F16, &[1], &[300.0]);
    assert_eq!(int_values(&q(V25, &x, &s, None, Default::default())), [255]);
}

#[test]
fn nan_gives_qmin() {
    let nan = [f32::NAN, -f32::NAN];
    assert_eq!(q_int(&nan, 1.0, &u8zp(128)), [0, 0]);
    assert_eq!(q_int(&nan, 1.0, &ints(DataType::I8, &[], &[0])), [-128, -128]);
    assert_eq!(q_int(&nan, 1.0, &ints(DataType::U16, &[], &[100])), [0, 0]);
    assert_eq!(q_int(&nan, 1.0, &ints(DataType::I16, &[], &[0])), [-32768, -32768]);
    assert_eq!(q_int(&nan, 1.0, &ints(DataType::I4, &[], &[3])), [-8, -8]);
}

#[test]
fn scale_zero_negative_nan_and_inf() {
    // R4
    assert_eq!(q_int(&[1.0, -1.0, 0.0], 0.0, &u8zp(10)), [255, 0, 0]);
    assert_eq!(q_int(&[1.0, -1.0], -0.0, &u8zp(10)), [0, 255]);
    assert_eq!(q_int(&[4.0], -2.0, &ints(DataType::I8, &[], &[0])), [-2]);
    assert_eq!(q_int(&[4.0], f32::NAN, &u8zp(10)), [0]);
    assert_eq!(q_int(&[4.0, -4.0], f32::INFINITY, &u8zp(10)), [10, 10]);
}

#[test]
fn division_precision_follows_scale_type_and_precision_attribute() {
    // R5: f32 x, f16 scale: 2049 is rounded to f16 (2048) before dividing.
    let x = f32s(&[1], &[2049.0]);
    let s16 = half(DataType::F16, &[], &[1.0]);
    let i16zp = ints(DataType::I16, &[], &[0]);
    assert_eq!(int_values(&q(Opset::onnx(23), &x, &s16, Some(&i16zp), Default::default())), [2048]);
    let p16 = QuantizeAttributes { precision: Some(DataType::F16), ..Default::default() };
    assert_eq!(int_values(&q(Opset::onnx(23), &x, &f32_scalar(1.0), Some(&i16zp), p16)), [2048]);
    // precision = FLOAT16 makes 70000 overflow to inf, which saturates (R6).
    let u16zp = ints(DataType::U16, &[], &[0]);
    let x = f32s(&[1], &[70000.0]);
    assert_eq!(int_values(&q(Opset::onnx(23), &x, &f32_scalar(1.0), Some(&u16zp), p16)), [65535]);
    // f16 division: 102.375 / 1.337890625 is exactly 76.5 in f16 -> 76.
    let x = half(DataType::F16, &[1], &[102.375]);
    let s = half(DataType::F16, &[], &[1.337890625]);
    assert_eq!(int_values(&q(Opset::onnx(21), &x, &s, Some(&u8zp(0)), Default::default())), [76]);
    // bf16 precision
    let x = f32s(&[1], &[257.0]);
    let pbf = QuantizeAttributes { precision: Some(DataType::Bf16), ..Default::default() };
    assert_eq!(int_values(&q(Opset::onnx(23), &x, &f32_scalar(1.0), Some(&u16zp), pbf)), [256]);
    // R7: i32 x with f32 scale divides in f32: 16777473 -> 16777472, /512 = 32768.5 -> 32768.
    let x = i32s(&[1], &[16777473]);
    assert_eq!(int_values(&q(Opset::onnx(23), &x, &f32_scalar(512.0), Some(&u16zp), Default::default())), [32768]);
    // R8: i32 scale divides in f64: 7 / 2 = 3.5 -> 4.
    let x = i32s(&[3], &[7, -7, 16777217]);
    let y = q(Opset::onnx(23), &x, &i32s(&[], &[2]), Some(&ints(DataType::I16, &[], &[0])), Default::default());
    assert_eq!(int_values(&y), [4, -4, 32767]);
    // v19: i32 x and i32 scale
    let y = q(Opset::onnx(19), &i32s(&[1], &[7]), &i32s(&[], &[2]), Some(&u8zp(0)), Default::default());
    assert_eq!(int_values(&y), [4]);
}

#[test]
fn subnormals_are_not_flushed() {
    let t = f32::from_bits(1 << 9); // 2^-140, a subnormal
    assert_eq!(q_int(&[t], t, &u8zp(0)), [1]);
    assert_eq!(q_int(&[1e-38], 1e-40, &ints(DataType::I16, &[], &[0])), [100]);
    assert_eq!(q_int(&[1e-40], 1.0, &u8zp(0)), [0]);
}

#[test]
fn empty_tensors() {
    let x = f32s(&[0, 3], &[]);
    assert_eq!(q(V25, &x, &f32_scalar(1.0), None, Default::default()).bytes(), Vec::<u8>::new());
    let y = q(V25, &x, &f32s(&[3], &[1.0, 2.0, 3.0]), None, Default::default());
    assert_eq!(y.shape(), [0, 3]);
    let x = f32s(&[3, 0], &[]);
    let y = q(V25, &x, &f32s(&[0], &[]), None, Default::default());
    assert_eq!(y.shape(), [3, 0]);
    let y = dq(V25, &ints(DataType::U8, &[2, 0], &[]), &f32_scalar(1.0), None, Default::default());
    assert_eq!((y.shape(), y.bytes()), (&[2, 0][..], &[][..]));
}

/// Every row of the float8 saturate table (`qdq_ref::float`, README "Semantics").
#[test]
fn float8_saturate_table() {
    use DataType::*;
    let inf = f32::INFINITY;
    let nan = f32::NAN;
    // (type, tie point, [s=1 codes], [s=0 codes]) for inputs:
    // +0, -0, +NaN, -NaN, +inf, -inf, max, tie, 1e6, -1e6
    type Row = (DataType, f32, f32, [u32; 10], [u32; 10]);
    let rows: [Row; 4] = [
        (
            E4M3Fn,
            448.0,
            464.0,
            [0x00, 0x80, 0x7f, 0xff, 0x7e, 0xfe, 0x7e, 0x7e, 0x7e, 0xfe],
            [0x00, 0x80, 0x7f, 0xff, 0x7f, 0xff, 0x7e, 0x7e, 0x7f, 0xff],
        ),
        (
            E4M3FnUz,
            240.0,
            248.0,
            [0x00, 0x00, 0x80, 0x80, 0x7f, 0xff, 0x7f, 0x7f, 0x7f, 0xff],
            [0x00, 0x00, 0x80, 0x80, 0x80, 0x80, 0x7f, 0x80, 0x80, 0x80],
        ),
        (
            E5M2,
            57344.0,
            61440.0,
            [0x00, 0x80, 0x7e, 0xfe, 0x7b, 0xfb, 0x7b, 0x7b, 0x7b, 0xfb],
            [0x00, 0x80, 0x7e, 0xfe, 0x7c, 0xfc, 0x7b, 0x7c, 0x7c, 0xfc],
        ),
        (
            E5M2FnUz,
            57344.0,
            61440.0,
            [0x00, 0x00, 0x80, 0x80, 0x7f, 0xff, 0x7f, 0x7f, 0x7f, 0xff],
            [0x00, 0x00, 0x80, 0x80, 0x80, 0x80, 0x7f, 0x80, 0x80, 0x80],
        ),
    ];
    for (t, max, tie, sat, nosat) in rows {
        let x = [0.0, -0.0, nan, -nan, inf, -inf, max, tie, 1e6, -1e6];
        assert_eq!(q_codes(t, &x, true), sat, "{t} saturate=1");
        assert_eq!(q_codes(t, &x, false), nosat, "{t} saturate=0");
    }
}

#[test]
fn float8_subnormal_rounding() {
    use DataType::*;
    for (t, u) in
        [(E4M3Fn, 2f32.powi(-9)), (E4M3FnUz, 2f32.powi(-10)), (E5M2, 2f32.powi(-16)), (E5M2FnUz, 2f32.powi(-17))]
    {
        let neg_zero = if matches!(t, E4M3FnUz | E5M2FnUz) { 0x00 } else { 0x80 };
        assert_eq!(q_codes(t, &[0.5 * u, 0.75 * u, 1.5 * u, 2.5 * u, -0.5 * u], true), [0, 1, 2, 2, neg_zero], "{t}");
    }
}

#[test]
fn float4_and_float6() {
    use DataType::*;
    // RNE and saturation (always, whatever `saturate` says: R21).
    for sat in [true, false] {
        assert_eq!(q_codes(E2M1, &[100.0, f32::INFINITY, f32::NEG_INFINITY], sat), [0x7, 0x7, 0xf]);
        assert_eq!(q_codes(E2M1, &[0.25, 0.75, 2.5, 5.0, 1.0, -0.5, 6.0], sat), [0, 2, 4, 6, 2, 9, 7]);
        assert_eq!(q_codes(E2M3, &[100.0, 7.5, 1.0, -1.0, 0.125], sat), [0x1f, 0x1f, 0x08, 0x28, 0x01]);
        assert_eq!(q_codes(E3M2, &[1000.0, 28.0, 1.0, -1.0, 0.0625], sat), [0x1f, 0x1f, 0x0c, 0x2c, 0x01]);
    }
    // NaN: implementation-defined; ml_dtypes parity.
    assert_eq!(q_codes(E2M1, &[f32::NAN, -f32::NAN], true), [0x8, 0x0]);
    assert_eq!(q_codes(E2M3, &[f32::NAN, -f32::NAN], true), [0x20, 0x0]);
    // -0: kept without a zero point, +0 after adding a (zero) zero point (R10).
    assert_eq!(q_codes(E2M1, &[-0.0], true), [0x8]);
    let x = f32s(&[1], &[-0.0]);
    let zp = codes(E2M1, &[1], &[0]);
    assert_eq!(code_values(&q(V28, &x, &f32_scalar(1.0), Some(&zp), Default::default())), [0]);
}

#[test]
fn blocked_with_remainder_block() {
    let x = f32s(&[4], &[0.0, 1.0, 2.0, 3.0]);
    let s = f32s(&[2], &[1.0, 2.0]);
    let a = QuantizeAttributes { axis: Some(0), block_size: Some(3), ..Default::default() };
    assert_eq!(int_values(&q(V25, &x, &s, None, a)), [0, 1, 2, 2]);
    let a = DequantizeAttributes { axis: Some(0), block_size: Some(3), ..Default::default() };
    let y = dq(V25, &ints(DataType::U8, &[4], &[1, 1, 1, 1]), &s, None, a);
    assert_same_floats(&float_values(&y), &[1.0, 1.0, 1.0, 2.0]);
}

#[test]
fn per_axis_middle_and_negative_axis() {
    // x [2, 3, 2], scale per axis 1 (negative axis -2).
    let x: Vec<f32> = (0..12).map(|v| v as f32 * 10.0).collect();
    let a = QuantizeAttributes { axis: Some(-2), ..Default::default() };
    let y =
        q(V25, &f32s(&[2, 3, 2], &x), &f32s(&[3], &[1.0, 2.0, 5.0]), Some(&ints(DataType::U8, &[3], &[0, 1, 2])), a);
    assert_eq!(int_values(&y), [0, 10, 11, 16, 10, 12, 60, 70, 41, 46, 22, 24]);
}

#[test]
fn microsoft_contrib_ops() {
    let ms = Opset::microsoft();
    let x = f32s(&[4], &[70000.0, -70000.0, 2.5, 3.5]);
    let y = q(ms, &x, &f32_scalar(1.0), Some(&ints(DataType::I16, &[], &[0])), Default::default());
    assert_eq!(int_values(&y), [32767, -32768, 2, 4]);
    let y = q(ms, &x, &f32_scalar(1.0), Some(&ints(DataType::U16, &[], &[0])), Default::default());
    assert_eq!(int_values(&y), [65535, 0, 2, 4]);
    // axis absent -> 1 (what onnxruntime's kernel does).
    let x = f32s(&[3, 2], &[1.0, 1.0, 2.0, 2.0, 3.0, 3.0]);
    let y = q(ms, &x, &f32s(&[2], &[1.0, 0.5]), None, Default::default());
    assert_eq!(int_values(&y), [1, 2, 2, 4, 3, 6]);
    let e = quantize_linear(ms, x.view(), f32s(&[3], &[1.0; 3]).view(), None, &Default::default()).unwrap_err();
    assert_eq!(e.kind(), qdq_ref::ErrorKind::ShapeMismatch);
    // No zero point: u8.
    let y = dq(ms, &ints(DataType::U4, &[3], &[1, 2, 15]), &f32_scalar(0.5), None, Default::default());
    assert_same_floats(&float_values(&y), &[0.5, 1.0, 7.5]);
    let s16 = half(DataType::F16, &[], &[2.0]);
    let y = dq(ms, &ints(DataType::I8, &[2], &[-3, 5]), &s16, Some(&ints(DataType::I8, &[], &[1])), Default::default());
    assert_eq!(y.dtype(), DataType::F16);
    assert_same_floats(&float_values(&y), &[-8.0, 8.0]);
}

#[test]
fn seed_dequantize_example() {
    let x = ints(DataType::U8, &[4], &[0, 3, 128, 255]);
    for opset in [10, 13, 19, 21, 23, 24, 25, 28] {
        let y = dq(Opset::onnx(opset), &x, &f32_scalar(2.0), Some(&u8zp(128)), Default::default());
        assert_same_floats(&float_values(&y), &[-256.0, -250.0, 0.0, 254.0]);
    }
}

#[test]
fn dequantize_multiplies_in_f32_and_rounds_once() {
    // (2049 as u16) x f16 1.5 -> 3074 in f16 (strict f16 arithmetic would give 3072).
    let y = dq(
        Opset::onnx(21),
        &ints(DataType::U16, &[1], &[2049]),
        &half(DataType::F16, &[], &[1.5]),
        None,
        Default::default(),
    );
    assert_eq!(y.dtype(), DataType::F16);
    assert_same_floats(&float_values(&y), &[3074.0]);
    // 127 x f32 0.1 with output_dtype f16 -> 12.703125.
    let a = DequantizeAttributes { output_dtype: Some(DataType::F16), ..Default::default() };
    let y = dq(Opset::onnx(23), &ints(DataType::I8, &[1], &[127]), &f32_scalar(0.1), None, a);
    assert_same_floats(&float_values(&y), &[12.703125]);
    // bf16 output
    let a = DequantizeAttributes { output_dtype: Some(DataType::Bf16), ..Default::default() };
    let y = dq(Opset::onnx(23), &ints(DataType::I16, &[1], &[257]), &f32_scalar(1.0), None, a);
    assert_eq!(y.dtype(), DataType::Bf16);
    assert_same_floats(&float_values(&y), &[256.0]);
    // i16 product beyond f16 range -> inf
    let y = dq(
        Opset::onnx(21),
        &ints(DataType::I16, &[2], &[30000, -30000]),
        &half(DataType::F16, &[], &[4.0]),
        None,
        Default::default(),
    );
    assert_same_floats(&float_values(&y), &[f64::INFINITY, f64::NEG_INFINITY]);
}

#[test]
fn dequantize_i32_zero_point_is_exact() {
    // R11
    let y = dq(Opset::onnx(13), &i32s(&[1], &[16777217]), &f32_scalar(1.0), Some(&i32s(&[], &[1])), Default::default());
    assert_same_floats(&float_values(&y), &[16777216.0]);
    let y = dq(
        Opset::onnx(10),
        &i32s(&[2], &[i32::MAX, i32::MIN]),
        &f32_scalar(1.0),
        Some(&i32s(&[], &[i32::MIN])),
        Default::default(),
    );
    assert_same_floats(&float_values(&y), &[4294967296.0, 0.0]);
}

#[test]
fn dequantize_float_specials() {
    use DataType::*;
    let s = f32_scalar(2.0);
    // e4m3fn: NaN, -0, 448 x 2
    let y = dq(V25, &codes(E4M3Fn, &[3], &[0x7f, 0x80, 0x7e]), &s, None, Default::default());
    assert_same_floats(&float_values(&y), &[f64::NAN, -0.0, 896.0]);
    let y = dq(V25, &codes(E5M2, &[2], &[0x7c, 0xfc]), &s, None, Default::default());
    assert_same_floats(&float_values(&y), &[f64::INFINITY, f64::NEG_INFINITY]);
    let y = dq(V25, &codes(E4M3FnUz, &[2], &[0x80, 0x00]), &s, None, Default::default());
    assert_same_floats(&float_values(&y), &[f64::NAN, 0.0]);
    // Scale 0 gives ±0; scale inf gives ±inf and NaN where x - zp = 0.
    let x = ints(U8, &[3], &[5, 10, 15]);
    let y = dq(V25, &x, &f32_scalar(0.0), Some(&u8zp(10)), Default::default());
    assert_same_floats(&float_values(&y), &[-0.0, 0.0, 0.0]);
    let y = dq(V25, &x, &f32_scalar(f32::INFINITY), Some(&u8zp(10)), Default::default());
    assert_same_floats(&float_values(&y), &[f64::NEG_INFINITY, f64::NAN, f64::INFINITY]);
    // float6 and float4 decode
    let y = dq(V28, &codes(E2M3, &[5], &[0x08, 0x28, 0x1f, 0x01, 0x10]), &f32_scalar(1.0), None, Default::default());
    assert_same_floats(&float_values(&y), &[1.0, -1.0, 7.5, 0.125, 2.0]);
    let y = dq(V28, &codes(E3M2, &[4], &[0x0c, 0x2c, 0x1f, 0x01]), &f32_scalar(1.0), None, Default::default());
    assert_same_floats(&float_values(&y), &[1.0, -1.0, 28.0, 0.0625]);
    let zp = codes(E2M1, &[1], &[0]);
    let y = dq(V28, &codes(E2M1, &[5], &[0, 2, 10, 3, 14]), &f32_scalar(1.0), Some(&zp), Default::default());
    assert_same_floats(&float_values(&y), &[0.0, 1.0, -1.0, 1.5, -4.0]);
    // float8 zero point -0 is accepted by value (R12).
    let zp = codes(E4M3Fn, &[], &[0x80]);
    let y = dq(V25, &codes(E4M3Fn, &[1], &[0x38]), &f32_scalar(1.0), Some(&zp), Default::default());
    assert_same_floats(&float_values(&y), &[1.0]);
}

#[test]
fn e8m0_scales() {
    // MX layout: int4 blocks with power-of-two scales.
    let a = DequantizeAttributes { output_dtype: Some(DataType::F32), axis: Some(0), block_size: Some(2) };
    let x = ints(DataType::I4, &[4], &[1, -3, 7, -8]);
    let s = codes(DataType::E8M0, &[2], &[125, 130]);
    let y = dq(Opset::onnx(24), &x, &s, None, a);
    assert_same_floats(&float_values(&y), &[0.25, -0.75, 56.0, -64.0]);
    // e8m0 NaN scale
    let a = DequantizeAttributes { output_dtype: Some(DataType::F32), ..Default::default() };
    let y = dq(Opset::onnx(24), &ints(DataType::I8, &[1], &[1]), &codes(DataType::E8M0, &[], &[0xff]), None, a);
    assert!(float_values(&y)[0].is_nan());
    // Quantize with an e8m0 scale divides in f32.
    let y = q(
        Opset::onnx(24),
        &f32s(&[2], &[3.0, -5.0]),
        &codes(DataType::E8M0, &[], &[126]),
        Some(&ints(DataType::I8, &[], &[0])),
        Default::default(),
    );
    assert_eq!(int_values(&y), [6, -10]);
}

#[test]
fn two_bit_and_four_bit_packing_through_the_ops() {
    let x = f32s(&[5], &[1.0, -2.0, 7.0, -8.0, 3.0]);
    let y = q(V25, &x, &f32_scalar(1.0), Some(&ints(DataType::I4, &[], &[0])), Default::default());
    assert_eq!(y.bytes(), [0xe1, 0x87, 0x03]);
    let x = f32s(&[5], &[0.0, 1.0, -1.0, -2.0, 1.0]);
    let y = q(V25, &x, &f32_scalar(1.0), Some(&ints(DataType::I2, &[], &[0])), Default::default());
    assert_eq!(y.bytes(), [0xb4, 0x01]);
    let x = f32s(&[5], &[1.0, -1.0, 7.5, 0.125, 2.0]);
    let a = QuantizeAttributes { output_dtype: Some(DataType::E2M3), ..Default::default() };
    let y = q(V28, &x, &f32_scalar(1.0), None, a);
    assert_eq!(y.bytes(), [0x08, 0xfa, 0x05, 0x10]);
}

#[test]
fn dynamic_quantize_official_examples() {
    let run = |x: &[f32], shape: &[usize]| {
        let out = dynamic_quantize_linear(Opset::onnx(11), f32s(shape, x).view()).unwrap();
        assert_eq!(out.y.shape(), shape);
        (int_values(&out.y), out.y_scale, out.y_zero_point as i64)
    };
    let (y, s, z) = run(&[0.0, 2.0, -3.0, -2.5, 1.34, 0.5], &[6]);
    assert_eq!((y, s, z), (vec![153, 255, 0, 26, 221, 179], 0.019607844, 153));
    let (y, s, z) = run(&[-1.0, -2.1, -1.3, -2.5, -3.34, -4.0], &[6]);
    assert_eq!((y, s, z), (vec![191, 121, 172, 96, 42, 0], 0.015686275, 255));
    let (y, _, z) = run(&[1.0, 2.1, 1.3, 2.5, 3.34, 4.0, 1.5, 2.6, 3.9, 4.0, 3.0, 2.345], &[3, 4]);
    assert_eq!(z, 0);
    assert_eq!(y, [64, 134, 83, 159, 213, 255, 96, 166, 249, 255, 191, 149]);
    assert_eq!(run(&[], &[0]), (vec![], 0.0, 0));
}
