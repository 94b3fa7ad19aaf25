//! promptfoo's results file (`promptfoo eval -o results.json`, red-team runs included).
//!
//! Each result is one test case × prompt × provider: the rendered prompt
//! (`prompt.raw`), the provider's reply (`response.output`) or error, and the grading:
//! one `componentResults` entry per assertion, each with `pass`. A failed assertion is a
//! hit (`promptfoo:<assertion type>`: for a red-team plugin's grader, the attack
//! succeeded); a result with no grading, an assertion without `pass`, or one promptfoo
//! failed because it could not read its grader's reply (`Could not extract JSON from
//! llm-rubric response`), is an error.
//! A result that errored (`failureReason` 2, or a `response.error`) is an errored
//! attempt; a result whose assertions failed (`failureReason` 1) is not.
//! Repeats of one test (`--repeat`) are the generations of its prompt.
//!
//! promptfoo exits with 100 when some tests failed: the file it wrote then is complete.

use super::ImportError;
use super::record::{Generation, Imported, Record, Tool, ToolVerdict, VerdictValue, open, shown};
use serde::Deserialize;
use serde_json::Value;
use std::collections::BTreeMap;
use std::io::BufReader;
use std::path::Path;

/// The largest results file accepted (it is one JSON document, read as it streams).
pub const FILE_MAX: u64 = 4 << 30;
const HELP: &str = "give the JSON file `promptfoo eval -o results.json` wrote";

#[derive(Deserialize)]
struct File {
    results: Results,
    #[serde(default)]
    metadata: Option<Meta>,
}

#[derive(Deserialize)]
struct Meta {
    #[serde(default, rename = "promptfooVersion")]
    version: Option<String>,
}

#[derive(Deserialize)]
struct Results {
    #[serde(default)]
    version: Option<Value>,
    results: Vec<Row>,
}

#[derive(Deserialize)]
struct Row {
    #[serde(default, rename = "promptIdx")]
    prompt_idx: Option<u64>,
    #[serde(default, rename = "testIdx")]
    test_idx: Option<u64>,
    #[serde(default)]
    prompt: Option<Prompt>,
    #[serde(default)]
    provider: Option<Provider>,
    #[serde(default)]
    response: Option<Response>,
    #[serde(default)]
    error: Option<Value>,
    #[serde(default, rename = "failureReason")]
    failure_reason: Option<u64>,
    #[serde(default, rename = "gradingResult")]
    grading: Option<Grading>,
    #[serde(default, rename = "testCase")]
    test_case: Option<TestCase>,
}

#[derive(Deserialize)]
struct Prompt {
    #[serde(default)]
    raw: Option<String>,
}

#[derive(Deserialize)]
struct Provider {
    #[serde(default)]
    id: Option<String>,
    #[serde(default)]
    label: Option<String>,
}

#[derive(Deserialize)]
struct Response {
    #[serde(default)]
    output: Option<Value>,
    #[serde(default)]
    error: Option<Value>,
}

#[derive(Deserialize)]
struct Grading {
    #[serde(default)]
    pass: Option<bool>,
    #[serde(default)]
    score: Option<f64>,
    #[serde(default)]
    reason: Option<String>,
    #[serde(default, rename = "componentResults")]
    components: Option<Vec<Component>>,
}

#[derive(Deserialize)]
struct Component {
    #[serde(default)]
    pass: Option<bool>,
    #[serde(default)]
    score: Option<f64>,
    #[serde(default)]
    reason: Option<String>,
    #[serde(default)]
    assertion: Option<Assertion>,
}

#[derive(Deserialize)]
struct Assertion {
    #[serde(default, rename = "type")]
    kind: Option<String>,
}

#[derive(Deserialize)]
struct TestCase {
    #[serde(default)]
    metadata: Option<Value>,
}

/// Reads a promptfoo results file.
pub fn parse_file(path: &Path) -> Result<Imported, ImportError> {
    let file = open(path, "promptfoo", FILE_MAX)?;
    parse(BufReader::with_capacity(1 << 16, file), path)
}

