//! Semantics of the training functions: mask bits and layout, the boundaries of
//! representability, `lda`, the STE formulas, finite-difference checks of the LSQ
//! gradients, the summation order, and validation.

use approx::assert_relative_eq;
use qdq_ref::train::{self, FakeQuantGrads, GradOptions, QuantParams};
use qdq_ref::{DataType, ErrorKind, Layout, Packed, PackedMut, QuantizeOptions, Values, ValuesMut};

fn params<'a>(scale: &'a [f32], zp: Option<Packed<'a>>, layout: Layout, out: DataType) -> QuantParams<'a> {
    QuantParams { scale: Values::F32(scale), zero_point: zp, layout, opts: QuantizeOptions::new(out) }
}

fn mask_of(x: &[f32], p: &QuantParams<'_>) -> Vec<bool> {
    let n = x.len();
    let mut y = vec![0u8; p.opts.output.byte_len(n).unwrap()];
    let mut m = vec![0u8; train::mask_len(n)];
    train::quantize_train(Values::F32(x), p, &mut y, &mut m).unwrap();
    (0..n).map(|i| train::mask_bit(&m, i)).collect()
}

#[test]
fn mask_bit_layout_and_length() {
    // 19 elements: 3 bytes, element i in bit i % 8 of byte i / 8, padding bits zero.
    let x: Vec<f32> = (0..19).map(|i| if i % 3 == 0 { 1000.0 } else { 1.0 }).collect();
    let s = [1.0f32];
    let p = params(&s, None, Layout::PerTensor, DataType::U8);
    let mut y = vec![0u8; 19];
    let mut m = vec![0xffu8; train::mask_len(19)];
    assert_eq!(m.len(), 3);
    train::quantize_train(Values::F32(&x), &p, &mut y, &mut m).unwrap();
    let mut want = [0u8; 3];
    for i in 0..19 {
        if i % 3 != 0 {
            want[i / 8] |= 1 << (i % 8);
        }
    }
    assert_eq!(m, want);
    assert_eq!(m[2] >> 3, 0, "padding bits are zero");
    // n / 8 bytes: one bit per element.
    for n in [0, 1, 7, 8, 9, 64, 1000] {
        assert_eq!(train::mask_len(n), n.div_ceil(8));
    }
}

#[test]
fn integer_boundaries_are_representable() {
    // u8 with zp 10: codes [0, 255] are q in [-10, 245] after rounding.
    let zp = [10u8];
    let z = Some(Packed { dtype: DataType::U8, len: 1, data: &zp });
    let s = [1.0f32];
    let p = params(&s, z, Layout::PerTensor, DataType::U8);
    let cases: [(f32, bool); 12] = [
        (-10.0, true), // exactly qmin
        (-10.5, true), // tie rounds to -10 (even)
        (-10.51, false),
        (-11.5, false), // tie rounds to -12
        (245.0, true),  // exactly qmax
        (245.4, true),  // rounds to 245
        (245.5, false), // tie rounds to 246
        (244.5, true),  // tie rounds to 244
        (f32::NAN, false),
        (f32::INFINITY, false),
        (f32::NEG_INFINITY, false),
        (0.0, true),
    ];
    let x: Vec<f32> = cases.iter().map(|c| c.0).collect();
    let got = mask_of(&x, &p);
    for (i, (v, want)) in cases.iter().enumerate() {
        assert_eq!(got[i], *want, "x = {v}");
    }
    // A negative scale mirrors the quotient: x = 10.5 / -1 = -10.5 -> -10, representable.
    let sn = [-1.0f32];
    let p = params(&sn, z, Layout::PerTensor, DataType::U8);
    assert_eq!(mask_of(&[10.5, 11.5, -245.0, -245.5], &p), [true, false, true, false]);
}

