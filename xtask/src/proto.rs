//! The ONNX messages the conformance runner reads, declared with `prost`'s derive: field
//! numbers and wire types follow `onnx.proto` (proto2), and no protoc or build script is
//! involved. Only the fields a reader of node-test models needs are declared; prost skips
//! the others.
//!
//! Untrusted bytes go through [`decode`], which refuses inputs over [`MAX_MESSAGE_BYTES`]
//! before parsing. prost rejects truncation, varints past 64 bits, lengths past the end,
//! field number 0, invalid wire types, a known field with the wrong wire type and invalid
//! UTF-8 in strings; every failure is a [`DecodeError`], never a panic. Memory stays a
//! constant multiple of the input size, though not a small one: the worst case, a run of
//! empty repeated sub-messages (two bytes each on the wire), costs a few hundred bytes of
//! structs per input byte. The declared schema has no cycles, so nesting is at most seven
//! messages deep whatever the input: subgraphs (`AttributeProto.g`, `graphs`) and other
//! attribute payloads the runner never reads are kept as their serialised bytes, and
//! [`TypeProto`] declares only the tensor case. Unknown groups are skipped under prost's
//! recursion limit.
//!
//! proto2 `optional` scalars whose default means "absent" (`data_type`, `name`, `version`,
//! ...) are plain fields; those whose presence matters (`AttributeProto.f`, `i`, `s`,
//! `TensorProto.raw_data`) are `Option`s. Repeated scalars are declared packed or unpacked
//! as `onnx.proto` does, which fixes the encoding; decoding accepts both forms.
//!
//! [`TensorProto::to_tensor`] checks the declared element count times the element size
//! against [`MAX_TENSOR_BYTES`] with checked arithmetic before allocating anything.

use std::fmt;

use prost::Message;
use qdq_ref::packing;
use qdq_ref::{DataType, Tensor};

/// The largest tensor (in serialised bytes) [`TensorProto::to_tensor`] accepts: 1 GiB.
pub const MAX_TENSOR_BYTES: usize = 1 << 30;

/// The largest serialised message [`decode`] accepts: one maximal tensor and 1 MiB for
/// everything else.
pub const MAX_MESSAGE_BYTES: usize = MAX_TENSOR_BYTES + (1 << 20);

/// The largest model file (`model.onnx`) the conformance runner decodes: 4 MiB. Node-test
/// models are a few hundred bytes (their data lives in separate tensor files), and a
/// decoded model can take a few hundred times its wire size (an empty repeated message is
/// two bytes on the wire), so this cap bounds a hostile model to about a gigabyte.
pub const MAX_MODEL_BYTES: usize = 4 << 20;

/// A decoding or conversion failure.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct DecodeError {
    message: String,
}

