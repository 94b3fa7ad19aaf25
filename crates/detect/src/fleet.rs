//! The isolated fleet runner.
//!
//! Why this exists: one misbehaving detector must never take down the exam (as in
//! mallcop's fleet, each detector runs with a timeout and panic/failure isolation). Every member of a
//! [`Fleet`] runs on its own long-lived worker thread ("lane"):
//! - a **panic** is caught on the lane (`catch_unwind`), reported as
//!   [`Status::Panicked`] for that detector and scenario, and the lane carries on;
//! - a **hang** is detected by the supervisor's deadline; the lane is abandoned (Rust
//!   cannot kill a thread, so the stuck thread is left parked on its work and leaks)
//!   and a fresh lane takes the detector's next scenario. Reported as
//!   [`Status::TimedOut`];
//! - an external detector's own failures (non-zero exit, bad JSON, resource limit) are
//!   [`Status::Failed`] (see [`crate::external`]).
//!
//! Inputs are shared read-only (`Arc`): a detector gets `&[Event]` and `&Baseline` and
//! cannot mutate what its neighbours see, which is what mallcop's "copies of its
//! inputs" guarantees. Results come back in member name order, each detector's findings
//! in its own deterministic order.

use crate::Detector;
use crate::external::ExternalDetector;
use gauntlet_corpus::projection::{Baseline, Event, Finding};
use serde::Serialize;
use std::panic::{self, AssertUnwindSafe};
use std::sync::mpsc::{self, Receiver, RecvTimeoutError, Sender};
use std::sync::{Arc, Mutex, Once};
use std::thread;
use std::time::{Duration, Instant};

/// Default per-detector, per-scenario time budget.
pub const DEFAULT_TIMEOUT: Duration = Duration::from_secs(10);
/// Thread-name prefix of fleet lanes (their panics are reported, not printed).
pub const LANE_THREAD_PREFIX: &str = "gauntlet-detector:";

/// One fleet member: an in-process detector or an external executable.
#[derive(Clone)]
pub enum Member {
    Builtin(Arc<dyn Detector>),
    External(Arc<ExternalDetector>),
}

impl Member {
    pub fn name(&self) -> &str {
        match self {
            Member::Builtin(d) => d.name(),
            Member::External(x) => &x.name,
        }
    }

    pub fn is_external(&self) -> bool {
        matches!(self, Member::External(_))
    }

    fn run(&self, input: &Input) -> Result<Vec<Finding>, crate::external::RunError> {
        match self {
            Member::Builtin(d) => Ok(d.detect(&input.events, &input.baseline)),
            Member::External(x) => x.run(&input.events, &input.baseline),
        }
    }
}

/// One scenario's projected inputs, shared read-only by every lane.
#[derive(Debug, Default)]
pub struct Input {
    pub events: Vec<Event>,
    pub baseline: Baseline,
}

/// How one detector fared on one scenario.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[serde(tag = "status", content = "message", rename_all = "snake_case")]
pub enum Status {
    Ok,
    Panicked(String),
    TimedOut(String),
    Failed(String),
}

impl Status {
    pub fn is_ok(&self) -> bool {
        matches!(self, Status::Ok)
    }

    /// `panic`, `timeout`, `failed` or `ok`.
    pub fn kind(&self) -> &'static str {
        match self {
            Status::Ok => "ok",
            Status::Panicked(_) => "panic",
            Status::TimedOut(_) => "timeout",
            Status::Failed(_) => "failed",
        }
    }

    pub fn message(&self) -> &str {
        match self {
            Status::Ok => "",
            Status::Panicked(m) | Status::TimedOut(m) | Status::Failed(m) => m,
        }
    }
}

/// One detector's run on one scenario.
#[derive(Debug, Clone, Serialize)]
pub struct DetectorRun {
    pub detector: String,
    #[serde(flatten)]
    pub status: Status,
    pub findings: Vec<Finding>,
}

struct Job {
    seq: u64,
    input: Arc<Input>,
}

struct Reply {
    seq: u64,
    result: Result<Vec<Finding>, Failure>,
}

/// A detector run that gave no findings.
enum Failure {
    /// The detector panicked (its message).
    Panicked(String),
    Run(crate::external::RunError),
}

struct Lane {
    jobs: Sender<Job>,
    replies: Receiver<Reply>,
}

/// A set of detectors run isolated over one scenario at a time.
pub struct Fleet {
    members: Vec<Member>,
    lanes: Vec<Mutex<Option<Lane>>>,
    timeout: Duration,
    seq: Mutex<u64>,
}

