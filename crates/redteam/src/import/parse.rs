//! Reading one tool's results file: the tool's own reader, chosen by [`Tool`].
//!
//! Its own file because each reader builds the shared shape of [`super::record`], which
//! therefore names none of them.

use super::ImportError;
use super::record::{Imported, Tool};
use std::path::Path;

/// Reads `path` as `tool`'s output.
pub fn parse_file(tool: Tool, path: &Path) -> Result<Imported, ImportError> {
    match tool {
        Tool::Garak => super::garak::parse_file(path),
        Tool::Promptfoo => super::promptfoo::parse_file(path),
        Tool::Inspect => super::inspect::parse_file(path),
    }
}
