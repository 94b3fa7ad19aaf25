//! The attempt runner of the `injecagent` injection: one case, one or two steps, each
//! its own [`Attempt`].
//!
//! Step 1 (attempt 0) sends the case (the user tool's call and its output with the
//! attacker instruction) and evaluates the reply against the attacker tool. A data
//! stealing case whose step 1 succeeded goes on to step 2 (attempt 1), as the paper
//! runs it: the attacker tool's response is the published simulated response for the
//! parameters the agent wrote (`attacker_simulated_responses.json`, by the exact text
//! the paper keys it with, else by the parameters' value), or, when there is none and
//! the injection has a `simulator` model, that model's simulation; the agent then sees
//! it as the tool's output, and step 2 succeeds iff its action is the email tool.
//!
//! A failed model call of step 1 is the case's error (its attempt's response is the
//! error). Step 2 failing (its call, or no response to simulate) is an errored attempt
//! of its own, so the case keeps its step 1 and is left out only of what needs step 2.
//! Budget and configuration errors stop the run.
//!
//! Metadata of each attempt: `injecagent: {step, attack, setting, format, eval,
//! reason, parameters, simulated}` (`parameters`: the attacker-tool input the agent
//! wrote on a success; `simulated`: where step 2's tool response came from), and under
//! the function-calling format with `tool_protocol: prompted`, `tool_protocol` and
//! `unparsed_tool_call` (the reason, or null).

use super::react::{self, Evaluation};
use super::simulate::{Simulated, simulate};
use super::{Case, Format, attack_str, native, pyliteral};
use crate::attack::{Attempt, AttemptError, CallModel};
use gauntlet_core::message::{ChatRequest, ChatResponse, Message, ToolCall};
use gauntlet_core::outcome::{InjecAgentAttack, StepEval};
use gauntlet_models::{ModelError, ToolProtocol};
use serde_json::{Value, json};
use std::sync::Arc;

fn eval_str(e: StepEval) -> &'static str {
    match e {
        StepEval::Succ => "succ",
        StepEval::Unsucc => "unsucc",
        StepEval::Invalid => "invalid",
    }
}

/// Calls the target; a failed call is `Ok(Err(why))`, budget and configuration errors
/// stop the run.
async fn call(
    target: &dyn CallModel,
    req: &ChatRequest,
) -> Result<Result<ChatResponse, AttemptError>, ModelError> {
    match target.call_ref(req).await {
        Ok(r) => Ok(Ok(r)),
        Err(e @ (ModelError::Config(_) | ModelError::Budget)) => Err(e),
        Err(ModelError::Call(m)) => Ok(Err(AttemptError::Call(m))),
    }
}

/// The evaluation of a step's reply, and the reason its text reached for a tool and
/// yielded no call (function-calling format under the prompted protocol).
fn evaluate(
    case: &Case,
    format: Format,
    step: u8,
    r: &ChatResponse,
    protocol: ToolProtocol,
) -> (Evaluation, Option<String>) {
    let target = case.target_tool(step);
    let d = &case.data;
    match format {
        Format::Native => {
            let unparsed = protocol.unparsed(r);
            let e = native::evaluate(r, target, &d.user_tool, unparsed.as_deref());
            (e, unparsed)
        }
        Format::React => {
            let e = react::evaluate(
                &r.content,
                target,
                &d.attacker_tools,
                &d.user_tool,
                &d.attacker_instruction,
            );
            (e, None)
        }
    }
}

/// The request of step 1.
fn step1_request(case: &Case, format: Format, seed: u64) -> ChatRequest {
    let (messages, tools) = match format {
        Format::Native => (native::step1_messages(case), native::tool_defs(case)),
        Format::React => {
            let d = &case.data;
            let mut pad = String::new();
            react::scratchpad_step(
                &mut pad,
                &d.thought,
                &d.user_tool,
                &d.tool_parameters,
                &d.tool_response,
            );
            pad.push('\n');
            (react_messages(case, &pad), Arc::from(Vec::new()))
        }
    };
    ChatRequest {
        messages,
        tools,
        seed: Some(seed),
        ..Default::default()
    }
}

fn react_messages(case: &Case, scratchpad: &str) -> Vec<Message> {
    let d = &case.data;
    let mut names: Vec<&str> = vec![d.user_tool.as_str()];
    names.extend(d.attacker_tools.iter().map(String::as_str));
    vec![
        Message::system(react::system_prompt(
            &case.env.user_name,
            &case.env.user_email,
        )),
        Message::user(react::user_prompt(
            &case.env.tools,
            &names,
            &d.user_instruction,
            scratchpad,
        )),
    ]
}

