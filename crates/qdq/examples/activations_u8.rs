//! Task 1: quantize activations to u8 with one scale and zero point for the whole tensor
//! (the asymmetric scheme of QLinear* operators), then check one value by hand.
//!
//! `cargo run -p qdq --example activations_u8`

pub fn main() -> Result<(), qdq::Error> {
    let activations: Vec<f32> = (0..8).map(|i| i as f32 * 0.75 - 2.0).collect();

    // --- the task: 3 lines ---
    let params = qdq::Params::per_tensor(0.02).zero_point(128);
    let mut q = vec![0u8; activations.len()];
    qdq::quantize(&activations, &params, &mut q)?;
    // ---

    println!("x = {activations:?}");
    println!("q = {q:?}");
    // -2.0 / 0.02 = -100, plus the zero point 128: 28. 3.25 / 0.02 = 162.5 rounds to even
    // (162), plus 128: 290, saturated to 255.
    assert_eq!((q[0], q[7]), (28, 255));

    // The scale and zero point can also come from the data (DynamicQuantizeLinear).
    let (scale, zero_point) = qdq::dynamic_quantize(&activations, &mut q)?;
    println!("dynamic: scale {scale}, zero point {zero_point}, q = {q:?}");
    Ok(())
}
