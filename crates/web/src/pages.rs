//! The pages, rendered with minijinja (HTML auto-escaping on for every template) from
//! the [`Dashboard`]'s state. The same functions render for the server (links are
//! routes, filters are forms) and for the static site (links are file names).

use crate::dashboard::Dashboard;
use crate::links::TRANSCRIPT_PAGES;
pub use crate::links::{Links, Mode, enc};
use crate::scan::{self, Kind, Row, Run, Surface, fmt_date};
use crate::transcripts::{self, Filter, PAGE};
use crate::verify::{self, RowCheck};
use base64::Engine as _;
use gauntlet_report::charts;
use gauntlet_results::detect::{CoverageRead, DetectReportRead};
use gauntlet_results::exam::{ExamReportRead, ScenarioRead};
use minijinja::value::{Serde, Value};
use minijinja::{AutoEscape, Environment, UndefinedBehavior, context};
use serde::{Deserialize, Serialize};
use serde_json::Value as Json;
use sha2::{Digest, Sha256};
use std::collections::BTreeSet;
use std::sync::{Arc, OnceLock};
use std::time::Duration;

/// Rows per leaderboard page.
pub const LB_PAGE: usize = 100;
/// Most options a filter's select lists.
const MAX_OPTIONS: usize = 500;
/// Seconds between refreshes of a live run's page.
pub const LIVE_REFRESH: u32 = 5;
/// Time one transcript request may spend scanning.
pub const SCAN_BUDGET: Duration = Duration::from_millis(80);

const CSS: &str = include_str!("../templates/app.css");

pub(crate) fn css_hash() -> &'static str {
    static H: OnceLock<String> = OnceLock::new();
    H.get_or_init(|| {
        let d = Sha256::digest(CSS.as_bytes());
        format!(
            "'sha256-{}'",
            base64::engine::general_purpose::STANDARD.encode(d)
        )
    })
}

/// The Content-Security-Policy of every page: nothing may load or run but the page's
/// one stylesheet (allowed by its hash); forms submit only to this origin.
pub fn csp() -> String {
    format!(
        "default-src 'none'; style-src {}; img-src 'none'; base-uri 'none'; form-action 'self'; frame-ancestors 'none'",
        css_hash()
    )
}

/// The CSP a static-site page carries in its `<meta>` tag: the same, less
/// `frame-ancestors`, which browsers ignore (and log as an error) in a meta tag.
pub fn csp_meta() -> String {
    format!(
        "default-src 'none'; style-src {}; img-src 'none'; base-uri 'none'; form-action 'none'",
        css_hash()
    )
}

/// The CSP of a re-rendered full report (its own inline stylesheet, no script).
pub const REPORT_CSP: &str = "default-src 'none'; style-src 'unsafe-inline'; base-uri 'none'; form-action 'none'; frame-ancestors 'none'";

fn env() -> &'static Environment<'static> {
    static E: OnceLock<Environment<'static>> = OnceLock::new();
    E.get_or_init(|| {
        let mut e = Environment::new();
        e.set_auto_escape_callback(|_| AutoEscape::Html);
        e.set_undefined_behavior(UndefinedBehavior::Strict);
        for (name, text) in [
            ("base.html", include_str!("../templates/base.html")),
            (
                "leaderboard.html",
                include_str!("../templates/leaderboard.html"),
            ),
            ("run.html", include_str!("../templates/run.html")),
            (
                "transcripts.html",
                include_str!("../templates/transcripts.html"),
            ),
            (
                "transcript.html",
                include_str!("../templates/transcript.html"),
            ),
            ("compare.html", include_str!("../templates/compare.html")),
            ("overview.html", include_str!("../templates/overview.html")),
            ("pivot.html", include_str!("../templates/pivot.html")),
            ("exam.html", include_str!("../templates/exam.html")),
            ("error.html", include_str!("../templates/error.html")),
            ("label.html", include_str!("../templates/label.html")),
        ] {
            e.add_template(name, text)
                .expect("embedded template parses");
        }
        e
    })
}

#[derive(Serialize)]
struct SurfaceLink {
    title: &'static str,
    href: String,
    rows: usize,
    current: bool,
}

pub(crate) fn base_ctx(d: &Dashboard, mode: Mode, title: &str, current: Option<Surface>) -> Value {
    let cat = d.catalog();
    let l = Links(mode);
    let surfaces: Vec<SurfaceLink> = Surface::ALL
        .iter()
        .map(|s| SurfaceLink {
            title: s.title(),
            href: l.surface(*s),
            rows: cat
                .runs
                .iter()
                .filter(|r| r.surface == *s)
                .map(|r| r.rows.len())
                .sum(),
            current: current == Some(*s),
        })
        .collect();
    let mut warnings = cat.warnings.clone();
    for r in &cat.runs {
        for w in &r.warnings {
            warnings.push(format!("{}: {w}", r.slug));
        }
    }
    warnings.truncate(200);
    context! {
        title => title,
        // The labelling page replaces it (see `server::guard`).
        referrer => "no-referrer",
        writes => false,
        site => mode == Mode::Site,
        csp => csp_meta(),
        css => Value::from_safe_string(CSS.to_owned()),
        home => l.home(),
        pivot_nav => l.pivot(),
        surfaces => Serde(surfaces),
        warnings => Serde(warnings),
        refresh => Value::from(()),
    }
}

pub(crate) fn render(name: &str, ctx: Value) -> String {
    env()
        .get_template(name)
        .and_then(|t| t.render(ctx))
        .unwrap_or_else(|e| format!("template error: {e}"))
}

/// A row as the tables show it.
#[derive(Serialize, Clone)]
struct RowView {
    run: String,
    run_href: String,
    live: bool,
    date: String,
    target: String,
    attack: String,
    dataset: String,
    dataset_version: String,
    dataset_version_short: String,
    warnings: Vec<String>,
    judge: String,
    metric: String,
    value: String,
    na: bool,
    na_reason: String,
    /// `+3 undecided: 0.154–0.385` when the judge left replies undecided: the value with
    /// none and with all of them counted (empty otherwise).
    undecided: String,
    ci: String,
    n: String,
    errors: String,
    status: String,
    check: &'static str,
    check_class: &'static str,
    check_detail: String,
    /// The run in progress or not complete, the row unverified.
    marks: Vec<crate::marks::Mark>,
}

fn row_view(run: &Run, row: &Row, state: &RowCheck, links: &Links) -> RowView {
    let opt = |v: Option<u64>| v.map_or("—".to_owned(), |x| x.to_string());
    RowView {
        run: run.name.clone(),
        run_href: links.run(&run.slug),
        live: run.live,
        date: run.date.map(fmt_date).unwrap_or_default(),
        target: row.target.clone(),
        attack: row.attack.clone(),
        dataset: row.dataset.clone(),
        dataset_version: row.dataset_version.clone(),
        judge: row.judge.clone(),
        metric: row.metric.clone(),
        value: match row.value {
            Some(v) => crate::view::value(v, &row.metric_name),
            None => match &row.na_reason {
                Some(r) => format!("N/A ({r})"),
                None => "N/A".into(),
            },
        },
        na: row.value.is_none(),
        na_reason: row.na_reason.clone().unwrap_or_default(),
        undecided: match (row.undecided, row.bounds) {
            (Some(u), Some((lo, hi))) => format!(
                "+{u} undecided: {}–{}",
                crate::view::value(lo, &row.metric_name),
                crate::view::value(hi, &row.metric_name)
            ),
            (Some(u), None) => format!("+{u} undecided"),
            _ => String::new(),
        },
        ci: row
            .ci
            .map_or("—".into(), |c| crate::view::interval(Some(c))),
        dataset_version_short: crate::view::short(&row.dataset_version),
        warnings: row.warnings.clone(),
        n: opt(row.n),
        errors: format!("{} / {}", opt(row.errors), opt(row.attempts)),
        status: row.status.clone(),
        check: state.label(),
        check_class: match state {
            RowCheck::Pending => "pending",
            RowCheck::Verified => "verified",
            RowCheck::NotRecounted(_) => "not_recounted",
            RowCheck::Unverified(_) => "unverified",
        },
        check_detail: state.detail(),
        marks: crate::marks::row_marks(run, state),
    }
}

/// The leaderboard's query string.
#[derive(Debug, Clone, Default, Deserialize)]
#[serde(default)]
pub struct LbQuery {
    pub surface: String,
    pub target: String,
    pub attack: String,
    pub dataset_version: String,
    pub judge: String,
    pub metric: String,
    pub run: String,
    pub date: String,
    pub check: String,
    pub sort: String,
    pub dir: String,
    pub page: usize,
}

const SORTS: [&str; 9] = [
    "value",
    "date",
    "target",
    "attack",
    "dataset_version",
    "judge",
    "metric",
    "run",
    "n",
];

#[derive(Serialize)]
struct FilterView {
    name: &'static str,
    label: &'static str,
    options: Vec<String>,
    selected: String,
}

/// Usage metrics (tokens, cost) sort after every rate and score.
fn usage_last(r: &Row) -> bool {
    crate::overview::USAGE.contains(&r.metric_name.as_str())
}

