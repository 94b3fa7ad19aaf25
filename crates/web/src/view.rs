//! How numbers and identifiers read on every page: fixed precision (three decimals for
//! rates and scores, thousands separated for counts), intervals as `[lo, hi]`, long hashes
//! shortened with the full value kept for the `title` (hover), and the shading class of a
//! value. One place, so every table lines up the same way.

/// Decimals of a rate or score.
pub const DECIMALS: usize = 3;

/// A rate or score at fixed precision; counts and money by their size.
pub fn value(x: f64, metric_name: &str) -> String {
    match metric_name {
        "token_usage" => thousands(x.round() as u64),
        "cost" => money(x),
        _ => format!("{x:.DECIMALS$}"),
    }
}

/// `[lo, hi]` at the value's precision.
pub fn interval(ci: Option<(f64, f64)>) -> String {
    match ci {
        Some((a, b)) => format!("[{a:.DECIMALS$}, {b:.DECIMALS$}]"),
        None => String::new(),
    }
}

/// `12,345`.
pub fn thousands(n: u64) -> String {
    let s = n.to_string();
    let mut out = String::with_capacity(s.len() + s.len() / 3);
    for (i, c) in s.chars().enumerate() {
        if i > 0 && (s.len() - i).is_multiple_of(3) {
            out.push(',');
        }
        out.push(c);
    }
    out
}

/// Dollars with enough digits to tell small amounts apart (`$0.0005`, `$12.34`).
pub fn money(x: f64) -> String {
    if x == 0.0 {
        "$0".into()
    } else if x.abs() < 0.01 {
        format!("${x:.6}")
    } else {
        format!("${x:.2}")
    }
}

/// A long hash-like token shortened for a table cell: a run of 13 or more hex digits is
/// cut to its first 12 followed by `…`. The caller keeps the full value for `title`.
pub fn short(s: &str) -> String {
    let b = s.as_bytes();
    let mut out = String::with_capacity(s.len());
    let mut i = 0;
    while i < b.len() {
        let run = b[i..].iter().take_while(|c| c.is_ascii_hexdigit()).count();
        if run >= 13 {
            out.push_str(&s[i..i + 12]);
            out.push('…');
            i += run;
        } else if run > 0 {
            out.push_str(&s[i..i + run]);
            i += run;
        } else {
            let ch = s[i..].chars().next().expect("in bounds");
            out.push(ch);
            i += ch.len_utf8();
        }
    }
    out
}

/// The shading class (`h0` … `h9`) of a value in `[lo, hi]`.
pub fn shade(x: f64, lo: f64, hi: f64) -> String {
    let t = if hi > lo { (x - lo) / (hi - lo) } else { 0.0 };
    format!("h{}", ((t * 10.0).floor() as i64).clamp(0, 9))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn numbers_read_at_fixed_precision() {
        assert_eq!(value(0.2, "asr"), "0.200");
        assert_eq!(value(17636.0, "token_usage"), "17,636");
        assert_eq!(value(0.0005, "cost"), "$0.000500");
        assert_eq!(value(12.345, "cost"), "$12.35");
        assert_eq!(thousands(999), "999");
        assert_eq!(thousands(1000), "1,000");
        assert_eq!(thousands(1_234_567), "1,234,567");
        assert_eq!(interval(Some((0.0, 0.11351))), "[0.000, 0.114]");
    }

    #[test]
    fn long_hashes_are_shortened() {
        assert_eq!(short("demo@a11dfc14bf72"), "demo@a11dfc14bf72");
        assert_eq!(
            short("69d2b136a949ca12e5e502e8d1299cd2e9701f2b8b9e93a69628f0c00daa9086"),
            "69d2b136a949…"
        );
        assert_eq!(short("x@a11dfc14bf72aa+limit5"), "x@a11dfc14bf72…+limit5");
        assert_eq!(short("défi"), "défi");
    }

    #[test]
    fn shades_span_the_range() {
        assert_eq!(shade(0.0, 0.0, 1.0), "h0");
        assert_eq!(shade(1.0, 0.0, 1.0), "h9");
        assert_eq!(shade(0.55, 0.0, 1.0), "h5");
    }
}
