//! The scenario corpus on disk and the `corpus.pin` that freezes it.
//!
//! Why this exists: the agent exam is an interlock. A score is only comparable with
//! another score if both ran over exactly the same scenarios, so before anything runs
//! the loader proves that the corpus is byte-for-byte the one that was pinned. The rules
//! here reproduce mallcop's eval harness exactly (its corpus layout and pin format), so that a
//! mallcop `corpus.pin` verifies unchanged against a mallcop scenario tree:
//!
//! - **Which files are in.** Walk the root recursively; include only files whose name
//!   ends `.yaml` or `.yml` (case-sensitive); prune every path with ANY component
//!   beginning with `_` (files and directories, any depth: `_schema.yaml`, `_test/`,
//!   `a/_b/c.yaml`). Dot-prefixed paths are NOT skipped.
//! - **The canonical manifest** (the hashed artefact): one line per included file,
//!   `<relpath with forward slashes>`, two spaces, `<lowercase hex sha256 of its bytes>`,
//!   `\n`; lines sorted bytewise by relpath. The **corpus digest** is the lowercase hex
//!   sha256 of the manifest bytes. Walk order, mtimes and permissions never matter.
//! - **The pin** (`corpus.pin` in the root): `#` comments and blank lines ignored; every
//!   other line, trimmed, is exactly two whitespace-separated fields; keys `count` (all
//!   digits) and `sha256` (lowercased on read); both required; unknown or repeated keys
//!   are errors naming the pin file and line.
//! - **Verification**: the count is compared first, then the digest; either mismatch is
//!   a hard [`IntegrityError`] whose message starts `CORPUS INTEGRITY FAIL:`.
//!
//! Decisions this module makes where mallcop is silent:
//!
//! - **Symlinks.** A symlinked directory is never descended (as Go's `WalkDir`: a
//!   symlink is a leaf), so nothing outside the tree can enter through one. A symlink
//!   whose *name* makes it a scenario file is followed only when its fully resolved
//!   target is a regular file inside the (resolved) root; otherwise the scan fails
//!   rather than hash bytes from outside the pinned tree. Other symlinks are ignored.
//! - **Odd entries.** A scenario-named entry that is not a regular file (FIFO, socket,
//!   device) fails the scan. A relpath that is not valid UTF-8 fails the scan (the
//!   manifest is text); non-UTF-8 names of excluded entries are ignored.
//! - **Read once.** [`scan`] returns each file's bytes with its hash, and the loader
//!   parses exactly those bytes, so a file edited between hashing and parsing cannot
//!   slip through.
//! - **Per-file diffs on re-pin.** The pin holds only count and digest, so [`pin`]
//!   also records the manifest it pinned in [`MANIFEST_FILE`] (`_manifest.txt`, pruned
//!   by the walk by both its `_` and its extension, so it never affects the digest).
//!   On the next re-pin the recorded manifest is trusted for a per-file diff only if it
//!   hashes to the previous pin's digest; a stale or foreign record yields no diff.

use gauntlet_core::files::{self, Kind};
use gauntlet_core::hash::sha256_hex;
use std::fmt;
use std::fs;
use std::io;
use std::path::{Path, PathBuf};

use crate::scenario::ScenarioError;

/// The pin file's name, in the corpus root.
pub const PIN_FILE: &str = "corpus.pin";

/// Where [`pin`] records the manifest it pinned, beside the pin. Its leading `_` (and
/// its extension) keep it out of every walk.
pub const MANIFEST_FILE: &str = "_manifest.txt";

/// One included scenario file, read once: the bytes that were hashed are the bytes
/// that get parsed.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct CorpusFile {
    /// Path relative to the walked root, with forward slashes (the manifest key).
    pub relpath: String,
    /// The path the file was read from (root joined with the relpath).
    pub path: PathBuf,
    /// Lowercase hex sha256 of `bytes`.
    pub sha256: String,
    pub bytes: Vec<u8>,
}

