//! A scan: the inventories of one or more servers through every rule, into a
//! [`ScanReport`] (what each server offers, the findings, the servers that could not be
//! scanned, and the pin's verdict).

use crate::canonical;
use crate::fields::{self, Field, ItemKind};
use crate::finding::{Finding, Rule, Severity};
use crate::pin::{self, PinError, Pins};
use crate::rules::{self, Ctx, Norm, NormField};
use serde::{Deserialize, Serialize};
use serde_json::Value;
use std::collections::{BTreeMap, BTreeSet};
use std::path::Path;

/// What one server offers, as listed over MCP (or given offline).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Inventory {
    /// The server's name in the scan (servers-file key, or what a `--` command runs / the URL host).
    pub server: String,
    /// How it was reached: `stdio: CMD ARGS…`, `http: URL`, `offline`.
    pub transport: String,
    /// `serverInfo` from `initialize` (name, version), when the server sent one.
    #[serde(default, skip_serializing_if = "Value::is_null")]
    pub server_info: Value,
    /// Tool, prompt and resource definitions as the server sent them.
    pub tools: Vec<Value>,
    #[serde(default)]
    pub prompts: Vec<Value>,
    #[serde(default)]
    pub resources: Vec<Value>,
    /// A second `tools/list` of the same session, when it differed from the first (a
    /// server that changes its tools after they were listed: an in-session rug pull).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub tools_relisted: Option<Vec<Value>>,
    /// What could not be listed and why it is not an error (`prompts/list: the server
    /// does not offer prompts`).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub notes: Vec<String>,
}

impl Inventory {
    /// An inventory of tools given directly (the labelled set, tests).
    pub fn offline(server: &str, tools: Vec<Value>) -> Inventory {
        Inventory {
            server: server.to_string(),
            transport: "offline".into(),
            server_info: Value::Null,
            tools,
            prompts: Vec::new(),
            resources: Vec::new(),
            tools_relisted: None,
            notes: Vec::new(),
        }
    }
}

/// Why a file of tool definitions (`mcp-scan --tools`) cannot be read as one.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum ToolsFileError {
    #[error("not JSON: {0}")]
    Json(String),
    #[error(
        "expected an array of tool definitions or a tools/list result ({{\"tools\": [...]}}), found {0}"
    )]
    Shape(&'static str),
    #[error("`tools` is {0}, not an array of tool definitions")]
    ToolsNotArray(&'static str),
    #[error("tool {index}: {why}")]
    Tool { index: usize, why: &'static str },
}

fn json_kind(v: &Value) -> &'static str {
    match v {
        Value::Null => "null",
        Value::Bool(_) => "a boolean",
        Value::Number(_) => "a number",
        Value::String(_) => "a string",
        Value::Array(_) => "an array",
        Value::Object(_) => "an object",
    }
}

impl Inventory {
    /// The inventory of a file of tool definitions, as given to `mcp-scan --tools`: a JSON
    /// array of definitions, or a `tools/list` result (`{"tools": [...]}`). Each must be
    /// an object with a string `name`.
    pub fn from_tools_json(server: &str, text: &str) -> Result<Inventory, ToolsFileError> {
        let v: Value =
            serde_json::from_str(text).map_err(|e| ToolsFileError::Json(e.to_string()))?;
        let tools = match v {
            Value::Array(a) => a,
            Value::Object(mut o) => match o.remove("tools") {
                Some(Value::Array(a)) => a,
                Some(other) => return Err(ToolsFileError::ToolsNotArray(json_kind(&other))),
                None => return Err(ToolsFileError::Shape("an object without `tools`")),
            },
            other => return Err(ToolsFileError::Shape(json_kind(&other))),
        };
        for (index, t) in tools.iter().enumerate() {
            let why = match t {
                Value::Object(o) => match o.get("name") {
                    Some(Value::String(_)) => continue,
                    Some(_) => "`name` is not a string",
                    None => "has no `name`",
                },
                _ => "is not an object",
            };
            return Err(ToolsFileError::Tool { index, why });
        }
        let mut inv = Inventory::offline(server, tools);
        inv.transport = "file".into();
        Ok(inv)
    }
}

/// A server that could not be scanned.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct ServerError {
    pub server: String,
    /// The named outcome: `spawn`, `timeout`, `oversized_message`, `invalid_json`,
    /// `protocol`, `exited`, `connect`, `too_many_items`, `confinement`.
    pub error: String,
    pub message: String,
}

/// One listed item in the report.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Listed {
    pub name: String,
    /// sha256 of the canonical definition (tools only).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub sha256: Option<String>,
    pub findings: usize,
}

