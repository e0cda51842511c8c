//! The quantizers that compute their own scales: per-row, blockwise, MX and NVFP4
//! (`qdq::scaled`). Every output is a pointer and a capacity in bytes; scales and zero
//! points are written in the layouts DequantizeLinear reads.

use crate::convert::{self, fits, packed_mut, slice_mut, values, values_mut};
use crate::slice::layout_of;
use crate::{guard, qdq_config, qdq_layout, qdq_status, with_config, Fail, Res};
use qdq_core::scaled::{BlockMode, Rows, ScaleRounding};
use qdq_core::{DataType, Float8E4M3Fn, Float8E8M0, Layout, PackedMut};
use std::ffi::c_void;

/// How `qdq_quantize_blockwise` derives a block's scale and zero point.
#[repr(C)]
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum qdq_block_mode {
    /// Scale from the block's absmax; zero point 0 (signed y) or the midpoint (unsigned).
    QDQ_BLOCK_SYMMETRIC = 0,
    /// Scale and zero point from the block's min and max, the range including 0.
    QDQ_BLOCK_ASYMMETRIC = 1,
    /// onnxruntime's `MlasQDQQuantizeBlockwise`, bit for bit (int4 symmetric, uint4
    /// asymmetric, f32).
    QDQ_BLOCK_ONNXRUNTIME = 2,
}

/// The rounding of an MX block's shared exponent.
#[repr(C)]
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum qdq_scale_rounding {
    /// `floor(log2(amax)) - emax`: the OCP MX v1.0 rule.
    QDQ_SCALE_FLOOR = 0,
    /// NVIDIA's round-up: the block maximum never saturates.
    QDQ_SCALE_CEIL = 1,
    /// amax rounded to the element precision first (torchao's EVEN).
    QDQ_SCALE_NEAREST_EVEN = 2,
}

/// A blocked layout for `n` elements and its number of blocks.
fn blocked(layout: *const qdq_layout, n: usize) -> Res<(Layout, usize)> {
    let l = layout_of(convert::in_ref(layout, "layout")?)?;
    if !matches!(l, Layout::Blocked { .. }) {
        return Err(Fail::new(
            qdq_status::QDQ_INVALID_ARGUMENT,
            "layout: these quantizers need a blocked layout (QDQ_LAYOUT_BLOCKED; see qdq_layout_blocked)",
        ));
    }
    let k = l.scale_count(n)?;
    Ok((l, k))
}

/// `k` one-byte scales at `p` in a buffer of `cap` bytes.
fn byte_scales<'a, T>(p: *mut u8, k: usize, cap: usize) -> Res<&'a mut [T]> {
    fits(k, cap, "scales")?;
    slice_mut(p.cast::<T>(), k, "scales")
}

/// Per-row dynamic quantization: `rows` rows of `cols` elements of `x` (f32, f16 or bf16;
/// row `r` from element `r * stride`) into y `[rows, cols]` of type `y_dtype`: u8
/// (DynamicQuantizeLinear of each row; `zero_points` gets one per row), i8 (symmetric,
/// `amax / 127`) or float8e4m3fn (`amax / 448`); one f32 scale per row into `scales`
/// (`scales_cap` floats). `zero_points` must be NULL (with `zp_cap` 0) for i8 and float8.
///
/// # Safety
/// `cfg` is NULL or valid; `x` points to `(rows - 1) * stride + cols` elements; `y`,
/// `scales` and `zero_points` point to their capacities of writable memory that no other
/// argument overlaps.
#[no_mangle]
pub unsafe extern "C" fn qdq_quantize_rows(
    cfg: *const qdq_config,
    x_dtype: i32,
    x: *const c_void,
    rows: usize,
    cols: usize,
    stride: usize,
    y_dtype: i32,
    y: *mut c_void,
    y_bytes: usize,
    scales: *mut f32,
    scales_cap: usize,
    zero_points: *mut u8,
    zp_cap: usize,
) -> qdq_status {
    guard(|| {
        let r = Rows { rows, cols, stride };
        let x_len = if rows == 0 || cols == 0 {
            0
        } else {
            (rows - 1)
                .checked_mul(stride)
                .and_then(|v| v.checked_add(cols))
                .ok_or_else(|| Fail::new(qdq_status::QDQ_SHAPE_OVERFLOW, "x: rows * stride overflows size_t"))?
        };
        let xv = values(x_dtype, x, x_len, "x")?;
        let n = rows
            .checked_mul(cols)
            .ok_or_else(|| Fail::new(qdq_status::QDQ_SHAPE_OVERFLOW, "y: rows * cols overflows size_t"))?;
        let yv = packed_mut(y_dtype, y, n, y_bytes, "y")?;
        fits(rows, scales_cap, "scales")?;
        let s = slice_mut(scales, rows, "scales")?;
        let z = if zero_points.is_null() && zp_cap == 0 {
            None
        } else {
            fits(rows, zp_cap, "zero_points")?;
            Some(slice_mut(zero_points, rows, "zero_points")?)
        };
        // SAFETY: the caller's contract on `cfg`.
        unsafe { with_config(cfg, |c| Ok(qdq_core::scaled::quantize_rows_with(c, xv, r, yv, s, z)?)) }
    })
}

