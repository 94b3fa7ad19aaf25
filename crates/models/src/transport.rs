//! The resilient HTTP transport shared by the live targets (`openai_compat`, `anthropic`).
//!
//! Live providers fail in a handful of well-known ways: rate limits (429, often with a
//! `Retry-After`), overload and gateway errors (500/502/503/504 and Anthropic's 529),
//! timeouts, dropped connections, and — rarely — a 200 whose body is not the JSON the docs
//! promise. A harness that turns any of these into a silent "empty answer" produces wrong
//! numbers, so this module makes each one an explicit, counted outcome:
//!
//! * retryable failures are retried up to `max_retries` times with full-jitter exponential
//!   backoff (base 0.5 s, cap 30 s), or exactly as long as the server's `Retry-After` asks
//!   (delta-seconds or HTTP-date, capped at 120 s);
//! * 401/403 become [`ModelError::Config`] naming the environment variable that holds the
//!   key, because no retry can fix a wrong key and the run must stop;
//! * any other 4xx, and malformed or incomplete JSON, become [`ModelError::Call`] naming the
//!   endpoint (and, for JSON, the field path), recorded as an error outcome; a 404, a body
//!   that is not JSON (an HTML page) and a connection refused on every retry are setup
//!   failures ([`Failure::Setup`]): when the first [`SETUP_FAILURES_TO_STOP`] calls all
//!   end in one and none succeeded, the last becomes a [`ModelError::Config`] and the run
//!   stops instead of spending itself on calls that would all fail alike;
//! * every retry is counted by cause in [`TransportStats`], readable through
//!   [`crate::Model::transport_stats`];
//! * in-flight requests per target are limited, and the limit adapts (AIMD): a 429 or a
//!   timeout halves it (at most once per round of requests), a run of successes raises
//!   it by one, up to the configured `max_concurrency`. A timeout usually means requests
//!   queue at the server (a one-slot llama.cpp server runs one at a time), and its retry
//!   starts the generation from scratch — on a server that did not notice the client
//!   leave, next to the abandoned one: the limit shrinks before the retry so retries do
//!   not add to the queue, and the first timeout of a target says so on stderr;
//! * a stop ([`crate::stop`]) ends every wait at once — backoff, `Retry-After`, a slot of
//!   the concurrency limit — and sends nothing more; its second level gives up the
//!   requests in flight. Such a call is counted in `cancelled`, neither succeeded nor
//!   failed.
//!
//! The API key lives only in a [`Secret`] (whose `Debug` is redacted) and in a header
//! marked sensitive; every error message leaving this module is scrubbed of it and of
//! its common encodings, even if the server echoed it back. A URL in a message is shown
//! capped ([`shown_url`]): a server-chosen part of it (a session id) cannot make the
//! message large. Redirects are never followed, so a key cannot be forwarded to another
//! host.

use crate::ModelError;
use crate::stop::{Level, Stop, not_sent};
use reqwest::header::{CONTENT_TYPE, HeaderMap, HeaderValue, RETRY_AFTER};
use reqwest::{StatusCode, Url};
use serde::{Deserialize, Serialize};
use serde_json::Value;
use std::fmt;
use std::net::IpAddr;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Mutex, Once};
use std::time::{Duration, SystemTime};
use tokio::sync::Notify;

/// Where the transport says what the user must know while a call waits (a server's
/// `Retry-After` beyond the cap): the command sets it (`gauntlet` prints to stderr);
/// unset, nothing is said.
static NOTICES: std::sync::OnceLock<Box<Notice>> = std::sync::OnceLock::new();

/// What receives a transport notice.
type Notice = dyn Fn(&str) + Send + Sync;

/// Sets where the transport's notices go (the first setting wins).
pub fn on_notice(f: impl Fn(&str) + Send + Sync + 'static) {
    let _ = NOTICES.set(Box::new(f));
}

fn notice(msg: &str) {
    if let Some(f) = NOTICES.get() {
        f(msg);
    }
}

/// The wait before a retry the server timed with `Retry-After`, capped; a wait cut by
/// the cap is said, so a run that stalls says why.
fn server_wait(asked: Duration, cap: Duration, message: &str) -> Duration {
    if asked > cap {
        notice(&format!(
            "waiting {} s (server asked {} s; Retry-After waits are capped at {} s): {}",
            cap.as_secs(),
            asked.as_secs(),
            cap.as_secs(),
            excerpt(message.as_bytes())
        ));
    }
    asked.min(cap)
}

/// HTTP statuses that are retried (rate limit, server errors, Anthropic's "overloaded").
pub const RETRY_STATUSES: &[u16] = &[429, 500, 502, 503, 504, 529];

/// Tuning knobs that are not run-config params (they only affect timing, never results).
/// Tests shorten them; production uses [`TransportOptions::default`].
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct TransportOptions {
    /// Base of the exponential backoff (attempt n waits up to `base * 2^n`).
    pub backoff_base: Duration,
    /// Upper bound of one backoff sleep.
    pub backoff_cap: Duration,
    /// Upper bound on a server-requested `Retry-After`.
    pub retry_after_cap: Duration,
    /// Consecutive successes after which the adaptive concurrency limit grows by one.
    pub increase_after: u32,
    /// Largest response body accepted.
    pub max_body_bytes: usize,
}

impl Default for TransportOptions {
    fn default() -> Self {
        TransportOptions {
            backoff_base: Duration::from_millis(500),
            backoff_cap: Duration::from_secs(30),
            retry_after_cap: Duration::from_secs(120),
            increase_after: 10,
            max_body_bytes: 32 << 20,
        }
    }
}

/// A snapshot of one target's transport counters.
///
/// `retries_*` count re-sent requests by the cause of the failure that preceded them; a
/// call that fails for good after its last retry counts in `failed`, not in the retries.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, Deserialize)]
pub struct TransportStats {
    /// Model calls that reached the transport.
    pub calls: u64,
    /// HTTP requests sent (calls + retries).
    pub attempts: u64,
    /// Calls that returned a response.
    pub succeeded: u64,
    /// Calls that ended in an error (after any retries).
    pub failed: u64,
    /// Retries after a 429.
    pub retries_429: u64,
    /// Retries after a 500/502/503/504/529.
    pub retries_5xx: u64,
    /// Retries after a request timed out.
    pub retries_timeout: u64,
    /// Retries after a connection error (refused, reset, body cut short).
    pub retries_connect: u64,
    /// Total time slept between attempts, in milliseconds.
    pub retry_wait_ms: u64,
    /// The adaptive concurrency limit now; `None` while unlimited.
    pub concurrency_limit: Option<u64>,
    /// How often a 429 or a timeout made the limit shrink.
    pub concurrency_decreases: u64,
    /// Calls a stop ended unanswered: not sent, their wait before a retry cut, or (at
    /// the second signal) given up in flight. Neither succeeded nor failed.
    #[serde(default)]
    pub cancelled: u64,
}

