//! Judge agreement over a finished run (`gauntlet judge-agreement`): the run's stored
//! transcripts are re-judged by two or more judges (no target call; grader calls go
//! through the run's journal, so repeating an analysis is free), and each judge's rate
//! and each pair's raw agreement and Cohen's κ are tallied. It lives in the engine so the
//! CLI only parses and prints.
//!
//! The unit of analysis is the behavior (one dataset item under one attack, target and
//! trial), never the attempt: a judge calls a behavior positive when at least one of its
//! attempts succeeded under that judge, exactly as the run's metrics do.

use crate::stored::{
    BuiltJudge, JudgeBuildError, JudgeSpecError, Rejudger, StoredError, StoredRun, parse_judge_spec,
};
use gauntlet_core::behavior::Expected;
use gauntlet_core::stats::{Kappa, KappaUndefined, Z95, cohen_kappa};
use gauntlet_models::ModelError;
use gauntlet_redteam::metrics::BehaviorOutcome;
use serde_json::{Value, json};

fn expected_key(e: Expected) -> usize {
    match e {
        Expected::ShouldRefuse => 0,
        Expected::ShouldComply => 1,
    }
}
const EXPECTED: [Expected; 2] = [Expected::ShouldRefuse, Expected::ShouldComply];

/// One judge's per-behavior counts.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct JudgeCounts {
    /// Behaviors judged (not every attempt errored).
    pub n: u64,
    /// Behaviors with at least one successful attempt.
    pub positive: u64,
    /// Behaviors whose every attempt errored under this judge (left out of its pairs).
    pub excluded: u64,
}

impl JudgeCounts {
    /// The positive rate; `None` (N/A) when no behavior was judged.
    pub fn rate(&self) -> Option<f64> {
        (self.n > 0).then(|| self.positive as f64 / self.n as f64)
    }

    /// The counts of two groups together.
    pub fn sum(self, b: JudgeCounts) -> JudgeCounts {
        JudgeCounts {
            n: self.n + b.n,
            positive: self.positive + b.positive,
            excluded: self.excluded + b.excluded,
        }
    }
}

/// A judge pair's 2×2 table `[[both +, a only], [b only, both −]]`.
pub type PairTable = [[u64; 2]; 2];

/// The statistics of one pair's table: raw agreement and Cohen's κ.
#[derive(Debug, Clone)]
pub struct PairStats {
    /// Behaviors both judges judged.
    pub n: u64,
    /// Raw agreement; `None` (N/A) when `n` is 0.
    pub agreement: Option<f64>,
    /// Cohen's κ with its 95% interval, or why it does not apply.
    pub kappa: Result<Kappa, KappaUndefined>,
}

impl PairStats {
    pub fn of(t: PairTable) -> PairStats {
        let n = t[0][0] + t[0][1] + t[1][0] + t[1][1];
        let table: Vec<Vec<u64>> = t.iter().map(|r| r.to_vec()).collect();
        PairStats {
            n,
            agreement: (n > 0).then(|| (t[0][0] + t[1][1]) as f64 / n as f64),
            kappa: cohen_kappa(&table, Z95),
        }
    }
}

/// The tables of two groups together.
pub fn sum_tables(a: PairTable, b: PairTable) -> PairTable {
    [
        [a[0][0] + b[0][0], a[0][1] + b[0][1]],
        [a[1][0] + b[1][0], a[1][1] + b[1][1]],
    ]
}

/// Agreement tallies over behaviors: per judge, and a 2×2 table per judge pair.
#[derive(Debug, Clone, PartialEq)]
pub struct Agreement {
    pub labels: Vec<String>,
    /// `[expected][judge]`.
    pub counts: [Vec<JudgeCounts>; 2],
    /// `[expected][pair]` 2×2 table `[[both +, a only], [b only, both −]]`, pairs in
    /// (0,1), (0,2), …, (1,2), … order.
    pub tables: [Vec<PairTable>; 2],
    /// Behaviors seen (including excluded ones).
    pub items: [u64; 2],
}

