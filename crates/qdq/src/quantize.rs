//! QuantizeLinear kernels, written once over [`Simd`].
//!
//! Per vector of `LANES` elements, with the scale `s` (and zero point `z`) broadcast or
//! loaded alongside x:
//!
//! ```text
//! x  = widen(x)                        f16 / bf16 exactly; i32 with RNE (P = f32 only)
//! xp = round_P(x)                      P = f16 / bf16: RNE; f32: identity
//! q  = round_P(xp / sp)                exact quotient (see `divide`), then RNE to P
//! integer: q = NaN ? qmin - z : clamp(q, qmin - z, qmax - z);  y = cvt_rne(q) + z
//! float:   y = encode(q [+ z])         RNE, saturation table of qdq_ref::float
//! ```
//!
//! Clamping before the conversion is the same as clamping after rounding because the bounds
//! are integers, and it keeps every conversion in range (so neither ±inf nor quotients
//! beyond i32 can wrap). The zero point is added after rounding, as the reference does.
//!
//! **Exact division at multiply speed.** With `r = RN(1/s)` computed once per scale:
//! `q0 = x*r; e = fma(-q0, s, x); q = fma(e, r, q0)` is the correctly rounded quotient
//! (Markstein) whenever `s` and `r` are normal and `x` and the residual do not underflow.
//! The kernels use it when `|s|` is in [`FAST_SCALE`] = `[2^-30, 2^30]`: an `x` small enough
//! to break it (`|x| < 2^-96`) then gives `|q| < 2^-66`, which every output type rounds to
//! ±0 whatever its last bits, so integer and float8 outputs need no check. Where the signs
//! of zeros and infinities matter (float outputs), `q0` is selected where the corrected
//! quotient is ±0 (exact products, signed zeros, quotients below the smallest subnormal) or
//! NaN (infinite x or an overflowing quotient, where `q0` is the IEEE result). One case
//! needs more: float4 / float6 with a zero point add it as a float, so `-0 + (+0)` gives
//! the +0 code while a tiny nonzero negative quotient keeps the -0 code. Which one the true
//! quotient is, Markstein's step cannot tell for `|x| <= 2^-96` (e.g. `x = -3 * 2^-149`,
//! `s = 6`: `x / s` ties at `-2^-150` and rounds to -0, but `x * RN(1/6)` is `-2^-149`), so
//! those jobs divide a vector holding such an x with the divide instruction (`redo_tiny`).
//! Scales outside the range always use a true division.
//!
//! The differential tests against `qdq_ref` (ties at `(k + 1/2) s` for random scales
//! included) are the proof of the f32 paths.
//!
//! **16-bit precisions, integer outputs: no correction.** Where the division precision P
//! is f16 or bf16 (`p` = 11 or 8 significand bits), `xp` and `sp` are P values, and the
//! integer fast paths (8-, 4- and, with AVX2's checked conversion, 16-bit outputs) take
//! `round_P(x * r)` for `round_P(xp / sp)`. It is the same P value whenever
//! `|xp / sp| >= 1/4` (below that, both give the integer 0). A quotient of two P values is
//! never a midpoint of P (an odd `p + 1`-bit significand `M` times the odd part `S` of
//! `sp`'s has more than `p` bits), and its distance to a midpoint `m` is at least
//! `m / (M S) >= m / ((2^(p+1) - 1) (2^p - 1)) > m 2^-23 (1 + 2^-11)`, while `x * r` is
//! within `2^-23 (1 + 2^-25)` of the quotient, relatively: no midpoint lies between them.
//! The reference rounds the exact quotient to f64 before P, which holds more than
//! `2p + 2` bits and so changes nothing. NaN and infinite lanes stay NaN and infinite for
//! the conversion check. `every_f16_and_bf16_pattern_with_worst_reciprocals` runs every x
//! against the scales with the least exact reciprocals.
//!
//! Since `x * r` is never a midpoint of P there, these paths round it by Veltkamp's
//! splitting (`Prec::round_split`: `t = v * (2^(24-p) + 1); t - (t - v)`, round to nearest on
//! `p` bits, ties aside) instead of a narrowing and a widening: three multiply / subtract
//! operations against F16C's two conversions (with which a model of the f16 -> i8 step ran
//! about 1.2x slower on Zen 4), or bf16's integer rounding. Its exponent range is f32's, which changes no integer
//! result: f16 quotients at or beyond 65520 (f16's overflow threshold) round to 2^16 or
//! more, finite and beyond every integer range these paths write; an infinite quotient, or
//! one whose product overflows (`|v| >= 2^112` or so, bf16 only), becomes NaN, which the
//! conversion check sends to the exact redo. (The unchecked loops of the scaled quantizers,
//! `sat8_loop_with_range` / `sat_block_with_range`, take f32 only.) On ISAs with FMA the
//! product goes inside the split (`Prec::round_split_product`: `t = x (r c);
//! t - (t - x r)`, the inner difference one fused multiply-add from the exact product), three
//! operations for the product and its rounding instead of four. It gives the split of
//! `x * r` for every pair of non-negative f16 (bf16) x and scale of the fast range (below
//! 2^-126 aside, where both round to the integer 0; the test
//! `split_with_the_product_inside_matches_the_split_of_the_product` runs all 2^30 and
//! 2^28 pairs on every ISA with FMA); the per-axis row tiles, whose reciprocals come from
//! memory each step, keep the split of the product (`Spec::split_product`).

use crate::codec::{bf16_bits_to_f32, encode_minifloat_checked, round_bf16, round_f16, MiniFormat, MINI_RUNTIME};
use crate::isa::{IsaKernel, Kernel};
use crate::simd::{lane_f32, lane_i32, Simd, LIM};
use crate::walk::{self, RunOp};
use qdq_ref::float::{decode_e8m0, FloatFormat};
use qdq_ref::{packing, DataType, Layout, Packed, Precision};

/// Input element kinds the vector path reads.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Src {
    F32,
    F16,
    Bf16,
    I32,
}

impl Src {
    pub(crate) fn of(t: DataType) -> Option<Src> {
        Some(match t {
            DataType::F32 => Src::F32,
            DataType::F16 => Src::F16,
            DataType::Bf16 => Src::Bf16,
            DataType::I32 => Src::I32,
            _ => return None,
        })
    }

    pub(crate) fn size(self) -> usize {
        match self {
            Src::F32 | Src::I32 => 4,
            Src::F16 | Src::Bf16 => 2,
        }
    }

    #[inline(always)]
    pub(crate) fn load<S: Simd>(self, simd: S, b: &[u8]) -> S::F {
        match self {
            Src::F32 => simd.load_f32(b),
            Src::F16 => simd.load_f16(b),
            Src::Bf16 => bf16_bits_to_f32(simd, simd.load_u16(b)),
            Src::I32 => simd.cvt_f32(simd.load_i32(b)),
        }
    }
}

/// Scale element kinds.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum ScaleKind {
    F32,
    F16,
    Bf16,
    E8M0,
    /// float8 e4m3fn codes times an f32 global scale (the f32 bits): NVFP4's block scales,
    /// `f32(decode(code) * g)` as the first of its two DequantizeLinear nodes computes.
    E4M3Times(u32),
}

impl ScaleKind {
    pub(crate) fn of(t: DataType) -> Option<ScaleKind> {
        Some(match t {
            DataType::F32 => ScaleKind::F32,
            DataType::F16 => ScaleKind::F16,
            DataType::Bf16 => ScaleKind::Bf16,
            DataType::E8M0 => ScaleKind::E8M0,
            _ => return None,
        })
    }

    pub(crate) fn size(self) -> usize {
        match self {
            ScaleKind::F32 => 4,
            ScaleKind::F16 | ScaleKind::Bf16 => 2,
            ScaleKind::E8M0 | ScaleKind::E4M3Times(_) => 1,
        }
    }

    /// Scale `k` as f32 (every scale type is exact in f32).
    pub(crate) fn get(self, b: &[u8], k: usize) -> f32 {
        match self {
            ScaleKind::F32 => f32::from_le_bytes([b[4 * k], b[4 * k + 1], b[4 * k + 2], b[4 * k + 3]]),
            ScaleKind::F16 => half::f16::from_le_bytes([b[2 * k], b[2 * k + 1]]).to_f32(),
            ScaleKind::Bf16 => half::bf16::from_le_bytes([b[2 * k], b[2 * k + 1]]).to_f32(),
            ScaleKind::E8M0 => decode_e8m0(b[k]),
            ScaleKind::E4M3Times(g) => qdq_ref::float::E4M3FN.decode(b[k] as u32) as f32 * f32::from_bits(g),
        }
    }

    /// [`ScaleKind::get`] with the f32 and e8m0 decodes inline (per-block loops).
    #[inline(always)]
    pub(crate) fn get_inline(self, b: &[u8], k: usize) -> f32 {
        match self {
            ScaleKind::F32 => match b[4 * k..].first_chunk::<4>() {
                Some(v) => f32::from_le_bytes(*v),
                None => self.get(b, k),
            },
            ScaleKind::E8M0 => e8m0_value(b[k]),
            _ => self.get(b, k),
        }
    }

    /// `LANES` scales starting at `k` as an f32 vector.
    #[inline(always)]
    pub(crate) fn load<S: Simd>(self, simd: S, b: &[u8], k: usize) -> S::F {
        match self {
            ScaleKind::F32 => simd.load_f32(&b[4 * k..]),
            ScaleKind::F16 => simd.load_f16(&b[2 * k..]),
            ScaleKind::Bf16 => bf16_bits_to_f32(simd, simd.load_u16(&b[2 * k..])),
            ScaleKind::E8M0 => {
                let c = simd.load_u8(&b[k..]);
                // 2^(c-127): code 0 is the subnormal 2^-127, 0xff is NaN.
                let normal = simd.shl(c, 23);
                let bits = simd.select_i(simd.eq_i(c, simd.splat_i(0)), simd.splat_i(0x0040_0000), normal);
                let v = simd.f32_of(bits);
                simd.select(simd.eq_i(c, simd.splat_i(0xff)), simd.splat(f32::NAN), v)
            }
            ScaleKind::E4M3Times(_) => {
                // Rare (NVFP4 blocks along a middle axis): lane by lane, which keeps the
                // decoder out of every kernel's frame in unoptimised builds.
                let mut t = [0u8; 64];
                for l in 0..S::LANES {
                    t[4 * l..4 * l + 4].copy_from_slice(&self.get(b, k + l).to_le_bytes());
                }
                simd.load_f32(&t)
            }
        }
    }
}

/// Division precisions the vector path supports (f64, for i32 scales, runs the reference).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Prec {
    F32,
    F16,
    Bf16,
}

impl Prec {
    pub(crate) fn of(p: Precision) -> Option<Prec> {
        match p {
            Precision::F32 => Some(Prec::F32),
            Precision::F16 => Some(Prec::F16),
            Precision::Bf16 => Some(Prec::Bf16),
            Precision::F64 => None,
        }
    }

    #[inline(always)]
    pub(crate) fn round<S: Simd>(self, simd: S, v: S::F) -> S::F {
        match self {
            Prec::F32 => v,
            Prec::F16 => round_f16(simd, v),
            Prec::Bf16 => round_bf16(simd, v),
        }
    }

    /// `round_P(v)` for a `v` that is not a midpoint of P, by Veltkamp's splitting:
    /// `t = v * (2^(24 - p) + 1); t - (t - v)` is `v` rounded to nearest on `p` significand
    /// bits (three multiply / subtract operations against a narrowing and a widening).
    /// Unlike `round`, its exponent range is f32's: f16 values at or beyond 65520 (f16's
    /// overflow threshold) round to 2^16 or more, finite; an infinite `v`, or one whose
    /// product overflows (`|v| >= 2^128 / 65537`, about 2^112, for bf16; f16's quotients
    /// stay far below 2^128 / 8193), becomes NaN; and below P's normal range (f16's `2^-14`)
    /// it keeps `p` bits where P would keep fewer. The checked 16-bit-precision fast paths for
    /// integer outputs take it (module docs), where none of this changes an integer result:
    /// a NaN goes to their conversion check and redo.
    #[inline(always)]
    pub(crate) fn round_split<S: Simd>(self, simd: S, v: S::F) -> S::F {
        let c = match self {
            Prec::F32 => return v,
            Prec::F16 => 8193.0,
            Prec::Bf16 => 65537.0,
        };
        let t = simd.mul(v, simd.splat(c));
        simd.sub(t, simd.sub(t, v))
    }

    /// [`Prec::round_split`] of the product `x * r`, with the product inside the split on
    /// ISAs with FMA: `t = x * (r * c); t - (t - x * r)`, the inner difference by one fused
    /// multiply-add from the exact product (three operations for the four of a product and
    /// its split; `r * c` is loop-invariant wherever `r` is). For every f16 (bf16) `x` and
    /// every f16 (bf16) scale in the fast range with `r = 1 / s` in f32, it gives the same
    /// value as the split of `fl(x * r)` except below 2^-126 (f32's subnormals, where both
    /// are far below every integer's rounding limit; an exhaustive test of the non-negative
    /// pairs, module docs). Huge or infinite products become NaN, as there. `inside` false
    /// (or no FMA): the split of the product, [`Prec::round_split`].
    #[inline(always)]
    pub(crate) fn round_split_product<S: Simd>(self, simd: S, x: S::F, r: S::F, inside: bool) -> S::F {
        let c = match self {
            Prec::F32 => return simd.mul(x, r),
            Prec::F16 => 8193.0,
            Prec::Bf16 => 65537.0,
        };
        if !(S::HAS_FMA && inside) {
            return self.round_split(simd, simd.mul(x, r));
        }
        let t = simd.mul(x, simd.mul(r, simd.splat(c)));
        simd.sub(t, simd.fnma(x, r, t))
    }

    pub(crate) fn round_scalar(self, v: f32) -> f32 {
        match self {
            Prec::F32 => v,
            Prec::F16 => qdq_ref::float::F16.round(v as f64) as f32,
            Prec::Bf16 => qdq_ref::float::BF16.round(v as f64) as f32,
        }
    }
}

/// How codes leave the kernel.
#[derive(Clone, Copy, Debug)]
pub(crate) enum Encode {
    /// Integer output with range `[qmin, qmax]`.
    Int { qmin: i32, qmax: i32 },
    /// float8 / float6 / float4; `add_zero` adds the (zero) zero point as a float, which is
    /// what turns -0 into +0 for float4/float6 (R10); `sat` is the `saturate` attribute.
    Mini { fmt: MiniFormat, add_zero: bool, sat: bool },
}

/// Everything a quantize kernel needs, resolved once per call.
#[derive(Clone, Copy)]
pub(crate) struct Job<'a> {
    pub src: Src,
    pub x: &'a [u8],
    pub scale_kind: ScaleKind,
    pub scale: &'a [u8],
    pub zero_point: Option<Packed<'a>>,
    pub prec: Prec,
    /// The source type equals the precision, so rounding x to P is the identity.
    pub src_exact: bool,
    pub out: DataType,
    pub enc: Encode,
    pub layout: Layout,
    /// [`crate::isa::avx2_extra_divide`], read once per call on the calling thread.
    pub extra_div: bool,
}

impl<'a> Job<'a> {
    /// Resolves a validated call, or `None` when the vector path does not cover it (f64
    /// division for i32 scales; i32 x with a 16-bit precision, whose conversion would round
    /// twice; float8 scale types are impossible here).
    #[allow(clippy::too_many_arguments)]
    pub(crate) fn new(
        x_type: DataType,
        x: &'a [u8],
        scale_type: DataType,
        scale: &'a [u8],
        zero_point: Option<Packed<'a>>,
        layout: Layout,
        out: DataType,
        saturate: bool,
        precision: Precision,
    ) -> Option<Job<'a>> {
        let src = Src::of(x_type)?;
        let scale_kind = ScaleKind::of(scale_type)?;
        let prec = Prec::of(precision)?;
        if src == Src::I32 && prec != Prec::F32 {
            return None;
        }
        let enc = match out.int_range() {
            Some((qmin, qmax)) => Encode::Int { qmin: qmin as i32, qmax: qmax as i32 },
            None => {
                let f = FloatFormat::of(out)?;
                Encode::Mini {
                    fmt: MiniFormat::new(&f, saturate),
                    add_zero: out.is_float4_or_6() && zero_point.is_some(),
                    sat: saturate,
                }
            }
        };
        let src_exact = matches!((src, prec), (Src::F32, Prec::F32) | (Src::F16, Prec::F16) | (Src::Bf16, Prec::Bf16))
            || (prec == Prec::F32 && src != Src::I32);
        let extra_div = crate::isa::avx2_extra_divide();
        Some(Job { src, x, scale_kind, scale, zero_point, prec, src_exact, out, enc, layout, extra_div })
    }

    /// The zero point's value at scale index `k` (0 when absent).
    #[inline(always)]
    fn zp(&self, k: usize) -> i32 {
        match (&self.zero_point, self.enc) {
            (Some(z), Encode::Int { .. }) => zero_point_at(z, k),
            _ => 0,
        }
    }

    /// The float zero point added for float4/float6 outputs (±0; 0 where none is added).
    #[inline(always)]
    fn zf(&self, k: usize) -> f32 {
        match (&self.zero_point, self.enc) {
            (Some(z), Encode::Mini { add_zero: true, .. }) => {
                FloatFormat::of(z.dtype).map_or(0.0, |f| f.decode(z.code(k)) as f32)
            }
            _ => 0.0,
        }
    }
}

/// The e8m0 scale `c`: `2^(c - 127)` (code 0 is the subnormal 2^-127), 0xff NaN
/// (`qdq_ref::float::decode_e8m0`, inline).
#[inline(always)]
pub(crate) fn e8m0_value(c: u8) -> f32 {
    match c {
        0 => f32::from_bits(0x0040_0000),
        0xff => f32::NAN,
        c => f32::from_bits((c as u32) << 23),
    }
}

/// Per-vector scale parameters.
#[derive(Clone, Copy)]
pub(crate) struct Lanes<S: Simd> {
    /// The scale rounded to the division precision (the divisor).
    pub divisor: S::F,
    /// The scale's own value (what DequantizeLinear multiplies by).
    pub raw: S::F,
    pub r: S::F,
    pub fast: bool,
    /// The scale is a power of two whose reciprocal `r` is exact (also a power of two):
    /// `x * r` is then the correctly rounded `x / s` for every x (the same real number,
    /// rounded once), signed zeros, infinities and NaN included.
    pub pow2: bool,
    /// Integer zero point.
    pub z: S::I,
    /// Integer outputs: `qmin - z` and `qmax - z`.
    pub lo: S::F,
    pub hi: S::F,
    /// float4/float6: the (±0) float zero point.
    pub zf: S::F,
}

/// Exact `x / s` for any x (see the module docs): signed zeros, infinities and NaN are
/// those of IEEE division. Used for float outputs, where they matter.
#[inline(always)]
pub(crate) fn divide<S: Simd>(simd: S, x: S::F, sc: S::F, r: S::F, fast: bool) -> S::F {
    if !fast || !S::HAS_FMA {
        return simd.div(x, sc);
    }
    let q0 = simd.mul(x, r);
    let e = simd.fnma(q0, sc, x);
    // q0 where the corrected quotient is ±0 (q0 is then exact, or below the smallest
    // subnormal and as good for every output format that does not add a zero point, with
    // the quotient's sign, which `q0 + 0` can lose) or NaN (infinite x or an overflowing
    // quotient, where q0 is the IEEE result). See `redo_tiny` for the formats that add one.
    simd.nonzero_or(simd.fma(e, r, q0), q0)
}

/// `q` (from [`divide`] with Markstein's division), or the true division `x / s` for the
/// whole vector where some lane holds a nonzero `|x| <= 2^-96`. Those quotients (below
/// `2^-66` in the fast scale range) encode to ±0 in every format, but which zero: a format
/// that adds its float zero point (float4 / float6) turns an exactly-zero `-0` quotient into
/// `+0` and keeps the sign of a tiny nonzero one, and Markstein's correction cannot tell
/// the two apart there (its residual underflows; `x * r` can round a quotient that ties at
/// `2^-150` away from zero). The test is one integer compare on `|x| bits - 1 + i32::MIN`
/// (wrapping: zero lands on `i32::MAX`), and real data almost never takes the branch.
#[inline(always)]
pub(crate) fn redo_tiny<S: Simd>(simd: S, x: S::F, q: S::F, sc: S::F) -> S::F {
    let mag = simd.and_i(simd.bits(x), simd.splat_i(0x7fff_ffff));
    let tiny = simd.lt_i(simd.add_i(mag, simd.splat_i(i32::MAX)), simd.splat_i(i32::MIN + 0x0f80_0000));
    if simd.mask_bits(tiny) != 0 {
        simd.div(x, sc)
    } else {
        q
    }
}

/// The scales (by magnitude) whose quotients the kernels compute with Markstein's exact
/// division (module docs): the one definition of the fast range.
pub(crate) const FAST_SCALE: core::ops::RangeInclusive<f32> = (1.0 / (1u64 << 30) as f32)..=((1u64 << 30) as f32);

/// Whether scale `v` is in [`FAST_SCALE`].
#[inline(always)]
pub(crate) fn fast_scale(v: f32) -> bool {
    FAST_SCALE.contains(&v.abs())
}

/// The lanes of `v` outside [`FAST_SCALE`] (NaN included), as a mask.
#[inline(always)]
pub(crate) fn slow_scale_lanes<S: Simd>(simd: S, v: S::F) -> S::M {
    let a = simd.and_i(simd.bits(v), simd.splat_i(i32::MAX));
    let lo = simd.lt_i(a, simd.splat_i(FAST_SCALE.start().to_bits() as i32));
    let hi = simd.lt_i(simd.splat_i(FAST_SCALE.end().to_bits() as i32), a);
    simd.or_m(lo, hi)
}

