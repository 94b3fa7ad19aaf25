//! The rules as a measuring instrument: precision and recall on the labelled set of tool
//! definitions (crates/mcp/data/labelled_tools.jsonl; BENCHMARKS.md, "mcp-scan").
//!
//! Each row is one tool definition labelled `poisoned` or `benign` (benign rows are
//! look-alikes: tools that mention files, keys, "important" notes, other tools, long
//! descriptions, encoded examples, deprecations, shell commands, other languages). A row
//! is predicted poisoned when the default gate (`mcp-scan --fail-on low`) fails on it,
//! scanned alone or beside the servers its `neighbours` field lists
//! ([`gauntlet_mcp::scan::verdict`]).
//!
//! Rounds 0-8 are the `dev` split (rounds 5, 6 and 8 were written blind by helpers who
//! had read neither the rules nor any earlier round, and scored once before moving into
//! dev; round 7 was written for the attack classes the rules missed on outside rows by
//! the engineer who then revised the rules). The `test` split is round 9, written blind
//! (fourteen attack classes, twenty languages, hard benign look-alikes) and scored once
//! before and once after the rules were revised from round 8's errors: precision 0.944
//! (51/54) → 0.967 (58/60), recall 0.637 (51/80) → 0.725 (58/80) at the default gate
//! (BENCHMARKS.md, "mcp-scan"). A round moves into dev before the rules are revised from
//! it. The assertions are floors just under the published figures, so a regression
//! fails.

use gauntlet_mcp::scan::{Inventory, verdict};
use serde_json::Value;

struct Score {
    tp: usize,
    fp: usize,
    fn_: usize,
    tn: usize,
}

impl Score {
    fn precision(&self) -> f64 {
        self.tp as f64 / (self.tp + self.fp).max(1) as f64
    }
    fn recall(&self) -> f64 {
        self.tp as f64 / (self.tp + self.fn_).max(1) as f64
    }
}

fn rows() -> Vec<Value> {
    let text = std::fs::read_to_string(concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/data/labelled_tools.jsonl"
    ))
    .unwrap();
    text.lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect()
}

/// The servers a row is scanned beside (`neighbours`: [{"server", "tools": [names]}]).
fn neighbours(r: &Value) -> Vec<Inventory> {
    r["neighbours"]
        .as_array()
        .map(|a| {
            a.iter()
                .map(|n| {
                    let tools = n["tools"]
                        .as_array()
                        .unwrap()
                        .iter()
                        .map(|t| serde_json::json!({"name": t, "description": "", "inputSchema": {"type": "object"}}))
                        .collect();
                    Inventory::offline(n["server"].as_str().unwrap(), tools)
                })
                .collect()
        })
        .unwrap_or_default()
}

fn score(split: &str) -> (Score, Vec<String>) {
    let mut s = Score {
        tp: 0,
        fp: 0,
        fn_: 0,
        tn: 0,
    };
    let mut wrong = Vec::new();
    for r in rows().iter().filter(|r| r["split"] == split) {
        let (poisoned, rules) = verdict(&r["tool"], &neighbours(r));
        let truth = r["label"] == "poisoned";
        match (truth, poisoned) {
            (true, true) => s.tp += 1,
            (false, true) => {
                s.fp += 1;
                wrong.push(format!("FP {} {:?}", r["id"], rules));
            }
            (true, false) => {
                s.fn_ += 1;
                wrong.push(format!("FN {}", r["id"]));
            }
            (false, false) => s.tn += 1,
        }
    }
    (s, wrong)
}

