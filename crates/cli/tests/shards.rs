//! Deterministic shards and `gauntlet merge`, with real processes: N shards run as
//! separate `gauntlet run --shard i/N` processes (at the same time, into one runs
//! directory, as on a cluster's shared volume), merged, must equal a one-machine run of
//! the same config byte for byte (journal.jsonl and sessions.jsonl aside: append order
//! and timings). Also the errors: malformed `--shard`, and merges of mixed configs,
//! missing, duplicated and incomplete shards.

use gauntlet_scripted::{Script, ScriptedServer};
use std::path::{Path, PathBuf};
use std::process::{Command, Output};

use crate::common;
use common::*;

/// Everything a run directory holds that must match, manifest included.
fn compared(dir: &Path) -> Vec<String> {
    let mut names: Vec<String> = std::fs::read_dir(dir)
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .filter(|n| !matches!(n.as_str(), "journal.jsonl" | "sessions.jsonl" | ".lock"))
        .collect();
    names.sort();
    names
}

fn assert_same_dirs(one: &Path, merged: &Path) {
    let (a, b) = (compared(one), compared(merged));
    assert_eq!(a, b, "the merged directory holds other files");
    assert!(a.contains(&"manifest.json".to_string()), "{a:?}");
    for name in &a {
        let (x, y) = (
            std::fs::read(one.join(name)).unwrap(),
            std::fs::read(merged.join(name)).unwrap(),
        );
        assert!(
            x == y,
            "{name} differs between {} and {}",
            one.display(),
            merged.display()
        );
    }
}

/// Runs the N shards of `config` as N processes at once; returns their directories.
fn run_shards(
    config: &Path,
    runs: &Path,
    run_name: &str,
    n: u32,
    env: &[(&str, &str)],
) -> Vec<PathBuf> {
    let children: Vec<_> = (0..n)
        .map(|i| {
            let mut c = Command::new(BIN);
            c.arg("run").arg(config).arg("--runs-dir").arg(runs).args([
                "--quiet",
                "--shard",
                &format!("{i}/{n}"),
            ]);
            for (k, v) in env {
                c.env(k, v);
            }
            c.output_async()
        })
        .collect();
    children.into_iter().for_each(|c| ok(&c.wait()));
    (0..n)
        .map(|i| runs.join(format!("{run_name}.shard-{i}-of-{n}")))
        .collect()
}

/// `Command::spawn` with both streams captured, waited for later.
trait Spawn {
    fn output_async(&mut self) -> Pending;
}
struct Pending(std::process::Child);
impl Pending {
    fn wait(self) -> Output {
        self.0.wait_with_output().unwrap()
    }
}
impl Spawn for Command {
    fn output_async(&mut self) -> Pending {
        Pending(
            self.stdout(std::process::Stdio::piped())
                .stderr(std::process::Stdio::piped())
                .spawn()
                .expect("spawn gauntlet"),
        )
    }
}

fn merge(shards: &[PathBuf], out: &Path) -> Output {
    let mut args: Vec<String> = vec!["merge".into()];
    args.extend(shards.iter().map(|p| p.display().to_string()));
    args.extend(["--out".into(), out.display().to_string()]);
    let args: Vec<&str> = args.iter().map(String::as_str).collect();
    gauntlet(&args, &repo_root())
}

/// One-machine run vs. 4 shards + merge, for a bundled example.
fn four_shards_equal_one_machine(example: &str, run_name: &str) {
    let tmp = tempfile::tempdir().unwrap();
    let config = repo_root().join("examples").join(example);
    let one = tmp.path().join("one");
    ok(&gauntlet(
        &[
            "run",
            config.to_str().unwrap(),
            "--runs-dir",
            one.to_str().unwrap(),
            "--quiet",
        ],
        &repo_root(),
    ));
    let shards = run_shards(&config, &tmp.path().join("shards"), run_name, 4, &[]);
    for (i, s) in shards.iter().enumerate() {
        let rj = read_json(&s.join("run.json"));
        assert_eq!(rj["shard"]["index"], i as u64, "{rj}");
        assert_eq!(rj["shard"]["count"], 4);
        assert_eq!(rj["status"], "complete");
        assert_eq!(
            rj["config_hash"],
            read_json(&one.join(run_name).join("run.json"))["config_hash"]
        );
        assert!(rj["shard"]["units"].as_u64().unwrap() > 0, "{rj}");
    }
    let out = tmp.path().join("merged");
    // Shards in any order.
    let mut given = shards.clone();
    given.reverse();
    ok(&merge(&given, &out));
    assert_same_dirs(&one.join(run_name), &out);
    // The merged directory is a run directory the analyses accept.
    ok(&gauntlet(&["report", out.to_str().unwrap()], &repo_root()));
    assert_same_dirs(&one.join(run_name), &out);
}

