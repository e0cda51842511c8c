//! Check functions shared by the libtest targets and the thread-free `no_threads` binary.
#![allow(dead_code)]

pub mod differential;
pub mod exhaustive;
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

/// The test data generator: xorshift64, seeded per test (deterministic runs).
pub struct Rng(pub u64);

impl Rng {
    pub fn next(&mut self) -> u64 {
        self.0 ^= self.0 << 13;
        self.0 ^= self.0 >> 7;
        self.0 ^= self.0 << 17;
        self.0
    }
    /// Uniform in `0..n`.
    pub fn below(&mut self, n: usize) -> usize {
        (self.next() % n as u64) as usize
    }
    /// Uniform in `[0, 1)` with 24 bits.
    pub fn unit(&mut self) -> f32 {
        (self.next() >> 40) as f32 / (1u64 << 24) as f32
    }
}

/// Set by the `no_threads` binary (qemu user-mode emulation in this sandbox cannot start
/// threads): only sequential configurations are exercised.
pub static NO_THREADS: AtomicBool = AtomicBool::new(false);

/// Every available ISA, sequential, and (unless [`NO_THREADS`]) parallel with chunking
/// forced on.
pub fn configs() -> Vec<(String, qdq::Config)> {
    let mut out = Vec::new();
    for isa in isas() {
        out.push((format!("{isa}/seq"), qdq::Config::sequential().with_isa(isa)));
        if !NO_THREADS.load(Ordering::Relaxed) {
            out.push((format!("{isa}/par"), qdq::Config { isa: Some(isa), parallel: true, parallel_threshold: 0 }));
        }
    }
    out
}
