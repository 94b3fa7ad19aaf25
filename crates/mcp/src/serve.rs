//! gauntlet's own MCP server: tools defined as data, served over rmcp — in process
//! (a duplex pipe), over stdio (`gauntlet mcp-serve FILE`) or streamable HTTP on
//! loopback — recording every call it receives.
//!
//! A [`ServerDef`] (JSON) lists tools, each with the definition it is listed with, an
//! optional definition listed from the second `tools/list` on (a rug pull), and the text
//! a call returns (`{arguments}` in it is replaced by the call's arguments as JSON). The
//! record of calls ([`CallLog`]) is the server-side evidence the injection vectors are
//! graded on: which tool was called with which arguments, in order.
//!
//! ```json
//! {"name": "weather", "instructions": null,
//!  "tools": [{"definition": {"name": "forecast", "description": "…", "inputSchema": {…}},
//!             "later": null, "result": "Sunny, 21 °C."}],
//!  "prompts": [], "resources": []}
//! ```

use crate::BoxFuture;
use rmcp::model::{
    CallToolRequestParams, CallToolResponse, CallToolResult, ContentBlock, ListPromptsResult,
    ListResourcesResult, ListToolsResult, PaginatedRequestParams, Prompt, Resource,
    ServerCapabilities, ServerConfig, Tool,
};
use rmcp::service::{RequestContext, RoleServer};
use rmcp::{ErrorData, ServerHandler, ServiceExt};
use serde::{Deserialize, Serialize};
use serde_json::Value;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};

/// One served tool.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ServedTool {
    /// The definition `tools/list` shows (name, description, inputSchema…).
    pub definition: Value,
    /// The definition shown from the second `tools/list` on (a rug pull).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub later: Option<Value>,
    /// What a call returns; `{arguments}` becomes the call's arguments as JSON.
    #[serde(default = "default_result")]
    pub result: String,
    /// The result is an error result (`isError: true`).
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub is_error: bool,
}

fn default_result() -> String {
    "ok".into()
}

/// A served server.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ServerDef {
    pub name: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub instructions: Option<String>,
    pub tools: Vec<ServedTool>,
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub prompts: Vec<Value>,
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub resources: Vec<Value>,
}

/// Why a server definition file could not be used; every message names the file.
#[derive(Debug, thiserror::Error)]
pub enum DefError {
    #[error("{}: {cause}", path.display())]
    Read {
        path: PathBuf,
        #[source]
        cause: std::io::Error,
    },
    /// Not the JSON of a [`ServerDef`]; the message gives the line and column.
    #[error("{}:{}:{}: {cause}", path.display(), cause.line(), cause.column())]
    Json {
        path: PathBuf,
        #[source]
        cause: serde_json::Error,
    },
    /// `tools[index].field` (`definition` or `later`) is not an MCP tool definition.
    #[error("{}: tools[{index}].{field}: not an MCP tool definition: {cause}", path.display())]
    Tool {
        path: PathBuf,
        index: usize,
        field: &'static str,
        #[source]
        cause: serde_json::Error,
    },
}

impl ServerDef {
    /// Reads a server definition file.
    pub fn read(path: &Path) -> Result<ServerDef, DefError> {
        // A definition is hand-written: capped like a config, never a device or a pipe
        // (`mcp-serve /dev/zero` read until memory ran out; a named pipe hung).
        const DEFINITION: gauntlet_core::files::Kind = gauntlet_core::files::Kind {
            what: "server definition",
            max_bytes: gauntlet_core::files::Kind::CONFIG.max_bytes,
        };
        let text =
            gauntlet_core::files::read_to_string(path, DEFINITION).map_err(|e| DefError::Read {
                path: path.to_path_buf(),
                cause: e.into_io(),
            })?;
        let def: ServerDef = serde_json::from_str(&text).map_err(|cause| DefError::Json {
            path: path.to_path_buf(),
            cause,
        })?;
        for (i, t) in def.tools.iter().enumerate() {
            for (k, d) in [
                ("definition", Some(&t.definition)),
                ("later", t.later.as_ref()),
            ] {
                if let Some(d) = d {
                    serde_json::from_value::<Tool>(d.clone()).map_err(|cause| DefError::Tool {
                        path: path.to_path_buf(),
                        index: i,
                        field: k,
                        cause,
                    })?;
                }
            }
        }
        Ok(def)
    }
}

/// One call a served server received.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ReceivedCall {
    pub server: String,
    pub tool: String,
    pub arguments: Value,
}

/// The calls a served server received, shared by every session of it; optionally also
/// appended to a JSON Lines file (for a served subprocess).
#[derive(Debug, Clone, Default)]
pub struct CallLog {
    calls: Arc<Mutex<Vec<ReceivedCall>>>,
    file: Option<Arc<Mutex<std::fs::File>>>,
}

impl CallLog {
    pub fn new() -> CallLog {
        CallLog::default()
    }

