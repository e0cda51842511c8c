//! The tensor-level API: type-tagged tensor views in, output tensors out, with every
//! per-opset rule of the ONNX schemas enforced (the README's "Errors" section).
//!
//! This is what a graph runtime or the conformance runner calls. It validates types,
//! attributes and shapes for the operator version, picks the granularity from the shapes
//! ([`crate::layout::resolve`]) and runs the same loops as the slice API.

use crate::dtype::{list, DataType};
use crate::element::{bytes_of, slice_of, Element};
use crate::error::{bail, Result};
use crate::layout::{self, Layout};
use crate::quantize::{self, QuantizeOptions};
use crate::schema::{self, Opset, ScaleRule};
use crate::values::{Bytes, BytesMut, Packed};
use crate::{dequantize, dynamic};
use core::fmt;
use zerocopy::IntoBytes;

/// A borrowed tensor: element type, shape and its ONNX serialisation (little endian,
/// sub-byte types packed). Build it from a typed slice with [`TensorRef::new`], from a
/// single value with [`TensorRef::scalar`], or from bytes with [`TensorRef::packed`].
#[derive(Clone, Copy, Debug)]
pub struct TensorRef<'a> {
    /// Element type.
    pub dtype: DataType,
    /// Dimensions (empty for a scalar).
    pub shape: &'a [usize],
    /// `dtype.byte_len(product(shape))` bytes.
    pub data: &'a [u8],
}

/// An owned tensor (an operator output). Its bytes are stored 4-byte aligned, so
/// [`Tensor::as_slice`] can view them as any element type.
#[derive(Clone, PartialEq, Eq)]
pub struct Tensor {
    dtype: DataType,
    shape: Vec<usize>,
    /// The bytes, in whole words; the bytes past `len_bytes` are zero.
    words: Vec<u32>,
    len_bytes: usize,
}

impl fmt::Debug for Tensor {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Tensor")
            .field("dtype", &self.dtype)
            .field("shape", &self.shape)
            .field("data", &self.bytes())
            .finish()
    }
}

impl Tensor {
    /// A tensor of type `dtype` and shape `shape` holding `data`, its ONNX serialisation
    /// (little endian, sub-byte types packed). Errors if the length does not match.
    ///
    /// ```
    /// use qdq_ref::{DataType, Tensor};
    /// let t = Tensor::new(DataType::I4, vec![3], &[0x21, 0x03])?;
    /// assert_eq!((t.len(), t.bytes()), (3, &[0x21, 0x03][..]));
    /// assert!(Tensor::new(DataType::I4, vec![3], &[0x21]).is_err());
    /// # Ok::<(), qdq_ref::Error>(())
    /// ```
    pub fn new(dtype: DataType, shape: Vec<usize>, data: &[u8]) -> Result<Tensor> {
        TensorRef { dtype, shape: &shape, data }.checked_len("data")?;
        let mut t = Tensor::zeroed(dtype, shape, data.len());
        t.bytes_mut().copy_from_slice(data);
        Ok(t)
    }

    /// A tensor of shape `shape` holding a copy of `data`. Errors if the element counts
    /// differ.
    ///
    /// ```
    /// use qdq_ref::{DataType, Tensor};
    /// let t = Tensor::from_slice(&[2, 2], &[1i8, -2, 3, -4])?;
    /// assert_eq!((t.dtype(), t.shape()), (DataType::I8, &[2, 2][..]));
    /// assert_eq!(t.as_slice::<i8>()?, [1, -2, 3, -4]);
    /// # Ok::<(), qdq_ref::Error>(())
    /// ```
    pub fn from_slice<T: Element>(shape: &[usize], data: &[T]) -> Result<Tensor> {
        Tensor::new(T::DTYPE, shape.to_vec(), TensorRef::new(shape, data)?.data)
    }

    /// A zero-filled tensor; `bytes` has been checked against the shape.
    pub(crate) fn zeroed(dtype: DataType, shape: Vec<usize>, bytes: usize) -> Tensor {
        Tensor { dtype, shape, words: vec![0; bytes.div_ceil(4)], len_bytes: bytes }
    }

    /// Element type.
    ///
    /// ```
    /// use qdq_ref::{DataType, Tensor};
    /// assert_eq!(Tensor::from_slice(&[1], &[1.0f32])?.dtype(), DataType::F32);
    /// # Ok::<(), qdq_ref::Error>(())
    /// ```
    pub fn dtype(&self) -> DataType {
        self.dtype
    }

