//! Token usage, prices and cost: the price table, the per-cell usage tally and the
//! `token_usage` / `cost` metric values, plus the pre-run upper-bound estimate
//! (`gauntlet run --estimate`).
//!
//! Usage comes from each response's `usage` (journal hits included, so a rerun reports
//! the same numbers). It is kept per role slot: `target`, `attacker`, `attack_judge`
//! (the grader of an attack's in-loop judge) and `grader` (the grader of a run judge);
//! the `grader` role of `token_usage` covers both grader slots. Each slot is priced at
//! its own model's price.

use crate::plan::Plan;
use gauntlet_calls::cache::RoleUsage;
use gauntlet_models::Model;
use gauntlet_results::MetricValue;

pub use gauntlet_calls::price::{
    BUNDLED_PRICES, BUNDLED_PRICES_NAME, INPUT_ALLOWANCE, Price, PriceTable, Unpriced,
    batch_factor, model_name, slot_cost,
};

/// A model role of a cell: the slot its calls' usage is tallied in and priced under.
/// Adding a role is a variant here, its name in [`Slot::name`], its `token_usage` role
/// in [`Slot::token_role`] and its place in [`Slot::ALL`]; every per-role table is a
/// [`PerSlot`], sized and indexed by this enum.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum Slot {
    /// The model under test.
    Target,
    /// An attack's attacker model (PAIR, TAP, crescendo).
    Attacker,
    /// The grader of an attack's in-loop judge.
    AttackJudge,
    /// The grader of a run judge.
    Grader,
}

impl Slot {
    /// Every slot, in the order of stored usage rows (shard usage.json) and usage.json's
    /// `roles`.
    pub const ALL: [Slot; 4] = [
        Slot::Target,
        Slot::Attacker,
        Slot::AttackJudge,
        Slot::Grader,
    ];

    /// The slot's name in artefacts and price lookups.
    pub const fn name(self) -> &'static str {
        match self {
            Slot::Target => "target",
            Slot::Attacker => "attacker",
            Slot::AttackJudge => "attack_judge",
            Slot::Grader => "grader",
        }
    }

    /// The `token_usage` role the slot counts under (both grader slots are `grader`).
    pub const fn token_role(self) -> &'static str {
        match self {
            Slot::AttackJudge | Slot::Grader => "grader",
            s => s.name(),
        }
    }
}

/// One value per [`Slot`], indexed by it.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct PerSlot<T>(pub [T; Slot::ALL.len()]);

impl<T> PerSlot<T> {
    /// Builds every slot's value from the slot.
    pub fn from_fn(mut f: impl FnMut(Slot) -> T) -> Self {
        PerSlot(Slot::ALL.map(&mut f))
    }

    /// The slots and their values, in [`Slot::ALL`] order.
    pub fn iter(&self) -> impl Iterator<Item = (Slot, &T)> {
        Slot::ALL.into_iter().zip(&self.0)
    }

    /// The values, in [`Slot::ALL`] order.
    pub fn values_mut(&mut self) -> impl Iterator<Item = &mut T> {
        self.0.iter_mut()
    }
}

impl<T> std::ops::Index<Slot> for PerSlot<T> {
    type Output = T;
    fn index(&self, s: Slot) -> &T {
        &self.0[s as usize]
    }
}

impl<T> std::ops::IndexMut<Slot> for PerSlot<T> {
    fn index_mut(&mut self, s: Slot) -> &mut T {
        &mut self.0[s as usize]
    }
}

/// Usage of one cell (or one unit) per role slot.
pub type CellUsage = PerSlot<RoleUsage>;

impl std::ops::AddAssign for CellUsage {
    fn add_assign(&mut self, o: CellUsage) {
        for (a, b) in self.0.iter_mut().zip(o.0) {
            *a += b;
        }
    }
}

