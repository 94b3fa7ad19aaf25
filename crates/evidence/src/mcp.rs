//! The MCP endpoint: a streamable-HTTP MCP server on loopback that the user's own agent
//! connects to, offering a scenario's tools, whose results carry the injection rendered
//! with the call's canary and sink URL. Every `tools/call` is filed as the call's
//! evidence.
//!
//! Toolkits are published by their tools ([`publish`]); a toolkit's key is a digest of
//! its tools, so two scenarios' toolkits never collide and a changed toolkit gets a new
//! key. The server answers `/t/<token>/mcp/<key>` (see [`crate::token`]) for a call open
//! now: `tools/list` lists the toolkit, and `tools/call` returns the tool's result with
//! `{{canary}}` replaced by the call's canary (`CANARY-…`) and `{{sink_url}}` by the
//! call's base URL on the canary sink. Each call (tool name, arguments capped like a
//! span attribute, result) is filed under the call as a tool call
//! ([`SpanConvention::Mcp`]); a result of a tool whose text had the injection slot is
//! filed as served (`/mcp/<key>/<tool>`, like a page): the injection reached the agent.
//! A request naming no open call, or no published toolkit, is counted and answered 404
//! without reading its body.
//!
//! The MCP protocol itself is rmcp's [`StreamableHttpService`], run stateless: no
//! session is kept between requests (an initialize gets no `Mcp-Session-Id`), so what a
//! call's traffic leaves behind is its evidence buffer alone, released when the call
//! takes it. Bodies are capped at the `max_body_bytes` cap (413, by rmcp); malformed
//! JSON-RPC is answered by rmcp with a 4xx naming the problem. The listener is the one
//! every evidence server has ([`crate::listener`]). It executes nothing.

use crate::collector::Collector;
use crate::sink::capped;
use crate::token::{TokenError, base_url, parse};
use axum::Router;
use axum::body::Body;
use axum::extract::{Request, State};
use axum::http::{StatusCode, header};
use axum::response::{IntoResponse, Response};
use gauntlet_core::evidence::{EvidenceEvent, SpanConvention};
use gauntlet_core::hash::HashWriter;
use rmcp::model::{
    CallToolRequestParams, CallToolResponse, CallToolResult, ContentBlock, ListToolsResult,
    PaginatedRequestParams, ServerCapabilities, ServerConfig, Tool,
};
use rmcp::service::{RequestContext, RoleServer};
use rmcp::transport::streamable_http_server::session::never::NeverSessionManager;
use rmcp::transport::{StreamableHttpServerConfig, StreamableHttpService};
use rmcp::{ErrorData, ServerHandler};
use serde::{Deserialize, Serialize};
use serde_json::Value;
use std::collections::BTreeMap;
use std::net::SocketAddr;
use std::sync::{Arc, Mutex};

/// Toolkits published at most (per process).
pub const MAX_TOOLKITS: usize = 4096;
/// Tools in one toolkit at most.
pub const MAX_TOOLS: usize = 32;
/// Largest result template, in bytes.
pub const MAX_RESULT_BYTES: usize = crate::content::MAX_PAGE_BYTES;
/// Longest tool name, in bytes (the MCP limit for names is larger; this is ours).
pub const MAX_NAME: usize = 64;

/// One tool the endpoint offers.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct McpTool {
    pub name: String,
    pub description: String,
    /// The JSON Schema of its arguments (an object schema).
    #[serde(default = "empty_schema")]
    pub input_schema: Value,
    /// What a call returns; `{{canary}}` and `{{sink_url}}` are the call's.
    pub result: String,
    /// The result carries the injection: a call of it marks the injection delivered.
    #[serde(default)]
    pub injected: bool,
}

/// `{"type": "object", "properties": {}}`.
pub fn empty_schema() -> Value {
    serde_json::json!({"type": "object", "properties": {}})
}

