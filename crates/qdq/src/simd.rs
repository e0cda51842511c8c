//! The per-ISA primitive trait and the format helpers written once on top of it.
//!
//! Every kernel in this crate is generic over [`Simd`]; an ISA module (`isa::*`) only
//! supplies these primitives for its vector width. Loads and stores take byte slices of at
//! least the stated length and never touch memory beyond it (the caller guarantees the
//! length; implementations check it with a debug assertion and rely on slice bounds for
//! the scalar fallback). Rounding conversions are explicit: [`Simd::cvt_rne`] rounds half
//! to even whatever the ISA's default mode is.

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
    /// Whether [`Simd::cvt_rne_unchecked`] leaves a trace of every NaN or out-of-range
    /// lane for [`Simd::suspect`] (x86's "integer indefinite"). Where it does not (NEON's
    /// conversion saturates and sends NaN to 0), the 8-bit fast path clamps up front.
    const FLAGS_OVERFLOW: bool = false;
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
    /// the kernels use to send NaN to the clamp bound).
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
    /// `m ? a : b` per lane.
    fn select(self, m: Self::M, a: Self::F, b: Self::F) -> Self::F;
    fn or_m(self, a: Self::M, b: Self::M) -> Self::M;
    /// The end of Markstein's division (`q0 = x*r`, `e = x - q0*s`, `q1 = q0 + e*r`): `q1`,
    /// except `q0` where the residual is zero (`q0` is exact and has the quotient's sign of
    /// zero, which `q1 = q0 + 0` can lose) or `q1` is NaN (infinite x or an overflowing
    /// quotient, where `q0` is the IEEE result). AVX-512 does it in one `vfixupimmps`.
    #[inline(always)]
    fn markstein_fix(self, q0: Self::F, e: Self::F, q1: Self::F) -> Self::F {
        self.select(self.or_m(self.eq(e, self.splat(0.0)), self.is_nan(q1)), q0, q1)
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
    /// i32 -> f32, rounding to nearest even.
    fn cvt_f32(self, a: Self::I) -> Self::F;
    /// RNE conversion that is exact for lanes within i32 range; a NaN or out-of-range lane
    /// gives a value that [`Simd::suspect`] reports. The default is the always-correct
    /// [`Simd::cvt_rne_clamped`], never suspect; x86 converts directly and checks for the
    /// "integer indefinite" `i32::MIN` afterwards (one compare instead of two clamps).
    #[inline(always)]
    fn cvt_rne_unchecked(self, a: Self::F) -> Self::I {
        self.cvt_rne_clamped(a)
    }
    /// Whether a lane of `c` (from [`Simd::cvt_rne_unchecked`]) may be wrong: the vectors
    /// are then redone with [`Simd::cvt_rne_clamped`].
    #[inline(always)]
    fn suspect(self, c: &[Self::I; 4]) -> bool {
        let _ = c;
        false
    }
    /// `cvt_rne(min(a, 2^30))` where NaN and every value below `-2^30` give a lane at or
    /// below `-2^30`: what a quotient needs before a saturating narrow to an integer type,
    /// NaN landing on qmin. The default clamps both sides; x86 relies on the conversion's
    /// documented "integer indefinite" (`i32::MIN`) for NaN and negative overflow.
    #[inline(always)]
    fn cvt_rne_clamped(self, a: Self::F) -> Self::I {
        let lim = self.splat(LIM);
        // min(lim, NaN) keeps the NaN, max(NaN, -lim) replaces it.
        self.cvt_rne(self.max(self.min(lim, a), self.sub(self.splat(0.0), lim)))
    }

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
    /// `LANES / 2` bytes of packed nibbles (element 2k in the low nibble), zero-extended.
    fn load_u4(self, b: &[u8]) -> Self::I;
    /// `LANES / 4` bytes of packed crumbs (`x0 | x1 << 2 | x2 << 4 | x3 << 6`), zero-extended.
    fn load_u2(self, b: &[u8]) -> Self::I;
    /// `3 * LANES / 4` bytes of packed 6-bit codes (LSB-first stream), zero-extended.
    fn load_u6(self, b: &[u8]) -> Self::I;

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
        for (k, v) in c.into_iter().enumerate() {
            self.store_u8(v, &mut out[k * n..(k + 1) * n]);
        }
    }
    /// Two vectors saturated to i16, as one vector of `2 * LANES` i16 in the ISA's pack
    /// order (the order [`Simd::store_sat8x4`] reads its zero points in). The portable
    /// order: `a`'s lanes, then `b`'s.
    #[inline(always)]
    fn pack_i16(self, a: Self::I, b: Self::I) -> Self::I {
        let n = Self::LANES;
        let (mut ab, mut bb, mut out) = ([0u8; 64], [0u8; 64], [0u8; 64]);
        self.store_i32(a, &mut ab);
        self.store_i32(b, &mut bb);
        for l in 0..n {
            for (src, at) in [(&ab, l), (&bb, n + l)] {
                let v = i32::from_le_bytes([src[4 * l], src[4 * l + 1], src[4 * l + 2], src[4 * l + 3]]);
                out[2 * at..2 * at + 2].copy_from_slice(&(v.clamp(-32768, 32767) as i16).to_le_bytes());
            }
        }
        self.load_i32(&out)
    }
    /// Stores `4 * LANES` 8-bit codes from rounded quotients `c` (lanes within
    /// `[-2^30, 2^30]`, or `i32::MIN` for NaN): each lane saturated to i16, plus its zero
    /// point with i16 saturation (`z[0] = pack_i16(zero points of c[0], of c[1])`, `z[1]`
    /// likewise for `c[2]`, `c[3]`; a broadcast zero point is simply every i16 lane), then
    /// saturated to i8 (`signed`) or u8. For an 8-bit type and `|z| <= 255` this is
    /// `clamp(c + z, qmin, qmax)` (a lane beyond ±32767 stays beyond the 8-bit range after
    /// adding z), NaN's `i32::MIN` landing on qmin: the saturating packs are the clamp.
    #[inline(always)]
    fn store_sat8x4(self, c: [Self::I; 4], z: [Self::I; 2], signed: bool, out: &mut [u8]) {
        let n = Self::LANES;
        let (lo, hi) = if signed { (-128, 127) } else { (0, 255) };
        for (pair, zv) in z.into_iter().enumerate() {
            let packed = self.pack_i16(c[2 * pair], c[2 * pair + 1]);
            let (mut pb, mut zb) = ([0u8; 64], [0u8; 64]);
            self.store_i32(packed, &mut pb);
            self.store_i32(zv, &mut zb);
            for t in 0..2 * n {
                let v = i16::from_le_bytes([pb[2 * t], pb[2 * t + 1]])
                    .saturating_add(i16::from_le_bytes([zb[2 * t], zb[2 * t + 1]]));
                out[2 * pair * n + t] = (v as i32).clamp(lo, hi) as u8;
            }
        }
    }
    /// A zero point in every i16 lane (the `z` of [`Simd::store_sat8x4`] for a broadcast
    /// zero point).
    #[inline(always)]
    fn splat_i16(self, z: i32) -> Self::I {
        let h = z as u16 as i32;
        self.splat_i(h | (h << 16))
    }
    /// Packs the low 4 bits of each lane (`LANES / 2` bytes).
    fn store_u4(self, a: Self::I, out: &mut [u8]);
    /// Packs the low 2 bits of each lane (`LANES / 4` bytes).
    fn store_u2(self, a: Self::I, out: &mut [u8]);
    /// Packs the low 6 bits of each lane (`3 * LANES / 4` bytes).
    fn store_u6(self, a: Self::I, out: &mut [u8]);
    /// Stores all lanes as i32 (`4 * LANES` bytes).
    fn store_i32(self, a: Self::I, out: &mut [u8]);

    /// Rounds to f16 (RNE, IEEE overflow) and returns the f16 bit patterns in the low 16
    /// bits of each lane. ISAs with a hardware conversion override this.
    #[inline(always)]
    fn f32_to_f16_bits(self, a: Self::F) -> Self::I {
        encode_minifloat(self, a, &MiniFormat::F16_ROUND)
    }
}

