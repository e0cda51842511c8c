//! DequantizeLinear kernels, written once over [`Simd`].
//!
//! ```text
//! integer x:  d = cvt_f32(x - z)        (8/16-bit and sub-byte codes: the difference is
//!                                        exact in i32; i32 x is converted directly)
//! float x:    d = decode(x)             exact: every float8/6/4 value is an f32
//! y = round_O(d * s)                    one f32 multiply, one rounding to f32/f16/bf16
//! ```
//!
//! i32 x with a zero point runs the reference (the difference may not fit in i32).

use crate::codec::{
    bf16_rne_bits, decode_minifloat, decode_minifloat_bits, decode_minifloat_times, fold_scale, MiniFormat,
};
use crate::isa::{IsaKernel, Kernel};
use crate::quantize::{load_codes, load_full, sign_extend, zero_point_at, ScaleKind};
use crate::simd::{lane_f32, lane_i32, Simd};
use crate::walk::{self, RunOp};
use qdq_ref::float::FloatFormat;
use qdq_ref::{DataType, Layout, Packed};

/// Output kinds.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Out {
    F32,
    F16,
    Bf16,
}

impl Out {
    pub(crate) fn of(t: DataType) -> Option<Out> {
        match t {
            DataType::F32 => Some(Out::F32),
            DataType::F16 => Some(Out::F16),
            DataType::Bf16 => Some(Out::Bf16),
            _ => None,
        }
    }

    pub(crate) fn size(self) -> usize {
        if self == Out::F32 {
            4
        } else {
            2
        }
    }
}

/// A resolved DequantizeLinear call.
#[derive(Clone, Copy)]
pub(crate) struct Job<'a> {
    pub x: Packed<'a>,
    pub scale_kind: ScaleKind,
    pub scale: &'a [u8],
    pub zero_point: Option<Packed<'a>>,
    pub mini: Option<MiniFormat>,
    pub out: Out,
    pub layout: Layout,
}

impl<'a> Job<'a> {
    /// `None` when the vector path does not cover the call (i32 x with a zero point).
    pub(crate) fn new(
        x: Packed<'a>,
        scale_type: DataType,
        scale: &'a [u8],
        zero_point: Option<Packed<'a>>,
        layout: Layout,
        out: DataType,
    ) -> Option<Job<'a>> {
        if x.dtype == DataType::I32 && zero_point.is_some() {
            return None;
        }
        let mini = FloatFormat::of(x.dtype).map(|f| MiniFormat::new(&f, true));
        // A float zero point is zero (validated) and takes no part in the arithmetic.
        let zero_point = if mini.is_some() { None } else { zero_point };
        Some(Job { x, scale_kind: ScaleKind::of(scale_type)?, scale, zero_point, mini, out: Out::of(out)?, layout })
    }
}

/// The value `d` of the module docs for codes `c` (zero-extended as loaded). Integer codes
/// are sign-extended as [`crate::quantize::sign_extend`] does, `(c ^ flip) - flip` with
/// `flip` the type's sign bit (0 for unsigned types), with `zf = z + flip` folding its
/// subtraction into the zero point's.
/// `bits` is the codes' width (a constant in the compile-time variants).
#[inline(always)]
fn decode<S: Simd>(simd: S, c: S::I, flip: S::I, zf: S::I, mini: Option<&MiniFormat>, bits: u32) -> S::F {
    match mini {
        Some(f) => decode_minifloat_bits(simd, c, f, bits),
        None => simd.cvt_f32(simd.sub_i(simd.xor_i(c, flip), zf)),
    }
}

/// The parameters of whole vectors of a row tile ([`RunOp::seq_tiles`]): the scale kind's
/// vector load, and the zero points (the codes' type: `BITS` bits; the tile starts on a
/// byte of them) by the compile-time width's load. A kernel of its own where
/// [`Simd::TILE_PARAMS_APART`], else inlined.
struct TileParams<'j, 'a, 'p, const BITS: u8, S: Simd> {
    job: &'j Job<'a>,
    signed: bool,
    /// The first scale index, and the vectors' parameters to fill.
    k: usize,
    p: &'p mut [(S::F, S::I)],
}

impl<const BITS: u8, S: Simd> IsaKernel<S> for TileParams<'_, '_, '_, BITS, S> {
    type Output = ();
    #[inline(always)]
    fn run_on(self, simd: S) {
        let TileParams { job, signed, k, p } = self;
        let (lanes, bits) = (S::LANES, BITS as usize);
        let n = p.len() * lanes;
        let zb = match job.zero_point {
            Some(zp) => &zp.data[k * bits / 8..(k + n) * bits / 8],
            None => &[],
        };
        if zb.is_empty() {
            for (v, pv) in p.iter_mut().enumerate() {
                *pv = (job.scale_kind.load(simd, job.scale, k + v * lanes), simd.splat_i(0));
            }
            return;
        }
        let sign = if signed { 1 << (bits - 1) } else { 0 };
        for ((v, pv), zv) in p.iter_mut().enumerate().zip(zb.chunks_exact(lanes * bits / 8)) {
            let z = sign_extend(simd, load_full(simd, BITS as u32, zv, 0), sign);
            *pv = (job.scale_kind.load(simd, job.scale, k + v * lanes), z);
        }
    }
}

/// The row tiles' 4- and 2-bit integer rows (`BITS`) four vectors at a time: the codes
/// extended by [`Simd::load_4bit_x4`] or [`Simd::load_2bit_x4`] (sign-extended where `SX`,
/// signed types), minus the zero points `z` (as sign-extended), converted, times the
/// scales, stored as `out` (no NaN canonicalisation: the caller's scales are finite). `pq`
/// is the tile's parameters by fours; each row of `rows` is as many four-vector chunks.
#[inline(always)]
fn packed_rows<'r, S: Simd, const BITS: u8, const SX: bool>(
    simd: S,
    rows: impl Iterator<Item = (&'r [u8], &'r mut [u8])>,
    pq: &[[(S::F, S::I); 4]],
    out: Out,
) {
    let (qx, qy) = (S::LANES * BITS as usize / 2, 4 * S::LANES * out.size());
    for (xr, yr) in rows {
        for ((xq, yq), pt) in xr.chunks_exact(qx).zip(yr.chunks_exact_mut(qy)).zip(pq) {
            let c = if BITS == 2 { simd.load_2bit_x4::<SX>(xq) } else { simd.load_4bit_x4::<SX>(xq) };
            let mut v = [simd.splat(0.0); 4];
            for ((vk, ck), &(sc, z)) in v.iter_mut().zip(c).zip(pt) {
                *vk = simd.mul(simd.cvt_f32(simd.sub_i(ck, z)), sc);
            }
            store_as_x4(simd, out, v, false, yq);
        }
    }
}

/// [`decode`] of vector `u` of `xq` (codes of `bits` bits), with the zero points `z`
/// (without the flip). `SX`: the codes are signed 8- or 16-bit integers, sign-extended by
/// their load ([`Simd::load_i8`], [`Simd::load_i16`]), one subtraction where the
/// zero-extending load takes an exclusive or and the subtraction of `z + flip`.
#[inline(always)]
fn load_decode<S: Simd, const SX: bool>(
    simd: S,
    xq: &[u8],
    u: usize,
    bits: u32,
    fz: (S::I, S::I),
    mini: Option<&MiniFormat>,
) -> S::F {
    let (flip, z) = fz;
    if SX {
        return simd.cvt_f32(simd.sub_i(load_ext::<S, true>(simd, xq, u, bits), z));
    }
    decode(simd, load_full(simd, bits, xq, u * S::LANES), flip, simd.add_i(z, flip), mini, bits)
}

