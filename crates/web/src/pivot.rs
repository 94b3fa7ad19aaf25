//! The pivot: for one metric under one judge, a target × attack matrix (with
//! `split`, target · attack × transform: `static+base64` is attack `static` under
//! transform `base64`). Each cell is a leaderboard row — its value, 95% interval and n,
//! shaded by value — and links to its transcripts, filtered to that attack, target and
//! judge. A cell whose difference from the baseline column (same row) is significant is
//! marked ▲ (higher) or ▼ (lower): the 95% interval of the difference, from the two
//! cells' own intervals (MOVER; Newcombe's interval for Wilson-interval rates), excludes
//! 0. That treats the cells as independent samples, which is conservative for cells that
//! share behaviors; the compare page gives the paired test.
//!
//! When several runs hold the same cell, the most recent run's row is shown and the
//! others are counted; rows are split by dataset version when more than one is present.

use crate::links::{Links, Mode, enc};
use crate::scan::{Catalog, Row, Run, Surface, metric_range};
use crate::transcripts::Filter;
use crate::view;
use serde::Serialize;
use std::collections::{BTreeMap, BTreeSet};
use std::sync::Arc;

/// What the pivot was asked for.
#[derive(Debug, Clone, Default)]
pub struct PivotQuery {
    pub metric: String,
    pub judge: String,
    pub dataset_version: String,
    pub run: String,
    pub split: bool,
    pub baseline: String,
}

#[derive(Debug, Clone, Serialize, Default)]
pub struct PivotCell {
    pub value: String,
    pub ci: String,
    pub n: String,
    pub na: bool,
    pub title: String,
    pub shade: String,
    /// `up`, `down` or empty: significant difference from the baseline column.
    pub mark: String,
    pub href: String,
    /// Other runs' rows for this cell, not shown.
    pub hidden: usize,
    pub warned: bool,
}

#[derive(Debug, Clone, Serialize)]
pub struct PivotRow {
    pub label: String,
    pub cells: Vec<PivotCell>,
}

#[derive(Debug, Clone, Serialize, Default)]
pub struct Pivot {
    pub metric: String,
    pub judge: String,
    pub metrics: Vec<String>,
    pub judges: Vec<String>,
    pub datasets: Vec<String>,
    pub dataset_version: String,
    pub runs: Vec<(String, String)>,
    pub run: String,
    pub split: bool,
    pub columns: Vec<String>,
    pub baseline: String,
    pub rows: Vec<PivotRow>,
    pub matched: usize,
    pub hidden: usize,
}

/// A row and the run it is in.
type Found<'a> = (&'a Arc<Run>, &'a Row);

/// `static+base64` → (`static`, `base64`); no transform → `none`.
pub fn split_attack(label: &str) -> (&str, &str) {
    match label.split_once('+') {
        Some((a, t)) => (a, t),
        None => (label, "none"),
    }
}

