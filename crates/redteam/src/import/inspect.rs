//! Inspect's evaluation logs: `.eval` (a zip archive: `header.json` with the task and
//! model, one `samples/<id>_epoch_<n>.json` entry per sample; entries may be
//! Zstandard-compressed) and `.json` (one document holding the same, samples inline).
//!
//! Each sample is one prompt (its input: a string or a list of messages whose last user
//! message is the prompt) and one reply (`output.completion`); the epochs of a sample
//! are the generations of its prompt. Each scorer's value is a verdict
//! `inspect:<scorer>` (a scorer giving a dict of values: one verdict per key,
//! `inspect:<scorer>.<key>`), read as Inspect's `value_to_float` reads it: `C` 1, `P`
//! 0.5, `I` and `N` 0, booleans, numbers; a hit is a value of at least 0.5. A sample
//! that errored is an errored attempt; a value that is none of these is an error.
//!
//! An `.eval` written by a run that was stopped has no `header.json`: its samples import
//! with the eval facts from `_journal/start.json`, and the import says it is partial.

use super::ImportError;
use super::record::{Generation, Imported, Record, Tool, ToolVerdict, VerdictValue, open, shown};
use serde::Deserialize;
use serde_json::Value;
use std::collections::BTreeMap;
use std::io::{BufReader, Read, Seek};
use std::path::Path;

/// The largest log accepted.
pub const FILE_MAX: u64 = 16 << 30;
/// The largest entry of an `.eval` archive accepted, decompressed.
pub const ENTRY_MAX: u64 = 512 << 20;
const HELP: &str = "give the .eval or .json log Inspect wrote (`inspect eval … --log-dir DIR`)";

#[derive(Deserialize)]
struct Header {
    #[serde(default)]
    status: Option<String>,
    eval: Eval,
    #[serde(default)]
    samples: Option<Vec<Sample>>,
}

#[derive(Deserialize)]
struct Eval {
    #[serde(default)]
    task: Option<String>,
    #[serde(default)]
    model: Option<String>,
    #[serde(default)]
    packages: Option<BTreeMap<String, String>>,
}

#[derive(Deserialize)]
struct Sample {
    #[serde(default)]
    id: Option<Value>,
    #[serde(default)]
    epoch: Option<u64>,
    #[serde(default)]
    input: Option<Value>,
    #[serde(default)]
    output: Option<Output>,
    #[serde(default)]
    scores: Option<BTreeMap<String, Score>>,
    #[serde(default)]
    error: Option<Value>,
}

#[derive(Deserialize)]
struct Output {
    #[serde(default)]
    completion: Option<String>,
    #[serde(default)]
    error: Option<Value>,
}

#[derive(Deserialize)]
struct Score {
    #[serde(default)]
    value: Option<Value>,
    #[serde(default)]
    explanation: Option<String>,
}

/// Reads an Inspect log (`.eval` or `.json`, told apart by their first bytes).
pub fn parse_file(path: &Path) -> Result<Imported, ImportError> {
    let mut file = open(path, "inspect", FILE_MAX)?;
    let mut magic = [0u8; 4];
    let n = read_up_to(&mut file, &mut magic).map_err(|source| ImportError::Read {
        path: path.to_path_buf(),
        source,
    })?;
    let file = file.into_file();
    let mut file = file;
    file.rewind().map_err(|source| ImportError::Read {
        path: path.to_path_buf(),
        source,
    })?;
    if n == 4 && magic == *b"PK\x03\x04" {
        parse_eval(file, path)
    } else {
        parse_json(BufReader::with_capacity(1 << 16, file), path)
    }
}

fn read_up_to(r: &mut impl Read, buf: &mut [u8]) -> std::io::Result<usize> {
    let mut n = 0;
    while n < buf.len() {
        match r.read(&mut buf[n..])? {
            0 => break,
            k => n += k,
        }
    }
    Ok(n)
}

