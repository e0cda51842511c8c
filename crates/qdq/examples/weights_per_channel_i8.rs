//! Task 2: quantize a weight matrix to int8, symmetric, one scale per output channel
//! (per-axis quantization along axis 0 of a `[out_channels, in_features]` matrix).
//!
//! `cargo run -p qdq --example weights_per_channel_i8`

pub fn main() -> Result<(), qdq::Error> {
    let shape = [3, 4];
    let weights = [
        0.5f32, -1.0, 0.25, 0.0, // channel 0: |max| 1.0
        10.0, 2.5, -5.0, 7.5, // channel 1: |max| 10.0
        0.01, 0.02, -0.03, 0.04, // channel 2: |max| 0.04
    ];

    // --- the task: 5 lines ---
    let scales: Vec<f32> =
        weights.chunks(shape[1]).map(|row| row.iter().fold(0f32, |m, w| m.max(w.abs())) / 127.0).collect();
    let params = qdq::Params::per_axis(&scales, &shape, 0)?;
    let mut q = vec![0i8; weights.len()];
    qdq::quantize(&weights, &params, &mut q)?;
    // ---

    for (c, row) in q.chunks(shape[1]).enumerate() {
        println!("channel {c}: scale {:.6}, q = {row:?}", scales[c]);
    }
    // Each channel's largest magnitude maps to ±127.
    assert_eq!((q[1], q[4], q[11]), (-127, 127, 127));
    Ok(())
}
