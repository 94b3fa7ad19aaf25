//! The trained head: from the reply's embeddings to a refusal probability.
//!
//! A small feed-forward network (one layer = logistic regression; more layers = an MLP
//! with ReLU between them) over the concatenated, L2-normalised embeddings of the views
//! it names, ending in one logit and a sigmoid. It is trained by
//! `scripts/train-refusal-classifier.sh` and shipped in the repository
//! (`head/refusal_head.json`, a few KB) with its sha256 pinned in [`SHIPPED_SHA256`], so
//! a verdict can name the exact head that produced it. Arithmetic is in f64 over the
//! f32 embeddings, in a fixed order: the same features give the same probability.

use crate::view::{View, ViewError};
use serde::Deserialize;
use sha2::{Digest, Sha256};

/// The head shipped with gauntlet.
pub const SHIPPED_JSON: &str = include_str!("../head/refusal_head.json");
/// sha256 of [`SHIPPED_JSON`] (checked by a test, so the constant and the file never drift).
pub const SHIPPED_SHA256: &str = "7124ddf4686a8a75750dfef4aeec05707658576ee9d6522babd89e1c628272a4";
/// The head file format this code reads.
pub const FORMAT: &str = "gauntlet-refusal-head/1";

#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
struct HeadFile {
    format: String,
    /// The encoder the head was trained on (its safetensors sha256).
    encoder_sha256: String,
    views: Vec<String>,
    /// Embedding width per view.
    dim: usize,
    layers: Vec<LayerFile>,
    threshold: f64,
    /// Free-form record of how the head was trained (data hashes, hyperparameters, CV).
    #[serde(default)]
    #[expect(dead_code, reason = "kept in the file for provenance; never read")]
    training: serde_json::Value,
}

#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
struct LayerFile {
    /// `out × in`, row-major.
    weights: Vec<Vec<f64>>,
    bias: Vec<f64>,
}

