//! `gauntlet label`: measuring a run's judges on that run's own replies.
//!
//! A judge card measured on XSTest says how a judge errs on XSTest's models; a target
//! that writes differently gets different errors. Labelling a sample of the target's own
//! replies gives each target its own card, and the run's rates corrected with it.
//!
//! **The sample** ([`draw`]) is seeded (the run's seed) and stratified per target by the
//! verdict of the run's first refusal-deciding judge (its *primary* judge): replies it
//! was uncertain about come first (they await a label), then the decided ones in an order
//! whose every prefix is a proportional allocation over the refusal and compliance
//! strata, so the labels a user stops at are a self-weighting sample and the sensitivity
//! and specificity measured from them are unbiased for that judge. Within a stratum the
//! order is a seeded hash of the reply's identity: it does not depend on file order,
//! concurrency or the sample size, and memory is the sample, not the run. Targets take
//! turns.
//!
//! **Labels** ([`LABELS_FILE`]) live in the run directory, one JSON object per labelled
//! reply (sorted by id, so the file is the same whatever order they were given in), with
//! the prompt, the reply and each judge's verdict, in the shape `judge-eval` reads. The
//! file is in the run's manifest; a rerun of the run keeps it and applies it again.
//!
//! **Cards** ([`cards`]): per target × refusal judge, the confusion of the human labels
//! with that judge's decided verdicts ([`LABEL_CARDS_FILE`]). A target's cells are then
//! corrected with its own card (`Plan::card_for`, Rogan–Gladen with both sampling errors),
//! and each card says how many more labels would halve the corrected interval.

use crate::plan::Plan;
use crate::run::pretty;
use crate::stored::{StoredError, StoredRun, recount};
use gauntlet_core::behavior::Expected;
use gauntlet_core::files::ReadError;
use gauntlet_core::hash::{HashWriter, sha256_hex};
use gauntlet_core::judge_eval::{CARD_FORMAT, Confusion, JudgeCard, LabelledSetRef};
use gauntlet_core::message::Role;
use gauntlet_core::outcome::{Outcome, Verdict};
use gauntlet_job::manifest::VerifyError;
use gauntlet_job::rundir::{MANIFEST, Manifest, RunDir, write_atomic};
use gauntlet_results::RunSummary;
use serde::{Deserialize, Serialize};
use std::collections::{BTreeMap, BinaryHeap};
use std::path::{Path, PathBuf};
use std::sync::Arc;

/// The labels of a run, in its directory.
pub const LABELS_FILE: &str = "labels.jsonl";
/// The cards measured from them.
pub const LABEL_CARDS_FILE: &str = "label_cards.json";
/// The format tag of [`LABEL_CARDS_FILE`].
pub const LABEL_CARDS_FORMAT: &str = "gauntlet-label-cards/1";
/// The largest labels file read (a few thousand labels are a few MB).
const MAX_LABELS_BYTES: u64 = 64 << 20;
/// Replies drawn per target unless told otherwise.
pub const DEFAULT_PER_TARGET: usize = 100;

/// Why a run cannot be labelled, or its labels read, applied or written. Every message
/// names the file or directory at fault and, where there is one, the fix.
#[derive(Debug, thiserror::Error)]
pub enum LabelError {
    /// No judge of the run decides refusals (`judges`: the run's judges).
    #[error(
        "{}: none of the run's judges ({}) says whether a reply is a refusal, so there is nothing for a label to measure; label a run judged by refusal_match, refusal_classifier, a rubric or a guard",
        .dir.display(),
        .judges.join(", ")
    )]
    NoRefusalJudge { dir: PathBuf, judges: Vec<String> },
    /// The run cannot be read back.
    #[error(transparent)]
    Stored(#[from] StoredError),
    /// The directory cannot be locked (the message names it).
    #[error(transparent)]
    Lock(std::io::Error),
    /// The run directory cannot be written (a read-only filesystem, permissions), and
    /// labelling writes into it.
    #[error(
        "{} cannot be written ({source}): `gauntlet label` saves labels.jsonl, label_cards.json, the corrected results.json and the reports into the run directory; label a writable copy (cp -r {} …), or write the sample elsewhere with --csv-out FILE (where labelling stands is shown without writing)",
        .dir.display(),
        .dir.display()
    )]
    ReadOnly {
        dir: PathBuf,
        #[source]
        source: std::io::Error,
    },
    /// The directory does not verify against its manifest.
    #[error(transparent)]
    Unverified(#[from] VerifyError),
    /// The manifest lists no run.json, results.json or transcripts.jsonl.
    #[error(
        "{}: its {MANIFEST} lists no {file}: label needs a run directory (runs/<run_name>), not a rescore, merge input or exam",
        .dir.display()
    )]
    NotARunDir { dir: PathBuf, file: &'static str },
    /// The path has no name.
    #[error("{} is not a run directory", .dir.display())]
    NotADirectory { dir: PathBuf },
    /// The path cannot be made absolute.
    #[error("{}: {source}", .dir.display())]
    Absolute {
        dir: PathBuf,
        #[source]
        source: std::io::Error,
    },
    /// results.json cannot be read (missing, too large, not a regular file).
    #[error(transparent)]
    Read(#[from] ReadError),
    #[error("{} is not a gauntlet results file: {source}", .path.display())]
    NotResults {
        path: PathBuf,
        #[source]
        source: serde_json::Error,
    },
    #[error("cannot read {}: {source}", .path.display())]
    ReadFile {
        path: PathBuf,
        #[source]
        source: std::io::Error,
    },

    /// The labels file is a special file, a link or too large.
    #[error(
        "{} must be a regular file of at most {} MiB",
        .path.display(),
        MAX_LABELS_BYTES >> 20
    )]
    NotRegular { path: PathBuf },
    #[error(
        "{}:{line}: not a label line ({source}); the file is written by `gauntlet label`: restore it, or remove it to start labelling again",
        .path.display()
    )]
    NotALabelLine {
        path: PathBuf,
        line: usize,
        #[source]
        source: serde_json::Error,
    },
    #[error("{}:{line}: a line without a `label`", .path.display())]
    NoLabel { path: PathBuf, line: usize },
    #[error("{}:{line}: reply {id} is labelled twice", .path.display())]
    Twice {
        path: PathBuf,
        line: usize,
        id: String,
    },
    /// The labels file is not the one the last `gauntlet label` recorded in the
    /// manifest (`listed`: the manifest lists another; otherwise it lists none).
    #[error(
        "{} is not the labels file `gauntlet label` wrote (its {MANIFEST} {}); restore it, or remove it and label again (`gauntlet label {}`)",
        .path.display(),
        manifest_says(*.listed),
        .dir.display()
    )]
    NotWritten {
        path: PathBuf,
        dir: PathBuf,
        listed: bool,
    },
    #[error("reply {id:?} is not in this run's labelling sample")]
    NotInSample { id: String },
    #[error("cannot write {}: {source}", .path.display())]
    WriteCsv {
        path: PathBuf,
        #[source]
        source: csv::Error,
    },
    /// The CSV's header cannot be read.
    #[error("{}: {source}", .path.display())]
    CsvHeader {
        path: PathBuf,
        #[source]
        source: csv::Error,
    },
    /// The CSV lacks the `id` or `label` column (`found`: the columns it has).
    #[error(
        "{}: no `{column}` column (found: {}); write the file with `gauntlet label RUN_DIR --csv-out FILE`",
        .path.display(),
        .found.join(", ")
    )]
    NoColumn {
        path: PathBuf,
        column: &'static str,
        found: Vec<String>,
    },
    #[error("{} line {row}: {source}", .path.display())]
    CsvRow {
        path: PathBuf,
        row: usize,
        #[source]
        source: csv::Error,
    },
    /// A CSV label that is not one (as the file has it).
    #[error(
        "{} line {row}: label {label:?} is not refusal, compliance or skip (r, c, s); leave it empty for a reply not labelled yet",
        .path.display()
    )]
    BadLabel {
        path: PathBuf,
        row: usize,
        label: String,
    },
    #[error(
        "{} line {row}: reply {id:?} is not in this run's labelling sample (was the file written for another run, or with a larger --per-target?)",
        .path.display()
    )]
    CsvNotInSample {
        path: PathBuf,
        row: usize,
        id: String,
    },
}

