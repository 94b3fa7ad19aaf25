//! Building transforms in tests exactly as a config would (defaults filled in).

use super::build;
use crate::transform::seam::Transform;
use gauntlet_core::params::{Axis, resolve_spec};
use gauntlet_core::tree::parse_yaml;

/// A transform from a YAML spec (`base64`, `{name: caesar, params: {shift: 5}}`).
pub(crate) fn build_yaml(yaml: &str) -> Box<dyn Transform> {
    let node = parse_yaml(yaml).unwrap();
    let mut diags = Vec::new();
    let spec = resolve_spec(
        &crate::registry::Registry,
        Axis::Transform,
        &node,
        "t",
        &mut diags,
    )
    .unwrap_or_else(|| panic!("{yaml}: {diags:?}"));
    assert!(diags.is_empty(), "{yaml}: {diags:?}");
    build(&spec).unwrap()
}

/// Applies a pure transform under a seed.
pub(crate) fn run(t: &dyn Transform, text: &str, seed: u64) -> String {
    crate::transform::apply_pure(t, text, &mut gauntlet_core::rng::rng_for(seed, &["t"]))
}

/// Text a property test feeds every transform: any Unicode, weighted to words.
pub(crate) fn text() -> impl proptest::strategy::Strategy<Value = String> {
    use proptest::prelude::*;
    prop_oneof![
        3 => "[a-zA-Z0-9 ,.?!'\n-]{0,80}",
        1 => any::<String>(),
    ]
}
