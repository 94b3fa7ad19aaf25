//! Chat messages, requests and responses: the one shape every model speaks through.
//!
//! Wire formats (OpenAI-compatible, Anthropic) are translated to and from these types at
//! the edge; everything inside gauntlet sees only this.

use crate::scenario::AgentScript;
use serde::{Deserialize, Serialize};
use std::sync::Arc;

/// Who authored a message.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Role {
    System,
    User,
    Assistant,
    Tool,
}

/// A tool call requested by a model, normalised across wire formats.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ToolCall {
    pub name: String,
    pub arguments: serde_json::Value,
    pub call_id: String,
}

/// A tool the model may call.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ToolDef {
    pub name: String,
    pub description: String,
    /// JSON schema of the arguments object.
    pub parameters: serde_json::Value,
}

/// One chat message. `tool_calls` is set on assistant messages that call tools;
/// `tool_call_id` on tool results, naming the call they answer.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Message {
    pub role: Role,
    pub content: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub name: Option<String>,
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub tool_calls: Vec<ToolCall>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub tool_call_id: Option<String>,
}

impl Message {
    fn plain(role: Role, content: impl Into<String>) -> Self {
        Message {
            role,
            content: content.into(),
            name: None,
            tool_calls: Vec::new(),
            tool_call_id: None,
        }
    }
    pub fn system(content: impl Into<String>) -> Self {
        Self::plain(Role::System, content)
    }
    pub fn user(content: impl Into<String>) -> Self {
        Self::plain(Role::User, content)
    }
    pub fn assistant(content: impl Into<String>) -> Self {
        Self::plain(Role::Assistant, content)
    }
}

/// Default of the most tool calls one reply may carry (a live target's `max_tool_calls`
/// param overrides it): a reply with more is that call's error outcome, so a server
/// answering with 300,000 tool calls cannot make one attempt cost gigabytes.
pub const DEFAULT_MAX_TOOL_CALLS: usize = 128;

/// Default of the largest request (its messages, in [`ChatRequest::size`] bytes) sent to
/// a model (a live target's `max_request_bytes` param overrides it): an agent loop whose
/// conversation grew past it ends with that call's error outcome.
pub const DEFAULT_MAX_REQUEST_BYTES: usize = 16 << 20;

/// The most tokens (prompt or completion) one call can plausibly report: more than any
/// model's context window. A reply claiming more is that call's error outcome, so a
/// bogus `usage` can neither wrap the run's token counters nor zero its cost.
pub const MAX_PLAUSIBLE_TOKENS: u64 = 100_000_000;

/// Bytes of a JSON value written compactly.
pub fn json_size(v: &serde_json::Value) -> usize {
    struct Count(usize);
    impl std::io::Write for Count {
        fn write(&mut self, b: &[u8]) -> std::io::Result<usize> {
            self.0 += b.len();
            Ok(b.len())
        }
        fn flush(&mut self) -> std::io::Result<()> {
            Ok(())
        }
    }
    match v {
        serde_json::Value::String(s) => s.len() + 2,
        v => {
            let mut c = Count(0);
            let _ = serde_json::to_writer(&mut c, v);
            c.0
        }
    }
}

impl Message {
    /// What the message weighs in a request: its text, name, call id and tool calls
    /// (names, ids, arguments as JSON), plus a fixed 16 bytes for the rest of its shape.
    pub fn size(&self) -> usize {
        16 + self.content.len()
            + self.name.as_ref().map_or(0, String::len)
            + self.tool_call_id.as_ref().map_or(0, String::len)
            + self
                .tool_calls
                .iter()
                .map(|c| 16 + c.name.len() + c.call_id.len() + json_size(&c.arguments))
                .sum::<usize>()
    }
}

/// A request to a model.
#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize)]
pub struct ChatRequest {
    pub messages: Vec<Message>,
    /// Shared: an agent loop sends the same tools on every call, so cloning a request
    /// must not copy them.
    #[serde(default, skip_serializing_if = "no_tools", with = "shared_tools")]
    pub tools: Arc<[ToolDef]>,
    /// Sampling seed passed to models that accept one.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub seed: Option<u64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub temperature: Option<f64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub max_tokens: Option<u32>,
    /// Ask for the log-probabilities of this many most likely alternatives of each
    /// generated token (OpenAI-compatible servers: `logprobs` + `top_logprobs`); the
    /// first token's come back in [`ChatResponse::first_token_logprobs`]. Targets whose
    /// API has no logprobs ignore it. Part of the cache key when present.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub top_logprobs: Option<u8>,
    /// The scripted plan of an agent run, for the offline `reference_agent` only. Never
    /// serialised and never put on the wire: live targets build their bodies from the
    /// fields above. Part of the cache key.
    #[serde(skip)]
    pub agent_script: Option<Arc<AgentScript>>,
    /// How prompt transforms rewrote this request's user turns, for the offline
    /// `reference` target only (which uses it to "see through" the transforms it
    /// understands). Never serialised and never put on the wire. Part of the cache key
    /// when present (and only then, so requests without transforms keep their keys).
    #[serde(skip)]
    pub transform_trace: Option<Arc<TransformTrace>>,
}

