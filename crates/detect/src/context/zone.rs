//! Time zones and places named in context records.
//!
//! Why: a relocation or a trip explains an off-profile UTC hour only when that hour is a
//! working hour where the person now is, and stated working hours ("08:00-17:00
//! Europe/Berlin") are local. Deployments name zones every way people do: an IANA id,
//! an offset, an abbreviation, "Pacific time", or just a city. Cities come from the IANA
//! database itself (the last part of `Area/City`, via `chrono-tz`), so any place that
//! names a zone's city maps to it; a place that does not (a small town, a country)
//! has no zone, and rules fall back to what they can check without one.

use chrono::{NaiveDateTime, Offset, TimeZone};
use chrono_tz::Tz;
use gauntlet_corpus::projection::Timestamp;
use std::collections::BTreeMap;
use std::sync::LazyLock;

/// A time zone: an IANA zone (with its daylight-saving rules) or a fixed offset.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Zone {
    Iana(Tz),
    /// Seconds east of UTC.
    Fixed(i32),
}

pub const UTC: Zone = Zone::Fixed(0);

impl Zone {
    /// The wall-clock time at `t` in this zone.
    pub fn local(&self, t: Timestamp) -> NaiveDateTime {
        let utc = chrono::DateTime::from_timestamp(t.secs, 0)
            .unwrap_or_default()
            .naive_utc();
        match self {
            Zone::Iana(tz) => tz.from_utc_datetime(&utc).naive_local(),
            Zone::Fixed(off) => utc + chrono::Duration::seconds(i64::from(*off)),
        }
    }

    /// The instant (Unix seconds) of wall-clock `local` in this zone; the earlier one
    /// when a clock change makes it ambiguous, the later side of a gap.
    pub fn instant(&self, local: NaiveDateTime) -> i64 {
        match self {
            Zone::Iana(tz) => {
                let r = tz.from_local_datetime(&local);
                match r.earliest() {
                    Some(t) => t.timestamp(),
                    None => {
                        let off = tz.offset_from_utc_datetime(&local).fix().local_minus_utc();
                        local.and_utc().timestamp() - i64::from(off)
                    }
                }
            }
            Zone::Fixed(off) => local.and_utc().timestamp() - i64::from(*off),
        }
    }

    /// A readable name: the IANA id, or `UTC±HH:MM`.
    pub fn name(&self) -> String {
        match self {
            Zone::Iana(tz) => tz.name().to_string(),
            Zone::Fixed(0) => "UTC".into(),
            Zone::Fixed(s) => {
                let sign = if *s < 0 { '-' } else { '+' };
                let a = s.unsigned_abs();
                format!("UTC{sign}{:02}:{:02}", a / 3600, a % 3600 / 60)
            }
        }
    }
}

/// Lowercases, folds the common Latin accents, and turns everything that is not a
/// letter or digit into single spaces: `"São Paulo, BR"` → `"sao paulo br"`.
pub fn fold(s: &str) -> String {
    let mut out = String::with_capacity(s.len());
    let mut space = true;
    for c in s.chars().flat_map(char::to_lowercase) {
        let c = match c {
            'á' | 'à' | 'â' | 'ä' | 'ã' | 'å' => 'a',
            'é' | 'è' | 'ê' | 'ë' => 'e',
            'í' | 'ì' | 'î' | 'ï' => 'i',
            'ó' | 'ò' | 'ô' | 'ö' | 'õ' | 'ø' => 'o',
            'ú' | 'ù' | 'û' | 'ü' => 'u',
            'ç' => 'c',
            'ñ' => 'n',
            c => c,
        };
        if c.is_alphanumeric() {
            out.push(c);
            space = false;
        } else if !space {
            out.push(' ');
            space = true;
        }
    }
    out.trim_end().to_string()
}

/// IANA areas whose entries are not places people live and work (or are legacy
/// aliases named after regions: `US/Pacific`, `Australia/West`).
const SKIPPED_AREAS: [&str; 9] = [
    "Antarctica",
    "Arctic",
    "Etc",
    "SystemV",
    "US",
    "Canada",
    "Brazil",
    "Chile",
    "Mexico",
];

/// Zone city names that are also ordinary words or first names, or region words;
/// they would match text that does not mean the place.
const AMBIGUOUS_CITIES: [&str; 24] = [
    "act",
    "beulah",
    "center",
    "christmas",
    "creston",
    "easter",
    "knox in",
    "lhi",
    "marengo",
    "midway",
    "monticello",
    "new salem",
    "north",
    "nsw",
    "petersburg",
    "regina",
    "resolute",
    "south",
    "stanley",
    "tell city",
    "vevay",
    "victoria",
    "wake",
    "west",
];

