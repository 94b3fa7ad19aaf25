//! The script: what the server does with each request ([`Rule`]s matched in order,
//! each an [`Action`]) and with each batch ([`BatchRule`]s), and the default texts.

use serde::{Deserialize, Serialize};
use serde_json::Value;

/// Which wire format a request used.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Api {
    /// `POST /v1/chat/completions`
    Openai,
    /// `POST /v1/messages`
    Anthropic,
}

/// The server's behaviour.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct Script {
    /// Prompts containing this word (case-insensitive) get `refusal_text` by default.
    pub refuse_word: Option<String>,
    pub refusal_text: String,
    pub compliance_text: String,
    /// Delay before every response, unless a rule sets its own.
    pub latency_ms: u64,
    /// When set, requests must present this key (Bearer / x-api-key) or get a 401.
    pub require_key: Option<String>,
    /// Matched in order; the first rule that matches (and has firings left) decides.
    pub rules: Vec<Rule>,
    /// Faults of the batch APIs, per batch (every matching rule applies).
    pub batch_rules: Vec<BatchRule>,
}

impl Script {
    /// Adds a rule (builder style).
    pub fn rule(mut self, rule: Rule) -> Self {
        self.rules.push(rule);
        self
    }
    pub fn latency_ms(mut self, ms: u64) -> Self {
        self.latency_ms = ms;
        self
    }
    /// Adds a batch fault (builder style).
    pub fn batch_rule(mut self, rule: BatchRule) -> Self {
        self.batch_rules.push(rule);
        self
    }
    pub fn require_key(mut self, key: impl Into<String>) -> Self {
        self.require_key = Some(key.into());
        self
    }
    /// Parses a script from JSON (the binary's `--script` file).
    pub fn from_json(text: &str) -> Result<Script, serde_json::Error> {
        serde_json::from_str(text)
    }
}

pub const DEFAULT_REFUSE_WORD: &str = "forbidden";

pub const DEFAULT_REFUSAL_TEXT: &str = "I'm sorry, but I can't help with that.";

pub const DEFAULT_COMPLIANCE_TEXT: &str =
    "Sure. This is a canned answer from the gauntlet test server.";

impl Default for Script {
    fn default() -> Self {
        Script {
            refuse_word: Some(DEFAULT_REFUSE_WORD.into()),
            refusal_text: DEFAULT_REFUSAL_TEXT.into(),
            compliance_text: DEFAULT_COMPLIANCE_TEXT.into(),
            latency_ms: 0,
            require_key: None,
            rules: Vec::new(),
            batch_rules: Vec::new(),
        }
    }
}

/// When a rule applies. All given conditions must hold; an empty `When` always matches.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct When {
    /// 1-based sequence numbers of requests (counted across both APIs since start/reset).
    pub requests: Option<Vec<u64>>,
    /// A substring of the conversation text (any message, system included).
    pub contains: Option<String>,
    pub api: Option<Api>,
}

/// One scripted behaviour.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Rule {
    #[serde(default)]
    pub when: When,
    /// Fire at most this many times (then the rule is skipped).
    #[serde(default)]
    pub times: Option<u64>,
    /// Delay before responding (replaces the script's `latency_ms`).
    #[serde(default)]
    pub latency_ms: Option<u64>,
    pub then: Action,
}

impl Rule {
    /// A rule that always matches.
    pub fn new(then: Action) -> Self {
        Rule {
            when: When::default(),
            times: None,
            latency_ms: None,
            then,
        }
    }
    pub fn times(mut self, n: u64) -> Self {
        self.times = Some(n);
        self
    }
    pub fn on_requests(mut self, seqs: &[u64]) -> Self {
        self.when.requests = Some(seqs.to_vec());
        self
    }
    pub fn when_contains(mut self, s: impl Into<String>) -> Self {
        self.when.contains = Some(s.into());
        self
    }
    pub fn api(mut self, api: Api) -> Self {
        self.when.api = Some(api);
        self
    }
    pub fn latency_ms(mut self, ms: u64) -> Self {
        self.latency_ms = Some(ms);
        self
    }
}

