//! Every public function of `qdq` and `qdq-ref` (the API an engine reads, `qdq` re-exports
//! most of `qdq-ref`) has a doc example that runs as a doc-test: a fenced block that is
//! Rust and neither `ignore`, `no_run`, `compile_fail` nor another language. `cargo test
//! --doc` runs them; this test fails on any public function without one, naming it.
//!
//! "Public function" is any `pub fn` (not `pub(crate)`) in the two crates' sources; private
//! modules use `pub(crate)`, so that every `pub fn` is part of the API. `#[doc(hidden)]`
//! functions are exempt.

use std::path::{Path, PathBuf};

fn sources(dir: &Path, out: &mut Vec<PathBuf>) {
    for entry in std::fs::read_dir(dir).unwrap() {
        let path = entry.unwrap().path();
        if path.is_dir() {
            sources(&path, out);
        } else if path.extension().is_some_and(|e| e == "rs") {
            out.push(path);
        }
    }
}

/// Whether a fence's info string makes the block a doc-test that runs.
fn runs(info: &str) -> bool {
    let tags: Vec<&str> = info.split(',').map(str::trim).filter(|t| !t.is_empty()).collect();
    let not_rust = tags.iter().any(|t| !matches!(*t, "rust" | "should_panic" | "edition2021" | "edition2024"));
    !not_rust
}

/// The public functions of `source` without a runnable example: `(line, signature)`.
fn missing(source: &str) -> Vec<(usize, String)> {
    let lines: Vec<&str> = source.lines().collect();
    let mut out = Vec::new();
    for (i, line) in lines.iter().enumerate() {
        let t = line.trim_start();
        let is_pub_fn =
            ["pub fn ", "pub const fn ", "pub unsafe fn ", "pub const unsafe fn "].iter().any(|p| t.starts_with(p));
        if !is_pub_fn {
            continue;
        }
        // The attributes and doc lines above the signature.
        let mut docs = Vec::new();
        let mut hidden = false;
        for above in lines[..i].iter().rev() {
            let a = above.trim_start();
            if let Some(d) = a.strip_prefix("///") {
                docs.push(d.trim_start().to_string());
            } else if let Some(rest) = a.strip_prefix("#[doc = ") {
                // `#[doc = concat!(...)]` lines inside macros: code, not fences.
                docs.push(rest.to_string());
            } else if a.starts_with("#[") || a.starts_with("//") {
                hidden |= a.starts_with("#[doc(hidden)]");
            } else {
                break;
            }
        }
        docs.reverse();
        // Opening fences alternate with closing ones; only an opening fence's info string counts.
        let fences: Vec<&str> = docs.iter().filter_map(|d| d.strip_prefix("```")).collect();
        let has_example = fences.iter().step_by(2).any(|info| runs(info));
        if !hidden && !has_example {
            out.push((i + 1, t.trim_end_matches('{').trim().to_string()));
        }
    }
    out
}

#[test]
fn every_public_function_has_a_runnable_doc_example() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("..");
    let mut files = Vec::new();
    for krate in ["qdq/src", "qdq-ref/src"] {
        sources(&root.join(krate), &mut files);
    }
    files.sort();
    let mut report = Vec::new();
    let mut total = 0;
    for f in &files {
        let src = std::fs::read_to_string(f).unwrap();
        total += src.lines().filter(|l| l.trim_start().starts_with("pub fn ")).count();
        for (line, sig) in missing(&src) {
            report.push(format!("{}:{line}: {sig}", f.strip_prefix(&root).unwrap().display()));
        }
    }
    assert!(total > 100, "found only {total} public functions: is the source walk broken?");
    assert!(
        report.is_empty(),
        "{} public functions without a runnable doc example:\n{}",
        report.len(),
        report.join("\n")
    );
}

#[test]
fn the_checker_sees_what_it_should() {
    let src = "/// Doc.\n///\n/// ```\n/// assert!(true);\n/// ```\npub fn a() {}\n\n/// ```text\n/// x\n/// ```\npub fn b() {}\n\n/// ```no_run\n/// f();\n/// ```\n#[inline]\npub fn c() {}\n\npub(crate) fn d() {}\n#[doc(hidden)]\npub fn e() {}\n";
    let names: Vec<String> = missing(src).into_iter().map(|(_, s)| s).collect();
    assert_eq!(names, ["pub fn b() {}", "pub fn c() {}"]);
}
