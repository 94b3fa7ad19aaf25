//! The threat taxonomy: which entries of public threat frameworks (OWASP Top 10 for LLM
//! Applications 2025, OWASP Agentic AI threats T1–T15, OWASP Top 10 for Agentic
//! Applications 2026, OWASP MCP Top 10, MITRE ATLAS, NIST AI RMF) a red-team number
//! speaks to, and which EU AI Act articles it is evidence for.
//!
//! The mapping is data, not code: `taxonomy/threat_map.json` (versioned; results record
//! its `version`), embedded in the binary. It declares each framework's entries (id and
//! title, facts from the framework's own text) and maps gauntlet's vocabulary onto them:
//! run modes, attacks, prompt-transform families (and single transforms where they add
//! something), dataset categories, metrics and guard-model hazard categories. A cell's tags are the union over what it
//! is made of ([`cell_tags`]); a leaderboard row adds its metric's ([`metric_tags`]).
//! Tests check that every id used is declared and that every registered plugin is
//! mapped, so the map cannot drift from the registries silently.

use serde::Deserialize;
use std::collections::BTreeMap;
use std::sync::LazyLock;

/// Framework → ids, both sorted: `{"mitre_atlas": ["AML.T0054"], "owasp_llm":
/// ["LLM01:2025"]}`.
pub type ThreatTags = BTreeMap<String, Vec<String>>;

/// A threat-map row as a plugin declares it in its own file: (framework key, entry ids),
/// in the order the map's file writes them.
pub type ThreatEntry = &'static [(&'static str, &'static [&'static str])];

/// `e` as [`ThreatTags`].
pub fn tags_of(e: ThreatEntry) -> ThreatTags {
    e.iter()
        .map(|(k, ids)| (k.to_string(), ids.iter().map(|s| s.to_string()).collect()))
        .collect()
}

/// The embedded map's text.
pub const THREAT_MAP_JSON: &str = include_str!("../taxonomy/threat_map.json");

/// One framework and its entries, in the framework's own order.
#[derive(Debug, Clone, Deserialize)]
pub struct Framework {
    /// The key tags use (`owasp_llm`, `owasp_agentic`, `owasp_agentic_2026`, `owasp_mcp`,
    /// `mitre_atlas`, `nist_ai_rmf`, `eu_ai_act`).
    pub key: String,
    pub name: String,
    pub edition: String,
    pub source: String,
    /// (id, title).
    pub entries: Vec<(String, String)>,
}

/// Which direction of a metric is bad news.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Worse {
    Higher,
    Lower,
}

#[derive(Debug, Clone, Deserialize)]
pub struct MetricEntry {
    /// `None` for metrics with no good or bad direction (token counts, cost).
    pub worse: Option<Worse>,
    pub tags: ThreatTags,
}

/// The parsed threat map.
#[derive(Debug, Clone, Deserialize)]
pub struct ThreatMap {
    pub version: String,
    pub frameworks: Vec<Framework>,
    pub modes: BTreeMap<String, ThreatTags>,
    pub attacks: BTreeMap<String, ThreatTags>,
    pub transform_families: BTreeMap<String, ThreatTags>,
    pub transforms: BTreeMap<String, ThreatTags>,
    pub categories: BTreeMap<String, ThreatTags>,
    pub metrics: BTreeMap<String, MetricEntry>,
    /// `gauntlet mcp-scan`'s rules, by rule id (SARIF tags of its findings).
    pub mcp_rules: BTreeMap<String, ThreatTags>,
    /// The hazard categories of guard models the `guard` judge reads, by
    /// `<format>/<code>` (`llama_guard3/S7`).
    pub guard_categories: BTreeMap<String, ThreatTags>,
}

static MAP: LazyLock<ThreatMap> = LazyLock::new(|| {
    serde_json::from_str(THREAT_MAP_JSON).expect("the embedded threat map parses (tested)")
});

/// The embedded threat map.
pub fn map() -> &'static ThreatMap {
    &MAP
}

/// The embedded map's version.
pub fn version() -> &'static str {
    &MAP.version
}

impl ThreatMap {
    /// A framework by key.
    pub fn framework(&self, key: &str) -> Option<&Framework> {
        self.frameworks.iter().find(|f| f.key == key)
    }
    /// The title of `id` in framework `key`.
    pub fn title(&self, key: &str, id: &str) -> Option<&str> {
        self.framework(key)?
            .entries
            .iter()
            .find(|(i, _)| i == id)
            .map(|(_, t)| t.as_str())
    }
    /// Which direction of `metric` is bad news.
    pub fn worse(&self, metric: &str) -> Option<Worse> {
        self.metrics.get(metric).and_then(|m| m.worse)
    }
}

