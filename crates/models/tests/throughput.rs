//! Throughput of the live-target transport against the test server (ignored by default;
//! run with `cargo test --release -p gauntlet-models --test throughput -- --ignored
//! --nocapture`). With 100 ms of server latency and 100 concurrent callers the ideal is
//! 1,000 calls/s; this prints calls/s achieved and process CPU seconds per 1,000 calls
//! (client and server share the process, so the CPU figure includes the server).

use crate::common;

use common::openai;
use gauntlet_core::message::{ChatRequest, Message};
use gauntlet_models::Model;
use gauntlet_scripted::{Script, ScriptedServer};
use std::sync::Arc;
use std::time::Instant;

/// User + system CPU time of this process, in seconds (Linux /proc; 0 elsewhere).
fn cpu_seconds() -> f64 {
    let Ok(stat) = std::fs::read_to_string("/proc/self/stat") else {
        return 0.0;
    };
    let after = &stat[stat.rfind(')').map_or(0, |i| i + 2)..];
    let f: Vec<&str> = after.split_whitespace().collect();
    let ticks = |i: usize| f.get(i).and_then(|v| v.parse::<f64>().ok()).unwrap_or(0.0);
    // Fields 14 and 15 of the stat line (utime, stime) are 11 and 12 after the `)`.
    (ticks(11) + ticks(12)) / 100.0
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
#[ignore = "benchmark; run explicitly"]
async fn throughput_100ms_latency_concurrency_100() {
    const WORKERS: usize = 100;
    const PER_WORKER: usize = 30;
    let server = ScriptedServer::start(Script::default().latency_ms(100))
        .await
        .unwrap();
    let t = Arc::new(openai(
        &server.openai_base_url(),
        "BENCH_KEY",
        "timeout_s: 10",
    ));
    // Warm the connection pool.
    let warm: Vec<_> = (0..WORKERS)
        .map(|_| {
            let t = t.clone();
            tokio::spawn(async move {
                t.chat(&ChatRequest {
                    messages: vec![Message::user("warm")],
                    ..Default::default()
                })
                .await
                .unwrap();
            })
        })
        .collect();
    for w in warm {
        w.await.unwrap();
    }
    let cpu0 = cpu_seconds();
    let start = Instant::now();
    let handles: Vec<_> = (0..WORKERS)
        .map(|w| {
            let t = t.clone();
            tokio::spawn(async move {
                for i in 0..PER_WORKER {
                    let req = ChatRequest {
                        messages: vec![Message::user(format!("worker {w} call {i}"))],
                        ..Default::default()
                    };
                    t.chat(&req).await.unwrap();
                }
            })
        })
        .collect();
    for h in handles {
        h.await.unwrap();
    }
    let wall = start.elapsed().as_secs_f64();
    let cpu = cpu_seconds() - cpu0;
    let calls = (WORKERS * PER_WORKER) as f64;
    let rate = calls / wall;
    println!(
        "calls: {calls}, wall: {wall:.2} s, {rate:.0} calls/s ({:.1}% of the 1000/s ideal), CPU: {:.3} s per 1000 calls",
        rate / 10.0,
        cpu / calls * 1000.0
    );
    let s = t.transport_stats().unwrap();
    assert_eq!(s.retries(), 0);
}
