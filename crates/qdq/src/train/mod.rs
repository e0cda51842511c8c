//! Training mode on the SIMD backend: the same functions, contracts and results as
//! [`qdq_ref::train`] (read its docs for the semantics, the STE / LSQ derivation and the
//! summation order), bit for bit on every ISA and thread count.
//!
//! * The forwards ([`quantize_train`], [`fake_quantize`]) run QuantizeLinear's own vector
//!   code, so `y` equals the inference op's output exactly; the mask comes from the same
//!   registers (vector compare results packed to bits) at no extra pass.
//! * The backward passes are one vector pass each; the reductions of
//!   [`fake_quantize_backward`] and [`dequantize_scale_grad`] follow the reference's fixed
//!   order (sixteen interleaved partials per run, fixed tile splits), so parallel and
//!   sequential runs, and every ISA, give the same bits.
//! * Parallelism: elementwise work splits into chunks of whole bytes of every output
//!   (multiples of 64 elements). Sums split where the order allows it: a per-tensor sum
//!   along its tile tree (the tree's leaves in parallel, then its additions in order), layouts whose groups are
//!   contiguous (per-axis on the first axis, blocked) by groups; per-axis with dimensions
//!   before the axis sums by channel ranges, after a parallel `dx` pass.
//! * The slice API allocates nothing; parallel calls put their partial sums on the stack.

mod kernels;

use crate::codec::MiniFormat;
use crate::config::Cost;
use crate::dequantize::Out;
use crate::isa::{self, Isa, Kernel};
use crate::quantize::{Job, Src};
use crate::simd::Simd;
use crate::threads::{drive, for_parts, split, Leaves, Split};
use crate::Config;
use kernels::{Backward, DequantizeGrad, Elementwise, FakeQuantGrad, GradOp, Product, Walk};
use qdq_ref::float::{canonical_nan, FloatFormat};
use qdq_ref::train::SUM_TILE;
use qdq_ref::{packing, DataType, Layout, Packed, Precision, Result, Values, ValuesMut};
use std::sync::{Mutex, PoisonError};

pub use qdq_ref::train::{mask_bit, mask_len, FakeQuantGrads, GradOptions, QuantParams};

// ---------------------------------------------------------------------------------------
// Kernels bound to their arguments, for `isa::dispatch`.

struct ForwardKernel<'a, 'b> {
    job: &'b Job<'a>,
    product: Product,
    begin: usize,
    end: usize,
    y: &'b mut [u8],
    mask: Option<&'b mut [u8]>,
}

impl Kernel for ForwardKernel<'_, '_> {
    type Output = ();
    #[inline(always)]
    fn run<S: Simd>(self, simd: S) {
        kernels::forward(simd, self.job, self.product, self.begin, self.end, self.y, self.mask)
    }
}

struct ElementwiseKernel<'a, 'b> {
    b: &'b Backward<'a>,
    begin: usize,
    end: usize,
    dx: &'b mut [u8],
}

impl Kernel for ElementwiseKernel<'_, '_> {
    type Output = ();
    #[inline(always)]
    fn run<S: Simd>(self, simd: S) {
        kernels::elementwise(simd, self.b, self.begin, self.end, self.dx)
    }
}

struct WalkKernel<'o, 'p, O> {
    op: &'p O,
    layout: Layout,
    w: Walk<'o>,
}

impl<O: GradOp> Kernel for WalkKernel<'_, '_, O> {
    type Output = ();
    #[inline(always)]
    fn run<S: Simd>(self, simd: S) {
        kernels::walk(simd, self.op, self.layout, self.w)
    }
}

fn bits_of(out: Out) -> u32 {
    8 * out.size() as u32
}

/// The kernels' name for a wide output's type.
fn out_kind(v: &ValuesMut<'_>) -> Out {
    match v {
        ValuesMut::F32(_) => Out::F32,
        ValuesMut::F16(_) => Out::F16,
        ValuesMut::Bf16(_) => Out::Bf16,
    }
}

// ---------------------------------------------------------------------------------------
// Forward.

fn job<'a>(x: &Values<'a>, p: &QuantParams<'a>, precision: Precision) -> Option<Job<'a>> {
    Job::new(
        x.dtype(),
        x.bytes(),
        p.scale.dtype(),
        p.scale.bytes(),
        p.zero_point,
        p.layout,
        p.opts.output,
        p.opts.saturate,
        precision,
    )
}

/// QuantizeLinear forward in training mode: `y` exactly as [`quantize()`](crate::quantize())
/// (`p.opts.output` is y's type, `y` holds its `byte_len(x.len())` bytes), plus `mask`
/// (`ceil(n / 8)` bytes): bit `i % 8` of byte `i / 8` is 1 when element `i` was
/// representable, neither clamped nor NaN (the bounds count as representable). Formulas:
/// [`qdq_ref::train`]. Default [`Config`].
///
/// ```
/// use qdq::train::{self, QuantParams};
/// use qdq::{DataType, Layout, QuantizeOptions, Values};
/// let p = QuantParams { scale: Values::F32(&[0.5]), zero_point: None, layout: Layout::PerTensor,
///                       opts: QuantizeOptions::new(DataType::I8) };
/// let x = [-1.0f32, 0.25, 0.75, 100.0, f32::NAN];
/// let (mut y, mut mask) = ([0u8; 5], [0u8; 1]);
/// train::quantize_train(Values::F32(&x), &p, &mut y, &mut mask)?;
/// // x / 0.5 rounded half to even (i8 bytes); 200 clamps to 127, NaN goes to -128.
/// assert_eq!(y.map(|b| b as i8), [-2, 0, 2, 127, -128]);
/// assert_eq!(mask, [0b00111]); // the two clamped elements get 0
/// # Ok::<(), qdq::Error>(())
/// ```
pub fn quantize_train(x: Values<'_>, p: &QuantParams<'_>, y: &mut [u8], mask: &mut [u8]) -> Result<()> {
    quantize_train_with(&Config::default(), x, p, y, mask)
}

