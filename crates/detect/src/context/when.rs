//! Times in context records: instants and days, spans, times of day, weekdays, cron
//! schedules, and the phrases people write them in.
//!
//! Why: a record explains an hour only if its time fits — a change window that closed
//! at 04:00 does not cover 05:10, a trip that ended last week does not cover today, a
//! weekday job does not run on Saturday. Deployments write these times every way: RFC
//! 3339, `2026-07-11 23:00 UTC`, ISO intervals `A/B`, `Sundays 01:00-04:00`, cron
//! `30 2 * * *`, "every Thursday 23:00-01:00 UTC", "3–21 August", "through the end of
//! June". What does not parse is not guessed: a record whose time cannot be read says
//! nothing about the hour (each rule decides what an untimed record means).

use super::zone::{self, UTC, Zone};
use chrono::{Datelike, Days, NaiveDate, NaiveDateTime, NaiveTime, Timelike};
use gauntlet_corpus::projection::Timestamp;
use regex::Regex;
use std::sync::LazyLock;

/// Weekday bits, Monday = bit 0 … Sunday = bit 6.
pub const ALL_DAYS: u8 = 0x7f;
pub const WEEKDAYS: u8 = 0x1f;
pub const WEEKEND: u8 = 0x60;
/// Minutes in a day.
pub const DAY: u32 = 1440;
/// A single time of day (a job's start, "at 02:00") covers from a few minutes before to
/// an hour after it: a job runs for a while, a clock is a little off.
pub const BEFORE_MIN: u32 = 5;
pub const AFTER_MIN: u32 = 60;

/// A weekly window: on `days` (local), from minute `start` to minute `end` of the
/// local day; `end <= start` wraps past midnight into the next day.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Weekly {
    pub days: u8,
    pub start: u32,
    pub end: u32,
    pub zone: Zone,
}

impl Weekly {
    /// The whole of every day in `days`.
    pub fn all_day(days: u8) -> Weekly {
        Weekly {
            days,
            start: 0,
            end: DAY,
            zone: UTC,
        }
    }

    /// Around a single time of day `at` (minutes): [`BEFORE_MIN`] before to
    /// [`AFTER_MIN`] after.
    pub fn around(days: u8, at: u32, zone: Zone) -> Weekly {
        Weekly {
            days,
            start: (at + DAY - BEFORE_MIN) % DAY,
            end: (at + AFTER_MIN) % DAY,
            zone,
        }
    }

    pub fn covers(&self, t: Timestamp) -> bool {
        let local = self.zone.local(t);
        let day = local.weekday().num_days_from_monday() as u8;
        let minute = local.hour() * 60 + local.minute();
        let on = |d: u8| self.days & (1 << d) != 0;
        if self.start < self.end {
            on(day) && (self.start..self.end).contains(&minute)
        } else {
            (on(day) && minute >= self.start) || (on((day + 6) % 7) && minute < self.end)
        }
    }

    /// The UTC hours this window touches on the local date of `t` (for stated working
    /// hours, which are local and move with daylight saving).
    pub fn utc_hours_on(&self, t: Timestamp) -> Vec<u32> {
        let date = self.zone.local(t).date();
        let mut out = Vec::new();
        let len = if self.start < self.end {
            self.end - self.start
        } else {
            DAY - self.start + self.end
        };
        let start = date.and_hms_opt(0, 0, 0).unwrap_or_default()
            + chrono::Duration::minutes(i64::from(self.start));
        let mut m = 0;
        while m < len {
            let local = start + chrono::Duration::minutes(i64::from(m));
            let utc = self.zone.instant(local);
            let h = (utc.rem_euclid(86_400) / 3600) as u32;
            if !out.contains(&h) {
                out.push(h);
            }
            m += 60 - (local.minute() % 60);
        }
        out
    }
}

/// A point in time as written: an instant, or a whole day.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Point {
    At(i64),
    Day(NaiveDate, Zone),
}

impl Point {
    /// The first second the point covers.
    pub fn start(&self) -> i64 {
        match self {
            Point::At(s) => *s,
            Point::Day(d, z) => z.instant(d.and_hms_opt(0, 0, 0).unwrap_or_default()),
        }
    }

    /// The second after the last one it covers (a day runs to the next midnight).
    pub fn end(&self) -> i64 {
        match self {
            Point::At(s) => *s,
            Point::Day(d, z) => z.instant(
                d.checked_add_days(Days::new(1))
                    .unwrap_or(*d)
                    .and_hms_opt(0, 0, 0)
                    .unwrap_or_default(),
            ),
        }
    }
}

const MONTHS: [&str; 12] = [
    "jan", "feb", "mar", "apr", "may", "jun", "jul", "aug", "sep", "oct", "nov", "dec",
];

/// 1-based month of a month name or its abbreviation (`Sept` too).
pub fn month(word: &str) -> Option<u32> {
    let w = word.to_ascii_lowercase();
    if w.len() < 3 {
        return None;
    }
    let i = MONTHS.iter().position(|m| w.starts_with(m))?;
    let full = [
        "january",
        "february",
        "march",
        "april",
        "may",
        "june",
        "july",
        "august",
        "september",
        "october",
        "november",
        "december",
    ][i];
    (full.starts_with(&w) || w == "sept").then_some(i as u32 + 1)
}

