//! What a scan reports: one [`Finding`] per rule hit, a plain serialisable record (server,
//! item, rule id, severity, location, offending text) that any output format — the text
//! report, `--json`, SARIF — renders without knowing the rules.

use serde::{Deserialize, Serialize};

/// How much a finding matters. Ordered: `Info < Low < Medium < High`. The default gate
/// (`mcp-scan --fail-on low`) fails on `low` and above, so `info` is what a reviewer may
/// want to know and no honest server fails on.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Severity {
    /// A capability the tool's purpose explains (a filesystem tool's unconstrained `path`,
    /// a fetch tool's `url`, a terminal tool's `command`): information, not a finding to
    /// fail on unless another signal joins it.
    Info,
    /// A capability worth a look that nothing else in the definition flags.
    Low,
    /// A risk that needs a look (a command parameter outside the tool's stated purpose,
    /// a name collision, a tool added or removed since the pin).
    Medium,
    /// Poisoning: text addressed to the model, data requests, exfiltration channels,
    /// shadowing, a changed definition (rug pull).
    High,
}

impl Severity {
    pub fn as_str(self) -> &'static str {
        match self {
            Severity::Info => "info",
            Severity::Low => "low",
            Severity::Medium => "medium",
            Severity::High => "high",
        }
    }

    pub fn parse(s: &str) -> Option<Severity> {
        match s {
            "info" => Some(Severity::Info),
            "low" => Some(Severity::Low),
            "medium" => Some(Severity::Medium),
            "high" => Some(Severity::High),
            _ => None,
        }
    }
}

/// What a finding is about.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum ItemKind {
    Tool,
    Prompt,
    Resource,
}

impl ItemKind {
    pub fn as_str(self) -> &'static str {
        match self {
            ItemKind::Tool => "tool",
            ItemKind::Prompt => "prompt",
            ItemKind::Resource => "resource",
        }
    }
}

/// The rules, by id. Each is one file under `rules/`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Rule {
    /// Instructions addressed to the model: `<IMPORTANT>`-style blocks, "ignore previous
    /// instructions", "do not tell the user", directives in enum values and defaults.
    HiddenInstruction,
    /// Invisible or tag Unicode, bidirectional controls, whitespace padding.
    InvisibleText,
    /// Base64 / hex / percent-encoded text carrying words.
    EncodedPayload,
    /// Requests for data outside the tool's purpose: secrets, keys, credential files,
    /// the system prompt, other tools' outputs.
    SensitiveDataRequest,
    /// A free-text parameter the description asks the model to fill with context.
    ExfiltrationChannel,
    /// A tool that tells the model how to use another tool or server.
    ToolShadowing,
    /// The same (or a confusable) tool name on two scanned servers.
    NameCollision,
    /// An unconstrained command, code, SQL, path or URL parameter.
    ExcessiveCapability,
    /// A tool whose definition changed since the pin.
    RugPull,
    /// A tool added or removed since the pin.
    PinDrift,
    /// A definition the reviewer model (`mcp-scan --review`) judged poisoned.
    ModelReview,
}

impl Rule {
    pub const ALL: [Rule; 11] = [
        Rule::HiddenInstruction,
        Rule::InvisibleText,
        Rule::EncodedPayload,
        Rule::SensitiveDataRequest,
        Rule::ExfiltrationChannel,
        Rule::ToolShadowing,
        Rule::NameCollision,
        Rule::ExcessiveCapability,
        Rule::RugPull,
        Rule::PinDrift,
        Rule::ModelReview,
    ];

