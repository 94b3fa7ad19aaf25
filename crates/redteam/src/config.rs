//! Run configs: redharness's YAML format, read strictly.
//!
//! Unknown keys are errors; the mode follows from which axes are present (there is no
//! `mode:` key); every plugin spec is resolved against the closed registry, params
//! included, before anything runs. Every problem is reported with the file, line and
//! column, the key path, and what is allowed — all problems at once, not one per run.

use gauntlet_core::files::{self, Kind};
use gauntlet_core::params::{
    Axis, Catalog, DefaultValue, Diag, ParamValue, PluginSpec, resolve_spec, unknown_key_diag,
};
use gauntlet_core::tree::{Loc, Node, Value, parse_yaml};
use std::collections::BTreeMap;
use std::fmt;
use std::path::{Path, PathBuf};

/// Which surface a run evaluates.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Mode {
    Jailbreak,
    Injection,
}

impl Mode {
    pub fn as_str(self) -> &'static str {
        match self {
            Mode::Jailbreak => "jailbreak",
            Mode::Injection => "injection",
        }
    }
}

/// A validated run config with every plugin spec resolved.
#[derive(Debug, Clone)]
pub struct RunConfig {
    /// The config file (relative dataset paths resolve against its directory).
    pub path: PathBuf,
    pub run_name: String,
    pub seed: u64,
    /// Model calls per agent run at most (injection mode; ignored otherwise).
    pub max_steps: u32,
    pub max_queries: Option<u64>,
    /// The largest share of judged attempts that may end in an error for the run to be
    /// `complete` (default [`DEFAULT_MAX_ERROR_SHARE`]); a run over it, one whose every
    /// attempt errored, and one that made no attempt end `failed` (see `run::status`).
    /// Not part of the canonical config: it judges the run's numbers and changes none.
    pub max_error_share: f64,
    pub concurrency: u32,
    pub trials: u32,
    pub mode: Mode,
    pub targets: Vec<PluginSpec>,
    /// Attacks, or in injection mode the injections.
    pub attacks: Vec<PluginSpec>,
    /// Datasets, or in injection mode the scenario suites.
    pub datasets: Vec<PluginSpec>,
    pub judges: Vec<PluginSpec>,
    pub metrics: Vec<PluginSpec>,
    /// The `gate:` block: rules checked once the run is complete (`gauntlet run` then
    /// exits with its gate status). Not part of the canonical config: a gate judges a
    /// run's numbers and changes none of them.
    pub gate: Option<crate::gate_rule::GateConfig>,
}

impl RunConfig {
    /// The directory relative paths in the config are resolved against.
    pub fn base_dir(&self) -> &Path {
        self.path
            .parent()
            .filter(|p| !p.as_os_str().is_empty())
            .unwrap_or(Path::new("."))
    }

    /// `run --batch`: every target with a provider batch API (its `batch` in
    /// `gauntlet_models::registry::TARGET_TABLE`) sends its calls in batches. Batching is not part of any identity,
    /// so the config hash, the cache keys and the artefacts do not change. Returns how
    /// many targets batch.
    pub fn enable_batch(&mut self) -> usize {
        let mut n = 0;
        for t in &mut self.targets {
            if gauntlet_models::registry::can_batch(&t.name) {
                t.params
                    .insert("batch", gauntlet_core::params::ParamValue::Bool(true));
                n += 1;
            }
        }
        n
    }

    /// The canonical resolved config: what the config hash covers and run.json records.
    /// `concurrency` is left out: it must not change any result.
    pub fn canonical(&self) -> serde_json::Value {
        let ids = |v: &[PluginSpec]| {
            serde_json::Value::Array(v.iter().map(PluginSpec::identity).collect())
        };
        serde_json::json!({
            "run_name": self.run_name,
            "seed": self.seed,
            "max_steps": self.max_steps,
            "max_queries": self.max_queries,
            "trials": self.trials,
            "mode": self.mode.as_str(),
            "targets": ids(&self.targets),
            "attacks": ids(&self.attacks),
            "datasets": ids(&self.datasets),
            "judges": ids(&self.judges),
            "metrics": ids(&self.metrics),
        })
    }
}

/// Everything wrong with a config file.
#[derive(Debug, Clone)]
pub struct ConfigError {
    pub file: String,
    pub diags: Vec<Diag>,
}

impl ConfigError {
    pub fn single(file: &str, loc: Loc, path: &str, message: impl Into<String>) -> Self {
        ConfigError {
            file: file.to_string(),
            diags: vec![Diag::new(loc, path, message)],
        }
    }
}

/// Diagnostics shown in full per distinct message; the rest are counted (a config
/// repeating one metric 200,000 times printed 22 MB of identical errors).
pub const MAX_SAME_DIAGS: usize = 5;
/// Diagnostics shown in full in all.
pub const MAX_DIAGS: usize = 100;

/// `199990` as `199,990`.
fn thousands(n: usize) -> String {
    let s = n.to_string();
    let mut out = String::with_capacity(s.len() + s.len() / 3);
    for (i, c) in s.chars().enumerate() {
        if i > 0 && (s.len() - i).is_multiple_of(3) {
            out.push(',');
        }
        out.push(c);
    }
    out
}