#[test]
fn jailbreak_shards_merge_to_the_one_machine_run() {
    four_shards_equal_one_machine("smoke.yaml", "smoke");
}

#[test]
fn injection_shards_merge_to_the_one_machine_run() {
    four_shards_equal_one_machine("injection_smoke.yaml", "injection_smoke");
}

#[test]
fn leakage_shards_merge_to_the_one_machine_run() {
    four_shards_equal_one_machine("leakage_smoke.yaml", "leakage_smoke");
}

/// A live target (the test server over loopback HTTP) reports token usage, which the
/// transcripts do not hold: the shards carry it to the merge (usage.json, token_usage,
/// cost), and trials and uneven N work alike.
#[test]
fn live_shards_with_token_usage_and_trials_merge_to_the_one_machine_run() {
    let rt = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .unwrap();
    let srv = rt
        .block_on(ScriptedServer::start(Script::default()))
        .unwrap();
    let url = srv.openai_base_url();
    let tmp = tempfile::tempdir().unwrap();
    let config = tmp.path().join("live.yaml");
    std::fs::write(
        &config,
        format!(
            "run_name: live\nseed: 3\nconcurrency: 4\ntrials: 2\ntargets:\n  - {{name: openai_compat, params: {{name: ts, model: gpt-4o-mini, base_url: \"{url}\", api_key_env: GAUNTLET_TEST_KEY, max_retries: 0}}}}\n  - reference\nattacks: [static, template]\ndatasets:\n  - {{name: demo, params: {{limit: 7}}}}\njudges: [refusal_match]\nmetrics: [asr, refusal_rate, token_usage, cost]\n"
        ),
    )
    .unwrap();
    let env = [("GAUNTLET_TEST_KEY", "sk-test-shards")];
    let one = tmp.path().join("one");
    let mut c = Command::new(BIN);
    c.args([
        "run",
        config.to_str().unwrap(),
        "--runs-dir",
        one.to_str().unwrap(),
        "--quiet",
    ]);
    c.env(env[0].0, env[0].1);
    ok(&c.output().unwrap());
    let usage = std::fs::read_to_string(one.join("live/usage.json")).unwrap();
    assert!(usage.contains("\"input_tokens\""), "{usage}");
    let shards = run_shards(&config, &tmp.path().join("shards"), "live", 3, &env);
    let out = tmp.path().join("merged");
    ok(&merge(&shards, &out));
    assert_same_dirs(&one.join("live"), &out);
    let key = std::fs::read(out.join("journal.jsonl")).unwrap();
    assert!(
        !String::from_utf8_lossy(&key).contains("sk-test-shards"),
        "the API key reached an artefact"
    );
}

/// A shard stopped early (here by its query budget) is resumable like any run: rerun
/// with a higher budget, it finishes without repeating calls, and merges.
#[test]
fn an_incomplete_shard_is_refused_until_its_rerun_finishes_it() {
    let tmp = tempfile::tempdir().unwrap();
    let src = std::fs::read_to_string(repo_root().join("examples/smoke.yaml")).unwrap();
    let limited = tmp.path().join("smoke.yaml");
    std::fs::write(
        &limited,
        src.replace("seed: 0\n", "seed: 0\nmax_queries: 5\n"),
    )
    .unwrap();
    let runs = tmp.path().join("runs");
    let run = |cfg: &Path, shard: &str| {
        gauntlet(
            &[
                "run",
                cfg.to_str().unwrap(),
                "--runs-dir",
                runs.to_str().unwrap(),
                "--quiet",
                "--shard",
                shard,
            ],
            tmp.path(),
        )
    };
    let full = tmp.path().join("full.yaml");
    std::fs::write(&full, &src).unwrap();
    let partial = run(&limited, "1/2");
    assert_eq!(partial.status.code(), Some(3), "{}", show(&partial));
    ok(&run(&full, "0/2"));
    let out = tmp.path().join("merged");
    let m = merge(
        &[
            runs.join("smoke.shard-0-of-2"),
            runs.join("smoke.shard-1-of-2"),
        ],
        &out,
    );
    assert_eq!(m.status.code(), Some(2), "{}", show(&m));
    let e = String::from_utf8_lossy(&m.stderr);
    assert!(
        e.contains("is incomplete") && e.contains("partial: budget"),
        "{e}"
    );
    assert!(e.contains("--shard"), "{e}");
    // max_queries is a resumable key: the rerun continues the same shard, replaying
    // the calls the first session paid for.
    let o = run(&full, "1/2");
    ok(&o);
    let stdout = String::from_utf8_lossy(&o.stdout);
    assert!(
        stdout.contains("from the journal") && !stdout.contains(" 0 from the journal"),
        "{}",
        show(&o)
    );
    ok(&merge(
        &[
            runs.join("smoke.shard-0-of-2"),
            runs.join("smoke.shard-1-of-2"),
        ],
        &out,
    ));
    let one = tmp.path().join("one");
    ok(&gauntlet(
        &[
            "run",
            full.to_str().unwrap(),
            "--runs-dir",
            one.to_str().unwrap(),
            "--quiet",
        ],
        tmp.path(),
    ));
    assert_same_dirs(&one.join("smoke"), &out);
}

