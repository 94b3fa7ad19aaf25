//! The terminal display: [`for_terminal`] picks a bar on a terminal, periodic lines
//! otherwise, or nothing; both show the same state (units, calls, rates, ETA).

use gauntlet_job::meter::Meter;
use gauntlet_job::progress::{CallStats, Progress, Silent};
use indicatif::{ProgressBar, ProgressDrawTarget, ProgressStyle};
use std::io::IsTerminal;
use std::sync::Arc;
use std::sync::Mutex;
use std::time::{Duration, Instant};

/// The display for stderr; `what` names a unit, plural (`units` for a run's behavior ×
/// attack × target, `scenarios` for an exam's scenario runs).
pub(crate) fn for_terminal(quiet: bool, what: &'static str) -> Arc<dyn Progress> {
    if quiet {
        Arc::new(Silent)
    } else if std::io::stderr().is_terminal() {
        Arc::new(Bar::new(what))
    } else {
        Arc::new(Lines {
            state: Mutex::new(State::new(what)),
        })
    }
}

fn calls(c: CallStats) -> String {
    let mut s = format!(
        "calls {} done, {} in flight (journal {}, failed {})",
        c.done(),
        c.in_flight,
        c.cached,
        c.failed
    );
    if c.retries() > 0 {
        s.push_str(&format!(
            ", retries {} (429 {}, 5xx {}, timeout {}, connect {})",
            c.retries(),
            c.retries_429,
            c.retries_5xx,
            c.retries_timeout,
            c.retries_connect
        ));
    }
    s
}

/// What both displays track.
struct State {
    meter: Meter,
    what: &'static str,
    done: u64,
    started: Option<Instant>,
    last_shown: Option<Instant>,
    calls: CallStats,
    planned_calls: u64,
}

impl State {
    fn new(what: &'static str) -> Self {
        State {
            meter: Meter::new(0, what),
            what,
            done: 0,
            started: None,
            last_shown: None,
            calls: CallStats::default(),
            planned_calls: 0,
        }
    }

    fn start(&mut self, units: u64) {
        self.meter = Meter::new(units, self.what);
        self.meter.plan_calls(self.planned_calls);
        self.started = Some(Instant::now());
        self.last_shown = self.started;
    }

    fn advance(&mut self, units: u64, c: CallStats) {
        self.done += units;
        self.calls = c;
        let t = self.started.map_or(0.0, |s| s.elapsed().as_secs_f64());
        self.meter.journal_hits(c.cached);
        self.meter.record(t, self.done, c.done());
    }

    /// True at most once per `every` (and resets the clock when it is).
    fn due(&mut self, every: Duration) -> bool {
        if self.last_shown.is_some_and(|l| l.elapsed() >= every) {
            self.last_shown = Some(Instant::now());
            true
        } else {
            false
        }
    }
}

struct Bar {
    bar: ProgressBar,
    state: Mutex<State>,
}

impl Bar {
    fn new(what: &'static str) -> Self {
        let bar = ProgressBar::with_draw_target(Some(0), ProgressDrawTarget::stderr_with_hz(8));
        bar.set_style(ProgressStyle::with_template("{bar:30} {msg}").expect("static template"));
        Bar {
            bar,
            state: Mutex::new(State::new(what)),
        }
    }
}

impl Progress for Bar {
    fn planned_calls(&self, calls: u64) {
        self.state.lock().expect("progress lock").planned_calls = calls;
    }
    fn start(&self, units: u64, _attempts: u64) {
        self.bar.set_length(units);
        self.state.lock().expect("progress lock").start(units);
    }
    fn advance(&self, units: u64, _attempts: u64, c: CallStats) {
        self.bar.inc(units);
        let mut s = self.state.lock().expect("progress lock");
        s.advance(units, c);
        if s.due(Duration::from_millis(250)) {
            self.bar
                .set_message(format!("{}  {}", s.meter.line(), calls(s.calls)));
        }
    }
    fn note(&self, message: &str) {
        self.bar
            .println(gauntlet_core::terminal::safe_text(message));
    }
    fn finish(&self) {
        self.bar.finish_and_clear();
    }
}

struct Lines {
    state: Mutex<State>,
}

impl Lines {
    fn print(s: &State) {
        eprintln!("progress: {}, {}", s.meter.line(), calls(s.calls));
    }
}

impl Progress for Lines {
    fn planned_calls(&self, calls: u64) {
        self.state.lock().expect("progress lock").planned_calls = calls;
    }
    fn start(&self, units: u64, _attempts: u64) {
        self.state.lock().expect("progress lock").start(units);
    }
    fn advance(&self, units: u64, _attempts: u64, c: CallStats) {
        let mut s = self.state.lock().expect("progress lock");
        s.advance(units, c);
        if s.due(Duration::from_secs(5)) {
            Self::print(&s);
        }
    }
    fn note(&self, message: &str) {
        eprintln!("{}", gauntlet_core::terminal::safe_text(message));
    }
    fn finish(&self) {
        let s = self.state.lock().expect("progress lock");
        Self::print(&s);
    }
}
