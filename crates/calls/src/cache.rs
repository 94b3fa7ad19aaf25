//! The response cache: every model call of a run (and of a real-mode agent exam) goes
//! through a [`CachedModel`].
//!
//! A call's key hashes the harness version, the call's role, the model's resolved spec,
//! the unit scope (a run: attack spec, dataset version, behavior id and prompt, seed —
//! see the engine's `run/unit.rs`; an exam: scenario and pass, then tier and consensus voter
//! — see the exam's `calls.rs`) and the full request. A hit is served from the journal;
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
//!
//! Once a stop is asked for ([`gauntlet_models::stop`]) a journal miss is not sent: the
//! call fails saying so, its unit is not folded, and the rerun makes it. A call a stop
//! ended is not counted as failed.

use crate::batch::{Batching, Served, Spend};
pub use crate::journal::journal_error;
use crate::journal::{Journal, Key};
use crate::seam::{CallModel, Conversation, PrefixMemo};
pub use crate::vet::vet_reply;
use gauntlet_core::hash::HashWriter;
use gauntlet_core::message::{ChatRequest, ChatResponse, Message};
use gauntlet_models::{BoxFuture, Model, ModelError};
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
    /// Journal misses waiting on their model now (sent, or queued for a provider
    /// batch): progress shows them apart from the calls done.
    pub in_flight: AtomicU64,
    /// Calls still allowed by `max_queries` (unlimited when `budget_on` is false).
    budget_left: AtomicU64,
    budget_on: bool,
    /// Set once a call was refused for lack of budget.
    pub budget_hit: AtomicBool,
    /// The first configuration error (401/403, missing key): once set, no further call
    /// reaches any model and every call fails with it. Read on every call: a lock-free
    /// load, where a mutex cost 0.5% of the offline benchmark's CPU.
    halt: std::sync::OnceLock<ModelError>,
    /// The batchers of batch-mode models ([`crate::batch`]): a journal miss of such a
    /// model is answered through its provider batch.
    batching: Option<Arc<Batching>>,
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

    /// Sends the calls of batch-mode models through `batching`.
    pub fn with_batching(mut self, batching: Option<Arc<Batching>>) -> Self {
        self.batching = batching;
        self
    }

    /// The configuration error that stopped every call, if one did.
    pub fn halted(&self) -> Option<ModelError> {
        self.halt.get().cloned()
    }

    /// Stops every further call with `e` (the first one given is kept).
    pub fn halt_with(&self, e: &ModelError) {
        let _ = self.halt.set(e.clone());
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

impl Spend for CallCounters {
    fn take_budget(&self) -> bool {
        CallCounters::take_budget(self)
    }
    fn count_made(&self) {
        self.made.fetch_add(1, Ordering::Relaxed);
    }
}

/// Journal records of offline calls waiting for their unit to finish; written in one
/// append by [`Pending::flush`], so a unit's offline calls are journaled all or nothing.
pub struct Pending(Mutex<Vec<u8>>);

impl Default for Pending {
    fn default() -> Self {
        // Room for a chunk's records (~32 offline calls) plus the string escaper's
        // reservation (6 bytes per content byte), so encoding rarely regrows and copies
        // the records already written.
        Pending(Mutex::new(Vec::with_capacity(64 << 10)))
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
            // Saturating, never wrapping (each count is at most MAX_PLAUSIBLE_TOKENS,
            // checked by `vet_reply`, so the sums cannot reach u64::MAX in practice).
            let add = |a: &AtomicU64, n: u64| {
                let _ = a.fetch_update(Ordering::Relaxed, Ordering::Relaxed, |x| {
                    Some(x.saturating_add(n))
                });
            };
            add(&self.input, u.input_tokens);
            add(&self.output, u.output_tokens);
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
    /// Saturating sums: a token count never wraps to a small one.
    fn add_assign(&mut self, o: RoleUsage) {
        self.calls = self.calls.saturating_add(o.calls);
        self.calls_with_usage = self.calls_with_usage.saturating_add(o.calls_with_usage);
        self.input_tokens = self.input_tokens.saturating_add(o.input_tokens);
        self.output_tokens = self.output_tokens.saturating_add(o.output_tokens);
    }
}

/// The error of a request larger than the model's `max_request_bytes`.
fn request_too_large(model: &dyn Model, size: usize) -> Option<ModelError> {
    let cap = model.limits().max_request_bytes;
    (size > cap).then(|| {
        ModelError::Call(format!(
            "{}: the request is {size} bytes (its messages: text, tool calls and tool results), more than the {cap} a request may be (the target's `max_request_bytes`); the call is not made and is an error",
            model.label()
        ))
    })
}

/// A model wrapped with the cache and journal, scoped to one unit of work.
pub struct CachedModel<'a> {
    model: &'a dyn Model,
    journal: &'a Journal,
    counters: &'a CallCounters,
    /// Hash state already fed with everything but the request.
    scope: HashWriter,
    /// Names this wrapper (and so its key prefix) in a [`Conversation`]'s memo: unique
    /// per wrapper made in this process.
    id: u64,
    pending: &'a Pending,
    usage: &'a UsageSlot,
}

/// Feeds every field of a request into the key, length-delimited (cheaper than hashing
/// its JSON, and just as canonical): first the fixed part ([`hash_head`]), then each
/// message ([`hash_message`]), then the message count. Messages come after everything
/// else so that a growing conversation can be keyed incrementally
/// ([`CachedModel::call_conversation`]). Changing this changes every key: bump the
/// `gauntlet-call-v*` tag in [`call_base`] with it.
fn hash_request(h: &mut HashWriter, req: &ChatRequest) {
    hash_head(h, req);
    for m in &req.messages {
        hash_message(h, m);
    }
    hash_end(h, req.messages.len());
}

/// Everything in a request but its messages.
fn hash_head(h: &mut HashWriter, req: &ChatRequest) {
    if req.tools.is_empty() {
        h.field(b"");
    } else {
        hash_tools(h, &req.tools);
    }
    h.field(&req.seed.map_or([0xff; 8], u64::to_le_bytes));
    h.field(&req.temperature.map_or(u64::MAX, f64::to_bits).to_le_bytes());
    h.field(&req.max_tokens.map_or(u64::MAX, u64::from).to_le_bytes());
    // The out-of-band agent script (offline reference_agent): a changed plan re-calls.
    match &req.agent_script {
        Some(s) => {
            h.field(b"agent-script");
            h.field(s.digest());
        }
        None => h.field(b""),
    }
    // The out-of-band transform trace (offline reference target). Hashed only when
    // present, so the keys of requests without prompt transforms are unchanged; the tag
    // field (15 bytes) cannot be mistaken for a message header (4) or the count (8).
    if let Some(t) = &req.transform_trace {
        h.field(b"transform-trace");
        h.field(&t.digest());
    }
    // Asked-for logprobs (guard judges): hashed only when present, like the trace; the
    // tag field (12 bytes) is distinct from every other field's length.
    if let Some(n) = req.top_logprobs {
        h.field(b"top-logprobs");
        h.field(&[n]);
    }
}

/// One message: a header field (role, and which optional parts are present), the
/// content, then the parts present.
fn hash_message(h: &mut HashWriter, m: &Message) {
    h.field(&[
        m.role as u8,
        u8::from(m.name.is_some()),
        u8::from(m.tool_call_id.is_some()),
        u8::from(!m.tool_calls.is_empty()),
    ]);
    h.field(m.content.as_bytes());
    if let Some(n) = &m.name {
        h.field(n.as_bytes());
    }
    if let Some(id) = &m.tool_call_id {
        h.field(id.as_bytes());
    }
    if !m.tool_calls.is_empty() {
        h.json(&m.tool_calls);
    }
}

/// Closes the message list (a message's header field is 4 bytes long, this one 8, so
/// the list is unambiguous).
fn hash_end(h: &mut HashWriter, messages: usize) {
    h.field(&(messages as u64).to_le_bytes());
}

/// Feeds the digest of the tools' canonical JSON ([`tools_digest`]), memoised per
/// thread: agent loops send the same few tool lists on every call (one shared list per
/// toolkit), so a pointer comparison usually finds them; other lists are compared by
/// content. The memo holds its lists alive, so a pointer can never be reused for
/// different tools while it is remembered.
fn hash_tools(h: &mut HashWriter, tools: &Arc<[gauntlet_core::message::ToolDef]>) {
    type Memo = Vec<(Arc<[gauntlet_core::message::ToolDef]>, [u8; 32])>;
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
                if memo.len() == KEEP {
                    memo.remove(0);
                }
                memo.push((tools.clone(), tools_digest(tools)));
                memo.len() - 1
            }
        };
        h.field(&memo[i].1);
    });
}

