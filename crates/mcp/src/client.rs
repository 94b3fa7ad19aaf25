//! The MCP client: one [`Session`] per server, over a confined stdio child or
//! streamable HTTP, with every wait time-limited and every listing bounded.
//!
//! A server that misbehaves is a named [`McpError`], never a hang or an unbounded
//! buffer: `timeout` (no answer within the request time limit), `oversized_message` (a
//! message over the size limit; read no further than the limit), `invalid_json` and
//! `not_json_rpc` (what it printed on stdout, with the line number), `exited` (with its
//! status and the tail of its stderr), `too_many_items` (a listing beyond the item or
//! page limit, counted before the listing is parsed), `invalid_result` (an answer that is
//! not the result asked for: `{"tools": {}}`), `notification_flood` (notifications
//! instead of an answer to `initialize`), `connect`, `spawn`, `confinement`,
//! `server_error` (a JSON-RPC error answer).

use crate::BoxFuture;
use crate::confine::{self, ConfineLimits, Confined, SpawnError};
use crate::scan::Inventory;
use crate::servers::{Endpoint, ServerSpec};
use crate::transport::{Erased, Fault, FaultSlot, LineTransport, Reader, Writer};
use rmcp::model::{
    CallToolRequestParams, ClientCapabilities, ClientConfig, Implementation, PaginatedRequestParams,
};
use rmcp::service::{RoleClient, RunningService, ServiceError};
use rmcp::transport::streamable_http_client::StreamableHttpClientTransportConfig;
use rmcp::{ServiceExt, transport::StreamableHttpClientTransport};
use serde_json::Value;
use std::sync::{Arc, Mutex};
use std::time::Duration;

/// Limits of a client session.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Limits {
    /// Connecting and `initialize`.
    pub connect_timeout: Duration,
    /// Each request after that (one page of a listing, one tool call).
    pub request_timeout: Duration,
    /// Largest message accepted from a server (bytes).
    pub max_message_bytes: usize,
    /// Most items a listing may hold, and most pages it may take.
    pub max_items: usize,
    pub max_pages: usize,
    /// The confinement of stdio servers.
    pub confine: ConfineLimits,
}

impl Default for Limits {
    fn default() -> Self {
        Limits {
            connect_timeout: Duration::from_secs(30),
            request_timeout: Duration::from_secs(30),
            max_message_bytes: 16 << 20,
            max_items: 10_000,
            max_pages: 100,
            confine: ConfineLimits::default(),
        }
    }
}

/// Why a server could not be used.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum McpError {
    #[error("could not start the server: {0}")]
    Spawn(String),
    #[error("the server {0}")]
    Confinement(String),
    #[error("no answer to {what} within {} s (the server hangs)", after.as_secs_f64())]
    Timeout { what: String, after: Duration },
    #[error(
        "the server sent a message larger than {limit} bytes (flood); the session was ended without reading more"
    )]
    Oversized { limit: usize },
    #[error(
        "line {line} of the server's stdout is not JSON ({why}): `{excerpt}` (a stdio server must print only JSON-RPC messages on stdout; logs go to stderr)"
    )]
    InvalidJson {
        line: u64,
        excerpt: String,
        why: String,
    },
    #[error(
        "line {line} of the server's stdout is JSON but not a JSON-RPC message ({why}): `{excerpt}`"
    )]
    NotJsonRpc {
        line: u64,
        excerpt: String,
        why: String,
    },
    #[error("the server {how} during {what}{}", if stderr.is_empty() { String::new() } else { format!("; its stderr ends: {stderr}") })]
    Exited {
        what: String,
        how: String,
        stderr: String,
    },
    #[error("{what} holds more than {limit} {unit} (limit)")]
    TooManyItems {
        what: String,
        limit: usize,
        unit: &'static str,
    },
    #[error("could not connect: {0}")]
    Connect(String),
    #[error("the server's answer to {what} is not a {what} result: {why}")]
    InvalidResult { what: String, why: String },
    #[error(
        "the server sent {count} notifications and requests before answering anything (a flood); the session was ended"
    )]
    NotificationFlood { count: u64 },
    #[error("the server answered {what} with an error: {message}")]
    Server { what: String, message: String },
}

