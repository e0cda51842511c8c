//! Check functions shared by the libtest targets and the thread-free `no_threads` binary.
#![allow(dead_code)]

pub mod differential;
pub mod exhaustive;
pub mod training;

use std::sync::atomic::{AtomicBool, Ordering};

/// Set by the `no_threads` binary (qemu user-mode emulation in this sandbox cannot start
/// threads): only sequential configurations are exercised.
pub static NO_THREADS: AtomicBool = AtomicBool::new(false);

/// Every available ISA, sequential, and (unless [`NO_THREADS`]) parallel with chunking
/// forced on.
pub fn configs() -> Vec<(String, qdq::Config)> {
    let mut out = Vec::new();
    for isa in qdq::Isa::available() {
        out.push((format!("{isa}/seq"), qdq::Config::sequential().with_isa(isa)));
        if !NO_THREADS.load(Ordering::Relaxed) {
            out.push((format!("{isa}/par"), qdq::Config { isa: Some(isa), parallel: true, parallel_threshold: 0 }));
        }
    }
    out
}
