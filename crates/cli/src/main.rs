//! The `gauntlet` command: argument parsing and dispatch to one module per group of
//! commands (`*_cmd.rs`). All the logic lives in the library crates; the command
//! modules only wire them to a terminal.
//!
//! Exit codes: 0 success; 1 the run stopped early (partial) or failed; 2 the config or
//! the command line is invalid; 3 the run stopped because `max_queries` was spent
//! (`partial: budget`; rerun with a higher budget to resume from the journal); 4 the
//! run is complete but a rule of its config's `gate:` failed; `gate` exits 0 / 1 / 2
//! (pass / a rule failed / bad input);
//! `exam-detect` exits with its verdict (1 gaps, 2 detector errors). Every command,
//! the exams included, returns a [`error::CliError`], and the statuses are given in one
//! place, [`error::CliError::exit_code`].

// Files are read through `gauntlet_core::files` only (clippy.toml says why).
#![cfg_attr(not(test), deny(clippy::disallowed_methods))]
// The command's output goes through `outln!`/`out!`, whose errors reach `error::exit`.
#![deny(clippy::print_stdout)]

/// `eprintln!` for the whole command, shadowing std's: a write to a closed stderr
/// (`gauntlet run … 2>&1 | head -1`) is dropped instead of panicking, so losing the
/// reader of its messages never ends a run (std's panics, and the run was left partial).
macro_rules! eprintln {
    () => {{
        use std::io::Write as _;
        let _ = writeln!(std::io::stderr());
    }};
    ($($arg:tt)*) => {{
        use std::io::Write as _;
        let _ = writeln!(std::io::stderr(), $($arg)*);
    }};
}

/// `println!` for the command's output, returning the write's error instead of
/// panicking: `outln!(…)?` in a function that returns `Result<_, CliError>`. A reader
/// that went away (`gauntlet … | head`) ends the command through the error's chain
/// (`error::exit`, exit 141), as any other failed write does.
macro_rules! outln {
    ($($arg:tt)*) => {{
        use std::io::Write as _;
        writeln!(std::io::stdout().lock(), $($arg)*).map_err($crate::error::CliError::Stdout)
    }};
}

/// `print!` as [`outln!`] is `println!`.
macro_rules! out {
    ($($arg:tt)*) => {{
        use std::io::Write as _;
        write!(std::io::stdout().lock(), $($arg)*).map_err($crate::error::CliError::Stdout)
    }};
}

mod analysis_cmd;
mod browse_cmd;
mod ci_cmd;
mod dashboard_engine;
mod detect_cmd;
mod error;
mod exam_cmd;
mod exam_print;
mod import_cmd;
mod judge_eval_cmd;
mod label_cmd;
mod mcp_cmd;
mod mcp_review;
mod mcp_sarif;
mod memory;
mod merge_cmd;
mod print;
mod progress;
mod run_cmd;

use browse_cmd::{corpus_pin, corpus_verify, list, report, serve, site};
use clap::{Parser, Subcommand};
use error::CliError;
use run_cmd::{estimate, run, validate};
use std::path::PathBuf;
use std::process::ExitCode;

#[derive(Parser)]
#[command(
    name = "gauntlet",
    version,
    about = "Reproducible, adversarial evaluation of LLMs and LLM agents"
)]
struct Cli {
    #[command(subcommand)]
    command: Command,
}

