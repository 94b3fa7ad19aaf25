//! `gauntlet serve`: the dashboard over HTTP (axum), read-only.
//!
//! - Loopback by default. Any other address needs `allow_remote` and a token (from the
//!   environment), checked on every request (`Authorization: Bearer`, or a cookie set by
//!   visiting once with `?token=`), compared in constant time.
//! - Without a token the `Host` header must name the loopback address the server is on
//!   (`127.0.0.1:PORT`, `localhost:PORT`, `[::1]:PORT`), so a page elsewhere cannot read
//!   the dashboard through DNS rebinding.
//! - Only GET and HEAD are routed, but for the labelling page's POST, which exists only
//!   under `gauntlet label --serve` (see [`crate::label`]); every response carries the CSP, `nosniff`,
//!   `no-referrer`, `DENY` framing and `no-store`.
//! - File work runs on the blocking pool; a scan of the roots repeats every
//!   [`RESCAN_EVERY`] and the recount of new or changed runs runs on its own thread.

use crate::dashboard::Dashboard;
use crate::label::LabelStore;
use crate::label::{LabelState, Labelling};
use crate::pages::{self, LbQuery, Mode};
use crate::request::{ct_eq, query_map};
use crate::transcripts::Filter;
use crate::verify::Recount;
use axum::Router;
use axum::extract::DefaultBodyLimit;
use axum::extract::{FromRef, Path as UrlPath, RawQuery, Request, State};
use axum::http::{HeaderMap, HeaderValue, StatusCode, header};
use axum::middleware::{self, Next};
use axum::response::{IntoResponse, Response};
use axum::routing::get;
use std::net::SocketAddr;
use std::path::PathBuf;
use std::sync::Arc;
use std::time::Duration;

/// How often the roots are scanned again for new and finished runs.
pub const RESCAN_EVERY: Duration = Duration::from_secs(10);
/// The environment variable holding the token for a non-loopback bind.
pub const TOKEN_ENV: &str = "GAUNTLET_WEB_TOKEN";
/// Shortest token accepted.
pub const MIN_TOKEN: usize = 16;

/// What `gauntlet serve` was asked for.
#[derive(Debug, Clone)]
pub struct ServeOptions {
    pub roots: Vec<PathBuf>,
    pub bind: SocketAddr,
    /// Explicitly allow a non-loopback address (a token is then required).
    pub allow_remote: bool,
    /// The token (read from [`TOKEN_ENV`] by the caller).
    pub token: Option<String>,
}

/// Why the bind policy refuses a `gauntlet serve` ([`check_bind`]).
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum BindError {
    #[error("the token in {TOKEN_ENV} is shorter than {MIN_TOKEN} characters")]
    ShortToken,
    /// A non-loopback address without `--allow-remote`.
    #[error(
        "{bind} is not a loopback address: the dashboard binds to loopback unless you pass --allow-remote and set a token in {TOKEN_ENV} (runs may hold sensitive transcripts)"
    )]
    NotLoopback { bind: SocketAddr },
    #[error(
        "--allow-remote needs a token: set {TOKEN_ENV} (at least {MIN_TOKEN} characters); requests must then carry it"
    )]
    NoToken,
}

