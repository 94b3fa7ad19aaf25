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
//! A rename replaces whatever the name pointed at, so nothing but an absent name or a
//! regular file is ever renamed over: run as root, `--out /dev/null` used to turn the
//! machine's `/dev/null` into a regular file. [`write_atomic`] refuses any other kind of
//! file (a device, a named pipe, a directory, a symbolic link) with a message naming it;
//! [`write_output`], for a file the user named on the command line, also follows a
//! symbolic link to a regular file (the file is replaced, the link kept) and writes
//! straight into a character device or a named pipe (`/dev/stdout`, `/dev/null`, a FIFO
//! read by another program), which it never replaces.
//!
//! It lives in core (the one I/O helper here) because the red-team engine and the
//! agent exam both write artefacts and neither may depend on the other.

use std::fs::{self, File};
use std::io::{self, Write};
use std::os::unix::fs::FileTypeExt;
use std::path::{Path, PathBuf};

/// Writes `bytes` to `path` via `<path>.tmp` and a rename; on failure `path` keeps
/// its previous content and no temporary file is left behind. `path` must be absent or
/// a regular file ([`check_replaceable`]).
pub fn write_atomic(path: &Path, bytes: &[u8]) -> io::Result<()> {
    check_replaceable(path)?;
    write_staged(path, bytes, true)
}

/// What is at a path an artefact is about to be renamed over, when it is anything but
/// a regular file: `a character device`, `a symbolic link`, ….
fn not_regular(path: &Path) -> io::Result<Option<&'static str>> {
    let ft = match fs::symlink_metadata(path) {
        Ok(m) => m.file_type(),
        Err(e) if e.kind() == io::ErrorKind::NotFound => return Ok(None),
        Err(e) => return Err(e),
    };
    Ok(if ft.is_file() {
        None
    } else {
        Some(kind_of(ft))
    })
}

fn kind_of(ft: fs::FileType) -> &'static str {
    if ft.is_symlink() {
        "a symbolic link"
    } else if ft.is_dir() {
        "a directory"
    } else if ft.is_char_device() {
        "a character device"
    } else if ft.is_block_device() {
        "a block device"
    } else if ft.is_fifo() {
        "a named pipe"
    } else if ft.is_socket() {
        "a socket"
    } else {
        "not a regular file"
    }
}

/// Refuses a `path` that exists and is not a regular file: an atomic write renames over
/// it, which would replace the device, pipe, link or directory itself.
pub fn check_replaceable(path: &Path) -> io::Result<()> {
    match not_regular(path)? {
        None => Ok(()),
        Some(what) => Err(io::Error::new(
            io::ErrorKind::InvalidInput,
            format!(
                "{} is {what}, not a regular file: gauntlet writes an artefact by replacing the file whole, and never replaces anything else; remove it or write elsewhere",
                path.display()
            ),
        )),
    }
}

/// Writes a file the user named (`--out FILE`): a regular file or a new name is written
/// atomically as by [`write_atomic`]; a symbolic link is followed (a link to a regular
/// file replaces that file and keeps the link); a character device or a named pipe
/// (`/dev/stdout`, `/dev/null`, a FIFO) is written straight into and never replaced;
/// anything else (a directory, a block device, a socket, a dangling link) is refused
/// with a message naming it.
pub fn write_output(path: &Path, bytes: &[u8]) -> io::Result<()> {
    let refuse = |what: &str| {
        io::Error::new(
            io::ErrorKind::InvalidInput,
            format!(
                "{} is {what}: gauntlet writes its output into a regular file (replaced whole), a character device or a named pipe (e.g. /dev/stdout); name one of those",
                path.display()
            ),
        )
    };
    let Some(what) = not_regular(path)? else {
        return write_staged(path, bytes, true);
    };
    let ft = if what == "a symbolic link" {
        match fs::metadata(path) {
            Ok(m) => m.file_type(),
            Err(e) if e.kind() == io::ErrorKind::NotFound => {
                return Err(refuse("a symbolic link to nothing"));
            }
            Err(e) => return Err(e),
        }
    } else {
        fs::symlink_metadata(path)?.file_type()
    };
    if ft.is_file() {
        let real = fs::canonicalize(path)?;
        return write_staged(&real, bytes, true);
    }
    if ft.is_char_device() || ft.is_fifo() {
        let mut f = fs::OpenOptions::new().write(true).open(path)?;
        return f.write_all(bytes).and_then(|()| f.flush());
    }
    Err(refuse(kind_of(ft)))
}

/// [`write_output`], with an error that names the file (`cannot write PATH: why`).
pub fn write_output_named(path: &Path, bytes: &[u8]) -> io::Result<()> {
    write_output(path, bytes)
        .map_err(|e| io::Error::new(e.kind(), format!("cannot write {}: {e}", path.display())))
}

