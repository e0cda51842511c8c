//! Quantization granularity: which scale (and zero point) applies to which element.
//!
//! x is viewed as `[outer, D, inner]` around the quantization axis `a'` (D = x.shape[a']).
//!
//! | layout | scale count | scale index of element `(o, d, j)` |
//! |---|---|---|
//! | per-tensor | 1 | 0 |
//! | per-axis | `D` | `d` |
//! | blocked (block B) | `outer * ceil(D/B) * inner` | `(o * ceil(D/B) + d / B) * inner + j` |
//!
//! The last block along the axis may be short: with D=4, B=3 the blocks are {0,1,2} and {3}.
//!
//! [`resolve`] picks the layout from tensor shapes with this rule, which agrees
//! with onnxruntime: a scalar or `[1]` scale with `block_size == 0` is per-tensor (`axis`
//! is then ignored, even out of range); a 1-D scale with `block_size == 0` is per-axis; a
//! scale of x's rank with `block_size > 0` is blocked and must have shape
//! `x.shape` with `ceil(D/B)` at the axis. The zero point must have the scale's shape,
//! except that a scalar and a `[1]` tensor are interchangeable (the official tests use
//! both mixes).

use crate::error::{bail, Result};

/// How scales map onto the elements of x (see the module docs).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Layout {
    /// One scale for the whole tensor.
    PerTensor,
    /// x is `[outer, axis_len, inner]`; scale `d` applies to axis index `d`.
    PerAxis {
        /// Product of the dimensions before the axis.
        outer: usize,
        /// The axis dimension (= number of scales).
        axis_len: usize,
        /// Product of the dimensions after the axis.
        inner: usize,
    },
    /// x is `[outer, axis_len, inner]`; scales are `[outer, ceil(axis_len / block), inner]`.
    Blocked {
        /// Product of the dimensions before the axis.
        outer: usize,
        /// The axis dimension.
        axis_len: usize,
        /// Product of the dimensions after the axis.
        inner: usize,
        /// Elements per block along the axis (> 0).
        block: usize,
    },
}

impl Layout {
    /// Per-axis layout of a tensor of shape `shape` along `axis` (negative counts from the
    /// end): one scale per index of that axis.
    ///
    /// ```
    /// use qdq_ref::Layout;
    /// assert_eq!(Layout::per_axis(&[2, 3, 4], 1)?, Layout::PerAxis { outer: 2, axis_len: 3, inner: 4 });
    /// assert_eq!(Layout::per_axis(&[2, 3, 4], -1)?, Layout::PerAxis { outer: 6, axis_len: 4, inner: 1 });
    /// assert!(Layout::per_axis(&[2, 3], 2).is_err());
    /// # Ok::<(), qdq_ref::Error>(())
    /// ```
    pub fn per_axis(shape: &[usize], axis: isize) -> Result<Layout> {
        let (outer, axis_len, inner) = split(shape, axis)?;
        Ok(Layout::PerAxis { outer, axis_len, inner })
    }

    /// Blocked layout of a tensor of shape `shape`: blocks of `block` consecutive indices
    /// along `axis` (negative counts from the end) share a scale. The scales have shape
    /// `shape` with `ceil(shape[axis] / block)` at the axis, in row-major order.
    ///
    /// ```
    /// use qdq_ref::Layout;
    /// let l = Layout::blocked(&[4, 64], -1, 32)?;
    /// assert_eq!(l, Layout::Blocked { outer: 4, axis_len: 64, inner: 1, block: 32 });
    /// assert_eq!(l.scale_count(256)?, 8);
    /// assert!(Layout::blocked(&[4, 64], 1, 0).is_err());
    /// # Ok::<(), qdq_ref::Error>(())
    /// ```
    pub fn blocked(shape: &[usize], axis: isize, block: usize) -> Result<Layout> {
        if block == 0 {
            bail!(InvalidArgument, "block must be positive for a blocked layout, got 0");
        }
        let (outer, axis_len, inner) = split(shape, axis)?;
        Ok(Layout::Blocked { outer, axis_len, inner, block })
    }

