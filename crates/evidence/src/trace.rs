//! Trace ids and the W3C `traceparent` header a target sends with each call.
//!
//! The id is derived, not drawn: sha256 over a fixed label, the target's identity and
//! the call's identity (its messages and seed, the same facts that key the call in the
//! cache and the journal), cut to 16 bytes. A rerun sends the same id for the same call;
//! two calls that differ in any message or in their seed get different ids.
//!
//! The parent span id is not derived: it is a nonce drawn for each try of a call. The
//! spans of one try descend from it, so spans a killed or timed-out earlier try of the
//! same call exports late (same trace id) are told apart and left out.

use gauntlet_core::hash::HashWriter;

/// Lowercase hex of `b`.
pub fn hex(b: &[u8]) -> String {
    const H: &[u8; 16] = b"0123456789abcdef";
    let mut s = String::with_capacity(b.len() * 2);
    for x in b {
        s.push(char::from(H[usize::from(x >> 4)]));
        s.push(char::from(H[usize::from(x & 15)]));
    }
    s
}

/// The trace id of one call and the parent span id of one try of it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct CallTrace {
    pub trace_id: [u8; 16],
    /// The per-try nonce sent as the `traceparent`'s parent id.
    pub span_id: [u8; 8],
}

/// A parent span id no other try draws: sha256 over a per-process random key (std's
/// `RandomState`), the process id, a process-wide counter and the time, cut to 8 bytes.
fn nonce() -> [u8; 8] {
    use std::hash::{BuildHasher, Hasher};
    use std::sync::atomic::{AtomicU64, Ordering};
    static COUNTER: AtomicU64 = AtomicU64::new(0);
    let mut k = std::collections::hash_map::RandomState::new().build_hasher();
    k.write_u64(COUNTER.fetch_add(1, Ordering::Relaxed));
    let now = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| d.as_nanos());
    let mut h = HashWriter::new();
    h.field(b"gauntlet-evidence-try-v1");
    h.field(&k.finish().to_le_bytes());
    h.field(&std::process::id().to_le_bytes());
    h.field(&now.to_le_bytes());
    let d = h.finish();
    let mut id: [u8; 8] = d[..8].try_into().expect("8 of 32 bytes");
    if id == [0; 8] {
        id[7] = 1;
    }
    id
}

impl CallTrace {
    /// Derives the trace id from `target` (the target's identity) and `call` (the
    /// call's), each written into the digest by the caller's closure, and draws this
    /// try's parent span id.
    pub fn derive(target: &[u8], call: impl FnOnce(&mut HashWriter)) -> CallTrace {
        let mut h = HashWriter::new();
        h.field(b"gauntlet-evidence-trace-v1");
        h.field(target);
        call(&mut h);
        let d = h.finish();
        let mut trace_id: [u8; 16] = d[..16].try_into().expect("16 of 32 bytes");
        // All-zero ids are invalid in W3C trace context.
        if trace_id == [0; 16] {
            trace_id[15] = 1;
        }
        CallTrace {
            trace_id,
            span_id: nonce(),
        }
    }

    /// The `traceparent` header value: version 00, sampled.
    pub fn traceparent(&self) -> String {
        format!("00-{}-{}-01", hex(&self.trace_id), hex(&self.span_id))
    }

    /// The per-call canary the sink and the content server use: `CANARY-` and the first
    /// 12 hex digits of the trace id.
    pub fn canary(&self) -> String {
        canary(&self.trace_id)
    }
}

/// The canary of the call whose trace id is `id`: `CANARY-` and the first 12 hex digits
/// of the id, upper case (so it never appears inside the call's lowercase token).
pub fn canary(id: &[u8; 16]) -> String {
    format!("CANARY-{}", hex(id)[..12].to_ascii_uppercase())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ids_are_stable_and_differ_per_call() {
        let a = CallTrace::derive(b"t", |h| h.field(b"call 1"));
        let b = CallTrace::derive(b"t", |h| h.field(b"call 2"));
        let again = CallTrace::derive(b"t", |h| h.field(b"call 1"));
        assert_eq!(a.trace_id, again.trace_id);
        assert_ne!(a.trace_id, b.trace_id);
        // Each try its own parent span id.
        assert_ne!(a.span_id, again.span_id);
        assert_ne!(a.span_id, [0; 8]);
        let tp = a.traceparent();
        assert_eq!(tp.len(), 55);
        assert!(tp.starts_with("00-") && tp.ends_with("-01"));
        assert!(a.canary().starts_with("CANARY-"));
        assert_eq!(a.canary().len(), 19);
    }
}
