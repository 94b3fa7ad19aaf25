//! An agent's tools from MCP servers: the MCP side of the agent loop's tool environment.
//!
//! A [`Toolbox`] holds one [`Session`] per server (the user's servers from a servers file,
//! gauntlet-served ones in process) and exposes their tools under one namespace: a tool
//! keeps its name unless two servers offer it, then both become `server__tool`. Before
//! each model step the loop calls [`Toolbox::refresh`], which lists every server's tools
//! again (so a definition that changes after the first listing — a rug pull — reaches the
//! model as a real client would show it). [`Toolbox::call`] routes a call to its server
//! and records it with its result ([`McpCall`]); a result may be rewritten on the way back
//! ([`ResultHook`], the `mcp_tool_result` proxy). A bad call is a tool result
//! (`ERROR: …`): a model that calls a missing tool sees why; a failing server is an error.

use crate::BoxFuture;
use crate::client::{Limits, McpError, Session};
use crate::servers::ServerSpec;
use serde::{Deserialize, Serialize};
use serde_json::Value;
use std::collections::BTreeMap;

/// A tool the model is offered: its exposed name and its definition.
#[derive(Debug, Clone, PartialEq)]
pub struct OfferedTool {
    pub name: String,
    pub description: String,
    pub parameters: Value,
    pub server: String,
    pub tool: String,
}

/// One call the agent made, as forwarded and answered.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct McpCall {
    pub server: String,
    pub tool: String,
    pub arguments: Value,
    pub result: String,
    pub is_error: bool,
}

/// Rewrites a tool's result text on its way back to the model: (server, tool, text) →
/// new text.
pub type ResultHook = Box<dyn Fn(&str, &str, String) -> String + Send + Sync>;

pub struct Toolbox {
    sessions: Vec<Session>,
    offered: Vec<OfferedTool>,
    routes: BTreeMap<String, (usize, String)>,
    calls: Vec<McpCall>,
    hook: Option<ResultHook>,
}

/// The text of a `tools/call` result: its text blocks joined, other blocks named.
pub fn result_text(r: &Value) -> (String, bool) {
    let mut out = Vec::new();
    for b in r
        .get("content")
        .and_then(Value::as_array)
        .into_iter()
        .flatten()
    {
        match b.get("type").and_then(Value::as_str) {
            Some("text") => out.push(
                b.get("text")
                    .and_then(Value::as_str)
                    .unwrap_or("")
                    .to_string(),
            ),
            Some(t) => out.push(format!("[{t} content]")),
            None => {}
        }
    }
    if out.is_empty()
        && let Some(s) = r.get("structuredContent")
    {
        out.push(crate::canonical::to_string(s));
    }
    (
        out.join("\n"),
        r.get("isError").and_then(Value::as_bool).unwrap_or(false),
    )
}