/// One row of a threat-map section as the map's file writes it:
/// `"key": {"owasp_llm": ["LLM01:2025"], …}` (frameworks in the order given).
pub fn row_json(key: &str, e: ThreatEntry) -> String {
    format!("{}: {}", json_str(key), tags_json(e))
}

/// A metric's threat-map row as it declares it in its own file.
#[derive(Debug, Clone, Copy)]
pub struct MetricThreat {
    /// `None` for a metric with no good or bad direction (token counts, cost).
    pub worse: Option<Worse>,
    pub tags: ThreatEntry,
}

/// A metric's row as the map's file writes it:
/// `"asr": {"worse": "higher", "tags": {…}}`.
pub fn metric_row_json(key: &str, m: &MetricThreat) -> String {
    let worse = match m.worse {
        Some(Worse::Higher) => "\"higher\"",
        Some(Worse::Lower) => "\"lower\"",
        None => "null",
    };
    format!(
        "{}: {{\"worse\": {worse}, \"tags\": {}}}",
        json_str(key),
        tags_json(m.tags)
    )
}

/// `{"fw": ["id", …], …}` in the order given.
pub fn tags_json(e: ThreatEntry) -> String {
    let fws: Vec<String> = e
        .iter()
        .map(|(k, ids)| {
            let ids: Vec<String> = ids.iter().map(|i| json_str(i)).collect();
            format!("{}: [{}]", json_str(k), ids.join(", "))
        })
        .collect();
    format!("{{{}}}", fws.join(", "))
}

fn json_str(s: &str) -> String {
    serde_json::to_string(s).expect("a string serialises")
}

/// The rows of top-level `section` in the map's text `text` (one a line, trailing commas
/// dropped), and the byte range they span; `None` when the section is not there.
pub fn section_rows(text: &str, section: &str) -> Option<(std::ops::Range<usize>, Vec<String>)> {
    let open = format!("\n  {}: {{\n", json_str(section));
    let start = text.find(&open)? + open.len();
    let end = start + text[start..].find("\n  }")?;
    let rows = text[start..end]
        .lines()
        .map(|l| l.trim().trim_end_matches(',').to_string())
        .collect();
    Some((start..end, rows))
}

/// `text` with top-level `section`'s rows replaced by `rows` (the file's layout: four
/// spaces, a comma after all but the last); `None` when the section is not there.
pub fn with_section(text: &str, section: &str, rows: &[String]) -> Option<String> {
    let (range, _) = section_rows(text, section)?;
    let body: Vec<String> = rows.iter().map(|r| format!("    {r}")).collect();
    let mut out = text.to_string();
    out.replace_range(range, &body.join(",\n"));
    Some(out)
}

/// `a ∪ b`, ids sorted and deduplicated per framework.
pub fn merge(a: &ThreatTags, b: &ThreatTags) -> ThreatTags {
    let mut out = a.clone();
    add(&mut out, b);
    out
}

fn add(into: &mut ThreatTags, b: &ThreatTags) {
    for (k, ids) in b {
        let e = into.entry(k.clone()).or_default();
        e.extend(ids.iter().cloned());
        e.sort();
        e.dedup();
    }
    into.retain(|_, ids| !ids.is_empty());
}

fn lookup(m: &BTreeMap<String, ThreatTags>, key: &str) -> ThreatTags {
    m.get(key).cloned().unwrap_or_default()
}

/// A metric's own tags.
pub fn metric_tags(metric: &str) -> ThreatTags {
    MAP.metrics
        .get(metric)
        .map(|m| m.tags.clone())
        .unwrap_or_default()
}

/// The tags of an `mcp-scan` rule (by its id, e.g. `hidden_instruction`).
pub fn mcp_rule_tags(rule: &str) -> ThreatTags {
    lookup(&MAP.mcp_rules, rule)
}

/// Llama Guard 3's hazard categories, S1–S14 (codes and names from its model card).
pub const LLAMA_GUARD3_CATEGORIES: [&str; 14] = [
    "Violent Crimes",
    "Non-Violent Crimes",
    "Sex-Related Crimes",
    "Child Sexual Exploitation",
    "Defamation",
    "Specialized Advice",
    "Privacy",
    "Intellectual Property",
    "Indiscriminate Weapons",
    "Hate",
    "Suicide & Self-Harm",
    "Sexual Content",
    "Elections",
    "Code Interpreter Abuse",
];

