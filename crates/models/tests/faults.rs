//! Every transport fault, over real HTTP on loopback against the fault-injecting test
//! server, each asserting its exact outcome: retried then succeeded (with the retry
//! count and cause), Retry-After honoured in seconds and as an HTTP-date, 401/403 as a
//! configuration error naming the key's variable, other 4xx as a call error, timeouts and
//! refused connections retried then failed, the concurrency limit and its adaptive
//! back-off and recovery, the https/loopback rule, key handling, and the key never
//! appearing in an error, a Debug dump or the spec.

use crate::common;

use common::{CANARY, env, fast, openai, spec};
use gauntlet_core::message::{ChatRequest, Message, StopReason};
use gauntlet_models::targets::anthropic::AnthropicTarget;
use gauntlet_models::targets::openai_compat::OpenAiCompatTarget;
use gauntlet_models::{Model, ModelError, TransportOptions};
use gauntlet_scripted::{Action, RetryAfter, Rule, Script, ScriptedServer};
use std::sync::Arc;
use std::time::{Duration, Instant};

fn hello() -> ChatRequest {
    ChatRequest {
        messages: vec![Message::user("hello")],
        ..Default::default()
    }
}

fn call_error(r: Result<gauntlet_core::message::ChatResponse, ModelError>) -> String {
    match r {
        Err(ModelError::Call(m)) => m,
        other => panic!("expected a call error, got {other:?}"),
    }
}

fn config_error(r: Result<gauntlet_core::message::ChatResponse, ModelError>) -> String {
    match r {
        Err(ModelError::Config(m)) => m,
        other => panic!("expected a configuration error, got {other:?}"),
    }
}

#[tokio::test]
async fn rate_limit_is_retried_then_succeeds() {
    let server =
        ScriptedServer::start(Script::default().rule(Rule::new(Action::status(429)).times(2)))
            .await
            .unwrap();
    let t = openai(&server.openai_base_url(), "F_429_KEY", "");
    let r = t.chat(&hello()).await.unwrap();
    assert_eq!(r.stop_reason, StopReason::Stop);
    let s = t.transport_stats().unwrap();
    assert_eq!(s.retries_429, 2);
    assert_eq!(s.retries(), 2);
    assert_eq!((s.calls, s.attempts, s.succeeded, s.failed), (1, 3, 1, 0));
    assert_eq!(server.stats().requests, 3);
}

#[tokio::test]
async fn server_errors_are_retried_then_succeed() {
    let server = ScriptedServer::start(
        Script::default()
            .rule(Rule::new(Action::status(500)).on_requests(&[1]))
            .rule(Rule::new(Action::status(502)).on_requests(&[2]))
            .rule(Rule::new(Action::status(503)).on_requests(&[3]))
            .rule(Rule::new(Action::status(504)).on_requests(&[4])),
    )
    .await
    .unwrap();
    let t = openai(&server.openai_base_url(), "F_5XX_KEY", "max_retries: 4");
    t.chat(&hello()).await.unwrap();
    let s = t.transport_stats().unwrap();
    assert_eq!((s.retries_5xx, s.attempts, s.succeeded), (4, 5, 1));
    assert_eq!(s.retries_429 + s.retries_timeout + s.retries_connect, 0);
}

#[tokio::test]
async fn exhausted_retries_fail_with_the_last_cause() {
    let server = ScriptedServer::start(Script::default().rule(Rule::new(Action::status(503))))
        .await
        .unwrap();
    let t = openai(&server.openai_base_url(), "F_EXHAUST_KEY", "max_retries: 1");
    let msg = call_error(t.chat(&hello()).await);
    assert!(msg.contains("HTTP 503"), "{msg}");
    assert!(msg.contains("gave up after 1 retry"), "{msg}");
    let s = t.transport_stats().unwrap();
    assert_eq!((s.retries_5xx, s.attempts, s.failed), (1, 2, 1));
}

#[tokio::test]
async fn retry_after_seconds_is_honoured() {
    let server = ScriptedServer::start(
        Script::default()
            .rule(Rule::new(Action::rate_limited(Some(RetryAfter::Seconds(1)))).times(1)),
    )
    .await
    .unwrap();
    let t = openai(&server.openai_base_url(), "F_RA_KEY", "");
    let start = Instant::now();
    t.chat(&hello()).await.unwrap();
    let elapsed = start.elapsed();
    assert!(elapsed >= Duration::from_secs(1), "{elapsed:?}");
    assert!(elapsed < Duration::from_secs(5), "{elapsed:?}");
    let s = t.transport_stats().unwrap();
    assert_eq!(s.retries_429, 1);
    assert_eq!(s.retry_wait_ms, 1000);
}

