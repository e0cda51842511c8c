//! `cargo xtask <command>`: see `usage()`.

use std::io::Write;
use std::path::PathBuf;
use std::process::ExitCode;

use xtask::bench;
use xtask::buildcheck;
use xtask::capi;
use xtask::conformance;
use xtask::gen_data::{self, Outputs};
use xtask::isacheck;
use xtask::ort_blockwise;
use xtask::profile;
use xtask::vs_ort;
use xtask::Backend;

fn usage() -> &'static str {
    "usage:
  cargo xtask conformance [--backend ref|qdq|capi] [--verbose] [PATH ...]
      Run ONNX node tests. PATH is a test directory (holding model.onnx) or a folder of
      them; default: xtask/data/node. Backend default: qdq; capi runs every node through
      the C ABI (crates/qdq-capi). QDQ_ISA=scalar|avx2|avx512|neon selects the kernels; a
      name that is no ISA, or one this CPU lacks, is an error (for every command).
  cargo xtask gen-data [--node-dir DIR] [--tables-dir DIR]
      Regenerate xtask/data/node and crates/qdq-ref/tests/data with the Python generators
      (venv in target/venv).
  cargo xtask bench [--json] [--quick] [--filter SUBSTR]
      Quick throughput summary of qdq on this machine: every ISA single-threaded and the
      default parallel mode, each next to a roofline kernel moving the same bytes. --json
      prints one JSON object per row; --filter keeps rows whose description (e.g.
      `quantize/f32-u8/per-tensor 1Mi avx512-1t`) contains SUBSTR.
  cargo xtask vs-ort [--quick] [--rounds N] [--filter SUBSTR] [--python PATH] [--sizes N,M]
      qdq against onnxruntime (CPU, 1 and 2 intra-op threads) on the same shapes at 1 Mi
      and 16 Mi elements, alternating rounds; prints qdq/onnxruntime throughput ratios.
      Creates target/venv-ort (onnxruntime, numpy, ml_dtypes) unless --python is given.
  cargo xtask ort-blockwise [--quick] [--python PATH]
      qdq's onnxruntime-compatible blockwise mode against onnxruntime's
      quantize_qdq_matmul_4bits (MlasQDQQuantizeBlockwise) on random weights of several
      shapes, byte for byte on every ISA, sequential and parallel; then both timed on a
      4096 x 4096 weight, blocks of 32 (onnxruntime with its default pool of one thread per
      core; qdq single-threaded and with as many threads). Uses the vs-ort venv
      (target/venv-ort).
  cargo xtask exhaustive
      Release-mode exhaustive checks against qdq-ref on every ISA this CPU has: all 2^32
      f32 inputs through every float8 encoder (saturate 0 and 1) and the float4 / float6
      encoders, every f16 / bf16 pattern through quantize, every code through dequantize.
  cargo xtask profile [--isa ISA] [--elements N] [--extra-calls K] CASE ...
      Instructions per element of each bench case (e.g. quantize/f32-u8/per-tensor),
      counted by valgrind's callgrind as the difference between a run of 1 call and one of
      1 + K calls (default K 4, N 1048576). ISA default: avx2 (valgrind has no AVX-512).
  cargo xtask downstream [--profile dev|release ...]
      Builds xtask/downstream (a crate depending on qdq by path, cargo's default profiles)
      and runs every op on every ISA on the main thread and on a 2 MiB thread; fails if a
      qdq function's stack frame exceeds 256 KiB. Default: the dev and release profiles.
  cargo xtask isa-check [--steps tests,conformance,exhaustive,threads]
      Each ISA of this CPU forced in turn (QDQ_ISA) through the chosen steps (default all):
      the workspace tests, the conformance suite, the exhaustive checks; then the quick
      bench in the default parallel mode at 1, 2, 4, 8 and 16 threads. ISAs this CPU lacks
      (and thread counts above its cores) are printed as skipped; the last lines list the
      ISAs exercised.
  cargo xtask build-time [--dev] [--rounds N]
      Clean release builds of qdq and of gemm 0.18, back to back: seconds, ratio, peak
      compiler memory (--dev adds a clean dev-profile build of qdq; --rounds N alternates
      N pairs and reports the median ratio).
  cargo xtask header [--check]
      Generates include/qdq.h (the C ABI's header) from crates/qdq-capi with cbindgen;
      --check fails if the committed header differs from what the sources generate.
  cargo xtask capi-test [--no-sanitize]
      Builds libqdq.a (cargo build -p qdq-capi), checks include/qdq.h, then compiles with
      strict warnings and runs the C11 tests (crates/qdq-capi/tests/c/test_capi.c), the C++17
      header check and the C example (crates/qdq-capi/examples), under AddressSanitizer and
      UndefinedBehaviorSanitizer unless --no-sanitize. CC / CXX override cc / c++; binaries
      go to target/capi-test."
}

fn profile_cmd(args: &[String]) -> ExitCode {
    let mut opts = profile::Options::default();
    let mut it = args.iter();
    while let Some(a) = it.next() {
        match a.as_str() {
            "--isa" => match it.next() {
                Some(i) => opts.isa = Some(i.clone()),
                None => return bad_usage("--isa takes a name"),
            },
            "--elements" => match it.next().and_then(|v| v.parse().ok()) {
                Some(n) if n > 0 => opts.elements = n,
                _ => return bad_usage("--elements takes a positive number"),
            },
            "--extra-calls" => match it.next().and_then(|v| v.parse().ok()) {
                Some(k) if k > 0 => opts.extra_calls = k,
                _ => return bad_usage("--extra-calls takes a positive number"),
            },
            "-h" | "--help" => {
                println!("{}", usage());
                return ExitCode::SUCCESS;
            }
            s if s.starts_with('-') => return bad_usage(&format!("unknown argument {s}")),
            s => opts.cases.push(s.to_string()),
        }
    }
    match profile::run(&opts) {
        Ok(rows) => {
            println!("{:<44} {:>7} {:>10} {:>12}", "case", "isa", "elements", "instr/elem");
            for r in rows {
                println!("{:<44} {:>7} {:>10} {:>12.3}", r.case, r.isa, r.elements, r.instructions_per_element);
            }
            ExitCode::SUCCESS
        }
        Err(e) => {
            eprintln!("error: {e}");
            ExitCode::FAILURE
        }
    }
}

/// Runs the exhaustive test target of `crates/qdq` in release mode, ignored tests included.
fn exhaustive_cmd(args: &[String]) -> ExitCode {
    if let Some(a) = args.first() {
        return bad_usage(&format!("exhaustive takes no arguments, got {a}"));
    }
    let cargo = std::env::var("CARGO").unwrap_or_else(|_| "cargo".to_string());
    let cmd = [
        "test",
        "--release",
        "-p",
        "qdq",
        "--test",
        "exhaustive",
        "--",
        "--include-ignored",
        "--nocapture",
        "--test-threads",
        "1",
    ];
    println!("running: {cargo} {}", cmd.join(" "));
    match std::process::Command::new(&cargo).args(cmd).status() {
        Ok(st) if st.success() => ExitCode::SUCCESS,
        Ok(_) => ExitCode::FAILURE,
        Err(e) => {
            eprintln!("error: cannot run {cargo}: {e}");
            ExitCode::FAILURE
        }
    }
}

fn header_cmd(args: &[String]) -> ExitCode {
    let check = match args {
        [] => false,
        [a] if a == "--check" => true,
        _ => return bad_usage("header takes only --check"),
    };
    match xtask::header::run(&xtask::workspace_root(), check) {
        Ok(msg) => {
            println!("{msg}");
            ExitCode::SUCCESS
        }
        Err(e) => {
            eprintln!("error: {e}");
            ExitCode::FAILURE
        }
    }
}

fn capi_test_cmd(args: &[String]) -> ExitCode {
    let mut opts = capi::Options::default();
    for a in args {
        match a.as_str() {
            "--no-sanitize" => opts.sanitize = false,
            "-h" | "--help" => {
                println!("{}", usage());
                return ExitCode::SUCCESS;
            }
            s => return bad_usage(&format!("unknown argument {s}")),
        }
    }
    match capi::run(&opts) {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("error: {e}");
            ExitCode::FAILURE
        }
    }
}

