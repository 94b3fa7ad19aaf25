//! Canonical JSON: object keys sorted (byte order), no whitespace, numbers and strings as
//! serde_json writes them. Two definitions with the same content have the same canonical
//! text whatever order their server wrote the keys in, so its sha256 pins a definition.

use serde_json::Value;
use sha2::{Digest, Sha256};

/// The canonical text of `v`.
pub fn to_string(v: &Value) -> String {
    let mut out = String::new();
    write(v, &mut out);
    out
}

fn write(v: &Value, out: &mut String) {
    match v {
        Value::Object(m) => {
            let mut keys: Vec<&String> = m.keys().collect();
            keys.sort();
            out.push('{');
            for (i, k) in keys.into_iter().enumerate() {
                if i > 0 {
                    out.push(',');
                }
                out.push_str(&Value::String(k.clone()).to_string());
                out.push(':');
                write(&m[k], out);
            }
            out.push('}');
        }
        Value::Array(a) => {
            out.push('[');
            for (i, x) in a.iter().enumerate() {
                if i > 0 {
                    out.push(',');
                }
                write(x, out);
            }
            out.push(']');
        }
        other => out.push_str(&other.to_string()),
    }
}

/// Lowercase hex sha256 of the canonical text.
pub fn sha256(v: &Value) -> String {
    let d = Sha256::digest(to_string(v).as_bytes());
    d.iter().map(|b| format!("{b:02x}")).collect()
}

/// The parts of a tool definition the model is shown and a pin covers: `name`, `title`,
/// `description`, `inputSchema`, `outputSchema`, `annotations` (not `_meta` or `icons`).
pub fn tool_definition(tool: &Value) -> Value {
    let mut m = serde_json::Map::new();
    for k in [
        "name",
        "title",
        "description",
        "inputSchema",
        "outputSchema",
        "annotations",
    ] {
        if let Some(v) = tool.get(k) {
            m.insert(k.to_string(), v.clone());
        }
    }
    Value::Object(m)
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn key_order_and_meta_do_not_change_the_digest() {
        let a = json!({"name": "t", "description": "d", "inputSchema": {"type": "object", "properties": {"b": {}, "a": {}}}, "_meta": {"x": 1}});
        let b: Value = serde_json::from_str(r#"{"inputSchema":{"properties":{"a":{},"b":{}},"type":"object"},"description":"d","name":"t"}"#).unwrap();
        assert_eq!(sha256(&tool_definition(&a)), sha256(&tool_definition(&b)));
        assert_eq!(
            to_string(&tool_definition(&b)),
            r#"{"description":"d","inputSchema":{"properties":{"a":{},"b":{}},"type":"object"},"name":"t"}"#
        );
        let c = json!({"name": "t", "description": "d ", "inputSchema": {"type": "object", "properties": {"b": {}, "a": {}}}});
        assert_ne!(sha256(&tool_definition(&a)), sha256(&tool_definition(&c)));
    }
}
