//! `remote`: behaviors from a JSON file `{"behaviors": [...]}` named by URL.
//!
//! This build reads `file://` URLs (absolute, or relative to the run config's
//! directory). The optional `sha256` pins the content: a mismatch stops the run before
//! anything is parsed. Without a pin the version still records the actual hash.

use super::{Dataset, DatasetError, apply_limit, check_pin, read_behaviors, version};
use gauntlet_core::params::{Axis, DefaultValue, ParamKind, ParamSpec, PluginInfo, PluginSpec};
use std::path::{Path, PathBuf};

pub const INFO: PluginInfo = PluginInfo {
    axis: Axis::Dataset,
    name: "remote",
    doc: "behaviors from a JSON file ({\"behaviors\": [...]}) at a file:// URL, optionally sha256-pinned",
    params: &[
        ParamSpec {
            name: "url",
            kind: ParamKind::Str,
            default: DefaultValue::Required,
            doc: "file:///abs/path.json or file://relative/to/config.json",
        },
        ParamSpec {
            name: "sha256",
            kind: ParamKind::Str,
            default: DefaultValue::Absent,
            doc: "expected sha256 of the file (64 hex)",
        },
        ParamSpec {
            name: "name",
            kind: ParamKind::Str,
            default: DefaultValue::Str("remote"),
            doc: "label in reports and in the version string",
        },
        ParamSpec {
            name: "limit",
            kind: ParamKind::Int {
                min: 1,
                max: 10_000_000,
            },
            default: DefaultValue::Absent,
            doc: "use only the first N behaviors (recorded in the version)",
        },
        ParamSpec {
            name: "allow_download",
            kind: ParamKind::Bool,
            default: DefaultValue::Bool(false),
            doc: "permit network downloads (https sources)",
        },
    ],
};

/// Resolves a `file://` URL to a path.
pub fn file_url_path(url: &str, base_dir: &Path) -> Result<PathBuf, String> {
    let Some(rest) = url.strip_prefix("file://") else {
        return Err(
            if url.starts_with("https://") || url.starts_with("http://") {
                format!(
                    "`{url}`: network sources are not supported by this build's `remote` dataset; download the file and use a file:// URL"
                )
            } else {
                format!("`{url}`: expected a file:// URL")
            },
        );
    };
    if rest.is_empty() {
        return Err("empty file:// URL".into());
    }
    let p = Path::new(rest);
    Ok(if p.is_absolute() {
        p.to_path_buf()
    } else {
        base_dir.join(p)
    })
}

pub fn load(spec: &PluginSpec, base_dir: &Path) -> Result<Dataset, DatasetError> {
    let url = spec.params.str("url").unwrap_or_default();
    let name = spec.params.str("name").unwrap_or("remote").to_string();
    let pin = spec.params.str("sha256");
    if let Some(p) = pin
        && (p.len() != 64 || !p.chars().all(|c| c.is_ascii_hexdigit()))
    {
        return Err(DatasetError::new(
            url,
            format!("`sha256` must be 64 hex characters, got {p:?}"),
        ));
    }
    let path = file_url_path(url, base_dir).map_err(|m| DatasetError::new(&name, m))?;
    let shown = path.display().to_string();
    // Hash first (streaming), parse only what matches the pin, streaming again: a large
    // file is never held in memory whole.
    let cannot = |e: std::io::Error| DatasetError::new(&shown, format!("cannot read: {e}"));
    let mut hasher = gauntlet_core::hash::HashWriter::new();
    let mut f = std::fs::File::open(&path).map_err(cannot)?;
    std::io::copy(&mut f, &mut hasher).map_err(cannot)?;
    // Bytes written through io::Write are hashed unframed: this is the file's plain sha256.
    let sha = hasher.finish_hex();
    check_pin(&shown, pin, &sha)?;
    let f = std::fs::File::open(&path).map_err(cannot)?;
    let behaviors = read_behaviors(std::io::BufReader::with_capacity(1 << 16, f), &shown)?;
    let (behaviors, limit) = apply_limit(behaviors, spec.params.int("limit"));
    Ok(Dataset {
        version: version(&name, &sha, limit),
        name,
        sha256: sha,
        behaviors,
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use gauntlet_core::params::{ParamValue, Params};

    fn spec(url: &str, sha: Option<&str>) -> PluginSpec {
        let mut p = Params::new();
        p.insert("url", ParamValue::Str(url.into()));
        p.insert("name", ParamValue::Str("mine".into()));
        if let Some(s) = sha {
            p.insert("sha256", ParamValue::Str(s.into()));
        }
        PluginSpec {
            name: "remote".into(),
            params: p,
            loc: Default::default(),
        }
    }

    #[test]
    fn loads_relative_file_and_checks_pin() {
        let dir = tempfile::tempdir().unwrap();
        let body = br#"{"behaviors":[{"id":"a","prompt":"hello","expected":"should_comply"}]}"#;
        std::fs::write(dir.path().join("b.json"), body).unwrap();
        let d = load(&spec("file://b.json", None), dir.path()).unwrap();
        assert_eq!(d.behaviors.len(), 1);
        assert!(d.version.starts_with("mine@"));
        let good = gauntlet_core::hash::sha256_hex(body);
        assert!(load(&spec("file://b.json", Some(&good)), dir.path()).is_ok());
        let bad = "0".repeat(64);
        let e = load(&spec("file://b.json", Some(&bad)), dir.path()).unwrap_err();
        assert!(
            e.message.contains("sha256 mismatch") && e.message.contains(&good),
            "{e}"
        );
    }

    #[test]
    fn bad_files_name_the_place() {
        let dir = tempfile::tempdir().unwrap();
        std::fs::write(
            dir.path().join("b.json"),
            "{\"behaviors\": [\n {\"id\": \"a\", \"promt\": \"x\"}]}",
        )
        .unwrap();
        let e = load(&spec("file://b.json", None), dir.path()).unwrap_err();
        assert!(e.source_name.ends_with("b.json"));
        assert!(
            e.message.contains("line 2") && e.message.contains("promt"),
            "{e}"
        );
        std::fs::write(
            dir.path().join("d.json"),
            r#"{"behaviors":[{"id":"a","prompt":"x"},{"id":"a","prompt":"y"}]}"#,
        )
        .unwrap();
        let e = load(&spec("file://d.json", None), dir.path()).unwrap_err();
        assert!(e.message.contains("duplicate behavior id `a`"), "{e}");
        let e = load(&spec("https://example.invalid/x.json", None), dir.path()).unwrap_err();
        assert!(e.message.contains("file://"), "{e}");
    }

    proptest::proptest! {
        #[test]
        fn parser_never_panics(s in proptest::collection::vec(proptest::num::u8::ANY, 0..400)) {
            let _ = super::super::parse_behaviors(&s, "fuzz", None);
        }
    }
}
