//! The commands that read what is already there: `gauntlet list` (the plugin
//! registry), `gauntlet report` (re-render a run's reports, or a static site),
//! `gauntlet serve` (the dashboard) and `gauntlet corpus pin|verify`.

use crate::error::CliError;
use gauntlet_core::params::{Axis, DefaultValue};
use gauntlet_core::terminal::{safe, safe_text};
use gauntlet_redteam::registry::Registry;
use std::path::{Path, PathBuf};

#[derive(clap::Args)]
pub(crate) struct ServeArgs {
    /// Run directories, or directories holding them (red-team runs, agent-exam output
    /// directories, detect-exam report directories).
    #[arg(default_value = "runs")]
    roots: Vec<PathBuf>,
    /// Address to listen on. Loopback by default; another address needs --allow-remote
    /// and a token in GAUNTLET_WEB_TOKEN.
    #[arg(long, default_value = "127.0.0.1:8765")]
    bind: std::net::SocketAddr,
    /// Allow a non-loopback --bind (requires the GAUNTLET_WEB_TOKEN token on every
    /// request: `Authorization: Bearer …`, or visit once with `?token=…`).
    #[arg(long)]
    allow_remote: bool,
}

/// `gauntlet list --rules`: the refusal rules `refusal_match` applies, in the order
/// they are tried (the first that matches decides), with the ids `exclude_rules` takes.
pub(crate) fn list_rules() -> Result<(), CliError> {
    outln!(
        "refusal rules of refusal_match (first match decides; switch one off with exclude_rules: [ID]):"
    )?;
    for r in gauntlet_redteam::refusal::RULES {
        outln!("  {:<28} {:<9} {}", r.id, r.scope.as_str(), r.doc)?;
    }
    Ok(())
}

pub(crate) fn list() -> Result<(), CliError> {
    for axis in Axis::ALL {
        outln!("{}:", axis.config_key())?;
        for p in Registry::plugins(axis) {
            outln!("  {:<20} {}", p.name, p.doc)?;
            for param in p.params {
                let default = match param.default {
                    DefaultValue::Required => "required".to_string(),
                    DefaultValue::Absent => "optional".to_string(),
                    DefaultValue::Builtin => "default: built-in".to_string(),
                    DefaultValue::Str(s) if s.starts_with("https://") => format!("default: {s}"),
                    DefaultValue::Str(s) if s.len() > 40 => "default: built-in text".to_string(),
                    DefaultValue::Str(s) => format!("default: {s:?}"),
                    DefaultValue::Int(i) => format!("default: {i}"),
                    DefaultValue::Float(f) => format!("default: {f}"),
                    DefaultValue::Bool(b) => format!("default: {b}"),
                    DefaultValue::StrList(l) => format!("default: {l:?}"),
                };
                outln!(
                    "      {:<18} {} ({default}) — {}",
                    param.name,
                    param.kind,
                    param.doc
                )?;
            }
        }
    }
    Ok(())
}

pub(crate) fn report(run_dir: &Path, group_by: &[String]) -> Result<(), CliError> {
    let known = gauntlet_report::frameworks();
    let mut opts = gauntlet_report::ReportOptions::default();
    if !group_by.is_empty() {
        opts.group_by.clear();
        for g in group_by {
            if g == "all" {
                opts.group_by.extend(known.iter().map(|k| k.to_string()));
            } else if known.contains(&g.as_str()) {
                opts.group_by.push(g.clone());
            } else {
                return Err(CliError::Invalid(format!(
                    "--group-by {g:?} is not a threat framework; known: {}, all",
                    known.join(", ")
                )));
            }
        }
        opts.group_by.dedup();
    }
    gauntlet_engine::stored::rerender_reports(run_dir, &opts).map_err(CliError::invalid)?;
    outln!(
        "wrote report.md, report.html and leaderboard.json in {}",
        safe(&run_dir.display().to_string())
    )?;
    Ok(())
}

pub(crate) fn site(out: &Path, roots: Vec<PathBuf>) -> Result<(), CliError> {
    gauntlet_job::outdir::refuse_other(
        out,
        "--site",
        "report --site",
        "give an empty or new directory, or one holding an earlier static site",
        |h| *h == gauntlet_job::outdir::Holding::Site,
    )
    .map_err(CliError::invalid)?;
    let r = gauntlet_web::export_site(out, roots, crate::dashboard_engine::recount())
        .map_err(CliError::failed)?;
    outln!(
        "wrote a static site of {} run(s) ({} files) into {}{}",
        r.runs,
        r.files,
        out.display(),
        if r.warnings > 0 {
            format!("; {} warning(s), shown on the pages", r.warnings)
        } else {
            String::new()
        }
    )?;
    Ok(())
}

pub(crate) fn serve(a: ServeArgs) -> Result<(), CliError> {
    let token = std::env::var(gauntlet_web::server::TOKEN_ENV)
        .ok()
        .filter(|t| !t.is_empty());
    let opts = gauntlet_web::ServeOptions {
        roots: a.roots,
        bind: a.bind,
        allow_remote: a.allow_remote,
        token,
    };
    gauntlet_web::server::check_bind(&opts).map_err(CliError::invalid)?;
    gauntlet_web::serve(opts, crate::dashboard_engine::recount()).map_err(serve_error)
}

pub(crate) fn corpus_pin(dir: &Path) -> Result<(), CliError> {
    match gauntlet_corpus::corpus::pin(dir) {
        Ok(r) => {
            if let Some(e) = &r.previous_error {
                outln!("replaced an unreadable pin: {}", safe_text(e))?;
            }
            match &r.previous {
                Some(p) if !r.count_changed && !r.digest_changed => {
                    outln!(
                        "{}: unchanged (count {}, sha256 {})",
                        safe(&r.pin_path.display().to_string()),
                        p.count,
                        p.sha256
                    )?;
                }
                prev => {
                    if let Some(p) = prev {
                        outln!("previous: count {} sha256 {}", p.count, safe(&p.sha256))?;
                    }
                    outln!("pinned:   count {} sha256 {}", r.pin.count, r.pin.sha256)?;
                    match &r.diff {
                        Some(d) => {
                            for f in &d.added {
                                outln!("  + {}", safe(f))?;
                            }
                            for f in &d.removed {
                                outln!("  - {}", safe(f))?;
                            }
                            for f in &d.changed {
                                outln!("  ~ {}", safe(f))?;
                            }
                        }
                        None if prev.is_some() => outln!(
                            "  (no recorded manifest for the previous pin: per-file changes unknown)"
                        )?,
                        None => {}
                    }
                }
            }
            Ok(())
        }
        Err(e) => Err(CliError::invalid(e)),
    }
}

pub(crate) fn corpus_verify(dir: &Path) -> Result<(), CliError> {
    let c = gauntlet_corpus::load::load_corpus(dir, None)
        .map_err(|e| CliError::InvalidReport(e.to_string()))?;
    outln!("corpus OK: {}", safe(&c.root.display().to_string()))?;
    outln!("count  {}", c.count)?;
    outln!("sha256 {}", c.digest)?;
    outln!("{} scenarios parsed", c.scenarios.len())?;
    Ok(())
}

/// A dashboard server's error as the command's: a failed write to stdout keeps its
/// `io::Error` (a reader that went away ends the command with exit 141).
pub(crate) fn serve_error(e: gauntlet_web::server::ServeError) -> CliError {
    match e {
        gauntlet_web::server::ServeError::Stdout(io) => CliError::Stdout(io),
        e => CliError::failed(e),
    }
}
