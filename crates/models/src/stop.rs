//! How a stop asked for by the user (the run command's SIGINT/SIGTERM) reaches the model
//! calls of the process: a signal is process-wide, so is its [`Stop`].
//!
//! A stop has two levels. At the first ([`Stop::begin`]) no new call is sent and every
//! wait before a call ends now — a retry's backoff, a server's `Retry-After`, a slot of
//! the adaptive concurrency limit, a `command` program busy with another call — each with
//! a [`ModelError::Call`] saying the call was not made; requests already on the wire
//! finish, so a call that was paid for reaches the journal. At the second
//! ([`Stop::cancel`]) the requests in flight are given up too (the driver drops the
//! tasks holding them): nothing they would have returned is journaled, so the rerun
//! makes those calls again. A call a stop ended is never a result: the driver folds no
//! unit that finished after the stop.
//!
//! Only a command that handles signals begins a stop; every other caller runs with the
//! level at [`Level::Running`] for its whole life.

use crate::ModelError;
use std::sync::OnceLock;
use std::sync::atomic::{AtomicU8, Ordering};
use tokio::sync::watch;

/// How far a stop has gone.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub enum Level {
    /// No stop asked for.
    Running,
    /// The first signal: no new call is sent, waits end, requests in flight finish.
    Stopping,
    /// The second signal: requests in flight are given up as well.
    Cancelling,
}

/// A stop's level, readable at once (an atomic load: the call layer reads it on every
/// call) and awaitable.
#[derive(Debug)]
pub struct Stop {
    now: AtomicU8,
    level: watch::Sender<Level>,
}

impl Default for Stop {
    fn default() -> Self {
        Stop::new()
    }
}

impl Stop {
    /// A stop of its own, at [`Level::Running`] (tests; the process uses [`Stop::global`]).
    pub fn new() -> Stop {
        Stop {
            now: AtomicU8::new(Level::Running as u8),
            level: watch::Sender::new(Level::Running),
        }
    }

    /// The process's stop, which the model calls of the process watch.
    pub fn global() -> &'static Stop {
        static GLOBAL: OnceLock<Stop> = OnceLock::new();
        GLOBAL.get_or_init(Stop::new)
    }

    /// The level now.
    pub fn level(&self) -> Level {
        match self.now.load(Ordering::Acquire) {
            0 => Level::Running,
            1 => Level::Stopping,
            _ => Level::Cancelling,
        }
    }

    /// True once a stop was asked for (either level).
    pub fn stopping(&self) -> bool {
        self.level() >= Level::Stopping
    }

    /// The first signal: no new call, waits end (see the module docs).
    pub fn begin(&self) {
        self.raise(Level::Stopping);
    }

    /// The second signal: requests in flight are given up as well.
    pub fn cancel(&self) {
        self.raise(Level::Cancelling);
    }

    fn raise(&self, to: Level) {
        self.now.fetch_max(to as u8, Ordering::AcqRel);
        self.level.send_if_modified(|l| {
            let up = *l < to;
            if up {
                *l = to;
            }
            up
        });
    }

    /// Returns once the level is at least `at` (at once if it already is).
    pub async fn reached(&self, at: Level) {
        let mut rx = self.level.subscribe();
        // The sender lives as long as `self`, so the wait ends only by the level.
        let _ = rx.wait_for(|l| *l >= at).await;
    }
}

/// The error of a call a stop kept from being sent, or whose wait it ended: `what` says
/// which wait (`"waiting 120 s before retry 3 (HTTP 429 …)"`), or is empty.
pub fn not_sent(what: &str) -> ModelError {
    if what.is_empty() {
        ModelError::Call(
            "not sent: the run is stopping (a signal); the rerun makes this call".into(),
        )
    } else {
        ModelError::Call(format!(
            "not sent: the run is stopping (a signal) while {what}; the rerun makes this call"
        ))
    }
}

/// The error of a call whose request was given up in flight at the stop's second level.
pub fn given_up() -> ModelError {
    ModelError::Call(
        "cancelled in flight: the run is stopping (a second signal); nothing was journaled, the rerun makes this call".into(),
    )
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::time::Duration;

    #[tokio::test]
    async fn levels_only_rise_and_waiters_wake() {
        let s = std::sync::Arc::new(Stop::new());
        assert_eq!(s.level(), Level::Running);
        assert!(!s.stopping());
        let s2 = s.clone();
        let waiter = tokio::spawn(async move { s2.reached(Level::Stopping).await });
        tokio::time::sleep(Duration::from_millis(30)).await;
        assert!(!waiter.is_finished(), "woke before the stop");
        s.begin();
        tokio::time::timeout(Duration::from_secs(5), waiter)
            .await
            .expect("woken by the stop")
            .unwrap();
        assert!(s.stopping());
        s.cancel();
        assert_eq!(s.level(), Level::Cancelling);
        s.begin();
        assert_eq!(s.level(), Level::Cancelling, "a level never falls");
        // Reached already: returns at once.
        tokio::time::timeout(Duration::from_millis(100), s.reached(Level::Cancelling))
            .await
            .unwrap();
    }
}
