//! Charts as inline SVG: forest plots (a dot and its interval per cell), a scatter of
//! utility against injection success, grouped bars (recall / precision per detector
//! family), a heat map (the detect exam's coverage matrix) and pass rate per pass with
//! the noise band (the agent exam). Every renderer — report.html, the exam report, the
//! dashboard and the static site — draws its charts with these functions, so a chart
//! looks and escapes the same everywhere.
//!
//! Why SVG written here rather than plotters' SVG backend: both were tried (plotters
//! 0.3.7, `default-features = false, features = ["svg_backend"]`: 5 s dev / 6 s release
//! build on 2 cores, so build cost did not decide it). These charts need a `<title>`
//! on every mark (the value, its CI, n and the full untrusted label as a hover tooltip:
//! the only interaction a page without script can have), labels truncated by
//! characters with the full text kept in the tooltip, N/A drawn as the text "N/A" in
//! the mark's place, and one escaping rule we test ourselves; plotters' element API has
//! no per-mark title and estimates text widths without a font, and what it would draw for
//! us (a circle, a line, a rect) is one element each. Everything here is a pure function
//! of its input: no clock, no randomness, fixed decimals, so output is byte-identical.
//!
//! # Safety
//! The SVG is inserted into HTML as markup, so every string that reaches it goes
//! through [`esc`] (`& < > " '`), attribute or text alike; numbers are formatted from
//! `f64` and non-finite values are never drawn. Styling is presentation attributes only
//! (`fill=`, `stroke=`), never `style=`, so the charts render under a CSP without
//! `'unsafe-inline'` styles. Nothing here links to or loads anything.

use std::fmt::Write as _;

/// Longest label drawn, in characters; the full label is in the mark's tooltip.
pub const LABEL_MAX_CHARS: usize = 40;
/// Most rows a forest plot or heat map draws; the rest are counted in a note.
pub const MAX_ROWS: usize = 120;

const FONT: &str = "font-family=\"system-ui, sans-serif\" font-size=\"12\"";
const INK: &str = "#1b1b1b";
const GRID: &str = "#dddddd";
const NA_INK: &str = "#7a5a00";
/// Series colours (colour-blind-safe Okabe–Ito blue, vermillion, green, purple).
const SERIES: [&str; 4] = ["#0072b2", "#d55e00", "#009e73", "#cc79a7"];

/// Escapes text for SVG/HTML element content and attribute values.
pub fn esc(s: &str) -> String {
    let mut o = String::with_capacity(s.len() + 8);
    for c in s.chars() {
        match c {
            '&' => o.push_str("&amp;"),
            '<' => o.push_str("&lt;"),
            '>' => o.push_str("&gt;"),
            '"' => o.push_str("&quot;"),
            '\'' => o.push_str("&#39;"),
            // Control characters are not allowed in XML 1.0 text.
            c if c.is_control() && c != '\n' && c != '\t' => o.push('\u{fffd}'),
            c => o.push(c),
        }
    }
    o
}

/// The first [`LABEL_MAX_CHARS`] characters of `s`, with `…` when cut, escaped.
fn short(s: &str) -> String {
    match s.char_indices().nth(LABEL_MAX_CHARS) {
        None => esc(s),
        Some((cut, _)) => format!("{}…", esc(&s[..cut])),
    }
}

fn num(x: f64) -> String {
    format!("{x:.4}")
}

fn ci_text(ci: Option<(f64, f64)>) -> String {
    match ci {
        Some((lo, hi)) if lo.is_finite() && hi.is_finite() => {
            format!("95% CI [{}, {}]", num(lo), num(hi))
        }
        _ => "no CI".into(),
    }
}

/// A linear scale from `domain` to pixel range `range`, clamped to the range.
#[derive(Clone, Copy)]
struct Scale {
    d0: f64,
    d1: f64,
    r0: f64,
    r1: f64,
}

impl Scale {
    fn at(&self, v: f64) -> f64 {
        let span = self.d1 - self.d0;
        let t = if span > 0.0 {
            (v - self.d0) / span
        } else {
            0.0
        };
        self.r0 + t.clamp(0.0, 1.0) * (self.r1 - self.r0)
    }
}

