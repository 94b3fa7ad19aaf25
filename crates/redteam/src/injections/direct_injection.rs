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

/// Its threat-map row (`attacks` in `taxonomy/threat_map.json`): framework key and
/// entry ids.
pub const THREAT: gauntlet_core::taxonomy::ThreatEntry = &[
    ("owasp_agentic_2026", &["ASI01"]),
    ("mitre_atlas", &["AML.T0051.000"]),
    ("eu_ai_act", &["Art. 15", "Art. 55"]),
];

/// This injection's registration (listed in `ENTRIES` in `injections/mod.rs`).
pub const ENTRY: InjectionEntry = Entry {
    info: INFO,
    build: |s, steps| Ok(Box::new(build(s.clone(), steps))),
};

pub fn build(spec: PluginSpec, max_steps: u32) -> Injection {
    Injection::new(spec, Placement::Direct, max_steps)
}
