//! # qdq: fast ONNX QuantizeLinear / DequantizeLinear / DynamicQuantizeLinear
//!
//! The crate inference engines link: every opset and element type of the ONNX
//! linear-quantization operators, runtime-dispatched SIMD, and results **bit-identical**
//! to [`qdq_ref`] (the executable specification, same API) on every ISA, thread count and
//! floating-point state.
//!
//! ```
//! use qdq::{DataType, PackedMut, Params};
//!
//! // Activations to u8: one scale and zero point for the whole tensor.
//! let act = Params::per_tensor(0.02).zero_point(128);
//! let mut q = [0u8; 3];
//! qdq::quantize(&[-1.0f32, 0.0, 2.0], &act, &mut q)?;
//! assert_eq!(q, [78, 128, 228]);
//!
//! // Weights [2, 2] to int4, one scale per row (axis 0), packed two per byte.
//! let mut w4 = [0u8; 2];
//! qdq::quantize(&[1.0f32, -1.0, 4.0, 8.0], &Params::per_axis(&[0.25f32, 2.0], &[2, 2], 0)?,
//!               PackedMut::new(DataType::I4, &mut w4))?;
//! assert_eq!(w4, [0xc4, 0x42]); // 4, -4 | 2, 4
//!
//! // Back to f32.
//! let mut y = [0f32; 3];
//! qdq::dequantize(&q, &act, &mut y)?;
//! assert_eq!(y, [-1.0, 0.0, 2.0]);
//! # Ok::<(), qdq::Error>(())
//! ```
//!
//! ## The API
//!
//! * **Slice API**: [`quantize()`], [`dequantize()`] and [`dynamic_quantize`] take typed
//!   slices (`&[f32]`, `&[f16]`, `&[bf16]`, `&[i32]` in; `&mut [u8]`, `&mut [i8]`,
//!   `&mut [u16]`, `&mut [i16]`, float8 element types such as [`Float8E4M3Fn`] out, or a
//!   [`PackedMut`] / [`Packed`] view of packed sub-byte data) and a [`Params`]: the scales,
//!   zero points and [`Layout`] (per tensor, per axis, blocked), built once. qdq
//!   allocates nothing (rayon boxes one small job per helper thread for a parallel call
//!   made from outside its pool; none from a worker of the pool). `*_with` variants take
//!   a [`Config`] (ISA, threads); [`quantize_range`] and [`dequantize_range`] compute a
//!   range of a call, for engines that shard work over their own threads.
//! * **Tensor API**: [`quantize_linear`], [`dequantize_linear`], [`dynamic_quantize_linear`]
//!   and [`run_node`] take [`TensorRef`]s, attributes and the [`Opset`], enforce every
//!   per-version rule of the ONNX schemas and return [`Tensor`]s (DynamicQuantizeLinear: a
//!   [`DynamicQuantized`], the tensor `y` with its scale and zero point as values).
//! * **Training**: [`train`], the backward passes and fake quantization.
//!
//! Every failure is an [`Error`] with an [`ErrorKind`] and a message naming the argument at
//! fault; no input panics. The semantics, every formula and every deliberate deviation
//! from the ONNX reference implementation are in [`qdq_ref`]'s documentation
//! ([`qdq_ref::quantize`](mod@qdq_ref::quantize), [`qdq_ref::dequantize`](mod@qdq_ref::dequantize),
//! [`qdq_ref::float`], [`qdq_ref::layout`]) and the README.
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
//!   at multiply speed (Markstein's correction with a per-scale reciprocal; on AVX2 part
//!   of each step's quotients by the divide instruction beside it, two of four on AMD's
//!   cores, one elsewhere: the same quotients), explicit
//!   round-half-even, clamping before every float-to-int conversion, in-register packing
//!   and unpacking of 4-, 2- and 6-bit codes, branch-free float8/float6/float4 codecs
//!   (float4 and float6 decoded by register table lookups where the ISA has them).
//! * **Layouts in vector code**: per-tensor, per-axis and blocked scales are walked as runs
//!   that broadcast one scale or load scale vectors alongside x (`segments`).
//! * **Threads** above [`Config::parallel_threshold`] elements: a call is cut into
//!   byte-aligned parts that run on rayon's global pool (cargo feature `rayon`, on by
//!   default) or on the engine's own pool ([`ThreadPool`], [`Config::with_pool`]); the cut
//!   and the pool never change a result. [`Config::sequential`] keeps everything on the
//!   calling thread, and [`quantize_range`] / [`dequantize_range`] let an engine shard work
//!   itself.
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
#![deny(rustdoc::broken_intra_doc_links)]
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
pub mod scaled;
mod scaled_kernels;
mod segments;
mod simd;
mod tensor;
mod threads;
pub mod train;
mod walk;

