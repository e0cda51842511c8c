//! Training mode: `qdq::train` on every ISA (forced), sequential and parallel, against
//! `qdq_ref::train`, bit for bit (NaN payloads included), and the forwards against the inference ops.

use super::{configs, dparams, qparams, random_codes, Rng, F32_SPECIALS, SWEEP_LENGTHS};
use qdq::train::{self as fast, FakeQuantGrads, GradOptions, QuantParams};
use qdq::{DataType, Layout, Packed, QuantizeOptions, Values, ValuesMut};
use qdq_ref::train as reference;

fn scale_value(rng: &mut Rng) -> f32 {
    match rng.below(10) {
        0 => 2f32.powi(rng.below(20) as i32 - 10),
        1 => -(rng.unit() + 0.01),
        2 => 1e-39,
        3 if rng.below(4) == 0 => 0.0,
        4 => 5.0 / 255.0,
        _ => rng.unit() * 2.0 + 1e-3,
    }
}

fn x_value(rng: &mut Rng, s: f32) -> f32 {
    match rng.below(10) {
        0 => rng.pick(&F32_SPECIALS),
        1..=3 => ((rng.below(600) as f32 - 300.0) + 0.5) * s,
        4 => f32::from_bits(rng.next_u64() as u32),
        _ => (rng.unit() - 0.5) * 600.0 * s.abs().max(1e-3),
    }
}

fn dy_value(rng: &mut Rng) -> f32 {
    match rng.below(12) {
        0 => rng.pick(&F32_SPECIALS),
        1 => f32::from_bits(rng.next_u64() as u32),
        _ => (rng.unit() - 0.5) * 4.0,
    }
}

/// An owned wide tensor (f32, f16, bf16 or e8m0) for building `Values`.
enum Wide {
    F32(Vec<f32>),
    F16(Vec<qdq::f16>),
    Bf16(Vec<qdq::bf16>),
    E8M0(Vec<u8>),
}

impl Wide {
    fn new(t: DataType, v: &[f32]) -> Wide {
        match t {
            DataType::F32 => Wide::F32(v.to_vec()),
            DataType::F16 => Wide::F16(v.iter().map(|x| qdq::f16::from_f32(*x)).collect()),
            DataType::Bf16 => Wide::Bf16(v.iter().map(|x| qdq::bf16::from_f32(*x)).collect()),
            DataType::E8M0 => Wide::E8M0(
                v.iter().map(|x| qdq::float::encode_e8m0(x.abs(), qdq::float::E8m0Rounding::Nearest)).collect(),
            ),
            other => panic!("{other}"),
        }
    }

    fn values(&self) -> Values<'_> {
        match self {
            Wide::F32(v) => Values::F32(v),
            Wide::F16(v) => Values::F16(v),
            Wide::Bf16(v) => Values::Bf16(v),
            Wide::E8M0(v) => Values::E8M0(v),
        }
    }
}

/// An owned output buffer of f32, f16 or bf16, filled with garbage.
enum WideOut {
    F32(Vec<f32>),
    F16(Vec<qdq::f16>),
    Bf16(Vec<qdq::bf16>),
}

impl WideOut {
    fn new(t: DataType, n: usize) -> WideOut {
        match t {
            DataType::F32 => WideOut::F32(vec![f32::from_bits(0x7fa5_a5a5); n]),
            DataType::F16 => WideOut::F16(vec![qdq::f16::from_bits(0xa5a5); n]),
            DataType::Bf16 => WideOut::Bf16(vec![qdq::bf16::from_bits(0xa5a5); n]),
            other => panic!("{other}"),
        }
    }

    fn view(&mut self) -> ValuesMut<'_> {
        match self {
            WideOut::F32(v) => ValuesMut::F32(v),
            WideOut::F16(v) => ValuesMut::F16(v),
            WideOut::Bf16(v) => ValuesMut::Bf16(v),
        }
    }

    /// Element values as f64 and their bit patterns.
    fn get(&self, i: usize) -> (f64, u32) {
        match self {
            WideOut::F32(v) => (v[i] as f64, v[i].to_bits()),
            WideOut::F16(v) => (v[i].to_f64(), v[i].to_bits() as u32),
            WideOut::Bf16(v) => (v[i].to_f64(), v[i].to_bits() as u32),
        }
    }

    fn len(&self) -> usize {
        match self {
            WideOut::F32(v) => v.len(),
            WideOut::F16(v) => v.len(),
            WideOut::Bf16(v) => v.len(),
        }
    }
}

