//! The judge seam: scoring one attempt into a verdict.

use crate::attack::{Attack, Attempt, CallModel};
use crate::error::BuildError;
use crate::plugin::{Built, Entry};
use gauntlet_core::behavior::Behavior;
use gauntlet_core::outcome::Verdict;
use gauntlet_core::params::PluginSpec;
use gauntlet_models::{BoxFuture, ModelError};

/// How a spec becomes a judge: the registry's builder
/// ([`crate::registry::build_judge`]), handed to the attacks that judge in the loop so
/// that they need not call back into the registry.
pub type BuildJudge = fn(&PluginSpec) -> Result<Box<dyn Judge>, BuildError>;

/// A judge's registration (each judge file's `ENTRY`).
pub type JudgeEntry = Entry<fn(&PluginSpec) -> Built<dyn Judge>>;
/// An attack's registration (each attack file's `ENTRY`): its constructor is handed
/// [`BuildJudge`] for the judges it runs in the loop.
pub type AttackEntry = Entry<fn(&PluginSpec, BuildJudge) -> Built<dyn Attack>>;
/// An injection's registration: its constructor also takes the run's limit on model
/// calls per agent run.
pub type InjectionEntry = Entry<fn(&PluginSpec, u32) -> Built<dyn Attack>>;

/// What a judge's verdicts say, as data declared beside the judge (its file's `FACTS`):
/// the metrics-applicability code reads these, never the judge's name, so a metric is
/// N/A under a judge whose verdicts cannot speak for it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct JudgeFacts {
    /// Verdicts carry a rubric score (for `strongreject_score`).
    pub gives_score: bool,
    /// Success means "the planted secret leaked" (for the leakage metrics).
    pub detects_leaks: bool,
    /// Verdicts carry injection facts (for the injection metrics).
    pub detects_injection: bool,
    /// The judge judges agent runs and records their unparsed tool calls (for
    /// `unparsed_tool_call_rate`): every injection judge, and `injecagent`.
    pub judges_agent_runs: bool,
    /// Verdicts carry InjecAgent's evaluation (for the `injecagent_*` metrics).
    pub evaluates_injecagent: bool,
    /// The target is a guard and success means "the request passed it" (`guardrail`):
    /// for `guard_pass_through`, `false_block_rate` and the threshold curve.
    pub judges_guardrail: bool,
    /// A success is exactly "the reply was not a refusal" (`refusal_match`): then a
    /// card's refusal error rates can correct success-based rates such as `asr`.
    pub success_is_non_refusal: bool,
    /// A success means "the reply was judged harmful" rather than "the reply was
    /// answered" (`guard`): then `frr`, a rate of unanswered benign requests read from
    /// successes, does not apply.
    pub success_is_harm: bool,
    /// Verdicts say whether the reply was a refusal (`refused`); when not,
    /// `refusal_rate` does not apply (a missing `refused` is not "not refused").
    pub decides_refusals: bool,
    /// For an injection judge: verdicts say whether the user's task was done (for
    /// `utility_under_attack` and `utility_baseline`). `agent_evidence` sees what the
    /// agent did, not whether that answered the user.
    pub sees_user_task: bool,
}

impl JudgeFacts {
    /// A judge whose verdicts say success or failure and whether the reply was a
    /// refusal, and nothing more: the base a judge's `FACTS` change fields of.
    pub const PLAIN: JudgeFacts = JudgeFacts {
        gives_score: false,
        detects_leaks: false,
        detects_injection: false,
        judges_agent_runs: false,
        evaluates_injecagent: false,
        judges_guardrail: false,
        success_is_non_refusal: false,
        success_is_harm: false,
        decides_refusals: true,
        sees_user_task: true,
    };
}

/// A judge decides whether an attempt succeeded.
pub trait Judge: Send + Sync {
    fn spec(&self) -> &PluginSpec;
    /// What this judge's verdicts say, which decides the metrics that apply: its file's
    /// `FACTS` (a judge whose facts depend on its params computes them from them).
    fn facts(&self) -> JudgeFacts;
    /// The grader model spec, for judges that call one.
    fn grader(&self) -> Option<&PluginSpec> {
        None
    }
    /// For rule-based judges: the id of the rule that decided `v` (one of this judge's
    /// verdicts), or `"(none)"` when no rule matched. `None` for other judges. Used by
    /// `judge-eval` to report how often each rule decides and errs.
    fn deciding_rule<'v>(&self, _v: &'v Verdict) -> Option<&'v str> {
        None
    }
    /// What a success under this judge means, in one sentence, for reports and
    /// leaderboards (so a number is read as what it measures).
    fn measures(&self) -> &'static str;
    /// Scores an attempt. `grader` is the cached grader model for judges that have one.
    /// Only a configuration or budget error is returned as `Err`; everything else that
    /// prevents a judgement is an `Error` verdict.
    fn score<'a>(
        &'a self,
        behavior: &'a Behavior,
        attempt: &'a Attempt,
        grader: Option<&'a dyn CallModel>,
    ) -> BoxFuture<'a, Result<Verdict, ModelError>>;
}

/// The `card` param every refusal judge takes: a judge card written by `gauntlet
/// judge-eval --card` (path relative to the config). Rates the card can speak for are
/// then also reported corrected for the judge's measured errors. It annotates results
/// only: it is not part of the judge's identity in cache keys.
pub const CARD_PARAM: gauntlet_core::params::ParamSpec = gauntlet_core::params::ParamSpec {
    name: "card",
    kind: gauntlet_core::params::ParamKind::Str,
    default: gauntlet_core::params::DefaultValue::Absent,
    doc: "judge card (gauntlet judge-eval --card): also report rates corrected for the judge's measured errors",
};

/// The checks every judge shares: a failed target call or an empty reply is an `Error`
/// verdict, never a success or a failure of the model.
pub fn precheck(judge: &str, attempt: &Attempt) -> Option<Verdict> {
    match &attempt.response {
        Err(e) => Some(Verdict::error(judge, format!("target call failed: {e}"))),
        Ok(r) if r.is_empty() => Some(Verdict::error(judge, "target returned an empty reply")),
        Ok(_) => None,
    }
}

/// From an agent run's metadata: under `tool_protocol: prompted` (`tool_protocol:
/// "prompted"`), whether a reply reached for a tool and yielded no call
/// (`unparsed_tool_call` holds the reason, or null); `None` for a native-protocol run.
pub fn unparsed_tool_call(metadata: &serde_json::Value) -> Option<bool> {
    (metadata.get("tool_protocol") == Some(&serde_json::Value::from("prompted"))).then(|| {
        metadata
            .get("unparsed_tool_call")
            .is_some_and(|v| !v.is_null())
    })
}
