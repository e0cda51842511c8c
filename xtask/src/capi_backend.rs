//! `--backend capi`: the quantization nodes run through the C ABI of `crates/qdq-capi`
//! (the exported `extern "C"` functions of `include/qdq.h`, linked as an rlib), so the
//! conformance suite checks the very entry points a C or C++ engine calls.
//!
//! Only the operator name and the input / output counts are checked here (as
//! `qdq_ref::run_node` checks them); everything else (attributes, opset, types, shapes) and
//! every computation goes through `qdq_*_info` and `qdq_*_linear`. Inputs are copied into
//! 4-byte-aligned buffers first: the C ABI requires typed data aligned to its element
//! size, and the test loader's tensors need not be.

#![allow(unsafe_code)]

use std::ffi::{CStr, CString};
use std::ptr;

use qdq_capi::{qdq_attribute, qdq_node, qdq_status, qdq_tensor, qdq_tensor_info};
use qdq_ref::{Attribute, DataType, Opset, Tensor, TensorRef};

/// `STATUS_NAME: message`, the capi backend's error string.
fn error(status: qdq_status, message: &str) -> String {
    // SAFETY: `qdq_status_name` returns a static NUL-terminated string for any value.
    let name = unsafe { CStr::from_ptr(qdq_capi::qdq_status_name(status as i32)) };
    format!("{}: {message}", name.to_string_lossy())
}

/// Ok for `QDQ_OK`, else the status name and the calling thread's `qdq_last_error()`.
fn check(status: qdq_status) -> Result<(), String> {
    if status == qdq_status::QDQ_OK {
        return Ok(());
    }
    // SAFETY: `qdq_last_error` returns a NUL-terminated string valid until the thread's
    // next failing call; it is copied at once.
    let message = unsafe { CStr::from_ptr(qdq_capi::qdq_last_error()) };
    Err(error(status, &message.to_string_lossy()))
}

/// An input as the C ABI takes it: an i64 shape and a 4-byte-aligned copy of the bytes.
struct Input {
    dtype: i32,
    shape: Vec<i64>,
    words: Vec<u32>,
}

impl Input {
    fn new(t: &TensorRef<'_>) -> Result<Input, String> {
        let shape = t
            .shape
            .iter()
            .map(|&d| i64::try_from(d).map_err(|_| error(qdq_status::QDQ_SHAPE_OVERFLOW, "a dimension exceeds i64")))
            .collect::<Result<Vec<i64>, String>>()?;
        let mut words = vec![0u32; t.data.len().div_ceil(4)];
        for (w, chunk) in words.iter_mut().zip(t.data.chunks(4)) {
            let mut b = [0u8; 4];
            b[..chunk.len()].copy_from_slice(chunk);
            *w = u32::from_ne_bytes(b);
        }
        Ok(Input { dtype: t.dtype.onnx() as i32, shape, words })
    }

    /// The descriptor; borrows `self`, which must outlive every use of it.
    fn desc(&self) -> qdq_tensor {
        qdq_tensor {
            dtype: self.dtype,
            rank: self.shape.len(),
            shape: if self.shape.is_empty() { ptr::null() } else { self.shape.as_ptr() },
            data: if self.words.is_empty() { ptr::null() } else { self.words.as_ptr().cast() },
        }
    }
}

/// A zeroed 4-byte-aligned output buffer of at least `bytes` bytes.
fn output_buffer(bytes: usize) -> Vec<u32> {
    vec![0u32; bytes.div_ceil(4).max(1)]
}

/// The bytes of `words`, `len` of them.
fn bytes_of(words: &[u32], len: usize) -> Vec<u8> {
    words.iter().flat_map(|w| w.to_ne_bytes()).take(len).collect()
}

