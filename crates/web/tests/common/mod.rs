//! Helpers of the dashboard tests: real runs made by the engine from the bundled
//! example configs, a served dashboard, and raw HTTP/1.1 requests (raw so that paths
//! reach the server exactly as written, `..` and `%2e` included).

#![allow(dead_code)]

use gauntlet_web::Dashboard;
use std::net::SocketAddr;
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::sync::atomic::AtomicBool;
use tokio::io::{AsyncReadExt, AsyncWriteExt};

pub fn example(name: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../../examples")
        .join(name)
}

/// Runs an example config into `runs_dir` with the engine (a real, offline run).
pub async fn make_run(runs_dir: &Path, config: &str) -> PathBuf {
    let cfg = gauntlet_engine::config::load(&example(config), &gauntlet_engine::Registry)
        .expect("example config loads");
    let plan = gauntlet_engine::plan::Plan::build(cfg).expect("plan builds");
    let out = gauntlet_engine::run::execute(
        plan,
        gauntlet_engine::run::RunOptions {
            runs_dir: runs_dir.to_path_buf(),
            concurrency: None,
            stop: Arc::new(AtomicBool::new(false)),
        },
        Arc::new(gauntlet_engine::progress::Silent),
    )
    .await
    .expect("example runs");
    out.dir
}

/// Copies a run directory (regular files only).
pub fn copy_run(from: &Path, to: &Path) {
    std::fs::create_dir_all(to).unwrap();
    for e in std::fs::read_dir(from).unwrap() {
        let e = e.unwrap();
        if e.file_type().unwrap().is_file() {
            std::fs::copy(e.path(), to.join(e.file_name())).unwrap();
        }
    }
}

/// Serves `d` on an ephemeral loopback port.
pub async fn serve(d: Arc<Dashboard>, token: Option<&str>) -> SocketAddr {
    let (addr, _task) =
        gauntlet_web::server::spawn(d, "127.0.0.1:0".parse().unwrap(), token.map(str::to_owned))
            .await
            .unwrap();
    addr
}

pub struct Resp {
    pub status: u16,
    pub head: String,
    pub body: String,
}

impl Resp {
    pub fn header(&self, name: &str) -> Option<String> {
        self.head.lines().find_map(|l| {
            let (k, v) = l.split_once(':')?;
            k.eq_ignore_ascii_case(name).then(|| v.trim().to_owned())
        })
    }
}

/// One raw HTTP/1.1 request; `host` overrides the Host header.
pub async fn request(addr: SocketAddr, method: &str, path: &str, extra: &[(&str, &str)]) -> Resp {
    let mut s = tokio::net::TcpStream::connect(addr).await.unwrap();
    let mut req = format!("{method} {path} HTTP/1.1\r\nConnection: close\r\n");
    if !extra.iter().any(|(k, _)| k.eq_ignore_ascii_case("host")) {
        req.push_str(&format!("Host: {addr}\r\n"));
    }
    for (k, v) in extra {
        req.push_str(&format!("{k}: {v}\r\n"));
    }
    req.push_str("\r\n");
    s.write_all(req.as_bytes()).await.unwrap();
    let mut buf = Vec::new();
    s.read_to_end(&mut buf).await.unwrap();
    let text = String::from_utf8_lossy(&buf).into_owned();
    let (head, body) = text.split_once("\r\n\r\n").unwrap_or((&text, ""));
    let status = head
        .split_whitespace()
        .nth(1)
        .and_then(|c| c.parse().ok())
        .unwrap_or(0);
    Resp {
        status,
        head: head.to_owned(),
        body: body.to_owned(),
    }
}

pub async fn get(addr: SocketAddr, path: &str) -> Resp {
    request(addr, "GET", path, &[]).await
}