/// Why a toolkit cannot be published.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum PublishError {
    #[error(
        "tool name {0:?} is not a tool name: use 1 to {MAX_NAME} letters, digits, `_` or `-`, starting with a letter (read_notes)"
    )]
    Name(String),
    #[error("tool `{0}` appears twice")]
    Duplicate(String),
    #[error("tool `{0}`: `input_schema` must be a JSON Schema object with \"type\": \"object\"")]
    Schema(String),
    #[error(
        "tool `{name}`: the result is {len} bytes; results are at most {MAX_RESULT_BYTES} bytes"
    )]
    TooLarge { name: String, len: usize },
    #[error("a toolkit has 1 to {MAX_TOOLS} tools, not {0}")]
    Count(usize),
    #[error("more than {MAX_TOOLKITS} distinct toolkits published in this process")]
    TooMany,
}

/// Whether `name` is a tool name: `[A-Za-z][A-Za-z0-9_-]*`, at most [`MAX_NAME`].
pub fn valid_name(name: &str) -> bool {
    let b = name.as_bytes();
    !b.is_empty()
        && b.len() <= MAX_NAME
        && b[0].is_ascii_alphabetic()
        && b.iter()
            .all(|c| c.is_ascii_alphanumeric() || matches!(c, b'_' | b'-'))
}

/// Checks a toolkit without publishing it.
pub fn check(tools: &[McpTool]) -> Result<(), PublishError> {
    if tools.is_empty() || tools.len() > MAX_TOOLS {
        return Err(PublishError::Count(tools.len()));
    }
    let mut seen = std::collections::HashSet::new();
    for t in tools {
        if !valid_name(&t.name) {
            return Err(PublishError::Name(t.name.clone()));
        }
        if !seen.insert(t.name.as_str()) {
            return Err(PublishError::Duplicate(t.name.clone()));
        }
        if t.result.len() > MAX_RESULT_BYTES {
            return Err(PublishError::TooLarge {
                name: t.name.clone(),
                len: t.result.len(),
            });
        }
        if t.input_schema.get("type").and_then(Value::as_str) != Some("object") {
            return Err(PublishError::Schema(t.name.clone()));
        }
    }
    Ok(())
}

static TOOLKITS: Mutex<BTreeMap<String, Arc<Vec<McpTool>>>> = Mutex::new(BTreeMap::new());

/// Publishes a toolkit (idempotent) and returns its path, `/<key>`, to append to a
/// call's MCP URL (`http://<addr>/t/<token>/mcp`).
pub fn publish(tools: &[McpTool]) -> Result<String, PublishError> {
    check(tools)?;
    let mut h = HashWriter::new();
    h.field(b"gauntlet-mcp-toolkit-v1");
    let canon = serde_json::to_vec(tools).unwrap_or_default();
    h.field(&canon);
    let key = crate::trace::hex(&h.finish()[..8]);
    let mut all = TOOLKITS.lock().unwrap_or_else(|p| p.into_inner());
    if !all.contains_key(&key) {
        if all.len() >= MAX_TOOLKITS {
            return Err(PublishError::TooMany);
        }
        all.insert(key.clone(), Arc::new(tools.to_vec()));
    }
    Ok(format!("/{key}"))
}

/// The toolkit and its key a path after the token names: `/mcp/<key>`.
fn lookup(rest: &str) -> Option<(String, Arc<Vec<McpTool>>)> {
    let key = rest.strip_prefix("/mcp/")?;
    let kit = TOOLKITS
        .lock()
        .unwrap_or_else(|p| p.into_inner())
        .get(key)
        .cloned()?;
    Some((key.to_string(), kit))
}

/// What the endpoint needs: the collector it files into and the sink results point at.
pub struct McpState {
    pub collector: Arc<Collector>,
    pub sink: SocketAddr,
}

/// The rmcp handler: one per request (stateless), reading the call and the toolkit from
/// the request's path.
#[derive(Clone)]
struct Handler {
    state: Arc<McpState>,
}

/// What a request names: the call, the toolkit's key, the toolkit.
type Target = (crate::collector::TraceId, String, Arc<Vec<McpTool>>);

