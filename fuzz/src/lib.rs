//! Shared machinery of the fuzz targets: a byte reader that turns the fuzzer's input into
//! op versions, types, shapes, attributes and data, and the differential check that runs
//! `qdq-ref` and `qdq` (every ISA the CPU has, sequential and parallel) on the same node.
//!
//! Generation is biased towards inputs that pass validation (so the kernels run), but every
//! choice has a branch that picks an arbitrary value, so the validation paths are fuzzed as
//! well. Data is raw bit patterns (NaN payloads, subnormals, infinities) or, on request,
//! special values (the scale table here and the workspace's shared `qdq_fixtures::F32_SPECIALS`)
//! or values built from the scale (ties, zero, saturation edges), which raw bits rarely hit.

use half::slice::HalfBitsSliceExt;
use qdq::{Config, Isa};
use qdq_fixtures::F32_SPECIALS;
use qdq_ref::float::FloatFormat;
use qdq_ref::{Attribute, DataType, Opset, Tensor, TensorRef};

/// Reads the fuzzer's bytes front to back; reads past the end give zeros.
pub struct Input<'a> {
    data: &'a [u8],
}

impl<'a> Input<'a> {
    /// Wraps the fuzzer's input.
    pub fn new(data: &'a [u8]) -> Self {
        Input { data }
    }

    /// One byte.
    pub fn u8(&mut self) -> u8 {
        match self.data.split_first() {
            Some((b, rest)) => {
                self.data = rest;
                *b
            }
            None => 0,
        }
    }

    /// A value in `0..n` (`n > 0`).
    pub fn below(&mut self, n: usize) -> usize {
        let v = u16::from_le_bytes([self.u8(), self.u8()]) as usize;
        v % n
    }

    /// True with probability about `1 / n`.
    pub fn one_in(&mut self, n: u8) -> bool {
        self.u8() % n == 0
    }

    /// An arbitrary i64 with its extremes and small values over-represented.
    pub fn i64_any(&mut self) -> i64 {
        match self.u8() % 4 {
            0 => self.u8() as i8 as i64,
            1 => i64::MAX - self.u8() as i64,
            2 => i64::MIN + self.u8() as i64,
            _ => i64::from_le_bytes(std::array::from_fn(|_| self.u8())),
        }
    }

    /// Up to `n` bytes (fewer at the end of the input).
    pub fn take(&mut self, n: usize) -> &'a [u8] {
        let n = n.min(self.data.len());
        let (a, b) = self.data.split_at(n);
        self.data = b;
        a
    }

    /// `n` bytes: a chunk of the input repeated, so large tensors need few input bytes.
    pub fn fill(&mut self, n: usize) -> Vec<u8> {
        let want = self.below(64) + 1;
        let src = self.take(want.min(n));
        if src.is_empty() {
            return vec![0; n];
        }
        src.iter().copied().cycle().take(n).collect()
    }
}