/// [`write_atomic`] without the flush to disk: still all-or-nothing against a failed
/// write (a full disk reports at `write`) and a killed process, but after a power loss
/// the file may be empty. For bulk per-item artefacts whose index file (written last,
/// flushed) is what readers trust; one flush per file costs milliseconds each.
pub fn write_atomic_unflushed(path: &Path, bytes: &[u8]) -> io::Result<()> {
    check_replaceable(path)?;
    write_staged(path, bytes, false)
}

fn write_staged(path: &Path, bytes: &[u8], flush: bool) -> io::Result<()> {
    stage(path, flush, |f| f.write_all(bytes))
}

/// Writes `<path>.tmp` with `fill`, flushes it to disk when `flush`, renames it over
/// `path`; on any failure removes it.
fn stage(
    path: &Path,
    flush: bool,
    fill: impl FnOnce(&mut File) -> io::Result<()>,
) -> io::Result<()> {
    let tmp = tmp_path(path);
    let result = (|| {
        let mut f = File::create(&tmp)?;
        fill(&mut f)?;
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

/// [`write_atomic`] (or, with `flush` false, [`write_atomic_unflushed`]) of bytes made
/// by `fill` as it goes, through a buffer: for an artefact too large to hold whole.
/// `fill`'s error leaves `path` as it was, like a failed write.
pub fn write_atomic_with(
    path: &Path,
    flush: bool,
    fill: impl FnOnce(&mut dyn Write) -> io::Result<()>,
) -> io::Result<()> {
    check_replaceable(path)?;
    stage(path, flush, |f| {
        let mut w = io::BufWriter::with_capacity(1 << 16, f);
        fill(&mut w)?;
        w.flush()
    })
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

    /// A character device, a named pipe, a symbolic link and a directory are never
    /// renamed over by the atomic writer: each is refused, named, and left as it was.
    #[test]
    fn never_replaces_what_is_not_a_regular_file() {
        let dir = tempfile_dir();
        let fifo = dir.join("fifo");
        assert!(
            std::process::Command::new("mkfifo")
                .arg(&fifo)
                .status()
                .unwrap()
                .success()
        );
        let link = dir.join("link");
        std::os::unix::fs::symlink(dir.join("elsewhere"), &link).unwrap();
        let sub = dir.join("sub");
        fs::create_dir(&sub).unwrap();
        for (p, what) in [
            (Path::new("/dev/null"), "a character device"),
            (&fifo, "a named pipe"),
            (&link, "a symbolic link"),
            (&sub, "a directory"),
        ] {
            let before = fs::symlink_metadata(p).unwrap().file_type();
            for e in [
                write_atomic(p, b"x").unwrap_err(),
                write_atomic_unflushed(p, b"x").unwrap_err(),
            ] {
                assert!(e.to_string().contains(what), "{e}");
                assert!(e.to_string().contains(&*p.to_string_lossy()), "{e}");
            }
            assert_eq!(fs::symlink_metadata(p).unwrap().file_type(), before);
            assert!(!tmp_path(p).exists());
        }
        assert!(!dir.join("elsewhere").exists());
        let _ = fs::remove_dir_all(&dir);
    }

    /// A named output: written into a device (never replacing it), through a link to a
    /// regular file (the link stays), atomically into a new or regular file; a dangling
    /// link and a directory are refused.
    #[test]
    fn a_named_output_goes_into_devices_and_through_links() {
        let dir = tempfile_dir();
        write_output(Path::new("/dev/null"), b"gone").unwrap();
        assert!(
            fs::symlink_metadata("/dev/null")
                .unwrap()
                .file_type()
                .is_char_device()
        );
        let real = dir.join("real.json");
        fs::write(&real, "old").unwrap();
        let link = dir.join("link.json");
        std::os::unix::fs::symlink(&real, &link).unwrap();
        write_output(&link, b"new").unwrap();
        assert!(
            fs::symlink_metadata(&link)
                .unwrap()
                .file_type()
                .is_symlink()
        );
        assert_eq!(fs::read(&real).unwrap(), b"new");
        let fresh = dir.join("fresh.json");
        write_output(&fresh, b"1").unwrap();
        assert_eq!(fs::read(&fresh).unwrap(), b"1");
        let dangling = dir.join("dangling");
        std::os::unix::fs::symlink(dir.join("nothing"), &dangling).unwrap();
        let e = write_output_named(&dangling, b"1").unwrap_err();
        assert!(e.to_string().contains("a symbolic link to nothing"), "{e}");
        assert!(!dir.join("nothing").exists());
        let e = write_output(&dir, b"1").unwrap_err();
        assert!(e.to_string().contains("a directory"), "{e}");
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
