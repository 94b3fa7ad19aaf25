//! `gauntlet exam-detect`: the detect exam — the reference detector fleet
//! plus any external detectors, graded offline against the labelled scenario corpus.
//!
//! Exit codes: 0 every labelled row passes (reserved rows are tracked, not failures);
//! 1 gaps (a missed attack or a false alarm); 2 corpus, configuration or operational
//! failure (integrity check, bad detector config, or any detector panic / timeout /
//! error during the run).

use crate::error::CliError;
use clap::Args as ClapArgs;
use gauntlet_corpus::load::{IndexedFile, check_unique_ids, index_corpus};
use gauntlet_detect::assemble::FleetOptions;
use gauntlet_detect::exam::{self as detect_exam, Options};
use gauntlet_detect::external::Limits;
use gauntlet_detect::report_text::{render, write_report_files};
use gauntlet_exam::shard::detect::{self as detect_shard, IdentityLimits, ShardRecord};
use gauntlet_job::shard::Shard;
use gauntlet_results::detect::DetectReport;
use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::time::Duration;

#[derive(Debug, ClapArgs)]
pub(crate) struct Args {
    /// Scenario corpus directory (holds corpus.pin; verified before anything runs).
    #[arg(long, default_value = "exams/scenarios")]
    corpus: PathBuf,
    /// Extra, unpinned scenarios graded as additional rows.
    #[arg(long)]
    extra_scenarios_dir: Option<PathBuf>,
    /// External detector NAME=PATH (repeatable). Protocol: gauntlet-detector/1, JSON
    /// on stdin/stdout; see the gauntlet_detect::external docs.
    #[arg(long = "detector", value_name = "NAME=PATH")]
    detectors: Vec<String>,
    /// Directory of external detectors laid out as <name>/detector (+ <name>/scenarios/).
    #[arg(long)]
    detectors_dir: Option<PathBuf>,
    /// Do not grade external detectors' own scenarios.
    #[arg(long)]
    no_detector_scenarios: bool,
    /// Per-detector, per-scenario time budget for built-in detectors.
    #[arg(long, default_value_t = 10_000)]
    timeout_ms: u64,
    /// Wall-clock limit per external detector run (its process group is killed).
    #[arg(long, default_value_t = 10_000)]
    external_timeout_ms: u64,
    /// CPU-seconds limit per external detector run (RLIMIT_CPU).
    #[arg(long, default_value_t = 10)]
    external_cpu_secs: u64,
    /// Address-space limit per external detector run, MiB (RLIMIT_AS).
    #[arg(long, default_value_t = 1024)]
    external_memory_mb: u64,
    /// Run external detectors even where this kernel cannot confine them (no usable
    /// Landlock, seccomp or process-tree tracking; see README "Safety"). Without it such
    /// detectors are refused. They still get every protection the kernel has.
    #[arg(long)]
    allow_unconfined_detectors: bool,
    /// Scenarios graded concurrently (default: available cores).
    #[arg(long)]
    parallel: Option<usize>,
    /// Show the recall / precision view: every missed attack and false alarm by name.
    #[arg(long)]
    recall: bool,
    /// List every row, not only the ones that need attention.
    #[arg(long)]
    all_rows: bool,
    /// Print the full report as JSON on stdout instead of the human summary.
    #[arg(long)]
    json: bool,
    /// End-to-end mode: an alias of `gauntlet exam --mode e2e --corpus CORPUS
    /// --out OUT` (golden backend; events → fleet → findings → triage cascade with the
    /// detect-fidelity block, beside the agent passes; the exam's artefacts in OUT,
    /// default exam-detect-out). Exit 0 when the run completed, 2 on failure. Not with
    /// --extra-scenarios-dir, --detector, --detectors-dir, --json or --shard.
    #[arg(long)]
    e2e: bool,
    /// Output directory. Without --e2e: writes report.json (the --json report),
    /// report.txt (the summary with --recall and --all-rows) and manifest.json there;
    /// nothing is written without it (or --shard). With --e2e: the exam's artefacts
    /// (default exam-detect-out).
    #[arg(long)]
    out: Option<PathBuf>,
    /// Grade only shard i of N (0-based) of the scenario files, into
    /// <out>.shard-<i>-of-<N> (default out: exam-detect-out); `gauntlet merge` puts the N
    /// shards back together (see README "Scaling out"). Not with --e2e.
    #[arg(long, value_name = "i/N")]
    shard: Option<Shard>,
}

