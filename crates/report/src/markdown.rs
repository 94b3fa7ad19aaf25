//! The Markdown report, written directly from the [`ReportView`].
//!
//! Every string of a [`RunSummary`](gauntlet_results::RunSummary) is untrusted and
//! reaches the output only through [`crate::md_escape`]: [`inline`] for single-line
//! slots, [`block_quote`] for prompts and replies.

use std::fmt::Write as _;

use crate::breadth::BreadthView;
use crate::md_escape::{block_quote, inline};
use crate::view::{CellView, ExampleView, ReportView};

pub(crate) fn render(view: &ReportView, breadth: &BreadthView) -> String {
    let mut o = String::new();
    header(&mut o, view);
    if view.cells.is_empty() {
        o.push_str("_This run has no cells._\n\n");
    }
    for cell in &view.cells {
        cell_section(&mut o, cell);
    }
    crate::breadth::markdown(&mut o, breadth);
    closing_notes(&mut o, view.multi);
    o
}

fn header(o: &mut String, v: &ReportView) {
    let _ = writeln!(o, "# gauntlet report: {}\n", inline(&v.run_name));
    if let Some(n) = &v.notice {
        let _ = writeln!(o, "> **⚠ {}**\n", inline(n));
    }
    if v.failed {
        let _ = writeln!(
            o,
            "> **⚠ FAILED RUN — the run measured too little — status: {}.** Every \
             planned unit ran, but too many attempts ended in an error for the numbers \
             below to be read as results.\n",
            inline(&v.status)
        );
    } else if v.partial {
        let _ = writeln!(
            o,
            "> **⚠ PARTIAL RUN — status: {}.** Not every planned attempt finished: the \
             numbers below cover only the work that completed and are not comparable \
             with a complete run.\n",
            inline(&v.status)
        );
    }
    let status = if v.partial {
        format!("**⚠ {}**", inline(&v.status))
    } else {
        inline(&v.status)
    };
    let _ = writeln!(o, "- **Run name:** {}", inline(&v.run_name));
    let _ = writeln!(o, "- **Run id:** {}", inline(&v.run_id));
    let _ = writeln!(o, "- **Status:** {status}");
    let _ = writeln!(o, "- **Harness version:** {}", inline(&v.harness_version));
    let _ = writeln!(o, "- **Config hash:** {}", inline(&v.config_hash));
    let _ = writeln!(o, "- **Seed:** {}", inline(&v.seed));
    if v.multi {
        let _ = writeln!(o, "- **Mode:** {}", inline(&v.mode));
        let _ = writeln!(
            o,
            "- **Trials:** {} (seeds: {})\n",
            v.trials,
            inline(&v.trial_seeds)
        );
    } else {
        let _ = writeln!(o, "- **Mode:** {}\n", inline(&v.mode));
    }
    if let Some(e) = &v.errors {
        let _ = writeln!(
            o,
            "**Errors:** {}; distinct errors, most frequent first:\n",
            e.line
        );
        for d in &e.distinct {
            let _ = writeln!(
                o,
                "- {} × {} (first in {})",
                d.count,
                inline(&d.message),
                inline(&d.first_cell)
            );
        }
        o.push('\n');
    }
}