/// Folded city name → zone, built once from the IANA database (first zone in the
/// database's order wins a duplicate name).
static CITIES: LazyLock<BTreeMap<String, Tz>> = LazyLock::new(|| {
    let mut m = BTreeMap::new();
    for tz in chrono_tz::TZ_VARIANTS {
        let name = tz.name();
        let Some((area, rest)) = name.split_once('/') else {
            continue;
        };
        if SKIPPED_AREAS.contains(&area) {
            continue;
        }
        let city = fold(rest.rsplit('/').next().unwrap_or(rest));
        if city.len() < 3 || AMBIGUOUS_CITIES.contains(&city.as_str()) {
            continue;
        }
        m.entry(city).or_insert(tz);
    }
    m
});

/// Abbreviations and region words for zones, matched as whole folded words.
const ALIASES: [(&str, &str); 57] = [
    ("utc", "UTC"),
    ("gmt", "UTC"),
    ("z", "UTC"),
    ("zulu", "UTC"),
    ("pst", "America/Los_Angeles"),
    ("pdt", "America/Los_Angeles"),
    ("pt", "America/Los_Angeles"),
    ("pacific", "America/Los_Angeles"),
    ("mst", "America/Denver"),
    ("mdt", "America/Denver"),
    ("mountain", "America/Denver"),
    ("cst", "America/Chicago"),
    ("cdt", "America/Chicago"),
    ("ct", "America/Chicago"),
    ("central", "America/Chicago"),
    ("est", "America/New_York"),
    ("edt", "America/New_York"),
    ("et", "America/New_York"),
    ("eastern", "America/New_York"),
    ("akst", "America/Anchorage"),
    ("akdt", "America/Anchorage"),
    ("hst", "Pacific/Honolulu"),
    ("hawaii", "Pacific/Honolulu"),
    ("bst", "Europe/London"),
    ("uk", "Europe/London"),
    ("british", "Europe/London"),
    ("wet", "Europe/Lisbon"),
    ("west", "Europe/Lisbon"),
    ("cet", "Europe/Berlin"),
    ("cest", "Europe/Berlin"),
    ("central european", "Europe/Berlin"),
    ("eet", "Europe/Athens"),
    ("eest", "Europe/Athens"),
    ("eastern european", "Europe/Athens"),
    ("msk", "Europe/Moscow"),
    ("ist", "Asia/Kolkata"),
    ("india", "Asia/Kolkata"),
    ("pkt", "Asia/Karachi"),
    ("ict", "Asia/Bangkok"),
    ("wib", "Asia/Jakarta"),
    ("pht", "Asia/Manila"),
    ("sgt", "Asia/Singapore"),
    ("hkt", "Asia/Hong_Kong"),
    ("china", "Asia/Shanghai"),
    ("jst", "Asia/Tokyo"),
    ("japan", "Asia/Tokyo"),
    ("kst", "Asia/Seoul"),
    ("korea", "Asia/Seoul"),
    ("awst", "Australia/Perth"),
    ("acst", "Australia/Adelaide"),
    ("aest", "Australia/Sydney"),
    ("aedt", "Australia/Sydney"),
    ("nzst", "Pacific/Auckland"),
    ("nzdt", "Pacific/Auckland"),
    ("brt", "America/Sao_Paulo"),
    ("sast", "Africa/Johannesburg"),
    ("eat", "Africa/Nairobi"),
];

fn alias(word: &str) -> Option<Zone> {
    let (_, id) = ALIASES.iter().find(|(a, _)| *a == word)?;
    if *id == "UTC" {
        return Some(UTC);
    }
    id.parse::<Tz>().ok().map(Zone::Iana)
}

/// `UTC+9`, `GMT-05:30`, `+09:00`, `-0500` (the sign is required).
fn offset(s: &str) -> Option<Zone> {
    let t = s.trim();
    let t = t
        .strip_prefix("UTC")
        .or_else(|| t.strip_prefix("utc"))
        .or_else(|| t.strip_prefix("GMT"))
        .or_else(|| t.strip_prefix("gmt"))
        .unwrap_or(t)
        .trim();
    let (sign, rest) = match t.chars().next()? {
        '+' => (1, &t[1..]),
        '-' | '−' => (-1, &t[t.char_indices().nth(1)?.0..]),
        _ => return None,
    };
    let digits: String = rest.chars().filter(|c| *c != ':').collect();
    if digits.is_empty() || digits.len() > 4 || !digits.bytes().all(|b| b.is_ascii_digit()) {
        return None;
    }
    let (h, m) = match digits.len() {
        1 | 2 => (digits.parse::<i32>().ok()?, 0),
        3 => (digits[..1].parse().ok()?, digits[1..].parse().ok()?),
        _ => (digits[..2].parse().ok()?, digits[2..].parse().ok()?),
    };
    (h <= 14 && m < 60).then_some(Zone::Fixed(sign * (h * 3600 + m * 60)))
}