impl fmt::Display for ConfigError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let mut seen: std::collections::HashMap<&str, usize> = std::collections::HashMap::new();
        // Messages beyond their cap, in order of first appearance, with how many.
        let mut capped: Vec<(&str, usize)> = Vec::new();
        let (mut shown, mut beyond_total) = (0usize, 0usize);
        for d in &self.diags {
            let n = seen.entry(d.message.as_str()).or_insert(0);
            *n += 1;
            if *n > MAX_SAME_DIAGS {
                match capped.iter_mut().find(|(m, _)| *m == d.message) {
                    Some((_, k)) => *k += 1,
                    None => capped.push((d.message.as_str(), 1)),
                }
                continue;
            }
            if shown == MAX_DIAGS {
                beyond_total += 1;
                continue;
            }
            if shown > 0 {
                writeln!(f)?;
            }
            shown += 1;
            if d.loc.line > 0 {
                write!(
                    f,
                    "{}:{}:{}: {}",
                    self.file, d.loc.line, d.loc.col, d.message
                )?;
            } else {
                write!(f, "{}: {}", self.file, d.message)?;
            }
            if !d.path.is_empty() {
                write!(f, "\n    at key: {}", d.path)?;
            }
            if let Some(h) = &d.help {
                write!(f, "\n    help: {h}")?;
            }
        }
        for (m, k) in capped {
            write!(f, "\n{}: … and {} more: {m}", self.file, thousands(k))?;
        }
        if beyond_total > 0 {
            write!(
                f,
                "\n{}: … and {} more error(s)",
                self.file,
                thousands(beyond_total)
            )?;
        }
        Ok(())
    }
}

impl std::error::Error for ConfigError {}

/// `max_error_share` when the config does not set it.
pub const DEFAULT_MAX_ERROR_SHARE: f64 = 0.2;

const TOP_KEYS: &[&str] = &[
    "run_name",
    "seed",
    "max_steps",
    "max_queries",
    "max_error_share",
    "concurrency",
    "trials",
    "targets",
    "attacks",
    "datasets",
    "judges",
    "metrics",
    "injections",
    "scenarios",
    "transforms",
    "defenses",
    "gate",
];

/// Reads and validates a config file.
pub fn load(path: &Path, catalog: &dyn Catalog) -> Result<RunConfig, ConfigError> {
    let shown = path.display().to_string();
    let text = files::read_to_string(path, Kind::CONFIG).map_err(|e| {
        ConfigError::single(
            &shown,
            Loc::default(),
            "",
            format!("cannot read config file: {}", e.into_io()),
        )
    })?;
    parse(&text, path, catalog)
}

