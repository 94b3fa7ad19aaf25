//! Bounds on a confined program's whole process tree: its memory and its number of
//! tasks (processes and threads), beside the per-process resource limits.
//!
//! Why this exists: `RLIMIT_AS` / `RLIMIT_DATA` bound each process, so a program that
//! forks six children of 1000 MiB each under a 1200 MiB limit holds 6000 MiB; and
//! nothing bounded how many processes it may start. The tree is bounded, in order of
//! preference, by what this machine allows:
//!
//! 1. **A cgroup** of its own, created for the run under the cgroup gauntlet runs in (v2
//!    where that cgroup delegates the `memory` and `pids` controllers, else the v1
//!    `memory` and `pids` hierarchies), with the memory limit (swap included where the
//!    kernel accounts it) and `pids.max`. The program joins it between fork and exec,
//!    before anything else runs, so every descendant is in it. The kernel's OOM killer
//!    acts inside it; the kills are counted. The cgroup is removed when the run ends.
//! 2. Otherwise, **accounting and `RLIMIT_NPROC`**: in a PID namespace with its own
//!    `/proc`, the supervisor (the namespace's init) sums the tree's resident anonymous
//!    memory every [`ACCOUNT_PERIOD_MS`] ms and kills the tree when it is over the limit
//!    (the per-process limit still caps each process between two samples), and
//!    `RLIMIT_NPROC`, set inside the run's user namespace, counts only the tree's tasks.
//!    Root is exempt from `RLIMIT_NPROC`: a root run without a cgroup has no task bound,
//!    and says so.
//! 3. Otherwise (no PID namespace), each process is bounded alone, and that is said.
//!
//! [`TreeBounds`] says which applies to a run (`Display`: one line for logs and errors).

use std::ffi::CString;
use std::fmt;
use std::io;
use std::path::{Path, PathBuf};
use std::sync::OnceLock;
use std::sync::atomic::{AtomicU64, Ordering};

/// How often the supervisor sums the tree's memory when no cgroup bounds it.
pub const ACCOUNT_PERIOD_MS: u64 = 50;
/// The default bound on a long-lived run's tasks (processes and threads together).
pub const DEFAULT_MAX_TASKS: u64 = 512;

/// Which cgroup hierarchy bounds a run.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum CgroupVersion {
    V1,
    V2,
}

impl fmt::Display for CgroupVersion {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            CgroupVersion::V1 => "cgroup v1",
            CgroupVersion::V2 => "cgroup v2",
        })
    }
}

/// How a run's memory is bounded.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum TreeMemory {
    /// The whole tree, by its cgroup.
    Cgroup { version: CgroupVersion, bytes: u64 },
    /// The whole tree, by the supervisor's accounting (and each process by its rlimit).
    Accounted { bytes: u64 },
    /// Each process alone (its rlimit); the tree is not bounded.
    PerProcess { bytes: u64 },
}

/// How a run's number of tasks is bounded.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum TreeTasks {
    Cgroup {
        version: CgroupVersion,
        max: u64,
    },
    /// `RLIMIT_NPROC` in the run's own user namespace.
    Rlimit {
        max: u64,
    },
    /// Not bounded (root is exempt from `RLIMIT_NPROC`, or there is no user namespace).
    Unbounded,
}

/// What a run's `/proc` shows.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ProcView {
    /// A procfs of its own PID namespace: only its own processes.
    Own,
    /// An empty read-only directory (a fresh procfs was refused by the kernel).
    Hidden,
    /// The host's: every host process is listed, command lines included.
    Host,
}

/// What bounds one run's process tree, and what its `/proc` shows.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct TreeBounds {
    pub memory: TreeMemory,
    pub tasks: TreeTasks,
    pub proc: ProcView,
}

fn mib(bytes: u64) -> String {
    format!("{} MiB", bytes >> 20)
}

