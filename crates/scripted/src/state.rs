//! The server's state, shared by every handler: the script and what it has fired, the
//! counters and request log, the batch store, and the [`Responder`] a request no rule
//! matched is answered by.

use crate::batch_store::Store;
use crate::script::{Action, Api, Script};
use serde::{Deserialize, Serialize};
use serde_json::Value;
use std::collections::{BTreeMap, VecDeque};
use std::sync::atomic::AtomicU64;
use std::sync::{Arc, Mutex};
use tokio::sync::watch;

/// Counters, as returned by `GET /stats`.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct Stats {
    pub requests: u64,
    pub openai: u64,
    pub anthropic: u64,
    /// By outcome: `ok`, `refusal`, `status_429`, `hang`, `truncated`, `malformed`,
    /// `missing_field`, `unauthorized`, `bad_request`.
    pub outcomes: BTreeMap<String, u64>,
    pub in_flight: u64,
    pub max_in_flight: u64,
}

/// One request as received.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct RecordedRequest {
    /// 1-based sequence number.
    pub seq: u64,
    pub api: Api,
    /// The JSON body (`null` if it was not JSON).
    pub body: Value,
    /// Requests in flight when this one arrived, itself included.
    pub in_flight_at_arrival: u64,
    /// Credentials as presented; kept for assertions, never served over HTTP.
    #[serde(skip)]
    pub authorization: Option<String>,
    #[serde(skip)]
    pub x_api_key: Option<String>,
    pub anthropic_version: Option<String>,
}

/// How many recorded requests are kept.
pub const RECORD_LIMIT: usize = 256;

pub(crate) struct Inner {
    /// Shared with each request's handler (an `Arc`, so a request does not copy the
    /// rules and texts).
    pub(crate) script: Arc<Script>,
    pub(crate) fired: Vec<u64>,
    pub(crate) stats: Stats,
    pub(crate) log: VecDeque<RecordedRequest>,
}

pub(crate) struct Shared {
    pub(crate) inner: Mutex<Inner>,
    pub(crate) responder: Option<Responder>,
    pub(crate) batches: Mutex<Store>,
    /// `http://127.0.0.1:PORT`.
    pub(crate) url: String,
    pub(crate) seq: AtomicU64,
    pub(crate) in_flight: AtomicU64,
    pub(crate) shutdown: watch::Receiver<bool>,
}

impl Shared {
    pub(crate) fn url(&self) -> String {
        self.url.clone()
    }
    pub(crate) fn batches(&self) -> std::sync::MutexGuard<'_, Store> {
        self.batches.lock().unwrap_or_else(|p| p.into_inner())
    }
    pub(crate) fn lock(&self) -> std::sync::MutexGuard<'_, Inner> {
        self.inner.lock().unwrap_or_else(|p| p.into_inner())
    }
    pub(crate) fn outcome(&self, name: &str) {
        *self
            .lock()
            .stats
            .outcomes
            .entry(name.to_string())
            .or_default() += 1;
    }
}

/// What a [`Responder`] sees of one request.
#[derive(Debug, Clone, Copy)]
pub struct Prompt<'a> {
    /// `i` of a `/s/<i>/v1/...` path; `None` on the plain paths (and in batches).
    pub scope: Option<usize>,
    pub api: Api,
    /// The system prompt (Anthropic `system`, or the OpenAI system messages), joined
    /// by newlines.
    pub system: &'a str,
    /// The request offers tools.
    pub tools_offered: bool,
    /// The conversation already holds a tool result.
    pub tool_result_present: bool,
}

/// Computes the action of a request no rule matched; `None` answers 404 (e.g. an
/// unknown scope).
pub type Responder = Arc<dyn Fn(&Prompt<'_>) -> Option<Action> + Send + Sync>;
