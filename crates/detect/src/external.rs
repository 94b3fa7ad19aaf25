//! External detectors: any executable speaking a small JSON protocol.
//!
//! Why this exists: mallcop loads third-party detectors as sidecars; ours are plain
//! executables in any language, isolated like built-ins and additionally confined by
//! OS resource limits.
//!
//! # Protocol `gauntlet-detector/1`
//!
//! The executable is started once per scenario with no arguments, in its own process
//! group, confined ([`gauntlet_sandbox`]), with the detector's directory as working
//! directory (read-only), a private scratch directory as `$TMPDIR` and `$HOME`, and:
//! - **stdin**: one JSON object, then EOF:
//!   `{"protocol": "gauntlet-detector/1", "detector": "<name>", "events": [Event…],
//!   "baseline": Baseline}` — mallcop's projections exactly as serialised by
//!   [`gauntlet_corpus::projection`] (`events[].type`, `events[].payload.metadata`,
//!   `baseline.known_actors`, `baseline.actor_hours`, …, and when the scenario has them
//!   `baseline.declared_hours` and `baseline.context`, the baseline's keys the schema
//!   does not name). The scenario id and every label are withheld.
//! - **stdout**: one JSON document, either `{"findings": [Finding…]}` or a bare array
//!   of findings. A finding is `{id, source, severity, type, actor, timestamp, reason,
//!   evidence, event_ids}`; every field is optional. The family is `type` (else the
//!   suffix of `source`); a finding with neither is attributed to the detector's name.
//!   The document is parsed as it streams in, straight into findings; more than
//!   [`MAX_FINDINGS`] findings fail the run as soon as the next one starts (memory stays
//!   bounded by the cap, not by what the detector prints).
//! - **exit status** 0. Anything on stderr is kept (last 2 KiB) for error reports.
//!
//! Limits: wall-clock timeout (the whole process tree is killed), CPU seconds
//! (`RLIMIT_CPU`), address space (`RLIMIT_AS`), file size in the scratch directory
//! (`RLIMIT_FSIZE`), at most [`MAX_STDOUT`] bytes of output and [`MAX_FINDINGS`]
//! findings. A violation of any of them, a non-zero exit or unparseable output fails
//! that detector on that scenario only.
//!
//! # Layout on disk
//!
//! `detectors/<name>/detector` (executable) and optionally
//! `detectors/<name>/scenarios/*.yaml` — the detector's own efficacy scenarios, graded
//! as extra, unpinned rows.

use gauntlet_corpus::projection::{Baseline, Event, Finding};
use gauntlet_sandbox::{self as sandbox, Ended, Prepared, Support};
use serde::Serialize;
use serde::de::{DeserializeSeed, Deserializer, IgnoredAny, MapAccess, SeqAccess, Visitor};
use std::fmt;
use std::io::{Read, Write};
use std::os::fd::{AsRawFd, FromRawFd, OwnedFd};
use std::os::unix::process::CommandExt;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::thread;
use std::time::{Duration, Instant};

pub const PROTOCOL: &str = "gauntlet-detector/1";
/// The executable's file name inside `detectors/<name>/`.
pub const EXECUTABLE_NAME: &str = "detector";
/// Stdout beyond this many bytes fails the run.
pub const MAX_STDOUT: usize = 64 * 1024 * 1024;
/// More findings than this in one run fail it.
pub const MAX_FINDINGS: usize = 10_000;
const STDERR_TAIL: usize = 2048;
/// Error messages of wall-clock timeouts start with this (the fleet reports them as
/// timeouts rather than failures).
pub const TIMEOUT_PREFIX: &str = "timed out";

/// Resource limits for one external run.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Limits {
    pub timeout: Duration,
    /// RLIMIT_CPU, seconds.
    pub cpu_secs: u64,
    /// RLIMIT_AS, bytes.
    pub memory_bytes: u64,
    /// The explicit opt-out: run detectors even where the kernel cannot confine them
    /// fully (they still get every layer it has). Off by default: such a kernel makes
    /// [`ExternalDetector::new`] refuse.
    pub allow_unconfined: bool,
}

