//! The attack every agent-loop injection is: one agent episode per scenario, with the
//! attacker's instruction at a placement in a bundled suite ([`Injection`]) or in one
//! vector of the MCP tools offered ([`McpInjection`]).

use crate::attack::{Attack, Attempt, CallModel, PlannedCalls};
use crate::error::BuildError;
use crate::injection::agent::{Placement, attempt};
use gauntlet_core::behavior::Behavior;
use gauntlet_core::params::{ParamValue, PluginSpec};
use gauntlet_models::{BoxFuture, ModelError};

/// The default of the run config's `max_steps`.
pub const DEFAULT_MAX_STEPS: u32 = 6;

/// An injection: a placement and the step limit of the agent loop.
pub struct Injection {
    spec: PluginSpec,
    placement: Placement,
    max_steps: u32,
}

impl Injection {
    /// Builds the injection. `max_steps` (the run config's key) is recorded in the
    /// spec's params, so it is part of the plugin identity and of every cache key.
    pub(crate) fn new(mut spec: PluginSpec, placement: Placement, max_steps: u32) -> Self {
        spec.params
            .insert("max_steps", ParamValue::Int(i64::from(max_steps)));
        Injection {
            spec,
            placement,
            max_steps,
        }
    }
}

impl Attack for Injection {
    fn spec(&self) -> &PluginSpec {
        &self.spec
    }
    fn max_attempts(&self) -> u32 {
        1
    }
    fn planned_calls(&self) -> PlannedCalls {
        PlannedCalls {
            target: u64::from(self.max_steps),
            ..Default::default()
        }
    }
    fn run<'a>(
        &'a self,
        behavior: &'a Behavior,
        target: &'a dyn CallModel,
        seed: u64,
    ) -> BoxFuture<'a, Result<Vec<Attempt>, ModelError>> {
        Box::pin(attempt(
            &self.spec.name,
            self.placement,
            behavior,
            target,
            self.max_steps,
            seed,
        ))
    }
}

/// An MCP injection (`mcp_tool_description`, `mcp_tool_result`, `mcp_rug_pull`,
/// `mcp_shadowing`): the agent loop over tools from MCP servers, the instruction
/// delivered through one vector ([`crate::injection::mcp`]).
pub struct McpInjection {
    spec: PluginSpec,
    vector: crate::injection::mcp::Vector,
    servers: Vec<gauntlet_mcp::servers::ServerSpec>,
    start_timeout: Option<std::time::Duration>,
    /// The run's record of the servers' starts, shared by its MCP injections.
    health: std::sync::Arc<crate::injection::mcp_health::ServerHealth>,
    max_steps: u32,
}

/// The params every MCP injection takes.
pub const MCP_PARAMS: &[gauntlet_core::params::ParamSpec] = &[
    gauntlet_core::params::ParamSpec {
        name: "servers",
        kind: gauntlet_core::params::ParamKind::Str,
        default: gauntlet_core::params::DefaultValue::Absent,
        doc: "a servers file in the MCP clients' shape ({\"mcpServers\": {name: {command, args, env} | {url}}}) whose tools are offered beside gauntlet's served ones",
    },
    gauntlet_core::params::ParamSpec {
        name: "start_timeout_s",
        kind: gauntlet_core::params::ParamKind::Float {
            min: 0.1,
            max: 3600.0,
        },
        default: gauntlet_core::params::DefaultValue::Absent,
        doc: "seconds each server of `servers` has to start and answer `initialize` (default 30); a server that fails to start 3 times in a row is not started again in the run",
    },
];

impl McpInjection {
    pub(crate) fn new(
        mut spec: PluginSpec,
        vector: crate::injection::mcp::Vector,
        max_steps: u32,
    ) -> Result<Self, BuildError> {
        let servers = match spec.params.str("servers") {
            Some(p) => crate::injection::mcp::read_servers(std::path::Path::new(p))
                .map_err(|e| BuildError::param(e.to_string()))?,
            None => Vec::new(),
        };
        // gauntlet's own served servers go by these names: a user's server of the same
        // name would share their results' rewriting and their tools' `server__tool` names.
        let taken = [
            crate::injection::mcp::TRUSTED,
            crate::injection::mcp::HELPER,
        ];
        if let Some(s) = servers.iter().find(|s| taken.contains(&s.name.as_str())) {
            return Err(BuildError::param(format!(
                "servers: the server name `{}` is taken by gauntlet's own served servers ({}); rename it in {}",
                s.name,
                taken.join(", "),
                spec.params.str("servers").unwrap_or_default()
            )));
        }
        spec.params
            .insert("max_steps", ParamValue::Int(i64::from(max_steps)));
        let start_timeout = spec
            .params
            .float("start_timeout_s")
            .map(std::time::Duration::from_secs_f64);
        Ok(McpInjection {
            spec,
            vector,
            servers,
            start_timeout,
            health: crate::injection::mcp_health::ServerHealth::shared(),
            max_steps,
        })
    }
}

impl Attack for McpInjection {
    fn spec(&self) -> &PluginSpec {
        &self.spec
    }
    fn max_attempts(&self) -> u32 {
        1
    }
    fn planned_calls(&self) -> PlannedCalls {
        PlannedCalls {
            target: u64::from(self.max_steps),
            ..Default::default()
        }
    }
    fn run<'a>(
        &'a self,
        behavior: &'a Behavior,
        target: &'a dyn CallModel,
        seed: u64,
    ) -> BoxFuture<'a, Result<Vec<Attempt>, ModelError>> {
        Box::pin(crate::injection::mcp::attempt(
            &self.spec.name,
            self.vector,
            crate::injection::mcp::Servers {
                user: &self.servers,
                start_timeout: self.start_timeout,
                health: &self.health,
            },
            behavior,
            target,
            self.max_steps,
            seed,
        ))
    }
}
