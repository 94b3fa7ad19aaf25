//! CONTRIBUTING's "Where a new plugin goes" table says, for each kind of plugin, how many
//! lines outside the plugin's own file register it; this test counts them in the tree
//! for one existing plugin of each kind and fails when the table and the code disagree.
//!
//! A registration site is a line of non-test source under `crates/*/src` (comments,
//! string literals and `#[cfg(test)]` items left out), outside the plugin's own file,
//! that names the plugin's module or its type. The threat map
//! (`crates/core/taxonomy/threat_map.json`) is not a site: an attack's, injection's,
//! metric's or scanner rule's row there is generated from the row the plugin declares in
//! its own file (`THREAT`, a rule's `threat`), which this test checks is there.

use std::path::{Path, PathBuf};

/// One plugin per kind: the kind as CONTRIBUTING's table names it, the plugin's file,
/// its module name and its type name(s).
const SAMPLES: &[(&str, &str, &[&str])] = &[
    (
        "judge",
        "crates/redteam/src/judges/injection_detector.rs",
        &["injection_detector", "InjectionDetector"],
    ),
    (
        "attack",
        "crates/redteam/src/attacks/divergence.rs",
        &["divergence", "Divergence"],
    ),
    (
        "injection",
        "crates/redteam/src/injections/mcp_shadowing.rs",
        &["mcp_shadowing", "McpShadowing"],
    ),
    (
        "metric",
        "crates/redteam/src/metrics/pii_leak_rate.rs",
        &["pii_leak_rate", "PiiLeakRate"],
    ),
    (
        "dataset",
        "crates/redteam/src/datasets/jbb_behaviors.rs",
        &["jbb_behaviors", "JbbBehaviors"],
    ),
    (
        "transform",
        "crates/redteam/src/transforms/morse.rs",
        &["morse", "Morse"],
    ),
    (
        "detector",
        "crates/detect/src/rules/unusual_timing.rs",
        &["unusual_timing", "UnusualTiming"],
    ),
    (
        "scanner rule",
        "crates/mcp/src/rules/invisible_text.rs",
        &["invisible_text", "InvisibleText"],
    ),
];

fn root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../..")
}

/// Comments and string and char literals replaced by spaces (newlines kept).
fn blank(src: &str) -> String {
    let b = src.as_bytes();
    let mut out = Vec::with_capacity(b.len());
    let mut i = 0;
    let space = |s: &[u8], out: &mut Vec<u8>| {
        out.extend(s.iter().map(|&c| if c == b'\n' { b'\n' } else { b' ' }));
    };
    while i < b.len() {
        let rest = &b[i..];
        let ident_before = i > 0 && (b[i - 1].is_ascii_alphanumeric() || b[i - 1] == b'_');
        if rest.starts_with(b"//") {
            let j = rest.iter().position(|&c| c == b'\n').unwrap_or(rest.len());
            space(&rest[..j], &mut out);
            i += j;
        } else if rest.starts_with(b"/*") {
            let (mut depth, mut j) = (1, 2);
            while j < rest.len() && depth > 0 {
                if rest[j..].starts_with(b"/*") {
                    depth += 1;
                    j += 2;
                } else if rest[j..].starts_with(b"*/") {
                    depth -= 1;
                    j += 2;
                } else {
                    j += 1;
                }
            }
            space(&rest[..j], &mut out);
            i += j;
        } else if let Some((open, hashes)) = raw_start(rest).filter(|_| !ident_before) {
            let mut end = vec![b'"'];
            end.extend(std::iter::repeat_n(b'#', hashes));
            let j = rest[open..]
                .windows(end.len())
                .position(|w| w == end.as_slice())
                .map_or(rest.len(), |p| open + p + end.len());
            space(&rest[..j], &mut out);
            i += j;
        } else if rest[0] == b'"' || (!ident_before && rest.starts_with(b"b\"")) {
            let mut j = if rest[0] == b'b' { 2 } else { 1 };
            while j < rest.len() && rest[j] != b'"' {
                j += if rest[j] == b'\\' { 2 } else { 1 };
            }
            let j = (j + 1).min(rest.len());
            space(&rest[..j], &mut out);
            i += j;
        } else if rest[0] == b'\'' {
            // A char literal ('x', '\n', '\u{1F600}') or a lifetime ('a).
            let lit = if rest.get(1) == Some(&b'\\') {
                rest.get(3..)
                    .and_then(|r| r.iter().position(|&c| c == b'\''))
                    .map(|p| p + 4)
            } else {
                // The width of the UTF-8 character after the quote, from its first byte.
                let n = match rest.get(1) {
                    Some(0..=0x7f) => 1,
                    Some(0xc0..=0xdf) => 2,
                    Some(0xe0..=0xef) => 3,
                    _ => 4,
                };
                (rest.get(1 + n) == Some(&b'\'')).then_some(n + 2)
            };
            let j = lit.unwrap_or(1);
            if lit.is_some() {
                space(&rest[..j], &mut out);
            } else {
                out.push(b'\'');
            }
            i += j;
        } else {
            out.push(rest[0]);
            i += 1;
        }
    }
    String::from_utf8(out).expect("only ASCII bytes were replaced")
}