/// Bit-identical, NaN payloads included.
fn same(a: (f64, u32), b: (f64, u32)) -> bool {
    a.1 == b.1
}

#[track_caller]
fn assert_same_wide(what: &str, want: &WideOut, got: &WideOut) {
    assert_eq!(want.len(), got.len());
    for i in 0..want.len() {
        assert!(
            same(want.get(i), got.get(i)),
            "{what}: element {i}: want {:e} ({:#x}) got {:e} ({:#x})",
            want.get(i).0,
            want.get(i).1,
            got.get(i).0,
            got.get(i).1
        );
    }
}

#[track_caller]
fn assert_same_sums(what: &str, want: &[f32], got: &[f32]) {
    for (k, (w, g)) in want.iter().zip(got).enumerate() {
        assert!(
            w.to_bits() == g.to_bits(),
            "{what}: sum {k}: want {w:e} ({:#x}) got {g:e} ({:#x})",
            w.to_bits(),
            g.to_bits()
        );
    }
}

/// Layouts with their element and scale counts: per-tensor, per-axis first / middle /
/// last, blocked last / middle with remainder blocks, empty tensors.
fn layouts(rng: &mut Rng) -> Vec<(Layout, usize, usize)> {
    let d = 1 + rng.below(40);
    let o = 1 + rng.below(5);
    let mut v = vec![
        (Layout::PerTensor, 1 + rng.below(300), 1),
        (Layout::PerAxis { outer: 7, axis_len: 64, inner: 1 }, 448, 64),
        (Layout::PerAxis { outer: 5, axis_len: 3, inner: 1 }, 15, 3),
        (Layout::PerAxis { outer: 3, axis_len: 5, inner: 2 }, 30, 5),
        (Layout::PerAxis { outer: 2, axis_len: 3, inner: 37 }, 222, 3),
        (Layout::PerAxis { outer: 1, axis_len: 17, inner: 9 }, 153, 17),
        (Layout::Blocked { outer: 4, axis_len: 70, inner: 1, block: 32 }, 280, 12),
        (Layout::Blocked { outer: 3, axis_len: 10, inner: 1, block: 3 }, 30, 12),
        (Layout::Blocked { outer: 2, axis_len: 7, inner: 6, block: 4 }, 84, 24),
        (Layout::Blocked { outer: 5, axis_len: 33, inner: 3, block: 32 }, 495, 30),
        // Blocks tiling the rows, groups of a vector's width of them (whole blocks of two
        // vectors or a multiple of four on each ISA), some groups with a scale outside the
        // fast range.
        (Layout::Blocked { outer: 3, axis_len: 256, inner: 1, block: 32 }, 768, 24),
        (Layout::Blocked { outer: 2, axis_len: 512, inner: 1, block: 16 }, 1024, 64),
        (Layout::Blocked { outer: 1, axis_len: 1088, inner: 1, block: 64 }, 1088, 17),
        (Layout::PerAxis { outer: 0, axis_len: 4, inner: 1 }, 0, 4),
        (Layout::Blocked { outer: 3, axis_len: 0, inner: 1, block: 2 }, 0, 0),
        (Layout::PerAxis { outer: o, axis_len: d, inner: 1 }, o * d, d),
    ];
    v.push((Layout::PerTensor, 0, 1));
    v
}

struct Case {
    x: Vec<f32>,
    x_type: DataType,
    scales: Vec<f32>,
    s_type: DataType,
    zp: Option<Vec<u8>>,
    layout: Layout,
    opts: QuantizeOptions,
    dy: Vec<f32>,
    dy_type: DataType,
}

