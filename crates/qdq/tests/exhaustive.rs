//! Exhaustive checks against `qdq_ref`, on every ISA this CPU has.
//!
//! The small domains run in the normal test suite: every f16 and bf16 bit pattern through
//! QuantizeLinear (to every output type, with awkward scales), every code of every type
//! through DequantizeLinear. The big one — all 2^32 f32 inputs through every float8
//! encoder (both saturate modes) and the float4 / float6 encoders, and through fake
//! quantization to each of them — is `#[ignore]`d and run in release mode by `cargo xtask
//! exhaustive` (minutes on two cores).

mod common;

#[test]
fn every_f16_and_bf16_pattern_through_quantize() {
    common::exhaustive::every_f16_and_bf16_pattern_through_quantize();
}

#[test]
fn every_f16_and_bf16_pattern_with_worst_reciprocals() {
    common::exhaustive::every_f16_and_bf16_pattern_with_worst_reciprocals();
}

#[test]
fn every_code_of_every_type_through_dequantize() {
    common::exhaustive::every_code_of_every_type_through_dequantize();
}

#[test]
#[ignore = "minutes in release mode: run by `cargo xtask exhaustive`"]
fn all_f32_inputs_through_every_minifloat_encoder() {
    common::exhaustive::all_f32_inputs_through_every_minifloat_encoder();
}

#[test]
#[ignore = "minutes in release mode: run by `cargo xtask exhaustive`"]
fn all_f32_inputs_through_fake_quantize_to_every_minifloat() {
    common::exhaustive::all_f32_inputs_through_fake_quantize_to_every_minifloat();
}
