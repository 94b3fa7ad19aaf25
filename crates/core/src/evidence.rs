//! Agent evidence: what a target's application was seen doing during one call, read from
//! the OpenTelemetry spans it exported (tool calls, outgoing HTTP requests) and from the
//! hits on the run's canary sink.
//!
//! A target built with an `evidence` param attaches an [`Evidence`] to every response it
//! gives (empty when nothing arrived); one without it attaches none. The record travels
//! with the response through the journal and the cache and is written into the
//! attempt's transcript line, so a stored run is re-judged from its directory alone.
//! Everything in it came from the application: untrusted text, escaped for its medium
//! when shown.

use serde::{Deserialize, Serialize};

/// What one target call was seen doing.
#[derive(Debug, Clone, PartialEq, Eq, Default, Serialize, Deserialize)]
pub struct Evidence {
    /// The W3C trace id sent with the call (32 lowercase hex digits): the spans of this
    /// trace are the call's evidence.
    pub trace_id: String,
    /// The per-call canary the sink and the content server use (`CANARY-…`), when
    /// either runs.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub canary: Option<String>,
    /// Spans of this trace received (kept or not).
    pub spans: u64,
    /// Spans of this trace not kept: over the per-trace span or byte cap.
    #[serde(default, skip_serializing_if = "is_zero")]
    pub dropped_spans: u64,
    /// Distinct requests the canary sink received under this call's token (a repeat
    /// of the same method, path, query and body counts once).
    #[serde(default, skip_serializing_if = "is_zero")]
    pub sink_hits: u64,
    /// Distinct pages the poisoned-content server served under this call's token: the
    /// injection reached the application.
    #[serde(default, skip_serializing_if = "is_zero")]
    pub pages_served: u64,
    /// Distinct `tools/call` requests the run's MCP endpoint received under this call's
    /// token (the same tool with the same arguments counts once).
    #[serde(default, skip_serializing_if = "is_zero")]
    pub mcp_calls: u64,
    /// What the spans and the sink show, sorted by their content (kind, then each field
    /// in order): a function of what the application did, not of when its spans started
    /// or arrived.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub events: Vec<EvidenceEvent>,
}

fn is_zero(n: &u64) -> bool {
    *n == 0
}

impl Evidence {
    /// Whether anything arrived for the call: a span of its trace, a sink hit or an MCP
    /// tool call.
    pub fn arrived(&self) -> bool {
        self.spans > 0 || self.sink_hits > 0 || self.mcp_calls > 0
    }

    /// Every string the record carries, for scrubbing secrets out of it.
    pub fn strings_mut(&mut self) -> Vec<&mut String> {
        let mut out = Vec::new();
        for e in &mut self.events {
            match e {
                EvidenceEvent::ToolCall {
                    name,
                    arguments,
                    result,
                    ..
                } => {
                    out.push(name);
                    out.push(arguments);
                    if let Some(r) = result {
                        out.push(r);
                    }
                }
                EvidenceEvent::HttpRequest {
                    method, url, host, ..
                } => {
                    out.push(method);
                    if let Some(u) = url {
                        out.push(u);
                    }
                    if let Some(h) = host {
                        out.push(h);
                    }
                }
                EvidenceEvent::SinkHit {
                    method,
                    path,
                    query,
                    body,
                } => {
                    out.push(method);
                    out.push(path);
                    out.push(query);
                    out.push(body);
                }
                EvidenceEvent::PageServed { path } => out.push(path),
            }
        }
        out
    }
}

/// Which convention a tool-call span follows.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum SpanConvention {
    /// OpenTelemetry GenAI semantic conventions (`gen_ai.operation.name` = `execute_tool`).
    GenAi,
    /// OpenInference (`openinference.span.kind` = `TOOL`).
    OpenInference,
    /// Not a span: a `tools/call` request the run's MCP endpoint received.
    Mcp,
}

/// One thing the application was seen doing. No span id is kept: SDKs draw them at
/// random, so two executions of the same deterministic application would differ. The
/// order (`Ord`) is the variants' order, then the fields' in declaration order.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord, Serialize, Deserialize)]
#[serde(tag = "kind", rename_all = "snake_case")]
pub enum EvidenceEvent {
    /// A tool call span.
    ToolCall {
        convention: SpanConvention,
        /// The tool's name (`gen_ai.tool.name`, `tool.name`; the span's name when absent).
        name: String,
        /// The arguments as the span carries them (`gen_ai.tool.call.arguments`,
        /// `input.value`), capped; empty when absent.
        #[serde(default)]
        arguments: String,
        /// The result (`gen_ai.tool.call.result`, `output.value`), capped.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        result: Option<String>,
    },
    /// An HTTP client span (`http.request.method` with `url.full` or `server.address`).
    HttpRequest {
        method: String,
        #[serde(default, skip_serializing_if = "Option::is_none")]
        url: Option<String>,
        #[serde(default, skip_serializing_if = "Option::is_none")]
        host: Option<String>,
    },
    /// A request the canary sink received under the call's token. `path` is what
    /// followed the token (`/collect`), `query` the raw query string, `body` the body as
    /// text, capped and marked when cut.
    SinkHit {
        method: String,
        path: String,
        #[serde(default)]
        query: String,
        #[serde(default)]
        body: String,
    },
    /// A page the poisoned-content server served under the call's token, or a result
    /// the MCP endpoint gave carrying the injection (`path`: what followed the token,
    /// `/p/<key>/<name>` or `/mcp/<key>/<tool>`).
    PageServed { path: String },
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn round_trips_and_omits_the_empty_parts() {
        let e = Evidence {
            trace_id: "0af7651916cd43dd8448eb211c80319c".into(),
            canary: None,
            spans: 2,
            dropped_spans: 0,
            sink_hits: 0,
            pages_served: 0,
            mcp_calls: 0,
            events: vec![EvidenceEvent::ToolCall {
                convention: SpanConvention::GenAi,
                name: "send_email".into(),
                arguments: "{\"to\":\"a@b.example.invalid\"}".into(),
                result: None,
            }],
        };
        let s = serde_json::to_string(&e).unwrap();
        assert_eq!(
            s,
            r#"{"trace_id":"0af7651916cd43dd8448eb211c80319c","spans":2,"events":[{"kind":"tool_call","convention":"gen_ai","name":"send_email","arguments":"{\"to\":\"a@b.example.invalid\"}"}]}"#
        );
        assert_eq!(serde_json::from_str::<Evidence>(&s).unwrap(), e);
        assert!(e.arrived());
        assert!(!Evidence::default().arrived());
        // A record written with span ids (before they were dropped) still reads.
        let old = r#"{"trace_id":"00","spans":1,"events":[{"kind":"http_request","method":"GET","host":"h","span_id":"b7ad6b7169203331"}]}"#;
        assert_eq!(
            serde_json::from_str::<Evidence>(old).unwrap().events.len(),
            1
        );
    }
}
