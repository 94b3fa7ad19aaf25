//! The `evidence` param of the application targets (`http`, `command`): which evidence
//! servers a run starts for the target, and how a call gathers its evidence.
//!
//! ```yaml
//! evidence: {otlp: "127.0.0.1:4318", sink: true, content: true, mcp: true, settle_s: 2}
//! ```
//!
//! A try of a call derives its trace id from the call ([`call_identity`],
//! [`gauntlet_evidence::trace`]) and opens the trace on the receiver
//! ([`EvidenceSetup::open`]); the target sends the request with the trace's
//! `traceparent` (the `http` target as a header, the `command` target as a field of the
//! request line); after the reply [`OpenTrace::attach`] waits `settle_s` for late spans
//! and puts what arrived on the response as its [`Evidence`]. A try that failed forgets
//! its trace. Both targets go through these three steps; nothing here is per target.
//!
//! `otlp` is the OTLP/HTTP receiver (on by default; `false` for an application that
//! exports nothing). `sink` is the canary sink, `content` the poisoned-content server
//! and `mcp` the MCP endpoint (off by default; `true` for any free loopback port, or an
//! address). Their per-call URLs reach the application through the prompt:
//! `{{sink_url}}` and `{{content_url}}` in a message are replaced, for the call, by
//! `http://<addr>/t/<token>`, `{{mcp_url}}` by `http://<addr>/t/<token>/mcp` (the
//! token is the call's trace id, see
//! [`gauntlet_evidence::token`]). The call's identity, and so its trace id, is taken
//! before the replacement, from the text with the placeholders.

use crate::ModelError;
use gauntlet_core::evidence::Evidence;
use gauntlet_core::hash::HashWriter;
use gauntlet_core::message::{ChatRequest, ChatResponse, Role};
use gauntlet_evidence::caps::Caps;
use gauntlet_evidence::collector::Collector;
use gauntlet_evidence::receiver::{Receiver, Server};
use gauntlet_evidence::trace::CallTrace;
use serde_json::Value;
use std::borrow::Cow;
use std::net::{IpAddr, Ipv4Addr, SocketAddr};
use std::sync::Arc;
use std::time::Duration;

/// The `evidence` param's doc (shared by the targets that take it).
pub const DOC: &str = "gather the application's evidence per call: {otlp: \"127.0.0.1:4318\" (the OTLP/HTTP trace \
     receiver's address; true for that default, false for none), sink: true (the canary sink: \
     true for a free loopback port, or an address), content: true (the poisoned-content server, \
     likewise; it implies a sink), mcp: true (the MCP endpoint, likewise; it implies a sink), \
     settle_s: 2 (wait after the reply for late spans and hits), max_spans, max_trace_bytes, \
     max_attribute_bytes, max_body_bytes, max_elements}; the call sends a W3C traceparent \
     header, and {{sink_url}} / {{content_url}} / {{mcp_url}} in its prompt become the call's \
     URLs on the sink, the content server and the MCP endpoint. See docs/src/reference/evidence.md";

/// The `evidence` param's doc on the `command` target.
pub const DOC_COMMAND: &str = "gather the program's evidence per call: {otlp: \"127.0.0.1:4318\" (the OTLP/HTTP trace \
     receiver's address; true for that default, false for none), sink: true, content: true, \
     mcp: true (the canary sink, the poisoned-content server and the MCP endpoint, as on http), \
     settle_s: 2 (wait after the reply \
     for late spans and hits), max_spans, max_trace_bytes, max_attribute_bytes, max_body_bytes, \
     max_elements}; needs network: true; the program gets OTEL_EXPORTER_OTLP_ENDPOINT and \
     OTEL_EXPORTER_OTLP_TRACES_ENDPOINT, each request line a traceparent field, and \
     {{sink_url}} / {{content_url}} / {{mcp_url}} in its prompt become the call's URLs. See \
     docs/src/reference/evidence.md";

