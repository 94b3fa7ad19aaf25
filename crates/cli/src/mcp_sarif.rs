//! `gauntlet mcp-scan --format sarif`: a scan's findings as SARIF 2.1.0, through the same
//! writer as a run's (`gauntlet_report::sarif`), for code-scanning dashboards.
//!
//! - **Rules:** one per scanner rule (`hidden_instruction`, `rug_pull`, …), all of them listed
//!   whether or not they fired, tagged with their threat-taxonomy ids
//!   (`taxonomy/threat_map.json`, `mcp_rules`).
//! - **Level:** a finding's severity (high → error, medium → warning, low and info → note).
//! - **Locations:** the servers file, at the line that names the server, when the scan
//!   read one (a file a reviewer can open), with the logical location
//!   `mcp/<server>/<kind>/<item><pointer>`; the logical location alone for servers given
//!   by `--url` or after `--`. A rug pull or pin drift has the pin file as a related
//!   location.
//! - **Fingerprint:** sha256 of (server, kind, item, rule, pointer), so the same finding
//!   keeps its identity across scans while its text changes.
//! - **Servers not scanned** are the run's invocation errors (`executionSuccessful:
//!   false`), so an empty result list never reads as "clean" when a server was not looked at.

use gauntlet_core::hash::HashWriter;
use gauntlet_core::taxonomy;
use gauntlet_mcp::catalogue;
use gauntlet_mcp::finding::{Rule as ScanRule, Severity};
use gauntlet_mcp::pin::{PIN_DRIFT, RUG_PULL};
use gauntlet_mcp::scan::ScanReport;
use gauntlet_report::sarif::{Finding, Invocation, Level, Location, Rule, Tool, uri_of};
use serde_json::{Map, json};
use std::path::Path;

fn level(s: Severity) -> Level {
    match s {
        Severity::High => Level::Error,
        Severity::Medium => Level::Warning,
        Severity::Low | Severity::Info => Level::Note,
    }
}

/// A rule's level when nothing else is known: poisoning and rug pulls are errors, the
/// rest warnings (a finding carries its own severity).
fn default_level(r: ScanRule) -> Level {
    if r.is_poisoning() || r == RUG_PULL {
        Level::Error
    } else {
        Level::Warning
    }
}

/// "hidden_instruction" → "Hidden instruction".
fn title(id: &str) -> String {
    let words = id.replace('_', " ");
    let mut c = words.chars();
    match c.next() {
        Some(f) => f.to_uppercase().chain(c).collect(),
        None => words,
    }
}

fn rules() -> Vec<Rule> {
    let tmap = taxonomy::map();
    catalogue::all()
        .iter()
        .map(|r| {
            let mut tags = vec!["security".to_string(), "mcp".to_string()];
            for ids in taxonomy::mcp_rule_tags(r.id()).values() {
                tags.extend(ids.iter().cloned());
            }
            let owasp = taxonomy::mcp_rule_tags(r.id())
                .get("owasp_llm")
                .and_then(|ids| ids.first())
                .map(|id| {
                    format!(
                        " (OWASP LLM Top 10: {id} {})",
                        tmap.title("owasp_llm", id).unwrap_or("")
                    )
                })
                .unwrap_or_default();
            Rule {
                id: r.id().to_string(),
                name: title(r.id()),
                description: format!("MCP server definitions: {}{owasp}.", r.summary()),
                help_uri: None,
                level: default_level(*r),
                tags,
            }
        })
        .collect()
}

/// The 1-based line of `file` that names server `name` as a key (`"name":`), if any.
fn server_line(text: &str, name: &str) -> Option<u64> {
    let key = serde_json::to_string(name).ok()?;
    text.lines().enumerate().find_map(|(i, l)| {
        l.match_indices(&key)
            .any(|(at, _)| l[at + key.len()..].trim_start().starts_with(':'))
            .then_some(i as u64 + 1)
    })
}

