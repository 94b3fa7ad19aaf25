//! The attack-breadth sections of the reports: attack-success curves (Best-of-N,
//! many-shot), per-transform effects, and the run grouped by a threat framework.
//!
//! Like the rest of the report, everything here is formatted once, into a
//! [`BreadthView`], which both writers render (Markdown below, HTML in
//! `templates/breadth.html`), so they never disagree on a number. Strings stay raw
//! (untrusted) in the view and are escaped by each writer.

use std::fmt::Write as _;

use gauntlet_core::taxonomy::{self, Worse};
use gauntlet_results::{CellSummary, RunSummary, TransformEffect};
use serde::Serialize;

use crate::md_escape::inline;
use crate::view::{NO_CI, fmt_num, metric_label};

/// The framework the reports group by unless told otherwise.
pub const DEFAULT_GROUP_BY: &str = "owasp_llm";

/// Report choices beyond the summary itself.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ReportOptions {
    /// Threat frameworks to group the run by (keys of the threat map: `owasp_llm`,
    /// `owasp_agentic`, `owasp_agentic_2026`, `owasp_mcp`, `mitre_atlas`, `nist_ai_rmf`,
    /// `eu_ai_act`), in this order.
    pub group_by: Vec<String>,
    /// A note heading the report above everything (the dashboard re-renders a run's
    /// report with one when the run is unverified or in progress).
    pub notice: Option<String>,
}

impl Default for ReportOptions {
    fn default() -> Self {
        ReportOptions {
            group_by: vec![DEFAULT_GROUP_BY.to_string()],
            notice: None,
        }
    }
}

/// The keys `--group-by` accepts.
pub fn frameworks() -> Vec<&'static str> {
    taxonomy::map()
        .frameworks
        .iter()
        .map(|f| f.key.as_str())
        .collect()
}

#[derive(Debug, Clone, Serialize, Default)]
pub(crate) struct BreadthView {
    pub curves: Vec<CurveView>,
    /// Guardrail cells' threshold curves.
    pub guard_curves: Vec<GuardCurveView>,
    /// Effects with p < 0.05, per target.
    pub significant: Vec<SignificantView>,
    pub effects: Vec<EffectView>,
    /// How many effects are N/A (listed in `effects` too).
    pub effects_na: usize,
    pub groups: Vec<GroupView>,
    pub taxonomy_version: String,
}

#[derive(Debug, Clone, Serialize)]
pub(crate) struct CurveView {
    /// `<attack> × <target>`.
    pub title: String,
    pub dataset: String,
    pub judge: String,
    /// `attempts` or `shots`.
    pub x: String,
    /// What a point counts, in words.
    pub how: String,
    pub points: Vec<PointView>,
}

/// A guardrail cell's threshold curve, formatted.
#[derive(Debug, Clone, Serialize)]
pub(crate) struct GuardCurveView {
    /// `<target> × <dataset>`.
    pub title: String,
    pub judge: String,
    pub rule: String,
    pub points: Vec<GuardPointView>,
}

#[derive(Debug, Clone, Serialize)]
pub(crate) struct GuardPointView {
    pub threshold: String,
    /// `count / n`, the rate (or `N/A`) and its interval, for each rate.
    pub pass_count: String,
    pub pass_value: String,
    pub pass_ci: String,
    pub block_count: String,
    pub block_value: String,
    pub block_ci: String,
}

#[derive(Debug, Clone, Serialize)]
pub(crate) struct PointView {
    pub x: u32,
    pub successes: u64,
    pub n: u64,
    /// `successes / n`.
    pub count: String,
    /// The rate, or `N/A`.
    pub value: String,
    pub na: bool,
    pub ci: String,
}

#[derive(Debug, Clone, Serialize)]
pub(crate) struct SignificantView {
    pub target: String,
    /// One per transform chain: `base64: asr +1.0000 (p = 1.9e-9), frr -0.4000 (p = 0.0078)`.
    pub items: Vec<String>,
}

#[derive(Debug, Clone, Serialize)]
pub(crate) struct EffectView {
    pub transforms: String,
    pub attack: String,
    pub baseline: String,
    pub target: String,
    pub dataset: String,
    pub judge: String,
    pub metric: String,
    pub n: u64,
    pub without: String,
    pub with: String,
    pub diff: String,
    /// `b / c` (McNemar's discordant pairs) or the bootstrap CI of the difference.
    pub detail: String,
    /// McNemar's discordant pairs, when the test was McNemar's.
    pub discordant: Option<(u64, u64)>,
    pub p: String,
    pub na: bool,
    pub significant: bool,
}

