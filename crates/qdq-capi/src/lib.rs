//! # qdq's C ABI
//!
//! The functions of `include/qdq.h` (generated from this crate by `cargo xtask header`),
//! built as `libqdq.a` / `libqdq.so` by `cargo build --release -p qdq-capi`. The semantics
//! are the `qdq` crate's, bit for bit; this crate only converts arguments.
//!
//! ## Conventions
//!
//! * Every function returns a [`qdq_status`]; [`qdq_last_error`] gives the message of the
//!   calling thread's last failure (it names the argument at fault).
//! * Element types are ONNX's `TensorProto` codes ([`qdq_dtype`]); ISAs are [`qdq_isa`].
//! * Pointers are checked: a NULL pointer with a non-zero length is
//!   [`qdq_status::QDQ_NULL_POINTER`], NULL with length 0 is an empty buffer. Typed inputs
//!   and outputs (f32, f16, bf16, i32) must be aligned to their element size.
//! * Output buffers are a pointer and a capacity (in bytes; in floats for the gradients
//!   `ds` / `dzp`): less than the output needs is [`qdq_status::QDQ_BUFFER_TOO_SMALL`]
//!   (nothing written); more is fine, the bytes after the output are left alone. Input
//!   counts (`n`, `n_scales`, `n_zero_points`, an input mask's bytes) are exact: a count
//!   that does not fit the layout is an error naming it.
//! * An output must not share memory with any other argument (in-place calls included):
//!   such a call is refused with [`qdq_status::QDQ_INVALID_ARGUMENT`] before anything is
//!   read or written. Inputs may share memory with each other.
//! * No panic crosses the boundary: one is caught and reported as
//!   [`qdq_status::QDQ_INTERNAL`].
//! * The slice-level functions (`qdq_quantize`, `qdq_dequantize`, their `_range` forms,
//!   `qdq_dynamic_quantize`, the scale-computing quantizers `qdq_quantize_rows`,
//!   `qdq_quantize_blockwise`, `qdq_quantize_mx`, `qdq_quantize_nvfp4`, the training
//!   functions) allocate nothing unless they fail; the
//!   tensor-level ones allocate a little (the shapes).
//! * Threads: a [`qdq_config`] may name the engine's [`qdq_thread_pool`] (a
//!   `parallel_for` callback, as MLAS's and pthreadpool's); without one, or with a NULL
//!   config, everything runs on the calling thread. The library starts no threads.
#![allow(non_camel_case_types)]
// This crate is the FFI shim: its exported functions read raw pointers. Each unsafe block
// states why it is sound.
#![deny(unsafe_op_in_unsafe_fn)]
#![deny(clippy::undocumented_unsafe_blocks)]
#![deny(missing_docs)]

mod convert;
mod scaled;
mod slice;
mod tensor;
mod train;

pub use scaled::*;
pub use slice::*;
pub use tensor::*;
pub use train::*;

use std::cell::RefCell;
use std::ffi::{c_char, c_void, CStr};
use std::panic::{catch_unwind, AssertUnwindSafe};
use std::sync::atomic::{AtomicBool, Ordering};

/// What a call returned: `QDQ_OK`, one value per kind of error of the Rust API, and the
/// C-level ones (a NULL pointer, a buffer too small, an internal error).
#[repr(C)]
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum qdq_status {
    /// Success.
    QDQ_OK = 0,
    /// The opset version or domain is not one qdq implements.
    QDQ_UNSUPPORTED_OPSET = 1,
    /// An attribute this operator version does not define was given.
    QDQ_UNKNOWN_ATTRIBUTE = 2,
    /// An attribute has a value outside its allowed set.
    QDQ_INVALID_ATTRIBUTE = 3,
    /// An argument has a value outside its allowed set (a range, a zero point, a block of
    /// 0, an unaligned pointer, an unknown enum value, a string that is not UTF-8).
    QDQ_INVALID_ARGUMENT = 4,
    /// A required attribute is missing.
    QDQ_MISSING_ATTRIBUTE = 5,
    /// An element type is not allowed here (or is no ONNX type qdq knows).
    QDQ_UNSUPPORTED_TYPE = 6,
    /// Two types that must agree do not.
    QDQ_TYPE_MISMATCH = 7,
    /// `axis` is outside `[-rank, rank - 1]`.
    QDQ_AXIS_OUT_OF_RANGE = 8,
    /// A scale or zero-point shape does not fit x's shape for the layout.
    QDQ_SHAPE_MISMATCH = 9,
    /// A buffer's length does not match its shape and type.
    QDQ_BUFFER_LENGTH = 10,
    /// A shape's element or byte count overflows, or a dimension is negative.
    QDQ_SHAPE_OVERFLOW = 11,
    /// A float8 / float4 / float6 zero point holds a non-zero value.
    QDQ_NON_ZERO_ZERO_POINT = 12,
    /// The wrong number of inputs or outputs for the operator.
    QDQ_ARITY = 13,
    /// A forced ISA this CPU lacks (or `QDQ_ISA` names none).
    QDQ_ISA_UNAVAILABLE = 14,
    /// A pointer that must not be NULL is NULL.
    QDQ_NULL_POINTER = 15,
    /// An output buffer is smaller than the output.
    QDQ_BUFFER_TOO_SMALL = 16,
    /// A bug in qdq (a caught panic), or a thread-pool task that panicked.
    QDQ_INTERNAL = 17,
}

