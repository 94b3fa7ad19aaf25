//! The detect exam (mallcop's, offline, no model): run the fleet over labelled scenarios and grade it.
//!
//! Why this exists: it measures a detection layer offline — recall with the missed
//! attacks named, precision with the false alarms named, a coverage matrix per family.
//!
//! Grading, per labelled row (a scenario with `expected_detection`):
//! - **fail** when any `must_not_fire` family fired (a violation — never exempt), or a
//!   `must_fire` family with a registered detector did not fire;
//! - **reserved_pending** when the only missing `must_fire` families have no
//!   registered detector: a tracked expected miss, counted in `totals.reserved`, not
//!   `failed`. (The scenario's own `reserved: true` flag is reported; once its family
//!   is registered the row is graded like any other.)
//! - **pass** otherwise.
//!
//! Recall = attack rows (with a `must_fire` family) whose every `must_fire` family
//! fired ÷ attack rows — reserved rows stay in the denominator and are named as
//! reserved misses. Precision = benign rows (no `must_fire`) with no `must_not_fire`
//! family fired ÷ benign rows. Empty denominator → 1.0. Both carry 95% Wilson
//! intervals. Families are compared trimmed and lowercased.
//!
//! Detector failures (panic, timeout, external error) are recorded per row and per
//! detector; the exam completes regardless, and its exit code says the run was not
//! clean.

use crate::fleet::{Fleet, Input, Member};
use gauntlet_corpus::load::LoadedScenario;
use gauntlet_corpus::projection;
use gauntlet_job::job::{Ending, Fold, Job, Ran, Schedule, Task, Window};
use gauntlet_results::detect::{
    Coverage, DetectReport, DetectorHealth, FalseAlarm, Miss, Precision, Rate, Recall, Row,
    RowError, RowStatus, Throughput, Totals,
};
use std::borrow::Borrow;
use std::collections::{BTreeMap, BTreeSet};
use std::sync::Arc;
use std::time::{Duration, Instant};

/// Per-detector status counts: `[ok, panic, timeout, failed]`.
type StatusCounts = BTreeMap<String, [usize; 4]>;

/// A scenario to grade, with where it came from.
pub struct Item<'a> {
    pub scenario: &'a LoadedScenario,
    pub origin: String,
}

/// Options for [`run`].
#[derive(Debug, Clone)]
pub struct Options {
    /// Per-detector, per-scenario budget for built-ins.
    pub timeout: Duration,
    /// Scenarios graded concurrently (each with its own fleet lanes).
    pub parallel: usize,
}

impl Default for Options {
    fn default() -> Self {
        Options {
            timeout: crate::fleet::DEFAULT_TIMEOUT,
            parallel: std::thread::available_parallelism().map_or(1, |n| n.get()),
        }
    }
}

fn norm(v: &[String]) -> Vec<String> {
    let set: BTreeSet<String> = v
        .iter()
        .map(|s| s.trim().to_lowercase())
        .filter(|s| !s.is_empty())
        .collect();
    set.into_iter().collect()
}

