//! Time per reply of `refusal_match`'s rules (`refusal::first_hit`), single-threaded,
//! best of several passes; prints a digest of the verdicts so two builds can be checked
//! to decide the same.
//!
//!     cargo run --release -p gauntlet-engine --example refusal_rules_speed -- \
//!         ../shared/data/xstest-v2-dev/*.csv
//!
//! Without files it times the two replies of the offline benchmark's reference targets
//! (`bench/offline.sh`): a canned refusal and a canned compliance. It also prints how
//! long the first call takes (it builds the prefilter and compiles the rules it reaches);
//! with `EACH=1` in the environment it first times each reply on its own.

use gauntlet_engine::judge_eval::labelled::LabelledSet;
use gauntlet_redteam::refusal::first_hit;
use std::hint::black_box;
use std::path::PathBuf;
use std::time::Instant;

fn main() {
    let files: Vec<PathBuf> = std::env::args().skip(1).map(PathBuf::from).collect();
    let replies: Vec<String> = if files.is_empty() {
        use gauntlet_models::targets::reference::{DEFAULT_COMPLIANCE_TEXT, DEFAULT_REFUSAL_TEXT};
        vec![DEFAULT_REFUSAL_TEXT.into(), DEFAULT_COMPLIANCE_TEXT.into()]
    } else {
        let set = LabelledSet::read(&files).unwrap_or_else(|e| {
            eprintln!("error: {e}");
            std::process::exit(2)
        });
        set.replies.into_iter().map(|r| r.reply).collect()
    };
    let t = Instant::now();
    black_box(first_hit("warm-up", &[]));
    println!(
        "first call (compiles the rules): {:.1} ms",
        t.elapsed().as_secs_f64() * 1000.0
    );
    if std::env::var_os("EACH").is_some() {
        for r in &replies {
            let t = Instant::now();
            for _ in 0..200_000 {
                black_box(first_hit(black_box(r), &[]));
            }
            println!(
                "{:.3} µs  {:?}",
                t.elapsed().as_nanos() as f64 / 200_000.0 / 1000.0,
                r.chars().take(40).collect::<String>()
            );
        }
    }
    let total_bytes: usize = replies.iter().map(String::len).sum();
    // A digest of the verdicts (rule id and matched text, or none) per reply.
    let mut digest = gauntlet_core::hash::HashWriter::new();
    let mut refused = 0;
    for r in &replies {
        match first_hit(r, &[]) {
            Some(h) => {
                refused += 1;
                digest.field(h.rule.id.as_bytes());
                digest.field(h.matched.as_bytes());
            }
            None => digest.field(b"-"),
        }
    }
    let per_pass = (200_000 / replies.len()).max(1);
    let mut best = f64::INFINITY;
    for _ in 0..7 {
        let t = Instant::now();
        for _ in 0..per_pass {
            for r in &replies {
                black_box(first_hit(black_box(r), &[]));
            }
        }
        let ns = t.elapsed().as_nanos() as f64 / (per_pass * replies.len()) as f64;
        best = best.min(ns);
    }
    println!(
        "replies {} (mean {} bytes), refused {refused}, verdicts {}",
        replies.len(),
        total_bytes / replies.len(),
        &digest.finish_hex()[..16]
    );
    println!(
        "first_hit: {:.3} µs per reply (best of 7 passes)",
        best / 1000.0
    );
}