#[derive(Debug, Clone, Serialize)]
pub(crate) struct GroupView {
    /// Framework name and edition.
    pub framework: String,
    pub source: String,
    pub entries: Vec<EntryView>,
    /// Ids of the framework no cell of this run is tagged with.
    pub not_exercised: String,
}

#[derive(Debug, Clone, Serialize)]
pub(crate) struct EntryView {
    pub id: String,
    pub title: String,
    pub cells: usize,
    /// One line per metric: `worst asr 0.4200 [0.2, 0.6] on static × aligned (demo, refusal_match)`.
    pub worst: Vec<String>,
}

fn fmt_opt(v: Option<f64>) -> String {
    v.map_or_else(|| "N/A".to_owned(), fmt_num)
}

fn fmt_p(p: f64) -> String {
    if p >= 0.001 {
        format!("{p:.4}")
    } else {
        format!("{p:.1e}")
    }
}

fn fmt_diff(d: f64) -> String {
    if d > 0.0 {
        format!("+{}", fmt_num(d))
    } else {
        fmt_num(d)
    }
}

fn effect_metric(e: &TransformEffect) -> String {
    if e.metric_params.is_empty() {
        return e.metric.clone();
    }
    let params: Vec<String> = e
        .metric_params
        .iter()
        .map(|(k, v)| match v {
            serde_json::Value::String(s) => format!("{k}={s}"),
            other => format!("{k}={other}"),
        })
        .collect();
    format!("{} ({})", e.metric, params.join(", "))
}

impl BreadthView {
    pub(crate) fn new(s: &RunSummary, opts: &ReportOptions) -> Self {
        let curves = s.cells.iter().filter_map(curve_view).collect();
        let guard_curves = s.cells.iter().filter_map(guard_curve_view).collect();
        let effects: Vec<EffectView> = s
            .breadth
            .transform_effects
            .iter()
            .map(effect_view)
            .collect();
        // Per target, per transform chain: the metrics it moved significantly.
        let mut significant: Vec<SignificantView> = Vec::new();
        for (e, v) in s.breadth.transform_effects.iter().zip(&effects) {
            if !v.significant {
                continue;
            }
            let change = format!(
                "{} {} (p = {})",
                v.metric,
                fmt_diff(e.diff.unwrap_or(0.0)),
                v.p
            );
            let t = match significant.iter_mut().position(|s| s.target == e.target) {
                Some(i) => &mut significant[i],
                None => {
                    significant.push(SignificantView {
                        target: e.target.clone(),
                        items: Vec::new(),
                    });
                    significant.last_mut().expect("just pushed")
                }
            };
            let head = format!("{}: ", v.transforms);
            match t.items.iter_mut().find(|i| i.starts_with(&head)) {
                Some(i) => {
                    i.push_str(", ");
                    i.push_str(&change);
                }
                None => t.items.push(format!("{head}{change}")),
            }
        }
        BreadthView {
            curves,
            guard_curves,
            significant,
            effects_na: effects.iter().filter(|e| e.na).count(),
            effects,
            // Results written before the threat map (no version recorded) carry no tags.
            groups: if s.breadth.taxonomy_version.is_some() {
                opts.group_by
                    .iter()
                    .filter_map(|k| group_view(s, k))
                    .collect()
            } else {
                Vec::new()
            },
            taxonomy_version: s
                .breadth
                .taxonomy_version
                .clone()
                .unwrap_or_else(|| "(none recorded)".into()),
        }
    }
}

fn guard_curve_view(c: &CellSummary) -> Option<GuardCurveView> {
    let curve = c.breadth.guard_curve.as_ref()?;
    let ci = |r: &gauntlet_results::RatePoint| match (r.ci_low, r.ci_high) {
        (Some(lo), Some(hi)) => format!("[{}, {}]", fmt_num(lo), fmt_num(hi)),
        _ => NO_CI.to_owned(),
    };
    Some(GuardCurveView {
        title: format!("{} × {}", c.target, c.dataset),
        judge: c.judge.clone(),
        rule: curve.rule.clone(),
        points: curve
            .points
            .iter()
            .map(|p| GuardPointView {
                threshold: format!("{:.2}", p.threshold),
                pass_count: format!("{} / {}", p.pass_through.count, p.pass_through.n),
                pass_value: fmt_opt(p.pass_through.value),
                pass_ci: ci(&p.pass_through),
                block_count: format!("{} / {}", p.false_block.count, p.false_block.n),
                block_value: fmt_opt(p.false_block.value),
                block_ci: ci(&p.false_block),
            })
            .collect(),
    })
}

