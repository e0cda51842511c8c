//! The tensor level: ONNX nodes with tensor descriptors, attributes and the opset, into
//! caller-provided outputs. `*_info` says what each output needs.

use crate::convert::{self, byte_len, fits, slice, slice_mut, string};
use crate::slice::shape_of;
use crate::{guard, qdq_config, qdq_status, with_config, Fail, Res};
use qdq_core::{
    Attribute, DequantizeAttributes, DequantizePlan, Domain, Opset, QuantizeAttributes, QuantizePlan, TensorRef,
};
use qdq_ref::Backend;
use std::ffi::{c_char, c_void};

/// A tensor: element type, shape, data (row-major, packed for sub-byte types; f32 / f16 /
/// bf16 / i32 data aligned to its element size).
#[repr(C)]
#[derive(Clone, Copy, Debug)]
pub struct qdq_tensor {
    /// A [`crate::qdq_dtype`] value.
    pub dtype: i32,
    /// Number of dimensions (0 for a scalar).
    pub rank: usize,
    /// `rank` dimensions (NULL allowed for rank 0).
    pub shape: *const i64,
    /// The elements (NULL allowed when there are none).
    pub data: *const c_void,
}

/// What an output needs: its type, shape and bytes.
#[repr(C)]
#[derive(Clone, Copy, Debug)]
pub struct qdq_tensor_info {
    /// A [`crate::qdq_dtype`] value.
    pub dtype: i32,
    /// Number of dimensions.
    pub rank: usize,
    /// `rank` dimensions: x's `shape` pointer (the output has x's shape), or NULL for a
    /// scalar output.
    pub shape: *const i64,
    /// Bytes to allocate.
    pub bytes: usize,
}

/// An integer attribute of a node.
#[repr(C)]
#[derive(Clone, Copy, Debug)]
pub struct qdq_attribute {
    /// Its name, NUL-terminated (`"axis"`, `"saturate"`, `"block_size"`,
    /// `"output_dtype"`, `"precision"`).
    pub name: *const c_char,
    /// Its value (types as [`crate::qdq_dtype`] codes).
    pub value: i64,
}

/// The node being run: its domain and opset version, and its attributes.
#[repr(C)]
#[derive(Clone, Copy, Debug)]
pub struct qdq_node {
    /// `""` / `"ai.onnx"` (or NULL) for ONNX, `"com.microsoft"` for the contrib operators.
    pub domain: *const c_char,
    /// The opset version of that domain the model imports.
    pub opset: i64,
    /// `n_attributes` attributes (NULL allowed when there are none).
    pub attributes: *const qdq_attribute,
    /// How many attributes.
    pub n_attributes: usize,
}

/// A tensor descriptor's shape, owned, and its data.
struct Desc<'a> {
    dtype: qdq_core::DataType,
    shape: Vec<usize>,
    data: &'a [u8],
}

fn desc<'a>(t: *const qdq_tensor, name: &str) -> Res<Desc<'a>> {
    let t = convert::in_ref(t, name)?;
    let dtype = convert::dtype(t.dtype, &format!("{name}.dtype"))?;
    let shape = shape_of(t.shape, t.rank, &format!("{name}.shape"))?;
    let n = qdq_ref::layout::element_count(name, &shape)?;
    let bytes = byte_len(dtype, n, name)?;
    // Typed data must be aligned for the kernels' views.
    let align = (dtype.bits() as usize / 8).clamp(1, 4);
    if bytes > 0 && !(t.data as usize).is_multiple_of(align) {
        return Err(Fail::new(
            qdq_status::QDQ_INVALID_ARGUMENT,
            format!("{name}.data is not aligned to {align} bytes"),
        ));
    }
    let data = slice(t.data.cast::<u8>(), bytes, &format!("{name}.data"))?;
    Ok(Desc { dtype, shape, data })
}

fn opt_desc<'a>(t: *const qdq_tensor, name: &str) -> Res<Option<Desc<'a>>> {
    if t.is_null() {
        Ok(None)
    } else {
        desc(t, name).map(Some)
    }
}

impl Desc<'_> {
    fn view(&self) -> Res<TensorRef<'_>> {
        Ok(TensorRef::packed(self.dtype, &self.shape, self.data)?)
    }
}

/// A node's opset and attributes.
struct Node<'a> {
    opset: Opset,
    attributes: Vec<Attribute<'a>>,
}

fn node<'a>(n: *const qdq_node) -> Res<Node<'a>> {
    let n = convert::in_ref(n, "node")?;
    let d = string(n.domain, "", "node.domain")?;
    let domain = Domain::parse(d).ok_or_else(|| {
        Fail::new(
            qdq_status::QDQ_UNSUPPORTED_OPSET,
            format!("node.domain: '{d}' is not a domain qdq implements (\"\", \"ai.onnx\" or \"com.microsoft\")"),
        )
    })?;
    let raw = slice(n.attributes, n.n_attributes, "node.attributes")?;
    let mut attributes = Vec::with_capacity(raw.len());
    for (i, a) in raw.iter().enumerate() {
        if a.name.is_null() {
            return Err(Fail::new(qdq_status::QDQ_NULL_POINTER, format!("node.attributes[{i}].name is NULL")));
        }
        attributes.push(Attribute { name: string(a.name, "", &format!("node.attributes[{i}].name"))?, value: a.value });
    }
    Ok(Node { opset: Opset { domain, version: n.opset }, attributes })
}

