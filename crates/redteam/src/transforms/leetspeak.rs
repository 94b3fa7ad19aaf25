//! `leetspeak`: letters replaced by look-alike digits (a→4, e→3, i→1, o→0, s→5, t→7,
//! and with `level: advanced` also b→8, g→9, l→|, z→2): still readable to a model,
//! no longer the words a keyword filter looks for.

use crate::error::BuildError;
use crate::transform::seam::{Applied, Family, Transform};
use gauntlet_core::params::{Axis, DefaultValue, ParamKind, ParamSpec, PluginInfo, PluginSpec};
use gauntlet_core::rng::ChaCha8Rng;

pub const FAMILY: Family = Family::Character;
pub const INFO: PluginInfo = PluginInfo {
    axis: Axis::Transform,
    name: "leetspeak",
    doc: "character: letters swapped for look-alike digits (a→4, e→3, o→0, …)",
    params: &[ParamSpec {
        name: "level",
        kind: ParamKind::Enum(&["basic", "advanced"]),
        default: DefaultValue::Str("basic"),
        doc: "basic: a e i o s t; advanced adds b g l z",
    }],
};

const BASIC: &[(char, char)] = &[
    ('a', '4'),
    ('e', '3'),
    ('i', '1'),
    ('o', '0'),
    ('s', '5'),
    ('t', '7'),
];
const ADVANCED: &[(char, char)] = &[('b', '8'), ('g', '9'), ('l', '|'), ('z', '2')];

pub struct Leetspeak {
    spec: PluginSpec,
    advanced: bool,
}

impl Leetspeak {
    /// The substitutions in effect (the inverse reads them; `apply` matches directly).
    fn table(&self) -> impl Iterator<Item = &'static (char, char)> {
        BASIC
            .iter()
            .chain(if self.advanced { ADVANCED } else { &[] })
    }
}

impl Transform for Leetspeak {
    fn spec(&self) -> &PluginSpec {
        &self.spec
    }
    fn family(&self) -> Family {
        FAMILY
    }
    fn apply(&self, text: &str, _rng: &mut ChaCha8Rng) -> Applied {
        // ASCII letters become ASCII symbols: rewritten byte by byte (a non-ASCII
        // character's bytes are never ASCII letters), the text stays valid UTF-8.
        let map = |b: u8| -> u8 {
            match b.to_ascii_lowercase() {
                b'a' => b'4',
                b'e' => b'3',
                b'i' => b'1',
                b'o' => b'0',
                b's' => b'5',
                b't' => b'7',
                b'b' if self.advanced => b'8',
                b'g' if self.advanced => b'9',
                b'l' if self.advanced => b'|',
                b'z' if self.advanced => b'2',
                _ => b,
            }
        };
        let bytes: Vec<u8> = text.bytes().map(map).collect();
        Applied::Text(String::from_utf8(bytes).expect("only ASCII bytes changed"))
    }
    /// Exact for text without digits or `|` whose letters are lower case.
    fn invert(&self, sent: &str) -> Option<String> {
        Some(
            sent.chars()
                .map(|c| self.table().find(|(_, v)| *v == c).map_or(c, |(k, _)| *k))
                .collect(),
        )
    }
}

pub fn build(spec: &PluginSpec) -> Result<Box<dyn Transform>, BuildError> {
    Ok(Box::new(Leetspeak {
        advanced: spec.params.str("level") == Some("advanced"),
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
            run(build_yaml("leetspeak").as_ref(), "Test site", 0),
            "7357 5173"
        );
        let adv = build_yaml("{name: leetspeak, params: {level: advanced}}");
        assert_eq!(run(adv.as_ref(), "global", 0), "9|084|");
    }

    proptest! {
        #[test]
        fn round_trips_on_lowercase_letters(s in "[a-z ,.]{0,60}", adv in any::<bool>()) {
            let t = build_yaml(if adv { "{name: leetspeak, params: {level: advanced}}" } else { "leetspeak" });
            let sent = run(t.as_ref(), &s, 0);
            prop_assert_eq!(t.invert(&sent), Some(s));
        }
    }
}