/// What the manifest says of a labels file that is not the one it recorded
/// ([`LabelError::NotWritten`]).
fn manifest_says(listed: bool) -> &'static str {
    if listed {
        "records another"
    } else {
        "does not list it"
    }
}

/// A human's label of one reply.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Label {
    Refusal,
    Compliance,
    /// Seen and not labelled (unreadable, neither, not sure): never counted.
    Skip,
}

impl Label {
    pub fn parse(raw: &str) -> Option<Label> {
        match raw.trim().to_ascii_lowercase().as_str() {
            "refusal" | "refused" | "r" => Some(Label::Refusal),
            "compliance" | "complied" | "c" => Some(Label::Compliance),
            "skip" | "s" => Some(Label::Skip),
            _ => None,
        }
    }
    pub fn as_str(self) -> &'static str {
        match self {
            Label::Refusal => "refusal",
            Label::Compliance => "compliance",
            Label::Skip => "skip",
        }
    }
    fn refusal(self) -> Option<bool> {
        match self {
            Label::Refusal => Some(true),
            Label::Compliance => Some(false),
            Label::Skip => None,
        }
    }
}

/// What a judge said of a reply.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Call {
    Uncertain,
    Refusal,
    Compliance,
}

impl Call {
    fn of(v: &Verdict) -> Option<Call> {
        if v.outcome == Outcome::Uncertain {
            return Some(Call::Uncertain);
        }
        match v.refused {
            _ if !v.outcome.is_decided() => None,
            Some(true) => Some(Call::Refusal),
            Some(false) => Some(Call::Compliance),
            None => None,
        }
    }
    pub fn as_str(self) -> &'static str {
        match self {
            Call::Uncertain => "uncertain",
            Call::Refusal => "refusal",
            Call::Compliance => "compliance",
        }
    }
    fn refusal(self) -> Option<bool> {
        match self {
            Call::Uncertain => None,
            Call::Refusal => Some(true),
            Call::Compliance => Some(false),
        }
    }
}

/// One reply of the run drawn for labelling; with its label, one line of [`LABELS_FILE`].
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Item {
    /// 16 hex digits of a hash of the reply's place in the run (trial, attack, target,
    /// dataset version, behavior, attempt): the same in every rerun.
    pub id: String,
    /// The target that wrote the reply (`source`, as `judge-eval` calls it).
    pub source: String,
    pub attack: String,
    pub dataset_version: String,
    pub behavior_id: String,
    pub expected: Expected,
    pub trial: u32,
    pub attempt: u32,
    /// The last user message the reply answers.
    pub prompt: String,
    pub reply: String,
    /// Each refusal-deciding judge's verdict (by judge label).
    pub verdicts: BTreeMap<String, Call>,
    /// The human label (always set in the file).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub label: Option<Label>,
}

/// One stratum of a target's replies.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Stratum {
    pub target: String,
    /// The primary judge's verdict.
    pub call: Call,
    /// Replies of the run in it.
    pub population: u64,
}

/// Per (target, judge): the judge's verdicts over the target's replies.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize)]
pub struct Population {
    pub refusals: u64,
    pub compliances: u64,
    pub uncertain: u64,
}

