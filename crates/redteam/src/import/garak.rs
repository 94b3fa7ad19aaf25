//! garak's `report.jsonl`: one JSON object a line, `entry_type` saying what it is.
//!
//! garak writes each attempt twice: with `status: 1` when the generator has replied, and
//! again with `status: 2` once the detectors have scored it (`detector_results`: one
//! score per output, per detector). The status-2 line is the attempt; one left at
//! status 1 (a run cut short) is imported with its replies and no verdict, so each of
//! its verdicts is an error, never a hit. A detector score is a hit when it is at or
//! above the run's `eval_threshold` (0.5 unless the setup line says otherwise), as
//! garak's evaluator counts it; a `null` score (garak's "none") is an error.
//!
//! The file streams one line at a time (each line at most [`LINE_MAX`]); a last line
//! cut short is a named partial import, a bad line anywhere else an error naming it.

use super::ImportError;
use super::record::{Generation, Imported, Record, Tool, ToolVerdict, VerdictValue, open, shown};
use serde_json::Value;
use std::collections::{BTreeMap, HashMap};
use std::io::{BufRead, BufReader, Read};
use std::path::Path;

/// The largest report accepted.
pub const FILE_MAX: u64 = 64 << 30;
/// The longest line accepted.
pub const LINE_MAX: u64 = 256 << 20;
const HELP: &str =
    "give the report.jsonl garak wrote (`garak … --report_prefix NAME` writes NAME.report.jsonl)";

/// Reads a garak report file.
pub fn parse_file(path: &Path) -> Result<Imported, ImportError> {
    let file = open(path, "garak", FILE_MAX)?;
    parse(file, path)
}

/// Reads a garak report from `reader`; `path` names it in messages.
pub fn parse(reader: impl Read, path: &Path) -> Result<Imported, ImportError> {
    let mut reader = BufReader::with_capacity(1 << 16, reader);
    let mut st = State::default();
    let mut line_no = 0u64;
    let mut buf = Vec::new();
    loop {
        buf.clear();
        let n = (&mut reader)
            .take(LINE_MAX + 1)
            .read_until(b'\n', &mut buf)
            .map_err(|source| ImportError::Read {
                path: path.to_path_buf(),
                source,
            })?;
        if n == 0 {
            break;
        }
        line_no += 1;
        if n as u64 > LINE_MAX {
            return Err(ImportError::PartTooLarge {
                path: path.to_path_buf(),
                place: format!("line {line_no}"),
                max: LINE_MAX,
            });
        }
        let complete = buf.last() == Some(&b'\n');
        let text = buf.trim_ascii();
        if text.is_empty() {
            continue;
        }
        let v: Value = match serde_json::from_slice(text) {
            Ok(v) => v,
            Err(e) => {
                // A last line without its newline that does not parse: the run was cut
                // short while writing it.
                let at_end = !complete && reader.fill_buf().map(|b| b.is_empty()).unwrap_or(false);
                if at_end {
                    st.notes.push(format!(
                        "line {line_no} is cut short (the report ends mid-line): not imported"
                    ));
                    break;
                }
                return Err(ImportError::format(
                    path,
                    format!("line {line_no}"),
                    format!("not a JSON object: {e}"),
                    HELP,
                ));
            }
        };
        st.line(&v, line_no, path)?;
    }
    st.finish(path)
}

#[derive(Default)]
struct State {
    versions: Vec<String>,
    runs: Vec<String>,
    target: Option<String>,
    threshold: Option<f64>,
    /// Status-2 attempts, in file order.
    records: Vec<Record>,
    /// uuids seen at status 2.
    evaluated: HashMap<String, u64>,
    /// Status-1 attempts not (yet) seen at status 2: uuid → (line, record).
    pending: BTreeMap<(u64, String), Record>,
    pending_by_uuid: HashMap<String, u64>,
    notes: Vec<String>,
    seen_setup: bool,
}

