//! The agent exam driver (spec §6–7): N passes of the cascade over a verified corpus,
//! graded, summarised and written as artefacts.
//!
//! Why this exists: one function runs a whole exam — corpus already integrity-checked by
//! the loader — against a backend: the golden merge gate (in-process, or over loopback
//! HTTP through the `anthropic` target so the wire path is exercised) or real models
//! through the model seam. Scenarios of a pass run concurrently; results are kept in
//! corpus order, so the report does not depend on scheduling. Artefacts:
//! `report.json`, `classifier.json`, `run-<i>/<id>.json`,
//! `run-<i>/<id>.transcript.json`, plus `report.md`, `report.html` and
//! `leaderboard.json` (provenance: the corpus digest is the dataset version).

use crate::calls::{ExamCalls, ExamUsage, SessionStats, UnitCalls};
use crate::cascade::{
    CascadeOptions, TierModel, TierModels, TranscriptEntry, run_cascade, run_cascade_via,
};
use crate::classifier::{ClassifierSummary, classify};
use crate::e2e::{self, DetectFidelity, Resolution, Triaged};
use crate::golden::{GoldenModel, GoldenScript, GoldenServer};
use crate::grade::{
    GradeInput, Interval, NOISE_BAND_PP, RunResult, effective_passes, grade, median, wilson95,
    within_band,
};
use crate::tools::Toolbox;
use gauntlet_core::params::{
    Axis, Catalog, ParamValue, Params, PluginInfo, PluginSpec, resolve_spec,
};
use gauntlet_core::results::LeaderboardRow;
use gauntlet_corpus::load::Corpus;
use gauntlet_detect::fleet::{Fleet, Member};
use gauntlet_models::targets::anthropic::AnthropicTarget;
use gauntlet_models::{Model, TransportOptions};
use gauntlet_report::{Block, Page};
use serde::{Deserialize, Serialize};
use std::fmt::Write as _;
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::Instant;

mod schema;
pub use schema::*;
mod driver;
pub use driver::*;
mod identity;
pub use identity::*;
mod e2e_pass;
use e2e_pass::*;
mod summary;
pub use summary::*;
mod targets;
pub use targets::*;
mod writer;
pub use writer::*;
mod render;
pub use render::*;
