//! Every per-item rule run over one definition, one finding per rule and location.

use super::context::Ctx;
use crate::finding::{Check, Finding, ItemKind, Rule};
use std::collections::BTreeSet;

/// Runs every per-item rule on `ctx`, in catalogue order (a tool rule on tools only).
pub fn check_item(ctx: &Ctx<'_>, out: &mut Vec<Finding>) {
    let start = out.len();
    for r in Rule::all() {
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
