//! `--pin FILE`: the reviewed state of every tool, to catch rug pulls.
//!
//! In the spirit of an agent-exam `corpus.pin`: a small text file with a comment header
//! and one line per tool, `tool <sha256> "<server>" "<tool>"` (names as JSON strings, so
//! any name round-trips), sorted by server and tool. The digest is the sha256 of the
//! tool's canonical definition ([`crate::canonical::tool_definition`]: name, title,
//! description, input and output schema, annotations; keys sorted).
//!
//! The first scan with `--pin FILE` writes it. Later scans compare: a tool whose digest
//! changed is a `rug_pull` (high), one added or removed since the pin is `pin_drift`
//! (medium). Servers the pin has but this scan did not reach are left out of the
//! comparison (scan a subset without losing the rest). `--update-pin` rewrites the file
//! with what this scan saw, after reporting.

use crate::fields::ItemKind;
use crate::finding::{Check, Finding, Rule, RuleInfo, Severity};
use std::collections::BTreeMap;
use std::path::Path;

/// What this rule is: the scanner's catalogue, SARIF and the threat map read it.
pub const RUG_PULL: Rule = Rule(&RuleInfo {
    id: "rug_pull",
    rank: 8,
    summary: "a definition that changed since it was pinned",
    poisoning: false,
    check: Check::Scan,
    threat: &[
        ("owasp_llm", &["LLM03:2025"]),
        ("owasp_agentic_2026", &["ASI04"]),
        ("owasp_mcp", &["MCP03:2025", "MCP04:2025"]),
        ("mitre_atlas", &["AML.T0010.005", "AML.T0053"]),
    ],
});

/// What this rule is: the scanner's catalogue, SARIF and the threat map read it.
pub const PIN_DRIFT: Rule = Rule(&RuleInfo {
    id: "pin_drift",
    rank: 9,
    summary: "a tool added or removed since the pin",
    poisoning: false,
    check: Check::Scan,
    threat: &[
        ("owasp_llm", &["LLM03:2025"]),
        ("owasp_agentic_2026", &["ASI04"]),
        ("owasp_mcp", &["MCP04:2025"]),
        ("mitre_atlas", &["AML.T0010.005"]),
    ],
});

pub const HEADER: &str = "# MCP tool pin (gauntlet mcp-scan --pin). One line per tool: the sha256 of its\n\
# canonical definition (name, title, description, inputSchema, outputSchema, annotations;\n\
# keys sorted), then the server and the tool name as JSON strings. A scan against this file\n\
# reports changed tools (rug_pull) and added or removed ones (pin_drift). After reviewing a\n\
# change, rewrite it with `gauntlet mcp-scan --pin FILE --update-pin`.\n";

/// (server, tool) → digest.
pub type Pins = BTreeMap<(String, String), String>;

/// Why a pin file could not be used.
#[derive(Debug, thiserror::Error)]
pub enum PinError {
    /// The file could not be read as a pin file (it names the file and what it found).
    #[error(transparent)]
    Read(gauntlet_core::files::ReadError),
    #[error("{}: {source}", path.display())]
    Io {
        path: std::path::PathBuf,
        source: std::io::Error,
    },
    #[error("{}:{line}: {why}; expected `tool <64 hex digits> \"<server>\" \"<tool>\"` (rewrite the file with --update-pin, or delete it to pin afresh)", path.display())]
    Syntax {
        path: std::path::PathBuf,
        line: usize,
        why: String,
    },
}

/// The pin file's text for `pins`.
pub fn render(pins: &Pins) -> String {
    let mut out = HEADER.to_string();
    for ((server, tool), digest) in pins {
        out.push_str(&format!(
            "tool {digest} {} {}\n",
            serde_json::Value::String(server.clone()),
            serde_json::Value::String(tool.clone())
        ));
    }
    out
}

/// Parses a pin file's text (`path` names it in errors).
pub fn parse(text: &str, path: &Path) -> Result<Pins, PinError> {
    let mut pins = Pins::new();
    for (i, line) in text.lines().enumerate() {
        let err = |why: &str| PinError::Syntax {
            path: path.to_path_buf(),
            line: i + 1,
            why: why.to_string(),
        };
        let line = line.trim();
        if line.is_empty() || line.starts_with('#') {
            continue;
        }
        let rest = line
            .strip_prefix("tool ")
            .ok_or_else(|| err("a line that is not a `tool` line"))?;
        let (digest, names) = rest
            .split_once(' ')
            .ok_or_else(|| err("no names after the digest"))?;
        if digest.len() != 64
            || !digest
                .bytes()
                .all(|c| c.is_ascii_hexdigit() && !c.is_ascii_uppercase())
        {
            return Err(err("the digest is not 64 lowercase hex digits"));
        }
        let mut it = serde_json::Deserializer::from_str(names).into_iter::<String>();
        let server = it
            .next()
            .and_then(Result::ok)
            .ok_or_else(|| err("the server is not a JSON string"))?;
        let tool = it
            .next()
            .and_then(Result::ok)
            .ok_or_else(|| err("the tool is not a JSON string"))?;
        if names[it.byte_offset()..].trim() != "" {
            return Err(err("text after the tool name"));
        }
        if pins.insert((server, tool), digest.to_string()).is_some() {
            return Err(err("a tool pinned twice"));
        }
    }
    Ok(pins)
}

