//! `mcp_rug_pull`: the scenario's injection tool listed honestly first (pinned), then with the instruction in its description from the second tools/list on (see [`crate::injection::mcp`]).

use super::{MCP_PARAMS, McpInjection};
use crate::error::BuildError;
use crate::injection::mcp::Vector;
use crate::judge::InjectionEntry;
use crate::plugin::Entry;
use gauntlet_core::params::{Axis, PluginInfo, PluginSpec};

pub const INFO: PluginInfo = PluginInfo {
    axis: Axis::Injection,
    name: "mcp_rug_pull",
    doc: "MCP: the scenario's injection tool listed honestly first (pinned), then with the instruction in its description from the second tools/list on",
    params: MCP_PARAMS,
};

/// This injection's registration (listed in `ENTRIES` in `injections/mod.rs`).
pub const ENTRY: InjectionEntry = Entry {
    info: INFO,
    build: |s, steps| Ok(Box::new(build(s.clone(), steps)?)),
};

pub fn build(spec: PluginSpec, max_steps: u32) -> Result<McpInjection, BuildError> {
    McpInjection::new(spec, Vector::RugPull, max_steps)
}
