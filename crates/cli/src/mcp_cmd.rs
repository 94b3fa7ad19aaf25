//! `gauntlet mcp-scan` and `gauntlet mcp-serve`: MCP servers scanned for poisoned tools,
//! shadowing, excessive capability and rug pulls; gauntlet's own server served from a
//! definition file. The logic is in `gauntlet-mcp`; this wires it to a terminal.
//!
//! Exit codes of `mcp-scan`: 0 clean, 1 findings (at or above `--fail-on`), 2 a server
//! could not be scanned or the input is invalid.

use crate::error::CliError;
use clap::Args as ClapArgs;
use gauntlet_core::terminal::safe;
use gauntlet_mcp::client::{self, Limits};
use gauntlet_mcp::finding::Severity;
use gauntlet_mcp::scan::{self, Inventory, ScanReport, ServerError};
use gauntlet_mcp::servers::{self, Endpoint, ServerSpec};
use std::path::PathBuf;
use std::time::Duration;

#[derive(Debug, ClapArgs)]
pub(crate) struct ScanArgs {
    /// A servers file in the MCP clients' shape: {"mcpServers": {"name": {"command": …,
    /// "args": […], "env": {…}} | {"url": …}}}.
    #[arg(long, value_name = "FILE")]
    servers: Option<PathBuf>,
    /// A streamable-HTTP server (repeatable).
    #[arg(long = "url", value_name = "URL")]
    urls: Vec<String>,
    /// Tool definitions from a JSON file instead of a live server (repeatable): an array
    /// of definitions or a tools/list result ({"tools": […]}); the server is named after
    /// the file's stem.
    #[arg(long = "tools", value_name = "FILE")]
    tool_files: Vec<PathBuf>,
    /// A reviewer model that reads every definition beside the rules: a target spec,
    /// e.g. '{name: openai_compat, params: {base_url: …, model: …, api_key_env: …}}'. A
    /// poisoned verdict is a `model_review` finding; a reply that is not a verdict makes
    /// the scan incomplete (exit 2).
    #[arg(long, value_name = "SPEC")]
    review: Option<String>,
    /// Definitions sent to the reviewer at once.
    #[arg(long, default_value_t = 4, requires = "review")]
    review_concurrency: usize,
    /// Count a reviewer's poisoned verdict only when the text it quotes is in the
    /// definition.
    #[arg(long, requires = "review")]
    review_needs_quote: bool,
    /// Journal the reviewer's replies in FILE (created if missing): a scan run again
    /// reads each reply it already has instead of calling the model, so reruns cost
    /// nothing and report the same. Without it, replies are kept for this scan only.
    #[arg(long, value_name = "FILE", requires = "review")]
    review_journal: Option<PathBuf>,
    /// Skip the four control definitions (two benign, two poisoned) the reviewer must
    /// judge right before it reviews anything: for measuring a reviewer, not for scans.
    #[arg(long, requires = "review")]
    review_no_controls: bool,
    /// Pin file: written on first use, then checked (changed tools are rug pulls; added
    /// and removed ones pin drift).
    #[arg(long, value_name = "FILE")]
    pin: Option<PathBuf>,
    /// Rewrite the pin file with what this scan saw (after reporting against it).
    #[arg(long, requires = "pin")]
    update_pin: bool,
    /// Print the report as JSON (format gauntlet-mcp-scan/1); the same as --format json.
    #[arg(long, conflicts_with = "format")]
    json: bool,
    /// The report's format: text, json (gauntlet-mcp-scan/1) or sarif (SARIF 2.1.0 for
    /// code-scanning dashboards; locations point into the --servers file).
    #[arg(long, value_enum, default_value = "text")]
    format: ScanFormat,
    /// Write the report to FILE instead of stdout (the verdict is still the exit code).
    #[arg(long, value_name = "FILE")]
    out: Option<PathBuf>,
    /// Lowest severity that makes the exit status 1: info, low, medium or high. `info`
    /// findings are capabilities the tool's purpose explains (a filesystem tool's
    /// `path`); the default fails on everything else.
    #[arg(long, default_value = "low", value_parser = parse_severity)]
    fail_on: Severity,
    /// Let stdio servers use the network (otherwise they get no sockets).
    #[arg(long)]
    allow_network: bool,
    /// Run stdio servers even where this kernel cannot confine them fully (they still get
    /// every protection it has).
    #[arg(long)]
    allow_unconfined_servers: bool,
    /// Time limit for connecting and for each request, seconds.
    #[arg(long, default_value_t = 30)]
    timeout_secs: u64,
    /// Largest message accepted from a server, MiB.
    #[arg(long, default_value_t = 16)]
    max_message_mb: usize,
    /// Address-space limit of a stdio server, MiB (node needs about 1024 to start).
    #[arg(long, default_value_t = 2048)]
    server_memory_mb: u64,
    /// A stdio server: the command and its arguments, after `--` (named after what the
    /// command runs: `node …/server-everything/dist/index.js` is `server-everything`).
    #[arg(last = true, value_name = "CMD ARGS")]
    command: Vec<String>,
}

