//! Reading and writing element codes in the ONNX serialisation.
//!
//! Every layout ONNX uses is the same rule: a tensor is a little-endian, LSB-first bit
//! stream and element `i` of a `w`-bit type occupies bits `[i*w, i*w + w)`. That gives
//!
//! * 4-bit: element `2k` in the low nibble of byte `k`, `2k+1` in its high nibble;
//! * 2-bit: `b = x0 | x1 << 2 | x2 << 4 | x3 << 6`;
//! * 6-bit: `b0 = x0 | (x1 & 3) << 6`, `b1 = x1 >> 2 | (x2 & 0xF) << 4`, `b2 = x2 >> 4 | x3 << 2`;
//! * 8/16/32-bit: plain little-endian words.
//!
//! Readers ignore padding bits (onnxruntime leaves garbage there). Writers in
//! this crate always leave them zero: see [`zero_padding`].

use crate::dtype::DataType;

/// Returns the `bits(t)`-bit code of element `i`. The caller guarantees that `data` holds
/// at least `i + 1` elements.
///
/// ```
/// use qdq_ref::{packing::get, DataType};
/// let data = [0xe1, 0x87, 0x03];
/// assert_eq!(get(DataType::I4, &data, 0), 0x1); // low nibble first
/// assert_eq!(get(DataType::I4, &data, 1), 0xe);
/// assert_eq!(get(DataType::U2, &data, 3), 0b11);
/// ```
pub fn get(t: DataType, data: &[u8], i: usize) -> u32 {
    let w = t.bits() as usize;
    let first_bit = i * w;
    let (byte, shift) = (first_bit / 8, first_bit % 8);
    let span = (shift + w).div_ceil(8);
    let mut acc: u64 = 0;
    for (k, b) in data[byte..byte + span].iter().enumerate() {
        acc |= (*b as u64) << (8 * k);
    }
    ((acc >> shift) & ((1u64 << w) - 1)) as u32
}

/// Stores the low `bits(t)` bits of `code` as element `i`, leaving every other bit as is.
///
/// ```
/// use qdq_ref::{packing::set, DataType};
/// let mut data = [0xff; 2];
/// set(DataType::U4, &mut data, 1, 0x2);
/// set(DataType::U4, &mut data, 2, 0x15); // only the low 4 bits are stored
/// assert_eq!(data, [0x2f, 0xf5]);
/// ```
pub fn set(t: DataType, data: &mut [u8], i: usize, code: u32) {
    let w = t.bits() as usize;
    let first_bit = i * w;
    let (byte, shift) = (first_bit / 8, first_bit % 8);
    let span = (shift + w).div_ceil(8);
    let mask = ((1u64 << w) - 1) << shift;
    let value = ((code as u64) << shift) & mask;
    for (k, b) in data[byte..byte + span].iter_mut().enumerate() {
        let m = (mask >> (8 * k)) as u8;
        *b = (*b & !m) | (value >> (8 * k)) as u8;
    }
}

/// Zeroes the bits after the last of `n` elements in the final byte.
///
/// ```
/// use qdq_ref::{packing::zero_padding, DataType};
/// let mut data = [0xff; 2];
/// zero_padding(DataType::I4, &mut data, 3);
/// assert_eq!(data, [0xff, 0x0f]);
/// ```
pub fn zero_padding(t: DataType, data: &mut [u8], n: usize) {
    let used_bits = n * t.bits() as usize;
    if !used_bits.is_multiple_of(8) {
        let last = used_bits / 8;
        data[last] &= (1u8 << (used_bits % 8)) - 1;
    }
}

/// Sign-extends a `bits`-wide two's-complement code.
///
/// ```
/// use qdq_ref::packing::sign_extend;
/// assert_eq!(sign_extend(0xe, 4), -2);
/// assert_eq!(sign_extend(0x7, 4), 7);
/// assert_eq!(sign_extend(0b10, 2), -2);
/// ```
pub fn sign_extend(code: u32, bits: u32) -> i64 {
    let shift = 64 - bits;
    ((code as i64) << shift) >> shift
}

/// Reads element `i` of an integer type (u8 ... i32) as its value.
///
/// ```
/// use qdq_ref::{packing::get_int, DataType};
/// let data = [0xe1, 0x87, 0x03];
/// assert_eq!(get_int(DataType::I4, &data, 1), -2);
/// assert_eq!(get_int(DataType::I4, &data, 3), -8);
/// assert_eq!(get_int(DataType::U4, &data, 1), 14);
/// ```
pub fn get_int(t: DataType, data: &[u8], i: usize) -> i64 {
    int_value(t, get(t, data, i))
}

