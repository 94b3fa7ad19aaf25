//! The answer to one request: recorded, validated like the real APIs, matched against
//! the script (or the responder), and turned into the provider's reply. Batch lines are
//! answered here too, each as if sent on its own.

use crate::reply::{Reply, reply_auth, reply_error, reply_json};
use crate::script::{
    Action, Api, PRESENTED_AUTHORIZATION, PRESENTED_KEY, RefusalStyle, ScriptedCall, When,
};
use crate::state::{Prompt, RECORD_LIMIT, RecordedRequest, Shared};
use axum::http::{HeaderMap, StatusCode};
use serde_json::{Value, json};
use std::sync::Arc;
use std::sync::atomic::Ordering;

pub(crate) fn header_str(h: &HeaderMap, name: &str) -> Option<String> {
    h.get(name)
        .and_then(|v| v.to_str().ok())
        .map(str::to_string)
}

/// Records one request (counters, log, sequence number), picks its action and computes
/// the answer: `None` for a hang. Also the wave of a batch: each batch line is answered
/// here as if it had been sent on its own (`headers` are the batch request's). Returns
/// the latency to wait before answering (ignored inside batches).
pub(crate) fn answer(
    s: &Shared,
    api: Api,
    scope: Option<usize>,
    headers: &HeaderMap,
    body: Value,
    now_in_flight: u64,
) -> (Option<Reply>, u64) {
    let seq = s.seq.fetch_add(1, Ordering::SeqCst) + 1;
    let authorization = header_str(headers, "authorization");
    let x_api_key = header_str(headers, "x-api-key");
    let text = conversation_text(api, &body);
    // Record, count, and pick the action under one lock.
    let (decision, latency, script) = {
        let mut g = s.lock();
        g.stats.requests += 1;
        match api {
            Api::Openai => g.stats.openai += 1,
            Api::Anthropic => g.stats.anthropic += 1,
        }
        g.stats.max_in_flight = g.stats.max_in_flight.max(now_in_flight);
        g.log.push_back(RecordedRequest {
            seq,
            api,
            body: body.clone(),
            in_flight_at_arrival: now_in_flight,
            authorization: authorization.clone(),
            x_api_key: x_api_key.clone(),
            anthropic_version: header_str(headers, "anthropic-version"),
        });
        while g.log.len() > RECORD_LIMIT {
            g.log.pop_front();
        }
        let mut chosen = None;
        for i in 0..g.script.rules.len() {
            let r = &g.script.rules[i];
            if r.times.is_some_and(|t| g.fired[i] >= t) || !matches(&r.when, seq, api, &text) {
                continue;
            }
            chosen = Some((r.then.clone(), r.latency_ms));
            g.fired[i] += 1;
            break;
        }
        let (action, rule_latency) = match chosen {
            Some((a, l)) => (Some(a), l),
            None => (None, None),
        };
        (
            action,
            rule_latency.unwrap_or(g.script.latency_ms),
            Arc::clone(&g.script),
        )
    };

    // Authentication and request validation come before scripted behaviour, like a
    // real API (a scripted 401 is still possible through a rule).
    if let Some(want) = &script.require_key {
        let presented = match api {
            Api::Openai => authorization
                .as_deref()
                .and_then(|a| a.strip_prefix("Bearer "))
                .map(str::to_string),
            Api::Anthropic => x_api_key.clone(),
        };
        if presented.as_deref() != Some(want.as_str()) {
            s.outcome("unauthorized");
            return (Some(reply_auth(api, 401, presented.as_deref())), latency);
        }
    }
    if let Err(msg) = validate(api, headers, &body) {
        s.outcome("bad_request");
        return (
            Some(reply_error(
                api,
                400,
                "invalid_request_error",
                &msg.to_string(),
            )),
            latency,
        );
    }

    let decision = match (decision, &s.responder) {
        (Some(a), _) => a,
        (None, None) => Action::Default,
        (None, Some(r)) => {
            let system = system_text(api, &body);
            r(&Prompt {
                scope,
                api,
                system: &system,
                tools_offered: body
                    .get("tools")
                    .and_then(Value::as_array)
                    .is_some_and(|t| !t.is_empty()),
                tool_result_present: has_tool_result(api, &body),
            })
            .unwrap_or(Action::Status {
                code: 404,
                retry_after: None,
                body: None,
            })
        }
    };
    let model = body
        .get("model")
        .and_then(Value::as_str)
        .unwrap_or("test-model")
        .to_string();
    let input_tokens = words(&text);
    let reply = match decision {
        Action::Default => {
            let refuse = script
                .refuse_word
                .as_deref()
                .is_some_and(|w| !w.is_empty() && text.to_lowercase().contains(&w.to_lowercase()));
            let reply = if refuse {
                &script.refusal_text
            } else {
                &script.compliance_text
            };
            s.outcome("ok");
            let v = success(api, seq, &model, reply, &[], None, input_tokens);
            reply_json(StatusCode::OK, &v.to_string())
        }
        Action::Reply {
            text: reply,
            tool_calls,
            stop,
        } => {
            s.outcome("ok");
            let v = success(
                api,
                seq,
                &model,
                &reply,
                &tool_calls,
                stop.as_deref(),
                input_tokens,
            );
            reply_json(StatusCode::OK, &v.to_string())
        }
        Action::Refuse { text: reply, style } => {
            s.outcome("refusal");
            let out = words(&reply);
            let v = match api {
                Api::Openai => {
                    let (message, finish) = match style {
                        RefusalStyle::RefusalField => (
                            json!({"role": "assistant", "content": null, "refusal": reply}),
                            "stop",
                        ),
                        RefusalStyle::ContentFilter => (
                            json!({"role": "assistant", "content": reply, "refusal": null}),
                            "content_filter",
                        ),
                    };
                    openai_envelope(seq, &model, message, finish, input_tokens, out)
                }
                Api::Anthropic => {
                    let content = if reply.is_empty() {
                        json!([])
                    } else {
                        json!([{"type": "text", "text": reply}])
                    };
                    anthropic_envelope(seq, &model, content, "refusal", input_tokens, out)
                }
            };
            reply_json(StatusCode::OK, &v.to_string())
        }
        Action::Status {
            code,
            retry_after,
            body,
        } => {
            s.outcome(&format!("status_{code}"));
            if body.is_none() && (code == 401 || code == 403) {
                let presented = match api {
                    Api::Openai => authorization
                        .as_deref()
                        .and_then(|a| a.strip_prefix("Bearer ")),
                    Api::Anthropic => x_api_key.as_deref(),
                };
                let mut r = reply_auth(api, code, presented);
                r.retry_after = retry_after;
                return (Some(r), latency);
            }
            let mut r = match body {
                Some(b) => reply_json(
                    StatusCode::from_u16(code).unwrap_or(StatusCode::INTERNAL_SERVER_ERROR),
                    &b,
                ),
                None => {
                    let (kind, msg) = match code {
                        429 => ("rate_limit_error", "rate limited by the test server"),
                        529 => ("overloaded_error", "overloaded (test server)"),
                        c if c >= 500 => ("api_error", "internal error (test server)"),
                        _ => ("invalid_request_error", "rejected by the test server"),
                    };
                    reply_error(api, code, kind, msg)
                }
            };
            r.retry_after = retry_after;
            r
        }
        Action::Raw {
            status,
            content_type,
            body,
            headers,
        } => {
            s.outcome(&format!("raw_{status}"));
            let auth = authorization.as_deref().unwrap_or("");
            let fill = |t: &str| t.replace(PRESENTED_AUTHORIZATION, auth);
            let mut r = reply_json(
                StatusCode::from_u16(status).unwrap_or(StatusCode::INTERNAL_SERVER_ERROR),
                &fill(&body),
            );
            r.content_type = Some(content_type);
            r.headers = headers.iter().map(|(k, v)| (k.clone(), fill(v))).collect();
            r
        }
        Action::Hang => {
            s.outcome("hang");
            return (None, latency);
        }
        Action::Truncated => {
            s.outcome("truncated");
            let full = success(
                api,
                seq,
                &model,
                &script.compliance_text,
                &[],
                None,
                input_tokens,
            )
            .to_string();
            let cut: String = full.chars().take(full.chars().count() / 2).collect();
            reply_json(StatusCode::OK, &cut)
        }
        Action::Malformed => {
            s.outcome("malformed");
            reply_json(
                StatusCode::OK,
                "{\"id\": \"broken\", \"choices\": [}, <html>",
            )
        }
        Action::MissingField => {
            s.outcome("missing_field");
            let v = match api {
                Api::Openai => json!({
                    "id": format!("chatcmpl-ts-{seq}"), "object": "chat.completion", "model": model,
                    "choices": [{"index": 0, "finish_reason": "stop"}]
                }),
                Api::Anthropic => json!({
                    "id": format!("msg_ts_{seq}"), "type": "message", "role": "assistant",
                    "model": model, "stop_reason": "end_turn"
                }),
            };
            reply_json(StatusCode::OK, &v.to_string())
        }
    };
    // An endpoint that reflects the caller's key: every `{{presented_key}}` in the
    // scripted answer becomes the key this request presented.
    let mut reply = reply;
    if reply.body.contains(PRESENTED_KEY)
        || reply.headers.iter().any(|(_, v)| v.contains(PRESENTED_KEY))
    {
        let presented = match api {
            Api::Openai => authorization
                .as_deref()
                .and_then(|a| a.strip_prefix("Bearer "))
                .map(str::to_string),
            Api::Anthropic => x_api_key.clone(),
        };
        let presented = presented.as_deref().unwrap_or("");
        reply.body = reply.body.replace(PRESENTED_KEY, presented);
        for (_, v) in &mut reply.headers {
            *v = v.replace(PRESENTED_KEY, presented);
        }
    }
    (Some(reply), latency)
}