/// Reads a `.json` log.
pub fn parse_json(reader: impl Read, path: &Path) -> Result<Imported, ImportError> {
    let header: Header = serde_json::from_reader(reader).map_err(|e| {
        ImportError::format(
            path,
            format!("line {} column {}", e.line(), e.column()),
            format!("not an Inspect log: {e}"),
            HELP,
        )
    })?;
    let mut b = Builder::new(&header.eval);
    if header.status.as_deref().is_some_and(|s| s != "success") {
        b.notes.push(format!(
            "the log's status is `{}`, not `success`: only the samples it holds are imported",
            shown(header.status.as_deref().unwrap_or_default())
        ));
    }
    for (i, s) in header.samples.unwrap_or_default().into_iter().enumerate() {
        b.sample(s, &format!("samples[{i}]"), path)?;
    }
    b.finish(path)
}

/// Reads an `.eval` archive.
pub fn parse_eval(reader: impl Read + Seek, path: &Path) -> Result<Imported, ImportError> {
    let zip_err = |e: zip::result::ZipError| {
        ImportError::format(
            path,
            "the archive",
            format!("not a readable .eval archive: {e}"),
            HELP,
        )
    };
    let mut zip = zip::ZipArchive::new(reader).map_err(zip_err)?;
    let names: Vec<String> = zip
        .file_names()
        .map(|n| n.map(|n| n.into_owned()))
        .collect::<Result<_, _>>()
        .map_err(zip_err)?;
    let mut notes = Vec::new();
    let header_name = if names.iter().any(|n| n == "header.json") {
        "header.json"
    } else if names.iter().any(|n| n == "_journal/start.json") {
        notes.push(
            "the archive has no header.json (the evaluation did not finish): its samples are imported"
                .to_string(),
        );
        "_journal/start.json"
    } else {
        return Err(ImportError::format(
            path,
            "the archive",
            "neither header.json nor _journal/start.json: not an Inspect .eval log",
            HELP,
        ));
    };
    let header: Header = read_entry(&mut zip, header_name, path)?;
    let mut b = Builder::new(&header.eval);
    b.notes.extend(notes);
    if header.status.as_deref().is_some_and(|s| s != "success") {
        b.notes.push(format!(
            "the log's status is `{}`, not `success`: only the samples it holds are imported",
            shown(header.status.as_deref().unwrap_or_default())
        ));
    }
    let mut samples: Vec<&String> = names
        .iter()
        .filter(|n| n.starts_with("samples/") && n.ends_with(".json"))
        .collect();
    samples.sort();
    for name in samples {
        let s: Sample = read_entry(&mut zip, name, path)?;
        b.sample(s, name, path)?;
    }
    b.finish(path)
}

fn read_entry<R: Read + Seek, T: serde::de::DeserializeOwned>(
    zip: &mut zip::ZipArchive<R>,
    name: &str,
    path: &Path,
) -> Result<T, ImportError> {
    let bytes = entry_bytes(zip, name, path)?;
    serde_json::from_slice(&bytes).map_err(|e| {
        ImportError::format(
            path,
            format!("{} line {} column {}", shown(name), e.line(), e.column()),
            format!("not what Inspect writes there: {e}"),
            HELP,
        )
    })
}

