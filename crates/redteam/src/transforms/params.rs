//! The params several transforms share, and readers of a param with its default.

use gauntlet_core::params::{Axis, DefaultValue, ParamKind, ParamSpec, PluginSpec};

/// Whether an encoding says what it is and asks for the message to be decoded.
pub const INSTRUCT: ParamSpec = ParamSpec {
    name: "instruct",
    kind: ParamKind::Bool,
    default: DefaultValue::Bool(true),
    doc: "put a one-line instruction to decode the message before it",
};

/// Whether an encoding asks for the answer in the same encoding.
pub const REPLY_ENCODED: ParamSpec = ParamSpec {
    name: "reply_encoded",
    kind: ParamKind::Bool,
    default: DefaultValue::Bool(false),
    doc: "ask for the answer in the same encoding; the reply is decoded before judging (both forms kept)",
};

/// The probability a random perturbation applies to each unit (character or word).
pub const fn rate(default: f64, doc: &'static str) -> ParamSpec {
    ParamSpec {
        name: "rate",
        kind: ParamKind::Float { min: 0.0, max: 1.0 },
        default: DefaultValue::Float(default),
        doc,
    }
}

/// The attacker model of a model-driven transform.
pub const ATTACKER: ParamSpec = ParamSpec {
    name: "attacker",
    kind: ParamKind::Spec(Axis::Target),
    default: DefaultValue::Absent,
    doc: "the model that rewrites the prompt (any target spec); absent: the attack's own attacker (pair, tap, crescendo)",
};

/// Output tokens of a model-driven rewrite.
pub const MAX_TOKENS: ParamSpec = ParamSpec {
    name: "max_tokens",
    kind: ParamKind::Int {
        min: 16,
        max: 32_768,
    },
    default: DefaultValue::Int(1024),
    doc: "output tokens allowed to the rewrite",
};

/// A float param, or its default.
pub fn float(spec: &PluginSpec, name: &str, default: f64) -> f64 {
    spec.params.float(name).unwrap_or(default)
}

/// A bool param, or its default.
pub fn flag(spec: &PluginSpec, name: &str, default: bool) -> bool {
    spec.params.bool(name).unwrap_or(default)
}

/// An int param, or its default.
pub fn int(spec: &PluginSpec, name: &str, default: i64) -> i64 {
    spec.params.int(name).unwrap_or(default)
}
