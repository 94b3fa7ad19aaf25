//! What a scan reports: one [`Finding`] per rule hit, a plain serialisable record (server,
//! item, rule id, severity, location, offending text) that any output format — the text
//! report, `--json`, SARIF — renders without knowing the rules; and what a rule is
//! ([`Rule`], [`RuleInfo`], [`Check`]), which a finding names and a rule's check makes.
//!
//! The list of every rule is [`crate::catalogue`]'s, above the rules, the pin and the
//! reviewer that declare them: nothing here reads it.

use crate::fields::ItemKind;
use crate::rules::context::Ctx;
use gauntlet_core::taxonomy::ThreatEntry;
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

/// What a scanner rule is, as data: each rule declares one in its own file (`RULE`), and
/// everything that lists rules — the catalogue ([`crate::catalogue::all`]), the per-item
/// run ([`crate::rules::check_item`]), SARIF's rule list, the reviewer's kinds
/// ([`crate::review::kinds`]) and the scanner's rows of the threat map — reads them.
#[derive(Debug)]
pub struct RuleInfo {
    /// The rule's id in reports (`hidden_instruction`).
    pub id: &'static str,
    /// Its place in the catalogue: the order of [`crate::catalogue::all`], of SARIF's rule
    /// list and of sorted rules. Unique (tested).
    pub rank: u8,
    /// One line on what the rule looks for (for reports and SARIF rule metadata).
    pub summary: &'static str,
    /// Whether its hits mean the definition is poisoned (what the labelled-set benchmark
    /// scores): every text rule, not capability, collisions or pin drift.
    pub poisoning: bool,
    /// What runs it.
    pub check: Check,
    /// Its threat-map row (`mcp_rules` in `taxonomy/threat_map.json`): framework key and
    /// entry ids.
    pub threat: ThreatEntry,
}

/// How a rule runs.
#[derive(Debug, Clone, Copy)]
pub enum Check {
    /// Over every definition, one at a time.
    Item(fn(&Ctx<'_>, &mut Vec<Finding>)),
    /// Over every tool definition, one at a time.
    Tool(fn(&Ctx<'_>, &mut Vec<Finding>)),
    /// By its own pass over the whole scan (name collisions, the pin, the reviewer).
    Scan,
}

/// A scanner rule: its [`RuleInfo`], compared, ordered and hashed by its id's place in the
/// catalogue (`rank`), and serialised as its id (read back by id through the catalogue,
/// which holds its `Deserialize`).
#[derive(Debug, Clone, Copy)]
pub struct Rule(pub &'static RuleInfo);

impl Rule {
    pub fn id(self) -> &'static str {
        self.0.id
    }

    /// One line on what the rule looks for (for reports and SARIF rule metadata).
    pub fn summary(self) -> &'static str {
        self.0.summary
    }

    /// Rules whose hits mean the definition is poisoned (what the labelled-set benchmark
    /// scores): every text rule, not capability, collisions or pin drift.
    pub fn is_poisoning(self) -> bool {
        self.0.poisoning
    }

    /// Its threat-map row.
    pub fn threat(self) -> ThreatEntry {
        self.0.threat
    }
}

impl PartialEq for Rule {
    fn eq(&self, other: &Rule) -> bool {
        self.0.rank == other.0.rank
    }
}

impl Eq for Rule {}

impl PartialOrd for Rule {
    fn partial_cmp(&self, other: &Rule) -> Option<std::cmp::Ordering> {
        Some(self.cmp(other))
    }
}

impl Ord for Rule {
    fn cmp(&self, other: &Rule) -> std::cmp::Ordering {
        self.0.rank.cmp(&other.0.rank)
    }
}

impl std::hash::Hash for Rule {
    fn hash<H: std::hash::Hasher>(&self, h: &mut H) {
        self.0.rank.hash(h);
    }
}

impl Serialize for Rule {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.serialize_str(self.0.id)
    }
}

/// One rule hit. Written, not read back: reading its `rule` needs the catalogue, which
/// sits above the rules that make findings.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord, Serialize)]
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

impl Ctx<'_> {
    /// A finding about this item.
    pub fn finding(
        &self,
        rule: Rule,
        severity: Severity,
        location: &str,
        text: &str,
        message: impl Into<String>,
    ) -> Finding {
        Finding {
            server: self.server.to_string(),
            kind: self.kind,
            item: self.name.to_string(),
            rule,
            severity,
            location: location.to_string(),
            text: excerpt(text),
            message: message.into(),
        }
    }
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
