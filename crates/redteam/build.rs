//! Derives each plugin axis's table from the source tree, so a plugin is its file plus
//! its `mod` line: every `pub mod NAME;` line of a folder's `mod.rs` whose file declares
//! the axis's marker (`pub const ENTRY`, a transform's `pub const FAMILY`) is a plugin,
//! and `$OUT_DIR/<folder>.rs` lists them in name order as an array expression the
//! folder's table `include!`s. A `pub mod` without the marker (a shared driver such as
//! `attacks/search.rs`) is not a plugin.

include!("../../build-support/plugin_table.rs");

/// Writes `$OUT_DIR/<folder>.rs`: `[item(a), item(b), …]` over the folder's plugins.
/// (`folder/threat` writes `$OUT_DIR/<folder>_threat.rs` over `folder`.)
fn table(folder: &str, marker: &str, item: impl Fn(&str) -> String) {
    let (folder, file) = match folder.split_once('/') {
        Some((f, what)) => (f, format!("{f}_{what}.rs")),
        None => (folder, format!("{folder}.rs")),
    };
    let dir = std::path::Path::new("src").join(folder);
    write_table(&file, &plugins(&dir.join("mod.rs"), &dir, marker), item);
}

fn main() {
    for folder in ["judges", "attacks", "injections", "metrics"] {
        table(folder, "pub const ENTRY:", |m| format!("{m}::ENTRY"));
    }
    // Each attack's, injection's and metric's threat-map row, by its name.
    for folder in ["attacks", "injections", "metrics"] {
        table(&format!("{folder}/threat"), "pub const ENTRY:", |m| {
            format!("({m}::ENTRY.info.name, {m}::THREAT)")
        });
    }
    // The table lives in `datasets/table.rs`, a sibling of the plugins.
    table("datasets", "pub const ENTRY:", |m| {
        format!("super::{m}::ENTRY")
    });
    // `transforms/registry.rs`'s `entry!` reads a transform's INFO, FAMILY and build.
    table("transforms", "pub const FAMILY:", |m| {
        format!("entry!({m})")
    });
}
