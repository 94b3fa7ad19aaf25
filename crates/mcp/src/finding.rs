//! What a scan reports: one [`Finding`] per rule hit, a plain serialisable record (server,
//! item, rule id, severity, location, offending text) that any output format — the text
//! report, `--json`, SARIF — renders without knowing the rules.

use crate::rules::Ctx;
use gauntlet_core::taxonomy::ThreatEntry;
use serde::{Deserialize, Serialize};
use std::sync::LazyLock;

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

/// What a scanner rule is, as data: each rule declares one in its own file (`RULE`), and
/// everything that lists rules — [`Rule::all`], the per-item run
/// ([`crate::rules::check_item`]), SARIF's rule list, the reviewer's kinds
/// ([`crate::review::kinds`]) and the scanner's rows of the threat map — reads them.
#[derive(Debug)]
pub struct RuleInfo {
    /// The rule's id in reports (`hidden_instruction`).
    pub id: &'static str,
    /// Its place in the catalogue: the order of [`Rule::all`], of SARIF's rule list and of
    /// sorted rules. Unique (tested).
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
/// catalogue (`rank`), and serialised as its id.
#[derive(Debug, Clone, Copy)]
pub struct Rule(pub &'static RuleInfo);

/// Every rule, in catalogue order: the `RULE` of each `pub mod` under `rules/` (a list
/// the build reads from `rules/mod.rs`) and the rules of the pin and the reviewer.
static ALL: LazyLock<Vec<Rule>> = LazyLock::new(|| {
    let mut all: Vec<Rule> = crate::rules::RULES.to_vec();
    all.extend([
        crate::pin::RUG_PULL,
        crate::pin::PIN_DRIFT,
        crate::review::RULE,
    ]);
    all.sort();
    all
});

impl Rule {
    /// Every rule, in catalogue order.
    pub fn all() -> &'static [Rule] {
        &ALL
    }

    /// The rule with id `id`.
    pub fn by_id(id: &str) -> Option<Rule> {
        ALL.iter().copied().find(|r| r.0.id == id)
    }

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

impl<'de> Deserialize<'de> for Rule {
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<Rule, D::Error> {
        let id = String::deserialize(d)?;
        Rule::by_id(&id).ok_or_else(|| {
            let ids: Vec<&str> = ALL.iter().map(|r| r.0.id).collect();
            serde::de::Error::custom(format!(
                "unknown rule `{id}` (expected one of {})",
                ids.join(", ")
            ))
        })
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

#[cfg(test)]
mod tests {
    use super::Rule;
    use gauntlet_core::taxonomy::{self, THREAT_MAP_JSON};
    use std::collections::BTreeSet;

    #[test]
    fn every_rule_has_its_own_rank_and_id_and_round_trips_by_id() {
        let ranks: BTreeSet<u8> = Rule::all().iter().map(|r| r.0.rank).collect();
        let ids: BTreeSet<&str> = Rule::all().iter().map(|r| r.id()).collect();
        assert_eq!(ranks.len(), Rule::all().len(), "two rules share a rank");
        assert_eq!(ids.len(), Rule::all().len(), "two rules share an id");
        for r in Rule::all() {
            let json = serde_json::to_string(r).expect("a rule serialises");
            assert_eq!(json, format!("\"{}\"", r.id()));
            assert_eq!(serde_json::from_str::<Rule>(&json).expect("parses"), *r);
        }
        assert!(serde_json::from_str::<Rule>("\"nope\"").is_err());
    }

    /// The threat map's `mcp_rules` rows are the rules' own `threat`, in catalogue order;
    /// with `GAUNTLET_UPDATE_DOCS=1` the map's file is rewritten from them.
    #[test]
    fn the_threat_map_rows_are_the_rules_own() {
        let rows: Vec<String> = Rule::all()
            .iter()
            .map(|r| taxonomy::row_json(r.id(), r.threat()))
            .collect();
        let (_, have) =
            taxonomy::section_rows(THREAT_MAP_JSON, "mcp_rules").expect("an mcp_rules section");
        if have == rows {
            return;
        }
        let path = concat!(
            env!("CARGO_MANIFEST_DIR"),
            "/../core/taxonomy/threat_map.json"
        );
        if std::env::var_os("GAUNTLET_UPDATE_DOCS").is_some() {
            let text = taxonomy::with_section(THREAT_MAP_JSON, "mcp_rules", &rows)
                .expect("an mcp_rules section");
            std::fs::write(path, text).expect("writing the threat map");
            return;
        }
        panic!(
            "{path}'s mcp_rules differ from the rules' `threat` (rerun with \
             GAUNTLET_UPDATE_DOCS=1 to rewrite them):\nmap:   {have:#?}\nrules: {rows:#?}"
        );
    }
}
