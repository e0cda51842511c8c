//! Quantization-aware training of a per-channel scale (LSQ) with `qdq::train`.
//!
//! A linear layer `y = x W^T` with `W` of shape `[16, 64]` is replaced by its int4
//! fake-quantized weights `Wq = fake_quantize(W, s)` (one scale per output channel, axis 0).
//! The scales start far too small (most weights clamp), and plain gradient descent on the
//! mean squared error against the float layer's outputs fits them, using the LSQ scale
//! gradient from `fake_quantize_backward`:
//!
//! ```text
//! L = mean((x Wq^T - x W^T)^2)      dL/dWq = 2 / N * dY^T x      ds = fake_quantize_backward(dL/dWq)
//! ```
//!
//! Run with `cargo run --release -p qdq --example qat_linear`; the loss falls by orders of
//! magnitude and the scales settle near what a grid search over each channel finds.

use qdq::train::{self, FakeQuantGrads, GradOptions, QuantParams};
use qdq::{DataType, Layout, QuantizeOptions, Values, ValuesMut};
use qdq_fixtures::Rng;

const OUT: usize = 16;
const IN: usize = 64;
const BATCH: usize = 512;

/// `a [m, k] * b[n, k]^T -> [m, n]`.
fn matmul_t(a: &[f32], b: &[f32], m: usize, k: usize, n: usize) -> Vec<f32> {
    let mut c = vec![0.0f32; m * n];
    for i in 0..m {
        for j in 0..n {
            c[i * n + j] = (0..k).map(|t| a[i * k + t] * b[j * k + t]).sum();
        }
    }
    c
}

/// The layer's loss for scales `s` (and the fake-quantized weights).
fn loss(x: &[f32], w: &[f32], target: &[f32], p: &QuantParams<'_>) -> (f32, Vec<f32>) {
    let mut wq = vec![0.0f32; OUT * IN];
    train::fake_quantize(Values::F32(w), p, ValuesMut::F32(&mut wq), None).expect("fake quantize");
    let y = matmul_t(x, &wq, BATCH, IN, OUT);
    let l = y.iter().zip(target).map(|(a, b)| (a - b) * (a - b)).sum::<f32>() / (BATCH * OUT) as f32;
    (l, y)
}

pub fn main() {
    // Deterministic uniform numbers in [-1, 1).
    let mut rng = Rng::new(0x9e37_79b9_7f4a_7c15);
    // Channels of very different magnitudes: a per-tensor scale would fit none of them.
    let w: Vec<f32> = (0..OUT * IN).map(|i| rng.signed_unit() * (1.0 + (i / IN) as f32) / 8.0).collect();
    let x: Vec<f32> = (0..BATCH * IN).map(|_| rng.signed_unit()).collect();
    let target = matmul_t(&x, &w, BATCH, IN, OUT);

    let layout = Layout::PerAxis { outer: 1, axis_len: OUT, inner: IN };
    let opts = QuantizeOptions::new(DataType::I4);
    let qmax = 7.0f32;
    // Start at a tenth of the max-abs scale: most weights clamp.
    let max_abs: Vec<f32> =
        (0..OUT).map(|r| w[r * IN..(r + 1) * IN].iter().fold(0.0f32, |m, v| m.max(v.abs()))).collect();
    let mut s: Vec<f32> = max_abs.iter().map(|m| m / qmax * 0.1).collect();
    let initial = s.clone();
    // LSQ's gradient scale: 1 / sqrt(elements per scale * qmax).
    let g = GradOptions { lda: 1.0, grad_scale: 1.0 / (IN as f32 * qmax).sqrt() };
    let lr = 0.02f32;

    let params = |s: &[f32]| -> (f32, Vec<f32>) {
        let p = QuantParams { scale: Values::F32(s), zero_point: None, layout, opts };
        loss(&x, &w, &target, &p)
    };
    let mut last = f32::INFINITY;
    println!("step      loss");
    for step in 0..=300 {
        let p = QuantParams { scale: Values::F32(&s), zero_point: None, layout, opts };
        let (l, y) = loss(&x, &w, &target, &p);
        if step % 25 == 0 {
            println!("{step:4}  {l:.6e}");
        }
        last = l;
        // dL/dY, then dL/dWq = dY^T x.
        let dy: Vec<f32> = y.iter().zip(&target).map(|(a, b)| 2.0 * (a - b) / (BATCH * OUT) as f32).collect();
        let mut dwq = vec![0.0f32; OUT * IN];
        for o in 0..OUT {
            for i in 0..IN {
                dwq[o * IN + i] = (0..BATCH).map(|b| dy[b * OUT + o] * x[b * IN + i]).sum();
            }
        }
        let mut ds = vec![0.0f32; OUT];
        let grads = FakeQuantGrads { dx: None, ds: Some(&mut ds), dzp: None };
        train::fake_quantize_backward(Values::F32(&dwq), Values::F32(&w), &p, &g, grads).expect("backward");
        for (sk, dk) in s.iter_mut().zip(&ds) {
            // Keep the scale positive whatever the step.
            *sk = (*sk - lr * dk).max(1e-6);
        }
    }

    // What a per-channel grid search over the scale reaches, for comparison.
    let mut best = s.clone();
    for r in 0..OUT {
        let mut best_l = f32::INFINITY;
        for t in 1..=400 {
            let mut trial = best.clone();
            trial[r] = max_abs[r] / qmax * t as f32 / 200.0;
            let (l, _) = params(&trial);
            if l < best_l {
                best_l = l;
                best[r] = trial[r];
            }
        }
    }
    let (grid, _) = params(&best);
    let (start, _) = params(&initial);
    println!("loss: start {start:.4e} -> trained {last:.4e} (grid search {grid:.4e})");
    println!("channel  initial  trained  grid");
    for r in 0..OUT {
        println!("{r:7}  {:.5}  {:.5}  {:.5}", initial[r], s[r], best[r]);
    }
    assert!(last < start / 10.0, "the loss must fall");
}
