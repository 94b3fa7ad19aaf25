//! The exam's model calls on the shared call layer (`gauntlet-calls`): resume, budget,
//! usage and cost for a real-mode exam.
//!
//! Why this exists: a real-mode exam of a full corpus is thousands of paid calls; a
//! Ctrl-C must not lose them and a budget must bound them. Every cascade call goes
//! through a [`CachedModel`] over one journal (`<out>/journal.jsonl`, the red-team
//! engine's format), keyed by the harness version, the tier's role, the tier model's
//! resolved spec, the unit (scenario id and pass, or the end-to-end finding), the tier
//! and consensus voter, and the full request. So:
//!
//! * a rerun into the same output directory replays every finished call from the
//!   journal (zero repeated calls) and, the cascade being deterministic given its
//!   replies, writes byte-identical artefacts;
//! * `--max-queries` is spent only by journal misses; a call refused for lack of budget
//!   makes its scenario *not run* (never a pass or a fail), the report is marked
//!   `partial: budget`;
//! * token usage is tallied per tier role for every response, journal hits included, so
//!   usage and cost are identical on a rerun.
//!
//! The output directory is locked while an exam runs, and records the exam's identity
//! (`exam.json`): an exam of another corpus or configuration moves the previous exam's
//! artefacts to `superseded/<n>/` loudly before it writes anything (the journal stays:
//! its keys cover everything a call depends on, so only shared calls are replayed).
//! Golden exams, which call nothing, take the directory the same way ([`OutClaim`]): a
//! golden exam started into the directory of a running exam is refused, and one run
//! after a real exam moves the real exam aside instead of writing over it.

use crate::cascade::{Tier, TierCaller, TierModel, TierModels};
use gauntlet_calls::cache::{CachedModel, CallCounters, Pending, RoleUsage, UsageSlot, call_base};
use gauntlet_calls::journal::Journal;
use gauntlet_calls::price::{PriceTable, slot_cost};
use gauntlet_calls::seam::CallModel;
use gauntlet_core::message::{ChatRequest, ChatResponse};
use gauntlet_models::{BoxFuture, ModelError, TransportStats};
use gauntlet_results::exam::{ExamUsage, TierRole, TierUsage};
use serde::Serialize;
use std::fs;
use std::io;
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};

/// The role of a cascade tier (the model roles, [`TierRole`], are the schema's: they
/// name `report.json`'s usage rows).
pub fn role_of(t: Tier) -> TierRole {
    match t {
        Tier::Triage => TierRole::Triage,
        Tier::Investigate => TierRole::Investigate,
        Tier::DeepBenign | Tier::DeepMalicious | Tier::DeepIncomplete => TierRole::Deep,
        Tier::Formatter => TierRole::Formatter,
    }
}

/// A representative tier of a role (for the role's model).
pub fn role_tier(r: TierRole) -> Tier {
    match r {
        TierRole::Triage => Tier::Triage,
        TierRole::Investigate => Tier::Investigate,
        TierRole::Deep => Tier::DeepBenign,
        TierRole::Formatter => Tier::Formatter,
    }
}

/// Per-role values, indexed by [`TierRole`].
#[derive(Debug, Default)]
pub struct PerRole<T>(pub [T; 4]);

impl<T> PerRole<T> {
    pub fn get(&self, r: TierRole) -> &T {
        &self.0[r as usize]
    }
}

/// Where and how a real-mode exam journals its calls.
#[derive(Debug, Clone)]
pub struct SpineOptions {
    /// The output directory: `journal.jsonl`, `exam.json`, `sessions.jsonl` live there.
    pub dir: PathBuf,
    /// Calls that may reach a model (journal misses); `None`: unlimited.
    pub max_queries: Option<u64>,
    /// Prices for the per-tier cost.
    pub prices: PriceTable,
}

/// The call layer of one exam session.
pub struct ExamCalls {
    pub dir: PathBuf,
    pub prices: PriceTable,
    journal: Journal,
    pub counters: CallCounters,
    pending: Pending,
    usage: PerRole<UsageSlot>,
    pub records_at_start: usize,
    /// Set (Ctrl-C, SIGTERM) to stop the exam: calls already sent finish and are
    /// journaled, every later call is refused like a spent budget (its scenario run is
    /// not run), and the report is partial (`interrupted`).
    pub stop: Arc<AtomicBool>,
    _claim: OutClaim,
}

