//! The per-run store of evidence: one bounded buffer per open trace (a target call in
//! flight or settling), released when the call takes its evidence.
//!
//! A call opens its trace before it sends the request and takes the buffer after its
//! settle window; spans of a trace nobody has open are counted and dropped at once. A
//! buffer holds at most `max_spans` spans' events and `max_trace_bytes` bytes of their
//! text; spans past either cap are counted as dropped. Open traces are bounded by the
//! calls in flight, so the whole store is bounded by those caps times the concurrency.
//!
//! A trace is opened with the parent span id its try sent. Only the spans whose
//! ancestry (followed through `parent_span_id` among the trace's spans) reaches that id
//! are the try's evidence; the rest (spans an earlier, interrupted try of the same call
//! exported late) are counted as foreign and left out.
//!
//! The canary sink and the poisoned-content server file into the same buffers, by the
//! trace id their URL's token names (see [`crate::token`]). Hits are kept as a set: the
//! same request twice (a retry, or a killed earlier try of the call repeating what the
//! rerun's try does) is one hit, so the record does not depend on how often the
//! application retried.

use crate::caps::Caps;
use gauntlet_core::evidence::{Evidence, EvidenceEvent};
use opentelemetry_proto::tonic::collector::trace::v1::ExportTraceServiceRequest;
use std::collections::{BTreeSet, HashMap};
use std::sync::Mutex;

/// A W3C trace id.
pub type TraceId = [u8; 16];

/// Distinct pages recorded per call at most (a page path is at most a few hundred
/// bytes: the content server refuses longer ones).
pub const MAX_PAGES: usize = 64;

/// One received span of an open trace.
struct Entry {
    span_id: Vec<u8>,
    parent: Vec<u8>,
    /// What it shows; `None` for a span that shows nothing.
    event: Option<EvidenceEvent>,
    /// Over the byte cap: counted, its event not kept.
    dropped: bool,
}

struct Buffer {
    /// The parent span id the try sent.
    root: [u8; 8],
    /// Spans past the span cap: counted as dropped, their ancestry unknown.
    over: u64,
    /// Sink hits over a cap: counted as dropped.
    sink_dropped: u64,
    bytes: usize,
    entries: Vec<Entry>,
    /// Distinct sink hits kept.
    sink: BTreeSet<EvidenceEvent>,
    /// Distinct pages served (what followed the token).
    pages: BTreeSet<String>,
    /// Distinct MCP tool calls kept.
    mcp: BTreeSet<EvidenceEvent>,
    /// MCP tool calls over a cap: counted, not kept.
    mcp_dropped: u64,
}

impl Buffer {
    fn new(root: [u8; 8]) -> Self {
        Buffer {
            root,
            over: 0,
            sink_dropped: 0,
            bytes: 0,
            entries: Vec::new(),
            sink: BTreeSet::new(),
            pages: BTreeSet::new(),
            mcp: BTreeSet::new(),
            mcp_dropped: 0,
        }
    }

    /// Which entries descend from the try's parent span id.
    fn descends(&self) -> Vec<bool> {
        let by_id: HashMap<&[u8], usize> = self
            .entries
            .iter()
            .enumerate()
            .map(|(i, e)| (e.span_id.as_slice(), i))
            .collect();
        let mut memo: Vec<Option<bool>> = vec![None; self.entries.len()];
        for start in 0..self.entries.len() {
            // Walk up until the root, a known answer, an unknown parent or a cycle.
            let mut path = Vec::new();
            let mut cur = start;
            let answer = loop {
                if let Some(a) = memo[cur] {
                    break a;
                }
                if path.contains(&cur) {
                    break false;
                }
                path.push(cur);
                let parent = self.entries[cur].parent.as_slice();
                if parent == self.root {
                    break true;
                }
                match by_id.get(parent) {
                    Some(&p) => cur = p,
                    None => break false,
                }
            };
            for i in path {
                memo[i] = Some(answer);
            }
        }
        memo.into_iter().map(|a| a.unwrap_or(false)).collect()
    }
}