const MONTH_RE: &str = r"(jan(?:uary)?|feb(?:ruary)?|mar(?:ch)?|apr(?:il)?|may|june?|july?|aug(?:ust)?|sept?(?:ember)?|oct(?:ober)?|nov(?:ember)?|dec(?:ember)?)";
const DASH: &str = r"\s*(?:-|–|—|to|through|thru|until|till)\s*";

static DATE_TIME: LazyLock<Regex> = LazyLock::new(|| {
    Regex::new(
        r"(?i)^(\d{4})[-/](\d{1,2})[-/](\d{1,2})(?:[t ](\d{1,2}):(\d{2})(?::(\d{2})(?:\.\d+)?)?)?\s*(z|utc|gmt|[+-]\d{2}:?\d{2}|[a-z_]+/[a-z_/]+)?$",
    )
    .expect("date-time pattern compiles")
});

static DAY_MONTH: LazyLock<Regex> = LazyLock::new(|| {
    Regex::new(&format!(
        r"(?i)^(?:\w+,?\s+)?(\d{{1,2}})(?:st|nd|rd|th)?(?:\s+of)?\s+{MONTH_RE}\.?,?(?:\s+(\d{{4}}))?$"
    ))
    .expect("day-month pattern compiles")
});

static MONTH_DAY: LazyLock<Regex> = LazyLock::new(|| {
    Regex::new(&format!(
        r"(?i)^(?:\w+,?\s+)?{MONTH_RE}\.?\s+(\d{{1,2}})(?:st|nd|rd|th)?,?(?:\s+(\d{{4}}))?$"
    ))
    .expect("month-day pattern compiles")
});

fn ymd(y: i32, m: u32, d: u32) -> Option<NaiveDate> {
    NaiveDate::from_ymd_opt(y, m, d)
}

/// An instant or a day, written alone: RFC 3339; `2026-07-11 23:00 UTC`;
/// `2026-08-09T02:00Z`; `2026-07-20`; `2026/07/20`; `3 August 2026`; `August 3`.
/// Times without a zone are in `zone`; days without a year in `year`.
pub fn point(s: &str, zone: Zone, year: i32) -> Option<Point> {
    let t = s.trim();
    if let Some(ts) = Timestamp::parse_rfc3339(t) {
        return Some(Point::At(ts.secs));
    }
    if let Some(c) = DATE_TIME.captures(t) {
        let n = |i: usize| c.get(i).and_then(|m| m.as_str().parse::<u32>().ok());
        let date = ymd(c[1].parse().ok()?, n(2)?, n(3)?)?;
        let z = match c.get(7) {
            Some(m) => zone::parse(m.as_str())?,
            None => zone,
        };
        return match n(4) {
            None => Some(Point::Day(date, z)),
            Some(h) => {
                let time = NaiveTime::from_hms_opt(h, n(5)?, n(6).unwrap_or(0))?;
                Some(Point::At(z.instant(NaiveDateTime::new(date, time))))
            }
        };
    }
    if let Some(c) = DAY_MONTH.captures(t) {
        let y = c
            .get(3)
            .and_then(|m| m.as_str().parse().ok())
            .unwrap_or(year);
        return Some(Point::Day(ymd(y, month(&c[2])?, c[1].parse().ok()?)?, zone));
    }
    if let Some(c) = MONTH_DAY.captures(t) {
        let y = c
            .get(3)
            .and_then(|m| m.as_str().parse().ok())
            .unwrap_or(year);
        return Some(Point::Day(ymd(y, month(&c[1])?, c[2].parse().ok()?)?, zone));
    }
    None
}

/// An interval written as one value: ISO 8601 `A/B`, or `A to B` / `A – B` where both
/// sides are [`point`]s.
pub fn interval(s: &str, zone: Zone, year: i32) -> Option<(i64, i64)> {
    let t = s.trim();
    for sep in ["/", " to ", " – ", " — ", " - ", " until ", " through "] {
        if let Some((a, b)) = t.split_once(sep) {
            let (a, b) = (point(a, zone, year)?, point(b, zone, year)?);
            let (s, e) = (a.start(), b.end());
            return (s < e).then_some((s, e));
        }
    }
    None
}

static CLOCK: LazyLock<Regex> = LazyLock::new(|| {
    Regex::new(r"(?i)^(\d{1,2})(?::(\d{2}))?(?::\d{2})?\s*(am|pm|a\.m\.|p\.m\.)?$")
        .expect("clock pattern compiles")
});