/// An output tensor from what `*_info` said and the bytes the run wrote.
fn output(info: &qdq_tensor_info, words: &[u32]) -> Result<Tensor, String> {
    let internal = |m: String| error(qdq_status::QDQ_INTERNAL, &m);
    let dtype = DataType::from_onnx(i64::from(info.dtype))
        .ok_or_else(|| internal(format!("the info names element type {}", info.dtype)))?;
    let shape = if info.rank == 0 {
        Vec::new()
    } else if info.shape.is_null() {
        return Err(internal(format!("the info has rank {} and a NULL shape", info.rank)));
    } else {
        // SAFETY: the info's shape is x's shape pointer (an `Input` still alive), `rank` long.
        let dims = unsafe { std::slice::from_raw_parts(info.shape, info.rank) };
        dims.iter()
            .map(|&d| usize::try_from(d).map_err(|_| internal(format!("the info has dimension {d}"))))
            .collect::<Result<Vec<usize>, String>>()?
    };
    Tensor::new(dtype, shape, &bytes_of(words, info.bytes)).map_err(|e| internal(e.to_string()))
}

const EMPTY_INFO: qdq_tensor_info = qdq_tensor_info { dtype: 0, rank: 0, shape: ptr::null(), bytes: 0 };

/// Runs one quantization node through the C ABI (`cfg` NULL: the `QDQ_ISA` choice or the
/// best ISA, the calling thread).
pub fn run_node(
    op_type: &str,
    opset: Opset,
    inputs: &[Option<TensorRef<'_>>],
    attributes: &[Attribute<'_>],
    num_outputs: usize,
) -> Result<Vec<Tensor>, String> {
    let arity = |m: String| error(qdq_status::QDQ_ARITY, &m);
    let (n_in, n_out) = match op_type {
        "QuantizeLinear" | "DequantizeLinear" => {
            if !(2..=3).contains(&inputs.len()) {
                return Err(arity(format!("{op_type} takes 2 or 3 inputs, got {}", inputs.len())));
            }
            (2, 1)
        }
        "DynamicQuantizeLinear" => {
            if inputs.len() != 1 {
                return Err(arity(format!("DynamicQuantizeLinear takes 1 input, got {}", inputs.len())));
            }
            (1, 3)
        }
        other => {
            let expected = "QuantizeLinear, DequantizeLinear or DynamicQuantizeLinear";
            return Err(error(
                qdq_status::QDQ_UNSUPPORTED_OPSET,
                &format!("unknown operator '{other}' (expected {expected})"),
            ));
        }
    };
    if num_outputs != n_out {
        let s = if n_out == 1 { "" } else { "s" };
        return Err(arity(format!("{op_type} has exactly {n_out} output{s}, got {num_outputs}")));
    }
    let names = ["x", "scale"];
    for (i, name) in names.iter().enumerate().take(n_in) {
        if inputs[i].is_none() {
            return Err(arity(format!("{op_type}: input {i} ({name}) is required")));
        }
    }

    // The node: domain, opset, attributes (the CStrings outlive every call below).
    let domain =
        CString::new(opset.domain.as_str()).map_err(|e| error(qdq_status::QDQ_INVALID_ARGUMENT, &e.to_string()))?;
    let attr_names = attributes
        .iter()
        .map(|a| {
            CString::new(a.name).map_err(|_| {
                error(qdq_status::QDQ_INVALID_ARGUMENT, &format!("attribute name {:?} holds a NUL byte", a.name))
            })
        })
        .collect::<Result<Vec<CString>, String>>()?;
    let attrs: Vec<qdq_attribute> =
        attr_names.iter().zip(attributes).map(|(n, a)| qdq_attribute { name: n.as_ptr(), value: a.value }).collect();
    let node = qdq_node {
        domain: domain.as_ptr(),
        opset: opset.version,
        attributes: if attrs.is_empty() { ptr::null() } else { attrs.as_ptr() },
        n_attributes: attrs.len(),
    };

    // Inputs (None: NULL) and their descriptors, both alive to the end of the function.
    let owned = inputs.iter().map(|t| t.as_ref().map(Input::new).transpose()).collect::<Result<Vec<_>, String>>()?;
    let descs: Vec<Option<qdq_tensor>> = owned.iter().map(|t| t.as_ref().map(Input::desc)).collect();
    let arg = |i: usize| descs.get(i).and_then(Option::as_ref).map_or(ptr::null(), |d| d as *const qdq_tensor);
    let cfg = ptr::null();

    match op_type {
        "DynamicQuantizeLinear" => {
            let mut infos = [EMPTY_INFO; 3];
            // SAFETY: node, its strings and attributes, and x's descriptor (shape, aligned data)
            // are alive; `infos` has room for 3.
            check(unsafe { qdq_capi::qdq_dynamic_quantize_linear_info(&node, arg(0), infos.as_mut_ptr()) })?;
            let mut y = output_buffer(infos[0].bytes);
            let (mut scale, mut zero_point) = (0f32, 0u8);
            // SAFETY: as above; `y` has `infos[0].bytes` writable bytes (at least), and the
            // scale and zero point are writable.
            check(unsafe {
                qdq_capi::qdq_dynamic_quantize_linear(
                    cfg,
                    &node,
                    arg(0),
                    y.as_mut_ptr().cast(),
                    infos[0].bytes,
                    &mut scale,
                    &mut zero_point,
                )
            })?;
            let scale_words = [u32::from_ne_bytes(scale.to_le_bytes())];
            let zero_point_words = [u32::from(zero_point)];
            Ok(vec![output(&infos[0], &y)?, output(&infos[1], &scale_words)?, output(&infos[2], &zero_point_words)?])
        }
        _ => {
            let quantize = op_type == "QuantizeLinear";
            let mut info = EMPTY_INFO;
            // SAFETY: node, its strings and attributes, and the descriptors (shapes, aligned
            // data) are alive; the zero point is NULL or alive; `info` is writable.
            check(unsafe {
                if quantize {
                    qdq_capi::qdq_quantize_linear_info(&node, arg(0), arg(1), arg(2), &mut info)
                } else {
                    qdq_capi::qdq_dequantize_linear_info(&node, arg(0), arg(1), arg(2), &mut info)
                }
            })?;
            let mut y = output_buffer(info.bytes);
            // SAFETY: as above; `y` is 4-byte aligned with at least `info.bytes` writable bytes.
            check(unsafe {
                let out = y.as_mut_ptr().cast();
                if quantize {
                    qdq_capi::qdq_quantize_linear(cfg, &node, arg(0), arg(1), arg(2), out, info.bytes)
                } else {
                    qdq_capi::qdq_dequantize_linear(cfg, &node, arg(0), arg(1), arg(2), out, info.bytes)
                }
            })?;
            Ok(vec![output(&info, &y)?])
        }
    }
}

/// The ISA the capi backend runs on, as the C ABI reports it (`qdq_isa_detect`,
/// `qdq_isa_name`): `", ISA avx2"`, with `" (QDQ_ISA)"` when the environment forced it.
pub fn isa_banner() -> Result<String, String> {
    let mut isa = 0i32;
    // SAFETY: `isa` is a writable i32.
    check(unsafe { qdq_capi::qdq_isa_detect(&mut isa) })?;
    // SAFETY: `qdq_isa_name` returns a static NUL-terminated string for any value.
    let name = unsafe { CStr::from_ptr(qdq_capi::qdq_isa_name(isa)) }.to_string_lossy();
    let forced = if qdq::Isa::forced().ok().flatten().is_some() { " (QDQ_ISA)" } else { "" };
    Ok(format!(", ISA {name}{forced}"))
}

#[cfg(test)]
mod tests {
    use super::run_node;
    use qdq_ref::{Attribute, DataType, Opset, TensorRef};

    #[test]
    fn runs_a_node_from_unaligned_bytes() {
        // x as f32 bytes at an odd offset: the backend copies it to an aligned buffer.
        let mut raw = vec![0u8; 1];
        for v in [-1.0f32, 0.0, 0.5, 2.0] {
            raw.extend_from_slice(&v.to_le_bytes());
        }
        let x = TensorRef { dtype: DataType::F32, shape: &[4], data: &raw[1..] };
        let (s, z) = (0.02f32, 128u8);
        let inputs = [Some(x), Some(TensorRef::scalar(&s)), Some(TensorRef::scalar(&z))];
        let y = run_node("QuantizeLinear", Opset::onnx(13), &inputs, &[], 1).unwrap();
        assert_eq!(y[0].as_slice::<u8>().unwrap(), [78, 128, 153, 228]);
        let d = run_node("DequantizeLinear", Opset::onnx(13), &[Some(y[0].view()), inputs[1], inputs[2]], &[], 1);
        assert_eq!(d.unwrap()[0].as_slice::<f32>().unwrap(), [-1.0, 0.0, 0.5, 2.0]);
        let dy = run_node("DynamicQuantizeLinear", Opset::onnx(11), &[Some(x)], &[], 3).unwrap();
        assert_eq!((dy[0].shape(), dy[1].shape(), dy[2].shape()), (&[4][..], &[][..], &[][..]));
        assert_eq!(dy[2].to_scalar::<u8>().unwrap(), 85);
    }

    /// `ShapeMismatch` as the C status name, `QDQ_SHAPE_MISMATCH`.
    fn status_of(kind: &str) -> String {
        let mut s = String::from("QDQ");
        for c in kind.chars() {
            if c.is_ascii_uppercase() {
                s.push('_');
            }
            s.push(c.to_ascii_uppercase());
        }
        s
    }

    /// Random bytes of `n` elements of `t`; f32 values are plausible data or scales.
    fn data(rng: &mut qdq_fixtures::Rng, t: DataType, n: usize, scale: bool) -> Vec<u8> {
        if t == DataType::F32 {
            let v = |r: &mut qdq_fixtures::Rng| if scale { 0.01 + r.unit() } else { 300.0 * r.signed_unit() };
            return (0..n).flat_map(|_| v(rng).to_le_bytes()).collect();
        }
        (0..t.byte_len(n).unwrap()).map(|_| rng.next_u64() as u8).collect()
    }

    /// Random nodes through the C ABI and through `qdq::run_node`: the same outputs, byte
    /// for byte, or errors of the same kind.
    #[test]
    fn agrees_with_qdq_on_random_nodes() {
        let mut rng = qdq_fixtures::Rng::new(0x9e37_79b9_7f4a_7c15);
        let ops = ["QuantizeLinear", "DequantizeLinear", "DynamicQuantizeLinear"];
        let names = ["axis", "saturate", "block_size", "output_dtype", "precision"];
        let (mut ok, mut failed) = (0, 0);
        for case in 0..4000 {
            let op = rng.pick(&ops);
            let opset = if rng.below(8) == 0 {
                Opset { domain: qdq_ref::Domain::Microsoft, version: 1 }
            } else {
                Opset::onnx(rng.pick(&[10, 11, 13, 19, 21, 23, 24, 25]))
            };
            let rank = rng.below(4);
            let shape: Vec<usize> = (0..rank).map(|_| rng.pick(&[0, 1, 2, 3, 4, 5, 8])).collect();
            let n: usize = shape.iter().product();
            let quantize = op == "QuantizeLinear";
            let x_t = if quantize || op == "DynamicQuantizeLinear" {
                rng.pick(&[DataType::F32, DataType::F32, DataType::F16, DataType::Bf16, DataType::I32])
            } else {
                rng.pick(&DataType::ALL)
            };
            let axis = if rank > 0 { rng.below(rank) } else { 0 };
            let mut attributes = Vec::new();
            let block = rng.pick(&[1usize, 2, 3]);
            let s_shape: Vec<usize> = match rng.below(4) {
                0 | 1 => vec![],
                2 if rank > 0 => vec![shape[axis]],
                _ if rank > 0 => {
                    let mut s = shape.clone();
                    s[axis] = shape[axis].div_ceil(block);
                    attributes.push(Attribute { name: "block_size", value: block as i64 });
                    s
                }
                _ => vec![1],
            };
            if rank > 0 && !s_shape.is_empty() {
                attributes.push(Attribute { name: "axis", value: axis as i64 - rng.below(2) as i64 * rank as i64 });
            }
            for _ in 0..rng.below(3) {
                let name = rng.pick(&names);
                let value = match name {
                    "saturate" => rng.below(3) as i64,
                    "output_dtype" | "precision" => rng.pick(&DataType::ALL).onnx() * (rng.below(8) != 0) as i64,
                    _ => rng.below(5) as i64 - 2,
                };
                attributes.push(Attribute { name, value });
            }
            let s_t = rng.pick(&[DataType::F32, DataType::F32, DataType::F16, DataType::Bf16, DataType::E8M0]);
            let s_n: usize = s_shape.iter().product();
            let z_t = rng.pick(&DataType::ALL);
            let x_data = data(&mut rng, x_t, n, false);
            let s_data = data(&mut rng, s_t, s_n, true);
            let z_data = data(&mut rng, z_t, s_n, false);
            let x = TensorRef { dtype: x_t, shape: &shape, data: &x_data };
            let s = TensorRef { dtype: s_t, shape: &s_shape, data: &s_data };
            let z = TensorRef { dtype: z_t, shape: &s_shape, data: &z_data };
            let (inputs, outs) = match op {
                "DynamicQuantizeLinear" => {
                    attributes.truncate(rng.below(2) * attributes.len().min(1));
                    (vec![Some(x)], 3)
                }
                _ => (if rng.below(3) == 0 { vec![Some(x), Some(s)] } else { vec![Some(x), Some(s), Some(z)] }, 1),
            };
            let want = qdq::run_node(op, opset, &inputs, &attributes, outs);
            let got = run_node(op, opset, &inputs, &attributes, outs);
            match (&want, &got) {
                (Ok(w), Ok(g)) => {
                    assert_eq!(w, g, "case {case}: {op} {opset:?} {inputs:?} {attributes:?}");
                    ok += 1;
                }
                (Err(w), Err(g)) => {
                    let status = status_of(&format!("{:?}", w.kind()));
                    assert!(g.starts_with(&status), "case {case}: {op} {opset:?} {inputs:?} {attributes:?}: {w} / {g}");
                    failed += 1;
                }
                _ => panic!("case {case}: {op} {opset:?} {inputs:?} {attributes:?}: {want:?} / {got:?}"),
            }
        }
        assert!(ok > 400 && failed > 400, "{ok} ran, {failed} failed");
    }

    #[test]
    fn errors_name_the_status_and_the_message() {
        let (x, s) = (TensorRef::new(&[2], &[1.0f32, 2.0]).unwrap(), TensorRef::scalar(&0.5f32));
        let err = |op, inputs: &[Option<TensorRef<'_>>], attrs: &[Attribute<'_>], outs| {
            run_node(op, Opset::onnx(13), inputs, attrs, outs).unwrap_err()
        };
        assert!(err("QuantizeLinear", &[Some(x)], &[], 1).starts_with("QDQ_ARITY: "));
        assert!(err("QuantizeLinear", &[Some(x), Some(s)], &[], 2).starts_with("QDQ_ARITY: "));
        assert!(err("QuantizeLinear", &[None, Some(s)], &[], 1).starts_with("QDQ_ARITY: "));
        assert!(err("Quantize", &[Some(x), Some(s)], &[], 1).starts_with("QDQ_UNSUPPORTED_OPSET: "));
        let e = err("QuantizeLinear", &[Some(x), Some(s)], &[Attribute { name: "block_size", value: 2 }], 1);
        assert!(e.starts_with("QDQ_UNKNOWN_ATTRIBUTE: ") && e.contains("block_size"), "{e}");
        let e = err("DequantizeLinear", &[Some(x), Some(s)], &[], 1);
        assert!(e.starts_with("QDQ_UNSUPPORTED_TYPE: ") && e.len() > "QDQ_UNSUPPORTED_TYPE: ".len(), "{e}");
    }
}
