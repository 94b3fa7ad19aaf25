//! The commands for pipelines: `gauntlet gate` (threshold and regression rules over a
//! finished run; exit 0 pass, 1 a rule failed, 2 bad input) and the pipeline formats of
//! `gauntlet report` (JUnit XML, SARIF 2.1.0, GitHub step-summary Markdown). The gate of
//! a run config's `gate:` block runs through [`run_gate`] at the end of `gauntlet run`.

use crate::error::CliError;
use gauntlet_core::terminal::safe;
use gauntlet_engine::gate::{self, GateReport};
use gauntlet_redteam::gate_rule::{self, Rule};
use gauntlet_report::junit::{self, Case, Outcome, Suite};
use std::path::{Path, PathBuf};

/// Output formats of `gate`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
pub(crate) enum GateFormat {
    Text,
    Json,
    Junit,
    GithubSummary,
}

/// Pipeline formats of `report`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
pub(crate) enum ReportFormat {
    Junit,
    Sarif,
    GithubSummary,
}

#[derive(clap::Args)]
pub(crate) struct GateArgs {
    /// The run directory to gate.
    run_dir: PathBuf,
    /// A rule (repeat): `METRIC[key=value,…] (<=|<|>=|>) NUMBER by (value|ci_low|ci_high)`
    /// or `METRIC[key=value,…] no regression at alpha=NUMBER` (needs --baseline).
    #[arg(long = "rule", value_name = "RULE", required = true)]
    rules: Vec<String>,
    /// The baseline run for regression rules.
    #[arg(long, value_name = "RUN_DIR")]
    baseline: Option<PathBuf>,
    /// text (a table), json, junit (one test case per rule) or github-summary.
    #[arg(long, value_enum, default_value = "text")]
    format: GateFormat,
    /// Write the output to FILE instead of stdout (the verdict is still the exit code).
    #[arg(long, value_name = "FILE")]
    out: Option<PathBuf>,
    /// The original config's directory, for runs with relative `file://` datasets (the
    /// gate reads the run back to recount its leaderboard from its transcripts).
    #[arg(long, value_name = "DIR")]
    config_dir: Option<PathBuf>,
}

/// `text` to `--out FILE` (written atomically; a device or FIFO written straight into),
/// else to stdout.
pub(crate) fn emit(text: &str, out: Option<&Path>) -> Result<(), CliError> {
    match out {
        Some(p) => {
            let dir = p
                .parent()
                .filter(|d| !d.as_os_str().is_empty())
                .unwrap_or(Path::new("."));
            let name = p.file_name().and_then(|n| n.to_str()).ok_or_else(|| {
                CliError::invalid(format!("--out {}: not a file name", p.display()))
            })?;
            gauntlet_report::write_atomic(dir, name, text.as_bytes())
                .map_err(|e| CliError::failed(format!("cannot write {}: {e}", p.display())))
        }
        None => {
            out!("{text}")?;
            Ok(())
        }
    }
}

