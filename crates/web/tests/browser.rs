//! The dashboard in a real browser: headless Chromium driven over WebDriver
//! (chromedriver + fantoccini). The leaderboard loads, a filter narrows it, a run page and
//! a transcript open, a leaderboard carrying `<script>` and `onerror=` payloads renders
//! inert, the static site opens from files, and no page logs a console error or a CSP
//! violation (read from the browser log). A screenshot of each page is saved under
//! `target/tmp/browser-shots/` and its path printed.
//!
//! Needs Debian's `chromium` and `chromium-driver` (`.ci/run` installs them). Without
//! them each test prints `SKIP` with the reason and returns — unless
//! `GAUNTLET_REQUIRE_BROWSER=1` (set by `.ci/run` when the install succeeded), where a
//! missing browser fails the test.

use crate::common;

use common::*;
use fantoccini::wd::WebDriverCompatibleCommand;
use fantoccini::{Client, ClientBuilder, Locator};
use gauntlet_web::Dashboard;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::Duration;

fn which(name: &str) -> Option<PathBuf> {
    std::env::var_os("PATH")?
        .to_str()?
        .split(':')
        .map(|d| Path::new(d).join(name))
        .find(|p| p.is_file())
}

/// Chromium and chromedriver, or why not (after printing a loud SKIP).
fn tools(test: &str) -> Option<(PathBuf, PathBuf)> {
    let found = which("chromium")
        .or_else(|| which("chromium-browser"))
        .zip(which("chromedriver"));
    if found.is_none() {
        let why =
            "chromium and/or chromedriver not on PATH (apt-get install chromium chromium-driver)";
        if std::env::var("GAUNTLET_REQUIRE_BROWSER").as_deref() == Ok("1") {
            panic!("{test}: GAUNTLET_REQUIRE_BROWSER=1 but {why}");
        }
        eprintln!("SKIP {test}: {why}");
        println!("SKIP {test}: {why}");
    }
    found
}

/// A chromedriver process and a browser session; the driver is killed on drop.
struct Browser {
    driver: Child,
    client: Option<Client>,
    _profile: tempfile::TempDir,
}

impl Drop for Browser {
    /// Kills chromedriver's whole process group, so a browser is never left behind
    /// even when a test fails before closing its session.
    fn drop(&mut self) {
        let _ = Command::new("kill")
            .args(["-KILL", "--", &format!("-{}", self.driver.id())])
            .status();
        let _ = self.driver.kill();
        let _ = self.driver.wait();
    }
}

/// A loopback port free now, for chromedriver to listen on. Taken below the kernel's
/// ephemeral range (32768-60999 on Linux), from which the outgoing connections of tests
/// running alongside take their local ports — a port from `bind(0)` could be taken by
/// one of them before chromedriver binds it — and never the same one twice in a
/// process; each test process starts at its own offset.
fn free_port() -> u16 {
    use std::sync::atomic::{AtomicU32, Ordering};
    static NEXT: AtomicU32 = AtomicU32::new(0);
    const LOW: u32 = 20_000;
    const SPAN: u32 = 12_000;
    let start = std::process::id().wrapping_mul(97) % SPAN;
    for _ in 0..SPAN {
        let n = NEXT.fetch_add(1, Ordering::Relaxed);
        let port = (LOW + (start + n) % SPAN) as u16;
        if std::net::TcpListener::bind(("127.0.0.1", port)).is_ok() {
            return port;
        }
    }
    panic!("no free loopback port in {LOW}..{}", LOW + SPAN);
}

