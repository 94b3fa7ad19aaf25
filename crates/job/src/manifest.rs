//! The manifest of an artefact directory: size, digest and line count of every file a
//! finished session wrote, written last (`manifest.json`), so a reader can tell a
//! directory left as its session left it from one truncated, edited, mixed with
//! another, or killed mid-session. Run directories (the engine's `rundir`), rescores,
//! shard directories of runs and of both exams, both exams' output directories and
//! merged directories carry one, and record what kind of directory they are
//! ([`Kind`], `"kind"`; manifests written before kinds were recorded have none and
//! still verify).
//!
//! A session removes `manifest.json` before it changes anything and writes it after its
//! last artefact, so a directory without one is mid-session or was killed;
//! [`Manifest::verify`] refuses such a directory, and any artefact that no longer
//! matches its size, line count or digest (BLAKE3 since manifest version 2; version 1
//! manifests, with sha256, still verify). Nothing inside such a directory may be a
//! symbolic link ([`refuse_symlinks`]). An entry's name is a path relative to the
//! directory: a file in it (`report.json`), or in one of its subdirectories
//! (`run-0/ZZ-a.json`, an exam's scenario runs); no component may be empty or start
//! with `.`.

pub use crate::kind::Kind;
use gauntlet_core::atomic::write_atomic;
use gauntlet_core::files;
use gauntlet_core::hash::to_hex;
use serde::{Deserialize, Serialize};
use sha2::{Digest, Sha256};
use std::collections::BTreeMap;
use std::fs;
use std::io::{self, Read, Write};
use std::path::{Path, PathBuf};

/// The name of the manifest a finished session writes last.
pub const MANIFEST: &str = "manifest.json";

/// Refuses a run directory that holds a symbolic link: gauntlet never follows one
/// inside a run directory (a dangling `journal.jsonl` link would be created wherever it
/// points).
pub fn refuse_symlinks(dir: &Path) -> io::Result<()> {
    for entry in fs::read_dir(dir)? {
        let entry = entry?;
        if entry.file_type()?.is_symlink() {
            return Err(io::Error::new(
                io::ErrorKind::InvalidInput,
                format!(
                    "{} is a symbolic link; gauntlet never follows links inside a run directory: remove it (or move the run directory aside)",
                    entry.path().display()
                ),
            ));
        }
    }
    Ok(())
}

/// Size, digest and (for JSONL files) line count of one artefact. The digest is BLAKE3
/// (manifest version 2): about 2.7 times sha256's speed with SHA-NI on the machines we
/// measure, and the transcripts of a large run are most of what a run hashes
/// (bench/HISTORY.md, "Hardening: journal checksums and run manifests"). A version 1 manifest's entries carry sha256 instead and
/// are verified with it. `b3sum FILE` prints the same BLAKE3 hex.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct FileEntry {
    pub bytes: u64,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub blake3: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub sha256: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub lines: Option<u64>,
}

/// Which digest an entry carries.
#[derive(Clone, Copy, PartialEq, Eq)]
enum Algo {
    Blake3,
    Sha256,
}

/// A streaming digest of either kind.
enum Digester {
    Blake3(Box<blake3::Hasher>),
    Sha256(Sha256),
}

impl Digester {
    fn new(algo: Algo) -> Self {
        match algo {
            Algo::Blake3 => Digester::Blake3(Box::new(blake3::Hasher::new())),
            Algo::Sha256 => Digester::Sha256(Sha256::new()),
        }
    }
    fn update(&mut self, b: &[u8]) {
        match self {
            Digester::Blake3(h) => {
                h.update(b);
            }
            Digester::Sha256(h) => h.update(b),
        }
    }
    fn entry(self, bytes: u64, lines: Option<u64>) -> FileEntry {
        let (blake3, sha256) = match self {
            Digester::Blake3(h) => (Some(h.finalize().to_hex().to_string()), None),
            Digester::Sha256(h) => (None, Some(to_hex(&h.finalize()))),
        };
        FileEntry {
            bytes,
            blake3,
            sha256,
            lines,
        }
    }
}

impl FileEntry {
    /// The entry of bytes in memory.
    pub fn of(bytes: &[u8]) -> FileEntry {
        let mut d = Digester::new(Algo::Blake3);
        d.update(bytes);
        d.entry(bytes.len() as u64, None)
    }

    /// Hashes a file as it is, streaming (lines are counted for `.jsonl` files).
    pub fn of_file(path: &Path) -> io::Result<FileEntry> {
        Self::of_file_like(path, None)
    }

