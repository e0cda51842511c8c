//! Portable fallback: four lanes in plain arrays, no `unsafe`. Also the model every other
//! ISA module must match lane for lane.

use crate::simd::{Simd, LIM};

/// The portable ISA token.
#[derive(Clone, Copy, Debug, Default)]
pub(crate) struct Scalar;

const L: usize = 4;

/// `[e(0), e(1), e(2), e(3)]`: the lanes written out, not looped over. Every primitive
/// inlines into large kernels, and a loop per primitive costs the optimiser a full unroll
/// each time (most of this crate's compile time, when these were loops).
macro_rules! lanes {
    ($i:ident => $e:expr) => {
        [
            {
                let $i = 0;
                $e
            },
            {
                let $i = 1;
                $e
            },
            {
                let $i = 2;
                $e
            },
            {
                let $i = 3;
                $e
            },
        ]
    };
}

#[inline(always)]
fn map<T: Copy, U>(a: [T; L], f: impl Fn(T) -> U) -> [U; L] {
    lanes!(i => f(a[i]))
}

#[inline(always)]
fn zip<T: Copy, U>(a: [T; L], b: [T; L], f: impl Fn(T, T) -> U) -> [U; L] {
    lanes!(i => f(a[i], b[i]))
}

/// A mask lane as the vector ISAs hold it: all ones where true, zero where false.
#[inline(always)]
fn lane(t: bool) -> i32 {
    -i32::from(t)
}

