//! DynamicQuantizeLinear: `qdq-ref` against `qdq` on every ISA the CPU has (forced),
//! sequential and parallel, through the tensor API (fuzzed opset, input type, shape,
//! arity) and the slice API (raw f32 bit patterns: NaN, infinities, subnormals, constant
//! inputs, up to 70 Ki elements so parallel calls split).
#![no_main]

use libfuzzer_sys::fuzz_target;
use qdq_fuzz::Input;

fuzz_target!(|data: &[u8]| {
    let mut input = Input::new(data);
    if input.u8() % 2 == 0 {
        qdq_fuzz::check_slice_dynamic(&mut input);
    } else {
        qdq_fuzz::dynamic_quantize_node(&mut input).check();
    }
});
