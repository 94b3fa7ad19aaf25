//! The allocator and how the process returns memory: mimalloc as the global
//! allocator, transparent huge pages off, the purge delay, and an explicit collect.

/// mimalloc: a run allocates and frees several short-lived strings per attempt on every
/// worker thread (prompts, replies, transcript lines); glibc malloc spent ~7% of the
/// leakage benchmark's CPU in them (see BENCHMARKS.md).
#[global_allocator]
static GLOBAL: mimalloc::MiMalloc = mimalloc::MiMalloc;

/// Keeps the kernel from backing the allocator's memory with 2 MiB transparent huge
/// pages. mimalloc is built without asking for them (`no_thp`), which is enough where the
/// kernel's THP mode is "madvise"; where it is "always", every 2 MiB of its arenas that
/// a run touched would count whole in RSS (20 MiB more on the offline benchmark) and be
/// zeroed at a fault's cost. Best effort: a kernel without the flag changes nothing.
pub(crate) fn no_transparent_huge_pages() {
    #[cfg(target_os = "linux")]
    let _ = rustix::thread::disable_transparent_huge_pages(true);
}

/// mimalloc's `mi_option_purge_delay`. Option numbers are mimalloc's C ABI: retired
/// options keep their slots so the numbering never shifts (`mi_option_e` in its
/// mimalloc.h); a test pins this one against the binding's own constant for the next.
const MI_OPTION_PURGE_DELAY: libmimalloc_sys::mi_option_t = 15;

/// How long mimalloc keeps freed memory before returning it to the OS, for `run` and
/// `merge` (its default is 1 s, 10 s for whole arenas).
const PURGE_DELAY_MS: std::ffi::c_long = 30;

/// Has mimalloc return freed memory to the OS after [`PURGE_DELAY_MS`] instead of its
/// default, for `run` and `merge`: a run frees every attempt's strings as it goes, and
/// with the default they stayed resident to the end. 30 ms rather than 1 ms: at 1 ms
/// pages freed by one chunk of units were returned and faulted back in by the next
/// (2–6% of the offline benchmarks' CPU); the one large free, the datasets' parse
/// buffers, is returned at once by [`release_freed_memory`]. The 1M-attempt offline run
/// peaks at 59–60 MiB this way, 57–58 MiB with 1 ms, 68 MiB with the default
/// (BENCHMARKS.md, "Memory"). The exams keep the default: the detect exam frees per
/// scenario on many threads, and prompt purging cost it 10–13% of its throughput.
pub(crate) fn prompt_purge() {
    // SAFETY: an integer option setter with no pointer arguments. mimalloc documents it
    // as not thread safe; `main` calls it before any thread is spawned.
    unsafe { libmimalloc_sys::mi_option_set(MI_OPTION_PURGE_DELAY, PURGE_DELAY_MS) };
}

/// Returns the memory this thread's heap has freed to the OS now, without waiting for
/// the purge delay: `run` calls it once its datasets are parsed (their parse buffers are
/// a run's largest one-time garbage).
pub(crate) fn release_freed_memory() {
    // SAFETY: no arguments but a flag; mimalloc collects the calling thread's heap.
    unsafe { libmimalloc_sys::mi_collect(true) };
}

#[cfg(test)]
mod tests {
    /// The hard-coded option number is mimalloc's purge delay: the binding exposes the
    /// option after it as a constant, and the value set reads back.
    #[test]
    fn the_purge_delay_option_number_is_mimallocs() {
        assert_eq!(
            libmimalloc_sys::mi_option_use_numa_nodes,
            super::MI_OPTION_PURGE_DELAY + 1
        );
        super::prompt_purge();
        // SAFETY: an integer option getter.
        let got = unsafe { libmimalloc_sys::mi_option_get(super::MI_OPTION_PURGE_DELAY) };
        assert_eq!(got, super::PURGE_DELAY_MS);
    }
}