fn bad_usage(msg: &str) -> ExitCode {
    eprintln!("error: {msg}\n{}", usage());
    ExitCode::from(2)
}

fn conformance_cmd(args: &[String]) -> ExitCode {
    let mut backend = Backend::default();
    let mut verbose = false;
    let mut paths = Vec::new();
    let mut it = args.iter();
    while let Some(a) = it.next() {
        match a.as_str() {
            "--backend" => match it.next().map(|s| Backend::parse(s)) {
                Some(Some(b)) => backend = b,
                _ => return bad_usage("--backend takes ref, qdq or capi"),
            },
            s if s.starts_with("--backend=") => match Backend::parse(&s["--backend=".len()..]) {
                Some(b) => backend = b,
                None => return bad_usage("--backend takes ref, qdq or capi"),
            },
            "-v" | "--verbose" => verbose = true,
            "-h" | "--help" => {
                println!("{}", usage());
                return ExitCode::SUCCESS;
            }
            s if s.starts_with('-') => return bad_usage(&format!("unknown option {s}")),
            s => paths.push(PathBuf::from(s)),
        }
    }
    let stdout = std::io::stdout();
    let mut out = stdout.lock();
    match conformance::run(&paths, backend, verbose, &mut out) {
        Ok(summary) => {
            let _ = out.flush();
            if summary.success() {
                ExitCode::SUCCESS
            } else {
                ExitCode::FAILURE
            }
        }
        Err(e) => {
            eprintln!("error: {e}");
            ExitCode::FAILURE
        }
    }
}