/// sha256 of the tools' canonical JSON.
fn tools_digest(tools: &[gauntlet_core::message::ToolDef]) -> [u8; 32] {
    let mut d = HashWriter::new();
    d.json(tools);
    d.finish()
}

/// The key prefix shared by every call of one model in one role: the harness version,
/// the role (`target`, `grader`, `attacker`…) and the model's resolved spec. Computed
/// once per run, cloned per unit.
pub fn call_base(model: &dyn Model, role: &str) -> HashWriter {
    let mut h = HashWriter::new();
    h.field(b"gauntlet-call-v3");
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
            id: next_id(),
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
            id: next_id(),
            pending: self.pending,
            usage: self.usage,
        }
    }

    fn key(&self, req: &ChatRequest) -> Key {
        let mut h = self.scope.clone();
        hash_request(&mut h, req);
        truncate(h)
    }

    /// The key of the conversation's request as it stands: the same as [`Self::key`],
    /// computed from the hash state the conversation's memo holds over the messages
    /// already keyed by this prefix, so only the new messages are hashed.
    fn conversation_key(&self, conv: &mut Conversation) -> Key {
        let owner = self.id;
        let (req, memo) = conv.memo();
        let (mut h, from) = match memo.take() {
            Some(m) if m.owner == owner && m.messages <= req.messages.len() => {
                (m.state, m.messages)
            }
            _ => {
                let mut h = self.scope.clone();
                hash_head(&mut h, req);
                (h, 0)
            }
        };
        for m in &req.messages[from..] {
            hash_message(&mut h, m);
        }
        *memo = Some(PrefixMemo {
            owner,
            messages: req.messages.len(),
            state: h.clone(),
        });
        hash_end(&mut h, req.messages.len());
        truncate(h)
    }
}

