//! `cargo xtask bench`: a quick throughput summary of qdq on this machine.
//!
//! For each case of [`summary_cases`] and each mode (every ISA the CPU has, forced and
//! single-threaded, then the default configuration: best ISA, rayon over the whole pool)
//! the command times the operator and, right next to it in the same run, the [`Roofline`]
//! kernel that moves the same bytes. The two are timed in alternating batches of calls
//! (slices of about 2 ms: 60 of each, 20 with `--quick`, so slow drifts of a shared machine
//! hit both alike); each figure is the median slice.
//! Output: one table (case, size, ISA, threads, Gelem/s, roofline Gelem/s, fraction of
//! roofline), or with `--json` one JSON object per line:
//!
//! ```text
//! {"op":"quantize","from":"f32","to":"u8","scale":"f32","layout":"per-tensor","elements":1048576,
//!  "isa":"avx512","threads":1,"gelem_per_s":3.1,"roofline_gelem_per_s":9.8,"roofline_fraction":0.32}
//! ```
//!
//! (`channels` follows `layout` for per-axis cases, `block` for blocked ones.)

use std::io::{self, Write};

use qdq::DataType;
use qdq_benches::{size_name, Case, Mode, Op, Shape};
use qdq_measure::{median, Roofline};

/// Command-line options.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Options {
    /// JSON lines instead of the table.
    pub json: bool,
    /// Fewer and shorter batches.
    pub quick: bool,
    /// Only rows whose description (`quantize/f32-u8/per-tensor 1Mi avx512-1t`) contains this.
    pub filter: Option<String>,
}

/// One measured row.
#[derive(Clone, Debug, PartialEq)]
pub struct Row {
    /// The case.
    pub case: Case,
    /// Elements per call.
    pub elements: usize,
    /// The ISA that ran.
    pub isa: &'static str,
    /// Threads the call used.
    pub threads: usize,
    /// Median throughput, 1e9 elements per second.
    pub gelem_per_s: f64,
    /// Median throughput of the roofline kernel for the same bytes and threads.
    pub roofline_gelem_per_s: f64,
    /// Whether the roofline kernel used non-temporal stores (faster here).
    pub roofline_non_temporal: bool,
}

impl Row {
    /// `gelem_per_s / roofline_gelem_per_s`.
    pub fn roofline_fraction(&self) -> f64 {
        if self.roofline_gelem_per_s > 0.0 {
            self.gelem_per_s / self.roofline_gelem_per_s
        } else {
            0.0
        }
    }

    /// The row as one JSON object (no trailing newline).
    pub fn json(&self) -> String {
        format!(
            "{{{},\"elements\":{},\"isa\":\"{}\",\"threads\":{},\"gelem_per_s\":{},\"roofline_gelem_per_s\":{},\"roofline_stores\":\"{}\",\"roofline_fraction\":{}}}",
            self.case.json_fields(),
            self.elements,
            self.isa,
            self.threads,
            json_number(self.gelem_per_s),
            json_number(self.roofline_gelem_per_s),
            if self.roofline_non_temporal { "non-temporal" } else { "plain" },
            json_number(self.roofline_fraction()),
        )
    }
}

/// A finite float with 5 significant digits, or 0 (JSON has no NaN or infinity).
pub fn json_number(v: f64) -> String {
    if !v.is_finite() {
        return "0".to_string();
    }
    if v == 0.0 {
        return "0".to_string();
    }
    let decimals = (4 - v.abs().log10().floor() as i32).clamp(0, 12) as usize;
    let s = format!("{v:.decimals$}");
    if s.contains('.') {
        s.trim_end_matches('0').trim_end_matches('.').to_string()
    } else {
        s
    }
}

