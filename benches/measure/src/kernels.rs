//! The streaming kernels of the roofline, the only module of the crate with `unsafe` code:
//! the AVX-512 kernel's raw-pointer loads and stores, and the calls of the
//! `#[target_feature]` kernels after the feature has been detected at run time. The portable
//! kernel ([`stream_blocks`]) is safe code on slices.
//!
//! Every kernel needs non-empty input and output (the block ratio divides by both
//! lengths; [`Roofline::new`](crate::Roofline::new) allocates at least one byte of each).

/// Whether this CPU has AVX-512F (the kernel with non-temporal stores).
pub(crate) fn has_avx512() -> bool {
    #[cfg(target_arch = "x86_64")]
    {
        std::arch::is_x86_feature_detected!("avx512f")
    }
    #[cfg(not(target_arch = "x86_64"))]
    {
        false
    }
}

/// One pass through a part (`nt`: non-temporal stores, AVX-512 only): the widest kernel
/// this CPU runs. Returns a value that depends on every input byte.
pub(crate) fn stream(input: &[u8], output: &mut [u8], nt: bool) -> u64 {
    #[cfg(target_arch = "x86_64")]
    {
        if has_avx512() {
            // SAFETY: `stream_avx512` is compiled with `avx512f` enabled, the one feature it
            // needs, and `has_avx512` has just detected it on this CPU at run time. Its
            // memory accesses are bounded by the slice lengths inside it.
            return unsafe {
                if nt {
                    stream_avx512::<true>(input, output)
                } else {
                    stream_avx512::<false>(input, output)
                }
            };
        }
        if std::arch::is_x86_feature_detected!("avx2") {
            // SAFETY: `stream_avx2` is compiled with `avx2` enabled and the line above has
            // detected AVX2 on this CPU at run time; it only runs safe slice code.
            return unsafe { stream_avx2(input, output) };
        }
    }
    let _ = nt; // AVX-512 only
    stream_blocks(input, output)
}

/// AVX-512 version of [`stream_blocks`]; `NT`: non-temporal stores for the whole blocks
/// (the part's output starts 64-byte aligned).
#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "avx512f")]
fn stream_avx512<const NT: bool>(inp: &[u8], out: &mut [u8]) -> u64 {
    use std::arch::x86_64::*;
    let mut acc = _mm512_setzero_si512();
    let tail = {
        let (il, ol) = (inp.len(), out.len());
        let (f, t) = (inp.as_ptr(), out.as_mut_ptr());
        // Where the unread input begins.
        let mut e = if il >= ol {
            // Output block k is the xor of input blocks q k .. q k + q - 1 (q: the ratio,
            // rounded, so that a few bytes of scales do not change it).
            let q = ((il + ol / 2) / ol).max(1);
            let nb = (ol / 64).min(il / (64 * q));
            // SAFETY: nb <= il / (64 q) and nb <= ol / 64. For k < nb and m < q the loads
            // read inp[64 q k + 64 m .. + 64], which ends at or before 64 q nb <= il, and the
            // stores write out[64 k .. 64 k + 64], which ends at or before 64 nb <= ol, so
            // every offset pointer and every access stays inside its slice. The unaligned
            // load / store intrinsics accept any address; the non-temporal store, which
            // needs 64-byte alignment, runs only where `align_offset(64)` is 0. `f` and `t`
            // come from the two slices, which do not overlap (one is borrowed mutably).
            unsafe {
                for k in 0..nb {
                    let p = f.add(64 * q * k);
                    let mut v = _mm512_loadu_si512(p.cast());
                    for m in 1..q {
                        v = _mm512_xor_si512(v, _mm512_loadu_si512(p.add(64 * m).cast()));
                    }
                    if NT && t.add(64 * k).align_offset(64) == 0 {
                        _mm512_stream_si512(t.add(64 * k).cast(), v);
                    } else {
                        _mm512_storeu_si512(t.add(64 * k).cast(), v);
                    }
                }
            }
            leftover_output(inp, out, 64 * q * nb, 64 * nb)
        } else {
            // Input block k is stored as output blocks q k .. q k + q - 1.
            let q = ((ol + il / 2) / il).max(1);
            let nb = (il / 64).min(ol / (64 * q));
            // SAFETY: nb <= il / 64 and nb <= ol / (64 q). For k < nb the loads read
            // inp[64 k .. 64 k + 64], ending at or before 64 nb <= il; for m < q the stores
            // write out[64 (q k + m) .. + 64], ending at or before 64 q nb <= ol. Unaligned
            // intrinsics accept any address; the non-temporal store runs only on 64-byte
            // aligned addresses (`align_offset(64)` is 0).
            unsafe {
                for k in 0..nb {
                    let v = _mm512_loadu_si512(f.add(64 * k).cast());
                    let p = t.add(64 * q * k);
                    for m in 0..q {
                        if NT && p.add(64 * m).align_offset(64) == 0 {
                            _mm512_stream_si512(p.add(64 * m).cast(), v);
                        } else {
                            _mm512_storeu_si512(p.add(64 * m).cast(), v);
                        }
                    }
                }
            }
            for c in out[64 * q * nb..].chunks_mut(il) {
                c.copy_from_slice(&inp[..c.len()]);
            }
            64 * nb
        };
        // The input left over (scales, a fractional ratio) by whole vectors, then bytes (byte
        // by byte, 3/16 of an i16 -> f32 blocked-last32 input took longer than the pass).
        // SAFETY: the loop condition e + 64 <= il keeps each 64-byte unaligned load inside
        // `inp`.
        unsafe {
            while e + 64 <= il {
                acc = _mm512_xor_si512(acc, _mm512_loadu_si512(f.add(e).cast()));
                e += 64;
            }
        }
        fold_bytes(&inp[e..])
    };
    if NT {
        _mm_sfence();
    }
    let mut lanes = [0u64; 8];
    // SAFETY: `lanes` is 8 u64s, 64 writable bytes: exactly one unaligned 512-bit store.
    unsafe { _mm512_storeu_si512(lanes.as_mut_ptr().cast(), acc) };
    lanes.iter().fold(tail, |a, b| a ^ b)
}

