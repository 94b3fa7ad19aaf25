//! The golden backend over loopback HTTP (`gauntlet exam --golden-http`): the golden
//! scripts ([`GoldenScript`]) answered on the Anthropic messages API, so the exam reaches
//! them through the live `anthropic` target and its whole wire path (request building,
//! headers, tool-use round trips, reply parsing, usage).
//!
//! Scenario `i` is served under `/s/<i>/v1/messages`. A request is checked the way the
//! real API checks what matters for those round trips — the `anthropic-version` header,
//! `model` and `max_tokens`, user and assistant turns only, every `tool_result` naming a
//! `tool_use` of the assistant turn before it, a `tool_use` with an id and an object
//! `input`, no empty text block — and refused with a 400 in the API's error shape
//! otherwise, so a translation fault fails the exam instead of passing unseen.
//!
//! The reply is a function of the request alone: while tools are offered and no tool
//! result has come back, the evidence-gathering tool calls ([`GOLDEN_TOOL_CALLS`]); then
//! the script's reply for the tier its system prompt names. Usage is counted in
//! whitespace-separated words (input: every text of the system prompt and the
//! conversation; output: the reply's words and 5 per tool call).
//!
//! It binds to 127.0.0.1 only, on a port the OS chooses, and stops when dropped.

use crate::golden::{GOLDEN_TOOL_CALLS, GoldenScript};
use axum::Router;
use axum::body::Bytes;
use axum::extract::{Path, State};
use axum::http::{HeaderMap, StatusCode, header};
use axum::response::{IntoResponse, Response};
use axum::routing::post;
use serde_json::{Value, json};
use std::net::SocketAddr;
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use tokio::task::JoinHandle;

/// The largest request body served (a golden conversation is a few hundred KB at most).
const MAX_BODY_BYTES: usize = 32 << 20;

/// Output tokens counted for each tool call of a reply.
const TOKENS_PER_CALL: u64 = 5;

/// The golden backend over loopback HTTP, serving scenario `i`'s script under
/// `/s/<i>/v1/messages`; stops when dropped.
pub struct GoldenServer {
    addr: SocketAddr,
    task: JoinHandle<()>,
}

struct Served {
    scripts: Vec<GoldenScript>,
    /// Requests answered, for the reply ids.
    seq: AtomicU64,
}

impl GoldenServer {
    /// Starts serving `scripts` on 127.0.0.1 (an ephemeral port). Must be called
    /// inside a tokio runtime.
    pub async fn start(scripts: Vec<GoldenScript>) -> std::io::Result<GoldenServer> {
        let listener = tokio::net::TcpListener::bind(SocketAddr::from(([127, 0, 0, 1], 0))).await?;
        let addr = listener.local_addr()?;
        let served = Arc::new(Served {
            scripts,
            seq: AtomicU64::new(0),
        });
        let app = Router::new()
            .route("/s/{scope}/v1/messages", post(messages))
            .layer(axum::extract::DefaultBodyLimit::max(MAX_BODY_BYTES))
            .with_state(served);
        let task = tokio::spawn(async move {
            let _ = axum::serve(listener, app).await;
        });
        Ok(GoldenServer { addr, task })
    }

    /// The Anthropic base URL serving scenario `idx` (`{base}/v1/messages`).
    pub fn base_url(&self, idx: usize) -> String {
        format!("http://{}/s/{idx}", self.addr)
    }

    pub fn addr(&self) -> SocketAddr {
        self.addr
    }
}

impl Drop for GoldenServer {
    fn drop(&mut self) {
        self.task.abort();
    }
}

async fn messages(
    State(served): State<Arc<Served>>,
    Path(scope): Path<usize>,
    headers: HeaderMap,
    body: Bytes,
) -> Response {
    let seq = served.seq.fetch_add(1, Ordering::Relaxed) + 1;
    match answer(&served.scripts, scope, &headers, &body, seq) {
        Ok(reply) => (
            StatusCode::OK,
            [(header::CONTENT_TYPE, "application/json")],
            reply.to_string(),
        )
            .into_response(),
        Err((status, kind, message)) => (
            status,
            [(header::CONTENT_TYPE, "application/json")],
            json!({"type": "error", "error": {"type": kind, "message": message}}).to_string(),
        )
            .into_response(),
    }
}

