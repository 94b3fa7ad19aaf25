//! The closed registries of the red-team surfaces: one table per axis of names,
//! documentation and constructors.
//! A config can only name what is compiled in; nothing is loaded dynamically.

use crate::attack::Attack;
use crate::attacks::imported as imported_attack;
use crate::attacks::{adaptive, crescendo, goat, pair, tap};
use crate::attacks::{best_of_n, many_shot};
use crate::attacks::{
    canary_completion, direct_extraction, divergence, pii_elicitation, r#static,
    system_prompt_leak, template,
};
use crate::datasets::imported as imported_dataset;
use crate::datasets::strongreject as strongreject_set;
use crate::datasets::{Dataset, DatasetError};
use crate::datasets::{
    advbench, demo, harmbench, jbb_behaviors, leakage_demo, or_bench, remote, xstest,
};
use crate::datasets::{
    ailuminate, cyberseceval_frr, cyberseceval_interpreter, simple_safety_tests,
};
use crate::error::BuildError;
use crate::injection::{agent_pages, agentdojo as agentdojo_source, bundled, scenario_file};
use crate::injections::{
    agentdojo as agentdojo_injection, direct_injection, indirect_injection,
    injecagent as injecagent_injection, mcp_rug_pull, mcp_shadowing, mcp_tool_description,
    mcp_tool_result, no_injection,
};
use crate::judge::Judge;
use crate::judges::imported as imported_judge;
use crate::judges::strongreject;
use crate::judges::{
    agent_evidence, agentdojo as agentdojo_judge, guard, guardrail, injecagent as injecagent_judge,
    injection_detector, leak_detector, refusal_classifier, refusal_match, rubric,
};
use crate::metrics::{
    Metric, asr, asr_at_k, canary_exposure_rate, cost, extraction_rate, false_block_rate, frr,
    guard_pass_through, pii_leak_rate, refusal_rate, strongreject_score, system_prompt_leak_rate,
    token_usage, verbatim_overlap,
};
use crate::metrics::{MetricKind, Surface};
use crate::metrics::{
    agentdojo_security_rate, injecagent_asr_all, injecagent_asr_valid, injecagent_valid_rate,
    injection_success_rate, unparsed_tool_call_rate, utility_baseline, utility_under_attack,
};
use gauntlet_core::params::{Axis, Catalog, Params, PluginInfo, PluginSpec};
use gauntlet_core::tree::Loc;
use gauntlet_fetch::FetchOptions;
use gauntlet_models::registry::TARGETS;
use std::path::Path;
use std::sync::LazyLock;

/// One registered plugin: its [`PluginInfo`] (what `gauntlet list` and `validate` read)
/// and how a config's spec becomes the plugin. A new attack, injection, judge or metric
/// is its own file and one line in its axis's table below.
#[derive(Clone, Copy)]
pub struct Entry<B> {
    pub info: PluginInfo,
    pub build: B,
}

type Built<T> = Result<Box<T>, BuildError>;
pub type AttackEntry = Entry<fn(&PluginSpec) -> Built<dyn Attack>>;
/// An injection's builder also takes the run's limit on model calls per agent run.
pub type InjectionEntry = Entry<fn(&PluginSpec, u32) -> Built<dyn Attack>>;
pub type JudgeEntry = Entry<fn(&PluginSpec) -> Built<dyn Judge>>;
pub type MetricEntry = Entry<fn(&PluginSpec) -> Built<dyn Metric>>;