    pub fn id(self) -> &'static str {
        match self {
            Rule::HiddenInstruction => "hidden_instruction",
            Rule::InvisibleText => "invisible_text",
            Rule::EncodedPayload => "encoded_payload",
            Rule::SensitiveDataRequest => "sensitive_data_request",
            Rule::ExfiltrationChannel => "exfiltration_channel",
            Rule::ToolShadowing => "tool_shadowing",
            Rule::NameCollision => "name_collision",
            Rule::ExcessiveCapability => "excessive_capability",
            Rule::RugPull => "rug_pull",
            Rule::PinDrift => "pin_drift",
            Rule::ModelReview => "model_review",
        }
    }

    /// One line on what the rule looks for (for reports and SARIF rule metadata).
    pub fn summary(self) -> &'static str {
        match self {
            Rule::HiddenInstruction => "instructions addressed to the model hidden in a definition",
            Rule::InvisibleText => "invisible, tag or bidirectional Unicode, or whitespace padding",
            Rule::EncodedPayload => {
                "an encoded (base64, hex, percent) payload that decodes to text"
            }
            Rule::SensitiveDataRequest => {
                "a request for secrets, keys, credential files or other tools' data"
            }
            Rule::ExfiltrationChannel => {
                "a parameter the model is asked to fill with conversation context"
            }
            Rule::ToolShadowing => "a tool that tells the model how to use another tool or server",
            Rule::NameCollision => "the same or a confusable name on two servers",
            Rule::ExcessiveCapability => {
                "an unconstrained command, code, SQL, path or URL parameter"
            }
            Rule::RugPull => "a definition that changed since it was pinned",
            Rule::PinDrift => "a tool added or removed since the pin",
            Rule::ModelReview => "a definition the reviewer model judged poisoned",
        }
    }

    /// Rules whose hits mean the definition is poisoned (what the labelled-set benchmark
    /// scores): every text rule, not capability, collisions or pin drift.
    pub fn is_poisoning(self) -> bool {
        matches!(
            self,
            Rule::HiddenInstruction
                | Rule::InvisibleText
                | Rule::EncodedPayload
                | Rule::SensitiveDataRequest
                | Rule::ExfiltrationChannel
                | Rule::ToolShadowing
                | Rule::ModelReview
        )
    }
}

/// One rule hit.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord, Serialize, Deserialize)]
pub struct Finding {
    /// The server's name (the servers-file key; for a single server, what its command
    /// runs or the URL's host).
    pub server: String,
    pub kind: ItemKind,
    /// The tool's, prompt's or resource's name.
    pub item: String,
    pub rule: Rule,
    pub severity: Severity,
    /// Where in the definition: a JSON pointer (`/description`,
    /// `/inputSchema/properties/notes/description`, `/name`).
    pub location: String,
    /// The offending text, verbatim where it is visible, with invisible characters spelled
    /// out (`\u{200b}`) and decoded payloads appended; at most [`MAX_EXCERPT`] characters.
    pub text: String,
    /// Why it is a finding, in words.
    pub message: String,
}

/// Longest excerpt a finding quotes (characters).
pub const MAX_EXCERPT: usize = 240;

/// `s` cut to at most [`MAX_EXCERPT`] characters (an ellipsis marks the cut).
pub fn excerpt(s: &str) -> String {
    let s = s.trim();
    if s.chars().count() <= MAX_EXCERPT {
        return s.to_string();
    }
    let mut out: String = s.chars().take(MAX_EXCERPT - 1).collect();
    out.push('…');
    out
}

/// What the review of a scan did (`review` in the JSON report); [`crate::review`] fills
/// it in.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct ReviewSummary {
    /// The reviewer model's label.
    pub reviewer: String,
    /// [`PROMPT_VERSION`](crate::review::PROMPT_VERSION).
    pub prompt: String,
    /// Whether a poisoned verdict needs its quoted evidence found in the definition to
    /// be a finding.
    pub require_evidence: bool,
    /// The control definitions the reviewer judged right, of how many were sent (0 of 0
    /// with the controls turned off).
    pub controls_passed: usize,
    pub controls: usize,
    /// Items sent for review.
    pub items: usize,
    pub poisoned: usize,
    pub benign: usize,
    /// Poisoned verdicts that quote nothing found in the definition: an empty quote, or
    /// text that is not there (findings only without `require_evidence`).
    pub unquoted: usize,
    /// Items without a verdict (the call failed or the reply was not one); each is also
    /// in the report's `errors`, so the scan is incomplete (exit 2).
    pub errors: usize,
}
