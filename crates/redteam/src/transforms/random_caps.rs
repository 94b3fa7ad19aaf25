//! `random_caps`: each letter upper- or lower-cased at random ("wRiTe A ScRIpt") — one
//! of Best-of-N's three augmentations (Hughes et al. 2024 use rate 0.6). A hot path of
//! Best-of-N (n samples per behavior), so the draws come from a Xoshiro256++ stream
//! seeded from the transform's ChaCha8 stream, two per 64-bit draw.

use super::{float, rate};
use crate::error::BuildError;
use crate::transform::seam::{Applied, Family, Transform};
use gauntlet_core::params::{Axis, PluginInfo, PluginSpec};
use gauntlet_core::rng::ChaCha8Rng;
use rand::{RngExt, SeedableRng};
use rand_xoshiro::Xoshiro256PlusPlus;

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
        // Only ASCII letters change, so the text is rewritten byte by byte (a non-ASCII
        // character's bytes are never ASCII letters) and stays valid UTF-8. One 32-bit
        // draw per letter (two per 64-bit draw): the high 31 bits decide whether its case
        // is randomised (probability `rate`), the low bit which case it gets.
        let threshold = (self.rate.clamp(0.0, 1.0) * f64::from(1u32 << 31)) as u64;
        // A fast stream for the per-letter draws, seeded from the transform's ChaCha8
        // stream (still a function of the run seed, the unit and the text).
        let mut rng = Xoshiro256PlusPlus::from_rng(rng);
        let mut bytes = text.as_bytes().to_vec();
        let mut spare: Option<u32> = None;
        for b in bytes.iter_mut().filter(|b| b.is_ascii_alphabetic()) {
            let r = match spare.take() {
                Some(r) => r,
                None => {
                    let w: u64 = rng.random();
                    spare = Some((w >> 32) as u32);
                    w as u32
                }
            };
            if u64::from(r >> 1) < threshold {
                *b = if r & 1 == 1 {
                    b.to_ascii_uppercase()
                } else {
                    b.to_ascii_lowercase()
                };
            }
        }
        Applied::Text(String::from_utf8(bytes).expect("only ASCII bytes changed"))
    }
}

pub fn build(spec: &PluginSpec) -> Result<Box<dyn Transform>, BuildError> {
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
