//! `word_scramble`: the inner letters of words longer than three letters shuffled at
//! `rate`, first and last kept ("wtire" for "write") — Best-of-N's word scrambling
//! (Hughes et al. 2024 use 0.6).

use super::{float, rate};
use crate::error::BuildError;
use crate::transform::seam::{Applied, Family, Transform};
use gauntlet_core::params::{Axis, PluginInfo, PluginSpec};
use gauntlet_core::rng::ChaCha8Rng;
use rand::RngExt;
use rand::seq::SliceRandom;

pub const FAMILY: Family = Family::Character;
pub const INFO: PluginInfo = PluginInfo {
    axis: Axis::Transform,
    name: "word_scramble",
    doc: "character: the middle letters of longer words shuffled, first and last kept (seeded)",
    params: &[rate(
        0.6,
        "probability that a word longer than three letters is scrambled",
    )],
};

pub struct WordScramble {
    spec: PluginSpec,
    rate: f64,
}

impl Transform for WordScramble {
    fn spec(&self) -> &PluginSpec {
        &self.spec
    }
    fn family(&self) -> Family {
        FAMILY
    }
    fn apply(&self, text: &str, rng: &mut ChaCha8Rng) -> Applied {
        Applied::Text(super::map_words(text, |word, out| {
            let n = word.len();
            if n > 3 && rng.random_bool(self.rate) {
                let mut word = word.to_vec();
                word[1..n - 1].shuffle(rng);
                out.extend(word);
            } else {
                out.extend(word);
            }
        }))
    }
}

pub fn build(spec: &PluginSpec) -> Result<Box<dyn Transform>, BuildError> {
    Ok(Box::new(WordScramble {
        rate: float(spec, "rate", 0.6),
        spec: spec.clone(),
    }))
}

#[cfg(test)]
mod tests {
    use super::super::testing::{build_yaml, run, text};
    use proptest::prelude::*;

    fn words(s: &str) -> Vec<String> {
        s.split(|c: char| !c.is_alphabetic())
            .map(str::to_string)
            .collect()
    }

    proptest! {
        /// Word boundaries, first and last letters and each word's letters are kept.
        #[test]
        fn scrambles_inside_words_only(s in text(), seed in any::<u64>()) {
            let sent = run(build_yaml("{name: word_scramble, params: {rate: 1.0}}").as_ref(), &s, seed);
            let (a, b) = (words(&s), words(&sent));
            prop_assert_eq!(a.len(), b.len());
            for (x, y) in a.iter().zip(&b) {
                prop_assert_eq!(x.chars().next(), y.chars().next());
                prop_assert_eq!(x.chars().last(), y.chars().last());
                let (mut p, mut q): (Vec<char>, Vec<char>) = (x.chars().collect(), y.chars().collect());
                p.sort();
                q.sort();
                prop_assert_eq!(p, q);
            }
        }
    }
}
