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

/// This injection's registration (listed in `ENTRIES` in `injections/mod.rs`).
pub const ENTRY: InjectionEntry = Entry {
    info: INFO,
    build: |s, steps| Ok(Box::new(build(s.clone(), steps)?)),
};

pub fn build(spec: PluginSpec, max_steps: u32) -> Result<McpInjection, BuildError> {
    McpInjection::new(spec, Vector::ToolResult, max_steps)
}
