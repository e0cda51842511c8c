//! Element types: the ONNX `TensorProto.DataType` values this crate understands.
//!
//! Every type knows its ONNX enum value, its canonical short name (the one used in
//! error messages, benches and JSON output), its width in bits and how many bytes a
//! tensor of `n` elements occupies when serialised the ONNX way:
//!
//! | width | bytes for n elements | layout |
//! |---|---|---|
//! | 8, 16, 32 | `n * bits / 8` | little endian |
//! | 4 (u4, i4, f4) | `ceil(n / 2)` | element `2k` in the low nibble, `2k+1` in the high nibble |
//! | 2 (u2, i2) | `ceil(n / 4)` | `b = x0 | x1 << 2 | x2 << 4 | x3 << 6` |
//! | 6 (f6e2m3, f6e3m2) | `ceil(6n / 8)` | LSB-first 24-bit groups of four elements |

use core::fmt;

/// An ONNX element type.
///
/// The discriminants are the `TensorProto.DataType` enum values, so
/// `DataType::from_onnx(t as i32) == Some(t)`.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
#[repr(i32)]
pub enum DataType {
    /// IEEE binary32.
    F32 = 1,
    /// Unsigned 8-bit integer.
    U8 = 2,
    /// Signed 8-bit integer.
    I8 = 3,
    /// Unsigned 16-bit integer.
    U16 = 4,
    /// Signed 16-bit integer.
    I16 = 5,
    /// Signed 32-bit integer.
    I32 = 6,
    /// IEEE binary16.
    F16 = 10,
    /// bfloat16 (the top half of a binary32).
    Bf16 = 16,
    /// float8 e4m3, finite only (no infinity, NaN = S.1111.111).
    E4M3Fn = 17,
    /// float8 e4m3, finite, unsigned zero (no -0, NaN = 0x80).
    E4M3FnUz = 18,
    /// float8 e5m2, IEEE-like (has ±inf and NaNs).
    E5M2 = 19,
    /// float8 e5m2, finite, unsigned zero (no -0, NaN = 0x80).
    E5M2FnUz = 20,
    /// Unsigned 4-bit integer (packed two per byte).
    U4 = 21,
    /// Signed 4-bit integer (packed two per byte).
    I4 = 22,
    /// float4 e2m1 (packed two per byte), no infinity or NaN.
    E2M1 = 23,
    /// float8 e8m0: an unsigned power of two `2^(k-127)`, 0xff = NaN. Scale type only.
    E8M0 = 24,
    /// Unsigned 2-bit integer (packed four per byte).
    U2 = 25,
    /// Signed 2-bit integer (packed four per byte).
    I2 = 26,
    /// float6 e2m3 (packed four per three bytes), no infinity or NaN.
    E2M3 = 27,
    /// float6 e3m2 (packed four per three bytes), no infinity or NaN.
    E3M2 = 28,
}

impl DataType {
    /// Every type this crate knows, in enum order.
    pub const ALL: [DataType; 20] = [
        DataType::F32,
        DataType::U8,
        DataType::I8,
        DataType::U16,
        DataType::I16,
        DataType::I32,
        DataType::F16,
        DataType::Bf16,
        DataType::E4M3Fn,
        DataType::E4M3FnUz,
        DataType::E5M2,
        DataType::E5M2FnUz,
        DataType::U4,
        DataType::I4,
        DataType::E2M1,
        DataType::E8M0,
        DataType::U2,
        DataType::I2,
        DataType::E2M3,
        DataType::E3M2,
    ];

    /// Every type QuantizeLinear can produce (and DequantizeLinear consume, plus i32).
    pub const QUANTIZED: [DataType; 15] = [
        DataType::U8,
        DataType::I8,
        DataType::U16,
        DataType::I16,
        DataType::U4,
        DataType::I4,
        DataType::U2,
        DataType::I2,
        DataType::E4M3Fn,
        DataType::E4M3FnUz,
        DataType::E5M2,
        DataType::E5M2FnUz,
        DataType::E2M1,
        DataType::E2M3,
        DataType::E3M2,
    ];

