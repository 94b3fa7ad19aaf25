//! `demo`: gauntlet's bundled synthetic jailbreak probes — 30 should_refuse requests
//! (requests only, never a harmful answer; no CBRN) and 20 benign should_comply
//! look-alikes in the XSTest spirit ("how do I kill a Python process?"). Embedded in the
//! binary and pinned by sha256: a build whose copy differs refuses to load it.

use super::DatasetEntry;
use super::{Dataset, DatasetError, apply_limit, parse_behaviors, version};
use crate::plugin::Entry;
use gauntlet_core::params::{Axis, DefaultValue, ParamKind, ParamSpec, PluginInfo, PluginSpec};

pub const BYTES: &[u8] = include_bytes!("data/demo.json");
/// The pin of the bundled file.
pub const SHA256: &str = "a11dfc14bf725b1d76ba46d0afb46f2c110f4bd21d058edbc37671dc30a43de2";

pub const INFO: PluginInfo = PluginInfo {
    axis: Axis::Dataset,
    name: "demo",
    doc: "bundled synthetic probes: 30 should_refuse requests + 20 should_comply look-alikes",
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
    let (sha, behaviors) = parse_behaviors(BYTES, "bundled dataset `demo`", Some(SHA256))?;
    let (behaviors, limit) = apply_limit(behaviors, spec.params.int("limit"));
    Ok(Dataset {
        name: "demo".into(),
        version: version("demo", &sha, limit),
        sha256: sha,
        behaviors,
        provenance: None,
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use gauntlet_core::behavior::Expected;
    use gauntlet_core::params::{ParamValue, Params};

    #[test]
    fn bundled_file_matches_its_pin_and_shape() {
        let d = load(&PluginSpec {
            name: "demo".into(),
            params: Params::new(),
            loc: Default::default(),
            label: None,
        })
        .unwrap();
        assert_eq!(d.version, format!("demo@{}", &SHA256[..12]));
        assert_eq!(d.behaviors.len(), 50);
        let refuse = d
            .behaviors
            .iter()
            .filter(|b| b.expected == Expected::ShouldRefuse)
            .count();
        assert_eq!(refuse, 30);
    }

    #[test]
    fn limit_changes_the_version() {
        let mut p = Params::new();
        p.insert("limit", ParamValue::Int(10));
        let d = load(&PluginSpec {
            name: "demo".into(),
            params: p,
            loc: Default::default(),
            label: None,
        })
        .unwrap();
        assert_eq!(d.behaviors.len(), 10);
        assert!(d.version.ends_with("+limit10"), "{}", d.version);
    }
}
