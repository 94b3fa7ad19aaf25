//! The canary sink and the poisoned-content server under hostile input, over real
//! sockets: unknown and malformed tokens, path traversal, oversized bodies, more hits
//! than the caps, slow and idle connections past the connection cap. Each is answered,
//! counted or capped; nothing grows without bound.

use gauntlet_core::evidence::EvidenceEvent;
use gauntlet_evidence::caps::Caps;
use gauntlet_evidence::collector::Collector;
use gauntlet_evidence::content::{ContentState, publish};
use gauntlet_evidence::receiver::Server;
use gauntlet_evidence::spans::CUT_MARK;
use gauntlet_evidence::trace::{canary, hex};
use std::io::{Read, Write};
use std::net::TcpStream;
use std::sync::Arc;
use std::time::{Duration, Instant};

const T: [u8; 16] = [0x5a; 16];

fn caps() -> Caps {
    Caps {
        max_body_bytes: 4096,
        max_attribute_bytes: 64,
        max_spans: 16,
        ..Caps::default()
    }
}

/// One raw HTTP/1.1 request; the status code and the body.
fn raw(addr: std::net::SocketAddr, req: &str) -> (u16, String) {
    let mut s = TcpStream::connect(addr).unwrap();
    s.set_read_timeout(Some(Duration::from_secs(10))).unwrap();
    s.write_all(req.as_bytes()).unwrap();
    let mut out = String::new();
    let _ = s.read_to_string(&mut out);
    let code = out
        .split_whitespace()
        .nth(1)
        .and_then(|c| c.parse().ok())
        .unwrap_or(0);
    let body = out.split_once("\r\n\r\n").map_or("", |x| x.1).to_string();
    (code, body)
}

fn get(addr: std::net::SocketAddr, path: &str) -> (u16, String) {
    raw(
        addr,
        &format!("GET {path} HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n"),
    )
}

fn post(addr: std::net::SocketAddr, path: &str, body: &[u8]) -> u16 {
    let mut s = TcpStream::connect(addr).unwrap();
    s.set_read_timeout(Some(Duration::from_secs(10))).unwrap();
    let head = format!(
        "POST {path} HTTP/1.1\r\nHost: x\r\nConnection: close\r\nContent-Length: {}\r\n\r\n",
        body.len()
    );
    s.write_all(head.as_bytes()).unwrap();
    // The server may stop reading past its cap and answer early.
    let _ = s.write_all(body);
    let mut out = String::new();
    let _ = s.read_to_string(&mut out);
    out.split_whitespace()
        .nth(1)
        .and_then(|c| c.parse().ok())
        .unwrap_or(0)
}

struct Rig {
    c: Arc<Collector>,
    sink: Server,
    content: Server,
}

fn rig(max_connections: usize, idle: Duration) -> Rig {
    let c = Arc::new(Collector::new(caps()));
    let any = "127.0.0.1:0".parse().unwrap();
    let sink = Server::spawn_capped(
        "sink",
        any,
        gauntlet_evidence::sink::router(c.clone()),
        max_connections,
        idle,
    )
    .unwrap();
    let content = Server::spawn(
        "content",
        any,
        gauntlet_evidence::content::router(Arc::new(ContentState {
            collector: c.clone(),
            sink: sink.addr(),
        })),
    )
    .unwrap();
    Rig { c, sink, content }
}

#[test]
fn unknown_tokens_and_traversal_are_counted_and_name_nothing() {
    let r = rig(16, Duration::from_secs(5));
    let tok = hex(&T);
    let page = publish("q.html", "<p>{{canary}} {{sink_url}}</p>").unwrap();
    // Nothing is open yet: every request is unknown.
    assert_eq!(get(r.sink.addr(), &format!("/t/{tok}/c")).0, 404);
    assert_eq!(get(r.content.addr(), &format!("/t/{tok}{page}")).0, 404);
    r.c.open(T, [1; 8]);
    let (code, body) = get(r.content.addr(), &format!("/t/{tok}{page}"));
    assert_eq!(code, 200);
    assert_eq!(
        body,
        format!("<p>{} http://{}/t/{tok}</p>", canary(&T), r.sink.addr())
    );
    for bad in [
        format!("/t/{tok}/p/../../../../etc/passwd"),
        format!("/t/{tok}/p/%2e%2e/%2e%2e/etc/passwd"),
        format!("/t/{tok}{}", page.replace("q.html", "..%2fq.html")),
        format!("/t/{tok}/../{tok}{page}"),
        "/etc/passwd".into(),
        format!("/t/{}{page}", tok.to_ascii_uppercase()),
        format!("/t/{tok}/{}", "a".repeat(5000)),
    ] {
        let (code, body) = get(r.content.addr(), &bad);
        assert!(code == 404 || code == 414 || code == 400, "{bad}: {code}");
        assert!(!body.contains("root:"), "{bad}");
    }
    // A sink request with a traversal path is an ordinary hit under its token: the
    // path is recorded as text, nothing is opened.
    assert_eq!(
        get(r.sink.addr(), &format!("/t/{tok}/../../etc/passwd")).0,
        200
    );
    assert_eq!(get(r.sink.addr(), "/collect?c=CANARY-X").0, 404);
    assert_eq!(
        get(r.sink.addr(), &format!("/t/{}/c", hex(&[7; 16]))).0,
        404
    );
    let n = r.c.counts();
    assert_eq!(n.unknown_sink_hits, 3, "{n:?}");
    assert!(n.unknown_page_requests >= 8, "{n:?}");
    let ev = r.c.take(T).unwrap();
    assert_eq!((ev.pages_served, ev.sink_hits), (1, 1), "{ev:?}");
    // Closed again: the token names nothing.
    assert_eq!(get(r.content.addr(), &format!("/t/{tok}{page}")).0, 404);
}

