//! # qdq: fast ONNX QuantizeLinear / DequantizeLinear / DynamicQuantizeLinear
//!
//! The crate inference engines link. Its API mirrors [`qdq_ref`] (the executable
//! specification) function for function, so swapping the crates changes nothing but speed,
//! and every result is **bit-identical** to `qdq_ref` on every ISA and thread count.
//!
//! ## How it is fast
//!
//! * **Runtime dispatch** ([`Isa`]): AVX-512, AVX2 + FMA + F16C, NEON, or portable code,
//!   detected once; `QDQ_ISA` or [`Config::isa`] force a path.
//! * **One algorithm per op** over a small primitive trait (`simd::Simd`): exact division
//!   at multiply speed (Markstein's correction with a per-scale reciprocal), explicit
//!   round-half-even, clamping before every float-to-int conversion, in-register packing
//!   of 4-, 2- and 6-bit outputs, branch-free float8/float6/float4 codecs.
//! * **Layouts in vector code**: per-tensor, per-axis and blocked scales are walked as runs
//!   that broadcast one scale or load scale vectors alongside x (`segments`).
//! * **rayon** over byte-aligned chunks above [`Config::parallel_threshold`] elements; the
//!   chunking never changes a result. [`Config::sequential`] keeps everything on the
//!   calling thread, and the `*_range` entry points let an engine shard work itself.
//!
//! ## Training mode
//!
//! [`train`]: forwards with masks, straight-through backward passes, fake quantization and
//! LSQ gradients, bit-identical to [`qdq_ref::train`] (whose docs hold the derivation and
//! the summation order) on every ISA and thread count.
//!
//! ## What runs the reference instead
//!
//! A few rare combinations have no vector kernel and run `qdq_ref`'s scalar code (same
//! results by construction): an i32 scale (its division is in f64), an i32 x with an f16 /
//! bf16 division precision, and DequantizeLinear of i32 x with a zero point.

#![deny(missing_docs)]
#![deny(unsafe_op_in_unsafe_fn)]
// `unsafe` lives in the ISA modules (`isa/`), which allow it one by one; nothing else may.
#![deny(unsafe_code)]

mod dequantize;
mod dynamic;
mod isa;
mod quantize;
mod segments;
mod simd;
pub mod train;

pub use isa::Isa;
pub use qdq_ref::{
    bf16, dtype, f16, float, layout, packing, schema, Attribute, DataType, DequantizeAttributes, DequantizePlan,
    Domain, Error, ErrorKind, Layout, Opset, Packed, Precision, QuantizeAttributes, QuantizeOptions, QuantizePlan,
    Result, Tensor, TensorRef, Values, ValuesMut,
};

use half::slice::HalfFloatSliceExt;
use std::ops::Range;

fn invalid(msg: String) -> Error {
    Error::new(ErrorKind::InvalidAttribute, msg)
}

/// How a call runs: which ISA, and whether it may use rayon.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Config {
    /// The ISA to use; `None` means [`Isa::detect`] (best available, or `QDQ_ISA`).
    pub isa: Option<Isa>,
    /// Use the rayon pool for calls of at least [`Config::parallel_threshold`] elements.
    pub parallel: bool,
    /// Below this many elements a call stays on the calling thread.
    pub parallel_threshold: usize,
}

impl Default for Config {
    fn default() -> Self {
        Config { isa: None, parallel: true, parallel_threshold: 64 * 1024 }
    }
}

impl Config {
    /// Single-threaded, best ISA.
    pub fn sequential() -> Self {
        Config { parallel: false, ..Config::default() }
    }

    /// Forces an ISA (builder style).
    pub fn with_isa(self, isa: Isa) -> Self {
        Config { isa: Some(isa), ..self }
    }

    fn resolve_isa(&self) -> Result<Isa> {
        match self.isa {
            None => Ok(Isa::detect()),
            Some(i) if i.is_available() => Ok(i),
            Some(i) => Err(invalid(format!("ISA {i} is not available on this CPU"))),
        }
    }

    /// Elements per parallel chunk for `n` elements (a multiple of 64, so chunks start on a
    /// byte boundary for every packed type), or `None` to run on the calling thread.
    fn chunk(&self, n: usize) -> Option<usize> {
        // Check the cheap conditions first: a sequential call must not even start rayon's pool.
        if !self.parallel || n < self.parallel_threshold {
            return None;
        }
        let threads = rayon::current_num_threads();
        if threads < 2 {
            return None;
        }
        let per = n.div_ceil(threads * 4).max(16 * 1024);
        Some(per.next_multiple_of(64))
    }
}

