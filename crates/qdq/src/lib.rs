//! # qdq: fast ONNX QuantizeLinear / DequantizeLinear / DynamicQuantizeLinear
//!
//! The crate inference engines link. Its API mirrors [`qdq_ref`] (the executable
//! specification) function for function, so swapping the crates changes nothing but speed,
//! and every result is **bit-identical** to `qdq_ref` on every ISA and thread count.
//!
//! ## Guarantees
//!
//! * **Bits**, NaN payloads included: every NaN in a float output (f32 / f16 / bf16
//!   DequantizeLinear, fake quantization, training gradients) is the canonical
//!   [`qdq_ref::float::CANONICAL_NAN`].
//! * **Independent of the caller's floating-point state**: DAZ / FTZ, the rounding mode and
//!   unmasked exceptions (x86-64 MXCSR, aarch64 FPCR) of the calling thread or of the pool's
//!   threads change nothing; every entry point and parallel chunk runs under the default
//!   state and hands the caller's back.
//! * **Forcing an ISA** ([`Config::isa`], `QDQ_ISA`) that the CPU lacks, or a name that is no
//!   ISA, is an [`ErrorKind::IsaUnavailable`] error, never a silent fallback.
//! * **Little-endian targets only**; a big-endian build stops with a message pointing to
//!   `qdq_ref`.
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

// The kernels read and write ONNX's little-endian bytes through native-endian slices and
// vector loads. Rather than give silently wrong results on a big-endian target, refuse to
// build there.
#[cfg(target_endian = "big")]
compile_error!(
    "qdq supports little-endian targets only (its kernels view native slices as ONNX's \
     little-endian bytes). On a big-endian target use the `qdq-ref` crate: the same API \
     and results, scalar, with explicit byte order."
);

mod codec;
mod config;
mod dequantize;
mod dynamic;
mod fallback;
mod isa;
mod quantize;
mod segments;
mod simd;
mod tensor;
mod threads;
pub mod train;
mod walk;

pub use config::Config;
pub use isa::Isa;
pub use qdq_ref::{
    bf16, dtype, f16, float, layout, packing, schema, Attribute, DataType, DequantizeAttributes, DequantizePlan,
    Domain, Error, ErrorKind, Layout, Opset, Packed, Precision, QuantizeAttributes, QuantizeOptions, QuantizePlan,
    Result, Tensor, TensorRef, Values, ValuesMut,
};
pub use tensor::{dequantize_linear, dynamic_quantize_linear, quantize_linear, run_node, run_node_with, Fast};

use half::slice::HalfFloatSliceExt;
use std::ops::Range;

fn invalid(msg: String) -> Error {
    Error::new(ErrorKind::InvalidAttribute, msg)
}

/// Byte offset of element `e` in a tensor of type `t` (`e` a multiple of 4, or any `e` for
/// whole-byte types).
fn byte_at(t: DataType, e: usize) -> usize {
    e * t.bits() as usize / 8
}

/// A validated job over the elements `begin..end`, into `y` (the bytes of that range).
struct RangeKernel<'b, J> {
    job: &'b J,
    begin: usize,
    end: usize,
    y: &'b mut [u8],
}

impl isa::Kernel for RangeKernel<'_, quantize::Job<'_>> {
    type Output = ();
    #[inline(always)]
    fn run<S: simd::Simd>(self, simd: S) {
        quantize::run(simd, self.job, self.begin, self.end, self.y)
    }
}

impl isa::Kernel for RangeKernel<'_, dequantize::Job<'_>> {
    type Output = ();
    #[inline(always)]
    fn run<S: simd::Simd>(self, simd: S) {
        dequantize::run(simd, self.job, self.begin, self.end, self.y)
    }
}

fn as_bytes<'a>(v: &Values<'a>) -> &'a [u8] {
    match *v {
        Values::F32(simd) => bytemuck::cast_slice(simd),
        Values::F16(simd) => bytemuck::cast_slice(simd.reinterpret_cast()),
        Values::Bf16(simd) => bytemuck::cast_slice(simd.reinterpret_cast()),
        Values::I32(simd) => bytemuck::cast_slice(simd),
        Values::E8M0(simd) => simd,
    }
}

/// The core of every quantize entry point: elements `range` of a validated call into `y`
/// (the bytes of that range).
/// Callers run it under `isa::fpenv::scoped` (the public entry points and [`Fast`]).
pub(crate) fn quantize_core(cfg: &Config, plan: &QuantizePlan<'_>, range: Range<usize>, y: &mut [u8]) -> Result<()> {
    let isa = cfg.resolve_isa()?;
    let (x, scale, out) = (&plan.x, &plan.scale, plan.opts.output);
    match quantize::Job::new(
        x.dtype,
        x.data,
        scale.dtype,
        scale.data,
        plan.zero_point,
        plan.layout,
        out,
        plan.opts.saturate,
        plan.precision,
    ) {
        Some(job) => quantize_job(cfg, isa, &job, range.clone(), y),
        None => fallback::quantize(plan, range.clone(), y),
    }
    if range.end == plan.len {
        packing::zero_padding(out, y, range.len());
    }
    Ok(())
}

/// A slice-level quantize call as the plan the tensor-level API validates.
fn quantize_plan<'a>(
    x: &Values<'a>,
    scale: &Values<'a>,
    zero_point: Option<Packed<'a>>,
    layout: Layout,
    opts: &QuantizeOptions,
    precision: Precision,
    y_bytes: usize,
) -> QuantizePlan<'a> {
    QuantizePlan {
        x: TensorRef { dtype: x.dtype(), shape: &[], data: as_bytes(x) },
        scale: TensorRef { dtype: scale.dtype(), shape: &[], data: as_bytes(scale) },
        zero_point,
        layout,
        opts: *opts,
        precision,
        len: x.len(),
        y_bytes,
    }
}

