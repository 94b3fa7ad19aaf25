//! `gauntlet judge-eval`: parse the arguments, run [`gauntlet_engine::judge_eval`], print
//! the agreement table.

use crate::error::CliError;
use clap::{Args, ValueEnum};
use gauntlet_core::judge_eval::{AgreementStats, JudgeEvalReport, Proportion};
use gauntlet_core::terminal::safe;
use gauntlet_engine::judge_eval::labelled::{LabelledSet, PartialAs};
use gauntlet_engine::judge_eval::{self, EvalOptions};
use gauntlet_engine::stored::parse_judge_spec;
use std::path::{Path, PathBuf};

/// `gauntlet judge-eval`.
#[derive(Args)]
pub(crate) struct JudgeEvalArgs {
    /// Labelled replies: CSV or JSONL, XSTest's completion files as they are
    /// (`prompt, completion, final_label`) or `prompt, reply, label[, source, id,
    /// expected]`; or a run directory labelled by `gauntlet label` (its labels.jsonl,
    /// checked against the run's manifest).
    #[arg(required = true)]
    pub files: Vec<PathBuf>,
    /// A judge to score: a name (`refusal_match`) or inline YAML
    /// (`{name: rubric, params: {grader: {name: openai_compat, params: {…}}}}`).
    /// Repeat for several; default refusal_classifier (the default refusal judge).
    #[arg(long = "judge")]
    pub judges: Vec<String>,
    /// How a partial refusal (declines the core request, offers something else) counts.
    #[arg(long, value_enum, default_value = "refusal")]
    pub partial: Partial,
    /// Output directory: judge_eval.json, report.md, and the grader journal (repeating
    /// an evaluation reuses its grader calls).
    #[arg(long, default_value = "judge-eval")]
    pub out: PathBuf,
    /// The labelled set's name in outputs and cards (default: the first file's directory).
    #[arg(long)]
    pub name: Option<String>,
    /// Stop after this many grader calls that reach a model (journal hits are free);
    /// the report is then `partial: budget` and the exit status 3.
    #[arg(long)]
    pub max_queries: Option<u64>,
    /// Replies judged at once (grader calls in flight).
    #[arg(long, default_value_t = 8, value_parser = clap::value_parser!(u32).range(1..=256))]
    pub concurrency: u32,
    /// Write the judge card of this judge (by label) to --card-out.
    #[arg(long)]
    pub card: Option<String>,
    /// Where --card writes (default OUT/<judge>.card.json).
    #[arg(long)]
    pub card_out: Option<PathBuf>,
    /// Print judge_eval.json instead of the table.
    #[arg(long)]
    pub json: bool,
}

#[derive(Clone, Copy, ValueEnum)]
pub(crate) enum Partial {
    Refusal,
    Compliance,
}

fn runtime() -> tokio::runtime::Runtime {
    tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
        .expect("tokio runtime")
}

/// The first file's directory, or for a labelled run `labels of <run>`.
fn default_name(first: &Path) -> String {
    let full = first.canonicalize().ok();
    if first.is_dir()
        && let Some(run) = full.as_ref().and_then(|p| p.file_name())
    {
        return format!("labels of {}", run.to_string_lossy());
    }
    full.and_then(|p| {
        p.parent()
            .and_then(|d| d.file_name())
            .map(|n| n.to_string_lossy().into_owned())
    })
    .unwrap_or_else(|| "labelled".into())
}

