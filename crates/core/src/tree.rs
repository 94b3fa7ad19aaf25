//! A YAML document as a located value tree.
//!
//! Configs are validated by hand against schemas (see [`crate::params`]) rather than by
//! derived deserialisers, so that every error can name the file, line, column, key path,
//! and what is allowed. Parsing itself is serde-saphyr's (safe Rust, budgets against alias
//! bombs, located syntax errors); this module only keeps the location of every node.

use serde::Deserialize;
use serde::de::{self, Deserializer, MapAccess, SeqAccess, Visitor};
use serde_saphyr::Spanned;
use std::fmt;

/// A 1-based line and column in a source file. `0:0` means unknown.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, PartialOrd, Ord, Hash)]
pub struct Loc {
    pub line: u32,
    pub col: u32,
}

impl fmt::Display for Loc {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}:{}", self.line, self.col)
    }
}

impl From<serde_saphyr::Location> for Loc {
    fn from(l: serde_saphyr::Location) -> Self {
        Loc {
            line: l.line() as u32,
            col: l.column() as u32,
        }
    }
}

/// A map key with its location.
#[derive(Debug, Clone, PartialEq)]
pub struct Key {
    pub name: String,
    pub loc: Loc,
}

/// A YAML value.
#[derive(Debug, Clone, PartialEq)]
pub enum Value {
    Null,
    Bool(bool),
    Int(i64),
    Float(f64),
    Str(String),
    Seq(Vec<Node>),
    /// Entries in document order. Duplicate keys are rejected by the parser.
    Map(Vec<(Key, Node)>),
}

/// A located value.
#[derive(Debug, Clone, PartialEq)]
pub struct Node {
    pub loc: Loc,
    pub value: Value,
}

impl Value {
    /// The YAML type name, for error messages.
    pub fn kind(&self) -> &'static str {
        match self {
            Value::Null => "null",
            Value::Bool(_) => "a boolean",
            Value::Int(_) => "an integer",
            Value::Float(_) => "a number",
            Value::Str(_) => "a string",
            Value::Seq(_) => "a list",
            Value::Map(_) => "a mapping",
        }
    }
}

impl Node {
    pub fn as_str(&self) -> Option<&str> {
        match &self.value {
            Value::Str(s) => Some(s),
            _ => None,
        }
    }
    pub fn as_map(&self) -> Option<&[(Key, Node)]> {
        match &self.value {
            Value::Map(m) => Some(m),
            _ => None,
        }
    }
    pub fn as_seq(&self) -> Option<&[Node]> {
        match &self.value {
            Value::Seq(s) => Some(s),
            _ => None,
        }
    }
    /// Looks a key up in a mapping node.
    pub fn get(&self, key: &str) -> Option<&Node> {
        self.as_map()?
            .iter()
            .find(|(k, _)| k.name == key)
            .map(|(_, v)| v)
    }
    /// Converts to JSON (locations dropped).
    pub fn to_json(&self) -> serde_json::Value {
        use serde_json::Value as J;
        match &self.value {
            Value::Null => J::Null,
            Value::Bool(b) => J::Bool(*b),
            Value::Int(i) => J::from(*i),
            Value::Float(f) => serde_json::Number::from_f64(*f).map_or(J::Null, J::Number),
            Value::Str(s) => J::String(s.clone()),
            Value::Seq(items) => J::Array(items.iter().map(Node::to_json).collect()),
            Value::Map(entries) => J::Object(
                entries
                    .iter()
                    .map(|(k, v)| (k.name.clone(), v.to_json()))
                    .collect(),
            ),
        }
    }
}

/// A YAML syntax error or a structural problem found while parsing.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
#[error("{loc}: {message}")]
pub struct ParseError {
    pub loc: Loc,
    pub message: String,
}

/// Parses one YAML document into a located tree.
pub fn parse_yaml(text: &str) -> Result<Node, ParseError> {
    match serde_saphyr::from_str::<SpannedNode>(text) {
        Ok(n) => Ok(n.0),
        Err(e) => {
            let loc = e.location().map(Loc::from).unwrap_or_default();
            // serde-saphyr renders a snippet in Display; keep only the first line,
            // our caller prints its own location header.
            let message = e.to_string();
            let message = message.lines().next().unwrap_or("invalid YAML");
            Err(ParseError {
                loc,
                message: in_users_terms(message),
            })
        }
    }
}