/// Vector `u` of `xq`, 8- or 16-bit integer codes, extended by their load: sign-extended
/// where `SX` (signed types), else zero-extended.
#[inline(always)]
fn load_ext<S: Simd, const SX: bool>(simd: S, xq: &[u8], u: usize, bits: u32) -> S::I {
    match (SX, bits) {
        (true, 8) => simd.load_i8(&xq[u * S::LANES..]),
        (true, _) => simd.load_i16(&xq[2 * u * S::LANES..]),
        (false, _) => load_full(simd, bits, xq, u * S::LANES),
    }
}

/// Whole steps of 8- or 16-bit integer codes (`steps`: four vectors of x and their output
/// bytes) with the broadcast scale `sc` and zero point `z`: [`load_ext`] (`SX` as there), one
/// subtraction of `z`, the conversion and the product, four vectors per store, canonicalising
/// NaN where `canon`.
#[inline(always)]
fn ext_steps<'r, S: Simd, const SX: bool>(
    simd: S,
    steps: impl Iterator<Item = (&'r [u8], &'r mut [u8])>,
    bits: u32,
    (sc, z): (S::F, S::I),
    out: Out,
    canon: bool,
) {
    for (xq, yq) in steps {
        let mut v = [sc; 4];
        for (k, vk) in v.iter_mut().enumerate() {
            *vk = simd.mul(simd.cvt_f32(simd.sub_i(load_ext::<S, SX>(simd, xq, k, bits), z)), sc);
        }
        store_as_x4(simd, out, v, canon, yq);
    }
}

/// Whole steps of 2-bit integer codes (as [`ext_steps`]) with the broadcast scale `sc` and
/// zero point `z`: the four vectors by [`Simd::load_2bit_x4`] (sign-extended where `SX`),
/// one subtraction of `z` a vector, the conversion and the product, one store of the four.
#[inline(always)]
fn crumb_steps<'r, S: Simd, const SX: bool>(
    simd: S,
    steps: impl Iterator<Item = (&'r [u8], &'r mut [u8])>,
    (sc, z): (S::F, S::I),
    out: Out,
    canon: bool,
) {
    for (xq, yq) in steps {
        let mut v = [sc; 4];
        for (vk, ck) in v.iter_mut().zip(simd.load_2bit_x4::<SX>(xq)) {
            *vk = simd.mul(simd.cvt_f32(simd.sub_i(ck, z)), sc);
        }
        store_as_x4(simd, out, v, canon, yq);
    }
}

/// The rows of a tile of 8- or 16-bit integer codes, a vector at a time with the per-lane
/// parameters `p`: [`load_ext`] (`SX` as there) and one subtraction of the zero point, the
/// conversion, the product and the store (canonicalising NaN where `canon`). The generic
/// decoder's exclusive or and offset cost two operations in ten per vector (AVX2 i8 -> f16
/// per-axis-last64).
#[inline(always)]
fn ext_rows<'r, S: Simd, const SX: bool>(
    simd: S,
    rows: impl Iterator<Item = (&'r [u8], &'r mut [u8])>,
    p: &[(S::F, S::I)],
    bits: u32,
    out: Out,
    canon: bool,
) {
    let (xv, yv) = (S::LANES * bits as usize / 8, S::LANES * out.size());
    for (xr, yr) in rows {
        for ((xq, yq), &(sc, z)) in xr.chunks_exact(xv).zip(yr.chunks_exact_mut(yv)).zip(p) {
            let d = simd.cvt_f32(simd.sub_i(load_ext::<S, SX>(simd, xq, 0, bits), z));
            store_as(simd, out, simd.mul(d, sc), canon, yq);
        }
    }
}

/// The rows of a tile of `pq.len()` groups of four vectors (per-lane parameters `pq`) to
/// bf16, four vectors per store ([`store_as_x4`]), none of them needing the NaN
/// canonicalisation ([`needs_canon`]); `SX` as in [`load_decode`], a compile-time choice (a
/// test per vector cost more than the sign extension saved).
#[inline(always)]
fn bf16_rows_x4<'r, S: Simd, const SX: bool>(
    simd: S,
    rows: impl Iterator<Item = (&'r [u8], &'r mut [u8])>,
    pq: &[[(S::F, S::I); 4]],
    bits: u32,
    flip: S::I,
    mini: Option<&MiniFormat>,
) {
    let (qx, qy) = (4 * S::LANES * bits as usize / 8, 4 * S::LANES * 2);
    for (xr, yr) in rows {
        for (t, pt) in pq.iter().enumerate() {
            let (xq, yq) = (&xr[t * qx..(t + 1) * qx], &mut yr[t * qy..(t + 1) * qy]);
            let mut v = [simd.splat(0.0); 4];
            for (u, (vu, &(sc, z))) in v.iter_mut().zip(pt).enumerate() {
                *vu = simd.mul(load_decode::<S, SX>(simd, xq, u, bits, (flip, z), mini), sc);
            }
            store_as_x4(simd, Out::Bf16, v, false, yq);
        }
    }
}

#[inline(always)]
fn dequantize_vec<S: Simd>(simd: S, job: &Job<'_>, i: usize, valid: usize, sc: S::F, z: S::I) -> S::F {
    let c = load_codes(simd, &job.x, i, valid, true);
    let d = match &job.mini {
        Some(f) => decode_minifloat(simd, c, f),
        None => simd.cvt_f32(simd.sub_i(c, z)),
    };
    simd.mul(d, sc)
}

/// Stores `v` as `out`, every NaN lane as the canonical NaN (`qdq_ref::float::canonical_nan`).
#[inline(always)]
pub(crate) fn store<S: Simd>(simd: S, out: Out, v: S::F, y: &mut [u8]) {
    store_as(simd, out, v, true, y)
}

/// [`store`], with the NaN canonicalisation skipped where `canon` is false (the caller
/// knows no lane is NaN).
#[inline(always)]
pub(crate) fn store_as<S: Simd>(simd: S, out: Out, v: S::F, canon: bool, y: &mut [u8]) {
    let v = canonical(simd, v, canon);
    match out {
        Out::F32 => simd.store_f32(v, y),
        Out::F16 => simd.store_f16(v, y),
        // No NaN here but the canonical one, which the plain rounding keeps.
        Out::Bf16 => simd.store_u16(bf16_rne_bits(simd, v), y),
    }
}

/// `v` with every NaN lane the canonical NaN where `canon`.
#[inline(always)]
fn canonical<S: Simd>(simd: S, v: S::F, canon: bool) -> S::F {
    if canon {
        simd.select(simd.is_nan(v), simd.splat(qdq_ref::float::CANONICAL_NAN), v)
    } else {
        v
    }
}

/// [`store_as`] of four vectors (`4 * LANES` elements): bf16 codes through one
/// [`Simd::store_16x4`] (on AVX2 two packs and a permute for the four vectors instead of a
/// pack and a permute per vector).
#[inline(always)]
fn store_as_x4<S: Simd>(simd: S, out: Out, v: [S::F; 4], canon: bool, y: &mut [u8]) {
    let os = out.size();
    if out == Out::Bf16 {
        let mut c = [simd.splat_i(0); 4];
        for (ck, vk) in c.iter_mut().zip(v) {
            *ck = bf16_rne_bits(simd, canonical(simd, vk, canon));
        }
        return simd.store_16x4(c, false, y);
    }
    for (k, vk) in v.into_iter().enumerate() {
        store_as(simd, out, vk, canon, &mut y[k * S::LANES * os..]);
    }
}