/// Qwen3Guard's safety categories: the threat-map slug (`qwen3guard/<slug>`) and the
/// name as the model writes it on its `Categories:` line (from its model card; `Jailbreak`
/// is named for prompts only).
pub const QWEN3GUARD_CATEGORIES: [(&str, &str); 9] = [
    ("violent", "Violent"),
    ("non_violent_illegal_acts", "Non-violent Illegal Acts"),
    ("sexual_content", "Sexual Content or Sexual Acts"),
    ("pii", "PII"),
    ("suicide_self_harm", "Suicide & Self-Harm"),
    ("unethical_acts", "Unethical Acts"),
    (
        "politically_sensitive_topics",
        "Politically Sensitive Topics",
    ),
    ("copyright_violation", "Copyright Violation"),
    ("jailbreak", "Jailbreak"),
];

/// The name of a guard model's hazard category (`llama_guard3/S7` → `Privacy`,
/// `qwen3guard/pii` → `PII`), for reports; `None` for a key it does not know. Llama
/// Guard 4 keeps Llama Guard 3's S1–S14 list.
pub fn guard_category_name(key: &str) -> Option<&'static str> {
    if let Some(slug) = key.strip_prefix("qwen3guard/") {
        return QWEN3GUARD_CATEGORIES
            .iter()
            .find(|(s, _)| *s == slug)
            .map(|(_, n)| *n);
    }
    let code = key
        .strip_prefix("llama_guard3/S")
        .or_else(|| key.strip_prefix("llama_guard4/S"))?;
    let code: usize = code.parse().ok()?;
    LLAMA_GUARD3_CATEGORIES.get(code.checked_sub(1)?).copied()
}

/// The tags of a guard model's hazard category (`llama_guard3/S7`); empty when unmapped.
pub fn guard_category_tags(key: &str) -> ThreatTags {
    lookup(&MAP.guard_categories, key)
}

/// What a cell is made of, for [`cell_tags`].
pub struct CellParts<'a> {
    /// `jailbreak`, `leakage` or `injection`.
    pub mode: &'a str,
    /// The attack's (or injection's) plugin name.
    pub attack: &'a str,
    /// The attack's prompt transforms: (name, family).
    pub transforms: &'a [(&'a str, &'a str)],
    /// The dataset categories present in the cell's dataset (matched case-insensitively).
    pub categories: &'a [&'a str],
}

