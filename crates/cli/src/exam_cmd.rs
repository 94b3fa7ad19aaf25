//! `gauntlet exam`: the agent exam (security-triage cascade over a pinned scenario
//! corpus), and with `--mode e2e` the end-to-end pass with its detect-fidelity block.
//! Exit 0 when the run completed, whatever the pass rate; 2 on a corpus or
//! configuration failure (including real mode without its API key), or when a detector
//! failed during the end-to-end pass (the artefacts are still written); 3 when the
//! query budget (`--max-queries`) ran out (partial artefacts, `partial: budget`).
//!
//! Real mode runs on the shared model-call layer: every call is journaled in
//! `<out>/journal.jsonl`, so rerunning the same exam into the same `--out` resumes
//! without repeating a finished call and writes identical artefacts.

use clap::{Args, ValueEnum};
use gauntlet_core::terminal::{safe, safe_text};
use gauntlet_exam::calls::{ExamCalls, SpineOptions};
use gauntlet_exam::cascade::CascadeOptions;
use gauntlet_exam::embedded::{CorpusSource, resolve_corpus};
use gauntlet_exam::exam::{
    Backend, ExamConfig, Progress, exam_identity_bytes, parse_target, run_exam_units,
    write_artifacts,
};
use indicatif::{ProgressBar, ProgressDrawTarget, ProgressStyle};
use std::io::IsTerminal;
use std::path::{Path, PathBuf};
use std::process::ExitCode;
use std::sync::Arc;

#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum Mode {
    /// Replies scripted from each scenario's expected outcome: a pipeline check, not an
    /// accuracy number.
    Golden,
    /// The model(s) named by --target decide.
    Real,
    /// End-to-end (spec §9): the agent passes as usual, plus one pass in which the
    /// reference detector fleet turns each scenario's raw events into findings and the
    /// cascade triages every one of them (per scenario, an isolated store). Reported as
    /// the `detect_fidelity` block, never folded into the agent pass rate. Golden
    /// backend unless --target names a real one (same syntax as real mode).
    E2e,
}

