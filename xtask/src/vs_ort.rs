//! `cargo xtask vs-ort`: qdq against onnxruntime on the same shapes, in the same run.
//!
//! 1. A Python virtual environment with `onnx`, `onnxruntime`, `numpy` and `ml_dtypes` is created at
//!    `target/venv-ort` (reused when it already imports them; `--python` names another
//!    interpreter instead).
//! 2. For each of `--rounds` rounds (default 3): `xtask/python/ort_bench.py` times
//!    onnxruntime on every case (CPU provider, graph optimizations off, intra-op threads 1
//!    and 2), then qdq is timed on the same cases and shapes (1 thread: `Config::sequential`,
//!    2 threads: `Config::default` in a 2-thread rayon pool). The two alternate, so slow
//!    drifts of a noisy machine hit both.
//! 3. Each figure is the median over rounds of each round's median batch; the table shows
//!    qdq and onnxruntime throughput and their ratio, then the project's targets.
//!
//! Sizes are 1 Mi and 16 Mi elements: Python's per-call overhead (measured and printed) is
//! then a few percent at most of an onnxruntime call. Cases onnxruntime cannot run are
//! listed with onnxruntime's reason (qdq is still timed on them).

use std::collections::BTreeMap;
use std::io::Write;
use std::path::{Path, PathBuf};
use std::process::Command;

use qdq::{Config, DataType};
use qdq_benches::{size_name, Case, Shape};
use qdq_measure::{median, time_batches};

/// The onnxruntime-side packages.
pub const PACKAGES: [&str; 4] = ["onnx", "onnxruntime", "numpy", "ml_dtypes"];

/// Command-line options.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Options {
    /// Alternating onnxruntime / qdq rounds.
    pub rounds: usize,
    /// Shorter batches and one round.
    pub quick: bool,
    /// Only cases whose name (`quantize/f32-u8/per-tensor`) contains this.
    pub filter: Option<String>,
    /// A Python interpreter that already has the packages (skips the venv).
    pub python: Option<PathBuf>,
    /// Element counts.
    pub sizes: Vec<usize>,
}

impl Default for Options {
    fn default() -> Self {
        Options { rounds: 3, quick: false, filter: None, python: None, sizes: vec![1 << 20, 16 << 20] }
    }
}

/// The compared cases (the project's targets table), then the ones onnxruntime 1.31
/// cannot run.
pub fn cases() -> Vec<Case> {
    use DataType::*;
    let mut v = Vec::new();
    for to in [U8, I8, I16, U16, E4M3Fn, E4M3FnUz, E5M2, E5M2FnUz] {
        v.push(Case::quantize(F32, to, Shape::PerTensor));
    }
    v.push(Case::quantize(F32, I8, Shape::PerAxisLast { channels: 64 }));
    v.push(Case::quantize(F32, I8, Shape::BlockedLast { block: 32 }));
    for from in [U8, I4, E4M3Fn] {
        v.push(Case::dequantize(from, F32, Shape::PerTensor));
    }
    v.push(Case::dynamic_quantize());
    for to in [E2M1, E2M3, E3M2] {
        v.push(Case::quantize(F32, to, Shape::PerTensor));
    }
    v.push(Case::dequantize(E2M1, F32, Shape::PerTensor));
    v
}

/// One result line of `ort_bench.py`.
#[derive(Clone, Debug, PartialEq)]
pub enum OrtLine {
    /// The versions and the measured per-call overhead.
    Info {
        /// onnxruntime's version.
        version: String,
        /// Seconds of Python overhead per call.
        overhead_s: f64,
    },
    /// A timing.
    Result {
        /// The case spec.
        spec: String,
        /// Elements.
        elements: usize,
        /// Intra-op threads.
        threads: usize,
        /// Seconds per call.
        seconds: f64,
    },
    /// onnxruntime cannot run the case.
    Unsupported {
        /// The case spec.
        spec: String,
        /// onnxruntime's message.
        reason: String,
    },
}

