//! The kernels of the quantizers that compute their own scales ([`qdq_ref::scaled`] states
//! every formula), written once over [`Simd`]:
//!
//! ```text
//! for each part of whole block rows (in parallel; a block row is one block of every column):
//!   blocks along the last axis (Contig), per group of 16 blocks:
//!     stats:  per block, lo / hi (NaN-skipping min / max, 0 included) or max |x| bits (NaN first)
//!     params: the scale rule -> the caller's scale and zero-point buffers
//!     codes:  QuantizeLinear's vector code per block with those parameters broadcast
//!   f32 x, blocks of whole vectors, whole blocks (any other block: Contig, alone):
//!     MX floor rule (MxRun), per block (two at a time when a block is two vectors):
//!       a = max |x| bits; c = clamp(exp(a) - 127 - emax, -127, 127) + 127   (normal a only)
//!       codes = encode(x * 2^(127 - c)), four vectors a store
//!     symmetric / asymmetric rules, f32 scales (BlockRun), NVFP4 (Nvfp4Run), LANES blocks
//!     at a time: per block its statistics; the group's parameters as one vector (lane j
//!     is block j); per block its codes with lane j broadcast
//!   blocks along an outer axis, f32 x (OrtWide): the onnxruntime mode over the leading
//!   columns that fill groups of 4 vectors (the rest in strips of up to 64 columns, below),
//!   the symmetric / asymmetric rules with f32 scales where every row is such groups; units
//!   of up to 1024 columns of one block row, row by row (runs of memory):
//!     stats of unit 0;  for each unit u: its parameters per lane, then for each row j:
//!     codes of row j of u, stats of row j of u + 1 (streaming in while u is in cache)
//!     (stats: per column min and max; the symmetric rule, max |x| alone)
//!     onnxruntime mode:   q = x * r;  NaN or q >= 2^31 -> qmin (x86's conversion), else
//!                         c = trunc(clamp(q, qmin - z, qmax - z) + copysign(1/2-, q)) + z
//!                         (4 vectors of fast-range scales: |q| <= 16, no 2^31 test)
//!     symmetric / asym.:  QuantizeLinear's integer code with per-column scales (4 vectors
//!                         of fast-range scales, 8- or 4-bit: the range steps, as BlockRun's)
//!   other layouts, per tile of block rows (about 4096 elements, so the second read hits L1):
//!     the same statistics and rule, then QuantizeLinear's kernel over the tile
//!     (the onnxruntime mode: its own element rule on the same segment walk)
//! per-row 8-bit: row r's codes on the 8-bit fast path while row r + 1's min / max accumulate
//! ```
//!
//! Statistics are exact (minima and maxima of values or bit patterns). The parameters come
//! from `qdq_ref`'s functions, or, for the MX floor rule and NVFP4's block scale on ordinary
//! amax values, from inline twins that the unit tests compare with them ([`FastRule`]), or,
//! in the vector kernels, from the same IEEE operations per lane in the same order (the
//! differential tests include every rounding tie of the e4m3fn block scale, and elements
//! on onnxruntime's half-away ties; a unit test checks that rounding identity itself).
//! The codes come from the QuantizeLinear kernels the differential tests pin down (a
//! power-of-two scale divides by one multiplication with its exact reciprocal: the same
//! real number, rounded once), except the onnxruntime mode's, whose own element rule is
//! above. So every ISA and thread count gives the reference's bits.

use crate::codec::{MiniFormat, MINI_RUNTIME};
use crate::config::Cost;
use crate::isa::{self, Kernel};
use crate::quantize::{
    self, e8m0_value, fast_lanes, load_codes, store_codes, BlockScale, Encode, Job, Lanes, Prec, ScaleKind, Spec, Src,
    ANY,
};
use crate::segments::Segments;
use crate::simd::{lane_f32, lane_i32, Simd};
use crate::threads::for_parts;
use crate::walk::{self, RunOp};
use crate::Config;
use qdq_ref::scaled::{self as r, BlockMode, Rows, ScaleRounding};
use qdq_ref::{packing, DataType, Layout, Packed, Precision};

/// Elements per tile: statistics, then codes, while the tile is in L1.
const TILE: usize = 4096;

/// What a block's parameters come from.
#[derive(Clone, Copy, Debug)]
pub(crate) enum Rule {
    /// [`qdq_ref::scaled::block_params`] with this mode and scale type.
    Block { mode: BlockMode, scale_type: DataType },
    /// [`qdq_ref::scaled::mx_scale`].
    Mx { rounding: ScaleRounding },
    /// [`qdq_ref::scaled::nvfp4_block_scale`] with this global scale.
    Nvfp4 { global: f32 },
}

impl Rule {
    /// Whether the rule reads `(lo, hi)` (else `amax_nan`).
    fn wants_range(self) -> bool {
        matches!(self, Rule::Block { .. })
    }

    /// Bytes per stored scale.
    pub(crate) fn scale_size(self) -> usize {
        match self {
            Rule::Block { scale_type, .. } => scale_type.bits() as usize / 8,
            _ => 1,
        }
    }
}

// ---------------------------------------------------------------------------------------
// Statistics
// ---------------------------------------------------------------------------------------

/// `|x|`'s bit pattern (NaN patterns order above +inf's, above every finite one).
#[inline(always)]
fn abs_bits<S: Simd>(simd: S, v: S::F) -> S::I {
    simd.and_i(simd.bits(v), simd.splat_i(i32::MAX))
}

/// The statistics of `len` consecutive elements of type `src` in `x`: `(lo, hi)` (wants
/// range) or `(amax_nan, amax_nan)`. The common case (f32, range) has its own copy of the
/// loop, so that neither switch is read per vector.
#[inline(always)]
fn stats_contig<S: Simd>(simd: S, src: Src, x: &[u8], range: bool) -> (f32, f32) {
    match (src, range) {
        (Src::F32, true) => stats_contig_with::<S, true, true>(simd, src, x),
        (_, true) => stats_contig_with::<S, false, true>(simd, src, x),
        (_, false) => stats_contig_with::<S, false, false>(simd, src, x),
    }
}

/// [`stats_contig`] with compile-time switches (`F32`: the source is f32).
#[inline(always)]
fn stats_contig_with<S: Simd, const F32: bool, const RANGE: bool>(simd: S, src: Src, x: &[u8]) -> (f32, f32) {
    let src = if F32 { Src::F32 } else { src };
    let range = RANGE;
    let (xs, lanes) = (src.size(), S::LANES);
    let vb = lanes * xs;
    let zero = simd.splat(0.0);
    let (mut lo, mut hi) = ([zero; 4], [zero; 4]);
    let mut am = [simd.splat_i(0); 4];
    let mut chunks = x.chunks_exact(4 * vb);
    for c in &mut chunks {
        for k in 0..4 {
            let v = src.load(simd, &c[k * vb..(k + 1) * vb]);
            if range {
                // `min(v, acc)` keeps `acc` for a NaN `v` (the Simd contract).
                lo[k] = simd.min(v, lo[k]);
                hi[k] = simd.max(v, hi[k]);
            } else {
                am[k] = simd.max_i(abs_bits(simd, v), am[k]);
            }
        }
    }
    let mut singles = chunks.remainder().chunks_exact(vb);
    for c in &mut singles {
        let v = src.load(simd, c);
        if range {
            lo[0] = simd.min(v, lo[0]);
            hi[0] = simd.max(v, hi[0]);
        } else {
            am[0] = simd.max_i(abs_bits(simd, v), am[0]);
        }
    }
    let tail = singles.remainder();
    if !tail.is_empty() {
        // The tail padded with zeros, neutral for both statistics.
        let mut t = [0u8; 128];
        t[..tail.len()].copy_from_slice(tail);
        let v = src.load(simd, &t[..vb]);
        if range {
            lo[0] = simd.min(v, lo[0]);
            hi[0] = simd.max(v, hi[0]);
        } else {
            am[0] = simd.max_i(abs_bits(simd, v), am[0]);
        }
    }
    if range {
        reduce_range(simd, &lo, &hi)
    } else {
        // Magnitude bits are non-negative as i32 (NaN patterns included).
        let m = simd.max_i(simd.max_i(am[0], am[1]), simd.max_i(am[2], am[3]));
        let a = f32::from_bits(simd.hmax_i(m) as u32);
        (a, a)
    }
}

/// The minimum and maximum over the lanes of four accumulator pairs (which started at 0 and
/// skipped NaN, so no lane is NaN).
#[inline(always)]
fn reduce_range<S: Simd>(simd: S, lo: &[S::F; 4], hi: &[S::F; 4]) -> (f32, f32) {
    // The lanes are numbers (NaN-skipping accumulators); which of ±0 comes out plays no
    // part in any rule.
    let l = simd.min(simd.min(lo[0], lo[1]), simd.min(lo[2], lo[3]));
    let h = simd.max(simd.max(hi[0], hi[1]), simd.max(hi[2], hi[3]));
    (simd.hmin(l).min(0.0), simd.hmax(h).max(0.0))
}

/// Per-column statistics of a strip: `rows` rows of `w <= 4 * LANES` columns, row `j`
/// starting at byte `j * stride` of `x`. Writes `(lo, hi)` or `(amax_nan, amax_nan)` of
/// column `c` to `out[c]`.
#[inline(always)]
#[allow(clippy::too_many_arguments)]
fn stats_strip<S: Simd>(
    simd: S,
    src: Src,
    x: &[u8],
    rows: usize,
    stride: usize,
    w: usize,
    range: bool,
    out: &mut [(f32, f32); 64],
) {
    let (xs, lanes) = (src.size(), S::LANES);
    let vb = lanes * xs;
    let nv = w.div_ceil(lanes);
    let zero = simd.splat(0.0);
    let (mut lo, mut hi) = ([zero; 4], [zero; 4]);
    let mut am = [simd.splat_i(0); 4];
    let full = w == nv * lanes;
    for j in 0..rows {
        let row = &x[j * stride..];
        for v in 0..nv {
            let val = if full || (v + 1) * lanes <= w {
                src.load(simd, &row[v * vb..(v + 1) * vb])
            } else {
                let mut t = [0u8; 128];
                let n = (w - v * lanes) * xs;
                t[..n].copy_from_slice(&row[v * vb..v * vb + n]);
                src.load(simd, &t[..vb])
            };
            if range {
                lo[v] = simd.min(val, lo[v]);
                hi[v] = simd.max(val, hi[v]);
            } else {
                am[v] = simd.max_i(abs_bits(simd, val), am[v]);
            }
        }
    }
    let mut b = [0u8; 64];
    let mut c = [0u8; 64];
    for v in 0..nv {
        let n = lanes.min(w - v * lanes);
        if range {
            simd.store_f32(lo[v], &mut b);
            simd.store_f32(hi[v], &mut c);
            for t in 0..n {
                out[v * lanes + t] = (lane_f32(&b, t), lane_f32(&c, t));
            }
        } else {
            simd.store_i32(am[v], &mut b);
            for t in 0..n {
                let a = lane_f32(&b, t);
                out[v * lanes + t] = (a, a);
            }
        }
    }
}

/// `amax_nan` of a whole buffer (the NVFP4 global scale).
pub(crate) struct AbsMax<'a> {
    pub src: Src,
    pub x: &'a [u8],
}

impl Kernel for AbsMax<'_> {
    type Output = f32;
    #[inline(always)]
    fn run<S: Simd>(self, simd: S) -> f32 {
        stats_contig(simd, self.src, self.x, false).0
    }
}

/// `amax_nan` of x (elements of type `src`), in parallel parts folded by the maximum of
/// their bit patterns (exact and order-independent).
pub(crate) fn abs_max(cfg: &Config<'_>, isa: isa::Isa, src: Src, x: &[u8]) -> f32 {
    let xs = src.size();
    let n = x.len() / xs;
    match cfg.chunk(n, Cost::Cheap) {
        None => isa::dispatch(isa, AbsMax { src, x }),
        Some(per) => {
            let best = std::sync::atomic::AtomicU32::new(0);
            let count = n.div_ceil(per);
            for_parts(cfg, count, &mut x.chunks(per * xs), &|_, c| {
                let a = isa::dispatch(isa, AbsMax { src, x: c });
                best.fetch_max(a.to_bits(), std::sync::atomic::Ordering::Relaxed);
            });
            f32::from_bits(best.into_inner())
        }
    }
}

// ---------------------------------------------------------------------------------------
// Per-row quantization
// ---------------------------------------------------------------------------------------

/// Rows `[0, rows)` of a part: x from the part's first row (row stride `stride` elements),
/// y, scales and zero points of exactly those rows.
pub(crate) struct RowPart<'a> {
    pub src: Src,
    pub x_type: DataType,
    pub x: &'a [u8],
    pub rows: usize,
    pub cols: usize,
    pub stride: usize,
    pub out: DataType,
    pub y: &'a mut [u8],
    pub scales: &'a mut [f32],
    pub zero_points: Option<&'a mut [u8]>,
}

impl Kernel for RowPart<'_> {
    type Output = ();
    #[inline(always)]
    fn run<S: Simd>(self, simd: S) {
        let RowPart { src, x_type, x, rows, cols, stride, out, y, scales, mut zero_points } = self;
        let xs = src.size();
        if S::SPECIALIZE && S::HAS_FMA && src == Src::F32 && out.bits() == 8 && out.int_range().is_some() {
            return simd.enter(RowsSat8(RowPart { src, x_type, x, rows, cols, stride, out, y, scales, zero_points }));
        }
        for r in 0..rows {
            let xr = &x[r * stride * xs..(r * stride + cols) * xs];
            let (lo, hi) = stats_contig(simd, src, xr, true);
            let (s, z) = row_params(r, (lo, hi), out, scales, zero_points.as_deref_mut());
            let (sb, zb) = (s.to_le_bytes(), [z as u8]);
            if let Some(job) = row_job(x_type, xr, out, &sb, &zb) {
                quantize::run(simd, &job, 0, cols, &mut y[r * cols..(r + 1) * cols]);
            }
        }
    }
}

/// Row `r`'s parameters from its `(lo, hi)`, stored in the caller's buffers.
fn row_params(r: usize, (lo, hi): (f32, f32), out: DataType, scales: &mut [f32], zp: Option<&mut [u8]>) -> (f32, i32) {
    let (s, z) = r::row_params(lo, hi, out);
    scales[r] = s;
    if let Some(zp) = zp {
        zp[r] = z as u8;
    }
    (s, z)
}

/// QuantizeLinear of one row `xr` with its stored scale bytes `sb` (and, for u8, zero point
/// `zb`).
fn row_job<'a>(x_type: DataType, xr: &'a [u8], out: DataType, sb: &'a [u8; 4], zb: &'a [u8; 1]) -> Option<Job<'a>> {
    let zpp = (out == DataType::U8).then_some(Packed { dtype: DataType::U8, len: 1, data: zb });
    Job::new(x_type, xr, DataType::F32, sb, zpp, Layout::PerTensor, out, true, Precision::F32)
}

/// Per-row quantization of f32 rows to an 8-bit integer type: each row's codes on the 8-bit
/// fast path of QuantizeLinear, with the next row's statistics read in the same loop
/// ([`quantize::sat8_loop_with_range`]), so a row is read from memory once and then from L1.
/// Rows whose scale is outside the fast range, and the tails past the whole four-vector
/// steps, take the general kernels. (A kernel of its own, entered from [`RowPart`]: an
/// unoptimised build gives each its own frame.)
struct RowsSat8<'a>(RowPart<'a>);

