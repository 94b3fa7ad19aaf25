//! `gauntlet label RUN_DIR`: label a seeded sample of a run's own replies, and correct
//! each target's rates with the judge card measured from them
//! (`gauntlet_engine::labels`).

use crate::error::CliError;
use clap::Args;
use gauntlet_core::terminal::safe_text as safe;
use gauntlet_engine::labels::{DEFAULT_PER_TARGET, LabelCards, LabelSession};
use std::path::PathBuf;

/// `gauntlet label`.
#[derive(Args)]
pub(crate) struct LabelArgs {
    /// The run directory (runs/<run_name>).
    pub run_dir: PathBuf,
    /// Write the sample as CSV (id,target,prompt,reply,label) for labelling elsewhere;
    /// fill `label` with refusal, compliance or skip (r, c, s) and read it back with
    /// --csv-in. The judges' verdicts are not in it.
    #[arg(long, value_name = "FILE", conflicts_with = "csv_in")]
    pub csv_out: Option<PathBuf>,
    /// With --csv-out: also the replies labelled already (with their labels).
    #[arg(long, requires = "csv_out")]
    pub all: bool,
    /// Read labels back from a CSV written by --csv-out, then write the cards and the
    /// corrected results and reports.
    #[arg(long, value_name = "FILE")]
    pub csv_in: Option<PathBuf>,
    /// Replies drawn per target (uncertain verdicts first, then a proportional
    /// allocation over the refusal and compliance verdicts).
    #[arg(long, default_value_t = DEFAULT_PER_TARGET as u64, value_parser = clap::value_parser!(u64).range(1..=100_000))]
    pub per_target: u64,
    /// The sample's seed (default: the run's seed).
    #[arg(long)]
    pub seed: Option<u64>,
    /// The directory of the original config, for runs whose datasets use relative paths.
    #[arg(long)]
    pub config_dir: Option<PathBuf>,
    /// Serve the labelling page in the dashboard (over the run's parent directory):
    /// one reply at a time, keys r / c / s / b, each label saved at once.
    #[arg(long, conflicts_with_all = ["csv_out", "csv_in"])]
    pub serve: bool,
    /// With --serve: the address to listen on. Loopback by default; another address
    /// needs --allow-remote and a token in GAUNTLET_WEB_TOKEN.
    #[arg(long, default_value = "127.0.0.1:8765", requires = "serve")]
    pub bind: std::net::SocketAddr,
    /// With --serve: allow a non-loopback --bind (the token is then required).
    #[arg(long, requires = "serve")]
    pub allow_remote: bool,
}

pub(crate) fn label(a: LabelArgs) -> Result<(), CliError> {
    let serve = a.serve.then(|| gauntlet_web::ServeOptions {
        roots: vec![],
        bind: a.bind,
        allow_remote: a.allow_remote,
        token: std::env::var(gauntlet_web::server::TOKEN_ENV)
            .ok()
            .filter(|t| !t.is_empty()),
    });
    if let Some(o) = &serve {
        // Before the sample is drawn: a bad address is the user's to fix first.
        gauntlet_web::server::check_bind(o).map_err(CliError::invalid)?;
    }
    let mut s = LabelSession::open(
        &a.run_dir,
        a.config_dir.as_deref(),
        a.per_target as usize,
        a.seed,
    )
    .map_err(CliError::invalid)?;
    let shown = |p: &std::path::Path| safe(&p.display().to_string()).into_owned();
    if serve.is_some() || a.csv_in.is_some() {
        // Both save into the run directory: refused before any label is taken.
        s.check_writable().map_err(CliError::invalid)?;
    } else if let Some(e) = s.read_only() {
        eprintln!(
            "note: {} cannot be written ({e}): shown without writing; labelling it needs a writable copy",
            shown(&a.run_dir)
        );
    }
    if let Some(o) = serve {
        let cards = s.cards().map_err(CliError::failed)?;
        print_status(&s, &cards)?;
        return gauntlet_web::server::serve_labelling(
            o,
            crate::dashboard_engine::recount(),
            Box::new(crate::dashboard_engine::Labels(s)),
        )
        .map_err(crate::browse_cmd::serve_error);
    }
    if let Some(out) = &a.csv_out {
        let n = s.write_csv(out, !a.all).map_err(CliError::failed)?;
        let p = s.progress();
        outln!(
            "wrote {n} replies to label to {} ({} of the sample of {} labelled already); fill the label column with refusal, compliance or skip, then: gauntlet label {} --csv-in {}",
            shown(out),
            p.done,
            p.sample,
            shown(&a.run_dir),
            shown(out)
        )?;
        return Ok(());
    }
    if let Some(inp) = &a.csv_in {
        let n = s.read_csv(inp).map_err(CliError::invalid)?;
        let cards = s.save().map_err(CliError::failed)?;
        outln!("read {n} labels from {}", shown(inp))?;
        print_status(&s, &cards)?;
        outln!(
            "written: labels.jsonl, label_cards.json, results.json and the reports (corrected with each target's card) in {}",
            shown(&a.run_dir)
        )?;
        return Ok(());
    }
    let cards = s.cards().map_err(CliError::failed)?;
    print_status(&s, &cards)?;
    Ok(())
}

/// The progress line and one line per card, with how many more labels would halve its
/// corrected interval.
fn print_status(s: &LabelSession, cards: &LabelCards) -> Result<(), CliError> {
    for line in s.status_lines(cards) {
        outln!("{}", safe(&line))?;
    }
    Ok(())
}
