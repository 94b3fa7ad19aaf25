//! Declarative plugin parameters.
//!
//! Every plugin (target, attack, dataset, judge, metric) declares its parameters as a
//! static schema. Config validation checks a `{name, params}` spec against the schema and
//! produces resolved [`Params`] with every default filled in. The resolved params are what
//! a plugin is built from, what `gauntlet list` prints, and what cache keys hash, so a
//! changed parameter can never reuse a stale result and a default that changes between
//! releases changes the key too.

use crate::tree::{Key, Loc, Node, Value};
use serde::Serialize;
use std::collections::BTreeMap;
use std::fmt;

/// The axes of a run matrix. Plugins are registered per axis.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum Axis {
    Target,
    Attack,
    Dataset,
    Judge,
    Metric,
    /// Injection mode's counterpart of `Attack` (`injections:`).
    Injection,
    /// Injection mode's counterpart of `Dataset` (`scenarios:`).
    Scenario,
    /// Prompt transforms, composed on an attack (`params: {transforms: [...]}`) or
    /// multiplied over every attack (`transforms:` at the top of a run config).
    Transform,
}

impl Axis {
    pub const ALL: [Axis; 8] = [
        Axis::Target,
        Axis::Attack,
        Axis::Dataset,
        Axis::Injection,
        Axis::Scenario,
        Axis::Judge,
        Axis::Metric,
        Axis::Transform,
    ];
    pub fn as_str(self) -> &'static str {
        match self {
            Axis::Target => "target",
            Axis::Attack => "attack",
            Axis::Dataset => "dataset",
            Axis::Judge => "judge",
            Axis::Metric => "metric",
            Axis::Injection => "injection",
            Axis::Scenario => "scenario suite",
            Axis::Transform => "transform",
        }
    }
    /// The config key that lists plugins of this axis.
    pub fn config_key(self) -> &'static str {
        match self {
            Axis::Target => "targets",
            Axis::Attack => "attacks",
            Axis::Dataset => "datasets",
            Axis::Judge => "judges",
            Axis::Metric => "metrics",
            Axis::Injection => "injections",
            Axis::Scenario => "scenarios",
            Axis::Transform => "transforms",
        }
    }
}

/// The type (and allowed range) of one parameter.
#[derive(Debug, Clone, Copy)]
pub enum ParamKind {
    Str,
    /// One of a fixed set of strings.
    Enum(&'static [&'static str]),
    Int {
        min: i64,
        max: i64,
    },
    Float {
        min: f64,
        max: f64,
    },
    Bool,
    StrList,
    /// A mapping from labels to strings, in document order.
    StrMap,
    /// A nested plugin spec of the given axis (e.g. a judge's `grader`, a target).
    Spec(Axis),
    /// A list of nested plugin specs of the given axis, in order (an attack's
    /// `transforms` chain).
    SpecList(Axis),
    /// Any value (mapping, list, string, number, boolean, null), kept as JSON: a request
    /// body template (the `http` target's `body`). Mappings are canonical (keys sorted).
    Json,
}

impl fmt::Display for ParamKind {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            ParamKind::Str => write!(f, "string"),
            ParamKind::Enum(vals) => write!(f, "one of {}", vals.join(" | ")),
            ParamKind::Int { min, max } => write!(f, "integer in {min}..={max}"),
            ParamKind::Float { min, max } => write!(f, "number in {min}..={max}"),
            ParamKind::Bool => write!(f, "boolean"),
            ParamKind::StrList => write!(f, "list of strings"),
            ParamKind::StrMap => write!(f, "mapping of label: string"),
            ParamKind::Spec(axis) => write!(f, "{} spec (name or {{name, params}})", axis.as_str()),
            ParamKind::SpecList(axis) => write!(
                f,
                "list of {} specs (each a name or {{name, params}})",
                axis.as_str()
            ),
            ParamKind::Json => write!(f, "any value (mapping, list, string, number)"),
        }
    }
}

