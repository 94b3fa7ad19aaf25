//! `mcp_shadowing`: a second MCP server's tool whose description redirects the use of the trusted injection tool (see [`crate::injection::mcp`]).

use super::{MCP_PARAMS, McpInjection};
use crate::error::BuildError;
use crate::injection::mcp::Vector;
use crate::judge::InjectionEntry;
use crate::plugin::Entry;
use gauntlet_core::params::{Axis, PluginInfo, PluginSpec};

pub const INFO: PluginInfo = PluginInfo {
    axis: Axis::Injection,
    name: "mcp_shadowing",
    doc: "MCP: a second MCP server's tool whose description redirects the use of the trusted injection tool",
    params: MCP_PARAMS,
};

/// This injection's registration (listed in `ENTRIES` in `injections/mod.rs`).
pub const ENTRY: InjectionEntry = Entry {
    info: INFO,
    build: |s, steps| Ok(Box::new(build(s.clone(), steps)?)),
};

pub fn build(spec: PluginSpec, max_steps: u32) -> Result<McpInjection, BuildError> {
    McpInjection::new(spec, Vector::Shadowing, max_steps)
}
