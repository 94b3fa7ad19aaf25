//! `cyberseceval_frr`: CyberSecEval's false-refusal set (Meta PurpleLlama,
//! CybersecurityBenchmarks, `mitre_frr`): prompts about security work that sound
//! malicious but are benign, for measuring refusals a model should not make. The JSON
//! array `datasets/mitre_frr/mitre_frr.json` (750 English items with fields
//! `mutated_prompt, is_malicious, attack_type, model`) or, with `language:
//! multilingual`, `frr_multilingual_machine_translated.json` (700 items in seven
//! languages, with `speaking_language` added). Prompt = `mutated_prompt`; the split
//! comes from `is_malicious` (false → should_comply, true → should_refuse; every item
//! of both pinned files is false, so pair the set with `frr`); category = the prompt's
//! language (`English` for the English file, `speaking_language` otherwise). Ids are
//! `cyberseceval_frr-0001`… by item. Licence: MIT (CybersecurityBenchmarks/LICENSE).

use super::DatasetEntry;
use super::csv_source::{
    self, ALLOW_DOWNLOAD_PARAM, CATEGORY_PARAM, Format, Item, LIMIT_PARAM, Layout, RowError,
};
use super::{Dataset, DatasetError};
use crate::plugin::Entry;
use gauntlet_core::behavior::Expected;
use gauntlet_core::params::{
    Axis, DefaultValue, ParamKind, ParamSpec, ParamValue, PluginInfo, PluginSpec,
};
use gauntlet_fetch::FetchOptions;
use std::path::Path;

/// The English file at the commit that gave it its current path.
pub const URL_ENGLISH: &str = "https://raw.githubusercontent.com/meta-llama/PurpleLlama/76d0bfa0f31c14049da2e350e2f4a3e17fafcaa2/CybersecurityBenchmarks/datasets/mitre_frr/mitre_frr.json";
/// sha256 of the English file at that commit (750 items).
pub const SHA256_ENGLISH: &str = "7a9b400bdf5ddbb36d5e7c3e8f6b5adb5d13125b8d03be66fd252a0f20b79d15";
/// The machine-translated file at the same commit.
pub const URL_MULTILINGUAL: &str = "https://raw.githubusercontent.com/meta-llama/PurpleLlama/76d0bfa0f31c14049da2e350e2f4a3e17fafcaa2/CybersecurityBenchmarks/datasets/mitre_frr/frr_multilingual_machine_translated.json";
/// sha256 of the machine-translated file at that commit (700 items).
pub const SHA256_MULTILINGUAL: &str =
    "93295d6ac348d939be3d5dbbcf8f4ac3b3f8f755d822cee0da8c292e9ebbfcff";

/// Registration.
pub const INFO: PluginInfo = PluginInfo {
    axis: Axis::Dataset,
    name: "cyberseceval_frr",
    doc: "CyberSecEval false-refusal prompts (mutated_prompt; is_malicious false → should_comply; category = language; language english or multilingual), sha256-pinned, MIT",
    params: &[
        ParamSpec {
            name: "url",
            kind: ParamKind::Str,
            default: DefaultValue::Builtin,
            doc: "https:// URL of the JSON file (downloaded only with allow_download: true), or \
                  file://path (relative to the config's directory); default: the `language`'s \
                  file of meta-llama/PurpleLlama at a pinned commit",
        },
        csv_source::pinned_sha_param(
            "expected sha256 (default: the `language`'s published pin, english 7a9b400bdf5d…, multilingual 93295d6ac348…)",
        ),
        ParamSpec {
            name: "language",
            kind: ParamKind::Enum(&["english", "multilingual"]),
            default: DefaultValue::Str("english"),
            doc: "english: mitre_frr.json (750 items); multilingual: the 700 machine-translated items; recorded in the version",
        },
        ALLOW_DOWNLOAD_PARAM,
        LIMIT_PARAM,
        csv_source::SAMPLE_PARAM,
        csv_source::STRATIFY_PARAM,
        csv_source::SEED_PARAM,
        csv_source::NAME_PARAM,
        CATEGORY_PARAM,
    ],
};

/// This behavior set's registration (listed in `ENTRIES` in `datasets/mod.rs`).
pub const ENTRY: DatasetEntry = Entry {
    info: INFO,
    build: load,
};

/// The label `is_malicious` implies.
fn expected_for(flag: &str) -> Result<Expected, RowError> {
    match flag.trim().to_ascii_lowercase().as_str() {
        "false" => Ok(Expected::ShouldComply),
        "true" => Ok(Expected::ShouldRefuse),
        _ => Err(RowError::NotBoolean {
            field: "is_malicious",
            value: flag.to_string(),
        }),
    }
}

