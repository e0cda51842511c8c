//! AVX-512 (F, BW, VL, DQ, CD: x86-64-v4) primitives, 16 lanes.
//!
//! Rounding: the conversions are explicit (`vcvtps2dq` and `vcvtdq2ps` with embedded
//! round-to-nearest-even, `vcvtps2ph` with an immediate RNE); the additions, multiplies,
//! divisions and FMAs (the float8 / float4 encoder's exact scaling included) round by
//! MXCSR, which `fpenv::scoped` sets to its default (RNE, no DAZ / FTZ) around each entry
//! point and parallel chunk.
//!
//! # Safety
//!
//! A [`Avx512`] value can only be built from the [`V4`] token, which proves the CPU has
//! every feature used here; the kernels run inside `V4::vectorize`, so the intrinsics
//! inline into code compiled with those features. Every pointer access goes through a
//! slice of exactly the accessed length (bounds-checked by the slicing itself), or through
//! a masked load/store that touches only the unmasked bytes of such a slice.

#![allow(unsafe_code)]

use super::sse;
use crate::codec::{byte_route_mag, store_minifloat_x4, MiniFormat};
use crate::simd::Simd;
use core::arch::x86_64::*;

/// The values of the 32 float6 magnitude codes of e2m3 (`[0]`) and e3m2 (`[1]`):
/// `Simd::decode_f6`'s two-table lookup (`crate::codec::f6_values`).
static F6_VALUES: [[u8; 128]; 2] =
    [crate::codec::f6_values(&qdq_ref::float::E2M3), crate::codec::f6_values(&qdq_ref::float::E3M2)];

/// Proof that the CPU has the x86-64-v4 features the kernels use, AVX-512 F, BW, CD, DQ and
/// VL over the AVX2 / FMA / F16C level (the way pulp's tokens work; pulp's own `V4`,
/// behind its `x86-v4` feature, brings a vector library qdq does not use and doubles
/// pulp's build time).
#[derive(Clone, Copy, Debug)]
pub(crate) struct V4 {
    /// The AVX2 / FMA / F16C level this one includes (its pulp token methods serve the
    /// SSE helpers).
    v3: super::avx2::V3F16c,
}

impl V4 {
    /// Whether this CPU has every feature (std caches the detection).
    pub(crate) fn is_available() -> bool {
        is_x86_feature_detected!("avx512f")
            && is_x86_feature_detected!("avx512bw")
            && is_x86_feature_detected!("avx512cd")
            && is_x86_feature_detected!("avx512dq")
            && is_x86_feature_detected!("avx512vl")
            && is_x86_feature_detected!("avx2")
            && is_x86_feature_detected!("fma")
            && is_x86_feature_detected!("f16c")
            && is_x86_feature_detected!("bmi1")
            && is_x86_feature_detected!("bmi2")
            && is_x86_feature_detected!("lzcnt")
            && is_x86_feature_detected!("popcnt")
    }

    /// The token, if this CPU has every feature.
    pub(crate) fn try_new() -> Option<V4> {
        if !V4::is_available() {
            return None;
        }
        super::avx2::V3F16c::try_new().map(|v3| V4 { v3 })
    }

    /// Runs `f` in a function compiled with the features, into which it inlines.
    #[inline(always)]
    pub(crate) fn vectorize<F: pulp::NullaryFnOnce>(self, f: F) -> F::Output {
        #[target_feature(enable = "avx512f,avx512bw,avx512cd,avx512dq,avx512vl,avx2,fma,f16c,bmi1,bmi2,lzcnt,popcnt")]
        #[inline]
        fn imp<F: pulp::NullaryFnOnce>(f: F) -> F::Output {
            f.call()
        }
        // SAFETY: a `V4` exists only where `is_available` found every enabled feature.
        unsafe { imp(f) }
    }
}

