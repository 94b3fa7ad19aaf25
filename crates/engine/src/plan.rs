//! The plan: a validated config turned into built plugins and loaded datasets.
//!
//! Its shape fixes the canonical order of everything a run writes: units (one behavior
//! under one attack against one target) are numbered attack-major, then target, dataset
//! and behavior; cells (unit groups × judge) follow the same order. Output order comes
//! from here, never from completion order.

use crate::usage::PriceTable;
use gauntlet_core::hash::{HashWriter, sha256_hex};
use gauntlet_core::judge_eval::JudgeCard;
use gauntlet_core::params::{Diag, PluginSpec};
use gauntlet_models::Model;
use gauntlet_models::registry::{build_target, build_target_for_check};
use gauntlet_redteam::attack::Attack;
use gauntlet_redteam::config::{ConfigError, Mode, RunConfig};
use gauntlet_redteam::datasets::{self, Dataset};
use gauntlet_redteam::judge::Judge;
use gauntlet_redteam::metrics::Metric;
use gauntlet_redteam::metrics::UsageMetric;
use gauntlet_redteam::registry::{build_attack, build_injection, build_judge, build_metric};
use std::path::{Path, PathBuf};
use std::sync::Arc;

pub struct Plan {
    pub config: RunConfig,
    /// sha256 of the canonical resolved config.
    pub config_hash: String,
    /// `<run_name>-<config_hash[..12]>`.
    pub run_id: String,
    pub targets: Vec<Arc<dyn Model>>,
    pub attacks: Vec<Box<dyn Attack>>,
    pub datasets: Vec<Dataset>,
    pub judges: Vec<Box<dyn Judge>>,
    /// The grader model of each judge that has one.
    pub graders: Vec<Option<Arc<dyn Model>>>,
    /// The judge card each judge names (`card:`), loaded and checked against the judge.
    pub cards: Vec<Option<Arc<JudgeCard>>>,
    /// Cards measured on one target's own replies (`gauntlet label`): `(judge, target,
    /// card)`. Where one exists it corrects that target's cells instead of `cards`.
    pub label_cards: Vec<(usize, usize, Arc<JudgeCard>)>,
    /// The attacker model of each attack that has one (`pair`, `tap`, `crescendo`).
    pub attackers: Vec<Option<Arc<dyn Model>>>,
    /// The grader of each attack's in-loop judge, when that judge has one.
    pub attack_graders: Vec<Option<Arc<dyn Model>>>,
    pub metrics: Vec<Box<dyn Metric>>,
    /// The price table of each `cost` metric (`None` for other metrics).
    pub prices: Vec<Option<PriceTable>>,
    /// How the units are laid out (see [`Layout`]).
    layout: Layout,
}

/// Where each unit sits in the canonical order. A unit is one behavior under one
/// attack against one target, for every behavior the attack applies to
/// ([`Attack::applies_to`]): an attack that applies to a part of a dataset (an imported
/// probe's own prompts) has units for that part only, so the pairs it does not apply to
/// cost nothing. Units are numbered attack-major; within an attack, target, then
/// dataset, then the applicable behaviors in dataset order.
#[derive(Debug, Clone, Default)]
struct Layout {
    /// Per attack, per dataset: the behaviors the attack applies to, ascending (`None`:
    /// all of them).
    selected: Vec<Vec<Option<Arc<[u32]>>>>,
    /// Per attack, per dataset: the first unit of the dataset within one of the
    /// attack's (attack, target) blocks.
    offsets: Vec<Vec<u64>>,
    /// Per attack: the units of one (attack, target) block.
    block: Vec<u64>,
    /// Per attack: the units of one target's blocks of the attacks before it (its first
    /// unit is this × the number of targets, which a stored run's plan sets after the
    /// build).
    starts: Vec<u64>,
    /// The units of one target's blocks of every attack.
    total: u64,
}

impl Layout {
    fn new(attacks: &[Box<dyn Attack>], datasets: &[Dataset]) -> Layout {
        let mut l = Layout::default();
        for a in attacks {
            let mut sel = Vec::with_capacity(datasets.len());
            let mut offs = Vec::with_capacity(datasets.len());
            let mut acc = 0u64;
            for d in datasets {
                offs.push(acc);
                let all = d.behaviors.iter().all(|b| a.applies_to(b));
                if all {
                    acc += d.behaviors.len() as u64;
                    sel.push(None);
                } else {
                    let some: Arc<[u32]> = d
                        .behaviors
                        .iter()
                        .enumerate()
                        .filter(|(_, b)| a.applies_to(b))
                        .map(|(i, _)| i as u32)
                        .collect();
                    acc += some.len() as u64;
                    sel.push(Some(some));
                }
            }
            l.starts.push(l.total);
            l.total += acc;
            l.block.push(acc);
            l.selected.push(sel);
            l.offsets.push(offs);
        }
        l
    }