/// Validates config text; `path` names the file in errors and anchors relative paths.
pub fn parse(text: &str, path: &Path, catalog: &dyn Catalog) -> Result<RunConfig, ConfigError> {
    let shown = path.display().to_string();
    let root = parse_yaml(text).map_err(|e| {
        ConfigError::single(&shown, e.loc, "", format!("invalid YAML: {}", e.message))
    })?;
    let Some(entries) = root.as_map() else {
        return Err(ConfigError::single(
            &shown,
            root.loc,
            "",
            format!(
                "the config must be a mapping of keys (run_name, targets, …), found {}",
                root.value.kind()
            ),
        ));
    };
    let mut diags = Vec::new();
    for (k, _) in entries {
        if !TOP_KEYS.contains(&k.name.as_str()) {
            diags.push(unknown_key_diag(k, "", TOP_KEYS));
        }
    }
    let get = |key: &str| root.get(key);

    let run_name = match get("run_name") {
        None => "gauntlet-run".to_string(),
        Some(n) => match n.as_str() {
            Some(s) if valid_run_name(s) => s.to_string(),
            Some(s) => {
                diags.push(
                    Diag::new(n.loc, "run_name", format!("run_name {s:?} is not allowed"))
                        .with_help("1-128 characters from A-Z a-z 0-9 . _ - (it names a directory under the runs dir), not `.` or `..`"),
                );
                String::new()
            }
            None => {
                diags.push(Diag::new(
                    n.loc,
                    "run_name",
                    format!("run_name must be a string, found {}", n.value.kind()),
                ));
                String::new()
            }
        },
    };
    let seed = int_key(get("seed"), "seed", 0, 0, i64::MAX, &mut diags) as u64;
    let max_steps = int_key(get("max_steps"), "max_steps", 6, 1, 64, &mut diags) as u32;
    let max_queries = get("max_queries")
        .filter(|n| n.value != Value::Null)
        .map(|n| int_key(Some(n), "max_queries", 0, 1, 10_000_000, &mut diags) as u64);
    let max_error_share = share_key(
        get("max_error_share"),
        "max_error_share",
        DEFAULT_MAX_ERROR_SHARE,
        &mut diags,
    );
    let concurrency = int_key(get("concurrency"), "concurrency", 1, 1, 1024, &mut diags) as u32;
    // Independent trials: each trial reruns every unit under its own derived seed.
    let trials = int_key(get("trials"), "trials", 1, 1, 100, &mut diags) as u32;

    let has = |k: &str| get(k).is_some();
    let jail = has("attacks") || has("datasets");
    let inj = has("injections") || has("scenarios");
    let mode = match (jail, inj) {
        (true, true) => {
            let loc = get("injections")
                .or(get("scenarios"))
                .map_or(Loc::default(), |n| n.loc);
            diags.push(
                Diag::new(loc, "", "the config mixes jailbreak axes (attacks/datasets) with injection axes (injections/scenarios)")
                    .with_help("a run is one mode: keep attacks + datasets, or injections + scenarios"),
            );
            Mode::Jailbreak
        }
        (false, true) => Mode::Injection,
        (true, false) => Mode::Jailbreak,
        (false, false) => {
            diags.push(
                Diag::new(root.loc, "", "no evaluation axes")
                    .with_help("give `attacks` and `datasets` (jailbreak/leakage) or `injections` and `scenarios` (injection)"),
            );
            Mode::Jailbreak
        }
    };
    let pair = match mode {
        Mode::Jailbreak => ["attacks", "datasets"],
        Mode::Injection => ["injections", "scenarios"],
    };
    for (a, b) in [(pair[0], pair[1]), (pair[1], pair[0])] {
        if has(a) && !has(b) {
            diags.push(
                Diag::new(
                    get(a).map_or(root.loc, |n| n.loc),
                    b,
                    format!("`{a}` is given but `{b}` is missing"),
                )
                .with_help(format!(
                    "{} mode needs both `{}` and `{}`",
                    mode.as_str(),
                    pair[0],
                    pair[1]
                )),
            );
        }
    }

    let list = |key: &str, axis: Axis, required: bool, diags: &mut Vec<Diag>| -> Vec<PluginSpec> {
        spec_list(catalog, &root, key, axis, required, diags)
    };
    let mut targets = list("targets", Axis::Target, true, &mut diags);
    label_targets(catalog, &mut targets, &mut diags);
    let judges = list("judges", Axis::Judge, true, &mut diags);
    let metrics = list("metrics", Axis::Metric, true, &mut diags);
    // Injection mode runs on the same matrix: injections take the attack axis and
    // scenario suites the dataset axis (`attacks`/`datasets` below).
    let (attacks, datasets) = if mode == Mode::Jailbreak {
        let attacks = list("attacks", Axis::Attack, false, &mut diags);
        (
            match get("transforms") {
                Some(node) => transform_axis(catalog, node, attacks, &mut diags),
                None => attacks,
            },
            list("datasets", Axis::Dataset, false, &mut diags),
        )
    } else {
        if let Some(node) = get("transforms") {
            diags.push(
                Diag::new(
                    node.loc,
                    "transforms",
                    "`transforms` applies to attacks; an injection run has none",
                )
                .with_help("remove `transforms`, or run the attacks in a jailbreak config"),
            );
        }
        let injections = list("injections", Axis::Injection, false, &mut diags);
        let scenarios = list("scenarios", Axis::Scenario, false, &mut diags);
        (
            match get("defenses") {
                Some(node) => defense_axis(node, injections, &mut diags),
                None => injections,
            },
            expand_suites(scenarios, &mut diags),
        )
    };
    if mode == Mode::Jailbreak
        && let Some(node) = get("defenses")
    {
        diags.push(
            Diag::new(
                node.loc,
                "defenses",
                "`defenses` applies to AgentDojo injections; a jailbreak run has none",
            )
            .with_help("remove `defenses`, or run `injections: [{name: agentdojo, …}]` over `scenarios: [{name: agentdojo, …}]`"),
        );
    }
    for (key, specs) in [
        (pair[0], &attacks),
        (pair[1], &datasets),
        ("judges", &judges),
    ] {
        check_unique_labels(key, specs, &mut diags);
    }
    // Metrics are told apart by name and params (asr_at_k with k=1 and k=3 may coexist).
    for (i, s) in metrics.iter().enumerate() {
        if metrics[..i].iter().any(|p| p.identity() == s.identity()) {
            diags.push(
                Diag::new(
                    s.loc,
                    format!("metrics[{i}]"),
                    format!("metric `{}` is listed twice", s.name),
                )
                .with_help("remove the repeated entry"),
            );
        }
    }

    if !diags.is_empty() {
        diags.sort_by_key(|d| d.loc);
        return Err(ConfigError { file: shown, diags });
    }
    let gate = get("gate").and_then(|n| gate_block(n, path, &mut diags));
    if !diags.is_empty() {
        return Err(ConfigError { file: shown, diags });
    }
    Ok(RunConfig {
        gate,
        path: path.to_path_buf(),
        run_name,
        seed,
        max_steps,
        max_queries,
        max_error_share,
        concurrency,
        trials,
        mode,
        targets,
        attacks,
        datasets,
        judges,
        metrics,
    })
}

