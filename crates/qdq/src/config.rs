//! How a call runs: the ISA, and which threads (none, rayon's pool, or the engine's own).

use crate::{Isa, Result};
use std::fmt;

/// A thread pool qdq can hand work to: the engine's own, in the style of MLAS's
/// `MLAS_THREADPOOL` or XNNPACK's `pthreadpool_t`.
///
/// qdq cuts a call into independent tasks and calls [`ThreadPool::parallel_for`] from the
/// calling thread (once, or a few times in sequence for a call with several passes), never
/// from inside a task and never concurrently (pools that cannot nest work as they are).
/// Which thread runs which task, in what order and how many at once never changes a
/// result: every task claims the next part of the call under a lock, writes only its own
/// bytes, and runs under the default floating-point environment whatever the state of the
/// pool's threads.
///
/// ```
/// use qdq::{Config, Params, ThreadPool};
///
/// /// Runs the tasks on two scoped std threads (a real engine keeps its threads).
/// struct TwoThreads;
/// impl ThreadPool for TwoThreads {
///     fn threads(&self) -> usize { 2 }
///     fn parallel_for(&self, tasks: usize, task: &(dyn Fn(usize) + Sync)) {
///         std::thread::scope(|s| {
///             s.spawn(|| (0..tasks).step_by(2).for_each(task));
///             (1..tasks).step_by(2).for_each(task);
///         });
///     }
/// }
///
/// let x: Vec<f32> = (0..100_000).map(|i| i as f32 * 0.01).collect();
/// let (mut a, mut b) = (vec![0u8; x.len()], vec![0u8; x.len()]);
/// let p = Params::per_tensor(0.5);
/// qdq::quantize_with(&Config::default().with_pool(&TwoThreads), &x, &p, &mut a)?;
/// qdq::quantize_with(&Config::sequential(), &x, &p, &mut b)?;
/// assert_eq!(a, b);
/// # Ok::<(), qdq::Error>(())
/// ```
pub trait ThreadPool: Sync {
    /// How many threads run tasks (the calling thread included if it works too). qdq cuts
    /// a call into up to four tasks a thread, each of at least 16 Ki elements; 1 or 0 keeps
    /// calls on the calling thread.
    fn threads(&self) -> usize;

    /// Calls `task(i)` once for every `i` in `0..tasks`, on any threads and in any order,
    /// and returns when every call has returned. Tasks a pool skips are run afterwards on
    /// the calling thread, so a wrong pool costs speed, never results.
    fn parallel_for(&self, tasks: usize, task: &(dyn Fn(usize) + Sync));
}

/// A rayon pool of the engine's as a [`ThreadPool`] (instead of rayon's global pool).
///
/// ```
/// let pool = rayon::ThreadPoolBuilder::new().num_threads(2).build().unwrap();
/// let cfg = qdq::Config::default().with_pool(&pool);
/// let mut y = vec![0u8; 200_000];
/// qdq::quantize_with(&cfg, &vec![1.0f32; 200_000], &qdq::Params::per_tensor(0.25), &mut y)?;
/// assert!(y.iter().all(|&q| q == 4));
/// # Ok::<(), qdq::Error>(())
/// ```
#[cfg(feature = "rayon")]
impl ThreadPool for rayon::ThreadPool {
    fn threads(&self) -> usize {
        self.current_num_threads()
    }

    fn parallel_for(&self, tasks: usize, task: &(dyn Fn(usize) + Sync)) {
        self.install(|| crate::threads::rayon_for(0, tasks, task));
    }
}

