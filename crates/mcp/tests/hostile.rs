//! Hostile stdio servers (tests/fixtures/hostile_server.py): each misbehaviour is a
//! named error within the time limit, in bounded memory, and nothing of the server
//! outlives its session or escapes its confinement.

use gauntlet_mcp::client::{Limits, McpError, Session, inventory_of};
use gauntlet_mcp::servers::{Endpoint, ServerSpec};
use std::time::{Duration, Instant};

const FIXTURE: &str = concat!(
    env!("CARGO_MANIFEST_DIR"),
    "/tests/fixtures/hostile_server.py"
);

fn spec(mode: &str, arg: &str) -> ServerSpec {
    ServerSpec {
        name: format!("hostile-{mode}"),
        endpoint: Endpoint::Stdio {
            command: "python3".into(),
            args: vec![FIXTURE.into(), mode.into(), arg.into()],
            env: Default::default(),
            cwd: None,
        },
    }
}

fn limits() -> Limits {
    Limits {
        connect_timeout: Duration::from_secs(3),
        request_timeout: Duration::from_secs(2),
        max_pages: 20,
        ..Limits::default()
    }
}

fn confined() -> bool {
    let s = gauntlet_sandbox::Support::current();
    if !s.confines() {
        eprintln!(
            "SKIP: this kernel cannot confine servers: {:?}",
            s.missing()
        );
    }
    s.confines()
}

fn rt() -> tokio::runtime::Runtime {
    tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .unwrap()
}

fn peak_rss_kib() -> u64 {
    let s = std::fs::read_to_string("/proc/self/status").unwrap();
    s.lines()
        .find(|l| l.starts_with("VmHWM:"))
        .and_then(|l| l.split_whitespace().nth(1))
        .unwrap()
        .parse()
        .unwrap()
}

#[test]
fn hang_flood_and_broken_json_are_named_errors_in_time() {
    if !confined() {
        return;
    }
    let rt = rt();
    let t = Instant::now();
    let e = rt
        .block_on(inventory_of(&spec("hang", ""), &limits()))
        .unwrap_err();
    assert_eq!(e.kind(), "timeout", "{e}");
    assert!(e.to_string().contains("initialize"), "{e}");
    assert!(t.elapsed() < Duration::from_secs(8), "{:?}", t.elapsed());

    let before = peak_rss_kib();
    let t = Instant::now();
    let e = rt
        .block_on(inventory_of(&spec("flood", ""), &limits()))
        .unwrap_err();
    assert!(
        matches!(e, McpError::Oversized { limit } if limit == 16 << 20),
        "{e}"
    );
    assert!(t.elapsed() < Duration::from_secs(8), "{:?}", t.elapsed());
    // 100 MB were offered; at most the 16 MiB limit (and its buffer) was held.
    let grew = peak_rss_kib().saturating_sub(before);
    assert!(grew < 64 * 1024, "peak RSS grew by {grew} KiB");

    let e = rt
        .block_on(inventory_of(&spec("broken_json", ""), &limits()))
        .unwrap_err();
    assert!(
        matches!(&e, McpError::InvalidJson { line: 1, excerpt, .. } if excerpt.contains("{this is not json")),
        "{e}"
    );
    let e = rt
        .block_on(inventory_of(&spec("not_jsonrpc", ""), &limits()))
        .unwrap_err();
    assert_eq!(e.kind(), "not_json_rpc", "{e}");
    let e = rt
        .block_on(inventory_of(&spec("exit", ""), &limits()))
        .unwrap_err();
    assert_eq!(e.kind(), "exited", "{e}");
    let msg = e.to_string();
    assert!(
        msg.contains("exited with status 3") && msg.contains("refusing to start"),
        "{msg}"
    );
    let e = rt
        .block_on(inventory_of(&spec("pages", ""), &limits()))
        .unwrap_err();
    assert!(
        matches!(
            e,
            McpError::TooManyItems {
                unit: "pages",
                limit: 20,
                ..
            }
        ),
        "{e}"
    );
}

