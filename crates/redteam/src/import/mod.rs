//! Results other red-team tools wrote (garak's `report.jsonl`, promptfoo's `eval -o`
//! JSON, Inspect's `.eval` and `.json` logs), read into one shape: the prompts each
//! tool sent, the replies it recorded and its own verdicts on them.
//!
//! `gauntlet import` turns an [`Imported`] into a run through the `imported` dataset,
//! attack, target and judge, so every analysis reads it like any run.

mod error;
pub mod garak;
pub mod inspect;
mod parse;
pub mod promptfoo;
mod record;

pub use error::ImportError;
pub use parse::parse_file;
pub use record::{Generation, Imported, Record, Tool, ToolVerdict, VerdictValue, prompt_id};
