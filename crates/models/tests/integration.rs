//! The integration tests of this crate, one module per file, linked into one test
//! binary: one link instead of one per file keeps a clean build's disk use and link
//! time down on small CI machines. Each file's own documentation says what it tests.

mod anthropic;
mod check_build;
mod command;
mod common;
mod env;
mod evidence;
mod faults;
mod http;
mod openai_compat;
mod throughput;