    /// The digest as shown in errors: its kind and first 12 hex digits.
    fn digest_shown(&self) -> String {
        match (&self.blake3, &self.sha256) {
            (Some(d), _) => format!("blake3 {}", d.get(..12).unwrap_or(d)),
            (None, Some(d)) => format!("sha256 {}", d.get(..12).unwrap_or(d)),
            (None, None) => "no digest".into(),
        }
    }

    /// [`FileEntry::of_file`] made comparable with `want`: hashed with the digest `want`
    /// carries, and a file whose size is not `want`'s is not read: its entry has that
    /// size and no digest (it cannot match anyway).
    fn of_file_like(path: &Path, want: Option<&FileEntry>) -> io::Result<FileEntry> {
        Self::of_file_with(path, want, &mut vec![0u8; 1 << 20])
    }

    /// [`FileEntry::of_file_like`], reading through `buf` (one buffer for many files).
    pub(crate) fn of_file_with(
        path: &Path,
        want: Option<&FileEntry>,
        buf: &mut [u8],
    ) -> io::Result<FileEntry> {
        let mut f = files::open(path, files::Kind::RUN_ARTEFACT).map_err(io::Error::other)?;
        if want.is_some_and(|w| w.bytes != f.len) {
            return Ok(FileEntry {
                bytes: f.len,
                blake3: None,
                sha256: None,
                lines: None,
            });
        }
        let algo = match want {
            Some(w) if w.blake3.is_none() && w.sha256.is_some() => Algo::Sha256,
            _ => Algo::Blake3,
        };
        let mut h = Digester::new(algo);
        let (mut bytes, mut lines) = (0u64, 0u64);
        loop {
            let n = f.read(buf)?;
            if n == 0 {
                break;
            }
            h.update(&buf[..n]);
            bytes += n as u64;
            lines += memchr_count(&buf[..n]);
        }
        let jsonl = path.extension().is_some_and(|e| e == "jsonl");
        Ok(h.entry(bytes, jsonl.then_some(lines)))
    }
}

fn memchr_count(b: &[u8]) -> u64 {
    b.iter().filter(|&&c| c == b'\n').count() as u64
}

/// Writes a JSONL artefact and digests it as it goes: the bytes pass through one block
/// of [`HashingWriter::BLOCK`] bytes, which is hashed and written whenever it is full.
/// Lines arrive a few hundred bytes at a time, but BLAKE3 hashes several 1 KiB chunks at
/// once (SIMD) only within one long update, and a block boundary that is not a chunk
/// boundary sends the next chunk down the one-at-a-time path; so blocks are filled to the
/// byte before they are hashed (3.6–3.8 GB/s on unit-sized pieces; a block hashed at the
/// last line end that fitted gave 3.0–3.15, BLAKE3 alone runs at 4.4–4.6: `cargo run
/// --release -p gauntlet-core --example digest_speed`, BENCHMARKS.md). The
/// file is written from the block the hash has just read, so the lines are copied once,
/// where writing them straight from the callers' buffers and staging a copy for the hash
/// read them twice.
pub struct HashingWriter<W: Write> {
    inner: W,
    block: Vec<u8>,
    h: blake3::Hasher,
    bytes: u64,
    lines: u64,
}

impl<W: Write> HashingWriter<W> {
    const BLOCK: usize = 64 * 1024;

    pub fn new(inner: W) -> Self {
        HashingWriter {
            inner,
            block: Vec::with_capacity(Self::BLOCK),
            h: blake3::Hasher::new(),
            bytes: 0,
            lines: 0,
        }
    }

    /// Appends `bytes`, which are whole lines (`lines` of them).
    pub fn write_lines(&mut self, mut bytes: &[u8], lines: u64) -> io::Result<()> {
        self.bytes += bytes.len() as u64;
        self.lines += lines;
        if self.block.is_empty() && bytes.len() >= Self::BLOCK {
            // Whole blocks straight from the caller's buffer: the hash stays on block
            // boundaries, and nothing is copied.
            let whole = bytes.len() - bytes.len() % Self::BLOCK;
            self.h.update(&bytes[..whole]);
            self.inner.write_all(&bytes[..whole])?;
            bytes = &bytes[whole..];
        }
        while !bytes.is_empty() {
            let n = (Self::BLOCK - self.block.len()).min(bytes.len());
            self.block.extend_from_slice(&bytes[..n]);
            bytes = &bytes[n..];
            if self.block.len() == Self::BLOCK {
                self.emit()?;
            }
        }
        Ok(())
    }

    /// Hashes and writes the block.
    fn emit(&mut self) -> io::Result<()> {
        self.h.update(&self.block);
        self.inner.write_all(&self.block)?;
        self.block.clear();
        Ok(())
    }

