//! The stdio transport of the client: newline-delimited JSON-RPC over a server's
//! stdin/stdout, strict and bounded.
//!
//! rmcp's own async read/write transport drops an oversized line and skips a line that
//! is not JSON, and waits on: against a hostile server that turns a flood or garbage into
//! a silent hang. This one ends the session instead and records why ([`Fault`]), so the
//! client reports a named error at once: a message longer than the limit (read no
//! further than the limit: memory stays bounded), a line that is not JSON, JSON that is
//! not a JSON-RPC message, the end of the stream.

use rmcp::RoleClient;
use rmcp::service::{RxJsonRpcMessage, TxJsonRpcMessage};
use rmcp::transport::Transport;
use std::sync::{Arc, Mutex};
use tokio::io::{AsyncBufReadExt, AsyncRead, AsyncWrite, AsyncWriteExt, BufReader};

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
    /// The server closed its stdout.
    Eof,
    /// Reading failed.
    Io(String),
}

/// Where the transport leaves its [`Fault`] for the client to read.
pub type FaultSlot = Arc<Mutex<Option<Fault>>>;

pub struct LineTransport<R, W> {
    read: BufReader<R>,
    write: Arc<tokio::sync::Mutex<Option<W>>>,
    buf: Vec<u8>,
    max: usize,
    line: u64,
    fault: FaultSlot,
}

impl<R: AsyncRead + Unpin + Send, W: AsyncWrite + Unpin + Send + 'static> LineTransport<R, W> {
    pub fn new(read: R, write: W, max_message_bytes: usize, fault: FaultSlot) -> Self {
        LineTransport {
            read: BufReader::with_capacity(64 * 1024, read),
            write: Arc::new(tokio::sync::Mutex::new(Some(write))),
            buf: Vec::new(),
            max: max_message_bytes,
            line: 0,
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

impl<R, W> Transport<RoleClient> for LineTransport<R, W>
where
    R: AsyncRead + Unpin + Send,
    W: AsyncWrite + Unpin + Send + 'static,
{
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
            return match serde_json::from_slice::<RxJsonRpcMessage<RoleClient>>(&self.buf) {
                Ok(m) => Some(m),
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
