//! The workspace's crate graph keeps the layering the crate map states
//! (docs/src/reference/crate-map.md): every normal or build dependency between
//! workspace crates points down the tiers below, a surface never depends on a harness,
//! and the scripted test server is no shipped crate's dependency. Read from
//! `cargo metadata`, so a new `Cargo.toml` line is checked the moment it is written.

use std::collections::BTreeSet;
use std::process::Command;

/// Tiers, lowest first. A crate may depend (normally, or at build time) only on crates
/// of a lower tier; dev-dependencies (tests, benchmarks) are free.
const TIERS: &[&[&str]] = &[
    // Foundations: shared vocabulary, confinement, the test server.
    &["gauntlet-core", "gauntlet-sandbox", "gauntlet-scripted"],
    // Evidence of what an agent did: the OTLP trace receiver the targets start; the
    // schema of the files a run directory holds, which writers and readers share.
    &["gauntlet-evidence", "gauntlet-results"],
    // Services over the vocabulary: fetching, the run-directory protocol, corpora,
    // model clients, MCP, rendering of results.
    &[
        "gauntlet-fetch",
        "gauntlet-job",
        "gauntlet-corpus",
        "gauntlet-models",
        "gauntlet-mcp",
        "gauntlet-report",
    ],
    // The model-call layer, the refusal classifier, the detector fleet.
    &["gauntlet-calls", "gauntlet-classifier", "gauntlet-detect"],
    // Plugins: datasets, attacks, judges, metrics.
    &["gauntlet-redteam"],
    // Harnesses.
    &["gauntlet-engine", "gauntlet-exam"],
    // Surfaces over finished runs.
    &["gauntlet-web"],
    // The binary.
    &["gauntlet-cli"],
];

/// Crates that run an evaluation, and crates that only present one.
const HARNESSES: &[&str] = &["gauntlet-engine", "gauntlet-exam", "gauntlet-detect"];
const SURFACES: &[&str] = &["gauntlet-report", "gauntlet-web"];

/// Edges that break a rule today, each with why; the test fails when one of them is
/// gone too, so this list only shrinks.
const KNOWN: &[(&str, &str, &str)] = &[];

fn tier(name: &str) -> Option<usize> {
    TIERS.iter().position(|t| t.contains(&name))
}

/// Every (from, to) normal or build edge between workspace crates.
fn edges() -> (BTreeSet<String>, BTreeSet<(String, String)>) {
    let cargo = std::env::var("CARGO").unwrap_or_else(|_| "cargo".into());
    let out = Command::new(cargo)
        .args([
            "metadata",
            "--format-version",
            "1",
            "--no-deps",
            "--offline",
        ])
        .current_dir(env!("CARGO_MANIFEST_DIR"))
        .output()
        .expect("cargo metadata runs");
    assert!(
        out.status.success(),
        "cargo metadata failed: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    let m: serde_json::Value = serde_json::from_slice(&out.stdout).expect("metadata is JSON");
    let packages = m["packages"].as_array().expect("packages");
    let names: BTreeSet<String> = packages
        .iter()
        .map(|p| p["name"].as_str().expect("name").to_string())
        .collect();
    let mut edges = BTreeSet::new();
    for p in packages {
        let from = p["name"].as_str().expect("name");
        for d in p["dependencies"].as_array().expect("dependencies") {
            let to = d["name"].as_str().expect("dependency name");
            let dev = d["kind"].as_str() == Some("dev");
            if names.contains(to) && !dev {
                edges.insert((from.to_string(), to.to_string()));
            }
        }
    }
    (names, edges)
}

/// The rules an edge breaks, in words.
fn broken(from: &str, to: &str) -> Vec<String> {
    let mut why = Vec::new();
    match (tier(from), tier(to)) {
        (Some(f), Some(t)) if t >= f => why.push(format!(
            "{from} (tier {f}) depends on {to} (tier {t}): an edge must point to a lower tier"
        )),
        _ => {}
    }
    if SURFACES.contains(&from) && HARNESSES.contains(&to) {
        why.push(format!(
            "{from} is a surface and depends on the harness {to}"
        ));
    }
    if to == "gauntlet-scripted" {
        why.push(format!(
            "{from} depends on the scripted test server outside dev-dependencies (it ships in the binary)"
        ));
    }
    why
}

fn violations(edges: &BTreeSet<(String, String)>) -> Vec<String> {
    let mut out = Vec::new();
    for (from, to) in edges {
        let why = broken(from, to);
        if why.is_empty() {
            continue;
        }
        if KNOWN.iter().any(|(f, t, _)| f == from && t == to) {
            continue;
        }
        out.extend(why);
    }
    for (f, t, reason) in KNOWN {
        let present = edges.iter().any(|(a, b)| a == f && b == t);
        if !present || broken(f, t).is_empty() {
            out.push(format!(
                "{f} -> {t} is listed as a known break ({reason}) but no longer breaks a rule: remove it from KNOWN"
            ));
        }
    }
    out
}

#[test]
fn every_workspace_edge_points_down_the_crate_map() {
    let (names, edges) = edges();
    let unplaced: Vec<&String> = names.iter().filter(|n| tier(n).is_none()).collect();
    assert!(
        unplaced.is_empty(),
        "crates in no tier (add each to TIERS in {} and to the crate map): {unplaced:?}",
        file!()
    );
    let v = violations(&edges);
    assert!(
        v.is_empty(),
        "the crate graph breaks its layering:\n{}",
        v.join("\n")
    );
}

#[test]
fn an_edge_up_the_tiers_is_named() {
    // The check itself, on edges that are not in the workspace.
    let mut e = BTreeSet::new();
    e.insert(("gauntlet-core".to_string(), "gauntlet-models".to_string()));
    e.insert(("gauntlet-report".to_string(), "gauntlet-engine".to_string()));
    e.insert(("gauntlet-mcp".to_string(), "gauntlet-scripted".to_string()));
    for (f, t, _) in KNOWN {
        e.insert((f.to_string(), t.to_string()));
    }
    let v = violations(&e).join("\n");
    assert!(
        v.contains("gauntlet-core (tier 0) depends on gauntlet-models (tier 2)"),
        "{v}"
    );
    assert!(
        v.contains("gauntlet-report is a surface and depends on the harness gauntlet-engine"),
        "{v}"
    );
    assert!(
        v.contains("gauntlet-mcp depends on the scripted test server"),
        "{v}"
    );
    assert_eq!(v.lines().count(), 4, "{v}");
}
