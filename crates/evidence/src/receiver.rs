//! The OTLP/HTTP trace receiver: `POST /v1/traces` with a protobuf
//! (`application/x-protobuf`) or JSON (`application/json`) `ExportTraceServiceRequest`,
//! as the official SDK exporters send them, filed into a [`Collector`].
//!
//! It runs on a thread of its own (a single-threaded runtime), so it serves whatever the
//! caller's runtime is doing, and stops when the last handle to it is dropped. Targets
//! naming the same address share one receiver. It executes nothing and keeps nothing
//! but the open traces' bounded buffers: a body over the byte cap is 413, a body of the
//! wrong type 415, one over the element or depth cap or malformed 400, each counted.

use crate::caps::Caps;
use crate::collector::Collector;
use crate::wire;
use axum::Router;
use axum::body::Bytes;
use axum::extract::{DefaultBodyLimit, State};
use axum::http::{HeaderMap, StatusCode, header};
use axum::response::{IntoResponse, Response};
use axum::routing::post;
use opentelemetry_proto::tonic::collector::trace::v1::{
    ExportTraceServiceRequest, ExportTraceServiceResponse,
};
use prost::Message;
use std::net::SocketAddr;
use std::sync::{Arc, Mutex, Weak};

/// Why a server could not start.
#[derive(Debug, thiserror::Error)]
pub enum StartError {
    #[error(
        "cannot listen on {addr} for {what}: {source}; choose a free address (e.g. 127.0.0.1:0 for any free port)"
    )]
    Bind {
        what: &'static str,
        addr: SocketAddr,
        #[source]
        source: std::io::Error,
    },
    #[error("cannot start the {what} thread: {source}")]
    Thread {
        what: &'static str,
        #[source]
        source: std::io::Error,
    },
}

/// A server running on its own thread until dropped.
pub struct Server {
    addr: SocketAddr,
    stop: Option<tokio::sync::oneshot::Sender<()>>,
}

impl Server {
    /// Binds `addr` now (so a busy address is a build error) and serves `app` on a new
    /// thread, under the connection cap and idle timeout of [`crate::listener`].
    pub fn spawn(what: &'static str, addr: SocketAddr, app: Router) -> Result<Server, StartError> {
        Self::spawn_capped(
            what,
            addr,
            app,
            crate::listener::MAX_CONNECTIONS,
            crate::listener::IDLE,
        )
    }

    /// [`Server::spawn`] with its own connection cap and idle timeout.
    pub fn spawn_capped(
        what: &'static str,
        addr: SocketAddr,
        app: Router,
        max_connections: usize,
        idle: std::time::Duration,
    ) -> Result<Server, StartError> {
        let listener = std::net::TcpListener::bind(addr).map_err(|source| StartError::Bind {
            what,
            addr,
            source,
        })?;
        listener
            .set_nonblocking(true)
            .map_err(|source| StartError::Bind { what, addr, source })?;
        let bound =
            listener
                .local_addr()
                .map_err(|source| StartError::Bind { what, addr, source })?;
        let (tx, rx) = tokio::sync::oneshot::channel::<()>();
        std::thread::Builder::new()
            .name(format!("gauntlet-{what}"))
            .spawn(move || {
                let rt = match tokio::runtime::Builder::new_current_thread()
                    .enable_all()
                    .build()
                {
                    Ok(rt) => rt,
                    Err(_) => return,
                };
                rt.block_on(async move {
                    let Ok(l) = tokio::net::TcpListener::from_std(listener) else {
                        return;
                    };
                    let l = crate::listener::Capped::new(l, max_connections, idle);
                    let _ = axum::serve(l, app)
                        .with_graceful_shutdown(async move {
                            let _ = rx.await;
                        })
                        .await;
                });
            })
            .map_err(|source| StartError::Thread { what, source })?;
        Ok(Server {
            addr: bound,
            stop: Some(tx),
        })
    }

    /// The address it listens on (the real port when asked for port 0).
    pub fn addr(&self) -> SocketAddr {
        self.addr
    }
}

impl Drop for Server {
    fn drop(&mut self) {
        if let Some(tx) = self.stop.take() {
            let _ = tx.send(());
        }
    }
}

/// A running receiver and the collector it files into.
pub struct Receiver {
    server: Server,
    collector: Arc<Collector>,
}