/// A parameter's default.
#[derive(Debug, Clone, Copy)]
pub enum DefaultValue {
    /// The parameter must be given.
    Required,
    /// Absent unless given.
    Absent,
    Str(&'static str),
    Int(i64),
    Float(f64),
    Bool(bool),
    StrList(&'static [&'static str]),
    /// A default that needs more than a literal (a built-in list, a table, …);
    /// the plugin fills it in and documents it in `doc`.
    Builtin,
}

/// One declared parameter.
#[derive(Debug, Clone, Copy)]
pub struct ParamSpec {
    pub name: &'static str,
    pub kind: ParamKind,
    pub default: DefaultValue,
    pub doc: &'static str,
}

/// A plugin's registration: its name, axis, one-line description and parameters.
#[derive(Debug, Clone, Copy)]
pub struct PluginInfo {
    pub axis: Axis,
    pub name: &'static str,
    pub doc: &'static str,
    pub params: &'static [ParamSpec],
}

/// A resolved parameter value.
#[derive(Debug, Clone, PartialEq, Serialize)]
#[serde(untagged)]
pub enum ParamValue {
    Str(String),
    Int(i64),
    Float(f64),
    Bool(bool),
    StrList(Vec<String>),
    StrMap(Vec<(String, String)>),
    Spec(Box<PluginSpec>),
    SpecList(Vec<PluginSpec>),
    Json(serde_json::Value),
}

/// Resolved parameters: declared names only, defaults filled in, ordered by name.
#[derive(Debug, Clone, PartialEq, Default, Serialize)]
pub struct Params(BTreeMap<String, ParamValue>);

impl Params {
    pub fn new() -> Self {
        Self::default()
    }
    pub fn insert(&mut self, name: &str, v: ParamValue) {
        self.0.insert(name.to_string(), v);
    }
    pub fn remove(&mut self, name: &str) -> Option<ParamValue> {
        self.0.remove(name)
    }
    pub fn get(&self, name: &str) -> Option<&ParamValue> {
        self.0.get(name)
    }
    pub fn str(&self, name: &str) -> Option<&str> {
        match self.0.get(name) {
            Some(ParamValue::Str(s)) => Some(s),
            _ => None,
        }
    }
    pub fn int(&self, name: &str) -> Option<i64> {
        match self.0.get(name) {
            Some(ParamValue::Int(i)) => Some(*i),
            _ => None,
        }
    }
    pub fn float(&self, name: &str) -> Option<f64> {
        match self.0.get(name) {
            Some(ParamValue::Float(f)) => Some(*f),
            Some(ParamValue::Int(i)) => Some(*i as f64),
            _ => None,
        }
    }
    pub fn bool(&self, name: &str) -> Option<bool> {
        match self.0.get(name) {
            Some(ParamValue::Bool(b)) => Some(*b),
            _ => None,
        }
    }
    pub fn str_list(&self, name: &str) -> Option<&[String]> {
        match self.0.get(name) {
            Some(ParamValue::StrList(v)) => Some(v),
            _ => None,
        }
    }
    pub fn str_map(&self, name: &str) -> Option<&[(String, String)]> {
        match self.0.get(name) {
            Some(ParamValue::StrMap(v)) => Some(v),
            _ => None,
        }
    }
    pub fn spec(&self, name: &str) -> Option<&PluginSpec> {
        match self.0.get(name) {
            Some(ParamValue::Spec(s)) => Some(s),
            _ => None,
        }
    }
    pub fn json(&self, name: &str) -> Option<&serde_json::Value> {
        match self.0.get(name) {
            Some(ParamValue::Json(v)) => Some(v),
            _ => None,
        }
    }
    pub fn spec_list(&self, name: &str) -> Option<&[PluginSpec]> {
        match self.0.get(name) {
            Some(ParamValue::SpecList(v)) => Some(v),
            _ => None,
        }
    }
    pub fn iter(&self) -> impl Iterator<Item = (&String, &ParamValue)> {
        self.0.iter()
    }
}

/// The attack param that holds a prompt-transform chain (see [`PluginSpec::label`]).
pub const TRANSFORMS_PARAM: &str = "transforms";