#[test]
fn float8_mask_is_overflow_and_nan_whatever_saturate() {
    // e4m3fn: 448 is max, 464 (the tie) rounds to 448, anything rounding beyond is out.
    let s = [1.0f32];
    for saturate in [true, false] {
        let mut p = params(&s, None, Layout::PerTensor, DataType::E4M3Fn);
        p.opts.saturate = saturate;
        assert_eq!(
            mask_of(&[448.0, 464.0, 464.1, -464.0, f32::NAN, f32::INFINITY, 1e-20, -0.0], &p),
            [true, true, false, true, false, false, true, true]
        );
        // e5m2: 61440 (the tie between 57344 and 65536) rounds up: out.
        p.opts.output = DataType::E5M2;
        assert_eq!(mask_of(&[57344.0, 61439.0, 61440.0, f32::NEG_INFINITY], &p), [true, true, false, false]);
    }
    // float4 always saturates: beyond 6 is clamped, so masked out.
    let p = params(&s, None, Layout::PerTensor, DataType::E2M1);
    assert_eq!(mask_of(&[6.0, 6.9, 7.0, -100.0], &p), [true, true, false, false]);
}

#[test]
fn training_forward_is_the_inference_op() {
    let x: Vec<f32> = (0..100).map(|i| (i as f32 - 50.0) * 0.37).collect();
    let s = [0.1f32, 0.2, 0.3, 0.4];
    let layout = Layout::PerAxis { outer: 25, axis_len: 4, inner: 1 };
    for out in DataType::QUANTIZED {
        let p = params(&s, None, layout, out);
        let b = out.byte_len(100).unwrap();
        let (mut y1, mut y2, mut m) = (vec![0u8; b], vec![0u8; b], vec![0u8; 13]);
        qdq_ref::quantize(&x, &qdq_ref::Params::new(p.scale, layout), PackedMut::new(out, &mut y1)).unwrap();
        train::quantize_train(Values::F32(&x), &p, &mut y2, &mut m).unwrap();
        assert_eq!(y1, y2, "{out}");
    }
}

#[test]
fn fake_quantize_is_dequantize_of_quantize() {
    let x = [-300.0f32, -1.26, -0.5, 0.0, 0.49, 1.5, 2.5, 25.4, 400.0];
    let s = [0.1f32];
    let zp = [3u8];
    let z = Some(Packed { dtype: DataType::I8, len: 1, data: &zp });
    let p = params(&s, z, Layout::PerTensor, DataType::I8);
    let mut y = [0f32; 9];
    let mut m = [0u8; 2];
    train::fake_quantize(Values::F32(&x), &p, ValuesMut::F32(&mut y), Some(&mut m)).unwrap();
    // (clamp(round(x / s) + 3, -128, 127) - 3) * s, in f32.
    let want: Vec<f32> = x
        .iter()
        .map(|&v| {
            let c = ((v / 0.1f32).round_ties_even() + 3.0).clamp(-128.0, 127.0);
            (c - 3.0) * 0.1f32
        })
        .collect();
    assert_eq!(y.to_vec(), want);
    // -300, 25.4 (254 + 3 > 127) and 400 are clamped.
    let bits: Vec<bool> = (0..9).map(|i| train::mask_bit(&m, i)).collect();
    assert_eq!(bits, [false, true, true, true, true, true, true, false, false]);
}