/// How a call runs: which ISA, and which threads.
///
/// `'p` is the borrow of an engine's [`ThreadPool`], if one is set; the default and
/// sequential configurations are `Config<'static>`.
#[derive(Clone, Copy)]
pub struct Config<'p> {
    /// The ISA to use; `None` means [`Isa::detect`] (`QDQ_ISA` if set, else the best
    /// available). A forced ISA this CPU lacks makes every call fail with
    /// [`ErrorKind::IsaUnavailable`](crate::ErrorKind::IsaUnavailable).
    pub isa: Option<Isa>,
    /// Calls of at least [`Config::parallel_threshold`] elements run on [`Config::pool`], or
    /// without one on rayon's global pool (cargo feature `rayon`, on by default; without
    /// it, on the calling thread). `false`: always the calling thread.
    pub parallel: bool,
    /// Below this many elements a call stays on the calling thread. The count is in elements
    /// of the cheapest kernels (8-bit per-tensor quantize and dequantize); a kernel that
    /// costs `w` times as much per element (float encoders, f16 / bf16 input, bf16 output,
    /// e8m0-scaled dequantize, training, computed scales: `w` from 2 to 8) goes parallel from
    /// `parallel_threshold / w` elements.
    ///
    /// The default, [`Config::DEFAULT_PARALLEL_THRESHOLD`] (1 Mi), is set so that calls
    /// made back to back on rayon's pool (its threads awake) are never slower in parallel
    /// than on one thread, with a margin: two threads ran the cheapest kernels 1.35-1.75x
    /// faster than one at 512 Ki and 1 Mi elements on a 2-vCPU virtual machine, and
    /// 1.8-2.4x from 512 Ki on a 16-core Xeon. A pool whose threads have fallen asleep
    /// wakes them slowly on virtual machines: after a millisecond without calls, two
    /// threads paid there only from about 4 Mi elements. An engine that calls qdq seldom,
    /// between long stretches of other work, may raise the threshold; one that keeps the
    /// pool busy may lower it to 512 Ki.
    pub parallel_threshold: usize,
    /// The engine's thread pool; `None` for rayon's global pool (see [`Config::parallel`]).
    pub pool: Option<&'p dyn ThreadPool>,
}

impl fmt::Debug for Config<'_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Config")
            .field("isa", &self.isa)
            .field("parallel", &self.parallel)
            .field("parallel_threshold", &self.parallel_threshold)
            .field("pool", &self.pool.map(|p| format!("ThreadPool({} threads)", p.threads())))
            .finish()
    }
}

impl Default for Config<'_> {
    fn default() -> Self {
        Config { isa: None, parallel: true, parallel_threshold: Config::DEFAULT_PARALLEL_THRESHOLD, pool: None }
    }
}

/// Where a call's parts run.
pub(crate) enum Exec<'p> {
    /// The calling thread, in order.
    Caller,
    /// rayon's global pool.
    #[cfg(feature = "rayon")]
    Rayon,
    /// The engine's pool.
    Pool(&'p dyn ThreadPool),
}

/// What a kernel costs per element relative to the cheapest ones (8-bit per-tensor quantize
/// and dequantize), rounded down so that a call never goes parallel too early: its element
/// count times this is compared with [`Config::parallel_threshold`].
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Cost {
    /// 8- and 16-bit integer codecs (integer codes to f16 too), sub-byte packing, min / max
    /// passes.
    Cheap = 1,
    /// float8 / float6 / float4 codecs, f16 / bf16 input, bf16 output, per-row scales,
    /// training kernels.
    Double = 2,
    /// Dequantize with e8m0 or other per-block decoded scales.
    Quad = 4,
    /// Quantizers that compute a scale per block (blockwise, MX, NVFP4).
    Blocks = 8,
}

/// Most parts a call is cut into (a bound on the stack a parallel reduction needs).
pub(crate) const MAX_PARTS: usize = 64;

impl<'p> Config<'p> {
    /// The default [`Config::parallel_threshold`]: 1 Mi elements (of the cheapest kernels).
    ///
    /// ```
    /// assert_eq!(qdq::Config::default().parallel_threshold, qdq::Config::DEFAULT_PARALLEL_THRESHOLD);
    /// assert_eq!(qdq::Config::DEFAULT_PARALLEL_THRESHOLD, 1 << 20);
    /// ```
    pub const DEFAULT_PARALLEL_THRESHOLD: usize = 1 << 20;