    /// Writes what is left and flushes; returns the writer and the manifest entry of
    /// everything written.
    pub fn finish(mut self) -> io::Result<(W, FileEntry)> {
        self.emit()?;
        self.inner.flush()?;
        let entry = FileEntry {
            bytes: self.bytes,
            blake3: Some(self.h.finalize().to_hex().to_string()),
            sha256: None,
            lines: Some(self.lines),
        };
        Ok((self.inner, entry))
    }
}

/// What a finished session wrote: every artefact's size and digest, so a reader can
/// tell a directory left as the run left it from one truncated, edited, mixed with
/// another run, or killed mid-session.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Manifest {
    pub gauntlet_manifest: u32,
    /// What the directory is. `None` in manifests written before kinds were recorded:
    /// readers then tell the kind from the files ([`crate::outdir::holding`]).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub kind: Option<Kind>,
    pub run_id: String,
    pub status: String,
    pub files: BTreeMap<String, FileEntry>,
}

impl Manifest {
    /// The manifest of a directory of kind `kind`.
    pub fn new(kind: Kind, run_id: &str, status: &str) -> Manifest {
        Manifest {
            gauntlet_manifest: 2,
            kind: Some(kind),
            run_id: run_id.to_string(),
            status: status.to_string(),
            files: BTreeMap::new(),
        }
    }

    /// Records `name` in `dir` as it is now.
    pub fn record_file(&mut self, dir: &Path, name: &str) -> io::Result<()> {
        let e = FileEntry::of_file(&dir.join(name))?;
        self.files.insert(name.to_string(), e);
        Ok(())
    }

    /// Records each of `names` (paths relative to `dir`, see the module's docs) as it
    /// is now, streaming each file through one buffer. The error names the file.
    pub fn record_files(
        &mut self,
        dir: &Path,
        names: impl IntoIterator<Item = String>,
    ) -> io::Result<()> {
        let mut buf = vec![0u8; 1 << 20];
        for name in names {
            let p = dir.join(&name);
            let e = FileEntry::of_file_with(&p, None, &mut buf).map_err(|e| {
                io::Error::new(e.kind(), format!("cannot read back {}: {e}", p.display()))
            })?;
            self.files.insert(name, e);
        }
        Ok(())
    }

    /// Writes `dir/manifest.json` (atomically).
    pub fn write(&self, dir: &Path) -> io::Result<()> {
        let mut s = serde_json::to_vec_pretty(self).expect("a manifest serialises");
        s.push(b'\n');
        write_atomic(&dir.join(MANIFEST), &s)
    }

    /// Writes `dir/manifest.json` (atomically) listing, besides the files recorded,
    /// `more`: names relative to `dir` in ascending order, none of them recorded, each
    /// hashed as the manifest is written. A directory of many files (an exam's scenario
    /// runs) is listed so without holding an entry per file; the bytes are those
    /// [`Manifest::write`] writes with the same files recorded.
    pub fn write_streaming(
        &self,
        dir: &Path,
        more: impl Iterator<Item = String>,
    ) -> io::Result<()> {
        let files = Merged {
            dir,
            recorded: &self.files,
            more: std::cell::RefCell::new(Some(Box::new(more))),
        };
        let out = StreamedManifest {
            gauntlet_manifest: self.gauntlet_manifest,
            kind: self.kind,
            run_id: &self.run_id,
            status: &self.status,
            files,
        };
        let path = dir.join(MANIFEST);
        gauntlet_core::atomic::write_atomic_with(&path, true, |w| {
            serde_json::to_writer_pretty(&mut *w, &out).map_err(io::Error::other)?;
            w.write_all(b"\n")
        })
    }

    /// Reads `dir`'s manifest and checks every artefact it lists against it. The error
    /// says what is wrong and what to do.
    pub fn verify(dir: &Path) -> Result<Manifest, VerifyError> {
        Self::verify_except(dir, &[])
    }

