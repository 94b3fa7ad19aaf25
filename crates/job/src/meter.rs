//! Units done, model calls made, and their moving-average rates and ETA: what the
//! progress displays show (the CLI's bar and lines, the progress file a run publishes
//! for the dashboard), over a clock the caller supplies so tests control time.

use std::collections::VecDeque;

/// Rates look back this far…
const WINDOW_S: f64 = 60.0;
/// …or further, until they span this many finished units (slow runs).
const MIN_UNITS: u64 = 5;
/// Samples closer together than this are merged (a fast offline run reports thousands of
/// times a second).
const MIN_SPACING_S: f64 = 0.1;
/// History kept at most (with the spacing above, over ten minutes).
const MAX_SAMPLES: usize = 8192;

#[derive(Debug, Clone, Copy, PartialEq)]
struct Sample {
    /// Seconds since the run started.
    t: f64,
    units: u64,
    calls: u64,
    /// When `units` was first reached: unit rates are measured from unit completions,
    /// not from whenever a report happened to come.
    since: f64,
}

/// Units done, model calls made, and moving-average rates over a clock the caller
/// supplies (seconds since the start), so tests control time.
#[derive(Debug)]
pub struct Meter {
    total: u64,
    /// Model calls the plan makes at most (journal hits included), when known.
    planned_calls: Option<u64>,
    /// Calls served from the journal so far (they count against `planned_calls`).
    journal_hits: u64,
    /// What a unit is, plural (`units`, `scenarios`).
    what: &'static str,
    samples: VecDeque<Sample>,
}

impl Meter {
    pub fn new(total: u64, what: &'static str) -> Self {
        Meter {
            total,
            planned_calls: None,
            journal_hits: 0,
            what,
            samples: VecDeque::from([Sample {
                t: 0.0,
                units: 0,
                calls: 0,
                since: 0.0,
            }]),
        }
    }

    /// The ETA reads calls left of `n` planned (journal hits included) at the call
    /// rate instead of units left at the unit rate (units differ in size: an episode
    /// of many calls, a unit of none).
    pub fn plan_calls(&mut self, n: u64) {
        self.planned_calls = (n > 0).then_some(n);
    }

    /// The calls served from the journal so far.
    pub fn journal_hits(&mut self, n: u64) {
        self.journal_hits = n;
    }

    /// Planned calls not yet done (`None` without a plan of calls, or when the run has
    /// outrun the plan: then units say more).
    fn calls_left(&self) -> Option<u64> {
        let done = self.samples.back().map_or(0, |s| s.calls) + self.journal_hits;
        self.planned_calls
            .map(|p| p.saturating_sub(done))
            .filter(|&l| l > 0)
    }

    /// Records the totals at time `t` (seconds since the start, non-decreasing): `calls`
    /// are the model calls done (returned), not those in flight.
    pub fn record(&mut self, t: f64, units: u64, calls: u64) {
        let since = match self.samples.back() {
            Some(last) if last.units == units => last.since,
            _ => t,
        };
        let s = Sample {
            t,
            units,
            calls,
            since,
        };
        let n = self.samples.len();
        match self.samples.back_mut() {
            // The first sample (the start) is never overwritten.
            Some(last) if n > 1 && t - last.t < MIN_SPACING_S => *last = s,
            _ => self.samples.push_back(s),
        }
        // Keep one sample at or before the window's start, or enough to span MIN_UNITS.
        while self.samples.len() > 2 {
            let next = self.samples[1];
            if next.t <= t - WINDOW_S && units - next.units >= MIN_UNITS {
                self.samples.pop_front();
            } else {
                break;
            }
        }
        if self.samples.len() > MAX_SAMPLES {
            self.samples.pop_front();
        }
    }

    fn span(&self) -> Option<(Sample, Sample)> {
        let (first, last) = (*self.samples.front()?, *self.samples.back()?);
        (last.t > first.t).then_some((first, last))
    }

    fn done(&self) -> u64 {
        self.samples.back().map_or(0, |s| s.units)
    }

    /// Units per second over the window; `None` before any unit finished in it.
    pub fn unit_rate(&self) -> Option<f64> {
        let (a, b) = self.span()?;
        (b.units > a.units).then(|| (b.units - a.units) as f64 / (b.t - a.since))
    }

