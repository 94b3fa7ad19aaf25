//! `zero_width`: an invisible zero-width space (U+200B) inserted after characters, at
//! `rate` (default: between every two characters). The text renders unchanged; its
//! bytes no longer hold the words.

use super::{float, rate};
use crate::error::BuildError;
use crate::transform::seam::{Applied, Family, Transform};
use gauntlet_core::params::{Axis, PluginInfo, PluginSpec};
use gauntlet_core::rng::ChaCha8Rng;
use rand::RngExt;

pub const FAMILY: Family = Family::Character;
pub const INFO: PluginInfo = PluginInfo {
    axis: Axis::Transform,
    name: "zero_width",
    doc: "character: invisible zero-width spaces inserted between characters",
    params: &[rate(
        1.0,
        "fraction of character gaps that get one (seeded)",
    )],
};

const ZWSP: char = '\u{200B}';

pub struct ZeroWidth {
    spec: PluginSpec,
    rate: f64,
}

impl Transform for ZeroWidth {
    fn spec(&self) -> &PluginSpec {
        &self.spec
    }
    fn family(&self) -> Family {
        FAMILY
    }
    fn apply(&self, text: &str, rng: &mut ChaCha8Rng) -> Applied {
        let mut out = String::with_capacity(text.len() * 4);
        let mut chars = text.chars().peekable();
        while let Some(c) = chars.next() {
            out.push(c);
            if chars.peek().is_some() && (self.rate >= 1.0 || rng.random_bool(self.rate)) {
                out.push(ZWSP);
            }
        }
        Applied::Text(out)
    }
    /// Exact for text without U+200B.
    fn invert(&self, sent: &str) -> Option<String> {
        Some(sent.chars().filter(|c| *c != ZWSP).collect())
    }
}

pub fn build(spec: &PluginSpec) -> Result<Box<dyn Transform>, BuildError> {
    Ok(Box::new(ZeroWidth {
        rate: float(spec, "rate", 1.0),
        spec: spec.clone(),
    }))
}

#[cfg(test)]
mod tests {
    use super::super::testing::{build_yaml, run};
    use proptest::prelude::*;

    #[test]
    fn known_vector() {
        assert_eq!(
            run(build_yaml("zero_width").as_ref(), "abc", 0),
            "a\u{200B}b\u{200B}c"
        );
    }

    proptest! {
        #[test]
        fn round_trips(s in "[^\u{200B}]{0,60}", seed in any::<u64>(), r in 0.0f64..=1.0) {
            let t = build_yaml(&format!("{{name: zero_width, params: {{rate: {r}}}}}"));
            let sent = run(t.as_ref(), &s, seed);
            prop_assert_eq!(t.invert(&sent), Some(s));
        }
    }
}