/// [`quantize_train`] with an explicit [`Config`].
///
/// ```
/// use qdq::train::{self, QuantParams};
/// use qdq::{Config, DataType, Layout, Packed, QuantizeOptions, Values};
/// let p = QuantParams { scale: Values::F32(&[1.0]), zero_point: Some(Packed::from(&[3u8])),
///                       layout: Layout::PerTensor, opts: QuantizeOptions::new(DataType::U8) };
/// let (mut y, mut mask) = ([9u8; 4], [0u8; 1]);
/// let x = Values::F32(&[-5.0, -3.0, 0.4, 300.0]);
/// train::quantize_train_with(&Config::sequential(), x, &p, &mut y, &mut mask)?;
/// // round(x) + 3 clamped to [0, 255]: -3 lands on the bound 0, which still counts as representable.
/// assert_eq!(y, [0, 0, 3, 255]);
/// assert_eq!(mask, [0b0110]);
/// # Ok::<(), qdq::Error>(())
/// ```
pub fn quantize_train_with(
    cfg: &Config,
    x: Values<'_>,
    p: &QuantParams<'_>,
    y: &mut [u8],
    mask: &mut [u8],
) -> Result<()> {
    crate::isa::fpenv::scoped(|| {
        let precision = qdq_ref::train::check_quantize_train(&x, p, y.len(), mask.len())?;
        let isa = cfg.resolve_isa()?;
        let Some(job) = job(&x, p, precision) else {
            // Unreachable for the validated types (float x, float scale); kept total.
            return qdq_ref::train::quantize_train(x, p, y, mask);
        };
        let out = p.opts.output;
        let n = x.len();
        drive(cfg, Cost::Double, 0..n, [Some((y, out.bits())), Some((mask, 1))], &|b, e, [y, m]| {
            let (Some((y, _)), m) = (y, m) else { return };
            let mask = m.map(|(m, _)| m);
            isa::dispatch(isa, ForwardKernel { job: &job, product: Product::Codes, begin: b, end: e, y, mask });
        });
        packing::zero_padding(out, y, n);
        Ok(())
    })
}

/// Fake quantization forward: `y = DequantizeLinear(QuantizeLinear(x))` with the same
/// parameters in one pass, bit-identical to the two ops (`y` in f32, f16 or bf16, as many
/// elements as `x`), plus the optional mask of [`quantize_train`]. Default [`Config`].
///
/// ```
/// use qdq::train::{self, QuantParams};
/// use qdq::{DataType, Layout, QuantizeOptions, Values, ValuesMut};
/// let p = QuantParams { scale: Values::F32(&[0.5]), zero_point: None, layout: Layout::PerTensor,
///                       opts: QuantizeOptions::new(DataType::I8) };
/// let (mut y, mut mask) = ([0f32; 3], [0u8; 1]);
/// train::fake_quantize(Values::F32(&[0.3, -0.7, 100.0]), &p, ValuesMut::F32(&mut y), Some(&mut mask))?;
/// // Codes 1, -1 and 127 (clamped) times the scale.
/// assert_eq!(y, [0.5, -0.5, 63.5]);
/// assert_eq!(mask, [0b011]);
/// # Ok::<(), qdq::Error>(())
/// ```
pub fn fake_quantize(x: Values<'_>, p: &QuantParams<'_>, y: ValuesMut<'_>, mask: Option<&mut [u8]>) -> Result<()> {
    fake_quantize_with(&Config::default(), x, p, y, mask)
}

/// [`fake_quantize`] with an explicit [`Config`].
///
/// ```
/// use qdq::train::{self, QuantParams};
/// use qdq::{Config, DataType, Layout, QuantizeOptions, Values, ValuesMut};
/// // Shape [2, 2] with one scale per row: 0.5, then 0.25.
/// let p = QuantParams { scale: Values::F32(&[0.5, 0.25]), zero_point: None,
///                       layout: Layout::PerAxis { outer: 1, axis_len: 2, inner: 2 },
///                       opts: QuantizeOptions::new(DataType::I8) };
/// let x = [0.3f32, 1.3, -0.7, 40.0];
/// let mut y = [0f32; 4];
/// train::fake_quantize_with(&Config::default(), Values::F32(&x), &p, ValuesMut::F32(&mut y), None)?;
/// // Codes 1, 3 | -3, 127 (160 clamped) times their row's scale.
/// assert_eq!(y, [0.5, 1.5, -0.75, 31.75]);
/// # Ok::<(), qdq::Error>(())
/// ```
pub fn fake_quantize_with(
    cfg: &Config,
    x: Values<'_>,
    p: &QuantParams<'_>,
    mut y: ValuesMut<'_>,
    mask: Option<&mut [u8]>,
) -> Result<()> {
    crate::isa::fpenv::scoped(|| {
        let precision = qdq_ref::train::check_fake_quantize(&x, p, y.len(), mask.as_ref().map(|m| m.len()))?;
        let isa = cfg.resolve_isa()?;
        let Some(job) = job(&x, p, precision) else {
            return qdq_ref::train::fake_quantize(x, p, y, mask);
        };
        let out = out_kind(&y);
        let n = x.len();
        let product = Product::Dequantized(out);
        let outs = [Some((y.bytes_mut(), bits_of(out))), mask.map(|m| (m, 1))];
        drive(cfg, Cost::Double, 0..n, outs, &|b, e, [y, m]| {
            let (Some((y, _)), m) = (y, m) else { return };
            let mask = m.map(|(m, _)| m);
            isa::dispatch(isa, ForwardKernel { job: &job, product, begin: b, end: e, y, mask });
        });
        Ok(())
    })
}

