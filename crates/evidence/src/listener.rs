//! The listener every evidence server accepts on: at most [`MAX_CONNECTIONS`]
//! connections at once (the next accept waits for one to close), each closed after
//! [`IDLE`] without a byte read or written. A client that opens many connections or
//! trickles a request (slowloris) therefore holds a bounded number of hyper's bounded
//! connection buffers, for a bounded time per stall.

use axum::serve::Listener;
use std::io;
use std::pin::Pin;
use std::sync::Arc;
use std::task::{Context, Poll};
use std::time::Duration;
use tokio::io::{AsyncRead, AsyncWrite, ReadBuf};
use tokio::net::{TcpListener, TcpStream};
use tokio::sync::{OwnedSemaphorePermit, Semaphore};
use tokio::time::{Instant, Sleep};

/// Connections open at once, at most.
pub const MAX_CONNECTIONS: usize = 128;
/// A connection with no byte moved for this long is closed.
pub const IDLE: Duration = Duration::from_secs(20);

/// A TCP listener under the connection cap and the idle timeout.
pub struct Capped {
    inner: TcpListener,
    slots: Arc<Semaphore>,
    idle: Duration,
}

impl Capped {
    pub fn new(inner: TcpListener, max: usize, idle: Duration) -> Self {
        Capped {
            inner,
            slots: Arc::new(Semaphore::new(max)),
            idle,
        }
    }
}

impl Listener for Capped {
    type Io = Idle;
    type Addr = std::net::SocketAddr;

    async fn accept(&mut self) -> (Idle, std::net::SocketAddr) {
        let permit = self
            .slots
            .clone()
            .acquire_owned()
            .await
            .expect("the semaphore is never closed");
        loop {
            match self.inner.accept().await {
                Ok((io, addr)) => {
                    return (
                        Idle {
                            io,
                            idle: self.idle,
                            timer: Box::pin(tokio::time::sleep(self.idle)),
                            _permit: permit,
                        },
                        addr,
                    );
                }
                // Out of descriptors and the like: wait a little, as axum's own
                // listener does, rather than spin.
                Err(_) => tokio::time::sleep(Duration::from_millis(50)).await,
            }
        }
    }

    fn local_addr(&self) -> io::Result<std::net::SocketAddr> {
        self.inner.local_addr()
    }
}

/// A connection that fails with `TimedOut` once idle too long; it holds its slot.
pub struct Idle {
    io: TcpStream,
    idle: Duration,
    timer: Pin<Box<Sleep>>,
    _permit: OwnedSemaphorePermit,
}

impl Idle {
    fn moved(&mut self) {
        let at = Instant::now() + self.idle;
        self.timer.as_mut().reset(at);
    }

    fn expired(&mut self, cx: &mut Context<'_>) -> bool {
        self.timer.as_mut().poll(cx).is_ready()
    }
}

fn timed_out() -> io::Error {
    io::Error::new(io::ErrorKind::TimedOut, "connection idle too long")
}

impl AsyncRead for Idle {
    fn poll_read(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &mut ReadBuf<'_>,
    ) -> Poll<io::Result<()>> {
        let me = self.get_mut();
        let before = buf.filled().len();
        match Pin::new(&mut me.io).poll_read(cx, buf) {
            Poll::Ready(Ok(())) => {
                if buf.filled().len() > before {
                    me.moved();
                }
                Poll::Ready(Ok(()))
            }
            Poll::Ready(Err(e)) => Poll::Ready(Err(e)),
            Poll::Pending if me.expired(cx) => Poll::Ready(Err(timed_out())),
            Poll::Pending => Poll::Pending,
        }
    }
}

impl AsyncWrite for Idle {
    fn poll_write(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &[u8],
    ) -> Poll<io::Result<usize>> {
        let me = self.get_mut();
        match Pin::new(&mut me.io).poll_write(cx, buf) {
            Poll::Ready(Ok(n)) => {
                if n > 0 {
                    me.moved();
                }
                Poll::Ready(Ok(n))
            }
            Poll::Pending if me.expired(cx) => Poll::Ready(Err(timed_out())),
            other => other,
        }
    }

    fn poll_flush(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        Pin::new(&mut self.get_mut().io).poll_flush(cx)
    }

    fn poll_shutdown(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        Pin::new(&mut self.get_mut().io).poll_shutdown(cx)
    }
}