/// A fresh wrapper id (never reused: a u64 counter does not wrap).
fn next_id() -> u64 {
    static NEXT: AtomicU64 = AtomicU64::new(0);
    NEXT.fetch_add(1, Ordering::Relaxed)
}

/// A key is the first 128 bits of the sha256.
fn truncate(h: HashWriter) -> Key {
    h.finish()[..16].try_into().expect("16 bytes")
}

impl CachedModel<'_> {
    /// `size`: the request's [`ChatRequest::size`], checked against the model's cap
    /// before anything else (journal hits too, so a rerun decides the same).
    async fn call_inner(
        &self,
        req: &ChatRequest,
        key: Key,
        size: usize,
    ) -> Result<ChatResponse, ModelError> {
        if let Some(e) = request_too_large(self.model, size) {
            self.counters.failed.fetch_add(1, Ordering::Relaxed);
            return Err(e);
        }
        if let Some(r) = self.journal.get(&key) {
            self.counters.cached.fetch_add(1, Ordering::Relaxed);
            self.usage.record(&r);
            return Ok(r);
        }
        if let Some(e) = self.counters.halted() {
            return Err(e);
        }
        if let Some(b) = self
            .counters
            .batching
            .as_ref()
            .and_then(|b| b.batcher(self.model))
        {
            // Budget, journaling and `made` are the batcher's: it spends the budget when
            // the call joins a wave and journals the response when the batch is ingested.
            let _waiting = InFlight::enter(&self.counters.in_flight);
            return match b.call(key, req, self.counters).await {
                Ok((r, served)) => {
                    if served == Served::Earlier {
                        self.counters.cached.fetch_add(1, Ordering::Relaxed);
                    }
                    self.usage.record(&r);
                    Ok(r)
                }
                Err(e) => {
                    if e != ModelError::Budget {
                        self.counters.failed.fetch_add(1, Ordering::Relaxed);
                    }
                    if matches!(e, ModelError::Config(_)) {
                        self.counters.halt_with(&e);
                    }
                    Err(e)
                }
            };
        }
        // After a stop no call is sent (the unit it belongs to is not folded; the rerun
        // makes the call).
        let stop = gauntlet_models::stop::Stop::global();
        if stop.stopping() {
            return Err(gauntlet_models::stop::not_sent(""));
        }
        if !self.counters.take_budget() {
            return Err(ModelError::Budget);
        }
        self.counters.made.fetch_add(1, Ordering::Relaxed);
        let waiting = InFlight::enter(&self.counters.in_flight);
        let reply = self
            .model
            .chat(req)
            .await
            .and_then(|r| vet_reply(self.model, r));
        drop(waiting);
        match reply {
            Ok(r) => {
                self.usage.record(&r);
                if self.model.offline() {
                    let mut p = self.pending.0.lock().unwrap_or_else(|e| e.into_inner());
                    Journal::encode(&mut p, &key, &r);
                } else {
                    // The string escaper reserves 6 bytes per content byte before writing.
                    let mut line = Vec::with_capacity(256 + 6 * r.content.len());
                    Journal::encode(&mut line, &key, &r);
                    if let Err(e) = self.journal.append(&line) {
                        // A call that cannot be journaled would be paid for again on the
                        // rerun: stop every further call now, not when the unit ends.
                        let e = journal_error(self.journal, &e);
                        self.counters.halt_with(&e);
                        return Err(e);
                    }
                }
                Ok(r)
            }
            Err(e) => {
                // A call a stop ended is no failure of the model or the endpoint.
                if !stop.stopping() {
                    self.counters.failed.fetch_add(1, Ordering::Relaxed);
                }
                if matches!(e, ModelError::Config(_)) {
                    self.counters.halt_with(&e);
                }
                Err(e)
            }
        }
    }
}

