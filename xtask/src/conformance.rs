//! The ONNX node-test conformance runner.
//!
//! A node test is a directory holding `model.onnx` and `test_data_set_K/` folders of
//! `input_N.pb` / `output_N.pb` TensorProtos. [`run`] executes each test's graph with the
//! chosen [`Backend`] and compares every output bit for bit with the expected tensor:
//! element type and shape must match exactly, then each element's code (read with
//! `qdq_ref::packing::get`, so padding bits are ignored) must be equal, except that for
//! float types (f32, f16, bf16, float8, float6, float4, e8m0) any NaN equals any NaN.
//!
//! Output: one `FAIL <test>: <reason>` line per failing test (and `ok <test>` per passing
//! one with `verbose`), then `N passed, M failed`. Decoding errors, operator errors and
//! panics (caught per test) are failures; nothing aborts the run.

use std::fs;
use std::io::{self, Read, Write};
use std::panic::{self, AssertUnwindSafe};
use std::path::{Path, PathBuf};

use qdq_ref::float::{decode_e8m0, FloatFormat};
use qdq_ref::packing;
use qdq_ref::{DataType, Tensor};

use crate::proto::{self, ModelProto, TensorProto, MAX_MESSAGE_BYTES};
use crate::{graph, Backend};

/// The largest file the runner reads: the decoder's message cap, checked while reading so
/// an oversized file is never read whole.
pub const MAX_FILE_BYTES: u64 = MAX_MESSAGE_BYTES as u64;

/// How a run went.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Summary {
    /// Tests whose every data set matched.
    pub passed: usize,
    /// Tests that failed, could not be read, or panicked (plus unreadable PATH arguments).
    pub failed: usize,
}

impl Summary {
    /// Whether the run should exit with status 0: something ran and nothing failed.
    pub fn success(&self) -> bool {
        self.failed == 0 && self.passed > 0
    }
}

/// One node test.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct TestCase {
    /// The directory name (`test_quantizelinear_int4`).
    pub name: String,
    /// The directory holding `model.onnx`.
    pub dir: PathBuf,
}

/// Why a test failed: the reason goes on the `FAIL` line, `detail` is printed with
/// `verbose`.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Failure {
    /// Text after `FAIL <test>: `.
    pub reason: String,
    /// Extra lines for `--verbose`.
    pub detail: Option<String>,
}

impl From<String> for Failure {
    fn from(reason: String) -> Self {
        Failure { reason, detail: None }
    }
}

fn dir_name(path: &Path) -> String {
    match path.file_name() {
        Some(n) => n.to_string_lossy().into_owned(),
        None => path.display().to_string(),
    }
}

/// The tests under `path`: `path` itself when it holds `model.onnx`, else its
/// subdirectories that do (one level), sorted by name.
pub fn discover(path: &Path) -> Result<Vec<TestCase>, String> {
    if path.join("model.onnx").is_file() {
        return Ok(vec![TestCase { name: dir_name(path), dir: path.to_path_buf() }]);
    }
    let entries = fs::read_dir(path).map_err(|e| format!("cannot read directory: {e}"))?;
    let mut tests = Vec::new();
    for entry in entries {
        let entry = entry.map_err(|e| format!("cannot read directory: {e}"))?;
        let dir = entry.path();
        if dir.join("model.onnx").is_file() {
            tests.push(TestCase { name: dir_name(&dir), dir });
        }
    }
    tests.sort_by(|a, b| a.name.cmp(&b.name));
    Ok(tests)
}

