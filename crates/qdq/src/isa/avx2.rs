//! AVX2 + FMA + F16C primitives, 8 lanes.
//!
//! Rounding: every kernel runs under the default MXCSR (round to nearest even, no DAZ /
//! FTZ), which `fpenv::scoped` sets around each entry point and parallel chunk. So f32 -> i32
//! is a plain `vcvtps2dq` (RNE), as the multiplies and FMAs before it round by MXCSR too.
//! f32 -> f16 uses `vcvtps2ph` with an RNE immediate; the float8 / float4 encoder's
//! conversion (`codec::ByteRoute`) rounds by MXCSR, RNE as every other conversion here.
//!
//! # Safety
//!
//! An [`Avx2`] value can only be built from the [`V3F16c`] token, whose construction checks
//! every feature used here; the kernels run inside `V3F16c::vectorize`. Value intrinsics are
//! pulp's safe token methods (`self.0.avx2._mm256_add_epi32(..)`); `unsafe` remains only for
//! loads and stores, which go through slices of exactly the accessed length, for the two
//! value intrinsics pulp has no method for (F16C's conversions and x86-64's `movq`), and for
//! one empty `asm!` that keeps a conversion out of a store (`opaque_xmm`), each block with
//! its own `SAFETY` comment.

#![allow(unsafe_code)]

use super::sse;
use crate::codec::{byte_route_mag, store_minifloat_x4, ByteRoute, MiniFormat};
use crate::simd::Simd;
use core::arch::x86_64::*;

pulp::simd_type!({
    /// AVX2 with FMA and F16C (pulp's `V3` plus `f16c`, declared the way the gemm crate does).
    pub struct V3F16c {
        pub sse: f!("sse"),
        pub sse2: f!("sse2"),
        pub fxsr: f!("fxsr"),
        pub sse3: f!("sse3"),
        pub ssse3: f!("ssse3"),
        pub sse4_1: f!("sse4.1"),
        pub sse4_2: f!("sse4.2"),
        pub popcnt: f!("popcnt"),
        pub avx: f!("avx"),
        pub avx2: f!("avx2"),
        pub bmi1: f!("bmi1"),
        pub bmi2: f!("bmi2"),
        pub fma: f!("fma"),
        pub lzcnt: f!("lzcnt"),
        pub f16c: f!("f16c"),
    }
});

/// Whether this CPU's divide unit keeps up with two of the four ymm quotients of each step
/// of the integer quantizers ([`crate::isa::avx2_extra_divide`]): AMD's cores from Zen 2 on
/// (family 17h from model 30h, and every later family), whose `vdivps ymm` issues every 3
/// to 3.5 cycles beside four vector pipes, where two divisions per step ran 1.02-1.09x
/// faster than one on Zen 4 (docs/benchmark-history.md, stop 63). Zen and Zen+ (family 17h
/// below model 30h, and Hygon's cores built on them) split a ymm division in two 128-bit
/// halves, one every 6 cycles, and Intel's cores issue one every 5 (Skylake to Alder Lake;
/// 10-14 on Haswell and Broadwell): there a second would make the divider the bound, so
/// they keep one.
pub(crate) fn divider_keeps_up() -> bool {
    // (`__cpuid` is a safe function in newer Rust releases and an unsafe one in older ones
    // the minimum supported Rust may be: the block serves both.)
    // SAFETY: `cpuid` exists on every x86_64 CPU; leaf 0 (vendor, highest leaf) always, and
    // leaf 1 (family) is read only where leaf 0 reports it.
    #[allow(unused_unsafe)]
    let (v0, v1) = unsafe {
        let v0 = __cpuid(0);
        (v0, if v0.eax >= 1 { __cpuid(1).eax } else { 0 })
    };
    let mut vendor = [0u8; 12];
    for (d, r) in vendor.chunks_exact_mut(4).zip([v0.ebx, v0.edx, v0.ecx]) {
        d.copy_from_slice(&r.to_le_bytes());
    }
    divider_keeps_up_on(&vendor, v1)
}

/// `h`, through an empty `asm!` that takes and returns it in an xmm register: the
/// compiler can no longer see which instruction made it, so it cannot fold that
/// instruction into a later store (see `store_f16`). No instruction is emitted.
#[inline(always)]
fn opaque_xmm(mut h: __m128i) -> __m128i {
    // SAFETY: the template is empty: it reads and writes only `h`'s register, touches no
    // memory, stack or flags, as the options state.
    unsafe { core::arch::asm!("/* {0} */", inout(xmm_reg) h, options(pure, nomem, nostack, preserves_flags)) };
    h
}

/// [`divider_keeps_up`] of the CPU whose vendor string is `vendor` and whose `cpuid` leaf 1
/// `eax` (the signature: family, model, stepping) is `signature`.
fn divider_keeps_up_on(vendor: &[u8; 12], signature: u32) -> bool {
    let base = (signature >> 8) & 0xf;
    let family = if base == 0xf { base + ((signature >> 20) & 0xff) } else { base };
    let model =
        if base == 0xf { ((signature >> 4) & 0xf) | ((signature >> 12) & 0xf0) } else { (signature >> 4) & 0xf };
    vendor == b"AuthenticAMD" && (family > 0x17 || (family == 0x17 && model >= 0x30))
}

