//! The AgentDojo sidecar process: our own Python (`sidecar.py`, embedded) driving the
//! `agentdojo` package in a pinned virtualenv, one process per run shared by every
//! episode, spoken to in JSON lines (protocol `gauntlet-agentdojo/1`, documented in
//! `sidecar.py`).
//!
//! The process is third-party code and runs confined ([`gauntlet_sandbox::Process`]):
//! the filesystem read-only except a private scratch directory (its `$HOME` and
//! `$TMPDIR`), no sockets, an empty network namespace, every descendant killed when it is
//! dropped or gauntlet dies, an address-space and a CPU-time limit. A kernel that cannot
//! confine it makes the sidecar refuse to start, with the reason, unless
//! `GAUNTLET_ALLOW_UNCONFINED_SIDECAR=1` (it then gets every layer the kernel has).
//!
//! Failures are outcomes, not crashes of the run: a request that gets no reply within the
//! call time limit (a hang; `GAUNTLET_AGENTDOJO_CALL_TIMEOUT_S`, default 60 s, the
//! start-up handshake included), a sidecar that exits (a crash, the CPU limit), or a reply
//! that is not the protocol's (malformed, an unknown id) fails every request in flight
//! with the reason, and the process is killed; the next request starts a fresh one (a
//! new *generation*). An episode belongs to the generation that started it: its later
//! requests fail once that generation is gone, so each affected episode ends as an error
//! outcome and the run goes on.
//!
//! Two kinds of failure are the run's, not an episode's, and are decided once:
//! - a sidecar that cannot be used as configured (no virtualenv, one that does not match
//!   its pins or speaks another protocol, a kernel that cannot confine it) is refused at
//!   its first start and every later request gets the same refusal at once
//!   ([`SidecarError::is_configuration`]; the episode turns it into a configuration error,
//!   which stops the run before any model call);
//! - a sidecar that failed to start [`DEAD_AFTER`] times in a row (it hangs or dies
//!   before its handshake) is not started again: every later episode is an error outcome
//!   at once, with the last failure as its reason ([`SidecarError::Dead`]).
//!
//! Threads: one spawns the process and then reads its stdout until it closes, one writes
//! its stdin, one keeps the tail of its stderr. Async callers never block on a pipe.

use gauntlet_sandbox::{Memory, Process, Spec};
use serde_json::Value;
use std::collections::HashMap;
use std::io::{BufRead, BufReader, Read, Write};
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex, Weak};
use std::time::Duration;
use tokio::sync::oneshot;

/// The sidecar's source, written into its scratch directory at each start.
pub const SCRIPT: &str = include_str!("sidecar.py");
/// The pinned requirements of its virtualenv (scripts/install-agentdojo.sh installs them).
pub const REQUIREMENTS: &str = include_str!("requirements.txt");
pub const PROTOCOL: &str = "gauntlet-agentdojo/1";
/// The agentdojo package version the catalogue and the pins are for.
pub const AGENTDOJO_VERSION: &str = "0.1.35";
/// The environment variable that names the virtualenv.
pub const VENV_ENV: &str = "GAUNTLET_AGENTDOJO_VENV";
const UNCONFINED_ENV: &str = "GAUNTLET_ALLOW_UNCONFINED_SIDECAR";
/// Overrides the per-request time limit, in seconds (default 60).
pub const CALL_TIMEOUT_ENV: &str = "GAUNTLET_AGENTDOJO_CALL_TIMEOUT_S";
/// A reply line longer than this is malformed.
const MAX_REPLY_BYTES: usize = 64 << 20;
const STDERR_TAIL: usize = 4096;

/// Starts that failed in a row after which the sidecar is not started again in the run.
pub const DEAD_AFTER: u32 = 3;

/// Limits of one sidecar process.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Limits {
    /// Time for one request's reply (a tool call, a check, the start-up handshake, which
    /// waits for Python to import the package); longer is a hang.
    pub call_timeout: Duration,
    /// `RLIMIT_AS`, bytes.
    pub memory_bytes: u64,
    /// `RLIMIT_CPU` of one process, seconds (a restart gets a fresh budget).
    pub cpu_secs: u64,
}