/// A resolved plugin reference: a registered name and its resolved params.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct PluginSpec {
    pub name: String,
    pub params: Params,
    /// Where the spec was written (not part of its identity).
    #[serde(skip)]
    pub loc: Loc,
    /// The label the run config gave this spec because its own would clash with
    /// another's (see `gauntlet_redteam::config`); `None` keeps [`PluginSpec::label`]'s
    /// rule. Not part of its identity, so cache keys never depend on it.
    #[serde(skip)]
    pub label: Option<String>,
}

/// Params that annotate a plugin's results without changing what it asks any model.
pub const ANNOTATION_PARAMS: &[&str] = &["card"];

/// Params that change how a plugin's model calls are sent, never what is asked (a live
/// target's batch mode): left out of [`PluginSpec::identity`], so cache keys, the config
/// hash and run.json are the same whether calls are batched or made one by one.
pub const EXECUTION_PARAMS: &[&str] = &[
    "batch",
    "batch_poll_s",
    "batch_linger_ms",
    "batch_max_requests",
];

/// Removes [`EXECUTION_PARAMS`] from a spec's JSON (`spec` is the spec it was made
/// from) and from the specs nested in its params. Only nested specs are walked: a
/// [`ParamKind::Json`] value (a request body) is data, kept whole whatever its keys.
fn strip_execution_params(spec: &PluginSpec, v: &mut serde_json::Value) {
    let Some(serde_json::Value::Object(p)) = v.get_mut("params") else {
        return;
    };
    for a in EXECUTION_PARAMS {
        p.remove(*a);
    }
    for (k, pv) in spec.params.iter() {
        match (pv, p.get_mut(k.as_str())) {
            (ParamValue::Spec(s), Some(j)) => strip_execution_params(s, j),
            (ParamValue::SpecList(l), Some(serde_json::Value::Array(js))) => {
                for (s, j) in l.iter().zip(js.iter_mut()) {
                    strip_execution_params(s, j);
                }
            }
            _ => {}
        }
    }
}

impl PluginSpec {
    /// Canonical JSON identity: `{"name": …, "params": {…}}` with nested specs inlined,
    /// without [`EXECUTION_PARAMS`]. This is what cache keys and provenance hash.
    pub fn identity(&self) -> serde_json::Value {
        let mut v = serde_json::to_value(self).expect("plugin specs serialise");
        strip_execution_params(self, &mut v);
        v
    }
    /// [`PluginSpec::identity`] without the params that only annotate results
    /// ([`ANNOTATION_PARAMS`], e.g. a judge's `card`): what cache keys of the plugin's
    /// model calls hash, so annotating a judge never invalidates its grader's journal.
    pub fn key_identity(&self) -> serde_json::Value {
        let mut v = self.identity();
        if let Some(serde_json::Value::Object(p)) = v.get_mut("params") {
            for a in ANNOTATION_PARAMS {
                p.remove(*a);
            }
        }
        v
    }
    /// A short label for reports: the label the run config assigned, else
    /// [`PluginSpec::own_label`].
    pub fn label(&self) -> String {
        self.label.clone().unwrap_or_else(|| self.own_label())
    }
    /// What the spec says by itself: the `name` param when a plugin has one (targets are
    /// usually told apart by it), else the `suite` param (bundled scenario suites,
    /// AgentDojo suites), else the `attack` param (AgentDojo injections), else the
    /// `source` param (an imported tool's probe, plugin/strategy or task), else the plugin
    /// name; followed by `+<transform>` for each prompt transform of a `transforms` chain
    /// (`static+base64+leetspeak`), so a transformed attack is its own cell, and by
    /// `+<defense>` for a `defense` param (`important_instructions+tool_filter`).
    pub fn own_label(&self) -> String {
        let mut l = self
            .params
            .str("name")
            .or_else(|| self.params.str("suite"))
            .or_else(|| self.params.str("attack"))
            .or_else(|| self.params.str("source"))
            .unwrap_or(&self.name)
            .to_string();
        if let Some(chain) = self.params.spec_list(TRANSFORMS_PARAM) {
            for t in chain {
                l.push('+');
                l.push_str(&t.name);
            }
        }
        if let Some(d) = self.params.str("defense") {
            l.push('+');
            l.push_str(d);
        }
        l
    }
}

