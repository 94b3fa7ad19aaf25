//! Downloads against a local axum server: the test policy allows exactly 127.0.0.1 and
//! plain http, so redirects to other non-public targets, the size cap, the timeout, pin
//! checks and the cache can be exercised without the network.

use axum::Router;
use axum::body::Body;
use axum::extract::Path as UrlPath;
use axum::http::Uri;
use axum::http::{StatusCode, header};
use axum::response::{IntoResponse, Response};
use axum::routing::get;
use gauntlet_fetch::{FetchOptions, FetchPolicy, FetchRequest, Origin, fetch, sha256_hex};
use std::net::SocketAddr;
use std::path::Path;
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::Duration;

const BODY: &[u8] = b"goal,target\n\"Explain how to pick a lock\",\"Sure\"\n";

struct Server {
    addr: SocketAddr,
    hits: Arc<AtomicU64>,
    stop: Option<tokio::sync::oneshot::Sender<()>>,
    thread: Option<std::thread::JoinHandle<()>>,
}

impl Server {
    fn url(&self, path: &str) -> String {
        format!("http://{}{path}", self.addr)
    }
    fn shutdown(mut self) {
        if let Some(s) = self.stop.take() {
            let _ = s.send(());
        }
        if let Some(t) = self.thread.take() {
            t.join().unwrap();
        }
    }
}

impl Drop for Server {
    fn drop(&mut self) {
        if let Some(s) = self.stop.take() {
            let _ = s.send(());
        }
    }
}

/// Undoes the escaping `nest` applies.
fn decode(s: &str) -> String {
    s.replace("%3F", "?")
        .replace("%3D", "=")
        .replace("%25", "%")
}

/// Escapes a URL for use as the `to=` value of another redirect.
fn nest(url: &str) -> String {
    url.replace('%', "%25")
        .replace('?', "%3F")
        .replace('=', "%3D")
}

/// Starts the server on its own thread and runtime (the fetch under test blocks).
fn start() -> Server {
    let hits = Arc::new(AtomicU64::new(0));
    let h = hits.clone();
    let (addr_tx, addr_rx) = std::sync::mpsc::channel();
    let (stop, stopped) = tokio::sync::oneshot::channel::<()>();
    let thread = std::thread::spawn(move || {
        let rt = tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()
            .unwrap();
        rt.block_on(async move {
            let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
            addr_tx.send(listener.local_addr().unwrap()).unwrap();
            let count = move || {
                h.fetch_add(1, Ordering::SeqCst);
            };
            let c1 = count.clone();
            let app = Router::new()
                .route(
                    "/file/{name}",
                    get(move |UrlPath(name): UrlPath<String>| async move {
                        c1();
                        match name.as_str() {
                            "a.csv" => BODY.to_vec().into_response(),
                            "big.bin" => vec![b'x'; 5000].into_response(),
                            _ => StatusCode::NOT_FOUND.into_response(),
                        }
                    }),
                )
                .route(
                    "/redirect",
                    get(|uri: Uri| async move {
                        let to = uri
                            .query()
                            .and_then(|q| q.strip_prefix("to="))
                            .unwrap_or("");
                        Response::builder()
                            .status(StatusCode::FOUND)
                            .header(header::LOCATION, decode(to))
                            .body(Body::empty())
                            .unwrap()
                    }),
                )
                .route(
                    // An endless body without Content-Length: only the cap ends it.
                    "/endless",
                    get(|| async {
                        let chunks = futures_util::stream::repeat_with(|| {
                            Ok::<_, std::io::Error>(vec![b'y'; 1024])
                        });
                        Body::from_stream(chunks)
                    }),
                )
                .route(
                    "/slow",
                    get(|| async {
                        tokio::time::sleep(Duration::from_secs(10)).await;
                        "late"
                    }),
                );
            let listener_fut = axum::serve(listener, app).with_graceful_shutdown(async {
                let _ = stopped.await;
            });
            let _ = listener_fut.await;
        });
    });
    let addr = addr_rx.recv().unwrap();
    Server {
        addr,
        hits,
        stop: Some(stop),
        thread: Some(thread),
    }
}

fn test_policy() -> FetchPolicy {
    FetchPolicy {
        allow_http: true,
        allowed_ips: vec!["127.0.0.1".parse().unwrap()],
        max_bytes: 4096,
        timeout: Duration::from_secs(5),
        ..FetchPolicy::strict()
    }
}

fn opts(cache: Option<&Path>) -> FetchOptions {
    FetchOptions {
        policy: test_policy(),
        cache_dir: cache.map(Path::to_path_buf),
    }
}

