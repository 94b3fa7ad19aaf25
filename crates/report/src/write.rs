//! Writing the three report files, each atomically: the bytes go to a temporary file in
//! the destination directory, are flushed to disk, and the file is then renamed over its
//! final name, so a reader never sees a half-written report.

use std::fs;
use std::io::{self, Write as _};
use std::path::Path;
use std::sync::atomic::{AtomicU64, Ordering};

use crate::breadth::ReportOptions;
use crate::render::{leaderboard_json, render_html_with, render_markdown_with};
use gauntlet_results::RunSummary;

/// The file names [`write_reports`] produces.
pub const LEADERBOARD_FILE: &str = "leaderboard.json";
pub const MARKDOWN_FILE: &str = "report.md";
pub const HTML_FILE: &str = "report.html";

/// Writes [`LEADERBOARD_FILE`], [`MARKDOWN_FILE`] and [`HTML_FILE`] into `dir` (created
/// if missing), each atomically, replacing any previous version.
pub fn write_reports(dir: &Path, summary: &RunSummary) -> io::Result<()> {
    write_reports_with(dir, summary, &ReportOptions::default())
}

/// [`write_reports`] with report options (the threat frameworks to group by).
pub fn write_reports_with(
    dir: &Path,
    summary: &RunSummary,
    opts: &ReportOptions,
) -> io::Result<()> {
    fs::create_dir_all(dir)?;
    write_atomic(dir, LEADERBOARD_FILE, leaderboard_json(summary).as_bytes())?;
    write_atomic(
        dir,
        MARKDOWN_FILE,
        render_markdown_with(summary, opts).as_bytes(),
    )?;
    write_atomic(dir, HTML_FILE, render_html_with(summary, opts).as_bytes())?;
    Ok(())
}

/// Writes `dir/name` through a uniquely named temporary sibling and a rename; refuses a
/// `dir/name` that is not a regular file (a device, pipe or link is never replaced).
pub fn write_atomic(dir: &Path, name: &str, bytes: &[u8]) -> io::Result<()> {
    gauntlet_core::atomic::check_replaceable(&dir.join(name))?;
    static COUNTER: AtomicU64 = AtomicU64::new(0);
    let unique = COUNTER.fetch_add(1, Ordering::Relaxed);
    let tmp = dir.join(format!(".{name}.tmp-{}-{unique}", std::process::id()));
    let result = (|| {
        let mut f = fs::OpenOptions::new()
            .write(true)
            .create_new(true)
            .open(&tmp)?;
        f.write_all(bytes)?;
        f.sync_all()?;
        drop(f);
        fs::rename(&tmp, dir.join(name))
    })();
    if result.is_err() {
        let _ = fs::remove_file(&tmp);
    }
    result
}
