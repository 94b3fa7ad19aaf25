//! Targets of one plugin left unnamed get distinct, stable labels from the params that
//! differ between them; explicit names win; targets that cannot be told apart are
//! errors naming both. Labels never enter an identity, so cache keys and config hashes
//! do not depend on them.

use gauntlet_calls::cache::call_base;
use gauntlet_engine::plan::Plan;
use gauntlet_redteam::config::{self, ConfigError, RunConfig};
use gauntlet_redteam::registry::Registry;
use std::path::Path;

fn cfg(targets: &str) -> String {
    format!(
        "run_name: t\ntargets:\n{targets}attacks: [static]\ndatasets: [demo]\njudges: [refusal_match]\nmetrics: [asr]\n"
    )
}

fn parse(targets: &str) -> Result<RunConfig, ConfigError> {
    config::parse(&cfg(targets), Path::new("cfg.yaml"), &Registry)
}

fn labels(targets: &str) -> Vec<String> {
    let c = parse(targets).unwrap_or_else(|e| panic!("{e}"));
    c.targets.iter().map(|t| t.label()).collect()
}

const FOUR: &str = "  - {name: anthropic, params: {model: claude-haiku-4-5}}
  - {name: anthropic, params: {model: claude-sonnet-4-6}}
  - {name: openai_compat, params: {model: gpt-4o-mini, base_url: https://api.openai.com/v1, api_key_env: OPENAI_API_KEY}}
  - {name: openai_compat, params: {model: gpt-4o, base_url: https://api.openai.com/v1, api_key_env: OPENAI_API_KEY}}
";

#[test]
fn models_of_one_provider_are_labelled_by_model() {
    assert_eq!(
        labels(FOUR),
        [
            "anthropic/claude-haiku-4-5",
            "anthropic/claude-sonnet-4-6",
            "openai_compat/gpt-4o-mini",
            "openai_compat/gpt-4o"
        ]
    );
}

#[test]
fn several_differing_params_all_show_model_first_then_by_name() {
    assert_eq!(
        labels(
            "  - {name: anthropic, params: {model: m1, temperature: 0.2}}\n  - {name: anthropic, params: {model: m2, temperature: 0.7, max_tokens: 100}}\n"
        ),
        // (max_tokens left at anthropic's default is left out of the first label)
        [
            "anthropic/m1/temperature=0.2",
            "anthropic/m2/max_tokens=100/temperature=0.7"
        ]
    );
    // The same model: only what differs.
    assert_eq!(
        labels(
            "  - {name: anthropic, params: {model: m, temperature: 0.2}}\n  - {name: anthropic, params: {model: m, temperature: 0.7}}\n"
        ),
        ["anthropic/temperature=0.2", "anthropic/temperature=0.7"]
    );
    // Lists show as JSON; long or empty values by digest.
    let long = "x".repeat(65);
    let l = labels(&format!(
        "  - reference\n  - {{name: reference, params: {{bypass_markers: [a b]}}}}\n  - {{name: reference, params: {{compliance_text: {long}}}}}\n"
    ));
    assert_eq!(l[0], "reference");
    assert_eq!(l[1], "reference/bypass_markers=[\"a b\"]");
    assert!(l[2].starts_with("reference/compliance_text#"), "{l:?}");
    assert_eq!(l[2].len(), "reference/compliance_text#".len() + 8, "{l:?}");
}

#[test]
fn labels_do_not_depend_on_order() {
    let lines: Vec<&str> = FOUR.lines().collect();
    let reversed: String = lines.iter().rev().map(|l| format!("{l}\n")).collect();
    let mut a = labels(FOUR);
    let mut b = labels(&reversed);
    b.reverse();
    assert_eq!(a, b);
    a.sort();
    a.dedup();
    assert_eq!(a.len(), 4);
}

#[test]
fn an_explicit_name_wins() {
    assert_eq!(
        labels(
            "  - {name: anthropic, params: {name: fast, model: claude-haiku-4-5}}\n  - {name: anthropic, params: {model: claude-sonnet-4-6}}\n  - {name: anthropic, params: {model: claude-opus-4-1}}\n"
        ),
        [
            "fast",
            "anthropic/claude-sonnet-4-6",
            "anthropic/claude-opus-4-1"
        ]
    );
    // One unnamed target of a plugin keeps the plugin name.
    assert_eq!(
        labels(
            "  - {name: anthropic, params: {name: fast, model: a}}\n  - {name: anthropic, params: {model: b}}\n"
        ),
        ["fast", "anthropic"]
    );
}

#[test]
fn targets_that_differ_in_nothing_are_an_error_naming_both() {
    let e = parse(
        "  - {name: anthropic, params: {model: m}}\n  - {name: openai_compat, params: {model: m}}\n  - {name: anthropic, params: {model: m}}\n",
    )
    .unwrap_err();
    assert_eq!(e.diags.len(), 1, "{e}");
    let d = &e.diags[0];
    assert_eq!(d.path, "targets[2]");
    assert!(
        d.message.contains(
            "targets[2] (line 5) and targets[0] (line 3) are the same `anthropic` target"
        ),
        "{e}"
    );
    assert!(d.help.as_deref().unwrap().contains("remove"), "{e}");
}

#[test]
fn a_derived_label_that_meets_a_name_is_an_error() {
    let e = parse(&format!(
        "{FOUR}  - {{name: reference, params: {{name: anthropic/claude-haiku-4-5}}}}\n"
    ))
    .unwrap_err();
    assert_eq!(e.diags.len(), 1, "{e}");
    assert!(
        e.diags[0]
            .message
            .contains("targets[4] (line 7) and targets[0] (line 3) share the label `anthropic/claude-haiku-4-5`"),
        "{e}"
    );
    assert!(
        e.diags[0]
            .help
            .as_deref()
            .unwrap()
            .contains("give one of them a `name`"),
        "{e}"
    );
}

#[test]
fn configs_with_distinct_labels_keep_them_unassigned() {
    let text = std::fs::read_to_string(
        Path::new(env!("CARGO_MANIFEST_DIR")).join("../../examples/smoke.yaml"),
    )
    .unwrap();
    let c = config::parse(&text, Path::new("smoke.yaml"), &Registry).unwrap();
    let l: Vec<_> = c
        .targets
        .iter()
        .map(|t| (t.label.clone(), t.label()))
        .collect();
    assert_eq!(
        l,
        [
            (None, "aligned".to_string()),
            (None, "permissive".to_string())
        ]
    );
}

#[test]
fn labels_are_not_part_of_any_identity_and_survive_run_json() {
    let two = "  - reference\n  - {name: reference, params: {bypass_markers: [x]}}\n";
    let c = parse(two).unwrap();
    assert!(c.targets.iter().all(|t| t.label.is_some()));
    let mut unlabelled = c.clone();
    for t in &mut unlabelled.targets {
        t.label = None;
    }
    assert_eq!(c.canonical(), unlabelled.canonical());
    let plan = Plan::build(c.clone()).unwrap();
    let bare = Plan::build(unlabelled).unwrap();
    assert_eq!(plan.config_hash, bare.config_hash);
    assert_eq!(plan.targets[1].label(), "reference/bypass_markers=[\"x\"]");
    assert_eq!(bare.targets[1].label(), "reference");
    for (t, u) in plan.targets.iter().zip(&bare.targets) {
        assert_eq!(
            call_base(t.as_ref(), "target").finish_hex(),
            call_base(u.as_ref(), "target").finish_hex()
        );
    }
    // run.json records the canonical config; reading it back derives the same labels.
    let mut canonical = c.canonical();
    canonical.as_object_mut().unwrap().remove("mode");
    let again = config::parse(&canonical.to_string(), Path::new("run.json"), &Registry).unwrap();
    let l = |c: &RunConfig| c.targets.iter().map(|t| t.label()).collect::<Vec<_>>();
    assert_eq!(l(&again), l(&c));
    assert_eq!(l(&c), ["reference", "reference/bypass_markers=[\"x\"]"]);
}
