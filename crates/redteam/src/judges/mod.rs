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

/// The judges, in catalogue order: each file's `ENTRY`.
pub const ENTRIES: &[crate::judge::JudgeEntry] = &[
    refusal_match::ENTRY,
    rubric::ENTRY,
    strongreject::ENTRY,
    leak_detector::ENTRY,
    injection_detector::ENTRY,
    injecagent::ENTRY,
    refusal_classifier::ENTRY,
    agentdojo::ENTRY,
    guard::ENTRY,
    guardrail::ENTRY,
    imported::ENTRY,
    agent_evidence::ENTRY,
];