/// A time of day as minutes: `02:30`, `2:30pm`, `7am`, `noon`, `midnight`. A bare
/// number is an hour only when `bare` allows it.
fn clock(s: &str, bare: bool) -> Option<(u32, bool)> {
    let t = s.trim().to_ascii_lowercase();
    match t.as_str() {
        "noon" | "midday" => return Some((12 * 60, true)),
        "midnight" => return Some((0, true)),
        _ => {}
    }
    let c = CLOCK.captures(&t)?;
    let mut h: u32 = c[1].parse().ok()?;
    let m: u32 = c.get(2).map_or(Some(0), |m| m.as_str().parse().ok())?;
    let ampm = c.get(3).map(|m| m.as_str().starts_with('p'));
    if c.get(2).is_none() && ampm.is_none() && !bare {
        return None;
    }
    match ampm {
        Some(true) if h < 12 => h += 12,
        Some(false) if h == 12 => h = 0,
        _ => {}
    }
    if h == 24 && m == 0 {
        h = 0;
    }
    (h < 24 && m < 60).then_some((h * 60 + m, c.get(2).is_some() || ampm.is_some()))
}

/// A time of day written alone (`01:00`, `2pm`), as minutes after midnight.
pub fn time_of_day(s: &str) -> Option<u32> {
    clock(s, false).map(|(m, _)| m)
}

/// A daily range written alone: `01:00-04:00`, `21:00–23:30`, `9am-5pm`, `22-6`,
/// `20-23`. Bare hours include the last hour (`20-23` runs to midnight, as hour lists
/// do), except the office shorthand `9-5`, read as 09:00-17:00.
pub fn time_range(s: &str) -> Option<(u32, u32)> {
    static RANGE: LazyLock<Regex> = LazyLock::new(|| {
        Regex::new(&format!(r"(?i)^(.+?){DASH}(.+)$")).expect("range pattern compiles")
    });
    let c = RANGE.captures(s.trim())?;
    let (a, a_exact) = clock(&c[1], true)?;
    let (b, b_exact) = clock(&c[2], true)?;
    Some(finish_range(a, a_exact, b, b_exact))
}

fn finish_range(a: u32, a_exact: bool, mut b: u32, b_exact: bool) -> (u32, u32) {
    if !a_exact && !b_exact {
        if b < a && a < 12 * 60 && b <= 12 * 60 {
            b += 12 * 60;
        } else {
            b = (b + 60) % DAY;
        }
    }
    (a, b)
}

static DAY_NAME: LazyLock<Regex> = LazyLock::new(|| {
    Regex::new(r"(?i)\b(mon|tue|wed|thu|fri|sat|sun)(?:day|s|rs|sday|nesday|rsday|urday|days|sdays|nesdays|rsdays|urdays|\.)?\b")
        .expect("day-name pattern compiles")
});

fn day_bit(name: &str) -> Option<u8> {
    let i = ["mon", "tue", "wed", "thu", "fri", "sat", "sun"]
        .iter()
        .position(|d| name.to_ascii_lowercase().starts_with(d))?;
    Some(i as u8)
}

/// The weekdays a text names: names and abbreviations, ranges (`Mon-Fri`, `Sat–Sun`,
/// `Monday to Friday`), `weekdays`, `weekends`; `never weekends` / `weekdays only`
/// restrict to Monday-Friday. `None` when it names no day.
pub fn weekdays(text: &str) -> Option<u8> {
    let lower = text.to_ascii_lowercase();
    let mut mask = 0u8;
    let hits: Vec<(usize, usize, u8)> = DAY_NAME
        .captures_iter(text)
        .filter_map(|c| {
            let m = c.get(0)?;
            Some((m.start(), m.end(), day_bit(&c[1])?))
        })
        .collect();
    let mut i = 0;
    while i < hits.len() {
        let (_, end, d) = hits[i];
        if let Some(&(start2, _, d2)) = hits.get(i + 1) {
            let between = lower[end..start2].trim();
            if matches!(
                between,
                "-" | "–" | "—" | "to" | "through" | "thru" | "until"
            ) {
                let mut x = d;
                loop {
                    mask |= 1 << x;
                    if x == d2 {
                        break;
                    }
                    x = (x + 1) % 7;
                }
                i += 2;
                continue;
            }
        }
        mask |= 1 << d;
        i += 1;
    }
    let negated_weekend = [
        "never weekends",
        "never on weekends",
        "no weekends",
        "not on weekends",
        "weekdays only",
        "except weekends",
    ]
    .iter()
    .any(|p| lower.contains(p));
    if negated_weekend {
        return Some(if mask == 0 { WEEKDAYS } else { mask & WEEKDAYS });
    }
    if has_word(&lower, "weekday")
        || has_word(&lower, "weekdays")
        || lower.contains("business day")
        || lower.contains("working day")
    {
        mask |= WEEKDAYS;
    }
    if has_word(&lower, "weekend") || has_word(&lower, "weekends") {
        mask |= WEEKEND;
    }
    (mask != 0).then_some(mask)
}

/// True when `word` occurs in `text` between non-letters.
pub fn has_word(text: &str, word: &str) -> bool {
    text.match_indices(word).any(|(i, _)| {
        let before = text[..i].chars().next_back();
        let after = text[i + word.len()..].chars().next();
        !before.is_some_and(char::is_alphanumeric) && !after.is_some_and(char::is_alphanumeric)
    })
}

