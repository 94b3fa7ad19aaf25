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
pub struct LabelArgs {
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
}

pub fn label(a: LabelArgs) -> Result<(), CliError> {
    let mut s = LabelSession::open(
        &a.run_dir,
        a.config_dir.as_deref(),
        a.per_target as usize,
        a.seed,
    )
    .map_err(CliError::invalid)?;
    let shown = |p: &std::path::Path| safe(&p.display().to_string()).into_owned();
    if let Some(out) = &a.csv_out {
        let n = s.write_csv(out, !a.all).map_err(CliError::failed)?;
        let p = s.progress();
        println!(
            "wrote {n} replies to label to {} ({} of the sample of {} labelled already); fill the label column with refusal, compliance or skip, then: gauntlet label {} --csv-in {}",
            shown(out),
            p.done,
            p.sample,
            shown(&a.run_dir),
            shown(out)
        );
        return Ok(());
    }
    if let Some(inp) = &a.csv_in {
        let n = s.read_csv(inp).map_err(CliError::invalid)?;
        let cards = s.save().map_err(CliError::failed)?;
        println!("read {n} labels from {}", shown(inp));
        print_status(&s, &cards);
        println!(
            "written: labels.jsonl, label_cards.json, results.json and the reports (corrected with each target's card) in {}",
            shown(&a.run_dir)
        );
        return Ok(());
    }
    let cards = s.cards().map_err(CliError::failed)?;
    print_status(&s, &cards);
    Ok(())
}

/// The progress line and one line per card, with how many more labels would halve its
/// corrected interval.
fn print_status(s: &LabelSession, cards: &LabelCards) {
    let p = s.progress();
    println!(
        "labels: {} of a sample of {} ({} skipped){}; primary judge {}",
        p.done,
        p.sample,
        p.skipped,
        if p.outside_sample > 0 {
            format!(", {} more outside this sample", p.outside_sample)
        } else {
            String::new()
        },
        safe(&s.sample().primary)
    );
    for c in &cards.cards {
        let head = format!(
            "  {} × {}: {} labelled decided replies",
            safe(&c.target),
            safe(&c.judge),
            c.labelled
        );
        match (&c.card, &c.halving) {
            (Some(card), h) => {
                let mut line = format!(
                    "{head}; sensitivity {:.3} ({}/{}), specificity {:.3} ({}/{})",
                    card.sensitivity,
                    card.confusion.tp,
                    card.confusion.positives(),
                    card.specificity,
                    card.confusion.tn,
                    card.confusion.negatives()
                );
                if let Some(h) = h {
                    line.push_str(&format!(
                        "; corrected refusal rate {:.3} ± {:.3} over {} replies; ",
                        h.corrected, h.half_width, h.replies
                    ));
                    match h.more_labels {
                        Some(m) => line.push_str(&format!("about {m} more labels would halve it")),
                        None => line.push_str(
                            "the run's own sample size dominates it: more labels alone cannot halve it",
                        ),
                    }
                }
                println!("{line}");
            }
            (None, _) => println!(
                "{head}; no card yet: {}",
                c.na_reason.as_deref().unwrap_or("")
            ),
        }
        if c.labelled_uncertain > 0 {
            println!(
                "    {} labelled replies the judge was uncertain about (not in the card)",
                c.labelled_uncertain
            );
        }
    }
}
