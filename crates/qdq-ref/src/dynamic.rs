//! DynamicQuantizeLinear-11: per-tensor u8 quantization with a computed scale and zero
//! point, following the normative function body, every step in f32:
//!
//! ```text
//! lo    = min(min(x), 0)          hi = max(max(x), 0)
//! scale = (hi - lo) / 255                              f32 subtraction, f32 division
//! zp    = u8(roundTiesEven(clamp(0 - lo / scale, 0, 255)))
//! y     = QuantizeLinear(x, scale, zp)                 as in crate::quantize (f32 division)
//! ```
//!
//! Where the implementations disagree (rules R17 and R18 of the README's table of reference deviations) this crate chooses:
//!
//! | input | result | why |
//! |---|---|---|
//! | range 0 (all zeros) | scale 0, zp 0, y = 0 | what the function body computes (ORT gives scale 1, the reference 1/255); every choice dequantizes to 0 |
//! | empty x | scale 0, zp 0, y = [] | not an error; an empty min/max is the range-0 case |
//! | NaN elements | ignored by min/max; a NaN element quantizes to 0 (qmin) | onnxruntime's kernel; the most useful reading, and the QuantizeLinear NaN rule |
//! | all NaN | scale 0, zp 0, y = 0 | range 0 |
//! | ±inf | scale inf; zp from the formula; y per QuantizeLinear | the formula; `[1, inf]` gives y = [0, 0], scale inf, zp 0 as in ref and ORT |
//! | NaN intermediate zero point (`-inf / inf`) | zp 0 | NaN to an integer gives qmin, as in QuantizeLinear |

use crate::dtype::DataType;
use crate::error::{bail, Result};
use crate::quantize::{quantize_value, Precision};

/// NaN-ignoring min and max of the values, each clamped to include 0 (f32, as in the
/// function body).
///
/// ```
/// use qdq_ref::dynamic::range;
/// assert_eq!(range([1.0, f32::NAN, 3.5].into_iter()), (0.0, 3.5));
/// assert_eq!(range([-2.0, -1.0].into_iter()), (-2.0, 0.0));
/// assert_eq!(range(std::iter::empty()), (0.0, 0.0));
/// ```
pub fn range(values: impl Iterator<Item = f32>) -> (f32, f32) {
    let (mut lo, mut hi) = (0.0f32, 0.0f32);
    for v in values {
        // Comparisons with NaN are false, so NaN never replaces lo or hi.
        if v < lo {
            lo = v;
        }
        if v > hi {
            hi = v;
        }
    }
    (lo, hi)
}

/// Scale and zero point from the range (see the module docs).
///
/// ```
/// use qdq_ref::dynamic::scale_and_zero_point;
/// assert_eq!(scale_and_zero_point(-51.0, 204.0), (1.0, 51));
/// assert_eq!(scale_and_zero_point(-3.0, 2.0), (5.0 / 255.0, 153));
/// assert_eq!(scale_and_zero_point(0.0, 0.0), (0.0, 0)); // range 0
/// ```
pub fn scale_and_zero_point(lo: f32, hi: f32) -> (f32, u8) {
    let scale = (hi - lo) / 255.0f32;
    let izp = 0.0f32 - lo / scale;
    let zp = if izp.is_nan() { 0.0 } else { izp.clamp(0.0, 255.0).round_ties_even() };
    (scale, zp as u8)
}

/// Quantizes one element with a computed scale and zero point (f32 division).
///
/// ```
/// use qdq_ref::dynamic::dynamic_value;
/// assert_eq!(dynamic_value(2.5, 1.0, 51), 53); // 2.5 rounds to 2 (ties to even)
/// assert_eq!(dynamic_value(300.0, 1.0, 51), 255);
/// assert_eq!(dynamic_value(-100.0, 1.0, 51), 0);
/// assert_eq!(dynamic_value(f32::NAN, 1.0, 51), 0);
/// ```
pub fn dynamic_value(x: f32, scale: f32, zero_point: u8) -> u8 {
    quantize_value(x as f64, scale as f64, Some(zero_point as f64), DataType::U8, Precision::F32, true) as u8
}