/// Grades one scenario's fleet output.
pub fn grade_row(
    item: &Item<'_>,
    runs: &[crate::fleet::DetectorRun],
    registered: &BTreeSet<String>,
    events: usize,
) -> Row {
    let s = &item.scenario.scenario;
    let fired: BTreeSet<String> = runs
        .iter()
        .flat_map(|r| r.findings.iter().map(|f| f.family()))
        .filter(|f| !f.is_empty())
        .collect();
    let errors: Vec<RowError> = runs
        .iter()
        .filter(|r| !r.status.is_ok())
        .map(|r| RowError {
            detector: r.detector.clone(),
            kind: r.status.kind().to_string(),
            message: r.status.message().to_string(),
        })
        .collect();
    let findings = runs.iter().map(|r| r.findings.len()).sum();
    let mut row = Row {
        id: s.id.clone(),
        relpath: item.scenario.relpath.clone(),
        origin: item.origin.clone(),
        status: RowStatus::Unlabeled,
        must_fire: Vec::new(),
        must_not_fire: Vec::new(),
        reserved_flag: false,
        fired: fired.iter().cloned().collect(),
        missing: Vec::new(),
        reserved_families: Vec::new(),
        violations: Vec::new(),
        unexpected: Vec::new(),
        errors,
        events,
        findings,
    };
    let Some(ed) = &s.ground_truth.expected_detection else {
        return row;
    };
    row.must_fire = norm(&ed.must_fire);
    row.must_not_fire = norm(&ed.must_not_fire);
    row.reserved_flag = ed.reserved;
    for f in &row.must_fire {
        if !fired.contains(f) {
            if registered.contains(f) {
                row.missing.push(f.clone());
            } else {
                row.reserved_families.push(f.clone());
            }
        }
    }
    row.violations = row
        .must_not_fire
        .iter()
        .filter(|f| fired.contains(*f))
        .cloned()
        .collect();
    row.unexpected = fired
        .iter()
        .filter(|f| !row.must_fire.contains(f) && !row.must_not_fire.contains(f))
        .cloned()
        .collect();
    row.status = if !row.violations.is_empty() || !row.missing.is_empty() {
        RowStatus::Fail
    } else if !row.reserved_families.is_empty() {
        RowStatus::ReservedPending
    } else {
        RowStatus::Pass
    };
    row
}

/// Runs the fleet (built from `members`) over `items` and grades every row.
pub fn run(
    items: &[Item<'_>],
    members: &[Member],
    opts: &Options,
    corpus: (&str, usize, &str),
) -> DetectReport {
    let load = |i: usize| -> Result<(&LoadedScenario, String), std::convert::Infallible> {
        Ok((items[i].scenario, items[i].origin.clone()))
    };
    match run_streaming(items.len(), load, members, opts, corpus) {
        Ok(r) => r,
        Err(f) => match f.error {},
    }
}

/// Why a streaming run stopped: scenario `index` could not be loaded (`error`: the
/// loader's).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct LoadFailure<E> {
    pub index: usize,
    pub error: E,
}