impl State {
    fn line(&mut self, v: &Value, line: u64, path: &Path) -> Result<(), ImportError> {
        let Some(kind) = v.get("entry_type").and_then(Value::as_str) else {
            return Err(ImportError::format(
                path,
                format!("line {line}"),
                "no `entry_type` (every line of a garak report has one)",
                HELP,
            ));
        };
        match kind {
            "start_run setup" => {
                self.seen_setup = true;
                if let Some(ver) = v.get("_config.version").and_then(Value::as_str) {
                    push_new(&mut self.versions, ver);
                }
                let ty =
                    str_of(v, "plugins.target_type").or_else(|| str_of(v, "plugins.model_type"));
                let name =
                    str_of(v, "plugins.target_name").or_else(|| str_of(v, "plugins.model_name"));
                let target = match (ty, name) {
                    (Some(t), Some(n)) => format!("{t}:{n}"),
                    (Some(t), None) => t.to_string(),
                    (None, Some(n)) => n.to_string(),
                    (None, None) => "garak target".to_string(),
                };
                if let Some(prev) = &self.target
                    && *prev != target
                {
                    return Err(ImportError::Mixed {
                        path: path.to_path_buf(),
                        what: "targets",
                        values: vec![prev.clone(), target],
                    });
                }
                self.target = Some(target);
                if let Some(t) = v.get("run.eval_threshold").and_then(Value::as_f64) {
                    self.threshold = Some(t);
                }
            }
            "init" => {
                if let Some(ver) = v.get("garak_version").and_then(Value::as_str) {
                    push_new(&mut self.versions, ver);
                }
                if let Some(run) = v.get("run").and_then(Value::as_str) {
                    push_new(&mut self.runs, run);
                }
            }
            "attempt" => self.attempt(v, line, path)?,
            _ => {}
        }
        if self.versions.len() > 1 {
            return Err(ImportError::Mixed {
                path: path.to_path_buf(),
                what: "garak versions",
                values: self.versions.clone(),
            });
        }
        if self.runs.len() > 1 {
            return Err(ImportError::Mixed {
                path: path.to_path_buf(),
                what: "garak runs",
                values: self.runs.clone(),
            });
        }
        Ok(())
    }

    fn attempt(&mut self, v: &Value, line: u64, path: &Path) -> Result<(), ImportError> {
        let place = format!("line {line}");
        let bad = |m: String| ImportError::format(path, place.clone(), m, HELP);
        let status = v.get("status").and_then(Value::as_i64);
        let uuid = v
            .get("uuid")
            .and_then(Value::as_str)
            .map(str::to_string)
            .unwrap_or_else(|| format!("line-{line}"));
        let probe = str_of(v, "probe_classname")
            .ok_or_else(|| bad("an attempt without `probe_classname`".into()))?
            .to_string();
        let prompt = prompt_text(v.get("prompt"))
            .ok_or_else(|| bad("an attempt whose `prompt` holds no text turn".into()))?;
        let outputs: Vec<Result<String, String>> = match v.get("outputs") {
            Some(Value::Array(a)) => a.iter().map(output_text).collect(),
            _ => return Err(bad("an attempt without an `outputs` list".into())),
        };
        match status {
            Some(1) => {
                if self.evaluated.contains_key(&uuid) || self.pending_by_uuid.contains_key(&uuid) {
                    return Ok(());
                }
                let generations = outputs
                    .into_iter()
                    .map(|reply| Generation {
                        reply,
                        verdicts: Vec::new(),
                    })
                    .collect();
                self.pending_by_uuid.insert(uuid.clone(), line);
                self.pending.insert(
                    (line, uuid),
                    Record {
                        source: probe,
                        prompt,
                        generations,
                    },
                );
            }
            Some(2) => {
                if let Some(first) = self.evaluated.get(&uuid) {
                    return Err(bad(format!(
                        "attempt {} is evaluated twice (first on line {first}); is this two reports joined?",
                        shown(&uuid)
                    )));
                }
                self.evaluated.insert(uuid.clone(), line);
                if let Some(l) = self.pending_by_uuid.remove(&uuid) {
                    self.pending.remove(&(l, uuid));
                }
                let threshold = self.threshold.unwrap_or(0.5);
                let mut dets: Vec<(&String, &Value)> = match v.get("detector_results") {
                    Some(Value::Object(m)) => m.iter().collect(),
                    Some(Value::Null) | None => Vec::new(),
                    Some(_) => return Err(bad("`detector_results` is not an object".into())),
                };
                dets.sort_by(|a, b| a.0.cmp(b.0));
                let generations = outputs
                    .into_iter()
                    .enumerate()
                    .map(|(i, reply)| Generation {
                        reply,
                        verdicts: dets
                            .iter()
                            .map(|(d, scores)| ToolVerdict {
                                judge: format!("garak:{d}"),
                                value: detector_value(scores, i, threshold, d),
                            })
                            .collect(),
                    })
                    .collect();
                self.records.push(Record {
                    source: probe,
                    prompt,
                    generations,
                });
            }
            other => {
                return Err(bad(format!(
                    "an attempt with status {} (garak writes 1 when replied, 2 when evaluated)",
                    other.map_or("(none)".into(), |s| s.to_string())
                )));
            }
        }
        Ok(())
    }