impl DecodeError {
    /// Builds an error.
    pub fn new(message: impl Into<String>) -> Self {
        DecodeError { message: message.into() }
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

/// prost's message names the failing field as `Message.field: ` pairs, innermost first.
impl From<prost::DecodeError> for DecodeError {
    fn from(e: prost::DecodeError) -> Self {
        DecodeError::new(e.to_string())
    }
}

/// Result of every decoding step.
pub type Result<T> = std::result::Result<T, DecodeError>;

macro_rules! bail {
    ($($arg:tt)*) => {
        return Err(DecodeError::new(format!($($arg)*)))
    };
}

/// Decodes one message from untrusted bytes (a `model.onnx`, an `input_N.pb`), refusing
/// anything over [`MAX_MESSAGE_BYTES`] before parsing.
pub fn decode<M: Message + Default>(data: &[u8]) -> Result<M> {
    decode_limited(data, MAX_MESSAGE_BYTES)
}

/// [`decode`] with the size cap as a parameter.
pub fn decode_limited<M: Message + Default>(data: &[u8], max_bytes: usize) -> Result<M> {
    if data.len() > max_bytes {
        bail!("message of {} bytes exceeds the {max_bytes}-byte limit", data.len());
    }
    Ok(M::decode(data)?)
}

/// `OperatorSetIdProto`.
#[derive(Clone, PartialEq, Message)]
pub struct OperatorSetIdProto {
    /// `domain` (1); `""` is ai.onnx.
    #[prost(string, tag = "1")]
    pub domain: String,
    /// `version` (2).
    #[prost(int64, tag = "2")]
    pub version: i64,
}

/// `ModelProto`.
#[derive(Clone, PartialEq, Message)]
pub struct ModelProto {
    /// `ir_version` (1).
    #[prost(int64, tag = "1")]
    pub ir_version: i64,
    /// `producer_name` (2).
    #[prost(string, tag = "2")]
    pub producer_name: String,
    /// `graph` (7). Repeated occurrences merge, as protobuf specifies.
    #[prost(message, optional, tag = "7")]
    pub graph: Option<GraphProto>,
    /// `opset_import` (8).
    #[prost(message, repeated, tag = "8")]
    pub opset_import: Vec<OperatorSetIdProto>,
}

/// `GraphProto`.
#[derive(Clone, PartialEq, Message)]
pub struct GraphProto {
    /// `node` (1), in topological order.
    #[prost(message, repeated, tag = "1")]
    pub node: Vec<NodeProto>,
    /// `name` (2).
    #[prost(string, tag = "2")]
    pub name: String,
    /// `initializer` (5).
    #[prost(message, repeated, tag = "5")]
    pub initializer: Vec<TensorProto>,
    /// `input` (11).
    #[prost(message, repeated, tag = "11")]
    pub input: Vec<ValueInfoProto>,
    /// `output` (12).
    #[prost(message, repeated, tag = "12")]
    pub output: Vec<ValueInfoProto>,
}

/// `NodeProto`.
#[derive(Clone, PartialEq, Message)]
pub struct NodeProto {
    /// `input` (1); `""` marks an omitted optional input.
    #[prost(string, repeated, tag = "1")]
    pub input: Vec<String>,
    /// `output` (2).
    #[prost(string, repeated, tag = "2")]
    pub output: Vec<String>,
    /// `name` (3).
    #[prost(string, tag = "3")]
    pub name: String,
    /// `op_type` (4).
    #[prost(string, tag = "4")]
    pub op_type: String,
    /// `attribute` (5).
    #[prost(message, repeated, tag = "5")]
    pub attribute: Vec<AttributeProto>,
    /// `domain` (7).
    #[prost(string, tag = "7")]
    pub domain: String,
}

impl NodeProto {
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
    /// `strings`.
    pub const STRINGS: i32 = 8;
    /// `tensors`.
    pub const TENSORS: i32 = 9;
    /// `graphs`.
    pub const GRAPHS: i32 = 10;
    /// `sparse_tensor`.
    pub const SPARSE_TENSOR: i32 = 11;
    /// `sparse_tensors`.
    pub const SPARSE_TENSORS: i32 = 12;
    /// `tp`.
    pub const TYPE_PROTO: i32 = 13;
    /// `type_protos`.
    pub const TYPE_PROTOS: i32 = 14;
}

/// `AttributeProto`. Graphs, sparse tensors and type protos are kept as their serialised
/// messages (a length-delimited field is the same on the wire whether declared as `bytes`
/// or as a message): the runner never reads them, and not decoding subgraphs keeps the
/// schema acyclic.
#[derive(Clone, PartialEq, Message)]
pub struct AttributeProto {
    /// `name` (1).
    #[prost(string, tag = "1")]
    pub name: String,
    /// `f` (2).
    #[prost(float, optional, tag = "2")]
    pub f: Option<f32>,
    /// `i` (3).
    #[prost(int64, optional, tag = "3")]
    pub i: Option<i64>,
    /// `s` (4).
    #[prost(bytes = "vec", optional, tag = "4")]
    pub s: Option<Vec<u8>>,
    /// `t` (5).
    #[prost(message, optional, tag = "5")]
    pub t: Option<TensorProto>,
    /// `g` (6), a serialised `GraphProto`.
    #[prost(bytes = "vec", optional, tag = "6")]
    pub g: Option<Vec<u8>>,
    /// `floats` (7).
    #[prost(float, repeated, packed = "false", tag = "7")]
    pub floats: Vec<f32>,
    /// `ints` (8).
    #[prost(int64, repeated, packed = "false", tag = "8")]
    pub ints: Vec<i64>,
    /// `strings` (9).
    #[prost(bytes = "vec", repeated, tag = "9")]
    pub strings: Vec<Vec<u8>>,
    /// `tensors` (10).
    #[prost(message, repeated, tag = "10")]
    pub tensors: Vec<TensorProto>,
    /// `graphs` (11), serialised `GraphProto`s.
    #[prost(bytes = "vec", repeated, tag = "11")]
    pub graphs: Vec<Vec<u8>>,
    /// `tp` (14), a serialised `TypeProto`.
    #[prost(bytes = "vec", optional, tag = "14")]
    pub tp: Option<Vec<u8>>,
    /// `type_protos` (15), serialised `TypeProto`s.
    #[prost(bytes = "vec", repeated, tag = "15")]
    pub type_protos: Vec<Vec<u8>>,
    /// `type` (20), an [`attribute_type`] value.
    #[prost(int32, tag = "20")]
    pub r#type: i32,
    /// `sparse_tensor` (22), a serialised `SparseTensorProto`.
    #[prost(bytes = "vec", optional, tag = "22")]
    pub sparse_tensor: Option<Vec<u8>>,
    /// `sparse_tensors` (23), serialised `SparseTensorProto`s.
    #[prost(bytes = "vec", repeated, tag = "23")]
    pub sparse_tensors: Vec<Vec<u8>>,
}

impl AttributeProto {
    /// The attribute type: `type` when set, else inferred from the single value field
    /// present (`UNDEFINED` when none or several are).
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
            (self.g.is_some(), GRAPH),
            (!self.floats.is_empty(), FLOATS),
            (!self.ints.is_empty(), INTS),
            (!self.strings.is_empty(), STRINGS),
            (!self.tensors.is_empty(), TENSORS),
            (!self.graphs.is_empty(), GRAPHS),
            (self.sparse_tensor.is_some(), SPARSE_TENSOR),
            (!self.sparse_tensors.is_empty(), SPARSE_TENSORS),
            (self.tp.is_some(), TYPE_PROTO),
            (!self.type_protos.is_empty(), TYPE_PROTOS),
        ];
        let mut set = present.iter().filter(|(p, _)| *p);
        match (set.next(), set.next()) {
            (Some(&(_, k)), None) => k,
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

/// `ValueInfoProto`.
#[derive(Clone, PartialEq, Message)]
pub struct ValueInfoProto {
    /// `name` (1).
    #[prost(string, tag = "1")]
    pub name: String,
    /// `type` (2).
    #[prost(message, optional, tag = "2")]
    pub r#type: Option<TypeProto>,
}

/// `TypeProto`: only the `tensor_type` case (1) of its `value` oneof; sequence, map,
/// optional, sparse and opaque types are skipped, which keeps the schema acyclic.
#[derive(Clone, PartialEq, Message)]
pub struct TypeProto {
    /// `tensor_type` (1).
    #[prost(message, optional, tag = "1")]
    pub tensor_type: Option<type_proto::Tensor>,
}

/// Messages nested in `TypeProto`.
pub mod type_proto {
    /// `TypeProto.Tensor`.
    #[derive(Clone, PartialEq, prost::Message)]
    pub struct Tensor {
        /// `elem_type` (1), a `TensorProto.DataType` value.
        #[prost(int32, tag = "1")]
        pub elem_type: i32,
        /// `shape` (2); absent for a tensor of unknown rank.
        #[prost(message, optional, tag = "2")]
        pub shape: Option<super::TensorShapeProto>,
    }
}

/// `TensorShapeProto`.
#[derive(Clone, PartialEq, Message)]
pub struct TensorShapeProto {
    /// `dim` (1).
    #[prost(message, repeated, tag = "1")]
    pub dim: Vec<tensor_shape_proto::Dimension>,
}

/// Messages nested in `TensorShapeProto`.
pub mod tensor_shape_proto {
    /// `TensorShapeProto.Dimension`.
    #[derive(Clone, PartialEq, prost::Message)]
    pub struct Dimension {
        /// The `value` oneof: `dim_value` (1) or `dim_param` (2); `None` for an unknown
        /// dimension.
        #[prost(oneof = "dimension::Value", tags = "1, 2")]
        pub value: Option<dimension::Value>,
    }

    /// The oneof of `Dimension`.
    pub mod dimension {
        /// `TensorShapeProto.Dimension.value`.
        #[derive(Clone, PartialEq, prost::Oneof)]
        pub enum Value {
            /// `dim_value` (1).
            #[prost(int64, tag = "1")]
            DimValue(i64),
            /// `dim_param` (2), a symbolic dimension.
            #[prost(string, tag = "2")]
            DimParam(String),
        }
    }
}

/// `TensorProto` (dense).
#[derive(Clone, PartialEq, Message)]
pub struct TensorProto {
    /// `dims` (1).
    #[prost(int64, repeated, packed = "false", tag = "1")]
    pub dims: Vec<i64>,
    /// `data_type` (2), a `TensorProto.DataType` value.
    #[prost(int32, tag = "2")]
    pub data_type: i32,
    /// `segment` (3).
    #[prost(message, optional, tag = "3")]
    pub segment: Option<tensor_proto::Segment>,
    /// `float_data` (4).
    #[prost(float, repeated, tag = "4")]
    pub float_data: Vec<f32>,
    /// `int32_data` (5).
    #[prost(int32, repeated, tag = "5")]
    pub int32_data: Vec<i32>,
    /// `string_data` (6).
    #[prost(bytes = "vec", repeated, tag = "6")]
    pub string_data: Vec<Vec<u8>>,
    /// `int64_data` (7).
    #[prost(int64, repeated, tag = "7")]
    pub int64_data: Vec<i64>,
    /// `name` (8).
    #[prost(string, tag = "8")]
    pub name: String,
    /// `raw_data` (9), `None` when absent.
    #[prost(bytes = "vec", optional, tag = "9")]
    pub raw_data: Option<Vec<u8>>,
    /// `double_data` (10).
    #[prost(double, repeated, tag = "10")]
    pub double_data: Vec<f64>,
    /// `uint64_data` (11).
    #[prost(uint64, repeated, tag = "11")]
    pub uint64_data: Vec<u64>,
    /// `external_data` (13).
    #[prost(message, repeated, tag = "13")]
    pub external_data: Vec<StringStringEntryProto>,
    /// `data_location` (14), a [`tensor_proto::data_location`] value.
    #[prost(int32, tag = "14")]
    pub data_location: i32,
}

/// Messages and enums nested in `TensorProto`.
pub mod tensor_proto {
    /// `TensorProto.Segment`.
    #[derive(Clone, PartialEq, prost::Message)]
    pub struct Segment {
        /// `begin` (1).
        #[prost(int64, tag = "1")]
        pub begin: i64,
        /// `end` (2).
        #[prost(int64, tag = "2")]
        pub end: i64,
    }

    /// `TensorProto.DataLocation` values.
    pub mod data_location {
        /// The data is in the message.
        pub const DEFAULT: i32 = 0;
        /// The data is in an external file named by `external_data`.
        pub const EXTERNAL: i32 = 1;
    }
}

/// `StringStringEntryProto`.
#[derive(Clone, PartialEq, Message)]
pub struct StringStringEntryProto {
    /// `key` (1).
    #[prost(string, tag = "1")]
    pub key: String,
    /// `value` (2).
    #[prost(string, tag = "2")]
    pub value: String,
}

impl TensorProto {
    /// The typed data fields that hold entries, by name.
    fn typed_fields(&self) -> Vec<(&'static str, usize)> {
        [
            ("float_data", self.float_data.len()),
            ("int32_data", self.int32_data.len()),
            ("string_data", self.string_data.len()),
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
        if self.data_location == tensor_proto::data_location::EXTERNAL || !self.external_data.is_empty() {
            bail!("external data is not supported");
        }
        if self.segment.is_some() {
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
            return Ok(Tensor::new(dtype, shape, &raw.clone()).unwrap());
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
            return Ok(Tensor::new(dtype, shape, &data).unwrap());
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
        Ok(Tensor::new(dtype, shape, &data).unwrap())
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

    // ---- hand encoders, for the layouts and malformed inputs prost never writes ----

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

    fn tensor_proto(b: &[u8]) -> Result<TensorProto> {
        decode(b)
    }

    /// `OperatorSetIdProto.version` (an int64) encoded as the given varint bytes.
    fn version(varint_bytes: &[u8]) -> Result<i64> {
        decode::<OperatorSetIdProto>(&[&[0x10][..], varint_bytes].concat()).map(|o| o.version)
    }

    // ---- wire format ----

    #[test]
    fn varint_edge_cases() {
        assert_eq!(version(&[0x00]), Ok(0));
        assert_eq!(version(&[0x7f]), Ok(127));
        assert_eq!(version(&[0x80, 0x01]), Ok(128));
        assert_eq!(version(&[0xac, 0x02]), Ok(300));
        let max = [0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0x01];
        assert_eq!(varint(u64::MAX), max);
        // -1 as an int64 and as an int32 (data_type) is a 10-byte varint.
        assert_eq!(version(&max), Ok(-1));
        assert_eq!(tensor_proto(&[&[0x10][..], &max].concat()).map(|t| t.data_type), Ok(-1));
        // Non-canonical (padded) encodings are accepted.
        assert_eq!(version(&[0x80, 0x00]), Ok(0));
        assert_eq!(version(&[0x81, 0x80, 0x80, 0x00]), Ok(1));
        // Errors: missing, truncated, 65+ bits, 11 bytes.
        assert!(version(&[]).is_err());
        assert!(version(&[0x80]).is_err());
        assert!(version(&[0xff, 0xff, 0xff]).is_err());
        let mut over = max;
        over[9] = 0x02;
        assert!(version(&over).is_err());
        assert!(version(&[0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x00]).is_err());
    }

    #[test]
    fn fields_and_wire_types() {
        // Unknown fields of every wire type are skipped, groups included, at any field number.
        let mut msg = f_varint(1, 3);
        msg.extend(f_varint(1000, 150));
        msg.extend([key(1001, 1), 7u64.to_le_bytes().to_vec()].concat());
        msg.extend(f_bytes(1002, b"abc"));
        msg.extend(f_fixed32(1003, 0xdead_beef));
        msg.extend([key(1004, 3), f_varint(1, 5), key(1004, 4)].concat());
        msg.extend(f_varint((1 << 29) - 1, 1));
        assert_eq!(tensor_proto(&msg).map(|t| t.dims), Ok(vec![3]));

        let bad = |b: &[u8]| tensor_proto(b).is_err();
        assert!(bad(&[0x00, 0x01]), "field number 0");
        assert!(bad(&varint(1 << 32 | 8)), "key past 32 bits");
        for wire in [6u8, 7] {
            assert!(bad(&[(1 << 3) | wire, 0]), "wire type {wire}");
        }
        assert!(bad(&[(20 << 3) | 4]), "end group without a start");
        assert!(bad(&[key(20, 3), f_varint(1, 5), key(21, 4)].concat()), "mismatched end group");
        assert!(bad(&key(20, 3)), "unterminated group");
        assert!(bad(&[0x08]), "varint value missing");
        assert!(bad(&[0x61, 1, 2, 3]), "truncated fixed64");
        assert!(bad(&[0x65, 1, 2, 3]), "truncated fixed32");
        assert!(bad(&[0x62, 0x04, 1, 2, 3]), "length past the end");
        assert!(bad(&[0x62]), "length missing");
        // Lengths that overflow usize / u64 arithmetic are errors, not panics.
        assert!(bad(&[&[0x62][..], &varint(u64::MAX)].concat()));
        assert!(bad(&[&[0x62][..], &varint(u64::MAX - 2), &[1, 2, 3]].concat()));
        assert!(bad(&[&[0x62][..], &varint(1 << 62)].concat()));
        // A known field with the wrong wire type fails.
        assert!(bad(&f_fixed32(1, 3)), "dims as fixed32");
        assert!(bad(&f_varint(8, 3)), "name as varint");
        assert!(bad(&f_bytes(2, &[1])), "data_type as bytes");
    }

    #[test]
    fn packed_and_unpacked_repeated_fields() {
        let dims = [3i64, 0, 5, 1 << 40];
        let packed = packed_varints(1, &dims);
        let unpacked: Vec<u8> = dims.iter().flat_map(|&d| f_varint(1, d as u64)).collect();
        let mixed = [f_varint(1, 3), packed_varints(1, &[0, 5]), f_varint(1, 1 << 40)].concat();
        for m in [packed, unpacked, mixed] {
            assert_eq!(tensor_proto(&m).unwrap().dims, dims);
        }
        // Negative int32_data entries, packed (10-byte varints) and unpacked.
        let body: Vec<u8> = [-5i64, 7].iter().flat_map(|&v| varint(v as u64)).collect();
        let t = tensor_proto(&[f_bytes(5, &body), f_varint(5, -1i64 as u64)].concat()).unwrap();
        assert_eq!(t.int32_data, [-5, 7, -1]);
        // float_data: packed and unpacked; a packed length that is not a multiple of 4 fails.
        let fl: Vec<u8> = [1.5f32, -2.0].iter().flat_map(|v| v.to_le_bytes()).collect();
        let t = tensor_proto(&[f_bytes(4, &fl), f_fixed32(4, 0.25f32.to_bits())].concat()).unwrap();
        assert_eq!(t.float_data, [1.5, -2.0, 0.25]);
        assert!(tensor_proto(&f_bytes(4, &[0, 0, 0])).is_err());
        assert!(tensor_proto(&[f_bytes(4, &[0, 0, 0]), f_bytes(8, b"x")].concat()).is_err());
        assert!(tensor_proto(&f_bytes(10, &[0; 12])).is_err());
        // A truncated varint inside a packed run fails.
        assert!(tensor_proto(&f_bytes(1, &[0x05, 0x80])).is_err());
        // Unknown fields between known ones change nothing.
        let mut m = tensor(2, &[2], &[f_bytes(9, &[7, 9])]);
        m.extend(f_varint(1000, 1));
        m.extend([key(1001, 1), vec![0; 8]].concat());
        m.extend(f_bytes(1002, b"zz"));
        m.extend(f_fixed32(1003, 0));
        let t = tensor_proto(&m).unwrap().to_tensor().unwrap();
        assert_eq!((t.dtype(), t.shape(), t.bytes()), (DataType::U8, &[2][..], &[7, 9][..]));
    }

    #[test]
    fn encoding_follows_the_declared_packing() {
        // dims and AttributeProto.ints are unpacked in onnx.proto, int32_data is packed:
        // prost writes them that way, so the bytes match what onnx's own writer produces.
        let t = TensorProto { dims: vec![2, 3], data_type: 3, int32_data: vec![-1, 2], ..Default::default() };
        let want = [f_varint(1, 2), f_varint(1, 3), f_varint(2, 3), packed_varints(5, &[-1, 2])].concat();
        assert_eq!(t.encode_to_vec(), want);
        let a = AttributeProto { name: "axes".into(), ints: vec![0, 1], r#type: 7, ..Default::default() };
        let want = [f_bytes(1, b"axes"), f_varint(8, 0), f_varint(8, 1), f_varint(20, 7)].concat();
        assert_eq!(a.encode_to_vec(), want);
    }

    #[test]
    fn invalid_utf8_is_an_error() {
        assert!(tensor_proto(&f_bytes(8, &[0xff, 0xfe])).is_err());
        assert!(decode::<NodeProto>(&f_bytes(4, &[0xc0])).is_err());
        // bytes fields take anything.
        let a = decode::<AttributeProto>(&f_bytes(4, &[0xc0])).unwrap();
        assert_eq!(a.s.as_deref(), Some(&[0xc0][..]));
    }

    #[test]
    fn size_cap() {
        let m = tensor(2, &[2], &[f_bytes(9, &[7, 9])]);
        assert!(decode_limited::<TensorProto>(&m, m.len()).is_ok());
        let e = decode_limited::<TensorProto>(&m, m.len() - 1).unwrap_err();
        assert_eq!(e.message(), format!("message of {} bytes exceeds the {}-byte limit", m.len(), m.len() - 1));
    }

    // ---- TensorProto conversion ----

    fn convert(dtype: DataType, dims: &[i64], int32: &[i64]) -> Result<Tensor> {
        tensor_proto(&tensor(dtype.onnx() as i32, dims, &[packed_varints(5, int32)]))?.to_tensor()
    }

    fn ints(t: &Tensor) -> Vec<i64> {
        (0..t.len()).map(|i| packing::get_int(t.dtype(), t.bytes(), i)).collect()
    }

    #[test]
    fn typed_sub_byte_fields() {
        // The committed test_quantizelinear_int4 / int2 outputs (numpy_helper.to_array values).
        let t = convert(DataType::I4, &[3, 4], &[33, 83, 168, 67, 84, 117]).unwrap();
        assert_eq!(t.shape(), [3, 4]);
        assert_eq!(t.bytes(), [33, 83, 168, 67, 84, 117]);
        assert_eq!(ints(&t), [1, 2, 3, 5, -8, -6, 3, 4, 4, 5, 5, 7]);
        let t = convert(DataType::I2, &[3, 4], &[84, 79, 188]).unwrap();
        assert_eq!(ints(&t), [0, 1, 1, 1, -1, -1, 0, 1, 0, -1, -1, -2]);
        let t = convert(DataType::U2, &[3], &[0]).unwrap();
        assert_eq!(ints(&t), [0, 0, 0]);
        // test_dequantizelinear_float4e2m1 input 0: [0, 1, -1, 1.5, -4].
        let t = convert(DataType::E2M1, &[5], &[32, 58, 14]).unwrap();
        let f = qdq_ref::float::E2M1;
        let v: Vec<f64> = (0..5).map(|i| f.decode(packing::get(t.dtype(), t.bytes(), i))).collect();
        assert_eq!(v, [0.0, 1.0, -1.0, 1.5, -4.0]);
        // Odd element count: the unused high nibble is zeroed.
        let t = convert(DataType::U4, &[3], &[0x21, 0xf3]).unwrap();
        assert_eq!(t.bytes(), [0x21, 0x03]);
        // Packed bytes may be stored signed.
        assert_eq!(convert(DataType::U4, &[2], &[-1]).unwrap().bytes(), [0xff]);
        // float6: one element per entry, packed on conversion (helper.make_tensor vs
        // numpy_helper.from_array raw_data, onnx 1.23.2): [1, -2, 0.5, 3, 0.25].
        let t = convert(DataType::E2M3, &[5], &[8, 48, 4, 20, 2]).unwrap();
        assert_eq!(t.bytes(), [8, 76, 80, 2]);
        let t = convert(DataType::E3M2, &[5], &[12, 48, 8, 18, 4]).unwrap();
        assert_eq!(t.bytes(), [12, 140, 72, 4]);
        let f = qdq_ref::float::E3M2;
        let v: Vec<f64> = (0..5).map(|i| f.decode(packing::get(t.dtype(), t.bytes(), i))).collect();
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
        assert_eq!(t.bytes(), [4, 0, 0xfb, 0xff, 0xff, 0x7f]);
        assert_eq!(convert(DataType::U16, &[1], &[65535]).unwrap().bytes(), [0xff, 0xff]);
        assert!(convert(DataType::U16, &[1], &[65536]).is_err());
        assert!(convert(DataType::I8, &[1], &[-129]).is_err());
        let t = convert(DataType::F16, &[2], &[0x3c00, 0xfc00]).unwrap();
        assert_eq!(t.bytes(), [0x00, 0x3c, 0x00, 0xfc]);
        let t = convert(DataType::E4M3Fn, &[5], &[0, 48, 56, 126, 108]).unwrap();
        assert_eq!(t.bytes(), [0, 48, 56, 126, 108]);
        let t = convert(DataType::I32, &[2], &[i64::from(i32::MIN), -1]).unwrap();
        assert_eq!(t.bytes(), [0, 0, 0, 0x80, 0xff, 0xff, 0xff, 0xff]);
        let fl: Vec<u8> = [1.5f32, -0.0].iter().flat_map(|v| v.to_le_bytes()).collect();
        let t = tensor_proto(&tensor(1, &[2], &[f_bytes(4, &fl)])).unwrap().to_tensor().unwrap();
        assert_eq!(t.bytes(), fl);
        // A scalar: no dims, one element.
        let t = tensor_proto(&tensor(2, &[], &[f_bytes(9, &[42])])).unwrap().to_tensor().unwrap();
        assert_eq!((t.shape().len(), t.bytes()), (0, &[42][..]));
    }

    #[test]
    fn tensor_rejections() {
        let conv = |m: Vec<u8>| tensor_proto(&m).and_then(|t| t.to_tensor());
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
        let e = conv(tensor(2, &[(1 << 30) + 1], &[f_bytes(9, &[0; 4])])).unwrap_err();
        assert_eq!(e.message(), format!("tensor of {} bytes exceeds the {MAX_TENSOR_BYTES}-byte limit", (1 << 30) + 1));
        assert!(conv(tensor(2, &[1 << 40], &[packed_varints(5, &[1])])).is_err());
        // Zero elements with a huge dimension is fine.
        let t = conv(tensor(1, &[0, 1 << 40], &[])).unwrap();
        assert!(t.bytes().is_empty());
        // raw_data length must match; raw and typed data together are rejected.
        assert!(conv(tensor(1, &[2], &[f_bytes(9, &[0; 7])])).is_err());
        assert!(conv(tensor(2, &[1], &[f_bytes(9, &[1]), packed_varints(5, &[1])])).is_err());
        // A typed field that does not belong to the type.
        assert!(conv(tensor(2, &[1], &[f_fixed32(4, 0)])).is_err());
        assert!(conv(tensor(1, &[1], &[packed_varints(5, &[0])])).is_err());
        assert!(conv(tensor(1, &[1], &[f_fixed32(4, 0), f_varint(7, 1)])).is_err());
        assert!(conv(tensor(2, &[1], &[f_bytes(6, b"s")])).is_err());
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
        let dim = |v: u64| f_bytes(1, &f_varint(1, v));
        let x_type = [f_varint(1, 1), f_bytes(2, &[dim(2), dim(3), f_bytes(1, &f_bytes(2, b"N"))].concat())].concat();
        let graph = [
            f_bytes(1, &node),
            f_bytes(2, b"g"),
            f_bytes(5, &init),
            f_bytes(11, &[f_bytes(1, b"x"), f_bytes(2, &f_bytes(1, &x_type))].concat()),
            f_bytes(12, &[f_bytes(1, b"y"), f_bytes(3, b"doc (skipped)")].concat()),
        ]
        .concat();
        let model = [
            f_varint(1, 10),
            f_bytes(8, &[f_bytes(1, b""), f_varint(2, 21)].concat()),
            f_bytes(8, &[f_bytes(1, b"com.microsoft"), f_varint(2, 1)].concat()),
            f_bytes(7, &graph),
            f_bytes(2, b"producer"),
            f_bytes(6, b"doc (skipped)"),
        ]
        .concat();
        let m = decode::<ModelProto>(&model).unwrap();
        assert_eq!((m.ir_version, m.producer_name.as_str()), (10, "producer"));
        assert_eq!(m.opset_import[0], OperatorSetIdProto { domain: String::new(), version: 21 });
        assert_eq!(m.opset_import[1].domain, "com.microsoft");
        let g = m.graph.as_ref().unwrap();
        let names = |v: &[ValueInfoProto]| v.iter().map(|i| i.name.clone()).collect::<Vec<_>>();
        assert_eq!((g.name.as_str(), names(&g.input), names(&g.output)), ("g", vec!["x".into()], vec!["y".into()]));
        let tt = g.input[0].r#type.as_ref().and_then(|t| t.tensor_type.as_ref()).unwrap();
        use tensor_shape_proto::dimension::Value;
        let dims: Vec<_> = tt.shape.as_ref().unwrap().dim.iter().map(|d| d.value.clone()).collect();
        assert_eq!(tt.elem_type, 1);
        assert_eq!(dims, [Some(Value::DimValue(2)), Some(Value::DimValue(3)), Some(Value::DimParam("N".into()))]);
        assert_eq!(g.output[0].r#type, None);
        assert_eq!(g.initializer[0].name, "s");
        let n = &g.node[0];
        assert_eq!(n.input, ["x", ""]);
        assert_eq!((n.op_type.as_str(), n.domain.as_str(), n.name.as_str()), ("QuantizeLinear", "com.microsoft", "n0"));
        assert_eq!(n.attr("axis").unwrap().as_int(), Ok(-1));
        assert!(n.attr("f").unwrap().as_int().is_err());
        assert_eq!(n.attr("f").unwrap().f, Some(1.5));
        // Encoding what was decoded and decoding it again gives the same message (the
        // skipped doc strings are gone).
        assert_eq!(decode::<ModelProto>(&m.encode_to_vec()), Ok(m));
        // Errors carry the path of the failing field.
        let bad = [f_bytes(7, &f_bytes(1, &[f_bytes(5, &[0x18])].concat()))].concat();
        let e = decode::<ModelProto>(&bad).unwrap_err();
        let path = "AttributeProto.i: NodeProto.attribute: GraphProto.node: ModelProto.graph: invalid varint";
        assert!(e.message().ends_with(path), "{e}");
    }

    #[test]
    fn subgraphs_are_kept_as_bytes() {
        // An If-style attribute holding a graph whose node holds a graph, and so on: the
        // nested bytes are never decoded, so depth costs nothing.
        let mut g = f_bytes(2, b"leaf");
        for _ in 0..200 {
            let attr = [f_bytes(1, b"then_branch"), f_bytes(6, &g), f_varint(20, 5)].concat();
            g = f_bytes(1, &[f_bytes(4, b"If"), f_bytes(5, &attr)].concat());
        }
        let graph = decode::<GraphProto>(&g).unwrap();
        let a = &graph.node[0].attribute[0];
        assert_eq!(a.kind(), attribute_type::GRAPH);
        let inner = decode::<GraphProto>(a.g.as_ref().unwrap()).unwrap();
        assert_eq!(inner.node[0].op_type, "If");
        // Nested unknown groups run into prost's recursion limit instead of the stack's end.
        let deep: Vec<u8> = [key(100, 3).repeat(10_000), key(100, 4).repeat(10_000)].concat();
        assert!(decode::<GraphProto>(&deep).is_err());
    }

    #[test]
    fn attribute_type_inference() {
        let attr = |b: Vec<u8>| decode::<AttributeProto>(&[f_bytes(1, b"k"), b].concat()).unwrap();
        let a = attr(f_varint(3, 0));
        assert_eq!(a.kind(), attribute_type::INT);
        assert_eq!(a.as_int(), Ok(0));
        let a = attr(packed_varints(8, &[1, 2]));
        assert_eq!((a.kind(), a.ints.as_slice()), (attribute_type::INTS, &[1i64, 2][..]));
        assert_eq!(a.as_int(), Err("attribute 'k' is not an INT (type INTS)".into()));
        assert_eq!(attr([f_varint(3, 0), f_fixed32(2, 0)].concat()).kind(), attribute_type::UNDEFINED);
        assert_eq!(attr(f_bytes(9, b"a")).kind(), attribute_type::STRINGS);
        assert_eq!(attr(f_bytes(10, &[])).kind(), attribute_type::TENSORS);
        assert_eq!(attr(f_bytes(14, &[])).kind(), attribute_type::TYPE_PROTO);
        assert_eq!(attr(f_bytes(23, &[])).kind(), attribute_type::SPARSE_TENSORS);
        let a = attr(f_bytes(6, b""));
        assert_eq!(a.kind(), attribute_type::GRAPH);
        assert!(a.as_int().is_err());
        // A declared INT with no `i` field is 0 (proto2 default).
        assert_eq!(attr(f_varint(20, 2)).as_int(), Ok(0));
        // The declared type wins over the fields present.
        assert_eq!(attr([f_varint(3, 4), f_varint(20, 1)].concat()).kind(), attribute_type::FLOAT);
        assert_eq!(attribute_type_name(attribute_type::SPARSE_TENSOR), "SPARSE_TENSOR");
        assert_eq!(attribute_type_name(99), "99");
    }

    // ---- committed files ----

    fn committed_files(tests: &[&str]) -> Vec<std::path::PathBuf> {
        let dir = crate::default_node_dir();
        let mut files = Vec::new();
        for test in tests {
            files.push(dir.join(test).join("model.onnx"));
            let mut pbs: Vec<_> =
                std::fs::read_dir(dir.join(test).join("test_data_set_0")).unwrap().map(|e| e.unwrap().path()).collect();
            pbs.sort();
            files.extend(pbs);
        }
        files
    }

    fn all_tests() -> Vec<String> {
        let mut names: Vec<String> = std::fs::read_dir(crate::default_node_dir())
            .unwrap()
            .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
            .collect();
        names.sort();
        names
    }

    #[test]
    fn committed_models_and_tensors() {
        let tests = all_tests();
        assert_eq!(tests.len(), 33);
        for test in &tests {
            let files = committed_files(&[test]);
            let m = decode::<ModelProto>(&std::fs::read(&files[0]).unwrap()).unwrap();
            assert!(m.ir_version >= 3, "{test}");
            assert!(m.opset_import.iter().any(|o| o.domain.is_empty() && o.version >= 10), "{test}");
            let g = m.graph.as_ref().unwrap();
            assert!(!g.node.is_empty() && !g.output.is_empty(), "{test}");
            // Every graph input's declared type and shape match its data file.
            let inputs: Vec<_> =
                files.iter().filter(|p| p.file_name().unwrap().to_string_lossy().starts_with("input_")).collect();
            assert_eq!(g.input.len(), inputs.len(), "{test}");
            for (info, path) in g.input.iter().zip(inputs) {
                let bytes = std::fs::read(path).unwrap();
                let t = decode::<TensorProto>(&bytes).unwrap();
                let tt = info.r#type.as_ref().and_then(|t| t.tensor_type.as_ref()).unwrap();
                assert_eq!(tt.elem_type, t.data_type, "{test} {}", info.name);
                let dims: Vec<i64> = tt
                    .shape
                    .as_ref()
                    .unwrap()
                    .dim
                    .iter()
                    .map(|d| match d.value {
                        Some(tensor_shape_proto::dimension::Value::DimValue(v)) => v,
                        ref other => panic!("{test} {}: dimension {other:?}", info.name),
                    })
                    .collect();
                assert_eq!(dims, t.dims, "{test} {}", info.name);
                let tensor = t.to_tensor().unwrap();
                assert_eq!(tensor.dtype().byte_len(tensor.len()), Some(tensor.bytes().len()));
                // Every field of a data file is declared, and onnx writes fields in number
                // order with the packing onnx.proto gives: re-encoding is byte-exact.
                assert_eq!(t.encode_to_vec(), bytes, "{}", path.display());
            }
            assert_eq!(decode::<ModelProto>(&m.encode_to_vec()).unwrap(), m);
        }
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
        let model = decode::<ModelProto>(b);
        let tensor = tensor_proto(b);
        if let Ok(t) = &tensor {
            let _ = t.to_tensor();
        }
        let _ = decode::<NodeProto>(b);
        let _ = decode::<AttributeProto>(b).map(|a| a.as_int());
        let _ = decode::<GraphProto>(b);
        let _ = decode::<ValueInfoProto>(b);
        if let Ok(m) = &model {
            for t in m.graph.iter().flat_map(|g| &g.initializer) {
                let _ = t.to_tensor();
            }
        }
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
        // Almost every random string hits an invalid wire type, field number 0, a
        // truncation or a known field with the wrong wire type somewhere.
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

    /// Offsets where a top-level field of a well-formed message ends.
    fn field_ends(b: &[u8]) -> Vec<usize> {
        fn read(b: &[u8], pos: &mut usize) -> u64 {
            let mut v = 0;
            for shift in (0..64).step_by(7) {
                let byte = b[*pos];
                *pos += 1;
                v |= u64::from(byte & 0x7f) << shift;
                if byte < 0x80 {
                    break;
                }
            }
            v
        }
        let (mut ends, mut pos) = (vec![0], 0);
        while pos < b.len() {
            match read(b, &mut pos) & 7 {
                0 => drop(read(b, &mut pos)),
                1 => pos += 8,
                2 => pos += read(b, &mut pos) as usize,
                5 => pos += 4,
                w => panic!("wire type {w} in a committed file"),
            }
            ends.push(pos);
        }
        ends
    }

    #[test]
    fn truncated_and_mutated_committed_files() {
        let files = committed_files(&[
            "test_dynamicquantizelinear_expanded",
            "test_quantizelinear_int4",
            "test_dequantizelinear_e4m3fn",
        ]);
        let mut rng = XorShift(12345);
        for path in files {
            let full = std::fs::read(&path).unwrap();
            // Only the prefixes that end on a top-level field boundary are valid messages.
            let ends = field_ends(&full);
            for cut in 0..full.len() {
                let prefix = &full[..cut];
                let valid = ends.contains(&cut);
                let ok = if path.extension().is_some_and(|e| e == "onnx") {
                    decode::<ModelProto>(prefix).is_ok()
                } else {
                    tensor_proto(prefix).is_ok()
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
