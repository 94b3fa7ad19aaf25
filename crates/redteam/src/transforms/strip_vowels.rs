//! `strip_vowels`: the vowels of every word longer than two letters removed ("wrt scrpt"
//! for "write script"); short words stay so the text remains readable.

use crate::error::BuildError;
use crate::transform::seam::{Applied, Family, Transform};
use gauntlet_core::params::{Axis, PluginInfo, PluginSpec};
use gauntlet_core::rng::ChaCha8Rng;

pub const FAMILY: Family = Family::Character;
pub const INFO: PluginInfo = PluginInfo {
    axis: Axis::Transform,
    name: "strip_vowels",
    doc: "character: vowels removed from words longer than two letters (disemvoweling)",
    params: &[],
};

fn is_vowel(c: char) -> bool {
    matches!(c.to_ascii_lowercase(), 'a' | 'e' | 'i' | 'o' | 'u')
}

pub struct StripVowels {
    spec: PluginSpec,
}

impl Transform for StripVowels {
    fn spec(&self) -> &PluginSpec {
        &self.spec
    }
    fn family(&self) -> Family {
        FAMILY
    }
    fn apply(&self, text: &str, _rng: &mut ChaCha8Rng) -> Applied {
        Applied::Text(super::map_words(text, |word, out| {
            let kept = word.iter().filter(|c| !is_vowel(**c)).count();
            // A word of vowels only (or a short one) is kept whole.
            if word.len() > 2 && kept > 0 {
                out.extend(word.iter().filter(|c| !is_vowel(**c)));
            } else {
                out.extend(word);
            }
        }))
    }
}

pub fn build(spec: &PluginSpec) -> Result<Box<dyn Transform>, BuildError> {
    Ok(Box::new(StripVowels { spec: spec.clone() }))
}

#[cfg(test)]
mod tests {
    use super::super::testing::{build_yaml, run, text};
    use super::is_vowel;
    use proptest::prelude::*;

    #[test]
    fn known_vector() {
        assert_eq!(
            run(
                build_yaml("strip_vowels").as_ref(),
                "Write a script, aaa",
                0
            ),
            "Wrt a scrpt, aaa"
        );
    }

    proptest! {
        /// Only vowels are removed: what is left is a subsequence holding every consonant.
        #[test]
        fn removes_vowels_only(s in text()) {
            let sent = run(build_yaml("strip_vowels").as_ref(), &s, 0);
            let mut it = s.chars();
            for c in sent.chars() {
                loop {
                    let n = it.next();
                    prop_assert!(n.is_some(), "not a subsequence");
                    let n = n.unwrap();
                    if n == c { break; }
                    prop_assert!(is_vowel(n), "dropped a non-vowel {:?}", n);
                }
            }
            for n in it {
                prop_assert!(is_vowel(n));
            }
        }
    }
}
