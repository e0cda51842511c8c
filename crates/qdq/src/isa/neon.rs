//! aarch64 NEON (Advanced SIMD) primitives, 4 lanes.
//!
//! Rounding: f32 -> i32 is `fcvtns` (`vcvtnq_s32_f32`), round to nearest with ties to even
//! whatever FPCR says. **i32 -> f32 (`scvtf`) uses FPCR's rounding mode**, which is
//! round-to-nearest-even unless changed; Rust code never changes it. f16 conversion uses
//! the portable bit-exact codec (`vcvt_f16_f32` needs the unstable `f16` type).
//! Sub-byte packing shifts each lane into place and folds the lanes with a horizontal add
//! (the fields never overlap, so the add is an OR).
//!
//! # Safety
//!
//! A [`Neon`] value can only be built from pulp's `aarch64::Neon` token, which proves the
//! feature; NEON is also part of the aarch64 baseline. Value intrinsics are pulp's safe
//! token methods (`self.0.neon.vaddq_f32(..)`); `unsafe` remains only for loads and stores,
//! which go through slices (or local arrays) of exactly the accessed length, each block
//! with its own `SAFETY` comment.

#![allow(unsafe_code)]

use crate::simd::Simd;
use core::arch::aarch64::*;

pub(crate) use pulp::aarch64::Neon as NeonToken;