/// `m ? a : b` lane by lane, as a bitwise blend of the i32 bit patterns: every lane of both
/// is computed and none is branched on, so the optimiser keeps the lanes together (a
/// per-lane `if` let it sink a division into one branch per lane, ~20 % more instructions).
#[inline(always)]
fn pick(m: [i32; L], a: [i32; L], b: [i32; L]) -> [i32; L] {
    lanes!(i => a[i] & m[i] | b[i] & !m[i])
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
    type M = [i32; L];

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
        lanes!(i => a[i].mul_add(b[i], c[i]))
    }
    #[inline(always)]
    fn fnma(self, a: Self::F, b: Self::F, c: Self::F) -> Self::F {
        lanes!(i => (-a[i]).mul_add(b[i], c[i]))
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
        zip(a, b, |x, y| lane(x == y))
    }
    #[inline(always)]
    fn is_nan(self, a: Self::F) -> Self::M {
        map(a, |x| lane(x.is_nan()))
    }
    #[inline(always)]
    fn lt(self, a: Self::F, b: Self::F) -> Self::M {
        zip(a, b, |x, y| lane(x < y))
    }
    #[inline(always)]
    fn select(self, m: Self::M, a: Self::F, b: Self::F) -> Self::F {
        self.f32_of(pick(m, self.bits(a), self.bits(b)))
    }
    #[inline(always)]
    fn or_m(self, a: Self::M, b: Self::M) -> Self::M {
        zip(a, b, |x, y| x | y)
    }
    #[inline(always)]
    fn andnot_m(self, a: Self::M, b: Self::M) -> Self::M {
        zip(a, b, |x, y| x & !y)
    }
    #[inline(always)]
    fn mask_bits(self, m: Self::M) -> u32 {
        (m[0] & 1 | (m[1] & 2) | (m[2] & 4) | (m[3] & 8)) as u32
    }
    #[inline(always)]
    fn mask_from_bits(self, bits: u32) -> Self::M {
        lanes!(l => lane(bits >> l & 1 == 1))
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
        zip(a, b, |x, y| lane(x < y))
    }
    #[inline(always)]
    fn eq_i(self, a: Self::I, b: Self::I) -> Self::M {
        zip(a, b, |x, y| lane(x == y))
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
        // Integer arithmetic on the bits, no float-to-int conversion (whose saturation
        // checks compile to branches) and no branch. In-range by contract (|x| < 2^31);
        // beyond it, and for NaN, the result is unspecified but still defined.
        // - |x| < 2^23: |x| + 2^23 lies in [2^23, 2^24] where the spacing is 1, so the
        //   addition rounds |x| half to even (every call runs in the default rounding mode,
        //   see `fpenv`), and the sum's bits less those of 2^23 are that integer (2^24, the
        //   next binade's first value, comes out as 2^23 too).
        // - 2^23 <= |x| < 2^31: |x| is an integer, its significand shifted by e - 23.
        // The sign goes back on last, so -0.4 gives 0.
        map(a, |x| {
            const TWO23: f32 = 8_388_608.0;
            let b = x.to_bits();
            let m = f32::from_bits(b & 0x7fff_ffff);
            let small = ((m + TWO23).to_bits() as i32).wrapping_sub(0x4b00_0000);
            let shift = ((b >> 23) & 0xff).wrapping_sub(150);
            let big = ((b & 0x7f_ffff | 0x80_0000) as i32).wrapping_shl(shift);
            let pick = lane(m < TWO23);
            let v = small & pick | big & !pick;
            let sign = (b as i32) >> 31;
            (v ^ sign).wrapping_sub(sign)
        })
    }
    #[inline(always)]
    fn cvt_trunc(self, a: Self::F) -> Self::I {
        // In range by contract, where `as` truncates exactly.
        map(a, |x| x as i32)
    }
    #[inline(always)]
    fn cvt_f32(self, a: Self::I) -> Self::F {
        map(a, |x| x as f32)
    }
    #[inline(always)]
    fn cvt_rne_x4(self, a: [Self::F; 4]) -> Option<[Self::I; 4]> {
        // No lane converts wrongly here: NaN is the one input without an answer, and
        // magnitudes are clamped to `LIM` (beyond every integer range) before converting.
        let nan = |v: Self::F| v[0].is_nan() | v[1].is_nan() | v[2].is_nan() | v[3].is_nan();
        if nan(a[0]) | nan(a[1]) | nan(a[2]) | nan(a[3]) {
            return None;
        }
        let conv = |v: Self::F| self.cvt_rne(self.clamp_abs(v, self.splat(LIM)));
        Some([conv(a[0]), conv(a[1]), conv(a[2]), conv(a[3])])
    }
    #[inline(always)]
    fn load_f32(self, b: &[u8]) -> Self::F {
        lanes!(i => f32::from_le_bytes([b[4 * i], b[4 * i + 1], b[4 * i + 2], b[4 * i + 3]]))
    }
    #[inline(always)]
    fn load_i32(self, b: &[u8]) -> Self::I {
        lanes!(i => i32::from_le_bytes([b[4 * i], b[4 * i + 1], b[4 * i + 2], b[4 * i + 3]]))
    }
    #[inline(always)]
    fn load_u16(self, b: &[u8]) -> Self::I {
        lanes!(i => u16::from_le_bytes([b[2 * i], b[2 * i + 1]]) as i32)
    }
    #[inline(always)]
    fn load_u8(self, b: &[u8]) -> Self::I {
        lanes!(i => b[i] as i32)
    }
    #[inline(always)]
    fn load_i8(self, b: &[u8]) -> Self::I {
        lanes!(i => b[i] as i8 as i32)
    }
    #[inline(always)]
    fn load_i16(self, b: &[u8]) -> Self::I {
        lanes!(i => i16::from_le_bytes([b[2 * i], b[2 * i + 1]]) as i32)
    }
    // f16 conversions one value at a time with `half` (the same results as the generic
    // codec and F16C, NaN payloads included: the tests hold every ISA to the reference);
    // its branches favour ordinary values, where the generic codec pays for every case.
    #[inline(always)]
    fn load_f16(self, b: &[u8]) -> Self::F {
        lanes!(i => half::f16::from_le_bytes([b[2 * i], b[2 * i + 1]]).to_f32())
    }
    #[inline(always)]
    fn f32_to_f16_bits(self, a: Self::F) -> Self::I {
        map(a, |x| i32::from(half::f16::from_f32(x).to_bits()))
    }
    #[inline(always)]
    fn load_u4(self, b: &[u8]) -> Self::I {
        lanes!(i => ((b[i / 2] >> (4 * (i % 2))) & 0xf) as i32)
    }
    #[inline(always)]
    fn load_u2(self, b: &[u8]) -> Self::I {
        lanes!(i => ((b[0] >> (2 * i)) & 3) as i32)
    }
    #[inline(always)]
    fn load_u6(self, b: &[u8]) -> Self::I {
        let w = b[0] as u32 | (b[1] as u32) << 8 | (b[2] as u32) << 16;
        lanes!(i => ((w >> (6 * i)) & 0x3f) as i32)
    }
    #[inline(always)]
    fn store_f32(self, a: Self::F, out: &mut [u8]) {
        let out = &mut out[..4 * L];
        lanes!(i => out[4 * i..4 * i + 4].copy_from_slice(&a[i].to_le_bytes()));
    }
    #[inline(always)]
    fn store_u16(self, a: Self::I, out: &mut [u8]) {
        let out = &mut out[..2 * L];
        lanes!(i => out[2 * i..2 * i + 2].copy_from_slice(&(a[i] as u16).to_le_bytes()));
    }
    #[inline(always)]
    fn store_u8(self, a: Self::I, out: &mut [u8]) {
        out[..L].copy_from_slice(&map(a, |x| x as u8));
    }
    #[inline(always)]
    fn store_sat8x4(self, c: [Self::I; 4], z: [Self::I; 4], signed: bool, out: &mut [u8]) {
        // The i16 saturations model the packs of the SIMD ISAs lane for lane.
        let (lo, hi) = if signed { (-128, 127) } else { (0, 255) };
        let sat16 = |v: i32| v.clamp(-32768, 32767) as i16;
        let code = |v: i32, z: i32| (sat16(v).saturating_add(sat16(z)) as i32).clamp(lo, hi) as u8;
        let out = &mut out[..4 * L];
        lanes!(k => lanes!(l => out[k * L + l] = code(c[k][l], z[k][l])));
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
        let out = &mut out[..4 * L];
        lanes!(i => out[4 * i..4 * i + 4].copy_from_slice(&a[i].to_le_bytes()));
    }
}
