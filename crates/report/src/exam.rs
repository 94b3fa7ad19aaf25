//! An agent exam's human reports: its `report.json` ([`HarnessReport`]) as a [`Page`]
//! rendered to report.md and report.html (the run report's stylesheet, CSP and
//! escaping), and the summary rows the CLI prints. The exam writes its report.md and
//! report.html with these, and the dashboard renders an exam's report page with them.

use crate::page::{Block, Page};
use gauntlet_results::exam::{E2E_NOTE, HarnessReport, Interval};
use gauntlet_results::loose::Loose;

fn pct(x: f64) -> String {
    format!("{:.1}%", x * 100.0)
}

fn ci(i: Option<Interval>) -> String {
    i.map(|i| format!("{}–{}", pct(i.low), pct(i.high)))
        .unwrap_or_else(|| "n/a".into())
}

/// A rate as a percentage, or `N/A (reason)`.
pub fn pct_or_na(
    x: Option<f64>,
    reasons: &std::collections::BTreeMap<String, String>,
    key: &str,
) -> String {
    match x {
        Some(x) => pct(x),
        None => format!(
            "N/A ({})",
            reasons
                .get(key)
                .map(String::as_str)
                .unwrap_or("no population")
        ),
    }
}

/// A median rate with its Wilson interval, or `N/A (reason)`.
fn rate_cell(r: &HarnessReport, x: Option<f64>, key: &str, i: Option<Interval>) -> String {
    match x {
        Some(_) => format!(
            "{} (Wilson 95% {})",
            pct_or_na(x, &r.na_reasons, key),
            ci(i)
        ),
        None => pct_or_na(x, &r.na_reasons, key),
    }
}

/// The decided-by line shared by every report: what the rates are over.
pub fn decided_line(r: &HarnessReport) -> String {
    let d = &r.decided_by;
    format!(
        "model {} · floor {} · fail-safe {} (rates are over the model's decisions only. floor: escalated by the harness's rule with zero model calls; fail-safe: a model call failed or its reply was unparseable, e.g. a copy of the prompt's template, and the cascade escalated by default; both excluded from every rate)",
        d.model, d.floor, d.fail_safe
    )
}

/// Rows of the summary tables, shared by the Markdown and HTML writers.
fn summary_rows(r: &HarnessReport) -> Vec<(String, String)> {
    let mut rows = Vec::new();
    if let Some(p) = &r.partial {
        let ids: Vec<String> = r
            .not_run
            .iter()
            .map(|x| format!("{} (pass {})", x.scenario_id, x.pass))
            .collect();
        rows.push((
            "status".into(),
            format!(
                "PARTIAL ({p}): {} scenario run(s) not run, in no count or rate: {}",
                r.not_run.len(),
                ids.join(", ")
            ),
        ));
        if let Some(why) = &r.e2e_not_run {
            rows.push(("end-to-end pass".into(), format!("NOT RUN: {why}")));
        }
    }
    rows.extend(base_rows(r));
    for w in &r.warnings {
        rows.push((
            format!("⚠ warning: {}", w.kind),
            format!(
                "{} (evidence: {}; threshold: {})",
                w.message, w.evidence, w.threshold
            ),
        ));
    }
    if let Some(u) = &r.usage {
        let usd = |v: Option<f64>, why: &Option<String>| match v {
            Some(c) => format!("${c:.6}"),
            None => format!("N/A ({})", why.as_deref().unwrap_or("unknown")),
        };
        for t in &u.tiers {
            rows.push((
                format!(
                    "usage: {} (this session's replies, journal hits included, failed calls not)",
                    t.tier.name()
                ),
                format!(
                    "{}: {} call(s), {} in + {} out tokens, cost {}",
                    t.model,
                    t.calls,
                    t.input_tokens,
                    t.output_tokens,
                    usd(t.cost_usd, &t.cost_na_reason)
                ),
            ));
        }
        rows.push((
            "cost".into(),
            format!(
                "{} (price table {})",
                usd(u.cost_usd, &u.cost_na_reason),
                u.price_table
            ),
        ));
    }
    rows
}

fn base_rows(r: &HarnessReport) -> Vec<(String, String)> {
    vec![
        ("mode".into(), format!("{} ({})", r.mode, r.backend)),
        (
            "corpus".into(),
            format!("{} scenarios, sha256 {}", r.corpus_count, r.corpus_sha256),
        ),
        ("passes".into(), r.runs.len().to_string()),
        ("scenario runs decided by".into(), decided_line(r)),
        (
            "median pass rate".into(),
            rate_cell(r, r.median_pass_rate, "median_pass_rate", r.pass_rate_ci95),
        ),
        (
            "median recall (attacks escalated)".into(),
            rate_cell(r, r.median_recall_rate, "median_recall_rate", r.recall_ci95),
        ),
        (
            "median precision (benign resolved)".into(),
            rate_cell(
                r,
                r.median_precision_rate,
                "median_precision_rate",
                r.precision_ci95,
            ),
        ),
        (
            format!("pass^{} (passed every pass)", r.pass_all_runs.passes),
            format!(
                "{}/{} ({})",
                r.pass_all_runs.scenarios,
                r.pass_all_runs.total,
                r.pass_all_runs
                    .rate
                    .map(pct)
                    .unwrap_or_else(|| "N/A: no scenario was graded in every pass".into())
            ),
        ),
        (
            "runs within 8 pp band".into(),
            r.runs_within_band.to_string(),
        ),
        ("consensus voters".into(), r.consensus.to_string()),
        ("model-driven tool loop".into(), r.tool_loop.to_string()),
        (
            "model calls in the scenario runs reported (errors)".into(),
            format!("{} ({})", r.model_calls, r.model_errors),
        ),
    ]
}