/// The call, toolkit key and toolkit of the HTTP request behind `ctx`.
fn target_of(ctx: &RequestContext<RoleServer>) -> Result<Target, ErrorData> {
    let parts = ctx
        .extensions
        .get::<axum::http::request::Parts>()
        .ok_or_else(|| ErrorData::internal_error("no HTTP request behind this call", None))?;
    let (id, rest) =
        parse(parts.uri.path()).map_err(|_| ErrorData::invalid_params("no such call", None))?;
    let (key, kit) =
        lookup(rest).ok_or_else(|| ErrorData::invalid_params("no such toolkit", None))?;
    Ok((id, key, kit))
}

impl ServerHandler for Handler {
    fn get_info(&self) -> ServerConfig {
        let mut info = ServerConfig::new(ServerCapabilities::builder().enable_tools().build());
        info.server_info.name = "gauntlet-evidence".into();
        info.server_info.version = env!("CARGO_PKG_VERSION").into();
        info
    }

    async fn list_tools(
        &self,
        _request: Option<PaginatedRequestParams>,
        ctx: RequestContext<RoleServer>,
    ) -> Result<ListToolsResult, ErrorData> {
        let (_, _, kit) = target_of(&ctx)?;
        let tools = kit
            .iter()
            .filter_map(|t| {
                serde_json::from_value::<Tool>(serde_json::json!({
                    "name": t.name,
                    "description": t.description,
                    "inputSchema": t.input_schema,
                }))
                .ok()
            })
            .collect();
        Ok(ListToolsResult::with_all_items(tools))
    }

    async fn call_tool(
        &self,
        request: CallToolRequestParams,
        ctx: RequestContext<RoleServer>,
    ) -> Result<CallToolResponse, ErrorData> {
        let (id, key, kit) = target_of(&ctx)?;
        let name = request.name.to_string();
        let Some(tool) = kit.iter().find(|t| t.name == name) else {
            return Err(ErrorData::invalid_params(
                format!("unknown tool `{}`", capped(&name, MAX_NAME)),
                None,
            ));
        };
        let c = &self.state.collector;
        let arguments = Value::Object(request.arguments.unwrap_or_default());
        let keep = c.caps().max_attribute_bytes;
        let result = tool
            .result
            .replace("{{canary}}", &crate::trace::canary(&id))
            .replace("{{sink_url}}", &base_url(self.state.sink, &id));
        let event = EvidenceEvent::ToolCall {
            convention: SpanConvention::Mcp,
            name: tool.name.clone(),
            arguments: capped(&sorted(&arguments).to_string(), keep),
            result: Some(capped(&result, keep)),
        };
        if !c.mcp_call(id, event) {
            return Err(ErrorData::invalid_params("no such call", None));
        }
        if tool.injected {
            c.page_served(id, &format!("/mcp/{key}/{}", tool.name));
        }
        Ok(CallToolResponse::Complete(CallToolResult::success(vec![
            ContentBlock::text(result),
        ])))
    }
}

/// `v` with every object's keys inserted in sorted order, so its text does not depend
/// on the order the client wrote them in (whatever map serde_json was built with).
fn sorted(v: &Value) -> Value {
    match v {
        Value::Object(m) => {
            let mut keys: Vec<&String> = m.keys().collect();
            keys.sort();
            Value::Object(
                keys.into_iter()
                    .map(|k| (k.clone(), sorted(&m[k])))
                    .collect(),
            )
        }
        Value::Array(a) => Value::Array(a.iter().map(sorted).collect()),
        other => other.clone(),
    }
}

fn not_found(c: &Collector, status: StatusCode, msg: &'static str) -> Response {
    c.unknown_mcp();
    (
        status,
        [(header::CONTENT_TYPE, "text/plain; charset=utf-8")],
        msg,
    )
        .into_response()
}

