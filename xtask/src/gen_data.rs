//! `cargo xtask gen-data`: regenerates the committed test data with the Python generators.
//!
//! Creates (once) a virtual environment at `<workspace>/target/venv`, installs
//! `onnx==1.23.2 numpy ml_dtypes` into it, then runs
//! `xtask/python/gen_node_tests.py` (into `xtask/data/node`) and
//! `xtask/python/gen_codec_tables.py` (into `crates/qdq-ref/tests/data`). Every command is
//! printed before it runs.

use std::path::{Path, PathBuf};
use std::process::Command;

/// The pinned generator dependencies.
pub const PACKAGES: [&str; 3] = ["onnx==1.23.2", "numpy", "ml_dtypes"];

/// Where the generators write.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Outputs {
    /// Node tests (default `xtask/data/node`).
    pub node_dir: PathBuf,
    /// Codec tables (default `crates/qdq-ref/tests/data`).
    pub tables_dir: PathBuf,
}

impl Default for Outputs {
    fn default() -> Self {
        let root = crate::workspace_root();
        Outputs { node_dir: crate::default_node_dir(), tables_dir: root.join("crates/qdq-ref/tests/data") }
    }
}

fn venv_python(venv: &Path) -> PathBuf {
    if cfg!(windows) {
        venv.join("Scripts").join("python.exe")
    } else {
        venv.join("bin").join("python")
    }
}

fn run(cmd: &mut Command) -> Result<(), String> {
    let shown = std::iter::once(cmd.get_program())
        .chain(cmd.get_args())
        .map(|a| a.to_string_lossy().into_owned())
        .collect::<Vec<_>>()
        .join(" ");
    println!("+ {shown}");
    let status = cmd.status().map_err(|e| format!("cannot run `{shown}`: {e}"))?;
    if !status.success() {
        return Err(format!("`{shown}` failed ({status})"));
    }
    Ok(())
}

/// Creates the venv if needed, installs the packages and runs both generators.
pub fn gen_data(outputs: &Outputs) -> Result<(), String> {
    let root = crate::workspace_root();
    let venv = root.join("target").join("venv");
    let python = venv_python(&venv);
    if !python.is_file() {
        run(Command::new("python3").arg("-m").arg("venv").arg(&venv))?;
    }
    run(Command::new(&python).args(["-m", "pip", "install", "--quiet"]).args(PACKAGES))?;
    let scripts = root.join("xtask").join("python");
    run(Command::new(&python).arg(scripts.join("gen_node_tests.py")).arg(&outputs.node_dir))?;
    run(Command::new(&python).arg(scripts.join("gen_codec_tables.py")).arg(&outputs.tables_dir))?;
    Ok(())
}
