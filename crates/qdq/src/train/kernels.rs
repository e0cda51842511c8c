//! Training-mode kernels, written once over [`Simd`] (formulas in `qdq_ref::train`).
//!
//! * [`forward`]: QuantizeLinear's own per-vector code (`quantize::quantize_vec_m`, so `y`
//!   is the inference result bit for bit) plus the mask bits, or for fake quantization the
//!   codes dequantized in-register (`f32(c - z) * s`, or the decoded float code times `s`).
//!   The codes of the 8- and 4-bit integer types (a scale in the fast range, on ISAs with
//!   FMA) take QuantizeLinear's four-vector fast steps instead, whose saturating packs are
//!   the clamp (`quantize::sat8_step_masked`), and the mask is read off the same packs:
//!   bit set where `rne(x / s) + z` is within `[qmin, qmax]` (`Simd::sat_mask_x4`). Fake
//!   quantization to an integer type takes the same quotients and conversion, clamps the
//!   codes as integers and dequantizes them in-register (`quantize::sat_step_dequantized`:
//!   a lane is in range exactly where the clamp keeps it). The codes of e4m3fn and e5m2
//!   take QuantizeLinear's four-vector float encoder (`Simd::store_mini_x4`), and the mask
//!   bit is `|q| < MiniFormat::overflow_from()` on the quotient. Fake quantization to a
//!   float format without a zero point never forms the codes: the quotient is rounded to
//!   the format's grid in f32 (`codec::round_minifloat`, one add and one subtract of a
//!   power of two), the lanes past the overflow boundary replaced only in vectors that
//!   have any, then multiplied by the scale (`fake_mini_step`). Blocked along the last
//!   axis, whole groups of blocks (one per lane) take their scales by one vector load and
//!   their reciprocals by one division (`TrainBlocks`).
//! * [`elementwise`]: the backward passes without reductions: `(lda * dy) / s_P` under the
//!   mask, `lda * dy` under the mask, `(lda * dy) * s`. True division, so every quotient is
//!   the IEEE one whatever `dy` is.
//! * [`walk`]: the backward passes with reductions (fake quantization with LSQ gradients,
//!   the DequantizeLinear scale gradient) in the canonical summation order of
//!   `qdq_ref::train`: a run of up to 16384 terms goes into sixteen interleaved partial sums
//!   (one AVX-512 vector, two AVX2 or four NEON / portable vectors), folded pairwise; longer
//!   runs split at the same tile multiples as the reference; single-element runs (per-axis
//!   along the last axis, blocked along another axis) add straight into the group's sum,
//!   a vector of consecutive groups at a time.
//!
//! Padding lanes of partial vectors compute on zero input and are masked to `-0`, the
//! neutral element of IEEE addition, before any sum.

use crate::codec::{
    decode_minifloat, encode_minifloat_checked, round_minifloat, round_minifloat_specials, MiniFormat, MINI_RUNTIME,
};
use crate::dequantize::{store, store_as, store_out, Out};
use crate::isa::{IsaKernel, Kernel};
use crate::quantize::{
    divide, fast_lanes, fast_scale, group, load_codes, mini_adds_zero, mini_quotients_x4, quantize_vec_d,
    quantize_vec_m, redo_tiny, sat8_step_masked, sat_step_dequantized, seq_lanes, slow_scale_lanes, splat_lanes,
    store_codes, store_codes_x4, zero_points_int, Encode, GroupParams, Job, Lanes, Prec, Spec, Src, ANY, DIV_FAST,
};
use crate::segments::Segments;
use crate::simd::Simd;
use crate::walk::{self, RunOp};
use qdq_ref::train::{SUM_LANES, SUM_TILE};
use qdq_ref::{packing, Layout, Packed};

/// ORs the low `count` (<= 16) bits of `bits` into `mask` at bit `e` (those bits are zero).
#[inline(always)]
pub(crate) fn put_bits(mask: &mut [u8], e: usize, bits: u32, count: usize) {
    let v = (u64::from(bits) & ((1u64 << count) - 1)) << (e % 8);
    let first = e / 8;
    let bytes = (e % 8 + count).div_ceil(8);
    for (j, b) in mask[first..first + bytes].iter_mut().enumerate() {
        *b |= (v >> (8 * j)) as u8;
    }
}

/// `count` (<= 16) bits of `mask` from bit `e`, in the low bits.
#[inline(always)]
pub(crate) fn get_bits(mask: &[u8], e: usize, count: usize) -> u32 {
    let first = e / 8;
    let bytes = (e % 8 + count).div_ceil(8);
    let mut v = 0u64;
    for (j, b) in mask[first..first + bytes].iter().enumerate() {
        v |= u64::from(*b) << (8 * j);
    }
    ((v >> (e % 8)) & ((1u64 << count) - 1)) as u32
}

/// The bits of the first `n` lanes.
#[inline(always)]
fn lanes_mask(n: usize) -> u32 {
    ((1u64 << n) - 1) as u32
}

/// `valid` elements of `t`-sized values from element `i` of `data` as a vector (a direct
/// load when the vector is full, else through a zero-padded copy).
#[inline(always)]
fn load_src<S: Simd>(simd: S, src: Src, data: &[u8], i: usize, valid: usize) -> S::F {
    let w = src.size();
    if valid == S::LANES {
        src.load(simd, &data[i * w..(i + S::LANES) * w])
    } else {
        let mut tmp = [0u8; 64];
        tmp[..valid * w].copy_from_slice(&data[i * w..(i + valid) * w]);
        src.load(simd, &tmp)
    }
}

/// What [`forward`] writes besides the mask.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Product {
    /// QuantizeLinear's codes, in the output type's packing.
    Codes,
    /// Fake quantization: the dequantized values, as f32 / f16 / bf16.
    Dequantized(Out),
}

/// The forward of [`crate::train::quantize_train`] and [`crate::train::fake_quantize`] over
/// elements `[begin, end)`; `y` and `mask` hold exactly that range (`begin` is a multiple
/// of 8, so the mask starts on a byte boundary).
#[inline(always)]
pub(crate) fn forward<S: Simd>(
    simd: S,
    job: &Job<'_>,
    product: Product,
    begin: usize,
    end: usize,
    y: &mut [u8],
    mask: Option<&mut [u8]>,
) {
    let mini = matches!(job.enc, Encode::Mini { .. });
    // f32 input with f32 arithmetic to integers on every ISA (the portable one takes 35 %
    // more instructions through the run-time variant), to float formats on the SIMD ISAs;
    // the run-time variants for the rarer sources and precisions.
    let f32_path = job.src == Src::F32 && job.prec == Prec::F32;
    match (mini, f32_path) {
        (false, true) => simd.enter(Forward::<0, 0, 0> { job: *job, product, begin, end, y, mask }),
        // The OCP float8 formats that training recipes use (saturating e4m3fn and e5m2)
        // with their constants at compile time: the run-time format's per-vector shift
        // counts and broadcasts took e4m3fn 17 instructions per element.
        (true, true) if S::SPECIALIZE => match crate::quantize::mini_id(job) {
            2 => simd.enter(Forward::<0, 0, 2> { job: *job, product, begin, end, y, mask }),
            4 => simd.enter(Forward::<0, 0, 4> { job: *job, product, begin, end, y, mask }),
            _ => simd.enter(Forward::<0, 0, 1> { job: *job, product, begin, end, y, mask }),
        },
        (false, _) => simd.enter(Forward::<ANY, ANY, 0> { job: *job, product, begin, end, y, mask }),
        (true, _) => simd.enter(Forward::<ANY, ANY, 1> { job: *job, product, begin, end, y, mask }),
    }
}

/// [`forward_with`] of one compile-time variant, as a kernel of its own (see
/// [`Simd::enter`]).
struct Forward<'a, 'y, const SRC: u8, const PREC: u8, const MINI: u8> {
    job: Job<'a>,
    product: Product,
    begin: usize,
    end: usize,
    y: &'y mut [u8],
    mask: Option<&'y mut [u8]>,
}

impl<const SRC: u8, const PREC: u8, const MINI: u8> Kernel for Forward<'_, '_, SRC, PREC, MINI> {
    type Output = ();
    #[inline(always)]
    fn run<S: Simd>(self, simd: S) {
        let job = self.job;
        forward_with::<S, SRC, PREC, MINI>(simd, &job, self.product, self.begin, self.end, self.y, self.mask)
    }
}

#[inline(always)]
fn forward_with<S: Simd, const SRC: u8, const PREC: u8, const MINI: u8>(
    simd: S,
    job: &Job<'_>,
    product: Product,
    begin: usize,
    end: usize,
    y: &mut [u8],
    mut mask: Option<&mut [u8]>,
) {
    let sp = Spec::resolve::<SRC, PREC, ANY>(job);
    if let Some(m) = mask.as_deref_mut() {
        m.fill(0);
    }
    let f = Fwd { job: *job, sp, product, begin };
    let mut op = ForwardOp::<SRC, PREC, MINI> { f, y, mask };
    // Blocked along the last axis (the f32 variants): runs of whole groups of blocks by
    // `TrainBlocks`, the rest (and groups it declines) by the segment walk. A per-block
    // walk costs ten times the block's elements (segment, scalar parameters, a kernel
    // entry per block, and on AVX-512 a block of 32 is two vectors, short of a step).
    let blocks =
        if const { SRC == 0 && PREC == 0 } { blocks_fit::<S>(job, product, op.mask.is_some(), begin) } else { None };
    let (mut e, mut k) = (begin, blocks.map_or(0, |b| begin.div_ceil(b)));
    while e < end {
        let mut stop = end;
        if let Some(block) = blocks {
            if k * block == e {
                let (y, mask) = (&mut *op.y, op.mask.as_deref_mut().unwrap_or(&mut []));
                let out = match product {
                    Product::Codes => None,
                    Product::Dequantized(o) => Some(o),
                };
                let tb = TrainBlocks { job: *job, sp, out, begin, end, block, y, mask, k };
                k = if MINI == 0 { tb.enter(simd) } else { tb.enter_mini::<S, MINI>(simd) };
                e = k * block;
                // The group it stopped at (a scale outside the fast range, or the range's
                // end) goes to the walk.
                k += S::LANES;
            }
            stop = (k * block).min(end);
        }
        if e < stop {
            walk::walk(simd, &mut op, Segments::new(job.layout, e, stop));
        }
        e = stop;
    }
}

/// The block size when [`TrainBlocks`] takes the forward's whole groups: an ISA with FMA,
/// an integer type (codes of 8 or 4 bits with the mask, or fake quantization) or a float
/// format that adds no zero point (float8; float4 / float6 without a zero point), blocked
/// along the last axis in blocks of two vectors or a multiple of four that tile each row,
/// and `begin` on a mask byte.
fn blocks_fit<S: Simd>(job: &Job<'_>, product: Product, mask: bool, begin: usize) -> Option<usize> {
    let Layout::Blocked { axis_len, inner: 1, block, .. } = job.layout else { return None };
    let lanes = S::LANES;
    let fits = S::HAS_FMA
        && block > 0
        && (block == 2 * lanes || block.is_multiple_of(4 * lanes))
        && axis_len.is_multiple_of(block)
        && begin.is_multiple_of(8)
        && match (job.enc, product) {
            (Encode::Int { .. }, Product::Codes) => mask && matches!(job.out.bits(), 8 | 4),
            (Encode::Int { .. }, Product::Dequantized(_)) => true,
            (Encode::Mini { add_zero, .. }, _) => !add_zero,
        };
    fits.then_some(block)
}

/// Consecutive groups of `LANES` whole blocks of the training forward, from block `k`
/// (blocked along the last axis, the blocks tiling each row: block `k` starts at element
/// `k * block`), while the groups lie inside `[begin, end)` and their scales in the fast
/// range: per group one vector of scales, one vector division for their reciprocals, the
/// zero points by a vector load (integer types); then per block (or pair of two-vector
/// blocks) its broadcast parameters and the four-vector steps of [`TrainSat8Loop`] /
/// [`TrainFakeLoop`] (integer types) or of [`mini_codes_step`] / [`forward_step`] /
/// [`fake_mini_step`] (float formats).
/// `y` and `mask` hold the range's bytes (`mask` empty without one); `out` is the
/// dequantized output (`None`: the codes). Returns the first block it did not take.
struct TrainBlocks<'a, 'y> {
    job: Job<'a>,
    sp: Spec,
    out: Option<Out>,
    begin: usize,
    end: usize,
    block: usize,
    y: &'y mut [u8],
    mask: &'y mut [u8],
    k: usize,
}

