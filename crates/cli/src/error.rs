//! The one error type of the `gauntlet` commands, and the one place it becomes an exit
//! status and a message on stderr (as cargo-nextest's `ExpectedError` does). Every
//! command returns `Result<(), CliError>`; `main` reports it. The exit codes are the
//! documented ones, named in [`status`] (the book's reference/commands.md and guides/exams.md):
//! 0 success; 1 the command failed or stopped early (partial); 2 the command line, a
//! config or an input is invalid (for the exams also a corpus or operational failure,
//! such as a detector that failed); 3 a query budget was spent (partial: rerun with a
//! larger budget to resume from the journal); 4 a `gate:` rule failed; 5 a run ran every
//! unit but measured too little (`failed`: errors over `max_error_share`); `exam-detect`
//! (and `merge` of its shards) exits with its verdict (1 gaps, 2 detector errors).

use gauntlet_core::terminal::safe_text;
use std::process::ExitCode;

/// Every exit status gauntlet uses, in one place (the book's reference/commands.md).
pub(crate) mod status {
    /// The command did what it was asked, and (for the exams and scans) found nothing.
    pub(crate) const SUCCESS: u8 = 0;
    /// The command failed or stopped early (`partial`); `exam-detect`: detection gaps;
    /// `mcp-scan`: findings; `ci`: a failed check.
    pub(crate) const FAILED: u8 = 1;
    /// The command line, a config or an input is invalid (for the exams and `mcp-scan`
    /// also an operational failure: a detector or a server that failed).
    pub(crate) const INVALID: u8 = 2;
    /// A query budget was spent: rerun with a larger budget to resume from the journal.
    pub(crate) const BUDGET_SPENT: u8 = 3;
    /// `gauntlet run`: the run is complete but a rule of its config's `gate:` block failed.
    pub(crate) const GATE_FAILED: u8 = 4;
    /// `gauntlet run` (and `merge`): every unit ran but the run measured too little
    /// (`failed: …`): more of its judged attempts ended in an error than
    /// `max_error_share` allows, every one did, or none was judged.
    pub(crate) const MEASURED_TOO_LITTLE: u8 = 5;
    /// stdout's reader went away (`gauntlet … | head`): the status a shell reports for a
    /// process ended by SIGPIPE, 128 + 13.
    pub(crate) const BROKEN_PIPE: u8 = 141;
}

/// Prints `error: <message>` to stderr with control characters escaped (the message
/// may quote a file name, a dataset or a server's reply).
pub(crate) fn print(e: &dyn std::fmt::Display) {
    eprintln!("error: {}", safe_text(&e.to_string()));
}

/// Why a command did not succeed.
#[derive(Debug, thiserror::Error)]
pub(crate) enum CliError {
    /// The command line, a config or an input is invalid (for the exams also a corpus
    /// or operational failure): `error: <message>`, exit 2.
    #[error("{0}")]
    Invalid(String),
    /// The command failed (an artefact could not be written, a service refused): `error:
    /// <message>`, exit 1.
    #[error("{0}")]
    Failed(String),
    /// An input is invalid and the message is the whole report (printed without the
    /// `error:` prefix): exit 2.
    #[error("{0}")]
    InvalidReport(String),
    /// The command stopped early and has already said why on stderr: exit 1.
    #[error("stopped early")]
    Stopped,
    /// A query budget was spent and the command has already said so: exit 3.
    #[error("the query budget is spent")]
    BudgetSpent,
    /// The run ran every unit but measured too little (`failed: …`), and the command has
    /// already said why: exit 5.
    #[error("the run measured too little")]
    MeasuredTooLittle,
    /// The command's verdict is its exit status (`exam-detect`: 1 coverage gaps, 2
    /// detector errors; `exam --mode e2e`: 2 when a detector failed in the end-to-end
    /// pass), already printed with the report.
    #[error("verdict {0}")]
    Verdict(u8),
    /// The command's output could not be written to stdout: exit 1, or
    /// [`status::BROKEN_PIPE`] without a message when its reader went away.
    #[error("cannot write to stdout: {0}")]
    Stdout(#[source] std::io::Error),
    /// `error`, reported in the form `command` has always used (`gauntlet exam:
    /// <message>` instead of `error: <message>`), with `error`'s exit status.
    #[error("{command}: {error}")]
    In {
        command: &'static str,
        error: Box<CliError>,
    },
}

impl CliError {
    /// An invalid input, from anything that displays.
    pub(crate) fn invalid(e: impl std::fmt::Display) -> Self {
        CliError::Invalid(e.to_string())
    }

    /// A failure, from anything that displays.
    pub(crate) fn failed(e: impl std::fmt::Display) -> Self {
        CliError::Failed(e.to_string())
    }