/// The default receiver address: the OTLP/HTTP port on loopback.
pub const DEFAULT_OTLP: SocketAddr = SocketAddr::new(IpAddr::V4(Ipv4Addr::LOCALHOST), 4318);
/// The default settle window, in seconds.
pub const DEFAULT_SETTLE_S: f64 = 2.0;

/// The address `sink: true` and `content: true` stand for: any free loopback port.
pub const ANY_LOOPBACK: SocketAddr = SocketAddr::new(IpAddr::V4(Ipv4Addr::LOCALHOST), 0);

const KEYS: &[&str] = &[
    "otlp",
    "sink",
    "content",
    "mcp",
    "settle_s",
    "max_spans",
    "max_trace_bytes",
    "max_attribute_bytes",
    "max_body_bytes",
    "max_elements",
];

/// A target's evidence setup: the collector its calls open traces on, the servers that
/// file into it, and how long a call waits.
pub struct EvidenceSetup {
    collector: Arc<Collector>,
    receiver: Option<Arc<Receiver>>,
    sink: Option<Server>,
    content: Option<Server>,
    mcp: Option<Server>,
    settle: Duration,
    /// The target's identity, folded into every trace id.
    target: Vec<u8>,
}

fn cfg(target: &str, msg: String) -> ModelError {
    ModelError::Config(format!("{target} target: `evidence`: {msg}"))
}

