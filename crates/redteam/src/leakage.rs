//! The leakage surface's shared vocabulary: probe categories and the helpers the leakage
//! attacks share.
//!
//! A leakage probe is a behavior with a `target_secret`: a planted fake secret (a canary
//! token, a PII record, a system-prompt secret, a memorised passage) that a safe model
//! must not reproduce. Its `category` names the kind of secret.

use gauntlet_core::behavior::Behavior;

/// The kind of secret a leakage probe plants.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum LeakCategory {
    /// A canary token (training-data contamination marker).
    Canary,
    /// A personal record (name, email, phone).
    Pii,
    /// A secret that lives in the system prompt.
    SystemPrompt,
    /// A memorised passage (verbatim training-data extraction).
    Extraction,
    /// A probe with a secret but another (or no) category: counts toward
    /// `extraction_rate` and `verbatim_overlap` only.
    Other,
}

impl LeakCategory {
    /// The category of a behavior, or `None` when it is not a leakage probe (no
    /// `target_secret`).
    pub fn of(b: &Behavior) -> Option<LeakCategory> {
        b.target_secret.as_ref()?;
        Some(Self::parse(&b.category))
    }

    /// Reads a dataset category (case-insensitive; `-` and ` ` count as `_`).
    pub fn parse(category: &str) -> LeakCategory {
        // Compared byte by byte (every name is ASCII), without building the folded string.
        let c = category.trim().as_bytes();
        let is = |name: &str| {
            c.len() == name.len()
                && c.iter().zip(name.bytes()).all(|(&a, b)| {
                    let a = a.to_ascii_lowercase();
                    (if a == b'-' || a == b' ' { b'_' } else { a }) == b
                })
        };
        const NAMES: [(&str, LeakCategory); 9] = [
            ("canary", LeakCategory::Canary),
            ("canaries", LeakCategory::Canary),
            ("pii", LeakCategory::Pii),
            ("system_prompt", LeakCategory::SystemPrompt),
            ("system", LeakCategory::SystemPrompt),
            ("extraction", LeakCategory::Extraction),
            ("memorized_passage", LeakCategory::Extraction),
            ("memorised_passage", LeakCategory::Extraction),
            ("passage", LeakCategory::Extraction),
        ];
        NAMES
            .iter()
            .find(|(name, _)| is(name))
            .map_or(LeakCategory::Other, |&(_, c)| c)
    }

    pub fn as_str(self) -> &'static str {
        match self {
            LeakCategory::Canary => "canary",
            LeakCategory::Pii => "pii",
            LeakCategory::SystemPrompt => "system_prompt",
            LeakCategory::Extraction => "extraction",
            LeakCategory::Other => "other",
        }
    }
}

/// Attempt metadata shared by the leakage attacks: the probe's category.
pub(crate) fn metadata(b: &Behavior, extra: serde_json::Value) -> serde_json::Value {
    let mut m = serde_json::json!({
        "leak_category": LeakCategory::of(b).map(LeakCategory::as_str),
    });
    if let (Some(o), serde_json::Value::Object(e)) = (m.as_object_mut(), extra) {
        o.extend(e);
    }
    m
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn categories() {
        assert_eq!(
            LeakCategory::parse("System-Prompt"),
            LeakCategory::SystemPrompt
        );
        assert_eq!(LeakCategory::parse("PII"), LeakCategory::Pii);
        assert_eq!(LeakCategory::parse("canary"), LeakCategory::Canary);
        assert_eq!(LeakCategory::parse("extraction"), LeakCategory::Extraction);
        assert_eq!(LeakCategory::parse("cyber"), LeakCategory::Other);
        assert_eq!(
            LeakCategory::parse("  Memorised Passage "),
            LeakCategory::Extraction
        );
        assert_eq!(LeakCategory::parse("CANARIES"), LeakCategory::Canary);
        assert_eq!(LeakCategory::parse("canary_x"), LeakCategory::Other);
        assert_eq!(LeakCategory::parse("piï"), LeakCategory::Other);
        assert_eq!(LeakCategory::parse(""), LeakCategory::Other);
        let mut b: Behavior =
            serde_json::from_str(r#"{"id":"x","prompt":"p","category":"pii"}"#).unwrap();
        assert_eq!(LeakCategory::of(&b), None);
        b.target_secret = Some("s".into());
        assert_eq!(LeakCategory::of(&b), Some(LeakCategory::Pii));
    }
}
