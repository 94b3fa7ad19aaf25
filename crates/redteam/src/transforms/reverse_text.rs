//! `reverse_text`: the text's characters in reverse order.

use super::{Codec, Encoded, INSTRUCT, REPLY_ENCODED};
use crate::error::BuildError;
use crate::transform::seam::{Family, Transform};
use gauntlet_core::params::{Axis, PluginInfo, PluginSpec};

pub const FAMILY: Family = Family::Encoding;
pub const INFO: PluginInfo = PluginInfo {
    axis: Axis::Transform,
    name: "reverse_text",
    doc: "encoding: the text written backwards, character by character",
    params: &[INSTRUCT, REPLY_ENCODED],
};

pub struct ReverseText;

impl Codec for ReverseText {
    fn label(&self) -> &str {
        "reversed text (read it from the last character to the first)"
    }
    fn encode(&self, text: &str) -> String {
        text.chars().rev().collect()
    }
    fn decode(&self, text: &str) -> Option<String> {
        Some(text.chars().rev().collect())
    }
    fn total(&self) -> bool {
        true
    }
}

pub fn build(spec: &PluginSpec) -> Result<Box<dyn Transform>, BuildError> {
    Ok(Box::new(Encoded::new(spec, FAMILY, ReverseText)))
}

#[cfg(test)]
mod tests {
    use super::super::testing::text;
    use super::*;
    use proptest::prelude::*;

    proptest! {
        #[test]
        fn is_an_involution(s in text()) {
            prop_assert_eq!(ReverseText.encode(&ReverseText.encode(&s)), s);
        }
    }
}
