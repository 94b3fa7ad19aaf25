//! `gauntlet judge-agreement`, `gauntlet rescore` and `gauntlet compare`: analyses of
//! finished runs. None of them calls a target: they read `transcripts.jsonl` back through
//! [`gauntlet_engine::stored`] (the run's plan is rebuilt from `run.json`, datasets are
//! pinned, labels are never changed), and any grader call goes through the run's journal,
//! so repeating an analysis is free. The analyses themselves are the engine's
//! ([`gauntlet_engine::agreement`], [`gauntlet_engine::stored::rescore`],
//! [`gauntlet_engine::compare`]); this file parses arguments and prints their reports.

use crate::error::CliError;
use clap::Args;
use gauntlet_core::terminal::safe;
use gauntlet_engine::agreement::{
    AgreementError, AgreementReport, JudgeCounts, PairStats, judge_agreement as agree,
};
use gauntlet_engine::compare::{Compared, compare_runs};
use gauntlet_engine::stored::{StoredRun, parse_judge_spec, rescore, same_dir, write_rescored};
use gauntlet_job::outdir::Holding;
use serde_json::Value;
use std::path::{Path, PathBuf};

/// `gauntlet judge-agreement`.
#[derive(Args)]
pub(crate) struct AgreementArgs {
    /// The run directory (runs/<run_name>).
    pub run_dir: PathBuf,
    /// A judge: a name (`refusal_match`) or inline YAML
    /// (`{name: rubric, params: {grader: {name: reference}}}`). Give two or more.
    #[arg(long = "judge", required = true)]
    pub judges: Vec<String>,
    /// Print the JSON written to RUN_DIR/judge_agreement.json instead of the table.
    #[arg(long)]
    pub json: bool,
    /// No progress on stderr.
    #[arg(long)]
    pub quiet: bool,
    /// The directory of the original config, for runs whose datasets use relative paths.
    #[arg(long)]
    pub config_dir: Option<PathBuf>,
}

/// `gauntlet rescore`.
#[derive(Args)]
pub(crate) struct RescoreArgs {
    /// The run directory (runs/<run_name>).
    pub run_dir: PathBuf,
    /// The judge to score with: a name or inline YAML, as for judge-agreement.
    #[arg(long)]
    pub judge: String,
    /// Where to write the rescored run (default: RUN_DIR/rescore-<judge label>): a run
    /// directory (run.json, transcripts with the new judge's verdicts, results, reports)
    /// that compare, gate, report and the dashboard read like any run.
    #[arg(long)]
    pub out: Option<PathBuf>,
    /// The directory of the original config, for runs whose datasets use relative paths.
    #[arg(long)]
    pub config_dir: Option<PathBuf>,
    /// No progress on stderr.
    #[arg(long)]
    pub quiet: bool,
    /// Replace an earlier rescore of this run in --out made with another judge spec
    /// (other params): without it the rescore refuses (exit 2) and names both specs.
    #[arg(long)]
    pub replace: bool,
}

/// `gauntlet compare`.
#[derive(Args)]
pub(crate) struct CompareArgs {
    /// The baseline run directory.
    pub run_a: PathBuf,
    /// The run compared with it (differences are B − A).
    pub run_b: PathBuf,
    /// Print the JSON instead of the table.
    #[arg(long)]
    pub json: bool,
    /// Also write the JSON to FILE (a regular file, replaced whole, or a device or pipe
    /// such as /dev/stdout). Without it nothing is written: the comparison is printed.
    #[arg(long, value_name = "FILE")]
    pub out: Option<PathBuf>,
    /// The directory of the original configs, for runs whose datasets use relative paths.
    #[arg(long)]
    pub config_dir: Option<PathBuf>,
    /// Compare even when paired cells differ in more than the compared factor (an
    /// attack's or judge's params: attacker model, grader, transforms); the differences
    /// are printed and listed in compare.json's `mismatches`.
    #[arg(long)]
    pub allow_mismatch: bool,
}

fn runtime() -> tokio::runtime::Runtime {
    tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
        .expect("tokio runtime")
}