/// A cron expression (five fields, at least one `*`): the weekly windows it runs in.
/// Hours `*` (or a step over every hour) cover the whole day; otherwise each run
/// covers [`BEFORE_MIN`] before to [`AFTER_MIN`] after its first minute. Day-of-month
/// and month are not narrowed (a job that runs some days of the month may run on any).
pub fn cron(s: &str, zone: Zone) -> Option<Vec<Weekly>> {
    let f: Vec<&str> = s.split_whitespace().collect();
    if f.len() != 5 || !f.contains(&"*") && !f.iter().any(|x| x.starts_with("*/")) {
        return None;
    }
    let ok = |x: &str| {
        !x.is_empty()
            && x.chars()
                .all(|c| c.is_ascii_alphanumeric() || matches!(c, '*' | '/' | ',' | '-'))
    };
    if !f.iter().all(|x| ok(x)) {
        return None;
    }
    let minutes = field(f[0], 0, 59)?;
    let hours = field(f[1], 0, 23)?;
    let dows = field(
        &f[4]
            .to_ascii_lowercase()
            .replace("sun", "0")
            .replace("mon", "1")
            .replace("tue", "2")
            .replace("wed", "3")
            .replace("thu", "4")
            .replace("fri", "5")
            .replace("sat", "6"),
        0,
        7,
    )?;
    let mut days = 0u8;
    for d in dows {
        // cron: 0 and 7 are Sunday, 1 Monday.
        days |= 1 << ((d + 6) % 7);
    }
    let first = *minutes.first()?;
    if hours.len() == 24 {
        return Some(vec![Weekly {
            days,
            start: 0,
            end: DAY,
            zone,
        }]);
    }
    Some(
        hours
            .into_iter()
            .map(|h| Weekly::around(days, h * 60 + first, zone))
            .collect(),
    )
}

/// The values of one cron field within `lo..=hi`.
fn field(s: &str, lo: u32, hi: u32) -> Option<Vec<u32>> {
    let mut out = Vec::new();
    for part in s.split(',') {
        let (range, step) = match part.split_once('/') {
            Some((r, st)) => (r, st.parse::<u32>().ok().filter(|s| *s > 0)?),
            None => (part, 1),
        };
        let (a, b) = if range == "*" {
            (lo, hi)
        } else if let Some((a, b)) = range.split_once('-') {
            (a.parse().ok()?, b.parse().ok()?)
        } else {
            let v = range.parse().ok()?;
            (v, if step > 1 { hi } else { v })
        };
        if a < lo || b > hi || a > b {
            return None;
        }
        out.extend((a..=b).step_by(step as usize));
    }
    out.sort_unstable();
    out.dedup();
    Some(out)
}

/// What a free text says about time, read clause by clause.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct TextTimes {
    /// Absolute spans [start, end).
    pub spans: Vec<(i64, i64)>,
    /// Open-ended: from this instant on.
    pub since: Option<i64>,
    /// Open-ended: up to this instant.
    pub until: Option<i64>,
    /// Days named without a range (a lone date).
    pub days: Vec<Point>,
    pub weekly: Vec<Weekly>,
    /// Runs at every hour (`hourly`, `every 15 minutes`, `round the clock`).
    pub any_hour: bool,
    /// `nightly` / `every night` without a time: the night.
    pub nightly: bool,
    /// Weekdays named (for callers combining them with structured times).
    pub weekdays: Option<u8>,
}

static TEXT_RANGE: LazyLock<Regex> = LazyLock::new(|| {
    Regex::new(&format!(
        r"(?i)(?:^|[^\d:])(\d{{1,2}}(?::\d{{2}})?\s*(?:am|pm|a\.m\.|p\.m\.)?){DASH}(\d{{1,2}}(?::\d{{2}})?\s*(?:am|pm|a\.m\.|p\.m\.)?)(?:[^\d:]|$)"
    ))
    .expect("text range pattern compiles")
});

static TEXT_CLOCK: LazyLock<Regex> = LazyLock::new(|| {
    Regex::new(r"(?i)(?:^|[^\d:\-])(\d{1,2}:\d{2}|\d{1,2}\s*(?:am|pm|a\.m\.|p\.m\.))(?:[^\d:]|$)")
        .expect("text clock pattern compiles")
});

static DATE_RANGE_DM: LazyLock<Regex> = LazyLock::new(|| {
    Regex::new(&format!(
        r"(?i)\b(\d{{1,2}})(?:st|nd|rd|th)?{DASH}(\d{{1,2}})(?:st|nd|rd|th)?\s+{MONTH_RE}\b\.?(?:\s+(\d{{4}}))?"
    ))
    .expect("date range pattern compiles")
});

static DATE_RANGE_MD: LazyLock<Regex> = LazyLock::new(|| {
    Regex::new(&format!(
        r"(?i)\b{MONTH_RE}\.?\s+(\d{{1,2}})(?:st|nd|rd|th)?{DASH}(\d{{1,2}})(?:st|nd|rd|th)?\b(?:,?\s+(\d{{4}}))?"
    ))
    .expect("date range pattern compiles")
});