/// The surface a leaderboard request shows: the asked one, else the first with rows.
pub fn pick_surface(d: &Dashboard, asked: &str) -> Surface {
    if let Some(s) = Surface::from_key(asked) {
        return s;
    }
    let cat = d.catalog();
    Surface::ALL
        .into_iter()
        .find(|s| {
            cat.runs
                .iter()
                .any(|r| r.surface == *s && !r.rows.is_empty())
        })
        .unwrap_or(Surface::Jailbreak)
}

/// One leaderboard row in a request, with its sort keys computed once.
struct Item<'a> {
    run: &'a Arc<Run>,
    row: &'a Row,
    state: RowCheck,
    /// The run's date, `YYYY-MM-DD HH:MM`.
    date: &'a str,
    /// A usage metric (ranked after every rate).
    usage: bool,
    /// The rank of the row's metric label among the labels shown (their string order).
    metric: u32,
    /// The rank of the run's slug among all slugs (their string order).
    slug: u32,
    /// The row's place in its run's leaderboard.
    index: u32,
}

/// A filter column of the leaderboard (a sort column too).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Col {
    Target,
    Attack,
    DatasetVersion,
    Judge,
    Metric,
    Run,
    Date,
}

impl Col {
    fn of(name: &str) -> Option<Col> {
        Some(match name {
            "target" => Col::Target,
            "attack" => Col::Attack,
            "dataset_version" => Col::DatasetVersion,
            "judge" => Col::Judge,
            "metric" => Col::Metric,
            "run" => Col::Run,
            "date" => Col::Date,
            _ => return None,
        })
    }
}

/// What the leaderboard is sorted by (one of [`SORTS`]).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum SortBy {
    Value,
    /// The run's start time.
    Date,
    N,
    Col(Col),
}

impl SortBy {
    fn of(name: &str) -> SortBy {
        match name {
            "date" => SortBy::Date,
            "n" => SortBy::N,
            other => Col::of(other).map_or(SortBy::Value, SortBy::Col),
        }
    }
}

impl Item<'_> {
    /// The value of a filter column.
    fn col(&self, c: Col) -> &str {
        match c {
            Col::Target => &self.row.target,
            Col::Attack => &self.row.attack,
            Col::DatasetVersion => &self.row.dataset_version,
            Col::Judge => &self.row.judge,
            Col::Metric => &self.row.metric,
            Col::Run => &self.run.name,
            Col::Date => self.date.get(..10).unwrap_or(""),
        }
    }
}

/// The leaderboard's order: by `sort` (values ranked within a metric, usage metrics last,
/// N/A after values), then by run slug, then by the row's place in its run. A total order.
fn compare_items(a: &Item, b: &Item, sort: SortBy, desc: bool) -> std::cmp::Ordering {
    use std::cmp::Ordering;
    let group = |a: &Item, b: &Item| a.usage.cmp(&b.usage).then(a.metric.cmp(&b.metric));
    let o = match sort {
        // Values are ranked within a metric: rates never sort among token counts.
        SortBy::Value => group(a, b).then(match (a.row.value, b.row.value) {
            (Some(x), Some(y)) => x.total_cmp(&y),
            (Some(_), None) => {
                if desc {
                    Ordering::Greater
                } else {
                    Ordering::Less
                }
            }
            (None, Some(_)) => {
                if desc {
                    Ordering::Less
                } else {
                    Ordering::Greater
                }
            }
            (None, None) => Ordering::Equal,
        }),
        SortBy::Date => a.run.date.cmp(&b.run.date),
        SortBy::N => a.row.n.cmp(&b.row.n),
        SortBy::Col(c) => a.col(c).cmp(b.col(c)),
    };
    let o = if desc && sort == SortBy::Value {
        // Descending values, but metrics still in their order.
        group(a, b).then(o.reverse())
    } else if desc {
        o.reverse()
    } else {
        o
    };
    o.then(a.slug.cmp(&b.slug)).then(a.index.cmp(&b.index))
}

/// Puts the first `upto` items of the leaderboard's order (all with `None`) in order at
/// the front of `items` and returns how many that is. A page of 40,000 rows sorts only
/// what precedes its last row.
fn rank(items: &mut [Item], sort: SortBy, desc: bool, upto: Option<usize>) -> usize {
    let cmp = |a: &Item, b: &Item| compare_items(a, b, sort, desc);
    let n = upto.map_or(items.len(), |u| u.min(items.len()));
    if n < items.len() && n > 0 {
        items.select_nth_unstable_by(n - 1, cmp);
    }
    items[..n].sort_unstable_by(cmp);
    n
}

/// The leaderboard of one surface, filtered, sorted and paged.
pub fn leaderboard(d: &Dashboard, q: &LbQuery, mode: Mode) -> String {
    let surface = pick_surface(d, &q.surface);
    let cat = d.catalog();
    let links = Links(mode);
    let mut all: Vec<Item> = Vec::new();
    let mut runs = 0;
    // Golden-backend exams: pipeline checks beside the leaderboard, never ranked in it.
    let mut checks: Vec<Value> = Vec::new();
    // Each run's date and slug rank, computed once (not once per row, nor per comparison).
    let dates: Vec<String> = cat
        .runs
        .iter()
        .map(|r| r.date.map(fmt_date).unwrap_or_default())
        .collect();
    let mut by_slug: Vec<usize> = (0..cat.runs.len()).collect();
    by_slug.sort_unstable_by(|a, b| cat.runs[*a].slug.cmp(&cat.runs[*b].slug));
    let mut slug_rank = vec![0u32; cat.runs.len()];
    for (rank, i) in by_slug.into_iter().enumerate() {
        slug_rank[i] = rank as u32;
    }
    let metrics: BTreeSet<&str> = cat
        .runs
        .iter()
        .filter(|r| r.surface == surface)
        .flat_map(|r| r.rows.iter().map(|row| row.metric.as_str()))
        .collect();
    let metric_rank: std::collections::HashMap<&str, u32> = metrics
        .into_iter()
        .enumerate()
        .map(|(i, m)| (m, i as u32))
        .collect();
    for (ri, run) in cat.runs.iter().enumerate() {
        if run.surface != surface {
            continue;
        }
        if let Some(pc) = &run.pipeline_check {
            checks.push(context! {
                run => run.name.clone(),
                run_href => links.run(&run.slug),
                date => dates[ri].clone(),
                target => run.rows.first().map(|r| r.target.clone()).unwrap_or_default(),
                result => if pc.passed { "passed" } else { "failed" },
                scenario_runs => format!("{}/{}", pc.runs_passed, pc.runs),
                status => run.status.clone(),
            });
            continue;
        }
        runs += 1;
        let check = d.check_of(run);
        for (i, row) in run.rows.iter().enumerate() {
            all.push(Item {
                run,
                row,
                state: verify::row_state(run, i, check.as_deref()),
                date: &dates[ri],
                usage: usage_last(row),
                metric: metric_rank.get(row.metric.as_str()).copied().unwrap_or(0),
                slug: slug_rank[ri],
                index: i as u32,
            });
        }
    }
    let total = all.len();
    let specs: [(&'static str, &'static str, &str, Col); 7] = [
        ("target", "target", &q.target, Col::Target),
        ("attack", "attack", &q.attack, Col::Attack),
        (
            "dataset_version",
            "dataset version",
            &q.dataset_version,
            Col::DatasetVersion,
        ),
        ("judge", "judge", &q.judge, Col::Judge),
        ("metric", "metric", &q.metric, Col::Metric),
        ("run", "run", &q.run, Col::Run),
        ("date", "date", &q.date, Col::Date),
    ];
    let filters: Vec<FilterView> = specs
        .iter()
        .map(|(name, label, sel, c)| {
            let mut opts: BTreeSet<&str> = BTreeSet::new();
            let mut last: Option<&str> = None;
            for it in &all {
                // Neighbouring rows (one run's) mostly share a value: insert it once.
                let v = it.col(*c);
                if !last.is_some_and(|l| std::ptr::eq(l, v) || l == v) {
                    opts.insert(v);
                    last = Some(v);
                }
            }
            FilterView {
                name,
                label,
                options: opts
                    .into_iter()
                    .filter(|o| !o.is_empty())
                    .take(MAX_OPTIONS)
                    .map(str::to_owned)
                    .collect(),
                selected: (*sel).to_owned(),
            }
        })
        .collect();
    all.retain(|it| {
        specs
            .iter()
            .all(|(_, _, sel, c)| sel.is_empty() || it.col(*c) == *sel)
            && (q.check.is_empty() || it.state.label() == q.check)
    });
    let filtered = all.len();
    let sort = if SORTS.contains(&q.sort.as_str()) {
        q.sort.as_str()
    } else {
        "value"
    };
    let desc = q.dir != "asc";
    let pages = filtered.div_ceil(LB_PAGE).max(1);
    let page = q.page.min(pages - 1);
    let by = SortBy::of(sort);
    let shown: &[Item] = if mode == Mode::Site {
        rank(&mut all, by, desc, None);
        &all
    } else {
        let upto = rank(&mut all, by, desc, Some((page + 1) * LB_PAGE));
        let from = (page * LB_PAGE).min(upto);
        &all[from..upto]
    };
    let rows: Vec<RowView> = shown
        .iter()
        .map(|it| row_view(it.run, it.row, &it.state, &links))
        .collect();
    // One metric chosen: its forest plot for the rows on this page.
    let chart = if !q.metric.is_empty() && !shown.is_empty() {
        let datasets = gauntlet_report::DatasetLabels::new(
            shown
                .iter()
                .map(|it| (it.row.dataset.as_str(), it.row.dataset_version.as_str())),
        );
        let fr: Vec<charts::ForestRow> = shown
            .iter()
            .map(|it| charts::ForestRow {
                group: it.row.target.clone(),
                label: if datasets.several() {
                    format!(
                        "{} · {} · {}",
                        it.row.attack,
                        datasets.label(&it.row.dataset, &it.row.dataset_version),
                        it.run.name
                    )
                } else {
                    format!("{} · {}", it.row.attack, it.run.name)
                },
                value: it.row.value,
                ci: it.row.ci,
                n: it.row.n.unwrap_or(0),
                na_reason: it.row.na_reason.clone(),
            })
            .collect();
        Value::from_safe_string(charts::forest(
            &format!("{}: value and 95% CI (rows on this page)", q.metric),
            &q.metric,
            &fr,
        ))
    } else {
        Value::from(())
    };
    let page_href = |p: usize| -> String {
        let mut u = format!(
            "/?surface={}&page={p}&sort={sort}&dir={}",
            surface.key(),
            if desc { "desc" } else { "asc" }
        );
        for (name, _, sel, _) in &specs {
            if !sel.is_empty() {
                u.push_str(&format!("&{name}={}", enc(sel)));
            }
        }
        if !q.check.is_empty() {
            u.push_str(&format!("&check={}", enc(&q.check)));
        }
        u
    };
    let server = mode == Mode::Server;
    let live: Vec<Choice> = cat
        .runs
        .iter()
        .filter(|r| r.live)
        .map(|r| Choice {
            slug: links.run(&r.slug),
            label: r.name.clone(),
        })
        .collect();
    let ctx = context! {
        live => Serde(live.iter().map(|c| context! { href => c.slug.clone(), name => c.label.clone() }).collect::<Vec<_>>()),
        surface => surface.key(),
        surface_title => surface.title(),
        total => total,
        filtered => filtered,
        runs => runs,
        filters => Serde(filters),
        check => q.check.clone(),
        sorts => Serde(SORTS),
        sort => sort,
        dir => if desc { "desc" } else { "asc" },
        rows => Serde(rows),
        checks => checks,
        chart => chart,
        page => page + 1,
        pages => if server { pages } else { 1 },
        prev_href => if server && page > 0 { Value::from(page_href(page - 1)) } else { Value::from(()) },
        next_href => if server && page + 1 < pages { Value::from(page_href(page + 1)) } else { Value::from(()) },
        ..base_ctx(d, mode, &format!("{} leaderboard", surface.title()), Some(surface))
    };
    render("leaderboard.html", ctx)
}

