//! The transcript browser's reader: pages of `transcripts.jsonl` streamed from disk,
//! never loaded whole, so a run of a million attempts pages as fast as a small one.
//!
//! - Unfiltered pages are found through a sparse line index: the byte offset of every
//!   [`STRIDE`]th line, built in memory by one `memchr` pass over the file the first time
//!   a run's transcripts are opened (1,000,000 lines → ~1,000 offsets, 8 KiB). Until it is
//!   ready a page is found by skipping lines from the start. Nothing is written next to
//!   the run: the dashboard is read-only.
//! - Filtered pages (search text, verdict outcome) scan forward from a cursor line under
//!   a time budget and return the line to continue from, so every request is bounded
//!   whatever the file's size and however rare the match.
//! - A line longer than [`MAX_LINE`] is counted and skipped, never buffered whole.

use gauntlet_core::outcome::Outcome;
use gauntlet_results::{TranscriptRecord, TranscriptUnit};
use memchr::memmem;
use std::fs::File;
use std::io::{self, BufRead, BufReader, Read, Seek, SeekFrom};
use std::path::Path;
use std::time::{Duration, Instant};

/// Attempts per page.
pub const PAGE: u64 = 50;
/// The index keeps the offset of every STRIDE-th line.
pub const STRIDE: u64 = 1024;
/// Longest transcript line read (longer lines are skipped and counted).
pub const MAX_LINE: usize = 4 << 20;
/// Characters of the final reply shown in a page's row.
const PREVIEW_CHARS: usize = 160;

/// Offsets of lines 0, STRIDE, 2·STRIDE, … and the line count, as of `len` bytes.
#[derive(Debug, Clone, Default)]
pub struct LineIndex {
    pub offsets: Vec<u64>,
    pub lines: u64,
    pub len: u64,
}

/// Opens a transcript without blocking, refusing anything but a regular file (read a
/// line or a window at a time by the callers, each line capped).
fn open(path: &Path) -> io::Result<File> {
    gauntlet_core::files::open(path, gauntlet_core::files::Kind::TRANSCRIPTS)
        .map(gauntlet_core::files::Capped::into_file)
        .map_err(gauntlet_core::files::ReadError::into_io)
}

/// Builds the sparse index of `path` by one pass over its bytes.
pub fn build_index(path: &Path) -> io::Result<LineIndex> {
    let mut f = open(path)?;
    let mut buf = vec![0u8; 1 << 20];
    let mut idx = LineIndex {
        offsets: vec![0],
        ..Default::default()
    };
    let (mut pos, mut lines) = (0u64, 0u64);
    loop {
        let n = f.read(&mut buf)?;
        if n == 0 {
            break;
        }
        for i in memchr::memchr_iter(b'\n', &buf[..n]) {
            lines += 1;
            if lines.is_multiple_of(STRIDE) {
                idx.offsets.push(pos + i as u64 + 1);
            }
        }
        pos += n as u64;
    }
    // A final line without a newline (a run still writing) is not counted: it may be
    // half a line.
    idx.lines = lines;
    idx.len = pos;
    Ok(idx)
}

/// What to show.
#[derive(Debug, Clone, Default)]
pub struct Filter {
    /// Case-insensitive text to find anywhere in the line (ASCII case folding).
    pub q: String,
    /// `success`, `failure` or `error`: the verdict of `judge` (of some judge when no
    /// judge is chosen) on the attempt.
    pub outcome: String,
    /// Only attempts of this attack label (exact).
    pub attack: String,
    /// Only attempts against this target label (exact).
    pub target: String,
    /// The judge whose verdict `outcome` filters on.
    pub judge: String,
    /// Only attempts the judges disagree on (one says success, another failure).
    pub disagree: bool,
}

impl Filter {
    pub fn is_empty(&self) -> bool {
        self.q.is_empty()
            && self.outcome.is_empty()
            && self.attack.is_empty()
            && self.target.is_empty()
            && self.judge.is_empty()
            && !self.disagree
    }

