//! Low-precision float codecs: float8 (four flavours), float6 (two), float4, e8m0, and the
//! IEEE f16 / bf16 / f32 roundings used for the division precision.
//!
//! # One generic codec
//!
//! A format with `E` exponent bits, `M` mantissa bits and bias `b` stores a magnitude code
//! `c = e << M | m`. With `emin = 1 - b`:
//!
//! * `e == 0` (subnormal): value `= m * 2^(emin - M)`;
//! * `e > 0`  (normal):    value `= (2^M + m) * 2^(e - 1 + emin - M)`.
//!
//! Because consecutive codes are consecutive representable magnitudes, encoding is:
//!
//! * `|v| < 2^emin`: `c = RNE(|v| * 2^(M - emin))` (this may round up to `2^M`, the
//!   smallest normal, which is exactly the right code);
//! * otherwise with `k = floor(log2 |v|)`: `c = ((k - emin) << M) + RNE(|v| * 2^(M - k))`
//!   (the mantissa may round up to `2^(M+1)`, carrying into the exponent, again exactly the
//!   right code).
//!
//! Multiplying an `f64` by a power of two is exact, so the only rounding is the single
//! `round_ties_even`: the encoding is correctly rounded (round half to even, at the target
//! precision, subnormals included). Every input this crate rounds is an `f64` that holds an
//! f32, f16, bf16 or an f64 quotient exactly, so there is no double rounding.
//!
//! # Special values (the ONNX Cast-24+ conversion tables)
//!
//! | flavour | types | NaN in | overflow / ±inf, saturate=1 | overflow, saturate=0 | ±inf, saturate=0 | -0 |
//! |---|---|---|---|---|---|---|
//! | IEEE | e5m2, f16, bf16 | `S.11111.10` (quiet, sign kept) | ±max | ±inf | ±inf | kept |
//! | FN | e4m3fn | `S.1111.111` (sign kept) | ±max | NaN (sign kept) | NaN (sign kept) | kept |
//! | FNUZ | e4m3fnuz, e5m2fnuz | `0x80` | ±max | `0x80` | `0x80` | becomes +0 |
//! | finite | e2m1, e2m3, e3m2 | see below | ±max | ±max (always saturates) | ±max | kept |
//!
//! "Overflow" means the *rounded* magnitude exceeds max: e4m3fn 464 (the tie between 448
//! and the non-existent 480) rounds to 448 (even mantissa) and is not an overflow, while
//! e5m2 61440 (the tie between 57344 and 65536) rounds up and is.
//!
//! float4/float6 have no NaN. The ONNX reference (ml_dtypes) maps +NaN to the
//! negative-zero code (0x8 / 0x20) and -NaN to +0; this crate does the same so that it is
//! bit-identical to the reference there too. It is implementation-defined in the spec.
//!
//! # e8m0
//!
//! Code `k` is `2^(k-127)` (code 0 is 2^-127, a subnormal f32; there is no zero and no
//! sign) and 0xff is NaN. It is only ever a scale, so only decoding matters for the ops;
//! [`encode_e8m0`] implements the Cast-24 rounding modes for completeness.

use crate::dtype::DataType;

/// How a format represents NaN and infinity.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Flavour {
    /// IEEE-like: all-ones exponent is ±inf (mantissa 0) or NaN.
    Ieee,
    /// Finite (FN): no infinity; only the all-ones code `S.1..1.1..1` is NaN.
    Fn,
    /// Finite, unsigned zero (FNUZ): no infinity, no -0; `0x80` (the -0 code) is the only NaN.
    Fnuz,
    /// No infinity and no NaN at all (float4 / float6).
    Finite,
}

/// A binary floating-point format of at most 16 bits.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct FloatFormat {
    /// Exponent field width.
    pub exp_bits: u32,
    /// Mantissa field width.
    pub man_bits: u32,
    /// Exponent bias.
    pub bias: i32,
    /// NaN / infinity conventions.
    pub flavour: Flavour,
}