impl Agreement {
    pub fn new(labels: Vec<String>) -> Self {
        let k = labels.len();
        let pairs = k * k.saturating_sub(1) / 2;
        Agreement {
            labels,
            counts: [
                vec![JudgeCounts::default(); k],
                vec![JudgeCounts::default(); k],
            ],
            tables: [vec![[[0; 2]; 2]; pairs], vec![[[0; 2]; 2]; pairs]],
            items: [0, 0],
        }
    }

    /// The judge pairs, in table order.
    pub fn pairs(&self) -> Vec<(usize, usize)> {
        let k = self.labels.len();
        (0..k)
            .flat_map(|a| (a + 1..k).map(move |b| (a, b)))
            .collect()
    }

    /// Adds one behavior: `calls[j]` is `Some(positive)` for judge `j`, `None` when every
    /// attempt errored under it.
    pub fn add(&mut self, expected: Expected, calls: &[Option<bool>]) {
        let e = expected_key(expected);
        self.items[e] += 1;
        for (j, c) in calls.iter().enumerate() {
            let jc = &mut self.counts[e][j];
            match c {
                None => jc.excluded += 1,
                Some(p) => {
                    jc.n += 1;
                    jc.positive += u64::from(*p);
                }
            }
        }
        for (i, (a, b)) in self.pairs().into_iter().enumerate() {
            if let (Some(x), Some(y)) = (calls[a], calls[b]) {
                self.tables[e][i][usize::from(!x)][usize::from(!y)] += 1;
            }
        }
    }

    /// Judge `j`'s counts over both expected labels.
    pub fn overall(&self, j: usize) -> JudgeCounts {
        self.counts[0][j].sum(self.counts[1][j])
    }

    /// Pair `i`'s table over both expected labels.
    pub fn overall_table(&self, i: usize) -> PairTable {
        sum_tables(self.tables[0][i], self.tables[1][i])
    }

    /// The judge_agreement.json document (without run provenance).
    pub fn to_json(&self, specs: &[Value]) -> Value {
        let judges: Vec<Value> = self
            .labels
            .iter()
            .enumerate()
            .map(|(j, l)| {
                let by: serde_json::Map<String, Value> = EXPECTED
                    .iter()
                    .map(|e| {
                        (
                            e.as_str().to_string(),
                            judge_json(self.counts[expected_key(*e)][j]),
                        )
                    })
                    .collect();
                json!({
                    "judge": l,
                    "spec": specs[j],
                    "overall": judge_json(self.overall(j)),
                    "by_expected": by,
                })
            })
            .collect();
        let pairs: Vec<Value> = self
            .pairs()
            .into_iter()
            .enumerate()
            .map(|(i, (a, b))| {
                let by: serde_json::Map<String, Value> = EXPECTED
                    .iter()
                    .map(|e| {
                        (
                            e.as_str().to_string(),
                            pair_json(self.tables[expected_key(*e)][i]),
                        )
                    })
                    .collect();
                json!({
                    "a": self.labels[a],
                    "b": self.labels[b],
                    "overall": pair_json(self.overall_table(i)),
                    "by_expected": by,
                })
            })
            .collect();
        json!({
            "items": self.items[0] + self.items[1],
            "items_by_expected": {
                "should_refuse": self.items[0],
                "should_comply": self.items[1],
            },
            "judges": judges,
            "pairs": pairs,
        })
    }
}

fn judge_json(c: JudgeCounts) -> Value {
    json!({
        "n": c.n,
        "positive": c.positive,
        "rate": c.rate(),
        "excluded_all_errors": c.excluded,
    })
}

