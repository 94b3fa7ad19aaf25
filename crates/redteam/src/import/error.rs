//! Why another tool's result file cannot be imported. Every message names the file and,
//! where there is one, the place (line, sample, result index) and the fix.

use std::path::PathBuf;

#[derive(Debug, thiserror::Error)]
pub enum ImportError {
    /// The file cannot be opened or read.
    #[error("cannot read {}: {source}", .path.display())]
    Read {
        path: PathBuf,
        #[source]
        source: std::io::Error,
    },
    /// The file is larger than an import accepts.
    #[error(
        "{}: {size} bytes is more than the {max} a {tool} import accepts",
        .path.display()
    )]
    TooLarge {
        path: PathBuf,
        tool: &'static str,
        size: u64,
        max: u64,
    },
    /// One line (garak) or one entry (Inspect) is larger than an import accepts.
    #[error("{}: {place} is longer than {max} bytes", .path.display())]
    PartTooLarge {
        path: PathBuf,
        place: String,
        max: u64,
    },
    /// Not the format the tool writes, at `place`.
    #[error("{}: {place}: {message}\n    help: {help}", .path.display())]
    Format {
        path: PathBuf,
        place: String,
        message: String,
        help: &'static str,
    },
    /// The file holds no prompt at all.
    #[error("{}: no {what} in the file; nothing to import", .path.display())]
    Empty { path: PathBuf, what: &'static str },
    /// The file mixes the output of several runs or tool versions.
    #[error(
        "{}: it mixes {what} ({}); import one run at a time",
        .path.display(),
        .values.join(", ")
    )]
    Mixed {
        path: PathBuf,
        what: &'static str,
        values: Vec<String>,
    },
}

impl ImportError {
    pub(crate) fn format(
        path: &std::path::Path,
        place: impl Into<String>,
        message: impl Into<String>,
        help: &'static str,
    ) -> Self {
        ImportError::Format {
            path: path.to_path_buf(),
            place: place.into(),
            message: message.into(),
            help,
        }
    }
}
