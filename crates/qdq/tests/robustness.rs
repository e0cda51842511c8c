//! Hostile input through every public entry point of `qdq` (and the matching `qdq-ref`
//! entry point): wrong buffer lengths, wrong type tags, axes far out of range, block sizes
//! 0 / negative / huge, shapes whose element count overflows, zero-point / scale shape
//! mismatches, bad ranges. Each must return a typed error whose message names the
//! offending input, identically in both crates and on every ISA and thread mode. Also the
//! regression tests for what the fuzz targets found.

mod common;

use common::{configs, dparams, qparams};
use qdq::{
    Attribute, DataType, DequantizeAttributes, Error, ErrorKind, Layout, Opset, Packed, QuantizeAttributes,
    QuantizeOptions, TensorRef, Values, ValuesMut,
};

const V25: Opset = Opset::onnx(25);

#[track_caller]
fn expect(r: Result<impl std::fmt::Debug, Error>, kind: ErrorKind, needle: &str) -> Error {
    let e = r.expect_err("hostile input must be rejected");
    assert_eq!(e.kind(), kind, "{e}");
    assert!(e.message().contains(needle), "message {:?} should name {needle:?}", e.message());
    e
}

/// Runs `f` with the reference (`None`) and with every configuration; all must fail the
/// same way.
#[track_caller]
fn everywhere<T: std::fmt::Debug>(kind: ErrorKind, needle: &str, f: impl Fn(Option<&qdq::Config>) -> Result<T, Error>) {
    let want = expect(f(None), kind, needle);
    for (name, cfg) in configs() {
        let got = f(Some(&cfg)).expect_err(&name);
        assert_eq!(got, want, "{name}");
    }
}

fn f32_bytes(v: &[f32]) -> Vec<u8> {
    v.iter().flat_map(|x| x.to_le_bytes()).collect()
}

fn q_slice(
    cfg: Option<&qdq::Config>,
    x: &[f32],
    scale: Values<'_>,
    zp: Option<Packed<'_>>,
    layout: Layout,
    opts: &QuantizeOptions,
    y: &mut [u8],
) -> Result<(), Error> {
    match cfg {
        None => {
            qdq_ref::quantize(Values::F32(x), &qparams(scale, zp, layout, opts), qdq::PackedMut::new(opts.output, y))
        }
        Some(c) => qdq::quantize_with(
            c,
            Values::F32(x),
            &qparams(scale, zp, layout, opts),
            qdq::PackedMut::new(opts.output, y),
        ),
    }
}

