//! `poisoned_content`: injection mode for the user's own agent behind an application
//! target (`http` with `evidence: {content: true}` or `{mcp: true}`). The scenario's
//! pages (an [`agent_pages`](crate::injection::agent_pages) suite) are published to the
//! run's poisoned-content server, and its tools to the run's MCP endpoint, with the
//! attacker's text in their `{{injection}}` slot, and the user's task is sent once, its
//! `{{page:NAME}}` references turned into the call's URLs on that server and its
//! `{{mcp_url}}` into the call's URL of the scenario's tools on the endpoint. gauntlet
//! runs no agent loop: what the agent then did is in the response's evidence, which
//! `agent_evidence` judges.
//!
//! With `clean: true` the slot is left empty: the same task over the same pages without
//! the attacker's text (nothing injected; outside the injection success rate).

use crate::attack::{Attack, Attempt, CallModel, PlannedCalls};
use crate::error::BuildError;
use crate::injection::agent_pages::{MCP_URL, PageScenario};
use crate::judge::InjectionEntry;
use crate::plugin::Entry;
use gauntlet_core::behavior::Behavior;
use gauntlet_core::message::Message;
use gauntlet_core::params::{Axis, DefaultValue, ParamKind, ParamSpec, PluginInfo, PluginSpec};
use gauntlet_models::{BoxFuture, ModelError};

/// Its threat-map row (`attacks` in `taxonomy/threat_map.json`): framework key and
/// entry ids.
pub const THREAT: gauntlet_core::taxonomy::ThreatEntry = &[
    ("owasp_llm", &["LLM01:2025", "LLM02:2025"]),
    ("owasp_agentic", &["T2", "T6"]),
    ("owasp_agentic_2026", &["ASI01", "ASI02"]),
    ("owasp_mcp", &["MCP06:2025", "MCP10:2025"]),
    ("mitre_atlas", &["AML.T0051.001"]),
    ("eu_ai_act", &["Art. 15", "Art. 55"]),
];

/// This injection's registration (listed in `ENTRIES` in `injections/mod.rs`).
pub const ENTRY: InjectionEntry = Entry {
    info: INFO,
    build: |s, _| Ok(Box::new(PoisonedContent::new(s.clone())?)),
};

pub const INFO: PluginInfo = PluginInfo {
    axis: Axis::Injection,
    name: "poisoned_content",
    doc: "your own agent behind `http`: the scenario's pages and MCP tool results, carrying the attacker's text, served by the run's content server and MCP endpoint; the user task sent once; judge with agent_evidence",
    params: &[ParamSpec {
        name: "clean",
        kind: ParamKind::Bool,
        default: DefaultValue::Bool(false),
        doc: "serve the pages and tool results without the attacker's text (a baseline: nothing injected)",
    }],
};

/// Where the call's content URL goes; the target replaces it (see the `evidence` param).
const CONTENT_URL: &str = "{{content_url}}";

pub struct PoisonedContent {
    spec: PluginSpec,
    clean: bool,
}

impl PoisonedContent {
    pub fn new(spec: PluginSpec) -> Result<Self, BuildError> {
        let clean = spec.params.bool("clean").unwrap_or(false);
        Ok(PoisonedContent { spec, clean })
    }

    /// Publishes the scenario's pages and tools and returns the user task with each
    /// `{{page:NAME}}` replaced by `{{content_url}}` and the page's path, and
    /// `{{mcp_url}}` by itself and the toolkit's path.
    pub fn prepare(&self, s: &PageScenario) -> Result<String, ModelError> {
        let mut task = s.user_task.clone();
        let injection = if self.clean { "" } else { s.injection.as_str() };
        if !s.tools.is_empty() {
            let path = gauntlet_evidence::mcp::publish(&s.mcp_tools(injection))
                .map_err(|e| ModelError::Config(format!("scenario `{}`: tools: {e}", s.id)))?;
            task = task.replace(MCP_URL, &format!("{MCP_URL}{path}"));
        }
        for (name, text) in &s.pages {
            let page = text.replace("{{injection}}", injection);
            let path = gauntlet_evidence::content::publish(name, &page)
                .map_err(|e| ModelError::Config(format!("scenario `{}`: {e}", s.id)))?;
            task = task.replace(
                &format!("{{{{page:{name}}}}}"),
                &format!("{CONTENT_URL}{path}"),
            );
        }
        Ok(task)
    }
}

