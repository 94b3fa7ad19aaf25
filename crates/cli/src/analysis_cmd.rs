//! `gauntlet judge-agreement`, `gauntlet rescore` and `gauntlet compare`: analyses of
//! finished runs. None of them calls a target: they read `transcripts.jsonl` back through
//! [`gauntlet_engine::stored`] (the run's plan is rebuilt from `run.json`, datasets are
//! pinned, labels are never changed), and any grader call goes through the run's journal,
//! so repeating an analysis is free.
//!
//! The unit of analysis is the behavior (one dataset item under one attack, target and
//! trial), never the attempt: a judge calls a behavior positive when at least one of its
//! attempts succeeded under that judge, exactly as the run's metrics do.

use clap::Args;
use gauntlet_core::behavior::Expected;
use gauntlet_core::paired::{Comparison, SCORE_METRICS, compare_pairs};
use gauntlet_core::stats::{BOOTSTRAP_RESAMPLES, Kappa, Z95, cohen_kappa};
use gauntlet_engine::stored::{
    BuiltJudge, Rejudger, StoredRun, parse_judge_spec, rescore, write_rescored,
};
use gauntlet_redteam::metrics::BehaviorOutcome;
use serde_json::{Value, json};
use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::process::ExitCode;

/// `gauntlet judge-agreement`.
#[derive(Args)]
pub struct AgreementArgs {
    /// The run directory (runs/<run_name>).
    pub run_dir: PathBuf,
    /// A judge: a name (`refusal_match`) or inline YAML
    /// (`{name: rubric, params: {grader: {name: reference}}}`). Give two or more.
    #[arg(long = "judge", required = true)]
    pub judges: Vec<String>,
    /// Print the JSON written to RUN_DIR/judge_agreement.json instead of the table.
    #[arg(long)]
    pub json: bool,
    /// The directory of the original config, for runs whose datasets use relative paths.
    #[arg(long)]
    pub config_dir: Option<PathBuf>,
}

/// `gauntlet rescore`.
#[derive(Args)]
pub struct RescoreArgs {
    /// The run directory (runs/<run_name>).
    pub run_dir: PathBuf,
    /// The judge to score with: a name or inline YAML, as for judge-agreement.
    #[arg(long)]
    pub judge: String,
    /// Where to write the new results (default: RUN_DIR/rescore-<judge label>).
    #[arg(long)]
    pub out: Option<PathBuf>,
    /// The directory of the original config, for runs whose datasets use relative paths.
    #[arg(long)]
    pub config_dir: Option<PathBuf>,
}

/// `gauntlet compare`.
#[derive(Args)]
pub struct CompareArgs {
    /// The baseline run directory.
    pub run_a: PathBuf,
    /// The run compared with it (differences are B − A).
    pub run_b: PathBuf,
    /// Print the JSON instead of the table.
    #[arg(long)]
    pub json: bool,
    /// Where to write the JSON.
    #[arg(long, default_value = "compare.json")]
    pub out: PathBuf,
    /// The directory of the original configs, for runs whose datasets use relative paths.
    #[arg(long)]
    pub config_dir: Option<PathBuf>,
}

fn runtime() -> tokio::runtime::Runtime {
    tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
        .expect("tokio runtime")
}

fn open(dir: &Path, config_dir: Option<&Path>) -> Result<StoredRun, ExitCode> {
    StoredRun::open(dir, config_dir).map_err(|e| {
        eprintln!("error: {e}");
        ExitCode::from(2)
    })
}

fn write_json(path: &Path, v: &Value) -> Result<(), ExitCode> {
    let mut s = serde_json::to_vec_pretty(v).expect("json");
    s.push(b'\n');
    gauntlet_engine::rundir::write_atomic(path, &s).map_err(|e| {
        eprintln!("error: cannot write {}: {e}", path.display());
        ExitCode::from(1)
    })
}

fn expected_key(e: Expected) -> usize {
    match e {
        Expected::ShouldRefuse => 0,
        Expected::ShouldComply => 1,
    }
}
const EXPECTED: [Expected; 2] = [Expected::ShouldRefuse, Expected::ShouldComply];

