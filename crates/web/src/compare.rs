//! The compare page's engine: two sides — two runs, or two targets, attacks or judges of
//! one run — paired behavior by behavior from the stored transcripts alone.
//!
//! Nothing but `transcripts.jsonl` and `run.json` of each run is read: a run on a public
//! dataset (`file://`, https) compares like one on a bundled set, since every line
//! carries its behavior id, dataset version, `expected` label, attempt index and every
//! judge's verdict — all a metric needs ([`BehaviorOutcome::from_indexed`]). Metrics are
//! the recorded config's own, built by name; leakage metrics also need each probe's
//! leakage category, which only a bundled dataset gives without reading a file (else they
//! are N/A, saying why).
//!
//! Pairs are `(trial, behavior id)` present in both sides' populations; rates use the
//! exact McNemar test (with Newcombe's paired 95% interval of B − A beside it), scores
//! the paired bootstrap ([`gauntlet_core::paired`], the statistics of `gauntlet
//! compare`). The page opens with the answer — per metric, both sides by name, B − A
//! with its interval, the test and p ([`PairedVerdict`], which the pivot's ▲ / ▼ read too) —
//! and the behaviors whose value flipped follow, with both replies. Two runs are
//! compared only when the cells they pair differ in nothing but the run: attacks and
//! judges of one label with other params (attacker model, grader, transforms), or a
//! dataset at another version, are refused, naming each difference
//! ([`gauntlet_redteam::mismatch`]), unless the user allows it — then every row carries
//! the flag. Two imports (`gauntlet import`) of different prompt sets are the exception
//! to the dataset rule: their behaviors are identified by a hash of the prompt, so they
//! pair by id on the prompts both hold; the page says how many were shared and how many
//! each side held alone ([`OverlapOut`]), and the behaviors only one side holds are in
//! no statistic.
//!
//! [`run_series`] reads one run's per-behavior values of every cell under one judge and
//! metric, and [`pair`] compares two such cells: the pivot's paired marks.

use crate::scan::{self, Run};
use crate::transcripts::MAX_LINE;
use gauntlet_core::behavior::Expected;
use gauntlet_core::outcome::Verdict;
use gauntlet_core::paired::{Comparison, compare_pairs};
use gauntlet_redteam::config::RunConfig;
use gauntlet_redteam::leakage::LeakCategory;
use gauntlet_redteam::metrics::{BehaviorOutcome, Metric, Surface};
use gauntlet_redteam::mismatch::{self, Mismatch};
use gauntlet_results::{RunRecord, TranscriptRecord, TranscriptUnit};
use serde::Serialize;
use serde_json::Value;
use std::collections::{BTreeMap, BTreeSet, HashMap};
use std::io::{BufRead, Read};
use std::path::Path;

/// Most transcript lines one side may have (the page is computed per request).
pub const MAX_LINES: u64 = 2_000_000;
/// Most flipped behaviors listed.
pub const MAX_FLIPS: usize = 200;
/// Characters of each reply shown beside the other.
pub const REPLY_CHARS: usize = 1200;

/// The compared factor.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum By {
    Run,
    Target,
    Attack,
    Judge,
}

impl By {
    pub fn parse(s: &str) -> By {
        match s {
            "target" => By::Target,
            "attack" => By::Attack,
            "judge" => By::Judge,
            _ => By::Run,
        }
    }
    pub fn key(self) -> &'static str {
        match self {
            By::Run => "run",
            By::Target => "target",
            By::Attack => "attack",
            By::Judge => "judge",
        }
    }
}

/// `(attack, target, dataset, judge)`, the compared one as `*`.
pub type CellKey = (String, String, String, String);

/// One behavior's value and the transcript line that shows it.
#[derive(Debug, Clone, Copy)]
struct Point {
    value: f64,
    line: u64,
}

/// A pair: `(trial, behavior id)` and its value on side A and on side B.
pub type Pair<P> = ((u32, String), P, P);

/// A cell of one run without its judge: `(attack, target, dataset)`.
pub type Cell3 = (String, String, String);

/// Per-behavior values of a cell: `(trial, behavior id)` → value.
pub type Values = BTreeMap<(u32, String), f64>;

/// Per cell and metric label: `(trial, behavior id)` → value.
type Series = BTreeMap<(CellKey, String), BTreeMap<(u32, String), Point>>;

/// What one side read.
struct SideData {
    series: Series,
    /// Per cell and metric, why it is N/A for every behavior (if it is).
    na: BTreeMap<(CellKey, String), String>,
    /// Dataset name → version, as the lines record them.
    versions: BTreeMap<String, String>,
    /// Dataset name → the behavior ids its lines hold (kept for imported datasets only,
    /// whose behaviors two runs of different prompt sets pair by id).
    ids: BTreeMap<String, BTreeSet<String>>,
    lines: u64,
    skipped: u64,
}

