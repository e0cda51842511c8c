//! Parallel splitting: a call's elements in chunks over rayon (halving with `rayon::join`,
//! nothing allocated), or one call on the calling thread. Chunks start on byte boundaries
//! of every output, so threads never share a byte, and the chunking never changes a result.
//! Every chunk runs under the default floating-point environment, on whichever thread.

use crate::isa::fpenv::scoped;
use crate::Config;
use std::ops::Range;

/// One output buffer of a range of elements: its bytes and the bits per element.
pub(crate) type Out1<'a> = Option<(&'a mut [u8], u32)>;

/// The (at most two) outputs of a call: the values, and the training forward's mask.
pub(crate) type Outs<'a> = [Out1<'a>; 2];

/// Cuts `outs` after `at` elements (a multiple of 64, so a byte boundary for every width).
fn cut(outs: Outs<'_>, at: usize) -> (Outs<'_>, Outs<'_>) {
    let [a, b] = outs;
    let (a0, a1) = cut_one(a, at);
    let (b0, b1) = cut_one(b, at);
    ([a0, b0], [a1, b1])
}

fn cut_one(o: Out1<'_>, at: usize) -> (Out1<'_>, Out1<'_>) {
    match o {
        Some((buf, bits)) => {
            let (l, r) = buf.split_at_mut(at * bits as usize / 8);
            (Some((l, bits)), Some((r, bits)))
        }
        None => (None, None),
    }
}

/// Runs `f(begin, end, outs)` over `range` (`outs` hold the bytes of that range) in chunks
/// of `cfg.chunk(range.len())` elements, or in one call.
pub(crate) fn drive(cfg: &Config, range: Range<usize>, outs: Outs<'_>, f: &(dyn Fn(usize, usize, Outs<'_>) + Sync)) {
    match cfg.chunk(range.len()) {
        None => f(range.start, range.end, outs),
        Some(per) => split(per, range.start, range.end, outs, f),
    }
}

/// [`drive`] with one output of `bits` bits per element.
pub(crate) fn drive_one(
    cfg: &Config,
    range: Range<usize>,
    y: &mut [u8],
    bits: u32,
    f: &(dyn Fn(usize, usize, &mut [u8]) + Sync),
) {
    drive(cfg, range, [Some((y, bits)), None], &|b, e, [y, _]| {
        if let Some((y, _)) = y {
            f(b, e, y)
        }
    })
}

/// Runs `f` over chunks of `per` elements of `b..e` (the last one shorter), halving at a
/// chunk boundary and handing both halves to `rayon::join`. Recursion instead of a
/// collected list of chunks: the parallel path allocates nothing (rayon's jobs live on the
/// stack).
pub(crate) fn split(per: usize, b: usize, e: usize, outs: Outs<'_>, f: &(dyn Fn(usize, usize, Outs<'_>) + Sync)) {
    let chunks = (e - b).div_ceil(per);
    if chunks <= 1 {
        return f(b, e, outs);
    }
    let mid = b + chunks / 2 * per;
    let (lo, hi) = cut(outs, mid - b);
    join(|| split(per, b, mid, lo, f), || split(per, mid, e, hi, f));
}

/// `rayon::join`, each side under the default floating-point environment: the side another
/// pool thread steals runs in whatever state that thread has (see `isa::fpenv`).
pub(crate) fn join<A, B, RA, RB>(a: A, b: B) -> (RA, RB)
where
    A: FnOnce() -> RA + Send,
    B: FnOnce() -> RB + Send,
    RA: Send,
    RB: Send,
{
    rayon::join(|| scoped(a), || scoped(b))
}