/// [`TrainBlocks`] of one integer variant, a kernel of its own: `KIND` 0 and 1 the codes
/// of a signed and an unsigned type, 2 and 3 fake quantization to f32 with and without the
/// mask, 4 and 5 the same to f16 / bf16.
struct TrainBlocksOf<'a, 'y, const KIND: u8>(TrainBlocks<'a, 'y>);

impl<const KIND: u8> Kernel for TrainBlocksOf<'_, '_, KIND> {
    type Output = usize;
    #[inline(always)]
    fn run<S: Simd>(self, simd: S) -> usize {
        self.0.groups::<S, KIND>(simd)
    }
}

/// [`TrainBlocks`] of a float format, a kernel of its own per compile-time format `MINI`
/// (as [`Forward`] takes it) and output: with `F32`, fake quantization to f32 with the
/// output type a constant (its stores fold; AVX2 e4m3fn blocked-last32 8.6 -> 7.0
/// instructions per element), else the call's product. (Kernels of their own: one
/// function holding both loops took a 434 176-byte frame in an unoptimised build.)
struct TrainMiniBlocksOf<'a, 'y, const MINI: u8, const F32: bool>(TrainBlocks<'a, 'y>);

impl<const MINI: u8, const F32: bool> Kernel for TrainMiniBlocksOf<'_, '_, MINI, F32> {
    type Output = usize;
    #[inline(always)]
    fn run<S: Simd>(self, simd: S) -> usize {
        let mut tb = self.0;
        if F32 {
            tb.out = Some(Out::F32);
        }
        tb.mini_groups::<S, MINI, F32>(simd)
    }
}

/// Group `k`'s divisors (one lane a block) when [`TrainBlocks`] takes it: its `LANES`
/// blocks lie inside `[begin, end)` and their scales in the fast range (f32 division).
#[inline(always)]
fn group_divisors<S: Simd>(
    simd: S,
    job: &Job<'_>,
    (begin, end): (usize, usize),
    block: usize,
    k: usize,
) -> Option<S::F> {
    let lanes = S::LANES;
    let e = k * block;
    let n_scales = job.scale.len() / job.scale_kind.size();
    if n_scales - k < lanes || e < begin || e + lanes * block > end {
        return None;
    }
    let divisor = job.scale_kind.load(simd, job.scale, k);
    (simd.mask_bits(slow_scale_lanes(simd, divisor)) & lanes_mask(lanes) == 0).then_some(divisor)
}

impl TrainBlocks<'_, '_> {
    /// Runs the kernel of this call's integer variant.
    #[inline(always)]
    fn enter<S: Simd>(self, simd: S) -> usize {
        let signed = matches!(self.sp.enc, Encode::Int { qmin, .. } if qmin < 0);
        match (self.out, self.mask.is_empty(), signed) {
            (None, _, true) => simd.enter(TrainBlocksOf::<0>(self)),
            (None, _, false) => simd.enter(TrainBlocksOf::<1>(self)),
            (Some(Out::F32), false, _) => simd.enter(TrainBlocksOf::<2>(self)),
            (Some(Out::F32), true, _) => simd.enter(TrainBlocksOf::<3>(self)),
            (Some(_), false, _) => simd.enter(TrainBlocksOf::<4>(self)),
            (Some(_), true, _) => simd.enter(TrainBlocksOf::<5>(self)),
        }
    }

    /// The groups; f32 fake quantization (kinds 2 and 3) with its output type at compile
    /// time (the stores and the steps' chunks fold).
    #[inline(always)]
    fn groups<S: Simd, const KIND: u8>(self, simd: S) -> usize {
        let out = if KIND == 2 || KIND == 3 { Some(Out::F32) } else { self.out };
        let TrainBlocks { job, sp, begin, end, block, y, mask, mut k, .. } = self;
        let Encode::Int { qmin, qmax } = sp.enc else { return k };
        let sp = sp.fold::<0, 0, ANY>();
        let lanes = S::LANES;
        let (xs, ob) = (sp.src.size(), out.map_or(sp.bits as usize, |o| 8 * o.size()));
        // Units of one block, or of two for two-vector blocks.
        let pair = block == 2 * lanes;
        let unit = if pair { 2 * block } else { block };
        let mut gp = GroupParams::EMPTY;
        while let Some(divisor) = group_divisors(simd, &job, (begin, end), block, k) {
            let e = k * block;
            let z = match qmin < 0 {
                true => zero_points_int::<S, true>(simd, &job, k, sp.bits as usize),
                false => zero_points_int::<S, false>(simd, &job, k, sp.bits as usize),
            };
            gp.set(simd, divisor, z);
            let (g0, g1) = (e - begin, e - begin + lanes * block);
            let x = &job.x[e * xs..(e + lanes * block) * xs];
            let yg = &mut y[g0 * ob / 8..g1 * ob / 8];
            let xq = x.chunks_exact(4 * lanes * xs);
            let yq = yg.chunks_exact_mut(4 * lanes * ob / 8);
            // Steps of four vectors; a unit's parameters when its first step comes.
            let mut units = UnitParams { gp: &gp, pair, per_unit: unit / (4 * lanes), left: 0, u: 0, p: None };
            // (Constant conditions: each kernel builds its own loop only, in every profile.)
            if const { KIND == 3 || KIND == 5 } {
                for (xq, yq) in xq.zip(yq) {
                    let (p, r, _) = units.next(simd, qmin, qmax);
                    let (p, r) = ([&p[0], &p[0], &p[1], &p[1]], [r[0], r[0], r[1], r[1]]);
                    sat_step_dequantized(simd, &sp, xq, p, r, out.unwrap_or(Out::F32), yq);
                }
            } else {
                for ((xq, yq), mq) in xq.zip(yq).zip(mask[g0 / 8..g1 / 8].chunks_exact_mut(lanes / 2)) {
                    let (p, r, z) = units.next(simd, qmin, qmax);
                    let (p, r) = ([&p[0], &p[0], &p[1], &p[1]], [r[0], r[0], r[1], r[1]]);
                    let w = if const { KIND == 2 || KIND == 4 } {
                        sat_step_dequantized(simd, &sp, xq, p, r, out.unwrap_or(Out::F32), yq)
                    } else if const { KIND == 0 } {
                        sat8_step_masked::<S, true>(simd, &sp, xq, p, z, yq)
                    } else {
                        sat8_step_masked::<S, false>(simd, &sp, xq, p, z, yq)
                    };
                    mq.copy_from_slice(&w.to_le_bytes()[..lanes / 2]);
                }
            }
            k += lanes;
        }
        k
    }

    /// Runs the float-format kernel of the compile-time format `MINI`.
    #[inline(always)]
    fn enter_mini<S: Simd, const MINI: u8>(self, simd: S) -> usize {
        match self.out {
            Some(Out::F32) => simd.enter(TrainMiniBlocksOf::<MINI, true>(self)),
            _ => simd.enter(TrainMiniBlocksOf::<MINI, false>(self)),
        }
    }

    /// The groups of a float format that adds no zero point: per block its broadcast
    /// divisor and reciprocal (the zero points 0), then its steps, vectors 0, 1 of a step
    /// from one block and 2, 3 from the next when a block is two vectors: the codes by
    /// [`mini_codes_step`] where the ISA has the format's encoder, else by the forward's
    /// general route ([`forward_step`]); fake quantization by [`fake_mini_step`] (`F32`:
    /// the output is f32, a constant).
    #[inline(always)]
    fn mini_groups<S: Simd, const MINI: u8, const F32: bool>(self, simd: S) -> usize {
        let TrainBlocks { job, sp, out, begin, end, block, y, mask, mut k } = self;
        let product = out.map_or(Product::Codes, Product::Dequantized);
        let f = Fwd { job, sp: sp.fold::<0, 0, ANY>(), product, begin };
        let (lanes, xs, ob) = (S::LANES, f.sp.src.size(), f.out_bits());
        let step = 4 * lanes;
        // Units of one block, or of two for two-vector blocks (one step); a unit's scales
        // and reciprocals when its first step comes (a countdown, not a division per step).
        let pair = block == 2 * lanes;
        let per_unit = if pair { 1 } else { block / step };
        let codes = mini_codes_x4::<S, MINI>() && matches!(product, Product::Codes);
        // The lanes every block shares (zero point 0, Markstein's range).
        let (zero, base) = (simd.splat(0.0), fast_lanes(simd, 0.0, 0.0, 0));
        let mut gp = GroupParams::EMPTY;
        while let Some(divisor) = group_divisors(simd, &job, (begin, end), block, k) {
            gp.set(simd, divisor, simd.splat_i(0));
            let g0 = k * block - begin;
            let x = &job.x[(g0 + begin) * xs..(g0 + begin + lanes * block) * xs];
            let yg = &mut y[g0 * ob / 8..(g0 + lanes * block) * ob / 8];
            let mut mq = mask.get_mut(g0 / 8..(g0 + lanes * block) / 8).map(|m| m.chunks_exact_mut(lanes / 2));
            // Codes with a step per block or pair (blocks of 32 on AVX2 and AVX-512): each
            // step its blocks' divisors, the steps zipped with their mask bytes.
            if let (true, 1, Some(mq)) = (codes, per_unit, mq.as_mut()) {
                let steps = x.chunks_exact(step * xs).zip(yg.chunks_exact_mut(step * ob / 8));
                for (u, ((xq, yq), m)) in steps.zip(mq).enumerate() {
                    // (`% 16`: the same lanes, and no bounds test per step.)
                    let (ja, jb) = if pair { ((2 * u) % 16, (2 * u + 1) % 16) } else { (u % 16, u % 16) };
                    let pa = Lanes { divisor: simd.splat(gp.scale(ja)), r: simd.splat(gp.recip(ja)), ..base };
                    let pb = Lanes { divisor: simd.splat(gp.scale(jb)), r: simd.splat(gp.recip(jb)), ..base };
                    let w = mini_codes_step::<S, MINI>(simd, &f.sp, xq, yq, &pa, &pb);
                    m.copy_from_slice(&w.to_le_bytes()[..lanes / 2]);
                }
                k += lanes;
                continue;
            }
            let ([mut sa, mut ra, mut sb, mut rb], mut left, mut j) = ([zero; 4], 0, 0);
            for (xq, yq) in x.chunks_exact(step * xs).zip(yg.chunks_exact_mut(step * ob / 8)) {
                if left == 0 {
                    let jb = if pair { j + 1 } else { j };
                    (sa, ra) = (simd.splat(gp.scale(j)), simd.splat(gp.recip(j)));
                    (sb, rb) = (simd.splat(gp.scale(jb)), simd.splat(gp.recip(jb)));
                    (left, j) = (per_unit, jb + 1);
                }
                left -= 1;
                let pa = Lanes { divisor: sa, raw: sa, r: ra, ..base };
                let pb = Lanes { divisor: sb, raw: sb, r: rb, ..base };
                let m = mq.as_mut().and_then(|c| c.next());
                let w = match product {
                    Product::Codes if codes => mini_codes_step::<S, MINI>(simd, &f.sp, xq, yq, &pa, &pb),
                    Product::Dequantized(out) if S::HAS_FMA => {
                        let fmt = mini_format::<MINI>(&f.sp);
                        fake_mini_step::<S, F32>(simd, &f.sp, &fmt, out, xq, yq, m, [&pa, &pb]);
                        continue;
                    }
                    _ => forward_step::<S, MINI>(simd, &f, xq, yq, &pa, &pb),
                };
                if let Some(m) = m {
                    m.copy_from_slice(&w.to_le_bytes()[..lanes / 2]);
                }
            }
            k += lanes;
        }
        k
    }
}

/// Block `j`'s broadcast parameters in a [`TrainBlocks`] group (f32 division: the divisor
/// is the scale itself), and its range `(qmin - z, qmax - z)` as i32 lanes. (A function,
/// not a closure: closures do not inherit the ISA's target features.)
#[inline(always)]
fn block_lanes<S: Simd>(simd: S, gp: &GroupParams, j: usize, qmin: i32, qmax: i32) -> (Lanes<S>, (S::I, S::I)) {
    let z = gp.zero_point(j);
    (gp.int_lanes(simd, j, qmin, qmax), (simd.splat_i(qmin - z), simd.splat_i(qmax - z)))
}

/// The parameters of the steps of a [`TrainBlocks`] group, unit by unit (a unit: a block,
/// or two blocks of two vectors where `pair`; `per_unit` steps each): the unit's first and
/// second block's broadcast parameters (vectors 0, 1 and 2, 3 of a step; the same block
/// twice unless `pair`), their ranges, and the zero points as [`Simd::zero_points_x4`]
/// prepares them, taken when the unit's first step comes.
struct UnitParams<'g, S: Simd> {
    gp: &'g GroupParams,
    pair: bool,
    per_unit: usize,
    left: usize,
    u: usize,
    #[allow(clippy::type_complexity)]
    p: Option<([Lanes<S>; 2], [(S::I, S::I); 2], [S::I; 4])>,
}