/// What the scan was given, for locations.
pub(crate) struct Inputs<'a> {
    /// `--servers FILE` as the user named it, and the text the scan read from it.
    pub servers_file: Option<(&'a Path, &'a str)>,
    /// `--pin FILE`.
    pub pin_file: Option<&'a Path>,
}

/// The SARIF document of a scan.
pub(crate) fn render(report: &ScanReport, inputs: &Inputs) -> String {
    let findings: Vec<Finding> = report
        .findings
        .iter()
        .map(|f| {
            let logical = format!(
                "mcp/{}/{}/{}{}",
                f.server,
                f.kind.as_str(),
                f.item,
                f.location
            );
            let what = format!("{} `{}` of server `{}`", f.kind.as_str(), f.item, f.server);
            let mut primary = Location {
                uri: None,
                start_line: None,
                logical: Some(logical),
                message: Some(format!("{what}, at {}", f.location)),
            };
            if let Some((p, text)) = inputs.servers_file {
                primary.uri = Some(uri_of(p));
                primary.start_line = server_line(text, &f.server);
            }
            let related = match inputs.pin_file {
                Some(pin) if f.rule == RUG_PULL || f.rule == PIN_DRIFT => vec![Location {
                    uri: Some(uri_of(pin)),
                    start_line: None,
                    logical: None,
                    message: Some("the pin file this scan was checked against".into()),
                }],
                _ => Vec::new(),
            };
            let mut h = HashWriter::new();
            for part in [
                f.server.as_str(),
                f.kind.as_str(),
                f.item.as_str(),
                f.rule.id(),
                f.location.as_str(),
            ] {
                h.field(part.as_bytes());
            }
            let mut props = Map::new();
            props.insert("server".into(), json!(f.server));
            props.insert("kind".into(), json!(f.kind.as_str()));
            props.insert("item".into(), json!(f.item));
            props.insert("pointer".into(), json!(f.location));
            props.insert("severity".into(), json!(f.severity.as_str()));
            if !f.text.is_empty() {
                props.insert("excerpt".into(), json!(f.text));
            }
            Finding {
                rule_id: f.rule.id().to_string(),
                level: level(f.severity),
                message: format!("{what}: {}", f.message),
                locations: vec![primary],
                related,
                fingerprint: h.finish_hex(),
                properties: props,
            }
        })
        .collect();
    let invocation = Invocation {
        successful: report.errors.is_empty(),
        errors: report
            .errors
            .iter()
            .map(|e| {
                format!(
                    "server {}: could not scan ({}): {}",
                    e.server, e.error, e.message
                )
            })
            .collect(),
    };
    gauntlet_report::sarif::render_with(
        &Tool {
            name: "gauntlet mcp-scan".into(),
            version: env!("CARGO_PKG_VERSION").into(),
            information_uri: None,
        },
        &rules(),
        &findings,
        Some(&invocation),
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_scanner_rule_is_mapped_to_the_taxonomy() {
        for r in catalogue::all() {
            let tags = taxonomy::mcp_rule_tags(r.id());
            for fw in ["owasp_llm", "owasp_agentic_2026", "owasp_mcp"] {
                assert!(
                    tags.contains_key(fw),
                    "mcp rule {} has no {fw} entry in threat_map.json",
                    r.id()
                );
            }
        }
        assert_eq!(rules().len(), catalogue::all().len());
    }

    #[test]
    fn the_servers_line_is_the_one_naming_it_as_a_key() {
        let text = "{\n  \"mcpServers\": {\n    \"mail\": {\"url\": \"http://127.0.0.1:1/mail\"},\n    \"helper\": {\n      \"command\": \"helper\"\n    }\n  }\n}\n";
        assert_eq!(server_line(text, "helper"), Some(4));
        assert_eq!(server_line(text, "mail"), Some(3));
        assert_eq!(server_line(text, "absent"), None);
        // A value equal to the name is not its key.
        assert_eq!(server_line("{\"a\": \"b\",\n\"b\": 1}", "b"), Some(2));
        assert_eq!(server_line("{\"a\": \"b\", \"b\": 1}", "b"), Some(1));
        assert_eq!(title("rug_pull"), "Rug pull");
    }
}
