//! `cargo xtask isa-check`: every ISA of this CPU forced in turn through the test suite,
//! the conformance suite and the exhaustive checks, then the thread-scaling bench.
//!
//! Each step runs as a child `cargo` process with `QDQ_ISA` set, so the library itself
//! refuses an ISA the CPU lacks; an ISA of [`qdq::Isa::ALL`] this CPU lacks is printed as
//! skipped and never counted. The last lines list the ISAs exercised and the ones skipped.

use std::fmt;
use std::process::Command;

/// One thing `isa-check` can run.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Step {
    /// `cargo test --workspace` (the differential tests then run the forced ISA only).
    Tests,
    /// `cargo xtask conformance`.
    Conformance,
    /// `cargo xtask exhaustive`.
    Exhaustive,
    /// `cargo xtask bench --quick` in the default (parallel) mode at 1, 2, 4, 8 and 16
    /// rayon threads (those above this machine's core count are skipped).
    Threads,
}

impl Step {
    /// Every step, in the order run.
    pub const ALL: [Step; 4] = [Step::Tests, Step::Conformance, Step::Exhaustive, Step::Threads];

    /// The name on the command line.
    pub fn name(self) -> &'static str {
        match self {
            Step::Tests => "tests",
            Step::Conformance => "conformance",
            Step::Exhaustive => "exhaustive",
            Step::Threads => "threads",
        }
    }

    /// Parses [`Step::name`].
    pub fn parse(s: &str) -> Option<Step> {
        Step::ALL.into_iter().find(|k| k.name() == s)
    }
}

impl fmt::Display for Step {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

fn cargo() -> String {
    std::env::var("CARGO").unwrap_or_else(|_| "cargo".to_string())
}

/// Runs `cargo ARGS` with the environment `env`; Err names the command.
fn run(env: &[(&str, String)], args: &[&str]) -> Result<(), String> {
    let shown: Vec<String> = env.iter().map(|(k, v)| format!("{k}={v}")).collect();
    let line = format!("{} {} {}", shown.join(" "), cargo(), args.join(" "));
    println!("\n== {}", line.trim());
    let mut cmd = Command::new(cargo());
    cmd.args(args).env_remove("QDQ_ISA");
    for (k, v) in env {
        cmd.env(k, v);
    }
    match cmd.status() {
        Ok(st) if st.success() => Ok(()),
        Ok(st) => Err(format!("`{}` failed ({st})", line.trim())),
        Err(e) => Err(format!("cannot run {}: {e}", cargo())),
    }
}

/// Runs `steps` on every ISA of this CPU (the `Threads` step once, on the default ISA).
/// Returns the ISAs exercised; the first failing step ends the run with its error.
pub fn run_steps(steps: &[Step]) -> Result<Vec<qdq::Isa>, String> {
    let cores = std::thread::available_parallelism().map_or(1, |n| n.get());
    println!("isa-check on {} ({cores} cores)", crate::bench::cpu_name());
    let mut exercised = Vec::new();
    let mut skipped = Vec::new();
    for isa in qdq::Isa::ALL {
        if !isa.is_available() {
            println!("{isa}: skipped, not on this CPU");
            skipped.push(isa);
            continue;
        }
        let env = [("QDQ_ISA", isa.name().to_string())];
        for step in steps {
            match step {
                Step::Tests => run(&env, &["test", "--workspace", "-q"])?,
                Step::Conformance => run(&env, &["run", "-q", "--release", "-p", "xtask", "--", "conformance"])?,
                Step::Exhaustive => run(&env, &["run", "-q", "--release", "-p", "xtask", "--", "exhaustive"])?,
                Step::Threads => {}
            }
        }
        exercised.push(isa);
    }
    if steps.contains(&Step::Threads) {
        for t in [1usize, 2, 4, 8, 16] {
            if t > cores {
                println!("threads {t}: skipped, this machine has {cores} cores");
                continue;
            }
            let env = [("RAYON_NUM_THREADS", t.to_string())];
            run(&env, &["run", "-q", "--release", "-p", "xtask", "--", "bench", "--quick", "--filter", "default"])?;
        }
    }
    let names = |v: &[qdq::Isa]| v.iter().map(|i| i.name()).collect::<Vec<_>>().join(", ");
    println!("\nISAs exercised: {}", names(&exercised));
    println!("ISAs skipped (not on this CPU): {}", if skipped.is_empty() { "none".into() } else { names(&skipped) });
    Ok(exercised)
}
