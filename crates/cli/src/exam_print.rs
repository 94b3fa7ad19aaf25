//! What `gauntlet exam` prints: the line that says what is about to run, the estimate
//! table, the detect-fidelity block and the summary. Corpus data (scenario ids,
//! expectations) and model names are escaped.

use crate::error::CliError;
use gauntlet_core::terminal::safe;
use gauntlet_corpus::embedded::CorpusSource;
use gauntlet_exam::e2e::{DetectFidelity, Fidelity};
use gauntlet_exam::exam::{Backend, ExamOutput};
use gauntlet_exam::settings::ExamSettings;
use gauntlet_results::exam::{HarnessReport, Interval};
use std::path::Path;

/// `golden mode, 48 scenarios from exams/scenarios (count 48, sha256 …), 3 pass(es)`.
pub(crate) fn header(s: &ExamSettings) -> String {
    let src = match &s.source {
        CorpusSource::Explicit(d) | CorpusSource::Disk(d) => d.display().to_string(),
        CorpusSource::Embedded => "embedded reference corpus".to_string(),
    };
    let cfg = &s.config;
    format!(
        "{} mode{}, {} scenarios from {src} (count {}, sha256 {}), {} pass(es)",
        cfg.mode(),
        match (cfg.e2e, s.is_real()) {
            (false, _) => "",
            (true, true) => " (real backend)",
            (true, false) => " (golden backend)",
        },
        s.corpus.scenarios.len(),
        s.corpus.count,
        s.corpus.digest,
        s.passes()
    )
}

/// `gauntlet exam --estimate`: planned calls per tier and an upper-bound cost; no call.
pub(crate) fn estimate(s: &ExamSettings) -> Result<(), CliError> {
    let (cfg, prices, passes) = (&s.config, &s.prices, s.passes());
    let models = match &cfg.backend {
        Backend::Real { models, .. } => Some(models),
        Backend::Golden { .. } => None,
    };
    let rows = gauntlet_exam::calls::estimate(&s.corpus, &cfg.cascade, passes, models, prices);
    outln!(
        "exam estimate: {} mode, {} scenarios, {passes} pass(es), consensus {}{}",
        cfg.mode(),
        s.corpus.scenarios.len(),
        cfg.cascade.consensus,
        if cfg.cascade.tool_loop {
            format!(", tool loop of up to {} calls", cfg.cascade.max_tool_rounds)
        } else {
            String::new()
        }
    )?;
    outln!("price table {}", prices.describe())?;
    let totals = crate::print::estimate_rows(rows.iter().map(|r| crate::print::EstimateRow {
        role: r.tier.name(),
        model: &r.model,
        calls: r.calls,
        max_input_tokens: r.max_input_tokens,
        max_output_tokens: r.max_output_tokens,
        max_cost: &r.max_cost,
    }))?;
    crate::print::estimate_totals(
        totals,
        s.max_queries.map(|m| (m, "--max-queries", "exam")),
        "tier",
    )?;
    outln!(
        "(bounds: passes × scenarios not floor-routed × (1 + consensus voters) × the most calls one cascade pass makes per tier; each call at most its target's max_tokens out (default {}) and at most its prompt/3 + {} + earlier replies in{})",
        gauntlet_exam::cascade::MAX_TOKENS,
        gauntlet_calls::price::INPUT_ALLOWANCE,
        if cfg.e2e {
            "; the end-to-end pass is not included (its findings are not known before detection)"
        } else {
            ""
        }
    )?;
    Ok(())
}

