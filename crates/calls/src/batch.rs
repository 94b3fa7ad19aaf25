//! Batch mode: the calls of a wave, sent to the provider as one batch, and each caller
//! answered with its own result when the batch's results are ingested.
//!
//! A model built with `batch: true` offers a provider batch API
//! ([`gauntlet_models::batch::BatchApi`]). The engine's scheduler does not change: every
//! unit still makes its calls through a [`crate::cache::CachedModel`], which, on a
//! journal miss for such a model, hands the call to the model's [`Batcher`] instead of
//! sending it. The batcher collects the calls that arrive together (a *wave*: it is
//! submitted once no call has joined it for `batch_linger_ms`, or when it holds
//! `batch_max_requests`), submits them as one batch under their call keys as
//! `custom_id`s, polls the batch, and ingests its results: every response is journaled
//! exactly as if the call had been made alone (same key, same record), then handed to
//! the caller waiting for it. Multi-turn attacks and agent loops thus proceed one batch
//! per step.
//!
//! Nothing is lost or paid twice:
//! * the batch id and the keys it carries are appended to the run's batch ledger
//!   (`batches.jsonl`, beside the journal) the moment the provider returns the id,
//!   before any poll; a rerun after a kill finds the batches without an `ended` line and
//!   re-attaches to them (polls and ingests them) instead of submitting their requests
//!   again. A call whose key is in such a batch waits for it; results nobody has asked
//!   for yet are journaled and found by the journal lookup when their unit comes;
//! * a request's own failure inside a batch is that call's error outcome (not journaled,
//!   so a rerun tries it again, as with calls made one by one);
//! * requests an expired or cancelled batch never ran are submitted again in a later
//!   wave, at most [`MAX_RESUBMITS`] times each; nothing else is. A request no batch
//!   ran after that stops the run (`partial`, with the reason) instead of being
//!   resubmitted forever;
//! * the query budget is spent when a call joins a wave to be submitted, a
//!   resubmission included; calls answered by the journal or by a re-attached batch
//!   are free;
//! * result files are streamed, one line at a time; a line that cannot be read is
//!   reported naming the batch, the file, the line and what was wrong, and the request
//!   it should have answered fails with that message.
//!
//! Progress hears of every submitted batch, every status change and every ingest
//! through the `note` callback.

use crate::journal::{Journal, Key, journal_error};
use crate::vet::vet_reply;
use gauntlet_core::files;
use gauntlet_core::hash::{HashWriter, to_hex};
use gauntlet_core::message::{ChatRequest, ChatResponse};
use gauntlet_models::batch::{BadLine, BatchApi, Ingested, Outcome, Polled};
use gauntlet_models::{Model, ModelError};
use serde::{Deserialize, Serialize};
use std::collections::{HashMap, HashSet};
use std::fmt;
use std::fs::{File, OpenOptions};
use std::io::{self, BufRead, BufReader, Write};
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};
use std::time::Instant;
use tokio::sync::{Notify, oneshot};
use tokio::task::JoinHandle;

/// The ledger's file name, beside the journal.
pub const LEDGER_FILE: &str = "batches.jsonl";

/// Progress notices (batch submitted, status changed, results ingested).
pub type Note = Arc<dyn Fn(&str) + Send + Sync>;

/// Results journaled per write while ingesting.
const INGEST_CHUNK: usize = 256;
/// Consecutive failed polls after which the callers waiting on a batch are failed (the
/// batch stays in the ledger: a rerun re-attaches to it).
const MAX_POLL_FAILURES: u32 = 5;
/// A wave is submitted at the latest this many lingers after its first call.
const MAX_LINGERS: u32 = 20;

/// One ledger line.
#[derive(Debug, Serialize, Deserialize)]
#[serde(untagged)]
enum LedgerLine {
    Submitted {
        batch: String,
        provider: String,
        model: String,
        keys: Vec<String>,
    },
    Ended {
        ended: String,
    },
}

/// The ledger as a kind of file: gauntlet's own, streamed line by line.
const LEDGER: files::Kind = files::Kind {
    what: "batch ledger",
    max_bytes: u64::MAX,
};

/// The run's batch ledger (`batches.jsonl`): which batches were submitted with which
/// keys, and which have been ingested. Append-only, one write per line.
struct Ledger {
    path: PathBuf,
    file: Mutex<File>,
}

