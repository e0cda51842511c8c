//! Benchmark cases shared by the criterion benches (`cargo bench -p qdq-benches`),
//! `cargo xtask bench` and `cargo xtask vs-ort`.
//!
//! * [`Case`]: one operator call shape (op, input and output types, scale type, layout);
//!   [`Case::prepare`] builds realistic inputs for `n` elements ([`Prepared`]).
//! * [`Roofline`]: the cheapest kernel that moves the same bytes as a case (reads every
//!   input byte once, writes every output byte once, no arithmetic), so a measured
//!   throughput can be quoted as a fraction of what the memory system allows.
//! * [`Mode`]: a forced ISA on the calling thread, or the default configuration (best ISA,
//!   rayon above 64 Ki elements).
//!
//! The data: x uniform in [-4, 4); scales chosen per type so the quantized values spread
//! over the output range (0.0314 for 8-bit integers and float8); zero points for every
//! integer type (the middle of the range for unsigned types, 0 for signed ones); per-axis
//! and blocked scales are up to 44 % larger. Dequantize inputs are the quantized
//! data. `xtask/python/ort_bench.py` builds the same data for onnxruntime.

use qdq::train::{FakeQuantGrads, GradOptions, QuantParams};
use qdq::{bf16, f16, Config, DataType, Isa, Layout, Packed, QuantizeOptions, Values, ValuesMut};
use rayon::prelude::*;

/// The four benchmark sizes: L1 (4 Ki), L2 (64 Ki), L3 (1 Mi) and DRAM (16 Mi) elements.
pub const SIZES: [usize; 4] = [4 << 10, 64 << 10, 1 << 20, 16 << 20];

/// The axis length of the `blocked-last` layout (`x` is `[n / 1024, 1024]`).
pub const BLOCKED_LAST_AXIS: usize = 1024;
/// The axis length of the `blocked-middle` layout (`x` is `[n / 4096, 128, 32]`, blocked
/// along the 128-long middle axis).
pub const BLOCKED_MIDDLE_AXIS: usize = 128;
/// The inner size of the `blocked-middle` layout.
pub const BLOCKED_MIDDLE_INNER: usize = 32;

/// `4Ki`, `64Ki`, `1Mi`, `16Mi`, or the plain number.
pub fn size_name(n: usize) -> String {
    if n >= 1 << 20 && n.is_multiple_of(1 << 20) {
        format!("{}Mi", n >> 20)
    } else if n >= 1 << 10 && n.is_multiple_of(1 << 10) {
        format!("{}Ki", n >> 10)
    } else {
        n.to_string()
    }
}

/// The operator.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Op {
    /// QuantizeLinear.
    Quantize,
    /// DequantizeLinear.
    Dequantize,
    /// DynamicQuantizeLinear (f32 to u8, per-tensor).
    DynamicQuantize,
    /// Training-mode QuantizeLinear forward: y and the bit-packed mask.
    QuantizeTrain,
    /// QuantizeLinear backward: `dx = lda * dy * mask / s` (f32 dy and dx).
    QuantizeBackward,
    /// Fake quantization forward: `DequantizeLinear(QuantizeLinear(x))` (f32) and the mask.
    FakeQuantize,
    /// Fake quantization backward: `dx`, and for integer outputs the LSQ `ds` and `dzp`.
    FakeQuantizeBackward,
}

impl Op {
    /// `quantize`, `dequantize` or `dynamic_quantize`.
    pub fn name(self) -> &'static str {
        match self {
            Op::Quantize => "quantize",
            Op::Dequantize => "dequantize",
            Op::DynamicQuantize => "dynamic_quantize",
            Op::QuantizeTrain => "quantize_train",
            Op::QuantizeBackward => "quantize_backward",
            Op::FakeQuantize => "fake_quantize",
            Op::FakeQuantizeBackward => "fake_quantize_backward",
        }
    }

    /// The training-mode ops.
    pub const TRAINING: [Op; 4] = [Op::QuantizeTrain, Op::QuantizeBackward, Op::FakeQuantize, Op::FakeQuantizeBackward];
}

/// How the scales map onto x.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Shape {
    /// One scale.
    PerTensor,
    /// `x` is `[n / channels, channels]`, one scale per channel (the last axis).
    PerAxisLast {
        /// Number of channels (scales).
        channels: usize,
    },
    /// `x` is `[channels, n / channels]`, one scale per channel (the first axis).
    PerAxisFirst {
        /// Number of channels (scales).
        channels: usize,
    },
    /// `x` is `[n / 1024, 1024]`, blocks of `block` along the last axis.
    BlockedLast {
        /// Block size.
        block: usize,
    },
    /// `x` is `[n / 4096, 128, 32]`, blocks of `block` along the middle axis.
    BlockedMiddle {
        /// Block size.
        block: usize,
    },
}

impl Shape {
    /// The five layouts of the full matrix: per-tensor, per-axis last and first (64
    /// channels), blocked last and middle (block 32).
    pub const ALL: [Shape; 5] = [
        Shape::PerTensor,
        Shape::PerAxisLast { channels: 64 },
        Shape::PerAxisFirst { channels: 64 },
        Shape::BlockedLast { block: 32 },
        Shape::BlockedMiddle { block: 32 },
    ];