#[derive(Subcommand)]
enum Command {
    /// Run (or resume) the evaluation a config describes. Rerunning the same command
    /// resumes an interrupted run; rerunning a finished one rebuilds its artefacts from
    /// the journal without calling any model.
    Run {
        /// The run config (YAML, redharness format).
        config: PathBuf,
        /// Directory that holds one folder per run_name.
        #[arg(long, default_value = "runs")]
        runs_dir: PathBuf,
        /// Units (behavior × attack × target) in flight at once; overrides the config.
        #[arg(long, value_parser = clap::value_parser!(u32).range(1..=1024))]
        concurrency: Option<u32>,
        /// No progress output.
        #[arg(long)]
        quiet: bool,
        /// Print the planned model calls per role and an upper-bound cost, then exit
        /// without calling any model.
        #[arg(long)]
        estimate: bool,
        /// Independent trials (1–100): every unit runs once per trial under the trial's
        /// own seed; results report each trial and the mean with a 95% CI across
        /// trials. Overrides the config's `trials`.
        #[arg(long, value_parser = clap::value_parser!(u32).range(1..=100))]
        trials: Option<u32>,
        /// Send every openai_compat / anthropic target's calls through the provider's
        /// batch API (as `batch: true` on each): half price, results within the
        /// provider's window; same journal, transcripts and results as call by call.
        #[arg(long)]
        batch: bool,
        /// Run only shard i of N (0-based: 0/4 … 3/4) of a stable partition of the
        /// units, into RUNS_DIR/<run_name>.shard-<i>-of-<N>; `gauntlet merge` puts the
        /// N shards back together (see README, "Scaling out").
        #[arg(long, value_name = "i/N")]
        shard: Option<gauntlet_engine::shard::Shard>,
    },
    /// Check a config: every key, plugin name and param, and load every dataset. An
    /// unset API-key variable and a dataset that cannot be downloaded right now are
    /// warnings (exit 0) so a config can be checked before keys and network are at
    /// hand; `run` refuses to start until they are resolved.
    Validate {
        config: PathBuf,
        /// Treat warnings as errors (exit 2).
        #[arg(long)]
        strict: bool,
    },
    /// List the registered plugins per axis with their params; with --rules, the
    /// refusal rules of `refusal_match` (ids for its `exclude_rules`).
    List {
        /// The refusal rules (id, where they look, what they recognise) instead.
        #[arg(long)]
        rules: bool,
    },
    /// Rebuild report.md, report.html and leaderboard.json from a run directory; with
    /// --site, write the dashboard's pages for the given runs as a static site.
    Report {
        /// The run directory; with --site, run directories or directories of runs.
        #[arg(required = true)]
        paths: Vec<PathBuf>,
        /// Write a self-contained static site (leaderboards, run pages, charts, the first
        /// transcript pages) into this directory.
        #[arg(long, value_name = "OUT")]
        site: Option<PathBuf>,
        /// Group the report by a threat framework: owasp_llm (default), owasp_agentic,
        /// owasp_agentic_2026, owasp_mcp, mitre_atlas, nist_ai_rmf, eu_ai_act, or `all`.
        /// Repeat for several.
        #[arg(long = "group-by", value_name = "FRAMEWORK")]
        group_by: Vec<String>,
        /// A pipeline format instead of the reports: junit (a case per cell × metric and
        /// one for the run's status), sarif (SARIF 2.1.0: a result per successful
        /// attack, injection hit or leak, rule ids from the threat taxonomy) or
        /// github-summary (Markdown for $GITHUB_STEP_SUMMARY). Written to stdout, or
        /// --out.
        #[arg(long, value_enum, value_name = "FORMAT")]
        format: Option<ci_cmd::ReportFormat>,
        /// With --format: write to FILE instead of stdout.
        #[arg(long, value_name = "FILE", requires = "format")]
        out: Option<PathBuf>,
        /// With --format sarif: the run's config file (it must be the run's), so results
        /// point at the target's line in it and at rows of its local dataset files.
        #[arg(long, value_name = "FILE", requires = "format")]
        config: Option<PathBuf>,
    },
    /// Gate a finished run for CI: threshold rules over its leaderboard rows, with the
    /// bound stated (`asr[target=bot] <= 0.05 by ci_low`), and regression rules against a
    /// baseline run by the paired test (`asr no regression at alpha=0.05`). Exit 0 every
    /// rule passed, 1 a rule failed, 2 bad input (a partial or unverified run, provenance
    /// that differs from the baseline, a rule that selects nothing).
    Gate(ci_cmd::GateArgs),
    /// Serve the dashboard over run directories (read-only): per-surface leaderboards,
    /// run pages with charts, a transcript browser, compare, live runs.
    Serve(browse_cmd::ServeArgs),
    /// Re-judge a finished run's stored transcripts with two or more judges (no target
    /// calls) and report, per behavior, each judge's rate and each pair's raw agreement
    /// and Cohen's κ with a 95% CI; writes RUN_DIR/judge_agreement.json.
    JudgeAgreement(analysis_cmd::AgreementArgs),
    /// Re-judge a finished run with another judge into a new results set (results.json,
    /// leaderboard.json, report.md/html) with provenance; no target calls.
    Rescore(analysis_cmd::RescoreArgs),
    /// Merge the shard directories of `run --shard i/N` (or `exam` / `exam-detect
    /// --shard i/N`) into one directory, byte-identical to a one-machine run's
    /// (sessions.jsonl aside).
    Merge(merge_cmd::MergeArgs),
    /// Read results another harness wrote into a run directory that report, the
    /// dashboard and compare read (`import agentdojo LOGDIR --out RUN_DIR`).
    Import {
        #[command(subcommand)]
        what: import_cmd::ImportWhat,
    },
    /// Paired comparison of two runs over shared behaviors: exact McNemar for rates,
    /// paired bootstrap CIs for scores; writes compare.json.
    Compare(analysis_cmd::CompareArgs),
    /// Score judges against human-labelled replies (XSTest completion CSVs as they are,
    /// or prompt,reply,label files): confusion matrix, accuracy, Cohen's κ, refusal
    /// sensitivity and specificity with intervals, per source; judge_eval.json, report.md
    /// and optionally a judge card for runs to correct their rates with.
    JudgeEval(judge_eval_cmd::JudgeEvalArgs),
    /// Label a seeded sample of a run's own replies (uncertain verdicts first) through a
    /// CSV round trip; writes labels.jsonl, a judge card per target × judge
    /// (label_cards.json) and the run's results and reports with each target's rates
    /// corrected by its own card. Without --csv-out/--csv-in: where labelling stands.
    Label(label_cmd::LabelArgs),
    /// Pin or verify an agent-exam scenario corpus (mallcop-compatible corpus.pin).
    Corpus {
        #[command(subcommand)]
        action: CorpusAction,
    },
    /// Agent exam: run the security-triage cascade over a pinned scenario corpus.
    Exam(exam_cmd::ExamArgs),
    /// Detect exam: the reference detector fleet (+ external detectors) graded against
    /// the labelled scenario corpus; recall, precision and a coverage matrix.
    ExamDetect(detect_cmd::Args),
    /// Scan MCP servers (stdio `-- CMD ARGS…`, `--url URL`, or a servers file) for
    /// poisoned tool definitions, shadowing, name collisions, excessive capability and,
    /// with --pin, rug pulls. Exit 0 clean, 1 findings, 2 could not scan.
    McpScan(mcp_cmd::ScanArgs),
    /// Serve an MCP server from a definition file (tools with descriptions, scripted
    /// results, rug-pull definitions) over stdio or --http PORT, recording calls.
    McpServe(mcp_cmd::ServeArgs),
}

