//! The combinations without a vector kernel run `qdq_ref`'s scalar code element by
//! element (same results by construction): an i32 scale (its division is in f64), an i32
//! x with an f16 / bf16 division precision, and DequantizeLinear of i32 x with a zero
//! point.

use qdq_ref::{packing, DequantizePlan, QuantizePlan};
use std::ops::Range;

/// QuantizeLinear of the elements `range` into `y` (the bytes of that range).
pub(crate) fn quantize(plan: &QuantizePlan<'_>, range: Range<usize>, y: &mut [u8]) {
    let opts = plan.opts;
    for i in range.clone() {
        let k = plan.layout.scale_index(i);
        let xv = qdq_ref::tensor::wide_value(&plan.x, i);
        let sv = qdq_ref::tensor::wide_value(&plan.scale, k);
        let z = plan.zero_point.as_ref().map(|zp| qdq_ref::quantize::zero_point_value(zp, k));
        let code = qdq_ref::quantize::quantize_value(xv, sv, z, opts.output, plan.precision, opts.saturate);
        packing::set(opts.output, y, i - range.start, code);
    }
}

/// DequantizeLinear of the elements `range` into `y` (the bytes of that range).
pub(crate) fn dequantize(plan: &DequantizePlan<'_>, range: Range<usize>, y: &mut [u8]) {
    let os = plan.output.bits() as usize / 8;
    for i in range.clone() {
        let k = plan.layout.scale_index(i);
        let s = qdq_ref::tensor::wide_value(&plan.scale, k) as f32;
        let v = qdq_ref::dequantize::dequantize_value(&plan.x, i, plan.zero_point.as_ref().map(|z| (z, k)), s);
        let at = (i - range.start) * os;
        qdq_ref::tensor::put_wide(plan.output, &mut y[at..at + os], v);
    }
}