// ---------------------------------------------------------------------------------------
// Elementwise backward passes.

fn src_of(v: &Values<'_>) -> Src {
    // The checks admit f32 / f16 / bf16 gradients only.
    Src::of(v.dtype()).unwrap_or(Src::F32)
}

fn run_elementwise(cfg: &Config, isa: Isa, b: &Backward<'_>, n: usize, dx: &mut [u8]) {
    drive(cfg, Cost::Double, 0..n, [Some((dx, bits_of(b.out))), None], &|lo, hi, [dx, _]| {
        if let Some((dx, _)) = dx {
            isa::dispatch(isa, ElementwiseKernel { b, begin: lo, end: hi, dx });
        }
    });
}

const ONE: [u8; 4] = 1.0f32.to_le_bytes();

/// QuantizeLinear backward, straight-through: `dx = mask ? (lda * dy) / s_P : +0`, with
/// `s_P` the divisor the forward used (the scale rounded to the division precision) and
/// `mask` the forward's. `dx` in f32, f16 or bf16, as many elements as `dy`. Default
/// [`Config`].
///
/// ```
/// use qdq::train::{self, QuantParams};
/// use qdq::{DataType, Layout, QuantizeOptions, Values, ValuesMut};
/// let p = QuantParams { scale: Values::F32(&[0.5]), zero_point: None, layout: Layout::PerTensor,
///                       opts: QuantizeOptions::new(DataType::I8) };
/// let dy = [1.0f32, -2.0, 0.5, 3.0];
/// let mut dx = [9.0f32; 4];
/// // dx = 2 * dy / 0.5; element 3 was clamped in the forward (mask bit 0).
/// train::quantize_backward(Values::F32(&dy), &[0b0111], &p, 2.0, ValuesMut::F32(&mut dx))?;
/// assert_eq!(dx, [4.0, -8.0, 2.0, 0.0]);
/// # Ok::<(), qdq::Error>(())
/// ```
pub fn quantize_backward(dy: Values<'_>, mask: &[u8], p: &QuantParams<'_>, lda: f32, dx: ValuesMut<'_>) -> Result<()> {
    quantize_backward_with(&Config::default(), dy, mask, p, lda, dx)
}

/// [`quantize_backward`] with an explicit [`Config`].
///
/// ```
/// use qdq::train::{self, QuantParams};
/// use qdq::{Config, DataType, Layout, QuantizeOptions, Values, ValuesMut};
/// let p = QuantParams { scale: Values::F32(&[0.25]), zero_point: None, layout: Layout::PerTensor,
///                       opts: QuantizeOptions::new(DataType::U8) };
/// let mut dx = [9.0f32; 3];
/// let dy = Values::F32(&[1.0, 2.0, 3.0]);
/// train::quantize_backward_with(&Config::sequential(), dy, &[0b101], &p, 1.0, ValuesMut::F32(&mut dx))?;
/// assert_eq!(dx, [4.0, 0.0, 12.0]); // dy / 0.25 where the mask bit is 1
/// # Ok::<(), qdq::Error>(())
/// ```
pub fn quantize_backward_with(
    cfg: &Config,
    dy: Values<'_>,
    mask: &[u8],
    p: &QuantParams<'_>,
    lda: f32,
    mut dx: ValuesMut<'_>,
) -> Result<()> {
    crate::isa::fpenv::scoped(|| {
        let precision = qdq_ref::train::check_quantize_backward(&dy, mask.len(), p, dx.len())?;
        let isa = cfg.resolve_isa()?;
        let no_zp = QuantParams { zero_point: None, ..*p };
        let Some(job) = job(&dy, &no_zp, precision) else {
            return qdq_ref::train::quantize_backward(dy, mask, p, lda, dx);
        };
        let out = out_kind(&dx);
        let b = Backward { job, kind: Elementwise::Quantize, mask, lda, out };
        run_elementwise(cfg, isa, &b, dy.len(), dx.bytes_mut());
        Ok(())
    })
}

