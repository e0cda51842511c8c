//! Typed elements: the Rust types that stand for ONNX element types in the slice and
//! tensor APIs.
//!
//! | ONNX type | Rust type | where it appears |
//! |---|---|---|
//! | FLOAT, FLOAT16, BFLOAT16 | `f32`, [`f16`](struct@half::f16), [`bf16`] | x, scales, dequantized output |
//! | INT32 | `i32` | x (QuantizeLinear), x and zero point (DequantizeLinear) |
//! | UINT8, INT8, UINT16, INT16 | `u8`, `i8`, `u16`, `i16` | quantized values and zero points |
//! | FLOAT8E4M3FN, FLOAT8E4M3FNUZ, FLOAT8E5M2, FLOAT8E5M2FNUZ | [`Float8E4M3Fn`], [`Float8E4M3FnUz`], [`Float8E5M2`], [`Float8E5M2FnUz`] | quantized values |
//! | FLOAT8E8M0 | [`Float8E8M0`] | scales (MX formats) |
//! | UINT4, INT4, UINT2, INT2, FLOAT4E2M1, FLOAT6E2M3, FLOAT6E3M2 | bytes, packed | [`Packed`](crate::Packed) / [`PackedMut`](crate::PackedMut) with a [`DataType`] |
//!
//! Slices of these types convert into the views the operators take ([`Values`](crate::Values),
//! [`ValuesMut`](crate::ValuesMut), [`Packed`](crate::Packed),
//! [`PackedMut`](crate::PackedMut)) with `From`, so `&x`, `&mut y` (a `Vec`, an array or a
//! slice) can be passed directly. Sub-byte types have no Rust element type: they travel as
//! packed bytes in the ONNX layout (see [`crate::packing`]), and
//! [`DataType::byte_len`] says how many bytes `n` elements need.

use crate::dtype::DataType;
use crate::float::{canonical_nan, decode_e8m0, FloatFormat};
use core::fmt;
use half::{bf16, f16};
use zerocopy::{FromBytes, Immutable, IntoBytes, KnownLayout};

mod sealed {
    /// Closes [`super::Element`] to this crate's types and gives it safe byte views.
    pub trait Sealed: zerocopy::IntoBytes + zerocopy::FromBytes + zerocopy::Immutable + zerocopy::KnownLayout {}
}

/// A Rust type that stands for one ONNX element type (see the module docs). Implemented
/// for `f32`, [`f16`](struct@half::f16), [`bf16`], `i32`, `u8`, `i8`, `u16`, `i16` and the float8 types of
/// this module; it cannot be implemented outside this crate.
///
/// ```
/// use qdq_ref::{DataType, Element, Float8E4M3Fn};
/// assert_eq!(<i8 as Element>::DTYPE, DataType::I8);
/// assert_eq!(Float8E4M3Fn::DTYPE, DataType::E4M3Fn);
/// ```
pub trait Element: sealed::Sealed + Copy + Send + Sync + fmt::Debug + 'static {
    /// The ONNX element type this Rust type stands for.
    const DTYPE: DataType;
}

/// The bytes of a typed slice in the target's byte order (the ONNX serialisation on the
/// little-endian targets `qdq` runs on; `qdq-ref` reads and writes them with explicit
/// byte order).
///
/// ```
/// use qdq_ref::{element::bytes_of, Float8E8M0};
/// assert_eq!(bytes_of(&[Float8E8M0(127), Float8E8M0(3)]), [127, 3]);
/// ```
pub fn bytes_of<T: Element>(s: &[T]) -> &[u8] {
    s.as_bytes()
}

/// The bytes of a typed slice, writable (see [`bytes_of`]).
///
/// ```
/// use qdq_ref::{element::bytes_of_mut, Float8E4M3Fn};
/// let mut s = [Float8E4M3Fn(0); 2];
/// bytes_of_mut(&mut s)[1] = 0x38;
/// assert_eq!(s[1].to_f32(), 1.0);
/// ```
pub fn bytes_of_mut<T: Element>(s: &mut [T]) -> &mut [u8] {
    s.as_mut_bytes()
}

/// A writable typed view of `bytes`, or `None` when their length or address does not fit
/// `T`.
pub(crate) fn slice_of_mut<T: Element>(bytes: &mut [u8]) -> Option<&mut [T]> {
    <[T]>::mut_from_bytes(bytes).ok()
}

/// A typed view of `bytes`, or `None` when their length or address does not fit `T`.
pub(crate) fn slice_of<T: Element>(bytes: &[u8]) -> Option<&[T]> {
    <[T]>::ref_from_bytes(bytes).ok()
}

