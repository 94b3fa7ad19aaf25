//! The start record of the user's MCP servers over a run: a server that failed to start
//! [`DEAD_AFTER`] times in a row is not started again ([`ServerHealth`]), and why one
//! could not be used for an episode ([`ServerStartError`], an attempt's error).
//!
//! Its own file because an attempt's error ([`crate::attempt::AttemptError`]) holds
//! [`ServerStartError`], and the MCP injection ([`super::mcp`]) runs attempts.

use gauntlet_mcp::client::{Limits, McpError, Session};
use gauntlet_mcp::servers::ServerSpec;
use std::collections::HashMap;
use std::sync::{Arc, Mutex, Weak};

/// Starts of one server that failed in a row after which it is not started again in the
/// run.
pub const DEAD_AFTER: u32 = 3;

/// Why one of the user's servers could not be used for an episode.
#[derive(Debug, Clone, thiserror::Error)]
pub enum ServerStartError {
    /// It failed to start (spawn, connect, `initialize`) for this episode.
    #[error("could not start MCP server `{server}` ({kind}): {source}", kind = .source.kind())]
    Failed {
        server: String,
        #[source]
        source: McpError,
    },
    /// It failed to start [`DEAD_AFTER`] times in a row earlier in the run.
    #[error(
        "MCP server `{server}` failed to start {failures} times in a row and is not started again in this run (the last failure, {kind}: {last})",
        kind = .last.kind()
    )]
    Dead {
        server: String,
        failures: u32,
        last: McpError,
    },
}

/// The start record of the user's servers over a run, shared by the MCP injections of
/// the run (one per process while a plan holds it). A server is known by its name and
/// its command or URL.
#[derive(Debug, Default)]
pub struct ServerHealth {
    servers: Mutex<HashMap<String, Starts>>,
}

#[derive(Debug, Default)]
struct Starts {
    failed_in_a_row: u32,
    last: Option<McpError>,
}

static HEALTH: Mutex<Weak<ServerHealth>> = Mutex::new(Weak::new());

impl ServerHealth {
    /// The record every live MCP injection shares; a new one when none is alive.
    pub fn shared() -> Arc<ServerHealth> {
        let mut h = HEALTH.lock().unwrap_or_else(|p| p.into_inner());
        if let Some(live) = h.upgrade() {
            return live;
        }
        let fresh = Arc::new(ServerHealth::default());
        *h = Arc::downgrade(&fresh);
        fresh
    }

    fn key(s: &ServerSpec) -> String {
        format!("{}\0{}", s.name, s.describe())
    }

    /// Why `s` is not started again, if it failed [`DEAD_AFTER`] times in a row.
    fn dead(&self, s: &ServerSpec) -> Option<ServerStartError> {
        let m = self.servers.lock().unwrap_or_else(|p| p.into_inner());
        let st = m.get(&Self::key(s))?;
        match &st.last {
            Some(last) if st.failed_in_a_row >= DEAD_AFTER => Some(ServerStartError::Dead {
                server: s.name.clone(),
                failures: st.failed_in_a_row,
                last: last.clone(),
            }),
            _ => None,
        }
    }

    fn record(&self, s: &ServerSpec, outcome: Result<(), &McpError>) {
        let mut m = self.servers.lock().unwrap_or_else(|p| p.into_inner());
        let st = m.entry(Self::key(s)).or_default();
        match outcome {
            Ok(()) => *st = Starts::default(),
            Err(e) => {
                st.failed_in_a_row += 1;
                st.last = Some(e.clone());
            }
        }
    }
}

/// Connects the user's servers in order, each unless it is dead; on a failure the ones
/// connected are closed.
pub(super) async fn connect_user(
    user: &[ServerSpec],
    limits: &Limits,
    health: &ServerHealth,
) -> Result<Vec<Session>, ServerStartError> {
    let mut sessions = Vec::with_capacity(user.len());
    for spec in user {
        let started = match health.dead(spec) {
            Some(dead) => Err(dead),
            None => {
                let r = Session::connect(spec, limits).await;
                health.record(spec, r.as_ref().map(|_| ()));
                r.map_err(|source| ServerStartError::Failed {
                    server: spec.name.clone(),
                    source,
                })
            }
        };
        match started {
            Ok(s) => sessions.push(s),
            Err(e) => {
                for s in sessions {
                    s.close().await;
                }
                return Err(e);
            }
        }
    }
    Ok(sessions)
}
