//! MCP (Model Context Protocol) for gauntlet.
//!
//! Two sides:
//! - **the client** ([`client`]): connects to MCP servers — stdio servers spawned
//!   confined ([`confine`]), streamable-HTTP servers by URL, several from a servers file
//!   ([`servers`]) — lists their tools, prompts and resources, and calls tools, with every
//!   wait time-limited and every message size-limited ([`transport`]); a server that
//!   hangs, floods or speaks broken JSON-RPC is a named error ([`client::McpError`]);
//! - **the scanner** ([`scan`]): every rule ([`rules`], one file each) over the
//!   definitions, findings as plain records ([`finding`]), and rug-pull pins ([`pin`]);
//!   optionally a reviewer model's verdict per definition ([`review`]: the request and
//!   the reading of its reply; the caller sends it). [`catalogue`] lists every rule of
//!   the three, above them all.
//!
//! The served side ([`serve`]) is gauntlet's own MCP server: tools defined as data
//! (descriptions, scripted results, a definition that changes after the first listing),
//! served in process or over stdio / HTTP, recording every call it receives. The
//! injection vectors and the poisoned test servers are built on it.

// Files are read through `gauntlet_core::files` only (clippy.toml says why).
#![cfg_attr(not(test), deny(clippy::disallowed_methods))]

/// The future of a public async entry point, boxed: a caller in another crate then
/// polls it through one vtable instead of compiling the whole async body (and every
/// rmcp and tokio generic under it) again in its own crate.
pub type BoxFuture<'a, T> = std::pin::Pin<Box<dyn std::future::Future<Output = T> + Send + 'a>>;

pub mod canonical;
pub mod catalogue;
pub mod client;
pub mod confine;
pub mod fields;
pub mod finding;
pub mod pin;
pub mod review;
pub mod rules;
pub mod scan;
pub mod serve;
pub mod servers;
pub mod toolbox;
pub mod transport;
