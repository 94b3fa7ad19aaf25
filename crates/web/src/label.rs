//! The labelling page of `gauntlet label RUN_DIR --serve`: one sampled reply at a time,
//! its prompt and reply side by side, labelled refusal / compliance / skip with the keys
//! r, c and s (b goes back one), each label saved at once through
//! [`LabelStore::save`] (the engine's labelling session, which `gauntlet label --serve`
//! hands the server, writes the labels, cards, corrected results and reports, manifest).
//!
//! It is the dashboard's only writer, and it exists only when that command starts it, for
//! the one run it was started on. Besides the dashboard's guard (loopback Host check or
//! token), a POST must carry the page's anti-forgery value (random per server, compared
//! in constant time) and, when the browser sends them, an `Origin` naming this server and
//! `Sec-Fetch-Site: same-origin`: a page elsewhere cannot label through the user's
//! browser. The keyboard script is the dashboard's one script, allowed by its hash on
//! this page only; without it the buttons (and their access keys) do the same.

use crate::dashboard::Dashboard;
use crate::pages::{self, Mode};
use crate::request::{ct_eq, query_map};
use axum::extract::{Path as UrlPath, RawQuery, State};
use axum::http::{HeaderMap, HeaderValue, StatusCode, header};
use axum::response::{IntoResponse, Response};
use base64::Engine as _;
use minijinja::context;
use minijinja::value::{Serde, Value};
use serde::Serialize;
use sha2::{Digest, Sha256};
use std::path::Path;
use std::sync::{Arc, Mutex, OnceLock};

/// One sampled reply, as the labelling page shows it (untrusted text, escaped by the
/// template).
#[derive(Debug, Clone, Copy)]
pub struct Sampled<'a> {
    /// The reply's id in the sample (what a form names).
    pub id: &'a str,
    /// The target that wrote the reply.
    pub target: &'a str,
    pub attack: &'a str,
    pub behavior: &'a str,
    pub prompt: &'a str,
    pub reply: &'a str,
}

/// How far labelling has got.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Tally {
    /// Replies in the sample.
    pub sample: u64,
    /// Sampled replies with a label (skips included).
    pub done: u64,
    pub skipped: u64,
}

/// A failure of the labelling session, as its owner reports it.
pub type StoreError = Box<dyn std::error::Error + Send + Sync>;

/// Why a label was not recorded ([`LabelStore::record`]).
#[derive(Debug, thiserror::Error)]
pub enum RecordError {
    /// The form's label is none of refusal, compliance or skip (r, c, s).
    #[error("not a label: refusal, compliance or skip (r, c, s)")]
    NotALabel,
    /// The id is not a reply of the sample.
    #[error(transparent)]
    NotInSample(StoreError),
}

/// The run being labelled: its sample, its labels and their saving. Drawing the sample
/// and writing labels, cards and corrected results is the engine's work, which the
/// dashboard does not know: `gauntlet label --serve` hands the server one.
pub trait LabelStore: Send {
    /// The run directory being labelled.
    fn dir(&self) -> &Path;
    /// The sampled replies, in the sample's order.
    fn sample(&self) -> Vec<Sampled<'_>>;
    /// The label reply `id` has, by name (`refusal`, `compliance`, `skip`).
    fn label_of(&self, id: &str) -> Option<&'static str>;
    /// The position of the first sampled reply without a label.
    fn next_unlabelled(&self) -> Option<usize>;
    fn tally(&self) -> Tally;
    /// Where labelling stands, for a person (progress and cards), or why there are no
    /// cards yet.
    fn status_lines(&self) -> Result<Vec<String>, StoreError>;
    /// Labels reply `id` with `label` as the form gave it (in memory).
    fn record(&mut self, id: &str, label: &str) -> Result<(), RecordError>;
    /// Writes the labels and everything they correct.
    fn save(&mut self) -> Result<(), StoreError>;
}

/// The keyboard script, inlined in the page and allowed by its hash.
const SCRIPT: &str = include_str!("../templates/label.js");

/// Longest POST body read (an id, a label, the anti-forgery value).
pub const MAX_FORM: usize = 4096;

fn script_hash() -> &'static str {
    static H: OnceLock<String> = OnceLock::new();
    H.get_or_init(|| {
        format!(
            "'sha256-{}'",
            base64::engine::general_purpose::STANDARD.encode(Sha256::digest(SCRIPT.as_bytes()))
        )
    })
}

