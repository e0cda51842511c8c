//! DynamicQuantizeLinear: a NaN-aware vector min/max pass, then the u8 per-tensor quantize
//! kernel with the computed scale and zero point (f32 division, as the function body). On
//! one thread the second pass goes from the end backward, a piece at a time, so that it
//! starts where the first pass left the cache warm.
//!
//! The range ignores NaN (each lane replaces NaN by 0, the neutral element once the range
//! is clamped to include 0), so it equals `qdq_ref::dynamic::range` exactly; the scale and
//! zero point come from the very same `qdq_ref` function. Min/max are exact and
//! order-independent, so the parallel reduction cannot change the result.

use crate::config::{Cost, MAX_PARTS};
use crate::isa::{self, Kernel};
use crate::quantize::{self, Job, Spec};
use crate::simd::Simd;
use crate::threads::for_parts;
use crate::Config;
use qdq_ref::{DataType, Layout, Packed, Precision, Result};
use std::sync::{Mutex, PoisonError};

/// Elements per piece of the single-threaded quantize pass, which takes the pieces last to
/// first: 256 KiB of `x`, a small fraction of a core's L2 (per-piece overhead is a few
/// hundred instructions). A multiple of every ISA's four-vector step.
const BACK_PIECE: usize = 1 << 16;

/// The pieces `[b, e)` of `lo..hi`, `BACK_PIECE` elements from `lo` (the last one
/// shorter), last to first.
fn pieces_backward(lo: usize, hi: usize) -> impl Iterator<Item = (usize, usize)> {
    (lo..hi).step_by(BACK_PIECE).map(move |b| (b, (b + BACK_PIECE).min(hi))).rev()
}

struct Range<'a>(&'a [u8]);

impl Kernel for Range<'_> {
    type Output = (f32, f32);
    #[inline(always)]
    fn run<S: Simd>(self, simd: S) -> (f32, f32) {
        let x = self.0;
        let vb = 4 * S::LANES;
        let zero = simd.splat(0.0);
        // Four independent pairs of accumulators (one pair would be a latency-bound chain).
        // `min(v, acc)` returns `acc` for a NaN `v` (the Simd contract), so NaN is skipped
        // with no extra instruction; starting at 0 puts 0 in the range, as the op requires.
        let (mut lo, mut hi) = ([zero; 4], [zero; 4]);
        let mut chunks = x.chunks_exact(4 * vb);
        for c in &mut chunks {
            for k in 0..4 {
                let v = simd.load_f32(&c[k * vb..(k + 1) * vb]);
                lo[k] = simd.min(v, lo[k]);
                hi[k] = simd.max(v, hi[k]);
            }
        }
        let mut singles = chunks.remainder().chunks_exact(vb);
        for c in &mut singles {
            let v = simd.load_f32(c);
            lo[0] = simd.min(v, lo[0]);
            hi[0] = simd.max(v, hi[0]);
        }
        let (lo, hi) = (
            simd.min(simd.min(lo[0], lo[1]), simd.min(lo[2], lo[3])),
            simd.max(simd.max(hi[0], hi[1]), simd.max(hi[2], hi[3])),
        );
        let mut lanes = [0u8; 64];
        let (mut l, mut h) = (0.0f32, 0.0f32);
        for v in [lo, hi] {
            simd.store_f32(v, &mut lanes);
            for t in 0..S::LANES {
                let f = f32::from_le_bytes([lanes[4 * t], lanes[4 * t + 1], lanes[4 * t + 2], lanes[4 * t + 3]]);
                l = l.min(f);
                h = h.max(f);
            }
        }
        let (tl, th) = qdq_ref::dynamic::range(
            singles.remainder().chunks_exact(4).map(|b| f32::from_le_bytes([b[0], b[1], b[2], b[3]])),
        );
        (l.min(tl), h.max(th))
    }
}

