//! Long-lived confined processes: a third-party program gauntlet talks to over its
//! stdin and stdout for a whole run (a benchmark sidecar, an MCP server, a command
//! target), confined with every layer of the crate (files, network, process tree).
//!
//! A detector run ends when its program exits or its time is up. A long-lived run ends
//! when gauntlet says so: [`Process::stop`] closes the program's stdin, gives it a grace
//! period to exit by itself, then closes the run's *control pipe*, whose end of file
//! makes the supervisor kill the whole tree (in a PID namespace, by exiting as its
//! init). The same end of file comes when gauntlet itself dies, however it dies, so no
//! descendant outlives gauntlet either; dropping a [`Process`] stops it at once.
//!
//! ```no_run
//! use gauntlet_sandbox::{Process, Spec};
//! use std::io::{BufRead, Write};
//! let mut p = Process::spawn(&Spec::new("/usr/bin/cat")).unwrap();
//! p.stdin.as_mut().unwrap().write_all(b"hello\n").unwrap();
//! let mut line = String::new();
//! std::io::BufReader::new(p.stdout.as_mut().unwrap()).read_line(&mut line).unwrap();
//! assert_eq!(line, "hello\n");
//! p.stop(std::time::Duration::from_secs(1));
//! ```

use crate::confine::{Confinement, Ended, Memory, Prepared, REPORT_MEMORY_KILL, Support};
use crate::tree::{Cgroup, CgroupSite, TreeBounds, TreeMemory};
use std::ffi::OsString;
use std::os::fd::{AsRawFd, FromRawFd, OwnedFd};
use std::os::unix::process::CommandExt;
use std::path::{Path, PathBuf};
use std::process::{Child, ChildStderr, ChildStdin, ChildStdout, Command, Stdio};
use std::time::{Duration, Instant};

/// What to run and how to confine it.
#[derive(Debug, Clone)]
pub struct Spec {
    pub program: PathBuf,
    pub args: Vec<OsString>,
    /// Added to an environment that holds only `PATH` (`/usr/local/bin:/usr/bin:/bin`),
    /// `LANG` (`C.UTF-8`), and `HOME` and `TMPDIR` (both the scratch directory); an entry
    /// here replaces one of those. Nothing of gauntlet's own environment (API keys
    /// included) reaches the program unless it is listed here.
    pub env: Vec<(OsString, OsString)>,
    /// The working directory (default: the scratch directory).
    pub cwd: Option<PathBuf>,
    /// Directories the program may write besides its scratch directory.
    pub writable: Vec<PathBuf>,
    /// Sockets allowed and the host's network namespace kept (default: no network).
    pub network: bool,
    /// Bound the tree with a cgroup of its own where the machine allows one (default);
    /// `false` bounds it as a machine without cgroups does (accounting, `RLIMIT_NPROC`).
    pub cgroup: bool,
    /// Each process's memory (an rlimit), and the whole tree's ([`crate::TreeBounds`]).
    pub memory: Memory,
    /// Tasks (processes and threads) the whole tree may hold at once (default
    /// [`crate::DEFAULT_MAX_TASKS`]).
    pub max_tasks: u64,
    /// CPU seconds over the process's whole life (`RLIMIT_CPU`; default: none).
    pub cpu_secs: Option<u64>,
    /// The supervisor kills the tree after this long, whatever gauntlet does (default:
    /// none; [`Process::stop`] or gauntlet's exit ends the run).
    pub lifetime: Option<Duration>,
    /// Run even where the kernel cannot provide every layer ([`Support::confines`]),
    /// with the layers it has. Off by default: such a spawn is refused with the reason.
    pub allow_unconfined: bool,
    /// Prefix of the scratch directory's name (under `$TMPDIR`).
    pub scratch_prefix: String,
}