impl Ledger {
    /// Opens the ledger and returns the batches not yet ingested:
    /// (batch id, provider, model id, keys). A torn last line is ignored.
    #[expect(
        clippy::type_complexity,
        reason = "one private call site reads the tuple"
    )]
    fn open(path: &Path) -> io::Result<(Ledger, Vec<(String, String, String, Vec<Key>)>)> {
        let mut open: Vec<(String, String, String, Vec<Key>)> = Vec::new();
        match files::open(path, LEDGER) {
            Ok(f) => {
                for line in BufReader::new(f).split(b'\n') {
                    let line = line?;
                    let Ok(l) = serde_json::from_slice::<LedgerLine>(&line) else {
                        continue;
                    };
                    match l {
                        LedgerLine::Submitted {
                            batch,
                            provider,
                            model,
                            keys,
                        } => {
                            let keys = keys.iter().filter_map(|k| parse_key(k)).collect();
                            open.push((batch, provider, model, keys));
                        }
                        LedgerLine::Ended { ended } => open.retain(|b| b.0 != ended),
                    }
                }
            }
            Err(e) if e.io_kind() == Some(io::ErrorKind::NotFound) => {}
            Err(e) => return Err(e.into_io()),
        }
        let mut file = OpenOptions::new().append(true).create(true).open(path)?;
        // A torn last line (killed mid-write) must not glue onto the next one.
        let len = file.metadata()?.len();
        if len > 0 {
            let mut last = [0u8; 1];
            use std::os::unix::fs::FileExt;
            files::open(path, LEDGER)
                .map_err(files::ReadError::into_io)?
                .file()
                .read_exact_at(&mut last, len - 1)?;
            if last[0] != b'\n' {
                file.write_all(b"\n")?;
            }
        }
        Ok((
            Ledger {
                path: path.to_path_buf(),
                file: Mutex::new(file),
            },
            open,
        ))
    }

    fn append(&self, line: &LedgerLine) -> io::Result<()> {
        let mut bytes = serde_json::to_vec(line).map_err(io::Error::other)?;
        bytes.push(b'\n');
        self.file
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .write_all(&bytes)
    }

    fn error(&self, e: &io::Error) -> ModelError {
        ModelError::Config(format!(
            "cannot write the batch ledger {}: {e}; the run stops so that no batch is paid for and then lost",
            self.path.display()
        ))
    }
}

fn parse_key(hex: &str) -> Option<Key> {
    if hex.len() != 32 {
        return None;
    }
    let mut k = [0u8; 16];
    for (i, b) in k.iter_mut().enumerate() {
        *b = u8::from_str_radix(hex.get(2 * i..2 * i + 2)?, 16).ok()?;
    }
    Some(k)
}

type Reply = Result<ChatResponse, ModelError>;

/// What a waiting caller hears.
enum Answer {
    Reply(Reply),
    /// Its batch ended without running the request (expired, cancelled): why, naming the
    /// batch. The caller submits it again (or gives up after [`MAX_RESUBMITS`]).
    NotRun(String),
}

/// How many times a request whose batch did not run it is submitted again.
pub const MAX_RESUBMITS: u32 = 3;

/// A call waiting for its batch.
struct Slot {
    waiters: Vec<oneshot::Sender<Answer>>,
    /// The wire body, kept while the call may have to be submitted (again); `None` for
    /// a key of a re-attached batch that no caller has asked for yet.
    body: Option<serde_json::Value>,
    /// The batch it is in; `None` while it waits in the wave.
    batch: Option<Arc<str>>,
}

#[derive(Default)]
struct State {
    /// Keys waiting to be submitted, in arrival order.
    wave: Vec<Key>,
    first_join: Option<Instant>,
    last_join: Option<Instant>,
    slots: HashMap<Key, Slot>,
    /// Per-request errors of re-attached batches that no caller has asked for yet.
    errors: HashMap<Key, ModelError>,
}

/// How a batched call was answered.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Served {
    /// Submitted by this session.
    Submitted,
    /// From a batch an earlier session submitted (re-attached), or already ingested.
    Earlier,
}