    /// Dimensions (empty for a scalar).
    ///
    /// ```
    /// use qdq_ref::Tensor;
    /// assert_eq!(Tensor::from_slice(&[], &[1.0f32])?.shape(), &[] as &[usize]);
    /// # Ok::<(), qdq_ref::Error>(())
    /// ```
    pub fn shape(&self) -> &[usize] {
        &self.shape
    }

    /// The ONNX serialisation: little-endian elements, sub-byte types packed with zero
    /// padding bits.
    ///
    /// ```
    /// use qdq_ref::Tensor;
    /// assert_eq!(Tensor::from_slice(&[1], &[258u16])?.bytes(), [2, 1]);
    /// # Ok::<(), qdq_ref::Error>(())
    /// ```
    pub fn bytes(&self) -> &[u8] {
        &self.words.as_bytes()[..self.len_bytes]
    }

    /// The bytes, writable (for backends filling an output).
    pub(crate) fn bytes_mut(&mut self) -> &mut [u8] {
        &mut self.words.as_mut_bytes()[..self.len_bytes]
    }

    /// The elements as a typed slice; errors if `T` is not the tensor's type.
    ///
    /// ```
    /// use qdq_ref::{dequantize_linear, DequantizeAttributes, Opset, TensorRef};
    /// let y = dequantize_linear(
    ///     Opset::onnx(21),
    ///     TensorRef::new(&[2], &[10u8, 20])?,
    ///     TensorRef::scalar(&0.5f32),
    ///     None,
    ///     &DequantizeAttributes::default(),
    /// )?;
    /// assert_eq!(y.as_slice::<f32>()?, [5.0, 10.0]);
    /// assert!(y.as_slice::<u8>().is_err());
    /// # Ok::<(), qdq_ref::Error>(())
    /// ```
    pub fn as_slice<T: Element>(&self) -> Result<&[T]> {
        self.view().as_slice()
    }

    /// The single element of a one-element tensor (a scalar or shape `[1]`), typed.
    ///
    /// ```
    /// use qdq_ref::Tensor;
    /// assert_eq!(Tensor::from_slice(&[], &[0.25f32])?.to_scalar::<f32>()?, 0.25);
    /// assert!(Tensor::from_slice(&[2], &[1u8, 2])?.to_scalar::<u8>().is_err());
    /// # Ok::<(), qdq_ref::Error>(())
    /// ```
    pub fn to_scalar<T: Element>(&self) -> Result<T> {
        match self.as_slice::<T>()? {
            [v] => Ok(*v),
            other => bail!(ShapeMismatch, "tensor: shape {:?} holds {} elements, not one", self.shape, other.len()),
        }
    }

    /// Borrows the tensor as a view.
    ///
    /// ```
    /// use qdq_ref::Tensor;
    /// let t = Tensor::from_slice(&[2], &[1u8, 2])?;
    /// assert_eq!(t.view().data, [1, 2]);
    /// # Ok::<(), qdq_ref::Error>(())
    /// ```
    pub fn view(&self) -> TensorRef<'_> {
        TensorRef { dtype: self.dtype, shape: &self.shape, data: self.bytes() }
    }

    /// Number of elements (`usize::MAX` if the shape's product overflows, which no
    /// operator output can have: outputs take validated input shapes).
    ///
    /// ```
    /// use qdq_ref::Tensor;
    /// assert_eq!(Tensor::from_slice(&[2, 3], &[0u8; 6])?.len(), 6);
    /// # Ok::<(), qdq_ref::Error>(())
    /// ```
    pub fn len(&self) -> usize {
        layout::element_count("tensor", &self.shape).unwrap_or(usize::MAX)
    }

    /// Whether the tensor has no elements.
    ///
    /// ```
    /// use qdq_ref::Tensor;
    /// assert!(Tensor::from_slice(&[0, 3], &[0u8; 0])?.is_empty());
    /// # Ok::<(), qdq_ref::Error>(())
    /// ```
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// The bytes, moved out (see [`Tensor::bytes`]).
    ///
    /// ```
    /// use qdq_ref::Tensor;
    /// assert_eq!(Tensor::from_slice(&[2], &[1u8, 2])?.into_bytes(), vec![1, 2]);
    /// # Ok::<(), qdq_ref::Error>(())
    /// ```
    pub fn into_bytes(self) -> Vec<u8> {
        self.bytes().to_vec()
    }
}

