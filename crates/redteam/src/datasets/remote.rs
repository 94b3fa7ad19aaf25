//! `remote`: behaviors from a JSON file `{"behaviors": [...]}` named by URL.
//!
//! Sources go through `gauntlet-fetch`: `file://` paths (absolute, or relative to the
//! run config's directory) and `https://` URLs, downloaded only with
//! `allow_download: true` under the strict policy (public addresses only, checked on
//! every redirect hop; 64 MiB; 30 s) and cached by content. The `sha256` pins the
//! content: a mismatch stops the run before anything is parsed. A local file may go
//! unpinned (the version still records its actual hash); a download must be pinned.

use super::{Dataset, DatasetError, apply_limit, parse_behaviors, version};
use gauntlet_core::params::{Axis, DefaultValue, ParamKind, ParamSpec, PluginInfo, PluginSpec};
use gauntlet_fetch::{FetchOptions, FetchRequest, Origin, fetch};
use std::path::{Path, PathBuf};

/// Registration.
pub const INFO: PluginInfo = PluginInfo {
    axis: Axis::Dataset,
    name: "remote",
    doc: "behaviors from a JSON file ({\"behaviors\": [...]}) at an https:// URL or file:// path, sha256-pinned",
    params: &[
        ParamSpec {
            name: "url",
            kind: ParamKind::Str,
            default: DefaultValue::Required,
            doc: "https://host/path.json (needs allow_download and sha256), file:///abs/path.json or file://relative/to/config.json",
        },
        ParamSpec {
            name: "sha256",
            kind: ParamKind::Str,
            default: DefaultValue::Absent,
            doc: "expected sha256 of the file (64 hex); required for https",
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
            doc: "permit the https download (verified against sha256, then cached)",
        },
    ],
};

/// Resolves a `file://` URL to a path.
pub fn file_url_path(url: &str, base_dir: &Path) -> Result<PathBuf, String> {
    match gauntlet_fetch::parse_source(url, base_dir)? {
        gauntlet_fetch::Source::File(p) => Ok(p),
        gauntlet_fetch::Source::Http(_) => Err(format!("`{url}`: expected a file:// URL")),
    }
}

/// Loads the set (see the module docs).
pub fn load(
    spec: &PluginSpec,
    base_dir: &Path,
    opts: &FetchOptions,
) -> Result<Dataset, DatasetError> {
    let url = spec.params.str("url").unwrap_or_default();
    let name = spec.params.str("name").unwrap_or("remote").to_string();
    let fetched = fetch(
        FetchRequest {
            url,
            base_dir,
            sha256: spec.params.str("sha256"),
            allow_download: spec.params.bool("allow_download").unwrap_or(false),
        },
        opts,
    )
    .map_err(DatasetError::from)?;
    let shown = fetched.shown.clone();
    let behaviors = match fetched.origin {
        // A local file: read once and parse exactly the bytes hashed again here, so a
        // file changed after the fetch layer checked its pin fails the pin instead of
        // being parsed unverified (and parsing a slice is several times faster than a
        // reader).
        Origin::LocalFile => {
            let bytes =
                gauntlet_core::files::read(&fetched.path, gauntlet_core::files::Kind::DATASET)
                    .map_err(|e| {
                        DatasetError::new(&shown, format!("cannot read: {}", e.into_io()))
                    })?;
            parse_behaviors(&bytes, &shown, Some(&fetched.sha256))?.1
        }
        // A download (at most the policy's cap): parse exactly the verified bytes.
        Origin::Cache | Origin::Downloaded => {
            let bytes = fetched
                .read_verified(opts.policy.max_bytes)
                .map_err(DatasetError::from)?;
            parse_behaviors(&bytes, &shown, Some(&fetched.sha256))?.1
        }
    };
    let (behaviors, limit) = apply_limit(behaviors, spec.params.int("limit"));
    Ok(Dataset {
        version: version(&name, &fetched.sha256, limit),
        name,
        sha256: fetched.sha256,
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
            label: None,
        }
    }

    fn load_file(spec: &PluginSpec, base: &Path) -> Result<Dataset, DatasetError> {
        let opts = FetchOptions {
            policy: gauntlet_fetch::FetchPolicy::strict(),
            cache_dir: None,
        };
        load(spec, base, &opts)
    }

    #[test]
    fn loads_relative_file_and_checks_pin() {
        let dir = tempfile::tempdir().unwrap();
        let body = br#"{"behaviors":[{"id":"a","prompt":"hello","expected":"should_comply"}]}"#;
        std::fs::write(dir.path().join("b.json"), body).unwrap();
        let d = load_file(&spec("file://b.json", None), dir.path()).unwrap();
        assert_eq!(d.behaviors.len(), 1);
        assert!(d.version.starts_with("mine@"));
        let good = gauntlet_core::hash::sha256_hex(body);
        assert!(load_file(&spec("file://b.json", Some(&good)), dir.path()).is_ok());
        let bad = "0".repeat(64);
        let e = load_file(&spec("file://b.json", Some(&bad)), dir.path()).unwrap_err();
        assert!(
            e.message.contains("sha256 mismatch")
                && e.message.contains(&good)
                && e.message.contains(&bad),
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
        let e = load_file(&spec("file://b.json", None), dir.path()).unwrap_err();
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
        let e = load_file(&spec("file://d.json", None), dir.path()).unwrap_err();
        assert!(e.message.contains("duplicate behavior id `a`"), "{e}");
        let e = load_file(&spec("https://example.invalid/x.json", None), dir.path()).unwrap_err();
        assert!(
            e.message.contains("allow_download: true") && e.message.contains("file://"),
            "{e}"
        );
    }

    proptest::proptest! {
        #[test]
        fn parser_never_panics(s in proptest::collection::vec(proptest::num::u8::ANY, 0..400)) {
            let _ = super::super::parse_behaviors(&s, "fuzz", None);
        }
    }
}
