//! `gauntlet report --site OUT RUNS_DIR…`: the dashboard's pages as a self-contained
//! static site — plain files with relative links, no server and no network needed to
//! view or share them. Each page carries its CSP in a `<meta>` tag. `index.html` is the
//! overview, `pivot.html` the default pivot (asr under the first judge). Leaderboards list
//! every row (filtering needs the server); each run's transcripts are exported for the
//! first [`TRANSCRIPT_PAGES`] pages, each attempt on them with its own page.

use crate::dashboard::Dashboard;
pub use crate::links::TRANSCRIPT_PAGES;
use crate::pages::{self, LbQuery, Links, Mode};
use crate::scan::Surface;
use crate::transcripts::{Filter, PAGE};
use std::path::{Path, PathBuf};
use std::sync::Arc;

/// What an export wrote.
#[derive(Debug, Default, Clone)]
pub struct SiteReport {
    pub runs: usize,
    pub files: usize,
    pub warnings: usize,
}

/// Why [`export_site`] stopped.
#[derive(Debug, thiserror::Error)]
pub enum SiteError {
    /// The site's directory cannot be created.
    #[error("cannot create {}: {source}", dir.display())]
    Create {
        dir: PathBuf,
        #[source]
        source: std::io::Error,
    },
    /// A page cannot be written.
    #[error("cannot write {}: {source}", path.display())]
    Write {
        path: PathBuf,
        #[source]
        source: std::io::Error,
    },
}

fn write(out: &Path, name: &str, body: &str, n: &mut usize) -> Result<(), SiteError> {
    gauntlet_report::write_atomic(out, name, body.as_bytes()).map_err(|source| {
        SiteError::Write {
            path: out.join(name),
            source,
        }
    })?;
    *n += 1;
    Ok(())
}

/// Writes the site into `out` (created if missing). The recount (through `recount`)
/// runs first, so the pages show each row's check.
pub fn export_site(
    out: &Path,
    roots: Vec<PathBuf>,
    recount: Arc<dyn crate::verify::Recount>,
) -> Result<SiteReport, SiteError> {
    std::fs::create_dir_all(out).map_err(|source| SiteError::Create {
        dir: out.to_path_buf(),
        source,
    })?;
    let d: Arc<Dashboard> = Dashboard::new(roots, recount);
    d.check_pending();
    let cat = d.catalog();
    let links = Links(Mode::Site);
    let mut files = 0;
    write(
        out,
        "index.html",
        &pages::overview_page(&d, "", Mode::Site),
        &mut files,
    )?;
    let pq = crate::pivot::PivotQuery::default();
    write(
        out,
        &links.pivot(),
        &pages::pivot_page(&d, &pq, Mode::Site),
        &mut files,
    )?;
    for s in Surface::ALL {
        let q = LbQuery {
            surface: s.key().into(),
            ..Default::default()
        };
        let page = pages::leaderboard(&d, &q, Mode::Site);
        write(out, &links.surface(s), &page, &mut files)?;
    }
    for run in &cat.runs {
        if let Some(p) = pages::run_page(&d, &run.slug, Mode::Site) {
            write(out, &links.run(&run.slug), &p, &mut files)?;
        }
        if let Some(p) = pages::exam_page(&d, &run.slug, Mode::Site) {
            write(out, &links.exam(&run.slug), &p, &mut files)?;
        }
        if let Some(Ok(p)) = pages::report_page(&d, &run.slug) {
            write(out, &links.report(&run.slug), &p, &mut files)?;
        }
        if run.has_transcripts {
            let f = Filter::default();
            for k in 0..TRANSCRIPT_PAGES {
                let from = k * PAGE;
                let Some(p) = pages::transcripts_page(&d, &run.slug, &f, from, Mode::Site) else {
                    break;
                };
                write(out, &links.transcripts(&run.slug, &f, from), &p, &mut files)?;
                let mut any = false;
                for line in from..from + PAGE {
                    match pages::transcript_page(&d, &run.slug, line, Mode::Site) {
                        Some(t) => {
                            any = true;
                            write(out, &links.transcript(&run.slug, line), &t, &mut files)?;
                        }
                        None => break,
                    }
                }
                if !any {
                    break;
                }
            }
        }
    }
    Ok(SiteReport {
        runs: cat.runs.len(),
        files,
        warnings: cat.warnings.len() + cat.runs.iter().map(|r| r.warnings.len()).sum::<usize>(),
    })
}