/// What [`draw`] drew.
#[derive(Debug, Clone)]
pub struct Sample {
    /// In labelling order.
    pub items: Vec<Item>,
    pub strata: Vec<Stratum>,
    /// The primary judge (the first of the run's judges that decides refusals).
    pub primary: String,
    /// The refusal-deciding judges, in run order: (index in the run, label).
    pub judges: Vec<(usize, String)>,
    /// `(target, judge)` → verdict counts.
    pub population: BTreeMap<(String, String), Population>,
}

/// The refusal-deciding judges of a run: (index, label).
fn refusal_judges(plan: &Plan, dir: &Path) -> Result<Vec<(usize, String)>, LabelError> {
    let judges: Vec<(usize, String)> = plan
        .judges
        .iter()
        .enumerate()
        .filter(|(_, j)| j.facts().decides_refusals && !j.facts().detects_injection)
        .map(|(i, j)| (i, j.spec().label()))
        .collect();
    if judges.is_empty() {
        return Err(LabelError::NoRefusalJudge {
            dir: dir.to_path_buf(),
            judges: plan.judges.iter().map(|j| j.spec().label()).collect(),
        });
    }
    Ok(judges)
}

/// The id of the reply at this place of the run.
pub fn item_id(
    trial: u32,
    attack: &str,
    target: &str,
    dataset_version: &str,
    behavior: &str,
    attempt: u32,
) -> String {
    let mut h = HashWriter::new();
    h.field(b"gauntlet-label-item-v1");
    h.field(&trial.to_le_bytes());
    h.field(attack.as_bytes());
    h.field(target.as_bytes());
    h.field(dataset_version.as_bytes());
    h.field(behavior.as_bytes());
    h.field(&attempt.to_le_bytes());
    h.finish_hex()[..16].to_string()
}

/// The seeded place of an item within its stratum.
fn priority(seed: u64, id: &str) -> u64 {
    let mut h = HashWriter::new();
    h.field(b"gauntlet-label-order-v1");
    h.field(&seed.to_le_bytes());
    h.field(id.as_bytes());
    let d = h.finish();
    u64::from_le_bytes(d[..8].try_into().expect("8 bytes"))
}

/// A kept item, ordered by priority (a max-heap of the `per_target` lowest).
struct Kept(u64, Item);
impl PartialEq for Kept {
    fn eq(&self, o: &Self) -> bool {
        self.0 == o.0 && self.1.id == o.1.id
    }
}
impl Eq for Kept {}
impl PartialOrd for Kept {
    fn partial_cmp(&self, o: &Self) -> Option<std::cmp::Ordering> {
        Some(self.cmp(o))
    }
}
impl Ord for Kept {
    fn cmp(&self, o: &Self) -> std::cmp::Ordering {
        (self.0, &self.1.id).cmp(&(o.0, &o.1.id))
    }
}

/// Every labellable reply of the run, one at a time: attempts with a reply (not an
/// error) that the primary judge judged (decided or uncertain).
fn for_each_item(
    run: &StoredRun,
    judges: &[(usize, String)],
    mut f: impl FnMut(Item, &[(String, Call)]),
) -> Result<(), LabelError> {
    for unit in run.units()? {
        let unit = unit?;
        let u = unit.unit;
        let attack = run.plan.attacks[u.attack].spec().label();
        let target = run.plan.targets[u.target].label();
        let dataset = &run.plan.datasets[u.dataset];
        let behavior = run.behavior(u);
        for (a, verdicts) in unit.attempts.iter().zip(&unit.verdicts) {
            let Ok(resp) = &a.response else { continue };
            if resp.content.trim().is_empty() {
                continue;
            }
            let calls: Vec<(String, Call)> = judges
                .iter()
                .filter_map(|(j, label)| Call::of(&verdicts[*j]).map(|c| (label.clone(), c)))
                .collect();
            if calls.first().map(|c| &c.0) != Some(&judges[0].1) {
                continue;
            }
            let prompt = a
                .transcript
                .iter()
                .rev()
                .find(|m| m.role == Role::User)
                .map(|m| m.content.clone())
                .unwrap_or_else(|| behavior.prompt.clone());
            let item = Item {
                id: item_id(
                    unit.trial,
                    &attack,
                    &target,
                    &dataset.version,
                    &behavior.id,
                    a.index,
                ),
                source: target.clone(),
                attack: attack.clone(),
                dataset_version: dataset.version.clone(),
                behavior_id: behavior.id.clone(),
                expected: behavior.expected,
                trial: unit.trial,
                attempt: a.index,
                prompt,
                reply: resp.content.clone(),
                verdicts: calls.iter().cloned().collect(),
                label: None,
            };
            f(item, &calls);
        }
    }
    Ok(())
}

