//! What depending on qdq costs: `cargo xtask downstream` (a dependent crate built with
//! cargo's default profiles runs every op on every ISA, on the main thread and on a 2 MiB
//! thread, and no qdq function's stack frame may exceed [`FRAME_LIMIT`]) and
//! `cargo xtask build-time` (clean release builds of qdq and of the `gemm` crate back to
//! back, their times, ratio and peak memory).
//!
//! Frame sizes are read from the machine code: every x86-64 function that needs more than
//! a few bytes of stack starts by moving the stack pointer down by its frame size, either
//! `sub $N,%rsp` or, for frames beyond a page, the stack probe's `sub $N,%r11` / `lea
//! -N(%rsp),%r11` before its loop. `objdump -d -C` of the downstream binary gives each
//! function's name and those immediates; the largest per function is its frame.

use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::Instant;

/// The most stack any qdq function may reserve for its own frame.
pub const FRAME_LIMIT: u64 = 256 * 1024;

/// The workspace root (the parent of this crate's directory).
pub fn root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).parent().expect("xtask lives in the workspace").to_path_buf()
}

fn cargo() -> String {
    std::env::var("CARGO").unwrap_or_else(|_| "cargo".to_string())
}

fn run(cmd: &mut Command) -> Result<(), String> {
    let st = cmd.status().map_err(|e| format!("cannot run {cmd:?}: {e}"))?;
    if st.success() {
        Ok(())
    } else {
        Err(format!("{cmd:?} failed ({st})"))
    }
}

/// One function's frame.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Frame {
    pub bytes: u64,
    pub function: String,
}

/// The largest stack adjustment of every function in `objdump -d -C` output.
pub fn frames(disassembly: &str) -> Vec<Frame> {
    let mut out: Vec<Frame> = Vec::new();
    let mut current: Option<Frame> = None;
    for line in disassembly.lines() {
        // "0000000000012340 <qdq::quantize::run<...>>:"
        if let Some(name) = line.strip_suffix(">:").and_then(|l| l.split_once(" <")).map(|(_, n)| n) {
            if let Some(f) = current.take() {
                out.push(f);
            }
            current = Some(Frame { bytes: 0, function: name.to_string() });
            continue;
        }
        let Some(f) = current.as_mut() else { continue };
        if let Some(n) = stack_immediate(line) {
            f.bytes = f.bytes.max(n);
        }
    }
    out.extend(current);
    out
}

/// The frame size a `sub $N,%rsp`, `sub $N,%r11` or `lea -N(%rsp),%r11` line reserves.
fn stack_immediate(line: &str) -> Option<u64> {
    let ins = line.split('\t').next_back()?.trim();
    let hex = |s: &str| u64::from_str_radix(s.trim_start_matches("0x"), 16).ok();
    if let Some(rest) = ins.strip_prefix("sub") {
        let (imm, reg) = rest.trim().split_once(',')?;
        if reg == "%rsp" || reg == "%r11" {
            // `sub $0xffffffffffffff80,%rsp` is `add $128` written with a short immediate.
            return hex(imm.strip_prefix('$')?).filter(|n| *n <= i64::MAX as u64);
        }
    }
    if let Some(rest) = ins.strip_prefix("lea") {
        let (mem, reg) = rest.trim().split_once(',')?;
        if reg == "%r11" {
            return hex(mem.strip_suffix("(%rsp)")?.strip_prefix('-')?);
        }
    }
    None
}