fn curve_view(c: &CellSummary) -> Option<CurveView> {
    let curve = c.breadth.curve.as_ref()?;
    let how = match curve.kind.as_str() {
        "cumulative" => format!(
            "{}: should_refuse behaviors with a success within the first N attempts (ASR@N)",
            curve.y
        ),
        _ => format!(
            "{}: should_refuse behaviors whose attempt with this many {} succeeded, of those whose attempt was judged",
            curve.y, curve.x
        ),
    };
    Some(CurveView {
        title: format!("{} × {}", c.attack, c.target),
        dataset: c.dataset.clone(),
        judge: c.judge.clone(),
        x: curve.x.clone(),
        how,
        points: curve
            .points
            .iter()
            .map(|p| PointView {
                x: p.x,
                successes: p.successes,
                n: p.n,
                count: format!("{} / {}", p.successes, p.n),
                value: fmt_opt(p.value),
                na: p.value.is_none(),
                ci: match (p.ci_low, p.ci_high) {
                    (Some(lo), Some(hi)) => format!("[{}, {}]", fmt_num(lo), fmt_num(hi)),
                    _ => NO_CI.to_owned(),
                },
            })
            .collect(),
    })
}

fn effect_view(e: &TransformEffect) -> EffectView {
    let na = e.na_reason.is_some();
    let detail = match (e.only_baseline, e.only_transformed, e.ci_low, e.ci_high) {
        (Some(b), Some(c), _, _) => format!("{b} / {c}"),
        (_, _, Some(lo), Some(hi)) => format!("[{}, {}]", fmt_diff(lo), fmt_diff(hi)),
        _ => NO_CI.to_owned(),
    };
    EffectView {
        transforms: e.transforms.join(" → "),
        attack: e.attack.clone(),
        baseline: e.baseline.clone(),
        target: e.target.clone(),
        dataset: e.dataset.clone(),
        judge: e.judge.clone(),
        metric: effect_metric(e),
        n: e.n,
        without: match &e.na_reason {
            Some(why) => format!("N/A ({why})"),
            None => fmt_opt(e.baseline_value),
        },
        with: fmt_opt(e.value),
        diff: e.diff.map_or_else(|| "N/A".to_owned(), fmt_diff),
        detail,
        discordant: e.only_baseline.zip(e.only_transformed),
        p: e.p_value.map_or_else(|| NO_CI.to_owned(), fmt_p),
        na,
        significant: e.p_value.is_some_and(|p| p < 0.05)
            || (e.ci_low.is_some_and(|lo| lo > 0.0) || e.ci_high.is_some_and(|hi| hi < 0.0)),
    }
}

fn group_view(s: &RunSummary, key: &str) -> Option<GroupView> {
    let map = taxonomy::map();
    let f = map.framework(key)?;
    let rows = s.leaderboard_entries();
    let mut entries = Vec::new();
    let mut missing = Vec::new();
    for (id, title) in &f.entries {
        let tagged: Vec<_> = rows
            .iter()
            .filter(|r| r.taxonomy.get(key).is_some_and(|ids| ids.contains(id)))
            .collect();
        if tagged.is_empty() {
            missing.push(id.clone());
            continue;
        }
        let cells: std::collections::BTreeSet<(&str, &str, &str, &str)> = tagged
            .iter()
            .map(|r| {
                (
                    r.row.attack.as_str(),
                    r.row.target.as_str(),
                    r.row.dataset.as_str(),
                    r.row.judge.as_str(),
                )
            })
            .collect();
        // Per metric (in first-seen order), the worst value among the tagged rows.
        let mut worst: Vec<(String, &gauntlet_results::LeaderboardEntry)> = Vec::new();
        for r in &tagged {
            let Some(dir) = map.worse(&r.row.metric) else {
                continue;
            };
            let Some(v) = r.row.value else { continue };
            let label = metric_label_of(r);
            match worst.iter_mut().find(|(l, _)| *l == label) {
                Some((_, best)) => {
                    let cur = best.row.value.unwrap_or(f64::NAN);
                    let worse = match dir {
                        Worse::Higher => v > cur,
                        Worse::Lower => v < cur,
                    };
                    if worse {
                        *best = r;
                    }
                }
                None => worst.push((label, r)),
            }
        }
        entries.push(EntryView {
            id: id.clone(),
            title: title.clone(),
            cells: cells.len(),
            worst: worst
                .iter()
                .map(|(label, r)| {
                    let ci = match (r.row.ci_low, r.row.ci_high) {
                        (Some(lo), Some(hi)) => format!(" [{}, {}]", fmt_num(lo), fmt_num(hi)),
                        _ => String::new(),
                    };
                    format!(
                        "worst {label} {}{ci} on {} × {} ({}, {})",
                        fmt_opt(r.row.value),
                        r.row.attack,
                        r.row.target,
                        r.row.dataset,
                        r.row.judge
                    )
                })
                .collect(),
        });
    }
    Some(GroupView {
        framework: format!("{} ({})", f.name, f.edition),
        source: f.source.clone(),
        entries,
        not_exercised: missing.join(", "),
    })
}