fn matches(w: &When, seq: u64, api: Api, text: &str) -> bool {
    w.requests.as_ref().is_none_or(|r| r.contains(&seq))
        && w.api.is_none_or(|a| a == api)
        && w.contains
            .as_ref()
            .is_none_or(|c| text.contains(c.as_str()))
}

/// Whitespace-separated words (the server's token count): `split_whitespace().count()`.
/// ASCII text — nearly every request — is counted eight bytes at a time (the golden
/// exam's conversations are long, and decoding them char by char was 4% of the exam
/// benchmark's instructions); a property test holds it to `split_whitespace`.
fn words(s: &str) -> u64 {
    if !s.is_ascii() {
        return s.split_whitespace().count() as u64;
    }
    const LOW7: u64 = 0x7f7f_7f7f_7f7f_7f7f;
    const HIGH: u64 = 0x8080_8080_8080_8080;
    const fn splat(b: u8) -> u64 {
        u64::from_le_bytes([b; 8])
    }
    // The high bit of each byte of the result is set where the (ASCII) byte is
    // whitespace as `char::is_whitespace` sees it: space, or tab..=carriage return.
    fn spaces(x: u64) -> u64 {
        let t = x ^ splat(b' ');
        let is_space = !(((t & LOW7) + LOW7) | t) & HIGH;
        // (b | 0x80) - 9 cannot borrow across bytes; its low seven bits are < 5 exactly
        // for 9..=13, whose result keeps the high bit.
        let r = (x | HIGH) - splat(9);
        let in_range = r & !((r & LOW7) + splat(0x80 - 5)) & HIGH;
        is_space | in_range
    }
    let mut count = 0u64;
    let mut prev = 1u64; // before the text: as if whitespace
    let mut word = |x: u64| {
        let m = spaces(x);
        // A word starts at a non-space byte whose predecessor is a space.
        let starts = !m & HIGH & ((m << 8) | (prev << 7));
        count += u64::from(starts.count_ones());
        prev = m >> 63;
    };
    let chunks = s.as_bytes().chunks_exact(8);
    let tail = chunks.remainder();
    for c in chunks {
        word(u64::from_le_bytes(c.try_into().expect("eight bytes")));
    }
    // Padded with spaces, which start no word.
    let mut last = [b' '; 8];
    last[..tail.len()].copy_from_slice(tail);
    word(u64::from_le_bytes(last));
    count
}