impl Fleet {
    /// A fleet of `members` (sorted by name here), each with `timeout` per scenario.
    pub fn new(mut members: Vec<Member>, timeout: Duration) -> Fleet {
        install_quiet_panic_hook();
        members.sort_by(|a, b| a.name().cmp(b.name()));
        let lanes = members.iter().map(|_| Mutex::new(None)).collect();
        Fleet {
            members,
            lanes,
            timeout,
            seq: Mutex::new(0),
        }
    }

    /// The reference fleet plus `external` detectors.
    pub fn reference(external: Vec<Arc<ExternalDetector>>, timeout: Duration) -> Fleet {
        let mut m: Vec<Member> = crate::builtin().into_iter().map(Member::Builtin).collect();
        m.extend(external.into_iter().map(Member::External));
        Fleet::new(m, timeout)
    }

    /// The time budget for `member`: the fleet timeout; for an external detector its
    /// own timeout plus a grace second (it kills its process itself), if longer.
    fn budget(&self, member: &Member) -> Duration {
        match member {
            Member::Builtin(_) => self.timeout,
            Member::External(x) => self.timeout.max(x.limits.timeout + Duration::from_secs(1)),
        }
    }

    pub fn members(&self) -> &[Member] {
        &self.members
    }

    /// Runs every member over `input`; one [`DetectorRun`] per member, in name order.
    pub fn run(&self, input: Arc<Input>) -> Vec<DetectorRun> {
        let seq = {
            let mut s = self.seq.lock().unwrap_or_else(|e| e.into_inner());
            *s += 1;
            *s
        };
        let start = Instant::now();
        // Dispatch to every lane first, so members run concurrently.
        let mut sent = Vec::with_capacity(self.members.len());
        for (i, member) in self.members.iter().enumerate() {
            let mut slot = self.lanes[i].lock().unwrap_or_else(|e| e.into_inner());
            if slot.is_none() {
                *slot = spawn_lane(member.clone()).ok();
            }
            let ok = match slot.as_ref() {
                Some(lane) => lane
                    .jobs
                    .send(Job {
                        seq,
                        input: input.clone(),
                    })
                    .is_ok(),
                None => false,
            };
            if !ok {
                *slot = None;
            }
            sent.push(ok);
        }
        let mut out = Vec::with_capacity(self.members.len());
        for (i, member) in self.members.iter().enumerate() {
            let name = member.name().to_string();
            if !sent[i] {
                out.push(DetectorRun {
                    detector: name,
                    status: Status::Failed("could not start a worker thread".into()),
                    findings: Vec::new(),
                });
                continue;
            }
            let budget = self.budget(member);
            let mut slot = self.lanes[i].lock().unwrap_or_else(|e| e.into_inner());
            let (status, findings, abandon) = wait(
                slot.as_ref().expect("lane sent"),
                seq,
                start + budget,
                budget,
            );
            if abandon {
                // The lane's thread may still be stuck in this job: never reuse it.
                *slot = None;
            }
            out.push(DetectorRun {
                detector: name,
                status,
                findings,
            });
        }
        out
    }
}

/// Waits for `seq`'s reply: (status, findings, abandon the lane).
fn wait(
    lane: &Lane,
    seq: u64,
    deadline: Instant,
    budget: Duration,
) -> (Status, Vec<Finding>, bool) {
    loop {
        let left = deadline.saturating_duration_since(Instant::now());
        match lane.replies.recv_timeout(left) {
            Ok(r) if r.seq != seq => continue,
            Ok(Reply { result: Ok(f), .. }) => return (Status::Ok, f, false),
            Ok(Reply {
                result: Err(Failure::Panicked(m)),
                ..
            }) => return (Status::Panicked(m), Vec::new(), false),
            Ok(Reply {
                result: Err(Failure::Run(e @ crate::external::RunError::TimedOut { .. })),
                ..
            }) => return (Status::TimedOut(e.to_string()), Vec::new(), false),
            Ok(Reply {
                result: Err(Failure::Run(e)),
                ..
            }) => return (Status::Failed(e.to_string()), Vec::new(), false),
            Err(RecvTimeoutError::Timeout) => {
                let m = format!("no result within {} ms", budget.as_millis());
                return (Status::TimedOut(m), Vec::new(), true);
            }
            Err(RecvTimeoutError::Disconnected) => {
                return (
                    Status::Failed("worker thread exited".into()),
                    Vec::new(),
                    true,
                );
            }
        }
    }
}

