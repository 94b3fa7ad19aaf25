//! `http`: an application behind any HTTP API — a RAG assistant, a support bot with
//! sessions, an agent behind a webhook — not only a model behind a provider's API.
//!
//! The user describes the request: method, URL, fixed headers, secret headers read from
//! environment variables (`header_env`: header → variable name; the value never enters
//! the spec, a cache key, an artefact or an error message), and a body template (JSON,
//! form or text) with placeholders:
//!
//! | placeholder | becomes |
//! |---|---|
//! | `{{prompt}}` | the last user turn |
//! | `{{system}}` | the system prompt (empty when there is none) |
//! | `{{messages}}` | the whole conversation as JSON, `[{"role", "content"}, …]` (a JSON string value that is exactly the placeholder becomes the array itself) |
//! | `{{session_id}}` | the conversation's session id (a JSON value that is exactly the placeholder becomes `null` before the server has given one) |
//!
//! The reply is read by a JSON Pointer (RFC 6901, `reply_pointer: /answer`), or by a
//! regex over a text body (`reply_regex`, its group `reply`, else group 1, else the whole
//! match), or is the whole body; `stream: true` reads a server-sent-events reply, one
//! delta per event (the pointer or the event's text), until `stream_done` (`[DONE]`) or
//! the end of the stream. A reply the extractor cannot read is an error outcome naming the
//! pointer (or regex), the content type and a capped excerpt of the body — never an empty
//! answer. Token usage is N/A unless `input_tokens_pointer` / `output_tokens_pointer`
//! say where the application reports it.
//!
//! **Multi-turn.** With `{{messages}}` the conversation travels with every request
//! (client-side history). Otherwise the application keeps it, by a session: the id comes
//! from the reply (`session_pointer` or `session_header`) and is sent back where the
//! template puts `{{session_id}}`; with neither, gauntlet makes a fresh id per
//! conversation. Sessions are tracked by conversation: a reply's session continues
//! exactly the conversation that ends with that reply. A request whose earlier turns have
//! no live session — a multi-turn attack rolled a turn back (crescendo), or a resumed
//! run replayed the earlier turns from the journal — gets a new session, rebuilt by
//! sending the earlier user turns again in order (their replies are discarded; a
//! non-deterministic application may answer them differently from the recorded ones).
//! Rebuild requests count in the transport figures, not in `max_queries`.
//!
//! **Outcomes.** Status codes map as on the live targets: 429, 5xx, 408, timeouts and
//! dropped connections are retried with backoff honouring `Retry-After`; 401/403 and
//! every other 4xx are configuration errors that stop the run (a wrong request is wrong
//! for every call); redirects are not followed. Plain http only to loopback.
//!
//! The cache identity is the resolved spec: every param that shapes the request or reads
//! the reply, and the *names* of the secret variables — never their values.

use super::live::{EnvLookup, process_env};
use crate::transport::{
    Failure, RawRequest, Secret, Transport, TransportConfig, TransportOptions, TransportStats,
    check_env_name, excerpt, is_loopback, shown_url,
};
use crate::{BoxFuture, Model, ModelError};
use futures_util::StreamExt;
use gauntlet_core::hash::HashWriter;
use gauntlet_core::message::{ChatRequest, ChatResponse, Message, Role, StopReason, Usage};
use gauntlet_core::params::{Axis, DefaultValue, ParamKind, ParamSpec, PluginInfo, PluginSpec};
use reqwest::header::{CONTENT_TYPE, HeaderMap, HeaderName, HeaderValue};
use reqwest::{Method, Url};
use serde_json::{Value, json};
use std::collections::{HashMap, VecDeque};
use std::fmt;
use std::sync::Mutex;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::Duration;