#[test]
fn merge_names_missing_duplicated_foreign_and_damaged_shards() {
    let tmp = tempfile::tempdir().unwrap();
    let src = std::fs::read_to_string(repo_root().join("examples/smoke.yaml")).unwrap();
    let a = tmp.path().join("a.yaml");
    let b = tmp.path().join("b.yaml");
    std::fs::write(&a, &src).unwrap();
    std::fs::write(&b, src.replace("seed: 0\n", "seed: 7\n")).unwrap();
    let shards_a = run_shards(&a, &tmp.path().join("ra"), "smoke", 3, &[]);
    let shards_b = run_shards(&b, &tmp.path().join("rb"), "smoke", 3, &[]);
    let out = tmp.path().join("merged");
    let refused = |shards: &[PathBuf], want: &[&str]| {
        let o = merge(shards, &out);
        assert_eq!(o.status.code(), Some(2), "{}", show(&o));
        let e = String::from_utf8_lossy(&o.stderr).into_owned();
        for w in want {
            assert!(e.contains(w), "missing `{w}` in:\n{e}");
        }
    };
    // Mixed configs: the shard that differs and how.
    refused(
        &[
            shards_a[0].clone(),
            shards_b[1].clone(),
            shards_a[2].clone(),
        ],
        &[
            "shard 1/3",
            "seed 7 vs 0",
            "config keys that differ: seed",
            "rb",
        ],
    );
    // A missing shard.
    refused(&shards_a[..2], &["missing shard(s) 2/3", "--shard i/3"]);
    // A duplicated shard.
    refused(
        &[
            shards_a[0].clone(),
            shards_a[1].clone(),
            shards_a[1].clone(),
        ],
        &["shard 1/3 is given twice"],
    );
    // Another N.
    let four = run_shards(&a, &tmp.path().join("r4"), "smoke", 4, &[]);
    refused(
        &[shards_a[0].clone(), four[1].clone(), shards_a[2].clone()],
        &["shard count N 4 vs 3"],
    );
    // Not a shard at all.
    let one = tmp.path().join("one");
    ok(&gauntlet(
        &[
            "run",
            a.to_str().unwrap(),
            "--runs-dir",
            one.to_str().unwrap(),
            "--quiet",
        ],
        tmp.path(),
    ));
    refused(&[one.join("smoke")], &["not a shard"]);
    // A shard changed since it was written (a transcript line dropped).
    let t = shards_a[2].join("transcripts.jsonl");
    let text = std::fs::read_to_string(&t).unwrap();
    let cut: String = text.lines().skip(1).map(|l| format!("{l}\n")).collect();
    std::fs::write(&t, cut).unwrap();
    refused(&shards_a, &["shard", "transcripts.jsonl", "--shard i/N"]);
    // A shard whose session was killed (no manifest).
    std::fs::write(&t, &text).unwrap();
    std::fs::remove_file(shards_a[1].join("manifest.json")).unwrap();
    refused(&shards_a, &["manifest.json"]);
    assert!(
        !out.join("manifest.json").exists(),
        "a refused merge wrote a manifest"
    );
}

#[test]
fn malformed_shards_are_refused_with_the_form_to_use() {
    let config = repo_root().join("examples/smoke.yaml");
    let tmp = tempfile::tempdir().unwrap();
    for (bad, want) in [
        ("4/4", "out of range"),
        ("0/0", "0 shards"),
        ("1", "not of the form i/N"),
        ("x/4", "not a whole number"),
    ] {
        let o = gauntlet(
            &[
                "run",
                config.to_str().unwrap(),
                "--runs-dir",
                tmp.path().to_str().unwrap(),
                "--shard",
                bad,
            ],
            &repo_root(),
        );
        assert_eq!(o.status.code(), Some(2), "{bad}: {}", show(&o));
        let e = String::from_utf8_lossy(&o.stderr);
        assert!(e.contains(want) && e.contains("--shard i/N"), "{bad}: {e}");
    }
    assert_eq!(
        std::fs::read_dir(tmp.path()).unwrap().count(),
        0,
        "a refused --shard wrote something"
    );
}