impl Default for Limits {
    fn default() -> Self {
        Limits {
            call_timeout: Duration::from_secs(60),
            memory_bytes: 4 << 30,
            cpu_secs: 4 * 3600,
        }
    }
}

/// The virtualenv the sidecar runs in: `$GAUNTLET_AGENTDOJO_VENV`, else
/// `$XDG_CACHE_HOME/gauntlet/agentdojo-0.1.35`, else `~/.cache/gauntlet/agentdojo-0.1.35`
/// (where scripts/install-agentdojo.sh installs it).
pub fn default_venv() -> PathBuf {
    let env = |k: &str| std::env::var_os(k).filter(|v| !v.is_empty());
    if let Some(v) = env(VENV_ENV) {
        return PathBuf::from(v);
    }
    let leaf = format!("gauntlet/agentdojo-{AGENTDOJO_VERSION}");
    if let Some(x) = env("XDG_CACHE_HOME") {
        return PathBuf::from(x).join(leaf);
    }
    PathBuf::from(env("HOME").unwrap_or_else(|| ".".into()))
        .join(".cache")
        .join(leaf)
}

/// The pinned `(name, version)` pairs of [`REQUIREMENTS`].
pub fn pins() -> Vec<(&'static str, &'static str)> {
    REQUIREMENTS
        .lines()
        .filter(|l| !l.starts_with('#') && !l.trim().is_empty())
        .filter_map(|l| l.split_whitespace().next()?.split_once("=="))
        .collect()
}

/// Normalised distribution name (PEP 503).
fn norm(name: &str) -> String {
    name.to_ascii_lowercase().replace(['_', '.'], "-")
}

/// What the handshake established.
#[derive(Debug, Clone, PartialEq)]
pub struct Hello {
    pub agentdojo: String,
    pub python: String,
    pub frozen_time: String,
}

