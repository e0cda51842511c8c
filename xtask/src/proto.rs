//! A minimal protobuf wire-format reader and the few ONNX messages the conformance runner
//! needs (`ModelProto`, `GraphProto`, `NodeProto`, `AttributeProto`, `TensorProto`).
//!
//! The reader understands the four wire types protobuf still uses (varint, 64-bit,
//! length-delimited, 32-bit), skips unknown fields, and accepts repeated scalars both packed
//! and unpacked. Every failure (truncation, a varint longer than 64 bits, a length past the
//! end of the buffer, a known field with the wrong wire type, invalid UTF-8, group wire
//! types) is a [`DecodeError`]; no input makes it panic, and every allocation is bounded by
//! a small multiple of the input size (see [`TensorProto::to_tensor`] for the tensor caps).
//!
//! Subgraphs (`AttributeProto.g`, `graphs`) are skipped, never decoded, so nesting depth
//! cannot overflow the stack.

use std::fmt;

use qdq_ref::packing;
use qdq_ref::{DataType, Tensor};

/// The largest tensor (in serialised bytes) [`TensorProto::to_tensor`] accepts: 1 GiB.
pub const MAX_TENSOR_BYTES: usize = 1 << 30;

/// A decoding failure, with the path of the offending field when known.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct DecodeError {
    message: String,
}

impl DecodeError {
    /// Builds an error.
    pub fn new(message: impl Into<String>) -> Self {
        DecodeError { message: message.into() }
    }

    /// Prefixes the message with where it happened (`"graph.node[3]"`).
    pub fn context(self, what: impl fmt::Display) -> Self {
        DecodeError { message: format!("{what}: {}", self.message) }
    }

    /// The explanation.
    pub fn message(&self) -> &str {
        &self.message
    }
}

impl fmt::Display for DecodeError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.message)
    }
}

impl std::error::Error for DecodeError {}

/// Result of every decoding step.
pub type Result<T> = std::result::Result<T, DecodeError>;

macro_rules! bail {
    ($($arg:tt)*) => {
        return Err(DecodeError::new(format!($($arg)*)))
    };
}

/// One field value as it appears on the wire.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Value<'a> {
    /// Wire type 0.
    Varint(u64),
    /// Wire type 1 (little endian).
    Fixed64(u64),
    /// Wire type 2: the payload bytes.
    Bytes(&'a [u8]),
    /// Wire type 5 (little endian).
    Fixed32(u32),
}

impl Value<'_> {
    fn wire_name(&self) -> &'static str {
        match self {
            Value::Varint(_) => "varint",
            Value::Fixed64(_) => "64-bit",
            Value::Bytes(_) => "length-delimited",
            Value::Fixed32(_) => "32-bit",
        }
    }
}

/// The largest field number protobuf allows.
pub const MAX_FIELD_NUMBER: u64 = (1 << 29) - 1;

/// A cursor over a protobuf-encoded message.
#[derive(Clone, Debug)]
pub struct Reader<'a> {
    data: &'a [u8],
    pos: usize,
}

impl<'a> Reader<'a> {
    /// Starts reading at the beginning of `data`.
    pub fn new(data: &'a [u8]) -> Self {
        Reader { data, pos: 0 }
    }

    /// Whether every byte has been consumed.
    pub fn is_empty(&self) -> bool {
        self.pos >= self.data.len()
    }

    /// Bytes left.
    pub fn remaining(&self) -> usize {
        self.data.len() - self.pos
    }

    /// Reads a base-128 varint of at most 10 bytes whose value fits in 64 bits.
    /// Non-canonical encodings (redundant `0x80` continuation bytes) are accepted.
    pub fn read_varint(&mut self) -> Result<u64> {
        let start = self.pos;
        let mut value = 0u64;
        for i in 0..10 {
            let Some(&b) = self.data.get(self.pos) else {
                bail!("truncated varint at byte {start}");
            };
            self.pos += 1;
            if i == 9 && b > 1 {
                bail!("varint at byte {start} overflows 64 bits");
            }
            value |= u64::from(b & 0x7f) << (7 * i);
            if b & 0x80 == 0 {
                return Ok(value);
            }
        }
        // Unreachable in practice: the tenth byte either ends the varint or fails the
        // overflow check above. Kept as an error rather than a panic.
        bail!("varint at byte {start} is longer than 10 bytes")
    }

    fn read_slice(&mut self, len: usize, what: &str) -> Result<&'a [u8]> {
        if len > self.remaining() {
            bail!("truncated {what} at byte {}: needs {len} bytes, {} left", self.pos, self.remaining());
        }
        let s = &self.data[self.pos..self.pos + len];
        self.pos += len;
        Ok(s)
    }

    /// Reads a little-endian 32-bit word.
    pub fn read_fixed32(&mut self) -> Result<u32> {
        let s = self.read_slice(4, "32-bit field")?;
        Ok(u32::from_le_bytes([s[0], s[1], s[2], s[3]]))
    }

    /// Reads a little-endian 64-bit word.
    pub fn read_fixed64(&mut self) -> Result<u64> {
        let s = self.read_slice(8, "64-bit field")?;
        let mut b = [0u8; 8];
        b.copy_from_slice(s);
        Ok(u64::from_le_bytes(b))
    }

    /// Reads the next field: `None` at the end of the message. Group wire types (3, 4),
    /// the invalid wire types 6 and 7, field number 0 and field numbers above 2^29 - 1 are
    /// errors, as are lengths reaching past the end of the buffer.
    pub fn next_field(&mut self) -> Result<Option<(u32, Value<'a>)>> {
        if self.is_empty() {
            return Ok(None);
        }
        let at = self.pos;
        let key = self.read_varint()?;
        let field = key >> 3;
        if field == 0 || field > MAX_FIELD_NUMBER {
            bail!("invalid field number {field} at byte {at}");
        }
        let field = field as u32;
        let value = match key & 7 {
            0 => Value::Varint(self.read_varint()?),
            1 => Value::Fixed64(self.read_fixed64()?),
            2 => {
                let len = self.read_varint()?;
                if len > self.remaining() as u64 {
                    bail!("field {field} at byte {at}: length {len} exceeds the {} bytes left", self.remaining());
                }
                Value::Bytes(self.read_slice(len as usize, "length-delimited field")?)
            }
            5 => Value::Fixed32(self.read_fixed32()?),
            3 | 4 => bail!("field {field} at byte {at}: group wire types are not supported"),
            w => bail!("field {field} at byte {at}: invalid wire type {w}"),
        };
        Ok(Some((field, value)))
    }
}

