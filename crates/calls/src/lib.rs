//! gauntlet-calls: the model-call layer under both harnesses (the red-team engine and
//! the agent exam).
//!
//! Every model call of a run or an exam goes through it: [`seam`] is the trait an
//! attack, a judge or the exam's cascade calls; [`cache`] wraps a real model with the
//! response cache (keys over the harness version, role, model spec, unit scope and the
//! full request), the query budget, call counters and per-role token usage; [`journal`]
//! is the append-only file of finished calls that makes a rerun a resume; [`price`]
//! turns token usage into cost; [`batch`] sends the calls of a batch-mode model through
//! the provider's batch API, wave by wave, re-attaching to batches in flight on a rerun;
//! [`vet`] checks and scrubs every reply a model gives, for both ways of calling.

// Files are read through `gauntlet_core::files` only (clippy.toml says why).
#![cfg_attr(not(test), deny(clippy::disallowed_methods))]

pub mod batch;
pub mod cache;
pub mod journal;
pub mod price;
pub mod seam;
pub mod vet;

/// Property-test strategies shared with the engine's hand-written JSON tests
/// (feature `strategies`).
#[cfg(any(test, feature = "strategies"))]
#[doc(hidden)]
pub mod strategies {

    use proptest::prelude::*;

    /// Contents weighted towards what escaping treats specially, with long runs.
    pub fn content() -> impl Strategy<Value = String> {
        let c = prop_oneof![
            3 => (0u8..0x20).prop_map(char::from),
            2 => prop::sample::select(vec!['"', '\\', '\u{7f}', '\u{2028}', '\u{2029}', 'é', '😀']),
            4 => any::<char>(),
            6 => (0x20u8..0x7f).prop_map(char::from),
        ];
        prop::collection::vec(
            prop_oneof![
                (c.clone(), 1usize..100).prop_map(|(c, n)| c.to_string().repeat(n)),
                prop::collection::vec(c, 0..50).prop_map(String::from_iter),
            ],
            0..10,
        )
        .prop_map(|parts| parts.concat())
    }
}
