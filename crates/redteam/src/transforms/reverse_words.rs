//! `reverse_words`: the text's words in reverse order (words are whitespace-separated
//! runs; the result separates them with single spaces).

use super::{Codec, Encoded, INSTRUCT, REPLY_ENCODED};
use crate::error::BuildError;
use crate::transform::seam::{Family, Transform};
use gauntlet_core::params::{Axis, PluginInfo, PluginSpec};

pub const FAMILY: Family = Family::Encoding;
pub const INFO: PluginInfo = PluginInfo {
    axis: Axis::Transform,
    name: "reverse_words",
    doc: "encoding: the words in reverse order, with an instruction to read them backwards",
    params: &[INSTRUCT, REPLY_ENCODED],
};

pub struct ReverseWords;

fn reverse(text: &str) -> String {
    text.split_whitespace().rev().collect::<Vec<_>>().join(" ")
}

impl Codec for ReverseWords {
    fn label(&self) -> &str {
        "reversed word order (read the words from last to first)"
    }
    fn encode(&self, text: &str) -> String {
        reverse(text)
    }
    fn decode(&self, text: &str) -> Option<String> {
        Some(reverse(text))
    }
    fn total(&self) -> bool {
        true
    }
}

pub fn build(spec: &PluginSpec) -> Result<Box<dyn Transform>, BuildError> {
    Ok(Box::new(Encoded::new(spec, FAMILY, ReverseWords)))
}

#[cfg(test)]
mod tests {
    use super::super::testing::text;
    use super::*;
    use proptest::prelude::*;

    #[test]
    fn known_vector() {
        assert_eq!(ReverseWords.encode("one  two\nthree"), "three two one");
    }

    proptest! {
        /// Round-trips up to whitespace: the words come back in order, single-spaced.
        #[test]
        fn round_trips_modulo_whitespace(s in text()) {
            let normalised = s.split_whitespace().collect::<Vec<_>>().join(" ");
            prop_assert_eq!(ReverseWords.decode(&ReverseWords.encode(&s)), Some(normalised));
        }
    }
}
