//! Derives the reference fleet from the source tree, so a detector is its file plus its
//! `mod` line: every `pub mod NAME;` line of `src/lib.rs` whose `src/rules/NAME.rs`
//! declares `pub const DETECTOR` is in `$OUT_DIR/fleet.rs`, in name order (the fleet
//! itself is sorted by family token at run time).

include!("../../build-support/plugin_table.rs");

fn main() {
    let rules = plugins(
        std::path::Path::new("src/lib.rs"),
        std::path::Path::new("src/rules"),
        "pub const DETECTOR:",
    );
    write_table("fleet.rs", &rules, |m| format!("rules::{m}::DETECTOR"));
}