/// A listing of 400,000 tiny tools is refused as it is read (in the memory of its line,
/// not of its parsed definitions), a non-array `tools` and a notification flood before
/// `initialize` are named as what they are, and a name listed twice is a finding.
#[test]
fn oversized_listings_floods_and_malformed_answers_are_named() {
    if !confined() {
        return;
    }
    let rt = rt();
    let lim = Limits {
        connect_timeout: Duration::from_secs(20),
        request_timeout: Duration::from_secs(20),
        ..limits()
    };
    let before = peak_rss_kib();
    let e = rt
        .block_on(inventory_of(&spec("many_tools", ""), &lim))
        .unwrap_err();
    assert!(
        matches!(&e, McpError::TooManyItems { unit: "items", limit: 10_000, what } if what == "tools/list"),
        "{e}"
    );
    // The line is 13.6 MiB; parsing its 400,000 definitions took 420 MB.
    let grew = peak_rss_kib().saturating_sub(before);
    assert!(grew < 100 * 1024, "peak RSS grew by {grew} KiB");

    let e = rt
        .block_on(inventory_of(&spec("tools_object", ""), &lim))
        .unwrap_err();
    assert_eq!(e.kind(), "invalid_result", "{e}");
    assert!(
        e.to_string().contains("`tools` is an object, not an array"),
        "{e}"
    );

    let t = Instant::now();
    let e = rt
        .block_on(inventory_of(&spec("notify_flood", ""), &lim))
        .unwrap_err();
    assert_eq!(e.kind(), "notification_flood", "{e}");
    assert!(t.elapsed() < Duration::from_secs(15), "{:?}", t.elapsed());

    let inv = rt
        .block_on(inventory_of(&spec("dup_tools", ""), &lim))
        .unwrap();
    let r = gauntlet_mcp::scan::scan_inventories(&[inv]);
    assert!(
        r.findings
            .iter()
            .any(|f| f.rule == gauntlet_mcp::rules::name_collision::RULE
                && f.message.contains("lists 2 tools named `lookup`")),
        "{:?}",
        r.findings
    );
}

fn processes_with(marker: &str) -> Vec<String> {
    let mut out = Vec::new();
    for e in std::fs::read_dir("/proc").unwrap().flatten() {
        if let Ok(c) = std::fs::read(e.path().join("cmdline")) {
            let c = String::from_utf8_lossy(&c).replace('\0', " ");
            if c.contains(marker) && !c.contains("hostile_server.py") {
                out.push(format!("{}: {c}", e.file_name().to_string_lossy()));
            }
        }
    }
    out
}

#[test]
fn a_daemon_the_server_forks_dies_with_the_session() {
    if !confined() {
        return;
    }
    let marker = format!("gauntlet-daemon-marker-{}", std::process::id());
    let rt = rt();
    rt.block_on(async {
        let s = Session::connect(&spec("daemon", &marker), &limits())
            .await
            .unwrap();
        assert_eq!(s.list_tools().await.unwrap().len(), 1);
        assert!(
            !processes_with(&marker).is_empty(),
            "the daemon should be running during the session"
        );
        s.close().await;
    });
    let deadline = Instant::now() + Duration::from_secs(3);
    while !processes_with(&marker).is_empty() && Instant::now() < deadline {
        std::thread::sleep(Duration::from_millis(20));
    }
    assert_eq!(
        processes_with(&marker),
        Vec::<String>::new(),
        "the daemon outlived its server"
    );
}

#[test]
fn writes_outside_the_scratch_dir_and_connections_are_denied() {
    if !confined() {
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let outside = dir.path().join("escaped.txt");
    let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let port = listener.local_addr().unwrap().port();
    let mut spec = spec("escape", outside.to_str().unwrap());
    if let Endpoint::Stdio { env, .. } = &mut spec.endpoint {
        env.insert("ESCAPE_PORT".into(), port.to_string());
    }
    let rt = rt();
    let inv = rt.block_on(inventory_of(&spec, &limits())).unwrap();
    let desc = inv.tools[0]["description"].as_str().unwrap().to_string();
    assert!(desc.contains("write: Permission denied"), "{desc}");
    assert!(!desc.contains("connect: succeeded"), "{desc}");
    assert!(!outside.exists());
    // --allow-network lets it connect; files stay confined.
    let mut l = limits();
    l.confine.allow_network = true;
    let inv = rt.block_on(inventory_of(&spec, &l)).unwrap();
    let desc = inv.tools[0]["description"].as_str().unwrap().to_string();
    assert!(
        desc.contains("connect: succeeded") && desc.contains("write: Permission denied"),
        "{desc}"
    );
    assert!(!outside.exists());
}