#[derive(Serialize)]
struct PartialCell {
    attack: String,
    target: String,
    judge: String,
    attempts: u64,
    success: u64,
    failure: u64,
    error: u64,
    share: String,
}

/// The charts of a run's page.
fn run_charts(run: &Run) -> Vec<Value> {
    let mut out = Vec::new();
    match run.kind {
        Kind::DetectExam => {
            if let Ok(Some(b)) = scan::read_capped(&run.dir, "report.json", scan::MAX_REPORT_FILE)
                && let Ok(r) = serde_json::from_slice::<DetectReportRead>(&b)
            {
                out.extend(detect_charts(&r).into_iter().map(Value::from_safe_string));
            }
        }
        Kind::AgentExam => {
            if let Ok(Some(b)) = scan::read_capped(&run.dir, "report.json", scan::MAX_REPORT_FILE)
                && let Ok(r) = serde_json::from_slice::<ExamReportRead>(&b)
            {
                let rates: Vec<f64> = r.passes().filter_map(|p| p.pass_rate.0).collect();
                let band = r.noise_band_pp.0.unwrap_or(8.0);
                let ci = r.pass_rate_ci95.0.map(|c| (c.low, c.high));
                out.push(Value::from_safe_string(charts::pass_band(
                    "Pass rate per pass, with the noise band",
                    &rates,
                    band,
                    ci,
                )));
            }
        }
        Kind::RedTeam => {}
    }
    // Per metric a forest plot of the run's rows, grouped by target.
    let mut metrics: Vec<&str> = Vec::new();
    for r in &run.rows {
        if !metrics.contains(&r.metric.as_str()) {
            metrics.push(&r.metric);
        }
    }
    if run.kind != Kind::DetectExam {
        let mut targets: Vec<&str> = Vec::new();
        for r in &run.rows {
            if !targets.contains(&r.target.as_str()) {
                targets.push(&r.target);
            }
        }
        let judges: BTreeSet<&str> = run.rows.iter().map(|r| r.judge.as_str()).collect();
        // Each chart row names its cell whole: the dataset too when the run has several
        // (with its version where a name is held at several), so no two rows read alike.
        let datasets = gauntlet_report::DatasetLabels::new(
            run.rows
                .iter()
                .map(|r| (r.dataset.as_str(), r.dataset_version.as_str())),
        );
        for m in &metrics {
            let mut rows: Vec<&Row> = run.rows.iter().filter(|r| r.metric == *m).collect();
            rows.sort_by_key(|r| targets.iter().position(|t| *t == r.target));
            let fr: Vec<charts::ForestRow> = rows
                .iter()
                .map(|r| charts::ForestRow {
                    group: r.target.clone(),
                    label: {
                        let mut l = r.attack.clone();
                        if judges.len() > 1 {
                            l.push_str(" · ");
                            l.push_str(&r.judge);
                        }
                        if datasets.several() {
                            l.push_str(" · ");
                            l.push_str(&datasets.label(&r.dataset, &r.dataset_version));
                        }
                        l
                    },
                    value: r.value,
                    ci: r.ci,
                    n: r.n.unwrap_or(0),
                    na_reason: r.na_reason.clone(),
                })
                .collect();
            out.push(Value::from_safe_string(charts::forest(
                &format!("{m}: value and 95% CI per cell, by target and attack"),
                m,
                &fr,
            )));
        }
    }
    if run.surface == Surface::Injection {
        let find = |r: &Row, name: &str| {
            run.rows.iter().find(|x| {
                x.metric_name == name
                    && x.attack == r.attack
                    && x.target == r.target
                    && x.judge == r.judge
                    && x.dataset_version == r.dataset_version
            })
        };
        let points: Vec<charts::ScatterPoint> = run
            .rows
            .iter()
            .filter(|r| r.metric_name == "injection_success_rate")
            .filter_map(|r| {
                let u = find(r, "utility_under_attack")?;
                Some(charts::ScatterPoint {
                    label: format!("{} × {}", r.attack, r.target),
                    x: r.value?,
                    y: u.value?,
                    x_ci: r.ci,
                    y_ci: u.ci,
                })
            })
            .collect();
        if !points.is_empty() {
            out.push(Value::from_safe_string(charts::scatter(
                "Utility under attack vs. injection success, per injected cell",
                "injection_success_rate",
                "utility_under_attack",
                &points,
            )));
        }
    }
    out
}

/// Recall and precision per detector family, and the coverage matrix as a heat map.
pub fn detect_charts(r: &DetectReportRead) -> Vec<String> {
    let Some(cov) = r.coverage() else {
        return Vec::new();
    };
    let g = |c: &CoverageRead, k: &str| c.count(k);
    let wilson = |k: u64, n: u64| gauntlet_core::stats::wilson(k, n, gauntlet_core::stats::Z95);
    let groups: Vec<charts::BarGroup> = cov
        .iter()
        .map(|c| {
            let (att, ben) = (g(c, "attack_labels"), g(c, "benign_labels"));
            let (hit, ok) = (
                att.saturating_sub(g(c, "missed")),
                ben.saturating_sub(g(c, "false_alarms")),
            );
            charts::BarGroup {
                label: c.family().to_owned(),
                bars: vec![
                    charts::Bar {
                        value: (att > 0).then(|| hit as f64 / att as f64),
                        ci: wilson(hit, att),
                        detail: if att > 0 {
                            format!("{hit}/{att} attack labels caught")
                        } else {
                            "no attack labels".into()
                        },
                    },
                    charts::Bar {
                        value: (ben > 0).then(|| ok as f64 / ben as f64),
                        ci: wilson(ok, ben),
                        detail: if ben > 0 {
                            format!("{ok}/{ben} benign labels quiet")
                        } else {
                            "no benign labels".into()
                        },
                    },
                ],
            }
        })
        .collect();
    let cols = [
        "attack labels",
        "benign labels",
        "fired",
        "missed",
        "false alarms",
        "reserved",
    ];
    let keys = [
        "attack_labels",
        "benign_labels",
        "fired",
        "missed",
        "false_alarms",
        "reserved",
    ];
    let max: Vec<u64> = keys
        .iter()
        .map(|k| cov.iter().map(|c| g(c, k)).max().unwrap_or(0))
        .collect();
    let rows: Vec<charts::HeatRow> = cov
        .iter()
        .map(|c| charts::HeatRow {
            label: c.family().to_owned(),
            cells: keys
                .iter()
                .enumerate()
                .map(|(i, k)| {
                    let v = g(c, k);
                    charts::HeatCell {
                        intensity: (max[i] > 0).then(|| v as f64 / max[i] as f64),
                        text: v.to_string(),
                        ramp: u8::from(matches!(*k, "missed" | "false_alarms")),
                    }
                })
                .collect(),
        })
        .collect();
    vec![
        charts::grouped_bars(
            "Recall (attack labels caught) and precision (benign labels quiet) per detector family",
            &["recall", "precision"],
            &groups,
        ),
        charts::heat_map("Coverage matrix per detector family", &cols, &rows),
    ]
}

