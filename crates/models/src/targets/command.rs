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
//! appear when the request has them. The program answers each request with one line on
//! stdout, `{"id": 7, "reply": "…"}` (optionally with `"usage": {"input_tokens": n,
//! "output_tokens": m}`; without it usage is N/A), or `{"id": 7, "error": "…"}` for a
//! call it could not answer (an error outcome). Requests are sent one at a time. A line
//! that is not such a reply, a reply longer than [`MAX_LINE`] bytes, or no reply within
//! `timeout_s` fails the call, kills the program and starts it again for the next call;
//! so does the program exiting. What it writes on stderr is kept (its last 2 KiB) for
//! error messages.
//!
//! # Confinement
//!
//! The program is third-party code: it runs confined as external detectors are
//! ([`gauntlet_sandbox`]): the filesystem read-only but for a private scratch directory
//! (`$HOME`, `$TMPDIR`), no sockets, its process tree killed with it, CPU seconds and
//! address space limited, a clean environment (`PATH`, `LANG`, `HOME`, `TMPDIR` and the
//! variables `env` names). A kernel that cannot confine it makes the target refuse to
//! start, unless `confine: false`: the explicit opt-out, which a program that needs the
//! network (a wrapper around a model server) needs as well. An unconfined program still
//! runs in its own process group with a clean environment, and is killed with the run.
//!
//! The program's path is part of the target's identity (and so of every cache key), its
//! code is not — as an HTTP application's code is not: name a changed application anew
//! (`name`) to keep its results apart.

use crate::{BoxFuture, Model, ModelError};
use gauntlet_core::message::{ChatRequest, ChatResponse, Role, StopReason, Usage};
use gauntlet_core::params::{Axis, DefaultValue, ParamKind, ParamSpec, PluginInfo, PluginSpec};
use gauntlet_sandbox::{Prepared, Support};
use serde_json::{Value, json};
use std::os::fd::{AsRawFd, FromRawFd, OwnedFd};
use std::path::{Path, PathBuf};
use std::process::Stdio;
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::Duration;
use tokio::io::{AsyncBufReadExt, AsyncReadExt, AsyncWriteExt, BufReader};
use tokio::process::{Child, ChildStdin, ChildStdout, Command};
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
        doc: "run the program confined like external detectors (read-only files but a scratch \
              dir, no network, limits); false is the explicit opt-out (e.g. it calls a model server)",
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
        doc: "address space of the (confined) program, MiB (RLIMIT_AS)",
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
    pub confine: bool,
    pub cpu_secs: u64,
    pub memory_bytes: u64,
}

/// A started program: the child, its pipes, and what must live as long as it does.
pub struct Spawned {
    pub child: Child,
    pub stdin: ChildStdin,
    pub stdout: ChildStdout,
    /// The last bytes of its stderr, filled in the background.
    pub stderr_tail: Arc<std::sync::Mutex<Vec<u8>>>,
    /// The private scratch directory (`$HOME`, `$TMPDIR`), removed when dropped.
    _scratch: tempfile::TempDir,
    /// The read end of the sandbox supervisor's report pipe.
    _report: Option<OwnedFd>,
}

/// Starts `spec`'s program with piped stdin and stdout, confined unless `spec.confine`
/// is false. The one place the command target starts processes: when the sandbox crate
/// offers a long-lived confined child with piped stdio, this is what switches to it.
pub fn spawn_program(spec: &ProgramSpec) -> Result<Spawned, String> {
    let scratch = tempfile::Builder::new()
        .prefix("gauntlet-command-")
        .tempdir()
        .map_err(|e| format!("cannot create the scratch directory: {e}"))?;
    let mut cmd = Command::new(&spec.program);
    cmd.args(&spec.args)
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .env_clear()
        .env("PATH", "/usr/local/bin:/usr/bin:/bin")
        .env("LANG", "C.UTF-8")
        .env("HOME", scratch.path())
        .env("TMPDIR", scratch.path())
        .process_group(0)
        .kill_on_drop(true);
    for (k, v) in &spec.env {
        cmd.env(k, v);
    }
    if let Some(dir) = spec.program.parent().filter(|d| !d.as_os_str().is_empty()) {
        cmd.current_dir(dir);
    }
    let mut report = None;
    if spec.confine {
        let (rd, wr) = report_pipe()?;
        // The supervisor's wall clock bounds the program's whole life; calls have their
        // own timeouts. A month is "the run".
        let mut prepared = Prepared::new(
            Support::current(),
            scratch.path(),
            wr.as_raw_fd(),
            Duration::from_secs(30 * 24 * 3600),
            spec.cpu_secs,
            spec.memory_bytes,
        )?;
        // SAFETY: `enter` is written for the window between fork and exec.
        unsafe {
            cmd.pre_exec(move || prepared.enter());
        }
        let child = cmd.spawn();
        drop(wr);
        report = Some(rd);
        return finish_spawn(child, spec, scratch, report);
    }
    let child = cmd.spawn();
    finish_spawn(child, spec, scratch, report.take())
}

fn finish_spawn(
    child: std::io::Result<Child>,
    spec: &ProgramSpec,
    scratch: tempfile::TempDir,
    report: Option<OwnedFd>,
) -> Result<Spawned, String> {
    let mut child = child.map_err(|e| format!("cannot start {}: {e}", spec.program.display()))?;
    let stdin = child.stdin.take().expect("piped stdin");
    let stdout = child.stdout.take().expect("piped stdout");
    let mut stderr = child.stderr.take().expect("piped stderr");
    let tail = Arc::new(std::sync::Mutex::new(Vec::new()));
    let t = tail.clone();
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
    });
    Ok(Spawned {
        child,
        stdin,
        stdout,
        stderr_tail: tail,
        _scratch: scratch,
        _report: report,
    })
}