/// Whether a file name makes a file a scenario candidate (`.yaml` / `.yml`, as Go's
/// `strings.HasSuffix`: case-sensitive, so a file named exactly `.yaml` counts too).
pub fn is_scenario_name(name: &[u8]) -> bool {
    name.ends_with(b".yaml") || name.ends_with(b".yml")
}

/// Whether a path component prunes its whole subtree (leading `_`).
pub fn is_pruned_component(name: &[u8]) -> bool {
    name.first() == Some(&b'_')
}

/// Walks `root` by the corpus rules and reads every included file, sorted bytewise by
/// relpath. Used for the pinned corpus and, unchanged, for an extra-scenarios directory.
pub fn scan(root: &Path) -> Result<Vec<CorpusFile>, CorpusError> {
    scan_with(root, true)
}

/// Like [`scan`], but keeps only each file's relpath, path and hash (`bytes` is left
/// empty): one file's bytes are in memory at a time, so a corpus of any size can be
/// verified against its pin in bounded memory. A streaming consumer re-reads each file
/// later with [`read_verified`], which refuses bytes that no longer match the hash.
pub fn scan_hashes(root: &Path) -> Result<Vec<CorpusFile>, CorpusError> {
    scan_with(root, false)
}

/// Re-reads a file listed by [`scan_hashes`] and returns its bytes only if they still
/// hash to the recorded sha256 (the bytes parsed are the bytes that were verified).
pub fn read_verified(file: &CorpusFile) -> Result<Vec<u8>, CorpusError> {
    let bytes = read_scenario(&file.path)?;
    let now = sha256_hex(&bytes);
    if now != file.sha256 {
        return Err(CorpusError::ChangedAfterScan {
            path: file.path.clone(),
            scanned: file.sha256.clone(),
            now,
        });
    }
    Ok(bytes)
}

fn scan_with(root: &Path, keep_bytes: bool) -> Result<Vec<CorpusFile>, CorpusError> {
    let meta = fs::metadata(root).map_err(|e| match e.kind() {
        io::ErrorKind::NotFound => CorpusError::RootNotFound {
            root: root.to_path_buf(),
        },
        _ => CorpusError::Io {
            path: root.to_path_buf(),
            source: e,
        },
    })?;
    if !meta.is_dir() {
        return Err(CorpusError::NotADirectory {
            root: root.to_path_buf(),
        });
    }
    let canonical_root = fs::canonicalize(root).map_err(|e| io_error(root, e))?;
    let walker = Walker {
        canonical_root: &canonical_root,
        keep_bytes,
    };
    let mut out = Vec::new();
    walker.walk(root, Some(String::new()), &mut out)?;
    // Each directory is read in name order, but a full relpath order differs from a
    // depth-first order ("a-b.yaml" < "a/x.yaml" bytewise): sort the whole list.
    out.sort_by(|a, b| a.relpath.cmp(&b.relpath));
    Ok(out)
}

struct Walker<'a> {
    canonical_root: &'a Path,
    /// Keep each file's bytes in its [`CorpusFile`] (else hash and drop them).
    keep_bytes: bool,
}