    /// A log that also appends each call to `path` as one JSON line.
    pub fn to_file(path: &Path) -> std::io::Result<CallLog> {
        let f = std::fs::OpenOptions::new()
            .create(true)
            .append(true)
            .open(path)?;
        Ok(CallLog {
            calls: Default::default(),
            file: Some(Arc::new(Mutex::new(f))),
        })
    }

    fn push(&self, c: ReceivedCall) {
        if let Some(f) = &self.file {
            let mut line = serde_json::to_vec(&c).unwrap_or_default();
            line.push(b'\n');
            let _ = std::io::Write::write_all(&mut *f.lock().unwrap(), &line);
        }
        self.calls.lock().unwrap().push(c);
    }

    /// Every call so far, in the order received.
    pub fn calls(&self) -> Vec<ReceivedCall> {
        self.calls.lock().unwrap().clone()
    }
}

/// Computes a call's result text from the tool's name and arguments (a served server
/// whose results depend on the call, e.g. an injection scenario's toolkit); `None`
/// falls back to the tool's `result`.
pub type Responder = Arc<dyn Fn(&str, &Value) -> Option<String> + Send + Sync>;

/// The rmcp handler of a [`ServerDef`].
#[derive(Clone)]
pub struct Served {
    def: Arc<ServerDef>,
    lists: Arc<AtomicUsize>,
    log: CallLog,
    responder: Option<Responder>,
}

impl Served {
    pub fn new(def: ServerDef, log: CallLog) -> Served {
        Served {
            def: Arc::new(def),
            lists: Arc::new(AtomicUsize::new(0)),
            log,
            responder: None,
        }
    }

    /// Results computed by `responder` (see [`Responder`]).
    pub fn with_responder(mut self, responder: Responder) -> Served {
        self.responder = Some(responder);
        self
    }

    /// The record of the calls it receives.
    pub fn log(&self) -> CallLog {
        self.log.clone()
    }

    /// How many `tools/list` requests it answered.
    pub fn lists(&self) -> usize {
        self.lists.load(Ordering::SeqCst)
    }

    fn tools_now(&self, n: usize) -> Vec<Tool> {
        self.def
            .tools
            .iter()
            .filter_map(|t| {
                let d = if n > 0 {
                    t.later.as_ref().unwrap_or(&t.definition)
                } else {
                    &t.definition
                };
                serde_json::from_value(d.clone()).ok()
            })
            .collect()
    }
}

fn name_of(v: &Value) -> &str {
    v.get("name").and_then(Value::as_str).unwrap_or("")
}

impl ServerHandler for Served {
    fn get_info(&self) -> ServerConfig {
        let mut caps = ServerCapabilities::builder()
            .enable_tools()
            .enable_prompts()
            .enable_resources()
            .build();
        if self.def.prompts.is_empty() {
            caps.prompts = None;
        }
        if self.def.resources.is_empty() {
            caps.resources = None;
        }
        let mut info = ServerConfig::new(caps);
        info.server_info.name = self.def.name.clone();
        info.server_info.version = env!("CARGO_PKG_VERSION").into();
        info.instructions = self.def.instructions.clone();
        info
    }

    async fn list_tools(
        &self,
        _request: Option<PaginatedRequestParams>,
        _context: RequestContext<RoleServer>,
    ) -> Result<ListToolsResult, ErrorData> {
        let n = self.lists.fetch_add(1, Ordering::SeqCst);
        Ok(ListToolsResult::with_all_items(self.tools_now(n)))
    }

    async fn call_tool(
        &self,
        request: CallToolRequestParams,
        _context: RequestContext<RoleServer>,
    ) -> Result<CallToolResponse, ErrorData> {
        let name = request.name.to_string();
        let arguments = request
            .arguments
            .map(Value::Object)
            .unwrap_or(Value::Object(Default::default()));
        let Some(t) = self.def.tools.iter().find(|t| {
            name_of(&t.definition) == name || t.later.as_ref().is_some_and(|l| name_of(l) == name)
        }) else {
            return Err(ErrorData::invalid_params(
                format!("unknown tool `{name}`"),
                None,
            ));
        };
        self.log.push(ReceivedCall {
            server: self.def.name.clone(),
            tool: name,
            arguments: arguments.clone(),
        });
        let computed = self
            .responder
            .as_ref()
            .and_then(|r| r(name_of(&t.definition), &arguments));
        let text = computed.unwrap_or_else(|| {
            t.result
                .replace("{arguments}", &crate::canonical::to_string(&arguments))
        });
        let content = vec![ContentBlock::text(text)];
        Ok(CallToolResponse::Complete(if t.is_error {
            CallToolResult::error(content)
        } else {
            CallToolResult::success(content)
        }))
    }

    async fn list_prompts(
        &self,
        _request: Option<PaginatedRequestParams>,
        _context: RequestContext<RoleServer>,
    ) -> Result<ListPromptsResult, ErrorData> {
        Ok(ListPromptsResult::with_all_items(
            self.def
                .prompts
                .iter()
                .filter_map(|p| serde_json::from_value::<Prompt>(p.clone()).ok())
                .collect(),
        ))
    }