static ISO_DATE: LazyLock<Regex> = LazyLock::new(|| {
    Regex::new(r"\b(\d{4}-\d{2}-\d{2}(?:[T ]\d{1,2}:\d{2}(?::\d{2})?\s*(?:Z|UTC)?)?)")
        .expect("iso date pattern compiles")
});

static DAY_OF_MONTH: LazyLock<Regex> = LazyLock::new(|| {
    Regex::new(&format!(
        r"(?i)\b(?:(\d{{1,2}})(?:st|nd|rd|th)?(?:\s+of)?\s+{MONTH_RE}|{MONTH_RE}\.?\s+(\d{{1,2}})(?:st|nd|rd|th)?)\b(?:,?\s+(\d{{4}}))?"
    ))
    .expect("day of month pattern compiles")
});

static MONTH_ALONE: LazyLock<Regex> = LazyLock::new(|| {
    Regex::new(&format!(
        r"(?i)\b(in|since|from|through|thru|until|till|by|of|during)\s+(?:the\s+)?(?:(start|beginning|end|middle)\s+of\s+)?{MONTH_RE}\b(?:\s+(\d{{4}}))?"
    ))
    .expect("month pattern compiles")
});

/// The words just before byte `at` in `text` (lowercased), for the preposition that
/// governs a date.
fn before(text: &str, at: usize) -> String {
    let head = &text[..at];
    let words: Vec<&str> = head.split_whitespace().collect();
    words[words.len().saturating_sub(3)..]
        .join(" ")
        .to_ascii_lowercase()
}

/// How a date is governed: `since` (from, since, starting, as of, effective), `until`
/// (until, through, by, to), or neither.
fn governed(prefix: &str) -> Option<bool> {
    let last = prefix.split_whitespace().last().unwrap_or("");
    let last2 = prefix;
    if [
        "from",
        "since",
        "starting",
        "effective",
        "after",
        "beginning",
    ]
    .contains(&last)
        || last2.ends_with("as of")
        || last2.ends_with("start of")
    {
        return Some(true);
    }
    if [
        "until", "till", "through", "thru", "by", "to", "before", "ending",
    ]
    .contains(&last)
        || last2.ends_with("end of")
        || last2.ends_with("up to")
    {
        return Some(false);
    }
    None
}

fn last_day(y: i32, m: u32) -> Option<NaiveDate> {
    let next = if m == 12 {
        ymd(y + 1, 1, 1)
    } else {
        ymd(y, m + 1, 1)
    }?;
    next.pred_opt()
}

