//! The self-contained HTML report, rendered with minijinja from the embedded
//! `templates/report.html`.
//!
//! Safety rests on two things: the environment forces HTML auto-escaping for every
//! template (so each interpolated value, all of it untrusted, is escaped), and the
//! template never marks anything `safe`. The one piece of ready-made markup is the charts'
//! SVG, which [`crate::charts`] builds escaping every string itself; it is handed to the
//! template as a safe value (the hostile-input tests cover it). The page loads nothing and
//! runs nothing: inline CSS only, and a Content-Security-Policy of `default-src 'none';
//! style-src 'unsafe-inline'` as a second line of defence.

use minijinja::syntax::SyntaxConfig;
use minijinja::value::Serde;
use minijinja::{AutoEscape, Environment, UndefinedBehavior, Value, context};

use crate::breadth::BreadthView;
use crate::view::ReportView;

const TEMPLATE_NAME: &str = "report.html";
const MAIN_TEMPLATE: &str = include_str!("../templates/report.html");
/// The attack-breadth sections, spliced into the report template at its marker (the
/// minijinja build has no `include`).
const BREADTH_TEMPLATE: &str = include_str!("../templates/breadth.html");
const BREADTH_MARKER: &str =
    "{# @breadth: templates/breadth.html is spliced in here (html.rs) #}\n";
/// The stylesheet every HTML page of gauntlet shares (the run report and
/// [`crate::page`]'s pages), spliced in at each template's marker.
const STYLE: &str = include_str!("../templates/style.html");
const STYLE_MARKER: &str = "{# @style: templates/style.html is spliced in here (html.rs) #}\n";
static TEMPLATE: std::sync::LazyLock<String> = std::sync::LazyLock::new(|| {
    assert!(
        MAIN_TEMPLATE.contains(BREADTH_MARKER),
        "report.html has the breadth marker"
    );
    with_style(&MAIN_TEMPLATE.replacen(BREADTH_MARKER, BREADTH_TEMPLATE, 1))
});

/// `template` with the shared stylesheet spliced in at its marker.
pub(crate) fn with_style(template: &str) -> String {
    assert!(
        template.contains(STYLE_MARKER),
        "template has the style marker"
    );
    template.replacen(STYLE_MARKER, STYLE, 1)
}

fn environment() -> Environment<'static> {
    environment_with(TEMPLATE_NAME, TEMPLATE.as_str())
}

/// The one minijinja environment every HTML page is rendered in: HTML auto-escaping for
/// every template, undefined values an error, `template` registered as `name`.
pub(crate) fn environment_with(name: &'static str, template: &'static str) -> Environment<'static> {
    let mut env = Environment::new();
    // Escape everything, whatever the template is called.
    env.set_auto_escape_callback(|_| AutoEscape::Html);
    // A typo in the template must fail the tests, not print an empty string.
    env.set_undefined_behavior(UndefinedBehavior::Strict);
    env.set_syntax(
        SyntaxConfig::builder()
            .trim_blocks(true)
            .lstrip_blocks(true)
            .keep_trailing_newline(true)
            .build()
            .expect("default delimiters are valid"),
    );
    env.add_template(name, template)
        .expect("the embedded report template parses");
    env
}

pub(crate) fn render(view: &ReportView, charts: &[String], breadth: &BreadthView) -> String {
    let charts: Vec<Value> = charts
        .iter()
        .map(|svg| Value::from_safe_string(svg.clone()))
        .collect();
    environment()
        .get_template(TEMPLATE_NAME)
        .and_then(|t| {
            t.render(context! {
                charts => charts,
                breadth => Serde(breadth),
                ..Value::from(Serde(view))
            })
        })
        .expect("the embedded report template renders any report view")
}
