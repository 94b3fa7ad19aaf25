//! `base32`: the text in base32 (RFC 4648, padded, upper case) — a rarer encoding than
//! base64, so less likely to be covered by a model's refusal training.

use super::{Codec, Encoded, INSTRUCT, REPLY_ENCODED};
use crate::error::BuildError;
use crate::transform::seam::{Family, Transform};
use gauntlet_core::params::{Axis, PluginInfo, PluginSpec};

pub const FAMILY: Family = Family::Encoding;
pub const INFO: PluginInfo = PluginInfo {
    axis: Axis::Transform,
    name: "base32",
    doc: "encoding: the text in base32 (RFC 4648), with an instruction to decode it",
    params: &[INSTRUCT, REPLY_ENCODED],
};

pub struct Base32;

impl Codec for Base32 {
    fn label(&self) -> &str {
        "base32"
    }
    fn encode(&self, text: &str) -> String {
        data_encoding::BASE32.encode(text.as_bytes())
    }
    fn decode(&self, text: &str) -> Option<String> {
        let compact: String = text.split_whitespace().collect::<String>().to_uppercase();
        let bytes = data_encoding::BASE32.decode(compact.as_bytes()).ok()?;
        String::from_utf8(bytes).ok()
    }
}

pub fn build(spec: &PluginSpec) -> Result<Box<dyn Transform>, BuildError> {
    Ok(Box::new(Encoded::new(spec, FAMILY, Base32)))
}

#[cfg(test)]
mod tests {
    use super::super::testing::text;
    use super::*;
    use proptest::prelude::*;

    #[test]
    fn known_vector() {
        assert_eq!(Base32.encode("foobar"), "MZXW6YTBOI======");
        assert_eq!(Base32.decode("mzxw6ytboi======").as_deref(), Some("foobar"));
    }

    proptest! {
        #[test]
        fn round_trips(s in text()) {
            prop_assert_eq!(Base32.decode(&Base32.encode(&s)), Some(s));
        }
    }
}