    fn finish(mut self, path: &Path) -> Result<Imported, ImportError> {
        if !self.pending.is_empty() {
            self.notes.push(format!(
                "{} attempt(s) were never evaluated (status 1 without status 2: the run was cut short); imported with no verdict, so each verdict is an error",
                self.pending.len()
            ));
        }
        // The detectors of each probe (of the run when the probe has no evaluated
        // attempt), so an unevaluated attempt errors under each of them.
        let mut judges: Vec<String> = Vec::new();
        let mut by_probe: HashMap<&str, Vec<String>> = HashMap::new();
        for r in &self.records {
            let of_probe = by_probe.entry(r.source.as_str()).or_default();
            for g in &r.generations {
                for v in &g.verdicts {
                    if !judges.contains(&v.judge) {
                        judges.push(v.judge.clone());
                    }
                    if !of_probe.contains(&v.judge) {
                        of_probe.push(v.judge.clone());
                    }
                }
            }
        }
        let by_probe: HashMap<String, Vec<String>> = by_probe
            .into_iter()
            .map(|(k, v)| (k.to_string(), v))
            .collect();
        for (_, mut r) in std::mem::take(&mut self.pending) {
            let dets = by_probe.get(&r.source).unwrap_or(&judges);
            for g in &mut r.generations {
                g.verdicts = dets
                    .iter()
                    .map(|j| ToolVerdict {
                        judge: j.clone(),
                        value: VerdictValue::Unreadable(
                            "garak never evaluated this attempt (status 1 only)".into(),
                        ),
                    })
                    .collect();
            }
            self.records.push(r);
        }
        if self.records.is_empty() {
            return Err(ImportError::Empty {
                path: path.to_path_buf(),
                what: "garak attempt",
            });
        }
        if !self.seen_setup && self.versions.is_empty() {
            return Err(ImportError::format(
                path,
                "line 1",
                "no `start_run setup` or `init` line: not a garak report",
                HELP,
            ));
        }
        Ok(Imported {
            tool: Tool::Garak,
            tool_version: self.versions.pop().unwrap_or_else(|| "unknown".into()),
            target: self.target.unwrap_or_else(|| "garak target".into()),
            records: self.records,
            notes: self.notes,
        })
    }
}

fn push_new(v: &mut Vec<String>, s: &str) {
    if !v.iter().any(|x| x == s) {
        v.push(s.to_string());
    }
}

fn str_of<'a>(v: &'a Value, key: &str) -> Option<&'a str> {
    v.get(key).and_then(Value::as_str)
}

/// The prompt's text: a string (garak before 0.11) or a conversation whose last user
/// turn holds it.
fn prompt_text(p: Option<&Value>) -> Option<String> {
    match p? {
        Value::String(s) => Some(s.clone()),
        Value::Object(o) => {
            let turns = o.get("turns")?.as_array()?;
            turns
                .iter()
                .rev()
                .find(|t| t.get("role").and_then(Value::as_str) == Some("user"))
                .or_else(|| turns.last())
                .and_then(|t| t.get("content"))
                .and_then(message_text)
        }
        _ => None,
    }
}

fn message_text(c: &Value) -> Option<String> {
    match c {
        Value::String(s) => Some(s.clone()),
        Value::Object(o) => o.get("text").and_then(Value::as_str).map(str::to_string),
        _ => None,
    }
}

fn output_text(o: &Value) -> Result<String, String> {
    match o {
        Value::Null => Err("the generator returned no output (null)".into()),
        other => match message_text(other) {
            Some(t) => Ok(t),
            None => Err("the generator's output holds no text".into()),
        },
    }
}