/// DynamicQuantizeLinear of `x` (little-endian f32 bytes) into `y`.
/// Callers run it under `isa::fpenv::scoped`; the parallel chunks enter it themselves.
pub(crate) fn run(cfg: &Config<'_>, x: &[u8], y: &mut [u8]) -> Result<(f32, u8)> {
    let isa = cfg.resolve_isa()?;
    let n = y.len();
    let (lo, hi) = match cfg.chunk(n, Cost::Cheap) {
        None => isa::dispatch(isa, Range(x)),
        Some(per) => {
            // Each part's range into its own slot, folded in part order (min / max are
            // exact, and a fixed order settles even the sign of a zero bound).
            let slots = Mutex::new([(0.0f32, 0.0f32); MAX_PARTS]);
            let count = n.div_ceil(per);
            for_parts(cfg, count, &mut x.chunks(per * 4), &|k, c| {
                let r = isa::dispatch(isa, Range(c));
                if let Some(s) = slots.lock().unwrap_or_else(PoisonError::into_inner).get_mut(k) {
                    *s = r;
                }
            });
            let slots = slots.into_inner().unwrap_or_else(PoisonError::into_inner);
            slots[..count.min(MAX_PARTS)].iter().fold((0.0f32, 0.0f32), |a, b| (a.0.min(b.0), a.1.max(b.1)))
        }
    };
    let (scale, zp) = qdq_ref::dynamic::scale_and_zero_point(lo, hi);
    let sb = scale.to_le_bytes();
    let zb = [zp];
    let zpp = Packed { dtype: DataType::U8, len: 1, data: &zb };
    let job = Job::new(
        DataType::F32,
        x,
        DataType::F32,
        &sb,
        Some(zpp),
        Layout::PerTensor,
        DataType::U8,
        true,
        Precision::F32,
    )
    .expect("f32 -> u8 always has a vector kernel");
    if cfg.chunk(n, Cost::Cheap).is_some() {
        crate::quantize_job(cfg, isa, &job, 0..n, y);
    } else {
        // One thread: the whole steps by `Bounded` where it applies, from the end backward;
        // the rest (a short tail, or every element where it does not apply) by QuantizeLinear's
        // kernels, the same way.
        let done = isa::dispatch(isa, Bounded { job: &job, y: &mut *y });
        for (b, e) in pieces_backward(done, n) {
            crate::quantize_job(cfg, isa, &job, b..e, &mut y[b..e]);
        }
    }
    Ok((scale, zp))
}

/// The single-threaded quantize pass over the whole four-vector steps of `x` from its
/// start, where the scale is in the fast range of Markstein's division on an ISA with FMA;
/// returns how many elements it did (0 where it does not apply). Every element is NaN or
/// lies in the range the scale came from, so `|x / scale|` is at most about 255 and the
/// conversion needs no check (QuantizeLinear's loop checks for infinite and huge
/// quotients): [`quantize::sat_block_with_range`], whose saturating packs are the clamp to
/// u8 and take NaN to 0, as the reference does. The pieces go from the end backward, so
/// that the pass starts on the bytes the range pass read last, which are still in cache
/// (a call larger than the cache would otherwise read all of `x` from memory twice).
struct Bounded<'a, 'y> {
    job: &'a Job<'a>,
    y: &'y mut [u8],
}

impl Kernel for Bounded<'_, '_> {
    type Output = usize;
    #[inline(always)]
    fn run<S: Simd>(self, simd: S) -> usize {
        let Bounded { job, y } = self;
        let p = quantize::splat_lanes(simd, job, 0);
        if !S::HAS_FMA || !p.fast {
            return 0;
        }
        let sp = Spec::resolve::<0, 0, 8>(job);
        let steps = y.len() / (4 * S::LANES) * (4 * S::LANES);
        for (b, e) in pieces_backward(0, steps) {
            quantize::sat_block_with_range(simd, &sp, &job.x[4 * b..4 * e], &mut y[b..e], &p, false, 8);
        }
        steps
    }
}