/// Byte offset of element `e` in a tensor of type `t` (`e` a multiple of 4, or any `e` for
/// whole-byte types).
fn byte_at(t: DataType, e: usize) -> usize {
    e * t.bits() as usize / 8
}

struct QuantizeKernel<'a, 'b> {
    job: &'b quantize::Job<'a>,
    begin: usize,
    end: usize,
    y: &'b mut [u8],
}

impl isa::Kernel for QuantizeKernel<'_, '_> {
    type Output = ();
    #[inline(always)]
    fn run<S: simd::Simd>(self, s: S) {
        quantize::run(s, self.job, self.begin, self.end, self.y)
    }
}

struct DequantizeKernel<'a, 'b> {
    job: &'b dequantize::Job<'a>,
    begin: usize,
    end: usize,
    y: &'b mut [u8],
}

impl isa::Kernel for DequantizeKernel<'_, '_> {
    type Output = ();
    #[inline(always)]
    fn run<S: simd::Simd>(self, s: S) {
        dequantize::run(s, self.job, self.begin, self.end, self.y)
    }
}

/// Runs `f(begin, end, y_part)` over `range`, split into parallel chunks when `cfg` allows.
fn drive(cfg: &Config, out: DataType, range: Range<usize>, y: &mut [u8], f: &(dyn Fn(usize, usize, &mut [u8]) + Sync)) {
    match cfg.chunk(range.len()) {
        None => f(range.start, range.end, y),
        Some(per) => split(out, per, range.start, range.end, y, f),
    }
}

/// Runs `f` over chunks of `per` elements of `b..e` (the last one shorter), halving at a
/// chunk boundary and handing both halves to `rayon::join`. `y` holds the bytes of `b..e`;
/// `per` is a multiple of 64, so every cut is on a byte boundary for every packed type and
/// threads never share a byte. Recursion instead of a collected list of chunks: the
/// parallel path allocates nothing (rayon's jobs live on the stack).
fn split(out: DataType, per: usize, b: usize, e: usize, y: &mut [u8], f: &(dyn Fn(usize, usize, &mut [u8]) + Sync)) {
    let chunks = (e - b).div_ceil(per);
    if chunks <= 1 {
        return f(b, e, y);
    }
    let mid = b + chunks / 2 * per;
    let (lo, hi) = y.split_at_mut(byte_at(out, mid - b));
    rayon::join(|| split(out, per, b, mid, lo, f), || split(out, per, mid, e, hi, f));
}

fn as_bytes<'a>(v: &Values<'a>) -> &'a [u8] {
    match *v {
        Values::F32(s) => bytemuck::cast_slice(s),
        Values::F16(s) => bytemuck::cast_slice(s.reinterpret_cast()),
        Values::Bf16(s) => bytemuck::cast_slice(s.reinterpret_cast()),
        Values::I32(s) => bytemuck::cast_slice(s),
        Values::E8M0(s) => s,
    }
}

/// The core of every quantize entry point: elements `range` of a validated call into `y`
/// (the bytes of that range).
#[allow(clippy::too_many_arguments)]
fn quantize_core(
    cfg: &Config,
    x: (DataType, &[u8]),
    n: usize,
    scale: (DataType, &[u8]),
    zero_point: Option<Packed<'_>>,
    layout: Layout,
    opts: &QuantizeOptions,
    precision: Precision,
    range: Range<usize>,
    y: &mut [u8],
) -> Result<()> {
    let isa = cfg.resolve_isa()?;
    let out = opts.output;
    match quantize::Job::new(x.0, x.1, scale.0, scale.1, zero_point, layout, out, opts.saturate, precision) {
        Some(job) => quantize_job(cfg, isa, &job, range.clone(), y),
        None => reference_quantize(x, scale, zero_point, layout, opts, precision, range.clone(), y),
    }
    if range.end == n {
        packing::zero_padding(out, y, range.len());
    }
    Ok(())
}

/// Runs a resolved quantize job over the elements `range` (`y` holds their bytes).
fn quantize_job(cfg: &Config, isa: Isa, job: &quantize::Job<'_>, range: Range<usize>, y: &mut [u8]) {
    drive(cfg, job.out, range, y, &|b, e, part| isa::dispatch(isa, QuantizeKernel { job, begin: b, end: e, y: part }));
}

