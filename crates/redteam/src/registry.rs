//! The closed registries of the red-team surfaces: one table per axis of names,
//! documentation and constructors.
//! A config can only name what is compiled in; nothing is loaded dynamically.

use crate::attack::Attack;
use crate::datasets::DatasetEntry;
use crate::error::BuildError;
use crate::injection::{agent_pages, agentdojo as agentdojo_source, bundled, scenario_file};
use crate::judge::{AttackEntry, InjectionEntry, Judge, JudgeEntry};
use crate::metrics::{Metric, MetricEntry, MetricKind, Surface};
use crate::plugin::Entry;
use gauntlet_core::params::{Axis, Catalog, Params, PluginInfo, PluginSpec};
use gauntlet_core::tree::Loc;
use gauntlet_models::registry::TARGETS;
use std::sync::LazyLock;

/// The attacks, in catalogue order (`attacks/mod.rs`).
pub const ATTACK_TABLE: &[AttackEntry] = crate::attacks::ENTRIES;

/// The behavior sets, in catalogue order (`datasets/mod.rs`).
pub const DATASET_TABLE: &[DatasetEntry] = crate::datasets::ENTRIES;
pub static DATASETS: LazyLock<Vec<PluginInfo>> = LazyLock::new(|| infos(DATASET_TABLE));
/// The injections, in catalogue order (`injections/mod.rs`).
pub const INJECTION_TABLE: &[InjectionEntry] = crate::injections::ENTRIES;
/// The injection surfaces' scenario suites (injection mode's `scenarios:`), in
/// catalogue order.
pub const SCENARIO_TABLE: &[DatasetEntry] = &[
    Entry {
        info: bundled::INFO,
        build: |s, _, _| bundled::load(s),
    },
    Entry {
        info: scenario_file::INFO,
        build: |s, base, _| scenario_file::load(s, base),
    },
    Entry {
        info: crate::injecagent::source::INFO,
        build: crate::injecagent::source::load,
    },
    Entry {
        info: agentdojo_source::INFO,
        build: |s, _, _| agentdojo_source::load(s),
    },
    Entry {
        info: agent_pages::INFO,
        build: |s, base, _| agent_pages::load(s, base),
    },
];
pub static SCENARIOS: LazyLock<Vec<PluginInfo>> = LazyLock::new(|| infos(SCENARIO_TABLE));

/// The loader of the behavior set or scenario suite named `name`.
pub fn dataset_entry(name: &str) -> Option<&'static DatasetEntry> {
    DATASET_TABLE
        .iter()
        .chain(SCENARIO_TABLE)
        .find(|e| e.info.name == name)
}
/// The judges, in catalogue order (`judges/mod.rs`).
pub const JUDGE_TABLE: &[JudgeEntry] = crate::judges::ENTRIES;
/// The metrics, in catalogue order (`metrics/mod.rs`).
pub const METRIC_TABLE: &[MetricEntry] = crate::metrics::ENTRIES;

fn infos<B: Copy>(table: &[Entry<B>]) -> Vec<PluginInfo> {
    table.iter().map(|e| e.info).collect()
}

/// Each axis's catalogue, in its table's order.
pub static ATTACKS: LazyLock<Vec<PluginInfo>> = LazyLock::new(|| infos(ATTACK_TABLE));
pub static INJECTIONS: LazyLock<Vec<PluginInfo>> = LazyLock::new(|| infos(INJECTION_TABLE));
pub static JUDGES: LazyLock<Vec<PluginInfo>> = LazyLock::new(|| infos(JUDGE_TABLE));
pub static METRICS: LazyLock<Vec<PluginInfo>> = LazyLock::new(|| infos(METRIC_TABLE));

/// What other crates need to know of a metric by its name alone (comparisons, gates,
/// the dashboard): its kind and the surface it measures. Read from the metric itself,
/// built from a bare spec, so a new metric's facts live in its own file.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct MetricFacts {
    pub kind: MetricKind,
    /// `None`: it applies on any surface.
    pub surface: Option<Surface>,
}