fn run_check_label(run: &Run, states: &[RowCheck]) -> (&'static str, String) {
    if run.live {
        return ("pending", "pending: the run is in progress".into());
    }
    if verify::any_unverified(states) || !run.problems.is_empty() {
        return (
            "unverified",
            "unverified: see the rows and problems below".into(),
        );
    }
    if states.contains(&RowCheck::Pending) {
        return ("pending", "pending: the recount has not finished".into());
    }
    if states.iter().all(|s| *s == RowCheck::Verified) && !states.is_empty() {
        return (
            "verified",
            "verified: the recount from the run's own evidence agrees".into(),
        );
    }
    (
        "not_recounted",
        "not recounted in full: see the rows".into(),
    )
}

/// A run's page (`None`: no such run).
pub fn run_page(d: &Arc<Dashboard>, slug: &str, mode: Mode) -> Option<String> {
    let cat = d.catalog();
    let listed = cat.get(slug)?;
    // A live run is read again on every request, so its page shows its progress.
    let fresh;
    let run: &Run = if listed.live || scan::is_live(&listed.dir) {
        fresh = scan::read_run(&listed.dir).ok().flatten().map(|mut r| {
            r.slug = listed.slug.clone();
            r.problems = listed.problems.clone();
            r
        });
        fresh.as_ref().unwrap_or(listed)
    } else {
        listed
    };
    let links = Links(mode);
    let check = d.check_of(run);
    let states = verify::states(run, check.as_deref());
    let rows: Vec<RowView> = run
        .rows
        .iter()
        .zip(&states)
        .map(|(r, s)| row_view(run, r, s, &links))
        .collect();
    let (check_class, check_text) = run_check_label(run, &states);
    let mut partial = Vec::new();
    let (mut partial_lines, mut partial_cut) = (0, false);
    let mut progress = String::new();
    let mut progress_view = Value::from(());
    if run.live {
        // A session writes its transcripts under a staging name until it finishes; the
        // first session of a run has no transcripts.jsonl at all.
        let staged = "transcripts.jsonl.tmp";
        let file = if scan::regular_file(&run.dir, staged) {
            Some(staged)
        } else if run.has_transcripts {
            Some("transcripts.jsonl")
        } else {
            None
        };
        if let Some(file) = file
            && let Ok((cells, lines, cut)) =
                transcripts::partial_cells(&run.dir.join(file), Duration::from_millis(300))
        {
            partial_lines = lines;
            partial_cut = cut;
            partial = cells
                .into_iter()
                .map(|((attack, target, judge), c)| PartialCell {
                    attack,
                    target,
                    judge,
                    attempts: c[0],
                    success: c[1],
                    failure: c[2],
                    error: c[3],
                    share: if c[1] + c[2] > 0 {
                        format!("{:.4}", c[1] as f64 / (c[1] + c[2]) as f64)
                    } else {
                        "N/A".into()
                    },
                })
                .collect();
        }
        match gauntlet_job::progress_file::read(&run.dir) {
            Some(p) => progress_view = live_progress(&p),
            None => {
                progress = match (run.units, file) {
                    (Some((planned, _)), Some(_)) => format!(
                        "{partial_lines} attempt(s) written so far; {planned} unit(s) planned (behavior × attack × target × trial)"
                    ),
                    (None, Some(_)) => format!("{partial_lines} attempt(s) written so far"),
                    (_, None) => "no progress published and no transcripts written yet".into(),
                }
            }
        }
    }
    let surfaces_current = Some(run.surface);
    let mut base = base_ctx(d, mode, &format!("run {}", run.name), surfaces_current);
    if run.live && mode == Mode::Server {
        base = context! { refresh => LIVE_REFRESH, ..base };
    }
    let report_href = match run.kind {
        Kind::RedTeam if scan::regular_file(&run.dir, "results.json") => {
            Value::from(links.report(slug))
        }
        Kind::AgentExam => Value::from(links.report(slug)),
        _ => Value::from(()),
    };
    let run_errors = if run.kind == Kind::RedTeam {
        run_errors(&run.dir)
    } else {
        Value::from(())
    };
    let ctx = context! {
        run_errors => run_errors,
        run => context! {
            name => run.name.clone(),
            run_id => run.run_id.clone(),
            surface => run.surface.title(),
            status => run.status.clone(),
            mode => run.mode.clone(),
            date => run.date.map(fmt_date).unwrap_or_default(),
            dir => run.dir.file_name().map(|n| n.to_string_lossy().into_owned()).unwrap_or_default(),
            live => run.live,
            warnings => Serde(run.warnings.clone()),
            problems => Serde(run.problems.iter().cloned().chain(check.iter().flat_map(|c| c.problems.clone())).collect::<Vec<_>>()),
            check => check_text,
            check_class => check_class,
            marks => Serde(crate::marks::run_marks(run)),
        },
        progress => progress,
        live_progress => progress_view,
        refresh_secs => LIVE_REFRESH,
        recount_note => check.as_ref().and_then(|c| c.whole_run.clone()),
        rows => Serde(rows),
        charts => run_charts(run),
        partial => Serde(partial),
        partial_lines => partial_lines,
        partial_cut => partial_cut,
        report_href => report_href,
        transcripts_href => if run.has_transcripts { Value::from(links.transcripts(slug, &Filter::default(), 0)) } else { Value::from(()) },
        compare_href => if mode == Mode::Server && run.kind == Kind::RedTeam && run.has_transcripts { Value::from(format!("/compare?by=run&run={slug}")) } else { Value::from(()) },
        exam_href => if run.kind == Kind::AgentExam { Value::from(links.exam(slug)) } else { Value::from(()) },
        ..base
    };
    Some(render("run.html", ctx))
}

/// The errors a red-team run recorded in results.json (`errors`: attempts that ended in
/// an error, the share against the run's `max_error_share`, the distinct messages with
/// counts), for its page; nothing when it recorded none or results.json is unreadable
/// (the page says so elsewhere).
fn run_errors(dir: &std::path::Path) -> Value {
    let Ok(Some(b)) = scan::read_capped(dir, "results.json", scan::MAX_REPORT_FILE) else {
        return Value::from(());
    };
    #[derive(Deserialize)]
    struct Only {
        errors: Option<gauntlet_results::RunErrors>,
    }
    match serde_json::from_slice::<Only>(&b) {
        Ok(Only { errors: Some(e) }) => context! {
            line => format!(
                "{} of {} judged attempts ended in an error ({:.3}; the run's max_error_share is {})",
                crate::view::thousands(e.errors),
                crate::view::thousands(e.attempts),
                e.share,
                e.max_error_share
            ),
            over => e.share > e.max_error_share,
            distinct => e.distinct.iter().map(|d| context! {
                count => crate::view::thousands(d.count),
                message => d.message.clone(),
                first_cell => d.first_cell.clone(),
            }).collect::<Vec<_>>(),
        },
        _ => Value::from(()),
    }
}

/// A live run's published progress, as its page shows it: units done of the session's
/// units, calls in flight, the ETA, and how fresh the figures are.
fn live_progress(p: &gauntlet_job::progress_file::Snapshot) -> Value {
    let now = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| d.as_secs());
    let age = now.saturating_sub(p.updated_unix);
    let pct = if p.units > 0 {
        format!(
            "{:.0}%",
            100.0 * p.units_done.min(p.units) as f64 / p.units as f64
        )
    } else {
        "—".into()
    };
    context! {
        phase => p.phase.clone(),
        units_done => crate::view::thousands(p.units_done),
        units => crate::view::thousands(p.units),
        pct => pct,
        attempts => crate::view::thousands(p.attempts),
        in_flight => crate::view::thousands(p.calls_in_flight),
        calls_made => crate::view::thousands(p.calls_made),
        calls_cached => crate::view::thousands(p.calls_cached),
        calls_failed => crate::view::thousands(p.calls_failed),
        retries => crate::view::thousands(p.retries),
        eta => match p.eta_seconds {
            Some(s) if s.is_finite() && s >= 0.0 => gauntlet_job::meter::duration(s),
            _ => "unknown yet".to_owned(),
        },
        line => p.line.clone(),
        age => age,
        stale => age > 30,
    }
}