const PARAMS: &[ParamSpec] = &[
    ParamSpec {
        name: "name",
        kind: ParamKind::Str,
        default: DefaultValue::Str("http"),
        doc: "label shown in reports and on the leaderboard",
    },
    ParamSpec {
        name: "url",
        kind: ParamKind::Str,
        default: DefaultValue::Required,
        doc: "the endpoint; may hold {{session_id}}, {{prompt}} or {{system}} (percent-encoded). \
              https only, except plain http to loopback",
    },
    ParamSpec {
        name: "method",
        kind: ParamKind::Enum(&["POST", "PUT", "PATCH", "GET"]),
        default: DefaultValue::Str("POST"),
        doc: "HTTP method (GET sends no body)",
    },
    ParamSpec {
        name: "headers",
        kind: ParamKind::StrMap,
        default: DefaultValue::Absent,
        doc: "fixed, non-secret headers (values may hold {{session_id}}); secrets go in header_env",
    },
    ParamSpec {
        name: "header_env",
        kind: ParamKind::StrMap,
        default: DefaultValue::Absent,
        doc: "secret headers: header name → NAME of the environment variable holding its whole \
              value (e.g. Authorization: SUPPORT_BOT_AUTH); never written to any artefact",
    },
    ParamSpec {
        name: "body",
        kind: ParamKind::Json,
        default: DefaultValue::Absent,
        doc: "request body template with {{prompt}}, {{messages}}, {{system}}, {{session_id}}: \
              a mapping (json, form) or a string (text). Absent: {message: \"{{prompt}}\"}",
    },
    ParamSpec {
        name: "body_format",
        kind: ParamKind::Enum(&["json", "form", "text"]),
        default: DefaultValue::Str("json"),
        doc: "how the body is sent: application/json, application/x-www-form-urlencoded (a flat \
              mapping) or text/plain (a string)",
    },
    ParamSpec {
        name: "reply_pointer",
        kind: ParamKind::Str,
        default: DefaultValue::Absent,
        doc: "JSON Pointer (RFC 6901) to the reply text in the response (with stream: the delta \
              in each event), e.g. /answer or /choices/0/message/content",
    },
    ParamSpec {
        name: "reply_regex",
        kind: ParamKind::Str,
        default: DefaultValue::Absent,
        doc: "regex over a text response; the reply is its group `reply`, else group 1, else the \
              whole match. With neither pointer nor regex the whole body is the reply",
    },
    ParamSpec {
        name: "stream",
        kind: ParamKind::Bool,
        default: DefaultValue::Bool(false),
        doc: "the reply is a server-sent-events stream (text/event-stream): deltas concatenated",
    },
    ParamSpec {
        name: "stream_done",
        kind: ParamKind::Str,
        default: DefaultValue::Str("[DONE]"),
        doc: "event data that ends a stream (the end of the body ends it too)",
    },
    ParamSpec {
        name: "session_pointer",
        kind: ParamKind::Str,
        default: DefaultValue::Absent,
        doc: "JSON Pointer to the session id the application returns (sent back as {{session_id}})",
    },
    ParamSpec {
        name: "session_header",
        kind: ParamKind::Str,
        default: DefaultValue::Absent,
        doc: "response header holding the session id (sent back as {{session_id}})",
    },
    ParamSpec {
        name: "input_tokens_pointer",
        kind: ParamKind::Str,
        default: DefaultValue::Absent,
        doc: "JSON Pointer to the input token count; without both token pointers usage is N/A",
    },
    ParamSpec {
        name: "output_tokens_pointer",
        kind: ParamKind::Str,
        default: DefaultValue::Absent,
        doc: "JSON Pointer to the output token count",
    },
    ParamSpec {
        name: "timeout_s",
        kind: ParamKind::Float {
            min: 0.05,
            max: 3600.0,
        },
        default: DefaultValue::Float(60.0),
        doc: "per-attempt timeout in seconds (connect, request and the whole reply, stream included)",
    },
    ParamSpec {
        name: "max_retries",
        kind: ParamKind::Int { min: 0, max: 20 },
        default: DefaultValue::Int(4),
        doc: "retries after 408/429/5xx, timeouts and connection errors (Retry-After honoured)",
    },
    ParamSpec {
        name: "max_concurrency",
        kind: ParamKind::Int {
            min: 1,
            max: 10_000,
        },
        default: DefaultValue::Absent,
        doc: "most requests in flight to this application; 429s lower it adaptively",
    },
    ParamSpec {
        name: "evidence",
        kind: ParamKind::Json,
        default: DefaultValue::Absent,
        doc: crate::evidence::DOC,
    },
];

pub const INFO: PluginInfo = PluginInfo {
    axis: Axis::Target,
    name: "http",
    doc: "an application behind any HTTP API: request template, secret headers from the environment, reply by JSON Pointer or regex, SSE, sessions",
    params: PARAMS,
};

/// Sessions remembered at most; an older one is forgotten (its conversation, if it goes
/// on, gets a rebuilt session).
const MAX_SESSIONS: usize = 100_000;

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum BodyFormat {
    Json,
    Form,
    Text,
}

/// How the reply text is found.
#[derive(Debug, Clone)]
enum Extract {
    Pointer(String),
    Regex(regex::Regex),
    Whole,
}

/// Where the session id comes from.
#[derive(Debug, Clone, PartialEq, Eq)]
enum SessionSource {
    /// `{{session_id}}` is not used: no session.
    None,
    /// gauntlet makes one per conversation.
    Client,
    Pointer(String),
    Header(HeaderName),
}

/// What one request sends.
struct Turn<'a> {
    prompt: &'a str,
    system: &'a str,
    /// The conversation as `[{"role", "content"}]` (only built when the template uses it).
    messages: Option<Value>,
    session: Option<&'a str>,
    /// The W3C `traceparent` sent with the request (a target with `evidence`).
    traceparent: Option<&'a str>,
}

/// What one reply gave.
struct Reply {
    text: String,
    session: Option<String>,
    usage: Option<Usage>,
}

pub struct HttpTarget {
    spec: PluginSpec,
    url: String,
    method: Method,
    headers: Vec<(HeaderName, String)>,
    body: Option<Value>,
    format: BodyFormat,
    extract: Extract,
    stream: bool,
    stream_done: String,
    session: SessionSource,
    /// The template uses `{{messages}}`: every request carries the whole conversation.
    history: bool,
    usage_pointers: Option<(String, String)>,
    transport: Transport,
    /// Live sessions: conversation digest → session id (see the module docs).
    sessions: Mutex<Sessions>,
    fresh: AtomicU64,
    /// The evidence servers of the `evidence` param.
    evidence: Option<crate::evidence::EvidenceSetup>,
}

#[derive(Default)]
struct Sessions {
    live: HashMap<[u8; 32], String>,
    order: VecDeque<[u8; 32]>,
}

impl Sessions {
    fn take(&mut self, k: &[u8; 32]) -> Option<String> {
        self.live.remove(k)
    }
    fn put(&mut self, k: [u8; 32], sid: String) {
        if self.live.insert(k, sid).is_none() {
            self.order.push_back(k);
        }
        while self.order.len() > MAX_SESSIONS {
            if let Some(old) = self.order.pop_front() {
                self.live.remove(&old);
            }
        }
        // Keys taken since are stale in `order`: drop them from the front now and then.
        if self.order.len() > 2 * self.live.len() + 1024 {
            let live = &self.live;
            self.order.retain(|k| live.contains_key(k));
        }
    }
}

impl fmt::Debug for HttpTarget {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("HttpTarget")
            .field("url", &self.url)
            .field("method", &self.method)
            .field("transport", &self.transport)
            .finish_non_exhaustive()
    }
}

