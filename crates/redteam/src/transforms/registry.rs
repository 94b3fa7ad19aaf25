//! The closed list of transforms: one [`Entry`] per plugin in [`REGISTRY`], by family,
//! and the lookups over it (build from a spec, family of a name).

use crate::error::BuildError;
use crate::transform::seam::{Family, Transform};
use gauntlet_core::params::{PluginInfo, PluginSpec};
use std::sync::LazyLock;

/// One registered transform: its registration, family and constructor.
#[derive(Clone, Copy)]
pub struct Entry {
    pub info: PluginInfo,
    pub family: Family,
    pub build: fn(&PluginSpec) -> Result<Box<dyn Transform>, BuildError>,
}

macro_rules! entry {
    ($m:ident) => {
        Entry {
            info: super::$m::INFO,
            family: super::$m::FAMILY,
            build: super::$m::build,
        }
    };
}

/// Every transform, by family, then by name: the order `gauntlet list` shows them.
pub static REGISTRY: LazyLock<Vec<Entry>> = LazyLock::new(|| {
    let mut all: Vec<Entry> = TRANSFORMS.to_vec();
    all.sort_by_key(|e| (e.family as u8, e.info.name));
    all
});

/// Every transform in name order: each `pub mod` of `transforms/mod.rs` whose file declares
/// a `FAMILY` (the build derives the list from those lines).
const TRANSFORMS: &[Entry] = &include!(concat!(env!("OUT_DIR"), "/transforms.rs"));

/// The registrations alone (the catalog's `transforms` axis).
pub static INFOS: LazyLock<Vec<PluginInfo>> =
    LazyLock::new(|| REGISTRY.iter().map(|e| e.info).collect());

/// Builds a transform from its resolved spec.
pub fn build(spec: &PluginSpec) -> Result<Box<dyn Transform>, BuildError> {
    match REGISTRY.iter().find(|e| e.info.name == spec.name) {
        Some(e) => (e.build)(spec),
        None => Err(BuildError::Unknown {
            kind: "transform",
            name: spec.name.clone(),
        }),
    }
}

/// The family of a registered transform.
pub fn family_of(name: &str) -> Option<Family> {
    REGISTRY
        .iter()
        .find(|e| e.info.name == name)
        .map(|e| e.family)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::transforms::testing::{build_yaml, run, text};
    use gauntlet_core::params::Axis;
    use proptest::prelude::*;

    #[test]
    fn registry_names_are_unique_and_every_entry_builds_with_defaults() {
        let mut names: Vec<&str> = REGISTRY.iter().map(|e| e.info.name).collect();
        assert!(names.len() >= 40, "{} transforms", names.len());
        names.sort();
        names.dedup();
        assert_eq!(names.len(), REGISTRY.len(), "duplicate transform names");
        for e in REGISTRY.iter() {
            assert_eq!(e.info.axis, Axis::Transform, "{}", e.info.name);
            assert!(!e.info.doc.is_empty());
            let t = build_yaml(e.info.name);
            assert_eq!(t.family(), e.family, "{}", e.info.name);
            assert_eq!(t.spec().name, e.info.name);
        }
    }

    #[test]
    fn every_family_is_in_the_threat_map() {
        let m = gauntlet_core::taxonomy::map();
        for e in REGISTRY.iter() {
            assert!(
                m.transform_families.contains_key(e.family.as_str()),
                "family {}",
                e.family.as_str()
            );
        }
        for name in m.transforms.keys() {
            assert!(
                family_of(name).is_some(),
                "threat map names unknown `{name}`"
            );
        }
    }

    proptest! {
        #![proptest_config(ProptestConfig::with_cases(64))]

        /// Every pure transform is a deterministic function of (text, seed), and never
        /// panics on any Unicode input; the output is never empty for a non-empty input.
        #[test]
        fn every_pure_transform_is_deterministic_and_total(text in text(), seed in any::<u64>()) {
            for e in REGISTRY.iter().filter(|e| e.family != Family::Model) {
                let t = build_yaml(e.info.name);
                let a = run(t.as_ref(), &text, seed);
                let b = run(t.as_ref(), &text, seed);
                prop_assert_eq!(&a, &b, "{} is not deterministic", e.info.name);
                if !text.trim().is_empty() {
                    prop_assert!(!a.is_empty(), "{} emptied {:?}", e.info.name, text);
                }
            }
        }

        /// Every invertible transform round-trips on any input its codec covers: the
        /// ones whose `invert` is exact on all text.
        #[test]
        fn exact_inverses_round_trip(text in text(), seed in any::<u64>()) {
            for name in [
                "base64", "base32", "hex", "rot13", "caesar", "atbash", "binary",
                "reverse_text", "char_codes", "json_framing",
                "payload_split", "code_completion", "prefix_injection",
                "refusal_suppression", "fictional_framing", "past_tense", "fake_system",
            ] {
                let t = build_yaml(name);
                let sent = run(t.as_ref(), &text, seed);
                prop_assert_eq!(t.invert(&sent), Some(text.clone()), "{} did not round-trip", name);
            }
        }
    }
}
