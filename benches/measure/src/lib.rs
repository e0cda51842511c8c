//! Measurement tooling of the qdq benches (`qdq-benches`, `cargo xtask bench`,
//! `cargo xtask vs-ort`): the roofline kernel, 64-byte aligned buffers, and batch timing.
//!
//! # What the roofline measures
//!
//! An operator call on `n` elements reads `R` bytes and writes `W` bytes. For the
//! inference ops (`qdq_benches::Case::io_bytes` gives the figures of every case):
//!
//! ```text
//! R = bytes(x) + bytes(scales) + bytes(zero points)      W = bytes(y)
//! e.g. QuantizeLinear f32 -> u8, per-tensor:  R = 4 n + 4 + 1,  W = n   (about 5 bytes per element)
//! ```
//!
//! The [`Roofline`] kernel moves exactly those bytes and does nothing else: one sequential
//! pass that reads each of the `R` input bytes once and writes each of the `W` output bytes
//! once, with loads, xors and stores only (64-byte AVX-512 vectors, 32-byte AVX2, or
//! portable 64-bit lanes), over 64-byte aligned buffers split into one contiguous part per
//! thread, as the operator's parallel chunks are. Its time `t_roof` is what this machine's
//! memory system needs for `R + W` bytes at that size (cache level) and thread count, so
//! with `t_case` the operator's time on the same `n` and threads:
//!
//! ```text
//! roofline throughput  = n / t_roof                          elements / s
//! case throughput      = n / t_case                          elements / s
//! fraction of roofline = (n / t_case) / (n / t_roof) = t_roof / t_case
//! ```
//!
//! A fraction near 1 means the call is as fast as moving its bytes allows; what is left
//! below 1 is the arithmetic the roofline leaves out. Each time is the [`median`] of
//! batches of calls (see [`time_batches`]); the roofline picks ordinary or non-temporal
//! stores, whichever is faster here ([`Roofline::calibrate`]).
//!
//! # `unsafe`
//!
//! Only the module of the streaming kernels has `unsafe` code (raw-pointer AVX-512 loads
//! and stores, and calls of `#[target_feature]` functions after run-time detection); every
//! block states why it is sound. The rest of the crate denies `unsafe`.

#![deny(unsafe_code)]
#![deny(clippy::undocumented_unsafe_blocks)]

mod aligned;
#[allow(unsafe_code)]
mod kernels;
mod roofline;
mod timing;

pub use aligned::Aligned;
pub use roofline::Roofline;
pub use timing::{median, time_batches};