/// Why a head file is not a usable head; every message starts `head file: `.
#[derive(Debug, thiserror::Error)]
pub enum HeadError {
    #[error("head file: {0}")]
    Json(#[source] serde_json::Error),
    #[error("head file: format `{format}`, this gauntlet reads `{FORMAT}`")]
    Format { format: String },
    #[error("head file: `views` is empty")]
    NoViews,
    #[error("head file: {0}")]
    View(#[source] ViewError),
    #[error("head file: dim {dim} is not in 1..=4096")]
    Dim { dim: usize },
    #[error("head file: no layers")]
    NoLayers,
    #[error("head file: layer {layer} has {rows} weight rows and {biases} biases")]
    Biases {
        layer: usize,
        rows: usize,
        biases: usize,
    },
    #[error("head file: layer {layer} row {row} has {got} weights, expected {want}")]
    RowWidth {
        layer: usize,
        row: usize,
        got: usize,
        want: usize,
    },
    #[error("head file: layer {layer} has a non-finite number")]
    NonFinite { layer: usize },
    #[error("head file: the last layer has {outputs} outputs, expected 1")]
    Outputs { outputs: usize },
    #[error("head file: threshold {threshold} is not in (0, 1)")]
    Threshold { threshold: f64 },
}

/// A validated head.
#[derive(Debug, Clone)]
pub struct Head {
    views: Vec<View>,
    dim: usize,
    layers: Vec<LayerFile>,
    threshold: f64,
    encoder_sha256: String,
    sha256: String,
}

impl Head {
    /// The head shipped in the repository.
    pub fn shipped() -> Head {
        Head::parse(SHIPPED_JSON).expect("the shipped head is valid (checked by a test)")
    }

    /// Parses and validates a head file: format, view names, and that the layer shapes
    /// chain from `dim × views` inputs to one output, every number finite.
    pub fn parse(json: &str) -> Result<Head, HeadError> {
        let f: HeadFile = serde_json::from_str(json).map_err(HeadError::Json)?;
        if f.format != FORMAT {
            return Err(HeadError::Format { format: f.format });
        }
        if f.views.is_empty() {
            return Err(HeadError::NoViews);
        }
        let views = f
            .views
            .iter()
            .map(|v| v.parse::<View>().map_err(HeadError::View))
            .collect::<Result<Vec<_>, _>>()?;
        if f.dim == 0 || f.dim > 4096 {
            return Err(HeadError::Dim { dim: f.dim });
        }
        if f.layers.is_empty() {
            return Err(HeadError::NoLayers);
        }
        let mut width = f.dim * views.len();
        for (i, l) in f.layers.iter().enumerate() {
            if l.weights.is_empty() || l.weights.len() != l.bias.len() {
                return Err(HeadError::Biases {
                    layer: i,
                    rows: l.weights.len(),
                    biases: l.bias.len(),
                });
            }
            if let Some(r) = l.weights.iter().position(|r| r.len() != width) {
                return Err(HeadError::RowWidth {
                    layer: i,
                    row: r,
                    got: l.weights[r].len(),
                    want: width,
                });
            }
            if !l
                .weights
                .iter()
                .flatten()
                .chain(&l.bias)
                .all(|x| x.is_finite())
            {
                return Err(HeadError::NonFinite { layer: i });
            }
            width = l.weights.len();
        }
        if width != 1 {
            return Err(HeadError::Outputs { outputs: width });
        }
        if !(f.threshold > 0.0 && f.threshold < 1.0) {
            return Err(HeadError::Threshold {
                threshold: f.threshold,
            });
        }
        let sha256 = hex(&Sha256::digest(json.as_bytes()));
        Ok(Head {
            views,
            dim: f.dim,
            layers: f.layers,
            threshold: f.threshold,
            encoder_sha256: f.encoder_sha256,
            sha256,
        })
    }

    pub fn views(&self) -> &[View] {
        &self.views
    }
    /// Embedding width per view.
    pub fn dim(&self) -> usize {
        self.dim
    }
    /// The trained decision threshold on the refusal probability.
    pub fn threshold(&self) -> f64 {
        self.threshold
    }
    /// sha256 of the head file.
    pub fn sha256(&self) -> &str {
        &self.sha256
    }
    /// sha256 of the safetensors the head was trained on.
    pub fn encoder_sha256(&self) -> &str {
        &self.encoder_sha256
    }

    /// The refusal probability for the concatenated view embeddings.
    ///
    /// # Panics
    /// When `features.len() != dim × views` (a caller bug, not a data condition).
    pub fn probability(&self, features: &[f32]) -> f64 {
        assert_eq!(features.len(), self.dim * self.views.len(), "feature width");
        let mut x: Vec<f64> = features.iter().map(|&v| f64::from(v)).collect();
        let last = self.layers.len() - 1;
        for (i, l) in self.layers.iter().enumerate() {
            x = l
                .weights
                .iter()
                .zip(&l.bias)
                .map(|(row, b)| {
                    let z = row.iter().zip(&x).fold(*b, |acc, (w, v)| acc + w * v);
                    if i < last { z.max(0.0) } else { z }
                })
                .collect();
        }
        sigmoid(x[0])
    }
}

fn sigmoid(z: f64) -> f64 {
    if z >= 0.0 {
        1.0 / (1.0 + (-z).exp())
    } else {
        let e = z.exp();
        e / (1.0 + e)
    }
}

/// Lower-case hex.
pub fn hex(bytes: &[u8]) -> String {
    use std::fmt::Write;
    bytes
        .iter()
        .fold(String::with_capacity(bytes.len() * 2), |mut s, b| {
            let _ = write!(s, "{b:02x}");
            s
        })
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    fn head(views: &str, layers: &str, threshold: f64) -> String {
        format!(
            r#"{{"format":"{FORMAT}","encoder_sha256":"e","views":{views},"dim":2,"layers":{layers},"threshold":{threshold}}}"#
        )
    }

    #[test]
    fn shipped_head_is_valid_and_its_hash_is_pinned() {
        let h = Head::shipped();
        assert_eq!(
            h.sha256(),
            SHIPPED_SHA256,
            "update SHIPPED_SHA256 after retraining"
        );
        assert_eq!(h.dim(), 384);
        assert_eq!(
            h.encoder_sha256(),
            crate::weights::pinned_sha256("model.safetensors").unwrap()
        );
    }

    #[test]
    fn logistic_and_mlp_by_hand() {
        // One layer: sigmoid(1*0.5 - 2*0.25 + 0.3) = sigmoid(0.3).
        let h = Head::parse(&head(
            r#"["open64"]"#,
            r#"[{"weights":[[1,-2]],"bias":[0.3]}]"#,
            0.5,
        ))
        .unwrap();
        let p = h.probability(&[0.5, 0.25]);
        assert!((p - 1.0 / (1.0 + (-0.3f64).exp())).abs() < 1e-12, "{p}");
        // Two layers with a ReLU between: hidden = relu([1, -1]) = [1, 0]; out = 2*1 + 5*0 - 1.
        let h = Head::parse(&head(
            r#"["open64"]"#,
            r#"[{"weights":[[1,0],[0,1]],"bias":[0,0]},{"weights":[[2,5]],"bias":[-1]}]"#,
            0.5,
        ))
        .unwrap();
        let p = h.probability(&[1.0, -1.0]);
        assert!((p - 1.0 / (1.0 + (-1.0f64).exp())).abs() < 1e-12, "{p}");
        // Extreme logits stay in [0, 1] without NaN.
        let h = Head::parse(&head(
            r#"["open64"]"#,
            r#"[{"weights":[[1e6,0]],"bias":[0]}]"#,
            0.5,
        ))
        .unwrap();
        assert_eq!(h.probability(&[-1.0, 0.0]), 0.0);
        assert_eq!(h.probability(&[1.0, 0.0]), 1.0);
    }

    #[test]
    fn bad_heads_are_refused_with_the_reason() {
        let cases = [
            (
                head(r#"["open64"]"#, r#"[{"weights":[[1]],"bias":[0]}]"#, 0.5),
                "expected 2",
            ),
            (
                head(
                    r#"["open64"]"#,
                    r#"[{"weights":[[1,1],[1,1]],"bias":[0,0]}]"#,
                    0.5,
                ),
                "2 outputs",
            ),
            (
                head(
                    r#"["open64"]"#,
                    r#"[{"weights":[[1,1]],"bias":[0,0]}]"#,
                    0.5,
                ),
                "2 biases",
            ),
            (
                head(r#"["open64"]"#, r#"[{"weights":[[1,1]],"bias":[0]}]"#, 1.0),
                "threshold",
            ),
            (
                head(r#"["nope"]"#, r#"[{"weights":[[1,1]],"bias":[0]}]"#, 0.5),
                "unknown view",
            ),
            (
                head(r#"[]"#, r#"[{"weights":[[1,1]],"bias":[0]}]"#, 0.5),
                "views",
            ),
            (head(r#"["open64"]"#, r#"[]"#, 0.5), "no layers"),
            ("{}".to_string(), "missing field"),
            (
                head(r#"["open64"]"#, r#"[{"weights":[[1,1]],"bias":[0]}]"#, 0.5)
                    .replace(FORMAT, "x/2"),
                "format",
            ),
        ];
        for (json, want) in cases {
            let e = Head::parse(&json).unwrap_err().to_string();
            assert!(e.contains(want), "{json}: {e}");
        }
    }

    proptest! {
        /// The head parser never panics on arbitrary input.
        #[test]
        fn parse_never_panics(s in "\\PC{0,200}") {
            let _ = Head::parse(&s);
        }
    }
}