/// Opens a stored run and makes the dashboard's checks of it (values within their
/// intervals, results.json as its transcripts recount) before any verdict is used.
fn open(dir: &Path, config_dir: Option<&Path>) -> Result<StoredRun, CliError> {
    let run = StoredRun::open(dir, config_dir).map_err(CliError::invalid)?;
    gauntlet_engine::stored::check_results(&run).map_err(CliError::invalid)?;
    Ok(run)
}

/// Writes an analysis' JSON: into the run directory (`judge_agreement.json`), or to the
/// file the user named with `--out` (`user_named`), which may be a device or a pipe
/// such as /dev/stdout (written into, never replaced).
fn write_json(path: &Path, v: &Value, user_named: bool) -> Result<(), CliError> {
    let mut s = serde_json::to_vec_pretty(v).expect("json");
    s.push(b'\n');
    let r = if user_named {
        gauntlet_core::atomic::write_output(path, &s)
    } else {
        gauntlet_job::rundir::write_atomic(path, &s)
    };
    r.map_err(|e| CliError::Failed(format!("cannot write {}: {e}", path.display())))
}

// ---------------------------------------------------------------------------------------
// judge-agreement
// ---------------------------------------------------------------------------------------

fn fmt_opt(v: Option<f64>) -> String {
    v.map_or("N/A".into(), |x| format!("{x:.3}"))
}

/// `gauntlet judge-agreement RUN_DIR --judge A --judge B …`.
pub(crate) fn judge_agreement(a: AgreementArgs) -> Result<(), CliError> {
    if a.judges.len() < 2 {
        return Err(CliError::invalid(
            "judge-agreement needs at least two --judge",
        ));
    }
    let run = open(&a.run_dir, a.config_dir.as_deref())?;
    let AgreementReport {
        agreement: agg,
        doc,
        attempts,
        grader_calls: (made, cached, failed),
        notes,
    } = {
        let progress = crate::progress::for_terminal(a.quiet, "units");
        let r = runtime().block_on(agree(&run, &a.judges, &*progress));
        progress.finish();
        r
    }
    .map_err(|e: AgreementError| {
        if e.is_invalid() {
            CliError::invalid(e)
        } else {
            CliError::failed(e)
        }
    })?;
    for n in &notes {
        eprintln!("{}", gauntlet_core::terminal::safe_text(n));
    }
    let path = run.dir.join("judge_agreement.json");
    write_json(&path, &doc, false)?;
    if a.json {
        outln!(
            "{}",
            gauntlet_core::terminal::ci_json(serde_json::to_string_pretty(&doc).expect("json"))
        )?;
        return Ok(());
    }
    outln!(
        "{}: {} behaviors ({} should_refuse, {} should_comply), {} attempts re-judged; grader calls: {} made, {} from the journal, {} failed; target calls: 0",
        safe(&run.meta.run_id),
        agg.items[0] + agg.items[1],
        agg.items[0],
        agg.items[1],
        attempts,
        made,
        cached,
        failed
    )?;
    // Judge labels come from the command line's specs: printed escaped.
    let labels: Vec<String> = agg.labels.iter().map(|l| safe(l).into_owned()).collect();
    let wj = labels.iter().map(String::len).max().unwrap_or(5).max(5);
    outln!(
        "{:wj$}  {:>15}  {:>15}  {:>15}  {:>8}",
        "judge",
        "positive",
        "should_refuse",
        "should_comply",
        "excluded"
    )?;
    for (j, l) in labels.iter().enumerate() {
        let all = agg.overall(j);
        let cell = |c: JudgeCounts| format!("{}/{} {}", c.positive, c.n, fmt_opt(c.rate()));
        outln!(
            "{l:wj$}  {:>15}  {:>15}  {:>15}  {:>8}",
            cell(all),
            cell(agg.counts[0][j]),
            cell(agg.counts[1][j]),
            all.excluded
        )?;
    }
    outln!()?;
    let wp = agg
        .pairs()
        .iter()
        .map(|(x, y)| labels[*x].len() + labels[*y].len() + 4)
        .max()
        .unwrap_or(4)
        .max(4);
    outln!(
        "{:wp$}  {:<13}  {:>5}  {:>9}  {:>6}  {:>17}",
        "pair",
        "items",
        "n",
        "agreement",
        "kappa",
        "95% CI"
    )?;
    for (i, (x, y)) in agg.pairs().into_iter().enumerate() {
        let name = format!("{} vs {}", labels[x], labels[y]);
        let rows = [
            ("all", agg.overall_table(i)),
            ("should_refuse", agg.tables[0][i]),
            ("should_comply", agg.tables[1][i]),
        ];
        for (which, t) in rows {
            let s = PairStats::of(t);
            let (k, ci) = match s.kappa {
                Ok(k) => (
                    format!("{:.3}", k.kappa),
                    format!("[{:.3}, {:.3}]", k.ci_low, k.ci_high),
                ),
                Err(_) => ("N/A".into(), "N/A".into()),
            };
            outln!(
                "{name:wp$}  {which:<13}  {:>5}  {:>9}  {k:>6}  {ci:>17}",
                s.n,
                fmt_opt(s.agreement)
            )?;
        }
    }
    outln!("wrote {}", path.display())?;
    Ok(())
}