#[test]
fn slice_quantize_rejects_bad_lengths_types_and_layouts() {
    let x = [1.0f32; 12];
    let s3 = [0.5f32; 3];
    let opts = QuantizeOptions::new(DataType::U8);
    let per_axis = Layout::PerAxis { outer: 1, axis_len: 3, inner: 4 };
    // Output buffer one byte short / long.
    for len in [11, 13] {
        everywhere(ErrorKind::BufferLength, "y: 12 elements of u8 need 12 bytes", |c| {
            q_slice(c, &x, Values::F32(&[1.0]), None, Layout::PerTensor, &opts, &mut vec![0; len])
        });
    }
    // Packed output: 12 int4 elements are 6 bytes.
    everywhere(ErrorKind::BufferLength, "y: 12 elements of i4 need 6 bytes", |c| {
        q_slice(c, &x, Values::F32(&[1.0]), None, Layout::PerTensor, &QuantizeOptions::new(DataType::I4), &mut [0; 12])
    });
    // Scale count that does not fit the layout.
    everywhere(ErrorKind::BufferLength, "scales has 2 elements", |c| {
        q_slice(c, &x, Values::F32(&s3[..2]), None, per_axis, &opts, &mut [0; 12])
    });
    // A layout that does not describe x, and one whose product overflows.
    everywhere(ErrorKind::BufferLength, "describes 15 elements but x has 12", |c| {
        q_slice(c, &x, Values::F32(&s3), None, Layout::PerAxis { outer: 1, axis_len: 3, inner: 5 }, &opts, &mut [0; 12])
    });
    let huge = Layout::PerAxis { outer: usize::MAX, axis_len: 3, inner: 4 };
    everywhere(ErrorKind::BufferLength, "more than usize::MAX", |c| {
        q_slice(c, &x, Values::F32(&s3), None, huge, &opts, &mut [0; 12])
    });
    // Blocked with block 0 and with a huge block (one block per row is fine).
    let blocked = |block| Layout::Blocked { outer: 3, axis_len: 4, inner: 1, block };
    everywhere(ErrorKind::InvalidArgument, "block must be positive", |c| {
        q_slice(c, &x, Values::F32(&s3), None, blocked(0), &opts, &mut [0; 12])
    });
    let mut a = [0u8; 12];
    q_slice(None, &x, Values::F32(&s3), None, blocked(usize::MAX), &opts, &mut a).unwrap();
    for (name, cfg) in configs() {
        let mut b = [0u8; 12];
        q_slice(Some(&cfg), &x, Values::F32(&s3), None, blocked(usize::MAX), &opts, &mut b).unwrap();
        assert_eq!(a, b, "{name}");
    }
    // Wrong type tags: a non-quantized output type, an x type QuantizeLinear does not take,
    // a precision that is not a float type.
    everywhere(ErrorKind::UnsupportedType, "y has type f32, which is not a quantized type", |c| {
        q_slice(c, &x, Values::F32(&[1.0]), None, Layout::PerTensor, &QuantizeOptions::new(DataType::F32), &mut [0; 48])
    });
    let bad_precision = QuantizeOptions { precision: Some(DataType::I8), ..opts };
    everywhere(ErrorKind::InvalidArgument, "precision must be f32, f16 or bf16, got i8", |c| {
        q_slice(c, &x, Values::F32(&[1.0]), None, Layout::PerTensor, &bad_precision, &mut [0; 12])
    });
    // Zero point: wrong type, wrong count, short buffer, non-zero float zero point.
    let zp_i8 = Packed { dtype: DataType::I8, len: 1, data: &[0] };
    everywhere(ErrorKind::TypeMismatch, "zero_points has type i8 but the output type is u8", |c| {
        q_slice(c, &x, Values::F32(&[1.0]), Some(zp_i8), Layout::PerTensor, &opts, &mut [0; 12])
    });
    let zp2 = Packed { dtype: DataType::U8, len: 2, data: &[0, 0] };
    everywhere(ErrorKind::BufferLength, "zero_points has 2 elements", |c| {
        q_slice(c, &x, Values::F32(&[1.0]), Some(zp2), Layout::PerTensor, &opts, &mut [0; 12])
    });
    let zp_short = Packed { dtype: DataType::U8, len: 3, data: &[0, 0] };
    everywhere(ErrorKind::BufferLength, "zero_points", |c| {
        q_slice(c, &x, Values::F32(&s3), Some(zp_short), per_axis, &opts, &mut [0; 12])
    });
    let f8 = QuantizeOptions::new(DataType::E4M3Fn);
    let zp_f8 = Packed { dtype: DataType::E4M3Fn, len: 1, data: &[0x38] };
    everywhere(ErrorKind::NonZeroZeroPoint, "zero_points[0]", |c| {
        q_slice(c, &x, Values::F32(&[1.0]), Some(zp_f8), Layout::PerTensor, &f8, &mut [0; 12])
    });
}