/// All text of a request's conversation (system, messages, tool results), newline-joined.
fn conversation_text(api: Api, body: &Value) -> String {
    fn content_text(v: &Value, out: &mut Vec<String>) {
        match v {
            Value::String(s) => out.push(s.clone()),
            Value::Array(parts) => {
                for p in parts {
                    if let Some(t) = p.get("text").and_then(Value::as_str) {
                        out.push(t.to_string());
                    }
                    if let Some(c) = p.get("content") {
                        content_text(c, out);
                    }
                }
            }
            _ => {}
        }
    }
    let mut out = Vec::new();
    if api == Api::Anthropic
        && let Some(sys) = body.get("system")
    {
        content_text(sys, &mut out);
    }
    if let Some(msgs) = body.get("messages").and_then(Value::as_array) {
        for m in msgs {
            if let Some(c) = m.get("content") {
                content_text(c, &mut out);
            }
        }
    }
    out.join("\n")
}

/// The system prompt of a request: Anthropic's `system` (a string or text blocks), or
/// the OpenAI system messages, joined by newlines.
fn system_text(api: Api, body: &Value) -> String {
    let text = |v: &Value| match v {
        Value::String(s) => s.clone(),
        Value::Array(blocks) => blocks
            .iter()
            .filter_map(|b| b.get("text").and_then(Value::as_str))
            .collect::<Vec<_>>()
            .join("\n"),
        _ => String::new(),
    };
    match api {
        Api::Anthropic => body.get("system").map(text).unwrap_or_default(),
        Api::Openai => body
            .get("messages")
            .and_then(Value::as_array)
            .map(|ms| {
                ms.iter()
                    .filter(|m| m.get("role").and_then(Value::as_str) == Some("system"))
                    .filter_map(|m| m.get("content").map(text))
                    .collect::<Vec<_>>()
                    .join("\n")
            })
            .unwrap_or_default(),
    }
}