impl TransportStats {
    /// All retries, whatever the cause.
    pub fn retries(&self) -> u64 {
        self.retries_429 + self.retries_5xx + self.retries_timeout + self.retries_connect
    }
}

/// Why an attempt is being retried.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum RetryCause {
    RateLimited,
    ServerError,
    Timeout,
    Connect,
}

#[derive(Default)]
struct Counters {
    calls: AtomicU64,
    attempts: AtomicU64,
    succeeded: AtomicU64,
    failed: AtomicU64,
    retries_429: AtomicU64,
    retries_5xx: AtomicU64,
    retries_timeout: AtomicU64,
    retries_connect: AtomicU64,
    retry_wait_ms: AtomicU64,
    /// Calls that ended in a setup failure while none had succeeded.
    setup_failures: AtomicU64,
    cancelled: AtomicU64,
}

fn bump(c: &AtomicU64, n: u64) {
    c.fetch_add(n, Ordering::Relaxed);
}

pub use crate::secret::Secret;

/// How the key is sent.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum AuthStyle {
    /// `Authorization: Bearer KEY` (OpenAI-compatible servers).
    Bearer,
    /// `x-api-key: KEY` (Anthropic).
    XApiKey,
}

/// True for hosts that never leave the machine: 127.0.0.0/8, ::1 and `localhost`.
pub fn is_loopback(url: &Url) -> bool {
    let Some(host) = url.host_str() else {
        return false;
    };
    let bare = host.trim_start_matches('[').trim_end_matches(']');
    match bare.parse::<IpAddr>() {
        Ok(ip) => ip.is_loopback(),
        Err(_) => bare.eq_ignore_ascii_case("localhost"),
    }
}

/// Parses and checks a base URL: http(s) only, plain http only to loopback, no
/// credentials embedded in the URL, no query or fragment. Returns it without a trailing `/`.
pub fn check_base_url(raw: &str, param: &str) -> Result<Url, ModelError> {
    let trimmed = raw.trim().trim_end_matches('/');
    let url = Url::parse(trimmed)
        .map_err(|e| ModelError::Config(format!("`{param}` is not a valid URL ({e})")))?;
    if !url.username().is_empty() || url.password().is_some() {
        return Err(ModelError::Config(format!(
            "`{param}` must not embed credentials; put the key in the environment variable named by `api_key_env`"
        )));
    }
    if url.query().is_some() || url.fragment().is_some() {
        return Err(ModelError::Config(format!(
            "`{param}` must not have a query or fragment"
        )));
    }
    match url.scheme() {
        "https" => {}
        "http" if is_loopback(&url) => {}
        "http" => {
            return Err(ModelError::Config(format!(
                "`{param}` {} uses plain http to a non-loopback host; use https (http is allowed only for 127.0.0.0/8, ::1 and localhost)",
                url.as_str()
            )));
        }
        other => {
            return Err(ModelError::Config(format!(
                "`{param}` has scheme `{other}`; only https (or http to loopback) is allowed"
            )));
        }
    }
    if url.host().is_none() {
        return Err(ModelError::Config(format!("`{param}` has no host")));
    }
    Ok(url)
}

/// Checks that an `api_key_env` value is a usable environment variable name.
pub fn check_env_name(name: &str) -> Result<(), ModelError> {
    if name.is_empty() || name.contains('=') || name.contains('\0') || name.trim() != name {
        return Err(ModelError::Config(format!(
            "`api_key_env` = {name:?} is not an environment variable name"
        )));
    }
    Ok(())
}

/// Everything a [`Transport`] needs, resolved from a target's params.
pub struct TransportConfig {
    /// The full endpoint URL requests are POSTed to.
    pub url: Url,
    /// Extra fixed headers (e.g. `anthropic-version`).
    pub headers: HeaderMap,
    /// The key and how to send it; `None` only for keyless loopback servers.
    pub auth: Option<(Secret, AuthStyle)>,
    /// Name of the environment variable the key came from (for error messages).
    pub key_env: String,
    /// Per-attempt timeout (connect + request + full body).
    pub timeout: Duration,
    pub max_retries: u32,
    /// Upper bound on in-flight requests; `None` = only the adaptive limit after a 429.
    pub max_concurrency: Option<usize>,
    pub options: TransportOptions,
}

/// One target's HTTP client: connection pool, retries, counters and concurrency limit.
pub struct Transport {
    client: reqwest::Client,
    url: Url,
    headers: HeaderMap,
    secret: Option<Secret>,
    /// Further secrets scrubbed from every message (the `http` target's secret headers).
    extra_secrets: Vec<Secret>,
    key_env: String,
    timeout: Duration,
    max_retries: u32,
    options: TransportOptions,
    counters: Counters,
    limiter: Limiter,
    jitter: AtomicU64,
    /// Set by [`Transport::stop_on_client_errors`]: a 4xx is a configuration error.
    client_errors_stop: bool,
    /// The stop this transport's calls obey ([`Stop::global`] unless a test gives one).
    stop: &'static Stop,
    /// Set once the first retried timeout was said.
    timeout_said: std::sync::atomic::AtomicBool,
}

impl fmt::Debug for Transport {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Transport")
            .field("url", &self.url.as_str())
            .field("key_env", &self.key_env)
            .field("has_key", &self.secret.is_some())
            .field("timeout", &self.timeout)
            .field("max_retries", &self.max_retries)
            .finish_non_exhaustive()
    }
}

/// rustls needs a process-wide crypto provider; we ship `ring`. Installing twice (or after
/// another crate installed one) is harmless.
fn install_crypto_provider() {
    static ONCE: Once = Once::new();
    ONCE.call_once(|| {
        let _ = rustls::crypto::ring::default_provider().install_default();
    });
}

/// The body of a batch-plumbing request ([`Transport::plumbing`]).
pub enum Payload {
    Empty,
    /// JSON bytes.
    Json(Vec<u8>),
    /// Bytes with headers of their own (the `http` target's request): they replace the
    /// transport's `Content-Type` and are added to its other headers.
    Raw(HeaderMap, Vec<u8>),
    /// A `multipart/form-data` file upload with its `purpose` field (OpenAI `/v1/files`).
    File {
        purpose: &'static str,
        filename: String,
        bytes: Vec<u8>,
    },
}