impl<'a> TensorRef<'a> {
    /// A view of a typed slice as a tensor of shape `shape`. Errors if the shape's element
    /// count differs from the slice's length.
    ///
    /// ```
    /// use qdq_ref::{DataType, TensorRef};
    /// let x = TensorRef::new(&[2, 3], &[0.5f32; 6])?;
    /// assert_eq!((x.dtype, x.data.len()), (DataType::F32, 24));
    /// assert!(TensorRef::new(&[2, 2], &[0.5f32; 6]).is_err());
    /// # Ok::<(), qdq_ref::Error>(())
    /// ```
    pub fn new<T: Element>(shape: &'a [usize], data: &'a [T]) -> Result<Self> {
        little_endian::<T>()?;
        let n = layout::element_count("shape", shape)?;
        if n != data.len() {
            bail!(BufferLength, "data: shape {shape:?} has {n} elements but the slice has {}", data.len());
        }
        Ok(TensorRef { dtype: T::DTYPE, shape, data: bytes_of(data) })
    }

    /// A scalar (shape `[]`) holding `value`. Little-endian targets only (the view holds
    /// `value`'s bytes); elsewhere use [`TensorRef::packed`].
    ///
    /// ```
    /// use qdq_ref::{DataType, TensorRef};
    /// let s = TensorRef::scalar(&128u8);
    /// assert_eq!((s.dtype, s.shape, s.data), (DataType::U8, &[] as &[usize], &[128u8][..]));
    /// ```
    #[cfg(target_endian = "little")]
    pub fn scalar<T: Element>(value: &'a T) -> Self {
        TensorRef { dtype: T::DTYPE, shape: &[], data: bytes_of(core::slice::from_ref(value)) }
    }

    /// A view of `data`, the ONNX serialisation of a `dtype` tensor of shape `shape` (the
    /// way to pass packed sub-byte types). Errors if the byte length does not match.
    ///
    /// ```
    /// use qdq_ref::{DataType, TensorRef};
    /// let w = TensorRef::packed(DataType::U4, &[2, 2], &[0x21, 0x43])?;
    /// assert_eq!(w.checked_len("w")?, 4);
    /// # Ok::<(), qdq_ref::Error>(())
    /// ```
    pub fn packed(dtype: DataType, shape: &'a [usize], data: &'a [u8]) -> Result<Self> {
        let t = TensorRef { dtype, shape, data };
        t.checked_len("data")?;
        Ok(t)
    }

    /// The elements as a typed slice. Errors if `T` is not the tensor's type, or if the
    /// bytes are not aligned for `T` (possible only for a view built from raw bytes).
    ///
    /// ```
    /// use qdq_ref::TensorRef;
    /// let data = [1.5f32, 2.5];
    /// assert_eq!(TensorRef::new(&[2], &data)?.as_slice::<f32>()?, data);
    /// # Ok::<(), qdq_ref::Error>(())
    /// ```
    pub fn as_slice<T: Element>(&self) -> Result<&'a [T]> {
        little_endian::<T>()?;
        if T::DTYPE != self.dtype {
            bail!(TypeMismatch, "tensor: elements have type {}, not {}", self.dtype, T::DTYPE);
        }
        match slice_of::<T>(self.data) {
            Some(s) => Ok(s),
            None => bail!(
                BufferLength,
                "tensor: {} bytes at {:p} are not a whole, aligned number of {} elements",
                self.data.len(),
                self.data.as_ptr(),
                T::DTYPE
            ),
        }
    }

    /// Checks the byte length against shape and type; returns the element count. `name`
    /// names the tensor in the error message.
    ///
    /// ```
    /// use qdq_ref::{DataType, TensorRef};
    /// let bad = TensorRef { dtype: DataType::F32, shape: &[3], data: &[0; 8] };
    /// assert!(bad.checked_len("x").unwrap_err().message().starts_with("x: "));
    /// ```
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

    fn as_packed(&self, name: &str) -> Result<Packed<'a>> {
        let len = self.checked_len(name)?;
        Ok(Packed { dtype: self.dtype, len, data: self.data })
    }
}

/// Typed views of tensors hold the elements' bytes, which are ONNX's little-endian
/// serialisation only on a little-endian target: elsewhere, multi-byte element types are
/// refused (single bytes are the same either way).
fn little_endian<T: Element>() -> Result<()> {
    if cfg!(target_endian = "big") && T::DTYPE.bits() > 8 {
        bail!(
            UnsupportedType,
            "typed views of {} tensors need a little-endian target; pass little-endian bytes to TensorRef::packed",
            T::DTYPE
        );
    }
    Ok(())
}

/// Element `i` of an f32 / f16 / bf16 / i32 / e8m0 tensor as its exact value (for
/// backends that fall back to the reference formulas).
///
/// ```
/// use qdq_ref::{bf16, tensor::wide_value, TensorRef};
/// let data = [bf16::from_f32(0.5), bf16::from_f32(-3.0)];
/// let t = TensorRef::new(&[2], &data)?;
/// assert_eq!(wide_value(&t, 1), -3.0);
/// # Ok::<(), qdq_ref::Error>(())
/// ```
pub fn wide_value(t: &TensorRef<'_>, i: usize) -> f64 {
    use crate::values::Read;
    Bytes { dtype: t.dtype, data: t.data }.value(i)
}

