//! `cargo xtask profile`: instructions per element of one kernel, counted by valgrind.
//!
//! Hardware counters (`perf stat`) are often missing in virtual machines; callgrind counts
//! executed instructions on any x86-64 or aarch64 Linux. The count of a run includes process
//! start, data generation and allocation, so the kernel's own count is the difference of two
//! runs that differ only in the number of calls: `(Ir(1 + k calls) - Ir(1 call)) / (k * n)`.
//! Valgrind emulates AVX2 but not AVX-512, so the default ISA is AVX2 (on aarch64: NEON).

use std::path::Path;
use std::process::Command;

/// What to profile.
#[derive(Clone, Debug)]
pub struct Options {
    /// Case names as `cargo xtask bench` prints them (`quantize/f32-u8/per-tensor`).
    pub cases: Vec<String>,
    /// ISA name; `None`: avx2 on x86-64, neon on aarch64.
    pub isa: Option<String>,
    /// Elements per call.
    pub elements: usize,
    /// Extra calls of the second run.
    pub extra_calls: usize,
}

impl Default for Options {
    fn default() -> Self {
        Options { cases: Vec::new(), isa: None, elements: 1 << 20, extra_calls: 4 }
    }
}

/// One profiled case.
#[derive(Clone, Debug, PartialEq)]
pub struct Row {
    pub case: String,
    pub isa: String,
    pub elements: usize,
    /// Instructions per element of the kernel alone.
    pub instructions_per_element: f64,
}

fn default_isa() -> &'static str {
    if cfg!(target_arch = "aarch64") {
        "neon"
    } else {
        "avx2"
    }
}

/// Extracts the total instruction count from callgrind's stderr (`==pid== Collected : N`).
pub fn parse_collected(stderr: &str) -> Option<u64> {
    stderr.lines().find_map(|l| {
        let (_, rest) = l.split_once("Collected :")?;
        rest.trim().parse().ok()
    })
}

fn count(binary: &Path, case: &str, isa: &str, n: usize, calls: usize) -> Result<u64, String> {
    let out = Command::new("valgrind")
        .args(["--tool=callgrind", "--callgrind-out-file=/dev/null"])
        .arg(binary)
        .args([case, isa, &n.to_string(), &calls.to_string()])
        .output()
        .map_err(|e| format!("cannot run valgrind ({e}); install it (e.g. `apt-get install valgrind`)"))?;
    let stderr = String::from_utf8_lossy(&out.stderr);
    if !out.status.success() {
        return Err(format!("profile run of {case} failed:\n{stderr}"));
    }
    parse_collected(&stderr).ok_or_else(|| format!("no `Collected :` line in valgrind's output:\n{stderr}"))
}

/// Builds the profile example and counts every case in `opts`.
pub fn run(opts: &Options) -> Result<Vec<Row>, String> {
    if opts.cases.is_empty() {
        return Err("no case given".into());
    }
    if opts.elements == 0 || opts.extra_calls == 0 {
        return Err("elements and extra calls must be positive".into());
    }
    let root = crate::workspace_root();
    let cargo = std::env::var("CARGO").unwrap_or_else(|_| "cargo".to_string());
    let st = Command::new(&cargo)
        .current_dir(&root)
        .args(["build", "--release", "--quiet", "-p", "qdq-benches", "--example", "profile"])
        .status()
        .map_err(|e| format!("cannot run {cargo}: {e}"))?;
    if !st.success() {
        return Err("building the profile example failed".into());
    }
    let target = std::env::var_os("CARGO_TARGET_DIR").map(Into::into).unwrap_or_else(|| root.join("target"));
    let binary = target.join("release").join("examples").join("profile");
    let isa = opts.isa.clone().unwrap_or_else(|| default_isa().to_string());
    let mut rows = Vec::new();
    for case in &opts.cases {
        let a = count(&binary, case, &isa, opts.elements, 1)?;
        let b = count(&binary, case, &isa, opts.elements, 1 + opts.extra_calls)?;
        let extra = (opts.extra_calls as f64) * (opts.elements as f64);
        rows.push(Row {
            case: case.clone(),
            isa: isa.clone(),
            elements: opts.elements,
            instructions_per_element: b.saturating_sub(a) as f64 / extra,
        });
    }
    Ok(rows)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_callgrinds_total() {
        let s = "==123== Events    : Ir\n==123== Collected : 52345678\n==123==\n==123== I   refs:      52,345,678\n";
        assert_eq!(parse_collected(s), Some(52_345_678));
        assert_eq!(parse_collected("==1== I   refs: 5"), None);
    }
}
