//! Probing what the kernel can confine ([`Support`]) and preparing one confined run
//! ([`Prepared`]): the Landlock ruleset, the seccomp filter, resource limits, and the
//! report the supervisor writes of how the run ended. The crate doc says why and how.

use landlock::{
    ABI, Access, AccessFs, AccessNet, BitFlags, CompatLevel, Compatible, PathBeneath, PathFd,
    Ruleset, RulesetAttr, RulesetCreated, RulesetCreatedAttr, RulesetStatus, Scope,
};
use seccompiler::{BpfProgram, SeccompAction, SeccompFilter, SeccompRule};
use std::collections::BTreeMap;
use std::io;
use std::os::fd::RawFd;
use std::path::{Path, PathBuf};
use std::sync::OnceLock;
use std::time::Duration;

/// The lowest Landlock ABI whose rules cover every file operation of the guarantee
/// (ABI 3, Linux 6.2, adds truncation).
pub const MIN_LANDLOCK_ABI: i32 = 3;
/// Per-file size limit inside the scratch directory (`RLIMIT_FSIZE`).
pub const SCRATCH_FILE_BYTES: u64 = 64 * 1024 * 1024;

/// Namespaces a run can be given.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Namespaces {
    /// New user, PID and network namespaces (any user, where the kernel allows it).
    UserPidNet,
    /// New PID and network namespaces without a user namespace (root only).
    PidNet,
    /// None: the supervisor is child subreaper instead.
    None,
}

impl Namespaces {
    fn flags(self) -> libc::c_int {
        match self {
            Namespaces::UserPidNet => libc::CLONE_NEWUSER | libc::CLONE_NEWPID | libc::CLONE_NEWNET,
            Namespaces::PidNet => libc::CLONE_NEWPID | libc::CLONE_NEWNET,
            Namespaces::None => 0,
        }
    }

    /// The flags of a run; a run allowed the network keeps the host's network namespace.
    fn run_flags(self, network: bool) -> libc::c_int {
        if network {
            self.flags() & !libc::CLONE_NEWNET
        } else {
            self.flags()
        }
    }
}

/// What this kernel offers the sandbox (probed once per process).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Support {
    /// Landlock ABI version (0: not available).
    pub landlock_abi: i32,
    /// A seccomp filter can be installed on this architecture.
    pub seccomp: bool,
    pub namespaces: Namespaces,
    /// `/proc/thread-self/children` exists (the subreaper finds the tree through it).
    pub proc_children: bool,
    /// What a run in a PID namespace gets at `/proc` (a mount namespace of its own).
    pub proc_mount: ProcMount,
}

/// What the sandbox can mount at a run's `/proc`, in a mount namespace of the run's own.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ProcMount {
    /// A fresh procfs of the run's PID namespace: its own processes only.
    Fresh,
    /// An empty read-only tmpfs (the kernel refused a fresh procfs).
    Empty,
    /// Nothing (no PID namespace, or no mount allowed): the host's `/proc` shows.
    None,
}