/// Writes `v` rounded once to `out` (f32, f16 or bf16) into `bytes` (one element); a NaN
/// is written as the canonical NaN.
///
/// ```
/// use qdq_ref::{tensor::put_wide, DataType};
/// let mut b = [0u8; 2];
/// put_wide(DataType::F16, &mut b, 1.0);
/// assert_eq!(b, [0x00, 0x3c]);
/// put_wide(DataType::Bf16, &mut b, -f32::NAN);
/// assert_eq!(b, [0xc0, 0x7f]);
/// ```
pub fn put_wide(out: DataType, bytes: &mut [u8], v: f32) {
    use crate::values::Write;
    BytesMut { dtype: out, data: bytes }.put(0, v);
}

/// QuantizeLinear attributes (`None` = absent, the version's default applies). Build
/// them with struct update syntax, or from a node's raw attributes with
/// [`QuantizeAttributes::from_onnx`].
///
/// ```
/// use qdq_ref::{DataType, QuantizeAttributes};
/// let attrs = QuantizeAttributes { axis: Some(0), output_dtype: Some(DataType::I4), ..Default::default() };
/// assert_eq!(attrs.saturate, None);
/// ```
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct QuantizeAttributes {
    /// `axis` (default 1; negative counts from the end).
    pub axis: Option<i64>,
    /// `saturate` (default true; float8 outputs only).
    pub saturate: Option<bool>,
    /// `block_size` (default 0 = not blocked; must not be negative).
    pub block_size: Option<i64>,
    /// `output_dtype` (default: the zero point's type, else u8).
    pub output_dtype: Option<DataType>,
    /// `precision`: the type the division runs in, f32, f16 or bf16 (default: the scale's
    /// type).
    pub precision: Option<DataType>,
}

/// DequantizeLinear attributes (`None` = absent, the version's default applies).
///
/// ```
/// use qdq_ref::{DataType, DequantizeAttributes};
/// let attrs = DequantizeAttributes { output_dtype: Some(DataType::F16), ..Default::default() };
/// assert_eq!(attrs.axis, None);
/// ```
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct DequantizeAttributes {
    /// `axis` (default 1; negative counts from the end).
    pub axis: Option<i64>,
    /// `block_size` (default 0 = not blocked; must not be negative).
    pub block_size: Option<i64>,
    /// `output_dtype` (default: the scale's type).
    pub output_dtype: Option<DataType>,
}