const PLACEHOLDERS: &[&str] = &["prompt", "messages", "system", "session_id"];

/// Every `{{name}}` in `s` (unknown names included).
fn placeholders(s: &str) -> Vec<&str> {
    let mut out = Vec::new();
    let mut rest = s;
    while let Some(i) = rest.find("{{") {
        let after = &rest[i + 2..];
        let Some(j) = after.find("}}") else { break };
        out.push(after[..j].trim());
        rest = &after[j + 2..];
    }
    out
}

fn json_strings<'a>(v: &'a Value, out: &mut Vec<&'a str>) {
    match v {
        Value::String(s) => out.push(s),
        Value::Array(a) => a.iter().for_each(|x| json_strings(x, out)),
        Value::Object(o) => o.values().for_each(|x| json_strings(x, out)),
        _ => {}
    }
}

fn cfg(msg: impl Into<String>) -> ModelError {
    ModelError::Config(format!("http target: {}", msg.into()))
}

/// Checks a JSON Pointer's syntax (RFC 6901: empty, or `/`-separated tokens with `~0`
/// and `~1` the only escapes).
fn check_pointer(p: &str, param: &str) -> Result<(), ModelError> {
    let ok = p.is_empty()
        || (p.starts_with('/') && {
            let b = p.as_bytes();
            (0..b.len()).all(|i| b[i] != b'~' || matches!(b.get(i + 1), Some(b'0' | b'1')))
        });
    if ok {
        Ok(())
    } else {
        Err(cfg(format!(
            "`{param}` = {p:?} is not a JSON Pointer: write it as /field/0/subfield (RFC 6901; `~1` for a `/` in a name, `~0` for `~`)"
        )))
    }
}

/// Percent-encodes everything but RFC 3986's unreserved characters.
fn percent_encode(s: &str) -> String {
    crate::secret::percent_encode(s, true)
}

/// The URL policy of the live targets, with a query allowed: http(s) only, plain http
/// only to loopback, no credentials in the URL.
fn check_url(url: &Url, shown: &str) -> Result<(), ModelError> {
    if !url.username().is_empty() || url.password().is_some() {
        return Err(cfg(format!(
            "`url` {shown} embeds credentials; send them as a header from the environment (`header_env`)"
        )));
    }
    match url.scheme() {
        "https" => {}
        "http" if is_loopback(url) => {}
        "http" => {
            return Err(cfg(format!(
                "`url` {shown} uses plain http to a non-loopback host; use https (http is allowed only for 127.0.0.0/8, ::1 and localhost)"
            )));
        }
        other => {
            return Err(cfg(format!(
                "`url` {shown} has scheme `{other}`; only https (or http to loopback) is allowed"
            )));
        }
    }
    if url.host().is_none() {
        return Err(cfg(format!("`url` {shown} has no host")));
    }
    Ok(())
}

impl HttpTarget {
    /// Builds the target, reading the secret headers from the process environment.
    pub fn new(spec: &PluginSpec) -> Result<Self, ModelError> {
        Self::with_env(spec, &process_env, TransportOptions::default())
    }