/// Draws the labelling sample of a run: at most `per_target` replies per target (see the
/// module doc for the design), seeded by `seed`.
pub fn draw(run: &StoredRun, per_target: usize, seed: u64) -> Result<Sample, LabelError> {
    let judges = refusal_judges(&run.plan, &run.dir)?;
    let primary = judges[0].1.clone();
    let mut heaps: BTreeMap<(String, Call), BinaryHeap<Kept>> = BTreeMap::new();
    let mut counts: BTreeMap<(String, Call), u64> = BTreeMap::new();
    let mut population: BTreeMap<(String, String), Population> = BTreeMap::new();
    for_each_item(run, &judges, |item, calls| {
        for (judge, call) in calls {
            let p = population
                .entry((item.source.clone(), judge.clone()))
                .or_default();
            match call {
                Call::Refusal => p.refusals += 1,
                Call::Compliance => p.compliances += 1,
                Call::Uncertain => p.uncertain += 1,
            }
        }
        let key = (item.source.clone(), calls[0].1);
        *counts.entry(key.clone()).or_default() += 1;
        let heap = heaps.entry(key).or_default();
        let k = Kept(priority(seed, &item.id), item);
        if heap.len() < per_target {
            heap.push(k);
        } else if heap.peek().is_some_and(|top| k < *top) {
            heap.pop();
            heap.push(k);
        }
    })?;
    // Per target, in target order: uncertain first, then the decided strata interleaved
    // so that every prefix allocates proportionally to their populations.
    let mut per_target_items: Vec<Vec<Item>> = Vec::new();
    for t in &run.plan.targets {
        let target = t.label();
        let mut take = |call: Call| -> Vec<Item> {
            let mut v: Vec<Kept> = heaps
                .remove(&(target.clone(), call))
                .map(BinaryHeap::into_vec)
                .unwrap_or_default();
            v.sort();
            v.into_iter().map(|k| k.1).collect()
        };
        let mut items = take(Call::Uncertain);
        let decided = [take(Call::Refusal), take(Call::Compliance)];
        let pops = [Call::Refusal, Call::Compliance]
            .map(|c| counts.get(&(target.clone(), c)).copied().unwrap_or(0) as f64);
        let total = pops[0] + pops[1];
        let mut next = [0usize; 2];
        for i in 1..=(decided[0].len() + decided[1].len()) {
            // The stratum furthest below its proportional share of the first i.
            let deficit = |s: usize| {
                if next[s] >= decided[s].len() {
                    f64::NEG_INFINITY
                } else {
                    pops[s] / total * i as f64 - next[s] as f64
                }
            };
            let s = if deficit(1) > deficit(0) { 1 } else { 0 };
            items.push(decided[s][next[s]].clone());
            next[s] += 1;
        }
        items.truncate(per_target);
        per_target_items.push(items);
    }
    let mut items = Vec::new();
    let longest = per_target_items.iter().map(Vec::len).max().unwrap_or(0);
    for i in 0..longest {
        for t in &per_target_items {
            if let Some(it) = t.get(i) {
                items.push(it.clone());
            }
        }
    }
    let strata = counts
        .into_iter()
        .map(|((target, call), population)| Stratum {
            target,
            call,
            population,
        })
        .collect();
    Ok(Sample {
        items,
        strata,
        primary,
        judges,
        population,
    })
}

/// Reads `dir`'s labels (none when the file does not exist). Every line must be a whole
/// labelled item; the error names the line.
pub fn read_labels(dir: &Path) -> Result<Vec<Item>, LabelError> {
    let path = dir.join(LABELS_FILE);
    let meta = match std::fs::symlink_metadata(&path) {
        Ok(m) => m,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(Vec::new()),
        Err(source) => return Err(LabelError::ReadFile { path, source }),
    };
    if !meta.is_file() || meta.len() > MAX_LABELS_BYTES {
        return Err(LabelError::NotRegular { path });
    }
    const LABELS: gauntlet_core::files::Kind = gauntlet_core::files::Kind {
        what: "labels file",
        max_bytes: MAX_LABELS_BYTES,
    };
    let text = gauntlet_core::files::read_to_string(&path, LABELS).map_err(|e| match e {
        gauntlet_core::files::ReadError::Io { source, .. } => LabelError::ReadFile {
            path: path.clone(),
            source,
        },
        _ => LabelError::NotRegular { path: path.clone() },
    })?;
    parse_labels(&path, &text)
}

fn parse_labels(path: &Path, text: &str) -> Result<Vec<Item>, LabelError> {
    let mut out: Vec<Item> = Vec::new();
    for (i, line_text) in text.lines().enumerate() {
        if line_text.trim().is_empty() {
            continue;
        }
        let (path, line) = (path.to_path_buf(), i + 1);
        let item: Item =
            serde_json::from_str(line_text).map_err(|source| LabelError::NotALabelLine {
                path: path.clone(),
                line,
                source,
            })?;
        if item.label.is_none() {
            return Err(LabelError::NoLabel { path, line });
        }
        if out.iter().any(|o| o.id == item.id) {
            return Err(LabelError::Twice {
                path,
                line,
                id: item.id,
            });
        }
        out.push(item);
    }
    Ok(out)
}

/// The bytes of a labels file: one line per item, sorted by id.
pub fn labels_bytes(labels: &BTreeMap<String, Item>) -> Vec<u8> {
    let mut out = Vec::new();
    for item in labels.values() {
        serde_json::to_writer(&mut out, item).expect("an item serialises");
        out.push(b'\n');
    }
    out
}

/// How many more labels would halve a corrected interval, estimated by the delta method.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Halving {
    /// The judge's refusal rate over the target's decided replies (what is corrected).
    pub observed_rate: f64,
    /// Replies it is over.
    pub replies: u64,
    /// The corrected rate and the half-width of its approximate 95% interval now.
    pub corrected: f64,
    pub half_width: f64,
    /// Labels to add to halve it; `None` when the run's own sample size dominates the
    /// interval (more labels alone cannot halve it).
    pub more_labels: Option<u64>,
}

/// The card of one judge on one target's labelled replies.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct TargetCard {
    pub target: String,
    pub judge: String,
    /// Labelled replies of the target the judge decided (the card's rows).
    pub labelled: u64,
    /// Labelled replies of the target the judge was uncertain about.
    pub labelled_uncertain: u64,
    pub card: Option<JudgeCard>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub na_reason: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub halving: Option<Halving>,
}

/// [`LABEL_CARDS_FILE`]: every card measured from a run's labels.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct LabelCards {
    pub format: &'static str,
    pub run_id: String,
    /// sha256 of the labels file the cards were measured from.
    pub labels_sha256: String,
    pub labels: u64,
    pub skipped: u64,
    pub method: Vec<String>,
    pub cards: Vec<TargetCard>,
}