/// The conversation holds a tool result (an OpenAI `tool` message, an Anthropic
/// `tool_result` block).
fn has_tool_result(api: Api, body: &Value) -> bool {
    let msgs = body.get("messages").and_then(Value::as_array);
    msgs.is_some_and(|ms| {
        ms.iter().any(|m| match api {
            Api::Openai => m.get("role").and_then(Value::as_str) == Some("tool"),
            Api::Anthropic => m
                .get("content")
                .and_then(Value::as_array)
                .is_some_and(|bs| {
                    bs.iter()
                        .any(|b| b.get("type").and_then(Value::as_str) == Some("tool_result"))
                }),
        })
    })
}

/// The first check a real API makes that a request fails; `i` is the index in
/// `messages`.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
enum InvalidRequest {
    /// A top-level field (`model`, `max_tokens`).
    #[error("`{0}` is required")]
    Required(&'static str),
    #[error("`messages` must be an array")]
    MessagesNotArray,
    #[error("the anthropic-version header is required")]
    NoVersionHeader,
    #[error("messages[{i}].tool_calls: every call needs an `id`")]
    CallWithoutId { i: usize },
    #[error("messages[{i}].tool_calls: `function.arguments` must be a string")]
    ArgumentsNotString { i: usize },
    #[error("messages[{i}]: a tool message needs `tool_call_id`")]
    NoToolCallId { i: usize },
    #[error("messages[{i}]: tool_call_id `{id}` does not answer any earlier tool call")]
    UnknownToolCallId { i: usize, id: String },
    #[error("messages[{i}]: unknown role `{role}`")]
    UnknownRole { i: usize, role: String },
    #[error(
        "messages[{i}]: role must be user or assistant (system goes top-level), found `{role}`"
    )]
    NotUserOrAssistant { i: usize, role: String },
    #[error("messages[{i}]: `content` is required")]
    NoContent { i: usize },
    #[error("messages[{i}]: text content blocks must be non-empty")]
    EmptyText { i: usize },
    #[error("messages[{i}]: tool_use needs an `id`")]
    ToolUseWithoutId { i: usize },
    #[error("messages[{i}]: tool_use `input` must be an object")]
    ToolUseInput { i: usize },
    #[error("messages[{i}]: tool_result needs `tool_use_id`")]
    NoToolUseId { i: usize },
    #[error("messages[{i}]: tool_use_id `{id}` has no tool_use in the previous assistant turn")]
    UnknownToolUseId { i: usize, id: String },
    /// `block` is the block's `type`, if it has one.
    #[error("messages[{i}]: unexpected content block {block:?} in a {role} turn")]
    UnexpectedBlock {
        i: usize,
        block: Option<String>,
        role: String,
    },
}

