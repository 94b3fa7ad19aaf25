//! `random_caps`: each letter upper- or lower-cased at random ("wRiTe A ScRIpt") — one
//! of Best-of-N's three augmentations (Hughes et al. 2024 use rate 0.6).

use super::{float, rate};
use crate::transform::{Applied, Family, Transform};
use gauntlet_core::params::{Axis, PluginInfo, PluginSpec};
use gauntlet_core::rng::ChaCha8Rng;
use rand::RngExt;

pub const FAMILY: Family = Family::Character;
pub const INFO: PluginInfo = PluginInfo {
    axis: Axis::Transform,
    name: "random_caps",
    doc: "character: letters' case flipped at random (seeded)",
    params: &[rate(0.5, "probability that a letter's case is randomised")],
};

pub struct RandomCaps {
    spec: PluginSpec,
    rate: f64,
}

impl Transform for RandomCaps {
    fn spec(&self) -> &PluginSpec {
        &self.spec
    }
    fn family(&self) -> Family {
        FAMILY
    }
    fn apply(&self, text: &str, rng: &mut ChaCha8Rng) -> Applied {
        let mut out = String::with_capacity(text.len());
        for c in text.chars() {
            if c.is_ascii_alphabetic() && rng.random_bool(self.rate) {
                out.push(if rng.random_bool(0.5) {
                    c.to_ascii_uppercase()
                } else {
                    c.to_ascii_lowercase()
                });
            } else {
                out.push(c);
            }
        }
        Applied::Text(out)
    }
}

pub fn build(spec: &PluginSpec) -> Result<Box<dyn Transform>, String> {
    Ok(Box::new(RandomCaps {
        rate: float(spec, "rate", 0.5),
        spec: spec.clone(),
    }))
}

#[cfg(test)]
mod tests {
    use super::super::testing::{build_yaml, run, text};
    use proptest::prelude::*;

    proptest! {
        /// Only the case of ASCII letters changes.
        #[test]
        fn changes_case_only(s in text(), seed in any::<u64>()) {
            let sent = run(build_yaml("{name: random_caps, params: {rate: 1.0}}").as_ref(), &s, seed);
            prop_assert_eq!(sent.to_ascii_lowercase(), s.to_ascii_lowercase());
        }
    }

    #[test]
    fn seeds_differ() {
        let t = build_yaml("{name: random_caps, params: {rate: 1.0}}");
        let s = "the quick brown fox jumps over the lazy dog";
        assert_ne!(run(t.as_ref(), s, 1), run(t.as_ref(), s, 2));
    }
}
