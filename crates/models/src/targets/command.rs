//! `command`: an application that is a local program — a library behind a script, a
//! pipeline, an agent run from the command line — spoken to over stdin/stdout in JSON
//! lines.
//!
//! # Protocol `gauntlet-command/1`
//!
//! The program is started once per run (the first call starts it) and reads one request
//! per line on stdin:
//!
//! ```json
//! {"protocol": "gauntlet-command/1", "id": 7, "prompt": "…", "system": "…",
//!  "messages": [{"role": "user", "content": "…"}, …], "seed": 1, "max_tokens": 64}
//! ```
//!
//! `messages` is the whole conversation (system turn included, when there is one), so a
//! multi-turn attack needs no state in the program; `prompt` is its last user turn,
//! `system` the system prompt (empty without one); `seed`, `temperature` and `max_tokens`
//! appear when the request has them, and `traceparent` (a W3C trace context,
//! `00-<trace id>-<parent span id>-01`) when the target gathers evidence. The program answers each request with one line on
//! stdout, `{"id": 7, "reply": "…"}` (optionally with `"usage": {"input_tokens": n,
//! "output_tokens": m}`; without it usage is N/A), or `{"id": 7, "error": "…"}` for a
//! call it could not answer (an error outcome). Requests are sent one at a time. A line
//! that is not such a reply, a reply longer than [`MAX_LINE`] bytes, or no reply within
//! `timeout_s` fails the call, kills the program and starts it again for the next call;
//! so does the program exiting. What it writes on stderr is kept (its last 2 KiB) for
//! error messages. At a stop ([`crate::stop`]) no request is sent and a call waiting for
//! the program's previous one ends; at its second level the request in flight is given
//! up and the program stopped.
//!
//! # Evidence
//!
//! With the `evidence` param the run's OTLP/HTTP receiver starts
//! ([`crate::evidence`]) and the program gets its address in
//! `OTEL_EXPORTER_OTLP_ENDPOINT` (`http://127.0.0.1:4318`) and
//! `OTEL_EXPORTER_OTLP_TRACES_ENDPOINT` (the same with `/v1/traces`), which the official
//! SDKs' exporters read. Each request line carries the try's `traceparent`; a program
//! that continues it (its SDK's W3C propagator over `{"traceparent": …}`) makes its spans
//! the call's evidence. The program is started once per run, so the trace travels in the
//! request, not in its environment. The receiver is reached over a socket, so `evidence`
//! needs `network: true`. After the reply the target waits `settle_s` for late spans
//! without holding the program: the next request goes out meanwhile.
//!
//! # Confinement
//!
//! The program is third-party code: it runs confined by the sandbox crate's long-lived
//! [`Process`] as external detectors are: the filesystem read-only but for a private
//! scratch directory (`$HOME`, `$TMPDIR`), no sockets and an empty network namespace,
//! its process tree killed with it (and with gauntlet), CPU seconds and address space
//! limited, a clean environment (`PATH`, `LANG`, `HOME`, `TMPDIR`, the variables
//! `env` names and, with `evidence`, the OTLP endpoint). `writable` names directories it
//! may write besides its scratch directory (an application's log, its outbox). `network: true` allows sockets (a wrapper around a model server needs
//! them) and keeps the rest. A kernel that cannot confine it fully makes the target
//! refuse to start, unless `confine: false`: the explicit opt-out, which runs it with the
//! layers the kernel has.
//!
//! The program's path is part of the target's identity (and so of every cache key), its
//! code is not — as an HTTP application's code is not: name a changed application anew
//! (`name`) to keep its results apart.

use crate::{BoxFuture, Model, ModelError};
use gauntlet_core::message::{ChatRequest, ChatResponse, Role, StopReason, Usage};
use gauntlet_core::params::{Axis, DefaultValue, ParamKind, ParamSpec, PluginInfo, PluginSpec};
use gauntlet_sandbox::{Memory, Process, Spec as SandboxSpec, Support};
use serde_json::{Value, json};
use std::os::fd::OwnedFd;
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::Duration;
use tokio::io::{AsyncBufReadExt, AsyncReadExt, AsyncWriteExt, BufReader};
use tokio::sync::Mutex;