    /// [`Manifest::verify`], leaving out files the caller is about to rewrite (a
    /// missing or edited report is fine when `gauntlet report` makes it again).
    pub fn verify_except(dir: &Path, rewritten: &[&str]) -> Result<Manifest, VerifyError> {
        refuse_symlinks(dir).map_err(VerifyError::Symlink)?;
        let path = dir.join(MANIFEST);
        let bytes = match files::read(&path, files::Kind::RUN_METADATA) {
            Ok(b) => b,
            Err(e) if e.io_kind() == Some(io::ErrorKind::NotFound) => {
                let why = if dir.join("run.json").exists() {
                    "a session is running in it, was killed before it finished, or it was written by a gauntlet without manifests"
                } else {
                    "is it a gauntlet run directory?"
                };
                return Err(VerifyError::NoManifest {
                    dir: dir.to_path_buf(),
                    why,
                });
            }
            Err(e) => return Err(VerifyError::Unreadable(e)),
        };
        let m: Manifest =
            serde_json::from_slice(&bytes).map_err(|source| VerifyError::Malformed {
                path: path.clone(),
                source,
            })?;
        let mut buf = vec![0u8; 1 << 20];
        // Subdirectories already checked not to be links.
        let mut checked: std::collections::HashSet<&str> = std::collections::HashSet::new();
        for (name, want) in &m.files {
            if rewritten.contains(&name.as_str()) {
                continue;
            }
            if !is_artefact_name(name) {
                return Err(VerifyError::NotAnArtefact {
                    path,
                    name: name.clone(),
                });
            }
            // A file of a subdirectory: neither the subdirectories on its way nor the
            // file may be a link (the top level's entries were checked above).
            if name.contains('/') {
                refuse_links_on(dir, name, &mut checked).map_err(VerifyError::Symlink)?;
            }
            let p = dir.join(name);
            let got = FileEntry::of_file_with(&p, Some(want), &mut buf).map_err(|source| {
                VerifyError::Missing {
                    path: p.clone(),
                    source,
                }
            })?;
            if got != *want {
                let shown = |e: &FileEntry| {
                    let lines = e.lines.map_or(String::new(), |l| format!("{l} lines, "));
                    format!("{lines}{} bytes, {}", e.bytes, e.digest_shown())
                };
                return Err(VerifyError::Changed {
                    path: p,
                    now: shown(&got),
                    recorded: shown(want),
                });
            }
        }
        Ok(m)
    }
}

/// Whether `name` may be listed in a manifest: a `/`-separated path relative to the
/// directory, no component empty or starting with `.` (so no `..`, no hidden file, no
/// absolute path).
fn is_artefact_name(name: &str) -> bool {
    name.split('/')
        .all(|c| !c.is_empty() && !c.starts_with('.'))
}

/// Refuses a link on the way to `dir/name`: each subdirectory (`checked` holds those
/// seen) and the file itself.
fn refuse_links_on<'a>(
    dir: &Path,
    name: &'a str,
    checked: &mut std::collections::HashSet<&'a str>,
) -> io::Result<()> {
    let ends = name
        .match_indices('/')
        .map(|(i, _)| i)
        .chain(std::iter::once(name.len()));
    for end in ends {
        let prefix = &name[..end];
        let is_dir = end < name.len();
        if is_dir && checked.contains(prefix) {
            continue;
        }
        let p = dir.join(prefix);
        if fs::symlink_metadata(&p).is_ok_and(|m| m.file_type().is_symlink()) {
            return Err(io::Error::new(
                io::ErrorKind::InvalidInput,
                format!(
                    "{} is a symbolic link; gauntlet never follows links inside a run directory: remove it (or move the run directory aside)",
                    p.display()
                ),
            ));
        }
        if is_dir {
            checked.insert(prefix);
        }
    }
    Ok(())
}

/// Why a run directory does not verify against its manifest; each message says what
/// to do. (The messages quote their cause, as they did when they were strings; a
/// reporter walking `source()` would print the cause twice.)
#[derive(Debug, thiserror::Error)]
pub enum VerifyError {
    /// The directory or one of its files is a symlink.
    #[error(transparent)]
    Symlink(io::Error),
    /// No manifest: a session is running, was killed, or this is not a run directory.
    #[error(
        "{} has no {MANIFEST} ({why}); its artefacts may be mixed or partial, so it is not read. Rerun the run's config with `gauntlet run` to finish or rebuild it (finished model calls are replayed from the journal, not repeated)",
        dir.display()
    )]
    NoManifest {
        dir: std::path::PathBuf,
        why: &'static str,
    },
    /// The manifest exists but cannot be read (too large, a special file, an I/O error).
    #[error(transparent)]
    Unreadable(files::ReadError),
    /// The manifest is not JSON of the manifest's shape.
    #[error("{}: not a gauntlet manifest: {source}", path.display())]
    Malformed {
        path: std::path::PathBuf,
        #[source]
        source: serde_json::Error,
    },
    /// The manifest lists a name that is not a file of the run directory.
    #[error("{}: lists `{name}`, not a run artefact", path.display())]
    NotAnArtefact {
        path: std::path::PathBuf,
        name: String,
    },
    /// A listed artefact cannot be read.
    #[error(
        "{}: {source}; the run's {MANIFEST} lists it: the directory is incomplete",
        path.display()
    )]
    Missing {
        path: std::path::PathBuf,
        #[source]
        source: io::Error,
    },
    /// A listed artefact is not the file the run wrote.
    #[error(
        "{} is not the file the run wrote (now {now}; the run recorded {recorded} in {MANIFEST}): it was truncated, edited or replaced since. Restore it, or rerun the config into a fresh run directory",
        path.display()
    )]
    Changed {
        path: std::path::PathBuf,
        now: String,
        recorded: String,
    },
}