/// The gate's JUnit suite: one case per rule, failed with its numbers when it failed.
fn gate_junit(r: &GateReport) -> String {
    let cases = r
        .rules
        .iter()
        .map(|o| {
            let details: Vec<String> = o
                .checked
                .iter()
                .map(|c| {
                    // One line per row: the run's strings have their line breaks spelled
                    // out (the JUnit writer escapes the rest).
                    let mut l = format!(
                        "{} {} {} (n={}): {}",
                        if c.passed { "ok" } else { "FAIL" },
                        safe(&c.cell),
                        safe(&c.metric),
                        c.n,
                        safe(&c.detail)
                    );
                    if let Some(why) = &c.not_recounted {
                        l.push_str(&format!("; not recounted: {}", safe(why)));
                    }
                    if !c.flipped.is_empty() {
                        let ids: Vec<_> = c.flipped.iter().map(|id| safe(id)).collect();
                        l.push_str(&format!("; flipped: {}", ids.join(", ")));
                    }
                    l
                })
                .collect();
            let failed = o.checked.iter().filter(|c| !c.passed).count();
            Case {
                name: o.rule.text().to_string(),
                classname: format!(
                    "gauntlet.gate.{}",
                    if o.rule.is_regression() {
                        "regression"
                    } else {
                        "threshold"
                    }
                ),
                outcome: if o.passed {
                    Outcome::Passed
                } else {
                    Outcome::Failed {
                        message: format!(
                            "{failed} of {} row(s) fail: {}",
                            o.checked.len(),
                            o.checked
                                .iter()
                                .find(|c| !c.passed)
                                .map(|c| format!("{}: {}", c.cell, c.detail))
                                .unwrap_or_default()
                        ),
                        details: details.join("\n"),
                    }
                },
                properties: vec![("rows".into(), o.checked.len().to_string())],
                output: Some(details.join("\n")),
            }
        })
        .collect();
    let mut props = vec![
        ("run".to_string(), r.run.clone()),
        ("run_id".to_string(), r.run_id.clone()),
    ];
    if let Some(b) = &r.baseline {
        props.push(("baseline".into(), b.clone()));
    }
    if let Some(o) = &r.behaviors {
        props.push(("behaviors".into(), gate::overlap_line(o)));
    }
    junit::render(
        "gauntlet gate",
        &[Suite {
            name: format!("gate {}", r.run_id),
            properties: props,
            cases,
        }],
    )
}

fn gate_markdown(r: &GateReport) -> String {
    let rows: Vec<Vec<String>> = r
        .rules
        .iter()
        .flat_map(|o| {
            o.checked.iter().map(move |c| {
                vec![
                    if c.passed { "pass" } else { "FAIL" }.to_string(),
                    o.rule.text().to_string(),
                    c.cell.clone(),
                    c.n.to_string(),
                    match &c.not_recounted {
                        Some(why) => format!("{} (not recounted: {why})", c.detail),
                        None => c.detail.clone(),
                    },
                    c.flipped.join(", "),
                ]
            })
        })
        .collect();
    let failed = r.rules.iter().filter(|o| !o.passed).count();
    let esc = gauntlet_report::github_summary::escape;
    format!(
        "## gauntlet gate: {}\n\nrun {}{}\n\n{}{}",
        if r.passed {
            format!("passed ({} rule(s))", r.rules.len())
        } else {
            format!("FAILED ({failed} of {} rule(s))", r.rules.len())
        },
        esc(&r.run_id),
        r.baseline
            .as_ref()
            .map(|b| format!(" against baseline {}", esc(b)))
            .unwrap_or_default(),
        r.behaviors
            .as_ref()
            .map(|o| format!("{}\n\n", esc(&gate::overlap_line(o))))
            .unwrap_or_default(),
        gauntlet_report::github_summary::table(
            &[
                "result",
                "rule",
                "cell",
                "n",
                "numbers",
                "flipped to the bad side"
            ],
            &rows
        )
    )
}

fn render_gate(r: &GateReport, format: GateFormat) -> String {
    match format {
        GateFormat::Text => gate::table(r),
        GateFormat::Json => {
            let mut s =
                gauntlet_core::terminal::ci_json(serde_json::to_string_pretty(r).expect("JSON"));
            s.push('\n');
            s
        }
        GateFormat::Junit => gate_junit(r),
        GateFormat::GithubSummary => gate_markdown(r),
    }
}

pub(crate) fn gate_cmd(a: GateArgs) -> Result<(), CliError> {
    let rules: Vec<Rule> = a
        .rules
        .iter()
        .map(|r| gate_rule::parse_rule(r))
        .collect::<Result<_, _>>()
        .map_err(CliError::invalid)?;
    let report = gate::evaluate(
        &a.run_dir,
        a.baseline.as_deref(),
        &rules,
        a.config_dir.as_deref(),
    )
    .map_err(CliError::invalid)?;
    emit(&render_gate(&report, a.format), a.out.as_deref())?;
    if a.out.is_some() || a.format != GateFormat::Text {
        // The table escapes every string it quotes, line by line; its own line breaks
        // stay line breaks.
        eprintln!("{}", gate::table(&report).trim_end());
    }
    if report.passed {
        Ok(())
    } else {
        Err(CliError::Verdict(crate::error::status::FAILED))
    }
}