/// The NEON ISA token.
#[derive(Clone, Copy, Debug)]
pub(crate) struct Neon(#[allow(dead_code)] pub NeonToken);

impl Neon {
    /// `shifts` as a vector (a load of the 16 bytes of a local array).
    #[inline(always)]
    fn shift_counts(self, shifts: [i32; 4]) -> int32x4_t {
        // SAFETY: `shifts` is exactly the 16 bytes read; NEON is proven by the token.
        unsafe { vld1q_s32(shifts.as_ptr()) }
    }

    /// The lanes of `a`, masked and shifted left by their `shifts`, summed (the fields do
    /// not overlap, so the sum is their OR).
    #[inline(always)]
    fn shifted(self, a: int32x4_t, mask: u32, shifts: [i32; 4]) -> u32 {
        let n = self.0.neon;
        let m = n.vandq_u32(n.vreinterpretq_u32_s32(a), n.vdupq_n_u32(mask));
        n.vaddvq_u32(n.vshlq_u32(m, self.shift_counts(shifts)))
    }

    /// `w` in every lane, shifted right by `-shifts` and masked: the fields of a packed word.
    #[inline(always)]
    fn spread(self, w: u32, mask: u32, shifts: [i32; 4]) -> int32x4_t {
        let n = self.0.neon;
        let s = n.vshlq_u32(n.vdupq_n_u32(w), self.shift_counts(shifts));
        n.vreinterpretq_s32_u32(n.vandq_u32(s, n.vdupq_n_u32(mask)))
    }
}

impl Simd for Neon {
    #[inline(never)]
    fn enter<K: crate::isa::IsaKernel<Self>>(self, k: K) -> K::Output {
        self.0.vectorize(super::Call(k, self))
    }

    const LANES: usize = 4;
    type F = float32x4_t;
    type I = int32x4_t;
    type M = uint32x4_t;

    #[inline(always)]
    fn splat(self, x: f32) -> float32x4_t {
        self.0.neon.vdupq_n_f32(x)
    }
    #[inline(always)]
    fn add(self, a: float32x4_t, b: float32x4_t) -> float32x4_t {
        self.0.neon.vaddq_f32(a, b)
    }
    #[inline(always)]
    fn sub(self, a: float32x4_t, b: float32x4_t) -> float32x4_t {
        self.0.neon.vsubq_f32(a, b)
    }
    #[inline(always)]
    fn mul(self, a: float32x4_t, b: float32x4_t) -> float32x4_t {
        self.0.neon.vmulq_f32(a, b)
    }
    #[inline(always)]
    fn div(self, a: float32x4_t, b: float32x4_t) -> float32x4_t {
        self.0.neon.vdivq_f32(a, b)
    }
    #[inline(always)]
    fn fma(self, a: float32x4_t, b: float32x4_t, c: float32x4_t) -> float32x4_t {
        self.0.neon.vfmaq_f32(c, a, b)
    }
    #[inline(always)]
    fn fnma(self, a: float32x4_t, b: float32x4_t, c: float32x4_t) -> float32x4_t {
        self.0.neon.vfmsq_f32(c, a, b)
    }
    #[inline(always)]
    fn min(self, a: float32x4_t, b: float32x4_t) -> float32x4_t {
        // fmin propagates NaN (and fminnm turns a signalling NaN into NaN too): select the
        // second operand for NaN in the first, like x86 `minps`.
        self.0.neon.vbslq_f32(self.0.neon.vceqq_f32(a, a), self.0.neon.vminq_f32(a, b), b)
    }
    #[inline(always)]
    fn max(self, a: float32x4_t, b: float32x4_t) -> float32x4_t {
        self.0.neon.vbslq_f32(self.0.neon.vceqq_f32(a, a), self.0.neon.vmaxq_f32(a, b), b)
    }
    #[inline(always)]
    fn eq(self, a: float32x4_t, b: float32x4_t) -> uint32x4_t {
        self.0.neon.vceqq_f32(a, b)
    }
    #[inline(always)]
    fn is_nan(self, a: float32x4_t) -> uint32x4_t {
        self.0.neon.vmvnq_u32(self.0.neon.vceqq_f32(a, a))
    }
    #[inline(always)]
    fn lt(self, a: float32x4_t, b: float32x4_t) -> uint32x4_t {
        self.0.neon.vcltq_f32(a, b)
    }
    #[inline(always)]
    fn select(self, m: uint32x4_t, a: float32x4_t, b: float32x4_t) -> float32x4_t {
        self.0.neon.vbslq_f32(m, a, b)
    }
    #[inline(always)]
    fn nonzero_or(self, a: float32x4_t, b: float32x4_t) -> float32x4_t {
        // |a| > 0 is false for ±0 and NaN, which take `b`.
        self.0.neon.vbslq_f32(self.0.neon.vcagtq_f32(a, self.0.neon.vdupq_n_f32(0.0)), a, b)
    }
    #[inline(always)]
    fn or_m(self, a: uint32x4_t, b: uint32x4_t) -> uint32x4_t {
        self.0.neon.vorrq_u32(a, b)
    }
    #[inline(always)]
    fn andnot_m(self, a: uint32x4_t, b: uint32x4_t) -> uint32x4_t {
        self.0.neon.vbicq_u32(a, b)
    }
    #[inline(always)]
    fn mask_bits(self, m: uint32x4_t) -> u32 {
        {
            let lane_bit =
                self.0.neon.vcombine_u32(self.0.neon.vcreate_u32(1 | 2 << 32), self.0.neon.vcreate_u32(4 | 8 << 32));
            self.0.neon.vaddvq_u32(self.0.neon.vandq_u32(m, lane_bit))
        }
    }
    #[inline(always)]
    fn mask_from_bits(self, bits: u32) -> uint32x4_t {
        {
            let lane_bit =
                self.0.neon.vcombine_u32(self.0.neon.vcreate_u32(1 | 2 << 32), self.0.neon.vcreate_u32(4 | 8 << 32));
            self.0.neon.vtstq_u32(self.0.neon.vdupq_n_u32(bits), lane_bit)
        }
    }
    #[inline(always)]
    fn splat_i(self, x: i32) -> int32x4_t {
        self.0.neon.vdupq_n_s32(x)
    }
    #[inline(always)]
    fn add_i(self, a: int32x4_t, b: int32x4_t) -> int32x4_t {
        self.0.neon.vaddq_s32(a, b)
    }
    #[inline(always)]
    fn sub_i(self, a: int32x4_t, b: int32x4_t) -> int32x4_t {
        self.0.neon.vsubq_s32(a, b)
    }
    #[inline(always)]
    fn and_i(self, a: int32x4_t, b: int32x4_t) -> int32x4_t {
        self.0.neon.vandq_s32(a, b)
    }
    #[inline(always)]
    fn or_i(self, a: int32x4_t, b: int32x4_t) -> int32x4_t {
        self.0.neon.vorrq_s32(a, b)
    }
    #[inline(always)]
    fn shl(self, a: int32x4_t, n: u32) -> int32x4_t {
        self.0.neon.vreinterpretq_s32_u32(
            self.0.neon.vshlq_u32(self.0.neon.vreinterpretq_u32_s32(a), self.0.neon.vdupq_n_s32(n as i32)),
        )
    }
    #[inline(always)]
    fn shr(self, a: int32x4_t, n: u32) -> int32x4_t {
        self.0.neon.vreinterpretq_s32_u32(
            self.0.neon.vshlq_u32(self.0.neon.vreinterpretq_u32_s32(a), self.0.neon.vdupq_n_s32(-(n as i32))),
        )
    }
    #[inline(always)]
    fn sra(self, a: int32x4_t, n: u32) -> int32x4_t {
        self.0.neon.vshlq_s32(a, self.0.neon.vdupq_n_s32(-(n as i32)))
    }
    #[inline(always)]
    fn xor_i(self, a: int32x4_t, b: int32x4_t) -> int32x4_t {
        self.0.neon.veorq_s32(a, b)
    }
    #[inline(always)]
    fn min_i(self, a: int32x4_t, b: int32x4_t) -> int32x4_t {
        self.0.neon.vminq_s32(a, b)
    }
    #[inline(always)]
    fn max_i(self, a: int32x4_t, b: int32x4_t) -> int32x4_t {
        self.0.neon.vmaxq_s32(a, b)
    }
    #[inline(always)]
    fn lt_i(self, a: int32x4_t, b: int32x4_t) -> uint32x4_t {
        self.0.neon.vcltq_s32(a, b)
    }
    #[inline(always)]
    fn eq_i(self, a: int32x4_t, b: int32x4_t) -> uint32x4_t {
        self.0.neon.vceqq_s32(a, b)
    }
    #[inline(always)]
    fn select_i(self, m: uint32x4_t, a: int32x4_t, b: int32x4_t) -> int32x4_t {
        self.0.neon.vbslq_s32(m, a, b)
    }
    #[inline(always)]
    fn bits(self, a: float32x4_t) -> int32x4_t {
        self.0.neon.vreinterpretq_s32_f32(a)
    }
    #[inline(always)]
    fn f32_of(self, a: int32x4_t) -> float32x4_t {
        self.0.neon.vreinterpretq_f32_s32(a)
    }
    #[inline(always)]
    fn cvt_rne(self, a: float32x4_t) -> int32x4_t {
        self.0.neon.vcvtnq_s32_f32(a)
    }
    #[inline(always)]
    fn cvt_rne_x4(self, a: [float32x4_t; 4]) -> Option<[int32x4_t; 4]> {
        // fcvtns saturates out-of-range lanes (the sign kept) and sends NaN to 0: only NaN
        // needs the check (a lane equal to itself is a number).
        let ok = {
            let m = self.0.neon.vandq_u32(
                self.0.neon.vandq_u32(self.0.neon.vceqq_f32(a[0], a[0]), self.0.neon.vceqq_f32(a[1], a[1])),
                self.0.neon.vandq_u32(self.0.neon.vceqq_f32(a[2], a[2]), self.0.neon.vceqq_f32(a[3], a[3])),
            );
            self.0.neon.vminvq_u32(m) != 0
        };
        let mut c = [self.splat_i(0); 4];
        for (ck, v) in c.iter_mut().zip(a) {
            *ck = self.cvt_rne(v);
        }
        ok.then_some(c)
    }
    #[inline(always)]
    fn cvt_trunc(self, a: float32x4_t) -> int32x4_t {
        self.0.neon.vcvtq_s32_f32(a)
    }
    #[inline(always)]
    fn cvt_f32(self, a: int32x4_t) -> float32x4_t {
        self.0.neon.vcvtq_f32_s32(a)
    }

    #[inline(always)]
    fn load_f32(self, b: &[u8]) -> float32x4_t {
        let b = &b[..16];
        // SAFETY: `b` is exactly the 16 bytes read; ld1 has no alignment requirement for f32
        // lanes beyond the byte alignment NEON tolerates.
        unsafe { vreinterpretq_f32_u8(vld1q_u8(b.as_ptr())) }
    }
    #[inline(always)]
    fn load_i32(self, b: &[u8]) -> int32x4_t {
        let b = &b[..16];
        // SAFETY: `b` is exactly the 16 bytes read (byte load, no alignment requirement).
        unsafe { vreinterpretq_s32_u8(vld1q_u8(b.as_ptr())) }
    }
    #[inline(always)]
    fn load_u16(self, b: &[u8]) -> int32x4_t {
        let b = &b[..8];
        // SAFETY: `b` is exactly the 8 bytes read (byte load).
        unsafe { vreinterpretq_s32_u32(vmovl_u16(vreinterpret_u16_u8(vld1_u8(b.as_ptr())))) }
    }
    #[inline(always)]
    fn load_i16(self, b: &[u8]) -> int32x4_t {
        let b = &b[..8];
        // SAFETY: `b` is exactly the 8 bytes read (byte load).
        unsafe { vmovl_s16(vreinterpret_s16_u8(vld1_u8(b.as_ptr()))) }
    }
    #[inline(always)]
    fn load_i8(self, b: &[u8]) -> int32x4_t {
        let b = &b[..4];
        let w = u32::from_le_bytes([b[0], b[1], b[2], b[3]]);
        {
            let bytes = self.0.neon.vreinterpret_s8_u32(self.0.neon.vdup_n_u32(w));
            self.0.neon.vmovl_s16(self.0.neon.vget_low_s16(self.0.neon.vmovl_s8(bytes)))
        }
    }
    #[inline(always)]
    fn load_u8(self, b: &[u8]) -> int32x4_t {
        let b = &b[..4];
        let w = u32::from_le_bytes([b[0], b[1], b[2], b[3]]);
        {
            let bytes = self.0.neon.vreinterpret_u8_u32(self.0.neon.vdup_n_u32(w));
            self.0
                .neon
                .vreinterpretq_s32_u32(self.0.neon.vmovl_u16(self.0.neon.vget_low_u16(self.0.neon.vmovl_u8(bytes))))
        }
    }
    #[inline(always)]
    fn load_u4(self, b: &[u8]) -> int32x4_t {
        self.spread(u16::from_le_bytes([b[0], b[1]]) as u32, 0xf, [0, -4, -8, -12])
    }
    #[inline(always)]
    fn load_u2(self, b: &[u8]) -> int32x4_t {
        self.spread(b[0] as u32, 3, [0, -2, -4, -6])
    }
    #[inline(always)]
    fn load_u6(self, b: &[u8]) -> int32x4_t {
        self.spread(u32::from_le_bytes([b[0], b[1], b[2], 0]), 0x3f, [0, -6, -12, -18])
    }

    #[inline(always)]
    fn store_f32(self, a: float32x4_t, out: &mut [u8]) {
        let out = &mut out[..16];
        // SAFETY: `out` is exactly the 16 bytes written (byte store).
        unsafe { vst1q_u8(out.as_mut_ptr(), vreinterpretq_u8_f32(a)) }
    }
    #[inline(always)]
    fn store_i32(self, a: int32x4_t, out: &mut [u8]) {
        let out = &mut out[..16];
        // SAFETY: `out` is exactly the 16 bytes written (byte store).
        unsafe { vst1q_u8(out.as_mut_ptr(), vreinterpretq_u8_s32(a)) }
    }
    #[inline(always)]
    fn store_u16(self, a: int32x4_t, out: &mut [u8]) {
        let out = &mut out[..8];
        // SAFETY: `out` is exactly the 8 bytes written; xtn keeps the low 16 bits.
        unsafe { vst1_u8(out.as_mut_ptr(), vreinterpret_u8_u16(vmovn_u32(vreinterpretq_u32_s32(a)))) }
    }
    #[inline(always)]
    fn store_u8(self, a: int32x4_t, out: &mut [u8]) {
        let w = {
            let h = self.0.neon.vmovn_u32(self.0.neon.vreinterpretq_u32_s32(a));
            self.0.neon.vget_lane_u32::<0>(
                self.0.neon.vreinterpret_u32_u8(self.0.neon.vmovn_u16(self.0.neon.vcombine_u16(h, h))),
            )
        };
        out[..4].copy_from_slice(&w.to_le_bytes());
    }
    #[inline(always)]
    fn store_sat8x4(self, c: [int32x4_t; 4], z: [int32x4_t; 4], signed: bool, out: &mut [u8]) {
        let v = {
            // sqxtn: i32 -> i16 with saturation; sqadd: i16 saturating add.
            let a = self.0.neon.vqaddq_s16(
                self.0.neon.vcombine_s16(self.0.neon.vqmovn_s32(c[0]), self.0.neon.vqmovn_s32(c[1])),
                self.0.neon.vcombine_s16(self.0.neon.vqmovn_s32(z[0]), self.0.neon.vqmovn_s32(z[1])),
            );
            let b = self.0.neon.vqaddq_s16(
                self.0.neon.vcombine_s16(self.0.neon.vqmovn_s32(c[2]), self.0.neon.vqmovn_s32(c[3])),
                self.0.neon.vcombine_s16(self.0.neon.vqmovn_s32(z[2]), self.0.neon.vqmovn_s32(z[3])),
            );
            if signed {
                self.0
                    .neon
                    .vreinterpretq_u8_s8(self.0.neon.vcombine_s8(self.0.neon.vqmovn_s16(a), self.0.neon.vqmovn_s16(b)))
            } else {
                self.0.neon.vcombine_u8(self.0.neon.vqmovun_s16(a), self.0.neon.vqmovun_s16(b))
            }
        };
        let out = &mut out[..16];
        // SAFETY: `out` is exactly the 16 bytes written (byte store).
        unsafe { vst1q_u8(out.as_mut_ptr(), v) }
    }
    #[inline(always)]
    fn store_u4(self, a: int32x4_t, out: &mut [u8]) {
        let w = self.shifted(a, 0xf, [0, 4, 8, 12]);
        out[..2].copy_from_slice(&(w as u16).to_le_bytes());
    }
    #[inline(always)]
    fn store_u2(self, a: int32x4_t, out: &mut [u8]) {
        out[0] = self.shifted(a, 3, [0, 2, 4, 6]) as u8;
    }
    #[inline(always)]
    fn store_u6(self, a: int32x4_t, out: &mut [u8]) {
        let w = self.shifted(a, 0x3f, [0, 6, 12, 18]);
        out[..3].copy_from_slice(&w.to_le_bytes()[..3]);
    }
}