fn wrong_type(field: &str, expected: &str, got: &Value<'_>) -> DecodeError {
    DecodeError::new(format!("field {field}: expected a {expected} value, got {}", got.wire_name()))
}

fn varint(field: &str, v: Value<'_>) -> Result<u64> {
    match v {
        Value::Varint(x) => Ok(x),
        other => Err(wrong_type(field, "varint", &other)),
    }
}

/// protobuf `int64`: the varint's two's-complement bits.
fn int64(field: &str, v: Value<'_>) -> Result<i64> {
    Ok(varint(field, v)? as i64)
}

/// protobuf `int32` / enum: negative values are sign-extended to 10-byte varints; like every
/// protobuf parser this keeps the low 32 bits.
fn int32(field: &str, v: Value<'_>) -> Result<i32> {
    Ok(varint(field, v)? as i32)
}

fn bytes<'a>(field: &str, v: Value<'a>) -> Result<&'a [u8]> {
    match v {
        Value::Bytes(b) => Ok(b),
        other => Err(wrong_type(field, "length-delimited", &other)),
    }
}

fn string(field: &str, v: Value<'_>) -> Result<String> {
    let b = bytes(field, v)?;
    match std::str::from_utf8(b) {
        Ok(s) => Ok(s.to_owned()),
        Err(e) => bail!("field {field}: invalid UTF-8 ({e})"),
    }
}

fn float(field: &str, v: Value<'_>) -> Result<f32> {
    match v {
        Value::Fixed32(x) => Ok(f32::from_bits(x)),
        other => Err(wrong_type(field, "32-bit", &other)),
    }
}

/// Appends a repeated varint field: one unpacked entry or a packed run.
pub fn push_varints<T>(field: &str, v: Value<'_>, out: &mut Vec<T>, conv: impl Fn(u64) -> T) -> Result<()> {
    match v {
        Value::Varint(x) => out.push(conv(x)),
        Value::Bytes(b) => {
            let mut r = Reader::new(b);
            while !r.is_empty() {
                let x = r.read_varint().map_err(|e| e.context(format!("packed field {field}")))?;
                out.push(conv(x));
            }
        }
        other => return Err(wrong_type(field, "varint or packed", &other)),
    }
    Ok(())
}

/// Appends a repeated 32-bit field: one unpacked entry or a packed run (length a multiple
/// of 4).
pub fn push_fixed32<T>(field: &str, v: Value<'_>, out: &mut Vec<T>, conv: impl Fn(u32) -> T) -> Result<()> {
    match v {
        Value::Fixed32(x) => out.push(conv(x)),
        Value::Bytes(b) => {
            if b.len() % 4 != 0 {
                bail!("packed field {field}: length {} is not a multiple of 4", b.len());
            }
            out.extend(b.chunks_exact(4).map(|c| conv(u32::from_le_bytes([c[0], c[1], c[2], c[3]]))));
        }
        other => return Err(wrong_type(field, "32-bit or packed", &other)),
    }
    Ok(())
}

/// Appends a repeated 64-bit field: one unpacked entry or a packed run (length a multiple
/// of 8).
pub fn push_fixed64<T>(field: &str, v: Value<'_>, out: &mut Vec<T>, conv: impl Fn(u64) -> T) -> Result<()> {
    match v {
        Value::Fixed64(x) => out.push(conv(x)),
        Value::Bytes(b) => {
            if b.len() % 8 != 0 {
                bail!("packed field {field}: length {} is not a multiple of 8", b.len());
            }
            out.extend(b.chunks_exact(8).map(|c| {
                let mut a = [0u8; 8];
                a.copy_from_slice(c);
                conv(u64::from_le_bytes(a))
            }));
        }
        other => return Err(wrong_type(field, "64-bit or packed", &other)),
    }
    Ok(())
}

/// `OperatorSetIdProto`.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct OperatorSetId {
    /// Domain (`""` is ai.onnx).
    pub domain: String,
    /// Imported version.
    pub version: i64,
}

impl OperatorSetId {
    /// Decodes the message.
    pub fn decode(data: &[u8]) -> Result<Self> {
        let mut m = OperatorSetId::default();
        let mut r = Reader::new(data);
        while let Some((f, v)) = r.next_field()? {
            match f {
                1 => m.domain = string("domain", v)?,
                2 => m.version = int64("version", v)?,
                _ => {}
            }
        }
        Ok(m)
    }
}

/// `ModelProto` (only the fields the runner uses).
#[derive(Clone, Debug, Default, PartialEq)]
pub struct ModelProto {
    /// `ir_version` (1).
    pub ir_version: i64,
    /// `opset_import` (8).
    pub opset_import: Vec<OperatorSetId>,
    /// `graph` (7); the last occurrence wins.
    pub graph: Option<GraphProto>,
}

impl ModelProto {
    /// Decodes a serialised model.
    pub fn decode(data: &[u8]) -> Result<Self> {
        let mut m = ModelProto::default();
        let mut r = Reader::new(data);
        while let Some((f, v)) = r.next_field()? {
            match f {
                1 => m.ir_version = int64("ir_version", v)?,
                7 => m.graph = Some(GraphProto::decode(bytes("graph", v)?).map_err(|e| e.context("graph"))?),
                8 => {
                    let i = m.opset_import.len();
                    let o = OperatorSetId::decode(bytes("opset_import", v)?)
                        .map_err(|e| e.context(format!("opset_import[{i}]")))?;
                    m.opset_import.push(o);
                }
                _ => {}
            }
        }
        Ok(m)
    }
}

/// `GraphProto` (only the fields the runner uses; graph inputs and outputs keep their names).
#[derive(Clone, Debug, Default, PartialEq)]
pub struct GraphProto {
    /// `node` (1), in topological order.
    pub node: Vec<NodeProto>,
    /// `name` (2).
    pub name: String,
    /// `initializer` (5).
    pub initializer: Vec<TensorProto>,
    /// `input` (11): `ValueInfoProto.name` of each.
    pub input: Vec<String>,
    /// `output` (12): `ValueInfoProto.name` of each.
    pub output: Vec<String>,
}

fn value_info_name(data: &[u8]) -> Result<String> {
    let mut name = String::new();
    let mut r = Reader::new(data);
    while let Some((f, v)) = r.next_field()? {
        if f == 1 {
            name = string("name", v)?;
        }
    }
    Ok(name)
}

