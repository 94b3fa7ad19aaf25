//! The closed registries of the red-team surfaces: names to constructors, by `match`.
//! A config can only name what is compiled in; nothing is loaded dynamically.

use crate::attack::Attack;
use crate::attacks::{best_of_n, many_shot};
use crate::attacks::{
    canary_completion, direct_extraction, divergence, pii_elicitation, r#static,
    system_prompt_leak, template,
};
use crate::attacks::{crescendo, pair, tap};
use crate::datasets::strongreject as strongreject_set;
use crate::datasets::{
    advbench, demo, harmbench, jbb_behaviors, leakage_demo, or_bench, remote, xstest,
};
use crate::injection::{agentdojo as agentdojo_source, bundled, scenario_file};
use crate::injections::{
    Injection, agentdojo as agentdojo_injection, direct_injection, indirect_injection,
    injecagent as injecagent_injection, mcp_rug_pull, mcp_shadowing, mcp_tool_description,
    mcp_tool_result, no_injection,
};
use crate::judge::Judge;
use crate::judges::strongreject;
use crate::judges::{
    agentdojo as agentdojo_judge, guard, injecagent as injecagent_judge, injection_detector,
    leak_detector, refusal_classifier, refusal_match, rubric,
};
use crate::metrics::{
    Metric, asr, asr_at_k, canary_exposure_rate, cost, extraction_rate, frr, pii_leak_rate,
    refusal_rate, strongreject_score, system_prompt_leak_rate, token_usage, verbatim_overlap,
};
use crate::metrics::{
    injecagent_asr_all, injecagent_asr_valid, injecagent_valid_rate, injection_success_rate,
    unparsed_tool_call_rate, utility_baseline, utility_under_attack,
};
use gauntlet_core::params::{Axis, Catalog, PluginInfo, PluginSpec};
use gauntlet_models::registry::TARGETS;

pub const ATTACKS: &[PluginInfo] = &[
    r#static::INFO,
    template::INFO,
    pair::INFO,
    tap::INFO,
    crescendo::INFO,
    best_of_n::INFO,
    many_shot::INFO,
    direct_extraction::INFO,
    divergence::INFO,
    canary_completion::INFO,
    system_prompt_leak::INFO,
    pii_elicitation::INFO,
];
pub const DATASETS: &[PluginInfo] = &[
    demo::INFO,
    leakage_demo::INFO,
    remote::INFO,
    advbench::INFO,
    harmbench::INFO,
    jbb_behaviors::INFO,
    xstest::INFO,
    or_bench::INFO,
    strongreject_set::INFO,
];
pub const INJECTIONS: &[PluginInfo] = &[
    no_injection::INFO,
    direct_injection::INFO,
    indirect_injection::INFO,
    injecagent_injection::INFO,
    agentdojo_injection::INFO,
    mcp_tool_description::INFO,
    mcp_tool_result::INFO,
    mcp_rug_pull::INFO,
    mcp_shadowing::INFO,
];
pub const SCENARIOS: &[PluginInfo] = &[
    bundled::INFO,
    scenario_file::INFO,
    crate::injecagent::source::INFO,
    agentdojo_source::INFO,
];
pub const JUDGES: &[PluginInfo] = &[
    refusal_match::INFO,
    rubric::INFO,
    strongreject::INFO,
    leak_detector::INFO,
    injection_detector::INFO,
    injecagent_judge::INFO,
    refusal_classifier::INFO,
    agentdojo_judge::INFO,
    guard::INFO,
];
pub const METRICS: &[PluginInfo] = &[
    asr::INFO,
    asr_at_k::INFO,
    refusal_rate::INFO,
    strongreject_score::INFO,
    frr::INFO,
    extraction_rate::INFO,
    canary_exposure_rate::INFO,
    pii_leak_rate::INFO,
    system_prompt_leak_rate::INFO,
    verbatim_overlap::INFO,
    injection_success_rate::INFO,
    utility_under_attack::INFO,
    utility_baseline::INFO,
    unparsed_tool_call_rate::INFO,
    injecagent_asr_valid::INFO,
    injecagent_asr_all::INFO,
    injecagent_valid_rate::INFO,
    token_usage::INFO,
    cost::INFO,
];