impl fmt::Display for TreeBounds {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self.memory {
            TreeMemory::Cgroup { version, bytes } => write!(
                f,
                "memory: {} for the whole process tree ({version})",
                mib(bytes)
            )?,
            TreeMemory::Accounted { bytes } => write!(
                f,
                "memory: {} for the whole process tree (resident memory summed every {ACCOUNT_PERIOD_MS} ms, the tree killed above it; no cgroup here) and per process (rlimit)",
                mib(bytes)
            )?,
            TreeMemory::PerProcess { bytes } => write!(
                f,
                "memory: {} per process only (rlimit; no cgroup and no PID namespace here, so the tree is not bounded)",
                mib(bytes)
            )?,
        }
        match self.tasks {
            TreeTasks::Cgroup { version, max } => {
                write!(f, "; tasks: at most {max} ({version} pids)")?;
            }
            TreeTasks::Rlimit { max } => write!(
                f,
                "; tasks: at most {max} (RLIMIT_NPROC in the run's user namespace)"
            )?,
            TreeTasks::Unbounded => write!(
                f,
                "; tasks: not bounded (no cgroup, and RLIMIT_NPROC does not bind {})",
                if is_root() {
                    "root"
                } else {
                    "a run without a user namespace"
                }
            )?,
        }
        f.write_str(match self.proc {
            ProcView::Own => "; /proc: its own PID namespace's",
            ProcView::Hidden => "; /proc: hidden (empty)",
            ProcView::Host => "; /proc: the host's (no PID namespace)",
        })
    }
}

fn is_root() -> bool {
    // SAFETY: plain syscall.
    unsafe { libc::getuid() == 0 }
}

/// Where this process may create cgroups for its runs (probed once).
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum CgroupSite {
    /// One v2 directory with the `memory` and `pids` controllers delegated.
    V2 { dir: PathBuf },
    /// The v1 `memory` directory, and the `pids` one where there is a pids hierarchy.
    V1 {
        memory: PathBuf,
        pids: Option<PathBuf>,
    },
}

impl CgroupSite {
    /// The site of the running process, if it can create and limit a child cgroup there.
    pub fn current() -> Option<&'static CgroupSite> {
        static S: OnceLock<Option<CgroupSite>> = OnceLock::new();
        S.get_or_init(|| {
            let own = kernel_file(Path::new("/proc/self/cgroup"))?;
            let mounts = kernel_file(Path::new("/proc/self/mountinfo"))?;
            let site = site_v2(&own, &mounts).or_else(|| site_v1(&own, &mounts))?;
            site.remove_stale();
            site.probe().then_some(site)
        })
        .as_ref()
    }

    pub fn version(&self) -> CgroupVersion {
        match self {
            CgroupSite::V2 { .. } => CgroupVersion::V2,
            CgroupSite::V1 { .. } => CgroupVersion::V1,
        }
    }

    /// Removes the empty cgroups of gauntlet processes that are gone (killed before they
    /// could remove their runs' cgroups); a cgroup still holding tasks stays.
    fn remove_stale(&self) {
        let dirs: Vec<&PathBuf> = match self {
            CgroupSite::V2 { dir } => vec![dir],
            CgroupSite::V1 { memory, pids } => std::iter::once(memory).chain(pids).collect(),
        };
        for d in dirs {
            let Ok(entries) = std::fs::read_dir(d) else {
                continue;
            };
            for e in entries.flatten() {
                let name = e.file_name();
                let Some(pid) = name
                    .to_str()
                    .and_then(|n| n.strip_prefix("gauntlet-"))
                    .and_then(|r| r.split('-').next())
                    .and_then(|p| p.parse::<u32>().ok())
                else {
                    continue;
                };
                if pid != std::process::id() && !Path::new(&format!("/proc/{pid}")).exists() {
                    let _ = std::fs::remove_dir(e.path());
                }
            }
        }
    }

    /// Creates and removes a child cgroup with a memory limit: whether runs can have one.
    fn probe(&self) -> bool {
        let name = format!("gauntlet-probe-{}", std::process::id());
        match Cgroup::create(self, &name, 1 << 30, 64) {
            Ok(c) => {
                drop(c);
                true
            }
            Err(_) => false,
        }
    }
}

/// Mount points of `fstype` in `/proc/self/mountinfo` with their super options.
fn mounts_of<'a>(mounts: &'a str, fstype: &str) -> Vec<(&'a str, &'a str)> {
    mounts
        .lines()
        .filter_map(|l| {
            let (pre, post) = l.split_once(" - ")?;
            let mut post = post.split_whitespace();
            if post.next()? != fstype {
                return None;
            }
            let _source = post.next()?;
            let opts = post.next().unwrap_or("");
            let mount_point = pre.split_whitespace().nth(4)?;
            Some((mount_point, opts))
        })
        .collect()
}

