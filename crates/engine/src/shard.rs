//! Deterministic shards: one evaluation split across machines, merged back byte for byte.
//!
//! `gauntlet run CONFIG --shard i/N` runs shard `i` (0-based, `0 ≤ i < N`) of a stable
//! partition of the run's units (trial × attack × target × behavior); `gauntlet merge`
//! ([`crate::merge`]) puts the N shard directories back together. The partition depends
//! on the plan alone — never on the machine, the clock or the concurrency:
//!
//! 1. every unit is keyed by the first 8 bytes of its *unit scope* (the sha256 that keys
//!    its model calls: target, attack, dataset version, behavior, trial and its seed),
//!    ties broken by the canonical unit index;
//! 2. units are laid out in that key order, each weighing its planned model calls (the
//!    attack's planned target, attacker and in-loop judge calls, plus one grader call per
//!    attempt for each judge with a grader — at least 1);
//! 3. the cumulative weight `0..W` is cut into N equal spans: a unit whose weight starts
//!    at `c` belongs to shard `⌊c·N / W⌋`.
//!
//! So each shard holds a contiguous run of the hash order (an even mix of every cell) and
//! its planned calls differ from W/N by less than one unit's weight. A shard runs its
//! units in canonical order, so its transcripts are a subsequence of the one-machine
//! run's, which is what lets the merge interleave them back without sorting.

use crate::plan::Plan;
use crate::run::{Identities, trial_seeds, unit_scope};
use std::fmt;

/// Names the partition scheme in run.json (`shard.partition`): a merge refuses shards
/// cut by another scheme.
pub const PARTITION_SCHEME: &str = "unit-scope-sha256-order/planned-calls/v1";

/// One shard of a run: `index` of `count`, 0-based.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Shard {
    pub index: u32,
    pub count: u32,
}

/// The most shards a run can be cut into.
pub const MAX_SHARDS: u32 = 100_000;

impl std::str::FromStr for Shard {
    type Err = String;

    /// Parses `i/N` (0-based `i`, as Slurm's `SLURM_ARRAY_TASK_ID` and Kubernetes'
    /// `JOB_COMPLETION_INDEX` count).
    fn from_str(s: &str) -> Result<Shard, String> {
        let help = "write --shard i/N with 0 ≤ i < N (0-based, e.g. --shard 0/4 … --shard 3/4)";
        let (i, n) = s
            .split_once('/')
            .ok_or_else(|| format!("`{s}` is not of the form i/N; {help}"))?;
        let num = |what: &str, t: &str| -> Result<u32, String> {
            let t = t.trim();
            if t.is_empty() || !t.bytes().all(|b| b.is_ascii_digit()) {
                return Err(format!(
                    "`{s}`: the shard {what} `{t}` is not a whole number; {help}"
                ));
            }
            t.parse::<u32>()
                .map_err(|_| format!("`{s}`: the shard {what} `{t}` is too large; {help}"))
        };
        let (index, count) = (num("index", i)?, num("count", n)?);
        if count == 0 {
            return Err(format!(
                "`{s}`: a run cannot be cut into 0 shards; N is at least 1 ({help})"
            ));
        }
        if count > MAX_SHARDS {
            return Err(format!("`{s}`: at most {MAX_SHARDS} shards; {help}"));
        }
        if index >= count {
            return Err(format!(
                "`{s}`: shard index {index} is out of range for {count} shard(s): indexes are 0-based, 0 to {}; {help}",
                count - 1
            ));
        }
        Ok(Shard { index, count })
    }
}

impl fmt::Display for Shard {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}/{}", self.index, self.count)
    }
}

impl Shard {
    /// The shard's run directory name under the runs directory: `<run_name>.shard-<i>-of-<N>`,
    /// so the shards of one run can share a runs directory (a shared volume) without
    /// colliding with each other or with a one-machine run.
    pub fn dir_name(&self, run_name: &str) -> String {
        format!("{run_name}.shard-{}-of-{}", self.index, self.count)
    }

    /// The shard's run id: the whole run's, suffixed, so a dashboard never mistakes a
    /// shard for the whole run.
    pub fn run_id(&self, whole: &str) -> String {
        format!("{whole}~shard-{}-of-{}", self.index, self.count)
    }
}

/// Planned model calls of one unit of each attack (see the module comment).
pub fn unit_weights(plan: &Plan) -> Vec<u64> {
    let graders = plan.graders.iter().flatten().count() as u64;
    plan.attacks
        .iter()
        .map(|a| {
            let pc = a.planned_calls();
            (pc.target + pc.attacker + pc.judge + u64::from(a.max_attempts()) * graders).max(1)
        })
        .collect()
}

