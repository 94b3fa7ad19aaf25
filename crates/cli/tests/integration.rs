//! The integration tests of this crate, one module per file, linked into one test
//! binary: one link instead of one per file keeps a clean build's disk use and link
//! time down on small CI machines. Each file's own documentation says what it tests.

mod agentdojo;
mod analysis;
mod apps;
mod batch;
mod ci;
mod cli;
mod common;
mod deploy;
mod detect;
mod detect_hardening;
mod detect_shards;
mod exam;
mod exam_hardening;
mod exam_shards;
mod exam_spine;
mod first_eval;
mod guard;
mod hostile;
mod hostile3;
mod hostile_transport;
mod injection;
mod injection_wire;
mod judge_eval;
mod label;
mod layering;
mod leakage;
mod live;
mod live_local;
mod mcp;
mod mcp_injection;
mod measured;
mod progress;
mod prompted_and_injecagent;
mod redharness_configs;
mod reference_docs;
mod refusal_classifier;
mod serve;
mod shards;
mod transforms;
mod trials;
mod warnings;