    /// Does a parsed attempt pass the structured parts of the filter?
    pub fn admits(&self, it: &Item) -> bool {
        if !self.attack.is_empty() && it.attack != self.attack {
            return false;
        }
        if !self.target.is_empty() && it.target != self.target {
            return false;
        }
        if !self.outcome.is_empty() {
            let ok = it
                .verdicts
                .iter()
                .any(|(j, o)| *o == self.outcome && (self.judge.is_empty() || *j == self.judge));
            if !ok {
                return false;
            }
        } else if !self.judge.is_empty() && !it.verdicts.iter().any(|(j, _)| *j == self.judge) {
            return false;
        }
        if self.disagree && !it.disagree() {
            return false;
        }
        true
    }
}

/// One attempt as a page lists it.
#[derive(Debug, Clone, serde::Serialize)]
pub struct Item {
    pub line: u64,
    pub trial: Option<u64>,
    pub behavior_id: String,
    pub attack: String,
    pub target: String,
    pub expected: String,
    pub attempt: Option<u64>,
    /// `judge: outcome` for each verdict.
    pub verdicts: Vec<(String, String)>,
    pub error: Option<String>,
    /// The start of the final reply.
    pub preview: String,
    /// The start of the user turn the final reply answered.
    pub prompt: String,
    /// The behavior's own prompt, when the line records it (an attack rewrote it).
    pub goal: String,
}

impl Item {
    /// One judge calls the attempt a success and another a failure.
    pub fn disagree(&self) -> bool {
        let s = self.verdicts.iter().any(|(_, o)| o == "success");
        let f = self.verdicts.iter().any(|(_, o)| o == "failure");
        s && f
    }
}

/// A page of attempts.
#[derive(Debug, Clone, Default, serde::Serialize)]
pub struct Page {
    pub items: Vec<Item>,
    /// The first line this page looked at.
    pub from: u64,
    /// Where the next page starts (`None`: the end of the file was reached).
    pub next: Option<u64>,
    /// Lines scanned by this request.
    pub scanned: u64,
    /// Lines in the file, when the index is ready.
    pub total: Option<u64>,
    /// The time budget ran out before a full page was found.
    pub budget_hit: bool,
    /// Lines over [`MAX_LINE`] or not valid JSON, skipped.
    pub skipped: u64,
}

/// Reads one line into `buf` (without the newline), keeping at most `MAX_LINE` bytes.
/// Returns `None` at the end of the file, else whether the line fit.
fn read_line_capped<R: BufRead>(r: &mut R, buf: &mut Vec<u8>) -> io::Result<Option<bool>> {
    buf.clear();
    let mut any = false;
    let mut fit = true;
    loop {
        let chunk = r.fill_buf()?;
        if chunk.is_empty() {
            return Ok(if any { Some(fit) } else { None });
        }
        any = true;
        let (take, done) = match memchr::memchr(b'\n', chunk) {
            Some(i) => (i, true),
            None => (chunk.len(), false),
        };
        if fit {
            if buf.len() + take > MAX_LINE {
                fit = false;
                buf.clear();
            } else {
                buf.extend_from_slice(&chunk[..take]);
            }
        }
        r.consume(if done { take + 1 } else { take });
        if done {
            return Ok(Some(fit));
        }
    }
}

/// Skips `n` lines; returns how many were skipped (fewer at the end of the file).
fn skip_lines<R: BufRead>(r: &mut R, n: u64) -> io::Result<u64> {
    let mut left = n;
    while left > 0 {
        let chunk = r.fill_buf()?;
        if chunk.is_empty() {
            break;
        }
        let mut consumed = chunk.len();
        for i in memchr::memchr_iter(b'\n', chunk) {
            left -= 1;
            if left == 0 {
                consumed = i + 1;
                break;
            }
        }
        r.consume(consumed);
    }
    Ok(n - left)
}

/// A reader positioned at line `line` (through the index when there is one).
fn open_at(
    path: &Path,
    index: Option<&LineIndex>,
    line: u64,
) -> io::Result<(BufReader<File>, u64)> {
    let mut f = open(path)?;
    let (mut at, offset) = match index {
        Some(ix) if !ix.offsets.is_empty() => {
            let k = ((line / STRIDE) as usize).min(ix.offsets.len() - 1);
            (k as u64 * STRIDE, ix.offsets[k])
        }
        _ => (0, 0),
    };
    f.seek(SeekFrom::Start(offset))?;
    let mut r = BufReader::with_capacity(256 << 10, f);
    at += skip_lines(&mut r, line - at)?;
    Ok((r, at))
}