/// IEEE binary16.
pub const F16: FloatFormat = FloatFormat::new(5, 10, 15, Flavour::Ieee);
/// bfloat16.
pub const BF16: FloatFormat = FloatFormat::new(8, 7, 127, Flavour::Ieee);
/// IEEE binary32 (used only for rounding; its storage is `f32` itself).
pub const F32: FloatFormat = FloatFormat::new(8, 23, 127, Flavour::Ieee);
/// float8e4m3fn.
pub const E4M3FN: FloatFormat = FloatFormat::new(4, 3, 7, Flavour::Fn);
/// float8e4m3fnuz.
pub const E4M3FNUZ: FloatFormat = FloatFormat::new(4, 3, 8, Flavour::Fnuz);
/// float8e5m2.
pub const E5M2: FloatFormat = FloatFormat::new(5, 2, 15, Flavour::Ieee);
/// float8e5m2fnuz.
pub const E5M2FNUZ: FloatFormat = FloatFormat::new(5, 2, 16, Flavour::Fnuz);
/// float4e2m1.
pub const E2M1: FloatFormat = FloatFormat::new(2, 1, 1, Flavour::Finite);
/// float6e2m3.
pub const E2M3: FloatFormat = FloatFormat::new(2, 3, 1, Flavour::Finite);
/// float6e3m2.
pub const E3M2: FloatFormat = FloatFormat::new(3, 2, 3, Flavour::Finite);

impl FloatFormat {
    /// Builds a format description.
    ///
    /// ```
    /// use qdq_ref::float::{FloatFormat, Flavour, E4M3FN};
    /// let f = FloatFormat::new(4, 3, 7, Flavour::Fn);
    /// assert_eq!(f, E4M3FN);
    /// assert_eq!(f.max_value(), 448.0);
    /// ```
    pub const fn new(exp_bits: u32, man_bits: u32, bias: i32, flavour: Flavour) -> Self {
        FloatFormat { exp_bits, man_bits, bias, flavour }
    }

    /// The format of a float element type, `None` for integer types, f32 and e8m0.
    ///
    /// ```
    /// use qdq_ref::float::{FloatFormat, E2M1};
    /// use qdq_ref::DataType;
    /// assert_eq!(FloatFormat::of(DataType::E2M1), Some(E2M1));
    /// assert_eq!(FloatFormat::of(DataType::F32), None);
    /// assert_eq!(FloatFormat::of(DataType::E8M0), None);
    /// ```
    pub fn of(t: DataType) -> Option<FloatFormat> {
        Some(match t {
            DataType::F16 => F16,
            DataType::Bf16 => BF16,
            DataType::E4M3Fn => E4M3FN,
            DataType::E4M3FnUz => E4M3FNUZ,
            DataType::E5M2 => E5M2,
            DataType::E5M2FnUz => E5M2FNUZ,
            DataType::E2M1 => E2M1,
            DataType::E2M3 => E2M3,
            DataType::E3M2 => E3M2,
            _ => return None,
        })
    }

    /// Total width in bits (sign + exponent + mantissa).
    ///
    /// ```
    /// use qdq_ref::float::{E2M3, E4M3FN, F16};
    /// assert_eq!(E2M3.bits(), 6);
    /// assert_eq!(E4M3FN.bits(), 8);
    /// assert_eq!(F16.bits(), 16);
    /// ```
    pub const fn bits(&self) -> u32 {
        1 + self.exp_bits + self.man_bits
    }

    /// The sign bit.
    ///
    /// ```
    /// use qdq_ref::float::{E2M1, E4M3FN, F16};
    /// assert_eq!(E4M3FN.sign_bit(), 0x80);
    /// assert_eq!(E2M1.sign_bit(), 0x8);
    /// assert_eq!(F16.sign_bit(), 0x8000);
    /// ```
    pub const fn sign_bit(&self) -> u32 {
        1 << (self.exp_bits + self.man_bits)
    }

    const fn emin(&self) -> i32 {
        1 - self.bias
    }