impl Kernel for RowsSat8<'_> {
    type Output = ();
    #[inline(always)]
    fn run<S: Simd>(self, simd: S) {
        let RowPart { x, rows, cols, stride, out, y, scales, mut zero_points, .. } = self.0;
        let step = 4 * S::LANES;
        let whole = cols / step * step;
        let signed = out == DataType::I8;
        let row = |r: usize| &x[r * stride * 4..(r * stride + cols) * 4];
        let mut range = stats_contig(simd, Src::F32, row(0), true);
        for r in 0..rows {
            let xr = row(r);
            let (s, z) = row_params(r, range, out, scales, zero_points.as_deref_mut());
            let (sb, zb) = (s.to_le_bytes(), [z as u8]);
            let Some(job) = row_job(DataType::F32, xr, out, &sb, &zb) else { return };
            let yr = &mut y[r * cols..(r + 1) * cols];
            let p = quantize::BlockScale::new(s, z).lanes(simd, job.enc);
            let finite = range.0.is_finite() && range.1.is_finite();
            if !p.fast || !finite || whole == 0 || r + 1 == rows {
                quantize::run(simd, &job, 0, cols, yr);
                if r + 1 < rows {
                    range = stats_contig(simd, Src::F32, row(r + 1), true);
                }
                continue;
            }
            let next = row(r + 1);
            let zero = simd.splat(0.0);
            let (mut lo, mut hi) = ([zero; 4], [zero; 4]);
            let sp = Spec::resolve::<0, 0, 8>(&job);
            let (xw, yw) = (&xr[..whole * 4], &mut yr[..whole]);
            let acc = (&mut lo, &mut hi);
            // The scale is this row's own, from its finite range, as the loop asks.
            if signed {
                quantize::sat8_loop_with_range::<S, true>(simd, &sp, xw, yw, &p, &next[..whole * 4], acc);
            } else {
                quantize::sat8_loop_with_range::<S, false>(simd, &sp, xw, yw, &p, &next[..whole * 4], acc);
            }
            if whole < cols {
                quantize::run(simd, &job, whole, cols, &mut yr[whole..]);
            }
            let (l0, h0) = reduce_range(simd, &lo, &hi);
            let (l1, h1) = stats_contig(simd, Src::F32, &next[whole * 4..], true);
            range = (l0.min(l1), h0.max(h1));
        }
    }
}

/// Per-row quantization, validated: parts of whole rows on `cfg`'s executor.
#[allow(clippy::too_many_arguments)]
pub(crate) fn rows(
    cfg: &Config<'_>,
    isa: isa::Isa,
    x_type: DataType,
    x: &[u8],
    rows: Rows,
    out: DataType,
    y: &mut [u8],
    scales: &mut [f32],
    zero_points: Option<&mut [u8]>,
) {
    let Some(src) = Src::of(x_type) else { return };
    let Rows { rows: n_rows, cols, stride } = rows;
    if n_rows == 0 || cols == 0 {
        // Nothing to read; every row's parameters are those of an empty row.
        let (s, z) = r::row_params(0.0, 0.0, out);
        scales.fill(s);
        if let Some(zp) = zero_points {
            zp.fill(z as u8);
        }
        return;
    }
    let per_rows = match cfg.chunk(n_rows * cols, Cost::Double) {
        None => n_rows,
        Some(per) => per.div_ceil(cols).max(1),
    };
    let count = n_rows.div_ceil(per_rows);
    let xs = src.size();
    let (mut at, mut y, mut scales, mut zps) = (0usize, Some(y), Some(scales), zero_points);
    let mut parts = std::iter::from_fn(|| {
        let m = (n_rows - at).min(per_rows);
        if m == 0 {
            return None;
        }
        let (yh, yt) = y.take()?.split_at_mut(m * cols);
        let (sh, st) = scales.take()?.split_at_mut(m);
        let zh = zps.take().map(|z| {
            let (h, t) = z.split_at_mut(m);
            zps = Some(t);
            h
        });
        y = Some(yt);
        scales = Some(st);
        let xb = &x[at * stride * xs..];
        at += m;
        Some(RowPart { src, x_type, x: xb, rows: m, cols, stride, out, y: yh, scales: sh, zero_points: zh })
    });
    for_parts(cfg, count, &mut parts, &|_, part| isa::dispatch(isa, part));
}

// ---------------------------------------------------------------------------------------
// Blocks
// ---------------------------------------------------------------------------------------

/// A blocked layout as block rows: block row `g = o * nb + b` is block `b` of every column
/// of outer index `o`, `len(b) * inner` consecutive elements.
#[derive(Clone, Copy, Debug)]
struct Geometry {
    outer: usize,
    d: usize,
    inner: usize,
    b: usize,
    nb: usize,
}

impl Geometry {
    fn of(layout: Layout) -> Option<Geometry> {
        match layout {
            Layout::Blocked { outer, axis_len, inner, block } if block > 0 => {
                Some(Geometry { outer, d: axis_len, inner, b: block, nb: axis_len.div_ceil(block) })
            }
            _ => None,
        }
    }

    fn block_rows(&self) -> usize {
        self.outer * self.nb
    }

    /// First element of block row `g` (`g` up to `block_rows()`).
    fn start(&self, g: usize) -> usize {
        let (o, b) = (g / self.nb, g % self.nb);
        (o * self.d + b * self.b) * self.inner
    }

    /// Rows of the axis in block row `g`.
    fn len(&self, g: usize) -> usize {
        let b = g % self.nb;
        self.b.min(self.d - b * self.b)
    }

    /// The block of a row `n` blocks after block `b` (`b < nb`): without a division where
    /// that is in this row or the next, as it is for the group kernels' steps.
    #[inline(always)]
    fn next_block(&self, b: usize, n: usize) -> usize {
        let b = b + n;
        if b < self.nb {
            b
        } else if b - self.nb < self.nb {
            b - self.nb
        } else {
            b % self.nb
        }
    }

    /// Whether every run of block rows is itself a blocked tensor `[1, rows, inner]`
    /// (uniform block rows, or one outer index whose only short block is the last);
    /// otherwise parts are whole outer indices.
    fn uniform(&self) -> bool {
        self.d.is_multiple_of(self.b) || self.outer == 1
    }

    /// The layout of block rows `[g0, g1)` as a tensor of its own.
    fn part_layout(&self, g0: usize, g1: usize) -> Layout {
        if self.uniform() {
            let end = if g1 == self.block_rows() { self.outer * self.d * self.inner } else { self.start(g1) };
            let rows = (end - self.start(g0)) / self.inner;
            Layout::Blocked { outer: 1, axis_len: rows, inner: self.inner, block: self.b }
        } else {
            Layout::Blocked { outer: (g1 - g0) / self.nb, axis_len: self.d, inner: self.inner, block: self.b }
        }
    }
}

/// One part: block rows `[g0, g1)`, with x, y, the scales and the zero points of exactly
/// those block rows.
pub(crate) struct BlockPart<'a> {
    rule: Rule,
    geo: Geometry,
    g0: usize,
    g1: usize,
    x_type: DataType,
    src: Src,
    x: &'a [u8],
    out: DataType,
    y: &'a mut [u8],
    scales: &'a mut [u8],
    zero_points: Option<&'a mut [u8]>,
}

impl Kernel for BlockPart<'_> {
    type Output = ();
    #[inline(always)]
    fn run<S: Simd>(self, simd: S) {
        let BlockPart { rule, geo, g0, g1, x_type, src, x, out, y, scales, mut zero_points } = self;
        let (base, n, k_count) = (geo.start(g0), x.len() / src.size(), (g1 - g0) * geo.inner);
        let signed = out.int_range().is_some_and(|q| q.0 < 0);
        if matches!(rule, Rule::Block { mode: BlockMode::Onnxruntime, .. }) && geo.inner > 1 && geo.inner % 2 == 0 {
            // onnxruntime's layout (blocks along K of a [K, N] weight): the leading columns
            // that fill whole groups of four vectors go to the row-by-row kernel (OrtWide);
            // the rest of each block row in strips of up to 64 columns, each strip's
            // statistics, parameters and codes while it is in L1.
            let wide = geo.inner / (4 * S::LANES) * (4 * S::LANES);
            if wide > 0 {
                let zero_points = zero_points.as_deref_mut();
                let rule = WideRule::Ort { signed };
                simd.enter(OrtWide { geo, g0, g1, wide, x, y: &mut *y, scales: &mut *scales, zero_points, rule });
            }
            if wide < geo.inner {
                for gi in g0..g1 {
                    ort_block_row(
                        simd,
                        &geo,
                        gi - g0,
                        geo.start(gi) - base,
                        geo.len(gi),
                        x,
                        y,
                        scales,
                        zero_points.as_deref_mut(),
                        signed,
                        wide,
                    );
                }
            }
        } else if let Some(rule) = block_wide_rule(rule, src, &geo, out, S::LANES) {
            // The symmetric and asymmetric rules with f32 x and scales on blocks across whole
            // vectors of columns (blocks along an outer axis): the onnxruntime mode's
            // pipeline with QuantizeLinear's element rule.
            let zero_points = zero_points.as_deref_mut();
            let (y, scales) = (&mut *y, &mut *scales);
            simd.enter(OrtWide { geo, g0, g1, wide: geo.inner, x, y, scales, zero_points, rule });
        } else if let Some(job) = contig_job(rule, &geo, x_type, x, out) {
            // Blocks of consecutive elements, each starting on a byte of y: every block's
            // statistics, parameters and codes in one visit.
            let zp = zero_points.as_deref_mut();
            let f32_src = S::SPECIALIZE && src == Src::F32;
            match (f32_src, quantize::mini_id(&job)) {
                (true, 0) => simd.enter(Contig::<0, 0, ANY> { rule, geo, g0, g1, job, y, scales, zero_points: zp }),
                (true, 2) => simd.enter(Contig::<0, 2, 8> { rule, geo, g0, g1, job, y, scales, zero_points: zp }),
                (true, 10) => simd.enter(Contig::<0, 10, 4> { rule, geo, g0, g1, job, y, scales, zero_points: zp }),
                (_, 0) => simd.enter(Contig::<ANY, 0, ANY> { rule, geo, g0, g1, job, y, scales, zero_points: zp }),
                _ => {
                    simd.enter(Contig::<ANY, MINI_RUNTIME, ANY> { rule, geo, g0, g1, job, y, scales, zero_points: zp })
                }
            }
        } else {
            self::tiles(simd, rule, &geo, g0, g1, x_type, src, x, out, y, scales, zero_points.as_deref_mut());
        }
        if g1 == geo.block_rows() {
            // The last part: the bits past the last element (of y and of packed zero
            // points) are zero, as in every quantized tensor this crate writes.
            packing::zero_padding(out, y, n);
            if let Some(zp) = zero_points {
                packing::zero_padding(out, zp, k_count);
            }
        }
    }
}

/// The [`WideRule`] of a part that [`ort_wide`] takes whole: the symmetric or asymmetric
/// rule, f32 x and scales, integer y, and `inner` a multiple of `4 * lanes` (so every row
/// of every block starts on a packing boundary and no column is left over).
fn block_wide_rule(rule: Rule, src: Src, geo: &Geometry, out: DataType, lanes: usize) -> Option<WideRule> {
    let Rule::Block { mode, scale_type: DataType::F32 } = rule else { return None };
    if mode == BlockMode::Onnxruntime || src != Src::F32 || geo.inner == 0 || !geo.inner.is_multiple_of(4 * lanes) {
        return None;
    }
    let (qmin, qmax) = out.int_range()?;
    Some(WideRule::Block { mode, qmin: qmin as i32, qmax: qmax as i32, bits: out.bits() })
}

/// The QuantizeLinear job of a part whose blocks are runs of consecutive elements (blocks
/// along the last axis) that each start on a packing boundary of y, with per-tensor
/// parameters that [`Contig`] replaces block by block; `None` for every other case (the
/// onnxruntime mode has its own element rule).
fn contig_job<'a>(rule: Rule, geo: &Geometry, x_type: DataType, x: &'a [u8], out: DataType) -> Option<Job<'a>> {
    let g = quantize::group(out);
    let aligned = geo.b.is_multiple_of(g) && (geo.outer == 1 || geo.d.is_multiple_of(g));
    if geo.inner != 1 || !aligned || matches!(rule, Rule::Block { mode: BlockMode::Onnxruntime, .. }) {
        return None;
    }
    let (scale_type, kind) = match rule {
        Rule::Block { scale_type, .. } => (scale_type, None),
        Rule::Mx { .. } => (DataType::E8M0, None),
        Rule::Nvfp4 { global } => (DataType::E8M0, Some(ScaleKind::E4M3Times(global.to_bits()))),
    };
    let mut job = Job::new(x_type, x, scale_type, &[0; 4], None, Layout::PerTensor, out, true, Precision::F32)?;
    if let Some(k) = kind {
        job.scale_kind = k;
    }
    Some(job)
}

/// Blocks of consecutive elements (see [`contig_job`]): per block, its statistics (a vector
/// pass), its stored parameters (`qdq_ref`'s scalar rule), then its codes with those
/// parameters broadcast (a second pass, from L1), so no block is visited twice from
/// memory and no tile bookkeeping runs per block. `SRC` and `MINI` as in `quantize`.
struct Contig<'a, 'y, const SRC: u8, const MINI: u8, const BITS: u8> {
    rule: Rule,
    geo: Geometry,
    g0: usize,
    g1: usize,
    job: Job<'a>,
    y: &'y mut [u8],
    scales: &'y mut [u8],
    zero_points: Option<&'y mut [u8]>,
}

impl<const SRC: u8, const MINI: u8, const BITS: u8> Kernel for Contig<'_, '_, SRC, MINI, BITS> {
    type Output = ();
    #[inline(always)]
    fn run<S: Simd>(self, simd: S) {
        let Contig { rule, geo, g0, g1, job, y, scales, mut zero_points } = self;
        let sp = Spec::resolve::<SRC, 0, BITS>(&job);
        let (src, x, out) = (sp.src, job.x, job.out);
        let (xs, ssz, range) = (src.size(), rule.scale_size(), rule.wants_range());
        let fast = FastRule::of(rule, out);
        let mx = match (fast, src) {
            (Some(FastRule::MxFloor(emax)), Src::F32) if geo.b.is_multiple_of(S::LANES) => Some(emax),
            _ => None,
        };
        // NVFP4 with e2m1 y at a compile-time format id (f32 x): its group kernel.
        let nvfp4 = match (fast, src) {
            (Some(FastRule::Nvfp4(g6)), Src::F32) if MINI == 10 && geo.b.is_multiple_of(S::LANES) => Some(g6),
            _ => None,
        };
        let block_run = match (rule, src, job.enc) {
            (Rule::Block { mode, scale_type: DataType::F32 }, Src::F32, Encode::Int { .. })
                if mode != BlockMode::Onnxruntime && geo.b.is_multiple_of(S::LANES) =>
            {
                Some(mode)
            }
            _ => None,
        };
        // Along the last axis the blocks of a part follow each other: block `b` of a row
        // (`b < nb`) holds `min(B, d - b B)` elements and the next block starts where it
        // ends, so no block's position needs a division.
        let (mut b, mut e) = (g0 % geo.nb, 0usize);
        let mut g = g0;
        while g < g1 {
            let mut n = (g1 - g).min(GROUP);
            // Whole blocks through a kernel of their own, up to the first that needs the
            // general rule (or a short one), which then goes alone through the group code.
            let y_at = e * sp.bits as usize / 8;
            let whole = if let Some(g6) = nvfp4 {
                let global = match rule {
                    Rule::Nvfp4 { global } => global,
                    _ => 1.0,
                };
                let (x, y, scales) = (&x[e * 4..], &mut y[y_at..], &mut scales[g - g0..]);
                Some(simd.enter(Nvfp4Run::<MINI> { g6, global, sp, geo, g0: g, g1, x, y, scales }))
            } else if let Some(mode) = block_run {
                let (x, y, scales, zero_points) =
                    (&x[e * 4..], &mut y[y_at..], &mut *scales, zero_points.as_deref_mut());
                Some(simd.enter(BlockRun { mode, out, sp, geo, g0: g, g1, k0: g - g0, x, y, scales, zero_points }))
            } else if let Some(emax) = mx {
                let (job, y, scales) = (Job { x: &x[e * 4..], ..job }, &mut y[y_at..], &mut scales[g - g0..]);
                Some(simd.enter(MxRun::<SRC, MINI, BITS> { emax, geo, g0: g, g1, job, y, scales }))
            } else {
                None
            };
            if let Some(done) = whole {
                (g, e, b) = (g + done, e + done * geo.b, geo.next_block(b, done));
                if g == g1 {
                    break;
                }
                n = 1;
            }
            // A group of blocks: first every block's statistics and parameters (independent
            // chains the core overlaps), then their codes.
            let mut bs = [BlockScale::default(); GROUP];
            let mut at = [(0usize, 0usize); GROUP];
            for (j, (bsj, atj)) in bs.iter_mut().zip(at.iter_mut()).enumerate().take(n) {
                let len = if b + 1 == geo.nb { geo.d - b * geo.b } else { geo.b };
                let (e0, k) = (e, g + j - g0);
                let (lo, hi) = stats_contig(simd, src, &x[e0 * xs..(e0 + len) * xs], range);
                let (sb, z) = match fast.and_then(|f| f.code(hi)) {
                    Some(c) => ([c, 0, 0, 0], 0),
                    None => {
                        let first = || (0..len).map(|j| read_x(src, x, e0 + j)).find(|v| !v.is_nan());
                        params(rule, lo, hi, out, first)
                    }
                };
                match ssz {
                    1 => scales[k] = sb[0],
                    2 => scales[2 * k..2 * k + 2].copy_from_slice(&sb[..2]),
                    _ => scales[4 * k..4 * k + 4].copy_from_slice(&sb),
                }
                if let Some(zp) = zero_points.as_deref_mut() {
                    packing::set_int(out, zp, k, z as i64);
                }
                *bsj = BlockScale::new(scale_value(job.scale_kind, &sb), z);
                *atj = (e0, len);
                e += len;
                b = if b + 1 == geo.nb { 0 } else { b + 1 };
            }
            for (bsj, &(e0, len)) in bs.iter().zip(at.iter()).take(n) {
                let p = bsj.lanes(simd, job.enc);
                quantize::run_block::<S, MINI>(simd, &job, &sp, &p, e0, len, y);
            }
            g += n;
        }
    }
}

