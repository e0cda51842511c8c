//! The per-ISA primitive trait (the format codecs built on it are in `codec`).
//!
//! Every kernel in this crate is generic over [`Simd`]; an ISA module (`isa::*`) only
//! supplies these primitives for its vector width. Loads and stores take byte slices of at
//! least the stated length and never touch memory beyond it (the caller guarantees the
//! length; implementations check it with a debug assertion and rely on slice bounds for
//! the scalar fallback). Rounding conversions are explicit: [`Simd::cvt_rne`] rounds half
//! to even whatever the ISA's default mode is.

use crate::codec::{f16_bits_to_f32, f32_to_f16_bits_generic, round_f16_generic, store_minifloat_x4, MiniFormat};
use crate::isa::IsaKernel;

/// Per-ISA primitives over `LANES` f32 / i32 lanes.
pub(crate) trait Simd: Copy + Send + Sync + 'static {
    /// Lanes per vector (a multiple of 4, so packed 2-, 4- and 6-bit groups never straddle
    /// two vectors).
    const LANES: usize;
    /// Whether [`Simd::fma`] is a hardware fused multiply-add. Without one (the portable
    /// path) the exact division uses a true division instead of the FMA correction.
    const HAS_FMA: bool = true;
    /// Whether the kernels instantiate their compile-time specialisations for this ISA
    /// (the portable fallback is not worth the compile time).
    const SPECIALIZE: bool = true;
    /// Whether [`Simd::lut16`] is a register lookup (otherwise it goes lane by lane, and
    /// the kernels keep their arithmetic decoders).
    const LUT16: bool = false;
    /// Whether 16-bit integer quantize takes the checked-conversion fast path (unclamped
    /// quotients, [`Simd::cvt_rne_x4`], an i32 clamp) rather than clamping every quotient
    /// twice in f32. Per-ISA, as measured on a Zen 4 host at 1 Mi: f32->u16 ran 14 % faster
    /// with it on AVX2; on AVX-512 it ran 6 % slower while [`Simd::cvt_store_sat16x4`]
    /// clamped each vector in i32 before narrowing, and 1.26-1.37x faster (f32->i16 / u16
    /// per-tensor, i16 per-axis-last64) once the saturating packs became the clamp there.
    const CHECKED_CVT16: bool = false;
    /// Whether [`Simd::cvt_store_sat_x4`] checks more cheaply than [`Simd::cvt_rne_x4`]
    /// followed by [`Simd::store_sat8x4`] / [`Simd::store_sat4x4`] (AVX2: after the first
    /// packs), so that the 8- and 4-bit fast path calls it. A constant, so other ISAs do not
    /// even generate that call (an unoptimised build gives every inlined call its own stack
    /// slots).
    const PACK_CHECK: bool = false;
    /// Whether [`Simd::store_mini_x4`] encodes more cheaply than
    /// [`crate::codec::encode_minifloat`] a vector at a time (AVX2 and AVX-512: the byte
    /// route of [`crate::codec::ByteRoute`]), so that the float8 / float4 steps call it (for the
    /// formats of [`MiniFormat::has_x4_route`]). A constant, as `PACK_CHECK`.
    const MINI_X4: bool = false;
    /// Of the four quotients of each step of the integer fast paths (the steps of
    /// `quantize::sat8_quotients`; not the per-row quantizer's loop), how many come from
    /// the divide instruction rather than Markstein's three multiply-adds (both give the
    /// correctly rounded `x / s`), in f32 precision (a 16-bit precision needs neither;
    /// `quantize` module docs). The divider runs beside the FMA pipes, so handing it one
    /// vector of four relieves the pipes that bound those loops. Per-ISA, as measured
    /// (AVX2: 1; see docs/benchmark-history.md, stop 34). Where it is above 0, a job may
    /// take one more (`quantize::Spec::extra_div`: AVX2 on AMD's cores from Zen 2 on, chosen at run time).
    const DIV_QUOTIENTS: usize = 0;
    /// [`Simd::DIV_QUOTIENTS`] for the float8 / float4 steps (`MiniX4Loop`, and the
    /// NVFP4 quantizer's pairs of blocks; MX scales are powers of two, multiplied by their
    /// exact reciprocals): their encode is longer than the integer conversion, so the
    /// divider keeps up with more of the quotients (AVX2 and AVX-512: all four; see
    /// docs/benchmark-history.md, stop 39). At most 4.
    const MINI_DIV_QUOTIENTS: usize = 0;
    /// `LANES` f32.
    type F: Copy;
    /// `LANES` i32.
    type I: Copy;
    /// A lane mask.
    type M: Copy;

    /// Runs `k` on this ISA in a function of its own, never inlined into the caller: each
    /// kernel variant gets its own stack frame and its own unit of code generation, so
    /// no function holds every variant at once (an unoptimised build keeps every local of
    /// every inlined call in one frame).
    fn enter<K: IsaKernel<Self>>(self, k: K) -> K::Output;

    fn splat(self, v: f32) -> Self::F;
    fn add(self, a: Self::F, b: Self::F) -> Self::F;
    fn sub(self, a: Self::F, b: Self::F) -> Self::F;
    fn mul(self, a: Self::F, b: Self::F) -> Self::F;
    fn div(self, a: Self::F, b: Self::F) -> Self::F;
    /// `a * b + c` with a single rounding.
    fn fma(self, a: Self::F, b: Self::F, c: Self::F) -> Self::F;
    /// `c - a * b` with a single rounding.
    fn fnma(self, a: Self::F, b: Self::F, c: Self::F) -> Self::F;
    /// Minimum of non-NaN lanes; **a NaN in `a` gives `b`** (x86 `minps` semantics, which
    /// the kernels use to send NaN to the clamp bound), and a NaN in `b` a NaN (the byte
    /// route's clamp, `codec::ByteRoute`, keeps NaN that way).
    fn min(self, a: Self::F, b: Self::F) -> Self::F;
    /// Maximum of non-NaN lanes; **a NaN in `a` gives `b`**.
    fn max(self, a: Self::F, b: Self::F) -> Self::F;
    /// `sign(a) * min(|a|, b)` for a positive `b`: a clamp to `[-b, b]` (one instruction
    /// with AVX-512's `vrangeps`). **A NaN lane gives an unspecified value** (NaN, or `±b`
    /// depending on the ISA and even the vendor): callers only clamp values whose NaN
    /// propagates through another operand anyway.
    #[inline(always)]
    fn clamp_abs(self, a: Self::F, b: Self::F) -> Self::F {
        self.min(self.max(a, self.sub(self.splat(0.0), b)), b)
    }
    fn eq(self, a: Self::F, b: Self::F) -> Self::M;
    fn is_nan(self, a: Self::F) -> Self::M;
    /// `a < b` per lane, ordered: false where either is NaN.
    fn lt(self, a: Self::F, b: Self::F) -> Self::M;
    /// `m ? a : b` per lane.
    fn select(self, m: Self::M, a: Self::F, b: Self::F) -> Self::F;
    fn or_m(self, a: Self::M, b: Self::M) -> Self::M;
    /// `a` and not `b` per lane.
    fn andnot_m(self, a: Self::M, b: Self::M) -> Self::M;
    /// `a`, except `b` in the lanes where `a` is ±0 or NaN (one `vfixupimmps` with
    /// AVX-512).
    #[inline(always)]
    fn nonzero_or(self, a: Self::F, b: Self::F) -> Self::F {
        self.select(self.or_m(self.eq(a, self.splat(0.0)), self.is_nan(a)), b, a)
    }
    /// Lane `l`'s mask bit as bit `l` of the result (the training-mode masks).
    fn mask_bits(self, m: Self::M) -> u32;
    /// The mask whose lane `l` is set when bit `l` of `bits` is.
    fn mask_from_bits(self, bits: u32) -> Self::M;

    fn splat_i(self, v: i32) -> Self::I;
    fn add_i(self, a: Self::I, b: Self::I) -> Self::I;
    fn sub_i(self, a: Self::I, b: Self::I) -> Self::I;
    fn and_i(self, a: Self::I, b: Self::I) -> Self::I;
    fn or_i(self, a: Self::I, b: Self::I) -> Self::I;
    /// Logical shift left by `n` (< 32) bits.
    fn shl(self, a: Self::I, n: u32) -> Self::I;
    /// Logical shift right by `n` (< 32) bits.
    fn shr(self, a: Self::I, n: u32) -> Self::I;
    /// Arithmetic shift right by `n` (< 32) bits.
    fn sra(self, a: Self::I, n: u32) -> Self::I;
    fn xor_i(self, a: Self::I, b: Self::I) -> Self::I;
    /// Signed minimum.
    #[inline(always)]
    fn min_i(self, a: Self::I, b: Self::I) -> Self::I {
        self.select_i(self.lt_i(a, b), a, b)
    }
    /// Signed maximum.
    #[inline(always)]
    fn max_i(self, a: Self::I, b: Self::I) -> Self::I {
        self.select_i(self.lt_i(a, b), b, a)
    }
    /// `a ^ (b & c)` (one `vpternlogd` with AVX-512).
    #[inline(always)]
    fn xor_and(self, a: Self::I, b: Self::I, c: Self::I) -> Self::I {
        self.xor_i(a, self.and_i(b, c))
    }
    /// Signed `a < b`.
    fn lt_i(self, a: Self::I, b: Self::I) -> Self::M;
    fn eq_i(self, a: Self::I, b: Self::I) -> Self::M;
    fn select_i(self, m: Self::M, a: Self::I, b: Self::I) -> Self::I;
    /// Reinterprets f32 bits as i32.
    fn bits(self, a: Self::F) -> Self::I;
    /// Reinterprets i32 bits as f32.
    fn f32_of(self, a: Self::I) -> Self::F;
    /// f32 -> i32 rounding half to even. Lanes must be within i32 range (callers clamp).
    fn cvt_rne(self, a: Self::F) -> Self::I;
    /// f32 -> i32 rounding toward zero (the rounding mode plays no part). Lanes must be
    /// within i32 range (callers clamp).
    fn cvt_trunc(self, a: Self::F) -> Self::I;
    /// i32 -> f32, rounding to nearest even.
    fn cvt_f32(self, a: Self::I) -> Self::F;
    /// Four vectors converted to i32 rounding half to even, or `None` when the conversion
    /// may have got a lane wrong. `Some(c)` promises that every lane of `c` is `rne(a)`, or,
    /// where that is beyond `±2^30`, a value beyond `±2^30` of the same sign; NaN lanes
    /// always give `None`. x86 converts directly and looks for the "integer indefinite"
    /// `i32::MIN` that NaN and out-of-range lanes give; NEON's conversion saturates, so only
    /// NaN needs the check; the portable ISA checks for NaN and clamps.
    fn cvt_rne_x4(self, a: [Self::F; 4]) -> Option<[Self::I; 4]>;

    /// `4 * LANES` bytes of little-endian f32.
    fn load_f32(self, b: &[u8]) -> Self::F;
    /// `4 * LANES` bytes of little-endian i32.
    fn load_i32(self, b: &[u8]) -> Self::I;
    /// `2 * LANES` bytes of f16, widened exactly.
    #[inline(always)]
    fn load_f16(self, b: &[u8]) -> Self::F {
        let h = self.load_u16(b);
        f16_bits_to_f32(self, h)
    }
    /// `2 * LANES` bytes of u16, zero-extended.
    fn load_u16(self, b: &[u8]) -> Self::I;
    /// `LANES` bytes, zero-extended.
    fn load_u8(self, b: &[u8]) -> Self::I;
    /// `LANES` bytes of i8, sign-extended (one widening load where [`Simd::load_u8`]
    /// needs two more operations to restore the sign).
    fn load_i8(self, b: &[u8]) -> Self::I;
    /// `2 * LANES` bytes of little-endian i16, sign-extended.
    fn load_i16(self, b: &[u8]) -> Self::I;
    /// `LANES / 2` bytes of packed nibbles (element 2k in the low nibble), zero-extended.
    fn load_u4(self, b: &[u8]) -> Self::I;
    /// Four vectors of packed 4-bit codes (`2 * LANES` bytes), zero-extended, as four
    /// [`Simd::load_u4`]s would load them. ISAs with byte unpacks override it.
    #[inline(always)]
    fn load_u4x4(self, b: &[u8]) -> [Self::I; 4] {
        let h = Self::LANES / 2;
        [
            self.load_u4(&b[..h]),
            self.load_u4(&b[h..2 * h]),
            self.load_u4(&b[2 * h..3 * h]),
            self.load_u4(&b[3 * h..4 * h]),
        ]
    }
    /// Four vectors of packed 4-bit codes as [`Simd::load_u4x4`] loads them, sign-extended
    /// where `SIGNED` (the two's complement nibbles of int4). ISAs with per-lane shifts
    /// override it: a broadcast and two shifts a vector, instead of byte unpacks and
    /// widening shuffles, then the flip's two operations.
    #[inline(always)]
    fn load_4bit_x4<const SIGNED: bool>(self, b: &[u8]) -> [Self::I; 4] {
        let mut c = self.load_u4x4(b);
        if SIGNED {
            let flip = self.splat_i(8);
            for ck in c.iter_mut() {
                *ck = self.sub_i(self.xor_i(*ck, flip), flip);
            }
        }
        c
    }
    /// Four vectors of packed 2-bit codes (`LANES` bytes, element `4 k + j` in bits `2 j`
    /// and `2 j + 1` of byte `k`), zero-extended, or sign-extended where `SIGNED` (int2's
    /// two's complement crumbs), as four [`Simd::load_u2`]s (and their flips) give them.
    /// ISAs with per-lane shifts override it: a broadcast per 16 codes and two shifts a
    /// vector, where `load_u2` takes a byte shuffle, a widening, a shift and a mask.
    #[inline(always)]
    fn load_2bit_x4<const SIGNED: bool>(self, b: &[u8]) -> [Self::I; 4] {
        let q = Self::LANES / 4;
        let mut c = [
            self.load_u2(&b[..q]),
            self.load_u2(&b[q..2 * q]),
            self.load_u2(&b[2 * q..3 * q]),
            self.load_u2(&b[3 * q..4 * q]),
        ];
        if SIGNED {
            let flip = self.splat_i(2);
            for ck in c.iter_mut() {
                *ck = self.sub_i(self.xor_i(*ck, flip), flip);
            }
        }
        c
    }
    /// [`Simd::load_u4x4`], then `(c ^ flip) - zf` in every lane: the 4-bit integer
    /// decoder's offset (`dequantize::decode`). `flip` and `zf` are splats of values in
    /// `[0, 15]`, so that every result lies in `[-15, 15]`; ISAs with byte arithmetic
    /// override it to apply both to the packed bytes, two operations for the four vectors
    /// where the default takes eight.
    #[inline(always)]
    fn load_u4x4_sub(self, b: &[u8], flip: Self::I, zf: Self::I) -> [Self::I; 4] {
        let mut c = self.load_u4x4(b);
        for ck in c.iter_mut() {
            *ck = self.sub_i(self.xor_i(*ck, flip), zf);
        }
        c
    }
    /// `LANES / 4` bytes of packed crumbs (`x0 | x1 << 2 | x2 << 4 | x3 << 6`), zero-extended.
    fn load_u2(self, b: &[u8]) -> Self::I;
    /// `3 * LANES / 4` bytes of packed 6-bit codes (LSB-first stream), zero-extended.
    fn load_u6(self, b: &[u8]) -> Self::I;
    /// Whether [`Simd::load_e5m2`] decodes by the ISA's f16 conversion (cheaper than
    /// [`crate::codec::decode_minifloat`], and without the subnormal f32 operand of its
    /// multiply), so that the dequantize loops take it. A constant, as `MINI_X4`.
    const E5M2_F16: bool = false;
    /// `LANES` float8 e5m2 codes decoded to f32, exactly. An e5m2 code is the top byte of
    /// the f16 with the same value, so ISAs with an f16 conversion widen `code << 8` (and
    /// set [`Simd::E5M2_F16`]); by default [`crate::codec::decode_minifloat`]. A NaN code
    /// gives a NaN whose payload is unspecified (DequantizeLinear canonicalises e5m2's).
    #[inline(always)]
    fn load_e5m2(self, b: &[u8]) -> Self::F {
        crate::codec::decode_minifloat(self, self.load_u8(b), &MiniFormat::of_id(4))
    }
    /// Whether [`Simd::load_u6x4`] is cheaper than four [`Simd::load_u6`] (the ISA
    /// overrides it), so that the dequantize loops take it. A constant, as `MINI_X4`.
    const U6X4: bool = false;
    /// Four vectors of packed 6-bit codes (`3 * LANES` bytes), zero-extended, as four
    /// [`Simd::load_u6`]s would load them. ISAs whose single-vector load goes through a
    /// copy override it (and set [`Simd::U6X4`]).
    #[inline(always)]
    fn load_u6x4(self, b: &[u8]) -> [Self::I; 4] {
        let q = 3 * Self::LANES / 4;
        [
            self.load_u6(&b[..q]),
            self.load_u6(&b[q..2 * q]),
            self.load_u6(&b[2 * q..3 * q]),
            self.load_u6(&b[3 * q..4 * q]),
        ]
    }
    /// The values of float6 codes (low 6 bits of each lane; the bits above are ignored) of
    /// the format `f` (e2m3 or e3m2), exactly: by default the arithmetic decoder
    /// (`crate::codec::decode_float6`); ISAs with a 32-entry register lookup override it.
    #[inline(always)]
    fn decode_f6(self, c: Self::I, f: &MiniFormat) -> Self::F {
        crate::codec::decode_float6(self, c, f)
    }
    /// Whether [`Simd::f6_x4`] decodes by register table lookups, cheaper than the
    /// arithmetic decoder, so that the dequantize loops take it. A constant, as `U6X4`.
    const F6_X4: bool = false;
    /// Four vectors of packed float6 codes (`3 * LANES` bytes, as [`Simd::load_u6x4`] reads
    /// them) of the format `f` (e2m3 or e3m2), decoded exactly: vector `k` holds the values
    /// of codes `k LANES..(k + 1) LANES`. By default [`Simd::decode_f6`] of each of
    /// `load_u6x4`'s vectors; AVX2 overrides it with byte table lookups of the values'
    /// upper halves ([`Simd::F6_X4`]).
    #[inline(always)]
    fn f6_x4(self, b: &[u8], f: &MiniFormat) -> [Self::F; 4] {
        let mut v = [self.splat(0.0); 4];
        for (vk, ck) in v.iter_mut().zip(self.load_u6x4(b)) {
            *vk = self.decode_f6(ck, f);
        }
        v
    }

    /// Stores `4 * LANES` bytes of f32.
    fn store_f32(self, a: Self::F, out: &mut [u8]);
    /// Stores the low 16 bits of each lane (`2 * LANES` bytes).
    fn store_u16(self, a: Self::I, out: &mut [u8]);
    /// Stores the low 8 bits of each lane (`LANES` bytes).
    fn store_u8(self, a: Self::I, out: &mut [u8]);
    /// Stores the low 8 bits of each lane of four vectors (`4 * LANES` bytes). ISAs whose
    /// single-vector narrowing store is slow override this with pack instructions.
    #[inline(always)]
    fn store_u8x4(self, c: [Self::I; 4], out: &mut [u8]) {
        let n = Self::LANES;
        let [c0, c1, c2, c3] = c;
        self.store_u8(c0, &mut out[..n]);
        self.store_u8(c1, &mut out[n..2 * n]);
        self.store_u8(c2, &mut out[2 * n..3 * n]);
        self.store_u8(c3, &mut out[3 * n..4 * n]);
    }
    /// [`Simd::store_u8x4`] for lanes known to lie within `[0, 255]` (float8 codes), which
    /// saturating packs narrow without masking first.
    #[inline(always)]
    fn store_u8x4_exact(self, c: [Self::I; 4], out: &mut [u8]) {
        self.store_u8x4(c, out)
    }
    /// Whether [`Simd::store_16x4`] takes fewer operations than four [`Simd::store_u16`]s
    /// (AVX2: two packs and a permute, where each single store packs and extracts), so that
    /// loops with a choice group their 16-bit stores by four. A constant, as `MINI_X4`.
    /// (Not AVX-512: there it made i8 -> bf16 per-axis-last64 1.15x faster on Zen 4, but the
    /// extra bf16 loops it selects in the dequantize row kernels took two AVX-512 frames of
    /// a dependent crate's unoptimised build to 299 008 bytes, over `cargo xtask
    /// downstream`'s limit.)
    const PACK16_X4: bool = false;
    /// Whether the row tiles of 4-bit codes (per-axis and blocked-middle dequantize) load,
    /// decode and store four vectors at a time ([`Simd::load_u4x4`], [`Simd::e2m1_x4`]),
    /// where a tile's row is whole groups of four. Per-ISA, as measured (AVX2, Zen 4:
    /// blocked-middle int4 1.1-1.3x, e2m1 1.6-1.9x; on AVX-512 the extra loop in the tile
    /// kernel pushed a call out of its inlining, 0.8x on tiles that never take it). A
    /// constant, as `MINI_X4`.
    const U4X4_ROWS: bool = false;
    /// Whether DequantizeLinear's row tiles load their parameters in a kernel of their own
    /// ([`Simd::enter`]) rather than inlined into the tile kernel. Per-ISA, as measured
    /// (Zen 4, 1 Mi: inlined, the AVX2 bf16 rows loop lost its hoisted rounding constants,
    /// i8 -> bf16 per-axis-last64 0.85x; apart, AVX-512 blocked-middle32 ran 0.95x). A
    /// constant, as `MINI_X4`.
    const TILE_PARAMS_APART: bool = false;
    /// Whether [`Simd::lut16_u16_x4`] looks 4-bit codes up by byte shuffles (AVX2:
    /// `vpshufb`; AVX-512 runs the same 256-bit lookup, 1.7-4.5x its arithmetic decode on
    /// Zen 4), so that 4-bit integer to f16 / bf16 dequantize over runs of whole steps
    /// (per tensor, per-axis-first) computes the 16 values their scale and zero point can
    /// give once and then only looks codes up. A constant, as `MINI_X4`.
    const U4_TABLE16: bool = false;
    /// Stores four vectors of 16-bit codes (`8 * LANES` bytes), each lane within the i16
    /// range (`signed`) or the u16 range, as four [`Simd::store_u16`]s would. ISAs with
    /// saturating packs override it (in range, saturation changes nothing).
    #[inline(always)]
    fn store_16x4(self, c: [Self::I; 4], signed: bool, out: &mut [u8]) {
        let _ = signed;
        let n = 2 * Self::LANES;
        for (k, ck) in c.into_iter().enumerate() {
            self.store_u16(ck, &mut out[k * n..(k + 1) * n]);
        }
    }
    /// Packs the low 4 bits of each lane of four vectors (`2 * LANES` bytes; lanes within
    /// `[-128, 127]`), as four [`Simd::store_u4`]s would. ISAs with wide packs override it.
    #[inline(always)]
    fn store_u4x4(self, c: [Self::I; 4], out: &mut [u8]) {
        let h = Self::LANES / 2;
        let [c0, c1, c2, c3] = c;
        self.store_u4(c0, &mut out[..h]);
        self.store_u4(c1, &mut out[h..2 * h]);
        self.store_u4(c2, &mut out[2 * h..3 * h]);
        self.store_u4(c3, &mut out[3 * h..4 * h]);
    }
    /// Packs the low 2 bits of each lane of four vectors (`LANES` bytes; lanes within
    /// `[-128, 127]`), as four [`Simd::store_u2`]s would. ISAs with wide packs override it.
    #[inline(always)]
    fn store_u2x4(self, c: [Self::I; 4], out: &mut [u8]) {
        let q = Self::LANES / 4;
        for (k, ck) in c.into_iter().enumerate() {
            self.store_u2(ck, &mut out[k * q..(k + 1) * q]);
        }
    }
    /// Stores `4 * LANES` 8-bit codes: lane `l` of vector `k` is `c[k]` and its zero point
    /// `z[k]` (lanes any i32, as [`Simd::cvt_rne_x4`] or a clamp to `±2^30` leave them,
    /// where a lane beyond `±2^30` stands for an out-of-range quotient of its sign; zero
    /// points within `[-32768, 32767]`), each saturated to i16, added with i16 saturation,
    /// then saturated to i8 (`signed`) or u8. For an 8-bit type this is
    /// `clamp(c + z, qmin, qmax)`: the saturating packs of x86 and NEON are the clamp (a lane
    /// beyond ±32767 stays beyond the 8-bit range after adding z). `z` is passed as
    /// [`Simd::zero_points_x4`] prepares it from the per-vector zero points `z[k]` (x86 packs
    /// them there, in the order it packs `c`, so a caller whose zero points repeat packs them
    /// once).
    fn store_sat8x4(self, c: [Self::I; 4], z: [Self::I; 4], signed: bool, out: &mut [u8]);
    /// The zero points of a four-vector step (`z[k]` for vector `k`) in the form
    /// [`Simd::store_sat8x4`], [`Simd::store_sat4x4`] and [`Simd::cvt_store_sat_x4`] take:
    /// x86 packs them to i16 in the order it packs the codes, so that a caller whose zero
    /// points repeat (per-axis channel tiles, a broadcast) packs them once, not per step.
    /// Elsewhere, and by default, `z` itself.
    #[inline(always)]
    fn zero_points_x4(self, z: [Self::I; 4]) -> [Self::I; 4] {
        z
    }
    /// [`Simd::cvt_rne_x4`] of the quotients `q`, then [`Simd::store_sat8x4`] (`bits` 8),
    /// [`Simd::store_sat4x4`] (`bits` 4) or [`Simd::store_sat2x4`] (`bits` 2) of the
    /// codes; `false`, with nothing stored, where
    /// the conversion cannot vouch for every lane (the caller then redoes the step with
    /// clamps). ISAs may refuse more lanes than `cvt_rne_x4` does (AVX2 checks after the
    /// first saturating pack, which also refuses lanes at or below -32768), never fewer.
    /// `z` is as [`Simd::zero_points_x4`] prepares it. `mid` tells that every zero point is
    /// the middle of the 8-bit type (0 for i8, 128 for u8), where an ISA may skip adding
    /// them (bits 8): `clamp(c + 128, 0, 255)` is `clamp(c, -128, 127)` with the top bit
    /// flipped. It never changes a code, and ISAs are free to ignore it.
    #[inline(always)]
    fn cvt_store_sat_x4(
        self,
        q: [Self::F; 4],
        z: [Self::I; 4],
        signed: bool,
        bits: usize,
        mid: bool,
        out: &mut [u8],
    ) -> bool {
        let _ = mid;
        let Some(c) = self.cvt_rne_x4(q) else { return false };
        match bits {
            8 => self.store_sat8x4(c, z, signed, out),
            4 => self.store_sat4x4(c, z, signed, out),
            _ => self.store_sat2x4(c, z, signed, out),
        }
        true
    }
    /// The 16-bit twin of [`Simd::cvt_store_sat_x4`] for a zero point at the middle of the
    /// type's i16 view (0 for i16, 32768 for u16): [`Simd::cvt_rne_x4`] of `q`, each lane
    /// saturated to i16, then for u16 (`!signed`) offset by 32768 (the top bit flipped), so
    /// `clamp(c + z, qmin, qmax)`, stored as [`Simd::store_16x4`] stores (`8 * LANES`
    /// bytes). `false`, with nothing stored, where the conversion cannot vouch for every
    /// lane; ISAs may refuse more lanes (AVX2 refuses lanes at or below -32768 too).
    #[inline(always)]
    fn cvt_store_sat16x4(self, q: [Self::F; 4], signed: bool, out: &mut [u8]) -> bool {
        let Some(mut c) = self.cvt_rne_x4(q) else { return false };
        let z = self.splat_i(if signed { 0 } else { 32768 });
        for ck in c.iter_mut() {
            *ck = self.add_i(self.min_i(self.max_i(*ck, self.splat_i(-32768)), self.splat_i(32767)), z);
        }
        self.store_16x4(c, signed, out);
        true
    }
    /// The training-mode mask of four vectors of codes as [`Simd::store_sat8x4`] takes
    /// them (`c`, and `z` as [`Simd::zero_points_x4`] prepares it): bit `k * LANES + l` set
    /// where `c[k] + z[k]` in lane `l` is within `[qmin, qmax]` (an 8-, 4- or 2-bit type's
    /// range; the zero points within it), so that the saturating store kept it. A lane
    /// beyond `±2^30` is out of range. This version tests each vector against
    /// `[qmin - z, qmax - z]` (no sum that could wrap); ISAs whose
    /// [`Simd::zero_points_x4`] packs `z` override it (x86 tests the i16 sums of the
    /// store's own first packs).
    #[inline(always)]
    fn sat_mask_x4(self, c: [Self::I; 4], z: [Self::I; 4], qmin: i32, qmax: i32) -> u64 {
        let all = ((1u64 << Self::LANES) - 1) as u32;
        let mut w = 0u64;
        for (k, (ck, zk)) in c.into_iter().zip(z).enumerate() {
            let (lo, hi) = (self.sub_i(self.splat_i(qmin), zk), self.sub_i(self.splat_i(qmax), zk));
            let out = self.or_m(self.lt_i(ck, lo), self.lt_i(hi, ck));
            w |= u64::from(!self.mask_bits(out) & all) << (k * Self::LANES);
        }
        w
    }
    /// [`Simd::store_sat8x4`] for the 4-bit types: `clamp(c + z, qmin, qmax)` of i4
    /// (`signed`) or u4, packed as [`Simd::store_u4x4`] packs (`2 * LANES` bytes); the lanes
    /// any i32 as for `store_sat8x4` (NEON's conversion saturates to `i32::MAX` / `MIN`),
    /// the zero points within `[-8, 15]` (before [`Simd::zero_points_x4`] prepares them, as
    /// `z` is passed).
    #[inline(always)]
    fn store_sat4x4(self, c: [Self::I; 4], z: [Self::I; 4], signed: bool, out: &mut [u8]) {
        let mut v = c;
        sat_small(self, &mut v, z, if signed { (-8, 7) } else { (0, 15) });
        self.store_u4x4(v, out)
    }
    /// [`Simd::store_sat4x4`] for the 2-bit types: `clamp(c + z, qmin, qmax)` of i2
    /// (`signed`) or u2, packed as [`Simd::store_u2x4`] packs (`LANES` bytes), the zero
    /// points within `[-2, 3]`. (ISAs whose [`Simd::zero_points_x4`] packs `z` override
    /// it, as they do `store_sat4x4`.)
    #[inline(always)]
    fn store_sat2x4(self, c: [Self::I; 4], z: [Self::I; 4], signed: bool, out: &mut [u8]) {
        let mut v = c;
        sat_small(self, &mut v, z, if signed { (-2, 1) } else { (0, 3) });
        self.store_u2x4(v, out)
    }
    /// Encodes four vectors into the 8-, 6- or 4-bit float format `f` as
    /// [`crate::codec::encode_minifloat`] does and stores the codes: bytes as
    /// [`Simd::store_u8x4_exact`] stores them (`4 * LANES` bytes), for a 4-bit format
    /// nibbles as [`Simd::store_u4x4`] does (`2 * LANES` bytes), for a 6-bit one 6-bit
    /// fields as four [`Simd::store_u6`] do (`3 * LANES` bytes).
    #[inline(always)]
    fn store_mini_x4(self, q: [Self::F; 4], f: &MiniFormat, out: &mut [u8]) {
        store_minifloat_x4(self, q, f, out)
    }
    /// Packs the low 4 bits of each lane (`LANES / 2` bytes).
    fn store_u4(self, a: Self::I, out: &mut [u8]);
    /// Packs the low 2 bits of each lane (`LANES / 4` bytes).
    fn store_u2(self, a: Self::I, out: &mut [u8]);
    /// Packs the low 6 bits of each lane (`3 * LANES / 4` bytes).
    fn store_u6(self, a: Self::I, out: &mut [u8]);
    /// Stores all lanes as i32 (`4 * LANES` bytes).
    fn store_i32(self, a: Self::I, out: &mut [u8]);
    /// The minimum of the lanes, none of them NaN (which of ±0 wins is unspecified).
    #[inline(always)]
    fn hmin(self, a: Self::F) -> f32 {
        let mut b = [0u8; 64];
        self.store_f32(a, &mut b);
        (1..Self::LANES).map(|t| lane_f32(&b, t)).fold(lane_f32(&b, 0), f32::min)
    }
    /// The maximum of the lanes, none of them NaN (which of ±0 wins is unspecified).
    #[inline(always)]
    fn hmax(self, a: Self::F) -> f32 {
        let mut b = [0u8; 64];
        self.store_f32(a, &mut b);
        (1..Self::LANES).map(|t| lane_f32(&b, t)).fold(lane_f32(&b, 0), f32::max)
    }
    /// Lane `j`: the minimum of the lanes of `v[j]` (`v` holds `LANES` vectors, no lane
    /// NaN; which of ±0 wins is unspecified). The statistics of `LANES` blocks at once,
    /// as one vector of per-block results. By default [`Simd::hmin`] per vector.
    #[inline(always)]
    fn hmin_each(self, v: &[Self::F]) -> Self::F {
        reduce_each(self, v, false)
    }
    /// [`Simd::hmin_each`] with the maximum.
    #[inline(always)]
    fn hmax_each(self, v: &[Self::F]) -> Self::F {
        reduce_each(self, v, true)
    }
    /// Lane `j`: the signed maximum of the lanes of `v[j]` (`v` holds `LANES` vectors):
    /// the amax of `LANES` blocks at once as one vector, from their magnitude bits (a NaN
    /// pattern above every other). By default [`Simd::hmax_i`] per vector.
    #[inline(always)]
    fn hmax_i_each(self, v: &[Self::I]) -> Self::I {
        let mut b = [0u8; 64];
        for (t, &vt) in v.iter().enumerate().take(Self::LANES) {
            b[4 * t..4 * t + 4].copy_from_slice(&self.hmax_i(vt).to_le_bytes());
        }
        self.load_i32(&b)
    }
    /// The signed maximum of the lanes.
    #[inline(always)]
    fn hmax_i(self, a: Self::I) -> i32 {
        let mut b = [0u8; 64];
        self.store_i32(a, &mut b);
        (0..Self::LANES).map(|t| lane_f32(&b, t).to_bits() as i32).max().unwrap_or(i32::MIN)
    }
    /// Lane `i` is `t[c_i & 15]`, `t` being 16 little-endian f32.
    #[inline(always)]
    fn lut16(self, t: &[u8; 64], c: Self::I) -> Self::F {
        let (mut b, mut o) = ([0u8; 64], [0u8; 64]);
        self.store_i32(c, &mut b);
        for l in 0..Self::LANES {
            let i = (b[4 * l] & 15) as usize;
            o[4 * l..4 * l + 4].copy_from_slice(&t[4 * i..4 * i + 4]);
        }
        self.load_f32(&o)
    }
    /// Four vectors of packed float4 e2m1 codes (`2 * LANES` bytes, as [`Simd::load_u4x4`]
    /// reads them), decoded: vector `k` holds the values of codes `k LANES..(k + 1) LANES`,
    /// `crate::codec::E2M1_LUT`'s entries. For ISAs with [`Simd::LUT16`]; the default is
    /// [`Simd::lut16`] of each of [`Simd::load_u4x4`]'s vectors, and AVX2 overrides it with
    /// byte table lookups of the values' upper halves.
    #[inline(always)]
    fn e2m1_x4(self, b: &[u8]) -> [Self::F; 4] {
        let c = self.load_u4x4(b);
        let t = &crate::codec::E2M1_LUT;
        [self.lut16(t, c[0]), self.lut16(t, c[1]), self.lut16(t, c[2]), self.lut16(t, c[3])]
    }
    /// The 16-bit values `t[c]` (`t`: 16 little-endian u16) of 32 packed 4-bit codes `c`
    /// (`b`: 16 bytes, element 2k in the low nibble of byte k), stored in element order
    /// into `y` (64 bytes). ISAs with byte shuffles override it ([`Simd::U4_TABLE16`]).
    #[inline(always)]
    fn lut16_u16_x4(self, t: &[u8; 32], b: &[u8], y: &mut [u8]) {
        for (&byte, yk) in b[..16].iter().zip(y[..64].chunks_exact_mut(4)) {
            for (h, c) in [byte & 15, byte >> 4].into_iter().enumerate() {
                let c = c as usize;
                yk[2 * h] = t[2 * c];
                yk[2 * h + 1] = t[2 * c + 1];
            }
        }
    }
    /// A hint that the cache line holding `b[0]` will be read soon (a no-op where the ISA
    /// module provides none: NEON and the portable ISA). It never faults and changes no
    /// result.
    #[inline(always)]
    fn prefetch(self, b: &[u8]) {
        let _ = b;
    }

    /// Rounds to f16 (RNE, IEEE overflow) and returns the f16 bit patterns in the low 16
    /// bits of each lane. A NaN narrows as IEEE 754 hardware (F16C, NEON) does: its sign,
    /// the quiet bit and the top 10 payload bits. ISAs with such a conversion override this.
    #[inline(always)]
    fn f32_to_f16_bits(self, a: Self::F) -> Self::I {
        f32_to_f16_bits_generic(self, a)
    }
    /// Stores `a` rounded to f16 (`2 * LANES` bytes): the patterns of
    /// [`Simd::f32_to_f16_bits`], stored as [`Simd::store_u16`] stores them. ISAs whose
    /// conversion has a cheaper route to memory override this.
    #[inline(always)]
    fn store_f16(self, a: Self::F, out: &mut [u8]) {
        self.store_u16(self.f32_to_f16_bits(a), out)
    }
    /// Rounds to the nearest f16 value (RNE, IEEE overflow to ±inf), widened back to f32; a
    /// NaN as [`Simd::f32_to_f16_bits`] narrows it, then widened. ISAs with both conversions
    /// in hardware override this.
    #[inline(always)]
    fn round_f16(self, a: Self::F) -> Self::F {
        round_f16_generic(self, a)
    }
}