/// Upper end of an axis that starts at 0: 1 for rates, else the largest finite value
/// rounded up to a "nice" number.
fn axis_max(values: impl Iterator<Item = f64>) -> f64 {
    let max = values.filter(|v| v.is_finite()).fold(0.0f64, f64::max);
    if max <= 1.0 {
        return 1.0;
    }
    let mag = 10f64.powf(max.log10().floor());
    for m in [1.0, 2.0, 2.5, 5.0, 10.0] {
        if m * mag >= max {
            return m * mag;
        }
    }
    10.0 * mag
}

fn open_svg(o: &mut String, w: f64, h: f64, title: &str) {
    let _ = write!(
        o,
        "<svg xmlns=\"http://www.w3.org/2000/svg\" class=\"chart\" role=\"img\" \
         width=\"{w:.0}\" height=\"{h:.0}\" viewBox=\"0 0 {w:.0} {h:.0}\" aria-label=\"{t}\">\
         <title>{t}</title>\
         <rect x=\"0\" y=\"0\" width=\"{w:.0}\" height=\"{h:.0}\" fill=\"#ffffff\"/>\
         <text x=\"8\" y=\"18\" {FONT} font-weight=\"600\" fill=\"{INK}\">{s}</text>",
        t = esc(title),
        s = short_n(title, 90),
    );
}

fn short_n(s: &str, n: usize) -> String {
    match s.char_indices().nth(n) {
        None => esc(s),
        Some((cut, _)) => format!("{}…", esc(&s[..cut])),
    }
}

/// Vertical grid lines and tick labels of a horizontal value axis at `y_top..y_bottom`.
fn x_axis(o: &mut String, sc: Scale, y_top: f64, y_bottom: f64, label: &str) {
    for i in 0..=4 {
        let v = sc.d0 + (sc.d1 - sc.d0) * f64::from(i) / 4.0;
        let x = sc.at(v);
        let _ = write!(
            o,
            "<line x1=\"{x:.1}\" y1=\"{y_top:.1}\" x2=\"{x:.1}\" y2=\"{y_bottom:.1}\" stroke=\"{GRID}\"/>\
             <text x=\"{x:.1}\" y=\"{:.1}\" {FONT} text-anchor=\"middle\" fill=\"{INK}\">{}</text>",
            y_bottom + 14.0,
            tick(v)
        );
    }
    let _ = write!(
        o,
        "<text x=\"{:.1}\" y=\"{:.1}\" {FONT} text-anchor=\"middle\" fill=\"{INK}\">{}</text>",
        (sc.r0 + sc.r1) / 2.0,
        y_bottom + 30.0,
        esc(label)
    );
}

fn tick(v: f64) -> String {
    if v.fract() == 0.0 {
        format!("{v:.0}")
    } else if (v * 100.0).fract().abs() < 1e-9 {
        format!("{v:.2}")
    } else {
        format!("{v:.3}")
    }
}

/// A value with an optional interval, drawn at `y` (a whisker and a dot), with a
/// tooltip; a missing value is the text `N/A` (with its reason in the tooltip).
fn dot_with_interval(
    o: &mut String,
    sc: Scale,
    y: f64,
    value: Option<f64>,
    ci: Option<(f64, f64)>,
    tooltip: &str,
    colour: &str,
) {
    match value.filter(|v| v.is_finite()) {
        Some(v) => {
            let _ = write!(o, "<g><title>{}</title>", esc(tooltip));
            if let Some((lo, hi)) = ci.filter(|(a, b)| a.is_finite() && b.is_finite()) {
                let (x0, x1) = (sc.at(lo.min(hi)), sc.at(hi.max(lo)));
                let _ = write!(
                    o,
                    "<line x1=\"{x0:.1}\" y1=\"{y:.1}\" x2=\"{x1:.1}\" y2=\"{y:.1}\" stroke=\"{colour}\" stroke-width=\"2\"/>\
                     <line x1=\"{x0:.1}\" y1=\"{:.1}\" x2=\"{x0:.1}\" y2=\"{:.1}\" stroke=\"{colour}\"/>\
                     <line x1=\"{x1:.1}\" y1=\"{:.1}\" x2=\"{x1:.1}\" y2=\"{:.1}\" stroke=\"{colour}\"/>",
                    y - 4.0,
                    y + 4.0,
                    y - 4.0,
                    y + 4.0
                );
            }
            let _ = write!(
                o,
                "<circle cx=\"{:.1}\" cy=\"{y:.1}\" r=\"4\" fill=\"{colour}\"/></g>",
                sc.at(v)
            );
        }
        None => {
            let _ = write!(
                o,
                "<text x=\"{:.1}\" y=\"{:.1}\" {FONT} font-style=\"italic\" fill=\"{NA_INK}\"><title>{}</title>N/A</text>",
                sc.r0 + 4.0,
                y + 4.0,
                esc(tooltip)
            );
        }
    }
}