    /// The units of dataset `d` in one of attack `a`'s blocks.
    fn len(&self, a: usize, d: usize, datasets: &[Dataset]) -> u64 {
        match &self.selected[a][d] {
            None => datasets[d].behaviors.len() as u64,
            Some(s) => s.len() as u64,
        }
    }
}

/// Coordinates of one unit.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct UnitRef {
    pub attack: usize,
    pub target: usize,
    pub dataset: usize,
    pub behavior: usize,
}

/// The config keys of the attack and dataset axes in a mode, and what a dataset is called.
fn axis_key(mode: Mode) -> (&'static str, &'static str, &'static str) {
    match mode {
        Mode::Jailbreak => ("attacks", "datasets", "dataset"),
        Mode::Injection => ("injections", "scenarios", "scenario suite"),
    }
}

/// Keeps a built model, its warning in `warnings`, or its error in `diags`.
fn keep_model(
    built: Built,
    loc: gauntlet_core::tree::Loc,
    path: String,
    diags: &mut Vec<Diag>,
    warnings: &mut Vec<Diag>,
) -> Option<Arc<dyn Model>> {
    match built {
        Ok((m, warning)) => {
            if let Some(w) = warning {
                warnings.push(Diag::new(loc, path, w).with_help(
                    "set it before `gauntlet run` (keys are read only from the environment)",
                ));
            }
            Some(m)
        }
        Err(e) => {
            diags.push(Diag::new(loc, path, e.to_string()));
            None
        }
    }
}

/// One warning per message (an unset key variable shared by four targets is one
/// warning), at the first place it occurs, with every key path.
fn merge_same_message(warnings: Vec<Diag>) -> Vec<Diag> {
    let mut out: Vec<Diag> = Vec::new();
    for w in warnings {
        match out.iter_mut().find(|o| o.message == w.message) {
            Some(o) => {
                o.path.push_str(", ");
                o.path.push_str(&w.path);
            }
            None => out.push(w),
        }
    }
    out
}

/// The plugins [`Plan::build`] builds, before they join the datasets.
struct Plugins {
    targets: Vec<Arc<dyn Model>>,
    attacks: Vec<Box<dyn Attack>>,
    judges: Vec<Box<dyn Judge>>,
    graders: Vec<Option<Arc<dyn Model>>>,
    cards: Vec<Option<Arc<JudgeCard>>>,
    attackers: Vec<Option<Arc<dyn Model>>>,
    attack_graders: Vec<Option<Arc<dyn Model>>>,
    metrics: Vec<Box<dyn Metric>>,
    prices: Vec<Option<PriceTable>>,
}

/// Why the judge card a judge's `card:` names cannot be used; each message names the
/// card's file.
#[derive(Debug, thiserror::Error)]
pub enum LoadCardError {
    /// The card's file cannot be read.
    #[error("cannot read the judge card {}: {source}", path.display())]
    Read {
        path: PathBuf,
        #[source]
        source: std::io::Error,
    },
    /// Not a regular file, or larger than 1 MiB.
    #[error(
        "the judge card {} must be a regular file of at most 1 MiB (write one with `gauntlet judge-eval --card JUDGE`)",
        path.display()
    )]
    NotACardFile { path: PathBuf },
    /// Not JSON of a judge card's shape.
    #[error("{} is not a judge card: {source}", path.display())]
    Parse {
        path: PathBuf,
        #[source]
        source: serde_json::Error,
    },
    /// A card that breaks its invariants.
    #[error("judge card {}: {source}", path.display())]
    Invalid {
        path: PathBuf,
        #[source]
        source: gauntlet_core::judge_eval::CardError,
    },
    /// A card measured on another judge: `spec` and `spec_sha256` are the card's,
    /// `own` the hash of this judge's spec.
    #[error(
        "judge card {} was measured on judge {spec} (spec sha256 {spec_sha256}), not on this judge (spec sha256 {own}); measure this judge with `gauntlet judge-eval --judge SPEC --card LABEL`",
        path.display()
    )]
    OtherJudge {
        path: PathBuf,
        spec: serde_json::Value,
        spec_sha256: String,
        own: String,
    },
}

