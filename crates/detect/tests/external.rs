//! External detectors: the shipped example, and isolation of hanging, crashing and
//! over-limit executables (each reported for that detector and scenario only).

use gauntlet_corpus::projection::{Baseline, Event, Timestamp};
use gauntlet_detect::external::{ExternalDetector, Limits};
use gauntlet_detect::fleet::{Fleet, Input, Member, Status};
use serde_json::json;
use std::os::unix::fs::PermissionsExt;
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::{Duration, Instant};

fn repo() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../..")
}

fn script(dir: &Path, name: &str, body: &str) -> PathBuf {
    let d = dir.join(name);
    std::fs::create_dir_all(&d).unwrap();
    let p = d.join("detector");
    std::fs::write(&p, body).unwrap();
    std::fs::set_permissions(&p, std::fs::Permissions::from_mode(0o755)).unwrap();
    p
}

fn limits(ms: u64) -> Limits {
    Limits {
        timeout: Duration::from_millis(ms),
        cpu_secs: 2,
        memory_bytes: 256 << 20,
        allow_unconfined: false,
    }
}

fn forwarding_event(to: &str) -> Event {
    Event {
        id: "e1".into(),
        source: "google-workspace".into(),
        event_type: "mailbox_rule_create".into(),
        actor: "finance.lead".into(),
        timestamp: Timestamp::parse_or_zero("2026-06-12T18:05:40Z"),
        payload: json!({"action": "create_filter", "target": "mail/finance.lead", "severity": "info",
                        "metadata": {"forward_to": to}}),
    }
}

#[test]
fn example_detector_speaks_the_protocol() {
    let exe = repo().join("detectors/mailbox-forwarding/detector");
    let d = ExternalDetector::new("mailbox-forwarding", &exe, limits(10_000)).unwrap();
    assert!(
        d.scenarios_dir
            .as_ref()
            .unwrap()
            .ends_with("mailbox-forwarding/scenarios")
    );
    let b = Baseline::default();
    let out = d
        .run(&[forwarding_event("me@mail.example.invalid")], &b)
        .unwrap();
    assert_eq!(out.len(), 1);
    assert_eq!(out[0].family(), "mailbox-forwarding");
    assert_eq!(out[0].actor, "finance.lead");
    assert_eq!(out[0].event_ids, vec!["e1"]);
    assert_eq!(out[0].timestamp.hour(), 18);
    assert!(
        d.run(&[forwarding_event("team@examplecorp.example.invalid")], &b)
            .unwrap()
            .is_empty()
    );
}

#[test]
fn hanging_crashing_and_over_limit_detectors_fail_alone() {
    let dir = tempfile::tempdir().unwrap();
    let t = dir.path();
    // Hangs, with a background child that must die with the process group.
    let hang = script(t, "hang", "#!/bin/sh\nsleep 30 &\nwait\n");
    let crash = script(t, "crash", "#!/bin/sh\ncat >/dev/null\nkill -SEGV $$\n");
    let status = script(t, "status", "#!/bin/sh\necho 'boom' >&2\nexit 3\n");
    let garbage = script(t, "garbage", "#!/bin/sh\ncat >/dev/null\necho 'not json'\n");
    let cpu = script(t, "cpu", "#!/bin/sh\nwhile :; do :; done\n");
    let mem = script(
        t,
        "mem",
        "#!/usr/bin/env python3\nimport sys\nsys.stdin.read()\nx = bytearray(1 << 30)\nprint('{}')\n",
    );
    let writes = script(
        t,
        "writes",
        "#!/bin/sh\ncat >/dev/null\nhead -c 4096 /dev/zero > out.bin\necho '{}'\n",
    );
    let ok = script(
        t,
        "ok",
        "#!/bin/sh\ncat >/dev/null\necho '{\"findings\": []}'\n",
    );

    let b = Baseline::default();
    let ev = [forwarding_event("x@y.example.invalid")];
    let run = |p: &Path, ms: u64| {
        ExternalDetector::new("t", p, limits(ms))
            .unwrap()
            .run(&ev, &b)
            .map_err(|e| e.to_string())
    };

    let start = Instant::now();
    let e = run(&hang, 300).unwrap_err();
    assert!(e.contains("timed out"), "{e}");
    assert!(start.elapsed() < Duration::from_secs(5));
    assert!(run(&crash, 5000).unwrap_err().contains("signal 11"));
    let e = run(&status, 5000).unwrap_err();
    assert!(e.contains("status 3") && e.contains("boom"), "{e}");
    assert!(run(&garbage, 5000).unwrap_err().contains("not JSON"));
    // A generous wall clock: on a loaded machine 2 s of CPU can take far longer than 10 s.
    let e = run(&cpu, 60_000).unwrap_err();
    assert!(e.contains("CPU time limit"), "{e}");
    assert!(
        run(&mem, 10_000).is_err(),
        "1 GiB allocation under a 256 MiB address-space limit"
    );
    // The detector's own directory is read-only: the write fails, the detector carries on.
    assert!(run(&writes, 5000).unwrap().is_empty());
    let written = std::fs::metadata(writes.with_file_name("out.bin"))
        .map(|m| m.len())
        .unwrap_or(0);
    assert_eq!(written, 0);
    assert!(run(&ok, 5000).unwrap().is_empty());
}

#[test]
fn external_failures_are_isolated_inside_a_fleet() {
    let dir = tempfile::tempdir().unwrap();
    let hang = script(dir.path(), "hang", "#!/bin/sh\nexec sleep 30\n");
    let crash = script(dir.path(), "crash", "#!/bin/sh\nkill -SEGV $$\n");
    let example = repo().join("detectors/mailbox-forwarding/detector");
    let mut members: Vec<Member> = gauntlet_detect::builtin()
        .into_iter()
        .map(Member::Builtin)
        .collect();
    // The hanging member's limit is short so the test is quick; the working one gets
    // time enough to start its interpreter on a loaded machine (at 400 ms it timed out
    // under a load average of 20, which is not what this test is about).
    for (name, p, ms) in [
        ("x-hang", &hang, 400),
        ("x-crash", &crash, 400),
        ("mailbox-forwarding", &example, 5_000),
    ] {
        let d = ExternalDetector::new(name, p, limits(ms)).unwrap();
        members.push(Member::External(Arc::new(d)));
    }
    let fleet = Fleet::new(members, Duration::from_secs(5));
    let input = Arc::new(Input {
        events: vec![forwarding_event("me@mail.example.invalid")],
        baseline: Baseline::default(),
    });
    for _ in 0..2 {
        let runs = fleet.run(input.clone());
        let by = |n: &str| runs.iter().find(|r| r.detector == n).unwrap();
        assert_eq!(
            by("x-hang").status.kind(),
            "timeout",
            "{:?}",
            by("x-hang").status
        );
        assert!(by("x-hang").status.message().contains("timed out"));
        assert_eq!(by("x-crash").status.kind(), "failed");
        assert_eq!(by("mailbox-forwarding").status, Status::Ok);
        assert_eq!(by("mailbox-forwarding").findings.len(), 1);
        assert_eq!(by("new-actor").status, Status::Ok);
        assert_eq!(
            by("new-actor").findings.len(),
            1,
            "unknown actor with an empty baseline"
        );
    }
}
