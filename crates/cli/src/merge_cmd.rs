//! `gauntlet merge`: shard directories back into the one run directory a single machine
//! would have written (the engine's `merge.rs` does the work for runs, see its
//! `shard.rs` for how runs are cut; `gauntlet_exam::shard` for both exams).

use crate::error::CliError;
use clap::Args;
use gauntlet_core::terminal::safe;
use gauntlet_exam::shard::{agent, detect};
use gauntlet_job::kind::Kind;
use gauntlet_job::outdir::Holding;
use std::path::{Path, PathBuf};

/// `gauntlet merge`.
#[derive(Args)]
pub(crate) struct MergeArgs {
    /// The shard directories (`<run_name>.shard-<i>-of-<N>`, or `<out>.shard-<i>-of-<N>`
    /// of `exam` and `exam-detect`), every i in 0..N once, in any order.
    #[arg(required = true)]
    pub shard_dirs: Vec<PathBuf>,
    /// The merged run directory (created; an earlier merge of the same run is replaced).
    #[arg(long)]
    pub out: PathBuf,
    /// The directory of the original config, for runs whose datasets use relative paths.
    #[arg(long)]
    pub config_dir: Option<PathBuf>,
}

/// The kind of shard directory `dir` is: the kind its manifest records, or, when it
/// records none (an older gauntlet's shard), the files that mark it (detect_shard.json,
/// shard.json, else a red-team run's). A directory recorded as anything but a shard
/// kind is refused naming it, as is one whose record its files contradict.
fn shard_kind(dir: &Path) -> Result<Kind, CliError> {
    match gauntlet_job::manifest::recorded(dir).map_err(CliError::invalid)? {
        Some(k @ (Kind::Run | Kind::ExamShard | Kind::DetectShard)) => Ok(k),
        Some(other) => Err(CliError::Invalid(format!(
            "{} is not a shard directory: its manifest.json records {} (kind `{other}`); merge takes the N shard directories of one `gauntlet run CONFIG --shard i/N` (<run_name>.shard-<i>-of-<N>), `gauntlet exam … --shard i/N` or `gauntlet exam-detect … --shard i/N` (<out>.shard-<i>-of-<N>)",
            safe(&dir.display().to_string()),
            other.describe()
        ))),
        None if detect::is_shard(dir) => Ok(Kind::DetectShard),
        None if agent::is_shard(dir) => Ok(Kind::ExamShard),
        None => Ok(Kind::Run),
    }
}

/// Which merge the shard directories call for: a detect exam's when any is a
/// detect-exam shard, an agent exam's when any is an agent-exam shard, else a red-team
/// run's (the merge then refuses, naming it, a directory of another kind).
fn merge_kind(dirs: &[PathBuf]) -> Result<Kind, CliError> {
    let kinds = dirs
        .iter()
        .map(|d| shard_kind(d))
        .collect::<Result<Vec<_>, _>>()?;
    Ok([Kind::DetectShard, Kind::ExamShard]
        .into_iter()
        .find(|k| kinds.contains(k))
        .unwrap_or(Kind::Run))
}

/// Refuses an `--out` holding anything but an earlier merge of this kind (the red-team
/// merge then checks the run id itself).
fn check_out(out: &Path, ok: Holding) -> Result<(), CliError> {
    gauntlet_job::outdir::refuse_other(
        out,
        "--out",
        "merge",
        "merge into an empty directory or one holding an earlier merge of this run",
        |h| std::mem::discriminant(h) == std::mem::discriminant(&ok),
    )
    .map_err(CliError::invalid)
}

pub(crate) fn merge(a: MergeArgs) -> Result<(), CliError> {
    let kind = merge_kind(&a.shard_dirs)?;
    if kind == Kind::DetectShard {
        check_out(&a.out, Holding::DetectExam)?;
        return match detect::merge(&a.shard_dirs, &a.out) {
            Ok(r) => {
                // The summary a one-machine `exam-detect` prints, and its exit code
                // (0 pass, 1 gaps, 2 detector errors): the verdict is the whole exam's.
                out!(
                    "{}",
                    gauntlet_core::terminal::safe_text(&gauntlet_detect::report_text::render(
                        &r, false, false
                    ))
                )?;
                outln!(
                    "merged {} detect-exam shard(s): {} scenarios",
                    a.shard_dirs.len(),
                    r.totals.scenarios
                )?;
                outln!("artefacts: {}", safe(&a.out.display().to_string()))?;
                match r.exit_code() {
                    0 => Ok(()),
                    code => Err(CliError::Verdict(code)),
                }
            }
            Err(e) => Err(CliError::invalid(e)),
        };
    }
    if kind == Kind::ExamShard {
        check_out(&a.out, Holding::Exam)?;
        return match agent::merge(&a.shard_dirs, &a.out) {
            Ok(r) => {
                outln!(
                    "merged {} exam shard(s): {} pass(es), median pass rate {}, {} model calls",
                    a.shard_dirs.len(),
                    r.runs.len(),
                    gauntlet_report::exam::pct_or_na(
                        r.median_pass_rate,
                        &r.na_reasons,
                        "median_pass_rate"
                    ),
                    r.model_calls
                )?;
                outln!("artefacts: {}", safe(&a.out.display().to_string()))?;
                Ok(())
            }
            Err(e) => Err(CliError::invalid(e)),
        };
    }
    check_out(
        &a.out,
        Holding::Run {
            run_id: String::new(),
        },
    )?;
    match gauntlet_engine::merge::merge(&a.shard_dirs, &a.out, a.config_dir.as_deref()) {
        Ok(m) => {
            crate::print::run_summary(&m.summary)?;
            outln!(
                "merged {} shard(s) of {}: {} units, {} attempts; {:.2}s",
                m.shards,
                safe(&m.summary.run_id),
                m.units,
                m.attempts,
                m.wall_seconds
            )?;
            outln!("artefacts: {}", safe(&m.out.display().to_string()))?;
            if let Some(e) = &m.summary.errors {
                crate::run_cmd::print_run_errors(e)?;
            }
            if let Some(why) = m.summary.status.strip_prefix("failed: ") {
                eprintln!(
                    "the merged run measured too little: {}; no number of it is a result",
                    gauntlet_core::terminal::safe_text(why)
                );
                return Err(CliError::MeasuredTooLittle);
            }
            Ok(())
        }
        Err(e) => Err(CliError::invalid(e)),
    }
}