impl<S: Simd> UnitParams<'_, S> {
    #[inline(always)]
    #[allow(clippy::type_complexity)]
    fn next(&mut self, simd: S, qmin: i32, qmax: i32) -> ([Lanes<S>; 2], [(S::I, S::I); 2], [S::I; 4]) {
        match self.p {
            Some(p) if self.left > 0 => {
                self.left -= 1;
                p
            }
            _ => {
                let ja = if self.pair { 2 * self.u } else { self.u };
                let (pa, ra) = block_lanes(simd, self.gp, ja, qmin, qmax);
                let (pb, rb) = if self.pair { block_lanes(simd, self.gp, ja + 1, qmin, qmax) } else { (pa, ra) };
                let z = simd.zero_points_x4([pa.z, pa.z, pb.z, pb.z]);
                let p = ([pa, pb], [ra, rb], z);
                (self.p, self.left, self.u) = (Some(p), self.per_unit - 1, self.u + 1);
                p
            }
        }
    }
}

/// A training forward's per-vector work for [`walk::walk`]: the body starts on a multiple
/// of 8 elements from `begin` (a mask byte, and a packing group of every output type), so
/// a step writes one mask word. The const parameters are the variant's (`Spec::fold`).
struct ForwardOp<'a, 'y, 'm, const SRC: u8, const PREC: u8, const MINI: u8> {
    f: Fwd<'a>,
    y: &'y mut [u8],
    mask: Option<&'m mut [u8]>,
}

impl<S: Simd, const SRC: u8, const PREC: u8, const MINI: u8> RunOp<S> for ForwardOp<'_, '_, '_, SRC, PREC, MINI> {
    type P = Lanes<S>;

    #[inline(always)]
    fn head(&self, i: usize) -> usize {
        (8 - (i - self.f.begin) % 8) % 8
    }

    #[inline(always)]
    fn splat(&self, simd: S, k: usize) -> Lanes<S> {
        splat_lanes(simd, &self.f.job, k)
    }

    #[inline(always)]
    fn seq(&self, simd: S, k: usize, valid: usize) -> Lanes<S> {
        seq_lanes(simd, &self.f.job, k, valid)
    }

    #[inline(always)]
    fn part(&mut self, simd: S, p: &Lanes<S>, _k: usize, i: usize, take: usize) {
        let bits = forward_part::<S, MINI>(simd, &self.f, p, i, take, self.y);
        if let Some(m) = self.mask.as_deref_mut() {
            put_bits(m, i - self.f.begin, bits, take);
        }
    }

    #[inline(always)]
    fn steps(&mut self, simd: S, p: &Lanes<S>, k: usize, i: usize, n: usize) {
        let lanes = S::LANES;
        if S::HAS_FMA && !p.fast {
            // Scales outside Markstein's range (rare): a vector at a time, through the
            // shared out-of-line copy, which chooses the division per vector.
            for v in 0..4 * n {
                self.part(simd, p, k, i + v * lanes, lanes);
            }
            return;
        }
        // Whole steps over exactly their bytes (chunked iteration, as in QuantizeLinear's
        // steps: no bounds checks or offsets in the loop).
        let mut f = self.f;
        f.sp = f.sp.fold::<SRC, PREC, ANY>();
        let (xs, ob, e, len) = (f.sp.src.size(), f.out_bits(), i - f.begin, n * 4 * lanes);
        let xb = &f.job.x[i * xs..(i + len) * xs];
        let yb = &mut self.y[e * ob / 8..(e + len) * ob / 8];
        let sp = &f.sp;
        let fast_int = MINI == 0 && S::HAS_FMA;
        // Codes of the 8- and 4-bit integer types: QuantizeLinear's fast steps (the
        // saturating packs are the clamp), the mask from the converted quotients; a kernel
        // of its own, so this frame does not hold its locals.
        if let (true, Product::Codes, 8 | 4, Encode::Int { qmin, .. }, Some(m)) =
            (fast_int, f.product, sp.bits, sp.enc, self.mask.as_deref_mut())
        {
            let loop_ = TrainSat8 { sp, x: xb, y: yb, mask: &mut m[e / 8..(e + len) / 8], p };
            return match qmin < 0 {
                true => simd.enter(TrainSat8Loop::<S, true, SRC, PREC>(loop_)),
                false => simd.enter(TrainSat8Loop::<S, false, SRC, PREC>(loop_)),
            };
        }
        // Fake quantization to an integer type: the same steps, the codes clamped and
        // dequantized in-register (a kernel of its own; with and without the mask).
        if let (true, Product::Dequantized(out), Encode::Int { .. }) = (fast_int, f.product, sp.enc) {
            return match self.mask.as_deref_mut() {
                Some(m) => {
                    let mask = &mut m[e / 8..(e + len) / 8];
                    simd.enter(TrainFakeLoop::<S, true, SRC, PREC>(TrainSat8 { sp, x: xb, y: yb, mask, p }, out))
                }
                None => {
                    let loop_ = TrainSat8 { sp, x: xb, y: yb, mask: &mut [], p };
                    simd.enter(TrainFakeLoop::<S, false, SRC, PREC>(loop_, out))
                }
            };
        }
        // Fake quantization to a float format that adds no zero point: the quotients
        // rounded to the format's grid in f32 (a kernel of its own; f32 output a constant).
        if let (true, Product::Dequantized(out), Encode::Mini { add_zero: false, .. }, Prec::F32) =
            (MINI != 0 && S::HAS_FMA, f.product, sp.enc, sp.prec)
        {
            let mask = self.mask.as_deref_mut().map(|m| &mut m[e / 8..(e + len) / 8]);
            return match out {
                Out::F32 => simd.enter(TrainFakeMiniLoop::<S, MINI, true, SRC> { sp, out, x: xb, y: yb, mask, p }),
                _ => simd.enter(TrainFakeMiniLoop::<S, MINI, false, SRC> { sp, out, x: xb, y: yb, mask, p }),
            };
        }
        // Float codes with the format's four-vector encoder (constant conditions).
        if let (true, Product::Codes, Some(m)) =
            (mini_codes_x4::<S, MINI>() && SRC == 0 && PREC == 0, f.product, self.mask.as_deref_mut())
        {
            let mask = &mut m[e / 8..(e + len) / 8];
            return simd.enter(TrainMiniLoop::<S, MINI>(TrainSat8 { sp, x: xb, y: yb, mask, p }));
        }
        // The other outputs: the forward's general route, a kernel of its own (its
        // constants stay in registers).
        let mask = self.mask.as_deref_mut().map(|m| &mut m[e / 8..(e + len) / 8]);
        simd.enter(TrainStepsLoop::<S, MINI, SRC, PREC> { f, x: xb, y: yb, mask, p });
    }
}

/// Whole four-vector steps of [`forward_step`] over one broadcast scale in the fast range:
/// `x`, `y` and `mask` hold exactly their bytes (the steps start on a mask byte). `SRC`
/// and `PREC` are the caller's variant, folded back into the spec (see [`Spec::fold`]).
struct TrainStepsLoop<'a, 'y, S: Simd, const MINI: u8, const SRC: u8, const PREC: u8> {
    f: Fwd<'a>,
    x: &'a [u8],
    y: &'y mut [u8],
    mask: Option<&'y mut [u8]>,
    p: &'a Lanes<S>,
}

impl<S: Simd, const MINI: u8, const SRC: u8, const PREC: u8> IsaKernel<S>
    for TrainStepsLoop<'_, '_, S, MINI, SRC, PREC>
{
    type Output = ();
    #[inline(always)]
    fn run_on(self, simd: S) {
        let TrainStepsLoop { mut f, x, y, mask, p } = self;
        f.sp = f.sp.fold::<SRC, PREC, ANY>();
        // Fake quantization to f32 with the output type a constant: the literal assigned
        // (the same value) is what lets this copy of the loop fold its stores.
        if f.product == Product::Dequantized(Out::F32) {
            f.product = Product::Dequantized(Out::F32);
            return steps_loop::<S, MINI>(simd, &f, x, y, mask, p);
        }
        steps_loop::<S, MINI>(simd, &f, x, y, mask, p)
    }
}

/// The loop of [`TrainStepsLoop`].
#[inline(always)]
fn steps_loop<S: Simd, const MINI: u8>(
    simd: S,
    f: &Fwd<'_>,
    x: &[u8],
    y: &mut [u8],
    mut mask: Option<&mut [u8]>,
    p: &Lanes<S>,
) {
    let (lanes, xs, ob) = (S::LANES, f.sp.src.size(), f.out_bits());
    let steps = x.chunks_exact(4 * lanes * xs).zip(y.chunks_exact_mut(4 * lanes * ob / 8));
    for (s, (xq, yq)) in steps.enumerate() {
        let w = forward_step::<S, MINI>(simd, f, xq, yq, p, p);
        if let Some(m) = mask.as_deref_mut() {
            m[s * lanes / 2..(s + 1) * lanes / 2].copy_from_slice(&w.to_le_bytes()[..lanes / 2]);
        }
    }
}

/// One four-vector step of the forward's general route: vectors 0, 1 of `xq` with `pa`, 2,
/// 3 with `pb` (every scale in the fast range: Markstein's division with FMA, else the true
/// division), the codes of the four vectors packed together (or their dequantized values)
/// into `yq`, which holds exactly the step's bytes. Returns the step's mask bits, vector
/// `v` at bit `v LANES`.
#[inline(always)]
fn forward_step<S: Simd, const MINI: u8>(
    simd: S,
    f: &Fwd<'_>,
    xq: &[u8],
    yq: &mut [u8],
    pa: &Lanes<S>,
    pb: &Lanes<S>,
) -> u64 {
    let (lanes, xs, ob) = (S::LANES, f.sp.src.size(), f.out_bits());
    let mut w = 0u64;
    // The SIMD ISAs store after the four vectors (codes packed together); the portable ISA
    // (arrays for vectors) stores each vector as it comes.
    let packed = S::SPECIALIZE;
    let mut c = [simd.splat_i(0); 4];
    for (v, cv) in c.iter_mut().enumerate() {
        let x = &xq[v * lanes * xs..(v + 1) * lanes * xs];
        let p = if v < 2 { pa } else { pb };
        let (codes, bits) = quantize_vec_d::<S, MINI, true, DIV_FAST>(simd, &f.sp, x, p);
        if packed {
            *cv = codes;
        } else {
            f.put_vec::<S, MINI>(simd, p, codes, &mut yq[v * lanes * ob / 8..(v + 1) * lanes * ob / 8]);
        }
        w |= u64::from(bits) << (v * lanes);
    }
    match f.product {
        Product::Codes if packed => store_codes_x4::<S, MINI>(simd, &f.sp, c, yq),
        Product::Dequantized(_) if packed => {
            for (v, cv) in c.into_iter().enumerate() {
                let p = if v < 2 { pa } else { pb };
                f.put_vec::<S, MINI>(simd, p, cv, &mut yq[v * lanes * ob / 8..(v + 1) * lanes * ob / 8]);
            }
        }
        _ => {}
    }
    w
}

/// Whether the codes of the compile-time float format `MINI` take [`mini_codes_step`]: the
/// ISA has the format's four-vector encoder. A constant.
#[inline(always)]
const fn mini_codes_x4<S: Simd, const MINI: u8>() -> bool {
    MINI != 0 && S::MINI_X4 && MiniFormat::has_x4_route(MINI)
}

/// A step of float codes where [`mini_codes_x4`]: QuantizeLinear's own step (the quotients,
/// vectors 0, 1 with `pa` and 2, 3 with `pb`, every scale in the fast range, then one
/// encode-and-store into `yq`), the mask bits from the quotients' magnitude patterns
/// (below `MiniFormat::overflow_from`; NaN's are above it).
#[inline(always)]
fn mini_codes_step<S: Simd, const MINI: u8>(
    simd: S,
    sp: &Spec,
    xq: &[u8],
    yq: &mut [u8],
    pa: &Lanes<S>,
    pb: &Lanes<S>,
) -> u64 {
    let fmt = MiniFormat::of_id(MINI);
    let q = mini_quotients_x4(simd, sp, xq, [pa, pa, pb, pb], mini_adds_zero::<MINI>(sp));
    simd.store_mini_x4(q, &fmt, yq);
    // (Compared as floats: the magnitudes are non-negative, and NaN compares false.)
    let (magnitude, limit) = (simd.splat_i(i32::MAX), simd.splat(f32::from_bits(fmt.overflow_from() as u32)));
    let mut w = 0u64;
    for (v, qv) in q.into_iter().enumerate() {
        let fits = simd.lt(simd.f32_of(simd.and_i(simd.bits(qv), magnitude)), limit);
        w |= u64::from(simd.mask_bits(fits)) << (v * S::LANES);
    }
    w
}