// ---------------------------------------------------------------------------------------
// judge-agreement
// ---------------------------------------------------------------------------------------

/// One judge's per-behavior counts.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct JudgeCounts {
    /// Behaviors judged (not every attempt errored).
    pub n: u64,
    /// Behaviors with at least one successful attempt.
    pub positive: u64,
    /// Behaviors whose every attempt errored under this judge (left out of its pairs).
    pub excluded: u64,
}

/// Agreement tallies over behaviors: per judge, and a 2×2 table per judge pair.
#[derive(Debug, Clone, PartialEq)]
pub struct Agreement {
    pub labels: Vec<String>,
    /// `[expected][judge]`.
    pub counts: [Vec<JudgeCounts>; 2],
    /// `[expected][pair]` 2×2 table `[[both +, a only], [b only, both −]]`, pairs in
    /// (0,1), (0,2), …, (1,2), … order.
    pub tables: [Vec<[[u64; 2]; 2]>; 2],
    /// Behaviors seen (including excluded ones).
    pub items: [u64; 2],
}

impl Agreement {
    pub fn new(labels: Vec<String>) -> Self {
        let k = labels.len();
        let pairs = k * k.saturating_sub(1) / 2;
        Agreement {
            labels,
            counts: [
                vec![JudgeCounts::default(); k],
                vec![JudgeCounts::default(); k],
            ],
            tables: [vec![[[0; 2]; 2]; pairs], vec![[[0; 2]; 2]; pairs]],
            items: [0, 0],
        }
    }

    /// The judge pairs, in table order.
    pub fn pairs(&self) -> Vec<(usize, usize)> {
        let k = self.labels.len();
        (0..k)
            .flat_map(|a| (a + 1..k).map(move |b| (a, b)))
            .collect()
    }

    /// Adds one behavior: `calls[j]` is `Some(positive)` for judge `j`, `None` when every
    /// attempt errored under it.
    pub fn add(&mut self, expected: Expected, calls: &[Option<bool>]) {
        let e = expected_key(expected);
        self.items[e] += 1;
        for (j, c) in calls.iter().enumerate() {
            let jc = &mut self.counts[e][j];
            match c {
                None => jc.excluded += 1,
                Some(p) => {
                    jc.n += 1;
                    jc.positive += u64::from(*p);
                }
            }
        }
        for (i, (a, b)) in self.pairs().into_iter().enumerate() {
            if let (Some(x), Some(y)) = (calls[a], calls[b]) {
                self.tables[e][i][usize::from(!x)][usize::from(!y)] += 1;
            }
        }
    }
}

fn judge_json(c: JudgeCounts) -> Value {
    json!({
        "n": c.n,
        "positive": c.positive,
        "rate": (c.n > 0).then(|| c.positive as f64 / c.n as f64),
        "excluded_all_errors": c.excluded,
    })
}

fn pair_json(t: [[u64; 2]; 2]) -> Value {
    let n = t[0][0] + t[0][1] + t[1][0] + t[1][1];
    let table: Vec<Vec<u64>> = t.iter().map(|r| r.to_vec()).collect();
    let mut v = json!({
        "n": n,
        "both_positive": t[0][0],
        "a_only": t[0][1],
        "b_only": t[1][0],
        "both_negative": t[1][1],
        "raw_agreement": (n > 0).then(|| (t[0][0] + t[1][1]) as f64 / n as f64),
    });
    let o = v.as_object_mut().expect("object");
    match cohen_kappa(&table, Z95) {
        Ok(Kappa {
            kappa,
            se,
            ci_low,
            ci_high,
            ..
        }) => {
            o.insert("kappa".into(), json!(kappa));
            o.insert("kappa_se".into(), json!(se));
            o.insert("kappa_ci_low".into(), json!(ci_low));
            o.insert("kappa_ci_high".into(), json!(ci_high));
        }
        Err(why) => {
            o.insert("kappa".into(), Value::Null);
            o.insert("kappa_na_reason".into(), json!(why.to_string()));
        }
    }
    v
}

fn sum_tables(a: [[u64; 2]; 2], b: [[u64; 2]; 2]) -> [[u64; 2]; 2] {
    [
        [a[0][0] + b[0][0], a[0][1] + b[0][1]],
        [a[1][0] + b[1][0], a[1][1] + b[1][1]],
    ]
}