/// The paired verdict of one cell × metric, formatted: what the compare page's rows and
/// the pivot's cells show, so the two pages can never disagree on a pair.
#[derive(Debug, Clone, Serialize, Default, PartialEq)]
pub struct PairedVerdict {
    /// Pairs (behaviors in the metric's population on both sides).
    pub n: String,
    pub a: String,
    pub b: String,
    /// B − A, signed.
    pub diff: String,
    /// The 95% interval of B − A, `[lo, hi]` signed (empty when there is none).
    pub ci: String,
    /// How the interval was computed.
    pub ci_method: String,
    /// `exact McNemar` (rates) or `paired bootstrap` (scores).
    pub test: String,
    /// The test's two-sided p (`p=0.0020`); for a score, empty (the interval decides).
    pub p: String,
    /// The discordant pairs of a rate (`1 / 7 discordant: A only / B only`), the
    /// interval's method of a score, or why there is no test.
    pub detail: String,
    /// Exact McNemar p < 0.05 (rates), the paired bootstrap interval excluding 0
    /// (scores).
    pub significant: bool,
    /// `up` (B significantly higher), `down`, or empty.
    pub direction: &'static str,
    /// No test: why (N/A in either side, no shared behavior, …).
    pub na: Option<String>,
}

/// Significance level of the pages' paired tests.
pub const ALPHA: f64 = 0.05;

/// Formats a comparison ([`gauntlet_core::paired::compare_pairs`]).
pub fn verdict(cmp: &Comparison) -> PairedVerdict {
    let signed = |c: (f64, f64)| format!("[{:+.3}, {:+.3}]", c.0, c.1);
    match cmp {
        Comparison::Binary {
            n,
            rate_a,
            rate_b,
            test,
            ci,
        } => {
            let significant = test.p_exact < ALPHA;
            PairedVerdict {
                n: n.to_string(),
                a: format!("{rate_a:.3}"),
                b: format!("{rate_b:.3}"),
                diff: format!("{:+.3}", rate_b - rate_a),
                ci: ci.map(signed).unwrap_or_default(),
                ci_method: "Newcombe paired score".into(),
                test: "exact McNemar".into(),
                p: fmt_p(test.p_exact),
                detail: format!("{} / {} discordant (A only / B only)", test.b, test.c),
                significant,
                direction: match (significant, test.c.cmp(&test.b)) {
                    (true, std::cmp::Ordering::Greater) => "up",
                    (true, std::cmp::Ordering::Less) => "down",
                    _ => "",
                },
                na: None,
            }
        }
        Comparison::Score {
            mean_a,
            mean_b,
            diff,
        } => {
            let (up, down) = diff.ci.map_or((false, false), |c| (c.0 > 0.0, c.1 < 0.0));
            PairedVerdict {
                n: diff.n.to_string(),
                a: format!("{mean_a:.3}"),
                b: format!("{mean_b:.3}"),
                diff: format!("{:+.3}", diff.mean_diff),
                ci: diff.ci.map(signed).unwrap_or_default(),
                ci_method: match diff.ci_method {
                    "bootstrap" => format!(
                        "paired bootstrap ({} resamples)",
                        gauntlet_core::stats::BOOTSTRAP_RESAMPLES
                    ),
                    "wilson_bounded" => {
                        "bounded-mean Wilson (every difference equal: the bootstrap has no spread)"
                            .into()
                    }
                    other => other.replace('_', " "),
                },
                test: "paired bootstrap".into(),
                p: String::new(),
                detail: if diff.ci.is_some() {
                    "significant when the interval excludes 0".into()
                } else {
                    "no interval with one pair".into()
                },
                significant: up || down,
                direction: if up {
                    "up"
                } else if down {
                    "down"
                } else {
                    ""
                },
                na: None,
            }
        }
        Comparison::NotApplicable(why) => PairedVerdict {
            n: "—".into(),
            a: "N/A".into(),
            b: "N/A".into(),
            diff: "N/A".into(),
            test: "—".into(),
            detail: why.clone(),
            na: Some(why.clone()),
            ..Default::default()
        },
    }
}

/// One compared cell × metric, formatted.
#[derive(Debug, Clone, Serialize)]
pub struct RowOut {
    /// The cell without the compared factor (`static × aligned · demo · refusal_match`).
    pub cell: String,
    pub attack: String,
    pub target: String,
    pub dataset: String,
    pub judge: String,
    pub metric: String,
    #[serde(flatten)]
    pub verdict: PairedVerdict,
    pub flips: usize,
}

/// A behavior whose value differs between the sides.
#[derive(Debug, Clone, Serialize)]
pub struct Flip {
    pub behavior_id: String,
    pub trial: u32,
    pub cell: String,
    pub metric: String,
    pub a: String,
    pub b: String,
    /// `up` (B higher) or `down`.
    pub direction: &'static str,
    pub a_line: u64,
    pub b_line: u64,
    pub a_reply: String,
    pub b_reply: String,
    pub a_prompt: String,
    pub b_prompt: String,
}