/// One row of a forest plot: a cell's value of one metric.
#[derive(Debug, Clone, PartialEq)]
pub struct ForestRow {
    /// Rows with the same group are drawn together under the group's heading (the
    /// target); rows are drawn in the order given.
    pub group: String,
    /// The row's label (the attack, with judge/dataset when they vary).
    pub label: String,
    /// `None` is N/A.
    pub value: Option<f64>,
    pub ci: Option<(f64, f64)>,
    pub n: u64,
    pub na_reason: Option<String>,
}

/// A forest plot: per row a dot at the value with its interval as a whisker, grouped
/// under group headings; N/A rows say `N/A`. The axis runs from 0 to 1, or to the
/// largest value or bound when one is above 1 (token counts, cost).
pub fn forest(title: &str, axis_label: &str, rows: &[ForestRow]) -> String {
    let drawn = &rows[..rows.len().min(MAX_ROWS)];
    let d1 = axis_max(drawn.iter().flat_map(|r| {
        [r.value, r.ci.map(|c| c.0), r.ci.map(|c| c.1)]
            .into_iter()
            .flatten()
    }));
    let mut groups = 0usize;
    let mut prev: Option<&str> = None;
    for r in drawn {
        if prev != Some(r.group.as_str()) {
            groups += 1;
            prev = Some(&r.group);
        }
    }
    let (label_w, plot_w, row_h) = (300.0, 380.0, 20.0);
    let top = 32.0;
    let omitted = rows.len() - drawn.len();
    let body_h = (drawn.len() + groups) as f64 * row_h;
    let h = top + body_h + 44.0 + if omitted > 0 { 18.0 } else { 0.0 };
    let w = label_w + plot_w + 24.0;
    let sc = Scale {
        d0: 0.0,
        d1,
        r0: label_w,
        r1: label_w + plot_w,
    };
    let mut o = String::new();
    open_svg(&mut o, w, h, title);
    x_axis(&mut o, sc, top, top + body_h, axis_label);
    let mut y = top;
    let mut prev: Option<&str> = None;
    for r in drawn {
        if prev != Some(r.group.as_str()) {
            let _ = write!(
                o,
                "<text x=\"8\" y=\"{:.1}\" {FONT} font-weight=\"600\" fill=\"{INK}\"><title>{}</title>{}</text>",
                y + 14.0,
                esc(&r.group),
                short(&r.group)
            );
            y += row_h;
            prev = Some(&r.group);
        }
        let cy = y + row_h / 2.0;
        let _ = write!(
            o,
            "<text x=\"20\" y=\"{:.1}\" {FONT} fill=\"{INK}\"><title>{}</title>{}</text>",
            cy + 4.0,
            esc(&r.label),
            short(&r.label)
        );
        let tip = match r.value {
            Some(v) => format!(
                "{} · {}: {} {} n={}",
                r.group,
                r.label,
                num(v),
                ci_text(r.ci),
                r.n
            ),
            None => format!(
                "{} · {}: N/A ({})",
                r.group,
                r.label,
                r.na_reason.as_deref().unwrap_or("no value")
            ),
        };
        dot_with_interval(&mut o, sc, cy, r.value, r.ci, &tip, SERIES[0]);
        y += row_h;
    }
    if omitted > 0 {
        let _ = write!(
            o,
            "<text x=\"8\" y=\"{:.1}\" {FONT} fill=\"{NA_INK}\">{omitted} more rows not drawn</text>",
            h - 6.0
        );
    }
    o.push_str("</svg>");
    o
}

/// A point of a [`scatter`].
#[derive(Debug, Clone, PartialEq)]
pub struct ScatterPoint {
    pub label: String,
    pub x: f64,
    pub y: f64,
    pub x_ci: Option<(f64, f64)>,
    pub y_ci: Option<(f64, f64)>,
}

