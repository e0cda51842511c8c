//! C arguments to Rust values: enum codes, pointers with lengths, typed views. Every check
//! names the argument.

use crate::{qdq_status, Fail, Res};
use qdq_core::{bf16, f16, DataType, Isa, Packed, PackedMut, Values, ValuesMut};
use std::cell::RefCell;
use std::ffi::{c_char, c_void, CStr};

// ---------------------------------------------------------------------------------------
// Aliasing. A C caller may pass one buffer twice (in place, or by mistake); Rust views of
// an output and of anything overlapping it cannot coexist, so each call records the byte
// ranges it views and refuses an output that overlaps another range, before viewing it.
// The record is a fixed thread-local array: nothing is allocated.

/// A viewed byte range: address, length, whether it is written, the argument's name.
#[derive(Clone, Copy)]
struct Span {
    at: usize,
    len: usize,
    out: bool,
    name: [u8; 32],
    name_len: usize,
}

const NO_SPAN: Span = Span { at: 0, len: 0, out: false, name: [0; 32], name_len: 0 };

/// The ranges of the current call (more than fit are not recorded: no call views that many).
struct Spans {
    spans: [Span; 16],
    len: usize,
}

thread_local! {
    static SPANS: RefCell<Spans> = const { RefCell::new(Spans { spans: [NO_SPAN; 16], len: 0 }) };
}

/// Forgets the ranges of the previous call (at every exported function's start).
pub(crate) fn begin_call() {
    let _ = SPANS.try_with(|s| s.borrow_mut().len = 0);
}

/// Records `len` bytes at `at` for argument `name`; fails if they overlap a recorded range
/// where one of the two is written.
fn claim(at: usize, len: usize, out: bool, name: &str) -> Res<()> {
    if len == 0 {
        return Ok(());
    }
    SPANS
        .try_with(|s| {
            let mut s = s.borrow_mut();
            let n = s.len;
            for o in &s.spans[..n] {
                if (out || o.out) && at < o.at + o.len && o.at < at + len {
                    let other = std::str::from_utf8(&o.name[..o.name_len]).unwrap_or("another argument");
                    return Err(Fail::new(
                        qdq_status::QDQ_INVALID_ARGUMENT,
                        format!("{name} overlaps {other}: an output must not share memory with another argument"),
                    ));
                }
            }
            if n < s.spans.len() {
                let mut span = Span { at, len, out, ..NO_SPAN };
                // The name, cut at a character boundary to fit.
                let mut k = name.len().min(span.name.len());
                while !name.is_char_boundary(k) {
                    k -= 1;
                }
                span.name[..k].copy_from_slice(&name.as_bytes()[..k]);
                span.name_len = k;
                s.spans[n] = span;
                s.len = n + 1;
            }
            Ok(())
        })
        .unwrap_or(Ok(()))
}

/// A `qdq_dtype` code.
pub(crate) fn dtype(code: i32, name: &str) -> Res<DataType> {
    DataType::from_onnx(i64::from(code)).ok_or_else(|| {
        Fail::new(qdq_status::QDQ_UNSUPPORTED_TYPE, format!("{name}: {code} is not an element type qdq knows"))
    })
}

/// The `qdq_dtype` code of the buffer `name` (argument `{name}_dtype`; the name is built
/// only for the message: the slice level allocates nothing on success).
fn dtype_of(code: i32, name: &str) -> Res<DataType> {
    DataType::from_onnx(i64::from(code)).ok_or_else(|| {
        Fail::new(qdq_status::QDQ_UNSUPPORTED_TYPE, format!("{name}_dtype: {code} is not an element type qdq knows"))
    })
}

/// A `qdq_isa` code: `None` for `QDQ_ISA_AUTO`.
pub(crate) fn isa(code: i32) -> Res<Option<Isa>> {
    Ok(Some(match code {
        0 => return Ok(None),
        1 => Isa::Scalar,
        2 => Isa::Avx2,
        3 => Isa::Avx512,
        4 => Isa::Neon,
        _ => {
            return Err(Fail::new(qdq_status::QDQ_INVALID_ARGUMENT, format!("isa: {code} is not a qdq_isa value")));
        }
    }))
}