static METRIC_FACTS: LazyLock<Vec<(&'static str, MetricFacts)>> = LazyLock::new(|| {
    METRIC_TABLE
        .iter()
        .filter_map(|e| {
            let spec = PluginSpec {
                name: e.info.name.to_string(),
                params: Params::default(),
                loc: Loc::default(),
                label: None,
            };
            let m = (e.build)(&spec).ok()?;
            Some((
                e.info.name,
                MetricFacts {
                    kind: m.kind(),
                    surface: m.surface(),
                },
            ))
        })
        .collect()
});

/// The facts of the metric named `name` (`None`: not a metric of this build).
pub fn metric_facts(name: &str) -> Option<MetricFacts> {
    METRIC_FACTS
        .iter()
        .find(|(n, _)| *n == name)
        .map(|(_, f)| *f)
}

/// The range of a registered metric's values: [0, 1] for a rate or a score, [0, ∞)
/// for usage; `None` for a name the registry does not know.
pub fn metric_range(name: &str) -> Option<(f64, f64)> {
    match metric_facts(name)?.kind {
        MetricKind::Rate | MetricKind::Score => Some((0.0, 1.0)),
        MetricKind::Usage => Some((0.0, f64::INFINITY)),
    }
}

/// Whether metric `name` is a score (a mean of per-behavior values in [0, 1], compared
/// by a paired bootstrap) rather than a 0/1 rate (compared by McNemar's test).
pub fn is_score(name: &str) -> bool {
    metric_facts(name).is_some_and(|f| f.kind == MetricKind::Score)
}

/// The entry of `table` named `name`, or [`BuildError::Unknown`].
fn entry<'t, B>(
    table: &'t [Entry<B>],
    kind: &'static str,
    name: &str,
) -> Result<&'t Entry<B>, BuildError> {
    table
        .iter()
        .find(|e| e.info.name == name)
        .ok_or_else(|| BuildError::Unknown {
            kind,
            name: name.to_string(),
        })
}

/// Every registered plugin, by axis.
pub struct Registry;

impl Registry {
    pub fn plugins(axis: Axis) -> &'static [PluginInfo] {
        match axis {
            Axis::Target => &TARGETS,
            Axis::Attack => &ATTACKS,
            Axis::Dataset => &DATASETS,
            Axis::Judge => &JUDGES,
            Axis::Metric => &METRICS,
            Axis::Injection => &INJECTIONS,
            Axis::Scenario => &SCENARIOS,
            Axis::Transform => &crate::transforms::INFOS,
        }
    }
}

impl Catalog for Registry {
    fn find(&self, axis: Axis, name: &str) -> Option<&PluginInfo> {
        Registry::plugins(axis).iter().find(|p| p.name == name)
    }
    fn names(&self, axis: Axis) -> Vec<&'static str> {
        Registry::plugins(axis).iter().map(|p| p.name).collect()
    }
}

/// Builds an attack; one with a `transforms` chain comes wrapped in
/// [`crate::transform::Transformed`].
pub fn build_attack(spec: &PluginSpec) -> Result<Box<dyn Attack>, BuildError> {
    let attack = build_plain_attack(spec)?;
    match spec
        .params
        .spec_list(gauntlet_core::params::TRANSFORMS_PARAM)
    {
        Some(chain) if !chain.is_empty() => {
            Ok(Box::new(crate::transform::Transformed::new(attack)?))
        }
        _ => Ok(attack),
    }
}

fn build_plain_attack(spec: &PluginSpec) -> Result<Box<dyn Attack>, BuildError> {
    let e = entry(ATTACK_TABLE, "attack", &spec.name)?;
    (e.build)(spec, build_judge)
}

/// Builds an injection; `max_steps` is the run config's limit on model calls per
/// agent run.
pub fn build_injection(spec: &PluginSpec, max_steps: u32) -> Result<Box<dyn Attack>, BuildError> {
    let e = entry(INJECTION_TABLE, "injection", &spec.name)?;
    (e.build)(spec, max_steps)
}

pub fn build_judge(spec: &PluginSpec) -> Result<Box<dyn Judge>, BuildError> {
    let e = entry(JUDGE_TABLE, "judge", &spec.name)?;
    (e.build)(spec)
}