impl Support {
    /// The probe of the running kernel (cached).
    pub fn current() -> &'static Support {
        static S: OnceLock<Support> = OnceLock::new();
        S.get_or_init(Support::probe)
    }

    fn probe() -> Support {
        // SAFETY: the documented version query: NULL attr, size 0.
        let abi = unsafe {
            libc::syscall(
                libc::SYS_landlock_create_ruleset,
                std::ptr::null::<u8>(),
                0usize,
                1u32, // LANDLOCK_CREATE_RULESET_VERSION
            )
        };
        let namespaces = probe_namespaces();
        Support {
            landlock_abi: abi.max(0) as i32,
            seccomp: filter(false).is_some(),
            namespaces,
            proc_children: Path::new("/proc/thread-self/children").exists(),
            proc_mount: probe_proc_mount(namespaces),
        }
    }

    /// Every layer is available: files, network and process tree are all confined.
    pub fn confines(&self) -> bool {
        self.missing().is_empty()
    }

    /// What is missing for a full confinement, in words.
    pub fn missing(&self) -> Vec<String> {
        let mut m = Vec::new();
        if self.landlock_abi < MIN_LANDLOCK_ABI {
            m.push(if self.landlock_abi == 0 {
                "Landlock is not available (kernel without CONFIG_SECURITY_LANDLOCK, or `landlock` missing from the lsm= boot list): detectors could write, truncate and delete files".to_string()
            } else {
                format!(
                    "Landlock ABI {} is older than {MIN_LANDLOCK_ABI} (Linux 6.2): detectors could truncate files",
                    self.landlock_abi
                )
            });
        }
        if !self.seccomp {
            m.push(format!(
                "seccomp filters are not supported here ({}): detectors could open network connections",
                std::env::consts::ARCH
            ));
        }
        if self.namespaces == Namespaces::None && !self.proc_children {
            m.push("neither PID namespaces nor /proc/thread-self/children are available: a detector's descendants could outlive its run".to_string());
        }
        m
    }

    /// One line saying what a confined run gets on this machine.
    pub fn describe(&self) -> String {
        let files = if self.landlock_abi >= MIN_LANDLOCK_ABI {
            format!(
                "files read-only except a private scratch directory (Landlock ABI {})",
                self.landlock_abi
            )
        } else {
            "files NOT confined (no usable Landlock; writes limited to 0 bytes)".to_string()
        };
        let net = match (self.seccomp, self.namespaces) {
            (true, Namespaces::None) => "no sockets (seccomp)",
            (true, _) => "no sockets (seccomp) in an empty network namespace",
            (false, Namespaces::None) => "network NOT confined",
            (false, _) => "an empty network namespace (no seccomp)",
        };
        let procs = match self.namespaces {
            Namespaces::UserPidNet => "descendants killed with the run (user+PID namespace)",
            Namespaces::PidNet => "descendants killed with the run (PID namespace)",
            Namespaces::None if self.proc_children => {
                "descendants killed with the run (child subreaper)"
            }
            Namespaces::None => "descendants NOT tracked",
        };
        let tree = match (crate::tree::CgroupSite::current(), self.namespaces) {
            (Some(site), _) => format!(
                "a long-lived program's whole tree bounded in memory and tasks ({})",
                site.version()
            ),
            (None, Namespaces::None) => {
                "a long-lived program's memory bounded per process only (no cgroup, no PID namespace)".to_string()
            }
            (None, _) => "a long-lived program's whole tree bounded in memory by accounting (no cgroup here)".to_string(),
        };
        let proc = match self.proc_mount {
            ProcMount::Fresh => "/proc of its own",
            ProcMount::Empty => "/proc hidden",
            ProcMount::None => "the host's /proc visible",
        };
        format!("{files}; {net}; {procs}; {tree}; {proc}")
    }

    /// What bounds a long-lived run's tree on this machine: `memory_bytes` for the tree
    /// and `max_tasks` tasks, with `cgroup` the run's cgroup if one was made.
    pub(crate) fn tree_bounds(
        &self,
        cgroup: Option<&crate::tree::Cgroup>,
        version: Option<crate::tree::CgroupVersion>,
        memory_bytes: u64,
        max_tasks: u64,
    ) -> crate::tree::TreeBounds {
        use crate::tree::{ProcView, TreeBounds, TreeMemory, TreeTasks};
        let pidns = self.namespaces != Namespaces::None;
        let proc = match (pidns, self.proc_mount) {
            (true, ProcMount::Fresh) => ProcView::Own,
            (true, ProcMount::Empty) => ProcView::Hidden,
            _ => ProcView::Host,
        };
        let memory = match (cgroup, version) {
            (Some(_), Some(version)) => TreeMemory::Cgroup {
                version,
                bytes: memory_bytes,
            },
            _ if proc == ProcView::Own => TreeMemory::Accounted {
                bytes: memory_bytes,
            },
            _ => TreeMemory::PerProcess {
                bytes: memory_bytes,
            },
        };
        let tasks = match (cgroup.and_then(|c| c.tasks), version) {
            (Some(max), Some(version)) => TreeTasks::Cgroup { version, max },
            // SAFETY: plain syscall.
            _ if self.namespaces == Namespaces::UserPidNet && unsafe { libc::getuid() } != 0 => {
                TreeTasks::Rlimit { max: max_tasks }
            }
            _ => TreeTasks::Unbounded,
        };
        TreeBounds {
            memory,
            tasks,
            proc,
        }
    }
}

/// Forks a probe child that enters new namespaces as a run does and mounts `/proc` as a
/// run's init would: a fresh procfs, else an empty tmpfs.
fn probe_proc_mount(ns: Namespaces) -> ProcMount {
    if ns == Namespaces::None {
        return ProcMount::None;
    }
    // SAFETY: the children only make async-signal-safe syscalls and `_exit`.
    unsafe {
        let pid = libc::fork();
        if pid == 0 {
            if libc::unshare(ns.flags() | libc::CLONE_NEWNS) != 0 {
                libc::_exit(1);
            }
            let init = libc::fork();
            if init == 0 {
                libc::_exit(match mount_proc() {
                    ProcMount::Fresh => 0,
                    ProcMount::Empty => 2,
                    ProcMount::None => 1,
                });
            }
            let mut st = 0;
            if init < 0 || libc::waitpid(init, &mut st, 0) != init || !libc::WIFEXITED(st) {
                libc::_exit(1);
            }
            libc::_exit(libc::WEXITSTATUS(st));
        }
        if pid < 0 {
            return ProcMount::None;
        }
        let mut st = 0;
        let r = libc::waitpid(pid, &mut st, 0);
        match (r == pid && libc::WIFEXITED(st)).then(|| libc::WEXITSTATUS(st)) {
            Some(0) => ProcMount::Fresh,
            Some(2) => ProcMount::Empty,
            _ => ProcMount::None,
        }
    }
}

