//! The floating-point environment every kernel runs in.
//!
//! ```text
//! x86-64   MXCSR = 0x1F80: round to nearest even, DAZ = FTZ = 0, every exception masked
//! aarch64  FPCR  = 0:      round to nearest even, FZ = FZ16 = DN = AHP = 0, no traps,
//!                          FEAT_AFP's FIZ / AH / NEP clear
//! ```
//!
//! Engines often run with denormals-are-zero / flush-to-zero set (onnxruntime has a session
//! option for it), and a caller may change the rounding mode or unmask an exception. Under
//! such a state the same instructions give other bits: a subnormal scale reads as zero, a
//! subnormal product is flushed, an integer to float conversion rounds down, a NaN traps.
//! So every public entry point, and every parallel chunk on whichever pool thread runs it,
//! goes through [`scoped`]: it reads the control register, writes the default above only
//! if it differs, runs the work, and puts the caller's state back, keeping the exception
//! flags the work raised. On the common default-state path that is one register read
//! (`stmxcsr` / `mrs`) per call and per chunk, and no write.
//!
//! Results are then independent of the caller's state. Other targets (the portable path)
//! run in whatever state the caller set.
//!
//! Rust code is only defined under the default floating-point environment (the compiler
//! folds and moves float operations assuming it). A caller that changed it is outside that
//! model; `scoped` puts the code that follows back inside it. Its work closure and result
//! pass through [`std::hint::black_box`], so no float operation of the work is hoisted above
//! the write or sunk below the restore.

#![allow(unsafe_code)]

/// Runs `f` under the default floating-point environment of the module docs, then restores
/// the caller's (keeping the exception flags `f` raised).
#[inline]
pub(crate) fn scoped<R>(f: impl FnOnce() -> R) -> R {
    let saved = enter();
    let f = std::hint::black_box(f);
    let r = std::hint::black_box(f());
    if let Some(state) = saved {
        leave(state);
    }
    r
}

#[cfg(target_arch = "x86_64")]
mod imp {
    use std::arch::asm;

    /// Round to nearest, no DAZ / FTZ, all six exceptions masked, no flags.
    const DEFAULT: u32 = 0x1F80;
    /// The exception flags (bits 0-5); everything above is control.
    const FLAGS: u32 = 0x3F;

    #[inline(always)]
    fn read() -> u32 {
        let mut csr = 0u32;
        // SAFETY: `stmxcsr` stores the 32-bit MXCSR (SSE, part of x86-64's baseline) to the
        // given address, which is a live, aligned, writable `u32`.
        unsafe { asm!("stmxcsr [{}]", in(reg) &mut csr, options(nostack, preserves_flags)) };
        csr
    }

    #[inline(always)]
    fn write(csr: u32) {
        // SAFETY: `ldmxcsr` loads MXCSR from a live, aligned `u32`. Every value written here
        // has the reserved bits 16-31 clear (it is `DEFAULT` with flags, or a value read
        // from MXCSR), so it cannot fault.
        unsafe { asm!("ldmxcsr [{}]", in(reg) &csr, options(nostack, preserves_flags)) };
    }

    /// The caller's MXCSR if it had to be changed.
    #[inline(always)]
    pub(super) fn enter() -> Option<u32> {
        let csr = read();
        if csr & !FLAGS == DEFAULT {
            return None;
        }
        write(DEFAULT | (csr & FLAGS));
        Some(csr)
    }

    #[inline(always)]
    pub(super) fn leave(saved: u32) {
        write(saved | (read() & FLAGS));
    }
}

#[cfg(target_arch = "aarch64")]
mod imp {
    use std::arch::asm;

    /// The caller's FPCR if it had to be changed. The exception flags live in FPSR, which
    /// is left alone.
    #[inline(always)]
    pub(super) fn enter() -> Option<u64> {
        let fpcr: u64;
        // SAFETY: reading FPCR is allowed at EL0 and has no side effect.
        unsafe { asm!("mrs {}, fpcr", out(reg) fpcr, options(nostack, preserves_flags)) };
        if fpcr == 0 {
            return None;
        }
        // SAFETY: writing FPCR is allowed at EL0; 0 is the Linux default (round to nearest,
        // no flushing, IEEE NaN propagation, no traps).
        unsafe { asm!("msr fpcr, {}", in(reg) 0u64, options(nostack, preserves_flags)) };
        Some(fpcr)
    }

    #[inline(always)]
    pub(super) fn leave(saved: u64) {
        // SAFETY: restores the value read by `enter`.
        unsafe { asm!("msr fpcr, {}", in(reg) saved, options(nostack, preserves_flags)) };
    }
}

#[cfg(not(any(target_arch = "x86_64", target_arch = "aarch64")))]
mod imp {
    #[inline(always)]
    pub(super) fn enter() -> Option<()> {
        None
    }

    #[inline(always)]
    pub(super) fn leave(_: ()) {}
}

use imp::{enter, leave};