/// The result of a comparison.
#[derive(Debug, Clone, Serialize, Default)]
pub struct Compared {
    pub rows: Vec<RowOut>,
    pub flips: Vec<Flip>,
    pub flips_total: usize,
    /// Differences between the sides other than the compared factor (shown as a flag
    /// when the user allowed them).
    pub mismatches: Vec<String>,
    pub notes: Vec<String>,
    pub a_slug: String,
    pub b_slug: String,
    /// What side A and side B are, by name: the runs (and their targets), targets,
    /// attacks or judges compared.
    pub a_name: String,
    pub b_name: String,
    /// What the names are of (`run`, `target`, `attack`, `judge`).
    pub factor: String,
    /// Imported datasets the two sides hold at different versions (two tools' runs of
    /// different prompt sets): paired by behavior id on the behaviors both hold.
    pub overlap: Vec<OverlapOut>,
}

/// How the behaviors of an imported dataset two sides hold at different versions
/// overlap: the shared ones are the only ones paired; the rest are left out, counted.
#[derive(Debug, Clone, Serialize, PartialEq)]
pub struct OverlapOut {
    pub dataset: String,
    pub shared: usize,
    pub only_a: usize,
    pub only_b: usize,
}

/// Why a comparison cannot be made; `mismatches` set when only allowing them would help.
#[derive(Debug, Clone)]
pub struct Refusal {
    pub message: String,
    pub mismatches: Vec<String>,
}

impl From<RecordedError> for Refusal {
    fn from(e: RecordedError) -> Self {
        Refusal::from(e.to_string())
    }
}

impl From<SideError> for Refusal {
    fn from(e: SideError) -> Self {
        Refusal::from(e.to_string())
    }
}

impl From<String> for Refusal {
    fn from(message: String) -> Self {
        Refusal {
            message,
            mismatches: Vec::new(),
        }
    }
}

/// Why a run's recorded config cannot be read back ([`recorded`]); `slug` names the
/// run in the dashboard.
#[derive(Debug, thiserror::Error)]
pub enum RecordedError {
    /// `run.json` is not a file the dashboard reads.
    #[error(transparent)]
    Read(#[from] scan::ReadCappedError),
    #[error("{slug}: no run.json")]
    NoRunJson { slug: String },
    #[error("{slug}: run.json: {source}")]
    Json {
        slug: String,
        #[source]
        source: serde_json::Error,
    },
    /// The recorded config does not validate in this build.
    #[error("{slug}: {source}")]
    Config {
        slug: String,
        #[source]
        source: gauntlet_redteam::config::RecordedConfigError,
    },
}

/// The recorded config of a run (validated by this build, nothing loaded).
pub fn recorded(run: &Run) -> Result<(RunConfig, RunRecord), RecordedError> {
    let slug = || run.slug.clone();
    let bytes = scan::read_capped(&run.dir, "run.json", scan::MAX_SMALL_FILE)?
        .ok_or_else(|| RecordedError::NoRunJson { slug: slug() })?;
    let rj: RunRecord = serde_json::from_slice(&bytes).map_err(|source| RecordedError::Json {
        slug: slug(),
        source,
    })?;
    let cfg = gauntlet_redteam::config::recorded_config(&rj, Path::new("run.json"), true).map_err(
        |source| RecordedError::Config {
            slug: slug(),
            source,
        },
    )?;
    Ok((cfg, rj))
}

/// Why one side's transcripts cannot be read for a comparison ([`read_side`]); `slug`
/// names the run.
#[derive(Debug, thiserror::Error)]
pub enum SideError {
    #[error("{slug}: transcripts.jsonl is missing or not a regular file")]
    NoTranscripts { slug: String },
    #[error("{slug}: transcripts.jsonl: {source}")]
    Io {
        slug: String,
        #[source]
        source: std::io::Error,
    },
    /// More than [`MAX_LINES`] lines: too many for the dashboard.
    #[error(
        "{slug}: more than {MAX_LINES} transcript lines: compare it on the command line (`gauntlet compare`)"
    )]
    TooManyLines { slug: String },
}

fn metric_label(spec: &gauntlet_core::params::PluginSpec) -> String {
    match serde_json::to_value(&spec.params) {
        Ok(Value::Object(o)) => scan::metric_label(&spec.name, &o),
        _ => spec.name.clone(),
    }
}

/// Leakage categories of the behaviors of every bundled dataset of a config (datasets
/// naming a file or URL are never read): dataset version → behavior id → category.
fn leak_categories(cfg: &RunConfig) -> HashMap<String, HashMap<String, LeakCategory>> {
    let mut out = HashMap::new();
    for spec in &cfg.datasets {
        let params = serde_json::to_value(&spec.params).unwrap_or(Value::Null);
        if crate::verify::unsafe_config_reason(&params).is_some()
            || !matches!(spec.name.as_str(), "demo" | "leakage_demo")
        {
            continue;
        }
        if let Ok(d) = gauntlet_redteam::datasets::load(spec, Path::new("/nonexistent")) {
            let m = d
                .behaviors
                .iter()
                .filter_map(|b| Some((b.id.clone(), LeakCategory::of(b)?)))
                .collect();
            out.insert(d.version, m);
        }
    }
    out
}