    /// Single-threaded, best ISA: every call stays on the calling thread.
    ///
    /// ```
    /// let cfg = qdq::Config::sequential();
    /// assert!(!cfg.parallel);
    /// let mut y = [0u8; 2];
    /// qdq::quantize_with(&cfg, &[1.0f32, 2.0], &qdq::Params::per_tensor(1.0), &mut y)?;
    /// assert_eq!(y, [1, 2]);
    /// # Ok::<(), qdq::Error>(())
    /// ```
    pub fn sequential() -> Self {
        Config { parallel: false, ..Config::default() }
    }

    /// Forces an ISA (builder style). A call fails with
    /// [`ErrorKind::IsaUnavailable`](crate::ErrorKind::IsaUnavailable) if this CPU lacks it.
    ///
    /// ```
    /// use qdq::{Config, Isa, Params};
    /// let mut y = [0u8; 1];
    /// for isa in Isa::ALL {
    ///     let r = qdq::quantize_with(&Config::default().with_isa(isa), &[3.0f32], &Params::per_tensor(1.0), &mut y);
    ///     assert_eq!(r.is_ok(), isa.is_available());
    /// }
    /// ```
    pub fn with_isa(self, isa: Isa) -> Self {
        Config { isa: Some(isa), ..self }
    }

    /// Runs large calls on the engine's `pool` (builder style; see [`ThreadPool`]).
    ///
    /// ```
    /// use qdq::{Config, ThreadPool};
    /// struct Inline; // a "pool" that runs every task on the calling thread
    /// impl ThreadPool for Inline {
    ///     fn threads(&self) -> usize { 4 }
    ///     fn parallel_for(&self, tasks: usize, task: &(dyn Fn(usize) + Sync)) { (0..tasks).rev().for_each(task) }
    /// }
    /// let cfg = Config { parallel_threshold: 0, ..Config::default() }.with_pool(&Inline);
    /// let mut y = [0i8; 3];
    /// qdq::quantize_with(&cfg, &[-1.0f32, 0.5, 300.0], &qdq::Params::per_tensor(1.0), &mut y)?;
    /// assert_eq!(y, [-1, 0, 127]);
    /// # Ok::<(), qdq::Error>(())
    /// ```
    pub fn with_pool<'q>(self, pool: &'q dyn ThreadPool) -> Config<'q>
    where
        'p: 'q,
    {
        Config { pool: Some(pool), parallel: true, ..self }
    }

    pub(crate) fn resolve_isa(&self) -> Result<Isa> {
        match self.isa {
            None => Isa::detect(),
            Some(i) => i.require(),
        }
    }

    /// The same configuration on the calling thread only.
    pub(crate) fn calling_thread(&self) -> Config<'p> {
        Config { parallel: false, ..*self }
    }

    pub(crate) fn exec(&self) -> Exec<'p> {
        match (self.parallel, self.pool) {
            (false, _) => Exec::Caller,
            (true, Some(p)) => Exec::Pool(p),
            #[cfg(feature = "rayon")]
            (true, None) => Exec::Rayon,
            #[cfg(not(feature = "rayon"))]
            (true, None) => Exec::Caller,
        }
    }

    fn threads(&self) -> usize {
        match self.exec() {
            Exec::Caller => 1,
            #[cfg(feature = "rayon")]
            Exec::Rayon => rayon::current_num_threads(),
            Exec::Pool(p) => p.threads(),
        }
    }

    /// Elements per parallel part for `n` elements (a multiple of 64, so parts start on a
    /// byte boundary for every packed type; at most [`MAX_PARTS`] parts), or `None` to run
    /// on the calling thread.
    pub(crate) fn chunk(&self, n: usize, cost: Cost) -> Option<usize> {
        // Check the cheap conditions first: a sequential call must not even start rayon's pool.
        if !self.parallel || n.saturating_mul(cost as usize) < self.parallel_threshold || n == 0 {
            return None;
        }
        let threads = self.threads();
        if threads < 2 {
            return None;
        }
        let per = n.div_ceil(threads.saturating_mul(4)).max(16 * 1024).max(n.div_ceil(MAX_PARTS));
        Some(per.next_multiple_of(64))
    }
}
