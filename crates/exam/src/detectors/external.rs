//! External detectors: any executable speaking a small JSON protocol.
//!
//! Why this exists: mallcop loads third-party detectors as sidecars; ours are plain
//! executables in any language, isolated like built-ins and additionally confined by
//! OS resource limits.
//!
//! # Protocol `gauntlet-detector/1`
//!
//! The executable is started once per scenario with no arguments, in its own process
//! group, with a clean working directory (the detector's directory) and:
//! - **stdin**: one JSON object, then EOF:
//!   `{"protocol": "gauntlet-detector/1", "detector": "<name>", "events": [Event…],
//!   "baseline": Baseline}` — the spec §3 projections exactly as serialised by
//!   [`crate::projection`] (`events[].type`, `events[].payload.metadata`,
//!   `baseline.known_actors`, `baseline.actor_hours`, …). The scenario id and every
//!   label are withheld.
//! - **stdout**: one JSON document, either `{"findings": [Finding…]}` or a bare array
//!   of findings. A finding is `{id, source, severity, type, actor, timestamp, reason,
//!   evidence, event_ids}`; every field is optional. The family is `type` (else the
//!   suffix of `source`); a finding with neither is attributed to the detector's name.
//! - **exit status** 0. Anything on stderr is kept (last 2 KiB) for error reports.
//!
//! Limits: wall-clock timeout (the process group is killed), CPU seconds
//! (`RLIMIT_CPU`), address space (`RLIMIT_AS`), output file size (`RLIMIT_FSIZE`,
//! 0: a detector writes no files), and at most [`MAX_STDOUT`] bytes of output. A
//! violation of any of them, a non-zero exit or unparseable output fails that
//! detector on that scenario only.
//!
//! # Layout on disk
//!
//! `detectors/<name>/detector` (executable) and optionally
//! `detectors/<name>/scenarios/*.yaml` — the detector's own efficacy scenarios, graded
//! as extra, unpinned rows.

use crate::projection::{Baseline, Event, Finding};
use serde::Serialize;
use std::io::{Read, Write};
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
}