impl GraphProto {
    /// Decodes the message.
    pub fn decode(data: &[u8]) -> Result<Self> {
        let mut g = GraphProto::default();
        let mut r = Reader::new(data);
        while let Some((f, v)) = r.next_field()? {
            match f {
                1 => {
                    let i = g.node.len();
                    g.node.push(NodeProto::decode(bytes("node", v)?).map_err(|e| e.context(format!("node[{i}]")))?);
                }
                2 => g.name = string("name", v)?,
                5 => {
                    let i = g.initializer.len();
                    let t = TensorProto::decode(bytes("initializer", v)?)
                        .map_err(|e| e.context(format!("initializer[{i}]")))?;
                    g.initializer.push(t);
                }
                11 => {
                    let i = g.input.len();
                    g.input.push(value_info_name(bytes("input", v)?).map_err(|e| e.context(format!("input[{i}]")))?);
                }
                12 => {
                    let i = g.output.len();
                    g.output.push(value_info_name(bytes("output", v)?).map_err(|e| e.context(format!("output[{i}]")))?);
                }
                _ => {}
            }
        }
        Ok(g)
    }
}

/// `NodeProto`.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct NodeProto {
    /// `input` (1); `""` marks an omitted optional input.
    pub input: Vec<String>,
    /// `output` (2).
    pub output: Vec<String>,
    /// `name` (3).
    pub name: String,
    /// `op_type` (4).
    pub op_type: String,
    /// `domain` (7).
    pub domain: String,
    /// `attribute` (5).
    pub attribute: Vec<AttributeProto>,
}

impl NodeProto {
    /// Decodes the message.
    pub fn decode(data: &[u8]) -> Result<Self> {
        let mut n = NodeProto::default();
        let mut r = Reader::new(data);
        while let Some((f, v)) = r.next_field()? {
            match f {
                1 => n.input.push(string("input", v)?),
                2 => n.output.push(string("output", v)?),
                3 => n.name = string("name", v)?,
                4 => n.op_type = string("op_type", v)?,
                5 => {
                    let i = n.attribute.len();
                    let a = AttributeProto::decode(bytes("attribute", v)?)
                        .map_err(|e| e.context(format!("attribute[{i}]")))?;
                    n.attribute.push(a);
                }
                7 => n.domain = string("domain", v)?,
                _ => {}
            }
        }
        Ok(n)
    }

    /// Finds an attribute by name.
    pub fn attr(&self, name: &str) -> Option<&AttributeProto> {
        self.attribute.iter().find(|a| a.name == name)
    }
}

/// `AttributeProto.AttributeType` values.
pub mod attribute_type {
    /// Not set (IR < 3 or a malformed writer): inferred from the fields present.
    pub const UNDEFINED: i32 = 0;
    /// `f`.
    pub const FLOAT: i32 = 1;
    /// `i`.
    pub const INT: i32 = 2;
    /// `s`.
    pub const STRING: i32 = 3;
    /// `t`.
    pub const TENSOR: i32 = 4;
    /// `g`.
    pub const GRAPH: i32 = 5;
    /// `floats`.
    pub const FLOATS: i32 = 6;
    /// `ints`.
    pub const INTS: i32 = 7;
}

/// `AttributeProto` (subgraphs, strings lists and tensor lists are recognised but not kept).
#[derive(Clone, Debug, Default, PartialEq)]
pub struct AttributeProto {
    /// `name` (1).
    pub name: String,
    /// `f` (2).
    pub f: Option<f32>,
    /// `i` (3).
    pub i: Option<i64>,
    /// `s` (4).
    pub s: Option<Vec<u8>>,
    /// `t` (5).
    pub t: Option<TensorProto>,
    /// `floats` (7).
    pub floats: Vec<f32>,
    /// `ints` (8).
    pub ints: Vec<i64>,
    /// `type` (20), an [`attribute_type`] value.
    pub r#type: i32,
    /// Whether any field this decoder does not keep (g 6, strings 9, tensors 10, graphs 11,
    /// sparse tensors 22/23, type protos 14/15, ref_attr_name 21) was present.
    pub has_other: bool,
}

impl AttributeProto {
    /// Decodes the message.
    pub fn decode(data: &[u8]) -> Result<Self> {
        let mut a = AttributeProto::default();
        let mut r = Reader::new(data);
        while let Some((f, v)) = r.next_field()? {
            match f {
                1 => a.name = string("name", v)?,
                2 => a.f = Some(float("f", v)?),
                3 => a.i = Some(int64("i", v)?),
                4 => a.s = Some(bytes("s", v)?.to_vec()),
                5 => a.t = Some(TensorProto::decode(bytes("t", v)?).map_err(|e| e.context("t"))?),
                7 => push_fixed32("floats", v, &mut a.floats, f32::from_bits)?,
                8 => push_varints("ints", v, &mut a.ints, |x| x as i64)?,
                20 => a.r#type = int32("type", v)?,
                6 | 9 | 10 | 11 | 14 | 15 | 21 | 22 | 23 => a.has_other = true,
                _ => {}
            }
        }
        Ok(a)
    }

    /// The attribute type: `type` when set, else inferred from the single field present
    /// (`UNDEFINED` when that is ambiguous).
    pub fn kind(&self) -> i32 {
        use attribute_type::*;
        if self.r#type != UNDEFINED {
            return self.r#type;
        }
        let present = [
            (self.f.is_some(), FLOAT),
            (self.i.is_some(), INT),
            (self.s.is_some(), STRING),
            (self.t.is_some(), TENSOR),
            (!self.floats.is_empty(), FLOATS),
            (!self.ints.is_empty(), INTS),
            (self.has_other, -1),
        ];
        let mut set = present.iter().filter(|(p, _)| *p);
        match (set.next(), set.next()) {
            (Some(&(_, k)), None) if k >= 0 => k,
            _ => UNDEFINED,
        }
    }

    /// The value of an INT attribute, or an error naming the attribute's actual type.
    pub fn as_int(&self) -> std::result::Result<i64, String> {
        match self.kind() {
            attribute_type::INT => Ok(self.i.unwrap_or(0)),
            k => Err(format!("attribute '{}' is not an INT (type {})", self.name, attribute_type_name(k))),
        }
    }
}

/// A readable name for an `AttributeProto.AttributeType` value.
pub fn attribute_type_name(k: i32) -> String {
    let s = match k {
        0 => "UNDEFINED",
        1 => "FLOAT",
        2 => "INT",
        3 => "STRING",
        4 => "TENSOR",
        5 => "GRAPH",
        6 => "FLOATS",
        7 => "INTS",
        8 => "STRINGS",
        9 => "TENSORS",
        10 => "GRAPHS",
        11 => "SPARSE_TENSOR",
        12 => "SPARSE_TENSORS",
        13 => "TYPE_PROTO",
        14 => "TYPE_PROTOS",
        _ => return format!("{k}"),
    };
    s.to_string()
}

