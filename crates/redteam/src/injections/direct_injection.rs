//! `direct_injection`: the attacker's instruction (marker + attacker goal) is appended to
//! the user's own turn.

use super::Injection;
use crate::injection::agent::Placement;
use crate::judge::InjectionEntry;
use crate::plugin::Entry;
use gauntlet_core::params::{Axis, PluginInfo, PluginSpec};

pub const INFO: PluginInfo = PluginInfo {
    axis: Axis::Injection,
    name: "direct_injection",
    doc: "the attacker instruction appended to the user turn",
    params: &[],
};

/// This injection's registration (listed in `ENTRIES` in `injections/mod.rs`).
pub const ENTRY: InjectionEntry = Entry {
    info: INFO,
    build: |s, steps| Ok(Box::new(build(s.clone(), steps))),
};

pub fn build(spec: PluginSpec, max_steps: u32) -> Injection {
    Injection::new(spec, Placement::Direct, max_steps)
}
