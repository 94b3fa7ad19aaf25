//! A behavior: one item of a jailbreak or leakage dataset.

use crate::scenario::{BenchCase, Scenario};
use serde::{Deserialize, Serialize};
use std::sync::{Arc, OnceLock};

/// What a safe, helpful model should do with a behavior.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize, PartialOrd, Ord)]
#[serde(rename_all = "snake_case")]
pub enum Expected {
    /// A harmful request: the model should refuse. Counts toward `asr`, `refusal_rate`.
    ShouldRefuse,
    /// A benign look-alike: the model should answer. Counts toward `frr`.
    ShouldComply,
}

impl Expected {
    pub fn as_str(self) -> &'static str {
        match self {
            Expected::ShouldRefuse => "should_refuse",
            Expected::ShouldComply => "should_comply",
        }
    }
}

/// One dataset item. Field names match redharness's behavior schema.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Behavior {
    pub id: String,
    pub prompt: String,
    #[serde(default)]
    pub category: String,
    #[serde(default = "default_expected")]
    pub expected: Expected,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub reference_answer: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub target_secret: Option<String>,
    /// The injection scenario this behavior stands for (injection suites only; never
    /// read from or written to a behavior file).
    #[serde(skip)]
    pub scenario: Option<Arc<Scenario>>,
    /// The benchmark case this behavior stands for, in the form the plugin that loaded
    /// it reads back (an InjecAgent test case); never read from or written to a
    /// behavior file. Construct with `Default::default()`.
    #[serde(skip)]
    pub case: CasePayload,
    /// The case of an external agent benchmark this behavior stands for (AgentDojo: its
    /// environment and checks run in a sidecar; never read from or written to a behavior
    /// file).
    #[serde(skip)]
    pub bench_case: Option<Arc<BenchCase>>,
    /// The normalised `target_secret`, computed on first use (see
    /// [`Behavior::normalized_secret`]; never read from or written to a behavior file).
    /// Construct with `Default::default()`.
    #[serde(skip)]
    pub secret_cache: SecretCache,
}

impl Behavior {
    /// [`normalize`](crate::text::normalize)d `target_secret` (`None` without one),
    /// computed once per behavior and then borrowed: a leakage judge checks the same
    /// secret on every attempt.
    ///
    /// The cache holds the secret as it was at the first call, so `target_secret` must
    /// not be changed in place afterwards (a clone starts with an empty cache, so a
    /// changed clone is fine; debug builds assert the cache is current).
    pub fn normalized_secret(&self) -> Option<&str> {
        let secret = self.target_secret.as_deref()?;
        let n = self
            .secret_cache
            .0
            .get_or_init(|| crate::text::normalize(secret));
        debug_assert_eq!(
            *n,
            crate::text::normalize(secret),
            "target_secret changed after normalized_secret"
        );
        Some(n)
    }
}

/// [`Behavior`]'s cache of its normalised secret. It takes no part in a behavior's
/// value: every two caches compare equal, a clone starts empty and `Debug` shows
/// nothing of it.
#[derive(Default)]
pub struct SecretCache(OnceLock<String>);

impl Clone for SecretCache {
    fn clone(&self) -> Self {
        SecretCache::default()
    }
}

impl PartialEq for SecretCache {
    fn eq(&self, _: &Self) -> bool {
        true
    }
}

impl std::fmt::Debug for SecretCache {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("SecretCache")
    }
}

/// A benchmark case carried by a [`Behavior`] ([`Behavior::case`]): shared, immutable,
/// of a type only the plugin that made it knows (it downcasts with [`CasePayload::get`]).
/// Two payloads compare equal when they are the same case (or both empty); `Debug`
/// shows only whether there is one. Its content is pinned by the dataset's version.
#[derive(Clone, Default)]
pub struct CasePayload(Option<Arc<dyn std::any::Any + Send + Sync>>);

impl CasePayload {
    pub fn new<T: std::any::Any + Send + Sync>(case: Arc<T>) -> Self {
        CasePayload(Some(case))
    }
    /// The case, when there is one of type `T`.
    pub fn get<T: std::any::Any + Send + Sync>(&self) -> Option<&T> {
        self.0.as_deref().and_then(|c| c.downcast_ref::<T>())
    }
}

impl PartialEq for CasePayload {
    fn eq(&self, o: &Self) -> bool {
        match (&self.0, &o.0) {
            (Some(a), Some(b)) => Arc::ptr_eq(a, b),
            (None, None) => true,
            _ => false,
        }
    }
}

impl std::fmt::Debug for CasePayload {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(if self.0.is_some() {
            "CasePayload(..)"
        } else {
            "CasePayload(None)"
        })
    }
}

fn default_expected() -> Expected {
    Expected::ShouldRefuse
}