/// Reads one side: `keep` says which lines belong to it, `key` makes the cell key of a
/// line (and a judge) with the compared factor starred, `judge` keeps the verdicts of
/// one judge only (by = judge).
fn read_side(
    run: &Run,
    cfg: &RunConfig,
    metrics: &[(String, Box<dyn Metric>)],
    keep: &dyn Fn(&TranscriptUnit) -> bool,
    key: &dyn Fn(&TranscriptUnit, &str) -> CellKey,
    judge: Option<&str>,
) -> Result<SideData, SideError> {
    if !scan::regular_file(&run.dir, "transcripts.jsonl") {
        return Err(SideError::NoTranscripts {
            slug: run.slug.clone(),
        });
    }
    let io = |source| SideError::Io {
        slug: run.slug.clone(),
        source,
    };
    let leaks = leak_categories(cfg);
    let f = gauntlet_core::files::open(
        &run.dir.join("transcripts.jsonl"),
        gauntlet_core::files::Kind::TRANSCRIPTS,
    )
    .map_err(|e| io(e.into_io()))?;
    let mut r = std::io::BufReader::with_capacity(256 << 10, f);
    let mut out = SideData {
        series: BTreeMap::new(),
        na: BTreeMap::new(),
        versions: BTreeMap::new(),
        ids: BTreeMap::new(),
        lines: 0,
        skipped: 0,
    };
    // The unit being gathered: its identity and (line, attempt, verdicts) per attempt.
    type Unit = (u32, String, String, String, String, String, Expected);
    let mut unit: Option<Unit> = None;
    let mut attempts: Vec<(u64, u32, Vec<Verdict>)> = Vec::new();
    let flush = |unit: &Unit, attempts: &mut Vec<(u64, u32, Vec<Verdict>)>, out: &mut SideData| {
        if attempts.is_empty() {
            return;
        }
        let (trial, bid, attack, target, dataset, dv, expected) = unit;
        let mut judges: Vec<&str> = Vec::new();
        for (_, _, vs) in attempts.iter() {
            for v in vs {
                if !judges.contains(&v.judge.as_str()) && judge.is_none_or(|j| j == v.judge) {
                    judges.push(&v.judge);
                }
            }
        }
        let leak = leaks.get(dv).and_then(|m| m.get(bid)).copied();
        let line = TranscriptUnit {
            trial: Some(*trial),
            behavior_id: bid.clone(),
            attack_name: attack.clone(),
            target_name: target.clone(),
            dataset: dataset.clone(),
            dataset_version: dv.clone(),
            expected: *expected,
            attempt: 0,
            error: None,
            verdicts: Vec::new(),
        };
        for j in judges {
            let vs: Vec<(u32, &Verdict, u64)> = attempts
                .iter()
                .filter_map(|(l, a, vs)| vs.iter().find(|v| v.judge == j).map(|v| (*a, v, *l)))
                .collect();
            let mut o = BehaviorOutcome::from_indexed(
                *expected,
                vs.iter().map(|(a, v, _)| (*a, *v)),
                vs.len(),
            );
            o.leak = leak;
            if !o.judged() {
                continue;
            }
            // The line that shows the outcome: the first success, else the last attempt.
            let shown = o
                .first_success
                .and_then(|s| vs.iter().find(|(a, _, _)| *a == s))
                .or(vs.last())
                .map_or(0, |x| x.2);
            let k = key(&line, j);
            for (label, m) in metrics {
                if m.usage_metric().is_some() {
                    out.na.insert(
                        (k.clone(), label.clone()),
                        "a usage metric (tokens, cost) has no per-behavior outcome to pair".into(),
                    );
                    continue;
                }
                if let Some(v) = m.value(&o) {
                    out.series
                        .entry((k.clone(), label.clone()))
                        .or_default()
                        .insert(
                            (*trial, bid.clone()),
                            Point {
                                value: v,
                                line: shown,
                            },
                        );
                } else {
                    out.series.entry((k.clone(), label.clone())).or_default();
                }
            }
        }
        attempts.clear();
    };
    let mut buf = Vec::new();
    let mut line_no = 0u64;
    loop {
        buf.clear();
        let n = r
            .by_ref()
            .take(MAX_LINE as u64 + 1)
            .read_until(b'\n', &mut buf)
            .map_err(io)?;
        if n == 0 {
            break;
        }
        let this = line_no;
        line_no += 1;
        if line_no > MAX_LINES {
            return Err(SideError::TooManyLines {
                slug: run.slug.clone(),
            });
        }
        if buf.last() != Some(&b'\n') && n > MAX_LINE {
            // An overlong line: skip to its end.
            out.skipped += 1;
            let mut rest = Vec::new();
            let _ = r.read_until(b'\n', &mut rest);
            continue;
        }
        let Ok(l) = serde_json::from_slice::<TranscriptUnit>(&buf) else {
            if !buf.iter().all(u8::is_ascii_whitespace) {
                out.skipped += 1;
            }
            continue;
        };
        if !keep(&l) {
            continue;
        }
        out.versions
            .entry(l.dataset.clone())
            .or_insert_with(|| l.dataset_version.clone());
        if gauntlet_redteam::datasets::imported::is_imported(&l.dataset, &l.dataset_version) {
            let ids = out.ids.entry(l.dataset.clone()).or_default();
            if !ids.contains(&l.behavior_id) {
                ids.insert(l.behavior_id.clone());
            }
        }
        let id: Unit = (
            l.trial(),
            l.behavior_id.clone(),
            l.attack_name.clone(),
            l.target_name.clone(),
            l.dataset.clone(),
            l.dataset_version.clone(),
            l.expected,
        );
        if unit.as_ref() != Some(&id) {
            if let Some(u) = &unit {
                flush(u, &mut attempts, &mut out);
            }
            unit = Some(id);
        }
        attempts.push((this, l.attempt, l.verdicts));
    }
    if let Some(u) = &unit {
        flush(u, &mut attempts, &mut out);
    }
    out.lines = line_no;
    Ok(out)
}

