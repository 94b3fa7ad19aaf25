//! gauntlet-redteam: the red-team surfaces.
//!
//! Read top to bottom, one attempt flows like this: a [`datasets`] behavior is turned by
//! an [`attacks`] plugin into one or more [`attack::Attempt`]s (each a conversation with
//! the target through the engine's cached [`attack::CallModel`]), every attempt is scored
//! by each [`judges`] plugin into a [`gauntlet_core::outcome::Verdict`], the verdicts of
//! one behavior are folded into a [`metrics::BehaviorOutcome`], and [`metrics`] turn
//! those into rates with confidence intervals.
//!
//! Any attack can also carry a chain of prompt [`transforms`] (encodings, character
//! perturbations, framings, model-driven rewrites; the seam is [`transform`]), and
//! attacks that scale with a budget (Best-of-N, many-shot) report a [`curves`] curve.
//!
//! The agent surfaces: [`injection`] (the bundled and file scenario suites and their
//! agent loop) and [`injecagent`] (InjecAgent's published cases).
//!
//! Each plugin lives in its own file named after it; [`registry`] is the closed list.

// Files are read through `gauntlet_core::files` only (clippy.toml says why).
#![cfg_attr(not(test), deny(clippy::disallowed_methods))]

pub mod attack;
pub mod attacks;
mod attempt;
pub mod config;
pub mod curves;
pub mod datasets;
pub mod error;
pub mod gate_rule;
pub mod import;
pub mod injecagent;
pub mod injection;
pub mod injections;
pub mod judge;
pub mod judges;
pub mod lcs;
pub mod leakage;
pub mod metrics;
pub mod mismatch;
pub mod plugin;
pub mod refusal;
pub mod registry;
pub mod transform;
pub mod transforms;