    /// `per-tensor`, `per-axis-last`, `per-axis-first`, `blocked-last`, `blocked-middle`.
    pub fn name(self) -> &'static str {
        match self {
            Shape::PerTensor => "per-tensor",
            Shape::PerAxisLast { .. } => "per-axis-last",
            Shape::PerAxisFirst { .. } => "per-axis-first",
            Shape::BlockedLast { .. } => "blocked-last",
            Shape::BlockedMiddle { .. } => "blocked-middle",
        }
    }

    /// The name with its parameter: `per-tensor`, `per-axis-last64`, `blocked-last32`, ...
    pub fn label(self) -> String {
        match self {
            Shape::PerTensor => self.name().to_string(),
            Shape::PerAxisLast { channels } | Shape::PerAxisFirst { channels } => format!("{}{channels}", self.name()),
            Shape::BlockedLast { block } | Shape::BlockedMiddle { block } => format!("{}{block}", self.name()),
        }
    }

    /// The slice-API layout for `n` elements (`n` a multiple of 4096).
    pub fn layout(self, n: usize) -> Layout {
        match self {
            Shape::PerTensor => Layout::PerTensor,
            Shape::PerAxisLast { channels } => Layout::PerAxis { outer: n / channels, axis_len: channels, inner: 1 },
            Shape::PerAxisFirst { channels } => Layout::PerAxis { outer: 1, axis_len: channels, inner: n / channels },
            Shape::BlockedLast { block } => {
                Layout::Blocked { outer: n / BLOCKED_LAST_AXIS, axis_len: BLOCKED_LAST_AXIS, inner: 1, block }
            }
            Shape::BlockedMiddle { block } => Layout::Blocked {
                outer: n / (BLOCKED_MIDDLE_AXIS * BLOCKED_MIDDLE_INNER),
                axis_len: BLOCKED_MIDDLE_AXIS,
                inner: BLOCKED_MIDDLE_INNER,
                block,
            },
        }
    }

    /// Number of scales for `n` elements.
    pub fn scale_count(self, n: usize) -> usize {
        match self {
            Shape::PerTensor => 1,
            Shape::PerAxisLast { channels } | Shape::PerAxisFirst { channels } => channels,
            Shape::BlockedLast { block } | Shape::BlockedMiddle { block } => n / block,
        }
    }
}

/// The scale for a quantized type: about 4 / (the largest output magnitude), so x in
/// [-4, 4) spreads over the whole range.
pub fn base_scale(t: DataType) -> f32 {
    match t {
        DataType::U8 | DataType::I8 => 0.0315,
        DataType::U16 | DataType::I16 => 1.23e-4,
        DataType::U4 | DataType::I4 => 0.53,
        DataType::U2 | DataType::I2 => 1.9,
        DataType::E2M1 => 0.7,
        DataType::E2M3 => 0.55,
        DataType::E3M2 => 0.15,
        // float8: 4 / 0.0314 = 127, well inside every float8 range.
        _ => 0.0314,
    }
}

/// Scale `k` of a layout: `base * (1 + (k % 8) / 16)` (per-tensor: `base`).
pub fn scale_value(t: DataType, k: usize) -> f32 {
    base_scale(t) * (1.0 + (k % 8) as f32 / 16.0)
}

/// The e8m0 code of block `k` of an MX (e8m0-scaled) layout: about `base_scale(t)`.
pub fn e8m0_code(t: DataType, k: usize) -> u8 {
    let e = base_scale(t).log2().round() as i32;
    (127 + e + (k % 2) as i32) as u8
}

/// The zero-point code of an integer type (middle of the range for unsigned types, 0 for
/// signed ones), or `None` for float types.
pub fn zero_point_code(t: DataType) -> Option<u32> {
    match t {
        DataType::U8 => Some(128),
        DataType::U16 => Some(32768),
        DataType::U4 => Some(8),
        DataType::U2 => Some(2),
        DataType::I8 | DataType::I16 | DataType::I4 | DataType::I2 => Some(0),
        _ => None,
    }
}

/// Deterministic uniform f32 data in [-4, 4) (xorshift64).
pub fn uniform(n: usize, seed: u64) -> Vec<f32> {
    let mut s = 0x2545_f491_4f6c_dd1d_u64 ^ seed.wrapping_mul(0x9e37_79b9_7f4a_7c15);
    (0..n)
        .map(|_| {
            s ^= s << 13;
            s ^= s >> 7;
            s ^= s << 17;
            ((s >> 40) as f32 / (1u64 << 24) as f32 - 0.5) * 8.0
        })
        .collect()
}

/// One benchmark case.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct Case {
    /// The operator.
    pub op: Op,
    /// x's type.
    pub from: DataType,
    /// y's type.
    pub to: DataType,
    /// The scale's type.
    pub scale: DataType,
    /// The layout.
    pub shape: Shape,
}

impl Case {
    /// QuantizeLinear from `from` (f32, f16 or bf16; the scale has the same type) to `to`.
    pub fn quantize(from: DataType, to: DataType, shape: Shape) -> Case {
        Case { op: Op::Quantize, from, to, scale: from, shape }
    }

    /// DequantizeLinear from `from` to `to` (f32, f16 or bf16; the scale has the same type).
    pub fn dequantize(from: DataType, to: DataType, shape: Shape) -> Case {
        Case { op: Op::Dequantize, from, to, scale: to, shape }
    }

    /// DequantizeLinear from `from` to f32 with e8m0 scales (the MX layout when `shape` is
    /// blocked with block 32).
    pub fn dequantize_mx(from: DataType, shape: Shape) -> Case {
        Case { op: Op::Dequantize, from, to: DataType::F32, scale: DataType::E8M0, shape }
    }

    /// A training-mode op on f32 data (x, dy, dx and the scale are f32) quantizing to `to`.
    pub fn training(op: Op, to: DataType, shape: Shape) -> Case {
        Case { op, from: DataType::F32, to, scale: DataType::F32, shape }
    }

    /// DynamicQuantizeLinear (f32 to u8).
    pub fn dynamic_quantize() -> Case {
        Case {
            op: Op::DynamicQuantize,
            from: DataType::F32,
            to: DataType::U8,
            scale: DataType::F32,
            shape: Shape::PerTensor,
        }
    }

