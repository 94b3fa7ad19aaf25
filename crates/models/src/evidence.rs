//! The `evidence` param of the application targets (`http`, `command`): which evidence
//! servers a run starts for the target, and how a call gathers its evidence.
//!
//! ```yaml
//! evidence: {otlp: "127.0.0.1:4318", settle_s: 2}
//! ```
//!
//! A try of a call derives its trace id from the call ([`call_identity`],
//! [`gauntlet_evidence::trace`]) and opens the trace on the receiver
//! ([`EvidenceSetup::open`]); the target sends the request with the trace's
//! `traceparent` (the `http` target as a header, the `command` target as a field of the
//! request line); after the reply [`OpenTrace::attach`] waits `settle_s` for late spans
//! and puts what arrived on the response as its [`Evidence`]. A try that failed forgets
//! its trace. Both targets go through these three steps; nothing here is per target.

use crate::ModelError;
use gauntlet_core::evidence::Evidence;
use gauntlet_core::hash::HashWriter;
use gauntlet_core::message::{ChatRequest, ChatResponse, Role};
use gauntlet_evidence::caps::Caps;
use gauntlet_evidence::receiver::Receiver;
use gauntlet_evidence::trace::CallTrace;
use serde_json::Value;
use std::net::{IpAddr, Ipv4Addr, SocketAddr};
use std::sync::Arc;
use std::time::Duration;

/// The `evidence` param's doc (shared by the targets that take it).
pub const DOC: &str = "gather the application's evidence per call: {otlp: \"127.0.0.1:4318\" (the OTLP/HTTP trace \
     receiver's address; true for that default), settle_s: 2 (wait after the reply for late \
     spans), max_spans, max_trace_bytes, max_attribute_bytes, max_body_bytes, max_elements}; \
     the call sends a W3C traceparent header. See docs/src/reference/evidence.md";

/// The `evidence` param's doc on the `command` target.
pub const DOC_COMMAND: &str = "gather the program's evidence per call: {otlp: \"127.0.0.1:4318\" (the OTLP/HTTP trace \
     receiver's address; true for that default), settle_s: 2 (wait after the reply for late \
     spans), max_spans, max_trace_bytes, max_attribute_bytes, max_body_bytes, max_elements}; \
     needs network: true; the program gets OTEL_EXPORTER_OTLP_ENDPOINT and \
     OTEL_EXPORTER_OTLP_TRACES_ENDPOINT, each request line a traceparent field. See \
     docs/src/reference/evidence.md";

/// The default receiver address: the OTLP/HTTP port on loopback.
pub const DEFAULT_OTLP: SocketAddr = SocketAddr::new(IpAddr::V4(Ipv4Addr::LOCALHOST), 4318);
/// The default settle window, in seconds.
pub const DEFAULT_SETTLE_S: f64 = 2.0;

const KEYS: &[&str] = &[
    "otlp",
    "settle_s",
    "max_spans",
    "max_trace_bytes",
    "max_attribute_bytes",
    "max_body_bytes",
    "max_elements",
];

/// A target's evidence setup: the receiver it files into and how long it waits.
pub struct EvidenceSetup {
    receiver: Arc<Receiver>,
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
        let addr = match o.get("otlp") {
            None | Some(Value::Bool(true)) => DEFAULT_OTLP,
            Some(Value::String(s)) => s.trim().parse::<SocketAddr>().map_err(|_| {
                cfg(
                    target,
                    format!(
                        "`otlp` = {s:?} is not an address: write IP:PORT, e.g. \"127.0.0.1:4318\""
                    ),
                )
            })?,
            Some(other) => {
                return Err(cfg(
                    target,
                    format!("`otlp` must be an address such as \"127.0.0.1:4318\", not {other}"),
                ));
            }
        };
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
        let receiver = Receiver::start(addr, caps).map_err(|e| cfg(target, e.to_string()))?;
        Ok(Some(EvidenceSetup {
            receiver,
            settle: Duration::from_secs_f64(settle_s),
            target: identity.to_string().into_bytes(),
        }))
    }

    /// The receiver's OTLP endpoint (`http://127.0.0.1:4318`).
    pub fn endpoint(&self) -> String {
        self.receiver.endpoint()
    }

    /// The trace of one call, opened on the receiver; `call` writes the call's identity.
    pub fn open(&self, call: impl FnOnce(&mut HashWriter)) -> OpenTrace<'_> {
        let trace = CallTrace::derive(&self.target, call);
        self.receiver
            .collector()
            .open(trace.trace_id, trace.span_id);
        OpenTrace {
            setup: self,
            trace,
            taken: false,
        }
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

    /// Waits the settle window, then puts what arrived on `resp` as its evidence.
    pub async fn attach(self, mut resp: ChatResponse) -> ChatResponse {
        resp.evidence = Some(Box::new(self.settle().await));
        resp
    }

    /// Waits the settle window, then takes what arrived.
    pub async fn settle(mut self) -> Evidence {
        tokio::time::sleep(self.setup.settle).await;
        self.taken = true;
        self.setup
            .receiver
            .collector()
            .take(self.trace.trace_id)
            .unwrap_or_else(|| Evidence {
                trace_id: gauntlet_evidence::trace::hex(&self.trace.trace_id),
                ..Default::default()
            })
    }
}

impl Drop for OpenTrace<'_> {
    fn drop(&mut self) {
        if !self.taken {
            self.setup.receiver.collector().close(self.trace.trace_id);
        }
    }
}