/// The parser's message, said in terms of the file rather than of the library: its
/// `error: line L column C:` prefix dropped (the caller prints the location), and the
/// advice aimed at programmers (parser options, other entry points) replaced by what
/// the user can change.
fn in_users_terms(message: &str) -> String {
    let mut m = message.trim();
    if let Some(rest) = m.strip_prefix("error: ")
        && let Some((head, tail)) = rest.split_once(": ")
        && head.starts_with("line ")
    {
        m = tail;
    }
    if let Some(rest) = m.strip_prefix("duplicate mapping key: ") {
        let key = rest
            .split(", set DuplicateKeyPolicy")
            .next()
            .unwrap_or(rest);
        return format!(
            "duplicate key `{key}`: this mapping already has a `{key}` entry above; keep one of them"
        );
    }
    if m.starts_with("multiple YAML documents") {
        return "a second YAML document starts here (after a `---` line); the file must hold \
                exactly one document: remove the `---` separator and what follows, or split the file"
            .to_string();
    }
    m.to_string()
}

struct SpannedNode(Node);

impl<'de> Deserialize<'de> for SpannedNode {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        let s = Spanned::<RawValue>::deserialize(d)?;
        Ok(SpannedNode(Node {
            loc: s.referenced.into(),
            value: s.value.0,
        }))
    }
}

struct RawValue(Value);

impl<'de> Deserialize<'de> for RawValue {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        d.deserialize_any(ValueVisitor)
    }
}

struct ValueVisitor;

impl<'de> Visitor<'de> for ValueVisitor {
    type Value = RawValue;

    fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
        f.write_str("any YAML value")
    }
    fn visit_unit<E>(self) -> Result<RawValue, E> {
        Ok(RawValue(Value::Null))
    }
    fn visit_none<E>(self) -> Result<RawValue, E> {
        Ok(RawValue(Value::Null))
    }
    fn visit_some<D: Deserializer<'de>>(self, d: D) -> Result<RawValue, D::Error> {
        d.deserialize_any(ValueVisitor)
    }
    fn visit_bool<E>(self, v: bool) -> Result<RawValue, E> {
        Ok(RawValue(Value::Bool(v)))
    }
    fn visit_i64<E>(self, v: i64) -> Result<RawValue, E> {
        Ok(RawValue(Value::Int(v)))
    }
    // An integer beyond i64 is kept as a number (as the parser already does past
    // u64), so that the key it is given to can say which range it allows: an integer
    // key reports it out of range, a number key takes it.
    fn visit_u64<E: de::Error>(self, v: u64) -> Result<RawValue, E> {
        Ok(RawValue(
            i64::try_from(v).map_or(Value::Float(v as f64), Value::Int),
        ))
    }
    fn visit_i128<E: de::Error>(self, v: i128) -> Result<RawValue, E> {
        Ok(RawValue(
            i64::try_from(v).map_or(Value::Float(v as f64), Value::Int),
        ))
    }
    fn visit_u128<E: de::Error>(self, v: u128) -> Result<RawValue, E> {
        Ok(RawValue(
            i64::try_from(v).map_or(Value::Float(v as f64), Value::Int),
        ))
    }
    fn visit_f64<E>(self, v: f64) -> Result<RawValue, E> {
        Ok(RawValue(Value::Float(v)))
    }
    fn visit_str<E>(self, v: &str) -> Result<RawValue, E> {
        Ok(RawValue(Value::Str(v.to_string())))
    }
    fn visit_string<E>(self, v: String) -> Result<RawValue, E> {
        Ok(RawValue(Value::Str(v)))
    }
    fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<RawValue, A::Error> {
        let mut items = Vec::new();
        while let Some(SpannedNode(n)) = seq.next_element::<SpannedNode>()? {
            items.push(n);
        }
        Ok(RawValue(Value::Seq(items)))
    }
    fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<RawValue, A::Error> {
        let mut entries: Vec<(Key, Node)> = Vec::new();
        while let Some(k) = map.next_key::<Spanned<KeyString>>()? {
            let key = Key {
                name: k.value.0,
                loc: k.referenced.into(),
            };
            let SpannedNode(v) = map.next_value::<SpannedNode>()?;
            entries.push((key, v));
        }
        Ok(RawValue(Value::Map(entries)))
    }
}