/// Reads and checks the judge card at `path` for the judge `spec`: a valid card
/// (format, counts) measured on this very judge (the card's spec hash equals the judge's
/// key identity, which leaves `card` itself out). A card measured by another gauntlet
/// version is accepted with a warning (the refusal rules may have changed since).
pub(crate) fn load_card(
    path: &Path,
    spec: &PluginSpec,
) -> Result<(JudgeCard, Option<String>), LoadCardError> {
    const MAX_CARD_BYTES: u64 = 1 << 20;
    let shown = path.display();
    let read = |source| LoadCardError::Read {
        path: path.to_path_buf(),
        source,
    };
    const CARD: gauntlet_core::files::Kind = gauntlet_core::files::Kind {
        what: "judge card",
        max_bytes: MAX_CARD_BYTES,
    };
    let bytes = gauntlet_core::files::read(path, CARD).map_err(|e| match e {
        gauntlet_core::files::ReadError::Io { source, .. } => read(source),
        _ => LoadCardError::NotACardFile {
            path: path.to_path_buf(),
        },
    })?;
    let card: JudgeCard =
        serde_json::from_slice(&bytes).map_err(|source| LoadCardError::Parse {
            path: path.to_path_buf(),
            source,
        })?;
    card.validate().map_err(|source| LoadCardError::Invalid {
        path: path.to_path_buf(),
        source,
    })?;
    let own = sha256_hex(spec.key_identity().to_string().as_bytes());
    if card.spec_sha256 != own {
        return Err(LoadCardError::OtherJudge {
            path: path.to_path_buf(),
            spec: card.spec,
            spec_sha256: card.spec_sha256,
            own,
        });
    }
    let warning = (card.harness_version != gauntlet_core::HARNESS_VERSION).then(|| {
        format!(
            "judge card {shown} was measured with gauntlet {} (this is {}); its error rates may not describe this version's judge",
            card.harness_version,
            gauntlet_core::HARNESS_VERSION
        )
    });
    Ok((card, warning))
}

/// The version a [`Plan::check`] gives a dataset it could not download.
pub const NOT_LOADED: &str = "not loaded";

/// How [`Plan::build`] treats problems of the environment rather than of the config.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Strictness {
    /// Every problem is an error: a run needs its keys and its data.
    Run,
    /// An unset or empty API-key variable and a dataset that cannot be downloaded right
    /// now are warnings (`gauntlet validate`).
    Check,
}

/// A model built from a spec, and the warning its build left (check mode only).
type Built = Result<(Arc<dyn Model>, Option<String>), gauntlet_models::ModelError>;

fn build_model(strictness: Strictness, spec: &gauntlet_core::params::PluginSpec) -> Built {
    match strictness {
        Strictness::Run => build_target(spec).map(|m| (m, None)),
        Strictness::Check => build_target_for_check(spec),
    }
}

impl Plan {
    /// The card that corrects the cells of judge `ji` × target `ti`: the one measured on
    /// that target's own labelled replies, else the judge's configured `card:`.
    pub fn card_for(&self, ji: usize, ti: usize) -> Option<&JudgeCard> {
        self.label_cards
            .iter()
            .find(|(j, t, _)| *j == ji && *t == ti)
            .map(|(_, _, c)| c.as_ref())
            .or(self.cards[ji].as_deref())
    }

    /// The price table of usage.json, the cost metric and `--estimate`: the first
    /// configured, else the bundled one.
    pub fn price_table(&self) -> PriceTable {
        self.prices
            .iter()
            .flatten()
            .next()
            .cloned()
            .unwrap_or_else(PriceTable::bundled)
    }

    /// Builds every plugin and loads every dataset. Errors name the config file and the
    /// spec's line.
    pub fn build(config: RunConfig) -> Result<Plan, ConfigError> {
        Self::build_as(config, Strictness::Run).map(|(plan, _)| plan)
    }

    /// Builds the plan as [`Plan::build`] does for `gauntlet validate`, where an API-key
    /// variable that is not set (or empty) and a dataset that cannot be downloaded right
    /// now (network or server failure, `GAUNTLET_OFFLINE`) are warnings, returned with
    /// the plan, instead of errors: a config can be checked before the keys and the
    /// network are at hand. The plan is for inspection only and must never run: such a
    /// target holds a stand-in key, and such a dataset is empty with version
    /// [`NOT_LOADED`]. Warnings with the same message are merged, naming every place.
    pub fn check(config: RunConfig) -> Result<(Plan, Vec<Diag>), ConfigError> {
        Self::build_as(config, Strictness::Check)
    }

