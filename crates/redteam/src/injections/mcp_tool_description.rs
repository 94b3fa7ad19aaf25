//! `mcp_tool_description`: the attacker instruction hidden in the description of a tool on a second, gauntlet-served MCP server (see [`crate::injection::mcp`]).

use super::{MCP_PARAMS, McpInjection};
use crate::error::BuildError;
use crate::injection::mcp::Vector;
use crate::judge::InjectionEntry;
use crate::plugin::Entry;
use gauntlet_core::params::{Axis, PluginInfo, PluginSpec};

pub const INFO: PluginInfo = PluginInfo {
    axis: Axis::Injection,
    name: "mcp_tool_description",
    doc: "MCP: the attacker instruction hidden in the description of a tool on a second, gauntlet-served MCP server",
    params: MCP_PARAMS,
};

/// This injection's registration (listed in `ENTRIES` in `injections/mod.rs`).
pub const ENTRY: InjectionEntry = Entry {
    info: INFO,
    build: |s, steps| Ok(Box::new(build(s.clone(), steps)?)),
};

pub fn build(spec: PluginSpec, max_steps: u32) -> Result<McpInjection, BuildError> {
    McpInjection::new(spec, Vector::ToolDescription, max_steps)
}