/// Every available ISA (only the forced one when `QDQ_ISA` is set), sequential, and
/// parallel with the threshold at 0 (so every call goes through the chunking code; inputs
/// above 16 Ki elements are split). A `QDQ_ISA` naming no ISA, or one this CPU lacks,
/// stops the run with the library's message; the ISAs left out are printed once.
pub fn configs() -> &'static [(String, Config<'static>)] {
    static CONFIGS: std::sync::OnceLock<Vec<(String, Config<'static>)>> = std::sync::OnceLock::new();
    CONFIGS
        .get_or_init(|| {
            let isas = match Isa::forced() {
                Ok(Some(isa)) => vec![isa],
                Ok(None) => Isa::available(),
                Err(e) => {
                    eprintln!("error: {e}");
                    std::process::exit(2);
                }
            };
            for isa in Isa::ALL.into_iter().filter(|i| !isas.contains(i)) {
                let why = if isa.is_available() { "QDQ_ISA forces another" } else { "not on this CPU" };
                eprintln!("{isa}: skipped, {why}");
            }
            let mut out = Vec::new();
            for isa in isas {
                out.push((format!("{isa}/seq"), Config::sequential().with_isa(isa)));
                out.push((format!("{isa}/par"), Config { isa: Some(isa), parallel: true, parallel_threshold: 0, pool: None }));
            }
            out
        })
}

/// The versions the ONNX schemas define for QuantizeLinear / DequantizeLinear.
pub const QDQ_VERSIONS: [i64; 8] = [10, 13, 19, 21, 23, 24, 25, 28];

/// An opset: mostly a real version of `versions`, sometimes any version or com.microsoft.
pub fn opset(input: &mut Input<'_>, versions: &[i64]) -> Opset {
    match input.u8() % 16 {
        0 => Opset::microsoft(),
        1 => Opset::onnx(input.u8() as i64 % 40),
        v => Opset::onnx(versions[v as usize % versions.len()]),
    }
}

/// Any of the 20 types.
pub fn any_type(input: &mut Input<'_>) -> DataType {
    DataType::ALL[input.below(DataType::ALL.len())]
}

/// A shape of rank 0..=5 with at most `cap` elements: small dimensions (zeros included),
/// sometimes a long one so parallel calls really split.
pub fn shape(input: &mut Input<'_>, cap: usize) -> Vec<usize> {
    let rank = input.u8() as usize % 6;
    let mut dims = Vec::with_capacity(rank);
    let mut n = 1usize;
    for _ in 0..rank {
        let d = match input.u8() % 32 {
            0 => 0,
            1..=3 => 8 + input.below(120),
            4 => 1000 + input.below(40_000),
            v => 1 + (v as usize % 7),
        };
        let d = if n.saturating_mul(d) > cap { 1 + input.u8() as usize % 3 } else { d };
        n = n.saturating_mul(d);
        dims.push(d);
    }
    dims
}

/// Serialises `values` as `t` (f32 / f16 / bf16 rounded to nearest even, i32 saturating,
/// e8m0 rounded up to a power of two, quantized types from their integer or float value).
pub fn encode(t: DataType, values: &[f64]) -> Vec<u8> {
    let mut out = vec![0u8; t.byte_len(values.len()).unwrap_or(0)];
    for (i, &v) in values.iter().enumerate() {
        match t {
            DataType::F32 => out[4 * i..4 * i + 4].copy_from_slice(&(v as f32).to_le_bytes()),
            DataType::I32 => out[4 * i..4 * i + 4].copy_from_slice(&(v as i32).to_le_bytes()),
            DataType::E8M0 => {
                out[i] = qdq_ref::float::encode_e8m0(v as f32, qdq_ref::float::E8m0Rounding::Up);
            }
            _ => {
                if let Some((lo, hi)) = t.int_range() {
                    qdq_ref::packing::set_int(t, &mut out, i, (v as i64).clamp(lo, hi));
                } else if let Some(f) = FloatFormat::of(t) {
                    let code = f.encode(v, true);
                    qdq_ref::packing::set(t, &mut out, i, code);
                }
            }
        }
    }
    out
}

/// Scales worth trying: ordinary, power of two, tiny, huge, subnormal, zero, negative,
/// infinite and NaN.
const SPECIAL_SCALES: [f64; 16] = [
    1.0,
    0.5,
    0.1,
    3.7,
    1.0 / 3.0,
    0.0078125,
    1e-3,
    255.0,
    9.5367431640625e-7,
    1e-30,
    1e30,
    1e-40,
    0.0,
    -0.75,
    f64::INFINITY,
    f64::NAN,
];

/// The special f32 value for a pick byte: even bytes index [`SPECIAL_SCALES`], odd ones
/// the shared [`F32_SPECIALS`] (signed zeros, NaNs with payloads, subnormals, ties,
/// saturation edges).
fn special_f32(p: u8) -> f32 {
    let k = (p / 2) as usize;
    if p % 2 == 0 {
        SPECIAL_SCALES[k % SPECIAL_SCALES.len()] as f32
    } else {
        F32_SPECIALS[k % F32_SPECIALS.len()]
    }
}

/// [`special_f32`] as f64 (the scale table's values exactly).
fn special_f64(p: u8) -> f64 {
    if p % 2 == 0 {
        SPECIAL_SCALES[(p / 2) as usize % SPECIAL_SCALES.len()]
    } else {
        special_f32(p) as f64
    }
}

/// `n` elements of type `t`: raw bit patterns, or values from the tables of specials
/// ([`special_f32`]; f32 keeps their bits, NaN payloads included, other types get them
/// through [`encode`]), or multiples of `step / 2` (ties at every step when `step` is the
/// scale).
pub fn data(input: &mut Input<'_>, t: DataType, n: usize, step: f64) -> Vec<u8> {
    let bytes = t.byte_len(n).unwrap_or(0);
    match input.u8() % 4 {
        0 | 1 => input.fill(bytes),
        2 => {
            let picks = input.fill(n);
            if t == DataType::F32 {
                picks.iter().flat_map(|&p| special_f32(p).to_le_bytes()).collect()
            } else {
                let v: Vec<f64> = picks.iter().map(|&p| special_f64(p)).collect();
                encode(t, &v)
            }
        }
        _ => {
            let picks = input.fill(n);
            let v: Vec<f64> = picks.iter().map(|&p| (p as i8 as f64) * 0.5 * step).collect();
            encode(t, &v)
        }
    }
}

/// One node call: operator, opset, inputs, attributes, number of outputs.
#[derive(Debug)]
pub struct Node {
    /// Operator type.
    pub op: &'static str,
    /// Imported opset of its domain.
    pub opset: Opset,
    /// Inputs (`None` = omitted optional input).
    pub inputs: Vec<Option<Tensor>>,
    /// Integer attributes.
    pub attrs: Vec<(&'static str, i64)>,
    /// Number of outputs requested.
    pub outputs: usize,
}

impl Node {
    /// Runs the node on `qdq-ref` and on `qdq` with every configuration of [`configs`];
    /// panics (a fuzzer finding) unless all return the same error or bit-identical outputs.
    pub fn check(&self) {
        let inputs: Vec<Option<TensorRef<'_>>> = self.inputs.iter().map(|t| t.as_ref().map(Tensor::view)).collect();
        let attrs: Vec<Attribute<'_>> = self.attrs.iter().map(|&(name, value)| Attribute { name, value }).collect();
        let want = qdq_ref::run_node(self.op, self.opset, &inputs, &attrs, self.outputs);
        for (name, cfg) in configs() {
            let got = qdq::run_node_with(&cfg, self.op, self.opset, &inputs, &attrs, self.outputs);
            match (&want, &got) {
                (Ok(w), Ok(g)) => {
                    assert_eq!(w.len(), g.len(), "{name}: output count");
                    for (a, b) in w.iter().zip(g) {
                        assert_same_tensor(a, b, &name, self);
                    }
                }
                (Err(w), Err(g)) => assert_eq!(w, g, "{name}: different errors for {self:?}"),
                _ => panic!("{name}: qdq-ref gave {want:?}, qdq gave {got:?} for {self:?}"),
            }
        }
    }
}

/// Panics unless `a` and `b` have the same type, shape and elements, bit for bit (integers,
/// codes, and f32 / f16 / bf16 with their NaN payloads).
pub fn assert_same_tensor(a: &Tensor, b: &Tensor, what: &str, node: &dyn std::fmt::Debug) {
    assert_eq!((a.dtype(), a.shape()), (b.dtype(), b.shape()), "{what}: output type/shape for {node:?}");
    assert_eq!(a.bytes().len(), b.bytes().len(), "{what}: output bytes for {node:?}");
    let width = match a.dtype() {
        DataType::F32 => 4,
        DataType::F16 | DataType::Bf16 => 2,
        _ => {
            assert!(a.bytes() == b.bytes(), "{what}: outputs differ for {node:?}\nref {:?}\nqdq {:?}", a.bytes(), b.bytes());
            return;
        }
    };
    for (i, (x, y)) in a.bytes().chunks_exact(width).zip(b.bytes().chunks_exact(width)).enumerate() {
        let code = |c: &[u8]| c.iter().rev().fold(0u32, |acc, &b| acc << 8 | b as u32);
        let (cx, cy) = (code(x), code(y));
        assert!(cx == cy, "{what}: element {i} ref {cx:#x} qdq {cy:#x} for {node:?}");
    }
}

/// Scale shape for `x_shape`: scalar, `[1]`, per-axis, blocked, or anything.
fn scale_shape(input: &mut Input<'_>, x_shape: &[usize], axis: i64, block: i64) -> Vec<usize> {
    let rank = x_shape.len();
    let a = if rank == 0 { 0 } else { axis.rem_euclid(rank as i64) as usize };
    match input.u8() % 8 {
        0 => vec![],
        1 => vec![1],
        2 | 3 if rank > 0 => vec![x_shape[a]],
        4..=6 if rank > 0 && block > 0 => {
            let mut s = x_shape.to_vec();
            s[a] = s[a].div_ceil(block as usize);
            s
        }
        _ => shape(input, 64),
    }
}

fn attr_axis(input: &mut Input<'_>, rank: usize) -> i64 {
    if input.one_in(16) {
        input.i64_any()
    } else {
        let r = rank.max(1) as i64;
        input.u8() as i64 % (2 * r) - r
    }
}

fn attr_block(input: &mut Input<'_>) -> i64 {
    match input.u8() % 8 {
        0..=2 => 0,
        3 => input.i64_any(),
        _ => 1 + input.u8() as i64 % 40,
    }
}

/// A QuantizeLinear node.
pub fn quantize_node(input: &mut Input<'_>) -> Node {
    let opset = opset(input, &QDQ_VERSIONS);
    let x_type = match input.u8() % 8 {
        0..=3 => DataType::F32,
        4 => DataType::F16,
        5 => DataType::Bf16,
        6 => DataType::I32,
        _ => any_type(input),
    };
    let x_shape = shape(input, 70_000);
    let axis = attr_axis(input, x_shape.len());
    let block = attr_block(input);
    let s_shape = scale_shape(input, &x_shape, axis, block);
    let s_type = match input.u8() % 8 {
        0..=2 => x_type,
        3 => DataType::F32,
        4 => DataType::F16,
        5 => DataType::Bf16,
        6 => DataType::E8M0,
        _ => any_type(input),
    };
    let out_type = match input.u8() % 4 {
        0 => DataType::U8,
        1 | 2 => DataType::QUANTIZED[input.below(DataType::QUANTIZED.len())],
        _ => any_type(input),
    };
    let ns: usize = s_shape.iter().product();
    let sb = data(input, s_type, ns, 1.0);
    let step = SPECIAL_SCALES[input.u8() as usize % 12];
    let n: usize = x_shape.iter().product();
    let xb = data(input, x_type, n, step);
    let mut attrs = Vec::new();
    if !input.one_in(4) {
        attrs.push(("axis", axis));
    }
    if block != 0 || input.one_in(4) {
        attrs.push(("block_size", block));
    }
    match input.u8() % 8 {
        0 => attrs.push(("saturate", 0)),
        1 => attrs.push(("saturate", 1)),
        2 => attrs.push(("saturate", input.i64_any())),
        _ => {}
    }
    let zp_present = input.u8() % 3 != 0;
    match input.u8() % 8 {
        0..=2 if !zp_present => attrs.push(("output_dtype", out_type as i64)),
        3 => attrs.push(("output_dtype", out_type as i64)),
        4 => attrs.push(("output_dtype", input.i64_any())),
        _ => {}
    }
    match input.u8() % 8 {
        0 => attrs.push(("precision", DataType::F32 as i64)),
        1 => attrs.push(("precision", DataType::F16 as i64)),
        2 => attrs.push(("precision", DataType::Bf16 as i64)),
        3 => attrs.push(("precision", input.i64_any())),
        _ => {}
    }
    if input.one_in(32) {
        attrs.push(("bogus", 1));
    }
    if input.one_in(32) && !attrs.is_empty() {
        attrs.push(attrs[0]);
    }
    let zp = zp_present.then(|| {
        let zt = if input.one_in(8) { any_type(input) } else { out_type };
        let z_shape = if input.one_in(8) { shape(input, 64) } else { s_shape.clone() };
        let nz: usize = z_shape.iter().product();
        Tensor::new(zt, z_shape, &data(input, zt, nz, 1.0)).unwrap()
    });
    let mut inputs = vec![
        Some(Tensor::new(x_type, x_shape, &xb).unwrap()),
        Some(Tensor::new(s_type, s_shape, &sb).unwrap()),
        zp,
    ];
    if inputs[2].is_none() && input.one_in(2) {
        inputs.pop();
    }
    let outputs = if input.one_in(32) { 2 } else { 1 };
    Node { op: "QuantizeLinear", opset, inputs, attrs, outputs }
}

/// A DequantizeLinear node.
pub fn dequantize_node(input: &mut Input<'_>) -> Node {
    let opset = opset(input, &QDQ_VERSIONS);
    let x_type = match input.u8() % 8 {
        0..=5 => DataType::QUANTIZED[input.below(DataType::QUANTIZED.len())],
        6 => DataType::I32,
        _ => any_type(input),
    };
    let x_shape = shape(input, 70_000);
    let axis = attr_axis(input, x_shape.len());
    let block = attr_block(input);
    let s_shape = scale_shape(input, &x_shape, axis, block);
    let s_type = match input.u8() % 8 {
        0..=2 => DataType::F32,
        3 => DataType::F16,
        4 => DataType::Bf16,
        5 | 6 => DataType::E8M0,
        _ => any_type(input),
    };
    let ns: usize = s_shape.iter().product();
    let sb = data(input, s_type, ns, 1.0);
    let n: usize = x_shape.iter().product();
    let xb = input.fill(x_type.byte_len(n).unwrap_or(0));
    let mut attrs = Vec::new();
    if !input.one_in(4) {
        attrs.push(("axis", axis));
    }
    if block != 0 || input.one_in(4) {
        attrs.push(("block_size", block));
    }
    match input.u8() % 8 {
        0 => attrs.push(("output_dtype", DataType::F32 as i64)),
        1 => attrs.push(("output_dtype", DataType::F16 as i64)),
        2 => attrs.push(("output_dtype", DataType::Bf16 as i64)),
        3 => attrs.push(("output_dtype", input.i64_any())),
        _ => {}
    }
    if input.one_in(32) {
        attrs.push(("saturate", 1));
    }
    let zp = (input.u8() % 3 != 0).then(|| {
        let zt = if input.one_in(8) { any_type(input) } else { x_type };
        let z_shape = if input.one_in(8) { shape(input, 64) } else { s_shape.clone() };
        let nz: usize = z_shape.iter().product();
        Tensor::new(zt, z_shape, &input.fill(zt.byte_len(nz).unwrap_or(0))).unwrap()
    });
    let inputs = vec![
        Some(Tensor::new(x_type, x_shape, &xb).unwrap()),
        Some(Tensor::new(s_type, s_shape, &sb).unwrap()),
        zp,
    ];
    let outputs = if input.one_in(32) { 2 } else { 1 };
    Node { op: "DequantizeLinear", opset, inputs, attrs, outputs }
}

/// A DynamicQuantizeLinear node.
pub fn dynamic_quantize_node(input: &mut Input<'_>) -> Node {
    let opset = opset(input, &[11, 13, 19, 21, 25]);
    let x_type = if input.one_in(16) { any_type(input) } else { DataType::F32 };
    let x_shape = shape(input, 70_000);
    let n: usize = x_shape.iter().product();
    let step = SPECIAL_SCALES[input.u8() as usize % 12];
    let xb = data(input, x_type, n, step);
    let mut inputs = vec![Some(Tensor::new(x_type, x_shape, &xb).unwrap())];
    if input.one_in(32) {
        inputs.push(None);
    }
    let mut attrs = Vec::new();
    if input.one_in(32) {
        attrs.push(("axis", 0));
    }
    let outputs = if input.one_in(32) { input.u8() as usize % 5 } else { 3 };
    Node { op: "DynamicQuantizeLinear", opset, inputs, attrs, outputs }
}

/// An owned f32 / f16 / bf16 / i32 / e8m0 buffer for the slice API.
#[derive(Debug)]
pub enum Wide {
    /// f32 elements.
    F32(Vec<f32>),
    /// f16 elements.
    F16(Vec<qdq_ref::f16>),
    /// bf16 elements.
    Bf16(Vec<qdq_ref::bf16>),
    /// i32 elements.
    I32(Vec<i32>),
    /// e8m0 codes.
    E8M0(Vec<u8>),
}

impl Wide {
    /// `n` elements of `t` (one of the five wide types; anything else gives f32) from
    /// [`data`].
    pub fn new(input: &mut Input<'_>, t: DataType, n: usize, step: f64) -> Wide {
        let t = if matches!(t, DataType::F16 | DataType::Bf16 | DataType::I32 | DataType::E8M0) { t } else { DataType::F32 };
        let b = data(input, t, n, step);
        let u16s = || b.chunks_exact(2).map(|c| u16::from_le_bytes([c[0], c[1]]));
        let u32s = || b.chunks_exact(4).map(|c| u32::from_le_bytes([c[0], c[1], c[2], c[3]]));
        match t {
            DataType::F16 => Wide::F16(u16s().map(qdq_ref::f16::from_bits).collect()),
            DataType::Bf16 => Wide::Bf16(u16s().map(qdq_ref::bf16::from_bits).collect()),
            DataType::I32 => Wide::I32(u32s().map(|v| v as i32).collect()),
            DataType::E8M0 => Wide::E8M0(b),
            _ => Wide::F32(u32s().map(f32::from_bits).collect()),
        }
    }

    /// Borrows as the slice API's [`qdq_ref::Values`].
    pub fn values(&self) -> qdq_ref::Values<'_> {
        match self {
            Wide::F32(v) => qdq_ref::Values::F32(v),
            Wide::F16(v) => qdq_ref::Values::F16(v),
            Wide::Bf16(v) => qdq_ref::Values::Bf16(v),
            Wide::I32(v) => qdq_ref::Values::I32(v),
            Wide::E8M0(v) => qdq_ref::Values::E8M0(v),
        }
    }
}

fn wide_type(input: &mut Input<'_>) -> DataType {
    [DataType::F32, DataType::F32, DataType::F16, DataType::Bf16, DataType::I32, DataType::E8M0][input.below(6)]
}

/// A layout for the slice API and the element count it is applied to: usually consistent,
/// sometimes not (mismatched counts, zero or huge blocks, overflowing products).
fn slice_layout(input: &mut Input<'_>) -> (qdq_ref::Layout, usize) {
    use qdq_ref::Layout;
    let dim = |input: &mut Input<'_>| match input.u8() % 16 {
        0 => 0,
        1 => usize::MAX / 2 + input.u8() as usize,
        2 => 64 + input.below(300),
        _ => 1 + input.u8() as usize % 9,
    };
    let (outer, axis_len, inner) = (dim(input), dim(input), dim(input));
    let layout = match input.u8() % 3 {
        0 => Layout::PerTensor,
        1 => Layout::PerAxis { outer, axis_len, inner },
        _ => {
            let block = match input.u8() % 8 {
                0 => 0,
                1 => usize::MAX - input.u8() as usize,
                _ => 1 + input.u8() as usize % 40,
            };
            Layout::Blocked { outer, axis_len, inner, block }
        }
    };
    let product = outer.checked_mul(axis_len).and_then(|v| v.checked_mul(inner));
    let n = match (product, input.u8() % 8) {
        (_, 0) => input.below(600),
        (Some(p), 1) if p < 70_000 => p + 1,
        (Some(p), _) if p <= 70_000 => p,
        _ => input.below(70_000),
    };
    (layout, n)
}

