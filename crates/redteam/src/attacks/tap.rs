//! `tap`: Tree of Attacks with Pruning. From the behavior, an attacker model grows a
//! tree of prompts: at each depth every frontier node gets `branching_factor` refined
//! children, each child is sent to the target and scored by the in-loop judge, and only
//! the `keep_width` best children stay in the frontier (the rest are marked pruned).
//! The search stops at the first in-loop success or after `max_depth` levels. Every
//! branch, prompt and score is kept in the attempt's metadata (see [`super::search`]).
//! The attacker instructions are gauntlet's own (shared with `pair`).

use super::pair::{attacker_system, attacker_turn};
use super::search::{
    ATTACKER_PARAM, JUDGE_PARAM, PROMPT, SearchAttack, Searcher, Tree, ask_attacker, try_target,
};
use crate::attack::{AttackCtx, Attempt, CallModel, PlannedCalls, TRANSFORMS};
use crate::error::BuildError;
use crate::judge::AttackEntry;
use crate::judge::BuildJudge;
use crate::plugin::Entry;
use gauntlet_core::behavior::Behavior;
use gauntlet_core::message::Message;
use gauntlet_core::params::{Axis, DefaultValue, ParamKind, ParamSpec, PluginInfo, PluginSpec};
use gauntlet_core::rng::derive_u64;
use gauntlet_models::{BoxFuture, ModelError};

pub const INFO: PluginInfo = PluginInfo {
    axis: Axis::Attack,
    name: "tap",
    doc: "tree of attacks with pruning (TAP): branch refined prompts, keep the best-scored, stop at the first success",
    params: &[
        ATTACKER_PARAM,
        JUDGE_PARAM,
        ParamSpec {
            name: "max_depth",
            kind: ParamKind::Int { min: 1, max: 20 },
            default: DefaultValue::Int(3),
            doc: "levels of refinement",
        },
        ParamSpec {
            name: "branching_factor",
            kind: ParamKind::Int { min: 1, max: 10 },
            default: DefaultValue::Int(2),
            doc: "children per frontier node per level",
        },
        ParamSpec {
            name: "keep_width",
            kind: ParamKind::Int { min: 1, max: 20 },
            default: DefaultValue::Int(2),
            doc: "frontier nodes kept after pruning at each level",
        },
        TRANSFORMS,
    ],
};

/// Its threat-map row (`attacks` in `taxonomy/threat_map.json`): framework key and
/// entry ids.
pub const THREAT: gauntlet_core::taxonomy::ThreatEntry = &[
    ("mitre_atlas", &["AML.T0051.000", "AML.T0054", "AML.T0065"]),
    ("eu_ai_act", &["Art. 15", "Art. 55"]),
];

/// This attack's registration (listed in `ENTRIES` in `attacks/mod.rs`).
pub const ENTRY: AttackEntry = Entry {
    info: INFO,
    build: |s, build_judge| Ok(Box::new(TapAttack::new(s.clone(), build_judge)?)),
};

pub struct TapAttack {
    spec: PluginSpec,
    search: Searcher,
    max_depth: u32,
    branching_factor: u32,
    keep_width: u32,
}

impl TapAttack {
    /// The attack `spec` describes, its in-loop judge built with `build_judge`.
    pub fn new(spec: PluginSpec, build_judge: BuildJudge) -> Result<Self, BuildError> {
        let search = Searcher::new(&spec, build_judge)?;
        let p = |k: &str, d: i64| spec.params.int(k).unwrap_or(d).max(1) as u32;
        Ok(TapAttack {
            max_depth: p("max_depth", 3),
            branching_factor: p("branching_factor", 2),
            keep_width: p("keep_width", 2),
            search,
            spec,
        })
    }
    /// Nodes the full tree has at most: `bf` at depth 1, `keep_width × bf` below.
    fn max_nodes(&self) -> u64 {
        let bf = u64::from(self.branching_factor);
        let first = bf;
        let width = u64::from(self.keep_width).min(bf * bf.max(1).pow(self.max_depth));
        first + u64::from(self.max_depth - 1) * width * bf
    }
}

impl SearchAttack for TapAttack {
    fn parts(&self) -> (&PluginSpec, &Searcher) {
        (&self.spec, &self.search)
    }
    fn planned(&self) -> PlannedCalls {
        self.search.planned_calls(self.max_nodes())
    }
    fn search<'a>(
        &'a self,
        behavior: &'a Behavior,
        attacker: &'a dyn CallModel,
        ctx: AttackCtx<'a>,
    ) -> BoxFuture<'a, Result<Vec<Attempt>, ModelError>> {
        Box::pin(async move {
            let system = attacker_system(&behavior.prompt);
            let mut tree = Tree::new("tap");
            // The frontier: `None` is the root (no prompt yet).
            let mut frontier: Vec<Option<u32>> = vec![None];
            'search: for depth in 1..=self.max_depth {
                let mut children: Vec<u32> = Vec::new();
                for parent in &frontier {
                    for k in 0..self.branching_factor {
                        let branch = children.len() as u32;
                        let feedback = parent.map(|p| {
                            let n = &tree.nodes[p as usize];
                            (
                                n.prompt.as_str(),
                                n.response.as_deref().or(n.error.as_deref()).unwrap_or(""),
                                n.score,
                            )
                        });
                        let s = derive_u64(
                            ctx.seed,
                            &[
                                "tap",
                                &depth.to_string(),
                                &parent.map_or(u32::MAX, |p| p).to_string(),
                                &k.to_string(),
                            ],
                        );
                        tree.attacker_queries += 1;
                        let prompt = match ask_attacker(
                            PROMPT,
                            attacker,
                            self.search.attacker_max_tokens,
                            system.clone(),
                            attacker_turn(feedback),
                            s,
                        )
                        .await?
                        {
                            Ok(p) => p,
                            Err(why) => {
                                children.push(tree.failed(*parent, depth, branch, why.to_string()));
                                continue;
                            }
                        };
                        let attempt =
                            try_target(ctx.target, vec![Message::user(prompt.clone())], s).await?;
                        let id = tree
                            .judged(
                                self.search.judge.as_ref(),
                                ctx.judge_grader,
                                behavior,
                                *parent,
                                depth,
                                branch,
                                prompt,
                                attempt,
                            )
                            .await?;
                        children.push(id);
                        if tree.success.is_some() {
                            break 'search;
                        }
                    }
                }
                // Prune: keep the best-scored children that got a judged reply (stable
                // order on ties); failed branches never stay in the frontier.
                let mut ranked: Vec<u32> = children
                    .iter()
                    .copied()
                    .filter(|&c| tree.nodes[c as usize].score.is_some())
                    .collect();
                ranked.sort_by(|a, b| {
                    let s = |i: &u32| tree.nodes[*i as usize].score.unwrap_or(0.0);
                    s(b).total_cmp(&s(a))
                });
                ranked.truncate(self.keep_width as usize);
                for &c in &children {
                    if !ranked.contains(&c) {
                        tree.nodes[c as usize].pruned = true;
                    }
                }
                if ranked.is_empty() {
                    // Nothing judged at this level: retry from the same parents.
                    continue;
                }
                frontier = ranked.into_iter().map(Some).collect();
            }
            let params = serde_json::json!({
                "max_depth": self.max_depth, "branching_factor": self.branching_factor, "keep_width": self.keep_width,
            });
            Ok(vec![tree.finish(params, "max_depth")])
        })
    }
}
