//! `imported`: another tool's own verdict on an imported attempt, under the tool's name
//! for it (`garak:<detector>`, `promptfoo:<assertion>`, `inspect:<scorer>`).
//!
//! Success is the tool's hit (a garak detector at or above its threshold, a failed
//! promptfoo assertion, an Inspect score of at least 0.5). A verdict the tool's file
//! does not hold, or holds in a form that cannot be read, is an `Error` verdict, never a
//! hit; so is an attempt the tool recorded as an error. A verdict the tool never gave on
//! any prompt of this attempt's source (a garak detector of another probe) does not
//! apply (`NotApplicable`): the attempt is outside the judge's cell, neither judged nor
//! left undecided.

use crate::attack::{Attempt, CallModel};
use crate::judge::JudgeEntry;
use crate::judge::{Judge, JudgeFacts};
use crate::plugin::Entry;
use gauntlet_core::behavior::Behavior;
use gauntlet_core::outcome::{Outcome, Verdict};
use gauntlet_core::params::{Axis, DefaultValue, ParamKind, ParamSpec, PluginInfo, PluginSpec};
use gauntlet_models::{BoxFuture, ModelError};
use serde_json::Value;

pub const INFO: PluginInfo = PluginInfo {
    axis: Axis::Judge,
    name: "imported",
    doc: "another tool's own verdict, as its result file recorded it (imported runs only)",
    params: &[ParamSpec {
        name: "name",
        kind: ParamKind::Str,
        default: DefaultValue::Required,
        doc: "the tool's verdict: garak:<detector>, promptfoo:<assertion type>, inspect:<scorer>",
    }],
};

/// This judge's registration (listed in `ENTRIES` in `judges/mod.rs`).
pub const ENTRY: JudgeEntry = Entry {
    info: INFO,
    build: |s| Ok(Box::new(ImportedJudge::new(s.clone()))),
};

/// What this judge's verdicts say (which metrics apply to them).
pub const FACTS: JudgeFacts = JudgeFacts {
    decides_refusals: false,
    ..JudgeFacts::PLAIN
};

pub struct ImportedJudge {
    spec: PluginSpec,
    name: String,
}

impl ImportedJudge {
    pub fn new(spec: PluginSpec) -> Self {
        let name = spec.params.str("name").unwrap_or_default().to_string();
        ImportedJudge { spec, name }
    }

    /// The verdict (no model involved).
    pub fn judge(&self, attempt: &Attempt) -> Verdict {
        // A verdict the tool never gave on this attempt's source does not apply to it,
        // whether or not the tool recorded a reply.
        let applied = attempt.metadata.get("applied").and_then(Value::as_array);
        if applied.is_some_and(|a| !a.iter().any(|j| j.as_str() == Some(self.name.as_str()))) {
            let source = attempt
                .metadata
                .get("source")
                .and_then(Value::as_str)
                .unwrap_or("");
            return Verdict::not_applicable(
                &self.name,
                format!(
                    "the tool did not apply `{}` to the prompts of {source}",
                    self.name
                ),
            );
        }
        if let Err(e) = &attempt.response {
            return Verdict::error(&self.name, format!("the tool recorded no reply: {e}"));
        }
        let Some(v) = attempt
            .metadata
            .get("verdicts")
            .and_then(|m| m.get(&self.name))
        else {
            return Verdict::error(
                &self.name,
                format!(
                    "the tool recorded no `{}` verdict for this reply",
                    self.name
                ),
            );
        };
        if let Some(why) = v.get("error").and_then(Value::as_str) {
            return Verdict::error(&self.name, why.to_string());
        }
        let Some(hit) = v.get("hit").and_then(Value::as_bool) else {
            return Verdict::error(&self.name, "the stored tool verdict has no `hit`");
        };
        Verdict {
            judge: self.name.clone(),
            outcome: if hit {
                Outcome::Success
            } else {
                Outcome::Failure
            },
            refused: None,
            score: None,
            reason: v
                .get("reason")
                .and_then(Value::as_str)
                .unwrap_or_default()
                .to_string(),
            error: None,
            injection: None,
            on_topic: None,
            probability: None,
            categories: Vec::new(),
        }
    }
}

impl Judge for ImportedJudge {
    fn facts(&self) -> JudgeFacts {
        FACTS
    }
    fn spec(&self) -> &PluginSpec {
        &self.spec
    }
    fn measures(&self) -> &'static str {
        "the imported tool's own verdict: a hit (garak detector at or above its threshold, failed promptfoo assertion, Inspect score of at least 0.5)"
    }
    fn score<'a>(
        &'a self,
        _behavior: &'a Behavior,
        attempt: &'a Attempt,
        _grader: Option<&'a dyn CallModel>,
    ) -> BoxFuture<'a, Result<Verdict, ModelError>> {
        Box::pin(std::future::ready(Ok(self.judge(attempt))))
    }
}
