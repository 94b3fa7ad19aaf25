//! The Markdown report of `gauntlet judge-eval`: per judge the agreement table (overall
//! and per source), the rules that decided, and the replies it got wrong listed first.
//! Prompts and replies are untrusted text: escaped with the run report's helpers.

use crate::md_escape::{block_quote, inline};
use crate::view::truncate_chars;
use gauntlet_core::judge_eval::{AgreementStats, JudgeEvalReport, JudgeResult, Proportion};
use std::fmt::Write as _;

/// Misclassified replies listed per judge (all of them are in judge_eval.json).
pub(crate) const MISCLASSIFIED_LISTED: usize = 25;
/// Characters of a listed prompt or reply.
const EXCERPT_CHARS: usize = 400;

fn prop(p: &Proportion) -> String {
    match (p.value, p.ci_low, p.ci_high) {
        (Some(v), Some(lo), Some(hi)) => format!("{v:.3} [{lo:.3}, {hi:.3}]"),
        _ => "N/A".into(),
    }
}

fn kappa(s: &AgreementStats) -> String {
    match (s.kappa.value, s.kappa.ci_low, s.kappa.ci_high) {
        (Some(k), Some(lo), Some(hi)) => format!("{k:.3} [{lo:.3}, {hi:.3}]"),
        (Some(k), _, _) => format!("{k:.3}"),
        _ => "N/A".into(),
    }
}

fn row(o: &mut String, name: &str, s: &AgreementStats) {
    let c = &s.confusion;
    let _ = writeln!(
        o,
        "| {} | {} | {} | {} | {} | {} | {} / {} / {} / {} |",
        inline(name),
        s.n,
        prop(&s.accuracy),
        kappa(s),
        prop(&s.sensitivity),
        prop(&s.specificity),
        c.tp,
        c.fn_,
        c.fp,
        c.tn
    );
}

/// The judge-eval report as Markdown.
pub(crate) fn render(r: &JudgeEvalReport) -> String {
    let mut o = String::new();
    let s = &r.labelled_set;
    let _ = writeln!(o, "# Judge evaluation: {}\n", inline(&s.name));
    let _ = writeln!(
        o,
        "Labelled set `{}` (sha256 {}): {} replies — {} refusals, {} partial refusals (counted as {}), {} compliances. Status: {}. gauntlet {}.\n",
        inline(&s.name),
        inline(&s.sha256),
        s.rows,
        s.refusals,
        s.partial_refusals,
        inline(&s.partial_as),
        s.compliances,
        inline(&r.status),
        inline(&r.harness_version),
    );
    o.push_str("| file | sha256 | rows | shape |\n|---|---|---:|---|\n");
    for f in &s.files {
        let _ = writeln!(
            o,
            "| {} | {} | {} | {} |",
            inline(&f.name),
            inline(&f.sha256),
            f.rows,
            inline(&f.shape)
        );
    }
    let skipped: u64 = s.files.iter().map(|f| f.skipped).sum();
    if skipped > 0 {
        let _ = writeln!(
            o,
            "\n{skipped} rows labelled `skip` (seen, not labelled) are left out of the rows above and of every figure."
        );
    }
    o.push_str("\n## Summary\n\n");
    o.push_str(HEADER);
    for j in &r.judges {
        row(&mut o, &j.judge, &j.overall);
    }
    o.push('\n');
    o.push_str("## Coverage\n\nA judge may abstain (`uncertain`) instead of guessing; the agreement figures above are over the replies it decided.\n\n");
    o.push_str("| judge | decided | uncertain | coverage | Cohen's κ on decided |\n|---|---:|---:|---:|---|\n");
    for j in &r.judges {
        let _ = writeln!(
            o,
            "| {} | {} | {} | {} | {} |",
            inline(&j.judge),
            j.judged,
            j.uncertain,
            j.coverage().map_or("N/A".into(), |c| format!("{c:.3}")),
            kappa(&j.overall)
        );
    }
    o.push('\n');
    for j in &r.judges {
        judge_section(&mut o, j);
    }
    o.push_str("## Method\n\n");
    for m in &r.method {
        let _ = writeln!(o, "- {}", inline(m));
    }
    let g = &r.grader_calls;
    let _ = writeln!(
        o,
        "\nGrader calls: {} made, {} from the journal, {} failed.",
        g.made, g.cached, g.failed
    );
    o
}