/// The endpoint's routes over `state`, its service answering `Host: addr` (and the
/// loopback names).
pub fn router(state: Arc<McpState>, addr: SocketAddr) -> Router {
    let mut config = StreamableHttpServerConfig::default();
    config.legacy_session_mode = false;
    config.json_response = true;
    config.sse_keep_alive = None;
    config.max_request_body_bytes = state.collector.caps().max_body_bytes;
    config.allowed_hosts.push(addr.ip().to_string());
    let handler = Handler {
        state: state.clone(),
    };
    let service = Arc::new(StreamableHttpService::new(
        move || Ok(handler.clone()),
        Arc::new(NeverSessionManager::default()),
        config,
    ));
    Router::new()
        .fallback(move |State(s): State<Arc<McpState>>, req: Request| {
            let service = service.clone();
            async move { gate(&s, &service, req).await }
        })
        .with_state(state)
}

async fn gate(
    s: &McpState,
    service: &StreamableHttpService<Handler, NeverSessionManager>,
    req: Request,
) -> Response {
    let c = &s.collector;
    let (id, rest) = match parse(req.uri().path()) {
        Ok(x) => x,
        Err(TokenError::TooLong) => {
            return not_found(c, StatusCode::URI_TOO_LONG, "path too long\n");
        }
        Err(TokenError::NoToken) => return not_found(c, StatusCode::NOT_FOUND, "no such call\n"),
    };
    if lookup(rest).is_none() {
        return not_found(c, StatusCode::NOT_FOUND, "no such toolkit\n");
    }
    if !c.is_open(&id) {
        return not_found(c, StatusCode::NOT_FOUND, "no such call\n");
    }
    service.handle(req).await.map(Body::new)
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    fn tool(name: &str) -> McpTool {
        McpTool {
            name: name.into(),
            description: "d".into(),
            input_schema: empty_schema(),
            result: "r {{canary}}".into(),
            injected: true,
        }
    }

    #[test]
    fn toolkits_are_content_addressed_and_checked() {
        let a = publish(&[tool("read_notes")]).unwrap();
        assert_eq!(a, publish(&[tool("read_notes")]).unwrap());
        assert_ne!(a, publish(&[tool("other")]).unwrap());
        assert!(lookup(&format!("/mcp{a}")).is_some());
        assert!(lookup(&format!("/mcp{a}/x")).is_none());
        assert!(lookup(&format!("/p{a}")).is_none());
        for bad in ["", "1x", "a b", "a/b", "../x", &"x".repeat(65)] {
            assert!(
                matches!(publish(&[tool(bad)]), Err(PublishError::Name(_))),
                "{bad}"
            );
        }
        assert_eq!(
            publish(&[tool("a"), tool("a")]),
            Err(PublishError::Duplicate("a".into()))
        );
        assert_eq!(publish(&[]), Err(PublishError::Count(0)));
        let mut t = tool("a");
        t.input_schema = serde_json::json!({"type": "string"});
        assert_eq!(publish(&[t]), Err(PublishError::Schema("a".into())));
        let mut t = tool("a");
        t.result = "x".repeat(MAX_RESULT_BYTES + 1);
        assert!(matches!(publish(&[t]), Err(PublishError::TooLarge { .. })));
    }

    proptest! {
        /// Any path after a token: looked up among the published toolkits, never a
        /// panic; only a published toolkit's own path finds it.
        #[test]
        fn any_path_is_looked_up_safely(rest in "\\PC{0,60}", name in "[a-z][a-z0-9_]{0,20}") {
            let path = publish(&[tool(&name)]).unwrap();
            if let Some((_, kit)) = lookup(&rest) {
                prop_assert!(rest.starts_with("/mcp/"));
                prop_assert!(!kit.is_empty());
            }
            let found = lookup(&format!("/mcp{path}")).map(|(_, k)| k[0].name.clone());
            prop_assert_eq!(found.as_deref(), Some(name.as_str()));
            let up = format!("/mcp{path}/..");
            prop_assert!(lookup(&up).is_none());
        }
    }
}