/// The metrics of a recorded config, each with its leaderboard label.
fn metrics_of(cfg: &RunConfig) -> Vec<(String, Box<dyn Metric>)> {
    cfg.metrics
        .iter()
        .filter_map(|s| {
            gauntlet_redteam::registry::build_metric(s)
                .ok()
                .map(|m| (metric_label(s), m))
        })
        .collect()
}

fn fmt_p(p: f64) -> String {
    gauntlet_core::stats::fmt_p(p)
}

/// Text of one transcript line for the side-by-side view: (prompt, reply).
fn texts(run: &Run, index: Option<&crate::transcripts::LineIndex>, line: u64) -> (String, String) {
    let cut = |s: &str| match s.char_indices().nth(REPLY_CHARS) {
        Some((i, _)) => format!("{}…", &s[..i]),
        None => s.to_owned(),
    };
    let Ok(Some(Ok(v))) = crate::transcripts::line::<TranscriptRecord>(
        &run.dir.join("transcripts.jsonl"),
        index,
        line,
    ) else {
        return (String::new(), "(line unavailable)".into());
    };
    let reply = v
        .last_reply()
        .map(|m| m.content.clone())
        .or_else(|| v.error.as_ref().map(|e| format!("(error: {e})")))
        .unwrap_or_default();
    let prompt = v
        .last_prompt()
        .map(|m| m.content.clone())
        .unwrap_or_default();
    (cut(&prompt), cut(&reply))
}

/// The two sides of a comparison.
pub struct Sides<'a> {
    pub by: By,
    pub run_a: &'a Run,
    pub run_b: &'a Run,
    /// The compared values (targets, attacks or judges) when `by` is not `Run`.
    pub a: String,
    pub b: String,
    pub allow_mismatch: bool,
    /// The metric whose flips are listed (empty: every rate metric).
    pub flips_metric: String,
}

