//! Portable fallback: four lanes in plain arrays, no `unsafe`. Also the model every other
//! ISA module must match lane for lane.

use crate::simd::Simd;

/// The portable ISA token.
#[derive(Clone, Copy, Debug, Default)]
pub(crate) struct Scalar;

const L: usize = 4;

#[inline(always)]
fn map<T: Copy, U: Copy + Default>(a: [T; L], f: impl Fn(T) -> U) -> [U; L] {
    let mut out = [U::default(); L];
    for i in 0..L {
        out[i] = f(a[i]);
    }
    out
}

#[inline(always)]
fn zip<T: Copy, U: Copy + Default>(a: [T; L], b: [T; L], f: impl Fn(T, T) -> U) -> [U; L] {
    let mut out = [U::default(); L];
    for i in 0..L {
        out[i] = f(a[i], b[i]);
    }
    out
}

/// `m ? a : b` lane by lane.
#[inline(always)]
fn pick<T: Copy>(m: [bool; L], a: [T; L], b: [T; L]) -> [T; L] {
    let mut out = b;
    for i in 0..L {
        if m[i] {
            out[i] = a[i];
        }
    }
    out
}

impl Simd for Scalar {
    #[inline(never)]
    fn enter<K: crate::isa::IsaKernel<Self>>(self, k: K) -> K::Output {
        k.run_on(self)
    }

    const LANES: usize = L;
    // `f32::mul_add` is a libm call without the FMA feature: divide instead.
    const HAS_FMA: bool = false;
    const SPECIALIZE: bool = false;
    type F = [f32; L];
    type I = [i32; L];
    type M = [bool; L];

