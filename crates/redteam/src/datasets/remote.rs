//! `remote`: behaviors from a JSON file `{"behaviors": [...]}` named by URL.
//!
//! Sources go through `gauntlet-fetch`: `file://` paths (absolute, or relative to the
//! run config's directory) and `https://` URLs, downloaded only with
//! `allow_download: true` under the strict policy (public addresses only, checked on
//! every redirect hop; 64 MiB; 30 s) and cached by content. The `sha256` pins the
//! content: a mismatch stops the run before anything is parsed. A local file may go
//! unpinned (the version still records its actual hash); a download must be pinned.

use super::DatasetEntry;
use super::{Dataset, DatasetError, apply_limit, parse_behaviors, parse_behaviors_reader, version};
use crate::plugin::Entry;
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

/// This behavior set's registration (listed in `ENTRIES` in `datasets/mod.rs`).
pub const ENTRY: DatasetEntry = Entry {
    info: INFO,
    build: load,
};

/// Local dataset files larger than this stream through the parser instead of being read
/// whole first (see [`load`]).
const STREAM_ABOVE: u64 = 16 << 20;

/// Why a URL names no local file.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum FileUrlError {
    /// Not a source at all.
    #[error(transparent)]
    Source(#[from] gauntlet_fetch::SourceError),
    /// An `https://` URL.
    #[error("`{url}`: expected a file:// URL")]
    NotFile { url: String },
}

/// Resolves a `file://` URL to a path.
pub fn file_url_path(url: &str, base_dir: &Path) -> Result<PathBuf, FileUrlError> {
    match gauntlet_fetch::parse_source(url, base_dir)? {
        gauntlet_fetch::Source::File(p) => Ok(p),
        gauntlet_fetch::Source::Http(_) => Err(FileUrlError::NotFile {
            url: url.to_string(),
        }),
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
        // A local file: hashing exactly the bytes parsed, so a file changed after the
        // fetch layer checked its pin fails the pin instead of being used unverified.
        // Up to STREAM_ABOVE bytes it is read whole and parsed from memory (several
        // times faster); a larger one is parsed as it streams from disk, so it is never
        // held whole beside the behaviors parsed from it (peak memory).
        Origin::LocalFile => {
            let file =
                gauntlet_core::files::open(&fetched.path, gauntlet_core::files::Kind::DATASET)
                    .map_err(|e| {
                        DatasetError::new(&shown, format!("cannot read: {}", e.into_io()))
                    })?;
            if file.len > STREAM_ABOVE {
                parse_behaviors_reader(file, &shown, Some(&fetched.sha256))?.1
            } else {
                let kind = gauntlet_core::files::Kind::DATASET;
                let mut bytes = Vec::with_capacity(file.len as usize);
                std::io::Read::read_to_end(&mut { file }, &mut bytes).map_err(|e| {
                    let e = gauntlet_core::files::read_error(&fetched.path, kind, e);
                    DatasetError::new(&shown, format!("cannot read: {}", e.into_io()))
                })?;
                parse_behaviors(&bytes, &shown, Some(&fetched.sha256))?.1
            }
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
        provenance: None,
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

    /// A file above the streaming threshold loads through the streaming parser with the
    /// same behaviors and pin handling as a small one.
    #[test]
    fn a_large_file_streams_with_the_same_result_and_pin() {
        let dir = tempfile::tempdir().unwrap();
        let mut body = String::from("{\"behaviors\": [");
        let mut n = 0;
        while body.len() as u64 <= STREAM_ABOVE {
            if n > 0 {
                body.push(',');
            }
            body.push_str(&format!(
                "{{\"id\":\"b{n}\",\"prompt\":\"{}\",\"expected\":\"should_comply\"}}",
                "a benign probe request ".repeat(8)
            ));
            n += 1;
        }
        body.push_str("]}");
        std::fs::write(dir.path().join("big.json"), &body).unwrap();
        let good = gauntlet_core::hash::sha256_hex(body.as_bytes());
        let d = load_file(&spec("file://big.json", Some(&good)), dir.path()).unwrap();
        assert_eq!(d.behaviors.len(), n);
        assert_eq!(d.sha256, good);
        assert_eq!(
            d.behaviors,
            super::super::read_behaviors(body.as_bytes(), "x").unwrap()
        );
        let bad = "0".repeat(64);
        let e = load_file(&spec("file://big.json", Some(&bad)), dir.path()).unwrap_err();
        assert!(e.message.contains("sha256 mismatch"), "{e}");
    }

    proptest::proptest! {
        #[test]
        fn parser_never_panics(s in proptest::collection::vec(proptest::num::u8::ANY, 0..400)) {
            let _ = super::super::parse_behaviors(&s, "fuzz", None);
        }

        /// The streaming parse (local files) accepts and rejects exactly what the
        /// in-memory parse does, with the same digest and behaviors.
        #[test]
        fn streaming_parse_agrees_with_the_slice_parse(
            s in proptest::collection::vec(proptest::num::u8::ANY, 0..400),
            items in proptest::collection::vec(("[a-z]{0,3}", "\\PC{0,12}", "[ \n]{0,2}"), 0..6),
        ) {
            let body: Vec<String> = items
                .iter()
                .map(|(id, prompt, ws)| format!(
                    "{ws}{{\"id\":{},\"prompt\":{}}}",
                    serde_json::to_string(id).unwrap(),
                    serde_json::to_string(prompt).unwrap(),
                ))
                .collect();
            let json = format!("{{\"behaviors\": [{}]}}\n", body.join(","));
            for bytes in [s, json.into_bytes()] {
                let slice = super::super::parse_behaviors(&bytes, "fuzz", None);
                let streamed = super::super::parse_behaviors_reader(&bytes[..], "fuzz", None);
                match (slice, streamed) {
                    (Ok(a), Ok(b)) => proptest::prop_assert_eq!(a, b),
                    (Err(_), Err(_)) => {}
                    (a, b) => proptest::prop_assert!(false, "slice {a:?} vs streamed {b:?}"),
                }
            }
        }
    }

    #[test]
    fn a_changed_file_that_no_longer_parses_reports_the_pin_not_the_syntax() {
        let pinned = gauntlet_core::hash::sha256_hex(br#"{"behaviors":[{"id":"a","prompt":"x"}]}"#);
        let e = super::super::parse_behaviors_reader(
            &b"{\"behaviors\": [oops"[..],
            "d.json",
            Some(&pinned),
        )
        .unwrap_err();
        assert!(e.message.contains("sha256 mismatch"), "{e}");
        let e = super::super::parse_behaviors_reader(&b"{\"behaviors\": [oops"[..], "d.json", None)
            .unwrap_err();
        assert!(e.message.contains("line 1 column"), "{e}");
    }
}