/// The `defenses:` axis (injection mode): every injection once per entry, in order; an
/// entry is `none` (the injection as it is) or one of AgentDojo's defences, which becomes
/// the injection's `defense` param — so a defended injection is its own cell
/// (`important_instructions+tool_filter`), its own identity and cache keys, and
/// `compare` pairs two defences case by case. Shorthand for writing the injections out
/// with `params: {defense: …}`; what the plan and the config hash see is the expansion.
fn defense_axis(
    node: &Node,
    injections: Vec<PluginSpec>,
    diags: &mut Vec<Diag>,
) -> Vec<PluginSpec> {
    use crate::injection::agentdojo::DEFENSES;
    let known = || format!("none, {}", DEFENSES.join(", "));
    let Some(items) = node.as_seq().filter(|i| !i.is_empty()) else {
        diags.push(
            Diag::new(node.loc, "defenses", "`defenses` must be a non-empty list")
                .with_help(format!("e.g. [none, tool_filter]; known: {}", known())),
        );
        return injections;
    };
    let mut defenses: Vec<Option<&str>> = Vec::with_capacity(items.len());
    for (i, item) in items.iter().enumerate() {
        let path = format!("defenses[{i}]");
        match item.as_str() {
            Some("none") => defenses.push(None),
            Some(d) if DEFENSES.contains(&d) => defenses.push(Some(d)),
            Some("transformers_pi_detector") => diags.push(
                Diag::new(item.loc, path, "defense `transformers_pi_detector` is not supported")
                    .with_help(format!("it needs torch and a model download, which the sidecar's virtualenv does not have; known: {}", known())),
            ),
            Some(d) => diags.push(
                Diag::new(item.loc, path, format!("unknown defense `{d}`"))
                    .with_help(format!("known: {}", known())),
            ),
            None => diags.push(
                Diag::new(item.loc, path, format!("a defense is a name, found {}", item.value.kind()))
                    .with_help(format!("known: {}", known())),
            ),
        }
        if let Some((last, before)) = defenses.split_last()
            && before.contains(last)
            && item.as_str().is_some()
        {
            defenses.pop();
            diags.push(
                Diag::new(
                    item.loc,
                    format!("defenses[{i}]"),
                    "this defense is listed twice",
                )
                .with_help("remove the repeated entry"),
            );
        }
    }
    let mut out = Vec::with_capacity(injections.len() * defenses.len());
    for (k, inj) in injections.into_iter().enumerate() {
        for d in &defenses {
            let Some(d) = d else {
                out.push(inj.clone());
                continue;
            };
            if inj.name != "agentdojo" {
                diags.push(
                    Diag::new(
                        inj.loc,
                        format!("injections[{k}]"),
                        format!(
                            "defense `{d}` applies to `agentdojo` injections, not `{}`",
                            inj.name
                        ),
                    )
                    .with_help(
                        "keep `defenses: [none]` (or drop the key) for the bundled injections",
                    ),
                );
                continue;
            }
            if inj.params.get("defense").is_some() {
                diags.push(
                    Diag::new(
                        inj.loc,
                        format!("injections[{k}].params.defense"),
                        "this injection names its defense and `defenses:` adds more",
                    )
                    .with_help("give defences either in `defenses:` or in the injection's params"),
                );
                continue;
            }
            let mut s = inj.clone();
            s.params
                .insert("defense", ParamValue::Str((*d).to_string()));
            out.push(s);
        }
    }
    out
}

/// An `agentdojo` scenario source listing `suites` becomes one source per suite (its
/// `suite` param), so each suite is its own dataset and report row.
fn expand_suites(specs: Vec<PluginSpec>, diags: &mut Vec<Diag>) -> Vec<PluginSpec> {
    use crate::injection::agentdojo::SUITES;
    let mut out = Vec::with_capacity(specs.len());
    for (i, s) in specs.into_iter().enumerate() {
        let suites = match (s.name.as_str(), s.params.str_list("suites")) {
            ("agentdojo", Some(l)) => l.to_vec(),
            _ => {
                if s.name == "agentdojo" && s.params.get("suite").is_none() {
                    diags.push(
                        Diag::new(
                            s.loc,
                            format!("scenarios[{i}].params"),
                            "an `agentdojo` scenario source needs `suites`",
                        )
                        .with_help(format!(
                            "e.g. suites: [banking, slack]; known: {}",
                            SUITES.join(", ")
                        )),
                    );
                }
                out.push(s);
                continue;
            }
        };
        let path = format!("scenarios[{i}].params.suites");
        if s.params.get("suite").is_some() {
            diags.push(
                Diag::new(s.loc, path, "give `suites` or `suite`, not both")
                    .with_help("`suites: [banking, slack]` runs each as its own scenario source"),
            );
            continue;
        }
        if suites.is_empty() {
            diags.push(
                Diag::new(s.loc, path, "`suites` is empty")
                    .with_help(format!("known: {}", SUITES.join(", "))),
            );
            continue;
        }
        for (k, name) in suites.iter().enumerate() {
            if !SUITES.contains(&name.as_str()) {
                diags.push(
                    Diag::new(
                        s.loc,
                        format!("{path}[{k}]"),
                        format!("unknown AgentDojo suite `{name}`"),
                    )
                    .with_help(format!("known: {}", SUITES.join(", "))),
                );
                continue;
            }
            if suites[..k].contains(name) {
                diags.push(
                    Diag::new(
                        s.loc,
                        format!("{path}[{k}]"),
                        format!("suite `{name}` is listed twice"),
                    )
                    .with_help("remove the repeated entry"),
                );
                continue;
            }
            let mut one = s.clone();
            one.params.remove("suites");
            one.params.insert("suite", ParamValue::Str(name.clone()));
            out.push(one);
        }
    }
    out
}