    #[inline(always)]
    fn splat(self, v: f32) -> Self::F {
        [v; L]
    }
    #[inline(always)]
    fn add(self, a: Self::F, b: Self::F) -> Self::F {
        zip(a, b, |x, y| x + y)
    }
    #[inline(always)]
    fn sub(self, a: Self::F, b: Self::F) -> Self::F {
        zip(a, b, |x, y| x - y)
    }
    #[inline(always)]
    fn mul(self, a: Self::F, b: Self::F) -> Self::F {
        zip(a, b, |x, y| x * y)
    }
    #[inline(always)]
    fn div(self, a: Self::F, b: Self::F) -> Self::F {
        zip(a, b, |x, y| x / y)
    }
    #[inline(always)]
    fn fma(self, a: Self::F, b: Self::F, c: Self::F) -> Self::F {
        let mut out = [0.0; L];
        for i in 0..L {
            out[i] = a[i].mul_add(b[i], c[i]);
        }
        out
    }
    #[inline(always)]
    fn fnma(self, a: Self::F, b: Self::F, c: Self::F) -> Self::F {
        let mut out = [0.0; L];
        for i in 0..L {
            out[i] = (-a[i]).mul_add(b[i], c[i]);
        }
        out
    }
    #[inline(always)]
    fn min(self, a: Self::F, b: Self::F) -> Self::F {
        zip(a, b, |x, y| if x < y { x } else { y })
    }
    #[inline(always)]
    fn max(self, a: Self::F, b: Self::F) -> Self::F {
        zip(a, b, |x, y| if x > y { x } else { y })
    }
    #[inline(always)]
    fn eq(self, a: Self::F, b: Self::F) -> Self::M {
        zip(a, b, |x, y| x == y)
    }
    #[inline(always)]
    fn is_nan(self, a: Self::F) -> Self::M {
        map(a, f32::is_nan)
    }
    #[inline(always)]
    fn select(self, m: Self::M, a: Self::F, b: Self::F) -> Self::F {
        pick(m, a, b)
    }
    #[inline(always)]
    fn or_m(self, a: Self::M, b: Self::M) -> Self::M {
        zip(a, b, |x, y| x | y)
    }
    #[inline(always)]
    fn mask_bits(self, m: Self::M) -> u32 {
        (0..L).fold(0, |b, l| b | (u32::from(m[l]) << l))
    }
    #[inline(always)]
    fn mask_from_bits(self, bits: u32) -> Self::M {
        std::array::from_fn(|l| bits >> l & 1 == 1)
    }
    #[inline(always)]
    fn splat_i(self, v: i32) -> Self::I {
        [v; L]
    }
    #[inline(always)]
    fn add_i(self, a: Self::I, b: Self::I) -> Self::I {
        zip(a, b, i32::wrapping_add)
    }
    #[inline(always)]
    fn sub_i(self, a: Self::I, b: Self::I) -> Self::I {
        zip(a, b, i32::wrapping_sub)
    }
    #[inline(always)]
    fn and_i(self, a: Self::I, b: Self::I) -> Self::I {
        zip(a, b, |x, y| x & y)
    }
    #[inline(always)]
    fn or_i(self, a: Self::I, b: Self::I) -> Self::I {
        zip(a, b, |x, y| x | y)
    }
    #[inline(always)]
    fn shl(self, a: Self::I, n: u32) -> Self::I {
        map(a, |x| ((x as u32) << n) as i32)
    }
    #[inline(always)]
    fn shr(self, a: Self::I, n: u32) -> Self::I {
        map(a, |x| ((x as u32) >> n) as i32)
    }
    #[inline(always)]
    fn sra(self, a: Self::I, n: u32) -> Self::I {
        map(a, |x| x >> n)
    }
    #[inline(always)]
    fn xor_i(self, a: Self::I, b: Self::I) -> Self::I {
        zip(a, b, |x, y| x ^ y)
    }
    #[inline(always)]
    fn lt_i(self, a: Self::I, b: Self::I) -> Self::M {
        zip(a, b, |x, y| x < y)
    }
    #[inline(always)]
    fn eq_i(self, a: Self::I, b: Self::I) -> Self::M {
        zip(a, b, |x, y| x == y)
    }
    #[inline(always)]
    fn select_i(self, m: Self::M, a: Self::I, b: Self::I) -> Self::I {
        pick(m, a, b)
    }
    #[inline(always)]
    fn bits(self, a: Self::F) -> Self::I {
        map(a, |x| x.to_bits() as i32)
    }
    #[inline(always)]
    fn f32_of(self, a: Self::I) -> Self::F {
        map(a, |x| f32::from_bits(x as u32))
    }
    #[inline(always)]
    fn cvt_rne(self, a: Self::F) -> Self::I {
        // In-range by contract. For |x| < 2^23, |x| + 2^23 lies in [2^23, 2^24) where the
        // spacing is 1, so the addition rounds |x| to an integer (half to even: every call
        // runs with the default rounding mode, see `fpenv`) and the subtraction is exact; the
        // sign is put back afterwards, so -0.4 gives -0.0 and 0. Larger magnitudes are
        // integers already. `as` saturates should a caller slip.
        map(a, |x| {
            const TWO23: f32 = 8_388_608.0;
            let m = x.abs();
            let r = if m < TWO23 { ((m + TWO23) - TWO23).copysign(x) } else { x };
            r as i32
        })
    }
    #[inline(always)]
    fn cvt_f32(self, a: Self::I) -> Self::F {
        map(a, |x| x as f32)
    }
    #[inline(always)]
    fn load_f32(self, b: &[u8]) -> Self::F {
        std::array::from_fn(|i| f32::from_le_bytes([b[4 * i], b[4 * i + 1], b[4 * i + 2], b[4 * i + 3]]))
    }
    #[inline(always)]
    fn load_i32(self, b: &[u8]) -> Self::I {
        std::array::from_fn(|i| i32::from_le_bytes([b[4 * i], b[4 * i + 1], b[4 * i + 2], b[4 * i + 3]]))
    }
    #[inline(always)]
    fn load_u16(self, b: &[u8]) -> Self::I {
        std::array::from_fn(|i| u16::from_le_bytes([b[2 * i], b[2 * i + 1]]) as i32)
    }
    #[inline(always)]
    fn load_u8(self, b: &[u8]) -> Self::I {
        std::array::from_fn(|i| b[i] as i32)
    }
    #[inline(always)]
    fn load_u4(self, b: &[u8]) -> Self::I {
        std::array::from_fn(|i| ((b[i / 2] >> (4 * (i % 2))) & 0xf) as i32)
    }
    #[inline(always)]
    fn load_u2(self, b: &[u8]) -> Self::I {
        std::array::from_fn(|i| ((b[0] >> (2 * i)) & 3) as i32)
    }
    #[inline(always)]
    fn load_u6(self, b: &[u8]) -> Self::I {
        let w = b[0] as u32 | (b[1] as u32) << 8 | (b[2] as u32) << 16;
        std::array::from_fn(|i| ((w >> (6 * i)) & 0x3f) as i32)
    }
    #[inline(always)]
    fn store_f32(self, a: Self::F, out: &mut [u8]) {
        for i in 0..L {
            out[4 * i..4 * i + 4].copy_from_slice(&a[i].to_le_bytes());
        }
    }
    #[inline(always)]
    fn store_u16(self, a: Self::I, out: &mut [u8]) {
        for i in 0..L {
            out[2 * i..2 * i + 2].copy_from_slice(&(a[i] as u16).to_le_bytes());
        }
    }
    #[inline(always)]
    fn store_u8(self, a: Self::I, out: &mut [u8]) {
        for i in 0..L {
            out[i] = a[i] as u8;
        }
    }
    #[inline(always)]
    fn store_u4(self, a: Self::I, out: &mut [u8]) {
        out[0] = (a[0] & 0xf | (a[1] & 0xf) << 4) as u8;
        out[1] = (a[2] & 0xf | (a[3] & 0xf) << 4) as u8;
    }
    #[inline(always)]
    fn store_u2(self, a: Self::I, out: &mut [u8]) {
        out[0] = (a[0] & 3 | (a[1] & 3) << 2 | (a[2] & 3) << 4 | (a[3] & 3) << 6) as u8;
    }
    #[inline(always)]
    fn store_u6(self, a: Self::I, out: &mut [u8]) {
        let w = (a[0] & 0x3f) as u32
            | ((a[1] & 0x3f) as u32) << 6
            | ((a[2] & 0x3f) as u32) << 12
            | ((a[3] & 0x3f) as u32) << 18;
        out[..3].copy_from_slice(&w.to_le_bytes()[..3]);
    }
    #[inline(always)]
    fn store_i32(self, a: Self::I, out: &mut [u8]) {
        for i in 0..L {
            out[4 * i..4 * i + 4].copy_from_slice(&a[i].to_le_bytes());
        }
    }
}