/// In a run's own mount namespace, from inside its PID namespace: mounts are made
/// private (nothing propagates to the host), then `/proc` becomes a fresh procfs of the
/// namespace, or else an empty read-only tmpfs. Async-signal-safe.
unsafe fn mount_proc() -> ProcMount {
    unsafe {
        let null = std::ptr::null::<libc::c_char>();
        if libc::mount(
            null,
            c"/".as_ptr(),
            null,
            libc::MS_REC | libc::MS_PRIVATE,
            std::ptr::null(),
        ) != 0
        {
            return ProcMount::None;
        }
        let flags = libc::MS_NOSUID | libc::MS_NODEV | libc::MS_NOEXEC;
        if libc::mount(
            c"proc".as_ptr(),
            c"/proc".as_ptr(),
            c"proc".as_ptr(),
            flags,
            std::ptr::null(),
        ) == 0
        {
            return ProcMount::Fresh;
        }
        if libc::mount(
            c"none".as_ptr(),
            c"/proc".as_ptr(),
            c"tmpfs".as_ptr(),
            flags | libc::MS_RDONLY,
            std::ptr::null(),
        ) == 0
        {
            return ProcMount::Empty;
        }
        ProcMount::None
    }
}

/// Forks a probe child that tries to unshare the namespaces; the first set that works.
fn probe_namespaces() -> Namespaces {
    for ns in [Namespaces::UserPidNet, Namespaces::PidNet] {
        // SAFETY: the child only calls unshare and _exit (async-signal-safe).
        let pid = unsafe { libc::fork() };
        if pid == 0 {
            let ok = unsafe { libc::unshare(ns.flags()) } == 0;
            unsafe { libc::_exit(if ok { 0 } else { 1 }) };
        }
        if pid < 0 {
            return Namespaces::None;
        }
        let mut st = 0;
        // SAFETY: waiting for our own child.
        let r = unsafe { libc::waitpid(pid, &mut st, 0) };
        if r == pid && libc::WIFEXITED(st) && libc::WEXITSTATUS(st) == 0 {
            return ns;
        }
    }
    Namespaces::None
}

/// `setxattrat(2)` and `removexattrat(2)` (Linux 6.13; one number on every
/// architecture, not yet in the libc crate).
const SYS_SETXATTRAT: libc::c_long = 463;
const SYS_REMOVEXATTRAT: libc::c_long = 466;

