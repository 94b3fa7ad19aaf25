//! Embeds the reference corpus (`exams/scenarios`) into the crate as a fallback for
//! binaries run where no corpus directory exists (see `src/embedded.rs`). The same
//! walk rules as the loader: `.yaml`/`.yml` only, any `_`-prefixed component pruned;
//! plus `corpus.pin`.

use std::fmt::Write as _;
use std::path::{Path, PathBuf};

fn walk(root: &Path, dir: &Path, out: &mut Vec<(String, PathBuf)>) {
    let Ok(rd) = std::fs::read_dir(dir) else {
        return;
    };
    let mut entries: Vec<_> = rd.filter_map(Result::ok).collect();
    entries.sort_by_key(|e| e.file_name());
    for e in entries {
        let name = e.file_name().to_string_lossy().into_owned();
        if name.starts_with('_') {
            continue;
        }
        let p = e.path();
        let Ok(ft) = e.file_type() else { continue };
        if ft.is_dir() {
            walk(root, &p, out);
        } else if ft.is_file() && (name.ends_with(".yaml") || name.ends_with(".yml")) {
            let rel = p
                .strip_prefix(root)
                .unwrap()
                .to_string_lossy()
                .replace('\\', "/");
            out.push((rel, p));
        }
    }
}

fn main() {
    let manifest = PathBuf::from(std::env::var("CARGO_MANIFEST_DIR").unwrap());
    let root = manifest.join("../../exams/scenarios");
    println!("cargo:rerun-if-changed={}", root.display());
    let mut files = Vec::new();
    walk(&root, &root, &mut files);
    let pin = root.join("corpus.pin");
    let mut src = String::from(
        "/// (relpath, bytes) of every embedded scenario file.\npub(crate) static FILES: &[(&str, &[u8])] = &[\n",
    );
    for (rel, p) in &files {
        let _ = writeln!(
            src,
            "    ({rel:?}, include_bytes!({:?})),",
            p.canonicalize().unwrap()
        );
    }
    src.push_str("];\n");
    if pin.is_file() {
        let _ = writeln!(
            src,
            "/// The embedded corpus.pin.\npub(crate) static PIN: Option<&[u8]> = Some(include_bytes!({:?}));",
            pin.canonicalize().unwrap()
        );
    } else {
        src.push_str(
            "/// The embedded corpus.pin.\npub(crate) static PIN: Option<&[u8]> = None;\n",
        );
    }
    let out = PathBuf::from(std::env::var("OUT_DIR").unwrap()).join("embedded_corpus.rs");
    std::fs::write(out, src).unwrap();
}