/// Builds the pivot. Rows of every surface but the detect exam take part.
pub fn build(cat: &Catalog, q: &PivotQuery, mode: Mode) -> Pivot {
    let links = Links(mode);
    let runs: Vec<&Arc<Run>> = cat
        .runs
        .iter()
        .filter(|r| r.surface != Surface::DetectExam)
        .collect();
    let mut metrics: BTreeSet<&str> = BTreeSet::new();
    for r in &runs {
        for row in &r.rows {
            metrics.insert(&row.metric);
        }
    }
    let metric = if metrics.contains(q.metric.as_str()) {
        q.metric.clone()
    } else if metrics.contains("asr") {
        "asr".into()
    } else {
        metrics
            .iter()
            .next()
            .map(|m| m.to_string())
            .unwrap_or_default()
    };
    let mut judges: BTreeSet<&str> = BTreeSet::new();
    for r in &runs {
        for row in r.rows.iter().filter(|row| row.metric == metric) {
            judges.insert(&row.judge);
        }
    }
    let judge = if judges.contains(q.judge.as_str()) {
        q.judge.clone()
    } else if judges.contains("refusal_match") {
        "refusal_match".into()
    } else {
        judges
            .iter()
            .next()
            .map(|j| j.to_string())
            .unwrap_or_default()
    };
    let mut matched: Vec<(&Arc<Run>, &Row)> = Vec::new();
    let mut datasets: BTreeSet<&str> = BTreeSet::new();
    for r in &runs {
        if !q.run.is_empty() && r.slug != q.run {
            continue;
        }
        for row in &r.rows {
            if row.metric == metric && row.judge == judge {
                datasets.insert(&row.dataset_version);
                if q.dataset_version.is_empty() || row.dataset_version == q.dataset_version {
                    matched.push((r, row));
                }
            }
        }
    }
    let by_dataset = q.dataset_version.is_empty() && datasets.len() > 1;
    let row_key = |row: &Row| -> String {
        let mut k = row.target.clone();
        if q.split {
            k.push_str(" · ");
            k.push_str(split_attack(&row.attack).0);
        }
        if by_dataset {
            k.push_str(" · ");
            k.push_str(&row.dataset_version);
        }
        k
    };
    let col_key = |row: &Row| -> String {
        if q.split {
            split_attack(&row.attack).1.to_owned()
        } else {
            row.attack.clone()
        }
    };
    // Column order: as first met (the runs' own attack order), `none` first when split.
    let mut columns: Vec<String> = Vec::new();
    if q.split && matched.iter().any(|(_, r)| !r.attack.contains('+')) {
        columns.push("none".into());
    }
    let mut grid: BTreeMap<(String, String), Vec<Found>> = BTreeMap::new();
    let mut row_order: Vec<String> = Vec::new();
    for (run, row) in &matched {
        let (rk, ck) = (row_key(row), col_key(row));
        if !columns.contains(&ck) {
            columns.push(ck.clone());
        }
        if !row_order.contains(&rk) {
            row_order.push(rk.clone());
        }
        grid.entry((rk, ck)).or_default().push((run, row));
    }
    row_order.sort();
    let baseline = if columns.contains(&q.baseline) {
        q.baseline.clone()
    } else {
        columns.first().cloned().unwrap_or_default()
    };
    let (lo, hi) = match metric_range(metric.split(' ').next().unwrap_or(&metric)) {
        Some((lo, hi)) if hi.is_finite() => (lo, hi),
        _ => {
            let vals = matched.iter().filter_map(|(_, r)| r.value);
            let max = vals.fold(0.0f64, f64::max);
            (0.0, if max > 0.0 { max } else { 1.0 })
        }
    };
    let pick = |rk: &str, ck: &str| -> Option<(&Arc<Run>, &Row, usize)> {
        let list = grid.get(&(rk.to_owned(), ck.to_owned()))?;
        let best = list
            .iter()
            .max_by(|(a, _), (b, _)| a.date.cmp(&b.date).then(b.slug.cmp(&a.slug)))?;
        Some((best.0, best.1, list.len() - 1))
    };
    let mut hidden_total = 0;
    let mut rows = Vec::new();
    for rk in &row_order {
        let base = pick(rk, &baseline);
        let cells = columns
            .iter()
            .map(|ck| {
                let Some((run, row, hidden)) = pick(rk, ck) else {
                    return PivotCell {
                        value: "—".into(),
                        na: true,
                        title: "no such cell".into(),
                        ..Default::default()
                    };
                };
                hidden_total += hidden;
                let f = Filter {
                    attack: row.attack.clone(),
                    target: row.target.clone(),
                    judge: row.judge.clone(),
                    ..Default::default()
                };
                let href = if run.has_transcripts {
                    links.transcripts(&run.slug, &f, 0)
                } else {
                    links.run(&run.slug)
                };
                let mut title = format!(
                    "{} × {} · {} · {} · run {}",
                    row.target, row.attack, row.dataset_version, row.judge, run.name
                );
                if hidden > 0 {
                    title.push_str(&format!(" ({hidden} older row(s) of this cell not shown)"));
                }
                for w in &row.warnings {
                    title.push_str(&format!("\n⚠ {w}"));
                }
                let Some(v) = row.value else {
                    return PivotCell {
                        value: "N/A".into(),
                        na: true,
                        title: format!(
                            "{title}\nN/A: {}",
                            row.na_reason.clone().unwrap_or_default()
                        ),
                        href,
                        hidden,
                        warned: !row.warnings.is_empty(),
                        ..Default::default()
                    };
                };
                let mut mark = String::new();
                if ck != &baseline
                    && let Some((_, b, _)) = base
                    && let (Some(bv), Some(bci), Some(ci)) = (b.value, b.ci, row.ci)
                {
                    let (dlo, dhi) = view::mover_diff(v, ci, bv, bci);
                    title.push_str(&format!(
                        "\nvs {baseline}: Δ {:+.3}, 95% CI [{dlo:+.3}, {dhi:+.3}]",
                        v - bv
                    ));
                    if dlo > 0.0 {
                        mark = "up".into();
                    } else if dhi < 0.0 {
                        mark = "down".into();
                    }
                }
                PivotCell {
                    value: view::value(v, &row.metric_name),
                    ci: view::interval(row.ci),
                    n: row.n.map(view::thousands).unwrap_or_default(),
                    na: false,
                    title,
                    shade: view::shade(v, lo, hi),
                    mark,
                    href,
                    hidden,
                    warned: !row.warnings.is_empty(),
                }
            })
            .collect();
        rows.push(PivotRow {
            label: rk.clone(),
            cells,
        });
    }
    Pivot {
        metric,
        judge,
        metrics: metrics.into_iter().map(str::to_owned).collect(),
        judges: judges.into_iter().map(str::to_owned).collect(),
        datasets: datasets.into_iter().map(str::to_owned).collect(),
        dataset_version: q.dataset_version.clone(),
        runs: runs
            .iter()
            .take(500)
            .map(|r| (r.slug.clone(), r.name.clone()))
            .collect(),
        run: q.run.clone(),
        split: q.split,
        columns,
        baseline,
        rows,
        matched: matched.len(),
        hidden: hidden_total,
    }
}

/// The pivot page's own URL with one thing changed (for the baseline links).
pub fn href(p: &Pivot, baseline: &str) -> String {
    let mut u = format!(
        "/pivot?metric={}&judge={}&baseline={}",
        enc(&p.metric),
        enc(&p.judge),
        enc(baseline)
    );
    if !p.dataset_version.is_empty() {
        u.push_str(&format!("&dataset_version={}", enc(&p.dataset_version)));
    }
    if !p.run.is_empty() {
        u.push_str(&format!("&run={}", enc(&p.run)));
    }
    if p.split {
        u.push_str("&split=1");
    }
    u
}