/// The streaming detect exam: `load(i)` yields scenario `i` of `n` (and its origin).
/// It is a job of the one in-order driver (`gauntlet_job::job`): at most
/// `opts.parallel` scenarios are in flight, each loaded, projected, run through a fleet
/// of its own lanes, graded and dropped, so peak memory is bounded by the in-flight
/// scenarios plus one compact [`Row`] per scenario; rows are folded in index order, so
/// the report does not depend on scheduling or `opts.parallel`.
///
/// A load failure stops the run: no new scenario starts and the failure with the lowest
/// index is returned (every scenario before it was graded).
pub fn run_streaming<L, S, E>(
    n: usize,
    load: L,
    members: &[Member],
    opts: &Options,
    corpus: (&str, usize, &str),
) -> Result<DetectReport, LoadFailure<E>>
where
    L: Fn(usize) -> Result<(S, String), E> + Sync,
    S: Borrow<LoadedScenario>,
    E: Send + 'static,
{
    let started = Instant::now();
    let parallel = opts.parallel.clamp(1, n.max(1));
    let work = Work {
        load,
        registered: members.iter().map(|m| m.name().to_lowercase()).collect(),
    };
    let (queue, requests) = std::sync::mpsc::channel::<Request<E>>();
    let requests = std::sync::Mutex::new(requests);
    let mut fold = Rows(Vec::with_capacity(n));
    let counts: std::sync::Mutex<StatusCounts> = std::sync::Mutex::new(BTreeMap::new());
    let ended = std::sync::atomic::AtomicBool::new(false);
    let ending = std::thread::scope(|scope| {
        // The workers: one fleet (its own lanes) each, for the whole exam, taking
        // scenarios from the queue the job's tasks fill.
        for _ in 0..parallel {
            scope.spawn(|| {
                let fleet = Fleet::new(members.to_vec(), opts.timeout);
                // Statuses are tallied here; only the compact row leaves the worker.
                let mut local: StatusCounts = BTreeMap::new();
                loop {
                    let next = requests.lock().unwrap_or_else(|e| e.into_inner()).recv();
                    let Ok((range, reply)) = next else { break };
                    // Once the schedule has ended (a load failed), what is still queued
                    // is dropped unread: no task waits for it.
                    if !ended.load(std::sync::atomic::Ordering::Relaxed) {
                        let _ = reply.send(work.grade(&fleet, range, &mut local));
                    }
                }
                let mut all = counts.lock().unwrap_or_else(|e| e.into_inner());
                for (name, c) in local {
                    let t = all.entry(name).or_default();
                    for k in 0..4 {
                        t[k] += c[k];
                    }
                }
            });
        }
        let job = Arc::new(Scenarios {
            n,
            parallel,
            queue: std::sync::Mutex::new(queue),
        });
        let runtime = tokio::runtime::Builder::new_current_thread()
            .enable_time()
            .build()
            .expect("a current-thread runtime starts (no I/O driver needed)");
        let never = std::sync::atomic::AtomicBool::new(false);
        let ending = runtime.block_on(async {
            let mut schedule = Schedule::new(job.as_ref());
            let ending = schedule.run(&job, &mut fold, &never).await;
            schedule.settle(false, &never).await;
            ending
        });
        // Every task (and with them the queue) is dropped: the workers end.
        ended.store(true, std::sync::atomic::Ordering::Relaxed);
        drop(runtime);
        drop(job);
        ending
    });
    match ending {
        Ok(Ending::Halted(failure)) => return Err(failure),
        Ok(Ending::Panicked(why)) => panic!("a detect-exam task ended abnormally: {why}"),
        Ok(Ending::Complete | Ending::Exhausted | Ending::Interrupted) => {}
        Err(no) => match no {},
    }
    let rows = fold.0;
    let counts = counts.into_inner().unwrap_or_else(|e| e.into_inner());

    let mut health: BTreeMap<String, DetectorHealth> = members
        .iter()
        .map(|m| {
            (
                m.name().to_string(),
                DetectorHealth {
                    detector: m.name().to_string(),
                    external: m.is_external(),
                    ..Default::default()
                },
            )
        })
        .collect();
    for (name, [ok, panics, timeouts, failures]) in counts {
        let h = health
            .entry(name.clone())
            .or_insert_with(|| DetectorHealth {
                detector: name,
                ..Default::default()
            });
        h.ok += ok;
        h.panics += panics;
        h.timeouts += timeouts;
        h.failures += failures;
    }
    let elapsed = started.elapsed().as_secs_f64();
    Ok(summarize(
        rows,
        members,
        health.into_values().collect(),
        elapsed,
        corpus,
    ))
}

/// A range of scenarios for a worker, and where its graded rows go.
type Request<E> = (
    std::ops::Range<usize>,
    tokio::sync::oneshot::Sender<Ran<Row, LoadFailure<E>>>,
);

/// The detect exam's scenarios as a job: position `i` is scenario `i`, one per task; a
/// task hands its scenario to the workers' queue and waits for the graded row.
struct Scenarios<E> {
    n: usize,
    parallel: usize,
    queue: std::sync::Mutex<std::sync::mpsc::Sender<Request<E>>>,
}

/// What the workers share: the loader and the registered detector families.
struct Work<L> {
    load: L,
    registered: BTreeSet<String>,
}

impl<E: Send + 'static> Job for Scenarios<E> {
    type Output = Row;
    type Halt = LoadFailure<E>;

    fn units(&self) -> u64 {
        self.n as u64
    }

    /// One scenario per task, `parallel` graded at a time (the workers). Scenarios
    /// differ in size a hundredfold, and a finished scenario waits for every earlier
    /// one to be folded: a wide window (its waiting rows are compact, and a scenario is
    /// loaded only when a worker takes it) keeps every worker busy behind a slow one.
    fn window(&self) -> Window {
        Window {
            tasks: (self.parallel * 32).max(64),
            ..Window::units(self.parallel)
        }
    }

    fn run(self: &Arc<Self>, start: u64, end: u64) -> Task<Row, LoadFailure<E>> {
        let (reply, graded) = tokio::sync::oneshot::channel();
        let sent = self
            .queue
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .send((start as usize..end as usize, reply));
        Box::pin(async move {
            match (sent, graded.await) {
                (Ok(()), Ok(ran)) => ran,
                _ => panic!("a detect-exam worker ended before grading its scenario"),
            }
        })
    }
}

