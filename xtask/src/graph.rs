//! A tiny ONNX graph interpreter: exactly the operators the quantization node tests use.
//!
//! A graph whose only node is QuantizeLinear, DequantizeLinear or DynamicQuantizeLinear is
//! a single call to the backend's `run_node`. The `*_expanded` DynamicQuantizeLinear tests
//! spell the operator out as its function body, so the interpreter also knows:
//!
//! | op | semantics |
//! |---|---|
//! | Constant | the `value` TENSOR attribute (other `value_*` forms are rejected) |
//! | ReduceMin, ReduceMax | f32; `axes` attribute (all axes when absent), `keepdims` (default 1), `noop_with_empty_axes`; NaN propagates; an empty reduction gives +inf / -inf |
//! | Min, Max | f32, variadic, numpy broadcasting; NaN propagates |
//! | Sub, Div | f32 IEEE arithmetic, numpy broadcasting |
//! | Clip | f32; opset >= 11: optional `min` / `max` inputs (one element each); opset < 11: `min` / `max` FLOAT attributes; NaN stays NaN; `min > max` gives `max` (as numpy) |
//! | Round | f32, round half to even |
//! | Cast | to FLOAT, UINT8, INT8, UINT16, INT16 or INT32 (see below) |
//! | Identity | a copy |
//! | QuantizeLinear, DequantizeLinear, DynamicQuantizeLinear | the backend's `run_node` |
//!
//! Cast to an integer type from a float type truncates toward zero and saturates to the
//! type's range; NaN becomes 0 (Rust's `as`; ONNX leaves out-of-range conversions
//! undefined). NaN -> 0 is what makes the expanded DynamicQuantizeLinear body give zero
//! point 0 for an all-zero input (scale 0, `0 / 0` = NaN), the value qdq-ref's fused
//! operator returns. Integer-to-integer casts wrap (two's complement), as numpy does. Cast
//! to FLOAT rounds to nearest even; `saturate` (which only concerns float8 targets) is
//! accepted and ignored.
//!
//! Anything else is the error `unsupported op X in graph`. Nodes run in the order given
//! (ONNX requires topological order).

use std::collections::{HashMap, HashSet};

use qdq_ref::float::{decode_e8m0, FloatFormat};
use qdq_ref::packing;
use qdq_ref::{Attribute, DataType, Domain, Opset, Tensor, TensorRef};

use crate::proto::{attribute_type, attribute_type_name, ModelProto, NodeProto, OperatorSetIdProto, MAX_TENSOR_BYTES};
use crate::Backend;

/// Result of graph execution; the error is a human-readable reason.
pub type Result<T> = std::result::Result<T, String>;

/// The operators dispatched to the backend.
pub const QDQ_OPS: [&str; 3] = ["QuantizeLinear", "DequantizeLinear", "DynamicQuantizeLinear"];

/// The opset imported for `domain` (`""` / `ai.onnx` / `com.microsoft`).
pub fn opset_for(imports: &[OperatorSetIdProto], domain: &str) -> Result<Opset> {
    let Some(d) = Domain::parse(domain) else {
        return Err(format!("unsupported operator domain '{domain}'"));
    };
    let mut found = imports.iter().filter(|o| Domain::parse(&o.domain) == Some(d));
    match (found.next(), found.next()) {
        (Some(o), None) => Ok(Opset { domain: d, version: o.version }),
        (Some(a), Some(b)) if a.version == b.version => Ok(Opset { domain: d, version: a.version }),
        (Some(a), Some(b)) => {
            Err(format!("the model imports {} twice, at versions {} and {}", d.as_str(), a.version, b.version))
        }
        (None, _) => Err(format!("the model imports no opset for domain '{}'", d.as_str())),
    }
}

