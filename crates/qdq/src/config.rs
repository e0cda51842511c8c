//! How a call runs: the ISA, and whether (and in what chunks) it may use rayon.

use crate::{Isa, Result};

/// How a call runs: which ISA, and whether it may use rayon.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Config {
    /// The ISA to use; `None` means [`Isa::detect`] (`QDQ_ISA` if set, else the best
    /// available). A forced ISA this CPU lacks makes every call fail with
    /// [`ErrorKind::IsaUnavailable`](crate::ErrorKind::IsaUnavailable).
    pub isa: Option<Isa>,
    /// Use the rayon pool for calls of at least [`Config::parallel_threshold`] elements.
    pub parallel: bool,
    /// Below this many elements a call stays on the calling thread.
    pub parallel_threshold: usize,
}

impl Default for Config {
    fn default() -> Self {
        Config { isa: None, parallel: true, parallel_threshold: 64 * 1024 }
    }
}

impl Config {
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

    pub(crate) fn resolve_isa(&self) -> Result<Isa> {
        match self.isa {
            None => Isa::detect(),
            Some(i) => i.require(),
        }
    }

    /// Elements per parallel chunk for `n` elements (a multiple of 64, so chunks start on a
    /// byte boundary for every packed type), or `None` to run on the calling thread.
    pub(crate) fn chunk(&self, n: usize) -> Option<usize> {
        // Check the cheap conditions first: a sequential call must not even start rayon's pool.
        if !self.parallel || n < self.parallel_threshold {
            return None;
        }
        let threads = rayon::current_num_threads();
        if threads < 2 {
            return None;
        }
        let per = n.div_ceil(threads * 4).max(16 * 1024);
        Some(per.next_multiple_of(64))
    }
}