/// One request of a target whose requests the user describes (the `http` target): its
/// method, URL, headers and body bytes (the `Content-Type` among the headers).
#[derive(Debug, Clone)]
pub struct RawRequest {
    pub method: reqwest::Method,
    pub url: Url,
    pub headers: HeaderMap,
    pub body: Vec<u8>,
}

/// Why one attempt failed: retried (with the server's `Retry-After`, if any), or final.
pub enum Failure {
    Retry {
        cause: RetryCause,
        retry_after: Option<Duration>,
        message: String,
    },
    Fatal(ModelError),
    /// Final, and a sign that the setup rather than this request is wrong (a 404, a reply
    /// the target cannot read): one call's error, but when the transport's first
    /// [`SETUP_FAILURES_TO_STOP`] calls all end this way, and none succeeded, the
    /// configuration is wrong and the run stops ([`ModelError::Config`]).
    Setup(ModelError),
}

/// Calls ending in a setup failure ([`Failure::Setup`], or a connection refused on every
/// retry) before any call succeeded, after which the run stops: the endpoint, the model
/// name or the reply extraction is wrong, and every further call would fail alike.
pub const SETUP_FAILURES_TO_STOP: u64 = 3;

impl Transport {
    pub fn new(cfg: TransportConfig) -> Result<Self, ModelError> {
        install_crypto_provider();
        let mut headers = cfg.headers;
        headers.insert(CONTENT_TYPE, HeaderValue::from_static("application/json"));
        let secret = match cfg.auth {
            Some((secret, style)) => {
                let (name, value) = match style {
                    AuthStyle::Bearer => (
                        reqwest::header::AUTHORIZATION,
                        format!("Bearer {}", secret.expose()),
                    ),
                    AuthStyle::XApiKey => (
                        reqwest::header::HeaderName::from_static("x-api-key"),
                        secret.expose().to_string(),
                    ),
                };
                let mut v = HeaderValue::from_str(&value).map_err(|_| {
                    ModelError::Config(format!(
                        "the key in {} contains characters not allowed in an HTTP header",
                        cfg.key_env
                    ))
                })?;
                v.set_sensitive(true);
                headers.insert(name, v);
                Some(secret)
            }
            None => None,
        };
        let client = reqwest::Client::builder()
            .user_agent(concat!("gauntlet/", env!("CARGO_PKG_VERSION")))
            .redirect(reqwest::redirect::Policy::none())
            .connect_timeout(cfg.timeout.min(Duration::from_secs(10)))
            .pool_idle_timeout(Duration::from_secs(90))
            .tcp_nodelay(true)
            .tcp_keepalive(Duration::from_secs(60))
            .build()
            .map_err(|e| ModelError::Config(format!("cannot build the HTTP client: {e}")))?;
        // Jitter only spreads retries in time; any varying seed will do.
        static INSTANCES: AtomicU64 = AtomicU64::new(0);
        let seed = SystemTime::now()
            .duration_since(SystemTime::UNIX_EPOCH)
            .map(|d| d.as_nanos() as u64)
            .unwrap_or(0)
            ^ INSTANCES
                .fetch_add(1, Ordering::Relaxed)
                .wrapping_mul(0xA24B_AED4_963E_E407);
        Ok(Transport {
            client,
            url: cfg.url,
            headers,
            secret,
            extra_secrets: Vec::new(),
            key_env: cfg.key_env,
            timeout: cfg.timeout,
            max_retries: cfg.max_retries,
            limiter: Limiter::new(cfg.max_concurrency, cfg.options.increase_after),
            options: cfg.options,
            counters: Counters::default(),
            jitter: AtomicU64::new(seed),
            client_errors_stop: false,
            stop: Stop::global(),
            timeout_said: std::sync::atomic::AtomicBool::new(false),
        })
    }

    /// This transport with every 4xx but 401/403 (key), 408 (retried as a timeout) and
    /// 429 (retried) made a [`ModelError::Config`] that stops the run: for a target whose
    /// requests the user wrote (the `http` target), a 4xx means the request is wrong,
    /// and every later call would be refused alike.
    pub fn stop_on_client_errors(mut self) -> Self {
        self.client_errors_stop = true;
        self
    }

    /// This transport obeying `stop` instead of the process's ([`Stop::global`]).
    pub fn with_stop(mut self, stop: &'static Stop) -> Self {
        self.stop = stop;
        self
    }

    /// This transport with `secrets` scrubbed from every error message as the key is.
    pub fn with_secrets(mut self, secrets: Vec<Secret>) -> Self {
        self.extra_secrets = secrets;
        self
    }

    /// The secrets given by [`Transport::with_secrets`].
    pub fn secrets(&self) -> &[Secret] {
        &self.extra_secrets
    }

    /// The endpoint URL.
    pub fn url(&self) -> &Url {
        &self.url
    }

    /// A snapshot of the counters.
    pub fn stats(&self) -> TransportStats {
        let c = &self.counters;
        let get = |a: &AtomicU64| a.load(Ordering::Relaxed);
        let (limit, decreases) = self.limiter.snapshot();
        TransportStats {
            calls: get(&c.calls),
            attempts: get(&c.attempts),
            succeeded: get(&c.succeeded),
            failed: get(&c.failed),
            retries_429: get(&c.retries_429),
            retries_5xx: get(&c.retries_5xx),
            retries_timeout: get(&c.retries_timeout),
            retries_connect: get(&c.retries_connect),
            retry_wait_ms: get(&c.retry_wait_ms),
            concurrency_limit: limit.map(|l| l as u64),
            concurrency_decreases: decreases,
            cancelled: get(&c.cancelled),
        }
    }

    /// Scrubs the key (and every other secret) from an error.
    fn scrub(&self, e: ModelError) -> ModelError {
        if self.secret.is_none() && self.extra_secrets.is_empty() {
            return e;
        }
        match e {
            ModelError::Config(m) => ModelError::Config(self.redact(&m)),
            ModelError::Call(m) => ModelError::Call(self.redact(&m)),
            ModelError::Budget => ModelError::Budget,
        }
    }

    /// POSTs a JSON body and returns the parsed JSON response, retrying as documented.
    pub async fn post_json(&self, body: &Value) -> Result<Value, ModelError> {
        self.call(body, |v, _| Ok(v.clone())).await
    }