/// The reference loop for the combinations without a vector kernel, over `range`.
#[allow(clippy::too_many_arguments)]
fn reference_quantize(
    x: (DataType, &[u8]),
    scale: (DataType, &[u8]),
    zero_point: Option<Packed<'_>>,
    layout: Layout,
    opts: &QuantizeOptions,
    precision: Precision,
    range: Range<usize>,
    y: &mut [u8],
) {
    let xt = TensorRef { dtype: x.0, shape: &[], data: x.1 };
    let st = TensorRef { dtype: scale.0, shape: &[], data: scale.1 };
    for i in range.clone() {
        let k = layout.scale_index(i);
        let xv = qdq_ref::tensor::wide_value(&xt, i);
        let sv = qdq_ref::tensor::wide_value(&st, k);
        let z = zero_point.as_ref().map(|zp| qdq_ref::quantize::zero_point_value(zp, k));
        let code = qdq_ref::quantize::quantize_value(xv, sv, z, opts.output, precision, opts.saturate);
        packing::set(opts.output, y, i - range.start, code);
    }
}

/// QuantizeLinear into a caller-provided buffer: the same contract and results as
/// [`qdq_ref::quantize()`], with the default [`Config`].
pub fn quantize(
    x: Values<'_>,
    scale: Values<'_>,
    zero_point: Option<Packed<'_>>,
    layout: Layout,
    opts: &QuantizeOptions,
    y: &mut [u8],
) -> Result<()> {
    quantize_with(&Config::default(), x, scale, zero_point, layout, opts, y)
}

/// [`quantize`] with an explicit [`Config`].
pub fn quantize_with(
    cfg: &Config,
    x: Values<'_>,
    scale: Values<'_>,
    zero_point: Option<Packed<'_>>,
    layout: Layout,
    opts: &QuantizeOptions,
    y: &mut [u8],
) -> Result<()> {
    let n = x.len();
    let p = qdq_ref::quantize::check(
        (x.dtype(), n),
        (scale.dtype(), scale.len()),
        zero_point.as_ref(),
        &layout,
        opts,
        y.len(),
    )?;
    quantize_core(
        cfg,
        (x.dtype(), as_bytes(&x)),
        n,
        (scale.dtype(), as_bytes(&scale)),
        zero_point,
        layout,
        opts,
        p,
        0..n,
        y,
    )
}

/// Quantizes only the elements `range` of the call into `y_part`, which holds the output
/// bytes of exactly that range, for engines that shard work themselves. `range.start` must
/// be a multiple of 4 (so the range starts on a byte boundary for every packed type) and
/// `range.end` a multiple of 4 or the element count. Runs on the calling thread.
#[allow(clippy::too_many_arguments)]
pub fn quantize_range(
    cfg: &Config,
    x: Values<'_>,
    scale: Values<'_>,
    zero_point: Option<Packed<'_>>,
    layout: Layout,
    opts: &QuantizeOptions,
    range: Range<usize>,
    y_part: &mut [u8],
) -> Result<()> {
    let n = x.len();
    let full = opts.output.byte_len(n).unwrap_or(usize::MAX);
    let p = qdq_ref::quantize::check(
        (x.dtype(), n),
        (scale.dtype(), scale.len()),
        zero_point.as_ref(),
        &layout,
        opts,
        full,
    )?;
    check_range(opts.output, n, &range, y_part.len())?;
    let seq = Config { parallel: false, ..*cfg };
    quantize_core(
        &seq,
        (x.dtype(), as_bytes(&x)),
        n,
        (scale.dtype(), as_bytes(&scale)),
        zero_point,
        layout,
        opts,
        p,
        range,
        y_part,
    )
}

fn check_range(out: DataType, n: usize, range: &Range<usize>, y_len: usize) -> Result<()> {
    if range.start > range.end
        || range.end > n
        || !range.start.is_multiple_of(4)
        || (!range.end.is_multiple_of(4) && range.end != n)
    {
        return Err(invalid(format!(
            "range {range:?} must lie within 0..{n}, start at a multiple of 4 and end at a multiple of 4 or at {n}"
        )));
    }
    let want = if range.end == n {
        out.byte_len(n).unwrap_or(usize::MAX) - byte_at(out, range.start)
    } else {
        byte_at(out, range.end) - byte_at(out, range.start)
    };
    if y_len != want {
        return Err(qdq_ref::Error::new(
            ErrorKind::BufferLength,
            format!("y_part: elements {range:?} of {out} need {want} bytes, got {y_len}"),
        ));
    }
    Ok(())
}

