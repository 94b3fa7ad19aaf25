//! `url_encode`: the text percent-encoded (RFC 3986): every byte outside the unreserved
//! set as `%XX`.

use super::{Codec, Encoded, INSTRUCT, REPLY_ENCODED};
use crate::error::BuildError;
use crate::transform::seam::{Family, Transform};
use gauntlet_core::params::{Axis, PluginInfo, PluginSpec};
use percent_encoding::{AsciiSet, NON_ALPHANUMERIC, percent_decode_str, utf8_percent_encode};

pub const FAMILY: Family = Family::Encoding;
pub const INFO: PluginInfo = PluginInfo {
    axis: Axis::Transform,
    name: "url_encode",
    doc: "encoding: the text percent-encoded as in a URL, with an instruction to decode it",
    params: &[INSTRUCT, REPLY_ENCODED],
};

/// Everything but RFC 3986's unreserved characters.
const ENCODED: &AsciiSet = &NON_ALPHANUMERIC
    .remove(b'-')
    .remove(b'.')
    .remove(b'_')
    .remove(b'~');

pub struct UrlEncode;

impl Codec for UrlEncode {
    fn label(&self) -> &str {
        "URL percent-encoding"
    }
    fn encode(&self, text: &str) -> String {
        utf8_percent_encode(text, ENCODED).to_string()
    }
    fn decode(&self, text: &str) -> Option<String> {
        let t = text.trim();
        // Percent-encoded text has no spaces; a plain reply is not decoded.
        if t.contains(char::is_whitespace) || !t.contains('%') {
            return None;
        }
        percent_decode_str(t)
            .decode_utf8()
            .ok()
            .map(|c| c.into_owned())
    }
}

pub fn build(spec: &PluginSpec) -> Result<Box<dyn Transform>, BuildError> {
    Ok(Box::new(Encoded::new(spec, FAMILY, UrlEncode)))
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    #[test]
    fn known_vector() {
        assert_eq!(UrlEncode.encode("a b/é~"), "a%20b%2F%C3%A9~");
        assert_eq!(UrlEncode.decode("I cannot do that."), None);
    }

    proptest! {
        #[test]
        fn round_trips(s in ".*[ %/].*") {
            prop_assert_eq!(UrlEncode.decode(&UrlEncode.encode(&s)), Some(s));
        }
    }
}
