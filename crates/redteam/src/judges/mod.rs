//! Judges, one file per plugin.

pub mod refusal_match;
pub mod rubric;
