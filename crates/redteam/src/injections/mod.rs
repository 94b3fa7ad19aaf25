//! Injections, one file per plugin: the injection-mode counterpart of attacks. The
//! bundled-suite injections run the agent loop ([`crate::injection::agent`]) once per
//! scenario, differing only in where the attacker's instruction is placed; `injecagent`
//! runs InjecAgent's cases ([`crate::injecagent::runner`]).

pub mod agentdojo;
pub mod direct_injection;
pub mod indirect_injection;
pub mod injecagent;
pub mod mcp_rug_pull;
pub mod mcp_shadowing;
pub mod mcp_tool_description;
pub mod mcp_tool_result;
pub mod no_injection;
pub mod poisoned_content;

/// The injections, in name order: the `ENTRY` of each `pub mod` above whose file declares one
/// (the build derives the list from those lines).
pub const ENTRIES: &[crate::judge::InjectionEntry] =
    &include!(concat!(env!("OUT_DIR"), "/injections.rs"));

/// Each of the injections' threat-map rows (its file's `THREAT`), by name, in name order.
pub const THREATS: &[(&str, gauntlet_core::taxonomy::ThreatEntry)] =
    &include!(concat!(env!("OUT_DIR"), "/injections_threat.rs"));

// The attack the agent-loop injections share.
mod agent_attack;

pub use agent_attack::{DEFAULT_MAX_STEPS, Injection, MCP_PARAMS, McpInjection};
