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
pub mod search;
pub mod r#static;
pub mod system_prompt_leak;
pub mod tap;
pub mod template;
