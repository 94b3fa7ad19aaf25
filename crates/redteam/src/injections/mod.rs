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

/// The injections, in catalogue order: each file's `ENTRY`.
pub const ENTRIES: &[crate::judge::InjectionEntry] = &[
    no_injection::ENTRY,
    direct_injection::ENTRY,
    indirect_injection::ENTRY,
    injecagent::ENTRY,
    agentdojo::ENTRY,
    mcp_tool_description::ENTRY,
    mcp_tool_result::ENTRY,
    mcp_rug_pull::ENTRY,
    mcp_shadowing::ENTRY,
    poisoned_content::ENTRY,
];

// The attack the agent-loop injections share.
mod agent_attack;

pub use agent_attack::{DEFAULT_MAX_STEPS, Injection, MCP_PARAMS, McpInjection};