impl Case {
    fn new(
        rng: &mut Rng,
        layout: Layout,
        n: usize,
        ns: usize,
        x_type: DataType,
        s_type: DataType,
        opts: QuantizeOptions,
    ) -> Case {
        let scales: Vec<f32> = (0..ns).map(|_| scale_value(rng)).collect();
        let x: Vec<f32> =
            (0..n).map(|i| x_value(rng, scales.get(layout.scale_index(i)).copied().unwrap_or(1.0))).collect();
        let out = opts.output;
        let zp = if out.is_minifloat() || rng.below(4) == 0 { None } else { Some(random_codes(rng, out, ns)) };
        let dy: Vec<f32> = (0..n).map(|_| dy_value(rng)).collect();
        let dy_type = [DataType::F32, DataType::F32, DataType::F16, DataType::Bf16][rng.below(4)];
        Case { x, x_type, scales, s_type, zp, layout, opts, dy, dy_type }
    }
}

fn describe(c: &Case) -> String {
    format!(
        "x {} scale {} dy {} -> {} sat={} prec={:?} {:?} zp={}",
        c.x_type,
        c.s_type,
        c.dy_type,
        c.opts.output,
        c.opts.saturate,
        c.opts.precision,
        c.layout,
        c.zp.is_some()
    )
}