const HEADER: &str = "| judge | n | accuracy | Cohen's κ | sensitivity | specificity | tp / fn / fp / tn |\n|---|---:|---|---|---|---|---|\n";

fn judge_section(o: &mut String, j: &JudgeResult) {
    let _ = writeln!(o, "## {}\n", inline(&j.judge));
    let _ = writeln!(
        o,
        "Spec sha256 {}; {} replies judged, {} errors (excluded), {} uncertain (excluded; coverage {}).\n",
        inline(&j.spec_sha256),
        j.judged,
        j.errors,
        j.uncertain,
        j.coverage().map_or("N/A".into(), |c| format!("{c:.3}")),
    );
    if !j.uncertain_by_source.is_empty() {
        o.push_str("Coverage per source:");
        for (source, s) in &j.by_source {
            let u = j.uncertain_by_source.get(source).copied().unwrap_or(0);
            let _ = write!(
                o,
                " {} {} ({} uncertain);",
                inline(source),
                gauntlet_core::judge_eval::coverage(s.n, u)
                    .map_or("N/A".into(), |c| format!("{c:.3}")),
                u
            );
        }
        o.push_str("\n\n");
    }
    if !j.misclassified.is_empty() {
        let _ = writeln!(
            o,
            "### Misclassified replies ({} of {}; all in judge_eval.json)\n",
            j.misclassified.len().min(MISCLASSIFIED_LISTED),
            j.misclassified.len()
        );
        for (i, m) in j
            .misclassified
            .iter()
            .take(MISCLASSIFIED_LISTED)
            .enumerate()
        {
            let _ = writeln!(
                o,
                "{}. **{}** `{}` row {} — human: {}, judge: {} ({})\n",
                i + 1,
                inline(&m.source),
                inline(&m.id),
                m.row,
                inline(&m.human),
                inline(&m.judge),
                inline(&m.reason)
            );
            let _ = writeln!(
                o,
                "{}\n",
                block_quote(&format!(
                    "Prompt: {}",
                    truncate_chars(&m.prompt, EXCERPT_CHARS)
                ))
            );
            let _ = writeln!(
                o,
                "{}\n",
                block_quote(&format!(
                    "Reply: {}",
                    truncate_chars(&m.reply, EXCERPT_CHARS)
                ))
            );
        }
    }
    o.push_str("### Per source\n\n");
    o.push_str(HEADER);
    row(o, "all", &j.overall);
    for (source, s) in &j.by_source {
        row(o, source, s);
    }
    o.push('\n');
    if !j.band_curve.is_empty() {
        o.push_str("### Kappa–coverage curve

What this judge would decide, and how well, were its abstention band (the distance from the threshold inside which it says `uncertain`) each of these; computed from the refusal probabilities its verdicts recorded.

");
        o.push_str("| band | decided | uncertain | coverage | Cohen's κ on decided | sensitivity | specificity |
|---:|---:|---:|---:|---|---|---|
");
        for p in &j.band_curve {
            let _ = writeln!(
                o,
                "| {:.2} | {} | {} | {} | {} | {} | {} |",
                p.band,
                p.decided,
                p.uncertain,
                p.coverage.map_or("N/A".into(), |c| format!("{c:.3}")),
                kappa(&p.agreement),
                prop(&p.agreement.sensitivity),
                prop(&p.agreement.specificity),
            );
        }
        o.push('\n');
    }
    if !j.by_rule.is_empty() {
        o.push_str("### Deciding rules\n\n| rule | decided | wrong |\n|---|---:|---:|\n");
        for (rule, c) in &j.by_rule {
            let _ = writeln!(o, "| {} | {} | {} |", inline(rule), c.decided, c.wrong);
        }
        o.push('\n');
    }
    if !j.errored.is_empty() {
        o.push_str("### Errors (first listed)\n\n");
        for e in &j.errored {
            let _ = writeln!(
                o,
                "- {} `{}`: {}",
                inline(&e.source),
                inline(&e.id),
                inline(&e.error)
            );
        }
        o.push('\n');
    }
}
