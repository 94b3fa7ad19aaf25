//! The confinement of third-party programs gauntlet runs: external detectors first, and
//! every other program that is not ours (benchmark sidecars, MCP servers, command targets).
//!
//! Why this exists: an external detector is a third-party executable run over every
//! scenario. Resource limits alone do not stop it from truncating, deleting or creating
//! files, opening network connections, or leaving a daemon behind. Each run is confined
//! by the kernel, with no root needed, in layers:
//!
//! - **Files** ([Landlock], ABI ≥ [`MIN_LANDLOCK_ABI`], Linux ≥ 6.2): the whole
//!   filesystem is read-only (read, list, execute), except a private scratch directory
//!   created for the run and removed after it (`$TMPDIR`, `$HOME`, each file up to
//!   [`SCRATCH_FILE_BYTES`]) and `/dev/null`. Writing, truncating, creating, deleting,
//!   renaming and linking files anywhere else fail with `EACCES`. On ABI ≥ 4 TCP bind and
//!   connect are denied as well; on ABI ≥ 6 the detector cannot signal processes or
//!   reach abstract unix sockets outside its sandbox. Metadata changes, which Landlock
//!   does not cover (mode, owner, extended attributes, times), are denied by the
//!   seccomp filter below, everywhere.
//! - **Network** (seccomp-bpf): `socket(2)` fails for every address family, unix
//!   included (`socketpair` stays: it reaches nothing outside), and io_uring, which
//!   could open sockets behind the filter's back, is unavailable. Where the kernel lets
//!   an unprivileged process create namespaces, the run also gets an empty network
//!   namespace. The same filter denies namespace, mount, module, kexec, bpf, perf,
//!   ptrace, keyring and reboot calls.
//! - **Processes**: when namespaces are available the detector runs in a new user, PID
//!   and network namespace under a small init that ends the namespace when the detector
//!   exits or its time is up, so the kernel kills every descendant (double-forked and
//!   `setsid` ones included); the detector holds no capability outside its namespace.
//!   The run also gets a mount namespace of its own whose `/proc` is a fresh procfs of
//!   its PID namespace (an empty one where the kernel refuses that): it sees its own
//!   processes only, never the host's command lines.
//!   Elsewhere a supervisor process is made child subreaper: every orphaned descendant
//!   is re-parented to it, and it kills the whole tree at the end.
//! - **Resources**: CPU time, per-process memory and file size are rlimits; a long-lived
//!   program's whole tree is also bounded in memory and in tasks, by a cgroup of its own
//!   where the machine allows one, else by the supervisor's accounting and
//!   `RLIMIT_NPROC` (`tree`; [`Process::bounds`] says which applies to a run).
//!
//! A kernel that cannot provide all three layers ([`Support::confines`]) makes
//! the external-detector runner (`gauntlet_detect::external`) refuse the detector, with the reason,
//! unless the user opts out explicitly (`--allow-unconfined-detectors`); an opted-out
//! run still gets every layer the kernel has, and writes no file (`RLIMIT_FSIZE` 0)
//! when Landlock is missing.
//!
//! Everything between `fork` and `exec` below is async-signal-safe: plain syscalls on
//! data prepared in the parent, no allocation.
//!
//! [Landlock]: https://docs.kernel.org/userspace-api/landlock.html

// Files are read through `gauntlet_core::files` only (clippy.toml says why).
#![cfg_attr(not(test), deny(clippy::disallowed_methods))]

mod confine;
mod process;
mod tree;

pub use confine::{
    Ended, MIN_LANDLOCK_ABI, Memory, Namespaces, PrepareError, Prepared, ProcMount,
    SCRATCH_FILE_BYTES, Support, read_report,
};
pub use process::{Process, SpawnError, Spec};
pub use tree::{
    ACCOUNT_PERIOD_MS, CgroupSite, CgroupVersion, DEFAULT_MAX_TASKS, ProcView, TreeBounds,
    TreeMemory, TreeTasks,
};
