//! Criterion benches of the operators through the `qdq` crate (throughput in elements/s).
//!
//! Run with `cargo bench -p qdq-benches`. Sizes cover L1 (4 Ki) and L2 (64 Ki); the full
//! matrix (every type, layout, ISA and a same-run roofline) is built on top of this file.

use criterion::{criterion_group, criterion_main, BenchmarkId, Criterion, Throughput};
use qdq::{DataType, Layout, Packed, QuantizeOptions, Values, ValuesMut};
use std::hint::black_box;

const SIZES: [usize; 2] = [4 << 10, 64 << 10];

fn data(n: usize) -> Vec<f32> {
    let mut s = 0x2545_f491_4f6c_dd1du64;
    (0..n)
        .map(|_| {
            s ^= s << 13;
            s ^= s >> 7;
            s ^= s << 17;
            ((s >> 40) as f32 / (1u64 << 24) as f32 - 0.5) * 8.0
        })
        .collect()
}

fn quantize(c: &mut Criterion) {
    let mut g = c.benchmark_group("quantize");
    for n in SIZES {
        let x = data(n);
        let mut y = vec![0u8; n];
        g.throughput(Throughput::Elements(n as u64));
        for out in [DataType::U8, DataType::E4M3Fn] {
            let opts = QuantizeOptions::new(out);
            g.bench_with_input(BenchmarkId::new(format!("f32-{out}-per-tensor"), n), &n, |b, _| {
                b.iter(|| qdq::quantize(Values::F32(&x), Values::F32(&[0.05]), None, Layout::PerTensor, &opts, &mut y))
            });
        }
    }
    g.finish();
}

fn dequantize(c: &mut Criterion) {
    let mut g = c.benchmark_group("dequantize");
    for n in SIZES {
        let x: Vec<u8> = (0..n).map(|i| (i * 7) as u8).collect();
        let mut y = vec![0f32; n];
        g.throughput(Throughput::Elements(n as u64));
        g.bench_with_input(BenchmarkId::new("u8-f32-per-tensor", n), &n, |b, _| {
            b.iter(|| {
                let xp = Packed { dtype: DataType::U8, len: n, data: &x };
                qdq::dequantize(xp, Values::F32(&[0.05]), None, Layout::PerTensor, ValuesMut::F32(black_box(&mut y)))
            })
        });
    }
    g.finish();
}

criterion_group!(benches, quantize, dequantize);
criterion_main!(benches);