/// The servers to scan, the notes of reading the servers file, and its text.
type Specs = (Vec<ServerSpec>, Vec<String>, Option<String>);

/// `mcp-scan --format`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
pub(crate) enum ScanFormat {
    Text,
    Json,
    Sarif,
}

/// A `--min-severity` value that is not a severity (clap prints it after the flag).
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("`{0}`: expected info, low, medium or high")]
pub(crate) struct ParseSeverityError(String);

fn parse_severity(s: &str) -> Result<Severity, ParseSeverityError> {
    Severity::parse(s).ok_or_else(|| ParseSeverityError(s.to_string()))
}

impl ScanArgs {
    fn limits(&self) -> Limits {
        let mut l = Limits {
            connect_timeout: Duration::from_secs(self.timeout_secs),
            request_timeout: Duration::from_secs(self.timeout_secs),
            max_message_bytes: self.max_message_mb << 20,
            ..Limits::default()
        };
        l.confine.allow_network = self.allow_network;
        l.confine.allow_unconfined = self.allow_unconfined_servers;
        l.confine.memory_bytes = self.server_memory_mb << 20;
        l.confine.lifetime = Duration::from_secs(self.timeout_secs * 20);
        l
    }

    /// The servers to scan, in order: the file's, then the URLs, then the command; with
    /// the notes of reading the servers file and its text (for SARIF locations).
    fn specs(&self) -> Result<Specs, CliError> {
        let mut specs = Vec::new();
        let mut notes = Vec::new();
        let mut file_text = None;
        if let Some(f) = &self.servers {
            let text = gauntlet_core::files::read_to_string(f, gauntlet_core::files::Kind::CONFIG)
                .map_err(|e| CliError::invalid(e.to_string()))?;
            let (s, n) =
                servers::parse(&text, f, &|k| std::env::var(k).ok()).map_err(CliError::invalid)?;
            specs.extend(s);
            notes.extend(n);
            file_text = Some(text);
        }
        for url in &self.urls {
            servers::check_url(url).map_err(|e| CliError::invalid(format!("--url: {e}")))?;
            specs.push(ServerSpec {
                name: servers::name_for_url(url),
                endpoint: Endpoint::Http { url: url.clone() },
            });
        }
        if let Some((cmd, args)) = self.command.split_first() {
            specs.push(ServerSpec {
                name: servers::name_for_command(cmd, args),
                endpoint: Endpoint::Stdio {
                    command: cmd.clone(),
                    args: args.to_vec(),
                    env: Default::default(),
                    cwd: None,
                },
            });
        }
        if specs.is_empty() && self.tool_files.is_empty() {
            return Err(CliError::invalid(
                "nothing to scan: give --servers FILE, --url URL, --tools FILE or -- CMD ARGS…",
            ));
        }
        let mut seen = std::collections::BTreeSet::new();
        for s in &specs {
            if !seen.insert(s.name.clone()) {
                return Err(CliError::invalid(format!(
                    "two servers are named `{}`; rename one in the servers file",
                    s.name
                )));
            }
        }
        Ok((specs, notes, file_text))
    }
}

/// The inventories of `--tools` files, each named after its file's stem.
fn tool_files(files: &[PathBuf]) -> Result<Vec<Inventory>, CliError> {
    files
        .iter()
        .map(|f| {
            let text = gauntlet_core::files::read_to_string(f, gauntlet_core::files::Kind::CONFIG)
                .map_err(|e| CliError::invalid(e.to_string()))?;
            let name = f
                .file_stem()
                .map_or_else(|| "tools".into(), |s| s.to_string_lossy().into_owned());
            let mut inv = Inventory::from_tools_json(&name, &text)
                .map_err(|e| CliError::invalid(format!("--tools {}: {e}", f.display())))?;
            inv.transport = format!("file: {}", f.display());
            Ok(inv)
        })
        .collect()
}