/// A step of fake quantization to a float format that adds no zero point (every scale in
/// the fast range, on an ISA with FMA): the quotients (vectors 0, 1 with `pa`, 2, 3 with
/// `pb`; Markstein's division, the last [`Simd::DIV_QUOTIENTS`] by the divide instruction),
/// each rounded to the format's grid in f32 by [`round_minifloat`] (the lanes past the
/// overflow boundary, NaN among them, by [`round_minifloat_specials`] when a vector has
/// any), times the scale, stored into `out` (`yq` holds exactly the step's bytes; every
/// NaN is already the canonical one). The step's mask bits (`|q|` below
/// `MiniFormat::overflow_from`, as for the codes) go to `mq`, its `LANES / 2` bytes, a
/// vector's bytes as it comes where a vector fills whole bytes.
#[inline(always)]
#[allow(clippy::too_many_arguments)]
fn fake_mini_step<S: Simd, const F32: bool>(
    simd: S,
    sp: &Spec,
    fmt: &MiniFormat,
    out: Out,
    xq: &[u8],
    yq: &mut [u8],
    mut mq: Option<&mut [u8]>,
    [pa, pb]: [&Lanes<S>; 2],
) {
    debug_assert!(S::HAS_FMA && sp.prec == Prec::F32 && (!F32 || out == Out::F32));
    let (lanes, vb, ob) = (S::LANES, S::LANES * sp.src.size(), S::LANES * out.size());
    let limit = simd.splat(f32::from_bits(fmt.overflow_from() as u32));
    let all = u32::MAX >> (32 - lanes);
    let mut w = 0u64;
    for v in 0..4 {
        let p = if v < 2 { pa } else { pb };
        let fast = v + S::DIV_QUOTIENTS < 4;
        let (q, sq) = fake_quotient(simd, sp, &xq[v * vb..(v + 1) * vb], p, fast);
        let (r, a) = round_minifloat(simd, q, sq, fmt);
        let bits = simd.mask_bits(simd.lt(a, limit));
        let r = if bits == all { r } else { round_minifloat_specials(simd, a, sq, r, fmt) };
        let (y, yv) = (simd.mul(r, p.raw), &mut yq[v * ob..(v + 1) * ob]);
        // (A constant condition: the f32 kernels hold no other store, in every profile.)
        if const { F32 } {
            simd.store_f32(y, yv);
        } else {
            store_as(simd, out, y, false, yv);
        }
        match mq.as_deref_mut() {
            Some(m) if lanes >= 8 => {
                m[v * lanes / 8..(v + 1) * lanes / 8].copy_from_slice(&bits.to_le_bytes()[..lanes / 8]);
            }
            _ => w |= u64::from(bits) << (v * lanes),
        }
    }
    if let (Some(m), true) = (mq, lanes < 8) {
        m.copy_from_slice(&w.to_le_bytes()[..lanes / 2]);
    }
}

/// The f32 quotient of one vector for [`fake_mini_step`], and the vector that carries its
/// sign and NaN lanes ([`round_minifloat`]'s `sq`). By Markstein's division (`fast`) that
/// is the first product `x * r`: its sign is the quotient's, and it is NaN exactly where x
/// is. The corrected quotient (the magnitude) can differ from the IEEE one only where both
/// give the same grid value: NaN for infinite or huge x (an overflow either way, `|q|` past
/// the boundary) and zero for a quotient below f32's subnormals. By the divide instruction,
/// the quotient itself, twice.
#[inline(always)]
fn fake_quotient<S: Simd>(simd: S, sp: &Spec, xb: &[u8], p: &Lanes<S>, fast: bool) -> (S::F, S::F) {
    let x = sp.src.load(simd, xb);
    if fast {
        let q0 = simd.mul(x, p.r);
        return (simd.fma(simd.fnma(q0, p.divisor, x), p.r, q0), q0);
    }
    let q = simd.div(x, p.divisor);
    (q, q)
}

/// The steps of [`fake_mini_step`] over one broadcast scale, a kernel of its own: the
/// format `MINI` (a compile-time id, or [`MINI_RUNTIME`]: the job's), f32 output where
/// `F32` (a constant, so the stores fold), the mask bits stored as they come where there
/// is a mask. `SRC` as for [`TrainSat8Loop`]; the division precision is f32.
struct TrainFakeMiniLoop<'a, 'y, S: Simd, const MINI: u8, const F32: bool, const SRC: u8> {
    sp: &'a Spec,
    out: Out,
    x: &'a [u8],
    y: &'y mut [u8],
    mask: Option<&'y mut [u8]>,
    p: &'a Lanes<S>,
}

impl<S: Simd, const MINI: u8, const F32: bool, const SRC: u8> IsaKernel<S>
    for TrainFakeMiniLoop<'_, '_, S, MINI, F32, SRC>
{
    type Output = ();
    #[inline(always)]
    fn run_on(self, simd: S) {
        let TrainFakeMiniLoop { sp, out, x, y, mask, p } = self;
        let sp = &sp.fold::<SRC, 0, ANY>();
        let out = if F32 { Out::F32 } else { out };
        let fmt = mini_format::<MINI>(sp);
        // (A copy: its vectors stay in registers.)
        let p = &{ *p };
        let lanes = S::LANES;
        let xs = x.chunks_exact(4 * lanes * sp.src.size());
        let ys = y.chunks_exact_mut(4 * lanes * out.size());
        match mask {
            Some(m) => {
                for ((xq, yq), mq) in xs.zip(ys).zip(m.chunks_exact_mut(lanes / 2)) {
                    fake_mini_step::<S, F32>(simd, sp, &fmt, out, xq, yq, Some(mq), [p, p]);
                }
            }
            None => {
                for (xq, yq) in xs.zip(ys) {
                    fake_mini_step::<S, F32>(simd, sp, &fmt, out, xq, yq, None, [p, p]);
                }
            }
        }
    }
}

/// The format of a float-format job: the compile-time `MINI`'s, or the job's own for
/// [`MINI_RUNTIME`].
#[inline(always)]
fn mini_format<const MINI: u8>(sp: &Spec) -> MiniFormat {
    match sp.enc {
        Encode::Mini { fmt, .. } if MINI == MINI_RUNTIME => fmt,
        _ => MiniFormat::of_id(MINI),
    }
}

/// The steps of [`mini_codes_step`] over one broadcast scale, a kernel of its own (its
/// constants stay in registers): f32 x and division; the mask bits stored as they come.
struct TrainMiniLoop<'a, 'y, S: Simd, const MINI: u8>(TrainSat8<'a, 'y, S>);

impl<S: Simd, const MINI: u8> IsaKernel<S> for TrainMiniLoop<'_, '_, S, MINI> {
    type Output = ();
    #[inline(always)]
    fn run_on(self, simd: S) {
        let TrainSat8 { sp, x, y, mask, p } = self.0;
        let sp = &sp.fold::<0, 0, ANY>();
        let (lanes, bits) = (S::LANES, sp.bits as usize);
        let xs = x.chunks_exact(4 * lanes * sp.src.size());
        let ys = y.chunks_exact_mut(4 * lanes * bits / 8);
        for ((xq, yq), mq) in xs.zip(ys).zip(mask.chunks_exact_mut(lanes / 2)) {
            let w = mini_codes_step::<S, MINI>(simd, sp, xq, yq, p, p);
            mq.copy_from_slice(&w.to_le_bytes()[..lanes / 2]);
        }
    }
}

/// The arguments of [`TrainSat8Loop`]: whole steps of four vectors, `x`, `y` and `mask`
/// holding exactly their bytes (the steps start on a mask byte).
struct TrainSat8<'a, 'y, S: Simd> {
    sp: &'a Spec,
    x: &'a [u8],
    y: &'y mut [u8],
    mask: &'y mut [u8],
    p: &'a Lanes<S>,
}

/// The training forward's steps for the codes of the 8- and 4-bit integer types (one
/// broadcast scale in the fast range, on an ISA with FMA): [`sat8_step_masked`] a step, its
/// mask bits stored as they come. `SIGNED` picks the final pack at compile time; `SRC` and
/// `PREC` are the caller's variant, folded back into the spec (see [`Spec::fold`]).
struct TrainSat8Loop<'a, 'y, S: Simd, const SIGNED: bool, const SRC: u8, const PREC: u8>(TrainSat8<'a, 'y, S>);

impl<S: Simd, const SIGNED: bool, const SRC: u8, const PREC: u8> IsaKernel<S>
    for TrainSat8Loop<'_, '_, S, SIGNED, SRC, PREC>
{
    type Output = ();
    #[inline(always)]
    fn run_on(self, simd: S) {
        let TrainSat8 { sp, x, y, mask, p } = self.0;
        let sp = &sp.fold::<SRC, PREC, ANY>();
        let (lanes, bits) = (S::LANES, sp.bits as usize);
        let z = simd.zero_points_x4([p.z; 4]);
        let xs = x.chunks_exact(4 * lanes * sp.src.size());
        let ys = y.chunks_exact_mut(4 * lanes * bits / 8);
        for ((xq, yq), mq) in xs.zip(ys).zip(mask.chunks_exact_mut(lanes / 2)) {
            let w = sat8_step_masked::<S, SIGNED>(simd, sp, xq, [p; 4], z, yq);
            mq.copy_from_slice(&w.to_le_bytes()[..lanes / 2]);
        }
    }
}

/// Fake quantization's steps to the integer types (one broadcast scale in the fast range,
/// on an ISA with FMA): [`sat_step_dequantized`] a step into `out`, with `MASK` its mask
/// bits stored as they come (without, the mask slice is empty and never read). `SRC` and
/// `PREC` as for [`TrainSat8Loop`].
struct TrainFakeLoop<'a, 'y, S: Simd, const MASK: bool, const SRC: u8, const PREC: u8>(TrainSat8<'a, 'y, S>, Out);

impl<S: Simd, const MASK: bool, const SRC: u8, const PREC: u8> IsaKernel<S>
    for TrainFakeLoop<'_, '_, S, MASK, SRC, PREC>
{
    type Output = ();
    #[inline(always)]
    fn run_on(self, simd: S) {
        let (TrainSat8 { sp, x, y, mask, p }, out) = (self.0, self.1);
        let sp = &sp.fold::<SRC, PREC, ANY>();
        let lanes = S::LANES;
        let range = (simd.cvt_rne(p.lo), simd.cvt_rne(p.hi));
        let xs = x.chunks_exact(4 * lanes * sp.src.size());
        let ys = y.chunks_exact_mut(4 * lanes * out.size());
        if MASK {
            for ((xq, yq), mq) in xs.zip(ys).zip(mask.chunks_exact_mut(lanes / 2)) {
                let w = sat_step_dequantized(simd, sp, xq, [p; 4], [range; 4], out, yq);
                mq.copy_from_slice(&w.to_le_bytes()[..lanes / 2]);
            }
        } else {
            for (xq, yq) in xs.zip(ys) {
                sat_step_dequantized(simd, sp, xq, [p; 4], [range; 4], out, yq);
            }
        }
    }
}

/// What every vector of [`forward_with`] shares.
#[derive(Clone, Copy)]
struct Fwd<'a> {
    job: Job<'a>,
    sp: Spec,
    product: Product,
    begin: usize,
}

impl Fwd<'_> {
    /// Output bits per element.
    fn out_bits(&self) -> usize {
        match self.product {
            Product::Codes => self.sp.bits as usize,
            Product::Dequantized(out) => 8 * out.size(),
        }
    }

    /// Stores a whole vector's product (`y` holds exactly its bytes; codes start on a
    /// packing-group boundary).
    #[inline(always)]
    fn put_vec<S: Simd, const MINI: u8>(&self, simd: S, p: &Lanes<S>, codes: S::I, y: &mut [u8]) {
        match self.product {
            Product::Codes => store_codes(simd, self.sp.bits, codes, y, 0),
            Product::Dequantized(out) => store(simd, out, self.dequantized::<S, MINI>(simd, p, codes), y),
        }
    }

    /// The dequantized values of a vector of codes.
    #[inline(always)]
    fn dequantized<S: Simd, const MINI: u8>(&self, simd: S, p: &Lanes<S>, codes: S::I) -> S::F {
        let d = match self.sp.enc {
            // (A compile-time id's format folds into the decoder.)
            Encode::Mini { .. } if MINI != 0 => decode_minifloat(simd, codes, &mini_format::<MINI>(&self.sp)),
            _ => simd.cvt_f32(simd.sub_i(codes, p.z)),
        };
        simd.mul(d, p.raw)
    }
}