/// The delta-method half-width of a Rogan–Gladen estimate from a rate `p` over `n` and a
/// card's (se over `n_pos`, sp over `n_neg`), and the labels that would halve it.
fn halving(p: f64, n: u64, c: &Confusion) -> Option<Halving> {
    let (np, nn) = (c.positives() as f64, c.negatives() as f64);
    let (se, sp) = (c.tp as f64 / np, c.tn as f64 / nn);
    let j = se + sp - 1.0;
    if j <= 0.0 || n == 0 {
        return None;
    }
    let theta = ((p + sp - 1.0) / j).clamp(0.0, 1.0);
    // Binomial variances, with a floor so a perfect judge on a few labels is not certain.
    // Binomial variances of plus-two estimates, so a perfect judge on a few labels is not
    // taken as certain.
    let var = |q: f64, m: f64| {
        let q = (q * m + 1.0) / (m + 2.0);
        q * (1.0 - q) / m
    };
    let v_run = var(p, n as f64) / (j * j);
    let v_card = (theta * theta * var(se, np) + (1.0 - theta).powi(2) * var(sp, nn)) / (j * j);
    let half = 1.959_964 * (v_run + v_card).sqrt();
    // Labels scaled by m: v_run + v_card / m = (v_run + v_card) / 4.
    let want = (v_run + v_card) / 4.0 - v_run;
    let more = (want > 0.0).then(|| {
        let m = v_card / want;
        (((m - 1.0) * (np + nn)).ceil()).max(1.0) as u64
    });
    Some(Halving {
        observed_rate: p,
        replies: n,
        corrected: theta,
        half_width: half,
        more_labels: more,
    })
}

/// The cards of every (target, refusal judge) from `labels` (see the module doc).
/// `population` (from [`draw`]) adds each card's halving estimate; without it (a rerun
/// applying the labels) the cards alone are made.
pub fn cards(
    plan: &Plan,
    dir: &Path,
    labels: &BTreeMap<String, Item>,
    population: Option<&BTreeMap<(String, String), Population>>,
) -> Result<LabelCards, LabelError> {
    let judges = refusal_judges(plan, dir)?;
    let bytes = labels_bytes(labels);
    let mut out = Vec::new();
    for t in &plan.targets {
        let target = t.label();
        let mine: Vec<&Item> = labels.values().filter(|i| i.source == target).collect();
        if mine.is_empty() {
            continue;
        }
        let mut set = HashWriter::new();
        set.field(b"gauntlet-target-labels-v1");
        set.field(target.as_bytes());
        for i in &mine {
            set.json(i);
        }
        let set_sha = set.finish_hex();
        for (ji, judge) in &judges {
            let mut c = Confusion::default();
            let mut uncertain = 0;
            for i in &mine {
                let (Some(human), Some(call)) =
                    (i.label.and_then(Label::refusal), i.verdicts.get(judge))
                else {
                    continue;
                };
                match call.refusal() {
                    Some(j) => c.add(human, j),
                    None => uncertain += 1,
                }
            }
            let (card, na_reason) = if c.positives() == 0 || c.negatives() == 0 {
                (
                    None,
                    Some(format!(
                        "needs at least one decided reply labelled refusal and one labelled compliance (now {} and {})",
                        c.positives(),
                        c.negatives()
                    )),
                )
            } else {
                let spec = plan.judges[*ji].spec().key_identity();
                let card = JudgeCard {
                    format: CARD_FORMAT.into(),
                    judge: judge.clone(),
                    spec_sha256: sha256_hex(spec.to_string().as_bytes()),
                    spec,
                    harness_version: gauntlet_core::HARNESS_VERSION.into(),
                    labelled_set: LabelledSetRef {
                        name: format!("labels of {target}"),
                        sha256: set_sha.clone(),
                        files: vec![LABELS_FILE.into()],
                        rows: c.n(),
                    },
                    positive: "refusal".into(),
                    confusion: c,
                    sensitivity: c.tp as f64 / c.positives() as f64,
                    specificity: c.tn as f64 / c.negatives() as f64,
                };
                (Some(card), None)
            };
            let halving = match (
                &card,
                population.and_then(|p| p.get(&(target.clone(), judge.clone()))),
            ) {
                (Some(_), Some(p)) => {
                    let n = p.refusals + p.compliances;
                    halving(p.refusals as f64 / n.max(1) as f64, n, &c)
                }
                _ => None,
            };
            out.push(TargetCard {
                target: target.clone(),
                judge: judge.clone(),
                labelled: c.n(),
                labelled_uncertain: uncertain,
                card,
                na_reason,
                halving,
            });
        }
    }
    Ok(LabelCards {
        format: LABEL_CARDS_FORMAT,
        run_id: plan.run_id.clone(),
        labels_sha256: sha256_hex(&bytes),
        labels: labels.len() as u64,
        skipped: labels
            .values()
            .filter(|i| i.label == Some(Label::Skip))
            .count() as u64,
        method: vec![
            "sample: seeded, per target; the primary judge's uncertain replies first, then its refusal and compliance strata in proportional allocation (self-weighting)".into(),
            "card: per target and judge, human labels against the judge's decided verdicts; skipped and uncertain replies are not counted".into(),
            "correction: Rogan–Gladen with the target's own card; interval by the seeded parametric bootstrap over the run's count and the card's counts".into(),
            "halving: delta-method variance of the corrected refusal rate over the target's decided replies; labels scaled until it is a quarter".into(),
        ],
        cards: out,
    })
}

fn to_plan(plan: &Plan, cards: &LabelCards) -> Vec<(usize, usize, Arc<JudgeCard>)> {
    let mut out = Vec::new();
    for tc in &cards.cards {
        let Some(card) = &tc.card else { continue };
        let ji = plan
            .judges
            .iter()
            .position(|j| j.spec().label() == tc.judge);
        let ti = plan.targets.iter().position(|t| t.label() == tc.target);
        if let (Some(ji), Some(ti)) = (ji, ti) {
            out.push((ji, ti, Arc::new(card.clone())));
        }
    }
    out
}

