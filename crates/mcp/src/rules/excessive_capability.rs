//! `excessive_capability`: a parameter that lets the model reach far more than the task
//! needs — a string with no `enum`, `const` or `pattern` whose name (or `format`) makes
//! it a command, code, SQL, path or URL.
//!
//! Severity follows whether the tool's stated purpose explains the capability:
//! - a file path or URL is `info` (a filesystem, git or fetch server's path and URL
//!   parameters are its purpose, and what confines them is the server's own check, which
//!   a schema cannot show; an honest server must pass the default gate);
//! - a shell command, code to evaluate or a raw SQL statement is `info` when the tool's
//!   name or description says it runs commands, code or queries (a terminal tool's
//!   `command`), and `medium` when nothing in it does (a `shell_command` parameter on a
//!   tip calculator is a capability outside the tool's purpose).
//!
//! An ambiguous name (`code`, `query`, `expression`) counts only when the description
//! says it is run or evaluated.

use super::context::{Ctx, re};
use crate::fields;
use crate::finding::{Check, Finding, Rule, RuleInfo, Severity};
use regex::bytes::Regex;
use serde_json::Value;
use std::sync::LazyLock;

/// What this rule is: the scanner's catalogue, SARIF and the threat map read it.
pub const RULE: Rule = Rule(&RuleInfo {
    id: "excessive_capability",
    rank: 7,
    summary: "an unconstrained command, code, SQL, path or URL parameter",
    poisoning: false,
    check: Check::Tool(check),
    threat: &[
        ("owasp_llm", &["LLM06:2025"]),
        ("owasp_agentic", &["T2", "T11"]),
        ("owasp_agentic_2026", &["ASI02", "ASI03"]),
        ("owasp_mcp", &["MCP02:2025"]),
    ],
});

const COMMAND: &[&str] = &[
    "cmd",
    "command",
    "commands",
    "shell",
    "script",
    "bash",
    "sh",
    "exec",
    "eval",
    "powershell",
    "shell_command",
    "command_line",
    "cmdline",
    "run",
];
const AMBIGUOUS_CODE: &[&str] = &[
    "code",
    "expression",
    "program",
    "snippet",
    "source_code",
    "python",
    "javascript",
    "js",
];
const SQL: &[&str] = &["sql", "sql_query", "raw_sql", "statement", "query_sql"];
const AMBIGUOUS_SQL: &[&str] = &["query", "statement"];
const PATH: &[&str] = &[
    "path",
    "paths",
    "file",
    "files",
    "filename",
    "file_name",
    "file_path",
    "filepath",
    "dir",
    "directory",
    "folder",
    "source",
    "destination",
    "target_path",
    "src",
    "dst",
    "dest",
];
const URL: &[&str] = &[
    "url",
    "uri",
    "urls",
    "endpoint",
    "href",
    "link",
    "webhook",
    "callback_url",
    "target_url",
    "webhook_url",
];

static RUNS: LazyLock<Regex> = LazyLock::new(|| {
    re(
        r"\b(execute|executes|executed|run|runs|evaluate|evaluates|eval|interpret|interprets|shell|python|javascript|bash)\b",
    )
});
static IS_SQL: LazyLock<Regex> =
    LazyLock::new(|| re(r"\b(sql|select|database|postgres|mysql|sqlite)\b"));
/// Words of a tool whose purpose is to run commands or code.
static RUNS_THINGS: LazyLock<Regex> = LazyLock::new(|| {
    re(
        r"(\b|_)(execut\w*|run|runs|running|command\w*|shell|terminal|console|bash|zsh|powershell|cmd|exec|process\w*|script\w*|cli|repl|eval\w*|interpret\w*|python|node|javascript|ruby|code|program\w*|sandbox\w*|container\w*|docker|kubectl|ssh|job\w*|task\w*|pipeline\w*|build\w*|compil\w*|test\w*|notebook|jupyter|kernel)(\b|_)",
    )
});
/// Words of a tool whose purpose is to query a database.
static QUERIES_DATA: LazyLock<Regex> = LazyLock::new(|| {
    re(
        r"(\b|_)(sql|quer(y|ies)|database\w*|db|postgres\w*|mysql|sqlite|table\w*|schema\w*|select|analytics|warehouse|bigquery|snowflake|duckdb|clickhouse|report\w*)(\b|_)",
    )
});

fn constrained(schema: &Value) -> bool {
    let s = if schema.get("type").and_then(Value::as_str) == Some("array") {
        schema.get("items").unwrap_or(schema)
    } else {
        schema
    };
    ["enum", "const", "pattern"]
        .iter()
        .any(|k| s.get(k).is_some())
}

fn is_string(schema: &Value) -> bool {
    match schema.get("type") {
        None => schema.get("properties").is_none(),
        Some(Value::String(t)) => {
            t == "string" || (t == "array" && schema.get("items").is_some_and(is_string))
        }
        Some(Value::Array(a)) => a.iter().any(|t| t == "string"),
        _ => false,
    }
}