/// The clamp bound of quotients bound for an integer type: beyond every integer range (so
/// a clamped quotient saturates exactly like the true one) and exactly convertible to i32.
pub(crate) const LIM: f32 = (1u32 << 30) as f32;

/// The `MINI` kernel parameter for "a float format known only at run time"; 0 means an
/// integer output, 2 and up a format of [`MiniFormat::of_id`].
pub(crate) const MINI_RUNTIME: u8 = 1;

/// Constants of a small float format for the branch-free vector codec.
#[derive(Clone, Copy, Debug)]
pub(crate) struct MiniFormat {
    /// Mantissa bits.
    pub man: u32,
    /// Exponent + mantissa bits (the sign bit's position).
    pub sign_pos: u32,
    /// Exponent bias.
    pub bias: i32,
    /// Largest finite magnitude code.
    pub max_code: i32,
    /// Codes for overflow / ±inf (after `saturate` has been applied) and NaN, by sign.
    pub ovf: [i32; 2],
    pub nan: [i32; 2],
    /// The format has no negative zero (fnuz): a zero result drops the sign.
    pub unsigned_zero: bool,
    /// IEEE-like: the all-ones exponent is inf / NaN (decode side).
    pub ieee: bool,
    /// Decode side: NaN codes are the all-ones magnitude (e4m3fn) ...
    pub nan_all_ones: bool,
    /// ... or the lone 0x80 code (fnuz).
    pub nan_is_neg_zero: bool,
}