impl Toolbox {
    /// Connects to `specs` (in order) and adds the already-connected `extra` sessions
    /// (gauntlet-served servers) after them.
    pub fn open<'a>(
        specs: &'a [ServerSpec],
        extra: Vec<Session>,
        limits: &'a Limits,
    ) -> BoxFuture<'a, Result<Toolbox, McpError>> {
        Box::pin(Toolbox::open_now(specs, extra, limits))
    }

    async fn open_now(
        specs: &[ServerSpec],
        extra: Vec<Session>,
        limits: &Limits,
    ) -> Result<Toolbox, McpError> {
        let mut sessions = Vec::new();
        for s in specs {
            match Session::connect(s, limits).await {
                Ok(x) => sessions.push(x),
                Err(e) => {
                    for x in sessions {
                        x.close().await;
                    }
                    for x in extra {
                        x.close().await;
                    }
                    return Err(e);
                }
            }
        }
        sessions.extend(extra);
        let mut t = Toolbox {
            sessions,
            offered: Vec::new(),
            routes: BTreeMap::new(),
            calls: Vec::new(),
            hook: None,
        };
        t.refresh().await?;
        Ok(t)
    }

    /// Sets the hook that rewrites results (see [`ResultHook`]).
    pub fn with_result_hook(mut self, hook: ResultHook) -> Toolbox {
        self.hook = Some(hook);
        self
    }

    /// Lists every server's tools again and rebuilds the offered set.
    pub fn refresh(&mut self) -> BoxFuture<'_, Result<&[OfferedTool], McpError>> {
        Box::pin(self.refresh_now())
    }

    async fn refresh_now(&mut self) -> Result<&[OfferedTool], McpError> {
        let mut all = Vec::new();
        for (i, s) in self.sessions.iter().enumerate() {
            for t in s.list_tools().await? {
                all.push((i, s.name.clone(), t));
            }
        }
        let mut count: BTreeMap<String, usize> = BTreeMap::new();
        for (_, _, t) in &all {
            *count
                .entry(crate::fields::name_of(t).to_string())
                .or_default() += 1;
        }
        self.offered.clear();
        self.routes.clear();
        for (i, server, t) in all {
            let tool = crate::fields::name_of(&t).to_string();
            let name = if count[&tool] > 1 {
                format!("{server}__{tool}")
            } else {
                tool.clone()
            };
            self.routes.insert(name.clone(), (i, tool.clone()));
            self.offered.push(OfferedTool {
                name,
                description: t
                    .get("description")
                    .and_then(Value::as_str)
                    .unwrap_or("")
                    .to_string(),
                parameters: t
                    .get("inputSchema")
                    .cloned()
                    .unwrap_or_else(|| serde_json::json!({"type": "object"})),
                server,
                tool,
            });
        }
        Ok(&self.offered)
    }

    /// The tools offered now.
    pub fn offered(&self) -> &[OfferedTool] {
        &self.offered
    }

    /// Calls an offered tool; the result text the model sees. Recorded in
    /// [`Toolbox::calls`]. A bad call (an unknown tool, a server's JSON-RPC error answer
    /// such as invalid arguments) is a result the model sees (`ERROR: …`); a server that
    /// fails (hangs, exits, floods, breaks the protocol) is the `Err`.
    pub fn call<'a>(
        &'a mut self,
        name: &'a str,
        arguments: &'a Value,
    ) -> BoxFuture<'a, Result<String, McpError>> {
        Box::pin(self.call_now(name, arguments))
    }

    async fn call_now(&mut self, name: &str, arguments: &Value) -> Result<String, McpError> {
        let Some((i, tool)) = self.routes.get(name).cloned() else {
            let text = format!("ERROR: no tool named `{name}`");
            self.calls.push(McpCall {
                server: String::new(),
                tool: name.into(),
                arguments: arguments.clone(),
                result: text.clone(),
                is_error: true,
            });
            return Ok(text);
        };
        let server = self.sessions[i].name.clone();
        let (mut text, is_error) = match self.sessions[i].call_tool(&tool, arguments.clone()).await
        {
            Ok(r) => result_text(&r),
            Err(McpError::Server { message, .. }) => (format!("ERROR: {message}"), true),
            Err(e) => return Err(e),
        };
        if let Some(h) = &self.hook {
            text = h(&server, &tool, text);
        }
        self.calls.push(McpCall {
            server,
            tool,
            arguments: arguments.clone(),
            result: text.clone(),
            is_error,
        });
        Ok(text)
    }

    /// Every call so far, in order.
    pub fn calls(&self) -> &[McpCall] {
        &self.calls
    }

    /// A stdio server's scratch directory, by server name.
    pub fn scratch_of(&self, server: &str) -> Option<std::path::PathBuf> {
        self.sessions
            .iter()
            .find(|s| s.name == server)
            .and_then(Session::scratch)
    }

    /// Closes every session (stdio servers are killed with their descendants).
    pub fn close(self) -> BoxFuture<'static, ()> {
        Box::pin(self.close_now())
    }

    async fn close_now(self) {
        for s in self.sessions {
            s.close().await;
        }
    }
}