/// ONNX `TensorProto` element types (the values of `qdq_dtype` arguments).
#[repr(C)]
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum qdq_dtype {
    /// float32.
    QDQ_FLOAT = 1,
    /// uint8.
    QDQ_UINT8 = 2,
    /// int8.
    QDQ_INT8 = 3,
    /// uint16.
    QDQ_UINT16 = 4,
    /// int16.
    QDQ_INT16 = 5,
    /// int32.
    QDQ_INT32 = 6,
    /// float16.
    QDQ_FLOAT16 = 10,
    /// bfloat16.
    QDQ_BFLOAT16 = 16,
    /// float8 e4m3fn.
    QDQ_FLOAT8E4M3FN = 17,
    /// float8 e4m3fnuz.
    QDQ_FLOAT8E4M3FNUZ = 18,
    /// float8 e5m2.
    QDQ_FLOAT8E5M2 = 19,
    /// float8 e5m2fnuz.
    QDQ_FLOAT8E5M2FNUZ = 20,
    /// uint4, two per byte, low nibble first.
    QDQ_UINT4 = 21,
    /// int4, two per byte, low nibble first.
    QDQ_INT4 = 22,
    /// float4 e2m1, two per byte.
    QDQ_FLOAT4E2M1 = 23,
    /// float8 e8m0 (scales only).
    QDQ_FLOAT8E8M0 = 24,
    /// uint2, four per byte.
    QDQ_UINT2 = 25,
    /// int2, four per byte.
    QDQ_INT2 = 26,
    /// float6 e2m3, four in three bytes.
    QDQ_FLOAT6E2M3 = 27,
    /// float6 e3m2, four in three bytes.
    QDQ_FLOAT6E3M2 = 28,
}

/// Instruction sets (the values of `qdq_isa` arguments and of `qdq_config.isa`).
#[repr(C)]
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum qdq_isa {
    /// The best this CPU has (or the `QDQ_ISA` environment variable's choice).
    QDQ_ISA_AUTO = 0,
    /// Portable scalar code.
    QDQ_ISA_SCALAR = 1,
    /// x86-64 AVX2 + FMA + F16C.
    QDQ_ISA_AVX2 = 2,
    /// x86-64 AVX-512 F / BW / VL.
    QDQ_ISA_AVX512 = 3,
    /// aarch64 NEON.
    QDQ_ISA_NEON = 4,
}

/// Runs task `task` of a parallel call; `task_ctx` is qdq's.
pub type qdq_task_fn = Option<unsafe extern "C" fn(task_ctx: *mut c_void, task: usize)>;

/// The engine's `parallel_for`: calls `task(task_ctx, i)` once for every `i` in
/// `0..n_tasks`, on any threads in any order, and returns when all have returned.
/// `pool_ctx` is [`qdq_thread_pool::ctx`]. qdq calls it from the thread that called qdq
/// (once or a few times in sequence per call), never from inside a task. It must return
/// normally: no C++ exception or `longjmp` may leave it (or a task).
pub type qdq_parallel_for_fn =
    Option<unsafe extern "C" fn(pool_ctx: *mut c_void, n_tasks: usize, task: qdq_task_fn, task_ctx: *mut c_void)>;

/// An engine's thread pool.
#[repr(C)]
#[derive(Clone, Copy, Debug)]
pub struct qdq_thread_pool {
    /// The pool's `parallel_for`; NULL runs everything on the calling thread.
    pub parallel_for: qdq_parallel_for_fn,
    /// Passed back to `parallel_for` as `pool_ctx`.
    pub ctx: *mut c_void,
    /// How many threads run tasks: a call is cut into about four tasks a thread. 0 or 1
    /// keeps calls on the calling thread.
    pub threads: usize,
}

