//! The text of a definition, field by field, for the rules to read.
//!
//! A client hands the model a tool's name, title, description and its whole input schema
//! (many pass the schema through untouched), so every string in a definition is text the
//! model may read: not only `description`, but parameter descriptions, enum values,
//! defaults, examples, and any unknown schema key a server adds. [`fields`] walks them all
//! and names each by its JSON pointer; `_meta` and `icons` are skipped (clients do not
//! show them to the model).

use serde::{Deserialize, Serialize};
use serde_json::Value;

/// What kind of definition an item is: what a finding is about.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum ItemKind {
    Tool,
    Prompt,
    Resource,
}

impl ItemKind {
    pub fn as_str(self) -> &'static str {
        match self {
            ItemKind::Tool => "tool",
            ItemKind::Prompt => "prompt",
            ItemKind::Resource => "resource",
        }
    }
}

/// What kind of slot a string fills.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Slot {
    /// Free prose meant for the model: a description, a title, an unknown key's string.
    Prose,
    /// A value the model may be shown or asked to pass: an `enum` entry, a `default`,
    /// `const` or `examples` entry.
    Value,
    /// A name: the item's own name, a parameter's name.
    Name,
}

/// One string of a definition.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Field {
    /// JSON pointer inside the definition (`/inputSchema/properties/to/description`).
    pub pointer: String,
    pub text: String,
    pub slot: Slot,
}

/// A parameter of a tool's input schema (top level and nested objects).
#[derive(Debug, Clone, PartialEq)]
pub struct Param<'a> {
    /// JSON pointer of the parameter's schema.
    pub pointer: String,
    pub name: &'a str,
    pub schema: &'a Value,
}

/// Every string of a definition (see the module docs), in document order.
pub fn fields(item: &Value) -> Vec<Field> {
    let mut out = Vec::new();
    walk(item, &mut String::new(), None, &mut out);
    out
}

fn escape_pointer(key: &str) -> String {
    key.replace('~', "~0").replace('/', "~1")
}

fn walk(v: &Value, at: &mut String, parent_key: Option<&str>, out: &mut Vec<Field>) {
    match v {
        Value::String(s) => {
            let key = at.rsplit('/').next().unwrap_or("");
            let slot = if at == "/name" {
                Slot::Name
            } else if matches!(key, "default" | "const")
                || matches!(parent_key, Some("enum" | "examples"))
            {
                Slot::Value
            } else {
                Slot::Prose
            };
            out.push(Field {
                pointer: at.clone(),
                text: s.clone(),
                slot,
            });
        }
        Value::Array(a) => {
            let pk = at.rsplit('/').next().map(str::to_string);
            for (i, x) in a.iter().enumerate() {
                let len = at.len();
                at.push('/');
                at.push_str(&i.to_string());
                walk(x, at, pk.as_deref(), out);
                at.truncate(len);
            }
        }
        Value::Object(m) => {
            let is_properties = at.ends_with("/properties") || at.ends_with("/patternProperties");
            for (k, x) in m {
                if at.is_empty() && (k == "_meta" || k == "icons") {
                    continue;
                }
                let len = at.len();
                at.push('/');
                at.push_str(&escape_pointer(k));
                if is_properties {
                    out.push(Field {
                        pointer: at.clone(),
                        text: k.clone(),
                        slot: Slot::Name,
                    });
                }
                walk(x, at, Some(k), out);
                at.truncate(len);
            }
        }
        _ => {}
    }
}

/// The parameters of a tool (`inputSchema.properties`, recursing into object-valued and
/// array-of-object parameters).
pub fn params(tool: &Value) -> Vec<Param<'_>> {
    let mut out = Vec::new();
    if let Some(schema) = tool.get("inputSchema") {
        collect_params(schema, "/inputSchema".to_string(), &mut out, 0);
    }
    out
}

fn collect_params<'a>(schema: &'a Value, at: String, out: &mut Vec<Param<'a>>, depth: usize) {
    if depth > 8 {
        return;
    }
    if let Some(props) = schema.get("properties").and_then(Value::as_object) {
        for (name, s) in props {
            let p = format!("{at}/properties/{}", escape_pointer(name));
            out.push(Param {
                pointer: p.clone(),
                name,
                schema: s,
            });
            collect_params(s, p.clone(), out, depth + 1);
            if let Some(items) = s.get("items") {
                collect_params(items, format!("{p}/items"), out, depth + 1);
            }
        }
    }
}

/// The item's name (`name`, else `uri` for a resource, else empty).
pub fn name_of(item: &Value) -> &str {
    item.get("name")
        .and_then(Value::as_str)
        .or_else(|| item.get("uri").and_then(Value::as_str))
        .unwrap_or("")
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn every_string_is_a_field_with_its_pointer() {
        let t = json!({
            "name": "send",
            "description": "Sends.",
            "inputSchema": {"type": "object", "properties": {
                "to/x": {"type": "string", "description": "Recipient", "enum": ["a", "b"], "default": "a"},
                "n": {"type": "object", "properties": {"deep": {"type": "string", "x-note": "hi"}}}
            }},
            "_meta": {"hidden": "not shown to models"}
        });
        let f = fields(&t);
        let get = |p: &str| {
            f.iter()
                .find(|x| x.pointer == p)
                .map(|x| (x.text.as_str(), x.slot))
        };
        assert_eq!(get("/name"), Some(("send", Slot::Name)));
        assert_eq!(get("/description"), Some(("Sends.", Slot::Prose)));
        assert_eq!(
            get("/inputSchema/properties/to~1x"),
            Some(("to/x", Slot::Name))
        );
        assert_eq!(
            get("/inputSchema/properties/to~1x/enum/1"),
            Some(("b", Slot::Value))
        );
        assert_eq!(
            get("/inputSchema/properties/to~1x/default"),
            Some(("a", Slot::Value))
        );
        assert_eq!(
            get("/inputSchema/properties/n/properties/deep/x-note"),
            Some(("hi", Slot::Prose))
        );
        assert!(f.iter().all(|x| !x.pointer.starts_with("/_meta")));
        let p = params(&t);
        let names: Vec<_> = p.iter().map(|p| p.name).collect();
        assert_eq!(names, ["n", "deep", "to/x"]);
    }
}
