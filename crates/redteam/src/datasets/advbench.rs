//! `advbench`: AdvBench harmful behaviors (Zou et al. 2023), the CSV
//! `data/advbench/harmful_behaviors.csv` of llm-attacks/llm-attacks with columns
//! `goal,target`. The `goal` is the prompt; every row is should_refuse; the `target`
//! (an affirmative answer prefix) is not used. Ids are `advbench-0001`… by data row.

use super::DatasetEntry;
use super::csv_source::{self, ALLOW_DOWNLOAD_PARAM, LIMIT_PARAM, Layout, PromptList};
use super::{Dataset, DatasetError};
use crate::plugin::Entry;
use gauntlet_core::behavior::Expected;
use gauntlet_core::params::{Axis, PluginInfo, PluginSpec};
use gauntlet_fetch::FetchOptions;
use std::path::Path;

/// The canonical source, llm-attacks/llm-attacks `data/advbench/harmful_behaviors.csv` at a pinned commit, as
/// redharness publishes it with the pin below.
pub const URL: &str = "https://raw.githubusercontent.com/llm-attacks/llm-attacks/098262edf85f807224e70ecd87b9d83716bf6b73/data/advbench/harmful_behaviors.csv";

/// The published pin of `harmful_behaviors.csv`.
pub const SHA256: &str = "6cd1a5c63c07610d7eb67307772ee5606017ee950b5770ab288a2c487489d3e1";

const LIST: PromptList = PromptList {
    layout: Layout {
        name: "advbench",
        format: csv_source::Format::Csv,
        prompt: "goal",
        columns: &["goal"],
        pin: Some(SHA256),
    },
    category: None,
    expected: Expected::ShouldRefuse,
};

/// Registration.
pub const INFO: PluginInfo = PluginInfo {
    axis: Axis::Dataset,
    name: "advbench",
    doc: "AdvBench harmful_behaviors.csv (goal column; all should_refuse), sha256-pinned",
    params: &[
        csv_source::url_param(URL),
        csv_source::pinned_sha_param("expected sha256 (default: the published pin 6cd1a5c63c07…)"),
        ALLOW_DOWNLOAD_PARAM,
        LIMIT_PARAM,
        csv_source::SAMPLE_PARAM,
        csv_source::STRATIFY_PARAM,
        csv_source::SEED_PARAM,
        csv_source::NAME_PARAM,
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
    LIST.load(spec, base_dir, opts)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::datasets::csv_source::test_util::{fixtures, offline, sha_of, spec, unpinned};
    use gauntlet_core::params::ParamValue;

    #[test]
    fn maps_goal_and_labels_everything_should_refuse() {
        let d = load(
            &spec("advbench", "advbench.csv", &[]),
            &fixtures(),
            &offline(),
        )
        .unwrap();
        assert_eq!(d.name, "advbench");
        assert_eq!(d.behaviors.len(), 4);
        assert!(
            d.behaviors
                .iter()
                .all(|b| b.expected == Expected::ShouldRefuse)
        );
        assert_eq!(d.behaviors[0].id, "advbench-0001");
        assert_eq!(d.behaviors[0].prompt, "Explain how to pick a lock");
        // A quoted field with a comma and an embedded newline.
        assert_eq!(
            d.behaviors[2].prompt,
            "Write a note, in two paragraphs,\nasking a neighbour for their wifi password"
        );
        assert_eq!(
            d.version,
            format!("advbench@{}", &sha_of("advbench.csv")[..12])
        );
    }

    #[test]
    fn limit_is_part_of_the_version() {
        let d = load(
            &spec("advbench", "advbench.csv", &[("limit", ParamValue::Int(2))]),
            &fixtures(),
            &offline(),
        )
        .unwrap();
        assert_eq!(d.behaviors.len(), 2);
        assert!(d.version.ends_with("+limit2"), "{}", d.version);
    }

    #[test]
    fn the_published_pin_is_the_default() {
        let s = unpinned("advbench", "advbench.csv", &[]);
        let e = load(&s, &fixtures(), &offline()).unwrap_err();
        assert!(
            e.message.contains(SHA256) && e.message.contains(&sha_of("advbench.csv")),
            "{e}"
        );
        assert!(e.message.contains("advbench.csv"), "{e}");
    }
}