fn spawn_lane(member: Member) -> std::io::Result<Lane> {
    let (jobs, job_rx) = mpsc::channel::<Job>();
    let (reply_tx, replies) = mpsc::channel::<Reply>();
    thread::Builder::new()
        .name(format!("{LANE_THREAD_PREFIX}{}", member.name()))
        .spawn(move || {
            for job in job_rx {
                let r = panic::catch_unwind(AssertUnwindSafe(|| member.run(&job.input)));
                let reply = match r {
                    Ok(result) => Reply {
                        seq: job.seq,
                        result: result.map_err(Failure::Run),
                    },
                    Err(p) => Reply {
                        seq: job.seq,
                        result: Err(Failure::Panicked(panic_message(&*p))),
                    },
                };
                if reply_tx.send(reply).is_err() {
                    break;
                }
            }
        })?;
    Ok(Lane { jobs, replies })
}

fn panic_message(p: &(dyn std::any::Any + Send)) -> String {
    if let Some(s) = p.downcast_ref::<&str>() {
        (*s).to_string()
    } else if let Some(s) = p.downcast_ref::<String>() {
        s.clone()
    } else {
        "panic with a non-string payload".to_string()
    }
}

/// Panics on fleet lanes are captured and reported per scenario; printing them as
/// well would bury the exam's output. Other threads keep the previous hook.
fn install_quiet_panic_hook() {
    static ONCE: Once = Once::new();
    ONCE.call_once(|| {
        let previous = panic::take_hook();
        panic::set_hook(Box::new(move |info| {
            let lane = thread::current()
                .name()
                .is_some_and(|n| n.starts_with(LANE_THREAD_PREFIX));
            if !lane {
                previous(info);
            }
        }));
    });
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::testkit::*;
    use serde_json::json;
    use std::sync::atomic::{AtomicUsize, Ordering};

    struct Hangs;
    impl Detector for Hangs {
        fn name(&self) -> &str {
            "test-hangs"
        }
        fn detect(&self, events: &[Event], _: &Baseline) -> Vec<Finding> {
            if events.iter().any(|e| e.id == "hang") {
                loop {
                    thread::park();
                }
            }
            Vec::new()
        }
    }

    struct Panics;
    impl Detector for Panics {
        fn name(&self) -> &str {
            "test-panics"
        }
        fn detect(&self, events: &[Event], _: &Baseline) -> Vec<Finding> {
            if events.iter().any(|e| e.id == "boom") {
                panic!("detector exploded on purpose");
            }
            Vec::new()
        }
    }

    struct Counts(Arc<AtomicUsize>);
    impl Detector for Counts {
        fn name(&self) -> &str {
            "test-counts"
        }
        fn detect(&self, events: &[Event], _: &Baseline) -> Vec<Finding> {
            self.0.fetch_add(1, Ordering::SeqCst);
            events
                .iter()
                .map(|e| {
                    crate::util::finding("test-counts", e, "n", "low", String::new(), json!({}))
                })
                .collect()
        }
    }

    fn input(id: &str) -> Arc<Input> {
        Arc::new(Input {
            events: vec![ev(id, "s", "t", "a", "2026-05-04T10:00:00Z", json!({}))],
            baseline: bl(&["a"], &[]),
        })
    }

    #[test]
    fn hang_and_panic_are_reported_per_scenario_and_the_fleet_carries_on() {
        let calls = Arc::new(AtomicUsize::new(0));
        let fleet = Fleet::new(
            vec![
                Member::Builtin(Arc::new(Panics)),
                Member::Builtin(Arc::new(Counts(calls.clone()))),
                Member::Builtin(Arc::new(Hangs)),
            ],
            Duration::from_millis(300),
        );
        let names: Vec<&str> = fleet.members().iter().map(|m| m.name()).collect();
        assert_eq!(names, ["test-counts", "test-hangs", "test-panics"]);

        let r = fleet.run(input("hang"));
        assert!(r[0].status.is_ok());
        assert_eq!(r[0].findings.len(), 1);
        assert_eq!(r[1].status.kind(), "timeout");
        assert!(r[2].status.is_ok());

        let r = fleet.run(input("boom"));
        assert!(r[0].status.is_ok());
        assert!(r[1].status.is_ok(), "a fresh lane replaced the hung one");
        assert_eq!(
            r[2].status,
            Status::Panicked("detector exploded on purpose".into())
        );

        let r = fleet.run(input("fine"));
        assert!(r.iter().all(|x| x.status.is_ok()), "{r:?}");
        assert_eq!(calls.load(Ordering::SeqCst), 3);
    }
}