/// The checks a real API makes that matter for gauntlet's translation.
fn validate(api: Api, headers: &HeaderMap, body: &Value) -> Result<(), InvalidRequest> {
    use InvalidRequest as E;
    if body.get("model").and_then(Value::as_str).is_none() {
        return Err(E::Required("model"));
    }
    let msgs = body
        .get("messages")
        .and_then(Value::as_array)
        .ok_or(E::MessagesNotArray)?;
    match api {
        Api::Openai => {
            let mut known: Vec<&str> = Vec::new();
            for (i, m) in msgs.iter().enumerate() {
                let role = m.get("role").and_then(Value::as_str).unwrap_or("");
                match role {
                    "system" | "user" | "developer" => {}
                    "assistant" => {
                        if let Some(calls) = m.get("tool_calls").and_then(Value::as_array) {
                            for c in calls {
                                let id = c
                                    .get("id")
                                    .and_then(Value::as_str)
                                    .ok_or(E::CallWithoutId { i })?;
                                if c.pointer("/function/arguments")
                                    .and_then(Value::as_str)
                                    .is_none()
                                {
                                    return Err(E::ArgumentsNotString { i });
                                }
                                known.push(id);
                            }
                        }
                    }
                    "tool" => {
                        let id = m
                            .get("tool_call_id")
                            .and_then(Value::as_str)
                            .ok_or(E::NoToolCallId { i })?;
                        if !known.contains(&id) {
                            return Err(E::UnknownToolCallId {
                                i,
                                id: id.to_string(),
                            });
                        }
                    }
                    other => {
                        return Err(E::UnknownRole {
                            i,
                            role: other.to_string(),
                        });
                    }
                }
            }
        }
        Api::Anthropic => {
            if headers.get("anthropic-version").is_none() {
                return Err(E::NoVersionHeader);
            }
            if body.get("max_tokens").and_then(Value::as_u64).is_none() {
                return Err(E::Required("max_tokens"));
            }
            let mut previous_tool_uses: Vec<&str> = Vec::new();
            for (i, m) in msgs.iter().enumerate() {
                let role = m.get("role").and_then(Value::as_str).unwrap_or("");
                if role != "user" && role != "assistant" {
                    return Err(E::NotUserOrAssistant {
                        i,
                        role: role.to_string(),
                    });
                }
                let blocks: Vec<&Value> = match m.get("content") {
                    Some(Value::Array(b)) => b.iter().collect(),
                    Some(Value::String(_)) => Vec::new(),
                    _ => return Err(E::NoContent { i }),
                };
                let mut uses = Vec::new();
                for b in blocks {
                    match b.get("type").and_then(Value::as_str) {
                        Some("text") => {
                            if b.get("text")
                                .and_then(Value::as_str)
                                .is_none_or(str::is_empty)
                            {
                                return Err(E::EmptyText { i });
                            }
                        }
                        Some("tool_use") if role == "assistant" => {
                            uses.push(
                                b.get("id")
                                    .and_then(Value::as_str)
                                    .ok_or(E::ToolUseWithoutId { i })?,
                            );
                            if !b.get("input").is_some_and(Value::is_object) {
                                return Err(E::ToolUseInput { i });
                            }
                        }
                        Some("tool_result") if role == "user" => {
                            let id = b
                                .get("tool_use_id")
                                .and_then(Value::as_str)
                                .ok_or(E::NoToolUseId { i })?;
                            if !previous_tool_uses.contains(&id) {
                                return Err(E::UnknownToolUseId {
                                    i,
                                    id: id.to_string(),
                                });
                            }
                        }
                        other => {
                            return Err(E::UnexpectedBlock {
                                i,
                                block: other.map(str::to_string),
                                role: role.to_string(),
                            });
                        }
                    }
                }
                previous_tool_uses = uses;
            }
        }
    }
    Ok(())
}

