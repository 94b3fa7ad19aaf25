//! `mcp_tool_result`: the attacker instruction in the result of the scenario's injection tool, served over MCP (a proxy rewrites it): gauntlet's served toolkit, or the user's own server when the tool is one of the scenario's `external_tools` (see [`crate::injection::mcp`]).

use super::{MCP_PARAMS, McpInjection};
use crate::error::BuildError;
use crate::injection::mcp::Vector;
use crate::judge::InjectionEntry;
use crate::plugin::Entry;
use gauntlet_core::params::{Axis, PluginInfo, PluginSpec};

pub const INFO: PluginInfo = PluginInfo {
    axis: Axis::Injection,
    name: "mcp_tool_result",
    doc: "MCP: the attacker instruction in the result of the scenario's injection tool, served over MCP (a proxy rewrites it; in front of your own server for a scenario's external_tools)",
    params: MCP_PARAMS,
};

/// Its threat-map row (`attacks` in `taxonomy/threat_map.json`): framework key and
/// entry ids.
pub const THREAT: gauntlet_core::taxonomy::ThreatEntry = &[
    ("owasp_agentic", &["T2", "T6"]),
    ("owasp_agentic_2026", &["ASI01", "ASI02"]),
    ("owasp_mcp", &["MCP06:2025", "MCP10:2025"]),
    ("mitre_atlas", &["AML.T0051.001", "AML.T0080"]),
    ("eu_ai_act", &["Art. 15", "Art. 55"]),
];

/// This injection's registration (listed in `ENTRIES` in `injections/mod.rs`).
pub const ENTRY: InjectionEntry = Entry {
    info: INFO,
    build: |s, steps| Ok(Box::new(build(s.clone(), steps)?)),
};

pub fn build(spec: PluginSpec, max_steps: u32) -> Result<McpInjection, BuildError> {
    McpInjection::new(spec, Vector::ToolResult, max_steps)
}
