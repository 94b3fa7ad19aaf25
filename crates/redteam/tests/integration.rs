//! The integration tests of this crate, one module per file, linked into one test
//! binary: one link instead of one per file keeps a clean build's disk use and link
//! time down on small CI machines. Each file's own documentation says what it tests.

mod injecagent;
mod public_datasets;
mod public_datasets_real;