/// The attacks, in catalogue order.
pub const ATTACK_TABLE: &[AttackEntry] = &[
    Entry {
        info: r#static::INFO,
        build: |s| Ok(Box::new(r#static::StaticAttack::new(s.clone()))),
    },
    Entry {
        info: template::INFO,
        build: |s| Ok(Box::new(template::TemplateAttack::new(s.clone())?)),
    },
    Entry {
        info: pair::INFO,
        build: |s| Ok(Box::new(pair::PairAttack::new(s.clone(), build_judge)?)),
    },
    Entry {
        info: tap::INFO,
        build: |s| Ok(Box::new(tap::TapAttack::new(s.clone(), build_judge)?)),
    },
    Entry {
        info: crescendo::INFO,
        build: |s| {
            Ok(Box::new(crescendo::CrescendoAttack::new(
                s.clone(),
                build_judge,
            )?))
        },
    },
    Entry {
        info: goat::INFO,
        build: |s| Ok(Box::new(goat::GoatAttack::new(s.clone(), build_judge)?)),
    },
    Entry {
        info: adaptive::INFO,
        build: |s| {
            Ok(Box::new(adaptive::AdaptiveAttack::new(
                s.clone(),
                build_judge,
            )?))
        },
    },
    Entry {
        info: best_of_n::INFO,
        build: |s| Ok(Box::new(best_of_n::BestOfN::new(s.clone(), build_judge)?)),
    },
    Entry {
        info: many_shot::INFO,
        build: |s| Ok(Box::new(many_shot::ManyShot::new(s.clone())?)),
    },
    Entry {
        info: direct_extraction::INFO,
        build: |s| {
            Ok(Box::new(direct_extraction::DirectExtraction::new(
                s.clone(),
            )))
        },
    },
    Entry {
        info: divergence::INFO,
        build: |s| Ok(Box::new(divergence::Divergence::new(s.clone())?)),
    },
    Entry {
        info: canary_completion::INFO,
        build: |s| {
            Ok(Box::new(canary_completion::CanaryCompletion::new(
                s.clone(),
            )))
        },
    },
    Entry {
        info: system_prompt_leak::INFO,
        build: |s| {
            Ok(Box::new(system_prompt_leak::SystemPromptLeak::new(
                s.clone(),
            )?))
        },
    },
    Entry {
        info: pii_elicitation::INFO,
        build: |s| Ok(Box::new(pii_elicitation::PiiElicitation::new(s.clone())?)),
    },
    Entry {
        info: imported_attack::INFO,
        build: |s| Ok(Box::new(imported_attack::ImportedAttack::new(s.clone()))),
    },
];
/// A dataset's (or scenario suite's) loader: a resolved spec, the directory relative
/// `file://` paths resolve against, and the fetch policy and cache.
pub type DatasetEntry =
    Entry<fn(&PluginSpec, &Path, &FetchOptions) -> Result<Dataset, DatasetError>>;

/// The behavior sets, in catalogue order.
pub const DATASET_TABLE: &[DatasetEntry] = &[
    Entry {
        info: demo::INFO,
        build: |s, _, _| demo::load(s),
    },
    Entry {
        info: leakage_demo::INFO,
        build: |s, _, _| leakage_demo::load(s),
    },
    Entry {
        info: remote::INFO,
        build: remote::load,
    },
    Entry {
        info: advbench::INFO,
        build: advbench::load,
    },
    Entry {
        info: harmbench::INFO,
        build: harmbench::load,
    },
    Entry {
        info: jbb_behaviors::INFO,
        build: jbb_behaviors::load,
    },
    Entry {
        info: xstest::INFO,
        build: xstest::load,
    },
    Entry {
        info: or_bench::INFO,
        build: or_bench::load,
    },
    Entry {
        info: strongreject_set::INFO,
        build: strongreject_set::load,
    },
    Entry {
        info: ailuminate::INFO,
        build: ailuminate::load,
    },
    Entry {
        info: simple_safety_tests::INFO,
        build: simple_safety_tests::load,
    },
    Entry {
        info: cyberseceval_frr::INFO,
        build: cyberseceval_frr::load,
    },
    Entry {
        info: cyberseceval_interpreter::INFO,
        build: cyberseceval_interpreter::load,
    },
    Entry {
        info: imported_dataset::INFO,
        build: |s, base, _| imported_dataset::load(s, base),
    },
];
pub static DATASETS: LazyLock<Vec<PluginInfo>> = LazyLock::new(|| infos(DATASET_TABLE));
/// The injections, in catalogue order.
pub const INJECTION_TABLE: &[InjectionEntry] = &[
    Entry {
        info: no_injection::INFO,
        build: |s, steps| Ok(Box::new(no_injection::build(s.clone(), steps))),
    },
    Entry {
        info: direct_injection::INFO,
        build: |s, steps| Ok(Box::new(direct_injection::build(s.clone(), steps))),
    },
    Entry {
        info: indirect_injection::INFO,
        build: |s, steps| Ok(Box::new(indirect_injection::build(s.clone(), steps))),
    },
    Entry {
        info: injecagent_injection::INFO,
        build: |s, _| {
            Ok(Box::new(injecagent_injection::InjecAgentInjection::new(
                s.clone(),
            )))
        },
    },
    Entry {
        info: agentdojo_injection::INFO,
        build: |s, _| {
            Ok(Box::new(agentdojo_injection::AgentDojoInjection::new(
                s.clone(),
            )?))
        },
    },
    Entry {
        info: mcp_tool_description::INFO,
        build: |s, steps| Ok(Box::new(mcp_tool_description::build(s.clone(), steps)?)),
    },
    Entry {
        info: mcp_tool_result::INFO,
        build: |s, steps| Ok(Box::new(mcp_tool_result::build(s.clone(), steps)?)),
    },
    Entry {
        info: mcp_rug_pull::INFO,
        build: |s, steps| Ok(Box::new(mcp_rug_pull::build(s.clone(), steps)?)),
    },
    Entry {
        info: mcp_shadowing::INFO,
        build: |s, steps| Ok(Box::new(mcp_shadowing::build(s.clone(), steps)?)),
    },
    Entry {
        info: crate::injections::poisoned_content::INFO,
        build: |s, _| {
            Ok(Box::new(
                crate::injections::poisoned_content::PoisonedContent::new(s.clone())?,
            ))
        },
    },
];
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
/// The judges, in catalogue order.
pub const JUDGE_TABLE: &[JudgeEntry] = &[
    Entry {
        info: refusal_match::INFO,
        build: |s| Ok(Box::new(refusal_match::RefusalMatch::new(s.clone())?)),
    },
    Entry {
        info: rubric::INFO,
        build: |s| Ok(Box::new(rubric::Rubric::new(s.clone()))),
    },
    Entry {
        info: strongreject::INFO,
        build: |s| Ok(Box::new(strongreject::StrongReject::new(s.clone()))),
    },
    Entry {
        info: leak_detector::INFO,
        build: |s| Ok(Box::new(leak_detector::LeakDetector::new(s.clone()))),
    },
    Entry {
        info: injection_detector::INFO,
        build: |s| {
            Ok(Box::new(injection_detector::InjectionDetector::new(
                s.clone(),
            )))
        },
    },
    Entry {
        info: injecagent_judge::INFO,
        build: |s| Ok(Box::new(injecagent_judge::InjecAgentJudge::new(s.clone()))),
    },
    Entry {
        info: refusal_classifier::INFO,
        build: refusal_classifier::build,
    },
    Entry {
        info: agentdojo_judge::INFO,
        build: |s| Ok(Box::new(agentdojo_judge::AgentDojoJudge::new(s.clone()))),
    },
    Entry {
        info: guard::INFO,
        build: |s| Ok(Box::new(guard::Guard::new(s.clone())?)),
    },
    Entry {
        info: guardrail::INFO,
        build: |s| Ok(Box::new(guardrail::Guardrail::new(s.clone())?)),
    },
    Entry {
        info: imported_judge::INFO,
        build: |s| Ok(Box::new(imported_judge::ImportedJudge::new(s.clone()))),
    },
    Entry {
        info: agent_evidence::INFO,
        build: |s| Ok(Box::new(agent_evidence::AgentEvidence::new(s.clone())?)),
    },
];
/// The metrics, in catalogue order.
pub const METRIC_TABLE: &[MetricEntry] = &[
    Entry {
        info: asr::INFO,
        build: |s| Ok(Box::new(asr::Asr(s.clone()))),
    },
    Entry {
        info: asr_at_k::INFO,
        build: |s| Ok(Box::new(asr_at_k::AsrAtK::new(s.clone()))),
    },
    Entry {
        info: refusal_rate::INFO,
        build: |s| Ok(Box::new(refusal_rate::RefusalRate(s.clone()))),
    },
    Entry {
        info: strongreject_score::INFO,
        build: |s| Ok(Box::new(strongreject_score::StrongrejectScore(s.clone()))),
    },
    Entry {
        info: frr::INFO,
        build: |s| Ok(Box::new(frr::Frr(s.clone()))),
    },
    Entry {
        info: guard_pass_through::INFO,
        build: |s| Ok(Box::new(guard_pass_through::GuardPassThrough(s.clone()))),
    },
    Entry {
        info: false_block_rate::INFO,
        build: |s| Ok(Box::new(false_block_rate::FalseBlockRate(s.clone()))),
    },
    Entry {
        info: extraction_rate::INFO,
        build: |s| Ok(Box::new(extraction_rate::ExtractionRate(s.clone()))),
    },
    Entry {
        info: canary_exposure_rate::INFO,
        build: |s| {
            Ok(Box::new(canary_exposure_rate::CanaryExposureRate(
                s.clone(),
            )))
        },
    },
    Entry {
        info: pii_leak_rate::INFO,
        build: |s| Ok(Box::new(pii_leak_rate::PiiLeakRate(s.clone()))),
    },
    Entry {
        info: system_prompt_leak_rate::INFO,
        build: |s| {
            Ok(Box::new(system_prompt_leak_rate::SystemPromptLeakRate(
                s.clone(),
            )))
        },
    },
    Entry {
        info: verbatim_overlap::INFO,
        build: |s| Ok(Box::new(verbatim_overlap::VerbatimOverlap(s.clone()))),
    },
    Entry {
        info: injection_success_rate::INFO,
        build: |s| {
            Ok(Box::new(injection_success_rate::InjectionSuccessRate(
                s.clone(),
            )))
        },
    },
    Entry {
        info: agentdojo_security_rate::INFO,
        build: |s| {
            Ok(Box::new(agentdojo_security_rate::AgentDojoSecurityRate(
                s.clone(),
            )))
        },
    },
    Entry {
        info: utility_under_attack::INFO,
        build: |s| {
            Ok(Box::new(utility_under_attack::UtilityUnderAttack(
                s.clone(),
            )))
        },
    },
    Entry {
        info: utility_baseline::INFO,
        build: |s| Ok(Box::new(utility_baseline::UtilityBaseline(s.clone()))),
    },
    Entry {
        info: unparsed_tool_call_rate::INFO,
        build: |s| {
            Ok(Box::new(unparsed_tool_call_rate::UnparsedToolCallRate(
                s.clone(),
            )))
        },
    },
    Entry {
        info: injecagent_asr_valid::INFO,
        build: |s| {
            Ok(Box::new(injecagent_asr_valid::InjecAgentAsrValid::new(
                s.clone(),
            )))
        },
    },
    Entry {
        info: injecagent_asr_all::INFO,
        build: |s| {
            Ok(Box::new(injecagent_asr_all::InjecAgentAsrAll::new(
                s.clone(),
            )))
        },
    },
    Entry {
        info: injecagent_valid_rate::INFO,
        build: |s| {
            Ok(Box::new(injecagent_valid_rate::InjecAgentValidRate(
                s.clone(),
            )))
        },
    },
    Entry {
        info: token_usage::INFO,
        build: |s| Ok(Box::new(token_usage::TokenUsage::new(s.clone())?)),
    },
    Entry {
        info: cost::INFO,
        build: |s| Ok(Box::new(cost::Cost(s.clone()))),
    },
];

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
    (e.build)(spec)
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
            .filter(|i| i.name != imported_attack::INFO.name)
        {
            assert!(
                info.params
                    .iter()
                    .any(|p| p.name == gauntlet_core::params::TRANSFORMS_PARAM),
                "attack `{}` has no `transforms` param",
                info.name
            );
        }
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
            Registry::plugins(Axis::Transform).len(),
            crate::transforms::REGISTRY.len()
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