// ------------------------------------------------------------ the recorded kind

/// Why [`recorded`] could not say what a directory is. Every message names the
/// directory or its manifest.
#[derive(Debug, thiserror::Error)]
pub enum KindError {
    /// The manifest records a kind, but the directory lacks that kind's marker file.
    #[error(
        "{}: its {MANIFEST} records {} (kind `{kind}`), but it holds no {}: the directory was changed since its session finished, or the manifest is another directory's; restore it, or rerun the command that wrote it into a fresh directory",
        dir.display(),
        kind.describe(),
        kind.marker()
    )]
    Mismatch { dir: PathBuf, kind: Kind },
    /// The manifest records a kind this gauntlet does not know.
    #[error(
        "{}: records kind `{kind}`, which this gauntlet does not know (was it written by a newer gauntlet?)",
        path.display()
    )]
    Unknown { path: PathBuf, kind: String },
    /// The manifest is a symbolic link (never followed inside an artefact directory).
    #[error(
        "{} is a symbolic link; gauntlet never follows links inside a run directory: remove it (or move the directory aside)",
        path.display()
    )]
    Symlink { path: PathBuf },
    /// The manifest cannot be read (not a regular file, too large, an I/O error).
    #[error(transparent)]
    Unreadable(files::ReadError),
    /// The manifest is not JSON.
    #[error("{}: not a gauntlet manifest: {source}", path.display())]
    Malformed {
        path: PathBuf,
        #[source]
        source: serde_json::Error,
    },
}

/// The part of a manifest [`recorded`] reads (the files' entries are skipped).
#[derive(Deserialize)]
struct Head {
    gauntlet_manifest: Option<serde::de::IgnoredAny>,
    kind: Option<serde_json::Value>,
}

