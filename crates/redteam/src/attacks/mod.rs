//! Attacks, one file per plugin.

pub mod adaptive;
pub mod best_of_n;
pub mod canary_completion;
pub mod crescendo;
pub mod direct_extraction;
pub mod divergence;
pub mod goat;
pub mod imported;
pub mod many_shot;
pub mod pair;
pub mod pii_elicitation;
pub mod r#static;
pub mod system_prompt_leak;
pub mod tap;
pub mod template;

/// The attacks, in name order: the `ENTRY` of each `pub mod` above whose file declares one
/// (the build derives the list from those lines).
pub const ENTRIES: &[crate::judge::AttackEntry] =
    &include!(concat!(env!("OUT_DIR"), "/attacks.rs"));

/// Each of the attacks' threat-map rows (its file's `THREAT`), by name, in name order.
pub const THREATS: &[(&str, gauntlet_core::taxonomy::ThreatEntry)] =
    &include!(concat!(env!("OUT_DIR"), "/attacks_threat.rs"));

// The search loop the judge-in-the-loop attacks share.
pub mod search;