fn outcome_needle(outcome: &str) -> Option<Vec<u8>> {
    match outcome {
        "success" | "failure" | "error" => Some(format!("\"outcome\":\"{outcome}\"").into_bytes()),
        _ => None,
    }
}

/// The page of attempts starting at line `from` that pass `filter`, found within
/// `budget`.
pub fn page(
    path: &Path,
    index: Option<&LineIndex>,
    filter: &Filter,
    from: u64,
    budget: Duration,
) -> io::Result<Page> {
    let started = Instant::now();
    let (mut r, at) = open_at(path, index, from)?;
    let mut out = Page {
        from: at,
        total: index.map(|i| i.lines),
        ..Default::default()
    };
    let q = filter.q.to_ascii_lowercase();
    let finder = (!q.is_empty()).then(|| memmem::Finder::new(q.as_bytes()).into_owned());
    let needle = outcome_needle(&filter.outcome);
    let field = |k: &str, v: &str| {
        (!v.is_empty()).then(|| {
            let mut n = format!("\"{k}\":").into_bytes();
            n.extend_from_slice(serde_json::to_string(v).unwrap_or_default().as_bytes());
            n
        })
    };
    // Byte needles rule lines out before any parse; the parsed item then decides.
    let finders: Vec<memmem::Finder<'static>> = [
        needle,
        field("attack_name", &filter.attack),
        field("target_name", &filter.target),
        field("judge", &filter.judge),
        filter.disagree.then(|| b"\"outcome\":\"failure\"".to_vec()),
        filter.disagree.then(|| b"\"outcome\":\"success\"".to_vec()),
    ]
    .into_iter()
    .flatten()
    .map(|n| memmem::Finder::new(&n).into_owned())
    .collect();
    let mut line_no = at;
    let mut buf = Vec::new();
    let mut lower = Vec::new();
    loop {
        if out.items.len() as u64 >= PAGE {
            out.next = Some(line_no);
            break;
        }
        if !filter.is_empty()
            && out.scanned.is_multiple_of(4096)
            && out.scanned > 0
            && started.elapsed() > budget
        {
            out.budget_hit = true;
            out.next = Some(line_no);
            break;
        }
        let Some(fit) = read_line_capped(&mut r, &mut buf)? else {
            break;
        };
        let this = line_no;
        line_no += 1;
        out.scanned += 1;
        if !fit {
            out.skipped += 1;
            continue;
        }
        if finders.iter().any(|f| f.find(&buf).is_none()) {
            continue;
        }
        if let Some(f) = &finder {
            lower.clear();
            lower.extend(buf.iter().map(u8::to_ascii_lowercase));
            if f.find(&lower).is_none() {
                continue;
            }
        }
        match serde_json::from_slice::<TranscriptRecord>(&buf) {
            Ok(v) => {
                let item = item(this, &v);
                if !filter.admits(&item) {
                    continue;
                }
                out.items.push(item);
            }
            Err(_) => out.skipped += 1,
        }
    }
    // At the end of the file there is no next page.
    if out.next.is_some()
        && !out.budget_hit
        && out.items.len() as u64 >= PAGE
        && r.fill_buf()?.is_empty()
    {
        out.next = None;
    }
    Ok(out)
}

fn truncate(s: &str, n: usize) -> String {
    match s.char_indices().nth(n) {
        None => s.to_owned(),
        Some((cut, _)) => format!("{}…", &s[..cut]),
    }
}

/// The row a page shows for one transcript line.
pub fn item(line: u64, v: &TranscriptRecord) -> Item {
    let preview = v
        .last_reply()
        .or(v.transcript.last())
        .map(|m| truncate(&m.content, PREVIEW_CHARS))
        .unwrap_or_default();
    let prompt = v
        .last_prompt()
        .map(|m| truncate(&m.content, PREVIEW_CHARS))
        .unwrap_or_default();
    Item {
        line,
        trial: v.trial.map(u64::from),
        behavior_id: v.behavior_id.clone(),
        attack: v.attack_name.clone(),
        target: v.target_name.clone(),
        expected: v.expected.as_str().to_owned(),
        attempt: Some(u64::from(v.attempt)),
        verdicts: v
            .verdicts
            .iter()
            .map(|x| (x.judge.clone(), x.outcome.as_str().to_owned()))
            .collect(),
        error: v.error.clone(),
        preview,
        prompt,
        goal: truncate(v.goal.as_deref().unwrap_or(""), PREVIEW_CHARS),
    }
}