fn openai_envelope(
    seq: u64,
    model: &str,
    message: Value,
    finish: &str,
    input: u64,
    output: u64,
) -> Value {
    json!({
        "id": format!("chatcmpl-ts-{seq}"),
        "object": "chat.completion",
        "created": 0,
        "model": model,
        "choices": [{"index": 0, "message": message, "finish_reason": finish}],
        "usage": {"prompt_tokens": input, "completion_tokens": output, "total_tokens": input + output}
    })
}

fn anthropic_envelope(
    seq: u64,
    model: &str,
    content: Value,
    stop: &str,
    input: u64,
    output: u64,
) -> Value {
    json!({
        "id": format!("msg_ts_{seq}"),
        "type": "message",
        "role": "assistant",
        "model": model,
        "content": content,
        "stop_reason": stop,
        "stop_sequence": null,
        "usage": {"input_tokens": input, "output_tokens": output}
    })
}

fn success(
    api: Api,
    seq: u64,
    model: &str,
    text: &str,
    calls: &[ScriptedCall],
    stop: Option<&str>,
    input: u64,
) -> Value {
    let output = words(text) + calls.len() as u64 * 5;
    match api {
        Api::Openai => {
            let mut message = json!({
                "role": "assistant",
                "content": if text.is_empty() && !calls.is_empty() { Value::Null } else { json!(text) },
                "refusal": null,
            });
            if !calls.is_empty() {
                message["tool_calls"] = calls
                    .iter()
                    .map(|c| {
                        let args = c
                            .raw_arguments
                            .clone()
                            .unwrap_or_else(|| c.arguments.to_string());
                        json!({"id": c.id, "type": "function", "function": {"name": c.name, "arguments": args}})
                    })
                    .collect();
            }
            let finish = stop.unwrap_or(if calls.is_empty() {
                "stop"
            } else {
                "tool_calls"
            });
            openai_envelope(seq, model, message, finish, input, output)
        }
        Api::Anthropic => {
            let mut content = Vec::new();
            if !text.is_empty() {
                content.push(json!({"type": "text", "text": text}));
            }
            for c in calls {
                let input = if c.arguments.is_object() {
                    c.arguments.clone()
                } else {
                    json!({})
                };
                content
                    .push(json!({"type": "tool_use", "id": c.id, "name": c.name, "input": input}));
            }
            let finish = stop.unwrap_or(if calls.is_empty() {
                "end_turn"
            } else {
                "tool_use"
            });
            anthropic_envelope(seq, model, Value::Array(content), finish, input, output)
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    proptest::proptest! {
        /// The ASCII byte loop counts exactly as `split_whitespace` (control bytes and
        /// every whitespace byte included), and non-ASCII text takes the general path.
        #[test]
        fn word_count_equals_split_whitespace(
            s in "[\\x00-\\x7f]{0,200}|[ a\\t\\n\\x0b\\x0c\\r\\x08\\x0e\\x1f\\x7f!]{0,100}|\\PC{0,80}|[a \\t\\u{85}\\u{a0}\\u{2003}\\u{3000}é…]{0,80}"
        ) {
            proptest::prop_assert_eq!(words(&s), s.split_whitespace().count() as u64);
        }
    }

    #[test]
    fn conversation_text_covers_both_formats() {
        let o = json!({"messages": [{"role": "system", "content": "S"}, {"role": "user", "content": [{"type": "text", "text": "U"}]}]});
        assert_eq!(conversation_text(Api::Openai, &o), "S\nU");
        let a = json!({"system": "S", "messages": [{"role": "user", "content": [{"type": "tool_result", "tool_use_id": "t", "content": "R"}]}]});
        assert_eq!(conversation_text(Api::Anthropic, &a), "S\nR");
    }
}