/// The straight-through gradient from a stored mask: `dx = mask ? lda * dy : +0` (a
/// masked-out element gets `+0` whatever `dy` is). Default [`Config`].
///
/// ```
/// use qdq::{train, Values, ValuesMut};
/// let mut dx = [9.0f32; 3];
/// train::mask_backward(Values::F32(&[1.0, 2.0, 3.0]), &[0b101], 0.5, ValuesMut::F32(&mut dx))?;
/// assert_eq!(dx, [0.5, 0.0, 1.5]);
/// assert!(dx[1].is_sign_positive()); // a masked-out element gets +0
/// # Ok::<(), qdq::Error>(())
/// ```
pub fn mask_backward(dy: Values<'_>, mask: &[u8], lda: f32, dx: ValuesMut<'_>) -> Result<()> {
    mask_backward_with(&Config::default(), dy, mask, lda, dx)
}

/// [`mask_backward`] with an explicit [`Config`].
///
/// ```
/// use qdq::{train, Config, Values, ValuesMut};
/// // 20 elements, a 3-byte mask: elements 0..8 and 16..20 were representable.
/// let (dy, mask, mut dx) = ([1.0f32; 20], [0xff, 0x00, 0x0f], [9.0f32; 20]);
/// train::mask_backward_with(&Config::sequential(), Values::F32(&dy), &mask, 2.0, ValuesMut::F32(&mut dx))?;
/// let want: Vec<f32> = (0..20).map(|i| if i < 8 || i >= 16 { 2.0 } else { 0.0 }).collect();
/// assert_eq!(dx, want[..]);
/// # Ok::<(), qdq::Error>(())
/// ```
pub fn mask_backward_with(cfg: &Config, dy: Values<'_>, mask: &[u8], lda: f32, mut dx: ValuesMut<'_>) -> Result<()> {
    crate::isa::fpenv::scoped(|| {
        qdq_ref::train::check_mask_backward(&dy, mask.len(), dx.len())?;
        let isa = cfg.resolve_isa()?;
        // No scale: a per-tensor scale of 1 that the kernel never reads.
        let job = Job::new(
            dy.dtype(),
            dy.bytes(),
            DataType::F32,
            &ONE,
            None,
            Layout::PerTensor,
            DataType::U8,
            true,
            Precision::F32,
        );
        let Some(job) = job else {
            return qdq_ref::train::mask_backward(dy, mask, lda, dx);
        };
        let out = out_kind(&dx);
        let b = Backward { job, kind: Elementwise::Mask, mask, lda, out };
        run_elementwise(cfg, isa, &b, dy.len(), dx.bytes_mut());
        Ok(())
    })
}

/// DequantizeLinear backward: `dx = (lda * dy) * s` with each element's scale from
/// `layout`, in f32, rounded once to dx's type. Default [`Config`].
///
/// ```
/// use qdq::{train, Layout, Values, ValuesMut};
/// // Shape [2, 2] with one scale per row (per-axis on axis 0).
/// let rows = Layout::PerAxis { outer: 1, axis_len: 2, inner: 2 };
/// let (dy, scale, mut dx) = ([1.0f32, 2.0, 3.0, 4.0], [0.5f32, 2.0], [0f32; 4]);
/// train::dequantize_backward(Values::F32(&dy), Values::F32(&scale), rows, 2.0, ValuesMut::F32(&mut dx))?;
/// assert_eq!(dx, [1.0, 2.0, 12.0, 16.0]); // (2 * dy) * s
/// # Ok::<(), qdq::Error>(())
/// ```
pub fn dequantize_backward(
    dy: Values<'_>,
    scale: Values<'_>,
    layout: Layout,
    lda: f32,
    dx: ValuesMut<'_>,
) -> Result<()> {
    dequantize_backward_with(&Config::default(), dy, scale, layout, lda, dx)
}

/// [`dequantize_backward`] with an explicit [`Config`].
///
/// ```
/// use qdq::{train, Config, Layout, Values, ValuesMut};
/// // Blocks of 2 along a 4-element axis: scales 0.5 and 4.
/// let blocks = Layout::Blocked { outer: 1, axis_len: 4, inner: 1, block: 2 };
/// let (dy, scale, mut dx) = ([1.0f32, -1.0, 0.5, 2.0], [0.5f32, 4.0], [0f32; 4]);
/// let (dy, scale) = (Values::F32(&dy), Values::F32(&scale));
/// train::dequantize_backward_with(&Config::default(), dy, scale, blocks, 1.0, ValuesMut::F32(&mut dx))?;
/// assert_eq!(dx, [0.5, -0.5, 2.0, 8.0]);
/// # Ok::<(), qdq::Error>(())
/// ```
pub fn dequantize_backward_with(
    cfg: &Config,
    dy: Values<'_>,
    scale: Values<'_>,
    layout: Layout,
    lda: f32,
    mut dx: ValuesMut<'_>,
) -> Result<()> {
    crate::isa::fpenv::scoped(|| {
        qdq_ref::train::check_dequantize_backward(&dy, &scale, &layout, dx.len())?;
        let isa = cfg.resolve_isa()?;
        let job = Job::new(
            dy.dtype(),
            dy.bytes(),
            scale.dtype(),
            scale.bytes(),
            None,
            layout,
            DataType::U8,
            true,
            Precision::F32,
        );
        let Some(job) = job else {
            return qdq_ref::train::dequantize_backward(dy, scale, layout, lda, dx);
        };
        let out = out_kind(&dx);
        let b = Backward { job, kind: Elementwise::Dequantize, mask: &[], lda, out };
        run_elementwise(cfg, isa, &b, dy.len(), dx.bytes_mut());
        Ok(())
    })
}

