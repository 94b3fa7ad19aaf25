//! One AgentDojo case run as an agent episode: the sidecar sets the environment up
//! (attack texts placed, defence applied), gauntlet's loop talks to the model, every
//! tool call runs in the sidecar, and the sidecar's checks score the final state.
//!
//! The pipeline replayed is AgentDojo's `AgentPipeline.from_config` for an OpenAI-style
//! model: `[system message, user prompt, model, loop(tools, model) ≤ 15 rounds]`, with
//! - `tool_filter`: before the first call, the model is asked which tools the task needs
//!   (the prompt AgentDojo appends as a user turn, its reply kept in the conversation, as
//!   AgentDojo does); only the tools named in the reply stay. gauntlet sends this call
//!   with the tools but without `tool_choice: "none"` (the model layer has no such field).
//! - `repeat_user_prompt`: the user prompt again after every round of tool results.
//! - `spotlighting_with_delimiting`: the system message's suffix and the `<<…>>` around
//!   tool results come from the sidecar.
//!
//! Differences from AgentDojo's harness, all where AgentDojo itself would stop or crash:
//! a call whose arguments are not a JSON object is an episode error (AgentDojo raises in
//! its OpenAI client); a final reply with no text is scored as empty text (AgentDojo
//! re-queries the whole pipeline up to three times on the same environment).

use super::delivery::Placed;
use super::error::EpisodeError;
use super::sidecar::{Bound, Sidecar, SidecarError};
use crate::attack::{Attempt, AttemptError, CallModel};
use crate::injection::agent_loop::run_loop;
use crate::injection::env::{EnvError, ToolEnv};
use gauntlet_core::message::{ChatRequest, ChatResponse, Message, ToolCall, ToolDef};
use gauntlet_core::scenario::BenchCase;
use gauntlet_models::{BoxFuture, ModelError, ToolProtocol};
use serde_json::{Value, json};
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};

/// Episode ids, unique in the process.
static EPISODES: AtomicU64 = AtomicU64::new(1);

/// The episode's side of the seam: tool calls go to the sidecar.
pub struct Episode<'s> {
    sidecar: &'s Sidecar,
    bound: Bound,
    id: u64,
    tools: Arc<[ToolDef]>,
    /// `repeat_user_prompt`: the prompt added after every round.
    repeat: Option<String>,
    /// The texts the attack placed in the environment.
    placed: Placed,
    /// A tool result the agent received carried one of them.
    delivered: bool,
}

impl ToolEnv for Episode<'_> {
    fn tools(&self) -> Arc<[ToolDef]> {
        self.tools.clone()
    }
    fn call<'a>(&'a mut self, c: &'a ToolCall) -> BoxFuture<'a, Result<String, EnvError>> {
        Box::pin(async move {
            let req = json!({
                "op": "call", "episode": self.id, "name": c.name,
                "arguments": c.arguments, "call_id": c.call_id,
            });
            let r = self
                .sidecar
                .request_in(&self.bound, req)
                .await
                .map_err(EnvError::Sidecar)?;
            match r["content"].as_str() {
                Some(s) => {
                    if !self.delivered && self.placed.carried_by(s) {
                        self.delivered = true;
                    }
                    Ok(s.to_string())
                }
                None => Err(EnvError::NoContent),
            }
        })
    }
    fn after_tools(&mut self) -> Vec<Message> {
        self.repeat
            .iter()
            .map(|p| Message::user(p.clone()))
            .collect()
    }
}

fn tool_defs(v: &Value) -> Result<Arc<[ToolDef]>, EpisodeError> {
    let tools: Vec<ToolDef> =
        serde_json::from_value(v.clone()).map_err(|e| EpisodeError::Tools(Arc::new(e)))?;
    Ok(Arc::from(tools))
}

/// What an episode produced, before it becomes an [`Attempt`].
struct Ran {
    transcript: Vec<Message>,
    response: Result<ChatResponse, AttemptError>,
    steps: u32,
    max_steps_hit: bool,
    injections: Value,
    /// A tool result the agent received carried an injection.
    delivered: bool,
    verdict: Option<(bool, Option<bool>)>,
    /// Why the last reply reached for a tool and yielded no call (prompted protocol).
    unparsed_tool_call: Option<String>,
}