    /// Maps an ONNX `TensorProto.DataType` value to a type, or `None` for types this
    /// crate does not handle (strings, doubles, complex, ...).
    ///
    /// ```
    /// use qdq_ref::DataType;
    /// assert_eq!(DataType::from_onnx(17), Some(DataType::E4M3Fn));
    /// assert_eq!(DataType::from_onnx(22), Some(DataType::I4));
    /// assert_eq!(DataType::from_onnx(11), None); // DOUBLE
    /// ```
    pub fn from_onnx(v: i64) -> Option<DataType> {
        DataType::ALL.iter().copied().find(|t| *t as i64 == v)
    }

    /// The ONNX `TensorProto.DataType` value, as an `i64` like [`DataType::from_onnx`]'s
    /// argument and every integer attribute (`output_dtype`, `precision`).
    ///
    /// ```
    /// use qdq_ref::DataType;
    /// assert_eq!(DataType::I4.onnx(), 22);
    /// assert_eq!(DataType::from_onnx(DataType::Bf16.onnx()), Some(DataType::Bf16));
    /// ```
    pub fn onnx(self) -> i64 {
        self as i64
    }

    /// Maps a short name (`"u8"`, `"e4m3fn"`, ...) back to a type.
    ///
    /// ```
    /// use qdq_ref::DataType;
    /// assert_eq!(DataType::from_name("e4m3fn"), Some(DataType::E4M3Fn));
    /// assert_eq!(DataType::from_name("u2"), Some(DataType::U2));
    /// assert_eq!(DataType::from_name("FLOAT"), None);
    /// ```
    pub fn from_name(name: &str) -> Option<DataType> {
        DataType::ALL.iter().copied().find(|t| t.name() == name)
    }