/// `gauntlet mcp-scan`.
pub(crate) fn scan(a: ScanArgs) -> Result<(), CliError> {
    let (specs, notes, servers_text) = a.specs()?;
    let offline = tool_files(&a.tool_files)?;
    let mut seen: std::collections::BTreeSet<&str> =
        specs.iter().map(|s| s.name.as_str()).collect();
    for inv in &offline {
        if !seen.insert(&inv.server) {
            return Err(CliError::invalid(format!(
                "two servers are named `{}`; rename the --tools file or the server",
                inv.server
            )));
        }
    }
    let reviewer = a
        .review
        .as_deref()
        .map(crate::mcp_review::reviewer)
        .transpose()?;
    let limits = a.limits();
    let rt = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .map_err(CliError::failed)?;
    let mut invs: Vec<Inventory> = offline;
    let mut errors: Vec<ServerError> = Vec::new();
    rt.block_on(async {
        for s in &specs {
            match client::inventory_of(s, &limits).await {
                Ok(i) => invs.push(i),
                Err(e) => errors.push(ServerError {
                    server: s.name.clone(),
                    error: e.kind().into(),
                    message: e.to_string(),
                }),
            }
        }
    });
    let mut report = scan::scan_inventories(&invs);
    report.errors = errors;
    if let Some(reviewer) = &reviewer {
        let o = crate::mcp_review::ReviewOptions {
            concurrency: a.review_concurrency,
            require_evidence: a.review_needs_quote,
            controls: !a.review_no_controls,
            journal: a.review_journal.clone(),
        };
        crate::mcp_review::review_all(&rt, reviewer, &invs, &mut report, &o)?;
    }
    if let Some(p) = &a.pin {
        scan::apply_pin(&mut report, &invs, p, a.update_pin).map_err(CliError::invalid)?;
    }
    for n in &notes {
        eprintln!("note: {}", safe(n));
    }
    let format = if a.json { ScanFormat::Json } else { a.format };
    let text = match format {
        ScanFormat::Json => {
            let mut t = serde_json::to_string_pretty(&report).map_err(CliError::failed)?;
            t.push('\n');
            t
        }
        ScanFormat::Sarif => crate::mcp_sarif::render(
            &report,
            &crate::mcp_sarif::Inputs {
                servers_file: a.servers.as_deref().zip(servers_text.as_deref()),
                pin_file: a.pin.as_deref(),
            },
        ),
        ScanFormat::Text => render(&report, a.fail_on),
    };
    crate::ci_cmd::emit(&text, a.out.as_deref())?;
    match report.exit_code(a.fail_on) {
        0 => Ok(()),
        c => Err(CliError::Verdict(c)),
    }
}

