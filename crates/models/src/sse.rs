//! A server-sent-events parser: the WHATWG HTML standard's event stream interpretation,
//! fed the body's chunks as they come, linear in the bytes read and bounded.
//!
//! The `http` target reads a streamed reply with it. The parser it replaces
//! (`eventsource-stream`) parsed its whole buffer again for every chunk of an unfinished
//! line, so one large event cost time quadratic in its size (8 MiB: 10 s of CPU; a 40 MB
//! event did not finish in 300 s). Here each byte is scanned once: a line's end is
//! searched for in the new chunk only (memchr), an unfinished line is kept and extended,
//! and an event — its data and its unfinished line together — larger than the parser's
//! limit is an error naming the limit ([`SseError::EventTooLarge`]) as soon as it grows
//! past it, before anything more is buffered.
//!
//! What the standard says, and this does: lines end at CRLF, LF or CR (a CRLF split
//! across chunks is one line end); a leading byte-order mark is dropped; a blank line
//! dispatches the event; a line starting with `:` is a comment; `field: value` loses one
//! space after the colon, and a line without a colon is a field with an empty value;
//! `data` lines are joined by LF; `event` sets the event's type; `id`, `retry` and
//! unknown fields are ignored (a reply is read once: there is no reconnection); an event
//! without data is not dispatched; at the end of the stream an event not ended by a
//! blank line is discarded. Bytes that are not UTF-8 become U+FFFD, line by line.

/// One dispatched event.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Event {
    /// Its type: the `event` field, `message` without one.
    pub event: String,
    /// Its data lines, joined by LF.
    pub data: String,
}

/// Why a stream cannot be read.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum SseError {
    /// An event (its data and the line being read) grew past the parser's limit.
    #[error(
        "an event is larger than {limit} bytes (the most one server-sent event may hold); the stream is not read further"
    )]
    EventTooLarge { limit: usize },
}

/// The parser's state between chunks.
#[derive(Debug)]
pub struct Parser {
    limit: usize,
    /// The bytes of a line not ended yet.
    line: Vec<u8>,
    /// The data buffer: each `data` value followed by LF.
    data: String,
    event: String,
    /// The last byte seen ended a line with CR: an LF right after it ends nothing more.
    after_cr: bool,
    /// No line has been read yet (a byte-order mark may start it).
    first: bool,
}

impl Parser {
    /// A parser refusing an event larger than `limit` bytes.
    pub fn new(limit: usize) -> Parser {
        Parser {
            limit,
            line: Vec::new(),
            data: String::new(),
            event: String::new(),
            after_cr: false,
            first: true,
        }
    }

    /// Parses the next chunk of the stream, pushing the events it completes to `out`.
    pub fn feed(&mut self, mut bytes: &[u8], out: &mut Vec<Event>) -> Result<(), SseError> {
        if self.after_cr && !bytes.is_empty() {
            self.after_cr = false;
            if bytes[0] == b'\n' {
                bytes = &bytes[1..];
            }
        }
        while let Some(i) = memchr::memchr2(b'\n', b'\r', bytes) {
            if self.line.is_empty() {
                self.check(i)?;
                self.take_line(&bytes[..i], out);
            } else {
                self.check(self.line.len() + i)?;
                let mut line = std::mem::take(&mut self.line);
                line.extend_from_slice(&bytes[..i]);
                self.take_line(&line, out);
                line.clear();
                self.line = line;
            }
            let cr = bytes[i] == b'\r';
            bytes = &bytes[i + 1..];
            if cr {
                match bytes.first() {
                    Some(b'\n') => bytes = &bytes[1..],
                    Some(_) => {}
                    None => self.after_cr = true,
                }
            }
        }
        if !bytes.is_empty() {
            self.check(self.line.len() + bytes.len())?;
            self.line.extend_from_slice(bytes);
        }
        Ok(())
    }

    /// Refuses an event whose data and current line together would pass the limit.
    fn check(&self, line: usize) -> Result<(), SseError> {
        if self.data.len() + line > self.limit {
            return Err(SseError::EventTooLarge { limit: self.limit });
        }
        Ok(())
    }