impl Walker<'_> {
    /// `rel` is the relpath prefix of `dir` (ending in `/` unless empty), or `None` when
    /// some component so far is not UTF-8 (an error only if a file below is included).
    fn walk(
        &self,
        dir: &Path,
        rel: Option<String>,
        out: &mut Vec<CorpusFile>,
    ) -> Result<(), CorpusError> {
        let mut entries = Vec::new();
        for entry in fs::read_dir(dir).map_err(|e| io_error(dir, e))? {
            entries.push(entry.map_err(|e| io_error(dir, e))?);
        }
        entries.sort_by_key(|e| e.file_name());
        for entry in entries {
            let name = entry.file_name();
            let name_bytes = name.as_encoded_bytes();
            if is_pruned_component(name_bytes) {
                continue;
            }
            let path = entry.path();
            let child_rel = match (&rel, name.to_str()) {
                (Some(prefix), Some(n)) => Some(format!("{prefix}{n}")),
                _ => None,
            };
            // `file_type` does not follow symlinks.
            let ftype = entry.file_type().map_err(|e| io_error(&path, e))?;
            if ftype.is_dir() {
                self.walk(&path, child_rel.map(|r| r + "/"), out)?;
                continue;
            }
            if !is_scenario_name(name_bytes) {
                continue;
            }
            let Some(relpath) = child_rel else {
                return Err(CorpusError::NonUtf8Path { path });
            };
            if ftype.is_symlink() {
                self.check_symlink(&path)?;
            } else if !ftype.is_file() {
                return Err(CorpusError::NotAFile { path });
            }
            let bytes = read_scenario(&path)?;
            let sha256 = sha256_hex(&bytes);
            out.push(CorpusFile {
                relpath,
                sha256,
                path,
                bytes: if self.keep_bytes { bytes } else { Vec::new() },
            });
        }
        Ok(())
    }

    fn check_symlink(&self, path: &Path) -> Result<(), CorpusError> {
        let target = fs::canonicalize(path).map_err(|e| CorpusError::UnsafeSymlink {
            path: path.to_path_buf(),
            reason: format!("cannot resolve its target: {e}"),
        })?;
        if !target.starts_with(self.canonical_root) {
            return Err(CorpusError::UnsafeSymlink {
                path: path.to_path_buf(),
                reason: format!(
                    "its target {} lies outside the corpus root {}",
                    target.display(),
                    self.canonical_root.display()
                ),
            });
        }
        let meta = fs::metadata(&target).map_err(|e| io_error(&target, e))?;
        if !meta.is_file() {
            return Err(CorpusError::UnsafeSymlink {
                path: path.to_path_buf(),
                reason: format!("its target {} is not a regular file", target.display()),
            });
        }
        Ok(())
    }
}

/// One scenario file: a regular file (a symlink to one inside the root) of at most
/// the scenario cap, read without blocking.
fn read_scenario(path: &Path) -> Result<Vec<u8>, CorpusError> {
    files::read(path, Kind::SCENARIO).map_err(|e| io_error(path, e.into_io()))
}

fn io_error(path: &Path, source: io::Error) -> CorpusError {
    CorpusError::Io {
        path: path.to_path_buf(),
        source,
    }
}

/// One manifest line.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct ManifestEntry {
    pub relpath: String,
    /// Lowercase hex sha256 of the file's bytes.
    pub sha256: String,
}

/// The canonical manifest: entries sorted bytewise by relpath.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct Manifest {
    entries: Vec<ManifestEntry>,
}

impl Manifest {
    /// The manifest of scanned files (sorted here, whatever the input order).
    pub fn from_files(files: &[CorpusFile]) -> Self {
        Self::from_entries(
            files
                .iter()
                .map(|f| ManifestEntry {
                    relpath: f.relpath.clone(),
                    sha256: f.sha256.clone(),
                })
                .collect(),
        )
    }

    /// A manifest from arbitrary entries (sorted here).
    pub fn from_entries(mut entries: Vec<ManifestEntry>) -> Self {
        entries.sort();
        Manifest { entries }
    }

    pub fn entries(&self) -> &[ManifestEntry] {
        &self.entries
    }

    /// The number of files: what `count` in the pin counts.
    pub fn len(&self) -> usize {
        self.entries.len()
    }

    pub fn is_empty(&self) -> bool {
        self.entries.is_empty()
    }

    /// The exact bytes that are hashed: `<relpath>  <sha256>\n` per entry.
    pub fn render(&self) -> String {
        let mut s = String::new();
        for e in &self.entries {
            s.push_str(&e.relpath);
            s.push_str("  ");
            s.push_str(&e.sha256);
            s.push('\n');
        }
        s
    }

    /// The corpus digest: lowercase hex sha256 of [`Manifest::render`].
    pub fn digest(&self) -> String {
        sha256_hex(self.render().as_bytes())
    }