    /// POSTs a JSON body and hands the JSON response (with the endpoint URL, for error
    /// messages) to `parse`. A parse error ends the call (it is counted as failed and
    /// not retried: a provider that answers 200 with the wrong shape will do so again).
    pub async fn call<T>(
        &self,
        body: &Value,
        parse: impl Fn(&Value, &str) -> Result<T, ModelError>,
    ) -> Result<T, ModelError> {
        bump(&self.counters.calls, 1);
        let bytes = serde_json::to_vec(body).map_err(|e| {
            bump(&self.counters.failed, 1);
            ModelError::Call(format!("cannot encode the request: {e}"))
        })?;
        let mut retries = 0u32;
        loop {
            let permit = self.slot().await?;
            bump(&self.counters.attempts, 1);
            let Some(outcome) = self
                .in_flight(async {
                    self.attempt(&bytes)
                        .await
                        .and_then(|v| parse(&v, self.url.as_str()).map_err(Failure::Fatal))
                })
                .await
            else {
                return Err(self.given_up(permit));
            };
            if let Some(done) = self.settle(outcome, permit, &mut retries).await {
                return done;
            }
        }
    }

    /// A slot of the concurrency limit for the next attempt — unless a stop was asked
    /// for, or comes while waiting for one: then nothing is sent.
    async fn slot(&self) -> Result<Permit<'_>, ModelError> {
        if self.stop.stopping() {
            bump(&self.counters.cancelled, 1);
            return Err(not_sent(""));
        }
        tokio::select! {
            p = self.limiter.acquire() => Ok(p),
            () = self.stop.reached(Level::Stopping) => {
                bump(&self.counters.cancelled, 1);
                Err(not_sent("waiting for a free slot of the target's concurrency limit"))
            }
        }
    }

    /// `attempt`, unless the stop reaches its second level first: then `None`, the
    /// request in flight given up.
    async fn in_flight<T>(&self, attempt: impl std::future::Future<Output = T>) -> Option<T> {
        tokio::select! {
            v = attempt => Some(v),
            () = self.stop.reached(Level::Cancelling) => None,
        }
    }

    /// The error of a request given up in flight at a stop's second level.
    fn given_up(&self, permit: Permit<'_>) -> ModelError {
        drop(permit);
        bump(&self.counters.cancelled, 1);
        crate::stop::given_up()
    }

    /// Sleeps `wait` before a retry; false when a stop cut the wait short.
    async fn wait_retry(&self, wait: Duration) -> bool {
        tokio::select! {
            () = tokio::time::sleep(wait) => true,
            () = self.stop.reached(Level::Stopping) => false,
        }
    }

    /// What one attempt's outcome means for the retry loops of [`Transport::call`] and
    /// [`Transport::exchange`]: `Some` with the call's result (a success, a fatal error,
    /// or the last retry spent), or `None` after counting the retry and waiting it out
    /// (the server's `Retry-After`, capped, or full-jitter backoff).
    async fn settle<T>(
        &self,
        outcome: Result<T, Failure>,
        permit: Permit<'_>,
        retries: &mut u32,
    ) -> Option<Result<T, ModelError>> {
        match outcome {
            Ok(v) => {
                self.limiter.on_success();
                drop(permit);
                bump(&self.counters.succeeded, 1);
                Some(Ok(v))
            }
            Err(Failure::Fatal(e)) => {
                drop(permit);
                bump(&self.counters.failed, 1);
                Some(Err(self.scrub(e)))
            }
            Err(Failure::Setup(e)) => {
                drop(permit);
                bump(&self.counters.failed, 1);
                Some(Err(self.setup_failure(self.scrub(e))))
            }
            Err(Failure::Retry {
                cause,
                retry_after,
                message,
            }) => {
                if matches!(cause, RetryCause::RateLimited | RetryCause::Timeout) {
                    self.limiter.on_rate_limited(&permit);
                }
                drop(permit);
                if cause == RetryCause::Timeout
                    && *retries < self.max_retries
                    && !self.timeout_said.swap(true, Ordering::Relaxed)
                {
                    let limit = self
                        .limiter
                        .snapshot()
                        .0
                        .map_or("no limit".to_string(), |n| n.to_string());
                    notice(&format!(
                        "{}: a request timed out after {:.1} s and is retried from scratch; so that retries do not add to the server's queue (or to an abandoned generation it still runs), the requests in flight to this target are limited to {limit} for now (raised again after successes); raise timeout_s for a slow model, or lower concurrency to what the server runs at once",
                        shown_url(&self.url),
                        self.timeout.as_secs_f64()
                    ));
                }
                if *retries >= self.max_retries {
                    bump(&self.counters.failed, 1);
                    let tail = match *retries {
                        0 => "no retries allowed".to_string(),
                        1 => "gave up after 1 retry".to_string(),
                        n => format!("gave up after {n} retries"),
                    };
                    let e = self.scrub(ModelError::Call(format!("{message} ({tail})")));
                    // A connection that failed on every try: nothing answers there.
                    return Some(Err(if cause == RetryCause::Connect {
                        self.setup_failure(e)
                    } else {
                        e
                    }));
                }
                let c = &self.counters;
                let wait = match retry_after {
                    Some(d) => server_wait(d, self.options.retry_after_cap, &message),
                    None => self.backoff(*retries),
                };
                let started = std::time::Instant::now();
                if !self.wait_retry(wait).await {
                    // The stop ended the wait: the retry is never made.
                    bump(&c.cancelled, 1);
                    bump(&c.retry_wait_ms, started.elapsed().as_millis() as u64);
                    return Some(Err(self.scrub(not_sent(&format!(
                        "waiting {:.1} s before retry {} after: {message}",
                        wait.as_secs_f64(),
                        *retries + 1
                    )))));
                }
                bump(
                    match cause {
                        RetryCause::RateLimited => &c.retries_429,
                        RetryCause::ServerError => &c.retries_5xx,
                        RetryCause::Timeout => &c.retries_timeout,
                        RetryCause::Connect => &c.retries_connect,
                    },
                    1,
                );
                bump(&c.retry_wait_ms, wait.as_millis() as u64);
                *retries += 1;
                None
            }
        }
    }

    /// A call's setup failure: the call's own error, or, once the first
    /// [`SETUP_FAILURES_TO_STOP`] calls all failed this way with none succeeding, the
    /// configuration error that stops the run, quoting this failure.
    fn setup_failure(&self, e: ModelError) -> ModelError {
        let ModelError::Call(message) = e else {
            return e;
        };
        if self.counters.succeeded.load(Ordering::Relaxed) > 0 {
            return ModelError::Call(message);
        }
        let n = self.counters.setup_failures.fetch_add(1, Ordering::Relaxed) + 1;
        if n < SETUP_FAILURES_TO_STOP {
            return ModelError::Call(message);
        }
        ModelError::Config(format!(
            "the first {n} calls to {} failed and none succeeded, so every call would fail alike: {message}; check the target's URL, model name and reply extraction (the run stops here)",
            self.url
        ))
    }

    /// Full jitter: uniform in `[0, min(cap, base * 2^retry)]`.
    fn backoff(&self, retry: u32) -> Duration {
        let ceiling = self
            .options
            .backoff_base
            .saturating_mul(1u32 << retry.min(20))
            .min(self.options.backoff_cap);
        ceiling.mul_f64(unit_random(&self.jitter))
    }

    async fn attempt(&self, body: &[u8]) -> Result<Value, Failure> {
        let resp = self
            .send_once(
                reqwest::Method::POST,
                &self.url,
                &Payload::Json(body.to_vec()),
                self.timeout,
            )
            .await?;
        let bytes = self.read_body(resp).await?;
        serde_json::from_slice::<Value>(&bytes).map_err(|e| {
            // An HTML page or another service's reply: the URL points elsewhere.
            Failure::Setup(ModelError::Call(format!(
                "malformed JSON from {}: {e}; body starts: {}",
                shown_url(&self.url),
                excerpt(&bytes)
            )))
        })
    }

    /// Sends one request and returns a successful response (its body unread), or the
    /// failure its status or the connection makes.
    async fn send_once(
        &self,
        method: reqwest::Method,
        url: &Url,
        payload: &Payload,
        timeout: Duration,
    ) -> Result<reqwest::Response, Failure> {
        let mut headers = self.headers.clone();
        let req = self.client.request(method, url.clone()).timeout(timeout);
        let req = match payload {
            Payload::Empty => {
                headers.remove(CONTENT_TYPE);
                req.headers(headers)
            }
            Payload::Json(b) => req.headers(headers).body(b.clone()),
            Payload::Raw(extra, b) => {
                headers.remove(CONTENT_TYPE);
                for (k, v) in extra {
                    headers.insert(k.clone(), v.clone());
                }
                if b.is_empty() {
                    req.headers(headers)
                } else {
                    req.headers(headers).body(b.clone())
                }
            }
            Payload::File {
                purpose,
                filename,
                bytes,
            } => {
                headers.remove(CONTENT_TYPE);
                let part = reqwest::multipart::Part::bytes(bytes.clone())
                    .file_name(filename.clone())
                    .mime_str("application/jsonl")
                    .map_err(|e| Failure::Fatal(ModelError::Call(format!("upload: {e}"))))?;
                let form = reqwest::multipart::Form::new()
                    .text("purpose", *purpose)
                    .part("file", part);
                req.headers(headers).multipart(form)
            }
        };
        let resp = req
            .send()
            .await
            .map_err(|e| self.transport_failure_at(&e, "request", url))?;
        let status = resp.status();
        if status.is_success() {
            return Ok(resp);
        }
        let url = shown_url(url);
        let retry_after = parse_retry_after(resp.headers(), SystemTime::now());
        let bytes = self.read_body(resp).await?;
        let code = status.as_u16();
        let reason = status.canonical_reason().unwrap_or("");
        Err(match status {
            StatusCode::UNAUTHORIZED | StatusCode::FORBIDDEN => {
                Failure::Fatal(ModelError::Config(format!(
                    "HTTP {code} {reason} from {url}: the API key was rejected; check {} ({})",
                    self.key_env,
                    excerpt(&bytes)
                )))
            }
            StatusCode::REQUEST_TIMEOUT if self.client_errors_stop => Failure::Retry {
                cause: RetryCause::Timeout,
                retry_after,
                message: format!("HTTP {code} {reason} from {url}: {}", excerpt(&bytes)),
            },
            _ if self.client_errors_stop && status.is_client_error() && code != 429 => {
                Failure::Fatal(ModelError::Config(format!(
                    "HTTP {code} {reason} from {url}: the application refused the request as malformed ({}); every call would be refused alike, so the run stops: check the target's url, method, headers and body template",
                    excerpt(&bytes)
                )))
            }
            _ if RETRY_STATUSES.contains(&code) => Failure::Retry {
                cause: if code == 429 {
                    RetryCause::RateLimited
                } else {
                    RetryCause::ServerError
                },
                retry_after,
                message: format!("HTTP {code} {reason} from {url}: {}", excerpt(&bytes)),
            },
            _ if status.is_redirection() => Failure::Fatal(ModelError::Call(format!(
                "HTTP {code} {reason} from {url}: redirects are not followed; point base_url at the final address"
            ))),
            // No such endpoint or model: the base URL or the model name is wrong.
            StatusCode::NOT_FOUND => Failure::Setup(ModelError::Call(format!(
                "HTTP {code} {reason} from {url}: {} (the endpoint or the model does not exist there)",
                excerpt(&bytes)
            ))),
            _ => Failure::Fatal(ModelError::Call(format!(
                "HTTP {code} {reason} from {url}: {}",
                excerpt(&bytes)
            ))),
        })
    }

    /// A request of the batch plumbing (upload a file, create, poll or cancel a batch)
    /// to `url` on this target's host, with its key: not a model call, so not counted
    /// in [`TransportStats`]. Retried as a call is, with backoff, when `retry` is set;
    /// a batch *create* passes `retry: false` except after a 429, because a create that
    /// timed out may have been made, and a second one would be paid for twice.
    pub async fn plumbing(
        &self,
        method: reqwest::Method,
        url: &Url,
        payload: &Payload,
        retry: bool,
    ) -> Result<Value, ModelError> {
        let mut retries = 0u32;
        loop {
            let outcome = match self
                .send_once(method.clone(), url, payload, self.timeout)
                .await
            {
                Ok(resp) => match self.read_body(resp).await {
                    Ok(bytes) => serde_json::from_slice::<Value>(&bytes).map_err(|e| {
                        Failure::Fatal(ModelError::Call(format!(
                            "malformed JSON from {}: {e}; body starts: {}",
                            shown_url(url),
                            excerpt(&bytes)
                        )))
                    }),
                    Err(f) => Err(f),
                },
                Err(f) => Err(f),
            };
            match outcome {
                Ok(v) => return Ok(v),
                Err(Failure::Fatal(e) | Failure::Setup(e)) => return Err(self.scrub(e)),
                Err(Failure::Retry {
                    cause,
                    retry_after,
                    message,
                }) => {
                    let may_retry = retry || cause == RetryCause::RateLimited;
                    if !may_retry || retries >= self.max_retries {
                        return Err(self.scrub(ModelError::Call(message)));
                    }
                    let wait = match retry_after {
                        Some(d) => server_wait(d, self.options.retry_after_cap, &message),
                        None => self.backoff(retries),
                    };
                    if !self.wait_retry(wait).await {
                        return Err(self.scrub(not_sent(&format!(
                            "waiting {:.1} s to retry after: {message}",
                            wait.as_secs_f64()
                        ))));
                    }
                    retries += 1;
                }
            }
        }
    }

    /// Opens a download (a batch's results) from `url` with this target's key, retrying
    /// until the response head arrives; the caller streams the body with
    /// [`reqwest::Response::chunk`]. The whole download may take up to an hour.
    pub async fn download(&self, url: &Url) -> Result<reqwest::Response, ModelError> {
        let mut retries = 0u32;
        let timeout = self.timeout.max(Duration::from_secs(3600));
        loop {
            match self
                .send_once(reqwest::Method::GET, url, &Payload::Empty, timeout)
                .await
            {
                Ok(r) => return Ok(r),
                Err(Failure::Fatal(e) | Failure::Setup(e)) => return Err(self.scrub(e)),
                Err(Failure::Retry {
                    retry_after,
                    message,
                    ..
                }) => {
                    if retries >= self.max_retries {
                        return Err(self.scrub(ModelError::Call(message)));
                    }
                    let wait = match retry_after {
                        Some(d) => server_wait(d, self.options.retry_after_cap, &message),
                        None => self.backoff(retries),
                    };
                    if !self.wait_retry(wait).await {
                        return Err(self.scrub(not_sent(&format!(
                            "waiting {:.1} s to retry after: {message}",
                            wait.as_secs_f64()
                        ))));
                    }
                    retries += 1;
                }
            }
        }
    }

    /// The key, when this transport sends one (for the call layer's redaction).
    pub fn secret(&self) -> Option<&Secret> {
        self.secret.as_ref()
    }

    /// The key (and every other secret) scrubbed from a message (downloaded text quoted
    /// in an error).
    pub fn redact(&self, text: &str) -> String {
        let mut out = match &self.secret {
            Some(s) => s.redact(text),
            None => text.to_string(),
        };
        for s in &self.extra_secrets {
            out = s.redact(&out);
        }
        out
    }

    /// Sends `req` with this transport's retries, concurrency limit and counters, as
    /// [`Transport::call`] does, and hands a successful (2xx) response to `read`, which
    /// reads its body (whole, or as a stream) and returns what the call returns. A
    /// [`Failure::Retry`] from `read` (the connection dropped mid-body, the time ran out)
    /// is retried like a failed request; a [`Failure::Fatal`] ends the call.
    pub async fn exchange<'a, T>(
        &'a self,
        req: &RawRequest,
        read: impl Fn(reqwest::Response) -> crate::BoxFuture<'a, Result<T, Failure>>,
    ) -> Result<T, ModelError> {
        bump(&self.counters.calls, 1);
        let mut retries = 0u32;
        loop {
            let permit = self.slot().await?;
            bump(&self.counters.attempts, 1);
            let Some(outcome) = self
                .in_flight(async {
                    match self
                        .send_once(
                            req.method.clone(),
                            &req.url,
                            &Payload::Raw(req.headers.clone(), req.body.clone()),
                            self.timeout,
                        )
                        .await
                    {
                        Ok(resp) => read(resp).await,
                        Err(f) => Err(f),
                    }
                })
                .await
            else {
                return Err(self.given_up(permit));
            };
            if let Some(done) = self.settle(outcome, permit, &mut retries).await {
                return done;
            }
        }
    }

    /// Reads a whole response body, at most [`TransportOptions::max_body_bytes`]
    /// (for [`Transport::exchange`]'s readers).
    pub async fn read_capped(&self, resp: reqwest::Response) -> Result<Vec<u8>, Failure> {
        self.read_body(resp).await
    }

    /// The largest response body accepted, in bytes.
    pub fn max_body_bytes(&self) -> usize {
        self.options.max_body_bytes
    }

    /// The per-attempt timeout (connect, request and the whole body).
    pub fn timeout(&self) -> Duration {
        self.timeout
    }

    /// The failure a body read that failed with `e` makes (retried as a timeout or a
    /// connection error), for readers that stream a body themselves.
    pub fn body_failure(&self, e: &reqwest::Error, what: &str, url: &Url) -> Failure {
        self.transport_failure_at(e, what, url)
    }

    async fn read_body(&self, mut resp: reqwest::Response) -> Result<Vec<u8>, Failure> {
        let mut out = Vec::new();
        loop {
            match resp.chunk().await {
                Ok(Some(chunk)) => {
                    if out.len() + chunk.len() > self.options.max_body_bytes {
                        return Err(Failure::Fatal(ModelError::Call(format!(
                            "response from {} exceeds {} bytes",
                            shown_url(&self.url),
                            self.options.max_body_bytes
                        ))));
                    }
                    out.extend_from_slice(&chunk);
                }
                Ok(None) => return Ok(out),
                Err(e) => return Err(self.transport_failure(&e, "reading the response body")),
            }
        }
    }

    fn transport_failure(&self, e: &reqwest::Error, what: &str) -> Failure {
        self.transport_failure_at(e, what, &self.url)
    }

    fn transport_failure_at(&self, e: &reqwest::Error, what: &str, url: &Url) -> Failure {
        let cause = if e.is_timeout() {
            RetryCause::Timeout
        } else {
            RetryCause::Connect
        };
        let shown = shown_url(url);
        let detail = if cause == RetryCause::Timeout {
            format!("timed out after {:.1} s", self.timeout.as_secs_f64())
        } else {
            // reqwest names the URL in its own message too: said once, capped.
            error_chain(e)
                .replace(&format!(" for url ({url})"), "")
                .replace(url.as_str(), &shown)
        };
        Failure::Retry {
            cause,
            retry_after: None,
            message: format!("{what} to {shown} failed: {detail}"),
        }
    }
}