/// Compares the two sides (blocking: reads both transcripts): each side's series read,
/// the cells they share and what else differs between them checked, then each shared
/// cell compared and the flips' texts read.
pub fn compare(
    s: &Sides,
    index_a: Option<&crate::transcripts::LineIndex>,
    index_b: Option<&crate::transcripts::LineIndex>,
) -> Result<Compared, Refusal> {
    for r in [s.run_a, s.run_b] {
        if r.kind != scan::Kind::RedTeam {
            return Err(format!(
                "{}: only red-team runs (jailbreak, leakage, injection) have transcripts to pair",
                r.slug
            )
            .into());
        }
    }
    let (cfg_a, _) = recorded(s.run_a)?;
    let (cfg_b, _) = if s.run_b.slug == s.run_a.slug {
        (cfg_a.clone(), RunRecord::default())
    } else {
        recorded(s.run_b)?
    };
    let labels = Labels {
        by: s.by,
        single: cfg_a.targets.len() == 1 && cfg_b.targets.len() == 1,
        target_a: cfg_a.targets.first().map(|t| t.label()).unwrap_or_default(),
        target_b: cfg_b.targets.first().map(|t| t.label()).unwrap_or_default(),
    };
    let mut notes = Vec::new();
    if s.by == By::Run && labels.single {
        notes.push(format!(
            "each run has one target: {} is paired with {}",
            labels.target_a, labels.target_b
        ));
    }
    let (a, b) = read_sides(s, &cfg_a, &cfg_b, labels.single)?;
    for (side, d, r) in [("A", &a, s.run_a), ("B", &b, s.run_b)] {
        if d.skipped > 0 {
            notes.push(format!(
                "{side} ({}): {} transcript line(s) skipped (over {} MiB or not a transcript line)",
                r.slug,
                d.skipped,
                MAX_LINE >> 20
            ));
        }
    }
    // Imports of different prompt sets pair by behavior id on the prompts both hold.
    let imported = imported_overlap(&a, &b);
    if let Some((name, _)) = imported.iter().find(|(_, (ids, _))| ids.is_empty()) {
        let o = &imported[name].1;
        return Err(format!(
            "the two sides are imports of disjoint prompt sets of `{name}` ({} and {} behaviors, none shared): a paired comparison needs prompts both sides sent",
            o.only_a, o.only_b
        )
        .into());
    }
    // What the pairs may differ in: nothing but the compared factor.
    let shared: Vec<&(CellKey, String)> = a
        .series
        .keys()
        .filter(|k| b.series.contains_key(*k))
        .collect();
    if shared.is_empty() {
        return Err(format!(
            "the two sides share no (attack, target, dataset, judge, metric) cell with transcripts; compare runs of the same attacks, datasets, judges and metrics{}",
            if s.by == By::Run { " (targets are matched by label, or one against one)" } else { "" }
        )
        .into());
    }
    let mismatches = mismatches(s, (&cfg_a, &cfg_b), (&a, &b), &shared, &imported);
    if !mismatches.is_empty() && !s.allow_mismatch {
        return Err(Refusal {
            message: "the paired cells differ in more than the compared factor, so a difference between them would not be the factor's effect".into(),
            mismatches,
        });
    }
    let mut rows = Vec::new();
    let mut flips = Vec::new();
    let mut flips_total = 0;
    for k in &shared {
        let (cell, metric) = (&k.0, &k.1);
        let (mut xa, mut xb) = (
            std::borrow::Cow::Borrowed(&a.series[*k]),
            std::borrow::Cow::Borrowed(&b.series[*k]),
        );
        // An imported dataset of different prompt sets: only the shared behaviors count.
        if let Some((ids, _)) = imported.get(&cell.2) {
            xa.to_mut().retain(|(_, id), _| ids.contains(id));
            xb.to_mut().retain(|(_, id), _| ids.contains(id));
        }
        let (xa, xb) = (xa.as_ref(), xb.as_ref());
        let score = is_score(metric);
        let (cmp, pairs) = pair(
            xa,
            xb,
            |p| p.value,
            a.na.get(*k).or(b.na.get(*k)).cloned(),
            metric,
            ("A", "B"),
            &seed_parts(cell, metric),
        );
        let cell_flips: Vec<&((u32, String), Point, Point)> =
            if matches!(cmp, Comparison::NotApplicable(_)) {
                Vec::new()
            } else {
                pairs
                    .iter()
                    .filter(|(_, x, y)| (x.value - y.value).abs() > 1e-9)
                    .collect()
            };
        let listed = if s.flips_metric.is_empty() {
            !score
        } else {
            *metric == s.flips_metric
        };
        if listed {
            flips_total += cell_flips.len();
            let cell_label = labels.cell(cell);
            for (id, x, y) in cell_flips
                .iter()
                .take(MAX_FLIPS.saturating_sub(flips.len()))
            {
                flips.push(Flip {
                    behavior_id: id.1.clone(),
                    trial: id.0,
                    cell: cell_label.clone(),
                    metric: metric.clone(),
                    a: format!("{:.3}", x.value),
                    b: format!("{:.3}", y.value),
                    direction: if y.value > x.value { "up" } else { "down" },
                    a_line: x.line,
                    b_line: y.line,
                    a_reply: String::new(),
                    b_reply: String::new(),
                    a_prompt: String::new(),
                    b_prompt: String::new(),
                });
            }
        }
        rows.push(labels.row(cell, metric, &cmp, cell_flips.len()));
    }
    for f in &mut flips {
        let (pa, ra) = texts(s.run_a, index_a, f.a_line);
        let (pb, rb) = texts(s.run_b, index_b, f.b_line);
        (f.a_prompt, f.a_reply, f.b_prompt, f.b_reply) = (pa, ra, pb, rb);
    }
    let (a_name, b_name) = match s.by {
        By::Run if labels.single && labels.target_a != labels.target_b => (
            format!("{} ({})", s.run_a.name, labels.target_a),
            format!("{} ({})", s.run_b.name, labels.target_b),
        ),
        By::Run => (s.run_a.name.clone(), s.run_b.name.clone()),
        _ => (s.a.clone(), s.b.clone()),
    };
    Ok(Compared {
        rows,
        flips,
        flips_total,
        mismatches,
        notes,
        a_slug: s.run_a.slug.clone(),
        b_slug: s.run_b.slug.clone(),
        a_name,
        b_name,
        factor: s.by.key().into(),
        overlap: imported.into_values().map(|(_, o)| o).collect(),
    })
}

/// The imported datasets the two sides hold at different versions: dataset name → (the
/// behavior ids both hold, the overlap).
fn imported_overlap(
    a: &SideData,
    b: &SideData,
) -> BTreeMap<String, (BTreeSet<String>, OverlapOut)> {
    let mut out = BTreeMap::new();
    for (name, va) in &a.versions {
        let Some(vb) = b.versions.get(name) else {
            continue;
        };
        if va == vb
            || !gauntlet_redteam::datasets::imported::is_imported(name, va)
            || !gauntlet_redteam::datasets::imported::is_imported(name, vb)
        {
            continue;
        }
        let (ia, ib) = (
            a.ids.get(name).cloned().unwrap_or_default(),
            b.ids.get(name).cloned().unwrap_or_default(),
        );
        let both: BTreeSet<String> = ia.intersection(&ib).cloned().collect();
        let o = OverlapOut {
            dataset: name.clone(),
            shared: both.len(),
            only_a: ia.len() - both.len(),
            only_b: ib.len() - both.len(),
        };
        out.insert(name.clone(), (both, o));
    }
    out
}