#[test]
fn the_labelled_set_is_well_formed() {
    let rows = rows();
    let mut ids = std::collections::BTreeSet::new();
    for r in &rows {
        assert!(
            ids.insert(r["id"].as_str().unwrap().to_string()),
            "duplicate id {}",
            r["id"]
        );
        assert!(matches!(r["label"].as_str(), Some("poisoned" | "benign")));
        assert!(matches!(r["split"].as_str(), Some("dev" | "test")));
        assert!(r["tool"]["name"].is_string() && r["tool"]["inputSchema"].is_object());
        let text = r.to_string();
        // Bundled content is synthetic: no real-looking addresses.
        for host in text.split('@').skip(1) {
            let domain: String = host
                .chars()
                .take_while(|c| c.is_ascii_alphanumeric() || *c == '.' || *c == '-')
                .collect();
            let domain = domain.trim_end_matches('.');
            assert!(
                domain.ends_with(".invalid"),
                "{}: address domain `{domain}`",
                r["id"]
            );
        }
    }
    assert!(rows.len() >= 60, "{} rows", rows.len());
    // The held-out split is one round, newer than every round already in dev (a scored
    // round moves into dev before the rules are revised from it).
    let rounds = |split: &str| -> std::collections::BTreeSet<u64> {
        rows.iter()
            .filter(|r| r["split"] == split)
            .map(|r| r["round"].as_u64().expect("every row has a round"))
            .collect()
    };
    let (dev, test) = (rounds("dev"), rounds("test"));
    assert_eq!(test.len(), 1, "the test split holds one round: {test:?}");
    assert!(
        dev.iter().all(|d| d < test.first().unwrap()),
        "dev rounds {dev:?} must all precede the held-out round {test:?}"
    );
}

#[test]
fn precision_and_recall_per_split() {
    for split in ["dev", "test"] {
        let (s, wrong) = score(split);
        let n = s.tp + s.fp + s.fn_ + s.tn;
        if n == 0 {
            continue;
        }
        println!(
            "mcp-scan labelled {split}: n={n} tp={} fp={} fn={} tn={} precision={:.3} recall={:.3}",
            s.tp,
            s.fp,
            s.fn_,
            s.tn,
            s.precision(),
            s.recall()
        );
        for w in &wrong {
            println!("  {w}");
        }
        if split == "test" {
            // Round 9, blind: precision 0.967 (58/60), recall 0.725 (58/80) at the default
            // gate, scored once on these rules (0.944 / 0.637 on the rules before). A floor
            // that catches a regression; the estimate on new writers is the figure itself,
            // not this floor.
            assert!(
                s.precision() >= 0.96 && s.recall() >= 0.72,
                "round 9 fell below 0.96 / 0.72: precision {:.3} recall {:.3}: {wrong:?}",
                s.precision(),
                s.recall()
            );
        } else {
            // Rounds 0-8 at the default gate: precision 0.985 (264/268), recall 0.974
            // (264/271); round 8's figures are resubstitution (the rules were revised from
            // its errors), and round 6's blind rows hold every miss and false alarm left.
            assert!(
                s.precision() >= 0.98 && s.recall() >= 0.97,
                "the dev split fell below 0.98 / 0.97: precision {:.3} recall {:.3}: {wrong:?}",
                s.precision(),
                s.recall()
            );
        }
    }
}

/// Each class of attack the rules missed on outside definitions has rows of its own in
/// round 7, and the default gate fails on every one of them.
#[test]
fn every_listed_miss_class_has_rows_the_gate_fails_on() {
    let rows = rows();
    for class in [
        "redirection",
        "external_request",
        "shell_command",
        "forced_dependency",
        "out_of_purpose_parameter",
        "destructive",
        "preference_manipulation",
        "impersonation",
        "near_identical_name",
        "non_english",
    ] {
        let of: Vec<&Value> = rows
            .iter()
            .filter(|r| r["round"] == 7 && r["label"] == "poisoned")
            .filter(|r| r["kinds"].as_array().unwrap().iter().any(|k| k == class))
            .collect();
        assert!(of.len() >= 3, "{class}: {} rows", of.len());
        for r in of {
            let (flagged, _) = verdict(&r["tool"], &neighbours(r));
            assert!(flagged, "{class}: {} passes the default gate", r["id"]);
        }
    }
}