/// The most characters of a URL an error message shows.
pub const SHOWN_URL_CHARS: usize = 160;

/// A URL as an error message shows it: whole up to [`SHOWN_URL_CHARS`] characters, else
/// cut there with its length said. A server-chosen part (a session id in the query)
/// cannot make a message large.
pub fn shown_url(url: &Url) -> String {
    let s = url.as_str();
    match s.char_indices().nth(SHOWN_URL_CHARS) {
        None => s.to_string(),
        Some((i, _)) => format!("{}… ({} bytes in all)", &s[..i], s.len()),
    }
}

/// An error and its sources, joined.
fn error_chain(e: &dyn std::error::Error) -> String {
    let mut s = e.to_string();
    let mut cur = e.source();
    while let Some(inner) = cur {
        let t = inner.to_string();
        if !s.contains(&t) {
            s.push_str(": ");
            s.push_str(&t);
        }
        cur = inner.source();
    }
    s
}

/// The most characters of a body an error message quotes.
pub const EXCERPT_CHARS: usize = 200;

/// The first [`EXCERPT_CHARS`] characters of a body, on one line (control characters as
/// spaces). Only the start of the body is decoded, whatever its size.
pub fn excerpt(bytes: &[u8]) -> String {
    // Enough bytes for the characters quoted, leading whitespace aside: 4 per character,
    // and a few more to know whether the text goes on.
    let mut start = 0;
    while start < bytes.len() && (bytes[start].is_ascii_whitespace() || bytes[start] < 0x20) {
        start += 1;
    }
    let end = bytes.len().min(start + 4 * EXCERPT_CHARS + 8);
    let text = String::from_utf8_lossy(&bytes[start..end]);
    let one_line: String = text
        .chars()
        .map(|c| if c.is_control() { ' ' } else { c })
        .collect();
    let trimmed = one_line.trim();
    if trimmed.is_empty() {
        return "empty body".to_string();
    }
    let mut out: String = trimmed.chars().take(EXCERPT_CHARS).collect();
    if trimmed.chars().count() > EXCERPT_CHARS || end < bytes.len() {
        out.push('…');
    }
    out
}

