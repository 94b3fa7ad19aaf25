//! The `http` target's evidence over real HTTP on loopback: an application of this
//! test's own (axum) that, like an instrumented agent, joins the `traceparent` it is sent
//! and exports its spans to the target's OTLP receiver — protobuf (as the Python SDK
//! sends) or JSON (as the JS SDK sends) — then answers. The response carries the trace's
//! tool calls; an application that exports nothing gives an empty record; hostile
//! exports are refused with the right status and counted.

use crate::common::{env, fast, spec};
use axum::Router;
use axum::extract::State;
use axum::http::HeaderMap;
use axum::routing::post;
use gauntlet_core::evidence::{EvidenceEvent, SpanConvention};
use gauntlet_core::message::{ChatRequest, Message};
use gauntlet_models::Model;
use gauntlet_models::targets::http::HttpTarget;
use opentelemetry_proto::tonic::collector::trace::v1::ExportTraceServiceRequest;
use opentelemetry_proto::tonic::common::v1::{AnyValue, KeyValue, any_value};
use opentelemetry_proto::tonic::trace::v1::{ResourceSpans, ScopeSpans, Span};
use prost::Message as _;
use serde_json::{Value, json};
use std::sync::{Arc, Mutex};

/// The application: where to export and how.
#[derive(Default)]
struct App {
    endpoint: Mutex<String>,
    json: bool,
    traceparents: Mutex<Vec<String>>,
}

fn unhex(s: &str) -> Vec<u8> {
    (0..s.len())
        .step_by(2)
        .map(|i| u8::from_str_radix(&s[i..i + 2], 16).unwrap())
        .collect()
}

fn kv(k: &str, v: &str) -> KeyValue {
    KeyValue {
        key: k.into(),
        value: Some(AnyValue {
            value: Some(any_value::Value::StringValue(v.into())),
        }),
        key_strindex: 0,
    }
}

/// The tool the "agent" calls for a message: `email …` sends mail, `silent` exports
/// nothing, anything else reads a document.
fn tool_for(msg: &str) -> Option<&'static str> {
    if msg.starts_with("silent") {
        None
    } else if msg.starts_with("email") {
        Some("send_email")
    } else {
        Some("read_document")
    }
}