/// Dequantizes elements `[begin, end)` into `y`, the output bytes of that range. Inlined
/// into the ISA's `vectorize` context (see `quantize::run`); the common input widths and
/// outputs get compile-time specialisations.
#[inline(always)]
pub(crate) fn run<S: Simd>(simd: S, job: &Job<'_>, begin: usize, end: usize, y: &mut [u8]) {
    if begin >= end {
        // Nothing to do, and an empty tensor's layout may hold any block size (a huge one
        // would overflow the blocked-last kernel's group size).
        return;
    }
    if let Some(block) = blocked_last::<S>(job, begin, end) {
        let k = BlockedLast { job: *job, begin, end, y, block };
        return match (job.x.dtype.bits(), job.x.dtype, job.out) {
            (8, DataType::E4M3Fn, _) => simd.enter(BlockedLastOf::<8, 2, 0>(k)),
            (8, DataType::E5M2, _) => simd.enter(BlockedLastOf::<8, 4, 0>(k)),
            (4, DataType::E2M1, _) => simd.enter(BlockedLastOf::<4, 10, 0>(k)),
            (8, _, _) if job.mini.is_some() => simd.enter(BlockedLastOf::<8, 1, 0>(k)),
            (6, _, _) => simd.enter(BlockedLastOf::<6, 1, 0>(k)),
            (2, _, _) => simd.enter(BlockedLastOf::<2, 0, 0>(k)),
            (8, _, Out::F16) => simd.enter(BlockedLastOf::<8, 0, 1>(k)),
            (8, _, Out::Bf16) => simd.enter(BlockedLastOf::<8, 0, 2>(k)),
            (4, _, Out::F16) => simd.enter(BlockedLastOf::<4, 0, 1>(k)),
            (4, _, Out::Bf16) => simd.enter(BlockedLastOf::<4, 0, 2>(k)),
            (8, _, _) => simd.enter(BlockedLastOf::<8, 0, 0>(k)),
            (16, _, _) => simd.enter(BlockedLastOf::<16, 0, 0>(k)),
            _ => simd.enter(BlockedLastOf::<4, 0, 0>(k)),
        };
    }
    // Per-axis along the last axis and blocked along another axis by row tiles: 2-, 4-, 8-
    // and 16-bit integers and float8 / float6 / float4 to f32 (MX blocked along K among
    // them), and 4- and 8-bit integers to f16 / bf16 (weights for half-precision
    // activations), in their own variants, the rest (floats to f16 / bf16) in the run-time
    // one (the tile code in every variant took a tenth more build time).
    let tiled = tiled_channels::<S>(job).is_some();
    let (bits, f32_out) = (job.x.dtype.bits(), job.out == Out::F32);
    let int_f32 = job.mini.is_none() && f32_out && (matches!(bits, 4 | 8 | 16) || (S::SPECIALIZE && bits == 2));
    let int_half = S::SPECIALIZE && job.mini.is_none() && !f32_out && matches!(bits, 4 | 8);
    let float_f32 = S::SPECIALIZE && job.mini.is_some() && f32_out;
    let tile_variant = int_f32 || int_half || float_f32;
    if tiled && !tile_variant {
        return walk::<S, 0, MINI_JOB, 3>(simd, job, begin, end, y);
    }
    // The portable ISA keeps the integer-to-f32 variants only.
    match (job.x.dtype.bits(), job.mini.is_some(), job.out) {
        (8, false, Out::F32) => walk::<S, 8, 0, 0>(simd, job, begin, end, y),
        (4, false, Out::F32) => walk::<S, 4, 0, 0>(simd, job, begin, end, y),
        (16, false, Out::F32) => walk::<S, 16, 0, 0>(simd, job, begin, end, y),
        // Every float format with its constants folded into the decoder (e4m3fn and e2m1
        // are the MX / NVFP4 element types).
        (8, true, Out::F32) if S::SPECIALIZE && job.x.dtype == DataType::E4M3Fn => {
            walk::<S, 8, 2, 0>(simd, job, begin, end, y)
        }
        (8, true, Out::F32) if S::SPECIALIZE && job.x.dtype == DataType::E5M2 => {
            walk::<S, 8, 4, 0>(simd, job, begin, end, y)
        }
        (8, true, Out::F32) if S::SPECIALIZE && job.x.dtype == DataType::E4M3FnUz => {
            walk::<S, 8, 6, 0>(simd, job, begin, end, y)
        }
        (8, true, Out::F32) if S::SPECIALIZE && job.x.dtype == DataType::E5M2FnUz => {
            walk::<S, 8, 8, 0>(simd, job, begin, end, y)
        }
        (4, true, Out::F32) if S::SPECIALIZE && job.x.dtype == DataType::E2M1 => {
            walk::<S, 4, 10, 0>(simd, job, begin, end, y)
        }
        (6, true, Out::F32) if S::SPECIALIZE && job.x.dtype == DataType::E2M3 => {
            walk::<S, 6, 11, 0>(simd, job, begin, end, y)
        }
        (6, true, Out::F32) if S::SPECIALIZE && job.x.dtype == DataType::E3M2 => {
            walk::<S, 6, 12, 0>(simd, job, begin, end, y)
        }
        (2, false, Out::F32) if S::SPECIALIZE => walk::<S, 2, 0, 0>(simd, job, begin, end, y),
        (8, false, Out::F16) if S::SPECIALIZE => walk::<S, 8, 0, 1>(simd, job, begin, end, y),
        (8, false, Out::Bf16) if S::SPECIALIZE => walk::<S, 8, 0, 2>(simd, job, begin, end, y),
        (4, false, Out::F16) if S::SPECIALIZE => walk::<S, 4, 0, 1>(simd, job, begin, end, y),
        (4, false, Out::Bf16) if S::SPECIALIZE => walk::<S, 4, 0, 2>(simd, job, begin, end, y),
        _ => walk::<S, 0, MINI_JOB, 3>(simd, job, begin, end, y),
    }
}

/// The block size when `[begin, end)` is whole blocks along the last axis, each a whole
/// number of vectors of codes, to f32, or of 4- or 8-bit integer codes to f16 / bf16 (MX
/// and weight blocks): the case of [`BlockedLast`].
fn blocked_last<S: Simd>(job: &Job<'_>, begin: usize, end: usize) -> Option<usize> {
    let half = job.mini.is_none() && matches!(job.x.dtype.bits(), 4 | 8);
    match job.layout {
        Layout::Blocked { axis_len, inner: 1, block, .. }
            if S::SPECIALIZE
                && (job.out == Out::F32 || half)
                && matches!(job.x.dtype.bits(), 2 | 4 | 6 | 8 | 16)
                && block.is_multiple_of(S::LANES)
                && axis_len.is_multiple_of(block)
                && begin.is_multiple_of(block)
                && end.is_multiple_of(block) =>
        {
            Some(block)
        }
        _ => None,
    }
}