/// A scatter on the unit square (both axes are rates), each point with its two
/// intervals as a cross of whiskers and its label beside it.
pub fn scatter(title: &str, x_label: &str, y_label: &str, points: &[ScatterPoint]) -> String {
    let (left, top, side) = (60.0, 36.0, 320.0);
    let (w, h) = (left + side + 260.0, top + side + 48.0);
    let sx = Scale {
        d0: 0.0,
        d1: 1.0,
        r0: left,
        r1: left + side,
    };
    let sy = Scale {
        d0: 0.0,
        d1: 1.0,
        r0: top + side,
        r1: top,
    };
    let mut o = String::new();
    open_svg(&mut o, w, h, title);
    x_axis(&mut o, sx, top, top + side, x_label);
    for i in 0..=4 {
        let v = f64::from(i) / 4.0;
        let y = sy.at(v);
        let _ = write!(
            o,
            "<line x1=\"{left:.1}\" y1=\"{y:.1}\" x2=\"{:.1}\" y2=\"{y:.1}\" stroke=\"{GRID}\"/>\
             <text x=\"{:.1}\" y=\"{:.1}\" {FONT} text-anchor=\"end\" fill=\"{INK}\">{}</text>",
            left + side,
            left - 6.0,
            y + 4.0,
            tick(v)
        );
    }
    let _ = write!(
        o,
        "<text x=\"14\" y=\"{:.1}\" {FONT} text-anchor=\"middle\" fill=\"{INK}\" transform=\"rotate(-90 14 {:.1})\">{}</text>",
        top + side / 2.0,
        top + side / 2.0,
        esc(y_label)
    );
    for (i, p) in points
        .iter()
        .filter(|p| p.x.is_finite() && p.y.is_finite())
        .take(MAX_ROWS)
        .enumerate()
    {
        let colour = SERIES[i % SERIES.len()];
        let (cx, cy) = (sx.at(p.x), sy.at(p.y));
        let _ = write!(
            o,
            "<g><title>{}</title>",
            esc(&format!(
                "{}: {} {} {}; {} {} {}",
                p.label,
                x_label,
                num(p.x),
                ci_text(p.x_ci),
                y_label,
                num(p.y),
                ci_text(p.y_ci)
            ))
        );
        if let Some((lo, hi)) = p.x_ci.filter(|(a, b)| a.is_finite() && b.is_finite()) {
            let _ = write!(
                o,
                "<line x1=\"{:.1}\" y1=\"{cy:.1}\" x2=\"{:.1}\" y2=\"{cy:.1}\" stroke=\"{colour}\"/>",
                sx.at(lo),
                sx.at(hi)
            );
        }
        if let Some((lo, hi)) = p.y_ci.filter(|(a, b)| a.is_finite() && b.is_finite()) {
            let _ = write!(
                o,
                "<line x1=\"{cx:.1}\" y1=\"{:.1}\" x2=\"{cx:.1}\" y2=\"{:.1}\" stroke=\"{colour}\"/>",
                sy.at(lo),
                sy.at(hi)
            );
        }
        let _ = write!(
            o,
            "<circle cx=\"{cx:.1}\" cy=\"{cy:.1}\" r=\"5\" fill=\"{colour}\"/></g>"
        );
        // The legend: one line per point, right of the plot.
        let ly = top + 8.0 + i as f64 * 18.0;
        let _ = write!(
            o,
            "<circle cx=\"{:.1}\" cy=\"{ly:.1}\" r=\"5\" fill=\"{colour}\"/>\
             <text x=\"{:.1}\" y=\"{:.1}\" {FONT} fill=\"{INK}\"><title>{}</title>{}</text>",
            left + side + 20.0,
            left + side + 30.0,
            ly + 4.0,
            esc(&p.label),
            short(&p.label)
        );
    }
    o.push_str("</svg>");
    o
}

/// One bar of a [`grouped_bars`] group.
#[derive(Debug, Clone, PartialEq)]
pub struct Bar {
    /// `None` is N/A (drawn as the text `N/A`).
    pub value: Option<f64>,
    pub ci: Option<(f64, f64)>,
    /// Tooltip detail, e.g. `12/14`.
    pub detail: String,
}

/// A group of bars: one bar per series.
#[derive(Debug, Clone, PartialEq)]
pub struct BarGroup {
    pub label: String,
    pub bars: Vec<Bar>,
}