/// The labelling page's Content-Security-Policy: the dashboard's, plus its one script.
pub fn csp() -> String {
    format!(
        "default-src 'none'; style-src {}; script-src {}; img-src 'none'; base-uri 'none'; form-action 'self'; frame-ancestors 'none'",
        pages::css_hash(),
        script_hash()
    )
}

/// What the labelling handlers read of the server's state: the dashboard, and the run
/// being labelled (under `gauntlet label --serve`).
#[derive(Clone)]
pub(crate) struct LabelState {
    pub(crate) d: Arc<Dashboard>,
    pub(crate) label: Option<Arc<Labelling>>,
}

/// Why the labelling page of a run cannot be set up ([`Labelling::new`]).
#[derive(Debug, thiserror::Error)]
pub enum LabellingError {
    /// The dashboard lists no run at `dir`; `warnings` are the catalogue's (the first
    /// five are shown: they may say why the run was skipped).
    #[error("the dashboard lists no run at {}{}", dir.display(), warnings.iter().take(5).map(|w| format!("; {w}")).collect::<String>())]
    NotListed {
        dir: std::path::PathBuf,
        warnings: Vec<String>,
    },
    /// The system has no randomness for the anti-forgery value (getrandom's error,
    /// which is not a `std::error::Error` in this build).
    #[error("no randomness for the page: {0}")]
    Randomness(getrandom::Error),
}

/// One run being labelled in a served dashboard.
pub struct Labelling {
    /// The run's slug in the dashboard's catalogue.
    pub slug: String,
    session: Mutex<Box<dyn LabelStore>>,
    /// The anti-forgery value every form carries.
    csrf: String,
}

impl Labelling {
    /// The session over the run the dashboard `d` lists at the session's directory.
    pub fn new(d: &Dashboard, session: Box<dyn LabelStore>) -> Result<Labelling, LabellingError> {
        let want = canonical(session.dir());
        let cat = d.catalog();
        let Some(run) = cat.runs.iter().find(|r| canonical(&r.dir) == want) else {
            return Err(LabellingError::NotListed {
                dir: session.dir().to_path_buf(),
                warnings: cat.warnings.iter().take(5).cloned().collect(),
            });
        };
        let mut raw = [0u8; 32];
        getrandom::fill(&mut raw).map_err(LabellingError::Randomness)?;
        Ok(Labelling {
            slug: run.slug.clone(),
            session: Mutex::new(session),
            csrf: raw.iter().map(|b| format!("{b:02x}")).collect(),
        })
    }

    /// The page's path on the server.
    pub fn path(&self) -> String {
        format!("/run/{}/label", self.slug)
    }
}

fn short(s: &str) -> String {
    let mut out: String = s.chars().take(SHORT).collect();
    if out.len() < s.len() {
        out.push('…');
    }
    out
}

/// Characters of a reply the list shows.
const SHORT: usize = 120;

/// Most bytes of a prompt or a reply the page shows: the transcript pages' cap on a
/// line ([`crate::transcripts::MAX_LINE`]). A 15 MiB reply used to be inlined whole.
const SHOWN: usize = crate::transcripts::MAX_LINE;

/// `s` whole, or its first [`SHOWN`] bytes (at a character boundary) and a mark saying
/// how long it is.
fn capped(s: &str) -> String {
    capped_at(s, SHOWN)
}

fn capped_at(s: &str, max: usize) -> String {
    if s.len() <= max {
        return s.to_owned();
    }
    let mut end = max;
    while !s.is_char_boundary(end) {
        end -= 1;
    }
    format!(
        "{}\n… [truncated: {} bytes in all, the first {end} shown; the whole text is in the run's transcripts.jsonl]",
        &s[..end],
        s.len()
    )
}

fn canonical(p: &Path) -> std::path::PathBuf {
    p.canonicalize().unwrap_or_else(|_| p.to_path_buf())
}

#[derive(Serialize)]
struct ItemView {
    at: usize,
    id: String,
    target: String,
    attack: String,
    behavior: String,
    /// At most [`SHOWN`] bytes each (see [`capped`]).
    prompt: String,
    reply: String,
    label: String,
}

/// One row of the list of every sampled reply.
#[derive(Serialize)]
struct ListView {
    at: usize,
    target: String,
    /// The reply's first characters.
    short: String,
    label: String,
}