/// The v2 site: the process's own cgroup, when its `cgroup.subtree_control` already
/// enables `memory` and `pids` (a delegated cgroup, or the root one).
fn site_v2(own: &str, mounts: &str) -> Option<CgroupSite> {
    let path = own.lines().find_map(|l| l.strip_prefix("0::"))?;
    let (mount, _) = *mounts_of(mounts, "cgroup2").first()?;
    let dir = Path::new(mount).join(path.trim_start_matches('/'));
    let control = kernel_file(&dir.join("cgroup.subtree_control"))?;
    let on: Vec<&str> = control.split_whitespace().collect();
    (on.contains(&"memory") && on.contains(&"pids")).then_some(CgroupSite::V2 { dir })
}

/// The v1 site: the process's own cgroup in the `memory` hierarchy (and in `pids`).
fn site_v1(own: &str, mounts: &str) -> Option<CgroupSite> {
    let dir_of = |controller: &str| -> Option<PathBuf> {
        let path = own.lines().find_map(|l| {
            let mut parts = l.splitn(3, ':');
            let _id = parts.next()?;
            let ctrls = parts.next()?;
            let path = parts.next()?;
            ctrls.split(',').any(|c| c == controller).then_some(path)
        })?;
        let (mount, _) = mounts_of(mounts, "cgroup")
            .into_iter()
            .find(|(_, opts)| opts.split(',').any(|o| o == controller))?;
        Some(Path::new(mount).join(path.trim_start_matches('/')))
    };
    Some(CgroupSite::V1 {
        memory: dir_of("memory")?,
        pids: dir_of("pids"),
    })
}

/// The cgroup directories of one run, removed when dropped (once the tree is gone).
#[derive(Debug)]
pub(crate) struct Cgroup {
    version: CgroupVersion,
    /// Created directories: the memory one first.
    dirs: Vec<PathBuf>,
    /// `cgroup.procs` of each, for the program to join.
    procs: Vec<CString>,
    /// The tasks bound, when a pids controller applies.
    pub tasks: Option<u64>,
}

fn write(dir: &Path, file: &str, value: &str) -> io::Result<()> {
    std::fs::write(dir.join(file), value)
}

impl Cgroup {
    /// Creates the run's cgroup under `site` with the memory limit (swap included where
    /// accounted) and, where a pids controller is there, `max_tasks`.
    pub(crate) fn create(
        site: &CgroupSite,
        name: &str,
        memory_bytes: u64,
        max_tasks: u64,
    ) -> io::Result<Cgroup> {
        let mut c = Cgroup {
            version: site.version(),
            dirs: Vec::new(),
            procs: Vec::new(),
            tasks: None,
        };
        let mut mkdir = |d: PathBuf| -> io::Result<PathBuf> {
            std::fs::create_dir(&d)?;
            c.dirs.push(d.clone());
            Ok(d)
        };
        match site {
            CgroupSite::V2 { dir } => {
                let d = mkdir(dir.join(name))?;
                write(&d, "memory.max", &memory_bytes.to_string())?;
                // Absent without swap accounting; then there is no swap to bound.
                let _ = write(&d, "memory.swap.max", "0");
                // An OOM kill takes the whole tree, as the run's end would.
                let _ = write(&d, "memory.oom.group", "1");
                write(&d, "pids.max", &max_tasks.to_string())?;
                c.tasks = Some(max_tasks);
            }
            CgroupSite::V1 { memory, pids } => {
                let d = mkdir(memory.join(name))?;
                write(&d, "memory.limit_in_bytes", &memory_bytes.to_string())?;
                if d.join("memory.memsw.limit_in_bytes").exists() {
                    write(&d, "memory.memsw.limit_in_bytes", &memory_bytes.to_string())?;
                }
                if let Some(p) = pids {
                    let d = mkdir(p.join(name))?;
                    write(&d, "pids.max", &max_tasks.to_string())?;
                    c.tasks = Some(max_tasks);
                }
            }
        }
        c.procs = c
            .dirs
            .iter()
            .map(|d| {
                CString::new(d.join("cgroup.procs").into_os_string().into_encoded_bytes())
                    .map_err(|_| io::Error::from(io::ErrorKind::InvalidInput))
            })
            .collect::<io::Result<_>>()?;
        Ok(c)
    }