/// The tags of a cell: its mode's, attack's, transforms' (family and own) and dataset
/// categories'.
pub fn cell_tags(p: &CellParts) -> ThreatTags {
    let mut t = lookup(&MAP.modes, p.mode);
    add(&mut t, &lookup(&MAP.attacks, p.attack));
    for (name, family) in p.transforms {
        add(&mut t, &lookup(&MAP.transform_families, family));
        add(&mut t, &lookup(&MAP.transforms, name));
    }
    for c in p.categories {
        add(&mut t, &lookup(&MAP.categories, &c.to_lowercase()));
    }
    t
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_section_written_back_with_its_own_rows_is_the_same_text() {
        for section in ["attacks", "metrics", "mcp_rules"] {
            let (_, rows) = section_rows(THREAT_MAP_JSON, section).expect(section);
            assert!(rows.len() > 5, "{section}: {rows:?}");
            assert_eq!(
                with_section(THREAT_MAP_JSON, section, &rows).as_deref(),
                Some(THREAT_MAP_JSON)
            );
        }
        let (_, rows) = section_rows(THREAT_MAP_JSON, "mcp_rules").expect("mcp_rules");
        let e: ThreatEntry = &[
            ("owasp_llm", &["LLM01:2025"]),
            ("owasp_agentic_2026", &["ASI01"]),
            ("owasp_mcp", &["MCP03:2025"]),
            ("mitre_atlas", &["AML.T0051.001", "AML.T0068"]),
        ];
        assert_eq!(rows[1], row_json("invisible_text", e));
        assert_eq!(tags_of(e), map().mcp_rules["invisible_text"]);
    }

    fn ids_declared(what: &str, tags: &ThreatTags) {
        for (k, ids) in tags {
            let f = map()
                .framework(k)
                .unwrap_or_else(|| panic!("{what}: unknown framework `{k}`"));
            for id in ids {
                assert!(
                    f.entries.iter().any(|(i, _)| i == id),
                    "{what}: `{id}` is not declared in framework `{k}`"
                );
            }
        }
    }

    /// Every id the map uses is one of its frameworks' declared entries, and every
    /// framework has a distinct key and distinct ids.
    #[test]
    fn every_id_used_is_declared() {
        let m = map();
        assert!(!m.version.is_empty());
        let mut keys: Vec<&str> = m.frameworks.iter().map(|f| f.key.as_str()).collect();
        keys.sort();
        keys.dedup();
        assert_eq!(keys.len(), m.frameworks.len());
        for f in &m.frameworks {
            let mut ids: Vec<&str> = f.entries.iter().map(|(i, _)| i.as_str()).collect();
            ids.sort();
            ids.dedup();
            assert_eq!(ids.len(), f.entries.len(), "{}: duplicate ids", f.key);
        }
        for (group, table) in [
            ("modes", &m.modes),
            ("attacks", &m.attacks),
            ("transform_families", &m.transform_families),
            ("transforms", &m.transforms),
            ("categories", &m.categories),
            ("mcp_rules", &m.mcp_rules),
            ("guard_categories", &m.guard_categories),
        ] {
            for (k, tags) in table {
                ids_declared(&format!("{group}.{k}"), tags);
            }
        }
        for (k, e) in &m.metrics {
            ids_declared(&format!("metrics.{k}"), &e.tags);
        }
        for mode in ["jailbreak", "leakage", "injection"] {
            assert!(m.modes.contains_key(mode), "mode {mode} is not mapped");
        }
    }

    /// The frameworks, in report order, and facts of their current editions: ATLAS 5.x
    /// renamed AML.T0053, the 2026 agentic list is ASI01–ASI10, the MCP list MCP01–MCP10.
    #[test]
    fn the_frameworks_and_their_editions() {
        let m = map();
        let keys: Vec<&str> = m.frameworks.iter().map(|f| f.key.as_str()).collect();
        assert_eq!(
            keys,
            [
                "owasp_llm",
                "owasp_agentic",
                "owasp_agentic_2026",
                "owasp_mcp",
                "mitre_atlas",
                "nist_ai_rmf",
                "eu_ai_act"
            ]
        );
        assert_eq!(
            m.title("mitre_atlas", "AML.T0053"),
            Some("AI Agent Tool Invocation")
        );
        assert!(
            m.framework("mitre_atlas")
                .unwrap()
                .edition
                .contains("5.6.0")
        );
        for (key, prefix, n) in [
            ("owasp_llm", "LLM", 10),
            ("owasp_agentic", "T", 15),
            ("owasp_agentic_2026", "ASI", 10),
            ("owasp_mcp", "MCP", 10),
        ] {
            let f = m.framework(key).unwrap();
            assert_eq!(f.entries.len(), n, "{key}");
            for (i, (id, _)) in f.entries.iter().enumerate() {
                let num: usize = id
                    .trim_start_matches(prefix)
                    .split(':')
                    .next()
                    .unwrap()
                    .parse()
                    .unwrap_or_else(|_| panic!("{key}: {id}"));
                assert_eq!(num, i + 1, "{key}: {id} out of order");
            }
        }
        assert_eq!(
            m.title("owasp_agentic_2026", "ASI01"),
            Some("Agent Goal Hijack")
        );
        // Every mode is evidence under the EU AI Act's robustness and GPAI testing duties.
        for mode in ["jailbreak", "leakage", "injection"] {
            let t = &m.modes[mode]["eu_ai_act"];
            assert!(t.contains(&"Art. 15".to_string()) && t.contains(&"Art. 55".to_string()));
        }
    }

    #[test]
    fn cell_tags_are_the_sorted_union() {
        let t = cell_tags(&CellParts {
            mode: "jailbreak",
            attack: "static",
            transforms: &[("base64", "encoding"), ("payload_split", "structure")],
            categories: &["Disinformation", "unknown"],
        });
        assert_eq!(t["owasp_llm"], vec!["LLM01:2025", "LLM09:2025"]);
        assert_eq!(
            t["mitre_atlas"],
            vec!["AML.T0051.000", "AML.T0054", "AML.T0065", "AML.T0068"]
        );
        assert!(!t.contains_key("owasp_agentic"));
        let row = merge(&t, &metric_tags("frr"));
        assert!(row["nist_ai_rmf"].contains(&"MEASURE 2.5".to_string()));
        assert_eq!(map().worse("refusal_rate"), Some(Worse::Lower));
        assert_eq!(map().worse("cost"), None);
        assert_eq!(
            map().title("mitre_atlas", "AML.T0054"),
            Some("LLM Jailbreak")
        );
    }
}
