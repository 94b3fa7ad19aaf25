//! `full_width`: printable ASCII as its full-width form (U+FF01–U+FF5E, space as
//! U+3000): "ｗｒｉｔｅ" instead of "write".

use super::{Codec, Encoded, INSTRUCT, REPLY_ENCODED};
use crate::error::BuildError;
use crate::transform::seam::{Family, Transform};
use gauntlet_core::params::{Axis, DefaultValue, ParamSpec, PluginInfo, PluginSpec};

pub const FAMILY: Family = Family::Character;
pub const INFO: PluginInfo = PluginInfo {
    axis: Axis::Transform,
    name: "full_width",
    doc: "character: ASCII letters, digits and punctuation in their full-width forms",
    params: &[
        ParamSpec {
            default: DefaultValue::Bool(false),
            ..INSTRUCT
        },
        REPLY_ENCODED,
    ],
};

pub struct FullWidth;

impl Codec for FullWidth {
    fn label(&self) -> &str {
        "full-width characters"
    }
    fn encode(&self, text: &str) -> String {
        text.chars()
            .map(|c| match c {
                ' ' => '\u{3000}',
                '!'..='~' => char::from_u32(u32::from(c) - 0x21 + 0xFF01).expect("full width"),
                _ => c,
            })
            .collect()
    }
    fn decode(&self, text: &str) -> Option<String> {
        Some(
            text.chars()
                .map(|c| match c {
                    '\u{3000}' => ' ',
                    '\u{FF01}'..='\u{FF5E}' => {
                        char::from_u32(u32::from(c) - 0xFF01 + 0x21).expect("ascii")
                    }
                    _ => c,
                })
                .collect(),
        )
    }
    fn total(&self) -> bool {
        true
    }
}

pub fn build(spec: &PluginSpec) -> Result<Box<dyn Transform>, BuildError> {
    // Full-width text is legible as it is: no instruction unless asked for.
    let mut spec = spec.clone();
    if spec.params.get("instruct").is_none() {
        spec.params
            .insert("instruct", gauntlet_core::params::ParamValue::Bool(false));
    }
    Ok(Box::new(Encoded::new(&spec, FAMILY, FullWidth)))
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    #[test]
    fn known_vector() {
        assert_eq!(FullWidth.encode("Hi, 2!"), "Ｈｉ，\u{3000}２！");
    }

    proptest! {
        #[test]
        fn round_trips(s in "[^\u{3000}\u{FF01}-\u{FF5E}]{0,60}") {
            prop_assert_eq!(FullWidth.decode(&FullWidth.encode(&s)), Some(s));
        }
    }
}
