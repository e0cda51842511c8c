//! Parallel splitting. A call is cut into parts (byte-aligned element chunks, or the leaves
//! of a reduction's split tree), and the parts run on the configured executor: the calling
//! thread, rayon's pool, or an engine's [`ThreadPool`]. Every executor gets the same flat
//! list of tasks; each task claims the next part under a lock (parts are handed out in
//! order, so part `k` is the same whichever thread claims it) and runs it under the default
//! floating-point environment. qdq allocates nothing: the parts come from an iterator that
//! splits the output buffers as it goes. (On rayon, from outside the pool, rayon boxes each
//! helper's spawned job; from a worker of the pool the helpers are `rayon::join` jobs on
//! the stack.) Threads never share a byte, and the cut never changes a result.

use crate::config::{Cost, Exec};
use crate::isa::fpenv::scoped;
use crate::Config;
use std::ops::Range;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Mutex, PoisonError};
#[cfg(feature = "rayon")]
use std::time::{Duration, Instant};

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

/// Runs `f(k, part)` for each of the `count` parts `parts` yields (`k` its index), on
/// `cfg`'s executor. Parts a pool leaves unclaimed run afterwards on the calling thread.
pub(crate) fn for_parts<P: Send>(
    cfg: &Config<'_>,
    count: usize,
    parts: &mut (dyn Iterator<Item = P> + Send),
    f: &(dyn Fn(usize, P) + Sync),
) {
    let exec = if count < 2 { Exec::Caller } else { cfg.exec() };
    let queue = Mutex::new(parts.enumerate());
    let task = |_: usize| {
        claim_and_run(&queue, f, None);
    };
    match exec {
        Exec::Caller => {}
        #[cfg(feature = "rayon")]
        Exec::Rayon => {
            // The calling thread claims parts too, while `threads - 1` helpers queued on
            // rayon's pool join in as they wake: a late helper finds nothing left.
            let helpers = rayon::current_num_threads().min(count) - 1;
            let finished = AtomicUsize::new(0);
            let helper = || while claim_and_run(&queue, f, Some(&finished)) {};
            if rayon::current_thread_index().is_some() {
                // On a worker of the pool (an engine running its graph on rayon): the
                // helpers are `rayon::join`'s jobs, on this stack, so nothing is
                // allocated. Task 0 runs here first; the others wait in this worker's
                // queue for other workers to steal them (one nobody stole runs here after).
                rayon_for(0, helpers + 1, &|i| {
                    helper();
                    if i == 0 {
                        await_parts(&finished, count);
                    }
                });
            } else {
                // From outside the pool only a spawned job lets the caller work too (a
                // `join` would block it until the pool ran the whole call); rayon boxes
                // each spawned job, one small allocation per helper.
                rayon::in_place_scope(|s| {
                    for _ in 0..helpers {
                        s.spawn(|_| helper());
                    }
                    helper();
                    await_parts(&finished, count);
                });
            }
        }
        Exec::Pool(pool) => pool.parallel_for(count, &task),
    }
    while claim_and_run(&queue, f, None) {}
}

/// How long the calling thread spins for parts that helpers still run before it blocks.
#[cfg(feature = "rayon")]
const SPIN_LIMIT: Duration = Duration::from_micros(100);

/// Waits, spinning and then yielding, for at most [`SPIN_LIMIT`] until `finished` counts
/// all `count` parts of the call. Called once the queue is empty (every part claimed, some
/// perhaps still running on helpers). It is only a cheaper first stage of rayon's own wait
/// (the scope's, or `join`'s for a stolen helper), which follows and alone orders the
/// parts' writes before the call returns. From outside the pool, blocking there puts the
/// calling thread to sleep, and on a 2-vCPU virtual machine waking it again when a helper
/// finished cost as much as a whole call of 64-256 Ki elements of the cheapest kernels.
#[cfg(feature = "rayon")]
fn await_parts(finished: &AtomicUsize, count: usize) {
    let start = Instant::now();
    let mut spins = 0u32;
    while finished.load(Ordering::Acquire) < count {
        if spins < 64 {
            spins += 1;
            std::hint::spin_loop();
        } else if start.elapsed() < SPIN_LIMIT {
            // Lets a helper that shares this core run its part.
            std::thread::yield_now();
        } else {
            return;
        }
    }
}

/// Claims the next part of `queue` and runs it; `false` when none was left. `finished`, if
/// given, counts the part once it has run.
fn claim_and_run<P: Send, I: Iterator<Item = (usize, P)>>(
    queue: &Mutex<I>,
    f: &(dyn Fn(usize, P) + Sync),
    finished: Option<&AtomicUsize>,
) -> bool {
    // The guard is dropped at the end of this statement: `f` runs unlocked.
    let next = queue.lock().unwrap_or_else(PoisonError::into_inner).next();
    match next {
        Some((k, p)) => {
            scoped(|| f(k, p));
            if let Some(done) = finished {
                done.fetch_add(1, Ordering::Release);
            }
            true
        }
        None => false,
    }
}