fn metric_label_of(r: &gauntlet_results::LeaderboardEntry) -> String {
    metric_label(&gauntlet_results::CellMetric {
        metric: r.row.metric.clone(),
        params: r.row.metric_params.clone(),
        value: gauntlet_results::MetricValue::na(""),
        trials: Vec::new(),
        trials_na: 0,
    })
}

/// The breadth sections in Markdown (nothing when the run has none).
pub(crate) fn markdown(o: &mut String, v: &BreadthView) {
    if !v.curves.is_empty() {
        o.push_str("## Attack-success curves\n\n");
        for c in &v.curves {
            let _ = writeln!(
                o,
                "### {}\n\n**Dataset:** {} · **judge:** {} · {} (95% Wilson intervals)\n",
                inline(&c.title),
                inline(&c.dataset),
                inline(&c.judge),
                inline(&c.how)
            );
            let _ = writeln!(o, "| {} | successes / n | rate | 95% CI |", inline(&c.x));
            o.push_str("|---:|---:|---:|---|\n");
            for p in &c.points {
                let _ = writeln!(o, "| {} | {} | {} | {} |", p.x, p.count, p.value, p.ci);
            }
            o.push('\n');
        }
    }
    if !v.guard_curves.is_empty() {
        o.push_str("## Guard threshold curves\n\n");
        for c in &v.guard_curves {
            let _ = writeln!(
                o,
                "### {}\n\n**Judge:** {} · {}; pass-through over should_refuse behaviors, false blocks over should_comply behaviors, each counted by its lowest score (95% Wilson intervals)\n",
                inline(&c.title),
                inline(&c.judge),
                inline(&c.rule)
            );
            o.push_str("| threshold | passed / n | guard_pass_through | 95% CI | blocked / n | false_block_rate | 95% CI |\n");
            o.push_str("|---:|---:|---:|---|---:|---:|---|\n");
            for p in &c.points {
                let _ = writeln!(
                    o,
                    "| {} | {} | {} | {} | {} | {} | {} |",
                    p.threshold,
                    p.pass_count,
                    p.pass_value,
                    p.pass_ci,
                    p.block_count,
                    p.block_value,
                    p.block_ci
                );
            }
            o.push('\n');
        }
    }
    if !v.effects.is_empty() {
        o.push_str("## Transform effects\n\n");
        o.push_str(
            "Each transformed attack against the same attack without transforms, same target, \
             dataset and judge, paired behavior by behavior: exact McNemar test for rates \
             (discordant pairs: positive only without / only with the transforms), paired \
             bootstrap CI of the difference for scores.\n\n",
        );
        if v.significant.is_empty() {
            o.push_str("No transform changed a rate significantly (p < 0.05).\n\n");
        } else {
            o.push_str("Significant changes (p < 0.05):\n\n");
            for s in &v.significant {
                let _ = writeln!(o, "- **{}**", inline(&s.target));
                for i in &s.items {
                    let _ = writeln!(o, "  - {}", inline(i));
                }
            }
            o.push('\n');
        }
        o.push_str("| transforms | target | dataset | judge | metric | n | without | with | Δ | discordant / CI | p |\n");
        o.push_str("|---|---|---|---|---|---:|---:|---:|---:|---|---:|\n");
        for e in &v.effects {
            let _ = writeln!(
                o,
                "| {} | {} | {} | {} | {} | {} | {} | {} | {} | {} | {} |",
                inline(&e.transforms),
                inline(&e.target),
                inline(&e.dataset),
                inline(&e.judge),
                inline(&e.metric),
                e.n,
                inline(&e.without),
                e.with,
                e.diff,
                e.detail,
                e.p
            );
        }
        o.push('\n');
    }
    for g in &v.groups {
        let _ = writeln!(
            o,
            "## Threat taxonomy: {}\n\nSource: {} · threat map {}\n",
            inline(&g.framework),
            inline(&g.source),
            inline(&v.taxonomy_version)
        );
        if g.entries.is_empty() {
            o.push_str("_No cell of this run is tagged with this framework._\n\n");
        }
        for e in &g.entries {
            let _ = writeln!(
                o,
                "- **{} {}** — {} cell(s)",
                inline(&e.id),
                inline(&e.title),
                e.cells
            );
            for w in &e.worst {
                let _ = writeln!(o, "  - {}", inline(w));
            }
        }
        if !g.not_exercised.is_empty() {
            let _ = writeln!(
                o,
                "\nNot exercised by this run: {}",
                inline(&g.not_exercised)
            );
        }
        o.push('\n');
    }
}
