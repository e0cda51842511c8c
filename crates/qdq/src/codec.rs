//! The small-float codecs, written once over the [`Simd`] primitives: float8 / float6 /
//! float4 encoders and decoders (and the f16 / bf16 conversions and roundings), without
//! branches on the data.
//!
//! Encode, on the magnitude bits `a` of the f32 `x` (`sh = 23 - man`):
//!
//! ```text
//! code = (a + lsb(a >> sh) + (2^(sh-1) - 1) - ((127 - bias) << 23)) >> sh   // RNE, rebias
//! code = cvt_rne(|x| * 2^(man - emin))       where |x| < 2^emin (subnormal, exact scale)
//! mag  = min(code, ovf)                      // max (saturate) or inf / NaN code
//! mag  = nan                                 where x is NaN (formats whose NaN != ovf)
//! out  = mag | sign << sign_pos              (fnuz: no sign on a zero result)
//! ```
//!
//! ISAs with saturating packs to bytes encode every one of these formats four vectors at a
//! time by the byte route ([`ByteRoute`]): the same rounding, with the saturation as a
//! float minimum first, NaN left to the packs, and the sign applied to bytes, which are
//! then stored as they are (float8), as nibbles (float4) or as 6-bit fields (float6).
//!
//! `bad` (the lanes whose code exceeded `max_code`: overflow, ±inf, NaN) is returned for
//! the training mask. Decode moves the code into an f32 bit pattern with bias 127 and
//! multiplies once by `2^(127 - bias)`, then selects the specials (see
//! [`decode_minifloat`]). Each is `qdq_ref::float`'s scalar rule lane by lane; the
//! exhaustive tests compare all 2^32 f32 inputs and every code.

