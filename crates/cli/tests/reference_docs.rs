//! The book's generated reference pages (docs/src/reference/cli.md, plugins.md and
//! refusal-rules.md) against the binary that is built: every subcommand's `--help`,
//! `gauntlet list` and `gauntlet list --rules`. A page that differs from what the binary
//! prints fails the test with the first differing line; regenerate them with
//!
//!     GAUNTLET_UPDATE_DOCS=1 cargo nextest run -p gauntlet-cli -E 'test(/reference_docs/)'
//!
//! and review the diff as you would a snapshot's.

use crate::common::{BIN, repo_root, show};
use std::path::Path;
use std::process::Command;

/// Where a help text wraps: fixed, so the pages do not depend on the terminal's width.
const COLUMNS: &str = "100";

/// The environment variable that rewrites the pages instead of checking them.
const UPDATE: &str = "GAUNTLET_UPDATE_DOCS";

/// What `gauntlet ARGS` prints on stdout, which must succeed.
fn stdout(args: &[&str]) -> String {
    let out = Command::new(BIN)
        .args(args)
        .env("COLUMNS", COLUMNS)
        .env("NO_COLOR", "1")
        .env_remove("CLICOLOR_FORCE")
        .output()
        .expect("run gauntlet");
    assert!(out.status.success(), "gauntlet {args:?}: {}", show(&out));
    String::from_utf8(out.stdout).expect("help is UTF-8")
}

/// The subcommands a help text lists under `Commands:` (without clap's own `help`).
fn subcommands(help: &str) -> Vec<String> {
    help.lines()
        .skip_while(|l| l.trim_end() != "Commands:")
        .skip(1)
        .take_while(|l| l.starts_with("  "))
        .filter(|l| !l.starts_with("   ")) // a description's continuation line
        .filter_map(|l| l.split_whitespace().next())
        .filter(|name| *name != "help")
        .map(str::to_owned)
        .collect()
}

/// A page's header: what generated it and how to regenerate it.
fn header(title: &str, from: &str) -> String {
    format!(
        "# {title}\n\n<!-- Generated from `{from}` by crates/cli/tests/reference_docs.rs: do not \
         edit.\n     Regenerate: {UPDATE}=1 cargo nextest run -p gauntlet-cli -E \
         'test(/reference_docs/)' -->\n\n"
    )
}

fn fenced(text: &str) -> String {
    format!("```text\n{}\n```\n", text.trim_end())
}

/// `gauntlet --help` and every subcommand's, depth first, in the order `--help` lists them.
fn cli_page() -> String {
    let mut page = header("Command-line help", "gauntlet … --help");
    page.push_str(
        "Every command's `--help`, as the binary prints it. What the commands do together, \
         their exit codes and progress display: [Commands, exit codes and \
         progress](commands.md).\n",
    );
    let mut stack = vec![Vec::<String>::new()];
    while let Some(path) = stack.pop() {
        let mut args: Vec<&str> = path.iter().map(String::as_str).collect();
        args.push("--help");
        let help = stdout(&args);
        let name = std::iter::once("gauntlet")
            .chain(path.iter().map(String::as_str))
            .collect::<Vec<_>>()
            .join(" ");
        page.push_str(&format!("\n## `{name}`\n\n{}", fenced(&help)));
        for sub in subcommands(&help).into_iter().rev() {
            let mut child = path.clone();
            child.push(sub);
            stack.push(child);
        }
    }
    page
}

fn plugins_page() -> String {
    let mut page = header("Plugins and their params", "gauntlet list");
    page.push_str(
        "Every registered plugin per axis with its params, types, ranges and defaults, as \
         `gauntlet list` prints it. A config names a plugin by its bare name or as `{name, \
         params}` ([Run configs](run-configs.md)).\n\n",
    );
    page.push_str(&fenced(&stdout(&["list"])));
    page
}

fn rules_page() -> String {
    let mut page = header("Refusal rules", "gauntlet list --rules");
    page.push_str(
        "The rules of the `refusal_match` judge (also the second opinion of \
         `refusal_classifier`), as `gauntlet list --rules` prints them; a rule's id is \
         what `exclude_rules` takes ([Judges and their cards](../concepts/judges.md)).\n\n",
    );
    page.push_str(&fenced(&stdout(&["list", "--rules"])));
    page
}

/// Checks one page, or writes it when [`UPDATE`] is set.
fn check(file: &str, generated: &str) -> Option<String> {
    let path = repo_root().join("docs/src/reference").join(file);
    if std::env::var_os(UPDATE).is_some_and(|v| !v.is_empty() && v != "0") {
        std::fs::write(&path, generated).expect("write the generated page");
        return None;
    }
    let committed = read(&path);
    if committed == generated {
        return None;
    }
    let (n, (want, got)) = generated
        .lines()
        .chain(std::iter::repeat("<end of page>"))
        .zip(committed.lines().chain(std::iter::repeat("<end of page>")))
        .enumerate()
        .find(|(_, (a, b))| a != b)
        .expect("two different texts differ on some line");
    Some(format!(
        "{}: line {}: the binary prints\n    {want}\nbut the page has\n    {got}",
        path.display(),
        n + 1
    ))
}

fn read(path: &Path) -> String {
    let bytes = std::fs::read(path)
        .unwrap_or_else(|e| panic!("{}: {e}; generate it with {UPDATE}=1", path.display()));
    String::from_utf8(bytes).expect("the page is UTF-8")
}

#[test]
fn reference_docs_match_the_binary() {
    let drift: Vec<String> = [
        ("cli.md", cli_page()),
        ("plugins.md", plugins_page()),
        ("refusal-rules.md", rules_page()),
    ]
    .iter()
    .filter_map(|(file, page)| check(file, page))
    .collect();
    assert!(
        drift.is_empty(),
        "the book's generated reference drifted from the binary:\n{}\n\nRegenerate the pages \
         with `{UPDATE}=1 cargo nextest run -p gauntlet-cli -E 'test(/reference_docs/)'` and \
         review the diff.",
        drift.join("\n")
    );
}

#[test]
fn every_subcommand_is_found_in_the_help() {
    // The walk above reads the `Commands:` list clap prints; a change in that format
    // would leave the page with the top-level help alone.
    let top = subcommands(&stdout(&["--help"]));
    for name in [
        "run",
        "validate",
        "list",
        "exam-detect",
        "mcp-serve",
        "corpus",
        "import",
    ] {
        assert!(top.iter().any(|c| c == name), "{name} not in {top:?}");
    }
    assert_eq!(
        subcommands(&stdout(&["corpus", "--help"])),
        ["pin", "verify"]
    );
}
