//! The real MCP servers from the npm registry (scripts/install-mcp-servers.sh; the tests
//! read its directory from GAUNTLET_MCP_SERVERS_DIR): listed, scanned and called through
//! the confined client. With CI set a missing install fails these tests; elsewhere they
//! print a loud SKIP.

use gauntlet_mcp::client::{Limits, Session, inventory_of};
use gauntlet_mcp::finding::Severity;
use gauntlet_mcp::scan::scan_inventories;
use gauntlet_mcp::servers::{Endpoint, ServerSpec};
use serde_json::json;
use std::path::PathBuf;

fn servers_dir() -> Option<PathBuf> {
    match std::env::var_os("GAUNTLET_MCP_SERVERS_DIR") {
        Some(d) => Some(PathBuf::from(d)),
        None if std::env::var_os("CI").is_some() => {
            panic!(
                "GAUNTLET_MCP_SERVERS_DIR is not set: scripts/install-mcp-servers.sh failed (see the .ci/run log)"
            )
        }
        None => {
            eprintln!(
                "SKIP: GAUNTLET_MCP_SERVERS_DIR is not set (run scripts/install-mcp-servers.sh)"
            );
            None
        }
    }
}

fn node_server(dir: &std::path::Path, name: &str, args: &[&str]) -> ServerSpec {
    let js = dir.join(format!(
        "node_modules/@modelcontextprotocol/server-{name}/dist/index.js"
    ));
    assert!(js.is_file(), "{} is missing", js.display());
    let mut a = vec![js.to_string_lossy().into_owned()];
    a.extend(args.iter().map(|s| s.to_string()));
    ServerSpec {
        name: name.into(),
        endpoint: Endpoint::Stdio {
            command: "node".into(),
            args: a,
            env: Default::default(),
            cwd: None,
        },
    }
}

fn rt() -> tokio::runtime::Runtime {
    tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .unwrap()
}

#[test]
fn server_everything_is_listed_and_its_honest_tools_are_not_poisoned() {
    let Some(dir) = servers_dir() else { return };
    let inv = rt()
        .block_on(inventory_of(
            &node_server(&dir, "everything", &["stdio"]),
            &Limits::default(),
        ))
        .unwrap();
    let names: Vec<&str> = inv
        .tools
        .iter()
        .map(|t| t["name"].as_str().unwrap())
        .collect();
    for t in [
        "echo",
        "get-sum",
        "get-env",
        "trigger-long-running-operation",
    ] {
        assert!(names.contains(&t), "{names:?}");
    }
    assert!(!inv.prompts.is_empty() && !inv.resources.is_empty());
    let r = scan_inventories(&[inv]);
    // No poisoning finding on its honest tools. What is reported is explained: the
    // gzip tool's `data` parameter fetches any URL (format uri, no pattern), a real
    // capability, reported as information (`info`: below the default gate).
    for f in &r.findings {
        assert!(!f.rule.is_poisoning(), "{f:?}");
        assert_eq!(
            (f.rule, f.severity),
            (
                gauntlet_mcp::rules::excessive_capability::RULE,
                Severity::Info
            ),
            "{f:?}"
        );
        assert!(
            f.message.contains("any URL") || f.message.contains("any file path"),
            "{f:?}"
        );
    }
}

#[test]
fn server_filesystem_is_scanned_and_called_in_its_scratch_dir() {
    let Some(dir) = servers_dir() else { return };
    let spec = node_server(&dir, "filesystem", &["${GAUNTLET_SCRATCH}"]);
    rt().block_on(async {
        let s = Session::connect(&spec, &Limits::default()).await.unwrap();
        let inv = s.inventory().await.unwrap();
        let r = scan_inventories(std::slice::from_ref(&inv));
        // Every finding is a path parameter the schema leaves open (the server's own
        // allowed-directory check is what confines it, which a schema cannot show).
        assert!(!r.findings.is_empty());
        for f in &r.findings {
            assert_eq!(
                (f.rule, f.severity),
                (
                    gauntlet_mcp::rules::excessive_capability::RULE,
                    Severity::Info
                ),
                "{f:?}"
            );
            assert!(f.message.contains("any file path"), "{f:?}");
        }
        let root = s.scratch().unwrap();
        let file = root.join("notes.txt");
        let w = s
            .call_tool(
                "write_file",
                json!({"path": file, "content": "CANARY-MCP-FS-1"}),
            )
            .await
            .unwrap();
        assert_ne!(w["isError"], true, "{w}");
        assert_eq!(std::fs::read_to_string(&file).unwrap(), "CANARY-MCP-FS-1");
        let r = s
            .call_tool("read_text_file", json!({"path": file}))
            .await
            .unwrap();
        assert!(r.to_string().contains("CANARY-MCP-FS-1"), "{r}");
        // Outside its root the server refuses by itself, and Landlock would in any case.
        let e = s
            .call_tool(
                "write_file",
                json!({"path": "/tmp/gauntlet-mcp-outside.txt", "content": "x"}),
            )
            .await;
        assert!(e.map(|v| v["isError"] == true).unwrap_or(true));
        assert!(!std::path::Path::new("/tmp/gauntlet-mcp-outside.txt").exists());
        s.close().await;
    });
}
