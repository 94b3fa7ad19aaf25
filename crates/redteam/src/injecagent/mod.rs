//! InjecAgent (Zhan et al., ACL Findings 2024): indirect prompt injection of tool-using
//! agents, from the published test cases.
//!
//! Each case is one step of an agent's work: the user asked for something, the agent
//! called a user tool, and the tool's output carries an attacker instruction. The
//! agent's next action is evaluated: a **direct harm** case succeeds when it calls the
//! attacker's tool; a **data stealing** case succeeds in two steps, calling the tool
//! that reads the user's data, then (after a simulated response of that tool) sending
//! the data out with the email tool. The `base` setting plants the instruction as is;
//! `enhanced` prefixes it with a hacking prompt.
//!
//! How it maps onto gauntlet's engine:
//! * [`source`]: the `injecagent` scenario source (the published files at a pinned
//!   commit with their sha256, opt-in download, cached by content; or local copies);
//!   one behavior per case, the case attached ([`Case`]);
//! * [`runner`]: the attempt runner of the `injecagent` injection: step 1, and for a
//!   data-stealing case whose step 1 succeeded, step 2 as its own attempt, in the
//!   paper's two formats ([`Format`]): function calling ([`native`]) or ReAct text
//!   ([`react`]); under `tool_protocol: prompted` the function-calling format reaches
//!   the model as text through the target layer;
//! * the `injecagent` judge turns each step's evaluation into a verdict and the
//!   metrics `injecagent_asr_valid`, `injecagent_asr_all` (per `part`: dh, ds_s1, ds_s2,
//!   ds, total) and `injecagent_valid_rate` compute the paper's table from them.

mod case;
pub mod data;
pub mod native;
pub mod pyliteral;
pub mod react;
pub mod runner;
pub mod simulate;
pub mod source;
pub mod table;

pub use case::{Case, Env, Format, attack_str};
