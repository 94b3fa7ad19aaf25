//! Every param of every registered plugin round-trips through the canonical config that
//! run.json records: a run's config, written as JSON and read back the way
//! `StoredRun::open` reads it, resolves to the same specs and the same config hash.
//! A param that did not (a `templates` mapping recorded as a list) made every analysis
//! of such a run refuse it.

use gauntlet_core::params::{Axis, ParamKind, PluginInfo, resolve_spec};
use gauntlet_core::tree::parse_yaml;
use gauntlet_redteam::config;
use gauntlet_redteam::registry::Registry;
use proptest::prelude::*;
use std::path::Path;

/// A YAML value (as JSON text, which is YAML) valid for a param of `kind`.
fn value(kind: ParamKind) -> BoxedStrategy<serde_json::Value> {
    use serde_json::Value as J;
    let text = || {
        prop_oneof![
            any::<String>(),
            "[a-z{}. ]{0,12}".prop_map(String::from),
            Just("null".to_string()),
            Just("~".to_string()),
            Just("12".to_string()),
            Just("yes".to_string()),
        ]
    };
    match kind {
        ParamKind::Str => text().prop_map(J::String).boxed(),
        ParamKind::Enum(vals) => prop::sample::select(vals)
            .prop_map(|v| J::String(v.to_string()))
            .boxed(),
        ParamKind::Int { min, max } => prop_oneof![Just(min), Just(max), min..=max]
            .prop_map(J::from)
            .boxed(),
        ParamKind::Float { min, max } => {
            let hi = if max.is_finite() { max } else { 1e300 };
            prop_oneof![
                Just(min),
                Just(hi),
                (0.0f64..=1.0).prop_map(move |t| min + (hi - min) * t),
            ]
            .prop_map(|f| serde_json::Number::from_f64(f).map_or(J::Null, J::Number))
            .boxed()
        }
        ParamKind::Bool => any::<bool>().prop_map(J::Bool).boxed(),
        ParamKind::StrList => prop::collection::vec(text(), 0..4)
            .prop_map(|v| J::Array(v.into_iter().map(J::String).collect()))
            .boxed(),
        ParamKind::StrMap => prop::collection::btree_map("[a-z_]{1,8}", text(), 1..4)
            .prop_map(|m| J::Object(m.into_iter().map(|(k, v)| (k, J::String(v))).collect()))
            .boxed(),
        ParamKind::Json => prop_oneof![
            text().prop_map(J::String),
            prop::collection::btree_map("[a-z_]{1,8}", text(), 0..4).prop_map(|m| {
                J::Object(m.into_iter().map(|(k, v)| (k, J::String(v))).collect())
            }),
            prop::collection::vec(any::<i64>().prop_map(J::from), 0..3).prop_map(J::Array),
        ]
        .boxed(),
        ParamKind::Spec(axis) => prop::sample::select(Registry::plugins(axis))
            .prop_map(|p: PluginInfo| J::String(p.name.to_string()))
            .boxed(),
        ParamKind::SpecList(axis) => {
            prop::collection::vec(prop::sample::select(Registry::plugins(axis)), 0..3)
                .prop_map(|ps: Vec<PluginInfo>| {
                    J::Array(ps.iter().map(|p| J::String(p.name.to_string())).collect())
                })
                .boxed()
        }
    }
}

/// Every plugin of every axis with a random value for a random subset of its params.
fn any_spec() -> impl Strategy<Value = (Axis, serde_json::Value)> {
    let all: Vec<(Axis, PluginInfo)> = Axis::ALL
        .iter()
        .flat_map(|&a| Registry::plugins(a).iter().map(move |p| (a, *p)))
        .collect();
    prop::sample::select(all).prop_flat_map(|(axis, info)| {
        let params: Vec<_> = info
            .params
            .iter()
            .map(|p| (Just(p.name), prop::option::weighted(0.7, value(p.kind))))
            .collect();
        params.prop_map(move |ps| {
            let params: serde_json::Map<String, serde_json::Value> = ps
                .into_iter()
                .filter_map(|(n, v)| v.map(|v| (n.to_string(), v)))
                .collect();
            (
                axis,
                serde_json::json!({"name": info.name, "params": params}),
            )
        })
    })
}

proptest! {
    #![proptest_config(ProptestConfig {
        cases: 2000,
        failure_persistence: None,
        ..ProptestConfig::default()
    })]

    /// A spec that resolves, written as its identity (what run.json holds) and read
    /// again, resolves to the same spec.
    #[test]
    fn every_param_of_every_plugin_round_trips((axis, spec) in any_spec()) {
        let node = parse_yaml(&spec.to_string()).unwrap();
        let mut diags = Vec::new();
        let Some(first) = resolve_spec(&Registry, axis, &node, "x", &mut diags) else {
            // Some combinations are invalid on purpose (e.g. a required param left out).
            return Ok(());
        };
        prop_assert!(diags.is_empty());
        let recorded = first.identity().to_string();
        let node = parse_yaml(&recorded).unwrap();
        let mut diags = Vec::new();
        let again = resolve_spec(&Registry, axis, &node, "x", &mut diags);
        prop_assert!(diags.is_empty(), "{recorded}\n{diags:?}");
        let again = again.unwrap();
        // The identity holds every param (nested specs inlined, mappings in order).
        prop_assert_eq!(again.identity(), first.identity());
    }
}

/// The whole canonical config of a run with a custom `templates` mapping reads back to
/// the same canonical config (and so the same hash), the order of the templates kept.
#[test]
fn a_templates_mapping_round_trips_through_the_canonical_config() {
    let yaml = r#"
run_name: t
targets: [reference]
attacks:
  - {name: template, params: {templates: {zz_last: 'Z {prompt}', roleplay: 'Pretend. {prompt}'}}}
datasets: [demo]
judges: [refusal_match]
metrics: [asr]
"#;
    let cfg = config::parse(yaml, Path::new("t.yaml"), &Registry).unwrap();
    let mut canonical = cfg.canonical();
    canonical.as_object_mut().unwrap().remove("mode");
    let again = config::parse(&canonical.to_string(), Path::new("run.json"), &Registry)
        .unwrap_or_else(|e| panic!("{e}"));
    assert_eq!(again.canonical(), cfg.canonical());
    let templates = again.attacks[0].params.str_map("templates").unwrap();
    assert_eq!(templates[0].0, "zz_last");
    assert_eq!(templates[1].0, "roleplay");
}
