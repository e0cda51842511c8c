//! Workspace automation: the ONNX node-test conformance runner, the test-data generator and
//! the benchmark commands.
//!
//! * [`proto`]: the ONNX messages the runner reads (prost derive) and their tensor conversion.
//! * [`graph`]: a tiny interpreter for the graphs of the quantization node tests.
//! * [`conformance`]: test discovery, execution and bit-exact comparison.
//! * [`gen_data`]: regenerates the committed test data with the Python generators.
//! * [`bench`](mod@bench): the quick throughput summary (`cargo xtask bench`).
//! * [`vs_ort`]: qdq against onnxruntime on the same shapes (`cargo xtask vs-ort`).
//! * [`profile`]: instructions per element under callgrind (`cargo xtask profile`).
//! * [`capi_backend`]: the nodes through the C ABI of `crates/qdq-capi` (`--backend capi`).
//! * [`isacheck`]: every ISA of this CPU forced through the suites (`cargo xtask isa-check`).
//! * [`buildcheck`]: what depending on qdq costs (`cargo xtask downstream`, `cargo xtask
//!   build-time`).
//!
//! `main.rs` only parses the command line.

// Denied rather than forbidden: `capi_backend` calls the C ABI's `extern "C"` functions
// and is the one module that allows it.
#![deny(unsafe_code)]

pub mod bench;
pub mod buildcheck;
pub mod capi;
pub mod capi_backend;
pub mod conformance;
pub mod gen_data;
pub mod graph;
pub mod header;
pub mod isacheck;
pub mod ort_blockwise;
pub mod profile;
pub mod proto;
pub mod vs_ort;

use std::fmt;
use std::path::{Path, PathBuf};

/// Which implementation runs the QuantizeLinear / DequantizeLinear / DynamicQuantizeLinear
/// nodes.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum Backend {
    /// `qdq_ref`, the scalar reference.
    Ref,
    /// `qdq`, the crate inference engines link (SIMD kernels, `QDQ_ISA` picks the ISA).
    #[default]
    Qdq,
    /// `crates/qdq-capi`, the C ABI (`include/qdq.h`) over `qdq`, called through its
    /// `extern "C"` functions.
    Capi,
}

impl Backend {
    /// Parses `ref`, `qdq` or `capi`.
    pub fn parse(s: &str) -> Option<Backend> {
        match s {
            "ref" => Some(Backend::Ref),
            "qdq" => Some(Backend::Qdq),
            "capi" => Some(Backend::Capi),
            _ => None,
        }
    }

    /// `ref`, `qdq` or `capi`.
    pub fn name(self) -> &'static str {
        match self {
            Backend::Ref => "ref",
            Backend::Qdq => "qdq",
            Backend::Capi => "capi",
        }
    }

    /// Runs one quantization node with this backend's `run_node`; errors become strings
    /// (`Kind: message`, or `QDQ_STATUS: message` for the C ABI).
    pub fn run_node(
        self,
        op_type: &str,
        opset: qdq_ref::Opset,
        inputs: &[Option<qdq_ref::TensorRef<'_>>],
        attributes: &[qdq_ref::Attribute<'_>],
        num_outputs: usize,
    ) -> Result<Vec<qdq_ref::Tensor>, String> {
        let r = match self {
            Backend::Ref => qdq_ref::run_node(op_type, opset, inputs, attributes, num_outputs),
            Backend::Qdq => qdq::run_node(op_type, opset, inputs, attributes, num_outputs),
            Backend::Capi => return capi_backend::run_node(op_type, opset, inputs, attributes, num_outputs),
        };
        r.map_err(|e| format!("{:?}: {e}", e.kind()))
    }
}

impl fmt::Display for Backend {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

/// The workspace root (the parent of this crate's directory).
pub fn workspace_root() -> PathBuf {
    let manifest = Path::new(env!("CARGO_MANIFEST_DIR"));
    manifest.parent().unwrap_or(manifest).to_path_buf()
}

/// The committed node tests: `xtask/data/node`.
pub fn default_node_dir() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("data").join("node")
}
