//! The tensor-level API: type-tagged tensor views in, output tensors out, with every
//! per-opset rule of the ONNX schemas enforced (the README's "Errors" section).
//!
//! This is what a graph runtime or the conformance runner calls. It validates types,
//! attributes and shapes for the operator version, picks the granularity from the shapes
//! ([`crate::layout::resolve`]) and runs the same loops as the slice API.

use crate::dtype::{list, DataType};
use crate::error::{bail, Result};
use crate::layout::{self, Layout};
use crate::quantize::{self, QuantizeOptions};
use crate::schema::{self, Opset, ScaleRule};
use crate::values::{Bytes, BytesMut, Packed};
use crate::{dequantize, dynamic};

/// A borrowed tensor: element type, shape and its ONNX serialisation (little endian,
/// sub-byte types packed).
#[derive(Clone, Copy, Debug)]
pub struct TensorRef<'a> {
    /// Element type.
    pub dtype: DataType,
    /// Dimensions (empty for a scalar).
    pub shape: &'a [usize],
    /// `dtype.byte_len(product(shape))` bytes.
    pub data: &'a [u8],
}

/// An owned tensor (an operator output).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Tensor {
    /// Element type.
    pub dtype: DataType,
    /// Dimensions.
    pub shape: Vec<usize>,
    /// Serialised elements; padding bits of sub-byte types are zero.
    pub data: Vec<u8>,
}

impl Tensor {
    /// Borrows the tensor as a view.
    pub fn view(&self) -> TensorRef<'_> {
        TensorRef { dtype: self.dtype, shape: &self.shape, data: &self.data }
    }

    /// Number of elements (`usize::MAX` if the shape's product overflows, which no
    /// operator output can have: outputs take validated input shapes).
    pub fn len(&self) -> usize {
        layout::element_count("tensor", &self.shape).unwrap_or(usize::MAX)
    }

    /// Whether the tensor has no elements.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }
}

impl<'a> TensorRef<'a> {
    /// Checks the byte length against shape and type; returns the element count.
    pub fn checked_len(&self, name: &str) -> Result<usize> {
        let n = layout::element_count(name, self.shape)?;
        match self.dtype.byte_len(n) {
            Some(b) if b == self.data.len() => Ok(n),
            Some(b) => bail!(
                BufferLength,
                "{name}: shape {:?} of {} needs {b} bytes, got {}",
                self.shape,
                self.dtype,
                self.data.len()
            ),
            None => bail!(
                ShapeOverflow,
                "{name}: the byte size of shape {:?} of {} overflows usize",
                self.shape,
                self.dtype
            ),
        }
    }

    fn packed(&self, name: &str) -> Result<Packed<'a>> {
        let len = self.checked_len(name)?;
        Ok(Packed { dtype: self.dtype, len, data: self.data })
    }
}

/// Element `i` of an f32 / f16 / bf16 / i32 / e8m0 tensor as its exact value (for
/// backends that fall back to the reference formulas).
pub fn wide_value(t: &TensorRef<'_>, i: usize) -> f64 {
    use crate::values::Read;
    Bytes { dtype: t.dtype, data: t.data }.value(i)
}

/// Writes `v` rounded once to `out` (f32, f16 or bf16) into `bytes` (one element).
pub fn put_wide(out: DataType, bytes: &mut [u8], v: f32) {
    use crate::values::Write;
    BytesMut { dtype: out, data: bytes }.put(0, v);
}

/// QuantizeLinear attributes as they appear on a node (`None` = absent).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct QuantizeAttributes {
    /// `axis` (default 1).
    pub axis: Option<i64>,
    /// `saturate` (default 1; 0 or 1).
    pub saturate: Option<i64>,
    /// `block_size` (default 0).
    pub block_size: Option<i64>,
    /// `output_dtype` (default 0 = from the zero point, else u8).
    pub output_dtype: Option<i64>,
    /// `precision` (default 0 = the scale's type).
    pub precision: Option<i64>,
}