/// Every registered plugin, by axis.
pub struct Registry;

impl Registry {
    pub fn plugins(axis: Axis) -> &'static [PluginInfo] {
        match axis {
            Axis::Target => TARGETS,
            Axis::Attack => ATTACKS,
            Axis::Dataset => DATASETS,
            Axis::Judge => JUDGES,
            Axis::Metric => METRICS,
            Axis::Injection => INJECTIONS,
            Axis::Scenario => SCENARIOS,
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
pub fn build_attack(spec: &PluginSpec) -> Result<Box<dyn Attack>, String> {
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

fn build_plain_attack(spec: &PluginSpec) -> Result<Box<dyn Attack>, String> {
    match spec.name.as_str() {
        "static" => Ok(Box::new(r#static::StaticAttack::new(spec.clone()))),
        "template" => Ok(Box::new(template::TemplateAttack::new(spec.clone())?)),
        "pair" => Ok(Box::new(pair::PairAttack::new(spec.clone())?)),
        "tap" => Ok(Box::new(tap::TapAttack::new(spec.clone())?)),
        "crescendo" => Ok(Box::new(crescendo::CrescendoAttack::new(spec.clone())?)),
        "best_of_n" => Ok(Box::new(best_of_n::BestOfN::new(spec.clone())?)),
        "many_shot" => Ok(Box::new(many_shot::ManyShot::new(spec.clone())?)),
        "direct_extraction" => Ok(Box::new(direct_extraction::DirectExtraction::new(
            spec.clone(),
        ))),
        "divergence" => Ok(Box::new(divergence::Divergence::new(spec.clone())?)),
        "canary_completion" => Ok(Box::new(canary_completion::CanaryCompletion::new(
            spec.clone(),
        ))),
        "system_prompt_leak" => Ok(Box::new(system_prompt_leak::SystemPromptLeak::new(
            spec.clone(),
        )?)),
        "pii_elicitation" => Ok(Box::new(pii_elicitation::PiiElicitation::new(
            spec.clone(),
        )?)),
        other => Err(format!("unknown attack `{other}`")),
    }
}

/// Builds an injection; `max_steps` is the run config's limit on model calls per
/// agent run.
pub fn build_injection(spec: &PluginSpec, max_steps: u32) -> Result<Box<dyn Attack>, String> {
    let s = spec.clone();
    if spec.name == "injecagent" {
        return Ok(Box::new(injecagent_injection::InjecAgentInjection::new(s)));
    }
    if spec.name == "agentdojo" {
        return Ok(Box::new(agentdojo_injection::AgentDojoInjection::new(s)?));
    }
    match spec.name.as_str() {
        "mcp_tool_description" => return Ok(Box::new(mcp_tool_description::build(s, max_steps)?)),
        "mcp_tool_result" => return Ok(Box::new(mcp_tool_result::build(s, max_steps)?)),
        "mcp_rug_pull" => return Ok(Box::new(mcp_rug_pull::build(s, max_steps)?)),
        "mcp_shadowing" => return Ok(Box::new(mcp_shadowing::build(s, max_steps)?)),
        _ => {}
    }
    let i: Injection = match spec.name.as_str() {
        "no_injection" => no_injection::build(s, max_steps),
        "direct_injection" => direct_injection::build(s, max_steps),
        "indirect_injection" => indirect_injection::build(s, max_steps),
        other => return Err(format!("unknown injection `{other}`")),
    };
    Ok(Box::new(i))
}

pub fn build_judge(spec: &PluginSpec) -> Result<Box<dyn Judge>, String> {
    match spec.name.as_str() {
        "refusal_match" => Ok(Box::new(refusal_match::RefusalMatch::new(spec.clone())?)),
        "rubric" => Ok(Box::new(rubric::Rubric::new(spec.clone()))),
        "strongreject" => Ok(Box::new(strongreject::StrongReject::new(spec.clone()))),
        "leak_detector" => Ok(Box::new(leak_detector::LeakDetector::new(spec.clone()))),
        "injection_detector" => Ok(Box::new(injection_detector::InjectionDetector::new(
            spec.clone(),
        ))),
        "injecagent" => Ok(Box::new(injecagent_judge::InjecAgentJudge::new(
            spec.clone(),
        ))),
        "refusal_classifier" => refusal_classifier::build(spec),
        "agentdojo" => Ok(Box::new(agentdojo_judge::AgentDojoJudge::new(spec.clone()))),
        "guard" => Ok(Box::new(guard::Guard::new(spec.clone())?)),
        other => Err(format!("unknown judge `{other}`")),
    }
}

pub fn build_metric(spec: &PluginSpec) -> Result<Box<dyn Metric>, String> {
    let s = spec.clone();
    match spec.name.as_str() {
        "asr" => Ok(Box::new(asr::Asr(s))),
        "asr_at_k" => Ok(Box::new(asr_at_k::AsrAtK::new(s))),
        "refusal_rate" => Ok(Box::new(refusal_rate::RefusalRate(s))),
        "strongreject_score" => Ok(Box::new(strongreject_score::StrongrejectScore(s))),
        "frr" => Ok(Box::new(frr::Frr(s))),
        "extraction_rate" => Ok(Box::new(extraction_rate::ExtractionRate(s))),
        "canary_exposure_rate" => Ok(Box::new(canary_exposure_rate::CanaryExposureRate(s))),
        "pii_leak_rate" => Ok(Box::new(pii_leak_rate::PiiLeakRate(s))),
        "system_prompt_leak_rate" => Ok(Box::new(system_prompt_leak_rate::SystemPromptLeakRate(s))),
        "verbatim_overlap" => Ok(Box::new(verbatim_overlap::VerbatimOverlap(s))),
        "injection_success_rate" => Ok(Box::new(injection_success_rate::InjectionSuccessRate(s))),
        "utility_under_attack" => Ok(Box::new(utility_under_attack::UtilityUnderAttack(s))),
        "utility_baseline" => Ok(Box::new(utility_baseline::UtilityBaseline(s))),
        "unparsed_tool_call_rate" => Ok(Box::new(unparsed_tool_call_rate::UnparsedToolCallRate(s))),
        "injecagent_asr_valid" => Ok(Box::new(injecagent_asr_valid::InjecAgentAsrValid::new(s))),
        "injecagent_asr_all" => Ok(Box::new(injecagent_asr_all::InjecAgentAsrAll::new(s))),
        "injecagent_valid_rate" => Ok(Box::new(injecagent_valid_rate::InjecAgentValidRate(s))),
        "token_usage" => Ok(Box::new(token_usage::TokenUsage::new(s)?)),
        "cost" => Ok(Box::new(cost::Cost(s))),
        other => Err(format!("unknown metric `{other}`")),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Every attack composes with prompt transforms (the `transforms` param), and every
    /// attack, injection and metric is in the threat map.
    #[test]
    fn every_attack_takes_transforms_and_everything_is_in_the_threat_map() {
        let map = gauntlet_core::taxonomy::map();
        for info in ATTACKS {
            assert!(
                info.params
                    .iter()
                    .any(|p| p.name == gauntlet_core::params::TRANSFORMS_PARAM),
                "attack `{}` has no `transforms` param",
                info.name
            );
        }
        for info in ATTACKS.iter().chain(INJECTIONS) {
            assert!(
                map.attacks.contains_key(info.name),
                "`{}` is not in the threat map",
                info.name
            );
        }
        for info in METRICS {
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

    /// Every registered name builds, so the catalog and the constructors never drift.
    #[test]
    fn catalog_and_builders_agree() {
        for axis in [Axis::Attack, Axis::Injection, Axis::Judge, Axis::Metric] {
            for info in Registry::plugins(axis) {
                let mut params = gauntlet_core::params::Params::new();
                if ["pair", "tap", "crescendo"].contains(&info.name) {
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
                    // Needs the `classifier` feature and installed weights; its own
                    // tests cover both the build and the error that says how to get it.
                    Axis::Judge if info.name == "refusal_classifier" => true,
                    Axis::Judge => build_judge(&spec).is_ok(),
                    _ => build_metric(&spec).is_ok(),
                };
                assert!(ok, "{} `{}` does not build", axis.as_str(), info.name);
            }
        }
    }
}