impl MiniFormat {
    /// The vector codec constants for a reference format and saturation mode.
    pub const fn new(f: &qdq_ref::float::FloatFormat, saturate: bool) -> MiniFormat {
        use qdq_ref::float::Flavour;
        let sign_pos = f.exp_bits + f.man_bits;
        let sign = 1i32 << sign_pos;
        let max = f.max_code() as i32;
        let nan = [f.nan_code(false) as i32, f.nan_code(true) as i32];
        let saturate = saturate || matches!(f.flavour, Flavour::Finite);
        let ovf = if saturate {
            [max, max | sign]
        } else {
            match f.flavour {
                Flavour::Ieee => {
                    let inf = ((1i32 << f.exp_bits) - 1) << f.man_bits;
                    [inf, inf | sign]
                }
                _ => nan,
            }
        };
        MiniFormat {
            man: f.man_bits,
            sign_pos,
            bias: f.bias,
            max_code: max,
            ovf,
            nan,
            unsigned_zero: matches!(f.flavour, Flavour::Fnuz),
            ieee: matches!(f.flavour, Flavour::Ieee),
            nan_all_ones: matches!(f.flavour, Flavour::Fn),
            nan_is_neg_zero: matches!(f.flavour, Flavour::Fnuz),
        }
    }

    /// The compile-time id of a quantized float type and saturation mode (see
    /// [`MiniFormat::of_id`]), or [`MINI_RUNTIME`] for a format without one.
    pub fn id(t: qdq_ref::DataType, saturate: bool) -> u8 {
        use qdq_ref::DataType as D;
        match (t, saturate) {
            (D::E4M3Fn, true) => 2,
            (D::E4M3Fn, false) => 3,
            (D::E5M2, true) => 4,
            (D::E5M2, false) => 5,
            (D::E4M3FnUz, true) => 6,
            (D::E4M3FnUz, false) => 7,
            (D::E5M2FnUz, true) => 8,
            (D::E5M2FnUz, false) => 9,
            (D::E2M1, _) => 10,
            (D::E2M3, _) => 11,
            (D::E3M2, _) => 12,
            _ => MINI_RUNTIME,
        }
    }

    /// The format of a compile-time id (kernels instantiate their hot loops per id, so
    /// every field folds into the code: no per-vector branch on the format, immediate shift
    /// counts).
    #[inline(always)]
    pub const fn of_id(id: u8) -> MiniFormat {
        use qdq_ref::float::{E2M1, E2M3, E3M2, E4M3FN, E4M3FNUZ, E5M2, E5M2FNUZ};
        match id {
            2 => MiniFormat::new(&E4M3FN, true),
            3 => MiniFormat::new(&E4M3FN, false),
            4 => MiniFormat::new(&E5M2, true),
            5 => MiniFormat::new(&E5M2, false),
            6 => MiniFormat::new(&E4M3FNUZ, true),
            7 => MiniFormat::new(&E4M3FNUZ, false),
            8 => MiniFormat::new(&E5M2FNUZ, true),
            9 => MiniFormat::new(&E5M2FNUZ, false),
            10 => MiniFormat::new(&E2M1, true),
            11 => MiniFormat::new(&E2M3, true),
            _ => MiniFormat::new(&E3M2, true),
        }
    }