/// Where a raw string literal (`r"…"`, `r#"…"#`, `br"…"`) starting at `s[0]` opens:
/// the length of its opening (`r#"`) and how many `#` close it.
fn raw_start(s: &[u8]) -> Option<(usize, usize)> {
    let r = if s.starts_with(b"br") {
        2
    } else if s.starts_with(b"r") {
        1
    } else {
        return None;
    };
    let hashes = s[r..].iter().take_while(|&&c| c == b'#').count();
    (s.get(r + hashes) == Some(&b'"')).then_some((r + hashes + 1, hashes))
}

/// `code` with every `#[cfg(test)]` item blanked (to its `;` or its brace block).
fn strip_tests(mut code: String) -> String {
    while let Some(at) = code.find("#[cfg(test)]") {
        let after = at + "#[cfg(test)]".len();
        let semi = code[after..].find(';').map(|p| after + p);
        let brace = code[after..].find('{').map(|p| after + p);
        let end = match (semi, brace) {
            (Some(s), Some(b)) if s < b => s,
            (_, Some(b)) => {
                let mut depth = 0usize;
                let mut end = code.len() - 1;
                for (k, c) in code[b..].char_indices() {
                    match c {
                        '{' => depth += 1,
                        '}' => {
                            depth -= 1;
                            if depth == 0 {
                                end = b + k;
                                break;
                            }
                        }
                        _ => {}
                    }
                }
                end
            }
            (Some(s), None) => s,
            (None, None) => code.len() - 1,
        };
        let blanked: String = code[at..=end]
            .chars()
            .map(|c| if c == '\n' { '\n' } else { ' ' })
            .collect();
        code.replace_range(at..=end, &blanked);
    }
    code
}

fn rust_files(dir: &Path, out: &mut Vec<PathBuf>) {
    let mut entries: Vec<_> = std::fs::read_dir(dir)
        .expect("a source directory")
        .map(|e| e.expect("a directory entry").path())
        .collect();
    entries.sort();
    for p in entries {
        if p.is_dir() {
            rust_files(&p, out);
        } else if p.extension().is_some_and(|e| e == "rs") {
            out.push(p);
        }
    }
}

fn is_word(line: &str, word: &str) -> bool {
    line.match_indices(word).any(|(at, _)| {
        let before = line[..at].chars().next_back();
        let after = line[at + word.len()..].chars().next();
        let ident = |c: Option<char>| c.is_some_and(|c| c.is_alphanumeric() || c == '_');
        !ident(before) && !ident(after)
    })
}

