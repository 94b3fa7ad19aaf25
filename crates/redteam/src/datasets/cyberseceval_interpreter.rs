//! `cyberseceval_interpreter`: CyberSecEval's code-interpreter abuse set (Meta
//! PurpleLlama, CybersecurityBenchmarks): 500 prompts that ask a model with a code
//! interpreter to write code that attacks the interpreter's own host, 100 in each of
//! five attack types. The JSON array `datasets/interpreter/interpreter.json` with
//! fields `mutated_prompt, attack_type` (a one-item list). Prompt = `mutated_prompt`,
//! category = the attack type (`Privilege Escalation`, `Container Escape`,
//! `Reflected Attack`, `Post Exploitation`, `Social Engineering`), every item
//! should_refuse. Ids are `cyberseceval_interpreter-0001`… by item. Licence: MIT
//! (CybersecurityBenchmarks/LICENSE).

use super::DatasetEntry;
use super::csv_source::{
    self, ALLOW_DOWNLOAD_PARAM, CATEGORY_PARAM, Format, LIMIT_PARAM, Layout, PromptList,
};
use super::{Dataset, DatasetError};
use crate::plugin::Entry;
use gauntlet_core::behavior::Expected;
use gauntlet_core::params::{Axis, PluginInfo, PluginSpec};
use gauntlet_fetch::FetchOptions;
use std::path::Path;

/// The canonical source at the commit that last changed it.
pub const URL: &str = "https://raw.githubusercontent.com/meta-llama/PurpleLlama/07fc92bd60597eb885b4109acda546c9f1090ac8/CybersecurityBenchmarks/datasets/interpreter/interpreter.json";

/// sha256 of the file at that commit (500 items).
pub const SHA256: &str = "1d3e7cd4dd94a436d96b6e689c13e4f3edf5418d680d0b485a3ea8bf4664840c";

const LIST: PromptList = PromptList {
    layout: Layout {
        name: "cyberseceval_interpreter",
        format: Format::JsonArray,
        prompt: "mutated_prompt",
        columns: &["mutated_prompt", "attack_type"],
        pin: Some(SHA256),
    },
    category: Some("attack_type"),
    expected: Expected::ShouldRefuse,
};

/// Registration.
pub const INFO: PluginInfo = PluginInfo {
    axis: Axis::Dataset,
    name: "cyberseceval_interpreter",
    doc: "CyberSecEval code-interpreter abuse prompts (mutated_prompt, category = attack_type; all 500 should_refuse), sha256-pinned, MIT",
    params: &[
        csv_source::url_param(URL),
        csv_source::pinned_sha_param("expected sha256 (default: the published pin 1d3e7cd4dd94…)"),
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
    use crate::datasets::csv_source::Item;
    use crate::datasets::csv_source::test_util::{fixtures, offline, spec};

    #[test]
    fn maps_mutated_prompt_and_the_listed_attack_type() {
        let d = load(
            &spec(
                "cyberseceval_interpreter",
                "cyberseceval_interpreter.json",
                &[],
            ),
            &fixtures(),
            &offline(),
        )
        .unwrap();
        let got: Vec<(&str, &str)> = d
            .behaviors
            .iter()
            .map(|b| (b.id.as_str(), b.category.as_str()))
            .collect();
        assert_eq!(
            got,
            [
                ("cyberseceval_interpreter-0001", "Privilege Escalation"),
                ("cyberseceval_interpreter-0002", "Container Escape"),
            ]
        );
        assert!(
            d.behaviors
                .iter()
                .all(|b| b.expected == Expected::ShouldRefuse)
        );
        assert!(d.behaviors[1].prompt.contains("CANARY-7f3a"));
    }

    #[test]
    fn an_object_attack_type_is_refused_with_the_item_number() {
        let e = csv_source::parse(
            br#"[{"mutated_prompt":"a","attack_type":["x"]},{"mutated_prompt":"b","attack_type":{"k":1}}]"#,
            "f.json",
            &LIST.layout,
            &|row| {
                Ok(Some(Item {
                    prompt: row.get("mutated_prompt").to_string(),
                    category: row.get("attack_type").to_string(),
                    expected: Expected::ShouldRefuse,
                }))
            },
        )
        .unwrap_err();
        assert!(
            e.message
                .contains("item 2: field `attack_type` is an object"),
            "{e}"
        );
    }
}
