//! The agent exam's report.md and report.html, rendered from its report.json, are the
//! bytes the exam wrote: `tests/exam/` holds `report.json`, `report.md` and
//! `report.html` of `gauntlet exam --mode real -n 2` with the offline `reference`
//! target over three scenarios of the reference corpus (a floor-routed, a resolved and
//! an escalated one), written by the build before the renderer moved here. The
//! fail-safe runs, the usage rows, the warnings and the failure table are all in them.

use gauntlet_results::exam::HarnessReport;
use std::path::PathBuf;

fn fixture(name: &str) -> String {
    let p = PathBuf::from(env!("CARGO_MANIFEST_DIR"))
        .join("tests/exam")
        .join(name);
    std::fs::read_to_string(&p).unwrap_or_else(|e| panic!("{}: {e}", p.display()))
}

fn report() -> HarnessReport {
    serde_json::from_str(&fixture("report.json")).expect("report.json reads")
}

#[test]
fn an_exams_report_md_is_what_the_exam_wrote() {
    let md = gauntlet_report::exam::render_markdown(&report());
    assert!(md.contains("Failures (worst pass)"), "{md}");
    assert_eq!(md, fixture("report.md"));
}

#[test]
fn an_exams_report_html_is_what_the_exam_wrote() {
    assert_eq!(
        gauntlet_report::exam::render_html(&report()),
        fixture("report.html")
    );
}

/// An end-to-end exam's report (the `exam-e2e` fixture of gauntlet-results with one rate
/// made N/A and one count of the wrong type): its detect-fidelity rows, rendered as the
/// renderer did when it read the block field by field.
fn e2e_report() -> HarnessReport {
    serde_json::from_str(&fixture("e2e-report.json")).expect("e2e-report.json reads")
}

#[test]
fn an_end_to_end_exams_fidelity_rows_are_what_the_renderer_wrote() {
    let md = gauntlet_report::exam::render_markdown(&e2e_report());
    assert!(
        md.contains("| e2e precision | N/A (no benign row was graded) |"),
        "{md}"
    );
    assert_eq!(md, fixture("e2e-report.md"));
    assert_eq!(
        gauntlet_report::exam::render_html(&e2e_report()),
        fixture("e2e-report.html")
    );
}