/// Runs the model's graph on `inputs` (one per graph input that is not an initializer, in
/// graph-input order) and returns the graph outputs in order.
pub fn run(model: &ModelProto, inputs: Vec<Tensor>, backend: Backend) -> Result<Vec<Tensor>> {
    let Some(graph) = &model.graph else {
        return Err("the model has no graph".into());
    };
    let mut values: HashMap<String, Tensor> = HashMap::new();
    for (i, init) in graph.initializer.iter().enumerate() {
        let t = init.to_tensor().map_err(|e| format!("initializer {i} '{}': {e}", init.name))?;
        values.insert(init.name.clone(), t);
    }
    let init_names: HashSet<&str> = graph.initializer.iter().map(|t| t.name.as_str()).collect();
    let feeds: Vec<&String> =
        graph.input.iter().map(|i| &i.name).filter(|n| !init_names.contains(n.as_str())).collect();
    if feeds.len() != inputs.len() {
        return Err(format!(
            "the graph has {} inputs (not counting initializers) but the data set has {} input files",
            feeds.len(),
            inputs.len()
        ));
    }
    for (name, t) in feeds.into_iter().zip(inputs) {
        values.insert(name.clone(), t);
    }
    let mut defined: HashSet<String> = HashSet::new();
    for (index, node) in graph.node.iter().enumerate() {
        let what = if node.name.is_empty() {
            format!("node {index} ({})", node.op_type)
        } else {
            format!("node {index} ({} '{}')", node.op_type, node.name)
        };
        let outputs = run_node(node, &model.opset_import, &values, backend).map_err(|e| format!("{what}: {e}"))?;
        if outputs.len() != node.output.len() {
            return Err(format!("{what}: produced {} outputs, the node names {}", outputs.len(), node.output.len()));
        }
        for (name, t) in node.output.iter().zip(outputs) {
            if name.is_empty() {
                continue;
            }
            if !defined.insert(name.clone()) {
                return Err(format!("{what}: value '{name}' is produced twice"));
            }
            values.insert(name.clone(), t);
        }
    }
    graph
        .output
        .iter()
        .map(|o| values.get(&o.name).cloned().ok_or_else(|| format!("graph output '{}' is never produced", o.name)))
        .collect()
}

/// Runs one node given the values computed so far.
pub fn run_node(
    node: &NodeProto,
    imports: &[OperatorSetIdProto],
    values: &HashMap<String, Tensor>,
    backend: Backend,
) -> Result<Vec<Tensor>> {
    let opset = opset_for(imports, &node.domain)?;
    let mut inputs: Vec<Option<&Tensor>> = Vec::with_capacity(node.input.len());
    for name in &node.input {
        if name.is_empty() {
            inputs.push(None);
        } else {
            match values.get(name) {
                Some(t) => inputs.push(Some(t)),
                None => return Err(format!("input '{name}' is not a graph input, initializer or earlier output")),
            }
        }
    }
    let op = node.op_type.as_str();
    if QDQ_OPS.contains(&op) {
        return run_qdq(node, opset, &inputs, backend);
    }
    if opset.domain != Domain::Onnx {
        return Err(format!("unsupported op {}.{op} in graph", opset.domain.as_str()));
    }
    if node.output.len() != 1 {
        return Err(format!("{op} has 1 output, the node names {}", node.output.len()));
    }
    let out = match op {
        "Constant" => constant(node, &inputs)?,
        "ReduceMin" => reduce(node, &inputs, f32::INFINITY, nan_min)?,
        "ReduceMax" => reduce(node, &inputs, f32::NEG_INFINITY, nan_max)?,
        "Min" => variadic(node, &inputs, nan_min)?,
        "Max" => variadic(node, &inputs, nan_max)?,
        "Sub" => binary_op(node, &inputs, |a, b| a - b)?,
        "Div" => binary_op(node, &inputs, |a, b| a / b)?,
        "Clip" => clip(node, opset, &inputs)?,
        "Round" => {
            no_attributes(node)?;
            let x = f32s(one_input(&inputs, "input")?, "input")?;
            from_f32s(x.shape, x.data.into_iter().map(f32::round_ties_even).collect())
        }
        "Cast" => cast(node, &inputs)?,
        "Identity" => {
            no_attributes(node)?;
            one_input(&inputs, "input")?.clone()
        }
        other => return Err(format!("unsupported op {other} in graph")),
    };
    Ok(vec![out])
}

