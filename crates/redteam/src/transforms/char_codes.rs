//! `char_codes`: every character as its decimal Unicode code point, separated by spaces
//! (`72 105` for "Hi").

use super::{Codec, Encoded, INSTRUCT, REPLY_ENCODED};
use crate::error::BuildError;
use crate::transform::seam::{Family, Transform};
use gauntlet_core::params::{Axis, PluginInfo, PluginSpec};

pub const FAMILY: Family = Family::Encoding;
pub const INFO: PluginInfo = PluginInfo {
    axis: Axis::Transform,
    name: "char_codes",
    doc: "encoding: each character as its decimal Unicode code point, with an instruction to decode it",
    params: &[INSTRUCT, REPLY_ENCODED],
};

pub struct CharCodes;

impl Codec for CharCodes {
    fn label(&self) -> &str {
        "decimal Unicode code points (one number per character)"
    }
    fn encode(&self, text: &str) -> String {
        text.chars()
            .map(|c| u32::from(c).to_string())
            .collect::<Vec<_>>()
            .join(" ")
    }
    fn decode(&self, text: &str) -> Option<String> {
        text.split_whitespace()
            .map(|n| n.parse::<u32>().ok().and_then(char::from_u32))
            .collect()
    }
}

pub fn build(spec: &PluginSpec) -> Result<Box<dyn Transform>, BuildError> {
    Ok(Box::new(Encoded::new(spec, FAMILY, CharCodes)))
}

#[cfg(test)]
mod tests {
    use super::super::testing::text;
    use super::*;
    use proptest::prelude::*;

    #[test]
    fn known_vector() {
        assert_eq!(CharCodes.encode("Hi é"), "72 105 32 233");
        assert_eq!(CharCodes.decode("I cannot"), None);
    }

    proptest! {
        #[test]
        fn round_trips(s in text()) {
            prop_assert_eq!(CharCodes.decode(&CharCodes.encode(&s)), Some(s));
        }
    }
}