impl McpError {
    /// The outcome's name (`timeout`, `oversized_message`, …).
    pub fn kind(&self) -> &'static str {
        match self {
            McpError::Spawn(_) => "spawn",
            McpError::Confinement(_) => "confinement",
            McpError::Timeout { .. } => "timeout",
            McpError::Oversized { .. } => "oversized_message",
            McpError::InvalidJson { .. } => "invalid_json",
            McpError::NotJsonRpc { .. } => "not_json_rpc",
            McpError::Exited { .. } => "exited",
            McpError::TooManyItems { .. } => "too_many_items",
            McpError::Connect(_) => "connect",
            McpError::InvalidResult { .. } => "invalid_result",
            McpError::NotificationFlood { .. } => "notification_flood",
            McpError::Server { .. } => "server_error",
        }
    }
}

fn client_info() -> ClientConfig {
    let mut info = Implementation::default();
    info.name = "gauntlet".into();
    info.version = env!("CARGO_PKG_VERSION").into();
    ClientConfig::new(ClientCapabilities::default(), info)
}

/// Runs `initialize` over `t`: the one place the client's service loop is instantiated
/// (every transport reaches it erased).
async fn serve(
    t: Erased<RoleClient>,
) -> Result<RunningService<RoleClient, ClientConfig>, rmcp::service::ClientInitializeError> {
    client_info().serve(t).await
}

/// A connected server.
pub struct Session {
    pub name: String,
    pub transport: String,
    service: Option<RunningService<RoleClient, ClientConfig>>,
    fault: FaultSlot,
    child: Option<Confined>,
    limits: Limits,
}

/// A stdio server's spawn, as one call (tests and the served side use it too).
pub fn spawn_stdio(spec: &ServerSpec, limits: &ConfineLimits) -> Result<Confined, McpError> {
    let Endpoint::Stdio {
        command,
        args,
        env,
        cwd,
    } = &spec.endpoint
    else {
        return Err(McpError::Spawn("not a stdio server".into()));
    };
    confine::spawn(command, args, env, cwd.as_deref(), limits).map_err(|e| match e {
        SpawnError::Unconfined(why) => McpError::Confinement(format!("cannot be confined on this machine: {why}; pass --allow-unconfined-servers to run it anyway")),
        SpawnError::Start(why) => McpError::Spawn(why),
    })
}

