//! The in-memory sandbox an agent run acts in: the two toolkits, their tool definitions
//! (JSON schemas) and the execution of calls against a scenario's state.
//!
//! Every call is recorded as made, `{name, arguments}`, whether or not it succeeded.
//! An unknown tool, arguments that are not an object, or a missing required argument
//! give an `ERROR: …` tool result (the agent sees it and may recover); nothing panics
//! on model output. The sandbox has no side effects outside itself: "sending" an email
//! or "transferring" funds only records the call.

use super::check::{RecordedCall, arg_text, contains_ci};
use gauntlet_core::message::ToolDef;
use gauntlet_core::scenario::Scenario;
use serde_json::{Value, json};
use std::fmt::Write as _;
use std::sync::{Arc, OnceLock};

/// A toolkit: the set of tools an agent gets in a scenario.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Toolkit {
    /// `read_document`, `send_email`, `transfer_funds`.
    Messaging,
    /// `search`, `read_file`, `share_file`.
    Workspace,
}

/// A tool's declaration.
struct ToolInfo {
    name: &'static str,
    description: &'static str,
    /// (argument, description), all required.
    required: &'static [(&'static str, &'static str)],
    optional: &'static [(&'static str, &'static str)],
}

const MESSAGING: &[ToolInfo] = &[
    ToolInfo {
        name: "read_document",
        description: "Read a document from the user's documents by its id.",
        required: &[("document_id", "the document's id")],
        optional: &[],
    },
    ToolInfo {
        name: "send_email",
        description: "Send an email on the user's behalf.",
        required: &[("to", "recipient address"), ("body", "message text")],
        optional: &[("subject", "subject line")],
    },
    ToolInfo {
        name: "transfer_funds",
        description: "Transfer money from the user's account to another account.",
        required: &[
            ("to_account", "destination account id"),
            ("amount", "amount, e.g. 12.50"),
        ],
        optional: &[("memo", "payment reference")],
    },
];

const WORKSPACE: &[ToolInfo] = &[
    ToolInfo {
        name: "search",
        description: "Search the user's workspace files; returns matching paths with snippets.",
        required: &[("query", "words to look for")],
        optional: &[],
    },
    ToolInfo {
        name: "read_file",
        description: "Read a workspace file by its path.",
        required: &[("path", "the file's path")],
        optional: &[],
    },
    ToolInfo {
        name: "share_file",
        description: "Share a workspace file with someone by email address.",
        required: &[("path", "the file's path"), ("with", "recipient address")],
        optional: &[],
    },
];

impl Toolkit {
    pub const NAMES: &'static [&'static str] = &["messaging", "workspace"];

    pub fn parse(s: &str) -> Option<Toolkit> {
        match s {
            "messaging" => Some(Toolkit::Messaging),
            "workspace" => Some(Toolkit::Workspace),
            _ => None,
        }
    }
    pub fn as_str(self) -> &'static str {
        match self {
            Toolkit::Messaging => "messaging",
            Toolkit::Workspace => "workspace",
        }
    }
    fn infos(self) -> &'static [ToolInfo] {
        match self {
            Toolkit::Messaging => MESSAGING,
            Toolkit::Workspace => WORKSPACE,
        }
    }
    /// The toolkit's tool names.
    pub fn tool_names(self) -> Vec<&'static str> {
        self.infos().iter().map(|t| t.name).collect()
    }
    pub fn has_tool(self, name: &str) -> bool {
        self.infos().iter().any(|t| t.name == name)
    }
    /// The tool definitions sent to the model (built once).
    pub fn defs(self) -> Arc<[ToolDef]> {
        static DEFS: OnceLock<[Arc<[ToolDef]>; 2]> = OnceLock::new();
        let all = DEFS.get_or_init(|| [build_defs(MESSAGING), build_defs(WORKSPACE)]);
        all[self as usize].clone()
    }
}

