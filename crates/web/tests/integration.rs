//! The integration tests of this crate, one module per file, linked into one test
//! binary: one link instead of one per file keeps a clean build's disk use and link
//! time down on small CI machines. Each file's own documentation says what it tests.

mod browser;
mod common;
mod server;

/// The engine's side of the dashboard (the recount, the labelling session), the file
/// the `gauntlet` binary hands the dashboard, so the tests run it as the binary does.
#[path = "../../cli/src/dashboard_engine.rs"]
mod dashboard_engine;
