//! `gauntlet-refusal-classifier`: the classifier's tools outside a run.
//!
//! - `embed --views open128,tail64`: JSON lines `{"text": …}` on stdin → the view
//!   embeddings as little-endian f32 rows on stdout (the training script's features, so
//!   training and inference embed replies with the same code).
//! - `tokens`: JSON lines `{"text": …}` on stdin → the tokeniser's ids of each text
//!   (no special tokens), one JSON array per line (checked against the reference
//!   tokeniser when the fixture is regenerated).
//! - `predict`: JSON lines `{"text": …}` on stdin → one refusal probability per line from
//!   the shipped head (the training script checks the Rust path end to end with it).
//! - `bench FILE.csv…`: per-reply latency of the shipped classifier over the replies in
//!   the files (a `completion` or `reply` column); `bench/classifier.sh` runs it on one core.

// Files are read through `gauntlet_core::files` only (clippy.toml says why).
#![cfg_attr(not(test), deny(clippy::disallowed_methods))]

use clap::{Parser, Subcommand};
use gauntlet_classifier::classifier::{LoadError, RefusalClassifier};
use gauntlet_classifier::encoder::{Encoder, EncoderError};
use gauntlet_classifier::head::Head;
use gauntlet_classifier::view::{View, ViewError};
use gauntlet_classifier::weights;
use std::io::{BufRead, BufWriter, Write};
use std::path::{Path, PathBuf};
use std::process::ExitCode;
use std::time::Instant;

#[derive(Parser)]
#[command(about = "gauntlet's offline refusal classifier: embed, predict, bench")]
struct Cli {
    /// The MiniLM directory (default: $GAUNTLET_MINILM_DIR, else ~/.cache/gauntlet/all-MiniLM-L6-v2).
    #[arg(long, global = true)]
    model_dir: Option<String>,
    #[command(subcommand)]
    cmd: Cmd,
}

#[derive(Subcommand)]
enum Cmd {
    /// Embed stdin's texts under the given views; f32 rows on stdout.
    Embed {
        /// Comma-separated views (open<N>, tail<N>).
        #[arg(long, value_delimiter = ',', required = true)]
        views: Vec<String>,
    },
    /// The tokeniser's ids of each of stdin's texts, one JSON array per line.
    Tokens,
    /// The shipped head's refusal probability for each of stdin's texts.
    Predict,
    /// Per-reply latency of the shipped classifier.
    Bench {
        files: Vec<PathBuf>,
        /// At most this many replies (in file order).
        #[arg(long)]
        limit: Option<usize>,
    },
}

