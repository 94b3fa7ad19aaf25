//! Derives each plugin axis's table from the source tree, so a plugin is its file plus
//! its `mod` line: every `pub mod NAME;` line of a folder's `mod.rs` whose file declares
//! the axis's marker (`pub const ENTRY`, a transform's `pub const FAMILY`) is a plugin,
//! and `$OUT_DIR/<folder>.rs` lists them in name order as an array expression the
//! folder's table `include!`s. A `pub mod` without the marker (a shared driver such as
//! `attacks/search.rs`) is not a plugin.

use std::fmt::Write as _;
use std::path::Path;

/// The modules declared `pub mod NAME;` in `dir/mod.rs` whose file holds `marker`, sorted
/// by name (`r#static` as `static`).
fn plugins(dir: &Path, marker: &str) -> Vec<String> {
    let mod_rs = std::fs::read_to_string(dir.join("mod.rs")).expect("the folder's mod.rs");
    let mut out: Vec<String> = mod_rs
        .lines()
        .filter_map(|l| l.trim().strip_prefix("pub mod ")?.strip_suffix(';'))
        .map(str::to_string)
        .filter(|m| {
            let file = dir.join(format!("{}.rs", m.trim_start_matches("r#")));
            std::fs::read_to_string(file).is_ok_and(|s| s.contains(marker))
        })
        .collect();
    out.sort_by(|a, b| a.trim_start_matches("r#").cmp(b.trim_start_matches("r#")));
    out
}

/// Writes `$OUT_DIR/<folder>.rs`: `[item(a), item(b), …]` over the folder's plugins.
/// (`folder/threat` writes `$OUT_DIR/<folder>_threat.rs` over `folder`.)
fn table(folder: &str, marker: &str, item: impl Fn(&str) -> String) {
    let (folder, file) = match folder.split_once('/') {
        Some((f, what)) => (f, format!("{f}_{what}.rs")),
        None => (folder, format!("{folder}.rs")),
    };
    let dir = Path::new("src").join(folder);
    println!("cargo:rerun-if-changed={}", dir.display());
    let mut list = String::from("[\n");
    for m in plugins(&dir, marker) {
        let file = dir.join(format!("{}.rs", m.trim_start_matches("r#")));
        println!("cargo:rerun-if-changed={}", file.display());
        writeln!(list, "    {},", item(&m)).expect("writing to a String");
    }
    list.push(']');
    let out = std::env::var("OUT_DIR").expect("cargo sets OUT_DIR");
    std::fs::write(Path::new(&out).join(file), list).expect("writing the generated table");
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
