//! Derives the scanner's rule table from the source tree: every `pub mod NAME;` line of
//! `src/rules/mod.rs` whose file declares `pub const RULE` is a rule, and
//! `$OUT_DIR/rules.rs` lists their `RULE`s in name order (as `super::NAME::RULE`, for
//! `src/rules/check.rs`, which sorts them by `rank`). A new rule is therefore its file
//! plus its `mod` line.

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

fn main() {
    let dir = Path::new("src/rules");
    println!("cargo:rerun-if-changed={}", dir.display());
    let mut list = String::from("[\n");
    for m in plugins(dir, "pub const RULE:") {
        println!(
            "cargo:rerun-if-changed={}/{}.rs",
            dir.display(),
            m.trim_start_matches("r#")
        );
        writeln!(list, "    super::{m}::RULE,").expect("writing to a String");
    }
    list.push(']');
    let out = std::env::var("OUT_DIR").expect("cargo sets OUT_DIR");
    std::fs::write(Path::new(&out).join("rules.rs"), list).expect("writing OUT_DIR/rules.rs");
}
