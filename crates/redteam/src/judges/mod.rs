//! Judges, one file per plugin.

pub mod agent_evidence;
pub mod agentdojo;
pub mod guard;
pub mod injecagent;
pub mod injection_detector;
pub mod leak_detector;
pub mod refusal_classifier;
pub mod refusal_match;
pub mod rubric;
pub mod strongreject;