/// The e8m0 code of one whole MX block of f32 (`xb`, a whole number of vectors) under the
/// floor rule with element `emax`: its `amax_nan` by the maximum of the magnitude bits,
/// then the rule's inline twin. `None` for a zero, subnormal, infinite or NaN amax (the
/// rule's general form). Its own loop over whole vectors: [`stats_contig`]'s partial-vector
/// handling costs a block of 32 about 17 instructions more (callgrind, AVX2).
#[inline(always)]
fn mx_code<S: Simd>(simd: S, xb: &[u8], emax: i32) -> Option<u8> {
    let vb = 4 * S::LANES;
    // Two chains of two vectors a step (every MX block size here is a multiple of 32).
    let (mut am, mut am1) = (simd.splat_i(0), simd.splat_i(0));
    let mut pairs = xb.chunks_exact(2 * vb);
    for v in &mut pairs {
        am = simd.max_i(abs_bits(simd, simd.load_f32(&v[..vb])), am);
        am1 = simd.max_i(abs_bits(simd, simd.load_f32(&v[vb..])), am1);
    }
    if !pairs.remainder().is_empty() {
        am = simd.max_i(abs_bits(simd, simd.load_f32(pairs.remainder())), am);
    }
    // Magnitude bits are non-negative as i32 (NaN patterns included), so the signed
    // maximum is theirs.
    let a = simd.hmax_i(simd.max_i(am, am1));
    FastRule::MxFloor(emax).code(f32::from_bits(a as u32))
}

/// The exact reciprocal `2^(127 - c)` of the e8m0 scale `2^(c - 127)` for a code of
/// [`mx_code`] (`c <= 254 - emax <= 252`, so a normal f32).
#[inline(always)]
fn mx_recip(c: u8) -> f32 {
    f32::from_bits((254 - c as u32) << 23)
}

/// The element width of the MX kernel variant `MINI`, known at compile time (the float
/// formats' own; MXINT8 for the integer variant), so the stores need no switch.
#[inline(always)]
fn mx_bits<const MINI: u8>(sp: &Spec) -> usize {
    match MINI {
        0 => 8,
        2..=12 => const { MiniFormat::of_id(MINI).sign_pos as usize + 1 },
        _ => sp.bits as usize,
    }
}

/// Four vectors of f32 (`x4`) to byte or nibble codes (`bits`) in one pack sequence, vector
/// `k` with the parameters `p[k]`: one multiplication by the exact power-of-two reciprocal
/// ([`quantize::DIV_POW2`], the same real number as the division, rounded once).
#[inline(always)]
fn mx_encode4<S: Simd, const MINI: u8>(
    simd: S,
    sp: &Spec,
    bits: usize,
    x4: &[u8],
    p: [&quantize::Lanes<S>; 4],
    y4: &mut [u8],
) {
    let vb = 4 * S::LANES;
    if S::MINI_X4 && MiniFormat::has_x4_route(MINI) {
        // Float8 / float4 codes through the four-vector encoder.
        let add_zero = quantize::mini_adds_zero::<MINI>(sp);
        let mut q = [simd.splat(0.0); 4];
        for (k, qk) in q.iter_mut().enumerate() {
            *qk = quantize::mini_quotient(simd, sp, &x4[k * vb..(k + 1) * vb], p[k], true, true, add_zero);
        }
        return simd.store_mini_x4(q, &MiniFormat::of_id(MINI), y4);
    }
    let mut codes = [simd.splat_i(0); 4];
    if MINI == 0 && bits == 8 && sp.src == Src::F32 && matches!(sp.enc, Encode::Int { qmin: -128, qmax: 127 }) {
        // MXINT8: the block's amax is finite and normal and its scale `2^e` puts every
        // `|x / 2^e|` below 2^8, so the exact product converts without clamps, and the
        // saturating packs of `store_sat8x4` are the saturation to i8 (no zero point).
        for (k, ck) in codes.iter_mut().enumerate() {
            *ck = simd.cvt_rne(simd.mul(simd.load_f32(&x4[k * vb..(k + 1) * vb]), p[k].r));
        }
        return simd.store_sat8x4(codes, simd.zero_points_x4([simd.splat_i(0); 4]), true, y4);
    }
    for (k, ck) in codes.iter_mut().enumerate() {
        let v = &x4[k * vb..(k + 1) * vb];
        *ck = quantize::quantize_vec_d::<S, MINI, false, { quantize::DIV_POW2 }>(simd, sp, v, p[k]).0;
    }
    if bits == 8 {
        simd.store_u8x4(codes, y4);
    } else {
        simd.store_u4x4(codes, y4);
    }
}

/// One whole MX block of f32 (`xb`, a whole number of vectors, from element `e` of the
/// part): its code ([`mx_code`], returned) and its element codes into `y`, from L1. `None`
/// (nothing written) where the rule's general form is needed. `p` holds the format's
/// constant lanes; its `r` is set.
#[inline(always)]
#[allow(clippy::too_many_arguments)]
fn mx_block<S: Simd, const MINI: u8>(
    simd: S,
    sp: &Spec,
    xb: &[u8],
    emax: i32,
    p: &mut quantize::Lanes<S>,
    y: &mut [u8],
    e: usize,
) -> Option<u8> {
    let (lanes, vb) = (S::LANES, 4 * S::LANES);
    let c = mx_code(simd, xb, emax)?;
    p.r = simd.splat(mx_recip(c));
    let bits = mx_bits::<MINI>(sp);
    if (bits == 8 || bits == 4) && xb.len().is_multiple_of(4 * vb) {
        // Bytes and nibbles: four vectors a store.
        let yb = &mut y[e * bits / 8..(e + xb.len() / 4) * bits / 8];
        for (x4, y4) in xb.chunks_exact(4 * vb).zip(yb.chunks_exact_mut(4 * lanes * bits / 8)) {
            mx_encode4::<S, MINI>(simd, sp, bits, x4, [p, p, p, p], y4);
        }
        return Some(c);
    }
    for (j, v) in xb.chunks_exact(vb).enumerate() {
        let code = quantize::quantize_vec_d::<S, MINI, false, { quantize::DIV_POW2 }>(simd, sp, v, p).0;
        store_codes(simd, bits as u32, code, y, e + j * lanes);
    }
    Some(c)
}

/// Two consecutive whole MX blocks of two vectors each (`x4`, AVX-512's 32-element blocks)
/// as one four-vector step of byte or nibble codes into `y4`: both codes, or `None`
/// (nothing written) if either block needs the general rule.
#[inline(always)]
fn mx_pair<S: Simd, const MINI: u8>(
    simd: S,
    sp: &Spec,
    x4: &[u8],
    emax: i32,
    p: &quantize::Lanes<S>,
    y4: &mut [u8],
) -> Option<(u8, u8)> {
    let h = x4.len() / 2;
    let c0 = mx_code(simd, &x4[..h], emax)?;
    let c1 = mx_code(simd, &x4[h..], emax)?;
    let p0 = quantize::Lanes { r: simd.splat(mx_recip(c0)), ..*p };
    let p1 = quantize::Lanes { r: simd.splat(mx_recip(c1)), ..*p };
    mx_encode4::<S, MINI>(simd, sp, mx_bits::<MINI>(sp), x4, [&p0, &p0, &p1, &p1], y4);
    Some((c0, c1))
}

/// `LANES` consecutive whole MX blocks of `bl` f32 (`xg`; `bl` two vectors or a whole
/// number of four-vector steps) under the floor rule, to a width of the four-vector stores:
/// their amax as one vector ([`group_amax`]), the rule's inline twin lane by lane (e8m0
/// codes into `scales`, the exact reciprocals `2^(127 - c)`), then each block's codes by
/// [`mx_encode4`] (two-vector blocks in pairs). `false`, with nothing written, where a
/// block's amax needs the rule's general form (zero, subnormal, infinite or NaN).
#[inline(always)]
#[allow(clippy::too_many_arguments)]
fn mx_group<S: Simd, const MINI: u8>(
    simd: S,
    sp: &Spec,
    xg: &[u8],
    bl: usize,
    emax: i32,
    p: &quantize::Lanes<S>,
    yg: &mut [u8],
    scales: &mut [u8],
) -> bool {
    let lanes = S::LANES;
    // `FastRule::MxFloor` per lane: the amax's biased exponent `ex` (1..=254 for a normal
    // amax), then `clamp(ex - 127 - emax, -127, 127) + 127`.
    let ex = simd.shr(group_amax(simd, xg, bl), 23);
    let odd = simd.mask_bits(simd.lt_i(ex, simd.splat_i(1))) | simd.mask_bits(simd.lt_i(simd.splat_i(254), ex));
    if odd != 0 {
        return false;
    }
    let t = simd.sub_i(ex, simd.splat_i(127 + emax));
    let code = simd.add_i(simd.min_i(simd.max_i(t, simd.splat_i(-127)), simd.splat_i(127)), simd.splat_i(127));
    simd.store_u8(code, scales);
    // `mx_recip` lane by lane: `2^(127 - c)`, a normal f32 (`c <= 254 - emax`).
    let mut rb = [0u8; 64];
    simd.store_f32(simd.f32_of(simd.shl(simd.sub_i(simd.splat_i(254), code), 23)), &mut rb);
    let bits = mx_bits::<MINI>(sp);
    let step = 4 * lanes * bits / 8;
    if bl == 2 * lanes {
        for (j, (x4, y4)) in xg.chunks_exact(16 * lanes).zip(yg.chunks_exact_mut(step)).enumerate() {
            let pa = quantize::Lanes { r: simd.splat(lane_f32(&rb, 2 * j)), ..*p };
            let pb = quantize::Lanes { r: simd.splat(lane_f32(&rb, 2 * j + 1)), ..*p };
            mx_encode4::<S, MINI>(simd, sp, bits, x4, [&pa, &pa, &pb, &pb], y4);
        }
    } else {
        for (j, (xb, yb)) in xg.chunks_exact(4 * bl).zip(yg.chunks_exact_mut(bl * bits / 8)).enumerate() {
            let pj = quantize::Lanes { r: simd.splat(lane_f32(&rb, j)), ..*p };
            for (x4, y4) in xb.chunks_exact(16 * lanes).zip(yb.chunks_exact_mut(step)) {
                mx_encode4::<S, MINI>(simd, sp, bits, x4, [&pj, &pj, &pj, &pj], y4);
            }
        }
    }
    true
}

/// MX blocks along the last axis under the floor rule, f32 source, blocks of whole vectors:
/// where every block of a row is whole, `LANES` blocks at a time with their scales as one
/// vector ([`mx_group`]; after a group that needs the general rule, its blocks one by one);
/// otherwise each whole block in one visit ([`mx_block`]; two at a time through one
/// four-vector store where a block is two vectors, [`mx_pair`]). Stops at a short block or one whose amax
/// needs the general rule, and returns how many blocks it did ([`Contig`] does that one
/// and calls again). (A kernel of its own: an unoptimised build gives it its own frame.)
struct MxRun<'a, 'y, const SRC: u8, const MINI: u8, const BITS: u8> {
    emax: i32,
    geo: Geometry,
    g0: usize,
    g1: usize,
    job: Job<'a>,
    y: &'y mut [u8],
    scales: &'y mut [u8],
}

impl<const SRC: u8, const MINI: u8, const BITS: u8> Kernel for MxRun<'_, '_, SRC, MINI, BITS> {
    type Output = usize;
    #[inline(always)]
    fn run<S: Simd>(self, simd: S) -> usize {
        let MxRun { emax, geo, g0, g1, job, y, scales } = self;
        let sp = Spec::resolve::<SRC, 0, BITS>(&job);
        let (x, bits) = (job.x, mx_bits::<MINI>(&sp));
        let p = BlockScale::new(1.0, 0).lanes(simd, job.enc);
        // Groups of `LANES` whole blocks (every block of a row whole) of two vectors or of
        // whole four-vector steps, to bytes or nibbles: `mx_group`.
        let groups = matches!(bits, 4 | 8)
            && geo.d.is_multiple_of(geo.b)
            && (geo.b == 2 * S::LANES || geo.b.is_multiple_of(4 * S::LANES));
        // Block `b` of its row starts at element `e` of the run (blocks follow each other).
        let (mut b, mut e, mut g) = (g0 % geo.nb, 0usize, g0);
        // Blocks left to the per-block code after a group that needs it.
        let mut single = 0;
        while g < g1 {
            if groups && single == 0 && g + S::LANES <= g1 {
                let n = S::LANES * geo.b;
                let (xg, yg) = (&x[e * 4..(e + n) * 4], &mut y[e * bits / 8..(e + n) * bits / 8]);
                if mx_group::<S, MINI>(simd, &sp, xg, geo.b, emax, &p, yg, &mut scales[g - g0..g - g0 + S::LANES]) {
                    e += n;
                    b = geo.next_block(b, S::LANES);
                    g += S::LANES;
                    continue;
                }
                single = S::LANES;
            }
            // Block by block: the rest of the run, or the blocks of a group that needs it.
            let stop = if single > 0 { g1.min(g + single) } else { g1 };
            // (`sp` by value: passed by reference, it would escape, and the group code
            // would read its fields at run time instead of folding them.)
            let k = MxBlocks::<MINI> {
                sp,
                geo,
                emax,
                b,
                e,
                n: stop - g,
                x,
                y: &mut *y,
                scales: &mut scales[g - g0..],
                enc: job.enc,
            };
            let done = simd.enter(k);
            (b, e, g) = (geo.next_block(b, done), e + done * geo.b, g + done);
            single = single.saturating_sub(done);
            if g < stop {
                break; // a short block, or one whose amax needs the general rule
            }
        }
        g - g0
    }
}

/// The per-block part of [`MxRun`]: at most `n` blocks from block `b` of its row (element
/// `e` of the run; `scales` from the first), each whole block in one visit ([`mx_block`];
/// two at a time through one four-vector store where a block is two vectors, [`mx_pair`]),
/// stopping at a short block or one whose amax needs the rule's general form. Returns the
/// blocks done. (A kernel of its own: an unoptimised build gives it a frame apart from the
/// group code's.)
struct MxBlocks<'a, 'y, const MINI: u8> {
    sp: Spec,
    geo: Geometry,
    emax: i32,
    b: usize,
    e: usize,
    n: usize,
    x: &'a [u8],
    y: &'y mut [u8],
    scales: &'y mut [u8],
    enc: Encode,
}