    /// The largest finite magnitude code.
    ///
    /// ```
    /// use qdq_ref::float::{E4M3FN, E4M3FNUZ, E5M2};
    /// assert_eq!(E4M3FN.max_code(), 0x7e); // 0x7f is NaN
    /// assert_eq!(E4M3FNUZ.max_code(), 0x7f);
    /// assert_eq!(E5M2.max_code(), 0x7b); // 0x7c is infinity
    /// ```
    pub const fn max_code(&self) -> u32 {
        let all = (1u32 << (self.exp_bits + self.man_bits)) - 1;
        match self.flavour {
            // The all-ones exponent is reserved for inf / NaN.
            Flavour::Ieee => all - (1 << self.man_bits),
            // Only S.1..1.1..1 is NaN.
            Flavour::Fn => all - 1,
            Flavour::Fnuz | Flavour::Finite => all,
        }
    }

    /// The largest finite value.
    ///
    /// ```
    /// use qdq_ref::float::{E2M1, E4M3FN, E5M2, F16};
    /// assert_eq!(E4M3FN.max_value(), 448.0);
    /// assert_eq!(E5M2.max_value(), 57344.0);
    /// assert_eq!(E2M1.max_value(), 6.0);
    /// assert_eq!(F16.max_value(), 65504.0);
    /// ```
    pub fn max_value(&self) -> f64 {
        self.decode(self.max_code())
    }

    /// The code produced for NaN of the given sign.
    ///
    /// ```
    /// use qdq_ref::float::{E2M1, E4M3FN, E4M3FNUZ, E5M2};
    /// assert_eq!(E5M2.nan_code(false), 0x7e);
    /// assert_eq!(E4M3FN.nan_code(true), 0xff);
    /// assert_eq!(E4M3FNUZ.nan_code(true), 0x80);
    /// assert_eq!(E2M1.nan_code(false), 0x8); // no NaN: +NaN gives the -0 code
    /// ```
    pub const fn nan_code(&self, negative: bool) -> u32 {
        let s = if negative { self.sign_bit() } else { 0 };
        match self.flavour {
            // Quiet NaN: all-ones exponent, top mantissa bit.
            Flavour::Ieee => s | (((1 << self.exp_bits) - 1) << self.man_bits) | (1 << (self.man_bits - 1)),
            Flavour::Fn => s | (self.sign_bit() - 1),
            Flavour::Fnuz => self.sign_bit(),
            // ml_dtypes parity: +NaN -> the -0 code, -NaN -> +0 (implementation-defined).
            Flavour::Finite => {
                if negative {
                    0
                } else {
                    self.sign_bit()
                }
            }
        }
    }

    /// Whether `code` is a NaN of this format.
    ///
    /// ```
    /// use qdq_ref::float::{E2M1, E4M3FN, E4M3FNUZ, E5M2};
    /// assert!(E5M2.is_nan(0x7d) && !E5M2.is_nan(0x7c)); // 0x7c is +inf
    /// assert!(E4M3FN.is_nan(0xff) && !E4M3FN.is_nan(0x80)); // 0x80 is -0
    /// assert!(E4M3FNUZ.is_nan(0x80));
    /// assert!(!E2M1.is_nan(0x8));
    /// ```
    pub const fn is_nan(&self, code: u32) -> bool {
        let mag = code & (self.sign_bit() - 1);
        match self.flavour {
            Flavour::Ieee => mag > (((1 << self.exp_bits) - 1) << self.man_bits),
            Flavour::Fn => mag == self.sign_bit() - 1,
            Flavour::Fnuz => code == self.sign_bit(),
            Flavour::Finite => false,
        }
    }