impl CellUsage {
    /// Usage of a `token_usage` role: `all`, `target`, `attacker` or `grader`.
    pub fn role(&self, role: &str) -> RoleUsage {
        let mut out = RoleUsage::default();
        for (slot, u) in self.iter() {
            if role == "all" || slot.name() == role || slot.token_role() == role {
                out += *u;
            }
        }
        out
    }
}

/// The `token_usage` value of a cell.
pub fn tokens_metric(u: &CellUsage, role: &str) -> MetricValue {
    let r = u.role(role);
    if r.calls_with_usage == 0 {
        return MetricValue::na(if r.calls == 0 {
            format!("no {role} model calls in this cell")
        } else {
            format!(
                "none of the {} {role} model call(s) reported token usage (offline models report none)",
                r.calls
            )
        });
    }
    MetricValue {
        value: Some((r.input_tokens + r.output_tokens) as f64),
        n: r.calls_with_usage,
        ..Default::default()
    }
}

/// The `cost` value of a cell: every slot at its own model's price.
pub fn cost_metric(
    u: &CellUsage,
    models: PerSlot<Option<&dyn Model>>,
    table: &PriceTable,
) -> MetricValue {
    let mut total = 0.0;
    let mut calls = 0;
    for (slot, u) in u.iter() {
        match slot_cost(slot.name(), u, models[slot], table) {
            Ok(c) => total += c,
            Err(why) => return MetricValue::na(why.to_string()),
        }
        calls += u.calls;
    }
    if calls == 0 {
        return MetricValue::na("no model calls in this cell");
    }
    MetricValue {
        value: Some(total),
        n: calls,
        ..Default::default()
    }
}

/// The upper-bound cost of `rows` with batch-mode models at their provider's batch
/// price (`--estimate` with `batch: true` / `--batch`): `None` when no model batches;
/// else the priced total and the reasons of rows left unpriced.
pub fn batch_estimate(
    plan: &Plan,
    table: &PriceTable,
    rows: &[RoleEstimate],
) -> Option<(f64, Vec<String>)> {
    let models: Vec<&dyn Model> = plan
        .targets
        .iter()
        .chain(plan.attackers.iter().flatten())
        .chain(plan.attack_graders.iter().flatten())
        .chain(plan.graders.iter().flatten())
        .map(|m| m.as_ref())
        .collect();
    if !models.iter().any(|m| m.batch_api().is_some()) {
        return None;
    }
    let (mut total, mut unpriced) = (0.0, Vec::new());
    for r in rows {
        let factor = models
            .iter()
            .find(|m| m.label() == r.model)
            .map_or(Ok(1.0), |m| batch_factor(*m, table));
        match (&r.max_cost, &factor) {
            (Ok(c), Ok(f)) => total += c * f,
            (Err(why), _) | (_, Err(why)) => unpriced.push(why.to_string()),
        }
    }
    Some((total, unpriced))
}

/// Assumed output tokens per call for a model without `max_tokens`.
pub const ASSUMED_MAX_TOKENS: u64 = 1024;

/// Planned calls and the upper-bound cost of one role.
#[derive(Debug, Clone)]
pub struct RoleEstimate {
    pub role: String,
    pub model: String,
    pub calls: u64,
    pub max_input_tokens: u64,
    pub max_output_tokens: u64,
    /// USD at most, or why it cannot be priced.
    pub max_cost: Result<f64, Unpriced>,
}

fn max_tokens_of(m: &dyn Model) -> u64 {
    m.spec()
        .params
        .int("max_tokens")
        .map_or(ASSUMED_MAX_TOKENS, |n| n.max(1) as u64)
}