impl EvidenceSetup {
    /// Reads the `evidence` param (`None` when absent) and starts (or joins) the receiver.
    /// `identity` is the target's spec identity.
    pub fn from_param(
        target: &str,
        v: Option<&Value>,
        identity: &Value,
    ) -> Result<Option<EvidenceSetup>, ModelError> {
        let Some(v) = v else { return Ok(None) };
        let Value::Object(o) = v else {
            return Err(cfg(
                target,
                "give a mapping, e.g. {otlp: \"127.0.0.1:4318\"}".into(),
            ));
        };
        if let Some(k) = o.keys().find(|k| !KEYS.contains(&k.as_str())) {
            return Err(cfg(
                target,
                format!("unknown key `{k}`; known: {}", KEYS.join(", ")),
            ));
        }
        let addr = |key: &str,
                    default: Option<SocketAddr>|
         -> Result<Option<SocketAddr>, ModelError> {
            match o.get(key) {
                None => Ok(default),
                Some(Value::Bool(true)) => Ok(Some(if key == "otlp" {
                    DEFAULT_OTLP
                } else {
                    ANY_LOOPBACK
                })),
                Some(Value::Bool(false)) => Ok(None),
                Some(Value::String(s)) => s.trim().parse::<SocketAddr>().map(Some).map_err(|_| {
                    cfg(
                        target,
                        format!(
                            "`{key}` = {s:?} is not an address: write IP:PORT, e.g. \"127.0.0.1:4318\" (port 0: any free port)"
                        ),
                    )
                }),
                Some(other) => Err(cfg(
                    target,
                    format!(
                        "`{key}` must be true, false or an address such as \"127.0.0.1:4318\", not {other}"
                    ),
                )),
            }
        };
        let otlp = addr("otlp", Some(DEFAULT_OTLP))?;
        let content = addr("content", None)?;
        let mcp = addr("mcp", None)?;
        // The pages and tool results point at the sink: a content server or an MCP
        // endpoint brings one.
        let sink = addr("sink", content.or(mcp).map(|_| ANY_LOOPBACK))?;
        for (key, on, what) in [
            ("content", content.is_some(), "pages"),
            ("mcp", mcp.is_some(), "tool results"),
        ] {
            if on && sink.is_none() {
                return Err(cfg(
                    target,
                    format!(
                        "`{key}` serves {what} that point at the canary sink: drop `sink: false`"
                    ),
                ));
            }
        }
        if otlp.is_none() && sink.is_none() {
            return Err(cfg(
                target,
                "with `otlp: false` and no `sink` nothing gathers evidence: give one of them"
                    .into(),
            ));
        }
        let settle_s = match o.get("settle_s") {
            None => DEFAULT_SETTLE_S,
            Some(x) => x
                .as_f64()
                .filter(|s| (0.0..=600.0).contains(s))
                .ok_or_else(|| {
                    cfg(
                        target,
                        format!("`settle_s` must be seconds from 0 to 600, not {x}"),
                    )
                })?,
        };
        let mut caps = Caps::default();
        for (key, slot, max) in [
            ("max_spans", &mut caps.max_spans, 1_000_000usize),
            ("max_trace_bytes", &mut caps.max_trace_bytes, 1 << 30),
            (
                "max_attribute_bytes",
                &mut caps.max_attribute_bytes,
                64 << 20,
            ),
            ("max_body_bytes", &mut caps.max_body_bytes, 1 << 30),
            ("max_elements", &mut caps.max_elements, 100_000_000),
        ] {
            if let Some(x) = o.get(key) {
                *slot = x
                    .as_u64()
                    .and_then(|n| usize::try_from(n).ok())
                    .filter(|n| (1..=max).contains(n))
                    .ok_or_else(|| {
                        cfg(
                            target,
                            format!("`{key}` must be a whole number from 1 to {max}, not {x}"),
                        )
                    })?;
            }
        }
        let start = |e: gauntlet_evidence::receiver::StartError| cfg(target, e.to_string());
        let receiver = otlp
            .map(|a| Receiver::start(a, caps))
            .transpose()
            .map_err(start)?;
        let collector = receiver
            .as_ref()
            .map_or_else(|| Arc::new(Collector::new(caps)), |r| r.collector().clone());
        let sink = sink
            .map(|a| {
                Server::spawn(
                    "canary-sink",
                    a,
                    gauntlet_evidence::sink::router(collector.clone()),
                )
            })
            .transpose()
            .map_err(start)?;
        let content = match (content, &sink) {
            (Some(a), Some(s)) => Some(
                Server::spawn(
                    "content-server",
                    a,
                    gauntlet_evidence::content::router(Arc::new(
                        gauntlet_evidence::content::ContentState {
                            collector: collector.clone(),
                            sink: s.addr(),
                        },
                    )),
                )
                .map_err(start)?,
            ),
            _ => None,
        };
        let mcp = match (mcp, &sink) {
            (Some(a), Some(s)) => {
                let state = Arc::new(gauntlet_evidence::mcp::McpState {
                    collector: collector.clone(),
                    sink: s.addr(),
                });
                Some(
                    Server::spawn("mcp-endpoint", a, gauntlet_evidence::mcp::router(state, a))
                        .map_err(start)?,
                )
            }
            _ => None,
        };
        Ok(Some(EvidenceSetup {
            collector,
            receiver,
            sink,
            content,
            mcp,
            settle: Duration::from_secs_f64(settle_s),
            target: identity.to_string().into_bytes(),
        }))
    }

    /// The receiver's OTLP endpoint (`http://127.0.0.1:4318`), when it runs.
    pub fn endpoint(&self) -> Option<String> {
        self.receiver.as_ref().map(|r| r.endpoint())
    }

    /// The canary sink's address, when it runs.
    pub fn sink_addr(&self) -> Option<SocketAddr> {
        self.sink.as_ref().map(Server::addr)
    }

    /// The content server's address, when it runs.
    pub fn content_addr(&self) -> Option<SocketAddr> {
        self.content.as_ref().map(Server::addr)
    }

    /// The MCP endpoint's address, when it runs.
    pub fn mcp_addr(&self) -> Option<SocketAddr> {
        self.mcp.as_ref().map(Server::addr)
    }

    /// The trace of one call, opened on the collector; `call` writes the call's identity.
    pub fn open(&self, call: impl FnOnce(&mut HashWriter)) -> OpenTrace<'_> {
        let trace = CallTrace::derive(&self.target, call);
        self.collector.open(trace.trace_id, trace.span_id);
        OpenTrace {
            setup: self,
            trace,
            taken: false,
        }
    }
}