macro_rules! element {
    ($($t:ty => $d:ident),* $(,)?) => {$(
        impl sealed::Sealed for $t {}
        impl Element for $t {
            const DTYPE: DataType = DataType::$d;
        }
    )*};
}

element!(f32 => F32, f16 => F16, bf16 => Bf16, i32 => I32, u8 => U8, i8 => I8, u16 => U16, i16 => I16);

macro_rules! float8 {
    ($(#[$doc:meta])* $name:ident, $d:ident, $fmt:ident, $one:literal, $nan:literal) => {
        $(#[$doc])*
        #[derive(Clone, Copy, Default, PartialEq, Eq, Hash, FromBytes, IntoBytes, Immutable, KnownLayout)]
        #[repr(transparent)]
        pub struct $name(
            /// The code: the element's bits.
            pub u8,
        );

        impl sealed::Sealed for $name {}
        impl Element for $name {
            const DTYPE: DataType = DataType::$d;
        }

        impl $name {
            /// The element with these bits.
            ///
            /// ```
            #[doc = concat!("use qdq_ref::", stringify!($name), ";")]
            #[doc = concat!("assert_eq!(", stringify!($name), "::from_bits(", $one, ").to_f32(), 1.0);")]
            /// ```
            pub const fn from_bits(bits: u8) -> Self {
                $name(bits)
            }

            /// The element's bits.
            ///
            /// ```
            #[doc = concat!("use qdq_ref::", stringify!($name), ";")]
            #[doc = concat!("assert_eq!(", stringify!($name), "::from_f32(1.0).to_bits(), ", $one, ");")]
            /// ```
            pub const fn to_bits(self) -> u8 {
                self.0
            }

            /// The exact value; every NaN code gives the canonical NaN `0x7fc0_0000`.
            ///
            /// ```
            #[doc = concat!("use qdq_ref::", stringify!($name), ";")]
            #[doc = concat!("assert_eq!(", stringify!($name), "::from_bits(", $one, ").to_f32(), 1.0);")]
            #[doc = concat!("assert!(", stringify!($name), "::from_bits(", $nan, ").to_f32().is_nan());")]
            /// ```
            pub fn to_f32(self) -> f32 {
                let fmt: FloatFormat = crate::float::$fmt;
                canonical_nan(fmt.decode(self.0 as u32) as f32)
            }

            /// `v` rounded to nearest-even, saturating: what QuantizeLinear gives with a
            /// scale of 1 and `saturate = 1` (finite overflow and ±inf go to ±max, except
            /// that e5m2 keeps ±inf; NaN gives the type's NaN).
            ///
            /// ```
            #[doc = concat!("use qdq_ref::", stringify!($name), ";")]
            #[doc = concat!("assert_eq!(", stringify!($name), "::from_f32(1.0).to_bits(), ", $one, ");")]
            #[doc = concat!("assert_eq!(", stringify!($name), "::from_f32(1.0e9), ", stringify!($name), "::from_f32(f32::MAX));")]
            /// ```
            pub fn from_f32(v: f32) -> Self {
                let fmt: FloatFormat = crate::float::$fmt;
                $name(fmt.encode(v as f64, true) as u8)
            }
        }

        impl fmt::Debug for $name {
            fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                write!(f, "{}({:#04x} = {})", stringify!($name), self.0, self.to_f32())
            }
        }

        impl fmt::Display for $name {
            fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                fmt::Display::fmt(&self.to_f32(), f)
            }
        }
    };
}

float8!(
    /// float8 e4m3fn (ONNX FLOAT8E4M3FN): finite only, max ±448, NaN = `S.1111.111`.
    Float8E4M3Fn, E4M3Fn, E4M3FN, "0x38", "0x7f"
);
float8!(
    /// float8 e4m3fnuz (ONNX FLOAT8E4M3FNUZ): finite only, no −0, max ±240, NaN = `0x80`.
    Float8E4M3FnUz, E4M3FnUz, E4M3FNUZ, "0x40", "0x80"
);
float8!(
    /// float8 e5m2 (ONNX FLOAT8E5M2): IEEE-like with ±inf and NaNs, max ±57344.
    Float8E5M2, E5M2, E5M2, "0x3c", "0x7f"
);
float8!(
    /// float8 e5m2fnuz (ONNX FLOAT8E5M2FNUZ): finite only, no −0, max ±57344, NaN = `0x80`.
    Float8E5M2FnUz, E5M2FnUz, E5M2FNUZ, "0x40", "0x80"
);