/// The value of `"key": value` in a flat JSON object written by `json.dumps` (strings
/// unescaped for `\"` and `\\` only).
pub fn json_field(line: &str, key: &str) -> Option<String> {
    let pat = format!("\"{key}\":");
    let at = line.find(&pat)? + pat.len();
    let rest = line[at..].trim_start();
    if let Some(s) = rest.strip_prefix('"') {
        let mut out = String::new();
        let mut chars = s.chars();
        while let Some(c) = chars.next() {
            match c {
                '\\' => match chars.next()? {
                    'n' => out.push(' '),
                    c => out.push(c),
                },
                '"' => return Some(out),
                c => out.push(c),
            }
        }
        None
    } else {
        let end = rest.find([',', '}']).unwrap_or(rest.len());
        Some(rest[..end].trim().to_string())
    }
}

/// Parses one line of `ort_bench.py` output (`None` for anything else).
pub fn parse_line(line: &str) -> Option<OrtLine> {
    let num = |k: &str| json_field(line, k).and_then(|v| v.parse::<f64>().ok());
    match json_field(line, "kind")?.as_str() {
        "info" => Some(OrtLine::Info {
            version: json_field(line, "onnxruntime").unwrap_or_default(),
            overhead_s: num("python_overhead_us")? * 1e-6,
        }),
        "result" => Some(OrtLine::Result {
            spec: json_field(line, "spec")?,
            elements: num("elements")? as usize,
            threads: num("threads")? as usize,
            seconds: num("seconds_per_call")?,
        }),
        "unsupported" => {
            Some(OrtLine::Unsupported { spec: json_field(line, "spec")?, reason: json_field(line, "reason")? })
        }
        _ => None,
    }
}

fn venv_python(venv: &Path) -> PathBuf {
    if cfg!(windows) {
        venv.join("Scripts").join("python.exe")
    } else {
        venv.join("bin").join("python")
    }
}

fn imports_ok(python: &Path) -> bool {
    Command::new(python)
        .args(["-c", "import onnx, onnxruntime, numpy, ml_dtypes"])
        .output()
        .map(|o| o.status.success())
        .unwrap_or(false)
}

fn run_checked(cmd: &mut Command, log: &mut dyn Write) -> Result<(), String> {
    let shown = std::iter::once(cmd.get_program())
        .chain(cmd.get_args())
        .map(|a| a.to_string_lossy().into_owned())
        .collect::<Vec<_>>()
        .join(" ");
    let _ = writeln!(log, "+ {shown}");
    let status = cmd.status().map_err(|e| format!("cannot run `{shown}`: {e}"))?;
    if !status.success() {
        return Err(format!("`{shown}` failed ({status})"));
    }
    Ok(())
}

/// The interpreter to use: `python` if given, else `target/venv-ort` (created and
/// provisioned with [`PACKAGES`] when it cannot import them).
pub fn ensure_python(python: Option<&Path>, log: &mut dyn Write) -> Result<PathBuf, String> {
    if let Some(p) = python {
        return if imports_ok(p) {
            Ok(p.to_path_buf())
        } else {
            Err(format!("{} cannot import onnx, onnxruntime, numpy and ml_dtypes", p.display()))
        };
    }
    let venv = crate::workspace_root().join("target").join("venv-ort");
    let py = venv_python(&venv);
    if py.is_file() && imports_ok(&py) {
        return Ok(py);
    }
    if !py.is_file() {
        run_checked(Command::new("python3").arg("-m").arg("venv").arg(&venv), log)?;
    }
    run_checked(Command::new(&py).args(["-m", "pip", "install", "--quiet"]).args(PACKAGES), log)?;
    if !imports_ok(&py) {
        return Err(format!("{} still cannot import {}", py.display(), PACKAGES.join(", ")));
    }
    Ok(py)
}

/// One onnxruntime round: runs the script on `specs` and parses its lines.
fn ort_round(python: &Path, specs: &[String], sizes: &[usize], quick: bool) -> Result<Vec<OrtLine>, String> {
    let script = crate::workspace_root().join("xtask").join("python").join("ort_bench.py");
    let sizes = sizes.iter().map(|n| n.to_string()).collect::<Vec<_>>().join(",");
    let out = Command::new(python)
        .arg(&script)
        .args(["--sizes", &sizes, "--threads", "1,2", "--reps", "3", "--batch-ms", if quick { "12" } else { "25" }])
        .args(specs)
        .output()
        .map_err(|e| format!("cannot run {}: {e}", script.display()))?;
    if !out.status.success() {
        return Err(format!("{} failed ({}):\n{}", script.display(), out.status, String::from_utf8_lossy(&out.stderr)));
    }
    Ok(String::from_utf8_lossy(&out.stdout).lines().filter_map(parse_line).collect())
}