    /// This error, reported as `command`'s own (see [`CliError::In`]).
    pub(crate) fn of(self, command: &'static str) -> Self {
        CliError::In {
            command,
            error: Box::new(self),
        }
    }

    /// The process exit status.
    pub(crate) fn exit_code(&self) -> u8 {
        match self {
            CliError::In { error, .. } => error.exit_code(),
            CliError::Failed(_) | CliError::Stopped | CliError::Stdout(_) => status::FAILED,
            CliError::Invalid(_) | CliError::InvalidReport(_) => status::INVALID,
            CliError::BudgetSpent => status::BUDGET_SPENT,
            CliError::MeasuredTooLittle => status::MEASURED_TOO_LITTLE,
            CliError::Verdict(c) => *c,
        }
    }

    /// Prints the message (escaped: it may quote a file name, a dataset or a server's
    /// reply) and returns the exit status.
    pub(crate) fn report(self) -> ExitCode {
        self.print(None);
        ExitCode::from(self.exit_code())
    }

    /// `error: <message>`, or `<command>: <message>` inside [`CliError::In`].
    fn print(&self, command: Option<&str>) {
        match self {
            CliError::In { command, error } => error.print(Some(command)),
            CliError::Invalid(m) | CliError::Failed(m) => match command {
                Some(c) => eprintln!("{c}: {}", safe_text(m)),
                None => print(m),
            },
            CliError::InvalidReport(m) => eprintln!("{}", safe_text(m)),
            CliError::Stdout(e) => match command {
                Some(c) => eprintln!("{c}: cannot write to stdout: {e}"),
                None => print(self),
            },
            CliError::Stopped
            | CliError::BudgetSpent
            | CliError::MeasuredTooLittle
            | CliError::Verdict(_) => {}
        }
    }
}

/// The exit status of a command's result. An error whose chain holds a broken pipe
/// (stdout's reader went away: `gauntlet … | head`) ends quietly with
/// [`status::BROKEN_PIPE`], the status a shell reports for a process ended by SIGPIPE
/// (128 + 13). SIGPIPE itself stays ignored (Rust's default): gauntlet writes into
/// external detectors' stdin, and a detector that exits early is an error of that
/// detector, not the end of gauntlet.
pub(crate) fn exit(r: Result<(), CliError>) -> ExitCode {
    match r {
        Ok(()) => ExitCode::from(status::SUCCESS),
        Err(e) if is_broken_pipe(&e) => ExitCode::from(status::BROKEN_PIPE),
        Err(e) => e.report(),
    }
}

/// Whether `e` or an error in its chain is a write to a pipe with no reader.
pub(crate) fn is_broken_pipe(e: &(dyn std::error::Error + 'static)) -> bool {
    let mut at = Some(e);
    while let Some(e) = at {
        if let Some(io) = e.downcast_ref::<std::io::Error>()
            && io.kind() == std::io::ErrorKind::BrokenPipe
        {
            return true;
        }
        at = match e.downcast_ref::<CliError>() {
            // `In` displays its inner error rather than naming it as a source.
            Some(CliError::In { error, .. }) => Some(error.as_ref()),
            _ => e.source(),
        };
    }
    false
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_broken_pipe_is_found_in_the_chain() {
        let pipe = || std::io::Error::from(std::io::ErrorKind::BrokenPipe);
        assert!(is_broken_pipe(&CliError::Stdout(pipe())));
        assert!(is_broken_pipe(
            &CliError::Stdout(pipe()).of("gauntlet exam")
        ));
        let full = CliError::Stdout(std::io::Error::from(std::io::ErrorKind::StorageFull));
        assert!(!is_broken_pipe(&full));
        assert_eq!(full.exit_code(), status::FAILED);
        assert!(!is_broken_pipe(&CliError::failed("Broken pipe")));
    }

    #[test]
    fn exit_codes_are_the_documented_ones() {
        assert_eq!(CliError::invalid("x").exit_code(), 2);
        assert_eq!(CliError::InvalidReport("x".into()).exit_code(), 2);
        assert_eq!(CliError::failed("x").exit_code(), 1);
        assert_eq!(CliError::Stopped.exit_code(), 1);
        assert_eq!(CliError::BudgetSpent.exit_code(), 3);
        assert_eq!(CliError::MeasuredTooLittle.exit_code(), 5);
        assert_eq!(CliError::Verdict(2).exit_code(), 2);
        // Reported in a command's own form, with the status of what it wraps.
        assert_eq!(CliError::invalid("x").of("gauntlet exam").exit_code(), 2);
        assert_eq!(CliError::failed("x").of("gauntlet exam").exit_code(), 1);
        assert_eq!(CliError::BudgetSpent.of("gauntlet exam").exit_code(), 3);
        assert_eq!(
            CliError::failed("x").of("gauntlet exam").to_string(),
            "gauntlet exam: x"
        );
    }
}