    /// Short name: `f32 f16 bf16 i32 u8 i8 u16 i16 u4 i4 u2 i2 e4m3fn e4m3fnuz e5m2
    /// e5m2fnuz e2m1 e2m3 e3m2 e8m0`.
    ///
    /// ```
    /// use qdq_ref::DataType;
    /// assert_eq!(DataType::E5M2FnUz.name(), "e5m2fnuz");
    /// assert_eq!(DataType::Bf16.name(), "bf16");
    /// ```
    pub fn name(self) -> &'static str {
        match self {
            DataType::F32 => "f32",
            DataType::U8 => "u8",
            DataType::I8 => "i8",
            DataType::U16 => "u16",
            DataType::I16 => "i16",
            DataType::I32 => "i32",
            DataType::F16 => "f16",
            DataType::Bf16 => "bf16",
            DataType::E4M3Fn => "e4m3fn",
            DataType::E4M3FnUz => "e4m3fnuz",
            DataType::E5M2 => "e5m2",
            DataType::E5M2FnUz => "e5m2fnuz",
            DataType::U4 => "u4",
            DataType::I4 => "i4",
            DataType::E2M1 => "e2m1",
            DataType::E8M0 => "e8m0",
            DataType::U2 => "u2",
            DataType::I2 => "i2",
            DataType::E2M3 => "e2m3",
            DataType::E3M2 => "e3m2",
        }
    }

    /// The ONNX spelling (`FLOAT8E4M3FN`, ...), as used in ONNX error messages.
    ///
    /// ```
    /// use qdq_ref::DataType;
    /// assert_eq!(DataType::E4M3Fn.onnx_name(), "FLOAT8E4M3FN");
    /// assert_eq!(DataType::F32.onnx_name(), "FLOAT");
    /// assert_eq!(DataType::E2M3.onnx_name(), "FLOAT6E2M3");
    /// ```
    pub fn onnx_name(self) -> &'static str {
        match self {
            DataType::F32 => "FLOAT",
            DataType::U8 => "UINT8",
            DataType::I8 => "INT8",
            DataType::U16 => "UINT16",
            DataType::I16 => "INT16",
            DataType::I32 => "INT32",
            DataType::F16 => "FLOAT16",
            DataType::Bf16 => "BFLOAT16",
            DataType::E4M3Fn => "FLOAT8E4M3FN",
            DataType::E4M3FnUz => "FLOAT8E4M3FNUZ",
            DataType::E5M2 => "FLOAT8E5M2",
            DataType::E5M2FnUz => "FLOAT8E5M2FNUZ",
            DataType::U4 => "UINT4",
            DataType::I4 => "INT4",
            DataType::E2M1 => "FLOAT4E2M1",
            DataType::E8M0 => "FLOAT8E8M0",
            DataType::U2 => "UINT2",
            DataType::I2 => "INT2",
            DataType::E2M3 => "FLOAT6E2M3",
            DataType::E3M2 => "FLOAT6E3M2",
        }
    }

    /// Width of one element in bits.
    ///
    /// ```
    /// use qdq_ref::DataType;
    /// assert_eq!(DataType::E2M3.bits(), 6);
    /// assert_eq!(DataType::I2.bits(), 2);
    /// assert_eq!(DataType::Bf16.bits(), 16);
    /// ```
    pub fn bits(self) -> u32 {
        match self {
            DataType::F32 | DataType::I32 => 32,
            DataType::F16 | DataType::Bf16 | DataType::U16 | DataType::I16 => 16,
            DataType::U8
            | DataType::I8
            | DataType::E4M3Fn
            | DataType::E4M3FnUz
            | DataType::E5M2
            | DataType::E5M2FnUz
            | DataType::E8M0 => 8,
            DataType::E2M3 | DataType::E3M2 => 6,
            DataType::U4 | DataType::I4 | DataType::E2M1 => 4,
            DataType::U2 | DataType::I2 => 2,
        }
    }

    /// Bytes that `n` elements occupy in the ONNX serialisation, or `None` on overflow.
    ///
    /// ```
    /// use qdq_ref::DataType;
    /// assert_eq!(DataType::I4.byte_len(5), Some(3));
    /// assert_eq!(DataType::E2M3.byte_len(5), Some(4));
    /// assert_eq!(DataType::F32.byte_len(usize::MAX), None);
    /// ```
    pub fn byte_len(self, n: usize) -> Option<usize> {
        let bits = n.checked_mul(self.bits() as usize)?;
        Some(bits.div_ceil(8))
    }

    /// Bytes of elements `range` of an `n`-element output of this type, for writing a shard
    /// of it: `None` if the range leaves `0..n` or does not start and end on byte
    /// boundaries (the end may be `n`, whose last byte may be partial). An empty range is 0
    /// bytes anywhere in `0..=n`.
    ///
    /// ```
    /// use qdq_ref::DataType;
    /// assert_eq!(DataType::I4.range_byte_len(2..5, 5), Some(2)); // bytes 1 and 2
    /// assert_eq!(DataType::I4.range_byte_len(1..4, 5), None); // 1 is mid-byte
    /// assert_eq!(DataType::I4.range_byte_len(5..5, 5), Some(0));
    /// assert_eq!(DataType::F32.range_byte_len(3..6, 5), None); // past n
    /// ```
    pub fn range_byte_len(self, range: core::ops::Range<usize>, n: usize) -> Option<usize> {
        if range.start > range.end || range.end > n {
            return None;
        }
        if range.is_empty() {
            return Some(0);
        }
        let bits = self.bits() as usize;
        let end_bits = range.end.checked_mul(bits)?;
        // start <= end, so start * bits cannot overflow either.
        let start_bits = range.start * bits;
        if !start_bits.is_multiple_of(8) || !(end_bits.is_multiple_of(8) || range.end == n) {
            return None;
        }
        Some(end_bits.div_ceil(8) - start_bits / 8)
    }

    /// Integer quantized types: u8 i8 u16 i16 u4 i4 u2 i2 (not i32).
    ///
    /// ```
    /// use qdq_ref::DataType;
    /// assert!(DataType::U2.is_quantized_int());
    /// assert!(!DataType::I32.is_quantized_int());
    /// assert!(!DataType::E4M3Fn.is_quantized_int());
    /// ```
    pub fn is_quantized_int(self) -> bool {
        self.int_range().is_some() && self != DataType::I32
    }

    /// The four float8 types that honour `saturate`.
    ///
    /// ```
    /// use qdq_ref::DataType;
    /// assert!(DataType::E5M2FnUz.is_float8());
    /// assert!(!DataType::E8M0.is_float8());
    /// assert!(!DataType::E2M1.is_float8());
    /// ```
    pub fn is_float8(self) -> bool {
        matches!(self, DataType::E4M3Fn | DataType::E4M3FnUz | DataType::E5M2 | DataType::E5M2FnUz)
    }

    /// float4e2m1 and both float6 types: always saturating, no NaN or infinity.
    ///
    /// ```
    /// use qdq_ref::DataType;
    /// assert!(DataType::E2M1.is_float4_or_6() && DataType::E3M2.is_float4_or_6());
    /// assert!(!DataType::E4M3Fn.is_float4_or_6());
    /// ```
    pub fn is_float4_or_6(self) -> bool {
        matches!(self, DataType::E2M1 | DataType::E2M3 | DataType::E3M2)
    }

    /// Any low-precision float type a quantize can produce (float8, float6, float4).
    ///
    /// ```
    /// use qdq_ref::DataType;
    /// assert!(DataType::E4M3Fn.is_minifloat() && DataType::E2M3.is_minifloat());
    /// assert!(!DataType::E8M0.is_minifloat());
    /// assert!(!DataType::F16.is_minifloat());
    /// ```
    pub fn is_minifloat(self) -> bool {
        self.is_float8() || self.is_float4_or_6()
    }

    /// `[qmin, qmax]` of an integer type (including i32), `None` otherwise.
    ///
    /// ```
    /// use qdq_ref::DataType;
    /// assert_eq!(DataType::I4.int_range(), Some((-8, 7)));
    /// assert_eq!(DataType::U2.int_range(), Some((0, 3)));
    /// assert_eq!(DataType::I32.int_range(), Some((-2147483648, 2147483647)));
    /// assert_eq!(DataType::F16.int_range(), None);
    /// ```
    pub fn int_range(self) -> Option<(i64, i64)> {
        Some(match self {
            DataType::U8 => (0, 255),
            DataType::I8 => (-128, 127),
            DataType::U16 => (0, 65535),
            DataType::I16 => (-32768, 32767),
            DataType::U4 => (0, 15),
            DataType::I4 => (-8, 7),
            DataType::U2 => (0, 3),
            DataType::I2 => (-2, 1),
            DataType::I32 => (i32::MIN as i64, i32::MAX as i64),
            _ => return None,
        })
    }

    /// f32, f16 or bf16: the types a dequantize can produce and a division can run in.
    ///
    /// ```
    /// use qdq_ref::DataType;
    /// assert!(DataType::Bf16.is_wide_float());
    /// assert!(!DataType::E8M0.is_wide_float());
    /// assert!(!DataType::I32.is_wide_float());
    /// ```
    pub fn is_wide_float(self) -> bool {
        matches!(self, DataType::F32 | DataType::F16 | DataType::Bf16)
    }
}