/// A `Retry-After` header as a wait from `now`: delta-seconds (integer or decimal) or an
/// HTTP-date (a date in the past means "now").
pub fn parse_retry_after(headers: &HeaderMap, now: SystemTime) -> Option<Duration> {
    let raw = headers.get(RETRY_AFTER)?.to_str().ok()?.trim();
    if let Ok(secs) = raw.parse::<u64>() {
        return Some(Duration::from_secs(secs));
    }
    if let Ok(secs) = raw.parse::<f64>() {
        return (secs.is_finite() && secs >= 0.0).then(|| Duration::from_secs_f64(secs.min(1e6)));
    }
    let at = httpdate::parse_http_date(raw).ok()?;
    Some(at.duration_since(now).unwrap_or(Duration::ZERO))
}

/// splitmix64 over a shared counter: a uniform number in [0, 1). Only used for jitter.
fn unit_random(state: &AtomicU64) -> f64 {
    let mut z = state
        .fetch_add(0x9E37_79B9_7F4A_7C15, Ordering::Relaxed)
        .wrapping_add(0x9E37_79B9_7F4A_7C15);
    z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
    z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
    z ^= z >> 31;
    (z >> 11) as f64 / (1u64 << 53) as f64
}

/// Adaptive (AIMD) concurrency limit.
///
/// `limit` starts at the configured maximum (or unlimited). A 429 (or a timeout) halves the limit that
/// was actually in use (`min(limit, in_flight)`, at least 1), but only once per "epoch":
/// requests that started before the last decrease cannot shrink it again, so a burst of
/// 429s from one wave of requests halves once instead of collapsing to 1. After
/// `increase_after` consecutive successes the limit grows by one, up to the maximum.
pub(crate) struct Limiter {
    max: Option<usize>,
    increase_after: u32,
    state: Mutex<LimiterState>,
    notify: Notify,
}