    /// Builds the target with an explicit environment lookup and transport tuning.
    pub fn with_env(
        spec: &PluginSpec,
        env: EnvLookup<'_>,
        options: TransportOptions,
    ) -> Result<Self, ModelError> {
        let p = &spec.params;
        let url = p
            .str("url")
            .filter(|u| !u.trim().is_empty())
            .ok_or_else(|| cfg("needs a non-empty `url` param"))?
            .trim()
            .to_string();
        let method = match p.str("method").unwrap_or("POST") {
            "PUT" => Method::PUT,
            "PATCH" => Method::PATCH,
            "GET" => Method::GET,
            _ => Method::POST,
        };
        let format = match p.str("body_format").unwrap_or("json") {
            "form" => BodyFormat::Form,
            "text" => BodyFormat::Text,
            _ => BodyFormat::Json,
        };
        let body = match (p.json("body"), &method) {
            (Some(_), &Method::GET) => {
                return Err(cfg(
                    "`method: GET` sends no body; remove `body` or put the placeholders in `url`",
                ));
            }
            (Some(b), _) => Some(b.clone()),
            (None, &Method::GET) => None,
            (None, _) => Some(match format {
                BodyFormat::Text => json!("{{prompt}}"),
                _ => json!({"message": "{{prompt}}"}),
            }),
        };
        match (&body, format) {
            (Some(Value::Object(o)), BodyFormat::Form) => {
                if let Some((k, _)) = o.iter().find(|(_, v)| v.is_object() || v.is_array()) {
                    return Err(cfg(format!(
                        "`body_format: form` sends a flat mapping; `body.{k}` is nested (use body_format: json)"
                    )));
                }
            }
            (Some(_), BodyFormat::Form) => {
                return Err(cfg("`body_format: form` needs `body` to be a mapping"));
            }
            (Some(Value::String(_)), BodyFormat::Text) | (None, _) => {}
            (Some(_), BodyFormat::Text) => {
                return Err(cfg("`body_format: text` needs `body` to be a string"));
            }
            (Some(Value::Object(_) | Value::Array(_) | Value::String(_)), BodyFormat::Json) => {}
            (Some(_), BodyFormat::Json) => {
                return Err(cfg(
                    "`body` must be a mapping, a list or a string (a template)",
                ));
            }
        }

        // Headers: fixed ones, then the secret ones from the environment.
        let mut headers = Vec::new();
        let mut names: Vec<String> = Vec::new();
        let header_name = |k: &str, param: &str| {
            HeaderName::from_bytes(k.trim().as_bytes())
                .map_err(|_| cfg(format!("`{param}`: {k:?} is not a valid header name")))
        };
        for (k, v) in p.str_map("headers").unwrap_or(&[]) {
            let name = header_name(k, "headers")?;
            if v.contains(['\r', '\n']) {
                return Err(cfg(format!("`headers.{k}` holds a line break")));
            }
            names.push(name.as_str().to_string());
            headers.push((name, v.clone()));
        }
        let mut secrets = Vec::new();
        let mut secret_headers = HeaderMap::new();
        let mut vars = Vec::new();
        for (k, var) in p.str_map("header_env").unwrap_or(&[]) {
            let name = header_name(k, "header_env")?;
            check_env_name(var)?;
            if names.iter().any(|n| n == name.as_str()) {
                return Err(cfg(format!(
                    "header `{k}` is in both `headers` and `header_env`; keep one"
                )));
            }
            let value = env(var).filter(|v| !v.trim().is_empty()).ok_or_else(|| {
                ModelError::Config(format!(
                    "environment variable {var} is not set or empty; the http target reads the value of header `{k}` from the variable named in `header_env`"
                ))
            })?;
            let mut hv = HeaderValue::from_str(value.trim()).map_err(|_| {
                ModelError::Config(format!(
                    "the value in {var} contains characters not allowed in an HTTP header"
                ))
            })?;
            hv.set_sensitive(true);
            secret_headers.insert(name, hv);
            // Scrubbed with its parts (`Bearer TOKEN`: the token) in every common
            // encoding: an application may echo any of them.
            secrets.push(Secret::new(value.trim()));
            vars.push(var.clone());
        }

        // Every placeholder is known; which ones are used decides the mode.
        let mut texts: Vec<&str> = vec![url.as_str()];
        if let Some(b) = &body {
            json_strings(b, &mut texts);
        }
        texts.extend(headers.iter().map(|(_, v)| v.as_str()));
        let used: Vec<&str> = texts.iter().flat_map(|t| placeholders(t)).collect();
        if let Some(bad) = used.iter().find(|u| !PLACEHOLDERS.contains(u)) {
            return Err(cfg(format!(
                "unknown placeholder {{{{{bad}}}}}; known: {}",
                PLACEHOLDERS
                    .iter()
                    .map(|p| format!("{{{{{p}}}}}"))
                    .collect::<Vec<_>>()
                    .join(", ")
            )));
        }
        if placeholders(&url).contains(&"messages") {
            return Err(cfg("{{messages}} cannot go in the `url`; put it in `body`"));
        }
        if headers
            .iter()
            .any(|(_, v)| placeholders(v).iter().any(|p| *p != "session_id"))
        {
            return Err(cfg("header values may hold {{session_id}} only"));
        }
        let history = used.contains(&"messages");
        let uses_session = used.contains(&"session_id");

        let ptr = |k: &str| -> Result<Option<String>, ModelError> {
            match p.str(k) {
                Some(v) => {
                    check_pointer(v, k)?;
                    Ok(Some(v.to_string()))
                }
                None => Ok(None),
            }
        };
        let extract = match (ptr("reply_pointer")?, p.str("reply_regex")) {
            (Some(_), Some(_)) => {
                return Err(cfg("give `reply_pointer` or `reply_regex`, not both"));
            }
            (Some(pt), None) => Extract::Pointer(pt),
            (None, Some(re)) => Extract::Regex(
                regex::Regex::new(re)
                    .map_err(|e| cfg(format!("`reply_regex` does not compile: {e}")))?,
            ),
            (None, None) => Extract::Whole,
        };
        let session = match (ptr("session_pointer")?, p.str("session_header")) {
            (Some(_), Some(_)) => {
                return Err(cfg("give `session_pointer` or `session_header`, not both"));
            }
            (Some(pt), None) => SessionSource::Pointer(pt),
            (None, Some(h)) => SessionSource::Header(header_name(h, "session_header")?),
            (None, None) if uses_session => SessionSource::Client,
            (None, None) => SessionSource::None,
        };
        if session != SessionSource::Client && session != SessionSource::None && !uses_session {
            return Err(cfg(
                "the session id is read from replies but never sent back: put {{session_id}} in `body`, `url` or `headers`",
            ));
        }
        if matches!(session, SessionSource::Pointer(_))
            && !matches!(extract, Extract::Pointer(_))
            && !p.bool("stream").unwrap_or(false)
        {
            return Err(cfg(
                "`session_pointer` reads a JSON reply: use it with `reply_pointer` (or take the id from `session_header`)",
            ));
        }
        let usage_pointers = match (ptr("input_tokens_pointer")?, ptr("output_tokens_pointer")?) {
            (Some(i), Some(o)) => Some((i, o)),
            (None, None) => None,
            _ => {
                return Err(cfg(
                    "give both `input_tokens_pointer` and `output_tokens_pointer` (usage is N/A without them)",
                ));
            }
        };

        // The URL with every placeholder empty must pass the live targets' policy.
        let probe = Self::render_url_text(&url, "", "", "")?;
        check_url(&probe, &url)?;
        let timeout_s = p.float("timeout_s").unwrap_or(60.0);
        let transport = Transport::new(TransportConfig {
            url: probe,
            headers: secret_headers,
            auth: None,
            key_env: if vars.is_empty() {
                "the application's credentials (no `header_env` is set)".to_string()
            } else {
                format!("the variables named in header_env ({})", vars.join(", "))
            },
            timeout: Duration::from_secs_f64(timeout_s),
            max_retries: p.int("max_retries").unwrap_or(4).clamp(0, 100) as u32,
            max_concurrency: p.int("max_concurrency").map(|n| n.max(1) as usize),
            options,
        })?
        .stop_on_client_errors()
        .with_secrets(secrets);
        Ok(HttpTarget {
            spec: spec.clone(),
            url,
            method,
            headers,
            body,
            format,
            extract,
            stream: p.bool("stream").unwrap_or(false),
            stream_done: p.str("stream_done").unwrap_or("[DONE]").to_string(),
            session,
            history,
            usage_pointers,
            transport,
            sessions: Mutex::new(Sessions::default()),
            fresh: AtomicU64::new(0),
            evidence: crate::evidence::EvidenceSetup::from_param(
                "http",
                p.json("evidence"),
                &spec.key_identity(),
            )?,
        })
    }