pub fn build_metric(spec: &PluginSpec) -> Result<Box<dyn Metric>, BuildError> {
    let e = entry(METRIC_TABLE, "metric", &spec.name)?;
    (e.build)(spec)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Every attack composes with prompt transforms (the `transforms` param), and every
    /// attack, injection and metric is in the threat map.
    #[test]
    fn every_attack_takes_transforms_and_everything_is_in_the_threat_map() {
        let map = gauntlet_core::taxonomy::map();
        // `imported` replays what another tool already sent: there is nothing to transform.
        for info in ATTACKS
            .iter()
            .filter(|i| i.name != crate::attacks::imported::INFO.name)
        {
            assert!(
                info.params
                    .iter()
                    .any(|p| p.name == gauntlet_core::params::TRANSFORMS_PARAM),
                "attack `{}` has no `transforms` param",
                info.name
            );
        }
        // Every attack, injection and metric declares its row (`THREAT`, or the build
        // does not compile), and the map holds each of them.
        for info in ATTACKS.iter().chain(INJECTIONS.iter()) {
            assert!(
                map.attacks.contains_key(info.name),
                "`{}` is not in the threat map",
                info.name
            );
        }
        for info in METRICS.iter() {
            assert!(
                map.metrics.contains_key(info.name),
                "metric `{}` is not in the threat map",
                info.name
            );
        }
        assert_eq!(
            crate::attacks::THREATS.len() + crate::injections::THREATS.len(),
            ATTACKS.len() + INJECTIONS.len()
        );
        assert_eq!(crate::metrics::THREATS.len(), METRICS.len());
        assert_eq!(
            Registry::plugins(Axis::Transform).len(),
            crate::transforms::REGISTRY.len()
        );
    }

    /// The threat map's `attacks` and `metrics` rows are the plugins' own `THREAT` (attacks
    /// then injections, each in name order); with `GAUNTLET_UPDATE_DOCS=1` the map's file
    /// is rewritten from them.
    #[test]
    fn the_threat_map_rows_are_the_plugins_own() {
        use gauntlet_core::taxonomy::{
            THREAT_MAP_JSON, metric_row_json, row_json, section_rows, with_section,
        };
        let attacks: Vec<String> = crate::attacks::THREATS
            .iter()
            .chain(crate::injections::THREATS)
            .map(|(name, e)| row_json(name, e))
            .collect();
        let metrics: Vec<String> = crate::metrics::THREATS
            .iter()
            .map(|(name, m)| metric_row_json(name, m))
            .collect();
        let path = concat!(
            env!("CARGO_MANIFEST_DIR"),
            "/../core/taxonomy/threat_map.json"
        );
        let mut text = THREAT_MAP_JSON.to_string();
        let mut wrong = Vec::new();
        for (section, rows) in [("attacks", &attacks), ("metrics", &metrics)] {
            let (_, have) = section_rows(&text, section).expect("the map's section");
            if &have != rows {
                wrong.push(format!(
                    "{section}:\nmap:     {have:#?}\nplugins: {rows:#?}"
                ));
                text = with_section(&text, section, rows).expect("the map's section");
            }
        }
        if wrong.is_empty() {
            return;
        }
        if std::env::var_os("GAUNTLET_UPDATE_DOCS").is_some() {
            std::fs::write(path, text).expect("writing the threat map");
            return;
        }
        panic!(
            "{path} differs from the plugins' `THREAT` (rerun with GAUNTLET_UPDATE_DOCS=1 to \
             rewrite it):\n{}",
            wrong.join("\n")
        );
    }

    /// The 2026 frameworks cover every plugin they apply to: every attack and injection
    /// (but `no_injection`, the baseline, and `imported`, which replays another tool's
    /// results and attacks nothing itself) is evidence under the EU AI Act, every
    /// injection is an agent goal hijack, and every metric with a direction is tagged.
    #[test]
    fn the_2026_frameworks_cover_every_attack_injection_and_metric() {
        let map = gauntlet_core::taxonomy::map();
        let has = |t: &gauntlet_core::taxonomy::ThreatTags, fw: &str, id: &str| {
            t.get(fw).is_some_and(|v| v.iter().any(|x| x == id))
        };
        for info in ATTACKS.iter().chain(INJECTIONS.iter()) {
            if matches!(info.name, "no_injection" | "imported") {
                continue;
            }
            let t = &map.attacks[info.name];
            assert!(has(t, "eu_ai_act", "Art. 15"), "{}", info.name);
        }
        for info in INJECTIONS.iter() {
            if info.name == "no_injection" {
                continue;
            }
            let t = &map.attacks[info.name];
            assert!(has(t, "owasp_agentic_2026", "ASI01"), "{}", info.name);
        }
        for info in METRICS.iter() {
            let m = &map.metrics[info.name];
            assert_eq!(
                m.worse.is_some(),
                m.tags.contains_key("eu_ai_act"),
                "metric `{}`: a metric with a direction is evidence, a usage count is not",
                info.name
            );
        }
    }

    /// Every registered name builds, so the catalog and the constructors never drift.
    /// Every metric builds from a bare spec (so its facts are known by name), and the
    /// facts are what the metrics say: the two scores, the usage metrics, and the
    /// surfaces a leaderboard is told apart by.
    #[test]
    fn every_metric_has_facts() {
        for info in Registry::plugins(Axis::Metric) {
            assert!(metric_facts(info.name).is_some(), "{}", info.name);
        }
        let scores: Vec<&str> = METRIC_TABLE
            .iter()
            .map(|e| e.info.name)
            .filter(|n| is_score(n))
            .collect();
        assert_eq!(scores, ["strongreject_score", "verbatim_overlap"]);
        assert_eq!(metric_facts("cost").unwrap().kind, MetricKind::Usage);
        assert_eq!(
            metric_facts("utility_under_attack").unwrap().surface,
            Some(Surface::Injection)
        );
        assert_eq!(
            metric_facts("pii_leak_rate").unwrap().surface,
            Some(Surface::Leakage)
        );
        assert_eq!(metric_facts("asr").unwrap().surface, None);
        assert_eq!(metric_facts("median_pass_rate"), None);
    }

    #[test]
    fn a_metric_range_follows_its_kind() {
        assert_eq!(metric_range("asr"), Some((0.0, 1.0)));
        assert_eq!(metric_range("cost"), Some((0.0, f64::INFINITY)));
        assert_eq!(metric_range("no_such_metric"), None);
    }

    #[test]
    fn catalog_and_builders_agree() {
        for axis in [Axis::Attack, Axis::Injection, Axis::Judge, Axis::Metric] {
            for info in Registry::plugins(axis) {
                let mut params = gauntlet_core::params::Params::new();
                if ["pair", "tap", "crescendo", "goat", "adaptive"].contains(&info.name) {
                    let attacker = PluginSpec {
                        name: "reference".into(),
                        params: Default::default(),
                        loc: Default::default(),
                        label: None,
                    };
                    params.insert(
                        "attacker",
                        gauntlet_core::params::ParamValue::Spec(Box::new(attacker)),
                    );
                }
                if axis == Axis::Injection && info.name == "agentdojo" {
                    params.insert(
                        "attack",
                        gauntlet_core::params::ParamValue::Str("important_instructions".into()),
                    );
                }
                if info.name == "guard" {
                    params.insert(
                        "format",
                        gauntlet_core::params::ParamValue::Str("wildguard".into()),
                    );
                }
                if info.name == "guardrail" {
                    params.insert(
                        "format",
                        gauntlet_core::params::ParamValue::Str("allow_block".into()),
                    );
                }
                if ["rubric", "strongreject", "guard"].contains(&info.name) {
                    let grader = PluginSpec {
                        name: "reference".into(),
                        params: Default::default(),
                        loc: Default::default(),
                        label: None,
                    };
                    params.insert(
                        "grader",
                        gauntlet_core::params::ParamValue::Spec(Box::new(grader)),
                    );
                }
                let spec = PluginSpec {
                    name: info.name.into(),
                    params,
                    loc: Default::default(),
                    label: None,
                };
                let ok = match axis {
                    Axis::Attack => build_attack(&spec).is_ok(),
                    Axis::Injection => build_injection(&spec, 6).is_ok(),
                    // Needs its weights, which a unit test must not download; its own
                    // tests cover the build and the errors that say how to get them.
                    Axis::Judge if info.name == "refusal_classifier" => true,
                    Axis::Judge => build_judge(&spec).is_ok(),
                    _ => build_metric(&spec).is_ok(),
                };
                assert!(ok, "{} `{}` does not build", axis.as_str(), info.name);
            }
        }
    }
}
