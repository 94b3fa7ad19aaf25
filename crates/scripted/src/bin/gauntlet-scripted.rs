//! `gauntlet-scripted`: runs the scripted, fault-injecting server until killed.
//!
//! Usage: `gauntlet-scripted [--script FILE.json] [--port N]`. It binds 127.0.0.1 (port
//! 0 = any free port unless `--port` is given) and prints `listening on
//! http://127.0.0.1:PORT` on stdout once ready, so scripts and benchmarks can start it,
//! read the address, and point an `openai_compat` (`base_url: http://127.0.0.1:PORT/v1`)
//! or `anthropic` (`base_url: http://127.0.0.1:PORT`) target at it. A test tool only.

// Files are read through `gauntlet_core::files` only (clippy.toml says why).
#![cfg_attr(not(test), deny(clippy::disallowed_methods))]

use gauntlet_scripted::{Script, ScriptedServer};
use std::io::Write;
use std::net::SocketAddr;

fn usage() -> ! {
    eprintln!("usage: gauntlet-scripted [--script FILE.json] [--port N]");
    std::process::exit(2);
}

/// The script file its caller (a test, a benchmark) names; exits 2 when unreadable.
#[expect(
    clippy::disallowed_methods,
    reason = "a test tool reading the script its own caller wrote, not gauntlet's input"
)]
fn read_script(path: &str) -> String {
    std::fs::read_to_string(path).unwrap_or_else(|e| {
        eprintln!("cannot read {path}: {e}");
        std::process::exit(2);
    })
}

#[tokio::main]
async fn main() {
    let mut script = Script::default();
    let mut port: u16 = 0;
    let mut args = std::env::args().skip(1);
    while let Some(a) = args.next() {
        match a.as_str() {
            "--script" => {
                let path = args.next().unwrap_or_else(|| usage());
                let text = read_script(&path);
                script = Script::from_json(&text).unwrap_or_else(|e| {
                    eprintln!("{path}: invalid script: {e}");
                    std::process::exit(2);
                });
            }
            "--port" => {
                port = args
                    .next()
                    .and_then(|p| p.parse().ok())
                    .unwrap_or_else(|| usage());
            }
            "-h" | "--help" => usage(),
            _ => usage(),
        }
    }
    let server = ScriptedServer::start_on(SocketAddr::from(([127, 0, 0, 1], port)), script)
        .await
        .unwrap_or_else(|e| {
            eprintln!("cannot bind 127.0.0.1:{port}: {e}");
            std::process::exit(1);
        });
    println!("listening on {}", server.url());
    let _ = std::io::stdout().flush();
    std::future::pending::<()>().await;
}
