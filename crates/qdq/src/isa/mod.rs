//! Instruction sets: detection, forcing, and dispatch of a generic kernel.
//!
//! The best available ISA is detected once (and cached); `QDQ_ISA=scalar|avx2|avx512|neon`
//! overrides it for the whole process, which is how the conformance runner, the benches and
//! the fuzz targets force a path. Every ISA can also be chosen per call through
//! [`crate::Config`]. Forcing an ISA the CPU lacks, or a name that is no ISA, is an
//! [`ErrorKind::IsaUnavailable`] error for every call: never a silent fallback to another
//! path, and never undefined behaviour.
//! Dispatch happens once per call (or per parallel chunk), never per element.

use crate::simd::Simd;
use qdq_ref::{Error, ErrorKind, Result};
use std::sync::atomic::{AtomicU8, Ordering};

#[cfg(target_arch = "x86_64")]
pub(crate) mod avx2;
#[cfg(target_arch = "x86_64")]
pub(crate) mod avx512;
pub(crate) mod fpenv;
#[cfg(target_arch = "aarch64")]
pub(crate) mod neon;
pub(crate) mod scalar;
#[cfg(target_arch = "x86_64")]
mod sse;

/// An instruction set qdq has kernels for.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Isa {
    /// Portable code, no SIMD intrinsics.
    Scalar,
    /// x86-64 AVX2 + FMA + F16C, 8 lanes.
    Avx2,
    /// x86-64 AVX-512 F/BW/VL/DQ/CD, 16 lanes.
    Avx512,
    /// aarch64 NEON (Advanced SIMD), 4 lanes.
    Neon,
}

impl Isa {
    /// All ISAs, best first.
    pub const ALL: [Isa; 4] = [Isa::Avx512, Isa::Avx2, Isa::Neon, Isa::Scalar];

    /// The lower-case name used by `QDQ_ISA`, benches and reports.
    ///
    /// ```
    /// assert_eq!(qdq::Isa::Avx512.name(), "avx512");
    /// assert_eq!(qdq::Isa::Scalar.to_string(), "scalar");
    /// ```
    pub fn name(self) -> &'static str {
        match self {
            Isa::Scalar => "scalar",
            Isa::Avx2 => "avx2",
            Isa::Avx512 => "avx512",
            Isa::Neon => "neon",
        }
    }

    /// Parses a name as written by [`Isa::name`] (case and surrounding spaces ignored).
    ///
    /// ```
    /// use qdq::Isa;
    /// assert_eq!(Isa::from_name(" AVX2 "), Some(Isa::Avx2));
    /// assert_eq!(Isa::from_name("sse4"), None);
    /// ```
    pub fn from_name(s: &str) -> Option<Isa> {
        Isa::ALL.into_iter().find(|i| i.name() == s.trim().to_ascii_lowercase())
    }

    /// Whether this CPU can run the ISA.
    ///
    /// ```
    /// use qdq::Isa;
    /// assert!(Isa::Scalar.is_available());
    /// // x86-64 and aarch64 ISAs exclude each other.
    /// assert!(!(Isa::Avx2.is_available() && Isa::Neon.is_available()));
    /// ```
    pub fn is_available(self) -> bool {
        match self {
            Isa::Scalar => true,
            #[cfg(target_arch = "x86_64")]
            Isa::Avx2 => avx2::V3F16c::is_available(),
            #[cfg(target_arch = "x86_64")]
            Isa::Avx512 => avx512::V4::is_available(),
            #[cfg(target_arch = "aarch64")]
            Isa::Neon => neon::NeonToken::is_available(),
            #[allow(unreachable_patterns)]
            _ => false,
        }
    }

    /// The ISAs this CPU can run, best first.
    ///
    /// ```
    /// use qdq::Isa;
    /// let isas = Isa::available();
    /// assert_eq!(isas.last(), Some(&Isa::Scalar));
    /// assert!(isas.iter().all(|i| i.is_available()));
    /// ```
    pub fn available() -> Vec<Isa> {
        Isa::ALL.into_iter().filter(|i| i.is_available()).collect()
    }

    /// The best ISA of this CPU (`QDQ_ISA` is not consulted).
    ///
    /// ```
    /// use qdq::Isa;
    /// assert_eq!(Isa::best(), Isa::available()[0]);
    /// ```
    pub fn best() -> Isa {
        Isa::ALL.into_iter().find(|i| i.is_available()).unwrap_or(Isa::Scalar)
    }

    /// `Ok(self)` if this CPU can run the ISA, otherwise an [`ErrorKind::IsaUnavailable`]
    /// error that names the ISAs it has.
    ///
    /// ```
    /// use qdq::{ErrorKind, Isa};
    /// assert_eq!(Isa::Scalar.require()?, Isa::Scalar);
    /// for isa in Isa::ALL.into_iter().filter(|i| !i.is_available()) {
    ///     assert_eq!(isa.require().unwrap_err().kind(), ErrorKind::IsaUnavailable);
    /// }
    /// # Ok::<(), qdq::Error>(())
    /// ```
    pub fn require(self) -> Result<Isa> {
        if self.is_available() {
            Ok(self)
        } else {
            Err(Error::new(
                ErrorKind::IsaUnavailable,
                format!("ISA {self} is not available on this CPU; it has {}", Isa::list_available()),
            ))
        }
    }

    /// The ISA forced by the `QDQ_ISA` environment variable: `Ok(None)` when it is unset or
    /// empty, an [`ErrorKind::IsaUnavailable`] error when it names no ISA or one this CPU
    /// lacks. Never falls back silently.
    ///
    /// ```
    /// match (std::env::var("QDQ_ISA").ok().filter(|v| !v.trim().is_empty()), qdq::Isa::forced()) {
    ///     (None, forced) => assert_eq!(forced, Ok(None)),
    ///     (Some(v), Ok(Some(isa))) => assert_eq!(qdq::Isa::from_name(&v), Some(isa)),
    ///     (Some(_), other) => assert!(other.is_err()),
    /// }
    /// ```
    pub fn forced() -> Result<Option<Isa>> {
        Isa::parse_forced(std::env::var_os("QDQ_ISA").as_deref().map(|v| v.to_string_lossy()).as_deref())
    }

    /// [`Isa::forced`] for a given value of the variable.
    fn parse_forced(v: Option<&str>) -> Result<Option<Isa>> {
        let Some(v) = v else {
            return Ok(None);
        };
        if v.trim().is_empty() {
            return Ok(None);
        }
        match Isa::from_name(v) {
            Some(isa) if isa.is_available() => Ok(Some(isa)),
            Some(isa) => Err(Error::new(
                ErrorKind::IsaUnavailable,
                format!("QDQ_ISA={v} forces {isa}, which this CPU lacks; it has {}", Isa::list_available()),
            )),
            None => Err(Error::new(
                ErrorKind::IsaUnavailable,
                format!(
                    "QDQ_ISA={v:?} is not an ISA name (scalar, avx2, avx512, neon); this CPU has {}",
                    Isa::list_available()
                ),
            )),
        }
    }

    /// The ISA a call runs on when none is chosen: the one `QDQ_ISA` forces, else the best
    /// of this CPU. A bad `QDQ_ISA` (see [`Isa::forced`]) is an error for every call, never
    /// a silent fallback. The answer is cached.
    ///
    /// ```
    /// let isa = qdq::Isa::detect()?;
    /// assert!(isa.is_available());
    /// assert_eq!(qdq::Isa::forced()?.unwrap_or(qdq::Isa::best()), isa);
    /// # Ok::<(), qdq::Error>(())
    /// ```
    pub fn detect() -> Result<Isa> {
        static CACHE: AtomicU8 = AtomicU8::new(u8::MAX);
        let c = CACHE.load(Ordering::Relaxed);
        if let Some(isa) = Isa::ALL.get(c as usize) {
            return Ok(*isa);
        }
        // An error is not cached: it is rare, and its message is rebuilt from the variable.
        let isa = Isa::forced()?.unwrap_or_else(Isa::best);
        let idx = Isa::ALL.iter().position(|i| *i == isa).unwrap_or(3);
        CACHE.store(idx as u8, Ordering::Relaxed);
        Ok(isa)
    }

    /// "avx512, avx2, scalar": the ISAs this CPU has, best first.
    fn list_available() -> String {
        Isa::available().iter().map(|i| i.name()).collect::<Vec<_>>().join(", ")
    }
}