/// The per-call switches of the vector loop, resolved once. The hot combinations are
/// instantiated with compile-time values (see [`run`]), so the per-vector `match`es fold
/// away; the rest read them at run time (still one predictable branch per vector).
#[derive(Clone, Copy)]
pub(crate) struct Spec {
    pub src: Src,
    pub prec: Prec,
    pub src_exact: bool,
    pub enc: Encode,
    pub bits: u32,
    /// Whether the integer fast paths take one quotient of each step more than
    /// [`Simd::DIV_QUOTIENTS`] from the divide instruction, where that is above 0 (AVX2 on
    /// AMD's cores from Zen 2 on: [`crate::isa::avx2_extra_divide`]). Run time: a second set of kernels
    /// would double AVX2's code for a few per cent.
    pub extra_div: bool,
    /// Whether a 16-bit precision's quotients take the product inside the split
    /// ([`Prec::round_split_product`]), which wants `r * c` loop-invariant: everywhere but
    /// the per-axis row tiles, whose reciprocals come from memory each step (there the
    /// extra multiply per vector measured 0.91-0.99x on Zen 4's AVX2).
    pub split_product: bool,
}

pub(crate) const ANY: u8 = u8::MAX;

impl Spec {
    #[inline(always)]
    pub(crate) fn resolve<const SRC: u8, const PREC: u8, const BITS: u8>(job: &Job<'_>) -> Spec {
        Spec {
            src: job.src,
            prec: job.prec,
            src_exact: job.src_exact,
            enc: job.enc,
            bits: job.out.bits(),
            extra_div: job.extra_div,
            split_product: true,
        }
        .fold::<SRC, PREC, BITS>()
    }

    /// The spec with the compile-time parts of a variant in place of the run-time values
    /// (`ANY` keeps the run-time one), so that the per-vector `match`es fold away.
    #[inline(always)]
    pub(crate) fn fold<const SRC: u8, const PREC: u8, const BITS: u8>(self) -> Spec {
        let src = match SRC {
            0 => Src::F32,
            1 => Src::F16,
            2 => Src::Bf16,
            3 => Src::I32,
            _ => self.src,
        };
        let prec = match PREC {
            0 => Prec::F32,
            1 => Prec::F16,
            2 => Prec::Bf16,
            _ => self.prec,
        };
        let bits = if BITS == ANY { self.bits } else { BITS as u32 };
        // f32 arithmetic, or a source in its own precision: no rounding of x.
        let src_exact = if PREC == 0 || (SRC == PREC && SRC != ANY) { true } else { self.src_exact };
        Spec { src, prec, src_exact, enc: self.enc, bits, extra_div: self.extra_div, split_product: self.split_product }
    }
}

/// One vector: x bytes in, codes out.
#[inline(always)]
fn quantize_vec<S: Simd, const MINI: u8>(simd: S, sp: &Spec, xb: &[u8], p: &Lanes<S>) -> S::I {
    quantize_vec_d::<S, MINI, false, DIV_RUNTIME>(simd, sp, xb, p).0
}

/// How a kernel divides, when it knows before its loop: [`DIV_RUNTIME`] reads `Lanes::pow2`
/// and `Lanes::fast` per vector; [`DIV_FAST`] is Markstein's division on ISAs with FMA (the
/// caller knows the scale is fast) and the product or true division without.
pub(crate) const DIV_RUNTIME: u8 = 0;
/// See [`DIV_RUNTIME`].
pub(crate) const DIV_FAST: u8 = 1;
/// A power-of-two scale whose reciprocal `Lanes::r` is exact (`Lanes::pow2` known true).
pub(crate) const DIV_POW2: u8 = 2;

/// [`quantize_vec`], and with `MASK` the training-mode mask: bit `l` set when lane `l` was
/// representable (`qdq_ref::quantize::representable`). Integer outputs: the quotient is
/// clamped once more to `[lo - 1, hi + 1]` (NaN lands on `lo - 1`, as in the main clamp)
/// and rounded; the lane fits exactly when that equals the code before the zero point,
/// which was rounded from the clamp to `[lo, hi]`. Float outputs: the encoder's own
/// overflow / NaN lanes.
#[inline(always)]
pub(crate) fn quantize_vec_m<S: Simd, const MINI: u8, const MASK: bool>(
    simd: S,
    sp: &Spec,
    xb: &[u8],
    p: &Lanes<S>,
) -> (S::I, u32) {
    quantize_vec_d::<S, MINI, MASK, DIV_RUNTIME>(simd, sp, xb, p)
}

/// [`quantize_vec_m`] with the division method `DIV` ([`DIV_RUNTIME`], [`DIV_FAST`]).
#[inline(always)]
pub(crate) fn quantize_vec_d<S: Simd, const MINI: u8, const MASK: bool, const DIV: u8>(
    simd: S,
    sp: &Spec,
    xb: &[u8],
    p: &Lanes<S>,
) -> (S::I, u32) {
    let (pow2, fast) = match DIV {
        // Without FMA there is no Markstein's division: the exact product where the
        // reciprocal is exact, else the true division.
        DIV_FAST if !S::HAS_FMA => (p.pow2, false),
        DIV_FAST => (false, true),
        DIV_POW2 => (true, false),
        _ => (p.pow2, p.fast),
    };
    let x = load_x(simd, sp, xb);
    if MINI == 0 {
        // Integer outputs: ±0 are the same and NaN goes to qmin, so the divide needs no
        // special-value fix-ups. On the fast path the first product is clamped to ±2^30
        // (beyond every integer range) so that the correction stays finite for infinite
        // or huge x; a NaN quotient falls to `lo` in the clamp below.
        let q = if pow2 {
            simd.mul(x, p.r)
        } else if fast && S::HAS_FMA {
            let q0 = simd.clamp_abs(simd.mul(x, p.r), simd.splat(LIM));
            let e = simd.fnma(q0, p.divisor, x);
            simd.fma(e, p.r, q0)
        } else {
            simd.div(x, p.divisor)
        };
        let q = sp.prec.round(simd, q);
        // max(NaN, lo) = lo: NaN -> qmin - z, so the result is qmin.
        let c = simd.min(simd.max(q, p.lo), p.hi);
        let r = simd.cvt_rne(c);
        return (simd.add_i(r, p.z), if MASK { int_valid(simd, q, r, p) } else { 0 });
    }
    let mini = match (MINI, sp.enc) {
        (0, _) => None,
        // A compile-time float8 id: the job's output is that format, with no zero point to
        // add (nothing to read from the job per vector).
        (2..=9, _) => Some((MiniFormat::of_id(MINI), false)),
        (_, Encode::Int { .. }) => None,
        (MINI_RUNTIME, Encode::Mini { fmt, add_zero, .. }) => Some((fmt, add_zero)),
        // A compile-time format: its constants fold into the code (and only float4 / float6
        // add a zero point: ids 10 and up).
        (id, Encode::Mini { add_zero, .. }) => Some((MiniFormat::of_id(id), add_zero && id >= 10)),
    };
    let q = float_quotient(simd, sp, x, p, pow2, fast, matches!(mini, Some((_, true))));
    match mini {
        None => {
            let c = simd.select(simd.is_nan(q), p.lo, simd.min(simd.max(q, p.lo), p.hi));
            let r = simd.cvt_rne(c);
            (simd.add_i(r, p.z), if MASK { int_valid(simd, q, r, p) } else { 0 })
        }
        Some((fmt, add_zero)) => {
            let q = if add_zero { simd.add(q, p.zf) } else { q };
            let (code, bad) = encode_minifloat_checked(simd, q, &fmt);
            let bits = if MASK { !simd.mask_bits(bad) & ((1u32 << S::LANES) - 1) } else { 0 };
            (code, bits)
        }
    }
}

/// `x / s` for a float-format output, rounded to the division precision: the exact product
/// `x * r` for a power-of-two scale (`pow2`), else [`divide`] (Markstein's where `fast`,
/// with [`redo_tiny`] where the format adds its zero point, `add_zero`).
#[inline(always)]
fn float_quotient<S: Simd>(simd: S, sp: &Spec, x: S::F, p: &Lanes<S>, pow2: bool, fast: bool, add_zero: bool) -> S::F {
    let q = if pow2 {
        simd.mul(x, p.r)
    } else {
        let q = divide(simd, x, p.divisor, p.r, fast);
        if add_zero && fast && S::HAS_FMA {
            redo_tiny(simd, x, q, p.divisor)
        } else {
            q
        }
    };
    sp.prec.round(simd, q)
}

/// Whether a job with the compile-time float format `MINI` adds its float zero point to the
/// quotients (float4 / float6 with a zero point; float8 has none).
#[inline(always)]
pub(crate) fn mini_adds_zero<const MINI: u8>(sp: &Spec) -> bool {
    MINI >= 10 && matches!(sp.enc, Encode::Mini { add_zero: true, .. })
}

/// One vector of x as the division takes it: widened to f32, then rounded to the division
/// precision unless the source type is exact in it.
#[inline(always)]
fn load_x<S: Simd>(simd: S, sp: &Spec, xb: &[u8]) -> S::F {
    let x = sp.src.load(simd, xb);
    if sp.src_exact {
        x
    } else {
        sp.prec.round(simd, x)
    }
}

/// The quotient of one vector for a float-format output, before the encoder: `x / s` in
/// the division precision (the exact product `x * r` for a power-of-two scale, `pow2`; else
/// Markstein's division where `fast`, the scale in the fast range, on an ISA with FMA, or
/// the divide instruction), plus the float zero point where the format adds one
/// (`add_zero`: float4 / float6).
#[inline(always)]
pub(crate) fn mini_quotient<S: Simd>(
    simd: S,
    sp: &Spec,
    xb: &[u8],
    p: &Lanes<S>,
    pow2: bool,
    fast: bool,
    add_zero: bool,
) -> S::F {
    debug_assert!(pow2 || !fast || (p.fast && S::HAS_FMA), "Markstein's division needs a fast scale and FMA");
    let x = load_x(simd, sp, xb);
    let d = float_quotient(simd, sp, x, p, pow2, fast, add_zero);
    if add_zero {
        simd.add(d, p.zf)
    } else {
        d
    }
}

/// The quotients of a four-vector step for [`Simd::store_mini_x4`] (vector `k` of `x` with
/// `p[k]`, every scale in the fast range, on an ISA with FMA): [`mini_quotient`] by
/// Markstein's division, the last [`Simd::MINI_DIV_QUOTIENTS`] by the divide instruction
/// (as [`sat8_quotients`] with [`Simd::DIV_QUOTIENTS`]).
#[inline(always)]
pub(crate) fn mini_quotients_x4<S: Simd>(simd: S, sp: &Spec, x: &[u8], p: [&Lanes<S>; 4], add_zero: bool) -> [S::F; 4] {
    let vb = S::LANES * sp.src.size();
    let mut q = [simd.splat(0.0); 4];
    for (k, qk) in q.iter_mut().enumerate() {
        let fast = k + S::MINI_DIV_QUOTIENTS < 4;
        *qk = mini_quotient(simd, sp, &x[k * vb..(k + 1) * vb], p[k], false, fast, add_zero);
    }
    q
}

/// The mask bits of an integer output (see [`quantize_vec_m`]): `r` is the rounded quotient
/// clamped to `[lo, hi]`. (A function, not a closure: closures do not inherit the ISA's
/// target features.)
#[inline(always)]
fn int_valid<S: Simd>(simd: S, q: S::F, r: S::I, p: &Lanes<S>) -> u32 {
    let one = simd.splat(1.0);
    let wide = simd.min(simd.max(q, simd.sub(p.lo, one)), simd.add(p.hi, one));
    simd.mask_bits(simd.eq_i(simd.cvt_rne(wide), r))
}

/// The quotient of one vector for [`Simd::store_sat8x4`] / [`Simd::store_sat4x4`] (8- and
/// 4-bit integer outputs, a broadcast scale on the fast path), before the rounding. With `CLAMPED`, the first product
/// is clamped to `±2^30` so that the correction stays finite for infinite or huge x (NaN
/// stays NaN); without, infinite or huge x make the correction NaN or the quotient beyond
/// i32, which [`Simd::cvt_rne_x4`] (and [`Simd::cvt_store_sat_x4`]) reports. In a 16-bit
/// precision there is no correction (module docs) and no clamp: without `CLAMPED`,
/// `round_P(x * r)` by [`Prec::round_split_product`] (the split of the product where
/// [`Spec::split_product`] is off), which makes an infinite or overflowing
/// quotient NaN for the conversion check (so a caller without that check must be f32); with
/// `CLAMPED` (the redo), the exact rounding, which keeps infinities for `cvt_rne_clamped`.
#[inline(always)]
fn quotient_sat<S: Simd, const CLAMPED: bool>(simd: S, sp: &Spec, xb: &[u8], p: &Lanes<S>) -> S::F {
    let x = load_x(simd, sp, xb);
    if sp.prec != Prec::F32 {
        // A 16-bit precision rounds `x * r` itself: the same integer (module docs), never a
        // midpoint of P, so the split rounding serves. Its NaN for an infinite or huge
        // `x * r` goes to the caller's conversion check, whose redo (`CLAMPED`) rounds
        // exactly, keeping infinities for `cvt_rne_clamped`.
        return if CLAMPED {
            sp.prec.round(simd, simd.mul(x, p.r))
        } else {
            sp.prec.round_split_product(simd, x, p.r, sp.split_product)
        };
    }
    let q0 = simd.mul(x, p.r);
    let q0 = if CLAMPED { simd.clamp_abs(q0, simd.splat(LIM)) } else { q0 };
    let e = simd.fnma(q0, p.divisor, x);
    simd.fma(e, p.r, q0)
}

/// `cvt_rne(clamp(q, -2^30, 2^30))` with NaN landing on `-2^30`: lanes the saturating packs
/// of [`Simd::store_sat8x4`] / [`Simd::store_sat4x4`] take to the codes of the general path.
#[inline(always)]
fn cvt_rne_clamped<S: Simd>(simd: S, q: S::F) -> S::I {
    let lim = simd.splat(LIM);
    // min(lim, NaN) keeps the NaN, max(NaN, -lim) replaces it.
    simd.cvt_rne(simd.max(simd.min(lim, q), simd.sub(simd.splat(0.0), lim)))
}

/// One step of the 8-bit fast path (8- and 4-bit integer types): four vectors of `x` (`4 * LANES` elements), vector `k`
/// with parameters `p[k]`, converted by [`Simd::cvt_rne_x4`] without clamps; if it cannot
/// vouch for a lane (NaN, infinite or huge x), the four are redone with the clamps. Loops,
/// not four written-out calls: the optimiser unrolls them, and an unoptimised build then
/// holds one copy of the vector code instead of eight.
#[inline(always)]
fn sat8_step<S: Simd>(simd: S, sp: &Spec, x: &[u8], p: [&Lanes<S>; 4]) -> [S::I; 4] {
    match simd.cvt_rne_x4(sat8_quotients(simd, sp, x, p)) {
        Some(c) => c,
        None => sat8_redo(simd, sp, x, p),
    }
}

/// The unclamped quotients of a step of the 8-bit fast path (vector `k` of `x` with `p[k]`):
/// in f32 precision the last [`Simd::DIV_QUOTIENTS`] (one more where [`Spec::extra_div`])
/// by the divide instruction, the others
/// by Markstein's division (both the correctly rounded quotient); in a 16-bit precision
/// all four as `round_P(x * r)` (module docs). Each leaves an infinite, NaN or out-of-range
/// lane to the conversion check.
#[inline(always)]
fn sat8_quotients<S: Simd>(simd: S, sp: &Spec, x: &[u8], p: [&Lanes<S>; 4]) -> [S::F; 4] {
    let vb = S::LANES * sp.src.size();
    let mut q = [simd.splat(0.0); 4];
    for (k, qk) in q.iter_mut().enumerate() {
        let xb = &x[k * vb..(k + 1) * vb];
        let div = k >= 4 - S::DIV_QUOTIENTS || (sp.extra_div && k + 1 == 4 - S::DIV_QUOTIENTS);
        *qk = if S::DIV_QUOTIENTS > 0 && div && sp.prec == Prec::F32 {
            quotient_div(simd, sp, xb, p[k])
        } else {
            quotient_sat::<S, false>(simd, sp, xb, p[k])
        };
    }
    q
}

/// [`quotient_sat`] (unclamped) by the divide instruction: `round_P(x / s)`, correctly
/// rounded for every x, so the fast range plays no part.
#[inline(always)]
fn quotient_div<S: Simd>(simd: S, sp: &Spec, xb: &[u8], p: &Lanes<S>) -> S::F {
    let x = load_x(simd, sp, xb);
    sp.prec.round(simd, simd.div(x, p.divisor))
}

/// The rare redo of a step whose conversion check failed: the quotients with the clamps,
/// converted. Through an opaque copy of the slice, it reloads x instead of the loop keeping
/// the first loads live (spilled every step) for its sake. (Not the parameters: where they
/// are values in registers, an opaque reference would make every block store them.)
#[inline(always)]
fn sat8_redo<S: Simd>(simd: S, sp: &Spec, x: &[u8], p: [&Lanes<S>; 4]) -> [S::I; 4] {
    let vb = S::LANES * sp.src.size();
    let x = core::hint::black_box(x);
    let mut c = [simd.splat_i(0); 4];
    for (k, ck) in c.iter_mut().enumerate() {
        *ck = cvt_rne_clamped(simd, quotient_sat::<S, true>(simd, sp, &x[k * vb..(k + 1) * vb], p[k]));
    }
    c
}

/// One step of the 8-bit fast path stored: [`sat8_step`]'s quotients, converted and checked
/// by [`Simd::cvt_store_sat_x4`] where [`Simd::PACK_CHECK`] (the check after the first
/// packs), else by [`Simd::cvt_rne_x4`], then stored by
/// [`Simd::store_sat8x4`] / [`Simd::store_sat4x4`] / [`Simd::store_sat2x4`]; a step the
/// check refuses is redone with
/// the clamps ([`sat8_redo`]). `z`: the zero points of `p`, as [`Simd::zero_points_x4`]
/// prepares them; `mid`: as [`sat8_store_quotients`]'.
#[inline(always)]
#[allow(clippy::too_many_arguments)]
fn sat8_step_store<S: Simd, const SIGNED: bool>(
    simd: S,
    sp: &Spec,
    x: &[u8],
    p: [&Lanes<S>; 4],
    z: [S::I; 4],
    y: &mut [u8],
    bits: usize,
    mid: bool,
) {
    sat8_store_quotients::<S, SIGNED>(simd, sp, sat8_quotients(simd, sp, x, p), x, p, z, y, bits, mid);
}

/// The rest of [`sat8_step_store`] once the step's quotients `q` ([`sat8_quotients`] of
/// `x` with `p`) are known: loops that compute them a step ahead call it. `mid`: every zero
/// point is the 8-bit type's middle ([`mid_zero_point`]; see [`Simd::cvt_store_sat_x4`]).
#[inline(always)]
#[allow(clippy::too_many_arguments)]
fn sat8_store_quotients<S: Simd, const SIGNED: bool>(
    simd: S,
    sp: &Spec,
    q: [S::F; 4],
    x: &[u8],
    p: [&Lanes<S>; 4],
    z: [S::I; 4],
    y: &mut [u8],
    bits: usize,
    mid: bool,
) {
    let c = if S::PACK_CHECK {
        if simd.cvt_store_sat_x4(q, z, SIGNED, bits, mid, y) {
            return;
        }
        None
    } else {
        simd.cvt_rne_x4(q)
    };
    let c = match c {
        Some(c) => c,
        None => sat8_redo(simd, sp, x, p),
    };
    match bits {
        8 => simd.store_sat8x4(c, z, SIGNED, y),
        4 => simd.store_sat4x4(c, z, SIGNED, y),
        _ => simd.store_sat2x4(c, z, SIGNED, y),
    }
}

/// The codes before the zero point of a four-vector step (vector `k` with the scale
/// parameters `p[k]`, each in the fast range): [`sat8_quotients`] converted by [`Simd::cvt_rne_x4`], or redone with the
/// clamps ([`sat8_redo`]) where it refuses. Every lane within `±2^30` is `rne(q)`, a lane
/// beyond it has the quotient's sign, and NaN arrives only through the redo, as `-2^30`.
#[inline(always)]
fn sat8_converted<S: Simd>(simd: S, sp: &Spec, x: &[u8], p: [&Lanes<S>; 4]) -> [S::I; 4] {
    match simd.cvt_rne_x4(sat8_quotients(simd, sp, x, p)) {
        Some(c) => c,
        None => sat8_redo(simd, sp, x, p),
    }
}

/// The training forward's step of the 8- and 4-bit integer types (`sp.bits`; vector `k`
/// with the broadcast scale parameters `p[k]`, each in the fast range): the codes of [`sat8_converted`] stored by the
/// saturating packs, and their mask bits returned ([`Simd::sat_mask_x4`]: set where the
/// code before saturation is within `[qmin, qmax]`, `qdq_ref::quantize::representable`;
/// exact, by `sat8_converted`'s lanes). `z` is as [`Simd::zero_points_x4`] prepares it.
#[inline(always)]
pub(crate) fn sat8_step_masked<S: Simd, const SIGNED: bool>(
    simd: S,
    sp: &Spec,
    x: &[u8],
    p: [&Lanes<S>; 4],
    z: [S::I; 4],
    y: &mut [u8],
) -> u64 {
    let Encode::Int { qmin, qmax } = sp.enc else { return 0 };
    let c = sat8_converted(simd, sp, x, p);
    match sp.bits {
        8 => simd.store_sat8x4(c, z, SIGNED, y),
        _ => simd.store_sat4x4(c, z, SIGNED, y),
    }
    simd.sat_mask_x4(c, z, qmin, qmax)
}