/// One call counted in [`CallCounters::in_flight`] until dropped (a cancelled call too).
struct InFlight<'a>(&'a AtomicU64);

impl<'a> InFlight<'a> {
    fn enter(n: &'a AtomicU64) -> Self {
        n.fetch_add(1, Ordering::Relaxed);
        InFlight(n)
    }
}

impl Drop for InFlight<'_> {
    fn drop(&mut self) {
        self.0.fetch_sub(1, Ordering::Relaxed);
    }
}

impl CallModel for CachedModel<'_> {
    fn call<'b>(&'b self, req: ChatRequest) -> BoxFuture<'b, Result<ChatResponse, ModelError>> {
        Box::pin(async move { self.call_inner(&req, self.key(&req), req.size()).await })
    }
    fn call_ref<'b>(
        &'b self,
        req: &'b ChatRequest,
    ) -> BoxFuture<'b, Result<ChatResponse, ModelError>> {
        Box::pin(self.call_inner(req, self.key(req), req.size()))
    }
    fn call_conversation<'b>(
        &'b self,
        conv: &'b mut Conversation,
    ) -> BoxFuture<'b, Result<ChatResponse, ModelError>> {
        let key = self.conversation_key(conv);
        let size = conv.size();
        Box::pin(self.call_inner(conv.request(), key, size))
    }
    fn tool_protocol(&self) -> gauntlet_models::ToolProtocol {
        self.model.tool_protocol()
    }
}

#[cfg(test)]
mod tool_hash_tests {
    use super::*;
    use gauntlet_core::message::ToolDef;

    /// The memoised tool hashing feeds exactly the digest of the tools' JSON, for
    /// repeated and changing tool lists alike, so keys are unchanged by the memo.
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
            let mut d = HashWriter::new();
            d.json(&tools);
            let d = d.finish();
            y.field(&d);
            y.field(&d);
            assert_eq!(x.finish(), y.finish());
        }
    }
}

