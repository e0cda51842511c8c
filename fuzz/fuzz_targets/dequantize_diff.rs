//! DequantizeLinear: `qdq-ref` against `qdq` on every ISA the CPU has (forced), sequential
//! and parallel, through the tensor API (fuzzed op version, input / scale / zero-point
//! types and shapes, axis, block size, output_dtype, raw codes) and the slice API
//! (unvalidated layouts, buffer lengths, range splits). Same error or bit-identical
//! outputs (NaN payloads included), or the target panics.
#![no_main]

use libfuzzer_sys::fuzz_target;
use qdq_fuzz::Input;

fuzz_target!(|data: &[u8]| {
    let mut input = Input::new(data);
    if input.u8() % 4 == 0 {
        qdq_fuzz::check_slice_dequantize(&mut input);
    } else {
        qdq_fuzz::dequantize_node(&mut input).check();
    }
});