impl ChatRequest {
    /// The request's size as the call layer caps it: the sum of its messages'
    /// [`Message::size`] (the tools are fixed by the harness and not counted).
    pub fn size(&self) -> usize {
        self.messages.iter().map(Message::size).sum()
    }
}

/// The stages a prompt-transform chain took the user turns of a request through.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct TransformTrace {
    /// The chain's transform names, in the order they were applied (shared by every
    /// request of a chain).
    pub chain: Arc<[String]>,
    /// One entry per user message of the request, in order.
    pub turns: Vec<TracedTurn>,
}

/// One user turn of a [`TransformTrace`].
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TracedTurn {
    /// The text before the chain, then after each transform (`chain.len() + 1` texts;
    /// the last one was sent).
    pub stages: Arc<[String]>,
    /// A digest that determines `stages`: the transforming side derives it from the
    /// unit's seed and the text before the chain (the chain itself is part of the
    /// attack, so of the unit). Cache keys hash it instead of every stage.
    pub key: [u8; 32],
}

impl TransformTrace {
    /// sha256 over the chain and every turn's key, length-delimited (for cache keys).
    pub fn digest(&self) -> [u8; 32] {
        let mut h = crate::hash::HashWriter::new();
        h.field(b"transform-trace-v1");
        h.field(&(self.chain.len() as u64).to_le_bytes());
        for c in self.chain.iter() {
            h.field(c.as_bytes());
        }
        h.field(&(self.turns.len() as u64).to_le_bytes());
        for t in &self.turns {
            h.field(&t.key);
        }
        h.finish()
    }
}

fn no_tools(t: &Arc<[ToolDef]>) -> bool {
    t.is_empty()
}

/// (De)serialises `Arc<[ToolDef]>` as a plain JSON array.
mod shared_tools {
    use super::ToolDef;
    use serde::{Deserialize, Deserializer, Serialize, Serializer};
    use std::sync::Arc;

    pub(super) fn serialize<S: Serializer>(t: &Arc<[ToolDef]>, s: S) -> Result<S::Ok, S::Error> {
        t.as_ref().serialize(s)
    }
    pub(super) fn deserialize<'de, D: Deserializer<'de>>(d: D) -> Result<Arc<[ToolDef]>, D::Error> {
        Vec::<ToolDef>::deserialize(d).map(Into::into)
    }
}

/// Why a model stopped generating.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum StopReason {
    /// Natural end of the answer.
    Stop,
    /// The token limit cut the answer.
    Length,
    /// The model asked for tool calls.
    ToolCalls,
    /// The provider declared the answer a refusal (e.g. Anthropic `stop_reason: "refusal"`,
    /// OpenAI `finish_reason: "content_filter"` or a `refusal` field).
    Refusal,
    /// Anything else the provider reported, kept verbatim.
    Other(String),
}

/// Token usage reported by a provider. Offline models report none.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, Deserialize)]
pub struct Usage {
    pub input_tokens: u64,
    pub output_tokens: u64,
}

/// A model's answer.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ChatResponse {
    pub content: String,
    pub stop_reason: StopReason,
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub tool_calls: Vec<ToolCall>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub usage: Option<Usage>,
    /// The first generated token's most likely alternatives with their
    /// log-probabilities, when the request asked for them
    /// ([`ChatRequest::top_logprobs`]) and the server returned them.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub first_token_logprobs: Option<Vec<TokenLogprob>>,
    /// What the application was seen doing during the call, for a target built with an
    /// `evidence` param ([`crate::evidence`]); `None` for every other target.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub evidence: Option<Box<crate::evidence::Evidence>>,
}

/// One alternative for a generated token and its natural-log probability.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct TokenLogprob {
    pub token: String,
    pub logprob: f64,
}

impl ChatResponse {
    /// A plain text answer that ended naturally, with no usage (offline models).
    pub fn text(content: impl Into<String>) -> Self {
        ChatResponse {
            content: content.into(),
            stop_reason: StopReason::Stop,
            tool_calls: Vec::new(),
            usage: None,
            first_token_logprobs: None,
            evidence: None,
        }
    }

    /// True when the provider itself declared a refusal.
    pub fn is_provider_refusal(&self) -> bool {
        self.stop_reason == StopReason::Refusal
    }

    /// True when there is nothing to judge: no text, no tool call and no declared refusal.
    pub fn is_empty(&self) -> bool {
        self.content.trim().is_empty() && self.tool_calls.is_empty() && !self.is_provider_refusal()
    }
}
