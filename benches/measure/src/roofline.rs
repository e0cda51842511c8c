//! The roofline kernel's buffers, store calibration and split over threads.

use rayon::prelude::*;

use crate::kernels::{has_avx512, stream};
use crate::{median, Aligned};

/// The roofline kernel: reads `in_bytes` and writes `out_bytes` with nothing but loads,
/// stores and xors (64-byte vectors with AVX-512, 32-byte with AVX2), one sequential pass
/// through each of two 64-byte aligned buffers (split into one contiguous part per thread).
/// Where the output is smaller than the input, each 64-byte output block is the xor of the
/// next `in / out` input blocks (a quantize kernel's loop minus the arithmetic) and the
/// input left over (scales, fractional ratios) is xor-folded at the end; where it is
/// larger, each input block is stored `out / in` times and the output left over is copied
/// from the input. Every input byte is read and every output byte written (fewer than 64
/// bytes per part twice). Stores are ordinary (write-allocate) stores, as in the kernels,
/// or non-temporal ones where [`Roofline::calibrate`] finds them faster (large outputs, as
/// `memcpy` does).
pub struct Roofline {
    input: Aligned<u8>,
    output: Aligned<u8>,
    non_temporal: bool,
}

/// Start of part `s` of `steps` in a buffer of `len` bytes (64-byte aligned but the end).
fn part_bound(s: usize, steps: usize, len: usize) -> usize {
    if s >= steps {
        len
    } else {
        (s * len / steps) & !63
    }
}

impl Roofline {
    /// Buffers for a kernel reading `in_bytes` and writing `out_bytes`, both touched.
    pub fn new(in_bytes: usize, out_bytes: usize) -> Roofline {
        let mut input = Aligned::filled(in_bytes.max(1), 0u8);
        for (i, b) in input.as_mut_slice().iter_mut().enumerate() {
            *b = (i as u8).wrapping_mul(31) ^ 0x5a;
        }
        Roofline { input, output: Aligned::filled(out_bytes.max(1), 0xa5), non_temporal: false }
    }

    /// [`Roofline::new`], then [calibrated](Roofline::calibrate) for `threads`.
    pub fn calibrated(in_bytes: usize, out_bytes: usize, threads: usize) -> Roofline {
        let mut r = Roofline::new(in_bytes, out_bytes);
        r.calibrate(threads);
        r
    }

    /// Picks ordinary or non-temporal stores, whichever is faster here (as `memcpy` switches
    /// to non-temporal stores for copies larger than the caches): the median of 3 timed
    /// passes each. Non-temporal stores exist on the AVX-512 path only.
    pub fn calibrate(&mut self, threads: usize) {
        if !cfg!(target_arch = "x86_64") || !has_avx512() {
            return;
        }
        let mut time = |nt: bool| {
            self.non_temporal = nt;
            std::hint::black_box(self.run(threads));
            let v: Vec<f64> = (0..3)
                .map(|_| {
                    let t = std::time::Instant::now();
                    std::hint::black_box(self.run(threads));
                    t.elapsed().as_secs_f64()
                })
                .collect();
            median(&v)
        };
        let (plain, nt) = (time(false), time(true));
        self.non_temporal = nt < plain;
    }

    /// Whether the kernel uses non-temporal stores.
    pub fn non_temporal(&self) -> bool {
        self.non_temporal
    }

    /// One pass over the buffers, split over `threads` rayon tasks (1: the calling
    /// thread). Returns a value that depends on every byte read.
    pub fn run(&mut self, threads: usize) -> u64 {
        let input = self.input.as_slice();
        let output = self.output.as_mut_slice();
        let (il, ol) = (input.len(), output.len());
        // Every part gets at least 64 bytes of each buffer.
        let parts_n = threads.clamp(1, (il.min(ol) / 64).max(1));
        let nt = self.non_temporal;
        if parts_n == 1 {
            return stream(input, output, nt);
        }
        let mut parts = Vec::with_capacity(parts_n);
        let mut rest_out: &mut [u8] = output;
        let (mut i0, mut o0) = (0, 0);
        for t in 1..=parts_n {
            let (i1, o1) = (part_bound(t, parts_n, il), part_bound(t, parts_n, ol));
            let (head, tail) = std::mem::take(&mut rest_out).split_at_mut(o1 - o0);
            parts.push((&input[i0..i1], head));
            rest_out = tail;
            (i0, o0) = (i1, o1);
        }
        parts.into_par_iter().map(|(i, o)| stream(i, o, nt)).reduce(|| 0, |a, b| a ^ b)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn roofline_writes_every_output_byte() {
        for (i, o) in [(4096, 1024), (1024, 4096), (100_000, 3), (3, 100_000), (1 << 20, 1 << 18), (5, 7)] {
            for threads in [1, 2, 3] {
                let mut r = Roofline::new(i, o);
                r.input.as_mut_slice().fill(1);
                r.run(threads);
                // Copies give 1, xors of an odd or even number of blocks 1 or 0.
                assert!(r.output.as_slice().iter().all(|&b| b <= 1), "{i} {o} {threads}");
            }
        }
    }
}
