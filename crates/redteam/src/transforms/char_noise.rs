//! `char_noise`: printable ASCII characters moved one code point up or down at `rate`
//! ("vrite" for "write") — Best-of-N's ASCII noising (Hughes et al. 2024 use 0.06).

use super::{float, rate};
use crate::error::BuildError;
use crate::transform::seam::{Applied, Family, Transform};
use gauntlet_core::params::{Axis, PluginInfo, PluginSpec};
use gauntlet_core::rng::ChaCha8Rng;
use rand::RngExt;

pub const FAMILY: Family = Family::Character;
pub const INFO: PluginInfo = PluginInfo {
    axis: Axis::Transform,
    name: "char_noise",
    doc: "character: printable ASCII characters nudged one code point up or down (seeded)",
    params: &[rate(
        0.06,
        "probability that a printable ASCII character is nudged",
    )],
};

pub struct CharNoise {
    spec: PluginSpec,
    rate: f64,
}

impl Transform for CharNoise {
    fn spec(&self) -> &PluginSpec {
        &self.spec
    }
    fn family(&self) -> Family {
        FAMILY
    }
    fn apply(&self, text: &str, rng: &mut ChaCha8Rng) -> Applied {
        Applied::Text(
            text.chars()
                .map(|c| {
                    // Printable ASCII without space; the result stays in that range.
                    if ('!'..='~').contains(&c) && rng.random_bool(self.rate) {
                        let b = c as u8;
                        let n = if rng.random_bool(0.5) {
                            if b == b'~' { b - 1 } else { b + 1 }
                        } else if b == b'!' {
                            b + 1
                        } else {
                            b - 1
                        };
                        n as char
                    } else {
                        c
                    }
                })
                .collect(),
        )
    }
}

pub fn build(spec: &PluginSpec) -> Result<Box<dyn Transform>, BuildError> {
    Ok(Box::new(CharNoise {
        rate: float(spec, "rate", 0.06),
        spec: spec.clone(),
    }))
}

#[cfg(test)]
mod tests {
    use super::super::testing::{build_yaml, run, text};
    use proptest::prelude::*;

    proptest! {
        /// Same length; every changed character is printable ASCII moved by exactly one.
        #[test]
        fn nudges_by_one(s in text(), seed in any::<u64>()) {
            let sent = run(build_yaml("{name: char_noise, params: {rate: 0.5}}").as_ref(), &s, seed);
            prop_assert_eq!(sent.chars().count(), s.chars().count());
            for (a, b) in s.chars().zip(sent.chars()) {
                if a != b {
                    prop_assert!(('!'..='~').contains(&a) && ('!'..='~').contains(&b));
                    prop_assert_eq!((a as i32 - b as i32).abs(), 1);
                }
            }
        }
    }
}
