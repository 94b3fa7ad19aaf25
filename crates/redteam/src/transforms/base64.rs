//! `base64`: the text in standard base64 (RFC 4648, padded) — the classic encoding
//! jailbreak, which works on models that decode base64 better than they refuse it.

use super::{Codec, Encoded, INSTRUCT, REPLY_ENCODED};
use crate::error::BuildError;
use crate::transform::seam::{Family, Transform};
use gauntlet_core::params::{Axis, PluginInfo, PluginSpec};

pub const FAMILY: Family = Family::Encoding;
pub const INFO: PluginInfo = PluginInfo {
    axis: Axis::Transform,
    name: "base64",
    doc: "encoding: the text in base64 (RFC 4648), with an instruction to decode it",
    params: &[INSTRUCT, REPLY_ENCODED],
};

pub struct Base64;

impl Codec for Base64 {
    fn label(&self) -> &str {
        "base64"
    }
    fn encode(&self, text: &str) -> String {
        data_encoding::BASE64.encode(text.as_bytes())
    }
    fn decode(&self, text: &str) -> Option<String> {
        let compact: String = text.split_whitespace().collect();
        let bytes = data_encoding::BASE64.decode(compact.as_bytes()).ok()?;
        String::from_utf8(bytes).ok()
    }
}

pub fn build(spec: &PluginSpec) -> Result<Box<dyn Transform>, BuildError> {
    Ok(Box::new(Encoded::new(spec, FAMILY, Base64)))
}

#[cfg(test)]
mod tests {
    use super::super::testing::{build_yaml, run, text};
    use super::*;
    use proptest::prelude::*;

    #[test]
    fn known_vector_and_reply_decoding() {
        assert_eq!(Base64.encode("hello"), "aGVsbG8=");
        let t = build_yaml("{name: base64, params: {reply_encoded: true, instruct: false}}");
        assert_eq!(run(t.as_ref(), "hello", 0), "aGVsbG8=");
        // An encoded reply (even fenced, with line breaks) is decoded; a plain one is not.
        let enc = Base64.encode("Sure, here you go.");
        assert_eq!(
            t.decode_reply(&format!("```base64\n{}\n{}\n```", &enc[..8], &enc[8..]))
                .as_deref(),
            Some("Sure, here you go.")
        );
        assert_eq!(t.decode_reply("I'm sorry, I can't help with that."), None);
        // Without reply_encoded nothing is decoded.
        assert_eq!(build_yaml("base64").decode_reply(&enc), None);
    }

    proptest! {
        #[test]
        fn round_trips(s in text()) {
            prop_assert_eq!(Base64.decode(&Base64.encode(&s)), Some(s));
        }
    }
}