/// The fake-quantization forward's step of the integer types (vector `k` with the
/// broadcast scale parameters `p[k]`, each in the fast range, and the range `r[k]`):
/// [`sat8_converted`]'s codes clamped to `r[k] = (lo, hi)` (`qmin - z`, `qmax - z`, as
/// i32 lanes), and `f32(c - z) * s` stored as `out` (no NaN: the scale is finite, the
/// codes small). The mask bits are returned as [`sat8_step_masked`] returns them: a lane
/// is in range exactly where the clamp keeps it. `y` holds exactly the step's `4 * LANES`
/// outputs.
#[inline(always)]
pub(crate) fn sat_step_dequantized<S: Simd>(
    simd: S,
    sp: &Spec,
    x: &[u8],
    p: [&Lanes<S>; 4],
    r: [(S::I, S::I); 4],
    out: crate::dequantize::Out,
    y: &mut [u8],
) -> u64 {
    let c = sat8_converted(simd, sp, x, p);
    let (all, vb) = (((1u64 << S::LANES) - 1) as u32, S::LANES * out.size());
    let mut w = 0u64;
    for (k, (ck, yk)) in c.into_iter().zip(y.chunks_exact_mut(vb)).enumerate() {
        let (lo, hi) = r[k];
        let cl = simd.min_i(simd.max_i(ck, lo), hi);
        w |= u64::from(simd.mask_bits(simd.eq_i(cl, ck)) & all) << (k * S::LANES);
        crate::dequantize::store_as(simd, out, simd.mul(simd.cvt_f32(cl), p[k].raw), false, yk);
    }
    w
}

/// One step of the 16-bit integer types (f32 x, or a 16-bit x in its own precision, the
/// scales in the fast range), vector `k` with parameters `p[k]`: [`sat8_quotients`], then
/// where `packs` (every zero point the middle of the type's i16 view and the range the
/// type's: [`packs16`]) [`Simd::cvt_store_sat16x4`], whose saturating packs are the
/// clamp; otherwise, or where that conversion cannot vouch for every lane, the checked
/// conversion ([`sat8_redo`] with the clamps where it cannot vouch either), the codes
/// clamped to `[qmin - z[k], qmax - z[k]]` and then the zero point added (a lane beyond
/// `±2^30` may be any i32 of its sign, NEON's saturated `i32::MAX` included, so adding the
/// zero point first could wrap), and [`Simd::store_16x4`].
#[inline(always)]
fn sat16_step_store<S: Simd, const SIGNED: bool>(
    simd: S,
    sp: &Spec,
    x: &[u8],
    p: [&Lanes<S>; 4],
    packs: bool,
    y: &mut [u8],
) {
    let Encode::Int { qmin, qmax } = sp.enc else { return };
    let q = sat8_quotients(simd, sp, x, p);
    if packs && simd.cvt_store_sat16x4(q, SIGNED, y) {
        return;
    }
    // (Where the packs refused, straight to the redo: the plain check would mostly refuse
    // too, and the redo gives every lane its exact code either way.)
    let c = if packs { None } else { simd.cvt_rne_x4(q) };
    let mut c = match c {
        Some(c) => c,
        None => sat8_redo(simd, sp, x, p),
    };
    for (ck, pk) in c.iter_mut().zip(p) {
        let (lo, hi) = (simd.sub_i(simd.splat_i(qmin), pk.z), simd.sub_i(simd.splat_i(qmax), pk.z));
        *ck = simd.add_i(simd.min_i(simd.max_i(*ck, lo), hi), pk.z);
    }
    simd.store_16x4(c, SIGNED, y);
}

/// Whether the zero points `z` (i32 lanes) of a 16-bit integer output let
/// [`Simd::cvt_store_sat16x4`]'s saturating packs be the clamp: each the middle of the
/// type's i16 view (i16: 0, u16: 32768; the symmetric rule's), and `sp`'s range the type's
/// whole range.
#[inline(always)]
fn packs16<S: Simd, const SIGNED: bool>(simd: S, sp: &Spec, z: S::I) -> bool {
    let mid = if SIGNED { 0 } else { 32768 };
    let full = matches!(sp.enc, Encode::Int { qmin, qmax } if qmin - mid == -32768 && qmax - mid == 32767);
    full && all_lanes_are(simd, z, mid)
}

/// Whether every lane of `v` is `m`.
#[inline(always)]
fn all_lanes_are<S: Simd>(simd: S, v: S::I, m: i32) -> bool {
    let all = ((1u64 << S::LANES) - 1) as u32;
    simd.mask_bits(simd.eq_i(v, simd.splat_i(m))) & all == all
}

/// The 8-bit fast path over whole steps of four vectors, for the 8-, 4- and 2-bit integer
/// types (`bits`): `x` and `y` hold exactly the steps' bytes (chunked iteration, so no
/// bounds checks in the loop; `SIGNED` picks the final pack at compile time). The width is
/// a branch per step rather than a compile-time variant: an unoptimised build's frame holds
/// every variant its caller may take.
#[inline(always)]
fn sat8_loop<S: Simd, const SIGNED: bool>(simd: S, sp: &Spec, x: &[u8], y: &mut [u8], p: &Lanes<S>, bits: usize) {
    let lanes = S::LANES;
    let vb = lanes * sp.src.size();
    let z = simd.zero_points_x4([p.z; 4]);
    // (Read by the ISAs with the check after the packs, AVX2's: a predictable branch a
    // step. Once a run: a call per tensor, a parallel part, a run of a per-axis call.)
    let mid = S::PACK_CHECK && mid_zero_point::<SIGNED>(bits).is_some_and(|m| all_lanes_are(simd, p.z, m));
    let steps = Sat8Steps::<S, SIGNED> { sp, p: [p; 4], z, bits, mid };
    steps_ahead(simd, steps, x, 4 * vb, y, 4 * lanes * bits / 8);
}

/// Whether the 8-bit zero point of scale index `k` is the type's middle ([`mid_zero_point`];
/// i8 without zero points).
#[inline(always)]
fn mid_code_at<const SIGNED: bool>(job: &Job<'_>, k: usize) -> bool {
    // (The stored byte is the value for both types' middles: i8's 0, u8's 128.)
    let zp = job.zero_point.map_or(Some(0), |zp| zp.data.get(k).map(|&c| i32::from(c)));
    zp == Some(mid8(SIGNED))
}

/// The zero point at the middle of an 8-bit integer type (0 for i8, 128 for u8), the one
/// symmetric quantization uses, for which the 8-bit stores may skip adding it
/// ([`Simd::cvt_store_sat_x4`]); `None` for the 4- and 2-bit types (`bits`).
#[inline(always)]
fn mid_zero_point<const SIGNED: bool>(bits: usize) -> Option<i32> {
    (bits == 8).then_some(mid8(SIGNED))
}

/// The middle of an 8-bit integer type: 0 for i8 (`signed`), 128 for u8.
#[inline(always)]
const fn mid8(signed: bool) -> i32 {
    if signed {
        0
    } else {
        128
    }
}

/// A loop of four-vector steps whose divisions run a step ahead ([`steps_ahead`]).
trait AheadStep<S: Simd> {
    /// What a step's store takes of its divisions (its quotients).
    type Q: Copy;
    /// The next step's quotients, from its input `x` (the steps come in order).
    fn quotients(&mut self, simd: S, x: &[u8]) -> Self::Q;
    /// Converts and stores a step (in order): `q` from [`AheadStep::quotients`] of `x`,
    /// `y` its output.
    fn store(&mut self, simd: S, q: Self::Q, x: &[u8], y: &mut [u8]);
}

/// The steps of `t` over `x` (steps of `xstep` bytes) and `y` (`ystep` bytes), each step's
/// quotients computed before the step ahead of it is converted and stored: the divisions'
/// latency (`vdivps ymm`: 11 cycles on Zen 4) then overlaps that step's packing instead of
/// stalling it (AVX2 e4m3fn per tensor: 1.15x on Zen 4). `x` and `y` hold exactly the
/// steps' bytes. The last turn computes the last step's quotients again rather than
/// leave the loop for a store of its own: one store in the code, as an unoptimised build
/// gives every inlined call its own stack slots.
#[inline(always)]
fn steps_ahead<S: Simd, T: AheadStep<S>>(simd: S, mut t: T, x: &[u8], xstep: usize, y: &mut [u8], ystep: usize) {
    let mut xs = x.chunks_exact(xstep);
    let Some(mut xa) = xs.next() else { return };
    let mut q = t.quotients(simd, xa);
    for ya in y.chunks_exact_mut(ystep) {
        let xb = xs.next().unwrap_or(xa);
        let next = t.quotients(simd, xb);
        t.store(simd, q, xa, ya);
        (q, xa) = (next, xb);
    }
}

/// The 8-, 4- and 2-bit integer steps of [`sat8_step_store`] with the parameters `p` (and
/// `z` their zero points, as [`Simd::zero_points_x4`] prepares them) every step.
struct Sat8Steps<'a, S: Simd, const SIGNED: bool> {
    sp: &'a Spec,
    p: [&'a Lanes<S>; 4],
    z: [S::I; 4],
    bits: usize,
    /// Every zero point is the type's middle ([`mid_zero_point`]).
    mid: bool,
}

impl<S: Simd, const SIGNED: bool> AheadStep<S> for Sat8Steps<'_, S, SIGNED> {
    type Q = [S::F; 4];
    #[inline(always)]
    fn quotients(&mut self, simd: S, x: &[u8]) -> [S::F; 4] {
        sat8_quotients(simd, self.sp, x, self.p)
    }
    #[inline(always)]
    fn store(&mut self, simd: S, q: [S::F; 4], x: &[u8], y: &mut [u8]) {
        sat8_store_quotients::<S, SIGNED>(simd, self.sp, q, x, self.p, self.z, y, self.bits, self.mid);
    }
}

/// The float8 / float4 / float6 steps of [`Simd::store_mini_x4`] in `fmt`, step `j` with
/// the parameters `p[4v..4v + 4]`, `v = j % (p.len() / 4)` by a running index (`p.len()` a
/// multiple of 4).
struct MiniSteps<'a, S: Simd> {
    sp: &'a Spec,
    fmt: &'a MiniFormat,
    p: &'a [Lanes<S>],
    v: usize,
    add_zero: bool,
}

impl<S: Simd> AheadStep<S> for MiniSteps<'_, S> {
    type Q = [S::F; 4];
    #[inline(always)]
    fn quotients(&mut self, simd: S, x: &[u8]) -> [S::F; 4] {
        let v = self.v;
        self.v = if v + 4 >= self.p.len() { 0 } else { v + 4 };
        let p = &self.p[v..v + 4];
        mini_quotients_x4(simd, self.sp, x, [&p[0], &p[1], &p[2], &p[3]], self.add_zero)
    }
    #[inline(always)]
    fn store(&mut self, simd: S, q: [S::F; 4], _: &[u8], y: &mut [u8]) {
        simd.store_mini_x4(q, self.fmt, y);
    }
}

/// [`MiniSteps`] with the same parameters `p` every step.
struct MiniStepsFixed<'a, S: Simd> {
    sp: &'a Spec,
    fmt: &'a MiniFormat,
    p: [&'a Lanes<S>; 4],
    add_zero: bool,
}

impl<S: Simd> AheadStep<S> for MiniStepsFixed<'_, S> {
    type Q = [S::F; 4];
    #[inline(always)]
    fn quotients(&mut self, simd: S, x: &[u8]) -> [S::F; 4] {
        mini_quotients_x4(simd, self.sp, x, self.p, self.add_zero)
    }
    #[inline(always)]
    fn store(&mut self, simd: S, q: [S::F; 4], _: &[u8], y: &mut [u8]) {
        simd.store_mini_x4(q, self.fmt, y);
    }
}

/// The 8-bit fast path's steps for the 16-bit types, [`sat16_step_store`] with one
/// broadcast scale (as a kernel of its own, entered where [`Simd::CHECKED_CVT16`]). `SRC`
/// and `PREC` are the caller's variant, folded back into the spec (see [`Spec::fold`]).
struct Sat16Loop<'a, 'y, S: Simd, const SIGNED: bool, const SRC: u8, const PREC: u8> {
    sp: &'a Spec,
    x: &'a [u8],
    y: &'y mut [u8],
    p: &'a Lanes<S>,
}

impl<S: Simd, const SIGNED: bool, const SRC: u8, const PREC: u8> IsaKernel<S>
    for Sat16Loop<'_, '_, S, SIGNED, SRC, PREC>
{
    type Output = ();
    #[inline(always)]
    fn run_on(self, simd: S) {
        let Sat16Loop { sp, x, y, p } = self;
        let sp = &sp.fold::<SRC, PREC, 16>();
        let packs = packs16::<S, SIGNED>(simd, sp, p.z);
        for (xb, yb) in x.chunks_exact(4 * S::LANES * sp.src.size()).zip(y.chunks_exact_mut(8 * S::LANES)) {
            sat16_step_store::<S, SIGNED>(simd, sp, xb, [p; 4], packs, yb);
        }
    }
}

/// The float8 / float4 steps of [`QuantizeOp::steps`] on ISAs with
/// [`Simd::store_mini_x4`] (entered where [`Simd::MINI_X4`]): four vectors' quotients
/// ([`mini_quotient`], Markstein's division, the scale in the fast range, except the last
/// [`Simd::MINI_DIV_QUOTIENTS`] by the divide instruction), then one
/// encode-and-store, the quotients a step ahead ([`steps_ahead`]). `x` and `y` hold
/// exactly the steps' bytes; `SRC` and `PREC` are the
/// caller's variant, folded back into the spec (see [`Spec::fold`]).
struct MiniX4Loop<'a, 'y, S: Simd, const MINI: u8, const SRC: u8, const PREC: u8> {
    sp: &'a Spec,
    x: &'a [u8],
    y: &'y mut [u8],
    p: &'a Lanes<S>,
}

impl<S: Simd, const MINI: u8, const SRC: u8, const PREC: u8> IsaKernel<S> for MiniX4Loop<'_, '_, S, MINI, SRC, PREC> {
    type Output = ();
    #[inline(always)]
    fn run_on(self, simd: S) {
        let MiniX4Loop { sp, x, y, p } = self;
        let sp = &sp.fold::<SRC, PREC, ANY>();
        // Float4 (id 10), float6 (ids 11, 12) or float8 codes: the width is a constant.
        let ob = match MINI {
            10 => 4,
            11 | 12 => 6,
            _ => 8,
        };
        let (lanes, xs) = (S::LANES, sp.src.size());
        debug_assert_eq!(ob, sp.bits as usize);
        // `MINI`'s format, or the job's where `MINI` is the run-time id (a float8 format
        // that adds no zero point).
        let fmt = match (MINI, sp.enc) {
            (MINI_RUNTIME, Encode::Mini { fmt, .. }) => fmt,
            _ => MiniFormat::of_id(MINI),
        };
        let add_zero = mini_adds_zero::<MINI>(sp);
        let steps = MiniStepsFixed { sp, fmt: &fmt, p: [p; 4], add_zero };
        steps_ahead(simd, steps, x, 4 * lanes * xs, y, 4 * lanes * ob / 8);
    }
}

/// Whether the whole four-vector steps of the compile-time format `MINI` go through
/// [`Simd::store_mini_x4`] with every quotient from the divide instruction (so whatever
/// the scale): the ISA's encoder takes the format and divides all four
/// ([`Simd::MINI_DIV_QUOTIENTS`]). A constant; 0 (integers) never.
#[inline(always)]
const fn divided_x4<S: Simd, const MINI: u8>() -> bool {
    MINI != 0 && S::MINI_X4 && S::MINI_DIV_QUOTIENTS == 4 && MiniFormat::has_x4_route(MINI)
}

/// Consecutive whole rows of a channel tile that is every channel (per-axis along the last
/// axis, blocked along another axis: [`walk::RowTiles`]) from f32 to the float format of
/// the compile-time id `MINI` (`BITS` bits): the tiled run-time variant enters it, so the
/// format's constants and the width fold instead of being read per vector or rebuilt per
/// step. (2-bit integers take the integer layout driver, [`run_per_axis_last`].) The rows'
/// vectors are taken as one sequence, vector `j` with the parameters `p[j % p.len()]`:
/// where the format has a four-vector encoder, in steps of four through it (every quotient
/// by the divide instruction, so any scale; a step may span rows, as rows of one, two or
/// three vectors do), the rest a vector at a time. `x` and `y` hold exactly the rows'
/// bytes.
struct MiniRows<'a, 'y, S: Simd, const MINI: u8, const BITS: u8> {
    sp: &'a Spec,
    x: &'a [u8],
    y: &'y mut [u8],
    p: &'a [Lanes<S>],
}

impl<S: Simd, const MINI: u8, const BITS: u8> IsaKernel<S> for MiniRows<'_, '_, S, MINI, BITS> {
    type Output = ();
    #[inline(always)]
    fn run_on(self, simd: S) {
        let MiniRows { sp, x, y, p } = self;
        let sp = &sp.fold::<0, 0, BITS>();
        let (lanes, xs, ob) = (S::LANES, 4, sp.bits as usize);
        let (xv, yv) = (lanes * xs, lanes * ob / 8);
        let n = p.len();
        let next = |v: usize| if v + 1 == n { 0 } else { v + 1 };
        // Vector `j`'s parameters, `p[v]` with `v = j % n`, by a running index.
        let mut v = 0;
        let x4 = divided_x4::<S, MINI>();
        if x4 && n.is_multiple_of(4) {
            // Rows of whole steps (the common channel counts): a step's parameters are four
            // consecutive vectors of them, with no running index to wrap.
            let (fmt, add_zero) = (MiniFormat::of_id(MINI), mini_adds_zero::<MINI>(sp));
            if n == 4 {
                // Rows of one step (32 channels on AVX2, 64 on AVX-512), the same parameters
                // every step, held as they are. (In a loop per row LLVM rotated the
                // encoder's constants through other registers every step: AVX2 e4m3fn
                // blocked-middle32 16 moves and a spill in 85 instructions a step.)
                let steps = MiniStepsFixed { sp, fmt: &fmt, p: [&p[0], &p[1], &p[2], &p[3]], add_zero };
                steps_ahead(simd, steps, x, 4 * xv, y, 4 * yv);
                return;
            }
            // Longer rows: the steps as one sequence, the parameters repeating by a
            // running index. (Against a loop per row, without the quotients a step ahead,
            // this helped AVX2 e4m3fn per-axis-last64 and cost e2m1 and e3m2 6-8 %; with
            // them, it measured 1.07x / 1.15x / 1.02x.)
            steps_ahead(simd, MiniSteps { sp, fmt: &fmt, p, v: 0, add_zero }, x, 4 * xv, y, 4 * yv);
            return;
        }
        if x4 {
            let (fmt, add_zero) = (MiniFormat::of_id(MINI), mini_adds_zero::<MINI>(sp));
            for (xq, yq) in x.chunks_exact(4 * xv).zip(y.chunks_exact_mut(4 * yv)) {
                let (v1, v2, v3) = (next(v), next(next(v)), next(next(next(v))));
                simd.store_mini_x4(
                    mini_quotients_x4(simd, sp, xq, [&p[v], &p[v1], &p[v2], &p[v3]], add_zero),
                    &fmt,
                    yq,
                );
                v = next(v3);
            }
        }
        let rest = if x4 { x.len() / (4 * xv) * 4 } else { 0 };
        for (xq, yq) in x.chunks_exact(xv).zip(y.chunks_exact_mut(yv)).skip(rest) {
            store_codes(simd, ob as u32, quantize_vec::<S, MINI>(simd, sp, xq, &p[v]), yq, 0);
            v = next(v);
        }
    }
}

/// [`sat8_loop`] over the whole steps of `x` (one row of the per-row quantizer, broadcast
/// parameters `p` on the fast path), reading as many f32 bytes of `next` (the next row) into
/// the NaN-skipping minimum and maximum accumulators `lo` / `hi` as it goes: the next row's
/// loads from memory overlap this row's arithmetic instead of taking a pass of their own.
///
/// The caller vouches that the scale came from this row's own finite range (so every
/// non-NaN `|x / s|` is at most the type's span, about 255): the quotients then need only
/// `max(q, qmin - z)`, which takes NaN to qmin (the Simd contract), and neither the upper
/// clamp nor [`Simd::cvt_rne_x4`]'s check; the saturating packs do the rest, and where
/// [`packs_floor`] the lower clamp too. The last quotient of each step comes from the divide
/// instruction where [`Simd::DIV_QUOTIENTS`] ([`sat8_quotients`]). `SIGNED`: i8 with zero
/// point 0 (the symmetric rule), so the packs add none.
#[inline(always)]
#[allow(clippy::too_many_arguments)]
pub(crate) fn sat8_loop_with_range<S: Simd, const SIGNED: bool>(
    simd: S,
    sp: &Spec,
    x: &[u8],
    y: &mut [u8],
    p: &Lanes<S>,
    next: &[u8],
    (lo, hi): (&mut [S::F; 4], &mut [S::F; 4]),
) {
    // No conversion check here: f32 only (a 16-bit precision's split rounding turns an
    // infinite quotient into NaN, which `max(q, lo)` would take to qmin).
    debug_assert!(sp.src == Src::F32 && sp.prec == Prec::F32, "unchecked loop: f32 only");
    let lanes = S::LANES;
    let vb = 4 * lanes;
    let z = if SIGNED { simd.splat_i(0) } else { p.z };
    let zq = simd.zero_points_x4([z; 4]);
    let floor = packs_floor::<S>(sp, SIGNED);
    for ((xb, yb), nb) in x.chunks_exact(4 * vb).zip(y.chunks_exact_mut(4 * lanes)).zip(next.chunks_exact(4 * vb)) {
        for k in 0..4 {
            // `min(v, acc)` keeps `acc` for a NaN `v` (the Simd contract). Two pairs of
            // accumulators: four would spill next to the step's own registers on AVX2.
            let v = simd.load_f32(&nb[k * vb..(k + 1) * vb]);
            lo[k & 1] = simd.min(v, lo[k & 1]);
            hi[k & 1] = simd.max(v, hi[k & 1]);
        }
        let mut c = [z; 4];
        for (ck, q) in c.iter_mut().zip(sat8_quotients(simd, sp, xb, [p; 4])) {
            *ck = simd.cvt_rne(if floor { q } else { simd.max(q, p.lo) });
        }
        simd.store_sat8x4(c, zq, SIGNED, yb);
    }
}

