//! The stdio transport of the client: newline-delimited JSON-RPC over a server's
//! stdin/stdout, strict and bounded.
//!
//! rmcp's own async read/write transport drops an oversized line and skips a line that
//! is not JSON, and waits on: against a hostile server that turns a flood or garbage into
//! a silent hang. This one ends the session instead and records why ([`Fault`]), so the
//! client reports a named error at once: a message longer than the limit (read no
//! further than the limit: memory stays bounded), a line that is not JSON, JSON that is
//! not a JSON-RPC message, a listing whose list is not an array or holds more items than
//! the limit (counted before anything is built from it: [`listing`]), a flood of
//! notifications before the server's first answer, the end of the stream.
//!
//! Every client session runs over an [`Erased`] transport and every byte stream is
//! boxed ([`Reader`], [`Writer`]): rmcp's service loop is generic over its transport, so
//! each concrete transport type would compile that loop again; behind one vtable it
//! compiles once per role.

use crate::BoxFuture;
use rmcp::RoleClient;
use rmcp::service::{RxJsonRpcMessage, ServiceRole, TxJsonRpcMessage};
use rmcp::transport::Transport;
use std::sync::{Arc, Mutex};
use tokio::io::{AsyncBufReadExt, AsyncRead, AsyncWrite, AsyncWriteExt, BufReader};

/// A byte stream read by a transport (a child's stdout, this process's stdin, one end of
/// an in-process pipe), boxed so the transport is one type whatever it reads.
pub type Reader = Box<dyn AsyncRead + Unpin + Send>;
/// A byte stream written by a transport, boxed for the same reason as [`Reader`].
pub type Writer = Box<dyn AsyncWrite + Unpin + Send>;

/// A transport of role `R` behind one vtable.
pub struct Erased<R: ServiceRole>(Box<dyn Object<R>>);

impl<R: ServiceRole> Erased<R> {
    pub fn new<T: Transport<R> + 'static>(t: T) -> Self {
        Erased(Box::new(t))
    }
}

/// The error of an [`Erased`] transport: the inner transport's, shown as it is and kept
/// as the source (so rmcp's walk of the source chain still finds it).
#[derive(Debug)]
pub struct ErasedError(Box<dyn std::error::Error + Send + Sync>);

impl std::fmt::Display for ErasedError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        self.0.fmt(f)
    }
}

impl std::error::Error for ErasedError {
    fn source(&self) -> Option<&(dyn std::error::Error + 'static)> {
        Some(&*self.0)
    }
}

/// [`Transport`] with its futures boxed: object safe.
trait Object<R: ServiceRole>: Send {
    fn send(&mut self, item: TxJsonRpcMessage<R>) -> BoxFuture<'static, Result<(), ErasedError>>;
    fn receive(&mut self) -> BoxFuture<'_, Option<RxJsonRpcMessage<R>>>;
    fn close(&mut self) -> BoxFuture<'_, Result<(), ErasedError>>;
}

impl<R: ServiceRole, T: Transport<R> + 'static> Object<R> for T {
    fn send(&mut self, item: TxJsonRpcMessage<R>) -> BoxFuture<'static, Result<(), ErasedError>> {
        let sent = <T as Transport<R>>::send(self, item);
        Box::pin(async move { sent.await.map_err(|e| ErasedError(Box::new(e))) })
    }
    fn receive(&mut self) -> BoxFuture<'_, Option<RxJsonRpcMessage<R>>> {
        Box::pin(<T as Transport<R>>::receive(self))
    }
    fn close(&mut self) -> BoxFuture<'_, Result<(), ErasedError>> {
        Box::pin(async move {
            <T as Transport<R>>::close(self)
                .await
                .map_err(|e| ErasedError(Box::new(e)))
        })
    }
}

impl<R: ServiceRole> Transport<R> for Erased<R> {
    type Error = ErasedError;

    fn send(
        &mut self,
        item: TxJsonRpcMessage<R>,
    ) -> impl Future<Output = Result<(), Self::Error>> + Send + 'static {
        self.0.send(item)
    }

    fn receive(&mut self) -> impl Future<Output = Option<RxJsonRpcMessage<R>>> + Send {
        self.0.receive()
    }

    fn close(&mut self) -> impl Future<Output = Result<(), Self::Error>> + Send {
        self.0.close()
    }
}