    /// The `cgroup.procs` files the program writes `0` to, to join.
    pub(crate) fn procs(&self) -> &[CString] {
        &self.procs
    }

    /// Processes the kernel's OOM killer killed in the cgroup so far.
    pub(crate) fn oom_kills(&self) -> u64 {
        let (file, key) = match self.version {
            CgroupVersion::V2 => ("memory.events", "oom_kill"),
            CgroupVersion::V1 => ("memory.oom_control", "oom_kill"),
        };
        let Some(d) = self.dirs.first() else {
            return 0;
        };
        kernel_file(&d.join(file))
            .and_then(|t| {
                t.lines().find_map(|l| {
                    let (k, v) = l.split_once(' ')?;
                    (k == key).then(|| v.trim().parse().ok())?
                })
            })
            .unwrap_or(0)
    }
}

impl Drop for Cgroup {
    /// Removes the directories; a cgroup still emptying (its last tasks being reaped) is
    /// retried for a moment.
    fn drop(&mut self) {
        for d in self.dirs.iter().rev() {
            for _ in 0..400 {
                match std::fs::remove_dir(d) {
                    Err(e) if e.raw_os_error() == Some(libc::EBUSY) => {
                        std::thread::sleep(std::time::Duration::from_millis(5));
                    }
                    _ => break,
                }
            }
        }
    }
}

/// A unique name for a run's cgroup.
pub(crate) fn cgroup_name() -> String {
    static N: AtomicU64 = AtomicU64::new(0);
    format!(
        "gauntlet-{}-{}",
        std::process::id(),
        N.fetch_add(1, Ordering::Relaxed)
    )
}

/// The tree's resident anonymous memory in bytes, summed over every process listed in
/// `/proc` but the caller (the supervisor, PID 1 of the namespace). Async-signal-safe:
/// raw syscalls into stack buffers.
///
/// # Safety
/// Only for the supervisor, in a PID namespace whose own procfs is at `/proc`.
pub(crate) unsafe fn tree_resident_bytes(page: u64) -> u64 {
    unsafe {
        let dir = libc::open(
            c"/proc".as_ptr(),
            libc::O_RDONLY | libc::O_DIRECTORY | libc::O_CLOEXEC,
        );
        if dir < 0 {
            return 0;
        }
        let mut total = 0u64;
        let mut buf = [0u8; 4096];
        loop {
            let n = libc::syscall(libc::SYS_getdents64, dir, buf.as_mut_ptr(), buf.len());
            if n <= 0 {
                break;
            }
            let mut off = 0usize;
            while off + 19 < n as usize {
                let reclen = u16::from_ne_bytes([buf[off + 16], buf[off + 17]]) as usize;
                if reclen == 0 {
                    break;
                }
                let name = &buf[off + 19..(off + reclen).min(n as usize)];
                let len = name.iter().position(|&b| b == 0).unwrap_or(name.len());
                let name = &name[..len];
                if !name.is_empty() && name.iter().all(u8::is_ascii_digit) && name != b"1" {
                    total = total.saturating_add(statm_anon_pages(name).saturating_mul(page));
                }
                off += reclen;
            }
        }
        libc::close(dir);
        total
    }
}

/// `resident - shared` pages of `/proc/<pid>/statm` (0 when unreadable).
unsafe fn statm_anon_pages(pid: &[u8]) -> u64 {
    let mut path = [0u8; 64];
    let parts: [&[u8]; 3] = [b"/proc/", pid, b"/statm\0"];
    let mut at = 0;
    for p in parts {
        if at + p.len() > path.len() {
            return 0;
        }
        path[at..at + p.len()].copy_from_slice(p);
        at += p.len();
    }
    unsafe {
        let fd = libc::open(path.as_ptr().cast(), libc::O_RDONLY | libc::O_CLOEXEC);
        if fd < 0 {
            return 0;
        }
        let mut b = [0u8; 256];
        let n = libc::read(fd, b.as_mut_ptr().cast(), b.len());
        libc::close(fd);
        if n <= 0 {
            return 0;
        }
        // size resident shared text lib data dt
        let mut fields = [0u64; 3];
        let mut i = 0;
        let mut cur: Option<u64> = None;
        for &c in &b[..n as usize] {
            if c.is_ascii_digit() {
                cur = Some(cur.unwrap_or(0).saturating_mul(10) + u64::from(c - b'0'));
            } else if let Some(v) = cur.take() {
                fields[i] = v;
                i += 1;
                if i == fields.len() {
                    break;
                }
            }
        }
        fields[1].saturating_sub(fields[2])
    }
}

