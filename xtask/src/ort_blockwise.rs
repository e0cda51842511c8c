//! `cargo xtask ort-blockwise`: qdq's onnxruntime-compatible blockwise mode against
//! onnxruntime itself, bit for bit, and both timed in the same run.
//!
//! `xtask/python/ort_blockwise.py` (in the `vs-ort` virtual environment) runs
//! onnxruntime's `quantize_qdq_matmul_4bits` (`MlasQDQQuantizeBlockwise`: int4 symmetric,
//! uint4 asymmetric, blocks along K of a `[K, N]` f32 weight) on random weights of several
//! shapes, with zeros, all-zero blocks, ties, NaN, ±inf and subnormals mixed in, and writes
//! x and the three outputs to `target/ort-blockwise`. Each case is quantized again with
//! `qdq::scaled::quantize_blockwise(.., BlockMode::Onnxruntime, ..)` on every ISA of this
//! CPU, sequential and parallel, and compared byte for byte (codes, scale bits, zero
//! points). Then the script times onnxruntime on a 4096 x 4096 weight with blocks of 32,
//! and qdq is timed on the same shape (1 thread, and the default parallel mode in a
//! 2-thread pool); the ratio is printed.

use std::io::Write;
use std::path::{Path, PathBuf};
use std::process::Command;

use qdq::scaled::BlockMode;
use qdq::{Config, DataType, Isa, Layout, PackedMut};
use qdq_measure::{median, time_batches};

use crate::vs_ort::{ensure_python, json_field};

/// Command-line options.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Options {
    /// Fewer timing repetitions.
    pub quick: bool,
    /// A Python interpreter that already has the packages (skips the venv).
    pub python: Option<PathBuf>,
}

/// One case the script wrote.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct CaseInfo {
    /// Index (file name `case<index>.*`).
    pub index: usize,
    /// Rows (the blocked axis).
    pub k: usize,
    /// Columns.
    pub n: usize,
    /// Block size.
    pub block: usize,
    /// int4 symmetric (else uint4 asymmetric).
    pub symmetric: bool,
}

/// Parses a `{"kind": "case", ...}` line.
pub fn parse_case(line: &str) -> Option<CaseInfo> {
    if json_field(line, "kind")? != "case" {
        return None;
    }
    let num = |k: &str| json_field(line, k).and_then(|v| v.parse::<usize>().ok());
    Some(CaseInfo {
        index: num("index")?,
        k: num("k")?,
        n: num("n")?,
        block: num("block")?,
        symmetric: json_field(line, "symmetric")? == "true",
    })
}

fn read(path: &Path) -> Result<Vec<u8>, String> {
    std::fs::read(path).map_err(|e| format!("{}: {e}", path.display()))
}

/// Codes, scale bytes and zero-point bytes.
type Outputs = (Vec<u8>, Vec<u8>, Vec<u8>);

/// qdq's outputs for a case.
fn qdq_outputs(cfg: &Config, c: &CaseInfo, x: &[f32]) -> Result<Outputs, String> {
    let kb = c.k.div_ceil(c.block) * c.n;
    let (mut y, mut s, mut z) = (vec![0u8; (c.k * c.n).div_ceil(2)], vec![0f32; kb], vec![0u8; kb.div_ceil(2)]);
    qdq_into(cfg, c, x, &mut y, &mut s, &mut z)?;
    Ok((y, s.iter().flat_map(|v| v.to_le_bytes()).collect(), z))
}

/// qdq's onnxruntime mode into caller buffers (what the timing calls, outputs allocated
/// once, as the Python side does for onnxruntime).
fn qdq_into(cfg: &Config, c: &CaseInfo, x: &[f32], y: &mut [u8], s: &mut [f32], z: &mut [u8]) -> Result<(), String> {
    let t = if c.symmetric { DataType::I4 } else { DataType::U4 };
    let layout = Layout::blocked(&[c.k, c.n], 0, c.block).map_err(|e| e.to_string())?;
    let zp = (!c.symmetric).then(|| PackedMut::new(t, z));
    qdq::scaled::quantize_blockwise_with(cfg, x, layout, BlockMode::Onnxruntime, PackedMut::new(t, y), s, zp)
        .map_err(|e| e.to_string())
}

/// The first differing byte of two buffers, described.
fn first_difference(what: &str, want: &[u8], got: &[u8]) -> Option<String> {
    if want.len() != got.len() {
        return Some(format!("{what}: {} bytes from onnxruntime, {} from qdq", want.len(), got.len()));
    }
    let i = want.iter().zip(got).position(|(a, b)| a != b)?;
    let count = want.iter().zip(got).filter(|(a, b)| a != b).count();
    Some(format!("{what}: {count} bytes differ, first at byte {i}: onnxruntime {:#04x}, qdq {:#04x}", want[i], got[i]))
}