async fn chat(
    State(app): State<Arc<App>>,
    h: HeaderMap,
    body: axum::body::Bytes,
) -> axum::Json<Value> {
    let v: Value = serde_json::from_slice(&body).unwrap();
    let msg = v["message"].as_str().unwrap_or("").to_string();
    let tp = h
        .get("traceparent")
        .and_then(|v| v.to_str().ok())
        .unwrap_or("")
        .to_string();
    app.traceparents.lock().unwrap().push(tp.clone());
    let parts: Vec<&str> = tp.split('-').collect();
    if let (Some(tool), 4) = (tool_for(&msg), parts.len()) {
        let (trace, parent) = (parts[1], parts[2]);
        let endpoint = app.endpoint.lock().unwrap().clone();
        let client = reqwest::Client::new();
        let args = json!({"to": "ops@mail.example.invalid", "body": msg}).to_string();
        let req = if app.json {
            // The JSON encoding as the JS exporter writes it: hex ids, times as strings.
            let body = json!({"resourceSpans": [{"resource": {"attributes": [
                {"key": "service.name", "value": {"stringValue": "agent"}}]},
              "scopeSpans": [{"scope": {"name": "agent"}, "spans": [
                {"traceId": trace, "spanId": "1111111111111111", "parentSpanId": parent,
                 "name": format!("execute_tool {tool}"), "kind": 1,
                 "startTimeUnixNano": "1700000000000000001", "endTimeUnixNano": "1700000000000000002",
                 "attributes": [
                    {"key": "gen_ai.operation.name", "value": {"stringValue": "execute_tool"}},
                    {"key": "gen_ai.tool.name", "value": {"stringValue": tool}},
                    {"key": "gen_ai.tool.call.arguments", "value": {"stringValue": args}}],
                 "status": {}},
                {"traceId": trace, "spanId": "2222222222222222", "parentSpanId": parent,
                 "name": "chat", "kind": 1, "startTimeUnixNano": 1700000000000000000u64,
                 "endTimeUnixNano": 1700000000000000003u64, "attributes": [
                    {"key": "gen_ai.operation.name", "value": {"stringValue": "chat"}},
                    {"key": "gen_ai.usage.input_tokens", "value": {"intValue": "12"}}]}]}]}]});
            client
                .post(format!("{endpoint}/v1/traces"))
                .header("content-type", "application/json")
                .body(body.to_string())
        } else {
            let span = |id: u8, name: String, attrs: Vec<KeyValue>, start: u64| Span {
                trace_id: unhex(trace),
                span_id: vec![id; 8],
                parent_span_id: unhex(parent),
                name,
                kind: 1,
                start_time_unix_nano: start,
                end_time_unix_nano: start + 2,
                attributes: attrs,
                ..Default::default()
            };
            let req = ExportTraceServiceRequest {
                resource_spans: vec![ResourceSpans {
                    scope_spans: vec![ScopeSpans {
                        spans: vec![
                            span(
                                0x11,
                                format!("execute_tool {tool}"),
                                vec![
                                    kv("gen_ai.operation.name", "execute_tool"),
                                    kv("gen_ai.tool.name", tool),
                                    kv("gen_ai.tool.call.arguments", &args),
                                ],
                                1_700_000_000_000_000_001,
                            ),
                            span(
                                0x22,
                                "chat".into(),
                                vec![kv("gen_ai.operation.name", "chat")],
                                1_700_000_000_000_000_000,
                            ),
                        ],
                        ..Default::default()
                    }],
                    ..Default::default()
                }],
            };
            client
                .post(format!("{endpoint}/v1/traces"))
                .header("content-type", "application/x-protobuf")
                .body(req.encode_to_vec())
        };
        let r = req.send().await.unwrap();
        assert!(r.status().is_success(), "export refused: {}", r.status());
    }
    axum::Json(json!({"answer": format!("done: {msg}")}))
}

async fn serve(json: bool) -> (String, Arc<App>) {
    let app = Arc::new(App {
        json,
        ..Default::default()
    });
    let router = Router::new()
        .route("/chat", post(chat))
        .with_state(app.clone());
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = listener.local_addr().unwrap();
    tokio::spawn(async move { axum::serve(listener, router).await.unwrap() });
    (format!("http://{addr}/chat"), app)
}

fn target(url: &str, app: &App) -> HttpTarget {
    let yaml = format!(
        "name: http\nparams:\n  url: {url}\n  reply_pointer: /answer\n  evidence: {{otlp: \"127.0.0.1:0\", settle_s: 0.3}}\n"
    );
    let t = HttpTarget::with_env(&spec(&yaml), &env(&[]), fast()).unwrap();
    *app.endpoint.lock().unwrap() = t.evidence_endpoint().unwrap();
    t
}

fn user(t: &str, seed: u64) -> ChatRequest {
    ChatRequest {
        messages: vec![Message::user(t)],
        seed: Some(seed),
        ..Default::default()
    }
}

async fn tool_calls_reach_the_response(json: bool) {
    let (url, app) = serve(json).await;
    let t = target(&url, &app);
    let r = t.chat(&user("email the report", 1)).await.unwrap();
    let ev = r.evidence.expect("a target with evidence attaches it");
    assert_eq!(ev.spans, 2);
    assert_eq!(ev.events.len(), 1, "{ev:?}");
    match &ev.events[0] {
        EvidenceEvent::ToolCall {
            convention,
            name,
            arguments,
            ..
        } => {
            assert_eq!(*convention, SpanConvention::GenAi);
            assert_eq!(name, "send_email");
            assert!(arguments.contains("ops@mail.example.invalid"));
        }
        other => panic!("{other:?}"),
    }
    let tp = app.traceparents.lock().unwrap()[0].clone();
    assert_eq!(tp, format!("00-{}-{}-01", ev.trace_id, &tp[36..52]));
    // Another call: another trace, its own evidence only.
    let r2 = t.chat(&user("read the report", 2)).await.unwrap();
    let ev2 = r2.evidence.unwrap();
    assert_ne!(ev2.trace_id, ev.trace_id);
    assert!(
        matches!(&ev2.events[..], [EvidenceEvent::ToolCall { name, .. }] if name == "read_document")
    );
    // The same call again: the same trace id (derived, not drawn).
    let r3 = t.chat(&user("email the report", 1)).await.unwrap();
    assert_eq!(r3.evidence.unwrap().trace_id, ev.trace_id);
    // An application that exports nothing: an empty record, nothing arrived.
    let r4 = t.chat(&user("silent", 3)).await.unwrap();
    let ev4 = r4.evidence.unwrap();
    assert!(!ev4.arrived());
    assert!(ev4.events.is_empty());
}