/// Why the transport ended the session.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Fault {
    /// A message longer than the limit (bytes).
    Oversized { limit: usize },
    /// A line that is not JSON: its 1-based number on stdout and its first bytes.
    InvalidJson {
        line: u64,
        excerpt: String,
        why: String,
    },
    /// JSON that is not a JSON-RPC message.
    NotJsonRpc {
        line: u64,
        excerpt: String,
        why: String,
    },
    /// A listing result holding more items than the limit, counted before the result was
    /// parsed (so a 15 MiB list of 400,000 tiny tools is refused in the memory of its
    /// line, not of 400,000 parsed definitions).
    TooManyItems { what: &'static str, limit: usize },
    /// A listing result whose list is not an array (`{"tools": {}}`).
    NotAList {
        what: &'static str,
        found: &'static str,
    },
    /// More notifications and requests than [`FLOOD_BEFORE_FIRST_ANSWER`] before the
    /// server answered anything (before `initialize`'s answer: a flood, not a hang).
    NotificationFlood { count: u64 },
    /// The server closed its stdout.
    Eof,
    /// Reading failed.
    Io(String),
}

/// Where the transport leaves its [`Fault`] for the client to read.
pub type FaultSlot = Arc<Mutex<Option<Fault>>>;

/// Most notifications and requests a server may send before its first answer (an
/// honest server sends a few log or progress notifications while it starts).
pub const FLOOD_BEFORE_FIRST_ANSWER: u64 = 1_000;

pub struct LineTransport {
    read: BufReader<Reader>,
    write: Arc<tokio::sync::Mutex<Option<Writer>>>,
    buf: Vec<u8>,
    max: usize,
    max_items: usize,
    line: u64,
    /// Notifications and requests received since the last answer; `None` once the first
    /// answer came.
    before_first_answer: Option<u64>,
    fault: FaultSlot,
}

impl LineTransport {
    pub fn new(
        read: Reader,
        write: Writer,
        max_message_bytes: usize,
        max_items: usize,
        fault: FaultSlot,
    ) -> Self {
        LineTransport {
            read: BufReader::with_capacity(64 * 1024, read),
            write: Arc::new(tokio::sync::Mutex::new(Some(write))),
            buf: Vec::new(),
            max: max_message_bytes,
            max_items,
            line: 0,
            before_first_answer: Some(0),
            fault,
        }
    }

    fn fail(&self, f: Fault) -> Option<RxJsonRpcMessage<RoleClient>> {
        let mut slot = self.fault.lock().unwrap();
        if slot.is_none() {
            *slot = Some(f);
        }
        None
    }

    /// Reads one line into `buf` (without the newline), never more than `max` bytes.
    async fn read_line(&mut self) -> Result<bool, Fault> {
        self.buf.clear();
        loop {
            let avail = self
                .read
                .fill_buf()
                .await
                .map_err(|e| Fault::Io(e.to_string()))?;
            if avail.is_empty() {
                return if self.buf.is_empty() {
                    Ok(false)
                } else {
                    Ok(true)
                };
            }
            let nl = avail.iter().position(|&b| b == b'\n');
            let take = nl.map_or(avail.len(), |i| i + 1);
            if self.buf.len() + take > self.max + 1 {
                return Err(Fault::Oversized { limit: self.max });
            }
            self.buf.extend_from_slice(&avail[..take]);
            self.read.consume(take);
            if nl.is_some() {
                self.buf.pop();
                if self.buf.last() == Some(&b'\r') {
                    self.buf.pop();
                }
                return Ok(true);
            }
        }
    }
}

fn excerpt_of(b: &[u8]) -> String {
    let s = String::from_utf8_lossy(&b[..b.len().min(120)]);
    crate::finding::excerpt(&s)
}

impl Transport<RoleClient> for LineTransport {
    type Error = std::io::Error;

    fn send(
        &mut self,
        item: TxJsonRpcMessage<RoleClient>,
    ) -> impl Future<Output = Result<(), Self::Error>> + Send + 'static {
        let write = self.write.clone();
        async move {
            let mut line = serde_json::to_vec(&item).map_err(std::io::Error::other)?;
            line.push(b'\n');
            let mut w = write.lock().await;
            let w = w.as_mut().ok_or_else(|| {
                std::io::Error::new(std::io::ErrorKind::NotConnected, "the transport is closed")
            })?;
            w.write_all(&line).await?;
            w.flush().await
        }
    }

    async fn receive(&mut self) -> Option<RxJsonRpcMessage<RoleClient>> {
        loop {
            match self.read_line().await {
                Ok(false) => return self.fail(Fault::Eof),
                Err(f) => return self.fail(f),
                Ok(true) => {}
            }
            self.line += 1;
            if self.buf.iter().all(u8::is_ascii_whitespace) {
                continue;
            }
            if let Err(f) = listing::check(&self.buf, self.max_items) {
                return self.fail(f);
            }
            return match serde_json::from_slice::<RxJsonRpcMessage<RoleClient>>(&self.buf) {
                Ok(m) => {
                    use rmcp::model::JsonRpcMessage as M;
                    match (&m, self.before_first_answer.as_mut()) {
                        (M::Response(_) | M::Error(_), Some(_)) => self.before_first_answer = None,
                        (M::Notification(_) | M::Request(_), Some(n)) => {
                            *n += 1;
                            if *n > FLOOD_BEFORE_FIRST_ANSWER {
                                let count = *n;
                                return self.fail(Fault::NotificationFlood { count });
                            }
                        }
                        _ => {}
                    }
                    Some(m)
                }
                Err(e) => {
                    let excerpt = excerpt_of(&self.buf);
                    let line = self.line;
                    let why = e.to_string();
                    if serde_json::from_slice::<serde::de::IgnoredAny>(&self.buf).is_ok() {
                        self.fail(Fault::NotJsonRpc { line, excerpt, why })
                    } else {
                        self.fail(Fault::InvalidJson { line, excerpt, why })
                    }
                }
            };
        }
    }

    async fn close(&mut self) -> Result<(), Self::Error> {
        if let Some(mut w) = self.write.lock().await.take() {
            let _ = w.shutdown().await;
        }
        Ok(())
    }
}

