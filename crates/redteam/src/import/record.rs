//! The shape every tool's results are read into, and the identity of a prompt across
//! tools.

use super::ImportError;
use std::path::Path;

/// The tools whose results import.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Tool {
    Garak,
    Promptfoo,
    Inspect,
}

impl Tool {
    pub const NAMES: &'static [&'static str] = &["garak", "promptfoo", "inspect"];

    pub fn as_str(self) -> &'static str {
        match self {
            Tool::Garak => "garak",
            Tool::Promptfoo => "promptfoo",
            Tool::Inspect => "inspect",
        }
    }

    pub fn parse(s: &str) -> Option<Tool> {
        match s {
            "garak" => Some(Tool::Garak),
            "promptfoo" => Some(Tool::Promptfoo),
            "inspect" => Some(Tool::Inspect),
            _ => None,
        }
    }
}

/// One tool's results, in the file's order.
#[derive(Debug, Clone, PartialEq)]
pub struct Imported {
    pub tool: Tool,
    /// The tool's version as the file records it (`unknown` when it does not).
    pub tool_version: String,
    /// What the tool evaluated: garak's generator, promptfoo's provider, Inspect's model.
    pub target: String,
    pub records: Vec<Record>,
    /// What was read only in part (a cut-short last line, an attempt never evaluated):
    /// the import goes ahead and says so.
    pub notes: Vec<String>,
}

impl Imported {
    /// The names of the tool's verdicts (judges), in order of first appearance.
    pub fn judges(&self) -> Vec<String> {
        let mut out: Vec<String> = Vec::new();
        for r in &self.records {
            for g in &r.generations {
                for v in &g.verdicts {
                    if !out.contains(&v.judge) {
                        out.push(v.judge.clone());
                    }
                }
            }
        }
        out
    }

    /// The most replies one prompt has.
    pub fn generations(&self) -> usize {
        self.records
            .iter()
            .map(|r| r.generations.len())
            .max()
            .unwrap_or(0)
    }
}

/// One prompt the tool sent, with every reply it recorded for it.
#[derive(Debug, Clone, PartialEq)]
pub struct Record {
    /// garak's probe, promptfoo's plugin/strategy (or test description), Inspect's task.
    pub source: String,
    pub prompt: String,
    pub generations: Vec<Generation>,
}

/// One reply and the tool's verdicts on it.
#[derive(Debug, Clone, PartialEq)]
pub struct Generation {
    /// The reply, or why the tool recorded none.
    pub reply: Result<String, String>,
    pub verdicts: Vec<ToolVerdict>,
}

/// One verdict of the tool, under its own name (`garak:<detector>`,
/// `promptfoo:<assertion>`, `inspect:<scorer>`).
#[derive(Debug, Clone, PartialEq)]
pub struct ToolVerdict {
    pub judge: String,
    pub value: VerdictValue,
}

/// What the tool decided. A verdict the file does not hold or cannot be read is
/// `Unreadable`: an error outcome, never a hit.
#[derive(Debug, Clone, PartialEq)]
pub enum VerdictValue {
    /// `hit`: the tool counted the attempt against the target (a garak detector at or
    /// above its threshold, a failed promptfoo assertion, an Inspect score counted
    /// correct). `score` is the tool's number where it gives one.
    Decided {
        hit: bool,
        score: Option<f64>,
        reason: String,
    },
    Unreadable(String),
}

/// The identity of a prompt across tools: `p-` and the first 16 hex of the sha256 of
/// its normalised text (trimmed, lowercased, whitespace runs as one space), so two tools
/// that sent the same text pair whatever they called it and in whatever order.
pub fn prompt_id(prompt: &str) -> String {
    let n = gauntlet_core::text::normalize(prompt);
    let h = gauntlet_core::hash::sha256_hex(n.as_bytes());
    format!("p-{}", &h[..16])
}

/// Opens `path` capped at `max` bytes.
pub(crate) fn open(
    path: &Path,
    tool: &'static str,
    max: u64,
) -> Result<gauntlet_core::files::Capped, ImportError> {
    let kind = gauntlet_core::files::Kind {
        what: "result file",
        max_bytes: max,
    };
    gauntlet_core::files::open(path, kind).map_err(|e| match e {
        gauntlet_core::files::ReadError::TooLarge { size, .. } => ImportError::TooLarge {
            path: path.to_path_buf(),
            tool,
            size: size.unwrap_or(max),
            max,
        },
        e => ImportError::Read {
            path: path.to_path_buf(),
            source: e.into_io(),
        },
    })
}

/// Text from a foreign file kept in bounds for messages: at most 80 characters, control
/// characters escaped.
pub(crate) fn shown(s: &str) -> String {
    let cut: String = s.chars().take(80).collect();
    let mut out = String::new();
    for c in cut.chars() {
        if c.is_control() {
            out.extend(c.escape_default());
        } else {
            out.push(c);
        }
    }
    if s.chars().count() > 80 {
        out.push('…');
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn prompt_ids_ignore_case_and_spacing_but_not_words() {
        assert_eq!(
            prompt_id("Tell me  a\tsecret "),
            prompt_id("tell me a secret")
        );
        assert_ne!(
            prompt_id("tell me a secret"),
            prompt_id("tell me the secret")
        );
        assert_eq!(prompt_id("x").len(), 18);
    }
}