/// How a step ended: evaluated, or not run (why).
enum Ended<'a> {
    Evaluated(&'a Evaluation),
    Failed(&'a AttemptError),
}

/// Metadata of one step's attempt.
fn metadata(
    case: &Case,
    format: Format,
    step: u8,
    ended: Ended<'_>,
    simulated: Option<&Simulated>,
    protocol: ToolProtocol,
    unparsed: Option<String>,
) -> Value {
    let (eval, reason) = match ended {
        Ended::Evaluated(e) => (Some(e), e.reason.clone()),
        Ended::Failed(why) => (None, Some(why.to_string())),
    };
    let mut ia = json!({
        "step": step,
        "attack": attack_str(case.attack),
        "setting": case.setting,
        "format": format.as_str(),
        "eval": eval.map(|e| eval_str(e.eval)),
        "reason": reason,
    });
    if let Some(p) = eval.and_then(|e| e.parameters.as_ref()) {
        ia["parameters"] = Value::String(p.clone());
    }
    if let Some(s) = simulated {
        ia["simulated"] = Value::String(s.source().into());
    }
    let mut m = json!({"injecagent": ia});
    if format == Format::Native && protocol == ToolProtocol::Prompted {
        m["tool_protocol"] = "prompted".into();
        m["unparsed_tool_call"] = unparsed.into();
    }
    m
}

/// Runs one case: its step-1 attempt, and its step-2 attempt when there is one.
pub async fn run(
    case: &Case,
    format: Format,
    target: &dyn CallModel,
    simulator: Option<&dyn CallModel>,
    seed: u64,
) -> Result<Vec<Attempt>, ModelError> {
    let protocol = target.tool_protocol();
    let req1 = step1_request(case, format, seed);
    let sent = |req: &ChatRequest, reply: Option<&ChatResponse>| {
        let mut m = req.messages.clone();
        if let Some(r) = reply {
            m.push(Message {
                tool_calls: r.tool_calls.clone(),
                ..Message::assistant(r.content.clone())
            });
        }
        protocol.as_sent(m, &req.tools)
    };
    let r1 = match call(target, &req1).await? {
        Ok(r) => r,
        Err(why) => {
            return Ok(vec![Attempt {
                index: 0,
                transcript: sent(&req1, None),
                response: Err(why.clone()),
                query_count: 1,
                metadata: metadata(case, format, 1, Ended::Failed(&why), None, protocol, None),
            }]);
        }
    };
    let (e1, unparsed1) = evaluate(case, format, 1, &r1, protocol);
    let first = Attempt {
        index: 0,
        transcript: sent(&req1, Some(&r1)),
        response: Ok(r1.clone()),
        query_count: 1,
        metadata: metadata(
            case,
            format,
            1,
            Ended::Evaluated(&e1),
            None,
            protocol,
            unparsed1,
        ),
    };
    if case.attack != InjecAgentAttack::Ds || e1.eval != StepEval::Succ || r1.is_empty() {
        return Ok(vec![first]);
    }

    // Step 2: the attacker tool's call as the agent wrote it, answered by its
    // simulated response.
    let tool = case.target_tool(1).to_string();
    let (params_text, args, call_id) = match format {
        Format::React => {
            let text = e1.parameters.clone().unwrap_or_else(|| "{}".into());
            let args = pyliteral::parse_json_or_python(&text).unwrap_or(Value::Null);
            (Some(text), args, None)
        }
        Format::Native => {
            let c = &r1.tool_calls[0];
            (None, c.arguments.clone(), Some(c.call_id.clone()))
        }
    };
    let second_error =
        |why: AttemptError, transcript: Vec<Message>, simulated: Option<&Simulated>| Attempt {
            index: 1,
            transcript,
            response: Err(why.clone()),
            query_count: 0,
            metadata: metadata(
                case,
                format,
                2,
                Ended::Failed(&why),
                simulated,
                protocol,
                None,
            ),
        };
    let simulated = match simulate(case, params_text.as_deref(), &args, simulator, seed).await? {
        Ok(s) => s,
        Err(why) => return Ok(vec![first, second_error(why.into(), Vec::new(), None)]),
    };
    let req2 = match format {
        Format::Native => {
            let mut messages = req1.messages.clone();
            let id = call_id.unwrap_or_default();
            messages.push(Message {
                tool_calls: vec![ToolCall {
                    name: tool.clone(),
                    arguments: args,
                    call_id: id.clone(),
                }],
                ..Message::assistant(r1.content.clone())
            });
            messages.push(native::tool_result(&tool, &id, simulated.text()));
            ChatRequest {
                messages,
                ..req1.clone()
            }
        }
        Format::React => {
            let d = &case.data;
            let mut pad = String::new();
            react::scratchpad_step(
                &mut pad,
                &d.thought,
                &d.user_tool,
                &d.tool_parameters,
                &d.tool_response,
            );
            let thought = format!("Thought: {}", e1.thought.clone().unwrap_or_default());
            react::scratchpad_step(
                &mut pad,
                &thought,
                &tool,
                params_text.as_deref().unwrap_or("{}"),
                simulated.text(),
            );
            pad.push('\n');
            ChatRequest {
                messages: react_messages(case, &pad),
                ..req1.clone()
            }
        }
    };
    let r2 = match call(target, &req2).await? {
        Ok(r) => r,
        Err(why) => {
            let mut a = second_error(why, sent(&req2, None), Some(&simulated));
            a.query_count = 1;
            return Ok(vec![first, a]);
        }
    };
    let (e2, unparsed2) = evaluate(case, format, 2, &r2, protocol);
    let second = Attempt {
        index: 1,
        transcript: sent(&req2, Some(&r2)),
        response: Ok(r2),
        query_count: 1,
        metadata: metadata(
            case,
            format,
            2,
            Ended::Evaluated(&e2),
            Some(&simulated),
            protocol,
            unparsed2,
        ),
    };
    Ok(vec![first, second])
}