/// The README's code blocks, run by `cargo test --doc` so that its quick start keeps
/// compiling and running.
#[cfg(doctest)]
#[doc = include_str!("../../../README.md")]
pub struct ReadmeDoctests;

pub use config::{Config, ThreadPool};
#[doc(hidden)]
pub use isa::tuning;
pub use isa::Isa;
pub use qdq_ref::{
    bf16, dtype, element, f16, float, layout, packing, schema, Attribute, DataType, DequantizeAttributes,
    DequantizePlan, Domain, DynamicQuantized, Element, Error, ErrorKind, Float8E4M3Fn, Float8E4M3FnUz, Float8E5M2,
    Float8E5M2FnUz, Float8E8M0, Layout, Opset, Packed, PackedMut, Params, Precision, QuantizeAttributes,
    QuantizeOptions, QuantizePlan, Result, Tensor, TensorRef, Values, ValuesMut,
};
pub use tensor::{dequantize_linear, dynamic_quantize_linear, quantize_linear, run_node, run_node_with, Fast};

use config::Cost;
use std::ops::Range;

/// Byte offset of element `e` in a tensor of type `t` (`e` a multiple of 4, or any `e` for
/// whole-byte types).
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

/// Runs a resolved quantize job over the elements `range` (`y` holds their bytes).
fn quantize_job(cfg: &Config, isa: Isa, job: &quantize::Job<'_>, range: Range<usize>, y: &mut [u8]) {
    let cheap = job.src == quantize::Src::F32 && matches!(job.enc, quantize::Encode::Int { .. });
    let cost = if cheap { Cost::Cheap } else { Cost::Double };
    threads::drive_one(cfg, cost, range, y, job.out.bits(), &|b, e, y| {
        isa::dispatch(isa, RangeKernel { job, begin: b, end: e, y })
    });
}

/// QuantizeLinear of `x` with `params` into `y`, whose element type is the output type.
/// qdq allocates nothing; large calls use rayon's pool ([`Config::default`]), where a call
/// from outside the pool lets rayon box one small job per helper thread.
///
/// * `x`: `&[f32]`, `&[f16]`, `&[bf16]` or `&[i32]` (a slice, `&Vec` or array).
/// * `params`: the scales (one per tensor, per index of an axis, or per block; f32, f16,
///   bf16, i32 or e8m0), optional zero points of the output type, `saturate` and
///   `precision` (see [`Params`]).
/// * `y`: as many elements as `x`: `&mut [u8]`, `&mut [i8]`, `&mut [u16]`, `&mut [i16]`,
///   a float8 slice ([`Float8E4M3Fn`], ...), or, for the packed sub-byte types (u4, i4,
///   u2, i2, e2m1, e2m3, e3m2), a [`PackedMut`] of `dtype.byte_len(x.len())` bytes.
///
/// Integer outputs get `clamp(roundTiesEven(x / s) + z, qmin, qmax)`, NaN giving `qmin`;
/// float8 / float6 / float4 outputs get `x / s` rounded to nearest-even, saturating as
/// `saturate` says. The division is correctly rounded in the scale's type (or
/// `precision`): see the crate docs for the exact formula and every edge case. The
/// result is bit-identical to [`qdq_ref::quantize()`] on every ISA and thread count.
///
/// Errors (never a panic): a length that does not match (`y`, the scales for the layout,
/// the zero points), unsupported types, a zero point of another type than `y` or outside
/// its range, a non-zero float zero point, a forced ISA this CPU lacks.
///
/// ```
/// let x = [-1.0f32, 0.0, 0.26, 1000.0];
/// let mut y = [0u8; 4];
/// qdq::quantize(&x, &qdq::Params::per_tensor(0.1).zero_point(10), &mut y)?;
/// assert_eq!(y, [0, 10, 13, 255]);
/// # Ok::<(), qdq::Error>(())
/// ```
pub fn quantize<'x, 'y>(x: impl Into<Values<'x>>, params: &Params<'_>, y: impl Into<PackedMut<'y>>) -> Result<()> {
    quantize_views(&Config::default(), x.into(), params, None, y.into())
}

