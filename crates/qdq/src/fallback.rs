//! The combinations without a vector kernel run `qdq_ref`'s scalar code element by
//! element (same results by construction): an i32 scale (its division is in f64), an i32
//! x with an f16 / bf16 division precision, and DequantizeLinear of i32 x with a zero
//! point.

use qdq_ref::{packing, DataType, Layout, Packed, Precision, QuantizeOptions, TensorRef};
use std::ops::Range;

/// QuantizeLinear of the elements `range` into `y` (the bytes of that range).
#[allow(clippy::too_many_arguments)]
pub(crate) fn quantize(
    x: (DataType, &[u8]),
    scale: (DataType, &[u8]),
    zero_point: Option<Packed<'_>>,
    layout: Layout,
    opts: &QuantizeOptions,
    precision: Precision,
    range: Range<usize>,
    y: &mut [u8],
) {
    let xt = TensorRef { dtype: x.0, shape: &[], data: x.1 };
    let st = TensorRef { dtype: scale.0, shape: &[], data: scale.1 };
    for i in range.clone() {
        let k = layout.scale_index(i);
        let xv = qdq_ref::tensor::wide_value(&xt, i);
        let sv = qdq_ref::tensor::wide_value(&st, k);
        let z = zero_point.as_ref().map(|zp| qdq_ref::quantize::zero_point_value(zp, k));
        let code = qdq_ref::quantize::quantize_value(xv, sv, z, opts.output, precision, opts.saturate);
        packing::set(opts.output, y, i - range.start, code);
    }
}

/// DequantizeLinear of the elements `range` into `y` (the bytes of that range).
pub(crate) fn dequantize(
    x: &Packed<'_>,
    scale: (DataType, &[u8]),
    zero_point: Option<&Packed<'_>>,
    layout: Layout,
    out: DataType,
    range: Range<usize>,
    y: &mut [u8],
) {
    let st = TensorRef { dtype: scale.0, shape: &[], data: scale.1 };
    let os = out.bits() as usize / 8;
    for i in range.clone() {
        let k = layout.scale_index(i);
        let s = qdq_ref::tensor::wide_value(&st, k) as f32;
        let v = qdq_ref::dequantize::dequantize_value(x, i, zero_point.map(|z| (z, k)), s);
        let at = (i - range.start) * os;
        qdq_ref::tensor::put_wide(out, &mut y[at..at + os], v);
    }
}
