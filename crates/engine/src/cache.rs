//! The response cache: every model call of a run goes through a [`CachedModel`].
//!
//! A call's key hashes the harness version, the call's role, the model's resolved spec,
//! the unit scope (attack spec, dataset version, behavior id and prompt, seed — see
//! `run.rs`) and the full request. A hit is served from the journal;
//! a miss calls the model and journals the response. Calls to network models are
//! journaled the moment they return; calls to offline models (deterministic and free)
//! are journaled when their unit finishes, in one write. Failed calls are not journaled:
//! a rerun tries them again.
//!
//! The query budget (`max_queries`) is checked here, *before* a call reaches a model:
//! only calls that would reach a model (journal misses) spend it, whatever their role
//! (target, attacker, in-loop judge, grader); journal hits are free, so a rerun with a
//! higher budget replays what was paid for and spends only on new calls. When the
//! budget is spent, [`ModelError::Budget`] is returned and no request is sent.
//!
//! Token usage is tallied per role in a [`UsageSlot`] for every response, journal hits
//! included, so usage metrics are identical on a rerun.

use crate::journal::{Journal, Key};
use gauntlet_core::hash::HashWriter;
use gauntlet_core::message::{ChatRequest, ChatResponse};
use gauntlet_models::{BoxFuture, Model, ModelError};
use gauntlet_redteam::attack::CallModel;
use serde::Serialize;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Mutex};

/// Call accounting for a session.
#[derive(Debug, Default)]
pub struct CallCounters {
    /// Calls that reached a model.
    pub made: AtomicU64,
    /// Calls served from the journal.
    pub cached: AtomicU64,
    /// Calls that failed.
    pub failed: AtomicU64,
    /// Calls still allowed by `max_queries` (unlimited when `budget_on` is false).
    budget_left: AtomicU64,
    budget_on: bool,
    /// Set once a call was refused for lack of budget.
    pub budget_hit: AtomicBool,
    /// The first configuration error (401/403, missing key): once set, no further call
    /// reaches any model and every call fails with it.
    halt: Mutex<Option<ModelError>>,
}

impl CallCounters {
    /// Counters with a query budget (`None`: unlimited).
    pub fn with_budget(max_queries: Option<u64>) -> Self {
        CallCounters {
            budget_left: AtomicU64::new(max_queries.unwrap_or(0)),
            budget_on: max_queries.is_some(),
            ..Default::default()
        }
    }

    fn halted(&self) -> Option<ModelError> {
        self.halt.lock().unwrap_or_else(|e| e.into_inner()).clone()
    }

    fn halt_with(&self, e: &ModelError) {
        let mut h = self.halt.lock().unwrap_or_else(|e| e.into_inner());
        if h.is_none() {
            *h = Some(e.clone());
        }
    }

    /// Takes one call from the budget; false (and `budget_hit` set) when it is spent.
    pub fn take_budget(&self) -> bool {
        if !self.budget_on {
            return true;
        }
        let ok = self
            .budget_left
            .fetch_update(Ordering::AcqRel, Ordering::Acquire, |n| n.checked_sub(1))
            .is_ok();
        if !ok {
            self.budget_hit.store(true, Ordering::Relaxed);
        }
        ok
    }

    pub fn snapshot(&self) -> (u64, u64, u64) {
        (
            self.made.load(Ordering::Relaxed),
            self.cached.load(Ordering::Relaxed),
            self.failed.load(Ordering::Relaxed),
        )
    }
}

/// Journal records of offline calls waiting for their unit to finish; written in one
/// append by [`Pending::flush`], so a unit's offline calls are journaled all or nothing.
pub struct Pending(Mutex<Vec<u8>>);

impl Default for Pending {
    fn default() -> Self {
        Pending(Mutex::new(Vec::with_capacity(4096)))
    }
}

impl Pending {
    pub fn flush(&self, journal: &Journal) -> std::io::Result<()> {
        let mut p = self.0.lock().unwrap_or_else(|e| e.into_inner());
        journal.append(&p)?;
        p.clear();
        Ok(())
    }
}

/// Token usage of one role in one unit, as responses arrive.
#[derive(Debug, Default)]
pub struct UsageSlot {
    calls: AtomicU64,
    with_usage: AtomicU64,
    input: AtomicU64,
    output: AtomicU64,
}