pub(crate) fn isa_code(isa: Isa) -> i32 {
    match isa {
        Isa::Scalar => 1,
        Isa::Avx2 => 2,
        Isa::Avx512 => 3,
        Isa::Neon => 4,
    }
}

fn null(name: &str) -> Fail {
    Fail::new(qdq_status::QDQ_NULL_POINTER, format!("{name} is NULL"))
}

/// `*p` for writing one value.
pub(crate) fn out_ref<'a, T>(p: *mut T, name: &str) -> Res<&'a mut T> {
    if !p.is_aligned() {
        return Err(unaligned(name, std::mem::align_of::<T>()));
    }
    if p.is_null() {
        return Err(null(name));
    }
    claim(p as usize, std::mem::size_of::<T>(), true, name)?;
    // SAFETY: the exported function's contract: `p` is NULL or points to a writable `T`
    // (alignment checked above), which no other argument overlaps (`claim`).
    unsafe { p.as_mut() }.ok_or_else(|| null(name))
}

/// `*p` for reading one value.
pub(crate) fn in_ref<'a, T>(p: *const T, name: &str) -> Res<&'a T> {
    if !p.is_aligned() {
        return Err(unaligned(name, std::mem::align_of::<T>()));
    }
    if p.is_null() {
        return Err(null(name));
    }
    claim(p as usize, std::mem::size_of::<T>(), false, name)?;
    // SAFETY: the exported function's contract: `p` is NULL or points to a valid `T`.
    unsafe { p.as_ref() }.ok_or_else(|| null(name))
}

/// `*p` for reading one value, or `None` for NULL.
pub(crate) fn in_ref_or_null<'a, T>(p: *const T, name: &str) -> Res<Option<&'a T>> {
    if p.is_null() {
        Ok(None)
    } else {
        in_ref(p, name).map(Some)
    }
}

fn unaligned(name: &str, align: usize) -> Fail {
    Fail::new(qdq_status::QDQ_INVALID_ARGUMENT, format!("{name} is not aligned to {align} bytes"))
}

/// Checks `n` elements of `T` at `p` (non-NULL, aligned, of a size a slice may have) and
/// records their bytes (`out`: written); `false` for an empty view (any pointer).
fn view<T>(p: *const T, n: usize, out: bool, name: &str) -> Res<bool> {
    if n == 0 {
        return Ok(false);
    }
    if p.is_null() {
        return Err(null(name));
    }
    if !p.is_aligned() {
        return Err(unaligned(name, std::mem::align_of::<T>()));
    }
    let bytes = n.checked_mul(std::mem::size_of::<T>()).filter(|&b| b <= isize::MAX as usize);
    let bytes =
        bytes.ok_or_else(|| Fail::new(qdq_status::QDQ_SHAPE_OVERFLOW, format!("{name}: {n} elements overflow")))?;
    claim(p as usize, bytes, out, name)?;
    Ok(true)
}

/// `n` elements of `T` at `p` (NULL allowed when `n` is 0).
pub(crate) fn slice<'a, T>(p: *const T, n: usize, name: &str) -> Res<&'a [T]> {
    if !view(p, n, false, name)? {
        return Ok(&[]);
    }
    // SAFETY: the exported function's contract: `p` points to `n` readable elements, not
    // written during the call (no output overlaps them: `claim`); non-NULL, aligned and
    // of a valid size (`view`).
    Ok(unsafe { std::slice::from_raw_parts(p, n) })
}

/// `n` writable elements of `T` at `p` (NULL allowed when `n` is 0).
pub(crate) fn slice_mut<'a, T>(p: *mut T, n: usize, name: &str) -> Res<&'a mut [T]> {
    if !view(p, n, true, name)? {
        return Ok(&mut []);
    }
    // SAFETY: the exported function's contract: `p` points to `n` writable elements that
    // no other argument overlaps (`claim`); non-NULL, aligned, of a valid size (`view`).
    Ok(unsafe { std::slice::from_raw_parts_mut(p, n) })
}