impl<L, S, E> Work<L>
where
    L: Fn(usize) -> Result<(S, String), E>,
    S: Borrow<LoadedScenario>,
{
    /// Loads, projects, runs and grades scenarios `range` on `fleet`, tallying each
    /// detector's status (`ok`, `panic`, `timeout`, other) into `statuses`.
    fn grade(
        &self,
        fleet: &Fleet,
        range: std::ops::Range<usize>,
        statuses: &mut StatusCounts,
    ) -> Ran<Row, LoadFailure<E>> {
        let mut outputs = Vec::with_capacity(range.len());
        let mut halt = None;
        for i in range {
            let (loaded, origin) = match (self.load)(i) {
                Ok(x) => x,
                Err(error) => {
                    halt = Some(LoadFailure { index: i, error });
                    break;
                }
            };
            let item = Item {
                scenario: loaded.borrow(),
                origin,
            };
            let input = Arc::new(Input {
                events: projection::events(&item.scenario.scenario),
                baseline: projection::Baseline::from_scenario(
                    item.scenario.scenario.case.baseline.as_ref(),
                ),
            });
            let n_events = input.events.len();
            let runs = fleet.run(input);
            let row = grade_row(&item, &runs, &self.registered, n_events);
            for r in &runs {
                let k = match r.status.kind() {
                    "ok" => 0,
                    "panic" => 1,
                    "timeout" => 2,
                    _ => 3,
                };
                match statuses.get_mut(r.detector.as_str()) {
                    Some(c) => c[k] += 1,
                    None => statuses.entry(r.detector.clone()).or_default()[k] += 1,
                }
            }
            // The scenario, its projection and its findings are dropped here.
            outputs.push(row);
        }
        Ran { outputs, halt }
    }
}

/// The in-order consumer: rows by index.
struct Rows(Vec<Row>);

impl Fold<Row> for Rows {
    type Error = std::convert::Infallible;

    fn add(&mut self, outputs: Vec<Row>) -> Result<(), Self::Error> {
        self.0.extend(outputs);
        Ok(())
    }
}

/// Reorders the report's rows by `key` (stable) and rebuilds every derived list
/// (missed attacks, false alarms) in the new order. For a streaming run, whose rows
/// come in file order while scenario ids are only known after parsing.
pub fn sort_rows<K: Ord>(
    report: DetectReport,
    members: &[Member],
    key: impl Fn(&Row) -> K,
) -> DetectReport {
    let DetectReport {
        corpus_root,
        corpus_count,
        corpus_sha256,
        detector_health,
        mut rows,
        throughput,
        ..
    } = report;
    rows.sort_by_key(|r| key(r));
    let mut r = summarize(
        rows,
        members,
        detector_health,
        throughput.elapsed_secs,
        (&corpus_root, corpus_count, &corpus_sha256),
    );
    r.throughput = throughput;
    r
}

fn cov_entry<'a>(
    cov: &'a mut BTreeMap<String, Coverage>,
    f: &str,
    registered: &BTreeSet<String>,
) -> &'a mut Coverage {
    cov.entry(f.to_string()).or_insert_with(|| Coverage {
        family: f.to_string(),
        registered: registered.contains(f),
        ..Default::default()
    })
}

/// Builds the report from graded rows.
pub fn summarize(
    rows: Vec<Row>,
    members: &[Member],
    detector_health: Vec<DetectorHealth>,
    elapsed_secs: f64,
    corpus: (&str, usize, &str),
) -> DetectReport {
    let names: Vec<String> = members.iter().map(|m| m.name().to_string()).collect();
    summarize_named(rows, &names, detector_health, elapsed_secs, corpus)
}

