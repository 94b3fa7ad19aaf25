//! gauntlet-exam: the agent exam's scenario corpus.
//!
//! The agent exam grades an LLM agent on mallcop's security-triage scenarios, and must
//! read mallcop's corpora unchanged (spec `agent-exam.md` §1–2). This crate is the
//! ground floor of that exam:
//! - [`corpus`]: which files form a corpus, the canonical manifest and digest, the
//!   `corpus.pin` format, integrity verification and re-pinning;
//! - [`scenario`]: the lenient, validated scenario schema, with ground truth held apart
//!   from what a model may see;
//! - [`load`]: [`load_corpus`], which verifies the pin before parsing anything.
//!
//! Nothing here talks to a model; running, grading and reporting live elsewhere.

pub mod calls;
pub mod cascade;
pub mod classifier;
pub mod corpus;
pub mod detectors;
pub mod embedded;
pub mod exam;
pub mod exam_file;
pub mod golden;
pub mod grade;
pub mod load;
pub mod projection;
pub mod sanitize;
pub mod scenario;
pub mod settings;
pub mod shard;
pub mod tools;
pub mod verdict;

pub use corpus::{
    CorpusFile, IntegrityError, MANIFEST_FILE, Manifest, ManifestDiff, ManifestEntry, PIN_FILE,
    Pin, PinError, PinReport, pin, scan,
};
pub use load::{Corpus, CorpusError, LoadedScenario, load_corpus, load_extra};
pub use scenario::{
    ActorStep, Baseline, Case, ConnectorTool, Event, Expected, ExpectedDetection, Finding,
    GroundTruth, KnownEntities, Relationship, Scenario, ScenarioError, ScenarioInfo,
    parse_scenario, parse_scenario_bytes,
};
