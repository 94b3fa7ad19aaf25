//! The test server checked from the outside over HTTP: health, stats and request-log
//! endpoints (the log never serves credentials), the default deterministic answers in
//! both wire formats, the scripted faults' raw wire shapes (Retry-After forms, truncated
//! and malformed bodies, missing fields), request validation, and the binary's
//! `listening on` line.

use gauntlet_scripted::{Action, Api, RetryAfter, Rule, Script, ScriptedServer};
use serde_json::{Value, json};
use std::io::{BufRead, BufReader};
use std::process::{Command, Stdio};

fn client() -> reqwest::Client {
    let _ = rustls::crypto::ring::default_provider().install_default();
    reqwest::Client::new()
}

async fn post(
    c: &reqwest::Client,
    url: String,
    body: Value,
) -> (u16, reqwest::header::HeaderMap, String) {
    let r = c
        .post(url)
        .header("authorization", "Bearer sk-secret-test")
        .header("x-api-key", "sk-secret-test")
        .header("anthropic-version", "2023-06-01")
        .json(&body)
        .send()
        .await
        .unwrap();
    let status = r.status().as_u16();
    let headers = r.headers().clone();
    (status, headers, r.text().await.unwrap())
}

fn chat(prompt: &str) -> Value {
    json!({"model": "m", "max_tokens": 16, "messages": [{"role": "user", "content": prompt}]})
}

#[tokio::test]
async fn default_answers_stats_and_log() {
    let s = ScriptedServer::start(Script::default()).await.unwrap();
    let c = client();
    assert_eq!(
        c.get(format!("{}/health", s.url()))
            .send()
            .await
            .unwrap()
            .text()
            .await
            .unwrap(),
        "ok"
    );
    let (st, _, body) = post(
        &c,
        format!("{}/chat/completions", s.openai_base_url()),
        chat("hello"),
    )
    .await;
    assert_eq!(st, 200);
    let v: Value = serde_json::from_str(&body).unwrap();
    assert_eq!(
        v["choices"][0]["message"]["content"],
        gauntlet_scripted::DEFAULT_COMPLIANCE_TEXT
    );
    assert_eq!(v["usage"]["prompt_tokens"], 1);
    let (_, _, body) = post(
        &c,
        format!("{}/v1/messages", s.url()),
        chat("a FORBIDDEN thing"),
    )
    .await;
    let v: Value = serde_json::from_str(&body).unwrap();
    assert_eq!(
        v["content"][0]["text"],
        gauntlet_scripted::DEFAULT_REFUSAL_TEXT
    );
    assert_eq!(v["stop_reason"], "end_turn");

    let stats: Value = c
        .get(format!("{}/stats", s.url()))
        .send()
        .await
        .unwrap()
        .json()
        .await
        .unwrap();
    assert_eq!(stats["requests"], 2);
    assert_eq!(stats["openai"], 1);
    assert_eq!(stats["anthropic"], 1);
    assert_eq!(stats["outcomes"]["ok"], 2);
    let log = c
        .get(format!("{}/requests", s.url()))
        .send()
        .await
        .unwrap()
        .text()
        .await
        .unwrap();
    assert!(log.contains("a FORBIDDEN thing"));
    assert!(
        !log.contains("sk-secret-test"),
        "credentials are never served: {log}"
    );
    assert_eq!(
        s.requests()[0].authorization.as_deref(),
        Some("Bearer sk-secret-test")
    );
    s.reset();
    assert_eq!(s.stats().requests, 0);
    assert!(s.requests().is_empty());
    s.shutdown().await;
}

