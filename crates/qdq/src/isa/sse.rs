//! SSE2 / SSSE3 helpers shared by the AVX2 and AVX-512 modules: the sub-byte packers work
//! on a 128-bit register of one byte per element, which both ISAs produce.
//!
//! Safe code: the intrinsics are pulp's token methods, and the `V3F16c` token each function
//! takes proves SSE2, SSSE3 and SSE4.1 (the AVX-512 token holds one too).

use super::avx2::V3F16c;
use core::arch::x86_64::*;

/// 8 bytes of packed nibbles (low 64 bits of `v`) to 16 bytes, one nibble per byte (the
/// high nibble of each result byte is garbage; callers mask it).
#[inline(always)]
pub(super) fn unpack_nibbles(simd: V3F16c, v: __m128i) -> __m128i {
    simd.sse2._mm_unpacklo_epi8(v, simd.sse2._mm_srli_epi16::<4>(v))
}

/// 16 element bytes (codes in the low 4 bits) to 8 packed bytes in the low 64 bits:
/// element 2k in the low nibble, 2k+1 in the high nibble.
#[inline(always)]
pub(super) fn pack_nibbles(simd: V3F16c, bytes: __m128i) -> __m128i {
    let lo = simd.sse2._mm_and_si128(bytes, simd.sse2._mm_set1_epi16(0x000f));
    let hi = simd.sse2._mm_and_si128(simd.sse2._mm_srli_epi16::<4>(bytes), simd.sse2._mm_set1_epi16(0x00f0));
    let t = simd.sse2._mm_or_si128(lo, hi);
    simd.sse2._mm_packus_epi16(t, t)
}

/// 16 element bytes (codes in the low 2 bits) to 4 packed bytes in the low 32 bits:
/// `x0 | x1 << 2 | x2 << 4 | x3 << 6`.
#[inline(always)]
pub(super) fn pack_crumbs(simd: V3F16c, bytes: __m128i) -> __m128i {
    let m = simd.sse2._mm_set1_epi32(3);
    let b0 = simd.sse2._mm_and_si128(bytes, m);
    let b1 = simd.sse2._mm_slli_epi32::<2>(simd.sse2._mm_and_si128(simd.sse2._mm_srli_epi32::<8>(bytes), m));
    let b2 = simd.sse2._mm_slli_epi32::<4>(simd.sse2._mm_and_si128(simd.sse2._mm_srli_epi32::<16>(bytes), m));
    let b3 = simd.sse2._mm_slli_epi32::<6>(simd.sse2._mm_and_si128(simd.sse2._mm_srli_epi32::<24>(bytes), m));
    let t = simd.sse2._mm_or_si128(simd.sse2._mm_or_si128(b0, b1), simd.sse2._mm_or_si128(b2, b3));
    let t = simd.sse4_1._mm_packus_epi32(t, t);
    simd.sse2._mm_packus_epi16(t, t)
}

/// 16 element bytes (codes in the low 6 bits) to 12 packed bytes in the low 96 bits: each
/// group of four is the LSB-first 24-bit word `x0 | x1 << 6 | x2 << 12 | x3 << 18`.
#[inline(always)]
pub(super) fn pack_sixes(simd: V3F16c, bytes: __m128i) -> __m128i {
    let m = simd.sse2._mm_set1_epi32(0x3f);
    let b0 = simd.sse2._mm_and_si128(bytes, m);
    let b1 = simd.sse2._mm_slli_epi32::<6>(simd.sse2._mm_and_si128(simd.sse2._mm_srli_epi32::<8>(bytes), m));
    let b2 = simd.sse2._mm_slli_epi32::<12>(simd.sse2._mm_and_si128(simd.sse2._mm_srli_epi32::<16>(bytes), m));
    let b3 = simd.sse2._mm_slli_epi32::<18>(simd.sse2._mm_and_si128(simd.sse2._mm_srli_epi32::<24>(bytes), m));
    let t = simd.sse2._mm_or_si128(simd.sse2._mm_or_si128(b0, b1), simd.sse2._mm_or_si128(b2, b3));
    simd.ssse3._mm_shuffle_epi8(t, simd.sse2._mm_setr_epi8(0, 1, 2, 4, 5, 6, 8, 9, 10, 12, 13, 14, -1, -1, -1, -1))
}

/// The minimum of four f32 lanes, none of them NaN (which of ±0 wins is unspecified).
#[inline(always)]
pub(super) fn hmin4(simd: V3F16c, v: __m128) -> f32 {
    let m = simd.sse._mm_min_ps(v, simd.sse._mm_movehl_ps(v, v));
    simd.sse._mm_cvtss_f32(simd.sse._mm_min_ss(m, simd.sse._mm_shuffle_ps::<0b01>(m, m)))
}

/// The maximum of four f32 lanes, none of them NaN (which of ±0 wins is unspecified).
#[inline(always)]
pub(super) fn hmax4(simd: V3F16c, v: __m128) -> f32 {
    let m = simd.sse._mm_max_ps(v, simd.sse._mm_movehl_ps(v, v));
    simd.sse._mm_cvtss_f32(simd.sse._mm_max_ss(m, simd.sse._mm_shuffle_ps::<0b01>(m, m)))
}

/// The signed maximum of four i32 lanes.
#[inline(always)]
pub(super) fn hmax4_i(simd: V3F16c, v: __m128i) -> i32 {
    let m = simd.sse4_1._mm_max_epi32(v, simd.sse2._mm_shuffle_epi32::<0b1110>(v));
    simd.sse2._mm_cvtsi128_si32(simd.sse4_1._mm_max_epi32(m, simd.sse2._mm_shuffle_epi32::<0b01>(m)))
}
