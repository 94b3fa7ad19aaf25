//! `direct_injection`: the attacker's instruction (marker + attacker goal) is appended to
//! the user's own turn.

use super::Injection;
use crate::injection::agent::Placement;
use gauntlet_core::params::{Axis, PluginInfo, PluginSpec};

pub const INFO: PluginInfo = PluginInfo {
    axis: Axis::Injection,
    name: "direct_injection",
    doc: "the attacker instruction appended to the user turn",
    params: &[],
};

pub fn build(spec: PluginSpec, max_steps: u32) -> Injection {
    Injection::new(spec, Placement::Direct, max_steps)
}