#[derive(Debug, Args)]
pub struct ExamArgs {
    /// An exam described by a YAML file (corpus, mode, passes, consensus, tool_loop,
    /// seed, max_queries, concurrency, out, target, tiers); its identity hash is
    /// recorded in report.json. --out, --concurrency and --max-queries given here
    /// override the file; the other settings come from the file only.
    #[arg(long, value_name = "FILE", conflicts_with_all = ["corpus", "mode", "passes", "consensus", "target", "tool_loop", "seed"])]
    config: Option<PathBuf>,
    /// Scenario corpus directory holding corpus.pin. Default: ./exams/scenarios when it
    /// exists, else the reference corpus embedded in the binary.
    #[arg(long)]
    corpus: Option<PathBuf>,
    #[arg(long, value_enum, default_value = "golden")]
    mode: Mode,
    /// Full corpus passes (the median is reported); N <= 0 means 3.
    #[arg(
        short = 'n',
        long = "passes",
        default_value_t = 3,
        allow_negative_numbers = true
    )]
    passes: i64,
    /// Consensus voters run when a chain resolves (0 disables).
    #[arg(long, default_value_t = gauntlet_exam::cascade::DEFAULT_CONSENSUS)]
    consensus: usize,
    /// Real mode: a target spec (inline YAML such as
    /// `{name: openai_compat, params: {model: m, base_url: 'http://127.0.0.1:8080/v1'}}`)
    /// or a YAML file with a spec, or `{target: SPEC, tiers: {triage|investigate|deep|formatter: SPEC}}`.
    #[arg(long)]
    target: Option<String>,
    /// Output directory for report.json, classifier.json, run-<i>/ and the reports
    /// [default: exam-out].
    #[arg(long)]
    out: Option<PathBuf>,
    /// Scenarios in flight at once [default: 8].
    #[arg(long, value_parser = clap::value_parser!(u32).range(1..=1024))]
    concurrency: Option<u32>,
    /// Request seed of the cascade's calls (consensus voter k sends seed + k); none by
    /// default.
    #[arg(long)]
    seed: Option<u64>,
    /// Golden mode: serve the golden replies over loopback HTTP and reach them through
    /// the `anthropic` target (exercises the wire path).
    #[arg(long)]
    golden_http: bool,
    /// Beyond the original: the investigate tier calls search-events, check-baseline and
    /// search-findings itself through function calling (up to 4 model calls), so the
    /// tools_used and iterations axes measure the model.
    #[arg(long)]
    tool_loop: bool,
    /// End-to-end mode: per-detector, per-scenario time budget (ms).
    #[arg(long, default_value_t = 10_000)]
    detector_timeout_ms: u64,
    /// No per-scenario progress.
    #[arg(long)]
    quiet: bool,
    /// Real mode: at most this many calls reach a model (journal hits are free). When
    /// spent, the exam stops calling, writes a partial report (`partial: budget`;
    /// undecided scenarios listed as not run) and exits 3; rerun with a larger budget
    /// to resume.
    #[arg(long)]
    max_queries: Option<u64>,
    /// Print the planned calls per tier and an upper-bound cost, then exit without
    /// calling any model.
    #[arg(long)]
    estimate: bool,
    /// Price table (JSON, USD per 1M tokens by model name) for the per-tier cost;
    /// default: the bundled one (as `gauntlet run`).
    #[arg(long)]
    price_table: Option<PathBuf>,
    /// Run only shard i of N (0-based) of the scenario runs (pass × scenario), into
    /// <out>.shard-<i>-of-<N>; `gauntlet merge` puts the N shards back together (see
    /// README, "Scaling out"). Not with --mode e2e.
    #[arg(long, value_name = "i/N")]
    shard: Option<gauntlet_engine::shard::Shard>,
}

/// `gauntlet exam-detect --e2e`: an alias of `gauntlet exam --mode e2e` (golden backend,
/// default passes and voters, no progress lines) over `corpus` into `out` — the same
/// code, artefacts and exit codes; the detect exam keeps no end-to-end pipeline of its own.
pub fn e2e_alias(corpus: PathBuf, out: PathBuf, detector_timeout_ms: u64) -> ExitCode {
    exam(ExamArgs {
        config: None,
        corpus: Some(corpus),
        mode: Mode::E2e,
        passes: 3,
        consensus: gauntlet_exam::cascade::DEFAULT_CONSENSUS,
        target: None,
        out: Some(out),
        concurrency: None,
        seed: None,
        golden_http: false,
        tool_loop: false,
        detector_timeout_ms,
        quiet: true,
        max_queries: None,
        estimate: false,
        price_table: None,
        shard: None,
    })
}

