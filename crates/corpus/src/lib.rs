//! gauntlet-corpus: the scenario corpora the agent exam and the detect exam run over.
//!
//! Both exams must read mallcop's corpora unchanged (layout, pin, scenario YAML and projections), and a
//! score is only comparable with another over exactly the same scenarios. This crate
//! owns what a corpus is, and nothing about grading it:
//! - [`corpus`]: which files form a corpus, the canonical manifest and digest, the
//!   `corpus.pin` format, integrity verification and re-pinning;
//! - [`load`]: [`load_corpus`], which verifies the pin before parsing anything, extra
//!   (unpinned) scenarios, and the streaming index the detect exam reads from;
//! - [`scenario`]: the lenient, validated scenario schema, with ground truth held apart
//!   from what a model may see;
//! - [`projection`]: the events, baseline and finding detectors and tools see;
//! - [`embedded`]: the reference corpus built into the binary, the fallback when none
//!   is on disk.
//!
//! Nothing here runs a model or a detector.

// Files are read through `gauntlet_core::files` only (clippy.toml says why).
#![cfg_attr(not(test), deny(clippy::disallowed_methods))]

pub mod corpus;
pub mod embedded;
pub mod load;
pub mod projection;
pub mod scenario;

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
