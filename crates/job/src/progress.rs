//! Progress reporting: the engine says what happened, the CLI decides how to show it.

/// Call accounting shown alongside progress.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct CallStats {
    /// Calls that reached a model, those still in flight included.
    pub made: u64,
    /// Of `made`, the calls still waiting on their model.
    pub in_flight: u64,
    pub cached: u64,
    pub failed: u64,
    /// Transport retries of network models, by cause (summed over models).
    pub retries_429: u64,
    pub retries_5xx: u64,
    pub retries_timeout: u64,
    pub retries_connect: u64,
}

impl CallStats {
    /// Calls that reached a model and returned (a reply or an error).
    pub fn done(&self) -> u64 {
        self.made.saturating_sub(self.in_flight)
    }
    pub fn retries(&self) -> u64 {
        self.retries_429 + self.retries_5xx + self.retries_timeout + self.retries_connect
    }
}

pub trait Progress: Send + Sync {
    /// The run is about to process `units` behaviors × attacks × targets (`attempts` at most).
    fn start(&self, units: u64, attempts: u64);
    /// The model calls the plan makes at most (journal hits included), when it knows
    /// them: the ETA is then read from calls, not units (units differ in size). Called
    /// before [`Progress::start`]; without it the ETA comes from units.
    fn planned_calls(&self, _calls: u64) {}
    /// `units` more units are done, with `attempts` attempts. Also called about once a
    /// second while units are in flight (with 0 units), so call counts stay current
    /// in a slow run.
    fn advance(&self, units: u64, attempts: u64, calls: CallStats);
    /// A one-line notice (resume information, warnings).
    fn note(&self, message: &str);
    fn finish(&self);
}

/// Shows nothing.
pub struct Silent;

impl Progress for Silent {
    fn start(&self, _: u64, _: u64) {}
    fn advance(&self, _: u64, _: u64, _: CallStats) {}
    fn note(&self, _: &str) {}
    fn finish(&self) {}
}