/// Whether the range loops ([`sat8_loop_with_range`], [`sat_step_with_range`]) may leave
/// out their `max(q, qmin - z)`: on an ISA whose conversion gives NaN the integer
/// indefinite `i32::MIN` and whose stores saturate it by packs ([`Simd::PACK_CHECK`]),
/// NaN's code is then the type's minimum, as is every finite quotient's below the range;
/// so wherever the job's range starts at the type's own minimum (`signed`: i8 / i4, of
/// `sp.bits` 8 or 4), the packs are that clamp.
#[inline(always)]
fn packs_floor<S: Simd>(sp: &Spec, signed: bool) -> bool {
    let Encode::Int { qmin, .. } = sp.enc else { return false };
    let type_min = match (sp.bits, signed) {
        (8 | 4, true) => -(1i32 << (sp.bits - 1)),
        (8 | 4, false) => 0,
        _ => return false,
    };
    S::PACK_CHECK && qmin == type_min
}

/// One block of the scaled quantizers' 8- or 4-bit integer codes (`bits`; f32 x of whole
/// four-vector steps) with broadcast parameters `p` in the fast range, where the caller
/// vouches that the scale came from this block's own finite range, as for
/// [`sat8_loop_with_range`]: the quotients ([`sat8_quotients`]) need only
/// `max(q, qmin - z)` (NaN to qmin; none where [`packs_floor`]), no conversion check, and
/// the saturating packs of [`Simd::store_sat8x4`] / [`Simd::store_sat4x4`] are the clamp.
/// `signed`: i8 / i4.
#[inline(always)]
pub(crate) fn sat_block_with_range<S: Simd>(
    simd: S,
    sp: &Spec,
    x: &[u8],
    y: &mut [u8],
    p: &Lanes<S>,
    signed: bool,
    bits: usize,
) {
    // No conversion check here: f32 only (as in `sat8_loop_with_range`).
    debug_assert!(sp.src == Src::F32 && sp.prec == Prec::F32, "unchecked loop: f32 only");
    let lanes = S::LANES;
    let vb = 4 * lanes;
    let zq = simd.zero_points_x4([p.z; 4]);
    // (Indexed stores: chunks of a run-time size would divide to count them.)
    let yw = 4 * lanes * bits / 8;
    for (t, xb) in x.chunks_exact(4 * vb).enumerate() {
        sat_step_with_range(simd, sp, xb, [p; 4], zq, signed, bits, &mut y[t * yw..(t + 1) * yw]);
    }
}

/// One four-vector step of [`sat_block_with_range`]'s codes (vector `k` of `x` with
/// `p[k]`, every scale in the fast range and from its own block's finite range, as there),
/// `zq` the zero points as [`Simd::zero_points_x4`] prepares them.
#[inline(always)]
#[allow(clippy::too_many_arguments)]
pub(crate) fn sat_step_with_range<S: Simd>(
    simd: S,
    sp: &Spec,
    x: &[u8],
    p: [&Lanes<S>; 4],
    zq: [S::I; 4],
    signed: bool,
    bits: usize,
    y: &mut [u8],
) {
    let q = sat8_quotients(simd, sp, x, p);
    let floor = packs_floor::<S>(sp, signed);
    let mut c = [simd.splat_i(0); 4];
    for ((ck, qk), pk) in c.iter_mut().zip(q).zip(p) {
        *ck = simd.cvt_rne(if floor { qk } else { simd.max(qk, pk.lo) });
    }
    if bits == 8 {
        simd.store_sat8x4(c, zq, signed, y);
    } else {
        simd.store_sat4x4(c, zq, signed, y);
    }
}

/// The segment walk for the layout drivers' leftovers (8-, 4- or 16-bit integer outputs,
/// `bits`): the variant [`run`] takes for the call anyway (no walk of their own). `y` holds
/// the output from element `begin` (on a byte).
#[inline(always)]
fn walk_int<S: Simd, const SRC: u8, const PREC: u8>(
    simd: S,
    job: &Job<'_>,
    begin: usize,
    end: usize,
    y: &mut [u8],
    bits: usize,
) {
    match (bits, SRC, PREC) {
        (8, _, _) => walk::<S, SRC, PREC, 0, 8>(simd, job, begin, end, y),
        (16, 0, 0) => walk::<S, 0, 0, 0, 16>(simd, job, begin, end, y),
        (4, 0, 0) => walk::<S, 0, 0, 0, 4>(simd, job, begin, end, y),
        _ => walk::<S, ANY, ANY, 0, ANY>(simd, job, begin, end, y),
    }
}

/// Whether [`run_blocked_sat8`] covers a call: blocked along the last axis to an 8- or
/// 16-bit integer type, or a 4-bit one whose rows and range start on a byte, blocks of two
/// vectors (paired per store, 8 bits) or of a multiple of four, on an ISA with FMA.
fn blocked_sat8<S: Simd>(job: &Job<'_>, begin: usize) -> Option<(usize, usize)> {
    match (job.layout, job.enc, job.out.bits()) {
        (Layout::Blocked { axis_len, inner: 1, block, .. }, Encode::Int { .. }, bits @ (8 | 4 | 2 | 16))
            if S::HAS_FMA
                && (bits >= 8 || (begin | axis_len).is_multiple_of(8 / bits as usize))
                && axis_len > 0
                && block > 0
                && (block == 2 * S::LANES || block.is_multiple_of(4 * S::LANES)) =>
        {
            Some((axis_len, block))
        }
        _ => None,
    }
}

/// Blocked quantization along the last axis to an 8-bit integer type (f32 x with f32
/// arithmetic, or f16 / bf16 x in its own precision: `SRC`, `PREC`), or from f32 to a 4-,
/// 2- or 16-bit one, the layout of weight and activation blocks (block 32, 64, 128 ...). A
/// per-block `splat_lanes` (scalar
/// reciprocal, zero-point decode) would cost as much as the block's 32 elements, so the
/// parameters of 16 consecutive blocks come from vector loads and one vector division,
/// and each block then runs the 8-bit fast path of the per-tensor loop (two blocks per
/// four-vector store when a block is two vectors). Blocks that do not fit (cut by the
/// range, a short last block of a row, a scale outside the fast range) take the general
/// segment walk.
#[inline(always)]
#[allow(clippy::too_many_arguments)]
fn run_blocked_sat8<S: Simd, const SRC: u8, const PREC: u8>(
    simd: S,
    job: &Job<'_>,
    begin: usize,
    end: usize,
    y: &mut [u8],
    axis_len: usize,
    block: usize,
) {
    let sp = Spec::resolve::<SRC, PREC, ANY>(job);
    let Encode::Int { qmin, .. } = sp.enc else { return };
    let lanes = S::LANES;
    let vb = lanes * sp.src.size();
    let bits = sp.bits as usize;
    let per_row = axis_len.div_ceil(block);
    let n_scales = job.scale.len() / job.scale_kind.size();
    // The first block touching the range, and its first element.
    let (o, d) = (begin / axis_len, begin % axis_len);
    let mut k = o * per_row + d / block;
    let mut row_start = o * axis_len;
    let mut b = d / block;
    while row_start + b * block < end {
        // The common case: runs of whole groups of contiguous full blocks inside the range,
        // every scale in the fast range, in one entered kernel; it stops at the first group
        // that is not.
        if axis_len.is_multiple_of(block) {
            let signed = qmin < 0;
            k = BlockedGroups::<SRC, PREC> { job: *job, y: &mut *y, begin, end, block, signed, bits, k }.enter(simd);
            (row_start, b) = (k / per_row * axis_len, k % per_row);
            if row_start + b * block >= end {
                break;
            }
        }
        // Parameters of blocks k .. k + g.
        let g = lanes.min(n_scales - k);
        let p = seq_lanes(simd, job, k, g);
        let gp = GroupParams::new(simd, p.divisor, p.z);
        let mut j = 0;
        while j < g && row_start + b * block < end {
            let e0 = row_start + b * block;
            let len = block.min(axis_len - b * block);
            let e1 = e0 + len;
            let sj = gp.scale(j);
            // Eligible: a whole block inside the range, a fast scale, and (for two-vector
            // blocks) a partner block that is eligible too.
            let whole =
                |e0: usize, len: usize, sj: f32| len == block && e0 >= begin && e0 + len <= end && fast_scale(sj);
            let vpb = block / lanes;
            let next_ok = vpb.is_multiple_of(4) || {
                // The partner: the next block of the group, in the same row.
                j + 1 < g && b + 1 < per_row && whole(e1, block.min(axis_len - (b + 1) * block), gp.scale(j + 1))
            };
            if bits == 8 && whole(e0, len, sj) && next_ok {
                let span = if vpb.is_multiple_of(4) { 1 } else { 2 };
                let len = span * block;
                let xb = &job.x[e0 * sp.src.size()..(e0 + len) * sp.src.size()];
                let yb = &mut y[e0 - begin..e0 - begin + len];
                let (pa, pb) = (gp.block(simd, j), gp.block(simd, j + span - 1));
                // Four vectors per store: vectors 0, 1 from the first block of the pair
                // (or of a 4k-vector block), 2, 3 from the second. (Plain indexing: an
                // iterator adapter here was not inlined.)
                let pf = if span == 2 { &pb } else { &pa };
                let z = simd.zero_points_x4([pa.z, pa.z, pf.z, pf.z]);
                for step in 0..len / (4 * lanes) {
                    let xq = &xb[step * 4 * vb..(step + 1) * 4 * vb];
                    let yq = &mut yb[step * 4 * lanes..(step + 1) * 4 * lanes];
                    let c = sat8_step(simd, &sp, xq, [&pa, &pa, pf, pf]);
                    match qmin < 0 {
                        true => simd.store_sat8x4(c, z, true, yq),
                        false => simd.store_sat8x4(c, z, false, yq),
                    }
                }
                j += span;
                b += span;
            } else {
                // The part of this block inside the range, on the general path.
                let (lo, hi) = (e0.max(begin), e1.min(end));
                // The variant `run` has anyway (not a walk of its own).
                let yb = &mut y[(lo - begin) * bits / 8..((hi - begin) * bits).div_ceil(8)];
                walk_int::<S, SRC, PREC>(simd, job, lo, hi, yb, bits);
                j += 1;
                b += 1;
            }
            if b == per_row {
                b = 0;
                row_start += axis_len;
            }
        }
        k += j;
    }
}

/// The block size when [`BlockedMini`] takes a call: blocked along the last axis to a
/// float8 or float4 format (of the four-vector encoder) that adds no zero point, blocks of
/// two vectors or of a multiple of four that tile every row, a 4-bit output's range from a
/// byte. (float6 takes [`BlockedVec`].)
fn blocked_mini<S: Simd>(job: &Job<'_>, begin: usize) -> Option<usize> {
    match (job.layout, job.enc) {
        (Layout::Blocked { axis_len, inner: 1, block, .. }, Encode::Mini { add_zero: false, .. })
            if MiniFormat::has_x4_route(mini_id(job))
                && matches!(job.out.bits(), 4 | 8)
                && block > 0
                && axis_len.is_multiple_of(block)
                && (block == 2 * S::LANES || block.is_multiple_of(4 * S::LANES))
                && (job.out.bits() == 8 || begin.is_multiple_of(2)) =>
        {
            Some(block)
        }
        _ => None,
    }
}

/// Blocked quantization along the last axis from f32 to float8 / float4 (formats of
/// [`MiniFormat::has_x4_route`] that add no zero point), on ISAs whose four-vector encoder
/// takes every quotient from the divide instruction ([`Simd::MINI_DIV_QUOTIENTS`] = 4, so
/// any scale): per block its broadcast divisor, then steps of four vectors (vectors 0, 1
/// from one block and 2, 3 from the next when a block is two vectors) encoded and stored
/// by [`Simd::store_mini_x4`]. Block `k` is elements `[k B, (k + 1) B)`; the partial
/// blocks at either end of the range (and an unpaired last two-vector block) take the
/// segment walk.
///
/// The elements `[begin, end)` of a call blocked along the last axis in blocks of `block`
/// (the whole-block kernels' argument: [`BlockedMiniOf`], [`BlockedVecOf`]).
struct BlockedMini<'a, 'y> {
    job: Job<'a>,
    begin: usize,
    end: usize,
    y: &'y mut [u8],
    block: usize,
}

/// [`BlockedMini`] for the compile-time format `MINI` (an id of [`MiniFormat::of_id`], or
/// [`MINI_RUNTIME`] for the job's).
struct BlockedMiniOf<'a, 'y, const MINI: u8>(BlockedMini<'a, 'y>);

impl<const MINI: u8> Kernel for BlockedMiniOf<'_, '_, MINI> {
    type Output = ();
    #[inline(always)]
    fn run<S: Simd>(self, simd: S) {
        let BlockedMini { job, begin, end, y, block } = self.0;
        let sp = Spec::resolve::<0, 0, ANY>(&job);
        let Encode::Mini { fmt, .. } = sp.enc else { return };
        let fmt = if MINI == MINI_RUNTIME { fmt } else { MiniFormat::of_id(MINI) };
        // The output width a constant where the format is (float4 id 10, the rest float8):
        // a step's output chunk is then a constant size, where a run-time one cost an
        // integer division per block for the step count (AVX2 e4m3fn blocked-last32 3.18 ->
        // 2.82 instructions per element, 1.1x).
        let ob = match MINI {
            MINI_RUNTIME => sp.bits as usize,
            10 => 4,
            _ => 8,
        };
        debug_assert_eq!(ob, sp.bits as usize);
        let lanes = S::LANES;
        // Whole blocks `[b0, b1)` of the range, in units of one block or, for two-vector
        // blocks, of two; the rest by the segment walk.
        let unit = if block == 2 * lanes { 2 * block } else { block };
        let b0 = begin.next_multiple_of(block);
        let b1 = if b0 < end { b0 + (end - b0) / unit * unit } else { end };
        let rest = [(begin, b0.min(end)), (b1, end)];
        if b0 < b1 {
            let (sc, kind) = (job.scale, job.scale_kind);
            // Blocks of one four-vector step or of half of one: groups of `LANES` by a kernel
            // of their own (its copy of the step in its own frame); the rest here.
            let done = if block == 4 * lanes || block == 2 * lanes {
                let g = MiniGroups::of(sp, fmt, &job, (b0, b1), begin, block, ob, y);
                g.enter::<S, MINI>(simd, block == 2 * lanes)
            } else {
                0
            };
            let b0 = b0 + done * block;
            let x = &job.x[4 * b0..4 * b1];
            let yb = &mut y[(b0 - begin) * ob / 8..(b1 - begin) * ob / 8];
            // (No closure for the divisors: closures do not inherit the ISA's features.)
            let one = fast_lanes(simd, 1.0, 1.0, 0);
            for (u, (xu, yu)) in x.chunks_exact(4 * unit).zip(yb.chunks_exact_mut(unit * ob / 8)).enumerate() {
                let k = b0 / block + u * (unit / block);
                let pa = Lanes { divisor: simd.splat(kind.get_inline(sc, k)), ..one };
                let pb =
                    if unit == block { pa } else { Lanes { divisor: simd.splat(kind.get_inline(sc, k + 1)), ..one } };
                for (xq, yq) in xu.chunks_exact(16 * lanes).zip(yu.chunks_exact_mut(4 * lanes * ob / 8)) {
                    simd.store_mini_x4(mini_quotients_x4(simd, &sp, xq, [&pa, &pa, &pb, &pb], false), &fmt, yq);
                }
            }
        }
        for (lo, hi) in rest {
            if lo < hi {
                let yb = &mut y[(lo - begin) * ob / 8..((hi - begin) * ob).div_ceil(8)];
                // The variant `run` takes for the call anyway.
                match MINI {
                    2 => walk::<S, 0, 0, 2, 8>(simd, &job, lo, hi, yb),
                    4 => walk::<S, 0, 0, 4, 8>(simd, &job, lo, hi, yb),
                    10 => walk::<S, 0, 0, 10, 4>(simd, &job, lo, hi, yb),
                    _ => walk::<S, 0, 0, MINI_RUNTIME, ANY>(simd, &job, lo, hi, yb),
                }
            }
        }
    }
}

/// The whole blocks of [`BlockedMiniOf`] (and of [`BlockedVecOf`]'s float6 without a zero
/// point) whose block is one four-vector step (`4 LANES` elements: blocks of 32 on AVX2)
/// or half of one (`PAIR`: blocks of 32 on AVX-512), `LANES` blocks a group: the group's
/// divisors by one vector load, then per step its blocks' lane broadcasts. A block's own
/// scale read, broadcast and loop set-up cost more than its lanes (AVX2 e4m3fn
/// blocked-last32: about 23 instructions a block of 32 on top of the step). A kernel of
/// its own per `PAIR`, so that an unoptimised build keeps these copies of the step out of
/// [`BlockedMiniOf`]'s frame. `x` and `y` are the whole blocks from block `k0`; returns the
/// blocks it covered (whole groups).
struct MiniGroups<'a, 'y> {
    sp: Spec,
    fmt: MiniFormat,
    scale: &'a [u8],
    kind: ScaleKind,
    k0: usize,
    x: &'a [u8],
    y: &'y mut [u8],
}

impl<'a, 'y> MiniGroups<'a, 'y> {
    /// The whole blocks `[b0, b1)` (elements) of a call blocked along the last axis in
    /// blocks of `block`, whose codes of `ob` bits start at element `begin` of `y`.
    #[allow(clippy::too_many_arguments)]
    #[inline(always)]
    fn of(
        sp: Spec,
        fmt: MiniFormat,
        job: &Job<'a>,
        (b0, b1): (usize, usize),
        begin: usize,
        block: usize,
        ob: usize,
        y: &'y mut [u8],
    ) -> MiniGroups<'a, 'y> {
        let (x, y) = (&job.x[4 * b0..4 * b1], &mut y[(b0 - begin) * ob / 8..(b1 - begin) * ob / 8]);
        MiniGroups { sp, fmt, scale: job.scale, kind: job.scale_kind, k0: b0 / block, x, y }
    }

    /// Runs the kernel of format `MINI`, for blocks of two vectors (`pair`) or of four;
    /// returns the blocks it covered.
    #[inline(always)]
    fn enter<S: Simd, const MINI: u8>(self, simd: S, pair: bool) -> usize {
        match pair {
            true => simd.enter(MiniGroupsOf::<MINI, true>(self)),
            false => simd.enter(MiniGroupsOf::<MINI, false>(self)),
        }
    }
}

/// [`MiniGroups`] for the compile-time format `MINI` and block shape `PAIR`.
struct MiniGroupsOf<'a, 'y, const MINI: u8, const PAIR: bool>(MiniGroups<'a, 'y>);

impl<const MINI: u8, const PAIR: bool> Kernel for MiniGroupsOf<'_, '_, MINI, PAIR> {
    type Output = usize;
    #[inline(always)]
    fn run<S: Simd>(self, simd: S) -> usize {
        let MiniGroups { sp, fmt, scale, kind, k0, x, y } = self.0;
        // The compile-time parts again (this is a function of its own): f32 x and
        // division, and the format where `MINI` names it.
        let sp = sp.fold::<0, 0, ANY>();
        let fmt = if MINI == MINI_RUNTIME { fmt } else { MiniFormat::of_id(MINI) };
        let lanes = S::LANES;
        // A step's bytes in and out (the output width a constant where the format is, as
        // in `BlockedMiniOf`).
        let ob = match MINI {
            MINI_RUNTIME => sp.bits as usize,
            10 => 4,
            11 | 12 => 6,
            _ => 8,
        };
        debug_assert_eq!(ob, sp.bits as usize);
        let (xstep, ystep) = (16 * lanes, 4 * lanes * ob / 8);
        let one = fast_lanes(simd, 1.0, 1.0, 0);
        let mut d = [0u8; 64];
        // `LANES` blocks a group: as many steps, or half as many for pairs.
        let steps = if PAIR { lanes / 2 } else { lanes };
        let groups = x.chunks_exact(steps * xstep).zip(y.chunks_exact_mut(steps * ystep));
        let mut k = k0;
        for (xg, yg) in groups {
            simd.store_f32(kind.load(simd, scale, k), &mut d);
            steps_ahead(simd, MiniGroupSteps::<S, PAIR> { sp: &sp, fmt: &fmt, d: &d, u: 0, one }, xg, xstep, yg, ystep);
            k += lanes;
        }
        k - k0
    }
}

/// The steps of one group of [`MiniGroupsOf`]: step `u` with the divisors of block `u`
/// (twice), or of blocks `2u` and `2u + 1` where `PAIR`, from the group's scales `d`
/// (`% 16`: the same lanes, and no bounds test per step); the rest of `one`.
struct MiniGroupSteps<'a, S: Simd, const PAIR: bool> {
    sp: &'a Spec,
    fmt: &'a MiniFormat,
    d: &'a [u8; 64],
    u: usize,
    one: Lanes<S>,
}

impl<S: Simd, const PAIR: bool> AheadStep<S> for MiniGroupSteps<'_, S, PAIR> {
    type Q = [S::F; 4];
    #[inline(always)]
    fn quotients(&mut self, simd: S, x: &[u8]) -> [S::F; 4] {
        let u = self.u;
        self.u += 1;
        let (ja, jb) = if PAIR { ((2 * u) % 16, (2 * u + 1) % 16) } else { (u % 16, u % 16) };
        let pa = Lanes { divisor: simd.splat(lane_f32(self.d, ja)), ..self.one };
        let pb = if PAIR { Lanes { divisor: simd.splat(lane_f32(self.d, jb)), ..self.one } } else { pa };
        mini_quotients_x4(simd, self.sp, x, [&pa, &pa, &pb, &pb], false)
    }
    #[inline(always)]
    fn store(&mut self, simd: S, q: [S::F; 4], _: &[u8], y: &mut [u8]) {
        simd.store_mini_x4(q, self.fmt, y);
    }
}

