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

/// The attacks, in catalogue order: each file's `ENTRY`.
pub const ENTRIES: &[crate::judge::AttackEntry] = &[
    r#static::ENTRY,
    template::ENTRY,
    pair::ENTRY,
    tap::ENTRY,
    crescendo::ENTRY,
    goat::ENTRY,
    adaptive::ENTRY,
    best_of_n::ENTRY,
    many_shot::ENTRY,
    direct_extraction::ENTRY,
    divergence::ENTRY,
    canary_completion::ENTRY,
    system_prompt_leak::ENTRY,
    pii_elicitation::ENTRY,
    imported::ENTRY,
];

// The search loop the judge-in-the-loop attacks share.
pub mod search;
