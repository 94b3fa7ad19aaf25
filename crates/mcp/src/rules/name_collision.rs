//! `name_collision`: tool names that collide across the scanned servers.
//!
//! Two servers offering the same tool name leave the client to pick one (many pick the
//! last registered); a confusable name — equal once case, `-`/`_`/`.` and spaces are
//! ignored, or with non-ASCII letters that look like ASCII ones (`sеnd_email` with a
//! Cyrillic `е`) — lets a second server pass for the first; so does a near-identical
//! name, the same once a version or qualifier suffix or a plural `s` is set aside
//! (`send_email_v2`, `read_file_secure`, `slack_post_messages` beside `send_email`,
//! `read_file`, `slack_post_message`). Every tool involved gets a finding naming the
//! other servers: `info` when the two spell the name identically in ASCII (honest
//! servers share names like `create_issue`; which one the client calls is worth knowing,
//! not a failure on its own), `medium` for a confusable or near-identical spelling,
//! `high` for non-ASCII look-alike letters.
//!
//! Within one server, two tools listed under one name leave the client to pick one
//! definition (and the one a reviewer read need not be the one the model gets): each is
//! a finding.

use crate::fields::ItemKind;
use crate::finding::{Check, Finding, Rule, RuleInfo, Severity};
use std::collections::BTreeMap;

/// What this rule is: the scanner's catalogue, SARIF and the threat map read it.
pub const RULE: Rule = Rule(&RuleInfo {
    id: "name_collision",
    rank: 6,
    summary: "the same or a confusable name on two servers",
    poisoning: false,
    check: Check::Scan,
    threat: &[
        ("owasp_llm", &["LLM03:2025"]),
        ("owasp_agentic", &["T9"]),
        ("owasp_agentic_2026", &["ASI04"]),
        ("owasp_mcp", &["MCP03:2025", "MCP09:2025"]),
    ],
});

/// The form two confusable names share.
pub fn skeleton(name: &str) -> String {
    name.chars()
        .filter(|c| {
            !matches!(
                c,
                '-' | '_' | '.' | ' ' | '\u{200b}'..='\u{200f}' | '\u{2060}' | '\u{feff}'
            )
        })
        .map(|c| confusable(c).to_ascii_lowercase())
        .collect()
}

/// The ASCII letter a common look-alike stands for (Cyrillic and Greek homoglyphs,
/// fullwidth forms).
fn confusable(c: char) -> char {
    match c {
        'а' | 'α' => 'a',
        'е' | 'ε' => 'e',
        'о' | 'ο' => 'o',
        'р' | 'ρ' => 'p',
        'с' | 'ϲ' => 'c',
        'у' => 'y',
        'х' | 'χ' => 'x',
        'і' | 'ι' => 'i',
        'ѕ' => 's',
        'ј' => 'j',
        'ԁ' => 'd',
        'һ' => 'h',
        'ԛ' => 'q',
        'ԝ' => 'w',
        'ν' => 'v',
        'κ' => 'k',
        'τ' => 't',
        'Α' => 'a',
        'Β' | 'В' => 'b',
        'Ε' | 'Е' => 'e',
        'Η' | 'Н' => 'h',
        'Ι' | 'І' => 'i',
        'Κ' | 'К' => 'k',
        'Μ' | 'М' => 'm',
        'Ν' => 'n',
        'Ο' | 'О' => 'o',
        'Ρ' | 'Р' => 'p',
        'Τ' | 'Т' => 't',
        'Χ' | 'Х' => 'x',
        'С' => 'c',
        c if ('\u{ff01}'..='\u{ff5e}').contains(&c) => {
            char::from_u32(c as u32 - 0xfee0).unwrap_or(c)
        }
        c => c,
    }
}

/// Version and qualifier suffixes a look-alike adds to a name (compared on the
/// skeleton, where separators are gone).
const QUALIFIERS: &[&str] = &[
    "official", "verified", "enhanced", "advanced", "improved", "updated", "secure", "latest",
    "stable", "fixed", "safe", "plus", "live", "beta", "new", "pro",
];

