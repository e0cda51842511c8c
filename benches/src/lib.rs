//! Benchmark cases shared by the criterion benches (`cargo bench -p qdq-benches`),
//! `cargo xtask bench` and `cargo xtask vs-ort`.
//!
//! * [`Case`]: one operator call shape (op, input and output types, scale type, layout);
//!   [`Case::prepare`] builds realistic inputs for `n` elements ([`Prepared`]).
//! * [`Case::io_bytes`]: the bytes a call reads and writes, what the roofline kernel of
//!   `qdq-measure` ([`qdq_measure::Roofline`]) moves for the case, so a measured throughput
//!   can be quoted as a fraction of what the memory system allows.
//! * [`Mode`]: a forced ISA on the calling thread, or the default configuration (best ISA,
//!   rayon above 64 Ki elements).
//!
//! The data: x uniform in [-4, 4); scales chosen per type so the quantized values spread
//! over the output range (0.0314 for 8-bit integers and float8); zero points for every
//! integer type (the middle of the range for unsigned types, 0 for signed ones); per-axis
//! and blocked scales are up to 44 % larger. Dequantize inputs are the quantized
//! data. `xtask/python/ort_bench.py` builds the same data for onnxruntime.
//!
//! The roofline kernel, the aligned buffers and the timing helpers are in `qdq-measure`
//! (`benches/measure`); this crate holds no `unsafe` code.

#![deny(unsafe_code)]

use qdq::train::{FakeQuantGrads, GradOptions, QuantParams};
use qdq::{
    bf16, f16, Config, DataType, Float8E4M3Fn, Float8E8M0, Isa, Layout, Packed, PackedMut, Params, QuantizeOptions,
    Values, ValuesMut,
};

/// A case's slice-level parameters.
fn params<'a>(scale: Values<'a>, zero_point: Option<Packed<'a>>, layout: Layout) -> Params<'a> {
    let p = Params::new(scale, layout);
    match zero_point {
        Some(z) => p.zero_points(z),
        None => p,
    }
}
use qdq_fixtures::Rng;
use qdq_measure::Aligned;

/// The four benchmark sizes: L1 (4 Ki), L2 (64 Ki), L3 (1 Mi) and DRAM (16 Mi) elements.
pub const SIZES: [usize; 4] = [4 << 10, 64 << 10, 1 << 20, 16 << 20];