/// Runs one case under `attack` (`None`: no attack) and `defense`, as one attempt with
/// its metadata: `suite, user_task, injection_task, attack, defense, utility, security`
/// (AgentDojo's verdicts; `null` when the episode errored, `security` null for a benign
/// case), `injected`, `injections` (vector → text placed), `delivered` (an attacked case:
/// a tool result the agent received carried one of those texts, [`super::delivery`];
/// null for a benign case), `steps`, `max_steps_hit`,
/// `no_tool_calls` (the model called no tool in the whole episode);
/// under the target's `tool_protocol: prompted` also `tool_protocol` and
/// `unparsed_tool_call` (the reason the final reply's call could not be read, or null).
pub async fn attempt(
    sidecar: &Sidecar,
    case: &BenchCase,
    attack: Option<&str>,
    defense: Option<&str>,
    target: &dyn CallModel,
) -> Result<Attempt, ModelError> {
    let ran = run(sidecar, case, attack, defense, target).await?;
    let (utility, security) = match ran.verdict {
        Some((u, s)) => (Value::Bool(u), s.map_or(Value::Null, Value::Bool)),
        None => (Value::Null, Value::Null),
    };
    let mut metadata = json!({
        "suite": case.suite,
        "user_task": case.user_task,
        "injection_task": case.injection_task,
        "attack": attack.unwrap_or("none"),
        "defense": defense.unwrap_or("none"),
        "utility": utility,
        "security": security,
        "injected": case.injection_task.is_some(),
        "delivered": case.injection_task.is_some().then_some(ran.delivered),
        "injections": ran.injections,
        "steps": ran.steps,
        "max_steps_hit": ran.max_steps_hit,
        // The agent never called a tool (its injections, placed in tool outputs, were
        // never read): the `no_tool_calls` warning counts it.
        "no_tool_calls": ran.transcript.iter().all(|m| m.tool_calls.is_empty())
            && ran.response.as_ref().map_or(true, |r| r.tool_calls.is_empty()),
    });
    if target.tool_protocol() == ToolProtocol::Prompted {
        metadata["tool_protocol"] = "prompted".into();
        metadata["unparsed_tool_call"] = ran.unparsed_tool_call.into();
    }
    Ok(Attempt {
        index: 0,
        transcript: ran.transcript,
        response: ran.response,
        query_count: ran.steps,
        metadata,
    })
}