/// The value of a code of an integer type (u8 ... i32): sign-extended for signed types.
///
/// ```
/// use qdq_ref::{packing::int_value, DataType};
/// assert_eq!(int_value(DataType::I8, 0xff), -1);
/// assert_eq!(int_value(DataType::U8, 0xff), 255);
/// assert_eq!(int_value(DataType::I2, 0b10), -2);
/// ```
pub fn int_value(t: DataType, code: u32) -> i64 {
    match t {
        DataType::I8 | DataType::I16 | DataType::I32 | DataType::I4 | DataType::I2 => sign_extend(code, t.bits()),
        _ => code as i64,
    }
}

/// Writes the value `v` (already in range) as element `i` of an integer type.
///
/// ```
/// use qdq_ref::{packing::set_int, DataType};
/// let mut data = [0u8; 2];
/// for (i, v) in [1, -2, 7].into_iter().enumerate() {
///     set_int(DataType::I4, &mut data, i, v);
/// }
/// assert_eq!(data, [0xe1, 0x07]);
/// ```
pub fn set_int(t: DataType, data: &mut [u8], i: usize, v: i64) {
    set(t, data, i, v as u32 & (((1u64 << t.bits()) - 1) as u32));
}

#[cfg(test)]
mod tests {
    use super::*;

    fn pack_ints(t: DataType, values: &[i64]) -> Vec<u8> {
        let mut out = vec![0xffu8; t.byte_len(values.len()).unwrap()];
        for (i, v) in values.iter().enumerate() {
            set_int(t, &mut out, i, *v);
        }
        zero_padding(t, &mut out, values.len());
        out
    }

    #[test]
    fn packing_examples() {
        assert_eq!(pack_ints(DataType::I4, &[1, -2, 7, -8, 3]), [0xe1, 0x87, 0x03]);
        assert_eq!(pack_ints(DataType::U4, &[1, 2, 15]), [0x21, 0x0f]);
        assert_eq!(pack_ints(DataType::U2, &[1, 2, 3, 0, 3]), [0x39, 0x03]);
        assert_eq!(pack_ints(DataType::I2, &[0, 1, -1, -2, 1]), [0xb4, 0x01]);
        assert_eq!(pack_ints(DataType::E2M1, &[2, 9, 7]), [0x92, 0x07]);
        assert_eq!(pack_ints(DataType::E2M3, &[0x08, 0x28, 0x1f, 0x01, 0x10]), [0x08, 0xfa, 0x05, 0x10]);
        assert_eq!(pack_ints(DataType::E3M2, &[0x0c, 0x2c, 0x1f, 0x01]), [0x0c, 0xfb, 0x05]);
        assert_eq!(pack_ints(DataType::I16, &[-2, 258]), [0xfe, 0xff, 0x02, 0x01]);
        assert_eq!(pack_ints(DataType::I32, &[-2]), [0xfe, 0xff, 0xff, 0xff]);
    }

    #[test]
    fn reads_ignore_padding_and_round_trip() {
        let data = [0xe1, 0x87, 0xf3]; // garbage in the high nibble of the last byte
        let got: Vec<i64> = (0..5).map(|i| get_int(DataType::I4, &data, i)).collect();
        assert_eq!(got, [1, -2, 7, -8, 3]);
        let f6 = [0x08, 0xfa, 0x05, 0xd0];
        let codes: Vec<u32> = (0..5).map(|i| get(DataType::E2M3, &f6, i)).collect();
        assert_eq!(codes, [0x08, 0x28, 0x1f, 0x01, 0x10]);
        for t in DataType::ALL {
            let n = 37;
            let mut buf = vec![0u8; t.byte_len(n).unwrap()];
            let mask = ((1u64 << t.bits()) - 1) as u32;
            for i in 0..n {
                set(t, &mut buf, i, (i as u32).wrapping_mul(0x9e37_79b9) & mask);
            }
            for i in 0..n {
                assert_eq!(get(t, &buf, i), (i as u32).wrapping_mul(0x9e37_79b9) & mask, "{t} {i}");
            }
        }
    }
}