/// Blockwise quantization with computed scales: `n` elements of `x` (f32, f16 or bf16) in
/// the blocked `layout` into y (`y_dtype`: int8, uint8, int4, uint4, int2 or uint2), the
/// scales (`scale_dtype`: f32, f16 or bf16; one per block) and the zero points (y's type,
/// packed like y; NULL with `zp_bytes` 0 is allowed for signed y in the symmetric mode).
/// `mode` is a [`qdq_block_mode`].
///
/// # Safety
/// `cfg` is NULL or valid; `x` points to `n` elements; `layout` is valid; `y`, `scales`
/// and `zero_points` point to their capacities of writable memory that no other argument
/// overlaps.
#[no_mangle]
pub unsafe extern "C" fn qdq_quantize_blockwise(
    cfg: *const qdq_config,
    x_dtype: i32,
    x: *const c_void,
    n: usize,
    layout: *const qdq_layout,
    mode: i32,
    y_dtype: i32,
    y: *mut c_void,
    y_bytes: usize,
    scale_dtype: i32,
    scales: *mut c_void,
    scales_bytes: usize,
    zero_points: *mut c_void,
    zp_bytes: usize,
) -> qdq_status {
    guard(|| {
        let mode = match mode {
            0 => BlockMode::Symmetric,
            1 => BlockMode::Asymmetric,
            2 => BlockMode::Onnxruntime,
            m => {
                return Err(Fail::new(
                    qdq_status::QDQ_INVALID_ARGUMENT,
                    format!("mode: {m} is not a qdq_block_mode value"),
                ))
            }
        };
        let xv = values(x_dtype, x, n, "x")?;
        let (l, k) = blocked(layout, n)?;
        let yv = packed_mut(y_dtype, y, n, y_bytes, "y")?;
        let sv = values_mut(scale_dtype, scales, k, scales_bytes, "scales")?;
        let zv = if zero_points.is_null() && zp_bytes == 0 {
            None
        } else {
            Some(packed_mut(y_dtype, zero_points, k, zp_bytes, "zero_points")?)
        };
        // SAFETY: the caller's contract on `cfg`.
        unsafe { with_config(cfg, |c| Ok(qdq_core::scaled::quantize_blockwise_with(c, xv, l, mode, yv, sv, zv)?)) }
    })
}

