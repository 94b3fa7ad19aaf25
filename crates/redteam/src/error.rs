//! Why a plugin could not be built from its spec: the one error every constructor of
//! an attack, injection, judge, metric and transform returns, so a caller can tell an
//! unknown name from an unusable parameter from a plugin that cannot run on this
//! machine, and walk a nested plugin's failure through [`std::error::Error::source`].

use thiserror::Error;

/// A plugin spec that does not build. Messages name the parameter and say what to give
/// instead; they are made at `Display` time.
#[derive(Debug, Clone, PartialEq, Eq, Error)]
pub enum BuildError {
    /// No plugin of the axis `kind` (`attack`, `judge`, …) is called `name`.
    #[error("unknown {kind} `{name}`")]
    Unknown { kind: &'static str, name: String },
    /// A parameter's value the plugin cannot use (the message names it).
    #[error("{0}")]
    Param(String),
    /// The plugin cannot run here: a backend not compiled in, a model's files missing.
    #[error("{0}")]
    Unavailable(String),
    /// A plugin inside this one failed to build: `transforms[2]`, `in-loop judge`, ….
    #[error("{place}: {source}")]
    Inner {
        place: String,
        #[source]
        source: Box<BuildError>,
    },
}

impl BuildError {
    /// [`BuildError::Param`].
    pub fn param(why: impl Into<String>) -> BuildError {
        BuildError::Param(why.into())
    }

    /// This error as the failure of the plugin at `place` inside another one.
    pub fn inside(self, place: impl Into<String>) -> BuildError {
        BuildError::Inner {
            place: place.into(),
            source: Box::new(self),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::error::Error as _;

    #[test]
    fn nested_failures_read_outside_in_and_chain_their_source() {
        let e = BuildError::param("`n` must be at least 1")
            .inside("transforms[2]")
            .inside("augmentations");
        assert_eq!(
            e.to_string(),
            "augmentations: transforms[2]: `n` must be at least 1"
        );
        let inner = e.source().and_then(|s| s.source()).unwrap();
        assert_eq!(inner.to_string(), "`n` must be at least 1");
        let u = BuildError::Unknown {
            kind: "judge",
            name: "nope".into(),
        };
        assert_eq!(u.to_string(), "unknown judge `nope`");
    }
}