/// Why a request failed: ends the episode as an error outcome.
#[derive(Debug, Clone, thiserror::Error)]
pub enum SidecarError {
    /// No virtualenv where the sidecar's was looked for.
    #[error(
        "no AgentDojo virtualenv at {} (no bin/python): install it with scripts/install-agentdojo.sh, or point {VENV_ENV} at one",
        .venv.display()
    )]
    NoVirtualenv { venv: PathBuf },
    /// The thread that runs the process could not be started.
    #[error("cannot start the sidecar thread: {0}")]
    Thread(#[source] Arc<std::io::Error>),
    /// That thread ended before it reported whether the process started.
    #[error("the sidecar thread ended before starting it")]
    ThreadEnded,
    /// The process did not start.
    #[error(transparent)]
    Start(Arc<StartError>),
    /// The handshake request failed.
    #[error("the AgentDojo sidecar did not start: {0}")]
    Handshake(#[source] Box<SidecarError>),
    /// The handshake refused the sidecar of the virtualenv `venv`.
    #[error("{source} (virtualenv {})", .venv.display())]
    Hello {
        #[source]
        source: HelloError,
        venv: PathBuf,
    },
    /// The process an episode ran in is over (a later request of the episode).
    #[error("the AgentDojo sidecar this episode ran in is gone ({0})")]
    Gone(#[source] Ended),
    /// The process ended, or hung, while the request was in flight.
    #[error(transparent)]
    Ended(#[from] Ended),
    /// The request's reply channel closed without a reply.
    #[error("the sidecar's reader ended")]
    ReaderEnded,
    /// The sidecar answered the request with an error: its text.
    #[error("{message}")]
    Reported { message: String },
    /// The sidecar failed to start [`DEAD_AFTER`] times in a row: it is not started again
    /// in this run.
    #[error(
        "the AgentDojo sidecar failed to start {failures} times in a row and is not started again in this run (the last failure: {last})"
    )]
    Dead {
        failures: u32,
        last: Box<SidecarError>,
    },
}

impl SidecarError {
    /// The sidecar cannot be used as configured, whichever episode asks: no virtualenv,
    /// one that does not match its pins or speaks another protocol, a kernel that cannot
    /// confine it. No episode can run; the run must stop.
    pub fn is_configuration(&self) -> bool {
        match self {
            SidecarError::NoVirtualenv { .. } | SidecarError::Hello { .. } => true,
            SidecarError::Start(e) => matches!(**e, StartError::Unconfinable { .. }),
            _ => false,
        }
    }
}

/// Why a sidecar process (a generation) is over; every request in flight fails with it.
#[derive(Debug, Clone, thiserror::Error)]
pub enum Ended {
    /// The run ended (the sidecar was dropped).
    #[error("the run is over")]
    RunOver,
    #[error("its stdin closed (the process is gone)")]
    StdinClosed,
    /// No reply to a request within `timeout`: the process was killed.
    #[error(
        "no reply to `{op}` within {} s: the AgentDojo sidecar hung (generation {generation}); it was killed and a fresh one serves the next episode",
        .timeout.as_secs()
    )]
    Hung {
        op: String,
        timeout: Duration,
        generation: u64,
    },
    #[error("malformed reply from the AgentDojo sidecar: a line over {MAX_REPLY_BYTES} bytes")]
    LineTooLong,
    #[error("cannot read the sidecar's stdout: {0}")]
    Stdout(#[source] Arc<std::io::Error>),
    #[error("malformed reply from the AgentDojo sidecar: id {id} answers no request")]
    UnknownId { id: u64 },
    #[error("malformed reply from the AgentDojo sidecar: {0}")]
    Malformed(#[source] Arc<ReplyError>),
    /// The handshake refused the process.
    #[error(transparent)]
    Hello(HelloError),
    /// Its stdout closed; `stderr_tail` is the last of what it wrote on stderr, its
    /// lines joined by ` | ` (empty: nothing); `memory`, how its process tree went over
    /// its memory bound, if it did (the sandbox's words).
    #[error(
        "the AgentDojo sidecar exited (its stdout closed){}{}",
        memory.as_ref().map(|m| format!("; {m}")).unwrap_or_default(),
        tail_suffix(.stderr_tail)
    )]
    Exited {
        stderr_tail: String,
        memory: Option<String>,
    },
}

/// `: <tail>` after [`Ended::Exited`]'s message, or nothing when stderr was empty.
fn tail_suffix(tail: &str) -> String {
    if tail.is_empty() {
        String::new()
    } else {
        format!(": {tail}")
    }
}

/// Why the handshake refused a sidecar.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
pub enum HelloError {
    /// The `protocol` the sidecar announced (as JSON).
    #[error("the sidecar speaks {spoken} (this gauntlet speaks {PROTOCOL})")]
    Protocol { spoken: Value },
    /// Distributions of the virtualenv that differ from the pins, or are missing.
    #[error(
        "the AgentDojo virtualenv does not match its pins ({}); reinstall it with scripts/install-agentdojo.sh",
        join(wrong)
    )]
    Pins { wrong: Vec<PinMismatch> },
}

/// One distribution of the virtualenv that is not as pinned.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum PinMismatch {
    #[error("{name} is {have} (pinned {want})")]
    Differs {
        name: &'static str,
        have: String,
        want: &'static str,
    },
    #[error("{name} is missing (pinned {want})")]
    Missing {
        name: &'static str,
        want: &'static str,
    },
}

fn join(wrong: &[PinMismatch]) -> String {
    wrong
        .iter()
        .map(ToString::to_string)
        .collect::<Vec<_>>()
        .join(", ")
}

/// Why the sidecar's process did not start.
#[derive(Debug, thiserror::Error)]
pub enum StartError {
    #[error("cannot create a directory for the sidecar's script: {0}")]
    ScriptDir(#[source] std::io::Error),
    #[error("cannot write {}: {source}", path.display())]
    WriteScript {
        path: PathBuf,
        #[source]
        source: std::io::Error,
    },
    /// This kernel cannot confine it (`missing` is the sandbox's list of what lacks).
    #[error(
        "the AgentDojo sidecar cannot be confined on this machine: {missing}. It runs third-party code, so it is refused; set {UNCONFINED_ENV}=1 to run it anyway (with every protection this kernel has)"
    )]
    Unconfinable { missing: String },
    #[error("cannot start the AgentDojo sidecar: {0}")]
    Spawn(#[source] gauntlet_sandbox::SpawnError),
}

