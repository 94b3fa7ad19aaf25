//! `no_injection`: the agent runs the user's task with no attacker instruction anywhere.
//! The utility baseline (`utility_baseline`); its cells have no injection success rate.

use super::Injection;
use crate::injection::agent::Placement;
use crate::judge::InjectionEntry;
use crate::plugin::Entry;
use gauntlet_core::params::{Axis, PluginInfo, PluginSpec};

pub const INFO: PluginInfo = PluginInfo {
    axis: Axis::Injection,
    name: "no_injection",
    doc: "the user task with no injected instruction (utility baseline)",
    params: &[],
};

/// Its threat-map row (`attacks` in `taxonomy/threat_map.json`): framework key and
/// entry ids.
pub const THREAT: gauntlet_core::taxonomy::ThreatEntry = &[];

/// This injection's registration (listed in `ENTRIES` in `injections/mod.rs`).
pub const ENTRY: InjectionEntry = Entry {
    info: INFO,
    build: |s, steps| Ok(Box::new(build(s.clone(), steps))),
};

pub fn build(spec: PluginSpec, max_steps: u32) -> Injection {
    Injection::new(spec, Placement::None, max_steps)
}
