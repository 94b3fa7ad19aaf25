//! The external-detector sandbox against hostile detectors: each probe of a hostile
//! audit — truncate, delete, create files anywhere; a double-forked
//! `setsid` grandchild outliving the run; a network connection — now fails to do harm.
//! On a kernel that cannot confine, the detector is refused instead (checked too).

use gauntlet_corpus::projection::Baseline;
use gauntlet_detect::external::{ConfigError, ExternalDetector, Limits};
use gauntlet_sandbox::Support;
use std::os::unix::fs::PermissionsExt;
use std::path::{Path, PathBuf};
use std::time::Duration;

fn limits() -> Limits {
    Limits {
        timeout: Duration::from_secs(10),
        cpu_secs: 5,
        memory_bytes: 512 << 20,
        allow_unconfined: false,
    }
}

fn script(dir: &Path, name: &str, body: &str) -> PathBuf {
    let d = dir.join(name);
    std::fs::create_dir_all(&d).unwrap();
    let p = d.join("detector");
    std::fs::write(&p, body).unwrap();
    std::fs::set_permissions(&p, std::fs::Permissions::from_mode(0o755)).unwrap();
    p
}

/// The detector, or `None` (after checking the refusal) on a kernel that cannot
/// confine it.
fn confined(name: &str, p: &Path) -> Option<ExternalDetector> {
    match ExternalDetector::new(name, p, limits()) {
        Ok(d) => Some(d),
        Err(e @ ConfigError::Unconfined { .. }) => {
            assert!(!Support::current().confines());
            let msg = e.to_string();
            assert!(msg.contains("--allow-unconfined-detectors"), "{msg}");
            eprintln!(
                "\n======== SANDBOX UNAVAILABLE on this kernel: the detector was refused ({msg}) ========\n"
            );
            None
        }
        Err(e) => panic!("{e}"),
    }
}

fn reason(findings: &[gauntlet_corpus::projection::Finding]) -> String {
    findings
        .first()
        .map(|f| f.reason.clone())
        .unwrap_or_default()
}

#[test]
fn files_outside_the_scratch_directory_cannot_be_changed() {
    let t = tempfile::tempdir().unwrap();
    let victim = t.path().join("victim");
    std::fs::create_dir_all(&victim).unwrap();
    for f in ["keep.txt", "keep2.txt", "keep3.txt", "del.txt"] {
        std::fs::write(victim.join(f), "precious").unwrap();
    }
    let outside = std::env::temp_dir().join(format!("gauntlet-probe-{}", std::process::id()));
    let _ = std::fs::remove_file(&outside);
    let v = victim.display();
    let body = format!(
        "#!/bin/sh\ncat >/dev/null\n\
         true > '{v}/keep.txt'\n\
         truncate -s 0 '{v}/keep2.txt'\n\
         rm -f '{v}/del.txt'\n\
         touch '{v}/new.txt' '{o}'\n\
         mkdir '{v}/newdir'\n\
         ln -s /etc/passwd '{v}/link'\n\
         mv '{v}/keep3.txt' '{v}/moved.txt'\n\
         chmod 000 '{v}/keep.txt'\n\
         echo hi > \"$TMPDIR/s.txt\" && s=$(cat \"$TMPDIR/s.txt\")\n\
         echo \"{{\\\"findings\\\": [{{\\\"type\\\": \\\"probe\\\", \\\"reason\\\": \\\"scratch=$s\\\"}}]}}\"\n",
        o = outside.display()
    );
    let exe = script(t.path(), "vandal", &body);
    let Some(d) = confined("vandal", &exe) else {
        return;
    };
    let out = d.run(&[], &Baseline::default()).unwrap();
    assert_eq!(
        reason(&out),
        "scratch=hi",
        "the scratch directory is writable"
    );
    for f in ["keep.txt", "keep2.txt", "keep3.txt", "del.txt"] {
        assert_eq!(
            std::fs::read_to_string(victim.join(f)).unwrap_or_default(),
            "precious",
            "{f} was changed, moved or deleted"
        );
    }
    let mode = std::fs::metadata(victim.join("keep.txt"))
        .unwrap()
        .permissions()
        .mode();
    assert_ne!(mode & 0o777, 0, "chmod went through");
    for f in ["new.txt", "newdir", "link", "moved.txt"] {
        assert!(
            std::fs::symlink_metadata(victim.join(f)).is_err(),
            "{f} was created"
        );
    }
    assert!(
        std::fs::symlink_metadata(&outside).is_err(),
        "{} was created",
        outside.display()
    );
}