    /// Model calls per second over the window; `None` before any time has passed.
    pub fn call_rate(&self) -> Option<f64> {
        let (a, b) = self.span()?;
        Some((b.calls - a.calls) as f64 / (b.t - a.t))
    }

    /// Seconds left: planned calls left at the current call rate when the plan knows
    /// its calls, else units left at the unit rate; `None` while it is unknown.
    pub fn eta(&self) -> Option<f64> {
        let left = self.total.saturating_sub(self.done());
        if left == 0 {
            return Some(0.0);
        }
        if let Some(calls) = self.calls_left() {
            return self
                .call_rate()
                .filter(|&r| r > 0.0)
                .map(|r| calls as f64 / r);
        }
        self.unit_rate().map(|r| left as f64 / r)
    }

    /// `3/40 units (7%), 1.2 units/min, 0.8 calls/s, eta 30m50s` (with this meter's
    /// name for a unit).
    pub fn line(&self) -> String {
        let done = self.done();
        let pct = if self.total > 0 {
            100.0 * done as f64 / self.total as f64
        } else {
            100.0
        };
        let what = self.what;
        // Planned calls are an upper bound (`--estimate`), and so is an ETA read from them.
        let (bound, from) = match self.calls_left() {
            Some(n) if done < self.total => ("≤ ", format!(" (at most {n} planned calls left)")),
            _ => ("", String::new()),
        };
        format!(
            "{done}/{} {what} ({pct:.0}%), {}, {}, eta {bound}{}{from}",
            self.total,
            self.unit_rate().map_or_else(
                || format!("no {} finished yet", singular(what)),
                |r| per_time(r, what)
            ),
            self.call_rate()
                .map_or_else(|| "- calls/s".to_string(), |r| per_time(r, "calls")),
            self.eta().map_or_else(|| "unknown".to_string(), duration)
        )
    }
}

/// `units` → `unit`.
fn singular(what: &str) -> &str {
    what.strip_suffix('s').unwrap_or(what)
}

/// A rate in the unit that keeps it readable: per second, minute or hour.
fn per_time(per_s: f64, what: &str) -> String {
    if per_s >= 10.0 || per_s == 0.0 {
        format!("{per_s:.0} {what}/s")
    } else if per_s >= 1.0 {
        format!("{per_s:.1} {what}/s")
    } else if per_s * 60.0 >= 1.0 {
        format!("{:.1} {what}/min", per_s * 60.0)
    } else {
        format!("{:.1} {what}/h", per_s * 3600.0)
    }
}