/// [`quantize()`] with an explicit [`Config`] (ISA, threads).
///
/// ```
/// use qdq::{Config, Params};
/// let mut y = [0i8; 3];
/// qdq::quantize_with(&Config::sequential(), &[1.0f32, -2.0, 3.0], &Params::per_tensor(0.5), &mut y)?;
/// assert_eq!(y, [2, -4, 6]);
/// # Ok::<(), qdq::Error>(())
/// ```
pub fn quantize_with<'x, 'y>(
    cfg: &Config,
    x: impl Into<Values<'x>>,
    params: &Params<'_>,
    y: impl Into<PackedMut<'y>>,
) -> Result<()> {
    quantize_views(cfg, x.into(), params, None, y.into())
}

/// Quantizes only the elements `range` of the call `quantize(x, params, y)` into `y_part`,
/// which holds exactly that range of the output, on the calling thread: for engines that
/// shard one call over their own threads. The shards' results are those of the whole call.
///
/// `range` must lie within `0..x.len()` and start and end on a byte boundary of the output
/// (any index for 8- and 16-bit outputs, an even index for 4-bit ones, a multiple of 4 for
/// 2- and 6-bit ones; the end may also be `x.len()`): otherwise the error is
/// [`ErrorKind::InvalidArgument`].
///
/// ```
/// use qdq::Params;
/// let x: Vec<f32> = (0..10).map(|i| i as f32).collect();
/// let params = Params::per_tensor(1.0);
/// let mut y = vec![0u8; 10];
/// let (lo, hi) = y.split_at_mut(3);
/// std::thread::scope(|s| {
///     s.spawn(|| qdq::quantize_range(&x, &params, 0..3, lo));
///     s.spawn(|| qdq::quantize_range(&x, &params, 3..10, hi));
/// });
/// assert_eq!(y, [0, 1, 2, 3, 4, 5, 6, 7, 8, 9]);
/// ```
pub fn quantize_range<'x, 'y>(
    x: impl Into<Values<'x>>,
    params: &Params<'_>,
    range: Range<usize>,
    y_part: impl Into<PackedMut<'y>>,
) -> Result<()> {
    quantize_views(&Config::sequential(), x.into(), params, Some(range), y_part.into())
}

/// [`quantize_range`] on the ISA `cfg` names (its thread settings do not apply: a range
/// runs on the calling thread).
///
/// ```
/// use qdq::{Config, Params};
/// let mut part = [0u8; 2];
/// qdq::quantize_range_with(&Config::default(), &[1.0f32, 2.0, 3.0, 4.0], &Params::per_tensor(1.0), 2..4, &mut part)?;
/// assert_eq!(part, [3, 4]);
/// # Ok::<(), qdq::Error>(())
/// ```
pub fn quantize_range_with<'x, 'y>(
    cfg: &Config,
    x: impl Into<Values<'x>>,
    params: &Params<'_>,
    range: Range<usize>,
    y_part: impl Into<PackedMut<'y>>,
) -> Result<()> {
    quantize_views(&cfg.calling_thread(), x.into(), params, Some(range), y_part.into())
}

/// Every slice-level quantize: the whole call (`range` `None`) or a range of it.
fn quantize_views(
    cfg: &Config,
    x: Values<'_>,
    params: &Params<'_>,
    range: Option<Range<usize>>,
    y: PackedMut<'_>,
) -> Result<()> {
    crate::isa::fpenv::scoped(|| {
        let (out, n) = (y.dtype, x.len());
        match range {
            None => {
                let plan = qdq_ref::quantize::plan(x, params, out, y.data.len())?;
                quantize_core(cfg, &plan, 0..n, y.data)
            }
            Some(range) => {
                let full = out.byte_len(n).unwrap_or(usize::MAX);
                let plan = qdq_ref::quantize::plan(x, params, out, full)?;
                check_range(out, n, &range, y.data.len())?;
                if range.is_empty() {
                    return Ok(());
                }
                quantize_core(cfg, &plan, range, y.data)
            }
        }
    })
}