/// The seccomp filter (built once per kind): `socket` (unless the run may use the
/// network), io_uring, metadata changes (mode, owner, extended attributes, times:
/// Landlock does not cover them) and the privileged calls fail with `EPERM`; everything
/// else is allowed. `None` where seccompiler has no backend.
fn filter(network: bool) -> Option<&'static BpfProgram> {
    static NO_NET: OnceLock<Option<BpfProgram>> = OnceLock::new();
    static NET: OnceLock<Option<BpfProgram>> = OnceLock::new();
    let cell = if network { &NET } else { &NO_NET };
    cell.get_or_init(|| {
        let arch = std::env::consts::ARCH.try_into().ok()?;
        let socket: &[libc::c_long] = if network { &[] } else { &[libc::SYS_socket] };
        let denied: &[libc::c_long] = &[
            libc::SYS_io_uring_setup,
            libc::SYS_io_uring_enter,
            libc::SYS_io_uring_register,
            libc::SYS_setns,
            libc::SYS_unshare,
            libc::SYS_mount,
            libc::SYS_umount2,
            libc::SYS_pivot_root,
            libc::SYS_move_mount,
            libc::SYS_open_tree,
            libc::SYS_fsopen,
            libc::SYS_ptrace,
            libc::SYS_process_vm_writev,
            libc::SYS_init_module,
            libc::SYS_finit_module,
            libc::SYS_delete_module,
            libc::SYS_kexec_load,
            libc::SYS_kexec_file_load,
            libc::SYS_reboot,
            libc::SYS_swapon,
            libc::SYS_swapoff,
            libc::SYS_bpf,
            libc::SYS_perf_event_open,
            libc::SYS_keyctl,
            libc::SYS_add_key,
            libc::SYS_request_key,
            // Metadata changes, which Landlock does not cover.
            libc::SYS_fchmod,
            libc::SYS_fchmodat,
            libc::SYS_fchmodat2,
            libc::SYS_fchown,
            libc::SYS_fchownat,
            libc::SYS_setxattr,
            libc::SYS_lsetxattr,
            libc::SYS_fsetxattr,
            libc::SYS_removexattr,
            libc::SYS_lremovexattr,
            libc::SYS_fremovexattr,
            libc::SYS_utimensat,
            SYS_SETXATTRAT,
            SYS_REMOVEXATTRAT,
        ];
        #[cfg(target_arch = "x86_64")]
        let legacy: &[libc::c_long] = &[
            libc::SYS_chmod,
            libc::SYS_chown,
            libc::SYS_lchown,
            libc::SYS_utime,
            libc::SYS_utimes,
            libc::SYS_futimesat,
        ];
        #[cfg(not(target_arch = "x86_64"))]
        let legacy: &[libc::c_long] = &[];
        let mut rules: BTreeMap<i64, Vec<SeccompRule>> = BTreeMap::new();
        // `c_long` is `i64` here, `i32` on 32-bit targets.
        #[allow(
            clippy::unnecessary_cast,
            reason = "a no-op where c_long is i64; needed on 32-bit targets"
        )]
        for nr in socket
            .iter()
            .chain(denied)
            .chain(legacy)
            .map(|&nr| nr as i64)
        {
            rules.insert(nr, Vec::new());
            // The x32 ABI reaches the same calls with bit 30 set, under the x86_64 arch.
            if cfg!(target_arch = "x86_64") {
                rules.insert(nr | 0x4000_0000, Vec::new());
            }
        }
        let f = SeccompFilter::new(
            rules,
            SeccompAction::Allow,
            SeccompAction::Errno(libc::EPERM as u32),
            arch,
        )
        .ok()?;
        BpfProgram::try_from(f).ok()
    })
    .as_ref()
}

/// Why a run's confinement could not be prepared in the parent.
#[derive(Debug, thiserror::Error)]
pub enum PrepareError {
    /// A path the ruleset names could not be opened.
    #[error("cannot open {}: {cause}", path.display())]
    Open {
        path: PathBuf,
        #[source]
        cause: landlock::PathFdError,
    },
    /// The kernel refused the ruleset.
    #[error("cannot prepare the Landlock ruleset: {0}")]
    Ruleset(#[source] landlock::RulesetError),
}

/// The Landlock ruleset of one run: read-only `/`, read-write `/dev/null`, `scratch` and
/// each of `writable`; TCP bind and connect denied unless the run may use the network.
fn ruleset(
    abi: i32,
    scratch: &Path,
    writable: &[PathBuf],
    network: bool,
) -> Result<RulesetCreated, PrepareError> {
    let abi = ABI::from(abi);
    let all = AccessFs::from_all(abi);
    let fd = |p: &Path| {
        PathFd::new(p).map_err(|cause| PrepareError::Open {
            path: p.to_path_buf(),
            cause,
        })
    };
    let (root, dev_null) = (fd(Path::new("/"))?, fd(Path::new("/dev/null"))?);
    let mut rw = vec![fd(scratch)?];
    for w in writable {
        rw.push(fd(w)?);
    }
    let build = || -> Result<RulesetCreated, landlock::RulesetError> {
        let mut r = Ruleset::default()
            .set_compatibility(CompatLevel::BestEffort)
            .handle_access(all)?;
        if abi >= ABI::V4 && !network {
            r = r.handle_access(AccessNet::from_all(abi))?;
        }
        if abi >= ABI::V6 {
            r = r.scope(Scope::from_all(abi))?;
        }
        let null_access: BitFlags<AccessFs> = AccessFs::from_file(abi) & !AccessFs::Execute;
        let mut c = r
            .create()?
            .add_rule(PathBeneath::new(root, AccessFs::from_read(abi)))?
            .add_rule(PathBeneath::new(dev_null, null_access))?;
        for d in rw {
            c = c.add_rule(PathBeneath::new(d, all))?;
        }
        Ok(c)
    };
    build().map_err(PrepareError::Ruleset)
}

/// How a supervised run ended, as the supervisor reports it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Ended {
    /// The program's raw wait status.
    Status(libc::c_int),
    /// Its time was up; the whole tree was killed.
    TimedOut,
    /// The parent asked the run to end (or went away): the whole tree was killed.
    /// Only long-lived runs ([`crate::Process`]) can end this way.
    Stopped,
}

