//! Task 3: quantize weights to int4 in blocks of 32 along the input dimension, with scales
//! computed from each block's largest magnitude (the MatMulNBits / GPTQ-style layout),
//! then dequantize them back and report the error.
//!
//! `cargo run -p qdq --example weights_int4_blocked`

use qdq::{DataType, PackedMut, Params};

pub fn main() -> Result<(), qdq::Error> {
    let (rows, cols, block) = (4, 64, 32);
    let weights: Vec<f32> = (0..rows * cols).map(|i| ((i * 37 % 101) as f32 - 50.0) / 25.0).collect();

    // --- the task: 6 lines ---
    let scales: Vec<f32> = weights.chunks(block).map(|b| b.iter().fold(0f32, |m, w| m.max(w.abs())) / 7.0).collect();
    let params = Params::blocked(&scales, &[rows, cols], 1, block)?;
    let mut packed = vec![0u8; DataType::I4.byte_len(weights.len()).unwrap()];
    qdq::quantize(&weights, &params, PackedMut::new(DataType::I4, &mut packed))?;
    // ---

    // Two int4 values per byte, the first in the low nibble.
    println!("{} weights -> {} bytes, {} scales", weights.len(), packed.len(), scales.len());
    println!("first bytes: {:02x?}", &packed[..8]);

    let mut restored = vec![0f32; weights.len()];
    qdq::dequantize(qdq::Packed::new(DataType::I4, weights.len(), &packed)?, &params, &mut restored)?;
    let worst = weights.iter().zip(&restored).map(|(w, r)| (w - r).abs()).fold(0f32, f32::max);
    let half = scales.iter().fold(0f32, |m, s| m.max(s / 2.0));
    println!("largest round-trip error: {worst:.4} (each at most half its block's scale; the largest half: {half:.4})");
    assert!(weights.iter().zip(&restored).enumerate().all(|(i, (w, r))| (w - r).abs() <= scales[i / block] / 2.0));
    Ok(())
}
