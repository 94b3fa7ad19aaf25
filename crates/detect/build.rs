//! Derives the reference fleet from the source tree, so a detector is its file plus its
//! `mod` line: every `pub mod NAME;` line of `src/lib.rs` whose `src/rules/NAME.rs`
//! declares `pub const DETECTOR` is in `$OUT_DIR/fleet.rs`, in name order (the fleet
//! itself is sorted by family token at run time).

use std::fmt::Write as _;
use std::path::Path;

fn main() {
    let dir = Path::new("src/rules");
    // A directory is watched whole; a `pub mod` of lib.rs that is no rule (no file under
    // rules/) must not be named here, since cargo reruns for a path that does not exist.
    println!("cargo:rerun-if-changed=src/lib.rs");
    println!("cargo:rerun-if-changed={}", dir.display());
    let lib = std::fs::read_to_string("src/lib.rs").expect("src/lib.rs");
    let mut mods: Vec<&str> = lib
        .lines()
        .filter_map(|l| l.trim().strip_prefix("pub mod ")?.strip_suffix(';'))
        .filter(|m| {
            let file = dir.join(format!("{m}.rs"));
            std::fs::read_to_string(file).is_ok_and(|s| s.contains("pub const DETECTOR:"))
        })
        .collect();
    mods.sort();
    let mut list = String::from("[\n");
    for m in mods {
        writeln!(list, "    rules::{m}::DETECTOR,").expect("writing to a String");
    }
    list.push(']');
    let out = std::env::var("OUT_DIR").expect("cargo sets OUT_DIR");
    std::fs::write(Path::new(&out).join("fleet.rs"), list).expect("writing OUT_DIR/fleet.rs");
}
