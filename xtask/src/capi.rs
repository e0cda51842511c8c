//! `cargo xtask capi-test`: the C ABI (`crates/qdq-capi`, `include/qdq.h`) exercised from C
//! and C++.
//!
//! 1. `cargo build -p qdq-capi` (dev profile: `target/debug/libqdq.a`).
//! 2. `include/qdq.h` checked against the sources ([`crate::header::run`] with `check`).
//! 3. `crates/qdq-capi/tests/c/test_capi.c` compiled as strict C11 (`-Wall -Wextra -Werror
//!    -pedantic`, with AddressSanitizer and UndefinedBehaviorSanitizer unless
//!    `--no-sanitize`), linked against the static library, and run.
//! 4. `crates/qdq-capi/tests/c/header_check.cpp` compiled as strict C++17, linked and run.
//! 5. `crates/qdq-capi/examples/quantize_dequantize.c` compiled like the test, and run.
//!
//! `CC` and `CXX` override the compilers (`cc`, `c++`); binaries go to
//! `target/capi-test/` (`CARGO_TARGET_DIR` respected). Every command is printed; a summary
//! of the steps ends the run, and any failure makes it fail.

use std::io::{BufRead, BufReader};
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};

/// What `capi-test` runs.
#[derive(Clone, Copy, Debug)]
pub struct Options {
    /// Build the C programs with `-fsanitize=address,undefined` (default true).
    pub sanitize: bool,
}

impl Default for Options {
    fn default() -> Self {
        Options { sanitize: true }
    }
}

/// Warnings every C and C++ file must compile without.
const STRICT: &[&str] = &["-Wall", "-Wextra", "-Werror", "-pedantic"];

/// The sanitizers the C programs run under (with debug information for their reports).
const SANITIZE: &[&str] = &["-fsanitize=address,undefined", "-fno-omit-frame-pointer", "-g"];

/// The system libraries a Rust static library needs, as
/// `cargo rustc -p qdq-capi --lib --crate-type staticlib -- --print native-static-libs`
/// prints them (Rust 1.89; x86-64 and aarch64 Linux give the same list). Hard-coded: asking
/// rustc each run rebuilds the crate with other flags, and the list only changes with the
/// target's standard library.
fn native_libs() -> &'static [&'static str] {
    if cfg!(target_os = "macos") {
        &["-lSystem", "-lc", "-lm"]
    } else if cfg!(target_os = "linux") {
        &["-lgcc_s", "-lutil", "-lrt", "-lpthread", "-lm", "-ldl", "-lc"]
    } else {
        &["-lpthread", "-ldl", "-lm"]
    }
}

/// `cargo`, as the one running xtask.
fn cargo() -> String {
    std::env::var("CARGO").unwrap_or_else(|_| "cargo".to_string())
}

/// A compiler from the environment variable `var` (which may carry arguments, e.g.
/// `CC="ccache gcc"`), else `default`.
fn compiler(var: &str, default: &str) -> Vec<String> {
    let words: Vec<String> = std::env::var(var).unwrap_or_default().split_whitespace().map(str::to_string).collect();
    if words.is_empty() {
        vec![default.to_string()]
    } else {
        words
    }
}

/// The build's target directory: `CARGO_TARGET_DIR` (relative to the workspace root) or
/// `target`.
fn target_dir(root: &Path) -> PathBuf {
    match std::env::var_os("CARGO_TARGET_DIR") {
        Some(d) if !d.is_empty() => root.join(d),
        _ => root.join("target"),
    }
}

/// `p` relative to the workspace root when it lies inside it (the commands run there).
fn arg(root: &Path, p: &Path) -> String {
    p.strip_prefix(root).unwrap_or(p).display().to_string()
}

/// One command line: the program, its arguments and the environment it adds.
struct Cmd {
    argv: Vec<String>,
    env: Vec<(&'static str, String)>,
}

impl Cmd {
    fn new(argv: Vec<String>) -> Cmd {
        Cmd { argv, env: Vec::new() }
    }

    fn line(&self) -> String {
        let env = self.env.iter().map(|(k, v)| format!("{k}={v} "));
        env.collect::<String>() + &self.argv.join(" ")
    }