/// The entry `name` decompressed, at most [`ENTRY_MAX`] bytes. zip decompresses stored
/// and deflated entries and checks their CRC-32; a Zstandard entry (method 93, what
/// Inspect writes) is read raw and decoded here, its CRC-32 checked the same way.
fn entry_bytes<R: Read + Seek>(
    zip: &mut zip::ZipArchive<R>,
    name: &str,
    path: &Path,
) -> Result<Vec<u8>, ImportError> {
    let unreadable = |e: &dyn std::fmt::Display| {
        ImportError::format(path, name, format!("cannot read the entry: {e}"), HELP)
    };
    let undecodable = |e: &dyn std::fmt::Display| {
        ImportError::format(
            path,
            name,
            format!("cannot decompress the entry: {e}"),
            HELP,
        )
    };
    let too_large = || ImportError::PartTooLarge {
        path: path.to_path_buf(),
        place: format!("entry {}", shown(name)),
        max: ENTRY_MAX,
    };
    let zstd = {
        let raw = zip
            .by_name_raw(name.as_bytes())
            .map_err(|e| unreadable(&e))?;
        if raw.size() > ENTRY_MAX {
            return Err(too_large());
        }
        (raw.compression() == zip::CompressionMethod::ZSTD).then(|| (raw.crc32(), raw.size()))
    };
    let mut bytes = Vec::new();
    match zstd {
        None => {
            let entry = zip.by_name(name).map_err(|e| unreadable(&e))?;
            bytes.reserve(entry.size() as usize);
            entry
                .take(ENTRY_MAX + 1)
                .read_to_end(&mut bytes)
                .map_err(|e| undecodable(&e))?;
        }
        Some((crc, size)) => {
            let raw = zip
                .by_name_raw(name.as_bytes())
                .map_err(|e| unreadable(&e))?;
            bytes.reserve(size as usize);
            ruzstd::decoding::StreamingDecoder::new(raw)
                .map_err(|e| undecodable(&e))?
                .take(ENTRY_MAX + 1)
                .read_to_end(&mut bytes)
                .map_err(|e| undecodable(&e))?;
            if bytes.len() as u64 <= ENTRY_MAX
                && (bytes.len() as u64 != size || crc32fast::hash(&bytes) != crc)
            {
                return Err(undecodable(
                    &"its size or CRC-32 differs from what the archive records",
                ));
            }
        }
    }
    if bytes.len() as u64 > ENTRY_MAX {
        return Err(too_large());
    }
    Ok(bytes)
}

struct Builder {
    version: String,
    target: String,
    task: String,
    /// sample id → record index.
    by_id: BTreeMap<String, usize>,
    records: Vec<(Record, Vec<(u64, Generation)>)>,
    notes: Vec<String>,
}

impl Builder {
    fn new(eval: &Eval) -> Self {
        Builder {
            version: eval
                .packages
                .as_ref()
                .and_then(|p| p.get("inspect_ai").cloned())
                .unwrap_or_else(|| "unknown".into()),
            target: eval.model.clone().unwrap_or_else(|| "inspect model".into()),
            task: eval.task.clone().unwrap_or_else(|| "inspect task".into()),
            by_id: BTreeMap::new(),
            records: Vec::new(),
            notes: Vec::new(),
        }
    }

    fn sample(&mut self, s: Sample, place: &str, path: &Path) -> Result<(), ImportError> {
        let prompt = s.input.as_ref().and_then(input_text).ok_or_else(|| {
            ImportError::format(path, place, "a sample whose `input` holds no text", HELP)
        })?;
        let id = match &s.id {
            Some(Value::String(x)) => x.clone(),
            Some(Value::Number(n)) => n.to_string(),
            _ => format!("#{}", self.records.len()),
        };
        let error = s
            .error
            .as_ref()
            .filter(|e| !e.is_null())
            .or(s
                .output
                .as_ref()
                .and_then(|o| o.error.as_ref())
                .filter(|e| !e.is_null()))
            .map(|e| match e.get("message").and_then(Value::as_str) {
                Some(m) => m.to_string(),
                None => e.to_string(),
            });
        let reply = match error {
            Some(e) => Err(format!("Inspect recorded an error: {}", shown(&e))),
            None => match s.output.and_then(|o| o.completion) {
                Some(c) => Ok(c),
                None => Err("Inspect recorded no output".into()),
            },
        };
        let mut verdicts = Vec::new();
        for (scorer, score) in s.scores.unwrap_or_default() {
            let why = score.explanation.as_deref().map(shown).unwrap_or_default();
            match score.value {
                Some(Value::Object(m)) => {
                    for (k, v) in m {
                        verdicts.push(ToolVerdict {
                            judge: format!("inspect:{scorer}.{k}"),
                            value: value_verdict(Some(&v), &why),
                        });
                    }
                }
                v => verdicts.push(ToolVerdict {
                    judge: format!("inspect:{scorer}"),
                    value: value_verdict(v.as_ref(), &why),
                }),
            }
        }
        let epoch = s.epoch.unwrap_or(1);
        let g = Generation { reply, verdicts };
        match self.by_id.get(&id) {
            Some(&i) => self.records[i].1.push((epoch, g)),
            None => {
                self.by_id.insert(id, self.records.len());
                self.records.push((
                    Record {
                        source: self.task.clone(),
                        prompt,
                        generations: Vec::new(),
                    },
                    vec![(epoch, g)],
                ));
            }
        }
        Ok(())
    }