/// float8 e8m0 (ONNX FLOAT8E8M0): an unsigned power of two `2^(code - 127)`, `0xff` is NaN.
/// A scale type only (the MX formats' shared block scale).
#[derive(Clone, Copy, Default, PartialEq, Eq, Hash, FromBytes, IntoBytes, Immutable, KnownLayout)]
#[repr(transparent)]
pub struct Float8E8M0(
    /// The code: the biased exponent.
    pub u8,
);

impl sealed::Sealed for Float8E8M0 {}
impl Element for Float8E8M0 {
    const DTYPE: DataType = DataType::E8M0;
}

impl Float8E8M0 {
    /// The scale `2^exponent`, or `None` outside `2^-127 ..= 2^127`.
    ///
    /// ```
    /// use qdq_ref::Float8E8M0;
    /// assert_eq!(Float8E8M0::from_exponent(-3).unwrap().to_f32(), 0.125);
    /// assert_eq!(Float8E8M0::from_exponent(128), None);
    /// ```
    pub fn from_exponent(exponent: i32) -> Option<Self> {
        let code = exponent.checked_add(127)?;
        (0..=254).contains(&code).then_some(Float8E8M0(code as u8))
    }

    /// The value `2^(code - 127)`; the code `0xff` gives the canonical NaN.
    ///
    /// ```
    /// use qdq_ref::Float8E8M0;
    /// assert_eq!(Float8E8M0(127).to_f32(), 1.0);
    /// assert!(Float8E8M0(0xff).to_f32().is_nan());
    /// ```
    pub fn to_f32(self) -> f32 {
        canonical_nan(decode_e8m0(self.0))
    }
}

impl fmt::Debug for Float8E8M0 {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "Float8E8M0({:#04x} = {})", self.0, self.to_f32())
    }
}

impl fmt::Display for Float8E8M0 {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        fmt::Display::fmt(&self.to_f32(), f)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::float;

    #[test]
    fn float8_wrappers_decode_and_encode_with_the_codecs() {
        for code in 0..=255u8 {
            let pairs: [(f32, f64, u8, u32); 4] = [
                (
                    Float8E4M3Fn(code).to_f32(),
                    float::E4M3FN.decode(code as u32),
                    Float8E4M3Fn::from_f32(Float8E4M3Fn(code).to_f32()).0,
                    float::E4M3FN.encode(float::E4M3FN.decode(code as u32), true),
                ),
                (
                    Float8E4M3FnUz(code).to_f32(),
                    float::E4M3FNUZ.decode(code as u32),
                    Float8E4M3FnUz::from_f32(Float8E4M3FnUz(code).to_f32()).0,
                    float::E4M3FNUZ.encode(float::E4M3FNUZ.decode(code as u32), true),
                ),
                (
                    Float8E5M2(code).to_f32(),
                    float::E5M2.decode(code as u32),
                    Float8E5M2::from_f32(Float8E5M2(code).to_f32()).0,
                    float::E5M2.encode(float::E5M2.decode(code as u32), true),
                ),
                (
                    Float8E5M2FnUz(code).to_f32(),
                    float::E5M2FNUZ.decode(code as u32),
                    Float8E5M2FnUz::from_f32(Float8E5M2FnUz(code).to_f32()).0,
                    float::E5M2FNUZ.encode(float::E5M2FNUZ.decode(code as u32), true),
                ),
            ];
            for (got, want, round_trip, want_round_trip) in pairs {
                if want.is_nan() {
                    assert_eq!(got.to_bits(), float::CANONICAL_NAN.to_bits(), "code {code:#04x}");
                } else {
                    assert_eq!(got.to_bits(), (want as f32).to_bits(), "code {code:#04x}");
                    assert_eq!(round_trip as u32, want_round_trip, "code {code:#04x}");
                }
            }
        }
        assert_eq!(Float8E8M0(0).to_f32(), 2f32.powi(-127));
        assert_eq!(Float8E8M0::from_exponent(-127), Some(Float8E8M0(0)));
        assert_eq!(Float8E8M0::from_exponent(127), Some(Float8E8M0(254)));
        assert_eq!(Float8E8M0::from_exponent(-128), None);
        assert_eq!(Float8E8M0::from_exponent(i32::MAX), None);
    }

    #[test]
    fn byte_views_are_little_endian() {
        assert_eq!(bytes_of(&[0x0102_0304i32]), [4, 3, 2, 1]);
        assert_eq!(bytes_of(&[f16::from_bits(0x3c00)]), [0x00, 0x3c]);
        let words = [0u32; 2];
        let bytes = words.as_bytes();
        assert_eq!(slice_of::<f32>(bytes).map(<[f32]>::len), Some(2));
        assert_eq!(slice_of::<f32>(&bytes[1..5]), None);
    }
}