/// Horizontal bars on a 0–1 axis, one group per row label, one bar per series (with
/// its interval as a whisker), and a legend.
pub fn grouped_bars(title: &str, series: &[&str], groups: &[BarGroup]) -> String {
    let drawn = &groups[..groups.len().min(MAX_ROWS)];
    let (label_w, plot_w) = (240.0, 380.0);
    let bar_h = 10.0;
    let group_h = bar_h * series.len().max(1) as f64 + 8.0;
    let top = 52.0;
    let body_h = drawn.len() as f64 * group_h;
    let (w, h) = (label_w + plot_w + 24.0, top + body_h + 44.0);
    let sc = Scale {
        d0: 0.0,
        d1: 1.0,
        r0: label_w,
        r1: label_w + plot_w,
    };
    let mut o = String::new();
    open_svg(&mut o, w, h, title);
    for (i, s) in series.iter().enumerate() {
        let x = label_w + i as f64 * 150.0;
        let _ = write!(
            o,
            "<rect x=\"{x:.1}\" y=\"28\" width=\"10\" height=\"10\" fill=\"{}\"/>\
             <text x=\"{:.1}\" y=\"37\" {FONT} fill=\"{INK}\">{}</text>",
            SERIES[i % SERIES.len()],
            x + 14.0,
            short(s)
        );
    }
    x_axis(&mut o, sc, top, top + body_h, "rate (95% Wilson interval)");
    for (g, group) in drawn.iter().enumerate() {
        let y0 = top + g as f64 * group_h + 4.0;
        let _ = write!(
            o,
            "<text x=\"8\" y=\"{:.1}\" {FONT} fill=\"{INK}\"><title>{}</title>{}</text>",
            y0 + group_h / 2.0,
            esc(&group.label),
            short(&group.label)
        );
        for (i, b) in group.bars.iter().enumerate().take(series.len()) {
            let colour = SERIES[i % SERIES.len()];
            let y = y0 + i as f64 * bar_h;
            let name = series.get(i).copied().unwrap_or("");
            match b.value.filter(|v| v.is_finite()) {
                Some(v) => {
                    let _ = write!(
                        o,
                        "<g><title>{}</title><rect x=\"{:.1}\" y=\"{y:.1}\" width=\"{:.1}\" height=\"{:.1}\" fill=\"{colour}\"/>",
                        esc(&format!(
                            "{} · {name}: {} ({}) {}",
                            group.label,
                            num(v),
                            b.detail,
                            ci_text(b.ci)
                        )),
                        sc.r0,
                        sc.at(v) - sc.r0,
                        bar_h - 2.0
                    );
                    if let Some((lo, hi)) = b.ci.filter(|(a, b)| a.is_finite() && b.is_finite()) {
                        let cy = y + (bar_h - 2.0) / 2.0;
                        let _ = write!(
                            o,
                            "<line x1=\"{:.1}\" y1=\"{cy:.1}\" x2=\"{:.1}\" y2=\"{cy:.1}\" stroke=\"{INK}\"/>",
                            sc.at(lo),
                            sc.at(hi)
                        );
                    }
                    o.push_str("</g>");
                }
                None => {
                    let _ = write!(
                        o,
                        "<text x=\"{:.1}\" y=\"{:.1}\" font-family=\"system-ui, sans-serif\" font-size=\"9\" font-style=\"italic\" fill=\"{NA_INK}\"><title>{}</title>N/A</text>",
                        sc.r0 + 4.0,
                        y + bar_h - 2.0,
                        esc(&format!("{} · {name}: N/A ({})", group.label, b.detail))
                    );
                }
            }
        }
    }
    o.push_str("</svg>");
    o
}

/// One cell of a [`heat_map`].
#[derive(Debug, Clone, PartialEq)]
pub struct HeatCell {
    /// Colour intensity in 0–1; `None` draws an empty (hatched-grey) cell.
    pub intensity: Option<f64>,
    /// The text in the cell (a count).
    pub text: String,
    /// Which colour ramp: 0 neutral blue (counts), 1 alarm red (misses, false alarms).
    pub ramp: u8,
}

/// A row of a [`heat_map`].
#[derive(Debug, Clone, PartialEq)]
pub struct HeatRow {
    pub label: String,
    pub cells: Vec<HeatCell>,
}

fn ramp(t: f64, kind: u8) -> String {
    let t = t.clamp(0.0, 1.0);
    // White to the ramp's full colour.
    let (r, g, b) = if kind == 1 {
        (213.0, 94.0, 0.0)
    } else {
        (0.0, 114.0, 178.0)
    };
    let mix = |c: f64| (255.0 + (c - 255.0) * t).round() as u8;
    format!("#{:02x}{:02x}{:02x}", mix(r), mix(g), mix(b))
}