/// Why a transcript line that exists is not shown ([`line`]).
#[derive(Debug, thiserror::Error)]
pub enum LineError {
    /// The line is longer than the cap.
    #[error("line {line} is longer than {} MiB: not shown", MAX_LINE >> 20)]
    TooLong { line: u64 },
    /// The line is not JSON, or not a transcript line.
    #[error("line {line} is not a transcript line: {source}")]
    Json {
        line: u64,
        #[source]
        source: serde_json::Error,
    },
}

/// Line `line` of the file, read as `T` (a [`TranscriptRecord`]); `Ok(None)` when
/// there is no such line.
pub fn line<T: serde::de::DeserializeOwned>(
    path: &Path,
    index: Option<&LineIndex>,
    line: u64,
) -> io::Result<Option<Result<T, LineError>>> {
    let (mut r, at) = open_at(path, index, line)?;
    if at != line {
        return Ok(None);
    }
    let mut buf = Vec::new();
    match read_line_capped(&mut r, &mut buf)? {
        None => Ok(None),
        Some(false) => Ok(Some(Err(LineError::TooLong { line }))),
        Some(true) => Ok(Some(
            serde_json::from_slice(&buf).map_err(|source| LineError::Json { line, source }),
        )),
    }
}

/// `(attack, target, judge)` and its counts: attempts, success, failure, error.
pub type PartialCell = ((String, String, String), [u64; 4]);