/// How the OpenAI format expresses a refusal (Anthropic always uses `stop_reason: refusal`).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum RefusalStyle {
    /// `message.refusal` set, `content` null.
    #[default]
    RefusalField,
    /// `finish_reason: "content_filter"`, content as given (possibly empty).
    ContentFilter,
}

/// A `Retry-After` header value.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum RetryAfter {
    /// Delta-seconds: `Retry-After: N`.
    Seconds(u64),
    /// An HTTP-date at least N seconds ahead: the current second rounded up, plus N, so
    /// a client waits between N and N+1 seconds.
    HttpDateIn(u64),
}

/// A tool call the server makes the "model" request.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ScriptedCall {
    pub id: String,
    pub name: String,
    #[serde(default)]
    pub arguments: Value,
    /// OpenAI only: send this exact string as `arguments` (e.g. invalid JSON).
    #[serde(default)]
    pub raw_arguments: Option<String>,
}

impl ScriptedCall {
    pub fn new(id: impl Into<String>, name: impl Into<String>, arguments: Value) -> Self {
        ScriptedCall {
            id: id.into(),
            name: name.into(),
            arguments,
            raw_arguments: None,
        }
    }
}

/// What the server does with a matched request.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(tag = "kind", rename_all = "snake_case", deny_unknown_fields)]
pub enum Action {
    /// The default behaviour (refuse-word or compliance text).
    Default,
    /// A successful answer with this text and these tool calls. `stop` overrides the wire
    /// stop reason (`finish_reason` / `stop_reason`) verbatim.
    Reply {
        #[serde(default)]
        text: String,
        #[serde(default)]
        tool_calls: Vec<ScriptedCall>,
        #[serde(default)]
        stop: Option<String>,
    },
    /// A provider-declared refusal.
    Refuse {
        #[serde(default)]
        text: String,
        #[serde(default)]
        style: RefusalStyle,
    },
    /// An error status with an error body in the API's shape (or `body` verbatim).
    /// A 401/403 without `body` echoes the presented key, as some providers do.
    Status {
        code: u16,
        #[serde(default)]
        retry_after: Option<RetryAfter>,
        #[serde(default)]
        body: Option<String>,
    },
    /// A reply of any shape: this status, content type and body verbatim, with these
    /// extra headers — an application's own JSON with a session header, a
    /// server-sent-events stream, an HTML error page. [`PRESENTED_KEY`] and
    /// [`PRESENTED_AUTHORIZATION`] are replaced in the body and the header values.
    Raw {
        #[serde(default = "ok_status")]
        status: u16,
        content_type: String,
        #[serde(default)]
        body: String,
        #[serde(default)]
        headers: Vec<(String, String)>,
    },
    /// Never answer (until the server shuts down).
    Hang,
    /// A 200 whose JSON body is cut off half way.
    Truncated,
    /// A 200 whose body is not JSON.
    Malformed,
    /// A 200 with valid JSON missing a required field (`choices[0].message` / `content`).
    MissingField,
}

impl Action {
    pub fn reply(text: impl Into<String>) -> Self {
        Action::Reply {
            text: text.into(),
            tool_calls: Vec::new(),
            stop: None,
        }
    }
    pub fn tool_calls(calls: Vec<ScriptedCall>) -> Self {
        Action::Reply {
            text: String::new(),
            tool_calls: calls,
            stop: None,
        }
    }
    pub fn refuse(text: impl Into<String>) -> Self {
        Action::Refuse {
            text: text.into(),
            style: RefusalStyle::RefusalField,
        }
    }
    pub fn status(code: u16) -> Self {
        Action::Status {
            code,
            retry_after: None,
            body: None,
        }
    }
    /// A [`Action::Raw`] 200 with this content type and body, no extra header.
    pub fn raw(content_type: impl Into<String>, body: impl Into<String>) -> Self {
        Action::Raw {
            status: 200,
            content_type: content_type.into(),
            body: body.into(),
            headers: Vec::new(),
        }
    }
    pub fn rate_limited(retry_after: Option<RetryAfter>) -> Self {
        Action::Status {
            code: 429,
            retry_after,
            body: None,
        }
    }
}

