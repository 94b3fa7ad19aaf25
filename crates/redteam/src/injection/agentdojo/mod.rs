//! AgentDojo (ETH Zurich and Invariant Labs; `agentdojo==0.1.35`) on gauntlet's spine,
//! and the `agentdojo` scenario source.
//!
//! AgentDojo's environments, tools, attacks, defences' prompt changes and its utility and
//! security checks are Python over pydantic models: they run, unported, in a confined
//! sidecar process ([`sidecar`]) driving the package itself. gauntlet keeps the agent loop
//! ([`super::agent_loop::run_loop`] over an [`episode::Episode`]) and every model call, so the
//! journal, resume, budgets, batch, trials, usage, transcripts and statistics are the
//! engine's.
//!
//! How it maps onto the engine:
//! - **scenarios** `{name: agentdojo, params: {version, suites | suite, model_name,
//!   user_tasks?, injection_tasks?}}`: one dataset per suite (`suites: [banking, slack]`
//!   expands into one spec per suite in the config, so every report row is one suite).
//!   A suite's behaviors are its *cases*: each user task alone (the benign case,
//!   `user_task_3`) and each user task × injection task pair (`user_task_3/injection_task_1`),
//!   ids from the embedded catalogue (`catalogue.json`, what the package lists for each
//!   benchmark version; the sidecar's is checked against it in tests).
//! - **injections** `{name: agentdojo, params: {attack: NAME | none, defense?}}`
//!   (`crate::injections::agentdojo`): an attack runs the attacked pairs, `none` the benign
//!   cases; a unit of the other kind has no attempt and is outside every cell.
//! - **defenses** `[none, tool_filter, …]` (config axis): each injection once per defence.
//! - **judges** `[agentdojo]`: AgentDojo's own verdicts, computed by the sidecar at the
//!   end of each episode.

pub mod benchmark;
pub mod delivery;
pub mod episode;
pub mod error;
pub mod import;
pub mod sidecar;
pub mod source;

pub use benchmark::{
    ATTACKS, DEFAULT_MODEL_NAME, DEFAULT_VERSION, DEFENSES, SUITES, VERSIONS, catalogue,
};
pub use source::{INFO, load};