/// Checks a range of a call of `n` elements of type `out` and the length of its buffer.
fn check_range(out: DataType, n: usize, range: &Range<usize>, y_len: usize) -> Result<()> {
    if range.start > range.end || range.end > n {
        return Err(Error::new(ErrorKind::InvalidArgument, format!("range {range:?} does not lie within 0..{n}")));
    }
    // An empty shard may lie anywhere in the tensor (an engine's last one may start at n).
    let Some(want) = out.range_byte_len(range.clone(), n) else {
        // Elements per whole number of bytes: 4 for 2- and 6-bit types, 2 for 4-bit ones.
        let step = match out.bits() {
            2 | 6 => 4,
            4 => 2,
            _ => 1,
        };
        return Err(Error::new(
            ErrorKind::InvalidArgument,
            format!(
                "range {range:?} must start and end at multiples of {step} elements (a byte boundary of {out}); \
                 the end may also be {n}"
            ),
        ));
    };
    if y_len != want {
        return Err(Error::new(
            ErrorKind::BufferLength,
            format!("y_part: elements {range:?} of {out} need {want} bytes, got {y_len}"),
        ));
    }
    Ok(())
}

/// The parallel cost class of a dequantize job: float codes and bf16 outputs decode and
/// round more per element, and e8m0 (MX) or NVFP4 scales are decoded per block. Integer
/// codes to f16 are cheap: one conversion instruction rounds, and the output is half
/// f32's bytes (AVX2, 1 Mi: i8 -> f16 9-10 Gelem/s and i4 -> f16 blocked 6.8 on one
/// thread, against 5.5 for u8 -> f32; two threads at 1 Mi ran 0.85-1.07x of one).
fn dequantize_cost(job: &dequantize::Job<'_>) -> Cost {
    use quantize::ScaleKind;
    if matches!(job.scale_kind, ScaleKind::E8M0 | ScaleKind::E4M3Times(_)) {
        Cost::Quad
    } else if job.mini.is_some() || matches!(job.out, dequantize::Out::Bf16) {
        Cost::Double
    } else {
        Cost::Cheap
    }
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
        Some(job) => threads::drive_one(cfg, dequantize_cost(&job), range, y, out.bits(), &|b, e, y| {
            isa::dispatch(isa, RangeKernel { job: &job, begin: b, end: e, y })
        }),
        None => fallback::dequantize(plan, range, y),
    }
    Ok(())
}

/// DequantizeLinear of `x` with `params` into `y`, whose element type is the output type.
/// qdq allocates nothing; large calls use rayon's pool ([`Config::default`]), where a call
/// from outside the pool lets rayon box one small job per helper thread.
///
/// * `x`: `&[u8]`, `&[i8]`, `&[u16]`, `&[i16]`, `&[i32]`, a float8 slice, or a [`Packed`]
///   view of packed sub-byte data ([`Packed::new`]).
/// * `params`: the scales (f32, f16, bf16 or e8m0), optional zero points of x's type, and
///   the layout; `saturate` and `precision` do not apply.
/// * `y`: `&mut [f32]`, `&mut [f16]` or `&mut [bf16]`, as many elements as `x`.
///
/// Each element becomes `(x - z) * s`: the subtraction exact, the product in f32, rounded
/// once to y's type; every NaN is the canonical `0x7fc00000` (f16 `0x7e00`, bf16
/// `0x7fc0`). Bit-identical to [`qdq_ref::dequantize()`] on every ISA and thread count.
///
/// ```
/// let mut y = [0f32; 3];
/// qdq::dequantize(&[0u8, 128, 255], &qdq::Params::per_tensor(0.5).zero_point(128), &mut y)?;
/// assert_eq!(y, [-64.0, 0.0, 63.5]);
/// # Ok::<(), qdq::Error>(())
/// ```
pub fn dequantize<'x, 'y>(x: impl Into<Packed<'x>>, params: &Params<'_>, y: impl Into<ValuesMut<'y>>) -> Result<()> {
    dequantize_views(&Config::default(), x.into(), params, None, y.into())
}

/// [`dequantize()`] with an explicit [`Config`] (ISA, threads).
///
/// ```
/// use qdq::{f16, Config, Params};
/// let mut y = [f16::ZERO; 2];
/// qdq::dequantize_with(&Config::sequential(), &[-4i8, 6], &Params::per_tensor(0.25), &mut y)?;
/// assert_eq!(y, [f16::from_f32(-1.0), f16::from_f32(1.5)]);
/// # Ok::<(), qdq::Error>(())
/// ```
pub fn dequantize_with<'x, 'y>(
    cfg: &Config,
    x: impl Into<Packed<'x>>,
    params: &Params<'_>,
    y: impl Into<ValuesMut<'y>>,
) -> Result<()> {
    dequantize_views(cfg, x.into(), params, None, y.into())
}

