//! How fast the digests a run pays for go on this machine, one thread: the manifest's
//! BLAKE3 of transcripts.jsonl (through `HashingWriter`, fed unit-sized pieces as the run
//! feeds it, and raw by update size), the journal records' CRC-32, and the sha256 the
//! call keys are made of. BENCHMARKS.md compares a run's digest cost with these ceilings.
//!
//!     cargo run --release -p gauntlet-job --example digest_speed
//!
//! Each figure is the best of five passes over 64 MiB of pseudo-random bytes.

use gauntlet_core::hash::HashWriter;
use gauntlet_job::manifest::HashingWriter;
use sha2::Digest;
use std::hint::black_box;
use std::time::Instant;

const MIB: usize = 1 << 20;

/// GB/s of `pass` over `bytes` bytes, best of five.
fn rate(bytes: usize, mut pass: impl FnMut()) -> f64 {
    let best = (0..5)
        .map(|_| {
            let t = Instant::now();
            pass();
            t.elapsed().as_secs_f64()
        })
        .fold(f64::MAX, f64::min);
    bytes as f64 / best / 1e9
}

fn main() {
    let data: Vec<u8> = (0..64 * MIB)
        .map(|i| (i.wrapping_mul(2_654_435_761) >> 13) as u8)
        .collect();

    // A unit's transcript lines arrive ~1–2 KB at a time; HashingWriter blocks them
    // (written to a sink here: the copy into its block is counted, the file is not).
    for piece in [900, 1800] {
        let r = rate(data.len(), || {
            let mut h = HashingWriter::new(std::io::sink());
            for c in data.chunks(piece) {
                h.write_lines(c, 1).expect("a sink takes everything");
            }
            black_box(h.finish().expect("a sink takes everything"));
        });
        println!("BLAKE3 via HashingWriter, {piece:>7} B pieces: {r:5.2} GB/s");
    }
    for size in [800, 16 << 10, 64 << 10, MIB] {
        let r = rate(data.len(), || {
            let mut h = blake3::Hasher::new();
            for c in data.chunks(size) {
                h.update(c);
            }
            black_box(h.finalize());
        });
        println!("BLAKE3 raw, {size:>7} B updates:          {r:5.2} GB/s");
    }

    // Journal records: a CRC-32 over each record's key and response (~300 bytes).
    let r = rate(data.len(), || {
        let mut x = 0u32;
        for c in data.chunks(300) {
            x ^= crc32fast::hash(c);
        }
        black_box(x);
    });
    println!("CRC-32, 300 B records:                    {r:5.2} GB/s");

    // Call keys: sha256 over length-prefixed fields (a grader prompt is ~1.2 KB).
    let r = rate(data.len(), || {
        for c in data.chunks(1200) {
            let mut h = HashWriter::new();
            h.field(c);
            black_box(h.finish());
        }
    });
    println!("sha256 via HashWriter, 1.2 KB keys:       {r:5.2} GB/s");
    let r = rate(data.len(), || {
        black_box(sha2::Sha256::digest(&data));
    });
    println!("sha256 raw, one 64 MiB pass:              {r:5.2} GB/s");
}