/// Why a line from the sidecar is not a reply.
#[derive(Debug, thiserror::Error)]
pub enum ReplyError {
    /// Not JSON; `shown` is the line's first 200 bytes.
    #[error("{source} in {shown:?}")]
    Json {
        #[source]
        source: serde_json::Error,
        shown: String,
    },
    #[error("a reply without a numeric `id`")]
    NoId,
    #[error("reply {id} has neither `ok` nor `error`")]
    Neither { id: u64 },
}

type Waiters = HashMap<u64, oneshot::Sender<Result<Value, SidecarError>>>;

/// One started process.
struct Generation {
    id: u64,
    /// The writer thread's queue (taken at the end: the writer then closes stdin).
    lines: Mutex<Option<std::sync::mpsc::Sender<Vec<u8>>>>,
    shared: Arc<GenShared>,
}

/// What the reader thread and the callers share.
struct GenShared {
    waiters: Mutex<Waiters>,
    /// Why this generation is over (set once).
    dead: Mutex<Option<Ended>>,
    stderr: Mutex<Vec<u8>>,
    /// The confined process; taking and dropping it kills its whole tree.
    process: Mutex<Option<Process>>,
}

impl GenShared {
    /// Marks the generation over (first reason wins), kills the process tree and fails
    /// every request in flight.
    fn fail(&self, why: Ended) {
        let why = self.dead.lock().unwrap().get_or_insert(why).clone();
        drop(self.process.lock().unwrap().take());
        let waiters = std::mem::take(&mut *self.waiters.lock().unwrap());
        for (_, w) in waiters {
            let _ = w.send(Err(SidecarError::Ended(why.clone())));
        }
    }
    fn stderr_tail(&self) -> String {
        let b = self.stderr.lock().unwrap();
        let s = String::from_utf8_lossy(&b);
        let s = s.trim();
        let lines: Vec<&str> = s.lines().rev().take(6).collect();
        lines.into_iter().rev().collect::<Vec<_>>().join(" | ")
    }
}

impl Drop for Generation {
    /// The end of the run: the sidecar sees the end of its stdin and exits by itself
    /// (so its resource usage is accounted to gauntlet's process tree), or is killed
    /// after a grace period.
    fn drop(&mut self) {
        drop(self.lines.lock().unwrap().take());
        let p = self.shared.process.lock().unwrap().take();
        if let Some(p) = p {
            p.stop(Duration::from_secs(2));
        }
        self.shared.fail(Ended::RunOver);
    }
}

/// A sidecar: starts its process on first use and again after any failure, until it is
/// refused (a configuration error) or has failed to start [`DEAD_AFTER`] times in a row.
pub struct Sidecar {
    venv: PathBuf,
    limits: Limits,
    current: tokio::sync::Mutex<Starts>,
    generations: AtomicU64,
    next_id: AtomicU64,
    /// Starts so far (the first one included), for tests and reports.
    pub starts: AtomicU64,
}

/// The live generation and what the starts so far decided.
#[derive(Default)]
struct Starts {
    live: Option<Arc<Generation>>,
    /// Starts that failed since the last one that succeeded.
    failed_in_a_row: u32,
    /// Why the sidecar is never started again in this run (a configuration error, or
    /// [`SidecarError::Dead`]).
    refused: Option<SidecarError>,
}

/// A handle on an episode's generation: requests through it fail once that process is
/// gone.
#[derive(Clone)]
pub struct Bound {
    generation: Arc<Generation>,
}

static SHARED: Mutex<Vec<(PathBuf, Weak<Sidecar>)>> = Mutex::new(Vec::new());