/// How a call runs. A NULL `const qdq_config *` means all defaults (a zeroed struct): the
/// best ISA, the calling thread only.
#[repr(C)]
#[derive(Clone, Copy, Debug)]
pub struct qdq_config {
    /// A [`qdq_isa`] value; `QDQ_ISA_AUTO` (0) for the best. A forced ISA this CPU lacks
    /// fails the call with `QDQ_ISA_UNAVAILABLE`.
    pub isa: i32,
    /// The engine's pool, or NULL for the calling thread.
    pub pool: *const qdq_thread_pool,
    /// Calls of fewer elements stay on the calling thread; 0 means the default (1 Mi = 1048576;
    /// counted in elements of the cheapest kernels, see the Rust `Config::parallel_threshold`).
    pub parallel_threshold: usize,
}

// ---------------------------------------------------------------------------------------
// Errors.

/// A failure: its status and message.
pub(crate) struct Fail {
    pub(crate) status: qdq_status,
    pub(crate) message: String,
}

impl Fail {
    pub(crate) fn new(status: qdq_status, message: impl Into<String>) -> Fail {
        Fail { status, message: message.into() }
    }
}

impl From<qdq_core::Error> for Fail {
    fn from(e: qdq_core::Error) -> Fail {
        use qdq_core::ErrorKind as K;
        use qdq_status::*;
        let status = match e.kind() {
            K::UnsupportedOpset => QDQ_UNSUPPORTED_OPSET,
            K::UnknownAttribute => QDQ_UNKNOWN_ATTRIBUTE,
            K::InvalidAttribute => QDQ_INVALID_ATTRIBUTE,
            K::InvalidArgument => QDQ_INVALID_ARGUMENT,
            K::MissingAttribute => QDQ_MISSING_ATTRIBUTE,
            K::UnsupportedType => QDQ_UNSUPPORTED_TYPE,
            K::TypeMismatch => QDQ_TYPE_MISMATCH,
            K::AxisOutOfRange => QDQ_AXIS_OUT_OF_RANGE,
            K::ShapeMismatch => QDQ_SHAPE_MISMATCH,
            K::BufferLength => QDQ_BUFFER_LENGTH,
            K::ShapeOverflow => QDQ_SHAPE_OVERFLOW,
            K::NonZeroZeroPoint => QDQ_NON_ZERO_ZERO_POINT,
            K::Arity => QDQ_ARITY,
            K::IsaUnavailable => QDQ_ISA_UNAVAILABLE,
            _ => QDQ_INTERNAL,
        };
        Fail { status, message: e.to_string() }
    }
}

pub(crate) type Res<T> = Result<T, Fail>;

thread_local! {
    // The last failure's message, NUL-terminated (const-initialised: reading it on a
    // thread that never failed allocates nothing).
    static LAST_ERROR: RefCell<Vec<u8>> = const { RefCell::new(Vec::new()) };
}

fn set_last_error(message: &str) {
    let _ = LAST_ERROR.try_with(|e| {
        let mut e = e.borrow_mut();
        e.clear();
        e.extend(message.bytes().filter(|&b| b != 0));
        e.push(0);
    });
}

/// Runs an exported function's body: its status, the message kept for
/// [`qdq_last_error`], and any panic caught.
pub(crate) fn guard(body: impl FnOnce() -> Res<()>) -> qdq_status {
    convert::begin_call();
    let r = catch_unwind(AssertUnwindSafe(body));
    convert::begin_call();
    match r {
        Ok(Ok(())) => qdq_status::QDQ_OK,
        Ok(Err(f)) => {
            set_last_error(&f.message);
            f.status
        }
        Err(_) => {
            set_last_error("internal error: qdq panicked (a bug; please report it with the call's arguments)");
            qdq_status::QDQ_INTERNAL
        }
    }
}

/// The message of the calling thread's last failed call ("" if none failed): it names the
/// argument at fault and what was expected. Valid until the thread's next failing qdq call.
///
/// # Safety
/// Always safe to call.
#[no_mangle]
pub extern "C" fn qdq_last_error() -> *const c_char {
    static EMPTY: &[u8] = b"\0";
    LAST_ERROR
        .try_with(|e| {
            let e = e.borrow();
            if e.is_empty() {
                EMPTY.as_ptr().cast()
            } else {
                // The buffer lives in the thread-local until the next failure replaces it.
                e.as_ptr().cast()
            }
        })
        .unwrap_or(EMPTY.as_ptr().cast())
}

