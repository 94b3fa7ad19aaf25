//! One pass of an agent exam: its numbers ([`RunResult`], counted a run at a time by
//! [`RunTally`]) and its scenario results as a report holds them ([`Results`]): in
//! memory, or in the pass's files (`run-<pass>/<stem>.json`, [`file_stem`]), read back
//! one at a time.
//!
//! Why: an exam with an output directory writes each scenario run's result to
//! `run-<pass>/<stem>.json` as it is graded (`gauntlet_exam::exam::RunFiles`). Keeping those results in
//! memory as well made the exam grow with its passes, about 2.5 KiB a scenario run
//! (BENCHMARKS.md, "Speed and memory: the exams"). A written pass keeps only which scenarios it graded (a bit each), the
//! counts its readers need, and — for the one pass the failure classifier reads — the
//! outline of its results; `report.json` reads each result back from its file as it is
//! written. Either form serializes to the same bytes; a report read back holds
//! [`Results::Listed`].

use super::scenario::{DecidedBy, ScenarioResult, is_attack, na_reason};
use serde::{Deserialize, Deserializer, Serialize, Serializer};
use std::borrow::Cow;
use std::collections::BTreeMap;
use std::fmt::Write as _;
use std::io;
use std::path::{Path, PathBuf};
use std::sync::Arc;

/// One full corpus pass. `total` counts every scenario; the rates' population is the
/// `graded` ones (decided by the model), the `floor` and `fail_safe` ones are counted
/// beside them.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct RunResult {
    pub index: usize,
    pub results: Results,
    /// Graded scenarios that passed.
    pub passed: usize,
    pub total: usize,
    /// passed ÷ graded; `null` when nothing was graded.
    pub pass_rate: Option<f64>,
    /// Graded attacks (expected escalated / escalate-or-stronger).
    pub attacks: usize,
    pub attacks_passed: usize,
    pub recall_rate: Option<f64>,
    /// Graded benign scenarios (the rest).
    pub benigns: usize,
    pub benigns_passed: usize,
    pub precision_rate: Option<f64>,
    /// Scenarios decided by the model: the population of the rates.
    pub graded: usize,
    /// Scenarios the deterministic floor escalated by rule (zero model calls):
    /// outside every rate.
    #[serde(default)]
    pub floor: usize,
    /// Scenarios decided by the fail-safe after a model error or an unparseable reply
    /// (a template echo included): outside every rate.
    pub fail_safe: usize,
    /// Why a rate is `null`.
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub na_reasons: BTreeMap<String, String>,
}

impl RunResult {
    /// A pass's numbers from its results in memory.
    pub fn from_results(index: usize, results: Vec<ScenarioResult>) -> RunResult {
        let mut t = RunTally::default();
        results.iter().for_each(|r| t.add(r));
        t.finish(index, Results::Listed(results))
    }
}

/// One pass's counts, added a scenario run at a time: what [`RunResult`] reports
/// besides its results (so a pass whose results went to their files keeps only these).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct RunTally {
    total: usize,
    graded: usize,
    floor: usize,
    passed: usize,
    attacks: usize,
    attacks_passed: usize,
    /// Results with `pass` set, the floor's included.
    all_passed: usize,
}

impl RunTally {
    pub fn add(&mut self, r: &ScenarioResult) {
        self.total += 1;
        self.all_passed += usize::from(r.pass);
        match r.decided_by {
            DecidedBy::Model => {
                let attack = is_attack(&r.expected_action);
                self.graded += 1;
                self.passed += usize::from(r.pass);
                self.attacks += usize::from(attack);
                self.attacks_passed += usize::from(r.pass && attack);
            }
            DecidedBy::Floor => self.floor += 1,
            DecidedBy::FailSafe => {}
        }
    }

    /// Results with `pass` set, the floor's included.
    pub fn all_passed(&self) -> usize {
        self.all_passed
    }

    /// passed ÷ graded; `None` when nothing was graded.
    pub fn pass_rate(&self) -> Option<f64> {
        (self.graded > 0).then(|| self.passed as f64 / self.graded as f64)
    }

    /// The pass `index` with these counts and `results`.
    pub fn finish(self, index: usize, results: Results) -> RunResult {
        let fail_safe = self.total - self.graded - self.floor;
        let benigns = self.graded - self.attacks;
        let benigns_passed = self.passed - self.attacks_passed;
        let mut na_reasons = BTreeMap::new();
        let mut rate = |name: &str, what: &str, k: usize, n: usize| {
            if n == 0 {
                na_reasons.insert(name.to_string(), na_reason(what, self.floor, fail_safe));
                None
            } else {
                Some(k as f64 / n as f64)
            }
        };
        let pass_rate = rate("pass_rate", "scenario", self.passed, self.graded);
        let recall_rate = rate(
            "recall_rate",
            "attack scenario",
            self.attacks_passed,
            self.attacks,
        );
        let precision_rate = rate("precision_rate", "benign scenario", benigns_passed, benigns);
        RunResult {
            index,
            passed: self.passed,
            total: self.total,
            pass_rate,
            attacks: self.attacks,
            attacks_passed: self.attacks_passed,
            recall_rate,
            benigns,
            benigns_passed,
            precision_rate,
            graded: self.graded,
            floor: self.floor,
            fail_safe,
            na_reasons,
            results,
        }
    }
}

