//! `diacritics`: combining accents (U+0300–U+036F) added to letters at `rate`, so
//! "ransom" becomes "r̀ańs̈om̃": legible, but no longer the same code points.

use super::{float, rate};
use crate::error::BuildError;
use crate::transform::seam::{Applied, Family, Transform};
use gauntlet_core::params::{Axis, PluginInfo, PluginSpec};
use gauntlet_core::rng::ChaCha8Rng;
use rand::RngExt;

pub const FAMILY: Family = Family::Character;
pub const INFO: PluginInfo = PluginInfo {
    axis: Axis::Transform,
    name: "diacritics",
    doc: "character: combining accents added to letters",
    params: &[rate(0.5, "fraction of letters that get an accent (seeded)")],
};

/// Combining marks used: grave, acute, circumflex, tilde, macron, diaeresis, ring,
/// caron, cedilla, ogonek.
const MARKS: &[char] = &[
    '\u{0300}', '\u{0301}', '\u{0302}', '\u{0303}', '\u{0304}', '\u{0308}', '\u{030A}', '\u{030C}',
    '\u{0327}', '\u{0328}',
];

fn is_mark(c: char) -> bool {
    ('\u{0300}'..='\u{036F}').contains(&c)
}

pub struct Diacritics {
    spec: PluginSpec,
    rate: f64,
}

impl Transform for Diacritics {
    fn spec(&self) -> &PluginSpec {
        &self.spec
    }
    fn family(&self) -> Family {
        FAMILY
    }
    fn apply(&self, text: &str, rng: &mut ChaCha8Rng) -> Applied {
        let mut out = String::with_capacity(text.len() * 2);
        for c in text.chars() {
            out.push(c);
            if c.is_alphabetic() && rng.random_bool(self.rate) {
                out.push(MARKS[rng.random_range(0..MARKS.len())]);
            }
        }
        Applied::Text(out)
    }
    /// Exact for text without combining marks.
    fn invert(&self, sent: &str) -> Option<String> {
        Some(sent.chars().filter(|c| !is_mark(*c)).collect())
    }
}

pub fn build(spec: &PluginSpec) -> Result<Box<dyn Transform>, BuildError> {
    Ok(Box::new(Diacritics {
        rate: float(spec, "rate", 0.5),
        spec: spec.clone(),
    }))
}

#[cfg(test)]
mod tests {
    use super::super::testing::{build_yaml, run};
    use proptest::prelude::*;

    proptest! {
        #[test]
        fn round_trips(s in "[^\u{0300}-\u{036F}]{0,60}", seed in any::<u64>()) {
            let t = build_yaml("{name: diacritics, params: {rate: 1.0}}");
            let sent = run(t.as_ref(), &s, seed);
            let letters = s.chars().filter(|c| c.is_alphabetic()).count();
            prop_assert_eq!(sent.chars().count(), s.chars().count() + letters);
            prop_assert_eq!(t.invert(&sent), Some(s));
        }
    }
}