/// DequantizeLinear attributes as they appear on a node (`None` = absent).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct DequantizeAttributes {
    /// `axis` (default 1).
    pub axis: Option<i64>,
    /// `block_size` (default 0).
    pub block_size: Option<i64>,
    /// `output_dtype` (default 0 = the scale's type).
    pub output_dtype: Option<i64>,
}

fn check_type(what: &str, t: DataType, allowed: &[DataType], op: &dyn std::fmt::Display) -> Result<()> {
    if !allowed.contains(&t) {
        bail!(
            UnsupportedType,
            "{op}: {what} has type {t}, which this version does not accept (allowed: {})",
            list(allowed)
        );
    }
    Ok(())
}

fn parse_dtype(attr: &str, v: i64) -> Result<DataType> {
    match DataType::from_onnx(v) {
        Some(t) => Ok(t),
        None => bail!(InvalidAttribute, "{attr} = {v} is not a known tensor element type"),
    }
}

/// A validated QuantizeLinear call: what a backend needs to run it. Built by
/// [`plan_quantize`], which applies every per-opset rule; [`quantize_linear`] and the `qdq`
/// crate's tensor API both execute plans, so they reject exactly the same inputs.
#[derive(Clone, Copy, Debug)]
pub struct QuantizePlan<'a> {
    /// The input (type f32, f16, bf16 or i32; length checked).
    pub x: TensorRef<'a>,
    /// The scale (length checked against the layout).
    pub scale: TensorRef<'a>,
    /// The zero point in the output type, if any (zero for float outputs).
    pub zero_point: Option<Packed<'a>>,
    /// Granularity.
    pub layout: Layout,
    /// Output type, saturation, `precision`.
    pub opts: QuantizeOptions,
    /// Division precision.
    pub precision: quantize::Precision,
    /// Number of elements of x.
    pub len: usize,
    /// Bytes of the output.
    pub y_bytes: usize,
}

/// Validates a QuantizeLinear call at the given opset (see [`quantize_linear`]).
pub fn plan_quantize<'a>(
    opset: Opset,
    x: TensorRef<'a>,
    scale: TensorRef<'a>,
    zero_point: Option<TensorRef<'a>>,
    attrs: &QuantizeAttributes,
) -> Result<QuantizePlan<'a>> {
    let s = schema::quantize(opset)?;
    let op = s.name();
    let given = [
        ("axis", attrs.axis),
        ("saturate", attrs.saturate),
        ("block_size", attrs.block_size),
        ("output_dtype", attrs.output_dtype),
        ("precision", attrs.precision),
    ];
    for (name, v) in given {
        if v.is_some() {
            s.check_attribute(name)?;
        }
    }
    check_type("x", x.dtype, s.x, &op)?;
    match s.scale {
        ScaleRule::SameAsX => {
            if scale.dtype != x.dtype {
                bail!(
                    TypeMismatch,
                    "{op}: y_scale has type {} but x has type {}; this version requires them to be equal",
                    scale.dtype,
                    x.dtype
                );
            }
        }
        ScaleRule::OneOf(allowed) => check_type("y_scale", scale.dtype, allowed, &op)?,
    }
    let out_attr = match attrs.output_dtype {
        None | Some(0) => None,
        Some(v) => Some(parse_dtype("output_dtype", v)?),
    };
    let output = match (zero_point.as_ref(), out_attr) {
        (Some(zp), Some(t)) if zp.dtype != t => bail!(
            TypeMismatch,
            "{op}: output_dtype {} does not match y_zero_point type {}",
            t.onnx_name(),
            zp.dtype.onnx_name()
        ),
        (Some(zp), _) => {
            check_type("y_zero_point", zp.dtype, s.y, &op)?;
            zp.dtype
        }
        (None, Some(t)) => {
            if !s.y.contains(&t) {
                bail!(
                    InvalidAttribute,
                    "{op}: output_dtype {} is not an allowed output type (allowed: {})",
                    t.onnx_name(),
                    list(s.y)
                );
            }
            t
        }
        (None, None) => DataType::U8,
    };
    let saturate = match attrs.saturate {
        None | Some(1) => true,
        Some(0) => false,
        Some(v) => bail!(InvalidAttribute, "{op}: saturate must be 0 or 1, got {v}"),
    };
    let precision = match attrs.precision {
        None | Some(0) => None,
        Some(v) => {
            let t = parse_dtype("precision", v)?;
            if !t.is_wide_float() {
                bail!(InvalidAttribute, "{op}: precision must be FLOAT, FLOAT16 or BFLOAT16, got {}", t.onnx_name());
            }
            Some(t)
        }
    };
    let n = x.checked_len("x")?;
    let scale_len = scale.checked_len("y_scale")?;
    let zp = match zero_point.as_ref() {
        Some(z) => Some(z.packed("y_zero_point")?),
        None => None,
    };
    let layout = layout::resolve(
        x.shape,
        scale.shape,
        zero_point.as_ref().map(|z| z.shape),
        attrs.axis.unwrap_or(1),
        attrs.block_size.unwrap_or(0),
        s.allowed,
        ("y_scale", "y_zero_point"),
    )?;
    let opts = QuantizeOptions { output, saturate, precision };
    let y_bytes = output.byte_len(n).ok_or_else(|| {
        crate::Error::new(
            crate::ErrorKind::ShapeOverflow,
            format!("y: the byte size of {n} {output} elements overflows"),
        )
    })?;
    let p = quantize::check((x.dtype, n), (scale.dtype, scale_len), zp.as_ref(), &layout, &opts, y_bytes)?;
    Ok(QuantizePlan { x, scale, zero_point: zp, layout, opts, precision: p, len: n, y_bytes })
}

