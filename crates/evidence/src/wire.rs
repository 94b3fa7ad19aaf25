//! Bounds checked on an OTLP body before it is decoded, so that decoding cannot cost far
//! more memory than the body's own size.
//!
//! A decoded span is a ~250-byte struct, but an empty span is 2 bytes of protobuf (and
//! `{}` 2 bytes of JSON): a capped 4 MiB body of empty spans, attributes or array values
//! would decode into half a gigabyte. Before decoding, the protobuf body is walked at
//! the wire level along the OTLP trace schema (which fields hold which messages),
//! counting every message it holds, and the JSON body is scanned for its objects and
//! arrays; a body over the element cap or nested deeper than the depth cap is refused
//! without being decoded. The walk allocates nothing.

/// Why a body was refused before decoding.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum WireError {
    #[error("the body holds more than {cap} messages (spans, attributes, values)")]
    TooManyElements { cap: usize },
    #[error("the body nests deeper than {cap} levels")]
    TooDeep { cap: usize },
    #[error("the body is not well-formed protobuf: {0}")]
    Malformed(&'static str),
}

/// The OTLP trace messages the walk knows the fields of.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Msg {
    Request,
    ResourceSpans,
    Resource,
    ScopeSpans,
    Scope,
    Span,
    Event,
    Link,
    Status,
    KeyValue,
    AnyValue,
    ArrayValue,
    KeyValueList,
}

/// What a length-delimited field of `m` numbered `field` holds.
enum Field {
    Message(Msg),
    /// A string or bytes: one allocation of its own length.
    Leaf,
    /// A field the schema does not name: counted as if every 2 bytes were a message.
    Unknown,
}

fn field(m: Msg, f: u64) -> Field {
    use Field::{Leaf, Message};
    match (m, f) {
        (Msg::Request, 1) => Message(Msg::ResourceSpans),
        (Msg::ResourceSpans, 1) => Message(Msg::Resource),
        (Msg::ResourceSpans, 2) => Message(Msg::ScopeSpans),
        (Msg::ResourceSpans | Msg::ScopeSpans, 3) => Leaf,
        (Msg::Resource, 1) => Message(Msg::KeyValue),
        (Msg::ScopeSpans, 1) => Message(Msg::Scope),
        (Msg::ScopeSpans, 2) => Message(Msg::Span),
        (Msg::Scope, 1 | 2) => Leaf,
        (Msg::Scope, 3) => Message(Msg::KeyValue),
        (Msg::Span, 1..=5) => Leaf,
        (Msg::Span, 9) => Message(Msg::KeyValue),
        (Msg::Span, 11) => Message(Msg::Event),
        (Msg::Span, 13) => Message(Msg::Link),
        (Msg::Span, 15) => Message(Msg::Status),
        (Msg::Event, 2) => Leaf,
        (Msg::Event, 3) => Message(Msg::KeyValue),
        (Msg::Link, 1..=3) => Leaf,
        (Msg::Link, 4) => Message(Msg::KeyValue),
        (Msg::Status, 2) => Leaf,
        (Msg::KeyValue, 1) => Leaf,
        (Msg::KeyValue, 2) => Message(Msg::AnyValue),
        (Msg::AnyValue, 1 | 7) => Leaf,
        (Msg::AnyValue, 5) => Message(Msg::ArrayValue),
        (Msg::AnyValue, 6) => Message(Msg::KeyValueList),
        (Msg::ArrayValue, 1) => Message(Msg::AnyValue),
        (Msg::KeyValueList, 1) => Message(Msg::KeyValue),
        _ => Field::Unknown,
    }
}

fn varint(b: &[u8], at: &mut usize) -> Result<u64, WireError> {
    let mut v: u64 = 0;
    for shift in (0..70).step_by(7) {
        let Some(&byte) = b.get(*at) else {
            return Err(WireError::Malformed("truncated varint"));
        };
        *at += 1;
        if shift == 63 && byte > 1 {
            return Err(WireError::Malformed("varint overflows 64 bits"));
        }
        v |= u64::from(byte & 0x7f) << shift;
        if byte & 0x80 == 0 {
            return Ok(v);
        }
    }
    Err(WireError::Malformed("varint longer than 10 bytes"))
}

struct Walk {
    count: usize,
    max_elements: usize,
    max_depth: usize,
}

impl Walk {
    fn add(&mut self, n: usize) -> Result<(), WireError> {
        self.count = self.count.saturating_add(n);
        if self.count > self.max_elements {
            return Err(WireError::TooManyElements {
                cap: self.max_elements,
            });
        }
        Ok(())
    }

    fn message(&mut self, b: &[u8], m: Msg, depth: usize) -> Result<(), WireError> {
        if depth > self.max_depth {
            return Err(WireError::TooDeep {
                cap: self.max_depth,
            });
        }
        let mut at = 0;
        while at < b.len() {
            let key = varint(b, &mut at)?;
            let (num, wire) = (key >> 3, key & 7);
            if num == 0 {
                return Err(WireError::Malformed("field number 0"));
            }
            match wire {
                0 => {
                    varint(b, &mut at)?;
                }
                1 | 5 => {
                    at += if wire == 1 { 8 } else { 4 };
                    if at > b.len() {
                        return Err(WireError::Malformed("truncated fixed-width field"));
                    }
                }
                2 => {
                    let len = usize::try_from(varint(b, &mut at)?)
                        .map_err(|_| WireError::Malformed("length overflows"))?;
                    let end = at
                        .checked_add(len)
                        .filter(|&e| e <= b.len())
                        .ok_or(WireError::Malformed("length past the end"))?;
                    let inner = &b[at..end];
                    match field(m, num) {
                        Field::Message(sub) => {
                            self.add(1)?;
                            self.message(inner, sub, depth + 1)?;
                        }
                        Field::Leaf => self.add(1)?,
                        Field::Unknown => self.add(1 + len / 2)?,
                    }
                    at = end;
                }
                _ => return Err(WireError::Malformed("group or unknown wire type")),
            }
        }
        Ok(())
    }
}