    /// Decodes a code (only the low `bits()` bits are looked at) to its exact value.
    ///
    /// ```
    /// use qdq_ref::float::{E2M1, E4M3FN, E5M2};
    /// assert_eq!(E4M3FN.decode(0x38), 1.0);
    /// assert_eq!(E4M3FN.decode(0x01), 2f64.powi(-9)); // smallest subnormal
    /// assert_eq!(E5M2.decode(0xfc), f64::NEG_INFINITY);
    /// assert_eq!(E2M1.decode(0x17), 6.0); // only the low 4 bits count
    /// ```
    pub fn decode(&self, code: u32) -> f64 {
        let code = (code as u64 & ((1u64 << self.bits()) - 1)) as u32;
        if self.is_nan(code) {
            let nan = f64::NAN;
            return if code & self.sign_bit() != 0 && self.flavour != Flavour::Fnuz { -nan } else { nan };
        }
        let negative = code & self.sign_bit() != 0;
        let mag = code & (self.sign_bit() - 1);
        let e = (mag >> self.man_bits) as i32;
        let m = (mag & ((1 << self.man_bits) - 1)) as f64;
        let v = if self.flavour == Flavour::Ieee && e == (1 << self.exp_bits) - 1 {
            f64::INFINITY
        } else if e == 0 {
            m * pow2(self.emin() - self.man_bits as i32)
        } else {
            (pow2(self.man_bits as i32) + m) * pow2(e - 1 + self.emin() - self.man_bits as i32)
        };
        if negative {
            -v
        } else {
            v
        }
    }

    /// Encodes `v` with round-half-to-even; `saturate` as in the table of the module docs
    /// (ignored by the `Finite` flavour, which always saturates).
    ///
    /// ```
    /// use qdq_ref::float::{E2M1, E4M3FN, E4M3FNUZ};
    /// assert_eq!(E4M3FN.encode(1.0, true), 0x38);
    /// assert_eq!(E4M3FN.encode(464.0, false), 0x7e); // the tie rounds down to 448
    /// assert_eq!(E4M3FN.encode(500.0, true), 0x7e);
    /// assert_eq!(E4M3FN.encode(500.0, false), 0x7f); // NaN
    /// assert_eq!(E4M3FNUZ.encode(-0.0, true), 0x00);
    /// assert_eq!(E2M1.encode(100.0, false), 0x7); // always saturates
    /// ```
    pub fn encode(&self, v: f64, saturate: bool) -> u32 {
        let negative = v.is_sign_negative();
        let sign = if negative { self.sign_bit() } else { 0 };
        if v.is_nan() {
            return self.nan_code(negative);
        }
        let saturate = saturate || self.flavour == Flavour::Finite;
        let overflow = || -> u32 {
            if saturate {
                sign | self.max_code()
            } else {
                match self.flavour {
                    Flavour::Ieee => sign | (((1 << self.exp_bits) - 1) << self.man_bits),
                    Flavour::Fn | Flavour::Fnuz => self.nan_code(negative),
                    Flavour::Finite => unreachable!("finite formats always saturate"),
                }
            }
        };
        let a = v.abs();
        if a.is_infinite() {
            return overflow();
        }
        let code = self.magnitude_code(a);
        if code > self.max_code() as u64 {
            return overflow();
        }
        let code = code as u32;
        if code == 0 && self.flavour == Flavour::Fnuz {
            return 0; // no -0: negative underflow must not produce 0x80 (NaN)
        }
        sign | code
    }

    /// The RNE magnitude code of a finite `a >= 0`, before any overflow handling: codes
    /// above [`FloatFormat::max_code`] mean the rounded magnitude overflows.
    fn magnitude_code(&self, a: f64) -> u64 {
        let m = self.man_bits as i32;
        let emin = self.emin();
        // Anything at or above 2^(emax + 2) certainly overflows; the bound keeps the
        // shifts below small.
        let emax = (1i32 << self.exp_bits) + emin;
        if a < pow2(emin) {
            (a * pow2(m - emin)).round_ties_even() as u64
        } else if a >= pow2(emax + 1) {
            u64::MAX
        } else {
            let k = floor_log2(a);
            let mant = (a * pow2(m - k)).round_ties_even() as u64;
            (((k - emin) as u64) << m) + mant
        }
    }