/// Writes `y` with a range call split into two halves at a byte-aligned cut (elements
/// `0..cut` and `cut..n`), or returns the first error.
fn ranged<E>(n: usize, cut: usize, y: &mut [u8], byte_at: impl Fn(usize) -> usize, mut call: impl FnMut(std::ops::Range<usize>, &mut [u8]) -> Result<(), E>) -> Result<(), E> {
    let split = byte_at(cut).min(y.len());
    let (a, b) = y.split_at_mut(split);
    call(0..cut, a)?;
    call(cut..n, b)
}

/// The slice-level QuantizeLinear (`qdq_ref::quantize` vs `qdq::quantize_with` and
/// `qdq::quantize_range` on every configuration) with unvalidated layouts, options and
/// buffer lengths.
pub fn check_slice_quantize(input: &mut Input<'_>) {
    let (layout, n) = slice_layout(input);
    let ns = match (layout.scale_count(n), input.one_in(8)) {
        (Ok(c), false) if c <= 70_000 => c,
        _ => input.below(8),
    };
    let st = wide_type(input);
    let scale = Wide::new(input, st, ns, 1.0);
    let xt = wide_type(input);
    let step = SPECIAL_SCALES[input.u8() as usize % 12];
    let x = Wide::new(input, xt, n, step);
    let output = if input.one_in(8) { any_type(input) } else { DataType::QUANTIZED[input.below(15)] };
    let precision = match input.u8() % 8 {
        0 => Some(DataType::F32),
        1 => Some(DataType::F16),
        2 => Some(DataType::Bf16),
        3 => Some(any_type(input)),
        _ => None,
    };
    let opts = qdq_ref::QuantizeOptions { output, saturate: input.u8() % 2 == 0, precision };
    let zp_bytes;
    let zp = if input.u8() % 2 == 0 {
        let zt = if input.one_in(8) { any_type(input) } else { output };
        let len = if input.one_in(8) { input.below(8) } else { ns };
        let bytes = zt.byte_len(len).unwrap_or(0);
        let bytes = if input.one_in(16) { input.below(16) } else { bytes };
        zp_bytes = input.fill(bytes);
        Some(qdq_ref::Packed { dtype: zt, len, data: &zp_bytes })
    } else {
        None
    };
    let y_len = match (output.byte_len(n), input.u8() % 16) {
        (Some(b), 1..) => b,
        _ => input.below(64),
    };
    let mut want = vec![0xa5u8; y_len];
    let r = qdq_ref::quantize(x.values(), &qparams(scale.values(), zp, layout, &opts), qdq::PackedMut::new(opts.output, &mut want));
    let cut = (input.below(n + 1) & !3).min(n);
    let what = || format!("{layout:?} n {n} x {xt} scale {st} {opts:?} zp {zp:?} y {y_len}");
    for (name, cfg) in configs() {
        let mut got = vec![0xa5u8; y_len];
        let g = qdq::quantize_with(&cfg, x.values(), &qparams(scale.values(), zp, layout, &opts), qdq::PackedMut::new(opts.output, &mut got));
        assert_eq!(r, g, "{name}: {}", what());
        assert!(want == got, "{name}: outputs differ for {}", what());
        if r.is_ok() {
            // Two range calls must reproduce the whole call byte for byte.
            let mut parts = vec![0xa5u8; y_len];
            let bits = output.bits() as usize;
            let rr = ranged(n, cut, &mut parts, |e| (e * bits).div_ceil(8), |range, part| {
                qdq::quantize_range_with(&cfg, x.values(), &qparams(scale.values(), zp, layout, &opts), range, qdq::PackedMut::new(opts.output, part))
            });
            assert_eq!(rr, Ok(()), "{name}: range split at {cut} for {}", what());
            assert!(want == parts, "{name}: range split at {cut} differs for {}", what());
        }
    }
}

