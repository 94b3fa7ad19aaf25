//! An InjecAgent case and what the cases of a loaded set share: the tools, the published
//! simulated responses and the user; the paper's two agent formats.

use super::data::{CaseData, Responses, Tools};
use gauntlet_core::outcome::InjecAgentAttack;
use std::sync::Arc;

/// The paper's two agent formats.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Format {
    /// Function calling: the tools as schemas, the case as a tool-calling conversation.
    Native,
    /// The ReAct text prompt: the tools and the scratchpad in the prompt.
    React,
}

impl Format {
    pub fn as_str(self) -> &'static str {
        match self {
            Format::Native => "native",
            Format::React => "react",
        }
    }
}

/// What every case of a loaded set shares.
#[derive(Debug)]
pub struct Env {
    pub tools: Tools,
    pub responses: Responses,
    /// The user the agent works for (the prompts' environment).
    pub user_name: String,
    pub user_email: String,
}

/// One test case, attached to its behavior ([`gauntlet_core::behavior::Behavior::case`]).
#[derive(Debug)]
pub struct Case {
    pub attack: InjecAgentAttack,
    /// `base` or `enhanced`.
    pub setting: &'static str,
    pub data: CaseData,
    pub env: Arc<Env>,
}

impl Case {
    /// The tool whose call makes step `step` (1 or 2) a success.
    pub fn target_tool(&self, step: u8) -> &str {
        let i = usize::from(step == 2);
        &self.data.attacker_tools[i]
    }
}

/// The `attack` name the facts and metadata use.
pub fn attack_str(a: InjecAgentAttack) -> &'static str {
    match a {
        InjecAgentAttack::Dh => "dh",
        InjecAgentAttack::Ds => "ds",
    }
}
