//! Runs every example's `main` (the engine tasks of the README), so that `cargo test`
//! keeps them compiling and their assertions holding.

#[path = "../examples/activations_u8.rs"]
mod activations_u8;
#[path = "../examples/dequantize.rs"]
mod dequantize;
#[path = "../examples/float8_e4m3fn.rs"]
mod float8_e4m3fn;
#[path = "../examples/onnx_node.rs"]
mod onnx_node;
#[path = "../examples/qat_linear.rs"]
mod qat_linear;
#[path = "../examples/sharding.rs"]
mod sharding;
#[path = "../examples/weights_int4_blocked.rs"]
mod weights_int4_blocked;
#[path = "../examples/weights_per_channel_i8.rs"]
mod weights_per_channel_i8;

#[test]
fn activations_u8() {
    activations_u8::main().unwrap();
}

#[test]
fn weights_per_channel_i8() {
    weights_per_channel_i8::main().unwrap();
}

#[test]
fn weights_int4_blocked() {
    weights_int4_blocked::main().unwrap();
}

#[test]
fn float8_e4m3fn() {
    float8_e4m3fn::main().unwrap();
}

#[test]
fn dequantize() {
    dequantize::main().unwrap();
}

#[test]
fn onnx_node() {
    onnx_node::main().unwrap();
}

#[test]
fn sharding() {
    sharding::main().unwrap();
}

#[test]
fn qat_linear() {
    qat_linear::main();
}