    /// The quantized type of the case (y for quantize, x for dequantize).
    pub fn quantized(&self) -> DataType {
        match self.op {
            Op::Dequantize => self.from,
            _ => self.to,
        }
    }

    /// `f32-u8/per-tensor`, `u8-f32/blocked-last32/e8m0`, ... (unique within an op).
    pub fn name(&self) -> String {
        let mut s = format!("{}-{}/{}", self.from.name(), self.to.name(), self.shape.label());
        if self.scale != self.default_scale_type() {
            s.push('/');
            s.push_str(self.scale.name());
        }
        s
    }

    /// `quantize/f32-u8/per-tensor`, ...
    pub fn full_name(&self) -> String {
        format!("{}/{}", self.op.name(), self.name())
    }

    fn default_scale_type(&self) -> DataType {
        match self.op {
            Op::Dequantize => self.to,
            Op::DynamicQuantize => DataType::F32,
            _ => self.from,
        }
    }

    /// The JSON fields that describe the case (no braces):
    /// `"op":…,"from":…,"to":…,"scale":…,"layout":…` plus `"channels"` or `"block"`.
    pub fn json_fields(&self) -> String {
        let mut s = format!(
            "\"op\":\"{}\",\"from\":\"{}\",\"to\":\"{}\",\"scale\":\"{}\",\"layout\":\"{}\"",
            self.op.name(),
            self.from.name(),
            self.to.name(),
            self.scale.name(),
            self.shape.name()
        );
        match self.shape {
            Shape::PerTensor => {}
            Shape::PerAxisLast { channels } | Shape::PerAxisFirst { channels } => {
                s.push_str(&format!(",\"channels\":{channels}"))
            }
            Shape::BlockedLast { block } | Shape::BlockedMiddle { block } => s.push_str(&format!(",\"block\":{block}")),
        }
        s
    }

    /// The case as one token for `ort_bench.py`: `op:from:to:layout[:param]`, e.g.
    /// `quantize:f32:i8:per-axis-last:64`.
    pub fn spec(&self) -> String {
        let mut s = format!("{}:{}:{}:{}", self.op.name(), self.from.name(), self.to.name(), self.shape.name());
        match self.shape {
            Shape::PerTensor => {}
            Shape::PerAxisLast { channels } | Shape::PerAxisFirst { channels } => s.push_str(&format!(":{channels}")),
            Shape::BlockedLast { block } | Shape::BlockedMiddle { block } => s.push_str(&format!(":{block}")),
        }
        s
    }

    /// Bytes read (x, scales and zero points) and written (y) by one call on `n` elements:
    /// what the [`Roofline`] kernel for this case moves.
    pub fn io_bytes(&self, n: usize) -> (usize, usize) {
        let k = self.shape.scale_count(n);
        let x = self.from.byte_len(n).unwrap_or(0);
        let scale = self.scale.byte_len(k).unwrap_or(0);
        let zp = zero_point_code(self.quantized()).map_or(0, |_| self.quantized().byte_len(k).unwrap_or(0));
        let y = self.to.byte_len(n).unwrap_or(0);
        let mask = n.div_ceil(8);
        let wide = 4 * n;
        match self.op {
            Op::DynamicQuantize => (x, y),
            Op::Quantize | Op::Dequantize => (x + scale + zp, y),
            Op::QuantizeTrain => (x + scale + zp, y + mask),
            Op::QuantizeBackward => (wide + mask + scale, wide),
            Op::FakeQuantize => (x + scale + zp, wide + mask),
            // x and dy in, dx out (ds and dzp are one float per scale).
            Op::FakeQuantizeBackward => (2 * wide + scale + zp, wide + 8 * k),
        }
    }

    /// Builds the inputs and the output buffer for `n` elements (a multiple of 4096).
    pub fn prepare(&self, n: usize) -> Prepared {
        assert!(n.is_multiple_of(4096), "benchmark sizes are multiples of 4096");
        let q = self.quantized();
        let k = self.shape.scale_count(n);
        let layout = self.shape.layout(n);
        let scale = match self.scale {
            DataType::E8M0 => Scales::E8M0((0..k).map(|i| e8m0_code(q, i)).collect()),
            DataType::F16 => Scales::F16((0..k).map(|i| f16::from_f32(scale_value(q, i))).collect()),
            DataType::Bf16 => Scales::Bf16((0..k).map(|i| bf16::from_f32(scale_value(q, i))).collect()),
            _ => Scales::F32((0..k).map(|i| scale_value(q, i)).collect()),
        };
        let zero_point = zero_point_code(q).map(|code| {
            let mut zp = vec![0u8; q.byte_len(k).unwrap_or(0)];
            for i in 0..k {
                qdq::packing::set(q, &mut zp, i, code);
            }
            zp
        });
        let xf = uniform(n, (n as u64) ^ ((q as u64) << 32));
        let train = Op::TRAINING.contains(&self.op).then(|| {
            let mut mask = Aligned::filled(n.div_ceil(8), 0u8);
            let zp = zero_point.as_ref().map(|d| Packed { dtype: q, len: k, data: d });
            let p = QuantParams { scale: scale.values(), zero_point: zp, layout, opts: QuantizeOptions::new(q) };
            let mut codes = vec![0u8; q.byte_len(n).unwrap_or(0)];
            qdq::train::quantize_train(Values::F32(&xf), &p, &mut codes, mask.as_mut_slice())
                .expect("the training forward of a benchmark input");
            let dy: Vec<f32> = uniform(n, 0x0d1e).iter().map(|v| v * 0.25).collect();
            TrainBufs {
                mask,
                dy: Aligned::from_slice(&dy),
                dx: Aligned::filled(n, 0.0),
                ds: vec![0.0; k],
                dzp: vec![0.0; k],
            }
        });
        let (x, y) = match self.op {
            Op::QuantizeBackward | Op::FakeQuantize | Op::FakeQuantizeBackward => {
                (Input::F32(Aligned::from_slice(&xf)), Output::F32(Aligned::filled(n, 0.0)))
            }
            Op::Quantize | Op::DynamicQuantize | Op::QuantizeTrain => {
                let x = match self.from {
                    DataType::F16 => {
                        Input::F16(Aligned::from_slice(&xf.iter().map(|&v| f16::from_f32(v)).collect::<Vec<_>>()))
                    }
                    DataType::Bf16 => {
                        Input::Bf16(Aligned::from_slice(&xf.iter().map(|&v| bf16::from_f32(v)).collect::<Vec<_>>()))
                    }
                    _ => Input::F32(Aligned::from_slice(&xf)),
                };
                (x, Output::Bytes(Aligned::filled(self.to.byte_len(n).unwrap_or(0), 0x5a)))
            }
            Op::Dequantize => {
                // Realistic codes: the quantized data, with the same scales and zero points.
                let mut codes = vec![0u8; q.byte_len(n).unwrap_or(0)];
                let zp = zero_point.as_ref().map(|d| Packed { dtype: q, len: k, data: d });
                qdq::quantize(Values::F32(&xf), scale.values(), zp, layout, &QuantizeOptions::new(q), &mut codes)
                    .expect("quantize the dequantize input");
                let y = match self.to {
                    DataType::F16 => Output::F16(Aligned::filled(n, f16::from_f32(1.0))),
                    DataType::Bf16 => Output::Bf16(Aligned::filled(n, bf16::from_f32(1.0))),
                    _ => Output::F32(Aligned::filled(n, 1.0)),
                };
                (Input::Codes(Aligned::from_slice(&codes)), y)
            }
        };
        let opts = QuantizeOptions::new(q);
        Prepared { case: *self, n, layout, x, scale, zero_point, y, opts, train }
    }
}

