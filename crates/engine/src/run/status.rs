//! How a session ended: complete, or partial with the reason.

/// How a session ended.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Status {
    Complete,
    /// Stopped early; the reason (`interrupted`, `budget`, a configuration error, …).
    Partial(String),
}

/// The partial reason when `max_queries` ran out.
pub const BUDGET: &str = "budget";

impl Status {
    pub fn as_string(&self) -> String {
        match self {
            Status::Complete => "complete".into(),
            Status::Partial(why) => format!("partial: {why}"),
        }
    }
}
