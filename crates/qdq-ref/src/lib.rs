//! # qdq-ref: the executable specification of ONNX linear quantization
//!
//! A scalar, obviously-correct implementation of `QuantizeLinear` (ai.onnx opsets 10, 13,
//! 19, 21, 23, 24, 25, 28 and `com.microsoft` 1), `DequantizeLinear` (same versions) and
//! `DynamicQuantizeLinear` (11), for every element type those versions define. The SIMD
//! crate `qdq` is tested against it bit for bit. Clarity over speed; no `unsafe`.
//!
//! ## Formulas
//!
//! ```text
//! QuantizeLinear:    q = round_P(round_P(x) / round_P(s))
//!                    integer y = NaN(q) ? qmin : clamp(roundTiesEven(q) + zp, qmin, qmax)
//!                    float8  y = cast(q, saturate)        float4/6 y = cast_saturating(q [+ zp])
//! DequantizeLinear:  y = round_O(f32(f32(x - zp) * f32(s)))      (x - zp exact in integers)
//! DynamicQuantizeLinear (u8, f32 throughout):
//!                    lo = min(min x, 0); hi = max(max x, 0); s = (hi - lo) / 255
//!                    zp = roundTiesEven(clamp(-lo / s, 0, 255)); y = QuantizeLinear(x, s, zp)
//! ```
//!
//! `P` (the division precision) is `precision` when set, else the scale's type (e8m0 → f32,
//! i32 → f64). `O` (the output type) is `output_dtype` when set, else the scale's type.
//! See [`mod@quantize`], [`mod@dequantize`] and [`dynamic`] for every subtle point, [`float`] for
//! the float8 / float6 / float4 / e8m0 codecs and their saturation tables, [`packing`] for
//! the sub-byte layouts and [`layout`] for per-tensor / per-axis / blocked granularity.
//!
//! ## Where this crate deliberately differs from the ONNX reference implementation
//!
//! The ONNX reference (`onnx.reference`) is wrong or silent in places (rules R1-R21 of the README). This
//! crate follows the operator text and makes every case deterministic:
//!
//! | case | this crate | reference |
//! |---|---|---|
//! | ±inf or quotients beyond i32 (R1), zero-point add overflow (R2), f16 quotient overflow (R6) | saturate to qmin / qmax | wraps to qmin |
//! | NaN to an integer type (R3) | qmin (same as reference and onnxruntime) | qmin |
//! | scale 0 (R4) | IEEE quotient: +x → qmax, −x → qmin, 0 → NaN → qmin | all qmin |
//! | division precision with f16 / bf16 scale and f32 x (R5) | the scale's type | numpy promotion (f32) |
//! | i32 x with f32 scale (R7) | f32 | f64 |
//! | i32 scale (R8) | f64 division (reference parity; documented) | f64 |
//! | non-zero float8 / float4 / float6 zero point (R9, R10) | error `NonZeroZeroPoint` | ignored, added or subtracted depending on the type |
//! | float4 / float6 zero point ±0 in Q | added as a float (turns −0 into +0), as the reference | same |
//! | DQ of i32 with a zero point (R11) | exact integer subtraction | rounds x to f32 first |
//! | DQ float8 zero point −0 (R12) | accepted (compared by value) | accepted |
//! | DQ with an e8m0 scale and no `output_dtype` (R13) | error `MissingAttribute` | returns an e8m0 tensor |
//! | blocked scale with a block too large (R14) | error: needs `S == ceil(D / B)` | accepted |
//! | zero-point shape ≠ scale shape (R15) | error, except scalar ↔ `[1]` (R16) | accepted |
//! | size-1 scale of rank ≥ 2 with `block_size = 0` (R16) | error | per-tensor |
//! | DynamicQuantizeLinear with range 0 (R17) | scale 0, zp 0 (the function body) | scale 1/255 |
//! | DynamicQuantizeLinear of an empty tensor (R18) | scale 0, zp 0, empty y | error |
//! | DynamicQuantizeLinear with NaN | NaN ignored in min/max, NaN element → 0 (as onnxruntime) | scale NaN |
//! | DequantizeLinear at opsets 10 / 13 (R19) | implemented; opset 10 per-tensor only | missing |
//! | `precision` other than f32 / f16 / bf16 (R20) | error `InvalidAttribute` | truncates |
//! | `saturate = 0` with float4 / float6 (R21) | ignored: those types always saturate | ignored |
//! | float4 / float6 NaN (undefined) | +NaN → −0 code, −NaN → +0 (ml_dtypes parity) | same |
//! | `com.microsoft` `axis` absent | 1 (what onnxruntime's kernel does) | – |
//!
//! ## Two API levels
//!
//! * The **slice API** ([`quantize()`], [`dequantize()`], [`dynamic_quantize()`]) takes
//!   typed slices ([`element`]) and a [`Params`] (scales, zero points, [`Layout`]) and
//!   writes into a caller-provided buffer; it allocates nothing.
//! * The **tensor API** ([`quantize_linear`], [`dequantize_linear`],
//!   [`dynamic_quantize_linear`], [`run_node`]) takes type-tagged tensor views
//!   ([`TensorRef`]), attributes and the opset, enforces every per-version rule and returns
//!   [`Tensor`]s.
//!
//! ```
//! use qdq_ref::{dequantize, quantize, Params};
//! let params = Params::per_axis(&[0.5f32, 2.0], &[2, 2], 1)?; // one scale per column
//! let mut q = [0i8; 4];
//! quantize(&[1.0f32, 1.0, -3.0, 300.0], &params, &mut q)?;
//! assert_eq!(q, [2, 0, -6, 127]); // 0.5 rounds to even; 150 saturates
//! let mut back = [0f32; 4];
//! dequantize(&q, &params, &mut back)?;
//! assert_eq!(back, [1.0, 0.0, -3.0, 254.0]);
//! # Ok::<(), qdq_ref::Error>(())
//! ```
//!
//! ## Training mode
//!
//! [`train`] adds what ONNX does not have: QuantizeLinear's forward with a bit-packed
//! representability mask, the straight-through backward passes with the `lda` coefficient,
//! fused fake quantization and the learnable scale / zero-point gradients (LSQ), with a
//! documented summation order so that every backend gives the same bits.
//!
//! Every failure is an [`Error`] with an [`ErrorKind`] and a message naming the offending
//! input; no input panics.

