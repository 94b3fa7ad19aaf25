//! Which servers to reach: one from the command line (`-- CMD ARGS…`, `--url URL`) or
//! several from a servers file in the shape MCP clients use:
//!
//! ```json
//! {"mcpServers": {
//!   "files": {"command": "node", "args": ["server.js", "/data"], "env": {"LOG": "0"}},
//!   "remote": {"url": "http://127.0.0.1:8000/mcp"}
//! }}
//! ```
//!
//! An entry has `command` (with optional `args`, `env`, `cwd`) for a stdio server, or
//! `url` for a streamable-HTTP one. An `env` value may be `${VAR}`, taken from gauntlet's
//! own environment (keys stay out of the file); `${GAUNTLET_SCRATCH}` in `args` or `env`
//! is the server's scratch directory, the one place it may write. Keys other MCP clients add (`disabled`,
//! `autoApprove`, `timeout`…) are ignored with a note; `"disabled": true` skips the entry.

use serde_json::Value;
use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

/// How to reach one server.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Endpoint {
    Stdio {
        command: String,
        args: Vec<String>,
        env: BTreeMap<String, String>,
        cwd: Option<PathBuf>,
    },
    Http {
        url: String,
    },
}

/// One named server.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ServerSpec {
    pub name: String,
    pub endpoint: Endpoint,
}

impl ServerSpec {
    /// `stdio: CMD ARGS…` or `http: URL` (no environment: it may hold keys).
    pub fn describe(&self) -> String {
        match &self.endpoint {
            Endpoint::Stdio { command, args, .. } => {
                let mut s = format!("stdio: {command}");
                for a in args {
                    s.push(' ');
                    s.push_str(a);
                }
                s
            }
            Endpoint::Http { url } => format!("http: {url}"),
        }
    }
}

/// Why a servers file is not usable.
#[derive(Debug, thiserror::Error)]
pub enum ServersError {
    #[error("{}: {source}", path.display())]
    Io {
        path: PathBuf,
        source: std::io::Error,
    },
    #[error("{}:{line}:{column}: not JSON: {why}", path.display())]
    Json {
        path: PathBuf,
        line: usize,
        column: usize,
        why: String,
    },
    #[error("{}: {place}: {why}", path.display())]
    Invalid {
        path: PathBuf,
        place: String,
        why: String,
    },
}

/// A valid server name: 1–64 of `[A-Za-z0-9._-]`.
pub fn valid_name(n: &str) -> bool {
    (1..=64).contains(&n.len())
        && n.bytes()
            .all(|c| c.is_ascii_alphanumeric() || matches!(c, b'.' | b'_' | b'-'))
}

/// Reads a servers file. Returns the servers in file order and notes (ignored keys,
/// skipped entries). `env` looks up `${VAR}` references.
pub fn read(
    path: &Path,
    env: &dyn Fn(&str) -> Option<String>,
) -> Result<(Vec<ServerSpec>, Vec<String>), ServersError> {
    const SERVERS: gauntlet_core::files::Kind = gauntlet_core::files::Kind {
        what: "servers file",
        max_bytes: gauntlet_core::files::Kind::CONFIG.max_bytes,
    };
    let text =
        gauntlet_core::files::read_to_string(path, SERVERS).map_err(|e| ServersError::Io {
            path: path.into(),
            source: e.into_io(),
        })?;
    parse(&text, path, env)
}

