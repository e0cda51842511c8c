//! Walking a layout as runs of elements that share their scale pattern.
//!
//! Every granularity decomposes the flat element range into *segments*, contiguous runs
//! in which the scale index is either constant ([`Scales::Splat`]: per-tensor, per-axis
//! with an inner extent, blocked along the last axis) or advances by one per element
//! ([`Scales::Seq`]: per-axis along the last axis, blocked along a middle axis). Kernels
//! then broadcast one scale or load scale vectors alongside x, and never look a scale up
//! per element. The walk keeps `(outer, axis, inner)` coordinates incrementally, so a
//! segment costs a few additions, not a division.

use qdq_ref::Layout;

/// How the scale index behaves within a segment.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Scales {
    /// Scale `k` for every element.
    Splat(usize),
    /// Scale `k + t` for the segment's element `t`.
    Seq(usize),
}

/// A run `[start, start + len)` of flat element indices and its scales.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct Segment {
    pub start: usize,
    pub len: usize,
    pub scales: Scales,
}

impl Segment {
    /// The part of this segment whose scale indices lie in `groups`, if any.
    #[inline]
    pub(crate) fn within(self, groups: core::ops::Range<usize>) -> Option<Segment> {
        match self.scales {
            Scales::Splat(k) => groups.contains(&k).then_some(self),
            Scales::Seq(k0) => {
                let (lo, hi) = (k0.max(groups.start), (k0 + self.len).min(groups.end));
                (lo < hi).then(|| Segment { start: self.start + (lo - k0), len: hi - lo, scales: Scales::Seq(lo) })
            }
        }
    }
}

/// Iterator over the segments of `layout` that cover `[begin, end)`.
pub(crate) struct Segments {
    layout: Layout,
    e: usize,
    end: usize,
    // Coordinates of `e`: outer index, axis index, inner index.
    o: usize,
    d: usize,
    j: usize,
}

impl Segments {
    pub(crate) fn new(layout: Layout, begin: usize, end: usize) -> Segments {
        let (o, d, j) = match layout {
            Layout::PerTensor => (0, 0, 0),
            Layout::PerAxis { axis_len, inner, .. } | Layout::Blocked { axis_len, inner, .. } => {
                if begin >= end {
                    (0, 0, 0)
                } else {
                    let per_outer = axis_len * inner;
                    let r = begin % per_outer;
                    (begin / per_outer, r / inner, r % inner)
                }
            }
        };
        Segments { layout, e: begin, end, o, d, j }
    }

    /// Moves `len` elements along the axis (inner size 1), to the next outer index at
    /// its end.
    #[inline]
    fn advance_axis(&mut self, len: usize, axis_len: usize) {
        self.d += len;
        if self.d == axis_len {
            self.d = 0;
            self.o += 1;
        }
    }

    /// Moves `len` elements along the inner dimension, to the next axis index at its end.
    #[inline]
    fn advance_inner(&mut self, len: usize, inner: usize, axis_len: usize) {
        self.j += len;
        if self.j == inner {
            self.j = 0;
            self.advance_axis(1, axis_len);
        }
    }
}

impl Iterator for Segments {
    type Item = Segment;

    #[inline]
    fn next(&mut self) -> Option<Segment> {
        if self.e >= self.end {
            return None;
        }
        let left = self.end - self.e;
        let (len, scales) = match self.layout {
            Layout::PerTensor => (left, Scales::Splat(0)),
            Layout::PerAxis { axis_len, inner: 1, .. } => {
                let len = (axis_len - self.d).min(left);
                let seg = (len, Scales::Seq(self.d));
                self.advance_axis(len, axis_len);
                seg
            }
            Layout::PerAxis { axis_len, inner, .. } => {
                let len = (inner - self.j).min(left);
                let seg = (len, Scales::Splat(self.d));
                self.advance_inner(len, inner, axis_len);
                seg
            }
            Layout::Blocked { axis_len, inner, block, .. } => {
                let blocks = axis_len.div_ceil(block);
                let k_row = self.o * blocks + self.d / block;
                if inner == 1 {
                    let block_end = ((self.d / block + 1) * block).min(axis_len);
                    let len = (block_end - self.d).min(left);
                    self.advance_axis(len, axis_len);
                    (len, Scales::Splat(k_row))
                } else {
                    let len = (inner - self.j).min(left);
                    let seg = (len, Scales::Seq(k_row * inner + self.j));
                    self.advance_inner(len, inner, axis_len);
                    seg
                }
            }
        };
        let seg = Segment { start: self.e, len, scales };
        self.e += len;
        Some(seg)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn check(layout: Layout, n: usize) {
        for begin in 0..=n {
            for end in begin..=n {
                let mut e = begin;
                for seg in Segments::new(layout, begin, end) {
                    assert_eq!(seg.start, e);
                    assert!(seg.len > 0);
                    for t in 0..seg.len {
                        let k = match seg.scales {
                            Scales::Splat(k) => k,
                            Scales::Seq(k) => k + t,
                        };
                        assert_eq!(k, layout.scale_index(e + t), "{layout:?} element {}", e + t);
                    }
                    e += seg.len;
                }
                assert_eq!(e, end);
                // Clipped to a range of groups: exactly the elements whose scale index is in
                // it, each with its own index.
                let groups = (begin % 3)..(end % 5 + 1);
                let mut kept = Vec::new();
                for seg in Segments::new(layout, begin, end).filter_map(|s| s.within(groups.clone())) {
                    for t in 0..seg.len {
                        let k = match seg.scales {
                            Scales::Splat(k) => k,
                            Scales::Seq(k) => k + t,
                        };
                        assert_eq!(
                            k,
                            layout.scale_index(seg.start + t),
                            "{layout:?} clipped, element {}",
                            seg.start + t
                        );
                        kept.push(seg.start + t);
                    }
                }
                let want: Vec<usize> = (begin..end).filter(|&e| groups.contains(&layout.scale_index(e))).collect();
                assert_eq!(kept, want, "{layout:?} [{begin}, {end}) within {groups:?}");
            }
        }
    }

    #[test]
    fn segments_match_scale_index() {
        check(Layout::PerTensor, 7);
        check(Layout::PerAxis { outer: 2, axis_len: 3, inner: 1 }, 6);
        check(Layout::PerAxis { outer: 2, axis_len: 3, inner: 2 }, 12);
        check(Layout::PerAxis { outer: 1, axis_len: 5, inner: 1 }, 5);
        check(Layout::Blocked { outer: 2, axis_len: 5, inner: 1, block: 2 }, 10);
        check(Layout::Blocked { outer: 2, axis_len: 5, inner: 3, block: 2 }, 30);
        check(Layout::Blocked { outer: 3, axis_len: 4, inner: 1, block: 4 }, 12);
        check(Layout::Blocked { outer: 1, axis_len: 3, inner: 2, block: 7 }, 6);
    }
}