/// The shard (0-based) of every unit, by canonical unit index (trial-major, as
/// `run/unit.rs` numbers them), for a run of `trials` trials cut into `count` shards.
/// Memory: 16 bytes per unit while it is computed, 4 kept.
pub fn assignment(plan: &Plan, trials: u32, count: u32) -> Vec<u32> {
    let ids = Identities::new(plan);
    let seeds = trial_seeds(plan.config.seed, trials.max(1));
    let weights = unit_weights(plan);
    let per_trial = plan.units();
    let total_units = per_trial * seeds.len() as u64;
    let mut order: Vec<(u64, u64)> = Vec::with_capacity(total_units as usize);
    for (t, &seed) in seeds.iter().enumerate() {
        for i in 0..per_trial {
            let u = plan.unit(i);
            let b = &plan.datasets[u.dataset].behaviors[u.behavior];
            let scope = unit_scope(plan, &ids, u, b, t as u32, seed);
            let key = u64::from_be_bytes(scope[..8].try_into().expect("8 bytes"));
            order.push((key, t as u64 * per_trial + i));
        }
    }
    order.sort_unstable();
    let weight = |idx: u64| weights[plan.unit(idx % per_trial).attack];
    let total: u128 =
        (0..per_trial).map(|i| u128::from(weight(i))).sum::<u128>() * seeds.len() as u128;
    let mut owner = vec![0u32; total_units as usize];
    let mut cum: u128 = 0;
    for (_, idx) in order {
        owner[idx as usize] = (cum * u128::from(count)).checked_div(total).unwrap_or(0) as u32;
        cum += u128::from(weight(idx));
    }
    owner
}

/// The canonical unit indexes of shard `shard`, ascending.
pub fn units_of(plan: &Plan, trials: u32, shard: Shard) -> Vec<u64> {
    assignment(plan, trials, shard.count)
        .into_iter()
        .enumerate()
        .filter(|(_, s)| *s == shard.index)
        .map(|(i, _)| i as u64)
        .collect()
}

/// A shard directory as a merge checks it: which shard it is, where it is, and the JSON
/// that records what it is a shard of (run.json, an exam's shard record).
pub struct Member<'a> {
    pub shard: Shard,
    pub dir: &'a std::path::Path,
    pub meta: &'a serde_json::Value,
}

/// How one kind of shard set is checked and named in errors.
pub struct SetRules<'a> {
    /// What a shard is called: "shard", "exam shard", "detect-exam shard".
    pub noun: &'a str,
    /// What the shards are shards of: "run", "exam".
    pub whole: &'a str,
    /// What every shard must agree on: (what it is, JSON pointer into `meta`).
    pub same: &'a [(&'a str, &'a str)],
    /// The help line under "not of the same …".
    pub help: &'a str,
    /// The command that makes shard `i` of `N`, shown for missing shards.
    pub command: &'a str,
}

/// Refuses a set of shard directories that are not the N shards of one job, with an
/// error that names the shard: one that differs from the first (what differs, plus
/// `explain(first, other)`), a shard given twice, the shards missing.
pub fn check_set(
    members: &[Member],
    rules: &SetRules,
    explain: impl Fn(&serde_json::Value, &serde_json::Value) -> String,
) -> Result<(), String> {
    let Some(first) = members.first() else {
        return Err(format!("no {} given", rules.noun));
    };
    for other in &members[1..] {
        let diffs: Vec<String> = rules
            .same
            .iter()
            .filter_map(|(what, at)| {
                let (a, b) = (first.meta.pointer(at), other.meta.pointer(at));
                (a != b).then(|| format!("{what} {} vs {}", shown_opt(b), shown_opt(a)))
            })
            .collect();
        if !diffs.is_empty() {
            return Err(format!(
                "{} {} in {} is not of the same {} as shard {} in {}: {}{}\n    help: {}",
                rules.noun,
                other.shard,
                other.dir.display(),
                rules.whole,
                first.shard,
                first.dir.display(),
                diffs.join("; "),
                explain(first.meta, other.meta),
                rules.help,
            ));
        }
    }
    let n = first.shard.count;
    let mut seen: Vec<Option<&std::path::Path>> = vec![None; n as usize];
    for m in members {
        let Some(slot) = seen.get_mut(m.shard.index as usize) else {
            return Err(format!("{} {} is out of range", rules.noun, m.shard));
        };
        if let Some(prev) = slot.replace(m.dir) {
            return Err(format!(
                "{} {} is given twice: {} and {}; give each shard 0..{n} once",
                rules.noun,
                m.shard,
                prev.display(),
                m.dir.display()
            ));
        }
    }
    let missing: Vec<String> = (0..n)
        .filter(|&i| seen[i as usize].is_none())
        .map(|i| format!("{i}/{n}"))
        .collect();
    if !missing.is_empty() {
        return Err(format!(
            "missing {}(s) {} of {n}: run `{}` for each and pass every shard directory",
            rules.noun,
            missing.join(", "),
            rules.command.replace("{n}", &n.to_string())
        ));
    }
    Ok(())
}