/// The clamp bound of quotients bound for an integer type: beyond every integer range (so
/// a clamped quotient saturates exactly like the true one) and exactly convertible to i32.
pub(crate) const LIM: f32 = (1u32 << 30) as f32;

/// Lane `t` of a little-endian vector store, as f32.
#[inline(always)]
pub(crate) fn lane_f32(b: &[u8; 64], t: usize) -> f32 {
    f32::from_le_bytes([b[4 * t], b[4 * t + 1], b[4 * t + 2], b[4 * t + 3]])
}

/// Lane `t` of a little-endian vector store, as i32.
#[inline(always)]
pub(crate) fn lane_i32(b: &[u8; 64], t: usize) -> i32 {
    i32::from_le_bytes([b[4 * t], b[4 * t + 1], b[4 * t + 2], b[4 * t + 3]])
}

/// The default [`Simd::hmin_each`] (`max` false) / [`Simd::hmax_each`]: [`Simd::hmin`] /
/// [`Simd::hmax`] of each vector, gathered as lanes.
#[inline(always)]
fn reduce_each<S: Simd>(simd: S, v: &[S::F], max: bool) -> S::F {
    let mut b = [0u8; 64];
    for (t, &vt) in v.iter().enumerate().take(S::LANES) {
        let r = if max { simd.hmax(vt) } else { simd.hmin(vt) };
        b[4 * t..4 * t + 4].copy_from_slice(&r.to_le_bytes());
    }
    simd.load_f32(&b)
}

/// The clamp of [`Simd::store_sat4x4`] and [`Simd::store_sat2x4`]: each lane of `v[k]`
/// bounded to `±2^30` (lanes beyond stand for out-of-range quotients of their sign, and the
/// bound keeps the addition from overflowing), plus `z[k]`, clamped to `[lo, hi]`.
#[inline(always)]
fn sat_small<S: Simd>(simd: S, v: &mut [S::I; 4], z: [S::I; 4], (lo, hi): (i32, i32)) {
    for (vk, zk) in v.iter_mut().zip(z) {
        let b = simd.min_i(simd.max_i(*vk, simd.splat_i(-(1 << 30))), simd.splat_i(1 << 30));
        let w = simd.add_i(b, zk);
        *vk = simd.min_i(simd.max_i(w, simd.splat_i(lo)), simd.splat_i(hi));
    }
}