impl Session {
    /// Starts (stdio) or reaches (HTTP) the server and runs `initialize`.
    pub fn connect<'a>(
        spec: &'a ServerSpec,
        limits: &'a Limits,
    ) -> BoxFuture<'a, Result<Session, McpError>> {
        Box::pin(Session::connect_now(spec, limits))
    }

    async fn connect_now(spec: &ServerSpec, limits: &Limits) -> Result<Session, McpError> {
        let fault: FaultSlot = Arc::new(Mutex::new(None));
        let mut s = Session {
            name: spec.name.clone(),
            transport: spec.describe(),
            service: None,
            fault: fault.clone(),
            child: None,
            limits: *limits,
        };
        let started = match &spec.endpoint {
            Endpoint::Stdio { .. } => {
                let mut child = spawn_stdio(spec, &limits.confine)?;
                let (Some(stdout), Some(stdin)) = (child.stdout.take(), child.stdin.take()) else {
                    return Err(McpError::Spawn("no pipes to the server".into()));
                };
                s.child = Some(child);
                let t = LineTransport::new(
                    Box::new(stdout),
                    Box::new(stdin),
                    limits.max_message_bytes,
                    limits.max_items,
                    fault,
                );
                tokio::time::timeout(limits.connect_timeout, serve(Erased::new(t))).await
            }
            Endpoint::Http { url } => {
                let _ = rustls::crypto::ring::default_provider().install_default();
                let http = reqwest::Client::builder()
                    .redirect(reqwest::redirect::Policy::none())
                    .connect_timeout(limits.connect_timeout)
                    .no_proxy()
                    .build()
                    .map_err(|e| McpError::Connect(e.to_string()))?;
                let mut cfg = StreamableHttpClientTransportConfig::with_uri(url.as_str());
                cfg.max_json_response_size = limits.max_message_bytes;
                cfg.max_sse_event_size = limits.max_message_bytes;
                cfg.reinit_on_expired_session = false;
                let t = StreamableHttpClientTransport::with_client(http, cfg);
                tokio::time::timeout(limits.connect_timeout, serve(Erased::new(t))).await
            }
        };
        match started {
            Err(_) => {
                let e = s
                    .fault_or(
                        McpError::Timeout {
                            what: "initialize".into(),
                            after: limits.connect_timeout,
                        },
                        "initialize",
                    )
                    .await;
                s.close().await;
                Err(e)
            }
            Ok(Err(e)) => {
                let why = e.to_string();
                let err = s.fault_or(McpError::Connect(why), "initialize").await;
                s.close().await;
                Err(err)
            }
            Ok(Ok(service)) => {
                s.service = Some(service);
                Ok(s)
            }
        }
    }

    /// A session over any byte stream pair (an in-process served server's duplex pipe).
    pub fn over<'a>(
        name: &'a str,
        transport: &'a str,
        read: Reader,
        write: Writer,
        limits: &'a Limits,
    ) -> BoxFuture<'a, Result<Session, McpError>> {
        Box::pin(Session::over_now(name, transport, read, write, limits))
    }

    async fn over_now(
        name: &str,
        transport: &str,
        read: Reader,
        write: Writer,
        limits: &Limits,
    ) -> Result<Session, McpError> {
        let fault: FaultSlot = Arc::new(Mutex::new(None));
        let mut s = Session {
            name: name.into(),
            transport: transport.into(),
            service: None,
            fault: fault.clone(),
            child: None,
            limits: *limits,
        };
        let t = LineTransport::new(
            read,
            write,
            limits.max_message_bytes,
            limits.max_items,
            fault,
        );
        match tokio::time::timeout(limits.connect_timeout, serve(Erased::new(t))).await {
            Err(_) => Err(s
                .fault_or(
                    McpError::Timeout {
                        what: "initialize".into(),
                        after: limits.connect_timeout,
                    },
                    "initialize",
                )
                .await),
            Ok(Err(e)) => Err(s
                .fault_or(McpError::Connect(e.to_string()), "initialize")
                .await),
            Ok(Ok(service)) => {
                s.service = Some(service);
                Ok(s)
            }
        }
    }

    /// An in-process session with a gauntlet-served server.
    pub fn in_process<'a>(
        name: &'a str,
        served: crate::serve::Served,
        limits: &'a Limits,
    ) -> BoxFuture<'a, Result<Session, McpError>> {
        Box::pin(async move {
            let (r, w) = tokio::io::split(crate::serve::in_process(served));
            Session::over(name, "in-process", Box::new(r), Box::new(w), limits).await
        })
    }

    /// The error the transport recorded, if any, else `otherwise`.
    async fn fault_or(&self, otherwise: McpError, what: &str) -> McpError {
        let fault = self.fault.lock().unwrap().clone();
        match fault {
            Some(Fault::Oversized { limit }) => McpError::Oversized { limit },
            Some(Fault::InvalidJson { line, excerpt, why }) => {
                McpError::InvalidJson { line, excerpt, why }
            }
            Some(Fault::NotJsonRpc { line, excerpt, why }) => {
                McpError::NotJsonRpc { line, excerpt, why }
            }
            Some(Fault::TooManyItems { what, limit }) => McpError::TooManyItems {
                what: format!("{what}/list"),
                limit,
                unit: "items",
            },
            Some(Fault::NotAList { what: list, found }) => McpError::InvalidResult {
                what: format!("{list}/list"),
                why: format!("`{list}` is {found}, not an array"),
            },
            Some(Fault::NotificationFlood { count }) => McpError::NotificationFlood { count },
            Some(Fault::Eof | Fault::Io(_)) => {
                // Give the supervisor a moment to report how the server ended.
                let mut how = None;
                for _ in 0..50 {
                    how = self.child.as_ref().and_then(Confined::ended);
                    if how.is_some() {
                        break;
                    }
                    tokio::time::sleep(Duration::from_millis(10)).await;
                }
                McpError::Exited {
                    what: what.to_string(),
                    how: how.unwrap_or_else(|| "closed its stdout".into()),
                    stderr: self
                        .child
                        .as_ref()
                        .map(Confined::stderr_tail)
                        .unwrap_or_default(),
                }
            }
            None => otherwise,
        }
    }

    /// A stdio server's scratch directory (its `${GAUNTLET_SCRATCH}`).
    pub fn scratch(&self) -> Option<std::path::PathBuf> {
        self.child.as_ref().map(Confined::scratch_path)
    }

    fn service(&self) -> &RunningService<RoleClient, ClientConfig> {
        self.service.as_ref().expect("connected")
    }

    /// `serverInfo` from `initialize`.
    pub fn server_info(&self) -> Value {
        self.service()
            .peer_info()
            .and_then(|i| serde_json::to_value(&i.server_info).ok())
            .unwrap_or(Value::Null)
    }

    /// Whether the server advertised a capability (`tools`, `prompts`, `resources`).
    pub fn offers(&self, what: &str) -> bool {
        let Some(info) = self.service().peer_info() else {
            return true;
        };
        let caps = serde_json::to_value(&info.capabilities).unwrap_or(Value::Null);
        caps.get(what).is_some_and(|v| !v.is_null())
    }

    async fn request<T>(
        &self,
        what: &str,
        f: impl Future<Output = Result<T, ServiceError>>,
    ) -> Result<T, McpError> {
        match tokio::time::timeout(self.limits.request_timeout, f).await {
            Err(_) => Err(self
                .fault_or(
                    McpError::Timeout {
                        what: what.into(),
                        after: self.limits.request_timeout,
                    },
                    what,
                )
                .await),
            Ok(Ok(v)) => Ok(v),
            Ok(Err(ServiceError::McpError(e))) => Err(McpError::Server {
                what: what.into(),
                message: crate::finding::excerpt(&e.message),
            }),
            Ok(Err(ServiceError::UnexpectedResponse)) => Err(self
                .fault_or(
                    McpError::InvalidResult {
                        what: what.into(),
                        why: "the answer has the shape of another result".into(),
                    },
                    what,
                )
                .await),
            Ok(Err(e)) => Err(self.fault_or(McpError::Connect(e.to_string()), what).await),
        }
    }

    /// Follows `nextCursor` to the last page within the page and item limits.
    async fn list_paged<P, F, Fut>(
        &self,
        what: &str,
        mut page: F,
        items: impl Fn(P) -> (Vec<Value>, Option<String>),
    ) -> Result<Vec<Value>, McpError>
    where
        F: FnMut(Option<PaginatedRequestParams>) -> Fut,
        Fut: Future<Output = Result<P, ServiceError>>,
    {
        let mut out = Vec::new();
        let mut cursor: Option<String> = None;
        for n in 0.. {
            if n == self.limits.max_pages {
                return Err(McpError::TooManyItems {
                    what: what.into(),
                    limit: self.limits.max_pages,
                    unit: "pages",
                });
            }
            let params = cursor.take().map(|c| {
                let mut p = PaginatedRequestParams::default();
                p.cursor = Some(c);
                p
            });
            let (mut got, next) = items(self.request(what, page(params)).await?);
            out.append(&mut got);
            if out.len() > self.limits.max_items {
                return Err(McpError::TooManyItems {
                    what: what.into(),
                    limit: self.limits.max_items,
                    unit: "items",
                });
            }
            match next {
                Some(c) if !c.is_empty() => cursor = Some(c),
                _ => break,
            }
        }
        Ok(out)
    }

    /// `tools/list`, every page, as the server sent the definitions.
    pub fn list_tools(&self) -> BoxFuture<'_, Result<Vec<Value>, McpError>> {
        Box::pin(self.list_tools_now())
    }

    async fn list_tools_now(&self) -> Result<Vec<Value>, McpError> {
        let peer = self.service().peer().clone();
        self.list_paged(
            "tools/list",
            move |p| {
                let peer = peer.clone();
                async move { peer.list_tools(p).await }
            },
            |r| {
                (
                    r.tools
                        .iter()
                        .map(|t| serde_json::to_value(t).unwrap_or(Value::Null))
                        .collect(),
                    r.next_cursor,
                )
            },
        )
        .await
    }

    /// `prompts/list`; `None` when the server does not offer prompts.
    pub fn list_prompts(&self) -> BoxFuture<'_, Result<Option<Vec<Value>>, McpError>> {
        Box::pin(self.list_prompts_now())
    }

    async fn list_prompts_now(&self) -> Result<Option<Vec<Value>>, McpError> {
        if !self.offers("prompts") {
            return Ok(None);
        }
        let peer = self.service().peer().clone();
        self.list_paged(
            "prompts/list",
            move |p| {
                let peer = peer.clone();
                async move { peer.list_prompts(p).await }
            },
            |r| {
                (
                    r.prompts
                        .iter()
                        .map(|t| serde_json::to_value(t).unwrap_or(Value::Null))
                        .collect(),
                    r.next_cursor,
                )
            },
        )
        .await
        .map(Some)
    }

    /// `resources/list`; `None` when the server does not offer resources.
    pub fn list_resources(&self) -> BoxFuture<'_, Result<Option<Vec<Value>>, McpError>> {
        Box::pin(self.list_resources_now())
    }

    async fn list_resources_now(&self) -> Result<Option<Vec<Value>>, McpError> {
        if !self.offers("resources") {
            return Ok(None);
        }
        let peer = self.service().peer().clone();
        self.list_paged(
            "resources/list",
            move |p| {
                let peer = peer.clone();
                async move { peer.list_resources(p).await }
            },
            |r| {
                (
                    r.resources
                        .iter()
                        .map(|t| serde_json::to_value(t).unwrap_or(Value::Null))
                        .collect(),
                    r.next_cursor,
                )
            },
        )
        .await
        .map(Some)
    }

    /// Everything the server offers.
    pub fn inventory(&self) -> BoxFuture<'_, Result<Inventory, McpError>> {
        Box::pin(self.inventory_now())
    }

    async fn inventory_now(&self) -> Result<Inventory, McpError> {
        let mut notes = Vec::new();
        let mut tools_relisted = None;
        let tools = if self.offers("tools") {
            let first = self.list_tools().await?;
            // Listed twice: a server that changes its tools once they were listed (an
            // in-session rug pull) shows it here.
            let again = self.list_tools().await?;
            if again != first {
                tools_relisted = Some(again);
            }
            first
        } else {
            notes.push("tools/list: the server does not offer tools".to_string());
            Vec::new()
        };
        let prompts = match self.list_prompts().await? {
            Some(p) => p,
            None => {
                notes.push("prompts/list: the server does not offer prompts".into());
                Vec::new()
            }
        };
        let resources = match self.list_resources().await? {
            Some(r) => r,
            None => {
                notes.push("resources/list: the server does not offer resources".into());
                Vec::new()
            }
        };
        Ok(Inventory {
            server: self.name.clone(),
            transport: self.transport.clone(),
            server_info: self.server_info(),
            tools,
            prompts,
            resources,
            tools_relisted,
            notes,
        })
    }

    /// `tools/call`: the result as the server sent it (`content`, `isError`,
    /// `structuredContent`).
    pub fn call_tool<'a>(
        &'a self,
        name: &'a str,
        arguments: Value,
    ) -> BoxFuture<'a, Result<Value, McpError>> {
        Box::pin(self.call_tool_now(name, arguments))
    }

    async fn call_tool_now(&self, name: &str, arguments: Value) -> Result<Value, McpError> {
        let mut p = CallToolRequestParams::new(name.to_string());
        p.arguments = match arguments {
            Value::Object(m) => Some(m),
            Value::Null => None,
            other => {
                let mut m = serde_json::Map::new();
                m.insert("value".into(), other);
                Some(m)
            }
        };
        let peer = self.service().peer().clone();
        let r = self
            .request(&format!("tools/call {name}"), async move {
                peer.call_tool(p).await
            })
            .await?;
        Ok(serde_json::to_value(&r).unwrap_or(Value::Null))
    }

    /// Ends the session: the service stops, a stdio server is killed with every
    /// descendant.
    pub fn close(self) -> BoxFuture<'static, ()> {
        Box::pin(self.close_now())
    }

    async fn close_now(mut self) {
        if let Some(s) = self.service.take() {
            let _ = tokio::time::timeout(Duration::from_secs(2), s.cancel()).await;
        }
        if let Some(c) = self.child.take() {
            c.end(Duration::from_millis(500)).await;
        }
    }
}

/// Connects to a server, lists everything and disconnects.
pub fn inventory_of<'a>(
    spec: &'a ServerSpec,
    limits: &'a Limits,
) -> BoxFuture<'a, Result<Inventory, McpError>> {
    Box::pin(inventory_of_now(spec, limits))
}

async fn inventory_of_now(spec: &ServerSpec, limits: &Limits) -> Result<Inventory, McpError> {
    let s = Session::connect(spec, limits).await?;
    let r = s.inventory().await;
    s.close().await;
    r
}