/// The full criterion matrix: every quantized type from f32, f16 / bf16 to i8, every type
/// back to f32, i8 / i4 to f16 / bf16 (all on the five layouts of [`Shape::ALL`]),
/// e8m0-scaled (MX) dequantize, and DynamicQuantizeLinear.
pub fn full_matrix() -> Vec<Case> {
    let mut v = Vec::new();
    for to in DataType::QUANTIZED {
        for shape in Shape::ALL {
            v.push(Case::quantize(DataType::F32, to, shape));
        }
    }
    for from in [DataType::F16, DataType::Bf16] {
        for shape in Shape::ALL {
            v.push(Case::quantize(from, DataType::I8, shape));
        }
    }
    for from in DataType::QUANTIZED {
        for shape in Shape::ALL {
            v.push(Case::dequantize(from, DataType::F32, shape));
        }
    }
    for from in [DataType::I8, DataType::I4] {
        for to in [DataType::F16, DataType::Bf16] {
            for shape in Shape::ALL {
                v.push(Case::dequantize(from, to, shape));
            }
        }
    }
    for from in [DataType::E4M3Fn, DataType::E5M2, DataType::E2M1, DataType::E2M3, DataType::E3M2, DataType::I8] {
        for shape in [Shape::BlockedLast { block: 32 }, Shape::BlockedMiddle { block: 32 }] {
            v.push(Case::dequantize_mx(from, shape));
        }
    }
    v.push(Case::dynamic_quantize());
    v
}

/// The training-mode matrix (criterion group `train`): each training op quantizing f32 to
/// u8, i8, i4 and e4m3fn (float8: no scale or zero-point gradients), per-tensor, per-axis
/// on the first axis and blocked along the last axis, plus the inference QuantizeLinear and
/// DequantizeLinear of the same cases for comparison.
pub fn training_matrix() -> Vec<Case> {
    let mut v = Vec::new();
    for to in [DataType::U8, DataType::I8, DataType::I4, DataType::E4M3Fn] {
        for shape in [Shape::PerTensor, Shape::PerAxisFirst { channels: 64 }, Shape::BlockedLast { block: 32 }] {
            for op in Op::TRAINING {
                v.push(Case::training(op, to, shape));
            }
            v.push(Case::quantize(DataType::F32, to, shape));
            v.push(Case::dequantize(to, DataType::F32, shape));
        }
    }
    v
}

/// Sizes of the training benches: `1Mi` (L3) and `16Mi` (DRAM).
pub const TRAIN_SIZES: [usize; 2] = [1 << 20, 16 << 20];

enum Input {
    F32(Aligned<f32>),
    F16(Aligned<f16>),
    Bf16(Aligned<bf16>),
    Codes(Aligned<u8>),
}

enum Scales {
    F32(Vec<f32>),
    F16(Vec<f16>),
    Bf16(Vec<bf16>),
    E8M0(Vec<u8>),
}

impl Scales {
    fn values(&self) -> Values<'_> {
        match self {
            Scales::F32(v) => Values::F32(v),
            Scales::F16(v) => Values::F16(v),
            Scales::Bf16(v) => Values::Bf16(v),
            Scales::E8M0(v) => Values::E8M0(v),
        }
    }
}

enum Output {
    Bytes(Aligned<u8>),
    F32(Aligned<f32>),
    F16(Aligned<f16>),
    Bf16(Aligned<bf16>),
}

/// A case with its inputs and output buffer for one size.
pub struct Prepared {
    case: Case,
    n: usize,
    layout: Layout,
    x: Input,
    scale: Scales,
    zero_point: Option<Vec<u8>>,
    y: Output,
    opts: QuantizeOptions,
    train: Option<TrainBufs>,
}

/// The extra buffers of the training ops.
struct TrainBufs {
    mask: Aligned<u8>,
    dy: Aligned<f32>,
    dx: Aligned<f32>,
    ds: Vec<f32>,
    dzp: Vec<f32>,
}