pub const PROTOCOL: &str = "gauntlet-command/1";
/// The longest reply line accepted, in bytes.
pub const MAX_LINE: usize = 16 << 20;
const STDERR_TAIL: usize = 2048;
/// Consecutive starts after which a program that dies at once is a configuration error.
const MAX_QUICK_DEATHS: u32 = 3;

const PARAMS: &[ParamSpec] = &[
    ParamSpec {
        name: "name",
        kind: ParamKind::Str,
        default: DefaultValue::Str("command"),
        doc: "label shown in reports and on the leaderboard",
    },
    ParamSpec {
        name: "command",
        kind: ParamKind::StrList,
        default: DefaultValue::Required,
        doc: "the program and its arguments ([path, arg, …]); a path with no `/` is looked up \
              on PATH, a relative one in the directory gauntlet runs in",
    },
    ParamSpec {
        name: "env",
        kind: ParamKind::StrList,
        default: DefaultValue::Absent,
        doc: "NAMES of environment variables passed to the program (the rest of the \
              environment is not)",
    },
    ParamSpec {
        name: "confine",
        kind: ParamKind::Bool,
        default: DefaultValue::Bool(true),
        doc: "refuse to run the program where the kernel cannot confine it fully; false is the \
              explicit opt-out (it then runs with the layers the kernel has)",
    },
    ParamSpec {
        name: "network",
        kind: ParamKind::Bool,
        default: DefaultValue::Bool(false),
        doc: "allow the program sockets (e.g. it calls a model server); the rest of the \
              confinement stays",
    },
    ParamSpec {
        name: "writable",
        kind: ParamKind::StrList,
        default: DefaultValue::Absent,
        doc: "directories the (confined) program may write besides its private scratch \
              directory, e.g. where it keeps its log; each must exist",
    },
    ParamSpec {
        name: "evidence",
        kind: ParamKind::Json,
        default: DefaultValue::Absent,
        doc: crate::evidence::DOC_COMMAND,
    },
    ParamSpec {
        name: "timeout_s",
        kind: ParamKind::Float {
            min: 0.05,
            max: 3600.0,
        },
        default: DefaultValue::Float(60.0),
        doc: "seconds the program has to answer one request; then it is killed and restarted",
    },
    ParamSpec {
        name: "max_retries",
        kind: ParamKind::Int { min: 0, max: 20 },
        default: DefaultValue::Int(1),
        doc: "times a request is sent again (to a restarted program) after the program died, \
              timed out or broke the protocol",
    },
    ParamSpec {
        name: "cpu_s",
        kind: ParamKind::Int {
            min: 1,
            max: 604_800,
        },
        default: DefaultValue::Int(3600),
        doc: "CPU seconds the (confined) program may use over its life (RLIMIT_CPU)",
    },
    ParamSpec {
        name: "memory_mb",
        kind: ParamKind::Int {
            min: 16,
            max: 1_048_576,
        },
        default: DefaultValue::Int(4096),
        doc: "memory of the (confined) program, MiB: each process's address space (RLIMIT_AS) and the whole process tree's memory (a cgroup where the machine allows one, else accounting; the sandbox says which)",
    },
];

pub const INFO: PluginInfo = PluginInfo {
    axis: Axis::Target,
    name: "command",
    doc: "an application that is a local program: JSON lines over stdin/stdout, one confined process per run, restarted if it dies",
    params: PARAMS,
};

/// How to start the program.
#[derive(Debug, Clone)]
pub struct ProgramSpec {
    pub program: PathBuf,
    pub args: Vec<String>,
    /// (name, value) passed through.
    pub env: Vec<(String, String)>,
    /// `confine: false`: run even where the kernel cannot confine it fully.
    pub allow_unconfined: bool,
    /// `network: true`: sockets allowed (the rest of the confinement stays).
    pub network: bool,
    /// Directories it may write besides its scratch directory.
    pub writable: Vec<PathBuf>,
    pub cpu_secs: u64,
    pub memory_bytes: u64,
}