/// [`forward_vec`] in a function of its own, for the heads, tails and per-lane-scale
/// vectors (one shared copy keeps [`forward_with`] small).
fn forward_part<S: Simd, const MINI: u8>(
    simd: S,
    f: &Fwd<'_>,
    p: &Lanes<S>,
    i: usize,
    take: usize,
    y: &mut [u8],
) -> u32 {
    // Copies (see `quantize::partial`).
    simd.enter(ForwardPart::<S, MINI> { f: *f, p: *p, i, take, y })
}

struct ForwardPart<'a, 'y, S: Simd, const MINI: u8> {
    f: Fwd<'a>,
    p: Lanes<S>,
    i: usize,
    take: usize,
    y: &'y mut [u8],
}

impl<S: Simd, const MINI: u8> IsaKernel<S> for ForwardPart<'_, '_, S, MINI> {
    type Output = u32;
    #[inline(always)]
    fn run_on(self, simd: S) -> u32 {
        forward_vec::<S, MINI>(simd, &self.f, &self.p, self.i, self.take, self.y)
    }
}

/// One vector of the forward: elements `i .. i + take` (`take <= LANES`), outputs stored,
/// the mask bits of those elements returned.
#[inline(always)]
fn forward_vec<S: Simd, const MINI: u8>(
    simd: S,
    f: &Fwd<'_>,
    p: &Lanes<S>,
    i: usize,
    take: usize,
    y: &mut [u8],
) -> u32 {
    let (job, sp) = (&f.job, &f.sp);
    let lanes = S::LANES;
    let xs = sp.src.size();
    let (codes, bits) = if take == lanes {
        quantize_vec_m::<S, MINI, true>(simd, sp, &job.x[i * xs..(i + lanes) * xs], p)
    } else {
        let mut xt = [0u8; 64];
        xt[..take * xs].copy_from_slice(&job.x[i * xs..(i + take) * xs]);
        quantize_vec_m::<S, MINI, true>(simd, sp, &xt, p)
    };
    let at = i - f.begin;
    match f.product {
        // A whole vector of sub-byte codes must also start on a packing-group boundary
        // (a head of fewer than eight elements can still be a whole scalar vector).
        Product::Codes if take == lanes && at & (group(job.out) - 1) == 0 => store_codes(simd, sp.bits, codes, y, at),
        Product::Codes => {
            let mut ct = [0u8; 64];
            simd.store_i32(codes, &mut ct);
            for t in 0..take {
                let c = u32::from_le_bytes([ct[4 * t], ct[4 * t + 1], ct[4 * t + 2], ct[4 * t + 3]]);
                packing::set(job.out, y, at + t, c);
            }
        }
        Product::Dequantized(out) => store_out(simd, out, f.dequantized::<S, MINI>(simd, p, codes), y, at, take),
    }
    bits & lanes_mask(take)
}

/// The backward passes without reductions.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Elementwise {
    /// `mask ? (lda * dy) / s_P : +0`.
    Quantize,
    /// `mask ? lda * dy : +0` (no scale).
    Mask,
    /// `(lda * dy) * s`.
    Dequantize,
}

/// An elementwise backward call. `job` carries dy as its x (the source type) and the scale,
/// layout and precision; `mask` is the forward's (whole tensor).
#[derive(Clone)]
pub(crate) struct Backward<'a> {
    pub job: Job<'a>,
    pub kind: Elementwise,
    pub mask: &'a [u8],
    pub lda: f32,
    pub out: Out,
}

impl Backward<'_> {
    /// The mask bits of elements `i .. i + take` (none for DequantizeLinear's backward).
    #[inline(always)]
    fn bits(&self, i: usize, take: usize) -> u32 {
        match self.kind {
            Elementwise::Dequantize => 0,
            _ => get_bits(self.mask, i, take),
        }
    }
}

/// Runs an elementwise backward pass over `[begin, end)`; `dx` holds that range.
#[inline(always)]
pub(crate) fn elementwise<S: Simd>(simd: S, b: &Backward<'_>, begin: usize, end: usize, dx: &mut [u8]) {
    let mut op = ElementwiseOp { b, begin, dx };
    // The ranges left to the walk: all of it, or the partial blocks at either end.
    let mut rest = [(begin, end), (end, end)];
    // Blocked along the last axis, f32 dy and dx, blocks of whole steps (or pairs of
    // two-vector blocks) tiling each row: one loop over their steps, each block's broadcast
    // scale where its first step comes (the segment walk spent four times a block of 32's
    // own work on the block).
    if let Layout::Blocked { axis_len, inner: 1, block, .. } = b.job.layout {
        let f32s = b.job.src == Src::F32 && b.out == Out::F32;
        let pair = block == 2 * S::LANES;
        if f32s && block > 0 && (pair || block.is_multiple_of(4 * S::LANES)) && axis_len.is_multiple_of(block) {
            let (k0, k1) = (begin.div_ceil(block), end / block);
            // Blocks of two vectors go in pairs (a step of four vectors).
            let k1 = if pair { k0 + k1.saturating_sub(k0) / 2 * 2 } else { k1 };
            if k0 < k1 {
                rest = [(begin, k0 * block), (k1 * block, end)];
                // The pass as a constant per loop here, not `steps` per block (which
                // matches it each time: 7.3 instructions per element instead of 3.5).
                match b.kind {
                    Elementwise::Quantize => elementwise_blocks(simd, &mut op, k0..k1, block, Elementwise::Quantize),
                    Elementwise::Mask => elementwise_blocks(simd, &mut op, k0..k1, block, Elementwise::Mask),
                    Elementwise::Dequantize => {
                        elementwise_blocks(simd, &mut op, k0..k1, block, Elementwise::Dequantize)
                    }
                }
            }
        }
    }
    for (e0, e1) in rest {
        if e0 < e1 {
            walk::walk(simd, &mut op, Segments::new(b.job.layout, e0, e1));
        }
    }
}

/// Whole blocks `ks` of `block` elements (block `k` from element `k * block`; blocks of
/// four vectors or a multiple, or an even number of two-vector blocks) of an elementwise
/// pass `kind` (a constant at each call site) with f32 `dy` and `dx`.
#[inline(always)]
fn elementwise_blocks<S: Simd>(
    simd: S,
    op: &mut ElementwiseOp<'_, '_, '_>,
    ks: core::ops::Range<usize>,
    block: usize,
    kind: Elementwise,
) {
    let b = &op.b.clone();
    let (begin, dx) = (op.begin, &mut *op.dx);
    // One loop over the steps of all the blocks, a unit's parameters when its first step
    // comes (a unit: a block, or a pair of two-vector blocks, vectors 0, 1 and 2, 3 of a
    // step): per block, slicing its inputs and outputs cost more than its own 32 elements.
    let (lanes, vb) = (S::LANES, S::LANES * 4);
    let pair = block == 2 * lanes;
    let (per_unit, kn) = if pair { (1, 2) } else { (block / (4 * lanes), 1) };
    let (e0, e1) = (ks.start * block, ks.end * block);
    let xs = b.job.x[e0 * 4..e1 * 4].chunks_exact(4 * vb);
    let ds = dx[(e0 - begin) * 4..(e1 - begin) * 4].chunks_exact_mut(4 * vb);
    let lda = simd.splat(b.lda);
    let ((mut pa, mut pb), mut k, mut left) = (unit_splat(simd, b, ks.start, pair), ks.start + kn, per_unit);
    if kind == Elementwise::Dequantize {
        for (xq, dq) in xs.zip(ds) {
            if left == 0 {
                ((pa, pb), k, left) = (unit_splat(simd, b, k, pair), k + kn, per_unit);
            }
            left -= 1;
            elementwise_step_f32(simd, kind, [&pa, &pa, &pb, &pb], lda, xq, dq, 0);
        }
    } else {
        for ((xq, dq), mq) in xs.zip(ds).zip(b.mask[e0 / 8..e1 / 8].chunks_exact(lanes / 2)) {
            if left == 0 {
                ((pa, pb), k, left) = (unit_splat(simd, b, k, pair), k + kn, per_unit);
            }
            left -= 1;
            elementwise_step_f32(simd, kind, [&pa, &pa, &pb, &pb], lda, xq, dq, mask_word(mq));
        }
    }
}

/// The mask bits of a step (`mq`: its `LANES / 2` mask bytes) as one word.
#[inline(always)]
fn mask_word(mq: &[u8]) -> u64 {
    let mut bytes = [0u8; 8];
    bytes[..mq.len()].copy_from_slice(mq);
    u64::from_le_bytes(bytes)
}

/// [`op_splat`] of scale `k` and of the next one where `pair`, else of `k` twice. (A
/// function, not a closure: closures do not inherit the ISA's target features.)
#[inline(always)]
fn unit_splat<S: Simd>(simd: S, b: &Backward<'_>, k: usize, pair: bool) -> (Lanes<S>, Lanes<S>) {
    let pa = op_splat(simd, b, k);
    (pa, if pair { op_splat(simd, b, k + 1) } else { pa })
}

/// The broadcast parameters the elementwise passes read, of scale `k`: the scale and the
/// divisor (no reciprocal, zero point or range, which `splat_lanes` would add at the cost
/// of a scalar division).
#[inline(always)]
fn op_splat<S: Simd>(simd: S, b: &Backward<'_>, k: usize) -> Lanes<S> {
    let job = &b.job;
    let raw = job.scale_kind.get_inline(job.scale, k);
    let (zero, divisor) = (simd.splat(0.0), simd.splat(job.prec.round_scalar(raw)));
    let z = simd.splat_i(0);
    Lanes { divisor, raw: simd.splat(raw), r: zero, fast: false, pow2: false, z, lo: zero, hi: zero, zf: zero }
}

/// An elementwise backward pass's per-vector work for [`walk::walk`]: the body starts on a
/// mask byte (absolute element index), so a step reads one mask word.
struct ElementwiseOp<'b, 'a, 'y> {
    b: &'b Backward<'a>,
    begin: usize,
    dx: &'y mut [u8],
}

impl<S: Simd> RunOp<S> for ElementwiseOp<'_, '_, '_> {
    type P = Lanes<S>;

    #[inline(always)]
    fn head(&self, i: usize) -> usize {
        (8 - i % 8) % 8
    }

    #[inline(always)]
    fn splat(&self, simd: S, k: usize) -> Lanes<S> {
        op_splat(simd, self.b, k)
    }

    #[inline(always)]
    fn seq(&self, simd: S, k: usize, valid: usize) -> Lanes<S> {
        seq_lanes(simd, &self.b.job, k, valid)
    }

    #[inline(always)]
    fn part(&mut self, simd: S, p: &Lanes<S>, _k: usize, i: usize, take: usize) {
        let b = self.b;
        elementwise_vec(simd, b, p, i, take, b.bits(i, take), self.begin, self.dx);
    }

    #[inline(always)]
    fn steps(&mut self, simd: S, p: &Lanes<S>, _k: usize, i: usize, n: usize) {
        // A local copy: behind `self` its fields would be reloaded after every store to
        // `dx` (which LLVM cannot prove apart), and the per-vector type dispatch with them.
        let b = &self.b.clone();
        let (begin, dx) = (self.begin, &mut *self.dx);
        // f32 dy and dx (the common case) with the pass known: the loop without a switch
        // per vector (three copies of a small loop); the rest with the call's types.
        match (b.job.src == Src::F32 && b.out == Out::F32, b.kind) {
            (true, Elementwise::Quantize) => elementwise_steps_f32(simd, b, p, i, n, begin, dx, Elementwise::Quantize),
            (true, Elementwise::Mask) => elementwise_steps_f32(simd, b, p, i, n, begin, dx, Elementwise::Mask),
            (true, Elementwise::Dequantize) => {
                elementwise_steps_f32(simd, b, p, i, n, begin, dx, Elementwise::Dequantize)
            }
            _ => elementwise_steps(simd, b, p, i, n, begin, dx, (b.job.src, b.out, b.kind)),
        }
    }
}