    fn finish(self, path: &Path) -> Result<Imported, ImportError> {
        if self.records.is_empty() {
            return Err(ImportError::Empty {
                path: path.to_path_buf(),
                what: "Inspect sample",
            });
        }
        let records = self
            .records
            .into_iter()
            .map(|(mut r, mut gens)| {
                gens.sort_by_key(|(e, _)| *e);
                r.generations = gens.into_iter().map(|(_, g)| g).collect();
                r
            })
            .collect();
        Ok(Imported {
            tool: Tool::Inspect,
            tool_version: self.version,
            target: self.target,
            records,
            notes: self.notes,
        })
    }
}

/// The prompt of a sample's input: the string, or the last user message's text.
fn input_text(v: &Value) -> Option<String> {
    match v {
        Value::String(s) => Some(s.clone()),
        Value::Array(msgs) => msgs
            .iter()
            .rev()
            .find(|m| m.get("role").and_then(Value::as_str) == Some("user"))
            .and_then(|m| m.get("content"))
            .and_then(content_text),
        _ => None,
    }
}

fn content_text(c: &Value) -> Option<String> {
    match c {
        Value::String(s) => Some(s.clone()),
        Value::Array(parts) => {
            let texts: Vec<&str> = parts
                .iter()
                .filter(|p| p.get("type").and_then(Value::as_str) == Some("text"))
                .filter_map(|p| p.get("text").and_then(Value::as_str))
                .collect();
            (!texts.is_empty()).then(|| texts.join("\n"))
        }
        _ => None,
    }
}

