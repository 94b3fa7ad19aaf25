//! `rot13`: every Latin letter rotated 13 places (its own inverse); other characters
//! unchanged.

use super::{Codec, Encoded, INSTRUCT, REPLY_ENCODED};
use crate::error::BuildError;
use crate::transform::seam::{Family, Transform};
use gauntlet_core::params::{Axis, PluginInfo, PluginSpec};

pub const FAMILY: Family = Family::Encoding;
pub const INFO: PluginInfo = PluginInfo {
    axis: Axis::Transform,
    name: "rot13",
    doc: "encoding: Latin letters rotated by 13 (ROT13), with an instruction to decode it",
    params: &[INSTRUCT, REPLY_ENCODED],
};

/// Rotates ASCII letters by `k` places (0..26).
pub fn rotate(text: &str, k: u8) -> String {
    text.chars()
        .map(|c| match c {
            'a'..='z' => (b'a' + (c as u8 - b'a' + k) % 26) as char,
            'A'..='Z' => (b'A' + (c as u8 - b'A' + k) % 26) as char,
            _ => c,
        })
        .collect()
}

pub struct Rot13;

impl Codec for Rot13 {
    fn label(&self) -> &str {
        "ROT13"
    }
    fn encode(&self, text: &str) -> String {
        rotate(text, 13)
    }
    fn decode(&self, text: &str) -> Option<String> {
        Some(rotate(text, 13))
    }
    fn total(&self) -> bool {
        true
    }
}

pub fn build(spec: &PluginSpec) -> Result<Box<dyn Transform>, BuildError> {
    Ok(Box::new(Encoded::new(spec, FAMILY, Rot13)))
}

#[cfg(test)]
mod tests {
    use super::super::testing::{build_yaml, text};
    use super::*;
    use proptest::prelude::*;

    #[test]
    fn known_vector_and_reply_heuristic() {
        assert_eq!(Rot13.encode("Hello, World!"), "Uryyb, Jbeyq!");
        let t = build_yaml("{name: rot13, params: {reply_encoded: true}}");
        // A reply in ROT13 reads as English decoded: it is decoded.
        let r = Rot13.encode("Here is what you asked for, and it is done.");
        assert_eq!(
            t.decode_reply(&r).as_deref(),
            Some("Here is what you asked for, and it is done.")
        );
        // A plain English refusal would decode to gibberish: it is kept as written.
        assert_eq!(
            t.decode_reply("I am sorry, but I cannot help with that."),
            None
        );
    }

    proptest! {
        #[test]
        fn is_an_involution(s in text()) {
            prop_assert_eq!(Rot13.encode(&Rot13.encode(&s)), s);
        }
    }
}