/// The placeholders a prompt may hold for the call's URLs.
pub const SINK_URL: &str = "{{sink_url}}";
pub const CONTENT_URL: &str = "{{content_url}}";
pub const MCP_URL: &str = "{{mcp_url}}";

/// A call's URL on the MCP endpoint at `addr`: its base URL and `/mcp`.
fn mcp_url(addr: SocketAddr, id: &gauntlet_evidence::collector::TraceId) -> String {
    format!("{}/mcp", gauntlet_evidence::token::base_url(addr, id))
}

impl OpenTrace<'_> {
    /// This call's URLs on the sink and the content server, with their placeholders.
    fn urls(&self) -> Vec<(String, &'static str)> {
        let id = &self.trace.trace_id;
        // The MCP URL first: it is longer than the base URL of the same server.
        let mut out: Vec<(String, &'static str)> = self
            .setup
            .mcp_addr()
            .map(|a| (mcp_url(a, id), MCP_URL))
            .into_iter()
            .collect();
        out.extend(
            [
                (self.setup.sink_addr(), SINK_URL),
                (self.setup.content_addr(), CONTENT_URL),
            ]
            .into_iter()
            .filter_map(|(a, ph)| a.map(|a| (gauntlet_evidence::token::base_url(a, id), ph))),
        );
        out
    }

    /// Puts the placeholders back into `text` where it holds this call's URLs, so a
    /// stored reply or evidence record does not depend on the ports the servers got.
    pub fn restore(&self, text: &mut String) {
        for (url, ph) in self.urls() {
            if text.contains(&url) {
                *text = text.replace(&url, ph);
            }
        }
    }

    /// `text` with `{{sink_url}}`, `{{content_url}}` and `{{mcp_url}}` replaced by this call's URLs; an
    /// error naming the key to add when the server it names does not run.
    pub fn expand<'t>(&self, text: &'t str) -> Result<Cow<'t, str>, ModelError> {
        if !text.contains("{{") {
            return Ok(Cow::Borrowed(text));
        }
        let mut out = Cow::Borrowed(text);
        for (ph, addr, key) in [
            (SINK_URL, self.setup.sink_addr(), "sink"),
            (CONTENT_URL, self.setup.content_addr(), "content"),
            (MCP_URL, self.setup.mcp_addr(), "mcp"),
        ] {
            if !out.contains(ph) {
                continue;
            }
            let Some(a) = addr else {
                return Err(ModelError::Config(format!(
                    "the prompt holds {ph}, but the target's `evidence` runs no {key} server: add `{key}: true` to `evidence`"
                )));
            };
            let url = if key == "mcp" {
                mcp_url(a, &self.trace.trace_id)
            } else {
                gauntlet_evidence::token::base_url(a, &self.trace.trace_id)
            };
            out = Cow::Owned(out.replace(ph, &url));
        }
        Ok(out)
    }

    /// `req` with the call's URLs in place of `{{sink_url}}`, `{{content_url}}` and `{{mcp_url}}`, or
    /// `None` when no message holds a placeholder (send `req` itself). The call's
    /// identity was taken before, from the text with the placeholders.
    pub fn expand_request(&self, req: &ChatRequest) -> Result<Option<ChatRequest>, ModelError> {
        if !req.messages.iter().any(|m| m.content.contains("{{")) {
            return Ok(None);
        }
        let mut x = req.clone();
        for m in &mut x.messages {
            if let Cow::Owned(t) = self.expand(&m.content)? {
                m.content = t;
            }
        }
        Ok(Some(x))
    }
}