#[tokio::test]
async fn scripted_faults_on_the_wire() {
    let s = ScriptedServer::start(
        Script::default()
            .rule(Rule::new(Action::rate_limited(Some(RetryAfter::Seconds(3)))).on_requests(&[1]))
            .rule(
                Rule::new(Action::Status {
                    code: 503,
                    retry_after: Some(RetryAfter::HttpDateIn(5)),
                    body: None,
                })
                .on_requests(&[2]),
            )
            .rule(Rule::new(Action::Truncated).on_requests(&[3]))
            .rule(Rule::new(Action::Malformed).on_requests(&[4]))
            .rule(
                Rule::new(Action::MissingField)
                    .on_requests(&[5])
                    .api(Api::Anthropic),
            )
            .rule(
                Rule::new(Action::status(529))
                    .times(1)
                    .when_contains("busy"),
            ),
    )
    .await
    .unwrap();
    let c = client();
    let o = format!("{}/chat/completions", s.openai_base_url());
    let (st, h, _) = post(&c, o.clone(), chat("x")).await;
    assert_eq!((st, h["retry-after"].to_str().unwrap()), (429, "3"));
    let (st, h, _) = post(&c, o.clone(), chat("x")).await;
    assert_eq!(st, 503);
    let when = httpdate::parse_http_date(h["retry-after"].to_str().unwrap()).unwrap();
    let ahead = when
        .duration_since(std::time::SystemTime::now())
        .unwrap()
        .as_secs_f64();
    assert!((4.9..=6.1).contains(&ahead), "{ahead}");
    let (st, _, body) = post(&c, o.clone(), chat("x")).await;
    assert_eq!(st, 200);
    assert!(serde_json::from_str::<Value>(&body).is_err() && body.starts_with("{\""));
    let (_, _, body) = post(&c, o.clone(), chat("x")).await;
    assert!(serde_json::from_str::<Value>(&body).is_err());
    let (_, _, body) = post(&c, format!("{}/v1/messages", s.url()), chat("x")).await;
    let v: Value = serde_json::from_str(&body).unwrap();
    assert!(v.get("content").is_none() && v["type"] == "message");
    let (st, _, body) = post(&c, format!("{}/v1/messages", s.url()), chat("busy")).await;
    assert_eq!(st, 529);
    assert!(body.contains("overloaded_error"));
    let (st, _, _) = post(&c, format!("{}/v1/messages", s.url()), chat("busy")).await;
    assert_eq!(st, 200, "`times: 1` rules fire once");
    let stats = s.stats();
    assert_eq!(stats.outcomes["status_429"], 1);
    assert_eq!(stats.outcomes["truncated"], 1);
    assert_eq!(stats.outcomes["missing_field"], 1);
}

#[tokio::test]
async fn requests_are_validated_like_the_real_apis() {
    let s = ScriptedServer::start(Script::default()).await.unwrap();
    let c = client();
    // Anthropic: system is not a message role; tool_result must answer a tool_use.
    let (st, _, body) = post(
        &c,
        format!("{}/v1/messages", s.url()),
        json!({"model": "m", "max_tokens": 5, "messages": [{"role": "system", "content": "x"}]}),
    )
    .await;
    assert_eq!(st, 400, "{body}");
    let (st, _, body) = post(
        &c,
        format!("{}/v1/messages", s.url()),
        json!({"model": "m", "max_tokens": 5, "messages": [
            {"role": "user", "content": [{"type": "tool_result", "tool_use_id": "toolu_x", "content": "r"}]}]}),
    )
    .await;
    assert_eq!(st, 400);
    assert!(body.contains("toolu_x"), "{body}");
    // OpenAI: tool messages need a matching tool_call_id.
    let (st, _, _) = post(
        &c,
        format!("{}/chat/completions", s.openai_base_url()),
        json!({"model": "m", "messages": [
            {"role": "assistant", "content": null, "tool_calls": [{"id": "call_1", "type": "function", "function": {"name": "f", "arguments": "{}"}}]},
            {"role": "tool", "tool_call_id": "call_1", "content": "ok"}]}),
    )
    .await;
    assert_eq!(st, 200);
    let (st, _, _) = post(
        &c,
        format!("{}/chat/completions", s.openai_base_url()),
        json!({"model": "m", "messages": [{"role": "tool", "content": "ok"}]}),
    )
    .await;
    assert_eq!(st, 400);
    assert_eq!(s.stats().outcomes["bad_request"], 3);
}

#[tokio::test]
async fn binds_loopback_only() {
    let e = ScriptedServer::start_on("0.0.0.0:0".parse().unwrap(), Script::default()).await;
    assert!(e.is_err());
}