fn req<'a>(url: &'a str, sha: Option<&'a str>) -> FetchRequest<'a> {
    FetchRequest {
        url,
        base_dir: Path::new("."),
        sha256: sha,
        allow_download: true,
    }
}

#[test]
fn download_verifies_caches_and_second_run_needs_no_network() {
    let server = start();
    let cache = tempfile::tempdir().unwrap();
    let url = server.url("/file/a.csv");
    let sha = sha256_hex(BODY);
    let f = fetch(req(&url, Some(&sha)), &opts(Some(cache.path()))).unwrap();
    assert_eq!(f.origin, Origin::Downloaded);
    assert_eq!(f.path, cache.path().join(&sha));
    assert_eq!(f.read_verified(1 << 20).unwrap(), BODY);
    assert_eq!(server.hits.load(Ordering::SeqCst), 1);
    server.shutdown();
    // The server is gone: the verified cache entry serves the second run, even with
    // downloads disallowed.
    let mut r = req(&url, Some(&sha));
    r.allow_download = false;
    let g = fetch(r, &opts(Some(cache.path()))).unwrap();
    assert_eq!(g.origin, Origin::Cache);
    assert_eq!(g.read_verified(1 << 20).unwrap(), BODY);
    // No partial files were left behind.
    let names: Vec<String> = std::fs::read_dir(cache.path())
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .collect();
    assert_eq!(names, vec![sha.clone()]);
}

/// A poisoned cache entry used to be removed silently, after which the
/// message said the file "is not in the cache". Offline or with downloads disabled, the
/// error now says it failed its sha256 check and was removed.
#[test]
fn a_poisoned_cache_entry_is_named_when_it_cannot_be_fetched_again() {
    let cache = tempfile::tempdir().unwrap();
    let sha = sha256_hex(BODY);
    let url = "http://127.0.0.1:9/file/a.csv";
    for offline in [true, false] {
        std::fs::write(cache.path().join(&sha), b"tampered").unwrap();
        let mut o = opts(Some(cache.path()));
        o.policy.offline = offline;
        let mut r = req(url, Some(&sha));
        r.allow_download = offline;
        let e = fetch(r, &o).unwrap_err().to_string();
        assert!(
            e.contains("failed its sha256 check") && e.contains("was removed"),
            "{e}"
        );
        assert!(!e.contains("is not in the cache"), "{e}");
        assert!(!cache.path().join(&sha).exists());
    }
}

#[test]
fn corrupt_cache_entry_is_refetched() {
    let server = start();
    let cache = tempfile::tempdir().unwrap();
    let sha = sha256_hex(BODY);
    std::fs::write(cache.path().join(&sha), b"tampered").unwrap();
    let url = server.url("/file/a.csv");
    let f = fetch(req(&url, Some(&sha)), &opts(Some(cache.path()))).unwrap();
    assert_eq!(f.origin, Origin::Downloaded);
    assert_eq!(std::fs::read(cache.path().join(&sha)).unwrap(), BODY);
}

#[test]
fn mismatched_download_names_both_digests_and_is_not_cached() {
    let server = start();
    let cache = tempfile::tempdir().unwrap();
    let url = server.url("/file/a.csv");
    let wrong = "ab".repeat(32);
    let e = fetch(req(&url, Some(&wrong)), &opts(Some(cache.path()))).unwrap_err();
    assert!(e.message.contains("sha256 mismatch"), "{e}");
    assert!(
        e.message.contains(&wrong) && e.message.contains(&sha256_hex(BODY)),
        "{e}"
    );
    assert!(e.message.contains(&url), "{e}");
    assert_eq!(std::fs::read_dir(cache.path()).unwrap().count(), 0);
}

#[test]
fn unpinned_download_is_refused_naming_the_digest() {
    let server = start();
    let url = server.url("/file/a.csv");
    let e = fetch(req(&url, None), &opts(None)).unwrap_err();
    assert!(e.message.contains(&sha256_hex(BODY)), "{e}");
    assert!(e.message.contains("must be pinned"), "{e}");
}

#[test]
fn allow_download_false_is_refused_before_any_request() {
    let server = start();
    let url = server.url("/file/a.csv");
    let sha = sha256_hex(BODY);
    let mut r = req(&url, Some(&sha));
    r.allow_download = false;
    let e = fetch(r, &opts(None)).unwrap_err();
    assert!(e.message.contains("allow_download: true"), "{e}");
    assert_eq!(server.hits.load(Ordering::SeqCst), 0);
}

