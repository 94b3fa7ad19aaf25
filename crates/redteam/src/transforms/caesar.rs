//! `caesar`: every Latin letter shifted `shift` places (a Caesar cipher); other
//! characters unchanged.

use super::rot13::rotate;
use super::{Codec, Encoded, INSTRUCT, REPLY_ENCODED, int};
use crate::error::BuildError;
use crate::transform::seam::{Family, Transform};
use gauntlet_core::params::{Axis, DefaultValue, ParamKind, ParamSpec, PluginInfo, PluginSpec};

pub const FAMILY: Family = Family::Encoding;
pub const INFO: PluginInfo = PluginInfo {
    axis: Axis::Transform,
    name: "caesar",
    doc: "encoding: Latin letters shifted by `shift` (Caesar cipher), with an instruction to decode it",
    params: &[
        ParamSpec {
            name: "shift",
            kind: ParamKind::Int { min: 1, max: 25 },
            default: DefaultValue::Int(3),
            doc: "places each letter moves forward in the alphabet",
        },
        INSTRUCT,
        REPLY_ENCODED,
    ],
};

pub struct Caesar {
    shift: u8,
    label: String,
}

impl Caesar {
    pub fn new(shift: u8) -> Caesar {
        Caesar {
            shift,
            label: format!("a Caesar cipher with a shift of {shift}"),
        }
    }
}

impl Codec for Caesar {
    fn label(&self) -> &str {
        &self.label
    }
    fn encode(&self, text: &str) -> String {
        rotate(text, self.shift)
    }
    fn decode(&self, text: &str) -> Option<String> {
        Some(rotate(text, 26 - self.shift))
    }
    fn total(&self) -> bool {
        true
    }
}

pub fn build(spec: &PluginSpec) -> Result<Box<dyn Transform>, BuildError> {
    let shift = int(spec, "shift", 3).clamp(1, 25) as u8;
    Ok(Box::new(Encoded::new(spec, FAMILY, Caesar::new(shift))))
}

#[cfg(test)]
mod tests {
    use super::super::testing::text;
    use super::*;
    use proptest::prelude::*;

    #[test]
    fn known_vector() {
        assert_eq!(Caesar::new(3).encode("xyz ABC"), "abc DEF");
    }

    proptest! {
        #[test]
        fn round_trips_for_every_shift(s in text(), k in 1u8..26) {
            let c = Caesar::new(k);
            prop_assert_eq!(c.decode(&c.encode(&s)), Some(s));
        }
    }
}