/// Writes a call's identity into its trace id: the seed and the conversation (each
/// turn's role and text), the facts that make two calls the same call. Every target
/// that gathers evidence derives its trace ids with it.
pub fn call_identity(req: &ChatRequest) -> impl FnOnce(&mut HashWriter) + '_ {
    move |h| {
        h.field(b"gauntlet-evidence-call-v1");
        h.field(&req.seed.unwrap_or(u64::MAX).to_le_bytes());
        h.field(&(req.messages.len() as u64).to_le_bytes());
        for m in &req.messages {
            h.field(match m.role {
                Role::System => b"system".as_slice(),
                Role::User => b"user",
                Role::Assistant => b"assistant",
                Role::Tool => b"tool",
            });
            h.field(m.content.as_bytes());
        }
    }
}

/// A call's open trace: forgotten when dropped untaken (a failed call).
pub struct OpenTrace<'a> {
    setup: &'a EvidenceSetup,
    pub trace: CallTrace,
    taken: bool,
}

impl OpenTrace<'_> {
    /// The W3C `traceparent` this try sends: the call's trace, the try's parent span.
    pub fn traceparent(&self) -> String {
        self.trace.traceparent()
    }

    /// Puts the placeholders back into the reply, waits the settle window, then puts what
    /// arrived on `resp` as its evidence.
    pub async fn attach(self, mut resp: ChatResponse) -> ChatResponse {
        self.restore(&mut resp.content);
        resp.evidence = Some(Box::new(self.settle().await));
        resp
    }

    /// Waits the settle window, then takes what arrived.
    pub async fn settle(mut self) -> Evidence {
        tokio::time::sleep(self.setup.settle).await;
        self.taken = true;
        let mut ev = self
            .setup
            .collector
            .take(self.trace.trace_id)
            .unwrap_or_else(|| Evidence {
                trace_id: gauntlet_evidence::trace::hex(&self.trace.trace_id),
                ..Default::default()
            });
        if self.setup.sink.is_some() {
            ev.canary = Some(self.trace.canary());
            for t in ev.strings_mut() {
                self.restore(t);
            }
        }
        ev
    }
}

impl Drop for OpenTrace<'_> {
    fn drop(&mut self) {
        if !self.taken {
            self.setup.collector.close(self.trace.trace_id);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn setup(v: Value) -> Result<Option<EvidenceSetup>, ModelError> {
        EvidenceSetup::from_param("http", Some(&v), &json!({"t": 1}))
    }

    #[test]
    fn the_mcp_url_is_expanded_and_restored_like_the_sink_url() {
        let s = setup(json!({"otlp": false, "mcp": true})).unwrap().unwrap();
        // An MCP endpoint brings a sink: its results point there.
        let (mcp, sink) = (s.mcp_addr().unwrap(), s.sink_addr().unwrap());
        assert_ne!(mcp, sink);
        let t = s.open(|h| h.field(b"call"));
        let id = gauntlet_evidence::trace::hex(&t.trace.trace_id);
        let x = t
            .expand("MCP server: {{mcp_url}}/k1 and {{sink_url}}/c")
            .unwrap();
        assert_eq!(
            x,
            format!("MCP server: http://{mcp}/t/{id}/mcp/k1 and http://{sink}/t/{id}/c")
        );
        let mut back = x.into_owned();
        t.restore(&mut back);
        assert_eq!(back, "MCP server: {{mcp_url}}/k1 and {{sink_url}}/c");
        // Without the endpoint the placeholder names the key to add.
        let s = setup(json!({"otlp": false, "sink": true}))
            .unwrap()
            .unwrap();
        let e = s
            .open(|_| {})
            .expand("{{mcp_url}}")
            .unwrap_err()
            .to_string();
        assert!(e.contains("add `mcp: true`"), "{e}");
        let e = setup(json!({"otlp": false, "mcp": true, "sink": false}))
            .err()
            .unwrap()
            .to_string();
        assert!(e.contains("`mcp` serves tool results"), "{e}");
        let e = setup(json!({"mcp": "nowhere"})).err().unwrap().to_string();
        assert!(e.contains("`mcp` = \"nowhere\" is not an address"), "{e}");
    }
}
