//! The C ABI's slice level allocates nothing on success, with or without the engine's
//! pool (a counting global allocator; `harness = false`, so no harness thread allocates
//! meanwhile). Prints `N passed, M failed` and exits non-zero on a failure.

use std::alloc::{GlobalAlloc, Layout as AllocLayout, System};
use std::ffi::c_void;
use std::ptr::{null, null_mut};
use std::sync::atomic::{AtomicUsize, Ordering};

use qdq::qdq_status::QDQ_OK;
use qdq::*;

struct Counting;

static ALLOCATIONS: AtomicUsize = AtomicUsize::new(0);

// SAFETY: forwards every call to the system allocator unchanged; only counts.
unsafe impl GlobalAlloc for Counting {
    unsafe fn alloc(&self, layout: AllocLayout) -> *mut u8 {
        ALLOCATIONS.fetch_add(1, Ordering::SeqCst);
        // SAFETY: same contract as the caller's.
        unsafe { System.alloc(layout) }
    }
    unsafe fn dealloc(&self, ptr: *mut u8, layout: AllocLayout) {
        // SAFETY: same contract as the caller's.
        unsafe { System.dealloc(ptr, layout) }
    }
}

#[global_allocator]
static GLOBAL: Counting = Counting;

/// A "pool" that runs the tasks on the calling thread, last first (no threads: spawning
/// one would allocate).
unsafe extern "C" fn reverse_pool(_ctx: *mut c_void, n: usize, task: qdq_task_fn, task_ctx: *mut c_void) {
    if let Some(task) = task {
        for i in (0..n).rev() {
            // SAFETY: qdq's callback with its own context, as the pool contract says.
            unsafe { task(task_ctx, i) };
        }
    }
}

fn main() {
    let n = 200_000usize;
    let x: Vec<f32> = (0..n).map(|i| (i % 977) as f32 * 0.37 - 150.0).collect();
    let scales: Vec<f32> = (0..2 * (n / 64)).map(|i| 0.25 + (i % 13) as f32 * 0.1).collect();
    let mut y = vec![0u8; n];
    let mut back = vec![0f32; n];
    let mut mask = vec![0u8; n / 8];
    let mut ds = vec![0f32; 2 * (n / 64)];
    let shape = [(n / 64) as i64, 64];
    let pool = qdq_thread_pool { parallel_for: Some(reverse_pool), ctx: null_mut(), threads: 4 };
    let pooled = qdq_config { isa: 0, pool: &pool, parallel_threshold: 1 };
    let (mut passed, mut failed) = (0, 0);
    for (name, cfg) in [("calling thread", null()), ("engine pool", &pooled as *const qdq_config)] {
        let mut layouts = [qdq_layout::default(); 3];
        // SAFETY: valid shape and outputs.
        unsafe {
            assert_eq!(qdq_layout_per_axis(shape.as_ptr(), 2, 1, &mut layouts[1]), QDQ_OK);
            assert_eq!(qdq_layout_blocked(shape.as_ptr(), 2, 1, 32, &mut layouts[2]), QDQ_OK);
        }
        for (k, layout) in layouts.into_iter().enumerate() {
            let n_scales = [1, 64, 2 * (n / 64)][k];
            let params = qdq_params {
                scale_dtype: 1,
                scales: scales.as_ptr().cast(),
                n_scales,
                zero_point_dtype: 0,
                zero_points: null(),
                n_zero_points: 0,
                layout,
                no_saturate: 0,
                precision: 0,
            };
            let (xp, yp, bp) = (x.as_ptr().cast::<c_void>(), y.as_mut_ptr().cast::<c_void>(), back.as_mut_ptr().cast());
            let before = ALLOCATIONS.load(Ordering::SeqCst);
            // SAFETY: every pointer is valid for the stated lengths.
            let statuses = unsafe {
                [
                    qdq_quantize(cfg, 1, xp, n, &params, 3, yp, n),
                    qdq_quantize_range(cfg, 1, xp, n, &params, 64, n, 22, yp, n),
                    qdq_dequantize(cfg, 3, yp, n, &params, 1, bp, 4 * n),
                    qdq_dequantize_range(cfg, 3, yp, n, &params, 3, n, 1, bp, 4 * n),
                    qdq_quantize_train(cfg, 1, xp, n, &params, 3, yp, n, mask.as_mut_ptr(), mask.len()),
                    qdq_fake_quantize_backward(
                        cfg,
                        1,
                        xp,
                        1,
                        xp,
                        n,
                        &params,
                        3,
                        1.0,
                        1.0,
                        1,
                        bp,
                        4 * n,
                        ds.as_mut_ptr(),
                        n_scales,
                        null_mut(),
                        0,
                    ),
                ]
            };
            let mut scale = 0f32;
            let mut zp = 0u8;
            // SAFETY: as above.
            let dynamic = unsafe { qdq_dynamic_quantize(cfg, x.as_ptr(), n, y.as_mut_ptr(), n, &mut scale, &mut zp) };
            let allocations = ALLOCATIONS.load(Ordering::SeqCst) - before;
            let ok = statuses.iter().all(|&s| s == QDQ_OK) && dynamic == QDQ_OK && allocations == 0;
            println!(
                "{} slice-level calls, {name}, layout {k}: {allocations} allocations, statuses {statuses:?} {dynamic:?}",
                if ok { "ok  " } else { "FAIL" }
            );
            if ok {
                passed += 1
            } else {
                failed += 1
            }
        }
    }
    println!("{passed} passed, {failed} failed");
    if failed > 0 {
        std::process::exit(1);
    }
}