#[tokio::test]
async fn retry_after_http_date_is_honoured() {
    let server = ScriptedServer::start(
        Script::default().rule(
            Rule::new(Action::Status {
                code: 503,
                retry_after: Some(RetryAfter::HttpDateIn(1)),
                body: None,
            })
            .times(1),
        ),
    )
    .await
    .unwrap();
    let t = openai(&server.openai_base_url(), "F_RADATE_KEY", "");
    let start = Instant::now();
    t.chat(&hello()).await.unwrap();
    let elapsed = start.elapsed();
    // The date is at least one whole second ahead (second granularity, rounded up).
    assert!(elapsed >= Duration::from_secs(1), "{elapsed:?}");
    assert!(elapsed < Duration::from_secs(5), "{elapsed:?}");
    let s = t.transport_stats().unwrap();
    assert_eq!(s.retries_5xx, 1);
    assert!(s.retry_wait_ms >= 1000, "{s:?}");
}

#[tokio::test]
async fn retry_after_is_capped() {
    let server = ScriptedServer::start(
        Script::default()
            .rule(Rule::new(Action::rate_limited(Some(RetryAfter::Seconds(3600)))).times(1)),
    )
    .await
    .unwrap();
    let s = spec(&format!(
        "{{name: openai_compat, params: {{model: m, base_url: '{}', api_key_env: F_CAP_KEY}}}}",
        server.openai_base_url()
    ));
    let opts = TransportOptions {
        retry_after_cap: Duration::from_millis(200),
        ..fast()
    };
    let t = OpenAiCompatTarget::with_env(&s, &env(&[("F_CAP_KEY", CANARY)]), opts).unwrap();
    let start = Instant::now();
    t.chat(&hello()).await.unwrap();
    assert!(start.elapsed() < Duration::from_secs(3));
    assert_eq!(t.transport_stats().unwrap().retry_wait_ms, 200);
}

#[tokio::test]
async fn unauthorized_is_a_config_error_naming_the_variable() {
    let server = ScriptedServer::start(Script::default().require_key("the-right-key"))
        .await
        .unwrap();
    let t = openai(&server.openai_base_url(), "F_401_KEY", "");
    let msg = config_error(t.chat(&hello()).await);
    assert!(msg.contains("HTTP 401"), "{msg}");
    assert!(msg.contains("check F_401_KEY"), "{msg}");
    assert!(
        !msg.contains(CANARY),
        "the server echoed the key; it must be scrubbed: {msg}"
    );
    let s = t.transport_stats().unwrap();
    assert_eq!(
        (s.attempts, s.retries(), s.failed),
        (1, 0, 1),
        "401 is never retried"
    );
}