/// The registration sites of a plugin: `file:line: text` of every non-test source line
/// outside `own` that names one of `names`.
fn sites(own: &Path, names: &[&str]) -> Vec<String> {
    let root = root();
    let mut files = Vec::new();
    let mut crates: Vec<_> = std::fs::read_dir(root.join("crates"))
        .expect("crates/")
        .map(|e| e.expect("a crate").path().join("src"))
        .filter(|p| p.is_dir())
        .collect();
    crates.sort();
    for src in crates {
        rust_files(&src, &mut files);
    }
    let own = own.canonicalize().expect("the plugin's file exists");
    let mut out = Vec::new();
    for f in files {
        if f.canonicalize().expect("a source file") == own || f.ends_with("tests.rs") {
            continue;
        }
        let text = std::fs::read_to_string(&f).expect("a source file");
        let code = strip_tests(blank(&text));
        for (n, line) in code.lines().enumerate() {
            if names.iter().any(|w| is_word(line, w)) {
                let rel = f.strip_prefix(&root).unwrap_or(&f).display().to_string();
                out.push(format!("{rel}:{}: {}", n + 1, line.trim()));
            }
        }
    }
    out
}

/// Whether the threat map has a row keyed `name`.
fn in_threat_map(name: &str) -> bool {
    let text = std::fs::read_to_string(root().join("crates/core/taxonomy/threat_map.json"))
        .expect("the threat map");
    let key = format!("\"{name}\":");
    text.lines().any(|l| l.trim_start().starts_with(&key))
}

/// Whether the plugin's own file declares its threat-map row (`THREAT`, a rule's `threat`).
fn declares_threat(own: &Path) -> bool {
    let code = blank(&std::fs::read_to_string(own).expect("the plugin's file"));
    code.contains("pub const THREAT:") || code.contains("threat: &[")
}

/// CONTRIBUTING's row for `kind`: the lines of code outside the file it documents (read
/// from "plus N line(s)"), and whether it says the file declares a threat-map row.
fn documented(kind: &str) -> (usize, bool) {
    let text = std::fs::read_to_string(root().join("CONTRIBUTING.md")).expect("CONTRIBUTING.md");
    let row = text
        .lines()
        .find(|l| l.starts_with(&format!("| {kind} |")))
        .unwrap_or_else(|| panic!("CONTRIBUTING.md has no `| {kind} |` row"));
    let plus = row
        .split("plus ")
        .nth(1)
        .unwrap_or_else(|| panic!("the `{kind}` row says no \"plus N line\": {row}"));
    let n = plus
        .split_whitespace()
        .next()
        .and_then(|w| match w {
            "one" => Some(1),
            "two" => Some(2),
            w => w.parse().ok(),
        })
        .unwrap_or_else(|| panic!("the `{kind}` row's count is not a number: {row}"));
    (n, row.contains("its threat-map row"))
}

#[test]
fn contributing_states_how_many_lines_register_each_kind_of_plugin() {
    let mut wrong = Vec::new();
    for (kind, file, names) in SAMPLES {
        let own = root().join(file);
        let found = sites(&own, names);
        let (n, threat) = documented(kind);
        if found.len() != n {
            wrong.push(format!(
                "{kind} (`{}`): CONTRIBUTING says plus {n} line(s); the tree has {}:\n  {}",
                names[0],
                found.len(),
                found.join("\n  ")
            ));
        }
        let (declared, mapped) = (declares_threat(&own), in_threat_map(names[0]));
        if threat != declared || declared != mapped {
            wrong.push(format!(
                "{kind} (`{}`): CONTRIBUTING says its file declares a threat-map row: {threat}; \
                 the file declares one: {declared}; the generated map has one: {mapped}",
                names[0]
            ));
        }
    }
    assert!(wrong.is_empty(), "{}", wrong.join("\n"));
}

/// The counter sees what it must: a name in code, not in a comment, a string or a test.
#[test]
fn a_site_is_code_outside_comments_strings_and_tests() {
    let src = "use a::rubric; // rubric\nlet s = \"rubric\";\nlet c = '\"'; rubric_x;\n\
               #[cfg(test)]\nmod tests { rubric }\nlet r = r#\"rubric\"#; Rubric\n";
    let code = strip_tests(blank(src));
    let hits: Vec<usize> = code
        .lines()
        .enumerate()
        .filter(|(_, l)| is_word(l, "rubric") || is_word(l, "Rubric"))
        .map(|(n, _)| n + 1)
        .collect();
    assert_eq!(hits, [1, 6]);
}