/// Copies every `corrected` value of `from` (a recount with the label cards) into the
/// same cell × metric of `into` (the run's stated results, which keep their usage rows).
fn take_corrections(into: &mut RunSummary, from: &RunSummary) {
    for (ci, cell) in into.cells.iter_mut().enumerate() {
        let Some(src) = from.cells.get(ci) else {
            continue;
        };
        for (mi, m) in cell.metrics.iter_mut().enumerate() {
            let Some(sm) = src.metrics.get(mi) else {
                continue;
            };
            if sm.metric != m.metric {
                continue;
            }
            m.value.corrected = sm.value.corrected.clone();
            for (t, st) in m.trials.iter_mut().zip(&sm.trials) {
                t.corrected = st.corrected.clone();
            }
        }
    }
}

/// A labelling session over one run directory: holds its lock, its reloaded run, the
/// sample and the labels so far. Every [`LabelSession::save`] writes the labels, the cards,
/// the corrected results and reports, and the manifest.
pub struct LabelSession {
    run: StoredRun,
    /// The run directory's lock; `None` when it cannot be written ([`Self::read_only`]).
    _lock: Option<RunDir>,
    /// Why the run directory cannot be written, when it cannot: the session reads,
    /// and refuses to save.
    read_only: Option<std::io::Error>,
    sample: Sample,
    labels: BTreeMap<String, Item>,
    /// The run's stated results (usage rows and all), corrected again on every save.
    stated: RunSummary,
    manifest: Manifest,
}

/// Where labelling stands.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Progress {
    /// Replies in the sample.
    pub sample: u64,
    /// Sampled replies with a label (skips included).
    pub done: u64,
    pub skipped: u64,
    /// Labels in the file that are not in this sample (an earlier, larger draw).
    pub outside_sample: u64,
}

impl LabelSession {
    /// Opens `dir` for labelling: takes its lock, verifies its manifest (a run being
    /// written, or edited since, is refused), reloads the run (`config_dir` as for
    /// `rescore`) and draws the sample.
    pub fn open(
        dir: &Path,
        config_dir: Option<&Path>,
        per_target: usize,
        seed: Option<u64>,
    ) -> Result<LabelSession, LabelError> {
        let (parent, name) = split_dir(dir)?;
        // A directory that cannot be written is still read (where labelling stands, a
        // CSV written elsewhere); saving into it is refused, saying so.
        let (lock, read_only) = match RunDir::open(&parent, &name) {
            Ok(lock) => (Some(lock), None),
            Err(e) if crate::stored::is_read_only(&e) => (None, Some(e)),
            Err(e) => return Err(LabelError::Lock(e)),
        };
        let manifest = Manifest::verify(dir)?;
        for file in ["run.json", "results.json", "transcripts.jsonl"] {
            if !manifest.files.contains_key(file) {
                return Err(LabelError::NotARunDir {
                    dir: dir.to_path_buf(),
                    file,
                });
            }
        }
        let run = StoredRun::open(dir, config_dir)?;
        let results = dir.join("results.json");
        let bytes = gauntlet_core::files::read(&results, gauntlet_core::files::Kind::RESULTS)?;
        let stated: RunSummary =
            serde_json::from_slice(&bytes).map_err(|source| LabelError::NotResults {
                path: results,
                source,
            })?;
        crate::stored::check_results(&run)?;
        let seed = seed.unwrap_or(run.plan.config.seed);
        let sample = draw(&run, per_target, seed)?;
        let labels = read_labels(dir)?
            .into_iter()
            .map(|i| (i.id.clone(), i))
            .collect();
        Ok(LabelSession {
            run,
            _lock: lock,
            read_only,
            sample,
            labels,
            stated,
            manifest,
        })
    }

    pub fn run(&self) -> &StoredRun {
        &self.run
    }

    /// Why the run directory cannot be written, when it cannot (labels cannot be saved).
    pub fn read_only(&self) -> Option<&std::io::Error> {
        self.read_only.as_ref()
    }

    /// Refuses a session whose run directory cannot be written, before any labelling
    /// that would have to be saved there.
    pub fn check_writable(&self) -> Result<(), LabelError> {
        match &self.read_only {
            Some(e) => Err(LabelError::ReadOnly {
                dir: self.run.dir.clone(),
                source: std::io::Error::new(e.kind(), e.to_string()),
            }),
            None => Ok(()),
        }
    }
    pub fn sample(&self) -> &Sample {
        &self.sample
    }
    pub fn items(&self) -> &[Item] {
        &self.sample.items
    }
    pub fn label_of(&self, id: &str) -> Option<Label> {
        self.labels.get(id).and_then(|i| i.label)
    }
    /// The first sampled reply without a label, with its position in the sample.
    pub fn next_unlabelled(&self) -> Option<(usize, &Item)> {
        self.sample
            .items
            .iter()
            .enumerate()
            .find(|(_, i)| !self.labels.contains_key(&i.id))
    }

    pub fn progress(&self) -> Progress {
        let in_sample = |id: &str| self.sample.items.iter().any(|i| i.id == id);
        let done = self
            .sample
            .items
            .iter()
            .filter(|i| self.labels.contains_key(&i.id))
            .count() as u64;
        Progress {
            sample: self.sample.items.len() as u64,
            done,
            skipped: self
                .labels
                .values()
                .filter(|i| i.label == Some(Label::Skip) && in_sample(&i.id))
                .count() as u64,
            outside_sample: self.labels.len() as u64 - done,
        }
    }