fn sum_counts(a: JudgeCounts, b: JudgeCounts) -> JudgeCounts {
    JudgeCounts {
        n: a.n + b.n,
        positive: a.positive + b.positive,
        excluded: a.excluded + b.excluded,
    }
}

impl Agreement {
    /// The judge_agreement.json document (without run provenance).
    pub fn to_json(&self, specs: &[Value]) -> Value {
        let judges: Vec<Value> = self
            .labels
            .iter()
            .enumerate()
            .map(|(j, l)| {
                let by: serde_json::Map<String, Value> = EXPECTED
                    .iter()
                    .map(|e| {
                        (
                            e.as_str().to_string(),
                            judge_json(self.counts[expected_key(*e)][j]),
                        )
                    })
                    .collect();
                json!({
                    "judge": l,
                    "spec": specs[j],
                    "overall": judge_json(sum_counts(self.counts[0][j], self.counts[1][j])),
                    "by_expected": by,
                })
            })
            .collect();
        let pairs: Vec<Value> = self
            .pairs()
            .into_iter()
            .enumerate()
            .map(|(i, (a, b))| {
                let by: serde_json::Map<String, Value> = EXPECTED
                    .iter()
                    .map(|e| {
                        (
                            e.as_str().to_string(),
                            pair_json(self.tables[expected_key(*e)][i]),
                        )
                    })
                    .collect();
                json!({
                    "a": self.labels[a],
                    "b": self.labels[b],
                    "overall": pair_json(sum_tables(self.tables[0][i], self.tables[1][i])),
                    "by_expected": by,
                })
            })
            .collect();
        json!({
            "items": self.items[0] + self.items[1],
            "items_by_expected": {
                "should_refuse": self.items[0],
                "should_comply": self.items[1],
            },
            "judges": judges,
            "pairs": pairs,
        })
    }
}

/// Labels for judges, made distinct (`rubric`, `rubric#2`) when two share one.
fn distinct_labels(labels: Vec<String>) -> Vec<String> {
    let mut out: Vec<String> = Vec::with_capacity(labels.len());
    for l in labels {
        let mut name = l.clone();
        let mut k = 2;
        while out.contains(&name) {
            name = format!("{l}#{k}");
            k += 1;
        }
        out.push(name);
    }
    out
}

fn build_judges(texts: &[String]) -> Result<(Vec<BuiltJudge>, Vec<Value>), ExitCode> {
    let mut built = Vec::new();
    let mut specs = Vec::new();
    for t in texts {
        let spec = parse_judge_spec(t).map_err(|e| {
            eprintln!("error: {e}");
            ExitCode::from(2)
        })?;
        specs.push(spec.identity());
        built.push(BuiltJudge::build(&spec).map_err(|e| {
            eprintln!("error: {e}");
            ExitCode::from(2)
        })?);
    }
    Ok((built, specs))
}

/// A p-value for the table: `p=` with four decimals, scientific notation below 10⁻⁴,
/// and `p<1e-300` where the exact value underflows f64.
fn fmt_p(p: f64) -> String {
    if p == 0.0 {
        "p<1e-300".into()
    } else if p < 1e-4 {
        format!("p={p:.2e}")
    } else {
        format!("p={p:.4}")
    }
}

fn fmt_opt(v: Option<f64>) -> String {
    v.map_or("N/A".into(), |x| format!("{x:.3}"))
}