impl<const MINI: u8> Kernel for MxBlocks<'_, '_, MINI> {
    type Output = usize;
    #[inline(always)]
    fn run<S: Simd>(self, simd: S) -> usize {
        let MxBlocks { sp, geo, emax, mut b, mut e, n, x, y, scales, enc } = self;
        let (sp, bits) = (&sp, mx_bits::<MINI>(&sp));
        // Blocks of two vectors, all whole, to bytes or nibbles: two blocks a four-vector step.
        let pairs = geo.b == 2 * S::LANES && geo.d.is_multiple_of(geo.b) && matches!(bits, 4 | 8);
        let mut p = BlockScale::new(1.0, 0).lanes(simd, enc);
        let mut j = 0;
        while j < n {
            let len = if b + 1 == geo.nb { geo.d - b * geo.b } else { geo.b };
            if len != geo.b {
                break;
            }
            if pairs && j + 1 < n {
                // Whole blocks back to back: blocks j and j + 1 are the next 2 B elements.
                let (x4, y4) = (&x[e * 4..(e + 2 * len) * 4], &mut y[e * bits / 8..(e + 2 * len) * bits / 8]);
                if let Some((c0, c1)) = mx_pair::<S, MINI>(simd, sp, x4, emax, &p, y4) {
                    scales[j] = c0;
                    scales[j + 1] = c1;
                    e += 2 * len;
                    b = geo.next_block(b, 2);
                    j += 2;
                    continue;
                }
            }
            match mx_block::<S, MINI>(simd, sp, &x[e * 4..(e + len) * 4], emax, &mut p, y, e) {
                Some(c) => scales[j] = c,
                None => break,
            }
            e += len;
            b = if b + 1 == geo.nb { 0 } else { b + 1 };
            j += 1;
        }
        j
    }
}

/// Inline twins of `qdq_ref`'s one-byte scale rules for the common cases, so that a block's
/// parameters cost a few integer operations and no call ([`FastRule::code`] gives `None`
/// for everything else, which goes to `qdq_ref`; the unit tests compare the two over every
/// exponent and many mantissas).
#[derive(Clone, Copy, Debug)]
enum FastRule {
    /// [`qdq_ref::scaled::mx_scale`] with [`ScaleRounding::Floor`] and this element `emax`.
    MxFloor(i32),
    /// [`qdq_ref::scaled::nvfp4_block_scale`] with this `6 * global_scale`.
    Nvfp4(f32),
}

impl FastRule {
    fn of(rule: Rule, out: DataType) -> Option<FastRule> {
        match rule {
            Rule::Mx { rounding: ScaleRounding::Floor } => r::mx_element(out).map(|m| FastRule::MxFloor(m.0)),
            Rule::Nvfp4 { global } => Some(FastRule::Nvfp4(6.0f32 * global)),
            _ => None,
        }
    }

    /// The scale code of a block with this `amax_nan`, or `None` where the rule's general
    /// form is needed.
    #[inline(always)]
    fn code(self, amax_nan: f32) -> Option<u8> {
        match self {
            FastRule::MxFloor(emax) => {
                // A normal amax: floor(log2 amax) is its exponent; 2^(that - emax), clamped
                // to e8m0's range.
                let ex = (amax_nan.to_bits() >> 23) as i32;
                (1..=254).contains(&ex).then(|| ((ex - 127 - emax).clamp(-127, 127) + 127) as u8)
            }
            FastRule::Nvfp4(g6) => {
                let v = amax_nan / g6;
                if v.is_nan() || v == 0.0 {
                    return None; // NaN or zero: the rule's special codes
                }
                // e4m3fn with RNE, v clamped to [2^-9, 448] (so never NaN or beyond max).
                let v = v.clamp(1.0 / 512.0, 448.0);
                let b = v.to_bits();
                Some(if v >= 1.0 / 64.0 {
                    // Normal: round the f32 pattern to 3 mantissa bits, rebias 127 -> 7.
                    ((b + 0x7_ffff + ((b >> 20) & 1)) >> 20).wrapping_sub(120 << 3) as u8
                } else {
                    // Subnormal: multiples of 2^-9 (v * 512 is exact; 8 is the smallest normal).
                    (v * 512.0).round_ties_even() as u8
                })
            }
        }
    }
}

/// Blocks per group of [`Contig`].
const GROUP: usize = 16;

/// Block rows `[g0, g1)` of a part (x, y, scales and zero points hold exactly them) in
/// tiles: statistics and stored parameters of a tile's blocks, then QuantizeLinear's codes
/// (or onnxruntime's) of every element whose blocks are done.
#[inline(always)]
#[allow(clippy::too_many_arguments)]
fn tiles<S: Simd>(
    simd: S,
    rule: Rule,
    geo: &Geometry,
    g0: usize,
    g1: usize,
    x_type: DataType,
    src: Src,
    x: &[u8],
    out: DataType,
    y: &mut [u8],
    scales: &mut [u8],
    mut zero_points: Option<&mut [u8]>,
) {
    let xs = src.size();
    let base = geo.start(g0);
    let n = x.len() / xs;
    let layout = geo.part_layout(g0, g1);
    let k_count = (g1 - g0) * geo.inner;
    let ssz = rule.scale_size();
    let bits = out.bits() as usize;
    let signed = out.int_range().is_some_and(|q| q.0 < 0);
    let tile_rows = (TILE / (geo.b * geo.inner).max(1)).max(1);
    let (mut g, mut done) = (g0, 0usize);
    let mut st = [(0.0f32, 0.0f32); 64];
    while g < g1 {
        let t1 = (g + tile_rows).min(g1);
        // Statistics and parameters of the tile's blocks.
        for gi in g..t1 {
            let e0 = geo.start(gi) - base;
            let len = geo.len(gi);
            let kb = (gi - g0) * geo.inner;
            let mut c0 = 0;
            while c0 < geo.inner {
                let w = (geo.inner - c0).min(4 * S::LANES).min(64);
                let xb = &x[(e0 + c0) * xs..];
                if geo.inner == 1 {
                    st[0] = stats_contig(simd, src, &xb[..len * xs], rule.wants_range());
                } else {
                    stats_strip(simd, src, xb, len, geo.inner * xs, w, rule.wants_range(), &mut st);
                }
                for (c, &(lo, hi)) in st.iter().enumerate().take(w) {
                    let k = kb + c0 + c;
                    let first = || (0..len).map(|j| read_x(src, x, e0 + j * geo.inner + c0 + c)).find(|v| !v.is_nan());
                    let (sb, z) = params(rule, lo, hi, out, first);
                    scales[k * ssz..(k + 1) * ssz].copy_from_slice(&sb[..ssz]);
                    if let Some(zp) = zero_points.as_deref_mut() {
                        packing::set_int(out, zp, k, z as i64);
                    }
                }
                c0 += w;
            }
        }
        g = t1;
        // The codes of every element whose blocks are done, up to a packing boundary.
        let stop = if g == g1 { n } else { (geo.start(g) - base) & !3 };
        if stop > done {
            let y_end = if stop == n { y.len() } else { stop * bits / 8 };
            let yb = &mut y[done * bits / 8..y_end];
            let zp = zero_points.as_deref().map(|d| Packed { dtype: out, len: k_count, data: d });
            codes(simd, rule, x_type, x, &*scales, zp, layout, out, signed, done, stop, yb);
            done = stop;
        }
    }
}

/// Columns `start..inner` of one block row of the onnxruntime mode with `inner` even (every
/// row of the block starts on a byte of y), in strips of up to 64 columns: block row `r` of
/// the part, its first element `e0` (part-relative), `len` rows of `inner` f32 columns.
#[inline(always)]
#[allow(clippy::too_many_arguments)]
fn ort_block_row<S: Simd>(
    simd: S,
    geo: &Geometry,
    r: usize,
    e0: usize,
    len: usize,
    x: &[u8],
    y: &mut [u8],
    scales: &mut [u8],
    mut zero_points: Option<&mut [u8]>,
    signed: bool,
    start: usize,
) {
    let (lanes, inner) = (S::LANES, geo.inner);
    let out = if signed { DataType::I4 } else { DataType::U4 };
    let mut st = [(0.0f32, 0.0f32); 64];
    let mut c0 = start;
    while c0 < inner {
        let w = (inner - c0).min(4 * lanes).min(64);
        stats_strip(simd, Src::F32, &x[(e0 + c0) * 4..], len, inner * 4, w, true, &mut st);
        // Parameters, stored, and as vectors of reciprocals and zero points.
        let (mut rb, mut zb) = ([0u8; 256], [0u8; 256]);
        for (c, &(lo, hi)) in st.iter().enumerate().take(w) {
            let k = r * inner + c0 + c;
            let first = || (0..len).map(|j| read_x(Src::F32, x, e0 + j * inner + c0 + c)).find(|v| !v.is_nan());
            let (s, z) = r::ort_params(lo, hi, signed, first);
            scales[4 * k..4 * k + 4].copy_from_slice(&s.to_le_bytes());
            if let Some(zp) = zero_points.as_deref_mut() {
                packing::set_int(out, zp, k, z as i64);
            }
            let rcp = if s == 0.0 { 0.0 } else { 1.0 / s };
            rb[4 * c..4 * c + 4].copy_from_slice(&rcp.to_le_bytes());
            zb[4 * c..4 * c + 4].copy_from_slice(&z.to_le_bytes());
        }
        let nv = w.div_ceil(lanes);
        let mut p = [(simd.splat(0.0), simd.splat_i(0)); 4];
        for (v, pv) in p.iter_mut().enumerate().take(nv) {
            *pv = (simd.load_f32(&rb[4 * v * lanes..]), simd.load_i32(&zb[4 * v * lanes..]));
        }
        for j in 0..len {
            let e = e0 + j * inner + c0;
            for (v, pv) in p.iter().enumerate().take(nv) {
                let ev = e + v * lanes;
                let take = lanes.min(w - v * lanes);
                if take == lanes {
                    let c = ort_codes(simd, simd.load_f32(&x[4 * ev..4 * (ev + lanes)]), pv, signed);
                    store_codes(simd, 4, c, y, ev);
                } else {
                    ort_part(simd, x, ev, take, pv, signed, y, ev);
                }
            }
        }
        c0 += w;
    }
}

/// The largest f32 below 1/2: `trunc(q + copysign(HALF_BELOW, q))` rounds q half away from
/// zero (under round-to-nearest-even additions): a tie gains exactly enough to cross the
/// next integer, anything below a tie too little.
const HALF_BELOW: f32 = 0.499_999_97;

/// Columns per unit of [`ort_wide`] (a multiple of every `4 * LANES`): a unit of a block of
/// 32 rows is then 128 KiB, in L2 when its codes read it again.
const ORT_STRIP: usize = 1024;

/// How many rows ahead [`ort_wide`] prefetches the next unit (2 timed better than 1 and 4
/// on the 2-core Zen 4 host, AVX2, 16 Mi).
const ORT_AHEAD: usize = 2;

/// Per-column buffers of [`ort_wide`], f32 / i32 lanes: the statistics being gathered for
/// the next unit, and the current unit's reciprocals, zero points and clamp bounds. Aligned
/// to a cache line, so that no vector load of them straddles two.
#[repr(C, align(64))]
struct OrtBufs {
    lo: [u8; 4 * ORT_STRIP],
    hi: [u8; 4 * ORT_STRIP],
    rcp: [u8; 4 * ORT_STRIP],
    z: [u8; 4 * ORT_STRIP],
    lo_b: [u8; 4 * ORT_STRIP],
    hi_b: [u8; 4 * ORT_STRIP],
    /// The symmetric and asymmetric rules: the scales (divisors).
    s: [u8; 4 * ORT_STRIP],
    /// Per vector of scales, whether all are in the fast range (every rule: Markstein's
    /// division for the symmetric and asymmetric rules, no 2^31 test for onnxruntime's).
    fast: [bool; ORT_STRIP / 4],
}

/// The element rule of [`ort_wide`]: onnxruntime's, or QuantizeLinear's with the symmetric
/// or asymmetric rule's f32 scales (integer y of `bits`).
#[derive(Clone, Copy)]
enum WideRule {
    Ort { signed: bool },
    Block { mode: BlockMode, qmin: i32, qmax: i32, bits: u32 },
}

/// [`ort_wide`] as a kernel of its own (its own frame in an unoptimised build, which holds
/// its [`OrtBufs`]).
struct OrtWide<'a, 'y> {
    geo: Geometry,
    g0: usize,
    g1: usize,
    wide: usize,
    x: &'a [u8],
    y: &'y mut [u8],
    scales: &'y mut [u8],
    zero_points: Option<&'y mut [u8]>,
    rule: WideRule,
}

impl Kernel for OrtWide<'_, '_> {
    type Output = ();
    #[inline(always)]
    fn run<S: Simd>(self, simd: S) {
        let OrtWide { geo, g0, g1, wide, x, y, scales, zero_points, rule } = self;
        ort_wide(simd, &geo, g0, g1, wide, x, y, scales, zero_points, rule);
    }
}

/// The onnxruntime mode, or the symmetric / asymmetric rule with f32 scales ([`WideRule`]),
/// over the leading `wide` columns (a multiple of `4 * LANES`) of block rows `[g0, g1)` of a
/// part, in units of up to [`ORT_STRIP`] columns of one block row, row by row so that memory
/// is read in runs (the names say onnxruntime: the mode this pipeline was built for):
///
/// ```text
/// statistics of unit 0
/// for each unit u:  parameters of u (from its statistics)
///                   for each row j:  codes of row j of u;  statistics of row j of unit u + 1
/// ```
///
/// The next unit streams in from memory while the current one's codes read it from cache.
#[inline(always)]
#[allow(clippy::too_many_arguments)]
fn ort_wide<S: Simd>(
    simd: S,
    geo: &Geometry,
    g0: usize,
    g1: usize,
    wide: usize,
    x: &[u8],
    y: &mut [u8],
    scales: &mut [u8],
    mut zero_points: Option<&mut [u8]>,
    rule: WideRule,
) {
    let (inner, base) = (geo.inner, geo.start(g0));
    let z4 = [0u8; 4 * ORT_STRIP];
    let fast = [false; ORT_STRIP / 4];
    let mut b = OrtBufs { lo: z4, hi: z4, rcp: z4, z: z4, lo_b: z4, hi_b: z4, s: z4, fast };
    // The symmetric rule's statistics: |x|'s maximum alone.
    let amax = matches!(rule, WideRule::Block { mode: BlockMode::Symmetric, .. });
    // Units in order: (block row, first column, columns).
    let per = wide.div_ceil(ORT_STRIP);
    let unit = |u: usize| {
        let (gi, c0) = (g0 + u / per, (u % per) * ORT_STRIP);
        (gi, c0, (wide - c0).min(ORT_STRIP))
    };
    let units = (g1 - g0) * per;
    let (gi, c0, cols) = unit(0);
    for j in 0..geo.len(gi) {
        ort_stats_row(simd, x, geo.start(gi) - base + c0 + j * inner, cols, &mut b, j == 0, amax);
    }
    for u in 0..units {
        let (gi, c0, cols) = unit(u);
        let (e, len) = (geo.start(gi) - base + c0, geo.len(gi));
        let (zp, k0) = (zero_points.as_deref_mut(), (gi - g0) * inner + c0);
        match rule {
            WideRule::Ort { signed } => ort_params(simd, x, e, len, inner, k0, cols, &mut b, scales, zp, signed),
            WideRule::Block { mode, qmin, qmax, bits } => {
                block_params_wide(simd, mode, qmin, qmax, bits, k0, cols, &mut b, scales, zp)
            }
        }
        let next = (u + 1 < units).then(|| {
            let (gn, cn, coln) = unit(u + 1);
            (geo.start(gn) - base + cn, geo.len(gn), coln)
        });
        let rows = next.map_or(len, |(_, ln, _)| ln.max(len));
        for j in 0..rows {
            if j < len {
                // The next unit's row j + AHEAD, fetched while this row's codes are worked out.
                let pf = next
                    .filter(|&(_, ln, _)| j + ORT_AHEAD < ln)
                    .map(|(en, _, coln)| &x[4 * (en + (j + ORT_AHEAD) * inner)..][..4 * coln]);
                match rule {
                    WideRule::Ort { signed: true } => ort_codes_row::<S, true>(simd, x, e + j * inner, cols, &b, y, pf),
                    WideRule::Ort { signed: false } => {
                        ort_codes_row::<S, false>(simd, x, e + j * inner, cols, &b, y, pf)
                    }
                    WideRule::Block { qmin, qmax, bits, .. } => {
                        block_codes_row(simd, qmin, qmax, bits, x, e + j * inner, cols, &b, y, pf)
                    }
                }
            }
            if let Some((en, ln, coln)) = next {
                if j < ln {
                    ort_stats_row(simd, x, en + j * inner, coln, &mut b, j == 0, amax);
                }
            }
        }
    }
}

