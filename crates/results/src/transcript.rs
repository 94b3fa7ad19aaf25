//! One line of `transcripts.jsonl`: one judged attempt, as every reader of a stored run
//! sees it (a rescore, a recount, `compare`, findings, the dashboard).
//!
//! The engine writes a line through its own borrowed type and a hand-written encoder
//! (the hot path); its tests check that every line it writes reads back as a
//! [`TranscriptRecord`] and serialises again to the very same bytes, so the two cannot
//! drift.

use gauntlet_core::behavior::Expected;
use gauntlet_core::evidence::Evidence;
use gauntlet_core::message::{Message, StopReason, Usage};
use gauntlet_core::outcome::Verdict;
use serde::{Deserialize, Serialize};

/// One attempt of one unit (trial × behavior × attack × target), with the verdict of
/// each of the run's judges. Fields are declared in the order they are written.
///
/// `behavior_id`, `attack_name`, `target_name` and `expected` are required: without them
/// a line names no unit. Every other field reads with its default when absent
/// (`#[serde(default)]`): a line of an earlier release, which wrote fewer fields, still
/// reads.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct TranscriptRecord {
    /// The trial, in multi-trial runs only (absent: trial 0).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub trial: Option<u32>,
    pub behavior_id: String,
    pub attack_name: String,
    pub target_name: String,
    #[serde(default)]
    pub dataset: String,
    #[serde(default)]
    pub dataset_version: String,
    pub expected: Expected,
    /// The behavior's own prompt, when no user turn of the transcript is that prompt
    /// (an attack or a transform rewrote it).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub goal: Option<String>,
    /// The attempt's index within its unit, from 0.
    #[serde(default)]
    pub attempt: u32,
    /// The conversation with the target (untrusted text).
    #[serde(default)]
    pub transcript: Vec<Message>,
    /// Target calls the attempt made.
    #[serde(default)]
    pub query_count: u32,
    /// What the attack recorded about the attempt (its own shape per attack: a search
    /// tree, the shots used, …).
    #[serde(default)]
    pub metadata: serde_json::Value,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub stop_reason: Option<StopReason>,
    /// The target's tokens for the final response, when the provider reported them.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub usage: Option<Usage>,
    /// What the application was seen doing during the final call (a target with
    /// `evidence`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub evidence: Option<Box<Evidence>>,
    /// Why the attempt failed to produce a reply, when it did.
    #[serde(default)]
    pub error: Option<String>,
    /// One verdict per judge of the run, in the run's judge order.
    #[serde(default)]
    pub verdicts: Vec<Verdict>,
}

impl TranscriptRecord {
    /// The trial (0 in a run without trials).
    pub fn trial(&self) -> u32 {
        self.trial.unwrap_or(0)
    }

    /// The last reply of the target: the last assistant message that is not a decoded
    /// copy (a transform's `decoded` turn), or `None`.
    pub fn last_reply(&self) -> Option<&Message> {
        self.transcript.iter().rev().find(|m| {
            m.role == gauntlet_core::message::Role::Assistant
                && m.name.as_deref() != Some("decoded")
        })
    }

    /// The last user turn (what was last sent to the target), or `None`.
    pub fn last_prompt(&self) -> Option<&Message> {
        self.transcript
            .iter()
            .rev()
            .find(|m| m.role == gauntlet_core::message::Role::User)
    }
}

/// The fields of a [`TranscriptRecord`] that name its unit and judge it, without the
/// conversation, the attack's metadata or the evidence: what a reader that counts
/// verdicts over a whole file (a recount, `compare`, findings) reads, at a fraction of
/// the cost. The same names, types and defaults as [`TranscriptRecord`]; the fields it
/// leaves out are skipped unread.
#[derive(Debug, Clone, PartialEq, Deserialize)]
pub struct TranscriptUnit {
    #[serde(default)]
    pub trial: Option<u32>,
    pub behavior_id: String,
    pub attack_name: String,
    pub target_name: String,
    #[serde(default)]
    pub dataset: String,
    #[serde(default)]
    pub dataset_version: String,
    pub expected: Expected,
    #[serde(default)]
    pub attempt: u32,
    #[serde(default)]
    pub error: Option<String>,
    #[serde(default)]
    pub verdicts: Vec<Verdict>,
}

impl TranscriptUnit {
    /// The trial (0 in a run without trials).
    pub fn trial(&self) -> u32 {
        self.trial.unwrap_or(0)
    }
}
