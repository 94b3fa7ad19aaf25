//! Python literals as JSON values: InjecAgent's files write a case's `Tool Parameters`
//! as a Python dict (`{'product_id': 'B08KFQ9HK5', 'max_results': 1}`), and a model
//! may write its ReAct `Action Input` the same way.
//!
//! Read here: dicts, lists and tuples (as arrays), strings in single or double quotes
//! with Python's escapes (`\n`, `\t`, `\\`, `\'`, `\"`, `\xHH`, `\uHHHH`,
//! `\UHHHHHHHH`; an unknown escape keeps its backslash, as Python does), adjacent string
//! literals concatenated, integers, floats, `True`, `False`, `None`, and JSON's `true`,
//! `false`, `null`. Nothing is evaluated: this is a parser of data, and anything else
//! is an error naming the byte offset.

use serde_json::{Map, Number, Value};

/// Why a text is not a literal: what was wrong (or expected) and the byte offset where.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{kind} at byte {at}")]
pub struct ParseError {
    /// Byte offset into the text.
    pub at: usize,
    pub kind: ParseErrorKind,
}

/// What a [`ParseError`] found at its offset.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum ParseErrorKind {
    /// Text after a complete literal.
    #[error("unexpected text")]
    Trailing,
    /// The text ended where a value was expected.
    #[error("unexpected end")]
    End,
    /// A character that starts no value.
    #[error("unexpected character")]
    Character,
    /// A bare word that is not `True`, `False`, `None` (or JSON's spellings).
    #[error("unknown name `{0}`")]
    UnknownName(String),
    /// More than [`MAX_DEPTH`] nested containers.
    #[error("nested too deeply")]
    TooDeep,
    /// A dict key that is a container.
    #[error("a dict key must be a string, number or constant")]
    Key,
    #[error("expected `:`")]
    Colon,
    #[error("expected `,` or `}}`")]
    CommaOrBrace,
    #[error("expected `,` or a closing bracket")]
    CommaOrBracket,
    #[error("unterminated string")]
    Unterminated,
    #[error("newline in a string")]
    Newline,
    /// A `\x`, `\u` or `\U` escape without its hex digits, or not a character.
    #[error("bad escape")]
    Escape,
    /// A number-like run of characters that is neither an integer nor a float.
    #[error("bad number `{0}`")]
    Number(String),
}

/// Parses one literal (surrounding whitespace allowed).
pub fn parse(text: &str) -> Result<Value, ParseError> {
    let mut p = Parser {
        s: text.as_bytes(),
        text,
        i: 0,
        depth: 0,
    };
    let v = p.value()?;
    p.ws();
    if p.i != p.s.len() {
        return p.err(ParseErrorKind::Trailing);
    }
    Ok(v)
}

/// JSON first (the common case, and exact), else a Python literal.
pub fn parse_json_or_python(text: &str) -> Result<Value, ParseError> {
    match serde_json::from_str(text) {
        Ok(v) => Ok(v),
        Err(_) => parse(text),
    }
}

struct Parser<'a> {
    s: &'a [u8],
    text: &'a str,
    i: usize,
    depth: usize,
}

/// Deepest nesting accepted (untrusted input must not exhaust the stack).
const MAX_DEPTH: usize = 128;