    /// Where labelling stands, for a person: the progress line, then one line per card
    /// (its sensitivity and specificity, and how many more labels would halve its
    /// corrected interval), then the uncertain replies it leaves out. Untrusted names
    /// (targets, judges) are as they are: escape them for the medium.
    pub fn status_lines(&self, cards: &LabelCards) -> Vec<String> {
        let p = self.progress();
        let mut out = vec![format!(
            "labels: {} of a sample of {} ({} skipped){}; primary judge {}",
            p.done,
            p.sample,
            p.skipped,
            if p.outside_sample > 0 {
                format!(", {} more outside this sample", p.outside_sample)
            } else {
                String::new()
            },
            self.sample.primary
        )];
        for c in &cards.cards {
            let head = format!(
                "  {} × {}: {} labelled decided replies",
                c.target, c.judge, c.labelled
            );
            match &c.card {
                Some(card) => {
                    let mut line = format!(
                        "{head}; sensitivity {:.3} ({}/{}), specificity {:.3} ({}/{})",
                        card.sensitivity,
                        card.confusion.tp,
                        card.confusion.positives(),
                        card.specificity,
                        card.confusion.tn,
                        card.confusion.negatives()
                    );
                    if let Some(h) = &c.halving {
                        line.push_str(&format!(
                            "; corrected refusal rate {:.3} ± {:.3} over {} replies; ",
                            h.corrected, h.half_width, h.replies
                        ));
                        line.push_str(&match h.more_labels {
                            Some(m) => format!("about {m} more labels would halve it"),
                            None => "the run's own sample size dominates it: more labels alone cannot halve it".to_string(),
                        });
                    }
                    out.push(line);
                }
                None => out.push(format!(
                    "{head}; no card yet: {}",
                    c.na_reason.as_deref().unwrap_or("")
                )),
            }
            if c.labelled_uncertain > 0 {
                out.push(format!(
                    "    {} labelled replies the judge was uncertain about (not in the card)",
                    c.labelled_uncertain
                ));
            }
        }
        out
    }

    /// Labels the sampled reply `id` (in memory; [`LabelSession::save`] writes it).
    pub fn record(&mut self, id: &str, label: Label) -> Result<(), LabelError> {
        let item = self
            .sample
            .items
            .iter()
            .find(|i| i.id == id)
            .ok_or_else(|| LabelError::NotInSample { id: id.to_string() })?;
        let mut item = item.clone();
        item.label = Some(label);
        self.labels.insert(id.to_string(), item);
        Ok(())
    }

    /// The cards of the labels so far.
    pub fn cards(&self) -> Result<LabelCards, LabelError> {
        cards(
            &self.run.plan,
            &self.run.dir,
            &self.labels,
            Some(&self.sample.population),
        )
    }

    /// Writes the labels, the cards, results.json with every correctable rate corrected
    /// by its target's card, the reports, and the manifest (removed first, written last,
    /// as a run session does). Returns the cards.
    pub fn save(&mut self) -> Result<LabelCards, LabelError> {
        self.check_writable()?;
        let dir = self.run.dir.clone();
        let cards = self.cards()?;
        self.run.plan.label_cards = to_plan(&self.run.plan, &cards);
        let recounted = recount(&self.run)?;
        let mut summary = self.stated.clone();
        take_corrections(&mut summary, &recounted);
        let write = |name: &str, bytes: &[u8]| {
            let p = dir.join(name);
            write_atomic(&p, bytes).map_err(|source| StoredError::Write { path: p, source })
        };
        // From here until the manifest is back, readers refuse the directory.
        match std::fs::remove_file(dir.join(MANIFEST)) {
            Err(source) if source.kind() != std::io::ErrorKind::NotFound => {
                return Err(StoredError::Remove {
                    path: dir.join(MANIFEST),
                    source,
                }
                .into());
            }
            _ => {}
        }
        write(LABELS_FILE, &labels_bytes(&self.labels))?;
        write(LABEL_CARDS_FILE, &pretty(&cards))?;
        write("results.json", &pretty(&summary))?;
        gauntlet_report::write_reports(&dir, &summary).map_err(|source| {
            StoredError::WriteReports {
                dir: dir.clone(),
                source,
            }
        })?;
        for name in [
            LABELS_FILE,
            LABEL_CARDS_FILE,
            "results.json",
            gauntlet_report::LEADERBOARD_FILE,
            gauntlet_report::MARKDOWN_FILE,
            gauntlet_report::HTML_FILE,
        ] {
            self.manifest
                .record_file(&dir, name)
                .map_err(|source| StoredError::ReadBack {
                    path: dir.join(name),
                    source,
                })?;
        }
        self.manifest
            .write(&dir)
            .map_err(|source| StoredError::Write {
                path: dir.join(MANIFEST),
                source,
            })?;
        self.stated = summary;
        Ok(cards)
    }

    /// Writes the sample (or the `only_unlabelled` part of it) as a CSV for labelling
    /// elsewhere: `id,target,prompt,reply,label`, label empty where none is given yet.
    /// Cells a spreadsheet would read as a formula are written with a leading `'`.
    /// Verdicts are left out: the labeller should not see what the judge said.
    pub fn write_csv(&self, path: &Path, only_unlabelled: bool) -> Result<u64, LabelError> {
        let mut w = csv::Writer::from_writer(Vec::new());
        let io = |source: csv::Error| LabelError::WriteCsv {
            path: path.to_path_buf(),
            source,
        };
        w.write_record(["id", "target", "prompt", "reply", "label"])
            .map_err(io)?;
        let mut n = 0;
        for item in &self.sample.items {
            let label = self.label_of(&item.id);
            if only_unlabelled && label.is_some() {
                continue;
            }
            w.write_record([
                item.id.as_str(),
                &inert_cell(&item.source),
                &inert_cell(&item.prompt),
                &inert_cell(&item.reply),
                label.map_or("", Label::as_str),
            ])
            .map_err(io)?;
            n += 1;
        }
        let bytes = w.into_inner().map_err(|e| StoredError::Write {
            path: path.to_path_buf(),
            source: e.into_error(),
        })?;
        write_atomic(path, &bytes).map_err(|source| StoredError::Write {
            path: path.to_path_buf(),
            source,
        })?;
        Ok(n)
    }

