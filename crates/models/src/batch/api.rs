//! What every provider's batch API shares: the [`BatchApi`] a live target offers, its
//! options and what polling and ingesting return, and the line-by-line reading of result
//! files (untrusted input, bounded by [`MAX_LINE`]).

use crate::transport::Transport;
use crate::{BoxFuture, ModelError};
use gauntlet_core::message::{ChatRequest, ChatResponse};
use gauntlet_core::params::{DefaultValue, ParamKind, ParamSpec, Params};
use reqwest::Url;
use serde_json::Value;
use std::time::Duration;

/// The target params that switch batching on and tune it. They change how calls are
/// sent, never what is asked: they are not part of a spec's identity (cache keys and the
/// config hash do not see them), so a batch run and a call-by-call run share their
/// journal and their artefacts.
pub const BATCH_PARAMS: &[ParamSpec] = &[
    ParamSpec {
        name: "batch",
        kind: ParamKind::Bool,
        default: DefaultValue::Bool(false),
        doc: "send this target's calls through the provider's batch API (half price, results \
              within the provider's window, typically minutes to hours); `run --batch` sets it",
    },
    ParamSpec {
        name: "batch_poll_s",
        kind: ParamKind::Float {
            min: 0.01,
            max: 3600.0,
        },
        default: DefaultValue::Float(30.0),
        doc: "seconds between polls of a batch in flight",
    },
    ParamSpec {
        name: "batch_linger_ms",
        kind: ParamKind::Int {
            min: 1,
            max: 600_000,
        },
        default: DefaultValue::Int(500),
        doc: "a wave of calls is submitted once no new call has joined it for this long",
    },
    ParamSpec {
        name: "batch_max_requests",
        kind: ParamKind::Int {
            min: 1,
            max: 50_000,
        },
        default: DefaultValue::Int(10_000),
        doc: "most requests in one batch (OpenAI allows 50,000, Anthropic 100,000)",
    },
];

/// How a target batches (from [`BATCH_PARAMS`]).
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct BatchOptions {
    /// Between polls of a batch in flight.
    pub poll: Duration,
    /// A wave is submitted once no call has joined it for this long.
    pub linger: Duration,
    /// Most requests in one batch.
    pub max_requests: usize,
}

impl BatchOptions {
    /// The options a target's params ask for; `None` unless `batch: true`.
    pub fn from_params(p: &Params) -> Option<BatchOptions> {
        if p.bool("batch") != Some(true) {
            return None;
        }
        Some(BatchOptions {
            poll: Duration::from_secs_f64(p.float("batch_poll_s").unwrap_or(30.0).max(0.01)),
            linger: Duration::from_millis(p.int("batch_linger_ms").unwrap_or(500).max(1) as u64),
            max_requests: p.int("batch_max_requests").unwrap_or(10_000).max(1) as usize,
        })
    }
}

/// A batch's state, as one poll saw it.
#[derive(Debug, Clone, PartialEq)]
pub struct Polled {
    /// The provider's status word (`validating`, `in_progress`, `ended`, …).
    pub status: String,
    /// No further change will come: results (if any) can be read.
    pub ended: bool,
    /// Requests finished (succeeded or failed) and in all, as the provider counts them.
    pub done: u64,
    pub total: u64,
    /// Set when the batch as a whole failed (OpenAI `failed`): why.
    pub failure: Option<String>,
    /// The result files to stream once ended: (name for messages, URL).
    pub results: Vec<(String, Url)>,
}

/// What one request of a batch came to.
#[derive(Debug, Clone, PartialEq)]
pub enum Outcome {
    /// The model's response, exactly as the same call made alone would give it.
    Response(ChatResponse),
    /// This request failed (its own error outcome).
    Error(ModelError),
    /// The batch expired or was cancelled before this request ran: submit it again.
    Unfinished(String),
}

/// One request's result as read from a result file.
#[derive(Debug, Clone, PartialEq)]
pub struct Ingested {
    pub custom_id: String,
    pub outcome: Outcome,
    /// Where it was read: `batch B: FILE line N`.
    pub place: String,
}

/// A result line that could not be attributed to a request (no readable `custom_id`).
#[derive(Debug, Clone, PartialEq)]
pub struct BadLine {
    pub message: String,
}

/// One line of a result file, as a parser reads it: the request's `custom_id` and
/// its outcome (or why its result cannot be read), or why the line is unreadable.
pub type ParsedLine = Result<(String, Result<Outcome, ResultError>), LineError>;