/// Why a run's report cannot be rendered again ([`report_page`]).
#[derive(Debug, thiserror::Error)]
pub enum ReportPageError {
    /// The results or report file is not one the dashboard reads.
    #[error(transparent)]
    Read(#[from] scan::ReadCappedError),
    #[error("results.json does not read as gauntlet results: {0}")]
    Results(#[source] serde_json::Error),
    #[error("report.json does not read as an exam report: {0}")]
    ExamReport(#[source] serde_json::Error),
}

/// The run's full report, rendered again by this build from results.json (red-team) or
/// report.json (agent exam) — never the run directory's own report.html, which is
/// untrusted markup. `None`: no such run or nothing to render.
pub fn report_page(d: &Dashboard, slug: &str) -> Option<Result<String, ReportPageError>> {
    let cat = d.catalog();
    let run = cat.get(slug)?;
    match run.kind {
        Kind::RedTeam => {
            let b = match scan::read_capped(&run.dir, "results.json", scan::MAX_REPORT_FILE) {
                Ok(Some(b)) => b,
                Ok(None) => return None,
                Err(e) => return Some(Err(e.into())),
            };
            // The report says what the dashboard knows beyond results.json: a run in
            // progress, rows its check found wrong.
            let check = d.check_of(run);
            let states = verify::states(run, check.as_deref());
            let mut notice = Vec::new();
            if run.live || scan::is_live(&run.dir) {
                notice.push(
                    "IN PROGRESS: a gauntlet session is writing this run; this report is an earlier session's"
                        .to_owned(),
                );
            }
            let problems: Vec<String> = states
                .iter()
                .filter_map(|s| match s {
                    RowCheck::Unverified(p) => Some(p.join("; ")),
                    _ => None,
                })
                .chain(run.problems.iter().cloned())
                .collect::<BTreeSet<_>>()
                .into_iter()
                .take(5)
                .collect();
            if !problems.is_empty() {
                notice.push(format!(
                    "UNVERIFIED: the dashboard's check of this run found what does not add up: {}",
                    problems.join("; ")
                ));
            }
            let opts = gauntlet_report::ReportOptions {
                notice: (!notice.is_empty()).then(|| notice.join(" — ")),
                ..Default::default()
            };
            Some(
                serde_json::from_slice::<gauntlet_results::RunSummary>(&b)
                    .map(|s| gauntlet_report::render_html_with(&s, &opts))
                    .map_err(ReportPageError::Results),
            )
        }
        Kind::AgentExam => {
            let b = match scan::read_capped(&run.dir, "report.json", scan::MAX_REPORT_FILE) {
                Ok(Some(b)) => b,
                Ok(None) => return None,
                Err(e) => return Some(Err(e.into())),
            };
            Some(
                serde_json::from_slice::<gauntlet_results::exam::HarnessReport>(&b)
                    .map(|r| gauntlet_report::exam::render_html(&r))
                    .map_err(ReportPageError::ExamReport),
            )
        }
        Kind::DetectExam => None,
    }
}

#[derive(Serialize)]
struct ItemView {
    line: u64,
    href: String,
    trial: String,
    behavior_id: String,
    attack: String,
    target: String,
    expected: String,
    attempt: String,
    verdicts: Vec<(String, String)>,
    disagree: bool,
    error: Option<String>,
    preview: String,
    prompt: String,
    goal: String,
}

/// A page of a run's transcript browser.
pub fn transcripts_page(
    d: &Arc<Dashboard>,
    slug: &str,
    filter: &Filter,
    from: u64,
    mode: Mode,
) -> Option<String> {
    let cat = d.catalog();
    let run = cat.get(slug)?;
    if !run.has_transcripts {
        return None;
    }
    let links = Links(mode);
    let path = run.dir.join("transcripts.jsonl");
    if !scan::regular_file(&run.dir, "transcripts.jsonl") {
        return Some(error_page(
            d,
            mode,
            "Transcripts unavailable",
            "transcripts.jsonl is not a regular file",
        ));
    }
    let index = if mode == Mode::Site {
        d.index_now(run)
    } else {
        d.index_of(run)
    };
    let budget = if mode == Mode::Site {
        Duration::from_secs(60)
    } else {
        SCAN_BUDGET
    };
    let page = match transcripts::page(&path, index.as_deref(), filter, from, budget) {
        Ok(p) => p,
        Err(e) => {
            return Some(error_page(
                d,
                mode,
                "Transcripts unavailable",
                &format!("cannot read transcripts.jsonl: {e}"),
            ));
        }
    };
    let items: Vec<ItemView> = page
        .items
        .iter()
        .map(|i| ItemView {
            line: i.line,
            href: links.transcript(slug, i.line),
            trial: i.trial.map(|t| t.to_string()).unwrap_or_default(),
            behavior_id: i.behavior_id.clone(),
            attack: i.attack.clone(),
            target: i.target.clone(),
            expected: i.expected.clone(),
            attempt: i.attempt.map(|t| t.to_string()).unwrap_or_default(),
            verdicts: i.verdicts.clone(),
            disagree: i.disagree(),
            error: i.error.clone(),
            preview: i.preview.clone(),
            prompt: i.prompt.clone(),
            goal: i.goal.clone(),
        })
        .collect();
    let filtered = !filter.is_empty();
    let mut summary = if filtered {
        format!(
            "Lines {}–{} searched: {} match(es) on this page.",
            page.from,
            page.from + page.scanned.saturating_sub(1),
            page.items.len()
        )
    } else {
        match page.total {
            Some(t) => format!(
                "Attempts {}–{} of {t} (page {} of {}).",
                page.from,
                page.from + (page.items.len() as u64).saturating_sub(1),
                page.from / PAGE + 1,
                t.div_ceil(PAGE).max(1)
            ),
            None => format!(
                "Attempts from line {} (the line index is being built; the total follows).",
                page.from
            ),
        }
    };
    if page.budget_hit {
        summary.push_str(" The search paused to keep this page fast: continue to search further.");
    }
    if page.skipped > 0 {
        summary.push_str(&format!(
            " ⚠ {} line(s) skipped: longer than {} MiB or not valid JSON.",
            page.skipped,
            transcripts::MAX_LINE >> 20
        ));
    }
    let next_href = match (page.next, mode) {
        (Some(n), Mode::Server) => Value::from(links.transcripts(slug, filter, n)),
        (Some(n), Mode::Site) if n / PAGE < TRANSCRIPT_PAGES => {
            Value::from(links.transcripts(slug, filter, n))
        }
        _ => Value::from(()),
    };
    let prev_href = if !filtered && from >= PAGE {
        Value::from(links.transcripts(slug, filter, from - PAGE))
    } else {
        Value::from(())
    };
    let ctx = context! {
        run_name => run.name.clone(),
        run_href => links.run(slug),
        action => format!("/run/{slug}/transcripts"),
        q => filter.q.clone(),
        outcome => filter.outcome.clone(),
        attack => filter.attack.clone(),
        target => filter.target.clone(),
        judge => filter.judge.clone(),
        disagree => filter.disagree,
        attacks => Serde(run.rows.iter().map(|r| r.attack.clone()).filter(|x| !x.is_empty()).collect::<BTreeSet<_>>()),
        targets => Serde(run.rows.iter().map(|r| r.target.clone()).filter(|x| !x.is_empty()).collect::<BTreeSet<_>>()),
        judges => Serde(run.rows.iter().map(|r| r.judge.clone()).filter(|x| !x.is_empty()).collect::<BTreeSet<_>>()),
        summary => summary,
        items => Serde(items),
        filtered => filtered,
        first_href => if from > 0 { Value::from(links.transcripts(slug, filter, 0)) } else { Value::from(()) },
        prev_href => prev_href,
        next_href => next_href,
        next_label => if page.budget_hit { "continue searching" } else { "next page" },
        ..base_ctx(d, mode, &format!("transcripts of {}", run.name), Some(run.surface))
    };
    Some(render("transcripts.html", ctx))
}

#[derive(Serialize)]
struct MsgView {
    role: String,
    role_class: &'static str,
    name: String,
    content: String,
    extra: String,
}

#[derive(Serialize)]
struct VerdictView {
    judge: String,
    outcome: String,
    score: String,
    reason: String,
}

/// An attempt's evidence as the page shows it: what its application was seen doing,
/// read from the transcript line's `evidence` record. Every string came from the
/// application (span attributes, sink requests): the template escapes it, and each is
/// cut to [`EVIDENCE_TEXT`] characters and the lists to [`EVIDENCE_ROWS`] rows, so a
/// hostile line cannot make the page unbounded.
#[derive(Serialize, Default)]
struct EvidenceView {
    trace_id: String,
    canary: String,
    spans: u64,
    dropped_spans: u64,
    sink_hits: u64,
    arrived: bool,
    tools: Vec<ToolRow>,
    http: Vec<HttpRow>,
    sink: Vec<SinkRow>,
    /// Paths of the pages the poisoned-content server served under the call's token.
    pages: Vec<String>,
    /// Rows left out past [`EVIDENCE_ROWS`].
    more: usize,
    /// Set when the record does not read as evidence: the reason, and the record as JSON.
    unreadable: String,
    raw: String,
}

#[derive(Serialize)]
struct ToolRow {
    name: String,
    convention: &'static str,
    arguments: String,
    result: String,
    has_result: bool,
}

#[derive(Serialize)]
struct HttpRow {
    method: String,
    url: String,
    host: String,
}

#[derive(Serialize)]
struct SinkRow {
    method: String,
    path: String,
    query: String,
    body: String,
}

const EVIDENCE_ROWS: usize = 500;
const EVIDENCE_TEXT: usize = 20_000;

fn clip(s: &str) -> String {
    match s.char_indices().nth(EVIDENCE_TEXT) {
        None => s.to_owned(),
        Some((cut, _)) => format!("{}… (cut at {EVIDENCE_TEXT} characters)", &s[..cut]),
    }
}

/// The view of a transcript line's `evidence` value; `None` when the line has none (a
/// target that gathers no evidence).
fn evidence_view(v: &Json) -> Option<EvidenceView> {
    use gauntlet_core::evidence::{Evidence, EvidenceEvent, SpanConvention};
    if v.is_null() {
        return None;
    }
    let e: Evidence = match serde_json::from_value(v.clone()) {
        Ok(e) => e,
        Err(why) => {
            return Some(EvidenceView {
                unreadable: why.to_string(),
                raw: json_text(v, 64_000),
                ..Default::default()
            });
        }
    };
    let mut view = EvidenceView {
        trace_id: clip(&e.trace_id),
        canary: e.canary.as_deref().map(clip).unwrap_or_default(),
        spans: e.spans,
        dropped_spans: e.dropped_spans,
        sink_hits: e.sink_hits,
        arrived: e.arrived(),
        more: e.events.len().saturating_sub(EVIDENCE_ROWS),
        ..Default::default()
    };
    let opt = |o: &Option<String>| o.as_deref().map(clip).unwrap_or_default();
    for ev in e.events.iter().take(EVIDENCE_ROWS) {
        match ev {
            EvidenceEvent::ToolCall {
                convention,
                name,
                arguments,
                result,
            } => view.tools.push(ToolRow {
                name: clip(name),
                convention: match convention {
                    SpanConvention::GenAi => "GenAI",
                    SpanConvention::OpenInference => "OpenInference",
                    SpanConvention::Mcp => "MCP endpoint",
                },
                arguments: clip(arguments),
                result: opt(result),
                has_result: result.is_some(),
            }),
            EvidenceEvent::HttpRequest { method, url, host } => view.http.push(HttpRow {
                method: clip(method),
                url: opt(url),
                host: opt(host),
            }),
            EvidenceEvent::SinkHit {
                method,
                path,
                query,
                body,
            } => view.sink.push(SinkRow {
                method: clip(method),
                path: clip(path),
                query: clip(query),
                body: clip(body),
            }),
            EvidenceEvent::PageServed { path } => view.pages.push(clip(path)),
        }
    }
    Some(view)
}

fn json_text(v: &Json, cap: usize) -> String {
    let s = serde_json::to_string_pretty(v).unwrap_or_default();
    match s.char_indices().nth(cap) {
        None => s,
        Some((cut, _)) => format!("{}… (cut at {cap} characters)", &s[..cut]),
    }
}

/// One attempt: its conversation, verdicts and metadata.
pub fn transcript_page(d: &Arc<Dashboard>, slug: &str, line: u64, mode: Mode) -> Option<String> {
    let cat = d.catalog();
    let run = cat.get(slug)?;
    if !run.has_transcripts || !scan::regular_file(&run.dir, "transcripts.jsonl") {
        return None;
    }
    let links = Links(mode);
    let index = if mode == Mode::Site {
        d.index_now(run)
    } else {
        d.index_of(run)
    };
    let parsed =
        transcripts::line::<Json>(&run.dir.join("transcripts.jsonl"), index.as_deref(), line)
            .ok()??;
    let s = |v: &Json, k: &str| match v.get(k) {
        Some(Json::String(s)) => s.clone(),
        Some(Json::Null) | None => String::new(),
        Some(o) => o.to_string(),
    };
    let (error, fields, messages, verdicts, metadata) = match &parsed {
        Err(e) => (
            Value::from(e.to_string()),
            vec![],
            vec![],
            vec![],
            String::new(),
        ),
        Ok(v) => {
            let fields: Vec<(String, String)> = [
                "behavior_id",
                "attack_name",
                "target_name",
                "dataset",
                "dataset_version",
                "expected",
                "trial",
                "attempt",
                "query_count",
                "stop_reason",
                "error",
            ]
            .iter()
            .filter(|k| v.get(**k).is_some_and(|x| !x.is_null()))
            .map(|k| ((*k).to_owned(), s(v, k)))
            .collect();
            let messages: Vec<MsgView> = v
                .get("transcript")
                .and_then(Json::as_array)
                .map(|a| {
                    a.iter()
                        .take(500)
                        .map(|m| {
                            let role = s(m, "role");
                            let mut extra = serde_json::Map::new();
                            for k in ["tool_calls", "tool_call_id"] {
                                if let Some(x) = m.get(k).filter(|x| !x.is_null()) {
                                    extra.insert(k.to_owned(), x.clone());
                                }
                            }
                            MsgView {
                                role_class: match role.as_str() {
                                    "user" => "user",
                                    "assistant" => "assistant",
                                    "system" => "system",
                                    "tool" => "tool",
                                    _ => "other",
                                },
                                role,
                                name: s(m, "name"),
                                content: s(m, "content"),
                                extra: if extra.is_empty() {
                                    String::new()
                                } else {
                                    json_text(&Json::Object(extra), 20_000)
                                },
                            }
                        })
                        .collect()
                })
                .unwrap_or_default();
            let verdicts: Vec<VerdictView> = v
                .get("verdicts")
                .and_then(Json::as_array)
                .map(|a| {
                    a.iter()
                        .map(|x| VerdictView {
                            judge: s(x, "judge"),
                            outcome: s(x, "outcome"),
                            score: s(x, "score"),
                            reason: s(x, "reason"),
                        })
                        .collect()
                })
                .unwrap_or_default();
            let metadata = v
                .get("metadata")
                .filter(|m| !m.is_null())
                .map(|m| json_text(m, 64_000))
                .unwrap_or_default();
            (Value::from(()), fields, messages, verdicts, metadata)
        }
    };
    let get = |k: &str| match &parsed {
        Ok(v) => v.get(k).cloned().unwrap_or(Json::Null),
        Err(_) => Json::Null,
    };
    let goal = get("goal").as_str().unwrap_or("").to_owned();
    let evidence = evidence_view(&get("evidence"));
    let meta = get("metadata");
    let tree = tree_view(&meta);
    let usage = get("usage");
    let tokens = match (
        usage.get("input_tokens").and_then(Json::as_u64),
        usage.get("output_tokens").and_then(Json::as_u64),
    ) {
        (Some(i), Some(o)) => format!(
            "{} in + {} out = {} tokens",
            crate::view::thousands(i),
            crate::view::thousands(o),
            crate::view::thousands(i + o)
        ),
        _ => String::new(),
    };
    let latency = get("latency_ms")
        .as_f64()
        .map(|ms| format!("{ms:.0} ms"))
        .unwrap_or_default();
    let search = if tree.is_empty() {
        Json::Null
    } else {
        serde_json::json!({
            "attack": meta.get("attack").and_then(Json::as_str).unwrap_or(""),
            "stopped": meta.get("stopped").and_then(Json::as_str).unwrap_or(""),
            "best": meta.get("best_node").and_then(Json::as_u64),
            "target_queries": meta.get("target_queries").and_then(Json::as_u64),
            "attacker_queries": meta.get("attacker_queries").and_then(Json::as_u64),
        })
    };
    let first_user = messages
        .iter()
        .find(|m| m.role == "user")
        .map(|m| m.content.clone())
        .unwrap_or_default();
    let ctx = context! {
        line => line,
        goal => goal,
        rewritten => first_user,
        tree => Serde(tree),
        search => Serde(search),
        tokens => tokens,
        latency => latency,
        run_name => run.name.clone(),
        run_href => links.run(slug),
        back_href => links.transcripts(slug, &Filter::default(), line / PAGE * PAGE),
        error => error,
        fields => Serde(fields),
        messages => Serde(messages),
        verdicts => Serde(verdicts),
        metadata => metadata,
        evidence => evidence.map(Serde),
        ..base_ctx(d, mode, &format!("attempt {line} of {}", run.name), Some(run.surface))
    };
    Some(render("transcript.html", ctx))
}

/// One node of an attacker-LLM search tree (PAIR, TAP, Crescendo) as the page draws it.
#[derive(Serialize, Default)]
struct NodeView {
    id: u64,
    depth: u64,
    branch: u64,
    score: String,
    success: bool,
    pruned: bool,
    best: bool,
    error: String,
    prompt: String,
    prompt_short: String,
    response: String,
    reason: String,
    children: Vec<NodeView>,
}

/// The first `n` characters of `s`, `…` when cut.
fn head(s: &str, n: usize) -> String {
    match s.char_indices().nth(n) {
        Some((i, _)) => format!("{}…", &s[..i]),
        None => s.to_owned(),
    }
}

/// Most nodes of a search tree drawn, and how deep.
const TREE_NODES: usize = 500;
const TREE_DEPTH: usize = 40;

/// The search tree in an attempt's metadata (`tree`: nodes with `id` and `parent`) as
/// nested nodes; empty when there is none. Nodes are untrusted: ids that repeat, point
/// at themselves or at a missing parent become roots, and drawing stops at
/// [`TREE_NODES`] nodes and [`TREE_DEPTH`] levels.
fn tree_view(meta: &Json) -> Vec<NodeView> {
    let Some(nodes) = meta.get("tree").and_then(Json::as_array) else {
        return Vec::new();
    };
    let best = meta.get("best_node").and_then(Json::as_u64);
    let cut = |v: Option<&Json>| {
        let s = v.and_then(Json::as_str).unwrap_or("");
        match s.char_indices().nth(600) {
            Some((i, _)) => format!("{}…", &s[..i]),
            None => s.to_owned(),
        }
    };
    let nodes: Vec<&Json> = nodes.iter().take(TREE_NODES).collect();
    let ids: Vec<Option<u64>> = nodes
        .iter()
        .map(|n| n.get("id").and_then(Json::as_u64))
        .collect();
    let parent_of = |i: usize| -> Option<usize> {
        let p = nodes[i].get("parent").and_then(Json::as_u64)?;
        let j = ids.iter().position(|x| *x == Some(p))?;
        (j < i).then_some(j)
    };
    fn build(
        i: usize,
        depth: usize,
        nodes: &[&Json],
        kids: &[Vec<usize>],
        best: Option<u64>,
        cut: &dyn Fn(Option<&Json>) -> String,
    ) -> NodeView {
        let n = nodes[i];
        let u = |k: &str| n.get(k).and_then(Json::as_u64).unwrap_or(0);
        let id = u("id");
        NodeView {
            id,
            depth: u("depth"),
            branch: u("branch"),
            score: n
                .get("score")
                .and_then(Json::as_f64)
                .map(|x| format!("{x:.2}"))
                .unwrap_or_default(),
            success: n.get("success").and_then(Json::as_bool).unwrap_or(false),
            pruned: n.get("pruned").and_then(Json::as_bool).unwrap_or(false),
            best: best == Some(id),
            error: cut(n.get("error")),
            prompt: cut(n.get("prompt")),
            prompt_short: head(n.get("prompt").and_then(Json::as_str).unwrap_or(""), 90),
            response: cut(n.get("response")),
            reason: cut(n.get("judge_reason")),
            children: if depth >= TREE_DEPTH {
                Vec::new()
            } else {
                kids[i]
                    .iter()
                    .map(|&c| build(c, depth + 1, nodes, kids, best, cut))
                    .collect()
            },
        }
    }
    let mut kids: Vec<Vec<usize>> = vec![Vec::new(); nodes.len()];
    let mut roots = Vec::new();
    for i in 0..nodes.len() {
        match parent_of(i) {
            Some(p) => kids[p].push(i),
            None => roots.push(i),
        }
    }
    roots
        .into_iter()
        .map(|r| build(r, 0, &nodes, &kids, best, &cut))
        .collect()
}

#[derive(Serialize)]
struct Choice {
    slug: String,
    label: String,
}

/// The overview (the dashboard's first page): one scorecard row per target.
pub fn overview_page(d: &Dashboard, run: &str, mode: Mode) -> String {
    let cat = d.catalog();
    let o = crate::overview::build(d, run, mode);
    let links = Links(mode);
    let live: Vec<Value> = cat
        .runs
        .iter()
        .filter(|r| r.live)
        .map(|r| context! { href => links.run(&r.slug), name => r.name.clone() })
        .collect();
    let ctx = context! {
        o => Serde(&o),
        live => live,
        pivot_href => Links(mode).pivot(),
        ..base_ctx(d, mode, "overview", None)
    };
    render("overview.html", ctx)
}

/// The pivot page: one metric × judge as a target × attack matrix.
pub fn pivot_page(d: &Arc<Dashboard>, q: &crate::pivot::PivotQuery, mode: Mode) -> String {
    let p = crate::pivot::build(d, q, mode);
    let baselines: Vec<(String, String)> = p
        .columns
        .iter()
        .map(|c| (c.clone(), crate::pivot::href(&p, c)))
        .collect();
    let ctx = context! {
        p => Serde(&p),
        baselines => Serde(baselines),
        compare_href => if mode == Mode::Server && !p.run.is_empty() {
            Value::from(format!("/compare?by={}&run={}", enc(&p.by), enc(&p.run)))
        } else {
            Value::from(())
        },
        by_attack_href => crate::pivot::href(&crate::pivot::Pivot { by: "attack".into(), ..p.clone() }, ""),
        by_target_href => crate::pivot::href(&crate::pivot::Pivot { by: "target".into(), split: false, ..p.clone() }, ""),
        ..base_ctx(d, mode, &format!("pivot: {} × {}", p.metric, p.judge), None)
    };
    render("pivot.html", ctx)
}

/// What the compare page was asked.
#[derive(Debug, Clone, Default)]
pub struct CompareQuery {
    /// `run`, `target`, `attack` or `judge`.
    pub by: String,
    /// The run (by target, attack or judge), or run A (by run).
    pub run: String,
    /// Run B (by run).
    pub run_b: String,
    /// The two compared values (by target, attack or judge).
    pub a: String,
    pub b: String,
    pub allow_mismatch: bool,
    pub metric: String,
}

/// The compare page: two runs, or two targets, attacks or judges of a run, paired
/// behavior by behavior from the stored transcripts.
pub fn compare_page(d: &Arc<Dashboard>, q: &CompareQuery) -> String {
    use crate::compare::By;
    let cat = d.catalog();
    let by = By::parse(&q.by);
    let choices: Vec<Choice> = cat
        .runs
        .iter()
        .filter(|r| r.kind == Kind::RedTeam && r.has_transcripts)
        .take(MAX_OPTIONS)
        .map(|r| Choice {
            slug: r.slug.clone(),
            label: format!("{} ({})", r.name, crate::view::short(&r.run_id)),
        })
        .collect();
    // The values of the compared factor in the chosen run (from its leaderboard).
    let mut values: BTreeSet<String> = BTreeSet::new();
    if let Some(r) = cat.get(&q.run) {
        for row in &r.rows {
            values.insert(match by {
                By::Target => row.target.clone(),
                By::Attack => row.attack.clone(),
                By::Judge => row.judge.clone(),
                By::Run => String::new(),
            });
        }
    }
    values.remove("");
    let mut metrics: BTreeSet<String> = BTreeSet::new();
    for slug in [&q.run, &q.run_b] {
        if let Some(r) = cat.get(slug) {
            for row in &r.rows {
                if crate::overview::USAGE.contains(&row.metric_name.as_str()) {
                    continue;
                }
                metrics.insert(row.metric.clone());
            }
        }
    }
    let mut error = Value::from(());
    let mut mismatches: Vec<String> = Vec::new();
    let mut result = Json::Null;
    let ready = match by {
        By::Run => !q.run.is_empty() && !q.run_b.is_empty(),
        _ => !q.run.is_empty() && !q.a.is_empty() && !q.b.is_empty(),
    };
    if ready {
        let rb_slug = if by == By::Run { &q.run_b } else { &q.run };
        match (cat.get(&q.run), cat.get(rb_slug)) {
            (Some(ra), Some(rb)) => {
                let sides = crate::compare::Sides {
                    by,
                    run_a: ra,
                    run_b: rb,
                    a: q.a.clone(),
                    b: q.b.clone(),
                    allow_mismatch: q.allow_mismatch,
                    flips_metric: q.metric.clone(),
                };
                let ia = d.index_now(ra);
                let ib = d.index_now(rb);
                match crate::compare::compare(&sides, ia.as_deref(), ib.as_deref()) {
                    Ok(c) => result = serde_json::to_value(&c).unwrap_or_default(),
                    Err(e) => {
                        error = Value::from(e.message);
                        mismatches = e.mismatches;
                    }
                }
            }
            _ => error = Value::from("no such run: choose runs from the lists"),
        }
    }
    let mut allow_href = format!(
        "/compare?by={}&run={}&run_b={}&a={}&b={}&metric={}&allow_mismatch=1",
        by.key(),
        enc(&q.run),
        enc(&q.run_b),
        enc(&q.a),
        enc(&q.b),
        enc(&q.metric)
    );
    if mismatches.is_empty() {
        allow_href.clear();
    }
    let links = Links(Mode::Server);
    let title = match (result.get("b_name"), result.get("a_name")) {
        (Some(Json::String(b)), Some(Json::String(a))) => format!("compare: {b} − {a}"),
        _ => "compare".to_owned(),
    };
    let ctx = context! {
        by => by.key(),
        bys => Serde(["run", "target", "attack", "judge"]),
        choices => Serde(choices),
        values => Serde(values),
        metrics => Serde(metrics),
        run => q.run.clone(),
        run_b => q.run_b.clone(),
        a => q.a.clone(),
        b => q.b.clone(),
        metric => q.metric.clone(),
        allow_mismatch => q.allow_mismatch,
        error => error,
        mismatches => Serde(mismatches),
        allow_href => allow_href,
        result => Serde(result),
        a_base => links.transcript(&q.run, 0).trim_end_matches('0').to_owned(),
        b_base => links.transcript(if by == By::Run { &q.run_b } else { &q.run }, 0).trim_end_matches('0').to_owned(),
        ..base_ctx(d, Mode::Server, &title, None)
    };
    render("compare.html", ctx)
}

#[derive(Serialize)]
struct StepView {
    seq: String,
    model: String,
    reply: String,
    err: String,
}

#[derive(Serialize)]
struct ScenarioView {
    pass_index: String,
    scenario_id: String,
    category: String,
    difficulty: String,
    expected: String,
    terminal: String,
    reason: String,
    reason_short: String,
    pass: bool,
    decided_by: String,
    model_calls: String,
    error: String,
    steps: Vec<StepView>,
}

/// Scenarios shown per exam page.
const EXAM_SCENARIOS: usize = 1000;

/// An agent exam's scenarios, pass by pass: expected and terminal action, pass, what
/// decided it (`model`, `floor` — a harness rule, zero model calls — or `fail_safe`), the
/// model calls and each step of the cascade (`full_chain`). Read leniently from
/// report.json; `None` for other runs.
pub fn exam_page(d: &Dashboard, slug: &str, mode: Mode) -> Option<String> {
    let cat = d.catalog();
    let run = cat.get(slug)?;
    if run.kind != Kind::AgentExam {
        return None;
    }
    let b = scan::read_capped(&run.dir, "report.json", scan::MAX_REPORT_FILE).ok()??;
    let r: ExamReportRead = serde_json::from_slice(&b).ok()?;
    let cut = |x: String| match x.char_indices().nth(4000) {
        Some((i, _)) => format!("{}…", &x[..i]),
        None => x,
    };
    let mut rows = Vec::new();
    let mut counts: std::collections::BTreeMap<String, usize> = Default::default();
    let empty = ScenarioRead::default();
    for pass in r.passes() {
        for x in pass.results() {
            let x = x.unwrap_or(&empty);
            let decided = x.decided_by.0.clone();
            *counts.entry(decided.clone()).or_default() += 1;
            if rows.len() >= EXAM_SCENARIOS {
                continue;
            }
            rows.push(ScenarioView {
                pass_index: pass.index.0.clone(),
                scenario_id: x.scenario_id.0.clone(),
                category: x.category.0.clone(),
                difficulty: x.difficulty.0.clone(),
                expected: x.expected_chain_action.0.clone(),
                terminal: x.terminal_action.0.clone(),
                reason: cut(x.terminal_reason.0.clone()),
                reason_short: head(&x.terminal_reason.0, 80),
                pass: x.passed(),
                decided_by: decided,
                model_calls: x.model_calls.0.clone(),
                error: cut(x.error.0.clone()),
                steps: x
                    .steps()
                    .take(50)
                    .map(|st| StepView {
                        seq: st.seq.0,
                        model: st.model.0,
                        reply: cut(st.reply.0),
                        err: cut(st.err.0),
                    })
                    .collect(),
            });
        }
    }
    let links = Links(mode);
    let ctx = context! {
        run_name => run.name.clone(),
        run_href => links.run(slug),
        rows => Serde(rows),
        counts => Serde(counts),
        shown => EXAM_SCENARIOS,
        ..base_ctx(d, mode, &format!("scenarios of {}", run.name), Some(run.surface))
    };
    Some(render("exam.html", ctx))
}

/// An error page.
pub fn error_page(d: &Dashboard, mode: Mode, title: &str, message: &str) -> String {
    let ctx = context! {
        message => message,
        ..base_ctx(d, mode, title, None)
    };
    render("error.html", ctx)
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    fn run(slug: &str, date: Option<u64>, rows: Vec<Row>) -> Arc<Run> {
        Arc::new(Run {
            slug: slug.to_owned(),
            dir: std::path::PathBuf::new(),
            kind: Kind::RedTeam,
            surface: Surface::Jailbreak,
            run_id: slug.to_owned(),
            name: format!("name-{slug}"),
            status: "complete".into(),
            mode: "jailbreak".into(),
            date,
            rows,
            warnings: Vec::new(),
            problems: Vec::new(),
            live: false,
            units: None,
            has_transcripts: false,
            pipeline_check: None,
        })
    }

    const METRICS: [&str; 4] = ["asr", "frr", "token_usage", "asr_at_k (k=1)"];
    const TARGETS: [&str; 3] = ["aligned", "permissive", "b"];

    /// The order the leaderboard had before its sort keys were precomputed: string
    /// comparisons, a stable sort, ties by slug.
    fn reference(items: &mut [Item], sort: &str, desc: bool) {
        use std::cmp::Ordering;
        let col = |it: &Item, name: &str| -> String { it.col(Col::of(name).unwrap()).to_owned() };
        items.sort_by(|a, b| {
            let o = match sort {
                "value" => usage_last(a.row)
                    .cmp(&usage_last(b.row))
                    .then_with(|| a.row.metric.cmp(&b.row.metric))
                    .then(match (a.row.value, b.row.value) {
                        (Some(x), Some(y)) => x.total_cmp(&y),
                        (Some(_), None) if desc => Ordering::Greater,
                        (Some(_), None) => Ordering::Less,
                        (None, Some(_)) if desc => Ordering::Less,
                        (None, Some(_)) => Ordering::Greater,
                        (None, None) => Ordering::Equal,
                    }),
                "date" => a.run.date.cmp(&b.run.date),
                "n" => a.row.n.cmp(&b.row.n),
                other => col(a, other).cmp(&col(b, other)),
            };
            let o = if desc && sort == "value" {
                usage_last(a.row)
                    .cmp(&usage_last(b.row))
                    .then_with(|| a.row.metric.cmp(&b.row.metric))
                    .then(o.reverse())
            } else if desc {
                o.reverse()
            } else {
                o
            };
            o.then_with(|| a.run.slug.cmp(&b.run.slug))
        });
    }

    proptest! {
        /// The precomputed keys give the order the string comparisons gave, and a page
        /// ranked on its own is the same slice of it.
        #[test]
        fn leaderboard_order_and_pages_match_a_full_string_sort(
            spec in proptest::collection::vec(
                (0usize..12, 0usize..4, 0usize..3, proptest::option::of(0u8..4), 0u64..3, 0u64..3),
                0..160,
            ),
            page_size in 1usize..40,
        ) {
            // Runs in an order that is not their slugs' order.
            let mut rows: Vec<Vec<Row>> = vec![Vec::new(); 12];
            for (r, m, t, v, n, _) in &spec {
                rows[*r].push(Row {
                    target: TARGETS[*t].into(),
                    metric: METRICS[*m].into(),
                    metric_name: METRICS[*m].split(' ').next().unwrap().into(),
                    value: v.map(|x| f64::from(x) / 4.0),
                    n: Some(*n),
                    ..Default::default()
                });
            }
            let runs: Vec<Arc<Run>> = rows
                .into_iter()
                .enumerate()
                .map(|(i, rs)| run(&format!("run-{}", (i * 7) % 12), Some(1_800_000_000 + (i as u64 % 3) * 86_400), rs))
                .collect();
            let dates: Vec<String> = runs.iter().map(|r| r.date.map(fmt_date).unwrap_or_default()).collect();
            let mut slugs: Vec<usize> = (0..runs.len()).collect();
            slugs.sort_by(|a, b| runs[*a].slug.cmp(&runs[*b].slug));
            let metrics: BTreeSet<&str> = METRICS.into_iter().collect();
            let items = || -> Vec<Item> {
                let mut v = Vec::new();
                for (ri, r) in runs.iter().enumerate() {
                    for (i, row) in r.rows.iter().enumerate() {
                        v.push(Item {
                            run: r,
                            row,
                            state: RowCheck::Pending,
                            date: &dates[ri],
                            usage: usage_last(row),
                            metric: metrics.iter().position(|m| *m == row.metric).unwrap() as u32,
                            slug: slugs.iter().position(|s| *s == ri).unwrap() as u32,
                            index: i as u32,
                        });
                    }
                }
                v
            };
            let id = |it: &Item| (it.run.slug.clone(), it.index);
            for sort in SORTS {
                for desc in [false, true] {
                    let mut want = items();
                    reference(&mut want, sort, desc);
                    let want: Vec<_> = want.iter().map(id).collect();
                    let by = SortBy::of(sort);
                    let mut all = items();
                    prop_assert_eq!(rank(&mut all, by, desc, None), all.len());
                    let got: Vec<_> = all.iter().map(id).collect();
                    prop_assert_eq!(&got, &want, "sort {} desc {}", sort, desc);
                    for page in 0..want.len().div_ceil(page_size).max(1) {
                        let mut all = items();
                        let upto = rank(&mut all, by, desc, Some((page + 1) * page_size));
                        let from = (page * page_size).min(upto);
                        let got: Vec<_> = all[from..upto].iter().map(id).collect();
                        prop_assert_eq!(&got[..], &want[from..upto], "sort {} desc {} page {}", sort, desc, page);
                    }
                }
            }
        }
    }
}