/// Runs the check and the timing, printing to `out`; an error if any byte differs.
pub fn run(opts: &Options, out: &mut dyn Write) -> Result<(), String> {
    let w = |e: std::io::Error| e.to_string();
    let python = ensure_python(opts.python.as_deref(), out)?;
    let root = crate::workspace_root();
    let dir = root.join("target").join("ort-blockwise");
    let script = root.join("xtask").join("python").join("ort_blockwise.py");
    let mut cmd = Command::new(&python);
    cmd.arg(&script).arg(&dir);
    if opts.quick {
        cmd.arg("--quick");
    }
    let res = cmd.output().map_err(|e| format!("{}: {e}", script.display()))?;
    if !res.status.success() {
        return Err(format!("{} failed: {}", script.display(), String::from_utf8_lossy(&res.stderr)));
    }
    let text = String::from_utf8_lossy(&res.stdout).to_string();
    let version = text.lines().find_map(|l| json_field(l, "onnxruntime")).unwrap_or_default();
    writeln!(out, "onnxruntime {version}: quantize_qdq_matmul_4bits against qdq's BlockMode::Onnxruntime")
        .map_err(w)?;
    let mut configs: Vec<(String, Config)> = Vec::new();
    for isa in Isa::available() {
        configs.push((format!("{isa}/seq"), Config::sequential().with_isa(isa)));
        configs.push((format!("{isa}/par"), Config { parallel_threshold: 0, ..Config::default().with_isa(isa) }));
    }
    let (mut checked, mut failures) = (0usize, Vec::new());
    for c in text.lines().filter_map(parse_case) {
        let base = dir.join(format!("case{}", c.index));
        let xb = read(&base.with_extension("x"))?;
        let x: Vec<f32> = xb.chunks_exact(4).map(|b| f32::from_le_bytes([b[0], b[1], b[2], b[3]])).collect();
        let want_y = read(&base.with_extension("packed"))?;
        let want_s = read(&base.with_extension("scales"))?;
        let want_z = read(&base.with_extension("zp"))?;
        for (name, cfg) in &configs {
            let (y, s, z) = qdq_outputs(cfg, &c, &x)?;
            let mut diffs = vec![first_difference("codes", &want_y, &y), first_difference("scales", &want_s, &s)];
            if !c.symmetric {
                diffs.push(first_difference("zero points", &want_z, &z));
            }
            for d in diffs.into_iter().flatten() {
                failures.push(format!(
                    "case {} [{} x {}] block {} {}: {name}: {d}",
                    c.index,
                    c.k,
                    c.n,
                    c.block,
                    if c.symmetric { "int4 symmetric" } else { "uint4 asymmetric" }
                ));
            }
            checked += 1;
        }
        writeln!(
            out,
            "  case {:2}: [{:4} x {:4}] block {:3} {:16} identical on {} configurations: {}",
            c.index,
            c.k,
            c.n,
            c.block,
            if c.symmetric { "int4 symmetric" } else { "uint4 asymmetric" },
            configs.len(),
            if failures.is_empty() { "yes" } else { "NO" }
        )
        .map_err(w)?;
    }
    if checked == 0 {
        return Err("the script wrote no cases".into());
    }
    // Timing: 4096 x 4096, blocks of 32 along K.
    let (k, n) = (4096usize, 4096usize);
    let x = qdq_benches::uniform(k * n, 7);
    // onnxruntime's function makes an intra-op pool of its default size (one thread per
    // core): qdq runs single-threaded and with one thread per core too.
    let threads = std::thread::available_parallelism().map_or(2, |t| t.get());
    let pool = rayon::ThreadPoolBuilder::new().num_threads(threads).build().map_err(|e| e.to_string())?;
    let elems = (k * n) as f64;
    writeln!(out, "\n4096 x 4096 f32 weight, blocks of 32 along K (Gelem/s; ratio to onnxruntime)").map_err(w)?;
    for line in text.lines().filter(|l| json_field(l, "kind").as_deref() == Some("timing")) {
        let sym = json_field(line, "symmetric").as_deref() == Some("true");
        let ort_s: f64 = json_field(line, "seconds").and_then(|v| v.parse().ok()).ok_or("bad timing line")?;
        let c = CaseInfo { index: 0, k, n, block: 32, symmetric: sym };
        let batch = if opts.quick { 0.05 } else { 0.2 };
        let kb = k.div_ceil(32) * n;
        let (mut y, mut s, mut z) = (vec![0u8; k * n / 2], vec![0f32; kb], vec![0u8; kb.div_ceil(2)]);
        let mut call = |cfg: &Config| drop(qdq_into(cfg, &c, &x, &mut y, &mut s, &mut z));
        let t1 = median(&time_batches(|| call(&Config::sequential()), 3, batch));
        let t2 = pool.install(|| median(&time_batches(|| call(&Config::default()), 3, batch)));
        let g = |t: f64| elems / t / 1e9;
        writeln!(
            out,
            "  {:16}  onnxruntime {:6.3}   qdq 1 thread {:6.3} ({:5.1}x)   qdq {threads} threads {:6.3} ({:5.1}x)",
            if sym { "int4 symmetric" } else { "uint4 asymmetric" },
            g(ort_s),
            g(t1),
            ort_s / t1,
            g(t2),
            ort_s / t2
        )
        .map_err(w)?;
    }
    if failures.is_empty() {
        writeln!(out, "\nbit-identical to onnxruntime: {checked} case x configuration runs").map_err(w)?;
        Ok(())
    } else {
        for f in &failures {
            writeln!(out, "MISMATCH {f}").map_err(w)?;
        }
        Err(format!("{} mismatches against onnxruntime", failures.len()))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_case_lines() {
        let l = r#"{"kind": "case", "index": 3, "k": 33, "n": 5, "block": 16, "symmetric": false}"#;
        assert_eq!(parse_case(l), Some(CaseInfo { index: 3, k: 33, n: 5, block: 16, symmetric: false }));
        assert_eq!(parse_case(r#"{"kind": "timing", "k": 1}"#), None);
    }

    #[test]
    fn reports_the_first_difference() {
        assert_eq!(first_difference("codes", &[1, 2, 3], &[1, 2, 3]), None);
        let d = first_difference("codes", &[1, 2, 3], &[1, 5, 4]).unwrap();
        assert!(d.contains("2 bytes differ, first at byte 1"), "{d}");
    }
}
