//! Differential tests: `qdq` on every available ISA (forced), sequential and parallel,
//! against `qdq_ref`, bit for bit. Lengths 0..=512 and larger, misaligned byte offsets,
//! every layout and type, random data mixed with specials (`qdq_fixtures::F32_SPECIALS`:
//! ±0, ±inf, NaNs with payloads, subnormals, saturation edges) and ties (k+1/2)s, and
//! awkward scales (powers of two, tiny, subnormal, zero, negative, huge).

mod common;

#[test]
fn quantize_every_output_type_from_f32() {
    common::differential::quantize_every_output_type_from_f32();
}

#[test]
fn quantize_from_f16_bf16_i32_and_other_scale_types() {
    common::differential::quantize_from_f16_bf16_i32_and_other_scale_types();
}

#[test]
fn quantize_with_middle_zero_points() {
    common::differential::quantize_with_middle_zero_points();
}

#[test]
fn quantize_with_precision_attribute() {
    common::differential::quantize_with_precision_attribute();
}

#[test]
fn quantize_float4_6_tiny_quotients_with_zero_point() {
    common::differential::quantize_float4_6_tiny_quotients_with_zero_point();
}

#[test]
fn quantize_lengths_0_to_512_all_isas() {
    common::differential::quantize_lengths_0_to_512_all_isas();
}

#[test]
fn dequantize_every_input_type() {
    common::differential::dequantize_every_input_type();
}

#[test]
fn dynamic_quantize_matches_reference() {
    common::differential::dynamic_quantize_matches_reference();
}

#[test]
fn large_parallel_per_axis_and_blocked() {
    common::differential::large_parallel_per_axis_and_blocked();
}

/// Calls made from a worker of a rayon pool (an engine that runs its graph on rayon): the
/// `*/par` configurations then run on that pool, their helpers as `rayon::join` jobs on
/// the worker's stack instead of jobs spawned from outside. Three threads: two helpers.
#[test]
fn calls_from_a_worker_of_a_rayon_pool() {
    let pool = rayon::ThreadPoolBuilder::new().num_threads(3).build().unwrap();
    pool.install(|| {
        assert!(rayon::current_thread_index().is_some());
        common::differential::large_parallel_per_axis_and_blocked();
        common::differential::dynamic_quantize_matches_reference();
        common::differential::dequantize_every_input_type();
    });
}

#[test]
fn sixteen_bit_layouts_near_the_i32_range() {
    common::differential::sixteen_bit_layouts_near_the_i32_range();
}

#[test]
fn blocked_last_8bit() {
    common::differential::blocked_last_8bit();
}

#[test]
fn per_axis_last_whole_bytes() {
    common::differential::per_axis_last_whole_bytes();
}

#[test]
fn shards_match_the_whole_call() {
    common::differential::shards_match_the_whole_call();
}
