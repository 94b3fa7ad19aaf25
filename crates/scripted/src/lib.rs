//! gauntlet-scripted: a scripted, fault-injecting HTTP server that speaks the two wire
//! formats gauntlet's live targets use — OpenAI chat completions
//! (`POST /v1/chat/completions`) and Anthropic messages (`POST /v1/messages`) — so the
//! transport's behaviour under every failure a provider can produce is tested over real
//! HTTP on loopback, deterministically and without a network.
//!
//! Its answers are canned: it is never a stand-in for the real-model test, and nothing
//! it says measures a model. Its users are tests and benchmarks (the transports', the
//! CLI's, the exams' real mode): it is a dev-dependency only, never in the shipped
//! binary.
//!
//! Behaviour:
//! * by default it answers from the request: a refusal text when the conversation
//!   contains the configured `refuse_word` (case-insensitive), else a fixed compliance
//!   text, with word-count usage;
//! * a [`Script`] (JSON file for the binary, or the builder API) adds [`Rule`]s, matched
//!   in order by request sequence number, prompt substring and API, each optionally
//!   limited to a number of firings: reply text, tool calls with ids, refusal stop
//!   reasons, latency, any status (429 with `Retry-After` in seconds or as an HTTP-date,
//!   500/503/529, 401 echoing the presented key the way some providers do), a hang,
//!   truncated JSON, malformed JSON, or a response with a required field missing; a
//!   status 200 with a `body` sends that body verbatim (any reply shape, any `usage`),
//!   and [`PRESENTED_KEY`] in a scripted answer is replaced by the key the request
//!   presented; a raw reply sends any status, content type, body and headers verbatim
//!   (an application's own JSON, a server-sent-events stream), with
//!   [`PRESENTED_AUTHORIZATION`] replaced by the request's `Authorization` header;
//! * requests are validated like the real APIs where it matters for round-trips: a tool
//!   result must name a tool call id / tool_use id from the preceding assistant turn, and
//!   Anthropic requests must carry `anthropic-version` and `max_tokens`;
//! * it speaks both providers' batch APIs (OpenAI's `/v1/files` + `/v1/batches`,
//!   Anthropic's `/v1/messages/batches`; see [`batch`](BatchRule)): each batched request
//!   is answered as the same request sent alone, and per-batch faults (slow, expired,
//!   cancelled, failed, damaged result lines) are scripted with [`BatchRule`]s;
//! * it counts requests (`GET /stats`, [`ScriptedServer::stats`]), records the last requests
//!   received ([`ScriptedServer::requests`]; `GET /requests` without credentials), and tracks
//!   requests in flight (so concurrency limits can be asserted).
//!
//! * a [`Responder`] ([`ScriptedServer::start_with_responder`]) computes the action of
//!   every request no rule matched from the request itself (its system prompt, whether
//!   tools are offered or a tool result is present) and from a scope taken from the path:
//!   `/s/<i>/v1/messages` and `/s/<i>/v1/chat/completions` are scope `i`.
//!
//! It binds only to loopback (port 0 by default) and stops when its handle is dropped or
//! [`ScriptedServer::shutdown`] is awaited.

// Files are read through `gauntlet_core::files` only (clippy.toml says why).
#![cfg_attr(not(test), deny(clippy::disallowed_methods))]

mod answer;
mod batch;
mod batch_store;
mod reply;
mod script;
mod state;

pub use batch_store::BatchRecord;
pub use script::{
    Action, Api, BatchFault, BatchRule, DEFAULT_COMPLIANCE_TEXT, DEFAULT_POLLS,
    DEFAULT_REFUSAL_TEXT, DEFAULT_REFUSE_WORD, Damage, PRESENTED_AUTHORIZATION, PRESENTED_KEY,
    RefusalStyle, RetryAfter, Rule, Script, ScriptedCall, When,
};
pub use state::{Prompt, RECORD_LIMIT, RecordedRequest, Responder, Stats};

use crate::answer::answer;
use crate::batch_store::Store;
use crate::reply::{json_response, reply_error};
use crate::state::{Inner, Shared};

use axum::Router;
use axum::body::Bytes;
use axum::extract::State;
use axum::http::{HeaderMap, StatusCode};
use axum::response::Response;
use axum::routing::{get, post};
use serde_json::Value;
use std::collections::VecDeque;
use std::net::SocketAddr;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;
use tokio::sync::watch;
use tokio::task::JoinHandle;

