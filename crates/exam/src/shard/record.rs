//! The file names of the two exams' shard records, for the shards' writers and for the
//! merge errors that name them.

/// The agent exam's shard record.
pub(super) const AGENT: &str = "shard.json";
/// The detect exam's shard record.
pub(super) const DETECT: &str = "detect_shard.json";