/// A scenario id as a file name, injectively: `[A-Za-z0-9._-]` are kept, every other
/// byte (and a leading `.`) is written `%XX`, so distinct ids never share a file
/// (`ZZ-a/b` → `ZZ-a%2Fb`, `ZZ-a_b` → `ZZ-a_b`, `ZZ-a?b` → `ZZ-a%3Fb`) and an id already
/// made of safe characters is its own name. A name that would exceed
/// [`MAX_STEM_BYTES`] keeps a prefix and ends in `~` and the id's full sha256 (`~`
/// never appears otherwise, so these cannot meet an escaped name).
pub fn file_stem(id: &str) -> String {
    let mut s = String::with_capacity(id.len());
    for (i, b) in id.bytes().enumerate() {
        let safe = b.is_ascii_alphanumeric() || matches!(b, b'_' | b'-') || (b == b'.' && i > 0);
        if safe {
            s.push(b as char);
        } else {
            let _ = write!(s, "%{b:02X}");
        }
    }
    if s.is_empty() {
        s.push('%');
    }
    if s.len() > MAX_STEM_BYTES {
        let digest = gauntlet_core::hash::sha256_hex(id.as_bytes());
        s.truncate(MAX_STEM_BYTES - 65);
        s.push('~');
        s.push_str(&digest);
    }
    s
}

/// The longest file stem [`file_stem`] produces (file names stay under 255 bytes with
/// the `.transcript.json` suffix).
pub const MAX_STEM_BYTES: usize = 200;

/// What the classifier and the report's failure table read of one scenario run (the
/// exam's `classifier::outline`; `bin` is the classifier's failure bin).
#[derive(Debug, Clone, PartialEq)]
pub struct Outline {
    pub scenario_id: String,
    pub expected_action: String,
    pub terminal_action: String,
    pub pass: bool,
    pub bin: &'static str,
}

/// One pass's graded scenario runs, in corpus order.
#[derive(Debug, Clone, PartialEq)]
pub enum Results {
    /// In memory: an exam without an output directory, a merge, a report read back.
    Listed(Vec<ScenarioResult>),
    /// In `run-<pass>/<stem>.json`, where the exam wrote them.
    Written(WrittenPass),
}

/// A pass whose results are in its files (see the module's docs).
#[derive(Debug, Clone, PartialEq)]
pub struct WrittenPass {
    /// `run-<pass>`, where the results are once the exam's files are in place.
    pub dir: PathBuf,
    /// Every corpus scenario's file stem, by corpus index (shared by the passes).
    pub stems: Arc<[String]>,
    /// Bit `i`: the pass graded corpus scenario `i`.
    pub present: Bits,
    /// Results with `pass` set (floor passes included): the pipeline check's count.
    pub passed: usize,
    /// Kept for the pass the classifier reads ([`worst_run`]) only.
    pub outline: Option<Vec<Outline>>,
}

impl Default for Results {
    fn default() -> Results {
        Results::Listed(Vec::new())
    }
}

impl From<Vec<ScenarioResult>> for Results {
    fn from(v: Vec<ScenarioResult>) -> Results {
        Results::Listed(v)
    }
}

impl Results {
    /// The scenario runs of the pass.
    pub fn len(&self) -> usize {
        match self {
            Results::Listed(v) => v.len(),
            Results::Written(w) => w.present.count(),
        }
    }

    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// The scenario runs that passed, the ones the floor decided included (the golden
    /// pipeline check counts every one).
    pub fn passed(&self) -> usize {
        match self {
            Results::Listed(v) => v.iter().filter(|r| r.pass).count(),
            Results::Written(w) => w.passed,
        }
    }

    /// The results in memory; `None` when they are in the pass's files.
    pub fn listed(&self) -> Option<&[ScenarioResult]> {
        match self {
            Results::Listed(v) => Some(v),
            Results::Written(_) => None,
        }
    }

