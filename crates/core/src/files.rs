//! Reading the files a user (or whoever wrote them) names: regular files only, with a
//! byte cap per kind of file.
//!
//! A path in a config, a `--flag` or a stored run can name anything: `/dev/zero` (endless
//! zeros), `/dev/urandom`, a named pipe (blocks until a writer comes), a directory, a
//! 2 GB sparse file. Every file gauntlet reads goes through [`open`] or [`read`], which
//! open without blocking, refuse anything but a regular file, refuse a file larger than
//! its kind's cap before reading a byte, and stop reading at the cap (a file that grows
//! meanwhile is refused too). Each error names the file and what to do.
//!
//! The caps ([`Kind`]) are generous for real inputs and small enough that a hostile one
//! cannot exhaust memory: run configs and price tables are hand-written, datasets share
//! the 64 MiB download cap, stored run artefacts are bounded by what a run writes.

use std::fmt;
use std::fs::File;
use std::io::{self, BufRead, Read};
use std::os::unix::fs::OpenOptionsExt;
use std::path::{Path, PathBuf};

/// A kind of file: what it is called in messages and how many bytes it may hold.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Kind {
    /// What the file is, for messages ("run config", "price table", …).
    pub what: &'static str,
    /// The largest size accepted, in bytes.
    pub max_bytes: u64,
}

const MIB: u64 = 1 << 20;

impl Kind {
    /// A run config (YAML), or a target spec file: hand-written.
    pub const CONFIG: Kind = Kind {
        what: "config file",
        max_bytes: 16 * MIB,
    };
    /// A price table (JSON).
    pub const PRICE_TABLE: Kind = Kind {
        what: "price table",
        max_bytes: 16 * MIB,
    };
    /// A dataset or scenario suite file: the download cap of `gauntlet-fetch`.
    pub const DATASET: Kind = Kind {
        what: "dataset file",
        max_bytes: 64 * MIB,
    };
    /// An agent-exam `corpus.pin` (two lines and a header).
    pub const CORPUS_PIN: Kind = Kind {
        what: "corpus pin",
        max_bytes: 64 << 10,
    };
    /// An agent-exam corpus manifest (one line per scenario file).
    pub const CORPUS_MANIFEST: Kind = Kind {
        what: "corpus manifest",
        max_bytes: 64 * MIB,
    };
    /// One agent-exam scenario file.
    pub const SCENARIO: Kind = Kind {
        what: "scenario file",
        max_bytes: 16 * MIB,
    };
    /// A stored run's `run.json` or `manifest.json`.
    pub const RUN_METADATA: Kind = Kind {
        what: "run metadata file",
        max_bytes: 64 * MIB,
    };
    /// A stored run's `results.json` (cells × metrics and a few examples each).
    pub const RESULTS: Kind = Kind {
        what: "results file",
        max_bytes: 1 << 30,
    };
    /// Any artefact of a stored run, hashed as a stream to check it against the run's
    /// manifest (never held whole).
    pub const RUN_ARTEFACT: Kind = Kind {
        what: "run artefact",
        max_bytes: u64::MAX,
    };
    /// A stored run's `transcripts.jsonl`: streamed, never read whole, so only the
    /// length of one line is capped ([`TRANSCRIPT_LINE_MAX`]).
    pub const TRANSCRIPTS: Kind = Kind {
        what: "transcripts file",
        max_bytes: u64::MAX,
    };
}

impl Kind {
    /// A run's call journal (`journal.jsonl`): streamed line by line, never read whole,
    /// so only the length of one line is capped ([`TRANSCRIPT_LINE_MAX`]).
    pub const JOURNAL: Kind = Kind {
        what: "call journal",
        max_bytes: u64::MAX,
    };
    /// A labelled data file of `judge-eval` or `label --csv-in` (CSV or JSONL).
    pub const LABELS: Kind = Kind {
        what: "label file",
        max_bytes: 256 * MIB,
    };
    /// A file read only for its start (a marker file's identity, a line to locate):
    /// the caller caps what it takes; the file itself may be any size.
    pub const ANY_SIZE: Kind = Kind {
        what: "file",
        max_bytes: u64::MAX,
    };
}