#![forbid(unsafe_code)]
#![deny(rustdoc::broken_intra_doc_links)]
#![deny(missing_docs)]

pub mod dequantize;
pub mod dtype;
pub mod dynamic;
pub mod element;
mod error;
pub mod float;
pub mod layout;
pub mod packing;
mod params;
pub mod quantize;
pub mod scaled;
pub mod schema;
pub mod tensor;
pub mod train;
pub mod values;

pub use dequantize::dequantize;
pub use dtype::DataType;
pub use dynamic::dynamic_quantize;
pub use element::{Element, Float8E4M3Fn, Float8E4M3FnUz, Float8E5M2, Float8E5M2FnUz, Float8E8M0};
pub use error::{Error, ErrorKind, Result};
pub use half::{bf16, f16};
pub use layout::Layout;
pub use params::Params;
pub use quantize::{quantize, Precision, QuantizeOptions};
pub use schema::{Domain, Opset};
pub use tensor::{
    dequantize_linear, dynamic_quantize_linear, quantize_linear, run_node, Attribute, Backend, DequantizeAttributes,
    DequantizePlan, DynamicQuantized, QuantizeAttributes, QuantizePlan, Reference, Tensor, TensorRef,
};
pub use train::{FakeQuantGrads, GradOptions, QuantParams};
pub use values::{Packed, PackedMut, Values, ValuesMut};
