//! The cluster recipes under deploy/: the Kubernetes manifests validate against the
//! Kubernetes schemas (strictly: an unknown field is an error) with kubernetes-validate
//! — no cluster is involved, so this checks their shape, not that a cluster runs them —
//! and they keep the contract with `--shard` (Indexed completions = parallelism = the N
//! of --shard, 0-based JOB_COMPLETION_INDEX, shard directories the merge names) and
//! carry no API key. The run config they ship is a valid gauntlet config. (The Slurm
//! recipe runs on a real single-node cluster in .ci/run: deploy/slurm/ci-single-node.sh.)
//!
//! The validator: `scripts/install-kubernetes-validate.sh` (PyPI), its path in
//! GAUNTLET_KUBERNETES_VALIDATE. Without it the schema test prints a loud SKIP, except
//! under CI, where it fails.

use std::path::PathBuf;
use std::process::Command;

use crate::common;
use common::*;

fn manifests() -> Vec<PathBuf> {
    let dir = repo_root().join("deploy/kubernetes");
    let mut v: Vec<PathBuf> = std::fs::read_dir(&dir)
        .unwrap()
        .map(|e| e.unwrap().path())
        .filter(|p| p.extension().is_some_and(|e| e == "yaml"))
        .collect();
    v.sort();
    assert!(v.len() >= 7, "{v:?}");
    v
}

fn text(name: &str) -> String {
    std::fs::read_to_string(repo_root().join("deploy/kubernetes").join(name)).unwrap()
}

#[test]
fn kubernetes_manifests_validate_against_the_schemas() {
    let Some(bin) = std::env::var_os("GAUNTLET_KUBERNETES_VALIDATE") else {
        assert!(
            std::env::var_os("CI").is_none(),
            "CI: GAUNTLET_KUBERNETES_VALIDATE is unset (scripts/install-kubernetes-validate.sh failed?)"
        );
        eprintln!(
            "SKIP kubernetes_manifests_validate_against_the_schemas: set GAUNTLET_KUBERNETES_VALIDATE=$(scripts/install-kubernetes-validate.sh)"
        );
        return;
    };
    for m in manifests() {
        let o = Command::new(&bin)
            .args(["--strict", "--kubernetes-version", "1.31"])
            .arg(&m)
            .output()
            .expect("run kubernetes-validate");
        assert!(o.status.success(), "{}: {}", m.display(), show(&o));
        let out = String::from_utf8_lossy(&o.stdout);
        assert!(out.contains("passed"), "{}: {out}", m.display());
    }
    // The validator does refuse a broken manifest (so a pass above means something).
    let tmp = tempfile::tempdir().unwrap();
    let bad = tmp.path().join("bad.yaml");
    std::fs::write(
        &bad,
        text("shards-job.yaml").replace("completions: 4", "completions: four"),
    )
    .unwrap();
    let o = Command::new(&bin)
        .arg("--strict")
        .arg(&bad)
        .output()
        .unwrap();
    assert!(!o.status.success(), "{}", show(&o));
}

#[test]
fn the_indexed_job_and_the_merge_agree_with_shard_numbering() {
    let job = text("shards-job.yaml");
    for want in [
        "completionMode: Indexed",
        "completions: 4",
        "parallelism: 4",
        "--shard \"${JOB_COMPLETION_INDEX}/4\"",
        "claimName: gauntlet-runs",
        "secretRef: {name: gauntlet-api-keys}",
    ] {
        assert!(job.contains(want), "shards-job.yaml lacks `{want}`");
    }
    let merge = text("merge-job.yaml");
    for i in 0..4 {
        assert!(
            merge.contains(&format!("/runs/vllm-jailbreak.shard-{i}-of-4")),
            "merge-job.yaml does not name shard {i}/4"
        );
    }
    assert!(text("configmap.yaml").contains("run_name: vllm-jailbreak"));
    // No key in any manifest: the Secret's values are empty placeholders.
    for m in manifests() {
        let t = std::fs::read_to_string(&m).unwrap();
        assert!(
            !t.contains("sk-"),
            "{} holds something key-like",
            m.display()
        );
    }
    let secret = text("secret.yaml");
    assert!(secret.contains("OPENAI_API_KEY: \"\""), "{secret}");
}

#[test]
fn the_shipped_run_config_is_valid() {
    let cm = text("configmap.yaml");
    let body: String = cm
        .split_once("run.yaml: |\n")
        .unwrap()
        .1
        .lines()
        .map(|l| format!("{}\n", l.strip_prefix("    ").unwrap_or(l)))
        .collect();
    let tmp = tempfile::tempdir().unwrap();
    let cfg = tmp.path().join("run.yaml");
    std::fs::write(&cfg, body).unwrap();
    let o = gauntlet(&["validate", cfg.to_str().unwrap()], tmp.path());
    ok(&o);
}
