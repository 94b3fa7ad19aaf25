//! The journal file: its record format (key, checksum, response), reading and checking
//! records, and the [`Journal`] that appends them and looks them up through the index.

use gauntlet_core::json;
use gauntlet_core::message::ChatResponse;
use gauntlet_models::ModelError;
#[cfg(test)]
use serde::Serialize;
use std::fs::{File, OpenOptions};
use std::io::{self, BufRead, BufReader, Read, Seek, SeekFrom, Write};
use std::os::unix::fs::FileExt;
use std::path::{Path, PathBuf};
use std::sync::Mutex;

use super::index::{Index, Packed};

const HEADER: &[u8] = b"{\"gauntlet_journal\":2}\n";
/// The header of journals written before records carried checksums.
const HEADER_V1: &[u8] = b"{\"gauntlet_journal\":1}\n";
const KEY_PREFIX: &[u8] = b"{\"k\":\"";
const KEY_HEX: usize = 32;
/// Between the key and the checksum, and after the checksum.
const CHECK_PREFIX: &[u8] = b"\",\"c\":\"";
const CHECK_HEX: usize = 8;
const RESPONSE_PREFIX: &[u8] = b"\",\"r\":";
/// Bytes from the start of a checksummed line to its response's JSON.
const RESPONSE_AT: usize =
    KEY_PREFIX.len() + KEY_HEX + CHECK_PREFIX.len() + CHECK_HEX + RESPONSE_PREFIX.len();

/// A call key: 128 bits of sha256.
pub type Key = [u8; 16];

/// A record's offset takes the high 40 bits of a [`Packed`], its length the low 24.
const LEN_BITS: u32 = 24;

pub struct Journal {
    path: PathBuf,
    append: Mutex<File>,
    read: File,
    /// The records present at open.
    index: Index,
    /// Torn or unreadable lines found on open (they are recomputed).
    pub damaged_lines: u64,
    /// Records whose checksum did not match on open (their calls are made again).
    pub bad_checksums: u64,
    /// Records of a version-1 journal, which carry no checksum (reused unverified).
    pub unverified: u64,
    /// Records appended this session with [`Journal::append_indexed`]: key → packed
    /// offset/length. Checked only once it holds something.
    session: Mutex<std::collections::HashMap<Key, Packed>>,
    session_used: std::sync::atomic::AtomicBool,
}

#[cfg(test)]
#[derive(Serialize)]
struct RecordOut<'a> {
    k: &'a str,
    c: &'a str,
    r: &'a ChatResponse,
}

fn index_key(k: &Key) -> u64 {
    u64::from_le_bytes(k[..8].try_into().expect("8 bytes"))
}

