//! Where a page links to: routes when served, file names in the static site ([`Mode`]),
//! one method per kind of page ([`Links`]), and how many transcript pages the site
//! exports per run ([`TRANSCRIPT_PAGES`]), so that no page links to one it lacks.

use crate::scan::Surface;
use crate::transcripts::{Filter, PAGE};

/// Transcript pages exported per run.
pub const TRANSCRIPT_PAGES: u64 = 5;

/// Server routes or static-site file names.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Mode {
    Server,
    Site,
}

pub fn enc(s: &str) -> String {
    percent_encoding::utf8_percent_encode(s, percent_encoding::NON_ALPHANUMERIC).to_string()
}

/// Links of one mode.
pub struct Links(pub Mode);

impl Links {
    pub fn home(&self) -> String {
        match self.0 {
            Mode::Server => "/".into(),
            Mode::Site => "index.html".into(),
        }
    }
    pub fn exam(&self, slug: &str) -> String {
        match self.0 {
            Mode::Server => format!("/run/{slug}/scenarios"),
            Mode::Site => format!("run-{slug}-scenarios.html"),
        }
    }
    pub fn pivot(&self) -> String {
        match self.0 {
            Mode::Server => "/pivot".into(),
            Mode::Site => "pivot.html".into(),
        }
    }
    pub fn surface(&self, s: Surface) -> String {
        match self.0 {
            Mode::Server => format!("/?surface={}", s.key()),
            Mode::Site => format!("leaderboard-{}.html", s.key()),
        }
    }
    pub fn run(&self, slug: &str) -> String {
        match self.0 {
            Mode::Server => format!("/run/{slug}"),
            Mode::Site => format!("run-{slug}.html"),
        }
    }
    pub fn report(&self, slug: &str) -> String {
        match self.0 {
            Mode::Server => format!("/run/{slug}/report"),
            Mode::Site => format!("run-{slug}-report.html"),
        }
    }
    pub fn transcripts(&self, slug: &str, f: &Filter, from: u64) -> String {
        match self.0 {
            Mode::Server => {
                let mut u = format!("/run/{slug}/transcripts?from={from}");
                for (k, v) in [
                    ("q", &f.q),
                    ("outcome", &f.outcome),
                    ("attack", &f.attack),
                    ("target", &f.target),
                    ("judge", &f.judge),
                ] {
                    if !v.is_empty() {
                        u.push_str(&format!("&{k}={}", enc(v)));
                    }
                }
                if f.disagree {
                    u.push_str("&disagree=1");
                }
                u
            }
            Mode::Site => format!("run-{slug}-transcripts-{}.html", from / PAGE),
        }
    }
    pub fn transcript(&self, slug: &str, line: u64) -> String {
        match self.0 {
            Mode::Server => format!("/run/{slug}/transcripts/{line}"),
            Mode::Site => format!("run-{slug}-line-{line}.html"),
        }
    }
}