/// An exam's hold on its output directory while it runs: the directory's lock, taken
/// after another exam's artefacts were moved aside and this exam's identity recorded.
pub struct OutClaim {
    _lock: fs::File,
}

impl OutClaim {
    /// Locks `dir` (refused while another exam holds it), moves the artefacts of another
    /// exam aside (`notes` says so) and records this exam's `identity` (`exam.json`).
    pub fn take(
        dir: &Path,
        identity: &[u8],
        notes: &mut Vec<String>,
    ) -> Result<OutClaim, OpenError> {
        let named = |what: &'static str, p: &Path, source: io::Error| OpenError::Io {
            what,
            path: p.to_path_buf(),
            source,
        };
        fs::create_dir_all(dir).map_err(|e| named("cannot create", dir, e))?;
        let lock_path = dir.join(".lock");
        let lock = fs::OpenOptions::new()
            .create(true)
            .truncate(false)
            .write(true)
            .open(&lock_path)
            .map_err(|e| named("cannot open", &lock_path, e))?;
        match lock.try_lock() {
            Ok(()) => {}
            Err(fs::TryLockError::WouldBlock) => {
                return Err(OpenError::InUse(dir.to_path_buf()));
            }
            Err(fs::TryLockError::Error(e)) => return Err(named("cannot lock", &lock_path, e)),
        }
        let exam_json = dir.join(EXAM_JSON);
        let want = identity;
        let old = match gauntlet_core::files::read(&exam_json, gauntlet_core::files::Kind::CONFIG) {
            Ok(b) => Some(b),
            Err(e) if e.io_kind() == Some(io::ErrorKind::NotFound) => None,
            Err(e) => return Err(e.into()),
        };
        let has_artefacts = ARTEFACTS.iter().any(|f| dir.join(f).exists())
            || fs::read_dir(dir)
                .map_err(|e| named("cannot read", dir, e))?
                .flatten()
                .any(|e| is_run_dir(&e.file_name().to_string_lossy()));
        if old.as_deref() != Some(want) && (old.is_some() || has_artefacts) {
            let to = supersede(dir).map_err(|e| named("cannot move aside the exam in", dir, e))?;
            notes.push(format!(
                "NOTE: {} held {} (another corpus or configuration); its artefacts are moved to {} (analyse it there). This is a new exam; the journal stays, so only calls the two share are replayed",
                dir.display(),
                if old.is_some() {
                    "an exam"
                } else {
                    "artefacts of an exam without a recorded identity"
                },
                to.display()
            ));
        }
        gauntlet_core::atomic::write_atomic_named(&exam_json, want)
            .map_err(OpenError::WriteIdentity)?;
        Ok(OutClaim { _lock: lock })
    }
}

/// Why the journaled call layer cannot be opened on an exam's output directory.
#[derive(Debug, thiserror::Error)]
pub enum OpenError {
    /// `what` (`cannot create`, `cannot lock`, …) failed on `path`.
    #[error("{what} {}: {source}", .path.display())]
    Io {
        what: &'static str,
        path: PathBuf,
        #[source]
        source: io::Error,
    },
    #[error("{} is in use by another gauntlet exam; wait for it or choose another --out", .0.display())]
    InUse(PathBuf),
    /// `exam.json` exists but cannot be read.
    #[error(transparent)]
    Identity(#[from] gauntlet_core::files::ReadError),
    /// `exam.json` cannot be written (the message names it).
    #[error(transparent)]
    WriteIdentity(io::Error),
}

impl ExamCalls {
    /// Locks `dir`, moves another exam's artefacts aside (`notes` says so), records the
    /// exam's identity and opens the journal.
    pub fn open(
        opts: &SpineOptions,
        identity: &[u8],
        notes: &mut Vec<String>,
    ) -> Result<ExamCalls, OpenError> {
        let dir = &opts.dir;
        let named = |what: &'static str, p: &Path, source: io::Error| OpenError::Io {
            what,
            path: p.to_path_buf(),
            source,
        };
        let claim = OutClaim::take(dir, identity, notes)?;
        let path = dir.join(JOURNAL);
        let journal =
            Journal::open(&path).map_err(|e| named("cannot open the journal", &path, e))?;
        let records_at_start = journal.len();
        if records_at_start > 0 {
            notes.push(format!(
                "resuming: up to {records_at_start} finished model calls in {} are replayed instead of repeated",
                path.display()
            ));
        }
        if journal.damaged_lines > 0 {
            notes.push(format!(
                "journal: {} torn or unreadable line(s) skipped (left by an interrupted session); their calls are made again",
                journal.damaged_lines
            ));
        }
        if journal.bad_checksums > 0 {
            notes.push(format!(
                "journal: {} record(s) failed their checksum and are not replayed; their calls are made again",
                journal.bad_checksums
            ));
        }
        Ok(ExamCalls {
            dir: dir.clone(),
            prices: opts.prices.clone(),
            journal,
            counters: CallCounters::with_budget(opts.max_queries),
            pending: Pending::default(),
            usage: PerRole::default(),
            records_at_start,
            stop: Arc::new(AtomicBool::new(false)),
            _claim: claim,
        })
    }

