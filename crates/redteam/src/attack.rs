//! The attack seam: what an attack produces and how it reaches the target.

use crate::curves::CurveSpec;
use gauntlet_core::behavior::Behavior;
use gauntlet_core::params::{Axis, DefaultValue, ParamKind, ParamSpec, PluginSpec};
use gauntlet_models::{BoxFuture, ModelError};

// What an attack produces has its own file; the seam names it here.
pub use crate::attempt::{Attempt, AttemptError};
/// The model-call seam ([`CallModel`], [`Conversation`]) lives in the call layer.
pub use gauntlet_calls::seam::{CallModel, Conversation, PrefixMemo};

/// The `transforms` param every attack takes: a prompt-transform chain applied to every
/// user turn the attack sends (see [`crate::transform`]). Absent by default, so an attack
/// without transforms keeps its identity (and every call key) unchanged.
pub const TRANSFORMS: ParamSpec = ParamSpec {
    name: gauntlet_core::params::TRANSFORMS_PARAM,
    kind: ParamKind::SpecList(Axis::Transform),
    default: DefaultValue::Absent,
    doc: "prompt transforms applied in order to every user turn sent (see `transforms:` in `gauntlet list`)",
};

/// What the engine hands an attack for one unit: every model already wrapped with the
/// cache, journal and query budget, each under its own role.
#[derive(Clone, Copy)]
pub struct AttackCtx<'a> {
    /// The target under test.
    pub target: &'a dyn CallModel,
    /// The attacker model, for attacks that declare one ([`Attack::attacker`]).
    pub attacker: Option<&'a dyn CallModel>,
    /// The grader of the attack's in-loop judge, when that judge has one
    /// ([`Attack::judge_grader`]).
    pub judge_grader: Option<&'a dyn CallModel>,
    /// Derived from the run seed and the unit's identity.
    pub seed: u64,
    /// Where the unit stands in the run's canonical order, for attacks that learn across
    /// behaviors (`adaptive`). `None` outside an unsharded engine run.
    pub place: Option<Place<'a>>,
}

/// A unit's place in canonical order: its group (one attack against one target on one
/// dataset in one trial) and its position in that group (the behavior's index). Every
/// unit of a group at a lower position was started before this one, and a unit waiting
/// on one of them never holds back its start (the engine hands out concurrency in
/// canonical order).
#[derive(Clone, Copy)]
pub struct Place<'a> {
    pub group: u64,
    pub position: u64,
    /// Why waiting on an earlier unit of the group is pointless now (the run stops, its
    /// budget is spent or a fatal error halted it): then that unit may never finish.
    pub given_up: &'a (dyn Fn() -> Option<ModelError> + Sync),
}

/// Model calls an attack makes per behavior at most, by role (for `--estimate`).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct PlannedCalls {
    pub target: u64,
    pub attacker: u64,
    /// Calls to the in-loop judge's grader.
    pub judge: u64,
}

/// An attack: turns a behavior into attempts against a target.
pub trait Attack: Send + Sync {
    fn spec(&self) -> &PluginSpec;
    /// How many attempts `run` makes per behavior at most (for planning and progress).
    fn max_attempts(&self) -> u32;
    /// Runs the attack. `seed` is derived from the run seed and this unit's identity.
    fn run<'a>(
        &'a self,
        behavior: &'a Behavior,
        target: &'a dyn CallModel,
        seed: u64,
    ) -> BoxFuture<'a, Result<Vec<Attempt>, ModelError>>;
    /// Whether the attack runs on `behavior` at all. The plan has no unit for a
    /// behavior its attack does not apply to (an imported probe's attack applies to
    /// that probe's prompts only); every attack but those applies to every behavior.
    fn applies_to(&self, _behavior: &Behavior) -> bool {
        true
    }
    /// The attacker model spec, for attacks driven by an attacker LLM.
    fn attacker(&self) -> Option<&PluginSpec> {
        None
    }
    /// The grader model spec of the attack's in-loop judge, when it has one.
    fn judge_grader(&self) -> Option<&PluginSpec> {
        None
    }
    /// The attack-success curve the attack measures, if it scales with a budget
    /// (Best-of-N: attempts; many-shot: shots). See [`crate::curves`].
    fn curve(&self) -> Option<CurveSpec> {
        None
    }
    /// Calls per behavior at most, by role.
    fn planned_calls(&self) -> PlannedCalls {
        PlannedCalls {
            target: u64::from(self.max_attempts()),
            ..Default::default()
        }
    }
    /// Runs the attack with every model it may use. The engine calls this; the default
    /// forwards to [`Attack::run`], so single-model attacks implement only `run`.
    fn run_ctx<'a>(
        &'a self,
        behavior: &'a Behavior,
        ctx: AttackCtx<'a>,
    ) -> BoxFuture<'a, Result<Vec<Attempt>, ModelError>> {
        self.run(behavior, ctx.target, ctx.seed)
    }
}