/// The kind `dir`'s manifest records, checked against its files. `Ok(None)`: no
/// manifest (nothing, a session running or killed), or one without a kind (an older
/// gauntlet's, or a `manifest.json` that is not gauntlet's): tell the kind from the
/// files. The files' digests are not checked here ([`crate::manifest::Manifest::verify`]
/// does that).
pub fn recorded(dir: &Path) -> Result<Option<Kind>, KindError> {
    let path = dir.join(MANIFEST);
    match std::fs::symlink_metadata(&path) {
        Ok(m) if m.file_type().is_symlink() => return Err(KindError::Symlink { path }),
        Ok(_) => {}
        Err(e) if e.kind() == io::ErrorKind::NotFound => return Ok(None),
        // Not a directory, or unreadable: read below, for the error.
        Err(_) => {}
    }
    let f = match files::open(&path, files::Kind::RUN_METADATA) {
        Ok(f) => f,
        Err(e) if e.io_kind() == Some(io::ErrorKind::NotFound) => return Ok(None),
        // `dir` is not a directory: nothing is recorded there.
        Err(e) if e.io_kind() == Some(io::ErrorKind::NotADirectory) => return Ok(None),
        Err(e) => return Err(KindError::Unreadable(e)),
    };
    // Streamed: a large exam's manifest lists tens of thousands of files, and only its
    // head is wanted here.
    let head: Head =
        serde_json::from_reader(io::BufReader::new(f)).map_err(|source| KindError::Malformed {
            path: path.clone(),
            source,
        })?;
    let (Some(_), Some(kind)) = (head.gauntlet_manifest, head.kind) else {
        return Ok(None);
    };
    let kind = kind
        .as_str()
        .and_then(Kind::from_name)
        .ok_or_else(|| KindError::Unknown {
            path: path.clone(),
            kind: match &kind {
                serde_json::Value::String(s) => gauntlet_core::terminal::safe(s).into_owned(),
                v => v.to_string(),
            },
        })?;
    let marker = dir.join(kind.marker());
    if !std::fs::symlink_metadata(&marker).is_ok_and(|m| m.is_file()) {
        return Err(KindError::Mismatch {
            dir: dir.to_path_buf(),
            kind,
        });
    }
    Ok(Some(kind))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn entries_carry_blake3() {
        // BLAKE3 of "abc" (the reference implementation's test vector).
        assert_eq!(
            FileEntry::of(b"abc").blake3.as_deref(),
            Some("6437b3ac38465133ffb63b75273a8db548c558465d79db03fd359c6cd5bd9d85")
        );
    }

    /// Accepts at most `max` bytes per write, as a file may.
    struct Trickle {
        got: Vec<u8>,
        max: usize,
    }
    impl Write for Trickle {
        fn write(&mut self, buf: &[u8]) -> io::Result<usize> {
            let n = buf.len().min(self.max);
            self.got.extend_from_slice(&buf[..n]);
            Ok(n)
        }
        fn flush(&mut self) -> io::Result<()> {
            Ok(())
        }
    }

    proptest::proptest! {
        /// Whatever the sizes of the pieces (across block edges, exactly a block, many
        /// blocks at once, empty) and however little the file takes per write, the
        /// writer writes the bytes in order and its entry is the one-pass entry of them.
        #[test]
        fn the_writer_writes_every_byte_and_digests_what_it_wrote(
            sizes in proptest::collection::vec(
                proptest::prop_oneof![
                    0usize..3_000,
                    65_530usize..65_542,
                    0usize..300_000,
                ],
                0..40,
            ),
            max in proptest::prop_oneof![1usize..5_000, proptest::strategy::Just(usize::MAX)],
        ) {
            let mut w = HashingWriter::new(Trickle { got: Vec::new(), max });
            let mut all = Vec::new();
            for (i, &n) in sizes.iter().enumerate() {
                let piece: Vec<u8> = (0..n).map(|j| (i * 31 + j * 7) as u8).collect();
                w.write_lines(&piece, 1).unwrap();
                all.extend_from_slice(&piece);
            }
            let (file, entry) = w.finish().unwrap();
            proptest::prop_assert!(file.got == all, "bytes differ");
            let mut whole = FileEntry::of(&all);
            whole.lines = Some(sizes.len() as u64);
            proptest::prop_assert_eq!(entry, whole);
        }
    }

    #[test]
    fn a_failed_write_is_returned() {
        struct Full;
        impl Write for Full {
            fn write(&mut self, _: &[u8]) -> io::Result<usize> {
                Err(io::Error::other("no space left on device"))
            }
            fn flush(&mut self) -> io::Result<()> {
                Ok(())
            }
        }
        let mut w = HashingWriter::new(Full);
        w.write_lines(b"a short line\n", 1).unwrap(); // buffered
        assert!(w.write_lines(&vec![b'x'; 70_000], 1).is_err());
        let mut w = HashingWriter::new(Full);
        w.write_lines(b"a short line\n", 1).unwrap();
        assert!(w.finish().is_err());
    }

    #[test]
    fn version_1_manifests_verify_with_sha256_and_catch_an_edit() {
        let dir = tempfile::tempdir().unwrap();
        std::fs::write(dir.path().join("results.json"), b"{\"a\":1}\n").unwrap();
        let v1 = serde_json::json!({
            "gauntlet_manifest": 1, "run_id": "r", "status": "complete",
            "files": {"results.json": {
                "bytes": 8,
                "sha256": gauntlet_core::hash::sha256_hex(b"{\"a\":1}\n"),
            }},
        });
        std::fs::write(dir.path().join(MANIFEST), v1.to_string()).unwrap();
        Manifest::verify(dir.path()).unwrap();
        std::fs::write(dir.path().join("results.json"), b"{\"a\":2}\n").unwrap();
        let err = Manifest::verify(dir.path()).unwrap_err();
        assert!(matches!(err, VerifyError::Changed { .. }), "{err:?}");
        let e = err.to_string();
        assert!(
            e.contains("is not the file the run wrote") && e.contains("sha256 "),
            "{e}"
        );
        // A version 2 manifest records BLAKE3 and names it when a file changed.
        let mut m = Manifest::new(Kind::Run, "r", "complete");
        m.record_file(dir.path(), "results.json").unwrap();
        m.write(dir.path()).unwrap();
        assert_eq!(Manifest::verify(dir.path()).unwrap().gauntlet_manifest, 2);
        std::fs::write(dir.path().join("results.json"), b"{\"a\":3}\n").unwrap();
        let e = Manifest::verify(dir.path()).unwrap_err().to_string();
        assert!(e.contains("blake3 "), "{e}");
    }

    #[test]
    fn the_kind_is_recorded_and_a_manifest_without_one_still_verifies() {
        let dir = tempfile::tempdir().unwrap();
        std::fs::write(dir.path().join("results.json"), b"{}\n").unwrap();
        let mut m = Manifest::new(Kind::ExamShard, "x~shard-0-of-2", "complete");
        m.record_file(dir.path(), "results.json").unwrap();
        let text = serde_json::to_string_pretty(&m).unwrap();
        assert!(text.contains("\"kind\": \"exam-shard\""), "{text}");
        assert_eq!(serde_json::from_str::<Manifest>(&text).unwrap(), m);
        m.write(dir.path()).unwrap();
        assert_eq!(
            Manifest::verify(dir.path()).unwrap().kind,
            Some(Kind::ExamShard)
        );
        // An older gauntlet's manifest: no `kind`, read as None, written back without one.
        let mut old: serde_json::Value = serde_json::from_str(&text).unwrap();
        old.as_object_mut().unwrap().remove("kind");
        std::fs::write(dir.path().join(MANIFEST), old.to_string()).unwrap();
        let back = Manifest::verify(dir.path()).unwrap();
        assert_eq!(back.kind, None);
        assert!(!serde_json::to_string(&back).unwrap().contains("kind"));
        // A kind this gauntlet does not know is not a manifest it can read.
        old["kind"] = "holodeck".into();
        std::fs::write(dir.path().join(MANIFEST), old.to_string()).unwrap();
        assert!(matches!(
            Manifest::verify(dir.path()).unwrap_err(),
            VerifyError::Malformed { .. }
        ));
    }

    #[test]
    fn files_of_subdirectories_verify_and_links_and_escapes_are_refused() {
        let dir = tempfile::tempdir().unwrap();
        let d = dir.path();
        std::fs::create_dir_all(d.join("run-0")).unwrap();
        std::fs::write(d.join("report.json"), b"{}\n").unwrap();
        std::fs::write(d.join("run-0/a.json"), b"[1]\n").unwrap();
        std::fs::write(d.join("run-0/b.json"), b"[2]\n").unwrap();
        let mut m = Manifest::new(Kind::Exam, "exam-out", "complete");
        m.record_files(
            d,
            ["report.json", "run-0/a.json", "run-0/b.json"].map(String::from),
        )
        .unwrap();
        m.write(d).unwrap();
        Manifest::verify(d).unwrap();
        // An edited file in a subdirectory is caught like any other.
        std::fs::write(d.join("run-0/b.json"), b"[3]\n").unwrap();
        let e = Manifest::verify(d).unwrap_err();
        assert!(
            matches!(&e, VerifyError::Changed { path, .. } if path.ends_with("run-0/b.json")),
            "{e:?}"
        );
        std::fs::write(d.join("run-0/b.json"), b"[2]\n").unwrap();
        // A subdirectory that is a link, or a file that is one, is never followed.
        let elsewhere = tempfile::tempdir().unwrap();
        std::fs::rename(d.join("run-0"), elsewhere.path().join("run-0")).unwrap();
        std::os::unix::fs::symlink(elsewhere.path().join("run-0"), d.join("run-0")).unwrap();
        let e = Manifest::verify(d).unwrap_err();
        assert!(matches!(e, VerifyError::Symlink(_)), "{e:?}");
        std::fs::remove_file(d.join("run-0")).unwrap();
        std::fs::create_dir(d.join("run-0")).unwrap();
        std::fs::copy(
            elsewhere.path().join("run-0/a.json"),
            d.join("run-0/a.json"),
        )
        .unwrap();
        std::os::unix::fs::symlink(
            elsewhere.path().join("run-0/b.json"),
            d.join("run-0/b.json"),
        )
        .unwrap();
        let e = Manifest::verify(d).unwrap_err();
        assert!(
            matches!(&e, VerifyError::Symlink(io) if io.to_string().contains("run-0/b.json")),
            "{e:?}"
        );
        // Names that leave the directory, or name a hidden file, are not artefacts.
        for bad in [
            "../x.json",
            "run-0/../../x",
            "/etc/passwd",
            "run-0//a.json",
            ".lock",
            "run-0/.a",
        ] {
            assert!(!is_artefact_name(bad), "{bad}");
            let mut m = Manifest::new(Kind::Exam, "exam-out", "complete");
            m.files.insert(bad.into(), FileEntry::of(b""));
            m.write(d).unwrap();
            let e = Manifest::verify(d).unwrap_err();
            assert!(
                matches!(e, VerifyError::NotAnArtefact { .. }),
                "{bad}: {e:?}"
            );
        }
    }
}