fn pair_json(t: PairTable) -> Value {
    let s = PairStats::of(t);
    let mut v = json!({
        "n": s.n,
        "both_positive": t[0][0],
        "a_only": t[0][1],
        "b_only": t[1][0],
        "both_negative": t[1][1],
        "raw_agreement": s.agreement,
    });
    let o = v.as_object_mut().expect("object");
    match s.kappa {
        Ok(Kappa {
            kappa,
            se,
            ci_low,
            ci_high,
            ci_method,
            ..
        }) => {
            o.insert("kappa".into(), json!(kappa));
            o.insert("kappa_se".into(), json!(se));
            o.insert("kappa_ci_low".into(), json!(ci_low));
            o.insert("kappa_ci_high".into(), json!(ci_high));
            o.insert("kappa_ci_method".into(), json!(ci_method));
        }
        Err(why) => {
            o.insert("kappa".into(), Value::Null);
            o.insert("kappa_na_reason".into(), json!(why.to_string()));
        }
    }
    v
}

/// Labels for judges, made distinct (`rubric`, `rubric#2`) when two share one.
pub fn distinct_labels(labels: Vec<String>) -> Vec<String> {
    let mut out: Vec<String> = Vec::with_capacity(labels.len());
    for l in labels {
        let mut name = l.clone();
        let mut k = 2;
        while out.contains(&name) {
            name = format!("{l}#{k}");
            k += 1;
        }
        out.push(name);
    }
    out
}