/// `gauntlet judge-agreement RUN_DIR --judge A --judge B …`.
pub fn judge_agreement(a: AgreementArgs) -> ExitCode {
    if a.judges.len() < 2 {
        eprintln!("error: judge-agreement needs at least two --judge");
        return ExitCode::from(2);
    }
    let run = match open(&a.run_dir, a.config_dir.as_deref()) {
        Ok(r) => r,
        Err(c) => return c,
    };
    let (built, specs) = match build_judges(&a.judges) {
        Ok(x) => x,
        Err(c) => return c,
    };
    let labels = distinct_labels(built.iter().map(BuiltJudge::label).collect());
    let rejudger = match Rejudger::new(&run, built) {
        Ok(r) => r,
        Err(e) => {
            eprintln!("error: {e}");
            return ExitCode::from(1);
        }
    };
    let mut agg = Agreement::new(labels.clone());
    let mut attempts = 0u64;
    let result: Result<(), String> = runtime().block_on(async {
        let units = run.units().map_err(|e| e.to_string())?;
        for (i, unit) in units.enumerate() {
            let unit = unit.map_err(|e| e.to_string())?;
            let b = run.behavior(unit.unit);
            let verdicts = rejudger.score(&unit).await.map_err(|e| e.to_string())?;
            let calls: Vec<Option<bool>> = verdicts
                .iter()
                .map(|vs| {
                    let o = BehaviorOutcome::from_behavior(b, &unit.attempts, vs);
                    o.judged().then_some(o.first_success.is_some())
                })
                .collect();
            agg.add(b.expected, &calls);
            attempts += unit.attempts.len() as u64;
            if i % 256 == 255 {
                rejudger.flush().map_err(|e| e.to_string())?;
            }
        }
        rejudger.flush().map_err(|e| e.to_string())
    });
    let (made, cached, failed) = rejudger.grader_calls();
    drop(rejudger);
    if let Err(e) = result {
        eprintln!("error: {e}");
        return ExitCode::from(1);
    }
    let mut doc = agg.to_json(&specs);
    if let Value::Object(o) = &mut doc {
        o.insert("run_id".into(), json!(run.meta.run_id));
        o.insert("run_status".into(), json!(run.meta.status));
        o.insert("unit".into(), json!("behavior: one dataset item under one attack, target and trial; positive = at least one attempt succeeded under the judge (should_refuse: the model complied; should_comply: it answered)"));
        o.insert("excluded".into(), json!("a behavior whose every attempt errored under a judge is left out of that judge's rate and of every pair involving it"));
        o.insert("kappa_ci".into(), json!("95% large-sample normal interval, kappa ± 1.96·SE, SE of Fleiss, Cohen & Everitt (1969); no resampling"));
        o.insert(
            "labels".into(),
            json!("expected labels come from the pinned dataset and are never changed"),
        );
    }
    let path = run.dir.join("judge_agreement.json");
    if let Err(c) = write_json(&path, &doc) {
        return c;
    }
    if a.json {
        println!("{}", serde_json::to_string_pretty(&doc).expect("json"));
        return ExitCode::SUCCESS;
    }
    println!(
        "{}: {} behaviors ({} should_refuse, {} should_comply), {} attempts re-judged; grader calls: {} made, {} from the journal, {} failed; target calls: 0",
        run.meta.run_id,
        agg.items[0] + agg.items[1],
        agg.items[0],
        agg.items[1],
        attempts,
        made,
        cached,
        failed
    );
    let wj = labels.iter().map(String::len).max().unwrap_or(5).max(5);
    println!(
        "{:wj$}  {:>15}  {:>15}  {:>15}  {:>8}",
        "judge", "positive", "should_refuse", "should_comply", "excluded"
    );
    for (j, l) in labels.iter().enumerate() {
        let all = sum_counts(agg.counts[0][j], agg.counts[1][j]);
        let cell = |c: JudgeCounts| {
            format!(
                "{}/{} {}",
                c.positive,
                c.n,
                fmt_opt((c.n > 0).then(|| c.positive as f64 / c.n as f64))
            )
        };
        println!(
            "{l:wj$}  {:>15}  {:>15}  {:>15}  {:>8}",
            cell(all),
            cell(agg.counts[0][j]),
            cell(agg.counts[1][j]),
            all.excluded
        );
    }
    println!();
    let wp = agg
        .pairs()
        .iter()
        .map(|(x, y)| labels[*x].len() + labels[*y].len() + 4)
        .max()
        .unwrap_or(4)
        .max(4);
    println!(
        "{:wp$}  {:<13}  {:>5}  {:>9}  {:>6}  {:>17}",
        "pair", "items", "n", "agreement", "kappa", "95% CI"
    );
    for (i, (x, y)) in agg.pairs().into_iter().enumerate() {
        let name = format!("{} vs {}", labels[x], labels[y]);
        let rows = [
            ("all", sum_tables(agg.tables[0][i], agg.tables[1][i])),
            ("should_refuse", agg.tables[0][i]),
            ("should_comply", agg.tables[1][i]),
        ];
        for (which, t) in rows {
            let n = t[0][0] + t[0][1] + t[1][0] + t[1][1];
            let agree = (n > 0).then(|| (t[0][0] + t[1][1]) as f64 / n as f64);
            let table: Vec<Vec<u64>> = t.iter().map(|r| r.to_vec()).collect();
            let (k, ci) = match cohen_kappa(&table, Z95) {
                Ok(k) => (
                    format!("{:.3}", k.kappa),
                    format!("[{:.3}, {:.3}]", k.ci_low, k.ci_high),
                ),
                Err(_) => ("N/A".into(), "N/A".into()),
            };
            println!(
                "{name:wp$}  {which:<13}  {n:>5}  {:>9}  {k:>6}  {ci:>17}",
                fmt_opt(agree)
            );
        }
    }
    println!("wrote {}", path.display());
    ExitCode::SUCCESS
}

