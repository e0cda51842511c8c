//! Training mode (`qdq_core::train`): forwards with masks, straight-through backward passes,
//! fake quantization and its LSQ gradients. Slice level: nothing allocates.

use crate::convert::{self, fits, packed, slice, slice_mut, values, values_mut};
use crate::slice::{layout_of, parts, zero_points_of};
use crate::{guard, qdq_config, qdq_params, qdq_status, with_config, Res};
use qdq_core::train::{self, FakeQuantGrads, GradOptions, QuantParams};
use qdq_core::QuantizeOptions;
use std::ffi::c_void;

fn quant_params<'a>(p: *const qdq_params, q_dtype: i32) -> Res<QuantParams<'a>> {
    let q = parts(p)?;
    let output = convert::dtype(q_dtype, "q_dtype")?;
    Ok(QuantParams {
        scale: q.scales,
        zero_point: q.zero_points,
        layout: q.layout,
        opts: QuantizeOptions { output, saturate: q.saturate, precision: q.precision },
    })
}

/// A mask of `n` elements (`ceil(n / 8)` bytes) in a buffer of `cap` bytes.
fn mask_mut<'a>(p: *mut u8, n: usize, cap: usize, name: &str) -> Res<&'a mut [u8]> {
    let need = train::mask_len(n);
    fits(need, cap, name)?;
    slice_mut(p, need, name)
}

/// The first `need` of the `cap` floats at `p` (the scale and zero-point gradients: one per
/// scale of the layout; a larger buffer is fine, as for every output).
fn grads_mut<'a>(p: *mut f32, need: usize, cap: usize, name: &str) -> Res<&'a mut [f32]> {
    fits(need.saturating_mul(4), cap.saturating_mul(4), name)?;
    slice_mut(p, need, name)
}

fn scale_count(layout: qdq_core::Layout, n: usize) -> Res<usize> {
    Ok(layout.scale_count(n)?)
}

/// Bytes of the mask of `n` elements: `ceil(n / 8)` (bit `i % 8` of byte `i / 8` is 1
/// where element `i` was representable).
#[no_mangle]
pub extern "C" fn qdq_mask_bytes(n: usize) -> usize {
    train::mask_len(n)
}

/// QuantizeLinear's training forward: `y` exactly as [`crate::qdq_quantize`] (type
/// `q_dtype`) and the mask of representable elements.
///
/// # Safety
/// As [`crate::qdq_quantize`]; `mask` points to `mask_bytes` writable bytes.
#[no_mangle]
pub unsafe extern "C" fn qdq_quantize_train(
    cfg: *const qdq_config,
    x_dtype: i32,
    x: *const c_void,
    n: usize,
    params: *const qdq_params,
    q_dtype: i32,
    y: *mut c_void,
    y_bytes: usize,
    mask: *mut u8,
    mask_bytes: usize,
) -> qdq_status {
    guard(|| {
        let xv = values(x_dtype, x, n, "x")?;
        let p = quant_params(params, q_dtype)?;
        let t = p.opts.output;
        let need = convert::byte_len(t, n, "y")?;
        fits(need, y_bytes, "y")?;
        let yb = slice_mut(y.cast::<u8>(), need, "y")?;
        let m = mask_mut(mask, n, mask_bytes, "mask")?;
        // SAFETY: the caller's contract on `cfg`.
        unsafe { with_config(cfg, |c| Ok(train::quantize_train_with(c, xv, &p, yb, m)?)) }
    })
}

/// Fake quantization: `y = DequantizeLinear(QuantizeLinear(x))` through type `q_dtype`,
/// `y` in f32 / f16 / bf16, and optionally the mask (`mask` NULL: none).
///
/// # Safety
/// As [`qdq_quantize_train`].
#[no_mangle]
pub unsafe extern "C" fn qdq_fake_quantize(
    cfg: *const qdq_config,
    x_dtype: i32,
    x: *const c_void,
    n: usize,
    params: *const qdq_params,
    q_dtype: i32,
    y_dtype: i32,
    y: *mut c_void,
    y_bytes: usize,
    mask: *mut u8,
    mask_bytes: usize,
) -> qdq_status {
    guard(|| {
        let xv = values(x_dtype, x, n, "x")?;
        let p = quant_params(params, q_dtype)?;
        let yv = values_mut(y_dtype, y, n, y_bytes, "y")?;
        let m = if mask.is_null() { None } else { Some(mask_mut(mask, n, mask_bytes, "mask")?) };
        // SAFETY: the caller's contract on `cfg`.
        unsafe { with_config(cfg, |c| Ok(train::fake_quantize_with(c, xv, &p, yv, m)?)) }
    })
}

/// QuantizeLinear's backward, straight-through: `dx = mask ? (lda * dy) / s : +0`.
///
/// # Safety
/// `dy` points to `n` elements, `mask` to `mask_bytes` bytes, `dx` to `dx_bytes`
/// writable bytes; `params` as [`crate::qdq_quantize`].
#[no_mangle]
pub unsafe extern "C" fn qdq_quantize_backward(
    cfg: *const qdq_config,
    dy_dtype: i32,
    dy: *const c_void,
    n: usize,
    mask: *const u8,
    mask_bytes: usize,
    params: *const qdq_params,
    q_dtype: i32,
    lda: f32,
    dx_dtype: i32,
    dx: *mut c_void,
    dx_bytes: usize,
) -> qdq_status {
    guard(|| {
        let dyv = values(dy_dtype, dy, n, "dy")?;
        let m = slice(mask, mask_bytes, "mask")?;
        let p = quant_params(params, q_dtype)?;
        let dxv = values_mut(dx_dtype, dx, n, dx_bytes, "dx")?;
        // SAFETY: the caller's contract on `cfg`.
        unsafe { with_config(cfg, |c| Ok(train::quantize_backward_with(c, dyv, m, &p, lda, dxv)?)) }
    })
}