/// The text report. Every string that came from a server or a reviewer (names, messages
/// quoting a definition or a reply, a server's stderr) is escaped onto one line: a
/// newline in it would start a line of its own, and a CI log reads a line that starts
/// `::error::` as a workflow command.
pub(crate) fn render(r: &ScanReport, fail_on: Severity) -> String {
    let mut out = String::new();
    let list = |items: &[scan::Listed]| -> String {
        items
            .iter()
            .map(|i| safe(&i.name).into_owned())
            .collect::<Vec<_>>()
            .join(", ")
    };
    for s in &r.servers {
        let info = match (
            s.server_info.get("name").and_then(|v| v.as_str()),
            s.server_info.get("version").and_then(|v| v.as_str()),
        ) {
            (Some(n), Some(v)) => format!(" — {} {}", safe(n), safe(v)),
            (Some(n), None) => format!(" — {}", safe(n)),
            _ => String::new(),
        };
        out.push_str(&format!(
            "server {} ({}){info}\n",
            safe(&s.server),
            safe(&s.transport)
        ));
        out.push_str(&format!(
            "  tools ({}): {}\n",
            s.tools.len(),
            list(&s.tools)
        ));
        out.push_str(&format!(
            "  prompts ({}): {}\n",
            s.prompts.len(),
            list(&s.prompts)
        ));
        out.push_str(&format!(
            "  resources ({}): {}\n",
            s.resources.len(),
            list(&s.resources)
        ));
        for n in &s.notes {
            out.push_str(&format!("  note: {}\n", safe(n)));
        }
    }
    for e in &r.errors {
        out.push_str(&format!(
            "server {}: could not scan ({}): {}\n",
            safe(&e.server),
            safe(&e.error),
            safe(&e.message)
        ));
    }
    if r.findings.is_empty() {
        out.push_str("findings: none\n");
    } else {
        out.push_str(&format!("findings ({}):\n", r.findings.len()));
        for f in &r.findings {
            out.push_str(&format!(
                "  {:<6} {:<22} {}/{} {} {}\n         {}\n",
                f.severity.as_str().to_uppercase(),
                f.rule.id(),
                safe(&f.server),
                safe(&f.item),
                f.kind.as_str(),
                safe(&f.location),
                safe(&f.message)
            ));
            if !f.text.is_empty() {
                for line in f.text.lines() {
                    out.push_str(&format!("         > {}\n", safe(line)));
                }
            }
        }
    }
    if let Some(v) = &r.review {
        out.push_str(&format!(
            "review: {} ({}; controls {}): {} definitions, {} poisoned, {} benign, {} without a verdict{}\n",
            safe(&v.reviewer),
            v.prompt,
            if v.controls == 0 { "off".to_string() } else { format!("{}/{} right", v.controls_passed, v.controls) },
            v.items,
            v.poisoned,
            v.benign,
            v.errors,
            match (v.unquoted, v.require_evidence) {
                (0, _) => String::new(),
                (n, true) => format!(
                    "; {n} poisoned verdicts quote nothing found in the definition and are not findings"
                ),
                (n, false) => format!("; {n} poisoned verdicts quote nothing found in the definition"),
            }
        ));
    }
    if let Some(p) = &r.pin {
        out.push_str(&format!(
            "pin: {} {} ({} tools)\n",
            p.action,
            safe(&p.file),
            p.tools
        ));
    }
    let count = |s: Severity| r.findings.iter().filter(|f| f.severity == s).count();
    let unreviewed = r.review.as_ref().map_or(0, |v| v.errors);
    let failed_controls = r.errors.iter().any(|e| e.error == "review_controls");
    let unscanned = r
        .errors
        .iter()
        .filter(|e| e.error != "review" && e.error != "review_controls")
        .count();
    out.push_str(&format!(
        "verdict: {} ({} high, {} medium, {} low, {} info; failing at {} and above), {} server(s) not scanned{} → exit {}\n",
        if !r.errors.is_empty() {
            "incomplete"
        } else if r.findings.iter().any(|f| f.severity >= fail_on) {
            "findings"
        } else {
            "clean"
        },
        count(Severity::High),
        count(Severity::Medium),
        count(Severity::Low),
        count(Severity::Info),
        fail_on.as_str(),
        unscanned,
        match (unreviewed, failed_controls) {
            (_, true) => ", the reviewer failed its controls".to_string(),
            (0, false) => String::new(),
            (n, false) => format!(", {n} definition(s) without a review verdict"),
        },
        r.exit_code(fail_on)
    ));
    out
}

#[derive(Debug, ClapArgs)]
pub(crate) struct ServeArgs {
    /// The server definition (JSON: name, tools with definition / later / result,
    /// prompts, resources; see the gauntlet_mcp::serve docs).
    def: PathBuf,
    /// Serve streamable HTTP on 127.0.0.1:PORT (0: a free port, printed on stdout)
    /// instead of stdio.
    #[arg(long, value_name = "PORT")]
    http: Option<u16>,
    /// Append every call received to this file, one JSON line each.
    #[arg(long, value_name = "FILE")]
    calls: Option<PathBuf>,
}

/// `gauntlet mcp-serve`.
pub(crate) fn serve(a: ServeArgs) -> Result<(), CliError> {
    use gauntlet_mcp::serve::{CallLog, HttpServer, Served, ServerDef, serve_stdio};
    let def = ServerDef::read(&a.def).map_err(CliError::invalid)?;
    let log = match &a.calls {
        Some(p) => {
            CallLog::to_file(p).map_err(|e| CliError::invalid(format!("{}: {e}", p.display())))?
        }
        None => CallLog::new(),
    };
    let served = Served::new(def, log);
    let rt = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .map_err(CliError::failed)?;
    rt.block_on(async {
        match a.http {
            None => serve_stdio(served).await.map_err(CliError::failed),
            Some(port) => {
                let s = HttpServer::start(served, port)
                    .await
                    .map_err(CliError::failed)?;
                outln!("{}", s.url)?;
                use std::io::Write;
                let _ = std::io::stdout().flush();
                let _ = tokio::signal::ctrl_c().await;
                s.stop();
                Ok(())
            }
        }
    })
}
