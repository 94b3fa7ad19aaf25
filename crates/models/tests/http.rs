//! The `http` target over real HTTP on loopback, against an application of this test's
//! own (axum): body templates (JSON, form, text) with every placeholder, secret headers
//! from the environment that never leak, reply extraction by pointer and regex, SSE,
//! server-side sessions (continued, rolled back and rebuilt) and client-side history,
//! status codes mapped to outcomes, and hostile replies: wrong content type, HTML error
//! pages, a 50 MB body, a pointer that matches nothing, an endless stream, an event that
//! never ends.

use crate::common;

use axum::Router;
use axum::body::Body;
use axum::extract::State;
use axum::http::Uri;
use axum::http::{HeaderMap, StatusCode};
use axum::response::{IntoResponse, Response};
use axum::routing::post;
use common::{env, fast, spec, try_spec};
use gauntlet_core::message::{ChatRequest, ChatResponse, Message};
use gauntlet_models::targets::http::HttpTarget;
use gauntlet_models::{Model, ModelError, TransportOptions};
use serde_json::{Value, json};
use std::collections::HashMap;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

const SECRET: &str = "Bearer CANARY-app-token-5550123";

/// What the application saw.
#[derive(Default)]
struct Seen {
    requests: Mutex<Vec<(HeaderMap, Vec<u8>)>>,
    sessions: Mutex<HashMap<String, Vec<String>>>,
    hits: AtomicUsize,
    next: AtomicUsize,
}

type S = Arc<Seen>;

fn record(s: &Seen, h: &HeaderMap, body: &[u8]) {
    s.hits.fetch_add(1, Ordering::Relaxed);
    s.requests.lock().unwrap().push((h.clone(), body.to_vec()));
}

/// `/chat`: {message, session} → {answer, session, usage}; the answer names the turn
/// number of the session's history and echoes the message.
async fn chat(State(s): State<S>, h: HeaderMap, body: axum::body::Bytes) -> Response {
    record(&s, &h, &body);
    if h.get("authorization").and_then(|v| v.to_str().ok()) != Some(SECRET) {
        return (
            StatusCode::UNAUTHORIZED,
            format!("bad token {:?}", h.get("authorization")),
        )
            .into_response();
    }
    let v: Value = serde_json::from_slice(&body).unwrap();
    let msg = v["message"].as_str().unwrap_or("").to_string();
    let sid = match v["session"].as_str().filter(|s| !s.is_empty()) {
        Some(s) => s.to_string(),
        None => format!("s{}", s.next.fetch_add(1, Ordering::Relaxed)),
    };
    let mut sessions = s.sessions.lock().unwrap();
    let hist = sessions.entry(sid.clone()).or_default();
    hist.push(msg.clone());
    let answer = format!("turn {}: {}", hist.len(), msg);
    axum::Json(json!({"data": {"answer": answer}, "session": sid, "usage": {"in": 3, "out": 2}}))
        .into_response()
}

/// `/history`: client-side history, {history: [...]} → {reply: {text}}.
async fn history(State(s): State<S>, h: HeaderMap, body: axum::body::Bytes) -> Response {
    record(&s, &h, &body);
    let v: Value = serde_json::from_slice(&body).unwrap();
    let n = v["history"].as_array().map_or(0, Vec::len);
    let sys = v["sys"].as_str().unwrap_or("").to_string();
    axum::Json(json!({"reply": {"text": format!("{n} messages; system={sys}")}})).into_response()
}

/// `/form` (form body) and `/text` (text body): text replies.
async fn form(State(s): State<S>, h: HeaderMap, body: axum::body::Bytes) -> Response {
    record(&s, &h, &body);
    let pairs: HashMap<String, String> = url::form_urlencoded::parse(&body).into_owned().collect();
    (
        [("content-type", "text/plain")],
        format!("noise\nANSWER: {}\nmore", pairs["q"]),
    )
        .into_response()
}