/// OCP Microscaling (MX v1.0): `n` elements of `x` (f32, f16 or bf16) in the blocked
/// `layout` (blocks of 32 in the spec) into y (`y_dtype`: float8e4m3fn, float8e5m2,
/// float6e2m3, float6e3m2, float4e2m1 or int8) and one e8m0 scale code per block into
/// `scales` (`scales_bytes` of room). `rounding` is a [`qdq_scale_rounding`].
///
/// # Safety
/// `cfg` is NULL or valid; `x` points to `n` elements; `layout` is valid; `y` and `scales`
/// point to their capacities of writable memory that no other argument overlaps.
#[no_mangle]
pub unsafe extern "C" fn qdq_quantize_mx(
    cfg: *const qdq_config,
    x_dtype: i32,
    x: *const c_void,
    n: usize,
    layout: *const qdq_layout,
    rounding: i32,
    y_dtype: i32,
    y: *mut c_void,
    y_bytes: usize,
    scales: *mut u8,
    scales_bytes: usize,
) -> qdq_status {
    guard(|| {
        let rounding = match rounding {
            0 => ScaleRounding::Floor,
            1 => ScaleRounding::Ceil,
            2 => ScaleRounding::NearestEven,
            r => {
                return Err(Fail::new(
                    qdq_status::QDQ_INVALID_ARGUMENT,
                    format!("rounding: {r} is not a qdq_scale_rounding value"),
                ))
            }
        };
        let xv = values(x_dtype, x, n, "x")?;
        let (l, k) = blocked(layout, n)?;
        let yv = packed_mut(y_dtype, y, n, y_bytes, "y")?;
        let s = byte_scales::<Float8E8M0>(scales, k, scales_bytes)?;
        // SAFETY: the caller's contract on `cfg`.
        unsafe { with_config(cfg, |c| Ok(qdq_core::scaled::quantize_mx_with(c, xv, l, rounding, yv, s)?)) }
    })
}

/// The NVFP4 global scale of `n` elements of `x` (f32, f16 or bf16): `amax / 2688`, or 1
/// when amax is 0, NaN or infinite.
///
/// # Safety
/// `cfg` is NULL or valid; `x` points to `n` elements; `global_scale` is writable.
#[no_mangle]
pub unsafe extern "C" fn qdq_nvfp4_global_scale(
    cfg: *const qdq_config,
    x_dtype: i32,
    x: *const c_void,
    n: usize,
    global_scale: *mut f32,
) -> qdq_status {
    guard(|| {
        let xv = values(x_dtype, x, n, "x")?;
        let g = convert::out_ref(global_scale, "global_scale")?;
        // SAFETY: the caller's contract on `cfg`.
        unsafe {
            with_config(cfg, |c| {
                *g = qdq_core::scaled::nvfp4_global_scale_with(c, xv)?;
                Ok(())
            })
        }
    })
}

/// NVFP4: `n` elements of `x` (f32, f16 or bf16) in the blocked `layout` (blocks of 16)
/// into float4e2m1 y and one float8e4m3fn block scale per block (relative to
/// `global_scale`, see `qdq_nvfp4_global_scale`) into `scales`. Dequantize with two
/// DequantizeLinear: the block scales with scale `global_scale`, then y with those.
///
/// # Safety
/// `cfg` is NULL or valid; `x` points to `n` elements; `layout` is valid; `y` and `scales`
/// point to their capacities of writable memory that no other argument overlaps.
#[no_mangle]
pub unsafe extern "C" fn qdq_quantize_nvfp4(
    cfg: *const qdq_config,
    x_dtype: i32,
    x: *const c_void,
    n: usize,
    layout: *const qdq_layout,
    global_scale: f32,
    y: *mut c_void,
    y_bytes: usize,
    scales: *mut u8,
    scales_bytes: usize,
) -> qdq_status {
    guard(|| {
        let xv = values(x_dtype, x, n, "x")?;
        let (l, k) = blocked(layout, n)?;
        let need = convert::byte_len(DataType::E2M1, n, "y")?;
        fits(need, y_bytes, "y")?;
        let yv = PackedMut::new(DataType::E2M1, slice_mut(y.cast::<u8>(), need, "y")?);
        let s = byte_scales::<Float8E4M3Fn>(scales, k, scales_bytes)?;
        // SAFETY: the caller's contract on `cfg`.
        unsafe { with_config(cfg, |c| Ok(qdq_core::scaled::quantize_nvfp4_with(c, xv, l, global_scale, yv, s)?)) }
    })
}