pub fn exam(mut a: ExamArgs) -> ExitCode {
    let mut file_targets = None;
    if let Some(p) = &a.config {
        let f = match gauntlet_exam::exam_file::ExamFile::load(p) {
            Ok(f) => f,
            Err(e) => {
                eprintln!("gauntlet exam: {}", safe_text(&e));
                return ExitCode::from(2);
            }
        };
        use gauntlet_exam::exam_file::FileMode;
        a.corpus = f.corpus;
        a.mode = match f.mode {
            Some(FileMode::Real) => Mode::Real,
            Some(FileMode::E2e) => Mode::E2e,
            Some(FileMode::Golden) | None => Mode::Golden,
        };
        a.passes = f.passes.unwrap_or(a.passes);
        a.consensus = f.consensus.unwrap_or(a.consensus);
        a.tool_loop = f.tool_loop.unwrap_or(false);
        a.seed = f.seed;
        a.out = a.out.take().or(f.out);
        a.concurrency = a.concurrency.or(f.concurrency);
        a.max_queries = a.max_queries.or(f.max_queries);
        file_targets = f.targets;
    }
    let mut out_dir = a.out.clone().unwrap_or_else(|| PathBuf::from("exam-out"));
    if let Some(s) = a.shard {
        if a.mode == Mode::E2e {
            eprintln!(
                "gauntlet exam: --shard {s}: the end-to-end mode cannot be sharded yet; run it on one machine (or shard the agent passes: --mode golden|real)"
            );
            return ExitCode::from(2);
        }
        out_dir = crate::exam_shard::shard_out(&out_dir, s);
    }
    let (corpus, source) = match resolve_corpus(a.corpus.as_deref(), Path::new("exams/scenarios")) {
        Ok(c) => c,
        Err(e) => {
            eprintln!("gauntlet exam: corpus: {}", safe_text(&e.to_string()));
            return ExitCode::from(2);
        }
    };
    let real = match a.mode {
        Mode::Real => true,
        Mode::E2e => a.target.is_some() || file_targets.is_some(),
        Mode::Golden => false,
    };
    let backend = match a.mode {
        _ if !real && a.mode == Mode::E2e => Backend::Golden {
            http: a.golden_http,
        },
        Mode::Golden => {
            if a.target.is_some() || file_targets.is_some() {
                eprintln!("gauntlet exam: the target is ignored in golden mode");
            }
            Backend::Golden {
                http: a.golden_http,
            }
        }
        Mode::Real | Mode::E2e if file_targets.is_some() => {
            let (models, label) = file_targets.take().expect("checked");
            Backend::Real { models, label }
        }
        Mode::Real | Mode::E2e => {
            let Some(t) = &a.target else {
                if let Some(p) = &a.config {
                    eprintln!(
                        "gauntlet exam: {}: real mode needs `target: SPEC` (e.g. `target: {{name: openai_compat, params: {{model: M, base_url: 'http://127.0.0.1:8080/v1'}}}}`)",
                        safe_text(&p.display().to_string())
                    );
                    return ExitCode::from(2);
                }
                eprintln!(
                    "gauntlet exam: real mode needs --target (e.g. --target \"{{name: openai_compat, params: {{model: M, base_url: 'http://127.0.0.1:8080/v1'}}}}\"; the API key is read from the variable named by api_key_env, default OPENAI_API_KEY / ANTHROPIC_API_KEY)"
                );
                return ExitCode::from(2);
            };
            match parse_target(t) {
                Ok((models, label)) => Backend::Real { models, label },
                Err(e) => {
                    eprintln!("gauntlet exam: real mode: {}", safe_text(&e.to_string()));
                    return ExitCode::from(2);
                }
            }
        }
    };
    let prices = match &a.price_table {
        Some(p) => match gauntlet_calls::price::PriceTable::load(p) {
            Ok(t) => t,
            Err(e) => {
                eprintln!("gauntlet exam: {}", safe_text(&e));
                return ExitCode::from(2);
            }
        },
        None => gauntlet_calls::price::PriceTable::bundled(),
    };
    let mut cfg = ExamConfig {
        backend,
        passes: a.passes,
        cascade: CascadeOptions {
            consensus: a.consensus,
            tool_loop: a.tool_loop,
            seed: a.seed,
            ..CascadeOptions::default()
        },
        concurrency: a.concurrency.unwrap_or(8) as usize,
        golden_fault: None,
        e2e: a.mode == Mode::E2e,
        detector_timeout: std::time::Duration::from_millis(a.detector_timeout_ms.max(1)),
        from_file: a.config.is_some(),
        calls: None,
    };
    if a.estimate {
        return print_estimate(&corpus, &cfg, &prices, a.max_queries);
    }
    let src = match &source {
        CorpusSource::Explicit(d) | CorpusSource::Disk(d) => d.display().to_string(),
        CorpusSource::Embedded => "embedded reference corpus".to_string(),
    };
    eprintln!(
        "gauntlet exam: {} mode{}, {} scenarios from {src} (count {}, sha256 {}), {} pass(es)",
        cfg.mode(),
        if cfg.e2e {
            if real {
                " (real backend)"
            } else {
                " (golden backend)"
            }
        } else {
            ""
        },
        corpus.scenarios.len(),
        corpus.count,
        corpus.digest,
        gauntlet_exam::grade::effective_passes(a.passes)
    );
    if let Backend::Real { .. } = &cfg.backend {
        let opts = SpineOptions {
            dir: out_dir.clone(),
            max_queries: a.max_queries,
            prices,
        };
        let mut notes = Vec::new();
        match ExamCalls::open(&opts, &exam_identity_bytes(&corpus, &cfg), &mut notes) {
            Ok(c) => cfg.calls = Some(Arc::new(c)),
            Err(e) => {
                eprintln!("gauntlet exam: {}", safe_text(&e));
                return ExitCode::from(2);
            }
        }
        for n in notes {
            eprintln!("gauntlet exam: {}", safe_text(&n));
        }
    } else if a.max_queries.is_some() {
        eprintln!("gauntlet exam: --max-queries is ignored in golden mode (nothing is paid)");
    }
    let progress = (!a.quiet).then(|| {
        progress_fn(gauntlet_exam::grade::effective_passes(a.passes) * corpus.scenarios.len())
    });
    let rt = match tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
    {
        Ok(rt) => rt,
        Err(e) => {
            eprintln!("gauntlet exam: cannot start the runtime: {e}");
            return ExitCode::from(1);
        }
    };
    let passes = gauntlet_exam::grade::effective_passes(a.passes);
    let owned = a
        .shard
        .map(|s| crate::exam_shard::owned(&corpus, passes, s));
    if a.shard.is_some()
        && let Err(e) =
            std::fs::create_dir_all(&out_dir).and_then(|()| crate::exam_shard::begin(&out_dir))
    {
        eprintln!(
            "gauntlet exam: {}: {e}",
            safe_text(&out_dir.display().to_string())
        );
        return ExitCode::from(1);
    }
    let out = match rt.block_on(run_exam_units(
        &corpus,
        &cfg,
        progress.as_ref().map(|(f, _)| f.clone()),
        owned.as_deref(),
    )) {
        Ok(o) => o,
        Err(e) => {
            eprintln!("gauntlet exam: {}", safe_text(&e.to_string()));
            return ExitCode::from(2);
        }
    };
    if let Some((_, bar)) = &progress
        && let Some(b) = bar
    {
        b.finish_and_clear();
    }
    if let Err(e) = write_artifacts(&out_dir, &out) {
        eprintln!(
            "gauntlet exam: {}",
            safe_text(&format!(
                "{e}; {} was not replaced",
                out_dir.join("report.json").display()
            ))
        );
        return ExitCode::from(1);
    }
    if let (Some(s), Some(owned)) = (a.shard, &owned)
        && out.report.partial.is_none()
        && let Err(e) =
            crate::exam_shard::finish(&out_dir, s, owned, (&corpus, passes), &out.report, &cfg)
    {
        eprintln!("gauntlet exam: {}", safe_text(&e.to_string()));
        return ExitCode::from(1);
    }
    eprintln!(
        "gauntlet exam: finished in {:.2} s (per-scenario wall times in {})",
        out.timings.total_millis as f64 / 1000.0,
        out_dir.join("timings.json").display()
    );
    if let Some(s) = &out.session
        && let Err(e) = s.log(&out_dir)
    {
        eprintln!(
            "gauntlet exam: cannot append to {}: {e}",
            out_dir.join(gauntlet_exam::calls::SESSIONS).display()
        );
    }
    let r = &out.report;
    if let Some(e) = &out.e2e {
        print_fidelity(&e.fidelity, r);
    }
    let ci = |i: Option<gauntlet_exam::grade::Interval>| {
        i.map(|i| format!(" (95% {:.1}%–{:.1}%)", i.low * 100.0, i.high * 100.0))
            .unwrap_or_default()
    };
    let rate = |x: Option<f64>, key: &str| gauntlet_exam::exam::pct_or_na(x, &r.na_reasons, key);
    println!("{}", r.note);
    if out.e2e.is_some() {
        println!("AGENT EXAM (hand-written findings; the fidelity block above is not part of it)");
    }
    println!(
        "decided by            {}",
        gauntlet_exam::exam::decided_line(r)
    );
    println!(
        "median pass rate      {}{}",
        rate(r.median_pass_rate, "median_pass_rate"),
        ci(r.pass_rate_ci95)
    );
    println!(
        "median recall         {}{}",
        rate(r.median_recall_rate, "median_recall_rate"),
        ci(r.recall_ci95)
    );
    println!(
        "median precision      {}{}",
        rate(r.median_precision_rate, "median_precision_rate"),
        ci(r.precision_ci95)
    );
    println!(
        "pass^{}                {}/{}",
        r.pass_all_runs.passes, r.pass_all_runs.scenarios, r.pass_all_runs.total
    );
    println!("runs within 8 pp band {}", r.runs_within_band);
    println!(
        "model calls           {} ({} errors)",
        r.model_calls, r.model_errors
    );
    if let Some(s) = &out.session {
        let retries: u64 = s.transport.iter().map(|(_, t)| t.retries()).sum();
        let requests: u64 = s.transport.iter().map(|(_, t)| t.attempts).sum();
        println!(
            "this session          {} call(s) made, {} journal hit(s), {} failed; {} HTTP request(s), {} retr{}",
            s.model_calls,
            s.cache_hits,
            s.failed_calls,
            requests,
            retries,
            if retries == 1 { "y" } else { "ies" }
        );
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
            println!("{}", safe(&line));
        }
        println!(
            "{}",
            safe(&format!(
                "cost                  {} (price table {})",
                usd(u.cost_usd, u.cost_na_reason.as_deref()),
                u.price_table
            ))
        );
    }
    let bins: Vec<String> = r
        .classifier
        .counts
        .iter()
        .map(|(b, n)| format!("{b} {n}"))
        .collect();
    println!("classifier (worst)    {}", bins.join(", "));
    println!("artefacts             {}", out_dir.display());
    if let Some(e) = &out.e2e
        && e.fidelity.detector_error > 0
    {
        eprintln!(
            "gauntlet exam: {} scenario(s) had detector failures in the end-to-end pass (DETECTOR-ERROR rows; see e2e/<id>.json)",
            e.fidelity.detector_error
        );
        return ExitCode::from(2);
    }
    if r.partial.as_deref() == Some("budget") {
        eprintln!(
            "gauntlet exam: the query budget (--max-queries) is spent: the report is partial ({} scenario run(s) not run{}); raise --max-queries and rerun into {} to resume",
            r.not_run.len(),
            if r.e2e_not_run.is_some() {
                ", end-to-end pass not run"
            } else {
                ""
            },
            out_dir.display()
        );
        return ExitCode::from(3);
    }
    ExitCode::SUCCESS
}