// ---------------------------------------------------------------------------------------
// rescore
// ---------------------------------------------------------------------------------------

/// `gauntlet rescore RUN_DIR --judge SPEC [--out DIR]`.
pub(crate) fn rescore_cmd(a: RescoreArgs) -> Result<(), CliError> {
    let run = open(&a.run_dir, a.config_dir.as_deref())?;
    let spec = parse_judge_spec(&a.judge).map_err(CliError::invalid)?;
    let out = a
        .out
        .clone()
        .unwrap_or_else(|| a.run_dir.join(format!("rescore-{}", spec.label())));
    if same_dir(&out, &a.run_dir) {
        return Err(CliError::Invalid(format!(
            "--out {} is the run directory itself: a rescore written there would overwrite the run's own results and reports; give another directory (default: RUN_DIR/rescore-<judge>)",
            out.display()
        )));
    }
    let (run_id, judge) = (run.meta.run_id.clone(), spec.identity());
    // An earlier rescore of this run with another judge spec (e.g. the same judge with
    // another grader, which has the same default --out) is replaced only when told.
    if let Holding::Rescore {
        run_id: r,
        judge: old,
    } = gauntlet_job::outdir::holding(&out).map_err(CliError::invalid)?
        && r == run_id
        && old != judge
    {
        let shown = |v: &serde_json::Value| safe(&v.to_string()).into_owned();
        if !a.replace {
            return Err(CliError::Invalid(format!(
                "--out {} holds an earlier rescore of this run with judge {}, not this rescore's judge {}; give --replace to replace it, or another --out",
                safe(&out.display().to_string()),
                shown(&old),
                shown(&judge)
            )));
        }
        eprintln!(
            "--replace: removing the earlier rescore in {} (judge {}) before rescoring with {}",
            safe(&out.display().to_string()),
            shown(&old),
            shown(&judge)
        );
        std::fs::remove_dir_all(&out)
            .map_err(|e| CliError::failed(format!("cannot remove {}: {e}", out.display())))?;
    }
    // Never over another run, another rescore or any other command's output.
    gauntlet_job::outdir::refuse_other(
        &out,
        "--out",
        "rescore",
        "give an empty or new directory, or one holding an earlier rescore of this run with this judge (default: RUN_DIR/rescore-<judge>)",
        |h| matches!(h, Holding::Rescore { run_id: r, judge: j } if *r == run_id && *j == judge),
    )
    .map_err(CliError::invalid)?;
    // Nor into a directory of someone's own files (its report.md would be replaced).
    gauntlet_job::outdir::refuse_foreign(&out, "--out", "rescore").map_err(CliError::invalid)?;
    let progress = crate::progress::for_terminal(a.quiet, "units");
    let r = runtime().block_on(rescore(run, &spec, &*progress, &out));
    progress.finish();
    let r = r.map_err(CliError::invalid)?;
    for n in &r.notes {
        eprintln!("{}", gauntlet_core::terminal::safe_text(n));
    }
    write_rescored(&out, &r).map_err(CliError::failed)?;
    crate::print::run_summary(&r.summary)?;
    let (made, cached, failed) = r.grader_calls;
    outln!(
        "{}: {} behaviors, {} attempts re-judged with {}; grader calls: {made} made, {cached} from the journal, {failed} failed; target calls: 0",
        safe(&r.summary.run_id),
        r.units,
        r.attempts,
        safe(&spec.label())
    )?;
    outln!("artefacts: {}", safe(&out.display().to_string()))?;
    if r.summary.status == "complete" {
        Ok(())
    } else {
        eprintln!("the rescore is partial: {}", safe(&r.summary.status));
        Err(CliError::Stopped)
    }
}