    /// Checks that the layout describes `n` elements and returns the number of scales it
    /// needs. Errors name `input` (the argument that carries x).
    ///
    /// ```
    /// use qdq_ref::Layout;
    /// let l = Layout::PerAxis { outer: 2, axis_len: 3, inner: 4 };
    /// assert_eq!(l.scale_count(24)?, 3);
    /// assert!(l.scale_count(23).is_err());
    /// assert_eq!(Layout::Blocked { outer: 2, axis_len: 4, inner: 1, block: 3 }.scale_count(8)?, 4);
    /// assert_eq!(Layout::PerTensor.scale_count(10)?, 1);
    /// # Ok::<(), qdq_ref::Error>(())
    /// ```
    pub fn scale_count(&self, n: usize) -> Result<usize> {
        match *self {
            Layout::PerTensor => Ok(1),
            Layout::PerAxis { outer, axis_len, inner } => {
                check_elements(n, outer, axis_len, inner)?;
                Ok(axis_len)
            }
            Layout::Blocked { outer, axis_len, inner, block } => {
                if block == 0 {
                    // Only a slice-level layout can hold it: the tensor API makes `block_size
                    // = 0` per-tensor or per-axis.
                    bail!(InvalidArgument, "block must be positive for a blocked layout, got 0");
                }
                check_elements(n, outer, axis_len, inner)?;
                if outer == 0 || axis_len == 0 || inner == 0 {
                    // An empty tensor (the other factors may be anything).
                    return Ok(0);
                }
                // Cannot overflow: it is at most outer * axis_len * inner = n.
                Ok(outer * axis_len.div_ceil(block) * inner)
            }
        }
    }

    /// Index of the scale that applies to element `i`. The layout must have been checked
    /// with [`Layout::scale_count`].
    ///
    /// ```
    /// use qdq_ref::Layout;
    /// let l = Layout::Blocked { outer: 2, axis_len: 4, inner: 1, block: 3 };
    /// let idx: Vec<usize> = (0..8).map(|i| l.scale_index(i)).collect();
    /// assert_eq!(idx, [0, 0, 0, 1, 2, 2, 2, 3]);
    /// assert_eq!(Layout::PerAxis { outer: 1, axis_len: 3, inner: 2 }.scale_index(5), 2);
    /// ```
    pub fn scale_index(&self, i: usize) -> usize {
        match *self {
            Layout::PerTensor => 0,
            Layout::PerAxis { axis_len, inner, .. } => (i / inner) % axis_len,
            Layout::Blocked { axis_len, inner, block, .. } => {
                let per_outer = axis_len * inner;
                let (o, r) = (i / per_outer, i % per_outer);
                let (d, j) = (r / inner, r % inner);
                (o * axis_len.div_ceil(block) + d / block) * inner + j
            }
        }
    }
}

fn check_elements(n: usize, outer: usize, axis_len: usize, inner: usize) -> Result<()> {
    // A zero factor makes the layout empty whatever the others are (as `element_count`).
    let total = if outer == 0 || axis_len == 0 || inner == 0 {
        Some(0)
    } else {
        outer.checked_mul(axis_len).and_then(|v| v.checked_mul(inner))
    };
    if total != Some(n) {
        bail!(
            BufferLength,
            "layout [outer={outer}, axis={axis_len}, inner={inner}] describes {} elements but x has {n}",
            total.map_or_else(|| "more than usize::MAX".to_string(), |t| t.to_string())
        );
    }
    Ok(())
}

/// `shape` as `[outer, shape[axis], inner]`, for the slice-level constructors.
fn split(shape: &[usize], axis: isize) -> Result<(usize, usize, usize)> {
    let rank = shape.len() as isize;
    let a = if axis < 0 { axis + rank } else { axis };
    if !(0..rank).contains(&a) {
        bail!(
            AxisOutOfRange,
            "axis {axis} is out of range for shape {shape:?} (rank {rank}, valid range [{}, {}])",
            -rank,
            rank - 1
        );
    }
    let a = a as usize;
    element_count("shape", shape)?;
    Ok((partial_product(shape, &shape[..a])?, shape[a], partial_product(shape, &shape[a + 1..])?))
}

