//! One bench case in a loop, for instruction-count profiles (this VM exposes no hardware
//! counters to `perf stat`; valgrind's callgrind counts instructions instead):
//!
//! ```sh
//! cargo build --release -p qdq-benches --example profile
//! valgrind --tool=callgrind --callgrind-out-file=/dev/null \
//!     target/release/examples/profile quantize/f32-u8/per-tensor avx2 1048576 11
//! ```
//!
//! Arguments: a case name as `cargo xtask bench` prints it, an ISA (`scalar`, `avx2`,
//! `avx512`, `neon`; valgrind runs AVX2 but not AVX-512 code), the element count and the
//! number of calls (`profile --list` prints the case names). The instruction count per
//! element of the kernel alone is the difference between two runs with different call
//! counts divided by the extra elements, which cancels the setup (data generation,
//! allocation, process start).
//! `cargo xtask profile CASE` does that.
//!
//! `CHANNELS=N` in the environment gives a `per-axis-last` case `N` channels instead of its
//! own (the row length of the per-axis kernels); `N` must divide ELEMENTS.
//!
//! `THRESHOLD=N` runs the default parallel mode (rayon's global pool, `RAYON_NUM_THREADS`
//! threads) with `Config::parallel_threshold` set to `N`, instead of one thread: the probe
//! for where the pool starts to pay on a host.
//!
//! `GAP_US=N` sleeps `N` µs before each call and times the calls alone (median and best
//! rates): with the `THRESHOLD` probe, a call that finds the pool's threads asleep.
//!
//! `INSIDE=1` makes the calls of the plain loop (not those of `ALT` or `GAP_US`) from a
//! worker of rayon's global pool (an engine that runs its graph on rayon) instead of from
//! the main thread; with the `THRESHOLD` probe, qdq's helpers are then `rayon::join` jobs
//! on that worker's stack.
//!
//! `ALT=1` alternates the calls between one and two of each step's four quotients by the
//! divide instruction on AVX2 (`qdq::tuning::set_avx2_extra_divide`), times each call, and
//! prints both settings' rates and their ratio: an A/B of the two in one process.

use qdq::{Config, Isa};
use qdq_benches::{full_matrix, scaled_matrix, training_matrix};
use std::process::ExitCode;

