//! Starting a stdio MCP server confined: the one function every stdio server goes
//! through ([`spawn`]), so moving to the sandbox crate's long-lived confined-child API
//! is a change here only.
//!
//! The server runs under [`gauntlet_sandbox`]'s layers, as external detectors do: the
//! filesystem read-only except a private scratch directory (its `$HOME`, `$TMPDIR` and
//! default working directory), no sockets and an empty network namespace unless the user
//! passes `--allow-network`, resource limits (address space, CPU seconds, file size),
//! and a supervisor that kills the whole process tree when its lifetime is up. Its
//! environment is cleared down to `PATH`, `LANG`, `HOME`, `TMPDIR` and the entry's own
//! `env`; `${GAUNTLET_SCRATCH}` in its arguments or environment becomes the scratch
//! directory's path (a filesystem server's root). [`Confined::end`] freezes and kills every descendant (double-forked and
//! `setsid` daemons included), then reaps the supervisor.

use gauntlet_sandbox::{Prepared, Support};
use std::collections::BTreeMap;
use std::os::fd::{AsRawFd, FromRawFd, OwnedFd};
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};
use std::time::Duration;
use tokio::io::AsyncReadExt;
use tokio::process::{Child, ChildStdin, ChildStdout, Command};

/// Limits of one confined server.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ConfineLimits {
    /// The server is killed, with every descendant, after this long whatever happens.
    pub lifetime: Duration,
    /// `RLIMIT_CPU`, seconds.
    pub cpu_secs: u64,
    /// `RLIMIT_AS`, bytes (node needs about 1 GiB of address space to start).
    pub memory_bytes: u64,
    /// `--allow-network`: no socket filter, no network namespace.
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
    child: Child,
    pub stdin: Option<ChildStdin>,
    pub stdout: Option<ChildStdout>,
    stderr: Arc<Mutex<Vec<u8>>>,
    report: OwnedFd,
    /// Kept until the end: the server's scratch directory.
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

