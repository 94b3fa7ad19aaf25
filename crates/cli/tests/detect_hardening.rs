//! `gauntlet exam-detect` with a hostile external detector, through the binary: a
//! detector printing 200,000 findings (~44 MB) used to take ~0.5–0.7 GB of RAM; the
//! output is now parsed as it streams and capped, so the run fails that detector with
//! a clear message and the process stays small.

use crate::common;

use common::BIN;
use std::os::unix::fs::PermissionsExt;
use std::os::unix::process::ExitStatusExt;
use std::process::{Command, Stdio};

/// Runs `cmd` to completion; (exit status, stdout, stderr, peak RSS in KiB of the
/// process and the descendants it waited for).
/// The child is reaped with `wait4` (for its rusage), not `Child::wait`.
#[expect(
    clippy::zombie_processes,
    reason = "reaped with wait4 (for its rusage), which clippy cannot see"
)]
fn run_measured(cmd: &mut Command) -> (std::process::ExitStatus, String, String, i64) {
    let child = cmd
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let pid = child.id() as libc::pid_t;
    let mut out = child.stdout.unwrap();
    let mut err = child.stderr.unwrap();
    let t = std::thread::spawn(move || {
        let mut s = String::new();
        std::io::Read::read_to_string(&mut err, &mut s).unwrap();
        s
    });
    let mut stdout = String::new();
    std::io::Read::read_to_string(&mut out, &mut stdout).unwrap();
    let stderr = t.join().unwrap();
    let mut status = 0;
    // SAFETY: waiting for our own child with valid out pointers.
    let mut ru: libc::rusage = unsafe { std::mem::zeroed() };
    let r = unsafe { libc::wait4(pid, &mut status, 0, &mut ru) };
    assert_eq!(r, pid);
    (
        std::process::ExitStatus::from_raw(status),
        stdout,
        stderr,
        ru.ru_maxrss,
    )
}

#[test]
fn a_flood_of_findings_is_capped_in_bounded_memory() {
    let t = tempfile::tempdir().unwrap();
    let corpus = t.path().join("corpus");
    std::fs::create_dir_all(&corpus).unwrap();
    std::fs::copy(
        common::repo_root()
            .join("exams/scenarios/identity/NA-01-unknown-principal-enumerates-vault.yaml"),
        corpus.join("NA-01.yaml"),
    )
    .unwrap();
    let o = Command::new(BIN)
        .arg("corpus")
        .arg("pin")
        .arg(&corpus)
        .output()
        .unwrap();
    assert!(o.status.success());

    // 200,000 findings, written once; the detector only copies the file to stdout
    // (`cat` stays tiny, so the peak RSS measured below is gauntlet's).
    let dir = t.path().join("flood");
    std::fs::create_dir_all(&dir).unwrap();
    let big = dir.join("big.json");
    let mut s = String::from("{\"findings\": [");
    for i in 0..200_000 {
        if i > 0 {
            s.push(',');
        }
        s.push_str(&format!(
            "{{\"id\": \"f{i}\", \"type\": \"flood\", \"actor\": \"actor-{i}\", \"severity\": \"low\", \"reason\": \"synthetic finding number {i} from a noisy detector\", \"event_ids\": [\"e1\"], \"evidence\": {{\"n\": {i}, \"note\": \"padding padding\"}}}}"
        ));
    }
    s.push_str("]}");
    assert!(s.len() > 30_000_000);
    std::fs::write(&big, s).unwrap();
    let exe = dir.join("detector");
    std::fs::write(
        &exe,
        format!("#!/bin/sh\ncat >/dev/null\ncat '{}'\n", big.display()),
    )
    .unwrap();
    std::fs::set_permissions(&exe, std::fs::Permissions::from_mode(0o755)).unwrap();

    let (status, stdout, stderr, rss_kib) = run_measured(
        Command::new(BIN)
            .arg("exam-detect")
            .arg("--corpus")
            .arg(&corpus)
            .arg("--detector")
            .arg(format!("flood={}", exe.display()))
            .arg("--allow-unconfined-detectors"),
    );
    eprintln!("peak RSS {} MiB\n{stdout}\n{stderr}", rss_kib / 1024);
    assert_eq!(status.code(), Some(2), "a detector failure is operational");
    assert!(
        stdout.contains("more than 10000 findings"),
        "the cap is named: {stdout}"
    );
    assert!(
        rss_kib < 150 * 1024,
        "peak RSS {} MiB: the output was not streamed",
        rss_kib / 1024
    );
}
