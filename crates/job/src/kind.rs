//! The kind of an artefact directory, recorded in its manifest (`"kind"` in
//! `manifest.json`) by the session that wrote it, so readers (`gauntlet merge`, the
//! output-directory checks, the dashboard) dispatch on what the directory is instead of
//! guessing it from which files are there.
//!
//! A manifest without a `kind` was written by a gauntlet before kinds were recorded;
//! such a directory is still told apart by its marker files ([`crate::outdir`]). A
//! recorded kind is checked against the files: a directory recorded as one kind must
//! hold that kind's marker file ([`Kind::marker`]), or
//! [`crate::manifest::recorded`] refuses it naming the directory, rather than guessing.

use serde::{Deserialize, Serialize};

/// What an artefact directory is. The names (`run`, `exam-shard`…) are stable: they
/// are what `manifest.json` records.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum Kind {
    /// A red-team run directory: one machine's run, a shard of one (`gauntlet run
    /// CONFIG --shard i/N`, whose run.json records `shard`) or the merge of its shards.
    Run,
    /// A rescore of a stored run (`gauntlet rescore RUN_DIR --judge SPEC`).
    Rescore,
    /// A shard of an agent exam (`gauntlet exam … --shard i/N`).
    ExamShard,
    /// A shard of a detect exam (`gauntlet exam-detect … --shard i/N`).
    DetectShard,
    /// An agent exam's output directory (`gauntlet exam`, or the merge of its shards).
    Exam,
    /// A detect exam's output directory (`gauntlet exam-detect --out DIR`, or the merge
    /// of its shards).
    DetectExam,
}

impl Kind {
    /// Every kind.
    pub const ALL: [Kind; 6] = [
        Kind::Run,
        Kind::Rescore,
        Kind::ExamShard,
        Kind::DetectShard,
        Kind::Exam,
        Kind::DetectExam,
    ];

    /// The name `manifest.json` records.
    pub fn name(self) -> &'static str {
        match self {
            Kind::Run => "run",
            Kind::Rescore => "rescore",
            Kind::ExamShard => "exam-shard",
            Kind::DetectShard => "detect-shard",
            Kind::Exam => "exam",
            Kind::DetectExam => "detect-exam",
        }
    }

    /// The kind named `name`, when this gauntlet knows it.
    pub fn from_name(name: &str) -> Option<Kind> {
        Kind::ALL.into_iter().find(|k| k.name() == name)
    }

    /// The file every directory of this kind holds: what a recorded kind is checked
    /// against.
    pub fn marker(self) -> &'static str {
        match self {
            Kind::Run => "run.json",
            Kind::Rescore => "rescore.json",
            Kind::ExamShard => "shard.json",
            Kind::DetectShard => "detect_shard.json",
            Kind::Exam | Kind::DetectExam => "report.json",
        }
    }

    /// How a message names it.
    pub fn describe(self) -> &'static str {
        match self {
            Kind::Run => "a red-team run",
            Kind::Rescore => "a rescore",
            Kind::ExamShard => "an agent-exam shard",
            Kind::DetectShard => "a detect-exam shard",
            Kind::Exam => "an agent exam's output",
            Kind::DetectExam => "a detect exam's output",
        }
    }
}

impl std::fmt::Display for Kind {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.name())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_are_the_serde_names_and_round_trip() {
        for k in Kind::ALL {
            let v = serde_json::to_value(k).unwrap();
            assert_eq!(v, serde_json::Value::String(k.name().into()));
            assert_eq!(serde_json::from_value::<Kind>(v).unwrap(), k);
            assert_eq!(Kind::from_name(k.name()), Some(k));
            assert_eq!(k.to_string(), k.name());
        }
        let names: Vec<&str> = Kind::ALL.iter().map(|k| k.name()).collect();
        assert_eq!(
            names,
            [
                "run",
                "rescore",
                "exam-shard",
                "detect-shard",
                "exam",
                "detect-exam"
            ]
        );
        assert!(serde_json::from_str::<Kind>("\"judge-eval\"").is_err());
        assert_eq!(Kind::from_name("Run"), None);
    }
}