/// A running server. Dropping it stops the server.
pub struct ScriptedServer {
    addr: SocketAddr,
    shared: Arc<Shared>,
    stop: watch::Sender<bool>,
    task: Option<JoinHandle<()>>,
}

impl ScriptedServer {
    /// Starts on 127.0.0.1 with an OS-chosen port.
    pub async fn start(script: Script) -> std::io::Result<ScriptedServer> {
        Self::start_on(SocketAddr::from(([127, 0, 0, 1], 0)), script).await
    }

    /// Starts on the given loopback address (non-loopback addresses are refused).
    pub async fn start_on(addr: SocketAddr, script: Script) -> std::io::Result<ScriptedServer> {
        Self::start_inner(addr, script, None).await
    }

    /// Starts on 127.0.0.1 (an OS-chosen port) with a [`Responder`] answering every
    /// request no rule of `script` matched, on the plain and the scoped paths.
    pub async fn start_with_responder(
        script: Script,
        responder: Responder,
    ) -> std::io::Result<ScriptedServer> {
        Self::start_inner(
            SocketAddr::from(([127, 0, 0, 1], 0)),
            script,
            Some(responder),
        )
        .await
    }

    async fn start_inner(
        addr: SocketAddr,
        script: Script,
        responder: Option<Responder>,
    ) -> std::io::Result<ScriptedServer> {
        if !addr.ip().is_loopback() {
            return Err(std::io::Error::new(
                std::io::ErrorKind::InvalidInput,
                "the test server binds to loopback only",
            ));
        }
        let listener = tokio::net::TcpListener::bind(addr).await?;
        let addr = listener.local_addr()?;
        let (stop, shutdown) = watch::channel(false);
        let shared = Arc::new(Shared {
            inner: Mutex::new(Inner {
                fired: vec![0; script.rules.len()],
                script: Arc::new(script),
                stats: Stats::default(),
                log: VecDeque::new(),
            }),
            responder,
            batches: Mutex::new(Store::default()),
            url: format!("http://{addr}"),
            seq: AtomicU64::new(0),
            in_flight: AtomicU64::new(0),
            shutdown: shutdown.clone(),
        });
        let app = Router::new()
            .route("/v1/chat/completions", post(openai))
            .route("/v1/messages", post(anthropic))
            .route("/s/{scope}/v1/chat/completions", post(openai_scoped))
            .route("/s/{scope}/v1/messages", post(anthropic_scoped))
            .route("/health", get(|| async { "ok" }))
            .route("/stats", get(stats))
            .route("/requests", get(requests))
            .route("/batches", get(batch::log))
            .route("/v1/files", post(batch::upload))
            .route("/v1/files/{id}/content", get(batch::file_content))
            .route("/v1/batches", post(batch::openai_create))
            .route("/v1/batches/{id}", get(batch::openai_get))
            .route("/v1/batches/{id}/cancel", post(batch::openai_cancel))
            .route("/v1/messages/batches", post(batch::anthropic_create))
            .route("/v1/messages/batches/{id}", get(batch::anthropic_get))
            .route(
                "/v1/messages/batches/{id}/cancel",
                post(batch::anthropic_cancel),
            )
            .route(
                "/v1/messages/batches/{id}/results",
                get(batch::anthropic_results),
            )
            // Batch uploads are large (OpenAI allows 200 MB files, Anthropic 256 MB).
            .layer(axum::extract::DefaultBodyLimit::max(256 << 20))
            .with_state(shared.clone());
        let mut rx = shutdown;
        let task = tokio::spawn(async move {
            let _ = axum::serve(listener, app)
                .with_graceful_shutdown(async move {
                    let _ = rx.wait_for(|s| *s).await;
                })
                .await;
        });
        Ok(ScriptedServer {
            addr,
            shared,
            stop,
            task: Some(task),
        })
    }

