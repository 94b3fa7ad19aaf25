//! The scanner's whole catalogue of rules: the per-item and name rules of [`crate::rules`]
//! (each file's `RULE`), the pin's ([`crate::pin::RUG_PULL`], [`crate::pin::PIN_DRIFT`])
//! and the reviewer's ([`crate::review::RULE`]), in catalogue order (`rank`).
//!
//! It sits above every module that declares a rule, and none of them reads it: the scan
//! runs the rules of [`crate::rules`] ([`crate::rules::RULES`]), and the pin and the
//! reviewer name their own. What lists every rule — SARIF's rule list, the threat map's
//! `mcp_rules` rows, reading a rule back by id — reads it here.

use crate::finding::Rule;
use serde::Deserialize;
use std::sync::LazyLock;

static ALL: LazyLock<Vec<Rule>> = LazyLock::new(|| {
    let mut all: Vec<Rule> = crate::rules::RULES.to_vec();
    all.extend([
        crate::pin::RUG_PULL,
        crate::pin::PIN_DRIFT,
        crate::review::RULE,
    ]);
    all.sort();
    all
});

/// Every rule, in catalogue order.
pub fn all() -> &'static [Rule] {
    &ALL
}

/// The rule with id `id`.
pub fn by_id(id: &str) -> Option<Rule> {
    ALL.iter().copied().find(|r| r.id() == id)
}

impl<'de> Deserialize<'de> for Rule {
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<Rule, D::Error> {
        let id = String::deserialize(d)?;
        by_id(&id).ok_or_else(|| {
            let ids: Vec<&str> = ALL.iter().map(|r| r.id()).collect();
            serde::de::Error::custom(format!(
                "unknown rule `{id}` (expected one of {})",
                ids.join(", ")
            ))
        })
    }
}

#[cfg(test)]
mod tests {
    use super::all;
    use crate::finding::Rule;
    use gauntlet_core::taxonomy::{self, THREAT_MAP_JSON};
    use std::collections::BTreeSet;

    #[test]
    fn every_rule_has_its_own_rank_and_id_and_round_trips_by_id() {
        let ranks: BTreeSet<u8> = all().iter().map(|r| r.0.rank).collect();
        let ids: BTreeSet<&str> = all().iter().map(|r| r.id()).collect();
        assert_eq!(ranks.len(), all().len(), "two rules share a rank");
        assert_eq!(ids.len(), all().len(), "two rules share an id");
        for r in all() {
            let json = serde_json::to_string(r).expect("a rule serialises");
            assert_eq!(json, format!("\"{}\"", r.id()));
            assert_eq!(serde_json::from_str::<Rule>(&json).expect("parses"), *r);
        }
        assert!(serde_json::from_str::<Rule>("\"nope\"").is_err());
    }

    /// The threat map's `mcp_rules` rows are the rules' own `threat`, in catalogue order;
    /// with `GAUNTLET_UPDATE_DOCS=1` the map's file is rewritten from them.
    #[test]
    fn the_threat_map_rows_are_the_rules_own() {
        let rows: Vec<String> = all()
            .iter()
            .map(|r| taxonomy::row_json(r.id(), r.threat()))
            .collect();
        let (_, have) =
            taxonomy::section_rows(THREAT_MAP_JSON, "mcp_rules").expect("an mcp_rules section");
        if have == rows {
            return;
        }
        let path = concat!(
            env!("CARGO_MANIFEST_DIR"),
            "/../core/taxonomy/threat_map.json"
        );
        if std::env::var_os("GAUNTLET_UPDATE_DOCS").is_some() {
            let text = taxonomy::with_section(THREAT_MAP_JSON, "mcp_rules", &rows)
                .expect("an mcp_rules section");
            std::fs::write(path, text).expect("writing the threat map");
            return;
        }
        panic!(
            "{path}'s mcp_rules differ from the rules' `threat` (rerun with \
             GAUNTLET_UPDATE_DOCS=1 to rewrite them):\nmap:   {have:#?}\nrules: {rows:#?}"
        );
    }
}