/// Per cell `(attack, target, judge)`: attempts and outcome counts over the first lines
/// of a (live) transcript, within `budget`. Returns the counts and the lines read.
pub fn partial_cells(path: &Path, budget: Duration) -> io::Result<(Vec<PartialCell>, u64, bool)> {
    let started = Instant::now();
    let mut r = BufReader::with_capacity(256 << 10, open(path)?);
    let mut cells: Vec<PartialCell> = Vec::new();
    let mut buf = Vec::new();
    let mut lines = 0u64;
    let mut cut = false;
    while let Some(fit) = read_line_capped(&mut r, &mut buf)? {
        lines += 1;
        if lines.is_multiple_of(1024) && started.elapsed() > budget {
            cut = true;
            break;
        }
        if !fit {
            continue;
        }
        let Ok(v) = serde_json::from_slice::<TranscriptUnit>(&buf) else {
            continue;
        };
        for verdict in &v.verdicts {
            let key = (
                v.attack_name.clone(),
                v.target_name.clone(),
                verdict.judge.clone(),
            );
            let slot = match cells.iter().position(|(k, _)| *k == key) {
                Some(i) => i,
                None => {
                    cells.push((key, [0; 4]));
                    cells.len() - 1
                }
            };
            let c = &mut cells[slot].1;
            c[0] += 1;
            match verdict.outcome {
                Outcome::Success => c[1] += 1,
                Outcome::Failure => c[2] += 1,
                _ => c[3] += 1,
            }
        }
    }
    Ok((cells, lines, cut))
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::io::Write;

    fn file(lines: u64, extra: &str) -> tempfile::NamedTempFile {
        let mut f = tempfile::NamedTempFile::new().unwrap();
        for i in 0..lines {
            let outcome = if i % 3 == 0 { "success" } else { "failure" };
            writeln!(
                f,
                "{{\"behavior_id\":\"b{i}\",\"attack_name\":\"static\",\"target_name\":\"t\",\"expected\":\"should_refuse\",\"attempt\":0,\"transcript\":[{{\"role\":\"assistant\",\"content\":\"reply {i}\"}}],\"verdicts\":[{{\"judge\":\"j\",\"outcome\":\"{outcome}\"}}]}}"
            )
            .unwrap();
        }
        f.write_all(extra.as_bytes()).unwrap();
        f
    }

    #[test]
    fn index_counts_lines_and_pages_agree_with_or_without_it() {
        let f = file(5000, "");
        let ix = build_index(f.path()).unwrap();
        assert_eq!(ix.lines, 5000);
        assert_eq!(ix.offsets.len(), 5); // lines 0, 1024, 2048, 3072, 4096
        for from in [0, 1023, 1024, 2100, 4990] {
            let a = page(
                f.path(),
                Some(&ix),
                &Filter::default(),
                from,
                Duration::from_secs(5),
            )
            .unwrap();
            let b = page(
                f.path(),
                None,
                &Filter::default(),
                from,
                Duration::from_secs(5),
            )
            .unwrap();
            assert_eq!(a.items.len(), b.items.len());
            assert_eq!(a.items[0].behavior_id, format!("b{from}"));
            assert_eq!(a.items[0].line, from);
            assert_eq!(b.items[0].behavior_id, format!("b{from}"));
        }
        let last = page(
            f.path(),
            Some(&ix),
            &Filter::default(),
            4990,
            Duration::from_secs(5),
        )
        .unwrap();
        assert_eq!(last.items.len(), 10);
        assert_eq!(last.next, None);
        let l: TranscriptRecord = line(f.path(), Some(&ix), 3333).unwrap().unwrap().unwrap();
        assert_eq!(l.behavior_id, "b3333");
        assert!(
            line::<TranscriptRecord>(f.path(), Some(&ix), 5000)
                .unwrap()
                .is_none()
        );
    }

    #[test]
    fn filters_find_matches_and_resume_from_a_cursor() {
        let f = file(400, "");
        let filt = Filter {
            q: "REPLY 39".into(),
            ..Default::default()
        };
        let p = page(f.path(), None, &filt, 0, Duration::from_secs(5)).unwrap();
        // reply 39, 390..399
        assert_eq!(p.items.len(), 11);
        let filt = Filter {
            outcome: "success".into(),
            ..Default::default()
        };
        let p = page(f.path(), None, &filt, 0, Duration::from_secs(5)).unwrap();
        assert_eq!(p.items.len(), 50);
        assert!(p.items.iter().all(|i| i.verdicts[0].1 == "success"));
        let next = p.next.unwrap();
        let p2 = page(f.path(), None, &filt, next, Duration::from_secs(5)).unwrap();
        assert_eq!(p2.items[0].line, 150);
    }

    #[test]
    fn overlong_and_broken_lines_are_skipped_not_fatal() {
        let long = format!("{}\n", "x".repeat(MAX_LINE + 10));
        // A line that names no unit (no attack, target or expected) is no transcript
        // line; one with only those (an older, shorter line) is listed.
        let f = file(
            3,
            &format!(
                "{long}not json\n{{\"behavior_id\":\"no unit\"}}\n{{\"behavior_id\":\"tail\",\"attack_name\":\"a\",\"target_name\":\"t\",\"expected\":\"should_comply\"}}"
            ),
        );
        let p = page(
            f.path(),
            None,
            &Filter::default(),
            0,
            Duration::from_secs(5),
        )
        .unwrap();
        assert_eq!(p.skipped, 3);
        assert_eq!(p.items.len(), 4);
        assert_eq!(p.items[3].behavior_id, "tail");
        assert_eq!(p.items[3].preview, "");
        assert!(
            line::<TranscriptRecord>(f.path(), None, 3)
                .unwrap()
                .unwrap()
                .is_err()
        );
    }

    proptest::proptest! {
        /// Arbitrary bytes never make a page or the index fail or panic.
        #[test]
        fn any_bytes_page_without_panicking(bytes in proptest::collection::vec(proptest::num::u8::ANY, 0..2000), from in 0u64..50) {
            let mut f = tempfile::NamedTempFile::new().unwrap();
            f.write_all(&bytes).unwrap();
            let ix = build_index(f.path()).unwrap();
            let filt = Filter { q: "a".into(), outcome: "error".into(), judge: "j".into(), disagree: true, ..Default::default() };
            page(f.path(), Some(&ix), &filt, from, Duration::from_secs(1)).unwrap();
            page(f.path(), None, &Filter::default(), from, Duration::from_secs(1)).unwrap();
            let _ = line::<TranscriptRecord>(f.path(), Some(&ix), from).unwrap();
        }
    }
}