/// QuantizeLinear at the given opset.
///
/// Errors (each with a message naming the input): unknown opset; an attribute the version
/// does not define; x / scale / zero-point types outside the version's lists; x and scale
/// of different types where the version requires one type; `output_dtype` that is not a
/// quantized type or differs from the zero point's type; `saturate` not 0/1; `precision`
/// not f32/f16/bf16; bad axis, block size or scale / zero-point shapes; buffers whose
/// length does not match their shape; non-zero float zero points.
pub fn quantize_linear(
    opset: Opset,
    x: TensorRef<'_>,
    scale: TensorRef<'_>,
    zero_point: Option<TensorRef<'_>>,
    attrs: &QuantizeAttributes,
) -> Result<Tensor> {
    quantize_linear_with(&Reference, opset, x, scale, zero_point, attrs)
}

/// [`quantize_linear`] executed by `backend`.
pub fn quantize_linear_with<B: Backend + ?Sized>(
    backend: &B,
    opset: Opset,
    x: TensorRef<'_>,
    scale: TensorRef<'_>,
    zero_point: Option<TensorRef<'_>>,
    attrs: &QuantizeAttributes,
) -> Result<Tensor> {
    let plan = plan_quantize(opset, x, scale, zero_point, attrs)?;
    let mut data = vec![0u8; plan.y_bytes];
    backend.quantize(&plan, &mut data)?;
    Ok(Tensor { dtype: plan.opts.output, shape: plan.x.shape.to_vec(), data })
}

/// A validated DequantizeLinear call (see [`QuantizePlan`]).
#[derive(Clone, Copy, Debug)]
pub struct DequantizePlan<'a> {
    /// The quantized input (length checked).
    pub x: Packed<'a>,
    /// x's shape (the output's shape).
    pub shape: &'a [usize],
    /// The scale (f32, f16, bf16 or e8m0; length checked).
    pub scale: TensorRef<'a>,
    /// The zero point (x's type), if any.
    pub zero_point: Option<Packed<'a>>,
    /// Granularity.
    pub layout: Layout,
    /// Output type (f32, f16 or bf16).
    pub output: DataType,
    /// Bytes of the output.
    pub y_bytes: usize,
}