/// DynamicQuantizeLinear into a caller-provided buffer; returns `(scale, zero_point)`.
/// Allocates nothing.
///
/// ```
/// use qdq_ref::dynamic::dynamic_quantize;
/// let mut y = [0u8; 6];
/// let (scale, zp) = dynamic_quantize(&[0.0, 2.0, -3.0, -2.5, 1.34, 0.5], &mut y)?;
/// assert_eq!((scale, zp), (5.0 / 255.0, 153));
/// assert_eq!(y, [153, 255, 0, 26, 221, 179]);
/// assert!(dynamic_quantize(&[1.0], &mut []).is_err());
/// # Ok::<(), qdq_ref::Error>(())
/// ```
pub fn dynamic_quantize(x: &[f32], y: &mut [u8]) -> Result<(f32, u8)> {
    if y.len() != x.len() {
        bail!(BufferLength, "y has {} elements but x has {}", y.len(), x.len());
    }
    let (lo, hi) = range(x.iter().copied());
    let (scale, zp) = scale_and_zero_point(lo, hi);
    for (o, v) in y.iter_mut().zip(x) {
        *o = dynamic_value(*v, scale, zp);
    }
    Ok((scale, zp))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn run(x: &[f32]) -> (Vec<u8>, f32, u8) {
        let mut y = vec![0xaa; x.len()];
        let (s, z) = dynamic_quantize(x, &mut y).unwrap();
        (y, s, z)
    }

    #[test]
    fn official_examples() {
        let (y, s, z) = run(&[0.0, 2.0, -3.0, -2.5, 1.34, 0.5]);
        assert_eq!(s.to_bits(), 0.019607844f32.to_bits());
        assert_eq!(z, 153);
        assert_eq!(y, [153, 255, 0, 26, 221, 179]); // 0.5 / s = 25.5 exactly: ties to 26
        let (_, s, z) = run(&[-1.0, -2.1, -1.3, -2.5, -3.34, -4.0]);
        assert_eq!((s, z), (0.015686275, 255));
        let (_, s, z) = run(&[1.0, 2.1, 1.3, 2.5, 3.34, 4.0, 1.5, 2.6, 3.9, 4.0, 3.0, 2.345]);
        assert_eq!((s, z), (0.015686275, 0));
    }

    #[test]
    fn edge_cases() {
        // Tie in the zero point: 100.5 rounds to 100.
        let (_, s, z) = run(&[-201.0 / 512.0, 309.0 / 512.0]);
        assert_eq!((s, z), (2f32.powi(-8), 100));
        // No flush to zero.
        let (y, s, z) = run(&[0.0, 1e-40]);
        assert_eq!((y, s, z), (vec![0, 255], 1e-40 / 255.0, 0));
        // Range 0, empty, all NaN.
        assert_eq!(run(&[0.0, 0.0]), (vec![0, 0], 0.0, 0));
        assert_eq!(run(&[]), (vec![], 0.0, 0));
        assert_eq!(run(&[f32::NAN]), (vec![0], 0.0, 0));
        // NaN ignored in min/max; NaN element -> 0.
        let (y, s, z) = run(&[1.0, f32::NAN, -1.0]);
        assert_eq!((y, s, z), (vec![254, 0, 0], 2.0 / 255.0, 127));
        // Infinities.
        assert_eq!(run(&[1.0, f32::INFINITY]), (vec![0, 0], f32::INFINITY, 0));
        let (y, s, z) = run(&[1.0, f32::NEG_INFINITY]);
        assert_eq!((s, z), (f32::INFINITY, 0));
        assert_eq!(y, [0, 0]);
        assert_eq!(dynamic_quantize(&[1.0], &mut []).unwrap_err().kind(), crate::ErrorKind::BufferLength);
    }
}
