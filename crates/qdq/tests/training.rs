//! Training mode (`qdq::train`) on every available ISA (forced), sequential and parallel,
//! against `qdq_ref::train` bit for bit: forwards with masks (and against the inference
//! ops), every backward pass, the deterministic sums.

mod common;

#[test]
fn training_matches_reference_every_type_and_layout() {
    common::training::training_matches_reference_every_type_and_layout();
}

#[test]
fn training_lengths_0_to_512() {
    common::training::training_lengths_0_to_512();
}

#[test]
fn training_large_parallel() {
    common::training::training_large_parallel();
}

/// When NaNs meet (dy = +NaN and -NaN summed into one ds, -NaN times a NaN scale), every
/// gradient is the canonical NaN 0x7fc00000 on every ISA and in the reference (they used
/// to differ in sign by ISA).
#[test]
fn nan_gradients_are_canonical() {
    use qdq::train::{FakeQuantGrads, GradOptions, QuantParams};
    use qdq::{DataType, Layout, Packed, QuantizeOptions, Values, ValuesMut};
    let canon = 0x7fc0_0000u32;
    let dy = [f32::NAN, -f32::NAN, 1.0, -f32::NAN];
    let x = [0.5f32, 1.0, 300.0, -7.0];
    let zp = [3u8];
    let scale = [1.0f32];
    let p = QuantParams {
        scale: Values::F32(&scale),
        zero_point: Some(Packed { dtype: DataType::U8, len: 1, data: &zp }),
        layout: Layout::PerTensor,
        opts: QuantizeOptions::new(DataType::U8),
    };
    let g = GradOptions { lda: 1.0, grad_scale: 1.0 };
    let nan_scale = [-f32::NAN];
    let mut calls: Vec<(String, Option<qdq::Config>)> = vec![("qdq-ref".into(), None)];
    calls.extend(common::configs().map(|(n, c)| (n, Some(c))));
    for (name, cfg) in calls {
        let (mut ds, mut dzp, mut dx) = ([0f32], [0f32], [0f32; 4]);
        let grads = FakeQuantGrads { dx: Some(ValuesMut::F32(&mut dx)), ds: Some(&mut ds), dzp: Some(&mut dzp) };
        let mut dq = [0f32; 4];
        let (dyv, xv, sv) = (Values::F32(&dy), Values::F32(&x), Values::F32(&nan_scale));
        match &cfg {
            None => {
                qdq_ref::train::fake_quantize_backward(dyv, xv, &p, &g, grads).unwrap();
                qdq_ref::train::dequantize_backward(dyv, sv, Layout::PerTensor, 1.0, ValuesMut::F32(&mut dq)).unwrap();
            }
            Some(c) => {
                qdq::train::fake_quantize_backward_with(c, dyv, xv, &p, &g, grads).unwrap();
                qdq::train::dequantize_backward_with(c, dyv, sv, Layout::PerTensor, 1.0, ValuesMut::F32(&mut dq))
                    .unwrap();
            }
        }
        assert_eq!(ds[0].to_bits(), canon, "{name}: ds");
        assert_eq!(dzp[0].to_bits(), canon, "{name}: dzp");
        // In range: dx = dy, a NaN dy gives the canonical NaN; 300 and -7 clamp: dx = 0.
        let dx_bits: Vec<u32> = dx.iter().map(|v| v.to_bits()).collect();
        assert_eq!(dx_bits, [canon, canon, 0, 0], "{name}: dx");
        assert!(dq.iter().all(|v| v.to_bits() == canon), "{name}: dequantize_backward {dq:?}");
    }
}