/// Finds attribute `name` in a node's raw attributes.
fn raw(attributes: &[Attribute<'_>], name: &str) -> Option<i64> {
    attributes.iter().find(|a| a.name == name).map(|a| a.value)
}

/// A raw type attribute: 0 (ONNX's UNDEFINED) is the default, as absent.
fn raw_dtype(attributes: &[Attribute<'_>], name: &str) -> Result<Option<DataType>> {
    match raw(attributes, name) {
        None | Some(0) => Ok(None),
        Some(v) => parse_dtype(name, v).map(Some),
    }
}

impl QuantizeAttributes {
    /// The attributes of a node's raw integer attributes (as an ONNX graph stores them):
    /// `saturate` must be 0 or 1, `output_dtype` and `precision` ONNX type numbers (0 means
    /// absent). Other names are ignored here; [`run_node`] rejects them.
    ///
    /// ```
    /// use qdq_ref::{Attribute, DataType, QuantizeAttributes};
    /// let raw = [Attribute { name: "output_dtype", value: 22 }, Attribute { name: "saturate", value: 0 }];
    /// let attrs = QuantizeAttributes::from_onnx(&raw)?;
    /// assert_eq!((attrs.output_dtype, attrs.saturate), (Some(DataType::I4), Some(false)));
    /// assert!(QuantizeAttributes::from_onnx(&[Attribute { name: "saturate", value: 2 }]).is_err());
    /// # Ok::<(), qdq_ref::Error>(())
    /// ```
    pub fn from_onnx(attributes: &[Attribute<'_>]) -> Result<Self> {
        let saturate = match raw(attributes, "saturate") {
            None => None,
            Some(1) => Some(true),
            Some(0) => Some(false),
            Some(v) => bail!(InvalidAttribute, "saturate must be 0 or 1, got {v}"),
        };
        Ok(QuantizeAttributes {
            axis: raw(attributes, "axis"),
            saturate,
            block_size: raw(attributes, "block_size"),
            output_dtype: raw_dtype(attributes, "output_dtype")?,
            precision: raw_dtype(attributes, "precision")?,
        })
    }
}

impl DequantizeAttributes {
    /// The attributes of a node's raw integer attributes (see
    /// [`QuantizeAttributes::from_onnx`]).
    ///
    /// ```
    /// use qdq_ref::{Attribute, DataType, DequantizeAttributes};
    /// let attrs = DequantizeAttributes::from_onnx(&[Attribute { name: "output_dtype", value: 10 }])?;
    /// assert_eq!(attrs.output_dtype, Some(DataType::F16));
    /// # Ok::<(), qdq_ref::Error>(())
    /// ```
    pub fn from_onnx(attributes: &[Attribute<'_>]) -> Result<Self> {
        Ok(DequantizeAttributes {
            axis: raw(attributes, "axis"),
            block_size: raw(attributes, "block_size"),
            output_dtype: raw_dtype(attributes, "output_dtype")?,
        })
    }
}

/// Checks a node's raw attributes against the version's schema: no name twice, none the
/// version does not define.
fn check_node_attributes(op: &str, known: &[&str], attributes: &[Attribute<'_>]) -> Result<()> {
    for (i, a) in attributes.iter().enumerate() {
        if attributes[..i].iter().any(|b| b.name == a.name) {
            bail!(InvalidAttribute, "{op}: attribute '{}' is given twice", a.name);
        }
    }
    if let Some(a) = attributes.iter().find(|a| !known.contains(&a.name)) {
        bail!(UnknownAttribute, "{op}: unknown attribute '{}'", a.name);
    }
    Ok(())
}

impl QuantizeAttributes {
    /// A QuantizeLinear node's raw attributes at `opset`, checked as [`run_node`] checks
    /// them: no name twice, every name one the version defines, every value valid.
    ///
    /// ```
    /// use qdq_ref::{Attribute, ErrorKind, Opset, QuantizeAttributes};
    /// let a = QuantizeAttributes::from_node(Opset::onnx(21), &[Attribute { name: "block_size", value: 32 }])?;
    /// assert_eq!(a.block_size, Some(32));
    /// // Blocked quantization needs opset 21.
    /// let e = QuantizeAttributes::from_node(Opset::onnx(19), &[Attribute { name: "block_size", value: 32 }]);
    /// assert_eq!(e.unwrap_err().kind(), ErrorKind::UnknownAttribute);
    /// # Ok::<(), qdq_ref::Error>(())
    /// ```
    pub fn from_node(opset: Opset, attributes: &[Attribute<'_>]) -> Result<Self> {
        let known = ["axis", "saturate", "block_size", "output_dtype", "precision"];
        check_node_attributes("QuantizeLinear", &known, attributes)?;
        let schema = schema::quantize(opset)?;
        for a in attributes {
            schema.check_attribute(a.name)?;
        }
        QuantizeAttributes::from_onnx(attributes).map_err(|e| in_op(&schema.name(), e))
    }
}

impl DequantizeAttributes {
    /// A DequantizeLinear node's raw attributes at `opset` (see
    /// [`QuantizeAttributes::from_node`]).
    ///
    /// ```
    /// use qdq_ref::{Attribute, DequantizeAttributes, ErrorKind, Opset};
    /// let a = DequantizeAttributes::from_node(Opset::onnx(13), &[Attribute { name: "axis", value: 0 }])?;
    /// assert_eq!(a.axis, Some(0));
    /// let e = DequantizeAttributes::from_node(Opset::onnx(13), &[Attribute { name: "saturate", value: 1 }]);
    /// assert_eq!(e.unwrap_err().kind(), ErrorKind::UnknownAttribute);
    /// # Ok::<(), qdq_ref::Error>(())
    /// ```
    pub fn from_node(opset: Opset, attributes: &[Attribute<'_>]) -> Result<Self> {
        let known = ["axis", "block_size", "output_dtype"];
        check_node_attributes("DequantizeLinear", &known, attributes)?;
        let schema = schema::dequantize(opset)?;
        for a in attributes {
            schema.check_attribute(a.name)?;
        }
        DequantizeAttributes::from_onnx(attributes).map_err(|e| in_op(&schema.name(), e))
    }
}

/// Checks a DynamicQuantizeLinear node's attributes (it defines none) at `opset`.
///
/// ```
/// use qdq_ref::{tensor::check_dynamic_attributes, Attribute, Opset};
/// assert!(check_dynamic_attributes(Opset::onnx(11), &[]).is_ok());
/// assert!(check_dynamic_attributes(Opset::onnx(11), &[Attribute { name: "axis", value: 0 }]).is_err());
/// ```
pub fn check_dynamic_attributes(opset: Opset, attributes: &[Attribute<'_>]) -> Result<()> {
    check_node_attributes("DynamicQuantizeLinear", &[], attributes)?;
    schema::check_dynamic(opset)
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

/// Prefixes an attribute error with the operator's name, as the plans' own errors are.
fn in_op(op: &dyn fmt::Display, e: crate::Error) -> crate::Error {
    crate::Error::new(e.kind(), format!("{op}: {}", e.message()))
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

/// Validates a QuantizeLinear call at the given opset (see [`quantize_linear`]) into the
/// plan a [`Backend`] executes.
///
/// ```
/// use qdq_ref::{tensor::plan_quantize, DataType, Layout, Opset, TensorRef};
/// let x = TensorRef::new(&[2, 3], &[0f32; 6])?;
/// let scales = TensorRef::new(&[3], &[1f32; 3])?;
/// let plan = plan_quantize(Opset::onnx(13), x, scales, None, &Default::default())?;
/// assert_eq!(plan.layout, Layout::PerAxis { outer: 2, axis_len: 3, inner: 1 }); // axis defaults to 1
/// assert_eq!((plan.opts.output, plan.y_bytes), (DataType::U8, 6));
/// # Ok::<(), qdq_ref::Error>(())
/// ```
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
        ("axis", attrs.axis.is_some()),
        ("saturate", attrs.saturate.is_some()),
        ("block_size", attrs.block_size.is_some()),
        ("output_dtype", attrs.output_dtype.is_some()),
        ("precision", attrs.precision.is_some()),
    ];
    for (name, v) in given {
        if v {
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
    let out_attr = attrs.output_dtype;
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
    let saturate = attrs.saturate.unwrap_or(true);
    let precision = match attrs.precision {
        None => None,
        Some(t) => {
            if !t.is_wide_float() {
                bail!(InvalidAttribute, "{op}: precision must be FLOAT, FLOAT16 or BFLOAT16, got {}", t.onnx_name());
            }
            Some(t)
        }
    };
    let n = x.checked_len("x")?;
    let scale_len = scale.checked_len("y_scale")?;
    let zp = match zero_point.as_ref() {
        Some(z) => Some(z.as_packed("y_zero_point")?),
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
    let p = quantize::check(
        (x.dtype, n),
        (scale.dtype, scale_len),
        zp.as_ref(),
        &layout,
        &opts,
        y_bytes,
        ["y_scale", "y_zero_point"],
    )?;
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
///
/// ```
/// use qdq_ref::{quantize_linear, DataType, ErrorKind, Opset, QuantizeAttributes, TensorRef};
/// let x = TensorRef::new(&[3], &[0.5f32, 1.5, 2.5])?;
/// let y = quantize_linear(Opset::onnx(19), x, TensorRef::scalar(&1.0f32), None, &Default::default())?;
/// assert_eq!(y.as_slice::<u8>()?, [0, 2, 2]); // ties to even
/// // int4 output needs opset 21.
/// let attrs = QuantizeAttributes { output_dtype: Some(DataType::I4), ..Default::default() };
/// let err = quantize_linear(Opset::onnx(19), x, TensorRef::scalar(&1.0f32), None, &attrs).unwrap_err();
/// assert_eq!(err.kind(), ErrorKind::UnknownAttribute);
/// # Ok::<(), qdq_ref::Error>(())
/// ```
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
///
/// ```
/// use qdq_ref::{tensor::{quantize_linear_with, Reference}, Opset, TensorRef};
/// let x = TensorRef::new(&[2], &[-1.0f32, 1.0])?;
/// let y = quantize_linear_with(&Reference, Opset::onnx(13), x, TensorRef::scalar(&0.5f32), None, &Default::default())?;
/// assert_eq!(y.as_slice::<u8>()?, [0, 2]);
/// # Ok::<(), qdq_ref::Error>(())
/// ```
pub fn quantize_linear_with<B: Backend + ?Sized>(
    backend: &B,
    opset: Opset,
    x: TensorRef<'_>,
    scale: TensorRef<'_>,
    zero_point: Option<TensorRef<'_>>,
    attrs: &QuantizeAttributes,
) -> Result<Tensor> {
    let plan = plan_quantize(opset, x, scale, zero_point, attrs)?;
    let mut y = Tensor::zeroed(plan.opts.output, plan.x.shape.to_vec(), plan.y_bytes);
    backend.quantize(&plan, y.bytes_mut())?;
    Ok(y)
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

/// Validates a DequantizeLinear call at the given opset (see [`dequantize_linear`]) into
/// the plan a [`Backend`] executes.
///
/// ```
/// use qdq_ref::{tensor::plan_dequantize, DataType, Opset, TensorRef};
/// let x = TensorRef::new(&[4], &[1i8, 2, 3, 4])?;
/// let plan = plan_dequantize(Opset::onnx(21), x, TensorRef::scalar(&qdq_ref::f16::ONE), None, &Default::default())?;
/// assert_eq!((plan.output, plan.y_bytes), (DataType::F16, 8)); // the scale's type
/// # Ok::<(), qdq_ref::Error>(())
/// ```
pub fn plan_dequantize<'a>(
    opset: Opset,
    x: TensorRef<'a>,
    scale: TensorRef<'a>,
    zero_point: Option<TensorRef<'a>>,
    attrs: &DequantizeAttributes,
) -> Result<DequantizePlan<'a>> {
    let s = schema::dequantize(opset)?;
    let op = s.name();
    let given = [
        ("axis", attrs.axis.is_some()),
        ("block_size", attrs.block_size.is_some()),
        ("output_dtype", attrs.output_dtype.is_some()),
    ];
    for (name, v) in given {
        if v {
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
        None => {
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
        Some(t) => {
            if !s.y.contains(&t) {
                bail!(InvalidAttribute, "{op}: output_dtype {} is not FLOAT, FLOAT16 or BFLOAT16", t.onnx_name());
            }
            t
        }
    };
    let xp = x.as_packed("x")?;
    let scale_len = scale.checked_len("x_scale")?;
    let zp = match zero_point.as_ref() {
        Some(z) => Some(z.as_packed("x_zero_point")?),
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
    dequantize::check(
        &xp,
        (scale.dtype, scale_len),
        zp.as_ref(),
        &layout,
        output,
        xp.len,
        ["x_scale", "x_zero_point"],
    )?;
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
///
/// ```
/// use qdq_ref::{dequantize_linear, DataType, DequantizeAttributes, Float8E8M0, Opset, TensorRef};
/// let x = TensorRef::new(&[2], &[3i8, -4])?;
/// let scale = Float8E8M0::from_exponent(-1).unwrap(); // 0.5
/// let attrs = DequantizeAttributes { output_dtype: Some(DataType::F32), ..Default::default() };
/// let y = dequantize_linear(Opset::onnx(24), x, TensorRef::scalar(&scale), None, &attrs)?;
/// assert_eq!(y.as_slice::<f32>()?, [1.5, -2.0]);
/// # Ok::<(), qdq_ref::Error>(())
/// ```
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
///
/// ```
/// use qdq_ref::{tensor::{dequantize_linear_with, Reference}, Opset, TensorRef};
/// let x = TensorRef::new(&[2], &[10u8, 20])?;
/// let y = dequantize_linear_with(&Reference, Opset::onnx(10), x, TensorRef::scalar(&0.5f32), None, &Default::default())?;
/// assert_eq!(y.as_slice::<f32>()?, [5.0, 10.0]);
/// # Ok::<(), qdq_ref::Error>(())
/// ```
pub fn dequantize_linear_with<B: Backend + ?Sized>(
    backend: &B,
    opset: Opset,
    x: TensorRef<'_>,
    scale: TensorRef<'_>,
    zero_point: Option<TensorRef<'_>>,
    attrs: &DequantizeAttributes,
) -> Result<Tensor> {
    let plan = plan_dequantize(opset, x, scale, zero_point, attrs)?;
    let mut y = Tensor::zeroed(plan.output, plan.shape.to_vec(), plan.y_bytes);
    backend.dequantize(&plan, y.bytes_mut())?;
    Ok(y)
}

/// DynamicQuantizeLinear's three outputs.
#[derive(Clone, Debug, PartialEq)]
pub struct DynamicQuantized {
    /// `y`: u8, x's shape.
    pub y: Tensor,
    /// `y_scale`.
    pub y_scale: f32,
    /// `y_zero_point`.
    pub y_zero_point: u8,
}

impl DynamicQuantized {
    /// The outputs as the node's three tensors `[y, y_scale, y_zero_point]` (the last two
    /// scalars).
    ///
    /// ```
    /// use qdq_ref::{dynamic_quantize_linear, DataType, Opset, TensorRef};
    /// let out = dynamic_quantize_linear(Opset::onnx(11), TensorRef::new(&[2], &[0.0f32, 2.55])?)?;
    /// let [y, scale, zero_point] = out.into_tensors();
    /// assert_eq!((y.dtype(), scale.to_scalar::<f32>()?, zero_point.to_scalar::<u8>()?), (DataType::U8, 0.01, 0));
    /// # Ok::<(), qdq_ref::Error>(())
    /// ```
    pub fn into_tensors(self) -> [Tensor; 3] {
        let scalar = |dtype, bytes: &[u8]| {
            let mut t = Tensor::zeroed(dtype, Vec::new(), bytes.len());
            t.bytes_mut().copy_from_slice(bytes);
            t
        };
        [self.y, scalar(DataType::F32, &self.y_scale.to_le_bytes()), scalar(DataType::U8, &[self.y_zero_point])]
    }
}

/// DynamicQuantizeLinear (ai.onnx opset 11 and later): `y`, its scale and zero point.
///
/// ```
/// use qdq_ref::{dynamic_quantize_linear, Opset, TensorRef};
/// let out = dynamic_quantize_linear(Opset::onnx(11), TensorRef::new(&[3], &[-1.0f32, 0.0, 1.55])?)?;
/// assert_eq!((out.y_scale, out.y_zero_point), (0.01, 100));
/// assert_eq!(out.y.as_slice::<u8>()?, [0, 100, 255]);
/// # Ok::<(), qdq_ref::Error>(())
/// ```
pub fn dynamic_quantize_linear(opset: Opset, x: TensorRef<'_>) -> Result<DynamicQuantized> {
    dynamic_quantize_linear_with(&Reference, opset, x)
}

/// [`dynamic_quantize_linear`] executed by `backend`.
///
/// ```
/// use qdq_ref::{tensor::{dynamic_quantize_linear_with, Reference}, Opset, TensorRef};
/// let out = dynamic_quantize_linear_with(&Reference, Opset::onnx(11), TensorRef::new(&[2], &[0.0f32, -2.55])?)?;
/// assert_eq!((out.y_scale, out.y_zero_point, out.y.as_slice::<u8>()?), (0.01, 255, &[255u8, 0][..]));
/// # Ok::<(), qdq_ref::Error>(())
/// ```
pub fn dynamic_quantize_linear_with<B: Backend + ?Sized>(
    backend: &B,
    opset: Opset,
    x: TensorRef<'_>,
) -> Result<DynamicQuantized> {
    schema::check_dynamic(opset)?;
    if x.dtype != DataType::F32 {
        bail!(UnsupportedType, "DynamicQuantizeLinear-11: x has type {}; only f32 is accepted", x.dtype);
    }
    let n = x.checked_len("x")?;
    let mut y = Tensor::zeroed(DataType::U8, x.shape.to_vec(), n);
    let (y_scale, y_zero_point) = backend.dynamic_quantize(x.data, y.bytes_mut())?;
    Ok(DynamicQuantized { y, y_scale, y_zero_point })
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
///
/// ```
/// use qdq_ref::{run_node, Attribute, ErrorKind, Opset, TensorRef};
/// let x = TensorRef::new(&[2], &[1.0f32, 2.0])?;
/// let s = TensorRef::scalar(&0.5f32);
/// let y = run_node("QuantizeLinear", Opset::onnx(13), &[Some(x), Some(s)], &[], 1)?;
/// assert_eq!(y[0].as_slice::<u8>()?, [2, 4]);
/// let bad = [Attribute { name: "block_size", value: 2 }];
/// let err = run_node("QuantizeLinear", Opset::onnx(13), &[Some(x), Some(s)], &bad, 1).unwrap_err();
/// assert_eq!(err.kind(), ErrorKind::UnknownAttribute);
/// # Ok::<(), qdq_ref::Error>(())
/// ```
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
///
/// ```
/// use qdq_ref::{tensor::{run_node_with, Reference}, Opset, TensorRef};
/// let x = TensorRef::new(&[1], &[1.0f32])?;
/// let out = run_node_with(&Reference, "DynamicQuantizeLinear", Opset::onnx(11), &[Some(x)], &[], 3)?;
/// assert_eq!(out.len(), 3);
/// assert_eq!(out[2].to_scalar::<u8>()?, 0);
/// # Ok::<(), qdq_ref::Error>(())
/// ```
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
                let a = QuantizeAttributes::from_node(opset, attributes)?;
                quantize_linear_with(backend, opset, x, s, z, &a)?
            } else {
                let a = DequantizeAttributes::from_node(opset, attributes)?;
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
            Ok(Vec::from(dynamic_quantize_linear_with(backend, opset, required(0, "x")?)?.into_tensors()))
        }
        other => bail!(
            UnsupportedOpset,
            "unknown operator '{other}' (expected QuantizeLinear, DequantizeLinear or DynamicQuantizeLinear)"
        ),
    }
}
