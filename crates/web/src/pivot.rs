//! The pivot: for one metric under one judge, a matrix of cells — targets × attacks
//! (with `split`, target · attack × transform: `static+base64` is attack `static` under
//! transform `base64`), or, `by` target, attacks × targets, to put targets side by side.
//! Each cell is a leaderboard row — its value, 95% interval and n, shaded by value — and
//! links to its transcripts, filtered to that attack, target and judge.
//!
//! A cell is compared with the baseline column of its row (an attack, a transform or a
//! target) by the paired statistic of the compare page, over the behaviors both cells
//! judged: the exact McNemar test for a rate, the paired bootstrap for a score
//! ([`crate::compare::pair`], read from the runs' transcripts). ▲ / ▼ mark a cell
//! significantly higher / lower than its baseline; the cell shows B − A with its 95%
//! interval and p, and opens the same pair on the compare page. Where no pairing is
//! possible — a cell N/A, a run in progress or without transcripts, cells of two runs
//! whose judge (or the fixed target or attack) differs in its params, no behavior in
//! common — the cell says "no test" and why: two cells are never compared as if they
//! were independent samples of one population.
//!
//! When several runs hold the same cell, the most recent run's row is shown and the
//! others are counted; rows are split by dataset version when more than one is present.
//! A cell of a run in progress, not complete or unverified carries that mark.

use crate::compare::{self, CellKey, PairedVerdict};
use crate::dashboard::Dashboard;
use crate::links::{Links, Mode, enc};
use crate::marks::{self, Mark};
use crate::scan::{Row, Run, Surface, metric_range};
use crate::transcripts::Filter;
use crate::verify;
use crate::view;
use gauntlet_redteam::mismatch;
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
    /// The columns: `attack` (the default) or `target`.
    pub by: String,
}

/// What the columns of a pivot are.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Columns {
    /// Rows are targets (· attack with `split`), columns attacks (transforms).
    Attacks,
    /// Rows are attacks, columns targets.
    Targets,
}

impl Columns {
    pub fn parse(s: &str) -> Columns {
        if s == "target" {
            Columns::Targets
        } else {
            Columns::Attacks
        }
    }
    pub fn key(self) -> &'static str {
        match self {
            Columns::Attacks => "attack",
            Columns::Targets => "target",
        }
    }
}