pub(crate) fn run(a: Args) -> Result<(), CliError> {
    if a.e2e {
        if let Some(s) = a.shard {
            return Err(CliError::invalid(format!(
                "gauntlet exam-detect --e2e --shard {s}: the end-to-end mode cannot be sharded yet; run it on one machine (or shard the detect exam itself: drop --e2e)"
            )));
        }
        // One end-to-end path: `gauntlet exam --mode e2e`. What it does not take is
        // refused rather than silently dropped.
        for (given, flag) in [
            (a.extra_scenarios_dir.is_some(), "--extra-scenarios-dir"),
            (!a.detectors.is_empty(), "--detector"),
            (a.detectors_dir.is_some(), "--detectors-dir"),
            (a.json, "--json"),
        ] {
            if given {
                return Err(CliError::invalid(format!(
                    "gauntlet exam-detect --e2e {flag}: the end-to-end mode is `gauntlet exam --mode e2e` (exam-detect --e2e is its alias), which runs the reference fleet over a pinned corpus and does not take {flag}; drop it, or grade detectors without --e2e"
                )));
            }
        }
        return crate::exam_cmd::e2e_alias(
            a.corpus.clone(),
            a.out
                .clone()
                .unwrap_or_else(|| PathBuf::from("exam-detect-out")),
            a.timeout_ms,
        );
    }
    let out = match a.shard {
        Some(s) => Some(gauntlet_exam::shard::shard_out(
            a.out.as_deref().unwrap_or(Path::new("exam-detect-out")),
            s,
        )),
        None => a.out.clone(),
    };
    if let Some(out) = &out {
        use gauntlet_job::outdir::{Holding, refuse_other};
        let shard = a.shard.is_some();
        refuse_other(
            out,
            "--out",
            "exam-detect",
            "give an empty or new directory, or one holding an earlier detect exam",
            |h| *h == Holding::DetectExam || (shard && *h == Holding::DetectShard),
        )
        .map_err(CliError::invalid)?;
    }
    if let (Some(s), Some(out)) = (a.shard, &out) {
        std::fs::create_dir_all(out)
            .and_then(|()| detect_shard::begin(out))
            .map_err(|e| CliError::invalid(format!("cannot prepare {}: {e}", out.display())))?;
        eprintln!("exam-detect: shard {s} into {}", out.display());
    }
    let (report, shard, identity) = prepare_and_run(&a)?;
    if let Some(out) = &out {
        // A whole exam's manifest goes before its report files change and comes after
        // them (a shard's: `detect_shard::begin` above, `detect_shard::finish` here).
        std::fs::create_dir_all(out)
            .map_err(|e| format!("cannot create {}: {e}", out.display()))
            .and_then(|()| match &shard {
                Some(_) => Ok(()),
                None => gauntlet_exam::manifest::begin(out).map_err(|e| e.to_string()),
            })
            .and_then(|()| write_report_files(out, &report).map_err(|e| e.to_string()))
            .and_then(|()| match &shard {
                Some(rec) => {
                    detect_shard::finish(out, rec).map_err(|e| format!("{}: {e}", out.display()))
                }
                None => gauntlet_exam::manifest::finish_detect(out, &identity)
                    .map_err(|e| format!("{}: {e}", out.display())),
            })
            .map_err(CliError::Invalid)?;
    }
    if a.json {
        let json = serde_json::to_string_pretty(&report)
            .map_err(|e| CliError::invalid(format!("could not encode the report: {e}")))?;
        outln!("{}", gauntlet_core::terminal::ci_json(json))?;
    } else {
        // Scenario ids, families and detector names are corpus data.
        out!(
            "{}",
            gauntlet_core::terminal::safe_text(&render(&report, a.recall, a.all_rows))
        )?;
    }
    eprintln!("{}", timing_line(&report));
    if let Some(out) = &out {
        eprintln!("artefacts: {}", out.display());
    }
    match report.exit_code() {
        // A complete shard is a success whatever its rows say: the verdict is the
        // whole exam's, which `gauntlet merge` gives (and a Slurm merge waits on
        // `afterok`).
        _ if a.shard.is_some() => Ok(()),
        0 => Ok(()),
        verdict => Err(CliError::Verdict(verdict)),
    }
}

