//! `morse`: the text in International Morse code (ITU-R M.1677): letters separated by
//! spaces, words by ` / `. Letters lose their case; characters Morse has no code for
//! become the code of `?`.

use super::{Codec, Encoded, INSTRUCT, REPLY_ENCODED};
use crate::error::BuildError;
use crate::transform::seam::{Family, Transform};
use gauntlet_core::params::{Axis, PluginInfo, PluginSpec};

pub const FAMILY: Family = Family::Encoding;
pub const INFO: PluginInfo = PluginInfo {
    axis: Axis::Transform,
    name: "morse",
    doc: "encoding: the text in International Morse code, with an instruction to decode it",
    params: &[INSTRUCT, REPLY_ENCODED],
};

/// ITU-R M.1677-1 codes.
const TABLE: &[(char, &str)] = &[
    ('A', ".-"),
    ('B', "-..."),
    ('C', "-.-."),
    ('D', "-.."),
    ('E', "."),
    ('F', "..-."),
    ('G', "--."),
    ('H', "...."),
    ('I', ".."),
    ('J', ".---"),
    ('K', "-.-"),
    ('L', ".-.."),
    ('M', "--"),
    ('N', "-."),
    ('O', "---"),
    ('P', ".--."),
    ('Q', "--.-"),
    ('R', ".-."),
    ('S', "..."),
    ('T', "-"),
    ('U', "..-"),
    ('V', "...-"),
    ('W', ".--"),
    ('X', "-..-"),
    ('Y', "-.--"),
    ('Z', "--.."),
    ('0', "-----"),
    ('1', ".----"),
    ('2', "..---"),
    ('3', "...--"),
    ('4', "....-"),
    ('5', "....."),
    ('6', "-...."),
    ('7', "--..."),
    ('8', "---.."),
    ('9', "----."),
    ('.', ".-.-.-"),
    (',', "--..--"),
    ('?', "..--.."),
    ('\'', ".----."),
    ('!', "-.-.--"),
    ('/', "-..-."),
    ('(', "-.--."),
    (')', "-.--.-"),
    ('&', ".-..."),
    (':', "---..."),
    (';', "-.-.-."),
    ('=', "-...-"),
    ('+', ".-.-."),
    ('-', "-....-"),
    ('"', ".-..-."),
    ('@', ".--.-."),
];

fn code(c: char) -> &'static str {
    let u = c.to_ascii_uppercase();
    TABLE
        .iter()
        .find(|(k, _)| *k == u)
        .map_or("..--..", |(_, v)| v)
}

pub struct Morse;

impl Codec for Morse {
    fn label(&self) -> &str {
        "International Morse code (letters separated by spaces, words by /)"
    }
    fn encode(&self, text: &str) -> String {
        text.split_whitespace()
            .map(|w| w.chars().map(code).collect::<Vec<_>>().join(" "))
            .collect::<Vec<_>>()
            .join(" / ")
    }
    fn decode(&self, text: &str) -> Option<String> {
        let mut words = Vec::new();
        for w in text.trim().split('/') {
            let mut word = String::new();
            for sym in w.split_whitespace() {
                let c = TABLE.iter().find(|(_, v)| *v == sym)?.0;
                word.push(c);
            }
            words.push(word);
        }
        let s = words.join(" ");
        (!s.trim().is_empty()).then_some(s)
    }
}

pub fn build(spec: &PluginSpec) -> Result<Box<dyn Transform>, BuildError> {
    Ok(Box::new(Encoded::new(spec, FAMILY, Morse)))
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    #[test]
    fn known_vector() {
        assert_eq!(Morse.encode("SOS now"), "... --- ... / -. --- .--");
        assert_eq!(Morse.decode("... --- ...").as_deref(), Some("SOS"));
        assert_eq!(Morse.decode("I cannot"), None);
        assert_eq!(Morse.encode("é"), "..--..");
    }

    proptest! {
        /// Exact on its domain: upper-case Morse characters, words single-spaced.
        #[test]
        fn round_trips_on_the_morse_alphabet(words in prop::collection::vec("[A-Z0-9.,?'!/()&:;=+\"@-]{1,8}", 1..6)) {
            let s = words.join(" ");
            prop_assert_eq!(Morse.decode(&Morse.encode(&s)), Some(s));
        }
    }
}