/// Upper bounds before anything runs: each call at most `max_tokens` out (else
/// [`ASSUMED_MAX_TOKENS`]) and at most (longest prompt bytes / 3 + [`INPUT_ALLOWANCE`] +
/// the model's out-tokens × the attack's turns) in. Journal hits are not subtracted.
pub fn estimate(plan: &Plan, table: &PriceTable) -> Vec<RoleEstimate> {
    let longest = plan
        .datasets
        .iter()
        .flat_map(|d| d.behaviors.iter())
        .map(|b| b.prompt.len() as u64)
        .max()
        .unwrap_or(0);
    let behaviors: u64 = plan.datasets.iter().map(|d| d.behaviors.len() as u64).sum();
    let mut out: Vec<RoleEstimate> = Vec::new();
    let mut add = |role: &str, m: &dyn Model, calls: u64, turns: u64| {
        if calls == 0 {
            return;
        }
        let max_out = max_tokens_of(m);
        let max_in = longest / 3 + INPUT_ALLOWANCE + turns * max_out;
        let u = RoleUsage {
            calls,
            calls_with_usage: calls,
            input_tokens: calls * max_in,
            output_tokens: calls * max_out,
        };
        let max_cost = slot_cost(role, &u, Some(m), table);
        if let Some(e) = out
            .iter_mut()
            .find(|e| e.role == role && e.model == m.label())
        {
            e.calls += calls;
            e.max_input_tokens += u.input_tokens;
            e.max_output_tokens += u.output_tokens;
            e.max_cost = match (&e.max_cost, max_cost) {
                (Ok(a), Ok(b)) => Ok(a + b),
                (Err(x), _) => Err(x.clone()),
                (_, Err(x)) => Err(x),
            };
        } else {
            out.push(RoleEstimate {
                role: role.to_string(),
                model: m.label(),
                calls,
                max_input_tokens: u.input_tokens,
                max_output_tokens: u.output_tokens,
                max_cost,
            });
        }
    };
    for (ai, a) in plan.attacks.iter().enumerate() {
        let pc = a.planned_calls();
        let turns = pc.target.min(8);
        for t in &plan.targets {
            add(
                Slot::Target.name(),
                t.as_ref(),
                pc.target * behaviors,
                turns,
            );
            if let Some(m) = &plan.attackers[ai] {
                add(
                    Slot::Attacker.name(),
                    m.as_ref(),
                    pc.attacker * behaviors,
                    turns,
                );
            }
            if let Some(m) = &plan.attack_graders[ai] {
                add(
                    Slot::AttackJudge.name(),
                    m.as_ref(),
                    pc.judge * behaviors,
                    1,
                );
            }
        }
    }
    let attempts = plan.max_attempts();
    for g in plan.graders.iter().flatten() {
        add(Slot::Grader.name(), g.as_ref(), attempts, 1);
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    fn used(calls: u64) -> RoleUsage {
        RoleUsage {
            calls,
            calls_with_usage: calls,
            input_tokens: 10 * calls,
            output_tokens: calls,
        }
    }

    #[test]
    fn slots_index_their_own_place_and_keep_the_stored_order() {
        for (i, s) in Slot::ALL.into_iter().enumerate() {
            assert_eq!(s as usize, i);
        }
        let names: Vec<&str> = Slot::ALL.iter().map(|s| s.name()).collect();
        // The order of shard usage rows and usage.json roles: never reorder.
        assert_eq!(names, ["target", "attacker", "attack_judge", "grader"]);
        let p = PerSlot::from_fn(|s| s.name());
        assert_eq!(p[Slot::AttackJudge], "attack_judge");
    }

    #[test]
    fn token_usage_roles_sum_their_slots() {
        let u = PerSlot::from_fn(|s| used(s as u64 + 1));
        assert_eq!(u.role("target").calls, 1);
        assert_eq!(u.role("attacker").calls, 2);
        // `grader` covers the attack's judge grader and the run judge's grader.
        assert_eq!(u.role("grader").calls, 3 + 4);
        assert_eq!(u.role("attack_judge").calls, 3);
        assert_eq!(u.role("all").calls, 10);
        assert_eq!(u.role("nobody").calls, 0);
        let mut twice = u;
        twice += u;
        assert_eq!(twice.role("all").input_tokens, 200);
    }
}
