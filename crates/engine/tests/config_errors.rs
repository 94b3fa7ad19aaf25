//! Every way a run config can be wrong gets a precise, located message.
//! Each case asserts the message, the key path, the help and the line.

use gauntlet_engine::plan::Plan;
use gauntlet_redteam::config::{self, ConfigError};
use gauntlet_redteam::registry::Registry;
use std::path::Path;

const GOOD: &str = "\
run_name: t
targets: [reference]
attacks: [static]
datasets: [demo]
judges: [refusal_match]
metrics: [asr]
";

fn err(yaml: &str) -> ConfigError {
    match config::parse(yaml, Path::new("cfg.yaml"), &Registry) {
        Ok(c) => match Plan::build(c) {
            Ok(_) => panic!("config unexpectedly valid:\n{yaml}"),
            Err(e) => e,
        },
        Err(e) => e,
    }
}

/// Asserts one diagnostic containing `msg`, at `line`, with `help` in its help text.
fn check(yaml: &str, msg: &str, path: &str, help: &str, line: u32) {
    let e = err(yaml);
    let d = e
        .diags
        .iter()
        .find(|d| d.message.contains(msg))
        .unwrap_or_else(|| panic!("no diagnostic containing {msg:?} in:\n{e}"));
    assert_eq!(d.path, path, "path of {msg:?}\n{e}");
    assert!(
        d.help.as_deref().unwrap_or("").contains(help),
        "help of {msg:?} lacks {help:?}:\n{e}"
    );
    assert_eq!(d.loc.line, line, "line of {msg:?}\n{e}");
    let shown = e.to_string();
    assert!(
        shown.starts_with(&format!("cfg.yaml:{line}:")),
        "display: {shown}"
    );
}

#[test]
fn the_good_config_is_good() {
    let c = config::parse(GOOD, Path::new("cfg.yaml"), &Registry).unwrap();
    assert_eq!(c.mode.as_str(), "jailbreak");
    Plan::build(c).unwrap();
}

#[test]
fn unknown_top_level_key_suggests_the_right_one() {
    check(
        &GOOD.replace("attacks:", "atacks:"),
        "unknown key `atacks`",
        "atacks",
        "did you mean `attacks`?",
        3,
    );
}

#[test]
fn unknown_plugin_lists_known_names() {
    check(
        &GOOD.replace("[reference]", "[referense]"),
        "unknown target `referense`",
        "targets[0]",
        "did you mean `reference`? known targets: reference",
        2,
    );
    check(
        &GOOD.replace("[static]", "[gcg]"),
        "unknown attack `gcg`",
        "attacks[0]",
        "known attacks: adaptive, best_of_n",
        3,
    );
}

#[test]
fn param_of_the_wrong_type() {
    check(
        &GOOD.replace(
            "[reference]",
            "\n  - {name: reference, params: {bypass_markers: please}}",
        ),
        "param `bypass_markers` expects list of strings, found a string",
        "targets[0].params.bypass_markers",
        "substrings that turn a refusal into compliance",
        3,
    );
}

#[test]
fn param_out_of_range_names_the_range() {
    check(
        &GOOD.replace("[asr]", "\n  - {name: asr_at_k, params: {k: 0}}"),
        "param `k` = 0 is out of range",
        "metrics[0].params.k",
        "integer in 1..=100000",
        7,
    );
}

#[test]
fn unknown_param_suggests_the_right_one() {
    check(
        &GOOD.replace(
            "[reference]",
            "\n  - {name: reference, params: {refusal_topic: [x]}}",
        ),
        "unknown param `refusal_topic` for target `reference`",
        "targets[0].params.refusal_topic",
        "did you mean `refusal_topics`?",
        3,
    );
}

#[test]
fn missing_required_nested_spec() {
    check(
        &GOOD.replace("[refusal_match]", "[rubric]"),
        "missing required param `grader` for judge `rubric`",
        "judges[0].params.grader",
        "target spec",
        5,
    );
}

#[test]
fn bad_nested_spec_is_located_inside() {
    let yaml = GOOD.replace(
        "[refusal_match]",
        "\n  - name: rubric\n    params:\n      grader: {name: reference, params: {fault_rate: 2}}",
    );
    check(
        &yaml,
        "param `fault_rate` = 2 is out of range",
        "judges[0].params.grader.params.fault_rate",
        "number in 0..=1",
        8,
    );
}

#[test]
fn enum_param_lists_allowed_values() {
    check(
        &GOOD.replace(
            "[reference]",
            "\n  - {name: reference, params: {fault: crash}}",
        ),
        "param `fault` has value `crash`, which is not allowed",
        "targets[0].params.fault",
        "allowed: error, empty, refusal_stop",
        3,
    );
}

#[test]
fn run_name_cannot_escape_the_runs_dir() {
    check(
        &GOOD.replace("run_name: t", "run_name: ../etc"),
        "run_name \"../etc\" is not allowed",
        "run_name",
        "A-Z a-z 0-9 . _ -",
        1,
    );
}

#[test]
fn mixed_modes_are_refused() {
    check(
        &format!("{GOOD}injections: [no_injection]\nscenarios: [bundled]\n"),
        "mixes jailbreak axes",
        "",
        "a run is one mode",
        7,
    );
}