/// The cases of the summary, with their sizes.
pub fn summary_cases() -> Vec<(Case, usize)> {
    use DataType::*;
    const MI: usize = 1 << 20;
    let mut v = Vec::new();
    for to in [U8, I8, U16, I16, E4M3Fn, E5M2] {
        v.push((Case::quantize(F32, to, Shape::PerTensor), MI));
    }
    v.push((Case::quantize(F32, U8, Shape::PerTensor), 16 * MI));
    v.push((Case::quantize(F32, I8, Shape::PerAxisLast { channels: 64 }), MI));
    v.push((Case::quantize(F32, I8, Shape::BlockedLast { block: 32 }), MI));
    for from in [U8, I4, E4M3Fn] {
        v.push((Case::dequantize(from, F32, Shape::PerTensor), MI));
    }
    v.push((Case::dynamic_quantize(), MI));
    // Extra rows: sub-byte packing, f16 input, f16 output, the MX layout, and L2.
    v.push((Case::quantize(F32, U4, Shape::PerTensor), MI));
    v.push((Case::quantize(F32, E2M1, Shape::PerTensor), MI));
    v.push((Case::quantize(F16, I8, Shape::PerTensor), MI));
    v.push((Case::dequantize(I8, F16, Shape::PerTensor), MI));
    v.push((Case::dequantize_mx(E2M1, Shape::BlockedLast { block: 32 }), MI));
    v.push((Case::quantize(F32, U8, Shape::PerTensor), 64 << 10));
    // Layouts of the other types and axes: blocked along a middle axis (weights blocked
    // along an outer axis), 4-, 16-bit and float8 blocks, 16-bit channels, 16-bit DQ.
    v.push((Case::quantize(F32, I8, Shape::BlockedMiddle { block: 32 }), MI));
    v.push((Case::quantize(F32, I4, Shape::BlockedLast { block: 32 }), MI));
    v.push((Case::quantize(F32, I16, Shape::PerAxisLast { channels: 64 }), MI));
    v.push((Case::quantize(F32, E4M3Fn, Shape::BlockedLast { block: 32 }), MI));
    v.push((Case::dequantize(I8, F32, Shape::BlockedMiddle { block: 32 }), MI));
    v.push((Case::dequantize(I4, F32, Shape::BlockedMiddle { block: 32 }), MI));
    v.push((Case::dequantize(I16, F32, Shape::BlockedLast { block: 32 }), MI));
    v.push((Case::dequantize(I16, F32, Shape::PerTensor), MI));
    // Half-precision weights from 4- and 8-bit codes, float8 / MX layouts, 2-bit and
    // float6 blocks.
    v.push((Case::dequantize(I4, F16, Shape::BlockedLast { block: 32 }), MI));
    v.push((Case::dequantize(I8, Bf16, Shape::PerAxisLast { channels: 64 }), MI));
    v.push((Case::dequantize_mx(E2M1, Shape::BlockedMiddle { block: 32 }), MI));
    v.push((Case::dequantize(E5M2, F32, Shape::PerTensor), MI));
    v.push((Case::quantize(F32, E4M3Fn, Shape::PerAxisLast { channels: 64 }), MI));
    v.push((Case::quantize(F32, U2, Shape::BlockedLast { block: 32 }), MI));
    v.push((Case::quantize(F32, E2M3, Shape::BlockedMiddle { block: 32 }), MI));
    // Training mode, beside the inference Q (above) and DQ of the same case.
    v.push((Case::dequantize(I8, F32, Shape::PerTensor), MI));
    for op in Op::TRAINING {
        v.push((Case::training(op, I8, Shape::PerTensor), MI));
    }
    // The quantizers that compute their own scales.
    v.extend(qdq_benches::scaled_matrix());
    v
}

/// `quantize/f32-u8/per-tensor 1Mi avx512-1t`: what `--filter` matches.
pub fn describe(case: &Case, n: usize, mode: Mode) -> String {
    format!("{} {} {}", case.full_name(), size_name(n), mode.label())
}

/// Timed slices per side (case and roofline) and per row.
pub const SLICES: usize = 60;
/// Timed slices per side with `--quick`.
pub const SLICES_QUICK: usize = 20;
/// Seconds per slice (at least one call).
pub const SLICE_S: f64 = 0.002;