fn run_qdq(node: &NodeProto, opset: Opset, inputs: &[Option<&Tensor>], backend: Backend) -> Result<Vec<Tensor>> {
    let mut attrs = Vec::with_capacity(node.attribute.len());
    for a in &node.attribute {
        attrs.push(Attribute { name: &a.name, value: a.as_int()? });
    }
    let refs: Vec<Option<TensorRef<'_>>> = inputs.iter().map(|t| t.map(Tensor::view)).collect();
    backend.run_node(&node.op_type, opset, &refs, &attrs, node.output.len())
}

// ---------------------------------------------------------------------------------------
// f32 helpers

/// A decoded f32 tensor.
#[derive(Clone, Debug, PartialEq)]
struct F32s {
    shape: Vec<usize>,
    data: Vec<f32>,
}

fn f32s(t: &Tensor, what: &str) -> Result<F32s> {
    if t.dtype() != DataType::F32 {
        return Err(format!("{what} has type {}; only f32 is supported", t.dtype()));
    }
    let n = t.view().checked_len(what).map_err(|e| e.to_string())?;
    let data = t.bytes()[..4 * n].chunks_exact(4).map(|c| f32::from_le_bytes([c[0], c[1], c[2], c[3]])).collect();
    Ok(F32s { shape: t.shape().to_vec(), data })
}

fn from_f32s(shape: Vec<usize>, data: Vec<f32>) -> Tensor {
    Tensor::new(DataType::F32, shape, &data.iter().flat_map(|v| v.to_le_bytes()).collect::<Vec<u8>>()).unwrap()
}

/// Element count of a shape, refusing anything over the tensor size cap (4-byte elements).
fn element_count(shape: &[usize]) -> Result<usize> {
    let n = shape.iter().try_fold(1usize, |a, &d| a.checked_mul(d));
    match n {
        Some(n) if n <= MAX_TENSOR_BYTES / 4 => Ok(n),
        _ => Err(format!("shape {shape:?} is too large")),
    }
}

fn nan_min(a: f32, b: f32) -> f32 {
    if a.is_nan() || b.is_nan() {
        f32::NAN
    } else if b < a {
        b
    } else {
        a
    }
}

fn nan_max(a: f32, b: f32) -> f32 {
    if a.is_nan() || b.is_nan() {
        f32::NAN
    } else if b > a {
        b
    } else {
        a
    }
}

fn one_input<'a>(inputs: &[Option<&'a Tensor>], name: &str) -> Result<&'a Tensor> {
    match inputs {
        [Some(t)] => Ok(t),
        _ => Err(format!("expects exactly one input ({name}), got {}", inputs.len())),
    }
}

fn no_attributes(node: &NodeProto) -> Result<()> {
    match node.attribute.first() {
        Some(a) => Err(format!("unexpected attribute '{}'", a.name)),
        None => Ok(()),
    }
}

fn int_attr(node: &NodeProto, name: &str) -> Result<Option<i64>> {
    node.attr(name).map(|a| a.as_int()).transpose()
}

fn check_attributes(node: &NodeProto, known: &[&str]) -> Result<()> {
    match node.attribute.iter().find(|a| !known.contains(&a.name.as_str())) {
        Some(a) => Err(format!("unsupported attribute '{}'", a.name)),
        None => Ok(()),
    }
}

