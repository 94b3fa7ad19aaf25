//! Reading what a span shows: a tool call (OpenTelemetry GenAI semantic conventions,
//! OpenInference) or an outgoing HTTP request (HTTP client semantic conventions, current
//! and older attribute names). Every other span is counted and shows nothing.
//!
//! Attribute values are untrusted: each is rendered to text capped at the collector's
//! per-attribute byte cap (cut on a character boundary, marked), arrays and maps as
//! compact JSON built under the same cap.

use gauntlet_core::evidence::{EvidenceEvent, SpanConvention};
use opentelemetry_proto::tonic::common::v1::{AnyValue, KeyValue, any_value::Value};
use opentelemetry_proto::tonic::trace::v1::Span;

/// The mark put after a value cut at the attribute cap.
pub const CUT_MARK: &str = "…[cut]";

/// The attributes a span is read by, the rest ignored.
const READ: &[&str] = &[
    "gen_ai.operation.name",
    "gen_ai.tool.name",
    "gen_ai.tool.call.arguments",
    "gen_ai.tool.call.result",
    "openinference.span.kind",
    "tool.name",
    "input.value",
    "output.value",
    "http.request.method",
    "url.full",
    "server.address",
    "http.method",
    "http.url",
    "net.peer.name",
];

/// Appends `s` to `out` without letting `out` pass `cap` bytes; false once cut.
fn push_capped(out: &mut String, s: &str, cap: usize) -> bool {
    let room = cap.saturating_sub(out.len());
    if s.len() <= room {
        out.push_str(s);
        return true;
    }
    let mut end = room;
    while !s.is_char_boundary(end) {
        end -= 1;
    }
    out.push_str(&s[..end]);
    false
}

/// Renders an attribute value as text under `cap` bytes (then [`CUT_MARK`]).
pub fn render(v: &AnyValue, cap: usize) -> String {
    let mut out = String::new();
    if !render_into(v, &mut out, cap, true) {
        out.push_str(CUT_MARK);
    }
    out
}

/// Writes `v` into `out`; a string at the top level is itself, nested it is JSON-quoted.
/// False once the cap cut it.
fn render_into(v: &AnyValue, out: &mut String, cap: usize, top: bool) -> bool {
    match &v.value {
        None => push_capped(out, if top { "" } else { "null" }, cap),
        Some(Value::StringValue(s)) if top => push_capped(out, s, cap),
        Some(Value::StringValue(s)) => {
            let q = serde_json::Value::String(s.clone()).to_string();
            push_capped(out, &q, cap)
        }
        Some(Value::BoolValue(b)) => push_capped(out, if *b { "true" } else { "false" }, cap),
        Some(Value::IntValue(i)) => push_capped(out, &i.to_string(), cap),
        Some(Value::DoubleValue(d)) => push_capped(out, &d.to_string(), cap),
        Some(Value::StringValueStrindex(i)) => push_capped(out, &format!("#{i}"), cap),
        Some(Value::BytesValue(b)) => {
            let hex: String = b
                .iter()
                .take(cap / 2 + 1)
                .map(|x| format!("{x:02x}"))
                .collect();
            push_capped(out, &hex, cap) && b.len() * 2 <= cap
        }
        Some(Value::ArrayValue(a)) => {
            if !push_capped(out, "[", cap) {
                return false;
            }
            for (i, x) in a.values.iter().enumerate() {
                if (i > 0 && !push_capped(out, ",", cap)) || !render_into(x, out, cap, false) {
                    return false;
                }
            }
            push_capped(out, "]", cap)
        }
        Some(Value::KvlistValue(l)) => {
            if !push_capped(out, "{", cap) {
                return false;
            }
            for (i, kv) in l.values.iter().enumerate() {
                let k = serde_json::Value::String(kv.key.clone()).to_string();
                if (i > 0 && !push_capped(out, ",", cap))
                    || !push_capped(out, &k, cap)
                    || !push_capped(out, ":", cap)
                {
                    return false;
                }
                let fine = match &kv.value {
                    Some(v) => render_into(v, out, cap, false),
                    None => push_capped(out, "null", cap),
                };
                if !fine {
                    return false;
                }
            }
            push_capped(out, "}", cap)
        }
    }
}