impl fmt::Display for DataType {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

/// Formats a list of types as `u8, i8, ...` for error messages.
pub(crate) fn list(types: &[DataType]) -> String {
    let names: Vec<&str> = types.iter().map(|t| t.name()).collect();
    names.join(", ")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn onnx_round_trip_and_names() {
        for t in DataType::ALL {
            assert_eq!(DataType::from_onnx(t.onnx()), Some(t));
            assert_eq!(DataType::from_name(t.name()), Some(t));
        }
        assert_eq!(DataType::from_onnx(0), None);
        assert_eq!(DataType::from_onnx(11), None); // DOUBLE
        assert_eq!(DataType::from_onnx(i64::MAX), None);
    }

    #[test]
    fn byte_lengths() {
        assert_eq!(DataType::U4.byte_len(5), Some(3));
        assert_eq!(DataType::I2.byte_len(5), Some(2));
        assert_eq!(DataType::E2M3.byte_len(5), Some(4));
        assert_eq!(DataType::E3M2.byte_len(4), Some(3));
        assert_eq!(DataType::E2M3.byte_len(1), Some(1));
        assert_eq!(DataType::F32.byte_len(3), Some(12));
        assert_eq!(DataType::F32.byte_len(usize::MAX), None);
        assert_eq!(DataType::E2M3.byte_len(0), Some(0));
    }
}