/// `task(i)` for `i` in `lo..hi` over rayon, halving with `rayon::join` (its jobs live on
/// the stack: nothing is allocated).
#[cfg(feature = "rayon")]
pub(crate) fn rayon_for(lo: usize, hi: usize, task: &(dyn Fn(usize) + Sync)) {
    match hi - lo {
        0 => {}
        1 => task(lo),
        m => {
            let mid = lo + m / 2;
            rayon::join(|| rayon_for(lo, mid, task), || rayon_for(mid, hi, task));
        }
    }
}

/// Runs `f(begin, end, outs)` over `range` (`outs` hold the bytes of that range) in parts
/// of `cfg.chunk(range.len(), cost)` elements, or in one call.
pub(crate) fn drive(
    cfg: &Config<'_>,
    cost: Cost,
    range: Range<usize>,
    outs: Outs<'_>,
    f: &(dyn Fn(usize, usize, Outs<'_>) + Sync),
) {
    match cfg.chunk(range.len(), cost) {
        None => f(range.start, range.end, outs),
        Some(per) => split(cfg, per, range.start, range.end, outs, f),
    }
}

/// [`drive`] with one output of `bits` bits per element.
pub(crate) fn drive_one(
    cfg: &Config<'_>,
    cost: Cost,
    range: Range<usize>,
    y: &mut [u8],
    bits: u32,
    f: &(dyn Fn(usize, usize, &mut [u8]) + Sync),
) {
    drive(cfg, cost, range, [Some((y, bits)), None], &|b, e, [y, _]| {
        if let Some((y, _)) = y {
            f(b, e, y)
        }
    })
}

/// Runs `f` over parts of `per` elements of `b..e` (the last one shorter) on `cfg`'s
/// executor.
pub(crate) fn split(
    cfg: &Config<'_>,
    per: usize,
    b: usize,
    e: usize,
    outs: Outs<'_>,
    f: &(dyn Fn(usize, usize, Outs<'_>) + Sync),
) {
    let count = (e - b).div_ceil(per);
    let (mut at, mut rest) = (b, Some(outs));
    let mut parts = std::iter::from_fn(|| {
        let m = (e - at).min(per);
        if m == 0 {
            return None;
        }
        let outs = rest.take()?;
        // The last part keeps the rest whole (a packed type's final, partial byte).
        let head = if at + m == e {
            outs
        } else {
            let (head, tail) = cut(outs, m);
            rest = Some(tail);
            head
        };
        at += m;
        Some((at - m, at, head))
    });
    for_parts(cfg, count, &mut parts, &|_, (b, e, outs)| f(b, e, outs));
}

/// What a split tree does with a node.
pub(crate) enum Split<N> {
    /// Run it whole.
    Leaf(N),
    /// Cut it in two (left, right).
    Halves(N, N),
}

/// The leaves, left to right, of a binary split tree: `split(node)` returns the node itself
/// as a [`Split::Leaf`] or its two [`Split::Halves`]. An explicit stack (a halving tree of at most
/// 2^64 elements is at most 64 deep), so leaves can be handed out one at a time.
pub(crate) struct Leaves<N, F> {
    stack: [Option<N>; 66],
    len: usize,
    split: F,
}

impl<N, F: FnMut(N) -> Split<N>> Leaves<N, F> {
    pub(crate) fn new(root: N, split: F) -> Self {
        let mut stack = [const { None }; 66];
        stack[0] = Some(root);
        Leaves { stack, len: 1, split }
    }
}

impl<N, F: FnMut(N) -> Split<N>> Iterator for Leaves<N, F> {
    type Item = N;
    fn next(&mut self) -> Option<N> {
        loop {
            if self.len == 0 {
                return None;
            }
            self.len -= 1;
            let node = self.stack[self.len].take()?;
            // Halving trees never fill the stack (depth + 1 entries at most); were one
            // deeper, its node would run whole, which every caller's leaf accepts.
            if self.len + 2 > self.stack.len() {
                return Some(node);
            }
            match (self.split)(node) {
                Split::Leaf(leaf) => return Some(leaf),
                Split::Halves(lo, hi) => {
                    self.stack[self.len] = Some(hi);
                    self.stack[self.len + 1] = Some(lo);
                    self.len += 2;
                }
            }
        }
    }
}

#[cfg(all(test, feature = "rayon"))]
mod tests {
    use super::*;

    #[test]
    fn the_caller_stops_spinning_for_a_part_that_does_not_finish() {
        // A part whose helper never reports back (descheduled, say): the spin gives up after
        // its limit, and rayon's own wait (the scope's, or `join`'s) takes over.
        let finished = AtomicUsize::new(0);
        let start = Instant::now();
        await_parts(&finished, 1);
        let waited = start.elapsed();
        assert!(waited >= SPIN_LIMIT, "gave up after {waited:?}, before the limit");
        assert_eq!(finished.load(Ordering::Relaxed), 0);
    }

    #[test]
    fn the_caller_waits_for_the_last_claimed_part_or_the_limit() {
        let finished = AtomicUsize::new(1);
        std::thread::scope(|s| {
            let start = Instant::now();
            s.spawn(|| finished.fetch_add(1, Ordering::Release));
            await_parts(&finished, 2);
            let (done, waited) = (finished.load(Ordering::Acquire), start.elapsed());
            assert!(done == 2 || waited >= SPIN_LIMIT, "returned after {waited:?} with {done} of 2 parts finished");
        });
    }
}
