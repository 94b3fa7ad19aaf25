//! The canonical identity of an exam (what its artefacts depend on), recorded in
//! `exam.json` and hashed.

use super::schema::{Backend, ExamConfig};
use crate::grade::effective_passes;
use gauntlet_corpus::load::Corpus;

/// The canonical identity of an exam: everything its artefacts depend on (not the
/// budget or the concurrency). Recorded in `exam.json`; another identity in the same
/// output directory moves the previous exam aside.
pub fn exam_identity(corpus: &Corpus, cfg: &ExamConfig) -> serde_json::Value {
    let tiers: serde_json::Map<String, serde_json::Value> = match &cfg.backend {
        Backend::Real { models, .. } => gauntlet_results::exam::TierRole::ALL
            .iter()
            .map(|r| {
                let tm = models.for_tier(crate::calls::role_tier(*r));
                (
                    r.name().to_string(),
                    serde_json::json!({"id": tm.id, "spec": tm.model.spec().key_identity()}),
                )
            })
            .collect(),
        Backend::Golden { .. } => serde_json::Map::new(),
    };
    serde_json::json!({
        "gauntlet_exam": 1,
        "harness_version": gauntlet_core::HARNESS_VERSION,
        "mode": cfg.mode(),
        "corpus_sha256": corpus.digest,
        "corpus_count": corpus.count,
        "passes": effective_passes(cfg.passes),
        "consensus": cfg.cascade.consensus,
        "findings_budget": cfg.cascade.findings_budget,
        "tool_loop": cfg.cascade.tool_loop,
        "max_tool_rounds": cfg.cascade.max_tool_rounds,
        "seed": cfg.cascade.seed,
        "e2e": cfg.e2e,
        "tiers": tiers,
    })
}

/// `exam.json`: [`exam_identity`] as pretty JSON with a final newline.
pub fn exam_identity_bytes(corpus: &Corpus, cfg: &ExamConfig) -> Vec<u8> {
    let mut b = serde_json::to_vec_pretty(&exam_identity(corpus, cfg)).expect("json");
    b.push(b'\n');
    b
}

/// sha256 of `exam.json` ([`exam_identity_bytes`]): `sha256sum exam.json` checks it.
pub fn exam_config_sha256(corpus: &Corpus, cfg: &ExamConfig) -> String {
    gauntlet_core::hash::sha256_hex(&exam_identity_bytes(corpus, cfg))
}