/// Dequantize of whole blocks along the last axis ([`blocked_last`]): the scales of each
/// group of `LANES` blocks decoded as one vector, per block its zero point, then its
/// vectors, without the segment walk's per-run setup (which cost as much as a 32-element
/// block's own work). Block `k` is elements `[k B, (k + 1) B)`.
struct BlockedLast<'a, 'y> {
    job: Job<'a>,
    begin: usize,
    end: usize,
    y: &'y mut [u8],
    block: usize,
}

/// [`BlockedLast`] for codes of `BITS` bits, the float decoder `MINI` and the output `OUT`
/// (as in [`DequantizeOp`]; 0, 1, 2 only).
struct BlockedLastOf<'a, 'y, const BITS: u8, const MINI: u8, const OUT: u8>(BlockedLast<'a, 'y>);

impl<const BITS: u8, const MINI: u8, const OUT: u8> Kernel for BlockedLastOf<'_, '_, BITS, MINI, OUT> {
    type Output = ();
    #[inline(always)]
    fn run<S: Simd>(self, simd: S) {
        let BlockedLast { job, begin, end, y, block } = self.0;
        let (bits, lanes) = (BITS as usize, S::LANES);
        let out = [Out::F32, Out::F16, Out::Bf16][OUT as usize];
        let os = out.size();
        let mini = mini_format::<MINI>(&job);
        let mini = mini.as_ref();
        let signed = matches!(job.x.dtype, DataType::I8 | DataType::I4 | DataType::I16 | DataType::I2);
        let flip = simd.splat_i(if signed { 1 << (bits - 1) } else { 0 });
        // Float codes have no zero point (`Job::new`); saying so here drops its per-block
        // test from their loops.
        let zero_point = if MINI == 0 { job.zero_point } else { None };
        let xb = &job.x.data[begin * bits / 8..end * bits / 8];
        let yb = &mut y[..(end - begin) * os];
        let (xstep, ystep) = (block * bits / 8, block * os);
        // Blocks go in groups of `LANES`: the group's scales are decoded as one vector (one
        // load and, for e8m0, a few integer operations instead of a branchy scalar decode
        // per block) and its NaN test is made once; each block then broadcasts its lane.
        // (One iterator of blocks for the call, taken `LANES` at a time: chunks of a group
        // per group would divide twice a group to count its blocks.)
        let (k1, mut k0) = (end / block, begin / block);
        let mut blocks = xb.chunks_exact(xstep).zip(yb.chunks_exact_mut(ystep));
        // Four vectors per load and unpack (4-bit and 6-bit codes: MX's blocks of 32) or per
        // store (bytes to f16 / bf16: two packs for bf16 where one vector at a time took a
        // pack and an extract each), where blocks are whole such chunks; `one_x4` where a
        // block is one such chunk (blocks of 32 on AVX2: no chunk loop to set up). 2-bit
        // codes only where a block is one chunk, so that `x4` stays a constant false for
        // them: a run-time chunk test in the per-vector block loop cost AVX-512 u2 -> f32
        // blocked-last32 (two vectors a block, otherwise unchanged) 7 %.
        let x4 = (BITS == 4 || (BITS == 6 && S::U6X4) || BITS == 8) && xstep.is_multiple_of(4 * lanes * bits / 8);
        let one_x4 = (x4 || BITS == 2) && xstep == 4 * lanes * bits / 8;
        // The group's scales and zero points (plus the flip), a lane per block, written
        // whole by each group that reads them (zeroed once, not per group).
        let (mut sb, mut zb) = ([0u8; 64], [0u8; 64]);
        while k0 < k1 {
            // Whole groups take the loop of their own below, the rest the tail's loop. With
            // integer codes, only groups of finite scales: the loop then never
            // canonicalises NaN (`needs_canon`), a test less per block. Float codes keep
            // the group's test (without it MX e2m1 blocks measured 0.93x on AVX-512, 0.95x
            // on AVX2, memory-bound at 1 Mi, though a few instructions fewer per block).
            let mut canon = false;
            let whole = k1 - k0 >= lanes && {
                let v = job.scale_kind.load(simd, job.scale, k0);
                simd.store_f32(v, &mut sb);
                // Integer codes: the group's zero points (plus the sign flip) as one vector
                // too, or the flip alone, so that every block reads its lane. Where the
                // group starts on a byte of the zero points (the zero points have the codes'
                // type), by the compile-time width's load, as `z ^ flip` (`(z ^ flip) - flip
                // + flip`: the sign extension's subtraction and the flip's addition cancel);
                // a range may start at any block, so otherwise by the general load. Float
                // codes have the flip alone, in a register.
                if MINI == 0 {
                    let zf = match zero_point {
                        Some(zp) if (k0 * bits).is_multiple_of(8) => {
                            simd.xor_i(load_full(simd, BITS as u32, zp.data, k0), flip)
                        }
                        Some(zp) => simd.add_i(load_codes(simd, &zp, k0, lanes, true), flip),
                        None => flip,
                    };
                    simd.store_i32(zf, &mut zb);
                }
                canon = needs_canon(simd, mini, v);
                MINI != 0 || !canon
            };
            let n = lanes.min(k1 - k0);
            if whole {
                // A whole group in a loop of its own, each block broadcasting its scale and
                // zero point, without the per-block tests of the tail's loop below (they
                // cost about as much as a 32-element block's own work), and a loop per
                // chunking (a test per block cost 2-3 instructions in 60 on AVX2).
                let group = blocks.by_ref().take(n).zip(0..lanes);
                if one_x4 {
                    for ((xk, yk), t) in group {
                        let zf = if MINI == 0 { simd.splat_i(lane_i32(&zb, t)) } else { flip };
                        let p = (simd.splat(lane_f32(&sb, t)), zf, flip);
                        dequantize_x4::<S, BITS, MINI>(simd, xk, yk, p, mini, (out, canon));
                    }
                } else {
                    for ((xk, yk), t) in group {
                        let zf = if MINI == 0 { simd.splat_i(lane_i32(&zb, t)) } else { flip };
                        let p = (simd.splat(lane_f32(&sb, t)), zf, flip);
                        dequantize_block::<S, BITS, MINI>(simd, xk, yk, p, mini, (out, canon), x4);
                    }
                }
                k0 += n;
                continue;
            }
            for (k, (xk, yk)) in (k0..).zip(blocks.by_ref().take(n)) {
                let sc = simd.splat(job.scale_kind.get_inline(job.scale, k));
                let zf = match zero_point {
                    Some(zp) => simd.add_i(simd.splat_i(zero_point_at(&zp, k)), flip),
                    None => flip,
                };
                let canon = needs_canon(simd, mini, sc);
                dequantize_block::<S, BITS, MINI>(simd, xk, yk, (sc, zf, flip), mini, (out, canon), x4);
            }
            k0 += n;
        }
    }
}