    /// One whole line (its end not included).
    fn take_line(&mut self, mut line: &[u8], out: &mut Vec<Event>) {
        if self.first {
            self.first = false;
            line = line.strip_prefix(b"\xEF\xBB\xBF").unwrap_or(line);
        }
        if line.is_empty() {
            self.dispatch(out);
            return;
        }
        if line[0] == b':' {
            return;
        }
        let (field, value) = match memchr::memchr(b':', line) {
            Some(c) => {
                let v = &line[c + 1..];
                (&line[..c], v.strip_prefix(b" ").unwrap_or(v))
            }
            None => (line, &b""[..]),
        };
        match field {
            b"data" => {
                self.data.push_str(&String::from_utf8_lossy(value));
                self.data.push('\n');
            }
            b"event" => self.event = String::from_utf8_lossy(value).into_owned(),
            _ => {}
        }
    }

    fn dispatch(&mut self, out: &mut Vec<Event>) {
        let event = std::mem::take(&mut self.event);
        if self.data.is_empty() {
            return;
        }
        let mut data = std::mem::take(&mut self.data);
        data.pop();
        out.push(Event {
            event: if event.is_empty() {
                "message".to_string()
            } else {
                event
            },
            data,
        });
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    fn parse_in(chunks: &[&[u8]], limit: usize) -> Result<Vec<Event>, SseError> {
        let mut p = Parser::new(limit);
        let mut out = Vec::new();
        for c in chunks {
            p.feed(c, &mut out)?;
        }
        Ok(out)
    }

    fn ev(event: &str, data: &str) -> Event {
        Event {
            event: event.into(),
            data: data.into(),
        }
    }

    #[test]
    fn the_standards_examples() {
        let s = b"\xEF\xBB\xBF: comment\n\ndata: first\ndata:second\r\n\r\nevent: meta\rdata\r\ndata: x\n\nid: 3\nretry: 5\n\ndata: cut";
        assert_eq!(
            parse_in(&[s], 1 << 20).unwrap(),
            vec![ev("message", "first\nsecond"), ev("meta", "\nx"),]
        );
        // A CRLF split across chunks is one line end.
        assert_eq!(
            parse_in(&[b"data: a\r", b"\ndata: b\r", b"\n\r", b"\n"], 100).unwrap(),
            vec![ev("message", "a\nb")]
        );
        // Not UTF-8: replaced, not refused.
        assert_eq!(
            parse_in(&[b"data: \xff\n\n"], 100).unwrap(),
            vec![ev("message", "\u{fffd}")]
        );
    }

    #[test]
    fn an_event_past_the_limit_is_refused_as_it_grows() {
        let limit = 1000;
        let mut p = Parser::new(limit);
        let mut out = Vec::new();
        p.feed(b"data: ", &mut out).unwrap();
        let chunk = vec![b'x'; 100];
        let mut fed = 6;
        let err = loop {
            match p.feed(&chunk, &mut out) {
                Ok(()) => fed += 100,
                Err(e) => break e,
            }
            assert!(fed <= limit, "fed {fed} bytes past the limit");
        };
        assert_eq!(err, SseError::EventTooLarge { limit });
        assert!(err.to_string().contains("1000 bytes"));
        // Many data lines add up the same way.
        let lines = "data: 0123456789\n".repeat(100);
        assert!(parse_in(&[lines.as_bytes()], limit).is_err());
        assert!(parse_in(&[lines.as_bytes(), b"\n"], 10_000).is_ok());
    }

    /// One 8 MiB event in 4 KiB chunks: the old parser took ~10 s of CPU; a linear one
    /// takes milliseconds. A generous bound catches a quadratic parser, not a slow
    /// machine.
    #[test]
    fn a_large_event_is_parsed_in_linear_time() {
        let body = format!("data: {}\n\n", "y".repeat(8 << 20));
        let t = std::time::Instant::now();
        let chunks: Vec<&[u8]> = body.as_bytes().chunks(4096).collect();
        let out = parse_in(&chunks, 16 << 20).unwrap();
        assert_eq!(out.len(), 1);
        assert_eq!(out[0].data.len(), 8 << 20);
        assert!(
            t.elapsed() < std::time::Duration::from_secs(5),
            "{:?}",
            t.elapsed()
        );
    }

    /// The standard's algorithm over the whole stream at once, written plainly: the
    /// reference the chunked parser must agree with.
    fn reference(s: &[u8]) -> Vec<Event> {
        let s = s.strip_prefix(b"\xEF\xBB\xBF").unwrap_or(s);
        let mut lines: Vec<&[u8]> = Vec::new();
        let mut start = 0;
        let mut i = 0;
        while i < s.len() {
            if s[i] == b'\r' || s[i] == b'\n' {
                lines.push(&s[start..i]);
                if s[i] == b'\r' && s.get(i + 1) == Some(&b'\n') {
                    i += 1;
                }
                start = i + 1;
            }
            i += 1;
        }
        let (mut data, mut event, mut out) = (String::new(), String::new(), Vec::new());
        for l in lines {
            if l.is_empty() {
                if !data.is_empty() {
                    data.pop();
                    out.push(Event {
                        event: if event.is_empty() {
                            "message".into()
                        } else {
                            event.clone()
                        },
                        data: std::mem::take(&mut data),
                    });
                }
                event.clear();
                continue;
            }
            if l[0] == b':' {
                continue;
            }
            let text = String::from_utf8_lossy(l);
            let (f, v) = match text.find(':') {
                Some(c) => {
                    let v = &text[c + 1..];
                    (&text[..c], v.strip_prefix(' ').unwrap_or(v))
                }
                None => (&text[..], ""),
            };
            match f {
                "data" => {
                    data.push_str(v);
                    data.push('\n');
                }
                "event" => event = v.to_string(),
                _ => {}
            }
        }
        out
    }

    fn stream() -> impl Strategy<Value = Vec<u8>> {
        let piece = prop_oneof![
            Just(b"data".to_vec()),
            Just(b"event".to_vec()),
            Just(b"id".to_vec()),
            Just(b": ".to_vec()),
            Just(b":".to_vec()),
            Just(b" ".to_vec()),
            Just(b"\n".to_vec()),
            Just(b"\r".to_vec()),
            Just(b"\r\n".to_vec()),
            Just(b"\xEF\xBB\xBF".to_vec()),
            Just("é".as_bytes().to_vec()),
            Just(vec![0xff]),
            proptest::collection::vec(any::<u8>(), 0..6),
            "[a-z{}\"]{0,8}".prop_map(String::into_bytes),
        ];
        proptest::collection::vec(piece, 0..60).prop_map(|v| v.concat())
    }

    proptest! {
        /// Any stream, cut into any chunks: the events the standard's algorithm gives.
        #[test]
        fn chunks_change_nothing_and_the_standard_is_followed(
            s in stream(),
            cuts in proptest::collection::vec(any::<prop::sample::Index>(), 0..8),
        ) {
            let mut at: Vec<usize> = cuts.iter().map(|c| c.index(s.len() + 1)).collect();
            at.push(0);
            at.push(s.len());
            at.sort_unstable();
            let chunks: Vec<&[u8]> = at.windows(2).map(|w| &s[w[0]..w[1]]).collect();
            let got = parse_in(&chunks, usize::MAX).unwrap();
            prop_assert_eq!(got, reference(&s));
        }

        /// Nothing past the limit is ever buffered: an event whose line (`data:` and
        /// its value) fits is read, one that does not is refused, however it is cut.
        #[test]
        fn the_limit_holds(n in 0usize..300, limit in 1usize..200, cut in 0usize..310) {
            let body = format!("data:{}\n\n", "z".repeat(n));
            let cut = cut.min(body.len());
            let r = parse_in(&[&body.as_bytes()[..cut], &body.as_bytes()[cut..]], limit);
            if 5 + n <= limit {
                prop_assert_eq!(r.unwrap(), vec![ev("message", &"z".repeat(n))]);
            } else {
                prop_assert!(r.is_err());
            }
        }
    }
}
