//! The slice level: typed contiguous buffers, a layout, no allocation.

use crate::convert::{self, fits, packed, packed_mut, slice, slice_mut, values, values_mut};
use crate::{guard, qdq_config, qdq_status, with_config, Fail, Res};
use qdq_core::{DataType, Layout, Params};
use std::ffi::c_void;

/// The kinds of [`qdq_layout`].
#[repr(C)]
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum qdq_layout_kind {
    /// One scale (and zero point) for the whole tensor.
    QDQ_LAYOUT_PER_TENSOR = 0,
    /// One scale per index along an axis: the tensor is `[outer, axis_len, inner]`.
    QDQ_LAYOUT_PER_AXIS = 1,
    /// One scale per `block` consecutive indices along an axis: scales are
    /// `[outer, ceil(axis_len / block), inner]`.
    QDQ_LAYOUT_BLOCKED = 2,
}

/// How scales map to elements. A zeroed struct is per-tensor. Build the others with
/// [`qdq_layout_per_axis`] / [`qdq_layout_blocked`] from a shape and an axis, or fill the
/// factors directly: the tensor is `[outer, axis_len, inner]` around the axis.
#[repr(C)]
#[derive(Clone, Copy, Debug, Default)]
pub struct qdq_layout {
    /// A [`qdq_layout_kind`] value.
    pub kind: i32,
    /// Product of the dimensions before the axis.
    pub outer: usize,
    /// The axis' dimension.
    pub axis_len: usize,
    /// Product of the dimensions after the axis.
    pub inner: usize,
    /// Block size along the axis (blocked only; at least 1).
    pub block: usize,
}

/// Scales, zero points, layout and options of a slice-level call. Zeroed fields are the
/// defaults: no zero points, per-tensor, saturating float8 outputs, division in the
/// scale's type.
#[repr(C)]
#[derive(Clone, Copy, Debug)]
pub struct qdq_params {
    /// The scales' type: f32, f16, bf16, i32 or e8m0 (a [`crate::qdq_dtype`] value).
    pub scale_dtype: i32,
    /// `n_scales` scales.
    pub scales: *const c_void,
    /// How many scales (1 per-tensor; as the layout needs otherwise).
    pub n_scales: usize,
    /// The zero points' type (the quantized type).
    pub zero_point_dtype: i32,
    /// `n_zero_points` zero points (packed like the data for sub-byte types), or NULL for
    /// none (zero).
    pub zero_points: *const c_void,
    /// How many zero points (as many as scales, or 0).
    pub n_zero_points: usize,
    /// The layout.
    pub layout: qdq_layout,
    /// Non-zero: float8 outputs do not saturate (out-of-range values become infinity or
    /// NaN, as ONNX's `saturate = 0`). Zero: ONNX's default, saturate.
    pub no_saturate: i32,
    /// The division precision (f32, f16 or bf16 code); 0 for the scale's type.
    pub precision: i32,
}

pub(crate) fn layout_of(l: &qdq_layout) -> Res<Layout> {
    Ok(match l.kind {
        0 => Layout::PerTensor,
        1 => Layout::PerAxis { outer: l.outer, axis_len: l.axis_len, inner: l.inner },
        2 => {
            if l.block == 0 {
                return Err(Fail::new(
                    qdq_status::QDQ_INVALID_ARGUMENT,
                    "params.layout.block is 0; blocks need at least 1 element",
                ));
            }
            Layout::Blocked { outer: l.outer, axis_len: l.axis_len, inner: l.inner, block: l.block }
        }
        k => {
            return Err(Fail::new(
                qdq_status::QDQ_INVALID_ARGUMENT,
                format!("params.layout.kind: {k} is not a qdq_layout_kind value"),
            ))
        }
    })
}

fn layout_out(l: Layout) -> qdq_layout {
    match l {
        Layout::PerTensor => qdq_layout::default(),
        Layout::PerAxis { outer, axis_len, inner } => qdq_layout { kind: 1, outer, axis_len, inner, block: 0 },
        Layout::Blocked { outer, axis_len, inner, block } => qdq_layout { kind: 2, outer, axis_len, inner, block },
    }
}

/// A shape of `rank` dimensions at `shape` as `usize`s (negative dimensions refused).
pub(crate) fn shape_of(shape: *const i64, rank: usize, name: &str) -> Res<Vec<usize>> {
    let dims = slice(shape, rank, name)?;
    dims.iter()
        .enumerate()
        .map(|(i, &d)| {
            usize::try_from(d).map_err(|_| {
                Fail::new(qdq_status::QDQ_SHAPE_OVERFLOW, format!("{name}[{i}] is {d}; dimensions must be at least 0"))
            })
        })
        .collect()
}