/// The longest transcript line a stored run may hold: a unit's attempts carry whole
/// conversations (a live reply is capped at 32 MiB by the transport; escaping can grow
/// it up to six times).
pub const TRANSCRIPT_LINE_MAX: u64 = 512 * MIB;

/// Why a file could not be read. Every variant names the file.
#[derive(Debug, thiserror::Error)]
pub enum ReadError {
    #[error(
        "{}: {found}, not a regular file; a {what} must be a regular file (gauntlet does not read devices, pipes or directories)",
        path.display()
    )]
    NotRegular {
        path: PathBuf,
        what: &'static str,
        found: &'static str,
    },
    #[error(
        "{}: {} bytes, more than the {} a {what} may hold; is it the right file?",
        path.display(), size.map_or("at least that many".to_string(), |s| s.to_string()), Bytes(*max)
    )]
    TooLarge {
        path: PathBuf,
        what: &'static str,
        /// The size, when known (a file can also grow past the cap while it is read).
        size: Option<u64>,
        max: u64,
    },
    #[error("{}: a {what} must be UTF-8 text", path.display())]
    NotUtf8 { path: PathBuf, what: &'static str },
    #[error("cannot read {}: {source}", path.display())]
    Io { path: PathBuf, source: io::Error },
}

impl ReadError {
    /// The I/O error kind, when the file could not be opened or read (e.g. `NotFound`).
    pub fn io_kind(&self) -> Option<io::ErrorKind> {
        match self {
            ReadError::Io { source, .. } => Some(source.kind()),
            _ => None,
        }
    }

    /// The error as an `io::Error` whose message does not repeat the path, for callers
    /// whose own errors print `<path>: <io error>`.
    pub fn into_io(self) -> io::Error {
        match self {
            ReadError::Io { source, .. } => source,
            ReadError::NotRegular { what, found, .. } => io::Error::new(
                io::ErrorKind::InvalidInput,
                format!("{found}, not a regular file; a {what} must be a regular file"),
            ),
            ReadError::TooLarge {
                what, size, max, ..
            } => io::Error::new(
                io::ErrorKind::FileTooLarge,
                format!(
                    "{} bytes, more than the {} a {what} may hold",
                    size.map_or("at least that many".to_string(), |s| s.to_string()),
                    Bytes(max)
                ),
            ),
            ReadError::NotUtf8 { what, .. } => io::Error::new(
                io::ErrorKind::InvalidData,
                format!("a {what} must be UTF-8 text"),
            ),
        }
    }
}

/// A byte count for messages: `16 MiB`, `64 KiB`, `512 bytes`.
struct Bytes(u64);

impl fmt::Display for Bytes {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self.0 {
            n if n >= MIB && n % MIB == 0 => write!(f, "{} MiB", n / MIB),
            n if n >= 1024 && n % 1024 == 0 => write!(f, "{} KiB", n / 1024),
            n => write!(f, "{n} bytes"),
        }
    }
}

/// An open regular file of a known kind, read with its cap enforced (see [`open`]).
pub struct Capped {
    inner: io::Take<File>,
    path: PathBuf,
    kind: Kind,
    /// Size when opened.
    pub len: u64,
}

impl Capped {
    pub fn path(&self) -> &Path {
        &self.path
    }

    /// The verified regular file itself, for a reader that seeks or bounds what it
    /// reads on its own (a transcript read a window of lines at a time).
    pub fn into_file(self) -> File {
        self.inner.into_inner()
    }

    /// The open file, for what reading does not cover (a lock, a positioned read of
    /// the verified regular file). Reading through it bypasses the cap.
    pub fn file(&self) -> &File {
        self.inner.get_ref()
    }

    fn too_large(&self) -> io::Error {
        io::Error::new(
            io::ErrorKind::FileTooLarge,
            ReadError::TooLarge {
                path: self.path.clone(),
                what: self.kind.what,
                size: None,
                max: self.kind.max_bytes,
            }
            .to_string(),
        )
    }
}

impl Read for Capped {
    /// Reads at most the kind's cap; one byte more is an error (the file grew).
    fn read(&mut self, buf: &mut [u8]) -> io::Result<usize> {
        let n = self.inner.read(buf)?;
        if n == 0 && self.inner.limit() == 0 {
            // At the cap: is there more?
            let mut probe = [0u8; 1];
            if self.inner.get_mut().read(&mut probe)? > 0 {
                return Err(self.too_large());
            }
        }
        Ok(n)
    }
}