/// The zone a value names on its own: an IANA id (`Asia/Tokyo`, any case), an offset,
/// an abbreviation or region word (`PST`, `Pacific time`), or a zone's city. `None`
/// when nothing in it names a zone.
pub fn parse(s: &str) -> Option<Zone> {
    let t = s.trim();
    if t.is_empty() {
        return None;
    }
    if matches!(
        fold(t).as_str(),
        "utc" | "gmt" | "z" | "zulu" | "etc utc" | "etc gmt"
    ) {
        return Some(UTC);
    }
    if let Ok(tz) = t.parse::<Tz>() {
        return Some(Zone::Iana(tz));
    }
    if t.contains('/')
        && let Some(tz) = chrono_tz::TZ_VARIANTS
            .iter()
            .find(|z| z.name().eq_ignore_ascii_case(t))
    {
        return Some(Zone::Iana(*tz));
    }
    if let Some(z) = offset(t) {
        return Some(z);
    }
    let f = fold(t);
    if let Some(z) = alias(&f) {
        return Some(z);
    }
    find(t).or_else(|| of_place(t))
}

/// Words after a region word or a city that make it a zone (`Pacific time`,
/// `Singapore hours`).
const TIME_WORDS: [&str; 7] = [
    "time", "hours", "standard", "daylight", "timezone", "zone", "tz",
];

/// The first zone named explicitly in free text: an IANA id, an offset after
/// `UTC`/`GMT`, `UTC`/`GMT` themselves, an abbreviation in capitals (`JST`), or a region
/// word or zone city followed by a time word (`Pacific time`, `Hong Kong time`,
/// `Singapore hours`). A city alone is a place, not a zone (see [`cities_in`]).
pub fn find(text: &str) -> Option<Zone> {
    for w in text.split_whitespace() {
        let w = w.trim_matches(|c: char| matches!(c, ',' | '.' | ';' | '(' | ')'));
        if w.len() > 3
            && (w.starts_with("UTC") || w.starts_with("GMT"))
            && let Some(z) = offset(w)
        {
            return Some(z);
        }
        if w.contains('/')
            && let Ok(tz) = w.parse::<Tz>()
        {
            return Some(Zone::Iana(tz));
        }
    }
    let words: Vec<&str> = text
        .split(|c: char| !c.is_alphanumeric())
        .filter(|w| !w.is_empty())
        .collect();
    let folded: Vec<String> = words.iter().map(|w| fold(w)).collect();
    for i in 0..folded.len() {
        let w = words[i];
        if matches!(folded[i].as_str(), "utc" | "gmt") {
            return Some(UTC);
        }
        if w.len() >= 2
            && w.len() <= 5
            && w.chars().all(|c| c.is_ascii_uppercase())
            && let Some(z) = alias(&folded[i])
        {
            return Some(z);
        }
        for n in (1..=3).rev() {
            let Some(next) = folded.get(i + n) else {
                continue;
            };
            if !TIME_WORDS.contains(&next.as_str()) {
                continue;
            }
            let phrase = folded[i..i + n].join(" ");
            if let Some(tz) = CITIES.get(&phrase) {
                return Some(Zone::Iana(*tz));
            }
            if let Some(z) = alias(&phrase) {
                return Some(z);
            }
        }
    }
    None
}

/// The zone of a place (`JP-Tokyo`, `Berlin, DE`, `Mexico City`): the first zone city
/// named in it. Countries and towns that are not zone cities have none.
pub fn of_place(place: &str) -> Option<Zone> {
    let words: Vec<String> = fold(place).split(' ').map(str::to_string).collect();
    for i in 0..words.len() {
        for n in (1..=3).rev() {
            if i + n <= words.len()
                && let Some(tz) = CITIES.get(&words[i..i + n].join(" "))
            {
                return Some(Zone::Iana(*tz));
            }
        }
    }
    None
}

/// The zone cities named in free text, in order of appearance, as (folded name, zone).
pub fn cities_in(text: &str) -> Vec<(String, Zone)> {
    let words: Vec<String> = fold(text).split(' ').map(str::to_string).collect();
    let mut out = Vec::new();
    let mut i = 0;
    while i < words.len() {
        let mut step = 1;
        for n in (1..=3).rev() {
            if i + n <= words.len() {
                let phrase = words[i..i + n].join(" ");
                if let Some(tz) = CITIES.get(&phrase) {
                    out.push((phrase, Zone::Iana(*tz)));
                    step = n;
                    break;
                }
            }
        }
        i += step;
    }
    out
}

