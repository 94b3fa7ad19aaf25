//! gauntlet-exam: the agent exam.
//!
//! The agent exam grades an LLM agent on mallcop's security-triage scenarios (its
//! cascade, golden backend, grader and end-to-end mode): a fixed, auditable triage cascade around the model under
//! test, run N passes over a pinned corpus and graded by code. This crate owns:
//! - [`cascade`]: the agent under test (floor → triage → investigate → deep panel →
//!   formatter, consensus), with its [`tools`], the [`sanitize`]d prompt boxes and the
//!   [`verdict`] parser;
//! - [`grade`] (the deterministic grader and N-pass statistics) and [`classifier`]
//!   (the failure bins of the worst pass);
//! - [`golden`]: the golden backend, a merge gate for the harness, in process or over
//!   loopback HTTP ([`golden_http`], served on the Anthropic messages API);
//! - [`e2e`]: the end-to-end mode, the detector fleet's findings triaged by the cascade;
//! - [`exam`]: the driver, the report and its artefacts; [`calls`]: the exam's journaled
//!   model calls (resume, budget, usage); [`settings`] and [`exam_file`]: what an exam
//!   is, from the flags and its YAML file; [`shard`]: shards of both exams and their merge;
//!   [`manifest`]: the manifest of both exams' whole output directories.
//!
//! It does not own the corpus (`gauntlet-corpus`: pins, loading, the scenario schema,
//! projections) nor the detectors and the detect exam (`gauntlet-detect`).

// Files are read through `gauntlet_core::files` only (clippy.toml says why).
#![cfg_attr(not(test), deny(clippy::disallowed_methods))]

pub mod calls;
pub mod cascade;
pub mod classifier;
pub mod e2e;
pub mod exam;
pub mod exam_file;
pub mod golden;
pub mod golden_http;
pub mod grade;
pub mod manifest;
pub mod sanitize;
pub mod settings;
pub mod shard;
pub mod tools;
pub mod verdict;

// The paths of the corpus and the detectors from before they became crates of their
// own, for code written against them; new code names `gauntlet_corpus` and
// `gauntlet_detect` directly.
#[doc(hidden)]
pub use gauntlet_corpus::{corpus, embedded, load, projection, scenario};
#[doc(hidden)]
pub mod detectors {
    pub use crate::e2e;
    pub use gauntlet_detect::exam as detect_exam;
    pub use gauntlet_detect::{
        Detector, FAMILIES, assemble, builtin, external, fleet, report_text, util,
    };
}
