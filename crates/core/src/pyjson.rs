//! JSON text the way Python's `json.dumps` writes it (its defaults: `ensure_ascii=True`,
//! separators `", "` and `": "`, or `","` + newline and `": "` with `indent`).
//!
//! Two agent benchmarks gauntlet speaks to build prompts with `json.dumps`: AgentDojo's
//! prompted tool calling returns tool results as `{"result": "…"}` and lists the tools
//! as indented JSON, and InjecAgent lists its tool specifications the same way. Writing
//! the same bytes keeps the text a model sees the same as the benchmark's own harness
//! shows it. Keys are written in the order the value holds them (a `serde_json::Value`
//! object is ordered by key).

use serde_json::Value;
use std::fmt::Write;

/// `json.dumps(s)` of a string: quoted, `"` and `\` escaped, `\n \r \t \b \f` by name,
/// every other character outside printable ASCII (controls, DEL and all non-ASCII) as
/// `\uXXXX`, characters beyond the BMP as a surrogate pair.
pub fn string(s: &str) -> String {
    let mut out = String::with_capacity(s.len() + 2);
    push_string(&mut out, s);
    out
}

fn push_string(out: &mut String, s: &str) {
    out.push('"');
    for c in s.chars() {
        match c {
            '"' => out.push_str("\\\""),
            '\\' => out.push_str("\\\\"),
            '\n' => out.push_str("\\n"),
            '\r' => out.push_str("\\r"),
            '\t' => out.push_str("\\t"),
            '\u{8}' => out.push_str("\\b"),
            '\u{c}' => out.push_str("\\f"),
            ' '..='~' => out.push(c),
            _ => {
                let mut units = [0u16; 2];
                for u in c.encode_utf16(&mut units) {
                    let _ = write!(out, "\\u{u:04x}");
                }
            }
        }
    }
    out.push('"');
}

/// `json.dumps(v)` (no indent): `{"a": 1, "b": [1, 2]}`.
pub fn dumps(v: &Value) -> String {
    let mut out = String::new();
    write_value(&mut out, v, None, 0);
    out
}

/// `json.dumps(v, indent=n)`: nested items on their own lines, `n` spaces per level,
/// empty containers as `{}` / `[]` (Python's `indent=True` is `indent=1`).
pub fn dumps_indent(v: &Value, indent: usize) -> String {
    let mut out = String::new();
    write_value(&mut out, v, Some(indent), 0);
    out
}

/// Writes `v` at nesting `level` (public for callers that lay out the top level
/// themselves, e.g. to keep a field order a `Value` cannot hold).
pub fn write_value(out: &mut String, v: &Value, indent: Option<usize>, level: usize) {
    match v {
        Value::Null => out.push_str("null"),
        Value::Bool(true) => out.push_str("true"),
        Value::Bool(false) => out.push_str("false"),
        Value::Number(n) => number(out, n),
        Value::String(s) => push_string(out, s),
        Value::Array(items) if items.is_empty() => out.push_str("[]"),
        Value::Object(map) if map.is_empty() => out.push_str("{}"),
        Value::Array(items) => {
            out.push('[');
            for (i, item) in items.iter().enumerate() {
                separator(out, i, indent, level + 1);
                write_value(out, item, indent, level + 1);
            }
            close(out, indent, level);
            out.push(']');
        }
        Value::Object(map) => {
            out.push('{');
            for (i, (k, item)) in map.iter().enumerate() {
                separator(out, i, indent, level + 1);
                push_string(out, k);
                out.push_str(": ");
                write_value(out, item, indent, level + 1);
            }
            close(out, indent, level);
            out.push('}');
        }
    }
}

/// Before item `i` of a container whose items sit at `level`.
pub fn separator(out: &mut String, i: usize, indent: Option<usize>, level: usize) {
    match indent {
        None if i > 0 => out.push_str(", "),
        None => {}
        Some(n) => {
            if i > 0 {
                out.push(',');
            }
            out.push('\n');
            out.extend(std::iter::repeat_n(' ', n * level));
        }
    }
}