/// The skeleton with a trailing version (`v2`, `2`, `v1.1`) or qualifier (`_secure`,
/// `_pro`…) and a plural `s` removed: the form two near-identical names share.
pub fn near_skeleton(name: &str) -> String {
    let mut k = skeleton(name);
    for _ in 0..3 {
        let before = k.len();
        let trimmed = k.trim_end_matches(|c: char| c.is_ascii_digit());
        let trimmed = trimmed
            .strip_suffix('v')
            .filter(|_| trimmed.len() < k.len())
            .unwrap_or(trimmed);
        k = trimmed.to_string();
        if let Some(q) = QUALIFIERS
            .iter()
            .find(|q| k.len() > q.len() + 3 && k.ends_with(*q))
        {
            k.truncate(k.len() - q.len());
        }
        let stem = k.strip_suffix("es").unwrap_or("");
        if k.len() > 5 && ["x", "sh", "ch", "ss"].iter().any(|e| stem.ends_with(e)) {
            k.truncate(k.len() - 2);
        } else if k.len() > 4 && k.ends_with('s') && !k.ends_with("ss") {
            k.pop();
        }
        if k.len() == before {
            break;
        }
    }
    k
}

/// Findings for every tool whose name collides with one on another server, and for
/// every name one server lists twice. `servers`: (server, tool names) in scan order.
pub fn check(servers: &[(&str, Vec<&str>)], out: &mut Vec<Finding>) {
    for (server, names) in servers {
        let mut counts: BTreeMap<&str, usize> = BTreeMap::new();
        for n in names {
            *counts.entry(n).or_default() += 1;
        }
        for (name, k) in counts.into_iter().filter(|(_, k)| *k > 1) {
            out.push(Finding {
                server: server.to_string(),
                kind: ItemKind::Tool,
                item: name.to_string(),
                rule: RULE,
                severity: Severity::Medium,
                location: "/name".into(),
                text: spelled(name),
                message: format!(
                    "the server lists {k} tools named `{name}`: which definition a client uses is up to the client, and it need not be the one reviewed"
                ),
            });
        }
    }
    near_identical(servers, out);
    misspelled(servers, out);
    let mut by_skeleton: BTreeMap<String, Vec<(&str, &str)>> = BTreeMap::new();
    for (server, names) in servers {
        for n in names {
            by_skeleton
                .entry(skeleton(n))
                .or_default()
                .push((server, n));
        }
    }
    for group in by_skeleton.values() {
        for &(server, name) in group {
            let others: Vec<String> = group
                .iter()
                .filter(|(s, _)| *s != server)
                .map(|(s, n)| format!("`{n}` on {s}"))
                .collect();
            if others.is_empty() {
                continue;
            }
            let exact = group.iter().any(|(s, n)| *s != server && *n == name);
            let non_ascii = !name.is_ascii();
            out.push(Finding {
                server: server.to_string(),
                kind: ItemKind::Tool,
                item: name.to_string(),
                rule: RULE,
                // The same ASCII name on two servers is common among honest servers
                // (an issue tracker's and a code host's `create_issue`): which one the
                // client calls is worth knowing, not a failure on its own.
                severity: if non_ascii {
                    Severity::High
                } else if exact {
                    Severity::Info
                } else {
                    Severity::Medium
                },
                location: "/name".into(),
                text: spelled(name),
                message: if exact {
                    format!(
                        "the same tool name is offered by another server: {}",
                        others.join(", ")
                    )
                } else {
                    format!(
                        "a confusable tool name{}: {}",
                        if non_ascii {
                            " (non-ASCII look-alike letters)"
                        } else {
                            ""
                        },
                        others.join(", ")
                    )
                },
            });
        }
    }
}