/// How a run's memory is limited.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Memory {
    /// `RLIMIT_AS`: the whole address space (what external detectors get).
    AddressSpace(u64),
    /// `RLIMIT_DATA`: writable private mappings, heap included. For runtimes that
    /// reserve far more address space than they use (V8 reserves gigabytes it never
    /// touches), where an address-space limit would refuse them at start.
    Data(u64),
}

/// Everything about a run that the forked child needs, prepared in the parent.
pub(crate) struct Confinement<'a> {
    pub scratch: &'a Path,
    /// Directories writable besides the scratch directory.
    pub writable: &'a [PathBuf],
    /// Sockets allowed, the host's network namespace kept.
    pub network: bool,
    pub report_fd: RawFd,
    /// Read end of the control pipe of a long-lived run: its end of file (the parent
    /// closed the write end, or is gone) ends the run.
    pub control_fd: Option<RawFd>,
    pub timeout: Duration,
    pub cpu_secs: Option<u64>,
    pub memory: Memory,
    /// `cgroup.procs` files the run joins before anything else (its tree's cgroup).
    pub join: &'a [std::ffi::CString],
    /// `RLIMIT_NPROC` set inside the run's user namespace (its tree's tasks).
    pub nproc: Option<u64>,
    /// The tree's memory bound the supervisor keeps by accounting (no cgroup).
    pub account_bytes: Option<u64>,
}

/// Everything the forked child needs, prepared in the parent.
pub struct Prepared {
    ruleset: Option<RulesetCreated>,
    filter: Option<&'static BpfProgram>,
    namespaces: Namespaces,
    ns_flags: libc::c_int,
    report_fd: RawFd,
    control_fd: RawFd,
    timeout: libc::timespec,
    cpu_secs: Option<u64>,
    memory: Memory,
    fsize: u64,
    /// What the namespace's init mounts at `/proc` (nothing without a PID namespace).
    proc_mount: ProcMount,
    join: Vec<std::ffi::CString>,
    nproc: Option<u64>,
    account_bytes: Option<u64>,
    page_bytes: u64,
    /// This process's argument and environment areas (`/proc/self/stat`): the
    /// namespace's init, a fork of it, blanks them, so `/proc/1/cmdline` and
    /// `/proc/1/environ` inside the run show nothing of gauntlet's.
    own_areas: [(usize, usize); 2],
}

/// The argument and environment areas of this process, from `/proc/self/stat` (fields
/// 48–51); empty where unreadable.
#[expect(
    clippy::disallowed_methods,
    reason = "a kernel pseudo-file of this process, its path gauntlet's own"
)]
fn own_areas() -> [(usize, usize); 2] {
    let stat = std::fs::read_to_string("/proc/self/stat").unwrap_or_default();
    let after = stat.rsplit_once(')').map_or("", |(_, r)| r);
    // Field n is at index n - 3 after the command name.
    let f: Vec<usize> = after
        .split_whitespace()
        .skip(45)
        .take(4)
        .filter_map(|v| v.parse().ok())
        .collect();
    match f[..] {
        [a0, a1, e0, e1] if a0 <= a1 && e0 <= e1 => [(a0, a1), (e0, e1)],
        _ => [(0, 0); 2],
    }
}

impl Prepared {
    /// Prepares a run. `confine`: apply every layer the kernel has (always true unless
    /// the caller built an explicitly unconfined detector on a kernel without Landlock).
    pub fn new(
        support: &Support,
        scratch: &Path,
        report_fd: RawFd,
        timeout: Duration,
        cpu_secs: u64,
        memory_bytes: u64,
    ) -> Result<Prepared, PrepareError> {
        Prepared::with(
            support,
            &Confinement {
                scratch,
                writable: &[],
                network: false,
                report_fd,
                control_fd: None,
                timeout,
                cpu_secs: Some(cpu_secs),
                memory: Memory::AddressSpace(memory_bytes),
                join: &[],
                nproc: None,
                account_bytes: None,
            },
        )
    }

