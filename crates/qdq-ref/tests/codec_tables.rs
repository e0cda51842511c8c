//! Every code of every 2-, 4-, 6- and 8-bit type, and encodings of every representable
//! value, midpoint and neighbour, against tables generated from ml_dtypes
//! (`xtask/python/gen_codec_tables.py`, run by `cargo xtask gen-data`).

use qdq_ref::float::{decode_e8m0, FloatFormat, BF16, F16};
use qdq_ref::packing;
use qdq_ref::DataType;

fn table(name: &str) -> Vec<Vec<String>> {
    let path = format!("{}/tests/data/{name}", env!("CARGO_MANIFEST_DIR"));
    let text = std::fs::read_to_string(&path).unwrap_or_else(|e| panic!("{path}: {e}"));
    text.lines().map(|l| l.split_whitespace().map(str::to_string).collect()).collect()
}

/// The raw codec against ml_dtypes' tables: an external reference whose NaN sign and
/// payload follow its own C++ conversions, so NaN is compared by class here. The op outputs
/// (which hold the canonical NaN) are compared by bits everywhere else.
fn same_f32(a: f32, b: f32) -> bool {
    a.to_bits() == b.to_bits() || (a.is_nan() && b.is_nan())
}

#[test]
fn decode_every_code_of_every_small_type() {
    let mut seen = std::collections::BTreeMap::<String, usize>::new();
    for row in table("decode_tables.txt") {
        let t = DataType::from_name(&row[0]).unwrap();
        let code: u32 = row[1].parse().unwrap();
        *seen.entry(row[0].clone()).or_default() += 1;
        if let Some(fmt) = FloatFormat::of(t) {
            let want = f32::from_bits(u32::from_str_radix(&row[2], 16).unwrap());
            let got = fmt.decode(code) as f32;
            assert!(same_f32(got, want), "{t} code {code:#x}: got {got:e}, ml_dtypes {want:e}");
            assert_eq!(fmt.is_nan(code), want.is_nan(), "{t} code {code:#x} NaN class");
        } else if t == DataType::E8M0 {
            let want = f32::from_bits(u32::from_str_radix(&row[2], 16).unwrap());
            assert!(same_f32(decode_e8m0(code as u8), want), "e8m0 {code}");
        } else {
            let want: i64 = row[2].parse().unwrap();
            let mut buf = vec![0u8; t.byte_len(1).unwrap()];
            packing::set(t, &mut buf, 0, code);
            assert_eq!(packing::get_int(t, &buf, 0), want, "{t} code {code}");
        }
    }
    let expect = [
        ("e4m3fn", 256),
        ("e4m3fnuz", 256),
        ("e5m2", 256),
        ("e5m2fnuz", 256),
        ("e8m0", 256),
        ("e2m1", 16),
        ("e2m3", 64),
        ("e3m2", 64),
        ("u8", 256),
        ("i8", 256),
        ("u4", 16),
        ("i4", 16),
        ("u2", 4),
        ("i2", 4),
    ];
    for (name, n) in expect {
        assert_eq!(seen.get(name), Some(&n), "{name} rows");
    }
}

#[test]
fn encode_matches_ml_dtypes_round_half_even_and_saturation() {
    let mut checked = 0;
    for row in table("encode_vectors.txt") {
        let t = DataType::from_name(&row[0]).unwrap();
        let saturate = row[1] == "1";
        let v = f32::from_bits(u32::from_str_radix(&row[2], 16).unwrap());
        let want: u32 = row[3].parse().unwrap();
        let fmt = FloatFormat::of(t).unwrap();
        let got = fmt.encode(v as f64, saturate);
        if fmt.is_nan(want) {
            // NaN payloads differ between implementations : compare the class.
            assert!(fmt.is_nan(got), "{t} sat={saturate} {v:e}: got {got:#x}, ml_dtypes NaN {want:#x}");
        } else {
            assert_eq!(got, want, "{t} sat={saturate} {v:e} ({:#010x})", v.to_bits());
        }
        checked += 1;
    }
    assert!(checked > 10_000, "only {checked} vectors");
}

#[test]
fn f16_and_bf16_division_is_correctly_rounded() {
    for row in table("div_vectors.txt") {
        let fmt = if row[0] == "f16" { F16 } else { BF16 };
        let bits = |s: &str| u32::from_str_radix(s, 16).unwrap();
        let (x, s, want) = (fmt.decode(bits(&row[1])), fmt.decode(bits(&row[2])), bits(&row[3]));
        let p = if row[0] == "f16" { qdq_ref::Precision::F16 } else { qdq_ref::Precision::Bf16 };
        let q = p.round(x / s);
        let got = fmt.encode(q, false);
        if fmt.is_nan(want) {
            assert!(q.is_nan(), "{} {x:e} / {s:e}", row[0]);
        } else {
            assert_eq!(got, want, "{} {x:e} / {s:e}: got {q:e}", row[0]);
        }
    }
}