/// Runs a resolved quantize job over the elements `range` (`y` holds their bytes).
fn quantize_job(cfg: &Config, isa: Isa, job: &quantize::Job<'_>, range: Range<usize>, y: &mut [u8]) {
    threads::drive_one(cfg, range, y, job.out.bits(), &|b, e, y| {
        isa::dispatch(isa, RangeKernel { job, begin: b, end: e, y })
    });
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
    crate::isa::fpenv::scoped(|| {
        let n = x.len();
        let p = check_quantize(&x, &scale, zero_point.as_ref(), &layout, opts, y.len())?;
        quantize_core(cfg, &quantize_plan(&x, &scale, zero_point, layout, opts, p, y.len()), 0..n, y)
    })
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
    crate::isa::fpenv::scoped(|| {
        let n = x.len();
        let full = opts.output.byte_len(n).unwrap_or(usize::MAX);
        let p = check_quantize(&x, &scale, zero_point.as_ref(), &layout, opts, full)?;
        check_range(opts.output, n, &range, y_part.len())?;
        let seq = Config { parallel: false, ..*cfg };
        quantize_core(&seq, &quantize_plan(&x, &scale, zero_point, layout, opts, p, full), range, y_part)
    })
}

/// `qdq_ref::quantize::check` for a slice-level call whose output holds `y_bytes` bytes.
fn check_quantize(
    x: &Values<'_>,
    scale: &Values<'_>,
    zero_point: Option<&Packed<'_>>,
    layout: &Layout,
    opts: &QuantizeOptions,
    y_bytes: usize,
) -> Result<Precision> {
    qdq_ref::quantize::check((x.dtype(), x.len()), (scale.dtype(), scale.len()), zero_point, layout, opts, y_bytes)
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

/// The core of every dequantize entry point: elements `range` of a validated call into `y`
/// (the bytes of that range).
/// Callers run it under `isa::fpenv::scoped` (the public entry points and [`Fast`]).
pub(crate) fn dequantize_core(
    cfg: &Config,
    plan: &DequantizePlan<'_>,
    range: Range<usize>,
    y: &mut [u8],
) -> Result<()> {
    let isa = cfg.resolve_isa()?;
    let (scale, out) = (&plan.scale, plan.output);
    match dequantize::Job::new(plan.x, scale.dtype, scale.data, plan.zero_point, plan.layout, out) {
        Some(job) => threads::drive_one(cfg, range, y, out.bits(), &|b, e, y| {
            isa::dispatch(isa, RangeKernel { job: &job, begin: b, end: e, y })
        }),
        None => fallback::dequantize(plan, range, y),
    }
    Ok(())
}

/// A slice-level dequantize call as the plan the tensor-level API validates.
fn dequantize_plan<'a>(
    x: Packed<'a>,
    scale: &Values<'a>,
    zero_point: Option<Packed<'a>>,
    layout: Layout,
    output: DataType,
    y_bytes: usize,
) -> DequantizePlan<'a> {
    let scale = TensorRef { dtype: scale.dtype(), shape: &[], data: as_bytes(scale) };
    DequantizePlan { x, shape: &[], scale, zero_point, layout, output, y_bytes }
}

fn values_mut_bytes<'a>(y: &'a mut ValuesMut<'_>) -> &'a mut [u8] {
    match y {
        ValuesMut::F32(simd) => bytemuck::cast_slice_mut(simd),
        ValuesMut::F16(simd) => bytemuck::cast_slice_mut(simd.reinterpret_cast_mut()),
        ValuesMut::Bf16(simd) => bytemuck::cast_slice_mut(simd.reinterpret_cast_mut()),
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
    crate::isa::fpenv::scoped(|| {
        let out = y.dtype();
        qdq_ref::dequantize::check(&x, (scale.dtype(), scale.len()), zero_point.as_ref(), &layout, out, y.len())?;
        let y = values_mut_bytes(&mut y);
        dequantize_core(cfg, &dequantize_plan(x, &scale, zero_point, layout, out, y.len()), 0..x.len, y)
    })
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
    crate::isa::fpenv::scoped(|| {
        let out = y_part.dtype();
        qdq_ref::dequantize::check(&x, (scale.dtype(), scale.len()), zero_point.as_ref(), &layout, out, x.len)?;
        if range.start > range.end || range.end > x.len || y_part.len() != range.len() {
            return Err(qdq_ref::Error::new(
                ErrorKind::BufferLength,
                format!("range {range:?} of {} elements into a buffer of {}", x.len, y_part.len()),
            ));
        }
        let seq = Config { parallel: false, ..*cfg };
        let y = values_mut_bytes(&mut y_part);
        dequantize_core(&seq, &dequantize_plan(x, &scale, zero_point, layout, out, y.len()), range, y)
    })
}

/// DynamicQuantizeLinear into a caller-provided buffer; returns `(scale, zero_point)`.
/// Same results as [`qdq_ref::dynamic_quantize`].
pub fn dynamic_quantize(x: &[f32], y: &mut [u8]) -> Result<(f32, u8)> {
    dynamic_quantize_with(&Config::default(), x, y)
}

/// [`dynamic_quantize`] with an explicit [`Config`].
pub fn dynamic_quantize_with(cfg: &Config, x: &[f32], y: &mut [u8]) -> Result<(f32, u8)> {
    crate::isa::fpenv::scoped(|| {
        if y.len() != x.len() {
            return Err(qdq_ref::Error::new(
                ErrorKind::BufferLength,
                format!("y has {} elements but x has {}", y.len(), x.len()),
            ));
        }
        dynamic::run(cfg, bytemuck::cast_slice(x), y)
    })
}