/// The gate of a run config, after a complete run: prints the table; `Err` with the
/// run's gate exit status (4) when a rule failed, 2 when the gate cannot be evaluated.
pub(crate) fn run_gate(run_dir: &Path, g: &gate_rule::GateConfig) -> Result<(), CliError> {
    let report = gate::evaluate(
        run_dir,
        g.baseline.as_deref(),
        &g.rules,
        g.config_dir.as_deref(),
    )
    .map_err(|e| CliError::Invalid(format!("gate: {e}")))?;
    out!("{}", gate::table(&report))?;
    if report.passed {
        Ok(())
    } else {
        Err(CliError::Verdict(crate::error::status::GATE_FAILED))
    }
}

/// `report RUN_DIR --format junit|sarif|github-summary [--out FILE] [--config FILE]`.
pub(crate) fn report_format(
    run_dir: &Path,
    format: ReportFormat,
    out: Option<&Path>,
    config: Option<&Path>,
) -> Result<(), CliError> {
    let text = match format {
        ReportFormat::Sarif => {
            let f = gauntlet_engine::findings::run_findings(run_dir, config)
                .map_err(CliError::invalid)?;
            // A run not complete did not look everywhere: its findings are not the
            // whole answer, and the log says so.
            let partial =
                (f.summary.status != "complete").then(|| gauntlet_report::sarif::Invocation {
                    successful: false,
                    errors: vec![format!(
                        "the run is not complete (status `{}`): these findings cover only the attempts that finished",
                        f.summary.status
                    )],
                });
            gauntlet_report::sarif::render_with(
                &gauntlet_report::sarif::Tool {
                    name: "gauntlet".into(),
                    version: env!("CARGO_PKG_VERSION").into(),
                    information_uri: None,
                },
                &f.rules,
                &f.findings,
                partial.as_ref(),
            )
        }
        ReportFormat::GithubSummary => {
            let f = gauntlet_engine::findings::run_findings(run_dir, config)
                .map_err(CliError::invalid)?;
            gauntlet_report::github_summary::run(&f.summary, &f.counts)
        }
        ReportFormat::Junit => {
            let (summary, _) =
                gauntlet_engine::findings::read_run(run_dir).map_err(CliError::invalid)?;
            report_junit(&summary)
        }
    };
    emit(&text, out)
}

