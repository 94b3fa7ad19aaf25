//! Pinned-file fetching: `file://` paths and `https://` downloads, verified by sha256
//! before anything reads them, cached by content.
//!
//! * `file:///abs/path`, `file://localhost/abs/path` (RFC 8089) or
//!   `file://relative/path` (relative to a base directory, the run config's; gauntlet's
//!   extension) is hashed in place, streaming; it must be a regular file of at most the
//!   policy's byte cap (a device, a pipe or a 2 GB sparse file is refused before it is
//!   read). (`file://name/x` is the relative path `name/x`, not a host: remote file
//!   hosts are not supported.)
//! * `https://…` is downloaded only when the caller allows downloads, under a
//!   [`FetchPolicy`]: https only, hosts resolving to non-public addresses refused by a
//!   filtering DNS resolver on every connection, IP-literal hosts and schemes checked on
//!   every redirect hop, a byte cap enforced while reading (Content-Length is not
//!   trusted) and a whole-request timeout. The body streams into a temporary file in the
//!   cache directory while it is hashed; only a file whose digest matches the pin is
//!   renamed to `<cache>/<sha256>`. A cached file is re-hashed on every use.
//!
//! The production entry point is [`FetchOptions::from_env`] (strict policy, cache in
//! `$GAUNTLET_CACHE_DIR` or `~/.cache/gauntlet/datasets`).

// Files are read through `gauntlet_core::files` only (clippy.toml says why).
#![cfg_attr(not(test), deny(clippy::disallowed_methods))]

mod http;
pub mod policy;

pub use policy::{FetchPolicy, non_public_reason};

use gauntlet_core::files::{self, Kind, ReadError};
use sha2::{Digest, Sha256};
use std::io::{self, Read};
use std::path::{Path, PathBuf};

/// Why a file could not be fetched or verified. `source` names the URL or path.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{source_name}: {message}")]
pub struct FetchError {
    /// The URL or file the problem is with.
    pub source_name: String,
    /// What went wrong and how to fix it.
    pub message: String,
    /// The download could not be made right now — the network or the server failed
    /// (no route, DNS, connection, timeout, HTTP 408/429/5xx) or downloads are off
    /// ([`FetchPolicy::offline`]) — rather than the request being wrong (bad URL, refused
    /// address, 404, pin mismatch, size cap). `gauntlet validate` reports these as
    /// warnings; a run still stops on them.
    pub unreachable: bool,
}

impl FetchError {
    /// A new error about `source`.
    pub fn new(source: impl Into<String>, message: impl Into<String>) -> Self {
        FetchError {
            source_name: source.into(),
            message: message.into(),
            unreachable: false,
        }
    }

    /// A new error about `source` that says the download cannot be made right now.
    pub fn unreachable(source: impl Into<String>, message: impl Into<String>) -> Self {
        FetchError {
            unreachable: true,
            ..FetchError::new(source, message)
        }
    }
}

/// How to run without the network: a copy of the pinned file in the cache under its
/// sha256 (checked before use), or a `file://` URL with the same pin.
fn offline_hint(sha256: &str, cache: Option<&Path>) -> String {
    match cache {
        Some(dir) => format!(
            "; to run without the network, copy the file to {} (it is checked against the sha256 before use), or set the dataset's `url: file:///path/to/it` (its `sha256` still applies)",
            dir.join(sha256).display()
        ),
        None => "; to run without the network, set the dataset's `url: file:///path/to/it` (its `sha256` still applies)".to_string(),
    }
}

/// Where fetched files are cached and what downloads may do.
#[derive(Debug, Clone)]
pub struct FetchOptions {
    /// The download rules.
    pub policy: FetchPolicy,
    /// Content-addressed cache directory (`<dir>/<sha256>`); `None` disables the cache.
    pub cache_dir: Option<PathBuf>,
}

impl FetchOptions {
    /// The production options: the strict policy and the default cache directory
    /// ([`default_cache_dir`]); no download at all when `GAUNTLET_OFFLINE` is set to
    /// anything but empty or `0` (cached copies and `file://` paths still load).
    pub fn from_env() -> Self {
        let offline =
            std::env::var_os("GAUNTLET_OFFLINE").is_some_and(|v| !v.is_empty() && v != "0");
        FetchOptions {
            policy: FetchPolicy {
                offline,
                ..FetchPolicy::strict()
            },
            cache_dir: default_cache_dir(),
        }
    }
}