/// What a non-regular file is, for messages.
fn describe(ft: std::fs::FileType) -> &'static str {
    use std::os::unix::fs::FileTypeExt;
    if ft.is_dir() {
        "a directory"
    } else if ft.is_fifo() {
        "a named pipe"
    } else if ft.is_char_device() {
        "a character device"
    } else if ft.is_block_device() {
        "a block device"
    } else if ft.is_socket() {
        "a socket"
    } else {
        "not a regular file"
    }
}

/// Opens `path` as a `kind` file: without blocking (a named pipe would wait for a
/// writer), refusing anything but a regular file (symbolic links are followed to
/// one) and a file over the cap.
pub fn open(path: &Path, kind: Kind) -> Result<Capped, ReadError> {
    let io_err = |source| ReadError::Io {
        path: path.to_path_buf(),
        source,
    };
    let file = std::fs::OpenOptions::new()
        .read(true)
        .custom_flags(libc::O_NONBLOCK | libc::O_NOCTTY)
        .open(path)
        .map_err(io_err)?;
    let meta = file.metadata().map_err(io_err)?;
    if !meta.is_file() {
        return Err(ReadError::NotRegular {
            path: path.to_path_buf(),
            what: kind.what,
            found: describe(meta.file_type()),
        });
    }
    if meta.len() > kind.max_bytes {
        return Err(ReadError::TooLarge {
            path: path.to_path_buf(),
            what: kind.what,
            size: Some(meta.len()),
            max: kind.max_bytes,
        });
    }
    Ok(Capped {
        inner: file.take(kind.max_bytes),
        path: path.to_path_buf(),
        kind,
        len: meta.len(),
    })
}

/// [`open`], with a missing file `None` instead of an error.
pub fn open_if_exists(path: &Path, kind: Kind) -> Result<Option<Capped>, ReadError> {
    match open(path, kind) {
        Ok(f) => Ok(Some(f)),
        Err(e) if e.io_kind() == Some(io::ErrorKind::NotFound) => Ok(None),
        Err(e) => Err(e),
    }
}

/// Reads a whole `kind` file (see [`open`]).
pub fn read(path: &Path, kind: Kind) -> Result<Vec<u8>, ReadError> {
    let mut f = open(path, kind)?;
    let mut bytes = Vec::with_capacity(f.len.min(kind.max_bytes) as usize);
    f.read_to_end(&mut bytes)
        .map_err(|e| read_error(path, kind, e))?;
    Ok(bytes)
}

/// Reads a whole `kind` file as UTF-8 text (see [`open`]).
pub fn read_to_string(path: &Path, kind: Kind) -> Result<String, ReadError> {
    String::from_utf8(read(path, kind)?).map_err(|_| ReadError::NotUtf8 {
        path: path.to_path_buf(),
        what: kind.what,
    })
}

/// A read error of an open [`Capped`] file: the cap, or the I/O error.
pub fn read_error(path: &Path, kind: Kind, e: io::Error) -> ReadError {
    if e.kind() == io::ErrorKind::FileTooLarge {
        ReadError::TooLarge {
            path: path.to_path_buf(),
            what: kind.what,
            size: None,
            max: kind.max_bytes,
        }
    } else {
        ReadError::Io {
            path: path.to_path_buf(),
            source: e,
        }
    }
}