    pub fn addr(&self) -> SocketAddr {
        self.addr
    }
    /// `http://127.0.0.1:PORT` (the `anthropic` target's base_url).
    pub fn url(&self) -> String {
        format!("http://{}", self.addr)
    }
    /// `http://127.0.0.1:PORT/v1` (the `openai_compat` target's base_url).
    pub fn openai_base_url(&self) -> String {
        format!("http://{}/v1", self.addr)
    }
    /// Replaces the script (and resets rule firing counts).
    pub fn set_script(&self, script: Script) {
        let mut g = self.shared.lock();
        g.fired = vec![0; script.rules.len()];
        g.script = Arc::new(script);
    }
    pub fn stats(&self) -> Stats {
        let mut s = self.shared.lock().stats.clone();
        s.in_flight = self.shared.in_flight.load(Ordering::SeqCst);
        s
    }
    /// The recorded requests, oldest first (at most [`RECORD_LIMIT`]).
    pub fn requests(&self) -> Vec<RecordedRequest> {
        self.shared.lock().log.iter().cloned().collect()
    }
    /// Every batch created since start (or [`ScriptedServer::reset`]), with the custom ids
    /// it carried: a test asserts from it that no request was submitted twice.
    pub fn batches(&self) -> Vec<BatchRecord> {
        self.shared.batches().log.clone()
    }
    pub fn last_request(&self) -> Option<RecordedRequest> {
        self.shared.lock().log.back().cloned()
    }
    /// Clears counters, the request log, rule firings and the sequence number.
    pub fn reset(&self) {
        let mut g = self.shared.lock();
        g.stats = Stats::default();
        g.log.clear();
        g.fired = vec![0; g.script.rules.len()];
        self.shared.seq.store(0, Ordering::SeqCst);
        drop(g);
        *self.shared.batches() = Store::default();
    }
    /// Stops serving; hanging requests are released with a 503.
    pub async fn shutdown(mut self) {
        let _ = self.stop.send(true);
        if let Some(t) = self.task.take() {
            let _ = tokio::time::timeout(Duration::from_secs(5), t).await;
        }
    }
}

impl Drop for ScriptedServer {
    fn drop(&mut self) {
        let _ = self.stop.send(true);
        if let Some(t) = self.task.take() {
            t.abort();
        }
    }
}

async fn stats(State(s): State<Arc<Shared>>) -> Response {
    let mut st = s.lock().stats.clone();
    st.in_flight = s.in_flight.load(Ordering::SeqCst);
    json_response(
        StatusCode::OK,
        &serde_json::to_string(&st).unwrap_or_default(),
    )
}

async fn requests(State(s): State<Arc<Shared>>) -> Response {
    let log: Vec<RecordedRequest> = s.lock().log.iter().cloned().collect();
    json_response(
        StatusCode::OK,
        &serde_json::to_string(&log).unwrap_or_default(),
    )
}

async fn openai(State(s): State<Arc<Shared>>, headers: HeaderMap, body: Bytes) -> Response {
    handle(s, Api::Openai, None, headers, body).await
}

async fn anthropic(State(s): State<Arc<Shared>>, headers: HeaderMap, body: Bytes) -> Response {
    handle(s, Api::Anthropic, None, headers, body).await
}

async fn openai_scoped(
    State(s): State<Arc<Shared>>,
    axum::extract::Path(scope): axum::extract::Path<usize>,
    headers: HeaderMap,
    body: Bytes,
) -> Response {
    handle(s, Api::Openai, Some(scope), headers, body).await
}

async fn anthropic_scoped(
    State(s): State<Arc<Shared>>,
    axum::extract::Path(scope): axum::extract::Path<usize>,
    headers: HeaderMap,
    body: Bytes,
) -> Response {
    handle(s, Api::Anthropic, Some(scope), headers, body).await
}

/// Decrements the in-flight count however the handler ends (including when the client
/// goes away and the handler is dropped).
struct InFlight<'a>(&'a AtomicU64);
impl Drop for InFlight<'_> {
    fn drop(&mut self) {
        self.0.fetch_sub(1, Ordering::SeqCst);
    }
}

async fn handle(
    s: Arc<Shared>,
    api: Api,
    scope: Option<usize>,
    headers: HeaderMap,
    raw: Bytes,
) -> Response {
    let now_in_flight = s.in_flight.fetch_add(1, Ordering::SeqCst) + 1;
    let _guard = InFlight(&s.in_flight);
    let body: Value = serde_json::from_slice(&raw).unwrap_or(Value::Null);
    let (reply, latency) = answer(&s, api, scope, &headers, body, now_in_flight);
    if latency > 0 {
        tokio::time::sleep(Duration::from_millis(latency)).await;
    }
    match reply {
        Some(r) => r.into_response(),
        None => {
            let mut rx = s.shutdown.clone();
            let _ = rx.wait_for(|v| *v).await;
            reply_error(api, 503, "api_error", "test server shutting down").into_response()
        }
    }
}
