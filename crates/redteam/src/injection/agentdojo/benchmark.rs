//! The AgentDojo benchmark as gauntlet runs it: its versions, suites, attacks and
//! defences, the embedded task catalogue, and what a run records about the sidecar.

use super::sidecar;
use gauntlet_core::hash::sha256_hex;
use serde::Deserialize;
use std::collections::BTreeMap;
use std::sync::OnceLock;

/// The benchmark versions the catalogue holds.
pub const VERSIONS: &[&str] = &["v1", "v1.1", "v1.1.1", "v1.1.2", "v1.2", "v1.2.1", "v1.2.2"];
pub const SUITES: &[&str] = &["workspace", "travel", "banking", "slack"];
/// The benchmark's default version (the package's).
pub const DEFAULT_VERSION: &str = "v1.2.2";
/// How AgentDojo's local pipelines' attack texts address the model.
pub const DEFAULT_MODEL_NAME: &str = "Local model";
/// The attacks gauntlet runs (AgentDojo's registry without `manual`, which asks a human
/// at the terminal, and the denial-of-service ones, which score differently).
pub const ATTACKS: &[&str] = &[
    "direct",
    "ignore_previous",
    "system_message",
    "injecagent",
    "important_instructions",
    "important_instructions_no_user_name",
    "important_instructions_no_model_name",
    "important_instructions_no_names",
    "important_instructions_wrong_model_name",
    "important_instructions_wrong_user_name",
    "tool_knowledge",
];
/// The defences gauntlet runs (AgentDojo's without `transformers_pi_detector`, which
/// needs torch and a model download).
pub const DEFENSES: &[&str] = &[
    "tool_filter",
    "spotlighting_with_delimiting",
    "repeat_user_prompt",
];
/// AgentDojo's tool loop: the first model call and up to this many rounds of tool
/// execution, each followed by a model call.
pub const MAX_ITERS: u32 = 15;

/// The embedded catalogue: for each benchmark version and suite, its task ids in the
/// package's order.
#[derive(Debug, Deserialize)]
pub struct Catalogue {
    pub agentdojo: String,
    pub versions: BTreeMap<String, BTreeMap<String, SuiteTasks>>,
}

#[derive(Debug, Clone, Deserialize, PartialEq, Eq)]
pub struct SuiteTasks {
    pub user_tasks: Vec<String>,
    pub injection_tasks: Vec<String>,
}

pub const CATALOGUE_JSON: &str = include_str!("catalogue.json");

pub fn catalogue() -> &'static Catalogue {
    static C: OnceLock<Catalogue> = OnceLock::new();
    C.get_or_init(|| serde_json::from_str(CATALOGUE_JSON).expect("the embedded catalogue parses"))
}

/// What run.json records about the sidecar (the same for every run of this build):
/// package and benchmark version, the pins' and the script's sha256, the frozen clock.
pub fn provenance(version: &str) -> serde_json::Value {
    serde_json::json!({
        "agentdojo": catalogue().agentdojo,
        "benchmark_version": version,
        "sidecar_protocol": sidecar::PROTOCOL,
        "sidecar_script_sha256": sha256_hex(sidecar::SCRIPT.as_bytes()),
        "requirements_sha256": sha256_hex(sidecar::REQUIREMENTS.as_bytes()),
        "pinned_distributions": sidecar::pins().len(),
        "frozen_time": FROZEN_TIME,
    })
}

/// The sidecar's clock (`FROZEN_NOW` in sidecar.py).
pub const FROZEN_TIME: &str = "2024-05-15T12:00:00";

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_catalogue_has_the_published_counts() {
        let v = &catalogue().versions[DEFAULT_VERSION];
        let counts: Vec<(usize, usize)> = SUITES
            .iter()
            .map(|s| (v[*s].user_tasks.len(), v[*s].injection_tasks.len()))
            .collect();
        assert_eq!(counts, [(40, 14), (20, 7), (16, 9), (21, 5)]);
        let pairs: usize = counts.iter().map(|(u, i)| u * i).sum();
        let users: usize = counts.iter().map(|(u, _)| u).sum();
        assert_eq!((pairs, users), (949, 97));
        assert_eq!(catalogue().versions.len(), VERSIONS.len());
    }
}