#[derive(Subcommand)]
enum CorpusAction {
    /// Write or update DIR/corpus.pin from the scenario files, printing what changed.
    Pin { dir: PathBuf },
    /// Check DIR against its corpus.pin and parse every scenario; exit 2 on any failure.
    Verify { dir: PathBuf },
}

fn main() -> ExitCode {
    memory::no_transparent_huge_pages();
    let cli = Cli::parse();
    // What a waiting call must say (a server's Retry-After beyond the cap).
    gauntlet_models::transport::on_notice(|m| {
        eprintln!("{}", gauntlet_core::terminal::safe_text(m));
    });
    if matches!(cli.command, Command::Run { .. } | Command::Merge(_)) {
        memory::prompt_purge();
    }
    error::exit(dispatch(cli.command))
}

/// Runs the command.
fn dispatch(command: Command) -> Result<(), CliError> {
    match command {
        Command::Run {
            config,
            runs_dir,
            concurrency,
            quiet,
            estimate: true,
            trials,
            batch,
            shard,
        } => {
            let _ = (runs_dir, concurrency, quiet, shard);
            estimate(&config, trials, batch)
        }
        Command::Run {
            config,
            runs_dir,
            concurrency,
            quiet,
            estimate: false,
            trials,
            batch,
            shard,
        } => run(&config, runs_dir, concurrency, quiet, trials, batch, shard),
        Command::Validate { config, strict } => validate(&config, strict),
        Command::List { rules } => {
            if rules {
                browse_cmd::list_rules()?;
            } else {
                list()?;
            }
            Ok(())
        }
        Command::Report {
            paths,
            site: None,
            group_by,
            format: Some(format),
            out,
            config,
        } => match paths.as_slice() {
            [run_dir] if group_by.is_empty() => {
                ci_cmd::report_format(run_dir, format, out.as_deref(), config.as_deref())
            }
            [_] => Err(CliError::invalid(
                "--group-by applies to report.md and report.html, not to --format",
            )),
            _ => Err(CliError::invalid("report --format takes one RUN_DIR")),
        },
        Command::Report {
            paths,
            site: None,
            group_by,
            ..
        } => match paths.as_slice() {
            [run_dir] => report(run_dir, &group_by),
            _ => Err(CliError::invalid(
                "report takes one RUN_DIR (or --site OUT with several)",
            )),
        },
        Command::Report {
            paths,
            site: Some(out),
            group_by,
            format,
            ..
        } => {
            if format.is_some() {
                return Err(CliError::invalid(
                    "--format applies to one run, not to --site",
                ));
            }
            if !group_by.is_empty() {
                return Err(CliError::invalid(
                    "--group-by applies to one run's report, not to --site",
                ));
            }
            site(&out, paths)
        }
        Command::Serve(a) => serve(a),
        Command::Gate(a) => ci_cmd::gate_cmd(a),
        Command::JudgeAgreement(a) => analysis_cmd::judge_agreement(a),
        Command::Rescore(a) => analysis_cmd::rescore_cmd(a),
        Command::Merge(a) => merge_cmd::merge(a),
        Command::Import { what } => import_cmd::import(what),
        Command::Compare(a) => analysis_cmd::compare(a),
        Command::JudgeEval(a) => judge_eval_cmd::judge_eval(a),
        Command::Label(a) => label_cmd::label(a),
        Command::Corpus {
            action: CorpusAction::Pin { dir },
        } => corpus_pin(&dir),
        Command::Corpus {
            action: CorpusAction::Verify { dir },
        } => corpus_verify(&dir),
        Command::Exam(a) => exam_cmd::exam(a),
        Command::ExamDetect(a) => detect_cmd::run(a),
        Command::McpScan(a) => mcp_cmd::scan(a),
        Command::McpServe(a) => mcp_cmd::serve(a),
    }
}