// ---------------------------------------------------------------------------------------
// Backward passes with reductions.

/// How the elements of a layout's groups lie, for splitting a reduction.
enum Groups {
    /// Per-tensor: one group, summed along its tile tree.
    One,
    /// Consecutive units of whole groups: unit `j` starts at element `elem(j)` and its
    /// groups at scale `key(j)` (see [`Groups::of`]).
    Units { count: usize, per_row: usize, row_elems: usize, unit_elems: usize, unit_keys: usize },
    /// Per-axis with dimensions before the axis: a group's elements are spread over the
    /// whole tensor.
    Spread,
}

impl Groups {
    fn of(layout: Layout, n: usize) -> Groups {
        match layout {
            Layout::PerTensor => Groups::One,
            // Units are channels.
            Layout::PerAxis { outer: 1, axis_len, inner } => {
                Groups::Units { count: axis_len, per_row: axis_len, row_elems: n, unit_elems: inner, unit_keys: 1 }
            }
            Layout::PerAxis { .. } => Groups::Spread,
            // Units are (outer, block) pairs: a block of `block` axis entries, each of
            // `inner` elements and `inner` groups.
            Layout::Blocked { outer, axis_len, inner, block } => Groups::Units {
                count: outer * axis_len.div_ceil(block),
                per_row: axis_len.div_ceil(block),
                row_elems: axis_len * inner,
                // A block longer than the axis is one unit per row (no overflow).
                unit_elems: block.min(axis_len) * inner,
                unit_keys: inner,
            },
        }
    }
}

/// `(first element, first scale index)` of unit `j` (`j == count` gives `(n, scales)`).
fn unit_start(g: &Groups, j: usize, n: usize, scales: usize) -> (usize, usize) {
    match *g {
        Groups::Units { count, per_row, row_elems, unit_elems, unit_keys } => {
            if j >= count {
                (n, scales)
            } else {
                ((j / per_row) * row_elems + (j % per_row) * unit_elems, j * unit_keys)
            }
        }
        _ => (0, 0),
    }
}

/// Sums (`-0`-initialised, indexed from their first group) of a part of a reduction.
type Sums<'a> = [Option<&'a mut [f32]>; 2];

fn cut_sums(sums: Sums<'_>, at: usize) -> (Sums<'_>, Sums<'_>) {
    let [a, b] = sums;
    let (a0, a1) = cut_sum(a, at);
    let (b0, b1) = cut_sum(b, at);
    ([a0, b0], [a1, b1])
}

fn cut_sum(o: Option<&mut [f32]>, at: usize) -> (Option<&mut [f32]>, Option<&mut [f32]>) {
    match o {
        Some(v) => {
            let (l, r) = v.split_at_mut(at);
            (Some(l), Some(r))
        }
        None => (None, None),
    }
}

/// One reduction call: `dx` (bytes and type) and up to two sums over every group.
struct Reduce<'c, O> {
    cfg: &'c Config<'c>,
    isa: Isa,
    op: &'c O,
    layout: Layout,
    n: usize,
    scales: usize,
}