/// Opens the record of an exam shard: verifies `dir`'s manifest (a shard without a whole
/// one was interrupted or changed; the error is `{noun} DIR: …` followed by `help`),
/// reads the JSON file `record` in it and that file's `shard.index` and `shard.count`.
pub fn open_record(
    dir: &std::path::Path,
    record: &str,
    noun: &str,
    help: &str,
) -> Result<(Shard, serde_json::Value), String> {
    crate::rundir::Manifest::verify(dir)
        .map_err(|e| format!("{noun} {}: {e}\n    help: {help}", dir.display()))?;
    let path = dir.join(record);
    let meta = read_json(&path)?;
    let num = |k: &str| {
        meta["shard"][k]
            .as_u64()
            .and_then(|n| u32::try_from(n).ok())
            .ok_or_else(|| format!("{}: `shard.{k}` is not a number", path.display()))
    };
    let shard = Shard {
        index: num("index")?,
        count: num("count")?,
    };
    Ok((shard, meta))
}

/// Reads a JSON file of a shard directory (capped like any results file).
pub fn read_json(p: &std::path::Path) -> Result<serde_json::Value, String> {
    let b = gauntlet_core::files::read(p, gauntlet_core::files::Kind::RESULTS)
        .map_err(|e| e.to_string())?;
    serde_json::from_slice(&b).map_err(|e| format!("{}: not JSON: {e}", p.display()))
}

/// A JSON value as an error shows it: strings bare, absent as "absent".
pub fn shown(v: &serde_json::Value) -> String {
    match v {
        serde_json::Value::Null => "absent".into(),
        serde_json::Value::String(s) => s.clone(),
        v => v.to_string(),
    }
}

fn shown_opt(v: Option<&serde_json::Value>) -> String {
    v.map_or_else(|| "absent".into(), shown)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_shard_set_names_the_odd_shard_the_twice_given_and_the_missing() {
        let meta = |h: &str| serde_json::json!({"h": h, "shard": {"count": 3}});
        let (a, b, c) = (meta("x"), meta("x"), meta("y"));
        let dir = std::path::Path::new;
        let m = |i, d, meta| Member {
            shard: Shard { index: i, count: 3 },
            dir: dir(d),
            meta,
        };
        let rules = SetRules {
            noun: "exam shard",
            whole: "exam",
            same: &[("identity", "/h"), ("absent key", "/nope")],
            help: "merge one exam",
            command: "gauntlet exam --shard i/{n}",
        };
        let none = |_: &serde_json::Value, _: &serde_json::Value| String::new();
        let e = check_set(&[m(0, "s0", &a), m(2, "s2", &c)], &rules, none).unwrap_err();
        assert!(
            e.starts_with(
                "exam shard 2/3 in s2 is not of the same exam as shard 0/3 in s0: identity y vs x"
            ) && e.ends_with("help: merge one exam"),
            "{e}"
        );
        let e = check_set(&[m(1, "s1", &a), m(1, "t1", &b)], &rules, none).unwrap_err();
        assert_eq!(
            e,
            "exam shard 1/3 is given twice: s1 and t1; give each shard 0..3 once"
        );
        let e = check_set(&[m(1, "s1", &a)], &rules, none).unwrap_err();
        assert_eq!(
            e,
            "missing exam shard(s) 0/3, 2/3 of 3: run `gauntlet exam --shard i/3` for each and pass every shard directory"
        );
        let all = [m(2, "s2", &a), m(0, "s0", &b), m(1, "s1", &a)];
        assert_eq!(check_set(&all, &rules, none), Ok(()));
    }

    #[test]
    fn parses_i_over_n_and_names_what_is_wrong() {
        assert_eq!("0/4".parse::<Shard>(), Ok(Shard { index: 0, count: 4 }));
        assert_eq!("3/4".parse::<Shard>(), Ok(Shard { index: 3, count: 4 }));
        assert_eq!("0/1".parse::<Shard>(), Ok(Shard { index: 0, count: 1 }));
        let e = "4/4".parse::<Shard>().unwrap_err();
        assert!(e.contains("out of range") && e.contains("0 to 3"), "{e}");
        let e = "0/0".parse::<Shard>().unwrap_err();
        assert!(e.contains("0 shards"), "{e}");
        for bad in ["", "3", "a/4", "1/b", "-1/4", "1/4/5", "1.0/4", "/4", "1/"] {
            let e = bad.parse::<Shard>().unwrap_err();
            assert!(e.contains("--shard i/N"), "{bad}: {e}");
        }
        assert!(
            "99999999999/4"
                .parse::<Shard>()
                .unwrap_err()
                .contains("too large")
        );
        assert!("0/100001".parse::<Shard>().unwrap_err().contains("at most"));
    }

    #[test]
    fn names_are_plain_run_names() {
        let s = Shard { index: 2, count: 8 };
        assert_eq!(s.dir_name("smoke"), "smoke.shard-2-of-8");
        assert!(crate::config::valid_run_name(&s.dir_name("smoke")));
        assert_eq!(s.run_id("smoke-abc"), "smoke-abc~shard-2-of-8");
    }
}
