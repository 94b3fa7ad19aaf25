//! Targets: the models a run can evaluate, one file per plugin.

pub mod anthropic;
pub mod command;
pub mod http;
pub mod imported;
pub(crate) mod live;
pub mod openai_compat;
pub mod reference;
pub mod reference_agent;
pub mod reference_memorizer;

pub use live::{EnvLookup, process_env};
