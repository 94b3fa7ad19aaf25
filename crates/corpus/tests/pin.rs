//! `corpus.pin` parser and writer: the accepted grammar, every rejection (each naming
//! the pin file and line), and properties over arbitrary input.

use gauntlet_corpus::{Pin, PinError};
use proptest::prelude::*;
use std::path::Path;

const HEX: &str = "5fa4977d0c1b2a3f5fa4977d0c1b2a3f5fa4977d0c1b2a3f5fa4977d0c1b2a3f";

fn parse(text: &str) -> Result<Pin, PinError> {
    Pin::parse(text, Path::new("exams/scenarios/corpus.pin"))
}

fn err(text: &str) -> String {
    let e = parse(text).expect_err("should be rejected");
    let s = e.to_string();
    assert!(s.starts_with("exams/scenarios/corpus.pin"), "{s}");
    s
}

#[test]
fn plain_pin() {
    let p = parse(&format!("count 72\nsha256 {HEX}\n")).unwrap();
    assert_eq!(p.count, 72);
    assert_eq!(p.sha256, HEX);
}

#[test]
fn comments_blank_lines_whitespace_and_order() {
    let text = format!(
        "# header\n\n   # indented comment\nsha256   {HEX}\r\n\t\n  count\t072  \n# trailer"
    );
    let p = parse(&text).unwrap();
    assert_eq!(p.count, 72);
    assert_eq!(p.sha256, HEX);
}

#[test]
fn uppercase_hex_is_lowercased() {
    let p = parse(&format!("count 1\nsha256 {}\n", HEX.to_uppercase())).unwrap();
    assert_eq!(p.sha256, HEX);
}

#[test]
fn missing_keys() {
    let s = err(&format!("sha256 {HEX}\n"));
    assert!(s.contains("`count` is missing"), "{s}");
    let s = err("# only\ncount 3\n");
    assert!(s.contains("`sha256` is missing"), "{s}");
    let s = err("");
    assert!(s.contains("missing"), "{s}");
}

#[test]
fn unknown_key_names_its_line() {
    let s = err(&format!("count 1\n# c\nversion 2\nsha256 {HEX}\n"));
    assert!(s.starts_with("exams/scenarios/corpus.pin:3: "), "{s}");
    assert!(s.contains("unknown key `version`"), "{s}");
    // Keys are case-sensitive.
    let s = err(&format!("COUNT 1\nsha256 {HEX}\n"));
    assert!(s.contains(":1: unknown key `COUNT`"), "{s}");
}

#[test]
fn wrong_field_counts() {
    let s = err(&format!("count 1\nsha256 {HEX} extra\n"));
    assert!(s.contains(":2: expected exactly two"), "{s}");
    assert!(s.contains("found 3"), "{s}");
    let s = err("count\n");
    assert!(
        s.contains(":1: expected exactly two") && s.contains("found 1"),
        "{s}"
    );
    // An inline comment is a third field, not a comment.
    let s = err(&format!("count 1 # n\nsha256 {HEX}\n"));
    assert!(s.contains(":1:"), "{s}");
}

#[test]
fn count_must_be_all_digits() {
    for bad in ["-1", "+1", "1.0", "0x10", "seventy", "7two", "١٢"] {
        let s = err(&format!("count {bad}\nsha256 {HEX}\n"));
        assert!(s.contains(":1: `count` must be all digits"), "{bad}: {s}");
    }
    let s = err(&format!("count 99999999999999999999999\nsha256 {HEX}\n"));
    assert!(s.contains("too large"), "{s}");
}

#[test]
fn sha256_must_be_a_digest() {
    let s = err("count 1\nsha256 abc\n");
    assert!(s.contains(":2: `sha256` must be 64 hex digits"), "{s}");
    let s = err(&format!("count 1\nsha256 {}g\n", &HEX[..63]));
    assert!(s.contains(":2:"), "{s}");
}

#[test]
fn duplicate_keys_are_errors() {
    let s = err(&format!("count 1\ncount 1\nsha256 {HEX}\n"));
    assert!(s.contains(":2: duplicate key `count`"), "{s}");
    let s = err(&format!("sha256 {HEX}\ncount 1\nsha256 {HEX}\n"));
    assert!(s.contains(":3: duplicate key `sha256`"), "{s}");
}

#[test]
fn writer_output_is_comment_header_then_keys() {
    let p = Pin {
        count: 72,
        sha256: HEX.into(),
    };
    let text = p.render();
    let lines: Vec<&str> = text.lines().collect();
    let (header, keys) = lines.split_at(lines.len() - 2);
    assert_eq!(keys, ["count 72".to_string(), format!("sha256 {HEX}")]);
    assert!(
        !header.is_empty() && header.iter().all(|l| l.starts_with("# ")),
        "{text}"
    );
    assert!(text.ends_with('\n'));
    assert_eq!(parse(&text).unwrap(), p);
}

fn pin_like_line() -> impl Strategy<Value = String> {
    prop_oneof![
        Just(String::new()),
        "#[ -~]{0,20}",
        "[ \t]{0,3}(count|sha256|COUNT|other)[ \t]{1,3}[0-9a-fA-Fx-]{0,70}[ \t]{0,3}",
        "(count|sha256) [0-9]{1,25}",
        Just(format!("sha256 {HEX}")),
        "[^\n]{0,40}",
    ]
}

proptest! {
    #[test]
    fn parser_never_panics_on_arbitrary_text(text in "\\PC*") {
        let _ = parse(&text);
    }

    #[test]
    fn parser_never_panics_on_pin_like_text(lines in prop::collection::vec(pin_like_line(), 0..8)) {
        let text = lines.join("\n");
        if let Err(e) = parse(&text) {
            prop_assert!(e.to_string().starts_with("exams/scenarios/corpus.pin"));
        }
    }

    #[test]
    fn writer_output_round_trips(count in any::<u64>(), digest in prop::array::uniform32(any::<u8>())) {
        let sha256: String = digest.iter().map(|b| format!("{b:02x}")).collect();
        let pin = Pin { count, sha256 };
        prop_assert_eq!(parse(&pin.render()).unwrap(), pin);
    }
}