/// A started program: its async pipes and the confined process behind them.
pub struct Spawned {
    pub stdin: tokio::net::unix::pipe::Sender,
    pub stdout: tokio::net::unix::pipe::Receiver,
    /// The last bytes of its stderr, filled in the background.
    pub stderr_tail: Arc<std::sync::Mutex<Vec<u8>>>,
    /// Set when its stderr reached its end.
    pub stderr_done: Arc<std::sync::atomic::AtomicBool>,
    /// The confined process (stopped, its whole tree killed, when dropped).
    pub process: Process,
}

/// Why the program could not be started.
#[derive(Debug, thiserror::Error)]
pub enum StartError {
    /// The sandbox could not start it.
    #[error(transparent)]
    Spawn(#[from] gauntlet_sandbox::SpawnError),
    /// Its stdio pipes could not be registered with the async runtime.
    #[error("cannot use the program's pipes: {0}")]
    Pipes(#[source] std::io::Error),
}

/// Starts `spec`'s program with piped stdin and stdout, confined by the sandbox crate's
/// long-lived [`Process`]. The one place the command target starts processes.
pub fn spawn_program(spec: &ProgramSpec) -> Result<Spawned, StartError> {
    let mut s = SandboxSpec::new(&spec.program);
    s.args = spec.args.iter().map(Into::into).collect();
    s.env = spec.env.iter().map(|(k, v)| (k.into(), v.into())).collect();
    s.cwd = spec
        .program
        .parent()
        .filter(|d| !d.as_os_str().is_empty())
        .map(Path::to_path_buf);
    s.network = spec.network;
    s.writable = spec.writable.clone();
    s.memory = Memory::AddressSpace(spec.memory_bytes);
    s.cpu_secs = Some(spec.cpu_secs);
    s.allow_unconfined = spec.allow_unconfined;
    s.scratch_prefix = "gauntlet-command-".into();
    let mut process = Process::spawn(&s)?;
    let pipe_err = StartError::Pipes;
    let stdin = tokio::net::unix::pipe::Sender::from_owned_fd(OwnedFd::from(
        process.stdin.take().expect("piped stdin"),
    ))
    .map_err(pipe_err)?;
    let stdout = tokio::net::unix::pipe::Receiver::from_owned_fd(OwnedFd::from(
        process.stdout.take().expect("piped stdout"),
    ))
    .map_err(pipe_err)?;
    let mut stderr = tokio::net::unix::pipe::Receiver::from_owned_fd(OwnedFd::from(
        process.stderr.take().expect("piped stderr"),
    ))
    .map_err(pipe_err)?;
    let tail = Arc::new(std::sync::Mutex::new(Vec::new()));
    let t = tail.clone();
    let done = Arc::new(std::sync::atomic::AtomicBool::new(false));
    let d = done.clone();
    tokio::spawn(async move {
        let mut buf = [0u8; 4096];
        loop {
            match stderr.read(&mut buf).await {
                Ok(0) | Err(_) => break,
                Ok(n) => {
                    let mut v = t.lock().unwrap_or_else(|p| p.into_inner());
                    v.extend_from_slice(&buf[..n]);
                    if v.len() > STDERR_TAIL * 2 {
                        let cut = v.len() - STDERR_TAIL;
                        v.drain(..cut);
                    }
                }
            }
        }
        d.store(true, Ordering::Release);
    });
    Ok(Spawned {
        stdin,
        stdout,
        stderr_tail: tail,
        stderr_done: done,
        process,
    })
}

/// The running program, when there is one.
struct Running {
    process: Process,
    stdin: tokio::net::unix::pipe::Sender,
    stdout: BufReader<tokio::net::unix::pipe::Receiver>,
    stderr_tail: Arc<std::sync::Mutex<Vec<u8>>>,
    stderr_done: Arc<std::sync::atomic::AtomicBool>,
}

pub struct CommandTarget {
    spec: PluginSpec,
    program: ProgramSpec,
    timeout: Duration,
    max_retries: u32,
    state: Mutex<Option<Running>>,
    next_id: AtomicU64,
    /// Processes started (the first one included).
    pub starts: AtomicU64,
    quick_deaths: AtomicU64,
    /// The evidence servers of the `evidence` param.
    evidence: Option<crate::evidence::EvidenceSetup>,
}

impl std::fmt::Debug for CommandTarget {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("CommandTarget")
            .field("program", &self.program.program)
            .field("network", &self.program.network)
            .finish_non_exhaustive()
    }
}

/// Finds a program name on PATH (as `execvp` would), or keeps a path as given.
fn resolve_program(p: &str) -> Result<PathBuf, ModelError> {
    let cfg = |m: String| ModelError::Config(format!("command target: {m}"));
    let exec_ok = |path: &Path| {
        use std::os::unix::fs::PermissionsExt;
        std::fs::metadata(path)
            .map(|m| m.is_file() && m.permissions().mode() & 0o111 != 0)
            .unwrap_or(false)
    };
    if p.contains('/') {
        let path = PathBuf::from(p);
        if !exec_ok(&path) {
            return Err(cfg(format!(
                "`command[0]` {p} is not an executable file (a relative path is taken from the directory gauntlet runs in)"
            )));
        }
        return path
            .canonicalize()
            .map_err(|e| cfg(format!("`command[0]` {p}: {e}")));
    }
    let path = std::env::var_os("PATH").unwrap_or_default();
    for dir in std::env::split_paths(&path) {
        let c = dir.join(p);
        if exec_ok(&c) {
            return Ok(c);
        }
    }
    Err(cfg(format!("`command[0]` {p} is not found on PATH")))
}

impl CommandTarget {
    pub fn new(spec: &PluginSpec) -> Result<Self, ModelError> {
        Self::with_env(spec, &super::process_env)
    }

