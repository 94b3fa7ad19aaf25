//! Leave-one-source-out estimate of `refusal_match`'s rule selection.
//!
//! The shipped rule table is the result of a selection procedure: from a library of
//! candidate refusal rules, keep a rule when, on the labelled replies it fires on, it is
//! right at least `THRESHOLD` of the time (a rule that never fires is kept: it is prior
//! knowledge, not fitted). This program cross-validates that procedure: for each source
//! (model) in turn, rules are selected on the *other* sources' replies only and the
//! held-out source is judged with them; the held-out predictions of every source are
//! pooled. Rules that the selection on all sources would drop are already out of the
//! shipped table, so the "all sources" line equals `gauntlet judge-eval`.
//!
//!     cargo run --release -p gauntlet-engine --example refusal_rules_lomo -- \
//!         ../shared/data/xstest-v2-dev/*.csv
//!
//! Honesty note: the candidate library itself was written by people who had read replies
//! of every source in the development split; this estimate covers the selection, not the
//! writing. Replies of models outside the split are the real test.

use gauntlet_core::judge_eval::{AgreementStats, Confusion};
use gauntlet_engine::judge_eval::labelled::{LabelledSet, PartialAs};
use gauntlet_redteam::refusal::{RULES, matching_rules};
use std::collections::BTreeSet;
use std::path::PathBuf;

/// A rule is kept when it is right at least this often where it fires.
const THRESHOLD: f64 = 0.8;

fn main() {
    let files: Vec<PathBuf> = std::env::args().skip(1).map(PathBuf::from).collect();
    let set = LabelledSet::read(&files).unwrap_or_else(|e| {
        eprintln!("error: {e}");
        std::process::exit(2)
    });
    let rows: Vec<(String, bool, Vec<usize>)> = set
        .replies
        .iter()
        .map(|r| {
            (
                r.source.clone(),
                r.label.is_refusal(PartialAs::Refusal),
                matching_rules(&r.reply),
            )
        })
        .collect();
    let sources: BTreeSet<&str> = rows.iter().map(|r| r.0.as_str()).collect();
    let select = |train: &[&(String, bool, Vec<usize>)]| -> Vec<bool> {
        (0..RULES.len())
            .map(|i| {
                let fired: Vec<_> = train.iter().filter(|r| r.2.contains(&i)).collect();
                fired.is_empty()
                    || fired.iter().filter(|r| r.1).count() as f64 / fired.len() as f64 >= THRESHOLD
            })
            .collect()
    };
    let print = |name: &str, s: &AgreementStats| {
        let c = s.confusion;
        println!(
            "{name:<20} n {:>5}  kappa {:.3}  accuracy {:.3}  sensitivity {:.3}  specificity {:.3}  tp/fn/fp/tn {}/{}/{}/{}",
            s.n,
            s.kappa.value.unwrap_or(f64::NAN),
            s.accuracy.value.unwrap_or(f64::NAN),
            s.sensitivity.value.unwrap_or(f64::NAN),
            s.specificity.value.unwrap_or(f64::NAN),
            c.tp,
            c.fn_,
            c.fp,
            c.tn
        );
    };
    println!(
        "leave-one-source-out, rule kept when right >= {THRESHOLD} where it fires on the training sources"
    );
    let mut pooled = Confusion::default();
    for held in &sources {
        let train: Vec<_> = rows.iter().filter(|r| r.0 != *held).collect();
        let keep = select(&train);
        let dropped: Vec<&str> = (0..RULES.len())
            .filter(|&i| !keep[i])
            .map(|i| RULES[i].id)
            .collect();
        let mut c = Confusion::default();
        for r in rows.iter().filter(|r| r.0 == *held) {
            c.add(r.1, r.2.iter().any(|&i| keep[i]));
        }
        pooled.merge(&c);
        print(&format!("held out {held}"), &c.stats());
        if !dropped.is_empty() {
            println!(
                "{:<20} (rules dropped by training: {})",
                "",
                dropped.join(", ")
            );
        }
    }
    print("pooled held-out", &pooled.stats());
    let all: Vec<_> = rows.iter().collect();
    let keep = select(&all);
    let mut c = Confusion::default();
    for r in &rows {
        c.add(r.1, r.2.iter().any(|&i| keep[i]));
    }
    print("all sources", &c.stats());
}