/// Seconds per call of qdq on `case` at `n` elements with 1 or 2 threads (median batch).
pub fn time_qdq(case: &Case, n: usize, threads: usize, pool: &rayon::ThreadPool, quick: bool) -> f64 {
    let mut p = case.prepare(n);
    let batch = if quick { 0.012 } else { 0.025 };
    let mut call = |cfg: &Config| {
        if let Err(e) = p.run(cfg) {
            panic!("{}: {e}", case.full_name());
        }
    };
    if threads == 1 {
        let cfg = Config::sequential();
        median(&time_batches(|| call(&cfg), 3, batch))
    } else {
        let cfg = Config::default();
        pool.install(|| median(&time_batches(|| call(&cfg), 3, batch)))
    }
}

/// Key of a measurement: (case index, elements, threads).
type Key = (usize, usize, usize);

/// A target of the project's table and the rows it is judged on.
struct Target {
    name: &'static str,
    want: f64,
    /// Case names (`quantize/f32-u8/per-tensor`) judged at 1 Mi, 1 thread (the worst one).
    cases: &'static [&'static str],
}

const TARGETS: [Target; 9] = [
    Target {
        name: "Q f32->u8/i8 per-tensor, 1 Mi",
        want: 1.6,
        cases: &["quantize/f32-u8/per-tensor", "quantize/f32-i8/per-tensor"],
    },
    Target {
        name: "Q f32->i16/u16",
        want: 2.0,
        cases: &["quantize/f32-i16/per-tensor", "quantize/f32-u16/per-tensor"],
    },
    Target {
        name: "Q f32->float8 (each)",
        want: 30.0,
        cases: &[
            "quantize/f32-e4m3fn/per-tensor",
            "quantize/f32-e4m3fnuz/per-tensor",
            "quantize/f32-e5m2/per-tensor",
            "quantize/f32-e5m2fnuz/per-tensor",
        ],
    },
    Target { name: "Q per-axis, last axis, 64 channels", want: 100.0, cases: &["quantize/f32-i8/per-axis-last64"] },
    Target { name: "Q blocked (block 32) i8", want: 1.5, cases: &["quantize/f32-i8/blocked-last32"] },
    Target { name: "DQ u8->f32", want: 1.5, cases: &["dequantize/u8-f32/per-tensor"] },
    Target { name: "DQ int4->f32", want: 8.0, cases: &["dequantize/i4-f32/per-tensor"] },
    Target { name: "DQ float8->f32", want: 15.0, cases: &["dequantize/e4m3fn-f32/per-tensor"] },
    Target { name: "DynamicQuantizeLinear", want: 1.5, cases: &["dynamic_quantize/f32-u8/per-tensor"] },
];

/// A ratio with two decimals, or three significant digits below 0.1.
pub fn ratio(r: f64) -> String {
    if r.abs() < 0.1 && r != 0.0 {
        let decimals = (2 - r.abs().log10().floor() as i32).clamp(2, 8) as usize;
        format!("{r:.decimals$}")
    } else {
        format!("{r:.2}")
    }
}

