//! `binary`: the text's UTF-8 bytes as 8-bit binary groups separated by spaces.

use super::{Codec, Encoded, INSTRUCT, REPLY_ENCODED};
use crate::error::BuildError;
use crate::transform::seam::{Family, Transform};
use gauntlet_core::params::{Axis, PluginInfo, PluginSpec};

pub const FAMILY: Family = Family::Encoding;
pub const INFO: PluginInfo = PluginInfo {
    axis: Axis::Transform,
    name: "binary",
    doc: "encoding: the text's UTF-8 bytes as 8-bit binary groups, with an instruction to decode it",
    params: &[INSTRUCT, REPLY_ENCODED],
};

pub struct Binary;

impl Codec for Binary {
    fn label(&self) -> &str {
        "binary (8-bit UTF-8 bytes)"
    }
    fn encode(&self, text: &str) -> String {
        let mut s = String::with_capacity(text.len() * 9);
        for (i, b) in text.bytes().enumerate() {
            if i > 0 {
                s.push(' ');
            }
            s.push_str(&format!("{b:08b}"));
        }
        s
    }
    fn decode(&self, text: &str) -> Option<String> {
        let bytes = text
            .split_whitespace()
            .map(|g| {
                (g.len() == 8 && g.bytes().all(|c| c == b'0' || c == b'1'))
                    .then(|| u8::from_str_radix(g, 2).ok())
                    .flatten()
            })
            .collect::<Option<Vec<u8>>>()?;
        String::from_utf8(bytes).ok()
    }
}

pub fn build(spec: &PluginSpec) -> Result<Box<dyn Transform>, BuildError> {
    Ok(Box::new(Encoded::new(spec, FAMILY, Binary)))
}

#[cfg(test)]
mod tests {
    use super::super::testing::text;
    use super::*;
    use proptest::prelude::*;

    #[test]
    fn known_vector() {
        assert_eq!(Binary.encode("Hi"), "01001000 01101001");
        assert_eq!(Binary.decode("0100100 01101001"), None);
    }

    proptest! {
        #[test]
        fn round_trips(s in text()) {
            prop_assert_eq!(Binary.decode(&Binary.encode(&s)), Some(s));
        }
    }
}
