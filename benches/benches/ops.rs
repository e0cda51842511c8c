//! Criterion benches of the operators through the `qdq` crate, throughput in elements/s.
//!
//! ```text
//! cargo bench -p qdq-benches                                   # the full matrix (long: ~1 h)
//! cargo bench -p qdq-benches -- quantize/f32-u8/per-tensor     # one case, every ISA and size
//! cargo bench -p qdq-benches -- 'quantize/f32-(u8|i8)/per-tensor/avx512/1Mi'
//! cargo bench -p qdq-benches -- roofline/f32-u8                # its roofline kernel
//! cargo bench -p qdq-benches -- --list                         # every benchmark id
//! ```
//!
//! Groups: `quantize`, `dequantize`, `dynamic_quantize`, `train`, `scaled` (the quantizers
//! that compute their own scales, [`qdq_benches::scaled_matrix`]: per-row, blockwise,
//! onnxruntime's mode, MX, NVFP4; `scaled/<op>/f32-<to>/<layout>/<mode>/<size>`) and
//! `roofline`. An id is
//! `<group>/<from>-<to>/<layout>[/e8m0]/<mode>/<size>` (in `train`,
//! `train/<op>/<from>-<to>/<layout>/<mode>/<size>`):
//!
//! * cases: [`qdq_benches::full_matrix`] — f32 to every quantized type, f16 / bf16 to i8,
//!   every quantized type to f32, i8 / i4 to f16 / bf16, on five layouts (`per-tensor`,
//!   `per-axis-last64`, `per-axis-first64`, `blocked-last32`, `blocked-middle32`); blocked
//!   e8m0-scaled dequantize (the MX layout, `/e8m0`); DynamicQuantizeLinear;
//! * modes: each ISA the CPU has, forced and single-threaded (`avx512`, `avx2`, `neon`,
//!   `scalar`), and `default` (`Config::default()`: best ISA, rayon over the whole pool
//!   from 64 Ki elements, so the 4 Ki size stays on one thread);
//! * sizes: `4Ki` (L1), `64Ki` (L2), `1Mi` (L3), `16Mi` (DRAM) elements;
//! * `train`: [`qdq_benches::training_matrix`] — `quantize_train` (forward with mask),
//!   `quantize_backward`, `fake_quantize`, `fake_quantize_backward` (dx, ds, dzp) from f32
//!   to u8 / i8 / i4 / e4m3fn, per-tensor, per-axis-first64 and blocked-last32, beside the
//!   inference `quantize` and `dequantize` of the same cases, at `1Mi` and `16Mi`.
//!
//! `roofline/<from>-<to>/<threads>t/<size>` is the cheapest kernel moving the bytes of the
//! per-tensor case of that type pair (x in, y out; copies and an xor fold, widest vectors
//! the CPU has), on 1 thread and on the whole rayon pool, in elements/s of the same element
//! count: divide a case's figure by it to get the fraction of what the memory system allows
//! (the blocked layouts also read their scales: at most 1/8 byte more per element).
//! `cargo xtask bench` prints the same fractions measured side by side.
//!
//! Short measurements keep the suite finite: 0.3 s warm-up, 1 s measurement, 10 flat
//! samples per benchmark.

use std::time::Duration;

use criterion::{criterion_group, criterion_main, BenchmarkGroup, BenchmarkId, Criterion, SamplingMode, Throughput};
use qdq_benches::{
    full_matrix, scaled_matrix, size_name, training_matrix, Case, Mode, Op, Prepared, SIZES, TRAIN_SIZES,
};
use qdq_measure::Roofline;

fn mode_id(mode: Mode) -> &'static str {
    match mode {
        Mode::Single(isa) => isa.name(),
        Mode::Default => "default",
    }
}

fn group<'a>(c: &'a mut Criterion, name: &str) -> BenchmarkGroup<'a, criterion::measurement::WallTime> {
    let mut g = c.benchmark_group(name);
    g.sampling_mode(SamplingMode::Flat);
    g
}

fn bench_op(c: &mut Criterion, op: Op) {
    let cases: Vec<Case> = full_matrix().into_iter().filter(|k| k.op == op).collect();
    bench_cases(c, op.name(), &cases, &SIZES);
}

fn bench_cases(c: &mut Criterion, name: &str, cases: &[Case], sizes: &[usize]) {
    let modes = Mode::all().unwrap_or_else(|e| panic!("{e}"));
    let mut g = group(c, name);
    for case in cases {
        for &n in sizes {
            g.throughput(Throughput::Elements(n as u64));
            // Built on first use, so filtered-out benchmarks cost nothing.
            let mut prepared: Option<Prepared> = None;
            for &mode in &modes {
                let cfg = mode.config();
                let label = if name == case.op.name() { case.name() } else { case.full_name() };
                let id = BenchmarkId::new(format!("{label}/{}", mode_id(mode)), size_name(n));
                g.bench_function(id, |b| {
                    let p = prepared.get_or_insert_with(|| case.prepare(n));
                    b.iter(|| p.run(&cfg).expect("benchmark call"))
                });
            }
        }
    }
    g.finish();
}

fn quantize(c: &mut Criterion) {
    bench_op(c, Op::Quantize);
}

fn dequantize(c: &mut Criterion) {
    bench_op(c, Op::Dequantize);
}

fn dynamic_quantize(c: &mut Criterion) {
    bench_op(c, Op::DynamicQuantize);
}

/// Training mode next to the inference ops of the same cases: `train/<op>/<from>-<to>/...`.
fn train(c: &mut Criterion) {
    bench_cases(c, "train", &training_matrix(), &TRAIN_SIZES);
}

/// The quantizers that compute their own scales: `scaled/<op>/<from>-<to>/...`.
fn scaled(c: &mut Criterion) {
    for (case, n) in scaled_matrix() {
        bench_cases(c, "scaled", &[case], &[n]);
    }
}

fn roofline(c: &mut Criterion) {
    let mut pairs: Vec<Case> = Vec::new();
    for case in full_matrix() {
        if !pairs.iter().any(|p| p.from == case.from && p.to == case.to) {
            pairs.push(Case { shape: qdq_benches::Shape::PerTensor, ..case });
        }
    }
    let pool_threads = rayon::current_num_threads();
    let mut g = group(c, "roofline");
    for case in &pairs {
        for n in SIZES {
            g.throughput(Throughput::Elements(n as u64));
            let mut kernel: Option<Roofline> = None;
            let mut threads = vec![1];
            if pool_threads > 1 {
                threads.push(pool_threads);
            }
            for t in threads {
                let id = BenchmarkId::new(format!("{}-{}/{t}t", case.from.name(), case.to.name()), size_name(n));
                g.bench_function(id, |b| {
                    let k = kernel.get_or_insert_with(|| {
                        let (i, o) = case.io_bytes(n);
                        Roofline::calibrated(i, o, 1)
                    });
                    b.iter(|| k.run(t))
                });
            }
        }
    }
    g.finish();
}

fn config() -> Criterion {
    Criterion::default()
        .warm_up_time(Duration::from_millis(300))
        .measurement_time(Duration::from_secs(1))
        .sample_size(10)
}

criterion_group! {
    name = benches;
    config = config();
    targets = quantize, dequantize, dynamic_quantize, train, scaled, roofline
}
criterion_main!(benches);