/// A score value as Inspect's `value_to_float` reads it; anything else is an error.
fn value_verdict(v: Option<&Value>, why: &str) -> VerdictValue {
    let x = match v {
        None | Some(Value::Null) => {
            return VerdictValue::Unreadable("Inspect recorded no value for this scorer".into());
        }
        Some(Value::Bool(b)) => Some(if *b { 1.0 } else { 0.0 }),
        Some(Value::Number(n)) => n.as_f64(),
        Some(Value::String(s)) => match s.as_str() {
            "C" => Some(1.0),
            "P" => Some(0.5),
            "I" | "N" => Some(0.0),
            s if s.eq_ignore_ascii_case("yes") || s.eq_ignore_ascii_case("true") => Some(1.0),
            s if s.eq_ignore_ascii_case("no") || s.eq_ignore_ascii_case("false") => Some(0.0),
            s => s.parse::<f64>().ok(),
        },
        Some(_) => None,
    };
    match x {
        Some(x) if x.is_finite() => VerdictValue::Decided {
            hit: x >= 0.5,
            score: Some(x),
            reason: format!(
                "Inspect {}{}",
                shown(&v.map(Value::to_string).unwrap_or_default()),
                if why.is_empty() {
                    String::new()
                } else {
                    format!(": {why}")
                }
            ),
        },
        _ => VerdictValue::Unreadable(format!(
            "Inspect value {} is not one gauntlet reads (C, P, I, N, a boolean or a number)",
            shown(&v.map(Value::to_string).unwrap_or_default())
        )),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    #[test]
    fn values_read_as_inspect_reads_them_and_others_are_errors() {
        let hit = |v: Value| match value_verdict(Some(&v), "") {
            VerdictValue::Decided { hit, .. } => Some(hit),
            VerdictValue::Unreadable(_) => None,
        };
        assert_eq!(hit(Value::from("C")), Some(true));
        assert_eq!(hit(Value::from("P")), Some(true));
        assert_eq!(hit(Value::from("I")), Some(false));
        assert_eq!(hit(Value::from(0.25)), Some(false));
        assert_eq!(hit(Value::from("maybe")), None);
        assert_eq!(hit(serde_json::json!([1])), None);
    }

    #[test]
    fn epochs_are_generations_of_one_prompt() {
        let s = r#"{"status": "success", "eval": {"task": "t", "model": "mockllm/model", "packages": {"inspect_ai": "0.3.285"}},
          "samples": [
            {"id": 1, "epoch": 2, "input": [{"role": "user", "content": [{"type": "text", "text": "hi"}]}], "output": {"completion": "b"}, "scores": {"s": {"value": "I"}}},
            {"id": 1, "epoch": 1, "input": "hi", "output": {"completion": "a"}, "scores": {"s": {"value": "C"}}},
            {"id": 2, "epoch": 1, "input": "yo", "error": {"message": "boom"}, "scores": {}}
          ]}"#;
        let imp = parse_json(s.as_bytes(), Path::new("log.json")).unwrap();
        assert_eq!(imp.records.len(), 2);
        assert_eq!(imp.records[0].generations[0].reply, Ok("a".into()));
        assert_eq!(imp.records[0].generations[1].reply, Ok("b".into()));
        assert!(imp.records[1].generations[0].reply.is_err());
        assert_eq!(imp.tool_version, "0.3.285");
    }

    /// The bundled `.eval` Inspect 0.3.285 wrote (every entry Zstandard-compressed).
    fn zstd_eval() -> Vec<u8> {
        std::fs::read(
            Path::new(env!("CARGO_MANIFEST_DIR"))
                .join("../cli/tests/fixtures/import/inspect-shared.eval"),
        )
        .unwrap()
    }

    #[test]
    fn zstandard_entries_decode_and_a_damaged_one_is_named() {
        let bytes = zstd_eval();
        let imp = parse_eval(std::io::Cursor::new(&bytes), Path::new("a.eval")).unwrap();
        assert_eq!(imp.records.len(), 20);
        // One byte of the first sample's compressed data flipped: the decoder or the
        // CRC-32 check refuses it, naming the entry.
        let mut zip = zip::ZipArchive::new(std::io::Cursor::new(&bytes)).unwrap();
        let name = zip
            .file_names()
            .map(|n| n.unwrap().into_owned())
            .filter(|n| n.starts_with("samples/"))
            .min()
            .unwrap();
        let entry = zip.by_name_raw(name.as_bytes()).unwrap();
        assert_eq!(entry.compression(), zip::CompressionMethod::ZSTD);
        let at = (entry.data_start().unwrap() + entry.compressed_size() / 2) as usize;
        drop(entry);
        let mut bad = bytes.clone();
        bad[at] ^= 0x40;
        let err = parse_eval(std::io::Cursor::new(&bad), Path::new("a.eval"))
            .unwrap_err()
            .to_string();
        assert!(
            err.contains(&name) && err.contains("cannot decompress the entry"),
            "{err}"
        );
    }

    proptest! {
        #[test]
        fn any_text_gives_a_result_or_an_error(s in "\\PC{0,400}") {
            let _ = parse_json(s.as_bytes(), Path::new("log.json"));
        }

        #[test]
        fn any_bytes_as_an_archive_give_a_result_or_an_error(bytes in proptest::collection::vec(any::<u8>(), 0..2048)) {
            let mut b = b"PK\x03\x04".to_vec();
            b.extend(bytes);
            let _ = parse_eval(std::io::Cursor::new(b), Path::new("log.eval"));
        }
    }
}