    /// Reads a rendered manifest back (for the diff record). `None` when any line is
    /// not `<relpath>  <64 lowercase hex>`; relpaths are split at the last double space.
    pub fn parse(text: &str) -> Option<Self> {
        let mut entries = Vec::new();
        if text.is_empty() {
            return Some(Manifest { entries });
        }
        let body = text.strip_suffix('\n')?;
        for line in body.split('\n') {
            let (relpath, sha) = line.rsplit_once("  ")?;
            if relpath.is_empty() || !is_lower_hex_digest(sha) {
                return None;
            }
            entries.push(ManifestEntry {
                relpath: relpath.to_string(),
                sha256: sha.to_string(),
            });
        }
        Some(Self::from_entries(entries))
    }

    /// Per-file changes from `previous` to `self`.
    pub fn diff(&self, previous: &Manifest) -> ManifestDiff {
        use std::collections::BTreeMap;
        let old: BTreeMap<&str, &str> = previous
            .entries
            .iter()
            .map(|e| (e.relpath.as_str(), e.sha256.as_str()))
            .collect();
        let new: BTreeMap<&str, &str> = self
            .entries
            .iter()
            .map(|e| (e.relpath.as_str(), e.sha256.as_str()))
            .collect();
        let mut diff = ManifestDiff::default();
        for (path, sha) in &new {
            match old.get(path) {
                None => diff.added.push(path.to_string()),
                Some(o) if o != sha => diff.changed.push(path.to_string()),
                Some(_) => {}
            }
        }
        for path in old.keys() {
            if !new.contains_key(path) {
                diff.removed.push(path.to_string());
            }
        }
        diff
    }
}

impl fmt::Display for Manifest {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.render())
    }
}

/// Files added, removed and changed between two manifests, each list sorted.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct ManifestDiff {
    pub added: Vec<String>,
    pub removed: Vec<String>,
    pub changed: Vec<String>,
}

impl ManifestDiff {
    pub fn is_empty(&self) -> bool {
        self.added.is_empty() && self.removed.is_empty() && self.changed.is_empty()
    }
}

fn is_lower_hex_digest(s: &str) -> bool {
    s.len() == 64 && s.bytes().all(|b| matches!(b, b'0'..=b'9' | b'a'..=b'f'))
}

/// The committed integrity pin: expected file count and corpus digest.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct Pin {
    pub count: u64,
    /// Lowercase hex sha256 of the canonical manifest.
    pub sha256: String,
}

/// A pin file that is missing, unreadable or malformed. Messages name the pin file and,
/// for a bad line, its 1-based line number.
#[derive(Debug, thiserror::Error)]
pub enum PinError {
    #[error(
        "corpus pin {} not found: refusing to load an unpinned corpus (create the pin with `pin`)",
        .path.display()
    )]
    Missing { path: PathBuf },
    #[error("cannot read corpus pin {}: {source}", .path.display())]
    Io { path: PathBuf, source: io::Error },
    #[error("{}:{line}: {message}", .path.display())]
    Line {
        path: PathBuf,
        line: usize,
        message: String,
    },
    #[error("{}: {message}", .path.display())]
    File { path: PathBuf, message: String },
}

impl Pin {
    /// The pin that `manifest` satisfies.
    pub fn of(manifest: &Manifest) -> Self {
        Pin {
            count: manifest.len() as u64,
            sha256: manifest.digest(),
        }
    }