    /// The scenario runs that did not pass, in corpus order, as (scenario, expected
    /// action, terminal action). A written pass answers from its outline, which the
    /// exam keeps for the pass the classifier reads only: another written pass has
    /// none.
    pub fn failed(&self) -> Vec<[String; 3]> {
        let row = |id: &str, expected: &str, terminal: &str| {
            [id.to_owned(), expected.to_owned(), terminal.to_owned()]
        };
        match self {
            Results::Listed(v) => v
                .iter()
                .filter(|r| !r.pass)
                .map(|r| row(&r.scenario_id, &r.expected_action, &r.terminal_action))
                .collect(),
            Results::Written(w) => w
                .outline
                .iter()
                .flatten()
                .filter(|o| !o.pass)
                .map(|o| row(&o.scenario_id, &o.expected_action, &o.terminal_action))
                .collect(),
        }
    }

    /// Each scenario run's file stem (`run-<pass>/<stem>.json`), in corpus order.
    pub fn stems(&self) -> Box<dyn Iterator<Item = Cow<'_, str>> + '_> {
        match self {
            Results::Listed(v) => Box::new(v.iter().map(|r| Cow::Owned(file_stem(&r.scenario_id)))),
            Results::Written(w) => Box::new(w.present.ones().map(|i| Cow::Borrowed(&*w.stems[i]))),
        }
    }

    /// Calls `f` with each result in corpus order, reading written ones back one at a
    /// time. The error names the file.
    pub fn for_each(&self, mut f: impl FnMut(&ScenarioResult)) -> io::Result<()> {
        match self {
            Results::Listed(v) => v.iter().for_each(f),
            Results::Written(w) => {
                for i in w.present.ones() {
                    f(&read_result(&w.dir, &w.stems[i])?);
                }
            }
        }
        Ok(())
    }
}

/// Reads `dir/<stem>.json` back as a result.
fn read_result(dir: &Path, stem: &str) -> io::Result<ScenarioResult> {
    let p = dir.join(format!("{stem}.json"));
    let named =
        |e: io::Error| io::Error::new(e.kind(), format!("cannot read {}: {e}", p.display()));
    let f = gauntlet_core::files::open(&p, gauntlet_core::files::Kind::RESULTS)
        .map_err(|e| named(e.into_io()))?;
    serde_json::from_reader(io::BufReader::new(f)).map_err(|e| named(io::Error::other(e)))
}

impl Serialize for Results {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        use serde::ser::{Error, SerializeSeq};
        match self {
            Results::Listed(v) => v.serialize(s),
            Results::Written(w) => {
                let mut seq = s.serialize_seq(Some(w.present.count()))?;
                for i in w.present.ones() {
                    let r = read_result(&w.dir, &w.stems[i]).map_err(S::Error::custom)?;
                    seq.serialize_element(&r)?;
                }
                seq.end()
            }
        }
    }
}

impl<'de> Deserialize<'de> for Results {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Results, D::Error> {
        Vec::<ScenarioResult>::deserialize(d).map(Results::Listed)
    }
}

/// Whether a pass with `rate` is worse than the worst so far, with `worst` (the
/// classifier reads the worst pass: lowest pass rate, the first on ties; a pass without
/// a rate, nothing graded, is worse than none only when no pass has one).
pub fn worse(rate: Option<f64>, worst: Option<f64>) -> bool {
    rate.unwrap_or(f64::INFINITY) < worst.unwrap_or(f64::INFINITY)
}

/// The worst run (see [`worse`]): the pass the failure classifier and the report's
/// failure table read.
pub fn worst_run(runs: &[RunResult]) -> Option<&RunResult> {
    runs.iter().fold(None, |w: Option<&RunResult>, r| match w {
        Some(w) if !worse(r.pass_rate, w.pass_rate) => Some(w),
        _ => Some(r),
    })
}

/// A fixed-size set of small indices, a bit each.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Bits(Vec<u64>);

impl Bits {
    /// The empty set of indices below `n`.
    pub fn new(n: usize) -> Bits {
        Bits(vec![0; n.div_ceil(64)])
    }

    pub fn insert(&mut self, i: usize) {
        self.0[i / 64] |= 1 << (i % 64);
    }

    pub fn contains(&self, i: usize) -> bool {
        self.0.get(i / 64).is_some_and(|w| w & (1 << (i % 64)) != 0)
    }

    pub fn count(&self) -> usize {
        self.0.iter().map(|w| w.count_ones() as usize).sum()
    }