/// The skeleton with ASCII look-alikes inside a word read as the letter they imitate: an
/// upper-case `I` between lower-case letters as `l` (`read_fiIe`), `0` and `1` between
/// letters as `o` and `l` (`l0gin`, `fi1e`).
fn ascii_look_alike(name: &str) -> String {
    let c: Vec<char> = name.chars().collect();
    let mut s = String::with_capacity(name.len());
    for i in 0..c.len() {
        let around =
            |f: fn(&char) -> bool| i > 0 && i + 1 < c.len() && f(&c[i - 1]) && f(&c[i + 1]);
        s.push(match c[i] {
            'I' if around(char::is_ascii_lowercase) => 'l',
            '0' if around(char::is_ascii_alphabetic) => 'o',
            '1' if around(char::is_ascii_alphabetic) => 'l',
            x => x,
        });
    }
    skeleton(&s)
}

/// The words of a name, lower-cased (split at `_`, `-`, `.`, spaces and camelCase).
fn words(name: &str) -> Vec<String> {
    let mut out = vec![String::new()];
    let mut prev_lower = false;
    for c in name.chars() {
        if matches!(c, '_' | '-' | '.' | ' ') {
            out.push(String::new());
            prev_lower = false;
            continue;
        }
        if c.is_ascii_uppercase() && prev_lower {
            out.push(String::new());
        }
        prev_lower = c.is_ascii_lowercase();
        out.last_mut().unwrap().push(c.to_ascii_lowercase());
    }
    out.retain(|w| !w.is_empty());
    out
}

/// One insertion, deletion, substitution or swap of neighbours apart.
fn one_edit(a: &[u8], b: &[u8]) -> bool {
    let (a, b) = if a.len() <= b.len() { (a, b) } else { (b, a) };
    let p = a.iter().zip(b).take_while(|(x, y)| x == y).count();
    match b.len() - a.len() {
        0 => {
            a[p + 1..] == b[p + 1..]
                || (p + 1 < a.len()
                    && a[p] == b[p + 1]
                    && a[p + 1] == b[p]
                    && a[p + 2..] == b[p + 2..])
        }
        1 => a[p..] == b[p + 1..],
        _ => false,
    }
}

/// Two names a reader takes for one another: equal once ASCII look-alikes are read as
/// the letters they imitate, or the same words but one long word (6+ letters) one typo
/// apart (`query_databse`, `list_reposs`).
fn look_alike(a: &str, b: &str) -> bool {
    let (la, lb) = (ascii_look_alike(a), ascii_look_alike(b));
    if la == lb || la == skeleton(b) || lb == skeleton(a) {
        return true;
    }
    let (wa, wb) = (words(a), words(b));
    if wa.len() != wb.len() {
        return false;
    }
    let differ: Vec<usize> = (0..wa.len()).filter(|&i| wa[i] != wb[i]).collect();
    differ.len() == 1 && {
        let (x, y) = (&wa[differ[0]], &wb[differ[0]]);
        x.len().max(y.len()) >= 6
            && !x.chars().all(|c| c.is_ascii_digit())
            && one_edit(x.as_bytes(), y.as_bytes())
    }
}

/// `gihtub_create_issue` beside server `github`'s `create_issue`: another server's tool
/// name behind a misspelling of that server's name.
fn typo_namespace(name: &str, other_server: &str, other_tool: &str) -> bool {
    let (k, t, srv) = (skeleton(name), skeleton(other_tool), skeleton(other_server));
    k.len() > t.len()
        && srv.len() >= 4
        && k.strip_suffix(&t)
            .is_some_and(|p| p != srv && one_edit(p.as_bytes(), srv.as_bytes()))
}