#[test]
fn slice_quantize_range_rejects_bad_ranges() {
    let x = [1.0f32; 10];
    let opts = QuantizeOptions::new(DataType::U4);
    for cfg in configs().map(|(_, c)| c) {
        let run = |range: std::ops::Range<usize>, part: &mut [u8]| {
            qdq::quantize_range_with(
                &cfg,
                Values::F32(&x),
                &qparams(Values::F32(&[1.0]), None, Layout::PerTensor, &opts),
                range,
                qdq::PackedMut::new(opts.output, part),
            )
        };
        // Start not on a byte boundary for every packed type, end past the tensor, reversed.
        #[allow(clippy::reversed_empty_ranges)] // the reversed range is the point
        let bad_ranges = [1..8, 0..12, 8..4, 0..5];
        for r in bad_ranges {
            expect(run(r.clone(), &mut [0; 5]), ErrorKind::InvalidArgument, "range");
        }
        expect(run(4..10, &mut [0; 2]), ErrorKind::BufferLength, "y_part: elements 4..10 of u4 need 3 bytes, got 2");
        // The whole-call checks still apply.
        let bad = qdq::quantize_range_with(
            &cfg,
            Values::F32(&x),
            &qparams(Values::F32(&[1.0, 2.0]), None, Layout::PerTensor, &opts),
            0..4,
            qdq::PackedMut::new(opts.output, &mut [0; 2]),
        );
        expect(bad, ErrorKind::BufferLength, "scales has 2 elements");
        run(4..10, &mut [0; 3]).unwrap();
        // Empty shards anywhere, even at an end that is no byte boundary.
        run(10..10, &mut []).unwrap();
        let five = [1.0f32; 5];
        let i4 = |range: std::ops::Range<usize>, part: &mut [u8]| {
            qdq::quantize_range_with(
                &cfg,
                &five,
                &qdq::Params::per_tensor(1.0),
                range,
                qdq::PackedMut::new(DataType::I4, part),
            )
        };
        i4(5..5, &mut []).unwrap();
        i4(4..5, &mut [0]).unwrap();
        expect(i4(3..5, &mut [0]), ErrorKind::InvalidArgument, "multiples of 2 elements (a byte boundary of i4)");
        let e2m3 = qdq::quantize_range_with(
            &cfg,
            &x,
            &qdq::Params::per_tensor(1.0),
            2..8,
            qdq::PackedMut::new(DataType::E2M3, &mut [0; 5]),
        );
        expect(e2m3, ErrorKind::InvalidArgument, "multiples of 4 elements");
    }
}

fn dq_slice(
    cfg: Option<&qdq::Config>,
    x: Packed<'_>,
    scale: Values<'_>,
    zp: Option<Packed<'_>>,
    layout: Layout,
    y: &mut [f32],
) -> Result<(), Error> {
    match cfg {
        None => qdq_ref::dequantize(x, &dparams(scale, zp, layout), ValuesMut::F32(y)),
        Some(c) => qdq::dequantize_with(c, x, &dparams(scale, zp, layout), ValuesMut::F32(y)),
    }
}