/// Counters of what the receiver saw, for the run's record.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Counts {
    /// Spans received (of any trace).
    pub spans: u64,
    /// Spans of traces no call had open: dropped.
    pub unknown_spans: u64,
    /// Spans over a per-trace cap: dropped.
    pub dropped_spans: u64,
    /// Spans of an open trace that do not descend from its try's parent span id (an
    /// earlier try's, exported late): dropped.
    pub foreign_spans: u64,
    /// Requests refused (too large, too many elements, too deep, malformed, wrong type).
    pub refused_requests: u64,
    /// Sink requests naming no open call (no token, or a token of no call in flight):
    /// dropped.
    pub unknown_sink_hits: u64,
    /// Content-server requests naming no open call or no published page: answered 404.
    pub unknown_page_requests: u64,
    /// MCP endpoint requests naming no open call or no published toolkit: answered 404.
    pub unknown_mcp_requests: u64,
}

/// The evidence of the traces open now.
pub struct Collector {
    caps: Caps,
    state: Mutex<State>,
}

#[derive(Default)]
struct State {
    open: HashMap<TraceId, Buffer>,
    counts: Counts,
}

fn text_len(e: &EvidenceEvent) -> usize {
    match e {
        EvidenceEvent::ToolCall {
            name,
            arguments,
            result,
            ..
        } => name.len() + arguments.len() + result.as_ref().map_or(0, String::len),
        EvidenceEvent::HttpRequest { method, url, host } => {
            method.len()
                + url.as_ref().map_or(0, String::len)
                + host.as_ref().map_or(0, String::len)
        }
        EvidenceEvent::SinkHit {
            method,
            path,
            query,
            body,
        } => method.len() + path.len() + query.len() + body.len(),
        EvidenceEvent::PageServed { path } => path.len(),
    }
}

impl Collector {
    pub fn new(caps: Caps) -> Self {
        Collector {
            caps,
            state: Mutex::new(State::default()),
        }
    }