/// Names on different servers that only a misreading tells apart (see [`look_alike`]
/// and [`typo_namespace`]) and that neither the confusable nor the near-identical check
/// already pairs.
fn misspelled(servers: &[(&str, Vec<&str>)], out: &mut Vec<Finding>) {
    let all: Vec<(&str, &str)> = servers
        .iter()
        .flat_map(|(s, names)| names.iter().map(move |n| (*s, *n)))
        .collect();
    let mut found: BTreeMap<(&str, &str), std::collections::BTreeSet<String>> = BTreeMap::new();
    for (i, &(s1, n1)) in all.iter().enumerate() {
        for &(s2, n2) in &all[i + 1..] {
            if s1 == s2
                || skeleton(n1) == skeleton(n2)
                || near_skeleton(n1) == near_skeleton(n2)
                || !(look_alike(n1, n2) || typo_namespace(n1, s2, n2) || typo_namespace(n2, s1, n1))
            {
                continue;
            }
            found
                .entry((s1, n1))
                .or_default()
                .insert(format!("`{n2}` on {s2}"));
            found
                .entry((s2, n2))
                .or_default()
                .insert(format!("`{n1}` on {s1}"));
        }
    }
    for ((server, name), others) in found {
        out.push(Finding {
            server: server.to_string(),
            kind: ItemKind::Tool,
            item: name.to_string(),
            rule: RULE,
            severity: Severity::Medium,
            location: "/name".into(),
            text: spelled(name),
            message: format!(
                "a look-alike tool name (a misspelling or ASCII letters that imitate others): {}",
                others.into_iter().collect::<Vec<_>>().join(", ")
            ),
        });
    }
}

/// A name with every non-ASCII or control character spelled out (`\u{435}`).
fn spelled(name: &str) -> String {
    name.chars()
        .map(|c| {
            if c.is_ascii() && !c.is_ascii_control() {
                c.to_string()
            } else {
                format!("\\u{{{:x}}}", c as u32)
            }
        })
        .collect()
}