impl std::fmt::Display for Isa {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.name())
    }
}

/// A kernel written once over [`Simd`], for every ISA.
pub(crate) trait Kernel {
    type Output;
    fn run<S: Simd>(self, simd: S) -> Self::Output;
}

/// A kernel for one ISA `S`: what [`Simd::enter`] runs. Every [`Kernel`] is one for every
/// ISA; a kernel that carries vectors of its ISA (a partial vector's parameters) is one
/// for that ISA alone.
pub(crate) trait IsaKernel<S: Simd> {
    type Output;
    fn run_on(self, simd: S) -> Self::Output;
}

impl<S: Simd, K: Kernel> IsaKernel<S> for K {
    type Output = K::Output;
    #[inline(always)]
    fn run_on(self, simd: S) -> K::Output {
        self.run(simd)
    }
}

/// A kernel bound to its ISA token, callable by `vectorize`. A closure would do, but
/// closures cannot be marked `#[inline(always)]` on stable Rust, and the whole kernel must
/// inline into pulp's `#[target_feature]` function for the intrinsics to inline in turn.
#[allow(dead_code)]
pub(crate) struct Call<K, S>(pub K, pub S);

impl<K: IsaKernel<S>, S: Simd> pulp::NullaryFnOnce for Call<K, S> {
    type Output = K::Output;
    #[inline(always)]
    fn call(self) -> K::Output {
        self.0.run_on(self.1)
    }
}

/// Whether the integer quantizers' AVX2 steps take a second of their four quotients from
/// the divide instruction (`quantize::Spec::extra_div`, one more than
/// [`Simd::DIV_QUOTIENTS`]): where this CPU's divider keeps up with
/// two ymm divisions beside the step's other work. Detected once (and cached) from the
/// CPU's vendor, family and model ([`avx2::divider_keeps_up`]); [`tuning::set_avx2_extra_divide`]
/// overrides it on the calling thread. Both choices give the same, correctly rounded
/// quotients: only the speed differs. `false` off x86_64.
pub(crate) fn avx2_extra_divide() -> bool {
    if let Some(v) = tuning::OVERRIDE.with(std::cell::Cell::get) {
        return v;
    }
    static CACHE: AtomicU8 = AtomicU8::new(u8::MAX);
    match CACHE.load(Ordering::Relaxed) {
        0 => false,
        1 => true,
        _ => {
            #[cfg(target_arch = "x86_64")]
            let v = avx2::divider_keeps_up();
            #[cfg(not(target_arch = "x86_64"))]
            let v = false;
            CACHE.store(u8::from(v), Ordering::Relaxed);
            v
        }
    }
}

/// Choices that change how fast a path runs, never what it returns; not a stable
/// interface: for qdq's own tests (which run each choice on every CPU) and benches.
#[doc(hidden)]
pub mod tuning {
    use std::cell::Cell;

    thread_local! {
        pub(super) static OVERRIDE: Cell<Option<bool>> = const { Cell::new(None) };
    }

    /// Sets, on the calling thread, whether the AVX2 integer quantizers take a second
    /// quotient of each four-vector step from the divide instruction (`None`: as detected
    /// for this CPU), for the sequential calls (`Config::sequential`) this thread makes from
    /// now on (which setting the pool's threads use for a parallel call's parts is left
    /// unspecified); returns the previous setting. The results are the same either way.
    ///
    /// ```
    /// let before = qdq::tuning::set_avx2_extra_divide(Some(true));
    /// assert!(qdq::tuning::avx2_extra_divide());
    /// qdq::tuning::set_avx2_extra_divide(before);
    /// ```
    pub fn set_avx2_extra_divide(v: Option<bool>) -> Option<bool> {
        OVERRIDE.with(|o| o.replace(v))
    }

    /// The setting calls from this thread use now (see [`set_avx2_extra_divide`]).
    ///
    /// ```
    /// let detected = qdq::tuning::avx2_extra_divide();
    /// println!("AVX2 quotients by the divider: {} of 4", 1 + usize::from(detected));
    /// ```
    pub fn avx2_extra_divide() -> bool {
        super::avx2_extra_divide()
    }
}