#[cfg(test)]
mod key_tests {
    use super::*;
    use gauntlet_core::message::{Role, ToolCall, ToolDef};
    use gauntlet_core::params::{ParamValue, Params, PluginSpec};
    use gauntlet_core::scenario::{AgentScript, ToolStep};
    use gauntlet_models::targets::reference_agent::ReferenceAgent;

    fn agent(susceptibility: &str) -> ReferenceAgent {
        let mut p = Params::new();
        p.insert("susceptibility", ParamValue::Str(susceptibility.into()));
        ReferenceAgent::new(PluginSpec {
            name: "reference_agent".into(),
            params: p,
            loc: Default::default(),
            label: None,
        })
    }

    struct Env {
        _dir: tempfile::TempDir,
        journal: Journal,
        counters: CallCounters,
        pending: Pending,
        usage: UsageSlot,
    }
    fn env() -> Env {
        let dir = tempfile::tempdir().unwrap();
        let journal = Journal::open(&dir.path().join("journal.jsonl")).unwrap();
        Env {
            _dir: dir,
            journal,
            counters: CallCounters::default(),
            pending: Pending::default(),
            usage: UsageSlot::default(),
        }
    }
    fn cached<'a>(e: &'a Env, m: &'a dyn Model, role: &str, scope: &[u8]) -> CachedModel<'a> {
        CachedModel::new(
            m,
            &call_base(m, role),
            scope,
            &e.journal,
            &e.counters,
            &e.pending,
            &e.usage,
        )
    }
    fn step(name: &str, v: serde_json::Value) -> ToolStep {
        ToolStep {
            name: name.into(),
            arguments: v,
        }
    }
    fn script(marker: &str) -> Arc<AgentScript> {
        Arc::new(AgentScript::new(
            vec![step(
                "read_document",
                serde_json::json!({"document_id": "d"}),
            )],
            step("send_email", serde_json::json!({"to": "x"})),
            marker.into(),
        ))
    }
    fn tool_msg(content: &str, name: &str, id: &str) -> Message {
        Message {
            role: Role::Tool,
            content: content.into(),
            name: Some(name.into()),
            tool_calls: Vec::new(),
            tool_call_id: Some(id.into()),
        }
    }
    fn with_call(content: &str, name: &str, args: serde_json::Value, id: &str) -> Message {
        Message {
            tool_calls: vec![ToolCall {
                name: name.into(),
                arguments: args,
                call_id: id.into(),
            }],
            ..Message::assistant(content)
        }
    }
    fn base_request() -> ChatRequest {
        let tools: Arc<[ToolDef]> = vec![ToolDef {
            name: "read_document".into(),
            description: "d".into(),
            parameters: serde_json::json!({"type": "object"}),
        }]
        .into();
        ChatRequest {
            messages: vec![Message::system("sys"), Message::user("task")],
            tools,
            seed: Some(7),
            agent_script: Some(script("M")),
            ..Default::default()
        }
    }