fn usd(v: Option<f64>, why: Option<&str>) -> String {
    match v {
        Some(c) => format!("${c:.6}"),
        None => format!("N/A ({})", why.unwrap_or("unknown")),
    }
}

/// `gauntlet exam --estimate`: planned calls per tier and an upper-bound cost; no call.
fn print_estimate(
    corpus: &gauntlet_exam::Corpus,
    cfg: &ExamConfig,
    prices: &gauntlet_calls::price::PriceTable,
    max_queries: Option<u64>,
) -> ExitCode {
    let passes = gauntlet_exam::grade::effective_passes(cfg.passes);
    let models = match &cfg.backend {
        Backend::Real { models, .. } => Some(models),
        Backend::Golden { .. } => None,
    };
    let rows = gauntlet_exam::calls::estimate(corpus, &cfg.cascade, passes, models, prices);
    println!(
        "exam estimate: {} mode, {} scenarios, {passes} pass(es), consensus {}{}",
        cfg.mode(),
        corpus.scenarios.len(),
        cfg.cascade.consensus,
        if cfg.cascade.tool_loop {
            format!(", tool loop of up to {} calls", cfg.cascade.max_tool_rounds)
        } else {
            String::new()
        }
    );
    println!("price table {}", prices.describe());
    let totals = crate::print_estimate_rows(rows.iter().map(|r| crate::EstimateRow {
        role: r.tier.name(),
        model: &r.model,
        calls: r.calls,
        max_input_tokens: r.max_input_tokens,
        max_output_tokens: r.max_output_tokens,
        max_cost: &r.max_cost,
    }));
    crate::print_estimate_totals(
        totals,
        max_queries.map(|m| (m, "--max-queries", "exam")),
        "tier",
    );
    println!(
        "(bounds: passes × scenarios not floor-routed × (1 + consensus voters) × the most calls one cascade pass makes per tier; each call at most {} tokens out and at most its prompt/3 + {} + earlier replies in{})",
        gauntlet_exam::cascade::MAX_TOKENS,
        gauntlet_calls::price::INPUT_ALLOWANCE,
        if cfg.e2e {
            "; the end-to-end pass is not included (its findings are not known before detection)"
        } else {
            ""
        }
    );
    ExitCode::SUCCESS
}