/// Reads one line (up to and including `\n`) into `buf`, at most `max` bytes: a longer
/// line is an `InvalidData` error instead of an unbounded allocation. Returns the bytes
/// read (0 at the end of the input).
pub fn read_line_capped<R: BufRead>(r: &mut R, buf: &mut Vec<u8>, max: u64) -> io::Result<usize> {
    let n = r.take(max).read_until(b'\n', buf)?;
    if n as u64 == max && buf.last() != Some(&b'\n') {
        return Err(io::Error::new(
            io::ErrorKind::InvalidData,
            format!("a line longer than {}", Bytes(max)),
        ));
    }
    Ok(n)
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::io::Write;

    const SMALL: Kind = Kind {
        what: "test file",
        max_bytes: 10,
    };

    #[test]
    fn devices_are_refused_without_reading() {
        for dev in ["/dev/zero", "/dev/urandom", "/dev/null"] {
            let e = read(Path::new(dev), Kind::CONFIG).unwrap_err();
            let msg = e.to_string();
            assert!(matches!(e, ReadError::NotRegular { .. }), "{dev}: {msg}");
            assert!(
                msg.contains(dev) && msg.contains("character device"),
                "{msg}"
            );
        }
    }

    #[test]
    fn directories_and_pipes_are_refused_without_blocking() {
        let dir = tempfile::tempdir().unwrap();
        let e = read(dir.path(), Kind::CONFIG).unwrap_err();
        assert!(e.to_string().contains("a directory"), "{e}");
        let fifo = dir.path().join("pipe");
        let c = std::ffi::CString::new(fifo.to_str().unwrap()).unwrap();
        assert_eq!(unsafe { libc::mkfifo(c.as_ptr(), 0o600) }, 0);
        // No writer ever comes: a blocking open would hang this test.
        let e = read(&fifo, Kind::CONFIG).unwrap_err();
        assert!(e.to_string().contains("named pipe"), "{e}");
    }

    #[test]
    fn caps_are_exact_and_checked_before_reading() {
        let dir = tempfile::tempdir().unwrap();
        let p = dir.path().join("f");
        std::fs::write(&p, b"0123456789").unwrap();
        assert_eq!(read(&p, SMALL).unwrap(), b"0123456789");
        std::fs::write(&p, b"0123456789A").unwrap();
        let e = read(&p, SMALL).unwrap_err();
        assert!(
            matches!(e, ReadError::TooLarge { size: Some(11), .. }),
            "{e}"
        );
        assert!(e.to_string().contains("10 bytes"), "{e}");
        // A sparse file is refused by its size, instantly, whatever it holds.
        let big = dir.path().join("sparse");
        let f = File::create(&big).unwrap();
        f.set_len(4 << 30).unwrap();
        let e = read(&big, Kind::DATASET).unwrap_err();
        assert!(e.to_string().contains("64 MiB"), "{e}");
    }

    #[test]
    fn a_file_growing_past_the_cap_is_refused() {
        let dir = tempfile::tempdir().unwrap();
        let p = dir.path().join("f");
        std::fs::write(&p, b"01234").unwrap();
        let mut f = open(&p, SMALL).unwrap();
        std::fs::OpenOptions::new()
            .append(true)
            .open(&p)
            .unwrap()
            .write_all(b"56789ABC")
            .unwrap();
        let mut out = Vec::new();
        let e = f.read_to_end(&mut out).unwrap_err();
        assert_eq!(e.kind(), io::ErrorKind::FileTooLarge);
        assert!(e.to_string().contains(p.to_str().unwrap()), "{e}");
    }

    #[test]
    fn missing_and_non_utf8_files_are_named() {
        let dir = tempfile::tempdir().unwrap();
        let p = dir.path().join("absent.yaml");
        let e = read(&p, Kind::CONFIG).unwrap_err();
        assert_eq!(e.io_kind(), Some(io::ErrorKind::NotFound));
        assert!(e.to_string().contains("absent.yaml"), "{e}");
        std::fs::write(&p, [0xff, 0xfe]).unwrap();
        let e = read_to_string(&p, Kind::CONFIG).unwrap_err();
        assert!(e.to_string().contains("UTF-8"), "{e}");
    }

    #[test]
    fn lines_are_capped() {
        let mut r = io::Cursor::new(b"short\nthis line is long\nend".to_vec());
        let mut buf = Vec::new();
        assert_eq!(read_line_capped(&mut r, &mut buf, 8).unwrap(), 6);
        buf.clear();
        assert!(read_line_capped(&mut r, &mut buf, 8).is_err());
        let mut r = io::Cursor::new(b"exactly\nend".to_vec());
        buf.clear();
        assert_eq!(read_line_capped(&mut r, &mut buf, 8).unwrap(), 8);
        buf.clear();
        assert_eq!(read_line_capped(&mut r, &mut buf, 8).unwrap(), 3);
        buf.clear();
        assert_eq!(read_line_capped(&mut r, &mut buf, 8).unwrap(), 0);
    }
}
