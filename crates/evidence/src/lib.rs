//! gauntlet-evidence: what an agent application was seen doing, gathered while a target
//! call runs.
//!
//! - [`receiver`]: the OTLP/HTTP trace receiver (`POST /v1/traces`, protobuf and JSON);
//! - [`sink`]: the canary sink, playing the attacker's server;
//! - [`content`]: the poisoned-content server, pages carrying an injection;
//! - [`mcp`]: the MCP endpoint, tools whose results carry an injection;
//! - [`token`]: how a sink or content request names the call it belongs to;
//! - [`listener`]: the connection cap and idle timeout every server accepts under;
//! - [`wire`]: the bounds an OTLP body is checked against before it is decoded;
//! - [`spans`]: reading tool calls and HTTP requests from spans;
//! - [`collector`]: the bounded per-trace buffers calls open and take;
//! - [`trace`]: the derived trace id and the `traceparent` header;
//! - [`caps`]: the caps and their defaults.
//!
//! The record a call ends with is `gauntlet_core::evidence::Evidence`.

#![cfg_attr(not(test), deny(clippy::disallowed_methods))]

pub mod caps;
pub mod collector;
pub mod content;
pub mod listener;
pub mod mcp;
pub mod receiver;
pub mod sink;
pub mod spans;
pub mod token;
pub mod trace;
pub mod wire;