    pub(crate) fn with(support: &Support, c: &Confinement<'_>) -> Result<Prepared, PrepareError> {
        let landlock = support.landlock_abi >= MIN_LANDLOCK_ABI;
        // Far enough to never come, small enough for timespec arithmetic.
        let timeout = c.timeout.min(Duration::from_secs(100 * 365 * 86_400));
        Ok(Prepared {
            ruleset: if landlock {
                Some(ruleset(
                    support.landlock_abi,
                    c.scratch,
                    c.writable,
                    c.network,
                )?)
            } else {
                None
            },
            filter: filter(c.network),
            namespaces: support.namespaces,
            ns_flags: support.namespaces.run_flags(c.network)
                | if support.proc_mount == ProcMount::None {
                    0
                } else {
                    libc::CLONE_NEWNS
                },
            proc_mount: support.proc_mount,
            join: c.join.to_vec(),
            nproc: c.nproc,
            account_bytes: c.account_bytes,
            // SAFETY: plain sysconf.
            page_bytes: u64::try_from(unsafe { libc::sysconf(libc::_SC_PAGESIZE) }).unwrap_or(4096),
            own_areas: own_areas(),
            report_fd: c.report_fd,
            control_fd: c.control_fd.unwrap_or(-1),
            timeout: libc::timespec {
                tv_sec: timeout.as_secs() as libc::time_t,
                tv_nsec: timeout.subsec_nanos() as libc::c_long,
            },
            cpu_secs: c.cpu_secs,
            memory: c.memory,
            fsize: if landlock { SCRATCH_FILE_BYTES } else { 0 },
        })
    }

    /// Runs in the forked child (`pre_exec`). Returns `Ok` only in the process that
    /// goes on to exec the detector; the supervisor (and the namespace's init) never
    /// return.
    ///
    /// # Safety
    /// Call only between `fork` and `exec` (it forks again and calls `_exit`).
    pub unsafe fn enter(&mut self) -> io::Result<()> {
        // SAFETY (whole body): async-signal-safe syscalls on prepared data.
        unsafe {
            if let Some(cpu) = self.cpu_secs {
                set_limit(libc::RLIMIT_CPU, cpu, cpu + 1)?;
            }
            match self.memory {
                Memory::AddressSpace(b) => set_limit(libc::RLIMIT_AS, b, b)?,
                Memory::Data(b) => set_limit(libc::RLIMIT_DATA, b, b)?,
            }
            set_limit(libc::RLIMIT_FSIZE, self.fsize, self.fsize)?;
            set_limit(libc::RLIMIT_CORE, 0, 0)?;
            // Into the tree's cgroup first: every process from here on is in it.
            for procs in &self.join {
                let fd = libc::open(procs.as_ptr(), libc::O_WRONLY | libc::O_CLOEXEC);
                if fd < 0 {
                    return Err(io::Error::last_os_error());
                }
                let ok = libc::write(fd, b"0".as_ptr().cast(), 1) == 1;
                let e = io::Error::last_os_error();
                libc::close(fd);
                if !ok {
                    return Err(e);
                }
            }
            if self.control_fd < 0 {
                // Die with the thread that started us. A long-lived run outlives the
                // thread that spawned it (a pool thread may exit while the run goes on);
                // its control pipe ends it when the parent goes away instead.
                libc::prctl(libc::PR_SET_PDEATHSIG, libc::SIGKILL);
            }
            let pidns = self.namespaces != Namespaces::None && libc::unshare(self.ns_flags) == 0;
            if !pidns && libc::prctl(libc::PR_SET_CHILD_SUBREAPER, 1) != 0 {
                return Err(io::Error::last_os_error());
            }
            // Set inside the new user namespace, the limit counts the tree's tasks only
            // (the namespace's own count), not every process of the user.
            if let (true, Some(n)) = (pidns, self.nproc) {
                set_limit(libc::RLIMIT_NPROC, n, n)?;
            }
            let first = libc::fork();
            if first < 0 {
                return Err(io::Error::last_os_error());
            }
            if first == 0 {
                if !pidns {
                    return self.detector();
                }
                // PID 1 of the new namespace: its own /proc, start the detector, then
                // supervise it.
                libc::prctl(libc::PR_SET_PDEATHSIG, libc::SIGKILL);
                if self.proc_mount != ProcMount::None {
                    mount_proc();
                }
                // Inherited from gauntlet by the fork: blanked, this init's own copy.
                for (start, end) in self.own_areas {
                    if end > start {
                        std::ptr::write_bytes(start as *mut u8, 0, end - start);
                    }
                }
                let c = libc::fork();
                if c < 0 {
                    libc::_exit(126);
                }
                if c == 0 {
                    return self.detector();
                }
                close_all_but(self.report_fd, self.control_fd);
                self.supervise(c, true)
            }
            close_all_but(self.report_fd, self.control_fd);
            if pidns {
                // The namespace's init reports; we only wait for it.
                let mut st = 0;
                while libc::waitpid(first, &mut st, 0) < 0 && errno() == libc::EINTR {}
                libc::_exit(0);
            }
            self.supervise(first, false)
        }
    }