impl Journal {
    /// Opens (or creates) the journal, cutting off a torn last line.
    pub fn open(path: &Path) -> io::Result<Journal> {
        let mut file = OpenOptions::new()
            .read(true)
            .append(true)
            .create(true)
            .open(path)?;
        let meta = file.metadata()?;
        if !meta.is_file() {
            return Err(io::Error::new(
                io::ErrorKind::InvalidInput,
                format!(
                    "{} is not a regular file; move it aside to start afresh",
                    path.display()
                ),
            ));
        }
        let len = meta.len();
        let mut index = Vec::new();
        let (mut damaged, mut bad_checksums, mut unverified) = (0, 0, 0);
        let mut legacy = false;
        if len == 0 {
            file.write_all(HEADER)?;
        } else {
            index.reserve_exact(count_lines(&file)?);
            file.seek(SeekFrom::Start(0))?;
            let mut reader = BufReader::with_capacity(1 << 20, &file);
            let mut line = Vec::with_capacity(512);
            let mut offset: u64 = 0;
            let mut good_end: u64 = 0;
            loop {
                line.clear();
                let (n, too_long) = read_record(&mut reader, &mut line)?;
                if n == 0 {
                    break;
                }
                if too_long {
                    // Not indexable anyway (see LEN_BITS): skipped without holding it,
                    // so its call is made again.
                    offset += n as u64;
                    good_end = offset;
                    continue;
                }
                if line.last() != Some(&b'\n') {
                    // torn tail: the process died mid-write
                    damaged += 1;
                    break;
                }
                if offset == 0 {
                    legacy = line == HEADER_V1;
                    if line != HEADER && !legacy {
                        return Err(io::Error::new(
                            io::ErrorKind::InvalidData,
                            format!(
                                "{} is not a gauntlet journal (unexpected first line); move it aside to start afresh",
                                path.display()
                            ),
                        ));
                    }
                } else {
                    let key = match check_line(&line, legacy) {
                        Line::Good(k) => Some(k),
                        Line::Unverified(k) => {
                            unverified += 1;
                            Some(k)
                        }
                        Line::BadChecksum => {
                            bad_checksums += 1;
                            None
                        }
                        Line::Damaged => {
                            damaged += 1;
                            None
                        }
                    };
                    if let Some(k) = key
                        && (n as u64) < (1 << LEN_BITS)
                        && offset < (1 << (64 - LEN_BITS))
                    {
                        index.push((index_key(&k), (offset << LEN_BITS) | n as u64));
                    }
                }
                offset += n as u64;
                good_end = offset;
            }
            drop(reader);
            if good_end < len {
                file.set_len(good_end)?;
            }
            if good_end == 0 {
                // killed while writing the header itself
                file.write_all(HEADER)?;
            }
        }
        // Lookups read with positioned reads of the same (verified regular) file.
        let read = file.try_clone()?;
        Ok(Journal {
            path: path.to_path_buf(),
            append: Mutex::new(file),
            read,
            index: Index::new(index),
            damaged_lines: damaged,
            bad_checksums,
            unverified,
            session: Mutex::new(std::collections::HashMap::new()),
            session_used: std::sync::atomic::AtomicBool::new(false),
        })
    }

    pub fn path(&self) -> &Path {
        &self.path
    }

    /// Records present when the journal was opened.
    pub fn len(&self) -> usize {
        self.index.len()
    }

    pub fn is_empty(&self) -> bool {
        self.index.len() == 0
    }

    /// The stored response for `key`, if a previous session recorded one (or this one
    /// with [`Journal::append_indexed`]).
    pub fn get(&self, key: &Key) -> Option<ChatResponse> {
        let packed = self.find(key)?;
        let offset = packed >> LEN_BITS;
        let len = (packed & ((1 << LEN_BITS) - 1)) as usize;
        let mut buf = vec![0u8; len];
        self.read.read_exact_at(&mut buf, offset).ok()?;
        // Only records whose checksum matched on open are indexed (and the directory's
        // lock keeps other writers out): no second check per lookup. The index holds 64
        // bits; the record holds the full 128-bit key.
        if parse_key(&buf)? != *key {
            return None;
        }
        serde_json::from_slice(response_json(&buf)?).ok()
    }

    /// Where `key`'s record is, if it is indexed.
    fn find(&self, key: &Key) -> Option<Packed> {
        if let Some(packed) = self.index.find(index_key(key)) {
            return Some(packed);
        }
        if !self.session_used.load(std::sync::atomic::Ordering::Acquire) {
            return None;
        }
        self.session
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .get(key)
            .copied()
    }

    /// True when `key` has a record (no read of the record itself).
    pub fn contains(&self, key: &Key) -> bool {
        self.find(key).is_some()
    }