    pub fn with_env(spec: &PluginSpec, env: super::EnvLookup<'_>) -> Result<Self, ModelError> {
        let p = &spec.params;
        let argv = p.str_list("command").unwrap_or(&[]);
        let Some((first, args)) = argv.split_first() else {
            return Err(ModelError::Config(
                "command target: `command` must name the program: [path, arg, …]".into(),
            ));
        };
        let program = resolve_program(first)?;
        let mut pass = Vec::new();
        for name in p.str_list("env").unwrap_or(&[]) {
            crate::transport::check_env_name(name)?;
            let v = env(name).ok_or_else(|| {
                ModelError::Config(format!(
                    "environment variable {name} (listed in the command target's `env`) is not set"
                ))
            })?;
            pass.push((name.clone(), v));
        }
        let network = p.bool("network").unwrap_or(false);
        let evidence = crate::evidence::EvidenceSetup::from_param(
            "command",
            p.json("evidence"),
            &spec.key_identity(),
        )?;
        if let Some(ev) = &evidence {
            if !network {
                return Err(ModelError::Config(
                    "command target: `evidence` needs `network: true`: the program reaches the run's evidence servers (the OTLP receiver, the sink, the content server) over a socket".to_string(),
                ));
            }
            if let Some((k, _)) = pass
                .iter()
                .find(|(k, _)| k.starts_with("OTEL_EXPORTER_OTLP_"))
            {
                return Err(ModelError::Config(format!(
                    "command target: `env` passes {k}, which `evidence` sets to the run's receiver; leave it out of `env`"
                )));
            }
            // With `otlp: false` there is no receiver, and the program gets no endpoint.
            if let Some(endpoint) = ev.endpoint() {
                pass.push((
                    "OTEL_EXPORTER_OTLP_TRACES_ENDPOINT".into(),
                    format!("{endpoint}/v1/traces"),
                ));
                pass.push(("OTEL_EXPORTER_OTLP_ENDPOINT".into(), endpoint));
            }
        }
        let mut writable = Vec::new();
        for d in p.str_list("writable").unwrap_or(&[]) {
            let path = PathBuf::from(d);
            if !path.is_dir() {
                return Err(ModelError::Config(format!(
                    "command target: `writable` entry {d} is not a directory (create it first; a relative path is taken from the directory gauntlet runs in)"
                )));
            }
            writable.push(path.canonicalize().map_err(|e| {
                ModelError::Config(format!("command target: `writable` entry {d}: {e}"))
            })?);
        }
        let confine = p.bool("confine").unwrap_or(true);
        if confine {
            let s = Support::current();
            if !s.confines() {
                return Err(ModelError::Config(format!(
                    "command target: {} cannot be confined on this machine: {}. Programs are refused rather than run unconfined; set `confine: false` on the target to run it anyway",
                    program.display(),
                    s.missing().join("; ")
                )));
            }
        }
        Ok(CommandTarget {
            spec: spec.clone(),
            program: ProgramSpec {
                program,
                args: args.to_vec(),
                env: pass,
                allow_unconfined: !confine,
                network,
                writable,
                cpu_secs: p.int("cpu_s").unwrap_or(3600).max(1) as u64,
                memory_bytes: (p.int("memory_mb").unwrap_or(4096).max(16) as u64) << 20,
            },
            timeout: Duration::from_secs_f64(p.float("timeout_s").unwrap_or(60.0)),
            max_retries: p.int("max_retries").unwrap_or(1).clamp(0, 100) as u32,
            state: Mutex::new(None),
            next_id: AtomicU64::new(1),
            starts: AtomicU64::new(0),
            quick_deaths: AtomicU64::new(0),
            evidence,
        })
    }

