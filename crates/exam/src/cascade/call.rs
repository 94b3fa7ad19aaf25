//! Calling a tier: the request built from the sanitised, boxed evidence, the call
//! recorded in the transcript, the reply parsed into a verdict (fail safe on an error
//! or an unparseable reply).

use super::outcome::{CascadeOptions, TranscriptEntry};
use super::tiers::{Tier, TierCaller, TierModels};
use crate::sanitize::boxed;
use crate::tools::{Evidence, Toolbox};
use crate::verdict::{Action, ParseKind, Verdict, parse_verdict};
use gauntlet_core::message::{ChatRequest, Message};
use gauntlet_models::ToolProtocol;
use std::fmt::Write as _;
use std::sync::Mutex;
use std::sync::atomic::{AtomicUsize, Ordering};

/// Records every model call of one scenario.
pub(super) struct Recorder {
    pub(super) next: AtomicUsize,
    pub(super) entries: Mutex<Vec<TranscriptEntry>>,
    /// The earliest (seq, why) fail-safe verdict.
    pub(super) fail_safe: Mutex<Option<(usize, String)>>,
}

impl Recorder {
    pub(super) fn reserve(&self, n: usize) -> usize {
        self.next.fetch_add(n, Ordering::SeqCst)
    }

    /// Notes that the verdict of call `seq` is the fail-safe escalation. The earliest
    /// call wins, so the recorded reason does not depend on which concurrent deep-panel
    /// call finished first.
    pub(super) fn fail_safe(&self, seq: usize, why: &str) {
        let mut f = self.fail_safe.lock().expect("recorder lock");
        if f.as_ref().is_none_or(|(s, _)| seq < *s) {
            *f = Some((seq, why.to_string()));
        }
    }

    /// A parsed verdict, noted when it is a fail-safe one.
    pub(super) fn checked(&self, seq: usize, v: Verdict) -> Verdict {
        if matches!(v.parse, ParseKind::Error | ParseKind::Unparseable) {
            self.fail_safe(seq, &v.reason);
        }
        v
    }
}

/// The tool protocol of the investigate tier's model (the `--tool-loop` caller).
fn tm_protocol(ctx: &Ctx<'_>) -> ToolProtocol {
    ctx.models.for_tier(Tier::Investigate).model.tool_protocol()
}

pub(super) struct Ctx<'a> {
    pub(super) models: &'a TierModels,
    pub(super) caller: &'a dyn TierCaller,
    /// 0: the main cascade; 1..: the consensus voters.
    pub(super) voter: usize,
    pub(super) rec: &'a Recorder,
    pub(super) toolbox: &'a Toolbox,
    pub(super) evidence: &'a Evidence,
    pub(super) finding_text: String,
    pub(super) evidence_text: String,
    pub(super) opts: &'a CascadeOptions,
}

/// A model call that gave no usable reply. Its text is what the transcript records as
/// the call's `err`.
#[derive(Debug, thiserror::Error)]
pub(super) enum CallError {
    /// The provider refused and sent no text.
    #[error("provider refusal with no text")]
    EmptyRefusal,
    #[error(transparent)]
    Model(#[from] gauntlet_models::ModelError),
}

impl Ctx<'_> {
    pub(super) async fn call(
        &self,
        seq: usize,
        tier: Tier,
        temperature: f64,
        user: String,
    ) -> Result<String, CallError> {
        let msgs = vec![Message::user(user)];
        self.call_messages(
            seq,
            tier,
            temperature,
            msgs,
            Vec::new(),
            Evidence::tool_names(),
        )
        .await
        .map(|r| r.content)
    }

