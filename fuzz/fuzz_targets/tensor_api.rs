//! Arbitrary type tags, shapes, attributes and byte buffers through the tensor-level API of
//! both crates: each call must return an error or a result (never panic, overflow or read out
//! of bounds), and both crates must agree.
#![no_main]

use libfuzzer_sys::fuzz_target;
use qdq_ref::{Attribute, DataType, Opset, TensorRef};

struct Bytes<'a>(&'a [u8]);

impl<'a> Bytes<'a> {
    fn u8(&mut self) -> u8 {
        let (b, rest) = self.0.split_first().map_or((0, &[][..]), |(b, r)| (*b, r));
        self.0 = rest;
        b
    }
    fn i64(&mut self) -> i64 {
        match self.u8() % 4 {
            0 => (self.u8() as i8) as i64,
            1 => i64::MAX - self.u8() as i64,
            2 => i64::MIN + self.u8() as i64,
            _ => i64::from_le_bytes(std::array::from_fn(|_| self.u8())),
        }
    }
    fn take(&mut self, n: usize) -> &'a [u8] {
        let n = n.min(self.0.len());
        let (a, b) = self.0.split_at(n);
        self.0 = b;
        a
    }
}

fuzz_target!(|data: &[u8]| {
    let mut b = Bytes(data);
    let pick_type = |v: u8| DataType::ALL[v as usize % DataType::ALL.len()];
    let op = ["QuantizeLinear", "DequantizeLinear", "DynamicQuantizeLinear"][b.u8() as usize % 3];
    let opset = if b.u8() % 8 == 0 { Opset::microsoft() } else { Opset::onnx(b.u8() as i64 % 32) };
    let n_inputs = b.u8() as usize % 4;
    let mut shapes: Vec<Vec<usize>> = Vec::new();
    let mut types = Vec::new();
    for _ in 0..n_inputs {
        types.push(pick_type(b.u8()));
        let rank = b.u8() as usize % 5;
        let shape: Vec<usize> = (0..rank)
            .map(|_| match b.u8() {
                255 => usize::MAX,
                254 => usize::MAX / 3,
                v => v as usize % 7,
            })
            .collect();
        shapes.push(shape);
    }
    let mut buffers = Vec::new();
    for _ in 0..n_inputs {
        let len = b.u8() as usize * 2;
        buffers.push(b.take(len));
    }
    let names = ["axis", "saturate", "block_size", "output_dtype", "precision", "bogus"];
    let n_attrs = b.u8() as usize % 4;
    let attrs: Vec<Attribute> = (0..n_attrs).map(|_| Attribute { name: names[b.u8() as usize % names.len()], value: b.i64() }).collect();
    let inputs: Vec<Option<TensorRef>> = (0..n_inputs)
        .map(|i| if buffers[i].is_empty() && i == 2 { None } else { Some(TensorRef { dtype: types[i], shape: &shapes[i], data: buffers[i] }) })
        .collect();
    let outputs = 1 + b.u8() as usize % 3;
    let r = qdq_ref::run_node(op, opset, &inputs, &attrs, outputs);
    let f = qdq::run_node(op, opset, &inputs, &attrs, outputs);
    match (&r, &f) {
        (Ok(a), Ok(b)) => assert_eq!(a.len(), b.len()),
        (Err(a), Err(b)) => assert_eq!(a.kind(), b.kind()),
        _ => panic!("the crates disagree: {r:?} vs {f:?}"),
    }
});