    fn request_line(
        &self,
        id: u64,
        req: &ChatRequest,
        traceparent: Option<&str>,
    ) -> Result<Vec<u8>, ModelError> {
        if !req.tools.is_empty() {
            return Err(ModelError::Config(
                "command target: the protocol carries text turns only; it cannot offer tools (injection scenarios need a target with native tool calls)"
                    .into(),
            ));
        }
        let role = |r: Role| match r {
            Role::System => "system",
            Role::User => "user",
            Role::Assistant => "assistant",
            Role::Tool => "tool",
        };
        let prompt = req
            .messages
            .iter()
            .rev()
            .find(|m| m.role == Role::User)
            .map(|m| m.content.as_str())
            .unwrap_or("");
        let system: Vec<&str> = req
            .messages
            .iter()
            .filter(|m| m.role == Role::System)
            .map(|m| m.content.as_str())
            .collect();
        let mut v = json!({
            "protocol": PROTOCOL,
            "id": id,
            "prompt": prompt,
            "system": system.join("\n\n"),
            "messages": req.messages.iter().map(|m| json!({"role": role(m.role), "content": m.content})).collect::<Vec<_>>(),
        });
        let o = v.as_object_mut().expect("object");
        if let Some(s) = req.seed {
            o.insert("seed".into(), json!(s));
        }
        if let Some(t) = req.temperature {
            o.insert("temperature".into(), json!(t));
        }
        if let Some(n) = req.max_tokens {
            o.insert("max_tokens".into(), json!(n));
        }
        if let Some(tp) = traceparent {
            o.insert("traceparent".into(), json!(tp));
        }
        let mut line = serde_json::to_vec(&v).expect("JSON serialises");
        line.push(b'\n');
        Ok(line)
    }

    fn tail(r: &Running) -> String {
        let t = r.stderr_tail.lock().unwrap_or_else(|p| p.into_inner());
        let s = String::from_utf8_lossy(&t);
        let s = s.trim();
        let start = s.len().saturating_sub(STDERR_TAIL);
        let start = (start..=s.len())
            .find(|i| s.is_char_boundary(*i))
            .unwrap_or(s.len());
        s[start..].replace('\n', " | ")
    }

