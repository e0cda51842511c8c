//! Allocation audit with a counting global allocator (`harness = false`, so no test-harness
//! thread allocates concurrently; rayon's workers are counted, on purpose).
//!
//! * The slice API (`quantize*`, `dequantize*`, `dynamic_quantize*` of both crates)
//!   allocates nothing on the calling thread or anywhere else when it runs sequentially,
//!   on every ISA, for every layout, packed and float8 outputs included.
//! * In parallel mode (threshold 0), called from a worker of a rayon pool, a call
//!   allocates nothing either: rayon's jobs live on the stack and the work queues are
//!   reused. From outside the pool, rayon boxes the job of each helper it spawns.
//! * The tensor API allocates exactly its outputs: one buffer per output tensor plus its
//!   shape vector (none for a scalar), plus the `Vec` of outputs for `run_node`.
//!
//! Prints `N passed, M failed` and exits non-zero on a failure.

use std::alloc::{GlobalAlloc, Layout as AllocLayout, System};
use std::cell::Cell;
use std::sync::atomic::{AtomicUsize, Ordering};

use qdq::{
    Attribute, Config, DataType, Layout, Opset, Packed, PackedMut, Params, QuantizeAttributes, TensorRef, Values,
};

struct Counting;

static ALLOCATIONS: AtomicUsize = AtomicUsize::new(0);

thread_local! {
    // Allocations of this thread alone (const-initialised: reading it never allocates).
    static HERE: Cell<usize> = const { Cell::new(0) };
}

fn note() {
    ALLOCATIONS.fetch_add(1, Ordering::Relaxed);
    // `try_with`: the allocator also runs while thread-locals are being torn down.
    let _ = HERE.try_with(|c| c.set(c.get() + 1));
}

// SAFETY: forwards every call to the system allocator unchanged; only counts.
unsafe impl GlobalAlloc for Counting {
    unsafe fn alloc(&self, layout: AllocLayout) -> *mut u8 {
        note();
        // SAFETY: same contract as the caller's.
        unsafe { System.alloc(layout) }
    }
    unsafe fn alloc_zeroed(&self, layout: AllocLayout) -> *mut u8 {
        note();
        // SAFETY: same contract as the caller's.
        unsafe { System.alloc_zeroed(layout) }
    }
    unsafe fn realloc(&self, ptr: *mut u8, layout: AllocLayout, new_size: usize) -> *mut u8 {
        note();
        // SAFETY: same contract as the caller's.
        unsafe { System.realloc(ptr, layout, new_size) }
    }
    unsafe fn dealloc(&self, ptr: *mut u8, layout: AllocLayout) {
        // SAFETY: same contract as the caller's.
        unsafe { System.dealloc(ptr, layout) }
    }
}

#[global_allocator]
static GLOBAL: Counting = Counting;

/// Allocations made anywhere in the process while `f` runs.
fn count(f: impl FnOnce()) -> usize {
    let before = ALLOCATIONS.load(Ordering::SeqCst);
    f();
    ALLOCATIONS.load(Ordering::SeqCst) - before
}

/// Allocations made on the calling thread while `f` runs. For calls that never leave the
/// calling thread: rayon's idle workers from earlier checks may still allocate now and
/// then (parking bookkeeping), which [`count`] would attribute to `f`.
fn count_here(f: impl FnOnce()) -> usize {
    let before = HERE.with(Cell::get);
    f();
    HERE.with(Cell::get) - before
}

struct Data {
    x: Vec<f32>,
    scales: Vec<f32>,
    codes: Vec<u8>,
    y: Vec<u8>,
    out: Vec<f32>,
    zeros: Vec<u8>,
}