    /// The caller for one unit: `unit` names it (e.g. `["exam", id, pass]`).
    pub fn unit(self: &Arc<Self>, unit: &serde_json::Value) -> UnitCalls {
        UnitCalls {
            calls: self.clone(),
            scope: serde_json::to_vec(unit).expect("json"),
            refused: AtomicBool::new(false),
        }
    }

    /// Usage so far, per role.
    pub fn usage(&self) -> PerRole<RoleUsage> {
        PerRole(TierRole::ALL.map(|r| self.usage.get(r).snapshot()))
    }

    /// Journals the responses of offline models (kept until their unit ends).
    pub fn flush(&self) -> io::Result<()> {
        self.pending.flush(&self.journal)
    }
}

/// The journal's file name in the output directory.
pub const JOURNAL: &str = "journal.jsonl";
/// The exam identity's file name.
pub const EXAM_JSON: &str = "exam.json";
/// The session log (calls made, journal hits, transport figures): varies by session.
pub const SESSIONS: &str = "sessions.jsonl";

/// The files of one exam (moved aside together when another exam takes the directory).
pub const ARTEFACTS: [&str; 8] = [
    "report.json",
    "report.md",
    "report.html",
    "leaderboard.json",
    "classifier.json",
    "timings.json",
    "e2e",
    EXAM_JSON,
];

fn is_run_dir(name: &str) -> bool {
    name.strip_prefix("run-")
        .is_some_and(|n| !n.is_empty() && n.bytes().all(|b| b.is_ascii_digit()))
}

/// Moves the exam artefacts of `dir` into `superseded/<n>/`, the identity, then the
/// manifest, last.
fn supersede(dir: &Path) -> io::Result<PathBuf> {
    let base = dir.join("superseded");
    fs::create_dir_all(&base)?;
    let mut k = 1;
    let mut dest = base.join(k.to_string());
    while fs::symlink_metadata(&dest).is_ok() {
        k += 1;
        dest = base.join(k.to_string());
    }
    fs::create_dir(&dest)?;
    let mut names: Vec<String> = fs::read_dir(dir)?
        .flatten()
        .map(|e| e.file_name().to_string_lossy().into_owned())
        .filter(|n| is_run_dir(n))
        .collect();
    names.sort();
    names.extend(ARTEFACTS.iter().map(|s| s.to_string()));
    // The manifest last: the moved exam is whole again once it has one.
    names.push(gauntlet_job::manifest::MANIFEST.into());
    for f in names {
        match fs::rename(dir.join(&f), dest.join(&f)) {
            Err(e) if e.kind() != io::ErrorKind::NotFound => return Err(e),
            _ => {}
        }
    }
    Ok(dest)
}

/// The calls of one unit (a scenario in one pass, or one end-to-end finding).
pub struct UnitCalls {
    calls: Arc<ExamCalls>,
    scope: Vec<u8>,
    refused: AtomicBool,
}

impl ExamCalls {
    /// Whether the exam was told to stop ([`ExamCalls::stop`]).
    pub fn stopped(&self) -> bool {
        self.stop.load(Ordering::Relaxed)
    }
}

impl UnitCalls {
    /// A call of this unit was refused because the budget was spent or the exam was
    /// stopped: the unit did not run.
    pub fn budget_refused(&self) -> bool {
        self.refused.load(Ordering::Relaxed)
    }

    /// Journals the unit's offline-model responses (network ones are journaled as they
    /// return). A journal that cannot be written stops every further call.
    pub fn flush_pending(&self) {
        if let Err(e) = self.calls.flush() {
            let e = gauntlet_calls::cache::journal_error(&self.calls.journal, &e);
            self.calls.counters.halt_with(&e);
        }
    }
}

