//! `excessive_capability`: a parameter that lets the model reach far more than the task
//! needs — a string with no `enum`, `const` or `pattern` whose name (or `format`) makes
//! it a command, code, SQL, path or URL.
//!
//! Severity follows what the capability reaches: a shell command, code to evaluate or a
//! raw SQL statement is `medium`; a file path or URL is `low` (a filesystem or fetch
//! server's path and URL parameters are its purpose, and what confines them is the
//! server's own check, which a schema cannot show). An ambiguous name (`code`, `query`,
//! `expression`) counts only when the description says it is run or evaluated.

use super::{Ctx, re};
use crate::fields;
use crate::finding::{Finding, Rule, Severity};
use regex::bytes::Regex;
use serde_json::Value;
use std::sync::LazyLock;

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
        let (sev, what) = if COMMAND.contains(&n.as_str())
            || n.ends_with("_command")
            || n.ends_with("_cmd")
            || n.ends_with("_script")
        {
            (Severity::Medium, "a shell command or script")
        } else if AMBIGUOUS_CODE.contains(&n.as_str()) && RUNS.is_match(desc.as_bytes()) {
            (Severity::Medium, "code to run or evaluate")
        } else if SQL.contains(&n.as_str())
            || (AMBIGUOUS_SQL.contains(&n.as_str()) && IS_SQL.is_match(desc.as_bytes()))
        {
            (Severity::Medium, "a raw SQL statement")
        } else if PATH.contains(&n.as_str())
            || n.ends_with("_path")
            || n.ends_with("_file")
            || n.ends_with("_dir")
        {
            (Severity::Low, "any file path")
        } else if URL.contains(&n.as_str())
            || n.ends_with("_url")
            || n.ends_with("_uri")
            || matches!(format, "uri" | "url" | "iri" | "uri-reference")
        {
            (Severity::Low, "any URL")
        } else {
            continue;
        };
        let schema = crate::canonical::to_string(p.schema);
        out.push(ctx.finding(
            Rule::ExcessiveCapability,
            sev,
            &p.pointer,
            &format!("{}: {schema}", p.name),
            format!(
                "parameter `{}` accepts {what}: a string with no enum, const or pattern",
                p.name
            ),
        ));
    }
}

#[cfg(test)]
mod tests {
    use super::super::testing::findings_with;
    use crate::finding::{Rule, Severity};
    use serde_json::json;

    fn tool(props: serde_json::Value, desc: &str) -> serde_json::Value {
        json!({"name": "t", "description": desc, "inputSchema": {"type": "object", "properties": props}})
    }

    #[test]
    fn unconstrained_sinks_are_found_with_their_severity() {
        let f = findings_with(
            tool(
                json!({"command": {"type": "string"}, "path": {"type": "string"}, "target": {"type": "string", "format": "uri"}}),
                "Runs.",
            ),
            &[],
        );
        let sev = |loc: &str| {
            f.iter()
                .find(|f| f.rule == Rule::ExcessiveCapability && f.location.ends_with(loc))
                .map(|f| f.severity)
        };
        assert_eq!(sev("/command"), Some(Severity::Medium));
        assert_eq!(sev("/path"), Some(Severity::Low));
        assert_eq!(sev("/target"), Some(Severity::Low));
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
