//! Batch timing and the median of the batches.

/// Times `f` like `cargo xtask bench` does: one warm-up call, then `reps` batches of as
/// many calls as fill about `batch_s` seconds; returns the per-call seconds of each batch.
pub fn time_batches(mut f: impl FnMut(), reps: usize, batch_s: f64) -> Vec<f64> {
    use std::time::Instant;
    f();
    let t = Instant::now();
    f();
    let one = t.elapsed().as_secs_f64().max(1e-9);
    let iters = ((batch_s / one).ceil() as usize).clamp(1, 1 << 20);
    (0..reps)
        .map(|_| {
            let t = Instant::now();
            for _ in 0..iters {
                f();
            }
            t.elapsed().as_secs_f64() / iters as f64
        })
        .collect()
}

/// The median of `v` (the mean of the middle two for an even length); 0 when empty.
pub fn median(v: &[f64]) -> f64 {
    let mut s: Vec<f64> = v.iter().copied().filter(|x| x.is_finite()).collect();
    if s.is_empty() {
        return 0.0;
    }
    s.sort_by(|a, b| a.total_cmp(b));
    let m = s.len() / 2;
    if s.len() % 2 == 1 {
        s[m]
    } else {
        0.5 * (s[m - 1] + s[m])
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn median_of_odd_and_even_lengths() {
        assert_eq!(median(&[3.0, 1.0, 2.0]), 2.0);
        assert_eq!(median(&[4.0, 1.0, 3.0, 2.0]), 2.5);
        assert_eq!(median(&[f64::NAN, 5.0]), 5.0);
        assert_eq!(median(&[]), 0.0);
    }
}