/// `cargo xtask downstream`: builds and runs `xtask/downstream` in the dev profile and in
/// the release profile, then checks the frames of its qdq functions.
pub fn downstream(profiles: &[&str]) -> Result<(), String> {
    let root = root();
    let manifest = root.join("xtask/downstream/Cargo.toml");
    let target = root.join("target/downstream");
    let mut worst_all = 0;
    for profile in profiles {
        println!("== downstream crate, profile {profile} ==");
        let mut build = Command::new(cargo());
        build.arg("run").arg("--manifest-path").arg(&manifest).arg("--profile").arg(profile);
        build.env("CARGO_TARGET_DIR", &target).env_remove("RUSTFLAGS").env_remove("CARGO_ENCODED_RUSTFLAGS");
        run(&mut build)?;
        let dir = if *profile == "dev" { "debug" } else { profile };
        let bin = target.join(dir).join("qdq-downstream");
        let worst = check_frames(&bin)?;
        worst_all = worst_all.max(worst);
    }
    println!("largest qdq stack frame in any profile: {worst_all} bytes (limit {FRAME_LIMIT})");
    Ok(())
}

/// Prints the largest qdq frames of `bin` and fails if one exceeds [`FRAME_LIMIT`].
pub fn check_frames(bin: &Path) -> Result<u64, String> {
    let out = Command::new("objdump")
        .arg("-d")
        .arg("-C")
        .arg("--no-show-raw-insn")
        .arg(bin)
        .output()
        .map_err(|e| format!("cannot run objdump (binutils) on {}: {e}", bin.display()))?;
    if !out.status.success() {
        return Err(format!("objdump failed on {}", bin.display()));
    }
    let text = String::from_utf8_lossy(&out.stdout);
    // qdq's own functions, and pulp's target-feature entry points (`vectorize::imp*`), which
    // in this binary only qdq instantiates (their demangled names carry no generics).
    let mut fr: Vec<Frame> = frames(&text)
        .into_iter()
        .filter(|f| f.function.contains("qdq::") || f.function.contains("vectorize::imp"))
        .collect();
    if fr.is_empty() {
        return Err(format!("no qdq function found in {}", bin.display()));
    }
    fr.sort_by_key(|f| std::cmp::Reverse(f.bytes));
    println!("{} qdq functions in {}; the largest frames:", fr.len(), bin.display());
    for f in fr.iter().take(5) {
        let name: String = f.function.chars().take(150).collect();
        println!("  {:>9} bytes  {name}", f.bytes);
    }
    let worst = fr[0].bytes;
    if worst > FRAME_LIMIT {
        return Err(format!("a qdq function reserves {worst} bytes of stack, over the {FRAME_LIMIT}-byte limit"));
    }
    Ok(worst)
}

/// Wall time and peak resident memory (of the largest process, i.e. rustc) of a command.
fn timed(cmd: &mut Command) -> Result<(f64, Option<u64>), String> {
    let rss_file = std::env::temp_dir().join(format!("qdq-build-time-{}.txt", std::process::id()));
    let have_time = Path::new("/usr/bin/time").exists();
    let mut full = if have_time {
        let mut c = Command::new("/usr/bin/time");
        c.arg("-f").arg("%M").arg("-o").arg(&rss_file).arg(cmd.get_program()).args(cmd.get_args());
        for (k, v) in cmd.get_envs() {
            match v {
                Some(v) => c.env(k, v),
                None => c.env_remove(k),
            };
        }
        if let Some(d) = cmd.get_current_dir() {
            c.current_dir(d);
        }
        c
    } else {
        std::mem::replace(cmd, Command::new("true"))
    };
    let t = Instant::now();
    run(&mut full)?;
    let secs = t.elapsed().as_secs_f64();
    let rss = std::fs::read_to_string(&rss_file).ok().and_then(|s| s.trim().lines().last()?.trim().parse().ok());
    let _ = std::fs::remove_file(&rss_file);
    Ok((secs, rss))
}

