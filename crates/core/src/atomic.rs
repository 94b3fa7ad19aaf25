//! The atomic artefact writer every gauntlet surface writes its files through.
//!
//! Why this exists: a report written in place is torn by a full disk, a crash or a kill
//! in the middle of the write, and the previous good version is lost with it. Here the
//! bytes go to `<path>.tmp` beside the target (same directory, so the same filesystem),
//! are flushed to disk, and the temporary file is renamed over the target: a reader
//! sees the old file or the new one, never half of one. On any failure the temporary
//! file is removed and the target is left untouched. New files get the mode the
//! process umask gives (`0666 & !umask`), like any file the user creates.
//!
//! It lives in core (the one I/O helper here) because the red-team engine and the
//! agent exam both write artefacts and neither may depend on the other.

use std::fs::{self, File};
use std::io::{self, Write};
use std::path::{Path, PathBuf};

/// Writes `bytes` to `path` via `<path>.tmp` and a rename; on failure `path` keeps
/// its previous content and no temporary file is left behind.
pub fn write_atomic(path: &Path, bytes: &[u8]) -> io::Result<()> {
    write_staged(path, bytes, true)
}

/// [`write_atomic`] without the flush to disk: still all-or-nothing against a failed
/// write (a full disk reports at `write`) and a killed process, but after a power loss
/// the file may be empty. For bulk per-item artefacts whose index file (written last,
/// flushed) is what readers trust; one flush per file costs milliseconds each.
pub fn write_atomic_unflushed(path: &Path, bytes: &[u8]) -> io::Result<()> {
    write_staged(path, bytes, false)
}

fn write_staged(path: &Path, bytes: &[u8], flush: bool) -> io::Result<()> {
    let tmp = tmp_path(path);
    let result = (|| {
        let mut f = File::create(&tmp)?;
        f.write_all(bytes)?;
        if flush {
            f.sync_all()?;
        }
        drop(f);
        fs::rename(&tmp, path)
    })();
    if result.is_err() {
        let _ = fs::remove_file(&tmp);
    }
    result
}

/// [`write_atomic`], with an error that names the file (`cannot write PATH: why`).
pub fn write_atomic_named(path: &Path, bytes: &[u8]) -> io::Result<()> {
    write_atomic(path, bytes)
        .map_err(|e| io::Error::new(e.kind(), format!("cannot write {}: {e}", path.display())))
}

/// [`write_atomic_unflushed`], with an error that names the file.
pub fn write_atomic_unflushed_named(path: &Path, bytes: &[u8]) -> io::Result<()> {
    write_atomic_unflushed(path, bytes)
        .map_err(|e| io::Error::new(e.kind(), format!("cannot write {}: {e}", path.display())))
}

/// `<path>.tmp`, the staging name used for atomic writes.
pub fn tmp_path(path: &Path) -> PathBuf {
    let mut s = path.as_os_str().to_owned();
    s.push(".tmp");
    PathBuf::from(s)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn replaces_the_target_and_leaves_no_temporary() {
        let dir = tempfile_dir();
        let p = dir.join("a.json");
        write_atomic(&p, b"one").unwrap();
        write_atomic(&p, b"two").unwrap();
        assert_eq!(fs::read(&p).unwrap(), b"two");
        assert!(!tmp_path(&p).exists());
        let _ = fs::remove_dir_all(&dir);
    }

    #[test]
    fn a_failed_write_keeps_the_previous_file_and_names_it() {
        let dir = tempfile_dir();
        let p = dir.join("report.json");
        write_atomic(&p, b"good").unwrap();
        // The staging name is taken by a directory: creating the temporary file fails.
        fs::create_dir(tmp_path(&p)).unwrap();
        let e = write_atomic_named(&p, b"new").unwrap_err();
        assert!(e.to_string().contains("report.json"), "{e}");
        assert_eq!(fs::read(&p).unwrap(), b"good");
        let _ = fs::remove_dir_all(&dir);
    }

    fn tempfile_dir() -> PathBuf {
        use std::sync::atomic::{AtomicU32, Ordering};
        static N: AtomicU32 = AtomicU32::new(0);
        let d = std::env::temp_dir().join(format!(
            "gauntlet-core-atomic-{}-{}",
            std::process::id(),
            N.fetch_add(1, Ordering::Relaxed)
        ));
        fs::create_dir_all(&d).unwrap();
        d
    }
}