/// The AVX2 ISA token.
#[derive(Clone, Copy, Debug)]
pub(crate) struct Avx2(#[allow(dead_code)] pub V3F16c);

/// The lane operation of [`Avx2::reduce_each`].
#[derive(Clone, Copy)]
enum Reduce {
    Min,
    Max,
    /// Signed i32 maximum.
    MaxI,
}

impl Avx2 {
    /// 8 codes narrowed to bytes in the low 64 bits (low 8 bits of each lane).
    #[inline(always)]
    fn bytes(self, a: __m256i) -> __m128i {
        {
            let m = self.0.avx2._mm256_and_si256(a, self.0.avx._mm256_set1_epi32(0xff));
            let w = self.0.avx2._mm256_packus_epi32(m, m); // per 128-bit half: a0..a3 a0..a3 | a4..a7 a4..a7
            let b = self.0.avx2._mm256_packus_epi16(w, w); // bytes a0..a3 x4 | a4..a7 x4
            self.0
                .sse2
                ._mm_unpacklo_epi32(self.0.avx._mm256_castsi256_si128(b), self.0.avx2._mm256_extracti128_si256::<1>(b))
        }
    }

    /// The conversions of four vectors and their first signed saturating packs (`(c0, c1)`
    /// and `(c2, c3)` to i16, 128-bit halves interleaved), or `None` where the conversion
    /// cannot vouch for a lane: its "integer indefinite" i32::MIN (NaN, out of range)
    /// saturates to i16::MIN, found by one 16-bit min and one compare for the four vectors
    /// (a legitimate lane at or below -32768 is refused too, and only costs a redo).
    #[inline(always)]
    fn cvt_packs_checked(self, q: [__m256; 4]) -> Option<(__m256i, __m256i)> {
        let (avx, avx2) = (self.0.avx, self.0.avx2);
        // (A loop, not a closure: closures do not inherit the target features.)
        let mut c = [avx._mm256_setzero_si256(); 4];
        for (ck, v) in c.iter_mut().zip(q) {
            *ck = self.cvt_rne(v);
        }
        let (c01, c23) = (avx2._mm256_packs_epi32(c[0], c[1]), avx2._mm256_packs_epi32(c[2], c[3]));
        let m = avx2._mm256_cmpeq_epi16(avx2._mm256_min_epi16(c01, c23), avx._mm256_set1_epi16(i16::MIN));
        // (A byte mask to a general register, not `vptest`: on Zen 4 the test's two
        // micro-ops compete with the step's own for the vector pipes.)
        (avx2._mm256_movemask_epi8(m) == 0).then_some((c01, c23))
    }

    /// Element order back from the order two rounds of packs leave four vectors in (dword
    /// j of 128-bit half h holds elements 4 (2 j + h) to 4 (2 j + h) + 3): one dword permute.
    #[inline(always)]
    fn pack_order(self, p: __m256i) -> __m256i {
        self.0.avx2._mm256_permutevar8x32_epi32(p, self.0.avx._mm256_setr_epi32(0, 4, 1, 5, 2, 6, 3, 7))
    }

    /// The i16 packs of four vectors of codes (`c01`, `c23`, as `_mm256_packs_epi32` leaves
    /// them) plus their zero points, packed the same way by [`Simd::zero_points_x4`] (`z[0]`
    /// and `z[1]`), with i16 saturation.
    #[inline(always)]
    fn add_zero_points16(self, c01: __m256i, c23: __m256i, z: [__m256i; 4]) -> (__m256i, __m256i) {
        let avx2 = self.0.avx2;
        (avx2._mm256_adds_epi16(c01, z[0]), avx2._mm256_adds_epi16(c23, z[1]))
    }

    /// [`Simd::store_sat8x4`] from the codes' first i16 packs: the zero points, the i8 / u8
    /// saturating pack, the dword permute back to element order, one 32-byte store.
    #[inline(always)]
    fn store_sat8_packed(self, c01: __m256i, c23: __m256i, z: [__m256i; 4], signed: bool, out: &mut [u8]) {
        let avx2 = self.0.avx2;
        let (a, b) = self.add_zero_points16(c01, c23, z);
        let p = if signed { avx2._mm256_packs_epi16(a, b) } else { avx2._mm256_packus_epi16(a, b) };
        let v = self.pack_order(p);
        let out = &mut out[..32];
        // SAFETY: `out` is exactly the 32 bytes written.
        unsafe { _mm256_storeu_si256(out.as_mut_ptr().cast(), v) }
    }

    /// [`Avx2::store_sat8_packed`] where every zero point is the middle of the type (0 for
    /// i8, 128 for u8): no add. The i8 saturating pack is the clamp, and for u8 its top bit
    /// flipped adds 128 (`clamp(c, -128, 127) + 128 = clamp(c + 128, 0, 255)`): two adds a
    /// step fewer (u8: one xor instead) on the pipes the quotients keep busy.
    #[inline(always)]
    fn store_sat8_mid(self, c01: __m256i, c23: __m256i, signed: bool, out: &mut [u8]) {
        let (avx, avx2) = (self.0.avx, self.0.avx2);
        let p = avx2._mm256_packs_epi16(c01, c23);
        let p = if signed { p } else { avx2._mm256_xor_si256(p, avx._mm256_set1_epi8(i8::MIN)) };
        let v = self.pack_order(p);
        let out = &mut out[..32];
        // SAFETY: `out` is exactly the 32 bytes written.
        unsafe { _mm256_storeu_si256(out.as_mut_ptr().cast(), v) }
    }

    /// [`Simd::store_sat4x4`] / [`Simd::store_sat2x4`] (`bits` 4 or 2) from the codes' first
    /// i16 packs: as [`Avx2::store_sat8_packed`] (i16 saturation, the zero points, i8 / u8
    /// saturation), then the byte clamp to the type's range and the nibble or crumb store.
    #[inline(always)]
    fn store_sat_sub_packed(
        self,
        c01: __m256i,
        c23: __m256i,
        z: [__m256i; 4],
        signed: bool,
        bits: u32,
        out: &mut [u8],
    ) {
        let (avx, avx2) = (self.0.avx, self.0.avx2);
        let (a, b) = self.add_zero_points16(c01, c23, z);
        let hi = if signed { (1 << (bits - 1)) - 1 } else { (1 << bits) - 1 };
        let p = if signed {
            let p = avx2._mm256_packs_epi16(a, b);
            avx2._mm256_min_epi8(avx2._mm256_max_epi8(p, avx._mm256_set1_epi8(-hi - 1)), avx._mm256_set1_epi8(hi))
        } else {
            avx2._mm256_min_epu8(avx2._mm256_packus_epi16(a, b), avx._mm256_set1_epi8(hi))
        };
        if bits == 4 {
            self.store_nibbles(p, out)
        } else {
            self.store_crumbs(p, out)
        }
    }

    /// 32 bytes of 2-bit codes in the order two rounds of packs leave them (two's
    /// complement bytes: only their low 2 bits are stored) as 8 bytes of crumbs: the dword
    /// permute that restores element order; then per dword, element 4k's crumb plus 4, 16
    /// and 64 times the next three's (two multiply-adds of the low 2 bits), and the dwords'
    /// low bytes, the two halves' 4 bytes joined by a dword permute.
    #[inline(always)]
    fn store_crumbs(self, p: __m256i, out: &mut [u8]) {
        let (avx, avx2) = (self.0.avx, self.0.avx2);
        let p = self.pack_order(p);
        let crumbs = avx2._mm256_and_si256(p, avx._mm256_set1_epi8(3));
        let t = avx2._mm256_maddubs_epi16(crumbs, avx._mm256_set1_epi16(0x0401));
        let t = avx2._mm256_madd_epi16(t, avx._mm256_set1_epi32(0x0010_0001));
        let t = avx2._mm256_packus_epi16(avx2._mm256_packus_epi32(t, t), avx._mm256_setzero_si256());
        let v = avx
            ._mm256_castsi256_si128(avx2._mm256_permutevar8x32_epi32(t, avx._mm256_setr_epi32(0, 4, 0, 0, 0, 0, 0, 0)));
        let out = &mut out[..8];
        // SAFETY: `out` is exactly the 8 bytes `movq` writes.
        unsafe { _mm_storel_epi64(out.as_mut_ptr().cast(), v) }
    }

    /// `Simd::hmin_each` / `Simd::hmax_each` / `Simd::hmax_i_each` (by `op`): a
    /// transposing reduction, 21 operations for eight vectors. Lanes of a and b (and of the
    /// pairs after them) are interleaved and reduced in three rounds: within 64-bit pairs,
    /// within 128-bit halves, across the halves. (The moves are bit-exact, so i32 lanes
    /// travel as f32 patterns.)
    #[inline(always)]
    fn reduce_each(self, v: &[__m256], op: Reduce) -> __m256 {
        let avx = self.0.avx;
        // [a0 b0 a1 b1] op [a2 b2 a3 b3] per half: lanes (a, b) reduced to two each.
        let mut p = [avx._mm256_setzero_ps(); 4];
        for (pk, ab) in p.iter_mut().zip(v.chunks_exact(2)) {
            *pk = self.reduce2(avx._mm256_unpacklo_ps(ab[0], ab[1]), avx._mm256_unpackhi_ps(ab[0], ab[1]), op);
        }
        // [A0 B0 C0 D0] op [A1 B1 C1 D1] per half: each vector's half reduced to one lane.
        let mut q = [avx._mm256_setzero_ps(); 2];
        for (qk, ab) in q.iter_mut().zip(p.chunks_exact(2)) {
            let (lo, hi) = (avx._mm256_shuffle_ps::<0x44>(ab[0], ab[1]), avx._mm256_shuffle_ps::<0xee>(ab[0], ab[1]));
            *qk = self.reduce2(lo, hi, op);
        }
        let (lo, hi) = (avx._mm256_permute2f128_ps::<0x20>(q[0], q[1]), avx._mm256_permute2f128_ps::<0x31>(q[0], q[1]));
        self.reduce2(lo, hi, op)
    }

    #[inline(always)]
    fn reduce2(self, a: __m256, b: __m256, op: Reduce) -> __m256 {
        let (avx, avx2) = (self.0.avx, self.0.avx2);
        match op {
            Reduce::Min => avx._mm256_min_ps(a, b),
            Reduce::Max => avx._mm256_max_ps(a, b),
            Reduce::MaxI => {
                avx._mm256_castsi256_ps(avx2._mm256_max_epi32(avx._mm256_castps_si256(a), avx._mm256_castps_si256(b)))
            }
        }
    }

    /// Stores two vectors of 16-bit codes as 16-bit packs leave them (128-bit halves
    /// interleaved): one qword permute each restores the order; 64 bytes.
    #[inline(always)]
    fn store_16_packed(self, lo: __m256i, hi: __m256i, out: &mut [u8]) {
        let lo = self.0.avx2._mm256_permute4x64_epi64::<0b1101_1000>(lo);
        let hi = self.0.avx2._mm256_permute4x64_epi64::<0b1101_1000>(hi);
        let out = &mut out[..64];
        let (o0, o1) = out.split_at_mut(32);
        // SAFETY: `o0` and `o1` are exactly the 32 bytes each store writes.
        unsafe {
            _mm256_storeu_si256(o0.as_mut_ptr().cast(), lo);
            _mm256_storeu_si256(o1.as_mut_ptr().cast(), hi);
        }
    }

    /// Two vectors' byte-route magnitude codes ([`ByteRoute`]: a signed saturating pack,
    /// then the wrapping subtract of `bias16`) and the f32 patterns (a signed saturating
    /// pack, which keeps their signs).
    #[inline(always)]
    fn byte_route_pair(self, a: __m256, b: __m256, r: &ByteRoute) -> (__m256i, __m256i) {
        let (avx, avx2) = (self.0.avx, self.0.avx2);
        let c = avx2._mm256_packs_epi32(byte_route_mag(self, a, r), byte_route_mag(self, b, r));
        let c = avx2._mm256_sub_epi16(c, avx._mm256_set1_epi16(r.bias16));
        (c, avx2._mm256_packs_epi32(avx._mm256_castps_si256(a), avx._mm256_castps_si256(b)))
    }

    /// Stores 32 codes, bytes of `p` in the order two rounds of packs leave four vectors
    /// (128-bit halves interleaved), as 16 bytes of nibbles: element 2k's low 4 bits in
    /// the low nibble, 2k + 1's in the high one.
    #[inline(always)]
    fn store_nibbles(self, p: __m256i, out: &mut [u8]) {
        let (avx, avx2) = (self.0.avx, self.0.avx2);
        let v = {
            // The dword permute restores element order; then, per 16-bit lane, element
            // 2k's nibble plus 16 times 2k + 1's (one unsigned-by-signed byte multiply-add
            // of the low 4 bits); then the words' low bytes, the two halves' 8 bytes
            // joined by a qword permute.
            let p = self.pack_order(p);
            let nibbles = avx2._mm256_and_si256(p, avx._mm256_set1_epi8(0x0f));
            let t = avx2._mm256_maddubs_epi16(nibbles, avx._mm256_set1_epi16(0x1001));
            let q = avx2._mm256_packus_epi16(t, t);
            avx._mm256_castsi256_si128(avx2._mm256_permute4x64_epi64::<0b1000>(q))
        };
        let out = &mut out[..16];
        // SAFETY: `out` is exactly the 16 bytes written.
        unsafe { _mm_storeu_si128(out.as_mut_ptr().cast(), v) }
    }

    /// The 16-bit entries of 32 packed 4-bit codes (`b`: 16 bytes, element 2k in the low
    /// nibble of byte k) looked up by `vpshufb`: `tl` and `th` hold the 16 entries' low and
    /// high bytes in both halves. `order` picks each half's 8 bytes (the rest -1), whose 16
    /// codes, low nibble first, the half looks up; the two results are the words of the
    /// low 8 codes of each half, then of the high 8.
    #[inline(always)]
    fn lookup16_words(self, b: &[u8], order: __m256i, tl: __m256i, th: __m256i) -> (__m256i, __m256i) {
        let b = &b[..16];
        // SAFETY: `b` is exactly the 16 bytes read (unaligned load).
        let v = unsafe { _mm_loadu_si128(b.as_ptr().cast()) };
        let (avx, avx2) = (self.0.avx, self.0.avx2);
        let v = avx2._mm256_shuffle_epi8(avx2._mm256_broadcastsi128_si256(v), order);
        let m = avx._mm256_set1_epi8(0x0f);
        let c = avx2._mm256_unpacklo_epi8(
            avx2._mm256_and_si256(v, m),
            avx2._mm256_and_si256(avx2._mm256_srli_epi16::<4>(v), m),
        );
        let (lo, hi) = (avx2._mm256_shuffle_epi8(tl, c), avx2._mm256_shuffle_epi8(th, c));
        (avx2._mm256_unpacklo_epi8(lo, hi), avx2._mm256_unpackhi_epi8(lo, hi))
    }

    /// The four 6-bit fields of the 24-bit group in each 128-bit half's dwords (the group
    /// repeated in all four), one per dword.
    #[inline(always)]
    fn six_fields(self, g: __m256i) -> __m256i {
        let (avx, avx2) = (self.0.avx, self.0.avx2);
        let shifts = avx._mm256_setr_epi32(0, 6, 12, 18, 0, 6, 12, 18);
        avx2._mm256_and_si256(avx2._mm256_srlv_epi32(g, shifts), avx._mm256_set1_epi32(0x3f))
    }

    /// 32 bytes in element order, each below 64 (float6 codes), as 24 bytes of 6-bit fields
    /// (LSB first, four elements to three bytes).
    #[inline(always)]
    fn store_sixes(self, v: __m256i, out: &mut [u8]) {
        let (avx, avx2) = (self.0.avx, self.0.avx2);
        // Per dword, element 4k plus 64, 4096 and 262144 times the next three (two
        // multiply-adds, as `store_u2x4`): its 24-bit group. Then each half's four groups
        // as its low 12 bytes (a byte shuffle), the halves' 12 bytes joined by a dword
        // permute.
        let t = avx2._mm256_maddubs_epi16(v, avx._mm256_set1_epi16(0x4001));
        let t = avx2._mm256_madd_epi16(t, avx._mm256_set1_epi32(0x1000_0001));
        let idx = avx._mm256_setr_epi8(
            0, 1, 2, 4, 5, 6, 8, 9, 10, 12, 13, 14, -1, -1, -1, -1, 0, 1, 2, 4, 5, 6, 8, 9, 10, 12, 13, 14, -1, -1, -1,
            -1,
        );
        let t = avx2._mm256_shuffle_epi8(t, idx);
        let t = avx2._mm256_permutevar8x32_epi32(t, avx._mm256_setr_epi32(0, 1, 2, 4, 5, 6, 3, 7));
        let (lo, hi) = (avx._mm256_castsi256_si128(t), avx2._mm256_extracti128_si256::<1>(t));
        let out = &mut out[..24];
        // SAFETY: `out` is exactly the 16 + 8 bytes written (`movdqu`, then `movq` at 16).
        unsafe {
            _mm_storeu_si128(out.as_mut_ptr().cast(), lo);
            _mm_storel_epi64(out[16..].as_mut_ptr().cast(), hi);
        }
    }
}

/// Byte 3 and byte 2 of float4 e2m1's 16 values (`crate::codec::e2m1_lut_bytes`) in both
/// 128-bit halves: the `vpshufb` tables of `Simd::e2m1_x4`.
static E2M1_B3: [u8; 32] = twice(crate::codec::e2m1_lut_bytes(3));
static E2M1_B2: [u8; 32] = twice(crate::codec::e2m1_lut_bytes(2));

/// The `vpshufb` tables of `Simd::f6_x4` for e2m3 (`[0]`) and e3m2 (`[1]`): bytes 2 of the
/// values of magnitude codes 0-15, then 16-31, then bytes 3 of the same
/// (`crate::codec::f6_lut_bytes`).
static F6_TABLES: [[[u8; 32]; 4]; 2] = [f6_tables(&qdq_ref::float::E2M3), f6_tables(&qdq_ref::float::E3M2)];

const fn f6_tables(f: &qdq_ref::float::FloatFormat) -> [[u8; 32]; 4] {
    use crate::codec::f6_lut_bytes;
    [f6_lut_bytes(f, 2, 0), f6_lut_bytes(f, 2, 1), f6_lut_bytes(f, 3, 0), f6_lut_bytes(f, 3, 1)]
}

const fn twice(b: [u8; 16]) -> [u8; 32] {
    let mut t = [0u8; 32];
    let mut i = 0;
    while i < 32 {
        t[i] = b[i % 16];
        i += 1;
    }
    t
}

impl Simd for Avx2 {
    #[inline(never)]
    fn enter<K: crate::isa::IsaKernel<Self>>(self, k: K) -> K::Output {
        self.0.vectorize(super::Call(k, self))
    }

    const LANES: usize = 8;
    const LUT16: bool = true;
    const CHECKED_CVT16: bool = true;
    const PACK_CHECK: bool = true;
    const MINI_X4: bool = true;
    const U6X4: bool = true;
    const E5M2_F16: bool = true;
    const PACK16_X4: bool = true;
    const U4X4_ROWS: bool = true;
    const TILE_PARAMS_APART: bool = true;
    const U4_TABLE16: bool = true;
    // One divide per step: its unit takes a ymm division every 3 cycles on Zen 4 (5 on
    // Skylake-class cores), next to the 4 * 3 multiply-adds it replaces a quarter of.
    // On AMD's cores from Zen 2 on a second (`Spec::extra_div`, chosen at run time).
    const DIV_QUOTIENTS: usize = 1;
    // The float8 / float4 steps run about 20 cycles per four vectors on Zen 4 (the byte
    // route's encode), next to which four divisions (12 cycles there, 20 on Skylake-class
    // cores) keep up, and free the FMA pipes of twelve multiply-adds and the signed-zero
    // fixes.
    const MINI_DIV_QUOTIENTS: usize = 4;
    type F = __m256;
    type I = __m256i;
    type M = __m256i;

    #[inline(always)]
    fn splat(self, x: f32) -> __m256 {
        self.0.avx._mm256_set1_ps(x)
    }
    #[inline(always)]
    fn add(self, a: __m256, b: __m256) -> __m256 {
        self.0.avx._mm256_add_ps(a, b)
    }
    #[inline(always)]
    fn sub(self, a: __m256, b: __m256) -> __m256 {
        self.0.avx._mm256_sub_ps(a, b)
    }
    #[inline(always)]
    fn mul(self, a: __m256, b: __m256) -> __m256 {
        self.0.avx._mm256_mul_ps(a, b)
    }
    #[inline(always)]
    fn div(self, a: __m256, b: __m256) -> __m256 {
        self.0.avx._mm256_div_ps(a, b)
    }
    #[inline(always)]
    fn fma(self, a: __m256, b: __m256, c: __m256) -> __m256 {
        self.0.fma._mm256_fmadd_ps(a, b, c)
    }
    #[inline(always)]
    fn fnma(self, a: __m256, b: __m256, c: __m256) -> __m256 {
        self.0.fma._mm256_fnmadd_ps(a, b, c)
    }
    #[inline(always)]
    fn min(self, a: __m256, b: __m256) -> __m256 {
        self.0.avx._mm256_min_ps(a, b)
    }
    #[inline(always)]
    fn max(self, a: __m256, b: __m256) -> __m256 {
        self.0.avx._mm256_max_ps(a, b)
    }
    #[inline(always)]
    fn eq(self, a: __m256, b: __m256) -> __m256i {
        self.0.avx._mm256_castps_si256(self.0.avx._mm256_cmp_ps::<_CMP_EQ_OQ>(a, b))
    }
    #[inline(always)]
    fn is_nan(self, a: __m256) -> __m256i {
        self.0.avx._mm256_castps_si256(self.0.avx._mm256_cmp_ps::<_CMP_UNORD_Q>(a, a))
    }
    #[inline(always)]
    fn lt(self, a: __m256, b: __m256) -> __m256i {
        self.0.avx._mm256_castps_si256(self.0.avx._mm256_cmp_ps::<_CMP_LT_OQ>(a, b))
    }
    #[inline(always)]
    fn select(self, m: __m256i, a: __m256, b: __m256) -> __m256 {
        self.0.avx._mm256_blendv_ps(b, a, self.0.avx._mm256_castsi256_ps(m))
    }
    #[inline(always)]
    fn nonzero_or(self, a: __m256, b: __m256) -> __m256 {
        // "Ordered and not equal" to zero: false for ±0 and NaN, which take `b`.
        let keep = self.0.avx._mm256_cmp_ps::<_CMP_NEQ_OQ>(a, self.0.avx._mm256_setzero_ps());
        self.0.avx._mm256_blendv_ps(b, a, keep)
    }
    #[inline(always)]
    fn or_m(self, a: __m256i, b: __m256i) -> __m256i {
        self.0.avx2._mm256_or_si256(a, b)
    }
    #[inline(always)]
    fn andnot_m(self, a: __m256i, b: __m256i) -> __m256i {
        self.0.avx2._mm256_andnot_si256(b, a)
    }
    #[inline(always)]
    fn mask_bits(self, m: __m256i) -> u32 {
        self.0.avx._mm256_movemask_ps(self.0.avx._mm256_castsi256_ps(m)) as u32
    }
    #[inline(always)]
    fn mask_from_bits(self, bits: u32) -> __m256i {
        {
            let lane_bit = self.0.avx._mm256_setr_epi32(1, 2, 4, 8, 16, 32, 64, 128);
            self.0.avx2._mm256_cmpeq_epi32(
                self.0.avx2._mm256_and_si256(self.0.avx._mm256_set1_epi32(bits as i32), lane_bit),
                lane_bit,
            )
        }
    }
    #[inline(always)]
    fn splat_i(self, x: i32) -> __m256i {
        self.0.avx._mm256_set1_epi32(x)
    }
    #[inline(always)]
    fn add_i(self, a: __m256i, b: __m256i) -> __m256i {
        self.0.avx2._mm256_add_epi32(a, b)
    }
    #[inline(always)]
    fn sub_i(self, a: __m256i, b: __m256i) -> __m256i {
        self.0.avx2._mm256_sub_epi32(a, b)
    }
    #[inline(always)]
    fn and_i(self, a: __m256i, b: __m256i) -> __m256i {
        self.0.avx2._mm256_and_si256(a, b)
    }
    #[inline(always)]
    fn or_i(self, a: __m256i, b: __m256i) -> __m256i {
        self.0.avx2._mm256_or_si256(a, b)
    }
    #[inline(always)]
    fn shl(self, a: __m256i, n: u32) -> __m256i {
        self.0.avx2._mm256_sll_epi32(a, self.0.sse2._mm_cvtsi32_si128(n as i32))
    }
    #[inline(always)]
    fn shr(self, a: __m256i, n: u32) -> __m256i {
        self.0.avx2._mm256_srl_epi32(a, self.0.sse2._mm_cvtsi32_si128(n as i32))
    }
    #[inline(always)]
    fn sra(self, a: __m256i, n: u32) -> __m256i {
        self.0.avx2._mm256_sra_epi32(a, self.0.sse2._mm_cvtsi32_si128(n as i32))
    }
    #[inline(always)]
    fn xor_i(self, a: __m256i, b: __m256i) -> __m256i {
        self.0.avx2._mm256_xor_si256(a, b)
    }
    #[inline(always)]
    fn min_i(self, a: __m256i, b: __m256i) -> __m256i {
        self.0.avx2._mm256_min_epi32(a, b)
    }
    #[inline(always)]
    fn max_i(self, a: __m256i, b: __m256i) -> __m256i {
        self.0.avx2._mm256_max_epi32(a, b)
    }
    #[inline(always)]
    fn lt_i(self, a: __m256i, b: __m256i) -> __m256i {
        self.0.avx2._mm256_cmpgt_epi32(b, a)
    }
    #[inline(always)]
    fn eq_i(self, a: __m256i, b: __m256i) -> __m256i {
        self.0.avx2._mm256_cmpeq_epi32(a, b)
    }
    #[inline(always)]
    fn select_i(self, m: __m256i, a: __m256i, b: __m256i) -> __m256i {
        self.0.avx2._mm256_blendv_epi8(b, a, m)
    }
    #[inline(always)]
    fn bits(self, a: __m256) -> __m256i {
        self.0.avx._mm256_castps_si256(a)
    }
    #[inline(always)]
    fn f32_of(self, a: __m256i) -> __m256 {
        self.0.avx._mm256_castsi256_ps(a)
    }
    #[inline(always)]
    fn cvt_rne(self, a: __m256) -> __m256i {
        // vcvtps2dq rounds by MXCSR, which every kernel runs with at its default (round to
        // nearest even; `fpenv::scoped`), as the multiplies and FMAs before it do.
        self.0.avx._mm256_cvtps_epi32(a)
    }
    #[inline(always)]
    fn cvt_rne_x4(self, a: [__m256; 4]) -> Option<[__m256i; 4]> {
        // (A loop, not a closure: closures do not inherit the target features.)
        let mut c = [self.splat_i(0); 4];
        for (ck, v) in c.iter_mut().zip(a) {
            *ck = self.cvt_rne(v);
        }
        // vcvtps2dq gives the "integer indefinite" i32::MIN for NaN and out-of-range lanes
        // (a legitimate -2^31 then only costs a redo): a min tree and one compare.
        let bad = {
            let m = self
                .0
                .avx2
                ._mm256_min_epi32(self.0.avx2._mm256_min_epi32(c[0], c[1]), self.0.avx2._mm256_min_epi32(c[2], c[3]));
            let e = self.0.avx2._mm256_cmpeq_epi32(m, self.0.avx._mm256_set1_epi32(i32::MIN));
            self.mask_bits(e) != 0
        };
        (!bad).then_some(c)
    }
    #[inline(always)]
    fn cvt_trunc(self, a: __m256) -> __m256i {
        self.0.avx._mm256_cvttps_epi32(a)
    }
    #[inline(always)]
    fn cvt_f32(self, a: __m256i) -> __m256 {
        // MXCSR rounding (round-to-nearest-even by default; see the module docs).
        self.0.avx._mm256_cvtepi32_ps(a)
    }

    #[inline(always)]
    fn load_f32(self, b: &[u8]) -> __m256 {
        let b = &b[..32];
        // SAFETY: `b` is exactly the 32 bytes read (unaligned load).
        unsafe { _mm256_loadu_ps(b.as_ptr().cast()) }
    }
    #[inline(always)]
    fn load_i32(self, b: &[u8]) -> __m256i {
        let b = &b[..32];
        // SAFETY: `b` is exactly the 32 bytes read.
        unsafe { _mm256_loadu_si256(b.as_ptr().cast()) }
    }
    #[inline(always)]
    fn load_f16(self, b: &[u8]) -> __m256 {
        let b = &b[..16];
        // SAFETY: `b` is exactly the 16 bytes read; vcvtph2ps is exact.
        unsafe { _mm256_cvtph_ps(_mm_loadu_si128(b.as_ptr().cast())) }
    }
    #[inline(always)]
    fn load_e5m2(self, b: &[u8]) -> __m256 {
        let b = &b[..8];
        // SAFETY: `b` is exactly the 8 bytes read (`movq`); vcvtph2ps is exact.
        unsafe {
            let v = _mm_loadl_epi64(b.as_ptr().cast());
            _mm256_cvtph_ps(_mm_unpacklo_epi8(_mm_setzero_si128(), v))
        }
    }
    #[inline(always)]
    fn load_u16(self, b: &[u8]) -> __m256i {
        let b = &b[..16];
        // SAFETY: `b` is exactly the 16 bytes read.
        unsafe { _mm256_cvtepu16_epi32(_mm_loadu_si128(b.as_ptr().cast())) }
    }
    #[inline(always)]
    fn load_i16(self, b: &[u8]) -> __m256i {
        let b = &b[..16];
        // SAFETY: `b` is exactly the 16 bytes read.
        unsafe { _mm256_cvtepi16_epi32(_mm_loadu_si128(b.as_ptr().cast())) }
    }
    #[inline(always)]
    fn load_i8(self, b: &[u8]) -> __m256i {
        let b = &b[..8];
        // SAFETY: `b` is exactly the 8 bytes read (movq).
        unsafe { _mm256_cvtepi8_epi32(_mm_loadl_epi64(b.as_ptr().cast())) }
    }
    #[inline(always)]
    fn load_u8(self, b: &[u8]) -> __m256i {
        let b = &b[..8];
        // SAFETY: `b` is exactly the 8 bytes read (movq).
        unsafe { _mm256_cvtepu8_epi32(_mm_loadl_epi64(b.as_ptr().cast())) }
    }
    #[inline(always)]
    fn load_u4(self, b: &[u8]) -> __m256i {
        let b = &b[..4];
        let w = u32::from_le_bytes([b[0], b[1], b[2], b[3]]);
        {
            let bytes = sse::unpack_nibbles(self.0, self.0.sse2._mm_cvtsi32_si128(w as i32));
            self.0.avx2._mm256_and_si256(self.0.avx2._mm256_cvtepu8_epi32(bytes), self.0.avx._mm256_set1_epi32(0xf))
        }
    }
    #[inline(always)]
    fn load_u4x4(self, b: &[u8]) -> [__m256i; 4] {
        // (Zero offsets fold away; nibbles widen alike signed or unsigned.)
        let zero = self.0.avx._mm256_setzero_si256();
        self.load_u4x4_sub(b, zero, zero)
    }
    #[inline(always)]
    fn load_4bit_x4<const SIGNED: bool>(self, b: &[u8]) -> [__m256i; 4] {
        // Each vector's eight nibbles are one dword: broadcast, nibble `e` shifted to the
        // top of lane `e`, then down by 28, arithmetic where signed (no byte unpacks or
        // widening shuffles, and no flip: the row tiles' zero points are sign-extended).
        let (avx, avx2) = (self.0.avx, self.0.avx2);
        let up = avx._mm256_setr_epi32(28, 24, 20, 16, 12, 8, 4, 0);
        let mut c = [avx._mm256_setzero_si256(); 4];
        for (ck, d) in c.iter_mut().zip(b[..16].chunks_exact(4)) {
            let t = avx2._mm256_sllv_epi32(avx._mm256_set1_epi32(i32::from_le_bytes([d[0], d[1], d[2], d[3]])), up);
            *ck = if SIGNED { avx2._mm256_srai_epi32::<28>(t) } else { avx2._mm256_srli_epi32::<28>(t) };
        }
        c
    }
    #[inline(always)]
    fn load_2bit_x4<const SIGNED: bool>(self, b: &[u8]) -> [__m256i; 4] {
        // Two vectors' sixteen crumbs are one dword: broadcast, crumb `e` shifted to the
        // top of lane `e % 8`, then down by 30, arithmetic where signed.
        let (avx, avx2) = (self.0.avx, self.0.avx2);
        let up =
            [avx._mm256_setr_epi32(30, 28, 26, 24, 22, 20, 18, 16), avx._mm256_setr_epi32(14, 12, 10, 8, 6, 4, 2, 0)];
        let mut c = [avx._mm256_setzero_si256(); 4];
        for (ck, d) in c.chunks_exact_mut(2).zip(b[..8].chunks_exact(4)) {
            let w = avx._mm256_set1_epi32(i32::from_le_bytes([d[0], d[1], d[2], d[3]]));
            for (c, u) in ck.iter_mut().zip(up) {
                let t = avx2._mm256_sllv_epi32(w, u);
                *c = if SIGNED { avx2._mm256_srai_epi32::<30>(t) } else { avx2._mm256_srli_epi32::<30>(t) };
            }
        }
        c
    }
    #[inline(always)]
    fn load_u4x4_sub(self, b: &[u8], flip: __m256i, zf: __m256i) -> [__m256i; 4] {
        let b = &b[..16];
        // SAFETY: `b` is exactly the 16 bytes read (unaligned load).
        let v = unsafe { _mm_loadu_si128(b.as_ptr().cast()) };
        let (sse2, ssse3, avx2) = (self.0.sse2, self.0.ssse3, self.0.avx2);
        // `flip` in both nibbles of every byte, `zf` in every byte (their lanes are equal
        // and within a byte): the flip goes onto the packed codes, the subtraction onto the
        // unpacked bytes (each within [-15, 15], so sign extension widens them exactly).
        let zero = sse2._mm_setzero_si128();
        let f = ssse3._mm_shuffle_epi8(self.0.avx._mm256_castsi256_si128(flip), zero);
        let z = ssse3._mm_shuffle_epi8(self.0.avx._mm256_castsi256_si128(zf), zero);
        let v = sse2._mm_xor_si128(v, sse2._mm_or_si128(f, sse2._mm_slli_epi16::<4>(f)));
        let m = sse2._mm_set1_epi8(0x0f);
        let lo = sse2._mm_sub_epi8(sse2._mm_and_si128(v, m), z);
        let hi = sse2._mm_sub_epi8(sse2._mm_and_si128(sse2._mm_srli_epi16::<4>(v), m), z);
        let (a, c) = (sse2._mm_unpacklo_epi8(lo, hi), sse2._mm_unpackhi_epi8(lo, hi));
        [
            avx2._mm256_cvtepi8_epi32(a),
            avx2._mm256_cvtepi8_epi32(sse2._mm_srli_si128::<8>(a)),
            avx2._mm256_cvtepi8_epi32(c),
            avx2._mm256_cvtepi8_epi32(sse2._mm_srli_si128::<8>(c)),
        ]
    }
    #[inline(always)]
    fn load_u2(self, b: &[u8]) -> __m256i {
        let b = &b[..2];
        let w = u16::from_le_bytes([b[0], b[1]]);
        {
            let v = self.0.sse2._mm_cvtsi32_si128(w as i32);
            let rep = self
                .0
                .ssse3
                ._mm_shuffle_epi8(v, self.0.sse2._mm_setr_epi8(0, 0, 0, 0, 1, 1, 1, 1, -1, -1, -1, -1, -1, -1, -1, -1));
            let shifts = self.0.avx._mm256_setr_epi32(0, 2, 4, 6, 0, 2, 4, 6);
            self.0.avx2._mm256_and_si256(
                self.0.avx2._mm256_srlv_epi32(self.0.avx2._mm256_cvtepu8_epi32(rep), shifts),
                self.0.avx._mm256_set1_epi32(3),
            )
        }
    }
    #[inline(always)]
    fn load_u6(self, b: &[u8]) -> __m256i {
        let mut t = [0u8; 16];
        t[..6].copy_from_slice(&b[..6]);
        // SAFETY: `t` is a 16-byte local array; the rest are value-only intrinsics.
        unsafe {
            let v = _mm_loadu_si128(t.as_ptr().cast());
            let lo = _mm_shuffle_epi8(v, _mm_setr_epi8(0, 1, 2, -1, 0, 1, 2, -1, 0, 1, 2, -1, 0, 1, 2, -1));
            let hi = _mm_shuffle_epi8(v, _mm_setr_epi8(3, 4, 5, -1, 3, 4, 5, -1, 3, 4, 5, -1, 3, 4, 5, -1));
            let groups = _mm256_set_m128i(hi, lo);
            let shifts = _mm256_setr_epi32(0, 6, 12, 18, 0, 6, 12, 18);
            _mm256_and_si256(_mm256_srlv_epi32(groups, shifts), _mm256_set1_epi32(0x3f))
        }
    }

    #[inline(always)]
    fn load_u6x4(self, b: &[u8]) -> [__m256i; 4] {
        let b = &b[..24];
        // SAFETY: the loads read exactly the 24 bytes of `b` (16 at 0, then 8 at 16).
        let (v0, v1) = unsafe { (_mm_loadu_si128(b.as_ptr().cast()), _mm_loadl_epi64(b[16..].as_ptr().cast())) };
        let (avx, avx2) = (self.0.avx, self.0.avx2);
        // Bytes 0..16 and 12..24 in both halves; then per vector (6 bytes, two groups of
        // four codes) each half's 3-byte group spread to its four dwords, shifted by the
        // field's offset and masked, as `load_u6`.
        let (a, c) = (
            avx2._mm256_broadcastsi128_si256(v0),
            avx2._mm256_broadcastsi128_si256(self.0.ssse3._mm_alignr_epi8::<12>(v1, v0)),
        );
        let lo = avx._mm256_setr_epi8(
            0, 1, 2, -1, 0, 1, 2, -1, 0, 1, 2, -1, 0, 1, 2, -1, 3, 4, 5, -1, 3, 4, 5, -1, 3, 4, 5, -1, 3, 4, 5, -1,
        );
        let hi = avx._mm256_setr_epi8(
            6, 7, 8, -1, 6, 7, 8, -1, 6, 7, 8, -1, 6, 7, 8, -1, 9, 10, 11, -1, 9, 10, 11, -1, 9, 10, 11, -1, 9, 10, 11,
            -1,
        );
        // (No closure for the four: closures do not inherit the ISA's features.)
        [
            self.six_fields(avx2._mm256_shuffle_epi8(a, lo)),
            self.six_fields(avx2._mm256_shuffle_epi8(a, hi)),
            self.six_fields(avx2._mm256_shuffle_epi8(c, lo)),
            self.six_fields(avx2._mm256_shuffle_epi8(c, hi)),
        ]
    }

    #[inline(always)]
    fn store_f32(self, a: __m256, out: &mut [u8]) {
        let out = &mut out[..32];
        // SAFETY: `out` is exactly the 32 bytes written.
        unsafe { _mm256_storeu_ps(out.as_mut_ptr().cast(), a) }
    }
    #[inline(always)]
    fn lut16(self, t: &[u8; 64], c: __m256i) -> __m256 {
        // `vpermps` indexes 8 entries by the low 3 bits; bit 3, moved to the sign, picks
        // the half.
        let lo = self.0.avx2._mm256_permutevar8x32_ps(self.load_f32(&t[..32]), c);
        let hi = self.0.avx2._mm256_permutevar8x32_ps(self.load_f32(&t[32..]), c);
        self.0.avx._mm256_blendv_ps(lo, hi, self.0.avx._mm256_castsi256_ps(self.0.avx2._mm256_slli_epi32::<28>(c)))
    }
    #[inline(always)]
    fn e2m1_x4(self, b: &[u8]) -> [__m256; 4] {
        let (avx, avx2) = (self.0.avx, self.0.avx2);
        // Bytes 0, 1, 4, 5, 8, 9, 12, 13 in the low half and the others in the high half
        // (byte j holds codes 2j and 2j + 1): the low half looks up codes 0-3, 8-11, 16-19,
        // 24-27 and the high half the rest, the order in which the unpacks with zero words
        // below hand codes 8k..8k + 8 to vector k. The entries are each value's bytes 2
        // and 3 (bytes 0 and 1 are zero), the upper 16 bits of each lane.
        let order = avx._mm256_setr_epi8(
            0, 1, 4, 5, 8, 9, 12, 13, -1, -1, -1, -1, -1, -1, -1, -1, 2, 3, 6, 7, 10, 11, 14, 15, -1, -1, -1, -1, -1,
            -1, -1, -1,
        );
        let (w0, w1) = self.lookup16_words(b, order, self.load_i32(&E2M1_B2), self.load_i32(&E2M1_B3));
        let z = avx._mm256_setzero_si256();
        [
            avx._mm256_castsi256_ps(avx2._mm256_unpacklo_epi16(z, w0)),
            avx._mm256_castsi256_ps(avx2._mm256_unpackhi_epi16(z, w0)),
            avx._mm256_castsi256_ps(avx2._mm256_unpacklo_epi16(z, w1)),
            avx._mm256_castsi256_ps(avx2._mm256_unpackhi_epi16(z, w1)),
        ]
    }
    const F6_X4: bool = true;
    #[inline(always)]
    fn f6_x4(self, b: &[u8], f: &MiniFormat) -> [__m256; 4] {
        // e2m3 has three mantissa bits, e3m2 two (the only float6 formats).
        let t = &F6_TABLES[if f.man == 3 { 0 } else { 1 }];
        let b = &b[..24];
        // SAFETY: the loads read exactly the 24 bytes of `b` (16 at 0, 16 at 8).
        let (v0, v1) = unsafe { (_mm_loadu_si128(b.as_ptr().cast()), _mm_loadu_si128(b[8..].as_ptr().cast())) };
        let (avx, avx2) = (self.0.avx, self.0.avx2);
        // Codes 0-15 (bytes 0..12) in the low half, 16-31 (bytes 12..24, at 4 in the
        // high half's bytes 8..24) in the high half.
        let v = avx2._mm256_inserti128_si256::<1>(avx._mm256_castsi128_si256(v0), v1);
        // Each 3-byte group of four codes (LSB first: `w = b0 | b1 << 8 | b2 << 16`) as the
        // words `b0 | b1 << 8` (codes 0 and 1 at bits 0 and 6) and `b1 | b2 << 8` (codes 2
        // and 3 at bits 4 and 10) of a dword. Codes 1 and 3 move to bits 0 and 24 of the
        // dword by high multiplies (`(a (2^k + 1)) >> 16` is `a >> (16 - k)` here: the
        // masked field's low bits are zero, so the `+ a` carries nothing; multipliers that
        // are not powers of two stay multiplies, where LLVM would lower `2^k` to per-word
        // shifts, which AVX2 lacks), codes 0 and 2 to bits 8 and 16 by a multiply-add: the
        // dword's bytes are codes 1, 0, 2, 3.
        let x = avx2._mm256_shuffle_epi8(
            v,
            avx._mm256_setr_epi8(
                0, 1, 1, 2, 3, 4, 4, 5, 6, 7, 7, 8, 9, 10, 10, 11, 4, 5, 5, 6, 7, 8, 8, 9, 10, 11, 11, 12, 13, 14, 14,
                15,
            ),
        );
        let odd = avx2._mm256_mulhi_epu16(
            avx2._mm256_and_si256(x, avx._mm256_set1_epi32(0xfc00_0fc0_u32 as i32)),
            avx._mm256_set1_epi32(0x4001_0401),
        );
        let even = avx2._mm256_madd_epi16(
            avx2._mm256_and_si256(x, avx._mm256_set1_epi32(0x03f0_003f)),
            avx._mm256_set1_epi32(0x1000_0100),
        );
        // The byte pairs back in order, then the dwords (four codes each) so that the low
        // half holds codes 0-3, 8-11, 16-19, 24-27 and the high half the rest: the order
        // in which the unpacks below hand codes 8k..8k + 8 to vector k.
        let c = avx2._mm256_shuffle_epi8(
            avx2._mm256_or_si256(odd, even),
            avx._mm256_setr_epi8(
                1, 0, 2, 3, 5, 4, 6, 7, 9, 8, 10, 11, 13, 12, 14, 15, 1, 0, 2, 3, 5, 4, 6, 7, 9, 8, 10, 11, 13, 12, 14,
                15,
            ),
        );
        let c = avx2._mm256_permutevar8x32_epi32(c, avx._mm256_setr_epi32(0, 2, 4, 6, 1, 3, 5, 7));
        // The magnitude's bits 0-3 index the tables, its bit 4 (moved to bit 7) picks the
        // table, and the sign (bit 5, moved to bit 7) goes onto byte 3. (Word shifts: only
        // bit 7 of each byte is used, which comes from the same byte.)
        let pick = avx2._mm256_slli_epi16::<3>(c);
        let (t0, t1, t2, t3) = (self.load_i32(&t[0]), self.load_i32(&t[1]), self.load_i32(&t[2]), self.load_i32(&t[3]));
        let b2 = avx2._mm256_blendv_epi8(avx2._mm256_shuffle_epi8(t0, c), avx2._mm256_shuffle_epi8(t1, c), pick);
        let b3 = avx2._mm256_blendv_epi8(avx2._mm256_shuffle_epi8(t2, c), avx2._mm256_shuffle_epi8(t3, c), pick);
        let sign = avx2._mm256_and_si256(avx2._mm256_slli_epi16::<2>(c), avx._mm256_set1_epi8(i8::MIN));
        let b3 = avx2._mm256_or_si256(b3, sign);
        let (w0, w1) = (avx2._mm256_unpacklo_epi8(b2, b3), avx2._mm256_unpackhi_epi8(b2, b3));
        let z = avx._mm256_setzero_si256();
        [
            avx._mm256_castsi256_ps(avx2._mm256_unpacklo_epi16(z, w0)),
            avx._mm256_castsi256_ps(avx2._mm256_unpackhi_epi16(z, w0)),
            avx._mm256_castsi256_ps(avx2._mm256_unpacklo_epi16(z, w1)),
            avx._mm256_castsi256_ps(avx2._mm256_unpackhi_epi16(z, w1)),
        ]
    }
    #[inline(always)]
    fn lut16_u16_x4(self, t: &[u8; 32], b: &[u8], y: &mut [u8]) {
        let y = &mut y[..64];
        // SAFETY: `t` is the 32 bytes read (unaligned load).
        let tv = unsafe { _mm256_loadu_si256(t.as_ptr().cast()) };
        let (avx, avx2) = (self.0.avx, self.0.avx2);
        // The entries' low bytes, then their high bytes, each in both halves (the shuffles
        // index within a half).
        let split = avx._mm256_setr_epi8(
            0, 2, 4, 6, 8, 10, 12, 14, 1, 3, 5, 7, 9, 11, 13, 15, 0, 2, 4, 6, 8, 10, 12, 14, 1, 3, 5, 7, 9, 11, 13, 15,
        );
        let tv = avx2._mm256_shuffle_epi8(tv, split);
        let (tl, th) =
            (avx2._mm256_permute4x64_epi64::<0b1000_1000>(tv), avx2._mm256_permute4x64_epi64::<0b1101_1101>(tv));
        // Bytes 0-3 and 8-11 in the low half, 4-7 and 12-15 in the high half: the low half
        // looks up codes 0-7 and 16-23, the high half 8-15 and 24-31, so that the two word
        // vectors are elements 0-15, then 16-31.
        let order = avx._mm256_setr_epi8(
            0, 1, 2, 3, 8, 9, 10, 11, -1, -1, -1, -1, -1, -1, -1, -1, 4, 5, 6, 7, 12, 13, 14, 15, -1, -1, -1, -1, -1,
            -1, -1, -1,
        );
        let (w0, w1) = self.lookup16_words(b, order, tl, th);
        // SAFETY: `y` is exactly the 64 bytes written (two unaligned 32-byte stores).
        unsafe {
            _mm256_storeu_si256(y.as_mut_ptr().cast(), w0);
            _mm256_storeu_si256(y[32..].as_mut_ptr().cast(), w1);
        }
    }
    #[inline(always)]
    fn prefetch(self, b: &[u8]) {
        if let Some(p) = b.first() {
            // SAFETY: a prefetch never faults; `p` is a valid address besides.
            unsafe { _mm_prefetch::<_MM_HINT_T0>(core::ptr::from_ref(p).cast()) }
        }
    }
    #[inline(always)]
    fn hmin(self, a: __m256) -> f32 {
        let v = self.0.sse._mm_min_ps(self.0.avx._mm256_castps256_ps128(a), self.0.avx._mm256_extractf128_ps::<1>(a));
        sse::hmin4(self.0, v)
    }
    #[inline(always)]
    fn hmax(self, a: __m256) -> f32 {
        let v = self.0.sse._mm_max_ps(self.0.avx._mm256_castps256_ps128(a), self.0.avx._mm256_extractf128_ps::<1>(a));
        sse::hmax4(self.0, v)
    }
    #[inline(always)]
    fn hmin_each(self, v: &[__m256]) -> __m256 {
        self.reduce_each(v, Reduce::Min)
    }
    #[inline(always)]
    fn hmax_each(self, v: &[__m256]) -> __m256 {
        self.reduce_each(v, Reduce::Max)
    }
    #[inline(always)]
    fn hmax_i_each(self, v: &[__m256i]) -> __m256i {
        let avx = self.0.avx;
        let mut f = [avx._mm256_setzero_ps(); 8];
        for (fk, &vk) in f.iter_mut().zip(v) {
            *fk = avx._mm256_castsi256_ps(vk);
        }
        avx._mm256_castps_si256(self.reduce_each(&f, Reduce::MaxI))
    }
    #[inline(always)]
    fn hmax_i(self, a: __m256i) -> i32 {
        let hi = self.0.avx2._mm256_extracti128_si256::<1>(a);
        sse::hmax4_i(self.0, self.0.sse4_1._mm_max_epi32(self.0.avx._mm256_castsi256_si128(a), hi))
    }
    #[inline(always)]
    fn store_i32(self, a: __m256i, out: &mut [u8]) {
        let out = &mut out[..32];
        // SAFETY: `out` is exactly the 32 bytes written.
        unsafe { _mm256_storeu_si256(out.as_mut_ptr().cast(), a) }
    }
    #[inline(always)]
    fn store_u16(self, a: __m256i, out: &mut [u8]) {
        let w = {
            // Keep the low 16 bits (two's complement codes of i16), so the unsigned
            // saturation of packus never triggers; then undo its 128-bit interleave.
            let m = self.0.avx2._mm256_and_si256(a, self.0.avx._mm256_set1_epi32(0xffff));
            let p = self.0.avx2._mm256_packus_epi32(m, m);
            self.0.avx._mm256_castsi256_si128(self.0.avx2._mm256_permute4x64_epi64::<0b1000>(p))
        };
        let out = &mut out[..16];
        // SAFETY: `out` is exactly the 16 bytes written.
        unsafe { _mm_storeu_si128(out.as_mut_ptr().cast(), w) }
    }
    #[inline(always)]
    fn store_u8(self, a: __m256i, out: &mut [u8]) {
        let out = &mut out[..8];
        // SAFETY: `out` is exactly the 8 bytes written (movq).
        unsafe { _mm_storel_epi64(out.as_mut_ptr().cast(), self.bytes(a)) }
    }
    #[inline(always)]
    fn store_u8x4_exact(self, c: [__m256i; 4], out: &mut [u8]) {
        let v = {
            let a = self.0.avx2._mm256_packs_epi32(c[0], c[1]);
            let b = self.0.avx2._mm256_packs_epi32(c[2], c[3]);
            let p = self.0.avx2._mm256_packus_epi16(a, b);
            self.pack_order(p)
        };
        let out = &mut out[..32];
        // SAFETY: `out` is exactly the 32 bytes written.
        unsafe { _mm256_storeu_si256(out.as_mut_ptr().cast(), v) }
    }
    #[inline(always)]
    fn store_16x4(self, c: [__m256i; 4], signed: bool, out: &mut [u8]) {
        // (No closure for the pack: it would not inherit the ISA's features.)
        let (lo, hi) = if signed {
            (self.0.avx2._mm256_packs_epi32(c[0], c[1]), self.0.avx2._mm256_packs_epi32(c[2], c[3]))
        } else {
            (self.0.avx2._mm256_packus_epi32(c[0], c[1]), self.0.avx2._mm256_packus_epi32(c[2], c[3]))
        };
        self.store_16_packed(lo, hi, out)
    }
    #[inline(always)]
    fn store_u8x4(self, c: [__m256i; 4], out: &mut [u8]) {
        let v = {
            let m = self.0.avx._mm256_set1_epi32(0xff);
            let a = self
                .0
                .avx2
                ._mm256_packs_epi32(self.0.avx2._mm256_and_si256(c[0], m), self.0.avx2._mm256_and_si256(c[1], m));
            let b = self
                .0
                .avx2
                ._mm256_packs_epi32(self.0.avx2._mm256_and_si256(c[2], m), self.0.avx2._mm256_and_si256(c[3], m));
            let p = self.0.avx2._mm256_packus_epi16(a, b);
            self.pack_order(p)
        };
        let out = &mut out[..32];
        // SAFETY: `out` is exactly the 32 bytes written.
        unsafe { _mm256_storeu_si256(out.as_mut_ptr().cast(), v) }
    }
    #[inline(always)]
    fn zero_points_x4(self, z: [__m256i; 4]) -> [__m256i; 4] {
        // Packed as the codes' first pack stage (i32 -> i16) packs them; the last two
        // vectors are unused.
        let (avx, avx2) = (self.0.avx, self.0.avx2);
        let zero = avx._mm256_setzero_si256();
        [avx2._mm256_packs_epi32(z[0], z[1]), avx2._mm256_packs_epi32(z[2], z[3]), zero, zero]
    }
    #[inline(always)]
    fn store_sat8x4(self, c: [__m256i; 4], z: [__m256i; 4], signed: bool, out: &mut [u8]) {
        let avx2 = self.0.avx2;
        self.store_sat8_packed(avx2._mm256_packs_epi32(c[0], c[1]), avx2._mm256_packs_epi32(c[2], c[3]), z, signed, out)
    }
    #[inline(always)]
    fn cvt_store_sat16x4(self, q: [__m256; 4], signed: bool, out: &mut [u8]) -> bool {
        let (avx, avx2) = (self.0.avx, self.0.avx2);
        // The signed saturating packs are the clamp to i16.
        let Some((c01, c23)) = self.cvt_packs_checked(q) else { return false };
        // u16: clamp(c + 32768, 0, 65535) is the i16 clamp of c with the top bit flipped.
        let flip = avx._mm256_set1_epi16(if signed { 0 } else { i16::MIN });
        self.store_16_packed(avx2._mm256_xor_si256(c01, flip), avx2._mm256_xor_si256(c23, flip), out);
        true
    }
    #[inline(always)]
    fn cvt_store_sat_x4(
        self,
        q: [__m256; 4],
        z: [__m256i; 4],
        signed: bool,
        bits: usize,
        mid: bool,
        out: &mut [u8],
    ) -> bool {
        let Some((c01, c23)) = self.cvt_packs_checked(q) else { return false };
        match bits {
            8 if mid => self.store_sat8_mid(c01, c23, signed, out),
            8 => self.store_sat8_packed(c01, c23, z, signed, out),
            4 => self.store_sat_sub_packed(c01, c23, z, signed, 4, out),
            _ => self.store_sat_sub_packed(c01, c23, z, signed, 2, out),
        }
        true
    }
    #[inline(always)]
    fn sat_mask_x4(self, c: [__m256i; 4], z: [__m256i; 4], qmin: i32, qmax: i32) -> u64 {
        let (avx, avx2) = (self.0.avx, self.0.avx2);
        // The store's own i16 sums (the optimiser shares them with it): beyond i16 a lane
        // saturates, and stays beyond every 8-bit range after adding a zero point.
        let (c01, c23) = (avx2._mm256_packs_epi32(c[0], c[1]), avx2._mm256_packs_epi32(c[2], c[3]));
        let (a, b) = self.add_zero_points16(c01, c23, z);
        let (lo, hi) = (avx._mm256_set1_epi16(qmin as i16), avx._mm256_set1_epi16(qmax as i16));
        // In range where the clamp keeps the sum: all-ones i16 lanes, packed to bytes in
        // the codes' order.
        let ma = avx2._mm256_cmpeq_epi16(avx2._mm256_max_epi16(avx2._mm256_min_epi16(a, hi), lo), a);
        let mb = avx2._mm256_cmpeq_epi16(avx2._mm256_max_epi16(avx2._mm256_min_epi16(b, hi), lo), b);
        let m = self.pack_order(avx2._mm256_packs_epi16(ma, mb));
        u64::from(avx2._mm256_movemask_epi8(m) as u32)
    }
    #[inline(always)]
    fn store_sat4x4(self, c: [__m256i; 4], z: [__m256i; 4], signed: bool, out: &mut [u8]) {
        let (avx2, bits) = (self.0.avx2, 4);
        let (c01, c23) = (avx2._mm256_packs_epi32(c[0], c[1]), avx2._mm256_packs_epi32(c[2], c[3]));
        self.store_sat_sub_packed(c01, c23, z, signed, bits, out)
    }
    #[inline(always)]
    fn store_sat2x4(self, c: [__m256i; 4], z: [__m256i; 4], signed: bool, out: &mut [u8]) {
        let (avx2, bits) = (self.0.avx2, 2);
        let (c01, c23) = (avx2._mm256_packs_epi32(c[0], c[1]), avx2._mm256_packs_epi32(c[2], c[3]));
        self.store_sat_sub_packed(c01, c23, z, signed, bits, out)
    }
    #[inline(always)]
    fn store_mini_x4(self, q: [__m256; 4], f: &MiniFormat, out: &mut [u8]) {
        let (avx, avx2) = (self.0.avx, self.0.avx2);
        // (Formats without a route, none of the callers' today, take the per-vector codec.)
        let Some(r) = f.byte_route() else { return store_minifloat_x4(self, q, f, out) };
        // Magnitude bytes (NaN's code saturates to 255, then `cap`), and the sign bytes of
        // the same lanes: signed saturating packs of the f32 patterns keep their sign. By
        // pairs, so that few vectors are live at once.
        let (lo, ulo) = self.byte_route_pair(q[0], q[1], &r);
        let (hi, uhi) = self.byte_route_pair(q[2], q[3], &r);
        let mag = avx2._mm256_min_epu8(avx2._mm256_packus_epi16(lo, hi), avx._mm256_set1_epi8(r.cap as i8));
        let u = avx2._mm256_packs_epi16(ulo, uhi);
        // A sign bit below bit 7 (float4) needs the byte's sign spread first: the packs
        // keep a small positive pattern's low bits.
        let u = if r.sign_bit == 0x80 { u } else { avx2._mm256_cmpgt_epi8(avx._mm256_setzero_si256(), u) };
        let sign = avx2._mm256_and_si256(u, avx._mm256_set1_epi8(r.sign_bit as i8));
        let sign = if r.unsigned_zero {
            // fnuz: the sign only on magnitudes 1..=0x7f, whose `m + 0x7f` alone sets bit 7
            // without m's own bit 7 (0 and the NaN 0x80 get none).
            let m1 = avx2._mm256_add_epi8(mag, avx._mm256_set1_epi8(0x7f));
            avx2._mm256_and_si256(sign, avx2._mm256_xor_si256(m1, mag))
        } else {
            sign
        };
        let v = avx2._mm256_xor_si256(mag, sign);
        if r.sign_bit == 8 {
            return self.store_nibbles(v, out);
        }
        // Two rounds of packs leave dword j of 128-bit half h holding elements
        // 4 * (2 * j + h) to 4 * (2 * j + h) + 3: one dword permute restores the order.
        let v = self.pack_order(v);
        if r.sign_bit == 0x20 {
            return self.store_sixes(v, out);
        }
        let out = &mut out[..32];
        // SAFETY: `out` is exactly the 32 bytes written.
        unsafe { _mm256_storeu_si256(out.as_mut_ptr().cast(), v) }
    }
    #[inline(always)]
    fn store_u4x4(self, c: [__m256i; 4], out: &mut [u8]) {
        // Signed saturating packs keep every lane of [-128, 127] as its two's complement byte.
        let avx2 = self.0.avx2;
        let p = avx2._mm256_packs_epi16(avx2._mm256_packs_epi32(c[0], c[1]), avx2._mm256_packs_epi32(c[2], c[3]));
        self.store_nibbles(p, out)
    }
    #[inline(always)]
    fn store_u2x4(self, c: [__m256i; 4], out: &mut [u8]) {
        // As `store_u4x4`: signed saturating packs (two's complement bytes), then the crumbs.
        let avx2 = self.0.avx2;
        let p = avx2._mm256_packs_epi16(avx2._mm256_packs_epi32(c[0], c[1]), avx2._mm256_packs_epi32(c[2], c[3]));
        self.store_crumbs(p, out)
    }
    #[inline(always)]
    fn store_u4(self, a: __m256i, out: &mut [u8]) {
        let v = self.0.sse2._mm_cvtsi128_si32(sse::pack_nibbles(self.0, self.bytes(a)));
        out[..4].copy_from_slice(&v.to_le_bytes());
    }
    #[inline(always)]
    fn store_u2(self, a: __m256i, out: &mut [u8]) {
        let v = self.0.sse2._mm_cvtsi128_si32(sse::pack_crumbs(self.0, self.bytes(a)));
        out[..2].copy_from_slice(&v.to_le_bytes()[..2]);
    }
    #[inline(always)]
    fn store_u6(self, a: __m256i, out: &mut [u8]) {
        let packed = sse::pack_sixes(self.0, self.bytes(a));
        // SAFETY: SSE2's value-only `movq` (pulp has no token method for this x86-64-only
        // intrinsic); the V3F16c token proves SSE2 (module docs).
        let v = unsafe { _mm_cvtsi128_si64(packed) };
        out[..6].copy_from_slice(&v.to_le_bytes()[..6]);
    }

    #[inline(always)]
    fn f32_to_f16_bits(self, a: __m256) -> __m256i {
        // SAFETY: F16C's value-only `vcvtps2ph` (pulp has no F16C token methods); the
        // V3F16c token proves F16C (module docs).
        let h = unsafe { _mm256_cvtps_ph::<_MM_FROUND_TO_NEAREST_INT>(a) };
        self.0.avx2._mm256_cvtepu16_epi32(h)
    }
    #[inline(always)]
    fn store_f16(self, a: __m256, out: &mut [u8]) {
        // SAFETY: F16C's value-only `vcvtps2ph` (pulp has no F16C token methods); the
        // V3F16c token proves F16C (module docs).
        let h = unsafe { _mm256_cvtps_ph::<_MM_FROUND_TO_NEAREST_INT>(a) };
        // The conversion into a register, then a plain store. Left alone, the compiler
        // folds the two into the store form of `vcvtps2ph`, which Zen 4 issues one per two
        // cycles against 0.8 for the register form (1.1 with its store). The empty `asm!`
        // hides where `h` comes from, so the fold cannot happen.
        let h = opaque_xmm(h);
        let out = &mut out[..16];
        // SAFETY: `out` is exactly the 16 bytes written.
        unsafe { _mm_storeu_si128(out.as_mut_ptr().cast(), h) }
    }
    #[inline(always)]
    fn round_f16(self, a: __m256) -> __m256 {
        // SAFETY: F16C's value-only `vcvtps2ph` (RNE immediate) and `vcvtph2ps` (exact);
        // the V3F16c token proves F16C (module docs).
        unsafe { _mm256_cvtph_ps(_mm256_cvtps_ph::<_MM_FROUND_TO_NEAREST_INT>(a)) }
    }
}

#[cfg(test)]
mod tests {
    use super::divider_keeps_up_on;

    #[test]
    fn divider_choice_by_vendor_and_family() {
        let amd = b"AuthenticAMD";
        // Zen 2 (EPYC 7002, model 31h), Zen 3 (EPYC 7003), Zen 4 (EPYC 9004), Zen 5
        // (family 1Ah).
        for sig in [0x0083_0f10, 0x00a0_0f11, 0x00a1_0f11, 0x00b0_0f20] {
            assert!(divider_keeps_up_on(amd, sig), "{sig:#x}");
        }
        // Zen (EPYC 7001, model 01h) and Zen+ (model 08h), family 17h below model 30h; Hygon
        // (family 18h, built on Zen); AMD family 15h (Bulldozer class) and 10h.
        for sig in [0x0080_0f12, 0x0080_0f82, 0x0060_0f12, 0x0010_0f42] {
            assert!(!divider_keeps_up_on(amd, sig), "{sig:#x}");
        }
        assert!(!divider_keeps_up_on(b"HygonGenuine", 0x0090_0f01));
        // Intel Skylake-SP and Haswell (family 6), and a family of 17h or more from a
        // vendor other than AMD.
        for sig in [0x0005_0654, 0x0003_06c3, 0x0080_0f00, 0x00a0_0f11] {
            assert!(!divider_keeps_up_on(b"GenuineIntel", sig), "{sig:#x}");
        }
    }
}