async fn start(chromium: &Path, chromedriver: &Path) -> Browser {
    let port = free_port();
    use std::os::unix::process::CommandExt;
    let driver = Command::new(chromedriver)
        .arg(format!("--port={port}"))
        .process_group(0)
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .expect("chromedriver starts");
    let profile = tempfile::tempdir().unwrap();
    let mut b = Browser {
        driver,
        client: None,
        _profile: profile,
    };
    let caps: serde_json::Map<String, serde_json::Value> = serde_json::from_value(serde_json::json!({
        "browserName": "chrome",
        "goog:chromeOptions": {
            "binary": chromium,
            "args": [
                "--headless", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
                "--disable-background-networking", "--disable-component-update", "--disable-sync",
                "--disable-dev-shm-usage", "--window-size=1280,1000",
                format!("--user-data-dir={}", b._profile.path().display()),
            ],
        },
        "goog:loggingPrefs": {"browser": "ALL"},
    }))
    .unwrap();
    let url = format!("http://127.0.0.1:{port}");
    let mut last = None;
    for _ in 0..100 {
        match ClientBuilder::new(hyper_util::client::legacy::connect::HttpConnector::new())
            .capabilities(caps.clone())
            .connect(&url)
            .await
        {
            Ok(c) => {
                b.client = Some(c);
                return b;
            }
            Err(e) => last = Some(e),
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    panic!("cannot start a browser session: {last:?}");
}

/// chromedriver's browser log (entries since the last call).
#[derive(Debug)]
struct BrowserLog;

impl WebDriverCompatibleCommand for BrowserLog {
    fn endpoint(
        &self,
        base: &url::Url,
        session: Option<&str>,
    ) -> Result<url::Url, url::ParseError> {
        base.join(&format!("session/{}/se/log", session.unwrap_or_default()))
    }
    fn method_and_body(&self, _: &url::Url) -> (http::Method, Option<String>) {
        (http::Method::POST, Some(r#"{"type":"browser"}"#.into()))
    }
}

/// Console errors and CSP violations logged since the last call.
async fn problems(c: &Client) -> Vec<String> {
    let log = c
        .issue_cmd(BrowserLog)
        .await
        .expect("the browser log is readable");
    log.as_array()
        .into_iter()
        .flatten()
        .filter(|e| {
            let level = e["level"].as_str().unwrap_or("");
            let msg = e["message"].as_str().unwrap_or("");
            level == "SEVERE"
                || msg.contains("Content Security Policy")
                || msg.contains("Refused to")
        })
        .map(|e| e.to_string())
        .collect()
}

fn shots_dir() -> PathBuf {
    let d = Path::new(env!("CARGO_TARGET_TMPDIR")).join("browser-shots");
    std::fs::create_dir_all(&d).unwrap();
    d
}

async fn shot(c: &Client, name: &str) {
    let png = c.screenshot().await.expect("screenshot");
    let p = shots_dir().join(format!("{name}.png"));
    std::fs::write(&p, png).unwrap();
    println!("screenshot: {}", p.display());
}

/// After a page loads: no console errors, no CSP violations, no script elements, no
/// alert open; then a screenshot.
async fn clean_page(c: &Client, name: &str) {
    let p = problems(c).await;
    assert!(
        p.is_empty(),
        "{name}: console errors or CSP violations: {p:#?}"
    );
    assert!(
        c.get_alert_text().await.is_err(),
        "{name}: an alert is open"
    );
    assert!(
        c.find_all(Locator::Css("script")).await.unwrap().is_empty(),
        "{name}"
    );
    shot(c, name).await;
}

async fn rows(c: &Client, table: &str) -> usize {
    c.find_all(Locator::Css(&format!("#{table} tbody tr")))
        .await
        .unwrap()
        .len()
}

#[tokio::test(flavor = "multi_thread")]
async fn browser_leaderboard_filter_run_page_and_transcript() {
    let Some((chromium, driver)) = tools("browser_leaderboard_filter_run_page_and_transcript")
    else {
        return;
    };
    let tmp = tempfile::tempdir().unwrap();
    make_run(tmp.path(), "smoke.yaml").await;
    make_run(tmp.path(), "injection_smoke.yaml").await;
    let d = Dashboard::new(vec![tmp.path().to_path_buf()], recount());
    d.check_pending();
    let addr = serve(d, None).await;
    let b = start(&chromium, &driver).await;
    let c = b.client.as_ref().unwrap();

    // The log reader sees CSP violations: a page that breaks its own policy is caught.
    c.goto("data:text/html,<meta http-equiv=\"Content-Security-Policy\" content=\"default-src 'none'\"><script>document.title=1</script>").await.unwrap();
    assert!(
        !problems(c).await.is_empty(),
        "a CSP violation must show in the browser log (else this test could not fail)"
    );

    c.goto(&format!("http://{addr}/?surface=jailbreak"))
        .await
        .unwrap();
    assert_eq!(rows(c, "leaderboard").await, 40);
    clean_page(c, "leaderboard").await;

    // A filter narrows it: choose a target and a metric, submit the form.
    c.find(Locator::Css("select[name=target]"))
        .await
        .unwrap()
        .select_by_value("aligned")
        .await
        .unwrap();
    c.find(Locator::Css("select[name=metric]"))
        .await
        .unwrap()
        .select_by_value("asr")
        .await
        .unwrap();
    c.find(Locator::Css("form.filters button"))
        .await
        .unwrap()
        .click()
        .await
        .unwrap();
    c.wait().for_url(&url::Url::parse(&format!("http://{addr}/?surface=jailbreak&target=aligned&attack=&dataset_version=&judge=&metric=asr&run=&date=&check=&sort=value&dir=desc")).unwrap()).await.unwrap();
    assert_eq!(rows(c, "leaderboard").await, 4, "2 attacks × 2 judges");
    assert!(
        !c.find_all(Locator::Css(".charts svg"))
            .await
            .unwrap()
            .is_empty()
    );
    clean_page(c, "leaderboard-filtered").await;

    // A run page, from the leaderboard's link.
    c.find(Locator::Css("#leaderboard tbody tr td a"))
        .await
        .unwrap()
        .click()
        .await
        .unwrap();
    c.wait().for_element(Locator::Id("cells")).await.unwrap();
    assert_eq!(rows(c, "cells").await, 40);
    assert!(c.find_all(Locator::Css(".charts svg")).await.unwrap().len() >= 5);
    clean_page(c, "run").await;

    // Its transcripts, and one attempt.
    c.find(Locator::Id("transcripts-link"))
        .await
        .unwrap()
        .click()
        .await
        .unwrap();
    c.wait()
        .for_element(Locator::Id("transcripts"))
        .await
        .unwrap();
    assert_eq!(rows(c, "transcripts").await, 50);
    clean_page(c, "transcripts").await;
    c.find(Locator::Css("a.open"))
        .await
        .unwrap()
        .click()
        .await
        .unwrap();
    let h2 = c.wait().for_element(Locator::Css("h2")).await.unwrap();
    assert_eq!(h2.text().await.unwrap(), "Conversation");
    clean_page(c, "transcript").await;

    // The full report and the injection run's page (its scatter).
    c.goto(&format!("http://{addr}/run/smoke/report"))
        .await
        .unwrap();
    clean_page(c, "report").await;
    c.goto(&format!("http://{addr}/run/injection_smoke"))
        .await
        .unwrap();
    clean_page(c, "run-injection").await;
    c.goto(&format!(
        "http://{addr}/compare?by=target&run=smoke&a=aligned&b=permissive"
    ))
    .await
    .unwrap();
    assert!(rows(c, "compare").await > 0);
    clean_page(c, "compare").await;
    b.client.clone().unwrap().close().await.unwrap();
}

#[tokio::test(flavor = "multi_thread")]
async fn browser_hostile_leaderboard_renders_inert() {
    let Some((chromium, driver)) = tools("browser_hostile_leaderboard_renders_inert") else {
        return;
    };
    let tmp = tempfile::tempdir().unwrap();
    let run = tmp.path().join("xss");
    std::fs::create_dir_all(&run).unwrap();
    let evil = "<script>alert(1)</script><img src=x onerror=alert(2)><svg onload=alert(3)>\"'><b onmouseover=alert(4)>x</b>";
    let rows_json = serde_json::json!([
        {"run_id": evil, "attack": evil, "target": evil, "dataset": evil, "dataset_version": evil,
         "judge": evil, "metric": "asr", "value": 0.5, "ci_low": 0.25, "ci_high": 0.75, "n": 4, "status": evil},
        {"run_id": evil, "attack": evil, "target": evil, "dataset": evil, "dataset_version": evil,
         "judge": evil, "metric": evil, "value": null, "na_reason": evil}]);
    std::fs::write(run.join("leaderboard.json"), rows_json.to_string()).unwrap();
    let line = serde_json::json!({"behavior_id": evil, "attack_name": evil, "target_name": evil,
        "transcript": [{"role": "assistant", "content": evil}],
        "verdicts": [{"judge": evil, "outcome": "success", "reason": evil}], "metadata": {"x": evil}});
    std::fs::write(run.join("transcripts.jsonl"), format!("{line}\n")).unwrap();
    let d = Dashboard::new(vec![tmp.path().to_path_buf()], recount());
    d.check_pending();
    let addr = serve(d, None).await;
    let b = start(&chromium, &driver).await;
    let c = b.client.as_ref().unwrap();
    for (name, path) in [
        (
            "hostile-leaderboard",
            "/?surface=jailbreak&metric=asr".to_owned(),
        ),
        ("hostile-run", "/run/xss".to_owned()),
        ("hostile-transcripts", "/run/xss/transcripts".to_owned()),
        ("hostile-transcript", "/run/xss/transcripts/0".to_owned()),
    ] {
        c.goto(&format!("http://{addr}{path}")).await.unwrap();
        // The payloads are text: no element they describe exists, nothing ran.
        for sel in ["img", "script", "b", "svg[onload]"] {
            assert!(
                c.find_all(Locator::Css(sel)).await.unwrap().is_empty(),
                "{name}: {sel}"
            );
        }
        let text = c
            .find(Locator::Css("main"))
            .await
            .unwrap()
            .text()
            .await
            .unwrap();
        assert!(
            text.contains("<script>alert(1)</script>"),
            "{name}: the payload shows as text"
        );
        clean_page(c, name).await;
    }
    b.client.clone().unwrap().close().await.unwrap();
}

#[tokio::test(flavor = "multi_thread")]
async fn browser_static_site_opens_from_files() {
    let Some((chromium, driver)) = tools("browser_static_site_opens_from_files") else {
        return;
    };
    let tmp = tempfile::tempdir().unwrap();
    make_run(tmp.path(), "leakage_smoke.yaml").await;
    let out = tempfile::tempdir().unwrap();
    gauntlet_web::export_site(out.path(), vec![tmp.path().to_path_buf()], recount()).unwrap();
    let b = start(&chromium, &driver).await;
    let c = b.client.as_ref().unwrap();
    c.goto(&format!("file://{}/index.html", out.path().display()))
        .await
        .unwrap();
    assert_eq!(rows(c, "overview").await, 2, "leaky and guarded");
    clean_page(c, "site-overview").await;
    c.goto(&format!(
        "file://{}/leaderboard-leakage.html",
        out.path().display()
    ))
    .await
    .unwrap();
    assert_eq!(rows(c, "leaderboard").await, 50);
    clean_page(c, "site-leaderboard").await;
    c.find(Locator::Css("#leaderboard tbody tr td a"))
        .await
        .unwrap()
        .click()
        .await
        .unwrap();
    c.wait().for_element(Locator::Id("cells")).await.unwrap();
    assert!(
        !c.find_all(Locator::Css(".charts svg"))
            .await
            .unwrap()
            .is_empty()
    );
    clean_page(c, "site-run").await;
    b.client.clone().unwrap().close().await.unwrap();
}

/// The dashboard's overview, pivot and compare pages in a real browser: the overview has one row per target; the pivot of
/// asr × refusal_match over the smoke run's two targets and two attacks opens a cell's
/// transcripts, filtered; compare of two runs on a `file://` dataset (deleted before the
/// dashboard starts: nothing reads it) lists the flipped behaviors with both replies.
#[tokio::test(flavor = "multi_thread")]
async fn browser_overview_pivot_cell_and_compare_flips() {
    let Some((chromium, driver)) = tools("browser_overview_pivot_cell_and_compare_flips") else {
        return;
    };
    let tmp = tempfile::tempdir().unwrap();
    let runs = file_dataset_runs(tmp.path()).await;
    make_run(&runs, "smoke.yaml").await;
    let d = Dashboard::new(vec![runs.clone()], recount());
    d.check_pending();
    let addr = serve(d, None).await;
    let b = start(&chromium, &driver).await;
    let c = b.client.as_ref().unwrap();

    // The overview: aligned and permissive (of the smoke run and the file-dataset runs).
    c.goto(&format!("http://{addr}/")).await.unwrap();
    assert_eq!(rows(c, "overview").await, 2, "one row per target");
    let heads = c
        .find(Locator::Css("#overview thead"))
        .await
        .unwrap()
        .text()
        .await
        .unwrap();
    assert!(
        heads.contains("asr") && heads.contains("rubric") && heads.contains("frr"),
        "{heads}"
    );
    clean_page(c, "overview").await;

    // The pivot: asr × refusal_match of the smoke run, 2 targets × 2 attacks.
    c.goto(&format!(
        "http://{addr}/pivot?metric=asr&judge=refusal_match&run=smoke"
    ))
    .await
    .unwrap();
    assert_eq!(rows(c, "pivot").await, 2);
    let cols = c
        .find_all(Locator::Css("#pivot thead th"))
        .await
        .unwrap()
        .len();
    assert_eq!(cols, 3, "label + static + template");
    // aligned × template is asr 1.000 against 0.000 for static: marked significant.
    let marks = c.find_all(Locator::Css("#pivot td.sig-up")).await.unwrap();
    assert!(!marks.is_empty(), "a significant difference is marked");
    clean_page(c, "pivot").await;
    // Click aligned × template (row 1, column 2): its transcripts, filtered.
    c.find(Locator::Css(
        "#pivot tbody tr:nth-child(1) td:nth-of-type(2) a",
    ))
    .await
    .unwrap()
    .click()
    .await
    .unwrap();
    c.wait()
        .for_element(Locator::Id("transcripts"))
        .await
        .unwrap();
    let url = c.current_url().await.unwrap();
    assert!(
        url.as_str().contains("attack=template") && url.as_str().contains("target=aligned"),
        "{url}"
    );
    let n = rows(c, "transcripts").await;
    assert!(n > 0);
    for tr in c
        .find_all(Locator::Css("#transcripts tbody tr"))
        .await
        .unwrap()
    {
        let t = tr.text().await.unwrap();
        assert!(t.contains("template") && t.contains("aligned"), "{t}");
    }
    clean_page(c, "pivot-cell-transcripts").await;

    // Compare the two file-dataset runs: the flipped behaviors come first.
    c.goto(&format!("http://{addr}/compare")).await.unwrap();
    c.find(Locator::Css("select[name=run]"))
        .await
        .unwrap()
        .select_by_value("xs-aligned")
        .await
        .unwrap();
    c.find(Locator::Css("select[name=run_b]"))
        .await
        .unwrap()
        .select_by_value("xs-permissive")
        .await
        .unwrap();
    c.find(Locator::Css("#compare-form button"))
        .await
        .unwrap()
        .click()
        .await
        .unwrap();
    c.wait().for_element(Locator::Id("flips")).await.unwrap();
    let flips = rows(c, "flips").await;
    assert!(
        flips >= 2,
        "the aligned target refuses what the permissive one answers ({flips})"
    );
    let first = c
        .find(Locator::Css("#flips tbody tr"))
        .await
        .unwrap()
        .text()
        .await
        .unwrap();
    assert!(first.contains("xstest-000"), "{first}");
    assert!(rows(c, "compare").await > 0);
    clean_page(c, "compare-file-dataset").await;
    b.client.clone().unwrap().close().await.unwrap();
}

/// Presses one key on the page (the WebDriver actions API: a real keydown and keyup).
async fn press(c: &Client, key: char) {
    use fantoccini::actions::{InputSource, KeyAction, KeyActions};
    let keys = KeyActions::new("keyboard".into())
        .then(KeyAction::Down { value: key })
        .then(KeyAction::Up { value: key });
    c.perform_actions(keys).await.expect("the key is pressed");
}

/// The labelled count the page shows.
async fn labelled(c: &Client) -> u64 {
    c.find(Locator::Css("#progress strong"))
        .await
        .unwrap()
        .text()
        .await
        .unwrap()
        .parse()
        .unwrap()
}

/// Waits until the page shows `n` labels (the POST saved and the redirect loaded).
async fn wait_labelled(c: &Client, n: u64) {
    for _ in 0..200 {
        if let Ok(e) = c.find(Locator::Css("#progress strong")).await
            && e.text().await.ok().and_then(|t| t.parse().ok()) == Some(n)
        {
            return;
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    let url = c
        .current_url()
        .await
        .map(|u| u.to_string())
        .unwrap_or_default();
    let html = c.source().await.unwrap_or_default();
    panic!("the page never showed {n} labels; at {url}:\n{html}");
}

/// `gauntlet label --serve`'s page in a real browser: 20 replies of the smoke run
/// labelled by keyboard (one of them skipped, one relabelled after going back with b);
/// every label is saved at once, the cards appear, the corrected report names each
/// target's own card, and the run directory verifies.
#[tokio::test(flavor = "multi_thread")]
async fn browser_labels_twenty_replies_by_keyboard() {
    let Some((chromium, driver)) = tools("browser_labels_twenty_replies_by_keyboard") else {
        return;
    };
    let tmp = tempfile::tempdir().unwrap();
    let run = make_run(tmp.path(), "smoke.yaml").await;
    let session = gauntlet_engine::labels::LabelSession::open(&run, None, 10, None).unwrap();
    let d = Dashboard::new(vec![tmp.path().to_path_buf()], recount());
    let l = std::sync::Arc::new(
        gauntlet_web::label::Labelling::new(&d, Box::new(Labels(session))).unwrap(),
    );
    let (addr, _task) =
        gauntlet_web::server::spawn_with(d, "127.0.0.1:0".parse().unwrap(), None, Some(l.clone()))
            .await
            .unwrap();
    let b = start(&chromium, &driver).await;
    let c = b.client.as_ref().unwrap();
    let page = format!("http://{addr}{}", l.path());
    c.goto(&page).await.unwrap();
    assert_eq!(labelled(c).await, 0);
    assert_eq!(
        c.find_all(Locator::Css("script")).await.unwrap().len(),
        1,
        "the keys' script, and nothing else"
    );
    let p = problems(c).await;
    assert!(p.is_empty(), "the page breaks its CSP: {p:#?}");
    shot(c, "label-first").await;

    let mut expected = std::collections::BTreeMap::new();
    for i in 0..20u64 {
        let item = c.find(Locator::Id("item")).await.unwrap();
        let id = item.attr("data-id").await.unwrap().unwrap();
        let reply = c
            .find(Locator::Id("reply"))
            .await
            .unwrap()
            .text()
            .await
            .unwrap()
            .to_lowercase();
        assert!(!reply.is_empty(), "reply {i} shows its text");
        assert!(
            !c.find(Locator::Id("prompt"))
                .await
                .unwrap()
                .text()
                .await
                .unwrap()
                .is_empty()
        );
        let (key, label) = if i == 3 {
            ('s', "skip")
        } else if ["can't", "cannot", "sorry", "won't"]
            .iter()
            .any(|p| reply.contains(p))
        {
            ('r', "refusal")
        } else {
            ('c', "compliance")
        };
        // Reply 6 is first labelled wrong, then corrected after going back with b.
        let (first, first_label) = if i == 5 {
            if key == 'r' {
                ('c', "compliance")
            } else {
                ('r', "refusal")
            }
        } else {
            (key, label)
        };
        press(c, first).await;
        wait_labelled(c, i + 1).await;
        if i == 5 {
            press(c, 'b').await;
            c.wait()
                .for_element(Locator::Css(&format!("#item[data-id='{id}']")))
                .await
                .unwrap();
            let h2 = c.find(Locator::Css("#item h2")).await.unwrap();
            assert!(h2.text().await.unwrap().contains(first_label));
            press(c, key).await;
            // Back at the next unlabelled reply, the count unchanged.
            for _ in 0..200 {
                if let Ok(e) = c.find(Locator::Id("item")).await
                    && let Ok(Some(now)) = e.attr("data-id").await
                    && now != id
                {
                    break;
                }
                tokio::time::sleep(Duration::from_millis(50)).await;
            }
            assert_eq!(labelled(c).await, 6);
        }
        expected.insert(id, label);
    }
    c.wait().for_element(Locator::Id("done")).await.unwrap();
    let p = problems(c).await;
    assert!(p.is_empty(), "{p:#?}");
    let cards = c
        .find(Locator::Id("cards"))
        .await
        .unwrap()
        .text()
        .await
        .unwrap();
    assert!(
        cards.contains("labels: 20 of a sample of 20 (1 skipped)"),
        "{cards}"
    );
    for t in ["aligned × refusal_match", "permissive × refusal_match"] {
        assert!(
            cards.contains(t) && cards.contains("sensitivity"),
            "{cards}"
        );
    }
    shot(c, "label-done").await;

    // What the browser saved is what was pressed, in the run's own files.
    let saved = gauntlet_engine::labels::read_labels(&run).unwrap();
    assert_eq!(saved.len(), 20);
    for it in &saved {
        assert_eq!(
            it.label.map(|l| l.as_str()),
            expected.get(&it.id).copied(),
            "{}",
            it.id
        );
    }
    assert!(run.join("label_cards.json").is_file());
    gauntlet_job::rundir::Manifest::verify(&run).expect("the labelled run verifies");

    // The corrected report, from the done page's link.
    c.find(Locator::Id("report"))
        .await
        .unwrap()
        .click()
        .await
        .unwrap();
    c.wait().for_element(Locator::Css("h1")).await.unwrap();
    let html = c.source().await.unwrap();
    for t in ["labels of aligned", "labels of permissive"] {
        assert!(html.contains(t), "the report is corrected with {t}");
    }
}

/// The pivot's cells as the page shows them: per non-baseline cell its row label,
/// column, whether it is marked ▲ / ▼, its B − A line, its "no test" and the link to
/// the same pair on the compare page.
async fn pivot_cells(c: &Client) -> Vec<serde_json::Value> {
    let js = r#"
        const cols = [...document.querySelectorAll('#pivot thead th')].map(th => th.childNodes[0].textContent.trim());
        const out = [];
        for (const tr of document.querySelectorAll('#pivot tbody tr')) {
            const row = tr.querySelector('th').textContent.trim();
            [...tr.querySelectorAll('td')].forEach((td, i) => {
                const t = td.querySelector('.test');
                const pair = td.querySelector('a.pair');
                out.push({row, col: cols[i + 1],
                    mark: td.classList.contains('sig-up') ? 'up' : td.classList.contains('sig-down') ? 'down' : '',
                    test: t ? t.textContent : '',
                    notest: !!td.querySelector('.notest'),
                    pair: pair ? pair.href : ''});
            });
        }
        return out;"#;
    c.execute(js, vec![])
        .await
        .unwrap()
        .as_array()
        .unwrap()
        .clone()
}

/// The compare page's answer rows: cell, metric, B − A, interval, p, significance and
/// the ▲ / ▼ shown.
async fn compare_rows(c: &Client) -> Vec<serde_json::Value> {
    let js = r#"
        return [...document.querySelectorAll('#compare tbody tr')].map(tr => {
            const td = tr.querySelectorAll('td');
            const diff = tr.querySelector('td.diff');
            return {cell: tr.querySelector('th').textContent.trim(), metric: td[0].textContent.trim(),
                diff: diff.childNodes[0].textContent.trim(),
                ci: td[5].childNodes[0] ? td[5].childNodes[0].textContent.trim() : '',
                p: tr.querySelector('td.p').textContent.trim(),
                significant: tr.classList.contains('significant'),
                mark: diff.textContent.includes('▲') ? 'up' : diff.textContent.includes('▼') ? 'down' : ''};
        });"#;
    c.execute(js, vec![])
        .await
        .unwrap()
        .as_array()
        .unwrap()
        .clone()
}

/// One statistic decides both pages: every tested cell of the pivot — attacks against
/// a baseline attack, and targets side by side against a baseline target — shows the
/// same B − A, interval and p as the compare page's row for the same pair (opened from
/// the cell's own link), and is marked ▲ / ▼ exactly when that row is significant. On
/// the four-probe run the aligned target's template cell (0/4 → 4/4: four discordant
/// pairs, exact McNemar p = 0.125) is not marked, where the pivot's former unpaired
/// interval test marked it ▲ while compare said p = 0.125.
#[tokio::test(flavor = "multi_thread")]
async fn browser_pivot_and_compare_agree_on_every_pair() {
    let Some((chromium, driver)) = tools("browser_pivot_and_compare_agree_on_every_pair") else {
        return;
    };
    let tmp = tempfile::tempdir().unwrap();
    let runs = four_probe_run(tmp.path()).await;
    make_run(&runs, "smoke.yaml").await;
    let d = Dashboard::new(vec![runs.clone()], recount());
    d.check_pending();
    let addr = serve(d, None).await;
    let b = start(&chromium, &driver).await;
    let c = b.client.as_ref().unwrap();
    let mut checked = 0;
    let mut marked = 0;
    for (k, (page, compared)) in [
        ("/pivot?metric=asr&judge=refusal_match&run=pairs", "attack"),
        ("/pivot?metric=asr&judge=refusal_match&run=smoke", "attack"),
        ("/pivot?metric=frr&judge=refusal_match&run=smoke", "attack"),
        (
            "/pivot?metric=asr&judge=refusal_match&run=pairs&by=target",
            "target",
        ),
        (
            "/pivot?metric=refusal_rate&judge=refusal_match&run=smoke&by=target",
            "target",
        ),
    ]
    .into_iter()
    .enumerate()
    {
        c.goto(&format!("http://{addr}{page}")).await.unwrap();
        clean_page(c, &format!("pivot-pairs-{k}")).await;
        let cells = pivot_cells(c).await;
        if k == 0 {
            let t = cells
                .iter()
                .find(|x| x["row"] == "aligned" && x["col"] == "template")
                .expect("aligned × template");
            assert_eq!(t["mark"], "", "p = 0.125 is not significant: {t}");
            assert!(
                t["test"].as_str().unwrap().ends_with("p=0.1250"),
                "the cell shows its p: {t}"
            );
        }
        for cell in cells
            .iter()
            .filter(|x| !x["pair"].as_str().unwrap().is_empty())
        {
            let href = cell["pair"].as_str().unwrap().to_owned();
            assert!(href.contains(&format!("by={compared}")), "{href}");
            c.goto(&href).await.unwrap();
            c.wait().for_element(Locator::Id("answer")).await.unwrap();
            let metric = url::Url::parse(&href)
                .unwrap()
                .query_pairs()
                .find(|(k, _)| k == "metric")
                .map(|(_, v)| v.into_owned())
                .unwrap();
            // The pivot's row is the cell the compare page names (the compared factor
            // left out): the target by attack, the attack by target.
            let row = cell["row"].as_str().unwrap();
            let rows = compare_rows(c).await;
            let r = rows
                .iter()
                .find(|r| {
                    let name = r["cell"].as_str().unwrap();
                    r["metric"] == metric.as_str()
                        && name.starts_with(&format!("{row} · "))
                        && name.ends_with(" · refusal_match")
                })
                .unwrap_or_else(|| panic!("no compare row for {cell} in {rows:#?}"));
            let line = [
                "B − A",
                r["diff"].as_str().unwrap(),
                r["ci"].as_str().unwrap(),
                r["p"].as_str().unwrap(),
            ]
            .into_iter()
            .filter(|x| !x.is_empty())
            .collect::<Vec<_>>()
            .join(" ");
            assert_eq!(cell["test"].as_str().unwrap(), line, "{cell} vs {r}");
            let expect = if r["significant"] == true {
                r["mark"].as_str().unwrap()
            } else {
                ""
            };
            assert_eq!(cell["mark"], expect, "{cell} vs {r}");
            checked += 1;
            marked += usize::from(!expect.is_empty());
        }
    }
    assert!(checked >= 8, "{checked} pairs checked");
    assert!(
        marked >= 2 && marked < checked,
        "{marked} of {checked} marked: both kinds seen"
    );
    b.client.clone().unwrap().close().await.unwrap();
}

/// The compare page opens with the answer: its first heading names both sides (the
/// runs and their targets, not "A vs B"), the paired table — B − A, its 95% interval,
/// the test and p per metric — is in the first screen, and the flipped behaviors come
/// after it.
#[tokio::test(flavor = "multi_thread")]
async fn browser_compare_opens_with_the_answer() {
    let Some((chromium, driver)) = tools("browser_compare_opens_with_the_answer") else {
        return;
    };
    let tmp = tempfile::tempdir().unwrap();
    let runs = file_dataset_runs(tmp.path()).await;
    let d = Dashboard::new(vec![runs.clone()], recount());
    d.check_pending();
    let addr = serve(d, None).await;
    let b = start(&chromium, &driver).await;
    let c = b.client.as_ref().unwrap();
    c.goto(&format!(
        "http://{addr}/compare?by=run&run=xs-aligned&run_b=xs-permissive"
    ))
    .await
    .unwrap();
    c.wait().for_element(Locator::Id("answer")).await.unwrap();
    clean_page(c, "compare-answer").await;
    let first_h2 = c
        .find(Locator::Css("main h2"))
        .await
        .unwrap()
        .text()
        .await
        .unwrap();
    assert_eq!(
        first_h2, "xs-permissive (permissive) − xs-aligned (aligned)",
        "the answer comes first, by name"
    );
    let heads = c
        .find(Locator::Css("#compare thead"))
        .await
        .unwrap()
        .text()
        .await
        .unwrap();
    for h in [
        "xs-aligned (aligned) (A)",
        "xs-permissive (permissive) (B)",
        "B − A",
        "95% CI of B − A",
        "p",
    ] {
        assert!(heads.contains(h), "{h} in {heads}");
    }
    assert!(!heads.contains("A vs B"), "{heads}");
    let geometry: serde_json::Value = c
        .execute(
            "const a = document.querySelector('#compare tbody tr').getBoundingClientRect();
             const f = document.getElementById('flips-heading').getBoundingClientRect();
             return {answer: a.top, flips: f.top, screen: window.innerHeight};",
            vec![],
        )
        .await
        .unwrap();
    let (a, f, screen) = (
        geometry["answer"].as_f64().unwrap(),
        geometry["flips"].as_f64().unwrap(),
        geometry["screen"].as_f64().unwrap(),
    );
    assert!(
        a < screen,
        "the first answer row is on the first screen: {geometry}"
    );
    assert!(a < f, "the answer comes before the flips: {geometry}");
    let rows = compare_rows(c).await;
    let asr = rows
        .iter()
        .find(|r| r["metric"] == "asr")
        .unwrap_or_else(|| panic!("{rows:#?}"));
    assert!(asr["ci"].as_str().unwrap().starts_with('['), "{asr}");
    assert!(asr["p"].as_str().unwrap().starts_with("p="), "{asr}");
    b.client.clone().unwrap().close().await.unwrap();
}

/// Every piece of text on the page against its background: the WCAG 2 contrast ratio
/// of its colour and the first opaque background behind it (composited over white),
/// at least 4.5:1 (3:1 for large text: 24 px, or 18.66 px bold). Text inside charts
/// (SVG) and elements not shown are left out. Returns the failures.
async fn contrast_failures(c: &Client) -> Vec<serde_json::Value> {
    let js = r#"
        const parse = s => { const m = s.match(/rgba?\(([^)]+)\)/); if (!m) return null;
            const p = m[1].split(',').map(x => parseFloat(x)); return [p[0], p[1], p[2], p.length > 3 ? p[3] : 1]; };
        const over = (top, under) => { const a = top[3];
            return [0, 1, 2].map(i => top[i] * a + under[i] * (1 - a)).concat([1]); };
        const lin = v => { v /= 255; return v <= 0.03928 ? v / 12.92 : Math.pow((v + 0.055) / 1.055, 2.4); };
        const lum = c => 0.2126 * lin(c[0]) + 0.7152 * lin(c[1]) + 0.0722 * lin(c[2]);
        const bgOf = el => { const layers = [];
            for (let e = el; e && e.nodeType === 1; e = e.parentElement) {
                const b = parse(getComputedStyle(e).backgroundColor);
                if (b && b[3] > 0) { layers.push(b); if (b[3] >= 1) break; } }
            let c = [255, 255, 255, 1];
            for (const l of layers.reverse()) c = over(l, c);
            return c; };
        const bad = [];
        for (const el of document.querySelectorAll('body *')) {
            if (el.closest('svg') || ['SCRIPT', 'STYLE', 'OPTION', 'TITLE'].includes(el.tagName)) continue;
            const own = [...el.childNodes].some(n => n.nodeType === 3 && n.textContent.trim());
            if (!own) continue;
            const cs = getComputedStyle(el);
            if (cs.visibility === 'hidden' || cs.display === 'none' || el.getClientRects().length === 0) continue;
            const r = el.getBoundingClientRect();
            if (r.right < 0 || r.bottom < 0) continue;
            const bg = bgOf(el);
            const fg = over(parse(cs.color), bg);
            const [l1, l2] = [lum(fg), lum(bg)].sort((a, b) => b - a);
            const ratio = (l1 + 0.05) / (l2 + 0.05);
            const size = parseFloat(cs.fontSize), bold = parseInt(cs.fontWeight) >= 700;
            const need = size >= 24 || (size >= 18.66 && bold) ? 3 : 4.5;
            if (ratio < need) bad.push({tag: el.tagName, cls: el.className, text: el.textContent.trim().slice(0, 60),
                color: cs.color, background: 'rgb(' + bg.slice(0, 3).map(Math.round).join(', ') + ')', ratio: Math.round(ratio * 100) / 100, need});
        }
        return bad;"#;
    c.execute(js, vec![])
        .await
        .unwrap()
        .as_array()
        .unwrap()
        .clone()
}

/// Every colour pair on every kind of page passes WCAG AA, a run in progress, a run
/// not complete and an unverified row included: the live-run banner's links (the
/// default link blue on its red, 1.07:1), the marks, the pivot's tests and links on
/// the darkest shade, the compare page's answer.
#[tokio::test(flavor = "multi_thread")]
async fn browser_every_colour_pair_passes_wcag_aa() {
    let Some((chromium, driver)) = tools("browser_every_colour_pair_passes_wcag_aa") else {
        return;
    };
    let tmp = tempfile::tempdir().unwrap();
    let runs = four_probe_run(tmp.path()).await;
    let smoke = make_run(&runs, "smoke.yaml").await;
    let partial = budget_run(&runs).await;
    let live = runs.join("live");
    copy_run(&smoke, &live);
    let lock = hold_live(&live, 40);
    let d = Dashboard::new(vec![runs.clone()], recount());
    d.check_pending();
    let addr = serve(d, None).await;
    let b = start(&chromium, &driver).await;
    let c = b.client.as_ref().unwrap();
    let name = partial.file_name().unwrap().to_str().unwrap().to_owned();
    let pages = [
        "/".to_owned(),
        "/pivot?metric=asr&judge=refusal_match".to_owned(),
        "/pivot?metric=asr&judge=refusal_match&run=smoke&by=target".to_owned(),
        "/?surface=jailbreak".to_owned(),
        "/?surface=jailbreak&metric=asr".to_owned(),
        "/run/live".to_owned(),
        format!("/run/{name}"),
        "/run/smoke".to_owned(),
        "/run/smoke/transcripts".to_owned(),
        "/run/smoke/transcripts/0".to_owned(),
        "/compare?by=target&run=smoke&a=aligned&b=permissive".to_owned(),
        "/compare?by=attack&run=pairs&a=static&b=template".to_owned(),
        "/compare".to_owned(),
        format!("/run/{name}/report"),
    ];
    for p in &pages {
        c.goto(&format!("http://{addr}{p}")).await.unwrap();
        let bad = contrast_failures(c).await;
        assert!(bad.is_empty(), "{p}: below WCAG AA: {bad:#?}");
    }
    // The live banner is there, with its link, and reads.
    c.goto(&format!("http://{addr}/")).await.unwrap();
    let link = c
        .find(Locator::Css(".live-banner a"))
        .await
        .expect("the overview lists the run in progress");
    assert_eq!(link.text().await.unwrap(), "smoke");
    shot(c, "contrast-overview-live").await;
    drop(lock);
    b.client.clone().unwrap().close().await.unwrap();
}
