//! Test fixtures shared by the qdq workspace: the tests of `qdq`, its example, the bench
//! cases (`qdq-benches`), the xtask tests and the fuzz targets. The crate depends on nothing,
//! so `qdq` and `qdq-ref` can both take it as a dev-dependency without a cycle.
//!
//! * [`Rng`]: the one deterministic generator, xorshift64. Every test seeds its own, so a
//!   run is reproducible and a failure message plus the test's seed replays it.
//! * [`F32_SPECIALS`]: the f32 values a float path gets wrong first: signed zeros,
//!   infinities, NaNs with either sign and several payloads (quiet and signalling),
//!   subnormals, the edges of the normal range, the limits of qdq's fast-division scale
//!   range, round-half-to-even ties at the integer types' edges, and the saturation edges
//!   of f16 and the float8 types. Tests mix them into random data.
//! * [`SWEEP_LENGTHS`], [`SHORT_LENGTHS`], [`MISALIGNMENTS`]: the slice lengths and the
//!   start offsets the differential tests walk, so vector bodies, partial vectors, tails and
//!   unaligned inputs of every ISA are covered.

use std::ops::RangeInclusive;

/// The deterministic test-data generator: Marsaglia's xorshift64 with shifts 13, 7, 17.
///
/// ```text
/// s ^= s << 13;  s ^= s >> 7;  s ^= s << 17;  output s
/// ```
///
/// Its period is 2^64 - 1 over the non-zero states (zero maps to zero, so a seed must not
/// be 0). It is fast and its output is well spread, which is all test data needs; it is not
/// a statistical or cryptographic generator.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Rng(u64);

impl Rng {
    /// A generator whose state is `seed` (non-zero).
    pub const fn new(seed: u64) -> Rng {
        assert!(seed != 0, "xorshift64 never leaves the zero state: seed with a non-zero value");
        Rng(seed)
    }

    /// The next 64 bits.
    pub fn next_u64(&mut self) -> u64 {
        self.0 ^= self.0 << 13;
        self.0 ^= self.0 >> 7;
        self.0 ^= self.0 << 17;
        self.0
    }

    /// A value in `0..n` (`n > 0`): the next output modulo `n`.
    pub fn below(&mut self, n: usize) -> usize {
        (self.next_u64() % n as u64) as usize
    }

    /// A value in `[0, 1)`: the top 24 bits of the next output over 2^24 (exact in f32).
    pub fn unit(&mut self) -> f32 {
        (self.next_u64() >> 40) as f32 / (1u64 << 24) as f32
    }

    /// A value in `[-1, 1)`: the top 24 bits of the next output over 2^23, minus 1.
    pub fn signed_unit(&mut self) -> f32 {
        (self.next_u64() >> 40) as f32 / (1u64 << 23) as f32 - 1.0
    }

    /// An element of `from` (non-empty), chosen with [`Rng::below`].
    pub fn pick<T: Copy>(&mut self, from: &[T]) -> T {
        from[self.below(from.len())]
    }
}

/// Special f32 inputs, by group. Every f32 entry of the fuzzers' dictionary
/// (`fuzz/dict/special_values.dict`) is here too (a test checks it).
pub const F32_SPECIALS: [f32; 46] = [
    // Signed zeros.
    0.0,
    -0.0,
    // Infinities.
    f32::INFINITY,
    f32::NEG_INFINITY,
    // NaNs: the default quiet NaN of either sign, a quiet NaN with a payload, the negative
    // NaN with every payload bit set, and signalling NaNs with the smallest and largest
    // payloads.
    f32::NAN,
    -f32::NAN,
    f32::from_bits(0x7fc0_0001),
    f32::from_bits(0xffff_ffff),
    f32::from_bits(0x7f80_0001),
    f32::from_bits(0x7fbf_ffff),
    // Subnormals: the smallest of either sign, one in the middle, the largest.
    f32::from_bits(0x0000_0001),
    -1e-45,
    1e-40,
    f32::from_bits(0x007f_ffff),
    // Tiny normals: the smallest normal and a quotient that underflows with small scales.
    f32::MIN_POSITIVE,
    1e-30,
    // The bounds of qdq's fast (reciprocal and FMA) division scale range, 2^-30 and 2^30.
    f32::from_bits(0x3080_0000),
    f32::from_bits(0x4e80_0000),
    // Large: beyond i32 (3e9, 2^31), far beyond every integer type (2^90), near and at the
    // largest finite values.
    1e9,
    3e9,
    -3e9,
    2_147_483_648.0,
    f32::from_bits(0x6c80_0000),
    3e38,
    f32::MAX,
    f32::MIN,
    // Ordinary values and round-half-to-even ties at scale 1, including the ties at the
    // edges of the 8- and 16-bit integer ranges.
    1.0,
    1.0 / 3.0,
    0.5,
    -0.5,
    1.5,
    2.5,
    -2.5,
    3.5,
    127.5,
    128.5,
    -128.5,
    255.5,
    32767.5,
    65535.5,
    // Saturation edges: e4m3fn's largest value and the smallest that rounds past it, the
    // same for e5m2 and for f16.
    448.0,
    464.0,
    57344.0,
    61440.0,
    65504.0,
    65520.0,
];