/// A located configuration problem. The config loader adds the file name.
#[derive(Debug, Clone, PartialEq)]
pub struct Diag {
    pub loc: Loc,
    /// Key path, e.g. `targets[1].params.refusal_topics`.
    pub path: String,
    pub message: String,
    /// What would fix it (allowed values, a suggestion).
    pub help: Option<String>,
}

impl Diag {
    pub fn new(loc: Loc, path: impl Into<String>, message: impl Into<String>) -> Self {
        Diag {
            loc,
            path: path.into(),
            message: message.into(),
            help: None,
        }
    }
    pub fn with_help(mut self, help: impl Into<String>) -> Self {
        self.help = Some(help.into());
        self
    }
}

/// Looks plugins up by axis and name; implemented by the closed registries.
pub trait Catalog {
    fn find(&self, axis: Axis, name: &str) -> Option<&PluginInfo>;
    fn names(&self, axis: Axis) -> Vec<&'static str>;
}

/// The closest name within a small edit distance, for "did you mean" hints.
pub fn suggest<'a>(given: &str, candidates: &[&'a str]) -> Option<&'a str> {
    candidates
        .iter()
        .map(|c| (strsim::levenshtein(given, c), *c))
        .filter(|(d, c)| *d <= 2.max(c.len() / 4))
        .min()
        .map(|(_, c)| c)
}

/// Resolves a plugin spec node (a bare name or `{name, params}`) of the given axis.
pub fn resolve_spec(
    catalog: &dyn Catalog,
    axis: Axis,
    node: &Node,
    path: &str,
    diags: &mut Vec<Diag>,
) -> Option<PluginSpec> {
    let (name_node, params_node): (&Node, Option<&Node>) = match &node.value {
        Value::Str(_) => (node, None),
        Value::Map(entries) => {
            let mut name = None;
            let mut params = None;
            for (k, v) in entries {
                match k.name.as_str() {
                    "name" => name = Some(v),
                    "params" => params = Some(v),
                    other => diags.push(unknown_key(k, path, other, &["name", "params"])),
                }
            }
            match name {
                Some(n) => (n, params),
                None => {
                    diags.push(
                        Diag::new(
                            node.loc,
                            path,
                            format!("{} spec has no `name`", axis.as_str()),
                        )
                        .with_help(format!(
                            "write `name: <{}>`; known: {}",
                            axis.as_str(),
                            catalog.names(axis).join(", ")
                        )),
                    );
                    return None;
                }
            }
        }
        other => {
            diags.push(
                Diag::new(
                    node.loc,
                    path,
                    format!(
                        "expected a {} name or {{name, params}}, found {}",
                        axis.as_str(),
                        other.kind()
                    ),
                )
                .with_help(format!(
                    "known {}s: {}",
                    axis.as_str(),
                    catalog.names(axis).join(", ")
                )),
            );
            return None;
        }
    };
    let Some(name) = name_node.as_str() else {
        diags.push(Diag::new(
            name_node.loc,
            format!("{path}.name"),
            format!(
                "plugin name must be a string, found {}",
                name_node.value.kind()
            ),
        ));
        return None;
    };
    let Some(info) = catalog.find(axis, name) else {
        let names = catalog.names(axis);
        let mut d = Diag::new(
            name_node.loc,
            path,
            format!("unknown {} `{name}`", axis.as_str()),
        );
        d.help = Some(match suggest(name, &names) {
            Some(s) => format!(
                "did you mean `{s}`? known {}s: {}",
                axis.as_str(),
                names.join(", ")
            ),
            None => format!("known {}s: {}", axis.as_str(), names.join(", ")),
        });
        diags.push(d);
        return None;
    };
    let params_path = format!("{path}.params");
    let params = resolve_params(catalog, info, params_node, &params_path, node.loc, diags)?;
    Some(PluginSpec {
        name: info.name.to_string(),
        params,
        loc: node.loc,
        label: None,
    })
}

