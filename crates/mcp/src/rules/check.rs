//! Every per-item rule run over one definition, one finding per rule and location.

use super::context::Ctx;
use super::{
    encoded_payload, excessive_capability, exfiltration_channel, hidden_instruction,
    invisible_text, sensitive_data_request, tool_shadowing,
};
use crate::finding::{Finding, ItemKind};
use std::collections::BTreeSet;

/// Runs every per-item rule on `ctx`.
pub fn check_item(ctx: &Ctx<'_>, out: &mut Vec<Finding>) {
    let start = out.len();
    hidden_instruction::check(ctx, out);
    invisible_text::check(ctx, out);
    encoded_payload::check(ctx, out);
    sensitive_data_request::check(ctx, out);
    exfiltration_channel::check(ctx, out);
    tool_shadowing::check(ctx, out);
    if ctx.kind == ItemKind::Tool {
        excessive_capability::check(ctx, out);
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