    /// The indices in the set, ascending.
    pub fn ones(&self) -> impl Iterator<Item = usize> + '_ {
        self.0.iter().enumerate().flat_map(|(k, &w)| {
            (0..64)
                .filter(move |b| w & (1 << b) != 0)
                .map(move |b| k * 64 + b)
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::exam::{AxisResult, ChainStep, StructuralAxes};
    use proptest::prelude::*;

    fn result(id: &str, pass: bool) -> ScenarioResult {
        ScenarioResult {
            scenario_id: id.into(),
            rel_path: format!("{id}.yaml"),
            finding_id: "f".into(),
            category: "c".into(),
            difficulty: "d".into(),
            terminal_action: "escalated".into(),
            expected_action: if pass { "escalated" } else { "resolved" }.into(),
            terminal_reason: "r".into(),
            force_escalated: false,
            route_id: String::new(),
            model_calls: 1,
            wall_millis: 7,
            full_chain: vec![ChainStep {
                seq: 0,
                model: "triage".into(),
                reply: "{\"action\":\"escalate\"}".into(),
                err: String::new(),
            }],
            structural: StructuralAxes {
                chain_action: AxisResult::from_bool(pass),
                triage_action: AxisResult::NotApplicable,
                mentions: AxisResult::NotApplicable,
                no_mentions: AxisResult::NotApplicable,
                tools_used: AxisResult::NotApplicable,
                iterations: AxisResult::NotApplicable,
            },
            pass,
            decided_by: DecidedBy::Model,
            error: String::new(),
        }
    }

    #[test]
    fn a_written_pass_serializes_as_its_listed_results_and_a_missing_file_is_named() {
        let d = tempfile::tempdir().unwrap();
        let ids = ["AF-01", "a/b", "AF-03"];
        let stems: Arc<[String]> = ids.iter().map(|i| file_stem(i)).collect();
        // Scenario 1 was not run in this pass.
        let listed = vec![result(ids[0], true), result(ids[2], false)];
        for r in &listed {
            let mut b = serde_json::to_vec_pretty(r).unwrap();
            b.push(b'\n');
            std::fs::write(
                d.path().join(format!("{}.json", file_stem(&r.scenario_id))),
                b,
            )
            .unwrap();
        }
        let mut present = Bits::new(ids.len());
        present.insert(0);
        present.insert(2);
        let written = Results::Written(WrittenPass {
            dir: d.path().to_path_buf(),
            stems,
            present,
            passed: 1,
            outline: None,
        });
        let listed = Results::Listed(listed);
        assert_eq!(
            serde_json::to_string_pretty(&written).unwrap(),
            serde_json::to_string_pretty(&listed).unwrap()
        );
        assert_eq!(
            (written.len(), written.passed()),
            (listed.len(), listed.passed())
        );
        assert_eq!(
            written.stems().collect::<Vec<_>>(),
            listed.stems().collect::<Vec<_>>()
        );
        let mut seen = Vec::new();
        written
            .for_each(|r| seen.push(r.scenario_id.clone()))
            .unwrap();
        assert_eq!(seen, ["AF-01", "AF-03"]);
        let back: Results =
            serde_json::from_str(&serde_json::to_string(&written).unwrap()).unwrap();
        assert_eq!(back.listed().map(<[_]>::len), Some(2));

        std::fs::remove_file(d.path().join("AF-03.json")).unwrap();
        let e = serde_json::to_string(&written).unwrap_err().to_string();
        let gone = d.path().join("AF-03.json");
        assert!(
            e.contains(&format!("cannot read {}", gone.display())),
            "{e}"
        );
    }

    #[test]
    fn bits_hold_what_was_inserted() {
        let mut b = Bits::new(130);
        for i in [0, 63, 64, 129] {
            b.insert(i);
        }
        assert_eq!(b.ones().collect::<Vec<_>>(), [0, 63, 64, 129]);
        assert_eq!(b.count(), 4);
        assert!(b.contains(64) && !b.contains(65) && !b.contains(500));
    }

    #[test]
    fn file_stems_of_ids_that_used_to_collide_differ() {
        assert_eq!(file_stem("ZZ-a_b"), "ZZ-a_b");
        assert_eq!(file_stem("ZZ-a/b"), "ZZ-a%2Fb");
        assert_eq!(file_stem("ZZ-a?b"), "ZZ-a%3Fb");
        assert_eq!(file_stem(".hidden"), "%2Ehidden");
        assert_eq!(file_stem("a%b"), "a%25b");
        assert_eq!(file_stem(""), "%");
        assert_eq!(file_stem("é"), "%C3%A9");
        let long = "x/".repeat(300);
        let s = file_stem(&long);
        assert!(s.len() <= MAX_STEM_BYTES && s.contains('~'), "{s}");
    }

    proptest! {
        /// Distinct ids never share a file name, and names are safe path components.
        #[test]
        fn file_stem_is_injective_and_safe(a in ".{0,300}", b in ".{0,300}") {
            let (sa, sb) = (file_stem(&a), file_stem(&b));
            prop_assert!(sa.len() <= MAX_STEM_BYTES);
            prop_assert!(!sa.starts_with('.'));
            prop_assert!(sa.bytes().all(|c| c.is_ascii_alphanumeric() || b"._-%~".contains(&c)));
            if a != b {
                prop_assert_ne!(sa, sb);
            }
        }
    }
}