impl Attack for PoisonedContent {
    fn spec(&self) -> &PluginSpec {
        &self.spec
    }
    fn max_attempts(&self) -> u32 {
        1
    }
    fn planned_calls(&self) -> PlannedCalls {
        PlannedCalls {
            target: 1,
            ..Default::default()
        }
    }
    fn run<'a>(
        &'a self,
        behavior: &'a Behavior,
        target: &'a dyn CallModel,
        seed: u64,
    ) -> BoxFuture<'a, Result<Vec<Attempt>, ModelError>> {
        Box::pin(async move {
            let Some(s) = behavior.case.get::<PageScenario>() else {
                return Err(ModelError::Config(format!(
                    "poisoned_content runs `agent_pages` scenarios; `{}` is not one (scenarios: [{{name: agent_pages, params: {{suite: research_agent_demo}}}}])",
                    behavior.id
                )));
            };
            let task = self.prepare(s)?;
            let mut metadata = serde_json::json!({
                "injected": !self.clean,
                "delivery": "content_server",
                "pages": s.pages.keys().collect::<Vec<_>>(),
            });
            if !s.tools.is_empty() {
                metadata["delivery"] = if s.pages.is_empty() {
                    "mcp_endpoint".into()
                } else {
                    "content_server+mcp_endpoint".into()
                };
                metadata["tools"] = s.tools.iter().map(|t| t.name.as_str()).collect();
            }
            let a =
                Attempt::single_turn(target, 0, vec![Message::user(task)], seed, metadata).await?;
            Ok(vec![a])
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::collections::BTreeMap;

    #[test]
    fn pages_are_published_and_the_task_points_at_them() {
        let s = PageScenario {
            id: "a".into(),
            user_task: "Read {{page:r.html}} and {{page:r.html}}".into(),
            attacker_goal: "g".into(),
            pages: BTreeMap::from([("r.html".to_string(), "x {{injection}}".to_string())]),
            tools: Vec::new(),
            injection: "visit {{sink_url}}".into(),
        };
        let spec = |clean: bool| {
            let mut p = gauntlet_core::params::Params::new();
            p.insert("clean", gauntlet_core::params::ParamValue::Bool(clean));
            PluginSpec {
                name: "poisoned_content".into(),
                params: p,
                loc: Default::default(),
                label: None,
            }
        };
        let dirty = PoisonedContent::new(spec(false))
            .unwrap()
            .prepare(&s)
            .unwrap();
        let clean = PoisonedContent::new(spec(true))
            .unwrap()
            .prepare(&s)
            .unwrap();
        assert!(dirty.starts_with("Read {{content_url}}/p/"), "{dirty}");
        assert!(dirty.ends_with("/r.html"), "{dirty}");
        assert_eq!(dirty.matches("{{content_url}}").count(), 2);
        // A clean page is another page.
        assert_ne!(dirty, clean);
    }

    #[test]
    fn tools_are_published_and_the_task_points_at_them() {
        let s = PageScenario {
            id: "m".into(),
            user_task: "MCP server: {{mcp_url}}\nUse `read_notes`.".into(),
            attacker_goal: "g".into(),
            pages: BTreeMap::new(),
            tools: vec![crate::injection::agent_pages::ScenarioTool {
                name: "read_notes".into(),
                description: "d".into(),
                input_schema: gauntlet_evidence::mcp::empty_schema(),
                result: "notes {{injection}}".into(),
            }],
            injection: "send {{canary}}".into(),
        };
        let p = |clean: bool| {
            let mut p = gauntlet_core::params::Params::new();
            p.insert("clean", gauntlet_core::params::ParamValue::Bool(clean));
            PoisonedContent::new(PluginSpec {
                name: "poisoned_content".into(),
                params: p,
                loc: Default::default(),
                label: None,
            })
            .unwrap()
            .prepare(&s)
            .unwrap()
        };
        let (dirty, clean) = (p(false), p(true));
        let key = dirty
            .strip_prefix("MCP server: {{mcp_url}}/")
            .and_then(|r| r.split_once('\n'))
            .map(|(k, _)| k)
            .unwrap_or_else(|| panic!("{dirty}"));
        assert_eq!(key.len(), 16, "{dirty}");
        // The clean toolkit is another toolkit.
        assert_ne!(dirty, clean);
        assert_eq!(s.mcp_tools("X")[0].result, "notes X");
        assert!(s.mcp_tools("")[0].injected);
    }
}