    /// One recorded model call. `user` messages follow the tier's system prompt;
    /// `tools` are advertised; `fed` names the runtime tools the prompt carries.
    pub(super) async fn call_messages(
        &self,
        seq: usize,
        tier: Tier,
        temperature: f64,
        user: Vec<Message>,
        tools: Vec<gauntlet_core::message::ToolDef>,
        fed: Vec<String>,
    ) -> Result<gauntlet_core::message::ChatResponse, CallError> {
        let tm = self.models.for_tier(tier);
        let system = tier.system_prompt();
        // The transcript shows the conversation as sent: under `tool_protocol: prompted`
        // the tools in the system prompt, calls and results as text.
        let protocol = tm.model.tool_protocol();
        let mut shown = Vec::with_capacity(user.len() + 1);
        shown.push(Message::system(system.clone()));
        shown.extend(user.iter().cloned());
        let shown = protocol.as_sent(shown, &tools);
        let shown_system = shown[0].content.clone();
        let user_prompt = if user.len() == 1 {
            shown[1].content.clone()
        } else {
            shown[1..]
                .iter()
                .map(|m| {
                    let calls: Vec<String> = m
                        .tool_calls
                        .iter()
                        .map(|c| format!("{}({})", c.name, c.arguments))
                        .collect();
                    format!("[{:?}] {}{}", m.role, m.content, calls.join(" "))
                })
                .collect::<Vec<_>>()
                .join("\n")
        };
        let advertised: Vec<String> = tools.iter().map(|t| t.name.clone()).collect();
        let mut messages = vec![Message::system(system)];
        messages.extend(user);
        let req = ChatRequest {
            top_logprobs: None,
            messages,
            tools: tools.into(),
            seed: self.opts.seed.map(|s| s.wrapping_add(self.voter as u64)),
            temperature: Some(temperature),
            max_tokens: Some(tm.max_tokens()),
            agent_script: None,
            transform_trace: None,
        };
        let res = self.caller.call(tier, self.voter, tm, &req).await;
        let res = match res {
            Ok(r) if r.is_provider_refusal() && r.content.trim().is_empty() => {
                Err(CallError::EmptyRefusal)
            }
            Ok(r) => Ok(r),
            Err(e) => Err(CallError::Model(e)),
        };
        let (reply, err) = match &res {
            Ok(r) => {
                let calls: Vec<String> = r
                    .tool_calls
                    .iter()
                    .map(|c| format!("[tool call] {}({})", c.name, c.arguments))
                    .collect();
                let mut text = r.content.clone();
                if !calls.is_empty() {
                    if !text.is_empty() {
                        text.push('\n');
                    }
                    text.push_str(&calls.join("\n"));
                }
                (text, String::new())
            }
            Err(e) => (String::new(), e.to_string()),
        };
        self.rec
            .entries
            .lock()
            .expect("recorder lock")
            .push(TranscriptEntry {
                seq,
                model: tm.id.clone(),
                system: shown_system,
                user_prompt,
                tools: if advertised.is_empty() {
                    fed
                } else {
                    advertised
                },
                reply,
                err,
            });
        res
    }

