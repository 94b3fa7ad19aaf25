//! The one in-order driver under every harness: a [`Job`]'s units, in canonical order,
//! run as tasks at most a window ahead of the oldest unfinished one, are joined in
//! order and handed to its [`Fold`] in order — so every artefact folded from them is
//! byte-identical whatever the concurrency or the order tasks finish in.
//!
//! A job says what its units are (how many this session runs, how many go in one task,
//! how many tasks may be in flight) and runs a range of them; its fold takes their
//! outputs in canonical order and writes what it writes as they come. The driver owns
//! the scheduling every harness needs alike: no new task once a stop is asked for or
//! the job says its budget is spent, a unit's halt ends the job after the outputs before
//! it, the fold ticked about once a second while a slow task runs (so progress stays
//! current), a stop that ends the schedule within a tick without folding anything more,
//! and [`Schedule::settle`] for what is in flight when the job ends. The
//! red-team run (`gauntlet-engine`), the agent exam (`gauntlet-exam`) and the detect
//! exam (`gauntlet-detect`) are its three jobs.

use std::collections::VecDeque;
use std::future::Future;
use std::pin::Pin;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Duration;
use tokio::task::JoinHandle;

/// How often the fold is ticked while a task is in flight.
pub const TICK: Duration = Duration::from_secs(1);

/// A task: a range of units run, their outputs in canonical order, and why the job
/// must stop after them, if it must.
pub type Task<O, H> = Pin<Box<dyn Future<Output = Ran<O, H>> + Send>>;

/// What a task hands back.
pub struct Ran<O, H> {
    /// The outputs of the range's units in canonical order, up to the first that halted.
    pub outputs: Vec<O>,
    /// Why the job stops after these outputs (a fatal error, a spent budget).
    pub halt: Option<H>,
}

impl<O, H> Ran<O, H> {
    /// Outputs with no halt.
    pub fn all(outputs: Vec<O>) -> Ran<O, H> {
        Ran {
            outputs,
            halt: None,
        }
    }
}

/// How a job's units are scheduled.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Window {
    /// Units handed to one task (offline work answers in microseconds: scheduling each
    /// unit alone would dominate).
    pub chunk: u64,
    /// Tasks that may be in flight beyond the oldest unfinished one.
    pub tasks: usize,
    /// A stop asked for while a task is in flight aborts it at the next tick instead of
    /// waiting for it (a unit that waits on a provider batch may wait for hours).
    pub abort_on_stop: bool,
}

impl Window {
    /// One unit per task, `in_flight` at a time, a window of twice that (at least 4).
    pub fn units(in_flight: usize) -> Window {
        Window {
            chunk: 1,
            tasks: (in_flight * 2).max(4),
            abort_on_stop: false,
        }
    }
}

/// A job: units in canonical order (this session's positions `0..units()`), run a
/// range at a time.
pub trait Job: Send + Sync + 'static {
    /// What one unit hands the fold.
    type Output: Send + 'static;
    /// Why the job stops early (a unit's fatal error).
    type Halt: Send + 'static;
    /// The units this session runs.
    fn units(&self) -> u64;
    /// How they are scheduled.
    fn window(&self) -> Window;
    /// Runs the units at positions `start..end`.
    fn run(self: &Arc<Self>, start: u64, end: u64) -> Task<Self::Output, Self::Halt>;
    /// True once no new unit should start (a spent budget: every call it made would be
    /// refused).
    fn exhausted(&self) -> bool {
        false
    }
}

/// The in-order consumer of a job's outputs.
pub trait Fold<O> {
    type Error;
    /// Takes a task's outputs, in canonical order, after every earlier task's.
    fn add(&mut self, outputs: Vec<O>) -> Result<(), Self::Error>;
    /// About once a second while a task is in flight (progress).
    fn tick(&mut self) {}
}

/// How a job's schedule ended.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Ending<H> {
    /// Every unit was folded.
    Complete,
    /// The job said its budget was spent, and every unit started was folded.
    Exhausted,
    /// A stop was asked for before every unit was folded.
    Interrupted,
    /// A unit halted the job (the outputs before the halt were folded).
    Halted(H),
    /// A task panicked or was cancelled (why, as the runtime says it).
    Panicked(String),
}

/// The scheduling window over one job.
pub struct Schedule<J: Job> {
    queue: VecDeque<JoinHandle<Ran<J::Output, J::Halt>>>,
    window: Window,
    next: u64,
    units: u64,
    folded: u64,
    tick: tokio::time::Interval,
}

impl<J: Job> Schedule<J> {
    /// A schedule over `job`'s units. Call from inside a tokio runtime.
    pub fn new(job: &J) -> Schedule<J> {
        let window = job.window();
        let mut tick = tokio::time::interval(TICK);
        tick.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
        Schedule {
            queue: VecDeque::with_capacity(window.tasks),
            window,
            next: 0,
            units: job.units(),
            folded: 0,
            tick,
        }
    }

    /// Units folded so far.
    pub fn folded(&self) -> u64 {
        self.folded
    }