#[allow(clippy::too_many_arguments)]
fn dequantize_core(
    cfg: &Config,
    x: Packed<'_>,
    scale: (DataType, &[u8]),
    zero_point: Option<Packed<'_>>,
    layout: Layout,
    out: DataType,
    range: Range<usize>,
    y: &mut [u8],
) -> Result<()> {
    let isa = cfg.resolve_isa()?;
    match dequantize::Job::new(x, scale.0, scale.1, zero_point, layout, out) {
        Some(job) => drive(cfg, out, range, y, &|b, e, part| {
            isa::dispatch(isa, DequantizeKernel { job: &job, begin: b, end: e, y: part })
        }),
        None => {
            // i32 x with a zero point: the reference loop.
            let st = TensorRef { dtype: scale.0, shape: &[], data: scale.1 };
            let os = out.bits() as usize / 8;
            for i in range.clone() {
                let k = layout.scale_index(i);
                let s = qdq_ref::tensor::wide_value(&st, k) as f32;
                let v = qdq_ref::dequantize::dequantize_value(&x, i, zero_point.as_ref().map(|z| (z, k)), s);
                let at = (i - range.start) * os;
                qdq_ref::tensor::put_wide(out, &mut y[at..at + os], v);
            }
        }
    }
    Ok(())
}

fn values_mut_bytes<'a>(y: &'a mut ValuesMut<'_>) -> &'a mut [u8] {
    match y {
        ValuesMut::F32(s) => bytemuck::cast_slice_mut(s),
        ValuesMut::F16(s) => bytemuck::cast_slice_mut(s.reinterpret_cast_mut()),
        ValuesMut::Bf16(s) => bytemuck::cast_slice_mut(s.reinterpret_cast_mut()),
    }
}

/// DequantizeLinear into a caller-provided buffer: the same contract and results as
/// [`qdq_ref::dequantize()`], with the default [`Config`].
pub fn dequantize(
    x: Packed<'_>,
    scale: Values<'_>,
    zero_point: Option<Packed<'_>>,
    layout: Layout,
    y: ValuesMut<'_>,
) -> Result<()> {
    dequantize_with(&Config::default(), x, scale, zero_point, layout, y)
}

/// [`dequantize`] with an explicit [`Config`].
pub fn dequantize_with(
    cfg: &Config,
    x: Packed<'_>,
    scale: Values<'_>,
    zero_point: Option<Packed<'_>>,
    layout: Layout,
    mut y: ValuesMut<'_>,
) -> Result<()> {
    let out = y.dtype();
    qdq_ref::dequantize::check(&x, (scale.dtype(), scale.len()), zero_point.as_ref(), &layout, out, y.len())?;
    let n = x.len;
    dequantize_core(cfg, x, (scale.dtype(), as_bytes(&scale)), zero_point, layout, out, 0..n, values_mut_bytes(&mut y))
}

/// Dequantizes only the elements `range` into `y_part` (exactly `range.len()` elements),
/// for engines that shard work themselves. Any range within the tensor is accepted. Runs
/// on the calling thread.
pub fn dequantize_range(
    cfg: &Config,
    x: Packed<'_>,
    scale: Values<'_>,
    zero_point: Option<Packed<'_>>,
    layout: Layout,
    range: Range<usize>,
    mut y_part: ValuesMut<'_>,
) -> Result<()> {
    let out = y_part.dtype();
    qdq_ref::dequantize::check(&x, (scale.dtype(), scale.len()), zero_point.as_ref(), &layout, out, x.len)?;
    if range.start > range.end || range.end > x.len || y_part.len() != range.len() {
        return Err(qdq_ref::Error::new(
            ErrorKind::BufferLength,
            format!("range {range:?} of {} elements into a buffer of {}", x.len, y_part.len()),
        ));
    }
    let seq = Config { parallel: false, ..*cfg };
    dequantize_core(
        &seq,
        x,
        (scale.dtype(), as_bytes(&scale)),
        zero_point,
        layout,
        out,
        range,
        values_mut_bytes(&mut y_part),
    )
}

