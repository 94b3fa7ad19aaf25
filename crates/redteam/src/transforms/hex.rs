//! `hex`: the text's UTF-8 bytes in lower-case hexadecimal.

use super::{Codec, Encoded, INSTRUCT, REPLY_ENCODED};
use crate::error::BuildError;
use crate::transform::seam::{Family, Transform};
use gauntlet_core::params::{Axis, PluginInfo, PluginSpec};

pub const FAMILY: Family = Family::Encoding;
pub const INFO: PluginInfo = PluginInfo {
    axis: Axis::Transform,
    name: "hex",
    doc: "encoding: the text's UTF-8 bytes in hexadecimal, with an instruction to decode it",
    params: &[INSTRUCT, REPLY_ENCODED],
};

pub struct Hex;

impl Codec for Hex {
    fn label(&self) -> &str {
        "hexadecimal (UTF-8 bytes)"
    }
    fn encode(&self, text: &str) -> String {
        data_encoding::HEXLOWER.encode(text.as_bytes())
    }
    fn decode(&self, text: &str) -> Option<String> {
        let compact: String = text.split_whitespace().collect();
        let bytes = data_encoding::HEXLOWER_PERMISSIVE
            .decode(compact.as_bytes())
            .ok()?;
        String::from_utf8(bytes).ok()
    }
}

pub fn build(spec: &PluginSpec) -> Result<Box<dyn Transform>, BuildError> {
    Ok(Box::new(Encoded::new(spec, FAMILY, Hex)))
}

#[cfg(test)]
mod tests {
    use super::super::testing::text;
    use super::*;
    use proptest::prelude::*;

    #[test]
    fn known_vector() {
        assert_eq!(Hex.encode("Hi é"), "486920c3a9");
        assert_eq!(Hex.decode("48 69 20 C3 A9").as_deref(), Some("Hi é"));
        assert_eq!(Hex.decode("I cannot"), None);
    }

    proptest! {
        #[test]
        fn round_trips(s in text()) {
            prop_assert_eq!(Hex.decode(&Hex.encode(&s)), Some(s));
        }
    }
}