/// Folds row `e..e + cols` of x into the statistics `b.lo` / `b.hi` (NaN-skipping minimum
/// and maximum with 0 included; `first` starts them), or with `amax` (the symmetric rule,
/// which needs only `max(-lo, hi)`) into `b.hi` alone: the NaN-skipping maximum of |x|
/// with 0 included (`b.lo` is not read).
#[inline(always)]
fn ort_stats_row<S: Simd>(simd: S, x: &[u8], e: usize, cols: usize, b: &mut OrtBufs, first: bool, amax: bool) {
    let vb = 4 * S::LANES;
    let row = x[4 * e..][..4 * cols].chunks_exact(vb);
    if amax {
        if first {
            for hi in b.hi[..4 * cols].chunks_exact_mut(vb) {
                simd.store_f32(simd.splat(0.0), hi);
            }
        }
        // `max(v, acc)` keeps `acc` for a NaN `v` (the Simd contract).
        for (xv, hi) in row.zip(b.hi[..4 * cols].chunks_exact_mut(vb)) {
            let a = simd.f32_of(abs_bits(simd, simd.load_f32(xv)));
            simd.store_f32(simd.max(a, simd.load_f32(hi)), hi);
        }
        return;
    }
    if first {
        // Zeros first, then the one fold (not `min(val, 0)` in a loop of its own: the
        // portable ISA's compare-and-select with a constant operand came out of LLVM for
        // aarch64 passing a NaN `val` through, which the fold against memory does not).
        let zero = simd.splat(0.0);
        for (lo, hi) in b.lo[..4 * cols].chunks_exact_mut(vb).zip(b.hi[..4 * cols].chunks_exact_mut(vb)) {
            simd.store_f32(zero, lo);
            simd.store_f32(zero, hi);
        }
    }
    let acc = b.lo[..4 * cols].chunks_exact_mut(vb).zip(b.hi[..4 * cols].chunks_exact_mut(vb));
    for (xv, (lo, hi)) in row.zip(acc) {
        let val = simd.load_f32(xv);
        let (l, h) = (simd.load_f32(lo), simd.load_f32(hi));
        simd.store_f32(simd.min(val, l), lo);
        simd.store_f32(simd.max(val, h), hi);
    }
}

/// The parameters of a unit from its statistics `b.lo` / `b.hi`: `cols` columns of a block
/// of `len` rows of `inner` from element `e` (even) of the part, parameters `k0..` (k0
/// even). Stored in the caller's scales and zero points, and as per-column reciprocals,
/// zero points and clamp bounds in `b`. Per lane the scalar rule's IEEE operations in the
/// same order; a signed vector of columns with any all-zero column (which needs the
/// block's first non-NaN element) goes through the scalar rule, every lane of it.
#[inline(always)]
#[allow(clippy::too_many_arguments)]
fn ort_params<S: Simd>(
    simd: S,
    x: &[u8],
    e: usize,
    len: usize,
    inner: usize,
    k0: usize,
    cols: usize,
    b: &mut OrtBufs,
    scales: &mut [u8],
    mut zero_points: Option<&mut [u8]>,
    signed: bool,
) {
    let lanes = S::LANES;
    let vb = 4 * lanes;
    let zero = simd.splat(0.0);
    let zero_i = simd.splat_i(0);
    let (qmin, qmax) = if signed { (-8, 7) } else { (0, 15) };
    for v in 0..cols / lanes {
        let (lo, hi) = (simd.load_f32(&b.lo[v * vb..]), simd.load_f32(&b.hi[v * vb..]));
        let k = k0 + v * lanes;
        let (s, z) = if signed {
            let all_zero = simd.mask_bits(simd.eq(lo, zero)) & simd.mask_bits(simd.eq(hi, zero));
            let s = if all_zero != 0 {
                let (mut sb, mut lb, mut hb) = ([0u8; 64], [0u8; 64], [0u8; 64]);
                simd.store_f32(lo, &mut lb);
                simd.store_f32(hi, &mut hb);
                for t in 0..lanes {
                    let col = e + v * lanes + t;
                    let first = || (0..len).map(|j| read_x(Src::F32, x, col + j * inner)).find(|q| !q.is_nan());
                    let (s, _) = r::ort_params(lane_f32(&lb, t), lane_f32(&hb, t), true, first);
                    sb[4 * t..4 * t + 4].copy_from_slice(&s.to_le_bytes());
                }
                simd.load_f32(&sb)
            } else {
                // m = hi if |hi| > |lo| else lo (neither is NaN); s = -m / 8, which the
                // exact multiplication by 2^-3 rounds as the division does.
                let m = simd.select(simd.lt_i(abs_bits(simd, lo), abs_bits(simd, hi)), hi, lo);
                let neg = simd.f32_of(simd.xor_i(simd.bits(m), simd.splat_i(i32::MIN)));
                simd.mul(neg, simd.splat(0.125))
            };
            (s, zero_i)
        } else {
            // s = (hi - lo) / 15; z = 0 - lo / s, 0 where s is 0 or z NaN, clamped to [0, 15]
            // and rounded half away from zero.
            let s = simd.div(simd.sub(hi, lo), simd.splat(15.0));
            let zf = simd.sub(zero, simd.div(lo, s));
            let zf = simd.select(simd.or_m(simd.eq(s, zero), simd.is_nan(zf)), zero, zf);
            let zf = simd.max(simd.min(zf, simd.splat(15.0)), zero);
            (s, simd.cvt_trunc(simd.add(zf, simd.splat(HALF_BELOW))))
        };
        simd.store_f32(s, &mut scales[4 * k..]);
        if let Some(zp) = zero_points.as_deref_mut() {
            simd.store_u4(z, &mut zp[k / 2..]);
        }
        let rcp = simd.select(simd.eq(s, zero), zero, simd.div(simd.splat(1.0), s));
        // Scales in the fast range: finite reciprocals, and (x within its block's range)
        // |q| at most about 16, so `ort_code_vec`'s test for q >= 2^31 can go.
        b.fast[v] = simd.mask_bits(quantize::slow_scale_lanes(simd, s)) == 0;
        simd.store_f32(rcp, &mut b.rcp[v * vb..]);
        simd.store_i32(z, &mut b.z[v * vb..]);
        simd.store_f32(simd.cvt_f32(simd.sub_i(simd.splat_i(qmin), z)), &mut b.lo_b[v * vb..]);
        simd.store_f32(simd.cvt_f32(simd.sub_i(simd.splat_i(qmax), z)), &mut b.hi_b[v * vb..]);
    }
}

/// The codes of row `e..e + cols` of x (e even, cols a multiple of `4 * LANES`) with the
/// unit's parameters in `b`, four vectors per 4-bit pack:
///
/// ```text
/// q = x * r;   q >= 2^31 or NaN -> qmin - z          (x86's conversion gives i32::MIN)
/// c = trunc(clamp(q, qmin - z, qmax - z) + copysign(HALF_BELOW, q)) + z
/// ```
///
/// Rounding half away from zero commutes with the clamp to integer bounds, so this is
/// `clamp(round(q) + z, qmin, qmax)` of [`qdq_ref::scaled::ort_value`].
#[inline(always)]
fn ort_codes_row<S: Simd, const SIGNED: bool>(
    simd: S,
    x: &[u8],
    e: usize,
    cols: usize,
    b: &OrtBufs,
    y: &mut [u8],
    pf: Option<&[u8]>,
) {
    // Groups of four vectors: x, the per-column parameters and y in chunks of exactly their
    // bytes (no bounds checks in the loop), and the row to prefetch alongside.
    let gb = 16 * S::LANES;
    let xs = x[4 * e..][..4 * cols].chunks_exact(gb);
    let params = b.rcp[..4 * cols].chunks_exact(gb).zip(b.z[..4 * cols].chunks_exact(gb));
    let bounds = b.lo_b[..4 * cols].chunks_exact(gb).zip(b.hi_b[..4 * cols].chunks_exact(gb));
    let out = y[e / 2..][..cols / 2].chunks_exact_mut(2 * S::LANES).zip(b.fast[..cols / S::LANES].chunks_exact(4));
    // The next unit's row may be shorter than this one: prefetch while it lasts. (One loop
    // for both: a dev build's frame holds one copy of the group's code.)
    let mut pgs = pf.map(|p| p.chunks_exact(gb));
    for (((xg, (rg, zg)), (lg, hg)), (yg, fg)) in xs.zip(params).zip(bounds).zip(out) {
        if let Some(pg) = pgs.as_mut().and_then(|it| it.next()) {
            for o in (0..gb).step_by(64) {
                simd.prefetch(&pg[o..]);
            }
        }
        let cols = OrtCols { rcp: rg, z: zg, lo: lg, hi: hg };
        ort_codes_group::<S, SIGNED>(simd, xg, cols, yg, *fg == [true; 4]);
    }
}

/// A group's per-column parameters in [`ort_codes_row`] (`16 * LANES` bytes each):
/// reciprocals, zero points and clamp bounds.
#[derive(Clone, Copy)]
struct OrtCols<'a> {
    rcp: &'a [u8],
    z: &'a [u8],
    lo: &'a [u8],
    hi: &'a [u8],
}

/// Four vectors of [`ort_codes_row`]: x and the parameters of `4 * LANES` columns, and
/// their `2 * LANES` bytes of y. `tame`: every scale of the four in the fast range
/// (`ort_code_vec`'s `TAME`).
#[inline(always)]
fn ort_codes_group<S: Simd, const SIGNED: bool>(simd: S, x: &[u8], cols: OrtCols<'_>, y: &mut [u8], tame: bool) {
    let vb = 4 * S::LANES;
    let mut c = [simd.splat_i(0); 4];
    if tame {
        for (t, ct) in c.iter_mut().enumerate() {
            *ct = ort_code_at::<S, SIGNED, true>(simd, x, cols, t * vb);
        }
    } else {
        for (t, ct) in c.iter_mut().enumerate() {
            *ct = ort_code_at::<S, SIGNED, false>(simd, x, cols, t * vb);
        }
    }
    simd.store_u4x4(c, y);
}

/// The vector of [`ort_codes_group`] at byte `o` of its slices.
#[inline(always)]
fn ort_code_at<S: Simd, const SIGNED: bool, const TAME: bool>(simd: S, x: &[u8], cols: OrtCols<'_>, o: usize) -> S::I {
    let (xv, r) = (simd.load_f32(&x[o..]), simd.load_f32(&cols.rcp[o..]));
    // Signed: z = 0, bounds [-8, 7] (no per-column loads).
    if SIGNED {
        ort_code_vec::<S, TAME>(simd, xv, r, simd.splat_i(0), simd.splat(-8.0), simd.splat(7.0))
    } else {
        let (lo, hi) = (simd.load_f32(&cols.lo[o..]), simd.load_f32(&cols.hi[o..]));
        ort_code_vec::<S, TAME>(simd, xv, r, simd.load_i32(&cols.z[o..]), lo, hi)
    }
}

/// The symmetric or asymmetric rule's parameters (f32 scales, integer y in `[qmin, qmax]`
/// of `bits`) of a unit from its statistics, per lane with the scalar rule's IEEE
/// operations in the same order (`qdq_ref::scaled::block_params`), stored in the
/// caller's scales and zero points (`k0` on a packing boundary) and, for the codes, in `b`.
#[inline(always)]
#[allow(clippy::too_many_arguments)]
fn block_params_wide<S: Simd>(
    simd: S,
    mode: BlockMode,
    qmin: i32,
    qmax: i32,
    bits: u32,
    k0: usize,
    cols: usize,
    b: &mut OrtBufs,
    scales: &mut [u8],
    mut zero_points: Option<&mut [u8]>,
) {
    let lanes = S::LANES;
    let vb = 4 * lanes;
    let one = simd.splat(1.0);
    for v in 0..cols / lanes {
        // The symmetric rule's statistics are `b.hi` alone, its `max(-lo, hi)`
        // (`ort_stats_row`); 0 stands for lo.
        let hi = simd.load_f32(&b.hi[v * vb..]);
        let lo = if matches!(mode, BlockMode::Symmetric) { simd.splat(0.0) } else { simd.load_f32(&b.lo[v * vb..]) };
        let k = k0 + v * lanes;
        let (s, z) = block_params_vec(simd, mode, qmin, qmax, lo, hi);
        simd.store_f32(s, &mut scales[4 * k..]);
        if let Some(zp) = zero_points.as_deref_mut() {
            store_codes(simd, bits, z, zp, k);
        }
        simd.store_f32(s, &mut b.s[v * vb..]);
        simd.store_f32(simd.div(one, s), &mut b.rcp[v * vb..]);
        simd.store_i32(z, &mut b.z[v * vb..]);
        let zf = simd.cvt_f32(z);
        simd.store_f32(simd.sub(simd.splat(qmin as f32), zf), &mut b.lo_b[v * vb..]);
        simd.store_f32(simd.sub(simd.splat(qmax as f32), zf), &mut b.hi_b[v * vb..]);
        b.fast[v] = simd.mask_bits(quantize::slow_scale_lanes(simd, s)) == 0;
    }
}

/// `qdq_ref::scaled::block_params` for f32 scales per lane: the symmetric or asymmetric
/// rule's `(scale, zero point)` of blocks with statistics `lo <= 0 <= hi` (numbers), y in
/// `[qmin, qmax]`, with the scalar rule's IEEE operations in the same order.
#[inline(always)]
fn block_params_vec<S: Simd>(simd: S, mode: BlockMode, qmin: i32, qmax: i32, lo: S::F, hi: S::F) -> (S::F, S::I) {
    let (zero, one, big) = (simd.splat(0.0), simd.splat(1.0), simd.splat(f32::INFINITY));
    let (raw, z) = match mode {
        BlockMode::Symmetric => {
            let z = if qmin < 0 { 0 } else { (qmax + 1) / 2 };
            let neg_lo = simd.f32_of(simd.xor_i(simd.bits(lo), simd.splat_i(i32::MIN)));
            (simd.div(simd.max(neg_lo, hi), simd.splat((qmax - z) as f32)), simd.splat_i(z))
        }
        _ => (simd.div(simd.sub(hi, lo), simd.splat((qmax - qmin) as f32)), simd.splat_i(0)),
    };
    // fix: 0 -> 1, +inf -> f32::MAX (raw is never NaN: lo <= 0 <= hi are numbers).
    let s = simd.select(simd.eq(raw, zero), one, simd.select(simd.eq(raw, big), simd.splat(f32::MAX), raw));
    if matches!(mode, BlockMode::Symmetric) {
        return (s, z);
    }
    // z = qmin - lo / s: qmin where NaN, else clamped and rounded half to even.
    let qf = simd.splat(qmin as f32);
    let zf = simd.sub(qf, simd.div(lo, s));
    let zf = simd.select(simd.is_nan(zf), qf, simd.min(simd.max(zf, qf), simd.splat(qmax as f32)));
    (s, simd.cvt_rne(zf))
}