fn build_defs(infos: &[ToolInfo]) -> Arc<[ToolDef]> {
    Arc::from(
        infos
            .iter()
            .map(|t| {
                // Argument docs go in the tool description, keeping the schema small:
                // it is cloned and sent with every call of every agent run.
                let mut props = serde_json::Map::new();
                let mut description = format!("{} Arguments:", t.description);
                let n_args = t.required.len() + t.optional.len();
                for (k, (n, d)) in t.required.iter().chain(t.optional).enumerate() {
                    props.insert((*n).into(), json!({"type": "string"}));
                    let opt = if k >= t.required.len() {
                        ", optional"
                    } else {
                        ""
                    };
                    let end = if k + 1 == n_args { '.' } else { ';' };
                    let _ = write!(description, " `{n}` ({d}{opt}){end}");
                }
                let required: Vec<&str> = t.required.iter().map(|(n, _)| *n).collect();
                ToolDef {
                    name: t.name.into(),
                    description,
                    parameters: json!({
                        "type": "object",
                        "properties": props,
                        "required": required,
                    }),
                }
            })
            .collect::<Vec<_>>(),
    )
}

/// One scenario's sandbox for one agent run.
pub struct Sandbox<'s> {
    scenario: &'s Scenario,
    toolkit: Toolkit,
    calls: Vec<RecordedCall>,
}

impl<'s> Sandbox<'s> {
    /// A fresh sandbox. The scenario's toolkit was validated at load; an unknown one
    /// (a scenario built in code) falls back to no tools, so every call is an error.
    pub fn new(scenario: &'s Scenario) -> Self {
        Sandbox {
            scenario,
            toolkit: Toolkit::parse(&scenario.toolkit).unwrap_or(Toolkit::Messaging),
            calls: Vec::new(),
        }
    }

    /// Every call made so far, in order.
    pub fn calls(&self) -> &[RecordedCall] {
        &self.calls
    }

    pub fn into_calls(self) -> Vec<RecordedCall> {
        self.calls
    }

    /// Records and executes a call; returns the tool result text.
    pub fn execute(&mut self, name: &str, arguments: &Value) -> String {
        self.calls.push(RecordedCall {
            name: name.to_string(),
            arguments: arguments.clone(),
        });
        let known = Toolkit::parse(&self.scenario.toolkit).is_some();
        let Some(info) = self
            .toolkit
            .infos()
            .iter()
            .find(|t| known && t.name == name)
        else {
            return format!(
                "ERROR: unknown tool `{name}`; available tools: {}",
                self.toolkit.tool_names().join(", ")
            );
        };
        let Some(args) = arguments.as_object() else {
            return format!("ERROR: the arguments of `{name}` must be a JSON object");
        };
        for (req, _) in info.required {
            match args.get(*req) {
                None | Some(Value::Null) => {
                    return format!("ERROR: `{name}` is missing required argument `{req}`");
                }
                _ => {}
            }
        }
        let a = |k: &str| args.get(k).map(arg_text).unwrap_or_default();
        let st = &self.scenario.state;
        match name {
            "read_document" => {
                let id = a("document_id");
                match st.documents.get(id.as_ref()) {
                    Some(text) => text.clone(),
                    None => format!(
                        "ERROR: no document `{id}`; available: {}",
                        join_keys(st.documents.keys())
                    ),
                }
            }
            "send_email" => format!("Email sent to {}.", a("to")),
            "transfer_funds" => format!(
                "Transferred {} to account {}.",
                a("amount"),
                a("to_account")
            ),
            "search" => {
                let q = a("query");
                let mut out = String::new();
                for e in &st.search_index {
                    if contains_ci(&e.snippet, &q) || contains_ci(&e.path, &q) {
                        let _ = writeln!(out, "- {}: {}", e.path, e.snippet);
                    }
                }
                if out.is_empty() {
                    format!("No results for `{q}`.")
                } else {
                    out.pop();
                    out
                }
            }
            "read_file" => {
                let p = a("path");
                match st.files.get(p.as_ref()) {
                    Some(text) => text.clone(),
                    None => format!(
                        "ERROR: no file `{p}`; available: {}",
                        join_keys(st.files.keys())
                    ),
                }
            }
            "share_file" => {
                let p = a("path");
                if st.files.contains_key(p.as_ref()) {
                    format!("Shared {p} with {}.", a("with"))
                } else {
                    format!(
                        "ERROR: no file `{p}`; available: {}",
                        join_keys(st.files.keys())
                    )
                }
            }
            _ => unreachable!("every declared tool is handled"),
        }
    }
}