    /// Whether `v` converts to a finite value of this format without saturating: it is not
    /// NaN, not infinite, and its RNE rounding does not exceed the largest finite value
    /// (a value that rounds to exactly ±max is in range). Independent of `saturate`.
    ///
    /// ```
    /// use qdq_ref::float::{E4M3FN, E5M2};
    /// assert!(E4M3FN.rounds_in_range(-464.0)); // rounds to -448
    /// assert!(!E4M3FN.rounds_in_range(465.0));
    /// assert!(!E4M3FN.rounds_in_range(f64::NAN));
    /// assert!(!E5M2.rounds_in_range(61440.0)); // the tie rounds up to 65536
    /// ```
    pub fn rounds_in_range(&self, v: f64) -> bool {
        let a = v.abs();
        a.is_finite() && self.magnitude_code(a) <= self.max_code() as u64
    }

    /// Rounds `v` to the nearest value of this format (RNE, IEEE overflow to ±inf). Only
    /// meaningful for the IEEE flavour (f16, bf16, f32).
    ///
    /// ```
    /// use qdq_ref::float::{BF16, F16};
    /// assert_eq!(F16.round(2049.0), 2048.0);
    /// assert_eq!(F16.round(65520.0), f64::INFINITY);
    /// assert_eq!(BF16.round(1.0 + 3.0 * 2f64.powi(-8)), 1.0 + 2f64.powi(-6));
    /// ```
    pub fn round(&self, v: f64) -> f64 {
        self.decode(self.encode(v, false))
    }
}

/// `2^e` as an `f64`, exact for `-1074 <= e <= 1023`.
pub(crate) fn pow2(e: i32) -> f64 {
    if e >= -1022 {
        f64::from_bits(((e + 1023) as u64) << 52)
    } else {
        f64::from_bits(1u64 << (e + 1074))
    }
}

/// `floor(log2(a))` for a positive finite normal `a`.
fn floor_log2(a: f64) -> i32 {
    debug_assert!(a.is_normal() && a > 0.0);
    ((a.to_bits() >> 52) & 0x7ff) as i32 - 1023
}

/// Rounding mode of a conversion to e8m0 (ONNX Cast-24 `round_mode`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum E8m0Rounding {
    /// Round up to the next power of two (the ONNX default, used by `make_tensor`).
    Up,
    /// Round down to the previous power of two.
    Down,
    /// Round to the nearest power of two; exact midpoints `1.5 * 2^k` go up.
    Nearest,
}

/// The one NaN every float output of this crate holds: the positive quiet NaN
/// `0x7fc0_0000` (written as f16 it is `0x7e00`, as bf16 `0x7fc0`).
pub const CANONICAL_NAN: f32 = f32::from_bits(0x7fc0_0000);

/// `v`, or [`CANONICAL_NAN`] if `v` is any NaN.
///
/// IEEE 754 leaves the sign and payload of a NaN produced by arithmetic unspecified, and
/// hardware disagrees (x86's default NaN is negative, Arm's positive; which operand's NaN
/// propagates depends on an order the compiler may swap). Every float output (DequantizeLinear
/// in f32 / f16 / bf16, fake quantization, and every training gradient) therefore goes
/// through this rule, so that all ISAs, thread counts and this reference agree bit for bit.
///
/// ```
/// use qdq_ref::float::{canonical_nan, CANONICAL_NAN};
/// assert_eq!(canonical_nan(f32::from_bits(0xffc0_0001)).to_bits(), 0x7fc0_0000);
/// assert_eq!(canonical_nan(-2.5), -2.5);
/// assert_eq!(CANONICAL_NAN.to_bits(), 0x7fc0_0000);
/// ```
#[inline]
pub fn canonical_nan(v: f32) -> f32 {
    if v.is_nan() {
        CANONICAL_NAN
    } else {
        v
    }
}

/// Decodes an e8m0 code: `2^(k - 127)`, 0xff is NaN.
///
/// ```
/// use qdq_ref::float::decode_e8m0;
/// assert_eq!(decode_e8m0(127), 1.0);
/// assert_eq!(decode_e8m0(130), 8.0);
/// assert_eq!(decode_e8m0(0), 2f32.powi(-127));
/// assert!(decode_e8m0(0xff).is_nan());
/// ```
pub fn decode_e8m0(code: u8) -> f32 {
    if code == 0xff {
        f32::NAN
    } else {
        pow2(code as i32 - 127) as f32
    }
}