impl TierCaller for UnitCalls {
    fn call<'a>(
        &'a self,
        tier: Tier,
        voter: usize,
        model: &'a TierModel,
        req: &'a ChatRequest,
    ) -> BoxFuture<'a, Result<ChatResponse, ModelError>> {
        Box::pin(async move {
            let c = &*self.calls;
            if c.stopped() {
                // Stopped: no call starts (its scenario run is not run; the rerun
                // resumes it from the journal).
                self.refused.store(true, Ordering::Relaxed);
                return Err(ModelError::Budget);
            }
            let role = role_of(tier);
            let base = call_base(&*model.model, &format!("exam-{}", role.name()));
            let cached = CachedModel::new(
                &*model.model,
                &base,
                &self.scope,
                &c.journal,
                &c.counters,
                &c.pending,
                c.usage.get(role),
            )
            .narrowed(&serde_json::to_vec(&(tier, voter as u64)).expect("json"));
            let r = cached.call_ref(req).await;
            if matches!(r, Err(ModelError::Budget)) {
                self.refused.store(true, Ordering::Relaxed);
            }
            r
        })
    }
}

/// Prices each role's usage at its own model's price.
pub fn price_usage(
    usage: &PerRole<RoleUsage>,
    models: &TierModels,
    prices: &PriceTable,
) -> ExamUsage {
    let mut tiers = Vec::new();
    let mut total = Some(0.0);
    let mut why = None;
    for role in TierRole::ALL {
        let u = usage.get(role);
        let tm = models.for_tier(role_tier(role));
        let cost = slot_cost(role.name(), u, Some(&*tm.model), prices).map_err(|e| e.to_string());
        match &cost {
            Ok(c) => total = total.map(|t| t + c),
            Err(e) => {
                total = None;
                why.get_or_insert_with(|| e.clone());
            }
        }
        tiers.push(TierUsage {
            tier: role,
            model: tm.id.clone(),
            calls: u.calls,
            calls_with_usage: u.calls_with_usage,
            input_tokens: u.input_tokens,
            output_tokens: u.output_tokens,
            cost_usd: cost.as_ref().ok().copied(),
            cost_na_reason: cost.err(),
        });
    }
    ExamUsage {
        price_table: prices.describe(),
        input_tokens: tiers.iter().map(|t| t.input_tokens).sum(),
        output_tokens: tiers.iter().map(|t| t.output_tokens).sum(),
        tiers,
        cost_usd: total,
        cost_na_reason: why,
    }
}

/// What one session did (`sessions.jsonl`, the CLI summary): varies between a fresh
/// and a resumed run, so it is never in `report.json`.
#[derive(Debug, Clone, Default, Serialize)]
pub struct SessionStats {
    pub journal_records_at_start: usize,
    /// Calls that reached a model.
    pub model_calls: u64,
    /// Calls served from the journal.
    pub cache_hits: u64,
    pub failed_calls: u64,
    pub budget_exhausted: bool,
    /// Per distinct tier model (by id): HTTP requests, retries by cause.
    pub transport: Vec<(String, TransportStats)>,
    pub wall_millis: u64,
}

impl SessionStats {
    pub fn collect(calls: &ExamCalls, models: &TierModels) -> SessionStats {
        let (made, cached, failed) = calls.counters.snapshot();
        let mut transport: Vec<(String, TransportStats)> = Vec::new();
        for role in TierRole::ALL {
            let tm = models.for_tier(role_tier(role));
            if transport.iter().any(|(id, _)| id == &tm.id) {
                continue;
            }
            if let Some(s) = tm.model.transport_stats() {
                transport.push((tm.id.clone(), s));
            }
        }
        SessionStats {
            journal_records_at_start: calls.records_at_start,
            model_calls: made,
            cache_hits: cached,
            failed_calls: failed,
            budget_exhausted: calls.counters.budget_hit.load(Ordering::Relaxed),
            transport,
            wall_millis: 0,
        }
    }

    /// Appends this session's line to `<dir>/sessions.jsonl`.
    pub fn log(&self, dir: &Path) -> io::Result<()> {
        use std::io::Write as _;
        let p = dir.join(SESSIONS);
        let mut f = fs::OpenOptions::new().create(true).append(true).open(&p)?;
        let mut s = serde_json::to_vec(self).expect("json");
        s.push(b'\n');
        f.write_all(&s)
    }
}