/// The name of a status value (`"QDQ_OK"`, `"QDQ_NULL_POINTER"`, ...), or `"unknown"`.
#[no_mangle]
pub extern "C" fn qdq_status_name(status: i32) -> *const c_char {
    let name: &'static CStr = match status {
        0 => c"QDQ_OK",
        1 => c"QDQ_UNSUPPORTED_OPSET",
        2 => c"QDQ_UNKNOWN_ATTRIBUTE",
        3 => c"QDQ_INVALID_ATTRIBUTE",
        4 => c"QDQ_INVALID_ARGUMENT",
        5 => c"QDQ_MISSING_ATTRIBUTE",
        6 => c"QDQ_UNSUPPORTED_TYPE",
        7 => c"QDQ_TYPE_MISMATCH",
        8 => c"QDQ_AXIS_OUT_OF_RANGE",
        9 => c"QDQ_SHAPE_MISMATCH",
        10 => c"QDQ_BUFFER_LENGTH",
        11 => c"QDQ_SHAPE_OVERFLOW",
        12 => c"QDQ_NON_ZERO_ZERO_POINT",
        13 => c"QDQ_ARITY",
        14 => c"QDQ_ISA_UNAVAILABLE",
        15 => c"QDQ_NULL_POINTER",
        16 => c"QDQ_BUFFER_TOO_SMALL",
        17 => c"QDQ_INTERNAL",
        _ => c"unknown",
    };
    name.as_ptr()
}

// ---------------------------------------------------------------------------------------
// Version and ISA queries.

/// The library's version, `"MAJOR.MINOR.PATCH"`.
#[no_mangle]
pub extern "C" fn qdq_version() -> *const c_char {
    const V: &str = concat!(env!("CARGO_PKG_VERSION"), "\0");
    V.as_ptr().cast()
}

/// The ISA calls with `QDQ_ISA_AUTO` use (the `QDQ_ISA` environment variable's, if set).
/// Writes it to `*isa`; `QDQ_ISA_UNAVAILABLE` if `QDQ_ISA` names an ISA this CPU lacks.
///
/// # Safety
/// `isa` must be NULL or point to a writable `int32_t`.
#[no_mangle]
pub unsafe extern "C" fn qdq_isa_detect(isa: *mut i32) -> qdq_status {
    guard(|| {
        let out = convert::out_ref(isa, "isa")?;
        *out = convert::isa_code(qdq_core::Isa::detect()?);
        Ok(())
    })
}

/// Whether this CPU has `isa` (a [`qdq_isa`] value; `QDQ_ISA_AUTO` is always available):
/// 1 or 0.
#[no_mangle]
pub extern "C" fn qdq_isa_available(isa: i32) -> i32 {
    match convert::isa(isa) {
        Ok(None) => 1,
        Ok(Some(i)) => i32::from(i.is_available()),
        Err(_) => 0,
    }
}

/// The name of an ISA (`"scalar"`, `"avx2"`, `"avx512"`, `"neon"`, `"auto"`), or
/// `"unknown"`.
#[no_mangle]
pub extern "C" fn qdq_isa_name(isa: i32) -> *const c_char {
    let name: &'static CStr = match convert::isa(isa) {
        Ok(None) => c"auto",
        Ok(Some(qdq_core::Isa::Scalar)) => c"scalar",
        Ok(Some(qdq_core::Isa::Avx2)) => c"avx2",
        Ok(Some(qdq_core::Isa::Avx512)) => c"avx512",
        Ok(Some(qdq_core::Isa::Neon)) => c"neon",
        _ => c"unknown",
    };
    name.as_ptr()
}

/// Bytes that `n` elements of `dtype` take (packed types rounded up to whole bytes).
///
/// # Safety
/// `bytes` must be NULL or point to a writable `size_t`.
#[no_mangle]
pub unsafe extern "C" fn qdq_byte_size(dtype: i32, n: usize, bytes: *mut usize) -> qdq_status {
    guard(|| {
        let out = convert::out_ref(bytes, "bytes")?;
        let t = convert::dtype(dtype, "dtype")?;
        *out = t.byte_len(n).ok_or_else(|| {
            Fail::new(qdq_status::QDQ_SHAPE_OVERFLOW, format!("n: {n} elements of {t} overflow size_t"))
        })?;
        Ok(())
    })
}

// ---------------------------------------------------------------------------------------
// The engine's pool as a `qdq_core::ThreadPool`.