    /// f16 rounding (IEEE overflow to inf).
    pub const F16_ROUND: MiniFormat = MiniFormat {
        man: 10,
        sign_pos: 15,
        bias: 15,
        max_code: 0x7bff,
        ovf: [0x7c00, 0xfc00],
        nan: [0x7e00, 0xfe00],
        unsigned_zero: false,
        ieee: true,
        nan_all_ones: false,
        nan_is_neg_zero: false,
    };

    /// bf16 rounding (IEEE overflow to inf).
    pub const BF16_ROUND: MiniFormat = MiniFormat {
        man: 7,
        sign_pos: 15,
        bias: 127,
        max_code: 0x7f7f,
        ovf: [0x7f80, 0xff80],
        nan: [0x7fc0, 0xffc0],
        unsigned_zero: false,
        ieee: true,
        nan_all_ones: false,
        nan_is_neg_zero: false,
    };

    fn emin(&self) -> i32 {
        1 - self.bias
    }
}

/// `2^e` as f32 for `-126 <= e <= 127`.
#[inline(always)]
pub(crate) fn pow2f(e: i32) -> f32 {
    f32::from_bits(((e + 127) as u32) << 23)
}

/// Encodes f32 lanes into a small float format with round-half-to-even (the vector twin of
/// `qdq_ref::float::FloatFormat::encode`, for f32 inputs).
///
/// Normal results round the f32 bit pattern itself: adding `2^(s-1) - 1` plus the kept
/// LSB and shifting right by `s = 23 - M` is RNE, and a mantissa carry moves into the
/// exponent, which is exactly the next code. Results below the format's smallest normal
/// are `RNE(|v| * 2^(M - emin))`, an exact scaling followed by one rounding conversion.
#[inline(always)]
pub(crate) fn encode_minifloat<S: Simd>(s: S, v: S::F, f: &MiniFormat) -> S::I {
    encode_minifloat_checked(s, v, f).0
}

/// [`encode_minifloat`], plus the lanes that did not fit: NaN, ±inf, or a rounded magnitude
/// beyond the largest finite value (whatever the saturation mode made of them).
///
/// The magnitude is coded first and the sign applied last by an xor: every special code
/// of the signed formats is its positive twin with the sign bit flipped (NaN 0x7f / 0xff,
/// ±max, ±inf; float4 / float6 "NaN" 0x8 / 0, the ml_dtypes parity), so the overflow and
/// NaN replacements need no per-sign constants. The exponent rebias is folded into the
/// rounding constant, and overflow, ±inf and NaN all round to a code above the largest
/// finite one, so one compare finds them. The fnuz formats have no negative zero and a
/// single NaN (0x80): their sign is dropped where the magnitude is zero.
#[inline(always)]
pub(crate) fn encode_minifloat_checked<S: Simd>(s: S, v: S::F, f: &MiniFormat) -> (S::I, S::M) {
    let u = s.bits(v);
    let a = s.and_i(u, s.splat_i(i32::MAX));
    let sh = 23 - f.man;
    let lsb = s.and_i(s.shr(a, sh), s.splat_i(1));
    // Wrapping: a subnormal result makes this negative (shifted to garbage, replaced below).
    let k = ((1i32 << (sh - 1)) - 1).wrapping_sub((127 - f.bias) << 23);
    let mut code = s.shr(s.add_i(s.add_i(a, lsb), s.splat_i(k)), sh);
    let emin = f.emin();
    if emin > -126 {
        // Below the smallest normal: scale exactly, then one RNE conversion.
        let min_normal = s.splat_i((emin + 127) << 23);
        let sub = s.lt_i(a, min_normal);
        let scaled = s.mul(s.f32_of(a), s.splat(pow2f(f.man as i32 - emin)));
        code = s.select_i(sub, s.cvt_rne(scaled), code);
    }
    let bad = s.lt_i(s.splat_i(f.max_code), code);
    // The overflow code is max (saturating) or the code right above it (inf, or the NaN of
    // the finite formats), so a minimum saturates; NaN needs its own select only where its
    // code differs.
    let mut mag = s.min_i(code, s.splat_i(f.ovf[0]));
    if f.nan[0] != f.ovf[0] {
        let is_nan = s.lt_i(s.splat_i(0x7f80_0000), a);
        mag = s.select_i(is_nan, s.splat_i(f.nan[0]), mag);
    }
    let sign_bit = 1i32 << f.sign_pos;
    let sh_sign = s.shr(u, 31 - f.sign_pos);
    let out = if f.unsigned_zero {
        let zero = s.eq_i(s.and_i(mag, s.splat_i(sign_bit - 1)), s.splat_i(0));
        s.xor_i(mag, s.select_i(zero, s.splat_i(0), s.and_i(sh_sign, s.splat_i(sign_bit))))
    } else {
        s.xor_and(mag, sh_sign, s.splat_i(sign_bit))
    };
    (out, bad)
}