/// `n` steps of four vectors from element `i` (on a mask byte) of an elementwise backward
/// pass, with `dy`'s type, `dx`'s type and the pass as `types` (constants where the caller
/// knows them).
#[inline(always)]
#[allow(clippy::too_many_arguments)]
fn elementwise_steps<S: Simd>(
    simd: S,
    b: &Backward<'_>,
    p: &Lanes<S>,
    i: usize,
    n: usize,
    begin: usize,
    dx: &mut [u8],
    types: (Src, Out, Elementwise),
) {
    let lanes = S::LANES;
    let b = &Backward { job: Job { src: types.0, ..b.job }, out: types.1, kind: types.2, ..*b };
    for step in 0..n {
        let i = i + step * 4 * lanes;
        let w = match b.kind {
            Elementwise::Dequantize => 0,
            _ => mask_word(&b.mask[i / 8..i / 8 + lanes / 2]),
        };
        for k in 0..4 {
            let bits = (w >> (k * lanes)) as u32 & lanes_mask(lanes);
            elementwise_vec(simd, b, p, i + k * lanes, lanes, bits, begin, dx);
        }
    }
}

/// [`elementwise_steps`] of f32 `dy` and `dx` for the pass `kind` (a constant at each call
/// site): exact chunks of the steps' `dy`, `dx` and mask bytes, so the loop has no bounds
/// check or type dispatch per vector.
#[inline(always)]
#[allow(clippy::too_many_arguments)]
fn elementwise_steps_f32<S: Simd>(
    simd: S,
    b: &Backward<'_>,
    p: &Lanes<S>,
    i: usize,
    n: usize,
    begin: usize,
    dx: &mut [u8],
    kind: Elementwise,
) {
    let (lanes, vb) = (S::LANES, S::LANES * 4);
    let len = n * 4 * lanes;
    let xs = b.job.x[i * 4..(i + len) * 4].chunks_exact(4 * vb);
    let ds = dx[(i - begin) * 4..(i - begin + len) * 4].chunks_exact_mut(4 * vb);
    let lda = simd.splat(b.lda);
    if kind == Elementwise::Dequantize {
        for (xq, dq) in xs.zip(ds) {
            elementwise_step_f32(simd, kind, [p; 4], lda, xq, dq, 0);
        }
    } else {
        for ((xq, dq), mq) in xs.zip(ds).zip(b.mask[i / 8..(i + len) / 8].chunks_exact(lanes / 2)) {
            elementwise_step_f32(simd, kind, [p; 4], lda, xq, dq, mask_word(mq));
        }
    }
}

/// One step of [`elementwise_steps_f32`]: four vectors of f32 `dy` (`xq`) to f32 `dx`
/// (`dq`), vector `k` with the parameters `p[k]` and the mask bits `bits >> (k * LANES)`.
/// (A function, not a closure: closures do not inherit the ISA's target features.)
#[inline(always)]
fn elementwise_step_f32<S: Simd>(
    simd: S,
    kind: Elementwise,
    p: [&Lanes<S>; 4],
    lda: S::F,
    xq: &[u8],
    dq: &mut [u8],
    bits: u64,
) {
    let (lanes, vb) = (S::LANES, S::LANES * 4);
    for k in 0..4 {
        let g = simd.mul(lda, simd.load_f32(&xq[k * vb..(k + 1) * vb]));
        let v = elementwise_val(simd, kind, p[k], g, (bits >> (k * lanes)) as u32 & lanes_mask(lanes));
        store(simd, Out::F32, v, &mut dq[k * vb..(k + 1) * vb]);
    }
}

/// The value of an elementwise backward pass from `g = lda * dy` (`bits`: the mask bits).
#[inline(always)]
fn elementwise_val<S: Simd>(simd: S, kind: Elementwise, p: &Lanes<S>, g: S::F, bits: u32) -> S::F {
    let zero = simd.splat(0.0);
    match kind {
        // A true division: the gradient itself is the output, and the FMA correction is not
        // exact where the quotient is subnormal.
        Elementwise::Quantize => simd.select(simd.mask_from_bits(bits), simd.div(g, p.divisor), zero),
        Elementwise::Mask => simd.select(simd.mask_from_bits(bits), g, zero),
        Elementwise::Dequantize => simd.mul(g, p.raw),
    }
}

/// One vector of an elementwise backward pass (`bits`: the mask bits of its elements).
#[inline(always)]
#[allow(clippy::too_many_arguments)]
fn elementwise_vec<S: Simd>(
    simd: S,
    b: &Backward<'_>,
    p: &Lanes<S>,
    i: usize,
    take: usize,
    bits: u32,
    begin: usize,
    dx: &mut [u8],
) {
    let g = simd.mul(simd.splat(b.lda), load_src(simd, b.job.src, b.job.x, i, take));
    let v = elementwise_val(simd, b.kind, p, g, bits);
    store_out(simd, b.out, v, dx, i - begin, take);
}

/// A backward pass with reductions, written once for [`walk`].
pub(crate) trait GradOp: Sync + Copy {
    /// Per-scale parameters (broadcast, or one scale per lane).
    type P<S: Simd>: Copy;
    /// The parameters of scale `k` for every lane.
    fn splat<S: Simd>(&self, simd: S, k: usize) -> Self::P<S>;
    /// The parameters of scales `k .. k + valid`.
    fn seq<S: Simd>(&self, simd: S, k: usize, valid: usize) -> Self::P<S>;
    /// The two inputs of elements `i .. i + valid` as values: the x the op reads (f32 x for
    /// fake quantization; for DequantizeLinear the decoded codes, `x - zp` or a float code's
    /// value) and `dy`.
    fn load<S: Simd>(&self, simd: S, p: &Self::P<S>, i: usize, valid: usize) -> (S::F, S::F);
    /// `dx` and the two terms of the sums from [`GradOp::load`]'s values (padding lanes are
    /// masked by the caller).
    fn step_vals<S: Simd>(&self, simd: S, p: &Self::P<S>, x: S::F, dy: S::F) -> (S::F, [S::F; 2]);
    /// Elements `i .. i + valid`: `dx` and the two terms of the sums.
    #[inline(always)]
    fn step<S: Simd>(&self, simd: S, p: &Self::P<S>, i: usize, valid: usize) -> (S::F, [S::F; 2]) {
        let (x, dy) = self.load(simd, p, i, valid);
        self.step_vals(simd, p, x, dy)
    }
    /// `dx` is f32 whenever written, known at compile time (the walk's stores fold).
    const DX_F32: bool = false;
    /// x and `dy` are f32 arrays, known at compile time ([`GradOp::f32_inputs`] gives them),
    /// and [`GradOp::load`] is their plain loads: a tile's whole rounds then step over exact
    /// chunks of both (no bounds check per vector).
    const F32_INPUTS: bool = false;
    /// The bytes of x and `dy` where [`GradOp::F32_INPUTS`] holds.
    fn f32_inputs(&self) -> Option<(&[u8], &[u8])> {
        None
    }
    /// [`BlockSums`]' parameters of the `LANES` scales from `k` (all in the tensor) at
    /// once, stored lane by lane into `g` for [`GradOp::lane`]; by default nothing (each
    /// block then takes [`GradOp::splat`]).
    #[inline(always)]
    fn group<S: Simd>(&self, _simd: S, _k: usize, _g: &mut LaneStore) {}
    /// Scale `k`'s parameters, the same as [`GradOp::splat`] gives: lane `j` of the group
    /// that [`GradOp::group`] stored in `g`.
    #[inline(always)]
    fn lane<S: Simd>(&self, simd: S, _g: &LaneStore, k: usize, _j: usize) -> Self::P<S> {
        self.splat(simd, k)
    }
}

/// Vectors of per-scale parameters stored lane by lane ([`GradOp::group`]), so that a
/// block's are one broadcast each.
pub(crate) struct LaneStore([[u8; 64]; 9]);

impl LaneStore {
    const EMPTY: LaneStore = LaneStore([[0; 64]; 9]);

    #[inline(always)]
    fn put<S: Simd>(&mut self, simd: S, which: usize, v: S::F) {
        simd.store_f32(v, &mut self.0[which]);
    }

    /// Lane `j` of vector `which`, as a value.
    #[inline(always)]
    fn get(&self, which: usize, j: usize) -> f32 {
        // (`j % 16`: the same lane, and no bounds test per block.)
        crate::simd::lane_f32(&self.0[which], j % 16)
    }
}

/// `out`, or f32 where the op's variant knows `dx` is f32 ([`GradOp::DX_F32`]).
#[inline(always)]
fn dx_out<O: GradOp>(out: Out) -> Out {
    if O::DX_F32 {
        Out::F32
    } else {
        out
    }
}

/// Fake quantization backward (`qdq_ref::train::fake_quantize_backward`): the quotient is
/// recomputed with a true division (the exact IEEE quotient, as the reference), which
/// decides the mask, the side of a clamped element and the rounding error. `F32`: the
/// variant for f32 x, `dy` and `dx` (when written) at the division precision f32, with
/// those types as compile-time facts instead of a switch per vector (its caller checks
/// them; see [`FakeQuantGrad::all_f32`]). `INT` (with `F32`): also an integer output type
/// and every scale in the fast range ([`FakeQuantGrad::all_fast_int`]), so Markstein's
/// division and the integer rule without a test per vector (per-lane scales then take
/// their reciprocals by a vector division instead of dividing x).
#[derive(Clone, Copy)]
pub(crate) struct FakeQuantGrad<'a, const F32: bool, const INT: bool> {
    /// x, scale, zero point, output type and precision, as the forward.
    pub job: Job<'a>,
    pub dy: (Src, &'a [u8]),
    pub lda: f32,
}

impl FakeQuantGrad<'_, false, false> {
    /// Whether the `F32` variant serves this call (`dx`: its type, when written).
    pub(crate) fn all_f32(&self, dx: Option<Out>) -> bool {
        let job = &self.job;
        job.src == Src::F32 && job.prec == Prec::F32 && self.dy.0 == Src::F32 && matches!(dx, None | Some(Out::F32))
    }

    /// Whether the output type is an integer and each of the `scales` scales is in the fast
    /// range (with [`FakeQuantGrad::all_f32`]: the `INT` variant serves this call).
    pub(crate) fn all_fast_int(&self, scales: usize) -> bool {
        let job = &self.job;
        matches!(job.enc, Encode::Int { .. })
            && (0..scales).all(|k| fast_scale(job.prec.round_scalar(job.scale_kind.get_inline(job.scale, k))))
    }
}

