//! `leakage_demo`: gauntlet's bundled leakage probes — 24 behaviors, 6 in each category
//! (`canary`, `pii`, `system_prompt`, `extraction`), each with the `target_secret` a safe
//! model must not reproduce. Every secret is fake: `CANARY-…` tokens, invented names with
//! `*.example.invalid` emails and 555-01xx phone numbers, invented codes and passages
//! written for gauntlet. Embedded in the binary and pinned by sha256 like `demo`.
//!
//! The same file supplies the default memory of the `reference_memorizer` target.

use super::DatasetEntry;
use super::{Dataset, DatasetError, apply_limit, parse_behaviors, version};
use crate::plugin::Entry;
use gauntlet_core::params::{Axis, DefaultValue, ParamKind, ParamSpec, PluginInfo, PluginSpec};

pub const BYTES: &[u8] = include_bytes!("data/leakage_demo.json");
/// The pin of the bundled file.
pub const SHA256: &str = "5d03acddcde605fc0e25c20d72cca158027e0a509dfc61c2063a62b3011506f1";

pub const INFO: PluginInfo = PluginInfo {
    axis: Axis::Dataset,
    name: "leakage_demo",
    doc: "bundled leakage probes with fake secrets: 6 canary, 6 pii, 6 system_prompt, 6 extraction",
    params: &[ParamSpec {
        name: "limit",
        kind: ParamKind::Int {
            min: 1,
            max: 10_000_000,
        },
        default: DefaultValue::Absent,
        doc: "use only the first N behaviors (recorded in the dataset version)",
    }],
};

/// This behavior set's registration (listed in `ENTRIES` in `datasets/mod.rs`).
pub const ENTRY: DatasetEntry = Entry {
    info: INFO,
    build: |s, _, _| load(s),
};

pub fn load(spec: &PluginSpec) -> Result<Dataset, DatasetError> {
    let (sha, behaviors) = parse_behaviors(BYTES, "bundled dataset `leakage_demo`", Some(SHA256))?;
    let (behaviors, limit) = apply_limit(behaviors, spec.params.int("limit"));
    Ok(Dataset {
        name: "leakage_demo".into(),
        version: version("leakage_demo", &sha, limit),
        sha256: sha,
        behaviors,
        provenance: None,
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::leakage::LeakCategory;
    use gauntlet_core::behavior::Expected;
    use gauntlet_core::params::Params;

    #[test]
    fn bundled_file_matches_its_pin_and_shape() {
        let d = load(&PluginSpec {
            name: "leakage_demo".into(),
            params: Params::new(),
            loc: Default::default(),
            label: None,
        })
        .unwrap();
        assert_eq!(d.version, format!("leakage_demo@{}", &SHA256[..12]));
        assert_eq!(d.behaviors.len(), 24);
        for cat in [
            LeakCategory::Canary,
            LeakCategory::Pii,
            LeakCategory::SystemPrompt,
            LeakCategory::Extraction,
        ] {
            let n = d
                .behaviors
                .iter()
                .filter(|b| LeakCategory::of(b) == Some(cat))
                .count();
            assert_eq!(n, 6, "{cat:?}");
        }
        for b in &d.behaviors {
            assert_eq!(b.expected, Expected::ShouldRefuse);
            let s = b
                .target_secret
                .as_deref()
                .expect("every probe has a secret");
            // Fake data only.
            if s.contains('@') {
                assert!(s.contains(".example.invalid"), "{s}");
            }
            if s.contains("555-") {
                assert!(s.contains("555-01"), "{s}");
            }
            if b.category == "canary" {
                assert!(s.starts_with("CANARY-"), "{s}");
            }
        }
    }
}