/// The per-axis layout of a tensor of `rank` dimensions `shape` along `axis` (negative
/// counts from the end).
///
/// # Safety
/// `shape` points to `rank` `int64_t` (or is NULL with `rank` 0); `layout` is NULL or
/// writable.
#[no_mangle]
pub unsafe extern "C" fn qdq_layout_per_axis(
    shape: *const i64,
    rank: usize,
    axis: i64,
    layout: *mut qdq_layout,
) -> qdq_status {
    guard(|| {
        let out = convert::out_ref(layout, "layout")?;
        let s = shape_of(shape, rank, "shape")?;
        let axis = isize::try_from(axis).unwrap_or(isize::MAX);
        *out = layout_out(Layout::per_axis(&s, axis)?);
        Ok(())
    })
}

/// The blocked layout of a tensor of `rank` dimensions `shape`: blocks of `block` indices
/// along `axis` (negative counts from the end).
///
/// # Safety
/// As [`qdq_layout_per_axis`].
#[no_mangle]
pub unsafe extern "C" fn qdq_layout_blocked(
    shape: *const i64,
    rank: usize,
    axis: i64,
    block: i64,
    layout: *mut qdq_layout,
) -> qdq_status {
    guard(|| {
        let out = convert::out_ref(layout, "layout")?;
        let s = shape_of(shape, rank, "shape")?;
        let axis = isize::try_from(axis).unwrap_or(isize::MAX);
        let block = usize::try_from(block).map_err(|_| {
            Fail::new(qdq_status::QDQ_INVALID_ARGUMENT, format!("block is {block}; it must be at least 1"))
        })?;
        *out = layout_out(Layout::blocked(&s, axis, block)?);
        Ok(())
    })
}

/// The scales, zero points and layout of `p` (without the options).
pub(crate) struct Parts<'a> {
    pub(crate) scales: qdq_core::Values<'a>,
    pub(crate) zero_points: Option<qdq_core::Packed<'a>>,
    pub(crate) layout: Layout,
    pub(crate) saturate: bool,
    pub(crate) precision: Option<DataType>,
}

/// The zero points of `p`, if it has any (NULL with a count of 0: none).
pub(crate) fn zero_points_of<'a>(p: &qdq_params) -> Res<Option<qdq_core::Packed<'a>>> {
    if p.zero_points.is_null() && p.n_zero_points == 0 {
        return Ok(None);
    }
    packed(p.zero_point_dtype, p.zero_points, p.n_zero_points, "params.zero_points").map(Some)
}

pub(crate) fn parts<'a>(p: *const qdq_params) -> Res<Parts<'a>> {
    let p = convert::in_ref(p, "params")?;
    let scales = values(p.scale_dtype, p.scales, p.n_scales, "params.scales")?;
    let zero_points = zero_points_of(p)?;
    let precision = match p.precision {
        0 => None,
        c => Some(convert::dtype(c, "params.precision")?),
    };
    Ok(Parts { scales, zero_points, layout: layout_of(&p.layout)?, saturate: p.no_saturate == 0, precision })
}

fn params<'a>(p: *const qdq_params) -> Res<Params<'a>> {
    let q = parts(p)?;
    let mut out = Params::new(q.scales, q.layout).saturate(q.saturate);
    if let Some(z) = q.zero_points {
        out = out.zero_points(z);
    }
    if let Some(t) = q.precision {
        out = out.precision(t);
    }
    Ok(out)
}

fn within(begin: usize, end: usize, n: usize) -> Res<()> {
    if begin > end || end > n {
        return Err(Fail::new(
            qdq_status::QDQ_INVALID_ARGUMENT,
            format!("range {begin}..{end} does not lie within 0..{n}"),
        ));
    }
    Ok(())
}

/// QuantizeLinear of `n` elements of `x` (type `x_dtype`: f32, f16, bf16 or i32) into `y`
/// (type `y_dtype`, any quantized type, `y_bytes` of room; `qdq_byte_size` gives what it
/// needs). Allocates nothing.
///
/// # Safety
/// `cfg` is NULL or valid; `x` points to `n` elements; `params` is valid and its pointers
/// point to their counts of elements; `y` points to `y_bytes` writable bytes that nothing
/// else uses during the call.
#[no_mangle]
pub unsafe extern "C" fn qdq_quantize(
    cfg: *const qdq_config,
    x_dtype: i32,
    x: *const c_void,
    n: usize,
    params: *const qdq_params,
    y_dtype: i32,
    y: *mut c_void,
    y_bytes: usize,
) -> qdq_status {
    guard(|| {
        let xv = values(x_dtype, x, n, "x")?;
        let p = self::params(params)?;
        let yv = packed_mut(y_dtype, y, n, y_bytes, "y")?;
        // SAFETY: the caller's contract on `cfg`.
        unsafe { with_config(cfg, |c| Ok(qdq_core::quantize_with(c, xv, &p, yv)?)) }
    })
}