impl<O: GradOp> Reduce<'_, O> {
    fn walk(&self, w: Walk<'_>) {
        isa::dispatch(self.isa, WalkKernel { op: self.op, layout: self.layout, w });
    }

    fn run(&self, dx: Option<(&mut [u8], Out)>, mut sums: Sums<'_>) {
        for s in sums.iter_mut().flatten() {
            s.fill(-0.0);
        }
        let (n, scales) = (self.n, self.scales);
        let want_sums = sums.iter().any(Option::is_some);
        let per = match self.cfg.chunk(n, Cost::Double) {
            Some(per) => per,
            None => return self.walk(Walk { begin: 0, end: n, groups: 0..scales, dx, sums }),
        };
        if !want_sums {
            return self.dx_pass(per, dx);
        }
        match Groups::of(self.layout, n) {
            Groups::One => {
                let out = dx.map(|(b, o)| (b, o, bits_of(o)));
                let total = self.tree(per, out);
                for (j, s) in sums.iter_mut().enumerate() {
                    if let Some(s) = s.as_deref_mut() {
                        s[0] += total[j];
                    }
                }
            }
            g @ Groups::Units { .. } => {
                let count = match g {
                    Groups::Units { count, .. } => count,
                    _ => 0,
                };
                let out = dx.map(|(b, o)| (b, o, bits_of(o)));
                self.units(&g, per, count, out, sums);
            }
            Groups::Spread => {
                // dx in element chunks, then the sums by channel ranges (each walks the
                // whole tensor but touches only its channels' elements).
                self.dx_pass(per, dx);
                let parts = n.div_ceil(per).min(scales).max(1);
                self.channels(scales.div_ceil(parts), sums);
            }
        }
    }

    /// `dx` only, in element chunks.
    fn dx_pass(&self, per: usize, dx: Option<(&mut [u8], Out)>) {
        let Some((bytes, out)) = dx else { return };
        let scales = self.scales;
        split(self.cfg, per, 0, self.n, [Some((bytes, bits_of(out))), None], &|b, e, [d, _]| {
            let dx = d.map(|(bytes, _)| (bytes, out));
            self.walk(Walk { begin: b, end: e, groups: 0..scales, dx, sums: [None, None] });
        });
    }

    /// The per-tensor sums along the reference's tile tree: its leaves (nodes of at most
    /// `per` elements) in parallel, then the tree's additions in its own order.
    fn tree(&self, per: usize, dx: Option<(&mut [u8], Out, u32)>) -> [f32; 2] {
        // Tree nodes at least a tile, so every cut is one of the reference's; a coarser
        // cut gives the same sums, so `per` grows until the leaves fit the stack array.
        let mut per = per.next_multiple_of(SUM_TILE);
        let n = self.n;
        let count = loop {
            let count = tree_leaves(per, 0, n, None).count();
            if count <= LEAVES {
                break count;
            }
            per *= 2;
        };
        let results = Mutex::new([[-0.0f32; 2]; LEAVES]);
        for_parts(self.cfg, count, &mut tree_leaves(per, 0, n, dx), &|k, (a, m, dx)| {
            let mut local = [[-0.0f32; 1]; 2];
            let [l0, l1] = &mut local;
            let dx = dx.map(|(b, o, _)| (b, o));
            self.walk(Walk { begin: a, end: a + m, groups: 0..1, dx, sums: [Some(l0), Some(l1)] });
            if let Some(r) = results.lock().unwrap_or_else(PoisonError::into_inner).get_mut(k) {
                *r = [local[0][0], local[1][0]];
            }
        });
        let results = results.into_inner().unwrap_or_else(PoisonError::into_inner);
        tree_sum(per, n, &results, &mut 0)
    }

    /// Units of contiguous groups: halves until a part is about `per` elements.
    fn units(&self, g: &Groups, per: usize, count: usize, dx: Option<(&mut [u8], Out, u32)>, sums: Sums<'_>) {
        let (n, scales) = (self.n, self.scales);
        let leaves = |dx, sums| {
            Leaves::new((0, count, dx, sums), move |(j0, j1, dx, sums): UnitNode<'_>| {
                let (e0, k0) = unit_start(g, j0, n, scales);
                let (e1, _) = unit_start(g, j1, n, scales);
                if j1 - j0 <= 1 || e1 - e0 <= per {
                    return Split::Leaf((j0, j1, dx, sums));
                }
                let mid = j0 + (j1 - j0) / 2;
                let (em, km) = unit_start(g, mid, n, scales);
                // The cut is at a unit start, which need not be a byte boundary of a
                // 1-bit or packed type, but dx is f32 / f16 / bf16: always whole bytes.
                let (lo, hi) = match dx {
                    Some((b, o, bits)) => {
                        let (l, r) = b.split_at_mut((em - e0) * bits as usize / 8);
                        (Some((l, o, bits)), Some((r, o, bits)))
                    }
                    None => (None, None),
                };
                let (s_lo, s_hi) = cut_sums(sums, km - k0);
                Split::Halves((j0, mid, lo, s_lo), (mid, j1, hi, s_hi))
            })
        };
        let parts = leaves(None, [None, None]).count();
        for_parts(self.cfg, parts, &mut leaves(dx, sums), &|_, (j0, j1, dx, sums)| {
            let (e0, k0) = unit_start(g, j0, n, scales);
            let (e1, k1) = unit_start(g, j1, n, scales);
            let dx = dx.map(|(b, o, _)| (b, o));
            self.walk(Walk { begin: e0, end: e1, groups: k0..k1, dx, sums });
        });
    }

    /// Sums of the channels of a spread layout, in parts of about `per` channels.
    fn channels(&self, per: usize, sums: Sums<'_>) {
        let leaves = |sums| {
            Leaves::new((0, self.scales, sums), move |(c0, c1, sums): (usize, usize, Sums<'_>)| {
                if c1 - c0 <= per {
                    return Split::Leaf((c0, c1, sums));
                }
                let mid = c0 + (c1 - c0) / 2;
                let (lo, hi) = cut_sums(sums, mid - c0);
                Split::Halves((c0, mid, lo), (mid, c1, hi))
            })
        };
        let parts = leaves([None, None]).count();
        for_parts(self.cfg, parts, &mut leaves(sums), &|_, (c0, c1, sums)| {
            self.walk(Walk { begin: 0, end: self.n, groups: c0..c1, dx: None, sums });
        });
    }
}

/// Most leaves of a per-tensor sum's tree computed in parallel.
const LEAVES: usize = 4 * crate::config::MAX_PARTS;

/// A node of the units split: units `[j0, j1)`, their `dx` bytes and their sums.
type UnitNode<'a> = (usize, usize, Option<(&'a mut [u8], Out, u32)>, Sums<'a>);

/// A node of the per-tensor tile tree: `m` elements from `a`, and their `dx` bytes.
type TreeNode<'a> = (usize, usize, Option<(&'a mut [u8], Out, u32)>);

/// Halves a tree node at a tile boundary (the reference's cut), down to `per` elements.
fn tree_leaves(
    per: usize,
    a: usize,
    m: usize,
    dx: Option<(&mut [u8], Out, u32)>,
) -> impl Iterator<Item = TreeNode<'_>> + Send {
    Leaves::new((a, m, dx), move |(a, m, dx): TreeNode<'_>| {
        if m <= per {
            return Split::Leaf((a, m, dx));
        }
        let h = tree_half(m);
        let (lo, hi) = match dx {
            Some((b, o, bits)) => {
                let (l, r) = b.split_at_mut(h * bits as usize / 8);
                (Some((l, o, bits)), Some((r, o, bits)))
            }
            None => (None, None),
        };
        Split::Halves((a, h, lo), (a + h, m - h, hi))
    })
}