/// One block of `BITS`-bit codes `xk` dequantized into `yk` by [`BlockedLast`], in chunks of
/// four vectors where `x4` ([`dequantize_x4`]), else a vector at a time. `p` is the block's
/// scale, `zf` and `flip` as in [`decode`]; `o` the output and whether it canonicalises NaN.
#[inline(always)]
fn dequantize_block<S: Simd, const BITS: u8, const MINI: u8>(
    simd: S,
    xk: &[u8],
    yk: &mut [u8],
    p: (S::F, S::I, S::I),
    mini: Option<&MiniFormat>,
    o: (Out, bool),
    x4: bool,
) {
    let (xv_len, yv_len) = (S::LANES * BITS as usize / 8, S::LANES * o.0.size());
    if x4 {
        for (xq, yq) in xk.chunks_exact(4 * xv_len).zip(yk.chunks_exact_mut(4 * yv_len)) {
            dequantize_x4::<S, BITS, MINI>(simd, xq, yq, p, mini, o);
        }
        return;
    }
    let (sc, zf, flip) = p;
    for (xv, yv) in xk.chunks_exact(xv_len).zip(yk.chunks_exact_mut(yv_len)) {
        let d = if const { BITS == 8 && MINI == 4 && S::E5M2_F16 } {
            // e5m2 by the f16 conversion, as in `steps`.
            simd.load_e5m2(xv)
        } else {
            decode(simd, load_full(simd, BITS as u32, xv, 0), flip, zf, mini, BITS as u32)
        };
        store_as(simd, o.0, simd.mul(d, sc), o.1, yv);
    }
}

/// Four vectors of `BITS`-bit codes `xq` (2, 4, 6 or 8 bits) dequantized into `yq`, as
/// [`dequantize_block`]: one load and unpack of the four (2-, 4- and 6-bit codes), one
/// store of the four ([`store_as_x4`]).
#[inline(always)]
fn dequantize_x4<S: Simd, const BITS: u8, const MINI: u8>(
    simd: S,
    xq: &[u8],
    yq: &mut [u8],
    p: (S::F, S::I, S::I),
    mini: Option<&MiniFormat>,
    o: (Out, bool),
) {
    let (sc, zf, flip) = p;
    // Exact lengths up front (the chunks have them), so that the loads and stores below
    // need no bounds checks.
    let (Some(xq), Some(yq)) = (xq.get(..4 * S::LANES * BITS as usize / 8), yq.get_mut(..4 * S::LANES * o.0.size()))
    else {
        return;
    };
    let int4 = BITS == 4 && mini.is_none();
    // (Constant conditions here and below: an unoptimised build then leaves out the code
    // of the variants that do not take it, and its stack slots.)
    if const { BITS == 4 && MINI != 0 && S::LUT16 } {
        // float4 e2m1 (the only 4-bit float format): the four vectors' values at once.
        return store_as_x4(simd, o.0, e2m1_x4_times(simd, xq, sc), o.1, yq);
    }
    if const { BITS == 6 && S::F6_X4 } {
        if let Some(f) = mini {
            // float6 by table lookups (`Simd::f6_x4`, see `steps`).
            return store_as_x4(simd, o.0, f6_x4_times(simd, xq, f, sc), o.1, yq);
        }
    }
    if const { BITS == 8 && MINI == 4 && S::E5M2_F16 } {
        // e5m2 by the f16 conversion (`Simd::load_e5m2`, see `steps`).
        let mut v = [sc; 4];
        for (k, vk) in v.iter_mut().enumerate() {
            *vk = simd.mul(simd.load_e5m2(&xq[k * S::LANES..]), sc);
        }
        return store_as_x4(simd, o.0, v, o.1, yq);
    }
    let c4 = match BITS {
        // (The integer offset applied as the codes unpack: `Simd::load_u4x4_sub`.)
        4 if int4 => simd.load_u4x4_sub(xq, flip, zf),
        4 => simd.load_u4x4(xq),
        2 => simd.load_2bit_x4::<false>(xq),
        6 => simd.load_u6x4(xq),
        _ => {
            let mut c = [flip; 4];
            for (t, ct) in c.iter_mut().enumerate() {
                *ct = load_full(simd, 8, xq, t * S::LANES);
            }
            c
        }
    };
    // (A loop, not `map`: closures do not inherit the ISA's target features.)
    let mut v = [sc; 4];
    for (vk, c) in v.iter_mut().zip(c4) {
        let d = if int4 { simd.cvt_f32(c) } else { decode(simd, c, flip, zf, mini, BITS as u32) };
        *vk = simd.mul(d, sc);
    }
    store_as_x4(simd, o.0, v, o.1, yq);
}

/// [`Simd::e2m1_x4`] of `xq` (float4 codes), each vector times the broadcast scale `sc`.
#[inline(always)]
fn e2m1_x4_times<S: Simd>(simd: S, xq: &[u8], sc: S::F) -> [S::F; 4] {
    let mut v = simd.e2m1_x4(xq);
    for vk in v.iter_mut() {
        *vk = simd.mul(*vk, sc);
    }
    v
}

/// [`Simd::f6_x4`] of `xq` (float6 codes of the format `f`), each vector times the broadcast
/// scale `sc`.
#[inline(always)]
fn f6_x4_times<S: Simd>(simd: S, xq: &[u8], f: &MiniFormat, sc: S::F) -> [S::F; 4] {
    let mut v = simd.f6_x4(xq, f);
    for vk in v.iter_mut() {
        *vk = simd.mul(*vk, sc);
    }
    v
}

/// Codes 0 to 15 as little-endian i32: the inputs of [`u4_half_table`].
const CODES16: [u8; 64] = {
    let mut t = [0u8; 64];
    let mut c = 0;
    while c < 16 {
        t[4 * c] = c as u8;
        c += 1;
    }
    t
};

/// Whether 4-bit integer codes to f16 / bf16 go through [`u4_half_table`] and
/// [`Simd::lut16_u16_x4`] (32 codes a lookup, so whole vectors of at least 8 lanes).
const fn u4_half_lookup<S: Simd>() -> bool {
    S::U4_TABLE16 && S::LANES.is_multiple_of(8) && S::LANES <= 16
}

/// The `out` (f16 or bf16) outputs of the 16 4-bit integer codes with the scale `sc` and the
/// offsets `flip` and `zf` of [`decode`] (every lane of each the same): entry `c` is what the
/// element path stores for code `c` (decode, multiply, NaN canonicalisation where `canon`,
/// rounding to `out`), so that a lookup gives the same bits. The table of
/// [`Simd::lut16_u16_x4`].
#[inline(always)]
fn u4_half_table<S: Simd>(simd: S, out: Out, sc: S::F, zf: S::I, flip: S::I, canon: bool) -> [u8; 32] {
    let mut t = [0u8; 32];
    for (h, th) in t.chunks_exact_mut(2 * S::LANES).enumerate() {
        let c = simd.load_i32(&CODES16[4 * h * S::LANES..]);
        let v = simd.mul(decode(simd, c, flip, zf, None, 4), sc);
        store_as(simd, out, v, canon, th);
    }
    t
}

/// Whether products `decode(x) * sc` need the NaN canonicalisation of [`store`]. Not where
/// every lane of `sc` is finite (`sc * 0` is NaN exactly where it is infinite or NaN) and
/// the decoder gives no NaN but the canonical one: integer codes (an integer times a finite
/// scale is never NaN) and the float formats without IEEE specials, whose NaN codes decode
/// to the canonical NaN, which the multiplication returns unchanged (x86 and NEON return a
/// NaN operand as it is, quiet; the portable ISA keeps the canonicalisation).
#[inline(always)]
fn needs_canon<S: Simd>(simd: S, mini: Option<&MiniFormat>, sc: S::F) -> bool {
    !S::SPECIALIZE || mini.is_some_and(|f| f.ieee) || simd.mask_bits(simd.is_nan(simd.mul(sc, simd.splat(0.0)))) != 0
}