/// The bytes of `n` elements of `t` (packed types rounded up).
pub(crate) fn byte_len(t: DataType, n: usize, name: &str) -> Res<usize> {
    t.byte_len(n).ok_or_else(|| {
        Fail::new(qdq_status::QDQ_SHAPE_OVERFLOW, format!("{name}: {n} elements of {t} overflow size_t"))
    })
}

/// A float / i32 / e8m0 input of `n` elements.
pub(crate) fn values<'a>(code: i32, p: *const c_void, n: usize, name: &str) -> Res<Values<'a>> {
    let t = dtype_of(code, name)?;
    Ok(match t {
        DataType::F32 => Values::F32(slice(p.cast::<f32>(), n, name)?),
        DataType::F16 => Values::F16(slice(p.cast::<f16>(), n, name)?),
        DataType::Bf16 => Values::Bf16(slice(p.cast::<bf16>(), n, name)?),
        DataType::I32 => Values::I32(slice(p.cast::<i32>(), n, name)?),
        DataType::E8M0 => Values::E8M0(slice(p.cast::<u8>(), n, name)?),
        _ => {
            return Err(Fail::new(
                qdq_status::QDQ_UNSUPPORTED_TYPE,
                format!("{name} has type {t}; expected f32, f16, bf16, i32 or e8m0 values"),
            ))
        }
    })
}

/// A float output (f32, f16, bf16) of `n` elements in a buffer of `cap` bytes.
pub(crate) fn values_mut<'a>(code: i32, p: *mut c_void, n: usize, cap: usize, name: &str) -> Res<ValuesMut<'a>> {
    let t = dtype_of(code, name)?;
    let need = byte_len(t, n, name)?;
    fits(need, cap, name)?;
    Ok(match t {
        DataType::F32 => ValuesMut::F32(slice_mut(p.cast::<f32>(), n, name)?),
        DataType::F16 => ValuesMut::F16(slice_mut(p.cast::<f16>(), n, name)?),
        DataType::Bf16 => ValuesMut::Bf16(slice_mut(p.cast::<bf16>(), n, name)?),
        _ => {
            return Err(Fail::new(
                qdq_status::QDQ_UNSUPPORTED_TYPE,
                format!("{name} has type {t}; expected f32, f16 or bf16"),
            ))
        }
    })
}

/// `need` bytes fit a buffer of `cap`.
pub(crate) fn fits(need: usize, cap: usize, name: &str) -> Res<()> {
    if cap < need {
        return Err(Fail::new(
            qdq_status::QDQ_BUFFER_TOO_SMALL,
            format!("{name}: the output needs {need} bytes, the buffer has {cap}"),
        ));
    }
    Ok(())
}

/// `n` codes of type `code` at `p`.
pub(crate) fn packed<'a>(code: i32, p: *const c_void, n: usize, name: &str) -> Res<Packed<'a>> {
    let t = dtype_of(code, name)?;
    let bytes = slice(p.cast::<u8>(), byte_len(t, n, name)?, name)?;
    Ok(Packed { dtype: t, len: n, data: bytes })
}

/// A quantized output of `n` elements of type `code` in a buffer of `cap` bytes.
pub(crate) fn packed_mut<'a>(code: i32, p: *mut c_void, n: usize, cap: usize, name: &str) -> Res<PackedMut<'a>> {
    let t = dtype_of(code, name)?;
    let need = byte_len(t, n, name)?;
    fits(need, cap, name)?;
    Ok(PackedMut::new(t, slice_mut(p.cast::<u8>(), need, name)?))
}

/// A NUL-terminated UTF-8 string (NULL: `default`).
pub(crate) fn string<'a>(p: *const c_char, default: &'a str, name: &str) -> Res<&'a str> {
    if p.is_null() {
        return Ok(default);
    }
    // SAFETY: the exported function's contract: a non-NULL string is NUL-terminated and
    // stays valid during the call.
    let s = unsafe { CStr::from_ptr(p) };
    s.to_str().map_err(|_| Fail::new(qdq_status::QDQ_INVALID_ARGUMENT, format!("{name} is not UTF-8")))
}