impl Sidecar {
    pub fn new(venv: PathBuf, limits: Limits) -> Sidecar {
        Sidecar {
            venv,
            limits,
            current: tokio::sync::Mutex::new(Starts::default()),
            generations: AtomicU64::new(0),
            next_id: AtomicU64::new(1),
            starts: AtomicU64::new(0),
        }
    }

    /// The sidecar of `venv` shared by every plugin of the process that holds it (one
    /// process per run); a new one when none is alive.
    pub fn shared(venv: &Path) -> Arc<Sidecar> {
        let mut all = SHARED.lock().unwrap();
        all.retain(|(_, w)| w.strong_count() > 0);
        if let Some(s) = all
            .iter()
            .find(|(p, _)| p == venv)
            .and_then(|(_, w)| w.upgrade())
        {
            return s;
        }
        let mut limits = Limits::default();
        if let Some(t) = std::env::var(CALL_TIMEOUT_ENV)
            .ok()
            .and_then(|v| v.parse::<u64>().ok())
            .filter(|t| *t > 0)
        {
            limits.call_timeout = Duration::from_secs(t);
        }
        let s = Arc::new(Sidecar::new(venv.to_path_buf(), limits));
        all.push((venv.to_path_buf(), Arc::downgrade(&s)));
        s
    }

    pub fn venv(&self) -> &Path {
        &self.venv
    }

    /// The live generation, started (with its handshake) when there is none. A refused
    /// or dead sidecar answers with its reason at once.
    pub async fn bind(&self) -> Result<Bound, SidecarError> {
        let mut cur = self.current.lock().await;
        if let Some(why) = &cur.refused {
            return Err(why.clone());
        }
        if let Some(g) = cur.live.as_ref()
            && g.shared.dead.lock().unwrap().is_none()
        {
            return Ok(Bound {
                generation: g.clone(),
            });
        }
        cur.live = None;
        match self.start_and_greet().await {
            Ok(b) => {
                cur.failed_in_a_row = 0;
                cur.live = Some(b.generation.clone());
                Ok(b)
            }
            Err(e) if e.is_configuration() => {
                cur.refused = Some(e.clone());
                Err(e)
            }
            Err(e) => {
                cur.failed_in_a_row += 1;
                if cur.failed_in_a_row >= DEAD_AFTER {
                    cur.refused = Some(SidecarError::Dead {
                        failures: cur.failed_in_a_row,
                        last: Box::new(e.clone()),
                    });
                }
                Err(e)
            }
        }
    }

    /// Starts a process and checks its handshake (within the call time limit).
    async fn start_and_greet(&self) -> Result<Bound, SidecarError> {
        let g = Arc::new(self.start()?);
        let b = Bound { generation: g };
        let hello = self
            .send(
                &b,
                serde_json::json!({"op": "hello"}),
                self.limits.call_timeout,
            )
            .await
            .map_err(|e| SidecarError::Handshake(Box::new(e)))?;
        if let Err(source) = check_hello(&hello) {
            b.generation.shared.fail(Ended::Hello(source.clone()));
            return Err(SidecarError::Hello {
                source,
                venv: self.venv.clone(),
            });
        }
        Ok(b)
    }

    /// One request through the live generation (started if needed).
    pub async fn request(&self, req: Value) -> Result<Value, SidecarError> {
        let b = self.bind().await?;
        self.send(&b, req, self.limits.call_timeout).await
    }

    /// One request through an episode's generation.
    pub async fn request_in(&self, b: &Bound, req: Value) -> Result<Value, SidecarError> {
        self.send(b, req, self.limits.call_timeout).await
    }