    /// Runs units until every one is folded, the job's budget is spent, a unit halts
    /// the job, or `stop` is set; says how it ended. A stop ends it within a tick
    /// ([`TICK`]) and nothing joined after it is folded (a task it found in flight is
    /// aborted where the window says so, else left to [`Schedule::settle`]). A fold error
    /// ends it at once (what is in flight is left to [`Schedule::settle`]).
    pub async fn run<F: Fold<J::Output>>(
        &mut self,
        job: &Arc<J>,
        fold: &mut F,
        stop: &AtomicBool,
    ) -> Result<Ending<J::Halt>, F::Error> {
        loop {
            while self.next < self.units
                && self.queue.len() < self.window.tasks
                && !stop.load(Ordering::Relaxed)
                && !job.exhausted()
            {
                let end = (self.next + self.window.chunk.max(1)).min(self.units);
                self.queue.push_back(tokio::spawn(job.run(self.next, end)));
                self.next = end;
            }
            let Some(mut handle) = self.queue.pop_front() else {
                return Ok(if self.folded == self.units {
                    Ending::Complete
                } else if stop.load(Ordering::Relaxed) {
                    Ending::Interrupted
                } else {
                    Ending::Exhausted
                });
            };
            let joined = loop {
                tokio::select! {
                    r = &mut handle => break r,
                    _ = self.tick.tick() => {
                        if stop.load(Ordering::Relaxed) {
                            // The task is not waited for: it is aborted where the window
                            // says so, else left to `settle`.
                            if self.window.abort_on_stop {
                                handle.abort();
                            } else {
                                self.queue.push_front(handle);
                            }
                            return Ok(Ending::Interrupted);
                        }
                        fold.tick();
                    }
                }
            };
            // A stop asked for while the task ran may have cut its calls short (a wait
            // ended, a request given up): nothing joined after a stop is folded. Its
            // finished calls are journaled; the rerun folds them.
            if stop.load(Ordering::Relaxed) {
                return Ok(Ending::Interrupted);
            }
            let Ran { outputs, halt } = match joined {
                Ok(r) => r,
                Err(join) => return Ok(Ending::Panicked(join.to_string())),
            };
            self.folded += outputs.len() as u64;
            fold.add(outputs)?;
            if let Some(h) = halt {
                return Ok(Ending::Halted(h));
            }
        }
    }

    /// What is still in flight when the job ends. `drain`: the tasks finish (units in
    /// hand may hold calls already paid for, which then reach the journal) and their
    /// outputs are dropped, so what was folded stays a prefix of the canonical order;
    /// otherwise they are aborted. A stop aborts a drain where the window says so.
    pub async fn settle(&mut self, drain: bool, stop: &AtomicBool) {
        let abort_on_stop = self.window.abort_on_stop;
        self.settle_until(drain, || abort_on_stop && stop.load(Ordering::Relaxed))
            .await;
    }