#[test]
fn half_a_mode_names_the_missing_axis() {
    check(
        &GOOD.replace("datasets: [demo]\n", ""),
        "`attacks` is given but `datasets` is missing",
        "datasets",
        "jailbreak mode needs both `attacks` and `datasets`",
        3,
    );
}

#[test]
fn empty_and_missing_axes() {
    check(
        &GOOD.replace("[reference]", "[]"),
        "`targets` is empty",
        "targets",
        "known targets",
        2,
    );
    check(
        &GOOD.replace("judges: [refusal_match]\n", ""),
        "missing required key `judges`",
        "judges",
        "known judges: agent_evidence, agentdojo",
        1,
    );
}

#[test]
fn scalar_types_and_ranges() {
    check(
        &format!("{GOOD}seed: lots\n"),
        "seed must be an integer, found a string",
        "seed",
        "",
        7,
    );
    check(
        &format!("{GOOD}max_steps: 100\n"),
        "max_steps = 100 is out of range",
        "max_steps",
        "1..=64",
        7,
    );
}

#[test]
fn duplicate_labels_would_merge_cells() {
    // Unnamed targets of one plugin get labels from their params (tests/target_labels.rs);
    // names the user gave are kept, so two equal ones are still an error.
    check(
        &GOOD.replace(
            "[reference]",
            "[{name: reference, params: {name: a}}, {name: reference, params: {name: a, bypass_markers: [x]}}]",
        ),
        "targets[1] (line 2) and targets[0] (line 2) share the label `a`",
        "targets[1]",
        "distinct `name` param",
        2,
    );
}

#[test]
fn unknown_key_in_a_spec_mapping() {
    check(
        &GOOD.replace("[static]", "\n  - {name: static, parms: {}}"),
        "unknown key `parms`",
        "attacks[0].parms",
        "did you mean `params`?",
        4,
    );
}

#[test]
fn template_without_placeholder_is_caught_at_validation() {
    check(
        &GOOD.replace(
            "[static]",
            "\n  - {name: template, params: {templates: {a: no placeholder}}}",
        ),
        "has no {prompt} placeholder",
        "attacks[0]",
        "",
        4,
    );
}

#[test]
fn missing_dataset_file_names_the_file() {
    let e = err(&GOOD.replace(
        "[demo]",
        "\n  - {name: remote, params: {url: 'file:///nonexistent/b.json'}}",
    ));
    let s = e.to_string();
    assert!(
        s.contains("/nonexistent/b.json") && s.contains("cannot read"),
        "{s}"
    );
}

#[test]
fn invalid_yaml_and_wrong_root() {
    let e = err("run_name: [unclosed\n");
    assert!(e.diags[0].message.starts_with("invalid YAML"), "{e}");
    let e = err("- a\n- b\n");
    assert!(e.diags[0].message.contains("must be a mapping"), "{e}");
}

#[test]
fn all_problems_are_reported_at_once() {
    let e = err("run_name: t\natacks: [static]\ntargets: [nope]\n");
    assert!(e.diags.len() >= 4, "{e}");
    // sorted by position
    let lines: Vec<u32> = e.diags.iter().map(|d| d.loc.line).collect();
    let mut sorted = lines.clone();
    sorted.sort();
    assert_eq!(lines, sorted);
}

#[test]
fn redharness_smoke_config_reads_unchanged() {
    // redharness's own smoke config shape: the `mock` target and a nested grader.
    let yaml = "\
# Offline smoke run
run_name: smoke
seed: 0

targets:
  - name: mock
    params:
      bypass_markers:
        - \"ignore the previous framing\"

attacks:
  - static
  - template

datasets:
  - demo

judges:
  - refusal_match
  - name: rubric
    params:
      grader:
        name: mock

metrics:
  - asr
  - asr_at_k
  - refusal_rate
  - strongreject_score
  - frr
";
    let c = config::parse(yaml, Path::new("smoke.yaml"), &Registry).unwrap();
    let p = Plan::build(c).unwrap();
    assert_eq!(p.cells(), 4);
}

/// `trials` takes 1–100 (it used to refuse anything above 1): in range it is accepted
/// and recorded in the canonical config; out of range it is a located error.
#[test]
fn trials_in_range_are_accepted_and_out_of_range_located() {
    let c = config::parse(
        &format!("{GOOD}trials: 3\n"),
        Path::new("cfg.yaml"),
        &Registry,
    )
    .unwrap();
    assert_eq!(c.trials, 3);
    assert_eq!(c.canonical()["trials"], 3);
    Plan::build(c).unwrap();
    let c = config::parse(GOOD, Path::new("cfg.yaml"), &Registry).unwrap();
    assert_eq!(c.trials, 1);
    check(
        &format!("{GOOD}trials: 0\n"),
        "trials = 0 is out of range",
        "trials",
        "1..=100",
        7,
    );
    check(
        &format!("{GOOD}trials: 101\n"),
        "trials = 101 is out of range",
        "trials",
        "1..=100",
        7,
    );
    check(
        &format!("{GOOD}trials: three\n"),
        "trials must be an integer, found a string",
        "trials",
        "",
        7,
    );
}
