//! The dashboard's first page: a scorecard with one row per target.
//!
//! Each column is a headline metric of a surface under one judge (asr and frr per judge,
//! injection success and utility under attack, extraction rate, the agent exam's pass
//! rate). A target's cell is its **worst** cell over every attack, dataset and run shown
//! (highest asr, lowest utility, …) with its 95% interval and n, the attack and run it
//! comes from, and how many cells it was chosen from — so the row answers "how unsafe can
//! this target be made, and by what". The pivot page breaks a column down by attack.
//! Warnings the runs wrote on their rows (degenerate judges, undelivered injections),
//! each naming its cell with its dataset, rows that do not add up, and runs in progress
//! or not complete are shown on the target's row; a cell whose row comes from such a run
//! carries its mark ([`crate::marks`]). Usage metrics (tokens, cost) are never ranked
//! among rates: they have their own table, summed per target.

use crate::dashboard::Dashboard;
use crate::links::{Links, Mode};
use crate::marks::{self, Mark};
use crate::scan::{Row, Run, Surface};
use crate::verify::{self, RowCheck};
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
    /// The shown row's run in progress or not complete, the row unverified.
    pub marks: Vec<Mark>,
}

#[derive(Debug, Clone, Serialize)]
pub struct TargetRow {
    pub target: String,
    pub runs: usize,
    pub cells: Vec<Cell>,
    pub warnings: Vec<String>,
    pub unverified: usize,
    /// Runs of this target in progress or not complete, each with its mark.
    pub run_marks: Vec<(String, Mark)>,
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

/// A row, the run it is in, and its check.
type Found<'a> = (&'a Run, &'a Row, RowCheck);

fn counted(s: Surface) -> bool {
    s != Surface::DetectExam
}

/// What a target's row gathers: its runs' slugs, its warning lines, its unverified rows
/// and the marks of its runs in progress or not complete.
#[derive(Default)]
struct TargetAcc<'a> {
    slugs: BTreeSet<&'a str>,
    warnings: BTreeSet<String>,
    unverified: usize,
    marks: BTreeSet<(String, Mark)>,
}

/// `dataset`, or `dataset @ version` when the rows of one target hold that dataset at
/// more than one version (so two different cells never read alike).
fn dataset_label(row: &Row, versions: &BTreeMap<(&str, &str), BTreeSet<&str>>) -> String {
    let many = versions
        .get(&(row.target.as_str(), row.dataset.as_str()))
        .is_some_and(|v| v.len() > 1);
    if many {
        format!("{} @ {}", row.dataset, view::short(&row.dataset_version))
    } else {
        row.dataset.clone()
    }
}

/// Builds the overview of the runs in `d` (all, or the run whose slug is `run`).
pub fn build(d: &Dashboard, run: &str, mode: Mode) -> Overview {
    let cat = d.catalog();
    let links = Links(mode);
    let runs: Vec<&Arc<Run>> = cat
        .runs
        .iter()
        .filter(|r| counted(r.surface) && (run.is_empty() || r.slug == run))
        .collect();
    let mut columns: BTreeSet<(usize, String)> = BTreeSet::new();
    // (target, column) → rows with their run.
    let mut by_cell: BTreeMap<(String, usize, String), Vec<Found>> = BTreeMap::new();
    let mut targets: BTreeMap<String, TargetAcc> = BTreeMap::new();
    let mut usage: BTreeMap<(String, String), f64> = BTreeMap::new();
    let mut usage_cols: BTreeSet<String> = BTreeSet::new();
    let mut versions: BTreeMap<(&str, &str), BTreeSet<&str>> = BTreeMap::new();
    for r in &runs {
        for row in &r.rows {
            versions
                .entry((row.target.as_str(), row.dataset.as_str()))
                .or_default()
                .insert(row.dataset_version.as_str());
        }
    }
    for r in &runs {
        let check = d.check_of(r);
        let run_marks = marks::run_marks(r);
        for (i, row) in r.rows.iter().enumerate() {
            if row.target.is_empty() {
                continue;
            }
            let state = verify::row_state(r, i, check.as_deref());
            let t = targets.entry(row.target.clone()).or_default();
            t.slugs.insert(r.slug.as_str());
            for w in &row.warnings {
                t.warnings.insert(format!(
                    "{} · {} · {} · {}: {w}",
                    row.metric,
                    row.attack,
                    dataset_label(row, &versions),
                    row.judge
                ));
            }
            if matches!(state, RowCheck::Unverified(_)) {
                t.unverified += 1;
            }
            for m in &run_marks {
                t.marks.insert((r.name.clone(), m.clone()));
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
            if let Some(h) = HEADLINES.iter().position(|(m, _)| *m == row.metric_name) {
                columns.insert((h, row.judge.clone()));
                by_cell
                    .entry((row.target.clone(), h, row.judge.clone()))
                    .or_default()
                    .push((r, row, state));
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
    for (target, acc) in &targets {
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
                let worst = list
                    .iter()
                    .filter(|(_, row, _)| row.value.is_some())
                    .max_by(|(ra, a, _), (rb, b, _)| {
                        let (x, y) = (a.value.unwrap_or(0.0), b.value.unwrap_or(0.0));
                        let o = if worse_high {
                            x.total_cmp(&y)
                        } else {
                            y.total_cmp(&x)
                        };
                        o.then(ra.date.cmp(&rb.date)).then(rb.slug.cmp(&ra.slug))
                    });
                let warned = list.iter().any(|(_, row, _)| !row.warnings.is_empty());
                match worst {
                    Some((run, row, state)) => {
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
                            marks: marks::row_marks(run, state),
                        }
                    }
                    None => Cell {
                        value: "N/A".into(),
                        na: true,
                        // N/A in a run not final may be N/A only because the run stopped.
                        marks: list
                            .iter()
                            .flat_map(|(run, _, state)| marks::row_marks(run, state))
                            .collect::<BTreeSet<_>>()
                            .into_iter()
                            .collect(),
                        na_reason: list
                            .iter()
                            .find_map(|(_, row, _)| row.na_reason.clone())
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
            runs: acc.slugs.len(),
            cells,
            warnings: acc.warnings.iter().take(20).cloned().collect(),
            unverified: acc.unverified,
            run_marks: acc.marks.iter().take(20).cloned().collect(),
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
        .map(|(t, acc)| UsageRow {
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
            runs: acc.slugs.len(),
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