    /// The detector process, right before exec: no new privileges, Landlock, seccomp.
    unsafe fn detector(&mut self) -> io::Result<()> {
        unsafe {
            libc::prctl(libc::PR_SET_PDEATHSIG, libc::SIGKILL);
            if libc::prctl(libc::PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) != 0 {
                return Err(io::Error::last_os_error());
            }
        }
        if let Some(r) = self.ruleset.take() {
            match r.restrict_self() {
                Ok(s) if s.ruleset != RulesetStatus::NotEnforced => {}
                Ok(_) => return Err(io::Error::from_raw_os_error(libc::ENOSYS)),
                Err(_) => return Err(io::Error::last_os_error()),
            }
        }
        if let Some(f) = self.filter
            && seccompiler::apply_filter(f).is_err()
        {
            return Err(io::Error::last_os_error());
        }
        Ok(())
    }

    /// Waits for the detector (reaping any orphan meanwhile) until it exits or the
    /// time is up, kills what is left, reports and exits. In a PID namespace, exiting
    /// as its init is what kills the rest.
    unsafe fn supervise(&self, child: libc::pid_t, pidns: bool) -> ! {
        unsafe {
            let deadline = add(now(), self.timeout);
            let mut ended = Ended::TimedOut;
            // Accounting runs only where the namespace's own procfs lists the tree.
            let account = match self.account_bytes {
                Some(b) if pidns && self.proc_mount == ProcMount::Fresh => Some(b),
                _ => None,
            };
            let period = libc::timespec {
                tv_sec: 0,
                tv_nsec: (crate::tree::ACCOUNT_PERIOD_MS * 1_000_000) as libc::c_long,
            };
            let mut next_count = now();
            let mut over = false;
            loop {
                if let Some(limit) = account
                    && !over
                    && !before(now(), next_count)
                {
                    next_count = add(now(), period);
                    if crate::tree::tree_resident_bytes(self.page_bytes) > limit {
                        // Every process of the namespace but this init.
                        libc::kill(-1, libc::SIGKILL);
                        over = true;
                    }
                }
                let mut st = 0;
                let r = libc::waitpid(-1, &mut st, libc::WNOHANG);
                if r == child {
                    ended = Ended::Status(st);
                    break;
                }
                if r > 0 {
                    continue;
                }
                if r < 0 && errno() == libc::ECHILD {
                    break;
                }
                if !before(now(), deadline) {
                    break;
                }
                if self.control_fd >= 0 {
                    // A long-lived run: wait on the control pipe between reaps; its end
                    // of file (or anything written to it) ends the run.
                    let mut p = libc::pollfd {
                        fd: self.control_fd,
                        events: libc::POLLIN,
                        revents: 0,
                    };
                    if libc::poll(&mut p, 1, 10) > 0 && p.revents != 0 {
                        ended = Ended::Stopped;
                        break;
                    }
                    continue;
                }
                let pause = libc::timespec {
                    tv_sec: 0,
                    tv_nsec: 1_000_000,
                };
                libc::nanosleep(&pause, std::ptr::null_mut());
            }
            if !pidns {
                kill_tree();
            }
            report(
                self.report_fd,
                ended,
                pidns,
                u8::from(over) * REPORT_MEMORY_KILL,
            );
            libc::_exit(0)
        }
    }
}

/// The report's flag: the supervisor killed the tree over its memory bound (accounting).
pub(crate) const REPORT_MEMORY_KILL: u8 = 1;

/// Reads a supervisor report from the (non-blocking) read end of the report pipe: how
/// the run ended and whether it had a PID namespace.
pub fn read_report(fd: RawFd) -> Option<(Ended, bool)> {
    read_report_flags(fd).map(|(e, pidns, _)| (e, pidns))
}

/// [`read_report`] with the report's flags ([`REPORT_MEMORY_KILL`]).
pub(crate) fn read_report_flags(fd: RawFd) -> Option<(Ended, bool, u8)> {
    let mut b = [0u8; 8];
    // SAFETY: reading into a local buffer.
    let n = unsafe { libc::read(fd, b.as_mut_ptr().cast(), b.len()) };
    if n != 8 {
        return None;
    }
    let value = i32::from_ne_bytes([b[4], b[5], b[6], b[7]]);
    let ended = match b[0] {
        1 => Ended::Status(value),
        2 => Ended::TimedOut,
        3 => Ended::Stopped,
        _ => return None,
    };
    Some((ended, b[1] == 1, b[2]))
}

unsafe fn report(fd: RawFd, ended: Ended, pidns: bool, flags: u8) {
    let (tag, value) = match ended {
        Ended::Status(s) => (1u8, s),
        Ended::TimedOut => (2u8, 0),
        Ended::Stopped => (3u8, 0),
    };
    let v = value.to_ne_bytes();
    let b = [tag, u8::from(pidns), flags, 0, v[0], v[1], v[2], v[3]];
    // SAFETY: writing a local buffer to our pipe.
    unsafe {
        libc::write(fd, b.as_ptr().cast(), b.len());
    }
}