    /// Every part of a request that can change the response changes the key.
    #[test]
    fn keys_cover_every_part_of_the_request() {
        let e = env();
        let m = agent("robust");
        let c = cached(&e, &m, "target", b"unit");
        let base = {
            let mut r = base_request();
            r.messages.push(with_call(
                "",
                "read_document",
                serde_json::json!({"document_id": "d"}),
                "call_1",
            ));
            r.messages.push(tool_msg("text", "read_document", "call_1"));
            r
        };
        let k0 = c.key(&base);
        let mut variants: Vec<(&str, ChatRequest)> = Vec::new();
        let mut v = |label: &'static str, f: &dyn Fn(&mut ChatRequest)| {
            let mut r = base.clone();
            f(&mut r);
            variants.push((label, r));
        };
        v("role", &|r| r.messages[1].role = Role::System);
        v("content", &|r| r.messages[1].content.push('!'));
        v("name", &|r| r.messages[3].name = Some("read_file".into()));
        v("name absent", &|r| r.messages[3].name = None);
        v("empty name", &|r| r.messages[1].name = Some(String::new()));
        v("NUL name", &|r| r.messages[1].name = Some("\u{0}".into()));
        v("tool_call_id", &|r| {
            r.messages[3].tool_call_id = Some("call_2".into());
        });
        v("tool_call_id absent", &|r| {
            r.messages[3].tool_call_id = None;
        });
        v("tool call args", &|r| {
            r.messages[2].tool_calls[0].arguments = serde_json::json!({"document_id": "e"});
        });
        v("tool call id", &|r| {
            r.messages[2].tool_calls[0].call_id = "call_9".into();
        });
        v("tool call name", &|r| {
            r.messages[2].tool_calls[0].name = "x".into();
        });
        v("no tool calls", &|r| r.messages[2].tool_calls.clear());
        v("message dropped", &|r| {
            r.messages.pop();
        });
        v("message added", &|r| r.messages.push(Message::user("more")));
        v("no tools", &|r| r.tools = Arc::from(Vec::new()));
        v("tools", &|r| {
            let mut t = r.tools.to_vec();
            t[0].description.push('!');
            r.tools = t.into();
        });
        v("seed", &|r| r.seed = Some(8));
        v("no seed", &|r| r.seed = None);
        v("temperature", &|r| r.temperature = Some(0.5));
        v("max_tokens", &|r| r.max_tokens = Some(10));
        v("script", &|r| r.agent_script = Some(script("N")));
        v("no script", &|r| r.agent_script = None);
        let mut seen = std::collections::HashMap::new();
        seen.insert(k0, "base");
        for (label, r) in &variants {
            if let Some(prev) = seen.insert(c.key(r), label) {
                panic!("`{label}` has the same key as `{prev}`");
            }
        }
        // The role, the model's spec (its tool protocol included), the unit scope and a
        // narrowed scope count too.
        let other = agent("vulnerable");
        let prompted = {
            let mut s = m.spec().clone();
            s.params
                .insert("tool_protocol", ParamValue::Str("prompted".into()));
            gauntlet_models::registry::build_target(&s).unwrap()
        };
        let pc = cached(&e, prompted.as_ref(), "target", b"unit");
        assert_eq!(pc.tool_protocol(), gauntlet_models::ToolProtocol::Prompted);
        for (label, k) in [
            ("role", cached(&e, &m, "grader", b"unit").key(&base)),
            ("spec", cached(&e, &other, "target", b"unit").key(&base)),
            ("tool protocol", pc.key(&base)),
            ("scope", cached(&e, &m, "target", b"unit2").key(&base)),
            ("narrowed", c.narrowed(b"0").key(&base)),
        ] {
            assert_ne!(k, k0, "{label}");
        }
        // And the key is stable.
        assert_eq!(c.key(&base.clone()), k0);
    }

    /// A conversation keyed incrementally gets exactly the keys of its requests keyed
    /// from scratch, even when callers with other scopes share the conversation.
    #[test]
    fn conversation_keys_equal_full_keys() {
        let e = env();
        let m = agent("robust");
        let a = cached(&e, &m, "target", b"unit");
        let b = a.narrowed(b"other");
        let mut conv = Conversation::new(base_request());
        for i in 0..5 {
            for c in [&a, &a, &b, &a] {
                let full = c.key(conv.request());
                assert_eq!(c.conversation_key(&mut conv), full, "step {i}");
            }
            let id = format!("call_{i}");
            conv.push(with_call(
                &format!("step {i}"),
                "read_document",
                serde_json::json!({"document_id": i}),
                &id,
            ));
            conv.push(tool_msg(&format!("out {i}"), "read_document", &id));
        }
    }

    /// The conversation path calls the model and journals like any other call.
    #[test]
    fn conversation_calls_are_journaled_under_the_full_key() {
        let e = env();
        let m = agent("robust");
        let c = cached(&e, &m, "target", b"unit");
        let mut conv = Conversation::new(base_request());
        let rt = tokio::runtime::Builder::new_current_thread()
            .build()
            .unwrap();
        let r = rt.block_on(c.call_conversation(&mut conv)).unwrap();
        assert_eq!(r.tool_calls[0].name, "read_document");
        let mut expected = Vec::new();
        Journal::encode(&mut expected, &c.key(conv.request()), &r);
        assert_eq!(*e.pending.0.lock().unwrap(), expected);
    }
}
