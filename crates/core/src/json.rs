//! Hand-written JSON output for the hot artefact paths.
//!
//! [`write_str`] appends a JSON string literal with a SIMD escaping kernel
//! (`json-escape-simd`, sonic-rs's kernel). Its output is byte for byte what
//! `serde_json::to_writer` writes for the same string: `"` and `\` escaped with a
//! backslash, `\b \t \n \f \r` by their short forms, every other control character
//! below U+0020 as `\u00xx` (lowercase hex), and everything else (DEL, non-ASCII,
//! U+2028/U+2029) verbatim. The property test below holds it to that.

/// Appends `s` as a JSON string literal (quotes included) to `buf`: exactly the bytes
/// `serde_json::to_writer(buf, s)` appends.
#[inline]
pub fn write_str(buf: &mut Vec<u8>, s: &str) {
    json_escape_simd::escape_into(s, buf);
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    fn serde(s: &str) -> Vec<u8> {
        serde_json::to_vec(s).unwrap()
    }

    fn ours(prefix: &[u8], s: &str) -> Vec<u8> {
        let mut buf = prefix.to_vec();
        write_str(&mut buf, s);
        buf
    }

    /// Characters weighted towards the ones escaping treats specially.
    fn special_char() -> impl Strategy<Value = char> {
        prop_oneof![
            3 => (0u8..0x20).prop_map(char::from),
            2 => Just('"'),
            2 => Just('\\'),
            1 => Just('\u{7f}'),
            1 => Just('\u{2028}'),
            1 => Just('\u{2029}'),
            1 => Just('/'),
            4 => (0x20u8..0x7f).prop_map(char::from),
            2 => (0x80u32..0x800).prop_filter_map("char", char::from_u32),
            2 => any::<char>(),
        ]
    }

    /// Strings made of runs of one character (long runs cross the SIMD block
    /// boundaries at every offset) and of short random stretches.
    fn text() -> impl Strategy<Value = String> {
        prop::collection::vec(
            prop_oneof![
                (special_char(), 1usize..80).prop_map(|(c, n)| c.to_string().repeat(n)),
                prop::collection::vec(special_char(), 0..40).prop_map(String::from_iter),
                ".{0,64}",
            ],
            0..12,
        )
        .prop_map(|parts| parts.concat())
    }

    #[test]
    fn every_byte_value_alone_and_in_context() {
        for c in (0u32..0x100).filter_map(char::from_u32) {
            for s in [
                c.to_string(),
                format!("ab{c}cd"),
                c.to_string().repeat(70),
                format!("{}{c}", "x".repeat(31)),
                format!("{}{c}{}", "y".repeat(63), "z".repeat(5)),
            ] {
                assert_eq!(ours(b"", &s), serde(&s), "{s:?}");
            }
        }
        for s in [
            "",
            "\u{2028}\u{2029}",
            "é\"\\\u{0}\u{1f}\u{7f}😀",
            "\u{10ffff}",
        ] {
            assert_eq!(ours(b"", s), serde(s), "{s:?}");
        }
    }

    #[test]
    fn appends_after_existing_bytes() {
        let mut buf = Vec::with_capacity(3);
        buf.extend_from_slice(b"[1,");
        write_str(&mut buf, "a\nb");
        buf.push(b']');
        assert_eq!(buf, b"[1,\"a\\nb\"]");
    }

    proptest! {
        #![proptest_config(ProptestConfig::with_cases(2000))]

        #[test]
        fn write_str_is_serde_json(s in text(), prefix in prop::collection::vec(any::<u8>(), 0..40)) {
            let mut want = prefix.clone();
            want.extend_from_slice(&serde(&s));
            prop_assert_eq!(ours(&prefix, &s), want);
        }

        #[test]
        fn write_str_is_serde_json_any_string(s in any::<String>()) {
            prop_assert_eq!(ours(b"", &s), serde(&s));
        }
    }
}