    /// One exchange with the running program (starting it first if needed).
    async fn exchange_once(
        &self,
        state: &mut Option<Running>,
        line: &[u8],
        id: u64,
    ) -> Result<ChatResponse, (ModelError, Broke)> {
        if state.is_none() {
            let spawned = spawn_program(&self.program).map_err(|e| {
                (
                    ModelError::Config(format!("command target: {e}")),
                    Broke::No,
                )
            })?;
            self.starts.fetch_add(1, Ordering::Relaxed);
            let Spawned {
                stdin,
                stdout,
                stderr_tail,
                stderr_done,
                process,
            } = spawned;
            *state = Some(Running {
                process,
                stdin,
                stdout: BufReader::with_capacity(64 << 10, stdout),
                stderr_tail,
                stderr_done,
            });
        }
        let r = state.as_mut().expect("running");
        let prog = self.program.program.display().to_string();
        let io = async {
            r.stdin
                .write_all(line)
                .await
                .map_err(|e| format!("{EXITED}: writing the request failed ({e})"))?;
            r.stdin
                .flush()
                .await
                .map_err(|e| format!("writing the request failed ({e})"))?;
            let mut buf = Vec::new();
            let n = (&mut r.stdout)
                .take(MAX_LINE as u64 + 1)
                .read_until(b'\n', &mut buf)
                .await
                .map_err(|e| format!("reading the reply failed: {e}"))?;
            if n == 0 {
                return Err(EXITED.to_string());
            }
            if buf.len() > MAX_LINE || !buf.ends_with(b"\n") && buf.len() >= MAX_LINE {
                return Err(format!("a reply line is longer than {MAX_LINE} bytes"));
            }
            Ok(buf)
        };
        let got = match tokio::time::timeout(self.timeout, io).await {
            Ok(Ok(b)) => b,
            Ok(Err(why)) => {
                // A program that exited may still have its last words in the stderr pipe.
                for _ in 0..50 {
                    if r.stderr_done.load(Ordering::Acquire) {
                        break;
                    }
                    tokio::time::sleep(Duration::from_millis(10)).await;
                }
                let tail = Self::tail(r);
                let memory = self.stop(state).await;
                let how = if why.starts_with(EXITED) {
                    Broke::Exited
                } else {
                    Broke::Stopped
                };
                return Err((
                    ModelError::Call(with_tail(
                        with_memory(format!("command target {prog}: {why}"), memory),
                        &tail,
                    )),
                    how,
                ));
            }
            Err(_) => {
                let tail = Self::tail(r);
                self.stop(state).await;
                return Err((
                    ModelError::Call(with_tail(
                        format!(
                            "command target {prog}: no reply within {:.1} s (program killed; it is restarted for the next call)",
                            self.timeout.as_secs_f64()
                        ),
                        &tail,
                    )),
                    Broke::Stopped,
                ));
            }
        };
        match parse_reply(&got, id) {
            Ok(Ok(resp)) => {
                self.quick_deaths.store(0, Ordering::Relaxed);
                Ok(resp)
            }
            // The program answered: its own error, an error outcome, no restart.
            Ok(Err(msg)) => {
                self.quick_deaths.store(0, Ordering::Relaxed);
                Err((
                    ModelError::Call(format!("command target {prog} answered an error: {msg}")),
                    Broke::No,
                ))
            }
            Err(why) => {
                let tail = Self::tail(r);
                self.stop(state).await;
                Err((
                    ModelError::Call(with_tail(
                        format!(
                            "command target {prog}: {why} (protocol {PROTOCOL}; program restarted)"
                        ),
                        &tail,
                    )),
                    Broke::Stopped,
                ))
            }
        }
    }

    /// Stops the program; how its process tree went over its memory bound, if it did.
    async fn stop(&self, state: &mut Option<Running>) -> Option<String> {
        let Running { process, .. } = state.take()?;
        // The supervisor kills the whole tree; waiting for it blocks briefly.
        tokio::task::spawn_blocking(move || process.end(Duration::ZERO).1)
            .await
            .ok()
            .flatten()
    }