/// Runs the comparison, printing progress and the tables to `out`.
pub fn run(opts: &Options, out: &mut dyn Write) -> Result<(), String> {
    let w = |e: std::io::Error| e.to_string();
    let all = cases();
    let selected: Vec<Case> = all
        .into_iter()
        .filter(|c| opts.filter.as_deref().is_none_or(|f| c.full_name().contains(f) || c.spec().contains(f)))
        .collect();
    if selected.is_empty() {
        return Err("no case matches the filter".to_string());
    }
    let python = ensure_python(opts.python.as_deref(), out)?;
    let rounds = if opts.quick { 1 } else { opts.rounds.max(1) };
    let pool = rayon::ThreadPoolBuilder::new().num_threads(2).build().map_err(|e| e.to_string())?;
    let specs: Vec<String> = selected.iter().map(Case::spec).collect();

    let load_start = crate::bench::load_average();
    let mut ort: BTreeMap<Key, Vec<f64>> = BTreeMap::new();
    let mut qdq: BTreeMap<Key, Vec<f64>> = BTreeMap::new();
    let mut unsupported: BTreeMap<usize, String> = BTreeMap::new();
    let (mut version, mut overheads) = (String::new(), Vec::new());
    for round in 1..=rounds {
        writeln!(out, "round {round}/{rounds}: onnxruntime ...").map_err(w)?;
        out.flush().map_err(w)?;
        for line in ort_round(&python, &specs, &opts.sizes, opts.quick)? {
            match line {
                OrtLine::Info { version: v, overhead_s } => {
                    version = v;
                    overheads.push(overhead_s);
                }
                OrtLine::Result { spec, elements, threads, seconds } => {
                    if let Some(i) = specs.iter().position(|s| *s == spec) {
                        ort.entry((i, elements, threads)).or_default().push(seconds);
                    }
                }
                OrtLine::Unsupported { spec, reason } => {
                    if let Some(i) = specs.iter().position(|s| *s == spec) {
                        unsupported.insert(i, reason);
                    }
                }
            }
        }
        writeln!(out, "round {round}/{rounds}: qdq ...").map_err(w)?;
        out.flush().map_err(w)?;
        for (i, case) in selected.iter().enumerate() {
            for &n in &opts.sizes {
                for threads in [1, 2] {
                    let s = time_qdq(case, n, threads, &pool, opts.quick);
                    qdq.entry((i, n, threads)).or_default().push(s);
                }
            }
        }
    }

    let overhead = median(&overheads);
    let gelem = |n: usize, s: f64| if s > 0.0 { n as f64 / s / 1e9 } else { 0.0 };
    let mut worst_share: f64 = 0.0;
    writeln!(out).map_err(w)?;
    writeln!(
        out,
        "qdq vs onnxruntime {version} on {} ({} threads available); median of {rounds} alternating round(s); \
         load average {load_start} at the start, {} at the end",
        crate::bench::cpu_name(),
        std::thread::available_parallelism().map_or(1, |n| n.get()),
        crate::bench::load_average()
    )
    .map_err(w)?;
    writeln!(out, "onnxruntime: CPU provider, graph optimizations off, intra-op threads 1 / 2; qdq: Config::sequential / Config::default in a 2-thread pool").map_err(w)?;
    writeln!(out).map_err(w)?;
    writeln!(
        out,
        "{:<38} {:>8} {:>7} {:>10} {:>10} {:>9}",
        "case", "elements", "threads", "qdq G/s", "ORT G/s", "qdq/ORT"
    )
    .map_err(w)?;
    let mut ratios: BTreeMap<Key, f64> = BTreeMap::new();
    for (i, case) in selected.iter().enumerate() {
        for &n in &opts.sizes {
            for threads in [1, 2] {
                let q = gelem(n, median(qdq.get(&(i, n, threads)).map_or(&[][..], |v| v)));
                let (o, r) = match ort.get(&(i, n, threads)) {
                    Some(v) => {
                        let s = median(v);
                        worst_share = worst_share.max(overhead / s);
                        let o = gelem(n, s);
                        ratios.insert((i, n, threads), q / o);
                        (format!("{o:.3}"), format!("{}x", ratio(q / o)))
                    }
                    None => ("-".to_string(), "ORT n/a".to_string()),
                };
                writeln!(
                    out,
                    "{:<38} {:>8} {:>7} {:>10.3} {:>10} {:>9}",
                    case.full_name(),
                    size_name(n),
                    threads,
                    q,
                    o,
                    r
                )
                .map_err(w)?;
            }
        }
    }
    writeln!(out).map_err(w)?;
    writeln!(
        out,
        "Python per-call overhead (a 16-element QuantizeLinear through run_with_iobinding): {:.1} us, at most {:.1}% \
         of any onnxruntime call timed above{}",
        overhead * 1e6,
        100.0 * worst_share,
        if worst_share <= 0.05 {
            " (the large sizes keep it below a few percent)."
        } else {
            "; use larger sizes (1 Mi and 16 Mi by default) to keep it below a few percent."
        }
    )
    .map_err(w)?;
    if !unsupported.is_empty() {
        writeln!(out).map_err(w)?;
        writeln!(out, "onnxruntime cannot run:").map_err(w)?;
        for (i, reason) in &unsupported {
            writeln!(out, "  {:<38} {reason}", selected[*i].full_name()).map_err(w)?;
        }
    }

    // The targets, judged at 1 Mi on one thread (the worst case of each group).
    let mi = 1 << 20;
    if opts.sizes.contains(&mi) {
        writeln!(out).map_err(w)?;
        writeln!(out, "{:<40} {:>8} {:>14} {:>7}", "target (1 Mi, 1 thread)", "want", "measured", "").map_err(w)?;
        for t in &TARGETS {
            let got: Vec<f64> = t
                .cases
                .iter()
                .filter_map(|name| selected.iter().position(|c| c.full_name() == *name))
                .filter_map(|i| ratios.get(&(i, mi, 1)).copied())
                .collect();
            if got.len() < t.cases.len() {
                continue;
            }
            let worst = got.iter().copied().fold(f64::INFINITY, f64::min);
            let verdict = if worst >= t.want { "met" } else { "MISSED" };
            writeln!(out, "{:<40} {:>7.1}x {:>13}x {:>7}", t.name, t.want, ratio(worst), verdict).map_err(w)?;
        }
        // 2 threads vs 1 on qdq's own numbers, at 1 Mi (in L3).
        for (i, case) in selected.iter().enumerate() {
            if case.full_name() != "quantize/f32-u8/per-tensor" {
                continue;
            }
            let one = median(qdq.get(&(i, mi, 1)).map_or(&[][..], |v| v));
            let two = median(qdq.get(&(i, mi, 2)).map_or(&[][..], |v| v));
            if one > 0.0 && two > 0.0 {
                let s = one / two;
                let verdict = if s >= 1.7 { "met" } else { "MISSED" };
                writeln!(
                    out,
                    "{:<40} {:>7.1}x {:>13}x {:>7}",
                    "2 threads vs 1, Q f32->u8, 1 Mi",
                    1.7,
                    ratio(s),
                    verdict
                )
                .map_err(w)?;
            }
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_the_script_lines() {
        assert_eq!(
            parse_line(r#"{"kind": "info", "onnxruntime": "1.31.1", "python_overhead_us": 2.0}"#),
            Some(OrtLine::Info { version: "1.31.1".to_string(), overhead_s: 2.0e-6 })
        );
        assert_eq!(
            parse_line(
                r#"{"kind": "result", "spec": "quantize:f32:u8:per-tensor", "elements": 1048576, "threads": 2, "seconds_per_call": 0.001, "gelem_per_s": 1.048}"#
            ),
            Some(OrtLine::Result {
                spec: "quantize:f32:u8:per-tensor".to_string(),
                elements: 1 << 20,
                threads: 2,
                seconds: 0.001
            })
        );
        assert_eq!(
            parse_line(
                r#"{"kind": "unsupported", "spec": "quantize:f32:e2m3:per-tensor", "elements": 1, "reason": "needs \"opset\" 28"}"#
            ),
            Some(OrtLine::Unsupported {
                spec: "quantize:f32:e2m3:per-tensor".to_string(),
                reason: "needs \"opset\" 28".to_string()
            })
        );
        assert_eq!(parse_line("Traceback (most recent call last):"), None);
    }

    #[test]
    fn ratios() {
        assert_eq!(ratio(1.804), "1.80");
        assert_eq!(ratio(0.0123), "0.0123");
        assert_eq!(ratio(0.001234), "0.00123");
        assert_eq!(ratio(0.0), "0.00");
    }

    #[test]
    fn the_cases_cover_the_targets() {
        let names: Vec<String> = cases().iter().map(Case::full_name).collect();
        for t in &TARGETS {
            for c in t.cases {
                assert!(names.iter().any(|n| n == c), "{c}");
            }
        }
        let specs: Vec<String> = cases().iter().map(Case::spec).collect();
        assert!(specs.contains(&"quantize:f32:i8:per-axis-last:64".to_string()));
        assert!(specs.contains(&"dynamic_quantize:f32:u8:per-tensor".to_string()));
    }
}