/// A refused request: the status, the API's error type and the message.
type Refusal = (StatusCode, &'static str, String);

/// The reply to one request (request number `seq`), or why it is refused.
fn answer(
    scripts: &[GoldenScript],
    scope: usize,
    headers: &HeaderMap,
    body: &[u8],
    seq: u64,
) -> Result<Value, Refusal> {
    let bad = |m: String| (StatusCode::BAD_REQUEST, "invalid_request_error", m);
    let body: Value = serde_json::from_slice(body)
        .map_err(|e| bad(format!("the request body is not JSON: {e}")))?;
    validate(headers, &body).map_err(bad)?;
    let script = scripts.get(scope).ok_or_else(|| {
        (
            StatusCode::NOT_FOUND,
            "not_found_error",
            format!("no golden scenario {scope} (serving {})", scripts.len()),
        )
    })?;
    let tools_offered = body
        .get("tools")
        .and_then(Value::as_array)
        .is_some_and(|t| !t.is_empty());
    let (content, stop, output) = if tools_offered && !has_tool_result(&body) {
        // Tool loop: first gather evidence, then answer.
        let calls: Vec<Value> = GOLDEN_TOOL_CALLS
            .iter()
            .enumerate()
            .map(|(i, n)| json!({"type": "tool_use", "id": format!("toolu_golden_{i}"), "name": n, "input": {}}))
            .collect();
        let output = calls.len() as u64 * TOKENS_PER_CALL;
        (calls, "tool_use", output)
    } else {
        let text = script.reply(&system_text(&body));
        let output = words(&text);
        let content = if text.is_empty() {
            Vec::new()
        } else {
            vec![json!({"type": "text", "text": text})]
        };
        (content, "end_turn", output)
    };
    Ok(json!({
        "id": format!("msg_golden_{seq}"),
        "type": "message",
        "role": "assistant",
        "model": body.get("model").and_then(Value::as_str).unwrap_or_default(),
        "content": content,
        "stop_reason": stop,
        "stop_sequence": null,
        "usage": {"input_tokens": input_words(&body), "output_tokens": output},
    }))
}

/// The first check the real API makes that the request fails, in its words.
fn validate(headers: &HeaderMap, body: &Value) -> Result<(), String> {
    if headers.get("anthropic-version").is_none() {
        return Err("the anthropic-version header is required".into());
    }
    if body.get("model").and_then(Value::as_str).is_none() {
        return Err("`model` is required".into());
    }
    if body.get("max_tokens").and_then(Value::as_u64).is_none() {
        return Err("`max_tokens` is required".into());
    }
    let msgs = body
        .get("messages")
        .and_then(Value::as_array)
        .ok_or("`messages` must be an array")?;
    let mut previous_uses: Vec<&str> = Vec::new();
    for (i, m) in msgs.iter().enumerate() {
        let role = m.get("role").and_then(Value::as_str).unwrap_or("");
        if role != "user" && role != "assistant" {
            return Err(format!(
                "messages[{i}]: role must be user or assistant (system goes top-level), found `{role}`"
            ));
        }
        let blocks: &[Value] = match m.get("content") {
            Some(Value::Array(b)) => b,
            Some(Value::String(_)) => &[],
            _ => return Err(format!("messages[{i}]: `content` is required")),
        };
        let mut uses = Vec::new();
        for b in blocks {
            match b.get("type").and_then(Value::as_str) {
                Some("text") => {
                    if b.get("text")
                        .and_then(Value::as_str)
                        .is_none_or(str::is_empty)
                    {
                        return Err(format!(
                            "messages[{i}]: text content blocks must be non-empty"
                        ));
                    }
                }
                Some("tool_use") if role == "assistant" => {
                    let id = b.get("id").and_then(Value::as_str);
                    uses.push(id.ok_or_else(|| format!("messages[{i}]: tool_use needs an `id`"))?);
                    if !b.get("input").is_some_and(Value::is_object) {
                        return Err(format!("messages[{i}]: tool_use `input` must be an object"));
                    }
                }
                Some("tool_result") if role == "user" => {
                    let id = b
                        .get("tool_use_id")
                        .and_then(Value::as_str)
                        .ok_or_else(|| format!("messages[{i}]: tool_result needs `tool_use_id`"))?;
                    if !previous_uses.contains(&id) {
                        return Err(format!(
                            "messages[{i}]: tool_use_id `{id}` has no tool_use in the previous assistant turn"
                        ));
                    }
                }
                other => {
                    return Err(format!(
                        "messages[{i}]: unexpected content block {other:?} in a {role} turn"
                    ));
                }
            }
        }
        previous_uses = uses;
    }
    Ok(())
}

/// The system prompt: a string, or its text blocks joined by newlines.
fn system_text(body: &Value) -> String {
    match body.get("system") {
        Some(Value::String(s)) => s.clone(),
        Some(Value::Array(blocks)) => blocks
            .iter()
            .filter_map(|b| b.get("text").and_then(Value::as_str))
            .collect::<Vec<_>>()
            .join("\n"),
        _ => String::new(),
    }
}

/// Whether the conversation holds a `tool_result` block.
fn has_tool_result(body: &Value) -> bool {
    body.get("messages")
        .and_then(Value::as_array)
        .is_some_and(|ms| {
            ms.iter().any(|m| {
                m.get("content")
                    .and_then(Value::as_array)
                    .is_some_and(|bs| {
                        bs.iter()
                            .any(|b| b.get("type").and_then(Value::as_str) == Some("tool_result"))
                    })
            })
        })
}

/// Whitespace-separated words.
fn words(s: &str) -> u64 {
    s.split_whitespace().count() as u64
}

/// Words of every text of the request: the system prompt and each message's content
/// (strings, text blocks, tool results' contents).
fn input_words(body: &Value) -> u64 {
    fn content(v: &Value) -> u64 {
        match v {
            Value::String(s) => words(s),
            Value::Array(parts) => parts
                .iter()
                .map(|p| {
                    p.get("text").and_then(Value::as_str).map_or(0, words)
                        + p.get("content").map_or(0, content)
                })
                .sum(),
            _ => 0,
        }
    }
    let system = body.get("system").map_or(0, content);
    let msgs = body.get("messages").and_then(Value::as_array);
    system
        + msgs.map_or(0, |ms| {
            ms.iter().map(|m| m.get("content").map_or(0, content)).sum()
        })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn headers() -> HeaderMap {
        let mut h = HeaderMap::new();
        h.insert(
            "anthropic-version",
            "2023-06-01".parse().expect("header value"),
        );
        h
    }

    fn script() -> GoldenScript {
        GoldenScript {
            escalate: true,
            mentions: vec!["owner".into()],
            wrong: false,
        }
    }

    fn request(messages: Value, tools: bool) -> Vec<u8> {
        let mut b =
            json!({"model": "golden", "max_tokens": 64, "system": "sys tem", "messages": messages});
        if tools {
            b["tools"] = json!([{"name": "search-events", "input_schema": {"type": "object"}}]);
        }
        b.to_string().into_bytes()
    }

    #[test]
    fn tool_calls_then_the_scripted_reply() {
        let s = [script()];
        let first = request(json!([{"role": "user", "content": "look"}]), true);
        let r = answer(&s, 0, &headers(), &first, 1).expect("answered");
        assert_eq!(r["stop_reason"], "tool_use");
        let uses = r["content"].as_array().expect("content");
        assert_eq!(uses.len(), GOLDEN_TOOL_CALLS.len());
        assert_eq!(r["usage"]["input_tokens"], 3);
        let results: Vec<Value> = uses
            .iter()
            .map(
                |u| json!({"type": "tool_result", "tool_use_id": u["id"], "content": "none found"}),
            )
            .collect();
        let second = request(
            json!([
                {"role": "user", "content": "look"},
                {"role": "assistant", "content": uses},
                {"role": "user", "content": results},
            ]),
            true,
        );
        let r = answer(&s, 0, &headers(), &second, 2).expect("answered");
        assert_eq!(r["stop_reason"], "end_turn");
        assert_eq!(r["content"][0]["text"], script().reply("sys tem"));
    }

    #[test]
    fn requests_the_api_would_refuse_are_refused() {
        let s = [script()];
        let ok = request(json!([{"role": "user", "content": "look"}]), false);
        assert!(answer(&s, 0, &headers(), &ok, 1).is_ok());
        let (status, kind, m) = answer(&s, 0, &HeaderMap::new(), &ok, 1).expect_err("no version");
        assert_eq!(
            (status, kind),
            (StatusCode::BAD_REQUEST, "invalid_request_error")
        );
        assert!(m.contains("anthropic-version"), "{m}");
        let (status, _, _) = answer(&s, 1, &headers(), &ok, 1).expect_err("no scenario 1");
        assert_eq!(status, StatusCode::NOT_FOUND);
        let orphan = request(
            json!([{"role": "user", "content": [{"type": "tool_result", "tool_use_id": "toolu_x", "content": "r"}]}]),
            true,
        );
        let (_, _, m) = answer(&s, 0, &headers(), &orphan, 1).expect_err("orphan result");
        assert!(m.contains("toolu_x"), "{m}");
        let system_turn = request(json!([{"role": "system", "content": "s"}]), false);
        assert!(answer(&s, 0, &headers(), &system_turn, 1).is_err());
        assert!(answer(&s, 0, &headers(), b"{", 1).is_err());
    }
}