impl Spec {
    /// Defaults: no arguments, no network, 2 GiB of data (`RLIMIT_DATA`), no CPU or
    /// lifetime limit, confinement required.
    pub fn new(program: impl Into<PathBuf>) -> Spec {
        Spec {
            program: program.into(),
            args: Vec::new(),
            env: Vec::new(),
            cwd: None,
            writable: Vec::new(),
            network: false,
            cgroup: true,
            memory: Memory::Data(2 << 30),
            max_tasks: crate::tree::DEFAULT_MAX_TASKS,
            cpu_secs: None,
            lifetime: None,
            allow_unconfined: false,
            scratch_prefix: "gauntlet-proc-".into(),
        }
    }

    pub fn arg(mut self, a: impl Into<OsString>) -> Spec {
        self.args.push(a.into());
        self
    }

    pub fn env(mut self, k: impl Into<OsString>, v: impl Into<OsString>) -> Spec {
        self.env.push((k.into(), v.into()));
        self
    }
}

/// Why a process could not be started.
#[derive(Debug, thiserror::Error)]
pub enum SpawnError {
    #[error(
        "refusing to run {program} unconfined: {missing} (the kernel cannot provide every layer of the sandbox; opt out explicitly to run it with the layers there are)"
    )]
    Unconfinable { program: String, missing: String },
    #[error("cannot create the scratch directory: {0}")]
    Scratch(#[source] std::io::Error),
    #[error("cannot create a pipe: {0}")]
    Pipe(#[source] std::io::Error),
    #[error("cannot prepare the sandbox: {0}")]
    Prepare(#[source] crate::confine::PrepareError),
    #[error("cannot create the cgroup that bounds the program's process tree: {0}")]
    Cgroup(#[source] std::io::Error),
    #[error("could not start {program}: {source}")]
    Start {
        program: String,
        #[source]
        source: std::io::Error,
    },
}

/// A running confined program. Its stdio handles are public to take (blocking std
/// pipes; wrap them with `tokio::net::unix::pipe` for async use).
#[derive(Debug)]
pub struct Process {
    pub stdin: Option<ChildStdin>,
    pub stdout: Option<ChildStdout>,
    pub stderr: Option<ChildStderr>,
    /// The sandbox's own child (the supervisor, or the waiter of the namespace's init).
    child: Child,
    control: Option<OwnedFd>,
    report: OwnedFd,
    ended: Option<Ended>,
    /// What bounds the tree, and its cgroup (removed once the tree is gone).
    bounds: TreeBounds,
    cgroup: Option<Cgroup>,
    /// Once ended: how the tree went over its memory bound, if it did.
    memory_exceeded: Option<String>,
    scratch: tempfile::TempDir,
}

impl Process {
    /// Starts `spec.program` confined.
    pub fn spawn(spec: &Spec) -> Result<Process, SpawnError> {
        let support = Support::current();
        if !support.confines() && !spec.allow_unconfined {
            return Err(SpawnError::Unconfinable {
                program: spec.program.display().to_string(),
                missing: support.missing().join("; "),
            });
        }
        let scratch = tempfile::Builder::new()
            .prefix(&spec.scratch_prefix)
            .tempdir()
            .map_err(SpawnError::Scratch)?;
        let (report_rd, report_wr) = pipe().map_err(SpawnError::Pipe)?;
        let (control_rd, control_wr) = pipe().map_err(SpawnError::Pipe)?;
        let memory_bytes = match spec.memory {
            Memory::AddressSpace(b) | Memory::Data(b) => b,
        };
        let site = CgroupSite::current().filter(|_| spec.cgroup);
        let cgroup = site
            .map(|s| Cgroup::create(s, &crate::tree::cgroup_name(), memory_bytes, spec.max_tasks))
            .transpose()
            .map_err(SpawnError::Cgroup)?;
        let bounds = support.tree_bounds(
            cgroup.as_ref(),
            site.map(CgroupSite::version),
            memory_bytes,
            spec.max_tasks,
        );
        let join = cgroup.as_ref().map(Cgroup::procs).unwrap_or(&[]);
        let mut prepared = Prepared::with(
            support,
            &Confinement {
                scratch: scratch.path(),
                writable: &spec.writable,
                network: spec.network,
                report_fd: report_wr.as_raw_fd(),
                control_fd: Some(control_rd.as_raw_fd()),
                timeout: spec.lifetime.unwrap_or(Duration::MAX),
                cpu_secs: spec.cpu_secs,
                memory: spec.memory,
                join,
                nproc: matches!(bounds.tasks, crate::tree::TreeTasks::Rlimit { .. })
                    .then_some(spec.max_tasks),
                account_bytes: matches!(bounds.memory, TreeMemory::Accounted { .. })
                    .then_some(memory_bytes),
            },
        )
        .map_err(SpawnError::Prepare)?;
        let mut cmd = Command::new(&spec.program);
        cmd.args(&spec.args)
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .env_clear()
            .env("PATH", "/usr/local/bin:/usr/bin:/bin")
            .env("LANG", "C.UTF-8")
            .env("TMPDIR", scratch.path())
            .env("HOME", scratch.path())
            .envs(spec.env.iter().map(|(k, v)| (k, v)))
            .current_dir(spec.cwd.as_deref().unwrap_or(scratch.path()))
            .process_group(0);
        // SAFETY: `enter` is written for the window between fork and exec.
        unsafe {
            cmd.pre_exec(move || prepared.enter());
        }
        let spawned = cmd.spawn();
        // The child has its copies; ours would keep the pipes open forever.
        drop(report_wr);
        drop(control_rd);
        let mut child = spawned.map_err(|source| SpawnError::Start {
            program: spec.program.display().to_string(),
            source,
        })?;
        Ok(Process {
            stdin: child.stdin.take(),
            stdout: child.stdout.take(),
            stderr: child.stderr.take(),
            child,
            control: Some(control_wr),
            report: report_rd,
            ended: None,
            bounds,
            cgroup,
            memory_exceeded: None,
            scratch,
        })
    }

    /// What bounds this run's process tree (memory, tasks) and what its `/proc` shows.
    pub fn bounds(&self) -> &TreeBounds {
        &self.bounds
    }

    /// Once the run has ended: how its tree went over its memory bound (the kernel's OOM
    /// killer in its cgroup, or the supervisor's accounting), in words; `None` if it
    /// stayed within it (or has not ended).
    pub fn memory_exceeded(&self) -> Option<&str> {
        self.memory_exceeded.as_deref()
    }

    /// The run's private scratch directory (writable, removed when the process is
    /// dropped).
    pub fn scratch(&self) -> &Path {
        self.scratch.path()
    }

    /// How the run ended, once it has; `None` while it goes on. Never blocks.
    pub fn try_ended(&mut self) -> Option<Ended> {
        if self.ended.is_none() && matches!(self.child.try_wait(), Ok(Some(_))) {
            self.ended = Some(self.collect());
        }
        self.ended
    }

    /// Ends the run: closes stdin, waits up to `grace` for the program to exit by
    /// itself, then has the supervisor kill the whole tree. Returns how it ended
    /// ([`Ended::Stopped`] when it had to be killed).
    pub fn stop(mut self, grace: Duration) -> Ended {
        self.finish(grace)
    }

    /// [`Process::stop`], also saying how the tree went over its memory bound, if it did
    /// ([`Process::memory_exceeded`]).
    pub fn end(mut self, grace: Duration) -> (Ended, Option<String>) {
        let e = self.finish(grace);
        (e, self.memory_exceeded.take())
    }

    fn finish(&mut self, grace: Duration) -> Ended {
        if let Some(e) = self.ended {
            return e;
        }
        drop(self.stdin.take());
        let deadline = Instant::now() + grace;
        while Instant::now() < deadline {
            if let Some(e) = self.try_ended() {
                return e;
            }
            std::thread::sleep(Duration::from_millis(2));
        }
        // The supervisor sees the end of file within its poll period and kills the tree.
        drop(self.control.take());
        let backstop = Instant::now() + Duration::from_secs(2);
        loop {
            match self.child.try_wait() {
                Ok(Some(_)) => break,
                Ok(None) if Instant::now() < backstop => {
                    std::thread::sleep(Duration::from_millis(2));
                }
                _ => {
                    // The supervisor is stuck or gone: kill its process group ourselves.
                    // SAFETY: plain syscall on the child's own group (process_group(0)).
                    unsafe { libc::kill(-(self.child.id() as i32), libc::SIGKILL) };
                    let _ = self.child.wait();
                    break;
                }
            }
        }
        let e = self.collect();
        self.ended = Some(e);
        e
    }

    /// The supervisor's report once its process has been reaped; the tree's memory
    /// record is read and its cgroup removed.
    fn collect(&mut self) -> Ended {
        // A supervisor killed before it could report: the tree went with it (namespace
        // init, or the group kill above).
        let (ended, flags) = crate::confine::read_report_flags(self.report.as_raw_fd())
            .map_or((Ended::Stopped, 0), |(e, _, f)| (e, f));
        let bytes = match self.bounds.memory {
            TreeMemory::Cgroup { bytes, .. }
            | TreeMemory::Accounted { bytes }
            | TreeMemory::PerProcess { bytes } => bytes,
        };
        let kills = self.cgroup.as_ref().map_or(0, Cgroup::oom_kills);
        if kills > 0 {
            self.memory_exceeded = Some(format!(
                "its process tree reached its {} MiB memory bound: the kernel killed {kills} of its processes",
                bytes >> 20
            ));
        } else if flags & REPORT_MEMORY_KILL != 0 {
            self.memory_exceeded = Some(format!(
                "its process tree went over its {} MiB memory bound: the whole tree was killed",
                bytes >> 20
            ));
        }
        drop(self.cgroup.take());
        ended
    }
}

impl Drop for Process {
    fn drop(&mut self) {
        self.finish(Duration::ZERO);
    }
}

/// A close-on-exec pipe whose read end does not block.
fn pipe() -> std::io::Result<(OwnedFd, OwnedFd)> {
    let mut fds = [0; 2];
    // SAFETY: valid out array.
    if unsafe { libc::pipe2(fds.as_mut_ptr(), libc::O_CLOEXEC) } != 0 {
        return Err(std::io::Error::last_os_error());
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

#[cfg(test)]
mod tests {
    use super::*;
    use std::io::{BufRead, BufReader, Read, Write};

    fn sh(script: &str) -> Spec {
        Spec::new("/bin/sh").arg("-c").arg(script)
    }

    fn confined() -> bool {
        let ok = Support::current().confines();
        if !ok {
            eprintln!(
                "SKIP: this kernel cannot confine: {:?}",
                Support::current().missing()
            );
        }
        ok
    }

    /// Reads one line from the process's stdout.
    fn line(p: &mut Process) -> String {
        let mut s = String::new();
        BufReader::new(p.stdout.as_mut().unwrap())
            .read_line(&mut s)
            .unwrap();
        s
    }

    #[test]
    fn talks_over_stdio_and_ends_when_stdin_closes() {
        let mut p = Process::spawn(&Spec::new("/bin/cat")).unwrap();
        p.stdin.as_mut().unwrap().write_all(b"ping\n").unwrap();
        assert_eq!(line(&mut p), "ping\n");
        assert!(p.try_ended().is_none());
        // cat exits on end of file: a clean exit, not a kill.
        match p.stop(Duration::from_secs(5)) {
            Ended::Status(raw) => assert!(libc::WIFEXITED(raw) && libc::WEXITSTATUS(raw) == 0),
            other => panic!("{other:?}"),
        }
    }

    #[test]
    fn a_program_that_ignores_stdin_is_killed_with_its_daemons() {
        if !confined() {
            return;
        }
        let marker = format!("gauntlet-sbx-{}", std::process::id());
        let marked = || {
            std::fs::read_dir("/proc")
                .unwrap()
                .filter_map(|e| std::fs::read(e.ok()?.path().join("cmdline")).ok())
                .filter(|c| String::from_utf8_lossy(c).contains(&marker))
                .count()
        };
        // A background child, a setsid daemon and a double fork (each a shell whose
        // command line carries the marker), then block forever.
        let d = format!("sh -c 'sleep 300; true {marker}'");
        let script =
            format!("{d} & setsid {d} & ({d} &) ; sleep 0.2; echo started; exec sleep 300");
        let mut p = Process::spawn(&sh(&script)).unwrap();
        assert_eq!(line(&mut p), "started\n");
        // The three daemons carry the marker once the script has exec'd `sleep` and the
        // double fork's intermediate shell has exited (on a loaded machine either may lag
        // the "started" line briefly).
        let deadline = Instant::now() + Duration::from_secs(3);
        while marked() != 3 && Instant::now() < deadline {
            std::thread::sleep(Duration::from_millis(20));
        }
        assert_eq!(marked(), 3, "the daemons did not start");
        let t = Instant::now();
        assert_eq!(p.stop(Duration::from_millis(100)), Ended::Stopped);
        assert!(t.elapsed() < Duration::from_secs(3), "{:?}", t.elapsed());
        std::thread::sleep(Duration::from_millis(100));
        assert_eq!(marked(), 0, "descendants outlived the run");
    }

    #[test]
    fn files_outside_scratch_and_writable_dirs_are_read_only() {
        if !confined() {
            return;
        }
        let outside = tempfile::tempdir().unwrap();
        let allowed = tempfile::tempdir().unwrap();
        let script = format!(
            "echo a > \"$TMPDIR/in-scratch\" && echo ok1; \
             echo b > {o}/x 2>/dev/null || echo denied; \
             echo c > {w}/y && echo ok2",
            o = outside.path().display(),
            w = allowed.path().display()
        );
        let mut spec = sh(&script);
        spec.writable.push(allowed.path().to_path_buf());
        let mut p = Process::spawn(&spec).unwrap();
        let mut out = String::new();
        p.stdout.take().unwrap().read_to_string(&mut out).unwrap();
        assert_eq!(out, "ok1\ndenied\nok2\n");
        assert!(!outside.path().join("x").exists());
        assert_eq!(
            std::fs::read_to_string(allowed.path().join("y")).unwrap(),
            "c\n"
        );
    }

    #[test]
    fn the_network_is_closed_unless_allowed() {
        if !confined() {
            return;
        }
        let probe = "import socket\ntry:\n  socket.socket(); print('open')\nexcept OSError as e:\n  print('closed', e.errno)\n";
        for (network, want) in [(false, "closed 1\n"), (true, "open\n")] {
            let mut spec = Spec::new("/usr/bin/env")
                .arg("python3")
                .arg("-c")
                .arg(probe);
            spec.network = network;
            let mut p = Process::spawn(&spec).unwrap();
            let mut out = String::new();
            p.stdout.take().unwrap().read_to_string(&mut out).unwrap();
            assert_eq!(out, want, "network: {network}");
        }
    }

    #[test]
    fn the_environment_is_only_what_the_spec_gives() {
        // SAFETY: set once in this test process before the child reads nothing of it.
        unsafe { std::env::set_var("GAUNTLET_SBX_SECRET", "sk-live-should-not-leak") };
        let mut p = Process::spawn(&sh("env").env("GIVEN", "yes")).unwrap();
        let mut out = String::new();
        p.stdout.take().unwrap().read_to_string(&mut out).unwrap();
        assert!(!out.contains("sk-live-should-not-leak"), "{out}");
        assert!(out.contains("GIVEN=yes"), "{out}");
        assert!(
            out.contains(&format!("HOME={}", p.scratch().display())),
            "{out}"
        );
    }

    #[test]
    fn a_lifetime_limit_kills_the_tree() {
        let mut spec = sh("echo up; exec sleep 300");
        spec.lifetime = Some(Duration::from_millis(200));
        let mut p = Process::spawn(&spec).unwrap();
        assert_eq!(line(&mut p), "up\n");
        let t = Instant::now();
        while p.try_ended().is_none() {
            assert!(t.elapsed() < Duration::from_secs(5));
            std::thread::sleep(Duration::from_millis(10));
        }
        assert_eq!(p.try_ended(), Some(Ended::TimedOut));
    }

    /// Six children of 100 MiB each under a 300 MiB bound: each process alone is within
    /// it (per-process limits let all six hold their memory), the tree is not — it is
    /// bounded (a cgroup, else accounting) and the run says its tree went over.
    #[test]
    fn the_memory_bound_is_the_whole_trees() {
        if !confined() {
            return;
        }
        let child = "import time; b = b'x' * (100 << 20); print('held', flush=True); time.sleep(3)";
        let script =
            format!("for i in 1 2 3 4 5 6; do python3 -c \"{child}\" & done; wait; echo done");
        // With a cgroup where there is one, and as a machine without cgroups does.
        for cgroup in [true, false] {
            let mut spec = sh(&script);
            spec.memory = Memory::Data(300 << 20);
            spec.cgroup = cgroup;
            let mut p = Process::spawn(&spec).unwrap();
            eprintln!("bounds: {}", p.bounds());
            let mut out = String::new();
            p.stdout.take().unwrap().read_to_string(&mut out).unwrap();
            let t = Instant::now();
            while p.try_ended().is_none() {
                assert!(t.elapsed() < Duration::from_secs(20), "{out}");
                std::thread::sleep(Duration::from_millis(10));
            }
            eprintln!("output: {out:?}; {:?}", p.memory_exceeded());
            match p.bounds().memory {
                crate::TreeMemory::PerProcess { .. } => {
                    eprintln!("SKIP: no cgroup and no PID namespace: the tree is not bounded here");
                }
                _ => {
                    let why = p.memory_exceeded().expect("the tree went over its bound");
                    assert!(why.contains("300 MiB memory bound"), "{why}");
                    assert!(
                        out.matches("held").count() < 6 || !out.contains("done"),
                        "{out}"
                    );
                }
            }
        }
    }

    /// A program that forks as many processes as it can gets no more than its bound.
    #[test]
    fn the_tasks_of_the_tree_are_bounded() {
        if !confined() {
            return;
        }
        let probe = "import os, time\nn = 0\nfor i in range(64):\n    try:\n        pid = os.fork()\n    except OSError:\n        break\n    if pid == 0:\n        time.sleep(5)\n        os._exit(0)\n    n += 1\nprint(n, flush=True)\n";
        for cgroup in [true, false] {
            let mut spec = Spec::new("/usr/bin/env")
                .arg("python3")
                .arg("-c")
                .arg(probe);
            spec.max_tasks = 16;
            spec.cgroup = cgroup;
            let mut p = Process::spawn(&spec).unwrap();
            let forked: u64 = line(&mut p).trim().parse().unwrap();
            eprintln!("bounds: {}; forked {forked}", p.bounds());
            match p.bounds().tasks {
                crate::TreeTasks::Unbounded => {
                    assert_eq!(forked, 64, "no bound, yet forks failed");
                    eprintln!("SKIP: no task bound applies here ({})", p.bounds());
                }
                _ => assert!(forked < 16, "forked {forked} under a bound of 16 tasks"),
            }
        }
    }

    /// Inside the run, `/proc` lists the run's own processes: no host process, and no
    /// host command line (this test's own included), is visible.
    #[test]
    fn proc_shows_the_run_only() {
        if !confined() {
            return;
        }
        let me = std::env::current_exe().unwrap();
        let name = me.file_name().unwrap().to_string_lossy().into_owned();
        let script = "ls /proc | grep -c '^[0-9]'; cat /proc/[0-9]*/cmdline | tr '\\0' ' '";
        let mut p = Process::spawn(&sh(script)).unwrap();
        let mut out = String::new();
        p.stdout.take().unwrap().read_to_string(&mut out).unwrap();
        eprintln!("bounds: {}\n{out}", p.bounds());
        if p.bounds().proc == crate::ProcView::Host {
            eprintln!("SKIP: no PID namespace here: the host's /proc shows");
            return;
        }
        assert!(
            !out.contains(&name),
            "a host command line is visible: {out}"
        );
        let listed: u64 = out.lines().next().unwrap().trim().parse().unwrap();
        assert!(listed < 8, "{listed} processes listed: {out}");
    }

    #[test]
    fn a_missing_program_is_a_start_error() {
        let e = Process::spawn(&Spec::new("/nonexistent/program")).unwrap_err();
        assert!(
            e.to_string()
                .starts_with("could not start /nonexistent/program"),
            "{e}"
        );
    }
}