fn cell_section(o: &mut String, c: &CellView) {
    let _ = writeln!(o, "## {}\n", inline(&c.title));
    let _ = writeln!(
        o,
        "**Dataset:** {} · **dataset version:** {} · **judge:** {}\n",
        inline(&c.dataset),
        inline(&c.dataset_version),
        inline(&c.judge)
    );
    if !c.judge_measures.is_empty() {
        let _ = writeln!(
            o,
            "**A success under this judge means:** {}\n",
            inline(&c.judge_measures)
        );
    }
    let _ = writeln!(
        o,
        "**Behaviors:** {} · **attempts:** {} · **errors:** {} · \
         **behaviors with every attempt errored:** {}\n",
        c.behaviors, c.attempts, c.errors, c.behaviors_all_errors
    );
    if !c.trials.is_empty() {
        let _ = writeln!(
            o,
            "**Trials:** {} (the counts above sum every trial)\n",
            c.trials.len()
        );
        for t in &c.trials {
            let _ = writeln!(
                o,
                "- trial {}: behaviors {} · attempts {} · errors {} · behaviors with every attempt errored {}",
                t.trial, t.behaviors, t.attempts, t.errors, t.behaviors_all_errors
            );
        }
        o.push('\n');
    }
    if !c.warnings.is_empty() {
        o.push_str("> **⚠ Check before trusting these numbers:**\n");
        for w in &c.warnings {
            let _ = writeln!(
                o,
                "> - `{}`: {} (evidence: {}; threshold: {})",
                inline(&w.kind),
                inline(&w.message),
                inline(&w.evidence),
                inline(&w.threshold)
            );
        }
        o.push('\n');
    }
    if c.errors > 0 {
        let (noun, verb) = if c.errors == 1 {
            ("attempt", "is")
        } else {
            ("attempts", "are")
        };
        let _ = writeln!(
            o,
            "> **⚠ {} of {} {noun} errored and {verb} excluded from all rates.**\n",
            c.errors, c.attempts
        );
        if !c.top_errors.is_empty() {
            o.push_str("Most frequent errors:\n\n");
            for e in &c.top_errors {
                let _ = writeln!(o, "- {} × {}", e.count, inline(&e.message));
            }
            o.push('\n');
        }
    }
    if !c.categories.is_empty() {
        let named: Vec<String> = c
            .categories
            .iter()
            .map(|k| format!("{} × {}", inline(&k.label), k.count))
            .collect();
        let _ = writeln!(
            o,
            "Hazard categories the judge named (attempts): {}\n",
            named.join("; ")
        );
    }
    if c.metrics.is_empty() {
        o.push_str("_No metrics for this cell._\n\n");
    } else if !c.trials.is_empty() {
        o.push_str(
            "| metric | mean over trials | 95% CI across trials | n | N/A trials | per trial: value [95% CI] |\n",
        );
        o.push_str("|---|---:|---|---:|---:|---|\n");
        for m in &c.metrics {
            let _ = writeln!(
                o,
                "| {} | {} | {} | {} | {} | {} |",
                inline(&m.label),
                inline(&m.value),
                m.ci,
                m.n,
                m.trials_na,
                inline(&m.per_trial_line())
            );
        }
        o.push('\n');
    } else {
        o.push_str("| metric | value | 95% CI | interval | n |\n");
        o.push_str("|---|---:|---|---|---:|\n");
        for m in &c.metrics {
            let _ = writeln!(
                o,
                "| {} | {} | {} | {} | {} |",
                inline(&m.label),
                inline(&m.value),
                // Built only from formatted floats and `—`: nothing untrusted to escape.
                m.ci,
                m.ci_method,
                m.n
            );
        }
        o.push('\n');
    }
    if !c.undecided.is_empty() {
        o.push_str("The judge abstained (`uncertain`) on some replies: each rate above is over the decided behaviors only, and the undecided ones await a label.\n\n");
        for u in &c.undecided {
            let _ = writeln!(o, "- {}", inline(u));
        }
        o.push('\n');
    }
    if !c.corrected.is_empty() {
        let _ = writeln!(
            o,
            "Corrected for the judge's measured errors (Rogan–Gladen, judge card {}; the raw values above stay the headline):\n",
            inline(&c.corrected[0].card)
        );
        for k in &c.corrected {
            let _ = writeln!(
                o,
                "- {} corrected: {} {}",
                inline(&k.label),
                inline(&k.value),
                k.ci
            );
        }
        o.push('\n');
    }
    o.push_str("### Examples\n\n");
    if c.examples.is_empty() {
        o.push_str("_No examples recorded._\n\n");
    }
    for (i, e) in c.examples.iter().enumerate() {
        example(o, i + 1, e);
    }
}

fn example(o: &mut String, number: usize, e: &ExampleView) {
    let trial = e.trial.map_or(String::new(), |t| format!("trial: {t} · "));
    let _ = writeln!(
        o,
        "**Example {number}** — {trial}behavior: {} · expected: {} · outcome: {}\n",
        inline(&e.behavior_id),
        inline(&e.expected),
        inline(&e.outcome)
    );
    o.push_str("Prompt:\n\n");
    o.push_str(&block_quote(&e.prompt));
    o.push_str("\nReply:\n\n");
    o.push_str(&block_quote(&e.reply));
    o.push('\n');
}

fn closing_notes(o: &mut String, multi: bool) {
    o.push_str(
        "## Notes\n\n\
         - Rates exclude errored attempts (target failures, empty replies, grader \
         failures); behaviors whose every attempt errored are excluded entirely.\n\
         - N/A means the metric does not apply to the cell; it is never 0.\n\
         - 95% intervals: rates (a share of behaviors) carry Wilson score intervals; \
         continuous scores carry percentile bootstrap intervals over 1000 resamples of \
         behaviors, seeded from the run seed; the interval column says which; — means \
         no interval.\n\
         - Under `refusal_match` a success means the reply did not decline: an \
         off-topic or useless reply counts. Use a harm-aware judge (`rubric`, \
         `strongreject`) to count harmful answers.\n\
         - Prompts and replies are untrusted model or dataset text, shown escaped and \
         truncated to 400 characters.\n",
    );
    if multi {
        o.push_str(
            "- Trials are independent repetitions of the whole run, each under its own seed. \
             A cell's value is the mean of its trials' values; trials where the metric is \
             N/A are left out of the mean and counted under N/A trials. Its 95% CI is the \
             Student-t interval across trials, mean ± t(0.975, k−1)·s/√k over the k trials \
             with a value, clipped to the values the metric can take (— when k < 2); each \
             trial's own value keeps its own interval (Wilson for rates, bootstrap for scores).\n",
        );
    }
}