/// Elements `[begin, end)` of QuantizeLinear of the `n` elements of `x` into `y_part`, the
/// bytes of exactly those elements (packed outputs: `begin` and `end` on byte boundaries,
/// `end` may be `n`): for engines that shard a call over their own threads. Runs on the
/// calling thread; allocates nothing.
///
/// # Safety
/// As [`qdq_quantize`], `y_part` with `y_part_bytes`.
#[no_mangle]
pub unsafe extern "C" fn qdq_quantize_range(
    cfg: *const qdq_config,
    x_dtype: i32,
    x: *const c_void,
    n: usize,
    params: *const qdq_params,
    begin: usize,
    end: usize,
    y_dtype: i32,
    y_part: *mut c_void,
    y_part_bytes: usize,
) -> qdq_status {
    guard(|| {
        let xv = values(x_dtype, x, n, "x")?;
        let p = self::params(params)?;
        let t = convert::dtype(y_dtype, "y_dtype")?;
        within(begin, end, n)?;
        let bytes = match t.range_byte_len(begin..end, n) {
            Some(need) => {
                fits(need, y_part_bytes, "y_part")?;
                slice_mut(y_part.cast::<u8>(), need, "y_part")?
            }
            // A range off the byte grid: qdq's own check reports it (with the step).
            None => &mut [],
        };
        // SAFETY: the caller's contract on `cfg`.
        unsafe {
            with_config(cfg, |c| {
                Ok(qdq_core::quantize_range_with(c, xv, &p, begin..end, qdq_core::PackedMut::new(t, bytes))?)
            })
        }
    })
}

/// DequantizeLinear of `n` codes of `x` (type `x_dtype`, packed for sub-byte types) into
/// `y` (f32, f16 or bf16; `y_bytes` of room). Allocates nothing.
///
/// # Safety
/// As [`qdq_quantize`].
#[no_mangle]
pub unsafe extern "C" fn qdq_dequantize(
    cfg: *const qdq_config,
    x_dtype: i32,
    x: *const c_void,
    n: usize,
    params: *const qdq_params,
    y_dtype: i32,
    y: *mut c_void,
    y_bytes: usize,
) -> qdq_status {
    guard(|| {
        let xv = packed(x_dtype, x, n, "x")?;
        let p = self::params(params)?;
        let yv = values_mut(y_dtype, y, n, y_bytes, "y")?;
        // SAFETY: the caller's contract on `cfg`.
        unsafe { with_config(cfg, |c| Ok(qdq_core::dequantize_with(c, xv, &p, yv)?)) }
    })
}

/// Elements `[begin, end)` of DequantizeLinear of the `n` codes of `x` into `y_part`
/// (`end - begin` elements). Runs on the calling thread; allocates nothing.
///
/// # Safety
/// As [`qdq_quantize_range`].
#[no_mangle]
pub unsafe extern "C" fn qdq_dequantize_range(
    cfg: *const qdq_config,
    x_dtype: i32,
    x: *const c_void,
    n: usize,
    params: *const qdq_params,
    begin: usize,
    end: usize,
    y_dtype: i32,
    y_part: *mut c_void,
    y_part_bytes: usize,
) -> qdq_status {
    guard(|| {
        let xv = packed(x_dtype, x, n, "x")?;
        let p = self::params(params)?;
        within(begin, end, n)?;
        let yv = values_mut(y_dtype, y_part, end - begin, y_part_bytes, "y_part")?;
        // SAFETY: the caller's contract on `cfg`.
        unsafe { with_config(cfg, |c| Ok(qdq_core::dequantize_range_with(c, xv, &p, begin..end, yv)?)) }
    })
}

/// DynamicQuantizeLinear of `n` f32 values into `n` u8 codes, with the computed scale and
/// zero point. Allocates nothing.
///
/// # Safety
/// `x` points to `n` floats, `y` to `y_bytes` writable bytes; `scale` and `zero_point`
/// are writable.
#[no_mangle]
pub unsafe extern "C" fn qdq_dynamic_quantize(
    cfg: *const qdq_config,
    x: *const f32,
    n: usize,
    y: *mut u8,
    y_bytes: usize,
    scale: *mut f32,
    zero_point: *mut u8,
) -> qdq_status {
    guard(|| {
        let xs = slice(x, n, "x")?;
        fits(n, y_bytes, "y")?;
        let ys = slice_mut(y, n, "y")?;
        let s = convert::out_ref(scale, "scale")?;
        let z = convert::out_ref(zero_point, "zero_point")?;
        // SAFETY: the caller's contract on `cfg`.
        unsafe {
            with_config(cfg, |c| {
                (*s, *z) = qdq_core::dynamic_quantize_with(c, xs, ys)?;
                Ok(())
            })
        }
    })
}