/// The mask's backward alone: `dx = mask ? lda * dy : +0`.
///
/// # Safety
/// As [`qdq_quantize_backward`].
#[no_mangle]
pub unsafe extern "C" fn qdq_mask_backward(
    cfg: *const qdq_config,
    dy_dtype: i32,
    dy: *const c_void,
    n: usize,
    mask: *const u8,
    mask_bytes: usize,
    lda: f32,
    dx_dtype: i32,
    dx: *mut c_void,
    dx_bytes: usize,
) -> qdq_status {
    guard(|| {
        let dyv = values(dy_dtype, dy, n, "dy")?;
        let m = slice(mask, mask_bytes, "mask")?;
        let dxv = values_mut(dx_dtype, dx, n, dx_bytes, "dx")?;
        // SAFETY: the caller's contract on `cfg`.
        unsafe { with_config(cfg, |c| Ok(train::mask_backward_with(c, dyv, m, lda, dxv)?)) }
    })
}

/// DequantizeLinear's backward with respect to x: `dx = lda * dy * s` (the scales and
/// layout of `params`; its zero points are not used).
///
/// # Safety
/// As [`qdq_quantize_backward`].
#[no_mangle]
pub unsafe extern "C" fn qdq_dequantize_backward(
    cfg: *const qdq_config,
    dy_dtype: i32,
    dy: *const c_void,
    n: usize,
    params: *const qdq_params,
    lda: f32,
    dx_dtype: i32,
    dx: *mut c_void,
    dx_bytes: usize,
) -> qdq_status {
    guard(|| {
        let dyv = values(dy_dtype, dy, n, "dy")?;
        let q = parts(params)?;
        let dxv = values_mut(dx_dtype, dx, n, dx_bytes, "dx")?;
        // SAFETY: the caller's contract on `cfg`.
        unsafe { with_config(cfg, |c| Ok(train::dequantize_backward_with(c, dyv, q.scales, q.layout, lda, dxv)?)) }
    })
}

/// Fake quantization's backward: `dx` (NULL: not computed), and for integer `q_dtype` the
/// LSQ gradients `ds` (one f32 per scale) and `dzp` (one f32 per zero point), each
/// optional (NULL; `n_ds` / `n_dzp` floats of room, at least one per scale).
/// `grad_scale` multiplies `ds` and `dzp`.
///
/// # Safety
/// `dy` and `x` point to `n` elements; each non-NULL output to its stated room.
#[no_mangle]
pub unsafe extern "C" fn qdq_fake_quantize_backward(
    cfg: *const qdq_config,
    dy_dtype: i32,
    dy: *const c_void,
    x_dtype: i32,
    x: *const c_void,
    n: usize,
    params: *const qdq_params,
    q_dtype: i32,
    lda: f32,
    grad_scale: f32,
    dx_dtype: i32,
    dx: *mut c_void,
    dx_bytes: usize,
    ds: *mut f32,
    n_ds: usize,
    dzp: *mut f32,
    n_dzp: usize,
) -> qdq_status {
    guard(|| {
        let dyv = values(dy_dtype, dy, n, "dy")?;
        let xv = values(x_dtype, x, n, "x")?;
        let p = quant_params(params, q_dtype)?;
        let grads = FakeQuantGrads {
            dx: if dx.is_null() { None } else { Some(values_mut(dx_dtype, dx, n, dx_bytes, "dx")?) },
            ds: if ds.is_null() { None } else { Some(grads_mut(ds, scale_count(p.layout, n)?, n_ds, "ds")?) },
            dzp: if dzp.is_null() { None } else { Some(grads_mut(dzp, scale_count(p.layout, n)?, n_dzp, "dzp")?) },
        };
        let opts = GradOptions { lda, grad_scale };
        // SAFETY: the caller's contract on `cfg`.
        unsafe { with_config(cfg, |c| Ok(train::fake_quantize_backward_with(c, dyv, xv, &p, &opts, grads)?)) }
    })
}

/// DequantizeLinear's gradient with respect to its scales: `ds[k] = sum(dy * (x - zp))`
/// over the elements of scale `k` (`x`: `n` codes of `x_dtype`; zero points and layout
/// from `params`, whose scales are not read).
///
/// # Safety
/// `dy` and `x` point to `n` elements; `ds` to `n_ds` writable floats (at least one per
/// scale); `params` valid.
#[no_mangle]
pub unsafe extern "C" fn qdq_dequantize_scale_grad(
    cfg: *const qdq_config,
    dy_dtype: i32,
    dy: *const c_void,
    x_dtype: i32,
    x: *const c_void,
    n: usize,
    params: *const qdq_params,
    ds: *mut f32,
    n_ds: usize,
) -> qdq_status {
    guard(|| {
        let dyv = values(dy_dtype, dy, n, "dy")?;
        let xv = packed(x_dtype, x, n, "x")?;
        let pr = convert::in_ref(params, "params")?;
        let zp = zero_points_of(pr)?;
        let layout = layout_of(&pr.layout)?;
        let out = grads_mut(ds, scale_count(layout, n)?, n_ds, "ds")?;
        // SAFETY: the caller's contract on `cfg`.
        unsafe { with_config(cfg, |c| Ok(train::dequantize_scale_grad_with(c, dyv, xv, zp, layout, out)?)) }
    })
}