/// Times `case` at `n` elements in `mode`, alternating with its roofline kernel.
pub fn measure(case: &Case, n: usize, mode: Mode, quick: bool) -> Row {
    let (reps, batch_s) = if quick { (SLICES_QUICK, SLICE_S) } else { (SLICES, SLICE_S) };
    let cfg = mode.config();
    let mut prepared = case.prepare(n);
    let threads = mode.threads(&mut prepared);
    let mut roof = Roofline::new(case.io_bytes(n).0, case.io_bytes(n).1);
    roof.calibrate(threads);
    let mut call = || {
        if let Err(e) = prepared.run(&cfg) {
            panic!("{}: {e}", case.full_name());
        }
    };
    let mut roof_call = || {
        std::hint::black_box(roof.run(threads));
    };
    // Calibrate both, then alternate batches.
    let iters = |f: &mut dyn FnMut()| {
        f();
        let t = std::time::Instant::now();
        f();
        let one = t.elapsed().as_secs_f64().max(1e-9);
        ((batch_s / one).ceil() as usize).clamp(1, 1 << 20)
    };
    let (ci, ri) = (iters(&mut call), iters(&mut roof_call));
    let batch = |f: &mut dyn FnMut(), k: usize| {
        let t = std::time::Instant::now();
        for _ in 0..k {
            f();
        }
        t.elapsed().as_secs_f64() / k as f64
    };
    let (mut ct, mut rt) = (Vec::with_capacity(reps), Vec::with_capacity(reps));
    for _ in 0..reps {
        ct.push(batch(&mut call, ci));
        rt.push(batch(&mut roof_call, ri));
    }
    let g = |t: f64| if t > 0.0 { n as f64 / t / 1e9 } else { 0.0 };
    Row {
        case: *case,
        elements: n,
        isa: mode.isa().name(),
        threads,
        gelem_per_s: g(median(&ct)),
        roofline_gelem_per_s: g(median(&rt)),
        roofline_non_temporal: roof.non_temporal(),
    }
}

/// The CPU's model name from `/proc/cpuinfo` (or `unknown`).
pub fn cpu_name() -> String {
    std::fs::read_to_string("/proc/cpuinfo")
        .ok()
        .and_then(|s| {
            s.lines()
                .find(|l| l.starts_with("model name"))
                .and_then(|l| l.split(':').nth(1))
                .map(|m| m.trim().to_string())
        })
        .unwrap_or_else(|| "unknown".to_string())
}

/// The 1-minute load average from `/proc/loadavg` (or `?`): how busy the machine was.
pub fn load_average() -> String {
    std::fs::read_to_string("/proc/loadavg")
        .ok()
        .and_then(|s| s.split_whitespace().next().map(str::to_string))
        .unwrap_or_else(|| "?".to_string())
}

/// The header line of the table.
pub fn table_header() -> String {
    format!(
        "{:<42} {:>5} {:>7} {:>7} {:>8} {:>9} {:>8}",
        "case", "size", "ISA", "threads", "Gelem/s", "roof G/s", "of roof"
    ) + "  stores"
}

/// One table line.
pub fn table_line(r: &Row) -> String {
    format!(
        "{:<42} {:>5} {:>7} {:>7} {:>8.3} {:>9.3} {:>7.1}%",
        r.case.full_name(),
        size_name(r.elements),
        r.isa,
        r.threads,
        r.gelem_per_s,
        r.roofline_gelem_per_s,
        100.0 * r.roofline_fraction()
    ) + if r.roofline_non_temporal { "  nt" } else { "  plain" }
}