/// Validates a DequantizeLinear call at the given opset (see [`dequantize_linear`]).
pub fn plan_dequantize<'a>(
    opset: Opset,
    x: TensorRef<'a>,
    scale: TensorRef<'a>,
    zero_point: Option<TensorRef<'a>>,
    attrs: &DequantizeAttributes,
) -> Result<DequantizePlan<'a>> {
    let s = schema::dequantize(opset)?;
    let op = s.name();
    for (name, v) in [("axis", attrs.axis), ("block_size", attrs.block_size), ("output_dtype", attrs.output_dtype)] {
        if v.is_some() {
            s.check_attribute(name)?;
        }
    }
    check_type("x", x.dtype, s.x, &op)?;
    if let ScaleRule::OneOf(allowed) = s.scale {
        check_type("x_scale", scale.dtype, allowed, &op)?;
    }
    if let Some(zp) = zero_point.as_ref() {
        if zp.dtype != x.dtype {
            bail!(
                TypeMismatch,
                "{op}: x_zero_point has type {} but x has type {}; they must be equal",
                zp.dtype,
                x.dtype
            );
        }
    }
    let output = match attrs.output_dtype {
        None | Some(0) => {
            if !s.y.contains(&scale.dtype) {
                bail!(
                    MissingAttribute,
                    "{op}: the output type defaults to the scale's type {}, which is not an output type \
                     (f32, f16, bf16): set output_dtype",
                    scale.dtype
                );
            }
            scale.dtype
        }
        Some(v) => {
            let t = parse_dtype("output_dtype", v)?;
            if !s.y.contains(&t) {
                bail!(InvalidAttribute, "{op}: output_dtype {} is not FLOAT, FLOAT16 or BFLOAT16", t.onnx_name());
            }
            t
        }
    };
    let xp = x.packed("x")?;
    let scale_len = scale.checked_len("x_scale")?;
    let zp = match zero_point.as_ref() {
        Some(z) => Some(z.packed("x_zero_point")?),
        None => None,
    };
    let layout: Layout = layout::resolve(
        x.shape,
        scale.shape,
        zero_point.as_ref().map(|z| z.shape),
        attrs.axis.unwrap_or(1),
        attrs.block_size.unwrap_or(0),
        s.allowed,
        ("x_scale", "x_zero_point"),
    )?;
    dequantize::check(&xp, (scale.dtype, scale_len), zp.as_ref(), &layout, output, xp.len)?;
    let y_bytes = output.byte_len(xp.len).ok_or_else(|| {
        crate::Error::new(
            crate::ErrorKind::ShapeOverflow,
            format!("y: the byte size of {} {output} elements overflows", xp.len),
        )
    })?;
    Ok(DequantizePlan { x: xp, shape: x.shape, scale, zero_point: zp, layout, output, y_bytes })
}

/// DequantizeLinear at the given opset. Errors as for [`quantize_linear`], plus: the zero
/// point's type must equal x's; the output type (`output_dtype`, else the scale's type)
/// must be f32, f16 or bf16, so an e8m0 scale needs `output_dtype`.
pub fn dequantize_linear(
    opset: Opset,
    x: TensorRef<'_>,
    scale: TensorRef<'_>,
    zero_point: Option<TensorRef<'_>>,
    attrs: &DequantizeAttributes,
) -> Result<Tensor> {
    dequantize_linear_with(&Reference, opset, x, scale, zero_point, attrs)
}

/// [`dequantize_linear`] executed by `backend`.
pub fn dequantize_linear_with<B: Backend + ?Sized>(
    backend: &B,
    opset: Opset,
    x: TensorRef<'_>,
    scale: TensorRef<'_>,
    zero_point: Option<TensorRef<'_>>,
    attrs: &DequantizeAttributes,
) -> Result<Tensor> {
    let plan = plan_dequantize(opset, x, scale, zero_point, attrs)?;
    let mut data = vec![0u8; plan.y_bytes];
    backend.dequantize(&plan, &mut data)?;
    Ok(Tensor { dtype: plan.output, shape: plan.shape.to_vec(), data })
}