/// Whole blocks of the symmetric or asymmetric rule along the last axis (f32 x and
/// scales, integer y of `bits` in `[qmin, qmax]`, blocks of whole vectors), `LANES` blocks
/// at a time: each block's statistics, then the group's parameters as one vector
/// ([`block_params_vec`]), then each block's codes with its lane broadcast. Stops at a
/// short block and returns the blocks done; `Contig` takes the rest.
struct BlockRun<'a, 'y> {
    mode: BlockMode,
    /// y's type, and the vector code's spec for it (f32 x, an integer encoding).
    out: DataType,
    sp: Spec,
    geo: Geometry,
    /// Blocks `[g0, g1)`; block `g0` is part-relative block `k0` and starts at `x[0]`.
    g0: usize,
    g1: usize,
    k0: usize,
    x: &'a [u8],
    y: &'y mut [u8],
    scales: &'y mut [u8],
    zero_points: Option<&'y mut [u8]>,
}

impl Kernel for BlockRun<'_, '_> {
    type Output = usize;
    #[inline(always)]
    fn run<S: Simd>(self, simd: S) -> usize {
        let BlockRun { mode, out, sp, geo, g0, g1, k0, x, y, scales, mut zero_points } = self;
        // f32 x at the division precision f32, as compile-time facts in this kernel's frame.
        let sp = sp.fold::<0, 0, ANY>();
        let Encode::Int { qmin, .. } = sp.enc else { return 0 };
        let (lanes, bl) = (S::LANES, geo.b);
        let bw = sp.bits as usize;
        let signed = qmin < 0;
        // Blocks of whole four-vector steps to an 8- or 4-bit type with FMA (Markstein's
        // division): `quantize::sat_block_with_range`.
        let range_steps = S::HAS_FMA && matches!(bw, 4 | 8) && bl.is_multiple_of(4 * lanes);
        // Every block whole (no short last block in a row): a group's statistics by
        // `group_range`.
        let whole_rows = geo.d.is_multiple_of(bl);
        // A group of `LANES` blocks whose scales are all in the fast range: its codes by
        // `quantize::GroupCodes`, the per-tensor loop's steps with no per-block work.
        let groups = quantize::group_codes_fit::<S>(bl, sp.bits);
        let all = ((1u64 << lanes) - 1) as u32;
        let (b, mut e, mut g) = (g0 % geo.nb, 0usize, g0);
        // Software-pipelined by one group, as `Nvfp4Run`: the next group's statistics and
        // parameters (two or three divisions deep) before this group's codes, written in
        // place into two slots used in turn.
        let mut slots = [quantize::GroupParams::EMPTY, quantize::GroupParams::EMPTY];
        // `cur`: the group being coded, its parameters in `slots[turn]`; the next group
        // starts at block `pg` (block `pb` of its row, element `pe`). One call site of
        // `block_group`: an unoptimised build gives each inlined copy its own stack slots.
        let (mut cur, mut turn, mut more) = (None, 0, true);
        let (mut pb, mut pe, mut pg) = (b, e, g);
        loop {
            let (gp, slot) = slot_pair(&mut slots, turn);
            let next = if more {
                let zp = zero_points.as_deref_mut();
                block_group(simd, mode, &sp, out, &geo, whole_rows, x, scales, zp, k0, g0, pb, pe, pg, g1, slot)
            } else {
                None
            };
            match next {
                Some(Prepared { n, bb, .. }) => {
                    (pb, pe, pg) = (bb, pe + n * bl, pg + n);
                    more = pg < g1 && n == lanes;
                }
                None => more = false,
            }
            let Some(Prepared { n, fast, .. }) = cur else {
                // The first pass only prepares.
                (cur, turn) = (next, turn ^ 1);
                if cur.is_none() {
                    break;
                }
                continue;
            };
            if groups && n == lanes && fast & all == all {
                let (xg, yg) = (&x[4 * e..4 * (e + n * bl)], &mut y[e * bw / 8..(e + n * bl) * bw / 8]);
                quantize::GroupCodes { sp, gp, block: bl, x: xg, y: yg }.enter(simd);
            } else {
                group_blocks(simd, &sp, gp, fast, range_steps, signed, n, bl, &x[4 * e..], &mut y[e * bw / 8..]);
            }
            (e, g, cur, turn) = (e + n * bl, g + n, next, turn ^ 1);
            if cur.is_none() {
                break;
            }
        }
        g - g0
    }
}

/// [`BlockRun`]'s codes of a group block by block (`n` blocks of `bl` from `x[0]`, `y[0]`):
/// `sat_block_with_range` where the block's scale is in the fast range and the layout
/// has whole four-vector steps (`range_steps`), else the per-vector code.
#[inline(always)]
#[allow(clippy::too_many_arguments)]
fn group_blocks<S: Simd>(
    simd: S,
    sp: &Spec,
    gp: &quantize::GroupParams,
    fast: u32,
    range_steps: bool,
    signed: bool,
    n: usize,
    bl: usize,
    x: &[u8],
    y: &mut [u8],
) {
    let Encode::Int { qmin, qmax } = sp.enc else { return };
    let bw = sp.bits as usize;
    for j in 0..n {
        let e0 = j * bl;
        let (xb, yb) = (&x[4 * e0..4 * (e0 + bl)], &mut y[e0 * bw / 8..(e0 + bl) * bw / 8]);
        let (s, z) = (gp.scale(j), gp.zero_point(j));
        if range_steps && fast & (1 << j) != 0 {
            // The block's scale comes from its own finite range (an infinite
            // range's f32::MAX is outside the fast range), or is the fixed-up 1.0
            // of a range whose scale underflowed to zero (every non-NaN |x| below
            // about 2^-140): every quotient lies within the type's span, as
            // `sat_block_with_range` asks.
            let p = gp.int_lanes(simd, j, qmin, qmax);
            quantize::sat_block_with_range(simd, sp, xb, yb, &p, signed, bw);
            continue;
        }
        let p = BlockScale::new(s, z).lanes(simd, sp.enc);
        if p.fast {
            block_codes::<S, { quantize::DIV_FAST }>(simd, sp, xb, &p, yb);
        } else {
            block_codes::<S, { quantize::DIV_RUNTIME }>(simd, sp, xb, &p, yb);
        }
    }
}

/// A group that a pipelined group loop ([`BlockRun`], [`Nvfp4Run`]) prepared: how many
/// blocks, the row position after them, and the blocks whose scale (divisor) is in the
/// fast range. Its parameters are in one of the loop's two slots ([`slot_pair`]).
struct Prepared {
    n: usize,
    bb: usize,
    fast: u32,
}

/// The two slots of a pipelined group loop: the one `turn` names (the group being coded)
/// to read, the other (the next group's) to fill.
#[inline(always)]
fn slot_pair<T>(slots: &mut [T; 2], turn: usize) -> (&T, &mut T) {
    let [a, b] = slots;
    if turn == 0 {
        (a, b)
    } else {
        (b, a)
    }
}

/// [`BlockRun`]'s statistics and parameters of the group at block `g` (block `b` of its
/// row, element `e` of `x`, part-relative block `k0 + g - g0`): the scales and zero points
/// stored, and kept in `gp` for the codes. `None` where no whole block starts there.
#[inline(always)]
#[allow(clippy::too_many_arguments)]
fn block_group<S: Simd>(
    simd: S,
    mode: BlockMode,
    sp: &Spec,
    out: DataType,
    geo: &Geometry,
    whole_rows: bool,
    x: &[u8],
    scales: &mut [u8],
    zero_points: Option<&mut [u8]>,
    k0: usize,
    g0: usize,
    b: usize,
    e: usize,
    g: usize,
    g1: usize,
    gp: &mut quantize::GroupParams,
) -> Option<Prepared> {
    let Encode::Int { qmin, qmax } = sp.enc else { return None };
    let (lanes, bl, bw) = (S::LANES, geo.b, sp.bits as usize);
    let (n, bb, lo, hi) = if whole_rows && g + lanes <= g1 {
        let (lo, hi) = group_range(simd, &x[4 * e..4 * (e + lanes * bl)], bl);
        (lanes, geo.next_block(b, lanes), lo, hi)
    } else {
        let (n, bb, lb, hb) = group_stats(simd, geo, x, b, e, g, g1, true);
        (n, bb, simd.load_f32(&lb), simd.load_f32(&hb))
    };
    if n == 0 {
        return None;
    }
    let (sv, zv) = block_params_vec(simd, mode, qmin, qmax, lo, hi);
    // The group's reciprocals and fast-range lanes as vectors too: one division for every
    // block, none in a block's chain.
    let fast = !simd.mask_bits(quantize::slow_scale_lanes(simd, sv));
    gp.set(simd, sv, zv);
    let k = k0 + (g - g0);
    if n == lanes {
        simd.store_f32(sv, &mut scales[4 * k..]);
    } else {
        for j in 0..n {
            scales[4 * (k + j)..4 * (k + j + 1)].copy_from_slice(&gp.scale(j).to_le_bytes());
        }
    }
    if let Some(zp) = zero_points {
        if n == lanes && (k * bw).is_multiple_of(8) {
            store_codes(simd, bw as u32, zv, zp, k);
        } else {
            for j in 0..n {
                packing::set_int(out, zp, k + j, gp.zero_point(j) as i64);
            }
        }
    }
    Some(Prepared { n, bb, fast })
}

/// `(lo, hi)` of `LANES` consecutive whole blocks of `bl` f32 (`x`; `bl` a multiple of
/// `LANES`) as vectors, lane `j` block `j`'s: NaN-skipping minimum and maximum with 0
/// included (each block's accumulators start at 0, and `min(v, acc)` keeps `acc` for a
/// NaN `v`), reduced across lanes by [`Simd::hmin_each`] / [`Simd::hmax_each`].
#[inline(always)]
fn group_range<S: Simd>(simd: S, x: &[u8], bl: usize) -> (S::F, S::F) {
    let (lo, hi) = match bl / S::LANES {
        1 => group_range_n::<S, 1>(simd, x, bl),
        2 => group_range_n::<S, 2>(simd, x, bl),
        4 => group_range_n::<S, 4>(simd, x, bl),
        _ => group_range_n::<S, 0>(simd, x, bl),
    };
    (simd.hmin_each(&lo[..S::LANES]), simd.hmax_each(&hi[..S::LANES]))
}

/// [`group_range`]'s accumulators, block by block (the loads in memory order), for blocks
/// of `NV` vectors (0: `bl / LANES` at run time). The loop over the blocks runs exactly
/// `LANES` times, so it unrolls and the accumulators stay in registers; with `NV` known the
/// loop over a block's vectors unrolls too (the run-time count costs a loop's set-up and
/// remainder checks per block, as much as a two-vector block's work).
#[inline(always)]
fn group_range_n<S: Simd, const NV: usize>(simd: S, x: &[u8], bl: usize) -> ([S::F; 16], [S::F; 16]) {
    let zero = simd.splat(0.0);
    let (mut lo, mut hi) = ([zero; 16], [zero; 16]);
    let bb = if NV == 0 { 4 * bl } else { 4 * NV * S::LANES };
    // One length check for the whole group: the blocks' slices below need none of their own.
    let x = &x[..S::LANES * bb];
    for (j, (l, h)) in lo.iter_mut().zip(hi.iter_mut()).enumerate().take(S::LANES) {
        for vb in x[j * bb..][..bb].chunks_exact(4 * S::LANES) {
            let v = simd.load_f32(vb);
            (*l, *h) = (simd.min(v, *l), simd.max(v, *h));
        }
    }
    (lo, hi)
}

/// `amax_nan` of `LANES` consecutive whole blocks of `bl` f32 (`x`; `bl` a multiple of
/// `LANES`) as the magnitude bits of one vector, lane `j` block `j`'s: the maximum of the
/// magnitude bits (a NaN pattern above every number), reduced across lanes by
/// [`Simd::hmax_i_each`]. Blocks of one, two or four vectors with their own loops, as in
/// [`group_range`].
#[inline(always)]
fn group_amax<S: Simd>(simd: S, x: &[u8], bl: usize) -> S::I {
    let am = match bl / S::LANES {
        1 => group_amax_n::<S, 1>(simd, x, bl),
        2 => group_amax_n::<S, 2>(simd, x, bl),
        4 => group_amax_n::<S, 4>(simd, x, bl),
        _ => group_amax_n::<S, 0>(simd, x, bl),
    };
    simd.hmax_i_each(&am[..S::LANES])
}

/// [`group_amax`]'s accumulators for blocks of `NV` vectors, as [`group_range_n`].
#[inline(always)]
fn group_amax_n<S: Simd, const NV: usize>(simd: S, x: &[u8], bl: usize) -> [S::I; 16] {
    let mut am = [simd.splat_i(0); 16];
    let bb = if NV == 0 { 4 * bl } else { 4 * NV * S::LANES };
    // As in `group_range_n`: one length check for the group.
    let x = &x[..S::LANES * bb];
    for (j, a) in am.iter_mut().enumerate().take(S::LANES) {
        for vb in x[j * bb..][..bb].chunks_exact(4 * S::LANES) {
            *a = simd.max_i(abs_bits(simd, simd.load_f32(vb)), *a);
        }
    }
    am
}

/// The statistics of up to `LANES` whole blocks along the last axis (f32 x) for the group
/// kernels: from block `g` (block `b` of its row, first element `e` of `x`), stopping
/// before `g1` or a short block. Returns how many, the row position after them, and their
/// `(lo, hi)` (`range`) or `amax_nan` (both) as f32 lanes.
#[inline(always)]
#[allow(clippy::too_many_arguments)]
fn group_stats<S: Simd>(
    simd: S,
    geo: &Geometry,
    x: &[u8],
    b: usize,
    e: usize,
    g: usize,
    g1: usize,
    range: bool,
) -> (usize, usize, [u8; 64], [u8; 64]) {
    let bl = geo.b;
    let (mut n, mut bb) = (0, b);
    let (mut lb, mut hb) = ([0u8; 64], [0u8; 64]);
    while n < S::LANES && g + n < g1 {
        let len = if bb + 1 == geo.nb { geo.d - bb * bl } else { bl };
        if len != bl {
            break;
        }
        let e0 = e + n * bl;
        let (l, h) = stats_contig(simd, Src::F32, &x[4 * e0..4 * (e0 + bl)], range);
        lb[4 * n..4 * n + 4].copy_from_slice(&l.to_le_bytes());
        hb[4 * n..4 * n + 4].copy_from_slice(&h.to_le_bytes());
        n += 1;
        bb = if bb + 1 == geo.nb { 0 } else { bb + 1 };
    }
    (n, bb, lb, hb)
}

/// `p0` with the divisor `d` and reciprocal `r` (little-endian f32 bytes) broadcast.
#[inline(always)]
fn pair_lanes<S: Simd>(simd: S, p0: &Lanes<S>, d: &[u8], r: &[u8]) -> Lanes<S> {
    let d = simd.splat(f32::from_le_bytes([d[0], d[1], d[2], d[3]]));
    Lanes { divisor: d, raw: d, r: simd.splat(f32::from_le_bytes([r[0], r[1], r[2], r[3]])), ..*p0 }
}

/// Whole NVFP4 blocks along the last axis (f32 x, e2m1 y, blocks of whole vectors),
/// `LANES` blocks at a time: each block's `amax_nan`, then the group's e4m3fn scale codes
/// and divisors as one vector (the rule's f32 operations per lane, `FastRule::Nvfp4`'s
/// rounding), then the codes with each block's divisor broadcast. Stops at a short block
/// and returns the blocks done; `Contig` takes the rest.
struct Nvfp4Run<'a, 'y, const MINI: u8> {
    /// `6 * global` and `global`, as the rule computes them.
    g6: f32,
    global: f32,
    sp: Spec,
    geo: Geometry,
    g0: usize,
    g1: usize,
    x: &'a [u8],
    y: &'y mut [u8],
    scales: &'y mut [u8],
}

