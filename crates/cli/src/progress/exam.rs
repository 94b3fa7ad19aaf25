//! The agent exam on the one progress display: a scenario run (one scenario in one
//! pass) is a unit. Calls come from the exam's call layer on a real backend (made,
//! journal hits, failed, transport retries: what the run shows) or, on the golden
//! backend, from the finished scenario runs' own counts. The exam reports each finished
//! scenario run; between them the call counts are refreshed once a second, so a slow
//! real exam still shows its calls going out.

use gauntlet_exam::calls::{ExamCalls, SessionStats};
use gauntlet_exam::cascade::TierModels;
use gauntlet_exam::exam::{Backend, ExamConfig, ProgressFn};
use gauntlet_job::progress::{CallStats, Progress};
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::Duration;

/// An exam's events, shown on a display from [`super::terminal::for_terminal`].
pub(crate) struct ExamProgress {
    display: Arc<dyn Progress>,
    /// A real backend's call layer and models.
    calls: Option<(Arc<ExamCalls>, TierModels)>,
    /// The golden backend: model calls of the scenario runs finished so far.
    golden_calls: AtomicU64,
}

impl ExamProgress {
    /// Starts `display` on the `units` scenario runs of the exam `cfg` describes.
    pub(crate) fn start(display: Arc<dyn Progress>, cfg: &ExamConfig, units: usize) -> Arc<Self> {
        let calls = match (&cfg.backend, &cfg.calls) {
            (Backend::Real { models, .. }, Some(c)) => Some((c.clone(), models.clone())),
            _ => None,
        };
        display.start(units as u64, 0);
        Arc::new(ExamProgress {
            display,
            calls,
            golden_calls: AtomicU64::new(0),
        })
    }

    fn stats(&self) -> CallStats {
        let Some((calls, models)) = &self.calls else {
            return CallStats {
                made: self.golden_calls.load(Ordering::Relaxed),
                ..CallStats::default()
            };
        };
        let s = SessionStats::collect(calls, models);
        let mut c = CallStats {
            made: s.model_calls,
            in_flight: calls.counters.in_flight.load(Ordering::Relaxed),
            cached: s.cache_hits,
            failed: s.failed_calls,
            ..CallStats::default()
        };
        for (_, t) in &s.transport {
            c.retries_429 += t.retries_429;
            c.retries_5xx += t.retries_5xx;
            c.retries_timeout += t.retries_timeout;
            c.retries_connect += t.retries_connect;
        }
        c
    }

    /// The exam's per-scenario callback: one unit more.
    pub(crate) fn on_scenario(self: &Arc<Self>) -> ProgressFn {
        let me = self.clone();
        Arc::new(move |p: &gauntlet_exam::exam::Progress<'_>| {
            me.golden_calls
                .fetch_add(p.model_calls as u64, Ordering::Relaxed);
            me.display.advance(1, 0, me.stats());
        })
    }

    /// Runs `work`, refreshing the call counts once a second until it ends.
    pub(crate) async fn ticking<F: Future>(&self, work: F) -> F::Output {
        let tick = async {
            let mut every = tokio::time::interval(Duration::from_secs(1));
            every.tick().await;
            loop {
                every.tick().await;
                self.display.advance(0, 0, self.stats());
            }
        };
        tokio::select! {
            out = work => out,
            _ = tick => unreachable!("the tick never ends"),
        }
    }

    pub(crate) fn finish(&self) {
        self.display.finish();
    }
}
