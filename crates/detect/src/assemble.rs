//! Assembling the detect exam from the user's options: the fleet (the built-in
//! detectors, then the external ones from `--detectors-dir` and `--detector`, names
//! unique) and the scenario files it grades (the pinned corpus and extra scenarios as
//! group 0, then each external detector's own scenarios as its own group).
//!
//! Why this lives here and not in the CLI: which detectors run and over which files is
//! part of the exam's definition (a shard's identity hashes it), so the CLI only parses
//! the flags and prints what this returns.

use crate::external::{ExternalDetector, Limits};
use crate::fleet::Member;
use gauntlet_corpus::load::{CorpusIndex, IndexedFile, index_extra};
use std::collections::BTreeMap;
use std::path::Path;
use std::sync::Arc;

/// Where the external detectors come from, and how they are confined.
#[derive(Debug, Clone, Copy)]
pub struct FleetOptions<'a> {
    /// `--detectors-dir`: `<name>/detector` (+ `<name>/scenarios/`) per detector.
    pub detectors_dir: Option<&'a Path>,
    /// `--detector NAME=PATH`, in order.
    pub detectors: &'a [String],
    pub limits: Limits,
    /// Grade the external detectors' own scenarios.
    pub detector_scenarios: bool,
}

/// A scenario file to grade: the file, its origin (`corpus`, `extra` or
/// `detector:<name>`) and its report group (0: corpus and extras).
pub type ExamFile = (IndexedFile, String, usize);

/// The assembled exam.
pub struct Assembled {
    /// Built-in detectors first, then the external ones in the order given.
    pub members: Vec<Member>,
    /// In file order: group 0, then each external detector's scenarios.
    pub files: Vec<ExamFile>,
    /// What the user must be told (the sandbox's state when external detectors run).
    pub notes: Vec<String>,
}

/// Why the detect exam's fleet or files cannot be assembled.
#[derive(Debug, thiserror::Error)]
pub enum AssembleError {
    /// An external detector (`--detector`, `--detectors-dir`) that cannot be used.
    #[error(transparent)]
    Detector(#[from] crate::external::ConfigError),
    #[error("external detector `{name}` ({}) clashes with {previous}", .path.display())]
    Clash {
        name: String,
        path: std::path::PathBuf,
        /// `built-in`, or the other detector's path.
        previous: String,
    },
    /// An external detector's own scenarios directory.
    #[error(transparent)]
    Scenarios(#[from] gauntlet_corpus::CorpusError),
}

/// The fleet and the files of the detect exam over `index` (a verified corpus index).
/// Errors name the detector or directory at fault.
pub fn assemble(index: &CorpusIndex, opts: &FleetOptions<'_>) -> Result<Assembled, AssembleError> {
    let mut externals = Vec::new();
    if let Some(dir) = opts.detectors_dir {
        externals.extend(ExternalDetector::discover(dir, opts.limits)?);
    }
    for spec in opts.detectors {
        externals.push(ExternalDetector::from_spec(spec, opts.limits)?);
    }
    let mut notes = Vec::new();
    if !externals.is_empty() {
        let support = gauntlet_sandbox::Support::current();
        notes.push(format!(
            "external detectors: sandbox: {}",
            support.describe()
        ));
        if !support.confines() {
            notes.push(format!(
                "WARNING: external detectors run NOT fully confined (--allow-unconfined-detectors): {}",
                support.missing().join("; ")
            ));
        }
    }
    let mut members: Vec<Member> = crate::builtin().into_iter().map(Member::Builtin).collect();
    let mut names: BTreeMap<String, String> = members
        .iter()
        .map(|m| (m.name().to_string(), "built-in".to_string()))
        .collect();
    for x in &externals {
        if let Some(previous) = names.insert(x.name.clone(), x.path.display().to_string()) {
            return Err(AssembleError::Clash {
                name: x.name.clone(),
                path: x.path.clone(),
                previous,
            });
        }
    }
    let mut files: Vec<ExamFile> = index
        .files
        .iter()
        .map(|f| {
            let origin = if f.extra { "extra" } else { "corpus" };
            (f.clone(), origin.to_string(), 0)
        })
        .collect();
    if opts.detector_scenarios {
        for (k, x) in externals.iter().enumerate() {
            if let Some(dir) = &x.scenarios_dir {
                for f in index_extra(dir)? {
                    files.push((f, format!("detector:{}", x.name), k + 1));
                }
            }
        }
    }
    members.extend(externals.into_iter().map(|x| Member::External(Arc::new(x))));
    Ok(Assembled {
        members,
        files,
        notes,
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use gauntlet_corpus::load::index_corpus;

    fn corpus() -> CorpusIndex {
        let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../exams/scenarios");
        index_corpus(&root, None).unwrap()
    }

    #[test]
    fn the_builtin_fleet_grades_the_corpus_as_group_zero() {
        let index = corpus();
        let a = assemble(
            &index,
            &FleetOptions {
                detectors_dir: None,
                detectors: &[],
                limits: Limits::default(),
                detector_scenarios: true,
            },
        )
        .unwrap();
        assert_eq!(a.members.len(), crate::builtin().len());
        assert_eq!(a.files.len(), index.files.len());
        assert!(a.files.iter().all(|(_, o, g)| o == "corpus" && *g == 0));
        assert!(a.notes.is_empty());
    }

    #[test]
    fn an_external_detector_may_not_take_a_builtin_name() {
        let builtin = crate::builtin()[0].name().to_string();
        let spec = [format!("{builtin}=/bin/true")];
        let e = assemble(
            &corpus(),
            &FleetOptions {
                detectors_dir: None,
                detectors: &spec,
                limits: Limits::default(),
                detector_scenarios: true,
            },
        )
        .err()
        .expect("a clash is refused")
        .to_string();
        assert!(
            e.contains(&format!("`{builtin}`")) && e.contains("clashes with built-in"),
            "{e}"
        );
    }
}