/// Checks an `ExportTraceServiceRequest` in protobuf: at most `max_elements` messages
/// and strings in all, nested at most `max_depth` deep. Returns the count.
pub fn check_protobuf(
    body: &[u8],
    max_elements: usize,
    max_depth: usize,
) -> Result<usize, WireError> {
    let mut w = Walk {
        count: 0,
        max_elements,
        max_depth,
    };
    w.message(body, Msg::Request, 0)?;
    Ok(w.count)
}

/// Checks a JSON body: at most `max_elements` objects and arrays, nested at most
/// `max_depth` deep (brackets inside strings do not count). Well-formedness is left to
/// the decoder. Returns the count.
pub fn check_json(body: &[u8], max_elements: usize, max_depth: usize) -> Result<usize, WireError> {
    let (mut count, mut depth) = (0usize, 0usize);
    let (mut in_str, mut escaped) = (false, false);
    for &c in body {
        if in_str {
            if escaped {
                escaped = false;
            } else if c == b'\\' {
                escaped = true;
            } else if c == b'"' {
                in_str = false;
            }
            continue;
        }
        match c {
            b'"' => in_str = true,
            b'{' | b'[' => {
                count += 1;
                depth += 1;
                if count > max_elements {
                    return Err(WireError::TooManyElements { cap: max_elements });
                }
                if depth > max_depth {
                    return Err(WireError::TooDeep { cap: max_depth });
                }
            }
            b'}' | b']' => depth = depth.saturating_sub(1),
            _ => {}
        }
    }
    Ok(count)
}

#[cfg(test)]
mod tests {
    use super::*;
    use opentelemetry_proto::tonic::collector::trace::v1::ExportTraceServiceRequest;
    use opentelemetry_proto::tonic::trace::v1::{ResourceSpans, ScopeSpans, Span};
    use proptest::prelude::*;
    use prost::Message;

    fn request(spans: usize) -> Vec<u8> {
        ExportTraceServiceRequest {
            resource_spans: vec![ResourceSpans {
                scope_spans: vec![ScopeSpans {
                    spans: vec![Span::default(); spans],
                    ..Default::default()
                }],
                ..Default::default()
            }],
        }
        .encode_to_vec()
    }

    #[test]
    fn counts_every_message_and_refuses_past_the_cap() {
        assert_eq!(check_protobuf(&request(10), 100, 16), Ok(12));
        assert_eq!(
            check_protobuf(&request(200), 100, 16),
            Err(WireError::TooManyElements { cap: 100 })
        );
        assert_eq!(check_json(br#"{"a":[{},{"s":"{[["}]}"#, 10, 4), Ok(4));
        assert_eq!(
            check_json(b"[[[[[]]]]]", 100, 4),
            Err(WireError::TooDeep { cap: 4 })
        );
    }

    #[test]
    fn deep_nesting_is_refused_before_decoding() {
        // AnyValue → ArrayValue → AnyValue … 200 levels.
        let mut inner: Vec<u8> = Vec::new();
        for _ in 0..200 {
            let mut arr = vec![0x0a];
            prost::encoding::encode_varint(inner.len() as u64, &mut arr);
            arr.extend_from_slice(&inner);
            let mut any = vec![0x2a];
            prost::encoding::encode_varint(arr.len() as u64, &mut any);
            any.extend_from_slice(&arr);
            inner = any;
        }
        // KeyValue{value: inner} in a span's attributes.
        let mut kv = vec![0x12];
        prost::encoding::encode_varint(inner.len() as u64, &mut kv);
        kv.extend_from_slice(&inner);
        let mut span = vec![0x4a];
        prost::encoding::encode_varint(kv.len() as u64, &mut span);
        span.extend_from_slice(&kv);
        let mut ss = vec![0x12];
        prost::encoding::encode_varint(span.len() as u64, &mut ss);
        ss.extend_from_slice(&span);
        let mut rs = vec![0x12];
        prost::encoding::encode_varint(ss.len() as u64, &mut rs);
        rs.extend_from_slice(&ss);
        let mut req = vec![0x0a];
        prost::encoding::encode_varint(rs.len() as u64, &mut req);
        req.extend_from_slice(&rs);
        assert_eq!(
            check_protobuf(&req, 1_000_000, 64),
            Err(WireError::TooDeep { cap: 64 })
        );
    }

    proptest! {
        /// Any bytes: an answer, never a panic; an accepted body's count is within the cap.
        #[test]
        fn never_panics_on_any_bytes(b in proptest::collection::vec(any::<u8>(), 0..512)) {
            if let Ok(n) = check_protobuf(&b, 64, 8) {
                prop_assert!(n <= 64);
            }
            if let Ok(n) = check_json(&b, 64, 8) {
                prop_assert!(n <= 64);
            }
        }

        /// A well-formed request of n spans counts n + 2 messages: the walk agrees
        /// with the encoder.
        #[test]
        fn agrees_with_the_encoder(n in 0usize..300) {
            prop_assert_eq!(check_protobuf(&request(n), 10_000, 16), Ok(n + 2));
        }
    }
}
