//! Attacks, one file per plugin.

pub mod r#static;
pub mod template;