/// The axis length of the `blocked-last` layout (`x` is `[n / 1024, 1024]`).
pub const BLOCKED_LAST_AXIS: usize = 1024;
/// The axis length of the `blocked-middle` layout (`x` is `[n / 4096, 128, 32]`, blocked
/// along the 128-long middle axis).
pub const BLOCKED_MIDDLE_AXIS: usize = 128;
/// The inner size of the `blocked-middle` layout.
pub const BLOCKED_MIDDLE_INNER: usize = 32;
/// The inner (N) extent of [`Shape::BlockedFirst`]: a `[n / 4096, 4096]` weight.
pub const BLOCKED_FIRST_INNER: usize = 4096;

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
    /// Per-row dynamic quantization (`qdq::scaled::quantize_rows`): rows are the channels
    /// of [`Shape::PerAxisFirst`].
    QuantizeRows,
    /// Blockwise quantization with computed scales, symmetric, f32 scales.
    QuantizeBlockwise,
    /// Blockwise quantization in onnxruntime's mode (int4 symmetric / uint4 asymmetric).
    QuantizeBlockwiseOrt,
    /// OCP MX quantization (floor exponent) to the case's element type.
    QuantizeMx,
    /// NVFP4 quantization (e2m1, e4m3fn block scales, the tensor's global scale).
    QuantizeNvfp4,
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
            Op::QuantizeRows => "quantize_rows",
            Op::QuantizeBlockwise => "quantize_blockwise",
            Op::QuantizeBlockwiseOrt => "quantize_blockwise_ort",
            Op::QuantizeMx => "quantize_mx",
            Op::QuantizeNvfp4 => "quantize_nvfp4",
        }
    }

    /// The training-mode ops.
    pub const TRAINING: [Op; 4] = [Op::QuantizeTrain, Op::QuantizeBackward, Op::FakeQuantize, Op::FakeQuantizeBackward];

    /// The quantizers that compute their own scales.
    pub const SCALED: [Op; 5] =
        [Op::QuantizeRows, Op::QuantizeBlockwise, Op::QuantizeBlockwiseOrt, Op::QuantizeMx, Op::QuantizeNvfp4];
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
    /// `x` is `[n / 4096, 4096]`, blocks of `block` along the first axis (a MatMul weight
    /// `[K, N]` blocked along K, onnxruntime's layout).
    BlockedFirst {
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
            Shape::BlockedFirst { .. } => "blocked-first",
        }
    }

    /// The name with its parameter: `per-tensor`, `per-axis-last64`, `blocked-last32`, ...
    pub fn label(self) -> String {
        match self {
            Shape::PerTensor => self.name().to_string(),
            Shape::PerAxisLast { channels } | Shape::PerAxisFirst { channels } => format!("{}{channels}", self.name()),
            Shape::BlockedLast { block } | Shape::BlockedMiddle { block } | Shape::BlockedFirst { block } => {
                format!("{}{block}", self.name())
            }
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
            Shape::BlockedFirst { block } => {
                Layout::Blocked { outer: 1, axis_len: n / BLOCKED_FIRST_INNER, inner: BLOCKED_FIRST_INNER, block }
            }
        }
    }

    /// Number of scales for `n` elements.
    pub fn scale_count(self, n: usize) -> usize {
        match self {
            Shape::PerTensor => 1,
            Shape::PerAxisLast { channels } | Shape::PerAxisFirst { channels } => channels,
            Shape::BlockedLast { block } | Shape::BlockedMiddle { block } => n / block,
            Shape::BlockedFirst { block } => (n / BLOCKED_FIRST_INNER).div_ceil(block) * BLOCKED_FIRST_INNER,
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

/// Deterministic uniform f32 data in [-4, 4): [`qdq_fixtures::Rng`] (xorshift64) from a
/// state that mixes `seed` (so nearby seeds start far apart).
pub fn uniform(n: usize, seed: u64) -> Vec<f32> {
    let mut rng = Rng::new(0x2545_f491_4f6c_dd1d_u64 ^ seed.wrapping_mul(0x9e37_79b9_7f4a_7c15));
    (0..n).map(|_| (rng.unit() - 0.5) * 8.0).collect()
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

    /// A quantizer that computes its own scales ([`Op::SCALED`]) from f32 to `to`; the
    /// scale type is what the op writes (f32, e8m0 for MX, e4m3fn for NVFP4).
    pub fn scaled(op: Op, to: DataType, shape: Shape) -> Case {
        let scale = match op {
            Op::QuantizeMx => DataType::E8M0,
            Op::QuantizeNvfp4 => DataType::E4M3Fn,
            _ => DataType::F32,
        };
        Case { op, from: DataType::F32, to, scale, shape }
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
            Op::QuantizeMx => DataType::E8M0,
            Op::QuantizeNvfp4 => DataType::E4M3Fn,
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
            Shape::BlockedLast { block } | Shape::BlockedMiddle { block } | Shape::BlockedFirst { block } => {
                s.push_str(&format!(",\"block\":{block}"))
            }
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
            Shape::BlockedLast { block } | Shape::BlockedMiddle { block } | Shape::BlockedFirst { block } => {
                s.push_str(&format!(":{block}"))
            }
        }
        s
    }

    /// Bytes read (x, scales and zero points) and written (y) by one call on `n` elements:
    /// what the [`qdq_measure::Roofline`] kernel for this case moves.
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
            // x in; y, the scales and (unsigned outputs) the zero points out.
            _ => {
                let zp = if self.to.int_range().is_some_and(|r| r.0 == 0) { zp } else { 0 };
                (x, y + scale + zp)
            }
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
            Op::Quantize
            | Op::DynamicQuantize
            | Op::QuantizeTrain
            | Op::QuantizeRows
            | Op::QuantizeBlockwise
            | Op::QuantizeBlockwiseOrt
            | Op::QuantizeMx
            | Op::QuantizeNvfp4 => {
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
                qdq::quantize(&xf, &params(scale.values(), zp, layout), PackedMut::new(q, &mut codes))
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
        let scaled = Op::SCALED.contains(&self.op).then(|| ScaledBufs {
            s32: vec![0.0; k],
            e8: vec![Float8E8M0(0); k],
            e4: vec![Float8E4M3Fn(0); k],
            zp: vec![0; self.to.byte_len(k).unwrap_or(0)],
            global: qdq::scaled::nvfp4_global_scale(&xf).unwrap_or(1.0),
        });
        Prepared { case: *self, n, layout, x, scale, zero_point, y, opts, train, scaled }
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

/// The scale-computing quantizers (criterion group `scaled`) with their sizes: per-row
/// symmetric i8 of `[256, 4096]` activations (1 Mi), blockwise int4 of a `[4096, 4096]`
/// weight with blocks of 32 along K (symmetric, and onnxruntime's mode; 16 Mi), blockwise
/// int4 along the last axis, MXFP4 / MXFP8 / MXINT8 and NVFP4 (1 Mi).
pub fn scaled_matrix() -> Vec<(Case, usize)> {
    use DataType::*;
    const MI: usize = 1 << 20;
    vec![
        (Case::scaled(Op::QuantizeRows, I8, Shape::PerAxisFirst { channels: 256 }), MI),
        (Case::scaled(Op::QuantizeRows, U8, Shape::PerAxisFirst { channels: 256 }), MI),
        (Case::scaled(Op::QuantizeBlockwise, I4, Shape::BlockedFirst { block: 32 }), 16 * MI),
        (Case::scaled(Op::QuantizeBlockwiseOrt, I4, Shape::BlockedFirst { block: 32 }), 16 * MI),
        (Case::scaled(Op::QuantizeBlockwise, I4, Shape::BlockedLast { block: 32 }), MI),
        (Case::scaled(Op::QuantizeMx, E2M1, Shape::BlockedLast { block: 32 }), MI),
        (Case::scaled(Op::QuantizeMx, E4M3Fn, Shape::BlockedLast { block: 32 }), MI),
        (Case::scaled(Op::QuantizeMx, I8, Shape::BlockedLast { block: 32 }), MI),
        (Case::scaled(Op::QuantizeNvfp4, E2M1, Shape::BlockedLast { block: 16 }), MI),
    ]
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
    scaled: Option<ScaledBufs>,
}

/// The outputs of the scale-computing quantizers besides y.
struct ScaledBufs {
    s32: Vec<f32>,
    e8: Vec<Float8E8M0>,
    e4: Vec<Float8E4M3Fn>,
    zp: Vec<u8>,
    global: f32,
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
                let p = params(self.scale.values(), zp, self.layout).saturate(self.opts.saturate);
                qdq::quantize_with(cfg, x, &p, PackedMut::new(self.opts.output, y.as_mut_slice()))
            }
            (Op::Dequantize, Input::Codes(x), y) => {
                let xp = Packed { dtype: q, len: self.n, data: x.as_slice() };
                let y = match y {
                    Output::F32(v) => ValuesMut::F32(v.as_mut_slice()),
                    Output::F16(v) => ValuesMut::F16(v.as_mut_slice()),
                    Output::Bf16(v) => ValuesMut::Bf16(v.as_mut_slice()),
                    Output::Bytes(_) => unreachable!("dequantize writes floats"),
                };
                qdq::dequantize_with(cfg, xp, &params(self.scale.values(), zp, self.layout), y)
            }
            (op, Input::F32(x), Output::Bytes(y)) if Op::SCALED.contains(op) => {
                use qdq::scaled::{self as sc, BlockMode, Rows, ScaleRounding};
                let b = self.scaled.as_mut().expect("scaled buffers");
                let (to, x) = (self.case.to, x.as_slice());
                let yv = PackedMut::new(to, y.as_mut_slice());
                let unsigned = to.int_range().is_some_and(|r| r.0 == 0);
                match op {
                    Op::QuantizeRows => {
                        let rows = match self.case.shape {
                            Shape::PerAxisFirst { channels } => channels,
                            _ => 1,
                        };
                        let zp = (to == DataType::U8).then(|| &mut b.zp[..rows]);
                        sc::quantize_rows_with(cfg, x, Rows::new(rows, self.n / rows), yv, &mut b.s32[..rows], zp)
                    }
                    Op::QuantizeBlockwise | Op::QuantizeBlockwiseOrt => {
                        let mode =
                            if *op == Op::QuantizeBlockwise { BlockMode::Symmetric } else { BlockMode::Onnxruntime };
                        let zp = unsigned.then(|| PackedMut::new(to, &mut b.zp));
                        sc::quantize_blockwise_with(cfg, x, self.layout, mode, yv, &mut b.s32, zp)
                    }
                    Op::QuantizeMx => sc::quantize_mx_with(cfg, x, self.layout, ScaleRounding::Floor, yv, &mut b.e8),
                    _ => sc::quantize_nvfp4_with(cfg, x, self.layout, b.global, yv, &mut b.e4),
                }
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
    /// `Config::default()`: the best ISA, rayon (all pool threads) above the parallel
    /// threshold.
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
    pub fn config(self) -> Config<'static> {
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

    /// Threads a call of `prepared` uses: the rayon pool's size where the default mode runs
    /// it in parallel, else 1. Found by running it once in this mode on a pool that only
    /// records whether it was asked to run parts (and runs them on the calling thread).
    pub fn threads(self, prepared: &mut Prepared) -> usize {
        struct Probe(std::sync::atomic::AtomicBool);
        impl qdq::ThreadPool for Probe {
            fn threads(&self) -> usize {
                rayon::current_num_threads()
            }
            fn parallel_for(&self, tasks: usize, task: &(dyn Fn(usize) + Sync)) {
                self.0.store(true, std::sync::atomic::Ordering::Relaxed);
                (0..tasks).for_each(task)
            }
        }
        match self {
            Mode::Single(_) => 1,
            Mode::Default => {
                let probe = Probe(std::sync::atomic::AtomicBool::new(false));
                let parallel = prepared.run(&self.config().with_pool(&probe)).is_ok()
                    && probe.0.load(std::sync::atomic::Ordering::Relaxed);
                if parallel {
                    rayon::current_num_threads()
                } else {
                    1
                }
            }
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
    }
}