/// The block size when [`BlockedVec`] takes a call: blocked along the last axis, blocks of
/// whole vectors that tile every row, the range from a packing group.
fn blocked_vec<S: Simd>(job: &Job<'_>, begin: usize) -> Option<usize> {
    match job.layout {
        Layout::Blocked { axis_len, inner: 1, block, .. }
            if block > 0
                && block.is_multiple_of(S::LANES)
                && axis_len.is_multiple_of(block)
                && begin.is_multiple_of(group(job.out)) =>
        {
            Some(block)
        }
        _ => None,
    }
}

/// Blocked quantization along the last axis from f32 for the outputs that neither the
/// 8-bit layout kernels nor [`BlockedMini`] take (2-bit integers, float6): per whole block
/// its broadcast parameters (those of [`splat_lanes`], read inline), then its vectors,
/// without the segment walk's per-run setup (which cost more than a 32-element block's own
/// work); the partial blocks at either end of the range take the segment walk. Block `k`
/// is elements `[k B, (k + 1) B)`. Its argument is [`BlockedMini`]'s (the same call
/// shape).
type BlockedVec<'a, 'y> = BlockedMini<'a, 'y>;

/// One vector's codes of [`BlockedVec`]: Markstein's division where the block's scale is
/// `fast` (known per block), else the division chosen per vector.
#[inline(always)]
fn block_vec<S: Simd, const MINI: u8>(simd: S, sp: &Spec, xv: &[u8], p: &Lanes<S>, fast: bool) -> S::I {
    if fast {
        quantize_vec_d::<S, MINI, false, DIV_FAST>(simd, sp, xv, p).0
    } else {
        quantize_vec::<S, MINI>(simd, sp, xv, p)
    }
}

/// Integer zero point `k`, the 2-, 4-, 8- and 16-bit types read inline (per-block and
/// per-run setup; [`Job::zp`], DequantizeLinear's blocked kernels).
#[inline(always)]
pub(crate) fn zero_point_at(zp: &Packed<'_>, k: usize) -> i32 {
    let d = zp.data;
    match zp.dtype {
        DataType::U8 => d[k] as i32,
        DataType::I8 => d[k] as i8 as i32,
        DataType::U4 => (d[k / 2] >> (4 * (k % 2)) & 15) as i32,
        DataType::I4 => ((d[k / 2] >> (4 * (k % 2))) << 4) as i8 as i32 >> 4,
        DataType::U2 => (d[k / 4] >> (2 * (k % 4)) & 3) as i32,
        DataType::I2 => ((d[k / 4] >> (2 * (k % 4))) << 6) as i8 as i32 >> 6,
        DataType::U16 => u16::from_le_bytes([d[2 * k], d[2 * k + 1]]) as i32,
        DataType::I16 => i16::from_le_bytes([d[2 * k], d[2 * k + 1]]) as i32,
        t => packing::get_int(t, d, k) as i32,
    }
}

/// [`BlockedVec`] for the compile-time float format `MINI` (0: integers) and output width
/// `BITS`.
struct BlockedVecOf<'a, 'y, const MINI: u8, const BITS: u8>(BlockedVec<'a, 'y>);

impl<const MINI: u8, const BITS: u8> Kernel for BlockedVecOf<'_, '_, MINI, BITS> {
    type Output = ();
    #[inline(always)]
    fn run<S: Simd>(self, simd: S) {
        let BlockedVec { job, begin, end, y, block } = self.0;
        let sp = Spec::resolve::<0, 0, BITS>(&job);
        let (lanes, ob) = (S::LANES, BITS as usize);
        let b0 = begin.next_multiple_of(block);
        let b1 = if b0 < end { b0 + (end - b0) / block * block } else { end };
        let add_zero = matches!(sp.enc, Encode::Mini { add_zero: true, .. });
        // float6 on ISAs with the four-vector encoder (every quotient by the divide
        // instruction, so any scale): blocks of a multiple of four vectors one at a time,
        // blocks of two vectors in pairs (vectors 0, 1 from one block, 2, 3 from the next),
        // each block with its broadcast divisor and float zero point. `bv`: where the
        // whole blocks left to the per-block loop below start.
        let x4 = divided_x4::<S, MINI>();
        let pair = block == 2 * lanes;
        let mut bv = b0;
        if x4 && b0 < b1 && (pair || block.is_multiple_of(4 * lanes)) {
            let fmt = MiniFormat::of_id(MINI);
            let unit = if pair { 2 * block } else { block };
            bv = b0 + (b1 - b0) / unit * unit;
            let (sc, kind) = (job.scale, job.scale_kind);
            // Without a float zero point, blocks of one step or of half of one in groups of
            // `LANES` (`MiniGroups`, as `BlockedMiniOf`); whole groups are whole units.
            let done = if !add_zero && (pair || block == 4 * lanes) {
                MiniGroups::of(sp, fmt, &job, (b0, bv), begin, block, ob, y).enter::<S, MINI>(simd, pair)
            } else {
                0
            };
            let bs = b0 + done * block;
            let x = &job.x[4 * bs..4 * bv];
            let yb = &mut y[(bs - begin) * ob / 8..(bv - begin) * ob / 8];
            let one = fast_lanes(simd, 1.0, 1.0, 0);
            for (u, (xu, yu)) in x.chunks_exact(4 * unit).zip(yb.chunks_exact_mut(unit * ob / 8)).enumerate() {
                let k = bs / block + u * (unit / block);
                let zf = |k| if add_zero { job.zf(k) } else { 0.0 };
                let pa = Lanes { divisor: simd.splat(kind.get_inline(sc, k)), zf: simd.splat(zf(k)), ..one };
                let pb = match pair {
                    true => Lanes { divisor: simd.splat(kind.get_inline(sc, k + 1)), zf: simd.splat(zf(k + 1)), ..one },
                    false => pa,
                };
                for (xq, yq) in xu.chunks_exact(16 * lanes).zip(yu.chunks_exact_mut(4 * lanes * ob / 8)) {
                    simd.store_mini_x4(mini_quotients_x4(simd, &sp, xq, [&pa, &pa, &pb, &pb], add_zero), &fmt, yq);
                }
            }
        }
        if bv < b1 {
            let x = &job.x[4 * bv..4 * b1];
            let yb = &mut y[(bv - begin) * ob / 8..(b1 - begin) * ob / 8];
            let blocks = x.chunks_exact(4 * block).zip(yb.chunks_exact_mut(block * ob / 8));
            let (mut k, k1) = (bv / block, b1 / block);
            // Integers: groups of `LANES` blocks take their parameters from vector loads
            // (one division for the group's reciprocals), as `BlockedGroups` does; a
            // block's own scalar set-up (scale, zero point, bounds) cost three times its
            // 32 elements' work. `group`: the current group's parameters and first block.
            // (One call of the block code for both: an unoptimised build gives each copy
            // its own stack slots.)
            let mut group: Option<(IntGroupLanes, usize)> = None;
            for (xk, yk) in blocks {
                if MINI == 0 && group.as_ref().is_none_or(|g| k >= g.1 + lanes) {
                    group = if k1 - k >= lanes { Some((IntGroupLanes::new(simd, &job, &sp, k), k)) } else { None };
                }
                let (p, fast) = match &group {
                    Some((gl, g0)) => gl.block(simd, k - g0),
                    None => {
                        // [`splat_lanes`] written out for f32 x and division, the zero
                        // point only for integers and the float one only where added (the
                        // shared function's run-time precision and encoding took 0.7 more
                        // instructions per element).
                        let sc = job.scale_kind.get_inline(job.scale, k);
                        let z = if MINI == 0 { job.zp(k) } else { 0 };
                        let (lo, hi) = match sp.enc {
                            Encode::Int { qmin, qmax } => ((qmin - z) as f32, (qmax - z) as f32),
                            Encode::Mini { .. } => (0.0, 0.0),
                        };
                        let zf = if MINI != 0 && add_zero { job.zf(k) } else { 0.0 };
                        let fast = fast_scale(sc) && S::HAS_FMA;
                        let p = Lanes {
                            divisor: simd.splat(sc),
                            raw: simd.splat(sc),
                            r: simd.splat(1.0 / sc),
                            fast,
                            pow2: false,
                            z: simd.splat_i(z),
                            lo: simd.splat(lo),
                            hi: simd.splat(hi),
                            zf: simd.splat(zf),
                        };
                        (p, fast)
                    }
                };
                block_vecs::<S, MINI, BITS>(simd, &sp, xk, yk, &p, fast);
                k += 1;
            }
        }
        for (lo, hi) in [(begin, b0.min(end)), (b1, end)] {
            if lo < hi {
                let yb = &mut y[(lo - begin) * ob / 8..((hi - begin) * ob).div_ceil(8)];
                // The variant `run` takes for the call anyway.
                walk::<S, 0, 0, MINI, BITS>(simd, &job, lo, hi, yb);
            }
        }
    }
}

/// One whole block of [`BlockedVec`] with its broadcast parameters: four vectors' codes
/// per store where the block has them (one pack for 2-bit codes; not float6 here, stored
/// a vector at a time anyway), the rest a vector at a time.
#[inline(always)]
fn block_vecs<S: Simd, const MINI: u8, const BITS: u8>(
    simd: S,
    sp: &Spec,
    xk: &[u8],
    yk: &mut [u8],
    p: &Lanes<S>,
    fast: bool,
) {
    let (lanes, ob) = (S::LANES, BITS as usize);
    let whole = if MINI == 0 { xk.len() / (16 * lanes) * 4 } else { 0 };
    let steps = xk.chunks_exact(16 * lanes).zip(yk.chunks_exact_mut(4 * lanes * ob / 8)).take(whole / 4);
    for (xq, yq) in steps {
        let mut c = [simd.splat_i(0); 4];
        for (ck, xv) in c.iter_mut().zip(xq.chunks_exact(4 * lanes)) {
            *ck = block_vec::<S, MINI>(simd, sp, xv, p, fast);
        }
        store_codes_x4::<S, MINI>(simd, sp, c, yq);
    }
    // (The rest only where there is one: an empty skipped zip still cost a block a fifth
    // of its instructions.)
    if whole * 4 * lanes < xk.len() {
        let vectors = xk.chunks_exact(4 * lanes).zip(yk.chunks_exact_mut(lanes * ob / 8)).skip(whole);
        for (xv, yv) in vectors {
            store_codes(simd, BITS as u32, block_vec::<S, MINI>(simd, sp, xv, p, fast), yv, 0);
        }
    }
}

/// The parameters of `LANES` consecutive blocks from block `k` of an integer output with
/// f32 x and division: [`GroupParams`] (divisor, reciprocal, zero point from vector loads)
/// with the code bounds `[qmin - z, qmax - z]` beside them, and which scales are in the
/// fast range (FMA only).
struct IntGroupLanes {
    gp: GroupParams,
    bounds: [[u8; 64]; 2],
    fast: u32,
}

impl IntGroupLanes {
    #[inline(always)]
    fn new<S: Simd>(simd: S, job: &Job<'_>, sp: &Spec, k: usize) -> IntGroupLanes {
        let (qmin, qmax) = match sp.enc {
            Encode::Int { qmin, qmax } => (qmin, qmax),
            Encode::Mini { .. } => (0, 0), // (integer outputs only)
        };
        let divisor = job.scale_kind.load(simd, job.scale, k);
        let z = match &job.zero_point {
            Some(zp) => load_codes(simd, zp, k, S::LANES, true),
            None => simd.splat_i(0),
        };
        let zf = simd.cvt_f32(z);
        let mut bounds = [[0u8; 64]; 2];
        simd.store_f32(simd.sub(simd.splat(qmin as f32), zf), &mut bounds[0]);
        simd.store_f32(simd.sub(simd.splat(qmax as f32), zf), &mut bounds[1]);
        let fast = if S::HAS_FMA { !simd.mask_bits(slow_scale_lanes(simd, divisor)) } else { 0 };
        IntGroupLanes { gp: GroupParams::new(simd, divisor, z), bounds, fast }
    }

    /// Block `j`'s broadcast parameters, and whether its scale is in the fast range.
    #[inline(always)]
    fn block<S: Simd>(&self, simd: S, j: usize) -> (Lanes<S>, bool) {
        let p = self.gp.block(simd, j);
        let fast = self.fast & (1 << j) != 0;
        let (lo, hi) = (simd.splat(lane_f32(&self.bounds[0], j)), simd.splat(lane_f32(&self.bounds[1], j)));
        (Lanes { raw: p.divisor, fast, lo, hi, ..p }, fast)
    }
}

/// Vectors of channels per tile of [`run_per_axis_last`]: the walk's tile.
const AXIS_TILE_VECTORS: usize = walk::PER_AXIS_TILE;

/// Per-axis quantization to an 8-bit integer type along the last axis (f32 x with f32
/// arithmetic, or f16 / bf16 x in its own precision: `SRC`, `PREC`; from f32 also to 4-,
/// 16- and 2-bit types; `[rows, C]`,
/// one scale per channel), and blocked quantization along another axis (`[outer, D,
/// inner]`: rows of `inner` elements, each block of rows sharing a row of scales; see
/// [`walk::RowTiles`]): each vector of x meets `LANES` different scales, the same ones
/// on every row of a group. The general walk rebuilds those parameters (scale loads, zero
/// points, bounds) for every vector and divides; here a tile of up to 16 vectors of
/// channels gets its parameters once per group (with vector reciprocals, so Markstein's
/// exact division applies lane by lane), then every full row of the group runs through
/// the tile. Rows cut by the range take the general walk.
#[inline(always)]
fn run_per_axis_last<S: Simd, const SRC: u8, const PREC: u8>(
    simd: S,
    job: &Job<'_>,
    begin: usize,
    end: usize,
    y: &mut [u8],
    rows: walk::RowTiles,
) {
    let sp = Spec::resolve::<SRC, PREC, ANY>(job);
    let lanes = S::LANES;
    let (xs, bits) = (sp.src.size(), sp.bits as usize);
    let channels = rows.channels;
    let (r0, r1) = (begin.div_ceil(channels), end / channels);
    if r0 >= r1 {
        return walk_int::<S, SRC, PREC>(simd, job, begin, end, y, bits);
    }
    // (Rows start on a byte: `RowTiles::of` checks the channel count and `begin`.)
    let (head_end, tail_start) = (r0 * channels, r1 * channels);
    if begin < head_end {
        walk_int::<S, SRC, PREC>(simd, job, begin, head_end, &mut y[..(head_end - begin) * bits / 8], bits);
    }
    let tile = AXIS_TILE_VECTORS * lanes;
    let mut c0 = 0;
    while c0 < channels {
        let tc = tile.min(channels - c0);
        let nv = tc.div_ceil(lanes);
        // Integers with whole vectors in fours: the saturating 8-bit path, a kernel
        // of its own over the tile's groups from `g0`, up to the first group with a scale
        // outside the fast range.
        // (Or rows of one or two vectors, the tile the whole row, whose groups' rows fill
        // whole steps: steps across rows.)
        let short =
            c0 == 0 && tc == channels && tc.is_multiple_of(lanes) && matches!(nv, 1 | 2) && rows.groups_fill(4 / nv);
        let sat = S::HAS_FMA && (tc.is_multiple_of(4 * lanes) || short) && matches!(sp.enc, Encode::Int { .. });
        let mut g0 = r0;
        while g0 < r1 {
            if sat {
                let signed = matches!(sp.enc, Encode::Int { qmin, .. } if qmin < 0);
                let (y, geometry) = (&mut *y, (g0, r1, c0, nv));
                g0 = AxisSat8Rows::<SRC, PREC> { job: *job, sp, signed, y, begin, rows, geometry }.enter(simd);
                if g0 == r1 {
                    break;
                }
            }
            // The rows `g0..g1` share the scales from index `kb`: per vector, with the
            // division chosen per vector.
            let (kb, next) = rows.group(g0);
            let g1 = next.min(r1);
            let mut params = [fast_lanes(simd, 1.0, 1.0, 0); AXIS_TILE_VECTORS];
            for (v, p) in params.iter_mut().enumerate().take(nv) {
                *p = tile_lanes(simd, job, kb + c0 + v * lanes, lanes.min(tc - v * lanes));
            }
            for row in g0..g1 {
                let e0 = row * channels + c0;
                for (v, p) in params.iter().enumerate().take(nv) {
                    let e = e0 + v * lanes;
                    let valid = lanes.min(tc - v * lanes);
                    if valid == lanes {
                        let (c, _) = quantize_vec_m::<S, 0, false>(simd, &sp, &job.x[e * xs..(e + lanes) * xs], p);
                        store_codes(simd, sp.bits, c, y, e - begin);
                    } else {
                        partial::<S, 0>(simd, job, &sp, e, valid, p, begin, y);
                    }
                }
            }
            g0 = g1;
        }
        c0 += tc;
    }
    if tail_start < end {
        walk_int::<S, SRC, PREC>(simd, job, tail_start, end, &mut y[(tail_start - begin) * bits / 8..], bits);
    }
}

/// [`seq_lanes`] for parameters that serve many rows (per-axis channel tiles): Markstein's
/// division lane by lane, with a vector reciprocal, when every scale of the vector is in
/// the fast range (padding lanes hold 1).
#[inline(always)]
fn tile_lanes<S: Simd>(simd: S, job: &Job<'_>, k: usize, valid: usize) -> Lanes<S> {
    let mut p = seq_lanes(simd, job, k, valid);
    if S::HAS_FMA && simd.mask_bits(slow_scale_lanes(simd, p.divisor)) == 0 {
        p.r = simd.div(simd.splat(1.0), p.divisor);
        p.fast = true;
    }
    p
}

/// The groups of rows of one channel tile (`geometry = (g0, r1, first channel, vectors
/// nv)`: from the group starting at row `g0`, rows before `r1`) on the saturating 8-bit
/// path, as a kernel of its own (once per tile, and again after a group it leaves; 8-bit
/// outputs may enter the `MID` kernel of [`AxisSat8RowsOf`] first): per group the tile's
/// parameters (in this kernel's frame, which no store through `y` can alias), then its
/// rows. Stops at the first group with a scale outside the fast range (in the `MID`
/// kernel, or with a zero point off the middle) and returns its first row, at the first
/// row a short group leaves for the caller, or at `r1`.
struct AxisSat8Rows<'a, const SRC: u8, const PREC: u8> {
    job: Job<'a>,
    sp: Spec,
    /// A signed output type: the final pack.
    signed: bool,
    y: &'a mut [u8],
    begin: usize,
    rows: walk::RowTiles,
    geometry: (usize, usize, usize, usize),
}

/// [`AxisSat8Rows`] with its final pack (`SIGNED`) and width at compile time: a kernel of
/// its own per variant (an unoptimised build gives each its own frame). `MID`: the 8-bit
/// kernel for groups whose zero points are all the type's middle ([`mid_zero_point`]),
/// which skips adding them and stops at the first group that has another.
struct AxisSat8RowsOf<'a, const SRC: u8, const PREC: u8, const SIGNED: bool, const BITS: u8, const MID: bool>(
    AxisSat8Rows<'a, SRC, PREC>,
);

impl<const SRC: u8, const PREC: u8, const SIGNED: bool, const BITS: u8, const MID: bool> Kernel
    for AxisSat8RowsOf<'_, SRC, PREC, SIGNED, BITS, MID>
{
    type Output = usize;
    #[inline(always)]
    fn run<S: Simd>(self, simd: S) -> usize {
        self.0.groups::<S, SIGNED, BITS, MID>(simd)
    }
}

