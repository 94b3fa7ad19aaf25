//! Why an AgentDojo case has no result: a live episode's errors ([`EpisodeError`]) and
//! an imported log's ([`ImportError`]). Each ends its attempt as an error outcome
//! ([`crate::attack::AttemptError`]), never a success or a failure of the model.

use super::sidecar::SidecarError;
use std::path::PathBuf;
use std::sync::Arc;

/// Why a live episode ended without AgentDojo's verdicts.
#[derive(Debug, Clone, thiserror::Error)]
pub enum EpisodeError {
    /// A request to the sidecar failed.
    #[error(transparent)]
    Sidecar(#[from] SidecarError),
    /// The sidecar's tool definitions do not read as tools.
    #[error("malformed reply from the AgentDojo sidecar: tools: {0}")]
    Tools(#[source] Arc<serde_json::Error>),
    #[error("malformed reply from the AgentDojo sidecar: `start` without system or user")]
    StartFields,
    #[error("malformed reply from the AgentDojo sidecar: `score` without utility")]
    ScoreFields,
}

/// A result file larger than this is refused.
pub const MAX_RESULT_BYTES: u64 = 64 << 20;

/// Why a log directory or one of its cases could not be read. `shown` is a result
/// file's path relative to the log directory.
#[derive(Debug, Clone, thiserror::Error)]
pub enum ImportError {
    /// Listing a directory or reading a file failed.
    #[error("{}: {source}", path.display())]
    Io {
        path: PathBuf,
        #[source]
        source: Arc<std::io::Error>,
    },
    #[error(
        "{}: {bytes} bytes, over the {MAX_RESULT_BYTES}-byte limit of a result file",
        path.display()
    )]
    TooLarge { path: PathBuf, bytes: u64 },
    #[error(
        "{}: not an AgentDojo result file (line {} column {}: {source})",
        path.display(),
        source.line(),
        source.column()
    )]
    NotResultFile {
        path: PathBuf,
        #[source]
        source: Arc<serde_json::Error>,
    },
    #[error(
        "{}: no AgentDojo result files (expected <pipeline>/<suite>/<user_task>/<attack>/<injection_task>.json, as `python -m agentdojo.scripts.benchmark --logdir` writes them)",
        logdir.display()
    )]
    NoResultFiles { logdir: PathBuf },
    /// A case the imported logs hold no file for.
    #[error("no AgentDojo result file {shown} for this case in the imported logs")]
    NoFile { shown: String },
    #[error("{shown}: a message with role `{role}`")]
    Role { shown: String, role: String },
    #[error("{shown}: no assistant message")]
    NoAssistant { shown: String },
    /// The file's own `error`: AgentDojo's message.
    #[error("AgentDojo recorded an error for this case: {0}")]
    Recorded(String),
}