fn unknown_key(k: &Key, path: &str, given: &str, allowed: &[&str]) -> Diag {
    let mut d = Diag::new(
        k.loc,
        if path.is_empty() {
            given.to_string()
        } else {
            format!("{path}.{given}")
        },
        format!("unknown key `{given}`"),
    );
    d.help = Some(match suggest(given, allowed) {
        Some(s) => format!("did you mean `{s}`? allowed keys: {}", allowed.join(", ")),
        None => format!("allowed keys: {}", allowed.join(", ")),
    });
    d
}

/// Reports an unknown key with the allowed set (shared with the run-config loader).
pub fn unknown_key_diag(k: &Key, path: &str, allowed: &[&str]) -> Diag {
    unknown_key(k, path, &k.name, allowed)
}

/// Validates a params mapping against a plugin's schema.
pub fn resolve_params(
    catalog: &dyn Catalog,
    info: &PluginInfo,
    node: Option<&Node>,
    path: &str,
    spec_loc: Loc,
    diags: &mut Vec<Diag>,
) -> Option<PluginParamsResult> {
    let before = diags.len();
    let entries: &[(Key, Node)] = match node {
        None => &[],
        Some(Node {
            value: Value::Null, ..
        }) => &[],
        Some(n) => match n.as_map() {
            Some(m) => m,
            None => {
                diags.push(Diag::new(
                    n.loc,
                    path,
                    format!("params must be a mapping, found {}", n.value.kind()),
                ));
                return None;
            }
        },
    };
    let allowed: Vec<&str> = info.params.iter().map(|p| p.name).collect();
    let mut out = Params::new();
    for (k, v) in entries {
        let Some(spec) = info.params.iter().find(|p| p.name == k.name) else {
            let mut d = unknown_key(k, path, &k.name, &allowed);
            if allowed.is_empty() {
                d.help = Some(format!("`{}` takes no params", info.name));
            } else {
                d.message = format!(
                    "unknown param `{}` for {} `{}`",
                    k.name,
                    info.axis.as_str(),
                    info.name
                );
            }
            diags.push(d);
            continue;
        };
        let ppath = format!("{path}.{}", k.name);
        if let Some(val) = check_value(catalog, spec, v, &ppath, diags) {
            out.insert(spec.name, val);
        }
    }
    for spec in info.params {
        if out.get(spec.name).is_some() || entries.iter().any(|(k, _)| k.name == spec.name) {
            continue;
        }
        let default = match spec.default {
            DefaultValue::Required => {
                diags.push(
                    Diag::new(
                        node.map_or(spec_loc, |n| n.loc),
                        format!("{path}.{}", spec.name),
                        format!(
                            "missing required param `{}` for {} `{}`",
                            spec.name,
                            info.axis.as_str(),
                            info.name
                        ),
                    )
                    .with_help(format!("expected {}: {}", spec.kind, spec.doc)),
                );
                continue;
            }
            DefaultValue::Absent | DefaultValue::Builtin => continue,
            DefaultValue::Str(s) => ParamValue::Str(s.to_string()),
            DefaultValue::Int(i) => ParamValue::Int(i),
            DefaultValue::Float(f) => ParamValue::Float(f),
            DefaultValue::Bool(b) => ParamValue::Bool(b),
            DefaultValue::StrList(l) => {
                ParamValue::StrList(l.iter().map(|s| s.to_string()).collect())
            }
        };
        out.insert(spec.name, default);
    }
    (diags.len() == before).then_some(out)
}

/// What [`resolve_params`] returns.
pub type PluginParamsResult = Params;

fn type_error(spec: &ParamSpec, v: &Node, path: &str) -> Diag {
    Diag::new(
        v.loc,
        path,
        format!(
            "param `{}` expects {}, found {}",
            spec.name,
            spec.kind,
            v.value.kind()
        ),
    )
    .with_help(spec.doc.to_string())
}

/// The longest free-text param value (a string, a list item, a mapping value): 64 KiB,
/// the cap `divergence` always had. A 1 MiB `char_spacing` separator turned two attempts
/// into 118 MB of transcripts.
pub const MAX_TEXT_PARAM_BYTES: usize = 64 << 10;