/// Kills every descendant of this (subreaper) process: kill the current children,
/// reap one, repeat — orphans of the killed come back to us as children — until
/// there is no child left.
unsafe fn kill_tree() {
    unsafe {
        loop {
            for_each_child(|pid| {
                libc::kill(pid, libc::SIGKILL);
            });
            let mut st = 0;
            let r = libc::waitpid(-1, &mut st, 0);
            if r < 0 && errno() != libc::EINTR {
                return;
            }
        }
    }
}

/// Calls `f` with each pid listed in `/proc/thread-self/children`.
unsafe fn for_each_child(mut f: impl FnMut(libc::pid_t)) {
    unsafe {
        let fd = libc::open(
            c"/proc/thread-self/children".as_ptr(),
            libc::O_RDONLY | libc::O_CLOEXEC,
        );
        if fd < 0 {
            return;
        }
        let mut buf = [0u8; 4096];
        let mut cur: Option<libc::pid_t> = None;
        loop {
            let n = libc::read(fd, buf.as_mut_ptr().cast(), buf.len());
            if n <= 0 {
                break;
            }
            for &c in &buf[..n as usize] {
                if c.is_ascii_digit() {
                    cur = Some(cur.unwrap_or(0) * 10 + libc::pid_t::from(c - b'0'));
                } else if let Some(p) = cur.take() {
                    f(p);
                }
            }
        }
        if let Some(p) = cur {
            f(p);
        }
        libc::close(fd);
    }
}

/// Closes every descriptor but `keep` and `also` (stdio included; `also` may be -1).
unsafe fn close_all_but(keep: RawFd, also: RawFd) {
    unsafe {
        let (lo, hi) = if also < 0 {
            (keep, keep)
        } else {
            (keep.min(also), keep.max(also))
        };
        let range =
            |from: RawFd, to: u32| libc::syscall(libc::SYS_close_range, from as u32, to, 0u32) == 0;
        let ok = lo > 0
            && range(0, (lo - 1) as u32)
            && (hi == lo || hi == lo + 1 || range(lo + 1, (hi - 1) as u32))
            && range(hi + 1, u32::MAX);
        if !ok {
            for fd in 0..4096 {
                if fd != keep && fd != also {
                    libc::close(fd);
                }
            }
        }
    }
}

fn set_limit(resource: libc::__rlimit_resource_t, soft: u64, hard: u64) -> io::Result<()> {
    let lim = libc::rlimit {
        rlim_cur: soft as libc::rlim_t,
        rlim_max: hard as libc::rlim_t,
    };
    // SAFETY: plain syscall with a valid pointer.
    if unsafe { libc::setrlimit(resource, &lim) } != 0 {
        return Err(io::Error::last_os_error());
    }
    Ok(())
}

fn errno() -> libc::c_int {
    io::Error::last_os_error().raw_os_error().unwrap_or(0)
}

fn now() -> libc::timespec {
    let mut t = libc::timespec {
        tv_sec: 0,
        tv_nsec: 0,
    };
    // SAFETY: valid out pointer.
    unsafe { libc::clock_gettime(libc::CLOCK_MONOTONIC, &mut t) };
    t
}

fn add(a: libc::timespec, b: libc::timespec) -> libc::timespec {
    let mut nsec = a.tv_nsec + b.tv_nsec;
    let mut sec = a.tv_sec + b.tv_sec;
    if nsec >= 1_000_000_000 {
        nsec -= 1_000_000_000;
        sec += 1;
    }
    libc::timespec {
        tv_sec: sec,
        tv_nsec: nsec,
    }
}

fn before(a: libc::timespec, b: libc::timespec) -> bool {
    (a.tv_sec, a.tv_nsec) < (b.tv_sec, b.tv_nsec)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn this_kernel_is_probed_and_described() {
        let s = Support::current();
        let d = s.describe();
        eprintln!(
            "sandbox support: {s:?}\n  {d}\n  missing: {:?}",
            s.missing()
        );
        assert_eq!(s.confines(), s.missing().is_empty());
        assert!(d.contains("files") && d.contains("descendants"), "{d}");
    }

    #[test]
    fn the_filter_builds_on_supported_architectures() {
        if matches!(std::env::consts::ARCH, "x86_64" | "aarch64" | "riscv64") {
            assert!(filter(false).is_some());
            assert!(filter(true).is_some());
        }
    }
}
