//! The journal: an append-only file of finished model calls, the source of resume.
//!
//! One line per call, `{"k":"<32 hex>","c":"<8 hex>","r":<response>}`, after a header
//! line. The key is the first 128 bits of a sha256 over everything that determines the
//! call (see `cache.rs`); `c` is the CRC-32 of the key's hex and the response's JSON, so
//! a byte flipped on disk is noticed and that call made again instead of a damaged
//! response being replayed. Lines are only ever appended, each with a single `write` of
//! the whole line, so a process killed at any moment leaves at worst one torn last line,
//! which the next open cuts off. There is no file per attempt.
//!
//! Journals written before checksums (header `{"gauntlet_journal":1}`) are still read:
//! their records without `c` are reused unverified ([`Journal::unverified`] counts
//! them), and records appended to them carry checksums. In a version-2 journal every
//! record must carry one.
//!
//! On open, the existing records are indexed in memory as a sorted array of
//! (64 key bits, offset and length packed in 64 bits): 16 bytes per record, sized
//! exactly by a first pass that counts lines, plus a bucket table over the keys' top
//! bits ([`index::Index`]). A lookup reads one bucket and makes a positioned read, and
//! the full 128-bit key stored in the record is checked. Records written during
//! this session are not indexed (a run never asks for the same call twice), except those
//! appended with [`Journal::append_indexed`]: the results of a provider batch, journaled
//! as they are ingested, before the units that asked for them (or, after a re-attach,
//! will ask for them) look them up.

mod file;
mod index;

pub use file::{Journal, Key, journal_error};
