//! How a session ended: complete, partial with the reason, or failed — the plan ran
//! to its end but measured too little to report (`measured.rs` decides).

use std::fmt;

/// How a session ended.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Status {
    Complete,
    /// Stopped early, and why.
    Partial(Reason),
    /// Every unit ran, but the run measured too little for its numbers to be read as
    /// results: why (errors over `max_error_share`, every attempt an error, no attempt).
    Failed(String),
}

/// Why a session stopped early. Its `Display` is what `run.json` records after
/// `partial: `.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Reason {
    /// `max_queries` ran out (`budget`).
    Budget,
    /// Ctrl-C or SIGTERM (`interrupted`).
    Interrupted,
    /// Some units of the plan have no result (`incomplete`).
    Incomplete,
    /// An error stopped every call (a configuration error, a journal that cannot be
    /// written, a judge that failed): its message.
    Error(String),
    /// A rescore of a run that is itself partial.
    RescoredPartial { status: String },
    /// A reason an earlier session recorded and this one only carries forward.
    Recorded(String),
}

impl Reason {
    /// The reason of a recorded `partial: <why>`: one of the named ones when it reads
    /// as one, else as recorded.
    pub fn parse(why: &str) -> Reason {
        match why {
            "budget" => Reason::Budget,
            "interrupted" => Reason::Interrupted,
            "incomplete" => Reason::Incomplete,
            other => Reason::Recorded(other.to_string()),
        }
    }
}

impl fmt::Display for Reason {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Reason::Budget => f.write_str("budget"),
            Reason::Interrupted => f.write_str("interrupted"),
            Reason::Incomplete => f.write_str("incomplete"),
            Reason::Error(why) | Reason::Recorded(why) => f.write_str(why),
            Reason::RescoredPartial { status } => write!(f, "the rescored run is {status}"),
        }
    }
}

impl Status {
    pub fn as_string(&self) -> String {
        match self {
            Status::Complete => "complete".into(),
            Status::Partial(why) => format!("partial: {why}"),
            Status::Failed(why) => format!("failed: {why}"),
        }
    }

    /// The status a run recorded (`complete`, `partial: <why>`, `failed: <why>`).
    pub fn parse(recorded: &str) -> Status {
        if let Some(why) = recorded.strip_prefix("partial: ") {
            Status::Partial(Reason::parse(why))
        } else if let Some(why) = recorded.strip_prefix("failed: ") {
            Status::Failed(why.to_string())
        } else {
            Status::Complete
        }
    }

    /// Every unit of the plan ran (complete, or failed for what it measured).
    pub fn ran_to_end(&self) -> bool {
        matches!(self, Status::Complete | Status::Failed(_))
    }

    /// Stopped because `max_queries` ran out.
    pub fn is_budget(&self) -> bool {
        *self == Status::Partial(Reason::Budget)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn recorded_reasons_read_back_as_they_were_written() {
        for r in [
            Reason::Budget,
            Reason::Interrupted,
            Reason::Incomplete,
            Reason::Recorded("journal: disk full".into()),
        ] {
            assert_eq!(Reason::parse(&r.to_string()), r);
        }
        assert_eq!(
            Status::Partial(Reason::Budget).as_string(),
            "partial: budget"
        );
        assert!(Status::Partial(Reason::Budget).is_budget());
        assert!(!Status::Complete.is_budget());
        for s in [
            Status::Complete,
            Status::Partial(Reason::Interrupted),
            Status::Failed("every one of the 4 judged attempts ended in an error".into()),
        ] {
            assert_eq!(Status::parse(&s.as_string()), s);
        }
        assert!(Status::Failed(String::new()).ran_to_end());
        assert!(!Status::Partial(Reason::Budget).ran_to_end());
    }
}