    /// Runs it in `root`, echoing its output; returns the last line of its standard output
    /// (the C test's "N passed, M failed").
    fn run(&self, root: &Path) -> Result<String, String> {
        println!("$ {}", self.line());
        let mut cmd = Command::new(&self.argv[0]);
        cmd.args(&self.argv[1..]).current_dir(root).stdout(Stdio::piped());
        for (k, v) in &self.env {
            cmd.env(k, v);
        }
        let mut child = cmd.spawn().map_err(|e| format!("cannot run {}: {e}", self.argv[0]))?;
        let mut last = String::new();
        if let Some(out) = child.stdout.take() {
            for line in BufReader::new(out).lines().map_while(Result::ok) {
                println!("{line}");
                if !line.trim().is_empty() {
                    last = line;
                }
            }
        }
        let status = child.wait().map_err(|e| format!("{}: {e}", self.argv[0]))?;
        if status.success() {
            Ok(last)
        } else {
            Err(format!("`{}` failed ({status})", self.line()))
        }
    }
}

/// The steps run and their outcomes, for the summary.
#[derive(Default)]
struct Report {
    steps: Vec<(String, Result<String, String>)>,
}

impl Report {
    /// Records a step; true if it succeeded.
    fn record(&mut self, name: &str, r: Result<String, String>) -> bool {
        if let Err(e) = &r {
            eprintln!("error: {e}");
        }
        let ok = r.is_ok();
        self.steps.push((name.to_string(), r));
        ok
    }

    /// Prints the summary; Err if a step failed.
    fn finish(self) -> Result<(), String> {
        println!("\n== capi-test summary");
        let mut failed = 0;
        for (name, r) in &self.steps {
            match r {
                Ok(note) if note.is_empty() => println!("  ok      {name}"),
                Ok(note) => println!("  ok      {name}: {note}"),
                Err(e) => {
                    failed += 1;
                    println!("  FAILED  {name}: {e}");
                }
            }
        }
        if failed == 0 {
            Ok(())
        } else {
            Err(format!("{failed} of {} capi-test steps failed", self.steps.len()))
        }
    }
}

/// Runs `cargo xtask capi-test` (see the module docs).
pub fn run(opts: &Options) -> Result<(), String> {
    let root = crate::workspace_root();
    let target = target_dir(&root);
    let lib = arg(&root, &target.join("debug").join("libqdq.a"));
    let out = target.join("capi-test");
    let mut report = Report::default();

    println!("== build the static library");
    let build = Cmd::new(vec![cargo(), "build".into(), "-p".into(), "qdq-capi".into()]).run(&root);
    if !report.record("cargo build -p qdq-capi", build.map(|_| lib.clone())) {
        return report.finish();
    }

    println!("\n== header check");
    let header = crate::header::run(&root, true);
    if let Ok(msg) = &header {
        println!("{msg}");
    }
    report.record("header check (include/qdq.h up to date)", header.map(|_| String::new()));

    std::fs::create_dir_all(&out).map_err(|e| format!("{}: {e}", out.display()))?;
    let sanitize: &[&str] = if opts.sanitize { SANITIZE } else { &[] };
    let cc = compiler("CC", "cc");
    let cxx = compiler("CXX", "c++");
    // A C or C++ program of the crate: compile, link against libqdq.a, run.
    let mut program = |title: &str, compiler: &[String], std: &str, source: &str, extra: &[&str], bin: &str| {
        println!("\n== {title}");
        let bin = arg(&root, &out.join(bin));
        let mut argv: Vec<String> = compiler.to_vec();
        argv.push(std.into());
        argv.extend(STRICT.iter().chain(sanitize).chain(extra).map(|s| s.to_string()));
        argv.extend(["-Iinclude".into(), source.into(), lib.clone()]);
        argv.extend(native_libs().iter().map(|s| s.to_string()));
        argv.extend(["-o".into(), bin.clone()]);
        if !report.record(&format!("compile {source}"), Cmd::new(argv).run(&root).map(|_| String::new())) {
            return;
        }
        let exe_path = if Path::new(&bin).is_absolute() { bin.clone() } else { format!("./{bin}") };
        let mut exe = Cmd::new(vec![exe_path]);
        if opts.sanitize {
            exe.env.push(("ASAN_OPTIONS", "detect_leaks=1".into()));
            exe.env.push(("UBSAN_OPTIONS", "halt_on_error=1:print_stacktrace=1".into()));
        }
        report.record(&format!("run {bin}"), exe.run(&root));
    };
    program("C11 tests", &cc, "-std=c11", "crates/qdq-capi/tests/c/test_capi.c", &["-pthread"], "test_capi");
    program("C++17 header check", &cxx, "-std=c++17", "crates/qdq-capi/tests/c/header_check.cpp", &[], "header_check");
    program("C example", &cc, "-std=c11", "crates/qdq-capi/examples/quantize_dequantize.c", &[], "quantize_dequantize");
    report.finish()
}