/// Near-identical names on different servers (see [`near_skeleton`]) that are not
/// already confusable (those are reported above).
fn near_identical(servers: &[(&str, Vec<&str>)], out: &mut Vec<Finding>) {
    let mut by_near: BTreeMap<String, Vec<(&str, &str)>> = BTreeMap::new();
    for (server, names) in servers {
        for n in names {
            let k = near_skeleton(n);
            if k.len() >= 4 {
                by_near.entry(k).or_default().push((server, n));
            }
        }
    }
    for group in by_near.values() {
        for &(server, name) in group {
            let others: std::collections::BTreeSet<String> = group
                .iter()
                .filter(|(s, n)| *s != server && skeleton(n) != skeleton(name))
                .map(|(s, n)| format!("`{n}` on {s}"))
                .collect();
            if others.is_empty() {
                continue;
            }
            out.push(Finding {
                server: server.to_string(),
                kind: ItemKind::Tool,
                item: name.to_string(),
                rule: RULE,
                severity: Severity::Medium,
                location: "/name".into(),
                text: spelled(name),
                message: format!(
                    "a near-identical tool name (the same but for a version, a qualifier or a plural): {}",
                    others.into_iter().collect::<Vec<_>>().join(", ")
                ),
            });
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn exact_and_confusable_names_collide_across_servers_only() {
        let mut out = Vec::new();
        check(
            &[
                ("mail", vec!["send_email", "read_inbox", "list"]),
                (
                    "evil",
                    vec!["send_email", "read-Inbox", "s\u{0435}nd_email"],
                ),
                ("other", vec!["list_all"]),
            ],
            &mut out,
        );
        let of = |s: &str, n: &str| out.iter().filter(|f| f.server == s && f.item == n).count();
        assert_eq!(of("mail", "send_email"), 1);
        assert_eq!(of("evil", "send_email"), 1);
        assert_eq!(of("evil", "read-Inbox"), 1);
        let cyr = out.iter().find(|f| f.item == "s\u{0435}nd_email").unwrap();
        assert_eq!(cyr.severity, Severity::High);
        assert!(cyr.text.contains("\\u{435}"), "{}", cyr.text);
        assert_eq!(of("other", "list_all"), 0);
        assert_eq!(of("mail", "list"), 0);
    }

    #[test]
    fn near_identical_names_and_a_name_listed_twice_are_found() {
        let mut out = Vec::new();
        check(
            &[
                ("mail", vec!["send_email", "read_inbox"]),
                ("fs", vec!["read_file", "write_file", "read_file"]),
                (
                    "evil",
                    vec!["send_email_v2", "read_file_secure", "read_inboxes"],
                ),
                (
                    "other",
                    vec!["list_issues", "create_issue", "read_text_file", "send"],
                ),
            ],
            &mut out,
        );
        let of = |s: &str, n: &str| out.iter().filter(|f| f.server == s && f.item == n).count();
        assert_eq!(of("evil", "send_email_v2"), 1);
        assert_eq!(of("mail", "send_email"), 1);
        assert_eq!(of("evil", "read_file_secure"), 1);
        assert_eq!(of("evil", "read_inboxes"), 1);
        // Different tools that share words are not near-identical.
        assert_eq!(of("other", "read_text_file"), 0);
        assert_eq!(of("other", "list_issues"), 0);
        assert_eq!(of("other", "send"), 0);
        let twice = out
            .iter()
            .find(|f| f.server == "fs" && f.message.contains("lists 2 tools named"))
            .unwrap();
        assert_eq!(twice.item, "read_file");
        assert_eq!(twice.severity, Severity::Medium);
        assert_eq!(near_skeleton("get_weather_V1.1"), "getweather");
        assert_eq!(near_skeleton("address"), "address");
    }

    #[test]
    fn the_same_ascii_name_on_two_servers_is_information() {
        let mut out = Vec::new();
        check(
            &[
                ("tracker", vec!["create_issue"]),
                ("forge", vec!["create_issue", "creat\u{0435}_pr"]),
                ("evil", vec!["Create-Issue", "create_pr"]),
            ],
            &mut out,
        );
        let sev = |s: &str, n: &str| {
            out.iter()
                .find(|f| f.server == s && f.item == n)
                .map(|f| f.severity)
        };
        // Two honest servers may both offer `create_issue`: the client picks one.
        assert_eq!(sev("tracker", "create_issue"), Some(Severity::Info));
        // A spelling that only looks the same is still a risk.
        assert_eq!(sev("evil", "Create-Issue"), Some(Severity::Medium));
        assert_eq!(sev("forge", "creat\u{0435}_pr"), Some(Severity::High));
    }

    #[test]
    fn misspelled_and_ascii_look_alike_names_are_found() {
        let mut out = Vec::new();
        check(
            &[
                ("db", vec!["run_statement", "list_schemas", "write_record"]),
                ("fs", vec!["open_fiIe", "list_schemsa", "wirte_record"]),
                ("other", vec!["get_tag", "run_statements2", "list_tables"]),
                ("more", vec!["set_tag", "list_labels"]),
            ],
            &mut out,
        );
        let of = |s: &str, n: &str| out.iter().filter(|f| f.server == s && f.item == n).count();
        assert_eq!(of("fs", "list_schemsa"), 1);
        assert_eq!(
            of("fs", "wirte_record"),
            0,
            "a typo in a short word is too common"
        );
        assert_eq!(of("db", "list_schemas"), 1);
        assert!(one_edit(b"database", b"databse"));
        assert_eq!(ascii_look_alike("open_fiIe"), "openfile");
        // Honest names one letter apart in a short word are not look-alikes.
        assert_eq!(of("other", "get_tag"), 0);
        assert_eq!(of("other", "list_tables"), 0);
        assert_eq!(of("more", "list_labels"), 0);
        // Another server's tool behind a misspelling of that server's name.
        let mut out = Vec::new();
        check(
            &[
                ("gitlab", vec!["merge_request"]),
                ("evil", vec!["gitlba_merge_request"]),
            ],
            &mut out,
        );
        assert_eq!(out.iter().filter(|f| f.server == "evil").count(), 1);
        // The server's own name as a prefix is a namespace, not a misspelling.
        let mut out = Vec::new();
        check(
            &[
                ("gitlab", vec!["merge_request"]),
                ("fine", vec!["gitlab_merge_request"]),
            ],
            &mut out,
        );
        assert!(out.is_empty(), "{out:?}");
        assert!(!typo_namespace(
            "gitlab_merge_request",
            "gitlab",
            "merge_request"
        ));
    }
}