impl<const SRC: u8, const PREC: u8> AxisSat8Rows<'_, SRC, PREC> {
    /// Runs the kernel of this call's variant: one branch here, none per step.
    #[inline(always)]
    fn enter<S: Simd>(self, simd: S) -> usize {
        match (self.signed, self.sp.bits) {
            (true, 8) => self.enter8::<S, true>(simd),
            (false, 8) => self.enter8::<S, false>(simd),
            // 4-, 16- and 2-bit outputs from f32 only (see `run`; build time).
            (true, 4) if SRC == 0 && PREC == 0 => simd.enter(AxisSat8RowsOf::<SRC, PREC, true, 4, false>(self)),
            (false, 4) if SRC == 0 && PREC == 0 => simd.enter(AxisSat8RowsOf::<SRC, PREC, false, 4, false>(self)),
            (true, 2) if SRC == 0 && PREC == 0 => simd.enter(AxisSat8RowsOf::<SRC, PREC, true, 2, false>(self)),
            (false, 2) if SRC == 0 && PREC == 0 => simd.enter(AxisSat8RowsOf::<SRC, PREC, false, 2, false>(self)),
            (true, 16) if SRC == 0 && PREC == 0 => simd.enter(AxisSat8RowsOf::<SRC, PREC, true, 16, false>(self)),
            (false, 16) if SRC == 0 && PREC == 0 => simd.enter(AxisSat8RowsOf::<SRC, PREC, false, 16, false>(self)),
            _ => self.geometry.0,
        }
    }

    /// The 8-bit kernels, as [`BlockedGroups`]' (`enter8`): the `MID` kernel first where
    /// the first group's first zero point is the middle (AVX2, f32 x), then the general
    /// one from the group where it stopped.
    #[inline(always)]
    fn enter8<S: Simd, const SIGNED: bool>(mut self, simd: S) -> usize {
        if const { S::PACK_CHECK && SRC == 0 && PREC == 0 } {
            let (g0, _, c0, _) = self.geometry;
            let k = self.rows.group(g0).0 + c0;
            if mid_code_at::<SIGNED>(&self.job, k) {
                let y = &mut *self.y;
                let head = AxisSat8Rows::<SRC, PREC> { y, ..self };
                self.geometry.0 = simd.enter(AxisSat8RowsOf::<SRC, PREC, SIGNED, 8, true>(head));
                if self.geometry.0 == self.geometry.1 {
                    return self.geometry.0;
                }
            }
        }
        simd.enter(AxisSat8RowsOf::<SRC, PREC, SIGNED, 8, false>(self))
    }

    #[inline(always)]
    fn groups<S: Simd, const SIGNED: bool, const BITS: u8, const MID: bool>(self, simd: S) -> usize {
        let AxisSat8Rows { job, sp, y, begin, rows, geometry: (mut g0, r1, c0, nv), .. } = self;
        let x = job.x;
        let sp = Spec { split_product: false, ..sp.fold::<SRC, PREC, BITS>() };
        let lanes = S::LANES;
        let (xs, channels, bits) = (sp.src.size(), rows.channels, BITS as usize);
        let tile = nv * lanes;
        let mut params = [fast_lanes(simd, 1.0, 1.0, 0); AXIS_TILE_VECTORS];
        let mut zq = [[simd.splat_i(0); 4]; AXIS_TILE_VECTORS / 4];
        // Rows of one, two or four vectors taking steps across rows: rows a step
        // (`2^shift`), and the parameters of a step's four vectors (once here, not per group:
        // three divisions by `nv`, and one by the rows a step, on the critical path of each
        // group's set-up).
        let shift = (4 / nv.clamp(1, 4)).trailing_zeros();
        let at = [0, 1 % nv, 2 % nv, 3 % nv];
        // The groups counted on from one to the next (two divisions a group fewer).
        for (kb, first, g1) in rows.groups(g0, r1) {
            g0 = first;
            // What the step reads (divisor, reciprocal, zero point) from whole vector
            // loads (the zero points by `zero_points_int`).
            let (mut slow, mut packs) = (0, BITS == 16);
            for (v, p) in params.iter_mut().enumerate().take(nv) {
                let k = kb + c0 + v * lanes;
                let divisor = sp.prec.round(simd, job.scale_kind.load(simd, job.scale, k));
                slow |= simd.mask_bits(slow_scale_lanes(simd, divisor));
                let z = zero_points_int::<S, SIGNED>(simd, &job, k, bits);
                packs = packs && packs16::<S, SIGNED>(simd, &sp, z);
                // (`MID`: a zero point off the middle ends this kernel's groups.)
                slow |= u32::from(MID && !all_lanes_are(simd, z, mid8(SIGNED)));
                *p = Lanes { divisor, r: simd.div(simd.splat(1.0), divisor), z, ..*p };
            }
            if slow != 0 {
                break;
            }
            let params = &params[..nv];
            // (16 bits: the step adds the zero points itself.)
            if BITS != 16 {
                for (zg, p) in zq.iter_mut().zip(params.chunks_exact(4)) {
                    *zg = simd.zero_points_x4([p[0].z, p[1].z, p[2].z, p[3].z]);
                }
            }
            // Runs of whole tiles: where the tile is every channel, the group's rows are
            // one contiguous run (no per-row slicing and bounds checks); otherwise one run
            // per row. Each tile of a run walks the parameter groups in step (zipped
            // chunks: no counter and no bounds checks). (One copy of the step: an
            // unoptimised build gives each copy its own stack slots.)
            let whole = c0 == 0 && tile == channels;
            if nv < 4 || (nv == 4 && whole) {
                // Rows of one or two vectors (the caller's `short`): steps across `4 / nv`
                // rows, the parameters repeating; rows left short of a step (the range's or
                // an axis's end) go back to the caller. Rows of four (a step each) take the
                // same loop: one run of steps instead of a run of rows of one step.
                let full = g0 + ((g1 - g0) >> shift << shift);
                let p = [&params[at[0]], &params[at[1]], &params[at[2]], &params[at[3]]];
                let z = simd.zero_points_x4([p[0].z, p[1].z, p[2].z, p[3].z]);
                let (e0, e1) = (g0 * channels, full * channels);
                let xb = &x[e0 * xs..e1 * xs];
                let yb = &mut y[(e0 - begin) * bits / 8..(e1 - begin) * bits / 8];
                for (xq, yq) in xb.chunks_exact(4 * lanes * xs).zip(yb.chunks_exact_mut(4 * lanes * bits / 8)) {
                    match BITS {
                        16 => sat16_step_store::<S, SIGNED>(simd, &sp, xq, p, packs, yq),
                        _ => sat8_step_store::<S, SIGNED>(simd, &sp, xq, p, z, yq, bits, MID),
                    }
                }
                if full < g1 {
                    return full;
                }
                g0 = g1;
                continue;
            }
            let (runs, run_len) = if whole { (1, (g1 - g0) * channels) } else { (g1 - g0, tile) };
            for run in 0..runs {
                let e0 = if whole { g0 * channels } else { (g0 + run) * channels + c0 };
                let xb = &x[e0 * xs..(e0 + run_len) * xs];
                let yb = &mut y[(e0 - begin) * bits / 8..(e0 - begin + run_len) * bits / 8];
                for (xt, yt) in xb.chunks_exact(tile * xs).zip(yb.chunks_exact_mut(tile * bits / 8)) {
                    let steps = xt.chunks_exact(4 * lanes * xs).zip(yt.chunks_exact_mut(4 * lanes * bits / 8));
                    for ((xq, yq), (p, z)) in steps.zip(params.chunks_exact(4).zip(&zq)) {
                        let p = [&p[0], &p[1], &p[2], &p[3]];
                        match BITS {
                            16 => sat16_step_store::<S, SIGNED>(simd, &sp, xq, p, packs, yq),
                            _ => sat8_step_store::<S, SIGNED>(simd, &sp, xq, p, *z, yq, bits, MID),
                        }
                    }
                }
            }
            g0 = g1;
        }
        g0
    }
}

/// Consecutive groups of [`GROUP_BLOCKS`] (at the range's end `LANES`) contiguous full blocks of
/// [`run_blocked_sat8`] whose scales are all in the fast range, from block `k`, as a kernel
/// of its own: per group its vectors of scale parameters, then tight steps with no
/// per-block checks. The blocks tile each row exactly (the caller's condition), so block `k`
/// starts at element `k * block`. Returns the first block it does not cover: the first of
/// a group with a scale outside the fast range (or, in the `MID` kernel of
/// [`BlockedGroupsOf`], with a zero point off the middle), or the end of the range's groups.
struct BlockedGroups<'a, 'y, const SRC: u8, const PREC: u8> {
    job: Job<'a>,
    y: &'y mut [u8],
    begin: usize,
    end: usize,
    block: usize,
    /// A signed output type: the final pack.
    signed: bool,
    /// 8, 4, 2 or 16.
    bits: usize,
    k: usize,
}

/// [`BlockedGroups`] with its final pack (`SIGNED`) and width at compile time: a kernel of
/// its own per variant (an unoptimised build gives each its own frame). `MID`: the 8-bit
/// kernel for groups whose zero points are all the type's middle ([`mid_zero_point`]),
/// which skips adding them and stops at the first group that has another.
struct BlockedGroupsOf<'a, 'y, const SRC: u8, const PREC: u8, const SIGNED: bool, const BITS: u8, const MID: bool>(
    BlockedGroups<'a, 'y, SRC, PREC>,
);

impl<const SRC: u8, const PREC: u8, const SIGNED: bool, const BITS: u8, const MID: bool> Kernel
    for BlockedGroupsOf<'_, '_, SRC, PREC, SIGNED, BITS, MID>
{
    type Output = usize;
    #[inline(always)]
    fn run<S: Simd>(self, simd: S) -> usize {
        self.0.groups::<S, SIGNED, BITS, MID>(simd)
    }
}

impl<const SRC: u8, const PREC: u8> BlockedGroups<'_, '_, SRC, PREC> {
    /// Runs the kernel of this call's variant: one branch here, none per step.
    #[inline(always)]
    fn enter<S: Simd>(self, simd: S) -> usize {
        match (self.signed, self.bits) {
            (true, 8) => self.enter8::<S, true>(simd),
            (false, 8) => self.enter8::<S, false>(simd),
            // 4-, 16- and 2-bit outputs from f32 only (see `run`; build time).
            (true, 4) if SRC == 0 && PREC == 0 => simd.enter(BlockedGroupsOf::<SRC, PREC, true, 4, false>(self)),
            (false, 4) if SRC == 0 && PREC == 0 => simd.enter(BlockedGroupsOf::<SRC, PREC, false, 4, false>(self)),
            (true, 16) if SRC == 0 && PREC == 0 => simd.enter(BlockedGroupsOf::<SRC, PREC, true, 16, false>(self)),
            (false, 16) if SRC == 0 && PREC == 0 => simd.enter(BlockedGroupsOf::<SRC, PREC, false, 16, false>(self)),
            (true, 2) if SRC == 0 && PREC == 0 => simd.enter(BlockedGroupsOf::<SRC, PREC, true, 2, false>(self)),
            (false, 2) if SRC == 0 && PREC == 0 => simd.enter(BlockedGroupsOf::<SRC, PREC, false, 2, false>(self)),
            _ => self.k,
        }
    }

    /// The 8-bit kernels. Where block `k`'s zero point is the type's middle, on the ISAs
    /// whose store reads the hint ([`Simd::PACK_CHECK`]) and from f32 x, first the `MID`
    /// kernel for as long as whole groups have only middle zero points (symmetric
    /// quantization's, every group), then the general one from where it stopped. A second
    /// kernel rather than a flag per group: a branch per step in the general loop cost
    /// what it saved (AVX2 i8 blocked-last32 0.98x), and a second loop in one kernel takes
    /// an unoptimised build's frame past its limit.
    #[inline(always)]
    fn enter8<S: Simd, const SIGNED: bool>(mut self, simd: S) -> usize {
        if const { S::PACK_CHECK && SRC == 0 && PREC == 0 } && mid_code_at::<SIGNED>(&self.job, self.k) {
            let y = &mut *self.y;
            let head = BlockedGroups::<SRC, PREC> { y, ..self };
            self.k = simd.enter(BlockedGroupsOf::<SRC, PREC, SIGNED, 8, true>(head));
        }
        simd.enter(BlockedGroupsOf::<SRC, PREC, SIGNED, 8, false>(self))
    }

    #[inline(always)]
    fn groups<S: Simd, const SIGNED: bool, const BITS: u8, const MID: bool>(self, simd: S) -> usize {
        let BlockedGroups { job, y, begin, end, block, .. } = self;
        let mut k = self.k;
        let sp = Spec::resolve::<SRC, PREC, BITS>(&job);
        let bits = BITS as usize;
        let lanes = S::LANES;
        let xs = sp.src.size();
        let n_scales = job.scale.len() / job.scale_kind.size();
        let all = ((1u64 << lanes) - 1) as u32;
        // Groups of `GROUP_BLOCKS` blocks (eight vectors of parameters on AVX2, four on
        // AVX-512) where the range has them, else of `LANES`: the per-group work (slices,
        // their bounds, the loop set-up) is fixed, so the larger group spreads it.
        let mut gp = GroupParamsOf::<GROUP_BLOCKS>::EMPTY;
        loop {
            let e_group = k * block;
            if e_group < begin {
                break;
            }
            // Blocks the range and the scales still have from `k`.
            let left = (n_scales - k).min((end - e_group.min(end)) / block);
            let nv = if left >= GROUP_BLOCKS {
                GROUP_BLOCKS / lanes
            } else if left >= lanes {
                1
            } else {
                break;
            };
            // The group's parameters from full vector loads: `LANES` scales, and as many
            // zero points (`zero_points_int`), a vector at a time.
            let (mut slow, mut packs) = (false, BITS == 16);
            for h in 0..nv {
                let kh = k + h * lanes;
                let divisor = sp.prec.round(simd, job.scale_kind.load(simd, job.scale, kh));
                slow |= !simd.mask_bits(slow_scale_lanes(simd, divisor)) & all != all;
                let z = zero_points_int::<S, SIGNED>(simd, &job, kh, bits);
                packs = packs && packs16::<S, SIGNED>(simd, &sp, z);
                // (`MID`: a zero point off the middle ends this kernel's groups.)
                slow |= MID && !all_lanes_are(simd, z, mid8(SIGNED));
                gp.set_vector(simd, h, divisor, z);
            }
            // (A slow scale in either vector leaves the whole group to the caller.)
            if slow {
                break;
            }
            let n = nv * lanes;
            let x = &job.x[e_group * xs..(e_group + n * block) * xs];
            let yg = &mut y[(e_group - begin) * bits / 8..(e_group - begin + n * block) * bits / 8];
            group_steps::<S, SIGNED, BITS, GROUP_BLOCKS, MID>(simd, &sp, &gp, packs, block, x, yg);
            k += n;
        }
        k
    }
}

/// The blocks of one [`BlockedGroups`] group where the range has them: eight parameter
/// vectors on AVX2, four on AVX-512. The group's set-up (its slices and their bounds, the
/// loop's entry) costs about 100 instructions; at 16 blocks of 32 that was 0.2 an element
/// of the AVX2 blocked-last32 kernel's 1.68, at 64 it is 0.05 (1.53 in all).
const GROUP_BLOCKS: usize = 64;

/// The codes of one group of `LANES` (or up to `N`) consecutive whole blocks of `block`
/// elements (`x` their elements, `y` their codes; `block` two vectors or a multiple of
/// four) with the group's parameters `gp`, every scale in the fast range: steps of four
/// vectors, vectors 0, 1 from block `ja` and 2, 3 from `jb`, the unit's second block for
/// two-vector blocks, else `ja` again (a quarter of a larger block). `packs`: [`packs16`]
/// of the group (16 bits). `MID`: every zero point of the group is the 8-bit type's
/// middle (the `mid` hint of [`Simd::cvt_store_sat_x4`]). Zipped chunks, not counters, and one copy of the step code per
/// route (an unoptimised build gives each copy its own stack slots).
#[inline(always)]
fn group_steps<S: Simd, const SIGNED: bool, const BITS: u8, const N: usize, const MID: bool>(
    simd: S,
    sp: &Spec,
    gp: &GroupParamsOf<N>,
    packs: bool,
    block: usize,
    x: &[u8],
    y: &mut [u8],
) {
    let (lanes, bits) = (S::LANES, BITS as usize);
    let (xs, vb) = (sp.src.size(), lanes * sp.src.size());
    // Units of one block, or of two for two-vector blocks.
    let pair = block == 2 * lanes;
    let unit = if pair { 2 * block } else { block };
    let (xstep, ystep) = (4 * vb, 4 * lanes * bits / 8);
    if unit == 4 * lanes {
        // A unit of one four-vector step (blocks of 32 on AVX2, pairs of 16 on AVX-512):
        // chunks of a compile-time size, where chunks of the run-time unit divided twice a
        // group to count them.
        // (`pair` at compile time: a run-time one made the second block's vectors copies.)
        // The 8-, 4- and 2-bit outputs with the quotients a step ahead ([`UnitSteps`]).
        if BITS != 16 {
            let marker = core::marker::PhantomData;
            match pair {
                true => {
                    let steps = UnitSteps::<S, SIGNED, N, true, MID> { sp, gp, bits, uq: 0, us: 0, _isa: marker };
                    steps_ahead(simd, steps, x, xstep, y, ystep);
                }
                false => {
                    let steps = UnitSteps::<S, SIGNED, N, false, MID> { sp, gp, bits, uq: 0, us: 0, _isa: marker };
                    steps_ahead(simd, steps, x, xstep, y, ystep);
                }
            }
            return;
        }
        for (u, (xq, yq)) in x.chunks_exact(xstep).zip(y.chunks_exact_mut(ystep)).enumerate() {
            match pair {
                true => group_unit::<S, SIGNED, BITS, N, MID>(simd, sp, gp, packs, true, u, xq, yq),
                false => group_unit::<S, SIGNED, BITS, N, MID>(simd, sp, gp, packs, false, u, xq, yq),
            }
        }
        return;
    }
    for (u, (xu, yu)) in x.chunks_exact(unit * xs).zip(y.chunks_exact_mut(unit * bits / 8)).enumerate() {
        group_unit::<S, SIGNED, BITS, N, MID>(simd, sp, gp, packs, pair, u, xu, yu);
    }
}

/// [`group_steps`]' units of one four-vector step for the 8-, 4- and 2-bit outputs
/// (`bits`), through [`steps_ahead`]: unit `u` with the parameters of block `u` (twice), or
/// of blocks `2u` and `2u + 1` where `PAIR`, by a running index for the quotients and one
/// for the stores (which take the zero points, and the parameters again for a redo).
/// `MID`: as [`group_steps`]'.
struct UnitSteps<'a, S: Simd, const SIGNED: bool, const N: usize, const PAIR: bool, const MID: bool> {
    sp: &'a Spec,
    gp: &'a GroupParamsOf<N>,
    bits: usize,
    uq: usize,
    us: usize,
    _isa: core::marker::PhantomData<S>,
}

/// The parameters of unit `u` of a group's steps ([`group_unit`], [`UnitSteps`]): block
/// `u`'s twice, or those of blocks `2u` and `2u + 1` where `pair`.
#[inline(always)]
fn unit_params<S: Simd, const N: usize>(simd: S, gp: &GroupParamsOf<N>, pair: bool, u: usize) -> (Lanes<S>, Lanes<S>) {
    let ja = if pair { 2 * u } else { u };
    let pa = gp.block(simd, ja);
    // (The steps of a larger block reuse its parameters, not read them again.)
    (pa, if pair { gp.block(simd, ja + 1) } else { pa })
}

impl<S: Simd, const SIGNED: bool, const N: usize, const PAIR: bool, const MID: bool> AheadStep<S>
    for UnitSteps<'_, S, SIGNED, N, PAIR, MID>
{
    type Q = [S::F; 4];
    #[inline(always)]
    fn quotients(&mut self, simd: S, x: &[u8]) -> [S::F; 4] {
        // (Wrapped: the walk's last turn asks for one unit past the group's end.)
        let (pa, pb) = unit_params(simd, self.gp, PAIR, self.uq % if PAIR { N / 2 } else { N });
        self.uq += 1;
        sat8_quotients(simd, self.sp, x, [&pa, &pa, &pb, &pb])
    }
    #[inline(always)]
    fn store(&mut self, simd: S, q: [S::F; 4], x: &[u8], y: &mut [u8]) {
        let (pa, pb) = unit_params(simd, self.gp, PAIR, self.us);
        self.us += 1;
        let z = simd.zero_points_x4([pa.z, pa.z, pb.z, pb.z]);
        sat8_store_quotients::<S, SIGNED>(simd, self.sp, q, x, [&pa, &pa, &pb, &pb], z, y, self.bits, MID);
    }
}

/// Unit `u` of [`group_steps`] (block `u`, or blocks `2u` and `2u + 1` where `pair`): its
/// four-vector steps with the unit's parameters (`MID`: as [`group_steps`]').
#[inline(always)]
#[allow(clippy::too_many_arguments)]
fn group_unit<S: Simd, const SIGNED: bool, const BITS: u8, const N: usize, const MID: bool>(
    simd: S,
    sp: &Spec,
    gp: &GroupParamsOf<N>,
    packs: bool,
    pair: bool,
    u: usize,
    xu: &[u8],
    yu: &mut [u8],
) {
    let (lanes, bits) = (S::LANES, BITS as usize);
    let vb = lanes * sp.src.size();
    let (pa, pb) = unit_params(simd, gp, pair, u);
    let z = simd.zero_points_x4([pa.z, pa.z, pb.z, pb.z]);
    for (xq, yq) in xu.chunks_exact(4 * vb).zip(yu.chunks_exact_mut(4 * lanes * bits / 8)) {
        match BITS {
            16 => sat16_step_store::<S, SIGNED>(simd, sp, xq, [&pa, &pa, &pb, &pb], packs, yq),
            _ => sat8_step_store::<S, SIGNED>(simd, sp, xq, [&pa, &pa, &pb, &pb], z, yq, bits, MID),
        }
    }
}

/// Whether [`GroupCodes`] takes groups of `LANES` blocks of `block` elements to an integer
/// type of `bits`: an ISA with FMA (the fast path's division), blocks of two vectors or of
/// a multiple of four, 8-, 4- or 16-bit codes.
pub(crate) fn group_codes_fit<S: Simd>(block: usize, bits: u32) -> bool {
    S::HAS_FMA
        && block > 0
        && (block == 2 * S::LANES || block.is_multiple_of(4 * S::LANES))
        && matches!(bits, 4 | 8 | 16)
}

/// One group of `LANES` whole blocks of f32 x whose parameters the caller computed (the
/// blockwise quantizers), every scale in the fast range: [`group_steps`], as a kernel of
/// its own per output variant, so that the caller's single kernel takes no copy of the
/// step code. The caller checks [`group_codes_fit`].
pub(crate) struct GroupCodes<'a, 'y> {
    /// f32 x and division, an integer encoding.
    pub sp: Spec,
    /// The group's scales (all in the fast range) and zero points.
    pub gp: &'a GroupParams,
    pub block: usize,
    /// The group's `LANES * block` elements and their codes.
    pub x: &'a [u8],
    pub y: &'y mut [u8],
}

/// `MID`: every zero point of the group is the 8-bit type's middle ([`mid_zero_point`]).
struct GroupCodesOf<'a, 'y, const SIGNED: bool, const BITS: u8, const MID: bool>(GroupCodes<'a, 'y>);

impl<const SIGNED: bool, const BITS: u8, const MID: bool> Kernel for GroupCodesOf<'_, '_, SIGNED, BITS, MID> {
    type Output = ();
    #[inline(always)]
    fn run<S: Simd>(self, simd: S) {
        let GroupCodes { sp, gp, block, x, y } = self.0;
        let sp = sp.fold::<0, 0, BITS>();
        let packs = BITS == 16 && packs16::<S, SIGNED>(simd, &sp, simd.load_i32(gp.0[2].as_flattened()));
        group_steps::<S, SIGNED, BITS, 16, MID>(simd, &sp, gp, packs, block, x, y);
    }
}