/// Runs every test found under `paths` (the committed `xtask/data/node` when empty),
/// writing the report to `out`.
pub fn run(paths: &[PathBuf], backend: Backend, verbose: bool, out: &mut dyn Write) -> io::Result<Summary> {
    let default = [crate::default_node_dir()];
    let paths = if paths.is_empty() { &default[..] } else { paths };
    let mut summary = Summary::default();
    let mut tests = Vec::new();
    // (line, counts as a failure)
    let mut notes = Vec::new();
    for p in paths {
        match discover(p) {
            Ok(found) if found.is_empty() => notes.push((format!("warning: no node tests in {}", p.display()), false)),
            Ok(found) => tests.extend(found),
            Err(e) => notes.push((format!("FAIL {}: {e}", p.display()), true)),
        }
    }
    // The qdq and capi backends run on `Isa::detect()`: a bad QDQ_ISA stops the run here,
    // before any test can pass on another ISA under its name.
    let isa = match backend {
        Backend::Qdq => match qdq::Isa::detect() {
            Ok(isa) => {
                format!(", ISA {isa}{}", if qdq::Isa::forced().ok().flatten().is_some() { " (QDQ_ISA)" } else { "" })
            }
            Err(e) => {
                writeln!(out, "conformance: {e}")?;
                return Err(io::Error::other(e.to_string()));
            }
        },
        // The same check through the C ABI (`qdq_isa_detect`).
        Backend::Capi => match crate::capi_backend::isa_banner() {
            Ok(banner) => banner,
            Err(e) => {
                writeln!(out, "conformance: {e}")?;
                return Err(io::Error::other(e));
            }
        },
        Backend::Ref => String::new(),
    };
    writeln!(out, "conformance: {} node tests, backend {backend}{isa}", tests.len())?;
    for (line, failure) in notes {
        writeln!(out, "{line}")?;
        summary.failed += usize::from(failure);
    }
    for test in &tests {
        let result = panic::catch_unwind(AssertUnwindSafe(|| run_test(test, backend)));
        let result = match result {
            Ok(r) => r,
            Err(payload) => Err(Failure::from(format!("panicked: {}", panic_message(payload.as_ref())))),
        };
        match result {
            Ok(()) => {
                summary.passed += 1;
                if verbose {
                    writeln!(out, "ok {}", test.name)?;
                }
            }
            Err(f) => {
                summary.failed += 1;
                writeln!(out, "FAIL {}: {}", test.name, f.reason)?;
                if let (true, Some(d)) = (verbose, &f.detail) {
                    writeln!(out, "{d}")?;
                }
            }
        }
    }
    writeln!(out, "{} passed, {} failed", summary.passed, summary.failed)?;
    Ok(summary)
}

fn panic_message(payload: &(dyn std::any::Any + Send)) -> String {
    if let Some(s) = payload.downcast_ref::<&str>() {
        (*s).to_string()
    } else if let Some(s) = payload.downcast_ref::<String>() {
        s.clone()
    } else {
        "(non-string panic payload)".to_string()
    }
}

/// Reads a whole file, refusing anything larger than [`MAX_FILE_BYTES`].
pub fn read_capped(path: &Path) -> Result<Vec<u8>, String> {
    let file = fs::File::open(path).map_err(|e| format!("cannot open: {e}"))?;
    let mut data = Vec::new();
    file.take(MAX_FILE_BYTES + 1).read_to_end(&mut data).map_err(|e| format!("cannot read: {e}"))?;
    if data.len() as u64 > MAX_FILE_BYTES {
        return Err(format!("file is larger than {MAX_FILE_BYTES} bytes"));
    }
    Ok(data)
}

fn load_tensor(path: &Path) -> Result<Tensor, String> {
    let data = read_capped(path)?;
    let proto = proto::decode::<TensorProto>(&data).map_err(|e| e.to_string())?;
    proto.to_tensor().map_err(|e| e.to_string())
}

/// `prefix_0.pb`, `prefix_1.pb`, ... up to the first missing index.
fn load_numbered(dir: &Path, prefix: &str, set: &str) -> Result<Vec<Tensor>, String> {
    let mut tensors = Vec::new();
    loop {
        let file = format!("{prefix}_{}.pb", tensors.len());
        let path = dir.join(&file);
        if !path.is_file() {
            return Ok(tensors);
        }
        tensors.push(load_tensor(&path).map_err(|e| format!("{set}/{file}: {e}"))?);
    }
}

/// The `test_data_set_K` directories, ordered by K.
fn data_sets(dir: &Path) -> Result<Vec<(String, PathBuf)>, String> {
    let entries = fs::read_dir(dir).map_err(|e| format!("cannot read the test directory: {e}"))?;
    let mut sets = Vec::new();
    for entry in entries {
        let entry = entry.map_err(|e| format!("cannot read the test directory: {e}"))?;
        let name = entry.file_name().to_string_lossy().into_owned();
        if let Some(k) = name.strip_prefix("test_data_set_") {
            if entry.path().is_dir() {
                sets.push((k.parse::<u64>().unwrap_or(u64::MAX), name, entry.path()));
            }
        }
    }
    sets.sort();
    if sets.is_empty() {
        return Err("no test_data_set_* directory".into());
    }
    Ok(sets.into_iter().map(|(_, n, p)| (n, p)).collect())
}

