//! gauntlet-core: the vocabulary every other gauntlet crate speaks.
//!
//! Nothing here performs I/O beyond parsing text handed to it, except [`files`], the one
//! way every crate reads a file it was pointed at, [`atomic`], the atomic artefact
//! writer every surface writes its files through (the run-directory protocol built on
//! it — manifests, what an output directory holds, shards, supersede, merge — is
//! `gauntlet-job`). The pieces:
//! - [`message`]: chat messages, requests and responses exchanged with any model;
//! - [`behavior`]: one dataset item (a behavior / probe) and what a safe model should do;
//! - [`scenario`]: injection scenarios (agent task, sandbox state, checks) and agent scripts;
//! - [`evidence`]: what an agent application was seen doing (spans, canary-sink hits);
//! - [`outcome`]: the three-valued outcome of an attempt (success / failure / error) and verdicts;
//! - [`tree`]: a YAML document parsed into a located value tree, for precise config errors;
//! - [`params`]: declarative plugin parameter schemas and their validation;
//! - [`stats`]: bootstrap confidence intervals, Wilson intervals, quantiles;
//! - [`rng`]: seed derivation and the portable generator used everywhere;
//! - [`hash`]: sha256 helpers and canonical JSON hashing;
//! - [`files`]: reading named files: regular files only, capped per kind;
//! - [`terminal`]: printing untrusted text with its control characters escaped;
//! - [`paired`]: paired comparisons of per-behavior outcomes (McNemar, paired bootstrap);
//! - [`taxonomy`]: the threat map (OWASP, MITRE ATLAS, NIST AI RMF) results are tagged with;
//! - [`pyjson`]: JSON text as Python's `json.dumps` writes it (benchmark prompts).

// Files are read through `gauntlet_core::files` only (clippy.toml says why).
#![cfg_attr(not(test), deny(clippy::disallowed_methods))]

pub mod atomic;
pub mod behavior;
pub mod evidence;
pub mod files;
pub mod hash;
pub mod json;
pub mod judge_eval;
pub mod message;
pub mod outcome;
pub mod paired;
pub mod params;
pub mod pyjson;
pub mod rng;
pub mod scenario;
pub mod stats;
pub mod taxonomy;
pub mod terminal;
pub mod text;
pub mod tree;

/// The harness version recorded in every artefact and folded into every cache key.
pub const HARNESS_VERSION: &str = env!("CARGO_PKG_VERSION");