/// Map keys must be scalars; they are kept as their string form.
struct KeyString(String);

impl<'de> Deserialize<'de> for KeyString {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        struct KV;
        impl Visitor<'_> for KV {
            type Value = KeyString;
            fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
                f.write_str("a scalar mapping key")
            }
            fn visit_str<E>(self, v: &str) -> Result<KeyString, E> {
                Ok(KeyString(v.to_string()))
            }
            fn visit_string<E>(self, v: String) -> Result<KeyString, E> {
                Ok(KeyString(v))
            }
            fn visit_i64<E>(self, v: i64) -> Result<KeyString, E> {
                Ok(KeyString(v.to_string()))
            }
            fn visit_u64<E>(self, v: u64) -> Result<KeyString, E> {
                Ok(KeyString(v.to_string()))
            }
            fn visit_bool<E>(self, v: bool) -> Result<KeyString, E> {
                Ok(KeyString(v.to_string()))
            }
            fn visit_unit<E>(self) -> Result<KeyString, E> {
                Ok(KeyString("null".into()))
            }
        }
        // Ask for a string, not any scalar: YAML 1.1 would otherwise read a key `n`
        // or `y` as a boolean.
        d.deserialize_string(KV)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn locations_are_kept() {
        let n = parse_yaml("a: 1\nb:\n  - x\n  - {c: true}\n").unwrap();
        let m = n.as_map().unwrap();
        assert_eq!(m[0].0.name, "a");
        assert_eq!(m[0].0.loc, Loc { line: 1, col: 1 });
        assert_eq!(m[0].1.value, Value::Int(1));
        assert_eq!(m[1].0.loc.line, 2);
        let seq = m[1].1.as_seq().unwrap();
        assert_eq!(seq[0].loc.line, 3);
        assert_eq!(seq[0].as_str(), Some("x"));
        assert_eq!(seq[1].loc.line, 4);
        assert_eq!(seq[1].get("c").unwrap().value, Value::Bool(true));
    }

    #[test]
    fn duplicate_keys_are_errors() {
        let e = parse_yaml("a: 1\na: 2\n").unwrap_err();
        assert!(e.message.contains("duplicate key `a`"), "{e}");
        assert!(!e.message.contains("DuplicateKeyPolicy"), "{e}");
        assert!(!e.message.starts_with("error:"), "{e}");
        assert_eq!(e.loc.line, 2);
    }

    #[test]
    fn a_second_document_is_an_error_in_the_users_terms() {
        let e = parse_yaml("a: 1\n---\nb: 2\n").unwrap_err();
        assert!(e.message.contains("second YAML document"), "{e}");
        assert!(!e.message.contains("from_str_multiple"), "{e}");
        assert_eq!(e.loc.line, 3);
    }

    #[test]
    fn integers_beyond_i64_are_numbers() {
        let n = parse_yaml("a: 9223372036854775808\nb: -9223372036854775809\n").unwrap();
        assert_eq!(
            n.get("a").unwrap().value,
            Value::Float(9223372036854775808.0)
        );
        assert!(matches!(n.get("b").unwrap().value, Value::Float(f) if f < -9.2e18));
    }

    #[test]
    fn syntax_errors_are_located() {
        let e = parse_yaml("a: [1, 2\nb: 3\n").unwrap_err();
        assert!(e.loc.line >= 1, "{e:?}");
    }

    #[test]
    fn scalars_are_typed() {
        let n = parse_yaml("i: 5\nf: 0.5\ns: hello\nq: '5'\nn: null\nb: false\n").unwrap();
        assert_eq!(n.get("i").unwrap().value, Value::Int(5));
        assert_eq!(n.get("f").unwrap().value, Value::Float(0.5));
        assert_eq!(n.get("s").unwrap().value, Value::Str("hello".into()));
        assert_eq!(n.get("q").unwrap().value, Value::Str("5".into()));
        assert_eq!(n.get("n").unwrap().value, Value::Null);
        assert_eq!(n.get("b").unwrap().value, Value::Bool(false));
    }
}
