//! What two paired cells must share: a paired comparison (`gauntlet compare`, the
//! dashboard's compare page) is honest only when the two cells differ in the compared
//! factor alone. Two cells with the same attack label can still differ in what the label
//! does not show — PAIR's attacker model, a rubric judge's grader, a judge's params, the
//! transforms of a chain given by params, the dataset version — and pairing them silently
//! reports the difference of two things as the effect of one.
//!
//! [`spec_mismatches`] names every param path where two specs differ;
//! [`config_mismatches`] applies it to the attacks and judges two recorded configs share
//! by label. Callers refuse a mismatched pair, or (told to allow it) flag it with these
//! messages. Annotation params ([`gauntlet_core::params::ANNOTATION_PARAMS`], a judge's
//! `card`) change no call and are not differences.

use crate::config::RunConfig;
use gauntlet_core::params::{ANNOTATION_PARAMS, PluginSpec};
use serde_json::Value;
use std::fmt;

/// One difference between the two sides of a comparison.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Mismatch {
    /// What differs: `attack \`pair\``, `judge \`rubric\``, `dataset \`demo\``.
    pub what: String,
    /// Where in it: `params.attacker.params.model`, `version`.
    pub path: String,
    /// Side A's value (JSON, or `absent`).
    pub a: String,
    /// Side B's value.
    pub b: String,
}

impl fmt::Display for Mismatch {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "{}: {} is {} in A but {} in B",
            self.what, self.path, self.a, self.b
        )
    }
}

fn shown(v: Option<&Value>) -> String {
    match v {
        None => "absent".into(),
        Some(v) => {
            let s = v.to_string();
            match s.char_indices().nth(120) {
                Some((cut, _)) => format!("{}…", &s[..cut]),
                None => s,
            }
        }
    }
}

/// Appends the paths where `a` and `b` differ (objects key by key, arrays element by
/// element; at most 20 differences).
fn diff(path: &str, a: Option<&Value>, b: Option<&Value>, what: &str, out: &mut Vec<Mismatch>) {
    if out.len() >= 20 || a == b {
        return;
    }
    match (a, b) {
        (Some(Value::Object(x)), Some(Value::Object(y))) => {
            let mut keys: Vec<&String> = x.keys().chain(y.keys()).collect();
            keys.sort();
            keys.dedup();
            for k in keys {
                diff(&format!("{path}.{k}"), x.get(k), y.get(k), what, out);
            }
        }
        (Some(Value::Array(x)), Some(Value::Array(y))) if x.len() == y.len() => {
            for (i, (p, q)) in x.iter().zip(y).enumerate() {
                diff(&format!("{path}[{i}]"), Some(p), Some(q), what, out);
            }
        }
        _ => out.push(Mismatch {
            what: what.to_owned(),
            path: path.to_owned(),
            a: shown(a),
            b: shown(b),
        }),
    }
}

/// The params of a spec that reads recorded results (`gauntlet import agentdojo`'s
/// injections) which locate those results rather than set how a case is run.
const IMPORT_SOURCE_PARAMS: &[&str] = &["logdir", "model"];

/// Where specs `a` and `b` differ (plugin name, then each param path), `what` naming the
/// spec in the messages. Empty: they ask the same thing of every model.
pub fn spec_mismatches(what: &str, a: &PluginSpec, b: &PluginSpec) -> Vec<Mismatch> {
    let mut out = Vec::new();
    if a.name != b.name {
        out.push(Mismatch {
            what: what.to_owned(),
            path: "plugin".into(),
            a: a.name.clone(),
            b: b.name.clone(),
        });
        return out;
    }
    let params = |s: &PluginSpec| {
        let mut v = serde_json::to_value(&s.params).unwrap_or(Value::Null);
        if let Value::Object(o) = &mut v {
            for k in ANNOTATION_PARAMS {
                o.remove(*k);
            }
            // An imported run's injection names where its results were read from
            // (`logdir`, and the `model` whose pipeline directories they are): that is
            // the imported target, what two imported runs are compared by, not a setting.
            if o.contains_key("logdir") {
                for k in IMPORT_SOURCE_PARAMS {
                    o.remove(*k);
                }
            }
        }
        v
    };
    diff("params", Some(&params(a)), Some(&params(b)), what, &mut out);
    out
}