/// The `gate:` block: a list of rules, or `{rules: [...], baseline: RUN_DIR}` (the
/// baseline relative to the config's directory).
fn gate_block(
    node: &Node,
    path: &Path,
    diags: &mut Vec<Diag>,
) -> Option<crate::gate_rule::GateConfig> {
    let help = format!(
        "`gate:` is a list of rules, or {{rules: [...], baseline: RUN_DIR}}; a rule is {}",
        crate::gate_rule::RULE_SYNTAX
    );
    let (rules_node, baseline) = match &node.value {
        Value::Seq(_) => (Some(node), None),
        Value::Map(entries) => {
            let mut rules = None;
            let mut baseline = None;
            for (k, v) in entries {
                match k.name.as_str() {
                    "rules" => rules = Some(v),
                    "baseline" => match v.as_str() {
                        Some(b) if !b.trim().is_empty() => {
                            let base = path
                                .parent()
                                .filter(|p| !p.as_os_str().is_empty())
                                .unwrap_or(Path::new("."));
                            baseline = Some(base.join(b.trim()));
                        }
                        _ => diags.push(
                            Diag::new(
                                v.loc,
                                "gate.baseline",
                                "`baseline` must be a run directory path",
                            )
                            .with_help(help.clone()),
                        ),
                    },
                    _ => diags.push(unknown_key_diag(k, "gate", &["rules", "baseline"])),
                }
            }
            (rules, baseline)
        }
        other => {
            diags.push(
                Diag::new(
                    node.loc,
                    "gate",
                    format!("`gate` must be a list or a mapping, found {}", other.kind()),
                )
                .with_help(help),
            );
            return None;
        }
    };
    let Some(items) = rules_node.and_then(|n| n.as_seq()) else {
        diags.push(
            Diag::new(node.loc, "gate.rules", "the gate has no `rules` list").with_help(help),
        );
        return None;
    };
    let mut rules = Vec::new();
    for (i, item) in items.iter().enumerate() {
        let at = format!("gate.rules[{i}]");
        match item.as_str() {
            Some(t) => match crate::gate_rule::parse_rule(t) {
                Ok(r) => rules.push(r),
                Err(e) => diags.push(Diag::new(item.loc, at, e.to_string())),
            },
            None => diags.push(
                Diag::new(
                    item.loc,
                    at,
                    format!("a rule is a string, found {}", item.value.kind()),
                )
                .with_help(help.clone()),
            ),
        }
    }
    if rules.is_empty() && diags.is_empty() {
        diags.push(Diag::new(node.loc, "gate.rules", "the gate lists no rule").with_help(help));
    }
    if rules.iter().any(|r| r.is_regression()) && baseline.is_none() {
        diags.push(
            Diag::new(
                node.loc,
                "gate.baseline",
                "a regression rule needs `baseline: RUN_DIR`",
            )
            .with_help("write the gate as {rules: [...], baseline: ../runs/last-release}"),
        );
    }
    // The run is read back (recounted) from the directory its relative datasets resolve
    // against: the config's.
    let config_dir = path
        .parent()
        .filter(|p| !p.as_os_str().is_empty())
        .unwrap_or(Path::new("."))
        .to_path_buf();
    Some(crate::gate_rule::GateConfig {
        rules,
        baseline,
        config_dir: Some(config_dir),
    })
}

/// The `transforms:` axis: every attack once per entry, with the entry's transforms
/// appended to its own chain. An entry is `none` (the attack as it is), a transform spec,
/// or a list of them (one chain). This is shorthand for writing the attacks out with
/// `params: {transforms: [...]}`: the expanded attacks are what the plan, the canonical
/// config (and so the config hash) and every call key see, exactly as if written out.
fn transform_axis(
    catalog: &dyn Catalog,
    node: &Node,
    attacks: Vec<PluginSpec>,
    diags: &mut Vec<Diag>,
) -> Vec<PluginSpec> {
    use gauntlet_core::params::{ParamValue, TRANSFORMS_PARAM};
    let Some(items) = node.as_seq() else {
        diags.push(
            Diag::new(
                node.loc,
                "transforms",
                format!("`transforms` must be a list, found {}", node.value.kind()),
            )
            .with_help("each entry: `none`, a transform (name or {name, params}) or a list of them (a chain)"),
        );
        return attacks;
    };
    if items.is_empty() {
        diags.push(
            Diag::new(node.loc, "transforms", "`transforms` is empty")
                .with_help("give at least one entry, e.g. [none, base64]; known transforms: see `gauntlet list`"),
        );
        return attacks;
    }
    let mut chains: Vec<Vec<PluginSpec>> = Vec::with_capacity(items.len());
    for (i, item) in items.iter().enumerate() {
        let path = format!("transforms[{i}]");
        if item.as_str() == Some("none") {
            chains.push(Vec::new());
            continue;
        }
        let chain: Vec<PluginSpec> = match item.as_seq() {
            Some(steps) => steps
                .iter()
                .enumerate()
                .filter_map(|(k, t)| {
                    resolve_spec(catalog, Axis::Transform, t, &format!("{path}[{k}]"), diags)
                })
                .collect(),
            None => resolve_spec(catalog, Axis::Transform, item, &path, diags)
                .into_iter()
                .collect(),
        };
        chains.push(chain);
    }
    let mut out = Vec::with_capacity(attacks.len() * chains.len());
    for a in &attacks {
        for chain in &chains {
            if chain.is_empty() {
                out.push(a.clone());
                continue;
            }
            let mut t = a.clone();
            let mut full = a
                .params
                .spec_list(TRANSFORMS_PARAM)
                .unwrap_or_default()
                .to_vec();
            full.extend(chain.iter().cloned());
            t.params
                .insert(TRANSFORMS_PARAM, ParamValue::SpecList(full));
            out.push(t);
        }
    }
    out
}