#[cfg(test)]
mod recorded_tests {
    use super::*;

    fn write(dir: &Path, name: &str, text: &str) {
        std::fs::write(dir.join(name), text).unwrap();
    }

    #[test]
    fn a_recorded_kind_is_read_and_checked_against_its_marker() {
        let d = tempfile::tempdir().unwrap();
        let dir = d.path();
        // Nothing recorded: no manifest, an older gauntlet's manifest, someone else's.
        assert!(recorded(dir).unwrap().is_none());
        assert!(recorded(&dir.join("absent")).unwrap().is_none());
        write(
            dir,
            MANIFEST,
            r#"{"gauntlet_manifest": 2, "run_id": "r", "status": "complete", "files": {}}"#,
        );
        assert!(recorded(dir).unwrap().is_none());
        write(dir, MANIFEST, r#"{"name": "a web app", "kind": "exam"}"#);
        assert!(recorded(dir).unwrap().is_none());
        // Recorded, with and without its marker.
        write(
            dir,
            MANIFEST,
            r#"{"gauntlet_manifest": 2, "kind": "detect-exam", "run_id": "r", "status": "complete", "files": {}}"#,
        );
        let e = recorded(dir).unwrap_err();
        assert!(
            matches!(
                e,
                KindError::Mismatch {
                    kind: Kind::DetectExam,
                    ..
                }
            ),
            "{e:?}"
        );
        let shown = e.to_string();
        assert!(
            shown.starts_with(&format!("{}: its manifest.json records a detect exam's output (kind `detect-exam`), but it holds no report.json", dir.display())),
            "{shown}"
        );
        write(dir, "report.json", "{}");
        assert_eq!(recorded(dir).unwrap(), Some(Kind::DetectExam));
        // A kind this gauntlet does not know, and a manifest that is not JSON.
        write(
            dir,
            MANIFEST,
            r#"{"gauntlet_manifest": 3, "kind": "holodeck"}"#,
        );
        let e = recorded(dir).unwrap_err();
        assert!(
            matches!(&e, KindError::Unknown { kind, .. } if kind == "holodeck"),
            "{e:?}"
        );
        write(dir, MANIFEST, "{\"gauntlet_manifest\": 2, \"kind\": ");
        assert!(matches!(
            recorded(dir).unwrap_err(),
            KindError::Malformed { .. }
        ));
        // A link is never followed.
        std::fs::remove_file(dir.join(MANIFEST)).unwrap();
        let other = tempfile::tempdir().unwrap();
        write(
            other.path(),
            MANIFEST,
            r#"{"gauntlet_manifest": 2, "kind": "exam"}"#,
        );
        std::os::unix::fs::symlink(other.path().join(MANIFEST), dir.join(MANIFEST)).unwrap();
        assert!(matches!(
            recorded(dir).unwrap_err(),
            KindError::Symlink { .. }
        ));
    }
}

/// [`Manifest`]'s shape, with [`Merged`] files ([`Manifest::write_streaming`]).
#[derive(Serialize)]
struct StreamedManifest<'a> {
    gauntlet_manifest: u32,
    #[serde(skip_serializing_if = "Option::is_none")]
    kind: Option<Kind>,
    run_id: &'a str,
    status: &'a str,
    files: Merged<'a>,
}