    fn render_url_text(
        template: &str,
        prompt: &str,
        system: &str,
        session: &str,
    ) -> Result<Url, ModelError> {
        let text = template
            .replace("{{prompt}}", &percent_encode(prompt))
            .replace("{{system}}", &percent_encode(system))
            .replace("{{session_id}}", &percent_encode(session));
        Url::parse(&text).map_err(|e| cfg(format!("`url` {template:?} is not a valid URL ({e})")))
    }

    /// A placeholder-bearing string with every placeholder replaced by text.
    fn render_text(s: &str, t: &Turn<'_>) -> String {
        if !s.contains("{{") {
            return s.to_string();
        }
        let mut out = s
            .replace("{{prompt}}", t.prompt)
            .replace("{{system}}", t.system)
            .replace("{{session_id}}", t.session.unwrap_or(""));
        if out.contains("{{messages}}") {
            let m = t
                .messages
                .as_ref()
                .map(Value::to_string)
                .unwrap_or_default();
            out = out.replace("{{messages}}", &m);
        }
        out
    }

    fn render_json(v: &Value, t: &Turn<'_>) -> Value {
        match v {
            Value::String(s) if s.trim() == "{{messages}}" => {
                t.messages.clone().unwrap_or(Value::Array(Vec::new()))
            }
            Value::String(s) if s.trim() == "{{session_id}}" => match t.session {
                Some(sid) => json!(sid),
                None => Value::Null,
            },
            Value::String(s) => Value::String(Self::render_text(s, t)),
            Value::Array(a) => Value::Array(a.iter().map(|x| Self::render_json(x, t)).collect()),
            Value::Object(o) => Value::Object(
                o.iter()
                    .map(|(k, x)| (k.clone(), Self::render_json(x, t)))
                    .collect(),
            ),
            other => other.clone(),
        }
    }

    /// The request for one turn.
    fn request(&self, t: &Turn<'_>) -> Result<RawRequest, ModelError> {
        let url = Self::render_url_text(&self.url, t.prompt, t.system, t.session.unwrap_or(""))?;
        let mut headers = HeaderMap::new();
        for (k, v) in &self.headers {
            let v = Self::render_text(v, t);
            let hv = HeaderValue::from_str(&v).map_err(|_| {
                ModelError::Call(format!(
                    "header `{k}` would hold characters not allowed in a header"
                ))
            })?;
            headers.insert(k.clone(), hv);
        }
        if let Some(tp) = t.traceparent {
            headers.insert(
                HeaderName::from_static("traceparent"),
                HeaderValue::from_str(tp).expect("a traceparent is visible ASCII"),
            );
        }
        let (ct, body) = match (&self.body, self.format) {
            (None, _) => (None, Vec::new()),
            (Some(b), BodyFormat::Json) => (
                Some("application/json"),
                serde_json::to_vec(&Self::render_json(b, t)).expect("JSON serialises"),
            ),
            (Some(Value::Object(o)), BodyFormat::Form) => {
                let mut ser = url::form_urlencoded::Serializer::new(String::new());
                for (k, v) in o {
                    let text = match v {
                        Value::String(s) => Self::render_text(s, t),
                        Value::Null => String::new(),
                        other => other.to_string(),
                    };
                    ser.append_pair(k, &text);
                }
                (
                    Some("application/x-www-form-urlencoded"),
                    ser.finish().into_bytes(),
                )
            }
            (Some(b), _) => (
                Some("text/plain; charset=utf-8"),
                Self::render_text(b.as_str().unwrap_or(""), t).into_bytes(),
            ),
        };
        if let Some(ct) = ct
            && !headers.contains_key(CONTENT_TYPE)
        {
            headers.insert(CONTENT_TYPE, HeaderValue::from_static(ct));
        }
        Ok(RawRequest {
            method: self.method.clone(),
            url,
            headers,
            body,
        })
    }

    /// A fresh client-side session id: unique per conversation and process.
    fn fresh_session(&self) -> String {
        let mut h = HashWriter::new();
        h.field(b"gauntlet-http-session");
        let now = std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map(|d| d.as_nanos())
            .unwrap_or(0);
        h.field(&now.to_le_bytes());
        h.field(&std::process::id().to_le_bytes());
        h.field(&self.fresh.fetch_add(1, Ordering::Relaxed).to_le_bytes());
        h.finish_hex()[..32].to_string()
    }

    /// The digest a session is remembered under: the conversation (roles and contents)
    /// and the request settings that distinguish otherwise equal conversations.
    fn conversation_key(req: &ChatRequest, messages: &[Message], tail: Option<&str>) -> [u8; 32] {
        let mut h = HashWriter::new();
        h.field(b"gauntlet-http-conversation-v1");
        h.field(&req.seed.unwrap_or(u64::MAX).to_le_bytes());
        let n = messages.len() + usize::from(tail.is_some());
        h.field(&(n as u64).to_le_bytes());
        for m in messages {
            h.field(role_name(m.role).as_bytes());
            h.field(m.content.as_bytes());
        }
        if let Some(t) = tail {
            h.field(b"assistant");
            h.field(t.as_bytes());
        }
        h.finish()
    }