/// Every slice length from 0 to 512: empty, every partial vector of every ISA (4 to 16
/// f32 lanes, up to 64 codes of a sub-byte type per vector), whole vectors with every tail,
/// and every position of a bit-packed mask or sub-byte code in its last byte.
pub const SWEEP_LENGTHS: RangeInclusive<usize> = 0..=512;

/// Every 1-D length from 0 to 70 (past four 16-lane vectors plus a tail), walked next to
/// the multi-dimensional layouts of a differential test.
pub const SHORT_LENGTHS: RangeInclusive<usize> = 0..=70;

/// Inputs start at a byte offset in `0..MISALIGNMENTS` into their buffer, so 2- and 4-byte
/// elements are read at every alignment.
pub const MISALIGNMENTS: usize = 4;

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn xorshift64_sequence() {
        let mut r = Rng::new(1);
        assert_eq!(r.next_u64(), 1_082_269_761);
        let mut r = Rng::new(0x9e37_79b9_7f4a_7c15);
        let first: Vec<u64> = (0..3).map(|_| r.next_u64()).collect();
        let mut s = 0x9e37_79b9_7f4a_7c15u64;
        for want in first {
            s ^= s << 13;
            s ^= s >> 7;
            s ^= s << 17;
            assert_eq!(s, want);
        }
    }

    #[test]
    fn ranges() {
        let mut r = Rng::new(0x5eed);
        for _ in 0..10_000 {
            let (u, s, b) = (r.unit(), r.signed_unit(), r.below(7));
            assert!((0.0..1.0).contains(&u) && (-1.0..1.0).contains(&s) && b < 7);
        }
        // signed_unit is 2 unit - 1, bit for bit.
        let (mut a, mut b) = (Rng::new(42), Rng::new(42));
        for _ in 0..1000 {
            assert_eq!(a.signed_unit().to_bits(), (2.0 * b.unit() - 1.0).to_bits());
        }
    }

    #[test]
    #[should_panic(expected = "non-zero")]
    fn zero_seed_is_refused() {
        let _ = Rng::new(0);
    }

    #[test]
    fn specials_cover_every_class() {
        let bits: Vec<u32> = F32_SPECIALS.iter().map(|v| v.to_bits()).collect();
        let mut unique = bits.clone();
        unique.sort_unstable();
        unique.dedup();
        assert_eq!(unique.len(), bits.len(), "duplicates");
        let has = |f: fn(f32) -> bool| F32_SPECIALS.iter().any(|&v| f(v));
        assert!(has(|v| v == 0.0 && v.is_sign_negative()) && has(|v| v == 0.0 && v.is_sign_positive()));
        assert!(has(|v| v == f32::INFINITY) && has(|v| v == f32::NEG_INFINITY));
        assert!(has(|v| v.is_nan() && v.is_sign_negative()));
        assert!(has(|v| v.is_nan() && v.to_bits() & 0x0040_0000 == 0), "a signalling NaN");
        assert!(has(|v| v.is_subnormal() && v > 0.0) && has(|v| v.is_subnormal() && v < 0.0));
        assert!(has(|v| v.fract().abs() == 0.5), "a tie");
    }

    /// The f32 entries of the fuzzers' dictionary (`f32_name="\xNN\xNN\xNN\xNN"`, little
    /// endian) are all in [`F32_SPECIALS`].
    #[test]
    fn fuzz_dictionary_f32_values_are_specials() {
        let path = concat!(env!("CARGO_MANIFEST_DIR"), "/../../fuzz/dict/special_values.dict");
        let dict = std::fs::read_to_string(path).unwrap();
        let mut seen = 0;
        for line in dict.lines().filter(|l| l.starts_with("f32_")) {
            let (name, value) = line.split_once('=').unwrap();
            let hex: Vec<u8> = value
                .trim_matches('"')
                .split("\\x")
                .filter(|h| !h.is_empty())
                .map(|h| u8::from_str_radix(h, 16).unwrap())
                .collect();
            let bits = u32::from_le_bytes(hex.try_into().unwrap());
            assert!(F32_SPECIALS.iter().any(|v| v.to_bits() == bits), "{name} ({bits:#010x}) is not in F32_SPECIALS");
            seen += 1;
        }
        assert!(seen >= 30, "only {seen} f32 entries in {path}");
    }
}