// ---------------------------------------------------------------------------------------
// rescore
// ---------------------------------------------------------------------------------------

/// `gauntlet rescore RUN_DIR --judge SPEC [--out DIR]`.
pub fn rescore_cmd(a: RescoreArgs) -> ExitCode {
    let run = match open(&a.run_dir, a.config_dir.as_deref()) {
        Ok(r) => r,
        Err(c) => return c,
    };
    let spec = match parse_judge_spec(&a.judge) {
        Ok(s) => s,
        Err(e) => {
            eprintln!("error: {e}");
            return ExitCode::from(2);
        }
    };
    let out = a
        .out
        .clone()
        .unwrap_or_else(|| a.run_dir.join(format!("rescore-{}", spec.label())));
    let r = match runtime().block_on(rescore(run, &spec)) {
        Ok(r) => r,
        Err(e) => {
            eprintln!("error: {e}");
            return ExitCode::from(2);
        }
    };
    if let Err(e) = write_rescored(&out, &r) {
        eprintln!("error: {e}");
        return ExitCode::from(1);
    }
    crate::print_summary(&r.summary);
    let (made, cached, failed) = r.grader_calls;
    println!(
        "{}: {} behaviors, {} attempts re-judged with {}; grader calls: {made} made, {cached} from the journal, {failed} failed; target calls: 0",
        r.summary.run_id,
        r.units,
        r.attempts,
        spec.label()
    );
    println!("artefacts: {}", out.display());
    if r.summary.status == "complete" {
        ExitCode::SUCCESS
    } else {
        eprintln!("the rescore is partial: {}", r.summary.status);
        ExitCode::from(1)
    }
}

// ---------------------------------------------------------------------------------------
// compare
// ---------------------------------------------------------------------------------------

/// Per-behavior values of one cell × metric of one run.
#[derive(Debug, Default)]
struct Series {
    /// `(trial, behavior index in the dataset)` → value; behaviors outside the population
    /// are absent. Indices pair behaviors only because both runs must hold the same
    /// dataset version (checked before pairing).
    values: BTreeMap<(u32, u32), f64>,
    /// Why the metric is N/A for the whole cell (inapplicable judge, usage metric).
    na: Option<String>,
    dataset_version: String,
    empty_reason: String,
    target_label: String,
}

/// Cell × metric key: attack, target (or `*` when both runs have one target), dataset,
/// judge, metric display name.
type CellKey = (String, String, String, String, String);

fn metric_name(spec: &gauntlet_core::params::PluginSpec) -> String {
    let params = serde_json::to_value(&spec.params).unwrap_or(Value::Null);
    match params.as_object() {
        Some(o) if !o.is_empty() => format!(
            "{}({})",
            spec.name,
            o.iter()
                .map(|(k, v)| match v {
                    Value::String(s) => format!("{k}={s}"),
                    v => format!("{k}={v}"),
                })
                .collect::<Vec<_>>()
                .join(",")
        ),
        _ => spec.name.clone(),
    }
}

