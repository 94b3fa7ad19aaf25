//! The detect exam's human summary (`exam-detect` on stdout, report.txt): the verdict
//! first, then what needs attention (missed attacks, false alarms, detector errors),
//! then recall and precision with their Wilson intervals and the coverage of each
//! detector family. Plain text; the CLI escapes it for the terminal. Also the one
//! writer of the detect exam's artefacts (a one-machine exam, a shard and a merge).

use gauntlet_results::detect::{DetectReport, RowStatus};
use std::path::Path;

/// The report in `--json` form, written by `--out` and by the merge of shards.
pub const REPORT_JSON: &str = "report.json";
/// The full human summary (recall view, every row).
pub const REPORT_TXT: &str = "report.txt";

/// Writes the detect exam's artefacts into `out` ([`REPORT_JSON`], then [`REPORT_TXT`]),
/// each atomically; the error names the file.
pub fn write_report_files(out: &Path, report: &DetectReport) -> std::io::Result<()> {
    let mut json = serde_json::to_vec_pretty(report)
        .map_err(|e| std::io::Error::other(format!("could not encode the report: {e}")))?;
    json.push(b'\n');
    gauntlet_core::atomic::write_atomic_named(&out.join(REPORT_JSON), &json)?;
    gauntlet_core::atomic::write_atomic_named(
        &out.join(REPORT_TXT),
        render(report, true, true).as_bytes(),
    )
}

fn pct(x: f64) -> String {
    format!("{:.1}%", x * 100.0)
}

fn list(v: &[String]) -> String {
    v.join(", ")
}

/// The human summary: verdict first, then what needs attention, then coverage.
pub fn render(r: &DetectReport, recall_view: bool, all_rows: bool) -> String {
    use std::fmt::Write;
    let mut o = String::new();
    let t = &r.totals;
    let externals = r.detector_health.iter().filter(|h| h.external).count();
    let _ = writeln!(
        o,
        "DETECT EXAM  {}  {} pinned (sha256 {}…){}  ·  {} detectors{}",
        r.corpus_root,
        r.corpus_count,
        &r.corpus_sha256[..r.corpus_sha256.len().min(12)],
        if r.extra_count > 0 {
            format!(" + {} unpinned", r.extra_count)
        } else {
            String::new()
        },
        r.detectors.len(),
        if externals > 0 {
            format!(" ({externals} external)")
        } else {
            String::new()
        },
    );
    let verdict = match r.exit_code() {
        0 => "PASS",
        1 => "GAPS",
        _ => "NOT CLEAN (detector errors)",
    };
    let _ = writeln!(
        o,
        "RESULT  {verdict} — {} of {} labelled rows pass · {} failed · {} reserved · {} unlabelled",
        t.passed, t.labeled, t.failed, t.reserved, t.unlabeled
    );
    let rc = &r.recall.rate;
    let pr = &r.precision.rate;
    let _ = writeln!(
        o,
        "  recall     {:>6}  ({}/{} attacks fully detected)   95% CI {}–{}",
        pct(rc.rate),
        rc.numerator,
        rc.denominator,
        pct(rc.wilson_low),
        pct(rc.wilson_high)
    );
    let _ = writeln!(
        o,
        "  precision  {:>6}  ({}/{} benign rows silent)        95% CI {}–{}",
        pct(pr.rate),
        pr.numerator,
        pr.denominator,
        pct(pr.wilson_low),
        pct(pr.wilson_high)
    );

    if recall_view {
        let _ = writeln!(o, "\nMISSED ATTACKS ({})", r.recall.missed.len());
        if r.recall.missed.is_empty() {
            let _ = writeln!(o, "  none");
        }
        for m in &r.recall.missed {
            let _ = writeln!(
                o,
                "  {:<9} {}  missing: {}",
                if m.reserved { "RESERVED" } else { "MISS" },
                m.id,
                list(&m.missing)
            );
        }
        let _ = writeln!(o, "\nFALSE ALARMS ({})", r.precision.false_alarms.len());
        if r.precision.false_alarms.is_empty() {
            let _ = writeln!(o, "  none");
        }
        for f in &r.precision.false_alarms {
            let _ = writeln!(o, "  ALARM     {}  fired: {}", f.id, list(&f.families));
        }
    }

    let attention: Vec<_> = r
        .rows
        .iter()
        .filter(|x| {
            all_rows
                || matches!(x.status, RowStatus::Fail | RowStatus::ReservedPending)
                || !x.errors.is_empty()
        })
        .collect();
    if !attention.is_empty() {
        let _ = writeln!(
            o,
            "\n{}",
            if all_rows {
                "ROWS"
            } else {
                "ROWS NEEDING ATTENTION"
            }
        );
        for x in attention {
            let mut why = Vec::new();
            if !x.missing.is_empty() {
                why.push(format!("missed {}", list(&x.missing)));
            }
            if !x.violations.is_empty() {
                why.push(format!("must-not-fire fired: {}", list(&x.violations)));
            }
            if !x.reserved_families.is_empty() {
                why.push(format!("no detector yet: {}", list(&x.reserved_families)));
            }
            for e in &x.errors {
                why.push(format!("{} {}: {}", e.detector, e.kind, e.message));
            }
            if why.is_empty() {
                why.push(format!("fired: {}", list(&x.fired)));
            }
            let origin = if x.origin == "corpus" {
                String::new()
            } else {
                format!(" [{}]", x.origin)
            };
            let _ = writeln!(
                o,
                "  {:<9} {}{origin}  {}",
                x.status.label(),
                x.id,
                why.join("; ")
            );
        }
    }

    let unhealthy: Vec<_> = r
        .detector_health
        .iter()
        .filter(|h| h.panics + h.timeouts + h.failures > 0)
        .collect();
    if !unhealthy.is_empty() {
        let _ = writeln!(o, "\nDETECTOR ERRORS");
        for h in unhealthy {
            let _ = writeln!(
                o,
                "  {:<28} {} panics · {} timeouts · {} failures · {} ok",
                h.detector, h.panics, h.timeouts, h.failures, h.ok
            );
        }
    }

    let _ = writeln!(
        o,
        "\nCOVERAGE {:<27} {:>6} {:>6} {:>6} {:>6} {:>8} {:>6}",
        "family", "attack", "benign", "missed", "alarms", "reserved", "fired"
    );
    for c in &r.coverage {
        let flag = if !c.registered {
            "  (no detector)"
        } else if c.attack_labels == 0 {
            "  (no attack label)"
        } else {
            ""
        };
        let _ = writeln!(
            o,
            "         {:<27} {:>6} {:>6} {:>6} {:>6} {:>8} {:>6}{flag}",
            c.family,
            c.attack_labels,
            c.benign_labels,
            c.missed,
            c.false_alarms,
            c.reserved,
            c.fired
        );
    }
    let _ = writeln!(
        o,
        "\n{} scenarios, {} events",
        r.totals.scenarios, r.totals.events
    );
    o
}
