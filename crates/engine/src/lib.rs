//! gauntlet-engine: from a run config to a finished run directory.
//!
//! [`config`] reads and validates the YAML; [`plan`] builds the plugins and fixes the
//! canonical order; [`run`] executes units with bounded concurrency through the
//! [`cache`] (backed by the append-only [`journal`]), judges them, folds verdicts into
//! metric accumulators and writes the artefacts of the [`rundir`]; [`usage`] prices the
//! tokens each role spent; [`stored`] reads a finished run back and judges it again;
//! `breadth` adds the attack-breadth analyses (curves, threat tags, transform effects).

mod breadth;
pub mod cache;
pub mod compare;
pub mod config;
pub mod journal;
pub mod judge_eval;
pub mod plan;
pub mod progress;
pub mod run;
pub mod rundir;
pub mod stored;
pub mod usage;

pub use gauntlet_redteam::registry::Registry;

/// Property-test strategies shared by the engine's hand-written JSON tests.
#[cfg(test)]
mod strategies {
    use proptest::prelude::*;

    /// Contents weighted towards what escaping treats specially, with long runs.
    pub(crate) fn content() -> impl Strategy<Value = String> {
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