/// Every slice-API call of both crates on `n = rows * 64` elements with configuration
/// `cfg` (`None` = qdq-ref); panics on an error. Buffers are allocated by the caller.
fn slice_calls(cfg: Option<&Config>, d: &mut Data, rows: usize) {
    let n = rows * 64;
    let layouts = [
        (Layout::PerTensor, 1),
        (Layout::PerAxis { outer: rows, axis_len: 64, inner: 1 }, 64),
        (Layout::PerAxis { outer: 1, axis_len: rows, inner: 64 }, rows),
        (Layout::Blocked { outer: rows, axis_len: 64, inner: 1, block: 32 }, rows * 2),
    ];
    for (layout, ns) in layouts {
        let s = Values::F32(&d.scales[..ns]);
        for out in [DataType::U8, DataType::I16, DataType::I4, DataType::U2, DataType::E4M3Fn, DataType::E2M3] {
            let y = &mut d.y[..out.byte_len(n).unwrap()];
            let x = &d.x[..n];
            let params = Params::new(s, layout);
            match cfg {
                None => qdq_ref::quantize(x, &params, PackedMut::new(out, y)).unwrap(),
                Some(c) => {
                    qdq::quantize_with(c, x, &params, PackedMut::new(out, y)).unwrap();
                    let half = (n / 2) & !3;
                    let cut = out.byte_len(half).unwrap();
                    qdq::quantize_range_with(c, x, &params, half..n, PackedMut::new(out, &mut y[cut..])).unwrap();
                }
            }
        }
        for t in [DataType::U8, DataType::I4, DataType::E4M3Fn] {
            let x = Packed { dtype: t, len: n, data: &d.codes[..t.byte_len(n).unwrap()] };
            let zp_bytes = &d.zeros[..];
            let zp =
                (!t.is_minifloat()).then(|| Packed { dtype: t, len: ns, data: &zp_bytes[..t.byte_len(ns).unwrap()] });
            let y = &mut d.out[..n];
            let params = match zp {
                Some(z) => Params::new(s, layout).zero_points(z),
                None => Params::new(s, layout),
            };
            match cfg {
                None => qdq_ref::dequantize(x, &params, y).unwrap(),
                Some(c) => {
                    qdq::dequantize_with(c, x, &params, &mut *y).unwrap();
                    qdq::dequantize_range_with(c, x, &params, 3..n, &mut y[3..]).unwrap();
                }
            }
        }
    }
    match cfg {
        None => drop(qdq_ref::dynamic_quantize(&d.x[..n], &mut d.y[..n]).unwrap()),
        Some(c) => drop(qdq::dynamic_quantize_with(c, &d.x[..n], &mut d.y[..n]).unwrap()),
    }
}

fn data(n: usize) -> Data {
    Data {
        x: (0..n).map(|i| (i % 977) as f32 * 0.37 - 150.0).collect(),
        scales: (0..n.max(64)).map(|i| 0.25 + (i % 13) as f32 * 0.1).collect(),
        codes: (0..n * 2).map(|i| (i * 37 % 251) as u8).collect(),
        y: vec![0; n * 2],
        out: vec![0.0; n],
        zeros: vec![0; n],
    }
}

fn slice_api_sequential_allocates_nothing() {
    let rows = 40; // 2,560 elements: vector body and tails
    let mut d = data(rows * 64);
    let mut calls: Vec<(String, Option<Config>)> = vec![("qdq-ref".into(), None)];
    for isa in qdq::Isa::available() {
        calls.push((format!("{isa}/seq"), Some(Config::sequential().with_isa(isa))));
    }
    for (name, cfg) in calls {
        slice_calls(cfg.as_ref(), &mut d, rows); // warm up (CPU feature detection caches)
        let n = count(|| slice_calls(cfg.as_ref(), &mut d, rows));
        assert_eq!(n, 0, "{name}: the slice API allocated {n} times");
        println!("  {name}: 0 allocations");
    }
}

/// Calls of [`slice_calls`] that take the parallel path (`quantize_with` and
/// `dequantize_with` per layout, DynamicQuantizeLinear's range and quantize passes); the
/// `*_range` calls always run on the calling thread.
const PARALLEL_CALLS: usize = 4 * (6 + 3) + 2;