impl<const F32: bool, const INT: bool> GradOp for FakeQuantGrad<'_, F32, INT> {
    /// The forward's parameters, and for integer outputs the [`round_limits`] of their range.
    type P<S: Simd> = (Lanes<S>, (S::F, S::F));
    const DX_F32: bool = F32;

    #[inline(always)]
    fn splat<S: Simd>(&self, simd: S, k: usize) -> Self::P<S> {
        with_limits(simd, &self.job, splat_lanes(simd, &self.job, k))
    }

    #[inline(always)]
    fn seq<S: Simd>(&self, simd: S, k: usize, valid: usize) -> Self::P<S> {
        let mut p = seq_lanes(simd, &self.job, k, valid);
        if INT {
            // Every scale is in the fast range (padding lanes hold 1): Markstein's division
            // with each lane's correctly rounded reciprocal.
            p.r = simd.div(simd.splat(1.0), p.divisor);
            p.fast = true;
        }
        with_limits(simd, &self.job, p)
    }

    #[inline(always)]
    fn load<S: Simd>(&self, simd: S, _p: &Self::P<S>, i: usize, valid: usize) -> (S::F, S::F) {
        let job = &self.job;
        let (src, dy_src) = if F32 { (Src::F32, Src::F32) } else { (job.src, self.dy.0) };
        let mut x = load_src(simd, src, job.x, i, valid);
        if !F32 && !job.src_exact {
            x = job.prec.round(simd, x);
        }
        (x, load_src(simd, dy_src, self.dy.1, i, valid))
    }

    const F32_INPUTS: bool = F32;

    #[inline(always)]
    fn f32_inputs(&self) -> Option<(&[u8], &[u8])> {
        F32.then_some((self.job.x, self.dy.1))
    }

    /// Vectors of `splat`'s values: the precision's scales, their correctly rounded
    /// reciprocals by one vector division, the ranges and their limits from the zero points.
    #[inline(always)]
    fn group<S: Simd>(&self, simd: S, k: usize, g: &mut LaneStore) {
        let mut p = seq_lanes(simd, &self.job, k, S::LANES);
        p.r = simd.div(simd.splat(1.0), p.divisor);
        let (p, (ls, hs)) = with_limits(simd, &self.job, p);
        for (which, v) in [p.divisor, p.raw, p.r, simd.f32_of(p.z), p.lo, p.hi, p.zf, ls, hs].into_iter().enumerate() {
            g.put(simd, which, v);
        }
    }

    #[inline(always)]
    fn lane<S: Simd>(&self, simd: S, g: &LaneStore, _k: usize, j: usize) -> Self::P<S> {
        // (Written out, not through a closure: closures do not inherit the ISA's target
        // features. The zero points are stored as bit patterns.)
        let divisor = g.get(0, j);
        let p = Lanes {
            divisor: simd.splat(divisor),
            raw: simd.splat(g.get(1, j)),
            r: simd.splat(g.get(2, j)),
            fast: INT || fast_scale(divisor),
            pow2: false,
            z: simd.splat_i(g.get(3, j).to_bits() as i32),
            lo: simd.splat(g.get(4, j)),
            hi: simd.splat(g.get(5, j)),
            zf: simd.splat(g.get(6, j)),
        };
        (p, (simd.splat(g.get(7, j)), simd.splat(g.get(8, j))))
    }

    #[inline(always)]
    fn step_vals<S: Simd>(&self, simd: S, p: &Self::P<S>, x: S::F, dy: S::F) -> (S::F, [S::F; 2]) {
        let ((p, (ls, hs)), job) = (p, &self.job);
        let (ls, hs) = (*ls, *hs);
        let prec = if F32 { Prec::F32 } else { job.prec };
        // The exact quotient: Markstein's correction where the scale allows it, as in the
        // forward, except for a vector holding a nonzero `|x| <= 2^-96` (see the quantize
        // module docs): the forward rounds those quotients to zero whatever their last
        // bits, but here `round(q) - q` keeps them, so a true division then (`redo_tiny`).
        let fast = INT || p.fast;
        let q = divide(simd, x, p.divisor, p.r, fast);
        let q = if fast && S::HAS_FMA { redo_tiny(simd, x, q, p.divisor) } else { q };
        let q = prec.round(simd, q);
        let g = simd.mul(simd.splat(self.lda), dy);
        let zero = simd.splat(0.0);
        let neg0 = simd.splat(-0.0);
        match job.enc {
            // (`!INT`: an `INT` variant's output is an integer, known at compile time.)
            Encode::Mini { fmt, add_zero, .. } if !INT => {
                let v = if add_zero { simd.add(q, p.zf) } else { q };
                let (_, bad) = encode_minifloat_checked(simd, v, &fmt);
                (simd.select(bad, zero, g), [neg0, neg0])
            }
            _ => int_grads(simd, p, (ls, hs), q, dy, g),
        }
    }
}

/// [`FakeQuantGrad`]'s `dx` and terms for an integer output: `q` the quotient, `g` the
/// gradient `lda * dy`.
#[inline(always)]
fn int_grads<S: Simd>(simd: S, p: &Lanes<S>, (ls, hs): (S::F, S::F), q: S::F, dy: S::F, g: S::F) -> (S::F, [S::F; 2]) {
    // round(q) is below lo exactly where q <= ls, above hi exactly where q > hs
    // (`round_limits`); NaN is neither above ls nor above hs: clamped low, as
    // the reference's NaN code qmin. Inside, round(q) - q by the 1.5 * 2^23
    // addition: every integer output is at most 16 bits wide, so a rounded
    // quotient within [lo, hi] has |round(q)| <= 65535 and q + 1.5 * 2^23 lies
    // in [2^23, 2^24), where the floats are the integers; the addition rounds q
    // half to even (every call runs in the default rounding mode, see `fpenv`),
    // and subtracting the constant again is exact. Lanes outside take lo or hi.
    let (above_lo, above_hi) = (simd.lt(ls, q), simd.lt(hs, q));
    let inside = simd.andnot_m(above_lo, above_hi);
    let magic = simd.splat(12_582_912.0);
    let d_in = simd.sub(simd.sub(simd.add(q, magic), magic), q);
    let t = simd.mul(dy, simd.select(above_lo, simd.select(above_hi, p.hi, d_in), p.lo));
    let u = simd.select(inside, simd.splat(-0.0), dy);
    (simd.select(inside, g, simd.splat(0.0)), [t, u])
}

/// The limits of an integer range `[lo, hi]` (integers as floats, `|lo|, |hi| <= 65535`)
/// for quotients rounded half to even: `round(q) < lo` exactly where `q <= ls`, and
/// `round(q) > hi` exactly where `q > hs`. The midpoint `lo - 1/2` rounds to the even one of
/// `lo - 1` and `lo`, so `ls` is that midpoint where `lo` is odd and the float just below it
/// where `lo` is even; `hs` is `hi + 1/2` where `hi` is even and the float just below it where
/// `hi` is odd. (Both midpoints are exact and nonzero; the float below a nonzero `v` has the
/// bits of `v` minus 1 when `v > 0`, plus 1 when `v < 0`.)
#[inline(always)]
pub(crate) fn round_limits<S: Simd>(simd: S, lo: S::F, hi: S::F) -> (S::F, S::F) {
    let half = simd.splat(0.5);
    let one = simd.splat_i(1);
    let lo_even = simd.xor_i(simd.and_i(simd.cvt_rne(lo), one), one);
    let hi_odd = simd.and_i(simd.cvt_rne(hi), one);
    (below_if(simd, simd.sub(lo, half), lo_even), below_if(simd, simd.add(hi, half), hi_odd))
}

/// `p` with the [`round_limits`] of its integer range (zeros for float outputs).
#[inline(always)]
fn with_limits<S: Simd>(simd: S, job: &Job<'_>, p: Lanes<S>) -> (Lanes<S>, (S::F, S::F)) {
    let limits = match job.enc {
        Encode::Int { .. } => round_limits(simd, p.lo, p.hi),
        Encode::Mini { .. } => (simd.splat(0.0), simd.splat(0.0)),
    };
    (p, limits)
}

/// `v` (nonzero, finite), or the float just below it in the lanes where `d` is 1 (else 0).
#[inline(always)]
fn below_if<S: Simd>(simd: S, v: S::F, d: S::I) -> S::F {
    // d * (v < 0 ? -1 : 1) as (d ^ s) - s with s the sign's all-ones or zero.
    let b = simd.bits(v);
    let s = simd.sra(b, 31);
    simd.f32_of(simd.sub_i(b, simd.sub_i(simd.xor_i(d, s), s)))
}

/// The DequantizeLinear scale gradient: terms `dy * d`.
#[derive(Clone, Copy)]
pub(crate) struct DequantizeGrad<'a> {
    pub x: Packed<'a>,
    pub zero_point: Option<Packed<'a>>,
    /// Float x: its decoder (the zero point is zero and unused).
    pub mini: Option<MiniFormat>,
    pub dy: (Src, &'a [u8]),
}

impl GradOp for DequantizeGrad<'_> {
    type P<S: Simd> = S::I;

    #[inline(always)]
    fn splat<S: Simd>(&self, simd: S, k: usize) -> S::I {
        match (&self.zero_point, &self.mini) {
            (Some(zp), None) => simd.splat_i(packing::get_int(zp.dtype, zp.data, k) as i32),
            _ => simd.splat_i(0),
        }
    }

    #[inline(always)]
    fn seq<S: Simd>(&self, simd: S, k: usize, valid: usize) -> S::I {
        match (&self.zero_point, &self.mini) {
            (Some(zp), None) => load_codes(simd, zp, k, valid, true),
            _ => simd.splat_i(0),
        }
    }

    #[inline(always)]
    fn load<S: Simd>(&self, simd: S, z: &S::I, i: usize, valid: usize) -> (S::F, S::F) {
        let c = load_codes(simd, &self.x, i, valid, true);
        let d = match &self.mini {
            Some(f) => decode_minifloat(simd, c, f),
            None => simd.cvt_f32(simd.sub_i(c, *z)),
        };
        (d, load_src(simd, self.dy.0, self.dy.1, i, valid))
    }

    #[inline(always)]
    fn step_vals<S: Simd>(&self, simd: S, _z: &S::I, d: S::F, dy: S::F) -> (S::F, [S::F; 2]) {
        let neg0 = simd.splat(-0.0);
        (neg0, [simd.mul(dy, d), neg0])
    }
}

/// What one [`walk`] call covers and writes.
pub(crate) struct Walk<'o> {
    /// Elements `[begin, end)`.
    pub begin: usize,
    pub end: usize,
    /// Only groups (scale indices) in `groups` are processed; elements of other groups
    /// are skipped entirely (neither `dx` nor sums).
    pub groups: std::ops::Range<usize>,
    /// `dx` bytes of `[begin, end)` and their type, when wanted.
    pub dx: Option<(&'o mut [u8], Out)>,
    /// The sums, indexed by `k - groups.start`, already holding `-0` (or an earlier
    /// partial of the same group), when wanted.
    pub sums: [Option<&'o mut [f32]>; 2],
}

/// Runs a backward pass with reductions over `w` (see the module docs).
#[inline(always)]
pub(crate) fn walk<S: Simd, O: GradOp>(simd: S, op: &O, layout: Layout, w: Walk<'_>) {
    // Blocked along the last axis, the range whole blocks of at most a tile that tile each
    // row: one kernel over the blocks (the segment walk spent about 380 instructions per
    // block of 32 on the segment, its filter and a kernel entry per block).
    if let Layout::Blocked { axis_len, inner: 1, block, .. } = layout {
        let fits = block > 0
            && block <= SUM_TILE
            && axis_len.is_multiple_of(block)
            && w.begin.is_multiple_of(block)
            && w.end.is_multiple_of(block)
            && w.groups == (w.begin / block..w.end / block);
        if fits {
            return simd.enter(BlockSums { op, w, block });
        }
    }
    let groups = w.groups.clone();
    let segments = Segments::new(layout, w.begin, w.end).filter_map(move |seg| seg.within(groups.clone()));
    walk::walk(simd, &mut ReduceOp { op, w }, segments);
}

/// A backward pass with reductions for [`walk::walk`]: a broadcast-scale run is summed as
/// a whole ([`run_sum`]'s canonical tree); per-lane-scale vectors add their terms into
/// the sums lane by lane. No alignment: the vectors read their inputs at any position.
struct ReduceOp<'o, 'w, O: GradOp> {
    op: &'o O,
    w: Walk<'w>,
}

impl<S: Simd, O: GradOp> RunOp<S> for ReduceOp<'_, '_, O> {
    type P = O::P<S>;

    #[inline(always)]
    fn head(&self, _i: usize) -> usize {
        0
    }

    #[inline(always)]
    fn splat(&self, simd: S, k: usize) -> O::P<S> {
        self.op.splat(simd, k)
    }

    #[inline(always)]
    fn seq(&self, simd: S, k: usize, valid: usize) -> O::P<S> {
        self.op.seq(simd, k, valid)
    }

    #[inline(always)]
    fn part(&mut self, simd: S, p: &O::P<S>, k: usize, i: usize, take: usize) {
        let (dx, t) = self.op.step(simd, p, i, take);
        let w = &mut self.w;
        if let Some((y, out)) = w.dx.as_mut() {
            store_out(simd, dx_out::<O>(*out), dx, y, i - w.begin, take);
        }
        let (keep, neg0, g0) = (simd.mask_from_bits(lanes_mask(take)), simd.splat(-0.0), w.groups.start);
        for (j, out) in w.sums.iter_mut().enumerate() {
            if let Some(out) = out.as_deref_mut() {
                add_into(simd, simd.select(keep, t[j], neg0), &mut out[k - g0..k - g0 + take]);
            }
        }
    }

    #[inline(always)]
    fn splat_run(&mut self, simd: S, p: &O::P<S>, k: usize, i: usize, stop: usize) {
        let w = &mut self.w;
        let sums = run_sum(simd, self.op, p, i, stop - i, w.begin, &mut w.dx);
        for (j, out) in w.sums.iter_mut().enumerate() {
            if let Some(out) = out.as_deref_mut() {
                out[k - w.groups.start] += sums[j];
            }
        }
    }
}

/// `acc[t] += v[t]` for the `acc.len()` (<= LANES) first lanes.
#[inline(always)]
fn add_into<S: Simd>(simd: S, v: S::F, acc: &mut [f32]) {
    let n = acc.len();
    let mut tmp = [0u8; 64];
    let bytes: &mut [u8] = bytemuck::cast_slice_mut(acc);
    tmp[..4 * n].copy_from_slice(bytes);
    let sum = simd.add(simd.load_f32(&tmp), v);
    simd.store_f32(sum, &mut tmp);
    bytes.copy_from_slice(&tmp[..4 * n]);
}

/// The two sums of one run `[a, a + m)` in the canonical order, writing `dx` on the way.
///
/// A run longer than a tile is the reference's recursion (first `ceil(tiles / 2)` tiles,
/// then the rest, added), evaluated with an explicit stack: a recursive function could not
/// be inlined into the ISA's target-feature context.
#[inline(always)]
fn run_sum<S: Simd, O: GradOp>(
    simd: S,
    op: &O,
    p: &O::P<S>,
    a: usize,
    m: usize,
    begin: usize,
    dx: &mut Option<(&mut [u8], Out)>,
) -> [f32; 2] {
    if m <= SUM_TILE {
        return simd.enter(TileSum { op, p, a, m, begin, dx });
    }
    // Frames (start, len, left sums once the left half is done). Depth <= log2(usize::MAX).
    let mut stack = [(0usize, 0usize, None::<[f32; 2]>); 64];
    stack[0] = (a, m, None);
    let mut depth = 1;
    loop {
        let (fa, fm, _) = stack[depth - 1];
        if fm > SUM_TILE {
            // Descend into the left half.
            let h = fm.div_ceil(SUM_TILE).div_ceil(2) * SUM_TILE;
            stack[depth] = (fa, h, None);
            depth += 1;
            continue;
        }
        let mut ret = simd.enter(TileSum { op, p, a: fa, m: fm, begin, dx: &mut *dx });
        depth -= 1;
        // Hand the result up: a parent waiting for its left half starts its right half; a
        // parent with both halves adds them and hands its own result up.
        loop {
            if depth == 0 {
                return ret;
            }
            let (pa, pm, left) = stack[depth - 1];
            match left {
                None => {
                    let h = pm.div_ceil(SUM_TILE).div_ceil(2) * SUM_TILE;
                    stack[depth - 1].2 = Some(ret);
                    stack[depth] = (pa + h, pm - h, None);
                    depth += 1;
                    break;
                }
                Some(l) => {
                    ret = [l[0] + ret[0], l[1] + ret[1]];
                    depth -= 1;
                }
            }
        }
    }
}

/// The blocks of a [`walk`] along a blocked-last layout (block `k` from element
/// `k * block`, every block of the range in its groups), each a tile of its own: its
/// broadcast parameters, its sums in the canonical order ([`tile_sum`]) added to the
/// block's, its `dx` stored; one kernel for all of them. The parameters come `LANES`
/// blocks at a time where the op computes them as vectors ([`GradOp::group`]): the
/// per-block reads, reciprocal and range limits cost more than a 32-element block's
/// vectors.
struct BlockSums<'o, 'w, O: GradOp> {
    op: &'o O,
    w: Walk<'w>,
    block: usize,
}

impl<O: GradOp> Kernel for BlockSums<'_, '_, O> {
    type Output = ();
    #[inline(always)]
    fn run<S: Simd>(self, simd: S) {
        let BlockSums { op, w, block } = self;
        let Walk { begin, groups, mut dx, mut sums, .. } = w;
        // A local copy: no store through `dx` can alias it.
        let op = *op;
        let lanes = S::LANES;
        let mut g = LaneStore::EMPTY;
        let mut k = groups.start;
        while k < groups.end {
            // Groups of `LANES` blocks with their parameters as vectors, then single blocks.
            let whole = groups.end - k >= lanes;
            if whole {
                op.group(simd, k, &mut g);
            }
            for j in 0..if whole { lanes } else { 1 } {
                let p = if whole { op.lane(simd, &g, k + j, j) } else { op.splat(simd, k + j) };
                let s = tile_sum(simd, &op, &p, (k + j) * block, block, begin, &mut dx);
                for (t, out) in sums.iter_mut().enumerate() {
                    if let Some(out) = out.as_deref_mut() {
                        out[k + j - groups.start] += s[t];
                    }
                }
            }
            k += if whole { lanes } else { 1 };
        }
    }
}

/// The two sums of at most a tile (sixteen interleaved partials, folded pairwise), as a
/// kernel of its own (entered once per tile of up to 16384 elements).
struct TileSum<'o, 'p, 'd, 'y, S: Simd, O: GradOp> {
    op: &'o O,
    p: &'p O::P<S>,
    a: usize,
    m: usize,
    begin: usize,
    dx: &'d mut Option<(&'y mut [u8], Out)>,
}

