//! `indirect_injection`: the attacker's instruction (marker + attacker goal) is planted
//! in the output of the scenario's `injection_tool`, every time the agent calls it. An
//! agent that never calls that tool never sees it (`delivered: false` in the metadata).

use super::Injection;
use crate::injection::agent::Placement;
use crate::judge::InjectionEntry;
use crate::plugin::Entry;
use gauntlet_core::params::{Axis, PluginInfo, PluginSpec};

pub const INFO: PluginInfo = PluginInfo {
    axis: Axis::Injection,
    name: "indirect_injection",
    doc: "the attacker instruction planted in the output of the scenario's injection tool",
    params: &[],
};

/// Its threat-map row (`attacks` in `taxonomy/threat_map.json`): framework key and
/// entry ids.
pub const THREAT: gauntlet_core::taxonomy::ThreatEntry = &[
    ("owasp_agentic", &["T2", "T6"]),
    ("owasp_agentic_2026", &["ASI01", "ASI02"]),
    ("mitre_atlas", &["AML.T0051.001"]),
    ("eu_ai_act", &["Art. 15", "Art. 55"]),
];

/// This injection's registration (listed in `ENTRIES` in `injections/mod.rs`).
pub const ENTRY: InjectionEntry = Entry {
    info: INFO,
    build: |s, steps| Ok(Box::new(build(s.clone(), steps))),
};

pub fn build(spec: PluginSpec, max_steps: u32) -> Injection {
    Injection::new(spec, Placement::Indirect, max_steps)
}