/// The recorded entries and the streamed names, merged in name order.
struct Merged<'a> {
    dir: &'a Path,
    recorded: &'a BTreeMap<String, FileEntry>,
    more: std::cell::RefCell<Option<Box<dyn Iterator<Item = String> + 'a>>>,
}

impl Serialize for Merged<'_> {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        use serde::ser::{Error, SerializeMap};
        let more = self.more.borrow_mut().take().ok_or_else(|| {
            S::Error::custom("the manifest's streamed files were already written")
        })?;
        let mut more = more.peekable();
        let mut recorded = self.recorded.iter().peekable();
        let mut map = s.serialize_map(None)?;
        let mut buf = vec![0u8; 1 << 20];
        let mut last: Option<String> = None;
        loop {
            let take_recorded = match (recorded.peek(), more.peek()) {
                (None, None) => break,
                (Some(_), None) => true,
                (None, Some(_)) => false,
                (Some((a, _)), Some(b)) => a.as_str() < b.as_str(),
            };
            if take_recorded {
                let (name, e) = recorded.next().expect("peeked");
                map.serialize_entry(name, e)?;
                continue;
            }
            let name = more.next().expect("peeked");
            if last.as_ref().is_some_and(|l| *l >= name) || self.recorded.contains_key(&name) {
                return Err(S::Error::custom(format!(
                    "manifest entry {name} is out of order or listed twice"
                )));
            }
            let p = self.dir.join(&name);
            let e = FileEntry::of_file_with(&p, None, &mut buf)
                .map_err(|e| S::Error::custom(format!("cannot read back {}: {e}", p.display())))?;
            map.serialize_entry(&name, &e)?;
            last = Some(name);
        }
        map.end()
    }
}