    /// [`Schedule::settle`], with the drain given up — every task still in flight
    /// aborted — once `give_up` says so (checked about once a second).
    pub async fn settle_until(&mut self, drain: bool, give_up: impl Fn() -> bool) {
        if !drain {
            for h in self.queue.drain(..) {
                h.abort();
            }
            return;
        }
        let mut queue = std::mem::take(&mut self.queue);
        while let Some(mut h) = queue.pop_front() {
            loop {
                tokio::select! {
                    _ = &mut h => break,
                    _ = self.tick.tick() => {
                        if give_up() {
                            h.abort();
                            for h in queue.drain(..) {
                                h.abort();
                            }
                            break;
                        }
                    }
                }
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::atomic::AtomicU64;

    /// Units that finish in reverse order of their index (later ones sooner), halting
    /// at `halt_at`, and counting how many started.
    struct Reversed {
        n: u64,
        halt_at: Option<u64>,
        started: AtomicU64,
        chunk: u64,
    }

    impl Job for Reversed {
        type Output = u64;
        type Halt = &'static str;
        fn units(&self) -> u64 {
            self.n
        }
        fn window(&self) -> Window {
            Window {
                chunk: self.chunk,
                ..Window::units(3)
            }
        }
        fn run(self: &Arc<Self>, start: u64, end: u64) -> Task<u64, &'static str> {
            let me = self.clone();
            Box::pin(async move {
                me.started.fetch_add(end - start, Ordering::Relaxed);
                tokio::time::sleep(Duration::from_millis(2 * (me.n - start))).await;
                let mut outputs = Vec::new();
                for i in start..end {
                    if me.halt_at == Some(i) {
                        return Ran {
                            outputs,
                            halt: Some("halted"),
                        };
                    }
                    outputs.push(i);
                }
                Ran::all(outputs)
            })
        }
    }

    struct Collect(Vec<u64>);

    impl Fold<u64> for Collect {
        type Error = std::convert::Infallible;
        fn add(&mut self, outputs: Vec<u64>) -> Result<(), Self::Error> {
            self.0.extend(outputs);
            Ok(())
        }
    }

    fn job(n: u64, halt_at: Option<u64>, chunk: u64) -> Arc<Reversed> {
        Arc::new(Reversed {
            n,
            halt_at,
            started: AtomicU64::new(0),
            chunk,
        })
    }

    #[tokio::test]
    async fn outputs_are_folded_in_canonical_order_whatever_finishes_first() {
        for chunk in [1, 3] {
            let j = job(20, None, chunk);
            let mut fold = Collect(Vec::new());
            let mut s = Schedule::new(j.as_ref());
            let stop = AtomicBool::new(false);
            let end = s.run(&j, &mut fold, &stop).await.unwrap();
            assert_eq!(end, Ending::Complete);
            assert_eq!(fold.0, (0..20).collect::<Vec<_>>());
            assert_eq!(s.folded(), 20);
        }
    }

    #[tokio::test]
    async fn a_halt_keeps_the_outputs_before_it_and_ends_the_job() {
        let j = job(20, Some(7), 3);
        let mut fold = Collect(Vec::new());
        let mut s = Schedule::new(j.as_ref());
        let stop = AtomicBool::new(false);
        let end = s.run(&j, &mut fold, &stop).await.unwrap();
        assert_eq!(end, Ending::Halted("halted"));
        assert_eq!(fold.0, (0..7).collect::<Vec<_>>());
        s.settle(false, &stop).await;
        // The window bounds what started: never all 20.
        assert!(j.started.load(Ordering::Relaxed) < 20);
    }

    #[tokio::test]
    async fn a_stop_starts_nothing_new_and_ends_interrupted() {
        let j = job(20, None, 1);
        let mut fold = Collect(Vec::new());
        let mut s = Schedule::new(j.as_ref());
        let stop = AtomicBool::new(true);
        let end = s.run(&j, &mut fold, &stop).await.unwrap();
        assert_eq!(end, Ending::Interrupted);
        assert!(fold.0.is_empty());
        assert_eq!(j.started.load(Ordering::Relaxed), 0);
    }

    /// Units that each wait `ms` (a call sleeping out a server's `Retry-After`), counting
    /// those that finished.
    struct Waiting {
        ms: u64,
        started: AtomicU64,
        finished: AtomicU64,
    }

    impl Job for Waiting {
        type Output = u64;
        type Halt = ();
        fn units(&self) -> u64 {
            8
        }
        fn window(&self) -> Window {
            Window::units(2)
        }
        fn run(self: &Arc<Self>, start: u64, _end: u64) -> Task<u64, ()> {
            let me = self.clone();
            Box::pin(async move {
                me.started.fetch_add(1, Ordering::Relaxed);
                tokio::time::sleep(Duration::from_millis(me.ms)).await;
                me.finished.fetch_add(1, Ordering::Relaxed);
                Ran::all(vec![start])
            })
        }
    }

    fn waiting(ms: u64) -> Arc<Waiting> {
        Arc::new(Waiting {
            ms,
            started: AtomicU64::new(0),
            finished: AtomicU64::new(0),
        })
    }

    fn stop_after(ms: u64) -> Arc<AtomicBool> {
        let stop = Arc::new(AtomicBool::new(false));
        let s = stop.clone();
        tokio::spawn(async move {
            tokio::time::sleep(Duration::from_millis(ms)).await;
            s.store(true, Ordering::Relaxed);
        });
        stop
    }

    /// A stop used to wait for the oldest task to end (a unit sleeping out 20 capped
    /// `Retry-After`s held the run for minutes) and folded what it returned. Now the
    /// schedule ends within a tick, folds nothing, and leaves the task to `settle`,
    /// which gives it up when asked to.
    #[tokio::test]
    async fn a_stop_ends_the_schedule_within_a_tick_without_waiting_for_a_task() {
        let j = waiting(60_000);
        let mut fold = Collect(Vec::new());
        let mut s = Schedule::new(j.as_ref());
        let stop = stop_after(200);
        let t = std::time::Instant::now();
        let end = s.run(&j, &mut fold, &stop).await.unwrap();
        assert_eq!(end, Ending::Interrupted);
        assert!(t.elapsed() < Duration::from_secs(5), "{:?}", t.elapsed());
        assert!(fold.0.is_empty());
        s.settle_until(true, || true).await;
        assert!(t.elapsed() < Duration::from_secs(8), "{:?}", t.elapsed());
        assert_eq!(j.finished.load(Ordering::Relaxed), 0);
    }

    /// Tasks that finish after the stop are drained (their calls reach the journal) but
    /// not folded.
    #[tokio::test]
    async fn tasks_finishing_after_a_stop_are_drained_not_folded() {
        let j = waiting(400);
        let mut fold = Collect(Vec::new());
        let mut s = Schedule::new(j.as_ref());
        let stop = stop_after(100);
        let end = s.run(&j, &mut fold, &stop).await.unwrap();
        assert_eq!(end, Ending::Interrupted);
        assert!(fold.0.is_empty(), "{:?}", fold.0);
        s.settle_until(true, || false).await;
        let started = j.started.load(Ordering::Relaxed);
        assert!(started > 0);
        assert_eq!(j.finished.load(Ordering::Relaxed), started);
    }
}