#[test]
fn backward_formulas_and_lda() {
    let x = [1.0f32, 1000.0, -7.25, f32::NAN, 3.3];
    let dy = [0.5f32, 2.0, -1.5, 4.0, f32::INFINITY];
    let s = [0.3f32];
    let p = params(&s, None, Layout::PerTensor, DataType::I8);
    let mut y = [0u8; 5];
    let mut m = [0u8; 1];
    train::quantize_train(Values::F32(&x), &p, &mut y, &mut m).unwrap();
    assert_eq!(m[0], 0b10101, "1000 / 0.3 and NaN are clamped");
    for lda in [1.0f32, 2.0, -0.5] {
        let mut dx = [f32::NAN; 5];
        train::quantize_backward(Values::F32(&dy), &m, &p, lda, ValuesMut::F32(&mut dx)).unwrap();
        let want: Vec<u32> =
            (0..5).map(|i| if train::mask_bit(&m, i) { ((lda * dy[i]) / 0.3f32).to_bits() } else { 0 }).collect();
        assert_eq!(dx.map(f32::to_bits).to_vec(), want, "lda {lda}");
        // Scaling by lda is exact here (powers of two and a half); masked elements are +0.
        let mut dx1 = [0f32; 5];
        train::quantize_backward(Values::F32(&dy), &m, &p, 1.0, ValuesMut::F32(&mut dx1)).unwrap();
        for i in (0..5).filter(|&i| train::mask_bit(&m, i)) {
            assert_eq!(dx[i].to_bits(), (lda * dx1[i]).to_bits(), "element {i}");
        }
        // Masked out: +0 even for an infinite dy.
        let mut fdx = [f32::NAN; 5];
        let grads = FakeQuantGrads { dx: Some(ValuesMut::F32(&mut fdx)), ds: None, dzp: None };
        let g = GradOptions { lda, grad_scale: 1.0 };
        train::fake_quantize_backward(Values::F32(&dy), Values::F32(&x), &p, &g, grads).unwrap();
        let want: Vec<u32> = (0..5).map(|i| if train::mask_bit(&m, i) { (lda * dy[i]).to_bits() } else { 0 }).collect();
        assert_eq!(fdx.map(f32::to_bits).to_vec(), want);
        let mut mdx = [f32::NAN; 5];
        train::mask_backward(Values::F32(&dy), &m, lda, ValuesMut::F32(&mut mdx)).unwrap();
        assert_eq!(mdx.map(f32::to_bits), fdx.map(f32::to_bits));
        // DequantizeLinear backward: (lda * dy) * s.
        let mut ddx = [0f32; 5];
        train::dequantize_backward(Values::F32(&dy), p.scale, Layout::PerTensor, lda, ValuesMut::F32(&mut ddx))
            .unwrap();
        for i in 0..5 {
            assert_eq!(ddx[i].to_bits(), ((lda * dy[i]) * 0.3f32).to_bits());
        }
    }
}

#[test]
fn dequantize_scale_gradient_is_the_sum_of_dy_times_x_minus_zp() {
    // Per-axis along the last axis, 3 channels, u8 with zero points.
    let codes = [10u8, 20, 30, 40, 50, 60];
    let zp = [5u8, 0, 100];
    let dy = [1.0f32, 2.0, 3.0, -1.0, 0.5, 0.25];
    let layout = Layout::PerAxis { outer: 2, axis_len: 3, inner: 1 };
    let x = Packed { dtype: DataType::U8, len: 6, data: &codes };
    let z = Packed { dtype: DataType::U8, len: 3, data: &zp };
    let mut ds = [0f32; 3];
    train::dequantize_scale_grad(Values::F32(&dy), x, Some(z), layout, &mut ds).unwrap();
    assert_eq!(ds, [5.0 - 35.0, 2.0 * 20.0 + 0.5 * 50.0, 3.0 * -70.0 + 0.25 * -40.0]);
}