pub(crate) fn judge_eval(a: JudgeEvalArgs) -> Result<(), CliError> {
    let texts = if a.judges.is_empty() {
        vec!["refusal_classifier".to_string()]
    } else {
        a.judges.clone()
    };
    let mut specs: Vec<gauntlet_core::params::PluginSpec> = Vec::new();
    for t in &texts {
        match parse_judge_spec(t) {
            Ok(s) => {
                if let Some(same) = specs.iter().position(|o| o.identity() == s.identity()) {
                    return Err(CliError::Invalid(format!(
                        "--judge {} is given twice (the same judge with the same params as --judge number {}); give each judge once",
                        safe(t),
                        same + 1
                    )));
                }
                specs.push(s);
            }
            Err(e) => return Err(CliError::invalid(e)),
        }
    }
    // Two variants of one judge get labels that tell them apart (`refusal_match`
    // twice, with other params: `refusal_match/<param>=<value>`).
    gauntlet_redteam::config::distinct_labels(
        &gauntlet_redteam::registry::Registry,
        gauntlet_core::params::Axis::Judge,
        &mut specs,
    );
    // Checked before the evaluation, which may take long: the card's judge is one of
    // those evaluated and its file can be written where asked.
    if let Some(judge) = &a.card {
        let labels: Vec<String> = specs
            .iter()
            .map(gauntlet_core::params::PluginSpec::label)
            .collect();
        if !labels.iter().any(|l| l == judge) {
            return Err(CliError::Invalid(format!(
                "--card {}: no judge of this evaluation has that label; the judges are {}",
                safe(judge),
                labels
                    .iter()
                    .map(|l| safe(l))
                    .collect::<Vec<_>>()
                    .join(", ")
            )));
        }
    }
    if let Some(path) = &a.card_out {
        check_card_out(path)?;
    }
    gauntlet_job::outdir::refuse_other(
        &a.out,
        "--out",
        "judge-eval",
        "give an empty or new directory (default: judge-eval), or one holding an earlier judge evaluation",
        |h| *h == gauntlet_job::outdir::Holding::JudgeEval,
    )
    .map_err(CliError::invalid)?;
    let set = match LabelledSet::read(&a.files) {
        Ok(s) => s,
        Err(e) => return Err(CliError::invalid(e)),
    };
    let opts = EvalOptions {
        partial: match a.partial {
            Partial::Refusal => PartialAs::Refusal,
            Partial::Compliance => PartialAs::Compliance,
        },
        set_name: a.name.clone().unwrap_or_else(|| default_name(&a.files[0])),
        max_queries: a.max_queries,
        concurrency: a.concurrency as usize,
    };
    let report = match runtime().block_on(judge_eval::evaluate(
        &set,
        &specs,
        &a.out,
        &opts,
        &|_, _| {},
    )) {
        Ok(r) => r,
        Err(e) => return Err(CliError::failed(e)),
    };
    if let Some(judge) = &a.card {
        let path = a
            .card_out
            .clone()
            .unwrap_or_else(|| a.out.join(format!("{}.card.json", sanitize(judge))));
        match judge_eval::card(&report, judge)
            .and_then(|c| judge_eval::write_card(&path, &c).map_err(Into::into))
        {
            Ok(()) => eprintln!("judge card: {}", path.display()),
            Err(e) => return Err(CliError::failed(e)),
        }
    }
    if a.json {
        outln!(
            "{}",
            gauntlet_core::terminal::ci_json(
                serde_json::to_string_pretty(&report).expect("report serialises")
            )
        )?;
    } else {
        print_table(&report, &a.out)?;
    }
    if report.status == "complete" {
        Ok(())
    } else {
        Err(CliError::BudgetSpent)
    }
}

/// `--card-out`'s directory must exist and be a directory, so an evaluation does not
/// run to its end only to fail writing the card.
fn check_card_out(path: &Path) -> Result<(), CliError> {
    let dir = match path.parent() {
        Some(d) if !d.as_os_str().is_empty() => d,
        _ => Path::new("."),
    };
    match std::fs::metadata(dir) {
        Ok(m) if m.is_dir() => Ok(()),
        Ok(_) => Err(CliError::Invalid(format!(
            "--card-out {}: {} is not a directory",
            safe(&path.display().to_string()),
            safe(&dir.display().to_string())
        ))),
        Err(e) => Err(CliError::Invalid(format!(
            "--card-out {}: its directory {} cannot be used ({e}); create it first",
            safe(&path.display().to_string()),
            safe(&dir.display().to_string())
        ))),
    }
}