impl<const MINI: u8> Kernel for Nvfp4Run<'_, '_, MINI> {
    type Output = usize;
    #[inline(always)]
    fn run<S: Simd>(self, simd: S) -> usize {
        let Nvfp4Run { g6, global, sp, geo, g0, g1, x, y, scales } = self;
        // f32 x at the division precision f32, 4-bit codes, as compile-time facts here.
        let sp = sp.fold::<0, 0, 4>();
        let (lanes, bl) = (S::LANES, geo.b);
        // NVFP4's blocks of 16 (one, two or four vectors on AVX-512, AVX2, NEON) to a
        // format with the four-vector encoder, on an ISA with FMA: four-vector steps of
        // fast-range blocks ([`nvfp4_steps`]). Other block sizes go block by block. `p0`:
        // the steps' shared lanes.
        let steps = S::MINI_X4
            && S::HAS_FMA
            && MiniFormat::has_x4_route(MINI)
            && bl == NVFP4_STEP_BLOCK
            && matches!(NVFP4_STEP_BLOCK.checked_div(lanes), Some(1 | 2 | 4))
            && NVFP4_STEP_BLOCK.is_multiple_of(lanes);
        let p0 = fast_lanes(simd, 0.0, 0.0, 0);
        // Every block whole (no short last block in a row): a group's amax by `group_amax`.
        let whole_rows = geo.d.is_multiple_of(bl);
        let (b, mut e, mut g) = (g0 % geo.nb, 0usize, g0);
        // Software-pipelined by one group: the next group's statistics and divisors are
        // computed before this group's codes, so that their long dependency chain (amax,
        // a division, the scale code, the divisor) overlaps the codes' work instead of
        // stalling the codes that wait for it.
        // Two sets of divisor and reciprocal lanes, this group's and the next one's, used
        // in turn (written in place: moved through the loop, the arrays cost more
        // instructions than the group's arithmetic).
        let mut lanes_of = [[[0u8; 64]; 2]; 2];
        let mut cur =
            nvfp4_group(simd, g6, global, steps, &geo, whole_rows, x, scales, g0, b, e, g, g1, &mut lanes_of[0]);
        let mut turn = 0;
        while let Some(Prepared { n, bb, fast }) = cur {
            let (gn, en) = (g + n, e + n * bl);
            let more = gn < g1 && n == lanes;
            let (this, next) = slot_pair(&mut lanes_of, turn);
            cur = if more {
                nvfp4_group(simd, g6, global, steps, &geo, whole_rows, x, scales, g0, bb, en, gn, g1, next)
            } else {
                None
            };
            turn ^= 1;
            let [db, rb] = this;
            let all = ((1u64 << lanes) - 1) as u32;
            let mut j = 0;
            if steps && n == lanes && fast & all == all {
                // A whole group of blocks of one, two or four vectors, all in the fast
                // range: four-vector steps of the float4 encoder (as QuantizeLinear's
                // `MiniX4Loop`), over exactly the group's bytes (no per-step bounds checks or
                // mask tests). Other groups go block by block.
                let xg = &x[4 * e..4 * (e + lanes * bl)];
                let yg = &mut y[e / 2..(e + lanes * bl) / 2];
                nvfp4_steps::<S, MINI>(simd, &sp, &p0, xg, yg, db, rb);
                j = n;
            }
            while j < n {
                let dj = lane_f32(db, j);
                // Not `BlockScale::new(dj, 0).lanes(..)`: its per-block reciprocal and
                // power-of-two tests cost 16-element blocks about 8 % (timed at 1 Mi, AVX-512);
                // the group's fast-range mask is already a vector here.
                let p = Lanes {
                    divisor: simd.splat(dj),
                    raw: simd.splat(dj),
                    r: simd.splat(1.0 / dj),
                    fast: fast >> j & 1 == 1,
                    pow2: false,
                    z: simd.splat_i(0),
                    lo: simd.splat(0.0),
                    hi: simd.splat(0.0),
                    zf: simd.splat(0.0),
                };
                let e0 = e + j * bl;
                let xb = &x[4 * e0..4 * (e0 + bl)];
                for v in 0..bl / lanes {
                    let c = if p.fast {
                        quantize::quantize_vec_d::<S, MINI, false, { quantize::DIV_FAST }>(
                            simd,
                            &sp,
                            &xb[4 * v * lanes..],
                            &p,
                        )
                        .0
                    } else {
                        quantize::quantize_vec_d::<S, MINI, false, { quantize::DIV_RUNTIME }>(
                            simd,
                            &sp,
                            &xb[4 * v * lanes..],
                            &p,
                        )
                        .0
                    };
                    simd.store_u4(c, &mut y[(e0 + v * lanes) / 2..]);
                }
                j += 1;
            }
            (e, g) = (en, gn);
        }
        g - g0
    }
}

/// The block size of [`Nvfp4Run`]'s four-vector steps: NVFP4's 16.
const NVFP4_STEP_BLOCK: usize = 16;

/// [`Nvfp4Run`]'s four-vector steps over a group of blocks of 16 (`xg`, `yg`; one, two or
/// four vectors), every block in the fast range: vector `v` of step `t` takes block
/// `(4 t + v) >> sh`'s divisor from `db` (and reciprocal from `rb`), `sh` a constant of
/// the ISA, so that the vectors of a block share one broadcast (a run-time shift cost
/// AVX2 6 %). One block size only: each instance is another copy of the encoder in an
/// unoptimised build's frame.
#[inline(always)]
fn nvfp4_steps<S: Simd, const MINI: u8>(
    simd: S,
    sp: &Spec,
    p0: &Lanes<S>,
    xg: &[u8],
    yg: &mut [u8],
    db: &[u8; 64],
    rb: &[u8; 64],
) {
    let sh = match NVFP4_STEP_BLOCK / S::LANES {
        1 => 0,
        2 => 1,
        _ => 2,
    };
    let lanes = S::LANES;
    let fmt = MiniFormat::of_id(MINI);
    for (t, (xq, yq)) in xg.chunks_exact(16 * lanes).zip(yg.chunks_exact_mut(2 * lanes)).enumerate() {
        let [ka, kb, kc, kd] = [0, 1, 2, 3].map(|v| 4 * ((4 * t + v) >> sh));
        let (pa, pb, pc, pd) = (
            pair_lanes(simd, p0, &db[ka..ka + 4], &rb[ka..ka + 4]),
            pair_lanes(simd, p0, &db[kb..kb + 4], &rb[kb..kb + 4]),
            pair_lanes(simd, p0, &db[kc..kc + 4], &rb[kc..kc + 4]),
            pair_lanes(simd, p0, &db[kd..kd + 4], &rb[kd..kd + 4]),
        );
        let q = quantize::mini_quotients_x4(simd, sp, xq, [&pa, &pb, &pc, &pd], false);
        simd.store_mini_x4(q, &fmt, yq);
    }
}

/// [`Nvfp4Run`]'s statistics of the group at block `g` (block `b` of its row, element `e`
/// of `x`): each block's `amax_nan`, the group's e4m3fn scale codes (stored in `scales`)
/// and divisors as one vector, stored as f32 lanes in `out[0]` (their reciprocals in
/// `out[1]` where `steps` wants them). `None` where no whole block starts there.
#[inline(always)]
#[allow(clippy::too_many_arguments)]
fn nvfp4_group<S: Simd>(
    simd: S,
    g6: f32,
    global: f32,
    steps: bool,
    geo: &Geometry,
    whole_rows: bool,
    x: &[u8],
    scales: &mut [u8],
    g0: usize,
    b: usize,
    e: usize,
    g: usize,
    g1: usize,
    out: &mut [[u8; 64]; 2],
) -> Option<Prepared> {
    let (lanes, bl) = (S::LANES, geo.b);
    let (n, bb, amax) = if whole_rows && g + lanes <= g1 {
        (lanes, geo.next_block(b, lanes), simd.f32_of(group_amax(simd, &x[4 * e..4 * (e + lanes * bl)], bl)))
    } else {
        let (n, bb, ab, _) = group_stats(simd, geo, x, b, e, g, g1, false);
        (n, bb, simd.load_f32(&ab))
    };
    if n == 0 {
        return None;
    }
    // Scale codes (qdq_ref::scaled::nvfp4_block_scale): v = amax / (6 g); NaN ->
    // 0x7f, 0 -> 0x38, else e4m3fn(clamp(v, 2^-9, 448)) nearest-even.
    let v = simd.div(amax, simd.splat(g6));
    let vc = simd.min(simd.max(v, simd.splat(1.0 / 512.0)), simd.splat(448.0));
    let vb = simd.bits(vc);
    let rnd = simd.add_i(simd.add_i(vb, simd.splat_i(0x7_ffff)), simd.and_i(simd.shr(vb, 20), simd.splat_i(1)));
    let normal = simd.sub_i(simd.shr(rnd, 20), simd.splat_i(120 << 3));
    let sub = simd.cvt_rne(simd.mul(vc, simd.splat(512.0)));
    let is_sub = simd.lt_i(vb, simd.splat_i((1.0f32 / 64.0).to_bits() as i32));
    let code = simd.select_i(is_sub, sub, normal);
    let code = simd.select_i(simd.eq(v, simd.splat(0.0)), simd.splat_i(0x38), code);
    let code = simd.select_i(simd.is_nan(v), simd.splat_i(0x7f), code);
    // Divisors d = f32(decode(code) * g): subnormal codes c / 512, normal ones the f32
    // pattern rebiased 7 -> 127, NaN for 0x7f.
    let dec = simd.select(
        simd.lt_i(code, simd.splat_i(8)),
        simd.mul(simd.cvt_f32(code), simd.splat(1.0 / 512.0)),
        simd.f32_of(simd.shl(simd.add_i(code, simd.splat_i(120 << 3)), 20)),
    );
    let dec = simd.select(simd.eq_i(code, simd.splat_i(0x7f)), simd.splat(f32::NAN), dec);
    let d = simd.mul(dec, simd.splat(global));
    let fast = !simd.mask_bits(quantize::slow_scale_lanes(simd, d));
    let mut cb = [0u8; 64];
    simd.store_i32(code, &mut cb);
    let [db, rb] = out;
    simd.store_f32(d, db);
    // The reciprocals serve Markstein's division, which a step takes only where the
    // ISA leaves some of its quotients to it.
    if steps && S::MINI_DIV_QUOTIENTS < 4 {
        simd.store_f32(simd.div(simd.splat(1.0), d), rb);
    }
    // The group's scale codes: one narrowing store for a whole group.
    if n == lanes {
        simd.store_u8(code, &mut scales[g - g0..g - g0 + lanes]);
    } else {
        for (j, sc) in scales[g - g0..g - g0 + n].iter_mut().enumerate() {
            *sc = cb[4 * j];
        }
    }
    Some(Prepared { n, bb, fast })
}

/// One whole block's integer codes (`x.len() / 4` a multiple of LANES) with broadcast
/// parameters: four vectors per narrowing store where the block has them.
#[inline(always)]
fn block_codes<S: Simd, const DIV: u8>(simd: S, sp: &Spec, x: &[u8], p: &Lanes<S>, y: &mut [u8]) {
    let (lanes, vb, bw) = (S::LANES, 4 * S::LANES, sp.bits as usize);
    let nv = x.len() / vb;
    let mut v = 0;
    if matches!(bw, 4 | 8) {
        while v + 4 <= nv {
            let mut c = [simd.splat_i(0); 4];
            for (t, ct) in c.iter_mut().enumerate() {
                *ct = quantize::quantize_vec_d::<S, 0, false, DIV>(simd, sp, &x[(v + t) * vb..], p).0;
            }
            let at = v * lanes * bw / 8;
            if bw == 4 {
                simd.store_u4x4(c, &mut y[at..]);
            } else {
                simd.store_u8x4(c, &mut y[at..]);
            }
            v += 4;
        }
    }
    while v < nv {
        let c = quantize::quantize_vec_d::<S, 0, false, DIV>(simd, sp, &x[v * vb..], p).0;
        store_codes(simd, sp.bits, c, y, v * lanes);
        v += 1;
    }
}

/// QuantizeLinear's codes of row `e..e + cols` of x (e on a packing boundary, cols a
/// multiple of `4 * LANES`) with the per-column scales in `b`: the integer path of
/// `quantize::quantize_vec_d`, Markstein's division where a vector's scales are all in its
/// range, a true division elsewhere.
#[inline(always)]
#[allow(clippy::too_many_arguments)]
fn block_codes_row<S: Simd>(
    simd: S,
    qmin: i32,
    qmax: i32,
    bits: u32,
    x: &[u8],
    e: usize,
    cols: usize,
    b: &OrtBufs,
    y: &mut [u8],
    pf: Option<&[u8]>,
) {
    // Groups of four vectors, as in `ort_codes_row`: every slice in chunks of exactly its
    // bytes, so the loop has no bounds checks.
    let (vb, gb, bw) = (4 * S::LANES, 16 * S::LANES, bits as usize);
    // (One quotient by the divide instruction, as before `Spec::extra_div`: this runs on the
    // pool's threads, where the caller's `qdq::tuning` setting is not in reach.)
    let sp = Spec {
        src: Src::F32,
        prec: Prec::F32,
        src_exact: true,
        enc: Encode::Int { qmin, qmax },
        bits,
        extra_div: false,
        split_product: true,
    };
    let xs = x[4 * e..][..4 * cols].chunks_exact(gb);
    let scales = b.s[..4 * cols].chunks_exact(gb).zip(b.rcp[..4 * cols].chunks_exact(gb));
    let zs = b.z[..4 * cols].chunks_exact(gb).zip(b.fast[..cols / S::LANES].chunks_exact(4));
    let bounds = b.lo_b[..4 * cols].chunks_exact(gb).zip(b.hi_b[..4 * cols].chunks_exact(gb));
    let out = y[e * bw / 8..][..cols * bw / 8].chunks_exact_mut(4 * S::LANES * bw / 8);
    let mut pgs = pf.map(|p| p.chunks_exact(gb));
    // 8- or 4-bit codes with FMA: four vectors whose scales are all in the fast range go
    // as `quantize::sat_block_with_range`'s steps (each column's scale comes from its own
    // block's range: no clamp of the quotient, the saturating packs the upper bound).
    let (range, signed) = (S::HAS_FMA && matches!(bw, 4 | 8), qmin < 0);
    for ((((xg, (sg, rg)), (zg, fg)), (lg, hg)), yg) in xs.zip(scales).zip(zs).zip(bounds).zip(out) {
        if let Some(pg) = pgs.as_mut().and_then(|it| it.next()) {
            for o in (0..gb).step_by(64) {
                simd.prefetch(&pg[o..]);
            }
        }
        if range && *fg == [true; 4] {
            let at = |t: usize| t * vb..(t + 1) * vb;
            let p = [
                range_lanes(simd, &sg[at(0)], &rg[at(0)], &zg[at(0)], &lg[at(0)]),
                range_lanes(simd, &sg[at(1)], &rg[at(1)], &zg[at(1)], &lg[at(1)]),
                range_lanes(simd, &sg[at(2)], &rg[at(2)], &zg[at(2)], &lg[at(2)]),
                range_lanes(simd, &sg[at(3)], &rg[at(3)], &zg[at(3)], &lg[at(3)]),
            ];
            let zq = simd.zero_points_x4([p[0].z, p[1].z, p[2].z, p[3].z]);
            quantize::sat_step_with_range(simd, &sp, xg, [&p[0], &p[1], &p[2], &p[3]], zq, signed, bw, yg);
            continue;
        }
        let mut c = [simd.splat_i(0); 4];
        for (t, ct) in c.iter_mut().enumerate() {
            let o = t * vb;
            let s = simd.load_f32(&sg[o..]);
            let p = Lanes {
                divisor: s,
                raw: s,
                r: simd.load_f32(&rg[o..]),
                fast: fg[t],
                pow2: false,
                z: simd.load_i32(&zg[o..]),
                lo: simd.load_f32(&lg[o..]),
                hi: simd.load_f32(&hg[o..]),
                zf: simd.splat(0.0),
            };
            *ct = if fg[t] {
                quantize::quantize_vec_d::<S, 0, false, { quantize::DIV_FAST }>(simd, &sp, &xg[o..], &p).0
            } else {
                quantize::quantize_vec_d::<S, 0, false, { quantize::DIV_RUNTIME }>(simd, &sp, &xg[o..], &p).0
            };
        }
        match bits {
            4 => simd.store_u4x4(c, yg),
            8 => simd.store_u8x4(c, yg),
            _ => {
                for (t, ct) in c.into_iter().enumerate() {
                    store_codes(simd, bits, ct, yg, t * S::LANES);
                }
            }
        }
    }
}

