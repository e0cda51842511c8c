//! # qdq: the crate inference engines link
//!
//! Same API as [`qdq_ref`] (the executable specification), so swapping the crates changes
//! nothing but speed. The runtime-dispatched SIMD kernels land here next; until then every
//! entry point is the reference implementation itself.

#![deny(missing_docs)]

pub use qdq_ref::*;
