//! End-to-end tests of the conformance runner on the committed node tests.

use std::fs;
use std::path::{Path, PathBuf};

use qdq_fixtures::Rng;
use xtask::conformance::{self, Summary};
use xtask::proto::{decode, ModelProto, TensorProto};
use xtask::{default_node_dir, graph, Backend};

fn run(paths: &[PathBuf], backend: Backend) -> (Summary, String) {
    let mut out = Vec::new();
    let summary = conformance::run(paths, backend, false, &mut out).unwrap();
    (summary, String::from_utf8(out).unwrap())
}

#[test]
fn committed_suite_passes_with_the_reference() {
    let (summary, out) = run(&[], Backend::Ref);
    assert_eq!(summary, Summary { passed: 33, failed: 0 }, "{out}");
    assert!(out.ends_with("33 passed, 0 failed\n"), "{out}");
}

#[test]
fn committed_suite_passes_with_qdq() {
    let (summary, out) = run(&[default_node_dir()], Backend::Qdq);
    assert_eq!(summary, Summary { passed: 33, failed: 0 }, "{out}");
}

#[test]
fn committed_suite_passes_through_the_c_abi() {
    let (summary, out) = run(&[], Backend::Capi);
    assert_eq!(summary, Summary { passed: 33, failed: 0 }, "{out}");
    assert!(out.starts_with("conformance: 33 node tests, backend capi, ISA "), "{out}");
}

fn copy_dir(from: &Path, to: &Path) {
    fs::create_dir_all(to).unwrap();
    for e in fs::read_dir(from).unwrap() {
        let e = e.unwrap();
        if e.path().is_dir() {
            copy_dir(&e.path(), &to.join(e.file_name()));
        } else {
            fs::copy(e.path(), to.join(e.file_name())).unwrap();
        }
    }
}

fn scratch(name: &str) -> PathBuf {
    let d = std::env::temp_dir().join(format!("xtask-suite-{}-{name}", std::process::id()));
    let _ = fs::remove_dir_all(&d);
    d
}

#[test]
fn failures_are_reported_and_counted() {
    let root = scratch("failures");
    let node = default_node_dir();
    for t in ["test_quantizelinear", "test_dequantizelinear_axis", "test_quantizelinear_int4"] {
        copy_dir(&node.join(t), &root.join(t));
    }
    // test_quantizelinear: u8 output [6], raw_data is the last field: flip the last element.
    let out0 = root.join("test_quantizelinear/test_data_set_0/output_0.pb");
    let mut b = fs::read(&out0).unwrap();
    let last = b.len() - 1;
    b[last] ^= 1;
    fs::write(&out0, &b).unwrap();
    let expected = decode::<TensorProto>(&b).unwrap().to_tensor().unwrap();
    // test_dequantizelinear_axis: truncate the model.
    let model = root.join("test_dequantizelinear_axis/model.onnx");
    let m = fs::read(&model).unwrap();
    fs::write(&model, &m[..m.len() - 3]).unwrap();
    let (summary, out) = run(&[root.clone(), root.join("does-not-exist")], Backend::Ref);
    assert_eq!(summary, Summary { passed: 1, failed: 3 }, "{out}");
    let e = expected.bytes()[5];
    let line = format!(
        "FAIL test_quantizelinear: output 0 element 5 (index [5]): expected {e} (0x{e:02x}), got {} (0x{:02x})",
        e ^ 1,
        e ^ 1
    );
    assert!(out.contains(&line), "{out}");
    assert!(out.contains("FAIL test_dequantizelinear_axis: model.onnx: "), "{out}");
    assert!(out.contains("does-not-exist: cannot read directory"), "{out}");
    assert!(out.ends_with("1 passed, 3 failed\n"), "{out}");
    assert!(!summary.success());
    // A single test directory can be named directly.
    let (summary, _) = run(&[root.join("test_quantizelinear_int4")], Backend::Ref);
    assert_eq!(summary, Summary { passed: 1, failed: 0 });
    // Nothing to run is not a success.
    let empty = scratch("empty");
    fs::create_dir_all(&empty).unwrap();
    let (summary, _) = run(std::slice::from_ref(&empty), Backend::Ref);
    assert!(!summary.success());
    fs::remove_dir_all(&root).unwrap();
    fs::remove_dir_all(&empty).unwrap();
}

/// Mutated models and inputs go through decoding, the interpreter and the backend without
/// panicking.
#[test]
fn mutated_tests_never_panic() {
    let mut rng = Rng::new(0x2545_f491_4f6c_dd1d);
    let node = default_node_dir();
    let (mut ran, mut ok) = (0usize, 0usize);
    for test in conformance::discover(&node).unwrap() {
        let model = fs::read(test.dir.join("model.onnx")).unwrap();
        let set = test.dir.join("test_data_set_0");
        let mut inputs = Vec::new();
        while let Ok(b) = fs::read(set.join(format!("input_{}.pb", inputs.len()))) {
            inputs.push(b);
        }
        for _ in 0..60 {
            let mut m = model.clone();
            let mut ins = inputs.clone();
            for _ in 0..1 + rng.next_u64() % 2 {
                let k = (rng.next_u64() as usize) % (ins.len() + 1);
                let buf = if k == ins.len() { &mut m } else { &mut ins[k] };
                let i = (rng.next_u64() as usize) % buf.len();
                buf[i] = rng.next_u64() as u8;
            }
            let Ok(model) = decode::<ModelProto>(&m) else { continue };
            let tensors: Result<Vec<_>, _> =
                ins.iter().map(|b| decode::<TensorProto>(b).and_then(|t| t.to_tensor())).collect();
            let Ok(tensors) = tensors else { continue };
            ran += 1;
            ok += usize::from(graph::run(&model, tensors, Backend::Ref).is_ok());
        }
    }
    // Enough mutations survive decoding to exercise the interpreter and the operators.
    eprintln!("{ran} mutated tests ran, {ok} without an error");
    assert!(ran > 300 && ok > 100, "{ran} ran, {ok} ok");
}