/// The session's call accounting a batched call spends when it joins a wave: the query
/// budget and the count of calls that reached a model (the session's
/// [`crate::cache::CallCounters`]).
pub trait Spend: Sync {
    /// Takes one call from the budget; false (and the budget marked hit) when it is spent.
    fn take_budget(&self) -> bool;
    /// Counts one call as made (it reached a model).
    fn count_made(&self);
}

/// The wave adapter of one batch-mode model.
pub struct Batcher {
    model: Arc<dyn Model>,
    /// Names the model in the ledger (a digest of its identity).
    model_id: String,
    journal: Arc<Journal>,
    ledger: Arc<Ledger>,
    note: Note,
    state: Mutex<State>,
    wake: Notify,
    tasks: Mutex<Vec<JoinHandle<()>>>,
}

impl Batcher {
    fn api(&self) -> &dyn BatchApi {
        self.model
            .batch_api()
            .expect("a batcher is made only for a model with a batch API")
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, State> {
        self.state.lock().unwrap_or_else(|p| p.into_inner())
    }

    fn label(&self) -> String {
        format!("{} `{}`", self.api().provider(), self.model.label())
    }

    /// Answers one call (a journal miss) through a batch: joins the current wave, or
    /// waits for the batch already carrying its key. A request its batch did not run
    /// (expired or cancelled) is submitted again, up to [`MAX_RESUBMITS`] times, each
    /// resubmission spending the budget like a first submission; past that the call
    /// stops the run (`partial`, with the reason) instead of resubmitting forever.
    pub async fn call(
        &self,
        key: Key,
        req: &ChatRequest,
        counters: &dyn Spend,
    ) -> Result<(ChatResponse, Served), ModelError> {
        let mut not_run: Vec<String> = Vec::new();
        loop {
            let (rx, served) = {
                let mut st = self.lock();
                if let Some(e) = st.errors.remove(&key) {
                    return Err(e);
                }
                if let Some(r) = self.journal.get(&key) {
                    return Ok((r, Served::Earlier));
                }
                let (tx, rx) = oneshot::channel();
                match st.slots.get_mut(&key) {
                    Some(slot) => {
                        slot.waiters.push(tx);
                        if slot.body.is_none() {
                            slot.body = Some(self.api().body(req)?);
                        }
                        (rx, Served::Earlier)
                    }
                    None => {
                        // A request the provider cannot take is this call's error, as
                        // when sent alone; no budget is spent on it.
                        let body = self.api().body(req)?;
                        if !counters.take_budget() {
                            return Err(ModelError::Budget);
                        }
                        counters.count_made();
                        st.slots.insert(
                            key,
                            Slot {
                                waiters: vec![tx],
                                body: Some(body),
                                batch: None,
                            },
                        );
                        self.join_wave(&mut st, key);
                        (rx, Served::Submitted)
                    }
                }
            };
            match rx.await {
                Ok(Answer::Reply(r)) => return r.map(|r| (r, served)),
                Ok(Answer::NotRun(why)) => {
                    not_run.push(why);
                    if not_run.len() > MAX_RESUBMITS as usize {
                        return Err(ModelError::Config(format!(
                            "batch mode cannot finish: a request was submitted {} times ({MAX_RESUBMITS} resubmissions allowed) and no batch ran it (the last: {}); the run stops rather than resubmit it forever: rerun later to submit it again, or run without batch",
                            not_run.len(),
                            not_run.last().expect("one at least")
                        )));
                    }
                }
                Err(_) => {
                    return Err(ModelError::Call(
                        "the batch carrying this call was abandoned (the run is stopping)".into(),
                    ));
                }
            }
        }
    }

    fn join_wave(&self, st: &mut State, key: Key) {
        let now = Instant::now();
        st.wave.push(key);
        st.first_join.get_or_insert(now);
        st.last_join = Some(now);
        self.wake.notify_one();
    }

    /// Submits waves as they form, for as long as the run lasts.
    async fn drive(self: Arc<Self>) {
        let opts = *self.api().options();
        loop {
            // Wait for a first call.
            loop {
                if !self.lock().wave.is_empty() {
                    break;
                }
                self.wake.notified().await;
            }
            // Wait for the wave to form: quiet for a linger, full, or old enough.
            loop {
                let (len, first, last) = {
                    let st = self.lock();
                    (st.wave.len(), st.first_join, st.last_join)
                };
                if len >= opts.max_requests {
                    break;
                }
                let now = Instant::now();
                let quiet = last.map_or(now, |t| t + opts.linger);
                let cap = first.map_or(now, |t| t + opts.linger * MAX_LINGERS);
                let until = quiet.min(cap);
                if now >= until {
                    break;
                }
                tokio::select! {
                    _ = tokio::time::sleep_until(until.into()) => {}
                    _ = self.wake.notified() => {}
                }
            }
            let wave: Vec<(Key, serde_json::Value)> = {
                let mut st = self.lock();
                let n = st.wave.len().min(opts.max_requests);
                let keys: Vec<Key> = st.wave.drain(..n).collect();
                if st.wave.is_empty() {
                    st.first_join = None;
                    st.last_join = None;
                } else {
                    st.first_join = Some(Instant::now());
                }
                keys.into_iter()
                    .filter_map(|k| {
                        let body = st.slots.get(&k)?.body.clone()?;
                        Some((k, body))
                    })
                    .collect()
            };
            if wave.is_empty() {
                continue;
            }
            self.submit(wave).await;
        }
    }

    async fn submit(self: &Arc<Self>, wave: Vec<(Key, serde_json::Value)>) {
        let keys: Vec<Key> = wave.iter().map(|(k, _)| *k).collect();
        let requests: Vec<(String, serde_json::Value)> =
            wave.into_iter().map(|(k, b)| (to_hex(&k), b)).collect();
        let id = match self.api().submit(&requests).await {
            Ok(id) => id,
            Err(e) => {
                drop(requests);
                (self.note)(&format!(
                    "batch of {} request(s) to {} could not be submitted: {e}",
                    keys.len(),
                    self.label()
                ));
                for k in &keys {
                    self.resolve_err(k, e.clone());
                }
                return;
            }
        };
        drop(requests);
        // Journaled before anything else: a kill from here on re-attaches.
        let line = LedgerLine::Submitted {
            batch: id.clone(),
            provider: self.api().provider().to_string(),
            model: self.model_id.clone(),
            keys: keys.iter().map(|k| to_hex(k)).collect(),
        };
        if let Err(e) = self.ledger.append(&line) {
            let e = self.ledger.error(&e);
            for k in &keys {
                self.resolve_err(k, e.clone());
            }
            return;
        }
        let id: Arc<str> = id.into();
        {
            let mut st = self.lock();
            for k in &keys {
                if let Some(s) = st.slots.get_mut(k) {
                    s.batch = Some(id.clone());
                }
            }
        }
        (self.note)(&format!(
            "batch {id} ({}): {} request(s) submitted",
            self.label(),
            keys.len()
        ));
        self.spawn_watch(id, keys, false);
    }

    fn spawn_watch(self: &Arc<Self>, id: Arc<str>, keys: Vec<Key>, attached: bool) {
        let me = self.clone();
        let h = tokio::spawn(async move { me.watch(id, keys, attached).await });
        self.tasks.lock().unwrap_or_else(|p| p.into_inner()).push(h);
    }

    /// Polls a batch until it ends, then ingests it.
    async fn watch(self: Arc<Self>, id: Arc<str>, keys: Vec<Key>, attached: bool) {
        let poll = self.api().options().poll;
        let mut last = String::new();
        let mut failures = 0u32;
        let mut first = attached;
        let polled = loop {
            if !first {
                tokio::time::sleep(poll).await;
            }
            first = false;
            match self.api().poll(&id).await {
                Ok(p) => {
                    failures = 0;
                    if p.status != last {
                        (self.note)(&format!(
                            "batch {id} ({}): {} ({}/{} done)",
                            self.label(),
                            p.status,
                            p.done,
                            p.total
                        ));
                        last = p.status.clone();
                    }
                    if p.ended {
                        break p;
                    }
                }
                Err(e) => {
                    failures += 1;
                    if matches!(e, ModelError::Config(_)) || failures >= MAX_POLL_FAILURES {
                        (self.note)(&format!(
                            "batch {id} ({}): polling failed: {e}; it stays in {} and a rerun re-attaches to it",
                            self.label(),
                            LEDGER_FILE
                        ));
                        self.fail_waiting(&id, &keys, &e);
                        return;
                    }
                }
            }
        };
        self.ingest(&id, &keys, &polled).await;
    }

    /// Fails the callers waiting on `keys` of batch `id`; their slots are dropped so a
    /// later call of the same key can be submitted again.
    fn fail_waiting(&self, id: &str, keys: &[Key], e: &ModelError) {
        let mut st = self.lock();
        for k in keys {
            if st.slots.get(k).and_then(|s| s.batch.as_deref()) == Some(id)
                && let Some(s) = st.slots.remove(k)
            {
                for w in s.waiters {
                    let _ = w.send(Answer::Reply(Err(e.clone())));
                }
            }
        }
    }

    /// A request's error: to its callers, or kept for the caller still to come.
    fn resolve_err(&self, key: &Key, e: ModelError) {
        let mut st = self.lock();
        match st.slots.remove(key) {
            Some(s) if !s.waiters.is_empty() => {
                for w in s.waiters {
                    let _ = w.send(Answer::Reply(Err(e.clone())));
                }
            }
            _ => {
                if !self.journal.contains(key) {
                    st.errors.insert(*key, e);
                }
            }
        }
    }

    /// Journals a chunk of responses (one write), then answers their callers.
    fn flush(&self, chunk: &mut Vec<(Key, ChatResponse)>) -> Result<(), ModelError> {
        if chunk.is_empty() {
            return Ok(());
        }
        let mut buf = Vec::with_capacity(chunk.len() * 512);
        let mut lens = Vec::with_capacity(chunk.len());
        for (k, r) in chunk.iter() {
            if self.journal.contains(k) {
                continue;
            }
            let at = buf.len();
            Journal::encode(&mut buf, k, r);
            lens.push((*k, buf.len() - at));
        }
        if let Err(e) = self.journal.append_indexed(&buf, &lens) {
            let e = journal_error(&self.journal, &e);
            for (k, _) in chunk.drain(..) {
                self.resolve_err(&k, e.clone());
            }
            return Err(e);
        }
        let mut st = self.lock();
        for (k, r) in chunk.drain(..) {
            if let Some(s) = st.slots.remove(&k) {
                for w in s.waiters {
                    let _ = w.send(Answer::Reply(Ok(r.clone())));
                }
            }
            st.errors.remove(&k);
        }
        Ok(())
    }

    /// Reads an ended batch's results into the journal and to their callers.
    async fn ingest(&self, id: &Arc<str>, keys: &[Key], polled: &Polled) {
        let started = Instant::now();
        if let Some(why) = &polled.failure {
            let e = ModelError::Call(format!("batch {id} ({}) failed: {why}", self.label()));
            for k in keys {
                self.resolve_err(k, e.clone());
            }
            self.ended(id);
            return;
        }
        let mine: HashSet<Key> = keys.iter().copied().collect();
        let mut seen: HashSet<Key> = HashSet::with_capacity(keys.len());
        let mut chunk: Vec<(Key, ChatResponse)> = Vec::with_capacity(INGEST_CHUNK);
        let mut unfinished: Vec<(Key, String)> = Vec::new();
        let (mut ok, mut errors) = (0u64, 0u64);
        let mut bad: Vec<String> = Vec::new();
        let mut bad_count = 0u64;
        let mut fatal: Option<ModelError> = None;
        let mut sink = |line: Result<Ingested, BadLine>| {
            let Ingested {
                custom_id: cid,
                outcome,
                place,
            } = match line {
                Ok(x) => x,
                Err(b) => {
                    bad_count += 1;
                    if bad.len() < 3 {
                        bad.push(b.message);
                    }
                    return;
                }
            };
            let key = match parse_key(&cid).filter(|k| mine.contains(k)) {
                Some(k) => k,
                None => {
                    bad_count += 1;
                    if bad.len() < 3 {
                        bad.push(format!(
                            "{place}: a result for custom_id {:?}, which this batch did not carry",
                            gauntlet_core::terminal::safe_text(
                                &cid.chars().take(80).collect::<String>()
                            )
                        ));
                    }
                    return;
                }
            };
            if !seen.insert(key) {
                bad_count += 1;
                if bad.len() < 3 {
                    bad.push(format!("{place}: a second result for custom_id {cid}"));
                }
                return;
            }
            // The call layer's checks and key scrubbing, as for a call made alone.
            let outcome = match outcome {
                Outcome::Response(r) => match vet_reply(self.model.as_ref(), r) {
                    Ok(r) => Outcome::Response(r),
                    Err(e) => Outcome::Error(e),
                },
                other => other,
            };
            match outcome {
                Outcome::Response(r) => {
                    ok += 1;
                    chunk.push((key, r));
                    if chunk.len() >= INGEST_CHUNK
                        && fatal.is_none()
                        && let Err(e) = self.flush(&mut chunk)
                    {
                        fatal = Some(e);
                    }
                }
                Outcome::Error(e) => {
                    errors += 1;
                    self.resolve_err(&key, e);
                }
                Outcome::Unfinished(why) => unfinished.push((key, why)),
            }
        };
        let read = self.api().results(id, polled, &mut sink).await;
        if fatal.is_none()
            && let Err(e) = self.flush(&mut chunk)
        {
            fatal = Some(e);
        }
        if let Some(e) = fatal {
            // The journal cannot be written: the run stops (the batch stays open in
            // the ledger, so a rerun ingests it).
            for k in keys {
                self.resolve_err(k, e.clone());
            }
            return;
        }
        if let Err(e) = read {
            (self.note)(&format!(
                "batch {id} ({}): reading its results failed: {e}; it stays in {} and a rerun re-attaches to it",
                self.label(),
                LEDGER_FILE
            ));
            let missing: Vec<Key> = keys
                .iter()
                .filter(|k| !seen.contains(*k))
                .copied()
                .collect();
            self.fail_waiting(id, &missing, &e);
            return;
        }
        // Requests the batch never ran: their callers submit them again (each taking
        // the budget again, at most MAX_RESUBMITS times).
        let resubmit = {
            let mut st = self.lock();
            let mut n = 0;
            for (k, why) in &unfinished {
                if let Some(slot) = st.slots.remove(k) {
                    if !slot.waiters.is_empty() {
                        n += 1;
                    }
                    for w in slot.waiters {
                        let _ = w.send(Answer::NotRun(format!(
                            "batch {id} ({}) ended without running it ({why})",
                            self.label()
                        )));
                    }
                }
            }
            n
        };
        let hint = match bad.first() {
            Some(first) => {
                format!("; {bad_count} result line(s) could not be read, the first: {first}")
            }
            None => String::new(),
        };
        let mut missing = 0u64;
        for k in keys {
            if !seen.contains(k) {
                missing += 1;
                self.resolve_err(
                    k,
                    ModelError::Call(format!(
                        "batch {id} ({}) returned no result for this request{hint}",
                        self.label()
                    )),
                );
            }
        }
        for b in &bad {
            (self.note)(&format!("unreadable batch result: {b}"));
        }
        self.ended(id);
        (self.note)(&format!(
            "batch {id} ({}): ingested {ok} response(s), {errors} error(s), {} not run ({resubmit} resubmitted), {missing} missing, {bad_count} unreadable line(s) in {:.2} s",
            self.label(),
            unfinished.len(),
            started.elapsed().as_secs_f64()
        ));
    }

    fn ended(&self, id: &str) {
        if let Err(e) = self.ledger.append(&LedgerLine::Ended {
            ended: id.to_string(),
        }) {
            (self.note)(&format!(
                "{}; batch {id} will be ingested again on a rerun (harmless)",
                self.ledger.error(&e)
            ));
        }
    }
}

/// The batchers of a run, one per batch-mode model, and their tasks.
pub struct Batching {
    batchers: Vec<Arc<Batcher>>,
}

impl fmt::Debug for Batching {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Batching")
            .field("models", &self.batchers.len())
            .finish()
    }
}