/// Why a result line cannot be attributed to a request.
#[derive(Debug, thiserror::Error)]
pub enum LineError {
    #[error("not UTF-8 ({0})")]
    NotUtf8(#[source] std::str::Utf8Error),
    /// `starts` is the line's first bytes, made printable.
    #[error("not valid JSON ({cause}); line starts: {starts}")]
    NotJson {
        #[source]
        cause: serde_json::Error,
        starts: String,
    },
    #[error("no `custom_id`")]
    NoCustomId,
    #[error("`custom_id` is empty")]
    EmptyCustomId,
    #[error("`custom_id` is not a string")]
    CustomIdNotString,
}

/// Why the result of an attributed request cannot be read. `field` is the JSON path
/// in the provider's result line (`result.message`, `response.body`, …).
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
pub enum ResultError {
    /// The reply inside the line is not a response the target reads.
    #[error(transparent)]
    Response(ModelError),
    #[error("`{field}` is not an object")]
    NotAnObject { field: &'static str },
    #[error("`{field}` is not a number")]
    NotANumber { field: &'static str },
    #[error("no `{field}`")]
    Missing { field: &'static str },
    /// `kind` is the provider's value, made printable.
    #[error("unknown `{field}` {kind:?}")]
    Unknown { field: &'static str, kind: String },
    /// Neither of the two fields one of which a line must set.
    #[error("neither `{0}` nor `{1}` is set")]
    Neither(&'static str, &'static str),
}

/// A provider's batch API, offered by a live target built with `batch: true`.
pub trait BatchApi: Send + Sync {
    /// `openai` or `anthropic` (journaled with each batch).
    fn provider(&self) -> &'static str;
    fn options(&self) -> &BatchOptions;
    /// The wire body of one request (exactly what the target would send alone).
    fn body(&self, req: &ChatRequest) -> Result<Value, ModelError>;
    /// Submits bodies under their custom ids as one batch; returns the batch id.
    fn submit<'a>(
        &'a self,
        requests: &'a [(String, Value)],
    ) -> BoxFuture<'a, Result<String, ModelError>>;
    /// Polls a batch.
    fn poll<'a>(&'a self, id: &'a str) -> BoxFuture<'a, Result<Polled, ModelError>>;
    /// Streams an ended batch's results to `sink`, one line at a time: a request's
    /// outcome (`Ok((custom_id, outcome))`) or an unreadable line.
    fn results<'a>(
        &'a self,
        id: &'a str,
        polled: &'a Polled,
        sink: &'a mut (dyn FnMut(Result<Ingested, BadLine>) + Send),
    ) -> BoxFuture<'a, Result<(), ModelError>>;
}

/// Longest result line accepted (a longer one is reported, not held).
pub const MAX_LINE: usize = 32 << 20;

/// Streams the JSONL at `url` through `parse`, line by line, to `sink`. A line that
/// cannot be attributed, or whose request's result cannot be read, is named by batch,
/// file and 1-based line number.
pub(crate) async fn stream_lines(
    transport: &Transport,
    batch: &str,
    file: &str,
    url: &Url,
    parse: &(dyn Fn(&[u8]) -> ParsedLine + Sync),
    sink: &mut (dyn FnMut(Result<Ingested, BadLine>) + Send),
) -> Result<(), ModelError> {
    let mut resp = transport.download(url).await?;
    let mut buf: Vec<u8> = Vec::with_capacity(64 << 10);
    let mut line_no: u64 = 0;
    let mut skipping = false;
    let emit = |line: &[u8], n: u64, sink: &mut (dyn FnMut(Result<Ingested, BadLine>) + Send)| {
        if line.iter().all(u8::is_ascii_whitespace) {
            return;
        }
        let place = format!("batch {batch}: {file} line {n}");
        sink(match parse(line) {
            Ok((custom_id, Ok(outcome))) => Ok(Ingested {
                custom_id,
                outcome,
                place,
            }),
            Ok((custom_id, Err(why))) => Ok(Ingested {
                custom_id,
                outcome: Outcome::Error(ModelError::Call(
                    transport.redact(&format!("{place}: {why}")),
                )),
                place,
            }),
            Err(why) => Err(BadLine {
                message: transport.redact(&format!("{place}: {why}")),
            }),
        });
    };
    loop {
        let chunk = resp.chunk().await.map_err(|e| {
            let shown = crate::transport::shown_url(url);
            ModelError::Call(format!(
                "batch {batch}: reading {file} from {shown} failed after line {line_no}: {}",
                e.to_string().replace(url.as_str(), &shown)
            ))
        })?;
        let Some(chunk) = chunk else { break };
        let mut rest: &[u8] = &chunk;
        while let Some(i) = rest.iter().position(|&b| b == b'\n') {
            line_no += 1;
            if skipping {
                skipping = false;
                let place = format!("batch {batch}: {file} line {line_no}");
                sink(Err(BadLine {
                    message: format!("{place}: longer than {MAX_LINE} bytes; not read"),
                }));
            } else {
                buf.extend_from_slice(&rest[..i]);
                emit(&buf, line_no, sink);
            }
            buf.clear();
            rest = &rest[i + 1..];
        }
        if !skipping {
            buf.extend_from_slice(rest);
            if buf.len() > MAX_LINE {
                buf = Vec::new();
                skipping = true;
            }
        }
    }
    if skipping || !buf.is_empty() {
        line_no += 1;
        if skipping {
            sink(Err(BadLine {
                message: format!(
                    "batch {batch}: {file} line {line_no}: longer than {MAX_LINE} bytes; not read"
                ),
            }));
        } else {
            emit(&buf, line_no, sink);
        }
    }
    Ok(())
}

/// The JSON of a result line, or why it is not JSON.
pub(crate) fn line_json(line: &[u8]) -> Result<Value, LineError> {
    let text = std::str::from_utf8(line).map_err(LineError::NotUtf8)?;
    serde_json::from_str(text.trim_end_matches('\r')).map_err(|cause| LineError::NotJson {
        cause,
        starts: crate::transport::excerpt(line),
    })
}

/// The line's `custom_id`, or why it has none.
pub(crate) fn custom_id(v: &Value) -> Result<String, LineError> {
    match v.get("custom_id") {
        Some(Value::String(s)) if !s.is_empty() => Ok(s.clone()),
        Some(Value::String(_)) => Err(LineError::EmptyCustomId),
        Some(_) => Err(LineError::CustomIdNotString),
        None => Err(LineError::NoCustomId),
    }
}
