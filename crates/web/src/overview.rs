//! The dashboard's first page: a scorecard with one row per target.
//!
//! Each column is a headline metric of a surface under one judge (asr and frr per judge,
//! injection success and utility under attack, extraction rate, the agent exam's pass
//! rate). A target's cell is its **worst** cell over every attack, dataset and run shown
//! (highest asr, lowest utility, …) with its 95% interval and n, the attack and run it
//! comes from, and how many cells it was chosen from — so the row answers "how unsafe can
//! this target be made, and by what". The pivot page breaks a column down by attack.
//! Warnings the runs wrote on their rows (degenerate judges, undelivered injections) and
//! rows that do not add up are shown on the target's row. Usage metrics (tokens, cost)
//! are never ranked among rates: they have their own table, summed per target.

use crate::links::{Links, Mode};
use crate::scan::{Catalog, Row, Run, Surface};
use crate::view;
use serde::Serialize;
use std::collections::{BTreeMap, BTreeSet};
use std::sync::Arc;

/// The headline metrics, in column order, and whether a higher value is worse.
pub const HEADLINES: [(&str, bool); 6] = [
    ("asr", true),
    ("frr", true),
    ("injection_success_rate", true),
    ("utility_under_attack", false),
    ("extraction_rate", true),
    ("median_pass_rate", false),
];

/// Metrics counted in the usage table.
pub const USAGE: [&str; 2] = ["token_usage", "cost"];

/// One column of the scorecard.
#[derive(Debug, Clone, Serialize, PartialEq, Eq, PartialOrd, Ord)]
pub struct Column {
    pub metric: String,
    pub judge: String,
    pub higher_is_worse: bool,
    pub href: String,
}

/// One cell of the scorecard.
#[derive(Debug, Clone, Serialize, Default)]
pub struct Cell {
    pub value: String,
    pub ci: String,
    pub n: String,
    pub na: bool,
    pub na_reason: String,
    /// `attack · run` of the worst cell.
    pub from: String,
    pub from_href: String,
    /// Cells it was chosen from.
    pub of: usize,
    pub warned: bool,
    pub shade: String,
}

#[derive(Debug, Clone, Serialize)]
pub struct TargetRow {
    pub target: String,
    pub runs: usize,
    pub cells: Vec<Cell>,
    pub warnings: Vec<String>,
    pub unverified: usize,
}

#[derive(Debug, Clone, Serialize)]
pub struct UsageRow {
    pub target: String,
    pub values: Vec<String>,
    pub runs: usize,
}

/// The scorecard and the usage table.
#[derive(Debug, Clone, Serialize, Default)]
pub struct Overview {
    pub columns: Vec<Column>,
    pub rows: Vec<TargetRow>,
    pub usage_columns: Vec<String>,
    pub usage: Vec<UsageRow>,
    pub runs: usize,
    pub run_options: Vec<(String, String)>,
    pub run: String,
}

/// A row and the run it is in.
type Found<'a> = (&'a Run, &'a Row);

fn counted(s: Surface) -> bool {
    s != Surface::DetectExam
}