fn gen_data_cmd(args: &[String]) -> ExitCode {
    let mut outputs = Outputs::default();
    let mut it = args.iter();
    while let Some(a) = it.next() {
        let target = match a.as_str() {
            "--node-dir" => &mut outputs.node_dir,
            "--tables-dir" => &mut outputs.tables_dir,
            "-h" | "--help" => {
                println!("{}", usage());
                return ExitCode::SUCCESS;
            }
            s => return bad_usage(&format!("unknown argument {s}")),
        };
        match it.next() {
            Some(d) => *target = PathBuf::from(d),
            None => return bad_usage(&format!("{a} takes a directory")),
        }
    }
    match gen_data::gen_data(&outputs) {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("error: {e}");
            ExitCode::FAILURE
        }
    }
}

fn bench_cmd(args: &[String]) -> ExitCode {
    let mut opts = bench::Options::default();
    let mut it = args.iter();
    while let Some(a) = it.next() {
        match a.as_str() {
            "--json" => opts.json = true,
            "--quick" => opts.quick = true,
            "--filter" => match it.next() {
                Some(f) => opts.filter = Some(f.clone()),
                None => return bad_usage("--filter takes a substring"),
            },
            s if s.starts_with("--filter=") => opts.filter = Some(s["--filter=".len()..].to_string()),
            "-h" | "--help" => {
                println!("{}", usage());
                return ExitCode::SUCCESS;
            }
            s => return bad_usage(&format!("unknown argument {s}")),
        }
    }
    let stdout = std::io::stdout();
    let mut out = stdout.lock();
    match bench::run(&opts, &mut out) {
        Ok(rows) if rows.is_empty() => {
            eprintln!("no row matches the filter");
            ExitCode::FAILURE
        }
        Ok(_) => ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("error: {e}");
            ExitCode::FAILURE
        }
    }
}

fn ort_blockwise_cmd(args: &[String]) -> ExitCode {
    let mut opts = ort_blockwise::Options::default();
    let mut it = args.iter();
    while let Some(a) = it.next() {
        match a.as_str() {
            "--quick" => opts.quick = true,
            "--python" => match it.next() {
                Some(p) => opts.python = Some(PathBuf::from(p)),
                None => return bad_usage("--python takes a path"),
            },
            other => return bad_usage(&format!("unknown ort-blockwise argument {other}")),
        }
    }
    match ort_blockwise::run(&opts, &mut std::io::stdout()) {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("ort-blockwise: {e}");
            ExitCode::FAILURE
        }
    }
}

fn vs_ort_cmd(args: &[String]) -> ExitCode {
    let mut opts = vs_ort::Options::default();
    let mut it = args.iter();
    while let Some(a) = it.next() {
        match a.as_str() {
            "--quick" => opts.quick = true,
            "--rounds" => match it.next().and_then(|v| v.parse().ok()) {
                Some(r) if r > 0 => opts.rounds = r,
                _ => return bad_usage("--rounds takes a positive number"),
            },
            "--filter" => match it.next() {
                Some(f) => opts.filter = Some(f.clone()),
                None => return bad_usage("--filter takes a substring"),
            },
            "--python" => match it.next() {
                Some(p) => opts.python = Some(PathBuf::from(p)),
                None => return bad_usage("--python takes a path"),
            },
            "--sizes" => {
                let sizes: Option<Vec<usize>> = it
                    .next()
                    .map(|v| {
                        v.split(',')
                            .map(|s| s.trim().parse().ok().filter(|n: &usize| n.is_multiple_of(4096) && *n > 0))
                            .collect()
                    })
                    .unwrap_or(None);
                match sizes {
                    Some(s) if !s.is_empty() => opts.sizes = s,
                    _ => return bad_usage("--sizes takes comma-separated element counts (multiples of 4096)"),
                }
            }
            "-h" | "--help" => {
                println!("{}", usage());
                return ExitCode::SUCCESS;
            }
            s => return bad_usage(&format!("unknown argument {s}")),
        }
    }
    let stdout = std::io::stdout();
    let mut out = stdout.lock();
    match vs_ort::run(&opts, &mut out) {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            let _ = out.flush();
            eprintln!("error: {e}");
            ExitCode::FAILURE
        }
    }
}