/// Reads a pin file; `None` when it does not exist yet. Read through the capped file
/// layer: a device, a named pipe or a directory is refused by name (`--pin /dev/zero`
/// would otherwise read without end, a FIFO block for ever), and so is a file over the
/// cap of a hand-reviewed file.
pub fn read(path: &Path) -> Result<Option<Pins>, PinError> {
    use gauntlet_core::files;
    match files::read_to_string(path, PIN_FILE) {
        Ok(t) => parse(&t, path).map(Some),
        Err(e) if e.io_kind() == Some(std::io::ErrorKind::NotFound) => Ok(None),
        Err(e) => Err(PinError::Read(e)),
    }
}

/// What a pin file is, and its cap: one short line per tool, so 16 MiB is some 80,000
/// tools.
const PIN_FILE: gauntlet_core::files::Kind = gauntlet_core::files::Kind {
    what: "pin file",
    max_bytes: 16 << 20,
};

/// Writes a pin file atomically (a temporary file renamed over it).
pub fn write(path: &Path, pins: &Pins) -> Result<(), PinError> {
    let io = |source| PinError::Io {
        path: path.to_path_buf(),
        source,
    };
    let dir = path
        .parent()
        .filter(|d| !d.as_os_str().is_empty())
        .unwrap_or(Path::new("."));
    let mut tmp = tempfile::NamedTempFile::new_in(dir).map_err(io)?;
    std::io::Write::write_all(&mut tmp, render(pins).as_bytes()).map_err(io)?;
    tmp.persist(path).map_err(|e| io(e.error))?;
    Ok(())
}

/// Findings of `now` against `pinned`, over the servers `now` covers. `definitions`:
/// (server, tool) → canonical definition text, quoted in a rug-pull finding.
pub fn compare(
    pinned: &Pins,
    now: &Pins,
    definitions: &BTreeMap<(String, String), String>,
) -> Vec<Finding> {
    let servers: std::collections::BTreeSet<&String> = now.keys().map(|(s, _)| s).collect();
    let mut out = Vec::new();
    let finding = |key: &(String, String), rule, severity, text: String, message: String| Finding {
        server: key.0.clone(),
        kind: ItemKind::Tool,
        item: key.1.clone(),
        rule,
        severity,
        location: "".into(),
        text: crate::finding::excerpt(&text),
        message,
    };
    for (key, digest) in now {
        match pinned.get(key) {
            Some(p) if p == digest => {}
            Some(p) => out.push(finding(
                key,
                RUG_PULL,
                Severity::High,
                definitions.get(key).cloned().unwrap_or_default(),
                format!(
                    "the definition changed since it was pinned (sha256 {} → {})",
                    &p[..12],
                    &digest[..12]
                ),
            )),
            None => out.push(finding(
                key,
                PIN_DRIFT,
                Severity::Medium,
                definitions.get(key).cloned().unwrap_or_default(),
                "a tool added since the pin".into(),
            )),
        }
    }
    for (key, digest) in pinned {
        if servers.contains(&key.0) && !now.contains_key(key) {
            out.push(finding(
                key,
                PIN_DRIFT,
                Severity::Medium,
                String::new(),
                format!("a pinned tool is gone (was sha256 {})", &digest[..12]),
            ));
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    fn key(s: &str, t: &str) -> (String, String) {
        (s.into(), t.into())
    }

    #[test]
    fn render_and_parse_round_trip_any_name() {
        let mut p = Pins::new();
        p.insert(key("a b", "t\"1"), "0".repeat(64));
        p.insert(key("srv", "echo"), "ab".repeat(32));
        let text = render(&p);
        assert_eq!(parse(&text, Path::new("x.pin")).unwrap(), p);
        let bad = "tool 123 \"a\" \"b\"\n";
        let e = parse(bad, Path::new("x.pin")).unwrap_err().to_string();
        assert!(e.starts_with("x.pin:1: the digest is not 64"), "{e}");
        let e = parse(
            &format!("tool {} \"a\"\n", "0".repeat(64)),
            Path::new("x.pin"),
        )
        .unwrap_err()
        .to_string();
        assert!(e.contains("the tool is not a JSON string"), "{e}");
    }

    #[test]
    fn changed_added_and_removed_tools() {
        let mut pinned = Pins::new();
        pinned.insert(key("s", "same"), "1".repeat(64));
        pinned.insert(key("s", "changed"), "2".repeat(64));
        pinned.insert(key("s", "gone"), "3".repeat(64));
        pinned.insert(key("unscanned", "x"), "4".repeat(64));
        let mut now = Pins::new();
        now.insert(key("s", "same"), "1".repeat(64));
        now.insert(key("s", "changed"), "5".repeat(64));
        now.insert(key("s", "new"), "6".repeat(64));
        let f = compare(&pinned, &now, &BTreeMap::new());
        let got: Vec<(&str, Rule)> = f.iter().map(|f| (f.item.as_str(), f.rule)).collect();
        assert_eq!(
            got,
            [
                ("changed", super::RUG_PULL),
                ("new", super::PIN_DRIFT),
                ("gone", super::PIN_DRIFT)
            ]
        );
    }
}