    /// Parses pin text; `path` is only used to name the file in errors.
    pub fn parse(text: &str, path: &Path) -> Result<Self, PinError> {
        let line_err = |line: usize, message: String| PinError::Line {
            path: path.to_path_buf(),
            line,
            message,
        };
        let mut count: Option<u64> = None;
        let mut sha256: Option<String> = None;
        for (i, raw) in text.lines().enumerate() {
            let n = i + 1;
            let line = raw.trim();
            if line.is_empty() || line.starts_with('#') {
                continue;
            }
            let fields: Vec<&str> = line.split_whitespace().collect();
            let [key, value] = fields[..] else {
                return Err(line_err(
                    n,
                    format!(
                        "expected exactly two whitespace-separated fields (`count N` or `sha256 HEX`), found {}",
                        fields.len()
                    ),
                ));
            };
            match key {
                "count" => {
                    if count.is_some() {
                        return Err(line_err(n, "duplicate key `count`".into()));
                    }
                    if !value.bytes().all(|b| b.is_ascii_digit()) {
                        return Err(line_err(
                            n,
                            format!("`count` must be all digits, found `{value}`"),
                        ));
                    }
                    let c = value
                        .parse::<u64>()
                        .map_err(|_| line_err(n, format!("`count` {value} is too large")))?;
                    count = Some(c);
                }
                "sha256" => {
                    if sha256.is_some() {
                        return Err(line_err(n, "duplicate key `sha256`".into()));
                    }
                    let v = value.to_ascii_lowercase();
                    if !is_lower_hex_digest(&v) {
                        return Err(line_err(
                            n,
                            format!("`sha256` must be 64 hex digits, found `{value}`"),
                        ));
                    }
                    sha256 = Some(v);
                }
                other => {
                    return Err(line_err(
                        n,
                        format!("unknown key `{other}` (allowed: count, sha256)"),
                    ));
                }
            }
        }
        let missing = |key: &str| PinError::File {
            path: path.to_path_buf(),
            message: format!("required key `{key}` is missing"),
        };
        Ok(Pin {
            count: count.ok_or_else(|| missing("count"))?,
            sha256: sha256.ok_or_else(|| missing("sha256"))?,
        })
    }

    /// Reads and parses a pin file.
    pub fn read(path: &Path) -> Result<Self, PinError> {
        let bytes = files::read(path, Kind::CORPUS_PIN).map_err(|e| match e.io_kind() {
            Some(io::ErrorKind::NotFound) => PinError::Missing {
                path: path.to_path_buf(),
            },
            _ => PinError::Io {
                path: path.to_path_buf(),
                source: e.into_io(),
            },
        })?;
        let text = String::from_utf8(bytes).map_err(|_| PinError::File {
            path: path.to_path_buf(),
            message: "not valid UTF-8".into(),
        })?;
        Self::parse(&text, path)
    }

    /// The pin file text: a short `#` header, then `count N` and `sha256 HEX`.
    pub fn render(&self) -> String {
        format!(
            "# Scenario corpus integrity pin. The loader refuses to run unless the corpus has\n\
             # exactly `count` scenario files and its canonical manifest hashes to `sha256`.\n\
             # Regenerate with the pin command after an intentional change.\n\
             count {}\nsha256 {}\n",
            self.count, self.sha256
        )
    }

    /// Checks a scanned corpus against this pin: count first, then digest.
    pub fn verify(&self, manifest: &Manifest, pin_path: &Path) -> Result<(), IntegrityError> {
        let actual_count = manifest.len() as u64;
        if actual_count != self.count {
            return Err(IntegrityError::Count {
                pin: pin_path.to_path_buf(),
                expected: self.count,
                actual: actual_count,
            });
        }
        let actual = manifest.digest();
        if actual != self.sha256 {
            return Err(IntegrityError::Digest {
                pin: pin_path.to_path_buf(),
                expected: self.sha256.clone(),
                actual,
            });
        }
        Ok(())
    }
}

/// The corpus on disk is not the one pinned. Nothing may run.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum IntegrityError {
    #[error(
        "CORPUS INTEGRITY FAIL: count mismatch: pin {} expects {expected} scenario files, the corpus has {actual}",
        .pin.display()
    )]
    Count {
        pin: PathBuf,
        expected: u64,
        actual: u64,
    },
    #[error(
        "CORPUS INTEGRITY FAIL: sha256 mismatch: pin {} expects {expected}, the corpus hashes to {actual}",
        .pin.display()
    )]
    Digest {
        pin: PathBuf,
        expected: String,
        actual: String,
    },
}