/// The slice-level DequantizeLinear (`qdq_ref::dequantize` vs `qdq::dequantize_with` and
/// `qdq::dequantize_range`) with unvalidated layouts and buffer lengths.
pub fn check_slice_dequantize(input: &mut Input<'_>) {
    let (layout, n) = slice_layout(input);
    let ns = match (layout.scale_count(n), input.one_in(8)) {
        (Ok(c), false) if c <= 70_000 => c,
        _ => input.below(8),
    };
    let st = wide_type(input);
    let scale = Wide::new(input, st, ns, 1.0);
    let xt = match input.u8() % 8 {
        0 => any_type(input),
        1 => DataType::I32,
        _ => DataType::QUANTIZED[input.below(15)],
    };
    let x_bytes = match (xt.byte_len(n), input.one_in(16)) {
        (Some(b), false) => input.fill(b),
        _ => {
            let len = input.below(64);
            input.fill(len)
        }
    };
    let x = qdq_ref::Packed { dtype: xt, len: n, data: &x_bytes };
    let zp_bytes;
    let zp = if input.u8() % 2 == 0 {
        let zt = if input.one_in(8) { any_type(input) } else { xt };
        let len = if input.one_in(8) { input.below(8) } else { ns };
        let bytes = zt.byte_len(len).unwrap_or(0);
        let bytes = if input.one_in(16) { input.below(16) } else { bytes };
        zp_bytes = input.fill(bytes);
        Some(qdq_ref::Packed { dtype: zt, len, data: &zp_bytes })
    } else {
        None
    };
    let out = [DataType::F32, DataType::F16, DataType::Bf16][input.below(3)];
    let y_len = if input.one_in(16) { input.below(64) } else { n };
    let cut = input.below(n + 1);
    let what = || format!("{layout:?} x {xt} n {n} ({} bytes) scale {st} zp {zp:?} -> {out} y {y_len}", x_bytes.len());
    let run = |cfg: Option<&Config>, range: Option<std::ops::Range<usize>>, y: &mut [u8]| {
        let y_vals: qdq_ref::ValuesMut<'_> = match out {
            // half's own safe reinterpretation of u16 bit patterns.
            DataType::F16 => qdq_ref::ValuesMut::F16(bytemuck_cast::<u16>(y).reinterpret_cast_mut()),
            DataType::Bf16 => qdq_ref::ValuesMut::Bf16(bytemuck_cast::<u16>(y).reinterpret_cast_mut()),
            _ => qdq_ref::ValuesMut::F32(bytemuck_cast(y)),
        };
        match (cfg, range) {
            (None, _) => qdq_ref::dequantize(x, &dparams(scale.values(), zp, layout), y_vals),
            (Some(c), None) => qdq::dequantize_with(c, x, &dparams(scale.values(), zp, layout), y_vals),
            (Some(c), Some(r)) => qdq::dequantize_range_with(c, x, &dparams(scale.values(), zp, layout), r, y_vals),
        }
    };
    let width = out.bits() as usize / 8;
    // f32 storage keeps every view aligned; only the first `y_len * width` bytes are used.
    let mut want_store = vec![0u32; y_len];
    let want_bytes = &mut bytemuck::cast_slice_mut::<u32, u8>(&mut want_store)[..y_len * width];
    let r = run(None, None, want_bytes);
    let want = Tensor::new(out, vec![y_len], &want_bytes.to_vec()).unwrap();
    for (name, cfg) in configs() {
        let mut store = vec![0u32; y_len];
        let bytes = &mut bytemuck::cast_slice_mut::<u32, u8>(&mut store)[..y_len * width];
        let g = run(Some(cfg), None, bytes);
        assert_eq!(r, g, "{name}: {}", what());
        assert_same_tensor(&want, &Tensor::new(out, vec![y_len], &bytes.to_vec()).unwrap(), &name, &what());
        if r.is_ok() {
            let mut store = vec![0u32; y_len];
            let bytes = &mut bytemuck::cast_slice_mut::<u32, u8>(&mut store)[..y_len * width];
            let rr = ranged(n, cut, bytes, |e| e * width, |range, part| run(Some(&cfg), Some(range), part));
            assert_eq!(rr, Ok(()), "{name}: range split at {cut} for {}", what());
            let parts = Tensor::new(out, vec![y_len], &bytes.to_vec()).unwrap();
            assert_same_tensor(&want, &parts, &format!("{name} split at {cut}"), &what());
        }
    }
}