/// numpy broadcasting of two shapes.
fn broadcast_shape(a: &[usize], b: &[usize]) -> Result<Vec<usize>> {
    let rank = a.len().max(b.len());
    let dim = |s: &[usize], i: usize| if i + s.len() >= rank { s[i + s.len() - rank] } else { 1 };
    (0..rank)
        .map(|i| match (dim(a, i), dim(b, i)) {
            (x, y) if x == y || y == 1 => Ok(x),
            (1, y) => Ok(y),
            _ => Err(format!("shapes {a:?} and {b:?} cannot be broadcast together")),
        })
        .collect()
}

/// Row-major strides of `shape` aligned to `rank` dimensions, 0 on broadcast dimensions.
fn broadcast_strides(shape: &[usize], out: &[usize]) -> Vec<usize> {
    let rank = out.len();
    let mut strides = vec![0usize; rank];
    let mut s = 1usize;
    for i in (0..shape.len()).rev() {
        let o = i + rank - shape.len();
        strides[o] = if shape[i] == 1 && out[o] != 1 { 0 } else { s };
        s *= shape[i];
    }
    strides
}

/// Visits every index of `shape` in row-major order, calling `f` with the offsets given by
/// each stride set.
fn walk<const K: usize>(shape: &[usize], strides: [&[usize]; K], mut f: impl FnMut([usize; K])) {
    let n: usize = shape.iter().product();
    let rank = shape.len();
    let mut idx = vec![0usize; rank];
    let mut off = [0usize; K];
    for _ in 0..n {
        f(off);
        for d in (0..rank).rev() {
            idx[d] += 1;
            for k in 0..K {
                off[k] += strides[k][d];
            }
            if idx[d] < shape[d] {
                break;
            }
            for k in 0..K {
                off[k] -= strides[k][d] * shape[d];
            }
            idx[d] = 0;
        }
    }
}

fn broadcast(a: &F32s, b: &F32s, f: impl Fn(f32, f32) -> f32) -> Result<F32s> {
    if a.shape == b.shape {
        return Ok(F32s { shape: a.shape.clone(), data: a.data.iter().zip(&b.data).map(|(x, y)| f(*x, *y)).collect() });
    }
    let shape = broadcast_shape(&a.shape, &b.shape)?;
    let n = element_count(&shape)?;
    let (sa, sb) = (broadcast_strides(&a.shape, &shape), broadcast_strides(&b.shape, &shape));
    let mut data = Vec::with_capacity(n);
    walk(&shape, [&sa, &sb], |[i, j]| data.push(f(a.data[i], b.data[j])));
    Ok(F32s { shape, data })
}

// ---------------------------------------------------------------------------------------
// operators

fn constant(node: &NodeProto, inputs: &[Option<&Tensor>]) -> Result<Tensor> {
    if !inputs.is_empty() {
        return Err(format!("Constant takes no inputs, got {}", inputs.len()));
    }
    match node.attribute.as_slice() {
        [a] if a.name == "value" => match (a.kind(), &a.t) {
            (attribute_type::TENSOR, Some(t)) => t.to_tensor().map_err(|e| format!("attribute 'value': {e}")),
            (k, _) => Err(format!("attribute 'value' has type {}, expected TENSOR", attribute_type_name(k))),
        },
        [a] => Err(format!("Constant attribute '{}' is not supported (only 'value')", a.name)),
        other => Err(format!("Constant needs exactly one attribute, got {}", other.len())),
    }
}