    async fn list_resources(
        &self,
        _request: Option<PaginatedRequestParams>,
        _context: RequestContext<RoleServer>,
    ) -> Result<ListResourcesResult, ErrorData> {
        Ok(ListResourcesResult::with_all_items(
            self.def
                .resources
                .iter()
                .filter_map(|p| serde_json::from_value::<Resource>(p.clone()).ok())
                .collect(),
        ))
    }
}

/// Why serving stopped with an error, or could not start.
#[derive(Debug, thiserror::Error)]
pub enum ServeError {
    /// The MCP handshake with the client failed.
    #[error("initialize failed: {0}")]
    Initialize(#[source] Box<rmcp::service::ServerInitializeError>),
    /// The serving task ended abnormally (panicked or was cancelled).
    #[error(transparent)]
    Task(tokio::task::JoinError),
    #[error("cannot bind 127.0.0.1:{port}: {cause}")]
    Bind {
        port: u16,
        #[source]
        cause: std::io::Error,
    },
    /// The bound listener's address could not be read.
    #[error(transparent)]
    LocalAddr(std::io::Error),
}

/// Runs `initialize` for `served` over a boxed byte stream pair: stdio and the in-process
/// pipe share this one transport type, so rmcp's server loop is compiled once for them.
async fn serve_over(
    served: Served,
    read: crate::transport::Reader,
    write: crate::transport::Writer,
) -> Result<rmcp::service::RunningService<RoleServer, Served>, rmcp::service::ServerInitializeError>
{
    served
        .serve(rmcp::transport::async_rw::AsyncRwTransport::new_server(
            read, write,
        ))
        .await
}

/// Serves `served` on this process's stdin/stdout until the client closes them.
pub fn serve_stdio(served: Served) -> BoxFuture<'static, Result<(), ServeError>> {
    Box::pin(serve_stdio_now(served))
}

async fn serve_stdio_now(served: Served) -> Result<(), ServeError> {
    let running = serve_over(
        served,
        Box::new(tokio::io::stdin()),
        Box::new(tokio::io::stdout()),
    )
    .await
    .map_err(|e| ServeError::Initialize(Box::new(e)))?;
    running.waiting().await.map_err(ServeError::Task)?;
    Ok(())
}

/// A served server on loopback over streamable HTTP; dropped, it stops.
pub struct HttpServer {
    pub url: String,
    stop: tokio_util_stop::Stop,
}

mod tokio_util_stop {
    /// Stops the HTTP server when dropped.
    pub(super) struct Stop(pub Option<tokio::sync::oneshot::Sender<()>>);
    impl Drop for Stop {
        fn drop(&mut self) {
            if let Some(s) = self.0.take() {
                let _ = s.send(());
            }
        }
    }
}

impl HttpServer {
    /// Binds `127.0.0.1:port` (0: any free port) and serves at `/mcp`.
    pub fn start(served: Served, port: u16) -> BoxFuture<'static, Result<HttpServer, ServeError>> {
        Box::pin(HttpServer::start_now(served, port))
    }

    async fn start_now(served: Served, port: u16) -> Result<HttpServer, ServeError> {
        use rmcp::transport::streamable_http_server::session::local::LocalSessionManager;
        use rmcp::transport::{StreamableHttpServerConfig, StreamableHttpService};
        let listener = tokio::net::TcpListener::bind(("127.0.0.1", port))
            .await
            .map_err(|cause| ServeError::Bind { port, cause })?;
        let addr = listener.local_addr().map_err(ServeError::LocalAddr)?;
        let service = StreamableHttpService::new(
            move || Ok(served.clone()),
            Arc::new(LocalSessionManager::default()),
            StreamableHttpServerConfig::default(),
        );
        let app = axum::Router::new().nest_service("/mcp", service);
        let (tx, rx) = tokio::sync::oneshot::channel::<()>();
        tokio::spawn(async move {
            let _ = axum::serve(listener, app)
                .with_graceful_shutdown(async {
                    let _ = rx.await;
                })
                .await;
        });
        Ok(HttpServer {
            url: format!("http://{addr}/mcp"),
            stop: tokio_util_stop::Stop(Some(tx)),
        })
    }

    /// Stops serving.
    pub fn stop(mut self) {
        if let Some(s) = self.stop.0.take() {
            let _ = s.send(());
        }
    }
}

/// A served server connected in process over a duplex pipe: the client transport end.
pub fn in_process(served: Served) -> tokio::io::DuplexStream {
    let (server_end, client_end) = tokio::io::duplex(1 << 20);
    let (r, w) = tokio::io::split(server_end);
    tokio::spawn(async move {
        if let Ok(running) = serve_over(served, Box::new(r), Box::new(w)).await {
            let _ = running.waiting().await;
        }
    });
    client_end
}