    fn build_as(
        config: RunConfig,
        strictness: Strictness,
    ) -> Result<(Plan, Vec<Diag>), ConfigError> {
        // Loading the datasets (read, hash, parse: tens of ms for a large set) and hashing
        // the canonical config (it holds every plugin parameter) do not depend on the
        // plugins, so they run on their own threads while this one builds the plugins.
        // Diagnostics keep the order of a serial build.
        let built = std::thread::scope(|scope| {
            let datasets = scope.spawn(|| {
                config
                    .datasets
                    .iter()
                    .map(|s| datasets::load(s, config.base_dir()))
                    .collect::<Vec<_>>()
            });
            let config_hash = scope.spawn(|| {
                let mut h = HashWriter::new();
                h.json(&config.canonical());
                h.finish_hex()
            });
            let plugins = Self::build_plugins(&config, strictness);
            let datasets = datasets.join().expect("dataset loading does not panic");
            let config_hash = config_hash.join().expect("hashing does not panic");
            (plugins, datasets, config_hash)
        });
        let ((plugins, diags, warnings), datasets, config_hash) = built;
        Self::assemble(
            config,
            plugins,
            diags,
            warnings,
            datasets,
            config_hash,
            strictness,
        )
    }

    fn build_plugins(
        config: &RunConfig,
        strictness: Strictness,
    ) -> (Plugins, Vec<Diag>, Vec<Diag>) {
        let mut diags = Vec::new();
        let mut warnings = Vec::new();

        // Targets are built side by side: an offline one may index a large memory (the
        // reference memorizer's secrets).
        let built: Vec<Built> = std::thread::scope(|scope| {
            let handles: Vec<_> = config
                .targets
                .iter()
                .map(|s| scope.spawn(move || build_model(strictness, s)))
                .collect();
            handles
                .into_iter()
                .map(|h| h.join().expect("building a target does not panic"))
                .collect()
        });
        let mut targets = Vec::new();
        for (i, (s, b)) in config.targets.iter().zip(built).enumerate() {
            let path = format!("targets[{i}]");
            if let Some(t) = keep_model(b, s.loc, path, &mut diags, &mut warnings) {
                targets.push(t);
            }
        }
        let mut attacks = Vec::new();
        let mut attackers = Vec::new();
        let mut attack_graders = Vec::new();
        for (i, s) in config.attacks.iter().enumerate() {
            let built = match config.mode {
                Mode::Injection => build_injection(s, config.max_steps),
                Mode::Jailbreak => build_attack(s),
            };
            match built {
                Ok(a) => {
                    let mut model = |spec: Option<&gauntlet_core::params::PluginSpec>,
                                     what: &str| {
                        spec.and_then(|g| {
                            let path = format!("attacks[{i}].params.{what}");
                            let b = build_model(strictness, g);
                            keep_model(b, g.loc, path, &mut diags, &mut warnings)
                        })
                    };
                    attackers.push(model(a.attacker(), "attacker"));
                    attack_graders.push(model(a.judge_grader(), "judge.params.grader"));
                    attacks.push(a);
                }
                Err(e) => diags.push(Diag::new(
                    s.loc,
                    format!("{}[{i}]", axis_key(config.mode).0),
                    e.to_string(),
                )),
            }
        }
        let mut judges = Vec::new();
        let mut graders = Vec::new();
        let mut cards = Vec::new();
        for (i, s) in config.judges.iter().enumerate() {
            match build_judge(s) {
                Ok(j) => {
                    let grader = j.grader().and_then(|g| {
                        let path = format!("judges[{i}].params.grader");
                        let b = build_model(strictness, g);
                        keep_model(b, g.loc, path, &mut diags, &mut warnings)
                    });
                    let card = s.params.str("card").and_then(|p| {
                        match load_card(&config.base_dir().join(p), s) {
                            Ok((card, warning)) => {
                                if let Some(w) = warning {
                                    warnings.push(Diag::new(
                                        s.loc,
                                        format!("judges[{i}].params.card"),
                                        w,
                                    ));
                                }
                                Some(Arc::new(card))
                            }
                            Err(e) => {
                                diags.push(Diag::new(
                                    s.loc,
                                    format!("judges[{i}].params.card"),
                                    e.to_string(),
                                ));
                                None
                            }
                        }
                    });
                    graders.push(grader);
                    cards.push(card);
                    judges.push(j);
                }
                Err(e) => diags.push(Diag::new(s.loc, format!("judges[{i}]"), e.to_string())),
            }
        }
        let mut err = |loc, path: String, msg: String| diags.push(Diag::new(loc, path, msg));
        let mut metrics = Vec::new();
        let mut prices = Vec::new();
        for (i, s) in config.metrics.iter().enumerate() {
            match build_metric(s) {
                Ok(m) => {
                    let table = match m.usage_metric() {
                        Some(UsageMetric::Cost) => match s.params.str("price_table") {
                            None => Some(PriceTable::bundled()),
                            Some(p) => match PriceTable::load(&config.base_dir().join(p)) {
                                Ok(t) => Some(t),
                                Err(e) => {
                                    err(
                                        s.loc,
                                        format!("metrics[{i}].params.price_table"),
                                        e.to_string(),
                                    );
                                    None
                                }
                            },
                        },
                        _ => None,
                    };
                    prices.push(table);
                    metrics.push(m);
                }
                Err(e) => err(s.loc, format!("metrics[{i}]"), e.to_string()),
            }
        }
        (
            Plugins {
                targets,
                attacks,
                judges,
                graders,
                cards,
                attackers,
                attack_graders,
                metrics,
                prices,
            },
            diags,
            warnings,
        )
    }