fn reduce(node: &NodeProto, inputs: &[Option<&Tensor>], init: f32, f: fn(f32, f32) -> f32) -> Result<Tensor> {
    check_attributes(node, &["axes", "keepdims", "noop_with_empty_axes"])?;
    let x = match inputs {
        [Some(x)] => x,
        [Some(x), None] => x,
        [Some(_), Some(_)] => return Err("the axes input (opset 18) is not supported".into()),
        _ => return Err(format!("expects 1 input (data), got {}", inputs.len())),
    };
    let x = f32s(x, "data")?;
    let keepdims = match int_attr(node, "keepdims")?.unwrap_or(1) {
        0 => false,
        1 => true,
        v => return Err(format!("keepdims must be 0 or 1, got {v}")),
    };
    let axes = match node.attr("axes") {
        None => None,
        Some(a) if a.kind() == attribute_type::INTS => Some(a.ints.clone()),
        Some(a) => return Err(format!("attribute 'axes' has type {}, expected INTS", attribute_type_name(a.kind()))),
    };
    let rank = x.shape.len();
    let mut reduced = vec![axes.is_none(); rank];
    if let Some(axes) = &axes {
        if axes.is_empty() && int_attr(node, "noop_with_empty_axes")? == Some(1) {
            return Ok(from_f32s(x.shape, x.data));
        }
        if axes.is_empty() {
            reduced.iter_mut().for_each(|r| *r = true);
        }
        for &a in axes {
            let r = rank as i64;
            if a < -r || a >= r {
                return Err(format!("axis {a} is out of range for rank {rank}"));
            }
            let a = if a < 0 { a + r } else { a } as usize;
            if std::mem::replace(&mut reduced[a], true) {
                return Err(format!("axis {a} is given twice"));
            }
        }
    }
    let kept: Vec<usize> = x.shape.iter().zip(&reduced).map(|(&d, &r)| if r { 1 } else { d }).collect();
    let n_out = element_count(&kept)?;
    let out_strides = broadcast_strides(&kept, &x.shape);
    let in_strides = broadcast_strides(&x.shape, &x.shape);
    let mut out = vec![init; n_out];
    walk(&x.shape, [&in_strides, &out_strides], |[i, o]| out[o] = f(out[o], x.data[i]));
    let shape =
        if keepdims { kept } else { x.shape.iter().zip(&reduced).filter(|(_, &r)| !r).map(|(&d, _)| d).collect() };
    Ok(from_f32s(shape, out))
}

fn variadic(node: &NodeProto, inputs: &[Option<&Tensor>], f: fn(f32, f32) -> f32) -> Result<Tensor> {
    no_attributes(node)?;
    let mut acc: Option<F32s> = None;
    for (i, t) in inputs.iter().enumerate() {
        let Some(t) = t else {
            return Err(format!("input {i} is omitted"));
        };
        let t = f32s(t, &format!("input {i}"))?;
        acc = Some(match acc {
            None => t,
            Some(a) => broadcast(&a, &t, f)?,
        });
    }
    match acc {
        Some(a) => Ok(from_f32s(a.shape, a.data)),
        None => Err("needs at least one input".into()),
    }
}

fn binary_op(node: &NodeProto, inputs: &[Option<&Tensor>], f: fn(f32, f32) -> f32) -> Result<Tensor> {
    no_attributes(node)?;
    let [Some(a), Some(b)] = inputs else {
        return Err(format!("expects 2 inputs (A, B), got {}", inputs.len()));
    };
    let r = broadcast(&f32s(a, "A")?, &f32s(b, "B")?, f)?;
    Ok(from_f32s(r.shape, r.data))
}

fn scalar_f32(t: Option<&Tensor>, what: &str) -> Result<Option<f32>> {
    let Some(t) = t else {
        return Ok(None);
    };
    let v = f32s(t, what)?;
    match v.data.as_slice() {
        [x] => Ok(Some(*x)),
        _ => Err(format!("{what} must hold exactly one element, shape is {:?}", v.shape)),
    }
}