/// A run as JUnit: a `run` suite whose case fails when the run is not complete, then one
/// suite per cell with a case per metric (its value and interval as properties; N/A
/// skipped), each suite carrying the run's status.
fn report_junit(s: &gauntlet_results::RunSummary) -> String {
    let num = |x: Option<f64>| x.map_or("N/A".to_string(), |v| format!("{v}"));
    let mut suites = vec![Suite {
        name: format!("run {}", s.run_id),
        properties: vec![
            ("run_id".into(), s.run_id.clone()),
            ("config_hash".into(), s.config_hash.clone()),
            ("seed".into(), s.seed.to_string()),
            ("harness_version".into(), s.harness_version.clone()),
        ],
        cases: vec![Case {
            name: "run complete".into(),
            classname: "gauntlet.run".into(),
            outcome: if s.status == "complete" {
                Outcome::Passed
            } else {
                Outcome::Failed {
                    message: format!("the run is {}", s.status),
                    details: "rerun the same config to resume it".into(),
                }
            },
            properties: vec![],
            output: None,
        }],
    }];
    for c in &s.cells {
        let cell = format!("{} × {} × {} × {}", c.attack, c.target, c.dataset, c.judge);
        let cases = c
            .metrics
            .iter()
            .map(|m| {
                let v = &m.value;
                Case {
                    name: m.metric.clone()
                        + &if m.params.is_empty() {
                            String::new()
                        } else {
                            let ps: Vec<String> = m
                                .params
                                .iter()
                                .map(|(k, v)| match v {
                                    serde_json::Value::String(s) => format!("{k}={s}"),
                                    v => format!("{k}={v}"),
                                })
                                .collect();
                            format!("({})", ps.join(","))
                        },
                    classname: format!("gauntlet.{}.{}", c.attack, c.target),
                    outcome: match v.value {
                        Some(_) => Outcome::Passed,
                        None => Outcome::Skipped {
                            message: format!(
                                "N/A: {}",
                                v.na_reason.as_deref().unwrap_or("no value")
                            ),
                        },
                    },
                    properties: vec![
                        ("value".into(), num(v.value)),
                        ("ci_low".into(), num(v.ci_low)),
                        ("ci_high".into(), num(v.ci_high)),
                        ("n".into(), v.n.to_string()),
                        ("errors_excluded".into(), c.errors.to_string()),
                    ],
                    output: Some(format!(
                        "{}{} = {} [{}, {}] over n={} ({}; {} errors excluded)",
                        if s.status == "complete" {
                            String::new()
                        } else {
                            format!("NOT COMPLETE (run status {}): ", s.status)
                        },
                        m.metric,
                        num(v.value),
                        num(v.ci_low),
                        num(v.ci_high),
                        v.n,
                        c.dataset_version,
                        c.errors
                    )),
                }
            })
            .collect();
        suites.push(Suite {
            name: cell,
            properties: vec![
                ("dataset_version".into(), c.dataset_version.clone()),
                ("judge".into(), c.judge.clone()),
                // Every suite carries the run's status: a cell of a run not complete is
                // marked wherever a consumer shows it.
                ("run_status".into(), s.status.clone()),
            ],
            cases,
        });
    }
    junit::render("gauntlet report", &suites)
}

#[cfg(test)]
mod tests {
    use super::*;
    use gauntlet_engine::compare::Overlap;
    use gauntlet_engine::gate::{Checked, RuleOutcome};

    /// A regression gate of two imports of different prompt sets: every format says how
    /// many behaviors the run and its baseline share and hold alone, in the same words.
    #[test]
    fn every_gate_format_states_the_overlap_of_imports() {
        let rule = gate_rule::parse_rule("asr[judge=refusal_match] no regression at alpha=0.05")
            .expect("a rule");
        let report = GateReport {
            run: "runs/inspect".into(),
            run_id: "inspect-0123456789ab".into(),
            baseline: Some("runs/garak".into()),
            passed: true,
            rules: vec![RuleOutcome {
                rule,
                passed: true,
                checked: vec![Checked {
                    cell: "imported × test.Repeat vs mockllm/model × imported × refusal_match"
                        .into(),
                    metric: "asr".into(),
                    passed: true,
                    not_recounted: None,
                    value: None,
                    ci_low: None,
                    ci_high: None,
                    n: 15,
                    detail: "baseline 0.6667 → run 0.4667 over 15 paired behaviors; 2 flipped to the bad side, 5 back; exact McNemar p=0.4531 >= alpha 0.05".into(),
                    flipped: Vec::new(),
                }],
            }],
            behaviors: Some(Overlap {
                shared: 15,
                only_a: 2,
                only_b: 3,
            }),
        };
        let line = "15 behaviors shared; 2 only in the baseline and 3 only in the run left out";
        let outputs = [
            GateFormat::Text,
            GateFormat::GithubSummary,
            GateFormat::Json,
            GateFormat::Junit,
        ]
        .map(|f| render_gate(&report, f));
        for o in &outputs[..2] {
            assert!(o.contains(line), "{o}");
        }
        let json: serde_json::Value = serde_json::from_str(&outputs[2]).unwrap();
        assert_eq!(
            json["behaviors"],
            serde_json::json!({
                "paired_by": "behavior id (imports of different prompt sets)",
                "shared": 15,
                "only_baseline": 2,
                "only_run": 3,
            })
        );
        assert!(outputs[3].contains(line), "{}", outputs[3]);
        insta::assert_snapshot!("gate_markdown_of_imports", outputs[1]);
        insta::assert_snapshot!("gate_json_of_imports", outputs[2]);
    }
}