    async fn send(
        &self,
        b: &Bound,
        mut req: Value,
        timeout: Duration,
    ) -> Result<Value, SidecarError> {
        let g = &b.generation;
        if let Some(why) = g.shared.dead.lock().unwrap().clone() {
            return Err(SidecarError::Gone(why));
        }
        let id = self.next_id.fetch_add(1, Ordering::Relaxed);
        req["id"] = id.into();
        let op = req["op"].as_str().unwrap_or("?").to_string();
        let (tx, rx) = oneshot::channel();
        g.shared.waiters.lock().unwrap().insert(id, tx);
        let mut line = serde_json::to_vec(&req).expect("requests serialise");
        line.push(b'\n');
        let sent = g
            .lines
            .lock()
            .unwrap()
            .as_ref()
            .is_some_and(|l| l.send(line).is_ok());
        if !sent {
            g.shared.fail(Ended::StdinClosed);
        }
        match tokio::time::timeout(timeout, rx).await {
            Ok(Ok(r)) => r,
            Ok(Err(_)) => Err(SidecarError::ReaderEnded),
            Err(_) => {
                let why = Ended::Hung {
                    op,
                    timeout,
                    generation: g.id,
                };
                g.shared.fail(why.clone());
                Err(SidecarError::Ended(why))
            }
        }
    }

    /// Starts a process and its three threads.
    fn start(&self) -> Result<Generation, SidecarError> {
        let python = self.venv.join("bin/python");
        if !python.is_file() {
            return Err(SidecarError::NoVirtualenv {
                venv: self.venv.clone(),
            });
        }
        let id = self.generations.fetch_add(1, Ordering::Relaxed) + 1;
        self.starts.fetch_add(1, Ordering::Relaxed);
        let shared = Arc::new(GenShared {
            waiters: Mutex::new(HashMap::new()),
            dead: Mutex::new(None),
            stderr: Mutex::new(Vec::new()),
            process: Mutex::new(None),
        });
        let (ready_tx, ready_rx) = std::sync::mpsc::channel();
        let (line_tx, line_rx) = std::sync::mpsc::channel::<Vec<u8>>();
        let limits = self.limits;
        let sh = shared.clone();
        std::thread::Builder::new()
            .name(format!("agentdojo-sidecar-{id}"))
            .spawn(move || reader(python, limits, sh, ready_tx, line_rx))
            .map_err(|e| SidecarError::Thread(Arc::new(e)))?;
        ready_rx
            .recv()
            .map_err(|_| SidecarError::ThreadEnded)?
            .map_err(|e| SidecarError::Start(Arc::new(e)))?;
        Ok(Generation {
            id,
            lines: Mutex::new(Some(line_tx)),
            shared,
        })
    }
}

/// Checks the handshake: protocol, package version and every pinned distribution.
fn check_hello(v: &Value) -> Result<Hello, HelloError> {
    if v["protocol"] != PROTOCOL {
        return Err(HelloError::Protocol {
            spoken: v["protocol"].clone(),
        });
    }
    let installed: HashMap<String, &str> = v["distributions"]
        .as_object()
        .map(|o| {
            o.iter()
                .filter_map(|(k, v)| Some((norm(k), v.as_str()?)))
                .collect()
        })
        .unwrap_or_default();
    let mut wrong = Vec::new();
    for (name, want) in pins() {
        match installed.get(&norm(name)) {
            Some(have) if *have == want => {}
            Some(have) => wrong.push(PinMismatch::Differs {
                name,
                have: have.to_string(),
                want,
            }),
            None => wrong.push(PinMismatch::Missing { name, want }),
        }
    }
    if !wrong.is_empty() {
        return Err(HelloError::Pins { wrong });
    }
    let s = |k: &str| v[k].as_str().unwrap_or_default().to_string();
    Ok(Hello {
        agentdojo: s("agentdojo"),
        python: s("python"),
        frozen_time: s("frozen_time"),
    })
}