    /// Sends one turn and reads its reply.
    async fn send(&self, t: &Turn<'_>) -> Result<Reply, ModelError> {
        let req = self.request(t)?;
        let url = req.url.clone();
        self.transport
            .exchange(&req, |resp| Box::pin(self.read_reply(resp, url.clone())))
            .await
    }

    async fn read_reply(&self, resp: reqwest::Response, real: Url) -> Result<Reply, Failure> {
        // Every message names the URL capped: a session id in it is the server's choice.
        let url = shown_url(&real);
        let content_type = excerpt(
            resp.headers()
                .get(CONTENT_TYPE)
                .map_or(b"none".as_slice(), HeaderValue::as_bytes),
        );
        let fatal = |m: String| Failure::Fatal(ModelError::Call(self.transport.redact(&m)));
        let header_session = match &self.session {
            SessionSource::Header(h) => match resp.headers().get(h).map(HeaderValue::to_str) {
                None => None,
                Some(Ok(s)) => Some(s.trim().to_string()).filter(|s| !s.is_empty()),
                Some(Err(_)) => {
                    return Err(fatal(format!(
                        "reply from {url}: session header `{h}` holds bytes that are not visible ASCII; a session id is sent back in every request, so the call is an error"
                    )));
                }
            },
            _ => None,
        };
        // A reply the target cannot read (not the stream asked for, no text at the
        // pointer, no session id) is a setup failure: the run stops when the first calls
        // all end this way.
        let fatal = |m: String| Failure::Setup(ModelError::Call(self.transport.redact(&m)));
        let mut reply = if self.stream {
            if !content_type
                .to_ascii_lowercase()
                .starts_with("text/event-stream")
            {
                let bytes = self.transport.read_capped(resp).await?;
                return Err(fatal(format!(
                    "reply from {url} is not a server-sent-events stream (content type {content_type}, `stream: true` expects text/event-stream); body starts: {}",
                    excerpt(&bytes)
                )));
            }
            self.read_stream(resp, &real, &content_type).await?
        } else {
            let bytes = self.transport.read_capped(resp).await?;
            self.read_whole(&bytes, &url, &content_type)
                .map_err(|e| fatal(e.to_string()))?
        };
        if let Some(s) = header_session {
            reply.session = Some(s);
        }
        if let Some(sid) = &reply.session
            && let Err(why) = check_session_id(sid)
        {
            let place = match &self.session {
                SessionSource::Header(h) => format!("in session header `{h}`"),
                SessionSource::Pointer(p) => format!("at session_pointer `{p}`"),
                _ => "in the reply".to_string(),
            };
            return Err(fatal(format!(
                "reply from {url}: the session id {place} {why}; a session id is the application's choice, sent back in every request, so the call is an error"
            )));
        }
        if let SessionSource::Header(h) = &self.session
            && reply.session.is_none()
        {
            return Err(fatal(format!(
                "reply from {url} has no session header `{h}`; the application must return the conversation's session id there (session_header)"
            )));
        }
        if let SessionSource::Pointer(p) = &self.session
            && reply.session.is_none()
        {
            return Err(fatal(format!(
                "reply from {url} has no session id at session_pointer `{p}`"
            )));
        }
        Ok(reply)
    }

    /// A whole (non-streamed) body.
    fn read_whole(&self, bytes: &[u8], url: &str, ct: &str) -> Result<Reply, BodyError> {
        match &self.extract {
            Extract::Pointer(p) => {
                let doc: Value =
                    serde_json::from_slice(bytes).map_err(|cause| BodyError::NotJson {
                        url: url.to_string(),
                        ct: ct.to_string(),
                        pointer: p.clone(),
                        cause,
                        starts: excerpt(bytes),
                    })?;
                let text = pointer_text(&doc, p).map_err(|why| BodyError::Pointer {
                    url: url.to_string(),
                    pointer: p.clone(),
                    why,
                    ct: ct.to_string(),
                    starts: excerpt(bytes),
                })?;
                Ok(Reply {
                    text,
                    session: self.session_in(&doc),
                    usage: self.usage_in(&doc),
                })
            }
            Extract::Regex(re) => {
                let text = String::from_utf8_lossy(bytes);
                let t = regex_reply(re, &text).ok_or_else(|| BodyError::NoMatch {
                    url: url.to_string(),
                    regex: re.as_str().to_string(),
                    ct: ct.to_string(),
                    starts: excerpt(bytes),
                })?;
                Ok(Reply {
                    text: t,
                    session: None,
                    usage: None,
                })
            }
            Extract::Whole => {
                let doc: Option<Value> = serde_json::from_slice(bytes).ok();
                Ok(Reply {
                    text: String::from_utf8_lossy(bytes).trim().to_string(),
                    session: doc.as_ref().and_then(|d| self.session_in(d)),
                    usage: doc.as_ref().and_then(|d| self.usage_in(d)),
                })
            }
        }
    }

    fn session_in(&self, doc: &Value) -> Option<String> {
        let SessionSource::Pointer(p) = &self.session else {
            return None;
        };
        match doc.pointer(p)? {
            Value::String(s) if !s.trim().is_empty() => Some(s.trim().to_string()),
            Value::Number(n) => Some(n.to_string()),
            _ => None,
        }
    }

    fn usage_in(&self, doc: &Value) -> Option<Usage> {
        let (i, o) = self.usage_pointers.as_ref()?;
        Some(Usage {
            input_tokens: doc.pointer(i)?.as_u64()?,
            output_tokens: doc.pointer(o)?.as_u64()?,
        })
    }