/// The summary on stdout: the detect-fidelity block first when there is one (it is the
/// headline of an end-to-end exam), then the agent exam's figures.
pub(crate) fn summary(out: &ExamOutput, out_dir: &Path) -> Result<(), CliError> {
    let r = &out.report;
    if let Some(e) = &out.e2e {
        fidelity(&e.fidelity, r)?;
    }
    let ci = |i: Option<Interval>| {
        i.map(|i| format!(" (95% {:.1}%–{:.1}%)", i.low * 100.0, i.high * 100.0))
            .unwrap_or_default()
    };
    let rate = |x: Option<f64>, key: &str| gauntlet_report::exam::pct_or_na(x, &r.na_reasons, key);
    outln!("{}", r.note)?;
    if out.e2e.is_some() {
        outln!("AGENT EXAM (hand-written findings; the fidelity block above is not part of it)")?;
    }
    outln!(
        "decided by            {}",
        gauntlet_report::exam::decided_line(r)
    )?;
    outln!(
        "median pass rate      {}{}",
        rate(r.median_pass_rate, "median_pass_rate"),
        ci(r.pass_rate_ci95)
    )?;
    outln!(
        "median recall         {}{}",
        rate(r.median_recall_rate, "median_recall_rate"),
        ci(r.recall_ci95)
    )?;
    outln!(
        "median precision      {}{}",
        rate(r.median_precision_rate, "median_precision_rate"),
        ci(r.precision_ci95)
    )?;
    outln!(
        "pass^{}                {}/{}",
        r.pass_all_runs.passes,
        r.pass_all_runs.scenarios,
        r.pass_all_runs.total
    )?;
    outln!("runs within 8 pp band {}", r.runs_within_band)?;
    // Three counts, each named for what it counts: the report's (the scenario runs it
    // covers), this session's (calls made + journal hits, whatever run they belong to)
    // and, when a partial exam leaves them apart, the difference (calls of scenario runs
    // not run: journaled, so the rerun replays them).
    outln!(
        "model calls           {} in the scenario runs reported ({} errors)",
        r.model_calls,
        r.model_errors
    )?;
    if let Some(s) = &out.session {
        let retries: u64 = s.transport.iter().map(|(_, t)| t.retries()).sum();
        let requests: u64 = s.transport.iter().map(|(_, t)| t.attempts).sum();
        let all = s.model_calls + s.cache_hits;
        outln!(
            "this session          {all} call(s): {} made, {} journal hit(s) ({} failed); {} HTTP request(s), {} retr{}",
            s.model_calls,
            s.cache_hits,
            s.failed_calls,
            requests,
            retries,
            if retries == 1 { "y" } else { "ies" }
        )?;
        if r.partial.is_some() && all > r.model_calls as u64 {
            outln!(
                "                      {} of this session's calls belong to scenario runs not run (journaled: the rerun replays them)",
                all - r.model_calls as u64
            )?;
        }
    }
    if r.usage.is_some() {
        outln!(
            "usage below: this session's replies per tier (journal hits included, failed calls not)"
        )?;
    }
    if let Some(u) = &r.usage {
        for t in &u.tiers {
            let line = format!(
                "usage {:<15} {} call(s), {} in + {} out tokens, cost {}",
                t.tier.name(),
                t.calls,
                t.input_tokens,
                t.output_tokens,
                usd(t.cost_usd, t.cost_na_reason.as_deref())
            );
            outln!("{}", safe(&line))?;
        }
        outln!(
            "{}",
            safe(&format!(
                "cost                  {} (price table {})",
                usd(u.cost_usd, u.cost_na_reason.as_deref()),
                u.price_table
            ))
        )?;
    }
    let bins: Vec<String> = r
        .classifier
        .counts
        .iter()
        .map(|(b, n)| format!("{b} {n}"))
        .collect();
    outln!("classifier (worst)    {}", bins.join(", "))?;
    for w in &r.warnings {
        outln!(
            "{}",
            safe(&format!(
                "⚠ warning {}: {} ({})",
                w.kind, w.message, w.evidence
            ))
        )?;
    }
    outln!("artefacts             {}", out_dir.display())?;
    Ok(())
}

fn usd(v: Option<f64>, why: Option<&str>) -> String {
    match v {
        Some(c) => format!("${c:.6}"),
        None => format!("N/A ({})", why.unwrap_or("unknown")),
    }
}

/// The end-to-end block: the fidelity figures, then every row that did not reproduce
/// and pass.
fn fidelity(f: &DetectFidelity, r: &HarnessReport) -> Result<(), CliError> {
    outln!(
        "================ DETECT FIDELITY (end-to-end, {} backend) ================",
        r.backend
    )?;
    outln!("{}", gauntlet_results::exam::E2E_NOTE)?;
    if r.backend.starts_with("golden") {
        outln!(
            "Golden backend: the cascade's replies are scripted, so the pass figures check the pipeline; they are not an accuracy figure."
        )?;
    }
    for (k, v) in gauntlet_report::exam::fidelity_rows(r) {
        outln!("  {k:<22}{v}")?;
    }
    for row in f
        .rows
        .iter()
        .filter(|x| x.passed != Some(true) || x.fidelity != Fidelity::Reproduced)
    {
        let outcome = match row.passed {
            Some(true) => "pass",
            Some(false) => "FAIL",
            None => "n/a",
        };
        // Ids and expectations are corpus data: escaped.
        let line = format!(
            "  {:<14} {:<4} {}  expected {} on {} ({}), {} finding(s){}",
            row.fidelity.label(),
            outcome,
            row.id,
            row.expected_family,
            row.expected_actor,
            row.expected_chain_action,
            row.findings,
            row.ungraded
                .as_ref()
                .map(|w| format!(" — ungraded: {w}"))
                .unwrap_or_default()
        );
        outln!("{}", safe(&line))?;
    }
    outln!("===========================================================================")?;
    Ok(())
}