/// Every training function on one case, reference against every configuration.
fn check_case(c: &Case, rng: &mut Rng) {
    let n = c.x.len();
    let what = describe(c);
    let xw = Wide::new(c.x_type, &c.x);
    let sw = Wide::new(c.s_type, &c.scales);
    let dyw = Wide::new(c.dy_type, &c.dy);
    let (x, dy) = (xw.values(), dyw.values());
    let out = c.opts.output;
    let zp = c.zp.as_ref().map(|d| Packed { dtype: out, len: c.scales.len(), data: d });
    let p = QuantParams { scale: sw.values(), zero_point: zp, layout: c.layout, opts: c.opts };
    let ybytes = out.byte_len(n).unwrap();
    let mlen = fast::mask_len(n);
    let lda = [1.0f32, 0.5, -3.0][rng.below(3)];
    let gopts = GradOptions { lda, grad_scale: [1.0f32, 0.25][rng.below(2)] };
    let wide_out = [DataType::F32, DataType::F16, DataType::Bf16][rng.below(3)];
    let integer = out.int_range().is_some();

    // Forward: the reference's y is the inference op's y.
    let mut y_inf = vec![0u8; ybytes];
    let inference =
        qdq_ref::quantize(x, &qparams(p.scale, zp, c.layout, &c.opts), qdq::PackedMut::new(c.opts.output, &mut y_inf));
    let mut y_ref = vec![0u8; ybytes];
    let mut m_ref = vec![0u8; mlen];
    let fwd = reference::quantize_train(x, &p, &mut y_ref, &mut m_ref);
    assert_eq!(inference.is_ok(), fwd.is_ok(), "{what}: {inference:?} {fwd:?}");
    if fwd.is_err() {
        // Validation failures are compared in the robustness tests.
        return;
    }
    assert_eq!(y_ref, y_inf, "{what}: training forward differs from QuantizeLinear");
    // Fake quantization is DequantizeLinear(QuantizeLinear(x)).
    let mut fq_ref = WideOut::new(wide_out, n);
    let mut fm_ref = vec![0u8; mlen];
    reference::fake_quantize(x, &p, fq_ref.view(), Some(&mut fm_ref)).unwrap();
    assert_eq!(fm_ref, m_ref, "{what}: fake-quant mask");
    let mut dq = WideOut::new(wide_out, n);
    let codes = Packed { dtype: out, len: n, data: &y_inf };
    let dq_zp = if out.is_minifloat() { None } else { zp };
    qdq_ref::dequantize(codes, &dparams(p.scale, dq_zp, c.layout), dq.view()).unwrap();
    assert_same_wide(&format!("{what}: fake quant vs DQ(Q)"), &dq, &fq_ref);

    // Backward, reference.
    let mut qb_ref = WideOut::new(wide_out, n);
    reference::quantize_backward(dy, &m_ref, &p, lda, qb_ref.view()).unwrap();
    let mut mb_ref = WideOut::new(wide_out, n);
    reference::mask_backward(dy, &m_ref, lda, mb_ref.view()).unwrap();
    let mut db_ref = WideOut::new(wide_out, n);
    reference::dequantize_backward(dy, p.scale, c.layout, lda, db_ref.view()).unwrap();
    let ns = c.scales.len();
    let mut dsg_ref = vec![f32::NAN; ns];
    reference::dequantize_scale_grad(dy, codes, dq_zp, c.layout, &mut dsg_ref).unwrap();
    let mut fdx_ref = WideOut::new(wide_out, n);
    let (mut ds_ref, mut dzp_ref) = (vec![f32::NAN; ns], vec![f32::NAN; ns]);
    let grads = FakeQuantGrads {
        dx: Some(fdx_ref.view()),
        ds: integer.then_some(&mut ds_ref[..]),
        dzp: integer.then_some(&mut dzp_ref[..]),
    };
    reference::fake_quantize_backward(dy, x, &p, &gopts, grads).unwrap();
    // The stored-mask gradient is the recomputed one.
    assert_same_wide(&format!("{what}: mask_backward vs fake-quant dx"), &mb_ref, &fdx_ref);

    for (name, cfg) in configs() {
        let w = format!("{name}: {what}");
        let mut y = vec![0xa5u8; ybytes];
        let mut m = vec![0xa5u8; mlen];
        fast::quantize_train_with(&cfg, x, &p, &mut y, &mut m).unwrap();
        assert_eq!(y, y_ref, "{w}: quantize_train y");
        assert_eq!(m, m_ref, "{w}: quantize_train mask");
        let mut fq = WideOut::new(wide_out, n);
        let mut fm = vec![0xa5u8; mlen];
        fast::fake_quantize_with(&cfg, x, &p, fq.view(), Some(&mut fm)).unwrap();
        assert_same_wide(&format!("{w}: fake_quantize"), &fq_ref, &fq);
        assert_eq!(fm, m_ref, "{w}: fake_quantize mask");
        let mut fq2 = WideOut::new(wide_out, n);
        fast::fake_quantize_with(&cfg, x, &p, fq2.view(), None).unwrap();
        assert_same_wide(&format!("{w}: fake_quantize without mask"), &fq_ref, &fq2);

        let mut qb = WideOut::new(wide_out, n);
        fast::quantize_backward_with(&cfg, dy, &m_ref, &p, lda, qb.view()).unwrap();
        assert_same_wide(&format!("{w}: quantize_backward"), &qb_ref, &qb);
        let mut mb = WideOut::new(wide_out, n);
        fast::mask_backward_with(&cfg, dy, &m_ref, lda, mb.view()).unwrap();
        assert_same_wide(&format!("{w}: mask_backward"), &mb_ref, &mb);
        let mut db = WideOut::new(wide_out, n);
        fast::dequantize_backward_with(&cfg, dy, p.scale, c.layout, lda, db.view()).unwrap();
        assert_same_wide(&format!("{w}: dequantize_backward"), &db_ref, &db);
        let mut dsg = vec![1.0f32; ns];
        fast::dequantize_scale_grad_with(&cfg, dy, codes, dq_zp, c.layout, &mut dsg).unwrap();
        assert_same_sums(&format!("{w}: dequantize_scale_grad"), &dsg_ref, &dsg);

        let mut fdx = WideOut::new(wide_out, n);
        let (mut ds, mut dzp) = (vec![1.0f32; ns], vec![1.0f32; ns]);
        let grads = FakeQuantGrads {
            dx: Some(fdx.view()),
            ds: integer.then_some(&mut ds[..]),
            dzp: integer.then_some(&mut dzp[..]),
        };
        fast::fake_quantize_backward_with(&cfg, dy, x, &p, &gopts, grads).unwrap();
        assert_same_wide(&format!("{w}: fake_quantize_backward dx"), &fdx_ref, &fdx);
        if integer {
            assert_same_sums(&format!("{w}: fake_quantize_backward ds"), &ds_ref, &ds);
            assert_same_sums(&format!("{w}: fake_quantize_backward dzp"), &dzp_ref, &dzp);
            // Sums alone (no dx) take other parallel paths; same bits.
            let (mut ds2, mut dzp2) = (vec![1.0f32; ns], vec![1.0f32; ns]);
            let grads = FakeQuantGrads { dx: None, ds: Some(&mut ds2), dzp: Some(&mut dzp2) };
            fast::fake_quantize_backward_with(&cfg, dy, x, &p, &gopts, grads).unwrap();
            assert_same_sums(&format!("{w}: ds without dx"), &ds_ref, &ds2);
            assert_same_sums(&format!("{w}: dzp without dx"), &dzp_ref, &dzp2);
        }
    }
}