#[derive(Debug, Clone, Serialize, Default)]
pub struct PivotCell {
    pub value: String,
    pub ci: String,
    pub n: String,
    pub na: bool,
    pub title: String,
    pub shade: String,
    /// `up`, `down` or empty: significantly higher / lower than the baseline cell.
    pub mark: String,
    pub href: String,
    /// Other runs' rows for this cell, not shown.
    pub hidden: usize,
    pub warned: bool,
    /// The baseline cell of its row.
    pub baseline: bool,
    /// The paired comparison with the baseline (`B − A +0.400 [+0.150, +0.650] p=0.0020`).
    pub test: String,
    /// No paired comparison with the baseline: why.
    pub notest: String,
    /// The same pair on the compare page (both cells in one run; the server only).
    pub compare_href: String,
    /// In progress, not complete, unverified.
    pub marks: Vec<Mark>,
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
    /// `attack` or `target`: what the columns are.
    pub by: String,
    /// What a row is (`target`, `target · attack`, `attack`).
    pub row_label: String,
    pub columns: Vec<String>,
    pub baseline: String,
    pub rows: Vec<PivotRow>,
    pub matched: usize,
    pub hidden: usize,
    /// Cells (not baselines) with a paired test, and those without one.
    pub tested: usize,
    pub untested: usize,
    /// Cells marked in progress, not complete or unverified.
    pub marked: usize,
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
pub fn build(d: &Arc<Dashboard>, q: &PivotQuery, mode: Mode) -> Pivot {
    let cat = d.catalog();
    let links = Links(mode);
    let by = Columns::parse(&q.by);
    let split = q.split && by == Columns::Attacks;
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
    // Each matched row with its index in its run (for its check).
    let mut matched: Vec<(&Arc<Run>, &Row, usize)> = Vec::new();
    let mut datasets: BTreeSet<&str> = BTreeSet::new();
    for r in &runs {
        if !q.run.is_empty() && r.slug != q.run {
            continue;
        }
        for (i, row) in r.rows.iter().enumerate() {
            if row.metric == metric && row.judge == judge {
                datasets.insert(&row.dataset_version);
                if q.dataset_version.is_empty() || row.dataset_version == q.dataset_version {
                    matched.push((r, row, i));
                }
            }
        }
    }
    let by_dataset = q.dataset_version.is_empty() && datasets.len() > 1;
    let row_key = |row: &Row| -> String {
        let mut k = match by {
            Columns::Attacks => row.target.clone(),
            Columns::Targets => row.attack.clone(),
        };
        if split {
            k.push_str(" · ");
            k.push_str(split_attack(&row.attack).0);
        }
        if by_dataset {
            k.push_str(" · ");
            k.push_str(&row.dataset);
            k.push_str(" @ ");
            k.push_str(&row.dataset_version);
        }
        k
    };
    let col_key = |row: &Row| -> String {
        match by {
            Columns::Attacks if split => split_attack(&row.attack).1.to_owned(),
            Columns::Attacks => row.attack.clone(),
            Columns::Targets => row.target.clone(),
        }
    };
    // Column order: as first met (the runs' own order), `none` first when split.
    let mut columns: Vec<String> = Vec::new();
    if split && matched.iter().any(|(_, r, _)| !r.attack.contains('+')) {
        columns.push("none".into());
    }
    let mut grid: BTreeMap<(String, String), Vec<(Found, usize)>> = BTreeMap::new();
    let mut row_order: Vec<String> = Vec::new();
    for (run, row, i) in &matched {
        let (rk, ck) = (row_key(row), col_key(row));
        if !columns.contains(&ck) {
            columns.push(ck.clone());
        }
        if !row_order.contains(&rk) {
            row_order.push(rk.clone());
        }
        grid.entry((rk, ck)).or_default().push(((run, row), *i));
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
            let vals = matched.iter().filter_map(|(_, r, _)| r.value);
            let max = vals.fold(0.0f64, f64::max);
            (0.0, if max > 0.0 { max } else { 1.0 })
        }
    };
    let pick = |rk: &str, ck: &str| -> Option<(&Arc<Run>, &Row, usize, usize)> {
        let list = grid.get(&(rk.to_owned(), ck.to_owned()))?;
        let best = list
            .iter()
            .max_by(|((a, _), _), ((b, _), _)| a.date.cmp(&b.date).then(b.slug.cmp(&a.slug)))?;
        Some((best.0.0, best.0.1, best.1, list.len() - 1))
    };
    let pairing = Pairing {
        d,
        by,
        judge: &judge,
        metric: &metric,
        mode,
    };
    let (mut hidden_total, mut tested, mut untested, mut marked) = (0, 0, 0, 0);
    let mut rows = Vec::new();
    for rk in &row_order {
        let base = pick(rk, &baseline);
        let cells = columns
            .iter()
            .map(|ck| {
                let Some((run, row, index, hidden)) = pick(rk, ck) else {
                    return PivotCell {
                        value: "—".into(),
                        na: true,
                        title: "no such cell".into(),
                        baseline: ck == &baseline,
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
                let href = if run.has_transcripts && !run.live {
                    links.transcripts(&run.slug, &f, 0)
                } else {
                    links.run(&run.slug)
                };
                let check = d.check_of(run);
                let cell_marks =
                    marks::row_marks(run, &verify::row_state(run, index, check.as_deref()));
                if !cell_marks.is_empty() {
                    marked += 1;
                }
                let mut title = format!(
                    "{} × {} · {} @ {} · {} · run {}",
                    row.target, row.attack, row.dataset, row.dataset_version, row.judge, run.name
                );
                if hidden > 0 {
                    title.push_str(&format!(" ({hidden} older row(s) of this cell not shown)"));
                }
                for m in &cell_marks {
                    title.push_str(&format!("\n⚠ {}", m.detail));
                }
                for w in &row.warnings {
                    title.push_str(&format!("\n⚠ {w}"));
                }
                let is_base = ck == &baseline;
                let (verdict, compare_href) = match (is_base, base) {
                    (true, _) => (None, String::new()),
                    (false, None) => (
                        Some(Err(format!("no baseline cell ({baseline}) in this row"))),
                        String::new(),
                    ),
                    (false, Some((brun, brow, _, _))) => {
                        let v = pairing.verdict((brun, brow), (run, row));
                        let href = pairing.compare_href((brun, brow), (run, row));
                        (Some(v), href)
                    }
                };
                let (mut test, mut notest, mut mark) =
                    (String::new(), String::new(), String::new());
                match &verdict {
                    Some(Ok(v)) => {
                        tested += 1;
                        test = ["B − A", v.diff.as_str(), v.ci.as_str(), v.p.as_str()]
                            .into_iter()
                            .filter(|x| !x.is_empty())
                            .collect::<Vec<_>>()
                            .join(" ");
                        title.push_str(&format!(
                            "\nvs {baseline} (A), paired over {} behavior(s): A {} · B {} · B − A {} {} ({}) · {} {} {}",
                            v.n, v.a, v.b, v.diff, v.ci, v.ci_method, v.test, v.p, v.detail
                        ));
                        mark = v.direction.to_owned();
                    }
                    Some(Err(why)) => {
                        untested += 1;
                        notest = why.clone();
                        title.push_str(&format!("\nno paired test with {baseline}: {why}"));
                    }
                    None => {}
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
                        baseline: is_base,
                        notest,
                        marks: cell_marks,
                        ..Default::default()
                    };
                };
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
                    baseline: is_base,
                    test,
                    notest,
                    compare_href,
                    marks: cell_marks,
                }
            })
            .collect();
        rows.push(PivotRow {
            label: rk.clone(),
            cells,
        });
    }
    let mut row_label = match by {
        Columns::Attacks => "target".to_owned(),
        Columns::Targets => "attack".to_owned(),
    };
    if split {
        row_label.push_str(" · attack");
    }
    if by_dataset {
        row_label.push_str(" · dataset @ version");
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
        split,
        by: by.key().into(),
        row_label,
        columns,
        baseline,
        rows,
        matched: matched.len(),
        hidden: hidden_total,
        tested,
        untested,
        marked,
    }
}

