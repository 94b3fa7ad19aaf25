//! Starting a stdio MCP server confined: the one function every stdio server goes
//! through ([`spawn`]), on the sandbox crate's long-lived confined child
//! ([`gauntlet_sandbox::Process`]), so a server gets exactly the confinement every other
//! third-party program gets.
//!
//! The filesystem is read-only except a private scratch directory (its `$HOME`,
//! `$TMPDIR` and default working directory); no sockets and an empty network namespace
//! unless the user passes `--allow-network`; `RLIMIT_DATA` (node's V8 reserves far more
//! address space than it uses), CPU seconds and a lifetime after which the supervisor
//! kills the whole tree. The environment is cleared down to `PATH`, `LANG`, `HOME`,
//! `TMPDIR` and the entry's own `env`; `${GAUNTLET_SCRATCH}` in its arguments or
//! environment becomes the scratch directory's path (a filesystem server's root).
//! [`Confined::end`] closes stdin, waits a grace period, then has the supervisor kill
//! every descendant (double-forked and `setsid` daemons included).

use gauntlet_sandbox::{Ended, Memory, Process, Spec};
use std::collections::BTreeMap;
use std::io::Read;
use std::os::fd::OwnedFd;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};
use std::time::Duration;
use tokio::net::unix::pipe::{Receiver, Sender};

/// Limits of one confined server.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ConfineLimits {
    /// The server is killed, with every descendant, after this long whatever happens.
    pub lifetime: Duration,
    /// `RLIMIT_CPU`, seconds.
    pub cpu_secs: u64,
    /// `RLIMIT_DATA`, bytes (heap and private writable mappings).
    pub memory_bytes: u64,
    /// `--allow-network`: sockets allowed, the host's network namespace kept.
    pub allow_network: bool,
    /// Run even where the kernel cannot confine fully (every layer it has still applies).
    pub allow_unconfined: bool,
}

impl Default for ConfineLimits {
    fn default() -> Self {
        ConfineLimits {
            lifetime: Duration::from_secs(300),
            cpu_secs: 120,
            memory_bytes: 2 << 30,
            allow_network: false,
            allow_unconfined: false,
        }
    }
}

/// Written in a server's arguments or environment, this becomes the path of its scratch
/// directory (the one place it may write): `["server.js", "${GAUNTLET_SCRATCH}"]`.
pub const SCRATCH_VAR: &str = "${GAUNTLET_SCRATCH}";

/// The last bytes a server wrote to stderr, for error messages.
pub const STDERR_TAIL: usize = 2048;

/// A running confined server.
pub struct Confined {
    process: Arc<Mutex<Option<Process>>>,
    pub stdin: Option<Sender>,
    pub stdout: Option<Receiver>,
    stderr: Arc<Mutex<Vec<u8>>>,
    /// Removed after the process (fields drop in order).
    scratch: tempfile::TempDir,
}

/// Why a server could not be started.
#[derive(Debug, thiserror::Error)]
pub enum SpawnError {
    #[error(
        "cannot be confined on this machine: {0}. Servers are refused rather than run unconfined; pass --allow-unconfined-servers to run them anyway (with every protection this kernel has)"
    )]
    Unconfined(String),
    #[error("{0}")]
    Start(String),
}

/// Finds `command` on `PATH` as the server would (the sandbox runs a path).
fn resolve(command: &str) -> PathBuf {
    if command.contains('/') {
        return PathBuf::from(command);
    }
    let path = std::env::var_os("PATH").unwrap_or_else(|| "/usr/local/bin:/usr/bin:/bin".into());
    std::env::split_paths(&path)
        .map(|d| d.join(command))
        .find(|p| p.is_file())
        .unwrap_or_else(|| PathBuf::from(command))
}