fn slice_api_parallel_allocates_nothing_once_the_pool_is_up() {
    let rows = 4096; // 256 Ki elements, with the threshold at 0: several parts a call
    let mut d = data(rows * 64);
    let pool = rayon::ThreadPoolBuilder::new().num_threads(2).build().unwrap();
    for isa in qdq::Isa::available() {
        let cfg = Config { parallel_threshold: 0, ..Config::default() }.with_isa(isa);
        // Called from a worker of the pool (an engine running its graph on rayon): qdq's
        // helpers are rayon::join jobs on the stack and the worker deques are reused, so
        // nothing is allocated at all.
        let n = pool.install(|| {
            slice_calls(Some(&cfg), &mut d, rows);
            count(|| {
                for _ in 0..3 {
                    slice_calls(Some(&cfg), &mut d, rows)
                }
            })
        });
        assert_eq!(n, 0, "{isa}/parallel inside the pool: {n} allocations");
        // Called from outside the pool: the calling thread works too, beside threads - 1
        // helpers spawned into rayon's global pool. rayon boxes each spawned job, and its
        // global queue is a linked list of 63-slot blocks. qdq itself allocates nothing.
        slice_calls(Some(&cfg), &mut d, rows);
        let rounds = 10;
        let calls = rounds * PARALLEL_CALLS;
        let helpers = rayon::current_num_threads() - 1;
        let n = count(|| {
            for _ in 0..rounds {
                slice_calls(Some(&cfg), &mut d, rows)
            }
        });
        let bound = calls * helpers + (calls * helpers).div_ceil(63);
        assert!(n <= bound, "{isa}/parallel from outside the pool: {n} allocations for {calls} calls");
        println!(
            "  {isa}/parallel: 0 allocations inside a 2-thread pool; {n} from outside ({} threads: \
             rayon's boxed jobs and queue blocks, <= {bound}) for {calls} calls",
            helpers + 1,
        );
    }
}

fn tensor_api_allocates_only_outputs() {
    let xb: Vec<u8> = (0..24).flat_map(|i| (i as f32 * 0.5).to_le_bytes()).collect();
    let sb: Vec<u8> = [0.5f32, 0.25, 2.0].iter().flat_map(|s| s.to_le_bytes()).collect();
    let x = TensorRef { dtype: DataType::F32, shape: &[2, 3, 4], data: &xb };
    let s = TensorRef { dtype: DataType::F32, shape: &[3], data: &sb };
    let zp = TensorRef { dtype: DataType::I4, shape: &[3], data: &[0x21, 0x03] };
    let v25 = Opset::onnx(25);
    let a = QuantizeAttributes { axis: Some(1), ..Default::default() };
    // Warm up.
    let q = qdq::quantize_linear(v25, x, s, Some(zp), &a).unwrap();
    // One output tensor: its data buffer and its shape vector.
    let n = count_here(|| drop(qdq::quantize_linear(v25, x, s, Some(zp), &a).unwrap()));
    assert_eq!(n, 2, "quantize_linear: {n} allocations (want data + shape)");
    let d = qdq::DequantizeAttributes { axis: Some(1), ..Default::default() };
    let n = count_here(|| drop(qdq::dequantize_linear(v25, q.view(), s, Some(zp), &d).unwrap()));
    assert_eq!(n, 2, "dequantize_linear: {n} allocations (want data + shape)");
    // Three outputs: the tensor y (data + shape) and two scalars returned by value.
    let n = count_here(|| drop(qdq::dynamic_quantize_linear(Opset::onnx(11), x).unwrap()));
    assert_eq!(n, 2, "dynamic_quantize_linear: {n} allocations (want y's data + shape)");
    // run_node: the outputs plus the Vec holding them.
    let attrs = [Attribute { name: "axis", value: 1 }];
    let n =
        count_here(|| drop(qdq::run_node("QuantizeLinear", v25, &[Some(x), Some(s), Some(zp)], &attrs, 1).unwrap()));
    assert_eq!(n, 3, "run_node(QuantizeLinear): {n} allocations (want data + shape + Vec)");
    let n = count_here(|| drop(qdq::run_node("DynamicQuantizeLinear", Opset::onnx(11), &[Some(x)], &[], 3).unwrap()));
    assert_eq!(n, 5, "run_node(DynamicQuantizeLinear): {n} allocations (want y's data + shape, two scalars, Vec)");
    println!("  tensor API: outputs only (Q 2, DQ 2, DynQ 4, run_node +1)");
}

fn main() {
    let checks: [(&str, fn()); 3] = [
        ("slice_api_sequential_allocates_nothing", slice_api_sequential_allocates_nothing),
        (
            "slice_api_parallel_allocates_nothing_once_the_pool_is_up",
            slice_api_parallel_allocates_nothing_once_the_pool_is_up,
        ),
        ("tensor_api_allocates_only_outputs", tensor_api_allocates_only_outputs),
    ];
    let (mut passed, mut failed) = (0, 0);
    for (name, check) in checks {
        match std::panic::catch_unwind(check) {
            Ok(()) => {
                passed += 1;
                println!("ok {name}");
            }
            Err(_) => {
                failed += 1;
                println!("FAILED {name}");
            }
        }
    }
    println!("{passed} passed, {failed} failed");
    if failed > 0 {
        std::process::exit(1);
    }
}