fn clip(node: &NodeProto, opset: Opset, inputs: &[Option<&Tensor>]) -> Result<Tensor> {
    let Some(Some(x)) = inputs.first() else {
        return Err("input 0 (input) is required".into());
    };
    let (lo, hi) = if opset.version >= 11 {
        no_attributes(node)?;
        if inputs.len() > 3 {
            return Err(format!("takes at most 3 inputs, got {}", inputs.len()));
        }
        let get = |i: usize| inputs.get(i).copied().flatten();
        (scalar_f32(get(1), "min")?, scalar_f32(get(2), "max")?)
    } else {
        check_attributes(node, &["min", "max"])?;
        if inputs.len() != 1 {
            return Err(format!("Clip-{} takes 1 input, got {}", opset.version, inputs.len()));
        }
        let float = |name: &str| -> Result<Option<f32>> {
            match node.attr(name) {
                None => Ok(None),
                Some(a) if a.kind() == attribute_type::FLOAT => Ok(a.f),
                Some(a) => {
                    Err(format!("attribute '{name}' has type {}, expected FLOAT", attribute_type_name(a.kind())))
                }
            }
        };
        (float("min")?, float("max")?)
    };
    let (lo, hi) = (lo.unwrap_or(f32::NEG_INFINITY), hi.unwrap_or(f32::INFINITY));
    let x = f32s(x, "input")?;
    let clip = |v: f32| {
        let v = if v < lo { lo } else { v };
        if v > hi {
            hi
        } else {
            v
        }
    };
    Ok(from_f32s(x.shape, x.data.into_iter().map(clip).collect()))
}

/// Element `i` of a numeric tensor as an f64 (exact for every supported type).
fn element_f64(t: &Tensor, i: usize) -> f64 {
    let code = packing::get(t.dtype(), t.bytes(), i);
    match t.dtype() {
        DataType::F32 => f64::from(f32::from_bits(code)),
        DataType::E8M0 => f64::from(decode_e8m0(code as u8)),
        d => match FloatFormat::of(d) {
            Some(f) => f.decode(code),
            None => packing::get_int(d, t.bytes(), i) as f64,
        },
    }
}

