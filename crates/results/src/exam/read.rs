//! An agent exam's `report.json` as the dashboard reads it: [`ExamReportRead`], the
//! fields it shows, each one [`Loose`] or [`Shown`] so that a partial or hostile file
//! (a field missing or of another type) still shows everything else. The exam writes
//! [`HarnessReport`](super::HarnessReport); a reader that needs the whole report (the
//! dashboard's recount, the rendered report) reads that and says when it cannot.

use super::scenario::Interval;
use crate::loose::{Loose, Shown};
use serde::Deserialize;

/// `report.json` of an agent exam, leniently: what the dashboard's run list, charts
/// and scenarios page show.
#[derive(Debug, Clone, Default, Deserialize)]
#[serde(default)]
pub struct ExamReportRead {
    pub mode: Loose<String>,
    pub backend: Loose<String>,
    /// `None` when absent or `null`; any other value is shown as text.
    pub partial: Option<Shown>,
    /// `None` when absent or not a list (then the file is no agent exam's report).
    pub runs: Loose<Vec<Loose<PassRead>>>,
    pub noise_band_pp: Loose<f64>,
    pub pass_rate_ci95: Loose<Interval>,
}

impl ExamReportRead {
    /// The passes that read as passes (an element that is not an object is skipped).
    pub fn passes(&self) -> impl Iterator<Item = &PassRead> {
        self.runs.get().into_iter().flatten().filter_map(Loose::get)
    }
}

/// One pass of the report (`runs[i]`).
#[derive(Debug, Clone, Default, Deserialize)]
#[serde(default)]
pub struct PassRead {
    pub index: Shown,
    pub pass_rate: Loose<f64>,
    /// Each scenario run; one that is not an object reads as `None` but is still a run.
    pub results: Loose<Vec<Loose<ScenarioRead>>>,
}

impl PassRead {
    /// The pass's scenario runs, each `None` when it does not read as one.
    pub fn results(&self) -> impl Iterator<Item = Option<&ScenarioRead>> {
        self.results.get().into_iter().flatten().map(Loose::get)
    }
}

/// One scenario run of a pass (`runs[i].results[j]`, the fields of a
/// [`ScenarioResult`](super::ScenarioResult) the dashboard shows).
#[derive(Debug, Clone, Default, Deserialize)]
#[serde(default)]
pub struct ScenarioRead {
    pub scenario_id: Shown,
    pub category: Shown,
    pub difficulty: Shown,
    pub expected_chain_action: Shown,
    pub terminal_action: Shown,
    pub terminal_reason: Shown,
    pub pass: Loose<bool>,
    pub decided_by: Shown,
    pub model_calls: Shown,
    pub error: Shown,
    pub full_chain: Loose<Vec<Loose<StepRead>>>,
}

impl ScenarioRead {
    /// `pass` is `true` (absent or of another type is not a pass).
    pub fn passed(&self) -> bool {
        self.pass.0 == Some(true)
    }

    /// The chain's steps (one that is not an object reads as an empty step).
    pub fn steps(&self) -> impl Iterator<Item = StepRead> + '_ {
        self.full_chain
            .get()
            .into_iter()
            .flatten()
            .map(|s| s.0.clone().unwrap_or_default())
    }
}

/// One model call of the chain (`full_chain[k]`).
#[derive(Debug, Clone, Default, Deserialize)]
#[serde(default)]
pub struct StepRead {
    pub seq: Shown,
    pub model: Shown,
    pub reply: Shown,
    pub err: Shown,
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_hostile_report_shows_what_it_can() {
        let r: ExamReportRead = serde_json::from_str(
            r#"{"mode": 3, "backend": "golden", "partial": {"why": 1},
                "noise_band_pp": "wide", "pass_rate_ci95": {"low": 0.1},
                "runs": [7, {"index": 0, "pass_rate": 0.5,
                    "results": [null, {"scenario_id": "S", "pass": "yes", "model_calls": 2,
                        "structural": {}, "full_chain": [{"seq": 0, "reply": ["x"]}, 1]}]}]}"#,
        )
        .expect("reads");
        assert_eq!(r.mode.0, None);
        assert_eq!(r.backend.0.as_deref(), Some("golden"));
        assert_eq!(
            r.partial.as_ref().map(|p| p.0.as_str()),
            Some(r#"{"why":1}"#)
        );
        assert_eq!((r.noise_band_pp.0, r.pass_rate_ci95.0), (None, None));
        let passes: Vec<&PassRead> = r.passes().collect();
        assert_eq!(passes.len(), 1);
        let results: Vec<Option<&ScenarioRead>> = passes[0].results().collect();
        assert_eq!(results.len(), 2);
        assert!(results[0].is_none());
        let s = results[1].unwrap();
        assert_eq!(
            (s.scenario_id.0.as_str(), s.model_calls.0.as_str()),
            ("S", "2")
        );
        assert!(!s.passed());
        let steps: Vec<StepRead> = s.steps().collect();
        assert_eq!(steps.len(), 2);
        assert_eq!(steps[0].reply.0, r#"["x"]"#);
        assert_eq!(steps[1].seq.0, "");
    }

    #[test]
    fn a_report_the_exam_wrote_reads_in_full() {
        let p = std::path::Path::new(env!("CARGO_MANIFEST_DIR"))
            .join("tests/previous_release/exam-real/report.json");
        let b = std::fs::read(&p).unwrap();
        let full: super::super::HarnessReport = serde_json::from_slice(&b).unwrap();
        let r: ExamReportRead = serde_json::from_slice(&b).unwrap();
        assert_eq!(r.mode.0.as_deref(), Some(full.mode.as_str()));
        assert_eq!(r.backend.0.as_deref(), Some(full.backend.as_str()));
        assert_eq!(r.noise_band_pp.0, Some(full.noise_band_pp));
        assert_eq!(r.passes().count(), full.runs.len());
        for (p, f) in r.passes().zip(&full.runs) {
            assert_eq!(p.pass_rate.0, f.pass_rate);
            let listed = f.results.listed().unwrap();
            let read: Vec<&ScenarioRead> = p.results().map(Option::unwrap).collect();
            assert_eq!(read.len(), listed.len());
            for (a, b) in read.iter().zip(listed) {
                assert_eq!(a.scenario_id.0, b.scenario_id);
                assert_eq!(a.expected_chain_action.0, b.expected_action);
                assert_eq!(a.passed(), b.pass);
                assert_eq!(a.model_calls.0, b.model_calls.to_string());
                assert_eq!(a.steps().count(), b.full_chain.len());
            }
        }
    }
}