/// Counting a listing result's items without building them.
pub(crate) mod listing {
    use super::Fault;
    use serde::de::{
        self, DeserializeSeed, Deserializer, IgnoredAny, MapAccess, SeqAccess, Visitor,
    };
    use std::fmt;

    /// Checks a JSON-RPC message: when its `result` holds `tools`, `prompts` or
    /// `resources`, that value must be an array of at most `limit` items. Allocates
    /// nothing per item. A line that is not JSON passes (the parser names it next).
    pub(crate) fn check(line: &[u8], limit: usize) -> Result<(), Fault> {
        let mut found = None;
        let mut de = serde_json::Deserializer::from_slice(line);
        let _ = Message {
            limit,
            found: &mut found,
        }
        .deserialize(&mut de);
        match found {
            Some(f) => Err(f),
            None => Ok(()),
        }
    }

    struct Message<'a> {
        limit: usize,
        found: &'a mut Option<Fault>,
    }

    impl<'de> DeserializeSeed<'de> for Message<'_> {
        type Value = ();
        fn deserialize<D: Deserializer<'de>>(self, d: D) -> Result<(), D::Error> {
            d.deserialize_map(self)
        }
    }

    impl<'de> Visitor<'de> for Message<'_> {
        type Value = ();
        fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
            f.write_str("a JSON-RPC message")
        }
        fn visit_map<A: MapAccess<'de>>(self, mut m: A) -> Result<(), A::Error> {
            while let Some(k) = m.next_key::<std::borrow::Cow<'de, str>>()? {
                if k == "result" {
                    m.next_value_seed(Result_ {
                        limit: self.limit,
                        found: &mut *self.found,
                    })?;
                } else {
                    m.next_value::<IgnoredAny>()?;
                }
            }
            Ok(())
        }
    }

    struct Result_<'a> {
        limit: usize,
        found: &'a mut Option<Fault>,
    }

    impl<'de> DeserializeSeed<'de> for Result_<'_> {
        type Value = ();
        fn deserialize<D: Deserializer<'de>>(self, d: D) -> Result<(), D::Error> {
            d.deserialize_any(self)
        }
    }

    impl<'de> Visitor<'de> for Result_<'_> {
        type Value = ();
        fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
            f.write_str("a result")
        }
        fn visit_map<A: MapAccess<'de>>(self, mut m: A) -> Result<(), A::Error> {
            while let Some(k) = m.next_key::<std::borrow::Cow<'de, str>>()? {
                let what = match k.as_ref() {
                    "tools" => "tools",
                    "prompts" => "prompts",
                    "resources" => "resources",
                    _ => {
                        m.next_value::<IgnoredAny>()?;
                        continue;
                    }
                };
                m.next_value_seed(Count {
                    what,
                    limit: self.limit,
                    found: &mut *self.found,
                })?;
            }
            Ok(())
        }
        // Any other result (a string, a number…) is the parser's to name.
        fn visit_bool<E: de::Error>(self, _: bool) -> Result<(), E> {
            Ok(())
        }
        fn visit_i64<E: de::Error>(self, _: i64) -> Result<(), E> {
            Ok(())
        }
        fn visit_u64<E: de::Error>(self, _: u64) -> Result<(), E> {
            Ok(())
        }
        fn visit_f64<E: de::Error>(self, _: f64) -> Result<(), E> {
            Ok(())
        }
        fn visit_str<E: de::Error>(self, _: &str) -> Result<(), E> {
            Ok(())
        }
        fn visit_unit<E: de::Error>(self) -> Result<(), E> {
            Ok(())
        }
        fn visit_seq<A: SeqAccess<'de>>(self, mut s: A) -> Result<(), A::Error> {
            while s.next_element::<IgnoredAny>()?.is_some() {}
            Ok(())
        }
    }

    /// Counts a list's items, up to the limit. A list that is not one, or holds more,
    /// leaves its fault in `found` and stops the parse (an error: the rest of the line
    /// is not read).
    struct Count<'a> {
        what: &'static str,
        limit: usize,
        found: &'a mut Option<Fault>,
    }

    impl<'de> DeserializeSeed<'de> for Count<'_> {
        type Value = ();
        fn deserialize<D: Deserializer<'de>>(self, d: D) -> Result<(), D::Error> {
            d.deserialize_any(self)
        }
    }

    impl Count<'_> {
        fn not_a_list<E: de::Error>(self, found: &'static str) -> Result<(), E> {
            *self.found = Some(Fault::NotAList {
                what: self.what,
                found,
            });
            Err(E::custom("not a list"))
        }
    }

    impl<'de> Visitor<'de> for Count<'_> {
        type Value = ();
        fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
            f.write_str("a list")
        }
        fn visit_seq<A: SeqAccess<'de>>(self, mut s: A) -> Result<(), A::Error> {
            let mut n = 0usize;
            while s.next_element::<IgnoredAny>()?.is_some() {
                n += 1;
                if n > self.limit {
                    *self.found = Some(Fault::TooManyItems {
                        what: self.what,
                        limit: self.limit,
                    });
                    return Err(de::Error::custom("too many items"));
                }
            }
            Ok(())
        }
        fn visit_map<A: MapAccess<'de>>(self, _: A) -> Result<(), A::Error> {
            self.not_a_list("an object")
        }
        fn visit_bool<E: de::Error>(self, _: bool) -> Result<(), E> {
            self.not_a_list("a boolean")
        }
        fn visit_i64<E: de::Error>(self, _: i64) -> Result<(), E> {
            self.not_a_list("a number")
        }
        fn visit_u64<E: de::Error>(self, _: u64) -> Result<(), E> {
            self.not_a_list("a number")
        }
        fn visit_f64<E: de::Error>(self, _: f64) -> Result<(), E> {
            self.not_a_list("a number")
        }
        fn visit_str<E: de::Error>(self, _: &str) -> Result<(), E> {
            self.not_a_list("a string")
        }
        fn visit_unit<E: de::Error>(self) -> Result<(), E> {
            self.not_a_list("null")
        }
    }

    #[cfg(test)]
    mod tests {
        use super::{Fault, check};
        use proptest::prelude::*;

        #[test]
        fn long_lists_and_lists_that_are_not_are_named() {
            let many = format!(
                r#"{{"jsonrpc":"2.0","id":1,"result":{{"tools":[{}]}}}}"#,
                [r#"{"name":"t"}"#; 11].join(",")
            );
            assert_eq!(
                check(many.as_bytes(), 10),
                Err(Fault::TooManyItems {
                    what: "tools",
                    limit: 10
                })
            );
            assert_eq!(check(many.as_bytes(), 11), Ok(()));
            assert_eq!(
                check(
                    br#"{"id":1,"result":{"nextCursor":null,"prompts":{"a":1}}}"#,
                    10
                ),
                Err(Fault::NotAList {
                    what: "prompts",
                    found: "an object"
                })
            );
            assert_eq!(
                check(br#"{"id":1,"result":{"tools":"x"}}"#, 10),
                Err(Fault::NotAList {
                    what: "tools",
                    found: "a string"
                })
            );
            for ok in [
                &br#"{"id":1,"result":{"content":[1,2,3]}}"#[..],
                br#"{"id":1,"result":"x"}"#,
                br#"{"id":1,"error":{"code":1}}"#,
                br#"{this is not json"#,
                br#"[1,2]"#,
            ] {
                assert_eq!(check(ok, 1), Ok(()));
            }
        }

        #[test]
        fn a_huge_listing_is_refused_without_building_it() {
            let line = format!(
                r#"{{"jsonrpc":"2.0","id":1,"result":{{"tools":[{}]}}}}"#,
                (0..400_000)
                    .map(|i| format!(r#"{{"name":"t{i}","inputSchema":{{}}}}"#))
                    .collect::<Vec<_>>()
                    .join(",")
            );
            assert_eq!(
                check(line.as_bytes(), 10_000),
                Err(Fault::TooManyItems {
                    what: "tools",
                    limit: 10_000
                })
            );
        }

        proptest! {
            /// Any line is checked without a panic; a fault only for a listing result.
            #[test]
            fn any_line_is_checked(s in ".{0,300}") {
                let r = check(s.as_bytes(), 3);
                if r.is_err() {
                    prop_assert!(s.contains("tools") || s.contains("prompts") || s.contains("resources"));
                }
            }
        }
    }
}
