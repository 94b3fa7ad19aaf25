//! Text normalisation shared by the leakage surface: `leak_detector` (crates/redteam)
//! and the `reference_memorizer` target (crates/models) must normalise identically, so
//! there is one definition, here.

/// Normalises text for leak matching: trim, Unicode lowercase, whitespace runs → one space.
pub fn normalize(s: &str) -> String {
    let mut out = String::with_capacity(s.len());
    normalize_into(s, &mut out);
    out
}

/// [`normalize`] into a reused buffer (cleared first).
pub fn normalize_into(s: &str, out: &mut String) {
    out.clear();
    let s = s.trim();
    if s.is_ascii() {
        // Fast path, byte-wise and branch-free: every byte is written (whitespace as a
        // space, letters lowercased, both from one table) and the write position
        // advances unless the byte is whitespace following whitespace. `s` is trimmed,
        // so no run is at an end.
        let mut buf = std::mem::take(out).into_bytes();
        buf.clear();
        buf.resize(s.len(), 0);
        let mut w = 0;
        let mut prev_space = false;
        for &b in s.as_bytes() {
            let m = ASCII_FOLD[usize::from(b)];
            let space = m == b' ';
            if let Some(slot) = buf.get_mut(w) {
                *slot = m;
            }
            w += usize::from(!(space && prev_space));
            prev_space = space;
        }
        buf.truncate(w);
        *out = String::from_utf8(buf).expect("ASCII in, ASCII out");
        return;
    }
    let mut in_space = false;
    for c in s.chars() {
        if c.is_whitespace() {
            in_space = true;
        } else {
            if in_space {
                out.push(' ');
                in_space = false;
            }
            out.extend(c.to_lowercase());
        }
    }
}

/// Each ASCII byte as the normalised text holds it: whitespace (`char::is_whitespace`:
/// tab, LF, VT, FF, CR, space) as a space, letters lowercased, the rest unchanged.
static ASCII_FOLD: [u8; 256] = {
    let mut t = [0u8; 256];
    let mut i = 0;
    while i < 256 {
        let b = i as u8;
        t[i] = if is_ascii_space(b) {
            b' '
        } else {
            b.to_ascii_lowercase()
        };
        i += 1;
    }
    t
};

/// ASCII whitespace as `char::is_whitespace` sees it (tab, LF, VT, FF, CR, space).
#[inline]
const fn is_ascii_space(b: u8) -> bool {
    matches!(b, b'\t' | b'\n' | 0x0b | 0x0c | b'\r' | b' ')
}

#[cfg(test)]
mod tests {
    use super::normalize;

    proptest::proptest! {
        /// The ASCII fast path of `normalize` is the character-wise definition.
        #[test]
        fn ascii_normalisation_matches_the_definition(a in "[ \t\n\r\x0b\x0ca-zA-Z0-9-]{0,40}") {
            let mut want = String::new();
            let mut in_space = false;
            for c in a.trim().chars() {
                if c.is_whitespace() {
                    in_space = true;
                } else {
                    if in_space {
                        want.push(' ');
                        in_space = false;
                    }
                    want.extend(c.to_lowercase());
                }
            }
            proptest::prop_assert_eq!(normalize(&a), want);
        }
    }
}