/// Every output type, every layout, x / scale / dy types, saturation and precision.
pub fn training_matches_reference_every_type_and_layout() {
    let mut rng = Rng::new(0x7ea1_7ea1_0000_0001);
    for out in DataType::QUANTIZED {
        for (x_type, s_type, precision) in [
            (DataType::F32, DataType::F32, None),
            (DataType::F16, DataType::F16, None),
            (DataType::Bf16, DataType::F32, None),
            (DataType::F32, DataType::Bf16, None),
            (DataType::F32, DataType::E8M0, None),
            (DataType::F32, DataType::F32, Some(DataType::F16)),
        ] {
            for (layout, n, ns) in layouts(&mut rng) {
                let opts = QuantizeOptions { output: out, saturate: rng.below(2) == 0, precision };
                let c = Case::new(&mut rng, layout, n, ns, x_type, s_type, opts);
                check_case(&c, &mut rng);
            }
        }
    }
}

/// Per-tensor, every length 0..=512 (vector bodies, tails, mask bytes split anywhere).
pub fn training_lengths_0_to_512() {
    let mut rng = Rng::new(0x5eed_0000_0000_0512);
    let outs = [DataType::U8, DataType::I4, DataType::I16, DataType::E4M3Fn, DataType::U2, DataType::E3M2];
    for n in SWEEP_LENGTHS {
        let out = outs[n % outs.len()];
        let opts = QuantizeOptions { output: out, saturate: n % 3 != 0, precision: None };
        let layout = if n % 5 == 0 && n > 0 {
            Layout::Blocked { outer: 1, axis_len: n, inner: 1, block: 1 + n % 37 }
        } else {
            Layout::PerTensor
        };
        let ns = layout.scale_count(n).unwrap();
        let c = Case::new(&mut rng, layout, n, ns, DataType::F32, DataType::F32, opts);
        check_case(&c, &mut rng);
    }
}

/// Sizes that split into many parallel parts and long runs (the per-tensor tile tree,
/// contiguous groups, channels spread over the tensor).
pub fn training_large_parallel() {
    let mut rng = Rng::new(0x1a59_e000_0000_0001);
    let n = (1 << 17) + 77;
    for (layout, ns) in [
        (Layout::PerTensor, 1),
        (Layout::PerAxis { outer: 1, axis_len: 3, inner: n / 3 }, 3),
        (Layout::Blocked { outer: n / 7, axis_len: 7, inner: 1, block: 3 }, (n / 7) * 3),
        (Layout::PerAxis { outer: n / 64, axis_len: 64, inner: 1 }, 64),
        (Layout::PerAxis { outer: 16, axis_len: 5, inner: n / 80 }, 5),
        (Layout::Blocked { outer: 2, axis_len: 64, inner: n / 128, block: 32 }, 2 * 2 * (n / 128)),
        (Layout::Blocked { outer: n / 256, axis_len: 256, inner: 1, block: 32 }, (n / 256) * 8),
    ] {
        let n = match layout {
            Layout::PerTensor => n,
            Layout::PerAxis { outer, axis_len, inner } | Layout::Blocked { outer, axis_len, inner, .. } => {
                outer * axis_len * inner
            }
        };
        for out in [DataType::U8, DataType::I4, DataType::E5M2] {
            let opts = QuantizeOptions::new(out);
            let mut c = Case::new(&mut rng, layout, n, ns, DataType::F32, DataType::F32, opts);
            // Ordinary data, so sums are not all NaN.
            for (i, v) in c.x.iter_mut().enumerate() {
                if !v.is_finite() || v.abs() > 1e6 {
                    *v = (i % 97) as f32 - 40.0;
                }
            }
            for v in c.dy.iter_mut() {
                if !v.is_finite() || v.abs() > 1e6 {
                    *v = 0.5;
                }
            }
            for s in c.scales.iter_mut() {
                *s = s.abs().clamp(0.01, 4.0);
            }
            check_case(&c, &mut rng);
        }
    }
}
