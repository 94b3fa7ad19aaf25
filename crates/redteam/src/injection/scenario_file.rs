//! `scenario_file`: a scenario suite from a JSON file
//! (`{"name", "description"?, "scenarios": [...]}`), pinned by sha256.
//!
//! The pin is required: a suite decides what counts as a hijack, so a run must say
//! exactly which one it used. A mismatch names the file, the expected and the actual
//! digest. Relative paths resolve against the run config's directory.

use super::suite::parse_suite;
use crate::datasets::{Dataset, DatasetError, apply_limit, version};
use gauntlet_core::params::{Axis, DefaultValue, ParamKind, ParamSpec, PluginInfo, PluginSpec};
use std::path::Path;

pub const INFO: PluginInfo = PluginInfo {
    axis: Axis::Scenario,
    name: "scenario_file",
    doc: "a scenario suite from a sha256-pinned JSON file ({\"name\", \"scenarios\": [...]})",
    params: &[
        ParamSpec {
            name: "path",
            kind: ParamKind::Str,
            default: DefaultValue::Required,
            doc: "the suite file (relative paths resolve against the config's directory)",
        },
        ParamSpec {
            name: "sha256",
            kind: ParamKind::Str,
            default: DefaultValue::Required,
            doc: "expected sha256 of the file (64 hex; `sha256sum FILE`)",
        },
        ParamSpec {
            name: "name",
            kind: ParamKind::Str,
            default: DefaultValue::Absent,
            doc: "label in reports and in the version string (default: the file's `name`)",
        },
        ParamSpec {
            name: "limit",
            kind: ParamKind::Int {
                min: 1,
                max: 10_000_000,
            },
            default: DefaultValue::Absent,
            doc: "use only the first N scenarios (recorded in the suite version)",
        },
    ],
};

pub fn load(spec: &PluginSpec, base_dir: &Path) -> Result<Dataset, DatasetError> {
    let rel = spec.params.str("path").unwrap_or_default();
    let path = base_dir.join(rel);
    let shown = path.display().to_string();
    let bytes =
        gauntlet_core::files::read(&path, gauntlet_core::files::Kind::DATASET).map_err(|e| {
            DatasetError::new(
                &shown,
                format!("cannot read the suite file: {}", e.into_io()),
            )
        })?;
    let suite = parse_suite(&bytes, &shown, spec.params.str("sha256"))?;
    let name = spec.params.str("name").unwrap_or(&suite.name).to_string();
    let (behaviors, limit) = apply_limit(suite.behaviors, spec.params.int("limit"));
    Ok(Dataset {
        version: version(&name, &suite.sha256, limit),
        name,
        sha256: suite.sha256,
        behaviors,
        provenance: None,
    })
}