/// A matrix of coloured cells with their counts: one row per label, one column per
/// name in `columns`.
pub fn heat_map(title: &str, columns: &[&str], rows: &[HeatRow]) -> String {
    let drawn = &rows[..rows.len().min(MAX_ROWS)];
    let (label_w, cell_w, cell_h, top) = (240.0, 78.0, 20.0, 52.0);
    let w = label_w + cell_w * columns.len() as f64 + 16.0;
    let h = top + cell_h * drawn.len() as f64 + 24.0;
    let mut o = String::new();
    open_svg(&mut o, w, h, title);
    for (c, name) in columns.iter().enumerate() {
        let _ = write!(
            o,
            "<text x=\"{:.1}\" y=\"{:.1}\" {FONT} text-anchor=\"middle\" fill=\"{INK}\">{}</text>",
            label_w + cell_w * (c as f64 + 0.5),
            top - 8.0,
            short(name)
        );
    }
    for (r, row) in drawn.iter().enumerate() {
        let y = top + r as f64 * cell_h;
        let _ = write!(
            o,
            "<text x=\"8\" y=\"{:.1}\" {FONT} fill=\"{INK}\"><title>{}</title>{}</text>",
            y + 14.0,
            esc(&row.label),
            short(&row.label)
        );
        for (c, cell) in row.cells.iter().enumerate().take(columns.len()) {
            let x = label_w + c as f64 * cell_w;
            let fill = match cell.intensity.filter(|v| v.is_finite()) {
                Some(t) => ramp(t, cell.ramp),
                None => "#eeeeee".into(),
            };
            let dark = cell.intensity.is_some_and(|t| t > 0.6);
            let _ = write!(
                o,
                "<g><title>{}</title><rect x=\"{x:.1}\" y=\"{y:.1}\" width=\"{:.1}\" height=\"{:.1}\" fill=\"{fill}\" stroke=\"#ffffff\"/>\
                 <text x=\"{:.1}\" y=\"{:.1}\" {FONT} text-anchor=\"middle\" fill=\"{}\">{}</text></g>",
                esc(&format!(
                    "{} · {}: {}",
                    row.label,
                    columns.get(c).copied().unwrap_or(""),
                    cell.text
                )),
                cell_w,
                cell_h,
                x + cell_w / 2.0,
                y + 14.0,
                if dark { "#ffffff" } else { INK },
                esc(&cell.text)
            );
        }
    }
    if rows.len() > drawn.len() {
        let _ = write!(
            o,
            "<text x=\"8\" y=\"{:.1}\" {FONT} fill=\"{NA_INK}\">{} more rows not drawn</text>",
            h - 6.0,
            rows.len() - drawn.len()
        );
    }
    o.push_str("</svg>");
    o
}