fn downstream_cmd(args: &[String]) -> ExitCode {
    let mut profiles = Vec::new();
    let mut it = args.iter();
    while let Some(a) = it.next() {
        match a.as_str() {
            "--profile" => match it.next().map(String::as_str) {
                Some(p @ ("dev" | "release")) => profiles.push(p),
                _ => return bad_usage("--profile takes dev or release"),
            },
            s => return bad_usage(&format!("unknown argument {s}")),
        }
    }
    if profiles.is_empty() {
        profiles = vec!["dev", "release"];
    }
    match buildcheck::downstream(&profiles) {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("error: {e}");
            ExitCode::FAILURE
        }
    }
}

fn build_time_cmd(args: &[String]) -> ExitCode {
    let (mut dev, mut rounds) = (false, 1);
    let mut it = args.iter();
    while let Some(a) = it.next() {
        match a.as_str() {
            "--dev" => dev = true,
            "--rounds" => match it.next().and_then(|n| n.parse::<usize>().ok()).filter(|n| (1..=9).contains(n)) {
                Some(n) => rounds = n,
                None => return bad_usage("--rounds takes a number from 1 to 9"),
            },
            s => return bad_usage(&format!("unknown argument {s}")),
        }
    }
    match buildcheck::build_time(dev, rounds) {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("error: {e}");
            ExitCode::FAILURE
        }
    }
}

fn isa_check_cmd(args: &[String]) -> ExitCode {
    let mut steps = Vec::new();
    let mut it = args.iter();
    while let Some(a) = it.next() {
        match a.as_str() {
            "--steps" => match it.next() {
                Some(list) => {
                    for s in list.split(',') {
                        match isacheck::Step::parse(s) {
                            Some(step) => steps.push(step),
                            None => {
                                return bad_usage(&format!(
                                    "unknown step {s:?} (tests, conformance, exhaustive, threads)"
                                ))
                            }
                        }
                    }
                }
                None => return bad_usage("--steps takes a comma-separated list"),
            },
            s => return bad_usage(&format!("unknown argument {s}")),
        }
    }
    if steps.is_empty() {
        steps = isacheck::Step::ALL.to_vec();
    }
    match isacheck::run_steps(&steps) {
        Ok(_) => ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("error: {e}");
            ExitCode::FAILURE
        }
    }
}

fn main() -> ExitCode {
    let args: Vec<String> = std::env::args().skip(1).collect();
    // Every command that runs qdq would run it on `Isa::detect()`: a QDQ_ISA naming no ISA,
    // or one this CPU lacks, stops here rather than let a report name an ISA that never ran.
    if let Err(e) = qdq::Isa::forced() {
        eprintln!("error: {e}");
        return ExitCode::from(2);
    }
    match args.first().map(String::as_str) {
        Some("isa-check") => isa_check_cmd(&args[1..]),
        Some("conformance") => conformance_cmd(&args[1..]),
        Some("gen-data") => gen_data_cmd(&args[1..]),
        Some("bench") => bench_cmd(&args[1..]),
        Some("vs-ort") => vs_ort_cmd(&args[1..]),
        Some("ort-blockwise") => ort_blockwise_cmd(&args[1..]),
        Some("exhaustive") => exhaustive_cmd(&args[1..]),
        Some("profile") => profile_cmd(&args[1..]),
        Some("downstream") => downstream_cmd(&args[1..]),
        Some("build-time") => build_time_cmd(&args[1..]),
        Some("header") => header_cmd(&args[1..]),
        Some("capi-test") => capi_test_cmd(&args[1..]),
        Some("-h" | "--help" | "help") => {
            println!("{}", usage());
            ExitCode::SUCCESS
        }
        Some(other) => bad_usage(&format!("unknown command {other}")),
        None => bad_usage("no command given"),
    }
}