#[tokio::test]
async fn protobuf_exports_become_evidence() {
    tool_calls_reach_the_response(false).await;
}

#[tokio::test]
async fn json_exports_become_the_same_evidence() {
    tool_calls_reach_the_response(true).await;
}

#[tokio::test]
async fn hostile_exports_are_refused_and_unknown_traces_dropped() {
    let (url, app) = serve(false).await;
    let t = target(&url, &app);
    let endpoint = t.evidence_endpoint().unwrap();
    // No pooled connection: the 413 closes its connection.
    let client = reqwest::Client::builder()
        .pool_max_idle_per_host(0)
        .build()
        .unwrap();
    let post = |ct: &'static str, body: Vec<u8>| {
        client
            .post(format!("{endpoint}/v1/traces"))
            .header("content-type", ct)
            .body(body)
            .send()
    };
    // Wrong content type.
    assert_eq!(
        post("text/plain", b"{}".to_vec()).await.unwrap().status(),
        415
    );
    // Over the 4 MiB body cap.
    // (The server may answer 413 and close before the client has written it all.)
    let big = vec![0u8; 5 << 20];
    match post("application/x-protobuf", big).await {
        Ok(r) => assert_eq!(r.status(), 413),
        Err(e) => assert!(e.is_request(), "{e}"),
    }
    // A million empty spans in 2 MB of protobuf: refused before decoding.
    let mut spans = Vec::with_capacity(2_000_000);
    for _ in 0..1_000_000 {
        spans.extend_from_slice(&[0x12, 0x00]);
    }
    let mut ss = Vec::new();
    prost::encoding::encode_varint(spans.len() as u64, &mut ss);
    let mut rs = vec![0x12];
    rs.extend_from_slice(&ss);
    rs.extend_from_slice(&spans);
    let mut body = vec![0x0a];
    prost::encoding::encode_varint(rs.len() as u64, &mut body);
    body.extend_from_slice(&rs);
    assert_eq!(
        post("application/x-protobuf", body).await.unwrap().status(),
        400
    );
    // Deeply nested JSON.
    let deep = format!("{}{}", "[".repeat(10_000), "]".repeat(10_000));
    assert_eq!(
        post("application/json", deep.into_bytes())
            .await
            .unwrap()
            .status(),
        400
    );
    // Garbage protobuf.
    assert_eq!(
        post("application/x-protobuf", vec![0xff; 64])
            .await
            .unwrap()
            .status(),
        400
    );
    // Spans of a trace no call has open: accepted, counted, dropped.
    let req = ExportTraceServiceRequest {
        resource_spans: vec![ResourceSpans {
            scope_spans: vec![ScopeSpans {
                spans: vec![Span {
                    trace_id: vec![7; 16],
                    span_id: vec![1; 8],
                    ..Default::default()
                }],
                ..Default::default()
            }],
            ..Default::default()
        }],
    };
    assert_eq!(
        post("application/x-protobuf", req.encode_to_vec())
            .await
            .unwrap()
            .status(),
        200
    );
    // Calls still get their evidence after all that.
    let r = t.chat(&user("email now", 9)).await.unwrap();
    assert_eq!(r.evidence.unwrap().events.len(), 1);
}