#[tokio::test]
async fn the_binary_prints_its_address_and_serves() {
    let dir = std::env::temp_dir().join(format!("gauntlet-scripted-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let script = dir.join("script.json");
    std::fs::write(&script, r#"{"compliance_text": "from the script file"}"#).unwrap();
    let mut child = Command::new(env!("CARGO_BIN_EXE_gauntlet-scripted"))
        .arg("--script")
        .arg(&script)
        .stdout(Stdio::piped())
        .spawn()
        .unwrap();
    let mut line = String::new();
    BufReader::new(child.stdout.take().unwrap())
        .read_line(&mut line)
        .unwrap();
    let url = line
        .trim()
        .strip_prefix("listening on ")
        .expect(&line)
        .to_string();
    assert!(url.starts_with("http://127.0.0.1:"), "{url}");
    let c = client();
    let (st, _, body) = post(&c, format!("{url}/v1/chat/completions"), chat("hi")).await;
    child.kill().unwrap();
    child.wait().unwrap();
    let _ = std::fs::remove_dir_all(&dir);
    assert_eq!(st, 200);
    assert!(body.contains("from the script file"), "{body}");
}

/// A responder answers what no rule matched, from the request's scope (`/s/<i>/`), its
/// system prompt and its tool state, in both wire formats; rules still come first,
/// requests are still validated and counted, and `None` answers 404.
#[tokio::test]
async fn a_responder_answers_per_scope_from_the_system_prompt() {
    use gauntlet_scripted::{Prompt, Responder, Rule, ScriptedCall};
    let responder: Responder = std::sync::Arc::new(|p: &Prompt<'_>| {
        let scope = p.scope?;
        if scope > 1 {
            return None;
        }
        Some(if p.tools_offered && !p.tool_result_present {
            Action::tool_calls(vec![ScriptedCall::new("call_0", "lookup", json!({}))])
        } else {
            Action::reply(format!("scope {scope} {:?} system [{}]", p.api, p.system))
        })
    });
    let script = Script::default().rule(Rule::new(Action::status(503)).when_contains("boom"));
    let s = ScriptedServer::start_with_responder(script, responder)
        .await
        .unwrap();
    let c = client();
    let anthropic = |scope: usize, extra: Value| {
        let mut b = json!({"model": "m", "max_tokens": 16, "system": [{"type": "text", "text": "SYS A"}],
                           "messages": [{"role": "user", "content": "hi"}]});
        b.as_object_mut()
            .unwrap()
            .extend(extra.as_object().unwrap().clone());
        (format!("{}/s/{scope}/v1/messages", s.url()), b)
    };
    let (u, b) = anthropic(1, json!({}));
    let (st, _, body) = post(&c, u, b).await;
    assert_eq!(st, 200, "{body}");
    let v: Value = serde_json::from_str(&body).unwrap();
    assert_eq!(v["content"][0]["text"], "scope 1 Anthropic system [SYS A]");
    // Tools offered, no result yet: the responder's tool calls on the wire.
    let (u, b) = anthropic(
        0,
        json!({"tools": [{"name": "lookup", "input_schema": {"type": "object"}}]}),
    );
    let (st, _, body) = post(&c, u, b).await;
    assert_eq!(st, 200, "{body}");
    let v: Value = serde_json::from_str(&body).unwrap();
    assert_eq!(v["stop_reason"], "tool_use", "{v}");
    assert_eq!(v["content"][0]["name"], "lookup");
    // OpenAI on a scoped path; the system messages are the system prompt.
    let (st, _, body) = post(
        &c,
        format!("{}/s/0/v1/chat/completions", s.url()),
        json!({"model": "m", "messages": [{"role": "system", "content": "SYS O"}, {"role": "user", "content": "hi"}]}),
    )
    .await;
    assert_eq!(st, 200, "{body}");
    let v: Value = serde_json::from_str(&body).unwrap();
    assert_eq!(
        v["choices"][0]["message"]["content"],
        "scope 0 Openai system [SYS O]"
    );
    // A rule still comes first; an unknown scope is a 404; the plain paths have no scope.
    let (u, mut b) = anthropic(0, json!({}));
    b["messages"][0]["content"] = json!("boom");
    assert_eq!(post(&c, u, b).await.0, 503);
    let (u, b) = anthropic(7, json!({}));
    assert_eq!(post(&c, u, b).await.0, 404);
    assert_eq!(
        post(&c, format!("{}/v1/messages", s.url()), chat("hi"))
            .await
            .0,
        404
    );
    // Validated like the real API: no max_tokens is a 400 before the responder.
    let (u, mut b) = anthropic(0, json!({}));
    b.as_object_mut().unwrap().remove("max_tokens");
    assert_eq!(post(&c, u, b).await.0, 400);
    assert_eq!(s.stats().requests, 7);
}
