//! The one walk over a range of elements that every kernel uses: quantize, dequantize, the
//! training forwards and backwards, and the reductions.
//!
//! ```text
//! for each segment [start, stop) of the layout within [begin, end)     (segments.rs)
//!   Splat(k):  p = op.splat(k)                   one broadcast scale for the run
//!              op.splat_run(p, start, stop), by default:
//!                head:  op.part(p, i, t)          t = min(op.head(i), LANES, stop - i)
//!                body:  op.steps(p, k, i, n)      n = (stop - i) / (4 LANES) whole steps
//!                tail:  op.part(p, i, t)          t = min(LANES, stop - i)
//!   Seq(k0):   op.seq_run(k0, start, stop), by default per vector from i:
//!                t = op.head(i) if nonzero, else LANES (at most stop - i)
//!                p = op.seq(k0 + i - start, t)    per-lane scales
//!                aligned and t == LANES ? op.vector(p, i) : op.part(p, i, t)
//! ```
//!
//! A kernel supplies its parameters ([`RunOp::splat`], [`RunOp::seq`]), its alignment
//! ([`RunOp::head`]: the elements to its next packing-group or mask-byte boundary) and
//! its per-vector work; the head/body/tail structure, and the fix to it, live here once.
//! [`RunOp::steps`] gets whole steps of four vectors from an aligned element, so a kernel
//! can iterate over exactly their bytes (`chunks_exact`, no bounds checks in the loop).

use crate::segments::{Scales, Segment};
use crate::simd::Simd;

/// The per-vector work of one kernel over one ISA (see the module docs).
pub(crate) trait RunOp<S: Simd> {
    /// The scale parameters of a vector (broadcast or per lane).
    type P;

    /// Elements from `i` to the kernel's next alignment boundary (0 when `i` is on one).
    fn head(&self, i: usize) -> usize;
    /// The parameters of scale index `k`, broadcast.
    fn splat(&self, simd: S, k: usize) -> Self::P;
    /// The parameters of scale indices `k .. k + valid`, one per lane (the rest padding).
    fn seq(&self, simd: S, k: usize, valid: usize) -> Self::P;
    /// `take` (`<= LANES`) elements from `i`, at any position; `k` is the scale index of
    /// element `i`.
    fn part(&mut self, simd: S, p: &Self::P, k: usize, i: usize, take: usize);
    /// One whole vector from `i` with per-lane parameters, `i` aligned.
    #[inline(always)]
    fn vector(&mut self, simd: S, p: &Self::P, k: usize, i: usize) {
        self.part(simd, p, k, i, S::LANES)
    }
    /// `n` whole steps of four vectors from the aligned element `i`, broadcast parameters of
    /// scale index `k`. The default is one [`RunOp::part`] per vector; kernels override it
    /// with a loop over exactly the steps' bytes.
    #[inline(always)]
    fn steps(&mut self, simd: S, p: &Self::P, k: usize, i: usize, n: usize) {
        for v in 0..4 * n {
            self.part(simd, p, k, i + v * S::LANES, S::LANES);
        }
    }

    /// A run `[i, stop)` with the broadcast parameters of scale index `k`.
    #[inline(always)]
    fn splat_run(&mut self, simd: S, p: &Self::P, k: usize, i: usize, stop: usize) {
        splat_run(simd, self, p, k, i, stop)
    }
    /// A run `[i, stop)` of a segment starting at `start` whose scale index is
    /// `k0 + (element - start)`.
    #[inline(always)]
    fn seq_run(&mut self, simd: S, k0: usize, start: usize, i: usize, stop: usize) {
        seq_run(simd, self, k0, start, i, stop)
    }
}

/// Walks `segments` (from [`crate::segments::Segments`]) with `op`.
#[inline(always)]
pub(crate) fn walk<S: Simd, O: RunOp<S> + ?Sized>(simd: S, op: &mut O, segments: impl Iterator<Item = Segment>) {
    for seg in segments {
        let stop = seg.start + seg.len;
        match seg.scales {
            Scales::Splat(k) => {
                let p = op.splat(simd, k);
                op.splat_run(simd, &p, k, seg.start, stop);
            }
            Scales::Seq(k0) => op.seq_run(simd, k0, seg.start, seg.start, stop),
        }
    }
}

/// The default [`RunOp::splat_run`]: head, whole steps, tail.
#[inline(always)]
pub(crate) fn splat_run<S: Simd, O: RunOp<S> + ?Sized>(
    simd: S,
    op: &mut O,
    p: &O::P,
    k: usize,
    mut i: usize,
    stop: usize,
) {
    let lanes = S::LANES;
    loop {
        let h = op.head(i);
        if h == 0 || i >= stop {
            break;
        }
        let t = h.min(lanes).min(stop - i);
        op.part(simd, p, k, i, t);
        i += t;
    }
    let n = (stop - i) / (4 * lanes);
    if n > 0 {
        op.steps(simd, p, k, i, n);
        i += n * 4 * lanes;
    }
    while i < stop {
        let t = lanes.min(stop - i);
        op.part(simd, p, k, i, t);
        i += t;
    }
}

/// The default [`RunOp::seq_run`]: one vector of per-lane parameters at a time.
#[inline(always)]
pub(crate) fn seq_run<S: Simd, O: RunOp<S> + ?Sized>(
    simd: S,
    op: &mut O,
    k0: usize,
    start: usize,
    mut i: usize,
    stop: usize,
) {
    let lanes = S::LANES;
    while i < stop {
        let h = op.head(i);
        let t = if h > 0 { h.min(lanes) } else { lanes }.min(stop - i);
        let k = k0 + (i - start);
        let p = op.seq(simd, k, t);
        if h == 0 && t == lanes {
            op.vector(simd, &p, k, i);
        } else {
            op.part(simd, &p, k, i, t);
        }
        i += t;
    }
}
