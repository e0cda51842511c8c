//! The per-ISA primitive trait and the format helpers written once on top of it.
//!
//! Every kernel in this crate is generic over [`Simd`]; an ISA module (`isa::*`) only
//! supplies these primitives for its vector width. Loads and stores take byte slices of at
//! least the stated length and never touch memory beyond it (the caller guarantees the
//! length; implementations check it with a debug assertion and rely on slice bounds for
//! the scalar fallback). Rounding conversions are explicit: [`Simd::cvt_rne`] rounds half
//! to even whatever the ISA's default mode is.

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
    /// `LANES` f32.
    type F: Copy;
    /// `LANES` i32.
    type I: Copy;
    /// A lane mask.
    type M: Copy;

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
    fn clamp_abs(self, a: Self::F, b: Self::F) -> Self::F {
        self.min(self.max(a, self.sub(self.splat(0.0), b)), b)
    }
    fn eq(self, a: Self::F, b: Self::F) -> Self::M;
    fn is_nan(self, a: Self::F) -> Self::M;
    /// `m ? a : b` per lane.
    fn select(self, m: Self::M, a: Self::F, b: Self::F) -> Self::F;
    fn or_m(self, a: Self::M, b: Self::M) -> Self::M;
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
    fn cvt_rne_unchecked(self, a: Self::F) -> Self::I {
        self.cvt_rne_clamped(a)
    }
    /// Whether a lane of `c` (from [`Simd::cvt_rne_unchecked`]) may be wrong: the vectors
    /// are then redone with [`Simd::cvt_rne_clamped`].
    fn suspect(self, c: &[Self::I; 4]) -> bool {
        let _ = c;
        false
    }
    /// `cvt_rne(min(a, 2^30))` where NaN and every value below `-2^30` give a lane at or
    /// below `-2^30`: what a quotient needs before a saturating narrow to an integer type,
    /// NaN landing on qmin. The default clamps both sides; x86 relies on the conversion's
    /// documented "integer indefinite" (`i32::MIN`) for NaN and negative overflow.
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
    fn store_u8x4(self, c: [Self::I; 4], out: &mut [u8]) {
        let n = Self::LANES;
        for (k, v) in c.into_iter().enumerate() {
            self.store_u8(v, &mut out[k * n..(k + 1) * n]);
        }
    }
    /// Two vectors saturated to i16, as one vector of `2 * LANES` i16 in the ISA's pack
    /// order (the order [`Simd::store_sat8x4`] reads its zero points in). The portable
    /// order: `a`'s lanes, then `b`'s.
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
    fn f32_to_f16_bits(self, a: Self::F) -> Self::I {
        encode_minifloat(self, a, &MiniFormat::F16_ROUND)
    }
}

/// The clamp bound of quotients bound for an integer type: beyond every integer range (so
/// a clamped quotient saturates exactly like the true one) and exactly convertible to i32.
pub(crate) const LIM: f32 = (1u32 << 30) as f32;

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
    pub fn new(f: &qdq_ref::float::FloatFormat, saturate: bool) -> MiniFormat {
        use qdq_ref::float::Flavour;
        let sign_pos = f.exp_bits + f.man_bits;
        let sign = 1i32 << sign_pos;
        let max = f.max_code() as i32;
        let nan = [f.nan_code(false) as i32, f.nan_code(true) as i32];
        let saturate = saturate || f.flavour == Flavour::Finite;
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
            unsigned_zero: f.flavour == Flavour::Fnuz,
            ieee: f.flavour == Flavour::Ieee,
            nan_all_ones: f.flavour == Flavour::Fn,
            nan_is_neg_zero: f.flavour == Flavour::Fnuz,
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
#[inline(always)]
pub(crate) fn encode_minifloat_checked<S: Simd>(s: S, v: S::F, f: &MiniFormat) -> (S::I, S::M) {
    let u = s.bits(v);
    let sign = s.and_i(u, s.splat_i(i32::MIN));
    let neg = s.eq_i(sign, s.splat_i(i32::MIN));
    let a = s.and_i(u, s.splat_i(i32::MAX));
    let sh = 23 - f.man;
    let half = s.splat_i((1 << (sh - 1)) - 1);
    let lsb = s.and_i(s.shr(a, sh), s.splat_i(1));
    let rounded = s.shr(s.add_i(s.add_i(a, half), lsb), sh);
    let mut code = s.sub_i(rounded, s.splat_i((127 - f.bias) << f.man));
    let emin = f.emin();
    if emin > -126 {
        // Below the smallest normal: scale exactly, then one RNE conversion.
        let min_normal = s.splat_i((emin + 127) << 23);
        let sub = s.lt_i(a, min_normal);
        let scaled = s.mul(s.f32_of(a), s.splat(pow2f(f.man as i32 - emin)));
        code = s.select_i(sub, s.cvt_rne(scaled), code);
    }
    let inf = s.splat_i(0x7f80_0000);
    let is_nan = s.lt_i(inf, a);
    let overflow = s.or_m(s.lt_i(s.splat_i(f.max_code), code), s.eq_i(a, inf));
    let signed = s.or_i(code, s.shr(sign, 31 - f.sign_pos));
    let mut out = signed;
    if f.unsigned_zero {
        out = s.select_i(s.eq_i(code, s.splat_i(0)), code, out);
    }
    let ovf = s.select_i(neg, s.splat_i(f.ovf[1]), s.splat_i(f.ovf[0]));
    out = s.select_i(overflow, ovf, out);
    let nan = s.select_i(neg, s.splat_i(f.nan[1]), s.splat_i(f.nan[0]));
    (s.select_i(is_nan, nan, out), s.or_m(overflow, is_nan))
}

/// Decodes small-float codes (low `sign_pos + 1` bits of each lane) to exact f32 values.
#[inline(always)]
pub(crate) fn decode_minifloat<S: Simd>(s: S, c: S::I, f: &MiniFormat) -> S::F {
    let mag_mask = (1i32 << f.sign_pos) - 1;
    let mag = s.and_i(c, s.splat_i(mag_mask));
    let sign = s.shl(s.and_i(c, s.splat_i(1 << f.sign_pos)), 31 - f.sign_pos);
    let exp_field = s.shr(mag, f.man);
    // Normal: move the fields into place and rebias.
    let normal = s.add_i(s.shl(mag, 23 - f.man), s.splat_i((127 - f.bias) << 23));
    // Subnormal: m * 2^(emin - M), exact.
    let sub = s.bits(s.mul(s.cvt_f32(mag), s.splat(pow2f(f.emin() - f.man as i32))));
    let is_sub = s.eq_i(exp_field, s.splat_i(0));
    let mut bits = s.select_i(is_sub, sub, normal);
    let mut nan = s.lt_i(s.splat_i(i32::MAX), s.splat_i(0)); // all false
    if f.ieee {
        let all_ones = s.splat_i((1 << (f.sign_pos - f.man)) - 1);
        let special = s.eq_i(exp_field, all_ones);
        let mant = s.and_i(mag, s.splat_i((1 << f.man) - 1));
        bits = s.select_i(special, s.or_i(s.splat_i(0x7f80_0000), s.shl(mant, 23 - f.man)), bits);
    }
    if f.nan_all_ones {
        nan = s.eq_i(mag, s.splat_i(mag_mask));
    }
    if f.nan_is_neg_zero {
        nan = s.eq_i(s.and_i(c, s.splat_i((2 << f.sign_pos) - 1)), s.splat_i(1 << f.sign_pos));
    }
    let bits = s.or_i(bits, sign);
    let v = s.f32_of(bits);
    s.select(nan, s.splat(f32::NAN), v)
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