/// Why a corpus could not be scanned, pinned or loaded.
#[derive(Debug, thiserror::Error)]
pub enum CorpusError {
    #[error("corpus root {} not found", .root.display())]
    RootNotFound { root: PathBuf },
    #[error("corpus root {} is not a directory", .root.display())]
    NotADirectory { root: PathBuf },
    #[error("{}: {source}", .path.display())]
    Io { path: PathBuf, source: io::Error },
    #[error("{}: scenario path is not valid UTF-8", .path.display())]
    NonUtf8Path { path: PathBuf },
    #[error("{}: scenario-named entry is not a regular file", .path.display())]
    NotAFile { path: PathBuf },
    #[error("{}: refusing to follow symlink: {reason}", .path.display())]
    UnsafeSymlink { path: PathBuf, reason: String },
    #[error(transparent)]
    Pin(#[from] PinError),
    /// The corpus is not the pinned one; its message starts `CORPUS INTEGRITY FAIL:`.
    #[error(transparent)]
    Integrity(#[from] IntegrityError),
    #[error(transparent)]
    Scenario(#[from] ScenarioError),
    /// A file's bytes changed between the pin check and the moment it was parsed.
    #[error(
        "CORPUS INTEGRITY FAIL: {} changed during the run (sha256 {scanned} when the corpus was verified, {now} when it was read for parsing); re-run on an unchanging corpus",
        .path.display()
    )]
    ChangedAfterScan {
        path: PathBuf,
        scanned: String,
        now: String,
    },
    #[error(
        "duplicate scenario id `{id}` in {} and {}",
        .first.display(),
        .second.display()
    )]
    DuplicateId {
        id: String,
        first: PathBuf,
        second: PathBuf,
    },
}

/// What [`pin`] did.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PinReport {
    pub pin_path: PathBuf,
    /// The pin that was there before, if it existed and parsed.
    pub previous: Option<Pin>,
    /// Why an existing previous pin could not be read (it was replaced).
    pub previous_error: Option<String>,
    /// The pin now on disk.
    pub pin: Pin,
    /// The manifest that was pinned.
    pub manifest: Manifest,
    /// True when the count differs from the previous pin's (or there was none).
    pub count_changed: bool,
    /// True when the digest differs from the previous pin's (or there was none).
    pub digest_changed: bool,
    /// Per-file changes since the previous pin, when the recorded manifest
    /// ([`MANIFEST_FILE`]) is present and hashes to the previous pin's digest.
    pub diff: Option<ManifestDiff>,
}

/// Pins the corpus at `dir`: scans it, writes `corpus.pin` (only if it changed, so an
/// existing pin's own comments survive a no-op re-pin) and the manifest record, and
/// reports what changed. Byte-level only: scenarios are not parsed here.
pub fn pin(dir: &Path) -> Result<PinReport, CorpusError> {
    let files = scan(dir)?;
    let manifest = Manifest::from_files(&files);
    let new_pin = Pin::of(&manifest);
    let pin_path = dir.join(PIN_FILE);
    let (previous, previous_error) = match Pin::read(&pin_path) {
        Ok(p) => (Some(p), None),
        Err(PinError::Missing { .. }) => (None, None),
        Err(e) => (None, Some(e.to_string())),
    };
    let manifest_path = dir.join(MANIFEST_FILE);
    let diff = previous.as_ref().and_then(|p| {
        let text = files::read_to_string(&manifest_path, Kind::CORPUS_MANIFEST).ok()?;
        if sha256_hex(text.as_bytes()) != p.sha256 {
            return None;
        }
        Some(manifest.diff(&Manifest::parse(&text)?))
    });
    if previous.as_ref() != Some(&new_pin) {
        write_atomic(dir, &pin_path, new_pin.render().as_bytes())?;
    }
    let rendered = manifest.render();
    if files::read(&manifest_path, Kind::CORPUS_MANIFEST)
        .ok()
        .as_deref()
        != Some(rendered.as_bytes())
    {
        write_atomic(dir, &manifest_path, rendered.as_bytes())?;
    }
    Ok(PinReport {
        count_changed: previous.as_ref().is_none_or(|p| p.count != new_pin.count),
        digest_changed: previous.as_ref().is_none_or(|p| p.sha256 != new_pin.sha256),
        pin_path,
        previous,
        previous_error,
        pin: new_pin,
        manifest,
        diff,
    })
}