impl UsageSlot {
    fn record(&self, r: &ChatResponse) {
        self.calls.fetch_add(1, Ordering::Relaxed);
        if let Some(u) = r.usage {
            self.with_usage.fetch_add(1, Ordering::Relaxed);
            self.input.fetch_add(u.input_tokens, Ordering::Relaxed);
            self.output.fetch_add(u.output_tokens, Ordering::Relaxed);
        }
    }
    pub fn snapshot(&self) -> RoleUsage {
        RoleUsage {
            calls: self.calls.load(Ordering::Relaxed),
            calls_with_usage: self.with_usage.load(Ordering::Relaxed),
            input_tokens: self.input.load(Ordering::Relaxed),
            output_tokens: self.output.load(Ordering::Relaxed),
        }
    }
}

/// Summed token usage of one role.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize)]
pub struct RoleUsage {
    /// Responses received (journal hits included).
    pub calls: u64,
    /// Responses that reported usage (offline models never do).
    pub calls_with_usage: u64,
    pub input_tokens: u64,
    pub output_tokens: u64,
}

impl std::ops::AddAssign for RoleUsage {
    fn add_assign(&mut self, o: RoleUsage) {
        self.calls += o.calls;
        self.calls_with_usage += o.calls_with_usage;
        self.input_tokens += o.input_tokens;
        self.output_tokens += o.output_tokens;
    }
}

/// A model wrapped with the cache and journal, scoped to one unit of work.
pub struct CachedModel<'a> {
    model: &'a dyn Model,
    journal: &'a Journal,
    counters: &'a CallCounters,
    /// Hash state already fed with everything but the request.
    scope: HashWriter,
    pending: &'a Pending,
    usage: &'a UsageSlot,
}

/// Feeds every field of a request into the key, length-delimited (cheaper than hashing
/// its JSON, and just as canonical). Changing this changes every key: bump the
/// `gauntlet-call-v*` tag in [`call_base`] with it.
fn hash_request(h: &mut HashWriter, req: &ChatRequest) {
    h.field(&(req.messages.len() as u64).to_le_bytes());
    for m in &req.messages {
        h.field(&[m.role as u8]);
        h.field(m.content.as_bytes());
        h.field(m.name.as_deref().unwrap_or("\u{0}").as_bytes());
        h.field(m.tool_call_id.as_deref().unwrap_or("\u{0}").as_bytes());
        if m.tool_calls.is_empty() {
            h.field(b"");
        } else {
            h.json(&m.tool_calls);
        }
    }
    if req.tools.is_empty() {
        h.field(b"");
    } else {
        hash_tools(h, &req.tools);
    }
    h.field(&req.seed.map_or([0xff; 8], u64::to_le_bytes));
    h.field(&req.temperature.map_or(u64::MAX, f64::to_bits).to_le_bytes());
    h.field(&req.max_tokens.map_or(u64::MAX, u64::from).to_le_bytes());
    // The out-of-band agent script (offline reference_agent): a changed plan re-calls.
    // Absent for every other request, so their keys are unchanged.
    if let Some(s) = &req.agent_script {
        h.field(b"agent-script");
        h.field(s.digest());
    }
}

/// Feeds the tools' canonical JSON exactly as `h.json(tools)` would, memoised per
/// thread: agent loops send the same few tool lists on every call (one shared list per
/// toolkit), so a pointer comparison usually finds them; other lists are compared by
/// content. The memo holds its lists alive, so a pointer can never be reused for
/// different tools while it is remembered.
fn hash_tools(h: &mut HashWriter, tools: &Arc<[gauntlet_core::message::ToolDef]>) {
    use std::io::Write as _;
    type Memo = Vec<(Arc<[gauntlet_core::message::ToolDef]>, Vec<u8>)>;
    const KEEP: usize = 4;
    thread_local! {
        static MEMO: std::cell::RefCell<Memo> = const { std::cell::RefCell::new(Vec::new()) };
    }
    MEMO.with_borrow_mut(|memo| {
        let found = memo
            .iter()
            .position(|(t, _)| Arc::ptr_eq(t, tools))
            .or_else(|| memo.iter().position(|(t, _)| t[..] == tools[..]));
        let i = match found {
            Some(i) => i,
            None => {
                let mut json = Vec::new();
                serde_json::to_writer(&mut json, &tools[..])
                    .expect("serialising into memory cannot fail");
                json.push(0);
                if memo.len() == KEEP {
                    memo.remove(0);
                }
                memo.push((tools.clone(), json));
                memo.len() - 1
            }
        };
        h.write_all(&memo[i].1).expect("hashing cannot fail");
    });
}