/// One server in the report.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ServerReport {
    pub server: String,
    pub transport: String,
    #[serde(default, skip_serializing_if = "Value::is_null")]
    pub server_info: Value,
    pub tools: Vec<Listed>,
    pub prompts: Vec<Listed>,
    pub resources: Vec<Listed>,
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub notes: Vec<String>,
}

/// What the pin did.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct PinOutcome {
    pub file: String,
    /// `written` (first use), `checked`, `updated` (--update-pin).
    pub action: String,
    pub tools: usize,
}

/// The whole scan (what `mcp-scan --json` writes; its findings are not read back, see
/// [`Finding`]).
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct ScanReport {
    /// Format of this document.
    pub format: String,
    pub servers: Vec<ServerReport>,
    pub errors: Vec<ServerError>,
    pub findings: Vec<Finding>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub pin: Option<PinOutcome>,
    /// What the reviewer model did (`--review`).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub review: Option<crate::finding::ReviewSummary>,
}

pub const REPORT_FORMAT: &str = "gauntlet-mcp-scan/1";

impl ScanReport {
    /// 2 when a server could not be scanned, else 1 when a finding is at least
    /// `fail_on`, else 0.
    pub fn exit_code(&self, fail_on: Severity) -> u8 {
        if !self.errors.is_empty() {
            2
        } else if self.findings.iter().any(|f| f.severity >= fail_on) {
            1
        } else {
            0
        }
    }

    /// Adds a finding made after the rules ran (a reviewer's), counted on its item.
    pub fn add(&mut self, f: Finding) {
        if let Some(s) = self.servers.iter_mut().find(|s| s.server == f.server) {
            let list = match f.kind {
                ItemKind::Tool => &mut s.tools,
                ItemKind::Prompt => &mut s.prompts,
                ItemKind::Resource => &mut s.resources,
            };
            if let Some(l) = list.iter_mut().find(|l| l.name == f.item) {
                l.findings += 1;
            }
        }
        self.findings.push(f);
    }
}

fn norm_fields(fs: &[Field]) -> Vec<NormField<'_>> {
    fs.iter()
        .map(|f| NormField {
            field: f,
            norm: Norm::new(&f.text),
        })
        .collect()
}

/// Findings for one item (the per-item rules).
fn item_findings(
    server: &str,
    kind: ItemKind,
    item: &Value,
    own_tools: &BTreeSet<String>,
    other_tools: &BTreeMap<String, BTreeSet<String>>,
    out: &mut Vec<Finding>,
) {
    let fs = fields::fields(item);
    let param_names = if kind == ItemKind::Tool {
        fields::params(item)
            .iter()
            .map(|p| p.name.to_string())
            .collect()
    } else {
        item.get("arguments")
            .and_then(Value::as_array)
            .map(|a| {
                a.iter()
                    .filter_map(|x| x.get("name")?.as_str().map(str::to_string))
                    .collect()
            })
            .unwrap_or_default()
    };
    let ctx = Ctx {
        server,
        kind,
        item,
        name: fields::name_of(item),
        fields: norm_fields(&fs),
        own_tools,
        other_tools,
        param_names,
    };
    rules::check_item(&ctx, out);
}

/// Runs every rule over the inventories (no pin).
pub fn scan_inventories(invs: &[Inventory]) -> ScanReport {
    let names = |inv: &Inventory| -> BTreeSet<String> {
        inv.tools
            .iter()
            .map(|t| fields::name_of(t).to_string())
            .collect()
    };
    let mut findings = Vec::new();
    let mut servers = Vec::new();
    for inv in invs {
        let own = names(inv);
        let mut others: BTreeMap<String, BTreeSet<String>> = BTreeMap::new();
        for o in invs.iter().filter(|o| o.server != inv.server) {
            for n in names(o) {
                others.entry(n).or_default().insert(o.server.clone());
            }
        }
        let listed =
            |kind: ItemKind, items: &[Value], findings: &mut Vec<Finding>| -> Vec<Listed> {
                items
                    .iter()
                    .map(|item| {
                        let before = findings.len();
                        item_findings(&inv.server, kind, item, &own, &others, findings);
                        Listed {
                            name: fields::name_of(item).to_string(),
                            sha256: (kind == ItemKind::Tool)
                                .then(|| canonical::sha256(&canonical::tool_definition(item))),
                            findings: findings.len() - before,
                        }
                    })
                    .collect()
            };
        let mut tools = listed(ItemKind::Tool, &inv.tools, &mut findings);
        if let Some(later) = &inv.tools_relisted {
            relisted_findings(inv, later, &own, &others, &mut findings, &mut tools);
        }
        let prompts = listed(ItemKind::Prompt, &inv.prompts, &mut findings);
        let resources = listed(ItemKind::Resource, &inv.resources, &mut findings);
        servers.push(ServerReport {
            server: inv.server.clone(),
            transport: inv.transport.clone(),
            server_info: inv.server_info.clone(),
            tools,
            prompts,
            resources,
            notes: inv.notes.clone(),
        });
    }
    let by_server: Vec<(&str, Vec<&str>)> = invs
        .iter()
        .map(|i| {
            (
                i.server.as_str(),
                i.tools.iter().map(fields::name_of).collect(),
            )
        })
        .collect();
    let before = findings.len();
    rules::name_collision::check(&by_server, &mut findings);
    for f in &findings[before..] {
        bump(&mut servers, f);
    }
    ScanReport {
        format: REPORT_FORMAT.into(),
        servers,
        errors: Vec::new(),
        findings,
        pin: None,
        review: None,
    }
}