/// Runs `k` on `isa`, which the caller has checked is available (an unavailable one runs
/// the scalar path instead, so this can never execute an unsupported instruction).
#[inline]
pub(crate) fn dispatch<K: Kernel>(isa: Isa, k: K) -> K::Output {
    match isa {
        #[cfg(target_arch = "x86_64")]
        Isa::Avx512 => {
            if let Some(t) = avx512::V4::try_new() {
                return avx512::Avx512(t).enter(k);
            }
        }
        #[cfg(target_arch = "x86_64")]
        Isa::Avx2 => {
            if let Some(t) = avx2::V3F16c::try_new() {
                return avx2::Avx2(t).enter(k);
            }
        }
        #[cfg(target_arch = "aarch64")]
        Isa::Neon => {
            if let Some(t) = neon::NeonToken::try_new() {
                return neon::Neon(t).enter(k);
            }
        }
        _ => {}
    }
    scalar::Scalar.enter(k)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::codec::MiniFormat;

    /// `cvt_rne` of every lane of `xs`.
    struct CvtRne<'a>(&'a [f32]);

    impl Kernel for CvtRne<'_> {
        type Output = Vec<i32>;
        fn run<S: Simd>(self, simd: S) -> Vec<i32> {
            let mut out = Vec::new();
            for chunk in self.0.chunks(S::LANES) {
                let mut src = vec![0u8; 4 * S::LANES];
                for (d, x) in src.chunks_exact_mut(4).zip(chunk) {
                    d.copy_from_slice(&x.to_le_bytes());
                }
                let mut dst = vec![0u8; 4 * S::LANES];
                simd.store_i32(simd.cvt_rne(simd.load_f32(&src)), &mut dst);
                out.extend(dst.chunks_exact(4).take(chunk.len()).map(|b| i32::from_le_bytes([b[0], b[1], b[2], b[3]])));
            }
            out
        }
    }

    #[test]
    fn forcing_an_isa_is_checked() {
        assert_eq!(Isa::parse_forced(None).unwrap(), None);
        assert_eq!(Isa::parse_forced(Some(" ")).unwrap(), None);
        assert_eq!(Isa::parse_forced(Some("scalar")).unwrap(), Some(Isa::Scalar));
        assert_eq!(Isa::parse_forced(Some(" AVX2 ")).unwrap().is_some(), Isa::Avx2.is_available());
        let e = Isa::parse_forced(Some("bogus")).unwrap_err();
        assert_eq!(e.kind(), ErrorKind::IsaUnavailable);
        assert!(e.message().contains("\"bogus\" is not an ISA name") && e.message().contains("scalar"), "{e}");
        for isa in Isa::ALL {
            let got = Isa::parse_forced(Some(isa.name()));
            let req = isa.require();
            if isa.is_available() {
                assert_eq!(got.unwrap(), Some(isa));
                assert_eq!(req.unwrap(), isa);
            } else {
                let e = got.unwrap_err();
                assert_eq!(e.kind(), ErrorKind::IsaUnavailable);
                assert!(e.message().contains(&format!("forces {isa}, which this CPU lacks; it has ")), "{e}");
                let e = req.unwrap_err();
                assert!(e.message().contains(&format!("ISA {isa} is not available on this CPU; it has ")), "{e}");
            }
        }
        assert_eq!(Isa::best(), Isa::available()[0]);
    }

    /// `Simd::cvt_rne` rounds half to even over its whole stated domain (i32 range), on
    /// every ISA of this CPU; the others are reported as skipped.
    #[test]
    fn cvt_rne_rounds_half_to_even_on_every_isa() {
        let mut xs = vec![0.0f32, -0.0, 0.5, -0.5, 1.5, -1.5, 2.5, -2.5, 0.49999997, -0.49999997, 1.0, -1.0];
        for base in [4_194_304.0f32, 8_388_608.0, 16_777_216.0, 2_147_483_520.0] {
            for k in -4..=4 {
                let x = f32::from_bits((base.to_bits() as i32 + k) as u32);
                xs.extend([x, -x]);
            }
        }
        xs.extend([4_194_304.5, -4_194_304.5, 4_194_305.5, -4_194_305.5, 8_388_607.5, -8_388_607.5]);
        xs.extend([8_388_606.5, -8_388_606.5, -2_147_483_648.0, 2_147_483_520.0, 1e-40, -1e-40]);
        // The contract's domain: i32 range (x86 gives i32::MIN beyond it, the others saturate).
        xs.retain(|x| (-2_147_483_648.0..2_147_483_648.0).contains(x));
        let want: Vec<i32> = xs.iter().map(|x| x.round_ties_even() as i32).collect();
        for isa in Isa::ALL {
            if !isa.is_available() {
                println!("{isa}: skipped, not on this CPU");
                continue;
            }
            let got = dispatch(isa, CvtRne(&xs));
            for ((x, w), g) in xs.iter().zip(&want).zip(&got) {
                assert_eq!(w, g, "{isa}: cvt_rne({x:e}) = {g}, want {w}");
            }
            println!("{isa}: {} values checked", xs.len());
        }
    }

    /// `Simd::e2m1_x4` of the packed codes `self.0` (`2 * LANES` bytes a call, whole
    /// calls only): the decoded values' bit patterns in order.
    struct E2m1X4<'a>(&'a [u8]);

    impl Kernel for E2m1X4<'_> {
        type Output = Vec<u32>;
        fn run<S: Simd>(self, simd: S) -> Vec<u32> {
            let mut out = Vec::new();
            for b in self.0.chunks_exact(2 * S::LANES) {
                for v in simd.e2m1_x4(b) {
                    let mut y = [0u8; 64];
                    simd.store_f32(v, &mut y);
                    out.extend((0..S::LANES).map(|t| crate::simd::lane_i32(&y, t) as u32));
                }
            }
            out
        }
    }

    /// The four-vector float4 decoder on every ISA: every byte (two codes) at every byte
    /// position of a call, each value the reference decoder's, in element order.
    #[test]
    fn e2m1_x4_decodes_every_code_pair_in_order_on_every_isa() {
        // 256 rotations of the 256 byte values: byte b at every position of a 64-byte call.
        let bytes: Vec<u8> = (0..256usize).flat_map(|r| (0..256usize).map(move |i| ((i + r) % 256) as u8)).collect();
        let want: Vec<u32> = bytes
            .iter()
            .flat_map(|&b| [b & 15, b >> 4])
            .map(|c| (qdq_ref::float::E2M1.decode(c as u32) as f32).to_bits())
            .collect();
        for isa in Isa::ALL {
            if !isa.is_available() {
                println!("{isa}: skipped, not on this CPU");
                continue;
            }
            let got = dispatch(isa, E2m1X4(&bytes));
            assert_eq!(got.len(), want.len(), "{isa}");
            for (i, (g, w)) in got.iter().zip(&want).enumerate() {
                assert_eq!(g, w, "{isa}: element {i} (byte {:#04x}): {g:#010x}, want {w:#010x}", bytes[i / 2]);
            }
            println!("{isa}: {} codes checked", want.len());
        }
    }

    /// `Simd::load_4bit_x4` (`BITS` 4) or `Simd::load_2bit_x4` (`BITS` 2) of the packed
    /// codes `self.0` (`BITS * LANES / 2` bytes a call, whole calls only), sign-extended
    /// where `SIGNED`: the lanes in order.
    struct LoadBitsX4<'a, const BITS: u8, const SIGNED: bool>(&'a [u8]);

    impl<const BITS: u8, const SIGNED: bool> Kernel for LoadBitsX4<'_, BITS, SIGNED> {
        type Output = Vec<i32>;
        fn run<S: Simd>(self, simd: S) -> Vec<i32> {
            let mut out = Vec::new();
            for b in self.0.chunks_exact(BITS as usize * S::LANES / 2) {
                let c = if BITS == 2 { simd.load_2bit_x4::<SIGNED>(b) } else { simd.load_4bit_x4::<SIGNED>(b) };
                for c in c {
                    let mut y = [0u8; 64];
                    simd.store_i32(c, &mut y);
                    out.extend((0..S::LANES).map(|t| crate::simd::lane_i32(&y, t)));
                }
            }
            out
        }
    }

    /// The four-vector `BITS`-bit code load (`LoadBitsX4`) on every ISA, zero- and
    /// sign-extended: every byte (`8 / BITS` codes) at every byte position of a call, in
    /// element order.
    fn check_packed_loads<const BITS: u8>() {
        let (bits, per) = (BITS as u32, 8 / BITS as usize);
        let bytes: Vec<u8> = (0..256usize).flat_map(|r| (0..256usize).map(move |i| ((i + r) % 256) as u8)).collect();
        let mask = (1u32 << bits) - 1;
        let unsigned: Vec<i32> = bytes
            .iter()
            .flat_map(|&b| (0..per as u32).map(move |j| (b as u32 >> (bits * j)) & mask))
            .map(|c| c as i32)
            .collect();
        let flip = 1 << (bits - 1);
        let signed: Vec<i32> = unsigned.iter().map(|&c| (c ^ flip) - flip).collect();
        for isa in Isa::ALL {
            if !isa.is_available() {
                println!("{isa}: skipped, not on this CPU");
                continue;
            }
            for (got, want, kind) in [
                (dispatch(isa, LoadBitsX4::<BITS, false>(&bytes)), &unsigned, "zero"),
                (dispatch(isa, LoadBitsX4::<BITS, true>(&bytes)), &signed, "sign"),
            ] {
                assert_eq!(got.len(), want.len(), "{isa} {kind}");
                for (i, (g, w)) in got.iter().zip(want).enumerate() {
                    assert_eq!(g, w, "{isa}: {kind}-extended element {i} (byte {:#04x})", bytes[i / per]);
                }
            }
            println!("{isa}: {} codes checked, zero- and sign-extended", unsigned.len());
        }
    }

    #[test]
    fn load_4bit_x4_extends_every_code_pair_in_order_on_every_isa() {
        check_packed_loads::<4>();
    }

    /// `Simd::f6_x4` of the packed float6 codes `self.0` (`3 * LANES` bytes a call, whole
    /// calls only) in the format `self.1`: the f32 patterns in order.
    struct F6X4<'a>(&'a [u8], MiniFormat);

    impl Kernel for F6X4<'_> {
        type Output = Vec<u32>;
        fn run<S: Simd>(self, simd: S) -> Vec<u32> {
            let mut out = Vec::new();
            for b in self.0.chunks_exact(3 * S::LANES) {
                for v in simd.f6_x4(b, &self.1) {
                    let mut y = [0u8; 64];
                    simd.store_f32(v, &mut y);
                    out.extend((0..S::LANES).map(|t| crate::simd::lane_f32(&y, t).to_bits()));
                }
            }
            out
        }
    }

    /// The four-vector float6 decode on every ISA against the reference decoder, e2m3 and
    /// e3m2: every code at every position of a call (a stream of all 64 codes, repeated
    /// with every offset), in element order, by bits.
    #[test]
    fn f6_x4_decodes_every_code_in_order_on_every_isa() {
        use qdq_ref::float::{E2M3, E3M2};
        // 64 * 64 codes: code (i + r) % 64 at position i of round r; 6 bits each, LSB first.
        let codes: Vec<u32> = (0..64u32).flat_map(|r| (0..64u32).map(move |i| (i + r) % 64)).collect();
        let mut bytes = vec![0u8; codes.len() * 6 / 8];
        for (i, &c) in codes.iter().enumerate() {
            for b in 0..6 {
                if c >> b & 1 == 1 {
                    bytes[(6 * i + b) / 8] |= 1 << ((6 * i + b) % 8);
                }
            }
        }
        for (fmt, mini) in [(&E2M3, MiniFormat::of_id(11)), (&E3M2, MiniFormat::of_id(12))] {
            let want: Vec<u32> = codes.iter().map(|&c| (fmt.decode(c) as f32).to_bits()).collect();
            for isa in Isa::ALL {
                if !isa.is_available() {
                    println!("{isa}: skipped, not on this CPU");
                    continue;
                }
                let got = dispatch(isa, F6X4(&bytes, mini));
                assert_eq!(got.len(), want.len(), "{isa}");
                for (i, (g, w)) in got.iter().zip(&want).enumerate() {
                    assert_eq!(g, w, "{isa} {fmt:?}: element {i} (code {:#04x}): {g:#010x}, want {w:#010x}", codes[i]);
                }
                println!("{isa}: {} codes checked", want.len());
            }
        }
    }

    #[test]
    fn load_2bit_x4_extends_every_code_quad_in_order_on_every_isa() {
        check_packed_loads::<2>();
    }

    /// `Simd::lut16_u16_x4` of the packed codes `self.1` (16 bytes a call) through the
    /// table `self.0`.
    struct Lut16U16<'a>(&'a [u8; 32], &'a [u8]);

    impl Kernel for Lut16U16<'_> {
        type Output = Vec<u8>;
        fn run<S: Simd>(self, simd: S) -> Vec<u8> {
            let mut out = vec![0u8; 4 * self.1.len()];
            for (b, y) in self.1.chunks_exact(16).zip(out.chunks_exact_mut(64)) {
                simd.lut16_u16_x4(self.0, b, y);
            }
            out
        }
    }

    /// The 4-bit to 16-bit table lookup on every ISA: every byte (two codes) at every byte
    /// position of a call, with a table of 32 distinct bytes, each element its code's entry.
    #[test]
    fn lut16_u16_x4_looks_every_code_pair_up_in_order_on_every_isa() {
        let bytes: Vec<u8> = (0..16usize).flat_map(|r| (0..256usize).map(move |i| ((i * 7 + r) % 256) as u8)).collect();
        let mut table = [0u8; 32];
        for (i, t) in table.iter_mut().enumerate() {
            *t = (i as u8).wrapping_mul(37).wrapping_add(11);
        }
        let want: Vec<u8> = bytes
            .iter()
            .flat_map(|&b| [b & 15, b >> 4])
            .flat_map(|c| [table[2 * c as usize], table[2 * c as usize + 1]])
            .collect();
        for isa in Isa::ALL {
            if !isa.is_available() {
                println!("{isa}: skipped, not on this CPU");
                continue;
            }
            let got = dispatch(isa, Lut16U16(&table, &bytes));
            assert_eq!(got.len(), want.len(), "{isa}");
            for (i, (g, w)) in got.chunks_exact(2).zip(want.chunks_exact(2)).enumerate() {
                assert_eq!(g, w, "{isa}: element {i} (byte {:#04x})", bytes[i / 2]);
            }
            println!("{isa}: {} codes checked", want.len() / 2);
        }
    }

    /// `f32_to_bf16_bits` (an add on the bit pattern) against the general float encoder, for
    /// the f32 patterns in `self.0` (each expanded to `LANES` consecutive patterns).
    struct Bf16Rounding<'a>(&'a [u32]);

    impl Kernel for Bf16Rounding<'_> {
        type Output = Vec<(u32, u32, u32)>;
        fn run<S: Simd>(self, simd: S) -> Vec<(u32, u32, u32)> {
            use crate::codec::{f32_to_bf16_bits, f32_to_bf16_bits_generic};
            let mut bad = Vec::new();
            for &base in self.0 {
                let mut src = [0u8; 64];
                for t in 0..S::LANES {
                    src[4 * t..4 * t + 4].copy_from_slice(&base.wrapping_add(t as u32).to_le_bytes());
                }
                let v = simd.load_f32(&src);
                let (mut got, mut want) = ([0u8; 64], [0u8; 64]);
                simd.store_i32(f32_to_bf16_bits(simd, v), &mut got);
                simd.store_i32(f32_to_bf16_bits_generic(simd, v), &mut want);
                if got != want {
                    for t in 0..S::LANES {
                        let (g, w) = (crate::simd::lane_i32(&got, t) as u32, crate::simd::lane_i32(&want, t) as u32);
                        if g != w {
                            bad.push((base.wrapping_add(t as u32), g, w));
                        }
                    }
                }
            }
            bad
        }
    }

    /// `bf16_rne_bits` (no NaN select) of the f32 pattern `self.0[0]` in lane 0.
    struct CanonicalNanBf16<'a>(&'a [u32]);

    impl Kernel for CanonicalNanBf16<'_> {
        type Output = u32;
        fn run<S: Simd>(self, simd: S) -> u32 {
            let mut src = [0u8; 64];
            src[..4].copy_from_slice(&self.0[0].to_le_bytes());
            let mut out = [0u8; 64];
            simd.store_i32(crate::codec::bf16_rne_bits(simd, simd.load_f32(&src)), &mut out);
            crate::simd::lane_i32(&out, 0) as u32
        }
    }

    /// The bf16 rounding on every ISA: around every bf16 halfway point and exponent
    /// boundary (the `LANES` patterns from `k * 2^16 + 0x7ffe` and from `k * 2^16 - 2`, both
    /// signs), and a stride through all 2^32 patterns. (All 2^32 agreed when it was
    /// written.) The dequantize stores round without the NaN select, which the canonical
    /// NaN survives.
    #[test]
    fn bf16_rounding_matches_the_general_encoder_on_every_isa() {
        let mut bases: Vec<u32> =
            (0..1u32 << 16).flat_map(|k| [(k << 16) | 0x7ffe, (k << 16).wrapping_sub(2)]).collect();
        bases.extend((0..1u32 << 18).map(|k| k.wrapping_mul(16_411)));
        let nan = [qdq_ref::float::CANONICAL_NAN.to_bits()];
        for isa in Isa::ALL {
            if !isa.is_available() {
                println!("{isa}: skipped, not on this CPU");
                continue;
            }
            assert_eq!(dispatch(isa, CanonicalNanBf16(&nan)), 0x7fc0, "{isa}: the canonical NaN");
            let bad = dispatch(isa, Bf16Rounding(&bases));
            if let Some(&(b, g, w)) = bad.first() {
                panic!(
                    "{isa}: f32 {b:#010x} -> bf16 {g:#06x}, the general encoder gives {w:#06x} ({} lanes differ)",
                    bad.len()
                );
            }
            println!("{isa}: {} vectors of consecutive patterns checked", bases.len());
        }
    }

    /// `Prec::round_split_product(x, 1 / s)` against `Prec::round_split(x * (1 / s))` for
    /// every non-negative finite x of the precision (`self.0`: f16 or bf16) and every scale
    /// `s` in `self.1`: the differing lanes as (x bits, s bits, product form, split form),
    /// ignoring results below 2^-126 in both (integer 0 either way).
    struct SplitProduct<'a>(crate::quantize::Prec, &'a [u16]);

    impl Kernel for SplitProduct<'_> {
        type Output = (Vec<(u16, u16, u32, u32)>, bool);
        fn run<S: Simd>(self, simd: S) -> Self::Output {
            use crate::quantize::Prec;
            let SplitProduct(prec, scales) = self;
            let value = |b: u16| match prec {
                Prec::Bf16 => f32::from_bits((b as u32) << 16),
                _ => half::f16::from_bits(b).to_f32(),
            };
            let top = if prec == Prec::Bf16 { 0x7f80u16 } else { 0x7c00 };
            let mut bad = Vec::new();
            if !S::HAS_FMA {
                // The product form is the split of the product there.
                return (bad, false);
            }
            for &sb in scales {
                let r = 1.0 / value(sb);
                let rv = simd.splat(r);
                for x0 in (0..top).step_by(S::LANES) {
                    let mut src = [0u8; 64];
                    for t in 0..S::LANES {
                        src[4 * t..4 * t + 4].copy_from_slice(&value((x0 + t as u16).min(top - 1)).to_le_bytes());
                    }
                    let x = simd.load_f32(&src);
                    let (mut got, mut want) = ([0u8; 64], [0u8; 64]);
                    simd.store_f32(prec.round_split_product(simd, x, rv, true), &mut got);
                    simd.store_f32(prec.round_split(simd, simd.mul(x, rv)), &mut want);
                    if got != want {
                        for t in 0..S::LANES {
                            let (g, w) = (crate::simd::lane_f32(&got, t), crate::simd::lane_f32(&want, t));
                            let tiny = g.abs() < f32::MIN_POSITIVE && w.abs() < f32::MIN_POSITIVE;
                            if g.to_bits() != w.to_bits() && !tiny {
                                bad.push((x0 + t as u16, sb, g.to_bits(), w.to_bits()));
                            }
                        }
                    }
                }
            }
            (bad, S::HAS_FMA)
        }
    }

    /// The 16-bit precisions' split with the product inside (`Prec::round_split_product`,
    /// which takes the difference from the exact product where the ISA has FMA) gives the
    /// split of the rounded product, for every non-negative f16 x and scale and every
    /// non-negative bf16 x and bf16 scale in the fast range `[2^-30, 2^30]` (2^30 and 2^28
    /// pairs; negative values mirror them).
    #[test]
    fn split_with_the_product_inside_matches_the_split_of_the_product() {
        use crate::quantize::Prec;
        let f16_scales: Vec<u16> = (1..0x7c00).collect();
        let bf16_scales: Vec<u16> = (1..0x7f80u16)
            .filter(|&b| (2f32.powi(-30)..=2f32.powi(30)).contains(&f32::from_bits((b as u32) << 16)))
            .collect();
        let mut fused = 0;
        for isa in Isa::ALL {
            if !isa.is_available() {
                println!("{isa}: skipped, not on this CPU");
                continue;
            }
            for (prec, scales) in [(Prec::F16, &f16_scales), (Prec::Bf16, &bf16_scales)] {
                let (bad, fma) = dispatch(isa, SplitProduct(prec, scales));
                if let Some(&(x, s, g, w)) = bad.first() {
                    panic!("{isa} {prec:?}: x {x:#06x} s {s:#06x}: {g:#010x} against {w:#010x} ({} lanes)", bad.len());
                }
                fused += usize::from(fma);
                match fma {
                    true => println!("{isa} {prec:?}: {} scales checked", scales.len()),
                    false => println!("{isa} {prec:?}: skipped, no FMA (the split of the product itself)"),
                }
            }
        }
        assert!(
            fused > 0 || !Isa::ALL.iter().any(|i| i.is_available() && *i != Isa::Scalar),
            "no ISA took the fused form"
        );
    }

    /// Each ISA's four-vector float8 / float4 store (`store_mini_x4`: the byte route on
    /// AVX2 and AVX-512) against the per-vector codec (`store_minifloat_x4`), for every
    /// format id with the route: the first differing step as (id, step, got, want).
    struct MiniStores<'a>(&'a [f32]);

    impl Kernel for MiniStores<'_> {
        type Output = Option<(u8, usize, Vec<u8>, Vec<u8>)>;
        fn run<S: Simd>(self, simd: S) -> Self::Output {
            use crate::codec::{store_minifloat_x4, MiniFormat};
            let l = S::LANES;
            for id in (2..=12u8).filter(|&id| MiniFormat::has_x4_route(id)) {
                let f = MiniFormat::of_id(id);
                let bytes = 4 * l * (f.sign_pos as usize + 1) / 8;
                for (step, xs) in self.0.chunks_exact(4 * l).enumerate() {
                    let mut src = vec![0u8; 16 * l];
                    for (d, x) in src.chunks_exact_mut(4).zip(xs) {
                        d.copy_from_slice(&x.to_le_bytes());
                    }
                    let mut q = [simd.splat(0.0); 4];
                    for (k, qk) in q.iter_mut().enumerate() {
                        *qk = simd.load_f32(&src[4 * l * k..4 * l * (k + 1)]);
                    }
                    let (mut got, mut want) = (vec![0u8; bytes], vec![0u8; bytes]);
                    simd.store_mini_x4(q, &f, &mut got);
                    store_minifloat_x4(simd, q, &f, &mut want);
                    if got != want {
                        return Some((id, step, got, want));
                    }
                }
            }
            None
        }
    }

    /// The four-vector float8 / float4 stores on every ISA, on f32 patterns in a scrambled
    /// order (a multiplicative stride through all 2^32: neighbouring lanes far apart, so a
    /// lane-order slip shows) and the specials, against the per-vector codec, which the
    /// exhaustive test compares with the reference.
    #[test]
    fn mini_x4_stores_match_the_per_vector_codec_on_every_isa() {
        let mut xs: Vec<f32> = (0..1u32 << 18).map(|k| f32::from_bits(k.wrapping_mul(0x9e37_79b1))).collect();
        let specials = [0u32, 0x8000_0000, 1, 0x8000_0008, 0x7f80_0000, 0xff80_0000, 0x7f80_0001, 0xffc0_0123];
        xs.extend(specials.iter().cycle().take(64).map(|&b| f32::from_bits(b)));
        for isa in Isa::ALL {
            if !isa.is_available() {
                println!("{isa}: skipped, not on this CPU");
                continue;
            }
            if let Some((id, step, got, want)) = dispatch(isa, MiniStores(&xs)) {
                panic!("{isa}: format id {id}, step {step}: store_mini_x4 wrote {got:02x?}, the codec {want:02x?}");
            }
            println!("{isa}: {} values through each route format checked", xs.len());
        }
    }

    /// Each ISA's four-vector 2-bit store (`store_u2x4`) against four `store_u2`s, on
    /// lanes of every value in `[-128, 127]` in a scrambled order: the first differing step
    /// as (step, got, want).
    struct CrumbStores;

    impl Kernel for CrumbStores {
        type Output = Option<(usize, Vec<u8>, Vec<u8>)>;
        fn run<S: Simd>(self, simd: S) -> Self::Output {
            let l = S::LANES;
            for step in 0..256 {
                let lanes: Vec<i32> = (0..4 * l).map(|j| ((step * 4 * l + j) * 97 % 256) as i32 - 128).collect();
                let mut c = [simd.splat_i(0); 4];
                for (k, ck) in c.iter_mut().enumerate() {
                    let bytes: Vec<u8> = lanes[k * l..(k + 1) * l].iter().flat_map(|v| v.to_le_bytes()).collect();
                    *ck = simd.load_i32(&bytes);
                }
                let (mut got, mut want) = (vec![0u8; l], vec![0u8; l]);
                simd.store_u2x4(c, &mut got);
                for (k, ck) in c.into_iter().enumerate() {
                    simd.store_u2(ck, &mut want[k * l / 4..(k + 1) * l / 4]);
                }
                if got != want {
                    return Some((step, got, want));
                }
            }
            None
        }
    }

    #[test]
    fn u2_x4_stores_match_four_vector_stores_on_every_isa() {
        for isa in Isa::ALL {
            if !isa.is_available() {
                println!("{isa}: skipped, not on this CPU");
                continue;
            }
            if let Some((step, got, want)) = dispatch(isa, CrumbStores) {
                panic!("{isa}: step {step}: store_u2x4 wrote {got:02x?}, four store_u2 {want:02x?}");
            }
            println!("{isa}: 256 steps of 2-bit codes checked");
        }
    }

    /// Each ISA's e5m2 load (`load_e5m2`, by the f16 conversion on x86) against the
    /// arithmetic decoder, for every code in every lane position: bit for bit, a NaN code
    /// as some NaN. The first difference as (code, got, want) bits.
    struct E5m2Loads;

    impl Kernel for E5m2Loads {
        type Output = Option<(u8, u32, u32)>;
        fn run<S: Simd>(self, simd: S) -> Self::Output {
            use crate::codec::{decode_minifloat, MiniFormat};
            let l = S::LANES;
            for start in 0..256usize {
                let codes: Vec<u8> = (0..l).map(|j| (start + 37 * j) as u8).collect();
                let (mut got, mut want) = ([0u8; 64], [0u8; 64]);
                simd.store_f32(simd.load_e5m2(&codes), &mut got);
                simd.store_f32(decode_minifloat(simd, simd.load_u8(&codes), &MiniFormat::of_id(4)), &mut want);
                for (j, &c) in codes.iter().enumerate() {
                    let (g, w) = (crate::simd::lane_f32(&got, j), crate::simd::lane_f32(&want, j));
                    if !(g.to_bits() == w.to_bits() || g.is_nan() && w.is_nan()) {
                        return Some((c, g.to_bits(), w.to_bits()));
                    }
                }
            }
            None
        }
    }

    #[test]
    fn e5m2_loads_match_the_decoder_on_every_isa() {
        for isa in Isa::ALL {
            if !isa.is_available() {
                println!("{isa}: skipped, not on this CPU");
                continue;
            }
            if let Some((c, got, want)) = dispatch(isa, E5m2Loads) {
                panic!("{isa}: e5m2 code {c:#04x}: load_e5m2 gave {got:#010x}, the decoder {want:#010x}");
            }
            println!("{isa}: every e5m2 code in every lane checked");
        }
    }

    /// Each ISA's four-vector 6-bit load (`load_u6x4`) against four `load_u6`s, on
    /// scrambled bytes: the first differing step as (step, got, want) lanes.
    struct SixLoads;

    impl Kernel for SixLoads {
        type Output = Option<(usize, Vec<u32>, Vec<u32>)>;
        fn run<S: Simd>(self, simd: S) -> Self::Output {
            let (l, q) = (S::LANES, 3 * S::LANES / 4);
            let lanes = |v: [S::I; 4]| {
                let mut out = Vec::new();
                for vk in v {
                    let mut b = [0u8; 64];
                    simd.store_i32(vk, &mut b);
                    out.extend((0..l).map(|t| crate::simd::lane_i32(&b, t) as u32));
                }
                out
            };
            for step in 0..512usize {
                let bytes: Vec<u8> =
                    (0..4 * q).map(|j| ((step * 4 * q + j) as u32).wrapping_mul(0x9e37_79b1) as u8).collect();
                let got = lanes(simd.load_u6x4(&bytes));
                let want = lanes([0, 1, 2, 3].map(|k| simd.load_u6(&bytes[k * q..(k + 1) * q])));
                if got != want {
                    return Some((step, got, want));
                }
            }
            None
        }
    }

    #[test]
    fn u6_x4_loads_match_four_vector_loads_on_every_isa() {
        for isa in Isa::ALL {
            if !isa.is_available() {
                println!("{isa}: skipped, not on this CPU");
                continue;
            }
            if let Some((step, got, want)) = dispatch(isa, SixLoads) {
                panic!("{isa}: step {step}: load_u6x4 gave {got:02x?}, four load_u6 {want:02x?}");
            }
            println!("{isa}: 512 steps of 6-bit codes checked");
        }
    }

    /// Each ISA's transposing reductions (`hmax_i_each`, `hmin_each`, `hmax_each`) against
    /// the per-vector ones gathered lane by lane, on `LANES` vectors of scrambled patterns
    /// per round (magnitude bits with NaN and infinity patterns, or any i32, for the integer
    /// maximum; numbers for the float ones): the first differing round as (round, what, got, want).
    struct EachReductions;

    impl Kernel for EachReductions {
        type Output = Option<(usize, &'static str, Vec<u32>, Vec<u32>)>;
        fn run<S: Simd>(self, simd: S) -> Self::Output {
            let l = S::LANES;
            let lanes = |b: &[u8; 64]| (0..l).map(|t| crate::simd::lane_i32(b, t) as u32).collect::<Vec<u32>>();
            for round in 0..512usize {
                let (mut vi, mut vf) = (vec![simd.splat_i(0); l], vec![simd.splat(0.0); l]);
                for (k, (ik, fk)) in vi.iter_mut().zip(vf.iter_mut()).enumerate() {
                    let pat = |j: usize| ((round * l * l + k * l + j) as u32).wrapping_mul(0x9e37_79b1);
                    let ib: Vec<u8> = (0..l)
                        .flat_map(|j| {
                            match (round + j) % 61 {
                                0 => 0x7f80_0000u32,
                                1 => 0x7fc0_0000 | pat(j) >> 10,
                                // Magnitude bits, and in odd rounds any i32 (the maximum is signed).
                                _ if round % 2 == 0 => pat(j) & 0x7fff_ffff,
                                _ => pat(j),
                            }
                            .to_le_bytes()
                        })
                        .collect();
                    *ik = simd.load_i32(&ib);
                    let fb: Vec<u8> = (0..l).flat_map(|j| ((pat(j) >> 9) as f32 - 4e6).to_le_bytes()).collect();
                    *fk = simd.load_f32(&fb);
                }
                let (mut got, mut want) = ([0u8; 64], [0u8; 64]);
                simd.store_i32(simd.hmax_i_each(&vi), &mut got);
                for (t, &v) in vi.iter().enumerate() {
                    want[4 * t..4 * t + 4].copy_from_slice(&simd.hmax_i(v).to_le_bytes());
                }
                if got[..4 * l] != want[..4 * l] {
                    return Some((round, "hmax_i_each", lanes(&got), lanes(&want)));
                }
                for (what, r) in [("hmin_each", simd.hmin_each(&vf)), ("hmax_each", simd.hmax_each(&vf))] {
                    simd.store_f32(r, &mut got);
                    for (t, &v) in vf.iter().enumerate() {
                        let w = if what == "hmin_each" { simd.hmin(v) } else { simd.hmax(v) };
                        want[4 * t..4 * t + 4].copy_from_slice(&w.to_le_bytes());
                    }
                    if got[..4 * l] != want[..4 * l] {
                        return Some((round, what, lanes(&got), lanes(&want)));
                    }
                }
            }
            None
        }
    }

    #[test]
    fn each_reductions_match_per_vector_reductions_on_every_isa() {
        for isa in Isa::ALL {
            if !isa.is_available() {
                println!("{isa}: skipped, not on this CPU");
                continue;
            }
            if let Some((round, what, got, want)) = dispatch(isa, EachReductions) {
                panic!("{isa}: round {round}: {what} gave {got:08x?}, per vector {want:08x?}");
            }
            println!("{isa}: 512 rounds of LANES vectors reduced");
        }
    }

    /// Each ISA's f16 conversions (`load_f16`, `f32_to_f16_bits`, `store_f16`, which the ISAs
    /// with a hardware or library conversion override) against the generic codec, bit for
    /// bit: the loads' and conversions' pairs, then the stores' pairs, and whether every
    /// store left the bytes after its own `2 * LANES` alone.
    struct F16Conversions<'a>(&'a [u16], &'a [f32]);

    impl Kernel for F16Conversions<'_> {
        type Output = (Vec<(u32, u32)>, Vec<(u32, u32)>, bool);
        fn run<S: Simd>(self, simd: S) -> (Vec<(u32, u32)>, Vec<(u32, u32)>, bool) {
            use crate::codec::{f16_bits_to_f32, f32_to_f16_bits_generic};
            let (mut out, mut stores, mut within) = (Vec::new(), Vec::new(), true);
            for chunk in self.0.chunks(S::LANES) {
                let mut src = vec![0u8; 2 * S::LANES];
                for (d, h) in src.chunks_exact_mut(2).zip(chunk) {
                    d.copy_from_slice(&h.to_le_bytes());
                }
                let (mut a, mut b) = (vec![0u8; 4 * S::LANES], vec![0u8; 4 * S::LANES]);
                simd.store_f32(simd.load_f16(&src), &mut a);
                simd.store_f32(f16_bits_to_f32(simd, simd.load_u16(&src)), &mut b);
                out.extend(lanes(&a).zip(lanes(&b)).take(chunk.len()));
            }
            for chunk in self.1.chunks(S::LANES) {
                let mut src = vec![0u8; 4 * S::LANES];
                for (d, x) in src.chunks_exact_mut(4).zip(chunk) {
                    d.copy_from_slice(&x.to_le_bytes());
                }
                let x = simd.load_f32(&src);
                let (mut a, mut b) = (vec![0u8; 4 * S::LANES], vec![0u8; 4 * S::LANES]);
                simd.store_i32(simd.f32_to_f16_bits(x), &mut a);
                simd.store_i32(f32_to_f16_bits_generic(simd, x), &mut b);
                out.extend(lanes(&a).zip(lanes(&b)).take(chunk.len()).map(|(g, w)| (g & 0xffff, w & 0xffff)));
                let mut c = vec![0xa5u8; 4 * S::LANES];
                simd.store_f16(x, &mut c);
                let stored = c[..2 * S::LANES].chunks_exact(2).map(|h| u32::from(u16::from_le_bytes([h[0], h[1]])));
                stores.extend(stored.zip(lanes(&b).map(|w| w & 0xffff)).take(chunk.len()));
                within &= c[2 * S::LANES..].iter().all(|&v| v == 0xa5);
            }
            (out, stores, within)
        }
    }

    fn lanes(b: &[u8]) -> impl Iterator<Item = u32> + '_ {
        b.chunks_exact(4).map(|c| u32::from_le_bytes([c[0], c[1], c[2], c[3]]))
    }

    #[test]
    fn f16_conversions_match_the_generic_codec_on_every_isa() {
        let hs: Vec<u16> = (0..=u16::MAX).collect();
        // Every f16 value and its f32 neighbours (halfway points round to even there),
        // the overflow and underflow boundaries, and f32 NaN payloads of both signs.
        let mut xs = Vec::new();
        for h in 0..=u16::MAX {
            let v = half::f16::from_bits(h).to_f32();
            let next = half::f16::from_bits(h.wrapping_add(1)).to_f32();
            let mid = f32::midpoint(v, next);
            for x in [v, mid] {
                if x.is_finite() {
                    let b = x.to_bits();
                    xs.extend([x, f32::from_bits(b.wrapping_add(1)), f32::from_bits(b.wrapping_sub(1))]);
                }
            }
        }
        for b in [0x7f80_0001u32, 0x7fbf_ffff, 0x7fc0_0000, 0x7fc0_2000, 0x7fff_ffff, 0x7f80_2000] {
            xs.extend([f32::from_bits(b), f32::from_bits(b | 0x8000_0000)]);
        }
        xs.extend([65_519.996, 65_520.0, 65_504.0, f32::MAX, f32::INFINITY, 1e-8, 2.98e-8, 1e-45, 0.0]);
        xs.extend(xs.clone().iter().map(|x| -x).collect::<Vec<_>>());
        for isa in Isa::ALL {
            if !isa.is_available() {
                println!("{isa}: skipped, not on this CPU");
                continue;
            }
            let (got, stores, within) = dispatch(isa, F16Conversions(&hs, &xs));
            assert_eq!(got.len(), hs.len() + xs.len());
            assert_eq!(stores.len(), xs.len());
            assert!(within, "{isa}: store_f16 wrote past its 2 * LANES bytes");
            for ((g, w), x) in stores.iter().zip(&xs) {
                assert_eq!(
                    g,
                    w,
                    "{isa}: store_f16({x:e} = {:#010x}) stored {g:#x}, the generic codec gives {w:#x}",
                    x.to_bits()
                );
            }
            for (i, (g, w)) in got.iter().enumerate() {
                let what = match i.checked_sub(hs.len()) {
                    None => format!("load_f16({:#06x})", hs[i]),
                    Some(j) => format!("f32_to_f16_bits({:e} = {:#010x})", xs[j], xs[j].to_bits()),
                };
                assert_eq!(g, w, "{isa}: {what} = {g:#x}, the generic codec gives {w:#x}");
            }
            println!("{isa}: {} values checked", got.len() + stores.len());
        }
    }
}