/// Reads the times in one clause of free text. `zone` is the clause's zone (UTC when
/// it names none), `year` the year of dates written without one.
pub fn in_text(text: &str, zone: Zone, year: i32) -> TextTimes {
    let mut out = TextTimes::default();
    let lower = text.to_ascii_lowercase();
    let mut used: Vec<(usize, usize)> = Vec::new();
    let free = |used: &Vec<(usize, usize)>, a: usize, b: usize| {
        used.iter().all(|(x, y)| b <= *x || a >= *y)
    };

    // Date ranges: "3–21 August", "August 3-21", "2026-06-01 to 2026-06-07".
    for c in DATE_RANGE_DM.captures_iter(text) {
        let m = c.get(0).expect("match");
        let y = c
            .get(4)
            .and_then(|x| x.as_str().parse().ok())
            .unwrap_or(year);
        if let (Some(mo), Ok(a), Ok(b)) = (month(&c[3]), c[1].parse(), c[2].parse())
            && let (Some(da), Some(db)) = (ymd(y, mo, a), ymd(y, mo, b))
        {
            out.spans
                .push((Point::Day(da, zone).start(), Point::Day(db, zone).end()));
            used.push((m.start(), m.end()));
        }
    }
    for c in DATE_RANGE_MD.captures_iter(text) {
        let m = c.get(0).expect("match");
        if !free(&used, m.start(), m.end()) {
            continue;
        }
        let y = c
            .get(4)
            .and_then(|x| x.as_str().parse().ok())
            .unwrap_or(year);
        if let (Some(mo), Ok(a), Ok(b)) = (month(&c[1]), c[2].parse(), c[3].parse())
            && let (Some(da), Some(db)) = (ymd(y, mo, a), ymd(y, mo, b))
        {
            out.spans
                .push((Point::Day(da, zone).start(), Point::Day(db, zone).end()));
            used.push((m.start(), m.end()));
        }
    }
    // Single dates, governed by the words before them.
    let mut singles: Vec<(usize, usize, Point)> = Vec::new();
    for m in ISO_DATE.find_iter(text) {
        if free(&used, m.start(), m.end())
            && let Some(p) = point(m.as_str(), zone, year)
        {
            singles.push((m.start(), m.end(), p));
        }
    }
    for c in DAY_OF_MONTH.captures_iter(text) {
        let m = c.get(0).expect("match");
        if !free(&used, m.start(), m.end())
            || singles
                .iter()
                .any(|(a, b, _)| m.start() < *b && m.end() > *a)
        {
            continue;
        }
        let y = c
            .get(5)
            .and_then(|x| x.as_str().parse().ok())
            .unwrap_or(year);
        let (d, mo) = match (c.get(1), c.get(2), c.get(3), c.get(4)) {
            (Some(d), Some(mo), _, _) => (d.as_str(), mo.as_str()),
            (_, _, Some(mo), Some(d)) => (d.as_str(), mo.as_str()),
            _ => continue,
        };
        if let (Some(mo), Ok(d)) = (month(mo), d.parse())
            && let Some(date) = ymd(y, mo, d)
        {
            // "the week of May 11": seven days from it.
            if before(text, m.start()).ends_with("week of") {
                let end = date.checked_add_days(Days::new(6)).unwrap_or(date);
                out.spans
                    .push((Point::Day(date, zone).start(), Point::Day(end, zone).end()));
                used.push((m.start(), m.end()));
                continue;
            }
            singles.push((m.start(), m.end(), Point::Day(date, zone)));
        }
    }
    let mut from: Option<Point> = None;
    for (a, b, p) in &singles {
        used.push((*a, *b));
        match governed(&before(text, *a)) {
            Some(true) => {
                out.since = Some(p.start());
                from = Some(*p);
            }
            Some(false) => match from.take() {
                Some(f) => {
                    out.since = None;
                    out.spans.push((f.start(), p.end()));
                }
                None => out.until = Some(p.end()),
            },
            None => out.days.push(*p),
        }
    }
    // Months alone: "in March", "through the end of June", "at the start of June".
    for c in MONTH_ALONE.captures_iter(text) {
        let m = c.get(0).expect("match");
        if !free(&used, m.start(), m.end()) {
            continue;
        }
        let y = c
            .get(4)
            .and_then(|x| x.as_str().parse().ok())
            .unwrap_or(year);
        let Some(mo) = month(&c[3]) else { continue };
        let (Some(first), Some(last)) = (ymd(y, mo, 1), last_day(y, mo)) else {
            continue;
        };
        let prep = c[1].to_ascii_lowercase();
        // "at the end of June": the part of the month comes before the preposition.
        let part = c
            .get(2)
            .map(|x| x.as_str().to_ascii_lowercase())
            .or_else(|| {
                let b = before(text, m.start());
                ["start", "beginning", "end", "middle"]
                    .into_iter()
                    .find(|w| prep == "of" && b.ends_with(w))
                    .map(str::to_string)
            });
        match (prep.as_str(), part.as_deref()) {
            (_, Some("end"))
                if matches!(
                    prep.as_str(),
                    "through" | "thru" | "until" | "till" | "by" | "of"
                ) =>
            {
                out.until = Some(Point::Day(last, zone).end());
            }
            ("through" | "thru" | "until" | "till" | "by", _) => {
                out.until = Some(Point::Day(last, zone).end());
            }
            ("in" | "since" | "from" | "of", Some("start" | "beginning") | None) => {
                out.since = Some(Point::Day(first, zone).start());
            }
            ("during", _) => out.spans.push((
                Point::Day(first, zone).start(),
                Point::Day(last, zone).end(),
            )),
            _ => {}
        }
        used.push((m.start(), m.end()));
    }

    // Times of day: ranges first, then single clock times.
    let days = weekdays(text);
    out.weekdays = days;
    let mut ranges = Vec::new();
    for c in TEXT_RANGE.captures_iter(text) {
        let (Some(a), Some(b)) = (c.get(1), c.get(2)) else {
            continue;
        };
        if !free(&used, a.start(), b.end()) {
            continue;
        }
        // "9-13 June" is a date range, handled above; a number range followed by a
        // month is never a time.
        let rest = &lower[b.end()..];
        if rest.split_whitespace().next().and_then(month).is_some() {
            continue;
        }
        if let (Some((x, xe)), Some((y, ye))) = (clock(a.as_str(), true), clock(b.as_str(), true)) {
            // Bare number ranges need a time context (`UTC`, `hours`, `:`) to be times.
            let time_words = ["utc", "hour", "shift", "time"];
            if !xe && !ye && !time_words.iter().any(|w| lower.contains(w)) {
                continue;
            }
            let (x, y) = finish_range(x, xe, y, ye);
            ranges.push((x, y));
            used.push((a.start(), b.end()));
        }
    }
    let mut singles_t = Vec::new();
    for c in TEXT_CLOCK.captures_iter(text) {
        let Some(m) = c.get(1) else { continue };
        if !free(&used, m.start(), m.end()) {
            continue;
        }
        if let Some((t, _)) = clock(m.as_str(), false) {
            singles_t.push(t);
        }
    }
    let d = days.unwrap_or(ALL_DAYS);
    for (a, b) in ranges {
        out.weekly.push(Weekly {
            days: d,
            start: a,
            end: if b == a { (a + DAY - 1) % DAY } else { b },
            zone,
        });
    }
    for t in singles_t {
        out.weekly.push(Weekly::around(d, t, zone));
    }
    if [
        "hourly",
        "every hour",
        "every few minutes",
        "round the clock",
        "around the clock",
        "24/7",
        "continuously",
        "every minute",
    ]
    .iter()
    .any(|p| lower.contains(p))
        || EVERY_MINUTES.is_match(&lower)
    {
        out.any_hour = true;
    }
    if out.weekly.is_empty()
        && [
            "nightly",
            "every night",
            "overnight",
            "at night",
            "each night",
        ]
        .iter()
        .any(|p| lower.contains(p))
    {
        out.nightly = true;
        out.weekly.push(Weekly {
            days: d,
            start: 0,
            end: 6 * 60,
            zone,
        });
    }
    if out.weekly.is_empty()
        && !out.any_hour
        && days.is_some()
        && out.spans.is_empty()
        && out.days.is_empty()
    {
        // Days named without a time ("net.bo holds the pager Sat–Sun"): whole days.
        out.weekly.push(Weekly {
            days: d,
            start: 0,
            end: DAY,
            zone,
        });
    }
    out
}

