//! The views the slice API takes, and the element readers shared with the tensor API.
//!
//! Each view is built from a typed slice with `From` (see [`crate::element`]), so callers
//! pass `&x` / `&mut y` and rarely name these types:
//!
//! | view | holds | built from |
//! |---|---|---|
//! | [`Values`] | x of QuantizeLinear, scales | `&[f32]`, `&[f16]`, `&[bf16]`, `&[i32]`, `&[Float8E8M0]` |
//! | [`ValuesMut`] | DequantizeLinear's output | `&mut [f32]`, `&mut [f16]`, `&mut [bf16]` |
//! | [`Packed`] | x of DequantizeLinear, zero points | `&[u8]`, `&[i8]`, `&[u16]`, `&[i16]`, `&[i32]`, float8 slices; [`Packed::new`] for packed sub-byte data |
//! | [`PackedMut`] | QuantizeLinear's output | `&mut [u8]`, `&mut [i8]`, `&mut [u16]`, `&mut [i16]`, float8 slices; [`PackedMut::new`] for packed sub-byte data |
//!
//! Each also converts from a `&Vec<T>` and a `&[T; N]` (`&mut` for the outputs).
//!
//! **Byte order.** The slice functions of this crate read x and the scales through their
//! typed views and write float outputs as typed values, so they give the same results on
//! any byte order. Quantized values are bytes in ONNX's little-endian serialisation: the
//! `From` impls for the multi-byte codes (`u16`, `i16`, `i32`) exist on little-endian
//! targets only; on a big-endian target, pass little-endian bytes to [`Packed::new`] /
//! [`PackedMut::new`].

use crate::dtype::DataType;
use crate::element::{bytes_of, bytes_of_mut, Float8E4M3Fn, Float8E4M3FnUz, Float8E5M2, Float8E5M2FnUz, Float8E8M0};
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

impl<'a> Values<'a> {
    /// The elements' bytes in the target's byte order: their ONNX (little-endian)
    /// serialisation on the little-endian targets `qdq` runs on.
    ///
    /// ```
    /// use qdq_ref::Values;
    /// assert_eq!(Values::from(&[1i32]).bytes(), [1, 0, 0, 0]);
    /// ```
    pub fn bytes(&self) -> &'a [u8] {
        match *self {
            Values::F32(s) => bytes_of(s),
            Values::F16(s) => bytes_of(s),
            Values::Bf16(s) => bytes_of(s),
            Values::I32(s) => bytes_of(s),
            Values::E8M0(s) => s,
        }
    }

    /// Element type.
    ///
    /// ```
    /// use qdq_ref::{f16, DataType, Values};
    /// assert_eq!(Values::from(&[f16::ONE]).dtype(), DataType::F16);
    /// ```
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
    ///
    /// ```
    /// use qdq_ref::Values;
    /// assert_eq!(Values::from(&[1.0f32, 2.0]).len(), 2);
    /// ```
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
    ///
    /// ```
    /// use qdq_ref::Values;
    /// assert!(Values::from(&Vec::<f32>::new()).is_empty());
    /// ```
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

impl<'a> ValuesMut<'a> {
    /// The elements' bytes, writable, in the target's byte order (ONNX's little-endian
    /// serialisation on little-endian targets).
    ///
    /// ```
    /// use qdq_ref::ValuesMut;
    /// let mut y = [0f32; 2];
    /// assert_eq!(ValuesMut::from(&mut y).bytes_mut().len(), 8);
    /// ```
    pub fn bytes_mut(&mut self) -> &mut [u8] {
        match self {
            ValuesMut::F32(s) => bytes_of_mut(s),
            ValuesMut::F16(s) => bytes_of_mut(s),
            ValuesMut::Bf16(s) => bytes_of_mut(s),
        }
    }