    /// Joins the plugins and the datasets into the plan, or reports every diagnostic:
    /// the plugins' first, then the datasets' in config order. In check mode a dataset
    /// that cannot be downloaded right now is a warning and an empty stand-in.
    fn assemble(
        config: RunConfig,
        plugins: Plugins,
        mut diags: Vec<Diag>,
        mut warnings: Vec<Diag>,
        results: Vec<Result<Dataset, datasets::DatasetError>>,
        config_hash: String,
        strictness: Strictness,
    ) -> Result<(Plan, Vec<Diag>), ConfigError> {
        let mut loaded = Vec::new();
        for (i, (s, r)) in config.datasets.iter().zip(results).enumerate() {
            let (key, what) = (axis_key(config.mode).1, axis_key(config.mode).2);
            match r {
                Ok(d) => loaded.push(d),
                Err(e) if e.unreachable && strictness == Strictness::Check => {
                    warnings.push(
                        Diag::new(
                            s.loc,
                            format!("{key}[{i}]"),
                            format!("{what} `{}` cannot be downloaded right now: {e}", s.label()),
                        )
                        .with_help("`gauntlet run` needs it: run where the source is reachable, or put the file in the cache first"),
                    );
                    loaded.push(Dataset {
                        name: s.label(),
                        version: NOT_LOADED.to_string(),
                        sha256: String::new(),
                        behaviors: Vec::new(),
                        provenance: None,
                    });
                }
                Err(e) => diags.push(Diag::new(
                    s.loc,
                    format!("{key}[{i}]"),
                    format!("{what} `{}`: {e}", s.label()),
                )),
            }
        }
        if !diags.is_empty() {
            let file = config.path.display().to_string();
            return Err(ConfigError { file, diags });
        }
        let warnings = merge_same_message(warnings);
        let run_id = format!("{}-{}", config.run_name, &config_hash[..12]);
        let layout = Layout::new(&plugins.attacks, &loaded);
        let plan = Plan {
            config,
            config_hash,
            run_id,
            targets: plugins.targets,
            attacks: plugins.attacks,
            datasets: loaded,
            judges: plugins.judges,
            graders: plugins.graders,
            cards: plugins.cards,
            label_cards: Vec::new(),
            attackers: plugins.attackers,
            attack_graders: plugins.attack_graders,
            metrics: plugins.metrics,
            prices: plugins.prices,
            layout,
        };
        Ok((plan, warnings))
    }

    /// Units in one trial: per attack, targets × the behaviors it applies to (over all
    /// datasets).
    pub fn units(&self) -> u64 {
        self.layout.total * self.targets.len() as u64
    }

    /// Attempts planned at most (each attack's maximum per behavior it applies to).
    pub fn max_attempts(&self) -> u64 {
        self.attacks
            .iter()
            .enumerate()
            .map(|(a, at)| u64::from(at.max_attempts()) * self.layout.block[a])
            .sum::<u64>()
            * self.targets.len() as u64
    }