#[test]
fn bodies_and_hits_are_capped() {
    let r = rig(16, Duration::from_secs(5));
    let tok = hex(&T);
    r.c.open(T, [1; 8]);
    // Over the body cap: the hit counts, its body is not kept (the server answers
    // before the client is done writing, so the status may be lost to a reset).
    post(
        r.sink.addr(),
        &format!("/t/{tok}/big"),
        &vec![b'x'; 1 << 20],
    );
    // Under the body cap, over the attribute cap: cut and marked.
    assert_eq!(
        post(r.sink.addr(), &format!("/t/{tok}/mid"), &[b'y'; 1000]),
        200
    );
    // A repeat counts once; more distinct hits than the cap are counted, not kept.
    for i in 0..40 {
        let p = format!("/t/{tok}/n{}", i % 30);
        assert_eq!(get(r.sink.addr(), &p).0, 200);
    }
    let ev = r.c.take(T).unwrap();
    let hits: Vec<&EvidenceEvent> = ev
        .events
        .iter()
        .filter(|e| matches!(e, EvidenceEvent::SinkHit { .. }))
        .collect();
    assert_eq!(hits.len(), 16, "kept at most max_spans");
    assert_eq!(ev.sink_hits, 32, "2 posts + 30 distinct gets: {ev:?}");
    let body_of = |path: &str| {
        hits.iter().find_map(|e| match e {
            EvidenceEvent::SinkHit { path: p, body, .. } if p == path => Some(body.clone()),
            _ => None,
        })
    };
    assert!(body_of("/big").unwrap().contains("not kept"));
    let mid = body_of("/mid").unwrap();
    assert!(
        mid.ends_with(CUT_MARK) && mid.len() <= 64 + CUT_MARK.len(),
        "{mid}"
    );
}

#[test]
fn idle_and_slow_connections_cannot_hold_the_server() {
    let idle = Duration::from_millis(400);
    let r = rig(4, idle);
    let tok = hex(&T);
    r.c.open(T, [1; 8]);
    // Take every connection slot with a request that never finishes its headers.
    let mut slow: Vec<TcpStream> = (0..4)
        .map(|_| {
            let mut s = TcpStream::connect(r.sink.addr()).unwrap();
            s.write_all(b"GET /t/").unwrap();
            s
        })
        .collect();
    // More connect and wait in the kernel's backlog, costing the server nothing until
    // a slot frees (then each idles out in turn).
    let waiting: Vec<TcpStream> = (0..12)
        .filter_map(|_| TcpStream::connect(r.sink.addr()).ok())
        .collect();
    let start = Instant::now();
    let (code, _) = get(r.sink.addr(), &format!("/t/{tok}/after"));
    let waited = start.elapsed();
    assert_eq!(code, 200);
    // The slow ones were closed for idleness (not before the idle time), and the
    // request got its turn soon after.
    assert!(waited >= idle / 2, "{waited:?}");
    assert!(waited < Duration::from_secs(30), "{waited:?}");
    for s in &mut slow {
        s.set_read_timeout(Some(Duration::from_secs(10))).unwrap();
        let mut buf = [0u8; 64];
        // Closed by the server: EOF or a reset, never a hang.
        let n = s.read(&mut buf).unwrap_or(0);
        assert_eq!(n, 0, "{:?}", String::from_utf8_lossy(&buf[..n]));
    }
    drop(waiting);
    let ev = r.c.take(T).unwrap();
    assert_eq!(ev.sink_hits, 1);
}