/// The end-to-end block, printed first: it is the headline of an e2e run.
fn print_fidelity(
    f: &gauntlet_exam::detectors::e2e::DetectFidelity,
    r: &gauntlet_exam::exam::HarnessReport,
) {
    use gauntlet_exam::detectors::e2e::Fidelity;
    println!(
        "================ DETECT FIDELITY (end-to-end, {} backend) ================",
        r.backend
    );
    println!("{}", gauntlet_exam::exam::E2E_NOTE);
    if r.backend.starts_with("golden") {
        println!(
            "Golden backend: the cascade's replies are scripted, so the pass figures check the pipeline; they are not an accuracy figure."
        );
    }
    for (k, v) in gauntlet_exam::exam::fidelity_rows(r) {
        println!("  {k:<22}{v}");
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
        println!("{}", safe(&line));
    }
    println!("===========================================================================");
}

type Bar = Option<ProgressBar>;

fn progress_fn(total: usize) -> (gauntlet_exam::exam::ProgressFn, Bar) {
    if std::io::stderr().is_terminal() {
        let bar = ProgressBar::with_draw_target(
            Some(total as u64),
            ProgressDrawTarget::stderr_with_hz(8),
        );
        bar.set_style(
            ProgressStyle::with_template("{bar:30} {pos}/{len} scenarios  {msg}")
                .expect("static template"),
        );
        let b = bar.clone();
        let f = Arc::new(move |p: &Progress<'_>| {
            b.inc(1);
            b.set_message(format!(
                "pass {}/{} {} {}",
                p.pass + 1,
                p.passes,
                safe(p.scenario_id),
                if p.pass_ok { "PASS" } else { "FAIL" }
            ));
        });
        (f, Some(bar))
    } else {
        let f = Arc::new(|p: &Progress<'_>| {
            let line = format!(
                "[pass {}/{}] {:>4}/{} {} -> {} (expected {}, {} call(s)) {}",
                p.pass + 1,
                p.passes,
                p.done,
                p.total,
                p.scenario_id,
                p.terminal_action,
                p.expected_action,
                p.model_calls,
                if p.pass_ok { "PASS" } else { "FAIL" }
            );
            eprintln!("{}", safe(&line));
        });
        (f, None)
    }
}