/// Processes whose command line holds `marker`.
fn processes_with(marker: &str) -> Vec<i32> {
    let mut v = Vec::new();
    for e in std::fs::read_dir("/proc").unwrap().flatten() {
        let Ok(pid) = e.file_name().to_string_lossy().parse::<i32>() else {
            continue;
        };
        let cmd = std::fs::read(e.path().join("cmdline")).unwrap_or_default();
        if String::from_utf8_lossy(&cmd).contains(marker) {
            v.push(pid);
        }
    }
    v
}

#[test]
fn no_descendant_outlives_the_run() {
    let t = tempfile::tempdir().unwrap();
    let a = format!("4242.{}", std::process::id());
    let b = format!("4243.{}", std::process::id());
    let body = format!(
        "#!/bin/sh\ncat >/dev/null\n\
         setsid sh -c 'exec sleep {a}' </dev/null >/dev/null 2>&1 &\n\
         ( ( setsid sleep {b} </dev/null >/dev/null 2>&1 & ) & )\n\
         sleep 0.3\n\
         echo '{{\"findings\": []}}'\n"
    );
    let exe = script(t.path(), "daemon", &body);
    let Some(d) = confined("daemon", &exe) else {
        return;
    };
    assert!(d.run(&[], &Baseline::default()).unwrap().is_empty());
    std::thread::sleep(Duration::from_millis(300));
    let left: Vec<i32> = processes_with(&a)
        .into_iter()
        .chain(processes_with(&b))
        .collect();
    for pid in &left {
        // Clean up before failing, so a regression does not leave sleepers behind.
        unsafe { libc::kill(*pid, libc::SIGKILL) };
    }
    assert!(left.is_empty(), "descendants outlived the run: {left:?}");

    // The same on a timeout: the whole tree goes, not only the process group.
    let c = format!("4244.{}", std::process::id());
    let body = format!(
        "#!/bin/sh\ncat >/dev/null\n\
         ( ( setsid sleep {c} </dev/null >/dev/null 2>&1 & ) & )\n\
         exec sleep 30\n"
    );
    let exe = script(t.path(), "hangs", &body);
    let mut l = limits();
    l.timeout = Duration::from_millis(500);
    let d = ExternalDetector::new("hangs", &exe, l).unwrap();
    let e = d.run(&[], &Baseline::default()).unwrap_err().to_string();
    assert!(e.contains("timed out"), "{e}");
    std::thread::sleep(Duration::from_millis(300));
    let left = processes_with(&c);
    for pid in &left {
        unsafe { libc::kill(*pid, libc::SIGKILL) };
    }
    assert!(
        left.is_empty(),
        "descendants outlived the timeout: {left:?}"
    );
}

#[test]
fn no_network_connection_can_be_made() {
    use std::net::{TcpListener, UdpSocket};
    let t = tempfile::tempdir().unwrap();
    let tcp = TcpListener::bind("127.0.0.1:0").unwrap();
    tcp.set_nonblocking(true).unwrap();
    let udp = UdpSocket::bind("127.0.0.1:0").unwrap();
    udp.set_nonblocking(true).unwrap();
    let sock = t.path().join("s.sock");
    let unix = std::os::unix::net::UnixListener::bind(&sock).unwrap();
    unix.set_nonblocking(true).unwrap();
    let body = format!(
        r#"#!/usr/bin/env python3
import json, socket, sys
sys.stdin.read()
res = []
def probe(name, f):
    try:
        f()
        res.append(name + "-ok")
    except Exception as e:
        res.append(name + "-" + type(e).__name__)
def tcp():
    s = socket.create_connection(("127.0.0.1", {tp}), timeout=2)
    s.sendall(b"x")
def udp():
    u = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
    u.sendto(b"x", ("127.0.0.1", {up}))
def unix():
    s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    s.connect("{sock}")
probe("tcp", tcp)
probe("udp", udp)
probe("unix", unix)
print(json.dumps({{"findings": [{{"type": "probe", "reason": " ".join(res)}}]}}))
"#,
        tp = tcp.local_addr().unwrap().port(),
        up = udp.local_addr().unwrap().port(),
        sock = sock.display()
    );
    let exe = script(t.path(), "caller", &body);
    let Some(d) = confined("caller", &exe) else {
        return;
    };
    let out = d.run(&[], &Baseline::default()).unwrap();
    let r = reason(&out);
    assert!(!r.contains("-ok"), "a connection was made: {r}");
    assert!(
        r.contains("tcp-") && r.contains("udp-") && r.contains("unix-"),
        "{r}"
    );
    assert!(tcp.accept().is_err(), "the TCP listener got a connection");
    let mut buf = [0u8; 8];
    assert!(
        udp.recv_from(&mut buf).is_err(),
        "the UDP socket got a datagram"
    );
    assert!(unix.accept().is_err(), "the unix socket got a connection");
}