/// A judge label as a file name: anything but `[A-Za-z0-9._-]` becomes `_`.
fn sanitize(s: &str) -> String {
    s.chars()
        .map(|c| {
            if c.is_ascii_alphanumeric() || matches!(c, '.' | '_' | '-') {
                c
            } else {
                '_'
            }
        })
        .collect()
}

fn prop(p: &Proportion) -> String {
    match (p.value, p.ci_low, p.ci_high) {
        (Some(v), Some(lo), Some(hi)) => format!("{v:.3} [{lo:.3}, {hi:.3}]"),
        _ => "N/A".into(),
    }
}

fn kappa(s: &AgreementStats) -> String {
    match (s.kappa.value, s.kappa.ci_low, s.kappa.ci_high) {
        (Some(k), Some(lo), Some(hi)) => format!("{k:.3} [{lo:.3}, {hi:.3}]"),
        _ => "N/A".into(),
    }
}

fn line(name: &str, s: &AgreementStats) -> String {
    let k = kappa(s);
    let c = &s.confusion;
    format!(
        "  {:<18} {:>5}  {:<22} {:<22} {:<22} {:<22} {}/{}/{}/{}",
        safe(name),
        s.n,
        prop(&s.accuracy),
        k,
        prop(&s.sensitivity),
        prop(&s.specificity),
        c.tp,
        c.fn_,
        c.fp,
        c.tn
    )
}

fn print_table(r: &JudgeEvalReport, out: &Path) -> Result<(), CliError> {
    let s = &r.labelled_set;
    outln!(
        "{}: {} replies ({} refusals, {} partial refusals counted as {}, {} compliances), sha256 {}",
        safe(&s.name),
        s.rows,
        s.refusals,
        s.partial_refusals,
        s.partial_as,
        s.compliances,
        &s.sha256[..12]
    )?;
    let skipped: u64 = s.files.iter().map(|f| f.skipped).sum();
    if skipped > 0 {
        outln!("{skipped} rows labelled skip left out")?;
    }
    for j in &r.judges {
        outln!(
            "\n{} — {} judged, {} errors (excluded), {} uncertain (excluded), coverage {}, {} misclassified",
            safe(&j.judge),
            j.judged,
            j.errors,
            j.uncertain,
            j.coverage().map_or("N/A".into(), |c| format!("{c:.3}")),
            j.misclassified.len()
        )?;
        outln!(
            "  {:<18} {:>5}  {:<22} {:<22} {:<22} {:<22} tp/fn/fp/tn",
            "source",
            "n",
            "accuracy",
            "Cohen's kappa",
            "sensitivity",
            "specificity"
        )?;
        outln!("{}", line("all", &j.overall))?;
        for (src, st) in &j.by_source {
            outln!("{}", line(src, st))?;
        }
        if !j.band_curve.is_empty() {
            outln!(
                "  kappa-coverage curve (abstention band around the threshold):\n  {:<18} {:>5}  {:<8} {:<22} {:<22} {:<22}",
                "band",
                "n",
                "coverage",
                "Cohen's kappa",
                "sensitivity",
                "specificity"
            )?;
            for p in &j.band_curve {
                let s = &p.agreement;
                outln!(
                    "  {:<18} {:>5}  {:<8} {:<22} {:<22} {:<22}",
                    format!("{:.2}", p.band),
                    p.decided,
                    p.coverage.map_or("N/A".into(), |c| format!("{c:.3}")),
                    kappa(s),
                    prop(&s.sensitivity),
                    prop(&s.specificity),
                )?;
            }
        }
    }
    let g = &r.grader_calls;
    outln!(
        "\nstatus: {}; grader calls: {} made, {} from the journal, {} failed",
        r.status,
        g.made,
        g.cached,
        g.failed
    )?;
    outln!(
        "95% Wilson intervals (accuracy, sensitivity, specificity); kappa ± 1.96·SE. Written: {}, {}",
        out.join(judge_eval::JSON_FILE).display(),
        out.join(judge_eval::MARKDOWN_FILE).display()
    )?;
    Ok(())
}
