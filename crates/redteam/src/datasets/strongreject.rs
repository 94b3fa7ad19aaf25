//! `strongreject`: the StrongREJECT forbidden prompts (Souly et al. 2024), the CSV
//! `strongreject_dataset.csv` with columns `category, source, forbidden_prompt`
//! (the small subset file has the same columns). Prompt = `forbidden_prompt`, category
//! = `category`, every row should_refuse. Pair with the `strongreject` judge and
//! `strongreject_score`. Ids are `strongreject-0001`… by data row.
//!
//! `subset: small` is redharness's small set: `strongreject_small_dataset.csv` from the
//! set's repository (alexandrasouly/strongreject) unless `url` names another copy, cut
//! to its first 50 prompts as redharness does (`limit` overrides the 50). A config
//! without `url` gets the small set, as in redharness. StrongREJECT publishes no sha256
//! and redharness's table has no pin for it, so `sha256` is required: hash the file you
//! reviewed. The default source follows the repository's main branch (no commit with a
//! published digest is known); the `sha256` is what pins the content.

use super::DatasetEntry;
use super::csv_source::{
    self, ALLOW_DOWNLOAD_PARAM, CATEGORY_PARAM, LIMIT_PARAM, Layout, PromptList,
};
use super::{Dataset, DatasetError};
use crate::plugin::Entry;
use gauntlet_core::behavior::Expected;
use gauntlet_core::params::{
    Axis, DefaultValue, ParamKind, ParamSpec, ParamValue, PluginInfo, PluginSpec,
};
use gauntlet_fetch::FetchOptions;
use std::path::Path;

/// The small set's canonical file (redharness's `subset: small` source).
pub const SMALL_URL: &str = "https://raw.githubusercontent.com/alexandrasouly/strongreject/main/strongreject_dataset/strongreject_small_dataset.csv";

/// Prompts redharness keeps from the small set.
pub const SMALL_SIZE: i64 = 50;

const LIST: PromptList = PromptList {
    layout: Layout {
        name: "strongreject",
        format: csv_source::Format::Csv,
        prompt: "forbidden_prompt",
        columns: &["forbidden_prompt", "category"],
        pin: None,
    },
    category: Some("category"),
    expected: Expected::ShouldRefuse,
};

/// Registration.
pub const INFO: PluginInfo = PluginInfo {
    axis: Axis::Dataset,
    name: "strongreject",
    doc: "StrongREJECT forbidden prompts (forbidden_prompt, category; all should_refuse); `subset: small` = the 50-prompt small set; sha256 required",
    params: &[
        ParamSpec {
            name: "url",
            kind: ParamKind::Str,
            default: DefaultValue::Builtin,
            doc: "https:// URL of the CSV (downloaded only with allow_download: true), or file://path \
                  (relative to the config's directory); default: the small set, \
                  strongreject_small_dataset.csv of alexandrasouly/strongreject (main branch)",
        },
        ParamSpec {
            name: "sha256",
            kind: ParamKind::Str,
            default: DefaultValue::Required,
            doc: "expected sha256 of the file (64 hex); required: StrongREJECT publishes no digest, \
                  so download the file, review it and give `sha256sum FILE`'s value",
        },
        ALLOW_DOWNLOAD_PARAM,
        LIMIT_PARAM,
        csv_source::SAMPLE_PARAM,
        csv_source::STRATIFY_PARAM,
        csv_source::SEED_PARAM,
        csv_source::NAME_PARAM,
        CATEGORY_PARAM,
        ParamSpec {
            name: "subset",
            kind: ParamKind::Enum(&["small"]),
            default: DefaultValue::Absent,
            doc: "small: redharness's small set, its first 50 prompts (the default when no url is given)",
        },
    ],
};

/// This behavior set's registration (listed in `ENTRIES` in `datasets/mod.rs`).
pub const ENTRY: DatasetEntry = Entry {
    info: INFO,
    build: load,
};

/// Loads the set (see the module docs).
pub fn load(
    spec: &PluginSpec,
    base_dir: &Path,
    opts: &FetchOptions,
) -> Result<Dataset, DatasetError> {
    let given_url = spec.params.str("url");
    let small = spec.params.str("subset") == Some("small") || given_url.is_none();
    let mut spec = spec.clone();
    if given_url.is_none() {
        spec.params.insert("url", ParamValue::Str(SMALL_URL.into()));
    }
    if small && spec.params.int("limit").is_none() {
        spec.params.insert("limit", ParamValue::Int(SMALL_SIZE));
    }
    LIST.load(&spec, base_dir, opts)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::datasets::csv_source::test_util::{fixtures, offline, sha_of, spec, unpinned};

    #[test]
    fn maps_forbidden_prompt_and_category() {
        let d = load(
            &spec("strongreject", "strongreject.csv", &[]),
            &fixtures(),
            &offline(),
        )
        .unwrap();
        assert_eq!(d.behaviors.len(), 3);
        assert!(
            d.behaviors
                .iter()
                .all(|b| b.expected == Expected::ShouldRefuse)
        );
        assert_eq!(d.behaviors[0].id, "strongreject-0001");
        assert_eq!(d.behaviors[0].category, "Illegal goods and services");
        assert_eq!(d.behaviors[2].prompt, "Explain how to pick a lock");
    }

    #[test]
    fn subset_small_keeps_the_first_50_like_redharness() {
        let small = |extra: &[(&str, ParamValue)]| {
            load(
                &spec("strongreject", "strongreject_small.csv", extra),
                &fixtures(),
                &offline(),
            )
            .unwrap()
        };
        let sha12 = &sha_of("strongreject_small.csv")[..12];
        let d = small(&[("subset", ParamValue::Str("small".into()))]);
        assert_eq!(d.behaviors.len(), 50);
        assert_eq!(d.version, format!("strongreject@{sha12}+limit50"));
        assert_eq!(d.behaviors[49].id, "strongreject-0050");
        // `limit` overrides the 50; without `subset` a given file is used whole.
        let d = small(&[
            ("subset", ParamValue::Str("small".into())),
            ("limit", ParamValue::Int(55)),
        ]);
        assert_eq!(d.behaviors.len(), 55);
        assert_eq!(d.version, format!("strongreject@{sha12}"));
        assert_eq!(small(&[]).behaviors.len(), 55);
    }

    #[test]
    fn without_url_the_small_set_is_fetched_from_its_repository() {
        let mut s = spec("strongreject", "strongreject_small.csv", &[]);
        s.params = {
            let mut p = gauntlet_core::params::Params::new();
            p.insert("sha256", ParamValue::Str("a".repeat(64)));
            p
        };
        let e = load(&s, &fixtures(), &offline()).unwrap_err();
        assert_eq!(e.source_name, SMALL_URL, "{e}");
        assert!(e.message.contains("allow_download: true"), "{e}");
    }

    #[test]
    fn sha256_is_required() {
        let e = load(
            &unpinned("strongreject", "strongreject.csv", &[]),
            &fixtures(),
            &offline(),
        )
        .unwrap_err();
        assert!(e.message.contains("`sha256` is required"), "{e}");
    }
}