/// DynamicQuantizeLinear into a caller-provided buffer; returns `(scale, zero_point)`.
/// Same results as [`qdq_ref::dynamic_quantize`].
pub fn dynamic_quantize(x: &[f32], y: &mut [u8]) -> Result<(f32, u8)> {
    dynamic_quantize_with(&Config::default(), x, y)
}

/// [`dynamic_quantize`] with an explicit [`Config`].
pub fn dynamic_quantize_with(cfg: &Config, x: &[f32], y: &mut [u8]) -> Result<(f32, u8)> {
    if y.len() != x.len() {
        return Err(qdq_ref::Error::new(
            ErrorKind::BufferLength,
            format!("y has {} elements but x has {}", y.len(), x.len()),
        ));
    }
    dynamic::run(cfg, bytemuck::cast_slice(x), y)
}

/// The SIMD backend for the tensor-level API (executes [`qdq_ref`]'s validated plans).
#[derive(Clone, Copy, Debug, Default)]
pub struct Fast(pub Config);

impl qdq_ref::Backend for Fast {
    /// An ISA this CPU lacks is an error (never a silent fallback to the reference).
    fn quantize(&self, plan: &QuantizePlan<'_>, y: &mut [u8]) -> Result<()> {
        quantize_core(
            &self.0,
            (plan.x.dtype, plan.x.data),
            plan.len,
            (plan.scale.dtype, plan.scale.data),
            plan.zero_point,
            plan.layout,
            &plan.opts,
            plan.precision,
            0..plan.len,
            y,
        )
    }

    fn dequantize(&self, plan: &DequantizePlan<'_>, y: &mut [u8]) -> Result<()> {
        dequantize_core(
            &self.0,
            plan.x,
            (plan.scale.dtype, plan.scale.data),
            plan.zero_point,
            plan.layout,
            plan.output,
            0..plan.x.len,
            y,
        )
    }

    fn dynamic_quantize(&self, x: &[u8], y: &mut [u8]) -> Result<(f32, u8)> {
        dynamic::run(&self.0, x, y)
    }
}

/// QuantizeLinear at an opset (see [`qdq_ref::quantize_linear`]), on the SIMD backend.
pub fn quantize_linear(
    opset: Opset,
    x: TensorRef<'_>,
    scale: TensorRef<'_>,
    zero_point: Option<TensorRef<'_>>,
    attrs: &QuantizeAttributes,
) -> Result<Tensor> {
    qdq_ref::tensor::quantize_linear_with(&Fast::default(), opset, x, scale, zero_point, attrs)
}

/// DequantizeLinear at an opset (see [`qdq_ref::dequantize_linear`]), on the SIMD backend.
pub fn dequantize_linear(
    opset: Opset,
    x: TensorRef<'_>,
    scale: TensorRef<'_>,
    zero_point: Option<TensorRef<'_>>,
    attrs: &DequantizeAttributes,
) -> Result<Tensor> {
    qdq_ref::tensor::dequantize_linear_with(&Fast::default(), opset, x, scale, zero_point, attrs)
}

/// DynamicQuantizeLinear (see [`qdq_ref::dynamic_quantize_linear`]), on the SIMD backend.
pub fn dynamic_quantize_linear(opset: Opset, x: TensorRef<'_>) -> Result<[Tensor; 3]> {
    qdq_ref::tensor::dynamic_quantize_linear_with(&Fast::default(), opset, x)
}

/// Runs a node (see [`qdq_ref::run_node`]) on the SIMD backend.
pub fn run_node(
    op_type: &str,
    opset: Opset,
    inputs: &[Option<TensorRef<'_>>],
    attributes: &[Attribute<'_>],
    num_outputs: usize,
) -> Result<Vec<Tensor>> {
    qdq_ref::tensor::run_node_with(&Fast::default(), op_type, opset, inputs, attributes, num_outputs)
}

/// [`run_node`] with an explicit [`Config`].
pub fn run_node_with(
    cfg: &Config,
    op_type: &str,
    opset: Opset,
    inputs: &[Option<TensorRef<'_>>],
    attributes: &[Attribute<'_>],
    num_outputs: usize,
) -> Result<Vec<Tensor>> {
    qdq_ref::tensor::run_node_with(&Fast(*cfg), op_type, opset, inputs, attributes, num_outputs)
}