impl Default for Limits {
    fn default() -> Self {
        Limits {
            timeout: Duration::from_secs(10),
            cpu_secs: 10,
            memory_bytes: 1 << 30,
            allow_unconfined: false,
        }
    }
}

/// A configured external detector.
#[derive(Debug, Clone)]
pub struct ExternalDetector {
    pub name: String,
    pub path: PathBuf,
    /// `<dir of path>/scenarios` when it exists.
    pub scenarios_dir: Option<PathBuf>,
    pub limits: Limits,
}

#[derive(Serialize)]
struct Request<'a> {
    protocol: &'a str,
    detector: &'a str,
    events: &'a [Event],
    baseline: &'a Baseline,
}

/// Why an external detector could not be configured.
#[derive(Debug, thiserror::Error)]
pub enum ConfigError {
    #[error("external detector `{0}`: expected NAME=PATH")]
    Syntax(String),
    #[error("external detector name `{0}` must be non-empty [a-z0-9._-]")]
    BadName(String),
    #[error("external detector `{name}`: {} is not an executable file", path.display())]
    NotExecutable { name: String, path: PathBuf },
    #[error(
        "external detector `{name}` cannot be confined on this machine: {why}. Detectors are refused rather than run unconfined; pass --allow-unconfined-detectors to run them anyway (with every protection this kernel has)"
    )]
    Unconfined { name: String, why: String },
    #[error("{}: {source}", path.display())]
    Io {
        path: PathBuf,
        source: std::io::Error,
    },
}

fn valid_name(n: &str) -> bool {
    !n.is_empty()
        && n.bytes().all(|c| {
            c.is_ascii_lowercase() || c.is_ascii_digit() || matches!(c, b'-' | b'_' | b'.')
        })
}

impl ExternalDetector {
    /// A detector `name` at `path` (must be an executable file).
    pub fn new(name: &str, path: &Path, limits: Limits) -> Result<Self, ConfigError> {
        if !valid_name(name) {
            return Err(ConfigError::BadName(name.to_string()));
        }
        let support = Support::current();
        if !support.confines() && !limits.allow_unconfined {
            return Err(ConfigError::Unconfined {
                name: name.to_string(),
                why: support.missing().join("; "),
            });
        }
        let meta = std::fs::metadata(path).map_err(|source| ConfigError::Io {
            path: path.to_path_buf(),
            source,
        })?;
        use std::os::unix::fs::PermissionsExt;
        if !meta.is_file() || meta.permissions().mode() & 0o111 == 0 {
            return Err(ConfigError::NotExecutable {
                name: name.to_string(),
                path: path.to_path_buf(),
            });
        }
        // The scenarios sit beside the name the user gave (`<dir>/<name>/scenarios/`),
        // not beside what a symlinked executable points to: resolving first left a
        // linked detector's own scenarios silently ungraded.
        let scenarios_dir = path
            .parent()
            .map(|d| d.join("scenarios"))
            .filter(|d| d.is_dir())
            .map(|d| d.canonicalize().unwrap_or(d));
        let path = path.canonicalize().map_err(|source| ConfigError::Io {
            path: path.to_path_buf(),
            source,
        })?;
        Ok(ExternalDetector {
            name: name.to_string(),
            path,
            scenarios_dir,
            limits,
        })
    }

    /// Parses `NAME=PATH`.
    pub fn from_spec(spec: &str, limits: Limits) -> Result<Self, ConfigError> {
        let (name, path) = spec
            .split_once('=')
            .ok_or_else(|| ConfigError::Syntax(spec.to_string()))?;
        Self::new(name.trim(), Path::new(path.trim()), limits)
    }

