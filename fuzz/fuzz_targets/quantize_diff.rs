//! QuantizeLinear: `qdq-ref` against `qdq` on every ISA the CPU has (forced), sequential
//! and parallel, through the tensor API (fuzzed op version, types, shapes, axis, block
//! size, attributes and raw data) and the slice API (unvalidated layouts, buffer lengths
//! and range splits). Same error or bit-identical outputs, or the target panics.
#![no_main]

use libfuzzer_sys::fuzz_target;
use qdq_fuzz::Input;

fuzz_target!(|data: &[u8]| {
    let mut input = Input::new(data);
    if input.u8() % 4 == 0 {
        qdq_fuzz::check_slice_quantize(&mut input);
    } else {
        qdq_fuzz::quantize_node(&mut input).check();
    }
});