/// The attributes of `attrs` that [`READ`] names, rendered (the first of each key).
fn read(attrs: &[KeyValue], cap: usize) -> Vec<(&'static str, String)> {
    let mut out: Vec<(&'static str, String)> = Vec::new();
    for kv in attrs {
        let Some(&k) = READ.iter().find(|k| **k == kv.key) else {
            continue;
        };
        if out.iter().any(|(have, _)| *have == k) {
            continue;
        }
        let v = kv
            .value
            .as_ref()
            .map(|v| render(v, cap))
            .unwrap_or_default();
        out.push((k, v));
    }
    out
}

/// What `span` shows, if anything. `cap` is the per-attribute byte cap.
pub fn read_span(span: &Span, cap: usize) -> Option<EvidenceEvent> {
    let attrs = read(&span.attributes, cap);
    let get = |k: &str| {
        attrs
            .iter()
            .find(|(have, _)| *have == k)
            .map(|(_, v)| v.clone())
    };
    let name = || {
        let mut n = String::new();
        if !push_capped(&mut n, &span.name, cap) {
            n.push_str(CUT_MARK);
        }
        n
    };
    if get("gen_ai.operation.name").as_deref() == Some("execute_tool") {
        return Some(EvidenceEvent::ToolCall {
            convention: SpanConvention::GenAi,
            name: get("gen_ai.tool.name")
                .filter(|n| !n.is_empty())
                .unwrap_or_else(name),
            arguments: get("gen_ai.tool.call.arguments").unwrap_or_default(),
            result: get("gen_ai.tool.call.result"),
        });
    }
    if get("openinference.span.kind").is_some_and(|k| k.eq_ignore_ascii_case("tool")) {
        return Some(EvidenceEvent::ToolCall {
            convention: SpanConvention::OpenInference,
            name: get("tool.name")
                .filter(|n| !n.is_empty())
                .unwrap_or_else(name),
            arguments: get("input.value").unwrap_or_default(),
            result: get("output.value"),
        });
    }
    let method = get("http.request.method").or_else(|| get("http.method"))?;
    let url = get("url.full").or_else(|| get("http.url"));
    let host = get("server.address").or_else(|| get("net.peer.name"));
    if url.is_none() && host.is_none() {
        return None;
    }
    Some(EvidenceEvent::HttpRequest { method, url, host })
}

#[cfg(test)]
mod tests {
    use super::*;
    use opentelemetry_proto::tonic::common::v1::{ArrayValue, KeyValueList};

    fn s(v: &str) -> AnyValue {
        AnyValue {
            value: Some(Value::StringValue(v.into())),
        }
    }
    fn kv(k: &str, v: AnyValue) -> KeyValue {
        KeyValue {
            key: k.into(),
            value: Some(v),
            key_strindex: 0,
        }
    }

    #[test]
    fn reads_the_three_conventions() {
        let span = Span {
            span_id: vec![1; 8],
            name: "execute_tool send_email".into(),
            attributes: vec![
                kv("gen_ai.operation.name", s("execute_tool")),
                kv("gen_ai.tool.name", s("send_email")),
                kv(
                    "gen_ai.tool.call.arguments",
                    s(r#"{"to":"x@y.example.invalid"}"#),
                ),
            ],
            ..Default::default()
        };
        assert_eq!(
            read_span(&span, 100),
            Some(EvidenceEvent::ToolCall {
                convention: SpanConvention::GenAi,
                name: "send_email".into(),
                arguments: r#"{"to":"x@y.example.invalid"}"#.into(),
                result: None,
            })
        );
        let span = Span {
            name: "fetch_url".into(),
            attributes: vec![
                kv("openinference.span.kind", s("TOOL")),
                kv("input.value", s("{\"url\":\"u\"}")),
                kv("output.value", s("page")),
            ],
            ..Default::default()
        };
        assert!(matches!(
            read_span(&span, 100),
            Some(EvidenceEvent::ToolCall { convention: SpanConvention::OpenInference, name, result: Some(r), .. })
                if name == "fetch_url" && r == "page"
        ));
        let span = Span {
            attributes: vec![
                kv("http.request.method", s("GET")),
                kv("url.full", s("http://sink.example.invalid/x?c=CANARY-1")),
            ],
            ..Default::default()
        };
        assert!(matches!(
            read_span(&span, 100),
            Some(EvidenceEvent::HttpRequest { method, url: Some(_), host: None, .. }) if method == "GET"
        ));
        // A span of none of them shows nothing.
        assert_eq!(read_span(&Span::default(), 100), None);
    }

    #[test]
    fn values_are_capped_and_nested_values_rendered_as_json() {
        let nested = AnyValue {
            value: Some(Value::KvlistValue(KeyValueList {
                values: vec![kv(
                    "a",
                    AnyValue {
                        value: Some(Value::ArrayValue(ArrayValue {
                            values: vec![s("x\"y"), AnyValue::default()],
                        })),
                    },
                )],
            })),
        };
        assert_eq!(render(&nested, 100), r#"{"a":["x\"y",null]}"#);
        assert_eq!(render(&nested, 5), format!("{{\"a\":{CUT_MARK}"));
        assert_eq!(render(&s("ééé"), 3), format!("é{CUT_MARK}"));
    }
}
