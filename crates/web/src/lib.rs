//! gauntlet-web: the dashboard over run directories — `gauntlet serve` and the static
//! export `gauntlet report --site`.
//!
//! It aggregates red-team runs, agent-exam output directories and detect-exam reports:
//! an [`overview`] scorecard (one row per target), a [`pivot`] (metric × judge as target ×
//! attack), one leaderboard per surface, a page per run (charts, cells, the full report),
//! a transcript browser that streams `transcripts.jsonl`, a [`compare`] page (two runs,
//! targets, attacks or judges paired behavior by behavior from the transcripts) and a
//! live view of runs in progress.
//!
//! Everything it reads is untrusted (runs may come from others), so:
//! - it is read-only: no request writes anything, and only GET/HEAD are routed — but for
//!   the [`label`]ling page, which exists only under `gauntlet label RUN_DIR --serve` and
//!   writes only that run's labels (through the [`label::LabelStore`] that command hands
//!   it);
//! - no request names a path: runs are addressed by slugs the scan assigns, files by
//!   fixed names, transcript lines by number; symlinks inside the roots are refused;
//! - every string is escaped (minijinja auto-escaping; the charts escape their own);
//! - pages carry no script (the labelling page's keys are its one script, allowed by its
//!   hash on that page only), and a strict Content-Security-Policy forbids any
//!   (`default-src 'none'`, the one inline stylesheet allowed by its hash);
//! - malformed or oversized files become visible warnings, and numbers that do not add
//!   up are flagged unverified (see [`verify`]).
//!
//! Data flow: [`scan`] (directories → runs and rows) → [`verify`] (a background recount)
//! → [`pages`] (HTML, linked through [`links`]) → [`server`] (axum, loopback by default)
//! or [`site`] (files).
//!
//! It does not know how results were produced: the two pieces of engine work it needs —
//! recounting a red-team run ([`verify::Recount`]) and the labelling session
//! ([`label::LabelStore`]) — are traits here, implemented with the engine by the
//! `gauntlet` binary and handed in by the command that starts the dashboard.

// Files are read through `gauntlet_core::files` only (clippy.toml says why).
#![cfg_attr(not(test), deny(clippy::disallowed_methods))]

pub mod compare;
mod dashboard;
pub mod label;
pub mod links;
pub mod marks;
pub mod overview;
pub mod pages;
pub mod pivot;
mod request;
pub mod scan;
pub mod server;
pub mod site;
pub mod transcripts;
pub mod verify;
pub mod view;

pub use dashboard::Dashboard;
pub use server::{ServeOptions, serve};
pub use site::export_site;
