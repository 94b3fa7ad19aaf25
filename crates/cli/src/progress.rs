//! Progress on stderr: a bar with rate and ETA on a terminal, plain periodic lines
//! otherwise (logs, CI), nothing with `--quiet`.

use gauntlet_engine::progress::{CallStats, Progress, Silent};
use indicatif::{ProgressBar, ProgressDrawTarget, ProgressStyle};
use std::io::IsTerminal;
use std::sync::Arc;
use std::sync::Mutex;
use std::time::{Duration, Instant};

pub fn for_terminal(quiet: bool) -> Arc<dyn Progress> {
    if quiet {
        Arc::new(Silent)
    } else if std::io::stderr().is_terminal() {
        Arc::new(Bar::new())
    } else {
        Arc::new(Lines::default())
    }
}

struct Bar {
    bar: ProgressBar,
}

impl Bar {
    fn new() -> Self {
        let bar = ProgressBar::with_draw_target(Some(0), ProgressDrawTarget::stderr_with_hz(8));
        bar.set_style(
            ProgressStyle::with_template("{bar:30} {pos}/{len} units  {rate}  eta {eta}  {msg}")
                .expect("static template")
                .with_key(
                    "rate",
                    |s: &indicatif::ProgressState, w: &mut dyn std::fmt::Write| {
                        let _ = write!(w, "{:.0} units/s", s.per_sec());
                    },
                ),
        );
        Bar { bar }
    }
}

fn calls(c: CallStats) -> String {
    let mut s = format!(
        "calls {} (journal {}, failed {})",
        c.made, c.cached, c.failed
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

impl Progress for Bar {
    fn start(&self, units: u64, _attempts: u64) {
        self.bar.set_length(units);
    }
    fn advance(&self, units: u64, _attempts: u64, c: CallStats) {
        self.bar.inc(units);
        if self.bar.position().is_multiple_of(64) {
            self.bar.set_message(calls(c));
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

#[derive(Default)]
struct Lines {
    state: Mutex<LineState>,
}

#[derive(Default)]
struct LineState {
    total: u64,
    done: u64,
    started: Option<Instant>,
    last: Option<Instant>,
    calls: CallStats,
}

impl Lines {
    fn print(s: &LineState) {
        let elapsed = s.started.map_or(0.0, |t| t.elapsed().as_secs_f64());
        let rate = if elapsed > 0.0 {
            s.done as f64 / elapsed
        } else {
            0.0
        };
        let eta = if rate > 0.0 {
            (s.total - s.done) as f64 / rate
        } else {
            0.0
        };
        eprintln!(
            "progress: {}/{} units ({:.0}%), {:.0} units/s, eta {:.0}s, {}",
            s.done,
            s.total,
            if s.total > 0 {
                100.0 * s.done as f64 / s.total as f64
            } else {
                100.0
            },
            rate,
            eta,
            calls(s.calls)
        );
    }
}

impl Progress for Lines {
    fn start(&self, units: u64, _attempts: u64) {
        let mut s = self.state.lock().expect("progress lock");
        s.total = units;
        s.started = Some(Instant::now());
        s.last = s.started;
    }
    fn advance(&self, units: u64, _attempts: u64, c: CallStats) {
        let mut s = self.state.lock().expect("progress lock");
        s.done += units;
        s.calls = c;
        if s.last
            .is_some_and(|l| l.elapsed() >= Duration::from_secs(5))
        {
            s.last = Some(Instant::now());
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
