//! Behavior files (`{"behaviors": [...]}` JSON): checked against their pin, parsed, and
//! their behaviors checked (ids non-empty and unique, prompts non-empty, at least one).

use super::dataset::{DatasetError, check_pin};
use gauntlet_core::behavior::Behavior;
use gauntlet_core::hash::sha256_hex;
use serde::Deserialize;
use std::collections::HashSet;

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct BehaviorFile {
    #[serde(default)]
    #[expect(
        dead_code,
        reason = "accepted so behavior files may carry it; not used"
    )]
    name: Option<String>,
    #[serde(default)]
    #[expect(
        dead_code,
        reason = "accepted so behavior files may carry it; not used"
    )]
    description: Option<String>,
    behaviors: Vec<Behavior>,
}

/// Parses `{"behaviors": [...]}` JSON, verifying `expected_sha256` first when given,
/// and checks ids are unique and prompts non-empty. `source` names the input in errors.
pub fn parse_behaviors(
    bytes: &[u8],
    source: &str,
    expected_sha256: Option<&str>,
) -> Result<(String, Vec<Behavior>), DatasetError> {
    let actual = sha256_hex(bytes);
    check_pin(source, expected_sha256, &actual)?;
    Ok((actual, read_behaviors(bytes, source)?))
}

/// Parses and checks behaviors from a file's bytes.
pub fn read_behaviors(bytes: &[u8], source: &str) -> Result<Vec<Behavior>, DatasetError> {
    let file: BehaviorFile = serde_json::from_slice(bytes).map_err(|e| parse_error(source, &e))?;
    check_behaviors(file.behaviors, source)
}

/// [`parse_behaviors`] over a reader, for files too large to hold twice: the bytes are
/// hashed as they stream through the parser and never held whole, so a dataset's peak
/// memory is its parsed behaviors, not the file plus them (1M-attempt benchmark in
/// BENCHMARKS.md). The pin is checked after the last byte and before anything parsed is
/// returned; when the file does not parse, the rest of it is hashed first, so a file
/// that changed since it was pinned reports the pin, not the syntax.
pub fn parse_behaviors_reader(
    reader: impl std::io::Read,
    source: &str,
    expected_sha256: Option<&str>,
) -> Result<(String, Vec<Behavior>), DatasetError> {
    let mut hashing = std::io::BufReader::with_capacity(
        64 * 1024,
        HashingReader {
            inner: reader,
            hash: gauntlet_core::hash::HashWriter::new(),
        },
    );
    let parsed = serde_json::from_reader::<_, BehaviorFile>(&mut hashing);
    let io_error = |e: std::io::Error| DatasetError::new(source, format!("cannot read: {e}"));
    if parsed.is_err() {
        std::io::copy(&mut hashing, &mut std::io::sink()).map_err(io_error)?;
    }
    let actual = hashing.into_inner().hash.finish_hex();
    check_pin(source, expected_sha256, &actual)?;
    let file = parsed.map_err(|e| match e.io_error_kind() {
        Some(_) => DatasetError::new(source, format!("cannot read: {e}")),
        None => parse_error(source, &e),
    })?;
    Ok((actual, check_behaviors(file.behaviors, source)?))
}

/// A reader that feeds every byte it reads to a sha256.
struct HashingReader<R> {
    inner: R,
    hash: gauntlet_core::hash::HashWriter,
}

impl<R: std::io::Read> std::io::Read for HashingReader<R> {
    fn read(&mut self, buf: &mut [u8]) -> std::io::Result<usize> {
        let n = self.inner.read(buf)?;
        std::io::Write::write_all(&mut self.hash, &buf[..n])?;
        Ok(n)
    }
}

fn parse_error(source: &str, e: &serde_json::Error) -> DatasetError {
    DatasetError::new(
        source,
        format!(
            "line {} column {}: {e}; expected {{\"behaviors\": [{{\"id\", \"prompt\", \"category\"?, \
             \"expected\"?: \"should_refuse\"|\"should_comply\", \"reference_answer\"?, \"target_secret\"?}}]}}",
            e.line(),
            e.column()
        ),
    )
}

/// Checks parsed behaviors: ids non-empty and unique, prompts non-empty, at least one.
fn check_behaviors(behaviors: Vec<Behavior>, source: &str) -> Result<Vec<Behavior>, DatasetError> {
    let mut seen = HashSet::new();
    for (i, b) in behaviors.iter().enumerate() {
        if b.id.trim().is_empty() {
            return Err(DatasetError::new(
                source,
                format!("behaviors[{i}] has an empty `id`"),
            ));
        }
        if b.prompt.trim().is_empty() {
            return Err(DatasetError::new(
                source,
                format!("behavior `{}` has an empty `prompt`", b.id),
            ));
        }
        if !seen.insert(b.id.as_str()) {
            return Err(DatasetError::new(
                source,
                format!("duplicate behavior id `{}` (behaviors[{i}])", b.id),
            ));
        }
    }
    if behaviors.is_empty() {
        return Err(DatasetError::new(source, "the dataset has no behaviors"));
    }
    Ok(behaviors)
}