/// Whether metric label `metric` (`name` or `name (params)`) is a score (compared by the
/// paired bootstrap) rather than a rate.
pub fn is_score(metric: &str) -> bool {
    gauntlet_redteam::registry::is_score(metric.split(' ').next().unwrap_or(metric))
}

/// Compares two sides' per-behavior values of one cell × metric (`value` reads a value
/// out of an entry): the pairs are the `(trial, behavior)` in both; N/A when `na` says
/// so, when either side has no judged behavior in the metric's population (`names`
/// say which side), or when a leakage metric lacks its probes' categories. The one
/// pairing of the compare page and the pivot; `seed` seeds a score's bootstrap.
pub fn pair<P: Copy>(
    xa: &BTreeMap<(u32, String), P>,
    xb: &BTreeMap<(u32, String), P>,
    value: impl Fn(&P) -> f64,
    na: Option<String>,
    metric: &str,
    names: (&str, &str),
    seed: &[&str],
) -> (Comparison, Vec<Pair<P>>) {
    let base = metric.split(' ').next().unwrap_or(metric);
    let pairs: Vec<Pair<P>> = xa
        .iter()
        .filter_map(|(id, pa)| xb.get(id).map(|pb| (id.clone(), *pa, *pb)))
        .collect();
    let leakage = gauntlet_redteam::registry::metric_facts(base)
        .is_some_and(|f| f.surface == Some(Surface::Leakage));
    let na = na.or_else(|| {
        (leakage && (xa.is_empty() || xb.is_empty())).then(|| {
            "a leakage metric needs each probe's leakage category, which the dashboard has only for bundled datasets (it never reads a dataset file): use `gauntlet compare`".to_owned()
        })
    });
    let cmp = match na {
        Some(why) => Comparison::NotApplicable(why),
        None if xa.is_empty() || xb.is_empty() => Comparison::NotApplicable(format!(
            "no judged behavior in the metric's population in {}",
            if xa.is_empty() { names.0 } else { names.1 }
        )),
        None => {
            let p: Vec<(f64, f64)> = pairs.iter().map(|(_, x, y)| (value(x), value(y))).collect();
            compare_pairs(&p, is_score(metric), seed)
        }
    };
    (cmp, pairs)
}

/// The seed parts of a paired comparison of cell `(attack, target, dataset, judge)`, the
/// compared factor starred: the compare page and the pivot seed a score's bootstrap
/// alike, so the same pair gets the same interval on both.
pub fn seed_parts<'a>(cell: &'a CellKey, metric: &'a str) -> [&'a str; 6] {
    ["compare", &cell.0, &cell.1, &cell.2, &cell.3, metric]
}

/// One run's per-behavior values of every cell under one judge and one metric label:
/// the pivot's evidence ([`run_series`]).
#[derive(Debug, Clone)]
pub struct RunSeries {
    /// `(attack, target, dataset)` → `(trial, behavior id)` → value.
    pub cells: BTreeMap<Cell3, Values>,
    /// Cells whose metric is N/A for every behavior, with why.
    pub na: BTreeMap<Cell3, String>,
    /// The run's recorded config (to check that two runs' cells differ in nothing but
    /// what is compared).
    pub config: RunConfig,
}

/// Reads the per-behavior values of every cell of `run` under `judge` for metric label
/// `metric` from its transcripts (blocking).
pub fn run_series(run: &Run, judge: &str, metric: &str) -> Result<RunSeries, Refusal> {
    if run.kind != scan::Kind::RedTeam {
        return Err(format!(
            "{}: only red-team runs have per-behavior outcomes to pair",
            run.slug
        )
        .into());
    }
    let (cfg, _) = recorded(run)?;
    let all = metrics_of(&cfg);
    // The leaderboard's label of the metric, else (a param left to its default in the
    // config but recorded on the row) the one metric of that name.
    let name = metric.split(' ').next().unwrap_or(metric);
    let exact = all.iter().any(|(label, _)| label == metric);
    let of_name = cfg.metrics.iter().filter(|m| m.name == name).count() == 1;
    let metrics: Vec<(String, Box<dyn Metric>)> = all
        .into_iter()
        .filter(|(label, _)| {
            label == metric || (!exact && of_name && label.split(' ').next() == Some(name))
        })
        .map(|(_, m)| (metric.to_owned(), m))
        .collect();
    if metrics.is_empty() {
        return Err(format!("{}: the run's config has no metric `{metric}`", run.slug).into());
    }
    let key = |l: &TranscriptUnit, j: &str| -> CellKey {
        (
            l.attack_name.clone(),
            l.target_name.clone(),
            l.dataset.clone(),
            j.to_owned(),
        )
    };
    let side = read_side(run, &cfg, &metrics, &|_| true, &key, Some(judge))?;
    let short = |k: &CellKey| (k.0.clone(), k.1.clone(), k.2.clone());
    Ok(RunSeries {
        cells: side
            .series
            .iter()
            .map(|((k, _), m)| {
                (
                    short(k),
                    m.iter().map(|(id, p)| (id.clone(), p.value)).collect(),
                )
            })
            .collect(),
        na: side
            .na
            .iter()
            .map(|((k, _), w)| (short(k), w.clone()))
            .collect(),
        config: cfg,
    })
}