    /// Appends records (each encoded by [`Journal::encode`]; `keys` gives each record's
    /// key and length, in order) with one write, and indexes them so that this session's
    /// [`Journal::get`] finds them.
    pub fn append_indexed(&self, lines: &[u8], keys: &[(Key, usize)]) -> io::Result<()> {
        if lines.is_empty() {
            return Ok(());
        }
        let mut f = self.append.lock().unwrap_or_else(|p| p.into_inner());
        let mut offset = f.metadata()?.len();
        f.write_all(lines)?;
        drop(f);
        let mut session = self.session.lock().unwrap_or_else(|p| p.into_inner());
        for (k, len) in keys {
            if (*len as u64) < (1 << LEN_BITS) && offset < (1 << (64 - LEN_BITS)) {
                session.insert(*k, (offset << LEN_BITS) | *len as u64);
            }
            offset += *len as u64;
        }
        self.session_used
            .store(true, std::sync::atomic::Ordering::Release);
        Ok(())
    }

    /// Serialises one record line into `buf`: the bytes `serde_json` writes for
    /// `{"k": <hex key>, "c": <checksum>, "r": <response>}`, without building the key's
    /// string.
    pub fn encode(buf: &mut Vec<u8>, key: &Key, response: &ChatResponse) {
        const HEX: &[u8; 16] = b"0123456789abcdef";
        let start = buf.len();
        buf.extend_from_slice(KEY_PREFIX);
        for b in key {
            buf.push(HEX[usize::from(b >> 4)]);
            buf.push(HEX[usize::from(b & 15)]);
        }
        buf.extend_from_slice(CHECK_PREFIX);
        buf.extend_from_slice(&[b'0'; CHECK_HEX]);
        buf.extend_from_slice(RESPONSE_PREFIX);
        // The response as its derived `Serialize` writes it, the content (the long part)
        // through the SIMD escaper.
        buf.extend_from_slice(b"{\"content\":");
        json::write_str(buf, &response.content);
        buf.extend_from_slice(b",\"stop_reason\":");
        serde_json::to_writer(&mut *buf, &response.stop_reason).expect("stop reasons serialise");
        if !response.tool_calls.is_empty() {
            buf.extend_from_slice(b",\"tool_calls\":");
            serde_json::to_writer(&mut *buf, &response.tool_calls).expect("tool calls serialise");
        }
        if let Some(u) = &response.usage {
            buf.extend_from_slice(b",\"usage\":");
            serde_json::to_writer(&mut *buf, u).expect("usage serialises");
        }
        if let Some(lp) = &response.first_token_logprobs {
            buf.extend_from_slice(b",\"first_token_logprobs\":");
            serde_json::to_writer(&mut *buf, lp).expect("logprobs serialise");
        }
        if let Some(ev) = &response.evidence {
            buf.extend_from_slice(b",\"evidence\":");
            serde_json::to_writer(&mut *buf, ev).expect("evidence serialises");
        }
        buf.extend_from_slice(b"}}\n");
        let line = &mut buf[start..];
        let crc = checksum(line);
        let at = KEY_PREFIX.len() + KEY_HEX + CHECK_PREFIX.len();
        for (i, d) in line[at..at + CHECK_HEX].iter_mut().enumerate() {
            *d = HEX[((crc >> (28 - 4 * i)) & 15) as usize];
        }
    }

    /// Appends complete record lines with one write.
    pub fn append(&self, lines: &[u8]) -> io::Result<()> {
        if lines.is_empty() {
            return Ok(());
        }
        let mut f = self.append.lock().unwrap_or_else(|p| p.into_inner());
        f.write_all(lines)
    }
}

/// The run-stopping error for a journal that cannot be written (disk full, …).
pub fn journal_error(journal: &Journal, e: &std::io::Error) -> ModelError {
    ModelError::Config(format!(
        "cannot write the journal {}: {e}; the run stops so that no call is paid for and then lost",
        journal.path().display()
    ))
}