impl GroupCodes<'_, '_> {
    /// Runs the kernel of the output's variant.
    #[inline(always)]
    pub(crate) fn enter<S: Simd>(self, simd: S) {
        let Encode::Int { qmin, .. } = self.sp.enc else { return };
        // The kernel that skips the middle zero points (the symmetric rule's) on the ISAs
        // whose store reads the hint (built for those alone), picked per group.
        if const { S::PACK_CHECK } && self.sp.bits == 8 {
            let m = mid8(qmin < 0);
            if self.gp.zero_points(S::LANES).all(|z| z == m) {
                match qmin < 0 {
                    true => simd.enter(GroupCodesOf::<true, 8, true>(self)),
                    false => simd.enter(GroupCodesOf::<false, 8, true>(self)),
                }
                return;
            }
        }
        match (qmin < 0, self.sp.bits) {
            (true, 8) => simd.enter(GroupCodesOf::<true, 8, false>(self)),
            (false, 8) => simd.enter(GroupCodesOf::<false, 8, false>(self)),
            (true, 4) => simd.enter(GroupCodesOf::<true, 4, false>(self)),
            (false, 4) => simd.enter(GroupCodesOf::<false, 4, false>(self)),
            (true, 16) => simd.enter(GroupCodesOf::<true, 16, false>(self)),
            (false, 16) => simd.enter(GroupCodesOf::<false, 16, false>(self)),
            _ => {}
        }
    }
}

/// `LANES` zero points of an 8-, 4- or 16-bit integer output (`bits`; `SIGNED`: a signed
/// type) from scale index `k` as i32 lanes (8 bits: one vector load; the others, where a
/// 4-bit `k` may be odd: the general code loader): 0 without.
#[inline(always)]
pub(crate) fn zero_points_int<S: Simd, const SIGNED: bool>(simd: S, job: &Job<'_>, k: usize, bits: usize) -> S::I {
    match (job.zero_point, bits) {
        (Some(zp), 8) => sign_extend(simd, simd.load_u8(&zp.data[k..]), if SIGNED { 0x80 } else { 0 }),
        // Whole vectors from a byte boundary by the width's own load: no run-time type
        // dispatch per group (the zero point has the output's type, so `SIGNED` and `bits`
        // are its signedness and width).
        (Some(zp), 4 | 2 | 16) if k + S::LANES <= zp.len && (k * bits).is_multiple_of(8) => {
            let b = &zp.data[k * bits / 8..];
            let raw = match bits {
                4 => simd.load_u4(b),
                2 => simd.load_u2(b),
                _ => simd.load_u16(b),
            };
            sign_extend(simd, raw, if SIGNED { 1 << (bits - 1) } else { 0 })
        }
        (Some(zp), _) => load_codes(simd, &zp, k, S::LANES, true),
        (None, _) => simd.splat_i(0),
    }
}

/// The parameters of a group of up to `N` blocks (their scales, reciprocals and zero
/// points, one lane each) as little-endian arrays, from which each block's broadcast
/// lanes are built. `N` is 16 (two vectors on AVX2, one on AVX-512) where a group's
/// parameters are set once per `LANES` blocks, and [`GROUP_BLOCKS`] for
/// [`BlockedGroups`], whose per-group set-up is fixed.
pub(crate) struct GroupParamsOf<const N: usize>([[[u8; 4]; N]; 3]);

/// [`GroupParamsOf`] of 16 blocks.
pub(crate) type GroupParams = GroupParamsOf<16>;

impl<const N: usize> GroupParamsOf<N> {
    #[inline(always)]
    pub(crate) fn new<S: Simd>(simd: S, divisor: S::F, z: S::I) -> GroupParamsOf<N> {
        let mut g = GroupParamsOf::EMPTY;
        g.set(simd, divisor, z);
        g
    }

    /// The zero points of the first `n` blocks.
    #[inline(always)]
    pub(crate) fn zero_points(&self, n: usize) -> impl Iterator<Item = i32> + '_ {
        self.0[2].iter().take(n).map(|&b| i32::from_le_bytes(b))
    }

    #[inline(always)]
    fn lane(&self, which: usize, j: usize) -> [u8; 4] {
        debug_assert!(j < N, "a group has at most N blocks");
        // (`j % N`: the same lane, and no bounds test per block.)
        self.0[which][j % N]
    }

    /// All lanes zero (a slot that [`GroupParams::set`] fills).
    pub(crate) const EMPTY: GroupParamsOf<N> = GroupParamsOf([[[0; 4]; N]; 3]);

    /// [`GroupParams::new`] written in place.
    #[inline(always)]
    pub(crate) fn set<S: Simd>(&mut self, simd: S, divisor: S::F, z: S::I) {
        self.set_vector(simd, 0, divisor, z);
    }

    /// The parameters of blocks `[h LANES, (h + 1) LANES)` (`h LANES < 16`) written in
    /// place.
    #[inline(always)]
    pub(crate) fn set_vector<S: Simd>(&mut self, simd: S, h: usize, divisor: S::F, z: S::I) {
        debug_assert!(S::LANES * (h + 1) <= N, "a group has at most N blocks");
        let at = (S::LANES * h) % N;
        let [d, r, zp] = &mut self.0;
        simd.store_f32(divisor, d[at..].as_flattened_mut());
        simd.store_f32(simd.div(simd.splat(1.0), divisor), r[at..].as_flattened_mut());
        simd.store_i32(z, zp[at..].as_flattened_mut());
    }

    /// Block `j`'s scale.
    #[inline(always)]
    pub(crate) fn scale(&self, j: usize) -> f32 {
        f32::from_le_bytes(self.lane(0, j))
    }

    /// Block `j`'s reciprocal, `RN(1 / scale)`.
    #[inline(always)]
    pub(crate) fn recip(&self, j: usize) -> f32 {
        f32::from_le_bytes(self.lane(1, j))
    }

    /// Block `j`'s zero point.
    #[inline(always)]
    pub(crate) fn zero_point(&self, j: usize) -> i32 {
        i32::from_le_bytes(self.lane(2, j))
    }

    /// Block `j`'s broadcast parameters for an integer type of range `[qmin, qmax]`, its
    /// scale in the fast range and the division in f32 (the divisor is the scale itself):
    /// `lo` and `hi` are `qmin - z` and `qmax - z` (exact: both far inside f32's integers).
    #[inline(always)]
    pub(crate) fn int_lanes<S: Simd>(&self, simd: S, j: usize, qmin: i32, qmax: i32) -> Lanes<S> {
        let (sc, z) = (simd.splat(self.scale(j)), self.zero_point(j));
        Lanes {
            divisor: sc,
            raw: sc,
            r: simd.splat(self.recip(j)),
            fast: true,
            pow2: false,
            z: simd.splat_i(z),
            lo: simd.splat((qmin - z) as f32),
            hi: simd.splat((qmax - z) as f32),
            zf: simd.splat(0.0),
        }
    }

    /// Block `j`'s broadcast parameters.
    #[inline(always)]
    fn block<S: Simd>(&self, simd: S, j: usize) -> Lanes<S> {
        fast_lanes(simd, self.scale(j), f32::from_le_bytes(self.lane(1, j)), i32::from_le_bytes(self.lane(2, j)))
    }
}

/// The broadcast parameters the 8-bit fast path reads (divisor, reciprocal, zero point),
/// the rest zero; `fast_lanes(simd, 0.0, 0.0, 0)` is the all-zero base that kernels fill
/// per block. (A function, not a closure: closures do not inherit the ISA's target
/// features.)
#[inline(always)]
pub(crate) fn fast_lanes<S: Simd>(simd: S, sc: f32, r: f32, z: i32) -> Lanes<S> {
    let zero = simd.splat(0.0);
    Lanes {
        divisor: simd.splat(sc),
        raw: zero,
        r: simd.splat(r),
        fast: true,
        pow2: false,
        z: simd.splat_i(z),
        lo: zero,
        hi: zero,
        zf: zero,
    }
}

/// Scale parameters of one scale index, broadcast.
#[inline(always)]
pub(crate) fn splat_lanes<S: Simd>(simd: S, job: &Job<'_>, k: usize) -> Lanes<S> {
    let raw = job.scale_kind.get_inline(job.scale, k);
    let sp = job.prec.round_scalar(raw);
    let r = 1.0 / sp;
    // Markstein's exact division (module docs), without a per-vector check.
    let fast = fast_scale(sp);
    let z = job.zp(k);
    let (lo, hi) = match job.enc {
        Encode::Int { qmin, qmax } => ((qmin - z) as f32, (qmax - z) as f32),
        Encode::Mini { .. } => (0.0, 0.0),
    };
    Lanes {
        divisor: simd.splat(sp),
        raw: simd.splat(raw),
        r: simd.splat(r),
        fast,
        pow2: false,
        z: simd.splat_i(z),
        lo: simd.splat(lo),
        hi: simd.splat(hi),
        zf: simd.splat(job.zf(k)),
    }
}

/// The scalar parameters of a scale `s` (f32 division) and integer zero point `z` that a
/// kernel computed itself (the scaled quantizers), ahead of the vectors that use them.
#[derive(Clone, Copy, Debug, Default)]
pub(crate) struct BlockScale {
    s: f32,
    r: f32,
    z: i32,
    fast: bool,
    pow2: bool,
}

impl BlockScale {
    #[inline(always)]
    pub(crate) fn new(s: f32, z: i32) -> BlockScale {
        let (b, fast) = (s.to_bits(), fast_scale(s));
        let e = b >> 23;
        if b & 0x807f_ffff == 0 && (1..=253).contains(&e) {
            // A positive normal power of two 2^(e - 127): its reciprocal 2^(127 - e) by its
            // bits, without a division in the block's dependency chain.
            return BlockScale { s, r: f32::from_bits((254 - e) << 23), z, fast, pow2: true };
        }
        let r = 1.0 / s;
        BlockScale { s, r, z, fast, pow2: s > 0.0 && is_pow2(s) && is_pow2(r) }
    }

    /// The broadcast parameters for encoding `enc`.
    #[inline(always)]
    pub(crate) fn lanes<S: Simd>(&self, simd: S, enc: Encode) -> Lanes<S> {
        let (lo, hi) = match enc {
            Encode::Int { qmin, qmax } => ((qmin - self.z) as f32, (qmax - self.z) as f32),
            Encode::Mini { .. } => (0.0, 0.0),
        };
        Lanes {
            divisor: simd.splat(self.s),
            raw: simd.splat(self.s),
            r: simd.splat(self.r),
            fast: self.fast,
            pow2: self.pow2,
            z: simd.splat_i(self.z),
            lo: simd.splat(lo),
            hi: simd.splat(hi),
            zf: simd.splat(0.0),
        }
    }
}

/// Whether `v` is a finite power of two (normal or subnormal), by its bits.
#[inline(always)]
fn is_pow2(v: f32) -> bool {
    let b = v.to_bits() & 0x7fff_ffff;
    if b >> 23 == 0 {
        b.is_power_of_two()
    } else {
        b & 0x7f_ffff == 0 && b >> 23 < 255
    }
}

/// Scale parameters for `LANES` consecutive scale indices from `k` (`valid` of them real;
/// the rest are padding that is computed and discarded).
#[inline(always)]
pub(crate) fn seq_lanes<S: Simd>(simd: S, job: &Job<'_>, k: usize, valid: usize) -> Lanes<S> {
    let n_scales = job.scale.len() / job.scale_kind.size();
    let sv = if valid == S::LANES && k + S::LANES <= n_scales {
        job.scale_kind.load(simd, job.scale, k)
    } else {
        let mut tmp = [0u8; 64];
        for t in 0..S::LANES {
            let v = if t < valid { job.scale_kind.get(job.scale, k + t) } else { 1.0 };
            tmp[4 * t..4 * t + 4].copy_from_slice(&v.to_le_bytes());
        }
        simd.load_f32(&tmp)
    };
    let sp = job.prec.round(simd, sv);
    let z = match (&job.zero_point, job.enc) {
        (Some(zp), Encode::Int { .. }) => load_codes(simd, zp, k, valid, true),
        _ => simd.splat_i(0),
    };
    let (lo, hi) = match job.enc {
        Encode::Int { qmin, qmax } => {
            let zf = simd.cvt_f32(z);
            (simd.sub(simd.splat(qmin as f32), zf), simd.sub(simd.splat(qmax as f32), zf))
        }
        Encode::Mini { .. } => (simd.splat(0.0), simd.splat(0.0)),
    };
    let zf = match (&job.zero_point, job.enc) {
        (Some(zp), Encode::Mini { add_zero: true, .. }) => {
            let mut tmp = [0u8; 64];
            for t in 0..valid {
                let v = FloatFormat::of(zp.dtype).map_or(0.0, |f| f.decode(zp.code(k + t)) as f32);
                tmp[4 * t..4 * t + 4].copy_from_slice(&v.to_le_bytes());
            }
            simd.load_f32(&tmp)
        }
        _ => simd.splat(0.0),
    };
    // Per-lane scales use a true division: the reciprocal would cost one anyway.
    Lanes { divisor: sp, raw: sv, r: sp, fast: false, pow2: false, z, lo, hi, zf }
}

/// Codes of `LANES` elements from element `i` of packed `bits`-wide data (a full vector,
/// `i` on a packing-group boundary), zero-extended; `bits` folds to a constant in the
/// specialised loops.
#[inline(always)]
pub(crate) fn load_full<S: Simd>(simd: S, bits: u32, data: &[u8], i: usize) -> S::I {
    let b = &data[i * bits as usize / 8..];
    match bits {
        8 => simd.load_u8(b),
        16 => simd.load_u16(b),
        32 => simd.load_i32(b),
        4 => simd.load_u4(b),
        2 => simd.load_u2(b),
        _ => simd.load_u6(b),
    }
}

/// Two's complement sign extension of zero-extended codes whose sign bit is `sign_bit`
/// (0: unsigned, unchanged): `(c ^ sign_bit) - sign_bit`, with no branch on the type.
#[inline(always)]
pub(crate) fn sign_extend<S: Simd>(simd: S, c: S::I, sign_bit: i32) -> S::I {
    let flip = simd.splat_i(sign_bit);
    simd.sub_i(simd.xor_i(c, flip), flip)
}

/// Loads `LANES` element codes of a packed tensor from element `k` as i32 (sign-extended
/// when `signed` and the type is signed). `valid` lanes are real; the rest read as 0.
#[inline(always)]
pub(crate) fn load_codes<S: Simd>(simd: S, p: &Packed<'_>, k: usize, valid: usize, signed: bool) -> S::I {
    let t = p.dtype;
    let bits = t.bits() as usize;
    let full = valid == S::LANES && k + S::LANES <= p.len;
    let aligned = (k * bits).is_multiple_of(8);
    let raw = if full && aligned {
        load_full(simd, t.bits(), p.data, k)
    } else {
        let mut tmp = [0u8; 64];
        for i in 0..valid.min(S::LANES) {
            tmp[4 * i..4 * i + 4].copy_from_slice(&(packing::get(t, p.data, k + i) as i32).to_le_bytes());
        }
        simd.load_i32(&tmp)
    };
    let signed_type = matches!(t, DataType::I8 | DataType::I16 | DataType::I4 | DataType::I2);
    if signed && signed_type {
        sign_extend(simd, raw, 1 << (bits - 1))
    } else {
        raw
    }
}

/// Stores codes of `LANES` elements at element `e` of `y` (relative to the chunk), which
/// must be aligned for the output width.
#[inline(always)]
pub(crate) fn store_codes<S: Simd>(simd: S, bits: u32, c: S::I, y: &mut [u8], e: usize) {
    let bits = bits as usize;
    let b = &mut y[e * bits / 8..];
    match bits {
        8 => simd.store_u8(c, b),
        16 => simd.store_u16(c, b),
        4 => simd.store_u4(c, b),
        2 => simd.store_u2(c, b),
        6 => simd.store_u6(c, b),
        _ => unreachable!("no {bits}-bit quantized type"),
    }
}

/// Stores the codes of four vectors (`4 * LANES` elements; `y` holds exactly their bytes,
/// from a packing boundary), two or four vectors per pack where the width allows.
#[inline(always)]
pub(crate) fn store_codes_x4<S: Simd, const MINI: u8>(simd: S, sp: &Spec, c: [S::I; 4], y: &mut [u8]) {
    if sp.bits == 8 && MINI != 0 && matches!(sp.enc, Encode::Mini { .. }) {
        // Float codes: the magnitude code and the sign bit, within [0, 255].
        simd.store_u8x4_exact(c, y);
    } else if sp.bits == 8 {
        simd.store_u8x4(c, y);
    } else if sp.bits == 16 {
        // Clamped to the type's range: the saturating packs are exact.
        let signed = matches!(sp.enc, Encode::Int { qmin, .. } if qmin < 0);
        simd.store_16x4(c, signed, y);
    } else if sp.bits == 4 {
        simd.store_u4x4(c, y);
    } else if sp.bits == 2 {
        simd.store_u2x4(c, y);
    } else {
        for (k, ck) in c.into_iter().enumerate() {
            store_codes(simd, sp.bits, ck, y, k * S::LANES);
        }
    }
}

/// Elements per packing group: a full-vector store must start at a multiple of this.
pub(crate) fn group(t: DataType) -> usize {
    match t.bits() {
        4 => 2,
        2 | 6 => 4,
        _ => 1,
    }
}

/// The codes of the `len` elements of `job.x` from element `i`, all with the broadcast
/// parameters `p`, into `y` from element `i` (on a packing boundary): whole vectors here,
/// a tail through the shared partial kernel. The per-block body of the scaled quantizers'
/// fused kernels, which compute `p` themselves.
#[inline(always)]
#[allow(clippy::too_many_arguments)]
pub(crate) fn run_block<S: Simd, const MINI: u8>(
    simd: S,
    job: &Job<'_>,
    sp: &Spec,
    p: &Lanes<S>,
    i: usize,
    len: usize,
    y: &mut [u8],
) {
    let (lanes, xs) = (S::LANES, sp.src.size());
    let whole = len / lanes;
    for v in 0..whole {
        let e = i + v * lanes;
        let c = quantize_vec::<S, MINI>(simd, sp, &job.x[e * xs..(e + lanes) * xs], p);
        store_codes(simd, sp.bits, c, y, e);
    }
    let tail = len - whole * lanes;
    if tail > 0 {
        partial::<S, MINI>(simd, job, sp, i + whole * lanes, tail, p, 0, y);
    }
}

/// A partial vector (a head up to a packing boundary, or a tail): pads x, runs the very
/// same vector code, then places the `take` valid codes one by one.
#[allow(clippy::too_many_arguments)]
fn partial<S: Simd, const MINI: u8>(
    simd: S,
    job: &Job<'_>,
    sp: &Spec,
    i: usize,
    take: usize,
    p: &Lanes<S>,
    begin: usize,
    y: &mut [u8],
) {
    // Copies, not references: a caller's value whose address escapes into a call that is
    // not inlined would be reloaded from memory after it, in the caller's hot loop too.
    // One copy per ISA, with the run-time codec (integer outputs included): partial
    // vectors are rare next to whole ones, and fewer copies keep the crate quick to build.
    simd.enter(Partial::<S, MINI_RUNTIME> { job: *job, sp: *sp, i, take, p: *p, begin, y })
}

/// [`partial`] as a kernel of its own: heads and tails are rare next to whole vectors,
/// and one shared copy keeps the walks small.
struct Partial<'a, 'y, S: Simd, const MINI: u8> {
    job: Job<'a>,
    sp: Spec,
    i: usize,
    take: usize,
    p: Lanes<S>,
    begin: usize,
    y: &'y mut [u8],
}

impl<S: Simd, const MINI: u8> IsaKernel<S> for Partial<'_, '_, S, MINI> {
    type Output = ();
    #[inline(always)]
    fn run_on(self, simd: S) {
        let Partial { job, sp, i, take, p, begin, y } = self;
        let xs = job.src.size();
        if take == S::LANES && (i - begin).is_multiple_of(group(job.out)) {
            // A whole aligned vector (the tail of a short run, such as a block of one to
            // three vectors): straight from x to y, in this kernel's frame.
            let c = quantize_vec::<S, MINI>(simd, &sp, &job.x[i * xs..(i + take) * xs], &p);
            return store_codes(simd, sp.bits, c, y, i - begin);
        }
        let mut xt = [0u8; 64];
        xt[..take * xs].copy_from_slice(&job.x[i * xs..(i + take) * xs]);
        let c = quantize_vec::<S, MINI>(simd, &sp, &xt, &p);
        let mut ct = [0u8; 64];
        simd.store_i32(c, &mut ct);
        for t in 0..take {
            let code = lane_i32(&ct, t);
            packing::set(job.out, y, i - begin + t, code as u32);
        }
    }
}