static EVERY_MINUTES: LazyLock<Regex> = LazyLock::new(|| {
    Regex::new(r"every\s+\d{1,2}\s*(?:min|minutes|mins)\b").expect("every-minutes pattern compiles")
});

/// The weekday (Monday = 0) and minute of day of `t` in `zone`.
pub fn local_day_minute(t: Timestamp, zone: Zone) -> (u8, u32) {
    let l = zone.local(t);
    (
        l.weekday().num_days_from_monday() as u8,
        l.hour() * 60 + l.minute(),
    )
}

/// The year of `t` (UTC).
pub fn year_of(t: Timestamp) -> i32 {
    UTC.local(t).year()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn ts(s: &str) -> Timestamp {
        Timestamp::parse_rfc3339(s).unwrap()
    }

    fn secs(s: &str) -> i64 {
        ts(s).secs
    }

    #[test]
    fn points_in_every_written_form() {
        assert_eq!(
            point("2026-06-13T22:00:00Z", UTC, 2026),
            Some(Point::At(secs("2026-06-13T22:00:00Z")))
        );
        assert_eq!(
            point("2026-07-11 23:00 UTC", UTC, 2026),
            Some(Point::At(secs("2026-07-11T23:00:00Z")))
        );
        assert_eq!(
            point("2026-08-09T02:00Z", UTC, 2026),
            Some(Point::At(secs("2026-08-09T02:00:00Z")))
        );
        assert_eq!(
            point("2026-09-07 08:00", UTC, 2026),
            Some(Point::At(secs("2026-09-07T08:00:00Z")))
        );
        let d = point("2026-07-20", UTC, 2026).unwrap();
        assert_eq!(
            (d.start(), d.end()),
            (secs("2026-07-20T00:00:00Z"), secs("2026-07-21T00:00:00Z"))
        );
        assert_eq!(
            point("3 August", UTC, 2026).unwrap().start(),
            secs("2026-08-03T00:00:00Z")
        );
        assert_eq!(
            point("Aug 3, 2025", UTC, 2026).unwrap().start(),
            secs("2025-08-03T00:00:00Z")
        );
        let tokyo = Zone::Iana(chrono_tz::Asia::Tokyo);
        assert_eq!(
            point("2026-07-20 09:00 Asia/Tokyo", UTC, 2026),
            Some(Point::At(secs("2026-07-20T00:00:00Z")))
        );
        assert_eq!(
            point("2026-07-20", tokyo, 2026).unwrap().start(),
            secs("2026-07-19T15:00:00Z")
        );
        assert_eq!(
            interval("2026-08-09T02:00Z/2026-08-09T05:00Z", UTC, 2026),
            Some((secs("2026-08-09T02:00:00Z"), secs("2026-08-09T05:00:00Z")))
        );
        for bad in ["", "soon", "2026-13-01", "TRV-2026-0412", "PT-Lisbon", "12"] {
            assert_eq!(point(bad, UTC, 2026), None, "{bad}");
        }
    }

    #[test]
    fn times_of_day_and_ranges() {
        assert_eq!(time_of_day("01:00"), Some(60));
        assert_eq!(time_of_day("2pm"), Some(14 * 60));
        assert_eq!(time_of_day("3"), None, "a bare number is not a time");
        assert_eq!(time_range("01:00-04:00"), Some((60, 240)));
        assert_eq!(time_range("21:00–23:30"), Some((21 * 60, 23 * 60 + 30)));
        assert_eq!(
            time_range("20-23"),
            Some((20 * 60, 0)),
            "bare hours include the last"
        );
        assert_eq!(time_range("9-5"), Some((9 * 60, 17 * 60)));
        assert_eq!(time_range("22-6"), Some((22 * 60, 7 * 60)));
        assert_eq!(time_range("9am to 5pm"), Some((9 * 60, 17 * 60)));
        assert_eq!(time_range("TRV-2026"), None);
    }

    #[test]
    fn weekly_windows_wrap_midnight_and_respect_days() {
        // Thursday 23:00 to 01:00 covers Friday 00:30, not Friday 23:30.
        let w = Weekly {
            days: 1 << 3,
            start: 23 * 60,
            end: 60,
            zone: UTC,
        };
        assert!(w.covers(ts("2026-06-11T23:40:00Z")));
        assert!(w.covers(ts("2026-06-12T00:30:00Z")));
        assert!(!w.covers(ts("2026-06-12T23:30:00Z")));
        assert!(!w.covers(ts("2026-06-12T01:00:00Z")));
        let la = Zone::Iana(chrono_tz::America::Los_Angeles);
        let nine_to_five = Weekly {
            days: ALL_DAYS,
            start: 9 * 60,
            end: 17 * 60,
            zone: la,
        };
        assert_eq!(
            nine_to_five.utc_hours_on(ts("2026-06-09T20:10:00Z")),
            (16..=23).collect::<Vec<u32>>()
        );
    }

    #[test]
    fn weekdays_in_words() {
        assert_eq!(weekdays("Sundays"), Some(1 << 6));
        assert_eq!(weekdays("Mon-Fri"), Some(WEEKDAYS));
        assert_eq!(weekdays("Sat–Sun"), Some(WEEKEND));
        assert_eq!(weekdays("Tue, Thu"), Some(0b1010));
        assert_eq!(weekdays("every weekday"), Some(WEEKDAYS));
        assert_eq!(weekdays("works 9-5, never weekends"), Some(WEEKDAYS));
        assert_eq!(weekdays("no day named here, monitor"), None);
    }

    #[test]
    fn cron_schedules() {
        let w = cron("30 2 * * *", UTC).unwrap();
        assert!(w[0].covers(ts("2026-06-16T02:31:00Z")));
        assert!(!w[0].covers(ts("2026-06-16T21:40:00Z")));
        let wk = cron("0 4 * * 1-5", UTC).unwrap();
        assert!(wk[0].covers(ts("2026-06-15T04:00:02Z")), "Monday");
        assert!(!wk[0].covers(ts("2026-06-14T04:00:02Z")), "Sunday");
        let every = cron("*/15 * * * *", UTC).unwrap();
        assert!(every[0].covers(ts("2026-06-24T03:45:00Z")));
        assert_eq!(cron("0 4 1 1 1", UTC), None, "needs a wildcard");
        assert_eq!(cron("a b c d e", UTC), None);
        assert_eq!(cron("0 25 * * *", UTC), None);
    }

    #[test]
    fn times_in_free_text() {
        let t = in_text(
            "standing change window every Thursday 23:00-01:00 UTC",
            UTC,
            2026,
        );
        assert_eq!(
            t.weekly,
            vec![Weekly {
                days: 1 << 3,
                start: 23 * 60,
                end: 60,
                zone: UTC
            }]
        );
        let t = in_text(
            "kicks off the warehouse load at 04:15 UTC every weekday",
            UTC,
            2026,
        );
        assert_eq!(t.weekly, vec![Weekly::around(WEEKDAYS, 4 * 60 + 15, UTC)]);
        let t = in_text("is at the Sydney offsite 9-13 June", UTC, 2026);
        assert_eq!(
            t.spans,
            vec![(secs("2026-06-09T00:00:00Z"), secs("2026-06-14T00:00:00Z"))]
        );
        assert!(t.weekly.is_empty(), "9-13 June is not a time");
        let t = in_text("secondary on-call through the end of June", UTC, 2026);
        assert_eq!(t.until, Some(secs("2026-07-01T00:00:00Z")));
        let t = in_text("transferred to Singapore at the start of June", UTC, 2026);
        assert_eq!(t.since, Some(secs("2026-06-01T00:00:00Z")));
        let t = in_text("relocated there in March", UTC, 2026);
        assert_eq!(t.since, Some(secs("2026-03-01T00:00:00Z")));
        let t = in_text("presenting in Berlin the week of May 11", UTC, 2026);
        assert_eq!(
            t.spans,
            vec![(secs("2026-05-11T00:00:00Z"), secs("2026-05-18T00:00:00Z"))]
        );
        let t = in_text("holds the pager Sat–Sun", UTC, 2026);
        assert_eq!(t.weekly, vec![Weekly::all_day(WEEKEND)]);
        let t = in_text("from 2026-06-01 until 2026-06-07", UTC, 2026);
        assert_eq!(
            t.spans,
            vec![(secs("2026-06-01T00:00:00Z"), secs("2026-06-08T00:00:00Z"))]
        );
        assert!(in_text("the sync runs hourly", UTC, 2026).any_hour);
        assert!(in_text("every 15 minutes", UTC, 2026).any_hour);
        let t = in_text("the nightly backup", UTC, 2026);
        assert!(t.nightly && t.weekly[0].covers(ts("2026-06-16T02:31:00Z")));
        assert_eq!(
            in_text("ticket TRV-2026-0412 for room 12", UTC, 2026),
            TextTimes::default()
        );
    }
}