/// A diagnostic when `s` is longer than [`MAX_TEXT_PARAM_BYTES`].
fn too_long(spec: &ParamSpec, s: &str, loc: crate::tree::Loc, path: &str) -> Option<Diag> {
    (s.len() > MAX_TEXT_PARAM_BYTES).then(|| {
        Diag::new(
            loc,
            path,
            format!(
                "param `{}` is {} bytes long, more than the {MAX_TEXT_PARAM_BYTES} a text param may be",
                spec.name,
                s.len()
            ),
        )
        .with_help("shorten it (at most 64 KiB)")
    })
}

fn check_value(
    catalog: &dyn Catalog,
    spec: &ParamSpec,
    v: &Node,
    path: &str,
    diags: &mut Vec<Diag>,
) -> Option<ParamValue> {
    match (spec.kind, &v.value) {
        (ParamKind::Str, Value::Str(s)) => match too_long(spec, s, v.loc, path) {
            Some(d) => {
                diags.push(d);
                None
            }
            None => Some(ParamValue::Str(s.clone())),
        },
        (ParamKind::Enum(allowed), Value::Str(s)) => {
            if allowed.contains(&s.as_str()) {
                Some(ParamValue::Str(s.clone()))
            } else {
                diags.push(
                    Diag::new(
                        v.loc,
                        path,
                        format!(
                            "param `{}` has value `{s}`, which is not allowed",
                            spec.name
                        ),
                    )
                    .with_help(format!("allowed: {}", allowed.join(", "))),
                );
                None
            }
        }
        (ParamKind::Int { min, max }, Value::Int(i)) => {
            if (min..=max).contains(i) {
                Some(ParamValue::Int(*i))
            } else {
                diags.push(
                    Diag::new(
                        v.loc,
                        path,
                        format!("param `{}` = {i} is out of range", spec.name),
                    )
                    .with_help(format!("expected {}", spec.kind)),
                );
                None
            }
        }
        (ParamKind::Float { min, max }, Value::Int(_) | Value::Float(_)) => {
            let f = match v.value {
                Value::Int(i) => i as f64,
                Value::Float(f) => f,
                _ => unreachable!(),
            };
            if f.is_finite() && f >= min && f <= max {
                Some(ParamValue::Float(f))
            } else {
                diags.push(
                    Diag::new(
                        v.loc,
                        path,
                        format!("param `{}` = {f} is out of range", spec.name),
                    )
                    .with_help(format!("expected {}", spec.kind)),
                );
                None
            }
        }
        (ParamKind::Bool, Value::Bool(b)) => Some(ParamValue::Bool(*b)),
        (ParamKind::StrList, Value::Seq(items)) => {
            let mut out = Vec::with_capacity(items.len());
            for (i, item) in items.iter().enumerate() {
                match item.as_str() {
                    Some(s) => match too_long(spec, s, item.loc, &format!("{path}[{i}]")) {
                        Some(d) => diags.push(d),
                        None => out.push(s.to_string()),
                    },
                    None => diags.push(Diag::new(
                        item.loc,
                        format!("{path}[{i}]"),
                        format!(
                            "param `{}` expects a list of strings, item {i} is {}",
                            spec.name,
                            item.value.kind()
                        ),
                    )),
                }
            }
            (out.len() == items.len()).then_some(ParamValue::StrList(out))
        }
        (ParamKind::StrMap, Value::Map(entries)) => {
            let mut out = Vec::with_capacity(entries.len());
            for (k, item) in entries {
                match item.as_str() {
                    Some(s) => match too_long(spec, s, item.loc, &format!("{path}.{}", k.name)) {
                        Some(d) => diags.push(d),
                        None => out.push((k.name.clone(), s.to_string())),
                    },
                    None => diags.push(Diag::new(
                        item.loc,
                        format!("{path}.{}", k.name),
                        format!(
                            "param `{}` expects string values, `{}` is {}",
                            spec.name,
                            k.name,
                            item.value.kind()
                        ),
                    )),
                }
            }
            (out.len() == entries.len()).then_some(ParamValue::StrMap(out))
        }
        // The recorded form: run.json (and every canonical config) writes a mapping as
        // a list of `[label, string]` pairs, to keep its order; it must read back.
        (ParamKind::StrMap, Value::Seq(items)) => {
            let mut out: Vec<(String, String)> = Vec::with_capacity(items.len());
            for (i, item) in items.iter().enumerate() {
                let pair = match item.as_seq() {
                    Some([k, v]) => k.as_str().zip(v.as_str()),
                    _ => None,
                };
                match pair {
                    Some((k, _)) if out.iter().any(|(seen, _)| seen == k) => diags.push(
                        Diag::new(
                            item.loc,
                            format!("{path}[{i}]"),
                            format!("param `{}` has the label `{k}` twice", spec.name),
                        )
                        .with_help("each label may appear once"),
                    ),
                    Some((k, v)) => match too_long(spec, v, item.loc, &format!("{path}[{i}]")) {
                        Some(d) => diags.push(d),
                        None => out.push((k.to_string(), v.to_string())),
                    },
                    None => diags.push(
                        Diag::new(
                            item.loc,
                            format!("{path}[{i}]"),
                            format!(
                                "param `{}` expects a mapping of label: string (or a list of [label, string] pairs), item {i} is {}",
                                spec.name,
                                item.value.kind()
                            ),
                        )
                        .with_help(spec.doc.to_string()),
                    ),
                }
            }
            (out.len() == items.len()).then_some(ParamValue::StrMap(out))
        }
        (ParamKind::Spec(axis), _) => {
            resolve_spec(catalog, axis, v, path, diags).map(|s| ParamValue::Spec(Box::new(s)))
        }
        (ParamKind::Json, _) => Some(ParamValue::Json(v.to_json())),
        (ParamKind::SpecList(axis), Value::Seq(items)) => {
            let before = diags.len();
            let specs: Vec<PluginSpec> = items
                .iter()
                .enumerate()
                .filter_map(|(i, item)| {
                    resolve_spec(catalog, axis, item, &format!("{path}[{i}]"), diags)
                })
                .collect();
            (diags.len() == before && specs.len() == items.len())
                .then_some(ParamValue::SpecList(specs))
        }
        _ => {
            diags.push(type_error(spec, v, path));
            None
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::tree::parse_yaml;

    /// A `Json` param (a request body) is data: a key in it named like an execution
    /// param stays in the identity, while the spec's own execution params are stripped.
    #[test]
    fn json_params_are_kept_whole_in_the_identity() {
        let mut p = Params::new();
        p.insert(
            "body",
            ParamValue::Json(serde_json::json!({"params": {"batch": true}, "m": "{{prompt}}"})),
        );
        p.insert("batch", ParamValue::Bool(true));
        let s = PluginSpec {
            name: "http".into(),
            params: p,
            loc: Loc::default(),
            label: None,
        };
        let id = s.identity();
        assert_eq!(id["params"]["body"]["params"]["batch"], true);
        assert!(id["params"].get("batch").is_none());
    }

    /// Batch params are left out of a spec's identity, also in nested specs, so batching
    /// changes no cache key and no config hash; every other param still counts.
    #[test]
    fn execution_params_are_not_identity() {
        let spec = |batch: bool, model: &str| {
            let mut p = Params::new();
            p.insert("model", ParamValue::Str(model.into()));
            if batch {
                p.insert("batch", ParamValue::Bool(true));
                p.insert("batch_poll_s", ParamValue::Float(0.5));
            }
            let mut outer = Params::new();
            outer.insert(
                "grader",
                ParamValue::Spec(Box::new(PluginSpec {
                    name: "openai_compat".into(),
                    params: p.clone(),
                    loc: Loc::default(),
                    label: None,
                })),
            );
            (
                PluginSpec {
                    name: "openai_compat".into(),
                    params: p,
                    loc: Loc::default(),
                    label: None,
                },
                PluginSpec {
                    name: "rubric".into(),
                    params: outer,
                    loc: Loc::default(),
                    label: None,
                },
            )
        };
        let (plain, plain_judge) = spec(false, "m");
        let (batched, batched_judge) = spec(true, "m");
        assert_eq!(plain.identity(), batched.identity());
        assert_eq!(plain_judge.identity(), batched_judge.identity());
        assert_eq!(plain_judge.key_identity(), batched_judge.key_identity());
        assert_ne!(plain.identity(), spec(true, "n").0.identity());
        assert!(!batched_judge.identity().to_string().contains("batch"));
    }

    struct Cat;
    const REF: PluginInfo = PluginInfo {
        axis: Axis::Target,
        name: "reference",
        doc: "test",
        params: &[
            ParamSpec {
                name: "name",
                kind: ParamKind::Str,
                default: DefaultValue::Str("reference"),
                doc: "label",
            },
            ParamSpec {
                name: "level",
                kind: ParamKind::Int { min: 1, max: 5 },
                default: DefaultValue::Int(3),
                doc: "lvl",
            },
            ParamSpec {
                name: "mode",
                kind: ParamKind::Enum(&["a", "b"]),
                default: DefaultValue::Absent,
                doc: "m",
            },
        ],
    };
    const RUBRIC: PluginInfo = PluginInfo {
        axis: Axis::Judge,
        name: "rubric",
        doc: "test",
        params: &[ParamSpec {
            name: "grader",
            kind: ParamKind::Spec(Axis::Target),
            default: DefaultValue::Required,
            doc: "g",
        }],
    };
    impl Catalog for Cat {
        fn find(&self, axis: Axis, name: &str) -> Option<&PluginInfo> {
            [&REF, &RUBRIC]
                .into_iter()
                .find(|p| p.axis == axis && p.name == name)
        }
        fn names(&self, axis: Axis) -> Vec<&'static str> {
            [&REF, &RUBRIC]
                .into_iter()
                .filter(|p| p.axis == axis)
                .map(|p| p.name)
                .collect()
        }
    }

    fn resolve(axis: Axis, yaml: &str) -> Result<PluginSpec, Vec<Diag>> {
        let node = parse_yaml(yaml).unwrap();
        let mut diags = Vec::new();
        match resolve_spec(&Cat, axis, &node, "x", &mut diags) {
            Some(s) if diags.is_empty() => Ok(s),
            _ => Err(diags),
        }
    }

    #[test]
    fn bare_name_gets_defaults() {
        let s = resolve(Axis::Target, "reference").unwrap();
        assert_eq!(s.params.str("name"), Some("reference"));
        assert_eq!(s.params.int("level"), Some(3));
        assert_eq!(s.params.str("mode"), None);
    }

    #[test]
    fn nested_spec_resolves() {
        let s = resolve(
            Axis::Judge,
            "{name: rubric, params: {grader: {name: reference, params: {level: 5}}}}",
        )
        .unwrap();
        assert_eq!(
            s.params.spec("grader").unwrap().params.int("level"),
            Some(5)
        );
        let id = s.identity().to_string();
        assert!(id.contains("\"level\":5"), "{id}");
    }

    #[test]
    fn errors_are_precise() {
        let e = resolve(Axis::Target, "{name: referense}").unwrap_err();
        assert!(e[0].message.contains("unknown target `referense`"));
        assert!(
            e[0].help
                .as_deref()
                .unwrap()
                .contains("did you mean `reference`")
        );

        let e = resolve(Axis::Target, "{name: reference, params: {level: 9}}").unwrap_err();
        assert_eq!(e[0].path, "x.params.level");
        assert!(e[0].message.contains("out of range"));
        assert!(e[0].help.as_deref().unwrap().contains("1..=5"));

        let e = resolve(Axis::Target, "{name: reference, params: {levle: 2}}").unwrap_err();
        assert!(e[0].message.contains("unknown param `levle`"), "{e:?}");
        assert!(
            e[0].help
                .as_deref()
                .unwrap()
                .contains("did you mean `level`")
        );

        let e = resolve(Axis::Judge, "rubric").unwrap_err();
        assert!(e[0].message.contains("missing required param `grader`"));

        let e = resolve(Axis::Target, "{name: reference, params: {mode: c}}").unwrap_err();
        assert!(e[0].help.as_deref().unwrap().contains("allowed: a, b"));
    }
}
