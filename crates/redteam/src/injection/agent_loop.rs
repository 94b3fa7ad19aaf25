//! The agent loop: the conversation and every model call of one episode, over a
//! [`ToolEnv`] that owns the tools (the seam and its contract: [`super::env`]).
//!
//! The loop's transcript records each tool result as a `tool` message carrying the
//! call's name and id (`tool_call_id`), so real APIs can match them.
//!
//! Under the target's `tool_protocol: prompted` the calls arrive parsed from the
//! model's text (the target does it); a final reply that reached for a tool and yielded
//! no call is recorded in [`LoopRun::unparsed_tool_call`] (never a call), and the
//! transcript is the conversation as the model was sent it (tools in the system
//! prompt, results as user turns: [`gauntlet_models::ToolProtocol::as_sent`]).

use super::env::ToolEnv;
use crate::attack::{AttemptError, CallModel, Conversation};
use gauntlet_core::message::{ChatRequest, ChatResponse, Message, Role};
use gauntlet_models::ModelError;

/// What one loop did.
#[derive(Debug, Clone)]
pub struct LoopRun {
    /// Every message: the initial ones, each assistant turn (tool calls included), each
    /// tool result and whatever the environment added after a round.
    pub transcript: Vec<Message>,
    /// The last reply, or why the run has none (a failed model call, an episode error).
    pub response: Result<ChatResponse, AttemptError>,
    /// Model calls made.
    pub steps: u32,
    /// The model was still calling tools when `max_steps` ran out.
    pub max_steps_hit: bool,
    /// The run ended on an episode error ([`EnvError`]) rather than a model's reply.
    pub env_error: bool,
    /// Why the last reply reached for a tool and yielded no call (prompted protocol
    /// only; `None` otherwise).
    pub unparsed_tool_call: Option<String>,
}