/// Where the reference's tile tree cuts `m` elements: half the tiles, rounded up.
fn tree_half(m: usize) -> usize {
    m.div_ceil(SUM_TILE).div_ceil(2) * SUM_TILE
}

/// Adds the leaves' sums (`results`, left to right from `*next`) along the tree of `m`
/// elements, in the tree's order.
fn tree_sum(per: usize, m: usize, results: &[[f32; 2]], next: &mut usize) -> [f32; 2] {
    if m <= per {
        let r = results.get(*next).copied().unwrap_or([-0.0; 2]);
        *next += 1;
        return r;
    }
    let h = tree_half(m);
    let l = tree_sum(per, h, results, next);
    let r = tree_sum(per, m - h, results, next);
    [l[0] + r[0], l[1] + r[1]]
}

/// Fake quantization backward: `dx = mask ? lda * dy : +0`, and for integer outputs the
/// LSQ gradients `ds` (one per scale: `g * sum(t)`, `t = dy * (round(q) - q)` where
/// representable, `dy * (qmin - zp)` / `dy * (qmax - zp)` where clamped low / high) and
/// `dzp` (`g * -(s * sum(dy))` over the clamped elements), each output optional. The sums
/// follow the order documented in [`qdq_ref::train`], so they are bit-identical on every
/// ISA and thread count. Default [`Config`].
///
/// ```
/// use qdq::train::{self, FakeQuantGrads, GradOptions, QuantParams};
/// use qdq::{DataType, Layout, QuantizeOptions, Values, ValuesMut};
/// let p = QuantParams { scale: Values::F32(&[0.5]), zero_point: None, layout: Layout::PerTensor,
///                       opts: QuantizeOptions::new(DataType::I8) };
/// let (x, dy) = ([0.25f32, 0.75, 100.0, -100.0], [1.0f32, 2.0, 1.0, 1.0]);
/// let (mut dx, mut ds, mut dzp) = ([0f32; 4], [0f32; 1], [0f32; 1]);
/// let grads = FakeQuantGrads { dx: Some(ValuesMut::F32(&mut dx)), ds: Some(&mut ds), dzp: Some(&mut dzp) };
/// train::fake_quantize_backward(Values::F32(&dy), Values::F32(&x), &p, &GradOptions::default(), grads)?;
/// assert_eq!(dx, [1.0, 2.0, 0.0, 0.0]); // the clamped elements pass no gradient
/// // q = 0.5 and 1.5 round to 0 and 2; the clamped ones give qmax and qmin:
/// assert_eq!(ds, [1.0 * -0.5 + 2.0 * 0.5 + 127.0 - 128.0]);
/// assert_eq!(dzp, [-(0.5 * (1.0 + 1.0))]); // -s times the clamped elements' dy
/// # Ok::<(), qdq::Error>(())
/// ```
pub fn fake_quantize_backward(
    dy: Values<'_>,
    x: Values<'_>,
    p: &QuantParams<'_>,
    opts: &GradOptions,
    grads: FakeQuantGrads<'_>,
) -> Result<()> {
    fake_quantize_backward_with(&Config::default(), dy, x, p, opts, grads)
}

