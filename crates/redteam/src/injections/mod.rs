//! Injections, one file per plugin: the injection-mode counterpart of attacks. Each runs
//! the agent loop ([`crate::injection::agent`]) once per scenario, differing only in
//! where the attacker's instruction is placed.

pub mod agentdojo;
pub mod direct_injection;
pub mod indirect_injection;
pub mod no_injection;

use crate::attack::{Attack, Attempt, CallModel, PlannedCalls};
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
