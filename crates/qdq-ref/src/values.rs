//! Typed views used by the slice API, and the element readers shared with the tensor API.

use crate::dtype::DataType;
use crate::error::{bail, Result};
use crate::float::{decode_e8m0, BF16, F16};
use crate::packing;
use half::{bf16, f16};

/// A read-only slice of wide values: a Q input, or a scale.
#[derive(Clone, Copy, Debug)]
pub enum Values<'a> {
    /// f32 elements.
    F32(&'a [f32]),
    /// f16 elements.
    F16(&'a [f16]),
    /// bf16 elements.
    Bf16(&'a [bf16]),
    /// i32 elements.
    I32(&'a [i32]),
    /// float8e8m0 codes (scales only).
    E8M0(&'a [u8]),
}

impl Values<'_> {
    /// Element type.
    pub fn dtype(&self) -> DataType {
        match self {
            Values::F32(_) => DataType::F32,
            Values::F16(_) => DataType::F16,
            Values::Bf16(_) => DataType::Bf16,
            Values::I32(_) => DataType::I32,
            Values::E8M0(_) => DataType::E8M0,
        }
    }

    /// Number of elements.
    pub fn len(&self) -> usize {
        match self {
            Values::F32(s) => s.len(),
            Values::F16(s) => s.len(),
            Values::Bf16(s) => s.len(),
            Values::I32(s) => s.len(),
            Values::E8M0(s) => s.len(),
        }
    }

    /// Whether there are no elements.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }
}

/// A writable slice of wide floats: the output of a dequantize.
#[derive(Debug)]
pub enum ValuesMut<'a> {
    /// f32 output.
    F32(&'a mut [f32]),
    /// f16 output.
    F16(&'a mut [f16]),
    /// bf16 output.
    Bf16(&'a mut [bf16]),
}

impl ValuesMut<'_> {
    /// Element type.
    pub fn dtype(&self) -> DataType {
        match self {
            ValuesMut::F32(_) => DataType::F32,
            ValuesMut::F16(_) => DataType::F16,
            ValuesMut::Bf16(_) => DataType::Bf16,
        }
    }

    /// Number of elements.
    pub fn len(&self) -> usize {
        match self {
            ValuesMut::F32(s) => s.len(),
            ValuesMut::F16(s) => s.len(),
            ValuesMut::Bf16(s) => s.len(),
        }
    }

    /// Whether there are no elements.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }
}

/// A quantized tensor in its ONNX serialisation (packed for sub-byte types), or an i32
/// tensor as little-endian bytes: a DQ input or a zero point.
#[derive(Clone, Copy, Debug)]
pub struct Packed<'a> {
    /// Element type.
    pub dtype: DataType,
    /// Number of elements.
    pub len: usize,
    /// `dtype.byte_len(len)` bytes.
    pub data: &'a [u8],
}

impl<'a> Packed<'a> {
    /// A view of `len` elements over `data`; errors if the byte length does not match.
    pub fn new(dtype: DataType, len: usize, data: &'a [u8]) -> Result<Self> {
        let p = Packed { dtype, len, data };
        p.check("tensor")?;
        Ok(p)
    }

    /// Checks that `data` holds exactly `len` elements.
    pub(crate) fn check(&self, name: &str) -> Result<()> {
        match self.dtype.byte_len(self.len) {
            Some(b) if b == self.data.len() => Ok(()),
            Some(b) => bail!(
                BufferLength,
                "{name}: {} elements of {} need {b} bytes, got {}",
                self.len,
                self.dtype,
                self.data.len()
            ),
            None => {
                bail!(ShapeOverflow, "{name}: the byte size of {} {} elements overflows usize", self.len, self.dtype)
            }
        }
    }

    /// Element `i`'s raw code.
    pub fn code(&self, i: usize) -> u32 {
        packing::get(self.dtype, self.data, i)
    }
}

/// Random access to wide values as exact `f64`s, implemented for typed slices and for
/// little-endian byte buffers, so one algorithm serves both API levels.
pub(crate) trait Read {
    fn value(&self, i: usize) -> f64;
}

impl Read for Values<'_> {
    fn value(&self, i: usize) -> f64 {
        match self {
            Values::F32(s) => s[i] as f64,
            Values::F16(s) => s[i].to_f64(),
            Values::Bf16(s) => s[i].to_f64(),
            Values::I32(s) => s[i] as f64,
            Values::E8M0(s) => decode_e8m0(s[i]) as f64,
        }
    }
}

/// A wide-typed tensor held as little-endian bytes (length already checked).
#[derive(Clone, Copy, Debug)]
pub(crate) struct Bytes<'a> {
    pub dtype: DataType,
    pub data: &'a [u8],
}

impl Read for Bytes<'_> {
    fn value(&self, i: usize) -> f64 {
        let d = self.data;
        match self.dtype {
            DataType::F32 => f32::from_le_bytes([d[4 * i], d[4 * i + 1], d[4 * i + 2], d[4 * i + 3]]) as f64,
            DataType::I32 => i32::from_le_bytes([d[4 * i], d[4 * i + 1], d[4 * i + 2], d[4 * i + 3]]) as f64,
            DataType::F16 => f16::from_le_bytes([d[2 * i], d[2 * i + 1]]).to_f64(),
            DataType::Bf16 => bf16::from_le_bytes([d[2 * i], d[2 * i + 1]]).to_f64(),
            DataType::E8M0 => decode_e8m0(d[i]) as f64,
            // Callers only build `Bytes` for the wide types above.
            other => unreachable!("Bytes::value on {other}"),
        }
    }
}

/// Sink for dequantized values, already rounded to the output type.
pub(crate) trait Write {
    fn put(&mut self, i: usize, v: f32);
}

impl Write for ValuesMut<'_> {
    fn put(&mut self, i: usize, v: f32) {
        let v = crate::float::canonical_nan(v);
        match self {
            ValuesMut::F32(s) => s[i] = v,
            ValuesMut::F16(s) => s[i] = f16::from_bits(F16.encode(v as f64, false) as u16),
            ValuesMut::Bf16(s) => s[i] = bf16::from_bits(BF16.encode(v as f64, false) as u16),
        }
    }
}

/// Little-endian byte sink of an f32 / f16 / bf16 tensor.
pub(crate) struct BytesMut<'a> {
    pub dtype: DataType,
    pub data: &'a mut [u8],
}

impl Write for BytesMut<'_> {
    fn put(&mut self, i: usize, v: f32) {
        let v = crate::float::canonical_nan(v);
        match self.dtype {
            DataType::F32 => self.data[4 * i..4 * i + 4].copy_from_slice(&v.to_le_bytes()),
            DataType::F16 => {
                self.data[2 * i..2 * i + 2].copy_from_slice(&(F16.encode(v as f64, false) as u16).to_le_bytes())
            }
            DataType::Bf16 => {
                self.data[2 * i..2 * i + 2].copy_from_slice(&(BF16.encode(v as f64, false) as u16).to_le_bytes())
            }
            other => unreachable!("BytesMut::put on {other}"),
        }
    }
}
