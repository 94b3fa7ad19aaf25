//! How a session fails: the errors that stop a whole run.

use std::path::Path;

/// A failure that stops the whole run.
#[derive(Debug, thiserror::Error)]
pub enum RunError {
    #[error("{0}")]
    Io(String),
    /// The run was not started: the run directory holds something else (another
    /// config's run). Nothing was changed.
    #[error("{0}")]
    Refused(String),
    /// The run was not started: the labels its directory holds cannot be applied again
    /// (edited since `gauntlet label` wrote them, unreadable). Nothing was changed.
    #[error(transparent)]
    Labels(#[from] crate::labels::LabelError),
    /// An artefact could not be written or read back (the message names the file).
    #[error(transparent)]
    Artefact(#[from] crate::stored::StoredError),
}

pub(super) fn io_err(what: &str, path: &Path, e: std::io::Error) -> RunError {
    RunError::Io(format!("{what} {}: {e}", path.display()))
}
