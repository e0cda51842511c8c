//! Task 5: dequantize u8 activations and per-channel int8 weights back to f32 and f16.
//!
//! `cargo run -p qdq --example dequantize`

use qdq::{f16, Params};

pub fn main() -> Result<(), qdq::Error> {
    let activations = [0u8, 100, 128, 255];
    let weights = [-127i8, 0, 64, 127, -3, 5];

    // --- the task: 6 lines ---
    let mut a = [0f32; 4];
    qdq::dequantize(&activations, &Params::per_tensor(0.02).zero_point(128), &mut a)?;
    let scales = [0.5f32, 0.01];
    let mut w = [f16::ZERO; 6];
    qdq::dequantize(&weights, &Params::per_axis(&scales, &[2, 3], 0)?, &mut w)?;
    // ---

    println!("activations {activations:?} -> {a:?}");
    println!("weights {weights:?} -> {w:?}");
    assert_eq!(a, [-2.56, -0.56, 0.0, 2.54]);
    assert_eq!(w[3], f16::from_f32(1.27));
    Ok(())
}