/// Builds the overview of the runs in `cat` (all, or the run whose slug is `run`).
pub fn build(cat: &Catalog, run: &str, mode: Mode) -> Overview {
    let links = Links(mode);
    let runs: Vec<&Arc<Run>> = cat
        .runs
        .iter()
        .filter(|r| counted(r.surface) && (run.is_empty() || r.slug == run))
        .collect();
    let mut columns: BTreeSet<(usize, String)> = BTreeSet::new();
    // (target, column) → rows with their run.
    let mut by_cell: BTreeMap<(String, usize, String), Vec<Found>> = BTreeMap::new();
    let mut targets: BTreeMap<String, (BTreeSet<&str>, BTreeSet<String>, usize)> = BTreeMap::new();
    let mut usage: BTreeMap<(String, String), f64> = BTreeMap::new();
    let mut usage_cols: BTreeSet<String> = BTreeSet::new();
    for r in &runs {
        for row in &r.rows {
            if row.target.is_empty() {
                continue;
            }
            let t = targets.entry(row.target.clone()).or_default();
            t.0.insert(r.slug.as_str());
            for w in &row.warnings {
                t.1.insert(format!(
                    "{} · {} · {}: {w}",
                    row.metric, row.attack, row.judge
                ));
            }
            if !row.problems.is_empty() || !r.problems.is_empty() {
                t.2 += 1;
            }
            if USAGE.contains(&row.metric_name.as_str()) {
                usage_cols.insert(row.metric.clone());
                if let Some(v) = row.value {
                    *usage
                        .entry((row.target.clone(), row.metric.clone()))
                        .or_default() += v;
                }
                continue;
            }
            // Headline metrics without params only (asr_at_k and friends are on the pivot).
            if row.metric != row.metric_name {
                continue;
            }
            if let Some(i) = HEADLINES.iter().position(|(m, _)| *m == row.metric_name) {
                columns.insert((i, row.judge.clone()));
                by_cell
                    .entry((row.target.clone(), i, row.judge.clone()))
                    .or_default()
                    .push((r, row));
            }
        }
    }
    let columns: Vec<(usize, String)> = columns.into_iter().collect();
    let col_views: Vec<Column> = columns
        .iter()
        .map(|(i, judge)| Column {
            metric: HEADLINES[*i].0.to_owned(),
            judge: judge.clone(),
            higher_is_worse: HEADLINES[*i].1,
            href: match mode {
                Mode::Server => format!(
                    "/pivot?metric={}&judge={}",
                    crate::links::enc(HEADLINES[*i].0),
                    crate::links::enc(judge)
                ),
                Mode::Site => links.surface(Surface::Jailbreak),
            },
        })
        .collect();
    let mut rows = Vec::new();
    for (target, (slugs, warnings, unverified)) in &targets {
        let cells = columns
            .iter()
            .map(|(i, judge)| {
                let worse_high = HEADLINES[*i].1;
                let Some(list) = by_cell.get(&(target.clone(), *i, judge.clone())) else {
                    return Cell {
                        value: "—".into(),
                        na: true,
                        na_reason: "no such cell for this target".into(),
                        ..Default::default()
                    };
                };
                let worst = list.iter().filter(|(_, row)| row.value.is_some()).max_by(
                    |(ra, a), (rb, b)| {
                        let (x, y) = (a.value.unwrap_or(0.0), b.value.unwrap_or(0.0));
                        let o = if worse_high {
                            x.total_cmp(&y)
                        } else {
                            y.total_cmp(&x)
                        };
                        o.then(ra.date.cmp(&rb.date)).then(rb.slug.cmp(&ra.slug))
                    },
                );
                let warned = list.iter().any(|(_, row)| !row.warnings.is_empty());
                match worst {
                    Some((run, row)) => {
                        let v = row.value.unwrap_or(0.0);
                        Cell {
                            value: view::value(v, &row.metric_name),
                            ci: view::interval(row.ci),
                            n: row.n.map(view::thousands).unwrap_or_default(),
                            na: false,
                            na_reason: String::new(),
                            from: format!("{} · {}", row.attack, run.name),
                            from_href: links.run(&run.slug),
                            of: list.len(),
                            warned,
                            shade: view::shade(v, 0.0, 1.0),
                        }
                    }
                    None => Cell {
                        value: "N/A".into(),
                        na: true,
                        na_reason: list
                            .iter()
                            .find_map(|(_, row)| row.na_reason.clone())
                            .unwrap_or_else(|| "no value in any cell".into()),
                        of: list.len(),
                        warned,
                        ..Default::default()
                    },
                }
            })
            .collect();
        rows.push(TargetRow {
            target: target.clone(),
            runs: slugs.len(),
            cells,
            warnings: warnings.iter().take(20).cloned().collect(),
            unverified: *unverified,
        });
    }
    let usage_columns: Vec<String> = usage_cols.into_iter().collect();
    let usage_rows = targets
        .iter()
        .filter(|(t, _)| {
            usage_columns
                .iter()
                .any(|c| usage.contains_key(&((*t).clone(), c.clone())))
        })
        .map(|(t, (slugs, _, _))| UsageRow {
            target: t.clone(),
            values: usage_columns
                .iter()
                .map(|c| {
                    let name = c.split(' ').next().unwrap_or(c);
                    usage
                        .get(&(t.clone(), c.clone()))
                        .map_or("—".into(), |v| view::value(*v, name))
                })
                .collect(),
            runs: slugs.len(),
        })
        .collect();
    Overview {
        columns: col_views,
        rows,
        usage_columns,
        usage: usage_rows,
        runs: runs.len(),
        run_options: cat
            .runs
            .iter()
            .filter(|r| counted(r.surface))
            .take(500)
            .map(|r| (r.slug.clone(), r.name.clone()))
            .collect(),
        run: run.to_owned(),
    }
}