impl Prepared {
    /// The case.
    pub fn case(&self) -> Case {
        self.case
    }

    /// Number of elements.
    pub fn elements(&self) -> usize {
        self.n
    }

    /// One operator call with `cfg`.
    pub fn run(&mut self, cfg: &Config) -> qdq::Result<()> {
        let q = self.case.quantized();
        let k = self.case.shape.scale_count(self.n);
        let zp = self.zero_point.as_deref().map(|d| Packed { dtype: q, len: k, data: d });
        match (&self.case.op, &self.x, &mut self.y) {
            (Op::DynamicQuantize, Input::F32(x), Output::Bytes(y)) => {
                qdq::dynamic_quantize_with(cfg, x.as_slice(), y.as_mut_slice()).map(|_| ())
            }
            (Op::Quantize, x, Output::Bytes(y)) => {
                let x = match x {
                    Input::F32(v) => Values::F32(v.as_slice()),
                    Input::F16(v) => Values::F16(v.as_slice()),
                    Input::Bf16(v) => Values::Bf16(v.as_slice()),
                    Input::Codes(_) => unreachable!("quantize takes float input"),
                };
                qdq::quantize_with(cfg, x, self.scale.values(), zp, self.layout, &self.opts, y.as_mut_slice())
            }
            (Op::Dequantize, Input::Codes(x), y) => {
                let xp = Packed { dtype: q, len: self.n, data: x.as_slice() };
                let y = match y {
                    Output::F32(v) => ValuesMut::F32(v.as_mut_slice()),
                    Output::F16(v) => ValuesMut::F16(v.as_mut_slice()),
                    Output::Bf16(v) => ValuesMut::Bf16(v.as_mut_slice()),
                    Output::Bytes(_) => unreachable!("dequantize writes floats"),
                };
                qdq::dequantize_with(cfg, xp, self.scale.values(), zp, self.layout, y)
            }
            (op, Input::F32(x), y) if Op::TRAINING.contains(op) => {
                let t = self.train.as_mut().expect("training buffers");
                let x = Values::F32(x.as_slice());
                let p =
                    QuantParams { scale: self.scale.values(), zero_point: zp, layout: self.layout, opts: self.opts };
                let dy = Values::F32(t.dy.as_slice());
                match (op, y) {
                    (Op::QuantizeTrain, Output::Bytes(y)) => {
                        qdq::train::quantize_train_with(cfg, x, &p, y.as_mut_slice(), t.mask.as_mut_slice())
                    }
                    (Op::QuantizeBackward, _) => qdq::train::quantize_backward_with(
                        cfg,
                        dy,
                        t.mask.as_slice(),
                        &p,
                        1.0,
                        ValuesMut::F32(t.dx.as_mut_slice()),
                    ),
                    (Op::FakeQuantize, Output::F32(y)) => qdq::train::fake_quantize_with(
                        cfg,
                        x,
                        &p,
                        ValuesMut::F32(y.as_mut_slice()),
                        Some(t.mask.as_mut_slice()),
                    ),
                    (Op::FakeQuantizeBackward, _) => {
                        let integer = q.int_range().is_some();
                        let grads = FakeQuantGrads {
                            dx: Some(ValuesMut::F32(t.dx.as_mut_slice())),
                            ds: integer.then_some(&mut t.ds[..]),
                            dzp: integer.then_some(&mut t.dzp[..]),
                        };
                        qdq::train::fake_quantize_backward_with(cfg, dy, x, &p, &GradOptions::default(), grads)
                    }
                    _ => unreachable!("prepare builds matching buffers"),
                }
            }
            _ => unreachable!("prepare builds matching buffers"),
        }
    }

    /// A checksum of the output (keeps the work observable in tests).
    pub fn output_checksum(&self) -> u64 {
        fn fold(b: &[u8]) -> u64 {
            b.iter().fold(0xcbf2_9ce4_8422_2325_u64, |h, &x| (h ^ x as u64).wrapping_mul(0x100_0000_01b3))
        }
        match &self.y {
            Output::Bytes(v) => fold(v.as_slice()),
            Output::F32(v) => fold(&v.as_slice().iter().flat_map(|f| f.to_le_bytes()).collect::<Vec<_>>()),
            Output::F16(v) => fold(&v.as_slice().iter().flat_map(|f| f.to_le_bytes()).collect::<Vec<_>>()),
            Output::Bf16(v) => fold(&v.as_slice().iter().flat_map(|f| f.to_le_bytes()).collect::<Vec<_>>()),
        }
    }
}

/// How a case runs.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Mode {
    /// The ISA forced, on the calling thread.
    Single(Isa),
    /// `Config::default()`: the best ISA, rayon (all pool threads) above 64 Ki elements.
    Default,
}

impl Mode {
    /// Every ISA this CPU can run (single-threaded, best first), then the default mode; only
    /// the forced ISA when `QDQ_ISA` is set. A `QDQ_ISA` that names no ISA, or one this CPU
    /// lacks, is an error: a bench never times another ISA under its name.
    pub fn all() -> qdq::Result<Vec<Mode>> {
        let mut v: Vec<Mode> = match Isa::forced()? {
            Some(isa) => vec![Mode::Single(isa)],
            None => Isa::available().into_iter().map(Mode::Single).collect(),
        };
        v.push(Mode::Default);
        Ok(v)
    }

    /// The configuration for the call.
    pub fn config(self) -> Config {
        match self {
            Mode::Single(isa) => Config::sequential().with_isa(isa),
            Mode::Default => Config::default(),
        }
    }

    /// The ISA that runs.
    pub fn isa(self) -> Isa {
        match self {
            Mode::Single(isa) => isa,
            // `Mode::all` has checked `QDQ_ISA`, so this is the ISA the default mode runs.
            Mode::Default => Isa::detect().unwrap_or_else(|_| Isa::best()),
        }
    }