/// A C pool, for the duration of one call.
pub(crate) struct CPool {
    parallel_for: unsafe extern "C" fn(*mut c_void, usize, qdq_task_fn, *mut c_void),
    ctx: *mut c_void,
    threads: usize,
    panicked: AtomicBool,
}

// SAFETY: qdq calls `parallel_for` only from the thread that called into qdq (the contract
// of `qdq_parallel_for_fn`), and the pool's context is the engine's to synchronise; the
// tasks qdq hands over are `Sync` closures.
unsafe impl Sync for CPool {}

/// What a task callback gets as `task_ctx`.
struct TaskCtx<'a> {
    task: &'a (dyn Fn(usize) + Sync),
    tasks: usize,
    panicked: &'a AtomicBool,
}

unsafe extern "C" fn run_task(task_ctx: *mut c_void, i: usize) {
    if task_ctx.is_null() {
        return;
    }
    // SAFETY: `task_ctx` is the `TaskCtx` that `parallel_for` below passed to the pool,
    // alive until the pool's `parallel_for` returns, which the pool contract places after
    // every task.
    let ctx = unsafe { &*(task_ctx as *const TaskCtx<'_>) };
    if i >= ctx.tasks {
        return;
    }
    if catch_unwind(AssertUnwindSafe(|| (ctx.task)(i))).is_err() {
        ctx.panicked.store(true, Ordering::Relaxed);
    }
}

impl qdq_core::ThreadPool for CPool {
    fn threads(&self) -> usize {
        self.threads
    }

    fn parallel_for(&self, tasks: usize, task: &(dyn Fn(usize) + Sync)) {
        let ctx = TaskCtx { task, tasks, panicked: &self.panicked };
        // SAFETY: the engine's function, called as its contract says: `ctx` and the task
        // callback stay valid until it returns.
        unsafe { (self.parallel_for)(self.ctx, tasks, Some(run_task), &ctx as *const TaskCtx<'_> as *mut c_void) };
    }
}

impl CPool {
    /// Whether a task panicked (its part of the output is then incomplete).
    pub(crate) fn check(&self) -> Res<()> {
        if self.panicked.load(Ordering::Relaxed) {
            return Err(Fail::new(qdq_status::QDQ_INTERNAL, "internal error: a thread-pool task panicked"));
        }
        Ok(())
    }
}

/// The pool of a `qdq_config`, if it names one.
///
/// # Safety
/// `cfg` is NULL or points to a valid `qdq_config`, whose `pool` is NULL or valid.
pub(crate) unsafe fn pool_of(cfg: *const qdq_config) -> Option<CPool> {
    // SAFETY: the caller's contract.
    let c = unsafe { cfg.as_ref()? };
    // SAFETY: the caller's contract.
    let p = unsafe { c.pool.as_ref()? };
    let f = p.parallel_for?;
    Some(CPool { parallel_for: f, ctx: p.ctx, threads: p.threads, panicked: AtomicBool::new(false) })
}

/// The `qdq_core::Config` of a `qdq_config` (and its pool, built by [`pool_of`]).
///
/// # Safety
/// As [`pool_of`].
pub(crate) unsafe fn config_of<'p>(cfg: *const qdq_config, pool: Option<&'p CPool>) -> Res<qdq_core::Config<'p>> {
    // SAFETY: the caller's contract.
    let Some(c) = (unsafe { cfg.as_ref() }) else {
        return Ok(qdq_core::Config::sequential());
    };
    let mut out = qdq_core::Config::sequential();
    out.isa = convert::isa(c.isa)?;
    if c.parallel_threshold != 0 {
        out.parallel_threshold = c.parallel_threshold;
    }
    if let Some(p) = pool {
        out = out.with_pool(p);
    }
    Ok(out)
}

/// Runs `f` with the `qdq_core::Config` of `cfg`, then reports a panicked pool task.
///
/// # Safety
/// As [`pool_of`].
pub(crate) unsafe fn with_config(cfg: *const qdq_config, f: impl FnOnce(&qdq_core::Config<'_>) -> Res<()>) -> Res<()> {
    // NULL, or aligned and overlapping no output (as is its pool).
    if let Some(c) = convert::in_ref_or_null(cfg, "cfg")? {
        convert::in_ref_or_null(c.pool, "cfg.pool")?;
    }
    // SAFETY: the caller's contract.
    let pool = unsafe { pool_of(cfg) };
    // SAFETY: the caller's contract.
    let c = unsafe { config_of(cfg, pool.as_ref()) }?;
    f(&c)?;
    match &pool {
        Some(p) => p.check(),
        None => Ok(()),
    }
}