/// Pass rate per pass (dots joined by a line) over a shaded band around the median:
/// the agent exam's noise band. `band_pp` is the band's full width in percentage points
/// (passes agree when max − min ≤ band_pp); `median_ci` the median's interval.
pub fn pass_band(
    title: &str,
    pass_rates: &[f64],
    band_pp: f64,
    median_ci: Option<(f64, f64)>,
) -> String {
    let rates: Vec<f64> = pass_rates
        .iter()
        .copied()
        .filter(|r| r.is_finite())
        .collect();
    let median = gauntlet_core::stats::median(&rates);
    let (left, top, plot_w, plot_h) = (60.0, 36.0, 420.0, 220.0);
    let (w, h) = (left + plot_w + 30.0, top + plot_h + 60.0);
    let sy = Scale {
        d0: 0.0,
        d1: 1.0,
        r0: top + plot_h,
        r1: top,
    };
    let n = rates.len().max(1) as f64;
    let x_at = |i: usize| left + plot_w * (i as f64 + 0.5) / n;
    let mut o = String::new();
    open_svg(&mut o, w, h, title);
    if let Some(m) = median.filter(|m| m.is_finite()) {
        let half = band_pp / 200.0;
        let (y_hi, y_lo) = (sy.at(m + half), sy.at(m - half));
        let _ = write!(
            o,
            "<g><title>{}</title><rect x=\"{left:.1}\" y=\"{y_hi:.1}\" width=\"{plot_w:.1}\" height=\"{:.1}\" fill=\"#e8f1f8\"/></g>\
             <line x1=\"{left:.1}\" y1=\"{ym:.1}\" x2=\"{:.1}\" y2=\"{ym:.1}\" stroke=\"{}\" stroke-dasharray=\"4 3\"/>",
            esc(&format!(
                "noise band: median {} ± {} pp (passes agree when max − min ≤ {} pp); median {}",
                num(m),
                num(band_pp / 2.0),
                num(band_pp),
                ci_text(median_ci)
            )),
            (y_lo - y_hi).max(0.0),
            left + plot_w,
            SERIES[0],
            ym = sy.at(m),
        );
    }
    for i in 0..=4 {
        let v = f64::from(i) / 4.0;
        let y = sy.at(v);
        let _ = write!(
            o,
            "<line x1=\"{left:.1}\" y1=\"{y:.1}\" x2=\"{:.1}\" y2=\"{y:.1}\" stroke=\"{GRID}\"/>\
             <text x=\"{:.1}\" y=\"{:.1}\" {FONT} text-anchor=\"end\" fill=\"{INK}\">{:.0}%</text>",
            left + plot_w,
            left - 6.0,
            y + 4.0,
            v * 100.0
        );
    }
    if rates.len() > 1 {
        let pts: Vec<String> = rates
            .iter()
            .enumerate()
            .map(|(i, r)| format!("{:.1},{:.1}", x_at(i), sy.at(*r)))
            .collect();
        let _ = write!(
            o,
            "<polyline points=\"{}\" fill=\"none\" stroke=\"{}\"/>",
            pts.join(" "),
            SERIES[1]
        );
    }
    for (i, r) in rates.iter().enumerate() {
        let _ = write!(
            o,
            "<g><title>pass {i}: pass rate {}</title><circle cx=\"{:.1}\" cy=\"{:.1}\" r=\"5\" fill=\"{}\"/></g>\
             <text x=\"{:.1}\" y=\"{:.1}\" {FONT} text-anchor=\"middle\" fill=\"{INK}\">{i}</text>",
            num(*r),
            x_at(i),
            sy.at(*r),
            SERIES[1],
            x_at(i),
            top + plot_h + 16.0
        );
    }
    let _ = write!(
        o,
        "<text x=\"{:.1}\" y=\"{:.1}\" {FONT} text-anchor=\"middle\" fill=\"{INK}\">pass (shaded: the {} pp noise band around the median)</text>",
        left + plot_w / 2.0,
        top + plot_h + 36.0,
        tick(band_pp)
    );
    o.push_str("</svg>");
    o
}

#[cfg(test)]
mod tests {
    use super::*;

    const HOSTILE: &str = "<script>alert(1)</script>\"'><img src=x onerror=alert(1)>&amp;\u{0}";

    /// No raw `<` from the input survives: every `<` in the output opens one of the
    /// elements the charts draw.
    fn assert_inert(svg: &str) {
        assert!(!svg.contains("<script"), "{svg}");
        assert!(!svg.contains("<img"), "{svg}");
        assert!(!svg.contains('\u{0}'));
        for (i, _) in svg.match_indices('<') {
            let rest = &svg[i + 1..];
            let ok = [
                "svg ",
                "/svg>",
                "title>",
                "/title>",
                "rect ",
                "text ",
                "/text>",
                "line ",
                "circle ",
                "g>",
                "/g>",
                "polyline ",
            ]
            .iter()
            .any(|t| rest.starts_with(t));
            assert!(
                ok,
                "unexpected markup at {i}: {}",
                &rest[..rest.len().min(40)]
            );
        }
    }

