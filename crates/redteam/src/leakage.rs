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
        let c = category
            .trim()
            .to_ascii_lowercase()
            .replace(['-', ' '], "_");
        match c.as_str() {
            "canary" | "canaries" => LeakCategory::Canary,
            "pii" => LeakCategory::Pii,
            "system_prompt" | "system" => LeakCategory::SystemPrompt,
            "extraction" | "memorized_passage" | "memorised_passage" | "passage" => {
                LeakCategory::Extraction
            }
            _ => LeakCategory::Other,
        }
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
        let mut b: Behavior =
            serde_json::from_str(r#"{"id":"x","prompt":"p","category":"pii"}"#).unwrap();
        assert_eq!(LeakCategory::of(&b), None);
        b.target_secret = Some("s".into());
        assert_eq!(LeakCategory::of(&b), Some(LeakCategory::Pii));
    }
}