fn cast(node: &NodeProto, inputs: &[Option<&Tensor>]) -> Result<Tensor> {
    check_attributes(node, &["to", "saturate"])?;
    int_attr(node, "saturate")?;
    let x = one_input(inputs, "input")?;
    let n = x.view().checked_len("input").map_err(|e| e.to_string())?;
    let Some(to) = int_attr(node, "to")? else {
        return Err("attribute 'to' is required".into());
    };
    let target = DataType::from_onnx(to).filter(|t| {
        matches!(t, DataType::F32 | DataType::U8 | DataType::I8 | DataType::U16 | DataType::I16 | DataType::I32)
    });
    let Some(target) = target else {
        return Err(format!("Cast to {} ({to}) is not supported", crate::proto::onnx_type_name(to as i32)));
    };
    let bytes = target.byte_len(n).filter(|b| *b <= MAX_TENSOR_BYTES).ok_or("the output is too large")?;
    let mut data = vec![0u8; bytes];
    let from_int = x.dtype().int_range().is_some();
    for i in 0..n {
        let code = if target == DataType::F32 {
            (element_f64(x, i) as f32).to_bits()
        } else if from_int {
            // Integer to integer: two's-complement wrap, as numpy's astype.
            packing::get_int(x.dtype(), x.bytes(), i) as u32
        } else {
            // Float to integer: truncate toward zero, saturate, NaN -> 0.
            let (lo, hi) = target.int_range().unwrap_or((0, 0));
            (element_f64(x, i) as i64).clamp(lo, hi) as u32
        };
        packing::set(target, &mut data, i, code);
    }
    Ok(Tensor::new(target, x.shape().to_vec(), &data).unwrap())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn t(shape: &[usize], v: &[f32]) -> F32s {
        F32s { shape: shape.to_vec(), data: v.to_vec() }
    }

    #[test]
    fn broadcasting() {
        let a = t(&[2, 3], &[1., 2., 3., 4., 5., 6.]);
        let r = broadcast(&a, &t(&[], &[10.]), |x, y| x - y).unwrap();
        assert_eq!(r, t(&[2, 3], &[-9., -8., -7., -6., -5., -4.]));
        let r = broadcast(&a, &t(&[3], &[1., 2., 3.]), |x, y| x * y).unwrap();
        assert_eq!(r, t(&[2, 3], &[1., 4., 9., 4., 10., 18.]));
        let r = broadcast(&t(&[2, 1], &[1., 2.]), &t(&[1, 3], &[10., 20., 30.]), |x, y| x + y).unwrap();
        assert_eq!(r, t(&[2, 3], &[11., 21., 31., 12., 22., 32.]));
        assert!(broadcast(&a, &t(&[2], &[1., 2.]), |x, _| x).is_err());
        let r = broadcast(&t(&[0], &[]), &t(&[1], &[1.]), |x, _| x).unwrap();
        assert_eq!(r, t(&[0], &[]));
    }

    fn node(op: &str, attrs: Vec<crate::proto::AttributeProto>) -> NodeProto {
        NodeProto { op_type: op.into(), output: vec!["y".into()], attribute: attrs, ..Default::default() }
    }

    fn ints(name: &str, v: &[i64]) -> crate::proto::AttributeProto {
        crate::proto::AttributeProto {
            name: name.into(),
            ints: v.to_vec(),
            r#type: attribute_type::INTS,
            ..Default::default()
        }
    }

    fn int(name: &str, v: i64) -> crate::proto::AttributeProto {
        crate::proto::AttributeProto {
            name: name.into(),
            i: Some(v),
            r#type: attribute_type::INT,
            ..Default::default()
        }
    }

    #[test]
    fn reductions() {
        let x = from_f32s(vec![2, 3], vec![3., -1., 2., 7., 0., -5.]);
        let r = reduce(&node("ReduceMin", vec![int("keepdims", 0)]), &[Some(&x)], f32::INFINITY, nan_min).unwrap();
        assert_eq!(r, from_f32s(vec![], vec![-5.]));
        let r = reduce(&node("ReduceMax", vec![]), &[Some(&x)], f32::NEG_INFINITY, nan_max).unwrap();
        assert_eq!(r, from_f32s(vec![1, 1], vec![7.]));
        let r = reduce(&node("ReduceMax", vec![ints("axes", &[1])]), &[Some(&x)], f32::NEG_INFINITY, nan_max).unwrap();
        assert_eq!(r, from_f32s(vec![2, 1], vec![3., 7.]));
        let n = node("ReduceMin", vec![ints("axes", &[-2]), int("keepdims", 0)]);
        let r = reduce(&n, &[Some(&x)], f32::INFINITY, nan_min).unwrap();
        assert_eq!(r, from_f32s(vec![3], vec![3., -1., -5.]));
        let n = node("ReduceMin", vec![ints("axes", &[0, 0])]);
        assert!(reduce(&n, &[Some(&x)], f32::INFINITY, nan_min).is_err());
        let nan = from_f32s(vec![2], vec![1., f32::NAN]);
        let r = reduce(&node("ReduceMin", vec![]), &[Some(&nan)], f32::INFINITY, nan_min).unwrap();
        assert!(f32s(&r, "r").unwrap().data[0].is_nan());
    }

    #[test]
    fn casts() {
        let x = from_f32s(vec![6], vec![-3.7, 2.5, 254.9, 300., f32::NAN, f32::NEG_INFINITY]);
        let r = cast(&node("Cast", vec![int("to", 2)]), &[Some(&x)]).unwrap();
        assert_eq!(r.bytes(), [0, 2, 254, 255, 0, 0]);
        let r = cast(&node("Cast", vec![int("to", 3)]), &[Some(&x)]).unwrap();
        assert_eq!(r.bytes(), [(-3i8) as u8, 2, 127, 127, 0, 128]);
        let u = Tensor::new(DataType::U8, vec![2], &[7, 255]).unwrap();
        let r = cast(&node("Cast", vec![int("to", 1)]), &[Some(&u)]).unwrap();
        assert_eq!(r, from_f32s(vec![2], vec![7., 255.]));
        assert!(cast(&node("Cast", vec![int("to", 11)]), &[Some(&u)]).is_err());
    }
}
