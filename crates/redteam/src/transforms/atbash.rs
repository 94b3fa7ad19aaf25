//! `atbash`: the Latin alphabet mirrored (a↔z, b↔y, …); its own inverse.

use super::{Codec, Encoded, INSTRUCT, REPLY_ENCODED};
use crate::error::BuildError;
use crate::transform::seam::{Family, Transform};
use gauntlet_core::params::{Axis, PluginInfo, PluginSpec};

pub const FAMILY: Family = Family::Encoding;
pub const INFO: PluginInfo = PluginInfo {
    axis: Axis::Transform,
    name: "atbash",
    doc: "encoding: the alphabet mirrored (Atbash: a↔z), with an instruction to decode it",
    params: &[INSTRUCT, REPLY_ENCODED],
};

pub struct Atbash;

fn mirror(text: &str) -> String {
    text.chars()
        .map(|c| match c {
            'a'..='z' => (b'z' - (c as u8 - b'a')) as char,
            'A'..='Z' => (b'Z' - (c as u8 - b'A')) as char,
            _ => c,
        })
        .collect()
}

impl Codec for Atbash {
    fn label(&self) -> &str {
        "the Atbash cipher (a↔z, b↔y, …)"
    }
    fn encode(&self, text: &str) -> String {
        mirror(text)
    }
    fn decode(&self, text: &str) -> Option<String> {
        Some(mirror(text))
    }
    fn total(&self) -> bool {
        true
    }
}

pub fn build(spec: &PluginSpec) -> Result<Box<dyn Transform>, BuildError> {
    Ok(Box::new(Encoded::new(spec, FAMILY, Atbash)))
}

#[cfg(test)]
mod tests {
    use super::super::testing::text;
    use super::*;
    use proptest::prelude::*;

    #[test]
    fn known_vector() {
        assert_eq!(Atbash.encode("Abc xyz"), "Zyx cba");
    }

    proptest! {
        #[test]
        fn is_an_involution(s in text()) {
            prop_assert_eq!(Atbash.encode(&Atbash.encode(&s)), s);
        }
    }
}