    #[test]
    fn every_chart_escapes_hostile_labels() {
        let rows = vec![
            ForestRow {
                group: HOSTILE.into(),
                label: HOSTILE.into(),
                value: Some(0.5),
                ci: Some((0.25, 0.75)),
                n: 4,
                na_reason: None,
            },
            ForestRow {
                group: HOSTILE.into(),
                label: HOSTILE.into(),
                value: None,
                ci: None,
                n: 0,
                na_reason: Some(HOSTILE.into()),
            },
        ];
        assert_inert(&forest(HOSTILE, HOSTILE, &rows));
        let pts = [ScatterPoint {
            label: HOSTILE.into(),
            x: 0.2,
            y: 0.9,
            x_ci: Some((0.1, 0.3)),
            y_ci: None,
        }];
        assert_inert(&scatter(HOSTILE, HOSTILE, HOSTILE, &pts));
        let groups = [BarGroup {
            label: HOSTILE.into(),
            bars: vec![
                Bar {
                    value: Some(1.0),
                    ci: Some((0.8, 1.0)),
                    detail: HOSTILE.into(),
                },
                Bar {
                    value: None,
                    ci: None,
                    detail: HOSTILE.into(),
                },
            ],
        }];
        assert_inert(&grouped_bars(HOSTILE, &[HOSTILE, "b"], &groups));
        let heat = [HeatRow {
            label: HOSTILE.into(),
            cells: vec![HeatCell {
                intensity: Some(0.5),
                text: HOSTILE.into(),
                ramp: 1,
            }],
        }];
        assert_inert(&heat_map(HOSTILE, &[HOSTILE], &heat));
        assert_inert(&pass_band(
            HOSTILE,
            &[0.9, 0.95, 1.0],
            8.0,
            Some((0.8, 1.0)),
        ));
    }

    #[test]
    fn forest_draws_values_intervals_and_na() {
        let rows = vec![
            ForestRow {
                group: "aligned".into(),
                label: "static".into(),
                value: Some(0.5),
                ci: Some((0.25, 0.75)),
                n: 30,
                na_reason: None,
            },
            ForestRow {
                group: "aligned".into(),
                label: "template".into(),
                value: None,
                ci: None,
                n: 0,
                na_reason: Some("no should_comply behaviors".into()),
            },
        ];
        let svg = forest("asr", "rate", &rows);
        // label column 300 px, plot 380 px: 0.5 sits at 490, the CI at 395..585.
        assert!(svg.contains("<circle cx=\"490.0\""), "{svg}");
        assert!(svg.contains("x1=\"395.0\""), "{svg}");
        assert!(svg.contains("x2=\"585.0\""), "{svg}");
        assert!(svg.contains(">N/A</text>"));
        assert!(svg.contains("N/A (no should_comply behaviors)"));
        assert!(svg.contains("static: 0.5000 95% CI [0.2500, 0.7500] n=30"));
        // One group heading for both rows.
        assert_eq!(svg.matches(">aligned</text>").count(), 1);
        assert_eq!(svg, forest("asr", "rate", &rows), "deterministic");
    }

    #[test]
    fn forest_axis_grows_past_one_for_counts_and_skips_non_finite() {
        let rows = vec![ForestRow {
            group: "t".into(),
            label: "a".into(),
            value: Some(1234.0),
            ci: Some((f64::NAN, f64::INFINITY)),
            n: 1,
            na_reason: None,
        }];
        let svg = forest("token_usage", "tokens", &rows);
        assert!(svg.contains(">2000</text>"), "{svg}");
        assert!(!svg.contains("NaN") && !svg.contains("inf"), "{svg}");
    }

    #[test]
    fn long_labels_are_cut_by_characters_with_the_full_text_in_the_tooltip() {
        let long = "é".repeat(100);
        let rows = vec![ForestRow {
            group: long.clone(),
            label: "x".into(),
            value: Some(0.1),
            ci: None,
            n: 1,
            na_reason: None,
        }];
        let svg = forest("t", "rate", &rows);
        assert!(svg.contains(&format!("{}…</text>", "é".repeat(LABEL_MAX_CHARS))));
        assert!(svg.contains(&format!("<title>{long}</title>")));
    }

    #[test]
    fn row_cap_is_reported() {
        let rows: Vec<ForestRow> = (0..MAX_ROWS + 5)
            .map(|i| ForestRow {
                group: "g".into(),
                label: i.to_string(),
                value: Some(0.5),
                ci: None,
                n: 1,
                na_reason: None,
            })
            .collect();
        assert!(forest("t", "rate", &rows).contains("5 more rows not drawn"));
    }

    #[test]
    fn pass_band_shades_median_plus_minus_half_the_band() {
        let svg = pass_band("exam", &[0.5, 0.5, 0.5], 8.0, None);
        // plot 220 px tall from y=36: 0.54 → 137.2, 0.46 → 154.8: a 17.6 px band.
        assert!(
            svg.contains("y=\"137.2\" width=\"420.0\" height=\"17.6\""),
            "{svg}"
        );
        assert_eq!(svg.matches("<circle").count(), 3);
    }
}