/// Parses a servers file's text (see [`read`]).
pub fn parse(
    text: &str,
    path: &Path,
    env: &dyn Fn(&str) -> Option<String>,
) -> Result<(Vec<ServerSpec>, Vec<String>), ServersError> {
    // serde_json's `preserve_order` is off: keep the file's order by reading the
    // entries' positions back from the text.
    let root: Value = serde_json::from_str(text).map_err(|e| ServersError::Json {
        path: path.into(),
        line: e.line(),
        column: e.column(),
        why: e.to_string(),
    })?;
    let invalid = |place: &str, why: &str| ServersError::Invalid {
        path: path.into(),
        place: place.into(),
        why: why.into(),
    };
    let servers = root
        .get("mcpServers")
        .and_then(Value::as_object)
        .ok_or_else(|| invalid("top level", "expected an object with an `mcpServers` object, {\"mcpServers\": {\"name\": {\"command\": …}}}"))?;
    let mut named: Vec<(usize, &String, &Value)> = servers
        .iter()
        .map(|(k, v)| {
            (
                text.find(&Value::String(k.clone()).to_string())
                    .unwrap_or(usize::MAX),
                k,
                v,
            )
        })
        .collect();
    named.sort_by_key(|(at, k, _)| (*at, (*k).clone()));
    let mut out = Vec::new();
    let mut notes = Vec::new();
    for (_, name, entry) in named {
        let place = format!("mcpServers.{name}");
        if !valid_name(name) {
            return Err(invalid(
                &place,
                "a server name is 1–64 letters, digits, `.`, `_` or `-`",
            ));
        }
        let obj = entry
            .as_object()
            .ok_or_else(|| invalid(&place, "expected an object with `command` or `url`"))?;
        if obj.get("disabled").and_then(Value::as_bool) == Some(true) {
            notes.push(format!("{place}: disabled, skipped"));
            continue;
        }
        for k in obj.keys() {
            if !matches!(
                k.as_str(),
                "command" | "args" | "env" | "cwd" | "url" | "type" | "transport" | "disabled"
            ) {
                notes.push(format!("{place}.{k}: not used by gauntlet, ignored"));
            }
        }
        let str_of = |k: &str| -> Result<Option<String>, ServersError> {
            match obj.get(k) {
                None => Ok(None),
                Some(Value::String(s)) => Ok(Some(s.clone())),
                Some(_) => Err(invalid(&format!("{place}.{k}"), "expected a string")),
            }
        };
        let endpoint = match (str_of("command")?, str_of("url")?) {
            (Some(_), Some(_)) => {
                return Err(invalid(&place, "has both `command` and `url`; give one"));
            }
            (None, None) => {
                return Err(invalid(
                    &place,
                    "needs `command` (stdio) or `url` (streamable HTTP)",
                ));
            }
            (None, Some(url)) => {
                check_url(&url)
                    .map_err(|why| invalid(&format!("{place}.url"), &why.to_string()))?;
                if let Some(t) = str_of("type")?.or(str_of("transport")?)
                    && t == "sse"
                {
                    return Err(invalid(
                        &format!("{place}.type"),
                        "the deprecated SSE transport is not supported; use the server's streamable-HTTP endpoint",
                    ));
                }
                Endpoint::Http { url }
            }
            (Some(command), None) => {
                if command.is_empty() {
                    return Err(invalid(&format!("{place}.command"), "is empty"));
                }
                let args = match obj.get("args") {
                    None => Vec::new(),
                    Some(Value::Array(a)) => a
                        .iter()
                        .enumerate()
                        .map(|(i, v)| {
                            v.as_str().map(str::to_string).ok_or_else(|| {
                                invalid(&format!("{place}.args[{i}]"), "expected a string")
                            })
                        })
                        .collect::<Result<_, _>>()?,
                    Some(_) => {
                        return Err(invalid(
                            &format!("{place}.args"),
                            "expected an array of strings",
                        ));
                    }
                };
                let mut envs = BTreeMap::new();
                match obj.get("env") {
                    None => {}
                    Some(Value::Object(m)) => {
                        for (k, v) in m {
                            let v = v.as_str().ok_or_else(|| {
                                invalid(&format!("{place}.env.{k}"), "expected a string")
                            })?;
                            let v = match v.strip_prefix("${").and_then(|r| r.strip_suffix('}')).filter(|var| *var != "GAUNTLET_SCRATCH") {
                                Some(var) => env(var).ok_or_else(|| invalid(&format!("{place}.env.{k}"), &format!("refers to ${{{var}}}, which is not set in the environment")))?,
                                None => v.to_string(),
                            };
                            envs.insert(k.clone(), v);
                        }
                    }
                    Some(_) => {
                        return Err(invalid(
                            &format!("{place}.env"),
                            "expected an object of strings",
                        ));
                    }
                }
                let cwd = str_of("cwd")?.map(PathBuf::from);
                Endpoint::Stdio {
                    command,
                    args,
                    env: envs,
                    cwd,
                }
            }
        };
        out.push(ServerSpec {
            name: name.clone(),
            endpoint,
        });
    }
    if out.is_empty() {
        return Err(invalid("mcpServers", "lists no enabled server"));
    }
    Ok((out, notes))
}

