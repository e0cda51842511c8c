//! Task 4: quantize to float8 e4m3fn (the FP8 format of inference accelerators) with a
//! per-tensor scale, saturating at ±448, and read the values back.
//!
//! `cargo run -p qdq --example float8_e4m3fn`

use qdq::{Float8E4M3Fn, Params};

pub fn main() -> Result<(), qdq::Error> {
    let x = [0.1f32, -3.3, 1000.0, f32::NAN, 1e-4];

    // --- the task: 3 lines ---
    let params = Params::per_tensor(0.5);
    let mut q = [Float8E4M3Fn::default(); 5];
    qdq::quantize(&x, &params, &mut q)?;
    // ---

    for (v, c) in x.iter().zip(&q) {
        println!("{v:>10} / 0.5 -> {c:?}");
    }
    // 1000 / 0.5 = 2000 saturates to the largest finite e4m3fn value.
    assert_eq!(q[2].to_f32(), 448.0);
    assert!(q[3].to_f32().is_nan());

    // Without saturation, overflow gives NaN instead.
    qdq::quantize(&x, &params.saturate(false), &mut q)?;
    assert!(q[2].to_f32().is_nan());
    Ok(())
}