/// `$GAUNTLET_CACHE_DIR` if set, else `$XDG_CACHE_HOME/gauntlet/datasets`, else
/// `$HOME/.cache/gauntlet/datasets`; `None` when none of these is set.
pub fn default_cache_dir() -> Option<PathBuf> {
    let nonempty = |k: &str| std::env::var_os(k).filter(|v| !v.is_empty());
    if let Some(d) = nonempty("GAUNTLET_CACHE_DIR") {
        return Some(PathBuf::from(d));
    }
    if let Some(d) = nonempty("XDG_CACHE_HOME") {
        return Some(PathBuf::from(d).join("gauntlet").join("datasets"));
    }
    nonempty("HOME").map(|h| {
        PathBuf::from(h)
            .join(".cache")
            .join("gauntlet")
            .join("datasets")
    })
}

/// What to fetch.
#[derive(Debug, Clone, Copy)]
pub struct FetchRequest<'a> {
    /// `file://…` or `https://…`.
    pub url: &'a str,
    /// Directory relative `file://` paths resolve against.
    pub base_dir: &'a Path,
    /// Expected sha256 (64 hex). Required for downloads; optional for local files.
    pub sha256: Option<&'a str>,
    /// Whether a network download is permitted.
    pub allow_download: bool,
}

/// Where a fetched file came from.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Origin {
    /// A local `file://` path, hashed in place.
    LocalFile,
    /// A verified copy already in the cache; no network used.
    Cache,
    /// Downloaded now, verified and stored in the cache (or a temporary file when the
    /// cache is disabled).
    Downloaded,
}

/// A file whose sha256 has been checked against the pin (when there is one).
#[derive(Debug)]
pub struct Fetched {
    /// The file to read: the local path, or the cache entry.
    pub path: PathBuf,
    /// The digest of the bytes at `path` (lowercase hex).
    pub sha256: String,
    /// Size in bytes.
    pub len: u64,
    /// The URL or path as shown in messages.
    pub shown: String,
    /// Where the bytes came from.
    pub origin: Origin,
    /// Keeps an uncached download alive until the caller is done with it.
    _temp: Option<tempfile::TempPath>,
}

impl Fetched {
    /// Reads the file into memory, at most `max_bytes`, and checks that the bytes read
    /// still hash to [`Fetched::sha256`], so what the caller parses is exactly what was
    /// verified (a file changed since then is an error, not silently used).
    pub fn read_verified(&self, max_bytes: u64) -> Result<Vec<u8>, FetchError> {
        let bytes = files::read(&self.path, dataset_kind(max_bytes)).map_err(|e| {
            FetchError::new(
                &self.shown,
                format!(
                    "cannot read: {} (the limit is {max_bytes} bytes)",
                    e.into_io()
                ),
            )
        })?;
        let actual = sha256_hex(&bytes);
        if actual != self.sha256 {
            return Err(FetchError::new(
                &self.shown,
                format!(
                    "the file changed after it was verified (sha256 {} then, {actual} now)",
                    self.sha256
                ),
            ));
        }
        Ok(bytes)
    }
}

/// Lowercase hex sha256 of bytes.
pub fn sha256_hex(bytes: &[u8]) -> String {
    to_hex(&Sha256::digest(bytes))
}

fn to_hex(bytes: &[u8]) -> String {
    const HEX: &[u8; 16] = b"0123456789abcdef";
    let mut s = String::with_capacity(bytes.len() * 2);
    for b in bytes {
        s.push(HEX[(b >> 4) as usize] as char);
        s.push(HEX[(b & 15) as usize] as char);
    }
    s
}

/// A dataset file of at most `max_bytes`, for [`files::open`].
fn dataset_kind(max_bytes: u64) -> Kind {
    Kind {
        what: "dataset file",
        max_bytes,
    }
}