/// Tools whose definition changed between two listings of one session: a `rug_pull`
/// each, and the rules over the new definition.
fn relisted_findings(
    inv: &Inventory,
    later: &[Value],
    own: &BTreeSet<String>,
    others: &BTreeMap<String, BTreeSet<String>>,
    findings: &mut Vec<Finding>,
    tools: &mut [Listed],
) {
    let first: BTreeMap<&str, String> = inv
        .tools
        .iter()
        .map(|t| {
            (
                fields::name_of(t),
                canonical::sha256(&canonical::tool_definition(t)),
            )
        })
        .collect();
    for t in later {
        let name = fields::name_of(t);
        let d = canonical::tool_definition(t);
        let digest = canonical::sha256(&d);
        let before = findings.len();
        match first.get(name) {
            Some(f) if *f == digest => continue,
            Some(f) => findings.push(Finding {
                server: inv.server.clone(),
                kind: ItemKind::Tool,
                item: name.to_string(),
                rule: crate::pin::RUG_PULL,
                severity: Severity::High,
                location: String::new(),
                text: crate::finding::excerpt(&canonical::to_string(&d)),
                message: format!("the definition changed between two tools/list calls of one session (sha256 {} → {})", &f[..12], &digest[..12]),
            }),
            None => findings.push(Finding {
                server: inv.server.clone(),
                kind: ItemKind::Tool,
                item: name.to_string(),
                rule: crate::pin::PIN_DRIFT,
                severity: Severity::Medium,
                location: String::new(),
                text: crate::finding::excerpt(&canonical::to_string(&d)),
                message: "a tool that appeared on a second tools/list of the same session".into(),
            }),
        }
        let mut more = Vec::new();
        item_findings(&inv.server, ItemKind::Tool, t, own, others, &mut more);
        for mut f in more {
            f.location = format!("(second tools/list){}", f.location);
            findings.push(f);
        }
        if let Some(l) = tools.iter_mut().find(|l| l.name == name) {
            l.findings += findings.len() - before;
        }
    }
}

fn bump(servers: &mut [ServerReport], f: &Finding) {
    if let Some(s) = servers.iter_mut().find(|s| s.server == f.server)
        && let Some(t) = s.tools.iter_mut().find(|t| t.name == f.item)
    {
        t.findings += 1;
    }
}

/// The pins of the scanned tools, and their canonical definitions.
pub fn pins_of(invs: &[Inventory]) -> (Pins, BTreeMap<(String, String), String>) {
    let mut pins = Pins::new();
    let mut defs = BTreeMap::new();
    for inv in invs {
        for t in &inv.tools {
            let key = (inv.server.clone(), fields::name_of(t).to_string());
            let d = canonical::tool_definition(t);
            pins.insert(key.clone(), canonical::sha256(&d));
            defs.insert(key, canonical::to_string(&d));
        }
    }
    (pins, defs)
}

/// Checks (or writes, on first use) the pin file and adds its findings to `report`.
/// With `update`, the file is rewritten with what this scan saw after the comparison.
/// Servers that could not be scanned are left out of both.
pub fn apply_pin(
    report: &mut ScanReport,
    invs: &[Inventory],
    path: &Path,
    update: bool,
) -> Result<(), PinError> {
    let (now, defs) = pins_of(invs);
    let shown = path.display().to_string();
    match pin::read(path)? {
        None => {
            pin::write(path, &now)?;
            report.pin = Some(PinOutcome {
                file: shown,
                action: "written".into(),
                tools: now.len(),
            });
        }
        Some(pinned) => {
            let new = pin::compare(&pinned, &now, &defs);
            for f in &new {
                bump(&mut report.servers, f);
            }
            report.findings.extend(new);
            if update {
                let mut merged = pinned;
                let scanned: BTreeSet<&String> = invs.iter().map(|i| &i.server).collect();
                merged.retain(|(s, _), _| !scanned.contains(s));
                merged.extend(now.clone());
                pin::write(path, &merged)?;
                report.pin = Some(PinOutcome {
                    file: shown,
                    action: "updated".into(),
                    tools: merged.len(),
                });
            } else {
                report.pin = Some(PinOutcome {
                    file: shown,
                    action: "checked".into(),
                    tools: pinned_len(path),
                });
            }
        }
    }
    Ok(())
}