/// The STE surrogate `y(s) = (clamp(round(q) + zp) - zp) * s` has `dy/ds = round(q)`
/// (round is locally constant) in range and `qmin - zp` / `qmax - zp` when clamped; LSQ
/// adds the straight-through term `-q` in range. So `ds = FD(fake_quantize) - sum(dy * q)`
/// over representable elements, for a step too small to cross a rounding boundary.
#[test]
fn lsq_gradients_match_finite_differences() {
    let n = 64;
    // Quotients well away from .5 ties and from the clamp edges' rounding points.
    let x: Vec<f32> = (0..n).map(|i| (i as f32 - 20.0) * 0.731 + 0.05).collect();
    let dy: Vec<f32> = (0..n).map(|i| ((i * 7) % 11) as f32 * 0.25 - 1.0).collect();
    let s = [0.5f32, 0.25];
    let zp = [-3i8 as u8, 4];
    let layout = Layout::PerAxis { outer: n / 2, axis_len: 2, inner: 1 };
    let z = Packed { dtype: DataType::I4, len: 2, data: &[(zp[0] & 0xf) | (zp[1] << 4)] };
    let p = params(&s, Some(z), layout, DataType::I4);
    let zps = [-3.0f64, 4.0];
    let loss = |scale: &[f32]| -> f64 {
        let q = QuantParams { scale: Values::F32(scale), ..p };
        let mut y = vec![0f32; n];
        train::fake_quantize(Values::F32(&x), &q, ValuesMut::F32(&mut y), None).unwrap();
        (0..n).map(|i| dy[i] as f64 * y[i] as f64).sum()
    };
    let (mut ds, mut dzp) = ([0f32; 2], [0f32; 2]);
    let grads = FakeQuantGrads { dx: None, ds: Some(&mut ds), dzp: Some(&mut dzp) };
    let g = GradOptions { lda: 1.0, grad_scale: 0.5 };
    train::fake_quantize_backward(Values::F32(&dy), Values::F32(&x), &p, &g, grads).unwrap();
    let mut m = vec![0u8; train::mask_len(n)];
    let mut yq = vec![0u8; DataType::I4.byte_len(n).unwrap()];
    train::quantize_train(Values::F32(&x), &p, &mut yq, &mut m).unwrap();
    for k in 0..2 {
        let h = 1e-3f32 * s[k];
        let (mut up, mut down) = (s, s);
        up[k] += h;
        down[k] -= h;
        let fd = (loss(&up) - loss(&down)) / (up[k] as f64 - down[k] as f64);
        let ste: f64 = (k..n)
            .step_by(2)
            .filter(|&i| train::mask_bit(&m, i))
            .map(|i| dy[i] as f64 * (x[i] as f64 / s[k] as f64))
            .sum();
        assert_relative_eq!(ds[k] as f64, 0.5 * (fd - ste), max_relative = 1e-4, epsilon = 1e-4);
        // dzp: -s for each clamped element; check against the model y(zp) with a
        // continuous zero point (no element is near a clamp edge).
        let y_of_zp = |zp: f64| -> f64 {
            (k..n)
                .step_by(2)
                .map(|i| {
                    let q = (x[i] / s[k]) as f64;
                    let c = (q.round_ties_even() + zp).clamp(-8.0, 7.0);
                    dy[i] as f64 * (c - zp) * s[k] as f64
                })
                .sum()
        };
        let fdz = (y_of_zp(zps[k] + 1e-3) - y_of_zp(zps[k] - 1e-3)) / 2e-3;
        assert_relative_eq!(dzp[k] as f64, 0.5 * fdz, max_relative = 1e-4, epsilon = 1e-4);
        // Both channels have clamped and representable elements.
        let clamped = (k..n).step_by(2).filter(|&i| !train::mask_bit(&m, i)).count();
        assert!(clamped > 0 && clamped < n / 2, "channel {k}: {clamped} clamped");
    }
}

#[test]
fn lsq_terms_by_side() {
    // u8, zp 100, s 2: q = 3.4 (in), -300 (low), 1000 (high), NaN (low).
    let x = [6.8f32, -600.0, 2000.0, f32::NAN];
    let dy = [1.0f32, 2.0, 3.0, 4.0];
    let s = [2.0f32];
    let zp = [100u8];
    let p = params(&s, Some(Packed { dtype: DataType::U8, len: 1, data: &zp }), Layout::PerTensor, DataType::U8);
    let (mut ds, mut dzp) = ([0f32], [0f32]);
    let grads = FakeQuantGrads { dx: None, ds: Some(&mut ds), dzp: Some(&mut dzp) };
    train::fake_quantize_backward(Values::F32(&dy), Values::F32(&x), &p, &GradOptions::default(), grads).unwrap();
    // t = 1 * (3 - 3.4), 2 * (0 - 100), 3 * (255 - 100), 4 * (0 - 100); four lanes then pairs.
    let t = [(3.0f32 - 6.8f32 / 2.0), -200.0, 465.0, -400.0];
    let mut lanes = [-0.0f32; 16];
    lanes[..4].copy_from_slice(&t);
    assert_eq!(ds[0].to_bits(), train::fold_lanes(&mut lanes).to_bits());
    // u = dy over clamped elements: 2 + 3 + 4 = 9; dzp = -(2 * 9).
    assert_eq!(dzp[0], -18.0);
}