    /// Reads labels back from a CSV written by [`LabelSession::write_csv`] (only its `id`
    /// and `label` columns are read; an empty label is no label). Every row is checked
    /// before any is taken. Returns how many labels were taken.
    pub fn read_csv(&mut self, path: &Path) -> Result<u64, LabelError> {
        // Capped, and never a device or a pipe (`--csv-in /dev/zero` read until memory
        // ran out; a named pipe waited for a writer).
        const LABEL_CSV: gauntlet_core::files::Kind = gauntlet_core::files::Kind {
            what: "label CSV",
            max_bytes: MAX_LABELS_BYTES,
        };
        let bytes = gauntlet_core::files::read(path, LABEL_CSV)?;
        let bytes = bytes.strip_prefix(b"\xEF\xBB\xBF").unwrap_or(&bytes);
        let mut rd = csv::ReaderBuilder::new().flexible(true).from_reader(bytes);
        let header: Vec<String> = rd
            .headers()
            .map_err(|source| LabelError::CsvHeader {
                path: path.to_path_buf(),
                source,
            })?
            .iter()
            .map(|h| h.trim().to_ascii_lowercase())
            .collect();
        let col = |column: &'static str| {
            header
                .iter()
                .position(|h| h == column)
                .ok_or_else(|| LabelError::NoColumn {
                    path: path.to_path_buf(),
                    column,
                    found: header.clone(),
                })
        };
        let (id_col, label_col) = (col("id")?, col("label")?);
        let mut taken = Vec::new();
        for (i, rec) in rd.records().enumerate() {
            let row = i + 2;
            let rec = rec.map_err(|source| LabelError::CsvRow {
                path: path.to_path_buf(),
                row,
                source,
            })?;
            let id = rec
                .get(id_col)
                .unwrap_or("")
                .trim()
                .trim_start_matches('\'');
            let raw = rec.get(label_col).unwrap_or("").trim();
            if raw.is_empty() {
                continue;
            }
            let label = Label::parse(raw).ok_or_else(|| LabelError::BadLabel {
                path: path.to_path_buf(),
                row,
                label: raw.to_string(),
            })?;
            if !self.sample.items.iter().any(|it| it.id == id) {
                return Err(LabelError::CsvNotInSample {
                    path: path.to_path_buf(),
                    row,
                    id: id.to_string(),
                });
            }
            taken.push((id.to_string(), label));
        }
        let n = taken.len() as u64;
        for (id, label) in taken {
            self.record(&id, label)?;
        }
        Ok(n)
    }
}

/// A CSV cell a spreadsheet opens as text: untrusted text starting with `=`, `+`, `-`,
/// `@`, a tab or a carriage return gets a leading `'`.
fn inert_cell(s: &str) -> std::borrow::Cow<'_, str> {
    match s.chars().next() {
        Some('=' | '+' | '-' | '@' | '\t' | '\r') => format!("'{s}").into(),
        _ => s.into(),
    }
}

fn split_dir(dir: &Path) -> Result<(PathBuf, String), LabelError> {
    let abs = std::path::absolute(dir).map_err(|source| LabelError::Absolute {
        dir: dir.to_path_buf(),
        source,
    })?;
    let name = abs
        .file_name()
        .map(|n| n.to_string_lossy().into_owned())
        .ok_or_else(|| LabelError::NotADirectory {
            dir: dir.to_path_buf(),
        })?;
    let parent = abs.parent().map(Path::to_path_buf).unwrap_or_default();
    Ok((parent, name))
}

/// The label cards a run directory holds, as `Plan::label_cards` takes them: what a
/// rerun of the run applies, so its results stay corrected. None without labels.
pub fn load_for_rerun(
    dir: &Path,
    plan: &Plan,
) -> Result<Vec<(usize, usize, Arc<JudgeCard>)>, LabelError> {
    let labels: BTreeMap<String, Item> = read_labels(dir)?
        .into_iter()
        .map(|i| (i.id.clone(), i))
        .collect();
    if labels.is_empty() {
        return Ok(Vec::new());
    }
    // A finished session's manifest must list the labels as `gauntlet label` wrote them
    // (without one, a session was killed: the labels file is written atomically and
    // parsed strictly above, so it is whole).
    let manifest = dir.join(MANIFEST);
    if let Ok(bytes) =
        gauntlet_core::files::read(&manifest, gauntlet_core::files::Kind::RUN_METADATA)
        && let Ok(m) = serde_json::from_slice::<Manifest>(&bytes)
    {
        let path = dir.join(LABELS_FILE);
        let now = gauntlet_job::rundir::FileEntry::of_file(&path).map_err(|source| {
            LabelError::ReadFile {
                path: path.clone(),
                source,
            }
        })?;
        if m.files.get(LABELS_FILE) != Some(&now) {
            return Err(LabelError::NotWritten {
                listed: m.files.contains_key(LABELS_FILE),
                path,
                dir: dir.to_path_buf(),
            });
        }
    }
    Ok(to_plan(plan, &cards(plan, dir, &labels, None)?))
}

#[cfg(test)]
mod tests {
    use super::LabelError;

    /// The messages built at Display time read as the strings they replace did.
    #[test]
    fn messages_are_the_ones_the_strings_were() {
        let e = |listed| {
            LabelError::NotWritten {
                path: "runs/x/labels.jsonl".into(),
                dir: "runs/x".into(),
                listed,
            }
            .to_string()
        };
        assert_eq!(
            e(true),
            "runs/x/labels.jsonl is not the labels file `gauntlet label` wrote (its manifest.json records another); restore it, or remove it and label again (`gauntlet label runs/x`)"
        );
        assert!(e(false).contains("(its manifest.json does not list it)"));
        let e = LabelError::NoRefusalJudge {
            dir: "runs/x".into(),
            judges: vec!["a".into(), "b".into()],
        };
        assert!(
            e.to_string()
                .starts_with("runs/x: none of the run's judges (a, b) says")
        );
        let e = LabelError::NotRegular { path: "l".into() };
        assert_eq!(e.to_string(), "l must be a regular file of at most 64 MiB");
    }
}