#[tokio::test]
async fn other_client_errors_are_call_errors_with_status_and_excerpt() {
    let server = ScriptedServer::start(Script::default().rule(Rule::new(Action::Status {
        code: 404,
        retry_after: None,
        body: Some(r#"{"error": {"message": "The model `test-model` does not exist"}}"#.into()),
    })))
    .await
    .unwrap();
    let t = openai(&server.openai_base_url(), "F_404_KEY", "");
    let msg = call_error(t.chat(&hello()).await);
    assert!(msg.contains("HTTP 404"), "{msg}");
    assert!(msg.contains("does not exist"), "{msg}");
    assert!(msg.contains("/chat/completions"), "{msg}");
    assert_eq!(t.transport_stats().unwrap().attempts, 1);
}

#[tokio::test]
async fn hang_times_out_is_retried_then_fails() {
    let server = ScriptedServer::start(Script::default().rule(Rule::new(Action::Hang)))
        .await
        .unwrap();
    let t = openai(
        &server.openai_base_url(),
        "F_HANG_KEY",
        "timeout_s: 0.3, max_retries: 2",
    );
    let start = Instant::now();
    let msg = call_error(t.chat(&hello()).await);
    let elapsed = start.elapsed();
    assert!(msg.contains("timed out after 0.3 s"), "{msg}");
    assert!(msg.contains("gave up after 2 retries"), "{msg}");
    assert!(elapsed >= Duration::from_millis(900), "{elapsed:?}");
    let s = t.transport_stats().unwrap();
    assert_eq!((s.retries_timeout, s.attempts, s.failed), (2, 3, 1));
    assert_eq!(server.stats().requests, 3);
    assert_eq!(server.stats().outcomes["hang"], 3);
}

#[tokio::test]
async fn refused_connections_are_retried_then_fail() {
    // A port that was free a moment ago and has nobody listening now.
    let port = {
        let l = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
        l.local_addr().unwrap().port()
    };
    let t = openai(
        &format!("http://127.0.0.1:{port}/v1"),
        "F_CONN_KEY",
        "max_retries: 2",
    );
    let msg = call_error(t.chat(&hello()).await);
    assert!(msg.contains(&format!("127.0.0.1:{port}")), "{msg}");
    assert!(msg.contains("gave up after 2 retries"), "{msg}");
    let s = t.transport_stats().unwrap();
    assert_eq!((s.retries_connect, s.attempts, s.failed), (2, 3, 1));
}

async fn burst(t: &Arc<OpenAiCompatTarget>, n: usize) -> Vec<Result<String, ModelError>> {
    let mut handles = Vec::new();
    for i in 0..n {
        let t = t.clone();
        handles.push(tokio::spawn(async move {
            let req = ChatRequest {
                messages: vec![Message::user(format!("request {i}"))],
                ..Default::default()
            };
            t.chat(&req).await.map(|r| r.content)
        }));
    }
    let mut out = Vec::new();
    for h in handles {
        out.push(h.await.unwrap());
    }
    out
}

#[tokio::test]
async fn max_concurrency_bounds_requests_in_flight() {
    let server = ScriptedServer::start(Script::default().latency_ms(100))
        .await
        .unwrap();
    let t = Arc::new(openai(
        &server.openai_base_url(),
        "F_CONC_KEY",
        "max_concurrency: 3",
    ));
    let results = burst(&t, 12).await;
    assert!(results.iter().all(Result::is_ok));
    let st = server.stats();
    assert_eq!(st.requests, 12);
    assert_eq!(st.max_in_flight, 3, "{st:?}");
    assert_eq!(t.transport_stats().unwrap().concurrency_limit, Some(3));
}

#[tokio::test]
async fn adaptive_concurrency_backs_off_on_429_and_recovers() {
    let server = ScriptedServer::start(
        Script::default()
            .latency_ms(200)
            .rule(Rule::new(Action::rate_limited(Some(RetryAfter::Seconds(0)))).times(8)),
    )
    .await
    .unwrap();
    let s = spec(&format!(
        "{{name: openai_compat, params: {{model: m, base_url: '{}', api_key_env: F_AIMD_KEY, max_concurrency: 8}}}}",
        server.openai_base_url()
    ));
    let opts = TransportOptions {
        increase_after: 4,
        ..fast()
    };
    let t =
        Arc::new(OpenAiCompatTarget::with_env(&s, &env(&[("F_AIMD_KEY", CANARY)]), opts).unwrap());

    // A wave of 8 concurrent requests, all rate limited: the limit halves once (8 → 4),
    // not once per 429, and the retries go out at most 4 (+1 after 4 successes) at a time.
    let results = burst(&t, 8).await;
    assert!(results.iter().all(Result::is_ok), "{results:?}");
    let reqs = server.requests();
    assert_eq!(reqs.len(), 16);
    let first_wave = reqs
        .iter()
        .filter(|r| r.seq <= 8)
        .map(|r| r.in_flight_at_arrival)
        .max();
    let retries = reqs
        .iter()
        .filter(|r| r.seq > 8)
        .map(|r| r.in_flight_at_arrival)
        .max();
    assert_eq!(first_wave, Some(8));
    assert!(retries.unwrap() <= 5, "retries in flight: {retries:?}");
    let st = t.transport_stats().unwrap();
    assert_eq!(st.retries_429, 8);
    assert_eq!(st.concurrency_decreases, 1);
    assert_eq!(
        st.concurrency_limit,
        Some(6),
        "4, then +1 per 4 successes: {st:?}"
    );

    // Recovery: 8 more successes raise it back to the configured maximum and no further.
    for _ in 0..12 {
        t.chat(&hello()).await.unwrap();
    }
    assert_eq!(t.transport_stats().unwrap().concurrency_limit, Some(8));
}

#[test]
fn plain_http_to_a_non_loopback_host_is_refused() {
    let e = env(&[("K", CANARY)]);
    for (name, base) in [
        ("openai_compat", "http://example.com/v1"),
        ("openai_compat", "http://10.0.0.7:8000/v1"),
        ("anthropic", "http://api.anthropic.com"),
        ("anthropic", "http://192.168.0.2"),
    ] {
        let s = spec(&format!(
            "{{name: {name}, params: {{model: m, base_url: '{base}', api_key_env: K}}}}"
        ));
        let err = match name {
            "openai_compat" => OpenAiCompatTarget::with_env(&s, &e, fast()).map(|_| ()),
            _ => AnthropicTarget::with_env(&s, &e, fast()).map(|_| ()),
        }
        .unwrap_err();
        let ModelError::Config(msg) = &err else {
            panic!("{err:?}")
        };
        assert!(msg.contains("plain http"), "{msg}");
    }
    for (name, base) in [
        ("openai_compat", "https://example.com/v1"),
        ("openai_compat", "http://localhost:8000/v1"),
        ("openai_compat", "http://[::1]:8000/v1"),
        ("anthropic", "https://api.anthropic.com"),
        ("anthropic", "http://127.0.0.1:9"),
    ] {
        let s = spec(&format!(
            "{{name: {name}, params: {{model: m, base_url: '{base}', api_key_env: K}}}}"
        ));
        match name {
            "openai_compat" => OpenAiCompatTarget::with_env(&s, &e, fast()).map(|_| ()),
            _ => AnthropicTarget::with_env(&s, &e, fast()).map(|_| ()),
        }
        .unwrap_or_else(|err| panic!("{base}: {err}"));
    }
}

#[test]
fn base_url_mistakes_are_config_errors() {
    let e = env(&[("K", CANARY)]);
    let s = spec(
        "{name: openai_compat, params: {model: m, base_url: 'https://x.example/v1/chat/completions', api_key_env: K}}",
    );
    let msg = OpenAiCompatTarget::with_env(&s, &e, fast())
        .unwrap_err()
        .to_string();
    assert!(msg.contains("give the base only"), "{msg}");
    let s = spec(
        "{name: anthropic, params: {model: m, base_url: 'https://x.example/v1', api_key_env: K}}",
    );
    let msg = AnthropicTarget::with_env(&s, &e, fast())
        .unwrap_err()
        .to_string();
    assert!(msg.contains("ends in /v1"), "{msg}");
    let s = spec(
        "{name: openai_compat, params: {model: m, base_url: 'https://u:p@x.example/v1', api_key_env: K}}",
    );
    let msg = OpenAiCompatTarget::with_env(&s, &e, fast())
        .unwrap_err()
        .to_string();
    assert!(msg.contains("must not embed credentials"), "{msg}");
}

#[tokio::test]
async fn keys_come_from_the_named_variable_only() {
    let server = ScriptedServer::start(Script::default()).await.unwrap();
    let remote = "{name: openai_compat, params: {model: m, base_url: 'https://api.example.com/v1', api_key_env: MY_KEY_VAR}}";

    // Unset or empty: a configuration error that names the variable.
    let msg = OpenAiCompatTarget::with_env(&spec(remote), &env(&[]), fast())
        .unwrap_err()
        .to_string();
    assert!(
        msg.starts_with("configuration error") && msg.contains("MY_KEY_VAR is not set"),
        "{msg}"
    );
    let msg = OpenAiCompatTarget::with_env(&spec(remote), &env(&[("MY_KEY_VAR", " ")]), fast())
        .unwrap_err()
        .to_string();
    assert!(
        msg.contains("MY_KEY_VAR") && msg.contains("is empty"),
        "{msg}"
    );
    let ant = "{name: anthropic, params: {model: m}}";
    let msg = AnthropicTarget::with_env(&spec(ant), &env(&[]), fast())
        .unwrap_err()
        .to_string();
    assert!(
        msg.contains("ANTHROPIC_API_KEY is not set"),
        "default variable: {msg}"
    );

    // A loopback OpenAI-compatible server may run keyless when the variable is unset…
    let local = spec(&format!(
        "{{name: openai_compat, params: {{model: m, base_url: '{}', api_key_env: MY_KEY_VAR}}}}",
        server.openai_base_url()
    ));
    let t = OpenAiCompatTarget::with_env(&local, &env(&[]), fast()).unwrap();
    t.chat(&hello()).await.unwrap();
    assert_eq!(server.last_request().unwrap().authorization, None);
    // …but not when it is set and empty, and an Anthropic target never does.
    assert!(OpenAiCompatTarget::with_env(&local, &env(&[("MY_KEY_VAR", "")]), fast()).is_err());
    let local_ant = spec(&format!(
        "{{name: anthropic, params: {{model: m, base_url: '{}', api_key_env: MY_KEY_VAR}}}}",
        server.url()
    ));
    assert!(AnthropicTarget::with_env(&local_ant, &env(&[]), fast()).is_err());
}

#[tokio::test]
async fn base_url_falls_back_to_the_environment_and_keys_the_spec() {
    let server = ScriptedServer::start(Script::default()).await.unwrap();
    let e = env(&[
        ("OPENAI_BASE_URL", &server.openai_base_url()),
        ("ANTHROPIC_BASE_URL", &server.url()),
        ("OPENAI_API_KEY", CANARY),
        ("ANTHROPIC_API_KEY", CANARY),
    ]);
    let t = OpenAiCompatTarget::with_env(
        &spec("{name: openai_compat, params: {model: m}}"),
        &e,
        fast(),
    )
    .unwrap();
    t.chat(&hello()).await.unwrap();
    assert_eq!(
        t.spec().params.str("base_url"),
        Some(server.openai_base_url().as_str())
    );
    let a = AnthropicTarget::with_env(&spec("{name: anthropic, params: {model: m}}"), &e, fast())
        .unwrap();
    a.chat(&hello()).await.unwrap();
    assert_eq!(a.spec().params.str("base_url"), Some(server.url().as_str()));
    assert_eq!(server.stats().openai, 1);
    assert_eq!(server.stats().anthropic, 1);
    // An explicit param wins over the environment.
    let t = OpenAiCompatTarget::with_env(
        &spec("{name: openai_compat, params: {model: m, base_url: 'https://api.example.com/v1'}}"),
        &e,
        fast(),
    )
    .unwrap();
    assert_eq!(
        t.spec().params.str("base_url"),
        Some("https://api.example.com/v1")
    );
}

#[tokio::test]
async fn the_key_never_appears_in_errors_debug_or_the_spec() {
    let server = ScriptedServer::start(
        Script::default()
            .rule(Rule::new(Action::status(401)).when_contains("auth"))
            .rule(Rule::new(Action::status(403)).when_contains("perm"))
            .rule(
                Rule::new(Action::Status {
                    code: 400,
                    retry_after: None,
                    body: Some(format!(
                        "{{\"error\": \"bad key {CANARY} for this model\"}}"
                    )),
                })
                .when_contains("bad"),
            )
            .rule(
                Rule::new(Action::Status {
                    code: 503,
                    retry_after: None,
                    body: Some(format!("overloaded; your key {CANARY}")),
                })
                .when_contains("busy"),
            ),
    )
    .await
    .unwrap();
    let o = openai(&server.openai_base_url(), "F_LEAK_KEY", "max_retries: 1");
    let a = common::anthropic(&server.url(), "F_LEAK_KEY", "max_retries: 1");
    let mut texts = vec![format!("{o:?}"), format!("{a:?}")];
    texts.push(o.spec().identity().to_string());
    texts.push(a.spec().identity().to_string());
    for prompt in ["auth", "perm", "bad", "busy"] {
        let req = ChatRequest {
            messages: vec![Message::user(prompt)],
            ..Default::default()
        };
        for r in [o.chat(&req).await, a.chat(&req).await] {
            let e = r.unwrap_err();
            texts.push(e.to_string());
            texts.push(format!("{e:?}"));
            texts.push(serde_json::to_string(&e).unwrap());
        }
    }
    for t in &texts {
        assert!(!t.contains(CANARY), "key leaked: {t}");
        assert!(!t.contains("CANARY"), "key fragment leaked: {t}");
    }
    // The key was really sent (so the test proves scrubbing, not absence).
    assert!(
        server
            .requests()
            .iter()
            .any(|r| r.x_api_key.as_deref() == Some(CANARY))
    );
    assert!(texts.iter().any(|t| t.contains("[redacted]")));
}
