//! `homoglyphs`: Latin letters replaced, at `rate`, by Cyrillic and Greek letters that
//! look the same (a→а U+0430, e→е U+0435, o→о U+043E, …). A reader sees the same text;
//! a byte-level filter sees other words.

use super::{float, rate};
use crate::error::BuildError;
use crate::transform::seam::{Applied, Family, Transform};
use gauntlet_core::params::{Axis, PluginInfo, PluginSpec};
use gauntlet_core::rng::ChaCha8Rng;
use rand::RngExt;

pub const FAMILY: Family = Family::Character;
pub const INFO: PluginInfo = PluginInfo {
    axis: Axis::Transform,
    name: "homoglyphs",
    doc: "character: Latin letters swapped for identical-looking Cyrillic/Greek ones",
    params: &[rate(
        1.0,
        "fraction of replaceable letters replaced (seeded)",
    )],
};

/// Latin letter → look-alike from another script.
const MAP: &[(char, char)] = &[
    ('a', '\u{0430}'),
    ('c', '\u{0441}'),
    ('e', '\u{0435}'),
    ('i', '\u{0456}'),
    ('j', '\u{0458}'),
    ('o', '\u{043E}'),
    ('p', '\u{0440}'),
    ('s', '\u{0455}'),
    ('x', '\u{0445}'),
    ('y', '\u{0443}'),
    ('A', '\u{0410}'),
    ('B', '\u{0412}'),
    ('C', '\u{0421}'),
    ('E', '\u{0415}'),
    ('H', '\u{041D}'),
    ('I', '\u{0406}'),
    ('K', '\u{041A}'),
    ('M', '\u{041C}'),
    ('N', '\u{039D}'),
    ('O', '\u{041E}'),
    ('P', '\u{0420}'),
    ('T', '\u{0422}'),
    ('X', '\u{0425}'),
    ('Y', '\u{03A5}'),
    ('Z', '\u{0396}'),
];

pub struct Homoglyphs {
    spec: PluginSpec,
    rate: f64,
}

impl Transform for Homoglyphs {
    fn spec(&self) -> &PluginSpec {
        &self.spec
    }
    fn family(&self) -> Family {
        FAMILY
    }
    fn apply(&self, text: &str, rng: &mut ChaCha8Rng) -> Applied {
        Applied::Text(
            text.chars()
                .map(|c| match MAP.iter().find(|(k, _)| *k == c) {
                    Some((_, v)) if self.rate >= 1.0 || rng.random_bool(self.rate) => *v,
                    _ => c,
                })
                .collect(),
        )
    }
    /// Exact for text without the look-alike characters.
    fn invert(&self, sent: &str) -> Option<String> {
        Some(
            sent.chars()
                .map(|c| MAP.iter().find(|(_, v)| *v == c).map_or(c, |(k, _)| *k))
                .collect(),
        )
    }
}

pub fn build(spec: &PluginSpec) -> Result<Box<dyn Transform>, BuildError> {
    Ok(Box::new(Homoglyphs {
        rate: float(spec, "rate", 1.0),
        spec: spec.clone(),
    }))
}

#[cfg(test)]
mod tests {
    use super::super::testing::{build_yaml, run};
    use super::MAP;
    use proptest::prelude::*;

    #[test]
    fn replaces_every_mapped_letter_at_rate_one() {
        let out = run(build_yaml("homoglyphs").as_ref(), "space", 0);
        assert_eq!(out.chars().count(), 5);
        assert!(out.chars().all(|c| !c.is_ascii()), "{out}");
    }

    proptest! {
        #[test]
        fn round_trips_on_latin_text(s in "[a-zA-Z0-9 ,.]{0,60}", seed in any::<u64>(), r in 0.0f64..=1.0) {
            let t = build_yaml(&format!("{{name: homoglyphs, params: {{rate: {r}}}}}"));
            let sent = run(t.as_ref(), &s, seed);
            prop_assert_eq!(sent.chars().count(), s.chars().count());
            prop_assert_eq!(t.invert(&sent), Some(s));
        }
    }

    #[test]
    fn look_alikes_are_not_ascii_and_distinct() {
        let mut v: Vec<char> = MAP.iter().map(|(_, v)| *v).collect();
        v.sort();
        v.dedup();
        assert_eq!(v.len(), MAP.len());
        assert!(v.iter().all(|c| !c.is_ascii()));
    }
}
