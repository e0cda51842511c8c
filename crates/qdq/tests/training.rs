//! Training mode (`qdq::train`) on every available ISA (forced), sequential and parallel,
//! against `qdq_ref::train` bit for bit: forwards with masks (and against the inference
//! ops), every backward pass, the deterministic sums.

mod common;

#[test]
fn training_matches_reference_every_type_and_layout() {
    common::training::training_matches_reference_every_type_and_layout();
}

#[test]
fn training_lengths_0_to_512() {
    common::training::training_lengths_0_to_512();
}

#[test]
fn training_large_parallel() {
    common::training::training_large_parallel();
}