/// A pipe for the supervisor's report: (read end, non-blocking; write end).
fn report_pipe() -> Result<(OwnedFd, OwnedFd), String> {
    let mut fds = [0; 2];
    // SAFETY: valid out array; both ends are close-on-exec.
    if unsafe { libc::pipe2(fds.as_mut_ptr(), libc::O_CLOEXEC) } != 0 {
        return Err(format!(
            "cannot create a pipe: {}",
            std::io::Error::last_os_error()
        ));
    }
    // SAFETY: fresh descriptors we own.
    let (rd, wr) = unsafe { (OwnedFd::from_raw_fd(fds[0]), OwnedFd::from_raw_fd(fds[1])) };
    // SAFETY: plain fcntl on our descriptor.
    unsafe {
        let fl = libc::fcntl(rd.as_raw_fd(), libc::F_GETFL);
        libc::fcntl(rd.as_raw_fd(), libc::F_SETFL, fl | libc::O_NONBLOCK);
    }
    Ok((rd, wr))
}

/// The running program, when there is one.
struct Running {
    child: Child,
    stdin: ChildStdin,
    stdout: BufReader<ChildStdout>,
    stderr_tail: Arc<std::sync::Mutex<Vec<u8>>>,
    /// The scratch directory and the report pipe: kept as long as the program runs.
    _keep: (tempfile::TempDir, Option<OwnedFd>),
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
}

impl std::fmt::Debug for CommandTarget {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("CommandTarget")
            .field("program", &self.program.program)
            .field("confine", &self.program.confine)
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
                confine,
                cpu_secs: p.int("cpu_s").unwrap_or(3600).max(1) as u64,
                memory_bytes: (p.int("memory_mb").unwrap_or(4096).max(16) as u64) << 20,
            },
            timeout: Duration::from_secs_f64(p.float("timeout_s").unwrap_or(60.0)),
            max_retries: p.int("max_retries").unwrap_or(1).clamp(0, 100) as u32,
            state: Mutex::new(None),
            next_id: AtomicU64::new(1),
            starts: AtomicU64::new(0),
            quick_deaths: AtomicU64::new(0),
        })
    }

    fn request_line(&self, id: u64, req: &ChatRequest) -> Result<Vec<u8>, ModelError> {
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
                child,
                stdin,
                stdout,
                stderr_tail,
                _scratch,
                _report,
            } = spawned;
            *state = Some(Running {
                child,
                stdin,
                stdout: BufReader::with_capacity(64 << 10, stdout),
                stderr_tail,
                _keep: (_scratch, _report),
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
                let tail = Self::tail(r);
                self.stop(state).await;
                let how = if why.starts_with(EXITED) {
                    Broke::Exited
                } else {
                    Broke::Stopped
                };
                return Err((
                    ModelError::Call(with_tail(format!("command target {prog}: {why}"), &tail)),
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

    async fn stop(&self, state: &mut Option<Running>) {
        if let Some(mut r) = state.take() {
            if let Some(pid) = r.child.id() {
                // SAFETY: the child's own process group (process_group(0)).
                unsafe {
                    libc::kill(-(pid as i32), libc::SIGKILL);
                }
            }
            let _ = r.child.kill().await;
            let _ = r.child.wait().await;
        }
    }

    async fn answer(&self, req: &ChatRequest) -> Result<ChatResponse, ModelError> {
        let mut state = self.state.lock().await;
        let mut tries = 0u32;
        loop {
            let id = self.next_id.fetch_add(1, Ordering::Relaxed);
            let line = self.request_line(id, req)?;
            let fresh = state.is_none();
            match self.exchange_once(&mut state, &line, id).await {
                Ok(r) => return Ok(r),
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

fn with_tail(msg: String, tail: &str) -> String {
    if tail.is_empty() {
        msg
    } else {
        format!("{msg}; stderr: {tail}")
    }
}

/// Reads one reply line: `Ok(Ok(response))`, `Ok(Err(program's error))`, or `Err(why the
/// line breaks the protocol)`.
pub fn parse_reply(line: &[u8], id: u64) -> Result<Result<ChatResponse, String>, String> {
    let text = std::str::from_utf8(line).map_err(|_| "a reply line is not UTF-8".to_string())?;
    let v: Value = serde_json::from_str(text.trim()).map_err(|e| {
        format!(
            "a reply line is not JSON ({e}): {}",
            crate::transport::excerpt(line)
        )
    })?;
    let Some(o) = v.as_object() else {
        return Err(format!(
            "a reply line is not a JSON object: {}",
            crate::transport::excerpt(line)
        ));
    };
    match o.get("id").and_then(Value::as_u64) {
        Some(got) if got == id => {}
        Some(got) => return Err(format!("the reply has id {got}, the request had {id}")),
        None => return Err("the reply has no numeric `id`".into()),
    }
    if let Some(e) = o.get("error").filter(|e| !e.is_null()) {
        return Ok(Err(match e {
            Value::String(s) => s.clone(),
            other => other.to_string(),
        }));
    }
    let reply = match o.get("reply") {
        Some(Value::String(s)) => s.clone(),
        Some(other) => {
            return Err(format!(
                "`reply` must be a string, found {}",
                crate::transport::excerpt(other.to_string().as_bytes())
            ));
        }
        None => return Err("the reply has neither `reply` nor `error`".into()),
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
                _ => {
                    return Err(
                        "`usage` must be {\"input_tokens\": n, \"output_tokens\": m}".into(),
                    );
                }
            }
        }
    };
    Ok(Ok(ChatResponse {
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
            Err("model down".to_string())
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
            let e = parse_reply(bad, 3).unwrap_err();
            assert!(e.contains(why), "{e}");
        }
    }
}