/// Runs one test (every data set) and compares its outputs.
pub fn run_test(test: &TestCase, backend: Backend) -> Result<(), Failure> {
    let bytes = read_capped(&test.dir.join("model.onnx")).map_err(|e| format!("model.onnx: {e}"))?;
    let model =
        proto::decode_limited::<ModelProto>(&bytes, proto::MAX_MODEL_BYTES).map_err(|e| format!("model.onnx: {e}"))?;
    let sets = data_sets(&test.dir)?;
    let many = sets.len() > 1;
    for (name, dir) in &sets {
        let prefix = if many { format!("{name}: ") } else { String::new() };
        let add_prefix = |f: Failure| Failure { reason: format!("{prefix}{}", f.reason), detail: f.detail };
        run_data_set(&model, name, dir, backend).map_err(add_prefix)?;
    }
    Ok(())
}

fn run_data_set(model: &ModelProto, name: &str, dir: &Path, backend: Backend) -> Result<(), Failure> {
    let inputs = load_numbered(dir, "input", name)?;
    let expected = load_numbered(dir, "output", name)?;
    let produced = graph::run(model, inputs, backend)?;
    if expected.len() != produced.len() {
        return Err(format!(
            "the data set has {} expected outputs, the graph produces {}",
            expected.len(),
            produced.len()
        )
        .into());
    }
    for (k, (e, g)) in expected.iter().zip(&produced).enumerate() {
        compare(k, e, g)?;
    }
    Ok(())
}

/// Whether `code` is a NaN of `t` (never for integer types).
pub fn is_nan(t: DataType, code: u32) -> bool {
    match t {
        DataType::F32 => f32::from_bits(code).is_nan(),
        DataType::E8M0 => code == 0xff,
        _ => FloatFormat::of(t).is_some_and(|f| f.is_nan(code)),
    }
}

/// A code's value, for messages: floats decoded exactly, integers sign-extended as needed.
pub fn format_value(t: DataType, code: u32) -> String {
    match t {
        DataType::F32 => format!("{:?}", f32::from_bits(code)),
        DataType::E8M0 => format!("{:?}", decode_e8m0(code as u8)),
        _ => match (FloatFormat::of(t), t.int_range()) {
            (Some(f), _) => format!("{:?}", f.decode(code)),
            (None, Some((lo, _))) if lo < 0 => packing::sign_extend(code, t.bits()).to_string(),
            _ => code.to_string(),
        },
    }
}

/// A code in hex, as many digits as the type's width needs.
pub fn format_bits(t: DataType, code: u32) -> String {
    format!("0x{code:0w$x}", w = t.bits().div_ceil(4) as usize)
}

/// The multi-dimensional index of flat element `i` (row-major).
pub fn unravel(mut i: usize, shape: &[usize]) -> Vec<usize> {
    let mut idx = vec![0usize; shape.len()];
    for (d, &n) in shape.iter().enumerate().rev() {
        if n > 0 {
            idx[d] = i % n;
            i /= n;
        }
    }
    idx
}

/// Compares output `k`: type and shape exactly, then every element code bit for bit (NaN
/// payloads included: qdq writes one canonical NaN, see the README).
pub fn compare(k: usize, expected: &Tensor, got: &Tensor) -> Result<(), Failure> {
    if expected.dtype() != got.dtype() || expected.shape() != got.shape() {
        return Err(format!(
            "output {k}: expected {} with shape {:?}, got {} with shape {:?}",
            expected.dtype(),
            expected.shape(),
            got.dtype(),
            got.shape()
        )
        .into());
    }
    let t = expected.dtype();
    let n = expected.view().checked_len("expected").map_err(|e| format!("output {k}: {e}"))?;
    got.view().checked_len("got").map_err(|e| format!("output {k}: the backend's tensor is malformed: {e}"))?;
    let mut first = None;
    let mut count = 0usize;
    for i in 0..n {
        let (ce, cg) = (packing::get(t, expected.bytes(), i), packing::get(t, got.bytes(), i));
        if ce != cg {
            count += 1;
            first.get_or_insert((i, ce, cg));
        }
    }
    match first {
        None => Ok(()),
        Some((i, ce, cg)) => Err(Failure {
            reason: format!(
                "output {k} element {i} (index {:?}): expected {} ({}), got {} ({})",
                unravel(i, expected.shape()),
                format_value(t, ce),
                format_bits(t, ce),
                format_value(t, cg),
                format_bits(t, cg)
            ),
            detail: Some(format!("  {count} of {n} elements of output {k} differ")),
        }),
    }
}