/// A server URL that is not an http(s) URL with a host; `url` is as given.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum UrlError {
    #[error("`{url}` is not an http:// or https:// URL")]
    NotHttp { url: String },
    #[error("`{url}` has no host")]
    NoHost { url: String },
}

/// An http(s) URL with a host.
pub fn check_url(url: &str) -> Result<(), UrlError> {
    let rest = url
        .strip_prefix("http://")
        .or_else(|| url.strip_prefix("https://"))
        .ok_or_else(|| UrlError::NotHttp {
            url: url.to_string(),
        })?;
    if rest.is_empty() || rest.starts_with('/') {
        return Err(UrlError::NoHost {
            url: url.to_string(),
        });
    }
    Ok(())
}

/// The name a single `--url` server gets: its host (and port), made a valid name.
pub fn name_for_url(url: &str) -> String {
    let rest = url.split_once("://").map_or(url, |(_, r)| r);
    let host = rest.split(['/', '?', '#']).next().unwrap_or("http");
    let n: String = host
        .chars()
        .map(|c| {
            if c.is_ascii_alphanumeric() || c == '.' || c == '-' {
                c
            } else {
                '_'
            }
        })
        .take(64)
        .collect();
    if n.is_empty() { "http".into() } else { n }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn p(text: &str) -> Result<(Vec<ServerSpec>, Vec<String>), ServersError> {
        parse(text, Path::new("servers.json"), &|k| {
            (k == "TOKEN").then(|| "t0k".to_string())
        })
    }

    #[test]
    fn the_mcp_clients_shape_parses_in_file_order() {
        let (s, notes) = p(r#"{"mcpServers": {
            "zeta": {"command": "node", "args": ["a.js", "/d"], "env": {"K": "${TOKEN}", "L": "1"}, "autoApprove": []},
            "alpha": {"url": "http://127.0.0.1:9/mcp"},
            "off": {"command": "x", "disabled": true}}}"#)
        .unwrap();
        assert_eq!(s.len(), 2);
        assert_eq!(s[0].name, "zeta");
        assert_eq!(s[0].describe(), "stdio: node a.js /d");
        let Endpoint::Stdio { env, .. } = &s[0].endpoint else {
            panic!()
        };
        assert_eq!(env["K"], "t0k");
        assert_eq!(
            s[1].endpoint,
            Endpoint::Http {
                url: "http://127.0.0.1:9/mcp".into()
            }
        );
        assert_eq!(
            notes,
            [
                "mcpServers.zeta.autoApprove: not used by gauntlet, ignored",
                "mcpServers.off: disabled, skipped"
            ]
        );
    }

    #[test]
    fn bad_files_name_the_place_and_the_fix() {
        let e = |t: &str| p(t).unwrap_err().to_string();
        assert!(
            e("{\"mcpServers\": {").starts_with("servers.json:1:"),
            "{}",
            e("{")
        );
        assert!(
            e(r#"{"servers": {}}"#).contains("top level: expected an object with an `mcpServers`")
        );
        assert!(
            e(r#"{"mcpServers": {"a": {"command": "x", "url": "http://h"}}}"#)
                .contains("mcpServers.a: has both")
        );
        assert!(
            e(r#"{"mcpServers": {"a": {"command": "x", "args": [1]}}}"#)
                .contains("mcpServers.a.args[0]: expected a string")
        );
        assert!(
            e(r#"{"mcpServers": {"a": {"command": "x", "env": {"K": "${NOPE}"}}}}"#)
                .contains("${NOPE}, which is not set")
        );
        assert!(
            e(r#"{"mcpServers": {"a": {"url": "ftp://h"}}}"#)
                .contains("mcpServers.a.url: `ftp://h` is not an http")
        );
        assert!(e(r#"{"mcpServers": {"a b": {"command": "x"}}}"#).contains("a server name is"));
        assert!(e(r#"{"mcpServers": {}}"#).contains("lists no enabled server"));
    }

    #[test]
    fn url_names() {
        assert_eq!(name_for_url("http://127.0.0.1:8080/mcp"), "127.0.0.1_8080");
        assert_eq!(
            name_for_url("https://mcp.example.invalid/x"),
            "mcp.example.invalid"
        );
    }
}