async fn header_session(State(s): State<S>, h: HeaderMap, body: axum::body::Bytes) -> Response {
    record(&s, &h, &body);
    let sid = h
        .get("x-session")
        .and_then(|v| v.to_str().ok())
        .filter(|v| !v.is_empty())
        .map(str::to_string)
        .unwrap_or_else(|| format!("h{}", s.next.fetch_add(1, Ordering::Relaxed)));
    let v: Value = serde_json::from_slice(&body).unwrap();
    let mut sessions = s.sessions.lock().unwrap();
    let hist = sessions.entry(sid.clone()).or_default();
    hist.push(v["m"].as_str().unwrap_or("").to_string());
    (
        [("x-session", sid.as_str())],
        axum::Json(json!({"a": format!("turn {}", hist.len())})),
    )
        .into_response()
}

/// SSE: `/sse?mode=ok|nodone|endless|html|longline|nomatch`.
async fn sse(State(s): State<S>, uri: Uri, h: HeaderMap, body: axum::body::Bytes) -> Response {
    record(&s, &h, &body);
    let q = query(&uri);
    let mode = q.get("mode").map(String::as_str).unwrap_or("ok");
    let ev = |d: &str| format!("data: {d}\n\n");
    let text = match mode {
        "ok" => [
            ": keepalive\n\n".to_string(),
            "event: meta\ndata: {\"session\": \"sse-1\"}\n\n".to_string(),
            ev(r#"{"delta": "Hel"}"#),
            ev(r#"{"delta": "lo"}"#),
            ev(r#"{"usage": {"in": 5, "out": 2}}"#),
            ev("[DONE]"),
            ev(r#"{"delta": "AFTER DONE"}"#),
        ]
        .concat(),
        "nodone" => [ev(r#"{"delta": "a"}"#), ev(r#"{"delta": "b"}"#)].concat(),
        "nomatch" => [ev(r#"{"other": "a"}"#), ev("[DONE]")].concat(),
        "notjson" => [ev("plain words"), ev("[DONE]")].concat(),
        "html" => {
            return (
                [("content-type", "text/html")],
                "<html><body>Gateway error</body></html>",
            )
                .into_response();
        }
        "endless" => {
            let stream = futures_util::stream::unfold(0u64, |n| async move {
                tokio::time::sleep(Duration::from_millis(5)).await;
                Some((
                    Ok::<_, std::io::Error>(format!("data: {{\"delta\": \"{n}\"}}\n\n")),
                    n + 1,
                ))
            });
            return Response::builder()
                .header("content-type", "text/event-stream")
                .body(Body::from_stream(stream))
                .unwrap();
        }
        "longline" => {
            // One event that never ends: 1 MiB chunks without a newline, forever.
            let chunk = "x".repeat(1 << 20);
            let stream = futures_util::stream::unfold(chunk, |c| async move {
                Some((Ok::<_, std::io::Error>(c.clone()), c))
            });
            return Response::builder()
                .header("content-type", "text/event-stream")
                .body(Body::from_stream(futures_util::StreamExt::chain(
                    futures_util::stream::once(async {
                        Ok::<_, std::io::Error>("data: ".to_string())
                    }),
                    stream,
                )))
                .unwrap();
        }
        _ => unreachable!(),
    };
    ([("content-type", "text/event-stream")], text).into_response()
}

/// Hostile and failing replies: `/fault?kind=…`.
async fn fault(State(s): State<S>, uri: Uri, h: HeaderMap, body: axum::body::Bytes) -> Response {
    record(&s, &h, &body);
    let q = query(&uri);
    let n = s.hits.load(Ordering::Relaxed);
    match q.get("kind").map(String::as_str).unwrap_or("") {
        "html200" => (
            [("content-type", "text/html")],
            "<!DOCTYPE html><html><head><title>Login</title></head><body>Please sign in</body></html>",
        )
            .into_response(),
        "html500" => (
            StatusCode::INTERNAL_SERVER_ERROR,
            [("content-type", "text/html")],
            "<html><body><h1>500 Internal Server Error</h1>nginx</body></html>",
        )
            .into_response(),
        "404" => (StatusCode::NOT_FOUND, "no such route").into_response(),
        "422" => (StatusCode::UNPROCESSABLE_ENTITY, "field `message` missing").into_response(),
        "echo401" => (
            StatusCode::UNAUTHORIZED,
            format!(
                "rejected {}",
                h.get("authorization").and_then(|v| v.to_str().ok()).unwrap_or("")
            ),
        )
            .into_response(),
        "429then" if n <= 2 => (
            StatusCode::TOO_MANY_REQUESTS,
            [("retry-after", "1")],
            "slow down",
        )
            .into_response(),
        "429then" => axum::Json(json!({"answer": "finally"})).into_response(),
        "huge" => {
            let mut b = Vec::with_capacity(50 << 20);
            b.extend_from_slice(b"{\"answer\": \"");
            b.resize(50 << 20, b'a');
            b.extend_from_slice(b"\"}");
            ([("content-type", "application/json")], b).into_response()
        }
        "nomatch" => axum::Json(json!({"result": {"text": "hi"}})).into_response(),
        "object" => axum::Json(json!({"answer": {"text": "hi"}})).into_response(),
        "wrongtype" => ([("content-type", "application/json")], "answer=hi").into_response(),
        other => panic!("unknown fault {other}"),
    }
}

fn query(uri: &Uri) -> HashMap<String, String> {
    url::form_urlencoded::parse(uri.query().unwrap_or("").as_bytes())
        .into_owned()
        .collect()
}

async fn start() -> (String, S, tokio::task::JoinHandle<()>) {
    let state: S = Arc::default();
    let app = Router::new()
        .route("/chat", post(chat))
        .route("/history", post(history))
        .route("/form", post(form))
        .route("/hsession", post(header_session))
        .route("/sse", post(sse))
        .route("/fault", post(fault).get(fault))
        .with_state(state.clone());
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = listener.local_addr().unwrap();
    let h = tokio::spawn(async move {
        axum::serve(listener, app).await.unwrap();
    });
    (format!("http://{addr}"), state, h)
}

fn target(yaml: &str, opts: TransportOptions) -> HttpTarget {
    HttpTarget::with_env(&spec(yaml), &env(&[("APP_AUTH", SECRET)]), opts)
        .unwrap_or_else(|e| panic!("{yaml}: {e}"))
}

fn user(t: &str) -> ChatRequest {
    ChatRequest {
        messages: vec![Message::user(t)],
        ..Default::default()
    }
}

fn convo(turns: &[(&str, &str)], last: &str) -> ChatRequest {
    let mut messages = vec![Message::system("be helpful")];
    for (u, a) in turns {
        messages.push(Message::user(*u));
        messages.push(Message::assistant(*a));
    }
    messages.push(Message::user(last));
    ChatRequest {
        messages,
        seed: Some(7),
        ..Default::default()
    }
}

fn call_error(r: Result<ChatResponse, ModelError>) -> String {
    match r {
        Err(ModelError::Call(m)) => m,
        other => panic!("expected a call error, got {other:?}"),
    }
}

fn config_error(r: Result<ChatResponse, ModelError>) -> String {
    match r {
        Err(ModelError::Config(m)) => m,
        other => panic!("expected a configuration error, got {other:?}"),
    }
}

fn chat_target(base: &str) -> HttpTarget {
    target(
        &format!(
            "{{name: http, params: {{name: bot, url: '{base}/chat', header_env: {{Authorization: APP_AUTH}}, body: {{message: '{{{{prompt}}}}', session: '{{{{session_id}}}}', meta: {{n: 1, tags: [a]}}}}, reply_pointer: /data/answer, session_pointer: /session, input_tokens_pointer: /usage/in, output_tokens_pointer: /usage/out}}}}"
        ),
        fast(),
    )
}

#[tokio::test]
async fn json_template_secret_header_pointer_and_usage() {
    let (base, seen, _h) = start().await;
    let t = chat_target(&base);
    let r = t.chat(&user("Say \"hi\"\nplease")).await.unwrap();
    assert_eq!(r.content, "turn 1: Say \"hi\"\nplease");
    let u = r.usage.unwrap();
    assert_eq!((u.input_tokens, u.output_tokens), (3, 2));
    let reqs = seen.requests.lock().unwrap();
    let (h, body) = &reqs[0];
    assert_eq!(h["content-type"], "application/json");
    let v: Value = serde_json::from_slice(body).unwrap();
    // The prompt is JSON-escaped by the serialiser; a first turn has no session yet;
    // the template's other values are kept as they are.
    assert_eq!(
        v,
        json!({"message": "Say \"hi\"\nplease", "session": null, "meta": {"n": 1, "tags": ["a"]}})
    );
    // The secret is in no spec, label, Debug dump or identity.
    let dump = format!("{t:?} {:?} {}", t.spec(), t.spec().identity());
    assert!(!dump.contains("CANARY"), "{dump}");
    assert!(
        dump.contains("APP_AUTH"),
        "the variable's name is the identity"
    );
}

#[tokio::test]
async fn server_sessions_continue_roll_back_and_rebuild() {
    let (base, seen, _h) = start().await;
    let t = chat_target(&base);
    let r1 = t.chat(&convo(&[], "one")).await.unwrap();
    assert_eq!(r1.content, "turn 1: one");
    // The next turn continues the session the first reply gave.
    let r2 = t
        .chat(&convo(&[("one", &r1.content)], "two"))
        .await
        .unwrap();
    assert_eq!(r2.content, "turn 2: two");
    {
        let s = seen.sessions.lock().unwrap();
        assert_eq!(s["s0"], vec!["one", "two"]);
    }
    // A rollback (crescendo drops the refused turn "two" and tries "two-b"): the session
    // of [one] was used up by "two", so the conversation is rebuilt in a new session.
    let hits = seen.hits.load(Ordering::Relaxed);
    let r2b = t
        .chat(&convo(&[("one", &r1.content)], "two-b"))
        .await
        .unwrap();
    assert_eq!(r2b.content, "turn 2: two-b", "the server saw [one, two-b]");
    assert_eq!(
        seen.hits.load(Ordering::Relaxed) - hits,
        2,
        "one rebuild + the turn"
    );
    {
        let s = seen.sessions.lock().unwrap();
        assert_eq!(s["s1"], vec!["one", "two-b"]);
    }
    // A resumed run: turn 1 came from the journal (the target never saw it), so turn 2
    // of that conversation rebuilds its session the same way.
    let fresh = chat_target(&base);
    let r = fresh
        .chat(&convo(&[("one", "turn 1: one")], "two"))
        .await
        .unwrap();
    assert_eq!(r.content, "turn 2: two");
    // Later turns continue the session sent back in the body.
    let reqs = seen.requests.lock().unwrap();
    let last: Value = serde_json::from_slice(&reqs.last().unwrap().1).unwrap();
    assert_eq!(last["session"], "s2");
}

#[tokio::test]
async fn client_history_and_header_sessions_and_client_ids() {
    let (base, seen, _h) = start().await;
    let t = target(
        &format!(
            "{{name: http, params: {{url: '{base}/history', body: {{history: '{{{{messages}}}}', sys: '{{{{system}}}}'}}, reply_pointer: /reply/text}}}}"
        ),
        fast(),
    );
    let r = t
        .chat(&convo(&[("a", "b"), ("c", "d")], "e"))
        .await
        .unwrap();
    assert_eq!(r.content, "6 messages; system=be helpful");
    let body: Value = serde_json::from_slice(&seen.requests.lock().unwrap()[0].1).unwrap();
    assert_eq!(
        body["history"][0],
        json!({"role": "system", "content": "be helpful"})
    );
    assert_eq!(body["history"][5], json!({"role": "user", "content": "e"}));
    assert_eq!(r.usage, None, "usage is N/A without token pointers");

    // Session id in a response header, sent back in a request header.
    let t = target(
        &format!(
            "{{name: http, params: {{url: '{base}/hsession', headers: {{X-Session: '{{{{session_id}}}}'}}, body: {{m: '{{{{prompt}}}}'}}, reply_pointer: /a, session_header: x-session}}}}"
        ),
        fast(),
    );
    let r1 = t.chat(&convo(&[], "x")).await.unwrap();
    let r2 = t.chat(&convo(&[("x", &r1.content)], "y")).await.unwrap();
    assert_eq!(
        (r1.content.as_str(), r2.content.as_str()),
        ("turn 1", "turn 2")
    );

    // {{session_id}} with no source: gauntlet makes one per conversation.
    let t = target(
        &format!(
            "{{name: http, params: {{url: '{base}/chat', header_env: {{Authorization: APP_AUTH}}, body: {{message: '{{{{prompt}}}}', session: 'conv-{{{{session_id}}}}'}}, reply_pointer: /data/answer}}}}"
        ),
        fast(),
    );
    let a1 = t.chat(&convo(&[], "p")).await.unwrap();
    let a2 = t.chat(&convo(&[("p", &a1.content)], "q")).await.unwrap();
    let b1 = t.chat(&convo(&[], "p")).await.unwrap();
    assert_eq!(
        (a1.content.as_str(), a2.content.as_str()),
        ("turn 1: p", "turn 2: q")
    );
    assert_eq!(
        b1.content, "turn 1: p",
        "another conversation, another session"
    );
}

#[tokio::test]
async fn form_and_text_bodies_with_a_regex() {
    let (base, seen, _h) = start().await;
    let t = target(
        &format!(
            "{{name: http, params: {{url: '{base}/form', body_format: form, body: {{q: 'Q: {{{{prompt}}}}', n: 3}}, reply_regex: 'ANSWER: (?P<reply>.*)'}}}}"
        ),
        fast(),
    );
    let r = t.chat(&user("a&b=c d")).await.unwrap();
    assert_eq!(r.content, "Q: a&b=c d");
    let (h, body) = seen.requests.lock().unwrap()[0].clone();
    assert_eq!(h["content-type"], "application/x-www-form-urlencoded");
    // Mappings are canonical: keys in sorted order.
    assert_eq!(String::from_utf8(body).unwrap(), "n=3&q=Q%3A+a%26b%3Dc+d");
    let t = target(
        &format!(
            "{{name: http, params: {{url: '{base}/fault?kind=html200', reply_regex: 'ANSWER: (.*)'}}}}"
        ),
        fast(),
    );
    let e = call_error(t.chat(&user("x")).await);
    assert!(
        e.contains("reply_regex `ANSWER: (.*)` matches nothing")
            && e.contains("text/html")
            && e.contains("Please sign in"),
        "{e}"
    );
}

#[tokio::test]
async fn sse_replies() {
    let (base, _seen, _h) = start().await;
    let sse = |mode: &str, extra: &str| {
        target(
            &format!(
                "{{name: http, params: {{url: '{base}/sse?mode={mode}', stream: true, body: {{m: '{{{{prompt}}}}', s: '{{{{session_id}}}}'}}, reply_pointer: /delta, session_pointer: /session, input_tokens_pointer: /usage/in, output_tokens_pointer: /usage/out, max_retries: 0{extra}}}}}"
            ),
            fast(),
        )
    };
    let r = sse("ok", "").chat(&user("x")).await.unwrap();
    assert_eq!(
        r.content, "Hello",
        "deltas up to [DONE], comments and other fields skipped"
    );
    assert_eq!(r.usage.unwrap().input_tokens, 5);
    let nodone = target(
        &format!(
            "{{name: http, params: {{url: '{base}/sse?mode=nodone', stream: true, reply_pointer: /delta}}}}"
        ),
        fast(),
    );
    assert_eq!(nodone.chat(&user("x")).await.unwrap().content, "ab");
    let text = target(
        &format!("{{name: http, params: {{url: '{base}/sse?mode=notjson', stream: true}}}}"),
        fast(),
    );
    assert_eq!(text.chat(&user("x")).await.unwrap().content, "plain words");

    // A stream with no event at the pointer, one that is not JSON, a page that is no stream.
    let e = call_error(sse("nomatch", "").chat(&user("x")).await);
    assert!(
        e.contains("no event with text at reply_pointer `/delta`"),
        "{e}"
    );
    let e = call_error(sse("notjson", "").chat(&user("x")).await);
    assert!(
        e.contains("event 1") && e.contains("not JSON") && e.contains("plain words"),
        "{e}"
    );
    let e = call_error(sse("html", "").chat(&user("x")).await);
    assert!(
        e.contains("not a server-sent-events stream")
            && e.contains("text/html")
            && e.contains("Gateway error"),
        "{e}"
    );

    // An endless stream ends at the timeout, as an error (retried as a timeout).
    let t0 = Instant::now();
    let e = call_error(sse("endless", ", timeout_s: 0.5").chat(&user("x")).await);
    assert!(t0.elapsed() < Duration::from_secs(5), "{:?}", t0.elapsed());
    assert!(e.contains("timed out"), "{e}");
    // An event that never ends stops at the size cap, with bounded memory.
    let small = TransportOptions {
        max_body_bytes: 4 << 20,
        ..fast()
    };
    let t = target(
        &format!(
            "{{name: http, params: {{url: '{base}/sse?mode=longline', stream: true, reply_pointer: /delta, timeout_s: 20, max_retries: 0}}}}"
        ),
        small,
    );
    let e = call_error(t.chat(&user("x")).await);
    assert!(e.contains("exceeds 4194304 bytes"), "{e}");
}

#[tokio::test]
async fn hostile_replies_are_named_errors() {
    let (base, seen, _h) = start().await;
    let at = |kind: &str, extra: &str| {
        target(
            &format!(
                "{{name: http, params: {{url: '{base}/fault?kind={kind}', header_env: {{Authorization: APP_AUTH}}, reply_pointer: /answer, max_retries: 2{extra}}}}}"
            ),
            fast(),
        )
    };
    // 200 with an HTML login page where JSON was expected.
    let e = call_error(at("html200", "").chat(&user("x")).await);
    assert!(
        e.contains("is not JSON")
            && e.contains("reply_pointer `/answer`")
            && e.contains("text/html")
            && e.contains("Please sign in"),
        "{e}"
    );
    // JSON content type, not JSON.
    let e = call_error(at("wrongtype", "").chat(&user("x")).await);
    assert!(
        e.contains("is not JSON") && e.contains("application/json") && e.contains("answer=hi"),
        "{e}"
    );
    // A pointer that matches nothing, or an object.
    let e = call_error(at("nomatch", "").chat(&user("x")).await);
    assert!(
        e.contains("reply_pointer `/answer` matches nothing") && e.contains(r#"{"result""#),
        "{e}"
    );
    let e = call_error(at("object", "").chat(&user("x")).await);
    assert!(e.contains("points at an object"), "{e}");
    // An HTML 500 page: retried, then an error with a capped excerpt.
    let before = seen.hits.load(Ordering::Relaxed);
    let t = at("html500", "");
    let e = call_error(t.chat(&user("x")).await);
    assert_eq!(
        seen.hits.load(Ordering::Relaxed) - before,
        3,
        "1 + 2 retries"
    );
    assert!(
        e.contains("HTTP 500")
            && e.contains("500 Internal Server Error")
            && e.contains("gave up after 2 retries"),
        "{e}"
    );
    assert_eq!(t.transport_stats().unwrap().retries_5xx, 2);
    // A 50 MB body is refused at the cap, not read into memory whole.
    let e = call_error(at("huge", "").chat(&user("x")).await);
    assert!(e.contains("exceeds 33554432 bytes"), "{e}");
    assert!(e.len() < 400, "the message is capped: {} bytes", e.len());
    // 4xx: a configuration error that stops the run.
    let e = config_error(at("404", "").chat(&user("x")).await);
    assert!(
        e.contains("HTTP 404") && e.contains("no such route") && e.contains("run stops"),
        "{e}"
    );
    let e = config_error(at("422", "").chat(&user("x")).await);
    assert!(
        e.contains("HTTP 422") && e.contains("field `message` missing"),
        "{e}"
    );
    // 401 names the variable; the echoed secret is scrubbed.
    let e = config_error(at("echo401", "").chat(&user("x")).await);
    assert!(
        e.contains("APP_AUTH") && !e.contains("CANARY") && e.contains("[redacted]"),
        "{e}"
    );
}

#[tokio::test]
async fn rate_limits_honour_retry_after() {
    let (base, _seen, _h) = start().await;
    let t = target(
        &format!(
            "{{name: http, params: {{url: '{base}/fault?kind=429then', reply_pointer: /answer, max_retries: 3}}}}"
        ),
        fast(),
    );
    let t0 = Instant::now();
    let r = t.chat(&user("x")).await.unwrap();
    assert_eq!(r.content, "finally");
    assert!(
        t0.elapsed() >= Duration::from_millis(1900),
        "Retry-After: 1, twice: {:?}",
        t0.elapsed()
    );
    let s = t.transport_stats().unwrap();
    assert_eq!((s.retries_429, s.attempts), (2, 3));
}

#[tokio::test]
async fn config_is_checked_before_any_call() {
    let bad = |params: &str| -> String {
        let s = try_spec(&format!("{{name: http, params: {{{params}}}}}"));
        let s = match s {
            Ok(s) => s,
            Err(e) => return e,
        };
        match HttpTarget::with_env(&s, &env(&[]), fast()) {
            Err(ModelError::Config(m)) => m,
            other => panic!("{params}: {other:?}"),
        }
    };
    assert!(bad("url: 'http://example.com/chat'").contains("plain http"));
    assert!(bad("url: 'http://10.0.0.1/chat'").contains("plain http"));
    assert!(bad("url: 'https://u:p@example.com/chat'").contains("credentials"));
    assert!(
        bad("url: 'https://x.example.invalid/c', header_env: {Authorization: UNSET_VAR}")
            .contains("UNSET_VAR is not set")
    );
    assert!(
        bad("url: 'https://x.example.invalid/c', body: {m: '{{prompt}} {{nope}}'}")
            .contains("unknown placeholder {{nope}}")
    );
    assert!(
        bad("url: 'https://x.example.invalid/c', reply_pointer: answer")
            .contains("not a JSON Pointer")
    );
    assert!(
        bad("url: 'https://x.example.invalid/c', reply_regex: '('").contains("does not compile")
    );
    assert!(
        bad("url: 'https://x.example.invalid/c', session_pointer: /s, reply_pointer: /a")
            .contains("never sent back")
    );
    assert!(
        bad("url: 'https://x.example.invalid/c', body_format: form, body: {a: {b: 1}}")
            .contains("nested")
    );
    assert!(bad("url: 'https://x.example.invalid/c', method: GET, body: {a: x}").contains("GET"));
    assert!(bad("url: 'https://x.example.invalid/c', input_tokens_pointer: /u").contains("both"));
    // A multi-turn conversation to a target that sends only the last turn.
    let (base, _seen, _h) = start().await;
    let t = target(
        &format!("{{name: http, params: {{url: '{base}/history', reply_pointer: /reply/text}}}}"),
        fast(),
    );
    let e = config_error(t.chat(&convo(&[("a", "b")], "c")).await);
    assert!(
        e.contains("{{messages}}") && e.contains("{{session_id}}"),
        "{e}"
    );
}

#[tokio::test]
async fn the_cache_identity_follows_the_request_never_the_secret() {
    let id = |params: &str, secret: &str| {
        let t = HttpTarget::with_env(
            &spec(&format!("{{name: http, params: {{url: 'https://x.example.invalid/c', header_env: {{Authorization: APP_AUTH}}{params}}}}}")),
            &env(&[("APP_AUTH", secret)]),
            fast(),
        )
        .unwrap();
        t.spec().identity()
    };
    assert_eq!(
        id("", "one"),
        id("", "two"),
        "the secret's value is not identity"
    );
    assert_ne!(id("", "one"), id(", reply_pointer: /a", "one"));
    assert_ne!(
        id(", body: {m: '{{prompt}}'}", "one"),
        id(", body: {m: 'Q: {{prompt}}'}", "one")
    );
    // A body key named like a spec's own keys is data, kept whole.
    assert_ne!(
        id(", body: {params: {batch: true}}", "one"),
        id(", body: {params: {batch: false}}", "one")
    );
}