/// [`fake_quantize_backward`] with an explicit [`Config`].
///
/// ```
/// use qdq::train::{self, FakeQuantGrads, GradOptions, QuantParams};
/// use qdq::{Config, DataType, Layout, QuantizeOptions, Values, ValuesMut};
/// let p = QuantParams { scale: Values::F32(&[0.5]), zero_point: None, layout: Layout::PerTensor,
///                       opts: QuantizeOptions::new(DataType::I8) };
/// let (x, dy) = ([0.25f32, 0.75, 100.0, -100.0], [1.0f32, 2.0, 1.0, 1.0]);
/// let (mut dx, mut ds, mut dzp) = ([0f32; 4], [0f32; 1], [0f32; 1]);
/// let grads = FakeQuantGrads { dx: Some(ValuesMut::F32(&mut dx)), ds: Some(&mut ds), dzp: Some(&mut dzp) };
/// let opts = GradOptions { lda: 2.0, grad_scale: 0.5 };
/// let (dy, x) = (Values::F32(&dy), Values::F32(&x));
/// train::fake_quantize_backward_with(&Config::sequential(), dy, x, &p, &opts, grads)?;
/// assert_eq!(dx, [2.0, 4.0, 0.0, 0.0]); // lda scales dx only
/// assert_eq!(ds, [0.5 * -0.5]); // g times the sum of the terms (-0.5 + 1 + 127 - 128)
/// assert_eq!(dzp, [0.5 * -(0.5 * 2.0)]); // g * -(s * (1 + 1))
/// # Ok::<(), qdq::Error>(())
/// ```
pub fn fake_quantize_backward_with(
    cfg: &Config,
    dy: Values<'_>,
    x: Values<'_>,
    p: &QuantParams<'_>,
    opts: &GradOptions,
    grads: FakeQuantGrads<'_>,
) -> Result<()> {
    crate::isa::fpenv::scoped(|| {
        let precision = qdq_ref::train::check_fake_quantize_backward(&dy, &x, p, &grads)?;
        let isa = cfg.resolve_isa()?;
        let Some(job) = job(&x, p, precision) else {
            return qdq_ref::train::fake_quantize_backward(dy, x, p, opts, grads);
        };
        let op = FakeQuantGrad::<false, false> { job, dy: (src_of(&dy), dy.bytes()), lda: opts.lda };
        let FakeQuantGrads { mut dx, mut ds, mut dzp } = grads;
        let dx = dx.as_mut().map(|d| {
            let out = out_kind(d);
            (d.bytes_mut(), out)
        });
        let (n, scales, sums) = (x.len(), p.scale.len(), [ds.as_deref_mut(), dzp.as_deref_mut()]);
        // f32 throughout (the common case): the variant with those types folded.
        if op.all_f32(dx.as_ref().map(|d| d.1)) && op.all_fast_int(scales) {
            // And an integer output with every scale in the fast range: no test per vector.
            let op = FakeQuantGrad::<true, true> { job: op.job, dy: op.dy, lda: op.lda };
            Reduce { cfg, isa, op: &op, layout: p.layout, n, scales }.run(dx, sums);
        } else if op.all_f32(dx.as_ref().map(|d| d.1)) {
            let op = FakeQuantGrad::<true, false> { job: op.job, dy: op.dy, lda: op.lda };
            Reduce { cfg, isa, op: &op, layout: p.layout, n, scales }.run(dx, sums);
        } else {
            Reduce { cfg, isa, op: &op, layout: p.layout, n, scales }.run(dx, sums);
        }
        let g = opts.grad_scale;
        if let Some(ds) = ds {
            for v in ds.iter_mut() {
                *v = canonical_nan(*v * g);
            }
        }
        if let Some(dzp) = dzp {
            let kind = crate::quantize::ScaleKind::of(p.scale.dtype());
            let bytes = p.scale.bytes();
            for (k, v) in dzp.iter_mut().enumerate() {
                let s = kind.map_or(f32::NAN, |sk| sk.get_inline(bytes, k));
                *v = canonical_nan(g * -(s * *v));
            }
        }
        Ok(())
    })
}

/// DequantizeLinear scale gradient: `ds_k = sum over scale k's elements of dy * (x - zp)`
/// (`x - zp` as DequantizeLinear computes it), summed in [`qdq_ref::train`]'s order.
/// Default [`Config`].
///
/// ```
/// use qdq::{train, Layout, Packed, Values};
/// let (x, zp) = (Packed::from(&[10u8, 12, 7]), Packed::from(&[10u8]));
/// let mut ds = [0f32; 1];
/// train::dequantize_scale_grad(Values::F32(&[1.0, 0.5, 2.0]), x, Some(zp), Layout::PerTensor, &mut ds)?;
/// // x - zp = [0, 2, -3]
/// assert_eq!(ds, [1.0 * 0.0 + 0.5 * 2.0 + 2.0 * -3.0]);
/// # Ok::<(), qdq::Error>(())
/// ```
pub fn dequantize_scale_grad(
    dy: Values<'_>,
    x: Packed<'_>,
    zero_point: Option<Packed<'_>>,
    layout: Layout,
    ds: &mut [f32],
) -> Result<()> {
    dequantize_scale_grad_with(&Config::default(), dy, x, zero_point, layout, ds)
}

/// [`dequantize_scale_grad`] with an explicit [`Config`].
///
/// ```
/// use qdq::{train, Config, Layout, Packed, Values};
/// // Shape [2, 2] of i8 codes, no zero point, one scale per row.
/// let rows = Layout::PerAxis { outer: 1, axis_len: 2, inner: 2 };
/// let (dy, x, mut ds) = ([1.0f32, 1.0, 0.5, 2.0], Packed::from(&[1i8, -2, 3, 4]), [0f32; 2]);
/// train::dequantize_scale_grad_with(&Config::sequential(), Values::F32(&dy), x, None, rows, &mut ds)?;
/// assert_eq!(ds, [1.0 - 2.0, 0.5 * 3.0 + 2.0 * 4.0]);
/// # Ok::<(), qdq::Error>(())
/// ```
pub fn dequantize_scale_grad_with(
    cfg: &Config,
    dy: Values<'_>,
    x: Packed<'_>,
    zero_point: Option<Packed<'_>>,
    layout: Layout,
    ds: &mut [f32],
) -> Result<()> {
    crate::isa::fpenv::scoped(|| {
        qdq_ref::train::check_dequantize_scale_grad(&dy, &x, zero_point.as_ref(), &layout, ds.len())?;
        let isa = cfg.resolve_isa()?;
        if x.dtype == DataType::I32 && zero_point.is_some() {
            // x - zp may not fit in i32: the reference's exact subtraction.
            return qdq_ref::train::dequantize_scale_grad(dy, x, zero_point, layout, ds);
        }
        let mini = FloatFormat::of(x.dtype).map(|f| MiniFormat::new(&f, true));
        let zero_point = if mini.is_some() { None } else { zero_point };
        let op = DequantizeGrad { x, zero_point, mini, dy: (src_of(&dy), dy.bytes()) };
        let scales = ds.len();
        let r = Reduce { cfg, isa, op: &op, layout, n: x.len, scales };
        r.run(None, [Some(&mut *ds), None]);
        ds.iter_mut().for_each(|v| *v = canonical_nan(*v));
        Ok(())
    })
}