    /// Threads a call on `n` elements uses (the rayon pool size in the default mode at or
    /// above its parallel threshold, else 1).
    pub fn threads(self, n: usize) -> usize {
        match self {
            Mode::Single(_) => 1,
            Mode::Default if n >= Config::default().parallel_threshold => rayon::current_num_threads(),
            Mode::Default => 1,
        }
    }

    /// `avx512-1t`, `scalar-1t`, `default-avx512-2t`, ...
    pub fn label(self) -> String {
        match self {
            Mode::Single(isa) => format!("{}-1t", isa.name()),
            Mode::Default => format!("default-{}-{}t", self.isa().name(), rayon::current_num_threads()),
        }
    }
}

/// A `len`-element buffer whose first element sits on a 64-byte boundary (a `Vec` with a
/// little slack, sliced at the aligned offset), as inference engines allocate tensors.
pub struct Aligned<T> {
    v: Vec<T>,
    off: usize,
    len: usize,
}

impl<T: Copy + Default> Aligned<T> {
    /// `len` copies of `value`.
    pub fn filled(len: usize, value: T) -> Aligned<T> {
        let pad = 64 / std::mem::size_of::<T>().max(1);
        let v = vec![value; len + pad];
        let off = v.as_ptr().align_offset(64).min(pad);
        Aligned { v, off, len }
    }

    /// The elements of `src`, aligned.
    pub fn from_slice(src: &[T]) -> Aligned<T> {
        let mut a = Aligned::filled(src.len(), T::default());
        a.as_mut_slice().copy_from_slice(src);
        a
    }

    /// The elements.
    pub fn as_slice(&self) -> &[T] {
        &self.v[self.off..self.off + self.len]
    }

    /// The elements, mutable.
    pub fn as_mut_slice(&mut self) -> &mut [T] {
        &mut self.v[self.off..self.off + self.len]
    }
}

/// The roofline kernel: reads `in_bytes` and writes `out_bytes` with nothing but loads,
/// stores and xors (64-byte vectors with AVX-512, 32-byte with AVX2), one sequential pass
/// through each of two 64-byte aligned buffers (split into one contiguous part per thread).
/// Where the output is smaller than the input, each 64-byte output block is the xor of the
/// next `in / out` input blocks (a quantize kernel's loop minus the arithmetic) and the
/// input left over (scales, fractional ratios) is xor-folded at the end; where it is
/// larger, each input block is stored `out / in` times and the output left over is copied
/// from the input. Every input byte is read and every output byte written (fewer than 64
/// bytes per part twice). Stores are ordinary (write-allocate) stores, as in the kernels,
/// or non-temporal ones where [`Roofline::calibrate`] finds them faster (large outputs, as
/// `memcpy` does).
pub struct Roofline {
    input: Aligned<u8>,
    output: Aligned<u8>,
    non_temporal: bool,
}

/// Start of part `s` of `steps` in a buffer of `len` bytes (64-byte aligned but the end).
fn part_bound(s: usize, steps: usize, len: usize) -> usize {
    if s >= steps {
        len
    } else {
        (s * len / steps) & !63
    }
}

impl Roofline {
    /// Buffers for a kernel reading `in_bytes` and writing `out_bytes`, both touched.
    pub fn new(in_bytes: usize, out_bytes: usize) -> Roofline {
        let mut input = Aligned::filled(in_bytes.max(1), 0u8);
        for (i, b) in input.as_mut_slice().iter_mut().enumerate() {
            *b = (i as u8).wrapping_mul(31) ^ 0x5a;
        }
        Roofline { input, output: Aligned::filled(out_bytes.max(1), 0xa5), non_temporal: false }
    }

    /// The roofline for `case` at `n` elements, [calibrated](Roofline::calibrate) on one
    /// thread.
    pub fn for_case(case: &Case, n: usize) -> Roofline {
        let (i, o) = case.io_bytes(n);
        let mut r = Roofline::new(i, o);
        r.calibrate(1);
        r
    }

    /// Picks ordinary or non-temporal stores, whichever is faster here (as `memcpy` switches
    /// to non-temporal stores for copies larger than the caches): the median of 3 timed
    /// passes each. Non-temporal stores exist on the AVX-512 path only.
    pub fn calibrate(&mut self, threads: usize) {
        if !cfg!(target_arch = "x86_64") || !has_avx512() {
            return;
        }
        let mut time = |nt: bool| {
            self.non_temporal = nt;
            std::hint::black_box(self.run(threads));
            let v: Vec<f64> = (0..3)
                .map(|_| {
                    let t = std::time::Instant::now();
                    std::hint::black_box(self.run(threads));
                    t.elapsed().as_secs_f64()
                })
                .collect();
            median(&v)
        };
        let (plain, nt) = (time(false), time(true));
        self.non_temporal = nt < plain;
    }

    /// Whether the kernel uses non-temporal stores.
    pub fn non_temporal(&self) -> bool {
        self.non_temporal
    }

    /// One pass over the buffers, split over `threads` rayon tasks (1: the calling
    /// thread). Returns a value that depends on every byte read.
    pub fn run(&mut self, threads: usize) -> u64 {
        let input = self.input.as_slice();
        let output = self.output.as_mut_slice();
        let (il, ol) = (input.len(), output.len());
        // Every part gets at least 64 bytes of each buffer.
        let parts_n = threads.clamp(1, (il.min(ol) / 64).max(1));
        let nt = self.non_temporal;
        if parts_n == 1 {
            return stream(input, output, nt);
        }
        let mut parts = Vec::with_capacity(parts_n);
        let mut rest_out: &mut [u8] = output;
        let (mut i0, mut o0) = (0, 0);
        for t in 1..=parts_n {
            let (i1, o1) = (part_bound(t, parts_n, il), part_bound(t, parts_n, ol));
            let (head, tail) = std::mem::take(&mut rest_out).split_at_mut(o1 - o0);
            parts.push((&input[i0..i1], head));
            rest_out = tail;
            (i0, o0) = (i1, o1);
        }
        parts.into_par_iter().map(|(i, o)| stream(i, o, nt)).reduce(|| 0, |a, b| a ^ b)
    }
}