/// Reads one line into `line`, unless it is longer than an indexable record
/// (`1 << LEN_BITS` bytes): such a line is read past, not kept (`(n, true)`), so a
/// journal holding one huge line cannot exhaust memory. Returns the bytes consumed.
fn read_record<R: BufRead>(r: &mut R, line: &mut Vec<u8>) -> io::Result<(usize, bool)> {
    const MAX: u64 = 1 << LEN_BITS;
    let n = r.by_ref().take(MAX).read_until(b'\n', line)?;
    if (n as u64) < MAX || line.last() == Some(&b'\n') {
        return Ok((n, false));
    }
    let mut n = n;
    loop {
        let buf = r.fill_buf()?;
        if buf.is_empty() {
            // A torn, over-long tail: let the caller cut it.
            return Ok((n, false));
        }
        match buf.iter().position(|&b| b == b'\n') {
            Some(i) => {
                r.consume(i + 1);
                line.clear();
                return Ok((n + i + 1, true));
            }
            None => {
                let k = buf.len();
                r.consume(k);
                n += k;
            }
        }
    }
}

/// Counts newlines with a streaming pass, to size the index exactly.
fn count_lines(file: &File) -> io::Result<usize> {
    let mut reader = BufReader::with_capacity(1 << 20, file);
    let mut buf = vec![0u8; 1 << 20];
    let mut n = 0;
    loop {
        let got = reader.read(&mut buf)?;
        if got == 0 {
            return Ok(n);
        }
        n += count_newlines(&buf[..got]);
    }
}

/// `b.iter().filter(|&&c| c == b'\n').count()`, summed in byte-wide lanes over blocks
/// short enough not to overflow them (the plain count keeps 64-bit lanes: 4 bytes per
/// step instead of 32).
fn count_newlines(b: &[u8]) -> usize {
    b.chunks(255)
        .map(|block| {
            let in_block = block
                .iter()
                .fold(0u8, |n, &c| n.wrapping_add(u8::from(c == b'\n')));
            usize::from(in_block)
        })
        .sum()
}

/// The key of a record line (checked: the line ends like a record).
fn parse_key(line: &[u8]) -> Option<Key> {
    let hex = line.strip_prefix(KEY_PREFIX)?.get(..KEY_HEX)?;
    if !line.ends_with(b"}\n") {
        return None;
    }
    let mut key = [0u8; 16];
    // Without a branch per digit (mispredicted on random hex): invalid digits are
    // accumulated and checked once.
    let mut invalid = 0u8;
    for (k, pair) in key.iter_mut().zip(hex.chunks_exact(2)) {
        let (hi, lo) = (
            HEX_VALUE[usize::from(pair[0])],
            HEX_VALUE[usize::from(pair[1])],
        );
        invalid |= hi | lo;
        *k = (hi << 4) | (lo & 15);
    }
    (invalid & INVALID == 0).then_some(key)
}

/// The JSON of a record line's response (its `r` field, which is last), for a record
/// with or without a checksum field.
fn response_json(line: &[u8]) -> Option<&[u8]> {
    let after_key = line.get(KEY_PREFIX.len() + KEY_HEX..)?;
    let at = if after_key.starts_with(CHECK_PREFIX) {
        RESPONSE_AT
    } else {
        KEY_PREFIX.len() + KEY_HEX + RESPONSE_PREFIX.len()
    };
    if line.get(at - RESPONSE_PREFIX.len()..at)? != RESPONSE_PREFIX {
        return None;
    }
    line.get(at..line.len().checked_sub(2)?)
}

/// Marks a byte that is not a lowercase hex digit in [`HEX_VALUE`].
const INVALID: u8 = 0x80;

/// Each byte's value as a lowercase hex digit (keys and checksums are written
/// lowercase), or [`INVALID`].
static HEX_VALUE: [u8; 256] = {
    let mut t = [INVALID; 256];
    let mut d = 0;
    while d < 16 {
        t[b"0123456789abcdef"[d] as usize] = d as u8;
        d += 1;
    }
    t
};

/// A lowercase hex digit's value.
fn nibble(b: u8) -> Option<u8> {
    let v = HEX_VALUE[usize::from(b)];
    (v != INVALID).then_some(v)
}