struct LimiterState {
    /// `usize::MAX` = unlimited.
    limit: usize,
    in_flight: usize,
    epoch: u64,
    successes: u32,
    decreases: u64,
}

pub(crate) struct Permit<'a> {
    limiter: &'a Limiter,
    epoch: u64,
}

impl Drop for Permit<'_> {
    fn drop(&mut self) {
        {
            let mut s = self.limiter.lock();
            s.in_flight -= 1;
        }
        self.limiter.notify.notify_one();
    }
}

impl Limiter {
    pub(crate) fn new(max: Option<usize>, increase_after: u32) -> Self {
        Limiter {
            max,
            increase_after: increase_after.max(1),
            state: Mutex::new(LimiterState {
                limit: max.unwrap_or(usize::MAX).max(1),
                in_flight: 0,
                epoch: 0,
                successes: 0,
                decreases: 0,
            }),
            notify: Notify::new(),
        }
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, LimiterState> {
        self.state.lock().unwrap_or_else(|p| p.into_inner())
    }

    pub(crate) async fn acquire(&self) -> Permit<'_> {
        loop {
            let mut notified = std::pin::pin!(self.notify.notified());
            notified.as_mut().enable();
            {
                let mut s = self.lock();
                if s.in_flight < s.limit {
                    s.in_flight += 1;
                    return Permit {
                        limiter: self,
                        epoch: s.epoch,
                    };
                }
            }
            notified.await;
        }
    }

    pub(crate) fn on_success(&self) {
        let grew = {
            let mut s = self.lock();
            s.successes += 1;
            if s.successes >= self.increase_after {
                s.successes = 0;
                let max = self.max.unwrap_or(usize::MAX);
                if s.limit < max {
                    s.limit += 1;
                    true
                } else {
                    false
                }
            } else {
                false
            }
        };
        if grew {
            self.notify.notify_one();
        }
    }

    pub(crate) fn on_rate_limited(&self, permit: &Permit<'_>) {
        let mut s = self.lock();
        s.successes = 0;
        if permit.epoch == s.epoch {
            let in_use = s.limit.min(s.in_flight).max(1);
            s.limit = (in_use / 2).max(1);
            s.epoch += 1;
            s.decreases += 1;
        }
    }

