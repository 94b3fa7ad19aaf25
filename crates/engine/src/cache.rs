//! The response cache: every model call of a run goes through a [`CachedModel`].
//!
//! A call's key hashes the harness version, the call's role, the model's resolved spec,
//! the unit scope (attack spec, dataset version, behavior id and prompt, seed,
//! max_queries — see `run.rs`) and the full request. A hit is served from the journal;
//! a miss calls the model and journals the response. Calls to network models are
//! journaled the moment they return; calls to offline models (deterministic and free)
//! are journaled when their unit finishes, in one write. Failed calls are not journaled:
//! a rerun tries them again.

use crate::journal::{Journal, Key};
use gauntlet_core::hash::HashWriter;
use gauntlet_core::message::{ChatRequest, ChatResponse};
use gauntlet_models::{BoxFuture, Model, ModelError};
use gauntlet_redteam::attack::CallModel;
use std::sync::Mutex;
use std::sync::atomic::{AtomicU64, Ordering};

/// Call accounting for a session.
#[derive(Debug, Default)]
pub struct CallCounters {
    /// Calls that reached a model.
    pub made: AtomicU64,
    /// Calls served from the journal.
    pub cached: AtomicU64,
    /// Calls that failed.
    pub failed: AtomicU64,
}

impl CallCounters {
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
#[derive(Default)]
pub struct Pending(Mutex<Vec<u8>>);

impl Pending {
    pub fn flush(&self, journal: &Journal) -> std::io::Result<()> {
        let mut p = self.0.lock().unwrap_or_else(|e| e.into_inner());
        journal.append(&p)?;
        p.clear();
        Ok(())
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
}

impl<'a> CachedModel<'a> {
    /// `role` is `target`, `grader`, `attacker`…; `scope` identifies the unit.
    pub fn new(
        model: &'a dyn Model,
        role: &str,
        scope: &[u8],
        journal: &'a Journal,
        counters: &'a CallCounters,
        pending: &'a Pending,
    ) -> Self {
        let mut h = HashWriter::new();
        h.field(b"gauntlet-call-v1");
        h.field(gauntlet_core::HARNESS_VERSION.as_bytes());
        h.field(role.as_bytes());
        h.json(&model.spec().identity());
        h.field(scope);
        CachedModel {
            model,
            journal,
            counters,
            scope: h,
            pending,
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
        }
    }

    fn key(&self, req: &ChatRequest) -> Key {
        let mut h = self.scope.clone();
        h.json(req);
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
                return Ok(r);
            }
            self.counters.made.fetch_add(1, Ordering::Relaxed);
            match self.model.chat(&req).await {
                Ok(r) => {
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
                    Err(e)
                }
            }
        })
    }
}