fn has_avx512() -> bool {
    #[cfg(target_arch = "x86_64")]
    {
        std::arch::is_x86_feature_detected!("avx512f")
    }
    #[cfg(not(target_arch = "x86_64"))]
    {
        false
    }
}

/// One pass through a part (`nt`: non-temporal stores, AVX-512 only).
fn stream(input: &[u8], output: &mut [u8], nt: bool) -> u64 {
    #[cfg(target_arch = "x86_64")]
    {
        if has_avx512() {
            // SAFETY: the CPU has the feature the functions are compiled for.
            return unsafe {
                if nt {
                    stream_avx512::<true>(input, output)
                } else {
                    stream_avx512::<false>(input, output)
                }
            };
        }
        if std::arch::is_x86_feature_detected!("avx2") {
            // SAFETY: as above.
            return unsafe { stream_avx2(input, output) };
        }
    }
    stream_blocks(input, output)
}

/// AVX-512 version of [`stream_blocks`]; `NT`: non-temporal stores for the whole blocks
/// (the part's output starts 64-byte aligned).
#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "avx512f")]
fn stream_avx512<const NT: bool>(inp: &[u8], out: &mut [u8]) -> u64 {
    use std::arch::x86_64::*;
    let mut acc = _mm512_setzero_si512();
    let mut tail = 0u64;
    {
        let (il, ol) = (inp.len(), out.len());
        let (f, t) = (inp.as_ptr(), out.as_mut_ptr());
        if il >= ol {
            // Output block k is the xor of input blocks q k .. q k + q - 1 (q: the ratio,
            // rounded, so that a few bytes of scales do not change it).
            let q = ((il + ol / 2) / ol).max(1);
            let nb = (ol / 64).min(il / (64 * q));
            // SAFETY: loads stay below 64 q nb <= il, stores below 64 nb <= ol.
            unsafe {
                for k in 0..nb {
                    let p = f.add(64 * q * k);
                    let mut v = _mm512_loadu_si512(p.cast());
                    for m in 1..q {
                        v = _mm512_xor_si512(v, _mm512_loadu_si512(p.add(64 * m).cast()));
                    }
                    if NT && t.add(64 * k).align_offset(64) == 0 {
                        _mm512_stream_si512(t.add(64 * k).cast(), v);
                    } else {
                        _mm512_storeu_si512(t.add(64 * k).cast(), v);
                    }
                }
            }
            let mut e = leftover_output(inp, out, 64 * q * nb, 64 * nb);
            // SAFETY: e + 64 <= il.
            unsafe {
                while e + 64 <= il {
                    acc = _mm512_xor_si512(acc, _mm512_loadu_si512(f.add(e).cast()));
                    e += 64;
                }
            }
            tail ^= fold_bytes(&inp[e..]);
        } else {
            // Input block k is stored as output blocks q k .. q k + q - 1.
            let q = ((ol + il / 2) / il).max(1);
            let nb = (il / 64).min(ol / (64 * q));
            // SAFETY: loads below 64 nb <= il, stores below 64 q nb <= ol.
            unsafe {
                for k in 0..nb {
                    let v = _mm512_loadu_si512(f.add(64 * k).cast());
                    let p = t.add(64 * q * k);
                    for m in 0..q {
                        if NT && p.add(64 * m).align_offset(64) == 0 {
                            _mm512_stream_si512(p.add(64 * m).cast(), v);
                        } else {
                            _mm512_storeu_si512(p.add(64 * m).cast(), v);
                        }
                    }
                }
            }
            for c in out[64 * q * nb..].chunks_mut(il) {
                c.copy_from_slice(&inp[..c.len()]);
            }
            tail ^= fold_bytes(&inp[64 * nb..]);
        }
    }
    if NT {
        _mm_sfence();
    }
    let mut lanes = [0u64; 8];
    // SAFETY: lanes is 64 bytes.
    unsafe { _mm512_storeu_si512(lanes.as_mut_ptr().cast(), acc) };
    lanes.iter().fold(tail, |a, b| a ^ b)
}

/// [`stream_blocks`] compiled for AVX2.
#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "avx2")]
fn stream_avx2(input: &[u8], output: &mut [u8]) -> u64 {
    stream_blocks(input, output)
}

#[inline(always)]
fn load_block(b: &[u8]) -> [u64; 8] {
    std::array::from_fn(|k| u64::from_le_bytes(b[8 * k..8 * k + 8].try_into().unwrap_or([0; 8])))
}

#[inline(always)]
fn store_block(v: [u64; 8], b: &mut [u8]) {
    for (k, x) in v.iter().enumerate() {
        b[8 * k..8 * k + 8].copy_from_slice(&x.to_le_bytes());
    }
}

#[inline(always)]
fn xor_block(a: [u64; 8], b: [u64; 8]) -> [u64; 8] {
    std::array::from_fn(|k| a[k] ^ b[k])
}