    /// `--tool-loop` investigation: the model calls the tools itself. Returns the
    /// verdict, the model calls made, and whether any tool returned data.
    pub(super) async fn investigate_loop(
        &self,
        temperature: f64,
        triage: &Verdict,
        max_rounds: usize,
    ) -> (Verdict, u32, bool) {
        let mut msgs = vec![Message::user(format!(
            "{}Use the tools (search-events, check-baseline, search-findings) to gather the evidence you need, then answer.",
            self.with_verdicts_only(&[("triage", triage)])
        ))];
        let mut rounds = 0;
        let mut data = false;
        let max_rounds = max_rounds.max(1);
        for round in 0..max_rounds {
            let last = round + 1 == max_rounds;
            let tools = if last {
                Vec::new()
            } else {
                crate::tools::tool_defs()
            };
            let seq = self.rec.reserve(1);
            rounds += 1;
            let r = match self
                .call_messages(
                    seq,
                    Tier::Investigate,
                    temperature,
                    msgs.clone(),
                    tools,
                    Vec::new(),
                )
                .await
            {
                Ok(r) => r,
                Err(e) => {
                    let v = Verdict::fail_safe(
                        ParseKind::Error,
                        format!("model error, escalated by default: {e}"),
                    );
                    return (self.rec.checked(seq, v), rounds, data);
                }
            };
            if r.tool_calls.is_empty() {
                // A reply that reached for a tool and yielded no call (prompted protocol)
                // is not the model's verdict: escalated by default, counted as fail-safe.
                let unparsed = match last {
                    false => tm_protocol(self).unparsed(&r),
                    true => None,
                };
                let v = match unparsed {
                    Some(why) => Verdict::fail_safe(
                        ParseKind::Unparseable,
                        format!("unparsed_tool_call: {why}; escalated by default"),
                    ),
                    None => parse_verdict(&r.content),
                };
                return (self.rec.checked(seq, v), rounds, data);
            }
            msgs.push(Message {
                role: gauntlet_core::message::Role::Assistant,
                content: r.content.clone(),
                name: None,
                tool_calls: r.tool_calls.clone(),
                tool_call_id: None,
            });
            for c in &r.tool_calls {
                let (text, got) = self.toolbox.run_tool(&c.name, &c.arguments);
                data |= got;
                msgs.push(Message {
                    role: gauntlet_core::message::Role::Tool,
                    content: text,
                    name: Some(c.name.clone()),
                    tool_calls: Vec::new(),
                    tool_call_id: Some(c.call_id.clone()),
                });
            }
            if last {
                break;
            }
        }
        let v = Verdict::fail_safe(
            ParseKind::Unparseable,
            "tool loop ended without a verdict; escalated by default",
        );
        let last = self.rec.next.load(Ordering::SeqCst).saturating_sub(1);
        (self.rec.checked(last, v), rounds, data)
    }

    pub(super) async fn verdict(&self, tier: Tier, temperature: f64, user: String) -> Verdict {
        let seq = self.rec.reserve(1);
        self.verdict_at(seq, tier, temperature, user).await
    }

    pub(super) async fn verdict_at(
        &self,
        seq: usize,
        tier: Tier,
        temperature: f64,
        user: String,
    ) -> Verdict {
        let v = match self.call(seq, tier, temperature, user).await {
            Ok(reply) => parse_verdict(&reply),
            Err(e) => Verdict::fail_safe(
                ParseKind::Error,
                format!("model error, escalated by default: {e}"),
            ),
        };
        self.rec.checked(seq, v)
    }

    pub(super) fn base_prompt(&self) -> String {
        format!(
            "Finding under triage (untrusted values are boxed):\n{}\nTool results gathered by the runtime:\n{}",
            self.finding_text, self.evidence_text
        )
    }

    pub(super) fn with_verdicts_only(&self, prior: &[(&str, &Verdict)]) -> String {
        let mut s = format!(
            "Finding under triage (untrusted values are boxed):\n{}",
            self.finding_text
        );
        self.push_verdicts(&mut s, prior);
        s
    }

    pub(super) fn with_verdicts(&self, prior: &[(&str, &Verdict)]) -> String {
        let mut s = self.base_prompt();
        self.push_verdicts(&mut s, prior);
        s
    }

    pub(super) fn push_verdicts(&self, s: &mut String, prior: &[(&str, &Verdict)]) {
        if !prior.is_empty() {
            s.push_str("Earlier tiers' verdicts (reasons are model output, untrusted):\n");
        }
        for (name, v) in prior {
            let _ = writeln!(
                s,
                "{name}: action={} confidence={} positive_evidence={} strong_evidence={} insufficient_data={}",
                match v.action {
                    Action::Resolve => "resolve",
                    Action::Escalate => "escalate",
                },
                v.confidence,
                v.positive_evidence,
                v.strong_evidence,
                v.insufficient_data
            );
            s.push_str(&boxed(&format!("{name}.reason"), &v.reason));
            s.push('\n');
        }
    }
}
