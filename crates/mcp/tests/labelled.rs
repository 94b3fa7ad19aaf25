//! The rules as a measuring instrument: precision and recall on the labelled set of tool
//! definitions (crates/mcp/data/labelled_tools.jsonl; BENCHMARKS.md, "mcp-scan").
//!
//! Each row is one tool definition labelled `poisoned` or `benign` (benign rows are
//! look-alikes: tools that mention files, keys, "important" notes, other tools, long
//! descriptions, encoded examples). A row is predicted poisoned when any poisoning rule
//! fires on it alone ([`gauntlet_mcp::scan::verdict`]). The rules were written from the
//! `dev` split (rounds 0-5); the `test` split (round 6, written by a helper who had read
//! neither the rules nor any earlier round) was committed before it was first scored, and
//! is scored as held out. The targets are precision ≥ 0.95 and recall ≥ 0.90 on
//! the held-out split; they are not met (BENCHMARKS.md, "mcp-scan"), and the assertions
//! below are floors just under the published round-6 figures, so a regression fails.

use gauntlet_mcp::scan::verdict;
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

fn score(split: &str) -> (Score, Vec<String>) {
    let mut s = Score {
        tp: 0,
        fp: 0,
        fn_: 0,
        tn: 0,
    };
    let mut wrong = Vec::new();
    for r in rows().iter().filter(|r| r["split"] == split) {
        let (poisoned, rules) = verdict(&r["tool"], &[]);
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
            // Round 6, blind, on the rules of 41b91ff (and, identically, of f1c8a23):
            // precision 0.679 (19/28), recall 0.633 (19/30), far short of the issue's
            // 0.95 / 0.90 (BENCHMARKS.md). These floors catch a regression below the
            // published figures; they are not the targets.
            assert!(
                s.precision() >= 0.65,
                "held-out precision {:.3} fell below the published 0.679: {wrong:?}",
                s.precision()
            );
            assert!(
                s.recall() >= 0.60,
                "held-out recall {:.3} fell below the published 0.633: {wrong:?}",
                s.recall()
            );
        }
    }
}