/// Why [`judge_agreement`] could not produce a report.
#[derive(Debug, thiserror::Error)]
pub enum AgreementError {
    /// Fewer than two judges were given.
    #[error("judge-agreement needs at least two --judge")]
    TooFewJudges,
    /// A `--judge` value does not parse.
    #[error(transparent)]
    Spec(#[from] JudgeSpecError),
    /// A judge (or its grader) does not build.
    #[error(transparent)]
    Build(#[from] JudgeBuildError),
    /// The run's journal or transcripts could not be read or written.
    #[error(transparent)]
    Stored(#[from] StoredError),
    /// A grader call failed (a misconfigured grader, the budget).
    #[error(transparent)]
    Model(#[from] ModelError),
}

impl AgreementError {
    /// Whether the command line is at fault (too few judges, a judge spec that does
    /// not parse or build), rather than the run or a grader.
    pub fn is_invalid(&self) -> bool {
        matches!(
            self,
            AgreementError::TooFewJudges | AgreementError::Spec(_) | AgreementError::Build(_)
        )
    }
}

/// What [`judge_agreement`] produced.
#[derive(Debug, Clone)]
pub struct AgreementReport {
    /// The tallies (judge labels made distinct).
    pub agreement: Agreement,
    /// judge_agreement.json, with the run's provenance and the definitions.
    pub doc: Value,
    /// Attempts re-judged.
    pub attempts: u64,
    /// Grader calls: (made, from the journal, failed). Target calls are always 0.
    pub grader_calls: (u64, u64, u64),
    /// Notes for the user (the journal's damaged records).
    pub notes: Vec<String>,
}

/// Re-judges `run` with every judge of `judges` (names or inline YAML, two or more).
/// `progress` hears each re-judged unit and the grader calls so far.
pub async fn judge_agreement(
    run: &StoredRun,
    judges: &[String],
    progress: &dyn gauntlet_job::progress::Progress,
) -> Result<AgreementReport, AgreementError> {
    if judges.len() < 2 {
        return Err(AgreementError::TooFewJudges);
    }
    let mut built = Vec::new();
    let mut specs = Vec::new();
    for t in judges {
        let spec = parse_judge_spec(t)?;
        specs.push(spec.identity());
        built.push(BuiltJudge::build(&spec)?);
    }
    let labels = distinct_labels(built.iter().map(BuiltJudge::label).collect());
    let mut rejudger = Rejudger::new(run, built)?;
    let mut agreement = Agreement::new(labels);
    let mut attempts = 0u64;
    let result: Result<(), AgreementError> = async {
        let units = run.units()?;
        progress.start(run.plan.units() * run.trial_seeds.len().max(1) as u64, 0);
        for (i, unit) in units.enumerate() {
            let unit = unit?;
            let b = run.behavior(unit.unit);
            let scored = rejudger.score(&unit).await;
            progress.advance(1, unit.attempts.len() as u64, rejudger.call_stats());
            let verdicts = scored?;
            let calls: Vec<Option<bool>> = verdicts
                .iter()
                .map(|vs| {
                    let o = BehaviorOutcome::from_behavior(b, &unit.attempts, vs);
                    o.judged().then_some(o.first_success.is_some())
                })
                .collect();
            agreement.add(b.expected, &calls);
            attempts += unit.attempts.len() as u64;
            if i % 256 == 255 {
                rejudger.flush()?;
            }
        }
        Ok(rejudger.flush()?)
    }
    .await;
    let grader_calls = rejudger.grader_calls();
    let notes = std::mem::take(&mut rejudger.notes);
    drop(rejudger);
    result?;
    let mut doc = agreement.to_json(&specs);
    if let Value::Object(o) = &mut doc {
        o.insert("run_id".into(), json!(run.meta.run_id));
        o.insert("run_status".into(), json!(run.meta.status));
        o.insert("unit".into(), json!("behavior: one dataset item under one attack, target and trial; positive = at least one attempt succeeded under the judge (should_refuse: the model complied; should_comply: it answered)"));
        o.insert("excluded".into(), json!("a behavior whose every attempt errored under a judge is left out of that judge's rate and of every pair involving it"));
        o.insert("kappa_ci".into(), json!("95% large-sample normal interval, kappa ± 1.96·SE, SE of Fleiss, Cohen & Everitt (1969); no resampling; where that SE is 0 (perfect agreement or disagreement) the Wilson interval of the raw agreement mapped through kappa (kappa_ci_method wilson_agreement); kappa is N/A with its reason when one judge gave every behavior the same verdict"));
        o.insert(
            "labels".into(),
            json!("expected labels come from the pinned dataset and are never changed"),
        );
    }
    Ok(AgreementReport {
        agreement,
        doc,
        attempts,
        grader_calls,
        notes,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn agreement_counts_behaviors_and_excludes_errors_per_judge() {
        let mut g = Agreement::new(vec!["a".into(), "b".into(), "c".into()]);
        g.add(Expected::ShouldRefuse, &[Some(true), Some(true), None]);
        g.add(
            Expected::ShouldRefuse,
            &[Some(false), Some(true), Some(false)],
        );
        g.add(
            Expected::ShouldComply,
            &[Some(true), Some(true), Some(true)],
        );
        assert_eq!(g.items, [2, 1]);
        assert_eq!(
            g.counts[0][2],
            JudgeCounts {
                n: 1,
                positive: 0,
                excluded: 1
            }
        );
        // pair (a, b): refuse table both+ 1, b only 1; comply both+ 1
        assert_eq!(g.tables[0][0], [[1, 0], [1, 0]]);
        assert_eq!(g.tables[1][0], [[1, 0], [0, 0]]);
        // pair (a, c): the behavior c errored on is not in the table
        assert_eq!(g.tables[0][1], [[0, 0], [0, 1]]);
        assert_eq!(g.overall_table(0), [[2, 0], [1, 0]]);
        let j = g.to_json(&[json!("a"), json!("b"), json!("c")]);
        assert_eq!(j["items"], 3);
        assert_eq!(j["pairs"][0]["overall"]["n"], 3);
        assert_eq!(j["pairs"][1]["overall"]["n"], 2);
    }

    #[test]
    fn pair_stats_are_na_on_an_empty_table() {
        let s = PairStats::of([[0, 0], [0, 0]]);
        assert_eq!(s.n, 0);
        assert_eq!(s.agreement, None);
        assert!(s.kappa.is_err());
        let s = PairStats::of([[3, 1], [0, 4]]);
        assert_eq!(s.n, 8);
        assert_eq!(s.agreement, Some(7.0 / 8.0));
        assert!(s.kappa.is_ok());
        assert_eq!(JudgeCounts::default().rate(), None);
    }

    #[test]
    fn labels_are_made_distinct() {
        assert_eq!(
            distinct_labels(vec!["rubric".into(), "rubric".into(), "x".into()]),
            vec!["rubric", "rubric#2", "x"]
        );
    }
}
