//! `imported`: the model of a run another harness made (`gauntlet import agentdojo`).
//!
//! It stands for the model whose replies are already in the imported logs: it carries a
//! label (the `name` param, e.g. AgentDojo's pipeline name) and refuses every call, so an
//! imported run can never reach a model, and a rerun of it makes no call.

use crate::{BoxFuture, Model, ModelError};
use gauntlet_core::message::{ChatRequest, ChatResponse};
use gauntlet_core::params::{Axis, DefaultValue, ParamKind, ParamSpec, PluginInfo, PluginSpec};

pub const INFO: PluginInfo = PluginInfo {
    axis: Axis::Target,
    name: "imported",
    doc: "the model of results imported from another harness (never called)",
    params: &[ParamSpec {
        name: "name",
        kind: ParamKind::Str,
        default: DefaultValue::Required,
        doc: "the label of the imported model (AgentDojo: its pipeline's model)",
    }],
};

pub struct Imported(PluginSpec);

impl Imported {
    pub fn new(spec: PluginSpec) -> Self {
        Imported(spec)
    }
}

impl Model for Imported {
    fn spec(&self) -> &PluginSpec {
        &self.0
    }
    fn offline(&self) -> bool {
        true
    }
    fn chat<'a>(
        &'a self,
        _req: &'a ChatRequest,
    ) -> BoxFuture<'a, Result<ChatResponse, ModelError>> {
        Box::pin(std::future::ready(Err(ModelError::Config(format!(
            "`{}` is an imported model: its replies come from the imported logs and it is never called",
            self.0.label()
        )))))
    }
}