/// Both sides' series, each cell keyed with the compared factor as `*` and each side
/// kept to its value of the factor.
fn read_sides(
    s: &Sides,
    cfg_a: &RunConfig,
    cfg_b: &RunConfig,
    single: bool,
) -> Result<(SideData, SideData), SideError> {
    // Two runs pair an import's per-source attacks (a tool's probes, plugins, tasks,
    // named apart by each tool) as one `imported` attack over the prompts they share.
    let run_attack = |l: &TranscriptUnit| {
        if gauntlet_redteam::datasets::imported::is_imported(&l.dataset, &l.dataset_version) {
            "imported".to_string()
        } else {
            l.attack_name.clone()
        }
    };
    let key = |l: &TranscriptUnit, j: &str| -> CellKey {
        let star = || "*".to_string();
        match s.by {
            // One target a side: paired whatever their labels.
            By::Run if single => (run_attack(l), star(), l.dataset.clone(), j.into()),
            By::Run => (
                run_attack(l),
                l.target_name.clone(),
                l.dataset.clone(),
                j.into(),
            ),
            By::Target => (l.attack_name.clone(), star(), l.dataset.clone(), j.into()),
            By::Attack => (star(), l.target_name.clone(), l.dataset.clone(), j.into()),
            By::Judge => (
                l.attack_name.clone(),
                l.target_name.clone(),
                l.dataset.clone(),
                star(),
            ),
        }
    };
    let side = |run: &Run, cfg: &RunConfig, value: &str| {
        let keep = |l: &TranscriptUnit| match s.by {
            By::Run | By::Judge => true,
            By::Target => l.target_name == value,
            By::Attack => l.attack_name == value,
        };
        let judge = (s.by == By::Judge).then_some(value);
        read_side(run, cfg, &metrics_of(cfg), &keep, &key, judge)
    };
    Ok((side(s.run_a, cfg_a, &s.a)?, side(s.run_b, cfg_b, &s.b)?))
}

/// What the shared cells differ in besides the compared factor: dataset versions, and
/// for runs compared whole, the attacks' and judges' settings.
fn mismatches(
    s: &Sides,
    (cfg_a, cfg_b): (&RunConfig, &RunConfig),
    (a, b): (&SideData, &SideData),
    shared: &[&(CellKey, String)],
    imported: &BTreeMap<String, (BTreeSet<String>, OverlapOut)>,
) -> Vec<String> {
    let mut mism: Vec<Mismatch> = Vec::new();
    for (name, va) in &a.versions {
        // Imports of different prompt sets are paired by id, not refused.
        if imported.contains_key(name) {
            continue;
        }
        if let Some(vb) = b.versions.get(name)
            && let Some(m) = mismatch::dataset_mismatch(name, va, vb)
        {
            mism.push(m);
        }
    }
    if s.by == By::Run {
        let attacks: BTreeSet<&str> = shared.iter().map(|k| k.0.0.as_str()).collect();
        let judges: BTreeSet<&str> = shared.iter().map(|k| k.0.3.as_str()).collect();
        mism.extend(mismatch::config_mismatches(
            cfg_a,
            cfg_b,
            &attacks.into_iter().collect::<Vec<_>>(),
            &judges.into_iter().collect::<Vec<_>>(),
        ));
    }
    mism.iter().map(ToString::to_string).collect()
}

/// How a comparison names its cells and fills its rows.
struct Labels {
    by: By,
    /// Each run has one target (paired whatever their labels).
    single: bool,
    target_a: String,
    target_b: String,
}

impl Labels {
    /// A cell as a flip shows it.
    fn cell(&self, cell: &CellKey) -> String {
        match self.by {
            By::Run if cell.1 == "*" => format!(
                "{} × {} vs {} · {} · {}",
                cell.0, self.target_a, self.target_b, cell.2, cell.3
            ),
            By::Run => format!("{} × {} · {} · {}", cell.0, cell.1, cell.2, cell.3),
            By::Target => format!("{} · {} · {}", cell.0, cell.2, cell.3),
            By::Attack => format!("{} · {} · {}", cell.1, cell.2, cell.3),
            By::Judge => format!("{} × {} · {}", cell.0, cell.1, cell.2),
        }
    }

    /// A cell's row: the starred factor shown as what was compared, and the comparison.
    fn row(&self, cell: &CellKey, metric: &str, cmp: &Comparison, flips: usize) -> RowOut {
        let shown = |f: &String| if f == "*" { String::new() } else { f.clone() };
        RowOut {
            cell: self.cell(cell),
            attack: shown(&cell.0),
            target: shown(&cell.1),
            dataset: cell.2.clone(),
            judge: shown(&cell.3),
            metric: metric.to_owned(),
            verdict: verdict(cmp),
            flips,
        }
    }
}
