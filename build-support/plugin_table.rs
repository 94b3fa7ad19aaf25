// What a plugin is, for the build scripts that derive a plugin table from the source
// tree (crates/redteam/build.rs, crates/detect/build.rs, crates/mcp/build.rs, each
// `include!`s this file): a `pub mod NAME;` line whose file declares the axis's marker.
// One definition, so the three tables cannot drift apart.

/// The modules declared `pub mod NAME;` in `decls` (a folder's `mod.rs`, or a crate's
/// `lib.rs`) whose file `dir/NAME.rs` holds `marker`, sorted by name (`r#static` as
/// `static`). Tells cargo to rerun when `decls` or anything under `dir` changes: the
/// directory is watched whole, and no module file is named one by one, since cargo
/// reruns on every build for a watched path that does not exist (a `pub mod` that is
/// no plugin may have no file there).
fn plugins(decls: &std::path::Path, dir: &std::path::Path, marker: &str) -> Vec<String> {
    println!("cargo:rerun-if-changed={}", decls.display());
    println!("cargo:rerun-if-changed={}", dir.display());
    let text =
        std::fs::read_to_string(decls).unwrap_or_else(|e| panic!("{}: {e}", decls.display()));
    let mut out: Vec<String> = text
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

/// Writes `$OUT_DIR/<file>`: the array expression `[item(a), item(b), …]` over
/// `plugins`, one per line, for the table that `include!`s it.
fn write_table(file: &str, plugins: &[String], item: impl Fn(&str) -> String) {
    let mut list = String::from("[\n");
    for m in plugins {
        list.push_str("    ");
        list.push_str(&item(m));
        list.push_str(",\n");
    }
    list.push(']');
    let out = std::env::var("OUT_DIR").expect("cargo sets OUT_DIR");
    let path = std::path::Path::new(&out).join(file);
    std::fs::write(&path, list).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
}
