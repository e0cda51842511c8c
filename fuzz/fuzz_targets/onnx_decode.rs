//! Arbitrary bytes into the conformance runner's ONNX decoding (`xtask/src/proto.rs`, prost):
//! as a model, as a TensorProto, and every tensor and attribute found converted the way
//! the runner converts them. Each must return a value or an error: no panic, no
//! allocation beyond what the input's size bounds (libFuzzer's -rss_limit_mb and
//! -malloc_limit_mb enforce it).
#![no_main]

use libfuzzer_sys::fuzz_target;
use qdq_fuzz::proto::{decode, ModelProto, TensorProto};

fuzz_target!(|data: &[u8]| {
    if let Ok(t) = decode::<TensorProto>(data) {
        if let Ok(tensor) = t.to_tensor() {
            // The runner relies on this invariant when it hands tensors to the operators.
            assert_eq!(tensor.dtype().byte_len(tensor.len()), Some(tensor.bytes().len()));
        }
    }
    if let Ok(m) = decode::<ModelProto>(data) {
        if let Some(g) = &m.graph {
            for t in &g.initializer {
                let _ = t.to_tensor();
            }
            for node in &g.node {
                for a in &node.attribute {
                    let _ = a.as_int();
                    if let Some(t) = &a.t {
                        let _ = t.to_tensor();
                    }
                }
            }
        }
    }
});
