//! `yaml_framing`: the request as a literal block scalar of a YAML task document (a
//! config file, not a chat message).

use crate::error::BuildError;
use crate::transform::seam::{Applied, Family, Transform};
use gauntlet_core::params::{Axis, PluginInfo, PluginSpec};
use gauntlet_core::rng::ChaCha8Rng;

pub const FAMILY: Family = Family::Structure;
pub const INFO: PluginInfo = PluginInfo {
    axis: Axis::Transform,
    name: "yaml_framing",
    doc: "structure: the request inside a YAML task document",
    params: &[],
};

const HEAD: &str = "Carry out the task described by this YAML document and write the result.\n\n```yaml\ntask: respond\nrequest: |2-\n";
const TAIL: &str = "\noutput_format: full text, no commentary\n```";

pub struct YamlFraming {
    spec: PluginSpec,
}

impl Transform for YamlFraming {
    fn spec(&self) -> &PluginSpec {
        &self.spec
    }
    fn family(&self) -> Family {
        FAMILY
    }
    fn apply(&self, text: &str, _rng: &mut ChaCha8Rng) -> Applied {
        // A literal block scalar with an explicit indentation of 2: every line, whatever
        // it starts with, is content.
        let body: Vec<String> = text.split('\n').map(|l| format!("  {l}")).collect();
        Applied::Text(format!("{HEAD}{}{TAIL}", body.join("\n")))
    }
    fn invert(&self, sent: &str) -> Option<String> {
        let body = sent.strip_prefix(HEAD)?.strip_suffix(TAIL)?;
        body.split('\n')
            .map(|l| l.strip_prefix("  "))
            .collect::<Option<Vec<_>>>()
            .map(|v| v.join("\n"))
    }
}

pub fn build(spec: &PluginSpec) -> Result<Box<dyn Transform>, BuildError> {
    Ok(Box::new(YamlFraming { spec: spec.clone() }))
}

#[cfg(test)]
mod tests {
    use super::super::testing::{build_yaml, run, text};
    use proptest::prelude::*;

    #[test]
    fn is_yaml_a_parser_reads_back() {
        let t = build_yaml("yaml_framing");
        let sent = run(t.as_ref(), "line one\n  indented: yes\n- item", 0);
        let doc = sent
            .split("```yaml\n")
            .nth(1)
            .unwrap()
            .strip_suffix("\n```")
            .unwrap();
        let v = gauntlet_core::tree::parse_yaml(doc).unwrap();
        assert_eq!(
            v.get("request").and_then(|n| n.as_str()),
            Some("line one\n  indented: yes\n- item")
        );
    }

    proptest! {
        #[test]
        fn round_trips(s in text()) {
            let t = build_yaml("yaml_framing");
            prop_assert_eq!(t.invert(&run(t.as_ref(), &s, 0)), Some(s));
        }
    }
}