    /// A server-sent-events body: one delta per event until `stream_done` or the end,
    /// parsed as it arrives ([`crate::sse`]); the body is capped as a whole body is, and
    /// one event at [`MAX_EVENT_BYTES`].
    async fn read_stream(
        &self,
        resp: reqwest::Response,
        real: &Url,
        ct: &str,
    ) -> Result<Reply, Failure> {
        let url = shown_url(real);
        let cap = self.transport.max_body_bytes();
        let fatal = |m: String| Failure::Fatal(ModelError::Call(self.transport.redact(&m)));
        let mut parser = crate::sse::Parser::new(MAX_EVENT_BYTES);
        let mut chunks = resp.bytes_stream();
        let mut events: Vec<crate::sse::Event> = Vec::new();
        let mut read = 0usize;
        let mut text = String::new();
        let mut session = None;
        let mut usage = None;
        let (mut n, mut matched) = (0usize, 0usize);
        'stream: while let Some(chunk) = chunks.next().await {
            let chunk = chunk.map_err(|e| {
                self.transport
                    .body_failure(&e, "reading the server-sent-events reply", real)
            })?;
            read += chunk.len();
            if read > cap {
                return Err(fatal(format!(
                    "server-sent-events reply from {url} exceeds {cap} bytes"
                )));
            }
            parser.feed(&chunk, &mut events).map_err(|e| {
                fatal(format!(
                    "server-sent-events reply from {url} cannot be read after {n} event(s): {e}"
                ))
            })?;
            for ev in events.drain(..) {
                if ev.data.trim() == self.stream_done {
                    break 'stream;
                }
                n += 1;
                match &self.extract {
                    Extract::Pointer(p) => {
                        let Ok(doc) = serde_json::from_str::<Value>(&ev.data) else {
                            return Err(fatal(format!(
                                "event {n} of the server-sent-events reply from {url} is not JSON, so reply_pointer `{p}` cannot be read: {}",
                                excerpt(ev.data.as_bytes())
                            )));
                        };
                        if session.is_none() {
                            session = self.session_in(&doc);
                        }
                        if let Some(u) = self.usage_in(&doc) {
                            usage = Some(u);
                        }
                        match doc.pointer(p) {
                            Some(Value::String(s)) => {
                                matched += 1;
                                text.push_str(s);
                            }
                            Some(Value::Number(x)) => {
                                matched += 1;
                                text.push_str(&x.to_string());
                            }
                            _ => {}
                        }
                    }
                    _ => {
                        matched += 1;
                        text.push_str(&ev.data);
                    }
                }
            }
        }
        if let Extract::Pointer(p) = &self.extract
            && matched == 0
        {
            return Err(fatal(format!(
                "server-sent-events reply from {url} ({n} event(s), content type {ct}) has no event with text at reply_pointer `{p}`"
            )));
        }
        if let Extract::Regex(re) = &self.extract {
            text = regex_reply(re, &text).ok_or_else(|| {
                fatal(format!(
                    "server-sent-events reply from {url}: reply_regex `{}` matches nothing in the {n} event(s); text starts: {}",
                    re.as_str(),
                    excerpt(text.as_bytes())
                ))
            })?;
        }
        Ok(Reply {
            text,
            session,
            usage,
        })
    }

    /// Answers a request, with its evidence when the target gathers it.
    async fn answer(&self, req: &ChatRequest) -> Result<ChatResponse, ModelError> {
        let Some(ev) = &self.evidence else {
            return self.answer_traced(req, None).await;
        };
        let open = ev.open(crate::evidence::call_identity(req));
        let expanded = open.expand_request(req)?;
        let r = self
            .answer_traced(expanded.as_ref().unwrap_or(req), Some(&open.traceparent()))
            .await?;
        Ok(open.attach(r).await)
    }

    /// Answers a request (see the module docs for how sessions follow conversations).
    async fn answer_traced(
        &self,
        req: &ChatRequest,
        traceparent: Option<&str>,
    ) -> Result<ChatResponse, ModelError> {
        if !req.tools.is_empty() {
            return Err(cfg(
                "this target sends text and reads text: it cannot offer tools to the application (injection scenarios need a target with native tool calls)",
            ));
        }
        let system: String = req
            .messages
            .iter()
            .filter(|m| m.role == Role::System)
            .map(|m| m.content.as_str())
            .collect::<Vec<_>>()
            .join("\n\n");
        let turns: Vec<&Message> = req
            .messages
            .iter()
            .filter(|m| m.role != Role::System)
            .collect();
        let Some(last) = turns.last().filter(|m| m.role == Role::User) else {
            return Err(ModelError::Call(
                "the conversation does not end with a user turn; the http target sends the last user turn"
                    .into(),
            ));
        };
        let messages = self.history.then(|| {
            Value::Array(
                req.messages
                    .iter()
                    .map(|m| json!({"role": role_name(m.role), "content": m.content}))
                    .collect(),
            )
        });
        let earlier = &turns[..turns.len() - 1];
        let multi = earlier.iter().any(|m| m.role == Role::Assistant);
        let reply = |r: Reply| ChatResponse {
            first_token_logprobs: None,
            evidence: None,
            content: r.text,
            stop_reason: StopReason::Stop,
            tool_calls: Vec::new(),
            usage: r.usage,
        };
        if self.history || self.session == SessionSource::None {
            if multi && !self.history {
                return Err(cfg(
                    "a multi-turn attack sent a conversation, but the request carries only its last turn: put {{messages}} in `body` (client-side history) or use a session ({{session_id}}, with session_pointer or session_header when the application assigns it)",
                ));
            }
            let sid = (self.session == SessionSource::Client).then(|| self.fresh_session());
            let t = Turn {
                prompt: &last.content,
                system: &system,
                messages,
                session: sid.as_deref(),
                traceparent,
            };
            return self.send(&t).await.map(reply);
        }
        // Server-side history: continue the session of the conversation so far, or
        // rebuild one by sending the earlier user turns again.
        let history: Vec<Message> = req.messages[..req.messages.len() - 1].to_vec();
        let live = if multi {
            let k = Self::conversation_key(req, &history, None);
            self.sessions
                .lock()
                .unwrap_or_else(|p| p.into_inner())
                .take(&k)
        } else {
            None
        };
        let rebuild = multi && live.is_none();
        let mut sid = match (live, &self.session) {
            (Some(s), _) => Some(s),
            (None, SessionSource::Client) => Some(self.fresh_session()),
            (None, _) => None,
        };
        if rebuild {
            for m in earlier.iter().filter(|m| m.role == Role::User) {
                let r = self
                    .send(&Turn {
                        prompt: &m.content,
                        system: &system,
                        messages: None,
                        session: sid.as_deref(),
                        traceparent,
                    })
                    .await?;
                if r.session.is_some() {
                    sid = r.session;
                }
            }
        }
        let r = self
            .send(&Turn {
                prompt: &last.content,
                system: &system,
                messages: None,
                session: sid.as_deref(),
                traceparent,
            })
            .await?;
        if r.session.is_some() {
            sid = r.session.clone();
        }
        if let Some(s) = &sid {
            let k = Self::conversation_key(req, &req.messages, Some(&r.text));
            self.sessions
                .lock()
                .unwrap_or_else(|p| p.into_inner())
                .put(k, s.clone());
        }
        Ok(reply(r))
    }
}