/// The AVX-512 ISA token.
#[derive(Clone, Copy, Debug)]
pub(crate) struct Avx512(#[allow(dead_code)] pub V4);

const RNE: i32 = _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC;

/// A value-only intrinsic call (no memory access).
macro_rules! v {
    ($e:expr) => {{
        // SAFETY: a value-only AVX-512F/BW/DQ/VL or SSE intrinsic; the features are proven
        // by the V4 token an `Avx512` is built from (module docs).
        unsafe { $e }
    }};
}

/// The lane operation of [`Avx512::reduce_each`].
#[derive(Clone, Copy)]
enum Reduce {
    Min,
    Max,
    /// Signed i32 maximum.
    MaxI,
}

impl Avx512 {
    /// Element order back from the order two rounds of packs leave four vectors in (each
    /// 128-bit lane holds a dword of every vector): one dword permute.
    #[inline(always)]
    fn pack_order(self, p: __m512i) -> __m512i {
        v!(_mm512_permutexvar_epi32(_mm512_setr_epi32(0, 4, 8, 12, 1, 5, 9, 13, 2, 6, 10, 14, 3, 7, 11, 15), p))
    }

    /// Stores two vectors of 16-bit codes as packs of two i32 vectors leave them (each
    /// 128-bit lane four words of the first vector, then four of the second): `lo` holds
    /// vectors 0 and 1, `hi` vectors 2 and 3; 128 bytes in element order, by a qword
    /// permute each and two whole stores.
    #[inline(always)]
    fn store_16_packed(self, lo: __m512i, hi: __m512i, out: &mut [u8]) {
        let order = v!(_mm512_setr_epi64(0, 2, 4, 6, 1, 3, 5, 7));
        let (lo, hi) = (v!(_mm512_permutexvar_epi64(order, lo)), v!(_mm512_permutexvar_epi64(order, hi)));
        let out = &mut out[..128];
        let (o0, o1) = out.split_at_mut(64);
        // SAFETY: `o0` and `o1` are exactly the 64 bytes each store writes.
        unsafe {
            _mm512_storeu_si512(o0.as_mut_ptr().cast(), lo);
            _mm512_storeu_si512(o1.as_mut_ptr().cast(), hi);
        }
    }

    /// 16 codes narrowed to bytes (low 8 bits of each lane).
    #[inline(always)]
    fn bytes(self, a: __m512i) -> __m128i {
        // SAFETY: AVX-512F is proven by the V4 token (module docs).
        v!(_mm512_cvtepi32_epi8(a))
    }

    /// Stores 64 codes, bytes of `p` in the order two rounds of packs leave four vectors
    /// (128-bit lanes interleaved), as 32 bytes of nibbles: element 2k's low 4 bits in the
    /// low nibble, 2k + 1's in the high one.
    #[inline(always)]
    fn store_nibbles(self, p: __m512i, out: &mut [u8]) {
        let v = v!({
            // The dword permute restores element order; then, per 16-bit lane, element
            // 2k's nibble low and 2k + 1's high, and the words' low bytes.
            let p = self.pack_order(p);
            let lo = _mm512_and_si512(p, _mm512_set1_epi16(0x000f));
            let hi = _mm512_and_si512(_mm512_srli_epi16::<4>(p), _mm512_set1_epi16(0x00f0));
            _mm512_cvtepi16_epi8(_mm512_or_si512(lo, hi))
        });
        let out = &mut out[..32];
        // SAFETY: `out` is exactly the 32 bytes written.
        unsafe { _mm256_storeu_si256(out.as_mut_ptr().cast(), v) }
    }

    /// [`Simd::store_sat4x4`] / [`Simd::store_sat2x4`] (`bits` 4 or 2): as
    /// [`Simd::store_sat8x4`], then the byte clamp to the type's range and the nibble or
    /// crumb store.
    #[inline(always)]
    fn store_sat_sub(self, c: [__m512i; 4], z: [__m512i; 4], signed: bool, bits: u32, out: &mut [u8]) {
        let hi = if signed { (1 << (bits - 1)) - 1 } else { (1 << bits) - 1 };
        let p = v!({
            let a = _mm512_adds_epi16(_mm512_packs_epi32(c[0], c[1]), z[0]);
            let b = _mm512_adds_epi16(_mm512_packs_epi32(c[2], c[3]), z[1]);
            if signed {
                _mm512_min_epi8(
                    _mm512_max_epi8(_mm512_packs_epi16(a, b), _mm512_set1_epi8(-hi - 1)),
                    _mm512_set1_epi8(hi),
                )
            } else {
                _mm512_min_epu8(_mm512_packus_epi16(a, b), _mm512_set1_epi8(hi))
            }
        });
        if bits == 4 {
            self.store_nibbles(p, out)
        } else {
            self.store_crumbs(p, out)
        }
    }

    /// Stores 64 2-bit codes, bytes of `p` in the order two rounds of packs leave four
    /// vectors (two's complement bytes: only their low 2 bits are stored), as 16 bytes of
    /// crumbs: the dword permute that restores element order; then per dword, element 4k's
    /// crumb plus 4, 16 and 64 times the next three's (two multiply-adds of the low 2
    /// bits), and the dwords' low bytes.
    #[inline(always)]
    fn store_crumbs(self, p: __m512i, out: &mut [u8]) {
        let v = v!({
            let p = self.pack_order(p);
            let crumbs = _mm512_and_si512(p, _mm512_set1_epi8(3));
            let t = _mm512_maddubs_epi16(crumbs, _mm512_set1_epi16(0x0401));
            _mm512_cvtepi32_epi8(_mm512_madd_epi16(t, _mm512_set1_epi32(0x0010_0001)))
        });
        let out = &mut out[..16];
        // SAFETY: `out` is exactly the 16 bytes written.
        unsafe { _mm_storeu_si128(out.as_mut_ptr().cast(), v) }
    }

    /// `Simd::hmin_each` / `Simd::hmax_each` / `Simd::hmax_i_each` (by `op`, on i32 lanes
    /// as their bit patterns): a transposing reduction, 45 operations for sixteen vectors.
    /// Lanes of pairs of vectors interleaved and reduced within 64-bit pairs, then within
    /// 128-bit lanes (vectors `4k..4k+3` in lane order), then the four vectors' 128-bit lanes
    /// transposed and reduced in two rounds.
    #[inline(always)]
    fn reduce_each(self, v: &[__m512i], op: Reduce) -> __m512i {
        let mut p = [v!(_mm512_setzero_si512()); 8];
        for (pk, ab) in p.iter_mut().zip(v.chunks_exact(2)) {
            *pk = self.reduce2(v!(_mm512_unpacklo_epi32(ab[0], ab[1])), v!(_mm512_unpackhi_epi32(ab[0], ab[1])), op);
        }
        let mut q = [v!(_mm512_setzero_si512()); 4];
        for (qk, ab) in q.iter_mut().zip(p.chunks_exact(2)) {
            *qk = self.reduce2(v!(_mm512_unpacklo_epi64(ab[0], ab[1])), v!(_mm512_unpackhi_epi64(ab[0], ab[1])), op);
        }
        // Lanes (0, 1) op (2, 3) of two vectors, then lanes 0 op 1 of the four pairs.
        let m01 = self.reduce2(
            v!(_mm512_shuffle_i32x4::<0x44>(q[0], q[1])),
            v!(_mm512_shuffle_i32x4::<0xee>(q[0], q[1])),
            op,
        );
        let m23 = self.reduce2(
            v!(_mm512_shuffle_i32x4::<0x44>(q[2], q[3])),
            v!(_mm512_shuffle_i32x4::<0xee>(q[2], q[3])),
            op,
        );
        self.reduce2(v!(_mm512_shuffle_i32x4::<0x88>(m01, m23)), v!(_mm512_shuffle_i32x4::<0xdd>(m01, m23)), op)
    }

    #[inline(always)]
    fn reduce2(self, a: __m512i, b: __m512i, op: Reduce) -> __m512i {
        match op {
            Reduce::Min => v!(_mm512_castps_si512(_mm512_min_ps(_mm512_castsi512_ps(a), _mm512_castsi512_ps(b)))),
            Reduce::Max => v!(_mm512_castps_si512(_mm512_max_ps(_mm512_castsi512_ps(a), _mm512_castsi512_ps(b)))),
            Reduce::MaxI => v!(_mm512_max_epi32(a, b)),
        }
    }

    /// [`Avx512::reduce_each`] of f32 vectors.
    #[inline(always)]
    fn reduce_each_f(self, v: &[__m512], op: Reduce) -> __m512 {
        let mut b = [v!(_mm512_setzero_si512()); 16];
        for (bk, &vk) in b.iter_mut().zip(v) {
            *bk = v!(_mm512_castps_si512(vk));
        }
        v!(_mm512_castsi512_ps(self.reduce_each(&b, op)))
    }

    /// 64 bytes in element order, each below 64 (float6 codes), as 48 bytes of 6-bit fields
    /// (LSB first, four elements to three bytes).
    #[inline(always)]
    fn store_sixes(self, v: __m512i, out: &mut [u8]) {
        let v = v!({
            // Per dword, element 4k plus 64, 4096 and 262144 times the next three (two
            // multiply-adds): its 24-bit group. Then each 128-bit lane's four groups as its
            // low 12 bytes (a byte shuffle), the lanes' 12 bytes joined by a dword permute.
            let t = _mm512_maddubs_epi16(v, _mm512_set1_epi16(0x4001));
            let t = _mm512_madd_epi16(t, _mm512_set1_epi32(0x1000_0001));
            let idx = _mm512_broadcast_i32x4(_mm_setr_epi8(0, 1, 2, 4, 5, 6, 8, 9, 10, 12, 13, 14, -1, -1, -1, -1));
            let t = _mm512_shuffle_epi8(t, idx);
            _mm512_permutexvar_epi32(_mm512_setr_epi32(0, 1, 2, 4, 5, 6, 8, 9, 10, 12, 13, 14, 3, 7, 11, 15), t)
        });
        let out = &mut out[..48];
        // SAFETY: the masked store writes only the 48 bytes of `out` (12 dwords, mask 0x0fff).
        unsafe { _mm512_mask_storeu_epi32(out.as_mut_ptr().cast(), 0x0fff, v) }
    }
}

impl Simd for Avx512 {
    #[inline(never)]
    fn enter<K: crate::isa::IsaKernel<Self>>(self, k: K) -> K::Output {
        self.0.vectorize(super::Call(k, self))
    }

    const LANES: usize = 16;
    const LUT16: bool = true;
    const MINI_X4: bool = true;
    const CHECKED_CVT16: bool = true;
    const U4_TABLE16: bool = true;
    const E5M2_F16: bool = true;
    const MINI_DIV_QUOTIENTS: usize = 4;
    type F = __m512;
    type I = __m512i;
    type M = __mmask16;

    #[inline(always)]
    fn splat(self, v: f32) -> __m512 {
        v!(_mm512_set1_ps(v))
    }
    #[inline(always)]
    fn add(self, a: __m512, b: __m512) -> __m512 {
        v!(_mm512_add_ps(a, b))
    }
    #[inline(always)]
    fn sub(self, a: __m512, b: __m512) -> __m512 {
        v!(_mm512_sub_ps(a, b))
    }
    #[inline(always)]
    fn mul(self, a: __m512, b: __m512) -> __m512 {
        v!(_mm512_mul_ps(a, b))
    }
    #[inline(always)]
    fn div(self, a: __m512, b: __m512) -> __m512 {
        v!(_mm512_div_ps(a, b))
    }
    #[inline(always)]
    fn fma(self, a: __m512, b: __m512, c: __m512) -> __m512 {
        v!(_mm512_fmadd_ps(a, b, c))
    }
    #[inline(always)]
    fn fnma(self, a: __m512, b: __m512, c: __m512) -> __m512 {
        v!(_mm512_fnmadd_ps(a, b, c))
    }
    #[inline(always)]
    fn min(self, a: __m512, b: __m512) -> __m512 {
        v!(_mm512_min_ps(a, b))
    }
    #[inline(always)]
    fn max(self, a: __m512, b: __m512) -> __m512 {
        v!(_mm512_max_ps(a, b))
    }
    #[inline(always)]
    fn clamp_abs(self, a: __m512, b: __m512) -> __m512 {
        // vrangeps imm 0b00_10: the smaller magnitude, with the sign of the first operand
        // (a NaN `a` gives b's magnitude with the NaN's sign on Zen 4: unspecified).
        v!(_mm512_range_ps::<0b0010>(a, b))
    }
    #[inline(always)]
    fn eq(self, a: __m512, b: __m512) -> __mmask16 {
        v!(_mm512_cmp_ps_mask::<_CMP_EQ_OQ>(a, b))
    }
    #[inline(always)]
    fn is_nan(self, a: __m512) -> __mmask16 {
        v!(_mm512_cmp_ps_mask::<_CMP_UNORD_Q>(a, a))
    }
    #[inline(always)]
    fn lt(self, a: __m512, b: __m512) -> __mmask16 {
        v!(_mm512_cmp_ps_mask::<_CMP_LT_OQ>(a, b))
    }
    #[inline(always)]
    fn select(self, m: __mmask16, a: __m512, b: __m512) -> __m512 {
        v!(_mm512_mask_blend_ps(m, b, a))
    }
    #[inline(always)]
    fn or_m(self, a: __mmask16, b: __mmask16) -> __mmask16 {
        a | b
    }
    #[inline(always)]
    fn andnot_m(self, a: __mmask16, b: __mmask16) -> __mmask16 {
        a & !b
    }
    #[inline(always)]
    fn nonzero_or(self, a: __m512, b: __m512) -> __m512 {
        // vfixupimmps classifies `a` (token 0 QNaN, 1 SNaN, 2 zero, 3 one, 4 -inf, 5 +inf,
        // 6 negative, 7 positive) and picks, per token, response 0 (keep the destination
        // `b`) or 1 (`a`).
        v!(_mm512_fixupimm_ps::<0>(b, a, _mm512_set1_epi32(0x1111_1000)))
    }
    #[inline(always)]
    fn mask_bits(self, m: __mmask16) -> u32 {
        m as u32
    }
    #[inline(always)]
    fn mask_from_bits(self, bits: u32) -> __mmask16 {
        bits as __mmask16
    }
    #[inline(always)]
    fn splat_i(self, v: i32) -> __m512i {
        v!(_mm512_set1_epi32(v))
    }
    #[inline(always)]
    fn add_i(self, a: __m512i, b: __m512i) -> __m512i {
        v!(_mm512_add_epi32(a, b))
    }
    #[inline(always)]
    fn sub_i(self, a: __m512i, b: __m512i) -> __m512i {
        v!(_mm512_sub_epi32(a, b))
    }
    #[inline(always)]
    fn and_i(self, a: __m512i, b: __m512i) -> __m512i {
        v!(_mm512_and_si512(a, b))
    }
    #[inline(always)]
    fn or_i(self, a: __m512i, b: __m512i) -> __m512i {
        v!(_mm512_or_si512(a, b))
    }
    #[inline(always)]
    fn shl(self, a: __m512i, n: u32) -> __m512i {
        v!(_mm512_sll_epi32(a, _mm_cvtsi32_si128(n as i32)))
    }
    #[inline(always)]
    fn shr(self, a: __m512i, n: u32) -> __m512i {
        v!(_mm512_srl_epi32(a, _mm_cvtsi32_si128(n as i32)))
    }
    #[inline(always)]
    fn sra(self, a: __m512i, n: u32) -> __m512i {
        v!(_mm512_sra_epi32(a, _mm_cvtsi32_si128(n as i32)))
    }
    #[inline(always)]
    fn xor_i(self, a: __m512i, b: __m512i) -> __m512i {
        v!(_mm512_xor_si512(a, b))
    }
    #[inline(always)]
    fn min_i(self, a: __m512i, b: __m512i) -> __m512i {
        v!(_mm512_min_epi32(a, b))
    }
    #[inline(always)]
    fn max_i(self, a: __m512i, b: __m512i) -> __m512i {
        v!(_mm512_max_epi32(a, b))
    }
    #[inline(always)]
    fn xor_and(self, a: __m512i, b: __m512i, c: __m512i) -> __m512i {
        // Truth table of A ^ (B & C) over (A, B, C) = (0xf0, 0xcc, 0xaa): 0x78.
        v!(_mm512_ternarylogic_epi32::<0x78>(a, b, c))
    }
    #[inline(always)]
    fn lt_i(self, a: __m512i, b: __m512i) -> __mmask16 {
        v!(_mm512_cmplt_epi32_mask(a, b))
    }
    #[inline(always)]
    fn eq_i(self, a: __m512i, b: __m512i) -> __mmask16 {
        v!(_mm512_cmpeq_epi32_mask(a, b))
    }
    #[inline(always)]
    fn select_i(self, m: __mmask16, a: __m512i, b: __m512i) -> __m512i {
        v!(_mm512_mask_blend_epi32(m, b, a))
    }
    #[inline(always)]
    fn bits(self, a: __m512) -> __m512i {
        v!(_mm512_castps_si512(a))
    }
    #[inline(always)]
    fn f32_of(self, a: __m512i) -> __m512 {
        v!(_mm512_castsi512_ps(a))
    }
    #[inline(always)]
    fn cvt_rne(self, a: __m512) -> __m512i {
        v!(_mm512_cvt_roundps_epi32::<RNE>(a))
    }
    #[inline(always)]
    fn cvt_rne_x4(self, a: [__m512; 4]) -> Option<[__m512i; 4]> {
        // (A loop, not a closure: closures do not inherit the target features.)
        let mut c = [self.splat_i(0); 4];
        for (ck, v) in c.iter_mut().zip(a) {
            *ck = self.cvt_rne(v);
        }
        // vcvtps2dq gives the "integer indefinite" i32::MIN for NaN and out-of-range lanes
        // (a legitimate -2^31 then only costs a redo). A min tree and one compare: cheaper
        // than four compares on Zen 4.
        let bad = v!({
            let m = _mm512_min_epi32(_mm512_min_epi32(c[0], c[1]), _mm512_min_epi32(c[2], c[3]));
            _mm512_cmpeq_epi32_mask(m, _mm512_set1_epi32(i32::MIN)) != 0
        });
        (!bad).then_some(c)
    }
    #[inline(always)]
    fn cvt_trunc(self, a: __m512) -> __m512i {
        v!(_mm512_cvttps_epi32(a))
    }
    #[inline(always)]
    fn cvt_f32(self, a: __m512i) -> __m512 {
        v!(_mm512_cvt_roundepi32_ps::<RNE>(a))
    }

    #[inline(always)]
    fn load_f32(self, b: &[u8]) -> __m512 {
        let b = &b[..64];
        // SAFETY: `b` is exactly the 64 bytes read (unaligned load).
        unsafe { _mm512_loadu_ps(b.as_ptr().cast()) }
    }
    #[inline(always)]
    fn load_i32(self, b: &[u8]) -> __m512i {
        let b = &b[..64];
        // SAFETY: `b` is exactly the 64 bytes read.
        unsafe { _mm512_loadu_si512(b.as_ptr().cast()) }
    }
    #[inline(always)]
    fn load_f16(self, b: &[u8]) -> __m512 {
        let b = &b[..32];
        // SAFETY: `b` is exactly the 32 bytes read; vcvtph2ps is exact.
        unsafe { _mm512_cvtph_ps(_mm256_loadu_si256(b.as_ptr().cast())) }
    }
    #[inline(always)]
    fn load_e5m2(self, b: &[u8]) -> __m512 {
        let b = &b[..16];
        // SAFETY: `b` is exactly the 16 bytes read; vcvtph2ps is exact.
        unsafe {
            let v = _mm256_cvtepu8_epi16(_mm_loadu_si128(b.as_ptr().cast()));
            _mm512_cvtph_ps(_mm256_slli_epi16::<8>(v))
        }
    }
    #[inline(always)]
    fn load_u16(self, b: &[u8]) -> __m512i {
        let b = &b[..32];
        // SAFETY: `b` is exactly the 32 bytes read.
        unsafe { _mm512_cvtepu16_epi32(_mm256_loadu_si256(b.as_ptr().cast())) }
    }
    #[inline(always)]
    fn load_i16(self, b: &[u8]) -> __m512i {
        let b = &b[..32];
        // SAFETY: `b` is exactly the 32 bytes read.
        unsafe { _mm512_cvtepi16_epi32(_mm256_loadu_si256(b.as_ptr().cast())) }
    }
    #[inline(always)]
    fn load_i8(self, b: &[u8]) -> __m512i {
        let b = &b[..16];
        // SAFETY: `b` is exactly the 16 bytes read.
        unsafe { _mm512_cvtepi8_epi32(_mm_loadu_si128(b.as_ptr().cast())) }
    }
    #[inline(always)]
    fn load_u8(self, b: &[u8]) -> __m512i {
        let b = &b[..16];
        // SAFETY: `b` is exactly the 16 bytes read.
        unsafe { _mm512_cvtepu8_epi32(_mm_loadu_si128(b.as_ptr().cast())) }
    }
    #[inline(always)]
    fn load_u4(self, b: &[u8]) -> __m512i {
        let b = &b[..8];
        // SAFETY: `b` is exactly the 8 bytes read (movq).
        unsafe {
            let v = _mm_loadl_epi64(b.as_ptr().cast());
            let bytes = sse::unpack_nibbles(self.0.v3, v);
            _mm512_and_si512(_mm512_cvtepu8_epi32(bytes), _mm512_set1_epi32(0xf))
        }
    }
    #[inline(always)]
    fn load_u2(self, b: &[u8]) -> __m512i {
        let b = &b[..4];
        let w = u32::from_le_bytes([b[0], b[1], b[2], b[3]]);
        // SAFETY: value-only SSSE3 / AVX-512 intrinsics (V4 token).
        unsafe {
            let v = _mm_cvtsi32_si128(w as i32);
            let rep = _mm_shuffle_epi8(v, _mm_setr_epi8(0, 0, 0, 0, 1, 1, 1, 1, 2, 2, 2, 2, 3, 3, 3, 3));
            let shifts = _mm512_setr_epi32(0, 2, 4, 6, 0, 2, 4, 6, 0, 2, 4, 6, 0, 2, 4, 6);
            _mm512_and_si512(_mm512_srlv_epi32(_mm512_cvtepu8_epi32(rep), shifts), _mm512_set1_epi32(3))
        }
    }
    #[inline(always)]
    fn load_2bit_x4<const SIGNED: bool>(self, b: &[u8]) -> [__m512i; 4] {
        // Each vector's sixteen crumbs are one dword: broadcast, crumb `e` shifted to the
        // top of lane `e`, then down by 30, arithmetic where signed.
        let mut c = [self.splat_i(0); 4];
        for (ck, d) in c.iter_mut().zip(b[..16].chunks_exact(4)) {
            let w = i32::from_le_bytes([d[0], d[1], d[2], d[3]]);
            let up = v!(_mm512_setr_epi32(30, 28, 26, 24, 22, 20, 18, 16, 14, 12, 10, 8, 6, 4, 2, 0));
            let t = v!(_mm512_sllv_epi32(_mm512_set1_epi32(w), up));
            *ck = if SIGNED { v!(_mm512_srai_epi32::<30>(t)) } else { v!(_mm512_srli_epi32::<30>(t)) };
        }
        c
    }
    #[inline(always)]
    fn load_u6(self, b: &[u8]) -> __m512i {
        let b = &b[..12];
        // SAFETY: the masked load reads only the 12 bytes of `b` (mask 0x0fff; masked-off
        // bytes are not accessed and cannot fault).
        unsafe {
            let v = _mm_maskz_loadu_epi8(0x0fff, b.as_ptr().cast());
            let wide = _mm512_broadcast_i32x4(v);
            // 128-bit lane L holds group L (elements 4L..4L+3): bytes 3L..3L+2 into each u32.
            let idx = _mm512_set_epi8(
                -1, 11, 10, 9, -1, 11, 10, 9, -1, 11, 10, 9, -1, 11, 10, 9, //
                -1, 8, 7, 6, -1, 8, 7, 6, -1, 8, 7, 6, -1, 8, 7, 6, //
                -1, 5, 4, 3, -1, 5, 4, 3, -1, 5, 4, 3, -1, 5, 4, 3, //
                -1, 2, 1, 0, -1, 2, 1, 0, -1, 2, 1, 0, -1, 2, 1, 0,
            );
            let groups = _mm512_shuffle_epi8(wide, idx);
            let shifts = _mm512_setr_epi32(0, 6, 12, 18, 0, 6, 12, 18, 0, 6, 12, 18, 0, 6, 12, 18);
            _mm512_and_si512(_mm512_srlv_epi32(groups, shifts), _mm512_set1_epi32(0x3f))
        }
    }

    #[inline(always)]
    fn store_f32(self, a: __m512, out: &mut [u8]) {
        let out = &mut out[..64];
        // SAFETY: `out` is exactly the 64 bytes written.
        unsafe { _mm512_storeu_ps(out.as_mut_ptr().cast(), a) }
    }
    // The default `f6_x4`: `load_u6x4`, then `decode_f6` below per vector.
    const F6_X4: bool = true;
    #[inline(always)]
    fn decode_f6(self, c: __m512i, f: &MiniFormat) -> __m512 {
        // e2m3 has three mantissa bits, e3m2 two (the only float6 formats). The 32
        // magnitudes' values are two vectors: a two-table permute looks up the code's low
        // 5 bits, and the sign (bit 5, shifted to bit 31) goes on by a bitwise select.
        let t = &F6_VALUES[if f.man == 3 { 0 } else { 1 }];
        let (lo, hi) = (self.load_f32(&t[..64]), self.load_f32(&t[64..]));
        let m = v!(_mm512_castps_si512(_mm512_permutex2var_ps(lo, c, hi)));
        // `m | (s & sign)`: bit 31 from the code's bit 5 (`m`'s is clear).
        let s = v!(_mm512_slli_epi32::<26>(c));
        v!(_mm512_castsi512_ps(_mm512_ternarylogic_epi32::<0xf8>(m, s, _mm512_set1_epi32(i32::MIN))))
    }
    #[inline(always)]
    fn lut16(self, t: &[u8; 64], c: __m512i) -> __m512 {
        let t = self.load_f32(t);
        v!(_mm512_permutexvar_ps(c, t))
    }
    #[inline(always)]
    fn prefetch(self, b: &[u8]) {
        if let Some(p) = b.first() {
            // SAFETY: a prefetch never faults; `p` is a valid address besides.
            unsafe { _mm_prefetch::<_MM_HINT_T0>(core::ptr::from_ref(p).cast()) }
        }
    }
    #[inline(always)]
    fn hmin(self, a: __m512) -> f32 {
        let h = v!(_mm512_castpd_ps(_mm512_shuffle_f64x2::<0b1110>(_mm512_castps_pd(a), _mm512_castps_pd(a))));
        let m = v!(_mm512_castps512_ps256(_mm512_min_ps(a, h)));
        let m = v!(_mm_min_ps(_mm256_castps256_ps128(m), _mm256_extractf128_ps::<1>(m)));
        sse::hmin4(self.0.v3, m)
    }
    #[inline(always)]
    fn hmax(self, a: __m512) -> f32 {
        let h = v!(_mm512_castpd_ps(_mm512_shuffle_f64x2::<0b1110>(_mm512_castps_pd(a), _mm512_castps_pd(a))));
        let m = v!(_mm512_castps512_ps256(_mm512_max_ps(a, h)));
        let m = v!(_mm_max_ps(_mm256_castps256_ps128(m), _mm256_extractf128_ps::<1>(m)));
        sse::hmax4(self.0.v3, m)
    }
    #[inline(always)]
    fn hmin_each(self, v: &[__m512]) -> __m512 {
        self.reduce_each_f(v, Reduce::Min)
    }
    #[inline(always)]
    fn hmax_each(self, v: &[__m512]) -> __m512 {
        self.reduce_each_f(v, Reduce::Max)
    }
    #[inline(always)]
    fn hmax_i_each(self, v: &[__m512i]) -> __m512i {
        self.reduce_each(v, Reduce::MaxI)
    }
    #[inline(always)]
    fn hmax_i(self, a: __m512i) -> i32 {
        let m = v!(_mm512_max_epi32(a, _mm512_shuffle_i64x2::<0b1110>(a, a)));
        let m = v!(_mm512_castsi512_si256(m));
        let m = v!(_mm_max_epi32(_mm256_castsi256_si128(m), _mm256_extracti128_si256::<1>(m)));
        sse::hmax4_i(self.0.v3, m)
    }
    #[inline(always)]
    fn store_i32(self, a: __m512i, out: &mut [u8]) {
        let out = &mut out[..64];
        // SAFETY: `out` is exactly the 64 bytes written.
        unsafe { _mm512_storeu_si512(out.as_mut_ptr().cast(), a) }
    }
    #[inline(always)]
    fn store_u16(self, a: __m512i, out: &mut [u8]) {
        let out = &mut out[..32];
        // SAFETY: `out` is exactly the 32 bytes written; vpmovdw truncates each lane.
        unsafe { _mm256_storeu_si256(out.as_mut_ptr().cast(), _mm512_cvtepi32_epi16(a)) }
    }
    #[inline(always)]
    fn lut16_u16_x4(self, t: &[u8; 32], b: &[u8], y: &mut [u8]) {
        // AVX2's byte-shuffle lookup: 32 codes a call whatever the vector width (a 512-bit
        // `vpshufb` would look up 64 codes, more than a step of the callers holds).
        Simd::lut16_u16_x4(super::avx2::Avx2(self.0.v3), t, b, y)
    }
    #[inline(always)]
    fn cvt_store_sat16x4(self, q: [__m512; 4], signed: bool, out: &mut [u8]) -> bool {
        let Some(c) = self.cvt_rne_x4(q) else { return false };
        // The signed saturating packs are the clamp to i16; u16's clamp(c + 32768, 0,
        // 65535) is that clamp with the top bit flipped.
        let flip = v!(_mm512_set1_epi16(if signed { 0 } else { i16::MIN }));
        let (lo, hi) = (v!(_mm512_packs_epi32(c[0], c[1])), v!(_mm512_packs_epi32(c[2], c[3])));
        self.store_16_packed(v!(_mm512_xor_si512(lo, flip)), v!(_mm512_xor_si512(hi, flip)), out);
        true
    }
    #[inline(always)]
    fn store_u8(self, a: __m512i, out: &mut [u8]) {
        let out = &mut out[..16];
        // SAFETY: `out` is exactly the 16 bytes written.
        unsafe { _mm_storeu_si128(out.as_mut_ptr().cast(), self.bytes(a)) }
    }
    #[inline(always)]
    fn store_u8x4(self, c: [__m512i; 4], out: &mut [u8]) {
        let v = v!({
            // Low bytes only (two's complement codes of i8 too), so the saturating packs
            // never clip; then undo the packs' 128-bit lane interleave with one permute.
            let m = _mm512_set1_epi32(0xff);
            let a = _mm512_packs_epi32(_mm512_and_si512(c[0], m), _mm512_and_si512(c[1], m));
            let b = _mm512_packs_epi32(_mm512_and_si512(c[2], m), _mm512_and_si512(c[3], m));
            let p = _mm512_packus_epi16(a, b);
            self.pack_order(p)
        });
        let out = &mut out[..64];
        // SAFETY: `out` is exactly the 64 bytes written.
        unsafe { _mm512_storeu_si512(out.as_mut_ptr().cast(), v) }
    }
    #[inline(always)]
    fn zero_points_x4(self, z: [__m512i; 4]) -> [__m512i; 4] {
        // Packed as the codes' first pack stage (i32 -> i16) packs them; the last two
        // vectors are unused.
        v!([
            _mm512_packs_epi32(z[0], z[1]),
            _mm512_packs_epi32(z[2], z[3]),
            _mm512_setzero_si512(),
            _mm512_setzero_si512()
        ])
    }
    #[inline(always)]
    fn store_sat8x4(self, c: [__m512i; 4], z: [__m512i; 4], signed: bool, out: &mut [u8]) {
        let v = v!({
            let a = _mm512_adds_epi16(_mm512_packs_epi32(c[0], c[1]), z[0]);
            let b = _mm512_adds_epi16(_mm512_packs_epi32(c[2], c[3]), z[1]);
            let p = if signed { _mm512_packs_epi16(a, b) } else { _mm512_packus_epi16(a, b) };
            // Undo the packs' 128-bit lane interleave.
            self.pack_order(p)
        });
        let out = &mut out[..64];
        // SAFETY: `out` is exactly the 64 bytes written.
        unsafe { _mm512_storeu_si512(out.as_mut_ptr().cast(), v) }
    }
    #[inline(always)]
    fn sat_mask_x4(self, c: [__m512i; 4], z: [__m512i; 4], qmin: i32, qmax: i32) -> u64 {
        v!({
            // The store's own i16 sums (the optimiser shares them with it): beyond i16 a
            // lane saturates, and stays beyond every 8-bit range after adding a zero point.
            let a = _mm512_adds_epi16(_mm512_packs_epi32(c[0], c[1]), z[0]);
            let b = _mm512_adds_epi16(_mm512_packs_epi32(c[2], c[3]), z[1]);
            let (lo, hi) = (_mm512_set1_epi16(qmin as i16), _mm512_set1_epi16(qmax as i16));
            // In range: all-ones i16 lanes, packed to bytes in the codes' order.
            let ka = _mm512_mask_cmple_epi16_mask(_mm512_cmpge_epi16_mask(a, lo), a, hi);
            let kb = _mm512_mask_cmple_epi16_mask(_mm512_cmpge_epi16_mask(b, lo), b, hi);
            let m = _mm512_packs_epi16(_mm512_movm_epi16(ka), _mm512_movm_epi16(kb));
            _mm512_movepi8_mask(self.pack_order(m))
        })
    }
    #[inline(always)]
    fn store_sat2x4(self, c: [__m512i; 4], z: [__m512i; 4], signed: bool, out: &mut [u8]) {
        self.store_sat_sub(c, z, signed, 2, out)
    }
    #[inline(always)]
    fn store_sat4x4(self, c: [__m512i; 4], z: [__m512i; 4], signed: bool, out: &mut [u8]) {
        self.store_sat_sub(c, z, signed, 4, out)
    }
    #[inline(always)]
    fn store_mini_x4(self, q: [__m512; 4], f: &MiniFormat, out: &mut [u8]) {
        // (Formats without a route, none of the callers' today, take the per-vector codec.)
        let Some(r) = f.byte_route() else { return store_minifloat_x4(self, q, f, out) };
        let mut c = [v!(_mm512_setzero_si512()); 4];
        for (ck, v) in c.iter_mut().zip(q) {
            *ck = byte_route_mag(self, v, &r);
        }
        let v = v!({
            // Magnitude bytes (signed packs to i16 and the wrapping subtract of `bias16`;
            // NaN's code saturates to 255, then `cap`), and the sign bytes
            // of the same lanes: signed saturating packs of the f32 patterns keep their
            // sign (as a byte's top bit, spread to the sign bit's position by a mask).
            let k = _mm512_set1_epi16(r.bias16);
            let (lo, hi) = (_mm512_packs_epi32(c[0], c[1]), _mm512_packs_epi32(c[2], c[3]));
            let mag = _mm512_packus_epi16(_mm512_sub_epi16(lo, k), _mm512_sub_epi16(hi, k));
            let mag = _mm512_min_epu8(mag, _mm512_set1_epi8(r.cap as i8));
            // (Not `q.map(..)`: closures do not inherit the ISA's target features.)
            let b = [
                _mm512_castps_si512(q[0]),
                _mm512_castps_si512(q[1]),
                _mm512_castps_si512(q[2]),
                _mm512_castps_si512(q[3]),
            ];
            let u = _mm512_packs_epi16(_mm512_packs_epi32(b[0], b[1]), _mm512_packs_epi32(b[2], b[3]));
            let sign = _mm512_maskz_mov_epi8(_mm512_movepi8_mask(u), _mm512_set1_epi8(r.sign_bit as i8));
            let sign = if r.unsigned_zero {
                // fnuz: the sign only on magnitudes 1..=0x7f, whose `m + 0x7f` alone sets
                // bit 7 without m's own bit 7 (0 and the NaN 0x80 get none).
                let m1 = _mm512_add_epi8(mag, _mm512_set1_epi8(0x7f));
                _mm512_and_si512(sign, _mm512_xor_si512(m1, mag))
            } else {
                sign
            };
            _mm512_xor_si512(mag, sign)
        });
        if r.sign_bit == 8 {
            return self.store_nibbles(v, out);
        }
        // Undo the packs' 128-bit lane interleave with one permute.
        let v = self.pack_order(v);
        if r.sign_bit == 0x20 {
            return self.store_sixes(v, out);
        }
        let out = &mut out[..64];
        // SAFETY: `out` is exactly the 64 bytes written.
        unsafe { _mm512_storeu_si512(out.as_mut_ptr().cast(), v) }
    }
    #[inline(always)]
    fn store_u4x4(self, c: [__m512i; 4], out: &mut [u8]) {
        // Signed saturating packs keep every lane of [-128, 127] as its two's complement byte.
        let p = v!(_mm512_packs_epi16(_mm512_packs_epi32(c[0], c[1]), _mm512_packs_epi32(c[2], c[3])));
        self.store_nibbles(p, out)
    }
    #[inline(always)]
    fn store_u2x4(self, c: [__m512i; 4], out: &mut [u8]) {
        // As `store_u4x4`'s packs (two's complement bytes), then the crumbs.
        let p = v!(_mm512_packs_epi16(_mm512_packs_epi32(c[0], c[1]), _mm512_packs_epi32(c[2], c[3])));
        self.store_crumbs(p, out)
    }
    #[inline(always)]
    fn store_u4(self, a: __m512i, out: &mut [u8]) {
        let out = &mut out[..8];
        // SAFETY: `out` is exactly the 8 bytes written (movq).
        unsafe { _mm_storel_epi64(out.as_mut_ptr().cast(), sse::pack_nibbles(self.0.v3, self.bytes(a))) }
    }
    #[inline(always)]
    fn store_u2(self, a: __m512i, out: &mut [u8]) {
        // SAFETY: SSE2/SSSE3 value intrinsics (V4 token).
        let v = v!(_mm_cvtsi128_si32(sse::pack_crumbs(self.0.v3, self.bytes(a))));
        out[..4].copy_from_slice(&v.to_le_bytes());
    }
    #[inline(always)]
    fn store_u6(self, a: __m512i, out: &mut [u8]) {
        let out = &mut out[..12];
        // SAFETY: the masked store writes only the 12 bytes of `out` (mask 0x0fff).
        unsafe { _mm_mask_storeu_epi8(out.as_mut_ptr().cast(), 0x0fff, sse::pack_sixes(self.0.v3, self.bytes(a))) }
    }

    #[inline(always)]
    fn f32_to_f16_bits(self, a: __m512) -> __m512i {
        v!(_mm512_cvtepu16_epi32(_mm512_cvtps_ph::<RNE>(a)))
    }
    #[inline(always)]
    fn round_f16(self, a: __m512) -> __m512 {
        v!(_mm512_cvtph_ps(_mm512_cvtps_ph::<RNE>(a)))
    }
}