/// Encodes a value as e8m0. NaN, ±inf, values beyond 2^127 and negative values (whose
/// conversion ONNX leaves unspecified) give 0xff (NaN); zero and tiny values give code 0
/// (2^-127, the smallest value).
///
/// ```
/// use qdq_ref::float::{encode_e8m0, E8m0Rounding};
/// assert_eq!(encode_e8m0(3.0, E8m0Rounding::Up), 129);
/// assert_eq!(encode_e8m0(3.0, E8m0Rounding::Down), 128);
/// assert_eq!(encode_e8m0(0.3, E8m0Rounding::Nearest), 125);
/// assert_eq!(encode_e8m0(-1.0, E8m0Rounding::Up), 0xff);
/// assert_eq!(encode_e8m0(0.0, E8m0Rounding::Up), 0);
/// ```
pub fn encode_e8m0(v: f32, mode: E8m0Rounding) -> u8 {
    if v == 0.0 {
        return 0; // no zero in e8m0: the smallest code
    }
    if v.is_nan() || v < 0.0 || v.is_infinite() {
        return 0xff;
    }
    let a = v as f64;
    if a <= pow2(-127) {
        return 0; // there is nothing below 2^-127: every mode lands on the smallest code
    }
    let k = floor_log2(a);
    let lower = pow2(k);
    let k = if a == lower {
        k
    } else {
        match mode {
            E8m0Rounding::Down => k,
            E8m0Rounding::Up => k + 1,
            E8m0Rounding::Nearest => {
                if a >= 1.5 * lower {
                    k + 1
                } else {
                    k
                }
            }
        }
    };
    let k = k.max(-127);
    if k > 127 {
        0xff
    } else {
        (k + 127) as u8
    }
}

/// Rounds to f16 with RNE: the IEEE binary16 value nearest to `v`.
///
/// ```
/// use qdq_ref::float::round_f16;
/// assert_eq!(round_f16(2049.0), 2048.0); // tie to even
/// assert_eq!(round_f16(2051.0), 2052.0);
/// assert_eq!(round_f16(65519.0), 65504.0);
/// ```
pub fn round_f16(v: f64) -> f64 {
    F16.round(v)
}

/// Rounds to bf16 with RNE.
///
/// ```
/// use qdq_ref::float::round_bf16;
/// assert_eq!(round_bf16(1.0 + 2f64.powi(-8)), 1.0); // tie to even
/// assert_eq!(round_bf16(1.0 + 3.0 * 2f64.powi(-8)), 1.0 + 2f64.powi(-6));
/// ```
pub fn round_bf16(v: f64) -> f64 {
    BF16.round(v)
}

#[cfg(test)]
mod tests {
    use super::*;
    use half::{bf16, f16};

    #[test]
    fn max_codes_and_values() {
        assert_eq!(E4M3FN.max_code(), 0x7e);
        assert_eq!(E4M3FN.max_value(), 448.0);
        assert_eq!(E4M3FNUZ.max_code(), 0x7f);
        assert_eq!(E4M3FNUZ.max_value(), 240.0);
        assert_eq!(E5M2.max_code(), 0x7b);
        assert_eq!(E5M2.max_value(), 57344.0);
        assert_eq!(E5M2FNUZ.max_code(), 0x7f);
        assert_eq!(E5M2FNUZ.max_value(), 57344.0);
        assert_eq!(E2M1.max_value(), 6.0);
        assert_eq!(E2M3.max_value(), 7.5);
        assert_eq!(E3M2.max_value(), 28.0);
        assert_eq!(F16.max_value(), 65504.0);
    }