/// Decodes small-float codes (low `sign_pos + 1` bits of each lane) to exact f32 values.
///
/// The code moves into an f32 bit pattern as if its exponent bias were 127: shifted up so
/// its sign lands on bit 31, then arithmetically back so its mantissa lines up with f32's
/// (the replicated sign bits are masked off). A normal code becomes the f32 with the same
/// mantissa and an exponent too small by `127 - bias`, a subnormal code the f32 subnormal
/// with the same mantissa, and one exact multiply by `2^(127 - bias)` rebiases both. Then
/// the specials: NaN codes, and the all-ones exponent of the IEEE formats.
#[inline(always)]
pub(crate) fn decode_minifloat<S: Simd>(s: S, c: S::I, f: &MiniFormat) -> S::F {
    let w = f.sign_pos + 1;
    let t = s.shl(c, 32 - w);
    let mag_mask = ((1i32 << (w - 1)) - 1) << (23 - f.man);
    let bits = s.and_i(s.sra(t, 9 + f.man - w), s.splat_i(i32::MIN | mag_mask));
    let mut v = s.mul(s.f32_of(bits), s.splat(pow2f(127 - f.bias)));
    if f.ieee {
        let e_bits = f.sign_pos - f.man;
        let exp_t = ((1i32 << e_bits) - 1) << (32 - w + f.man);
        let special = s.eq_i(s.and_i(t, s.splat_i(exp_t)), s.splat_i(exp_t));
        v = s.select(special, s.f32_of(s.or_i(bits, s.splat_i(0x7f80_0000))), v);
    }
    if f.nan_all_ones {
        let mag_t = i32::MAX & !((1i32 << (32 - w)) - 1);
        v = s.select(s.eq_i(s.and_i(t, s.splat_i(mag_t)), s.splat_i(mag_t)), s.splat(f32::NAN), v);
    }
    if f.nan_is_neg_zero {
        v = s.select(s.eq_i(t, s.splat_i(i32::MIN)), s.splat(f32::NAN), v);
    }
    v
}

/// Widens f16 bit patterns (low 16 bits of each lane) to f32, exactly.
#[inline(always)]
pub(crate) fn f16_bits_to_f32<S: Simd>(s: S, h: S::I) -> S::F {
    decode_minifloat(s, h, &MiniFormat::F16_ROUND)
}

/// bf16 bit patterns (low 16 bits) to f32: the top half of the f32 pattern.
#[inline(always)]
pub(crate) fn bf16_bits_to_f32<S: Simd>(s: S, h: S::I) -> S::F {
    s.f32_of(s.shl(h, 16))
}

/// Rounds f32 lanes to bf16 (RNE, NaN kept quiet) and returns the bf16 bit patterns.
#[inline(always)]
pub(crate) fn f32_to_bf16_bits<S: Simd>(s: S, v: S::F) -> S::I {
    encode_minifloat(s, v, &MiniFormat::BF16_ROUND)
}

/// Rounds f32 lanes to the nearest f16 value (as f32).
#[inline(always)]
pub(crate) fn round_f16<S: Simd>(s: S, v: S::F) -> S::F {
    f16_bits_to_f32(s, s.f32_to_f16_bits(v))
}

/// Rounds f32 lanes to the nearest bf16 value (as f32).
#[inline(always)]
pub(crate) fn round_bf16<S: Simd>(s: S, v: S::F) -> S::F {
    bf16_bits_to_f32(s, f32_to_bf16_bits(s, v))
}