impl Default for Limits {
    fn default() -> Self {
        Limits {
            timeout: Duration::from_secs(10),
            cpu_secs: 10,
            memory_bytes: 1 << 30,
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
        let path = path.canonicalize().map_err(|source| ConfigError::Io {
            path: path.to_path_buf(),
            source,
        })?;
        let scenarios_dir = path
            .parent()
            .map(|d| d.join("scenarios"))
            .filter(|d| d.is_dir());
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
    pub fn run(&self, events: &[Event], baseline: &Baseline) -> Result<Vec<Finding>, String> {
        let request = serde_json::to_vec(&Request {
            protocol: PROTOCOL,
            detector: &self.name,
            events,
            baseline,
        })
        .map_err(|e| format!("could not encode the request: {e}"))?;

        let mut cmd = Command::new(&self.path);
        cmd.stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .env_clear()
            .env("PATH", "/usr/local/bin:/usr/bin:/bin")
            .env("LANG", "C.UTF-8")
            .process_group(0);
        if let Some(dir) = self.path.parent() {
            cmd.current_dir(dir);
        }
        let (cpu, mem) = (self.limits.cpu_secs, self.limits.memory_bytes);
        // SAFETY: only async-signal-safe setrlimit calls between fork and exec.
        unsafe {
            cmd.pre_exec(move || {
                // SIGXCPU at the soft limit, SIGKILL a second later.
                set_limit(libc::RLIMIT_CPU, cpu, cpu + 1)?;
                set_limit(libc::RLIMIT_AS, mem, mem)?;
                set_limit(libc::RLIMIT_FSIZE, 0, 0)?;
                set_limit(libc::RLIMIT_CORE, 0, 0)?;
                Ok(())
            });
        }
        let mut child = cmd
            .spawn()
            .map_err(|e| format!("could not start {}: {e}", self.path.display()))?;
        let pgid = child.id() as i32;

        let mut stdin = child.stdin.take().expect("piped stdin");
        let writer = thread::spawn(move || {
            // A detector may exit without reading everything: EPIPE is not our error.
            let _ = stdin.write_all(&request);
        });
        let mut stdout = child.stdout.take().expect("piped stdout");
        let reader = thread::spawn(move || {
            let mut buf = Vec::new();
            let n = (&mut stdout)
                .take(MAX_STDOUT as u64 + 1)
                .read_to_end(&mut buf);
            // Drain the rest so the child never blocks on a full pipe.
            let _ = std::io::copy(&mut stdout, &mut std::io::sink());
            n.map(|_| buf)
        });
        let mut stderr = child.stderr.take().expect("piped stderr");
        let err_reader = thread::spawn(move || {
            let mut buf = Vec::new();
            let _ = stderr.read_to_end(&mut buf);
            buf
        });

        let deadline = Instant::now() + self.limits.timeout;
        let status = loop {
            match child.try_wait() {
                Ok(Some(s)) => break Some(s),
                Ok(None) if Instant::now() >= deadline => break None,
                Ok(None) => thread::sleep(Duration::from_millis(2)),
                Err(e) => {
                    kill_group(pgid);
                    let _ = child.wait();
                    return Err(format!("wait failed: {e}"));
                }
            }
        };
        // Whatever happened, nothing of the detector may outlive this run.
        kill_group(pgid);
        let status = match status {
            Some(s) => s,
            None => {
                let _ = child.wait();
                let _ = writer.join();
                let _ = reader.join();
                let _ = err_reader.join();
                return Err(format!(
                    "{TIMEOUT_PREFIX} after {} ms (process group killed)",
                    self.limits.timeout.as_millis()
                ));
            }
        };
        let _ = writer.join();
        let out = reader
            .join()
            .map_err(|_| "stdout reader panicked".to_string())?
            .map_err(|e| format!("reading stdout: {e}"))?;
        let err = err_reader.join().unwrap_or_default();
        let tail = stderr_tail(&err);
        if !status.success() {
            use std::os::unix::process::ExitStatusExt;
            let how = match (status.code(), status.signal()) {
                (Some(c), _) => format!("exited with status {c}"),
                (None, Some(s)) => format!("killed by signal {s}{}", signal_hint(s)),
                _ => "exited abnormally".to_string(),
            };
            return Err(if tail.is_empty() {
                how
            } else {
                format!("{how}: {tail}")
            });
        }
        if out.len() > MAX_STDOUT {
            return Err(format!("wrote more than {MAX_STDOUT} bytes to stdout"));
        }
        parse_findings(&out, &self.name)
    }
}

fn set_limit(resource: libc::__rlimit_resource_t, soft: u64, hard: u64) -> std::io::Result<()> {
    let lim = libc::rlimit {
        rlim_cur: soft as libc::rlim_t,
        rlim_max: hard as libc::rlim_t,
    };
    // SAFETY: plain syscall with a valid pointer.
    if unsafe { libc::setrlimit(resource, &lim) } != 0 {
        return Err(std::io::Error::last_os_error());
    }
    Ok(())
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
        libc::SIGXFSZ => " (file size limit: detectors may not write files)",
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
pub fn parse_findings(out: &[u8], detector: &str) -> Result<Vec<Finding>, String> {
    let v: serde_json::Value =
        serde_json::from_slice(out).map_err(|e| format!("stdout is not JSON: {e}"))?;
    let list = match v {
        serde_json::Value::Array(a) => a,
        serde_json::Value::Object(mut o) => match o.remove("findings") {
            Some(serde_json::Value::Array(a)) => a,
            Some(serde_json::Value::Null) | None => Vec::new(),
            Some(_) => return Err("`findings` is not an array".into()),
        },
        _ => return Err("stdout must be an object with `findings` or an array".into()),
    };
    list.into_iter()
        .enumerate()
        .map(|(i, f)| {
            let mut f: Finding =
                serde_json::from_value(f).map_err(|e| format!("findings[{i}]: {e}"))?;
            if f.family().is_empty() {
                f.finding_type = detector.to_string();
            }
            if f.source.is_empty() {
                f.source = format!("detector:{}", f.family());
            }
            Ok(f)
        })
        .collect()
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
}