fn bytemuck_cast<T: bytemuck::Pod>(b: &mut [u8]) -> &mut [T] {
    bytemuck::cast_slice_mut(b)
}

/// The slice-level DynamicQuantizeLinear on every configuration.
pub fn check_slice_dynamic(input: &mut Input<'_>) {
    let n = if input.one_in(8) { 60_000 + input.below(10_000) } else { input.below(600) };
    let step = SPECIAL_SCALES[input.u8() as usize % 12];
    let Wide::F32(x) = Wide::new(input, DataType::F32, n, step) else { unreachable!("f32 requested") };
    let y_len = if input.one_in(16) { input.below(64) } else { n };
    let mut want = vec![0xa5u8; y_len];
    let r = qdq_ref::dynamic_quantize(&x, &mut want);
    for (name, cfg) in configs() {
        let mut got = vec![0xa5u8; y_len];
        let g = qdq::dynamic_quantize_with(&cfg, &x, &mut got);
        let same = match (&r, &g) {
            (Ok((s0, z0)), Ok((s1, z1))) => s0.to_bits() == s1.to_bits() && z0 == z1,
            (Err(a), Err(b)) => a == b,
            _ => false,
        };
        assert!(same, "{name}: n {n}: ref {r:?} qdq {g:?}");
        assert!(want == got, "{name}: n {n}: outputs differ");
    }
}

/// The conformance runner's ONNX messages and tensor conversion, compiled from its source
/// file in `xtask` (a path include keeps criterion and the rest of xtask out of the
/// sanitizer build).
#[path = "../../xtask/src/proto.rs"]
#[allow(dead_code, clippy::all)]
pub mod proto;

/// An input's quantize parameters from its run-time views.
fn qparams<'a>(
    scale: qdq::Values<'a>,
    zero_point: Option<qdq::Packed<'a>>,
    layout: qdq::Layout,
    opts: &qdq::QuantizeOptions,
) -> qdq::Params<'a> {
    let p = dparams(scale, zero_point, layout).saturate(opts.saturate);
    match opts.precision {
        Some(t) => p.precision(t),
        None => p,
    }
}

/// An input's dequantize parameters from its run-time views.
fn dparams<'a>(scale: qdq::Values<'a>, zero_point: Option<qdq::Packed<'a>>, layout: qdq::Layout) -> qdq::Params<'a> {
    let p = qdq::Params::new(scale, layout);
    match zero_point {
        Some(z) => p.zero_points(z),
        None => p,
    }
}