    /// Element type.
    ///
    /// ```
    /// use qdq_ref::{bf16, DataType, ValuesMut};
    /// let mut y = [bf16::ZERO; 2];
    /// assert_eq!(ValuesMut::from(&mut y).dtype(), DataType::Bf16);
    /// ```
    pub fn dtype(&self) -> DataType {
        match self {
            ValuesMut::F32(_) => DataType::F32,
            ValuesMut::F16(_) => DataType::F16,
            ValuesMut::Bf16(_) => DataType::Bf16,
        }
    }

    /// Number of elements.
    ///
    /// ```
    /// use qdq_ref::ValuesMut;
    /// let mut y = vec![0f32; 3];
    /// assert_eq!(ValuesMut::from(&mut y).len(), 3);
    /// ```
    pub fn len(&self) -> usize {
        match self {
            ValuesMut::F32(s) => s.len(),
            ValuesMut::F16(s) => s.len(),
            ValuesMut::Bf16(s) => s.len(),
        }
    }

    /// Whether there are no elements.
    ///
    /// ```
    /// use qdq_ref::ValuesMut;
    /// assert!(ValuesMut::from(&mut [0f32; 0]).is_empty());
    /// ```
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
    /// A view of `len` elements of type `dtype` over `data`, their ONNX serialisation
    /// (sub-byte types packed, see [`crate::packing`]). Errors if `data` does not hold
    /// exactly `dtype.byte_len(len)` bytes.
    ///
    /// ```
    /// use qdq_ref::{DataType, ErrorKind, Packed};
    /// // Five int4 values, two per byte, low nibble first: 1, -2, 3, -4, 5.
    /// let x = Packed::new(DataType::I4, 5, &[0xe1, 0xc3, 0x05])?;
    /// assert_eq!(x.code(1), 0xe);
    /// let err = Packed::new(DataType::I4, 5, &[0xe1, 0xc3]).unwrap_err();
    /// assert_eq!(err.kind(), ErrorKind::BufferLength);
    /// # Ok::<(), qdq_ref::Error>(())
    /// ```
    pub fn new(dtype: DataType, len: usize, data: &'a [u8]) -> Result<Self> {
        let p = Packed { dtype, len, data };
        p.check("data")?;
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

    /// Element `i`'s raw code (its bits, zero-extended). Panics if `i >= self.len`.
    ///
    /// ```
    /// use qdq_ref::Packed;
    /// let zp: &[i8] = &[-3, 4];
    /// assert_eq!(Packed::from(zp).code(0), 0xfd);
    /// ```
    pub fn code(&self, i: usize) -> u32 {
        packing::get(self.dtype, self.data, i)
    }
}

/// A writable quantized tensor in its ONNX serialisation (packed for sub-byte types): the
/// output of a quantize. Its element count is the input's.
#[derive(Debug)]
pub struct PackedMut<'a> {
    /// Element type.
    pub dtype: DataType,
    /// `dtype.byte_len(n)` bytes for `n` elements.
    pub data: &'a mut [u8],
}

impl<'a> PackedMut<'a> {
    /// A view of `data` as elements of type `dtype`; the operator that writes it checks
    /// that it holds exactly `dtype.byte_len(n)` bytes for its `n` elements.
    ///
    /// ```
    /// use qdq_ref::{DataType, PackedMut};
    /// let mut y = vec![0u8; DataType::I4.byte_len(5).unwrap()];
    /// let view = PackedMut::new(DataType::I4, &mut y);
    /// assert_eq!(view.data.len(), 3);
    /// ```
    pub fn new(dtype: DataType, data: &'a mut [u8]) -> Self {
        PackedMut { dtype, data }
    }
}