/// Reads every per-behavior metric value of a run from its stored verdicts.
fn series_of(
    run: &StoredRun,
    any_target: bool,
) -> Result<(Vec<CellKey>, BTreeMap<CellKey, Series>), String> {
    let plan = &run.plan;
    let mut order = Vec::new();
    let mut out: BTreeMap<CellKey, Series> = BTreeMap::new();
    let key = |a: usize, t: usize, d: usize, j: usize, m: usize| -> CellKey {
        (
            plan.attacks[a].spec().label(),
            if any_target {
                "*".into()
            } else {
                plan.targets[t].label()
            },
            plan.datasets[d].name.clone(),
            plan.judges[j].spec().label(),
            metric_name(plan.metrics[m].spec()),
        )
    };
    for a in 0..plan.attacks.len() {
        for t in 0..plan.targets.len() {
            for d in 0..plan.datasets.len() {
                for (j, judge) in plan.judges.iter().enumerate() {
                    for (m, metric) in plan.metrics.iter().enumerate() {
                        let k = key(a, t, d, j, m);
                        let na = if metric.usage_metric().is_some() {
                            Some(
                                "a usage metric (tokens, cost) has no per-behavior outcome to pair"
                                    .to_string(),
                            )
                        } else {
                            metric.inapplicable(judge.as_ref())
                        };
                        order.push(k.clone());
                        out.insert(
                            k,
                            Series {
                                na,
                                dataset_version: plan.datasets[d].version.clone(),
                                empty_reason: metric.empty_reason().to_string(),
                                target_label: plan.targets[t].label(),
                                ..Default::default()
                            },
                        );
                    }
                }
            }
        }
    }
    for unit in run.units().map_err(|e| e.to_string())? {
        let unit = unit.map_err(|e| e.to_string())?;
        let b = run.behavior(unit.unit);
        let u = unit.unit;
        for j in 0..plan.judges.len() {
            let o = BehaviorOutcome::from_behavior(b, &unit.attempts, &unit.verdicts_of(j));
            if !o.judged() {
                continue;
            }
            for (m, metric) in plan.metrics.iter().enumerate() {
                let s = out
                    .get_mut(&key(u.attack, u.target, u.dataset, j, m))
                    .expect("every cell is keyed");
                if s.na.is_none()
                    && let Some(v) = metric.value(&o)
                {
                    s.values.insert((unit.trial, u.behavior as u32), v);
                }
            }
        }
    }
    Ok((order, out))
}