/// The most bytes one server-sent event may hold (its data and the line being read): a
/// larger one is that call's error, named, before more of it is buffered.
pub const MAX_EVENT_BYTES: usize = 4 << 20;

/// The longest session id accepted, in bytes: ids are UUIDs, opaque tokens or JWTs of a
/// few hundred bytes; one far longer would be copied into every later request.
pub const MAX_SESSION_ID_BYTES: usize = 4096;

/// Why a session id the application chose cannot be used: longer than
/// [`MAX_SESSION_ID_BYTES`], or holding a control character.
fn check_session_id(sid: &str) -> Result<(), String> {
    if sid.len() > MAX_SESSION_ID_BYTES {
        return Err(format!(
            "is {} bytes, more than the {MAX_SESSION_ID_BYTES} a session id may be",
            sid.len()
        ));
    }
    if let Some((i, c)) = sid.char_indices().find(|(_, c)| c.is_control()) {
        return Err(format!(
            "holds a control character (U+{:04X} at byte {i})",
            u32::from(c)
        ));
    }
    Ok(())
}

fn role_name(r: Role) -> &'static str {
    match r {
        Role::System => "system",
        Role::User => "user",
        Role::Assistant => "assistant",
        Role::Tool => "tool",
    }
}

/// The text at a JSON Pointer: a string, or a number or boolean as written.
/// Why a whole reply body does not give the reply text. `ct` is its content type,
/// `starts` its first bytes, made printable.
#[derive(Debug, thiserror::Error)]
enum BodyError {
    #[error(
        "reply from {url} is not JSON ({cause}; content type {ct}), so reply_pointer `{pointer}` cannot be read; body starts: {starts}"
    )]
    NotJson {
        url: String,
        ct: String,
        pointer: String,
        #[source]
        cause: serde_json::Error,
        starts: String,
    },
    /// `why` is [`pointer_text`]'s: `matches nothing`, ….
    #[error(
        "reply from {url}: reply_pointer `{pointer}` {why} (content type {ct}); body starts: {starts}"
    )]
    Pointer {
        url: String,
        pointer: String,
        why: &'static str,
        ct: String,
        starts: String,
    },
    #[error(
        "reply from {url}: reply_regex `{regex}` matches nothing (content type {ct}); body starts: {starts}"
    )]
    NoMatch {
        url: String,
        regex: String,
        ct: String,
        starts: String,
    },
}

fn pointer_text(doc: &Value, p: &str) -> Result<String, &'static str> {
    match doc.pointer(p) {
        None | Some(Value::Null) => Err("matches nothing"),
        Some(Value::String(s)) => Ok(s.clone()),
        Some(v @ (Value::Number(_) | Value::Bool(_))) => Ok(v.to_string()),
        Some(Value::Array(_)) => Err("points at a list, not text"),
        Some(Value::Object(_)) => Err("points at an object, not text"),
    }
}

/// The reply a regex finds: its group `reply`, else group 1, else the whole match.
fn regex_reply(re: &regex::Regex, text: &str) -> Option<String> {
    let c = re.captures(text)?;
    let m = c.name("reply").or_else(|| c.get(1)).or_else(|| c.get(0))?;
    Some(m.as_str().to_string())
}

impl HttpTarget {
    /// The OTLP endpoint of the target's trace receiver (`http://addr`), when it
    /// gathers evidence.
    pub fn evidence_endpoint(&self) -> Option<String> {
        self.evidence
            .as_ref()
            .and_then(crate::evidence::EvidenceSetup::endpoint)
    }

    /// The evidence setup (its sink and content server addresses), when it gathers
    /// evidence.
    pub fn evidence_setup(&self) -> Option<&crate::evidence::EvidenceSetup> {
        self.evidence.as_ref()
    }
}

impl Model for HttpTarget {
    fn spec(&self) -> &PluginSpec {
        &self.spec
    }
    fn offline(&self) -> bool {
        false
    }
    fn chat<'a>(&'a self, req: &'a ChatRequest) -> BoxFuture<'a, Result<ChatResponse, ModelError>> {
        Box::pin(self.answer(req))
    }
    fn transport_stats(&self) -> Option<TransportStats> {
        Some(self.transport.stats())
    }
    fn secrets(&self) -> Vec<&Secret> {
        self.transport.secrets().iter().collect()
    }
}
