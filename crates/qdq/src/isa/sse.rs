//! SSE2 / SSSE3 helpers shared by the AVX2 and AVX-512 modules: the sub-byte packers work
//! on a 128-bit register of one byte per element, which both ISAs produce.
//!
//! # Safety
//!
//! Every function here requires SSE2, SSSE3 and SSE4.1. Callers are the `avx2` and `avx512`
//! modules, whose tokens (`V3F16c` and `V4`) prove those features.

#![allow(unsafe_code)]

use core::arch::x86_64::*;

/// 8 bytes of packed nibbles (low 64 bits of `v`) to 16 bytes, one nibble per byte (the
/// high nibble of each result byte is garbage; callers mask it).
///
/// # Safety
/// SSE2 must be available (module docs).
#[inline(always)]
pub(super) unsafe fn unpack_nibbles(v: __m128i) -> __m128i {
    // SAFETY: value-only SSE2 intrinsics; the caller guarantees SSE2.
    unsafe { _mm_unpacklo_epi8(v, _mm_srli_epi16::<4>(v)) }
}

/// 16 element bytes (codes in the low 4 bits) to 8 packed bytes in the low 64 bits:
/// element 2k in the low nibble, 2k+1 in the high nibble.
///
/// # Safety
/// SSE2 must be available (module docs).
#[inline(always)]
pub(super) unsafe fn pack_nibbles(bytes: __m128i) -> __m128i {
    // SAFETY: value-only SSE2 intrinsics; the caller guarantees SSE2.
    unsafe {
        let lo = _mm_and_si128(bytes, _mm_set1_epi16(0x000f));
        let hi = _mm_and_si128(_mm_srli_epi16::<4>(bytes), _mm_set1_epi16(0x00f0));
        let t = _mm_or_si128(lo, hi);
        _mm_packus_epi16(t, t)
    }
}

/// 16 element bytes (codes in the low 2 bits) to 4 packed bytes in the low 32 bits:
/// `x0 | x1 << 2 | x2 << 4 | x3 << 6`.
///
/// # Safety
/// SSE4.1 must be available (module docs).
#[inline(always)]
pub(super) unsafe fn pack_crumbs(bytes: __m128i) -> __m128i {
    // SAFETY: value-only SSE2/SSE4.1 intrinsics; the caller guarantees them.
    unsafe {
        let m = _mm_set1_epi32(3);
        let b0 = _mm_and_si128(bytes, m);
        let b1 = _mm_slli_epi32::<2>(_mm_and_si128(_mm_srli_epi32::<8>(bytes), m));
        let b2 = _mm_slli_epi32::<4>(_mm_and_si128(_mm_srli_epi32::<16>(bytes), m));
        let b3 = _mm_slli_epi32::<6>(_mm_and_si128(_mm_srli_epi32::<24>(bytes), m));
        let t = _mm_or_si128(_mm_or_si128(b0, b1), _mm_or_si128(b2, b3));
        let t = _mm_packus_epi32(t, t);
        _mm_packus_epi16(t, t)
    }
}

/// 16 element bytes (codes in the low 6 bits) to 12 packed bytes in the low 96 bits: each
/// group of four is the LSB-first 24-bit word `x0 | x1 << 6 | x2 << 12 | x3 << 18`.
///
/// # Safety
/// SSSE3 must be available (module docs).
#[inline(always)]
pub(super) unsafe fn pack_sixes(bytes: __m128i) -> __m128i {
    // SAFETY: value-only SSE2/SSSE3 intrinsics; the caller guarantees them.
    unsafe {
        let m = _mm_set1_epi32(0x3f);
        let b0 = _mm_and_si128(bytes, m);
        let b1 = _mm_slli_epi32::<6>(_mm_and_si128(_mm_srli_epi32::<8>(bytes), m));
        let b2 = _mm_slli_epi32::<12>(_mm_and_si128(_mm_srli_epi32::<16>(bytes), m));
        let b3 = _mm_slli_epi32::<18>(_mm_and_si128(_mm_srli_epi32::<24>(bytes), m));
        let t = _mm_or_si128(_mm_or_si128(b0, b1), _mm_or_si128(b2, b3));
        _mm_shuffle_epi8(t, _mm_setr_epi8(0, 1, 2, 4, 5, 6, 8, 9, 10, 12, 13, 14, -1, -1, -1, -1))
    }
}