    async fn answer(&self, req: &ChatRequest) -> Result<ChatResponse, ModelError> {
        use crate::stop::{Level, Stop, given_up, not_sent};
        let stop = Stop::global();
        // Requests go one at a time: a call waiting for the program's previous one ends
        // at a stop, unsent.
        let mut state = tokio::select! {
            g = self.state.lock() => g,
            () = stop.reached(Level::Stopping) => {
                return Err(not_sent("waiting for the program to answer another call"));
            }
        };
        let mut tries = 0u32;
        loop {
            if stop.stopping() {
                return Err(not_sent(if tries == 0 { "" } else { "retrying" }));
            }
            let id = self.next_id.fetch_add(1, Ordering::Relaxed);
            // Each try its own parent span: spans a killed earlier try exports late are
            // not this one's evidence.
            let open = self
                .evidence
                .as_ref()
                .map(|ev| ev.open(crate::evidence::call_identity(req)));
            let tp = open.as_ref().map(crate::evidence::OpenTrace::traceparent);
            let expanded = match &open {
                Some(o) => o.expand_request(req)?,
                None => None,
            };
            let line = self.request_line(id, expanded.as_ref().unwrap_or(req), tp.as_deref())?;
            let fresh = state.is_none();
            let exchanged = tokio::select! {
                r = self.exchange_once(&mut state, &line, id) => Some(r),
                () = stop.reached(Level::Cancelling) => None,
            };
            let Some(exchanged) = exchanged else {
                // Given up mid-exchange: the program may still answer it, so it is
                // stopped rather than left with a reply no one reads.
                self.stop(&mut state).await;
                return Err(given_up());
            };
            match exchanged {
                Ok(r) => {
                    // The program is free for the next request while this one settles.
                    drop(state);
                    return Ok(match open {
                        Some(o) => o.attach(r).await,
                        None => r,
                    });
                }
                Err((e, Broke::No)) => return Err(e),
                Err((e, how)) => {
                    if fresh && how == Broke::Exited {
                        let n = self.quick_deaths.fetch_add(1, Ordering::Relaxed) + 1;
                        if n >= u64::from(MAX_QUICK_DEATHS) {
                            return Err(ModelError::Config(format!(
                                "{e}; the program failed {n} times in a row right after starting, so the run stops"
                            )));
                        }
                    }
                    if tries >= self.max_retries {
                        return Err(e);
                    }
                    tries += 1;
                }
            }
        }
    }
}

/// How an exchange failed.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Broke {
    /// The program answered (its own error) or could not be started: nothing to restart.
    No,
    /// It exited (closed its pipes): restarted; counted when it was fresh.
    Exited,
    /// It timed out or broke the protocol, and was stopped: restarted.
    Stopped,
}

const EXITED: &str = "the program closed its stdout (it exited?)";

fn with_memory(msg: String, memory: Option<String>) -> String {
    match memory {
        Some(m) => format!("{msg} ({m})"),
        None => msg,
    }
}

fn with_tail(msg: String, tail: &str) -> String {
    if tail.is_empty() {
        msg
    } else {
        format!("{msg}; stderr: {tail}")
    }
}

/// The error a program answered (its reply's `error`, as text): the program's own
/// words, not gauntlet's.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{message}")]
pub struct ProgramError {
    pub message: String,
}

/// Why a reply line breaks the protocol. `starts` is the line's (or value's) first
/// bytes, made printable.
#[derive(Debug, thiserror::Error)]
pub enum ReplyError {
    #[error("a reply line is not UTF-8")]
    NotUtf8,
    #[error("a reply line is not JSON ({cause}): {starts}")]
    NotJson {
        #[source]
        cause: serde_json::Error,
        starts: String,
    },
    #[error("a reply line is not a JSON object: {starts}")]
    NotAnObject { starts: String },
    #[error("the reply has id {got}, the request had {want}")]
    WrongId { got: u64, want: u64 },
    #[error("the reply has no numeric `id`")]
    NoId,
    #[error("`reply` must be a string, found {starts}")]
    ReplyNotAString { starts: String },
    #[error("the reply has neither `reply` nor `error`")]
    Neither,
    #[error("`usage` must be {{\"input_tokens\": n, \"output_tokens\": m}}")]
    Usage,
}

