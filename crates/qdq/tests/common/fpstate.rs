//! The caller's floating-point state, set the way an engine sets it: denormals-are-zero,
//! flush-to-zero, each non-default rounding mode, unmasked exceptions (x86-64 MXCSR,
//! aarch64 FPCR). [`set`] makes the differential checks run every qdq call under a state,
//! on the calling thread and on every rayon pool thread, while their reference values are
//! computed beforehand in the default state (see [`super::configs`]).
#![allow(unsafe_code)]

use std::cell::Cell;

/// A control-register value and its name.
#[derive(Clone, Copy, Debug)]
pub struct State {
    pub name: &'static str,
    pub bits: u64,
}

/// Every non-default state the checks run under, for this target.
pub fn states() -> Vec<State> {
    #[cfg(target_arch = "x86_64")]
    {
        // MXCSR: DAZ bit 6, exception masks bits 7-12, rounding bits 13-14, FTZ bit 15.
        let d = 0x1F80u64;
        vec![
            State { name: "DAZ", bits: d | 0x40 },
            State { name: "FTZ", bits: d | 0x8000 },
            State { name: "DAZ+FTZ", bits: d | 0x8040 },
            State { name: "round-down", bits: d | 0x2000 },
            State { name: "round-up", bits: d | 0x4000 },
            State { name: "round-to-zero", bits: d | 0x6000 },
            State { name: "DAZ+FTZ+round-to-zero", bits: d | 0xE040 },
        ]
    }
    #[cfg(target_arch = "aarch64")]
    {
        // FPCR: FZ16 bit 19, RMode bits 22-23, FZ bit 24, DN bit 25, AHP bit 26.
        vec![
            State { name: "FZ", bits: 1 << 24 },
            State { name: "FZ+FZ16", bits: (1 << 24) | (1 << 19) },
            State { name: "round-up", bits: 1 << 22 },
            State { name: "round-down", bits: 2 << 22 },
            State { name: "round-to-zero", bits: 3 << 22 },
            State { name: "default-NaN", bits: 1 << 25 },
            State { name: "alternative-half", bits: 1 << 26 },
            State { name: "FZ+DN+round-to-zero", bits: (1 << 24) | (1 << 25) | (3 << 22) },
        ]
    }
    #[cfg(not(any(target_arch = "x86_64", target_arch = "aarch64")))]
    {
        Vec::new()
    }
}

/// States that trap: every floating-point exception unmasked (x86-64 MXCSR; aarch64 FPCR's
/// trap enables, which most cores ignore). Only a qdq call may run under them, not the
/// checks' own float code.
pub fn trapping_states() -> Vec<State> {
    #[cfg(target_arch = "x86_64")]
    {
        vec![
            State { name: "exceptions-unmasked", bits: 0 },
            State { name: "exceptions-unmasked+DAZ+FTZ+round-up", bits: 0xC040 },
        ]
    }
    #[cfg(target_arch = "aarch64")]
    {
        // IOE, DZE, OFE, UFE, IXE (bits 8-12), IDE (bit 15).
        vec![State { name: "traps-enabled", bits: 0x9F00 }]
    }
    #[cfg(not(any(target_arch = "x86_64", target_arch = "aarch64")))]
    {
        Vec::new()
    }
}

thread_local! {
    static CURRENT: Cell<Option<State>> = const { Cell::new(None) };
}

/// Makes the checks of this thread run qdq under `s` (None: the default state).
pub fn set(s: Option<State>) {
    CURRENT.with(|c| c.set(s));
}

/// The state the checks of this thread run qdq under.
pub fn current() -> Option<State> {
    CURRENT.with(|c| c.get())
}

#[cfg(target_arch = "x86_64")]
fn read() -> u64 {
    let mut csr = 0u32;
    // SAFETY: stmxcsr writes 4 bytes to a live u32.
    unsafe { std::arch::asm!("stmxcsr [{}]", in(reg) &mut csr, options(nostack)) };
    csr as u64
}

#[cfg(target_arch = "x86_64")]
fn write(v: u64) {
    let csr = v as u32;
    // SAFETY: ldmxcsr reads 4 bytes from a live u32 whose reserved bits are clear.
    unsafe { std::arch::asm!("ldmxcsr [{}]", in(reg) &csr, options(nostack)) };
}

#[cfg(target_arch = "aarch64")]
fn read() -> u64 {
    let v: u64;
    // SAFETY: FPCR is readable at EL0.
    unsafe { std::arch::asm!("mrs {}, fpcr", out(reg) v, options(nostack)) };
    v
}

#[cfg(target_arch = "aarch64")]
fn write(v: u64) {
    // SAFETY: FPCR is writable at EL0; every value written is a documented combination.
    unsafe { std::arch::asm!("msr fpcr, {}", in(reg) v, options(nostack)) };
}

#[cfg(not(any(target_arch = "x86_64", target_arch = "aarch64")))]
fn read() -> u64 {
    0
}

#[cfg(not(any(target_arch = "x86_64", target_arch = "aarch64")))]
fn write(_: u64) {}

/// The control register of the calling thread (for checks that it was restored).
pub fn register() -> u64 {
    read()
}

/// Loads a value [`register`] read into the calling thread's control register.
pub fn load(v: u64) {
    write(v);
}

/// Puts `s` into the calling thread's control register and, unless `threads` is false, into
/// every rayon pool thread's; returns what the calling thread had.
pub fn apply(s: State, threads: bool) -> u64 {
    if threads {
        rayon::broadcast(|_| write(s.bits));
    }
    let old = read();
    write(s.bits);
    old
}

/// Undoes [`apply`]: `old` on the calling thread, the default state on the pool threads.
pub fn restore(old: u64, threads: bool) {
    write(old);
    if threads {
        rayon::broadcast(|_| write(old));
    }
}