/// `cargo xtask build-time`: clean release builds of `qdq` (this workspace) and of
/// `gemm` 0.18 (a fresh crate depending on it), back to back, each into an empty target
/// directory, with the dependencies already downloaded; prints both times, the ratio and
/// the peak memory of the largest compiler process. `rounds` pairs of builds alternate
/// (qdq, gemm, qdq, gemm, ...) and the median ratio is reported: on a shared virtual
/// machine one pair can be off by a third. `also_dev` adds a clean dev-profile build of
/// qdq.
pub fn build_time(also_dev: bool, rounds: usize) -> Result<(), String> {
    let root = root();
    let scratch = root.join("target/build-time");
    let gemm_dir = scratch.join("gemm-probe");
    std::fs::create_dir_all(gemm_dir.join("src")).map_err(|e| e.to_string())?;
    std::fs::write(
        gemm_dir.join("Cargo.toml"),
        "[package]\nname = \"gemm-probe\"\nversion = \"0.0.0\"\nedition = \"2021\"\npublish = false\n\n\
         [workspace]\n\n[dependencies]\ngemm = \"0.18\"\n",
    )
    .map_err(|e| e.to_string())?;
    std::fs::write(gemm_dir.join("src/lib.rs"), "pub use gemm;\n").map_err(|e| e.to_string())?;
    // Download both dependency trees first, so the timings are compile time only.
    run(Command::new(cargo()).arg("fetch").current_dir(&root))?;
    run(Command::new(cargo()).arg("fetch").current_dir(&gemm_dir))?;
    let fresh = |name: &str| -> Result<PathBuf, String> {
        let d = scratch.join(name);
        let _ = std::fs::remove_dir_all(&d);
        Ok(d)
    };
    let mut rows = Vec::new();
    let mut ratios = Vec::new();
    for round in 1..=rounds.max(1) {
        let mut qdq = Command::new(cargo());
        qdq.args(["build", "--release", "-p", "qdq"]).current_dir(&root).env("CARGO_TARGET_DIR", fresh("qdq")?);
        println!("round {round}: building qdq (release, clean) ...");
        let q = timed(&mut qdq)?;
        rows.push((format!("qdq release #{round}"), q));
        let mut gemm = Command::new(cargo());
        gemm.args(["build", "--release"]).current_dir(&gemm_dir).env("CARGO_TARGET_DIR", fresh("gemm")?);
        println!("round {round}: building gemm 0.18 (release, clean) ...");
        let g = timed(&mut gemm)?;
        rows.push((format!("gemm 0.18 release #{round}"), g));
        ratios.push(q.0 / g.0);
    }
    if also_dev {
        let mut dev = Command::new(cargo());
        dev.args(["build", "-p", "qdq"]).current_dir(&root).env("CARGO_TARGET_DIR", fresh("qdq-dev")?);
        println!("building qdq (dev, clean) ...");
        rows.push(("qdq dev".to_string(), timed(&mut dev)?));
    }
    let _ = std::fs::remove_dir_all(&scratch);
    println!("{:<24} {:>9} {:>16}", "build", "seconds", "peak rustc MB");
    for (name, (secs, rss)) in &rows {
        let mb = rss.map_or("n/a".to_string(), |k| format!("{:.0}", k as f64 / 1024.0));
        println!("{name:<24} {secs:>9.1} {mb:>16}");
    }
    let each: Vec<String> = ratios.iter().map(|r| format!("{r:.2}")).collect();
    ratios.sort_by(f64::total_cmp);
    println!("ratio qdq / gemm (release): median {:.2} of [{}]", ratios[ratios.len() / 2], each.join(", "));
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn frames_from_disassembly() {
        let text = "\
0000000000001000 <qdq::a>:
    1000:\tpush   %rbp
    1001:\tsub    $0x1a69000,%r11
    1008:\tsub    $0x1000,%rsp
0000000000002000 <qdq::b<T>>:
    2000:\tsub    $0x48,%rsp
    2004:\tlea    -0x41000(%rsp),%r11
    2008:\tsub    $0xffffffffffffff80,%rsp
0000000000003000 <other>:
    3000:\tsub    $0x8,%rax
";
        let f = frames(text);
        assert_eq!(f.len(), 3);
        assert_eq!(f[0], Frame { bytes: 0x1a69000, function: "qdq::a".into() });
        assert_eq!(f[1], Frame { bytes: 0x41000, function: "qdq::b<T>".into() });
        assert_eq!(f[2].bytes, 0);
    }
}