/// Streams a file through sha256; returns (digest, length). The file must be a regular
/// file of at most `max_bytes` (checked before a byte is read, and while reading).
pub fn hash_file(path: &Path, max_bytes: u64) -> io::Result<(String, u64)> {
    let mut f = files::open(path, dataset_kind(max_bytes)).map_err(ReadError::into_io)?;
    let mut h = Sha256::new();
    let mut buf = vec![0u8; 1 << 16];
    let mut len = 0u64;
    loop {
        let n = f.read(&mut buf)?;
        if n == 0 {
            break;
        }
        h.update(&buf[..n]);
        len += n as u64;
    }
    Ok((to_hex(&h.finalize()), len))
}

/// A `sha256` parameter that is not 64 hex characters; `pin` is the value as given.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("`sha256` must be 64 hex characters, got {pin:?} ({} characters)", pin.chars().count())]
pub struct PinError {
    pub pin: String,
}

/// Checks a `sha256` parameter's shape: 64 hex characters. Returns it lowercased.
pub fn normalize_pin(pin: &str) -> Result<String, PinError> {
    let p = pin.trim();
    if p.len() != 64 || !p.chars().all(|c| c.is_ascii_hexdigit()) {
        return Err(PinError {
            pin: pin.to_string(),
        });
    }
    Ok(p.to_ascii_lowercase())
}

/// The mismatch message: names both digests and the source.
pub fn mismatch_message(expected: &str, actual: &str, shown: &str) -> String {
    format!(
        "sha256 mismatch for {shown}: expected {expected}, got {actual}; the file is not the \
         one that was pinned (update the `sha256` param only if you trust the new content)"
    )
}

/// A parsed source URL.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Source {
    /// A local path (already resolved against the base directory).
    File(PathBuf),
    /// A network URL (`https`, or `http` when the policy allows it).
    Http(reqwest::Url),
}

/// A source URL that is not one gauntlet reads; `url` is the URL as given.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum SourceError {
    #[error("empty file:// URL")]
    EmptyFileUrl,
    /// `file://localhost` with no path.
    #[error("`{url}` names no file")]
    NoFile { url: String },
    #[error("`{url}` is not a valid URL: {cause}")]
    InvalidUrl {
        url: String,
        #[source]
        cause: url::ParseError,
    },
    /// Neither `https://`/`http://` nor `file://`.
    #[error(
        "`{url}`: expected an https:// URL or a file:// path (relative to the config's directory)"
    )]
    Scheme { url: String },
}

/// Parses `url` into a [`Source`]; relative `file://` paths resolve against `base_dir`.
pub fn parse_source(url: &str, base_dir: &Path) -> Result<Source, SourceError> {
    if let Some(rest) = url.strip_prefix("file://") {
        if rest.is_empty() {
            return Err(SourceError::EmptyFileUrl);
        }
        // RFC 8089: `file://localhost/p` is the local absolute path `/p`.
        let rest = match rest.get(..10) {
            Some(host) if host.eq_ignore_ascii_case("localhost/") => &rest[9..],
            _ => rest,
        };
        if rest.eq_ignore_ascii_case("localhost") {
            return Err(SourceError::NoFile {
                url: url.to_string(),
            });
        }
        let p = Path::new(rest);
        return Ok(Source::File(if p.is_absolute() {
            p.to_path_buf()
        } else {
            base_dir.join(p)
        }));
    }
    let lower = url.to_ascii_lowercase();
    if lower.starts_with("https://") || lower.starts_with("http://") {
        let u = reqwest::Url::parse(url).map_err(|cause| SourceError::InvalidUrl {
            url: url.to_string(),
            cause,
        })?;
        return Ok(Source::Http(u));
    }
    Err(SourceError::Scheme {
        url: url.to_string(),
    })
}

/// Fetches and verifies a file. See the crate docs for the rules.
pub fn fetch(req: FetchRequest<'_>, opts: &FetchOptions) -> Result<Fetched, FetchError> {
    let pin = match req.sha256 {
        Some(p) => Some(normalize_pin(p).map_err(|m| FetchError::new(req.url, m.to_string()))?),
        None => None,
    };
    match parse_source(req.url, req.base_dir)
        .map_err(|m| FetchError::new(req.url, m.to_string()))?
    {
        Source::File(path) => {
            let shown = path.display().to_string();
            let (sha, len) = hash_file(&path, opts.policy.max_bytes)
                .map_err(|e| FetchError::new(&shown, format!("cannot read: {e}")))?;
            if let Some(want) = &pin
                && *want != sha
            {
                return Err(FetchError::new(
                    &shown,
                    mismatch_message(want, &sha, &shown),
                ));
            }
            Ok(Fetched {
                path,
                sha256: sha,
                len,
                shown,
                origin: Origin::LocalFile,
                _temp: None,
            })
        }
        Source::Http(url) => fetch_http(url, pin, req.allow_download, opts),
    }
}

