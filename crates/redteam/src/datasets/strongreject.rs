//! `strongreject`: the StrongREJECT forbidden prompts (Souly et al. 2024), the CSV
//! `strongreject_dataset.csv` with columns `category, source, forbidden_prompt`
//! (the small subset file has the same columns). Prompt = `forbidden_prompt`, category
//! = `category`, every row should_refuse. There is no published pin in our table, so
//! `sha256` is required: hash the file you reviewed. Pair with the `strongreject` judge
//! and `strongreject_score`. Ids are `strongreject-0001`… by data row.

use super::csv_source::{
    self, ALLOW_DOWNLOAD_PARAM, CATEGORY_PARAM, Item, LIMIT_PARAM, Layout, URL_PARAM,
};
use super::{Dataset, DatasetError};
use gauntlet_core::behavior::Expected;
use gauntlet_core::params::{Axis, DefaultValue, ParamKind, ParamSpec, PluginInfo, PluginSpec};
use gauntlet_fetch::FetchOptions;
use std::path::Path;

const LAYOUT: Layout = Layout {
    name: "strongreject",
    prompt: "forbidden_prompt",
    columns: &["forbidden_prompt", "category"],
    pin: None,
};

/// Registration.
pub const INFO: PluginInfo = PluginInfo {
    axis: Axis::Dataset,
    name: "strongreject",
    doc: "StrongREJECT forbidden prompts (forbidden_prompt, category; all should_refuse); sha256 required",
    params: &[
        URL_PARAM,
        ParamSpec {
            name: "sha256",
            kind: ParamKind::Str,
            default: DefaultValue::Required,
            doc: "expected sha256 of the file (64 hex); required: this set has no published pin",
        },
        ALLOW_DOWNLOAD_PARAM,
        LIMIT_PARAM,
        CATEGORY_PARAM,
    ],
};

/// Loads the set (see the module docs).
pub fn load(
    spec: &PluginSpec,
    base_dir: &Path,
    opts: &FetchOptions,
) -> Result<Dataset, DatasetError> {
    csv_source::load(spec, base_dir, opts, &LAYOUT, Vec::new(), &|row| {
        Ok(Some(Item {
            prompt: row.get("forbidden_prompt").to_string(),
            category: row.get("category").trim().to_string(),
            expected: Expected::ShouldRefuse,
        }))
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::datasets::csv_source::test_util::{fixtures, offline, spec, unpinned};

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
