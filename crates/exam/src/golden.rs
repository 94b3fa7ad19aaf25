//! The golden backend: a merge gate for the harness, NOT an accuracy number.
//!
//! Why this exists: with replies scripted from each scenario's own expected outcome,
//! every scenario must pass; a failure means the loader, the cascade wiring, the verdict
//! parser or the grader is broken, with zero model noise and no network or keys. The
//! replies are a pure function of (script, tier), the tier recognised by the first line
//! of the system prompt, so they are deterministic under any concurrency.
//!
//! - expected `resolved`: every verdict tier resolves with confidence 5, positive and
//!   strong evidence (so consensus voters agree), its reason citing every must-mention;
//! - expected `escalated` / `escalate-or-stronger` (or no expectation): every verdict
//!   tier escalates with confidence 5, and the formatter writes an alert citing every
//!   must-mention string.
//!
//! Two ways to use it: [`GoldenModel`] in-process (one per scenario), and
//! [`GoldenServer`](crate::golden_http::GoldenServer) on loopback, speaking the Anthropic
//! messages API so the live `anthropic` target's wire path is exercised; scenario `i` is
//! served under `/s/<i>/`.
//!
//! A test-only fault switch ([`GoldenScript::wrong`]) makes one scenario's script
//! answer the opposite decision.

use crate::cascade::Tier;
use gauntlet_core::message::{ChatRequest, ChatResponse, Role, StopReason, ToolCall};
use gauntlet_core::params::{ParamValue, Params, PluginSpec};
use gauntlet_corpus::scenario::Scenario;
use gauntlet_models::{BoxFuture, Model, ModelError};
use serde_json::json;

/// What the golden backend answers for one scenario.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct GoldenScript {
    /// The scripted decision is escalate.
    pub escalate: bool,
    /// Strings every reason cites (the scenario's must-mentions).
    pub mentions: Vec<String>,
    /// Test-only fault switch: answer the opposite decision.
    pub wrong: bool,
}

impl GoldenScript {
    /// The script for a scenario, from its ground truth (which only the golden
    /// backend, never a model under test, reads).
    pub fn for_scenario(s: &Scenario) -> GoldenScript {
        let expected = s.ground_truth.expected.as_ref();
        let action = expected.map(|e| e.chain_action.trim().to_ascii_lowercase());
        GoldenScript {
            escalate: action.as_deref() != Some("resolved"),
            mentions: expected
                .map(|e| e.reasoning_must_mention.clone())
                .unwrap_or_default(),
            wrong: false,
        }
    }

    fn decides_escalate(&self) -> bool {
        self.escalate != self.wrong
    }

    /// The reply to a request whose system prompt is `system`.
    pub fn reply(&self, system: &str) -> String {
        let cites = if self.mentions.is_empty() {
            String::new()
        } else {
            format!(" Cites: {}.", self.mentions.join("; "))
        };
        let esc = self.decides_escalate();
        match Tier::from_system(system) {
            Some(Tier::Formatter) => {
                format!("ALERT (golden script): this finding needs an analyst; escalated.{cites}")
            }
            Some(_) => {
                let (action, reason) = if esc {
                    ("escalate", format!("golden script: escalate.{cites}"))
                } else {
                    (
                        "resolve",
                        format!("golden script: routine activity, resolve.{cites}"),
                    )
                };
                json!({
                    "action": action,
                    "confidence": 5,
                    "positive_evidence": !esc,
                    "strong_evidence": true,
                    "insufficient_data": false,
                    "reason": reason,
                })
                .to_string()
            }
            None => "golden backend: unrecognised tier header".to_string(),
        }
    }
}

fn golden_spec() -> PluginSpec {
    let mut params = Params::new();
    params.insert("name", ParamValue::Str("golden".into()));
    PluginSpec {
        name: "golden".into(),
        params,
        loc: Default::default(),
        label: None,
    }
}

fn system_of(req: &ChatRequest) -> String {
    req.messages
        .iter()
        .filter(|m| m.role == Role::System)
        .map(|m| m.content.as_str())
        .collect::<Vec<_>>()
        .join("\n")
}

/// The tools a golden reply calls first in a tool loop.
pub const GOLDEN_TOOL_CALLS: &[&str] = &[crate::tools::CHECK_BASELINE, crate::tools::SEARCH_EVENTS];

/// The golden backend in-process: one per scenario.
pub struct GoldenModel {
    spec: PluginSpec,
    script: GoldenScript,
}

impl GoldenModel {
    pub fn new(script: GoldenScript) -> GoldenModel {
        GoldenModel {
            spec: golden_spec(),
            script,
        }
    }
}

impl Model for GoldenModel {
    fn spec(&self) -> &PluginSpec {
        &self.spec
    }
    fn offline(&self) -> bool {
        true
    }
    fn chat<'a>(&'a self, req: &'a ChatRequest) -> BoxFuture<'a, Result<ChatResponse, ModelError>> {
        let res = if !req.tools.is_empty() && !req.messages.iter().any(|m| m.role == Role::Tool) {
            // Tool loop: first gather evidence, then answer.
            ChatResponse {
                first_token_logprobs: None,
                evidence: None,
                content: String::new(),
                stop_reason: StopReason::ToolCalls,
                tool_calls: GOLDEN_TOOL_CALLS
                    .iter()
                    .enumerate()
                    .map(|(i, n)| ToolCall {
                        name: n.to_string(),
                        arguments: json!({}),
                        call_id: format!("golden_call_{i}"),
                    })
                    .collect(),
                usage: None,
            }
        } else {
            ChatResponse::text(self.script.reply(&system_of(req)))
        };
        Box::pin(async move { Ok(res) })
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::verdict::{Action, parse_verdict};

    #[test]
    fn scripts_answer_per_tier() {
        let s = GoldenScript {
            escalate: false,
            mentions: vec!["owner".into(), "vendor".into()],
            wrong: false,
        };
        let v = parse_verdict(&s.reply(&Tier::Triage.system_prompt()));
        assert_eq!(v.action, Action::Resolve);
        assert_eq!(v.confidence, 5);
        assert!(v.positive_evidence && v.strong_evidence);
        assert!(v.reason.contains("owner; vendor"));
        let wrong = GoldenScript {
            wrong: true,
            ..s.clone()
        };
        assert_eq!(
            parse_verdict(&wrong.reply(&Tier::Investigate.system_prompt())).action,
            Action::Escalate
        );
        let esc = GoldenScript {
            escalate: true,
            ..s
        };
        let alert = esc.reply(&Tier::Formatter.system_prompt());
        assert!(
            alert.contains("owner") && alert.contains("vendor"),
            "{alert}"
        );
        assert_eq!(
            parse_verdict(&esc.reply("no header")).action,
            Action::Escalate
        );
    }
}