pub fn check(ctx: &Ctx<'_>, out: &mut Vec<Finding>) {
    let tool_desc = ctx
        .item
        .get("description")
        .and_then(Value::as_str)
        .unwrap_or("")
        .to_lowercase();
    for p in fields::params(ctx.item) {
        if !is_string(p.schema) || constrained(p.schema) {
            continue;
        }
        let n = p.name.to_ascii_lowercase();
        let desc = format!(
            "{} {}",
            p.schema
                .get("description")
                .and_then(Value::as_str)
                .unwrap_or("")
                .to_lowercase(),
            tool_desc
        );
        let format = p.schema.get("format").and_then(Value::as_str).unwrap_or("");
        // What the tool says it is for: its name, its description and the parameter's.
        let purpose = format!("{} {desc}", ctx.name.to_ascii_lowercase());
        let by_purpose = |explained: bool| {
            if explained {
                Severity::Info
            } else {
                Severity::Medium
            }
        };
        let (sev, what) = if COMMAND.contains(&n.as_str())
            || n.ends_with("_command")
            || n.ends_with("_cmd")
            || n.ends_with("_script")
        {
            (
                by_purpose(RUNS_THINGS.is_match(purpose.as_bytes())),
                "a shell command or script",
            )
        } else if AMBIGUOUS_CODE.contains(&n.as_str()) && RUNS.is_match(desc.as_bytes()) {
            (
                by_purpose(RUNS_THINGS.is_match(purpose.as_bytes())),
                "code to run or evaluate",
            )
        } else if SQL.contains(&n.as_str())
            || (AMBIGUOUS_SQL.contains(&n.as_str()) && IS_SQL.is_match(desc.as_bytes()))
        {
            (
                by_purpose(QUERIES_DATA.is_match(purpose.as_bytes())),
                "a raw SQL statement",
            )
        } else if PATH.contains(&n.as_str())
            || n.ends_with("_path")
            || n.ends_with("_file")
            || n.ends_with("_dir")
        {
            (Severity::Info, "any file path")
        } else if URL.contains(&n.as_str())
            || n.ends_with("_url")
            || n.ends_with("_uri")
            || matches!(format, "uri" | "url" | "iri" | "uri-reference")
        {
            (Severity::Info, "any URL")
        } else {
            continue;
        };
        let schema = crate::canonical::to_string(p.schema);
        let why = if sev == Severity::Medium {
            "; nothing in the tool's name or description says it runs such things"
        } else {
            ""
        };
        out.push(ctx.finding(
            RULE,
            sev,
            &p.pointer,
            &format!("{}: {schema}", p.name),
            format!(
                "parameter `{}` accepts {what}: a string with no enum, const or pattern{why}",
                p.name
            ),
        ));
    }
}

#[cfg(test)]
mod tests {
    use super::super::testing::findings_with;
    use crate::finding::Severity;
    use serde_json::json;

    fn tool(props: serde_json::Value, desc: &str) -> serde_json::Value {
        json!({"name": "t", "description": desc, "inputSchema": {"type": "object", "properties": props}})
    }

    #[test]
    fn unconstrained_sinks_are_found_with_their_severity() {
        let f = findings_with(
            tool(
                json!({"command": {"type": "string"}, "path": {"type": "string"}, "target": {"type": "string", "format": "uri"}}),
                "Runs a command in the terminal.",
            ),
            &[],
        );
        let sev = |f: &[crate::finding::Finding], loc: &str| {
            f.iter()
                .find(|f| f.rule == super::RULE && f.location.ends_with(loc))
                .map(|f| f.severity)
        };
        // A terminal tool's command, any path, any URL: information.
        assert_eq!(sev(&f, "/command"), Some(Severity::Info));
        assert_eq!(sev(&f, "/path"), Some(Severity::Info));
        assert_eq!(sev(&f, "/target"), Some(Severity::Info));
        // A command parameter on a tool that says nothing of running things.
        let tip = findings_with(
            tool(
                json!({"bill": {"type": "number"}, "shell_command": {"type": "string"}}),
                "Calculates the tip for a restaurant bill.",
            ),
            &[],
        );
        assert_eq!(sev(&tip, "/shell_command"), Some(Severity::Medium));
        // The parameter's own description can give the purpose.
        let search = findings_with(
            tool(
                json!({"query": {"type": "string", "description": "The text that the API compares page and database titles against."}}),
                "Searches pages by title.",
            ),
            &[],
        );
        assert_eq!(sev(&search, "/query"), Some(Severity::Info));
        assert!(
            tip[0].message.contains("nothing in the tool's name"),
            "{tip:?}"
        );
        let sql = findings_with(
            tool(
                json!({"query": {"type": "string", "description": "A SQL SELECT to run"}}),
                "DB",
            ),
            &[],
        );
        assert_eq!(sql.len(), 1);
    }

    #[test]
    fn constrained_or_innocent_parameters_are_not() {
        for props in [
            json!({"command": {"type": "string", "enum": ["start", "stop"]}}),
            json!({"path": {"type": "string", "pattern": "^reports/[a-z0-9-]+\\.csv$"}}),
            json!({"code": {"type": "string", "description": "Two-letter country code"}}),
            json!({"query": {"type": "string", "description": "Words to search for"}}),
            json!({"count": {"type": "number"}}),
        ] {
            let f = findings_with(tool(props.clone(), "Looks things up."), &[]);
            assert!(f.is_empty(), "{props} {f:?}");
        }
    }
}