pub fn valid_run_name(s: &str) -> bool {
    gauntlet_job::rundir::plain_name(s)
}

/// A share in [0, 1] (an integer 0 or 1 is accepted as such).
fn share_key(node: Option<&Node>, key: &str, default: f64, diags: &mut Vec<Diag>) -> f64 {
    let Some(n) = node else { return default };
    let v = match n.value {
        Value::Float(f) => Some(f),
        Value::Int(i) => Some(i as f64),
        _ => None,
    };
    match v {
        Some(f) if (0.0..=1.0).contains(&f) => f,
        found => {
            let found = found.map_or_else(|| n.value.kind().to_string(), |f| f.to_string());
            diags.push(
                Diag::new(
                    n.loc,
                    key,
                    format!("{key} must be a number in [0, 1], found {found}"),
                )
                .with_help(format!(
                    "the largest share of judged attempts that may end in an error, e.g. `{key}: 0.2` (the default)"
                )),
            );
            default
        }
    }
}

fn int_key(
    node: Option<&Node>,
    key: &str,
    default: i64,
    min: i64,
    max: i64,
    diags: &mut Vec<Diag>,
) -> i64 {
    let Some(n) = node else { return default };
    let range = if max == i64::MAX {
        format!("an integer in {min}..={max} (2^63 − 1)")
    } else {
        format!("an integer in {min}..={max}")
    };
    let out_of_range = |shown: String, diags: &mut Vec<Diag>| {
        diags.push(
            Diag::new(n.loc, key, format!("{key} = {shown} is out of range"))
                .with_help(format!("expected {range}")),
        );
        default
    };
    match n.value {
        Value::Int(i) if (min..=max).contains(&i) => i,
        Value::Int(i) => out_of_range(i.to_string(), diags),
        // An integer too large for 64 bits reaches here as a number.
        Value::Float(f) if f.fract() == 0.0 && f.abs() >= 9.2e18 => {
            out_of_range(format!("{f:.0}"), diags)
        }
        _ => {
            diags.push(Diag::new(
                n.loc,
                key,
                format!("{key} must be an integer, found {}", n.value.kind()),
            ));
            default
        }
    }
}

fn spec_list(
    catalog: &dyn Catalog,
    root: &Node,
    key: &str,
    axis: Axis,
    required: bool,
    diags: &mut Vec<Diag>,
) -> Vec<PluginSpec> {
    let known = || {
        format!(
            "known {}s: {}",
            axis.as_str(),
            catalog.names(axis).join(", ")
        )
    };
    let Some(node) = root.get(key) else {
        if required {
            diags.push(
                Diag::new(root.loc, key, format!("missing required key `{key}`"))
                    .with_help(format!("give a list of at least one; {}", known())),
            );
        }
        return Vec::new();
    };
    let Some(items) = node.as_seq() else {
        diags.push(
            Diag::new(
                node.loc,
                key,
                format!("`{key}` must be a list, found {}", node.value.kind()),
            )
            .with_help(known()),
        );
        return Vec::new();
    };
    if items.is_empty() {
        diags.push(
            Diag::new(node.loc, key, format!("`{key}` is empty"))
                .with_help(format!("give at least one; {}", known())),
        );
    }
    items
        .iter()
        .enumerate()
        .filter_map(|(i, item)| resolve_spec(catalog, axis, item, &format!("{key}[{i}]"), diags))
        .collect()
}

/// Cells are told apart by labels (a target's or dataset's `name` param, else the plugin
/// name); two plugins with one label would merge in reports and on the leaderboard.
fn check_unique_labels(key: &str, specs: &[PluginSpec], diags: &mut Vec<Diag>) {
    for (i, s) in specs.iter().enumerate() {
        if let Some(first) = specs[..i]
            .iter()
            .find(|p| p.label() == s.label() && p.identity() != s.identity())
        {
            let help = if s.params.get("name").is_some() || first.params.get("name").is_some() {
                "give each a distinct `name` param so their results stay apart"
            } else {
                "cells are labelled by plugin name here: run the variants as separate configs"
            };
            diags.push(
                Diag::new(
                    s.loc,
                    format!("{key}[{i}]"),
                    format!(
                        "two {key} share the label `{}` (first at line {})",
                        s.label(),
                        first.loc.line
                    ),
                )
                .with_help(help),
            );
        } else if let Some(first) = specs[..i].iter().find(|p| p.identity() == s.identity()) {
            diags.push(
                Diag::new(
                    s.loc,
                    format!("{key}[{i}]"),
                    format!(
                        "`{}` is listed twice (first at line {})",
                        s.label(),
                        first.loc.line
                    ),
                )
                .with_help("remove the repeated entry"),
            );
        }
    }
}

/// Params a derived target label shows by value alone; every other differing param shows
/// as `key=value`.
const BARE_LABEL_PARAMS: &[&str] = &["model"];