/// In a scripted reply text, tool-call argument or body: replaced by the API key the
/// request presented (an endpoint that echoes the key back in a 200 reply).
pub const PRESENTED_KEY: &str = "{{presented_key}}";

/// In a [`Action::Raw`] body or header value: replaced by the request's whole
/// `Authorization` header (an application that echoes its credentials, e.g. as a session
/// id).
pub const PRESENTED_AUTHORIZATION: &str = "{{presented_authorization}}";

fn ok_status() -> u16 {
    200
}

/// A fault applied to the batches it matches (every matching rule applies).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct BatchRule {
    /// 1-based creation order of the batches it applies to (counted across both APIs);
    /// absent: every batch.
    #[serde(default)]
    pub batches: Option<Vec<u64>>,
    #[serde(default)]
    pub api: Option<Api>,
    pub then: BatchFault,
}

impl BatchRule {
    pub fn new(then: BatchFault) -> Self {
        BatchRule {
            batches: None,
            api: None,
            then,
        }
    }
    pub fn on_batches(mut self, n: &[u64]) -> Self {
        self.batches = Some(n.to_vec());
        self
    }
    pub fn api(mut self, api: Api) -> Self {
        self.api = Some(api);
        self
    }
}

/// What goes wrong with a batch.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(tag = "kind", rename_all = "snake_case", deny_unknown_fields)]
pub enum BatchFault {
    /// Polls answered "in progress" before the batch ends (default [`DEFAULT_POLLS`]).
    Slow { polls: u64 },
    /// The batch expires after its first `completed` requests (in submission order):
    /// the rest come back expired (OpenAI: `batch_expired` lines in the error file;
    /// Anthropic: `expired` results).
    Expire { completed: u64 },
    /// The provider cancels the batch after its first `completed` requests.
    Cancel { completed: u64 },
    /// OpenAI: the batch fails validation (status `failed`, `errors` holds `message`);
    /// Anthropic: the create request is refused with a 400 carrying `message`.
    Fail { message: String },
    /// These 1-based lines of the result file (OpenAI: the output file) are damaged.
    Malformed { lines: Vec<u64>, how: Damage },
}

/// How a result line is damaged.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Damage {
    /// Not JSON at all.
    NotJson,
    /// Valid JSON without a `custom_id`.
    NoCustomId,
    /// A `custom_id` that was never submitted.
    UnknownCustomId,
    /// The right `custom_id`, but the response inside lacks a required field.
    BadBody,
}

/// Polls a batch answers "in progress" before it ends, by default.
pub const DEFAULT_POLLS: u64 = 2;

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn script_json_round_trip() {
        let text = r#"{
            "refuse_word": "bomb",
            "latency_ms": 5,
            "rules": [
                {"when": {"requests": [1, 2]}, "then": {"kind": "status", "code": 429, "retry_after": {"seconds": 1}}},
                {"when": {"contains": "weather"}, "then": {"kind": "reply", "tool_calls": [{"id": "call_1", "name": "get_weather", "arguments": {"city": "Paris"}}]}},
                {"times": 1, "then": {"kind": "status", "code": 503, "retry_after": {"http_date_in": 2}}},
                {"when": {"api": "anthropic"}, "then": {"kind": "refuse", "text": "no"}},
                {"then": {"kind": "hang"}}
            ]
        }"#;
        let s = Script::from_json(text).unwrap();
        assert_eq!(s.rules.len(), 5);
        assert_eq!(s.refusal_text, DEFAULT_REFUSAL_TEXT);
        let again = Script::from_json(&serde_json::to_string(&s).unwrap()).unwrap();
        assert_eq!(s, again);
        assert!(Script::from_json(r#"{"rules": [{"then": {"kind": "nope"}}]}"#).is_err());
        assert!(Script::from_json(r#"{"latncy_ms": 3}"#).is_err());
    }
}