/// Quantizes elements `[begin, end)` into `y`, which holds the output bytes of exactly that
/// range (`begin` is a multiple of 4, so it starts on a byte boundary for every type).
///
/// Picks a compile-time specialisation for the common combinations (f32 input with f32
/// division to every output width, f16 / bf16 input in its own precision to 8-bit
/// integers, and those layouts' drivers) and the run-time one for the rest.
#[inline(always)]
pub(crate) fn run<S: Simd>(simd: S, job: &Job<'_>, begin: usize, end: usize, y: &mut [u8]) {
    if begin >= end {
        // Nothing to do, and the layout kernels divide by the axis length (0 for an
        // empty tensor).
        return;
    }
    let mini = matches!(job.enc, Encode::Mini { .. });
    // The layout drivers, to 8-bit integers (the bench's per-axis and blocked cases): f32
    // input with f32 arithmetic, and on the SIMD ISAs f16 / bf16 input in its own
    // precision (the variants the segment walk specialises too). Per-axis along the last
    // axis also on the portable ISA for f32 (its parameters once per channel tile instead
    // of once per vector take a quarter of the instructions); blocked on the SIMD ISAs only.
    // The `S::SPECIALIZE` guards are constants, so the portable ISA does not even
    // instantiate the 16-bit drivers. Every other call takes the segment walk.
    // 4-, 16- and 2-bit outputs from f32 only: their kernels in the 16-bit variants took
    // build time for rare cases. (2-bit codes: the 8- and 4-bit types' channel tiles and
    // groups, Markstein's quotients unclamped, the saturating packs and a byte clamp,
    // where the segment walk and [`BlockedVec`] clamp every quotient twice in f32.)
    let f32_x = job.src == Src::F32 && job.prec == Prec::F32;
    if !mini && (job.out.bits() == 8 || (matches!(job.out.bits(), 4 | 16 | 2) && f32_x)) {
        let taken = match (job.src, job.prec) {
            (Src::F32, Prec::F32) => layout_driver::<S, 0, 0>(simd, job, begin, end, y),
            (Src::F16, Prec::F16) if S::SPECIALIZE => layout_driver::<S, 1, 1>(simd, job, begin, end, y),
            (Src::Bf16, Prec::Bf16) if S::SPECIALIZE => layout_driver::<S, 2, 2>(simd, job, begin, end, y),
            _ => false,
        };
        if taken {
            return;
        }
    }
    // Blocked along the last axis from f32 to a float format of the four-vector encoder.
    if mini && f32_x && S::MINI_X4 && S::MINI_DIV_QUOTIENTS == 4 {
        if let Some(block) = blocked_mini::<S>(job, begin) {
            let k = BlockedMini { job: *job, begin, end, y, block };
            return match mini_id(job) {
                2 => simd.enter(BlockedMiniOf::<2>(k)),
                4 => simd.enter(BlockedMiniOf::<4>(k)),
                // AMD's float8 (saturating), as the per-tensor steps: the run-time format
                // took e4m3fnuz 4.40 instructions per element against e4m3fn's 3.18.
                6 => simd.enter(BlockedMiniOf::<6>(k)),
                8 => simd.enter(BlockedMiniOf::<8>(k)),
                10 => simd.enter(BlockedMiniOf::<10>(k)),
                _ => simd.enter(BlockedMiniOf::<MINI_RUNTIME>(k)),
            };
        }
    }
    // Blocked along the last axis from f32 to 2-bit integers or float6.
    if f32_x && S::SPECIALIZE && (job.out.bits() == 2 || matches!(mini_id(job), 11 | 12)) {
        if let Some(block) = blocked_vec::<S>(job, begin) {
            let k = BlockedVec { job: *job, begin, end, y, block };
            return match mini_id(job) {
                11 => simd.enter(BlockedVecOf::<11, 6>(k)),
                12 => simd.enter(BlockedVecOf::<12, 6>(k)),
                _ => simd.enter(BlockedVecOf::<0, 2>(k)),
            };
        }
    }
    // The other per-axis calls along the last axis by channel tiles, in the two run-time
    // variants: the tile code in every compile-time variant took a fifth more build time,
    // and with the tile's parameters taken once the run-time codec costs little.
    if tiled_channels::<S>(job, begin).is_some() {
        return match mini {
            false => walk::<S, ANY, ANY, 0, ANY>(simd, job, begin, end, y),
            true => walk::<S, ANY, ANY, 1, ANY>(simd, job, begin, end, y),
        };
    }
    // Every ISA specialises f32 input to each integer width and to the three common float
    // formats, whose constants fold into the code (the portable ISA takes 30 % to 50 % more
    // instructions without them, the SIMD ISAs up to 60 % for 16- and 4-bit outputs).
    match (job.src, job.prec, mini, job.out.bits()) {
        (Src::F32, Prec::F32, false, 8) => walk::<S, 0, 0, 0, 8>(simd, job, begin, end, y),
        (Src::F32, Prec::F32, false, 16) => walk::<S, 0, 0, 0, 16>(simd, job, begin, end, y),
        (Src::F32, Prec::F32, false, 4) => walk::<S, 0, 0, 0, 4>(simd, job, begin, end, y),
        (Src::F32, Prec::F32, false, 2) => walk::<S, 0, 0, 0, 2>(simd, job, begin, end, y),
        (Src::F32, Prec::F32, true, _) => match mini_id(job) {
            2 => walk::<S, 0, 0, 2, 8>(simd, job, begin, end, y),
            4 => walk::<S, 0, 0, 4, 8>(simd, job, begin, end, y),
            10 => walk::<S, 0, 0, 10, 4>(simd, job, begin, end, y),
            11 if S::SPECIALIZE => walk::<S, 0, 0, 11, 6>(simd, job, begin, end, y),
            12 if S::SPECIALIZE => walk::<S, 0, 0, 12, 6>(simd, job, begin, end, y),
            _ if S::SPECIALIZE => walk::<S, 0, 0, MINI_RUNTIME, ANY>(simd, job, begin, end, y),
            _ => walk::<S, ANY, ANY, 1, ANY>(simd, job, begin, end, y),
        },
        // f16 / bf16 activations to 8-bit codes, in their own precision: the rounding to it
        // (twice per vector) folds to the hardware conversion or the bit-level rounding.
        (Src::F16, Prec::F16, false, 8) if S::SPECIALIZE => walk::<S, 1, 1, 0, 8>(simd, job, begin, end, y),
        (Src::Bf16, Prec::Bf16, false, 8) if S::SPECIALIZE => walk::<S, 2, 2, 0, 8>(simd, job, begin, end, y),
        (_, _, false, _) => walk::<S, ANY, ANY, 0, ANY>(simd, job, begin, end, y),
        (_, _, true, _) => walk::<S, ANY, ANY, 1, ANY>(simd, job, begin, end, y),
    }
}

/// The row-tile (per-axis-last, blocked along another axis) and blocked-last drivers of
/// [`run`] for one compile-time source and precision, to an 8-bit integer type (from f32
/// also 4- and 16-bit ones): whether one took the call.
#[inline(always)]
fn layout_driver<S: Simd, const SRC: u8, const PREC: u8>(
    simd: S,
    job: &Job<'_>,
    begin: usize,
    end: usize,
    y: &mut [u8],
) -> bool {
    if let Some(rows) = walk::RowTiles::of::<S>(job.layout, group(job.out) - 1, begin) {
        simd.enter(PerAxisLast::<SRC, PREC> { job: *job, begin, end, y, rows });
        return true;
    }
    if S::SPECIALIZE {
        if let Some((axis_len, block)) = blocked_sat8::<S>(job, begin) {
            simd.enter(BlockedSat8::<SRC, PREC> { job: *job, begin, end, y, axis_len, block });
            return true;
        }
    }
    false
}

/// A run of a segment whose scale index advances with the element (per-axis along the last
/// axis, blocked along another axis) on [`walk::seq_run`], with the run-time codec, as a
/// kernel of its own (see [`Simd::enter`]).
struct SeqRun<'a, 'y> {
    job: Job<'a>,
    sp: Spec,
    k0: usize,
    start: usize,
    i: usize,
    stop: usize,
    begin: usize,
    y: &'y mut [u8],
}

impl Kernel for SeqRun<'_, '_> {
    type Output = ();
    #[inline(always)]
    fn run<S: Simd>(self, simd: S) {
        let SeqRun { job, sp, k0, start, i, stop, begin, y } = self;
        let gmask = group(job.out) - 1;
        let mut op = QuantizeOp::<ANY, ANY, MINI_RUNTIME, ANY> { job: &job, sp, gmask, begin, y };
        walk::seq_run(simd, &mut op, k0, start, i, stop);
    }
}

/// The segment walk of one compile-time variant, as a kernel of its own (see
/// [`Simd::enter`]).
struct Walk<'a, 'y, const SRC: u8, const PREC: u8, const MINI: u8, const BITS: u8> {
    job: Job<'a>,
    begin: usize,
    end: usize,
    y: &'y mut [u8],
}

impl<const SRC: u8, const PREC: u8, const MINI: u8, const BITS: u8> Kernel for Walk<'_, '_, SRC, PREC, MINI, BITS> {
    type Output = ();
    #[inline(always)]
    fn run<S: Simd>(self, simd: S) {
        let job = self.job;
        run_with::<S, SRC, PREC, MINI, BITS>(simd, &job, self.begin, self.end, self.y)
    }
}

/// [`run_with`] in a function of its own.
fn walk<S: Simd, const SRC: u8, const PREC: u8, const MINI: u8, const BITS: u8>(
    simd: S,
    job: &Job<'_>,
    begin: usize,
    end: usize,
    y: &mut [u8],
) {
    simd.enter(Walk::<SRC, PREC, MINI, BITS> { job: *job, begin, end, y })
}

/// [`run_per_axis_last`] as a kernel of its own.
struct PerAxisLast<'a, 'y, const SRC: u8, const PREC: u8> {
    job: Job<'a>,
    begin: usize,
    end: usize,
    y: &'y mut [u8],
    rows: walk::RowTiles,
}

impl<const SRC: u8, const PREC: u8> Kernel for PerAxisLast<'_, '_, SRC, PREC> {
    type Output = ();
    #[inline(always)]
    fn run<S: Simd>(self, simd: S) {
        let job = self.job;
        run_per_axis_last::<S, SRC, PREC>(simd, &job, self.begin, self.end, self.y, self.rows)
    }
}

/// [`run_blocked_sat8`] as a kernel of its own.
struct BlockedSat8<'a, 'y, const SRC: u8, const PREC: u8> {
    job: Job<'a>,
    begin: usize,
    end: usize,
    y: &'y mut [u8],
    axis_len: usize,
    block: usize,
}

impl<const SRC: u8, const PREC: u8> Kernel for BlockedSat8<'_, '_, SRC, PREC> {
    type Output = ();
    #[inline(always)]
    fn run<S: Simd>(self, simd: S) {
        let job = self.job;
        run_blocked_sat8::<S, SRC, PREC>(simd, &job, self.begin, self.end, self.y, self.axis_len, self.block)
    }
}

/// The compile-time format id of a float output (see [`MiniFormat::id`]).
pub(crate) fn mini_id(job: &Job<'_>) -> u8 {
    match job.enc {
        Encode::Mini { sat, .. } => MiniFormat::id(job.out, sat),
        Encode::Int { .. } => 0,
    }
}

/// The segment walk: per segment a head of partial vectors up to the packing boundary, a
/// tight loop of full vectors, and a partial tail. Inlined into the ISA's `vectorize`
/// context, so every primitive compiles with that ISA's target features.
#[inline(always)]
fn run_with<S: Simd, const SRC: u8, const PREC: u8, const MINI: u8, const BITS: u8>(
    simd: S,
    job: &Job<'_>,
    begin: usize,
    end: usize,
    y: &mut [u8],
) {
    let sp = Spec::resolve::<SRC, PREC, BITS>(job);
    let gmask = group(job.out) - 1;
    let mut op = QuantizeOp::<SRC, PREC, MINI, BITS> { job, sp, gmask, begin, y };
    // Channel tiles in the run-time variants only (see `run`); a constant condition, so
    // the other variants do not even instantiate the tile kernel (build time).
    if QuantizeOp::<SRC, PREC, MINI, BITS>::TILED {
        walk::walk_tiled(simd, op, job.layout, begin, end, tiled_channels::<S>(job, begin));
    } else {
        walk::walk(simd, &mut op, crate::segments::Segments::new(job.layout, begin, end));
    }
}

/// [`walk::RowTiles::of`] for y's packing groups (counted from the range start `begin`).
fn tiled_channels<S: Simd>(job: &Job<'_>, begin: usize) -> Option<walk::RowTiles> {
    walk::RowTiles::of::<S>(job.layout, group(job.out) - 1, begin)
}

/// QuantizeLinear's per-vector work for [`walk::walk`]: [`Lanes`] parameters; the body
/// starts on a packing group of y (which begins at element `begin`). The const parameters
/// are the compile-time variant's (see [`Spec::fold`]; `MINI`: the float encoder, 0 for
/// integer outputs, [`MINI_RUNTIME`] for the job's); the loops re-fold the spec they read
/// from the op, so that its per-vector `match`es fold away.
struct QuantizeOp<'j, 'a, 'y, const SRC: u8, const PREC: u8, const MINI: u8, const BITS: u8> {
    job: &'j Job<'a>,
    sp: Spec,
    gmask: usize,
    begin: usize,
    y: &'y mut [u8],
}

impl<const SRC: u8, const PREC: u8, const MINI: u8, const BITS: u8> QuantizeOp<'_, '_, '_, SRC, PREC, MINI, BITS> {
    /// Whether the variant takes the row-tile layouts by channel tiles ([`walk::walk_tiled`]).
    const TILED: bool = SRC == ANY;
}

impl<S: Simd, const SRC: u8, const PREC: u8, const MINI: u8, const BITS: u8> RunOp<S>
    for QuantizeOp<'_, '_, '_, SRC, PREC, MINI, BITS>
{
    type P = Lanes<S>;

    #[inline(always)]
    fn head(&self, i: usize) -> usize {
        (self.gmask + 1 - ((i - self.begin) & self.gmask)) & self.gmask
    }

    #[inline(always)]
    fn splat(&self, simd: S, k: usize) -> Lanes<S> {
        splat_lanes(simd, self.job, k)
    }

    #[inline(always)]
    fn seq(&self, simd: S, k: usize, valid: usize) -> Lanes<S> {
        seq_lanes(simd, self.job, k, valid)
    }

    #[inline(always)]
    fn seq_tile(&self, simd: S, k: usize, valid: usize) -> Lanes<S> {
        tile_lanes(simd, self.job, k, valid)
    }

    #[inline(always)]
    fn part(&mut self, simd: S, p: &Lanes<S>, _k: usize, i: usize, take: usize) {
        partial::<S, MINI>(simd, self.job, &self.sp, i, take, p, self.begin, self.y);
    }

    #[inline(always)]
    fn vector(&mut self, simd: S, p: &Lanes<S>, _k: usize, i: usize) {
        let sp = self.sp.fold::<SRC, PREC, BITS>();
        let xs = sp.src.size();
        let c = quantize_vec::<S, MINI>(simd, &sp, &self.job.x[i * xs..(i + S::LANES) * xs], p);
        store_codes(simd, sp.bits, c, self.y, i - self.begin);
    }

    /// A row of a channel tile: float8 / float4 outputs with a four-vector encoder take
    /// the tile's vectors by fours through it, each quotient by the divide instruction (so
    /// whatever the scales' range); the rest a vector at a time.
    #[inline(always)]
    fn row(&mut self, simd: S, p: &[Lanes<S>], k: usize, i: usize) {
        let lanes = S::LANES;
        let mut done = 0;
        if MINI == MINI_RUNTIME && S::MINI_X4 && S::MINI_DIV_QUOTIENTS == 4 {
            let sp = self.sp.fold::<SRC, PREC, BITS>();
            if let (true, Encode::Mini { fmt, add_zero, .. }) = (MiniFormat::has_x4_route(mini_id(self.job)), sp.enc) {
                let (xs, ob) = (sp.src.size(), sp.bits as usize);
                for p4 in p.chunks_exact(4) {
                    let e = i + done * lanes;
                    let xb = &self.job.x[e * xs..(e + 4 * lanes) * xs];
                    let q = mini_quotients_x4(simd, &sp, xb, [&p4[0], &p4[1], &p4[2], &p4[3]], add_zero);
                    let y0 = (e - self.begin) * ob / 8;
                    simd.store_mini_x4(q, &fmt, &mut self.y[y0..y0 + 4 * lanes * ob / 8]);
                    done += 4;
                }
            }
        }
        for (v, pv) in p.iter().enumerate().skip(done) {
            self.vector(simd, pv, k + v * lanes, i + v * lanes);
        }
    }

    /// The rows of a tile that is every channel: from f32 to a float format with a
    /// compile-time id, in the run-time variant, [`MiniRows`]; otherwise row by row.
    #[inline(always)]
    fn rows(&mut self, simd: S, p: &[Lanes<S>], k: usize, i: usize, nrows: usize) {
        let len = p.len() * S::LANES;
        let f32_x = self.job.src == Src::F32 && self.job.prec == Prec::F32;
        if MINI == MINI_RUNTIME && SRC == ANY && S::SPECIALIZE && f32_x && len > 0 {
            let (sp, ob) = (&self.sp, self.sp.bits as usize);
            let x = &self.job.x[i * 4..(i + nrows * len) * 4];
            let y0 = (i - self.begin) * ob / 8;
            let y = &mut self.y[y0..y0 + nrows * len * ob / 8];
            match mini_id(self.job) {
                2 => return simd.enter(MiniRows::<S, 2, 8> { sp, x, y, p }),
                4 => return simd.enter(MiniRows::<S, 4, 8> { sp, x, y, p }),
                6 => return simd.enter(MiniRows::<S, 6, 8> { sp, x, y, p }),
                8 => return simd.enter(MiniRows::<S, 8, 8> { sp, x, y, p }),
                10 => return simd.enter(MiniRows::<S, 10, 4> { sp, x, y, p }),
                11 => return simd.enter(MiniRows::<S, 11, 6> { sp, x, y, p }),
                12 => return simd.enter(MiniRows::<S, 12, 6> { sp, x, y, p }),
                _ => {}
            }
        }
        for r in 0..nrows {
            self.row(simd, p, k, i + r * len);
        }
    }

    #[inline(always)]
    fn steps(&mut self, simd: S, p: &Lanes<S>, k: usize, i: usize, n: usize) {
        let (job, sp, begin, lanes) = (self.job, self.sp.fold::<SRC, PREC, BITS>(), self.begin, S::LANES);
        let xs = sp.src.size();
        // Four vectors per step: independent chains for the out-of-order core, and one wide
        // store for 8-bit outputs.
        let xb = &job.x[i * xs..(i + n * 4 * lanes) * xs];
        // 16-bit integers on the ISAs where the checked conversion pays. The conditions on
        // constants come first, so the kernel is not even instantiated for the variants
        // and ISAs that cannot take it (compile time).
        if S::CHECKED_CVT16 && MINI == 0 && (BITS == 16 || BITS == ANY) && S::HAS_FMA {
            if let (16, true, Encode::Int { qmin, .. }) = (sp.bits, p.fast, sp.enc) {
                let (x, y, sp) = (xb, &mut self.y[2 * (i - begin)..2 * (i - begin + n * 4 * lanes)], &sp);
                return match qmin < 0 {
                    true => simd.enter(Sat16Loop::<S, true, SRC, PREC> { sp, x, y, p }),
                    false => simd.enter(Sat16Loop::<S, false, SRC, PREC> { sp, x, y, p }),
                };
            }
        }
        let sat8 = MINI == 0 && matches!(sp.bits, 8 | 4 | 2) && p.fast && S::HAS_FMA;
        if let (true, Encode::Int { qmin, .. }) = (sat8, sp.enc) {
            let ob = sp.bits as usize;
            let yb = &mut self.y[(i - begin) * ob / 8..(i - begin + n * 4 * lanes) * ob / 8];
            return match qmin < 0 {
                true => sat8_loop::<S, true>(simd, &sp, xb, yb, p, ob),
                false => sat8_loop::<S, false>(simd, &sp, xb, yb, p, ob),
            };
        }
        // Float8 (e4m3fn, e5m2) and float4 outputs on ISAs with a four-vector encoder: the
        // quotients (`Simd::MINI_DIV_QUOTIENTS`), then one call encodes and stores them (a kernel
        // of its own, so the other outputs' loops keep their code layout).
        if S::MINI_X4 && MiniFormat::has_x4_route(MINI) && p.fast && S::HAS_FMA {
            let ob = sp.bits as usize;
            let y = &mut self.y[(i - begin) * ob / 8..(i - begin + n * 4 * lanes) * ob / 8];
            return simd.enter(MiniX4Loop::<S, MINI, SRC, PREC> { sp: &sp, x: xb, y, p });
        }
        // The other float8 formats, from the f32 variant with the run-time format:
        // saturating e4m3fnuz and e5m2fnuz (AMD's float8) with their constants at compile
        // time (kernels of their own; on the F16C route of stop 37, the run-time format's
        // per-step branches and reloaded constants took e4m3fnuz 4.09 instructions per
        // element against 2.78), the rest (the non-saturating modes) with the job's format.
        if S::MINI_X4 && MINI == MINI_RUNTIME && SRC == 0 && PREC == 0 && p.fast && S::HAS_FMA {
            if let Encode::Mini { add_zero: false, .. } = sp.enc {
                let id = mini_id(job);
                if sp.bits == 8 && MiniFormat::has_x4_route(id) {
                    let (sp, y) = (&sp, &mut self.y[i - begin..i - begin + n * 4 * lanes]);
                    return match id {
                        6 => simd.enter(MiniX4Loop::<S, 6, 0, 0> { sp, x: xb, y, p }),
                        8 => simd.enter(MiniX4Loop::<S, 8, 0, 0> { sp, x: xb, y, p }),
                        _ => simd.enter(MiniX4Loop::<S, MINI, SRC, PREC> { sp, x: xb, y, p }),
                    };
                }
            }
        }
        // Scales outside the fast range: a vector at a time, the division chosen per vector.
        if !(p.fast && !p.pow2 && S::HAS_FMA) {
            for v in 0..4 * n {
                self.vector(simd, p, k, i + v * lanes);
            }
            return;
        }
        // Whole steps of four vectors over exactly their bytes (chunked iteration: no bounds
        // checks in the loop; `i - begin` is on a packing boundary here), with Markstein's
        // division known outside the loop. A loop per step the optimiser unrolls: one copy of
        // the vector code unoptimised. (No closures: they would not inherit the ISA's
        // features.)
        let ob = sp.bits as usize;
        let yb = &mut self.y[(i - begin) * ob / 8..(i - begin + n * 4 * lanes) * ob / 8];
        for (xq, yq) in xb.chunks_exact(4 * lanes * xs).zip(yb.chunks_exact_mut(4 * lanes * ob / 8)) {
            let mut c = [simd.splat_i(0); 4];
            for (v, cv) in c.iter_mut().enumerate() {
                let xv = &xq[v * lanes * xs..(v + 1) * lanes * xs];
                *cv = quantize_vec_d::<S, MINI, false, DIV_FAST>(simd, &sp, xv, p).0;
            }
            store_codes_x4::<S, MINI>(simd, &sp, c, yq);
        }
    }

    #[inline(always)]
    fn seq_run(&mut self, simd: S, k0: usize, start: usize, i: usize, stop: usize) {
        // Per-lane scales: one copy per ISA, as for partial vectors.
        let (job, sp) = (*self.job, self.sp);
        simd.enter(SeqRun { job, sp, k0, start, i, stop, begin: self.begin, y: &mut *self.y })
    }
}
