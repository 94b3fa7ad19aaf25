//! Derives the scanner's rule table from the source tree: every `pub mod NAME;` line of
//! `src/rules/mod.rs` whose file declares `pub const RULE` is a rule, and
//! `$OUT_DIR/rules.rs` lists their `RULE`s in name order (as `super::NAME::RULE`, for
//! `src/rules/check.rs`, which sorts them by `rank`). A new rule is therefore its file
//! plus its `mod` line.

include!("../../build-support/plugin_table.rs");

fn main() {
    let dir = std::path::Path::new("src/rules");
    let rules = plugins(&dir.join("mod.rs"), dir, "pub const RULE:");
    write_table("rules.rs", &rules, |m| format!("super::{m}::RULE"));
}