fn info_of(dtype: qdq_core::DataType, x: *const qdq_tensor, bytes: usize) -> qdq_tensor_info {
    // SAFETY: `x` was read successfully just before (`desc`), so it is valid.
    let x = unsafe { &*x };
    qdq_tensor_info { dtype: dtype.onnx() as i32, rank: x.rank, shape: x.shape, bytes }
}

fn scalar_info(dtype: qdq_core::DataType) -> qdq_tensor_info {
    qdq_tensor_info { dtype: dtype.onnx() as i32, rank: 0, shape: std::ptr::null(), bytes: dtype.bits() as usize / 8 }
}

/// Validates a QuantizeLinear node (every rule of its opset) and runs `f` on its plan.
fn quantize_plan(
    node: *const qdq_node,
    x: *const qdq_tensor,
    scale: *const qdq_tensor,
    zero_point: *const qdq_tensor,
    f: &mut dyn FnMut(&QuantizePlan<'_>) -> Res<()>,
) -> Res<()> {
    let nd = self::node(node)?;
    let (xd, sd, zd) = (desc(x, "x")?, desc(scale, "y_scale")?, opt_desc(zero_point, "y_zero_point")?);
    let attrs = QuantizeAttributes::from_node(nd.opset, &nd.attributes)?;
    let z = zd.as_ref().map(Desc::view).transpose()?;
    f(&qdq_ref::tensor::plan_quantize(nd.opset, xd.view()?, sd.view()?, z, &attrs)?)
}

/// Validates a DequantizeLinear node and runs `f` on its plan.
fn dequantize_plan(
    node: *const qdq_node,
    x: *const qdq_tensor,
    scale: *const qdq_tensor,
    zero_point: *const qdq_tensor,
    f: &mut dyn FnMut(&DequantizePlan<'_>) -> Res<()>,
) -> Res<()> {
    let nd = self::node(node)?;
    let (xd, sd, zd) = (desc(x, "x")?, desc(scale, "x_scale")?, opt_desc(zero_point, "x_zero_point")?);
    let attrs = DequantizeAttributes::from_node(nd.opset, &nd.attributes)?;
    let z = zd.as_ref().map(Desc::view).transpose()?;
    f(&qdq_ref::tensor::plan_dequantize(nd.opset, xd.view()?, sd.view()?, z, &attrs)?)
}

/// The output of a QuantizeLinear node (every rule of its opset checked, as
/// [`qdq_quantize_linear`] checks them): its type, x's shape, its bytes.
///
/// # Safety
/// `node`, `x`, `y_scale` and `y` are valid pointers (or NULL, reported); `y_zero_point`
/// is NULL or valid; every descriptor's shape and data are valid for its rank and type.
#[no_mangle]
pub unsafe extern "C" fn qdq_quantize_linear_info(
    node: *const qdq_node,
    x: *const qdq_tensor,
    y_scale: *const qdq_tensor,
    y_zero_point: *const qdq_tensor,
    y: *mut qdq_tensor_info,
) -> qdq_status {
    guard(|| {
        let out = convert::out_ref(y, "y")?;
        quantize_plan(node, x, y_scale, y_zero_point, &mut |plan| {
            *out = info_of(plan.opts.output, x, plan.y_bytes);
            Ok(())
        })
    })
}

/// Runs a QuantizeLinear node into `y` (`y_bytes` of room; [`qdq_quantize_linear_info`]
/// gives what it needs). `cfg` NULL: best ISA, calling thread.
///
/// # Safety
/// As [`qdq_quantize_linear_info`]; `y` points to `y_bytes` writable bytes.
#[no_mangle]
pub unsafe extern "C" fn qdq_quantize_linear(
    cfg: *const qdq_config,
    node: *const qdq_node,
    x: *const qdq_tensor,
    y_scale: *const qdq_tensor,
    y_zero_point: *const qdq_tensor,
    y: *mut c_void,
    y_bytes: usize,
) -> qdq_status {
    guard(|| {
        quantize_plan(node, x, y_scale, y_zero_point, &mut |plan| {
            fits(plan.y_bytes, y_bytes, "y")?;
            let out = slice_mut(y.cast::<u8>(), plan.y_bytes, "y")?;
            // SAFETY: the caller's contract on `cfg`.
            unsafe { with_config(cfg, |c| Ok(qdq_core::Fast(*c).quantize(plan, out)?)) }
        })
    })
}

/// The output of a DequantizeLinear node: its type, x's shape, its bytes.
///
/// # Safety
/// As [`qdq_quantize_linear_info`].
#[no_mangle]
pub unsafe extern "C" fn qdq_dequantize_linear_info(
    node: *const qdq_node,
    x: *const qdq_tensor,
    x_scale: *const qdq_tensor,
    x_zero_point: *const qdq_tensor,
    y: *mut qdq_tensor_info,
) -> qdq_status {
    guard(|| {
        let out = convert::out_ref(y, "y")?;
        dequantize_plan(node, x, x_scale, x_zero_point, &mut |plan| {
            *out = info_of(plan.output, x, plan.y_bytes);
            Ok(())
        })
    })
}

/// Runs a DequantizeLinear node into `y` (`y_bytes` of room).
///
/// # Safety
/// As [`qdq_quantize_linear`].
#[no_mangle]
pub unsafe extern "C" fn qdq_dequantize_linear(
    cfg: *const qdq_config,
    node: *const qdq_node,
    x: *const qdq_tensor,
    x_scale: *const qdq_tensor,
    x_zero_point: *const qdq_tensor,
    y: *mut c_void,
    y_bytes: usize,
) -> qdq_status {
    guard(|| {
        dequantize_plan(node, x, x_scale, x_zero_point, &mut |plan| {
            fits(plan.y_bytes, y_bytes, "y")?;
            // Float outputs: f32 / f16 / bf16 bytes, aligned for the kernels' stores.
            let align = (plan.output.bits() as usize / 8).max(1);
            if plan.y_bytes > 0 && !(y as usize).is_multiple_of(align) {
                return Err(Fail::new(qdq_status::QDQ_INVALID_ARGUMENT, format!("y is not aligned to {align} bytes")));
            }
            let out = slice_mut(y.cast::<u8>(), plan.y_bytes, "y")?;
            // SAFETY: the caller's contract on `cfg`.
            unsafe { with_config(cfg, |c| Ok(qdq_core::Fast(*c).dequantize(plan, out)?)) }
        })
    })
}

/// The three outputs of a DynamicQuantizeLinear node: `y` (u8, x's shape), `y_scale`
/// (f32 scalar), `y_zero_point` (u8 scalar), written to `outputs[0..3]`.
///
/// # Safety
/// `node` and `x` as [`qdq_quantize_linear_info`]; `outputs` points to 3 writable
/// `qdq_tensor_info`.
#[no_mangle]
pub unsafe extern "C" fn qdq_dynamic_quantize_linear_info(
    node: *const qdq_node,
    x: *const qdq_tensor,
    outputs: *mut qdq_tensor_info,
) -> qdq_status {
    guard(|| {
        let out = slice_mut(outputs, 3, "outputs")?;
        let nd = self::node(node)?;
        qdq_ref::tensor::check_dynamic_attributes(nd.opset, &nd.attributes)?;
        let xd = desc(x, "x")?;
        let n = dynamic_input(&xd)?;
        out[0] = info_of(qdq_core::DataType::U8, x, n);
        out[1] = scalar_info(qdq_core::DataType::F32);
        out[2] = scalar_info(qdq_core::DataType::U8);
        Ok(())
    })
}

fn dynamic_input(x: &Desc<'_>) -> Res<usize> {
    if x.dtype != qdq_core::DataType::F32 {
        return Err(Fail::new(
            qdq_status::QDQ_UNSUPPORTED_TYPE,
            format!("DynamicQuantizeLinear-11: x has type {}; only f32 is accepted", x.dtype),
        ));
    }
    Ok(x.data.len() / 4)
}

/// Runs a DynamicQuantizeLinear node: `y` (`y_bytes` of room), `*y_scale`,
/// `*y_zero_point`.
///
/// # Safety
/// As [`qdq_quantize_linear`]; `y_scale` and `y_zero_point` are writable.
#[no_mangle]
pub unsafe extern "C" fn qdq_dynamic_quantize_linear(
    cfg: *const qdq_config,
    node: *const qdq_node,
    x: *const qdq_tensor,
    y: *mut u8,
    y_bytes: usize,
    y_scale: *mut f32,
    y_zero_point: *mut u8,
) -> qdq_status {
    guard(|| {
        let nd = self::node(node)?;
        qdq_ref::tensor::check_dynamic_attributes(nd.opset, &nd.attributes)?;
        let xd = desc(x, "x")?;
        let n = dynamic_input(&xd)?;
        fits(n, y_bytes, "y")?;
        let out = slice_mut(y, n, "y")?;
        let s = convert::out_ref(y_scale, "y_scale")?;
        let z = convert::out_ref(y_zero_point, "y_zero_point")?;
        // SAFETY: the caller's contract on `cfg`.
        unsafe {
            with_config(cfg, |c| {
                (*s, *z) = qdq_core::Fast(*c).dynamic_quantize(xd.data, out)?;
                Ok(())
            })
        }
    })
}
