//! Whether a run directory holds this run or another config's: the resume check a
//! session makes before it writes anything.

use super::error::RunError;
use super::run_json::run_json;
use super::status::Status;
use crate::plan::Plan;
use gauntlet_core::files::{self, Kind};
use gauntlet_job::rundir::RunDir;
use gauntlet_results::RunRecord;

/// `max_queries` and `trials` may change between the sessions of one run (raise the
/// budget to continue, add trials); any other config key makes another run
/// ([`previous_run`]).
pub(super) const RESUMABLE_KEYS: [&str; 2] = ["max_queries", "trials"];

/// What a run directory holds, compared with the plan about to run in it.
pub(super) enum Previous {
    /// Nothing, or a session of this same run (possibly with another budget or trial
    /// count): resume it.
    SameRun,
    /// A run of another config (its run id, and what differs).
    OtherRun(String, Vec<String>),
}

/// Compares the run recorded in the directory's run.json with `plan`. Another config
/// (another seed, target, dataset version, harness version, …) is another run: its
/// artefacts must be moved aside, never replaced piecemeal (a session killed midway
/// would leave them mixed with this one's). An unreadable run.json is refused.
pub(super) fn previous_run(dir: &RunDir, plan: &Plan) -> Result<Previous, RunError> {
    let path = dir.path("run.json");
    let refuse = |why: String| {
        RunError::Refused(format!(
            "{why}\nIt is not a run this gauntlet can resume or set aside: choose another run_name (or --runs-dir), or move {} aside",
            dir.root.display()
        ))
    };
    let bytes = match files::read(&path, Kind::RUN_METADATA) {
        Ok(b) => b,
        Err(e) if e.io_kind() == Some(std::io::ErrorKind::NotFound) => {
            return Ok(Previous::SameRun);
        }
        Err(e) => return Err(refuse(e.to_string())),
    };
    let old: RunRecord = serde_json::from_slice(&bytes)
        .map_err(|e| refuse(format!("{}: not a gauntlet run.json ({e})", path.display())))?;
    let new = run_json(plan, &Status::Complete, 0, 0);
    let shown = |v: &serde_json::Value| match v {
        serde_json::Value::Null => "absent".to_string(),
        v => v.to_string(),
    };
    // A field the file lacks reads as empty ([`RunRecord`]): shown as absent.
    let shown_str = |s: &str| match s {
        "" => "absent".to_string(),
        s => serde_json::Value::from(s).to_string(),
    };
    let mut diffs = Vec::new();
    if old.harness_version != new.harness_version {
        diffs.push(format!(
            "harness_version: {} there, {} here (call keys include it: none of its calls can be replayed)",
            shown_str(&old.harness_version),
            shown_str(&new.harness_version)
        ));
    }
    // The canonical configs are compared key by key (each is a JSON map).
    let mut keys: Vec<&String> = new
        .config
        .as_object()
        .into_iter()
        .chain(old.config.as_object())
        .flat_map(|o| o.keys())
        .filter(|k| !RESUMABLE_KEYS.contains(&k.as_str()))
        .collect();
    keys.sort();
    keys.dedup();
    for k in keys {
        let (a, b) = (&old.config[k], &new.config[k]);
        if a == b {
            continue;
        }
        diffs.push(match (a, b) {
            (serde_json::Value::Array(_), serde_json::Value::Array(_)) => {
                format!("{k}: the two configs list different {k}")
            }
            _ => format!("{k}: {} there, {} here", shown(a), shown(b)),
        });
    }
    let versions = |v: &RunRecord| -> Vec<(String, String)> {
        v.datasets
            .iter()
            .map(|d| (shown_str(&d.name), shown_str(&d.version)))
            .collect()
    };
    let (va, vb) = (versions(&old), versions(&new));
    for (a, b) in va.iter().zip(&vb).filter(|(a, b)| a != b) {
        diffs.push(format!(
            "dataset {}: version {} there, {} here",
            b.0, a.1, b.1
        ));
    }
    if va.len() != vb.len() {
        diffs.push(format!("{} dataset(s) there, {} here", va.len(), vb.len()));
    }
    if diffs.is_empty() {
        return Ok(Previous::SameRun);
    }
    Ok(Previous::OtherRun(old.run_id, diffs))
}