/// Number of elements of a shape, with overflow reported as an error naming `input`.
///
/// A shape with a zero dimension has no elements whatever its other dimensions are, so
/// `[usize::MAX, usize::MAX, 0]` is an empty tensor, exactly like `[0, usize::MAX, usize::MAX]`
/// (the order of the dimensions does not decide whether the product "overflows").
///
/// ```
/// use qdq_ref::{layout::element_count, ErrorKind};
/// assert_eq!(element_count("x", &[2, 3, 4])?, 24);
/// assert_eq!(element_count("x", &[])?, 1);
/// assert_eq!(element_count("x", &[usize::MAX, usize::MAX, 0])?, 0);
/// assert_eq!(element_count("x", &[usize::MAX, 2]).unwrap_err().kind(), ErrorKind::ShapeOverflow);
/// # Ok::<(), qdq_ref::Error>(())
/// ```
pub fn element_count(input: &str, shape: &[usize]) -> Result<usize> {
    if shape.contains(&0) {
        return Ok(0);
    }
    let mut n: usize = 1;
    for d in shape {
        n = match n.checked_mul(*d) {
            Some(v) => v,
            None => bail!(ShapeOverflow, "{input}: the element count of shape {shape:?} overflows usize"),
        };
    }
    Ok(n)
}

/// Product of `dims`, a run of x's dimensions. It can only overflow when another dimension
/// of x is zero (x's own element count was checked); the layout then covers no element and
/// 0 is as good a factor as any.
fn partial_product(x_shape: &[usize], dims: &[usize]) -> Result<usize> {
    match dims.iter().try_fold(1usize, |p, &d| p.checked_mul(d)) {
        Some(p) => Ok(p),
        None if x_shape.contains(&0) => Ok(0),
        None => bail!(ShapeOverflow, "x: the element count of shape {x_shape:?} overflows usize"),
    }
}

/// Normalises a possibly negative axis against `rank`.
///
/// ```
/// use qdq_ref::{layout::normalize_axis, ErrorKind};
/// assert_eq!(normalize_axis(-1, 3)?, 2);
/// assert_eq!(normalize_axis(1, 3)?, 1);
/// assert_eq!(normalize_axis(3, 3).unwrap_err().kind(), ErrorKind::AxisOutOfRange);
/// assert!(normalize_axis(-4, 3).is_err());
/// # Ok::<(), qdq_ref::Error>(())
/// ```
pub fn normalize_axis(axis: i64, rank: usize) -> Result<usize> {
    let r = rank as i64;
    let a = if axis < 0 { axis.checked_add(r) } else { Some(axis) };
    match a {
        Some(a) if (0..r).contains(&a) => Ok(a as usize),
        _ => {
            bail!(AxisOutOfRange, "axis {axis} is out of range for x of rank {rank} (valid range [{}, {}])", -r, r - 1)
        }
    }
}

/// Which granularities an operator version allows.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Allowed {
    /// 1-D per-axis scales.
    pub per_axis: bool,
    /// Blocked scales (`block_size > 0`).
    pub blocked: bool,
}