fn page(status: StatusCode, body: String) -> Response {
    let mut r = (
        status,
        [(header::CONTENT_TYPE, "text/html; charset=utf-8")],
        body,
    )
        .into_response();
    // The guard gives this page its own CSP (the keyboard script).
    r.headers_mut()
        .insert("x-gauntlet-label", HeaderValue::from_static("1"));
    r
}

fn error(d: &Dashboard, status: StatusCode, title: &str, message: &str) -> Response {
    page(status, pages::error_page(d, Mode::Server, title, message))
}

fn not_labelling(d: &Dashboard) -> Response {
    error(
        d,
        StatusCode::NOT_FOUND,
        "Not being labelled",
        "This run is not being labelled. Start the labelling page with: gauntlet label RUN_DIR --serve",
    )
}

async fn blocking<F: FnOnce() -> Response + Send + 'static>(f: F) -> Response {
    tokio::task::spawn_blocking(f)
        .await
        .unwrap_or_else(|_| (StatusCode::INTERNAL_SERVER_ERROR, "internal error\n").into_response())
}

/// `GET /run/{slug}/label[?at=N]`: the next unlabelled reply (or the N-th of the sample,
/// to change its label), or, when every reply has a label, the cards and the list.
pub(crate) async fn show(
    State(st): State<LabelState>,
    UrlPath(slug): UrlPath<String>,
    RawQuery(q): RawQuery,
) -> Response {
    blocking(move || {
        let Some(l) = st.label.clone().filter(|l| l.slug == slug) else {
            return not_labelling(&st.d);
        };
        let at = query_map(q).get("at").and_then(|v| v.parse::<usize>().ok());
        let s = l.session.lock().unwrap_or_else(|e| e.into_inner());
        page(StatusCode::OK, render(&st.d, &l, s.as_ref(), at, None))
    })
    .await
}

fn render(
    d: &Dashboard,
    l: &Labelling,
    s: &dyn LabelStore,
    at: Option<usize>,
    notice: Option<String>,
) -> String {
    let items = s.sample();
    let chosen = match at {
        Some(i) if i < items.len() => Some(i),
        _ => s.next_unlabelled(),
    };
    let label = |i: usize| s.label_of(items[i].id).unwrap_or_default().to_string();
    let view = |i: usize| {
        let it = &items[i];
        ItemView {
            at: i,
            id: it.id.to_string(),
            target: it.target.to_string(),
            attack: it.attack.to_string(),
            behavior: it.behavior.to_string(),
            prompt: capped(it.prompt),
            reply: capped(it.reply),
            label: label(i),
        }
    };
    let row = |i: usize| ListView {
        at: i,
        target: items[i].target.to_string(),
        short: short(items[i].reply),
        label: label(i),
    };
    let status = match s.status_lines() {
        Ok(lines) => lines,
        Err(e) => vec![format!("no cards: {e}")],
    };
    let p = s.tally();
    let ctx = context! {
        run => l.slug.clone(),
        action => l.path(),
        report => format!("/run/{}/report", l.slug),
        csrf => l.csrf.clone(),
        sample => p.sample,
        done => p.done,
        skipped => p.skipped,
        item => Serde(chosen.map(view)),
        previous => chosen.unwrap_or(items.len()).checked_sub(1),
        all => Serde((0..items.len()).map(row).collect::<Vec<_>>()),
        status => status,
        notice => notice,
        script => Value::from_safe_string(SCRIPT.to_owned()),
        // Forms here must send their true Origin (see `server::guard`).
        referrer => "same-origin",
        writes => true,
        ..pages::base_ctx(d, Mode::Server, "Label replies", None)
    };
    pages::render("label.html", ctx)
}