/// `gauntlet compare RUN_A RUN_B`.
pub fn compare(a: CompareArgs) -> ExitCode {
    let run_a = match open(&a.run_a, a.config_dir.as_deref()) {
        Ok(r) => r,
        Err(c) => return c,
    };
    let run_b = match open(&a.run_b, a.config_dir.as_deref()) {
        Ok(r) => r,
        Err(c) => return c,
    };
    // Two single-target runs are compared target against target, whatever their labels.
    let any_target = run_a.plan.targets.len() == 1 && run_b.plan.targets.len() == 1;
    let (order, sa) = match series_of(&run_a, any_target) {
        Ok(x) => x,
        Err(e) => {
            eprintln!("error: {e}");
            return ExitCode::from(2);
        }
    };
    let (_, sb) = match series_of(&run_b, any_target) {
        Ok(x) => x,
        Err(e) => {
            eprintln!("error: {e}");
            return ExitCode::from(2);
        }
    };
    let shared: Vec<&CellKey> = order.iter().filter(|k| sb.contains_key(*k)).collect();
    if shared.is_empty() {
        eprintln!(
            "error: {} and {} share no (attack, target, dataset, judge, metric) cell; compare runs of the same attacks, datasets, judges and metrics (targets are matched by label, or one against one)",
            a.run_a.display(),
            a.run_b.display()
        );
        return ExitCode::from(2);
    }
    for k in &shared {
        let (x, y) = (&sa[*k], &sb[*k]);
        if x.dataset_version != y.dataset_version {
            eprintln!(
                "error: cell {} × {} × {}: dataset `{}` is {} in {} but {} in {}; a paired comparison needs the same pinned behaviors — rerun one run on the other's dataset version",
                k.0,
                k.1,
                k.3,
                k.2,
                x.dataset_version,
                a.run_a.display(),
                y.dataset_version,
                a.run_b.display()
            );
            return ExitCode::from(2);
        }
    }
    let mut rows = Vec::new();
    let mut cells_json = Vec::new();
    for k in &shared {
        let (x, y) = (&sa[*k], &sb[*k]);
        let metric_base = k.4.split('(').next().unwrap_or(&k.4).to_string();
        let score = SCORE_METRICS.contains(&metric_base.as_str());
        let only_a = x
            .values
            .keys()
            .filter(|i| !y.values.contains_key(*i))
            .count();
        let only_b = y
            .values
            .keys()
            .filter(|i| !x.values.contains_key(*i))
            .count();
        let cmp = if let Some(why) = x.na.as_ref().or(y.na.as_ref()) {
            Comparison::NotApplicable(why.clone())
        } else if x.values.is_empty() {
            Comparison::NotApplicable(format!("N/A in {}: {}", a.run_a.display(), x.empty_reason))
        } else if y.values.is_empty() {
            Comparison::NotApplicable(format!("N/A in {}: {}", a.run_b.display(), y.empty_reason))
        } else {
            let pairs: Vec<(f64, f64)> = x
                .values
                .iter()
                .filter_map(|(i, va)| y.values.get(i).map(|vb| (*va, *vb)))
                .collect();
            compare_pairs(&pairs, score, &["compare", &k.0, &k.1, &k.2, &k.3, &k.4])
        };
        let target = if x.target_label == y.target_label {
            x.target_label.clone()
        } else {
            format!("{} vs {}", x.target_label, y.target_label)
        };
        let mut j = json!({
            "attack": k.0,
            "target_a": x.target_label,
            "target_b": y.target_label,
            "dataset": k.2,
            "dataset_version": x.dataset_version,
            "judge": k.3,
            "metric": k.4,
            "unpaired_a": only_a,
            "unpaired_b": only_b,
        });
        let o = j.as_object_mut().expect("object");
        let (n, va, vb, diff, test, stat) = match &cmp {
            Comparison::Binary {
                n,
                rate_a,
                rate_b,
                test,
            } => {
                o.insert("n".into(), json!(n));
                o.insert("a".into(), json!(rate_a));
                o.insert("b".into(), json!(rate_b));
                o.insert("diff".into(), json!(rate_b - rate_a));
                o.insert("test".into(), json!("mcnemar_exact"));
                o.insert("a_only_positive".into(), json!(test.b));
                o.insert("b_only_positive".into(), json!(test.c));
                o.insert("p_value".into(), json!(test.p_exact));
                o.insert("p_mid".into(), json!(test.p_mid));
                (
                    n.to_string(),
                    format!("{rate_a:.3}"),
                    format!("{rate_b:.3}"),
                    format!("{:+.3}", rate_b - rate_a),
                    "McNemar".to_string(),
                    format!("{} ({}/{} discordant)", fmt_p(test.p_exact), test.b, test.c),
                )
            }
            Comparison::Score {
                mean_a,
                mean_b,
                diff,
            } => {
                o.insert("n".into(), json!(diff.n));
                o.insert("a".into(), json!(mean_a));
                o.insert("b".into(), json!(mean_b));
                o.insert("diff".into(), json!(diff.mean_diff));
                o.insert("test".into(), json!("paired_bootstrap"));
                o.insert("ci_low".into(), json!(diff.ci.map(|c| c.0)));
                o.insert("ci_high".into(), json!(diff.ci.map(|c| c.1)));
                o.insert("resamples".into(), json!(BOOTSTRAP_RESAMPLES));
                (
                    diff.n.to_string(),
                    format!("{mean_a:.3}"),
                    format!("{mean_b:.3}"),
                    format!("{:+.3}", diff.mean_diff),
                    "bootstrap".to_string(),
                    diff.ci.map_or("CI N/A (one pair)".into(), |c| {
                        format!("95% CI [{:+.3}, {:+.3}]", c.0, c.1)
                    }),
                )
            }
            Comparison::NotApplicable(why) => {
                o.insert("n".into(), json!(0));
                o.insert("a".into(), Value::Null);
                o.insert("b".into(), Value::Null);
                o.insert("diff".into(), Value::Null);
                o.insert("na_reason".into(), json!(why));
                (
                    "-".into(),
                    "N/A".into(),
                    "N/A".into(),
                    "N/A".into(),
                    "-".into(),
                    why.clone(),
                )
            }
        };
        rows.push([
            k.0.clone(),
            target,
            k.2.clone(),
            k.3.clone(),
            k.4.clone(),
            n,
            va,
            vb,
            diff,
            test,
            stat,
        ]);
        cells_json.push(j);
    }
    let doc = json!({
        "run_a": {"run_id": run_a.meta.run_id, "status": run_a.meta.status},
        "run_b": {"run_id": run_b.meta.run_id, "status": run_b.meta.status},
        "difference": "b − a over behaviors (trial, behavior id) in the metric's population in both runs",
        "binary_test": "exact McNemar: two-sided binomial p on the discordant pairs (mid-p also given)",
        "score_ci": "paired percentile bootstrap of the mean difference, 1000 resamples of behaviors, fixed seed",
        "cells": cells_json,
    });
    if let Err(c) = write_json(&a.out, &doc) {
        return c;
    }
    if a.json {
        println!("{}", serde_json::to_string_pretty(&doc).expect("json"));
        return ExitCode::SUCCESS;
    }
    println!("A = {}   B = {}", run_a.meta.run_id, run_b.meta.run_id);
    let header = [
        "attack", "target", "dataset", "judge", "metric", "n", "A", "B", "B−A", "test", "",
    ];
    let mut widths: Vec<usize> = header.iter().map(|h| h.chars().count()).collect();
    for r in &rows {
        for (w, c) in widths.iter_mut().zip(r) {
            *w = (*w).max(c.chars().count());
        }
    }
    let line = |cells: &[String]| {
        let mut s = String::new();
        for (i, (c, w)) in cells.iter().zip(&widths).enumerate() {
            let pad = w - c.chars().count();
            if (5..=8).contains(&i) {
                s.push_str(&" ".repeat(pad));
                s.push_str(c);
            } else {
                s.push_str(c);
                if i + 1 < cells.len() {
                    s.push_str(&" ".repeat(pad));
                }
            }
            if i + 1 < cells.len() {
                s.push_str("  ");
            }
        }
        s.trim_end().to_string()
    };
    println!(
        "{}",
        line(&header.iter().map(|h| h.to_string()).collect::<Vec<_>>())
    );
    for r in &rows {
        println!("{}", line(r));
    }
    println!("wrote {}", a.out.display());
    ExitCode::SUCCESS
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn agreement_counts_behaviors_and_excludes_errors_per_judge() {
        let mut g = Agreement::new(vec!["a".into(), "b".into(), "c".into()]);
        g.add(Expected::ShouldRefuse, &[Some(true), Some(true), None]);
        g.add(
            Expected::ShouldRefuse,
            &[Some(false), Some(true), Some(false)],
        );
        g.add(
            Expected::ShouldComply,
            &[Some(true), Some(true), Some(true)],
        );
        assert_eq!(g.items, [2, 1]);
        assert_eq!(
            g.counts[0][2],
            JudgeCounts {
                n: 1,
                positive: 0,
                excluded: 1
            }
        );
        // pair (a, b): refuse table both+ 1, b only 1; comply both+ 1
        assert_eq!(g.tables[0][0], [[1, 0], [1, 0]]);
        assert_eq!(g.tables[1][0], [[1, 0], [0, 0]]);
        // pair (a, c): the behavior c errored on is not in the table
        assert_eq!(g.tables[0][1], [[0, 0], [0, 1]]);
        let j = g.to_json(&[json!("a"), json!("b"), json!("c")]);
        assert_eq!(j["items"], 3);
        assert_eq!(j["pairs"][0]["overall"]["n"], 3);
        assert_eq!(j["pairs"][1]["overall"]["n"], 2);
    }

    #[test]
    fn labels_are_made_distinct() {
        assert_eq!(
            distinct_labels(vec!["rubric".into(), "rubric".into(), "x".into()]),
            vec!["rubric", "rubric#2", "x"]
        );
    }
}