fn main() -> ExitCode {
    let args: Vec<String> = std::env::args().skip(1).collect();
    if args.as_slice() == ["--list"] {
        let cases =
            full_matrix().into_iter().chain(training_matrix()).chain(scaled_matrix().into_iter().map(|(c, _)| c));
        for c in cases {
            println!("{}", c.full_name());
        }
        return ExitCode::SUCCESS;
    }
    let [case, isa, n, iters] = args.as_slice() else {
        eprintln!("usage: profile CASE ISA ELEMENTS CALLS   (e.g. quantize/f32-u8/per-tensor avx2 1048576 11)");
        return ExitCode::from(2);
    };
    let channels = match std::env::var("CHANNELS") {
        Err(_) => None,
        Ok(v) => match v.parse::<usize>() {
            Ok(c) if c > 0 => Some(c),
            _ => {
                eprintln!("error: CHANNELS must be a positive integer, got {v:?}");
                return ExitCode::from(2);
            }
        },
    };
    let Some(mut c) = full_matrix()
        .into_iter()
        .chain(training_matrix())
        .chain(scaled_matrix().into_iter().map(|(c, _)| c))
        .find(|c| c.full_name() == *case)
    else {
        eprintln!("error: no case named {case:?} (see `cargo bench -p qdq-benches -- --list`)");
        return ExitCode::from(2);
    };
    if let (Some(ch), qdq_benches::Shape::PerAxisLast { .. }) = (channels, c.shape) {
        c.shape = qdq_benches::Shape::PerAxisLast { channels: ch };
    }
    let isa = match Isa::from_name(isa).map(Isa::require) {
        Some(Ok(isa)) => isa,
        Some(Err(e)) => {
            eprintln!("error: {e}");
            return ExitCode::from(2);
        }
        None => {
            eprintln!("error: {isa:?} is not an ISA name (scalar, avx2, avx512, neon)");
            return ExitCode::from(2);
        }
    };
    let (Ok(n), Ok(iters)) = (n.parse::<usize>(), iters.parse::<usize>()) else {
        eprintln!("error: ELEMENTS and CALLS must be unsigned integers");
        return ExitCode::from(2);
    };
    let cfg = match std::env::var("THRESHOLD") {
        Err(_) => Config::sequential().with_isa(isa),
        Ok(v) => match v.parse::<usize>() {
            Ok(t) => Config { parallel_threshold: t, ..Config::default() }.with_isa(isa),
            Err(_) => {
                eprintln!("error: THRESHOLD must be an unsigned integer, got {v:?}");
                return ExitCode::from(2);
            }
        },
    };
    let mut p = c.prepare(n);
    // ALT=1: alternate the calls between one and two AVX2 quotients per step by the divider
    // (`qdq::tuning`), timing each call; prints both medians and their ratio.
    if std::env::var_os("ALT").is_some() {
        let mut t = [Vec::new(), Vec::new()];
        for i in 0..iters {
            qdq::tuning::set_avx2_extra_divide(Some(i % 2 == 1));
            let start = std::time::Instant::now();
            if let Err(e) = p.run(&cfg) {
                eprintln!("error: {e}");
                return ExitCode::FAILURE;
            }
            t[i % 2].push(start.elapsed().as_secs_f64());
        }
        for v in &mut t {
            v.sort_by(f64::total_cmp);
        }
        let at = |v: &[f64], q: usize| v.get(v.len() * q / 100).map_or(f64::NAN, |s| n as f64 / s / 1e9);
        let (one, two) = (&t[0], &t[1]);
        println!(
            "{case} {} n={n}: one divide min {:.3} p25 {:.3} median {:.3} | two min {:.3} p25 {:.3} median {:.3} Gelem/s | two / one {:.3}",
            isa.name(),
            at(one, 0),
            at(one, 25),
            at(one, 50),
            at(two, 0),
            at(two, 25),
            at(two, 50),
            at(two, 50) / at(one, 50)
        );
        return ExitCode::SUCCESS;
    }
    // GAP_US=N: sleep N µs before each call (long enough for the pool's threads to fall
    // asleep), time each call alone, and print the calls' median and best rates.
    if let Some(gap) = std::env::var("GAP_US").ok().and_then(|v| v.parse::<u64>().ok()) {
        let mut t = Vec::with_capacity(iters);
        for _ in 0..iters {
            std::thread::sleep(std::time::Duration::from_micros(gap));
            let start = std::time::Instant::now();
            if let Err(e) = p.run(&cfg) {
                eprintln!("error: {e}");
                return ExitCode::FAILURE;
            }
            t.push(start.elapsed().as_secs_f64());
        }
        t.sort_by(f64::total_cmp);
        let at = |q: usize| t.get(t.len() * q / 100).map_or(f64::NAN, |s| n as f64 / s / 1e9);
        println!("{case} {} n={n} gap={gap}us: median {:.3} min-time {:.3} Gelem/s", isa.name(), at(50), at(0));
        return ExitCode::SUCCESS;
    }
    let mut calls = || {
        for _ in 0..iters {
            p.run(&cfg)?;
        }
        Ok::<(), qdq::Error>(())
    };
    // A scope's body runs on a worker of the pool when called from outside it.
    let done = if std::env::var("INSIDE").is_ok_and(|v| v != "0") { rayon::scope(|_| calls()) } else { calls() };
    if let Err(e) = done {
        eprintln!("error: {e}");
        return ExitCode::FAILURE;
    }
    // Printing the checksum keeps the calls observable.
    println!("{case} {} n={n} calls={iters} checksum={:016x}", isa.name(), p.output_checksum());
    ExitCode::SUCCESS
}
