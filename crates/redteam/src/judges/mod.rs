//! Judges, one file per plugin.

pub mod agent_evidence;
pub mod agentdojo;
pub mod guard;
pub mod guardrail;
pub mod imported;
pub mod injecagent;
pub mod injection_detector;
pub mod leak_detector;
pub mod refusal_classifier;
pub mod refusal_match;
pub mod rubric;
pub mod strongreject;

/// The judges, in name order: the `ENTRY` of each `pub mod` above whose file declares one
/// (the build derives the list from those lines).
pub const ENTRIES: &[crate::judge::JudgeEntry] = &include!(concat!(env!("OUT_DIR"), "/judges.rs"));
