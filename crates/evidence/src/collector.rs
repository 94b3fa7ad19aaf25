//! The per-run store of evidence: one bounded buffer per open trace (a target call in
//! flight or settling), released when the call takes its evidence.
//!
//! A call opens its trace before it sends the request and takes the buffer after its
//! settle window; spans of a trace nobody has open are counted and dropped at once. A
//! buffer holds at most `max_spans` spans' events and `max_trace_bytes` bytes of their
//! text; spans past either cap are counted as dropped. Open traces are bounded by the
//! calls in flight, so the whole store is bounded by those caps times the concurrency.

use crate::caps::Caps;
use gauntlet_core::evidence::{Evidence, EvidenceEvent};
use opentelemetry_proto::tonic::collector::trace::v1::ExportTraceServiceRequest;
use std::collections::HashMap;
use std::sync::Mutex;

/// A W3C trace id.
pub type TraceId = [u8; 16];

#[derive(Default)]
struct Buffer {
    spans: u64,
    dropped: u64,
    bytes: usize,
    /// (start time, span id, what it shows).
    events: Vec<(u64, Vec<u8>, EvidenceEvent)>,
    sink: Vec<EvidenceEvent>,
    sink_hits: u64,
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
    /// Requests refused (too large, too many elements, too deep, malformed, wrong type).
    pub refused_requests: u64,
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
            span_id,
            ..
        } => name.len() + arguments.len() + result.as_ref().map_or(0, String::len) + span_id.len(),
        EvidenceEvent::HttpRequest {
            method,
            url,
            host,
            span_id,
        } => {
            method.len()
                + url.as_ref().map_or(0, String::len)
                + host.as_ref().map_or(0, String::len)
                + span_id.len()
        }
        EvidenceEvent::SinkHit {
            method,
            path,
            query,
            body,
        } => method.len() + path.len() + query.len() + body.len(),
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

    /// Starts collecting `id`'s spans (a second open of an id already open is a no-op).
    pub fn open(&self, id: TraceId) {
        self.lock().open.entry(id).or_default();
    }

    /// Stops collecting `id` and returns what arrived, events in a fixed order (span
    /// start time, then span id; sink hits after, in arrival order). `None` when `id`
    /// was not open.
    pub fn take(&self, id: TraceId) -> Option<Evidence> {
        let b = self.lock().open.remove(&id)?;
        let mut events = b.events;
        events.sort_by(|a, b| (a.0, &a.1).cmp(&(b.0, &b.1)));
        let sink_hits = b.sink_hits;
        let mut out: Vec<EvidenceEvent> = events.into_iter().map(|(_, _, e)| e).collect();
        out.extend(b.sink);
        Some(Evidence {
            trace_id: crate::trace::hex(&id),
            canary: None,
            spans: b.spans,
            dropped_spans: b.dropped,
            sink_hits,
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
                    buf.spans += 1;
                    if buf.spans > max_spans as u64 {
                        buf.dropped += 1;
                        st.counts.dropped_spans += 1;
                        continue;
                    }
                    if let Some(e) = crate::spans::read_span(span, cap) {
                        let n = text_len(&e);
                        if buf.bytes + n > max_bytes {
                            buf.dropped += 1;
                            st.counts.dropped_spans += 1;
                            continue;
                        }
                        buf.bytes += n;
                        buf.events
                            .push((span.start_time_unix_nano, span.span_id.clone(), e));
                    }
                }
            }
        }
    }

    /// Files a sink hit under `id` when it is open; false when it is not.
    pub fn sink_hit(&self, id: TraceId, hit: EvidenceEvent) -> bool {
        let max_bytes = self.caps.max_trace_bytes;
        let max_hits = self.caps.max_spans;
        let mut st = self.lock();
        let Some(buf) = st.open.get_mut(&id) else {
            return false;
        };
        buf.sink_hits += 1;
        let n = text_len(&hit);
        if buf.sink.len() >= max_hits || buf.bytes + n > max_bytes {
            buf.dropped += 1;
            return true;
        }
        buf.bytes += n;
        buf.sink.push(hit);
        true
    }
}
