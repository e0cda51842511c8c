//! DequantizeLinear kernels, written once over [`Simd`].
//!
//! ```text
//! integer x:  d = cvt_f32(x - z)        (8/16-bit and sub-byte codes: the difference is
//!                                        exact in i32; i32 x is converted directly)
//! float x:    d = decode(x)             exact: every float8/6/4 value is an f32
//! y = round_O(d * s)                    one f32 multiply, one rounding to f32/f16/bf16
//! ```
//!
//! i32 x with a zero point runs the reference (the difference may not fit in i32).

use crate::quantize::{load_codes, ScaleKind};
use crate::segments::{Scales, Segments};
use crate::simd::{decode_minifloat, f32_to_bf16_bits, MiniFormat, Simd};
use qdq_ref::float::FloatFormat;
use qdq_ref::{packing, DataType, Layout, Packed};

/// Output kinds.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Out {
    F32,
    F16,
    Bf16,
}

impl Out {
    pub fn of(t: DataType) -> Option<Out> {
        match t {
            DataType::F32 => Some(Out::F32),
            DataType::F16 => Some(Out::F16),
            DataType::Bf16 => Some(Out::Bf16),
            _ => None,
        }
    }

    fn size(self) -> usize {
        if self == Out::F32 {
            4
        } else {
            2
        }
    }
}

/// A resolved DequantizeLinear call.
#[derive(Clone, Copy)]
pub(crate) struct Job<'a> {
    pub x: Packed<'a>,
    pub scale_kind: ScaleKind,
    pub scale: &'a [u8],
    pub zero_point: Option<Packed<'a>>,
    pub mini: Option<MiniFormat>,
    pub out: Out,
    pub layout: Layout,
}

impl<'a> Job<'a> {
    /// `None` when the vector path does not cover the call (i32 x with a zero point).
    pub fn new(
        x: Packed<'a>,
        scale_type: DataType,
        scale: &'a [u8],
        zero_point: Option<Packed<'a>>,
        layout: Layout,
        out: DataType,
    ) -> Option<Job<'a>> {
        if x.dtype == DataType::I32 && zero_point.is_some() {
            return None;
        }
        let mini = FloatFormat::of(x.dtype).map(|f| MiniFormat::new(&f, true));
        // A float zero point is zero (validated) and takes no part in the arithmetic.
        let zero_point = if mini.is_some() { None } else { zero_point };
        Some(Job { x, scale_kind: ScaleKind::of(scale_type)?, scale, zero_point, mini, out: Out::of(out)?, layout })
    }
}

#[inline(always)]
fn dequantize_vec<S: Simd>(s: S, job: &Job<'_>, i: usize, valid: usize, sc: S::F, z: S::I) -> S::F {
    let c = load_codes(s, &job.x, i, valid, true);
    let d = match &job.mini {
        Some(f) => decode_minifloat(s, c, f),
        None => s.cvt_f32(s.sub_i(c, z)),
    };
    s.mul(d, sc)
}

#[inline(always)]
fn store<S: Simd>(s: S, out: Out, v: S::F, y: &mut [u8]) {
    match out {
        Out::F32 => s.store_f32(v, y),
        Out::F16 => s.store_u16(s.f32_to_f16_bits(v), y),
        Out::Bf16 => s.store_u16(f32_to_bf16_bits(s, v), y),
    }
}

/// Dequantizes elements `[begin, end)` into `y`, the output bytes of that range. Inlined
/// into the ISA's `vectorize` context (see `quantize::run`).
#[inline(always)]
pub(crate) fn run<S: Simd>(s: S, job: &Job<'_>, begin: usize, end: usize, y: &mut [u8]) {
    let os = job.out.size();
    let n_scales = job.scale.len()
        / match job.scale_kind {
            ScaleKind::F32 => 4,
            ScaleKind::F16 | ScaleKind::Bf16 => 2,
            ScaleKind::E8M0 => 1,
        };
    for seg in Segments::new(job.layout, begin, end) {
        let splat = match seg.scales {
            Scales::Splat(k) => {
                let z = job.zero_point.map_or(0, |zp| packing::get_int(zp.dtype, zp.data, k) as i32);
                Some((s.splat(job.scale_kind.get(job.scale, k)), s.splat_i(z)))
            }
            Scales::Seq(_) => None,
        };
        let mut i = seg.start;
        let stop = seg.start + seg.len;
        while i < stop {
            let take = (stop - i).min(S::LANES);
            let (sc, z) = match (splat, seg.scales) {
                (Some(p), _) => p,
                (None, Scales::Seq(k0)) => {
                    let k = k0 + (i - seg.start);
                    let sc = if take == S::LANES && k + S::LANES <= n_scales {
                        job.scale_kind.load(s, job.scale, k)
                    } else {
                        let mut tmp = [0u8; 64];
                        for t in 0..take {
                            tmp[4 * t..4 * t + 4].copy_from_slice(&job.scale_kind.get(job.scale, k + t).to_le_bytes());
                        }
                        s.load_f32(&tmp)
                    };
                    // A `match`, not `map_or`: closures do not inherit the ISA's target features.
                    let z = match job.zero_point.as_ref() {
                        Some(zp) => load_codes(s, zp, k, take, true),
                        None => s.splat_i(0),
                    };
                    (sc, z)
                }
                (None, Scales::Splat(_)) => unreachable!(),
            };
            let v = dequantize_vec(s, job, i, take, sc, z);
            let at = (i - begin) * os;
            if take == S::LANES {
                store(s, job.out, v, &mut y[at..at + S::LANES * os]);
            } else {
                let mut tmp = [0u8; 64];
                store(s, job.out, v, &mut tmp);
                y[at..at + take * os].copy_from_slice(&tmp[..take * os]);
            }
            i += take;
        }
    }
}