impl Parser<'_> {
    fn ws(&mut self) {
        while self.i < self.s.len() && self.s[self.i].is_ascii_whitespace() {
            self.i += 1;
        }
    }

    fn err<T>(&self, kind: ParseErrorKind) -> Result<T, ParseError> {
        Err(ParseError { at: self.i, kind })
    }

    fn value(&mut self) -> Result<Value, ParseError> {
        self.ws();
        let Some(&c) = self.s.get(self.i) else {
            return self.err(ParseErrorKind::End);
        };
        match c {
            b'{' => self.nested(|p| p.dict()),
            b'[' => self.nested(|p| p.seq(b']')),
            b'(' => self.nested(|p| p.seq(b')')),
            b'\'' | b'"' => {
                let mut s = self.string()?;
                // Adjacent literals concatenate: 'a' 'b' == 'ab'.
                loop {
                    let save = self.i;
                    self.ws();
                    match self.s.get(self.i) {
                        Some(b'\'' | b'"') => s.push_str(&self.string()?),
                        _ => {
                            self.i = save;
                            break;
                        }
                    }
                }
                Ok(Value::String(s))
            }
            b'-' | b'+' | b'0'..=b'9' | b'.' => self.number(),
            _ => {
                let start = self.i;
                while self.i < self.s.len()
                    && (self.s[self.i].is_ascii_alphanumeric() || self.s[self.i] == b'_')
                {
                    self.i += 1;
                }
                match &self.text[start..self.i] {
                    "True" | "true" => Ok(Value::Bool(true)),
                    "False" | "false" => Ok(Value::Bool(false)),
                    "None" | "null" => Ok(Value::Null),
                    "" => self.err(ParseErrorKind::Character),
                    w => Err(ParseError {
                        at: start,
                        kind: ParseErrorKind::UnknownName(w.to_string()),
                    }),
                }
            }
        }
    }

    fn nested(
        &mut self,
        f: impl FnOnce(&mut Self) -> Result<Value, ParseError>,
    ) -> Result<Value, ParseError> {
        self.depth += 1;
        if self.depth > MAX_DEPTH {
            return self.err(ParseErrorKind::TooDeep);
        }
        let v = f(self);
        self.depth -= 1;
        v
    }

    fn dict(&mut self) -> Result<Value, ParseError> {
        self.i += 1;
        let mut m = Map::new();
        loop {
            self.ws();
            if self.s.get(self.i) == Some(&b'}') {
                self.i += 1;
                return Ok(Value::Object(m));
            }
            let key = match self.value()? {
                Value::String(k) => k,
                Value::Number(n) => n.to_string(),
                Value::Bool(b) => if b { "True" } else { "False" }.to_string(),
                Value::Null => "None".to_string(),
                _ => return self.err(ParseErrorKind::Key),
            };
            self.ws();
            if self.s.get(self.i) != Some(&b':') {
                return self.err(ParseErrorKind::Colon);
            }
            self.i += 1;
            let v = self.value()?;
            m.insert(key, v);
            self.ws();
            match self.s.get(self.i) {
                Some(b',') => self.i += 1,
                Some(b'}') => {}
                _ => return self.err(ParseErrorKind::CommaOrBrace),
            }
        }
    }

    fn seq(&mut self, close: u8) -> Result<Value, ParseError> {
        self.i += 1;
        let mut items = Vec::new();
        loop {
            self.ws();
            if self.s.get(self.i) == Some(&close) {
                self.i += 1;
                return Ok(Value::Array(items));
            }
            items.push(self.value()?);
            self.ws();
            match self.s.get(self.i) {
                Some(b',') => self.i += 1,
                Some(&c) if c == close => {}
                _ => return self.err(ParseErrorKind::CommaOrBracket),
            }
        }
    }

    fn string(&mut self) -> Result<String, ParseError> {
        let quote = self.s[self.i];
        self.i += 1;
        let mut out = String::new();
        loop {
            let rest = &self.text[self.i..];
            let Some(c) = rest.chars().next() else {
                return self.err(ParseErrorKind::Unterminated);
            };
            self.i += c.len_utf8();
            match c {
                c if c as u32 == u32::from(quote) => return Ok(out),
                '\n' => return self.err(ParseErrorKind::Newline),
                '\\' => {
                    let Some(e) = self.text[self.i..].chars().next() else {
                        return self.err(ParseErrorKind::Unterminated);
                    };
                    self.i += e.len_utf8();
                    match e {
                        'n' => out.push('\n'),
                        't' => out.push('\t'),
                        'r' => out.push('\r'),
                        'b' => out.push('\u{8}'),
                        'f' => out.push('\u{c}'),
                        'v' => out.push('\u{b}'),
                        'a' => out.push('\u{7}'),
                        '0' => out.push('\0'),
                        '\\' | '\'' | '"' => out.push(e),
                        '\n' => {}
                        'x' => out.push(self.hex(2)?),
                        'u' => out.push(self.hex(4)?),
                        'U' => out.push(self.hex(8)?),
                        other => {
                            out.push('\\');
                            out.push(other);
                        }
                    }
                }
                c => out.push(c),
            }
        }
    }

    fn hex(&mut self, n: usize) -> Result<char, ParseError> {
        let digits = self.text.get(self.i..self.i + n).unwrap_or("");
        let code = (digits.len() == n)
            .then(|| u32::from_str_radix(digits, 16).ok())
            .flatten();
        let Some(c) = code.and_then(char::from_u32) else {
            return self.err(ParseErrorKind::Escape);
        };
        self.i += n;
        Ok(c)
    }

    fn number(&mut self) -> Result<Value, ParseError> {
        let start = self.i;
        if matches!(self.s.get(self.i), Some(b'-' | b'+')) {
            self.i += 1;
        }
        while self.i < self.s.len()
            && (self.s[self.i].is_ascii_digit()
                || matches!(self.s[self.i], b'.' | b'e' | b'E' | b'_')
                || (matches!(self.s[self.i], b'-' | b'+')
                    && matches!(self.s[self.i - 1], b'e' | b'E')))
        {
            self.i += 1;
        }
        let t: String = self.text[start..self.i]
            .chars()
            .filter(|&c| c != '_')
            .collect();
        let t = t.strip_prefix('+').unwrap_or(&t);
        if let Ok(n) = t.parse::<i64>() {
            return Ok(Value::Number(n.into()));
        }
        match t.parse::<f64>().ok().and_then(Number::from_f64) {
            Some(n) => Ok(Value::Number(n)),
            None => Err(ParseError {
                at: start,
                kind: ParseErrorKind::Number(t.to_string()),
            }),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;
    use serde_json::json;

    #[test]
    fn python_dicts_as_in_injecagent() {
        assert_eq!(
            parse("{'product_id': 'B08KFQ9HK5'}").unwrap(),
            json!({"product_id": "B08KFQ9HK5"})
        );
        assert_eq!(
            parse("{'keywords': ['Budget'], 'max_results': 1, 'ok': True, 'x': None, 'f': -1.5}")
                .unwrap(),
            json!({"keywords": ["Budget"], "max_results": 1, "ok": true, "x": null, "f": -1.5})
        );
        assert_eq!(
            parse(r#"{"it's": 'say "hi"\n', 't': (1, 2), 'e': '\xe9\u00e9'}"#).unwrap(),
            json!({"it's": "say \"hi\"\n", "t": [1, 2], "e": "éé"})
        );
        assert_eq!(parse("'a' 'b'").unwrap(), json!("ab"));
        assert_eq!(parse(r"'\d'").unwrap(), json!("\\d"));
        assert_eq!(parse("{}").unwrap(), json!({}));
        assert_eq!(parse_json_or_python("{\"a\": 1}").unwrap(), json!({"a": 1}));
    }

    #[test]
    fn errors_name_the_place() {
        for bad in [
            "{'a': }",
            "{'a' 1}",
            "[1, 2",
            "'open",
            "os.system('x')",
            "{'a': 1} x",
            "",
        ] {
            let e = parse(bad).unwrap_err().to_string();
            assert!(
                e.contains("byte") || e.contains("unknown name"),
                "{bad}: {e}"
            );
        }
        let deep = "[".repeat(1000);
        assert!(
            parse(&deep)
                .unwrap_err()
                .to_string()
                .contains("nested too deeply")
        );
    }

    proptest! {
        /// Any input: no panic. Any JSON value: read back as itself.
        #[test]
        fn total_and_reads_json(s in ".{0,120}", k in "[a-z]{0,5}", v in ".{0,20}", n in any::<i64>()) {
            let _ = parse(&s);
            let value = json!({k: [v, n, true, null, {"z": 1.5}]});
            prop_assert_eq!(parse(&value.to_string()).unwrap(), value);
        }
    }
}
