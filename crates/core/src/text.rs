//! Text normalisation shared by the leakage surface: `leak_detector` (crates/redteam)
//! and the `reference_memorizer` target (crates/models) must normalise identically, so
//! there is one definition, here; and the one `*` pattern match ([`glob`]) of tool
//! names, hosts and gate-rule selectors.

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
        let mut buf = std::mem::take(out).into_bytes();
        normalize_ascii(s.as_bytes(), &mut buf);
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

/// The ASCII case of [`normalize_into`]: `s` is trimmed ASCII; `buf` is overwritten.
///
/// Eight bytes at a time (SWAR on a `u64`): a word with no byte below 0x0E (so no tab,
/// LF, VT, FF or CR) and no space next to another space (in the word, or a leading space
/// after the previous word's trailing one) normalises to itself with its capital letters
/// lowercased, which the word-wide masks below compute exactly. Any other word (and the
/// tail) goes byte by byte through [`ASCII_FOLD`], collapsing whitespace runs. Prose has a
/// space every few bytes but rarely two in a row, so nearly every word takes the fast
/// path.
fn normalize_ascii(s: &[u8], buf: &mut Vec<u8>) {
    const ONES: u64 = 0x0101_0101_0101_0101;
    const HIGH: u64 = 0x8080_8080_8080_8080;
    const LOW7: u64 = 0x7f7f_7f7f_7f7f_7f7f;
    // The output is never longer than the input: write into a zeroed buffer of that
    // length by index (no per-byte length bookkeeping), then cut it to what was written.
    buf.clear();
    buf.resize(s.len(), 0);
    let out = buf.as_mut_slice();
    let mut w = 0;
    let mut prev_space = false;
    let fold = |out: &mut [u8], w: &mut usize, bytes: &[u8], prev_space: &mut bool| {
        for &b in bytes {
            let m = ASCII_FOLD[usize::from(b)];
            let space = m == b' ';
            out[*w] = m;
            *w += usize::from(!(space && *prev_space));
            *prev_space = space;
        }
    };
    let mut words = s.chunks_exact(8);
    for chunk in &mut words {
        let word = u64::from_le_bytes(chunk.try_into().expect("8 bytes"));
        // Any byte < 0x0E (every byte is < 0x80, so the classic test is exact for "any").
        let has_low = word.wrapping_sub(0x0E * ONES) & !word & HIGH;
        // Exact per-byte high bit of the bytes equal to a space.
        let y = word ^ (0x20 * ONES);
        let spaces = !(((y & LOW7) + LOW7) | y) & HIGH;
        let adjacent = spaces & (spaces << 8) != 0 || (prev_space && spaces & 0x80 != 0);
        if has_low != 0 || adjacent {
            fold(out, &mut w, chunk, &mut prev_space);
            continue;
        }
        // Capital letters: bytes >= b'A' and not >= b'Z' + 1 (no carries: bytes < 0x80).
        let ge_a = word + (0x80 - u64::from(b'A')) * ONES;
        let gt_z = word + (0x80 - u64::from(b'Z') - 1) * ONES;
        let upper = ge_a & !gt_z & HIGH;
        out[w..w + 8].copy_from_slice(&(word | (upper >> 2)).to_le_bytes());
        w += 8;
        prev_space = spaces >> 63 != 0;
    }
    fold(out, &mut w, words.remainder(), &mut prev_space);
    buf.truncate(w);
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

/// `*` matches any run of characters (none included); everything else literally.
pub fn glob(pattern: &str, s: &str) -> bool {
    let parts: Vec<&str> = pattern.split('*').collect();
    if parts.len() == 1 {
        return pattern == s;
    }
    let (first, last) = (parts[0], parts[parts.len() - 1]);
    if !s.starts_with(first) || s.len() < first.len() + last.len() || !s.ends_with(last) {
        return false;
    }
    let mut rest = &s[first.len()..s.len() - last.len()];
    for p in &parts[1..parts.len() - 1] {
        match rest.find(p) {
            Some(i) => rest = &rest[i + p.len()..],
            None => return false,
        }
    }
    true
}

#[cfg(test)]
mod tests {
    use super::{glob, normalize};

    #[test]
    fn globs() {
        assert!(glob("send_*", "send_email"));
        assert!(glob("*", ""));
        assert!(glob("*.example.invalid", "a.b.example.invalid"));
        assert!(!glob("*.example.invalid", "example.invalid"));
        assert!(!glob("send", "send_email"));
        assert!(glob("prod-*", "prod-bot"));
        assert!(glob("*bot", "prod-bot"));
        assert!(glob("p*d*t", "prod-bot"));
        assert!(!glob("p*x*t", "prod-bot"));
        assert!(glob("exact", "exact") && !glob("exact", "exactly"));
        assert!(!glob("ab*ab", "ab"));
    }

    proptest::proptest! {
        /// The ASCII fast path of `normalize` is the character-wise definition.
        #[test]
        fn ascii_normalisation_matches_the_definition(a in "[ \t\n\r\x0b\x0ca-zA-Z0-9-]{0,40}|[ -~]{0,90}|([ \t\x00-\x1f@-`{-\x7f]{0,3}[a-zA-Z]{0,9}){0,20}") {
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