/// The float decoder of variant `MINI`: none for 0, the format of `MiniFormat::of_id` for
/// 2 to 12 (its decode constants fold), otherwise the job's.
#[inline(always)]
fn mini_format<const MINI: u8>(job: &Job<'_>) -> Option<MiniFormat> {
    match MINI {
        0 => None,
        2..=12 => Some(MiniFormat::of_id(MINI)),
        _ => job.mini,
    }
}

/// The `MINI` of the variant that reads everything from the job (float codes or not).
const MINI_JOB: u8 = u8::MAX;

/// The walk of one compile-time variant, as a kernel of its own (see [`Simd::enter`]).
struct Walk<'a, 'y, const BITS: u8, const MINI: u8, const OUT: u8> {
    job: Job<'a>,
    begin: usize,
    end: usize,
    y: &'y mut [u8],
}

impl<const BITS: u8, const MINI: u8, const OUT: u8> Kernel for Walk<'_, '_, BITS, MINI, OUT> {
    type Output = ();
    #[inline(always)]
    fn run<S: Simd>(self, simd: S) {
        // A local copy: no store through `y` can alias it, so its fields stay in registers.
        let job = self.job;
        run_with::<S, BITS, MINI, OUT>(simd, &job, self.begin, self.end, self.y)
    }
}

/// [`run_with`] in a function of its own.
fn walk<S: Simd, const BITS: u8, const MINI: u8, const OUT: u8>(
    simd: S,
    job: &Job<'_>,
    begin: usize,
    end: usize,
    y: &mut [u8],
) {
    simd.enter(Walk::<BITS, MINI, OUT> { job: *job, begin, end, y })
}

#[inline(always)]
fn run_with<S: Simd, const BITS: u8, const MINI: u8, const OUT: u8>(
    simd: S,
    job: &Job<'_>,
    begin: usize,
    end: usize,
    y: &mut [u8],
) {
    let signed = matches!(job.x.dtype, DataType::I8 | DataType::I16 | DataType::I4 | DataType::I2);
    let gmask = crate::quantize::group(job.x.dtype) - 1;
    let n_scales = job.scale.len() / job.scale_kind.size();
    let mut op = DequantizeOp::<BITS, MINI, OUT> { job, signed, gmask, n_scales, begin, y };
    // Row tiles in the 2-, 4-, 8- and 16-bit integer and the float to f32 variants and the
    // run-time one (see `run`); a constant condition, so the other variants do not even
    // instantiate the tile kernel.
    if DequantizeOp::<BITS, MINI, OUT>::TILED {
        walk::walk_tiled(simd, op, job.layout, begin, end, tiled_channels::<S>(job));
    } else {
        walk::walk(simd, &mut op, crate::segments::Segments::new(job.layout, begin, end));
    }
}

/// [`walk::RowTiles::of`] for x's packing groups (counted from element 0).
fn tiled_channels<S: Simd>(job: &Job<'_>) -> Option<walk::RowTiles> {
    walk::RowTiles::of::<S>(job.layout, crate::quantize::group(job.x.dtype) - 1, 0)
}

/// DequantizeLinear's per-vector work for [`walk::walk`]: parameters are the scale and the
/// zero point; the body starts on a packing group of x (absolute element index). The
/// compile-time variant's input width (`BITS`, 0: the job's), float decoder (`MINI`: 0
/// none, 1 the job's float format, 2 to 12 a format of `MiniFormat::of_id`, [`MINI_JOB`]
/// whatever the job has) and output (`OUT`: 0 f32, 1 f16, 2 bf16, else the job's) fold into the
/// code.
struct DequantizeOp<'j, 'a, 'y, const BITS: u8, const MINI: u8, const OUT: u8> {
    job: &'j Job<'a>,
    signed: bool,
    gmask: usize,
    /// Scales in the job.
    n_scales: usize,
    begin: usize,
    y: &'y mut [u8],
}

impl<const BITS: u8, const MINI: u8, const OUT: u8> DequantizeOp<'_, '_, '_, BITS, MINI, OUT> {
    /// Whether the variant takes the row-tile layouts by channel tiles ([`walk::walk_tiled`]).
    const TILED: bool = (matches!(BITS, 2 | 4 | 8 | 16) && MINI == 0 && OUT == 0)
        || (matches!(BITS, 4 | 8) && MINI == 0 && matches!(OUT, 1 | 2))
        || (matches!(MINI, 2 | 4 | 6 | 8 | 10 | 11 | 12) && OUT == 0)
        || OUT == 3;

    #[inline(always)]
    fn bits(&self) -> u32 {
        if BITS == 0 {
            self.job.x.dtype.bits()
        } else {
            BITS as u32
        }
    }

    #[inline(always)]
    fn out(&self) -> Out {
        match OUT {
            0 => Out::F32,
            1 => Out::F16,
            2 => Out::Bf16,
            _ => self.job.out,
        }
    }
}

