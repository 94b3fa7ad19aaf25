//! The rules of this folder, in catalogue order, and their run over one definition, one
//! finding per rule and location.

use super::context::Ctx;
use crate::fields::ItemKind;
use crate::finding::{Check, Finding, Rule};
use std::collections::BTreeSet;

/// The rules declared in this folder (each `pub mod` of `rules/mod.rs` whose file holds a
/// `RULE`, a list the build derives from those `mod` lines), in catalogue order (`rank`).
pub static RULES: &[Rule] = &by_rank(include!(concat!(env!("OUT_DIR"), "/rules.rs")));

/// `rules` in rank order (an insertion sort, run by the compiler).
const fn by_rank<const N: usize>(mut rules: [Rule; N]) -> [Rule; N] {
    let mut i = 1;
    while i < N {
        let mut j = i;
        while j > 0 && rules[j - 1].0.rank > rules[j].0.rank {
            rules.swap(j - 1, j);
            j -= 1;
        }
        i += 1;
    }
    rules
}

/// Runs every per-item rule on `ctx`, in catalogue order (a tool rule on tools only).
pub fn check_item(ctx: &Ctx<'_>, out: &mut Vec<Finding>) {
    let start = out.len();
    for r in RULES {
        match r.0.check {
            Check::Item(check) => check(ctx, out),
            Check::Tool(check) if ctx.kind == ItemKind::Tool => check(ctx, out),
            Check::Tool(_) | Check::Scan => {}
        }
    }
    // One finding per rule and location: the first (most specific) wins.
    let mut seen = BTreeSet::new();
    let mut k = start;
    while k < out.len() {
        if seen.insert((out[k].rule, out[k].location.clone())) {
            k += 1;
        } else {
            out.remove(k);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::RULES;

    #[test]
    fn the_folders_rules_are_in_catalogue_order_and_are_the_catalogues_own() {
        assert!(
            RULES.windows(2).all(|w| w[0] < w[1]),
            "not in rank order: {:?}",
            RULES.iter().map(|r| r.id()).collect::<Vec<_>>()
        );
        let from_here: Vec<_> = crate::catalogue::all()
            .iter()
            .filter(|r| RULES.contains(r))
            .collect();
        assert_eq!(from_here, RULES.iter().collect::<Vec<_>>());
    }
}