    /// Whether attack `a` applies to behavior `b` of dataset `d` (whether the pair is a
    /// unit of the plan at all).
    pub fn applies(&self, a: usize, d: usize, b: usize) -> bool {
        match &self.layout.selected[a][d] {
            None => b < self.datasets[d].behaviors.len(),
            Some(s) => s.binary_search(&(b as u32)).is_ok(),
        }
    }

    /// The units of attack `a` × dataset `d` in one (attack, target) block: the
    /// behaviors of the dataset the attack applies to.
    pub fn cell_units(&self, a: usize, d: usize) -> u64 {
        self.layout.len(a, d, &self.datasets)
    }

    /// The run's mode as reports and run.json name it: `leakage` for a jailbreak-shaped
    /// config whose every dataset is a leakage set (every behavior has a
    /// `target_secret`), else the config's mode.
    pub fn mode_label(&self) -> &'static str {
        let leakage = |d: &Dataset| {
            !d.behaviors.is_empty() && d.behaviors.iter().all(|b| b.target_secret.is_some())
        };
        if self.config.mode == gauntlet_redteam::config::Mode::Jailbreak
            && !self.datasets.is_empty()
            && self.datasets.iter().all(leakage)
        {
            "leakage"
        } else {
            self.config.mode.as_str()
        }
    }

    /// Cells: attacks × targets × datasets × judges.
    pub fn cells(&self) -> usize {
        self.attacks.len() * self.targets.len() * self.datasets.len() * self.judges.len()
    }

    /// The coordinates of unit `u` (canonical order; `u < units()`).
    pub fn unit(&self, u: u64) -> UnitRef {
        let l = &self.layout;
        let targets = self.targets.len() as u64;
        // The last attack starting at or before `u`: attacks without units share their
        // start with the next one.
        let attack = l.starts.partition_point(|&s| s * targets <= u) - 1;
        let rel = u - l.starts[attack] * targets;
        let block = l.block[attack];
        let within = rel % block;
        let offs = &l.offsets[attack];
        let dataset = offs.partition_point(|&o| o <= within) - 1;
        let pos = within - offs[dataset];
        let behavior = match &l.selected[attack][dataset] {
            None => pos as usize,
            Some(s) => s[pos as usize] as usize,
        };
        UnitRef {
            attack,
            target: (rel / block) as usize,
            dataset,
            behavior,
        }
    }

    /// The canonical index of a unit within a trial (the inverse of [`Plan::unit`]). The
    /// attack must apply to the behavior ([`Plan::applies`]).
    pub fn unit_index(&self, u: UnitRef) -> u64 {
        let l = &self.layout;
        let pos = match &l.selected[u.attack][u.dataset] {
            None => u.behavior as u64,
            Some(s) => match s.binary_search(&(u.behavior as u32)) {
                Ok(p) => p as u64,
                Err(_) => panic!("unit_index of a behavior its attack does not apply to"),
            },
        };
        l.starts[u.attack] * self.targets.len() as u64
            + u.target as u64 * l.block[u.attack]
            + l.offsets[u.attack][u.dataset]
            + pos
    }

    /// The cell index of a unit under judge `j`.
    pub fn cell(&self, u: UnitRef, j: usize) -> usize {
        ((u.attack * self.targets.len() + u.target) * self.datasets.len() + u.dataset)
            * self.judges.len()
            + j
    }

    /// The coordinates `(attack, target, dataset, judge)` of cell `c` (the inverse of
    /// [`Plan::cell`]).
    pub fn cell_coords(&self, c: usize) -> (usize, usize, usize, usize) {
        let judge = c % self.judges.len();
        let rest = c / self.judges.len();
        let dataset = rest % self.datasets.len();
        let block = rest / self.datasets.len();
        (
            block / self.targets.len(),
            block % self.targets.len(),
            dataset,
            judge,
        )
    }

    /// How many units (counted in canonical order, over `trials` trials) are done once
    /// every unit of cell `c` is: the end of its dataset's range within its
    /// attack × target block, in the last trial. Non-decreasing in `c`.
    pub fn cell_end(&self, c: usize, trials: u32) -> u64 {
        let (attack, target, dataset, _) = self.cell_coords(c);
        let l = &self.layout;
        let end = l.offsets[attack][dataset] + l.len(attack, dataset, &self.datasets);
        u64::from(trials.max(1) - 1) * self.units()
            + l.starts[attack] * self.targets.len() as u64
            + target as u64 * l.block[attack]
            + end
    }
}