    /// Every `<dir>/<name>/detector` executable, sorted by name.
    pub fn discover(dir: &Path, limits: Limits) -> Result<Vec<Self>, ConfigError> {
        let rd = std::fs::read_dir(dir).map_err(|source| ConfigError::Io {
            path: dir.to_path_buf(),
            source,
        })?;
        let mut out = Vec::new();
        for entry in rd {
            let entry = entry.map_err(|source| ConfigError::Io {
                path: dir.to_path_buf(),
                source,
            })?;
            let exe = entry.path().join(EXECUTABLE_NAME);
            if entry.path().is_dir() && exe.is_file() {
                let name = entry.file_name().to_string_lossy().into_owned();
                out.push(Self::new(&name, &exe, limits)?);
            }
        }
        out.sort_by(|a, b| a.name.cmp(&b.name));
        Ok(out)
    }

    /// Runs the executable over one scenario's projection.
    pub fn run(&self, events: &[Event], baseline: &Baseline) -> Result<Vec<Finding>, RunError> {
        let request = serde_json::to_vec(&Request {
            protocol: PROTOCOL,
            detector: &self.name,
            events,
            baseline,
        })
        .map_err(RunError::Encode)?;

        let scratch = tempfile::Builder::new()
            .prefix("gauntlet-detector-")
            .tempdir()
            .map_err(RunError::Scratch)?;
        let (report_rd, report_wr) = report_pipe()?;
        let mut prepared = Prepared::new(
            Support::current(),
            scratch.path(),
            report_wr.as_raw_fd(),
            self.limits.timeout,
            self.limits.cpu_secs,
            self.limits.memory_bytes,
        )
        .map_err(RunError::Sandbox)?;
        let mut cmd = Command::new(&self.path);
        cmd.stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .env_clear()
            .env("PATH", "/usr/local/bin:/usr/bin:/bin")
            .env("LANG", "C.UTF-8")
            .env("TMPDIR", scratch.path())
            .env("HOME", scratch.path())
            .process_group(0);
        if let Some(dir) = self.path.parent() {
            cmd.current_dir(dir);
        }
        // SAFETY: `enter` is written for the window between fork and exec.
        unsafe {
            cmd.pre_exec(move || prepared.enter());
        }
        let spawned = cmd.spawn();
        drop(report_wr);
        let mut child = spawned.map_err(|source| RunError::Spawn {
            path: self.path.clone(),
            source,
        })?;
        let pgid = child.id() as i32;

        let mut stdin = child.stdin.take().expect("piped stdin");
        let writer = thread::spawn(move || {
            // A detector may exit without reading everything: EPIPE is not our error.
            let _ = stdin.write_all(&request);
        });
        let stdout = child.stdout.take().expect("piped stdout");
        let name = self.name.clone();
        let reader = thread::spawn(move || {
            let mut counted = Counted {
                inner: stdout,
                n: 0,
            };
            let parsed = parse_findings_from(
                std::io::BufReader::with_capacity(64 * 1024, &mut counted),
                &name,
            );
            // Drain the rest so the child never blocks on a full pipe.
            let _ = std::io::copy(&mut counted.inner, &mut std::io::sink());
            (parsed, counted.n)
        });
        let mut stderr = child.stderr.take().expect("piped stderr");
        let err_reader = thread::spawn(move || {
            let mut buf = Vec::new();
            let _ = (&mut stderr)
                .take(STDERR_TAIL as u64 * 16)
                .read_to_end(&mut buf);
            let _ = std::io::copy(&mut stderr, &mut std::io::sink());
            buf
        });

        // The supervisor enforces the timeout itself; this is the backstop.
        let deadline = Instant::now() + self.limits.timeout + Duration::from_secs(2);
        let status = loop {
            match child.try_wait() {
                Ok(Some(s)) => break Some(s),
                Ok(None) if Instant::now() >= deadline => break None,
                Ok(None) => thread::sleep(Duration::from_millis(2)),
                Err(e) => {
                    kill_group(pgid);
                    let _ = child.wait();
                    return Err(RunError::Wait(e));
                }
            }
        };
        // Whatever happened, nothing of the detector may outlive this run.
        kill_group(pgid);
        if status.is_none() {
            let _ = child.wait();
        }
        let ended = sandbox::read_report(report_rd.as_raw_fd());
        let _ = writer.join();
        let (parsed, bytes) = reader.join().map_err(|_| RunError::ReaderPanicked)?;
        let err = err_reader.join().unwrap_or_default();
        let tail = stderr_tail(&err);
        let timed_out = || RunError::TimedOut {
            millis: self.limits.timeout.as_millis(),
        };
        let raw = match ended {
            Some((Ended::Status(raw), _)) => raw,
            Some((Ended::TimedOut, _)) => return Err(timed_out()),
            // Only long-lived runs are stopped by their parent; a detector run is not.
            Some((Ended::Stopped, _)) => return Err(RunError::Stopped),
            None if status.is_none() => return Err(timed_out()),
            None => {
                return Err(RunError::NoReport {
                    status: status.expect("reaped"),
                    tail,
                });
            }
        };
        if !(libc::WIFEXITED(raw) && libc::WEXITSTATUS(raw) == 0) {
            let how = if libc::WIFEXITED(raw) {
                Ending::Status(libc::WEXITSTATUS(raw))
            } else if libc::WIFSIGNALED(raw) {
                Ending::Signal(libc::WTERMSIG(raw))
            } else {
                Ending::Abnormal
            };
            return Err(RunError::Exited { how, tail });
        }
        if bytes > MAX_STDOUT as u64 {
            return Err(RunError::TooMuchOutput);
        }
        Ok(parsed?)
    }
}