#[test]
fn summation_order_is_the_documented_one() {
    // Per-tensor, 40 terms: 16 interleaved partials (lane l gets terms l, l+16, l+32),
    // then pairs. Values chosen so the order is visible in f32.
    let n = 40;
    // 1e8 then ones: an element-order fold loses every one after it (f32's ulp at 1e8 is
    // 8); the partials keep most of them.
    let codes: Vec<u8> = vec![1; n];
    let dy: Vec<f32> = (0..n).map(|i| if i == 3 { 1e8 } else { 1.0 }).collect();
    let x = Packed { dtype: DataType::U8, len: n, data: &codes };
    let mut ds = [0f32];
    train::dequantize_scale_grad(Values::F32(&dy), x, None, Layout::PerTensor, &mut ds).unwrap();
    let mut p = [-0.0f32; 16];
    for i in 0..n {
        p[i % 16] += dy[i] * codes[i] as f32;
    }
    for w in [8, 4, 2, 1] {
        for l in 0..w {
            p[l] += p[l + w];
        }
    }
    assert_eq!(ds[0].to_bits(), p[0].to_bits());
    let sequential = (0..n).fold(-0.0f32, |a, i| a + dy[i] * codes[i] as f32);
    assert_ne!(ds[0].to_bits(), sequential.to_bits(), "the example must tell the orders apart");
}

#[test]
fn validation_names_the_input() {
    let x = [1.0f32; 10];
    let s = [1.0f32];
    let p = params(&s, None, Layout::PerTensor, DataType::U8);
    let mut y = [0u8; 10];
    let e = train::quantize_train(Values::F32(&x), &p, &mut y, &mut [0u8; 1]).unwrap_err();
    assert_eq!(e.kind(), ErrorKind::BufferLength);
    assert!(e.message().contains("mask: 10 elements need 2 bytes"), "{e}");
    let e = train::quantize_train(Values::I32(&[1; 10]), &p, &mut y, &mut [0u8; 2]).unwrap_err();
    assert_eq!(e.kind(), ErrorKind::UnsupportedType);
    let si = [1i32];
    let pi = QuantParams { scale: Values::I32(&si), ..p };
    let e = train::quantize_train(Values::F32(&x), &pi, &mut y, &mut [0u8; 2]).unwrap_err();
    assert!(e.message().contains("float scale"), "{e}");
    let mut dx = [0f32; 9];
    let e = train::mask_backward(Values::F32(&x), &[0, 0], 1.0, ValuesMut::F32(&mut dx)).unwrap_err();
    assert!(e.message().contains("dx has 9 elements"), "{e}");
    let e = train::mask_backward(Values::E8M0(&[0; 10]), &[0, 0], 1.0, ValuesMut::F32(&mut [0f32; 10])).unwrap_err();
    assert!(e.message().contains("dy has type e8m0"), "{e}");
    // Learnable parameters need an integer output.
    let pf = params(&s, None, Layout::PerTensor, DataType::E4M3Fn);
    let mut ds = [0f32];
    let grads = FakeQuantGrads { dx: None, ds: Some(&mut ds), dzp: None };
    let e = train::fake_quantize_backward(Values::F32(&x), Values::F32(&x), &pf, &GradOptions::default(), grads)
        .unwrap_err();
    assert!(e.message().contains("integer outputs"), "{e}");
    let mut ds2 = [0f32; 2];
    let grads = FakeQuantGrads { dx: None, ds: Some(&mut ds2), dzp: None };
    let e = train::fake_quantize_backward(Values::F32(&x), Values::F32(&x), &p, &GradOptions::default(), grads)
        .unwrap_err();
    assert!(e.message().contains("ds has 2 elements but there are 1 scales"), "{e}");
}