/// True when two place names mean the same place: the longer words (≥ 3 letters, so
/// country codes like `DE` are ignored) of one are all among the other's.
/// `DE-Berlin` ~ `Berlin, DE`; `MX-Mexico-City` ~ `Mexico City`; `Berlin` ≁ `Bern`.
pub fn same_place(a: &str, b: &str) -> bool {
    let words = |s: &str| -> Vec<String> {
        fold(s)
            .split(' ')
            .filter(|w| w.len() >= 3)
            .map(str::to_string)
            .collect()
    };
    let (wa, wb) = (words(a), words(b));
    if wa.is_empty() || wb.is_empty() {
        return fold(a) == fold(b) && !fold(a).is_empty();
    }
    let (short, long) = if wa.len() <= wb.len() {
        (&wa, &wb)
    } else {
        (&wb, &wa)
    };
    short.iter().all(|w| long.contains(w))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn at(s: &str) -> Timestamp {
        Timestamp::parse_rfc3339(s).unwrap()
    }

    #[test]
    fn zones_by_every_name() {
        let tokyo = Some(Zone::Iana(chrono_tz::Asia::Tokyo));
        assert_eq!(parse("Asia/Tokyo"), tokyo);
        assert_eq!(parse("asia/tokyo"), tokyo);
        assert_eq!(parse("JP-Tokyo"), tokyo);
        assert_eq!(parse("JST"), tokyo);
        assert_eq!(parse("UTC+9"), Some(Zone::Fixed(9 * 3600)));
        assert_eq!(parse("+05:30"), Some(Zone::Fixed(5 * 3600 + 1800)));
        assert_eq!(parse("GMT-5"), Some(Zone::Fixed(-5 * 3600)));
        assert_eq!(parse("UTC"), Some(UTC));
        assert_eq!(
            find("keeps Pacific time now"),
            Some(Zone::Iana(chrono_tz::America::Los_Angeles))
        );
        assert_eq!(
            find("works 08:30-17:00 Hong Kong time"),
            Some(Zone::Iana(chrono_tz::Asia::Hong_Kong))
        );
        assert_eq!(
            parse("MX-Mexico-City"),
            Some(Zone::Iana(chrono_tz::America::Mexico_City))
        );
        assert_eq!(
            parse("São Paulo"),
            Some(Zone::Iana(chrono_tz::America::Sao_Paulo))
        );
        assert_eq!(find("the pt of it"), None, "abbreviations only in capitals");
        assert_eq!(
            find("the central platform team"),
            None,
            "region words need a time word"
        );
        assert_eq!(find("moved to Singapore"), None, "a city alone is a place");
        assert_eq!(
            find("keeps Singapore hours"),
            Some(Zone::Iana(chrono_tz::Asia::Singapore))
        );
        assert_eq!(parse("Casey"), None, "ambiguous names");
        assert_eq!(parse("Austin"), None, "not a zone city");
        assert_eq!(parse(""), None);
        assert_eq!(parse("+99"), None);
    }

    #[test]
    fn local_time_follows_daylight_saving() {
        let la = Zone::Iana(chrono_tz::America::Los_Angeles);
        assert_eq!(
            la.local(at("2026-06-08T19:30:00Z")).to_string(),
            "2026-06-08 12:30:00"
        );
        assert_eq!(
            la.local(at("2026-01-08T19:30:00Z")).to_string(),
            "2026-01-08 11:30:00"
        );
        let local = chrono::NaiveDate::from_ymd_opt(2026, 6, 8)
            .unwrap()
            .and_hms_opt(12, 30, 0)
            .unwrap();
        assert_eq!(la.instant(local), at("2026-06-08T19:30:00Z").secs);
        assert_eq!(Zone::Fixed(-5 * 3600 - 1800).name(), "UTC-05:30");
    }

    #[test]
    fn places_compare_by_their_longer_words() {
        assert!(same_place("DE-Berlin", "Berlin, DE"));
        assert!(same_place("MX-Mexico-City", "Mexico City"));
        assert!(same_place("SG-Singapore", "singapore"));
        assert!(!same_place("RO-Bucharest", "SG-Singapore"));
        assert!(!same_place("Bern", "Berlin"));
        assert!(same_place("PT", "pt"));
        assert!(!same_place("", ""));
        assert_eq!(
            cities_in("moved from the Dublin office to Singapore in June")
                .into_iter()
                .map(|(c, _)| c)
                .collect::<Vec<_>>(),
            ["dublin", "singapore"]
        );
    }
}
