//! `imported`: the prompts another tool sent (garak, promptfoo, Inspect), read from its
//! result file (`gauntlet import`), each with the replies and verdicts the tool recorded.
//!
//! The file is pinned by `sha256` (checked before it is parsed). A behavior's id is the
//! prompt's cross-tool identity ([`crate::import::prompt_id`]; a prompt the file holds
//! again gets `~2`, `~3`, … in file order), its category the tool's probe, plugin or
//! task. Behaviors are in the order of their ids, and the version is `imported@` and a
//! hash of those ids: two files that hold the same prompts, in any order and under any
//! names, are the same dataset behavior for behavior, so their runs pair in `compare`.

use super::DatasetEntry;
use super::{Dataset, DatasetError};
use crate::import::{self, Generation, Tool};
use crate::plugin::Entry;
use gauntlet_core::behavior::{Behavior, CasePayload, Expected};
use gauntlet_core::params::{Axis, DefaultValue, ParamKind, ParamSpec, PluginInfo, PluginSpec};
use std::collections::HashMap;
use std::path::Path;
use std::sync::Arc;

pub const INFO: PluginInfo = PluginInfo {
    axis: Axis::Dataset,
    name: "imported",
    doc: "the prompts, replies and verdicts of another tool's result file (written by `gauntlet import`)",
    params: &[
        ParamSpec {
            name: "tool",
            kind: ParamKind::Enum(Tool::NAMES),
            default: DefaultValue::Required,
            doc: "the tool that wrote the file: garak (report.jsonl), promptfoo (eval -o JSON), inspect (.eval or .json log)",
        },
        ParamSpec {
            name: "file",
            kind: ParamKind::Str,
            default: DefaultValue::Required,
            doc: "the result file (absolute, or relative to the config's directory)",
        },
        ParamSpec {
            name: "sha256",
            kind: ParamKind::Str,
            default: DefaultValue::Required,
            doc: "the file's sha256 (64 hex), checked before it is read",
        },
    ],
};

/// This behavior set's registration (listed in `ENTRIES` in `datasets/mod.rs`).
pub const ENTRY: DatasetEntry = Entry {
    info: INFO,
    build: |s, base, _| load(s, base),
};

/// What an imported prompt carries for the `imported` attack: the replies and verdicts
/// the tool recorded, and the tool's name for the prompt's source.
#[derive(Debug)]
pub struct ImportedCase {
    pub source: String,
    /// The tool's verdicts given on any prompt of this source: a verdict outside them
    /// was not applied to the source (the judge abstains), one inside them but missing
    /// is an error.
    pub applied: Arc<Vec<String>>,
    pub generations: Vec<Generation>,
}

/// Loads the file's prompts (see the module docs).
pub fn load(spec: &PluginSpec, base_dir: &Path) -> Result<Dataset, DatasetError> {
    let tool_name = spec.params.str("tool").unwrap_or_default();
    let Some(tool) = Tool::parse(tool_name) else {
        return Err(DatasetError::new(
            "imported",
            format!(
                "tool `{tool_name}`: expected one of {}",
                Tool::NAMES.join(", ")
            ),
        ));
    };
    let file = spec.params.str("file").unwrap_or_default();
    let path = base_dir.join(file);
    let shown = path.display().to_string();
    let pinned = spec.params.str("sha256").unwrap_or_default();
    let actual =
        file_sha256(&path).map_err(|e| DatasetError::new(&shown, format!("cannot read: {e}")))?;
    super::check_pin(&shown, Some(pinned), &actual)?;
    let imported =
        import::parse_file(tool, &path).map_err(|e| DatasetError::new(&shown, e.to_string()))?;
    let mut applied: HashMap<String, Vec<String>> = HashMap::new();
    for r in &imported.records {
        let a = applied.entry(r.source.clone()).or_default();
        for g in &r.generations {
            for v in &g.verdicts {
                if !a.contains(&v.judge) {
                    a.push(v.judge.clone());
                }
            }
        }
    }
    let applied: HashMap<String, Arc<Vec<String>>> = applied
        .into_iter()
        .map(|(k, mut v)| {
            v.sort();
            (k, Arc::new(v))
        })
        .collect();
    let mut seen: HashMap<String, u32> = HashMap::new();
    let mut behaviors = Vec::with_capacity(imported.records.len());
    for r in imported.records {
        let base = import::prompt_id(&r.prompt);
        let n = seen.entry(base.clone()).or_insert(0);
        *n += 1;
        let id = if *n == 1 { base } else { format!("{base}~{n}") };
        behaviors.push(Behavior {
            id,
            category: r.source.clone(),
            expected: Expected::ShouldRefuse,
            case: CasePayload::new(Arc::new(ImportedCase {
                applied: applied.get(&r.source).cloned().unwrap_or_default(),
                source: r.source,
                generations: r.generations,
            })),
            prompt: r.prompt,
            reference_answer: None,
            target_secret: None,
            scenario: None,
            bench_case: None,
            secret_cache: Default::default(),
        });
    }
    // In the order of their ids: two files of one prompt set are then one dataset
    // behavior for behavior, whatever order each tool sent the prompts in.
    behaviors.sort_by(|a, b| a.id.cmp(&b.id));
    let ids: Vec<&str> = behaviors.iter().map(|b| b.id.as_str()).collect();
    let set_hash = gauntlet_core::hash::sha256_hex(ids.join("\n").as_bytes());
    let provenance = serde_json::json!({
        "tool": imported.tool.as_str(),
        "tool_version": imported.tool_version,
        "file_sha256": actual,
        "target": imported.target,
        "prompts": behaviors.len(),
        "notes": imported.notes,
    });
    Ok(Dataset {
        name: "imported".into(),
        version: format!("imported@{}", &set_hash[..12]),
        sha256: actual,
        behaviors,
        provenance: Some(provenance),
    })
}

/// The sha256 of a file, streamed.
pub fn file_sha256(path: &Path) -> std::io::Result<String> {
    let mut f = gauntlet_core::files::open(path, gauntlet_core::files::Kind::ANY_SIZE)
        .map_err(|e| e.into_io())?;
    let mut h = gauntlet_core::hash::HashWriter::new();
    std::io::copy(&mut f, &mut h)?;
    Ok(h.finish_hex())
}
/// Whether a dataset is an import's (`gauntlet import`): its behaviors are identified by
/// a hash of the prompt, so two versions pair by behavior id.
pub fn is_imported(dataset: &str, version: &str) -> bool {
    dataset == "imported" && version.starts_with("imported@")
}