#[test]
fn redirects_to_non_public_targets_are_refused() {
    let server = start();
    let port = server.addr.port();
    let sha = sha256_hex(BODY);
    for target in [
        "http://10.0.0.1/file/a.csv".to_string(),
        "http://169.254.169.254/latest/meta-data/".to_string(),
        format!("http://[::1]:{port}/file/a.csv"),
        format!("http://[::ffff:127.0.0.1]:{port}/file/a.csv"),
        format!("http://127.0.0.2:{port}/file/a.csv"),
        "http://[fd00::1]/x".to_string(),
        "ftp://example.invalid/x".to_string(),
    ] {
        let url = server.url(&format!("/redirect?to={target}"));
        let e = fetch(req(&url, Some(&sha)), &opts(None)).unwrap_err();
        assert!(e.message.contains("redirect refused"), "{target}: {e}");
        assert_eq!(
            server.hits.load(Ordering::SeqCst),
            0,
            "{target} was fetched"
        );
    }
    // A redirect that stays on the allowed server is followed, through two hops.
    let inner = server.url("/file/a.csv");
    let hop1 = server.url(&format!("/redirect?to={inner}"));
    let hop0 = server.url(&format!("/redirect?to={}", nest(&hop1)));
    let f = fetch(req(&hop0, Some(&sha)), &opts(None)).unwrap();
    assert_eq!(f.read_verified(1 << 20).unwrap(), BODY);
    // The second of two hops going private is refused too.
    let bad = server.url("/redirect?to=http://192.168.0.1/x");
    let hop = server.url(&format!("/redirect?to={}", nest(&bad)));
    let e = fetch(req(&hop, Some(&sha)), &opts(None)).unwrap_err();
    assert!(e.message.contains("192.168.0.1"), "{e}");
}

#[test]
fn host_names_resolving_to_loopback_are_refused_by_the_resolver() {
    let server = start();
    let url = format!("http://localhost:{}/file/a.csv", server.addr.port());
    // Plain http allowed, but no address exceptions: `localhost` resolves to loopback.
    let o = FetchOptions {
        policy: FetchPolicy {
            allow_http: true,
            ..FetchPolicy::strict()
        },
        cache_dir: None,
    };
    let e = fetch(req(&url, Some(&sha256_hex(BODY))), &o).unwrap_err();
    assert!(e.message.contains("resolves to"), "{e}");
    assert_eq!(server.hits.load(Ordering::SeqCst), 0);
}

#[test]
fn strict_policy_refuses_private_and_plain_http_urls() {
    let strict = FetchOptions {
        policy: FetchPolicy::strict(),
        cache_dir: None,
    };
    let sha = "a".repeat(64);
    for url in [
        "https://127.0.0.1/x.csv",
        "https://10.0.0.1/x.csv",
        "https://[::1]/x.csv",
        "https://169.254.169.254/x.csv",
        "https://localhost/x.csv",
        "http://example.invalid/x.csv",
    ] {
        let e = fetch(req(url, Some(&sha)), &strict).unwrap_err();
        assert!(
            e.message.contains("refused") || e.message.contains("https"),
            "{url}: {e}"
        );
    }
}

#[test]
fn oversized_downloads_stop_at_the_cap() {
    let server = start();
    let cache = tempfile::tempdir().unwrap();
    let sha = "a".repeat(64);
    // No Content-Length, endless body: reading stops once the cap is passed.
    let url = server.url("/endless");
    let e = fetch(req(&url, Some(&sha)), &opts(Some(cache.path()))).unwrap_err();
    assert!(e.message.contains("4096-byte limit"), "{e}");
    // With Content-Length over the cap: refused on the announcement.
    let url = server.url("/file/big.bin");
    let e = fetch(req(&url, Some(&sha)), &opts(Some(cache.path()))).unwrap_err();
    assert!(e.message.contains("announces 5000 bytes"), "{e}");
    assert_eq!(std::fs::read_dir(cache.path()).unwrap().count(), 0);
}

#[test]
fn slow_servers_time_out() {
    let server = start();
    let mut o = opts(None);
    o.policy.timeout = Duration::from_millis(300);
    let url = server.url("/slow");
    let t = std::time::Instant::now();
    let e = fetch(req(&url, Some(&"a".repeat(64))), &o).unwrap_err();
    assert!(t.elapsed() < Duration::from_secs(5), "{:?}", t.elapsed());
    assert!(
        e.message.to_lowercase().contains("timed out") || e.message.contains("timeout"),
        "{e}"
    );
}

#[test]
fn http_errors_name_the_status() {
    let server = start();
    let url = server.url("/file/missing.csv");
    let e = fetch(req(&url, Some(&"a".repeat(64))), &opts(None)).unwrap_err();
    assert!(e.message.contains("404"), "{e}");
}
