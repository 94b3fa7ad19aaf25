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

/// A name for a stdio server given as a command line (`mcp-scan -- CMD ARGS…`): what
/// the command runs, not `stdio`. An interpreter or launcher (`node`, `python3 -m`,
/// `npx -y`, `uvx`, `docker run`…) is named after what it launches; a script path after
/// its file, or its package directory when the file is a generic entry point
/// (`…/server-everything/dist/index.js` → `server-everything`); an npm package after
/// its name without scope or version (`@modelcontextprotocol/server-memory@1` →
/// `server-memory`). Characters outside `[A-Za-z0-9._-]` become `_`, at most 64; an
/// empty result is `stdio`.
pub fn name_for_command(command: &str, args: &[String]) -> String {
    const LAUNCHERS: &[&str] = &[
        "node", "nodejs", "deno", "bun", "bunx", "npx", "pnpx", "pnpm", "yarn", "npm", "python",
        "python3", "py", "uv", "uvx", "pipx", "poetry", "ruby", "perl", "php", "java", "sh",
        "bash", "dash", "zsh", "env", "docker", "podman", "exec", "run", "dlx", "tsx", "ts-node",
    ];
    const ENTRY_POINTS: &[&str] = &[
        "index", "main", "server", "cli", "app", "__main__", "run", "start", "bin",
    ];
    const BUILD_DIRS: &[&str] = &["dist", "build", "lib", "src", "bin", "out", "."];
    let base = |p: &str| -> String {
        let p = p.trim_end_matches('/');
        p.rsplit('/').next().unwrap_or(p).to_string()
    };
    let stem = |p: &str| -> String {
        let b = base(p);
        match b.rsplit_once('.') {
            Some((s, ext))
                if !s.is_empty()
                    && matches!(
                        ext,
                        "js" | "mjs"
                            | "cjs"
                            | "ts"
                            | "py"
                            | "rb"
                            | "pl"
                            | "php"
                            | "jar"
                            | "sh"
                            | "exe"
                    ) =>
            {
                s.to_string()
            }
            _ => b,
        }
    };
    // The first word of the command line that is neither a launcher nor an option.
    let mut words = std::iter::once(command).chain(args.iter().map(String::as_str));
    let mut chosen = None;
    let mut skip_next = false;
    for w in words.by_ref() {
        if skip_next {
            skip_next = false;
            continue;
        }
        if w.starts_with('-') {
            // `python -m module`: the module is the next word, kept; `docker run --rm
            // -i image`: options skipped. An option with a separate value is skipped
            // with it only where it is known to take one.
            if matches!(
                w,
                "-e" | "--env"
                    | "-v"
                    | "--volume"
                    | "--name"
                    | "-w"
                    | "--workdir"
                    | "--from"
                    | "--with"
                    | "-p"
                    | "--package"
            ) {
                skip_next = true;
            }
            continue;
        }
        if w.contains('=') && !w.contains('/') {
            continue;
        }
        if LAUNCHERS.contains(&stem(w).as_str()) || stem(w).starts_with("python3.") {
            continue;
        }
        chosen = Some(w);
        break;
    }
    let Some(w) = chosen else {
        return sanitize(&stem(command)).unwrap_or_else(|| "stdio".into());
    };
    let name = if w.starts_with('@') || (!w.contains('/') && w.contains('@')) {
        // An npm package spec: drop the scope and the version.
        let no_scope = w.rsplit('/').next().unwrap_or(w);
        no_scope.split('@').next().unwrap_or(no_scope).to_string()
    } else if w.contains('/') {
        let s = stem(w);
        if ENTRY_POINTS.contains(&s.as_str()) {
            // `…/server-everything/dist/index.js`: the nearest directory that is not a
            // build directory names the server.
            let parts: Vec<&str> = w.trim_end_matches('/').split('/').collect();
            parts[..parts.len().saturating_sub(1)]
                .iter()
                .rev()
                .find(|d| !d.is_empty() && !BUILD_DIRS.contains(d) && **d != "..")
                .map_or(s.clone(), |d| d.to_string())
        } else {
            s
        }
    } else {
        stem(w)
    };
    sanitize(&name).unwrap_or_else(|| "stdio".into())
}

/// `s` as a server name (see [`valid_name`]), or `None` when nothing is left.
fn sanitize(s: &str) -> Option<String> {
    let n: String = s
        .chars()
        .map(|c| {
            if c.is_ascii_alphanumeric() || matches!(c, '.' | '_' | '-') {
                c
            } else {
                '_'
            }
        })
        .take(64)
        .collect();
    let n = n.trim_matches('.').to_string();
    (!n.is_empty() && n.chars().any(|c| c.is_ascii_alphanumeric())).then_some(n)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_stdio_server_is_named_after_what_its_command_runs() {
        let n = |c: &str, a: &[&str]| {
            name_for_command(c, &a.iter().map(|s| s.to_string()).collect::<Vec<_>>())
        };
        assert_eq!(
            n(
                "node",
                &[
                    "/x/node_modules/@modelcontextprotocol/server-everything/dist/index.js",
                    "stdio"
                ]
            ),
            "server-everything"
        );
        assert_eq!(
            n(
                "npx",
                &["-y", "@modelcontextprotocol/server-memory@2026.8.31"]
            ),
            "server-memory"
        );
        assert_eq!(n("python3", &["-m", "mcp_server_time"]), "mcp_server_time");
        assert_eq!(
            n("python3", &["tests/fixtures/hostile_server.py", "hang"]),
            "hostile_server"
        );
        assert_eq!(
            n("/venv/bin/mcp-server-git", &["--repository", "/r"]),
            "mcp-server-git"
        );
        assert_eq!(n("uvx", &["mcp-server-fetch"]), "mcp-server-fetch");
        assert_eq!(
            n("docker", &["run", "-i", "--rm", "-e", "K=v", "mcp/github"]),
            "github"
        );
        assert_eq!(n("/usr/bin/gauntlet", &["mcp-serve", "d.json"]), "gauntlet");
        assert_eq!(n("node", &[]), "node");
        assert_eq!(n("\u{1b}[31m", &[]), "__31m");
        assert_eq!(n("", &[]), "stdio");
        assert_eq!(n("/", &["..."]), "stdio");
        assert!(valid_name(&n("./srv\nx y.js", &[])));
    }

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