impl<S: Simd, const BITS: u8, const MINI: u8, const OUT: u8> RunOp<S> for DequantizeOp<'_, '_, '_, BITS, MINI, OUT> {
    type P = (S::F, S::I);

    #[inline(always)]
    fn head(&self, i: usize) -> usize {
        (self.gmask + 1 - (i & self.gmask)) & self.gmask
    }

    #[inline(always)]
    fn splat(&self, simd: S, k: usize) -> (S::F, S::I) {
        let z = match self.job.zero_point {
            Some(zp) => zero_point_at(&zp, k),
            None => 0,
        };
        (simd.splat(self.job.scale_kind.get(self.job.scale, k)), simd.splat_i(z))
    }

    #[inline(always)]
    fn seq(&self, simd: S, k: usize, take: usize) -> (S::F, S::I) {
        let job = self.job;
        let sc = if take == S::LANES && k + S::LANES <= self.n_scales {
            job.scale_kind.load(simd, job.scale, k)
        } else {
            let mut tmp = [0u8; 64];
            for t in 0..take {
                tmp[4 * t..4 * t + 4].copy_from_slice(&job.scale_kind.get(job.scale, k + t).to_le_bytes());
            }
            simd.load_f32(&tmp)
        };
        // A `match`, not `map_or`: closures do not inherit the ISA's target features.
        let z = match job.zero_point.as_ref() {
            Some(zp) => load_codes(simd, zp, k, take, true),
            None => simd.splat_i(0),
        };
        (sc, z)
    }

    /// Whole vectors of scales inside the tensor take [`TileParams`] (no dispatch on the
    /// zero points' type and no bounds test per vector: [`RunOp::seq`]'s general path cost
    /// about 110 instructions a vector, once per tile and group of rows); the rest
    /// [`walk::seq_each`].
    #[inline(always)]
    fn seq_tiles(&self, simd: S, k: usize, p: &mut [(S::F, S::I)], valid: usize) {
        let (job, lanes) = (self.job, S::LANES);
        let zp_ok = match job.zero_point {
            Some(zp) => (k * BITS as usize).is_multiple_of(8) && k + valid <= zp.len,
            None => true,
        };
        if BITS != 0 && zp_ok && valid == p.len() * lanes && k + valid <= self.n_scales {
            let params = TileParams::<BITS, S> { job, signed: self.signed, k, p };
            return if S::TILE_PARAMS_APART { simd.enter(params) } else { params.run_on(simd) };
        }
        walk::seq_each(simd, self, k, p, valid)
    }

    #[inline(always)]
    fn part(&mut self, simd: S, p: &(S::F, S::I), _k: usize, i: usize, take: usize) {
        let v = dequantize_vec(simd, self.job, i, take, p.0, p.1);
        store_out(simd, self.out(), v, self.y, i - self.begin, take);
    }

    #[inline(always)]
    fn row(&mut self, simd: S, p: &[(S::F, S::I)], k: usize, i: usize) {
        self.rows(simd, p, k, i, 1);
    }

    #[inline(always)]
    fn rows(&mut self, simd: S, p: &[(S::F, S::I)], _k: usize, i: usize, nrows: usize) {
        // Exactly the rows' bytes, chunked: no bounds checks per vector.
        let (bits, out) = (self.bits(), self.out());
        let mini = mini_format::<MINI>(self.job);
        let flip = simd.splat_i(if self.signed { 1 << (bits - 1) } else { 0 });
        let (lanes, os, xbits) = (S::LANES, out.size(), bits as usize);
        let len = p.len() * lanes;
        if len == 0 {
            // A tile of one partial vector: no whole vector (and no zero-sized chunks).
            return;
        }
        // The NaN canonicalisation decided once for the tile's scales (every row shares
        // them), in the compile-time variants (the run-time one keeps it: a test per vector
        // cost it more than it saved).
        let mut canon = MINI == MINI_JOB;
        for &(sc, _) in p.iter().take(if canon { 0 } else { p.len() }) {
            canon |= needs_canon(simd, mini.as_ref(), sc);
        }
        let xb = &self.job.x.data[i * xbits / 8..(i + nrows * len) * xbits / 8];
        let yb = &mut self.y[(i - self.begin) * os..(i - self.begin + nrows * len) * os];
        let rows = walk::RowPairs::new(xb, yb, len * xbits / 8, len * os);
        if const { S::U4X4_ROWS && matches!(BITS, 2 | 4) }
            && p.len().is_multiple_of(4)
            && (out != Out::Bf16 || S::PACK16_X4)
            && !canon
        {
            // 4-bit codes four vectors per load and per store: integers by [`packed_rows`]
            // (2-bit codes too: AVX2 per-axis-last64 2.45 -> 1.20 instructions per element),
            // float4 e2m1 through `Simd::e2m1_x4` (on ISAs without it, the loop at the
            // end); tiles whose products need the NaN canonicalisation take the loop at
            // the end too (no test of it per step here: AVX2 i4 -> f32 blocked-middle32
            // 2.33 -> 2.27 instructions per element, 1.12x; per-axis-last64 1.48 -> 1.40,
            // 1.16x; MX e2m1 blocked-middle32 1.06x).
            let (pq, _) = p.as_chunks::<4>();
            if MINI == 0 {
                match self.signed {
                    true => packed_rows::<S, BITS, true>(simd, rows, pq, out),
                    false => packed_rows::<S, BITS, false>(simd, rows, pq, out),
                }
                return;
            }
            if const { S::LUT16 && BITS == 4 } {
                let (qx, qy) = (2 * lanes, 4 * lanes * os);
                for (xr, yr) in rows {
                    for ((xq, yq), pt) in xr.chunks_exact(qx).zip(yr.chunks_exact_mut(qy)).zip(pq) {
                        let mut v = simd.e2m1_x4(xq);
                        for (vk, &(sc, _)) in v.iter_mut().zip(pt) {
                            *vk = simd.mul(*vk, sc);
                        }
                        store_as_x4(simd, out, v, false, yq);
                    }
                }
                return;
            }
        }
        if const { BITS == 6 && S::F6_X4 } && p.len().is_multiple_of(4) && !canon {
            if let Some(f) = mini {
                // float6 four vectors per load and per store by table lookups
                // (`Simd::f6_x4`).
                let (pq, _) = p.as_chunks::<4>();
                let (qx, qy) = (3 * lanes, 4 * lanes * os);
                for (xr, yr) in rows {
                    for ((xq, yq), pt) in xr.chunks_exact(qx).zip(yr.chunks_exact_mut(qy)).zip(pq) {
                        let mut v = simd.f6_x4(xq, &f);
                        for (vk, &(sc, _)) in v.iter_mut().zip(pt) {
                            *vk = simd.mul(*vk, sc);
                        }
                        store_as_x4(simd, out, v, false, yq);
                    }
                }
                return;
            }
        }
        if S::PACK16_X4 && out == Out::Bf16 && p.len().is_multiple_of(4) && !canon {
            // bf16 four vectors per store ([`store_as_x4`]: on AVX2 two packs where one
            // vector at a time took a pack and an extract each; AVX-512 narrows a vector
            // per store anyway). (Indexed steps: chunks zipped per row were a call per row
            // on AVX-512, outside the inlining budget.) Scales that need the NaN
            // canonicalisation take the loop below: no test of it per step here (AVX2 i8 ->
            // bf16 per-axis-last64: 1.96 -> 1.82 instructions per element).
            let (pq, _) = p.as_chunks::<4>();
            let mini = mini.as_ref();
            if self.signed && mini.is_none() && matches!(bits, 8 | 16) {
                bf16_rows_x4::<S, true>(simd, rows, pq, bits, flip, mini);
            } else {
                bf16_rows_x4::<S, false>(simd, rows, pq, bits, flip, mini);
            }
            return;
        }
        if const { matches!(BITS, 8 | 16) && MINI == 0 } {
            // 8- and 16-bit integer codes extended by their loads ([`ext_rows`]): no flip,
            // and no `z + flip` per vector and row. (To f32 this loop once measured
            // 0.82-0.91x on blocked-middle32; with the tiles' parameters loaded whole and
            // the rows split without divisions it runs AVX2 i8 -> f32 blocked-middle32
            // 1.04x, per-axis-last64 1.09x, i16 1.06x; 1.99 -> 1.78 and 1.43 -> 1.15
            // instructions per element.)
            match self.signed {
                true => ext_rows::<S, true>(simd, rows, p, bits, out, canon),
                false => ext_rows::<S, false>(simd, rows, p, bits, out, canon),
            }
            return;
        }
        if MINI == 4 && S::E5M2_F16 {
            // e5m2 by the f16 conversion, as in `steps` (AVX2 per-axis-last64 2.61 -> 1.48
            // instructions per element).
            for (xr, yr) in rows {
                for ((xq, yq), &(sc, _)) in xr.chunks_exact(lanes).zip(yr.chunks_exact_mut(lanes * os)).zip(p) {
                    store_as(simd, out, simd.mul(simd.load_e5m2(xq), sc), canon, yq);
                }
            }
            return;
        }
        for (xr, yr) in rows {
            for ((xq, yq), &(sc, z)) in xr.chunks_exact(lanes * xbits / 8).zip(yr.chunks_exact_mut(lanes * os)).zip(p) {
                let d = load_decode::<S, false>(simd, xq, 0, bits, (flip, z), mini.as_ref());
                store_as(simd, out, simd.mul(d, sc), canon, yq);
            }
        }
    }

    /// A whole vector on a packing group (the per-lane runs of per-axis and blocked
    /// layouts): a row of one, with the compile-time width's load and the decoder of
    /// [`RunOp::steps`], instead of [`RunOp::part`]'s general code load and partial store.
    #[inline(always)]
    fn vector(&mut self, simd: S, p: &(S::F, S::I), k: usize, i: usize) {
        self.row(simd, core::slice::from_ref(p), k, i);
    }

    #[inline(always)]
    fn steps(&mut self, simd: S, p: &(S::F, S::I), _k: usize, i: usize, n: usize) {
        // Whole steps of four vectors over exactly their bytes (chunked iteration: no
        // bounds checks in the loop). A loop per step the optimiser unrolls, and an
        // unoptimised build keeps one copy of the vector code.
        let (sc, z) = *p;
        let (bits, out) = (self.bits(), self.out());
        let mini = mini_format::<MINI>(self.job);
        let mini = mini.as_ref();
        let flip = simd.splat_i(if self.signed { 1 << (bits - 1) } else { 0 });
        let zf = simd.add_i(z, flip);
        let canon = needs_canon(simd, mini, sc);
        let (lanes, os, xbits) = (S::LANES, out.size(), bits as usize);
        let xb = &self.job.x.data[i * xbits / 8..(i + n * 4 * lanes) * xbits / 8];
        let yb = &mut self.y[(i - self.begin) * os..(i - self.begin + n * 4 * lanes) * os];
        let steps = xb.chunks_exact(4 * lanes * xbits / 8).zip(yb.chunks_exact_mut(4 * lanes * os));
        if const { BITS == 6 && S::F6_X4 } {
            if let Some(f) = mini {
                // float6 by table lookups (`Simd::f6_x4`): the values of the 32 codes of a
                // step exactly, then the product (AVX2 e2m3 -> f32 per-tensor: 2.55 -> 1.44
                // instructions per element, 1.3x; blocked-last32 with e8m0 scales 1.5x).
                for (xq, yq) in steps {
                    store_as_x4(simd, out, f6_x4_times(simd, xq, f, sc), canon, yq);
                }
                return;
            }
        }
        // (`fold_scale` outside any closure: closures do not inherit the ISA's target
        // features; the `map` only pairs values.)
        let fold = match mini {
            // (`MINI != 0` first: integer variants do not instantiate the loop below.)
            Some(f) if MINI != 0 => fold_scale(simd, sc, f).map(|s| (f, s)),
            _ => None,
        };
        if let Some((f, s)) = fold {
            // Float codes with the decoder's rebias folded into the scale: one multiply. A
            // loop of its own: one loop choosing per vector was not unswitched (e4m3fn->f32,
            // AVX2: 1.35 -> 1.44 instructions per element).
            for (xq, yq) in steps {
                let mut v = [sc; 4];
                for (k, vk) in v.iter_mut().enumerate() {
                    *vk = decode_minifloat_times(simd, load_full(simd, bits, xq, k * lanes), f, s);
                }
                for (k, vk) in v.into_iter().enumerate() {
                    store_as(simd, out, vk, canon, &mut yq[k * lanes * os..]);
                }
            }
            return;
        }
        if MINI == 4 && S::E5M2_F16 {
            // e5m2 by the f16 conversion (`Simd::load_e5m2`): fewer operations than the
            // arithmetic decoder, and no subnormal f32 operand in a multiply. The blocked
            // groups' four-vector step ([`dequantize_x4`]) does exactly that.
            for (xq, yq) in steps {
                dequantize_x4::<S, BITS, MINI>(simd, xq, yq, (sc, zf, flip), mini, (out, canon));
            }
            return;
        }
        if const { BITS == 4 && MINI == 0 && matches!(OUT, 1 | 2) && u4_half_lookup::<S>() } {
            // 4-bit integers to f16 / bf16: the 16 possible values once, then lookups of 32
            // codes (whole steps are 32 codes or a multiple).
            let t = u4_half_table(simd, out, sc, zf, flip, canon);
            for (xq, yq) in xb.chunks_exact(16).zip(yb.chunks_exact_mut(64)) {
                simd.lut16_u16_x4(&t, xq, yq);
            }
            return;
        }
        if const { BITS == 2 && MINI == 0 } {
            // 2-bit integer codes by the four-vector load (sign-extended where signed): one
            // subtraction of z per vector, without the generic decoder's exclusive or
            // (AVX2 u2 -> f32 per-tensor: 1.83 -> 1.18 instructions per element, 1.5-2.0x).
            match self.signed {
                true => crumb_steps::<S, true>(simd, steps, (sc, z), out, canon),
                false => crumb_steps::<S, false>(simd, steps, (sc, z), out, canon),
            }
            return;
        }
        if const { matches!(BITS, 8 | 16) && MINI == 0 } {
            // 8- and 16-bit integer codes extended by their loads (sign-extended where
            // signed): one subtraction of z per vector, without the generic decoder's
            // exclusive or. A loop per signedness.
            //
            // To f16 / bf16 a loop without the NaN canonicalisation's test per step where
            // the scale is finite (AVX2 i8 -> f16 0.97 -> 0.72 instructions per element, i8
            // -> bf16 1.66 -> 1.47 and 1.02x), and one with it otherwise (rather than the
            // generic loop below, which an unoptimised build would then keep in these
            // variants, 8 KiB more stack). To f32 the test stays: the tighter loop,
            // memory-bound, measured 0.90-0.94x for 8-bit codes at 1 Mi on Zen 4 (L3).
            let plain = OUT != 0 && !canon;
            match (self.signed, plain) {
                (true, true) => ext_steps::<S, true>(simd, steps, bits, (sc, z), out, false),
                (false, true) => ext_steps::<S, false>(simd, steps, bits, (sc, z), out, false),
                (true, false) => ext_steps::<S, true>(simd, steps, bits, (sc, z), out, canon),
                (false, false) => ext_steps::<S, false>(simd, steps, bits, (sc, z), out, canon),
            }
            return;
        }
        if const { BITS == 4 && MINI != 0 && S::LUT16 } {
            // float4 e2m1 (the only 4-bit float format): the four vectors' values at once.
            for (xq, yq) in steps {
                store_as_x4(simd, out, e2m1_x4_times(simd, xq, sc), canon, yq);
            }
            return;
        }
        for (xq, yq) in steps {
            let mut v = [sc; 4];
            // 4- and 6-bit codes: one load and unpack for the four vectors.
            let int4 = bits == 4 && mini.is_none();
            let c4 = match bits {
                // (The integer offset applied as the codes unpack: `Simd::load_u4x4_sub`.)
                4 if int4 => Some(simd.load_u4x4_sub(xq, flip, zf)),
                4 => Some(simd.load_u4x4(xq)),
                6 if S::U6X4 => Some(simd.load_u6x4(xq)),
                _ => None,
            };
            for (k, vk) in v.iter_mut().enumerate() {
                let d = match c4 {
                    Some(c4) if int4 => simd.cvt_f32(c4[k]),
                    Some(c4) => decode(simd, c4[k], flip, zf, mini, bits),
                    None => decode(simd, load_full(simd, bits, xq, k * lanes), flip, zf, mini, bits),
                };
                *vk = simd.mul(d, sc);
            }
            store_as_x4(simd, out, v, canon, yq);
        }
    }
}

/// Stores the first `valid` lanes of `v` as `out` at element `e` of `y`.
#[inline(always)]
pub(crate) fn store_out<S: Simd>(simd: S, out: Out, v: S::F, y: &mut [u8], e: usize, valid: usize) {
    let os = out.size();
    if valid == S::LANES {
        store(simd, out, v, &mut y[e * os..(e + S::LANES) * os]);
    } else {
        let mut tmp = [0u8; 64];
        store(simd, out, v, &mut tmp);
        y[e * os..(e + valid) * os].copy_from_slice(&tmp[..valid * os]);
    }
}
