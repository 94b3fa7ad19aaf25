//! `name_collision`: tool names that collide across the scanned servers.
//!
//! Two servers offering the same tool name leave the client to pick one (many pick the
//! last registered); a confusable name — equal once case, `-`/`_`/`.` and spaces are
//! ignored, or with non-ASCII letters that look like ASCII ones (`sеnd_email` with a
//! Cyrillic `е`) — lets a second server pass for the first. Every tool involved gets a
//! finding naming the other servers.

use crate::finding::{Finding, ItemKind, Rule, Severity};
use std::collections::BTreeMap;

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

/// Findings for every tool whose name collides with one on another server. `servers`:
/// (server, tool names) in scan order.
pub fn check(servers: &[(&str, Vec<&str>)], out: &mut Vec<Finding>) {
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
                rule: Rule::NameCollision,
                severity: if non_ascii {
                    Severity::High
                } else {
                    Severity::Medium
                },
                location: "/name".into(),
                text: name
                    .chars()
                    .map(|c| {
                        if c.is_ascii() && !c.is_ascii_control() {
                            c.to_string()
                        } else {
                            format!("\\u{{{:x}}}", c as u32)
                        }
                    })
                    .collect(),
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
}