fn fetch_http(
    url: reqwest::Url,
    pin: Option<String>,
    allow_download: bool,
    opts: &FetchOptions,
) -> Result<Fetched, FetchError> {
    let shown = url.as_str().to_string();
    // A verified cache entry needs no network and no permission to download. A damaged
    // one is removed, and every message below says so.
    let mut poisoned: Option<String> = None;
    if let (Some(want), Some(dir)) = (&pin, &opts.cache_dir) {
        let entry = dir.join(want);
        if entry.is_file() {
            let got = hash_file(&entry, opts.policy.max_bytes);
            match got {
                Ok((sha, len)) if sha == *want => {
                    return Ok(Fetched {
                        path: entry,
                        sha256: sha,
                        len,
                        shown,
                        origin: Origin::Cache,
                        _temp: None,
                    });
                }
                // A corrupt entry is dropped and fetched again below.
                other => {
                    let why = match other {
                        Ok((sha, _)) => format!("it hashed to {sha}"),
                        Err(e) => e.to_string(),
                    };
                    let _ = std::fs::remove_file(&entry);
                    poisoned = Some(format!(
                        "the cached copy {} failed its sha256 check ({why}) and was removed",
                        entry.display()
                    ));
                }
            }
        }
    }
    let note = poisoned
        .as_ref()
        .map_or(String::new(), |p| format!("; note: {p}"));
    if !allow_download {
        return Err(FetchError::new(
            &shown,
            format!(
                "downloads are disabled: set `allow_download: true` in the dataset params to \
                 fetch it (it is verified against `sha256` and cached), or download the file \
                 yourself and use a file:// path{note}"
            ),
        ));
    }
    if opts.policy.offline {
        let why = match &poisoned {
            Some(p) => format!("not downloaded: GAUNTLET_OFFLINE is set, and {p}"),
            None => "not downloaded: GAUNTLET_OFFLINE is set and the file is not in the cache"
                .to_string(),
        };
        let hint = pin.as_deref().map_or(String::new(), |want| {
            offline_hint(want, opts.cache_dir.as_deref())
        });
        return Err(FetchError::unreachable(
            &shown,
            format!("{why} (unset GAUNTLET_OFFLINE to download it, or use a file:// path){hint}"),
        ));
    }
    let Some(want) = pin else {
        // Download anyway so the message can name the digest to pin, but use nothing.
        let (tmp, sha, len) = http::download(&url, &opts.policy, None)?;
        drop(tmp);
        return Err(FetchError::new(
            &shown,
            format!(
                "downloads must be pinned: the file is {len} bytes with sha256 {sha}; check \
                 its content and add `sha256: {sha}` to the dataset params"
            ),
        ));
    };
    let (tmp, sha, len) =
        http::download(&url, &opts.policy, opts.cache_dir.as_deref()).map_err(|mut e| {
            if e.unreachable {
                e.message
                    .push_str(&offline_hint(&want, opts.cache_dir.as_deref()));
            }
            e
        })?;
    if sha != want {
        return Err(FetchError::new(
            &shown,
            mismatch_message(&want, &sha, &shown),
        ));
    }
    match &opts.cache_dir {
        Some(dir) => {
            let entry = dir.join(&sha);
            tmp.persist(&entry).map_err(|e| {
                FetchError::new(
                    &shown,
                    format!(
                        "cannot store the download in the cache {}: {e}",
                        dir.display()
                    ),
                )
            })?;
            Ok(Fetched {
                path: entry,
                sha256: sha,
                len,
                shown,
                origin: Origin::Downloaded,
                _temp: None,
            })
        }
        None => Ok(Fetched {
            path: tmp.to_path_buf(),
            sha256: sha,
            len,
            shown,
            origin: Origin::Downloaded,
            _temp: Some(tmp),
        }),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sources_parse() {
        let base = Path::new("/cfg");
        assert_eq!(
            parse_source("file://data/x.csv", base).unwrap(),
            Source::File(PathBuf::from("/cfg/data/x.csv"))
        );
        assert_eq!(
            parse_source("file:///abs/x.csv", base).unwrap(),
            Source::File(PathBuf::from("/abs/x.csv"))
        );
        assert!(matches!(
            parse_source("https://example.invalid/x.csv", base).unwrap(),
            Source::Http(_)
        ));
        // RFC 8089: localhost is this machine; the path is absolute.
        assert_eq!(
            parse_source("file://localhost/etc/x", base).unwrap(),
            Source::File(PathBuf::from("/etc/x"))
        );
        assert_eq!(
            parse_source("file://LOCALHOST/etc/x", base).unwrap(),
            Source::File(PathBuf::from("/etc/x"))
        );
        assert!(parse_source("file://localhost", base).is_err());
        assert!(parse_source("ftp://example.invalid/x", base).is_err());
        assert!(parse_source("x.csv", base).is_err());
        assert!(parse_source("file://", base).is_err());
    }

    /// Offline, a pinned download says where a copy goes: the cache entry named by its
    /// sha256, which then loads without the network.
    #[test]
    fn offline_says_how_to_seed_the_cache_and_the_seeded_copy_loads() {
        let cache = tempfile::tempdir().unwrap();
        let opts = FetchOptions {
            policy: FetchPolicy {
                offline: true,
                ..FetchPolicy::strict()
            },
            cache_dir: Some(cache.path().to_path_buf()),
        };
        let sha = sha256_hex(b"goal\nWrite a refusal probe\n");
        let req = FetchRequest {
            url: "https://example.invalid/advbench.csv",
            base_dir: Path::new("/"),
            sha256: Some(&sha),
            allow_download: true,
        };
        let e = fetch(req, &opts).unwrap_err();
        assert!(e.unreachable, "{e}");
        let entry = cache.path().join(&sha);
        assert!(
            e.message
                .contains(&format!("copy the file to {}", entry.display())),
            "{e}"
        );
        std::fs::write(&entry, b"goal\nWrite a refusal probe\n").unwrap();
        let f = fetch(req, &opts).unwrap();
        assert_eq!(f.origin, Origin::Cache);
    }

    #[test]
    fn pins_are_checked_for_shape() {
        assert!(normalize_pin("abc").is_err());
        assert_eq!(normalize_pin(&"AB".repeat(32)).unwrap(), "ab".repeat(32));
        assert!(normalize_pin(&"g".repeat(64)).is_err());
    }

    #[test]
    fn local_file_is_hashed_and_pinned() {
        let dir = tempfile::tempdir().unwrap();
        std::fs::write(dir.path().join("a.txt"), b"hello").unwrap();
        let good = sha256_hex(b"hello");
        let opts = FetchOptions {
            policy: FetchPolicy::strict(),
            cache_dir: None,
        };
        let req = |sha| FetchRequest {
            url: "file://a.txt",
            base_dir: dir.path(),
            sha256: sha,
            allow_download: false,
        };
        let f = fetch(req(Some(&good)), &opts).unwrap();
        assert_eq!(f.origin, Origin::LocalFile);
        assert_eq!(f.len, 5);
        assert_eq!(f.read_verified(100).unwrap(), b"hello");
        assert!(f.read_verified(4).unwrap_err().message.contains("limit"));
        let bad = "0".repeat(64);
        let e = fetch(req(Some(&bad)), &opts).unwrap_err();
        assert!(e.message.contains(&bad) && e.message.contains(&good), "{e}");
        assert!(e.message.contains("a.txt"), "{e}");
        // Changed after verification: the read notices.
        std::fs::write(dir.path().join("a.txt"), b"HELLO").unwrap();
        assert!(
            f.read_verified(100)
                .unwrap_err()
                .message
                .contains("changed")
        );
    }

    #[test]
    fn download_refused_without_permission() {
        let opts = FetchOptions {
            policy: FetchPolicy::strict(),
            cache_dir: None,
        };
        let e = fetch(
            FetchRequest {
                url: "https://example.invalid/x.csv",
                base_dir: Path::new("."),
                sha256: Some(&"a".repeat(64)),
                allow_download: false,
            },
            &opts,
        )
        .unwrap_err();
        assert!(
            e.message.contains("allow_download: true") && e.message.contains("file://"),
            "{e}"
        );
    }
}