    /// (current limit, or None while unlimited; number of decreases).
    pub(crate) fn snapshot(&self) -> (Option<usize>, u64) {
        let s = self.lock();
        ((s.limit != usize::MAX).then_some(s.limit), s.decreases)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn retry_after_forms() {
        let now = SystemTime::UNIX_EPOCH + Duration::from_secs(1_700_000_000);
        let mut h = HeaderMap::new();
        assert_eq!(parse_retry_after(&h, now), None);
        h.insert(RETRY_AFTER, HeaderValue::from_static("3"));
        assert_eq!(parse_retry_after(&h, now), Some(Duration::from_secs(3)));
        h.insert(RETRY_AFTER, HeaderValue::from_static("0.25"));
        assert_eq!(parse_retry_after(&h, now), Some(Duration::from_millis(250)));
        let later = httpdate::fmt_http_date(now + Duration::from_secs(7));
        h.insert(RETRY_AFTER, HeaderValue::from_str(&later).unwrap());
        assert_eq!(parse_retry_after(&h, now), Some(Duration::from_secs(7)));
        let earlier = httpdate::fmt_http_date(now - Duration::from_secs(7));
        h.insert(RETRY_AFTER, HeaderValue::from_str(&earlier).unwrap());
        assert_eq!(parse_retry_after(&h, now), Some(Duration::ZERO));
        h.insert(RETRY_AFTER, HeaderValue::from_static("soon"));
        assert_eq!(parse_retry_after(&h, now), None);
        h.insert(RETRY_AFTER, HeaderValue::from_static("-1"));
        assert_eq!(parse_retry_after(&h, now), None);
    }

    #[test]
    fn base_url_policy() {
        for ok in [
            "https://api.example.com/v1",
            "http://127.0.0.1:8080/v1/",
            "http://127.9.9.9/v1",
            "http://localhost:1/v1",
            "http://LOCALHOST/v1",
            "http://[::1]:9/v1",
        ] {
            let u = check_base_url(ok, "base_url").unwrap_or_else(|e| panic!("{ok}: {e}"));
            assert!(!u.as_str().ends_with("v1/"), "{u}");
        }
        for bad in [
            "http://example.com/v1",
            "http://10.0.0.1/v1",
            "http://192.168.1.1/v1",
            "http://[::2]/v1",
            "http://localhost.example.com/v1",
            "ftp://127.0.0.1/v1",
            "file:///etc/passwd",
            "https://user:pw@api.example.com/v1",
            "https://api.example.com/v1?key=1",
            "not a url",
        ] {
            assert!(
                matches!(check_base_url(bad, "base_url"), Err(ModelError::Config(_))),
                "{bad}"
            );
        }
        let e = check_base_url("http://example.com/v1", "base_url").unwrap_err();
        assert!(e.to_string().contains("plain http"), "{e}");
    }

    #[test]
    fn jitter_is_uniformish_and_bounded() {
        let st = AtomicU64::new(42);
        let xs: Vec<f64> = (0..10_000).map(|_| unit_random(&st)).collect();
        assert!(xs.iter().all(|x| (0.0..1.0).contains(x)));
        let mean = xs.iter().sum::<f64>() / xs.len() as f64;
        assert!((0.45..0.55).contains(&mean), "{mean}");
    }

    #[test]
    fn long_urls_are_cut_in_messages() {
        let short = Url::parse("http://127.0.0.1:9/v1/chat?sid=abc").unwrap();
        assert_eq!(shown_url(&short), short.as_str());
        let long = Url::parse(&format!(
            "http://127.0.0.1:9/v1/chat?sid={}",
            "x".repeat(1 << 20)
        ))
        .unwrap();
        let shown = shown_url(&long);
        assert!(shown.chars().count() < SHOWN_URL_CHARS + 40, "{shown}");
        assert!(shown.ends_with(&format!("… ({} bytes in all)", long.as_str().len())));
    }

    #[test]
    fn an_excerpt_reads_only_the_start_of_a_large_body() {
        let body = format!("  \n{}", "é".repeat(16 << 20));
        let e = excerpt(body.as_bytes());
        assert_eq!(e.chars().count(), EXCERPT_CHARS + 1);
        assert!(e.starts_with('é') && e.ends_with('…'));
        assert_eq!(excerpt(b"short"), "short");
    }

    #[test]
    fn excerpt_is_short_and_single_line() {
        let long = "x\n".repeat(500);
        let e = excerpt(long.as_bytes());
        assert!(!e.contains('\n'));
        assert!(e.chars().count() <= 201);
        assert_eq!(excerpt(b"  "), "empty body");
    }

    #[tokio::test]
    async fn limiter_aimd() {
        let l = Limiter::new(Some(8), 3);
        assert_eq!(l.snapshot(), (Some(8), 0));
        // A wave of 8 in flight all rate-limited: one halving, not three.
        let permits: Vec<_> = futures_join_all(&l, 8).await;
        for p in &permits {
            l.on_rate_limited(p);
        }
        assert_eq!(l.snapshot(), (Some(4), 1));
        drop(permits);
        // A request of the new epoch that is rate-limited halves again.
        let p = l.acquire().await;
        l.on_rate_limited(&p);
        drop(p);
        assert_eq!(
            l.snapshot(),
            (Some(1), 2),
            "min(limit 4, in flight 1) / 2 → 1"
        );
        // Recovery: +1 per 3 successes, capped at 8.
        for _ in 0..100 {
            l.on_success();
        }
        assert_eq!(l.snapshot(), (Some(8), 2));
    }

    #[tokio::test]
    async fn limiter_blocks_at_limit_and_wakes() {
        let l = std::sync::Arc::new(Limiter::new(Some(2), 10));
        let a = l.acquire().await;
        let _b = l.acquire().await;
        let l2 = l.clone();
        let waiter = tokio::spawn(async move {
            let _c = l2.acquire().await;
        });
        tokio::time::sleep(Duration::from_millis(50)).await;
        assert!(!waiter.is_finished());
        drop(a);
        tokio::time::timeout(Duration::from_secs(2), waiter)
            .await
            .expect("woken by the release")
            .unwrap();
    }

    #[tokio::test]
    async fn unlimited_limiter_learns_a_limit_from_429() {
        let l = Limiter::new(None, 2);
        assert_eq!(l.snapshot(), (None, 0));
        let ps = futures_join_all(&l, 6).await;
        l.on_rate_limited(&ps[0]);
        assert_eq!(l.snapshot(), (Some(3), 1));
    }

    async fn futures_join_all(l: &Limiter, n: usize) -> Vec<Permit<'_>> {
        let mut v = Vec::new();
        for _ in 0..n {
            v.push(l.acquire().await);
        }
        v
    }
}
