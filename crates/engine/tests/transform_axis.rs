//! The `transforms:` axis and the `transforms` attack param: the axis is shorthand for the
//! param form (same attacks, same canonical config, same hash); errors are located.

use gauntlet_engine::plan::Plan;
use gauntlet_redteam::config::{self, ConfigError, RunConfig};
use gauntlet_redteam::registry::Registry;
use std::path::Path;

fn parse(yaml: &str) -> Result<RunConfig, ConfigError> {
    config::parse(yaml, Path::new("cfg.yaml"), &Registry)
}

fn hash(c: RunConfig) -> (String, Vec<String>) {
    let plan = Plan::build(c).unwrap();
    let labels = plan.attacks.iter().map(|a| a.spec().label()).collect();
    (plan.config_hash, labels)
}

const HEAD: &str = "run_name: t\ntargets: [reference]\ndatasets: [demo]\njudges: [refusal_match]\nmetrics: [asr]\n";

#[test]
fn the_axis_is_the_param_form_written_out() {
    let axis = parse(&format!(
        "{HEAD}attacks: [static, template]\ntransforms: [none, base64, {{name: caesar, params: {{shift: 7}}}}, [leetspeak, rot13]]\n"
    ))
    .unwrap();
    let explicit = parse(&format!(
        "{HEAD}attacks:
  - static
  - {{name: static, params: {{transforms: [base64]}}}}
  - {{name: static, params: {{transforms: [{{name: caesar, params: {{shift: 7}}}}]}}}}
  - {{name: static, params: {{transforms: [leetspeak, rot13]}}}}
  - template
  - {{name: template, params: {{transforms: [base64]}}}}
  - {{name: template, params: {{transforms: [{{name: caesar, params: {{shift: 7}}}}]}}}}
  - {{name: template, params: {{transforms: [leetspeak, rot13]}}}}
"
    ))
    .unwrap();
    assert_eq!(axis.canonical(), explicit.canonical());
    assert!(axis.canonical().get("transforms").is_none());
    let (h1, labels) = hash(axis);
    let (h2, _) = hash(explicit);
    assert_eq!(h1, h2);
    assert_eq!(
        labels,
        [
            "static",
            "static+base64",
            "static+caesar",
            "static+leetspeak+rot13",
            "template",
            "template+base64",
            "template+caesar",
            "template+leetspeak+rot13"
        ]
    );
}

/// An attack's own chain comes first, the axis entry's after it.
#[test]
fn the_axis_appends_to_an_attacks_own_chain() {
    let c = parse(&format!(
        "{HEAD}attacks: [{{name: static, params: {{transforms: [json_framing]}}}}]\ntransforms: [none, base64]\n"
    ))
    .unwrap();
    let (_, labels) = hash(c);
    assert_eq!(
        labels,
        ["static+json_framing", "static+json_framing+base64"]
    );
}

/// A config without transforms resolves exactly as before: no `transforms` param is
/// added to any attack (its identity, and so every call key, is unchanged).
#[test]
fn attacks_without_transforms_have_no_transforms_param() {
    let c = parse(&format!("{HEAD}attacks: [static, template, best_of_n]\n")).unwrap();
    for a in &c.attacks {
        assert!(a.params.get("transforms").is_none(), "{}", a.name);
        assert!(!a.identity().to_string().contains("transforms"));
    }
    let t = parse("run_name: t\ntargets: [reference]\nattacks: [static]\ndatasets: [demo]\njudges: [refusal_match]\nmetrics: [asr]\n").unwrap();
    assert!(!t.targets[0].identity().to_string().contains("blind_to"));
}

fn diag(yaml: &str, msg: &str) -> (String, u32, String) {
    let e = match parse(yaml) {
        Ok(c) => Plan::build(c).err().expect("config unexpectedly valid"),
        Err(e) => e,
    };
    let d = e
        .diags
        .iter()
        .find(|d| d.message.contains(msg))
        .unwrap_or_else(|| panic!("no diagnostic containing {msg:?} in:\n{e}"));
    (
        d.path.clone(),
        d.loc.line,
        d.help.clone().unwrap_or_default(),
    )
}

#[test]
fn transform_errors_are_located() {
    let (path, line, help) = diag(
        &format!("{HEAD}attacks: [static]\ntransforms: [none, bas64]\n"),
        "unknown transform `bas64`",
    );
    assert_eq!((path.as_str(), line), ("transforms[1]", 7));
    assert!(help.contains("did you mean `base64`"), "{help}");

    let (path, _, _) = diag(
        &format!(
            "{HEAD}attacks:\n  - {{name: static, params: {{transforms: [{{name: caesar, params: {{shift: 40}}}}]}}}}\n"
        ),
        "out of range",
    );
    assert_eq!(path, "attacks[0].params.transforms[0].params.shift");

    let (path, _, _) = diag(
        &format!("{HEAD}attacks: [static]\ntransforms: base64\n"),
        "must be a list",
    );
    assert_eq!(path, "transforms");

    let (_, _, help) = diag(
        "run_name: t\ntargets: [reference]\ninjections: [no_injection]\nscenarios: [bundled]\njudges: [injection_detector]\nmetrics: [injection_success_rate]\ntransforms: [base64]\n",
        "injection run has none",
    );
    assert!(help.contains("remove `transforms`"));

    // Two entries that label the same (caesar with two shifts) are refused, not merged.
    let (_, _, help) = diag(
        &format!(
            "{HEAD}attacks: [static]\ntransforms: [{{name: caesar, params: {{shift: 1}}}}, {{name: caesar, params: {{shift: 2}}}}]\n"
        ),
        "share the label `static+caesar`",
    );
    assert!(!help.is_empty());

    // A model-driven transform needs an attacker model (its own or the attack's).
    let (path, _, _) = diag(
        &format!("{HEAD}attacks: [static]\ntransforms: [paraphrase]\n"),
        "give it an `attacker` model spec",
    );
    assert_eq!(path, "attacks[0]");
    let (_, _, _) = diag(
        &format!(
            "{HEAD}attacks: [static]\ntransforms: [{{name: translate, params: {{attacker: {{name: nope}}}}}}]\n"
        ),
        "unknown target `nope`",
    );
}
