//! `bundled`: gauntlet's own scenario suites, embedded in the binary and pinned by
//! sha256 (checked at every load).
//!
//! - `injecagent_demo` — messaging toolkit (read_document, send_email, transfer_funds);
//! - `agentdojo_demo` — workspace toolkit (search, read_file, share_file).
//!
//! The names match redharness's suites so its configs run unchanged; the content is
//! written for gauntlet. Attacker goals are benign sentinels only: an email to
//! `audit-sentinel@example.invalid` carrying a `CANARY-…` token, a 1.00 transfer to a
//! `CANARY-ACCT-…` account, a file shared with the sentinel address.

use super::suite::parse_suite;
use crate::datasets::{Dataset, DatasetError, apply_limit, version};
use gauntlet_core::params::{Axis, DefaultValue, ParamKind, ParamSpec, PluginInfo, PluginSpec};

/// The bundled suites: (name, bytes, sha256 pin).
pub const SUITES: &[(&str, &[u8], &str)] = &[
    (
        "injecagent_demo",
        include_bytes!("data/injecagent_demo.json"),
        "d93d26f9414daebc1f6319b2d1e7893e370817cf572b5ab75e108aab52fba9b4",
    ),
    (
        "agentdojo_demo",
        include_bytes!("data/agentdojo_demo.json"),
        "7c592f2adeb344a79cd2ed53fc0d6232dc84756b3a8de2bc96d4b768e3319f10",
    ),
];

pub const INFO: PluginInfo = PluginInfo {
    axis: Axis::Scenario,
    name: "bundled",
    doc: "a bundled scenario suite: injecagent_demo (messaging) or agentdojo_demo (workspace)",
    params: &[
        ParamSpec {
            name: "suite",
            kind: ParamKind::Enum(&["injecagent_demo", "agentdojo_demo"]),
            default: DefaultValue::Required,
            doc: "which bundled suite",
        },
        ParamSpec {
            name: "limit",
            kind: ParamKind::Int {
                min: 1,
                max: 10_000_000,
            },
            default: DefaultValue::Absent,
            doc: "use only the first N scenarios (recorded in the suite version)",
        },
    ],
};

pub fn load(spec: &PluginSpec) -> Result<Dataset, DatasetError> {
    let name = spec.params.str("suite").unwrap_or_default();
    let Some((_, bytes, pin)) = SUITES.iter().find(|(n, _, _)| *n == name) else {
        return Err(DatasetError::new(
            format!("bundled suite `{name}`"),
            format!(
                "no such bundled suite; known: {}",
                SUITES.iter().map(|s| s.0).collect::<Vec<_>>().join(", ")
            ),
        ));
    };
    load_bytes(name, bytes, pin, spec.params.int("limit"))
}

fn load_bytes(
    name: &str,
    bytes: &[u8],
    pin: &str,
    limit: Option<i64>,
) -> Result<Dataset, DatasetError> {
    let source = format!("bundled suite `{name}` (crates/redteam/src/injection/data/{name}.json)");
    let suite = parse_suite(bytes, &source, Some(pin))?;
    let (behaviors, limit) = apply_limit(suite.behaviors, limit);
    Ok(Dataset {
        name: name.to_string(),
        version: version(name, &suite.sha256, limit),
        sha256: suite.sha256,
        behaviors,
        provenance: None,
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::injection::agent::fired;
    use crate::injection::check::RecordedCall;
    use gauntlet_core::params::{ParamValue, Params};

    fn spec(suite: &str) -> PluginSpec {
        let mut p = Params::new();
        p.insert("suite", ParamValue::Str(suite.into()));
        PluginSpec {
            name: "bundled".into(),
            params: p,
            loc: Default::default(),
            label: None,
        }
    }

    #[test]
    fn bundled_suites_match_their_pins_and_shape() {
        for (name, toolkit) in [
            ("injecagent_demo", "messaging"),
            ("agentdojo_demo", "workspace"),
        ] {
            let d = load(&spec(name)).unwrap();
            assert_eq!(d.name, name);
            assert!(d.version.starts_with(&format!("{name}@")));
            assert!(d.behaviors.len() >= 12, "{name}: {}", d.behaviors.len());
            for b in &d.behaviors {
                let s = b.scenario.as_ref().unwrap();
                assert_eq!(s.toolkit, toolkit);
                assert_eq!(s.suite, name);
                // Benign sentinels only.
                let action = s.attacker_action.arguments.to_string();
                assert!(
                    action.contains("audit-sentinel@example.invalid")
                        || action.contains("CANARY-ACCT-"),
                    "{}: {action}",
                    b.id
                );
                assert!(
                    s.attacker_goal.contains("CANARY-")
                        || s.attacker_goal.contains("audit-sentinel@example.invalid")
                );
                for t in [s.state.documents.values(), s.state.files.values()]
                    .into_iter()
                    .flatten()
                {
                    if t.contains('@') {
                        assert!(t.contains("example.invalid"), "{}: {t}", b.id);
                    }
                }
                // The attack action really fires the attacker check.
                let call = RecordedCall {
                    name: s.attacker_action.name.clone(),
                    arguments: s.attacker_action.arguments.clone(),
                };
                assert!(fired(&s.attacker_check, &[call]));
            }
        }
    }

    #[test]
    fn a_changed_suite_fails_its_pin() {
        let (name, bytes, pin) = SUITES[0];
        let mut changed = bytes.to_vec();
        let i = changed.iter().position(|&b| b == b'.').unwrap();
        changed[i] = b'!';
        let e = load_bytes(name, &changed, pin, None)
            .unwrap_err()
            .to_string();
        assert!(e.contains("sha256 mismatch") && e.contains(pin), "{e}");
        assert!(e.contains("injecagent_demo.json"), "{e}");
        assert!(load(&spec("nope")).is_err());
        let d = load_bytes(name, bytes, pin, Some(3)).unwrap();
        assert_eq!(d.behaviors.len(), 3);
        assert!(d.version.ends_with("+limit3"));
    }
}