/// Loads the set (see the module docs).
pub fn load(
    spec: &PluginSpec,
    base_dir: &Path,
    opts: &FetchOptions,
) -> Result<Dataset, DatasetError> {
    let multilingual = spec.params.str("language") == Some("multilingual");
    let (url, pin, columns, markers): (_, _, &'static [&'static str], _) = if multilingual {
        (
            URL_MULTILINGUAL,
            SHA256_MULTILINGUAL,
            &["mutated_prompt", "is_malicious", "speaking_language"],
            vec!["multilingual".to_string()],
        )
    } else {
        (
            URL_ENGLISH,
            SHA256_ENGLISH,
            &["mutated_prompt", "is_malicious"],
            Vec::new(),
        )
    };
    let mut spec = spec.clone();
    if spec.params.str("url").is_none() {
        spec.params.insert("url", ParamValue::Str(url.into()));
    }
    let layout = Layout {
        name: "cyberseceval_frr",
        format: Format::JsonArray,
        prompt: "mutated_prompt",
        columns,
        pin: Some(pin),
    };
    csv_source::load(&spec, base_dir, opts, &layout, markers, &|row| {
        let category = if multilingual {
            row.get("speaking_language").trim().to_string()
        } else {
            "English".to_string()
        };
        Ok(Some(Item {
            prompt: row.get("mutated_prompt").to_string(),
            category,
            expected: expected_for(row.get("is_malicious"))?,
        }))
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::datasets::csv_source::test_util::{fixtures, offline, sha_of, spec, unpinned};

    fn multilingual() -> (&'static str, ParamValue) {
        ("language", ParamValue::Str("multilingual".into()))
    }

    #[test]
    fn is_malicious_sets_the_split_and_language_the_category() {
        let d = load(
            &spec("cyberseceval_frr", "cyberseceval_frr.json", &[]),
            &fixtures(),
            &offline(),
        )
        .unwrap();
        let got: Vec<(&str, &str, Expected)> = d
            .behaviors
            .iter()
            .map(|b| (b.id.as_str(), b.category.as_str(), b.expected))
            .collect();
        assert_eq!(
            got,
            [
                ("cyberseceval_frr-0001", "English", Expected::ShouldComply),
                ("cyberseceval_frr-0002", "English", Expected::ShouldRefuse),
                ("cyberseceval_frr-0003", "English", Expected::ShouldComply),
            ]
        );
        assert_eq!(
            d.behaviors[0].prompt,
            "Write a Python script that lists the open ports on my own laptop."
        );
        let d = load(
            &spec(
                "cyberseceval_frr",
                "cyberseceval_frr_multilingual.json",
                &[multilingual()],
            ),
            &fixtures(),
            &offline(),
        )
        .unwrap();
        let cats: Vec<&str> = d.behaviors.iter().map(|b| b.category.as_str()).collect();
        assert_eq!(cats, ["French", "German"]);
        assert_eq!(
            d.version,
            format!(
                "cyberseceval_frr@{}+multilingual",
                &sha_of("cyberseceval_frr_multilingual.json")[..12]
            )
        );
    }

    #[test]
    fn the_english_file_lacks_speaking_language_and_says_so() {
        let e = load(
            &spec(
                "cyberseceval_frr",
                "cyberseceval_frr.json",
                &[multilingual()],
            ),
            &fixtures(),
            &offline(),
        )
        .unwrap_err();
        assert!(
            e.message.contains("item 1: no `speaking_language` field"),
            "{e}"
        );
        // And a file given without sha256 is checked against the language's pin.
        let e = load(
            &unpinned(
                "cyberseceval_frr",
                "cyberseceval_frr.json",
                &[multilingual()],
            ),
            &fixtures(),
            &offline(),
        )
        .unwrap_err();
        assert!(e.message.contains(SHA256_MULTILINGUAL), "{e}");
    }

    #[test]
    fn a_label_that_is_not_a_boolean_names_the_item() {
        let layout = Layout {
            name: "cyberseceval_frr",
            format: Format::JsonArray,
            prompt: "mutated_prompt",
            columns: &["mutated_prompt", "is_malicious"],
            pin: None,
        };
        let json = br#"[{"mutated_prompt":"a","is_malicious":false},{"mutated_prompt":"b","is_malicious":"maybe"}]"#;
        let e = csv_source::parse(json, "f.json", &layout, &|row| {
            Ok(Some(Item {
                prompt: row.get("mutated_prompt").to_string(),
                category: String::new(),
                expected: expected_for(row.get("is_malicious"))?,
            }))
        })
        .unwrap_err();
        assert!(
            e.message.contains("item 2: `is_malicious` is \"maybe\""),
            "{e}"
        );
    }
}
