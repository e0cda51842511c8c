//! Task 7: shard one quantize call over an engine's own threads (here `std::thread::scope`;
//! any pool works): each thread quantizes a range of the tensor into its part of the
//! output, and the result is bit for bit that of one call.
//!
//! `cargo run -p qdq --example sharding`

use qdq::{DataType, PackedMut, Params};

pub fn main() -> Result<(), qdq::Error> {
    let x: Vec<f32> = (0..10_000).map(|i| (i as f32 * 0.37).sin() * 4.0).collect();
    let (x, params) = (&x, &Params::per_tensor(4.0 / 127.0));
    let threads = 4;

    // --- the task, whole-byte output: 7 lines ---
    let mut y = vec![0i8; x.len()];
    let per = x.len().div_ceil(threads);
    std::thread::scope(|s| {
        let shards = y.chunks_mut(per).enumerate();
        let jobs: Vec<_> = shards
            .map(|(k, part)| s.spawn(move || qdq::quantize_range(x, params, k * per..k * per + part.len(), part)))
            .collect();
        jobs.into_iter().try_for_each(|job| job.join().expect("a shard panicked"))
    })?;
    // ---

    let mut whole = vec![0i8; x.len()];
    qdq::quantize(x, params, &mut whole)?;
    println!("{threads} shards of {per} elements: identical to one call: {}", y == whole);
    assert_eq!(y, whole);

    // Packed int4: shards start on a byte boundary (an even element), so each thread owns
    // whole bytes: element k * per starts at byte k * per / 2.
    let mut packed = vec![0u8; DataType::I4.byte_len(x.len()).unwrap()];
    let per = x.len().div_ceil(threads).next_multiple_of(2);
    std::thread::scope(|s| {
        let shards = packed.chunks_mut(per / 2).enumerate();
        let jobs: Vec<_> = shards
            .map(|(k, part)| {
                let range = k * per..(k * per + per).min(x.len());
                s.spawn(move || qdq::quantize_range(x, params, range, PackedMut::new(DataType::I4, part)))
            })
            .collect();
        jobs.into_iter().try_for_each(|job| job.join().expect("a shard panicked"))
    })?;
    let mut whole = vec![0u8; packed.len()];
    qdq::quantize(x, params, PackedMut::new(DataType::I4, &mut whole))?;
    assert_eq!(packed, whole);
    println!("int4: identical too ({} bytes)", packed.len());
    Ok(())
}