/// Gives targets that would share a label distinct ones, and reports those that cannot
/// be told apart.
///
/// A target's label is its `name` param (or, for a target whose `name` is left at the
/// plugin's default, the plugin name). Targets of one plugin left unnamed — two
/// `anthropic` models, say — are labelled by what differs between them: the plugin name,
/// then each differing param, `model` by its value alone and the others as `key=value`
/// (`anthropic/claude-haiku-4-5`, `openai_compat/gpt-4o/temperature=0.7`), a list as JSON
/// (`bypass_markers=["x"]`); a value that is long (over 64 characters), empty, or a
/// mapping shows as `key#` and the first 8 hex of its sha256. A target's label leaves out
/// the differing params it leaves unset or at the plugin's default (so of two otherwise
/// equal models, the one at the default temperature is just `anthropic/<model>`); two
/// distinct targets still never render alike. The labels depend only on the group's
/// resolved params, so a run read back from its `run.json` gets the same ones; configs
/// whose targets already had distinct labels keep them. Labels are not part of any
/// identity: cache keys never depend on them.
///
/// Still errors: a target listed twice (identical params), and explicit `name`s (or a
/// derived label and a `name`) that coincide.
fn label_targets(catalog: &dyn Catalog, specs: &mut [PluginSpec], diags: &mut Vec<Diag>) {
    let key = "targets";
    let ids: Vec<serde_json::Value> = specs.iter().map(PluginSpec::identity).collect();
    let mut repeated = vec![false; specs.len()];
    for i in 0..specs.len() {
        if let Some(j) = (0..i).find(|&j| ids[j] == ids[i]) {
            repeated[i] = true;
            repeated[j] = true;
            diags.push(
                Diag::new(
                    specs[i].loc,
                    format!("{key}[{i}]"),
                    format!(
                        "{key}[{i}] (line {}) and {key}[{j}] (line {}) are the same `{}` target: every param is equal",
                        specs[i].loc.line,
                        specs[j].loc.line,
                        specs[i].name
                    ),
                )
                .with_help("remove the repeated entry (to run a target more than once, use `trials`)"),
            );
        }
    }
    // Unnamed targets grouped by the label each would get on its own.
    let unnamed = |s: &PluginSpec| {
        let default = catalog
            .find(Axis::Target, &s.name)
            .and_then(|info| info.params.iter().find(|p| p.name == "name"))
            .map(|p| p.default);
        match (s.params.str("name"), default) {
            (None, _) => true,
            (Some(n), Some(DefaultValue::Str(d))) => n == d,
            _ => false,
        }
    };
    let mut groups: BTreeMap<String, Vec<usize>> = BTreeMap::new();
    for (i, s) in specs.iter().enumerate() {
        if unnamed(s) {
            groups.entry(s.own_label()).or_default().push(i);
        }
    }
    for members in groups.values() {
        if members.len() < 2 || members.iter().any(|&i| repeated[i]) {
            continue;
        }
        let group: Vec<&PluginSpec> = members.iter().map(|&i| &specs[i]).collect();
        let labels = derived_labels(catalog, &group);
        for (&i, label) in members.iter().zip(labels) {
            specs[i].label = Some(label);
        }
    }
    for i in 0..specs.len() {
        if repeated[i] {
            continue;
        }
        let label = specs[i].label();
        let Some(j) = (0..i).find(|&j| !repeated[j] && specs[j].label() == label) else {
            continue;
        };
        let named = |s: &PluginSpec| s.label.is_none() && !unnamed(s);
        let help = if named(&specs[i]) && named(&specs[j]) {
            "give each a distinct `name` param so their results stay apart"
        } else {
            "give one of them a `name` param (its label) so their results stay apart"
        };
        diags.push(
            Diag::new(
                specs[i].loc,
                format!("{key}[{i}]"),
                format!(
                    "{key}[{i}] (line {}) and {key}[{j}] (line {}) share the label `{label}`",
                    specs[i].loc.line, specs[j].loc.line
                ),
            )
            .with_help(help),
        );
    }
}

/// Gives specs of one axis that would share a label (two variants of one judge, say) the
/// labels [`derived_labels`] makes: the plugin name and the params that tell them apart.
/// Specs with labels of their own, and identical specs, are left as they are (an
/// identical spec given twice is the caller's error to name).
pub fn distinct_labels(catalog: &dyn Catalog, axis: Axis, specs: &mut [PluginSpec]) {
    let mut groups: BTreeMap<String, Vec<usize>> = BTreeMap::new();
    for (i, s) in specs.iter().enumerate() {
        if s.label.is_none() {
            groups.entry(s.own_label()).or_default().push(i);
        }
    }
    for members in groups.values() {
        if members.len() < 2 {
            continue;
        }
        let group: Vec<&PluginSpec> = members.iter().map(|&i| &specs[i]).collect();
        let labels = derived_labels_on(catalog, axis, &group);
        for (&i, label) in members.iter().zip(labels) {
            specs[i].label = Some(label);
        }
    }
}

/// The labels of a group of distinct specs that would share one: the plugin name followed
/// by every param whose value is not the same across the group and not the plugin's
/// default for this spec (see [`label_targets`]).
fn derived_labels(catalog: &dyn Catalog, group: &[&PluginSpec]) -> Vec<String> {
    derived_labels_on(catalog, Axis::Target, group)
}