/// How a cell is paired with its baseline cell.
struct Pairing<'a> {
    d: &'a Arc<Dashboard>,
    by: Columns,
    judge: &'a str,
    metric: &'a str,
    mode: Mode,
}

impl Pairing<'_> {
    /// The paired verdict of `cell` (B) against `base` (A), or why there is none.
    fn verdict(&self, base: Found, cell: Found) -> Result<PairedVerdict, String> {
        let ((arun, arow), (brun, brow)) = (base, cell);
        for r in [arun, brun] {
            if r.live {
                return Err(format!("run {} is in progress", r.name));
            }
            if !r.has_transcripts {
                return Err(format!(
                    "run {} has no transcripts to pair behaviors from",
                    r.name
                ));
            }
        }
        for (side, row) in [("the baseline", arow), ("this cell", brow)] {
            if row.value.is_none() {
                return Err(format!("{side} is N/A"));
            }
        }
        if arow.dataset != brow.dataset || arow.dataset_version != brow.dataset_version {
            return Err(format!(
                "the cells are of different datasets ({} @ {} and {} @ {}): their behaviors cannot be paired",
                arow.dataset, arow.dataset_version, brow.dataset, brow.dataset_version
            ));
        }
        // The static site waits for every pair; a served page does not hold its request
        // while a large run's transcripts are read.
        let wait = self.mode == Mode::Site;
        let pending = || {
            "the paired test is being computed (reading the runs' transcripts): reload in a moment"
                .to_owned()
        };
        let sa = self
            .d
            .series_of(arun, self.judge, self.metric, wait)
            .ok_or_else(pending)?;
        let sb = self
            .d
            .series_of(brun, self.judge, self.metric, wait)
            .ok_or_else(pending)?;
        let (sa, sb) = match (sa.as_ref(), sb.as_ref()) {
            (Ok(a), Ok(b)) => (a, b),
            (Err(e), _) | (_, Err(e)) => return Err(e.clone()),
        };
        if arun.slug != brun.slug {
            // Two runs: the cells may differ in nothing but the compared factor.
            let find = |cfg: &gauntlet_redteam::config::RunConfig, axis: &str, label: &str| {
                let specs = match axis {
                    "judge" => &cfg.judges,
                    "target" => &cfg.targets,
                    _ => &cfg.attacks,
                };
                specs.iter().find(|s| s.label() == label).cloned()
            };
            let fixed = match self.by {
                Columns::Attacks => ("target", arow.target.as_str()),
                Columns::Targets => ("attack", arow.attack.as_str()),
            };
            let mut diffs = Vec::new();
            for (axis, label) in [("judge", self.judge), fixed] {
                if let (Some(x), Some(y)) =
                    (find(&sa.config, axis, label), find(&sb.config, axis, label))
                {
                    diffs.extend(
                        mismatch::spec_mismatches(&format!("{axis} `{label}`"), &x, &y)
                            .iter()
                            .map(ToString::to_string),
                    );
                }
            }
            if !diffs.is_empty() {
                return Err(format!(
                    "the cells come from runs {} and {} that differ in more than the {}: {}",
                    arun.name,
                    brun.name,
                    self.by.key(),
                    diffs.join("; ")
                ));
            }
        }
        let key = |r: &Row| (r.attack.clone(), r.target.clone(), r.dataset.clone());
        let empty = BTreeMap::new();
        let xa = sa.cells.get(&key(arow)).unwrap_or(&empty);
        let xb = sb.cells.get(&key(brow)).unwrap_or(&empty);
        let na = sa.na.get(&key(arow)).or(sb.na.get(&key(brow))).cloned();
        let seed: CellKey = match self.by {
            Columns::Attacks => (
                "*".into(),
                brow.target.clone(),
                brow.dataset.clone(),
                self.judge.to_owned(),
            ),
            Columns::Targets => (
                brow.attack.clone(),
                "*".into(),
                brow.dataset.clone(),
                self.judge.to_owned(),
            ),
        };
        let names = match self.by {
            Columns::Attacks => (arow.attack.as_str(), brow.attack.as_str()),
            Columns::Targets => (arow.target.as_str(), brow.target.as_str()),
        };
        let (cmp, _) = compare::pair(
            xa,
            xb,
            |v| *v,
            na,
            self.metric,
            names,
            &compare::seed_parts(&seed, self.metric),
        );
        let v = compare::verdict(&cmp);
        match v.na {
            Some(why) => Err(why),
            None => Ok(v),
        }
    }

    /// The compare page of the pair, when both cells are of one run (the server only).
    fn compare_href(&self, base: Found, cell: Found) -> String {
        let ((arun, arow), (brun, brow)) = (base, cell);
        if self.mode != Mode::Server || arun.slug != brun.slug {
            return String::new();
        }
        let (a, b) = match self.by {
            Columns::Attacks => (&arow.attack, &brow.attack),
            Columns::Targets => (&arow.target, &brow.target),
        };
        format!(
            "/compare?by={}&run={}&a={}&b={}&metric={}",
            self.by.key(),
            enc(&arun.slug),
            enc(a),
            enc(b),
            enc(self.metric)
        )
    }
}

/// The pivot page's own URL with one thing changed (for the baseline links).
pub fn href(p: &Pivot, baseline: &str) -> String {
    let mut u = format!(
        "/pivot?metric={}&judge={}&by={}&baseline={}",
        enc(&p.metric),
        enc(&p.judge),
        enc(&p.by),
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