/// DynamicQuantizeLinear (ai.onnx opset 11 and later): returns `[y, y_scale, y_zero_point]`.
pub fn dynamic_quantize_linear(opset: Opset, x: TensorRef<'_>) -> Result<[Tensor; 3]> {
    dynamic_quantize_linear_with(&Reference, opset, x)
}

/// [`dynamic_quantize_linear`] executed by `backend`.
pub fn dynamic_quantize_linear_with<B: Backend + ?Sized>(
    backend: &B,
    opset: Opset,
    x: TensorRef<'_>,
) -> Result<[Tensor; 3]> {
    schema::check_dynamic(opset)?;
    if x.dtype != DataType::F32 {
        bail!(UnsupportedType, "DynamicQuantizeLinear-11: x has type {}; only f32 is accepted", x.dtype);
    }
    let n = x.checked_len("x")?;
    let mut y = vec![0u8; n];
    let (scale, zp) = backend.dynamic_quantize(x.data, &mut y)?;
    Ok([
        Tensor { dtype: DataType::U8, shape: x.shape.to_vec(), data: y },
        Tensor { dtype: DataType::F32, shape: vec![], data: scale.to_le_bytes().to_vec() },
        Tensor { dtype: DataType::U8, shape: vec![], data: vec![zp] },
    ])
}