/// A kernel pseudo-file under `/proc` or a cgroup mount, read whole; `None` when
/// unreadable. These are small text files the kernel writes, never a device or a pipe, and
/// gauntlet names them itself (no path here comes from input).
#[expect(
    clippy::disallowed_methods,
    reason = "kernel pseudo-files report size 0, and their paths are gauntlet's own"
)]
fn kernel_file(p: &Path) -> Option<String> {
    std::fs::read_to_string(p).ok()
}

#[cfg(test)]
mod tests {
    use super::*;

    const MOUNTINFO: &str = "\
22 27 0:21 / /proc rw,relatime - proc proc rw
30 29 0:26 / /sys/fs/cgroup/memory rw,relatime - cgroup cgroup rw,memory
31 29 0:27 / /sys/fs/cgroup/pids rw,relatime - cgroup cgroup rw,pids
35 29 0:31 / /sys/fs/cgroup/unified rw,relatime - cgroup2 cgroup2 rw
";

    #[test]
    fn the_sites_are_read_from_proc() {
        let own = "8:pids:/\n4:memory:/process_api/abc\n0::/\n";
        assert_eq!(
            site_v1(own, MOUNTINFO),
            Some(CgroupSite::V1 {
                memory: "/sys/fs/cgroup/memory/process_api/abc".into(),
                pids: Some("/sys/fs/cgroup/pids/".into()),
            })
        );
        assert_eq!(site_v1("0::/user.slice\n", MOUNTINFO), None);
        assert_eq!(
            mounts_of(MOUNTINFO, "cgroup2"),
            [("/sys/fs/cgroup/unified", "rw")]
        );
    }

    #[test]
    fn bounds_say_which_applies() {
        let b = TreeBounds {
            memory: TreeMemory::Cgroup {
                version: CgroupVersion::V1,
                bytes: 1200 << 20,
            },
            tasks: TreeTasks::Cgroup {
                version: CgroupVersion::V1,
                max: 512,
            },
            proc: ProcView::Own,
        };
        assert_eq!(
            b.to_string(),
            "memory: 1200 MiB for the whole process tree (cgroup v1); tasks: at most 512 (cgroup v1 pids); /proc: its own PID namespace's"
        );
        let b = TreeBounds {
            memory: TreeMemory::Accounted { bytes: 64 << 20 },
            tasks: TreeTasks::Rlimit { max: 32 },
            proc: ProcView::Hidden,
        };
        let s = b.to_string();
        assert!(
            s.contains("summed every 50 ms") && s.contains("RLIMIT_NPROC"),
            "{s}"
        );
    }

    /// A cgroup left by a gauntlet killed before it could remove it (SIGKILL) is removed
    /// by the next one; a live process's is kept.
    #[test]
    fn stale_cgroups_of_dead_processes_are_removed() {
        let Some(site) = CgroupSite::current() else {
            eprintln!("SKIP: no cgroup can be created here");
            return;
        };
        let (dead, live) = ("gauntlet-4294967290-0", cgroup_name());
        let a = Cgroup::create(site, dead, 64 << 20, 8).unwrap();
        let b = Cgroup::create(site, &live, 64 << 20, 8).unwrap();
        let paths: Vec<PathBuf> = a.dirs.clone();
        std::mem::forget(a);
        site.remove_stale();
        for p in &paths {
            assert!(!p.exists(), "{} was left", p.display());
        }
        assert!(b.dirs.iter().all(|d| d.exists()));
        drop(b);
    }

    #[test]
    fn this_process_resident_memory_reads() {
        let me = std::process::id().to_string();
        // SAFETY: reads a file of our own.
        let pages = unsafe { statm_anon_pages(me.as_bytes()) };
        assert!(pages > 0);
        eprintln!("cgroup site here: {:?}", CgroupSite::current());
    }
}