/// Starts `command args…` confined with piped stdin/stdout/stderr.
pub fn spawn(
    command: &str,
    args: &[String],
    env: &BTreeMap<String, String>,
    cwd: Option<&Path>,
    limits: &ConfineLimits,
) -> Result<Confined, SpawnError> {
    let support = Support::current();
    if !support.confines() && !limits.allow_unconfined {
        return Err(SpawnError::Unconfined(support.missing().join("; ")));
    }
    let scratch = tempfile::Builder::new()
        .prefix("gauntlet-mcp-")
        .tempdir()
        .map_err(|e| SpawnError::Start(format!("cannot create the scratch directory: {e}")))?;
    let (report_rd, report_wr) = report_pipe().map_err(SpawnError::Start)?;
    let mut prepared = Prepared::new(
        support,
        scratch.path(),
        report_wr.as_raw_fd(),
        limits.lifetime,
        limits.cpu_secs,
        limits.memory_bytes,
    )
    .map_err(SpawnError::Start)?;
    if limits.allow_network {
        prepared = prepared
            .allow_network(support, scratch.path())
            .map_err(SpawnError::Start)?;
    }
    let here = scratch.path().to_string_lossy().into_owned();
    let sub = |s: &String| s.replace(SCRATCH_VAR, &here);
    let mut cmd = Command::new(command);
    cmd.args(args.iter().map(sub))
        .stdin(std::process::Stdio::piped())
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .env_clear()
        .env(
            "PATH",
            std::env::var_os("PATH").unwrap_or_else(|| "/usr/local/bin:/usr/bin:/bin".into()),
        )
        .env("LANG", "C.UTF-8")
        .env("HOME", scratch.path())
        .env("TMPDIR", scratch.path())
        .envs(env.iter().map(|(k, v)| (k, sub(v))))
        .current_dir(
            cwd.map(Path::to_path_buf)
                .unwrap_or_else(|| scratch.path().to_path_buf()),
        )
        .process_group(0)
        .kill_on_drop(true);
    // SAFETY: `enter` is written for the window between fork and exec.
    unsafe {
        cmd.pre_exec(move || prepared.enter());
    }
    let spawned = cmd.spawn();
    drop(report_wr);
    let mut child =
        spawned.map_err(|e| SpawnError::Start(format!("could not start `{command}`: {e}")))?;
    let stderr = Arc::new(Mutex::new(Vec::new()));
    if let Some(mut err) = child.stderr.take() {
        let tail = stderr.clone();
        tokio::spawn(async move {
            let mut buf = vec![0u8; 4096];
            while let Ok(n) = err.read(&mut buf).await {
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
        stdin: child.stdin.take(),
        stdout: child.stdout.take(),
        child,
        stderr,
        report: report_rd,
        scratch,
    })
}

impl Confined {
    /// The server's scratch directory (its `$HOME` and `$TMPDIR`).
    pub fn scratch(&self) -> &Path {
        self.scratch.path()
    }

    /// What the server last wrote to stderr (lossy UTF-8, trimmed).
    pub fn stderr_tail(&self) -> String {
        String::from_utf8_lossy(&self.stderr.lock().unwrap())
            .trim()
            .to_string()
    }

    /// How the server ended, if it has and the supervisor said so: `exited with status
    /// N`, `killed by signal N`, `timed out`.
    pub fn ended(&self) -> Option<String> {
        match gauntlet_sandbox::read_report(self.report.as_raw_fd())? {
            (gauntlet_sandbox::Ended::TimedOut, _) => {
                Some("its lifetime ran out (process tree killed)".into())
            }
            (gauntlet_sandbox::Ended::Status(raw), _) => Some(if libc::WIFEXITED(raw) {
                format!("exited with status {}", libc::WEXITSTATUS(raw))
            } else if libc::WIFSIGNALED(raw) {
                let sig = libc::WTERMSIG(raw);
                let hint = match sig {
                    libc::SIGXCPU => " (CPU time limit)",
                    libc::SIGXFSZ => " (file size limit)",
                    libc::SIGSEGV | libc::SIGABRT => " (crashed; out of address space?)",
                    _ => "",
                };
                format!("killed by signal {sig}{hint}")
            } else {
                "ended abnormally".to_string()
            }),
        }
    }

    /// Ends the server: closes its stdin, gives it `grace` to exit, then freezes and kills
    /// every process descended from it and reaps the supervisor.
    pub async fn end(mut self, grace: Duration) {
        drop(self.stdin.take());
        if let Some(pid) = self.child.id() {
            let deadline = tokio::time::Instant::now() + grace;
            // A well-behaved server exits on EOF; the supervisor then reports and exits.
            while tokio::time::Instant::now() < deadline {
                if matches!(self.child.try_wait(), Ok(Some(_))) {
                    break;
                }
                tokio::time::sleep(Duration::from_millis(5)).await;
            }
            kill_tree(pid as libc::pid_t);
        }
        let _ = self.child.kill().await;
        let _ = self.child.wait().await;
    }

    /// The pid of the supervisor process (tests).
    pub fn pid(&self) -> Option<u32> {
        self.child.id()
    }

    pub fn scratch_path(&self) -> PathBuf {
        self.scratch.path().to_path_buf()
    }
}

/// Every descendant of `pid` (children of each of its threads, recursively).
fn descendants(pid: libc::pid_t, out: &mut Vec<libc::pid_t>) {
    let Ok(tasks) = std::fs::read_dir(format!("/proc/{pid}/task")) else {
        return;
    };
    for t in tasks.flatten() {
        let Ok(s) = std::fs::read_to_string(t.path().join("children")) else {
            continue;
        };
        for c in s
            .split_whitespace()
            .filter_map(|x| x.parse::<libc::pid_t>().ok())
        {
            if !out.contains(&c) {
                out.push(c);
                descendants(c, out);
            }
        }
    }
}

/// Stops `pid` and every descendant (repeating until no new one appears, so none can
/// fork away), then kills them all.
fn kill_tree(pid: libc::pid_t) {
    let mut all = vec![pid];
    for _ in 0..64 {
        let before = all.len();
        let mut found = Vec::new();
        for &p in &all {
            descendants(p, &mut found);
        }
        for p in found {
            if !all.contains(&p) {
                all.push(p);
            }
        }
        for &p in &all {
            // SAFETY: plain syscall on pids we found under our own child.
            unsafe { libc::kill(p, libc::SIGSTOP) };
        }
        if all.len() == before {
            break;
        }
    }
    for &p in all.iter().rev() {
        // SAFETY: as above.
        unsafe {
            libc::kill(p, libc::SIGKILL);
        }
    }
    // The process group as a backstop.
    // SAFETY: the child's own process group (process_group(0)).
    unsafe {
        libc::kill(-pid, libc::SIGKILL);
    }
}

/// A pipe for the supervisor's report: (read end, non-blocking; write end).
fn report_pipe() -> Result<(OwnedFd, OwnedFd), String> {
    let mut fds = [0; 2];
    // SAFETY: valid out array; both ends close-on-exec.
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
