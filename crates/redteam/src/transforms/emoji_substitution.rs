//! `emoji_substitution`: common nouns replaced by an emoji that stands for them
//! ("send the 📧 from my 💻"). The meaning survives for a model; the words are gone.

use crate::error::BuildError;
use crate::transform::seam::{Applied, Family, Transform};
use gauntlet_core::params::{Axis, PluginInfo, PluginSpec};
use gauntlet_core::rng::ChaCha8Rng;

pub const FAMILY: Family = Family::Character;
pub const INFO: PluginInfo = PluginInfo {
    axis: Axis::Transform,
    name: "emoji_substitution",
    doc: "character: common nouns replaced by emoji (email→📧, computer→💻, money→💰, …)",
    params: &[],
};

/// Lower-case word → emoji (each emoji used once, so the substitution can be undone).
const TABLE: &[(&str, &str)] = &[
    ("account", "👤"),
    ("bank", "🏦"),
    ("book", "📖"),
    ("car", "🚗"),
    ("computer", "💻"),
    ("document", "📄"),
    ("email", "📧"),
    ("file", "📁"),
    ("fire", "🔥"),
    ("food", "🍔"),
    ("home", "🏠"),
    ("house", "🏡"),
    ("key", "🔑"),
    ("letter", "✉"),
    ("lock", "🔒"),
    ("message", "💬"),
    ("money", "💰"),
    ("music", "🎵"),
    ("password", "🔐"),
    ("people", "👥"),
    ("person", "🧑"),
    ("phone", "📱"),
    ("picture", "🖼"),
    ("school", "🏫"),
    ("time", "⏰"),
    ("water", "💧"),
    ("website", "🌐"),
    ("world", "🌍"),
];

pub struct EmojiSubstitution {
    spec: PluginSpec,
}

impl Transform for EmojiSubstitution {
    fn spec(&self) -> &PluginSpec {
        &self.spec
    }
    fn family(&self) -> Family {
        FAMILY
    }
    fn apply(&self, text: &str, _rng: &mut ChaCha8Rng) -> Applied {
        Applied::Text(super::map_words(text, |word, out| {
            let l: String = word.iter().flat_map(|c| c.to_lowercase()).collect();
            match TABLE.iter().find(|(w, _)| *w == l) {
                Some((_, e)) => out.push_str(e),
                None => out.extend(word),
            }
        }))
    }
    /// The emoji back as their (lower-case) words: exact for text without these emoji
    /// whose table words are written in lower case.
    fn invert(&self, sent: &str) -> Option<String> {
        let mut s = sent.to_string();
        for (w, e) in TABLE {
            s = s.replace(e, w);
        }
        Some(s)
    }
}

pub fn build(spec: &PluginSpec) -> Result<Box<dyn Transform>, BuildError> {
    Ok(Box::new(EmojiSubstitution { spec: spec.clone() }))
}

#[cfg(test)]
mod tests {
    use super::super::testing::{build_yaml, run};
    use super::TABLE;
    use proptest::prelude::*;

    #[test]
    fn known_vector() {
        let t = build_yaml("emoji_substitution");
        assert_eq!(
            run(t.as_ref(), "Send the Email from my computer, emails too", 0),
            "Send the 📧 from my 💻, emails too"
        );
    }

    #[test]
    fn emoji_are_distinct_and_not_prefixes_of_each_other() {
        for (i, (_, a)) in TABLE.iter().enumerate() {
            for (_, b) in &TABLE[i + 1..] {
                assert!(!a.contains(b) && !b.contains(a), "{a} {b}");
            }
        }
    }

    proptest! {
        #[test]
        fn round_trips_on_lower_case_words(words in prop::collection::vec(prop_oneof![
            prop::sample::select(TABLE.iter().map(|(w, _)| w.to_string()).collect::<Vec<_>>()),
            "[a-z]{1,8}",
        ], 0..12)) {
            let s = words.join(" ");
            let t = build_yaml("emoji_substitution");
            prop_assert_eq!(t.invert(&run(t.as_ref(), &s, 0)), Some(s));
        }
    }
}