/// The ledger's name for a model: a digest of its identity.
fn model_id(m: &dyn Model) -> String {
    let mut h = HashWriter::new();
    h.json(&m.spec().identity());
    to_hex(&h.finish()[..8])
}

impl Batching {
    /// Starts a batcher for every model of `models` that batches (each model once),
    /// re-attaching to the batches the ledger at `ledger_path` holds open for it.
    /// `None` when no model batches. Must be called inside a tokio runtime.
    pub fn start(
        models: &[Arc<dyn Model>],
        journal: Arc<Journal>,
        ledger_path: &Path,
        note: Note,
    ) -> io::Result<Option<Arc<Batching>>> {
        let mut batching: Vec<Arc<dyn Model>> = Vec::new();
        for m in models {
            if m.batch_api().is_some() && !batching.iter().any(|b| Arc::ptr_eq(b, m)) {
                batching.push(m.clone());
            }
        }
        if batching.is_empty() {
            return Ok(None);
        }
        let (ledger, open) = Ledger::open(ledger_path)?;
        let ledger = Arc::new(ledger);
        let mut batchers = Vec::new();
        for m in batching {
            let b = Arc::new(Batcher {
                model_id: model_id(m.as_ref()),
                model: m,
                journal: journal.clone(),
                ledger: ledger.clone(),
                note: note.clone(),
                state: Mutex::new(State::default()),
                wake: Notify::new(),
                tasks: Mutex::new(Vec::new()),
            });
            let provider = b.api().provider();
            for (id, p, model, keys) in &open {
                if p != provider || *model != b.model_id {
                    continue;
                }
                let id: Arc<str> = id.as_str().into();
                {
                    let mut st = b.lock();
                    for k in keys {
                        st.slots.insert(
                            *k,
                            Slot {
                                waiters: Vec::new(),
                                body: None,
                                batch: Some(id.clone()),
                            },
                        );
                    }
                }
                note(&format!(
                    "batch {id} ({}): re-attached ({} request(s) submitted by an earlier session); it is polled and ingested, not submitted again",
                    b.label(),
                    keys.len()
                ));
                b.spawn_watch(id, keys.clone(), true);
            }
            let driver = tokio::spawn(b.clone().drive());
            b.tasks
                .lock()
                .unwrap_or_else(|p| p.into_inner())
                .push(driver);
            batchers.push(b);
        }
        Ok(Some(Arc::new(Batching { batchers })))
    }