/// `From` impls from typed slices, `Vec`s and arrays to a view, one arm per element type.
macro_rules! view_from {
    ($view:ident, shared, $($t:ty => |$s:ident| $e:expr),* $(,)?) => {$(
        impl<'a> From<&'a [$t]> for $view<'a> {
            fn from($s: &'a [$t]) -> Self {
                $e
            }
        }
        impl<'a> From<&'a Vec<$t>> for $view<'a> {
            fn from(v: &'a Vec<$t>) -> Self {
                Self::from(v.as_slice())
            }
        }
        impl<'a, const N: usize> From<&'a [$t; N]> for $view<'a> {
            fn from(v: &'a [$t; N]) -> Self {
                Self::from(v.as_slice())
            }
        }
    )*};
    ($view:ident, unique, $($t:ty => |$s:ident| $e:expr),* $(,)?) => {$(
        impl<'a> From<&'a mut [$t]> for $view<'a> {
            fn from($s: &'a mut [$t]) -> Self {
                $e
            }
        }
        impl<'a> From<&'a mut Vec<$t>> for $view<'a> {
            fn from(v: &'a mut Vec<$t>) -> Self {
                Self::from(v.as_mut_slice())
            }
        }
        impl<'a, const N: usize> From<&'a mut [$t; N]> for $view<'a> {
            fn from(v: &'a mut [$t; N]) -> Self {
                Self::from(v.as_mut_slice())
            }
        }
    )*};
}

view_from!(Values, shared,
    f32 => |s| Values::F32(s),
    f16 => |s| Values::F16(s),
    bf16 => |s| Values::Bf16(s),
    i32 => |s| Values::I32(s),
    Float8E8M0 => |s| Values::E8M0(bytes_of(s)),
);

view_from!(ValuesMut, unique,
    f32 => |s| ValuesMut::F32(s),
    f16 => |s| ValuesMut::F16(s),
    bf16 => |s| ValuesMut::Bf16(s),
);

// Multi-byte codes are viewed as their bytes, which are ONNX's little-endian serialisation
// only on a little-endian target; on a big-endian one, pass little-endian bytes to
// `Packed::new` / `PackedMut::new` instead.
#[cfg(target_endian = "little")]
view_from!(Packed, shared,
    u16 => |s| Packed { dtype: DataType::U16, len: s.len(), data: bytes_of(s) },
    i16 => |s| Packed { dtype: DataType::I16, len: s.len(), data: bytes_of(s) },
    i32 => |s| Packed { dtype: DataType::I32, len: s.len(), data: bytes_of(s) },
);

#[cfg(target_endian = "little")]
view_from!(PackedMut, unique,
    u16 => |s| PackedMut { dtype: DataType::U16, data: bytes_of_mut(s) },
    i16 => |s| PackedMut { dtype: DataType::I16, data: bytes_of_mut(s) },
);

view_from!(Packed, shared,
    u8 => |s| Packed { dtype: DataType::U8, len: s.len(), data: s },
    i8 => |s| Packed { dtype: DataType::I8, len: s.len(), data: bytes_of(s) },
    Float8E4M3Fn => |s| Packed { dtype: DataType::E4M3Fn, len: s.len(), data: bytes_of(s) },
    Float8E4M3FnUz => |s| Packed { dtype: DataType::E4M3FnUz, len: s.len(), data: bytes_of(s) },
    Float8E5M2 => |s| Packed { dtype: DataType::E5M2, len: s.len(), data: bytes_of(s) },
    Float8E5M2FnUz => |s| Packed { dtype: DataType::E5M2FnUz, len: s.len(), data: bytes_of(s) },
);

view_from!(PackedMut, unique,
    u8 => |s| PackedMut { dtype: DataType::U8, data: s },
    i8 => |s| PackedMut { dtype: DataType::I8, data: bytes_of_mut(s) },
    Float8E4M3Fn => |s| PackedMut { dtype: DataType::E4M3Fn, data: bytes_of_mut(s) },
    Float8E4M3FnUz => |s| PackedMut { dtype: DataType::E4M3FnUz, data: bytes_of_mut(s) },
    Float8E5M2 => |s| PackedMut { dtype: DataType::E5M2, data: bytes_of_mut(s) },
    Float8E5M2FnUz => |s| PackedMut { dtype: DataType::E5M2FnUz, data: bytes_of_mut(s) },
);

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