    pub fn caps(&self) -> &Caps {
        &self.caps
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, State> {
        self.state.lock().unwrap_or_else(|p| p.into_inner())
    }

    /// Starts collecting `id`'s spans below `root`, the parent span id this try sent (a
    /// second open of an id already open is a no-op).
    pub fn open(&self, id: TraceId, root: [u8; 8]) {
        self.lock()
            .open
            .entry(id)
            .or_insert_with(|| Buffer::new(root));
    }

    /// Stops collecting `id` and returns what arrived below its try's parent span id,
    /// events sorted by their content (sink hits, the last kind, after the spans).
    /// `None` when `id` was not open.
    pub fn take(&self, id: TraceId) -> Option<Evidence> {
        let mut st = self.lock();
        let b = st.open.remove(&id)?;
        let keep = b.descends();
        let foreign = keep.iter().filter(|k| !**k).count() as u64;
        st.counts.foreign_spans += foreign;
        drop(st);
        let mut spans = b.over;
        let mut dropped = b.over + b.sink_dropped;
        let mut out: Vec<EvidenceEvent> = Vec::new();
        for (e, kept) in b.entries.into_iter().zip(keep) {
            if !kept {
                continue;
            }
            spans += 1;
            if e.dropped {
                dropped += 1;
            }
            out.extend(e.event);
        }
        let sink_hits = b.sink.len() as u64 + b.sink_dropped;
        let pages_served = b.pages.len() as u64;
        let mcp_calls = b.mcp.len() as u64 + b.mcp_dropped;
        dropped += b.mcp_dropped;
        out.extend(b.mcp);
        out.extend(b.sink);
        out.extend(
            b.pages
                .into_iter()
                .map(|path| EvidenceEvent::PageServed { path }),
        );
        out.sort();
        Some(Evidence {
            trace_id: crate::trace::hex(&id),
            canary: None,
            spans,
            dropped_spans: dropped,
            sink_hits,
            pages_served,
            mcp_calls,
            events: out,
        })
    }

    /// Forgets `id` without reading it (a call that failed).
    pub fn close(&self, id: TraceId) {
        self.lock().open.remove(&id);
    }

    /// Traces open now.
    pub fn open_traces(&self) -> usize {
        self.lock().open.len()
    }

    pub fn counts(&self) -> Counts {
        self.lock().counts
    }

    pub(crate) fn refused(&self) {
        self.lock().counts.refused_requests += 1;
    }

    /// Files every span of a decoded export request under its trace.
    pub fn ingest(&self, req: &ExportTraceServiceRequest) {
        // Read outside the lock; file under it.
        let cap = self.caps.max_attribute_bytes;
        let mut st = self.lock();
        for rs in &req.resource_spans {
            for ss in &rs.scope_spans {
                for span in &ss.spans {
                    st.counts.spans += 1;
                    let Ok(id) = TraceId::try_from(span.trace_id.as_slice()) else {
                        st.counts.unknown_spans += 1;
                        continue;
                    };
                    let max_spans = self.caps.max_spans;
                    let max_bytes = self.caps.max_trace_bytes;
                    let Some(buf) = st.open.get_mut(&id) else {
                        st.counts.unknown_spans += 1;
                        continue;
                    };
                    if buf.entries.len() >= max_spans {
                        buf.over += 1;
                        st.counts.dropped_spans += 1;
                        continue;
                    }
                    // Ids are kept to 8 bytes each way, whatever the span claims.
                    let mut entry = Entry {
                        span_id: span.span_id.iter().take(8).copied().collect(),
                        parent: span.parent_span_id.iter().take(8).copied().collect(),
                        event: crate::spans::read_span(span, cap),
                        dropped: false,
                    };
                    let n = entry.event.as_ref().map_or(0, text_len) + 16;
                    let over_bytes = buf.bytes + n > max_bytes;
                    if over_bytes {
                        entry.event = None;
                        entry.dropped = true;
                    } else {
                        buf.bytes += n;
                    }
                    buf.entries.push(entry);
                    if over_bytes {
                        st.counts.dropped_spans += 1;
                    }
                }
            }
        }
    }

    /// Whether `id` is open (a call in flight or settling).
    pub fn is_open(&self, id: &TraceId) -> bool {
        self.lock().open.contains_key(id)
    }

    /// Files a sink hit under `id` when it is open (a repeat of a kept hit counts once;
    /// past the span or byte cap a hit is counted, not kept); false when `id` is not
    /// open, and the hit is counted as unknown.
    pub fn sink_hit(&self, id: TraceId, hit: EvidenceEvent) -> bool {
        let max_bytes = self.caps.max_trace_bytes;
        let max_hits = self.caps.max_spans;
        let mut st = self.lock();
        let Some(buf) = st.open.get_mut(&id) else {
            st.counts.unknown_sink_hits += 1;
            return false;
        };
        if buf.sink.contains(&hit) {
            return true;
        }
        let n = text_len(&hit);
        if buf.sink.len() >= max_hits || buf.bytes + n > max_bytes {
            buf.sink_dropped += 1;
            return true;
        }
        buf.bytes += n;
        buf.sink.insert(hit);
        true
    }

    /// Records that the page `path` was served under `id` when it is open (at most
    /// [`MAX_PAGES`] distinct paths kept); false when `id` is not open, counted.
    pub fn page_served(&self, id: TraceId, path: &str) -> bool {
        let mut st = self.lock();
        let Some(buf) = st.open.get_mut(&id) else {
            st.counts.unknown_page_requests += 1;
            return false;
        };
        if buf.pages.len() < MAX_PAGES && !buf.pages.contains(path) {
            buf.pages.insert(path.to_string());
        }
        true
    }

    /// Files an MCP tool call under `id` when it is open (a repeat of a kept call counts
    /// once; past the span or byte cap it is counted, not kept); false when `id` is not
    /// open, and the request is counted as unknown.
    pub fn mcp_call(&self, id: TraceId, call: EvidenceEvent) -> bool {
        let max_bytes = self.caps.max_trace_bytes;
        let max_calls = self.caps.max_spans;
        let mut st = self.lock();
        let Some(buf) = st.open.get_mut(&id) else {
            st.counts.unknown_mcp_requests += 1;
            return false;
        };
        if buf.mcp.contains(&call) {
            return true;
        }
        let n = text_len(&call);
        if buf.mcp.len() >= max_calls || buf.bytes + n > max_bytes {
            buf.mcp_dropped += 1;
            return true;
        }
        buf.bytes += n;
        buf.mcp.insert(call);
        true
    }

    /// Counts an MCP endpoint request that named no open call or no published toolkit.
    pub fn unknown_mcp(&self) {
        self.lock().counts.unknown_mcp_requests += 1;
    }

    /// Counts a sink request that named no open call.
    pub fn unknown_sink(&self) {
        self.lock().counts.unknown_sink_hits += 1;
    }

    /// Counts a content request that named no published page.
    pub fn unknown_page(&self) {
        self.lock().counts.unknown_page_requests += 1;
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use opentelemetry_proto::tonic::common::v1::{AnyValue, KeyValue, any_value::Value};
    use opentelemetry_proto::tonic::trace::v1::{ResourceSpans, ScopeSpans, Span};

    const TRACE: TraceId = [9; 16];

    fn tool(id: u8, parent: [u8; 8], name: &str, start: u64) -> Span {
        let kv = |k: &str, v: &str| KeyValue {
            key: k.into(),
            value: Some(AnyValue {
                value: Some(Value::StringValue(v.into())),
            }),
            key_strindex: 0,
        };
        Span {
            trace_id: TRACE.to_vec(),
            span_id: vec![id; 8],
            parent_span_id: parent.to_vec(),
            start_time_unix_nano: start,
            attributes: vec![
                kv("gen_ai.operation.name", "execute_tool"),
                kv("gen_ai.tool.name", name),
            ],
            ..Default::default()
        }
    }

    fn export(spans: Vec<Span>) -> ExportTraceServiceRequest {
        ExportTraceServiceRequest {
            resource_spans: vec![ResourceSpans {
                scope_spans: vec![ScopeSpans {
                    spans,
                    ..Default::default()
                }],
                ..Default::default()
            }],
        }
    }

    fn names(e: &Evidence) -> Vec<&str> {
        e.events
            .iter()
            .map(|e| match e {
                EvidenceEvent::ToolCall { name, .. } => name.as_str(),
                _ => "?",
            })
            .collect()
    }

    #[test]
    fn only_spans_below_the_tries_parent_are_kept() {
        let c = Collector::new(Caps::default());
        let (root, old_root) = ([1; 8], [2; 8]);
        c.open(TRACE, root);
        // This try: an agent span under the root, two tools under it (the child arriving
        // before its parent). An earlier try: a span under its own root, and one under
        // that. And a span whose parent is nowhere.
        c.ingest(&export(vec![
            tool(0x12, [0x11; 8], "b_tool", 5),
            tool(0x21, old_root, "late_tool", 1),
        ]));
        c.ingest(&export(vec![
            tool(0x11, root, "agent", 1),
            tool(0x13, [0x11; 8], "a_tool", 9),
            tool(0x22, [0x21; 8], "late_child", 2),
            tool(0x31, [0x77; 8], "orphan", 3),
        ]));
        let e = c.take(TRACE).unwrap();
        assert_eq!(e.spans, 3);
        assert_eq!(names(&e), ["a_tool", "agent", "b_tool"]);
        assert_eq!(c.counts().foreign_spans, 3);
        assert_eq!(c.counts().spans, 6);
    }

    #[test]
    fn the_order_does_not_depend_on_arrival_or_start_time() {
        let take = |spans: Vec<Span>| {
            let c = Collector::new(Caps::default());
            c.open(TRACE, [1; 8]);
            for s in spans {
                c.ingest(&export(vec![s]));
            }
            c.take(TRACE).unwrap()
        };
        let a = take(vec![tool(3, [1; 8], "x", 1), tool(4, [1; 8], "y", 2)]);
        let b = take(vec![tool(5, [1; 8], "y", 1), tool(6, [1; 8], "x", 7)]);
        assert_eq!(a, b);
        assert_eq!(names(&a), ["x", "y"]);
    }

    #[test]
    fn sink_hits_and_pages_are_sets_filed_only_under_open_calls() {
        let c = Collector::new(Caps::default());
        let hit = |q: &str| EvidenceEvent::SinkHit {
            method: "GET".into(),
            path: "/c".into(),
            query: q.into(),
            body: String::new(),
        };
        assert!(!c.sink_hit(TRACE, hit("a")));
        assert!(!c.page_served(TRACE, "/p/x"));
        c.open(TRACE, [1; 8]);
        for q in ["b", "a", "b"] {
            assert!(c.sink_hit(TRACE, hit(q)));
        }
        c.page_served(TRACE, "/p/x");
        c.page_served(TRACE, "/p/x");
        let e = c.take(TRACE).unwrap();
        assert_eq!((e.sink_hits, e.pages_served, e.spans), (2, 1, 0));
        assert_eq!(e.events[..2], [hit("a"), hit("b")]);
        assert!(e.arrived());
        let n = c.counts();
        assert_eq!((n.unknown_sink_hits, n.unknown_page_requests), (1, 1));
    }

    #[test]
    fn a_parent_cycle_is_not_kept_and_ends() {
        let c = Collector::new(Caps::default());
        c.open(TRACE, [1; 8]);
        c.ingest(&export(vec![
            tool(3, [4; 8], "x", 1),
            tool(4, [3; 8], "y", 1),
        ]));
        let e = c.take(TRACE).unwrap();
        assert_eq!((e.spans, e.events.len()), (0, 0));
        assert_eq!(c.counts().foreign_spans, 2);
    }
}