/// Starts `command args…` confined with piped stdin/stdout/stderr.
pub fn spawn(
    command: &str,
    args: &[String],
    env: &BTreeMap<String, String>,
    cwd: Option<&Path>,
    limits: &ConfineLimits,
) -> Result<Confined, SpawnError> {
    // The server's scratch directory is ours (made before the spawn, so
    // `${GAUNTLET_SCRATCH}` can name it), given to the sandbox as its one writable
    // directory and as `$HOME`, `$TMPDIR` and the default working directory.
    let scratch = tempfile::Builder::new()
        .prefix("gauntlet-mcp-")
        .tempdir()
        .map_err(|e| SpawnError::Start(format!("cannot create the scratch directory: {e}")))?;
    let here = scratch.path().to_string_lossy().into_owned();
    let sub = |s: &String| s.replace(SCRATCH_VAR, &here);
    let mut spec = Spec::new(resolve(command));
    for a in args {
        spec = spec.arg(sub(a));
    }
    if let Some(path) = std::env::var_os("PATH") {
        spec = spec.env("PATH", path);
    }
    spec = spec
        .env("HOME", scratch.path())
        .env("TMPDIR", scratch.path());
    for (k, v) in env {
        spec = spec.env(k, sub(v));
    }
    spec.writable.push(scratch.path().to_path_buf());
    spec.cwd = Some(
        cwd.map(Path::to_path_buf)
            .unwrap_or_else(|| scratch.path().to_path_buf()),
    );
    spec.network = limits.allow_network;
    spec.memory = Memory::Data(limits.memory_bytes);
    spec.cpu_secs = Some(limits.cpu_secs);
    spec.lifetime = Some(limits.lifetime);
    spec.allow_unconfined = limits.allow_unconfined;
    spec.scratch_prefix = "gauntlet-mcp-proc-".into();
    let mut p = Process::spawn(&spec).map_err(|e| match e {
        gauntlet_sandbox::SpawnError::Unconfinable { missing, .. } => {
            SpawnError::Unconfined(missing)
        }
        gauntlet_sandbox::SpawnError::Start { source, .. } => {
            SpawnError::Start(format!("could not start `{command}`: {source}"))
        }
        other => SpawnError::Start(other.to_string()),
    })?;
    let pipe_err =
        |e: std::io::Error| SpawnError::Start(format!("cannot use the server's pipes: {e}"));
    let stdin = p
        .stdin
        .take()
        .map(|w| Sender::from_owned_fd(OwnedFd::from(w)))
        .transpose()
        .map_err(pipe_err)?;
    let stdout = p
        .stdout
        .take()
        .map(|r| Receiver::from_owned_fd(OwnedFd::from(r)))
        .transpose()
        .map_err(pipe_err)?;
    let stderr = Arc::new(Mutex::new(Vec::new()));
    if let Some(mut err) = p.stderr.take() {
        let tail = stderr.clone();
        // A plain thread: it ends when the server's stderr closes (the tree is killed).
        std::thread::spawn(move || {
            let mut buf = vec![0u8; 4096];
            while let Ok(n) = err.read(&mut buf) {
                if n == 0 {
                    break;
                }
                let mut t = tail.lock().unwrap();
                t.extend_from_slice(&buf[..n]);
                if t.len() > STDERR_TAIL {
                    let cut = t.len() - STDERR_TAIL;
                    t.drain(..cut);
                }
            }
        });
    }
    Ok(Confined {
        process: Arc::new(Mutex::new(Some(p))),
        stdin,
        stdout,
        stderr,
        scratch,
    })
}

impl Confined {
    /// The server's scratch directory (its `$HOME` and `$TMPDIR`).
    pub fn scratch(&self) -> &Path {
        self.scratch.path()
    }

    pub fn scratch_path(&self) -> PathBuf {
        self.scratch.path().to_path_buf()
    }

    /// What the server last wrote to stderr (lossy UTF-8, trimmed).
    pub fn stderr_tail(&self) -> String {
        String::from_utf8_lossy(&self.stderr.lock().unwrap())
            .trim()
            .to_string()
    }

    /// How the server ended, if it has: `exited with status N`, `killed by signal N`,
    /// `its lifetime ran out`.
    pub fn ended(&self) -> Option<String> {
        let mut g = self.process.lock().unwrap();
        let e = g.as_mut()?.try_ended()?;
        Some(describe(e))
    }

    /// Ends the server: closes its stdin, gives it `grace` to exit, then the supervisor
    /// kills every process descended from it.
    pub async fn end(mut self, grace: Duration) {
        drop(self.stdin.take());
        drop(self.stdout.take());
        let p = self.process.lock().unwrap().take();
        if let Some(p) = p {
            let _ = tokio::task::spawn_blocking(move || p.stop(grace)).await;
        }
    }
}

/// A sandbox end in words.
fn describe(e: Ended) -> String {
    match e {
        Ended::TimedOut => "its lifetime ran out (process tree killed)".into(),
        Ended::Stopped => "was stopped (process tree killed)".into(),
        Ended::Status(raw) => {
            if libc::WIFEXITED(raw) {
                format!("exited with status {}", libc::WEXITSTATUS(raw))
            } else if libc::WIFSIGNALED(raw) {
                let sig = libc::WTERMSIG(raw);
                let hint = match sig {
                    libc::SIGXCPU => " (CPU time limit)",
                    libc::SIGXFSZ => " (file size limit)",
                    libc::SIGSEGV | libc::SIGABRT => " (crashed; out of memory?)",
                    _ => "",
                };
                format!("killed by signal {sig}{hint}")
            } else {
                "ended abnormally".to_string()
            }
        }
    }
}
