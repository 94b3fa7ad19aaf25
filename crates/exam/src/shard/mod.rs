//! Shards of both exams: `gauntlet exam … --shard i/N` and `gauntlet exam-detect …
//! --shard i/N` each run one part of an exam into `<out>.shard-<i>-of-<N>`, and
//! `gauntlet merge` puts the N shard directories back into the directory the exam
//! writes on one machine, byte for byte.
//!
//! - [`partition`]: which scenario runs (agent exam) or scenario files (detect exam)
//!   each shard holds;
//! - [`agent`]: the agent exam's shard record (`shard.json`) and its merge;
//! - [`detect`]: the detect exam's shard record (`detect_shard.json`), its identity and
//!   its merge.
//!
//! A shard directory is the exam's own output directory over its part, plus its record
//! and a `manifest.json` (size and digest of every file, `gauntlet_job::manifest`),
//! both written last: a shard without them was interrupted. What every kind of shard
//! shares — `i/N`, checking that a set of directories is the N shards of one job,
//! opening a record behind its manifest, concatenating journals — is
//! `gauntlet_job::shard`, which the red-team run's shards (the engine's `shard.rs` and
//! `merge.rs`) use too.

pub mod agent;
pub mod detect;
mod error;
pub mod partition;
mod record;
mod set;

pub use error::{FieldProblem, MergeError, ShardProblem, UnitsProblem};
pub use partition::{DETECT_PARTITION_SCHEME, PARTITION_SCHEME, assignment, detect_assignment};
pub use set::shard_out;
use set::{ShardDir, begin, open_set};

#[cfg(test)]
mod tests;