/// Runs the agent loop: `request` holds the initial messages (system, user), the seed
/// and any out-of-band script; its tools are replaced by the environment's. At most
/// `max_steps` model calls; the loop stops at the first reply without tool calls.
///
/// A failed model call ends the run with that error as its response; configuration and
/// budget errors propagate (they stop the whole run).
pub async fn run_loop(
    target: &dyn CallModel,
    env: &mut dyn ToolEnv,
    mut request: ChatRequest,
    max_steps: u32,
) -> Result<LoopRun, ModelError> {
    request.tools = env.tools();
    // One request for the whole run: its conversation grows in place and is lent to
    // each call, so no step copies the transcript.
    request
        .messages
        .reserve(2 * max_steps as usize + request.messages.len());
    let mut conv = Conversation::new(request);
    let mut steps = 0;
    let mut last: Result<ChatResponse, AttemptError> = Err(AttemptError::NoCall);
    let mut max_steps_hit = false;
    let mut env_error = false;
    let mut unparsed_tool_call = None;
    let protocol = target.tool_protocol();
    'turns: loop {
        if steps == max_steps {
            max_steps_hit = true;
            break;
        }
        steps += 1;
        let mut r = match target.call_conversation(&mut conv).await {
            Ok(r) => r,
            Err(e @ (ModelError::Config(_) | ModelError::Budget)) => return Err(e),
            Err(ModelError::Call(msg)) => {
                last = Err(AttemptError::Call(msg));
                break;
            }
        };
        if r.tool_calls.is_empty() {
            unparsed_tool_call = protocol.unparsed(&r);
            conv.push(Message::assistant(r.content.clone()));
            last = Ok(r);
            break;
        }
        // A reply with tool calls is the run's last only when the step limit is reached
        // now; otherwise the next call replaces it, so its parts move into the transcript.
        let keep = steps == max_steps;
        let (content, tool_calls) = if keep {
            (r.content.clone(), r.tool_calls.clone())
        } else {
            (
                std::mem::take(&mut r.content),
                std::mem::take(&mut r.tool_calls),
            )
        };
        let at = conv.messages().len();
        conv.push(Message {
            tool_calls,
            ..Message::assistant(content)
        });
        for k in 0..conv.messages()[at].tool_calls.len() {
            let c = &conv.messages()[at].tool_calls[k];
            let out = match env.call(c).await {
                Ok(out) => out,
                Err(e) => {
                    last = Err(AttemptError::Env(e));
                    env_error = true;
                    break 'turns;
                }
            };
            let tool = Message {
                role: Role::Tool,
                content: out,
                name: Some(c.name.clone()),
                tool_calls: Vec::new(),
                tool_call_id: Some(c.call_id.clone()),
            };
            conv.push(tool);
        }
        for m in env.after_tools() {
            conv.push(m);
        }
        if keep {
            last = Ok(r);
        }
    }
    let req = conv.into_request();
    Ok(LoopRun {
        transcript: protocol.as_sent(req.messages, &req.tools),
        response: last,
        steps,
        max_steps_hit,
        env_error,
        unparsed_tool_call,
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::injection::env::EnvError;
    use gauntlet_core::message::{StopReason, ToolCall, ToolDef};
    use gauntlet_models::BoxFuture;
    use std::sync::Arc;
    use std::sync::Mutex;

    /// Replies from a fixed list, recording each request's messages.
    struct Scripted {
        replies: Mutex<Vec<ChatResponse>>,
        seen: Mutex<Vec<Vec<Message>>>,
    }
    impl CallModel for Scripted {
        fn call<'a>(&'a self, req: ChatRequest) -> BoxFuture<'a, Result<ChatResponse, ModelError>> {
            self.seen.lock().unwrap().push(req.messages.clone());
            let mut v = self.replies.lock().unwrap();
            let r = if v.is_empty() {
                Err(ModelError::Call("out of replies".into()))
            } else {
                Ok(v.remove(0))
            };
            Box::pin(std::future::ready(r))
        }
    }
    fn calling(name: &str, id: &str) -> ChatResponse {
        ChatResponse {
            first_token_logprobs: None,
            evidence: None,
            content: String::new(),
            stop_reason: StopReason::ToolCalls,
            tool_calls: vec![ToolCall {
                name: name.into(),
                arguments: serde_json::json!({}),
                call_id: id.into(),
            }],
            usage: None,
        }
    }
    /// Answers `echo` with its call id, fails on `boom`, repeats a user turn after
    /// every round.
    struct Env;
    impl ToolEnv for Env {
        fn tools(&self) -> Arc<[ToolDef]> {
            Arc::from(vec![ToolDef {
                name: "echo".into(),
                description: "echo".into(),
                parameters: serde_json::json!({"type": "object"}),
            }])
        }
        fn call<'a>(&'a mut self, c: &'a ToolCall) -> BoxFuture<'a, Result<String, EnvError>> {
            let r = if c.name == "boom" {
                Err(EnvError::Sidecar(
                    crate::injection::agentdojo::sidecar::SidecarError::Reported {
                        message: "the environment crashed".into(),
                    },
                ))
            } else {
                Ok(format!("echo {}", c.call_id))
            };
            Box::pin(std::future::ready(r))
        }
        fn after_tools(&mut self) -> Vec<Message> {
            vec![Message::user("again")]
        }
    }
    fn run(replies: Vec<ChatResponse>) -> (LoopRun, Vec<Vec<Message>>) {
        let m = Scripted {
            replies: Mutex::new(replies),
            seen: Mutex::new(Vec::new()),
        };
        let req = ChatRequest {
            messages: vec![Message::system("s"), Message::user("u")],
            ..Default::default()
        };
        let r = tokio::runtime::Builder::new_current_thread()
            .build()
            .unwrap()
            .block_on(run_loop(&m, &mut Env, req, 6))
            .unwrap();
        (r, m.seen.into_inner().unwrap())
    }

    #[test]
    fn results_and_added_turns_go_back_in_order() {
        let (r, seen) = run(vec![calling("echo", "c1"), ChatResponse::text("done")]);
        assert!(!r.env_error && !r.max_steps_hit);
        assert_eq!(r.steps, 2);
        let roles: Vec<Role> = seen[1].iter().map(|m| m.role).collect();
        assert_eq!(
            roles,
            [
                Role::System,
                Role::User,
                Role::Assistant,
                Role::Tool,
                Role::User
            ]
        );
        assert_eq!(seen[1][3].content, "echo c1");
        assert_eq!(seen[1][3].tool_call_id.as_deref(), Some("c1"));
        assert_eq!(r.transcript.last().unwrap().content, "done");
    }

    #[test]
    fn an_environment_failure_ends_the_run_as_an_error() {
        let (r, seen) = run(vec![calling("boom", "c1"), ChatResponse::text("never")]);
        assert!(r.env_error);
        assert_eq!(
            r.response.unwrap_err().to_string(),
            "the environment crashed"
        );
        assert_eq!((r.steps, seen.len()), (1, 1));
    }
}