#[test]
fn slice_dequantize_rejects_bad_lengths_types_and_layouts() {
    let codes = [7u8; 12];
    let x = Packed { dtype: DataType::U8, len: 12, data: &codes };
    let one = Values::F32(&[1.0]);
    // x's bytes do not match its length and type (12 int4 elements are 6 bytes).
    let x_i4 = Packed { dtype: DataType::I4, len: 12, data: &codes };
    everywhere(ErrorKind::BufferLength, "x", |c| dq_slice(c, x_i4, one, None, Layout::PerTensor, &mut [0.0; 12]));
    // y length.
    everywhere(ErrorKind::BufferLength, "y has 11 elements but x has 12", |c| {
        dq_slice(c, x, one, None, Layout::PerTensor, &mut [0.0; 11])
    });
    // Type tags: x f32, scale i32.
    let x_f32 = Packed { dtype: DataType::F32, len: 3, data: &codes };
    everywhere(ErrorKind::UnsupportedType, "x has type f32", |c| {
        dq_slice(c, x_f32, one, None, Layout::PerTensor, &mut [0.0; 3])
    });
    everywhere(ErrorKind::UnsupportedType, "scales has type i32", |c| {
        dq_slice(c, x, Values::I32(&[1]), None, Layout::PerTensor, &mut [0.0; 12])
    });
    // Layouts: wrong scale count, overflowing product, zero block.
    everywhere(ErrorKind::BufferLength, "scales has 1 elements", |c| {
        dq_slice(c, x, one, None, Layout::PerAxis { outer: 3, axis_len: 4, inner: 1 }, &mut [0.0; 12])
    });
    everywhere(ErrorKind::BufferLength, "more than usize::MAX", |c| {
        dq_slice(c, x, one, None, Layout::PerAxis { outer: 2, axis_len: usize::MAX, inner: 2 }, &mut [0.0; 12])
    });
    everywhere(ErrorKind::InvalidArgument, "block must be positive", |c| {
        dq_slice(c, x, one, None, Layout::Blocked { outer: 1, axis_len: 12, inner: 1, block: 0 }, &mut [0.0; 12])
    });
    // Zero point of another type, of another count.
    let zp_i8 = Packed { dtype: DataType::I8, len: 1, data: &[0] };
    everywhere(ErrorKind::TypeMismatch, "zero_points has type i8 but x has type u8", |c| {
        dq_slice(c, x, one, Some(zp_i8), Layout::PerTensor, &mut [0.0; 12])
    });
    let zp3 = Packed { dtype: DataType::U8, len: 3, data: &[0; 3] };
    everywhere(ErrorKind::BufferLength, "zero_points has 3 elements but scales has 1", |c| {
        dq_slice(c, x, one, Some(zp3), Layout::PerTensor, &mut [0.0; 12])
    });
    // Ranges.
    for (_, cfg) in configs() {
        let r = qdq::dequantize_range_with(
            &cfg,
            x,
            &dparams(one, None, Layout::PerTensor),
            5..13,
            ValuesMut::F32(&mut [0.0; 8]),
        );
        expect(r, ErrorKind::InvalidArgument, "range 5..13 does not lie within 0..12");
        let r = qdq::dequantize_range_with(
            &cfg,
            x,
            &dparams(one, None, Layout::PerTensor),
            2..5,
            ValuesMut::F32(&mut [0.0; 4]),
        );
        expect(r, ErrorKind::BufferLength, "y_part has 4 elements but the range 2..5 has 3");
    }
}

#[test]
fn slice_dynamic_quantize_rejects_bad_lengths() {
    let x = [1.0f32; 5];
    expect(qdq_ref::dynamic_quantize(&x, &mut [0; 4]), ErrorKind::BufferLength, "y has 4 elements but x has 5");
    for (name, cfg) in configs() {
        let e = qdq::dynamic_quantize_with(&cfg, &x, &mut [0; 6]).expect_err(&name);
        assert_eq!(e.kind(), ErrorKind::BufferLength);
        assert!(e.message().contains("y has 6 elements but x has 5"), "{e}");
    }
}