/// [`derived_labels`] for specs of any axis (the plugin's defaults looked up there).
fn derived_labels_on(catalog: &dyn Catalog, axis: Axis, group: &[&PluginSpec]) -> Vec<String> {
    let mut keys: Vec<&str> = group
        .iter()
        .flat_map(|s| s.params.iter().map(|(k, _)| k.as_str()))
        .collect();
    keys.sort_by_key(|k| (!BARE_LABEL_PARAMS.contains(k), *k));
    keys.dedup();
    keys.retain(|k| {
        group
            .iter()
            .any(|s| s.params.get(k) != group[0].params.get(k))
    });
    group
        .iter()
        .map(|s| {
            let mut label = s.name.clone();
            let info = catalog.find(axis, &s.name);
            for k in &keys {
                let Some(v) = s.params.get(k) else { continue };
                let default = info
                    .and_then(|i| i.params.iter().find(|p| p.name == *k))
                    .map(|p| p.default);
                if default.is_some_and(|d| is_default(d, v)) {
                    continue;
                }
                label.push('/');
                label.push_str(&label_part(k, v));
            }
            label
        })
        .collect()
}

/// Whether a resolved value is the param's literal default.
fn is_default(default: DefaultValue, v: &ParamValue) -> bool {
    match (default, v) {
        (DefaultValue::Str(d), ParamValue::Str(s)) => d == s,
        (DefaultValue::Int(d), ParamValue::Int(i)) => d == *i,
        (DefaultValue::Float(d), ParamValue::Float(f)) => d == *f,
        (DefaultValue::Float(d), ParamValue::Int(i)) => d == *i as f64,
        (DefaultValue::Bool(d), ParamValue::Bool(b)) => d == *b,
        (DefaultValue::StrList(d), ParamValue::StrList(l)) => d == l.as_slice(),
        _ => false,
    }
}

/// One param in a derived label.
fn label_part(key: &str, v: &ParamValue) -> String {
    let scalar = match v {
        ParamValue::Str(s) => Some(s.clone()),
        ParamValue::Int(i) => Some(i.to_string()),
        ParamValue::Float(f) => Some(f.to_string()),
        ParamValue::Bool(b) => Some(b.to_string()),
        // Short lists as JSON (`bypass_markers=["x"]`), unambiguous.
        ParamValue::StrList(_) => serde_json::to_string(v).ok(),
        ParamValue::StrMap(_)
        | ParamValue::Spec(_)
        | ParamValue::SpecList(_)
        | ParamValue::Json(_) => None,
    };
    match scalar {
        Some(s) if !s.is_empty() && s.chars().count() <= 64 && !s.chars().any(char::is_control) => {
            if BARE_LABEL_PARAMS.contains(&key) {
                s
            } else {
                format!("{key}={s}")
            }
        }
        _ => {
            let json = serde_json::to_string(v).expect("params serialise");
            format!(
                "{key}#{}",
                &gauntlet_core::hash::sha256_hex(json.as_bytes())[..8]
            )
        }
    }
}
/// Why the config a `run.json` records cannot be read back ([`recorded_config`]).
#[derive(Debug, thiserror::Error)]
pub enum RecordedConfigError {
    /// `run.json` has no `config` object.
    #[error("{}: no `config` object (the resolved config the run used)", .path.display())]
    NoConfig { path: PathBuf },
    /// The recorded config no longer validates with this build.
    #[error(
        "the config recorded in {} no longer validates with this build:\n{source}",
        .path.display()
    )]
    Invalid {
        path: PathBuf,
        #[source]
        source: ConfigError,
    },
}

/// The config recorded in a `run.json` (its `config` object), validated again by this
/// build — specs resolved and labelled as the run had them — without loading any dataset
/// or building any plugin. `path` names the file in errors; `any_mode` also accepts an
/// injection run (whose canonical config names its axes `attacks` and `datasets`). The
/// dashboard reads configs this way to compare what two runs were made of.
pub fn recorded_config(
    run_json: &gauntlet_results::RunRecord,
    path: &Path,
    any_mode: bool,
) -> Result<RunConfig, RecordedConfigError> {
    let serde_json::Value::Object(config) = &run_json.config else {
        return Err(RecordedConfigError::NoConfig {
            path: path.to_path_buf(),
        });
    };
    // `mode` is derived from the axes, not a config key.
    let mut config = config.clone();
    let mode = config.remove("mode");
    // An injection run's canonical config names its axes `attacks` and `datasets`;
    // its file calls them `injections` and `scenarios`.
    if any_mode && mode.as_ref().and_then(|m| m.as_str()) == Some("injection") {
        for (from, to) in [("attacks", "injections"), ("datasets", "scenarios")] {
            if let Some(v) = config.remove(from) {
                config.insert(to.into(), v);
            }
        }
    }
    let text = serde_json::to_string(&config).expect("json");
    // JSON is YAML: the canonical config goes through the same validation as a file.
    let mut cfg = parse(&text, path, &crate::registry::Registry).map_err(|source| {
        RecordedConfigError::Invalid {
            path: path.to_path_buf(),
            source,
        }
    })?;
    // Recorded beside the canonical config, and only when not the default.
    if let Some(share) = run_json.max_error_share.filter(|s| (0.0..=1.0).contains(s)) {
        cfg.max_error_share = share;
    }
    Ok(cfg)
}