/// [`stream_blocks`] compiled for AVX2.
#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "avx2")]
fn stream_avx2(input: &[u8], output: &mut [u8]) -> u64 {
    stream_blocks(input, output)
}

#[inline(always)]
fn load_block(b: &[u8]) -> [u64; 8] {
    std::array::from_fn(|k| u64::from_le_bytes(b[8 * k..8 * k + 8].try_into().unwrap_or([0; 8])))
}

#[inline(always)]
fn store_block(v: [u64; 8], b: &mut [u8]) {
    for (k, x) in v.iter().enumerate() {
        b[8 * k..8 * k + 8].copy_from_slice(&x.to_le_bytes());
    }
}

#[inline(always)]
fn xor_block(a: [u64; 8], b: [u64; 8]) -> [u64; 8] {
    std::array::from_fn(|k| a[k] ^ b[k])
}

/// The roofline loop on 64-byte blocks of `u64` lanes (vectorised by the compiler).
#[inline(always)]
fn stream_blocks(inp: &[u8], out: &mut [u8]) -> u64 {
    let mut acc = [0u64; 8];
    let tail = {
        let (il, ol) = (inp.len(), out.len());
        let mut e = if il >= ol {
            let q = ((il + ol / 2) / ol).max(1);
            let nb = (ol / 64).min(il / (64 * q));
            for k in 0..nb {
                let p = 64 * q * k;
                let mut v = load_block(&inp[p..p + 64]);
                for m in 1..q {
                    v = xor_block(v, load_block(&inp[p + 64 * m..p + 64 * m + 64]));
                }
                store_block(v, &mut out[64 * k..64 * k + 64]);
            }
            leftover_output(inp, out, 64 * q * nb, 64 * nb)
        } else {
            let q = ((ol + il / 2) / il).max(1);
            let nb = (il / 64).min(ol / (64 * q));
            for k in 0..nb {
                let v = load_block(&inp[64 * k..64 * k + 64]);
                for m in 0..q {
                    let p = 64 * (q * k + m);
                    store_block(v, &mut out[p..p + 64]);
                }
            }
            for c in out[64 * q * nb..].chunks_mut(il) {
                c.copy_from_slice(&inp[..c.len()]);
            }
            64 * nb
        };
        while e + 64 <= il {
            acc = xor_block(acc, load_block(&inp[e..e + 64]));
            e += 64;
        }
        fold_bytes(&inp[e..])
    };
    acc.iter().fold(tail, |a, b| a ^ b)
}

/// Writes the output bytes from `o` on (input at least as long as output): from the unread
/// input at `e` when there is enough of it, else from the start. Returns where the unread
/// input now begins.
#[inline(always)]
fn leftover_output(inp: &[u8], out: &mut [u8], e: usize, o: usize) -> usize {
    let need = out.len() - o;
    if inp.len() - e >= need {
        out[o..].copy_from_slice(&inp[e..e + need]);
        e + need
    } else {
        out[o..].copy_from_slice(&inp[..need]);
        e
    }
}

#[inline(always)]
fn fold_bytes(b: &[u8]) -> u64 {
    b.iter().fold(0u64, |h, &x| h.rotate_left(8) ^ x as u64)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_roofline_path_writes_every_output_byte() {
        for (i, o) in [
            (4096, 1024),
            (1024, 4096),
            (100_000, 3),
            (3, 100_000),
            (5000, 1250),
            (1250, 5000),
            (5, 7),
            (4 * 4096 + 5, 4096),
            (4096 + 5, 4 * 4096),
            (4600, 1000),
            (1000, 4600),
        ] {
            let input = vec![1u8; i];
            let mut out = vec![0xa5u8; o];
            stream_blocks(&input, &mut out);
            assert!(out.iter().all(|&b| b <= 1), "generic {i} {o}");
            #[cfg(target_arch = "x86_64")]
            for avx512 in [true, false] {
                let mut out = vec![0xa5u8; o];
                if avx512 && std::arch::is_x86_feature_detected!("avx512f") {
                    // SAFETY: `stream_avx512` needs avx512f, detected on this CPU just above.
                    unsafe { stream_avx512::<false>(&input, &mut out) };
                    assert!(out.iter().all(|&b| b <= 1), "avx512: {i} {o}");
                    out.fill(0xa5);
                    // SAFETY: as for the call above: avx512f was detected at run time.
                    unsafe { stream_avx512::<true>(&input, &mut out) };
                } else if !avx512 && std::arch::is_x86_feature_detected!("avx2") {
                    // SAFETY: `stream_avx2` needs avx2, detected on this CPU just above.
                    unsafe { stream_avx2(&input, &mut out) };
                } else {
                    continue;
                }
                assert!(out.iter().all(|&b| b <= 1), "avx512 {avx512}: {i} {o}");
            }
        }
    }
}