/// The differences between the attacks and judges two recorded configs give the labels
/// in `attacks` and `judges` (labels one config lacks are skipped: nothing is paired
/// there). Targets are not compared: across runs they are what is compared.
pub fn config_mismatches(
    a: &RunConfig,
    b: &RunConfig,
    attacks: &[&str],
    judges: &[&str],
) -> Vec<Mismatch> {
    let mut out = Vec::new();
    let find =
        |specs: &[PluginSpec], label: &str| specs.iter().find(|s| s.label() == label).cloned();
    for (axis, labels, sa, sb) in [
        ("attack", attacks, &a.attacks, &b.attacks),
        ("judge", judges, &a.judges, &b.judges),
    ] {
        for l in labels {
            if let (Some(x), Some(y)) = (find(sa, l), find(sb, l)) {
                out.extend(spec_mismatches(&format!("{axis} `{l}`"), &x, &y));
            }
        }
    }
    out
}

/// The difference of a dataset recorded at two versions, if it is one.
pub fn dataset_mismatch(name: &str, version_a: &str, version_b: &str) -> Option<Mismatch> {
    (version_a != version_b).then(|| Mismatch {
        what: format!("dataset `{name}`"),
        path: "version".into(),
        a: version_a.to_owned(),
        b: version_b.to_owned(),
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::path::Path;

    fn cfg(attacker_model: &str, grader: &str) -> RunConfig {
        let text = format!(
            "run_name: m\ntargets: [{{name: reference, params: {{name: t}}}}]\nattacks:\n  - static\n  - {{name: pair, params: {{attacker: {{name: openai_compat, params: {{model: {attacker_model}, base_url: 'http://127.0.0.1:1/v1'}}}}}}}}\ndatasets: [demo]\njudges:\n  - refusal_match\n  - {{name: rubric, params: {{grader: {{name: reference, params: {{name: {grader}}}}}}}}}\nmetrics: [asr]\n"
        );
        crate::config::parse(&text, Path::new("m.yaml"), &crate::registry::Registry).unwrap()
    }

    #[test]
    fn attacker_models_and_graders_that_differ_are_named() {
        let (a, b) = (cfg("qwen", "g1"), cfg("smollm", "g1"));
        assert!(config_mismatches(&a, &a, &["static", "pair"], &["rubric"]).is_empty());
        let m = config_mismatches(&a, &b, &["static", "pair"], &["refusal_match", "rubric"]);
        assert_eq!(m.len(), 1, "{m:?}");
        assert_eq!(m[0].what, "attack `pair`");
        assert_eq!(m[0].path, "params.attacker.params.model");
        assert_eq!(
            m[0].to_string(),
            "attack `pair`: params.attacker.params.model is \"qwen\" in A but \"smollm\" in B"
        );
        let g = config_mismatches(&a, &cfg("qwen", "g2"), &["pair"], &["rubric"]);
        assert_eq!(g.len(), 1, "{g:?}");
        assert!(
            g[0].what == "judge `rubric`" && g[0].path.contains("grader"),
            "{g:?}"
        );
        // An attack only one side has pairs nothing: no difference to name.
        assert!(config_mismatches(&a, &b, &["tap"], &[]).is_empty());
        assert!(dataset_mismatch("demo", "demo@1", "demo@1").is_none());
        assert_eq!(
            dataset_mismatch("x", "x@1", "x@2").unwrap().to_string(),
            "dataset `x`: version is x@1 in A but x@2 in B"
        );
    }
}