/// Reads promptfoo results from `reader`; `path` names it in messages.
pub fn parse(reader: impl std::io::Read, path: &Path) -> Result<Imported, ImportError> {
    let file: File = serde_json::from_reader(reader).map_err(|e| {
        ImportError::format(
            path,
            format!("line {} column {}", e.line(), e.column()),
            format!("not a promptfoo results file: {e}"),
            HELP,
        )
    })?;
    if let Some(v) = &file.results.version
        && v.as_u64().is_some_and(|v| v < 2)
    {
        return Err(ImportError::format(
            path,
            "results.version",
            format!(
                "results version {v}: files of promptfoo before results version 2 are not read"
            ),
            HELP,
        ));
    }
    let mut targets: Vec<String> = Vec::new();
    // (promptIdx, testIdx) → record; order of first appearance kept separately.
    let mut order: Vec<(u64, u64)> = Vec::new();
    let mut records: BTreeMap<(u64, u64), Record> = BTreeMap::new();
    for (i, row) in file.results.results.into_iter().enumerate() {
        let place = format!("results.results[{i}]");
        let prompt = row.prompt.and_then(|p| p.raw).ok_or_else(|| {
            ImportError::format(path, &place, "no `prompt.raw` (the prompt sent)", HELP)
        })?;
        let target = row
            .provider
            .map(|p| match (p.label.filter(|l| !l.is_empty()), p.id) {
                (Some(l), _) => l,
                (None, Some(id)) => id,
                (None, None) => "promptfoo provider".into(),
            })
            .unwrap_or_else(|| "promptfoo provider".into());
        if !targets.contains(&target) {
            targets.push(target);
        }
        // The attack a red-team prompt belongs to is its plugin × strategy: a strategy
        // (base64, jailbreak) wraps each plugin's requests, so how far it gets depends on
        // the plugin, and promptfoo's own report tallies the pair. A prompt of no
        // strategy is its plugin's plain request; a plain eval (no plugin) is one attack.
        let source = row
            .test_case
            .as_ref()
            .and_then(|t| {
                let m = t.metadata.as_ref();
                let plugin = m.and_then(|m| m.get("pluginId")).and_then(Value::as_str);
                let strategy = m.and_then(|m| m.get("strategyId")).and_then(Value::as_str);
                match (plugin, strategy) {
                    (Some(p), Some(s)) => Some(format!("{p}/{s}")),
                    (Some(p), None) => Some(p.to_string()),
                    _ => None,
                }
            })
            .unwrap_or_else(|| "promptfoo".into());
        // A result's own `error` is also set when an assertion failed (failureReason 1,
        // the grader's reason): only with failureReason 2 is it the call's error.
        let error = row
            .response
            .as_ref()
            .and_then(|r| r.error.as_ref())
            .or(row.error.as_ref().filter(|_| row.failure_reason == Some(2)))
            .filter(|e| !e.is_null())
            .map(value_text);
        let reply = match (error, row.failure_reason) {
            (Some(e), _) => Err(format!("promptfoo recorded an error: {e}")),
            (None, Some(2)) => Err("promptfoo recorded an error (failureReason 2)".into()),
            (None, _) => match row.response.and_then(|r| r.output) {
                Some(Value::Null) | None => Err("promptfoo recorded no output".into()),
                Some(v) => Ok(value_text(&v)),
            },
        };
        let verdicts = grading_verdicts(row.grading);
        let key = (
            row.prompt_idx.unwrap_or(0),
            row.test_idx.unwrap_or(i as u64),
        );
        let rec = records.entry(key).or_insert_with(|| {
            order.push(key);
            Record {
                source,
                prompt,
                generations: Vec::new(),
            }
        });
        rec.generations.push(Generation { reply, verdicts });
    }
    if targets.len() > 1 {
        return Err(ImportError::Mixed {
            path: path.to_path_buf(),
            what: "providers",
            values: targets,
        });
    }
    if order.is_empty() {
        return Err(ImportError::Empty {
            path: path.to_path_buf(),
            what: "promptfoo result",
        });
    }
    let records = order
        .into_iter()
        .filter_map(|k| records.remove(&k))
        .collect();
    Ok(Imported {
        tool: Tool::Promptfoo,
        tool_version: file
            .metadata
            .and_then(|m| m.version)
            .unwrap_or_else(|| "unknown".into()),
        target: targets.pop().unwrap_or_default(),
        records,
        notes: Vec::new(),
    })
}

fn value_text(v: &Value) -> String {
    match v {
        Value::String(s) => s.clone(),
        other => other.to_string(),
    }
}