/// Runs the summary, writing rows to `out` as they are measured. Returns the rows.
pub fn run(opts: &Options, out: &mut dyn Write) -> io::Result<Vec<Row>> {
    let modes = Mode::all().map_err(|e| io::Error::other(e.to_string()))?;
    let mut work = Vec::new();
    for (case, n) in summary_cases() {
        for &mode in &modes {
            let d = describe(&case, n, mode);
            if opts.filter.as_deref().is_none_or(|f| d.contains(f)) {
                work.push((case, n, mode));
            }
        }
    }
    if work.is_empty() {
        return Ok(Vec::new());
    }
    if !opts.json {
        writeln!(
            out,
            "qdq {} on {} ({} rayon threads; ISAs: {}); x uniform in [-4, 4); median of {} alternating slices of ~{} ms",
            env!("CARGO_PKG_VERSION"),
            cpu_name(),
            rayon::current_num_threads(),
            qdq::Isa::available().iter().map(|i| i.name()).collect::<Vec<_>>().join(", "),
            if opts.quick { SLICES_QUICK } else { SLICES },
            SLICE_S * 1e3,
        )?;
        writeln!(
            out,
            "roof = a load/xor/store kernel moving the same bytes (x + scales + zero points in, y out), timed \
             alongside; stores: the roofline's, plain or non-temporal (nt), whichever was faster; load average {} at the start",
            load_average()
        )?;
        writeln!(out)?;
        writeln!(out, "{}", table_header())?;
    }
    let mut rows = Vec::new();
    for (case, n, mode) in work {
        let r = measure(&case, n, mode, opts.quick);
        if opts.json {
            writeln!(out, "{}", r.json())?;
        } else {
            writeln!(out, "{}", table_line(&r))?;
        }
        out.flush()?;
        rows.push(r);
    }
    if !opts.json {
        writeln!(out, "load average {} at the end", load_average())?;
    }
    Ok(rows)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn json_numbers() {
        assert_eq!(json_number(1.5), "1.5");
        assert_eq!(json_number(2.0), "2");
        assert_eq!(json_number(0.123456), "0.12346");
        assert_eq!(json_number(0.0069123456), "0.0069123");
        assert_eq!(json_number(11.26814), "11.268");
        assert_eq!(json_number(0.0), "0");
        assert_eq!(json_number(f64::NAN), "0");
    }

    #[test]
    fn json_row_has_the_required_fields() {
        let r = Row {
            case: Case::quantize(DataType::F32, DataType::I8, Shape::PerAxisLast { channels: 64 }),
            elements: 1 << 20,
            isa: "avx2",
            threads: 1,
            gelem_per_s: 2.0,
            roofline_gelem_per_s: 8.0,
            roofline_non_temporal: false,
        };
        assert_eq!(
            r.json(),
            "{\"op\":\"quantize\",\"from\":\"f32\",\"to\":\"i8\",\"scale\":\"f32\",\"layout\":\"per-axis-last\",\
             \"channels\":64,\"elements\":1048576,\"isa\":\"avx2\",\"threads\":1,\"gelem_per_s\":2,\
             \"roofline_gelem_per_s\":8,\"roofline_stores\":\"plain\",\"roofline_fraction\":0.25}"
        );
    }

    #[test]
    fn summary_covers_the_required_rows() {
        let c = summary_cases();
        let has = |name: &str, n: usize| c.iter().any(|(k, m)| k.full_name() == name && *m == n);
        for t in ["u8", "i8", "u16", "i16", "e4m3fn", "e5m2"] {
            assert!(has(&format!("quantize/f32-{t}/per-tensor"), 1 << 20), "{t}");
        }
        assert!(has("quantize/f32-u8/per-tensor", 16 << 20));
        assert!(has("quantize/f32-i8/per-axis-last64", 1 << 20));
        assert!(has("quantize/f32-i8/blocked-last32", 1 << 20));
        for t in ["u8", "i4", "e4m3fn"] {
            assert!(has(&format!("dequantize/{t}-f32/per-tensor"), 1 << 20), "{t}");
        }
        assert!(has("dynamic_quantize/f32-u8/per-tensor", 1 << 20));
    }

    #[test]
    fn a_quick_filtered_run_prints_json_lines() {
        // The scalar row, or the forced ISA's when QDQ_ISA is set (the bench times only that).
        let isa = qdq::Isa::forced().ok().flatten().unwrap_or(qdq::Isa::Scalar);
        let filter = format!("dequantize/u8-f32/per-tensor 1Mi {isa}-1t");
        let opts = Options { json: true, quick: true, filter: Some(filter) };
        let mut out = Vec::new();
        let rows = run(&opts, &mut out).unwrap();
        assert_eq!(rows.len(), 1);
        let s = String::from_utf8(out).unwrap();
        assert_eq!(s.lines().count(), 1);
        assert!(s.starts_with("{\"op\":\"dequantize\",\"from\":\"u8\",\"to\":\"f32\""), "{s}");
        assert!(rows[0].gelem_per_s > 0.0 && rows[0].roofline_gelem_per_s > 0.0);
    }
}