/// Runs a node on the reference and on every configuration; all must fail alike.
#[track_caller]
fn node_everywhere(
    kind: ErrorKind,
    needle: &str,
    op: &str,
    opset: Opset,
    inputs: &[Option<TensorRef<'_>>],
    attrs: &[Attribute<'_>],
    outputs: usize,
) {
    everywhere(kind, needle, |c| match c {
        None => qdq_ref::run_node(op, opset, inputs, attrs, outputs),
        Some(c) => qdq::run_node_with(c, op, opset, inputs, attrs, outputs),
    });
}

#[test]
fn tensor_api_rejects_hostile_shapes_axes_blocks_and_types() {
    let xb = f32_bytes(&[1.0; 12]);
    let x = TensorRef { dtype: DataType::F32, shape: &[3, 4], data: &xb };
    let sb = f32_bytes(&[1.0; 4]);
    let s4 = TensorRef { dtype: DataType::F32, shape: &[4], data: &sb };
    let s1 = TensorRef { dtype: DataType::F32, shape: &[], data: &sb[..4] };
    let q = "QuantizeLinear";
    let axis = |v| Attribute { name: "axis", value: v };
    let block = |v| Attribute { name: "block_size", value: v };
    // Axis far out of range, both ways.
    for a in [i64::MIN, i64::MAX, 2, -3] {
        node_everywhere(ErrorKind::AxisOutOfRange, "axis", q, V25, &[Some(x), Some(s4)], &[axis(a)], 1);
    }
    // Block sizes: negative, zero with a blocked scale, huge (one block), wrong scale extent.
    let sbk = TensorRef { dtype: DataType::F32, shape: &[3, 1], data: &sb[..12] };
    node_everywhere(
        ErrorKind::InvalidAttribute,
        "block_size must be non-negative",
        q,
        V25,
        &[Some(x), Some(sbk)],
        &[block(-1)],
        1,
    );
    node_everywhere(
        ErrorKind::ShapeMismatch,
        "y_scale has shape [3, 1]",
        q,
        V25,
        &[Some(x), Some(sbk)],
        &[block(0)],
        1,
    );
    node_everywhere(
        ErrorKind::ShapeMismatch,
        "ceil(x.shape[1] / block_size) = ceil(4 / 2) = 2",
        q,
        V25,
        &[Some(x), Some(sbk)],
        &[block(2)],
        1,
    );
    let want = qdq_ref::run_node(q, V25, &[Some(x), Some(sbk)], &[block(i64::MAX)], 1).unwrap();
    for (name, cfg) in configs() {
        assert_eq!(
            qdq::run_node_with(&cfg, q, V25, &[Some(x), Some(sbk)], &[block(i64::MAX)], 1).unwrap(),
            want,
            "{name}"
        );
    }
    // Element counts that overflow usize: x, scale, zero point.
    let big = [usize::MAX / 2, 3];
    let xo = TensorRef { dtype: DataType::F32, shape: &big, data: &xb };
    node_everywhere(ErrorKind::ShapeOverflow, "x: the element count of shape", q, V25, &[Some(xo), Some(s1)], &[], 1);
    let so = TensorRef { dtype: DataType::F32, shape: &big, data: &sb };
    node_everywhere(ErrorKind::ShapeOverflow, "y_scale", q, V25, &[Some(x), Some(so)], &[], 1);
    let zo = TensorRef { dtype: DataType::U8, shape: &big, data: &[0] };
    node_everywhere(ErrorKind::ShapeOverflow, "y_zero_point", q, V25, &[Some(x), Some(s1), Some(zo)], &[], 1);
    // Byte counts that overflow: u16 elements of a shape whose element count fits.
    let xu16 = TensorRef { dtype: DataType::U16, shape: &[usize::MAX / 2 + 1], data: &[] };
    node_everywhere(ErrorKind::ShapeOverflow, "x", "DequantizeLinear", V25, &[Some(xu16), Some(s1)], &[], 1);
    // Buffer lengths.
    let short = TensorRef { data: &xb[..47], ..x };
    node_everywhere(
        ErrorKind::BufferLength,
        "x: shape [3, 4] of f32 needs 48 bytes, got 47",
        q,
        V25,
        &[Some(short), Some(s1)],
        &[],
        1,
    );
    let zs = TensorRef { dtype: DataType::U8, shape: &[4], data: &[0; 3] };
    node_everywhere(ErrorKind::BufferLength, "y_zero_point", q, V25, &[Some(x), Some(s4), Some(zs)], &[], 1);
    // Zero point and scale shapes that differ.
    let z3 = TensorRef { dtype: DataType::U8, shape: &[3], data: &[0; 3] };
    node_everywhere(
        ErrorKind::ShapeMismatch,
        "y_zero_point has shape [3] but y_scale has shape [4]",
        q,
        V25,
        &[Some(x), Some(s4), Some(z3)],
        &[],
        1,
    );
    // Type tags: u8 data into QuantizeLinear, f32 into DequantizeLinear, f16 into DynamicQuantizeLinear.
    let xu8 = TensorRef { dtype: DataType::U8, shape: &[4], data: &[1; 4] };
    node_everywhere(ErrorKind::UnsupportedType, "x", q, V25, &[Some(xu8), Some(s1)], &[], 1);
    node_everywhere(ErrorKind::UnsupportedType, "x", "DequantizeLinear", V25, &[Some(x), Some(s1)], &[], 1);
    let xf16 = TensorRef { dtype: DataType::F16, shape: &[2], data: &[0; 4] };
    node_everywhere(ErrorKind::UnsupportedType, "x", "DynamicQuantizeLinear", Opset::onnx(11), &[Some(xf16)], &[], 3);
    // Arity and unknown operators.
    node_everywhere(ErrorKind::Arity, "QuantizeLinear", q, V25, &[Some(x)], &[], 1);
    node_everywhere(
        ErrorKind::Arity,
        "DynamicQuantizeLinear",
        "DynamicQuantizeLinear",
        Opset::onnx(11),
        &[Some(x)],
        &[],
        2,
    );
    node_everywhere(ErrorKind::UnsupportedOpset, "Quantize", "Quantize", V25, &[Some(x), Some(s1)], &[], 1);
}

/// Fuzz regression (tensor_api): a zero dimension in front of dimensions whose product
/// overflows used to overflow the per-axis "inner" product; a zero dimension after them
/// used to be reported as an overflowing element count. Both are empty tensors.
#[test]
fn zero_dimension_beside_huge_dimensions_is_an_empty_tensor() {
    let m = usize::MAX;
    let one = 1.0f32.to_le_bytes();
    for (shape, axis, s_shape) in [
        (vec![0, m, m], 0i64, vec![0usize]),
        (vec![m, m, 0], 2, vec![0]),
        (vec![0, m, m], 2, vec![]),
        (vec![m, 0, m], 1, vec![0]),
    ] {
        let x = TensorRef { dtype: DataType::F32, shape: &shape, data: &[] };
        let sdata: &[u8] = if s_shape.is_empty() { &one } else { &[] };
        let s = TensorRef { dtype: DataType::F32, shape: &s_shape, data: sdata };
        let a = QuantizeAttributes { axis: Some(axis), ..Default::default() };
        let want = qdq_ref::quantize_linear(V25, x, s, None, &a).unwrap();
        assert_eq!((want.shape().to_vec(), want.bytes().len(), want.len()), (shape.clone(), 0, 0));
        assert_eq!(qdq::quantize_linear(V25, x, s, None, &a).unwrap(), want);
        let xq = TensorRef { dtype: DataType::I4, shape: &shape, data: &[] };
        let d = DequantizeAttributes { axis: Some(axis), ..Default::default() };
        let want = qdq_ref::dequantize_linear(V25, xq, s, None, &d).unwrap();
        assert_eq!(want.bytes().len(), 0);
        for (name, cfg) in configs() {
            let got = qdq_ref::tensor::dequantize_linear_with(&qdq::Fast(cfg), V25, xq, s, None, &d).unwrap();
            assert_eq!(got, want, "{name}");
        }
    }
    // Blocked, with the huge dimensions on both sides of the axis.
    let x = TensorRef { dtype: DataType::F32, shape: &[m, 0, m], data: &[] };
    let s = TensorRef { dtype: DataType::F32, shape: &[m, 0, m], data: &[] };
    let a = QuantizeAttributes { axis: Some(1), block_size: Some(4), ..Default::default() };
    let want = qdq_ref::quantize_linear(V25, x, s, None, &a).unwrap();
    assert_eq!(qdq::quantize_linear(V25, x, s, None, &a).unwrap(), want);
}

/// Found by `quantize_diff`: an empty tensor blocked along a zero-length last axis (with
/// a block size the 8-bit blocked kernel takes) divided by the axis length in that kernel.
/// Every empty blocked / per-axis layout now returns what the reference returns.
#[test]
fn empty_blocked_and_per_axis_layouts_quantize_like_the_reference() {
    let scale = [0.5f32; 4];
    for layout in [
        Layout::Blocked { outer: 3, axis_len: 0, inner: 1, block: 32 },
        Layout::Blocked { outer: 0, axis_len: 64, inner: 1, block: 32 },
        Layout::Blocked { outer: 1, axis_len: 0, inner: 1, block: 64 },
        Layout::PerAxis { outer: 3, axis_len: 0, inner: 1 },
        Layout::PerAxis { outer: 0, axis_len: 64, inner: 1 },
    ] {
        for output in [DataType::I8, DataType::U8, DataType::I4, DataType::E4M3Fn] {
            let opts = QuantizeOptions { output, saturate: true, precision: None };
            for ns in [0usize, 1, 4] {
                let sc = Values::F32(&scale[..ns]);
                let mut want = [0xa5u8; 4];
                let r = q_slice(None, &[], sc, None, layout, &opts, &mut want[..0]);
                for (name, cfg) in configs() {
                    let mut got = [0xa5u8; 4];
                    let g = q_slice(Some(&cfg), &[], sc, None, layout, &opts, &mut got[..0]);
                    assert_eq!(g, r, "{name}: {layout:?} {output} scales {ns}");
                    assert_eq!(got, want, "{name}: {layout:?} {output}");
                }
            }
        }
    }
}

/// Every empty blocked layout dequantizes like the reference, huge and zero block sizes on
/// an empty axis included (the `tensor_api` fuzz target found the blocked-last kernel
/// overflowing its group size for block 2^60 on a `[0, 0]` tensor).
#[test]
fn empty_blocked_layouts_dequantize_like_the_reference() {
    let scale = [0.5f32; 4];
    for layout in [
        Layout::Blocked { outer: 0, axis_len: 0, inner: 1, block: 1 << 60 },
        Layout::Blocked { outer: 3, axis_len: 0, inner: 1, block: usize::MAX / 3 },
        Layout::Blocked { outer: 3, axis_len: 0, inner: 1, block: 0 },
        Layout::Blocked { outer: 3, axis_len: 0, inner: 1, block: 32 },
        Layout::Blocked { outer: 0, axis_len: 64, inner: 1, block: 32 },
    ] {
        for dtype in [DataType::I8, DataType::U8, DataType::I4, DataType::E4M3Fn, DataType::E2M1] {
            let x = Packed { dtype, len: 0, data: &[] };
            for ns in [0usize, 1, 4] {
                let sc = Values::F32(&scale[..ns]);
                let r = dq_slice(None, x, sc, None, layout, &mut []);
                for (name, cfg) in configs() {
                    let g = dq_slice(Some(&cfg), x, sc, None, layout, &mut []);
                    assert_eq!(g, r, "{name}: {layout:?} {dtype} scales {ns}");
                }
            }
        }
    }
}

/// The tensor-level backend reports an ISA the CPU lacks as an error (it used to fall back
/// to the reference silently).
#[test]
fn tensor_backend_reports_an_unavailable_isa() {
    let Some(isa) = qdq::Isa::ALL.into_iter().find(|i| !i.is_available()) else {
        println!("skipped: this CPU has every ISA, so none can be unavailable");
        return;
    };
    let cfg = qdq::Config::default().with_isa(isa);
    let x = f32_bytes(&[0.5, -1.0, 3.0]);
    let one = f32_bytes(&[1.0]);
    let xt = TensorRef { dtype: DataType::F32, shape: &[3], data: &x };
    let s = TensorRef { dtype: DataType::F32, shape: &[], data: &one };
    let q = qdq_ref::tensor::quantize_linear_with(&qdq::Fast(cfg), V25, xt, s, None, &QuantizeAttributes::default());
    let e = expect(q, ErrorKind::IsaUnavailable, "not available");
    assert!(e.message().contains(isa.name()), "{e}");
    let codes = [1u8, 2, 3];
    let xq = TensorRef { dtype: DataType::U8, shape: &[3], data: &codes };
    let d =
        qdq_ref::tensor::dequantize_linear_with(&qdq::Fast(cfg), V25, xq, s, None, &DequantizeAttributes::default());
    expect(d, ErrorKind::IsaUnavailable, "not available");
    let dq = qdq_ref::tensor::dynamic_quantize_linear_with(&qdq::Fast(cfg), Opset::onnx(11), xt);
    expect(dq, ErrorKind::IsaUnavailable, "not available");
}