/// The CRC-32 of a checksummed record line: over the key's hex and the response's
/// JSON (everything but the checksum field itself and the line's last `}\n`).
fn checksum(line: &[u8]) -> u32 {
    let mut h = crc32fast::Hasher::new();
    h.update(&line[KEY_PREFIX.len()..KEY_PREFIX.len() + KEY_HEX]);
    h.update(&line[RESPONSE_AT..line.len() - 2]);
    h.finalize()
}

/// What a record line is worth.
enum Line {
    /// Checksummed, and the checksum matches.
    Good(Key),
    /// A version-1 record: well-formed, without a checksum.
    Unverified(Key),
    /// Checksummed, and the checksum does not match: a damaged record.
    BadChecksum,
    /// Not a record line.
    Damaged,
}

/// Checks one record line (newline included). `legacy`: records without a checksum are
/// accepted (a version-1 journal).
fn check_line(line: &[u8], legacy: bool) -> Line {
    let Some(key) = parse_key(line) else {
        return Line::Damaged;
    };
    let after_key = &line[KEY_PREFIX.len() + KEY_HEX..];
    if !after_key.starts_with(CHECK_PREFIX) {
        return if legacy && after_key.starts_with(b"\",\"r\":") {
            Line::Unverified(key)
        } else {
            Line::Damaged
        };
    }
    if line.len() < RESPONSE_AT + 2
        || &line[RESPONSE_AT - RESPONSE_PREFIX.len()..RESPONSE_AT] != RESPONSE_PREFIX
    {
        return Line::Damaged;
    }
    let hex = &after_key[CHECK_PREFIX.len()..CHECK_PREFIX.len() + CHECK_HEX];
    let stored = hex
        .iter()
        .try_fold(0u32, |acc, &b| Some((acc << 4) | u32::from(nibble(b)?)));
    match stored {
        Some(c) if c == checksum(line) => Line::Good(key),
        _ => Line::BadChecksum,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::strategies::content;
    use gauntlet_core::hash::to_hex;
    use gauntlet_core::message::StopReason;
    use proptest::prelude::*;

    fn key(b: u8) -> Key {
        [b; 16]
    }

    /// `Journal::encode` after `prev\n`, as text.
    fn encoded(k: &Key, r: &ChatResponse) -> String {
        let mut buf = b"prev\n".to_vec();
        Journal::encode(&mut buf, k, r);
        String::from_utf8(buf).unwrap()
    }

    /// What serde writes for the record after `prev\n`, as text.
    fn serde_record(k: &Key, r: &ChatResponse) -> String {
        let mut want = b"prev\n".to_vec();
        let hex = to_hex(k);
        let mut h = crc32fast::Hasher::new();
        h.update(hex.as_bytes());
        h.update(&serde_json::to_vec(r).unwrap());
        let c = format!("{:08x}", h.finalize());
        serde_json::to_writer(&mut want, &RecordOut { k: &hex, c: &c, r }).unwrap();
        want.push(b'\n');
        String::from_utf8(want).unwrap()
    }

    /// The hand-written record line is the one serde writes for the record.
    #[test]
    fn encode_is_the_serde_record() {
        let mut r = ChatResponse::text("a \"quoted\" \u{1}\n line");
        let k: Key = core::array::from_fn(|i| (i * 17) as u8);
        assert_eq!(encoded(&k, &r), serde_record(&k, &r));
        r.tool_calls.push(gauntlet_core::message::ToolCall {
            name: "t".into(),
            arguments: serde_json::json!({"b": [1, "x"], "a": null}),
            call_id: "call_1".into(),
        });
        assert_eq!(encoded(&k, &r), serde_record(&k, &r));
        r.usage = Some(gauntlet_core::message::Usage {
            input_tokens: 12,
            output_tokens: u64::MAX,
        });
        assert_eq!(encoded(&k, &r), serde_record(&k, &r));
        r.first_token_logprobs = Some(vec![
            gauntlet_core::message::TokenLogprob {
                token: "Yes".into(),
                logprob: -0.25,
            },
            gauntlet_core::message::TokenLogprob {
                token: "No \"q\"".into(),
                logprob: -3.5e-7,
            },
        ]);
        assert_eq!(encoded(&k, &r), serde_record(&k, &r));
        r.tool_calls.clear();
        for stop in [
            StopReason::Length,
            StopReason::ToolCalls,
            StopReason::Refusal,
            StopReason::Other("weird \"one\"\u{7}".into()),
        ] {
            r.stop_reason = stop;
            assert_eq!(encoded(&k, &r), serde_record(&k, &r));
        }
        r.content = String::new();
        assert_eq!(encoded(&k, &r), serde_record(&k, &r));
    }

    proptest! {
        #[test]
        fn encode_is_the_serde_record_for_any_content(
            content in content(),
            key_byte in any::<u8>(),
            tool in any::<bool>(),
            usage in any::<bool>(),
            logprobs in prop::option::of(prop::collection::vec((content(), -50.0f64..=0.0), 0..4)),
        ) {
            let mut r = ChatResponse::text(content.clone());
            if tool {
                r.stop_reason = StopReason::ToolCalls;
                r.tool_calls.push(gauntlet_core::message::ToolCall {
                    name: content.clone(),
                    arguments: serde_json::json!({"q": content}),
                    call_id: "c".into(),
                });
            }
            if usage {
                r.usage = Some(gauntlet_core::message::Usage { input_tokens: 3, output_tokens: 4 });
            }
            r.first_token_logprobs = logprobs.map(|v| {
                v.into_iter()
                    .map(|(token, logprob)| gauntlet_core::message::TokenLogprob { token, logprob })
                    .collect()
            });
            prop_assert_eq!(encoded(&key(key_byte), &r), serde_record(&key(key_byte), &r));
        }
    }

    #[test]
    fn round_trip_and_torn_tail() {
        let dir = tempfile::tempdir().unwrap();
        let p = dir.path().join("journal.jsonl");
        let j = Journal::open(&p).unwrap();
        let mut buf = Vec::new();
        Journal::encode(&mut buf, &key(1), &ChatResponse::text("one"));
        Journal::encode(&mut buf, &key(2), &ChatResponse::text("two"));
        j.append(&buf).unwrap();
        drop(j);
        // a torn record at the end
        let mut f = OpenOptions::new().append(true).open(&p).unwrap();
        f.write_all(b"{\"k\":\"0303030303030303030303030303030")
            .unwrap();
        drop(f);
        let j = Journal::open(&p).unwrap();
        assert_eq!(j.damaged_lines, 1);
        assert_eq!(j.len(), 2);
        assert_eq!(j.get(&key(1)).unwrap().content, "one");
        assert_eq!(j.get(&key(2)).unwrap().content, "two");
        assert!(j.get(&key(3)).is_none());
        // the torn line was cut: appending again yields clean lines
        let mut buf = Vec::new();
        Journal::encode(&mut buf, &key(3), &ChatResponse::text("three"));
        j.append(&buf).unwrap();
        drop(j);
        let j = Journal::open(&p).unwrap();
        assert_eq!(j.damaged_lines, 0);
        assert_eq!(j.get(&key(3)).unwrap().content, "three");
    }

    /// Records appended with `append_indexed` are found in the same session, and after
    /// a reopen like any other.
    #[test]
    fn indexed_appends_are_found_in_session() {
        let dir = tempfile::tempdir().unwrap();
        let p = dir.path().join("j");
        let j = Journal::open(&p).unwrap();
        let mut plain = Vec::new();
        Journal::encode(&mut plain, &key(1), &ChatResponse::text("one"));
        j.append(&plain).unwrap();
        assert!(j.get(&key(1)).is_none(), "plain appends are not indexed");
        let (mut buf, mut keys) = (Vec::new(), Vec::new());
        for (b, t) in [(2u8, "two"), (3, "three \"quoted\"")] {
            let at = buf.len();
            Journal::encode(&mut buf, &key(b), &ChatResponse::text(t));
            keys.push((key(b), buf.len() - at));
        }
        j.append_indexed(&buf, &keys).unwrap();
        assert_eq!(j.get(&key(2)).unwrap().content, "two");
        assert_eq!(j.get(&key(3)).unwrap().content, "three \"quoted\"");
        assert!(j.contains(&key(3)) && !j.contains(&key(4)));
        drop(j);
        let j = Journal::open(&p).unwrap();
        assert_eq!(j.len(), 3);
        assert_eq!(j.get(&key(3)).unwrap().content, "three \"quoted\"");
    }

    #[test]
    fn same_low_bits_different_key_is_a_miss() {
        let dir = tempfile::tempdir().unwrap();
        let p = dir.path().join("j");
        let j = Journal::open(&p).unwrap();
        let mut buf = Vec::new();
        let mut a = key(7);
        a[15] = 1;
        Journal::encode(&mut buf, &a, &ChatResponse::text("a"));
        j.append(&buf).unwrap();
        drop(j);
        let j = Journal::open(&p).unwrap();
        let mut b = key(7);
        b[15] = 2;
        assert!(j.get(&b).is_none());
        assert!(j.get(&a).is_some());
    }

    #[test]
    fn torn_header_is_rewritten() {
        let dir = tempfile::tempdir().unwrap();
        let p = dir.path().join("j");
        std::fs::write(&p, &HEADER[..5]).unwrap();
        let j = Journal::open(&p).unwrap();
        let mut buf = Vec::new();
        Journal::encode(&mut buf, &key(4), &ChatResponse::text("four"));
        j.append(&buf).unwrap();
        drop(j);
        let j = Journal::open(&p).unwrap();
        assert_eq!(j.get(&key(4)).unwrap().content, "four");
    }

    /// A byte flipped in a record's response fails its checksum: the record is not
    /// replayed (its call is made again), and the others still are.
    #[test]
    fn a_flipped_byte_is_caught_by_the_checksum() {
        let dir = tempfile::tempdir().unwrap();
        let p = dir.path().join("j");
        let j = Journal::open(&p).unwrap();
        let mut buf = Vec::new();
        Journal::encode(&mut buf, &key(1), &ChatResponse::text("I refuse."));
        Journal::encode(&mut buf, &key(2), &ChatResponse::text("Sure, here it is."));
        j.append(&buf).unwrap();
        drop(j);
        let mut bytes = std::fs::read(&p).unwrap();
        let at = bytes.windows(6).position(|w| w == b"refuse").unwrap();
        bytes[at] = b'R';
        std::fs::write(&p, &bytes).unwrap();
        let j = Journal::open(&p).unwrap();
        assert_eq!((j.bad_checksums, j.damaged_lines, j.len()), (1, 0, 1));
        assert!(j.get(&key(1)).is_none());
        assert_eq!(j.get(&key(2)).unwrap().content, "Sure, here it is.");
        // A damaged checksum field is caught the same way (the second record's).
        let at = bytes.windows(5).rposition(|w| w == b"\"c\":\"").unwrap() + 5;
        bytes[at] = if bytes[at] == b'g' { b'h' } else { b'g' };
        std::fs::write(&p, &bytes).unwrap();
        let j = Journal::open(&p).unwrap();
        assert_eq!(j.bad_checksums, 2);
    }

    /// A version-1 journal (no checksums) is still read; its records are counted as
    /// unverified, and records appended to it carry checksums.
    #[test]
    fn version_1_journals_are_read_unverified() {
        let dir = tempfile::tempdir().unwrap();
        let p = dir.path().join("j");
        let mut v1 = HEADER_V1.to_vec();
        serde_json::to_writer(
            &mut v1,
            &serde_json::json!({"k": to_hex(&key(5)), "r": ChatResponse::text("old")}),
        )
        .unwrap();
        v1.push(b'\n');
        std::fs::write(&p, &v1).unwrap();
        let j = Journal::open(&p).unwrap();
        assert_eq!((j.unverified, j.len()), (1, 1));
        assert_eq!(j.get(&key(5)).unwrap().content, "old");
        let mut buf = Vec::new();
        Journal::encode(&mut buf, &key(6), &ChatResponse::text("new"));
        j.append(&buf).unwrap();
        drop(j);
        let j = Journal::open(&p).unwrap();
        assert_eq!((j.unverified, j.bad_checksums, j.len()), (1, 0, 2));
        // In a version-2 journal, a record without a checksum is damaged, not trusted.
        let mut v2 = HEADER.to_vec();
        v2.extend_from_slice(&v1[HEADER_V1.len()..]);
        std::fs::write(&p, &v2).unwrap();
        let j = Journal::open(&p).unwrap();
        assert_eq!((j.damaged_lines, j.len()), (1, 0));
    }

    /// A line too long to index is read past, not held; the records around it stay.
    #[test]
    fn an_over_long_line_is_skipped_in_bounded_memory() {
        let dir = tempfile::tempdir().unwrap();
        let p = dir.path().join("j");
        let mut bytes = HEADER.to_vec();
        Journal::encode(&mut bytes, &key(1), &ChatResponse::text("one"));
        bytes.extend(std::iter::repeat_n(b'x', (1 << LEN_BITS) + 10));
        bytes.push(b'\n');
        Journal::encode(&mut bytes, &key(2), &ChatResponse::text("two"));
        std::fs::write(&p, &bytes).unwrap();
        let j = Journal::open(&p).unwrap();
        assert_eq!(j.len(), 2);
        assert_eq!(j.get(&key(2)).unwrap().content, "two");
        assert!(
            Journal::open(dir.path()).is_err(),
            "a directory is no journal"
        );
    }

    #[test]
    fn foreign_file_is_refused() {
        let dir = tempfile::tempdir().unwrap();
        let p = dir.path().join("j");
        std::fs::write(&p, "hello\n").unwrap();
        assert!(Journal::open(&p).is_err());
    }

    proptest! {
        /// The byte-lane newline count is the plain count.
        #[test]
        fn newline_count_is_the_plain_count(bytes in proptest::collection::vec(
            proptest::sample::select(vec![b'\n', b'a', 0, 0xff]), 0..2000,
        )) {
            prop_assert_eq!(
                count_newlines(&bytes),
                bytes.iter().filter(|&&b| b == b'\n').count()
            );
        }

        /// The table-driven key parser reads what the record's serde form holds, and
        /// refuses any key that is not 32 lowercase hex digits.
        #[test]
        fn keys_parse_back(k in proptest::array::uniform16(any::<u8>()), at in 0usize..32, bad in any::<u8>()) {
            let mut line = Vec::new();
            Journal::encode(&mut line, &k, &ChatResponse::text("x"));
            prop_assert_eq!(parse_key(&line), Some(k));
            prop_assert_eq!(
                serde_json::from_slice::<ChatResponse>(response_json(&line).unwrap()).unwrap(),
                ChatResponse::text("x")
            );
            let pos = KEY_PREFIX.len() + at;
            line[pos] = bad;
            let is_hex = bad.is_ascii_digit() || (b'a'..=b'f').contains(&bad);
            prop_assert_eq!(parse_key(&line).is_some(), is_hex);
        }

        /// Whatever bytes a journal holds, opening never panics.
        #[test]
        fn open_never_panics(bytes in proptest::collection::vec(proptest::num::u8::ANY, 0..300)) {
            let dir = tempfile::tempdir().unwrap();
            let p = dir.path().join("j");
            let mut content = HEADER.to_vec();
            content.extend_from_slice(&bytes);
            std::fs::write(&p, &content).unwrap();
            if let Ok(j) = Journal::open(&p) {
                let _ = j.get(&key(0));
            }
        }
    }
}
