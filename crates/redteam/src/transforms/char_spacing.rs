//! `char_spacing`: a separator between the letters of every word ("w r i t e"), words
//! kept apart by a wider gap: the request spelled out, no whole word left.

use crate::error::BuildError;
use crate::transform::seam::{Applied, Family, Transform};
use gauntlet_core::params::{Axis, DefaultValue, ParamKind, ParamSpec, PluginInfo, PluginSpec};
use gauntlet_core::rng::ChaCha8Rng;

pub const FAMILY: Family = Family::Character;
pub const INFO: PluginInfo = PluginInfo {
    axis: Axis::Transform,
    name: "char_spacing",
    doc: "character: the letters of each word spaced out (w r i t e), words three spaces apart",
    params: &[ParamSpec {
        name: "separator",
        kind: ParamKind::Str,
        default: DefaultValue::Str(" "),
        doc: "what goes between two characters of a word (at most 64 bytes)",
    }],
};

const WORD_GAP: &str = "   ";
/// The longest separator.
pub const MAX_SEPARATOR_BYTES: usize = 64;

pub struct CharSpacing {
    spec: PluginSpec,
    sep: String,
}

impl Transform for CharSpacing {
    fn spec(&self) -> &PluginSpec {
        &self.spec
    }
    fn family(&self) -> Family {
        FAMILY
    }
    fn apply(&self, text: &str, _rng: &mut ChaCha8Rng) -> Applied {
        let words: Vec<String> = text
            .split_whitespace()
            .map(|w| {
                w.chars()
                    .map(String::from)
                    .collect::<Vec<_>>()
                    .join(&self.sep)
            })
            .collect();
        Applied::Text(words.join(WORD_GAP))
    }
    /// Exact for single-spaced words (with the default separator).
    fn invert(&self, sent: &str) -> Option<String> {
        Some(
            sent.split(WORD_GAP)
                .map(|w| w.replace(&self.sep, ""))
                .collect::<Vec<_>>()
                .join(" "),
        )
    }
}

pub fn build(spec: &PluginSpec) -> Result<Box<dyn Transform>, BuildError> {
    let sep = spec.params.str("separator").unwrap_or(" ").to_string();
    if sep.is_empty() {
        return Err(BuildError::param("`separator` is empty"));
    }
    // It goes between every two characters: a long one multiplies the prompt.
    if sep.len() > MAX_SEPARATOR_BYTES {
        return Err(BuildError::param(format!(
            "`separator` is {} bytes long; at most {MAX_SEPARATOR_BYTES} (it is repeated between every two characters)",
            sep.len()
        )));
    }
    Ok(Box::new(CharSpacing {
        sep,
        spec: spec.clone(),
    }))
}

#[cfg(test)]
mod tests {
    use super::super::testing::{build_yaml, run};
    use proptest::prelude::*;

    #[test]
    fn known_vector() {
        assert_eq!(
            run(build_yaml("char_spacing").as_ref(), "hi you", 0),
            "h i   y o u"
        );
    }

    proptest! {
        #[test]
        fn round_trips_on_single_spaced_words(words in prop::collection::vec("[a-zA-Z0-9,.?]{1,10}", 1..8)) {
            let s = words.join(" ");
            let t = build_yaml("char_spacing");
            prop_assert_eq!(t.invert(&run(t.as_ref(), &s, 0)), Some(s));
        }
    }
}
