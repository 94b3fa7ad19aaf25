//! `upside_down`: the text flipped upside down — letters replaced by rotated look-alikes
//! (a→ɐ, e→ǝ, …) and the order reversed, so it reads correctly when the screen is
//! turned around. Letters lose their case.

use super::{Codec, Encoded, INSTRUCT, REPLY_ENCODED};
use crate::error::BuildError;
use crate::transform::seam::{Family, Transform};
use gauntlet_core::params::{Axis, PluginInfo, PluginSpec};

pub const FAMILY: Family = Family::Character;
pub const INFO: PluginInfo = PluginInfo {
    axis: Axis::Transform,
    name: "upside_down",
    doc: "character: the text flipped upside down (rotated look-alike letters, reversed order)",
    params: &[INSTRUCT, REPLY_ENCODED],
};

/// Lower-case letter → its rotated look-alike (letters that look the same rotated map
/// to themselves: l o s x z).
const FLIP: &[(char, char)] = &[
    ('a', 'ɐ'),
    ('b', 'q'),
    ('c', 'ɔ'),
    ('d', 'p'),
    ('e', 'ǝ'),
    ('f', 'ɟ'),
    ('g', 'ƃ'),
    ('h', 'ɥ'),
    ('i', 'ᴉ'),
    ('j', 'ɾ'),
    ('k', 'ʞ'),
    ('m', 'ɯ'),
    ('n', 'u'),
    ('p', 'd'),
    ('q', 'b'),
    ('r', 'ɹ'),
    ('t', 'ʇ'),
    ('u', 'n'),
    ('v', 'ʌ'),
    ('w', 'ʍ'),
    ('y', 'ʎ'),
    ('.', '˙'),
    (',', '\''),
    ('\'', ','),
    ('?', '¿'),
    ('!', '¡'),
    ('(', ')'),
    (')', '('),
];

fn flip_char(c: char) -> char {
    let l = c.to_ascii_lowercase();
    FLIP.iter().find(|(k, _)| *k == l).map_or(l, |(_, v)| *v)
}

pub struct UpsideDown;

impl Codec for UpsideDown {
    fn label(&self) -> &str {
        "upside-down text (turn it around to read it)"
    }
    fn encode(&self, text: &str) -> String {
        text.chars().rev().map(flip_char).collect()
    }
    fn decode(&self, text: &str) -> Option<String> {
        Some(
            text.chars()
                .rev()
                .map(|c| FLIP.iter().find(|(_, v)| *v == c).map_or(c, |(k, _)| *k))
                .collect(),
        )
    }
    fn total(&self) -> bool {
        true
    }
}

pub fn build(spec: &PluginSpec) -> Result<Box<dyn Transform>, BuildError> {
    Ok(Box::new(Encoded::new(spec, FAMILY, UpsideDown)))
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    #[test]
    fn known_vector() {
        assert_eq!(UpsideDown.encode("hello!"), "¡ollǝɥ");
    }

    proptest! {
        /// Exact on lower-case ASCII letters, digits, spaces and the flipped punctuation.
        #[test]
        fn round_trips_on_lower_case(s in "[a-z0-9 .,?!()']{0,60}") {
            prop_assert_eq!(UpsideDown.decode(&UpsideDown.encode(&s)), Some(s));
        }
    }
}