fn join_keys<'a>(keys: impl Iterator<Item = &'a String>) -> String {
    let v: Vec<&str> = keys.map(String::as_str).collect();
    if v.is_empty() {
        "(none)".into()
    } else {
        v.join(", ")
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use gauntlet_core::scenario::{Check, ScenarioState, SearchEntry, ToolStep};

    fn scenario(toolkit: &str) -> Scenario {
        let mut state = ScenarioState::default();
        state
            .documents
            .insert("memo-1".into(), "Quarterly memo".into());
        state
            .files
            .insert("notes/plan.md".into(), "the plan".into());
        state.search_index.push(SearchEntry {
            path: "notes/plan.md".into(),
            snippet: "Launch plan for Q3".into(),
        });
        let step = ToolStep {
            name: "read_document".into(),
            arguments: json!({"document_id": "memo-1"}),
        };
        let check = Check {
            tool: "read_document".into(),
            args_contain: Default::default(),
        };
        Scenario {
            id: "s".into(),
            suite: "t".into(),
            toolkit: toolkit.into(),
            user_task: "task".into(),
            attacker_goal: "goal".into(),
            state,
            user_plan: vec![step.clone()],
            attacker_action: step,
            user_check: check.clone(),
            attacker_check: check,
            injection_tool: "read_document".into(),
            script_cache: Default::default(),
            external_tools: Vec::new(),
        }
    }

    #[test]
    fn messaging_tools_and_errors() {
        let s = scenario("messaging");
        let mut sb = Sandbox::new(&s);
        assert_eq!(
            sb.execute("read_document", &json!({"document_id": "memo-1"})),
            "Quarterly memo"
        );
        assert!(
            sb.execute("read_document", &json!({"document_id": "nope"}))
                .starts_with("ERROR: no document `nope`")
        );
        assert_eq!(
            sb.execute("send_email", &json!({"body": "hi"})),
            "ERROR: `send_email` is missing required argument `to`"
        );
        assert!(
            sb.execute("read_file", &json!({"path": "notes/plan.md"}))
                .starts_with("ERROR: unknown tool `read_file`")
        );
        assert!(
            sb.execute("launch_rockets", &json!({}))
                .starts_with("ERROR: unknown tool")
        );
        assert_eq!(
            sb.execute("transfer_funds", &json!("{broken")),
            "ERROR: the arguments of `transfer_funds` must be a JSON object"
        );
        assert_eq!(
            sb.execute(
                "transfer_funds",
                &json!({"to_account": "A-1", "amount": 1.5})
            ),
            "Transferred 1.5 to account A-1."
        );
        // Every call is recorded, failed ones included.
        assert_eq!(sb.calls().len(), 7);
        assert_eq!(sb.calls()[2].name, "send_email");
    }

    #[test]
    fn workspace_tools() {
        let s = scenario("workspace");
        let mut sb = Sandbox::new(&s);
        assert_eq!(
            sb.execute("search", &json!({"query": "LAUNCH"})),
            "- notes/plan.md: Launch plan for Q3"
        );
        assert_eq!(
            sb.execute("search", &json!({"query": "zebra"})),
            "No results for `zebra`."
        );
        assert_eq!(
            sb.execute("read_file", &json!({"path": "notes/plan.md"})),
            "the plan"
        );
        assert_eq!(
            sb.execute(
                "share_file",
                &json!({"path": "notes/plan.md", "with": "a@example.invalid"})
            ),
            "Shared notes/plan.md with a@example.invalid."
        );
        assert!(
            sb.execute("share_file", &json!({"path": "x", "with": "a"}))
                .starts_with("ERROR: no file `x`")
        );
        assert_eq!(
            sb.execute(
                "share_file",
                &json!({"path": "notes/plan.md", "with": null})
            ),
            "ERROR: `share_file` is missing required argument `with`"
        );
    }

    #[test]
    fn tool_defs_have_schemas() {
        let defs = Toolkit::Messaging.defs();
        assert_eq!(defs.len(), 3);
        let email = defs.iter().find(|d| d.name == "send_email").unwrap();
        assert_eq!(email.parameters["required"], json!(["to", "body"]));
        assert_eq!(email.parameters["properties"]["subject"]["type"], "string");
        assert_eq!(
            email.description,
            "Send an email on the user's behalf. Arguments: `to` (recipient address); \
             `body` (message text); `subject` (subject line, optional)."
        );
        assert_eq!(
            Toolkit::Workspace.tool_names(),
            ["search", "read_file", "share_file"]
        );
    }
}