/// The key prefix shared by every call of one model in one role: the harness version,
/// the role (`target`, `grader`, `attacker`…) and the model's resolved spec. Computed
/// once per run, cloned per unit.
pub fn call_base(model: &dyn Model, role: &str) -> HashWriter {
    let mut h = HashWriter::new();
    h.field(b"gauntlet-call-v2");
    h.field(gauntlet_core::HARNESS_VERSION.as_bytes());
    h.field(role.as_bytes());
    h.json(&model.spec().identity());
    h
}

impl<'a> CachedModel<'a> {
    /// `base` comes from [`call_base`] for this model and role; `scope` identifies the unit.
    pub fn new(
        model: &'a dyn Model,
        base: &HashWriter,
        scope: &[u8],
        journal: &'a Journal,
        counters: &'a CallCounters,
        pending: &'a Pending,
        usage: &'a UsageSlot,
    ) -> Self {
        let mut h = base.clone();
        h.field(scope);
        CachedModel {
            model,
            journal,
            counters,
            scope: h,
            pending,
            usage,
        }
    }

    /// The same model with a narrower scope (e.g. one judge, one attempt), so that
    /// logically distinct calls with identical requests get distinct keys.
    pub fn narrowed(&self, extra: &[u8]) -> CachedModel<'a> {
        let mut scope = self.scope.clone();
        scope.field(extra);
        CachedModel {
            model: self.model,
            journal: self.journal,
            counters: self.counters,
            scope,
            pending: self.pending,
            usage: self.usage,
        }
    }

    fn key(&self, req: &ChatRequest) -> Key {
        let mut h = self.scope.clone();
        hash_request(&mut h, req);
        let full = h.finish();
        full[..16].try_into().expect("16 bytes")
    }
}

impl CallModel for CachedModel<'_> {
    fn call<'b>(&'b self, req: ChatRequest) -> BoxFuture<'b, Result<ChatResponse, ModelError>> {
        Box::pin(async move {
            let key = self.key(&req);
            if let Some(r) = self.journal.get(&key) {
                self.counters.cached.fetch_add(1, Ordering::Relaxed);
                self.usage.record(&r);
                return Ok(r);
            }
            if let Some(e) = self.counters.halted() {
                return Err(e);
            }
            if !self.counters.take_budget() {
                return Err(ModelError::Budget);
            }
            self.counters.made.fetch_add(1, Ordering::Relaxed);
            match self.model.chat(&req).await {
                Ok(r) => {
                    self.usage.record(&r);
                    if self.model.offline() {
                        let mut p = self.pending.0.lock().unwrap_or_else(|e| e.into_inner());
                        Journal::encode(&mut p, &key, &r);
                    } else {
                        let mut line = Vec::with_capacity(256 + r.content.len());
                        Journal::encode(&mut line, &key, &r);
                        self.journal.append(&line).map_err(|e| {
                            ModelError::Config(format!("cannot write the journal: {e}"))
                        })?;
                    }
                    Ok(r)
                }
                Err(e) => {
                    self.counters.failed.fetch_add(1, Ordering::Relaxed);
                    if matches!(e, ModelError::Config(_)) {
                        self.counters.halt_with(&e);
                    }
                    Err(e)
                }
            }
        })
    }
}

#[cfg(test)]
mod tool_hash_tests {
    use super::*;
    use gauntlet_core::message::ToolDef;

    /// The memoised tool hashing feeds exactly what `h.json` does, for repeated and
    /// changing tool lists alike, so keys are unchanged by the memo.
    #[test]
    fn memoised_tools_hash_like_json() {
        let t = |n: &str| ToolDef {
            name: n.into(),
            description: "d".into(),
            parameters: serde_json::json!({"type": "object", "properties": {"a": {"type": "string"}}}),
        };
        for tools in [
            vec![t("a")],
            vec![t("a")],
            vec![t("b"), t("a")],
            vec![t("a")],
        ] {
            let (mut x, mut y) = (HashWriter::new(), HashWriter::new());
            let shared: Arc<[ToolDef]> = tools.clone().into();
            hash_tools(&mut x, &shared);
            hash_tools(&mut x, &shared);
            y.json(&tools);
            y.json(&tools);
            assert_eq!(x.finish(), y.finish());
        }
    }
}