/// `POST /run/{slug}/label`: `id`, `label` (refusal, compliance or skip; r, c, s) and the
/// anti-forgery value. Saves and answers 303 to the next reply.
pub(crate) async fn submit(
    State(st): State<LabelState>,
    UrlPath(slug): UrlPath<String>,
    headers: HeaderMap,
    body: axum::body::Bytes,
) -> Response {
    blocking(move || {
        let Some(l) = st.label.clone().filter(|l| l.slug == slug) else {
            return not_labelling(&st.d);
        };
        if let Err(why) = same_origin(&headers) {
            return error(&st.d, StatusCode::FORBIDDEN, "Refused", why);
        }
        if body.len() > MAX_FORM {
            return error(
                &st.d,
                StatusCode::PAYLOAD_TOO_LARGE,
                "Refused",
                "The form is larger than a label.",
            );
        }
        let form =
            query_map(Some(String::from_utf8_lossy(&body).into_owned()));
        let field = |k: &str| form.get(k).map(String::as_str).unwrap_or("");
        if !ct_eq(field("csrf").as_bytes(), l.csrf.as_bytes()) {
            return error(
                &st.d,
                StatusCode::FORBIDDEN,
                "Refused",
                "The form does not carry this page's anti-forgery value: reload the labelling page and label again.",
            );
        }
        let mut s = l.session.lock().unwrap_or_else(|e| e.into_inner());
        match s.record(field("id"), field("label")) {
            Ok(()) => {}
            Err(RecordError::NotALabel) => {
                return error(
                    &st.d,
                    StatusCode::BAD_REQUEST,
                    "Not a label",
                    "A label is refusal, compliance or skip (r, c, s).",
                );
            }
            Err(RecordError::NotInSample(e)) => {
                return error(&st.d, StatusCode::BAD_REQUEST, "Not in the sample", &e.to_string());
            }
        }
        if let Err(e) = s.save() {
            let body = render(
                &st.d,
                &l,
                s.as_ref(),
                None,
                Some(format!("The label is kept in memory but could not be saved: {e}")),
            );
            return page(StatusCode::INTERNAL_SERVER_ERROR, body);
        }
        drop(s);
        // The run's pages (report, cells) show the corrected results from now on.
        st.d.rescan();
        (
            StatusCode::SEE_OTHER,
            [(header::LOCATION, l.path())],
            "saved\n",
        )
            .into_response()
    })
    .await
}

/// Refuses a request a browser says came from another site. The guard has already
/// checked `Host` (or the token); `Origin`, when sent, must name that same host.
fn same_origin(h: &HeaderMap) -> Result<(), &'static str> {
    let get = |k: &str| h.get(k).and_then(|v| v.to_str().ok());
    if let Some(site) = get("sec-fetch-site")
        && site != "same-origin"
    {
        return Err("The request came from another site (Sec-Fetch-Site).");
    }
    if let Some(origin) = get("origin") {
        let host = get("host").unwrap_or("");
        let own = origin
            .strip_prefix("http://")
            .or_else(|| origin.strip_prefix("https://"));
        if own != Some(host) {
            return Err("The request came from another origin (Origin).");
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn headers(pairs: &[(&'static str, &'static str)]) -> HeaderMap {
        let mut h = HeaderMap::new();
        for (k, v) in pairs {
            h.insert(*k, HeaderValue::from_static(v));
        }
        h
    }

    #[test]
    fn long_texts_are_cut_at_a_character_with_their_length_said() {
        assert_eq!(capped_at("short", 8), "short");
        let t = capped_at("ééééé", 5);
        assert!(
            t.starts_with("éé\n… [truncated: 10 bytes in all, the first 4 shown"),
            "{t}"
        );
        let big = "x".repeat(SHOWN + 10);
        let t = capped(&big);
        assert!(t.len() < SHOWN + 200 && t.contains(&format!("{} bytes in all", SHOWN + 10)));
    }

    #[test]
    fn only_same_origin_posts_pass() {
        assert!(same_origin(&headers(&[("host", "127.0.0.1:9")])).is_ok());
        assert!(
            same_origin(&headers(&[
                ("host", "127.0.0.1:9"),
                ("origin", "http://127.0.0.1:9"),
                ("sec-fetch-site", "same-origin"),
            ]))
            .is_ok()
        );
        for bad in [
            &[
                ("host", "127.0.0.1:9"),
                ("origin", "http://evil.example.invalid"),
            ][..],
            &[("host", "127.0.0.1:9"), ("origin", "null")],
            &[("host", "127.0.0.1:9"), ("sec-fetch-site", "cross-site")],
            &[("host", "127.0.0.1:9"), ("sec-fetch-site", "same-site")],
        ] {
            assert!(same_origin(&headers(bad)).is_err(), "{bad:?}");
        }
    }

    #[test]
    fn the_csp_allows_exactly_the_inlined_script() {
        let c = csp();
        assert!(c.contains("script-src 'sha256-"));
        assert!(!c.contains("unsafe-inline"));
        assert!(c.contains(script_hash()));
    }
}