/// [`block_codes_row`]'s parameters of one vector of columns for
/// `quantize::sat_step_with_range`: scales `s`, reciprocals `r`, zero points `z` and lower
/// bounds `lo` from the unit's buffers. (A function, not a closure: closures do not
/// inherit the ISA's target features.)
#[inline(always)]
fn range_lanes<S: Simd>(simd: S, s: &[u8], r: &[u8], z: &[u8], lo: &[u8]) -> Lanes<S> {
    let (s, zero) = (simd.load_f32(s), simd.splat(0.0));
    let (r, z, lo) = (simd.load_f32(r), simd.load_i32(z), simd.load_f32(lo));
    Lanes { divisor: s, raw: s, r, fast: true, pow2: false, z, lo, hi: zero, zf: zero }
}

/// Element `i` of x as f32.
fn read_x(src: Src, x: &[u8], i: usize) -> f32 {
    match src {
        Src::F32 => f32::from_le_bytes([x[4 * i], x[4 * i + 1], x[4 * i + 2], x[4 * i + 3]]),
        Src::F16 => half::f16::from_le_bytes([x[2 * i], x[2 * i + 1]]).to_f32(),
        Src::Bf16 => half::bf16::from_le_bytes([x[2 * i], x[2 * i + 1]]).to_f32(),
        Src::I32 => i32::from_le_bytes([x[4 * i], x[4 * i + 1], x[4 * i + 2], x[4 * i + 3]]) as f32,
    }
}

/// The value of a stored scale (its bytes from [`params`]): what DequantizeLinear
/// multiplies by, and so what the codes divide by.
#[inline(always)]
fn scale_value(kind: ScaleKind, b: &[u8; 4]) -> f32 {
    match kind {
        ScaleKind::F32 => f32::from_le_bytes(*b),
        // e8m0: 2^(c - 127) (code 0 is the subnormal 2^-127), 0xff NaN.
        ScaleKind::E8M0 => e8m0_value(b[0]),
        // e4m3fn codes times the global scale, for the positive non-NaN codes the rule gives:
        // subnormal m * 2^-9, normal the f32 pattern rebiased 7 -> 127.
        ScaleKind::E4M3Times(g) if b[0] < 0x7f => {
            let c = b[0] as u32;
            let v = if c < 8 { c as f32 / 512.0 } else { f32::from_bits((c + (120 << 3)) << 20) };
            v * f32::from_bits(g)
        }
        _ => kind.get(b, 0),
    }
}

/// A block's stored scale bytes and zero point.
#[inline]
fn params(rule: Rule, lo: f32, hi: f32, out: DataType, first: impl FnOnce() -> Option<f32>) -> ([u8; 4], i32) {
    match rule {
        Rule::Block { mode, scale_type } => {
            let (s, z) = r::block_params(mode, lo, hi, out, scale_type, first);
            let b = match scale_type {
                DataType::F16 => {
                    let h = half::f16::from_f32(s).to_le_bytes();
                    [h[0], h[1], 0, 0]
                }
                DataType::Bf16 => {
                    let h = half::bf16::from_f32(s).to_le_bytes();
                    [h[0], h[1], 0, 0]
                }
                _ => s.to_le_bytes(),
            };
            (b, z)
        }
        Rule::Mx { rounding } => ([r::mx_scale(hi, out, rounding), 0, 0, 0], 0),
        Rule::Nvfp4 { global } => ([r::nvfp4_block_scale(hi, global), 0, 0, 0], 0),
    }
}

/// The codes of elements `[begin, end)` of a part with its stored parameters.
#[inline(always)]
#[allow(clippy::too_many_arguments)]
fn codes<S: Simd>(
    simd: S,
    rule: Rule,
    x_type: DataType,
    x: &[u8],
    scales: &[u8],
    zp: Option<Packed<'_>>,
    layout: Layout,
    out: DataType,
    signed: bool,
    begin: usize,
    end: usize,
    y: &mut [u8],
) {
    let (scale_type, kind) = match rule {
        Rule::Block { mode: BlockMode::Onnxruntime, .. } => {
            let mut op = OrtOp { x, scales, zp, signed, begin, y };
            return walk::walk(simd, &mut op, Segments::new(layout, begin, end));
        }
        Rule::Block { scale_type, .. } => (scale_type, None),
        Rule::Mx { .. } => (DataType::E8M0, None),
        Rule::Nvfp4 { global } => (DataType::E8M0, Some(ScaleKind::E4M3Times(global.to_bits()))),
    };
    let zp = if matches!(rule, Rule::Block { .. }) { zp } else { None };
    if let Some(mut job) = Job::new(x_type, x, scale_type, scales, zp, layout, out, true, Precision::F32) {
        if let Some(k) = kind {
            job.scale_kind = k;
        }
        quantize::run(simd, &job, begin, end, y);
    }
}

/// onnxruntime's element rule ([`qdq_ref::scaled::ort_value`]) for [`walk::walk`]: f32
/// multiplication by the rounded reciprocal, rounding half away from zero, x86's
/// conversion of NaN, ±inf and huge quotients to `i32::MIN` (hence qmin).
struct OrtOp<'a, 'y> {
    x: &'a [u8],
    scales: &'a [u8],
    zp: Option<Packed<'a>>,
    signed: bool,
    begin: usize,
    y: &'y mut [u8],
}

impl<S: Simd> RunOp<S> for OrtOp<'_, '_> {
    /// Reciprocals and zero points.
    type P = (S::F, S::I);

    #[inline(always)]
    fn head(&self, i: usize) -> usize {
        (i - self.begin) & 1
    }

    #[inline(always)]
    fn splat(&self, simd: S, k: usize) -> (S::F, S::I) {
        let s = ScaleKind::F32.get(self.scales, k);
        let r = if s == 0.0 { 0.0 } else { 1.0 / s };
        let z = self.zp.map_or(0, |p| packing::get_int(p.dtype, p.data, k) as i32);
        (simd.splat(r), simd.splat_i(z))
    }

    #[inline(always)]
    fn seq(&self, simd: S, k: usize, valid: usize) -> (S::F, S::I) {
        let mut t = [0u8; 64];
        for l in 0..valid {
            t[4 * l..4 * l + 4].copy_from_slice(&ScaleKind::F32.get(self.scales, k + l).to_le_bytes());
        }
        let s = simd.load_f32(&t);
        let zero = simd.splat(0.0);
        let r = simd.select(simd.eq(s, zero), zero, simd.div(simd.splat(1.0), s));
        let z = match &self.zp {
            Some(p) => load_codes(simd, p, k, valid, false),
            None => simd.splat_i(0),
        };
        (r, z)
    }

    #[inline(always)]
    fn part(&mut self, simd: S, p: &(S::F, S::I), _k: usize, i: usize, take: usize) {
        ort_part(simd, self.x, i, take, p, self.signed, self.y, i - self.begin);
    }

    #[inline(always)]
    fn vector(&mut self, simd: S, p: &(S::F, S::I), _k: usize, i: usize) {
        let v = simd.load_f32(&self.x[4 * i..4 * (i + S::LANES)]);
        let c = ort_codes(simd, v, p, self.signed);
        store_codes(simd, 4, c, self.y, i - self.begin);
    }

    #[inline(always)]
    fn steps(&mut self, simd: S, p: &(S::F, S::I), k: usize, i: usize, n: usize) {
        for v in 0..4 * n {
            <Self as RunOp<S>>::vector(self, simd, p, k, i + v * S::LANES);
        }
    }
}

/// `take` (< LANES, or at any position) elements of the onnxruntime rule from element `i`
/// of f32 `x` into packed 4-bit y at element `e`.
#[inline(always)]
#[allow(clippy::too_many_arguments)]
fn ort_part<S: Simd>(simd: S, x: &[u8], i: usize, take: usize, p: &(S::F, S::I), signed: bool, y: &mut [u8], e: usize) {
    let mut t = [0u8; 64];
    t[..4 * take].copy_from_slice(&x[4 * i..4 * (i + take)]);
    let c = ort_codes(simd, simd.load_f32(&t), p, signed);
    let mut o = [0u8; 64];
    simd.store_i32(c, &mut o);
    let dtype = if signed { DataType::I4 } else { DataType::U4 };
    for l in 0..take {
        let v = lane_i32(&o, l);
        packing::set(dtype, y, e + l, v as u32 & 15);
    }
}

/// [`qdq_ref::scaled::ort_value`] per lane, for the strip and walker paths: the rule of
/// [`ort_code_vec`] with the clamp bounds from the zero points.
#[inline(always)]
fn ort_codes<S: Simd>(simd: S, x: S::F, p: &(S::F, S::I), signed: bool) -> S::I {
    let (qmin, qmax) = if signed { (-8, 7) } else { (0, 15) };
    let lo = simd.cvt_f32(simd.sub_i(simd.splat_i(qmin), p.1));
    let hi = simd.cvt_f32(simd.sub_i(simd.splat_i(qmax), p.1));
    ort_code_vec::<S, false>(simd, x, p.0, p.1, lo, hi)
}

/// One vector of onnxruntime's element rule (see [`ort_codes_row`]): reciprocals `r`, zero
/// points `z` and the bounds `qmin - z`, `qmax - z` per lane.
#[inline(always)]
fn ort_code_vec<S: Simd, const TAME: bool>(simd: S, x: S::F, r: S::F, z: S::I, lo: S::F, hi: S::F) -> S::I {
    let q = simd.mul(x, r);
    // q >= 2^31 and NaN (min's NaN rule gives `big` for it) -> qmin, as x86's conversion.
    // `TAME` (the scale in the fast range, x within its block's range): no q >= 2^31, and
    // max's NaN rule sends NaN to the lower bound.
    let q = if TAME {
        q
    } else {
        let big = simd.splat(2_147_483_648.0);
        simd.select(simd.eq(simd.min(q, big), big), lo, q)
    };
    let qc = simd.min(simd.max(q, lo), hi);
    let h =
        simd.f32_of(simd.or_i(simd.and_i(simd.bits(qc), simd.splat_i(i32::MIN)), simd.bits(simd.splat(HALF_BELOW))));
    simd.add_i(simd.cvt_trunc(simd.add(qc, h)), z)
}

/// Blockwise, MX or NVFP4 quantization, validated: parts of whole block rows on `cfg`'s
/// executor.
#[allow(clippy::too_many_arguments)]
pub(crate) fn blocks(
    cfg: &Config<'_>,
    isa: isa::Isa,
    rule: Rule,
    x_type: DataType,
    x: &[u8],
    layout: Layout,
    out: DataType,
    y: &mut [u8],
    scales: &mut [u8],
    zero_points: Option<&mut [u8]>,
) {
    let (Some(src), Some(geo)) = (Src::of(x_type), Geometry::of(layout)) else { return };
    let xs = src.size();
    let n = x.len() / xs;
    let total = geo.block_rows();
    if n == 0 || total == 0 {
        return;
    }
    // Part boundaries: every 4 block rows (uniform) or 4 outer indices, so that y and packed
    // zero points split on byte boundaries.
    let step = if geo.uniform() { 4 } else { 4 * geo.nb };
    let per_rows = match cfg.chunk(n, Cost::Blocks) {
        None => total,
        Some(per) => (per / (geo.b * geo.inner).max(1)).max(1).next_multiple_of(step),
    };
    let count = total.div_ceil(per_rows);
    let (bits, ssz) = (out.bits() as usize, rule.scale_size());
    let (mut g, mut y, mut scales, mut zps) = (0usize, Some(y), Some(scales), zero_points);
    let mut parts = std::iter::from_fn(|| {
        if g >= total {
            return None;
        }
        let g1 = (g + per_rows).min(total);
        let (e0, e1) = (geo.start(g), if g1 == total { n } else { geo.start(g1) });
        let k = (g1 - g) * geo.inner;
        let last = g1 == total;
        let (yh, yt) = {
            let yy = y.take()?;
            let at = if last { yy.len() } else { (e1 - e0) * bits / 8 };
            yy.split_at_mut(at)
        };
        y = Some(yt);
        let (sh, st) = scales.take()?.split_at_mut(k * ssz);
        scales = Some(st);
        let zh = zps.take().map(|z| {
            let at = if last { z.len() } else { k * bits / 8 };
            let (h, t) = z.split_at_mut(at);
            zps = Some(t);
            h
        });
        let part = BlockPart {
            rule,
            geo,
            g0: g,
            g1,
            x_type,
            src,
            x: &x[e0 * xs..e1 * xs],
            out,
            y: yh,
            scales: sh,
            zero_points: zh,
        };
        g = g1;
        Some(part)
    });
    for_parts(cfg, count, &mut parts, &|_, part| isa::dispatch(isa, part));
}

#[cfg(test)]
mod tests {
    use super::*;

    /// f32 bit patterns: every exponent with many mantissas, both signs, and the specials.
    fn patterns() -> impl Iterator<Item = f32> {
        (0u32..=0xffff_ffff)
            .step_by(65_537)
            .chain([0, 1, 0x007f_ffff, 0x0080_0000, 0x7f7f_ffff, 0x7f80_0000, 0x7fc0_0000])
            .map(f32::from_bits)
    }

    #[test]
    fn fast_rules_match_the_reference() {
        let mut checked = 0;
        for out in [DataType::E4M3Fn, DataType::E5M2, DataType::E2M3, DataType::E3M2, DataType::E2M1, DataType::I8] {
            let f = FastRule::of(Rule::Mx { rounding: ScaleRounding::Floor }, out).expect("an MX element type");
            for a in patterns().map(f32::abs) {
                if let Some(c) = f.code(a) {
                    assert_eq!(c, r::mx_scale(a, out, ScaleRounding::Floor), "{out:?} amax {a:e}");
                    checked += 1;
                }
            }
        }
        for g in [1.0f32, 0.5, 3.0e-3, 7.1e5, 1.0e-30, f32::from_bits(1)] {
            let f = FastRule::of(Rule::Nvfp4 { global: g }, DataType::E2M1).expect("NVFP4");
            for a in patterns().map(f32::abs) {
                if let Some(c) = f.code(a) {
                    assert_eq!(c, r::nvfp4_block_scale(a, g), "global {g:e} amax {a:e}");
                    checked += 1;
                }
            }
        }
        assert!(checked > 300_000, "{checked}");
    }

    #[test]
    fn half_below_rounds_half_away_from_zero() {
        // What `ort_codes_row` relies on over its clamped range (|q| <= 15): every f32 within
        // 4096 steps of each half-integer of [-64, 64], and a stride through the rest.
        let mut checked = 0u64;
        let mut check = |q: f32| {
            if q.abs() <= 64.0 {
                assert_eq!((q + HALF_BELOW.copysign(q)).trunc(), q.round(), "{q:e} ({:#x})", q.to_bits());
                checked += 1;
            }
        };
        for k in -128..=128 {
            let h = (k as f32 / 2.0).to_bits();
            for d in 0..4096u32 {
                check(f32::from_bits(h.wrapping_add(d)));
                check(f32::from_bits(h.wrapping_sub(d)));
            }
        }
        for b in (0..0x4280_0000u32).step_by(4093) {
            check(f32::from_bits(b));
            check(-f32::from_bits(b));
        }
        assert!(checked > 1_000_000, "{checked}");
    }

    #[test]
    fn scale_values_match_the_decoders() {
        for c in 0..=255u8 {
            for kind in
                [ScaleKind::E8M0, ScaleKind::E4M3Times(0.75f32.to_bits()), ScaleKind::E4M3Times(3.0e-39f32.to_bits())]
            {
                let b = [c, 0, 0, 0];
                assert_eq!(scale_value(kind, &b).to_bits(), kind.get(&b, 0).to_bits(), "{kind:?} code {c:#x}");
            }
        }
    }
}