/// Receivers running now, by the address they were asked for (port 0 never shared).
static RUNNING: Mutex<Vec<(SocketAddr, Weak<Receiver>)>> = Mutex::new(Vec::new());

impl Receiver {
    /// The receiver on `addr`: the one already running there in this process, or a new
    /// one with `caps` (a shared receiver keeps the caps it was started with).
    pub fn start(addr: SocketAddr, caps: Caps) -> Result<Arc<Receiver>, StartError> {
        let mut running = RUNNING.lock().unwrap_or_else(|p| p.into_inner());
        running.retain(|(_, w)| w.strong_count() > 0);
        if addr.port() != 0
            && let Some(r) = running
                .iter()
                .find(|(a, _)| *a == addr)
                .and_then(|(_, w)| w.upgrade())
        {
            return Ok(r);
        }
        let collector = Arc::new(Collector::new(caps));
        let app = router(collector.clone());
        let server = Server::spawn("otlp-receiver", addr, app)?;
        let r = Arc::new(Receiver { server, collector });
        running.push((addr, Arc::downgrade(&r)));
        Ok(r)
    }

    pub fn addr(&self) -> SocketAddr {
        self.server.addr()
    }

    /// The OTLP/HTTP base endpoint (`OTEL_EXPORTER_OTLP_ENDPOINT`): `http://addr`.
    pub fn endpoint(&self) -> String {
        format!("http://{}", self.addr())
    }

    pub fn collector(&self) -> &Arc<Collector> {
        &self.collector
    }
}

/// The receiver's routes over `collector`.
pub fn router(collector: Arc<Collector>) -> Router {
    let limit = collector.caps().max_body_bytes;
    Router::new()
        .route("/v1/traces", post(traces))
        .layer(DefaultBodyLimit::max(limit))
        .with_state(collector)
}

#[derive(Clone, Copy, PartialEq, Eq)]
enum Encoding {
    Protobuf,
    Json,
}

fn refuse(c: &Collector, status: StatusCode, msg: String) -> Response {
    c.refused();
    (
        status,
        [(header::CONTENT_TYPE, "text/plain; charset=utf-8")],
        msg,
    )
        .into_response()
}

async fn traces(State(c): State<Arc<Collector>>, headers: HeaderMap, body: Bytes) -> Response {
    let ct = headers
        .get(header::CONTENT_TYPE)
        .and_then(|v| v.to_str().ok())
        .unwrap_or("")
        .to_ascii_lowercase();
    let media = ct.split(';').next().unwrap_or("").trim().to_string();
    let enc = match media.as_str() {
        "application/x-protobuf" | "application/protobuf" => Encoding::Protobuf,
        "application/json" => Encoding::Json,
        _ => {
            return refuse(
                &c,
                StatusCode::UNSUPPORTED_MEDIA_TYPE,
                "send application/x-protobuf or application/json\n".into(),
            );
        }
    };
    if let Some(ce) = headers.get(header::CONTENT_ENCODING)
        && !ce.as_bytes().eq_ignore_ascii_case(b"identity")
    {
        return refuse(
            &c,
            StatusCode::UNSUPPORTED_MEDIA_TYPE,
            "compressed bodies are not accepted: set the exporter's compression to none\n".into(),
        );
    }
    let caps = *c.caps();
    let decoded = match enc {
        Encoding::Protobuf => wire::check_protobuf(&body, caps.max_elements, caps.max_depth)
            .map_err(|e| e.to_string())
            .and_then(|_| {
                ExportTraceServiceRequest::decode(body.as_ref()).map_err(|e| e.to_string())
            }),
        Encoding::Json => wire::check_json(&body, caps.max_elements, caps.max_depth)
            .map_err(|e| e.to_string())
            .and_then(|_| {
                serde_json::from_slice::<ExportTraceServiceRequest>(&body)
                    .map_err(|e| e.to_string())
            }),
    };
    let req = match decoded {
        Ok(r) => r,
        Err(why) => {
            return refuse(&c, StatusCode::BAD_REQUEST, format!("{why}\n"));
        }
    };
    c.ingest(&req);
    drop(req);
    let ok = ExportTraceServiceResponse {
        partial_success: None,
    };
    match enc {
        Encoding::Protobuf => (
            [(header::CONTENT_TYPE, "application/x-protobuf")],
            ok.encode_to_vec(),
        )
            .into_response(),
        Encoding::Json => ([(header::CONTENT_TYPE, "application/json")], "{}").into_response(),
    }
}