    #[test]
    fn f16_and_bf16_agree_with_half_on_every_pattern() {
        for bits in 0..=u16::MAX {
            let h = f16::from_bits(bits);
            let ours = F16.decode(bits as u32);
            assert!(ours.to_bits() == h.to_f64().to_bits() || (ours.is_nan() && h.is_nan()), "f16 {bits:#06x}");
            if !h.is_nan() {
                assert_eq!(F16.encode(ours, false), bits as u32, "f16 {bits:#06x}");
            }
            let b = bf16::from_bits(bits);
            let ours = BF16.decode(bits as u32);
            assert!(ours.to_bits() == b.to_f64().to_bits() || (ours.is_nan() && b.is_nan()), "bf16 {bits:#06x}");
            if !b.is_nan() {
                assert_eq!(BF16.encode(ours, false), bits as u32, "bf16 {bits:#06x}");
            }
        }
    }

    #[test]
    fn f32_rounding_matches_as_cast() {
        let samples = [
            1.0f64 + f64::EPSILON,
            1.0 + 2f64.powi(-24),
            1.0 + 3.0 * 2f64.powi(-24),
            1e-45,
            7e-46,
            -7.1e-46,
            3.5e38,
            3.4028235677973366e38,
            f64::MAX,
            -0.0,
        ];
        for v in samples {
            let ours = F32.round(v);
            let cast = v as f32 as f64;
            assert_eq!(ours.to_bits(), cast.to_bits(), "{v:e}");
        }
    }

    #[test]
    fn f16_ties_and_subnormals() {
        // 2049 lies halfway between 2048 and 2050: even mantissa wins.
        assert_eq!(round_f16(2049.0), 2048.0);
        assert_eq!(round_f16(2051.0), 2052.0);
        // Half the smallest subnormal rounds to zero, 1.5 of it rounds to 2 ulps.
        let u = 2f64.powi(-24);
        assert_eq!(round_f16(0.5 * u), 0.0);
        assert_eq!(round_f16(1.5 * u), 2.0 * u);
        assert_eq!(round_f16(65520.0), f64::INFINITY); // the tie above max overflows
        assert_eq!(round_f16(65519.0), 65504.0);
        assert_eq!(round_bf16(1.0 + 2f64.powi(-8)), 1.0);
        assert_eq!(round_bf16(1.0 + 3.0 * 2f64.powi(-8)), 1.0 + 2f64.powi(-6));
    }

    #[test]
    fn e8m0_codec() {
        assert_eq!(decode_e8m0(127), 1.0);
        assert_eq!(decode_e8m0(0), 2f32.powi(-127));
        assert_eq!(decode_e8m0(0xfe), 2f32.powi(127));
        assert!(decode_e8m0(0xff).is_nan());
        // helper.make_tensor rounds up: [1.0, 0.3, 3.0] -> [127, 126, 129]
        assert_eq!(encode_e8m0(1.0, E8m0Rounding::Up), 127);
        assert_eq!(encode_e8m0(0.3, E8m0Rounding::Up), 126);
        assert_eq!(encode_e8m0(3.0, E8m0Rounding::Up), 129);
        // ml_dtypes rounds to nearest: 0.3 -> 0.25, 3.0 -> 4
        assert_eq!(encode_e8m0(0.3, E8m0Rounding::Nearest), 0x7d);
        assert_eq!(encode_e8m0(3.0, E8m0Rounding::Nearest), 0x81);
        assert_eq!(encode_e8m0(3.0, E8m0Rounding::Down), 128);
        assert_eq!(encode_e8m0(f32::NAN, E8m0Rounding::Up), 0xff);
        assert_eq!(encode_e8m0(-1.0, E8m0Rounding::Up), 0xff);
        assert_eq!(encode_e8m0(f32::INFINITY, E8m0Rounding::Up), 0xff);
        assert_eq!(encode_e8m0(f32::MAX, E8m0Rounding::Up), 0xff);
        assert_eq!(encode_e8m0(f32::MAX, E8m0Rounding::Down), 0xfe);
        assert_eq!(encode_e8m0(0.0, E8m0Rounding::Up), 0);
        assert_eq!(encode_e8m0(1e-45, E8m0Rounding::Up), 0);
    }
}