/// Dequantizes only the elements `range` of the call `dequantize(x, params, y)` into
/// `y_part` (exactly `range.len()` elements), on the calling thread: for engines that
/// shard one call themselves. Any range within `0..x.len()` is accepted.
///
/// ```
/// use qdq::Params;
/// let x = [10u8, 20, 30, 40, 50];
/// let mut y = [0f32; 5];
/// let (lo, hi) = y.split_at_mut(2);
/// qdq::dequantize_range(&x, &Params::per_tensor(0.1), 0..2, lo)?;
/// qdq::dequantize_range(&x, &Params::per_tensor(0.1), 2..5, hi)?;
/// assert_eq!(y, [1.0, 2.0, 3.0, 4.0, 5.0]);
/// # Ok::<(), qdq::Error>(())
/// ```
pub fn dequantize_range<'x, 'y>(
    x: impl Into<Packed<'x>>,
    params: &Params<'_>,
    range: Range<usize>,
    y_part: impl Into<ValuesMut<'y>>,
) -> Result<()> {
    dequantize_views(&Config::sequential(), x.into(), params, Some(range), y_part.into())
}

/// [`dequantize_range`] on the ISA `cfg` names (a range runs on the calling thread).
///
/// ```
/// use qdq::{Config, Params};
/// let mut part = [0f32; 1];
/// qdq::dequantize_range_with(&Config::default(), &[1u8, 2, 3], &Params::per_tensor(2.0), 1..2, &mut part)?;
/// assert_eq!(part, [4.0]);
/// # Ok::<(), qdq::Error>(())
/// ```
pub fn dequantize_range_with<'x, 'y>(
    cfg: &Config,
    x: impl Into<Packed<'x>>,
    params: &Params<'_>,
    range: Range<usize>,
    y_part: impl Into<ValuesMut<'y>>,
) -> Result<()> {
    dequantize_views(&cfg.calling_thread(), x.into(), params, Some(range), y_part.into())
}

/// Every slice-level dequantize: the whole call (`range` `None`) or a range of it.
fn dequantize_views(
    cfg: &Config,
    x: Packed<'_>,
    params: &Params<'_>,
    range: Option<Range<usize>>,
    mut y: ValuesMut<'_>,
) -> Result<()> {
    crate::isa::fpenv::scoped(|| {
        let (out, n) = (y.dtype(), x.len);
        let y_len = y.len();
        let plan = qdq_ref::dequantize::plan(x, params, out, if range.is_some() { n } else { y_len })?;
        let range = range.unwrap_or(0..n);
        if range.start > range.end || range.end > n {
            return Err(Error::new(ErrorKind::InvalidArgument, format!("range {range:?} does not lie within 0..{n}")));
        }
        if y_len != range.len() {
            return Err(Error::new(
                ErrorKind::BufferLength,
                format!("y_part has {y_len} elements but the range {range:?} has {}", range.len()),
            ));
        }
        dequantize_core(cfg, &plan, range, y.bytes_mut())
    })
}

/// DynamicQuantizeLinear of `x` into `y` (u8, as many elements): the scale and zero point
/// come from x's range, `s = (max(x, 0) - min(x, 0)) / 255`, `z = roundTiesEven(-min / s)`,
/// and are returned. NaN elements are ignored in the range and quantize to 0; an empty or
/// all-zero x gives scale 0 and zero point 0. Bit-identical to
/// [`qdq_ref::dynamic_quantize`].
///
/// ```
/// let mut y = [0u8; 3];
/// let (scale, zero_point) = qdq::dynamic_quantize(&[-1.0, 0.0, 1.55], &mut y)?;
/// assert_eq!((scale, zero_point, y), (0.01, 100, [0, 100, 255]));
/// # Ok::<(), qdq::Error>(())
/// ```
pub fn dynamic_quantize(x: &[f32], y: &mut [u8]) -> Result<(f32, u8)> {
    dynamic_quantize_with(&Config::default(), x, y)
}

/// [`dynamic_quantize`] with an explicit [`Config`].
///
/// ```
/// let mut y = [0u8; 2];
/// let (scale, zero_point) = qdq::dynamic_quantize_with(&qdq::Config::sequential(), &[0.0, 2.55], &mut y)?;
/// assert_eq!((scale, zero_point, y), (0.01, 0, [0, 255]));
/// # Ok::<(), qdq::Error>(())
/// ```
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
