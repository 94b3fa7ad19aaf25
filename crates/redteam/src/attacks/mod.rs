//! Attacks, one file per plugin.

pub mod canary_completion;
pub mod direct_extraction;
pub mod divergence;
pub mod pii_elicitation;
pub mod r#static;
pub mod system_prompt_leak;
pub mod template;
