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
//!
//! Per-axis along the last axis and blocked along another axis ([`RowTiles`]: rows whose
//! scale index advances with the element, each group of rows sharing one row of scales
//! from index `kb`), the segment walk sets up a run per row (one per channel block of
//! every row); [`walk_tiled`] instead takes each tile's parameters once per group and
//! runs every whole row of the group through it:
//!
//! ```text
//! rows wholly inside [begin, end), per group of rows, channel tiles of PER_AXIS_TILE vectors:
//!   op.seq_tiles(kb + c0, p[..], tc)                once per tile and group:
//!     p[v] = op.seq_tile(kb + c0 + v LANES, t)      (or the kernel's own, whole tiles)
//!   op.rows(p[..], ..) where the tile is the whole row (contiguous rows), else per row:
//!   op.row(p[..], k, i), the whole vectors (op.part for a partial last one)
//! the partial rows at either end: the segment walk
//! ```

use crate::isa::IsaKernel;
use crate::segments::{Scales, Segment, Segments};
use crate::simd::Simd;
use qdq_ref::Layout;

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
    /// [`RunOp::seq`] for a [`walk_tiled`] tile, whose parameters serve every row: a
    /// kernel may spend more on them here (a vector reciprocal).
    #[inline(always)]
    fn seq_tile(&self, simd: S, k: usize, valid: usize) -> Self::P {
        self.seq(simd, k, valid)
    }
    /// The parameters of a [`walk_tiled`] tile of `valid` channels from scale index `k`:
    /// `p[v]` those of vector `v` ([`RunOp::seq_tile`] of its lanes; `p` has a vector per
    /// `LANES` channels, the last one partial where `valid` is not a multiple). A kernel
    /// may take whole tiles faster than a vector at a time (one dispatch on the types).
    #[inline(always)]
    fn seq_tiles(&self, simd: S, k: usize, p: &mut [Self::P], valid: usize) {
        seq_each(simd, self, k, p, valid)
    }
    /// Whole vectors from element `i` (on a packing group), vector `v` with parameters
    /// `p[v]` (scale index `k + v LANES`): a row of a [`walk_tiled`] tile.
    #[inline(always)]
    fn row(&mut self, simd: S, p: &[Self::P], k: usize, i: usize) {
        for (v, pv) in p.iter().enumerate() {
            self.vector(simd, pv, k + v * S::LANES, i + v * S::LANES);
        }
    }
    /// `nrows` consecutive rows of `p.len()` whole vectors from element `i` (on a packing
    /// group), each with the parameters `p` (the [`walk_tiled`] rows of a tile that is
    /// every channel).
    #[inline(always)]
    fn rows(&mut self, simd: S, p: &[Self::P], k: usize, i: usize, nrows: usize) {
        for r in 0..nrows {
            self.row(simd, p, k, i + r * p.len() * S::LANES);
        }
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

/// The default [`RunOp::seq_tiles`]: [`RunOp::seq_tile`] a vector at a time.
#[inline(always)]
pub(crate) fn seq_each<S: Simd, O: RunOp<S> + ?Sized>(simd: S, op: &O, k: usize, p: &mut [O::P], valid: usize) {
    for (v, pv) in p.iter_mut().enumerate() {
        *pv = op.seq_tile(simd, k + v * S::LANES, S::LANES.min(valid - v * S::LANES));
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

/// Vectors of channels per tile of [`walk_tiled`]: their parameters stay in registers
/// or the first cache lines of the stack while the rows run.
pub(crate) const PER_AXIS_TILE: usize = 16;

/// A layout seen as rows of `channels` elements whose scale indices advance with the
/// element, consecutive rows sharing one row of scales (a *group*): per-axis along the
/// last axis (`[rows, C]`, scale `e % C`: every row one group) and blocked along any other
/// axis (`[outer, D, inner]`, blocks of `B` along D: row `(o, d)` has scales
/// `(o * ceil(D / B) + d / B) * inner ..`, a group per block of rows).
#[derive(Clone, Copy, Debug)]
pub(crate) struct RowTiles {
    /// Elements per row.
    pub channels: usize,
    /// Blocked: `(D, B, ceil(D / B))`; per-axis: `None`.
    blocked: Option<(usize, usize, usize)>,
}

impl RowTiles {
    /// The rows of `layout` when the channel tiles can take it: per-axis along the last axis
    /// or blocked along another axis, at least a vector of channels, and every vector on a
    /// packing group of `gmask + 1` elements counted from `origin` (where the kernel's
    /// alignment starts: 0 for the input's groups, the range start for the output's), so
    /// the channel count and `origin` multiples of the group.
    pub(crate) fn of<S: Simd>(layout: Layout, gmask: usize, origin: usize) -> Option<RowTiles> {
        let (channels, blocked) = match layout {
            Layout::PerAxis { axis_len, inner: 1, .. } => (axis_len, None),
            Layout::Blocked { axis_len, inner, block, .. } if inner > 1 && axis_len > 0 && block > 0 => {
                (inner, Some((axis_len, block, axis_len.div_ceil(block))))
            }
            _ => return None,
        };
        (channels >= S::LANES && (channels | origin) & gmask == 0).then_some(RowTiles { channels, blocked })
    }

    /// Whether every whole group has a multiple of `rows` rows (per-axis: one group of
    /// every row, which a range may cut anywhere; a kernel takes the rest).
    pub(crate) fn groups_fill(&self, rows: usize) -> bool {
        match self.blocked {
            None => true,
            Some((_, b, _)) => b.is_multiple_of(rows),
        }
    }

    /// The groups of rows met from row `r0` to row `r1`: `(kb, g0, g1)`, the rows `g0..g1`
    /// (cut at `r0` and `r1`) sharing the scales from index `kb`, as [`RowTiles::group`]
    /// gives them, but counted on from one group to the next instead of divided per
    /// group (two divisions a group, on the critical path of the next group's setup).
    pub(crate) fn groups(&self, r0: usize, r1: usize) -> Groups {
        let (kb, next) = self.group(r0);
        let (d, block) = self.blocked.map_or((usize::MAX, 0), |(d, b, _)| (d, b));
        let axis_end = (r0 - r0 % d).saturating_add(d);
        Groups { channels: self.channels, d, block, kb, r: r0, next, axis_end, r1 }
    }

    /// Row `r`'s group: the scale index of its first element, and the first row past the
    /// group.
    #[inline]
    pub(crate) fn group(&self, r: usize) -> (usize, usize) {
        match self.blocked {
            None => (0, usize::MAX),
            Some((d, b, nb)) => {
                let (o, a) = (r / d, r % d);
                ((o * nb + a / b) * self.channels, o * d + ((a / b + 1) * b).min(d))
            }
        }
    }
}

/// The iterator of [`RowTiles::groups`]. After the first group, every group starts on a
/// block of rows: it ends a block on (`block` rows), or where the blocked axis does,
/// whichever is first, and its scales are the next row of scales (`channels` on).
pub(crate) struct Groups {
    channels: usize,
    /// The blocked axis's length and rows per block (`usize::MAX` and 0: per-axis, one
    /// group of every row).
    d: usize,
    block: usize,
    /// The scale index of the next group's first element.
    kb: usize,
    /// Its first row, the first row past it (not cut at `r1`), and the first row past its
    /// run of the blocked axis.
    r: usize,
    next: usize,
    axis_end: usize,
    r1: usize,
}

impl Iterator for Groups {
    type Item = (usize, usize, usize);

    #[inline]
    fn next(&mut self) -> Option<(usize, usize, usize)> {
        if self.r >= self.r1 {
            return None;
        }
        let item = (self.kb, self.r, self.next.min(self.r1));
        let g1 = self.next;
        if g1 == self.axis_end {
            self.axis_end = g1.saturating_add(self.d);
        }
        self.kb += self.channels;
        self.r = g1;
        self.next = g1.saturating_add(self.block).min(self.axis_end);
        Some(item)
    }
}

/// Consecutive rows of a tile's input and output bytes, `(x row, y row)` pairs of `xl` and
/// `yl` bytes until `x` is used up: what `x.chunks_exact(xl).zip(y.chunks_exact_mut(yl))`
/// gives for exactly the rows' bytes (at `xl > 0`), without its two divisions (the zip
/// counts its length up front) and with nothing to build out of line (at run-time
/// lengths, that zip became a call per group of rows in some variants: AVX2 DQ i4 and MX
/// e2m1 blocked-middle32 ran 0.87-0.9x with it). A short `y` ends the rows early.
pub(crate) struct RowPairs<'x, 'y> {
    x: &'x [u8],
    y: &'y mut [u8],
    xl: usize,
    yl: usize,
}

impl<'x, 'y> RowPairs<'x, 'y> {
    /// Rows of `xl` bytes of `x` and `yl` bytes of `y` (none where `xl` is 0).
    #[inline(always)]
    pub(crate) fn new(x: &'x [u8], y: &'y mut [u8], xl: usize, yl: usize) -> Self {
        // No rows of no x bytes: then the first split of `y` (made empty, rows of one
        // byte) ends them, with no test per row for it.
        if xl == 0 {
            return RowPairs { x: &x[..0], y: &mut y[..0], xl, yl: 1 };
        }
        RowPairs { x, y, xl, yl }
    }
}

impl<'x, 'y> Iterator for RowPairs<'x, 'y> {
    type Item = (&'x [u8], &'y mut [u8]);

    #[inline(always)]
    fn next(&mut self) -> Option<Self::Item> {
        let (xr, xs) = self.x.split_at_checked(self.xl)?;
        let (yr, ys) = core::mem::take(&mut self.y).split_at_mut_checked(self.yl)?;
        (self.x, self.y) = (xs, ys);
        Some((xr, yr))
    }
}

/// [`walk`] over `[begin, end)`, or, with `rows = Some(..)` (see [`RowTiles`]), the rows
/// wholly inside the range group by group and tile by tile, each tile's parameters taken
/// once per group (see the module docs), and the partial rows at either end by [`walk`].
/// With `Some`, every vector must start where [`RunOp::head`] is 0 ([`RowTiles::of`]
/// checks it).
///
/// One call site of [`walk`] here, for the caller's other layouts too: each inlined copy of
/// the walk is a large part of a kernel variant's code. Kernels call it from the variants
/// that tile only, under a constant condition, so that the others do not instantiate
/// [`Tiles`] (a fifth more build time otherwise).
#[inline(always)]
pub(crate) fn walk_tiled<S: Simd, O: RunOp<S>>(
    simd: S,
    mut op: O,
    layout: Layout,
    begin: usize,
    end: usize,
    rows: Option<RowTiles>,
) where
    O::P: Copy,
{
    // The ranges left to the walk: all of it, or the partial rows at either end.
    let mut rest = [(begin, end), (end, end)];
    if let Some(rows) = rows {
        let channels = rows.channels;
        let (r0, r1) = (begin.div_ceil(channels), end / channels);
        if r0 < r1 {
            rest = [(begin, r0 * channels), (r1 * channels, end)];
            op = simd.enter(Tiles { op, rows, r0, r1 });
        }
    }
    for (b, e) in rest {
        if b < e {
            walk(simd, &mut op, Segments::new(layout, b, e));
        }
    }
}

/// The whole rows `r0..r1` of [`walk_tiled`], group by group and tile by tile, as a kernel
/// of its own (see [`Simd::enter`]): an unoptimised build gives the tile's parameters and
/// the inlined row code their own frame instead of adding them to the walk's.
///
/// It owns the op while it runs (and hands it back): a local the optimiser keeps in
/// registers, where through a reference every store to the output would reload it.
struct Tiles<O> {
    op: O,
    rows: RowTiles,
    r0: usize,
    r1: usize,
}

impl<S: Simd, O: RunOp<S>> IsaKernel<S> for Tiles<O>
where
    O::P: Copy,
{
    type Output = O;
    #[inline(always)]
    fn run_on(self, simd: S) -> O {
        let Tiles { mut op, rows, r0, r1 } = self;
        // One parameter array for every group (each tile fills its first vectors).
        let mut params = [op.seq_tile(simd, rows.group(r0).0, S::LANES); PER_AXIS_TILE];
        for (kb, g0, g1) in rows.groups(r0, r1) {
            tiles(simd, &mut op, &mut params, rows.channels, kb, g0, g1);
        }
        op
    }
}

/// Rows `r0..r1` of `channels` elements sharing the scales from index `kb`, tile by tile,
/// each tile's parameters in `params`.
#[inline(always)]
fn tiles<S: Simd, O: RunOp<S> + ?Sized>(
    simd: S,
    op: &mut O,
    params: &mut [O::P; PER_AXIS_TILE],
    channels: usize,
    kb: usize,
    r0: usize,
    r1: usize,
) where
    O::P: Copy,
{
    let lanes = S::LANES;
    let mut c0 = 0;
    while c0 < channels {
        let tc = (PER_AXIS_TILE * lanes).min(channels - c0);
        let nv = tc.div_ceil(lanes);
        op.seq_tiles(simd, kb + c0, &mut params[..nv], tc);
        let full = tc / lanes;
        if full == nv && tc == channels {
            op.rows(simd, &params[..full], kb, r0 * channels, r1 - r0);
            return;
        }
        for row in r0..r1 {
            let e0 = row * channels + c0;
            op.row(simd, &params[..full], kb + c0, e0);
            if full < nv {
                let v = full;
                op.part(simd, &params[v], kb + c0 + v * lanes, e0 + v * lanes, tc - v * lanes);
            }
        }
        c0 += tc;
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::isa::scalar::Scalar as Portable;

    /// Every row's group: the scale index of each of its elements, and the rows that share
    /// it (exactly those up to the group's end).
    #[test]
    fn row_groups_match_scale_index() {
        let layouts = [
            Layout::PerAxis { outer: 5, axis_len: 8, inner: 1 },
            Layout::Blocked { outer: 3, axis_len: 7, inner: 8, block: 3 },
            Layout::Blocked { outer: 2, axis_len: 9, inner: 12, block: 9 },
            Layout::Blocked { outer: 4, axis_len: 5, inner: 16, block: 1 },
            Layout::Blocked { outer: 1, axis_len: 10, inner: 8, block: 16 },
        ];
        for layout in layouts {
            let rows = RowTiles::of::<Portable>(layout, 0, 0).expect("row tiles");
            let c = rows.channels;
            let n = layout_len(layout);
            let nrows = n / c;
            for r in 0..nrows {
                let (kb, next) = rows.group(r);
                assert!(next > r, "{layout:?} row {r}");
                for g in r..next.min(nrows) {
                    for j in 0..c {
                        assert_eq!(layout.scale_index(g * c + j), kb + j, "{layout:?} row {g} of group from {r}");
                    }
                }
                if next < nrows {
                    assert_ne!(layout.scale_index(next * c), kb, "{layout:?}: row {next} starts a new group");
                }
            }
            // The counted groups of every row range are those of `group`, cut at its ends.
            for r0 in 0..=nrows {
                for r1 in r0..=nrows {
                    let mut want = Vec::new();
                    let mut r = r0;
                    while r < r1 {
                        let (kb, next) = rows.group(r);
                        want.push((kb, r, next.min(r1)));
                        r = next.min(r1);
                    }
                    assert_eq!(rows.groups(r0, r1).collect::<Vec<_>>(), want, "{layout:?} rows {r0}..{r1}");
                }
            }
        }
        // Not row tiles: per-tensor, per-axis with an inner extent, blocked along the last
        // axis, rows shorter than a vector, rows off the packing group.
        assert!(RowTiles::of::<Portable>(Layout::PerTensor, 0, 0).is_none());
        assert!(RowTiles::of::<Portable>(Layout::PerAxis { outer: 1, axis_len: 8, inner: 2 }, 0, 0).is_none());
        assert!(RowTiles::of::<Portable>(Layout::Blocked { outer: 1, axis_len: 8, inner: 1, block: 4 }, 0, 0).is_none());
        let short = Layout::Blocked { outer: 1, axis_len: 8, inner: Portable::LANES - 1, block: 4 };
        assert!(Portable::LANES == 1 || RowTiles::of::<Portable>(short, 0, 0).is_none());
        assert!(RowTiles::of::<Portable>(Layout::Blocked { outer: 1, axis_len: 8, inner: 9, block: 4 }, 1, 0).is_none());
        assert!(RowTiles::of::<Portable>(Layout::Blocked { outer: 1, axis_len: 8, inner: 8, block: 4 }, 1, 3).is_none());
    }

    /// `RowPairs` gives what `chunks_exact().zip()` gives for exactly the rows' bytes, ends
    /// early at a short `y`, and gives nothing for rows of no bytes.
    #[test]
    fn row_pairs_are_the_chunked_rows() {
        let x: Vec<u8> = (0..60).collect();
        for (xl, yl) in [(4usize, 8usize), (6, 3), (60, 1), (1, 0)] {
            let n = x.len() / xl;
            let mut y: Vec<u8> = (0..(n * yl) as u8).collect();
            let want: Vec<(Vec<u8>, Vec<u8>)> = x
                .chunks_exact(xl)
                .zip(y.chunks_exact(yl.max(1)))
                .map(|(a, b)| (a.to_vec(), b[..yl].to_vec()))
                .collect();
            let got: Vec<(Vec<u8>, Vec<u8>)> =
                RowPairs::new(&x, &mut y, xl, yl).map(|(a, b)| (a.to_vec(), b.to_vec())).collect();
            if yl > 0 {
                assert_eq!(got, want, "rows of {xl} and {yl} bytes");
            } else {
                assert_eq!(got.len(), n, "rows of {xl} and no bytes");
            }
            let mut short = vec![0u8; (n - 1) * yl];
            assert_eq!(RowPairs::new(&x, &mut short, xl, yl.max(1)).count(), if yl > 0 { n - 1 } else { 0 });
        }
        assert_eq!(RowPairs::new(&x, &mut [0u8; 8], 0, 1).count(), 0, "rows of no x bytes");
    }

    fn layout_len(layout: Layout) -> usize {
        match layout {
            Layout::PerTensor => 0,
            Layout::PerAxis { outer, axis_len, inner } | Layout::Blocked { outer, axis_len, inner, .. } => {
                outer * axis_len * inner
            }
        }
    }
}