/// Reads one reply line: `Ok(Ok(response))`, `Ok(Err(program's error))`, or `Err(why the
/// line breaks the protocol)`.
pub fn parse_reply(line: &[u8], id: u64) -> Result<Result<ChatResponse, ProgramError>, ReplyError> {
    let text = std::str::from_utf8(line).map_err(|_| ReplyError::NotUtf8)?;
    let v: Value = serde_json::from_str(text.trim()).map_err(|cause| ReplyError::NotJson {
        cause,
        starts: crate::transport::excerpt(line),
    })?;
    let Some(o) = v.as_object() else {
        return Err(ReplyError::NotAnObject {
            starts: crate::transport::excerpt(line),
        });
    };
    match o.get("id").and_then(Value::as_u64) {
        Some(got) if got == id => {}
        Some(got) => return Err(ReplyError::WrongId { got, want: id }),
        None => return Err(ReplyError::NoId),
    }
    if let Some(e) = o.get("error").filter(|e| !e.is_null()) {
        return Ok(Err(ProgramError {
            message: match e {
                Value::String(s) => s.clone(),
                other => other.to_string(),
            },
        }));
    }
    let reply = match o.get("reply") {
        Some(Value::String(s)) => s.clone(),
        Some(other) => {
            return Err(ReplyError::ReplyNotAString {
                starts: crate::transport::excerpt(other.to_string().as_bytes()),
            });
        }
        None => return Err(ReplyError::Neither),
    };
    let usage = match o.get("usage") {
        None | Some(Value::Null) => None,
        Some(u) => {
            let get = |k: &str| u.get(k).and_then(Value::as_u64);
            match (get("input_tokens"), get("output_tokens")) {
                (Some(i), Some(o)) => Some(Usage {
                    input_tokens: i,
                    output_tokens: o,
                }),
                _ => return Err(ReplyError::Usage),
            }
        }
    };
    Ok(Ok(ChatResponse {
        first_token_logprobs: None,
        evidence: None,
        content: reply,
        stop_reason: StopReason::Stop,
        tool_calls: Vec::new(),
        usage,
    }))
}

impl Model for CommandTarget {
    fn spec(&self) -> &PluginSpec {
        &self.spec
    }
    fn offline(&self) -> bool {
        false
    }
    fn chat<'a>(&'a self, req: &'a ChatRequest) -> BoxFuture<'a, Result<ChatResponse, ModelError>> {
        Box::pin(self.answer(req))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn reply_lines() {
        let ok = parse_reply(
            br#"{"id": 3, "reply": "hi", "usage": {"input_tokens": 2, "output_tokens": 1}}"#,
            3,
        )
        .unwrap()
        .unwrap();
        assert_eq!(ok.content, "hi");
        assert_eq!(ok.usage.unwrap().output_tokens, 1);
        assert_eq!(
            parse_reply(br#"{"id": 3, "error": "model down"}"#, 3).unwrap(),
            Err(ProgramError {
                message: "model down".to_string()
            })
        );
        for (bad, why) in [
            (&b"not json"[..], "not JSON"),
            (br#"{"id": 4, "reply": "x"}"#, "id 4"),
            (br#"{"reply": "x"}"#, "numeric `id`"),
            (br#"{"id": 3}"#, "neither"),
            (br#"{"id": 3, "reply": 5}"#, "must be a string"),
            (br#"[1]"#, "not a JSON object"),
            (br#"{"id": 3, "reply": "x", "usage": {"in": 1}}"#, "usage"),
        ] {
            let e = parse_reply(bad, 3).unwrap_err().to_string();
            assert!(e.contains(why), "{e}");
        }
    }
}
