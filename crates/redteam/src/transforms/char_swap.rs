//! `char_swap`: adjacent letters inside words swapped at `rate` ("wirte" for "write"):
//! typos a reader reads through.

use super::{float, rate};
use crate::error::BuildError;
use crate::transform::seam::{Applied, Family, Transform};
use gauntlet_core::params::{Axis, PluginInfo, PluginSpec};
use gauntlet_core::rng::ChaCha8Rng;
use rand::RngExt;

pub const FAMILY: Family = Family::Character;
pub const INFO: PluginInfo = PluginInfo {
    axis: Axis::Transform,
    name: "char_swap",
    doc: "character: adjacent letters swapped at random, like typos (seeded)",
    params: &[rate(
        0.1,
        "probability that a letter is swapped with the next one",
    )],
};

pub struct CharSwap {
    spec: PluginSpec,
    rate: f64,
}

impl Transform for CharSwap {
    fn spec(&self) -> &PluginSpec {
        &self.spec
    }
    fn family(&self) -> Family {
        FAMILY
    }
    fn apply(&self, text: &str, rng: &mut ChaCha8Rng) -> Applied {
        let mut chars: Vec<char> = text.chars().collect();
        let mut i = 0;
        while i + 1 < chars.len() {
            if chars[i].is_alphabetic()
                && chars[i + 1].is_alphabetic()
                && rng.random_bool(self.rate)
            {
                chars.swap(i, i + 1);
                i += 2;
            } else {
                i += 1;
            }
        }
        Applied::Text(chars.into_iter().collect())
    }
}

pub fn build(spec: &PluginSpec) -> Result<Box<dyn Transform>, BuildError> {
    Ok(Box::new(CharSwap {
        rate: float(spec, "rate", 0.1),
        spec: spec.clone(),
    }))
}

#[cfg(test)]
mod tests {
    use super::super::testing::{build_yaml, run, text};
    use proptest::prelude::*;

    proptest! {
        /// A permutation of the characters that keeps every non-letter in place.
        #[test]
        fn permutes_letters_only(s in text(), seed in any::<u64>()) {
            let sent = run(build_yaml("{name: char_swap, params: {rate: 0.5}}").as_ref(), &s, seed);
            let (mut a, mut b): (Vec<char>, Vec<char>) = (s.chars().collect(), sent.chars().collect());
            prop_assert_eq!(a.len(), b.len());
            for (x, y) in a.iter().zip(&b) {
                prop_assert_eq!(x.is_alphabetic(), y.is_alphabetic());
                if !x.is_alphabetic() {
                    prop_assert_eq!(x, y);
                }
            }
            a.sort();
            b.sort();
            prop_assert_eq!(a, b);
        }
    }
}