/// The report, the shard's record (with `--shard`) and the exam's identity (with an
/// output directory: its manifest's run id; empty without one).
fn prepare_and_run(a: &Args) -> Result<(DetectReport, Option<ShardRecord>, String), CliError> {
    // Verify the pin (hashing every file, keeping none of them), then stream: each
    // scenario is parsed, projected, run and graded, and only its compact row is kept.
    let index =
        index_corpus(&a.corpus, a.extra_scenarios_dir.as_deref()).map_err(CliError::invalid)?;
    let limits = Limits {
        timeout: Duration::from_millis(a.external_timeout_ms.max(1)),
        cpu_secs: a.external_cpu_secs.max(1),
        memory_bytes: a.external_memory_mb.max(16) * 1024 * 1024,
        allow_unconfined: a.allow_unconfined_detectors,
    };
    let assembled = gauntlet_detect::assemble::assemble(
        &index,
        &FleetOptions {
            detectors_dir: a.detectors_dir.as_deref(),
            detectors: &a.detectors,
            limits,
            detector_scenarios: !a.no_detector_scenarios,
        },
    )
    .map_err(CliError::invalid)?;
    for note in &assembled.notes {
        eprintln!("{note}");
    }
    let (members, files) = (assembled.members, assembled.files);

    let mut opts = Options {
        timeout: Duration::from_millis(a.timeout_ms.max(1)),
        ..Options::default()
    };
    if let Some(p) = a.parallel {
        opts.parallel = p.max(1);
    }
    let root = a.corpus.display().to_string();
    // The exam's identity: a shard's record and a written exam's manifest name it.
    let identity = if a.shard.is_some() || a.out.is_some() {
        let limits = IdentityLimits {
            timeout_ms: a.timeout_ms,
            external_timeout_ms: a.external_timeout_ms,
            external_cpu_secs: a.external_cpu_secs,
            external_memory_mb: a.external_memory_mb,
            allow_unconfined: a.allow_unconfined_detectors,
        };
        detect_shard::identity((index.count, &index.digest), &files, &members, &limits)
            .map_err(CliError::invalid)?
    } else {
        String::new()
    };
    // A shard grades its own units only, in the exam's file order.
    let shard = a
        .shard
        .map(|s| ShardRecord::plan(s, &files, identity.clone()));
    let files: Vec<&(IndexedFile, String, usize)> = match &shard {
        Some(info) => info.units.iter().map(|&i| &files[i]).collect(),
        None => files.iter().collect(),
    };
    let load = |i: usize| {
        let (f, origin, _) = files[i];
        f.load().map(|s| (s, origin.clone()))
    };
    let report = detect_exam::run_streaming(
        files.len(),
        load,
        &members,
        &opts,
        (&root, index.count, &index.digest),
    )
    .map_err(|f| CliError::invalid(f.error))?;
    // Rows are in file order, one per file.
    check_unique_ids(
        report
            .rows
            .iter()
            .zip(&files)
            .map(|(r, (f, _, _))| (r.id.as_str(), f.file.path.as_path())),
    )
    .map_err(CliError::invalid)?;
    // Ids are unique now: order the rows by (group, id).
    let by_id: BTreeMap<String, usize> = report
        .rows
        .iter()
        .zip(&files)
        .map(|(r, (_, _, g))| (r.id.clone(), *g))
        .collect();
    let report = detect_exam::sort_rows(report, &members, |r| {
        (
            by_id.get(r.id.as_str()).copied().unwrap_or(usize::MAX),
            r.id.clone(),
        )
    });
    Ok((report, shard, identity))
}

/// The timing line (stderr): wall-clock figures stay out of the report so that stdout
/// is byte-identical across reruns and `--parallel`.
pub(crate) fn timing_line(r: &DetectReport) -> String {
    let th = &r.throughput;
    format!(
        "exam-detect: {} scenarios, {} events in {:.2} s ({:.0} scenarios/s, {:.0} events/s)",
        r.totals.scenarios, th.events, th.elapsed_secs, th.scenarios_per_sec, th.events_per_sec
    )
}