/// Why an external detector's run gave no findings. The fleet records the message as
/// the run's `failed` (or, for [`RunError::TimedOut`], `timeout`) status.
#[derive(Debug, thiserror::Error)]
pub enum RunError {
    #[error("could not encode the request: {0}")]
    Encode(#[source] serde_json::Error),
    #[error("cannot create the scratch directory: {0}")]
    Scratch(#[source] std::io::Error),
    #[error("cannot create a pipe: {0}")]
    Pipe(#[source] std::io::Error),
    /// The confinement could not be prepared.
    #[error(transparent)]
    Sandbox(#[from] gauntlet_sandbox::PrepareError),
    #[error("could not start {}: {source}", .path.display())]
    Spawn {
        path: PathBuf,
        #[source]
        source: std::io::Error,
    },
    #[error("wait failed: {0}")]
    Wait(#[source] std::io::Error),
    #[error("stdout reader panicked")]
    ReaderPanicked,
    #[error("{TIMEOUT_PREFIX} after {millis} ms (process tree killed)")]
    TimedOut { millis: u128 },
    #[error("the sandbox supervisor stopped the run")]
    Stopped,
    #[error("the sandbox supervisor ended without a report ({status}){}", with_tail(.tail))]
    NoReport {
        status: std::process::ExitStatus,
        tail: String,
    },
    /// A non-zero exit or a signal, with the end of its stderr.
    #[error("{how}{}", with_tail(.tail))]
    Exited { how: Ending, tail: String },
    #[error("wrote more than {MAX_STDOUT} bytes to stdout")]
    TooMuchOutput,
    #[error(transparent)]
    Output(#[from] OutputError),
}

/// How a detector that did not succeed ended.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Ending {
    Status(i32),
    Signal(i32),
    Abnormal,
}

impl fmt::Display for Ending {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Ending::Status(n) => write!(f, "exited with status {n}"),
            Ending::Signal(sig) => write!(f, "killed by signal {sig}{}", signal_hint(*sig)),
            Ending::Abnormal => f.write_str("exited abnormally"),
        }
    }
}

/// `: TAIL`, or nothing for an empty stderr tail.
fn with_tail(tail: &str) -> String {
    if tail.is_empty() {
        String::new()
    } else {
        format!(": {tail}")
    }
}

/// A detector's stdout that is not a findings document.
#[derive(Debug, thiserror::Error)]
pub enum OutputError {
    /// JSON of the wrong shape, too many findings, or a failed read: serde's message.
    #[error("{0}")]
    Shape(serde_json::Error),
    #[error("stdout is not JSON: {0}")]
    NotJson(serde_json::Error),
}

impl From<serde_json::Error> for OutputError {
    fn from(e: serde_json::Error) -> OutputError {
        if e.is_io() || e.classify() == serde_json::error::Category::Data {
            OutputError::Shape(e)
        } else {
            OutputError::NotJson(e)
        }
    }
}

/// A pipe for the supervisor's report: (read end, non-blocking; write end).
fn report_pipe() -> Result<(OwnedFd, OwnedFd), RunError> {
    let mut fds = [0; 2];
    // SAFETY: valid out array; both ends are close-on-exec.
    if unsafe { libc::pipe2(fds.as_mut_ptr(), libc::O_CLOEXEC) } != 0 {
        return Err(RunError::Pipe(std::io::Error::last_os_error()));
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

/// Counts the bytes read through it and stops after [`MAX_STDOUT`] + 1.
struct Counted<R> {
    inner: R,
    n: u64,
}

impl<R: Read> Read for Counted<R> {
    fn read(&mut self, buf: &mut [u8]) -> std::io::Result<usize> {
        if self.n > MAX_STDOUT as u64 {
            return Err(std::io::Error::other(format!(
                "more than {MAX_STDOUT} bytes on stdout"
            )));
        }
        let k = self.inner.read(buf)?;
        self.n += k as u64;
        Ok(k)
    }
}

fn kill_group(pgid: i32) {
    // SAFETY: plain syscall; pgid is the child's own process group (process_group(0)).
    unsafe {
        libc::kill(-pgid, libc::SIGKILL);
    }
}

fn signal_hint(sig: i32) -> &'static str {
    match sig {
        libc::SIGXCPU => " (CPU time limit)",
        libc::SIGXFSZ => " (file size limit)",
        libc::SIGKILL => " (killed)",
        libc::SIGSEGV => " (segmentation fault; memory limit?)",
        _ => "",
    }
}

fn stderr_tail(err: &[u8]) -> String {
    let s = String::from_utf8_lossy(err);
    let s = s.trim();
    let start = s.len().saturating_sub(STDERR_TAIL);
    let start = (start..=s.len())
        .find(|i| s.is_char_boundary(*i))
        .unwrap_or(s.len());
    s[start..].replace('\n', " | ")
}

/// Parses a detector's stdout: `{"findings": [...]}` or `[...]`.
pub fn parse_findings(out: &[u8], detector: &str) -> Result<Vec<Finding>, OutputError> {
    parse_findings_from(out, detector)
}

/// Parses a detector's output as it streams in, straight into findings (no JSON tree),
/// failing as soon as more than [`MAX_FINDINGS`] arrive.
pub fn parse_findings_from<R: Read>(out: R, detector: &str) -> Result<Vec<Finding>, OutputError> {
    let mut de = serde_json::Deserializer::from_reader(out);
    let list = de.deserialize_any(DocVisitor)?;
    de.end()?;
    Ok(list
        .into_iter()
        .map(|mut f| {
            if f.family().is_empty() {
                f.finding_type = detector.to_string();
            }
            if f.source.is_empty() {
                f.source = format!("detector:{}", f.family());
            }
            f
        })
        .collect())
}

/// The document: a bare array of findings, or an object whose `findings` is one.
struct DocVisitor;

impl<'de> Visitor<'de> for DocVisitor {
    type Value = Vec<Finding>;

    fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
        f.write_str("an object with `findings` or an array")
    }

    fn visit_seq<A: SeqAccess<'de>>(self, seq: A) -> Result<Self::Value, A::Error> {
        Findings.visit_seq(seq)
    }

    fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<Self::Value, A::Error> {
        let mut found = None;
        while let Some(key) = map.next_key::<String>()? {
            if key == "findings" && found.is_none() {
                found = Some(map.next_value_seed(Findings)?);
            } else {
                map.next_value::<IgnoredAny>()?;
            }
        }
        Ok(found.unwrap_or_default())
    }
}

/// The findings array (`null` is empty), capped at [`MAX_FINDINGS`].
struct Findings;

impl<'de> DeserializeSeed<'de> for Findings {
    type Value = Vec<Finding>;

    fn deserialize<D: Deserializer<'de>>(self, d: D) -> Result<Self::Value, D::Error> {
        d.deserialize_any(self)
    }
}

impl<'de> Visitor<'de> for Findings {
    type Value = Vec<Finding>;

    fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
        f.write_str("`findings` as an array")
    }

    fn visit_unit<E: serde::de::Error>(self) -> Result<Self::Value, E> {
        Ok(Vec::new())
    }

    fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<Self::Value, A::Error> {
        let mut out = Vec::new();
        loop {
            if out.len() == MAX_FINDINGS {
                if seq.next_element::<IgnoredAny>()?.is_some() {
                    return Err(serde::de::Error::custom(format!(
                        "more than {MAX_FINDINGS} findings in one run"
                    )));
                }
                return Ok(out);
            }
            match seq.next_element::<Finding>() {
                Ok(Some(f)) => out.push(f),
                Ok(None) => return Ok(out),
                Err(e) => {
                    return Err(serde::de::Error::custom(format!(
                        "findings[{}]: {e}",
                        out.len()
                    )));
                }
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn findings_parse_in_both_shapes_and_default_their_family() {
        let a = parse_findings(br#"{"findings": [{"type": "Foo", "actor": "x"}]}"#, "d").unwrap();
        assert_eq!(a[0].family(), "foo");
        assert_eq!(a[0].source, "detector:foo");
        let b = parse_findings(br#"[{"reason": "r"}]"#, "d").unwrap();
        assert_eq!(b[0].family(), "d");
        assert!(parse_findings(b"{}", "d").unwrap().is_empty());
        assert!(parse_findings(b"nope", "d").is_err());
        assert!(parse_findings(br#"{"findings": 3}"#, "d").is_err());
    }

    #[test]
    fn names_and_paths_are_validated() {
        assert!(matches!(
            ExternalDetector::from_spec("x", Limits::default()),
            Err(ConfigError::Syntax(_))
        ));
        assert!(matches!(
            ExternalDetector::from_spec("Bad Name=/bin/true", Limits::default()),
            Err(ConfigError::BadName(_))
        ));
        let dir = tempfile::tempdir().unwrap();
        let plain = dir.path().join("detector");
        std::fs::write(&plain, "#!/bin/sh\n").unwrap();
        let spec = format!("x={}", plain.display());
        assert!(matches!(
            ExternalDetector::from_spec(&spec, Limits::default()),
            Err(ConfigError::NotExecutable { .. })
        ));
        let missing = format!("x={}", dir.path().join("nope").display());
        assert!(matches!(
            ExternalDetector::from_spec(&missing, Limits::default()),
            Err(ConfigError::Io { .. })
        ));
    }

    /// A detector whose executable is a symlink (to a build output
    /// elsewhere) had its `scenarios/` silently not graded: they were looked for beside
    /// the link's target. They are the ones beside the link, in the detectors dir.
    #[test]
    fn a_symlinked_executable_keeps_its_scenarios() {
        use std::os::unix::fs::PermissionsExt;
        let elsewhere = tempfile::tempdir().unwrap();
        let real = elsewhere.path().join("build-output");
        std::fs::write(&real, "#!/bin/sh\necho '[]'\n").unwrap();
        std::fs::set_permissions(&real, std::fs::Permissions::from_mode(0o755)).unwrap();
        let dir = tempfile::tempdir().unwrap();
        let det = dir.path().join("linked");
        std::fs::create_dir_all(det.join("scenarios")).unwrap();
        std::os::unix::fs::symlink(&real, det.join(EXECUTABLE_NAME)).unwrap();
        let limits = Limits {
            allow_unconfined: true,
            ..Limits::default()
        };
        let found = ExternalDetector::discover(dir.path(), limits).unwrap();
        assert_eq!(found.len(), 1);
        assert_eq!(
            found[0].scenarios_dir.as_deref(),
            Some(det.join("scenarios").canonicalize().unwrap().as_path())
        );
        assert_eq!(found[0].path, real.canonicalize().unwrap());
    }
}
