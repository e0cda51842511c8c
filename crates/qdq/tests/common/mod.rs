//! Check functions shared by the libtest targets and the thread-free `no_threads` binary.
#![allow(dead_code)]

pub mod differential;
pub mod exhaustive;
pub mod fpstate;
pub mod scaled;
pub mod training;

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Once;

/// The ISAs every differential check exercises: the one `QDQ_ISA` forces (a name that is
/// no ISA, or one this CPU lacks, fails the test with the library's message), else every
/// ISA this CPU has. The ISAs left out are printed once as skipped, never counted as run.
pub fn isas() -> Vec<qdq::Isa> {
    static REPORT: Once = Once::new();
    let isas = match qdq::Isa::forced() {
        Err(e) => panic!("{e}"),
        Ok(Some(isa)) => vec![isa],
        Ok(None) => qdq::Isa::available(),
    };
    REPORT.call_once(|| {
        for isa in qdq::Isa::ALL {
            if isas.contains(&isa) {
                println!("{isa}: exercised");
            } else if isa.is_available() {
                println!("{isa}: skipped, QDQ_ISA forces another");
            } else {
                println!("{isa}: skipped, not on this CPU");
            }
        }
    });
    isas
}

/// The test data generator (xorshift64), seeded per test (deterministic runs), and the
/// shared special values and lengths.
pub use qdq_fixtures::{Rng, F32_SPECIALS, MISALIGNMENTS, SHORT_LENGTHS, SWEEP_LENGTHS};

/// `n` random codes of type `t`, packed (every bit pattern, NaN codes included).
pub fn random_codes(rng: &mut Rng, t: qdq::DataType, n: usize) -> Vec<u8> {
    let mut b = vec![0u8; t.byte_len(n).unwrap()];
    for i in 0..n {
        qdq::packing::set(t, &mut b, i, rng.next_u64() as u32);
    }
    b
}

/// `n` zero-point codes of the float type `t` (float8 / float6 / float4), each +0 or, where
/// the type has one, -0: the only zero points a float output accepts.
pub fn zero_codes(rng: &mut Rng, t: qdq::DataType, n: usize) -> Vec<u8> {
    let neg = match t {
        qdq::DataType::E4M3FnUz | qdq::DataType::E5M2FnUz => 0, // no -0: 0x80 is NaN
        t => 1u32 << (t.bits() - 1),
    };
    let mut b = vec![0u8; t.byte_len(n).unwrap()];
    for i in 0..n {
        qdq::packing::set(t, &mut b, i, if rng.below(2) == 0 { 0 } else { neg });
    }
    b
}

/// Set by the `no_threads` binary (qemu user-mode emulation in this sandbox cannot start
/// threads): only sequential configurations are exercised.
pub static NO_THREADS: AtomicBool = AtomicBool::new(false);

/// Every ISA of [`isas`], sequential, and (unless [`NO_THREADS`]) parallel with chunking
/// forced on; on AVX2 also sequential with the other share of quotients by the divide
/// instruction than this CPU's (`qdq::tuning::set_avx2_extra_divide`), so that both of the
/// integer quantizers' variants run on every CPU. Under a state of [`fpstate::set`], each
/// configuration's loop body (the qdq calls and their comparisons) runs with that
/// floating-point state on this thread and on the pool threads; whatever ran before the
/// loop (the reference) ran in the default.
pub fn configs() -> Configs {
    let threads = !NO_THREADS.load(Ordering::Relaxed);
    let mut out = Vec::new();
    for isa in isas() {
        let seq = qdq::Config::sequential().with_isa(isa);
        out.push((format!("{isa}/seq"), seq, None));
        if isa == qdq::Isa::Avx2 {
            let other = !qdq::tuning::avx2_extra_divide();
            out.push((format!("{isa}/seq with {} of 4 quotients by vdivps", 1 + usize::from(other)), seq, Some(other)));
        }
        if threads {
            let par = qdq::Config { isa: Some(isa), parallel: true, parallel_threshold: 0, pool: None };
            out.push((format!("{isa}/par"), par, None));
            out.push((format!("{isa}/pool"), par.with_pool(&TestPool), None));
        }
    }
    Configs { items: out.into_iter(), state: fpstate::current(), threads, saved: None, divide: None }
}

/// An engine-style pool for the `*/pool` configurations: three workers (two scoped threads
/// and the caller) take the tasks in a scrambled order, the threads in the caller's
/// floating-point state (as an engine's pool threads would be in theirs).
pub struct TestPool;

impl qdq::ThreadPool for TestPool {
    fn threads(&self) -> usize {
        3
    }

    fn parallel_for(&self, tasks: usize, task: &(dyn Fn(usize) + Sync)) {
        let state = fpstate::register();
        // Worker w runs tasks w, w + 3, ... from the top down.
        let run = |w: usize| (0..tasks).rev().filter(|i| i % 3 == w).for_each(task);
        std::thread::scope(|s| {
            for w in 1..3 {
                s.spawn(move || {
                    fpstate::load(state);
                    run(w)
                });
            }
            run(0);
        });
    }
}

/// The iterator of [`configs`]: applies the floating-point state for one item at a time.
pub struct Configs {
    items: std::vec::IntoIter<(String, qdq::Config<'static>, Option<bool>)>,
    state: Option<fpstate::State>,
    threads: bool,
    saved: Option<u64>,
    /// The divider setting to restore, where an item changed it.
    divide: Option<Option<bool>>,
}

impl Configs {
    fn undo(&mut self) {
        if let Some(old) = self.saved.take() {
            fpstate::restore(old, self.threads);
        }
        if let Some(old) = self.divide.take() {
            qdq::tuning::set_avx2_extra_divide(old);
        }
    }
}

impl Iterator for Configs {
    type Item = (String, qdq::Config<'static>);
    fn next(&mut self) -> Option<Self::Item> {
        self.undo();
        let (name, cfg, divide) = self.items.next()?;
        if let Some(d) = divide {
            self.divide = Some(qdq::tuning::set_avx2_extra_divide(Some(d)));
        }
        match self.state {
            Some(s) => {
                self.saved = Some(fpstate::apply(s, self.threads));
                Some((format!("{name} under {}", s.name), cfg))
            }
            None => Some((name, cfg)),
        }
    }
}

impl Drop for Configs {
    fn drop(&mut self) {
        self.undo();
    }
}

/// A case's quantize parameters from the views the harness builds at run time.
pub fn qparams<'a>(
    scale: qdq::Values<'a>,
    zero_point: Option<qdq::Packed<'a>>,
    layout: qdq::Layout,
    opts: &qdq::QuantizeOptions,
) -> qdq::Params<'a> {
    let p = dparams(scale, zero_point, layout).saturate(opts.saturate);
    match opts.precision {
        Some(t) => p.precision(t),
        None => p,
    }
}

/// A case's dequantize parameters from run-time views.
pub fn dparams<'a>(
    scale: qdq::Values<'a>,
    zero_point: Option<qdq::Packed<'a>>,
    layout: qdq::Layout,
) -> qdq::Params<'a> {
    let p = qdq::Params::new(scale, layout);
    match zero_point {
        Some(z) => p.zero_points(z),
        None => p,
    }
}
