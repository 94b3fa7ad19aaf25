//! The prompt-transform seam itself: the [`Transform`] trait every plugin of
//! [`crate::transforms`] implements, what applying one gives ([`Applied`]) and the
//! families transforms come in ([`Family`]). Chains and the wrapper that applies them to
//! an attack ([`crate::transform`]) build on it, over the registry.

use gauntlet_core::params::PluginSpec;
use gauntlet_core::rng::ChaCha8Rng;

/// The families transforms come in (also the threat map's `transform_families` keys).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Family {
    /// A reversible encoding of the whole text (base64, hex, morse, …).
    Encoding,
    /// Character-level perturbation that keeps the text legible to a reader.
    Character,
    /// A framing around the text (JSON, payload splitting, many-shot, fiction, …).
    Structure,
    /// A rewrite by the attacker model (translation, paraphrase, persuasion, …).
    Model,
}

impl Family {
    pub fn as_str(self) -> &'static str {
        match self {
            Family::Encoding => "encoding",
            Family::Character => "character",
            Family::Structure => "structure",
            Family::Model => "model",
        }
    }
}

/// What applying a transform to a text gives.
#[derive(Debug, Clone, PartialEq)]
pub enum Applied {
    /// The rewritten text.
    Text(String),
    /// A model-driven transform's request for the attacker model; the rewrite is
    /// [`Transform::rewrite_from`] of its reply.
    AskModel {
        system: String,
        user: String,
        max_tokens: u32,
    },
}

/// A prompt transform. Implementations are pure functions of the text and the seeded
/// generator, except model-driven ones, which describe the model call to make.
pub trait Transform: Send + Sync {
    fn spec(&self) -> &PluginSpec;
    fn family(&self) -> Family;
    /// Rewrites one user turn.
    fn apply(&self, text: &str, rng: &mut ChaCha8Rng) -> Applied;
    /// A model-driven transform's rewrite from the attacker's reply; `None` when the
    /// reply holds no usable text.
    fn rewrite_from(&self, reply: &str) -> Option<String> {
        let t = reply.trim();
        (!t.is_empty()).then(|| t.to_string())
    }
    /// When the transform asked the target to answer in its own encoding: the reply
    /// decoded, or `None` when the reply is not (better read) in that encoding.
    fn decode_reply(&self, _reply: &str) -> Option<String> {
        None
    }
    /// The input back from the output, for transforms that can be undone exactly on
    /// their domain (checked by property tests; nothing at run time relies on it).
    fn invert(&self, _sent: &str) -> Option<String> {
        None
    }
    /// The attacker model a model-driven transform asks (its `attacker` param).
    fn attacker(&self) -> Option<&PluginSpec> {
        None
    }
}

/// Applies a pure transform (panics on a model-driven one: callers check the family).
pub fn apply_pure(t: &dyn Transform, text: &str, rng: &mut ChaCha8Rng) -> String {
    match t.apply(text, rng) {
        Applied::Text(s) => s,
        Applied::AskModel { .. } => {
            unreachable!("apply_pure on a model-driven transform (the family is checked)")
        }
    }
}
