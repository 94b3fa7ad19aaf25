//! `many_shot`: many faux user/assistant exchanges in which the assistant answers every
//! question helpfully, then the request as the next user turn — the many-shot
//! jailbreaking format of Anil et al. 2024, with gauntlet's own benign faux dialogues.
//! (The `many_shot` attack sweeps the shot count and reports its scaling curve.)

use super::{dialogue, int, pick_shots};
use crate::error::BuildError;
use crate::transform::seam::{Applied, Family, Transform};
use gauntlet_core::params::{Axis, DefaultValue, ParamKind, ParamSpec, PluginInfo, PluginSpec};
use gauntlet_core::rng::ChaCha8Rng;

pub const FAMILY: Family = Family::Structure;
pub const INFO: PluginInfo = PluginInfo {
    axis: Axis::Transform,
    name: "many_shot",
    doc: "structure: many benign faux dialogues answered helpfully, then the request (Anil et al. 2024 format)",
    params: &[ParamSpec {
        name: "shots",
        kind: ParamKind::Int { min: 1, max: 1024 },
        default: DefaultValue::Int(32),
        doc: "faux exchanges before the request (seeded; the bundled ones repeat past their number)",
    }],
};

pub struct ManyShot {
    spec: PluginSpec,
    shots: usize,
}

impl Transform for ManyShot {
    fn spec(&self) -> &PluginSpec {
        &self.spec
    }
    fn family(&self) -> Family {
        FAMILY
    }
    fn apply(&self, text: &str, rng: &mut ChaCha8Rng) -> Applied {
        Applied::Text(dialogue(&pick_shots(self.shots, rng), text))
    }
    fn invert(&self, sent: &str) -> Option<String> {
        let i = sent.rfind("User: ")?;
        sent[i + 6..]
            .strip_suffix("\nAssistant:")
            .map(str::to_string)
    }
}

pub fn build(spec: &PluginSpec) -> Result<Box<dyn Transform>, BuildError> {
    Ok(Box::new(ManyShot {
        shots: int(spec, "shots", 32).clamp(1, 1024) as usize,
        spec: spec.clone(),
    }))
}

#[cfg(test)]
mod tests {
    use super::super::testing::{build_yaml, run};
    use super::super::{SHOTS, pick_shots};
    use gauntlet_core::rng::rng_for;
    use proptest::prelude::*;

    proptest! {
        /// `shots` faux assistant turns, then the request, which comes back exactly.
        #[test]
        fn holds_the_shots_then_the_request(s in "[a-zA-Z ,.?]{1,60}", k in 1i64..=100, seed in any::<u64>()) {
            let t = build_yaml(&format!("{{name: many_shot, params: {{shots: {k}}}}}"));
            let sent = run(t.as_ref(), &s, seed);
            prop_assert_eq!(sent.matches("\nAssistant: ").count() as i64, k);
            prop_assert_eq!(t.invert(&sent), Some(s));
        }

        /// Shot counts nest: the first k shots are the same whatever the total.
        #[test]
        fn shot_counts_nest(k in 1usize..50, extra in 0usize..100, seed in any::<u64>()) {
            let a = pick_shots(k, &mut rng_for(seed, &["s"]));
            let b = pick_shots(k + extra, &mut rng_for(seed, &["s"]));
            for (x, y) in a.iter().zip(&b) {
                prop_assert!(std::ptr::eq(*x, *y));
            }
        }
    }

    #[test]
    fn a_full_pass_uses_every_shot_once() {
        let n = SHOTS.len();
        let v = pick_shots(n, &mut rng_for(0, &["s"]));
        let mut ptrs: Vec<usize> = v.iter().map(|s| *s as *const _ as usize).collect();
        ptrs.sort();
        ptrs.dedup();
        assert_eq!(ptrs.len(), n);
    }
}