/// Why a subcommand failed. `line` is 1-based; `path` is a CSV file given to `bench`.
#[derive(Debug, thiserror::Error)]
enum ToolError {
    #[error(transparent)]
    Weights(#[from] weights::WeightsError),
    #[error(transparent)]
    View(#[from] ViewError),
    #[error(transparent)]
    Encoder(#[from] EncoderError),
    #[error(transparent)]
    Load(#[from] LoadError),
    #[error("stdin: {0}")]
    Stdin(#[source] std::io::Error),
    #[error("stdin line {line}: {cause}")]
    StdinJson {
        line: usize,
        #[source]
        cause: serde_json::Error,
    },
    #[error("stdin line {line}: no string field `text`")]
    NoText { line: usize },
    #[error("{}: {cause}", path.display())]
    Csv {
        path: PathBuf,
        #[source]
        cause: csv::Error,
    },
    #[error("{}: no `completion` or `reply` column", path.display())]
    NoReplyColumn { path: PathBuf },
    #[error("no replies to time: pass CSV files with a completion/reply column")]
    NoReplies,
    /// Writing to stdout failed.
    #[error(transparent)]
    Stdout(std::io::Error),
}

fn texts() -> Result<Vec<String>, ToolError> {
    let mut out = Vec::new();
    for (i, line) in std::io::stdin().lock().lines().enumerate() {
        let line = line.map_err(ToolError::Stdin)?;
        let v: serde_json::Value = serde_json::from_str(&line)
            .map_err(|cause| ToolError::StdinJson { line: i + 1, cause })?;
        match v.get("text").and_then(|t| t.as_str()) {
            Some(t) => out.push(t.to_string()),
            None => return Err(ToolError::NoText { line: i + 1 }),
        }
    }
    Ok(out)
}

fn csv_replies(path: &Path) -> Result<Vec<String>, ToolError> {
    let csv_err = |cause| ToolError::Csv {
        path: path.to_path_buf(),
        cause,
    };
    // Through the capped layer: a labelled file, never a device or a pipe.
    let f = gauntlet_core::files::open(path, gauntlet_core::files::Kind::LABELS)
        .map_err(|e| csv_err(csv::Error::from(e.into_io())))?;
    let mut r = csv::Reader::from_reader(f);
    let headers = r.headers().map_err(csv_err)?;
    let col = headers
        .iter()
        .position(|h| h == "completion" || h == "reply")
        .ok_or_else(|| ToolError::NoReplyColumn {
            path: path.to_path_buf(),
        })?;
    r.records()
        .map(|rec| {
            rec.map(|rec| rec.get(col).unwrap_or("").to_string())
                .map_err(csv_err)
        })
        .collect()
}

fn run(cli: Cli) -> Result<(), ToolError> {
    let dir = weights::ensure(cli.model_dir.as_deref())?;
    match cli.cmd {
        Cmd::Embed { views } => {
            let views = views
                .iter()
                .map(|v| v.parse::<View>())
                .collect::<Result<Vec<_>, _>>()?;
            let enc = Encoder::load(&dir)?;
            let mut out = BufWriter::new(std::io::stdout().lock());
            let texts = texts()?;
            for (i, t) in texts.iter().enumerate() {
                for x in enc.features(t, &views)? {
                    out.write_all(&x.to_le_bytes()).map_err(ToolError::Stdout)?;
                }
                if (i + 1) % 200 == 0 {
                    eprintln!("embedded {}/{}", i + 1, texts.len());
                }
            }
            out.flush().map_err(ToolError::Stdout)
        }
        Cmd::Tokens => {
            let enc = Encoder::load(&dir)?;
            let mut out = BufWriter::new(std::io::stdout().lock());
            for t in texts()? {
                let ids = enc.tokens(&t, false);
                let line = serde_json::to_string(&ids).expect("ids serialise");
                writeln!(out, "{line}").map_err(ToolError::Stdout)?;
            }
            out.flush().map_err(ToolError::Stdout)
        }
        Cmd::Predict => {
            let c = RefusalClassifier::load(&dir, Head::shipped())?;
            let mut out = BufWriter::new(std::io::stdout().lock());
            for t in texts()? {
                let p = c.classify(&t, None)?;
                writeln!(out, "{:.6}", p.probability).map_err(ToolError::Stdout)?;
            }
            out.flush().map_err(ToolError::Stdout)
        }
        Cmd::Bench { files, limit } => {
            let t0 = Instant::now();
            let c = RefusalClassifier::load(&dir, Head::shipped())?;
            let load = t0.elapsed();
            let mut replies = Vec::new();
            for f in &files {
                replies.extend(csv_replies(f)?);
            }
            replies.truncate(limit.unwrap_or(usize::MAX));
            if replies.is_empty() {
                return Err(ToolError::NoReplies);
            }
            // Warm-up: the first calls allocate.
            for r in replies.iter().take(5) {
                c.classify(r, None)?;
            }
            let mut ms = Vec::with_capacity(replies.len());
            let cpu0 = cpu_seconds();
            let all = Instant::now();
            for r in &replies {
                let t = Instant::now();
                c.classify(r, None)?;
                ms.push(t.elapsed().as_secs_f64() * 1e3);
            }
            let total = all.elapsed().as_secs_f64();
            let cpu = cpu_seconds().zip(cpu0).map(|(b, a)| b - a);
            ms.sort_by(f64::total_cmp);
            let q = |p: f64| ms[((ms.len() - 1) as f64 * p).round() as usize];
            println!(
                "views {:?}, one thread, model load {:.0} ms (read + sha256 + parse)",
                c.head()
                    .views()
                    .iter()
                    .map(|v| v.to_string())
                    .collect::<Vec<_>>(),
                load.as_secs_f64() * 1e3
            );
            println!(
                "{} replies: mean {:.2} ms, median {:.2} ms, p90 {:.2} ms, max {:.2} ms per reply; {:.1} replies/s",
                ms.len(),
                ms.iter().sum::<f64>() / ms.len() as f64,
                q(0.5),
                q(0.9),
                ms[ms.len() - 1],
                ms.len() as f64 / total
            );
            // On a shared machine wall time includes waiting for the core; CPU time does not.
            if let Some(cpu) = cpu {
                println!(
                    "process CPU time {:.2} s: {:.2} ms per reply (10 ms resolution)",
                    cpu,
                    cpu * 1e3 / ms.len() as f64
                );
            }
            Ok(())
        }
    }
}

/// This process's user + system CPU time from /proc/self/stat (Linux; clock ticks of
/// 1/100 s), `None` elsewhere.
#[expect(
    clippy::disallowed_methods,
    reason = "the kernel's own /proc/self/stat, no path anyone names"
)]
fn cpu_seconds() -> Option<f64> {
    let stat = std::fs::read_to_string("/proc/self/stat").ok()?;
    // Fields after the parenthesised command name; utime and stime are fields 14 and 15.
    let rest = &stat[stat.rfind(')')? + 2..];
    let f: Vec<&str> = rest.split(' ').collect();
    let ticks = f.get(11)?.parse::<f64>().ok()? + f.get(12)?.parse::<f64>().ok()?;
    Some(ticks / 100.0)
}

fn main() -> ExitCode {
    match run(Cli::parse()) {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("gauntlet-refusal-classifier: {e}");
            ExitCode::FAILURE
        }
    }
}
