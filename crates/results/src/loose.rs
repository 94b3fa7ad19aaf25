//! Reading a file of an untrusted directory so that it shows what it can: [`Loose`] is a
//! field that reads as `None` when it is absent or not of its type, [`Shown`] a field
//! read as text whatever its JSON type. A read type built of them (the dashboard's
//! `*Read` types) never fails on a wrong or missing field; only a file that is not
//! JSON at all (or whose top level is not an object) fails.
//!
//! Why: the dashboard serves run directories as untrusted input, partial files included
//! (a report being written, one written by hand or by a hostile tool); a strict read
//! fails the whole file on one wrong field, and the dashboard must still show the rest.

use serde::de::DeserializeOwned;
use serde::{Deserialize, Deserializer};
use serde_json::Value;

/// A field that is `None` when absent, `null` or not a `T`; it never fails the file.
#[derive(Debug, Clone, PartialEq)]
pub struct Loose<T>(pub Option<T>);

impl<T> Default for Loose<T> {
    fn default() -> Loose<T> {
        Loose(None)
    }
}

impl<T> Loose<T> {
    pub fn get(&self) -> Option<&T> {
        self.0.as_ref()
    }
}

impl<'de, T: DeserializeOwned> Deserialize<'de> for Loose<T> {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Loose<T>, D::Error> {
        let v = Value::deserialize(d)?;
        Ok(Loose(serde_json::from_value(v).ok()))
    }
}

/// A field read as text: a string is itself, `null` (or absent) is empty, any other
/// value its JSON text (`3`, `true`, `{"a":1}`).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Shown(pub String);

impl<'de> Deserialize<'de> for Shown {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Shown, D::Error> {
        Ok(Shown(match Value::deserialize(d)? {
            Value::String(s) => s,
            Value::Null => String::new(),
            v => v.to_string(),
        }))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    #[derive(Debug, Default, Deserialize)]
    #[serde(default)]
    struct Read {
        n: Loose<u64>,
        text: Shown,
        list: Loose<Vec<Loose<u64>>>,
    }

    #[test]
    fn wrong_or_missing_fields_read_as_empty_and_the_rest_reads() {
        let r: Read =
            serde_json::from_str(r#"{"n": "x", "text": 3, "list": [1, "a", 2]}"#).expect("reads");
        assert_eq!(r.n, Loose(None));
        assert_eq!(r.text, Shown("3".into()));
        let list: Vec<Option<u64>> = r.list.0.unwrap().into_iter().map(|x| x.0).collect();
        assert_eq!(list, [Some(1), None, Some(2)]);
        let r: Read = serde_json::from_str(r#"{"text": null, "list": {}}"#).expect("reads");
        assert_eq!((r.n.0, r.text.0.as_str(), r.list.0), (None, "", None));
        let r: Read = serde_json::from_str(r#"{"text": {"a": [1]}}"#).expect("reads");
        assert_eq!(r.text.0, r#"{"a":[1]}"#);
    }

    proptest! {
        /// Any JSON object reads: no field of a read type fails the file.
        #[test]
        fn any_json_object_reads(v in any_json(3)) {
            let doc = serde_json::json!({"n": v.clone(), "text": v.clone(), "list": v});
            prop_assert!(serde_json::from_value::<Read>(doc).is_ok());
        }
    }

    fn any_json(depth: u32) -> impl Strategy<Value = Value> {
        let leaf = prop_oneof![
            Just(Value::Null),
            any::<bool>().prop_map(Value::from),
            any::<i64>().prop_map(Value::from),
            any::<f64>()
                .prop_filter("finite", |f| f.is_finite())
                .prop_map(Value::from),
            ".{0,8}".prop_map(Value::from),
        ];
        leaf.prop_recursive(depth, 24, 4, |inner| {
            prop_oneof![
                proptest::collection::vec(inner.clone(), 0..4).prop_map(Value::from),
                proptest::collection::btree_map(".{0,4}", inner, 0..4)
                    .prop_map(|m| Value::Object(m.into_iter().collect())),
            ]
        })
    }
}