/// `TensorProto` (dense, in-message data only).
#[derive(Clone, Debug, Default, PartialEq)]
pub struct TensorProto {
    /// `dims` (1).
    pub dims: Vec<i64>,
    /// `data_type` (2), a `TensorProto.DataType` value.
    pub data_type: i32,
    /// `float_data` (4).
    pub float_data: Vec<f32>,
    /// `int32_data` (5).
    pub int32_data: Vec<i32>,
    /// Number of `string_data` (6) entries.
    pub string_data_len: usize,
    /// `int64_data` (7).
    pub int64_data: Vec<i64>,
    /// `name` (8).
    pub name: String,
    /// `raw_data` (9), `None` when absent.
    pub raw_data: Option<Vec<u8>>,
    /// `double_data` (10).
    pub double_data: Vec<f64>,
    /// `uint64_data` (11).
    pub uint64_data: Vec<u64>,
    /// Whether `segment` (3) was present.
    pub has_segment: bool,
    /// `data_location` (14): 1 = EXTERNAL.
    pub data_location: i32,
    /// Whether `external_data` (13) entries were present.
    pub has_external_data: bool,
}

impl TensorProto {
    /// Decodes the message (a `model.onnx` initializer, an attribute or a whole `.pb` file).
    pub fn decode(data: &[u8]) -> Result<Self> {
        let mut t = TensorProto::default();
        let mut r = Reader::new(data);
        while let Some((f, v)) = r.next_field()? {
            match f {
                1 => push_varints("dims", v, &mut t.dims, |x| x as i64)?,
                2 => t.data_type = int32("data_type", v)?,
                3 => {
                    bytes("segment", v)?;
                    t.has_segment = true;
                }
                4 => push_fixed32("float_data", v, &mut t.float_data, f32::from_bits)?,
                5 => push_varints("int32_data", v, &mut t.int32_data, |x| x as i32)?,
                6 => {
                    bytes("string_data", v)?;
                    t.string_data_len += 1;
                }
                7 => push_varints("int64_data", v, &mut t.int64_data, |x| x as i64)?,
                8 => t.name = string("name", v)?,
                9 => t.raw_data = Some(bytes("raw_data", v)?.to_vec()),
                10 => push_fixed64("double_data", v, &mut t.double_data, f64::from_bits)?,
                11 => push_varints("uint64_data", v, &mut t.uint64_data, |x| x)?,
                13 => {
                    bytes("external_data", v)?;
                    t.has_external_data = true;
                }
                14 => t.data_location = int32("data_location", v)?,
                _ => {}
            }
        }
        Ok(t)
    }

    /// The typed data fields that hold entries, by name.
    fn typed_fields(&self) -> Vec<(&'static str, usize)> {
        [
            ("float_data", self.float_data.len()),
            ("int32_data", self.int32_data.len()),
            ("string_data", self.string_data_len),
            ("int64_data", self.int64_data.len()),
            ("double_data", self.double_data.len()),
            ("uint64_data", self.uint64_data.len()),
        ]
        .into_iter()
        .filter(|(_, n)| *n > 0)
        .collect()
    }

    /// The shape as `usize` dimensions and the element count. Negative dimensions and
    /// element counts that overflow `usize` are errors.
    pub fn shape(&self) -> Result<(Vec<usize>, usize)> {
        let mut shape = Vec::with_capacity(self.dims.len());
        let mut n = 1usize;
        for (i, &d) in self.dims.iter().enumerate() {
            let Ok(d) = usize::try_from(d) else {
                bail!("dims[{i}] = {d} is negative or too large");
            };
            n = match n.checked_mul(d) {
                Some(n) => n,
                None => bail!("the element count of dims {:?} overflows", self.dims),
            };
            shape.push(d);
        }
        Ok((shape, n))
    }

    /// Converts to an owned tensor in the ONNX raw serialisation (little endian, sub-byte
    /// types packed: 4-bit two per byte low nibble first, 2-bit four per byte, 6-bit as an
    /// LSB-first bit stream).
    ///
    /// * `raw_data` is used as is; its length must be `dtype.byte_len(n)`.
    /// * Otherwise the typed field for the type: `float_data` for f32; `int32_data` for
    ///   every other type: one element per entry for 8/16/32-bit types (f16, bf16, float8
    ///   and e8m0 as bit patterns; 8/16-bit entries may be stored signed or unsigned), one
    ///   packed byte per entry for 4-bit and 2-bit types, one element (bits 0..5) per entry
    ///   for 6-bit types. Padding bits of the last byte are zeroed.
    ///
    /// Errors: unknown / unsupported data types, negative dims, overflowing element counts,
    /// tensors over [`MAX_TENSOR_BYTES`], external data or segments, data in more than one
    /// field or in a field that does not belong to the type, entry counts that do not
    /// match the shape (checked before anything is allocated), out-of-range entries.
    pub fn to_tensor(&self) -> Result<Tensor> {
        let Some(dtype) = DataType::from_onnx(i64::from(self.data_type)) else {
            bail!("unsupported data type {} ({})", self.data_type, onnx_type_name(self.data_type));
        };
        let (shape, n) = self.shape()?;
        let Some(bytes) = dtype.byte_len(n) else {
            bail!("the byte size of dims {:?} of {dtype} overflows", self.dims);
        };
        if bytes > MAX_TENSOR_BYTES {
            bail!("tensor of {bytes} bytes exceeds the {MAX_TENSOR_BYTES}-byte limit");
        }
        if self.data_location == 1 || self.has_external_data {
            bail!("external data is not supported");
        }
        if self.has_segment {
            bail!("segmented tensors are not supported");
        }
        let typed = self.typed_fields();
        if let Some(raw) = &self.raw_data {
            if let Some((field, _)) = typed.first() {
                bail!("both raw_data and {field} hold data");
            }
            if raw.len() != bytes {
                bail!("raw_data has {} bytes; {n} {dtype} elements (dims {:?}) need {bytes}", raw.len(), self.dims);
            }
            return Ok(Tensor { dtype, shape, data: raw.clone() });
        }
        let field = if dtype == DataType::F32 { "float_data" } else { "int32_data" };
        if let Some((other, _)) = typed.iter().find(|(f, _)| *f != field) {
            bail!("{other} holds data, but a {dtype} tensor stores its elements in {field} or raw_data");
        }
        let bits = dtype.bits();
        let entries = if dtype == DataType::F32 { self.float_data.len() } else { self.int32_data.len() };
        // Entries expected: one per element, except 4-bit and 2-bit types (one packed byte each).
        let expected = if bits == 4 || bits == 2 { bytes } else { n };
        if entries != expected {
            let unit = if bits == 4 || bits == 2 { "packed bytes" } else { "elements" };
            bail!("{field} has {entries} entries; {n} {dtype} elements (dims {:?}) need {expected} {unit}", self.dims);
        }
        // `entries == expected` bounds the allocation by the message size.
        let mut data = vec![0u8; bytes];
        if dtype == DataType::F32 {
            for (chunk, v) in data.chunks_exact_mut(4).zip(&self.float_data) {
                chunk.copy_from_slice(&v.to_le_bytes());
            }
            return Ok(Tensor { dtype, shape, data });
        }
        let (lo, hi): (i64, i64) = match bits {
            32 => (i64::from(i32::MIN), i64::from(i32::MAX)),
            16 | 8 => (-(1 << (bits - 1)), (1 << bits) - 1),
            4 | 2 => (-128, 255),
            _ => (0, (1 << bits) - 1),
        };
        for (i, &v) in self.int32_data.iter().enumerate() {
            let v = i64::from(v);
            if v < lo || v > hi {
                bail!("int32_data[{i}] = {v} is out of range for a {dtype} tensor ({lo}..={hi})");
            }
            if bits == 4 || bits == 2 {
                data[i] = v as u8;
            } else {
                packing::set(dtype, &mut data, i, v as u32);
            }
        }
        packing::zero_padding(dtype, &mut data, n);
        Ok(Tensor { dtype, shape, data })
    }
}