/// Starts the sidecar process confined ([`gauntlet_sandbox::Process`]: read-only files
/// but its scratch directory, no sockets, an empty network namespace, its tree killed
/// when it is dropped or gauntlet dies). The script is written into a directory of
/// gauntlet's own, which the process can only read.
fn spawn_confined(
    python: &Path,
    limits: Limits,
) -> Result<(Process, tempfile::TempDir), StartError> {
    let dir = tempfile::Builder::new()
        .prefix("gauntlet-agentdojo-script-")
        .tempdir()
        .map_err(StartError::ScriptDir)?;
    let script = dir.path().join("sidecar.py");
    std::fs::write(&script, SCRIPT).map_err(|source| StartError::WriteScript {
        path: script.clone(),
        source,
    })?;
    let mut spec = Spec::new(python)
        .arg("-s")
        .arg("-B")
        .arg(&script)
        .env("PYTHONDONTWRITEBYTECODE", "1")
        // Set and dict orders of strings must not vary between runs.
        .env("PYTHONHASHSEED", "0")
        .env("PYTHONUNBUFFERED", "1");
    spec.memory = Memory::AddressSpace(limits.memory_bytes);
    spec.cpu_secs = Some(limits.cpu_secs);
    spec.allow_unconfined = std::env::var(UNCONFINED_ENV).as_deref() == Ok("1");
    spec.scratch_prefix = "gauntlet-agentdojo-".into();
    let p = Process::spawn(&spec).map_err(|e| match e {
        gauntlet_sandbox::SpawnError::Unconfinable { missing, .. } => {
            StartError::Unconfinable { missing }
        }
        other => StartError::Spawn(other),
    })?;
    Ok((p, dir))
}

/// The reader thread: spawns the process, hands the callers its process group, starts
/// the writer and stderr threads, then dispatches reply lines until the process ends.
fn reader(
    python: PathBuf,
    limits: Limits,
    shared: Arc<GenShared>,
    ready: std::sync::mpsc::Sender<Result<(), StartError>>,
    lines: std::sync::mpsc::Receiver<Vec<u8>>,
) {
    let (mut process, script_dir) = match spawn_confined(&python, limits) {
        Ok(c) => c,
        Err(e) => {
            let _ = ready.send(Err(e));
            return;
        }
    };
    let mut stdin = process.stdin.take().expect("piped stdin");
    let stdout = process.stdout.take().expect("piped stdout");
    let mut stderr = process.stderr.take().expect("piped stderr");
    *shared.process.lock().unwrap() = Some(process);
    let sh = shared.clone();
    let writer = std::thread::spawn(move || {
        for line in lines {
            if stdin.write_all(&line).and_then(|_| stdin.flush()).is_err() {
                sh.fail(Ended::StdinClosed);
                break;
            }
        }
    });
    let sh = shared.clone();
    let err_reader = std::thread::spawn(move || {
        let mut buf = [0u8; 8192];
        while let Ok(n) = stderr.read(&mut buf) {
            if n == 0 {
                break;
            }
            let mut tail = sh.stderr.lock().unwrap();
            tail.extend_from_slice(&buf[..n]);
            if tail.len() > 2 * STDERR_TAIL {
                let cut = tail.len() - STDERR_TAIL;
                tail.drain(..cut);
            }
        }
    });
    let _ = ready.send(Ok(()));
    let mut out = BufReader::with_capacity(1 << 16, stdout);
    let mut line = Vec::new();
    let why = loop {
        line.clear();
        match (&mut out)
            .take(MAX_REPLY_BYTES as u64 + 1)
            .read_until(b'\n', &mut line)
        {
            Ok(0) => break None,
            Ok(_) if line.len() > MAX_REPLY_BYTES => break Some(Ended::LineTooLong),
            Ok(_) => {}
            Err(e) => break Some(Ended::Stdout(Arc::new(e))),
        }
        match parse_reply(&line) {
            Ok((id, r)) => match shared.waiters.lock().unwrap().remove(&id) {
                Some(w) => {
                    let _ = w.send(r);
                }
                None => break Some(Ended::UnknownId { id }),
            },
            Err(e) => break Some(Ended::Malformed(Arc::new(e))),
        }
    };
    if let Some(why) = why {
        shared.fail(why);
    }
    // Its stdout closed: the process ended or is ending. Whatever is left of the tree is
    // killed after a moment (dropping the process).
    let deadline = std::time::Instant::now() + Duration::from_secs(2);
    let mut memory = None;
    loop {
        let mut guard = shared.process.lock().unwrap();
        let done = guard.as_mut().is_none_or(|p| p.try_ended().is_some());
        if done || std::time::Instant::now() >= deadline {
            if let Some(p) = guard.take() {
                memory = p.end(Duration::ZERO).1;
            }
            break;
        }
        drop(guard);
        std::thread::sleep(Duration::from_millis(5));
    }
    let _ = err_reader.join();
    shared.fail(Ended::Exited {
        stderr_tail: shared.stderr_tail(),
        memory,
    });
    drop(writer);
    drop(script_dir);
}