/// Before the closing bracket of a container at `level`.
pub fn close(out: &mut String, indent: Option<usize>, level: usize) {
    if let Some(n) = indent {
        out.push('\n');
        out.extend(std::iter::repeat_n(' ', n * level));
    }
}

/// Python's `repr` of an int or a float: integers as written, floats with a `.0` when
/// they are whole (`1.0`, not `1`), exponents as Python writes them (`1e+20`).
fn number(out: &mut String, n: &serde_json::Number) {
    if n.is_i64() || n.is_u64() {
        let _ = write!(out, "{n}");
        return;
    }
    // JSON numbers are finite.
    let f = n.as_f64().unwrap_or(0.0);
    // The shortest digits that read back as `f`, in scientific form (`1.5e-7`); Python's
    // repr uses that form when the exponent is below -4 or at least 16, else positional.
    let sci = format!("{f:e}");
    let (mantissa, exp) = sci.split_once('e').unwrap_or((&sci, "0"));
    let exp: i32 = exp.parse().unwrap_or(0);
    if f == 0.0 || (-4..16).contains(&exp) {
        let s = format!("{f}");
        out.push_str(&s);
        if !s.contains('.') {
            out.push_str(".0");
        }
    } else {
        let sign = if exp < 0 { '-' } else { '+' };
        let _ = write!(out, "{mantissa}e{sign}{:02}", exp.abs());
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;
    use serde_json::json;

    #[test]
    fn strings_escape_like_python() {
        // Values checked against CPython 3.11's json.dumps.
        assert_eq!(string("a\"b\\c"), r#""a\"b\\c""#);
        assert_eq!(string("l1\nl2\t\r\u{8}\u{c}"), r#""l1\nl2\t\r\b\f""#);
        assert_eq!(string("\u{1}\u{7f}"), r#""\u0001\u007f""#);
        assert_eq!(string("café"), r#""caf\u00e9""#);
        assert_eq!(string("😀"), r#""\ud83d\ude00""#);
        assert_eq!(string("</function>"), r#""</function>""#);
    }

    #[test]
    fn compact_and_indented_layouts() {
        let v = json!({"b": [1, 2.5, true, null], "a": {}, "c": []});
        assert_eq!(
            dumps(&v),
            r#"{"a": {}, "b": [1, 2.5, true, null], "c": []}"#
        );
        assert_eq!(
            dumps_indent(&v, 2),
            "{\n  \"a\": {},\n  \"b\": [\n    1,\n    2.5,\n    true,\n    null\n  ],\n  \"c\": []\n}"
        );
        assert_eq!(
            dumps_indent(&json!([{"x": 1}]), 1),
            "[\n {\n  \"x\": 1\n }\n]"
        );
        assert_eq!(dumps(&json!({"result": "ok"})), r#"{"result": "ok"}"#);
    }

    #[test]
    fn numbers_like_python_repr() {
        assert_eq!(dumps(&json!(1.0)), "1.0");
        assert_eq!(dumps(&json!(-3)), "-3");
        assert_eq!(dumps(&json!(0.1)), "0.1");
        assert_eq!(dumps(&json!(1e20)), "1e+20");
        assert_eq!(dumps(&json!(1.5e-7)), "1.5e-07");
        assert_eq!(dumps(&json!(2.5)), "2.5");
        assert_eq!(dumps(&json!(123.456)), "123.456");
        assert_eq!(dumps(&json!(1e16)), "1e+16");
        assert_eq!(dumps(&json!(0.0001)), "0.0001");
        assert_eq!(dumps(&json!(0.00001)), "1e-05");
        assert_eq!(dumps(&json!(0.0)), "0.0");
    }

    proptest! {
        /// Whatever the text, the output is ASCII JSON that reads back as the same value.
        #[test]
        fn round_trips_as_ascii(s in any::<String>(), k in any::<String>(), n in any::<i64>()) {
            let v = json!({k.clone(): [s.clone(), n], "z": {"s": s}});
            for text in [dumps(&v), dumps_indent(&v, 2)] {
                prop_assert!(text.is_ascii());
                let back: Value = serde_json::from_str(&text).unwrap();
                prop_assert_eq!(&back, &v);
            }
        }
    }
}