/// [`summarize`] by the fleet's detector names (in fleet order): what the merge of
/// detect-exam shards calls, having the shards' rows but no fleet.
pub fn summarize_named(
    rows: Vec<Row>,
    detectors: &[String],
    detector_health: Vec<DetectorHealth>,
    elapsed_secs: f64,
    (root, count, sha): (&str, usize, &str),
) -> DetectReport {
    let registered: BTreeSet<String> = detectors.iter().map(|m| m.to_lowercase()).collect();
    let mut totals = Totals {
        scenarios: rows.len(),
        ..Totals::default()
    };
    for r in &rows {
        match r.status {
            RowStatus::Unlabeled => totals.unlabeled += 1,
            s => {
                totals.labeled += 1;
                match s {
                    RowStatus::Pass => totals.passed += 1,
                    RowStatus::Fail => totals.failed += 1,
                    _ => totals.reserved += 1,
                }
            }
        }
    }
    let attacks: Vec<&Row> = rows.iter().filter(|r| r.is_attack()).collect();
    let detected = attacks.iter().filter(|r| r.fully_detected()).count();
    let missed = attacks
        .iter()
        .filter(|r| !r.fully_detected())
        .map(|r| {
            let mut missing = r.missing.clone();
            missing.extend(r.reserved_families.iter().cloned());
            missing.sort();
            Miss {
                id: r.id.clone(),
                missing,
                reserved: r.missing.is_empty(),
            }
        })
        .collect();
    let benign: Vec<&Row> = rows.iter().filter(|r| r.is_benign()).collect();
    let silent = benign.iter().filter(|r| r.violations.is_empty()).count();
    let false_alarms = benign
        .iter()
        .filter(|r| !r.violations.is_empty())
        .map(|r| FalseAlarm {
            id: r.id.clone(),
            families: r.violations.clone(),
        })
        .collect();

    let mut cov: BTreeMap<String, Coverage> = registered
        .iter()
        .map(|f| {
            (
                f.clone(),
                Coverage {
                    family: f.clone(),
                    registered: true,
                    ..Default::default()
                },
            )
        })
        .collect();
    for r in rows.iter().filter(|r| r.status != RowStatus::Unlabeled) {
        for f in &r.must_fire {
            let c = cov_entry(&mut cov, f, &registered);
            c.attack_labels += 1;
            if r.missing.contains(f) {
                c.missed += 1;
            }
            if r.reserved_families.contains(f) {
                c.reserved += 1;
            }
        }
        for f in &r.must_not_fire {
            let c = cov_entry(&mut cov, f, &registered);
            c.benign_labels += 1;
            if r.violations.contains(f) {
                c.false_alarms += 1;
            }
        }
    }
    for r in &rows {
        for f in &r.fired {
            let c = cov_entry(&mut cov, f, &registered);
            c.fired += 1;
        }
    }
    let events: usize = rows.iter().map(|r| r.events).sum();
    totals.events = events;
    let detector_errors = rows.iter().map(|r| r.errors.len()).sum();
    let extra_count = rows.iter().filter(|r| r.origin != "corpus").count();
    let per = |n: usize| {
        if elapsed_secs > 0.0 {
            n as f64 / elapsed_secs
        } else {
            0.0
        }
    };
    DetectReport {
        mode: "detect".into(),
        corpus_root: root.to_string(),
        corpus_count: count,
        corpus_sha256: sha.to_string(),
        extra_count,
        detectors: detectors.to_vec(),
        totals,
        recall: Recall {
            rate: Rate::new(detected, attacks.len()),
            missed,
        },
        precision: Precision {
            rate: Rate::new(silent, benign.len()),
            false_alarms,
        },
        coverage: cov.into_values().collect(),
        detector_health,
        detector_errors,
        throughput: Throughput {
            elapsed_secs,
            events,
            scenarios_per_sec: per(rows.len()),
            events_per_sec: per(events),
        },
        rows,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::{Detector, builtin};
    use gauntlet_corpus::projection::{Baseline, Event, Finding};
    use gauntlet_corpus::scenario::parse_scenario;
    use std::path::{Path, PathBuf};

    fn corpus_root() -> PathBuf {
        Path::new(env!("CARGO_MANIFEST_DIR")).join("../../exams/scenarios")
    }

    fn builtins() -> Vec<Member> {
        builtin().into_iter().map(Member::Builtin).collect()
    }

    /// The built-in fleet's exam of every scenario of `corpus` (extras named so).
    fn exam(corpus: &gauntlet_corpus::load::Corpus) -> DetectReport {
        let items: Vec<Item<'_>> = corpus
            .scenarios
            .iter()
            .map(|s| Item {
                scenario: s,
                origin: if s.extra { "extra" } else { "corpus" }.into(),
            })
            .collect();
        run(
            &items,
            &builtins(),
            &Options::default(),
            ("c", corpus.count, &corpus.digest),
        )
    }

    /// The rows that did not pass or fired an unexpected family, one line each.
    fn not_passing(r: &DetectReport) -> Vec<String> {
        r.rows
            .iter()
            .filter(|x| x.status != RowStatus::Pass || !x.unexpected.is_empty())
            .map(|x| {
                format!(
                    "{} {:?} missing={:?} violations={:?} unexpected={:?}",
                    x.id, x.status, x.missing, x.violations, x.unexpected
                )
            })
            .collect()
    }

    /// The benign-explanation scenarios (exams/benign-explanations): the five
    /// benign ones stay silent, the three attack twins (an explanation that does not fit)
    /// still fire, and the reference corpus beside them keeps full recall and precision.
    #[test]
    fn benign_explanation_scenarios_pass() {
        let extra_dir =
            Path::new(env!("CARGO_MANIFEST_DIR")).join("../../exams/benign-explanations");
        let corpus = gauntlet_corpus::load::load_corpus(&corpus_root(), Some(&extra_dir)).unwrap();
        let extra = gauntlet_corpus::load::load_extra(&extra_dir).unwrap();
        assert_eq!(extra.len(), 8);
        let r = exam(&corpus);
        let bad = not_passing(&r);
        assert!(bad.is_empty(), "{}", bad.join("\n"));
        assert_eq!(r.recall.rate.rate, 1.0);
        assert_eq!(r.precision.rate.rate, 1.0);
        assert_eq!(r.recall.rate.denominator, 77 + 3);
        assert_eq!(r.precision.rate.denominator, 31 + 5);
        assert!(r.precision.rate.wilson_low > 0.89 && r.precision.rate.wilson_high == 1.0);
    }

    #[test]
    fn reference_corpus_passes_with_full_recall_and_precision() {
        let corpus = gauntlet_corpus::load::load_corpus(&corpus_root(), None).unwrap();
        let r = exam(&corpus);
        let bad = not_passing(&r);
        assert!(bad.is_empty(), "{}", bad.join("\n"));
        assert_eq!(r.totals.labeled, 108);
        assert_eq!(r.recall.rate.rate, 1.0);
        assert_eq!(r.precision.rate.rate, 1.0);
        assert_eq!(r.recall.rate.denominator, 77);
        assert_eq!(r.precision.rate.denominator, 31);
        assert_eq!(r.exit_code(), 0);
        assert_eq!(r.detector_errors, 0);
        // Every family is exercised by the corpus in both directions.
        for c in &r.coverage {
            assert!(c.registered && c.attack_labels > 0, "{c:?}");
        }
    }

    /// The benign-context corpus (exams/benign-context): benign rows whose baseline or
    /// event records why the hour or place is expected, look-alike attacks where the
    /// record does not fit, thin and deep histories, attacks with no hour profile but an
    /// honest signal. Both splits, each pinned: dev (developed against) and held-out
    /// (written with it, before the detectors read context).
    #[test]
    fn benign_context_corpus_dev_and_held_out() {
        for (split, attacks, benign) in [("dev", 23, 25), ("heldout", 24, 24)] {
            let root = Path::new(env!("CARGO_MANIFEST_DIR"))
                .join("../../exams/benign-context")
                .join(split);
            let corpus = gauntlet_corpus::load::load_corpus(&root, None).unwrap();
            let r = exam(&corpus);
            let bad = not_passing(&r);
            assert!(bad.is_empty(), "{split}: {}", bad.join("\n"));
            assert_eq!(r.recall.rate.denominator, attacks, "{split}");
            assert_eq!(r.precision.rate.denominator, benign, "{split}");
            assert_eq!(r.detector_errors, 0);
        }
    }

    fn scenario(id: &str, must_fire: &str, must_not_fire: &str, reserved: bool) -> LoadedScenario {
        let text = format!(
            "id: {id}\nfinding: {{id: f}}\nevents:\n  - {{id: e1, timestamp: '2026-05-04T10:00:00Z', source: s, event_type: t, actor: stranger}}\nbaseline:\n  known_entities: {{actors: [a]}}\nexpected_detection: {{must_fire: [{must_fire}], must_not_fire: [{must_not_fire}], reserved: {reserved}}}\n"
        );
        LoadedScenario {
            relpath: format!("{id}.yaml"),
            path: PathBuf::from(format!("{id}.yaml")),
            sha256: String::new(),
            extra: false,
            scenario: parse_scenario(&text, Path::new("x.yaml")).unwrap(),
        }
    }

    /// A stand-in for a family with a registered detector that fires on every event.
    struct Always(&'static str);
    impl Detector for Always {
        fn name(&self) -> &str {
            self.0
        }
        fn detect(&self, events: &[Event], _: &Baseline) -> Vec<Finding> {
            events
                .iter()
                .map(|e| {
                    crate::util::finding(
                        self.0,
                        e,
                        "x",
                        "low",
                        String::new(),
                        serde_json::json!({}),
                    )
                })
                .collect()
        }
    }

    fn grade(scenarios: &[LoadedScenario], members: Vec<Member>) -> DetectReport {
        let items: Vec<Item<'_>> = scenarios
            .iter()
            .map(|s| Item {
                scenario: s,
                origin: "corpus".into(),
            })
            .collect();
        run(&items, &members, &Options::default(), ("c", 0, ""))
    }

    /// The streaming run, in index order whatever the workers do: a load failure ends
    /// it with the lowest failing index (9 fails too), and no new scenario is scheduled
    /// after it (far fewer than all are loaded).
    #[test]
    fn a_load_failure_stops_at_the_lowest_index_and_grades_no_more() {
        use std::sync::atomic::{AtomicUsize, Ordering};
        let scenarios: Vec<LoadedScenario> = (0..400)
            .map(|i| scenario(&format!("s{i}"), "new-actor", "", false))
            .collect();
        let loads = AtomicUsize::new(0);
        let load = |i: usize| {
            loads.fetch_add(1, Ordering::Relaxed);
            if i == 7 || i == 9 {
                Err(i)
            } else {
                Ok((&scenarios[i], "corpus".to_string()))
            }
        };
        let opts = Options {
            parallel: 2,
            ..Options::default()
        };
        let e = run_streaming(400, load, &builtins(), &opts, ("c", 0, "")).unwrap_err();
        assert_eq!((e.index, e.error), (7, 7));
        let loaded = loads.load(Ordering::Relaxed);
        assert!(loaded < 400, "{loaded} scenarios loaded after the failure");
        // Whole: every row, in index order.
        let ok = |i: usize| Ok::<_, usize>((&scenarios[i], "corpus".to_string()));
        let r = run_streaming(400, ok, &builtins(), &opts, ("c", 0, "")).unwrap();
        let ids: Vec<String> = r.rows.iter().map(|x| x.id.clone()).collect();
        let want: Vec<String> = (0..400).map(|i| format!("s{i}")).collect();
        assert_eq!(ids, want);
    }

    #[test]
    fn reserved_rows_pending_vs_registered() {
        let s = vec![
            scenario("pending", "future-family", "", true),
            scenario("pending-unflagged", "future-family", "", false),
            scenario("registered", "new-actor", "", true),
            scenario("registered-miss", "git-oops", "", true),
        ];
        let r = grade(&s, builtins());
        let st: Vec<(String, RowStatus)> =
            r.rows.iter().map(|x| (x.id.clone(), x.status)).collect();
        assert_eq!(
            st,
            vec![
                ("pending".into(), RowStatus::ReservedPending),
                ("pending-unflagged".into(), RowStatus::ReservedPending),
                ("registered".into(), RowStatus::Pass),
                ("registered-miss".into(), RowStatus::Fail),
            ]
        );
        assert_eq!(r.totals.reserved, 2);
        assert_eq!(r.totals.failed, 1);
        assert_eq!(r.totals.passed, 1);
        // Reserved misses stay in the recall denominator and are named as reserved.
        assert_eq!((r.recall.rate.numerator, r.recall.rate.denominator), (1, 4));
        assert!(
            r.recall
                .missed
                .iter()
                .any(|m| m.id == "pending" && m.reserved)
        );
        assert!(
            r.recall
                .missed
                .iter()
                .any(|m| m.id == "registered-miss" && !m.reserved)
        );
        let c = r
            .coverage
            .iter()
            .find(|c| c.family == "future-family")
            .unwrap();
        assert!(!c.registered);
        assert_eq!((c.attack_labels, c.reserved, c.missed), (2, 2, 0));
        assert_eq!(r.exit_code(), 1);

        // Once the family is registered, the same rows are graded normally.
        let mut m = builtins();
        m.push(Member::Builtin(Arc::new(Always("future-family"))));
        let r = grade(&s[..2], m);
        assert!(r.rows.iter().all(|x| x.status == RowStatus::Pass));
        assert_eq!(r.totals.reserved, 0);
    }

    #[test]
    fn must_not_fire_violations_are_never_exempt() {
        // A reserved-pending must_fire does not shelter a must_not_fire violation.
        let s = vec![
            scenario("violates", "future-family", "new-actor", true),
            scenario("benign-violates", "", "new-actor", true),
            scenario("benign-silent", "", "git-oops", false),
        ];
        let r = grade(&s, builtins());
        assert_eq!(r.rows[0].status, RowStatus::Fail);
        assert_eq!(r.rows[0].violations, vec!["new-actor"]);
        assert_eq!(r.rows[1].status, RowStatus::Fail);
        assert_eq!(r.rows[2].status, RowStatus::Pass);
        assert_eq!(r.totals.reserved, 0);
        assert_eq!(r.totals.failed, 2);
        assert_eq!(
            (r.precision.rate.numerator, r.precision.rate.denominator),
            (1, 2)
        );
        assert_eq!(r.precision.false_alarms[0].id, "benign-violates");
        assert_eq!(r.exit_code(), 1);
    }

    #[test]
    fn empty_denominators_are_one_and_unlabeled_rows_are_counted_apart() {
        let text = "id: u\nfinding: {id: f}\n";
        let s = vec![LoadedScenario {
            relpath: "u.yaml".into(),
            path: "u.yaml".into(),
            sha256: String::new(),
            extra: false,
            scenario: parse_scenario(text, Path::new("u.yaml")).unwrap(),
        }];
        let r = grade(&s, builtins());
        assert_eq!(r.totals.unlabeled, 1);
        assert_eq!(r.totals.labeled, 0);
        assert_eq!(r.recall.rate.rate, 1.0);
        assert_eq!(r.precision.rate.rate, 1.0);
        assert_eq!(r.exit_code(), 0);
    }

    #[test]
    fn wilson_intervals_bracket_the_rate() {
        let r = Rate::new(29, 39);
        assert!(r.wilson_low < r.rate && r.rate < r.wilson_high);
        let full = Rate::new(75, 75);
        assert_eq!(full.wilson_high, 1.0);
        assert!(full.wilson_low > 0.95 && full.wilson_low < 1.0);
    }
}