fn detector_value(scores: &Value, i: usize, threshold: f64, det: &str) -> VerdictValue {
    let Some(list) = scores.as_array() else {
        return VerdictValue::Unreadable(format!("detector {} gave no score list", shown(det)));
    };
    match list.get(i) {
        None => VerdictValue::Unreadable(format!(
            "detector {} scored {} of the outputs, not output {}",
            shown(det),
            list.len(),
            i + 1
        )),
        Some(Value::Null) => VerdictValue::Unreadable(format!(
            "detector {} gave no score (null) for output {}",
            shown(det),
            i + 1
        )),
        Some(s) => match s.as_f64() {
            Some(x) if x.is_finite() => VerdictValue::Decided {
                hit: x >= threshold,
                score: Some(x),
                reason: format!("garak {}: {x} (threshold {threshold})", shown(det)),
            },
            _ => VerdictValue::Unreadable(format!(
                "detector {} gave a score that is not a number",
                shown(det)
            )),
        },
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    fn parse_str(s: &str) -> Result<Imported, ImportError> {
        parse(s.as_bytes(), Path::new("report.jsonl"))
    }

    const SETUP: &str = r#"{"entry_type": "start_run setup", "_config.version": "0.17.1", "plugins.target_type": "test.Repeat", "plugins.target_name": null}"#;

    fn attempt(uuid: &str, status: u8, prompt: &str, scores: &str) -> String {
        format!(
            r#"{{"entry_type": "attempt", "uuid": "{uuid}", "status": {status}, "probe_classname": "p.P", "prompt": {{"turns": [{{"role": "user", "content": {{"text": "{prompt}"}}}}]}}, "outputs": [{{"text": "ok"}}, null], "detector_results": {scores}}}"#
        )
    }

    #[test]
    fn status_two_is_the_attempt_and_null_scores_are_errors() {
        let s = [
            SETUP.to_string(),
            attempt("a", 1, "hi", "{}"),
            attempt("a", 2, "hi", r#"{"d.D": [0.9, null]}"#),
        ]
        .join("\n");
        let imp = parse_str(&s).unwrap();
        assert_eq!(imp.records.len(), 1);
        let g = &imp.records[0].generations;
        assert!(matches!(
            g[0].verdicts[0].value,
            VerdictValue::Decided { hit: true, .. }
        ));
        assert!(matches!(
            g[1].verdicts[0].value,
            VerdictValue::Unreadable(_)
        ));
        assert!(g[1].reply.is_err());
        assert_eq!(imp.target, "test.Repeat");
    }

    #[test]
    fn an_attempt_never_evaluated_errors_under_every_detector() {
        let s = [
            SETUP.to_string(),
            attempt("a", 2, "one", r#"{"d.D": [0.1, 0.2]}"#),
            attempt("b", 1, "two", "{}"),
        ]
        .join("\n");
        let imp = parse_str(&s).unwrap();
        assert_eq!(imp.records.len(), 2);
        assert!(matches!(
            imp.records[1].generations[0].verdicts[0].value,
            VerdictValue::Unreadable(_)
        ));
        assert_eq!(imp.notes.len(), 1);
    }

    #[test]
    fn a_cut_short_last_line_is_a_partial_import_and_a_bad_middle_line_an_error() {
        let good = [
            SETUP.to_string(),
            attempt("a", 2, "one", r#"{"d.D": [0, 0]}"#),
        ]
        .join("\n");
        let cut = format!("{good}\n{{\"entry_type\": \"attem");
        let imp = parse_str(&cut).unwrap();
        assert_eq!(imp.records.len(), 1);
        assert!(
            imp.notes[0].contains("line 3 is cut short"),
            "{:?}",
            imp.notes
        );
        let bad = format!("{SETUP}\n{{oops\n{}", attempt("a", 2, "one", "{}"));
        let e = parse_str(&bad).unwrap_err().to_string();
        assert!(e.contains("line 2"), "{e}");
    }

    #[test]
    fn mixed_versions_are_refused() {
        let s = format!(
            "{SETUP}\n{}\n{}",
            r#"{"entry_type": "init", "garak_version": "0.17.1", "run": "r1"}"#,
            r#"{"entry_type": "init", "garak_version": "0.9.0", "run": "r2"}"#
        );
        let e = parse_str(&s).unwrap_err().to_string();
        assert!(e.contains("mixes garak versions"), "{e}");
    }

    proptest! {
        #[test]
        fn any_bytes_give_a_result_or_an_error(bytes in proptest::collection::vec(any::<u8>(), 0..2048)) {
            let _ = parse(bytes.as_slice(), Path::new("r.jsonl"));
        }

        #[test]
        fn any_lines_after_a_setup_give_a_result_or_an_error(lines in proptest::collection::vec("[ -~]{0,80}", 0..8)) {
            let s = format!("{SETUP}\n{}", lines.join("\n"));
            let _ = parse_str(&s);
        }
    }
}