/// Picks and validates the layout from shapes (see the module docs). `scale_name` and
/// `zp_name` are the ONNX input names used in messages (`y_scale`, `x_scale`, ...).
///
/// ```
/// use qdq_ref::layout::{resolve, Allowed, Layout};
/// let (all, names) = (Allowed { per_axis: true, blocked: true }, ("y_scale", "y_zero_point"));
/// assert_eq!(resolve(&[3, 4], &[1], Some(&[]), 1, 0, all, names)?, Layout::PerTensor);
/// assert_eq!(resolve(&[3, 4], &[4], None, -1, 0, all, names)?, Layout::PerAxis { outer: 3, axis_len: 4, inner: 1 });
/// let blocked = Layout::Blocked { outer: 3, axis_len: 4, inner: 1, block: 3 };
/// assert_eq!(resolve(&[3, 4], &[3, 2], None, 1, 3, all, names)?, blocked);
/// assert!(resolve(&[3, 4], &[3, 2], None, 1, 4, all, names).is_err()); // needs ceil(4 / 4) = 1
/// # Ok::<(), qdq_ref::Error>(())
/// ```
pub fn resolve(
    x_shape: &[usize],
    scale_shape: &[usize],
    zp_shape: Option<&[usize]>,
    axis: i64,
    block_size: i64,
    allowed: Allowed,
    names: (&str, &str),
) -> Result<Layout> {
    let (scale_name, zp_name) = names;
    if block_size < 0 {
        bail!(InvalidAttribute, "block_size must be non-negative, got {block_size}");
    }
    if let Some(zs) = zp_shape {
        let is_unit = |s: &[usize]| s.is_empty() || s == [1];
        if zs != scale_shape && !(is_unit(zs) && is_unit(scale_shape)) {
            bail!(
                ShapeMismatch,
                "{zp_name} has shape {zs:?} but {scale_name} has shape {scale_shape:?}; they must be equal \
                 (a scalar and a [1] tensor are interchangeable)"
            );
        }
    }
    let rank = x_shape.len();
    if block_size == 0 {
        return match scale_shape {
            [] | [1] => Ok(Layout::PerTensor),
            [len] => {
                if !allowed.per_axis {
                    bail!(
                        ShapeMismatch,
                        "{scale_name} must be a scalar or [1] at this opset (per-tensor only), got shape {scale_shape:?}"
                    );
                }
                let a = normalize_axis(axis, rank)?;
                if *len != x_shape[a] {
                    bail!(
                        ShapeMismatch,
                        "per-axis {scale_name} must have length x.shape[{a}] = {} (x shape {x_shape:?}, axis {axis}), got {len}",
                        x_shape[a]
                    );
                }
                Ok(Layout::PerAxis {
                    outer: partial_product(x_shape, &x_shape[..a])?,
                    axis_len: x_shape[a],
                    inner: partial_product(x_shape, &x_shape[a + 1..])?,
                })
            }
            _ => bail!(
                ShapeMismatch,
                "{scale_name} has shape {scale_shape:?}: with block_size = 0 it must be a scalar, [1] (per-tensor) \
                 or 1-D (per-axis); a scale of rank {} needs block_size > 0",
                scale_shape.len()
            ),
        };
    }
    if !allowed.blocked {
        bail!(UnknownAttribute, "block_size is not defined for this operator version");
    }
    let b = usize::try_from(block_size).unwrap_or(usize::MAX);
    if scale_shape.len() != rank {
        bail!(
            ShapeMismatch,
            "blocked quantization (block_size {block_size}) needs {scale_name} of the same rank as x: \
             x shape {x_shape:?}, {scale_name} shape {scale_shape:?}{}",
            if scale_shape.is_empty() || scale_shape == [1] {
                "; block_size must be 0 for per-tensor quantization"
            } else {
                ""
            }
        );
    }
    let a = normalize_axis(axis, rank)?;
    for (i, (xd, sd)) in x_shape.iter().zip(scale_shape).enumerate() {
        if i != a && xd != sd {
            bail!(
                ShapeMismatch,
                "blocked {scale_name} shape {scale_shape:?} must equal x shape {x_shape:?} except along axis {a}; \
                 dimension {i} differs"
            );
        }
    }
    let d = x_shape[a];
    let want = d.div_ceil(b);
    if scale_shape[a] != want {
        bail!(
            ShapeMismatch,
            "blocked {scale_name} must have ceil(x.shape[{a}] / block_size) = ceil({d} / {block_size}) = {want} \
             entries along axis {a}, got {} (x shape {x_shape:?}, {scale_name} shape {scale_shape:?})",
            scale_shape[a]
        );
    }
    Ok(Layout::Blocked {
        outer: partial_product(x_shape, &x_shape[..a])?,
        axis_len: d,
        inner: partial_product(x_shape, &x_shape[a + 1..])?,
        block: b,
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::error::ErrorKind;

    const ALL: Allowed = Allowed { per_axis: true, blocked: true };
    const N: (&str, &str) = ("y_scale", "y_zero_point");

    #[test]
    fn granularity_selection() {
        assert_eq!(resolve(&[3, 4], &[], None, 7, 0, ALL, N), Ok(Layout::PerTensor));
        assert_eq!(resolve(&[3, 4], &[1], Some(&[]), 7, 0, ALL, N), Ok(Layout::PerTensor));
        assert_eq!(resolve(&[3, 4], &[], Some(&[1]), 1, 0, ALL, N), Ok(Layout::PerTensor));
        assert_eq!(
            resolve(&[3, 4], &[4], None, -1, 0, ALL, N),
            Ok(Layout::PerAxis { outer: 3, axis_len: 4, inner: 1 })
        );
        assert_eq!(
            resolve(&[2, 3, 5], &[3], None, 1, 0, ALL, N),
            Ok(Layout::PerAxis { outer: 2, axis_len: 3, inner: 5 })
        );
        assert_eq!(
            resolve(&[3, 4], &[3, 2], None, 1, 3, ALL, N),
            Ok(Layout::Blocked { outer: 3, axis_len: 4, inner: 1, block: 3 })
        );
        assert_eq!(
            resolve(&[4], &[1], None, 0, 100, ALL, N),
            Ok(Layout::Blocked { outer: 1, axis_len: 4, inner: 1, block: 100 })
        );
        assert_eq!(
            resolve(&[3, 0], &[3, 0], None, 1, 2, ALL, N),
            Ok(Layout::Blocked { outer: 3, axis_len: 0, inner: 1, block: 2 })
        );
    }

    #[test]
    fn blocked_index_with_remainder_block() {
        let l = Layout::Blocked { outer: 2, axis_len: 4, inner: 1, block: 3 };
        assert_eq!(l.scale_count(8), Ok(4));
        let idx: Vec<usize> = (0..8).map(|i| l.scale_index(i)).collect();
        assert_eq!(idx, [0, 0, 0, 1, 2, 2, 2, 3]);
        let l = Layout::Blocked { outer: 1, axis_len: 3, inner: 2, block: 2 };
        let idx: Vec<usize> = (0..6).map(|i| l.scale_index(i)).collect();
        assert_eq!(idx, [0, 1, 0, 1, 2, 3]);
    }

    #[test]
    fn errors() {
        let kind = |r: Result<Layout>| r.unwrap_err().kind();
        assert_eq!(kind(resolve(&[3, 4], &[4], None, 2, 0, ALL, N)), ErrorKind::AxisOutOfRange);
        assert_eq!(kind(resolve(&[3, 4], &[4], None, i64::MIN, 0, ALL, N)), ErrorKind::AxisOutOfRange);
        assert_eq!(kind(resolve(&[3, 4], &[4], None, i64::MAX, 0, ALL, N)), ErrorKind::AxisOutOfRange);
        assert_eq!(kind(resolve(&[3, 4], &[3], None, 1, 0, ALL, N)), ErrorKind::ShapeMismatch);
        assert_eq!(kind(resolve(&[3, 4], &[4], Some(&[]), 1, 0, ALL, N)), ErrorKind::ShapeMismatch);
        assert_eq!(kind(resolve(&[3, 4], &[1, 1], None, 1, 0, ALL, N)), ErrorKind::ShapeMismatch);
        assert_eq!(kind(resolve(&[3, 4], &[3, 2], None, 1, -1, ALL, N)), ErrorKind::InvalidAttribute);
        assert_eq!(kind(resolve(&[3, 4], &[], None, 1, 2, ALL, N)), ErrorKind::ShapeMismatch);
        assert_eq!(kind(resolve(&[3, 4], &[2], None, 1, 2, ALL, N)), ErrorKind::ShapeMismatch);
        assert_eq!(kind(resolve(&[3, 4], &[2, 2], None, 1, 2, ALL, N)), ErrorKind::ShapeMismatch);
        assert_eq!(kind(resolve(&[3, 4], &[3, 2], None, 1, 1, ALL, N)), ErrorKind::ShapeMismatch);
        assert_eq!(kind(resolve(&[3, 4], &[3, 2], None, 1, 4, ALL, N)), ErrorKind::ShapeMismatch);
        let e = resolve(&[3, 4], &[3, 2], None, 1, 4, ALL, N).unwrap_err();
        assert!(e.message().contains("ceil(4 / 4) = 1"), "{e}");
        let v10 = Allowed { per_axis: false, blocked: false };
        assert_eq!(kind(resolve(&[3, 4], &[4], None, 1, 0, v10, N)), ErrorKind::ShapeMismatch);
        assert_eq!(kind(resolve(&[3, 4], &[3, 2], None, 1, 2, v10, N)), ErrorKind::UnknownAttribute);
        assert_eq!(kind(element_count("x", &[usize::MAX, 2]).map(|_| Layout::PerTensor)), ErrorKind::ShapeOverflow);
        let l = Layout::PerAxis { outer: usize::MAX, axis_len: 2, inner: 1 };
        assert_eq!(l.scale_count(4).unwrap_err().kind(), ErrorKind::BufferLength);
    }
}