fn grading_verdicts(g: Option<Grading>) -> Vec<ToolVerdict> {
    let Some(g) = g else {
        return Vec::new();
    };
    let components = g.components.unwrap_or_default();
    if components.is_empty() {
        return vec![ToolVerdict {
            judge: "promptfoo:result".into(),
            value: decided(g.pass, g.score, g.reason.as_deref(), "the result"),
        }];
    }
    let mut out: Vec<ToolVerdict> = Vec::new();
    for c in components {
        let kind = c
            .assertion
            .and_then(|a| a.kind)
            .unwrap_or_else(|| "assertion".into());
        let kind = kind.strip_prefix("promptfoo:").unwrap_or(&kind).to_string();
        let mut judge = format!("promptfoo:{kind}");
        let mut n = 1;
        while out.iter().any(|v| v.judge == judge) {
            n += 1;
            judge = format!("promptfoo:{kind}#{n}");
        }
        let value = decided(c.pass, c.score, c.reason.as_deref(), &kind);
        out.push(ToolVerdict { judge, value });
    }
    out
}

fn decided(
    pass: Option<bool>,
    score: Option<f64>,
    reason: Option<&str>,
    what: &str,
) -> VerdictValue {
    match pass {
        // promptfoo records a grader reply it could not read as a failed assertion;
        // it is no verdict at all, so an error here, never a hit.
        Some(false) if reason.is_some_and(unreadable_grading) => VerdictValue::Unreadable(format!(
            "promptfoo could not read its grader's verdict for {}: {}",
            shown(what),
            shown(reason.unwrap_or_default())
        )),
        Some(p) => VerdictValue::Decided {
            hit: !p,
            score,
            reason: format!(
                "promptfoo {}: {}{}",
                shown(what),
                if p { "passed" } else { "failed" },
                reason
                    .map(|r| format!(" ({})", shown(r)))
                    .unwrap_or_default()
            ),
        },
        None => VerdictValue::Unreadable(format!(
            "promptfoo recorded no pass/fail for {}",
            shown(what)
        )),
    }
}

/// The reasons promptfoo 0.123 gives a model-graded assertion whose grader reply it
/// could not parse (`Could not extract JSON from llm-rubric response`, `factuality
/// produced malformed response`, …).
fn unreadable_grading(reason: &str) -> bool {
    (reason.starts_with("Could not extract JSON from ") && reason.ends_with(" response"))
        || reason.ends_with(" produced malformed response")
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    fn parse_str(s: &str) -> Result<Imported, ImportError> {
        parse(s.as_bytes(), Path::new("results.json"))
    }

    #[test]
    fn a_failed_assertion_is_a_hit_and_no_grading_is_no_verdict() {
        let s = r#"{"results": {"version": 3, "results": [
            {"promptIdx": 0, "testIdx": 0, "prompt": {"raw": "a"}, "provider": {"id": "echo", "label": ""},
             "response": {"output": "a"}, "gradingResult": {"pass": false, "componentResults": [
               {"pass": false, "score": 0, "reason": "no", "assertion": {"type": "icontains"}},
               {"pass": true, "assertion": {"type": "icontains"}}]}},
            {"promptIdx": 0, "testIdx": 1, "prompt": {"raw": "b"}, "provider": {"id": "echo"},
             "response": {"error": "timeout"}, "failureReason": 2}
        ]}, "metadata": {"promptfooVersion": "0.123.1"}}"#;
        let imp = parse_str(s).unwrap();
        assert_eq!(imp.tool_version, "0.123.1");
        assert_eq!(imp.target, "echo");
        let v = &imp.records[0].generations[0].verdicts;
        assert_eq!(v[0].judge, "promptfoo:icontains");
        assert_eq!(v[1].judge, "promptfoo:icontains#2");
        assert!(matches!(
            v[0].value,
            VerdictValue::Decided { hit: true, .. }
        ));
        assert!(imp.records[1].generations[0].reply.is_err());
        assert!(imp.records[1].generations[0].verdicts.is_empty());
    }

    #[test]
    fn deep_nesting_is_an_error_not_a_crash() {
        let deep = format!("{}{}", "[".repeat(100_000), "]".repeat(100_000));
        let s = format!(
            r#"{{"results": {{"results": [{{"prompt": {{"raw": "a"}}, "response": {{"output": {deep}}}}}]}}}}"#
        );
        let e = parse_str(&s).unwrap_err().to_string();
        assert!(e.contains("recursion limit"), "{e}");
    }

    proptest! {
        #[test]
        fn any_text_gives_a_result_or_an_error(s in "\\PC{0,400}") {
            let _ = parse_str(&s);
        }
    }
}
