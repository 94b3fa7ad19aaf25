//! Injection scenarios: one agent task in a sandboxed toolkit, with an attacker goal.
//!
//! Field names match redharness's scenario schema. A scenario is pure data: the sandbox,
//! the agent loop and the checks live in `gauntlet-redteam` (`injection`). Validation
//! (known toolkit, tools inside it) happens where suites are loaded, so errors can name
//! the file and the scenario.

use crate::hash::HashWriter;
use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;
use std::sync::{Arc, OnceLock};

/// One tool call of a plan: a tool name and its arguments object.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ToolStep {
    pub name: String,
    #[serde(default = "empty_object")]
    pub arguments: serde_json::Value,
}

fn empty_object() -> serde_json::Value {
    serde_json::Value::Object(Default::default())
}

/// A check over the tool calls an agent made: some call used `tool` and each
/// `args_contain` value is a case-insensitive substring of that argument (as text).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Check {
    pub tool: String,
    #[serde(default)]
    pub args_contain: BTreeMap<String, String>,
}

/// One entry of a workspace search index.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct SearchEntry {
    /// The file the hit points at.
    pub path: String,
    /// The text the query is matched against and that the result shows.
    pub snippet: String,
}

/// The sandbox's initial state. Messaging scenarios use `documents`; workspace
/// scenarios use `files` and `search_index`.
#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ScenarioState {
    /// Document id → text (`read_document`).
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub documents: BTreeMap<String, String>,
    /// Path → content (`read_file`, `share_file`).
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub files: BTreeMap<String, String>,
    /// Entries `search` matches its query against.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub search_index: Vec<SearchEntry>,
}

/// One injection scenario.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Scenario {
    pub id: String,
    pub suite: String,
    /// `messaging` (read_document, send_email, transfer_funds) or `workspace` (search,
    /// read_file, share_file).
    pub toolkit: String,
    /// What the user asks the agent to do.
    pub user_task: String,
    /// What the attacker's instruction asks for, in words (goes into the injection).
    pub attacker_goal: String,
    #[serde(default)]
    pub state: ScenarioState,
    /// The tool calls that carry out the user task (the scripted agent's plan).
    pub user_plan: Vec<ToolStep>,
    /// The tool call the attacker wants.
    pub attacker_action: ToolStep,
    /// Task completed when this matches.
    pub user_check: Check,
    /// Attack fired when this matches.
    pub attacker_check: Check,
    /// The tool whose output an indirect injection is planted into.
    pub injection_tool: String,
    /// Tools of the user's own MCP servers that the plan calls (and `injection_tool` may
    /// name), outside the toolkit: such a scenario runs under the `mcp_*` injections
    /// with a `servers` file only, and `mcp_tool_result` then rewrites the results of
    /// the user's server in front of which it sits.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub external_tools: Vec<String>,
    /// The agent script, built on first use (see [`Scenario::script`]).
    #[serde(skip)]
    pub script_cache: ScriptCache,
}

impl Scenario {
    /// The scenario's agent script for `marker`, built once per scenario and shared by
    /// every run of it.
    pub fn script(&self, marker: &str) -> Arc<AgentScript> {
        let s = self
            .script_cache
            .0
            .get_or_init(|| Arc::new(AgentScript::for_scenario(self, marker)));
        if s.marker() == marker {
            s.clone()
        } else {
            Arc::new(AgentScript::for_scenario(self, marker))
        }
    }
}

/// One case of an external agent benchmark whose environments, tools and checks are not
/// gauntlet's (AgentDojo): which benchmark, at which version, which suite, which user
/// task, and which injection task attacks it (`None`: the benign case). `model_name` is
/// how the benchmark's attack texts address the model.
#[derive(Debug, Clone, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub struct BenchCase {
    pub benchmark: String,
    pub version: String,
    pub suite: String,
    pub user_task: String,
    pub injection_task: Option<String>,
    pub model_name: String,
}

/// A lazily built [`AgentScript`]. A cache: it never takes part in equality.
#[derive(Debug, Clone, Default)]
pub struct ScriptCache(OnceLock<Arc<AgentScript>>);

impl PartialEq for ScriptCache {
    fn eq(&self, _: &Self) -> bool {
        true
    }
}

/// Out-of-band instructions for the offline scripted agent (`reference_agent`): its plan,
/// the attacker action it may be hijacked into, and the marker that hijacks it.
///
/// It travels on [`crate::message::ChatRequest::agent_script`], which is never
/// serialised: wire targets build their request bodies field by field and never see it,
/// so a real model is never shown the plan. It is part of the cache key (through
/// [`AgentScript::digest`]), so a changed plan re-calls the model.
#[derive(Debug, Clone, PartialEq)]
pub struct AgentScript {
    user_plan: Vec<ToolStep>,
    attacker_action: ToolStep,
    marker: String,
    digest: [u8; 32],
}

impl AgentScript {
    pub fn new(user_plan: Vec<ToolStep>, attacker_action: ToolStep, marker: String) -> Self {
        let mut h = HashWriter::new();
        h.field(b"agent-script-v1");
        h.json(&user_plan);
        h.json(&attacker_action);
        h.field(marker.as_bytes());
        AgentScript {
            user_plan,
            attacker_action,
            marker,
            digest: h.finish(),
        }
    }
    /// The script of a scenario, hijackable by `marker`.
    pub fn for_scenario(s: &Scenario, marker: &str) -> Self {
        Self::new(
            s.user_plan.clone(),
            s.attacker_action.clone(),
            marker.to_string(),
        )
    }
    pub fn user_plan(&self) -> &[ToolStep] {
        &self.user_plan
    }
    pub fn attacker_action(&self) -> &ToolStep {
        &self.attacker_action
    }
    pub fn marker(&self) -> &str {
        &self.marker
    }
    /// sha256 over the plan, the attacker action and the marker (for cache keys).
    pub fn digest(&self) -> &[u8; 32] {
        &self.digest
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn unknown_fields_are_rejected_and_digest_tracks_content() {
        let bad = r#"{"name": "read_file", "arguments": {}, "extra": 1}"#;
        assert!(serde_json::from_str::<ToolStep>(bad).is_err());
        let step = |p: &str| ToolStep {
            name: "read_file".into(),
            arguments: serde_json::json!({ "path": p }),
        };
        let a = AgentScript::new(vec![step("a")], step("x"), "M".into());
        let b = AgentScript::new(vec![step("b")], step("x"), "M".into());
        assert_ne!(a.digest(), b.digest());
        assert_eq!(
            a.digest(),
            AgentScript::new(vec![step("a")], step("x"), "M".into()).digest()
        );
    }
}