/// The ONNX spelling of a `TensorProto.DataType` value, for error messages.
pub fn onnx_type_name(t: i32) -> &'static str {
    match t {
        0 => "UNDEFINED",
        1 => "FLOAT",
        2 => "UINT8",
        3 => "INT8",
        4 => "UINT16",
        5 => "INT16",
        6 => "INT32",
        7 => "INT64",
        8 => "STRING",
        9 => "BOOL",
        10 => "FLOAT16",
        11 => "DOUBLE",
        12 => "UINT32",
        13 => "UINT64",
        14 => "COMPLEX64",
        15 => "COMPLEX128",
        16 => "BFLOAT16",
        17 => "FLOAT8E4M3FN",
        18 => "FLOAT8E4M3FNUZ",
        19 => "FLOAT8E5M2",
        20 => "FLOAT8E5M2FNUZ",
        21 => "UINT4",
        22 => "INT4",
        23 => "FLOAT4E2M1",
        24 => "FLOAT8E8M0",
        25 => "UINT2",
        26 => "INT2",
        27 => "FLOAT6E2M3",
        28 => "FLOAT6E3M2",
        _ => "unknown",
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    // ---- hand encoders ----

    fn varint(mut v: u64) -> Vec<u8> {
        let mut out = Vec::new();
        loop {
            let b = (v & 0x7f) as u8;
            v >>= 7;
            if v == 0 {
                out.push(b);
                return out;
            }
            out.push(b | 0x80);
        }
    }

    fn key(field: u32, wire: u8) -> Vec<u8> {
        varint(u64::from(field) << 3 | u64::from(wire))
    }

    fn f_varint(field: u32, v: u64) -> Vec<u8> {
        [key(field, 0), varint(v)].concat()
    }

    fn f_bytes(field: u32, b: &[u8]) -> Vec<u8> {
        [key(field, 2), varint(b.len() as u64), b.to_vec()].concat()
    }

    fn f_fixed32(field: u32, v: u32) -> Vec<u8> {
        [key(field, 5), v.to_le_bytes().to_vec()].concat()
    }

    fn packed_varints(field: u32, vs: &[i64]) -> Vec<u8> {
        let body: Vec<u8> = vs.iter().flat_map(|&v| varint(v as u64)).collect();
        f_bytes(field, &body)
    }

    fn tensor(dtype: i32, dims: &[i64], rest: &[Vec<u8>]) -> Vec<u8> {
        let mut m = packed_varints(1, dims);
        m.extend(f_varint(2, dtype as u64));
        for r in rest {
            m.extend_from_slice(r);
        }
        m
    }

    fn read_varint(b: &[u8]) -> Result<u64> {
        Reader::new(b).read_varint()
    }

    // ---- wire format ----

    #[test]
    fn varint_edge_cases() {
        assert_eq!(read_varint(&[0x00]), Ok(0));
        assert_eq!(read_varint(&[0x01]), Ok(1));
        assert_eq!(read_varint(&[0x7f]), Ok(127));
        assert_eq!(read_varint(&[0x80, 0x01]), Ok(128));
        assert_eq!(read_varint(&[0xac, 0x02]), Ok(300));
        assert_eq!(read_varint(&[0xff, 0xff, 0xff, 0xff, 0x0f]), Ok(u64::from(u32::MAX)));
        let max = [0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0x01];
        assert_eq!(read_varint(&max), Ok(u64::MAX));
        assert_eq!(varint(u64::MAX), max);
        // Non-canonical (padded) encodings are accepted.
        assert_eq!(read_varint(&[0x80, 0x00]), Ok(0));
        assert_eq!(read_varint(&[0x81, 0x80, 0x80, 0x00]), Ok(1));
        // -1 as an int32 / int64 is a 10-byte varint.
        assert_eq!(int32("x", Value::Varint(read_varint(&max).unwrap())), Ok(-1));
        assert_eq!(int64("x", Value::Varint(read_varint(&max).unwrap())), Ok(-1));
        // Errors: empty, truncated, 65+ bits, 11 bytes.
        assert!(read_varint(&[]).is_err());
        assert!(read_varint(&[0x80]).is_err());
        assert!(read_varint(&[0xff, 0xff, 0xff]).is_err());
        let mut over = max;
        over[9] = 0x02;
        assert!(read_varint(&over).is_err());
        assert!(read_varint(&[0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x00]).is_err());
        // The reader stops right after the varint.
        let mut r = Reader::new(&[0xac, 0x02, 0x05]);
        assert_eq!(r.read_varint(), Ok(300));
        assert_eq!(r.remaining(), 1);
    }

    #[test]
    fn fields_and_wire_types() {
        let mut msg = f_varint(1, 150);
        msg.extend([key(2, 1), 7u64.to_le_bytes().to_vec()].concat());
        msg.extend(f_bytes(3, b"abc"));
        msg.extend(f_fixed32(4, 0xdead_beef));
        msg.extend(f_varint(MAX_FIELD_NUMBER as u32, 1));
        let mut r = Reader::new(&msg);
        assert_eq!(r.next_field(), Ok(Some((1, Value::Varint(150)))));
        assert_eq!(r.next_field(), Ok(Some((2, Value::Fixed64(7)))));
        assert_eq!(r.next_field(), Ok(Some((3, Value::Bytes(b"abc")))));
        assert_eq!(r.next_field(), Ok(Some((4, Value::Fixed32(0xdead_beef)))));
        assert_eq!(r.next_field(), Ok(Some((MAX_FIELD_NUMBER as u32, Value::Varint(1)))));
        assert_eq!(r.next_field(), Ok(None));

        let first = |b: &[u8]| Reader::new(b).next_field().map(|f| f.map(|(n, _)| n));
        assert!(first(&[0x00, 0x01]).is_err(), "field number 0");
        assert!(first(&varint((MAX_FIELD_NUMBER + 1) << 3)).is_err(), "field number too large");
        for wire in [3u8, 4, 6, 7] {
            assert!(first(&[(1 << 3) | wire, 0]).is_err(), "wire type {wire}");
        }
        assert!(first(&[0x08]).is_err(), "varint value missing");
        assert!(first(&[0x09, 1, 2, 3]).is_err(), "truncated fixed64");
        assert!(first(&[0x0d, 1, 2, 3]).is_err(), "truncated fixed32");
        assert!(first(&[0x0a, 0x04, 1, 2, 3]).is_err(), "length past the end");
        assert!(first(&[0x0a]).is_err(), "length missing");
        // Lengths that overflow usize / u64 arithmetic are errors, not panics.
        assert!(first(&[&[0x0a][..], &varint(u64::MAX)].concat()).is_err());
        assert!(first(&[&[0x0a][..], &varint(u64::MAX - 2), &[1, 2, 3]].concat()).is_err());
        assert!(first(&[&[0x0a][..], &varint(1 << 62)].concat()).is_err());
    }

    #[test]
    fn packed_and_unpacked_repeated_fields() {
        let dims = [3i64, 0, 5, 1 << 40];
        let packed = packed_varints(1, &dims);
        let unpacked: Vec<u8> = dims.iter().flat_map(|&d| f_varint(1, d as u64)).collect();
        let mixed = [f_varint(1, 3), packed_varints(1, &[0, 5]), f_varint(1, 1 << 40)].concat();
        for m in [packed, unpacked, mixed] {
            assert_eq!(TensorProto::decode(&m).unwrap().dims, dims);
        }
        // Negative int32_data entries, packed (10-byte varints) and unpacked.
        let body: Vec<u8> = [-5i64, 7].iter().flat_map(|&v| varint(v as u64)).collect();
        let t = TensorProto::decode(&[f_bytes(5, &body), f_varint(5, -1i64 as u64)].concat()).unwrap();
        assert_eq!(t.int32_data, [-5, 7, -1]);
        // float_data: packed and unpacked; a packed length that is not a multiple of 4 fails.
        let fl: Vec<u8> = [1.5f32, -2.0].iter().flat_map(|v| v.to_le_bytes()).collect();
        let t = TensorProto::decode(&[f_bytes(4, &fl), f_fixed32(4, 0.25f32.to_bits())].concat()).unwrap();
        assert_eq!(t.float_data, [1.5, -2.0, 0.25]);
        assert!(TensorProto::decode(&f_bytes(4, &[0, 0, 0])).is_err());
        assert!(TensorProto::decode(&f_bytes(10, &[0; 12])).is_err());
        // A truncated varint inside a packed run fails.
        assert!(TensorProto::decode(&f_bytes(1, &[0x05, 0x80])).is_err());
        // Wrong wire type for a known field fails.
        assert!(TensorProto::decode(&f_fixed32(1, 3)).is_err());
        assert!(TensorProto::decode(&f_varint(8, 3)).is_err());
        assert!(TensorProto::decode(&f_bytes(2, &[1])).is_err());
        // Unknown fields of every wire type are skipped.
        let mut m = tensor(2, &[2], &[f_bytes(9, &[7, 9])]);
        m.extend(f_varint(1000, 1));
        m.extend([key(1001, 1), vec![0; 8]].concat());
        m.extend(f_bytes(1002, b"zz"));
        m.extend(f_fixed32(1003, 0));
        let t = TensorProto::decode(&m).unwrap().to_tensor().unwrap();
        assert_eq!((t.dtype, t.shape, t.data), (DataType::U8, vec![2], vec![7, 9]));
    }

    #[test]
    fn invalid_utf8_is_an_error() {
        assert!(TensorProto::decode(&f_bytes(8, &[0xff, 0xfe])).is_err());
        assert!(NodeProto::decode(&f_bytes(4, &[0xc0])).is_err());
    }

    // ---- TensorProto conversion ----

    fn convert(dtype: DataType, dims: &[i64], int32: &[i64]) -> Result<Tensor> {
        TensorProto::decode(&tensor(dtype.onnx(), dims, &[packed_varints(5, int32)]))?.to_tensor()
    }

    fn ints(t: &Tensor) -> Vec<i64> {
        (0..t.len()).map(|i| packing::get_int(t.dtype, &t.data, i)).collect()
    }

    #[test]
    fn typed_sub_byte_fields() {
        // The committed test_quantizelinear_int4 / int2 outputs (numpy_helper.to_array values).
        let t = convert(DataType::I4, &[3, 4], &[33, 83, 168, 67, 84, 117]).unwrap();
        assert_eq!(t.shape, [3, 4]);
        assert_eq!(t.data, [33, 83, 168, 67, 84, 117]);
        assert_eq!(ints(&t), [1, 2, 3, 5, -8, -6, 3, 4, 4, 5, 5, 7]);
        let t = convert(DataType::I2, &[3, 4], &[84, 79, 188]).unwrap();
        assert_eq!(ints(&t), [0, 1, 1, 1, -1, -1, 0, 1, 0, -1, -1, -2]);
        let t = convert(DataType::U2, &[3], &[0]).unwrap();
        assert_eq!(ints(&t), [0, 0, 0]);
        // test_dequantizelinear_float4e2m1 input 0: [0, 1, -1, 1.5, -4].
        let t = convert(DataType::E2M1, &[5], &[32, 58, 14]).unwrap();
        let f = qdq_ref::float::E2M1;
        let v: Vec<f64> = (0..5).map(|i| f.decode(packing::get(t.dtype, &t.data, i))).collect();
        assert_eq!(v, [0.0, 1.0, -1.0, 1.5, -4.0]);
        // Odd element count: the unused high nibble is zeroed.
        let t = convert(DataType::U4, &[3], &[0x21, 0xf3]).unwrap();
        assert_eq!(t.data, [0x21, 0x03]);
        // Packed bytes may be stored signed.
        assert_eq!(convert(DataType::U4, &[2], &[-1]).unwrap().data, [0xff]);
        // float6: one element per entry, packed on conversion (helper.make_tensor vs
        // numpy_helper.from_array raw_data, onnx 1.23.2): [1, -2, 0.5, 3, 0.25].
        let t = convert(DataType::E2M3, &[5], &[8, 48, 4, 20, 2]).unwrap();
        assert_eq!(t.data, [8, 76, 80, 2]);
        let t = convert(DataType::E3M2, &[5], &[12, 48, 8, 18, 4]).unwrap();
        assert_eq!(t.data, [12, 140, 72, 4]);
        let f = qdq_ref::float::E3M2;
        let v: Vec<f64> = (0..5).map(|i| f.decode(packing::get(t.dtype, &t.data, i))).collect();
        assert_eq!(v, [1.0, -2.0, 0.5, 3.0, 0.25]);
        // Entry counts: packed bytes for 4/2-bit, elements for 6-bit.
        assert!(convert(DataType::I4, &[3, 4], &[1; 12]).is_err());
        assert!(convert(DataType::I2, &[5], &[1]).is_err());
        assert!(convert(DataType::E2M3, &[5], &[8, 76, 80, 2]).is_err());
        // Out-of-range entries.
        assert!(convert(DataType::E2M3, &[1], &[64]).is_err());
        assert!(convert(DataType::I4, &[2], &[256]).is_err());
    }

    #[test]
    fn typed_wide_fields() {
        let t = convert(DataType::I16, &[3], &[4, -5, 32767]).unwrap();
        assert_eq!(t.data, [4, 0, 0xfb, 0xff, 0xff, 0x7f]);
        assert_eq!(convert(DataType::U16, &[1], &[65535]).unwrap().data, [0xff, 0xff]);
        assert!(convert(DataType::U16, &[1], &[65536]).is_err());
        assert!(convert(DataType::I8, &[1], &[-129]).is_err());
        let t = convert(DataType::F16, &[2], &[0x3c00, 0xfc00]).unwrap();
        assert_eq!(t.data, [0x00, 0x3c, 0x00, 0xfc]);
        let t = convert(DataType::E4M3Fn, &[5], &[0, 48, 56, 126, 108]).unwrap();
        assert_eq!(t.data, [0, 48, 56, 126, 108]);
        let t = convert(DataType::I32, &[2], &[i64::from(i32::MIN), -1]).unwrap();
        assert_eq!(t.data, [0, 0, 0, 0x80, 0xff, 0xff, 0xff, 0xff]);
        let fl: Vec<u8> = [1.5f32, -0.0].iter().flat_map(|v| v.to_le_bytes()).collect();
        let t = TensorProto::decode(&tensor(1, &[2], &[f_bytes(4, &fl)])).unwrap().to_tensor().unwrap();
        assert_eq!(t.data, fl);
        // A scalar: no dims, one element.
        let t = TensorProto::decode(&tensor(2, &[], &[f_bytes(9, &[42])])).unwrap().to_tensor().unwrap();
        assert_eq!((t.shape.len(), t.data), (0, vec![42]));
    }

    #[test]
    fn tensor_rejections() {
        let conv = |m: Vec<u8>| TensorProto::decode(&m).and_then(|t| t.to_tensor());
        // Unsupported and unknown data types.
        assert!(conv(tensor(7, &[1], &[packed_varints(7, &[1])])).is_err());
        assert!(conv(tensor(11, &[0], &[])).is_err());
        assert!(conv(tensor(0, &[0], &[])).is_err());
        assert!(conv(tensor(99, &[0], &[])).is_err());
        // Negative dims, overflowing element and byte counts, over-large tensors: all
        // rejected before any allocation.
        assert!(conv(tensor(2, &[-1], &[])).is_err());
        assert!(conv(tensor(2, &[1 << 32, 1 << 32, 1 << 32], &[])).is_err());
        assert!(conv(tensor(1, &[1 << 62], &[f_bytes(9, &[0; 4])])).is_err());
        assert!(conv(tensor(2, &[(1 << 30) + 1], &[f_bytes(9, &[0; 4])])).is_err());
        assert!(conv(tensor(2, &[1 << 40], &[packed_varints(5, &[1])])).is_err());
        // Zero elements with a huge dimension is fine.
        let t = conv(tensor(1, &[0, 1 << 40], &[])).unwrap();
        assert!(t.data.is_empty());
        // raw_data length must match; raw and typed data together are rejected.
        assert!(conv(tensor(1, &[2], &[f_bytes(9, &[0; 7])])).is_err());
        assert!(conv(tensor(2, &[1], &[f_bytes(9, &[1]), packed_varints(5, &[1])])).is_err());
        // A typed field that does not belong to the type.
        assert!(conv(tensor(2, &[1], &[f_fixed32(4, 0)])).is_err());
        assert!(conv(tensor(1, &[1], &[packed_varints(5, &[0])])).is_err());
        assert!(conv(tensor(1, &[1], &[f_fixed32(4, 0), f_varint(7, 1)])).is_err());
        // Missing data.
        assert!(conv(tensor(1, &[1], &[])).is_err());
        // External data and segments.
        assert!(conv(tensor(2, &[1], &[f_bytes(9, &[1]), f_varint(14, 1)])).is_err());
        assert!(conv(tensor(2, &[1], &[f_bytes(9, &[1]), f_bytes(13, &[])])).is_err());
        assert!(conv(tensor(2, &[1], &[f_bytes(9, &[1]), f_bytes(3, &[])])).is_err());
    }

    // ---- messages ----

    fn int_attr(name: &str, v: i64) -> Vec<u8> {
        [f_bytes(1, name.as_bytes()), f_varint(3, v as u64), f_varint(20, 2)].concat()
    }

    #[test]
    fn model_decoding() {
        let node = [
            f_bytes(1, b"x"),
            f_bytes(1, b""),
            f_bytes(2, b"y"),
            f_bytes(3, b"n0"),
            f_bytes(4, b"QuantizeLinear"),
            f_bytes(5, &int_attr("axis", -1)),
            f_bytes(5, &[f_bytes(1, b"f"), f_fixed32(2, 1.5f32.to_bits()), f_varint(20, 1)].concat()),
            f_bytes(7, b"com.microsoft"),
        ]
        .concat();
        let init = tensor(1, &[], &[f_bytes(8, b"s"), f_bytes(9, &2.0f32.to_le_bytes())]);
        let graph = [
            f_bytes(1, &node),
            f_bytes(2, b"g"),
            f_bytes(5, &init),
            f_bytes(11, &f_bytes(1, b"x")),
            f_bytes(12, &[f_bytes(1, b"y"), f_bytes(2, b"type ignored")].concat()),
        ]
        .concat();
        let model = [
            f_varint(1, 10),
            f_bytes(8, &[f_bytes(1, b""), f_varint(2, 21)].concat()),
            f_bytes(8, &[f_bytes(1, b"com.microsoft"), f_varint(2, 1)].concat()),
            f_bytes(7, &graph),
            f_bytes(2, b"producer (skipped)"),
        ]
        .concat();
        let m = ModelProto::decode(&model).unwrap();
        assert_eq!(m.ir_version, 10);
        assert_eq!(m.opset_import[0], OperatorSetId { domain: String::new(), version: 21 });
        assert_eq!(m.opset_import[1].domain, "com.microsoft");
        let g = m.graph.unwrap();
        assert_eq!(
            (g.name.as_str(), g.input.as_slice(), g.output.as_slice()),
            ("g", &["x".to_string()][..], &["y".to_string()][..])
        );
        assert_eq!(g.initializer[0].name, "s");
        let n = &g.node[0];
        assert_eq!(n.input, ["x", ""]);
        assert_eq!((n.op_type.as_str(), n.domain.as_str(), n.name.as_str()), ("QuantizeLinear", "com.microsoft", "n0"));
        assert_eq!(n.attr("axis").unwrap().as_int(), Ok(-1));
        assert!(n.attr("f").unwrap().as_int().is_err());
        assert_eq!(n.attr("f").unwrap().f, Some(1.5));
        // Errors carry the path of the failing field.
        let bad = [f_bytes(7, &f_bytes(1, &[f_bytes(5, &[0x18])].concat()))].concat();
        let e = ModelProto::decode(&bad).unwrap_err();
        assert!(e.message().starts_with("graph: node[0]: attribute[0]:"), "{e}");
    }

    #[test]
    fn attribute_type_inference() {
        let a = AttributeProto::decode(&[f_bytes(1, b"k"), f_varint(3, 0)].concat()).unwrap();
        assert_eq!(a.kind(), attribute_type::INT);
        assert_eq!(a.as_int(), Ok(0));
        let a = AttributeProto::decode(&[f_bytes(1, b"k"), packed_varints(8, &[1, 2])].concat()).unwrap();
        assert_eq!((a.kind(), a.ints.as_slice()), (attribute_type::INTS, &[1i64, 2][..]));
        assert!(a.as_int().is_err());
        let a = AttributeProto::decode(&[f_bytes(1, b"k"), f_varint(3, 0), f_fixed32(2, 0)].concat()).unwrap();
        assert_eq!(a.kind(), attribute_type::UNDEFINED);
        let a = AttributeProto::decode(&[f_bytes(1, b"k"), f_bytes(6, b"")].concat()).unwrap();
        assert!(a.as_int().is_err());
        // A declared INT with no `i` field is 0 (proto2 default).
        let a = AttributeProto::decode(&[f_bytes(1, b"k"), f_varint(20, 2)].concat()).unwrap();
        assert_eq!(a.as_int(), Ok(0));
    }

    // ---- garbage ----

    struct XorShift(u64);

    impl XorShift {
        fn next(&mut self) -> u64 {
            self.0 ^= self.0 << 13;
            self.0 ^= self.0 >> 7;
            self.0 ^= self.0 << 17;
            self.0
        }
    }

    fn decode_everything(b: &[u8]) -> bool {
        let model = ModelProto::decode(b);
        let tensor = TensorProto::decode(b);
        if let Ok(t) = &tensor {
            let _ = t.to_tensor();
        }
        let _ = NodeProto::decode(b);
        let _ = AttributeProto::decode(b);
        let _ = GraphProto::decode(b);
        model.is_err() && tensor.is_err()
    }

    #[test]
    fn random_garbage_never_panics() {
        let mut rng = XorShift(0x9e37_79b9_7f4a_7c15);
        let mut errors = 0;
        let n = 5000;
        for _ in 0..n {
            let len = (rng.next() % 64) as usize;
            let bytes: Vec<u8> = (0..len).map(|_| rng.next() as u8).collect();
            errors += usize::from(decode_everything(&bytes));
        }
        // Almost every random string hits an invalid wire type, field number 0 or a
        // truncation somewhere.
        assert!(errors > n * 3 / 4, "only {errors} of {n} random strings were rejected");
        // Structured garbage: plausible keys followed by random varints and lengths.
        for _ in 0..n {
            let mut bytes = Vec::new();
            for _ in 0..(rng.next() % 6) {
                let field = 1 + (rng.next() % 16) as u32;
                match rng.next() % 3 {
                    0 => bytes.extend(f_varint(field, rng.next() >> (rng.next() % 64))),
                    1 => {
                        bytes.extend(key(field, 2));
                        bytes.extend(varint(rng.next() >> (rng.next() % 64)));
                    }
                    _ => bytes.extend(f_bytes(field, &rng.next().to_le_bytes()[..(rng.next() % 9) as usize])),
                }
            }
            decode_everything(&bytes);
        }
    }

    #[test]
    fn truncated_and_mutated_committed_files() {
        let dir = crate::default_node_dir();
        let mut files: Vec<std::path::PathBuf> = Vec::new();
        for test in ["test_dynamicquantizelinear_expanded", "test_quantizelinear_int4", "test_dequantizelinear_e4m3fn"]
        {
            files.push(dir.join(test).join("model.onnx"));
            for e in std::fs::read_dir(dir.join(test).join("test_data_set_0")).unwrap() {
                files.push(e.unwrap().path());
            }
        }
        let mut rng = XorShift(12345);
        for path in files {
            let full = std::fs::read(&path).unwrap();
            // Offsets where a top-level field ends: only those prefixes are valid messages.
            let mut ends = vec![0];
            let mut r = Reader::new(&full);
            while r.next_field().unwrap().is_some() {
                ends.push(full.len() - r.remaining());
            }
            for cut in 0..full.len() {
                let prefix = &full[..cut];
                let valid = ends.contains(&cut);
                let ok = if path.extension().is_some_and(|e| e == "onnx") {
                    ModelProto::decode(prefix).is_ok()
                } else {
                    TensorProto::decode(prefix).is_ok()
                };
                assert_eq!(ok, valid, "{} cut at {cut}", path.display());
                decode_everything(prefix);
            }
            for _ in 0..300 {
                let mut m = full.clone();
                for _ in 0..1 + rng.next() % 3 {
                    let i = (rng.next() as usize) % m.len();
                    m[i] = rng.next() as u8;
                }
                decode_everything(&m);
            }
        }
    }
}