/// `45s`, `3m05s`, `2h07m`.
pub fn duration(secs: f64) -> String {
    let s = secs.max(0.0).round() as u64;
    if s < 60 {
        format!("{s}s")
    } else if s < 3600 {
        format!("{}m{:02}s", s / 60, s % 60)
    } else {
        format!("{}h{:02}m", s / 3600, (s % 3600) / 60)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A run of 40 units, one finishing every 25 s, one call every 5 s.
    fn slow() -> Meter {
        let mut m = Meter::new(40, "units");
        for t in 1..=300u64 {
            m.record(t as f64, t / 25, t / 5);
        }
        m
    }

    #[test]
    fn a_slow_run_shows_its_rates_and_a_real_eta() {
        let m = slow();
        // The window reaches back to span 5 units: units 8..=12 since unit 7 at 175 s
        // (5 in 125 s), calls since the sample before (21 in 101 s); 28 units left.
        assert!((m.unit_rate().unwrap() - 0.04).abs() < 1e-9);
        assert!((m.call_rate().unwrap() - 21.0 / 101.0).abs() < 1e-9);
        assert!((m.eta().unwrap() - 700.0).abs() < 1e-6);
        assert_eq!(
            m.line(),
            "12/40 units (30%), 2.4 units/min, 12.5 calls/min, eta 11m40s"
        );
    }

    #[test]
    fn the_window_follows_the_recent_rate() {
        let mut m = Meter::new(1000, "units");
        // Fast for a minute (10 units/s), then one unit every 10 s for five minutes.
        let mut units = 0;
        for t in 1..=60u64 {
            units += 10;
            m.record(t as f64, units, units);
        }
        for t in 61..=360u64 {
            if t % 10 == 0 {
                units += 1;
            }
            m.record(t as f64, units, units);
        }
        let r = m.unit_rate().unwrap();
        assert!(
            (r - 0.1).abs() < 0.02,
            "moving average, not the run's mean: {r}"
        );
        let eta = m.eta().unwrap();
        let left = (1000 - units) as f64;
        assert!((eta - left / 0.1).abs() < left, "{eta}");
    }

    #[test]
    fn slow_units_widen_the_window_to_span_a_few() {
        let mut m = Meter::new(10, "units");
        // One unit every 100 s: a 60 s window would often hold none.
        for t in 1..=1000u64 {
            m.record(t as f64, t / 100, 0);
        }
        let r = m.unit_rate().unwrap();
        assert!((r - 0.01).abs() < 1e-9, "{r}");
        assert_eq!(m.line().split(", ").nth(1).unwrap(), "36.0 units/h");
    }

    #[test]
    fn before_the_first_unit_the_eta_is_unknown_not_zero() {
        let mut m = Meter::new(5, "units");
        m.record(30.0, 0, 12);
        assert_eq!(m.unit_rate(), None);
        assert_eq!(m.eta(), None);
        assert_eq!(
            m.line(),
            "0/5 units (0%), no unit finished yet, 24.0 calls/min, eta unknown"
        );
        let fresh = Meter::new(5, "units");
        assert_eq!(
            fresh.line(),
            "0/5 units (0%), no unit finished yet, - calls/s, eta unknown"
        );
        let exam = Meter::new(96, "scenarios");
        assert_eq!(
            exam.line(),
            "0/96 scenarios (0%), no scenario finished yet, - calls/s, eta unknown"
        );
    }

    #[test]
    fn finished_runs_and_stalls() {
        let mut m = Meter::new(3, "units");
        m.record(1.0, 3, 3);
        assert_eq!(m.eta(), Some(0.0));
        assert!(m.line().ends_with("eta 0s"), "{}", m.line());
        // A stall lowers the rate as time passes without units.
        let mut m = Meter::new(100, "units");
        m.record(10.0, 10, 10);
        let before = m.unit_rate().unwrap();
        m.record(100.0, 10, 10);
        assert!(m.unit_rate().unwrap() < before / 5.0);
    }

    #[test]
    fn memory_stays_bounded_under_frequent_reports() {
        let mut m = Meter::new(u64::MAX, "units");
        for i in 0..1_000_000u64 {
            m.record(i as f64 * 0.001, i, i);
        }
        assert!(m.samples.len() <= 700, "{}", m.samples.len());
        let r = m.unit_rate().unwrap();
        assert!((r - 1000.0).abs() < 10.0, "{r}");
    }

    #[test]
    fn the_eta_follows_planned_calls_not_units() {
        // 10 units, 100 planned calls; the first unit is empty (done at once), the
        // next ones take many calls: one call a second for 20 s, 2 units done.
        let mut m = Meter::new(10, "units");
        m.plan_calls(100);
        m.record(0.5, 1, 0);
        for t in 1..=20u64 {
            m.record(t as f64, 1 + t / 20, t);
        }
        // Units say 8 left at 2 per 20 s: 80 s; calls say 80 left at 1/s: 80 s. With
        // 10 journal hits only 70 calls are left.
        m.journal_hits(10);
        let eta = m.eta().unwrap();
        assert!((eta - 70.0).abs() < 1e-6, "{eta}");
        assert!(
            m.line()
                .ends_with("eta ≤ 1m10s (at most 70 planned calls left)"),
            "{}",
            m.line()
        );
        // Calls beyond the plan (it was an upper bound… or wrong): units again.
        m.record(21.0, 2, 200);
        assert!(m.calls_left().is_none());
        assert!(!m.line().contains("planned"), "{}", m.line());
        // No calls yet: unknown, never 0.
        let mut m = Meter::new(10, "units");
        m.plan_calls(100);
        m.record(1.0, 1, 0);
        assert_eq!(m.eta(), None);
    }

    #[test]
    fn formats() {
        assert_eq!(per_time(250.0, "units"), "250 units/s");
        assert_eq!(per_time(2.46, "units"), "2.5 units/s");
        assert_eq!(per_time(0.5, "calls"), "30.0 calls/min");
        assert_eq!(per_time(0.0, "calls"), "0 calls/s");
        assert_eq!(per_time(0.001, "units"), "3.6 units/h");
        assert_eq!(duration(0.4), "0s");
        assert_eq!(duration(59.6), "1m00s");
        assert_eq!(duration(185.0), "3m05s");
        assert_eq!(duration(7620.0), "2h07m");
    }
}