    /// The batcher of `model`, if it batches.
    pub fn batcher(&self, model: &dyn Model) -> Option<&Batcher> {
        self.batchers
            .iter()
            .find(|b| std::ptr::addr_eq(Arc::as_ptr(&b.model), model as *const dyn Model))
            .map(|b| b.as_ref())
    }

    /// The largest wave any batcher submits: the engine keeps at least this many units
    /// in flight, so a wave can fill.
    pub fn max_requests(&self) -> usize {
        self.batchers
            .iter()
            .map(|b| b.api().options().max_requests)
            .max()
            .unwrap_or(1)
    }
}

impl Drop for Batching {
    fn drop(&mut self) {
        // Batches still in flight stay open in the ledger; a rerun re-attaches.
        for b in &self.batchers {
            for t in b.tasks.lock().unwrap_or_else(|p| p.into_inner()).drain(..) {
                t.abort();
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ledger_reopens_with_open_batches_only() {
        let dir = tempfile::tempdir().unwrap();
        let p = dir.path().join(LEDGER_FILE);
        let (l, open) = Ledger::open(&p).unwrap();
        assert!(open.is_empty());
        let k = |b: u8| to_hex(&[b; 16]);
        for (batch, keys) in [("b1", vec![k(1), k(2)]), ("b2", vec![k(3)])] {
            l.append(&LedgerLine::Submitted {
                batch: batch.into(),
                provider: "openai".into(),
                model: "m".into(),
                keys,
            })
            .unwrap();
        }
        l.append(&LedgerLine::Ended { ended: "b1".into() }).unwrap();
        drop(l);
        // A torn last line (killed mid-write) is ignored and cut off from the next.
        std::fs::OpenOptions::new()
            .append(true)
            .open(&p)
            .unwrap()
            .write_all(b"{\"batch\":\"b3\",\"prov")
            .unwrap();
        let (l, open) = Ledger::open(&p).unwrap();
        assert_eq!(open.len(), 1);
        assert_eq!(open[0].0, "b2");
        assert_eq!(open[0].3, vec![[3u8; 16]]);
        l.append(&LedgerLine::Ended { ended: "b2".into() }).unwrap();
        drop(l);
        let (_, open) = Ledger::open(&p).unwrap();
        assert!(open.is_empty());
    }

    #[test]
    fn keys_round_trip_through_hex() {
        let k: Key = core::array::from_fn(|i| (i * 37) as u8);
        assert_eq!(parse_key(&to_hex(&k)), Some(k));
        assert_eq!(parse_key("zz"), None);
        assert_eq!(parse_key(&"g".repeat(32)), None);
    }
}