/// The roofline loop on 64-byte blocks of `u64` lanes (vectorised by the compiler).
#[inline(always)]
fn stream_blocks(inp: &[u8], out: &mut [u8]) -> u64 {
    let mut acc = [0u64; 8];
    let mut tail = 0u64;
    {
        let (il, ol) = (inp.len(), out.len());
        if il >= ol {
            let q = ((il + ol / 2) / ol).max(1);
            let nb = (ol / 64).min(il / (64 * q));
            for k in 0..nb {
                let p = 64 * q * k;
                let mut v = load_block(&inp[p..p + 64]);
                for m in 1..q {
                    v = xor_block(v, load_block(&inp[p + 64 * m..p + 64 * m + 64]));
                }
                store_block(v, &mut out[64 * k..64 * k + 64]);
            }
            let mut e = leftover_output(inp, out, 64 * q * nb, 64 * nb);
            while e + 64 <= il {
                acc = xor_block(acc, load_block(&inp[e..e + 64]));
                e += 64;
            }
            tail ^= fold_bytes(&inp[e..]);
        } else {
            let q = ((ol + il / 2) / il).max(1);
            let nb = (il / 64).min(ol / (64 * q));
            for k in 0..nb {
                let v = load_block(&inp[64 * k..64 * k + 64]);
                for m in 0..q {
                    let p = 64 * (q * k + m);
                    store_block(v, &mut out[p..p + 64]);
                }
            }
            for c in out[64 * q * nb..].chunks_mut(il) {
                c.copy_from_slice(&inp[..c.len()]);
            }
            tail ^= fold_bytes(&inp[64 * nb..]);
        }
    }
    acc.iter().fold(tail, |a, b| a ^ b)
}

/// Writes the output bytes from `o` on (input at least as long as output): from the unread
/// input at `e` when there is enough of it, else from the start. Returns where the unread
/// input now begins.
#[inline(always)]
fn leftover_output(inp: &[u8], out: &mut [u8], e: usize, o: usize) -> usize {
    let need = out.len() - o;
    if inp.len() - e >= need {
        out[o..].copy_from_slice(&inp[e..e + need]);
        e + need
    } else {
        out[o..].copy_from_slice(&inp[..need]);
        e
    }
}

#[inline(always)]
fn fold_bytes(b: &[u8]) -> u64 {
    b.iter().fold(0u64, |h, &x| h.rotate_left(8) ^ x as u64)
}

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
    fn every_case_runs_in_every_mode() {
        for case in full_matrix() {
            let mut p = case.prepare(4096);
            for mode in Mode::all().unwrap() {
                p.run(&mode.config()).unwrap_or_else(|e| panic!("{}: {e}", case.full_name()));
            }
            let (i, o) = case.io_bytes(4096);
            assert!(i > 0 && o > 0, "{}", case.full_name());
        }
    }

    #[test]
    fn names_are_unique() {
        let m = full_matrix();
        let mut names: Vec<String> = m.iter().map(Case::full_name).collect();
        names.sort();
        names.dedup();
        assert_eq!(names.len(), m.len());
    }

    #[test]
    fn roofline_writes_every_output_byte() {
        for (i, o) in [(4096, 1024), (1024, 4096), (100_000, 3), (3, 100_000), (1 << 20, 1 << 18), (5, 7)] {
            for threads in [1, 2, 3] {
                let mut r = Roofline::new(i, o);
                r.input.as_mut_slice().fill(1);
                r.run(threads);
                // Copies give 1, xors of an odd or even number of blocks 1 or 0.
                assert!(r.output.as_slice().iter().all(|&b| b <= 1), "{i} {o} {threads}");
            }
        }
    }

    #[test]
    fn every_roofline_path_writes_every_output_byte() {
        for (i, o) in [
            (4096, 1024),
            (1024, 4096),
            (100_000, 3),
            (3, 100_000),
            (5000, 1250),
            (1250, 5000),
            (5, 7),
            (4 * 4096 + 5, 4096),
            (4096 + 5, 4 * 4096),
            (4600, 1000),
            (1000, 4600),
        ] {
            let input = vec![1u8; i];
            let mut out = vec![0xa5u8; o];
            stream_blocks(&input, &mut out);
            assert!(out.iter().all(|&b| b <= 1), "generic {i} {o}");
            #[cfg(target_arch = "x86_64")]
            for avx512 in [true, false] {
                let mut out = vec![0xa5u8; o];
                if avx512 && std::arch::is_x86_feature_detected!("avx512f") {
                    // SAFETY: the CPU has the feature.
                    unsafe { stream_avx512::<false>(&input, &mut out) };
                    assert!(out.iter().all(|&b| b <= 1), "avx512: {i} {o}");
                    out.fill(0xa5);
                    // SAFETY: as above.
                    unsafe { stream_avx512::<true>(&input, &mut out) };
                } else if !avx512 && std::arch::is_x86_feature_detected!("avx2") {
                    // SAFETY: as above.
                    unsafe { stream_avx2(&input, &mut out) };
                } else {
                    continue;
                }
                assert!(out.iter().all(|&b| b <= 1), "avx512 {avx512}: {i} {o}");
            }
        }
    }

    #[test]
    fn aligned_buffers() {
        for len in [0, 1, 5, 1000] {
            let a = Aligned::filled(len, 7u32);
            assert_eq!(a.as_slice().len(), len);
            assert_eq!(a.as_slice().as_ptr() as usize % 64, 0);
            let b = Aligned::from_slice(&[1.5f32, 2.5]);
            assert_eq!(b.as_slice(), &[1.5, 2.5]);
            assert_eq!(b.as_slice().as_ptr() as usize % 64, 0);
        }
    }

    #[test]
    fn sizes_and_labels() {
        assert_eq!(SIZES.map(size_name), ["4Ki", "64Ki", "1Mi", "16Mi"]);
        assert_eq!(
            Case::quantize(DataType::F32, DataType::U8, Shape::PerTensor).full_name(),
            "quantize/f32-u8/per-tensor"
        );
        assert_eq!(
            Case::dequantize_mx(DataType::E4M3Fn, Shape::BlockedLast { block: 32 }).name(),
            "e4m3fn-f32/blocked-last32/e8m0"
        );
        assert_eq!(median(&[3.0, 1.0, 2.0]), 2.0);
    }
}