/// Why [`serve`] or [`serve_labelling`] stopped before serving.
#[derive(Debug, thiserror::Error)]
pub enum ServeError {
    #[error(transparent)]
    Bind(#[from] BindError),
    /// The labelling page cannot be set up.
    #[error(transparent)]
    Labelling(#[from] crate::label::LabellingError),
    #[error("cannot start the runtime: {0}")]
    Runtime(#[source] std::io::Error),
    /// The address to visit could not be printed (stdout's reader went away).
    #[error("cannot write to stdout: {0}")]
    Stdout(#[source] std::io::Error),
    /// The address cannot be listened on.
    #[error("cannot bind {bind}: {source}")]
    Listen {
        bind: SocketAddr,
        #[source]
        source: std::io::Error,
    },
}

/// Checks the bind policy: loopback, or `allow_remote` plus a token of at least
/// [`MIN_TOKEN`] characters.
pub fn check_bind(o: &ServeOptions) -> Result<(), BindError> {
    if let Some(t) = &o.token
        && t.chars().count() < MIN_TOKEN
    {
        return Err(BindError::ShortToken);
    }
    if o.bind.ip().is_loopback() {
        return Ok(());
    }
    if !o.allow_remote {
        return Err(BindError::NotLoopback { bind: o.bind });
    }
    if o.token.is_none() {
        return Err(BindError::NoToken);
    }
    Ok(())
}

#[derive(Clone)]
pub(crate) struct AppState {
    pub(crate) d: Arc<Dashboard>,
    token: Option<Arc<str>>,
    /// Host header values accepted without a token.
    hosts: Arc<Vec<String>>,
    /// The run being labelled, under `gauntlet label --serve`.
    pub(crate) label: Option<Arc<Labelling>>,
}

/// The labelling handlers' share of the state ([`crate::label`]).
impl FromRef<AppState> for LabelState {
    fn from_ref(st: &AppState) -> Self {
        LabelState {
            d: st.d.clone(),
            label: st.label.clone(),
        }
    }
}

fn html(status: StatusCode, body: String) -> Response {
    (
        status,
        [(header::CONTENT_TYPE, "text/html; charset=utf-8")],
        body,
    )
        .into_response()
}

/// Security headers and access control on every request.
async fn guard(State(st): State<AppState>, req: Request, next: Next) -> Response {
    let mut set_cookie = None;
    let ok = match &st.token {
        None => req
            .headers()
            .get(header::HOST)
            .and_then(|h| h.to_str().ok())
            .is_some_and(|h| st.hosts.iter().any(|a| a.eq_ignore_ascii_case(h))),
        Some(t) => {
            let bearer = req
                .headers()
                .get(header::AUTHORIZATION)
                .and_then(|h| h.to_str().ok())
                .and_then(|h| h.strip_prefix("Bearer "))
                .is_some_and(|v| ct_eq(v.as_bytes(), t.as_bytes()));
            let cookie = req
                .headers()
                .get_all(header::COOKIE)
                .iter()
                .filter_map(|h| h.to_str().ok())
                .flat_map(|h| h.split(';'))
                .filter_map(|c| c.trim().strip_prefix("gauntlet_token="))
                .any(|v| ct_eq(v.as_bytes(), t.as_bytes()));
            let query = query_map(req.uri().query().map(str::to_owned))
                .get("token")
                .is_some_and(|v| ct_eq(v.as_bytes(), t.as_bytes()));
            if query {
                set_cookie = Some(format!(
                    "gauntlet_token={t}; HttpOnly; SameSite=Strict; Path=/"
                ));
            }
            bearer || cookie || query
        }
    };
    let mut resp = if ok {
        next.run(req).await
    } else if st.token.is_some() {
        (
            StatusCode::UNAUTHORIZED,
            "a token is required (see gauntlet serve --help)\n",
        )
            .into_response()
    } else {
        (
            StatusCode::MISDIRECTED_REQUEST,
            "this dashboard answers only to its loopback address\n",
        )
            .into_response()
    };
    let h = resp.headers_mut();
    // The labelling page's forms must send their true `Origin` (under `no-referrer`
    // a browser sends `Origin: null`), so that page sends referrers to itself only.
    let mut referrer = "no-referrer";
    let csp = if h.contains_key("x-gauntlet-report") {
        h.remove("x-gauntlet-report");
        pages::REPORT_CSP.to_owned()
    } else if h.contains_key("x-gauntlet-label") {
        h.remove("x-gauntlet-label");
        referrer = "same-origin";
        crate::label::csp()
    } else {
        pages::csp()
    };
    set(h, "content-security-policy", &csp);
    set(h, "x-content-type-options", "nosniff");
    set(h, "referrer-policy", referrer);
    set(h, "x-frame-options", "DENY");
    set(h, "cache-control", "no-store");
    set(h, "cross-origin-opener-policy", "same-origin");
    set(h, "cross-origin-resource-policy", "same-origin");
    if let Some(c) = set_cookie {
        set(h, "set-cookie", &c);
    }
    resp
}

fn set(h: &mut HeaderMap, k: &'static str, v: &str) {
    if let Ok(v) = HeaderValue::from_str(v) {
        h.insert(k, v);
    }
}

async fn blocking<F: FnOnce() -> Response + Send + 'static>(f: F) -> Response {
    tokio::task::spawn_blocking(f)
        .await
        .unwrap_or_else(|_| (StatusCode::INTERNAL_SERVER_ERROR, "internal error\n").into_response())
}

fn not_found(d: &Dashboard, what: &str) -> Response {
    html(
        StatusCode::NOT_FOUND,
        pages::error_page(d, Mode::Server, "Not found", what),
    )
}

async fn leaderboard(State(st): State<AppState>, RawQuery(q): RawQuery) -> Response {
    blocking(move || {
        let m = query_map(q);
        let g = |k: &str| m.get(k).cloned().unwrap_or_default();
        // The first page is the overview; a surface chosen is its leaderboard.
        if !m.contains_key("surface") {
            return html(
                StatusCode::OK,
                pages::overview_page(&st.d, &g("run"), Mode::Server),
            );
        }
        let lq = LbQuery {
            surface: g("surface"),
            target: g("target"),
            attack: g("attack"),
            dataset_version: g("dataset_version"),
            judge: g("judge"),
            metric: g("metric"),
            run: g("run"),
            date: g("date"),
            check: g("check"),
            sort: g("sort"),
            dir: g("dir"),
            page: g("page").parse().unwrap_or(0),
        };
        html(StatusCode::OK, pages::leaderboard(&st.d, &lq, Mode::Server))
    })
    .await
}

async fn run_page(State(st): State<AppState>, UrlPath(slug): UrlPath<String>) -> Response {
    blocking(move || match pages::run_page(&st.d, &slug, Mode::Server) {
        Some(p) => html(StatusCode::OK, p),
        None => not_found(&st.d, "No run has that name."),
    })
    .await
}

async fn report(State(st): State<AppState>, UrlPath(slug): UrlPath<String>) -> Response {
    blocking(move || match pages::report_page(&st.d, &slug) {
        Some(Ok(p)) => {
            let mut r = html(StatusCode::OK, p);
            // The guard gives the re-rendered report its own CSP (inline styles).
            r.headers_mut()
                .insert("x-gauntlet-report", HeaderValue::from_static("1"));
            r
        }
        Some(Err(e)) => html(
            StatusCode::UNPROCESSABLE_ENTITY,
            pages::error_page(&st.d, Mode::Server, "Report unavailable", &e.to_string()),
        ),
        None => not_found(&st.d, "No report for that run."),
    })
    .await
}

async fn transcripts(
    State(st): State<AppState>,
    UrlPath(slug): UrlPath<String>,
    RawQuery(q): RawQuery,
) -> Response {
    blocking(move || {
        let m = query_map(q);
        let g = |k: &str| m.get(k).cloned().unwrap_or_default();
        let f = Filter {
            q: g("q"),
            outcome: g("outcome"),
            attack: g("attack"),
            target: g("target"),
            judge: g("judge"),
            disagree: m.get("disagree").is_some_and(|v| v == "1" || v == "on"),
        };
        let from = m.get("from").and_then(|x| x.parse().ok()).unwrap_or(0);
        match pages::transcripts_page(&st.d, &slug, &f, from, Mode::Server) {
            Some(p) => html(StatusCode::OK, p),
            None => not_found(&st.d, "No transcripts for that run."),
        }
    })
    .await
}

async fn transcript(
    State(st): State<AppState>,
    UrlPath((slug, line)): UrlPath<(String, String)>,
) -> Response {
    blocking(move || {
        let Ok(line) = line.parse::<u64>() else {
            return not_found(&st.d, "A transcript line is a number.");
        };
        match pages::transcript_page(&st.d, &slug, line, Mode::Server) {
            Some(p) => html(StatusCode::OK, p),
            None => not_found(&st.d, "No such attempt."),
        }
    })
    .await
}

async fn compare(State(st): State<AppState>, RawQuery(q): RawQuery) -> Response {
    blocking(move || {
        let m = query_map(q);
        let g = |k: &str| m.get(k).cloned().unwrap_or_default();
        let cq = pages::CompareQuery {
            by: g("by"),
            run: g("run"),
            run_b: g("run_b"),
            a: g("a"),
            b: g("b"),
            allow_mismatch: g("allow_mismatch") == "1",
            metric: g("metric"),
        };
        html(StatusCode::OK, pages::compare_page(&st.d, &cq))
    })
    .await
}

async fn pivot(State(st): State<AppState>, RawQuery(q): RawQuery) -> Response {
    blocking(move || {
        let m = query_map(q);
        let g = |k: &str| m.get(k).cloned().unwrap_or_default();
        let pq = crate::pivot::PivotQuery {
            metric: g("metric"),
            judge: g("judge"),
            dataset_version: g("dataset_version"),
            run: g("run"),
            split: matches!(g("split").as_str(), "1" | "on"),
            baseline: g("baseline"),
            by: g("by"),
        };
        html(StatusCode::OK, pages::pivot_page(&st.d, &pq, Mode::Server))
    })
    .await
}

async fn exam(State(st): State<AppState>, UrlPath(slug): UrlPath<String>) -> Response {
    blocking(move || match pages::exam_page(&st.d, &slug, Mode::Server) {
        Some(p) => html(StatusCode::OK, p),
        None => not_found(&st.d, "No agent exam has that name."),
    })
    .await
}

async fn fallback(State(st): State<AppState>) -> Response {
    not_found(&st.d, "There is no such page.")
}

/// The router over a dashboard. `port` is the bound port (for the Host check).
pub fn router(d: Arc<Dashboard>, token: Option<String>, port: u16) -> Router {
    router_with(d, token, port, None)
}

/// The router, with the labelling page of one run when `label` is given.
pub fn router_with(
    d: Arc<Dashboard>,
    token: Option<String>,
    port: u16,
    label: Option<Arc<Labelling>>,
) -> Router {
    let hosts = vec![
        format!("127.0.0.1:{port}"),
        format!("localhost:{port}"),
        format!("[::1]:{port}"),
    ];
    let st = AppState {
        d,
        token: token.map(Arc::from),
        hosts: Arc::new(hosts),
        label,
    };
    Router::new()
        .route("/", get(leaderboard))
        .route("/run/{slug}", get(run_page))
        .route("/run/{slug}/report", get(report))
        .route("/run/{slug}/transcripts", get(transcripts))
        .route("/run/{slug}/transcripts/{line}", get(transcript))
        .route("/run/{slug}/scenarios", get(exam))
        .route(
            "/run/{slug}/label",
            get(crate::label::show)
                .post(crate::label::submit)
                .layer(DefaultBodyLimit::max(crate::label::MAX_FORM)),
        )
        .route("/compare", get(compare))
        .route("/pivot", get(pivot))
        // Browsers ask for it on their own; an empty answer keeps their consoles quiet.
        .route("/favicon.ico", get(|| async { StatusCode::NO_CONTENT }))
        .fallback(fallback)
        .layer(middleware::from_fn_with_state(st.clone(), guard))
        .with_state(st)
}

/// Starts the background work of a served dashboard: rescans and recounts.
pub fn start_background(d: &Arc<Dashboard>) {
    let d1 = d.clone();
    std::thread::spawn(move || {
        loop {
            if d1.check_pending() == 0 {
                std::thread::sleep(Duration::from_secs(2));
            }
        }
    });
    let d2 = d.clone();
    std::thread::spawn(move || {
        loop {
            std::thread::sleep(RESCAN_EVERY);
            d2.rescan();
        }
    });
}

/// Most connections served at once; further ones wait in the listen backlog (they cost
/// the dashboard no descriptor) until one ends.
pub const MAX_CONNECTIONS: usize = 256;
/// A client must send a request's whole header within this long, on a new connection and
/// between requests on a kept-alive one (so an idle connection is closed after it too).
pub const HEADER_READ_TIMEOUT: Duration = Duration::from_secs(10);
/// Longest a connection may last, whatever it does (a client reading a page slowly).
pub const MAX_CONNECTION_TIME: Duration = Duration::from_secs(300);

/// Binds and serves on the current tokio runtime; returns the bound address and the
/// server task. Slow or idle clients cannot hold the dashboard: at most
/// [`MAX_CONNECTIONS`] connections are served at once, each must send its request
/// headers within [`HEADER_READ_TIMEOUT`] (600 slowloris connections used to block it
/// under a 512-descriptor limit), and none lasts longer than [`MAX_CONNECTION_TIME`].
/// When every slot is taken, a new connection closes the oldest one that is not being
/// answered (still sending its headers, or idle between requests) instead of waiting
/// for a timeout: slow clients delayed everyone else by up to the header timeout.
pub async fn spawn(
    d: Arc<Dashboard>,
    bind: SocketAddr,
    token: Option<String>,
) -> std::io::Result<(SocketAddr, tokio::task::JoinHandle<()>)> {
    spawn_with(d, bind, token, None).await
}

/// [`spawn`], with the labelling page of one run when `label` is given.
pub async fn spawn_with(
    d: Arc<Dashboard>,
    bind: SocketAddr,
    token: Option<String>,
    label: Option<Arc<Labelling>>,
) -> std::io::Result<(SocketAddr, tokio::task::JoinHandle<()>)> {
    let listener = tokio::net::TcpListener::bind(bind).await?;
    let addr = listener.local_addr()?;
    let app = router_with(d, token, addr.port(), label);
    let task = tokio::spawn(accept_loop(listener, app));
    Ok((addr, task))
}

/// One served connection, as the accept loop sees it: whether a request of it is being
/// answered, and how to close it.
struct Served {
    busy: Arc<std::sync::atomic::AtomicBool>,
    close: Arc<tokio::sync::Notify>,
}

/// The connections being served, by the order they were accepted in.
#[derive(Default)]
struct Connections {
    next: u64,
    open: std::collections::BTreeMap<u64, Served>,
}

impl Connections {
    /// Closes the oldest connection that is not answering a request; false when every
    /// one is.
    fn close_oldest_idle(&mut self) -> bool {
        use std::sync::atomic::Ordering;
        let idle = self
            .open
            .iter()
            .find(|(_, c)| !c.busy.load(Ordering::Acquire))
            .map(|(k, _)| *k);
        match idle.and_then(|k| self.open.remove(&k)) {
            Some(c) => {
                c.close.notify_one();
                true
            }
            None => false,
        }
    }
}

/// A connection's service, marking the connection busy while a request is answered.
struct Tracked<S> {
    inner: S,
    busy: Arc<std::sync::atomic::AtomicBool>,
}

impl<S, R> hyper::service::Service<R> for Tracked<S>
where
    S: hyper::service::Service<R>,
    S::Future: Send + 'static,
{
    type Response = S::Response;
    type Error = S::Error;
    type Future =
        std::pin::Pin<Box<dyn std::future::Future<Output = Result<S::Response, S::Error>> + Send>>;

    fn call(&self, req: R) -> Self::Future {
        use std::sync::atomic::Ordering;
        self.busy.store(true, Ordering::Release);
        let answer = self.inner.call(req);
        let busy = self.busy.clone();
        Box::pin(async move {
            let r = answer.await;
            busy.store(false, Ordering::Release);
            r
        })
    }
}

async fn accept_loop(listener: tokio::net::TcpListener, app: Router) {
    let slots = Arc::new(tokio::sync::Semaphore::new(MAX_CONNECTIONS));
    let conns = Arc::new(std::sync::Mutex::new(Connections::default()));
    loop {
        let stream = match listener.accept().await {
            Ok((s, _)) => s,
            Err(_) => {
                // Out of descriptors or a connection reset before it was accepted: make
                // room (an idle connection), then wait a moment rather than spin.
                conns.lock().expect("connections lock").close_oldest_idle();
                tokio::time::sleep(Duration::from_millis(50)).await;
                continue;
            }
        };
        // Every slot taken: the oldest connection not being answered makes room for this
        // one; when all are being answered, this one waits for the first to end.
        let slot = match slots.clone().try_acquire_owned() {
            Ok(slot) => slot,
            Err(_) => {
                conns.lock().expect("connections lock").close_oldest_idle();
                let Ok(slot) = slots.clone().acquire_owned().await else {
                    return;
                };
                slot
            }
        };
        let _ = stream.set_nodelay(true);
        let busy = Arc::new(std::sync::atomic::AtomicBool::new(false));
        let close = Arc::new(tokio::sync::Notify::new());
        let id = {
            let mut c = conns.lock().expect("connections lock");
            let id = c.next;
            c.next += 1;
            c.open.insert(
                id,
                Served {
                    busy: busy.clone(),
                    close: close.clone(),
                },
            );
            id
        };
        let service = Tracked {
            inner: hyper_util::service::TowerToHyperService::new(app.clone()),
            busy,
        };
        let conns = conns.clone();
        tokio::spawn(async move {
            let _slot = slot;
            let conn = hyper::server::conn::http1::Builder::new()
                .timer(hyper_util::rt::TokioTimer::new())
                .header_read_timeout(HEADER_READ_TIMEOUT)
                .serve_connection(hyper_util::rt::TokioIo::new(stream), service);
            tokio::select! {
                _ = tokio::time::timeout(MAX_CONNECTION_TIME, conn) => {}
                () = close.notified() => {}
            }
            conns.lock().expect("connections lock").open.remove(&id);
        });
    }
}

/// `gauntlet serve`: checks the bind policy, scans, serves until killed; red-team runs
/// are checked through `recount`.
pub fn serve(o: ServeOptions, recount: Arc<dyn Recount>) -> Result<(), ServeError> {
    check_bind(&o)?;
    let d = Dashboard::new(o.roots.clone(), recount);
    serve_dashboard(o, d, None)
}

/// `gauntlet label RUN_DIR --serve`: the dashboard over the run's parent directory, with
/// the labelling page of that run (`session`: its sample, labels and saving); serves
/// until killed.
pub fn serve_labelling(
    mut o: ServeOptions,
    recount: Arc<dyn Recount>,
    session: Box<dyn LabelStore>,
) -> Result<(), ServeError> {
    check_bind(&o)?;
    let dir = session.dir().to_path_buf();
    let root = dir
        .parent()
        .filter(|p| !p.as_os_str().is_empty())
        .unwrap_or(std::path::Path::new("."))
        .to_path_buf();
    o.roots = vec![root];
    let d = Dashboard::new(o.roots.clone(), recount);
    let l = Labelling::new(&d, session)?;
    serve_dashboard(o, d, Some(Arc::new(l)))
}

fn serve_dashboard(
    o: ServeOptions,
    d: Arc<Dashboard>,
    label: Option<Arc<Labelling>>,
) -> Result<(), ServeError> {
    let cat = d.catalog();
    eprintln!(
        "gauntlet serve: {} run(s) under {} root(s){}",
        cat.runs.len(),
        o.roots.len(),
        if cat.warnings.is_empty() {
            String::new()
        } else {
            format!("; {} warning(s) (shown on the pages)", cat.warnings.len())
        }
    );
    start_background(&d);
    let rt = tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
        .map_err(ServeError::Runtime)?;
    rt.block_on(async move {
        let path = label.as_ref().map(|l| l.path());
        let (addr, task) = spawn_with(d, o.bind, o.token.clone(), label)
            .await
            .map_err(|source| ServeError::Listen {
                bind: o.bind,
                source,
            })?;
        use std::io::Write as _;
        let mut stdout = std::io::stdout().lock();
        match path {
            None => writeln!(
                stdout,
                "serving the dashboard on http://{addr}/ (read-only; Ctrl-C to stop)"
            ),
            Some(p) => writeln!(
                stdout,
                "label at http://{addr}{p}{} (keys r refusal, c compliance, s skip, b back; each label is saved at once; Ctrl-C to stop)",
                if o.token.is_some() {
                    format!(" (first visit: add ?token=<the value of {TOKEN_ENV}>)")
                } else {
                    String::new()
                }
            ),
        }
        .map_err(ServeError::Stdout)?;
        drop(stdout);
        let _ = task.await;
        Ok(())
    })
}