/// What executes validated calls: [`Reference`] here, the SIMD kernels in the `qdq` crate.
/// The plans are validated, so an implementation checks only what is its own (the `qdq`
/// backend: whether its configured ISA is available), and reports that as an error rather
/// than running something else.
pub trait Backend {
    /// Runs a QuantizeLinear plan into `y` (`plan.y_bytes` bytes, zero-initialised).
    fn quantize(&self, plan: &QuantizePlan<'_>, y: &mut [u8]) -> Result<()>;
    /// Runs a DequantizeLinear plan into `y` (`plan.y_bytes` bytes).
    fn dequantize(&self, plan: &DequantizePlan<'_>, y: &mut [u8]) -> Result<()>;
    /// DynamicQuantizeLinear of `x` (little-endian f32 bytes) into `y` (one byte per element);
    /// returns the scale and zero point.
    fn dynamic_quantize(&self, x: &[u8], y: &mut [u8]) -> Result<(f32, u8)>;
}

/// The scalar reference backend.
#[derive(Clone, Copy, Debug, Default)]
pub struct Reference;

impl Backend for Reference {
    fn quantize(&self, plan: &QuantizePlan<'_>, y: &mut [u8]) -> Result<()> {
        quantize::run(
            &Bytes { dtype: plan.x.dtype, data: plan.x.data },
            plan.len,
            &Bytes { dtype: plan.scale.dtype, data: plan.scale.data },
            plan.zero_point.as_ref(),
            &plan.layout,
            &plan.opts,
            plan.precision,
            y,
        );
        Ok(())
    }

    fn dequantize(&self, plan: &DequantizePlan<'_>, y: &mut [u8]) -> Result<()> {
        dequantize::run(
            &plan.x,
            &Bytes { dtype: plan.scale.dtype, data: plan.scale.data },
            plan.zero_point.as_ref(),
            &plan.layout,
            &mut BytesMut { dtype: plan.output, data: y },
        );
        Ok(())
    }

    fn dynamic_quantize(&self, x: &[u8], y: &mut [u8]) -> Result<(f32, u8)> {
        use crate::values::Read;
        let xs = Bytes { dtype: DataType::F32, data: x };
        let (lo, hi) = dynamic::range((0..y.len()).map(|i| xs.value(i) as f32));
        let (scale, zp) = dynamic::scale_and_zero_point(lo, hi);
        for (i, o) in y.iter_mut().enumerate() {
            *o = dynamic::dynamic_value(xs.value(i) as f32, scale, zp);
        }
        Ok((scale, zp))
    }
}

/// One integer attribute of a node, by name.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Attribute<'a> {
    /// Attribute name.
    pub name: &'a str,
    /// Its (integer) value; every attribute of these operators is an INT.
    pub value: i64,
}

/// Runs a node given by operator type name, the opset imported for its domain, its inputs
/// (`None` for an omitted optional input) and its attributes; returns its outputs.
///
/// Errors on an unknown operator, a wrong number of inputs or outputs, duplicated or
/// unknown attributes, and everything the typed entry points reject.
pub fn run_node(
    op_type: &str,
    opset: Opset,
    inputs: &[Option<TensorRef<'_>>],
    attributes: &[Attribute<'_>],
    num_outputs: usize,
) -> Result<Vec<Tensor>> {
    run_node_with(&Reference, op_type, opset, inputs, attributes, num_outputs)
}

/// [`run_node`] executed by `backend`.
pub fn run_node_with<B: Backend + ?Sized>(
    backend: &B,
    op_type: &str,
    opset: Opset,
    inputs: &[Option<TensorRef<'_>>],
    attributes: &[Attribute<'_>],
    num_outputs: usize,
) -> Result<Vec<Tensor>> {
    for (i, a) in attributes.iter().enumerate() {
        if attributes[..i].iter().any(|b| b.name == a.name) {
            bail!(InvalidAttribute, "{op_type}: attribute '{}' is given twice", a.name);
        }
    }
    let attr = |name: &str| attributes.iter().find(|a| a.name == name).map(|a| a.value);
    let unknown = |known: &[&str]| -> Result<()> {
        if let Some(a) = attributes.iter().find(|a| !known.contains(&a.name)) {
            bail!(UnknownAttribute, "{op_type}: unknown attribute '{}'", a.name);
        }
        Ok(())
    };
    let required = |i: usize, name: &str| -> Result<TensorRef<'_>> {
        match inputs.get(i).copied().flatten() {
            Some(t) => Ok(t),
            None => bail!(Arity, "{op_type}: input {i} ({name}) is required"),
        }
    };
    match op_type {
        "QuantizeLinear" | "DequantizeLinear" => {
            if !(2..=3).contains(&inputs.len()) {
                bail!(Arity, "{op_type} takes 2 or 3 inputs, got {}", inputs.len());
            }
            if num_outputs != 1 {
                bail!(Arity, "{op_type} has exactly 1 output, got {num_outputs}");
            }
            let (x, s, z) = (required(0, "x")?, required(1, "scale")?, inputs.get(2).copied().flatten());
            let y = if op_type == "QuantizeLinear" {
                unknown(&["axis", "saturate", "block_size", "output_dtype", "precision"])?;
                let a = QuantizeAttributes {
                    axis: attr("axis"),
                    saturate: attr("saturate"),
                    block_size: attr("block_size"),
                    output_dtype: attr("output_dtype"),
                    precision: attr("precision"),
                };
                quantize_linear_with(backend, opset, x, s, z, &a)?
            } else {
                unknown(&["axis", "block_size", "output_dtype"])?;
                let a = DequantizeAttributes {
                    axis: attr("axis"),
                    block_size: attr("block_size"),
                    output_dtype: attr("output_dtype"),
                };
                dequantize_linear_with(backend, opset, x, s, z, &a)?
            };
            Ok(vec![y])
        }
        "DynamicQuantizeLinear" => {
            unknown(&[])?;
            if inputs.len() != 1 {
                bail!(Arity, "DynamicQuantizeLinear takes 1 input, got {}", inputs.len());
            }
            if num_outputs != 3 {
                bail!(Arity, "DynamicQuantizeLinear has exactly 3 outputs, got {num_outputs}");
            }
            // Move (not clone) the three outputs into the Vec: the tensor API allocates only its outputs.
            Ok(Vec::from(dynamic_quantize_linear_with(backend, opset, required(0, "x")?)?))
        }
        other => bail!(
            UnsupportedOpset,
            "unknown operator '{other}' (expected QuantizeLinear, DequantizeLinear or DynamicQuantizeLinear)"
        ),
    }
}