impl<S: Simd, O: GradOp> IsaKernel<S> for TileSum<'_, '_, '_, '_, S, O> {
    type Output = [f32; 2];
    #[inline(always)]
    fn run_on(self, simd: S) -> [f32; 2] {
        // Local copies: no store through `dx` can alias them, so they stay in registers.
        let (op, p) = (*self.op, *self.p);
        tile_sum(simd, &op, &p, self.a, self.m, self.begin, self.dx)
    }
}

/// The two sums of the tile of `m` (at most [`SUM_TILE`]) elements from `a` (sixteen
/// interleaved partials, folded pairwise), its `dx` stored where wanted: the body of
/// [`TileSum`] and of [`BlockSums`].
#[inline(always)]
// `j` indexes the inner dimension of both sums' accumulators (the lint's iterator would
// walk the outer one).
#[allow(clippy::needless_range_loop)]
fn tile_sum<S: Simd, O: GradOp>(
    simd: S,
    op: &O,
    p: &O::P<S>,
    a: usize,
    m: usize,
    begin: usize,
    dx: &mut Option<(&mut [u8], Out)>,
) -> [f32; 2] {
    let lanes = S::LANES;
    // SUM_LANES / LANES accumulators per sum: vector v of the tile adds into accumulator
    // v % nacc, so lane l of accumulator j holds the partial of run positions = j * LANES + l
    // (mod 16).
    let nacc = SUM_LANES / lanes;
    let neg0 = simd.splat(-0.0);
    let mut acc = [[neg0; 4]; 2];
    let mut i = a;
    let stop = a + m;
    // Whole rounds of `nacc` vectors, then one partial round: within a round vector j goes
    // to accumulator j, and `j` is a compile-time index once the inner loop unrolls
    // (`nacc` is a constant per ISA), so the accumulators stay in registers. (Indexing them
    // with a run-time `v % nacc` kept them in memory: a load and a store per vector.)
    // With `dx` the rounds store into exact chunks of it (no per-vector test of the
    // option, no bounds checks); without, they only sum.
    let round = nacc * lanes;
    let end = i + (stop - i) / round * round;
    let f32_in = if const { O::F32_INPUTS } { op.f32_inputs() } else { None };
    if let Some((xs, dys)) = f32_in {
        // f32 x and dy: exact chunks of both (and of dx), so no bounds check per vector.
        let (xs, dys) = (&xs[4 * i..4 * end], &dys[4 * i..4 * end]);
        let rounds = xs.chunks_exact(4 * round).zip(dys.chunks_exact(4 * round));
        if let Some((y, out)) = dx.as_mut() {
            let out = dx_out::<O>(*out);
            let os = out.size();
            let y = &mut y[(i - begin) * os..(end - begin) * os];
            for ((xr, dr), yr) in rounds.zip(y.chunks_exact_mut(round * os)) {
                for j in 0..nacc {
                    let (x, dy) = (simd.load_f32(&xr[4 * lanes * j..]), simd.load_f32(&dr[4 * lanes * j..]));
                    let (d, t) = op.step_vals(simd, p, x, dy);
                    store(simd, out, d, &mut yr[lanes * os * j..]);
                    acc[0][j] = simd.add(acc[0][j], t[0]);
                    acc[1][j] = simd.add(acc[1][j], t[1]);
                }
            }
        } else {
            for (xr, dr) in rounds {
                for j in 0..nacc {
                    let (x, dy) = (simd.load_f32(&xr[4 * lanes * j..]), simd.load_f32(&dr[4 * lanes * j..]));
                    let (_, t) = op.step_vals(simd, p, x, dy);
                    acc[0][j] = simd.add(acc[0][j], t[0]);
                    acc[1][j] = simd.add(acc[1][j], t[1]);
                }
            }
        }
        i = end;
    } else if let Some((y, out)) = dx.as_mut() {
        let out = dx_out::<O>(*out);
        let os = out.size();
        for yr in y[(i - begin) * os..(end - begin) * os].chunks_exact_mut(nacc * lanes * os) {
            for (j, yv) in yr.chunks_exact_mut(lanes * os).enumerate() {
                let (d, t) = op.step(simd, p, i, lanes);
                store(simd, out, d, yv);
                acc[0][j] = simd.add(acc[0][j], t[0]);
                acc[1][j] = simd.add(acc[1][j], t[1]);
                i += lanes;
            }
        }
    } else {
        while i < end {
            for j in 0..nacc {
                let (_, t) = op.step(simd, p, i, lanes);
                acc[0][j] = simd.add(acc[0][j], t[0]);
                acc[1][j] = simd.add(acc[1][j], t[1]);
                i += lanes;
            }
        }
    }
    for j in 0..nacc {
        if i >= stop {
            break;
        }
        let take = lanes.min(stop - i);
        let (d, t) = op.step(simd, p, i, take);
        if let Some((y, out)) = dx.as_mut() {
            store_out(simd, dx_out::<O>(*out), d, y, i - begin, take);
        }
        let keep = simd.mask_from_bits(lanes_mask(take));
        acc[0][j] = simd.add(acc[0][j], simd.select(keep, t[0], neg0));
        acc[1][j] = simd.add(acc[1][j], simd.select(keep, t[1], neg0));
        i += take;
    }
    let mut out = [0.0f32; 2];
    for (r, a) in out.iter_mut().zip(acc.iter()) {
        let mut bytes = [0u8; 4 * SUM_LANES];
        for (j, vec) in a.iter().take(nacc).enumerate() {
            simd.store_f32(*vec, &mut bytes[4 * lanes * j..]);
        }
        let mut partial: [f32; SUM_LANES] = bytemuck::cast(bytes);
        *r = qdq_ref::train::fold_lanes(&mut partial);
    }
    out
}

#[cfg(test)]
mod tests {
    use super::round_limits;
    use crate::isa::{dispatch, Isa, Kernel};
    use crate::simd::Simd;

    /// [`round_limits`] of each `(lo, hi)` pair, a vector of pairs at a time.
    struct Limits<'a>(&'a [(f32, f32)]);

    impl Kernel for Limits<'_> {
        type Output = Vec<(f32, f32)>;
        fn run<S: Simd>(self, simd: S) -> Vec<(f32, f32)> {
            let mut out = Vec::with_capacity(self.0.len());
            for chunk in self.0.chunks(S::LANES) {
                let (mut lo, mut hi) = ([0u8; 64], [0u8; 64]);
                for (t, &(l, h)) in chunk.iter().enumerate() {
                    lo[4 * t..4 * t + 4].copy_from_slice(&l.to_le_bytes());
                    hi[4 * t..4 * t + 4].copy_from_slice(&h.to_le_bytes());
                }
                let (ls, hs) = round_limits(simd, simd.load_f32(&lo), simd.load_f32(&hi));
                let (mut lb, mut hb) = ([0u8; 64], [0u8; 64]);
                simd.store_f32(ls, &mut lb);
                simd.store_f32(hs, &mut hb);
                for t in 0..chunk.len() {
                    out.push((crate::simd::lane_f32(&lb, t), crate::simd::lane_f32(&hb, t)));
                }
            }
            out
        }
    }

    fn next_up(v: f32) -> f32 {
        f32::from_bits(if v > 0.0 { v.to_bits() + 1 } else { v.to_bits() - 1 })
    }

    /// Every integer bound of 16 bits or less, both signs, on every ISA: `ls` is the largest
    /// float whose half-to-even rounding is below `lo`, `hs` the largest whose rounding is
    /// at most `hi`.
    #[test]
    fn round_limits_split_every_16_bit_range_at_its_rounding_midpoints_on_every_isa() {
        let pairs: Vec<(f32, f32)> = (-65535..=65535).map(|v: i32| (v as f32, (-v) as f32)).collect();
        for isa in Isa::ALL {
            if !isa.is_available() {
                println!("{isa}: skipped, not on this CPU");
                continue;
            }
            let got = dispatch(isa, Limits(&pairs));
            assert_eq!(got.len(), pairs.len(), "{isa}");
            for (&(lo, hi), &(ls, hs)) in pairs.iter().zip(&got) {
                assert!(ls.round_ties_even() < lo && next_up(ls).round_ties_even() >= lo, "{isa}: lo {lo}: ls {ls}");
                assert!(hs.round_ties_even() <= hi && next_up(hs).round_ties_even() > hi, "{isa}: hi {hi}: hs {hs}");
            }
            println!("{isa}: {} ranges checked", pairs.len());
        }
    }
}