/// Planned calls and the upper-bound cost of one tier role (`gauntlet exam --estimate`).
#[derive(Debug, Clone)]
pub struct TierEstimate {
    pub tier: TierRole,
    pub model: String,
    pub calls: u64,
    pub max_input_tokens: u64,
    pub max_output_tokens: u64,
    /// USD at most, or why it cannot be priced.
    pub max_cost: Result<f64, gauntlet_calls::price::Unpriced>,
}

/// The most calls one pass of the cascade (main or a consensus voter) makes per role.
pub fn max_calls_per_pass(role: TierRole, opts: &crate::cascade::CascadeOptions) -> u64 {
    match role {
        TierRole::Triage | TierRole::Formatter => 1,
        TierRole::Investigate if opts.tool_loop => opts.max_tool_rounds.max(1) as u64,
        TierRole::Investigate => 1,
        TierRole::Deep => 3,
    }
}

/// Upper bounds before anything runs, per tier role: passes × scenarios the floor does
/// not route × (1 + consensus voters) × the most calls one cascade pass makes in that
/// role; each call at most its tier's `max_tokens` out ([`TierModel::max_tokens`]:
/// the target's param, else `MAX_TOKENS`) and at most (its longest prompt / 3 +
/// [`INPUT_ALLOWANCE`] + the earlier tiers' replies, each at most the largest tier
/// budget) in. Journal hits are not
/// subtracted; the end-to-end pass (findings not known before detection) is not included.
pub fn estimate(
    corpus: &gauntlet_corpus::load::Corpus,
    opts: &crate::cascade::CascadeOptions,
    passes: usize,
    models: Option<&TierModels>,
    prices: &PriceTable,
) -> Vec<TierEstimate> {
    use crate::cascade::{MAX_TOKENS, floor_route};
    let budget = |t: Tier| models.map_or(MAX_TOKENS, |m| m.for_tier(t).max_tokens());
    use crate::tools::{Toolbox, render_finding};
    use gauntlet_calls::price::INPUT_ALLOWANCE;
    let mut routed = 0u64;
    let mut longest = 0u64;
    let mut longest_evidence = 0u64;
    for s in &corpus.scenarios {
        let tb = Toolbox::for_scenario(&s.scenario, Vec::new());
        if floor_route(&tb.finding.family(), &tb.finding_metadata, opts).is_some() {
            continue;
        }
        routed += 1;
        let evidence = tb.gather().render();
        let prompt = render_finding(&tb.finding, &tb.finding_metadata).len() + evidence.len();
        longest = longest.max(prompt as u64);
        longest_evidence = longest_evidence.max(evidence.len() as u64);
    }
    let system = Tier::ALL
        .iter()
        .map(|t| t.system_prompt().len() as u64)
        .max()
        .unwrap_or(0);
    let widest = u64::from(
        Tier::ALL
            .iter()
            .map(|&t| budget(t))
            .max()
            .unwrap_or(MAX_TOKENS),
    );
    let units = passes as u64 * routed * (1 + opts.consensus as u64);
    TierRole::ALL
        .iter()
        .map(|&role| {
            let calls = units * max_calls_per_pass(role, opts);
            let out_tokens = u64::from(budget(role_tier(role)));
            // Up to five earlier verdicts (reasons are model output) ride along; a tool
            // loop re-sends its growing conversation of tool results.
            let mut per_call = (system + longest) / 3 + INPUT_ALLOWANCE + 5 * widest;
            if role == TierRole::Investigate && opts.tool_loop {
                per_call += opts.max_tool_rounds as u64 * (longest_evidence / 3 + out_tokens);
            }
            let u = RoleUsage {
                calls,
                calls_with_usage: calls,
                input_tokens: calls * per_call,
                output_tokens: calls * out_tokens,
            };
            let (model, max_cost) = match models {
                Some(m) => {
                    let tm = m.for_tier(role_tier(role));
                    (
                        tm.id.clone(),
                        slot_cost(role.name(), &u, Some(&*tm.model), prices),
                    )
                }
                None => (
                    "golden".to_string(),
                    Err(gauntlet_calls::price::Unpriced::Scripted { backend: "golden" }),
                ),
            };
            TierEstimate {
                tier: role,
                model,
                calls,
                max_input_tokens: u.input_tokens,
                max_output_tokens: u.output_tokens,
                max_cost,
            }
        })
        .collect()
}