use crate::simd::Simd;

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
    pub(crate) const fn new(f: &qdq_ref::float::FloatFormat, saturate: bool) -> MiniFormat {
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
    pub(crate) fn id(t: qdq_ref::DataType, saturate: bool) -> u8 {
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
    pub(crate) const fn of_id(id: u8) -> MiniFormat {
        use qdq_ref::float::{E2M1, E2M3, E3M2, E4M3FN, E4M3FNUZ, E5M2, E5M2FNUZ};
        // Inline constants: each arm is evaluated at compile time (table included), so a
        // constant `id` leaves nothing of the format to compute at run time.
        match id {
            2 => const { MiniFormat::new(&E4M3FN, true) },
            3 => const { MiniFormat::new(&E4M3FN, false) },
            4 => const { MiniFormat::new(&E5M2, true) },
            5 => const { MiniFormat::new(&E5M2, false) },
            6 => const { MiniFormat::new(&E4M3FNUZ, true) },
            7 => const { MiniFormat::new(&E4M3FNUZ, false) },
            8 => const { MiniFormat::new(&E5M2FNUZ, true) },
            9 => const { MiniFormat::new(&E5M2FNUZ, false) },
            10 => const { MiniFormat::new(&E2M1, true) },
            11 => const { MiniFormat::new(&E2M3, true) },
            _ => const { MiniFormat::new(&E3M2, true) },
        }
    }

    /// f16 rounding (IEEE overflow to inf).
    pub const F16_ROUND: MiniFormat = MiniFormat::new(&qdq_ref::float::F16, false);

    /// bf16 rounding (IEEE overflow to inf): the oracle of the tests of the kernels'
    /// own bf16 rounding ([`f32_to_bf16_bits`]).
    #[cfg(test)]
    pub const BF16_ROUND: MiniFormat = MiniFormat::new(&qdq_ref::float::BF16, false);

    const fn emin(&self) -> i32 {
        1 - self.bias
    }

    /// The smallest f32 magnitude pattern (`bits & 0x7fff_ffff`) that rounds past the
    /// largest finite code (the `bad` lanes of [`encode_minifloat_checked`]: an overflow or
    /// NaN): the training mask bit of a quotient `q` is `(bits(q) & 0x7fff_ffff) < this`.
    ///
    /// The encoder's code is `(a + lsb + k) >> sh` (`a` the magnitude pattern, `lsb` bit
    /// `sh` of `a`, `k` the rounding bias and rebias), monotone in `a`, so the lanes past
    /// `max_code` are `a >= A - lsb` with `A = ((max_code + 1) << sh) - k`. Just below `A`
    /// (the midpoint above the largest value) `lsb` is `max_code`'s low bit (the rebias is
    /// a multiple of `2 << sh` for formats with a mantissa), so the tie rounds up exactly
    /// where `max_code` is odd.
    pub(crate) const fn overflow_from(&self) -> i32 {
        let sh = 23 - self.man;
        let k = ((1i32 << (sh - 1)) - 1).wrapping_sub((127 - self.bias) << 23);
        ((self.max_code + 1) << sh) - k - (self.max_code & 1)
    }

    /// The f32 pattern of the largest finite value (`max_code` is a normal code).
    const fn max_bits(&self) -> i32 {
        let (e, m) = (self.max_code >> self.man, self.max_code & ((1 << self.man) - 1));
        ((e - self.bias + 127) << 23) | (m << (23 - self.man))
    }
}

/// The constants of the byte route (module docs) of a float format: the encode of
/// [`encode_minifloat`] with the saturation and NaN moved to where they cost least on ISAs
/// with saturating packs. Per lane, on `c = min(limit, |x|)` (a NaN `|x|` stays NaN):
///
/// ```text
/// E    = max(bits(c) & 0x7f80_0000, bits(2^emin))  // c's exponent field, e = max(e(c), emin)
/// m    = f32(unit - E)                             // 2^(M - e): unit = (M + 254) << 23
/// w    = cvt_rne(c * m) + (E >> sh)                // code + bias16; NaN: i32::MIN + (E >> sh)
/// mag  = i16_sat(w) - bias16                       // the packs to i16, a wrapping subtract
/// byte = min(u8_sat(mag), cap)                     // the packs saturate NaN's code to 255
/// out  = byte ^ (sign(x) & sign_bit)               // fnuz: only where 1 <= byte <= 0x7f
/// ```
///
/// `c * m` is exact (a power of two, no overflow below `limit`, no underflow: `m >= 2`
/// where `c` is below the normal range) and counts `c` in steps of its binade's unit in the
/// last place, `2^(e - M)` (the subnormal step `2^(emin - M)` below `2^emin`), so its RNE
/// conversion is the format's rounding: `2^M + j` for the `j`-th step of a normal binade,
/// `2^(M+1)` where it rounds up into the next (whose first code that is), `j` for a
/// subnormal. The binade's first code is `(e + bias) << M`, so adding
/// `E >> sh = (e + 127) << M` and subtracting `bias16 = (128 - bias) << M` gives the code.
/// A NaN `c` converts to `i32::MIN`, which the signed packs saturate to `i16::MIN`; the
/// wrapping subtract turns that into `2^15 - bias16`, above 255. `limit` is the largest
/// finite value when saturating, or the value the overflow code would have as a finite
/// one (inf: the all-ones exponent; e4m3fn's NaN 0x7f: 480), so that every larger magnitude
/// and ±inf get the overflow code. `cap` is the NaN code, at or above every other, or the
/// overflow code for a format whose NaN is that one. The route takes 9 vector operations
/// (and half a 16-bit subtract) per vector, and no select: the subnormal range is the
/// exponent's clamp.
#[cfg_attr(not(target_arch = "x86_64"), allow(dead_code))] // the x86 ISA modules' encoder
#[derive(Clone, Copy, Debug)]
pub(crate) struct ByteRoute {
    /// The clamp (an f32 value).
    pub limit: f32,
    /// `23 - M`.
    pub sh: u32,
    /// The bits of `2^emin`.
    pub min_normal: i32,
    /// `(M + 254) << 23`, wrapping: `unit - E` is the bit pattern of `2^(M - e)`.
    pub unit: i32,
    /// `(128 - bias) << M`: `(E >> sh) - bias16 + 2^M` is the first code of `c`'s binade
    /// (the conversion supplies the `2^M`).
    pub bias16: i16,
    /// The NaN code before the sign, at or above every other magnitude code.
    pub cap: u8,
    /// `1 << sign_pos`.
    pub sign_bit: u8,
    /// fnuz: no sign on a zero or NaN (0x80) magnitude.
    pub unsigned_zero: bool,
}

impl MiniFormat {
    /// Whether the format id `id` (see [`MiniFormat::of_id`]) is one the kernels send to
    /// [`Simd::store_mini_x4`] where [`Simd::MINI_X4`]: every float8 format in both
    /// saturation modes, e2m1 and the float6 formats, the formats with a [`ByteRoute`] (a
    /// unit test holds the two lists together). Of these, e4m3fn and e5m2 saturating,
    /// e2m1, e2m3 and e3m2 have kernels of their own (compile-time ids); the quantizer's
    /// run-time format variant takes the others there by this test on the job's id
    /// (saturating e4m3fnuz and e5m2fnuz into compile-time `MiniX4Loop`s of their own, the
    /// rest with the job's format).
    #[inline(always)]
    pub(crate) const fn has_x4_route(id: u8) -> bool {
        matches!(id, 2..=12)
    }

    /// The [`ByteRoute`] constants of this format, or `None` where the route does not
    /// apply: a width other than 4, 6 or 8 bits, an overflow code other than max or the
    /// one after it, or a NaN code below the overflow code. (float6's NaN codes, the
    /// ml_dtypes parity, are the sign bit's position with the sign flipped: the magnitude
    /// code `0x20` above max `0x1f`, then the sign's xor, as for the other formats.)
    #[cfg_attr(not(target_arch = "x86_64"), allow(dead_code))] // the x86 ISA modules' encoder
    pub(crate) const fn byte_route(&self) -> Option<ByteRoute> {
        if !matches!(self.sign_pos, 3 | 5 | 7) || self.bias < 1 || self.bias > 16 {
            return None;
        }
        let (man, sh) = (self.man, 23 - self.man);
        let lim_code = if self.ovf[0] == self.max_code || self.ovf[0] == self.max_code + 1 {
            self.ovf[0]
        } else {
            return None;
        };
        let (e, m) = (lim_code >> man, lim_code & ((1 << man) - 1));
        if e < 1 || self.nan[0] < self.ovf[0] || self.nan[0] > 0xfe {
            return None;
        }
        if self.unsigned_zero && (self.sign_pos != 7 || self.nan[0] != 0x80) {
            return None;
        }
        let emin = self.emin();
        Some(ByteRoute {
            limit: f32::from_bits((((e - self.bias + 127) as u32) << 23) | ((m as u32) << sh)),
            sh,
            min_normal: (emin + 127) << 23,
            unit: ((man + 254) << 23) as i32,
            bias16: ((128 - self.bias) << man) as i16,
            cap: self.nan[0] as u8,
            sign_bit: 1 << self.sign_pos,
            unsigned_zero: self.unsigned_zero,
        })
    }
}

/// The magnitude codes of the byte route ([`ByteRoute`]) of one vector, plus
/// `bias16`: the finite codes, the overflow code for overflow and ±inf, and `i32::MIN`
/// plus a small number for NaN. The caller's signed packs to 16 bits and its wrapping
/// subtract of `bias16` leave the codes, and NaN a number above 255 that its saturating
/// packs to bytes and `cap` turn into the NaN code.
#[cfg_attr(not(target_arch = "x86_64"), allow(dead_code))] // the x86 ISA modules' encoder
#[inline(always)]
pub(crate) fn byte_route_mag<S: Simd>(simd: S, q: S::F, r: &ByteRoute) -> S::I {
    let a = simd.f32_of(simd.and_i(simd.bits(q), simd.splat_i(i32::MAX)));
    // `min(a, b)` is `a < b ? a : b`: a NaN `a` lane keeps its NaN.
    let c = simd.min(simd.splat(r.limit), a);
    let e = simd.max_i(simd.and_i(simd.bits(c), simd.splat_i(0x7f80_0000)), simd.splat_i(r.min_normal));
    let m = simd.f32_of(simd.sub_i(simd.splat_i(r.unit), e));
    simd.add_i(simd.cvt_rne(simd.mul(c, m)), simd.shr(e, r.sh))
}

/// float4 e2m1's 16 code values, the table of [`decode_minifloat`]'s [`Simd::lut16`] path
/// (the only 4-bit float format, so a `MiniFormat` of 4 bits is this one).
pub(crate) const E2M1_LUT: [u8; 64] = lut16(&qdq_ref::float::E2M1);

/// Byte `k` (little-endian) of each of [`E2M1_LUT`]'s 16 values: the byte tables of
/// [`Simd::e2m1_x4`] on ISAs with byte shuffles. Every value is `±m 2^e` with at most two
/// significant bits, so bytes 0 and 1 are zero (checked below) and bytes 2 and 3 (the
/// upper half, the value's bf16 pattern) say it all.
pub(crate) const fn e2m1_lut_bytes(k: usize) -> [u8; 16] {
    let mut b = [0u8; 16];
    let mut c = 0;
    while c < 16 {
        b[c] = E2M1_LUT[4 * c + k];
        c += 1;
    }
    b
}

const _: () = {
    let (b0, b1) = (e2m1_lut_bytes(0), e2m1_lut_bytes(1));
    let mut c = 0;
    while c < 16 {
        assert!(b0[c] == 0 && b1[c] == 0, "e2m1 values have zero low halves");
        c += 1;
    }
};

/// The f32 pattern of the value of magnitude code `c` (no sign bit) of a small float format
/// without infinities or NaN: `(1 + m / 2^M) 2^(e - bias)` for exponent field `e > 0`,
/// `m 2^(1 - bias - M)` for `e = 0`.
const fn small_float_bits(f: &qdq_ref::float::FloatFormat, c: u32) -> u32 {
    let e = (c >> f.man_bits) as i32;
    let m = c & ((1 << f.man_bits) - 1);
    if e > 0 {
        (((e - f.bias + 127) as u32) << 23) | (m << (23 - f.man_bits))
    } else {
        // Exact: a small integer times a power of two within f32's normal range.
        (m as f32 * f32::from_bits(((1 - f.bias - f.man_bits as i32 + 127) as u32) << 23)).to_bits()
    }
}

/// Byte `k` (little-endian) of the values of the float6 magnitude codes `16 h..16 h + 16`
/// of `f` (e2m3 or e3m2), in both 16-byte halves: the `vpshufb` tables of AVX2's
/// [`Simd::f6_x4`]. Every float6 value has at most three significant bits and lies in
/// f32's normal range, so bytes 0 and 1 are zero (checked below) and bytes 2 and 3 (the
/// upper half, the value's bf16 pattern) say it all.
#[cfg_attr(not(target_arch = "x86_64"), allow(dead_code))] // the AVX2 decoder's tables
pub(crate) const fn f6_lut_bytes(f: &qdq_ref::float::FloatFormat, k: usize, h: usize) -> [u8; 32] {
    let mut t = [0u8; 32];
    let mut i = 0;
    while i < 32 {
        t[i] = small_float_bits(f, (16 * h + i % 16) as u32).to_le_bytes()[k];
        i += 1;
    }
    t
}

/// The f32 values of the 32 float6 magnitude codes of `f` (e2m3 or e3m2), little-endian:
/// the two-table lookup of AVX-512's [`Simd::decode_f6`].
#[cfg_attr(not(target_arch = "x86_64"), allow(dead_code))] // the AVX-512 decoder's table
pub(crate) const fn f6_values(f: &qdq_ref::float::FloatFormat) -> [u8; 128] {
    let mut t = [0u8; 128];
    let mut i = 0;
    while i < 128 {
        t[i] = small_float_bits(f, (i / 4) as u32).to_le_bytes()[i % 4];
        i += 1;
    }
    t
}

const _: () = {
    let fs = [qdq_ref::float::E2M3, qdq_ref::float::E3M2];
    let mut j = 0;
    while j < 2 {
        assert!(fs[j].exp_bits + fs[j].man_bits == 5, "float6 formats");
        let mut h = 0;
        while h < 2 {
            let (b0, b1) = (f6_lut_bytes(&fs[j], 0, h), f6_lut_bytes(&fs[j], 1, h));
            let mut c = 0;
            while c < 32 {
                assert!(b0[c] == 0 && b1[c] == 0, "float6 values have zero low halves");
                c += 1;
            }
            h += 1;
        }
        j += 1;
    }
};

/// The values of a 4-bit float format's 16 codes as little-endian f32 (zeros for other
/// widths): [`small_float_bits`] of the magnitude, the sign from bit 3. Such formats have
/// no NaN or infinity.
const fn lut16(f: &qdq_ref::float::FloatFormat) -> [u8; 64] {
    let mut t = [0u8; 64];
    if f.exp_bits + f.man_bits != 3 {
        return t;
    }
    let mut c = 0;
    while c < 16 {
        let mag = small_float_bits(f, (c & 7) as u32);
        let b = (mag | if c & 8 != 0 { 0x8000_0000 } else { 0 }).to_le_bytes();
        t[4 * c] = b[0];
        t[4 * c + 1] = b[1];
        t[4 * c + 2] = b[2];
        t[4 * c + 3] = b[3];
        c += 1;
    }
    t
}

/// `2^e` as f32 for `-126 <= e <= 127`.
#[inline(always)]
pub(crate) const fn pow2f(e: i32) -> f32 {
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
pub(crate) fn encode_minifloat<S: Simd>(simd: S, v: S::F, f: &MiniFormat) -> S::I {
    encode_minifloat_checked(simd, v, f).0
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
pub(crate) fn encode_minifloat_checked<S: Simd>(simd: S, v: S::F, f: &MiniFormat) -> (S::I, S::M) {
    let u = simd.bits(v);
    let a = simd.and_i(u, simd.splat_i(i32::MAX));
    let sh = 23 - f.man;
    let lsb = simd.and_i(simd.shr(a, sh), simd.splat_i(1));
    // Wrapping: a subnormal result makes this negative (shifted to garbage, replaced below).
    let k = ((1i32 << (sh - 1)) - 1).wrapping_sub((127 - f.bias) << 23);
    let mut code = simd.shr(simd.add_i(simd.add_i(a, lsb), simd.splat_i(k)), sh);
    let emin = f.emin();
    if emin > -126 {
        // Below the smallest normal: scale exactly, then one RNE conversion.
        let min_normal = simd.splat_i((emin + 127) << 23);
        let sub = simd.lt_i(a, min_normal);
        let scaled = simd.mul(simd.f32_of(a), simd.splat(pow2f(f.man as i32 - emin)));
        code = simd.select_i(sub, simd.cvt_rne(scaled), code);
    }
    let bad = simd.lt_i(simd.splat_i(f.max_code), code);
    // The overflow code is max (saturating) or the code right above it (inf, or the NaN of
    // the finite formats), so a minimum saturates; NaN needs its own select only where its
    // code differs.
    let mut mag = simd.min_i(code, simd.splat_i(f.ovf[0]));
    if f.nan[0] != f.ovf[0] {
        let is_nan = simd.lt_i(simd.splat_i(0x7f80_0000), a);
        mag = simd.select_i(is_nan, simd.splat_i(f.nan[0]), mag);
    }
    let sign_bit = 1i32 << f.sign_pos;
    let sh_sign = simd.shr(u, 31 - f.sign_pos);
    let out = if f.unsigned_zero {
        let zero = simd.eq_i(simd.and_i(mag, simd.splat_i(sign_bit - 1)), simd.splat_i(0));
        simd.xor_i(mag, simd.select_i(zero, simd.splat_i(0), simd.and_i(sh_sign, simd.splat_i(sign_bit))))
    } else {
        simd.xor_and(mag, sh_sign, simd.splat_i(sign_bit))
    };
    (out, bad)
}

/// [`Simd::store_mini_x4`] from [`encode_minifloat`]: four vectors encoded, then stored as
/// bytes (`4 * LANES`) or, for a 4-bit format, nibbles (`2 * LANES` bytes), for a 6-bit
/// one 6-bit fields (`3 * LANES` bytes).
#[inline(always)]
pub(crate) fn store_minifloat_x4<S: Simd>(simd: S, q: [S::F; 4], f: &MiniFormat, out: &mut [u8]) {
    let mut c = [simd.splat_i(0); 4];
    for (ck, v) in c.iter_mut().zip(q) {
        *ck = encode_minifloat(simd, v, f);
    }
    match f.sign_pos {
        3 => simd.store_u4x4(c, out),
        5 => {
            let b = 3 * S::LANES / 4;
            for (ck, o) in c.into_iter().zip(out[..4 * b].chunks_exact_mut(b)) {
                simd.store_u6(ck, o);
            }
        }
        _ => simd.store_u8x4_exact(c, out),
    }
}

/// Decodes small-float codes (low `sign_pos + 1` bits of each lane) to exact f32 values.
///
/// The code moves into an f32 bit pattern as if its exponent bias were 127: shifted up so
/// its sign lands on bit 31, then arithmetically back so its mantissa lines up with f32's
/// (the replicated sign bits are masked off). A normal code becomes the f32 with the same
/// mantissa and an exponent too small by `127 - bias`, a subnormal code the f32 subnormal
/// with the same mantissa, and one exact multiply by `2^(127 - bias)` rebiases both. Then
/// the specials: NaN codes, and the all-ones exponent of the IEEE formats. ISAs with a
/// fast [`Simd::lut16`] decode 4-bit codes (float4 e2m1) by table instead.
#[inline(always)]
pub(crate) fn decode_minifloat<S: Simd>(simd: S, c: S::I, f: &MiniFormat) -> S::F {
    decode_minifloat_bits(simd, c, f, f.sign_pos + 1)
}

/// [`decode_minifloat`] for codes of `bits` bits (`f`'s width), where the caller knows the
/// width at compile time: the float6 test then folds away for the other widths, whose
/// variants read the format at run time.
#[inline(always)]
pub(crate) fn decode_minifloat_bits<S: Simd>(simd: S, c: S::I, f: &MiniFormat, bits: u32) -> S::F {
    debug_assert_eq!(bits, f.sign_pos + 1);
    if S::LUT16 && f.sign_pos == 3 {
        // 4-bit codes: a 16-entry table lookup (no special values to select). It also keeps
        // the subnormal f32 below out of the multiply (some x86 cores slow down on
        // subnormal operands; float4's 0.5 is such a code).
        return simd.lut16(&E2M1_LUT, c);
    }
    if bits == 6 {
        return simd.decode_f6(c, f);
    }
    decode_minifloat_times(simd, c, f, simd.splat(pow2f(127 - f.bias)))
}

/// [`decode_minifloat`] for the 6-bit formats (e2m3, e3m2: no infinities, no NaN) with no
/// subnormal f32 operand: the multiply of the arithmetic decoder takes a subnormal f32 for
/// every subnormal code, and Intel cores run a multiply with a subnormal operand through a
/// microcode assist (about 100 cycles; on the e2m3 bench data, where every `|v| < 1` is
/// subnormal, decode ran at 0.3 Gelem/s). Here the rebias is an integer addition to the
/// exponent field, exact for normal codes; a subnormal code (exponent field 0, mantissa
/// `m`) takes the normal pattern of `1.m * 2^(1 - bias)` minus `2^(1 - bias)`, an exact
/// subtraction of normal values (`0.m * 2^(1 - bias)`, +0 for the zero code); then the
/// sign bit.
/// [`Simd::decode_f6`]'s default.
#[inline(always)]
pub(crate) fn decode_float6<S: Simd>(simd: S, c: S::I, f: &MiniFormat) -> S::F {
    debug_assert!(!f.ieee && !f.nan_all_ones && !f.nan_is_neg_zero, "float6 has no special values");
    let w = f.sign_pos + 1;
    let t = simd.shl(c, 32 - w);
    // The magnitude with its exponent field on f32's lowest exponent bits and its mantissa
    // at the top of f32's, as in `decode_minifloat_times`.
    let mag_mask = ((1i32 << (w - 1)) - 1) << (23 - f.man);
    let mag = simd.and_i(simd.sra(t, 9 + f.man - w), simd.splat_i(mag_mask));
    let exp_field = ((1i32 << (f.sign_pos - f.man)) - 1) << 23;
    let normal = simd.f32_of(simd.add_i(mag, simd.splat_i((127 - f.bias) << 23)));
    let one_m = simd.f32_of(simd.add_i(mag, simd.splat_i((128 - f.bias) << 23)));
    let sub = simd.sub(one_m, simd.splat(pow2f(1 - f.bias)));
    let v = simd.select(simd.eq_i(simd.and_i(mag, simd.splat_i(exp_field)), simd.splat_i(0)), sub, normal);
    simd.f32_of(simd.or_i(simd.bits(v), simd.and_i(t, simd.splat_i(i32::MIN))))
}

/// The scale `s = sc * 2^(127 - bias)` for [`decode_minifloat_times`], which then returns
/// `decode(c) * sc` with one multiply instead of two, where that is exact: a format without
/// IEEE specials decoded by the multiply (not the float4 table), and `s` exact in every
/// lane (the power-of-two scaling overflows for large `sc`; a NaN `sc` is refused too).
/// The product is then `decode(c) * sc` rounded once, bit for bit, NaN codes included
/// (their NaN times anything is that NaN on x86 and NEON).
#[inline(always)]
pub(crate) fn fold_scale<S: Simd>(simd: S, sc: S::F, f: &MiniFormat) -> Option<S::F> {
    // (Not float6: its decoder avoids the multiply, see `decode_float6`.)
    if !S::SPECIALIZE || f.ieee || (S::LUT16 && f.sign_pos == 3) || f.sign_pos == 5 {
        return None;
    }
    let k = 127 - f.bias;
    let s = simd.mul(sc, simd.splat(pow2f(k)));
    let back = simd.mul(s, simd.splat(pow2f(-k)));
    let all = (1u32 << S::LANES) - 1;
    (simd.mask_bits(simd.eq(back, sc)) == all).then_some(s)
}

/// [`decode_minifloat`]'s arithmetic decoder with the rebias multiplier `m`: `2^(127 - bias)`
/// for the decoded values, or a scale of [`fold_scale`] for the scaled ones (formats
/// without IEEE specials only).
#[inline(always)]
pub(crate) fn decode_minifloat_times<S: Simd>(simd: S, c: S::I, f: &MiniFormat, m: S::F) -> S::F {
    let w = f.sign_pos + 1;
    let t = simd.shl(c, 32 - w);
    let mag_mask = ((1i32 << (w - 1)) - 1) << (23 - f.man);
    let bits = simd.and_i(simd.sra(t, 9 + f.man - w), simd.splat_i(i32::MIN | mag_mask));
    let mut v = simd.mul(simd.f32_of(bits), m);
    if f.ieee {
        let e_bits = f.sign_pos - f.man;
        let exp_t = ((1i32 << e_bits) - 1) << (32 - w + f.man);
        let special = simd.eq_i(simd.and_i(t, simd.splat_i(exp_t)), simd.splat_i(exp_t));
        v = simd.select(special, simd.f32_of(simd.or_i(bits, simd.splat_i(0x7f80_0000))), v);
    }
    if f.nan_all_ones {
        let mag_t = i32::MAX & !((1i32 << (32 - w)) - 1);
        v = simd.select(simd.eq_i(simd.and_i(t, simd.splat_i(mag_t)), simd.splat_i(mag_t)), simd.splat(f32::NAN), v);
    }
    if f.nan_is_neg_zero {
        v = simd.select(simd.eq_i(t, simd.splat_i(i32::MIN)), simd.splat(f32::NAN), v);
    }
    v
}

/// `decode(encode(q))` as f32 without the codes (fake quantization's grid), for the lanes
/// whose magnitude `|q|` (returned second) is below [`MiniFormat::overflow_from`]; the other
/// lanes (overflow, NaN) are replaced by [`round_minifloat_specials`]. In f32 arithmetic
/// (the division's environment: round to nearest even, no flushing):
///
/// ```text
/// E   = max(bits(|q|) & 0x7f80_0000, bits(2^emin))  // |q|'s binade 2^e, the subnormals' e = emin
/// big = f32(E + ((23 - M) << 23))                    // 2^(e + 23 - M)
/// r   = (|q| + big) - big                            // |q| rounded to a multiple of 2^(e - M)
/// v   = r | sign(q)                                  // fnuz: no sign where r is zero
/// ```
///
/// `|q| + big` lies in `[big, 2 big]`, whose f32 step is `2^(e - M)`, the format's step in
/// |q|'s binade (its subnormal step below `2^emin`): the addition rounds `|q|` half to even
/// on the format's grid, a mantissa carry included (`2^(e+1)`, the next binade's first
/// value), and the subtraction is exact. Below the overflow boundary the rounding never
/// passes max (the boundary is where it would), and `e` is at most the format's largest
/// exponent. A zero result keeps q's sign (a negative quotient that rounds to zero is the
/// code -0), except in the fnuz formats, which have no -0. No operand is subnormal unless
/// q is.
///
/// `sq` carries q's sign and NaN lanes: `q` itself, or where `q` comes from Markstein's
/// division, its first product `x * r` (the corrected `q` is then NaN for an infinite or
/// huge quotient, and may be +0 for one below f32's subnormals: the same grid value).
#[inline(always)]
pub(crate) fn round_minifloat<S: Simd>(simd: S, q: S::F, sq: S::F, f: &MiniFormat) -> (S::F, S::F) {
    let a = simd.f32_of(simd.and_i(simd.bits(q), simd.splat_i(i32::MAX)));
    let e = simd.max_i(simd.and_i(simd.bits(a), simd.splat_i(0x7f80_0000)), simd.splat_i((f.emin() + 127) << 23));
    let big = simd.f32_of(simd.add_i(e, simd.splat_i((23 - f.man as i32) << 23)));
    let r = simd.sub(simd.add(a, big), big);
    let sign = simd.and_i(simd.bits(sq), simd.splat_i(i32::MIN));
    let v = simd.f32_of(simd.or_i(simd.bits(r), sign));
    let v = if f.unsigned_zero { simd.select(simd.eq(r, simd.splat(0.0)), r, v) } else { v };
    (v, a)
}

/// [`round_minifloat`]'s `v` with the lanes whose `|q|` (`a`, its second result) is at or
/// past the overflow boundary replaced: a NaN quotient gives the canonical NaN (float4 /
/// float6 have no NaN: the zero of the opposite sign, `-0` for `+NaN`, as their encoder's
/// ml_dtypes parity codes); an overflow (`±inf` included) gives `±max` with saturation,
/// else `±inf` in the IEEE format (e5m2) and the canonical NaN in the others.
#[inline(always)]
pub(crate) fn round_minifloat_specials<S: Simd>(simd: S, a: S::F, sq: S::F, v: S::F, f: &MiniFormat) -> S::F {
    let sign = simd.and_i(simd.bits(sq), simd.splat_i(i32::MIN));
    let canonical = simd.splat(qdq_ref::float::CANONICAL_NAN);
    let over = simd.lt_i(simd.splat_i(f.overflow_from() - 1), simd.bits(a));
    let ovf = if f.ovf[0] == f.max_code {
        simd.f32_of(simd.or_i(sign, simd.splat_i(f.max_bits())))
    } else if f.ieee {
        simd.f32_of(simd.or_i(sign, simd.splat_i(0x7f80_0000)))
    } else {
        canonical
    };
    let v = simd.select(over, ovf, v);
    let has_nan = f.ieee || f.nan_all_ones || f.nan_is_neg_zero;
    let nan = if has_nan { canonical } else { simd.f32_of(simd.xor_i(sign, simd.splat_i(i32::MIN))) };
    simd.select(simd.is_nan(sq), nan, v)
}

/// Widens f16 bit patterns (low 16 bits of each lane) to f32, exactly, as IEEE 754 (and
/// F16C, NEON, `half`) convert: a NaN keeps its sign and payload and comes out quiet.
#[inline(always)]
pub(crate) fn f16_bits_to_f32<S: Simd>(simd: S, h: S::I) -> S::F {
    let v = decode_minifloat(simd, h, &MiniFormat::F16_ROUND);
    simd.select(simd.is_nan(v), simd.f32_of(simd.or_i(simd.bits(v), simd.splat_i(0x0040_0000))), v)
}

/// [`Simd::f32_to_f16_bits`] from the float codec: RNE, IEEE overflow, and a NaN as
/// IEEE 754 hardware narrows it (sign, quiet bit, the top 10 payload bits).
#[inline(always)]
pub(crate) fn f32_to_f16_bits_generic<S: Simd>(simd: S, a: S::F) -> S::I {
    let c = encode_minifloat(simd, a, &MiniFormat::F16_ROUND);
    let b = simd.bits(a);
    let sign = simd.and_i(simd.shr(b, 16), simd.splat_i(0x8000));
    let payload = simd.and_i(simd.shr(b, 13), simd.splat_i(0x3ff));
    let nan = simd.or_i(sign, simd.or_i(simd.splat_i(0x7e00), payload));
    simd.select_i(simd.is_nan(a), nan, c)
}

/// bf16 bit patterns (low 16 bits) to f32: the top half of the f32 pattern.
#[inline(always)]
pub(crate) fn bf16_bits_to_f32<S: Simd>(simd: S, h: S::I) -> S::F {
    simd.f32_of(simd.shl(h, 16))
}

/// Rounds f32 lanes to bf16 (RNE; NaN to the quiet NaN of its sign, `0x7fc0` or
/// `0xffc0`, as the reference encodes it) and returns the bf16 bit patterns, zero-extended.
///
/// bf16 is the upper half of f32 with the same exponent range, so RNE is an add on the
/// bit pattern: `(b + 0x7fff + ((b >> 16) & 1)) >> 16`. Subnormals, the carry into the
/// exponent and the overflow to infinity come out of the add; only NaN (whose payload
/// could carry into the exponent or the sign) takes a select. The general float encoder
/// gives the same codes (`f32_to_bf16_bits_generic`, the tests' oracle).
#[inline(always)]
pub(crate) fn f32_to_bf16_bits<S: Simd>(simd: S, v: S::F) -> S::I {
    let b = simd.bits(v);
    let nan = simd.or_i(simd.and_i(simd.shr(b, 16), simd.splat_i(0x8000)), simd.splat_i(0x7fc0));
    simd.select_i(simd.is_nan(v), nan, bf16_rne_bits(simd, v))
}

/// [`f32_to_bf16_bits`] without its NaN select: right for every lane that is not NaN, and
/// for the quiet NaN `0x7fc00000` (code `0x7fc0`), the canonical NaN of the outputs.
#[inline(always)]
pub(crate) fn bf16_rne_bits<S: Simd>(simd: S, v: S::F) -> S::I {
    let b = simd.bits(v);
    let odd = simd.and_i(simd.shr(b, 16), simd.splat_i(1));
    simd.shr(simd.add_i(simd.add_i(b, odd), simd.splat_i(0x7fff)), 16)
}

/// [`f32_to_bf16_bits`] by the general float encoder (the tests' oracle).
#[cfg(test)]
pub(crate) fn f32_to_bf16_bits_generic<S: Simd>(simd: S, v: S::F) -> S::I {
    encode_minifloat(simd, v, &MiniFormat::BF16_ROUND)
}

/// Rounds f32 lanes to the nearest f16 value (as f32): [`Simd::round_f16`].
#[inline(always)]
pub(crate) fn round_f16<S: Simd>(simd: S, v: S::F) -> S::F {
    simd.round_f16(v)
}

/// [`Simd::round_f16`] from the narrowing and the float codec's decode.
#[inline(always)]
pub(crate) fn round_f16_generic<S: Simd>(simd: S, v: S::F) -> S::F {
    // The narrowing already made every NaN quiet: the plain decode widens it as is.
    decode_minifloat(simd, simd.f32_to_f16_bits(v), &MiniFormat::F16_ROUND)
}

/// Rounds f32 lanes to the nearest bf16 value (as f32).
#[inline(always)]
pub(crate) fn round_bf16<S: Simd>(simd: S, v: S::F) -> S::F {
    bf16_bits_to_f32(simd, f32_to_bf16_bits(simd, v))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::isa::scalar::Scalar;
    const L: usize = <Scalar as Simd>::LANES;

    /// The quantized type and saturation mode of a compile-time format id (the inverse of
    /// [`MiniFormat::id`]; e2m1's one id with `saturate`).
    fn type_of_id(id: u8) -> (qdq_ref::DataType, bool) {
        qdq_ref::DataType::QUANTIZED
            .into_iter()
            .flat_map(|t| [(t, true), (t, false)])
            .find(|&(t, sat)| MiniFormat::id(t, sat) == id)
            .unwrap()
    }

    #[test]
    fn byte_route_constants() {
        for id in 2..=12u8 {
            let f = MiniFormat::of_id(id);
            let Some(r) = f.byte_route() else {
                panic!("id {id}: every small float format has the route");
            };
            assert!(MiniFormat::has_x4_route(id), "id {id}: a route the kernels do not use");
            assert_eq!(r.unsigned_zero, f.unsigned_zero, "id {id}");
            assert_eq!(r.sign_bit as i32, 1 << f.sign_pos, "id {id}");
            // The route (scalar lanes, then the packs' i16 step) gives the clamp the
            // overflow code, the largest finite value the largest code, zero 0, and NaN a
            // code the packs saturate.
            let n = |v: f32| route16(&r, v, byte_route_mag(Scalar, [v; L], &r)[0]) as i32;
            assert_eq!(n(r.limit), f.ovf[0], "id {id}");
            let ref_f = qdq_ref::float::FloatFormat::of(type_of_id(id).0).unwrap();
            let max = ref_f.decode(f.max_code as u32) as f32;
            assert!(max <= r.limit && n(max) == f.max_code, "id {id}");
            assert_eq!(n(0.0), 0, "id {id}");
            assert!(n(f32::from_bits(0x7f80_0001)) > 255 && n(f32::NAN) > 255, "id {id}");
            assert!(f.ovf[0] <= r.cap as i32 && r.cap as i32 == f.nan[0], "id {id}");
            // The smallest normal is `min_normal`, where `unit` gives the multiplier
            // `2^(M - emin)` (the subnormal step's reciprocal), and `bias16` the code 0.
            let step = pow2f(1 - f.bias - f.man as i32);
            assert_eq!(f32::from_bits(r.min_normal as u32), pow2f(1 - f.bias), "id {id}");
            assert_eq!(f32::from_bits(r.unit.wrapping_sub(r.min_normal) as u32) * step, 1.0, "id {id}");
            assert_eq!((r.min_normal >> r.sh) - r.bias16 as i32, 0, "id {id}");
        }
        // Wider formats do not take it.
        assert!(MiniFormat::F16_ROUND.byte_route().is_none());
    }

    /// A byte-route lane after the packs to i16 and the subtract of `bias16`, from the
    /// scalar ISA's `byte_route_mag` lane `w` of `v`, as the x86 ISAs (its only users)
    /// compute it: their conversion gives a NaN `i32::MIN` (the integer indefinite), where
    /// the scalar `cvt_rne` leaves it unspecified.
    fn route16(r: &ByteRoute, v: f32, w: i32) -> i16 {
        let w = if v.is_nan() { i32::MIN.wrapping_add(0x7f80_0000 >> r.sh) } else { w };
        (w.clamp(-32768, 32767) as i16).wrapping_sub(r.bias16)
    }

    /// The byte route's magnitude codes (on the scalar ISA), with the packs' saturation,
    /// the cap and the sign as the AVX2 store applies them, against the reference encoder
    /// on every 4099th f32 pattern, the smallest patterns, and the neighbours of every
    /// code's value and midpoint.
    /// (`cargo xtask exhaustive` runs all 2^32 through the kernels of every ISA.)
    #[test]
    fn byte_route_matches_the_reference() {
        for id in 2..=12u8 {
            let f = MiniFormat::of_id(id);
            let r = f.byte_route().unwrap();
            let (t, sat) = type_of_id(id);
            let rf = qdq_ref::float::FloatFormat::of(t).unwrap();
            let mut xs: Vec<u32> = (0..=u32::MAX / 4099).map(|i| i * 4099).collect();
            for c in 0..=rf.max_code() {
                let v = rf.decode(c) as f32;
                // Above the largest code: the next value the format's step would give (its
                // midpoint is the saturation / overflow boundary).
                let next =
                    if c < rf.max_code() { rf.decode(c + 1) as f32 } else { f32::from_bits(v.to_bits() + (1 << r.sh)) };
                for w in [v, (v + next) / 2.0] {
                    for d in -2i32..=2 {
                        let b = w.to_bits().wrapping_add(d as u32);
                        xs.extend([b, b | 0x8000_0000]);
                    }
                }
            }
            // Small patterns, whose low bits the sign's packs keep.
            xs.extend((0..=300u32).flat_map(|b| [b, b | 0x8000_0000]));
            xs.extend([0x7f80_0000, 0xff80_0000, 0x7f80_0001, 0xffc0_0000, 0x8000_0000, 0, 1, 0x8000_0001]);
            for chunk in xs.chunks(L) {
                let mut q = [0f32; L];
                for (qk, &b) in q.iter_mut().zip(chunk) {
                    *qk = f32::from_bits(b);
                }
                let mag = byte_route_mag(Scalar, q, &r);
                for (l, &b) in chunk.iter().enumerate() {
                    // The packs to bytes and `cap`.
                    let byte = (route16(&r, q[l], mag[l]).clamp(0, 255) as u8).min(r.cap);
                    // The sign byte as the packs leave it (saturated to i16, then i8),
                    // spread for a sign bit below bit 7.
                    let s8 = (b as i32).clamp(-128, 127) as i8;
                    let mut sign = if r.sign_bit == 0x80 { s8 as u8 & 0x80 } else { ((s8 >> 7) as u8) & r.sign_bit };
                    if r.unsigned_zero && !(1..=0x7f).contains(&byte) {
                        sign = 0;
                    }
                    let got = byte ^ sign;
                    let want = rf.encode(f32::from_bits(b) as f64, sat) as u8;
                    assert_eq!(got, want, "id {id}: x = {:#010x} ({:e})", b, f32::from_bits(b));
                }
            }
        }
    }

    /// [`MiniFormat::overflow_from`] is the training mask's boundary: every f32 pattern
    /// around it and around each code's midpoint, the specials, and every 4099th pattern,
    /// both signs, against the reference's `representable`.
    #[test]
    fn overflow_from_is_the_mask_boundary() {
        for id in 2..=12u8 {
            let f = MiniFormat::of_id(id);
            let t = type_of_id(id).0;
            let rf = qdq_ref::float::FloatFormat::of(t).unwrap();
            let limit = f.overflow_from();
            let mut xs: Vec<u32> = (0..=u32::MAX / 4099).map(|i| i * 4099).collect();
            xs.extend((-300i32..=300).map(|d| limit.wrapping_add(d) as u32));
            for c in 0..=rf.max_code() {
                let v = (rf.decode(c) as f32).to_bits();
                xs.extend((-2i32..=2).map(|d| v.wrapping_add(d as u32)));
            }
            xs.extend([0x7f80_0000, 0x7f80_0001, 0x7fc0_0000, 0x7fff_ffff, 0, 1]);
            for b in xs.into_iter().flat_map(|b| [b & 0x7fff_ffff, b | 0x8000_0000]) {
                let q = f32::from_bits(b);
                let want = qdq_ref::quantize::representable(q as f64, None, t);
                assert_eq!(((b & 0x7fff_ffff) as i32) < limit, want, "id {id}: q = {b:#010x} ({q:e})");
            }
        }
    }

    /// [`round_minifloat`] (with [`round_minifloat_specials`] where the lane is not below
    /// `overflow_from`) is the reference's `decode(encode(q))` bit for bit, NaN as the
    /// canonical NaN, for every compile-time format: every 4099th f32 pattern, each code's
    /// value and midpoints ±2 patterns, the overflow boundary ±300, small patterns and the
    /// specials, both signs. (`cargo xtask exhaustive` runs all 2^32 through fake
    /// quantization on every ISA.)
    #[test]
    fn round_minifloat_is_decode_of_encode() {
        for id in 2..=12u8 {
            let f = MiniFormat::of_id(id);
            let (t, sat) = type_of_id(id);
            let rf = qdq_ref::float::FloatFormat::of(t).unwrap();
            let limit = f.overflow_from();
            let mut xs: Vec<u32> = (0..=u32::MAX / 4099).map(|i| i * 4099).collect();
            xs.extend((-300i32..=300).map(|d| limit.wrapping_add(d) as u32));
            for c in 0..=rf.max_code() {
                let v = rf.decode(c) as f32;
                let next = if c < rf.max_code() { rf.decode(c + 1) as f32 } else { 2.0 * v };
                for w in [v, (v + next) / 2.0] {
                    xs.extend((-2i32..=2).map(|d| w.to_bits().wrapping_add(d as u32)));
                }
            }
            xs.extend(0..=300u32);
            xs.extend([0x7f80_0000, 0x7f80_0001, 0x7fc0_0000, 0x7fff_ffff, 0x7f7f_ffff]);
            let xs: Vec<u32> = xs.into_iter().flat_map(|b| [b & 0x7fff_ffff, b | 0x8000_0000]).collect();
            for chunk in xs.chunks(L) {
                let mut q = [0f32; L];
                for (qk, &b) in q.iter_mut().zip(chunk) {
                    *qk = f32::from_bits(b);
                }
                let (v, a) = round_minifloat(Scalar, q, q, &f);
                let fixed = round_minifloat_specials(Scalar, a, q, v, &f);
                for (l, &b) in chunk.iter().enumerate() {
                    let fits = a[l] < f32::from_bits(limit as u32);
                    let got = if fits { v[l] } else { fixed[l] };
                    assert_eq!(fixed[l].to_bits(), got.to_bits(), "id {id}: the specials changed a lane that fits");
                    let want = rf.decode(rf.encode(f32::from_bits(b) as f64, sat)) as f32;
                    let want = if want.is_nan() { qdq_ref::float::CANONICAL_NAN } else { want };
                    assert_eq!(got.to_bits(), want.to_bits(), "id {id}: q = {b:#010x} ({:e})", f32::from_bits(b));
                }
            }
            // Markstein's corrected quotient as `q`, its first product as `sq`: NaN for an
            // infinite or huge quotient, +0 for one below f32's subnormals.
            for (q, sq) in [(f32::NAN, f32::INFINITY), (f32::NAN, f32::MAX), (f32::NAN, 1e30), (0.0, 1e-45), (0.0, 0.0)]
            {
                for sq in [sq, -sq] {
                    let (v, a) = round_minifloat(Scalar, [q; L], [sq; L], &f);
                    let got = round_minifloat_specials(Scalar, a, [sq; L], v, &f)[0];
                    let want = rf.decode(rf.encode(sq as f64, sat)) as f32;
                    let want = if want.is_nan() { qdq_ref::float::CANONICAL_NAN } else { want };
                    assert_eq!(got.to_bits(), want.to_bits(), "id {id}: q = {q:e}, sq = {sq:e}");
                }
            }
        }
    }

    #[test]
    fn lut16_is_the_float4_decode() {
        for c in 0..16u32 {
            let i = 4 * c as usize;
            let t = &E2M1_LUT;
            let got = f32::from_le_bytes([t[i], t[i + 1], t[i + 2], t[i + 3]]);
            let want = qdq_ref::float::E2M1.decode(c) as f32;
            assert_eq!(got.to_bits(), want.to_bits(), "code {c:#x}");
        }
        // The table is only for 4-bit formats; e2m1 is the only one.
        assert!(lut16(&qdq_ref::float::E4M3FN).iter().all(|&b| b == 0));
        for t in qdq_ref::DataType::QUANTIZED {
            if let Some(f) = qdq_ref::float::FloatFormat::of(t) {
                assert_eq!(f.exp_bits + f.man_bits == 3, t == qdq_ref::DataType::E2M1, "{t:?}");
            }
        }
    }
}