/// Writes through `<path>.tmp` in the same directory and renames it into place, so a
/// crash never leaves a half-written pin; the new file gets the umask's mode.
fn write_atomic(_dir: &Path, path: &Path, bytes: &[u8]) -> Result<(), CorpusError> {
    gauntlet_core::atomic::write_atomic(path, bytes).map_err(|e| io_error(path, e))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn p() -> &'static Path {
        Path::new("scen/corpus.pin")
    }

    #[test]
    fn manifest_renders_sorted_with_two_spaces() {
        let m = Manifest::from_entries(vec![
            ManifestEntry {
                relpath: "b.yaml".into(),
                sha256: "2".repeat(64),
            },
            ManifestEntry {
                relpath: "a/x.yaml".into(),
                sha256: "1".repeat(64),
            },
        ]);
        assert_eq!(
            m.render(),
            format!("a/x.yaml  {}\nb.yaml  {}\n", "1".repeat(64), "2".repeat(64))
        );
        assert_eq!(Manifest::parse(&m.render()), Some(m.clone()));
        assert_eq!(
            Manifest::default().digest(),
            // sha256 of the empty string
            "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855"
        );
    }

    #[test]
    fn manifest_parse_rejects_garbage() {
        assert_eq!(Manifest::parse("x.yaml  abc\n"), None);
        assert_eq!(
            Manifest::parse(&format!("x.yaml {}\n", "a".repeat(64))),
            None
        );
        assert_eq!(
            Manifest::parse(&format!("x.yaml  {}", "a".repeat(64))),
            None
        );
        assert_eq!(Manifest::parse(""), Some(Manifest::default()));
    }

    #[test]
    fn diff_lists_added_removed_changed() {
        let e = |p: &str, c: char| ManifestEntry {
            relpath: p.into(),
            sha256: c.to_string().repeat(64),
        };
        let old =
            Manifest::from_entries(vec![e("a.yaml", 'a'), e("b.yaml", 'b'), e("c.yaml", 'c')]);
        let new =
            Manifest::from_entries(vec![e("a.yaml", 'a'), e("b.yaml", 'f'), e("d.yaml", 'd')]);
        let d = new.diff(&old);
        assert_eq!(d.added, vec!["d.yaml"]);
        assert_eq!(d.removed, vec!["c.yaml"]);
        assert_eq!(d.changed, vec!["b.yaml"]);
        assert!(new.diff(&new).is_empty());
    }

    #[test]
    fn verify_checks_count_before_digest() {
        let m = Manifest::from_entries(vec![ManifestEntry {
            relpath: "a.yaml".into(),
            sha256: "a".repeat(64),
        }]);
        let good = Pin::of(&m);
        assert_eq!(good.verify(&m, p()), Ok(()));
        let both_wrong = Pin {
            count: 2,
            sha256: "0".repeat(64),
        };
        let err = both_wrong.verify(&m, p()).unwrap_err();
        assert!(
            matches!(
                err,
                IntegrityError::Count {
                    expected: 2,
                    actual: 1,
                    ..
                }
            ),
            "{err}"
        );
        let digest_wrong = Pin {
            count: 1,
            sha256: "0".repeat(64),
        };
        let err = digest_wrong.verify(&m, p()).unwrap_err().to_string();
        assert!(
            err.starts_with("CORPUS INTEGRITY FAIL: sha256 mismatch"),
            "{err}"
        );
        assert!(
            err.contains(&"0".repeat(64)) && err.contains(&m.digest()),
            "{err}"
        );
        assert!(err.contains("scen/corpus.pin"), "{err}");
    }
}