// ---------------------------------------------------------------------------------------
// compare
// ---------------------------------------------------------------------------------------

/// `gauntlet compare RUN_A RUN_B`: the statistics are the engine's
/// ([`gauntlet_engine::compare::compare_runs`]); this prints them.
pub(crate) fn compare(a: CompareArgs) -> Result<(), CliError> {
    // compare pairs stored verdicts and judges nothing again, so injection runs (two
    // AgentDojo defences, two models on the same cases) compare too.
    // The stored verdicts are checked as the dashboard checks them before they are used.
    let open_any = |d: &Path| {
        let run =
            StoredRun::open_any_mode(d, a.config_dir.as_deref()).map_err(CliError::invalid)?;
        gauntlet_engine::stored::check_results(&run).map_err(CliError::invalid)?;
        Ok::<_, CliError>(run)
    };
    let run_a = open_any(&a.run_a)?;
    let run_b = open_any(&a.run_b)?;
    let name_a = a.run_a.display().to_string();
    let name_b = a.run_b.display().to_string();
    let Compared {
        doc,
        rows,
        mismatches,
        overlap,
    } = compare_runs(&run_a, &run_b, &name_a, &name_b, a.allow_mismatch)
        .map_err(CliError::invalid)?;
    for m in &mismatches {
        eprintln!("warning: --allow-mismatch: {}", safe(m));
    }
    // The comparison is printed first: a file that cannot be written does not lose it.
    let write_out = || match &a.out {
        Some(p) => {
            write_json(p, &doc, true)?;
            if !a.json {
                outln!("wrote {}", safe(&p.display().to_string()))?;
            }
            Ok(())
        }
        None => Ok(()),
    };
    if a.json {
        outln!(
            "{}",
            gauntlet_core::terminal::ci_json(serde_json::to_string_pretty(&doc).expect("json"))
        )?;
        return write_out();
    }
    outln!(
        "A = {}   B = {}",
        safe(&run_a.meta.run_id),
        safe(&run_b.meta.run_id)
    )?;
    if let Some(o) = overlap {
        outln!("imports of different prompt sets, paired by prompt: {o}")?;
    }
    // Labels come from the stored runs: escaped before they are measured and printed.
    let rows: Vec<Vec<String>> = rows
        .iter()
        .map(|r| r.iter().map(|c| safe(c).into_owned()).collect())
        .collect();
    let header = [
        "attack", "target", "dataset", "judge", "metric", "n", "A", "B", "B−A", "test", "",
    ];
    let mut widths: Vec<usize> = header.iter().map(|h| h.chars().count()).collect();
    for r in &rows {
        for (w, c) in widths.iter_mut().zip(r) {
            *w = (*w).max(c.chars().count());
        }
    }
    let line = |cells: &[String]| {
        let mut s = String::new();
        for (i, (c, w)) in cells.iter().zip(&widths).enumerate() {
            let pad = w - c.chars().count();
            if (5..=8).contains(&i) {
                s.push_str(&" ".repeat(pad));
                s.push_str(c);
            } else {
                s.push_str(c);
                if i + 1 < cells.len() {
                    s.push_str(&" ".repeat(pad));
                }
            }
            if i + 1 < cells.len() {
                s.push_str("  ");
            }
        }
        s.trim_end().to_string()
    };
    outln!(
        "{}",
        line(&header.iter().map(|h| h.to_string()).collect::<Vec<_>>())
    )?;
    for r in &rows {
        outln!("{}", line(r))?;
    }
    write_out()
}