fn pinned_len(path: &Path) -> usize {
    pin::read(path).ok().flatten().map_or(0, |p| p.len())
}

/// What the default gate (`mcp-scan --fail-on low`) makes of one tool definition scanned
/// beside `neighbours`: whether a finding on it is at or above [`DEFAULT_GATE`], and the
/// rules of those findings. This is what the labelled-set benchmark scores.
pub fn verdict(tool: &Value, neighbours: &[Inventory]) -> (bool, Vec<Rule>) {
    let mut invs = vec![Inventory::offline("candidate", vec![tool.clone()])];
    invs.extend(neighbours.iter().cloned());
    let r = scan_inventories(&invs);
    let mut rules: Vec<Rule> = r
        .findings
        .iter()
        .filter(|f| f.server == "candidate" && f.severity >= DEFAULT_GATE)
        .map(|f| f.rule)
        .collect();
    rules.sort();
    rules.dedup();
    (!rules.is_empty(), rules)
}

/// The severity `mcp-scan` fails on by default.
pub const DEFAULT_GATE: Severity = Severity::Low;

#[cfg(test)]
mod tests {
    use super::{Inventory, ToolsFileError};
    use proptest::prelude::*;

    #[test]
    fn tools_files_are_arrays_or_tools_list_results() {
        let a = Inventory::from_tools_json(
            "f",
            r#"[{"name": "a"}, {"name": "b", "description": "x"}]"#,
        )
        .unwrap();
        assert_eq!(a.tools.len(), 2);
        assert_eq!(a.transport, "file");
        let l =
            Inventory::from_tools_json("f", r#"{"tools": [{"name": "a"}], "nextCursor": null}"#)
                .unwrap();
        assert_eq!(l.tools.len(), 1);
        assert!(
            Inventory::from_tools_json("f", "[]")
                .unwrap()
                .tools
                .is_empty()
        );
    }

    #[test]
    fn bad_tools_files_say_what_is_wrong_and_where() {
        let e = |t: &str| Inventory::from_tools_json("f", t).unwrap_err();
        assert!(matches!(e("{"), ToolsFileError::Json(_)));
        assert_eq!(e("3"), ToolsFileError::Shape("a number"));
        assert_eq!(
            e("{\"x\": 1}"),
            ToolsFileError::Shape("an object without `tools`")
        );
        assert_eq!(e("[]x").to_string().split(':').next(), Some("not JSON"));
        assert_eq!(
            e("true").to_string(),
            "expected an array of tool definitions or a tools/list result ({\"tools\": [...]}), found a boolean"
        );
        assert_eq!(
            e("{\"tools\": {}}").to_string(),
            "`tools` is an object, not an array of tool definitions"
        );
        assert_eq!(
            e("[{\"name\": \"a\"}, 2]"),
            ToolsFileError::Tool {
                index: 1,
                why: "is not an object"
            }
        );
        assert_eq!(
            e("[{\"title\": \"a\"}]").to_string(),
            "tool 0: has no `name`"
        );
        assert_eq!(
            e("[{\"name\": 1}]").to_string(),
            "tool 0: `name` is not a string"
        );
    }

    proptest! {
        /// Any text is an inventory or an error, never a panic.
        #[test]
        fn any_tools_file_reads_or_errs(s in ".{0,200}") {
            let _ = Inventory::from_tools_json("f", &s);
        }

        #[test]
        fn any_json_tools_file_reads_or_errs(v in proptest::collection::vec(proptest::option::of("[a-z]{0,4}"), 0..5)) {
            let tools: Vec<serde_json::Value> = v.iter().map(|n| match n {
                Some(n) => serde_json::json!({"name": n}),
                None => serde_json::json!({"description": "no name"}),
            }).collect();
            let r = Inventory::from_tools_json("f", &serde_json::Value::Array(tools).to_string());
            prop_assert_eq!(r.is_ok(), v.iter().all(Option::is_some));
        }
    }
}