/// One reply line: its id and its result.
fn parse_reply(line: &[u8]) -> Result<(u64, Result<Value, SidecarError>), ReplyError> {
    let v: Value = serde_json::from_slice(line).map_err(|source| ReplyError::Json {
        source,
        shown: String::from_utf8_lossy(&line[..line.len().min(200)]).into_owned(),
    })?;
    let id = v["id"].as_u64().ok_or(ReplyError::NoId)?;
    if let Some(ok) = v.get("ok") {
        return Ok((id, Ok(ok.clone())));
    }
    match v.get("error").and_then(Value::as_str) {
        Some(e) => Ok((
            id,
            Err(SidecarError::Reported {
                message: e.to_string(),
            }),
        )),
        None => Err(ReplyError::Neither { id }),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn replies_parse_and_bad_ones_are_named() {
        let (id, r) = parse_reply(br#"{"id":7,"ok":{"content":"x"}}"#).unwrap();
        assert_eq!((id, r.unwrap()["content"].as_str()), (7, Some("x")));
        let (_, r) = parse_reply(br#"{"id":8,"error":"no such task"}"#).unwrap();
        assert!(
            matches!(&r, Err(SidecarError::Reported { message }) if message == "no such task"),
            "{r:?}"
        );
        let e = |line: &[u8]| parse_reply(line).unwrap_err().to_string();
        assert!(e(b"not json").contains("not json"));
        assert!(e(br#"{"ok":1}"#).contains("id"));
        assert!(e(br#"{"id":1}"#).contains("neither"));
    }

    /// The messages built at Display time read as the strings they replace did.
    #[test]
    fn failures_read_as_they_did() {
        let exited = |t: &str| {
            SidecarError::Ended(Ended::Exited {
                stderr_tail: t.into(),
                memory: None,
            })
            .to_string()
        };
        assert_eq!(
            exited(""),
            "the AgentDojo sidecar exited (its stdout closed)"
        );
        assert_eq!(
            exited("Traceback | boom"),
            "the AgentDojo sidecar exited (its stdout closed): Traceback | boom"
        );
        let hung = Ended::Hung {
            op: "score".into(),
            timeout: Duration::from_secs(60),
            generation: 3,
        };
        assert_eq!(
            SidecarError::Gone(hung).to_string(),
            "the AgentDojo sidecar this episode ran in is gone (no reply to `score` within 60 s: the AgentDojo sidecar hung (generation 3); it was killed and a fresh one serves the next episode)"
        );
        let e = SidecarError::Handshake(Box::new(SidecarError::Ended(Ended::StdinClosed)));
        assert_eq!(
            e.to_string(),
            "the AgentDojo sidecar did not start: its stdin closed (the process is gone)"
        );
    }

    #[test]
    fn pins_cover_the_package_and_check_the_handshake() {
        let p = pins();
        assert!(p.contains(&("agentdojo", AGENTDOJO_VERSION)), "{p:?}");
        assert!(p.len() > 50);
        let mut dists = serde_json::Map::new();
        for (n, v) in &p {
            dists.insert(n.replace('-', "_"), Value::String(v.to_string()));
        }
        let mut hello = serde_json::json!({"protocol": PROTOCOL, "agentdojo": "0.1.35", "distributions": dists});
        assert!(check_hello(&hello).is_ok());
        hello["distributions"]["pydantic"] = "1.0".into();
        let e = check_hello(&hello).unwrap_err().to_string();
        assert!(
            e.contains("pydantic is 1.0") && e.contains("install-agentdojo.sh"),
            "{e}"
        );
        hello["protocol"] = "other/9".into();
        assert!(
            check_hello(&hello)
                .unwrap_err()
                .to_string()
                .contains("other/9")
        );
    }
}