/// Rows of the end-to-end `detect_fidelity` summary (empty outside e2e mode).
pub fn fidelity_rows(r: &HarnessReport) -> Vec<(String, String)> {
    let Some(f) = r.fidelity() else {
        return Vec::new();
    };
    let n = |x: &Loose<u64>| x.get().copied().unwrap_or(0);
    let rate = |x: &Loose<f64>, name: &str| match x.get() {
        Some(x) => pct(*x),
        None => format!("N/A ({})", f.na_reason(name).unwrap_or("no denominator")),
    };
    vec![
        (
            "scenarios".into(),
            format!(
                "{} (REPRODUCED {}, MISMATCH {}, DETECT-MISS {}, DETECTOR-ERROR {})",
                n(&f.total),
                n(&f.reproduced),
                n(&f.mismatch),
                n(&f.detect_miss),
                n(&f.detector_error)
            ),
        ),
        (
            "reproduction rate".into(),
            rate(&f.reproduction_rate, "reproduction_rate"),
        ),
        (
            "end-to-end pass rate".into(),
            rate(&f.end_to_end_pass_rate, "end_to_end_pass_rate"),
        ),
        ("e2e recall".into(), rate(&f.e2e_recall, "e2e_recall")),
        (
            "e2e precision".into(),
            rate(&f.e2e_precision, "e2e_precision"),
        ),
        ("ungraded rows".into(), n(&f.ungraded).to_string()),
    ]
}

/// The worst pass's failed scenario runs: scenario, expected, terminal and the
/// classifier's bin.
fn failures(r: &HarnessReport) -> Vec<[String; 4]> {
    let Some(w) = gauntlet_results::exam::worst_run(&r.runs) else {
        return vec![];
    };
    w.results
        .failed()
        .into_iter()
        .map(|[id, expected, terminal]| {
            let bin = r
                .classifier
                .per_scenario
                .get(&id)
                .cloned()
                .unwrap_or_default();
            [id, expected, terminal, bin]
        })
        .collect()
}

/// The report as a [`Page`]: the one renderer (stylesheet, CSP,
/// escaping) behind report.md and report.html, shared with the run report.
pub fn report_page(r: &HarnessReport) -> Page {
    let mut blocks = vec![Block::Note(r.note.clone())];
    let fr = fidelity_rows(r);
    if !fr.is_empty() {
        blocks.push(Block::Heading("Detect fidelity (end-to-end)".into()));
        blocks.push(Block::Note(E2E_NOTE.into()));
        blocks.push(Block::Fields(fr));
        blocks.push(Block::Heading("Agent exam (hand-written findings)".into()));
    }
    blocks.push(Block::Fields(summary_rows(r)));
    blocks.push(Block::Heading("Passes".into()));
    let header = [
        "pass",
        "passed / graded",
        "floor (excluded)",
        "fail-safe (excluded)",
        "pass rate",
        "recall",
        "precision",
    ];
    let rows = r
        .runs
        .iter()
        .map(|run| {
            let na = |x, key| pct_or_na(x, &run.na_reasons, key);
            vec![
                run.index.to_string(),
                format!("{}/{}", run.passed, run.graded),
                run.floor.to_string(),
                run.fail_safe.to_string(),
                na(run.pass_rate, "pass_rate"),
                format!(
                    "{}/{} ({})",
                    run.attacks_passed,
                    run.attacks,
                    na(run.recall_rate, "recall_rate")
                ),
                format!(
                    "{}/{} ({})",
                    run.benigns_passed,
                    run.benigns,
                    na(run.precision_rate, "precision_rate")
                ),
            ]
        })
        .collect();
    blocks.push(Block::Table {
        header: header.map(String::from).to_vec(),
        rows,
    });
    // Pass rate per pass over the noise band; a pass whose rate is N/A (every scenario
    // decided by the fail-safe) has no dot.
    blocks.push(Block::PassBand {
        title: "Pass rate per pass, with the noise band".into(),
        pass_rates: r
            .runs
            .iter()
            .map(|run| run.pass_rate.unwrap_or(f64::NAN))
            .collect(),
        band_pp: r.noise_band_pp,
        median_ci: r.pass_rate_ci95.map(|i| (i.low, i.high)),
    });
    blocks.push(Block::Heading("Classifier (worst pass)".into()));
    blocks.push(Block::Table {
        header: vec!["bin".into(), "scenarios".into()],
        rows: r
            .classifier
            .counts
            .iter()
            .map(|(b, n)| vec![b.clone(), n.to_string()])
            .collect(),
    });
    let f = failures(r);
    if !f.is_empty() {
        blocks.push(Block::Heading("Failures (worst pass)".into()));
        blocks.push(Block::Table {
            header: ["scenario", "expected", "terminal", "bin"]
                .map(String::from)
                .to_vec(),
            rows: f.into_iter().map(|row| row.to_vec()).collect(),
        });
    }
    Page {
        title: "Agent exam report".into(),
        partial: r.partial.as_ref().map(|p| {
            format!(
                "PARTIAL EXAM ({p}): {} scenario run(s) not run. The numbers below cover only the scenario runs that finished and are not comparable with a complete exam.",
                r.not_run.len()
            )
        }),
        blocks,
    }
}

/// report.md: [`report_page`] rendered as Markdown.
pub fn render_markdown(r: &HarnessReport) -> String {
    crate::page::render_page_markdown(&report_page(r))
}

/// report.html: [`report_page`] rendered as HTML (the run report's stylesheet,
/// Content-Security-Policy and escaping).
pub fn render_html(r: &HarnessReport) -> String {
    crate::page::render_page_html(&report_page(r))
}
