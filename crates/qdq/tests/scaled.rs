//! The quantizers that compute their own scales (`qdq::scaled`): per-row, blockwise
//! (symmetric, asymmetric, onnxruntime-compatible), MX and NVFP4, on every available ISA,
//! sequential and parallel, against `qdq_ref::scaled` bit for bit (y, scales, zero
//! points): 1-D lengths 0..=300, every axis of 2-D and 3-D shapes, blocks of 1 to 256 with
//! remainders, x in f32 / f16 / bf16, all-zero blocks, single nonzeros, NaN, ±inf,
//! subnormal and huge blocks, format maxima; and the DequantizeLinear round trip.

mod common;

#[test]
fn rows_match_reference() {
    common::scaled::rows_match_reference();
}

#[test]
fn rows_u8_is_dynamic_quantize_per_row() {
    common::scaled::rows_u8_is_dynamic_quantize_per_row();
}

#[test]
fn blockwise_matches_reference() {
    common::scaled::blockwise_matches_reference();
}

#[test]
fn onnxruntime_mode_matches_reference() {
    common::scaled::onnxruntime_mode_matches_reference();
    common::scaled::onnxruntime_mode_ties();
}

#[test]
fn blockwise_wide_columns() {
    common::scaled::blockwise_wide_columns();
}

#[test]
fn mx_matches_reference() {
    common::scaled::mx_matches_reference();
}

#[test]
fn nvfp4_matches_reference() {
    common::scaled::nvfp4_matches_reference();
}

#[test]
fn large_scaled_parallel() {
    common::scaled::large_scaled_parallel();
}

#[test]
fn outputs_round_trip_through_dequantize() {
    common::scaled::outputs_round_trip_through_dequantize();
}

#[test]
fn tensor_level_feeds_dequantize_linear() {
    common::scaled::tensor_level_feeds_dequantize_linear();
}