async fn run(
    sidecar: &Sidecar,
    case: &BenchCase,
    attack: Option<&str>,
    defense: Option<&str>,
    target: &dyn CallModel,
) -> Result<Ran, ModelError> {
    let failed = |why: AttemptError, transcript: Vec<Message>, steps: u32, injections: Value| Ran {
        transcript,
        response: Err(why),
        steps,
        max_steps_hit: false,
        injections,
        delivered: false,
        verdict: None,
        unparsed_tool_call: None,
    };
    let sidecar_failed = |e: SidecarError| AttemptError::Episode(e.into());
    let bound = match sidecar.bind().await {
        Ok(b) => b,
        // No episode can run with this sidecar: the run stops, before any model call.
        Err(e) if e.is_configuration() => return Err(ModelError::Config(e.to_string())),
        Err(e) => return Ok(failed(sidecar_failed(e), Vec::new(), 0, Value::Null)),
    };
    let id = EPISODES.fetch_add(1, Ordering::Relaxed);
    let start = json!({
        "op": "start", "episode": id, "version": case.version, "suite": case.suite,
        "user_task": case.user_task, "injection_task": case.injection_task,
        "attack": attack, "defense": defense, "model_name": case.model_name,
    });
    let s = match sidecar.request_in(&bound, start).await {
        Ok(s) => s,
        Err(e) => return Ok(failed(sidecar_failed(e), Vec::new(), 0, Value::Null)),
    };
    let injections = s["injections"].clone();
    let (Some(system), Some(user)) = (s["system"].as_str(), s["user"].as_str()) else {
        let why = EpisodeError::StartFields.into();
        return Ok(failed(why, Vec::new(), 0, injections));
    };
    let mut tools = match tool_defs(&s["tools"]) {
        Ok(t) => t,
        Err(e) => return Ok(failed(e.into(), Vec::new(), 0, injections)),
    };
    let mut messages = vec![Message::system(system), Message::user(user)];
    let mut steps = 0;
    // Tool calls the model made that are never executed but that AgentDojo's checks see
    // (they are in its messages): the filter reply's, and the last reply's at the limit.
    let mut pending: Vec<ToolCall> = Vec::new();
    if let Some(prompt) = s["tool_filter_prompt"].as_str() {
        messages.push(Message::user(prompt));
        let req = ChatRequest {
            messages: messages.clone(),
            tools: tools.clone(),
            temperature: Some(0.0),
            ..Default::default()
        };
        steps += 1;
        let r = match target.call(req).await {
            Ok(r) => r,
            Err(e @ (ModelError::Config(_) | ModelError::Budget)) => {
                end(sidecar, &bound, id).await;
                return Err(e);
            }
            Err(ModelError::Call(msg)) => {
                end(sidecar, &bound, id).await;
                return Ok(failed(AttemptError::Call(msg), messages, steps, injections));
            }
        };
        let kept = sidecar
            .request_in(
                &bound,
                json!({"op": "filter", "episode": id, "output": r.content}),
            )
            .await
            .map_err(EpisodeError::from)
            .and_then(|v| tool_defs(&v["tools"]));
        pending.extend(r.tool_calls.iter().cloned());
        messages.push(Message {
            tool_calls: r.tool_calls,
            ..Message::assistant(r.content)
        });
        match kept {
            Ok(t) => tools = t,
            Err(e) => return Ok(failed(e.into(), messages, steps, injections)),
        }
    }
    let mut env = Episode {
        sidecar,
        bound: bound.clone(),
        id,
        tools,
        repeat: s["repeat_user_prompt"]
            .as_bool()
            .unwrap_or(false)
            .then(|| user.to_string()),
        placed: Placed::from_injections(&injections),
        delivered: false,
    };
    let request = ChatRequest {
        messages,
        ..Default::default()
    };
    let looped = match run_loop(target, &mut env, request, MAX_CALLS).await {
        Ok(l) => l,
        Err(e) => {
            end(sidecar, &bound, id).await;
            return Err(e);
        }
    };
    steps += looped.steps;
    let response = match looped.response {
        Ok(r) => r,
        Err(why) => {
            end(sidecar, &bound, id).await;
            return Ok(failed(why, looped.transcript, steps, injections));
        }
    };
    if looped.max_steps_hit {
        pending.extend(response.tool_calls.iter().cloned());
    }
    let pending: Vec<Value> = pending
        .iter()
        .map(|c| json!({"name": c.name, "arguments": c.arguments, "call_id": c.call_id}))
        .collect();
    let score = json!({
        "op": "score", "episode": id, "output": response.content, "pending_calls": pending,
    });
    let verdict = match sidecar.request_in(&bound, score).await {
        Ok(v) => match (v["utility"].as_bool(), &v["security"]) {
            (Some(u), Value::Bool(s)) => Ok((u, Some(*s))),
            (Some(u), Value::Null) => Ok((u, None)),
            _ => Err(EpisodeError::ScoreFields),
        },
        Err(e) => Err(EpisodeError::Sidecar(e)),
    };
    Ok(match verdict {
        Ok(v) => Ran {
            transcript: looped.transcript,
            response: Ok(response),
            steps,
            max_steps_hit: looped.max_steps_hit,
            delivered: env.delivered,
            injections,
            verdict: Some(v),
            unparsed_tool_call: looped.unparsed_tool_call,
        },
        Err(e) => failed(
            AttemptError::Episode(e),
            looped.transcript,
            steps,
            injections,
        ),
    })
}

/// Model calls of one episode at most: AgentDojo's first call and its 15 rounds.
pub const MAX_CALLS: u32 = 1 + super::benchmark::MAX_ITERS;

/// Drops an episode the sidecar still holds (best effort: a dead sidecar holds nothing).
async fn end(sidecar: &Sidecar, bound: &Bound, id: u64) {
    let _ = sidecar
        .request_in(bound, json!({"op": "end", "episode": id}))
        .await;
}
