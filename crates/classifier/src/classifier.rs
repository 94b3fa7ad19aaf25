//! The refusal classifier: the encoder's view embeddings through the trained head.
//!
//! Loading reads and hashes 90 MB, so a process loads each model directory once and
//! shares it ([`shared`]); a judge built twice (validation, then the run) costs one load.

use crate::encoder::{DIM, Encoder, EncoderError};
use crate::head::Head;
use crate::view::{Pool, View, Window};
use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex, OnceLock};

pub struct RefusalClassifier {
    encoder: Encoder,
    head: Head,
}

/// One reply's classification.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Prediction {
    /// The head's refusal probability.
    pub probability: f64,
    /// The threshold it was compared with.
    pub threshold: f64,
    /// `probability >= threshold`.
    pub refusal: bool,
}

/// Why a classifier could not be loaded: a head that does not fit the encoder, or the
/// encoder itself.
#[derive(Debug, thiserror::Error)]
pub enum LoadError {
    /// `dim` is the head's embedding width.
    #[error("the head expects {dim}-wide embeddings, the encoder gives {DIM}")]
    HeadWidth { dim: usize },
    /// `trained_on` is the head's encoder sha256, `pinned` the pinned one.
    #[error(
        "the head was trained on encoder {trained_on}, not the pinned all-MiniLM-L6-v2 ({pinned})"
    )]
    HeadEncoder {
        trained_on: String,
        pinned: &'static str,
    },
    #[error(transparent)]
    Encoder(#[from] EncoderError),
}

impl RefusalClassifier {
    /// The encoder in `dir` with `head`.
    pub fn load(dir: &Path, head: Head) -> Result<RefusalClassifier, LoadError> {
        if head.dim() != DIM {
            return Err(LoadError::HeadWidth { dim: head.dim() });
        }
        let pinned = crate::weights::pinned_sha256("model.safetensors").expect("pinned");
        if head.encoder_sha256() != pinned {
            return Err(LoadError::HeadEncoder {
                trained_on: head.encoder_sha256().to_string(),
                pinned,
            });
        }
        Ok(RefusalClassifier {
            encoder: Encoder::load(dir)?,
            head,
        })
    }

    pub fn head(&self) -> &Head {
        &self.head
    }
    pub fn encoder(&self) -> &Encoder {
        &self.encoder
    }

    /// The head's features for `reply`.
    pub fn features(&self, reply: &str) -> Result<Vec<f32>, EncoderError> {
        self.encoder.features(reply, self.head.views())
    }

    /// Classifies `reply` against `threshold` (the head's own when `None`).
    pub fn classify(
        &self,
        reply: &str,
        threshold: Option<f64>,
    ) -> Result<Prediction, EncoderError> {
        let probability = self.head.probability(&self.features(reply)?);
        let threshold = threshold.unwrap_or(self.head.threshold());
        Ok(Prediction {
            probability,
            threshold,
            refusal: probability >= threshold,
        })
    }
}

/// The view an on-topic check embeds a request and a reply under: the first 64 tokens,
/// mean-pooled (the sentence-transformers embedding of the text's opening). As good as
/// 128 tokens on human-labelled replies at half the encoder's cost (BENCHMARKS.md,
/// "On-topic check").
pub const TOPIC_VIEW: View = View {
    window: Window::Open(64),
    pool: Pool::Mean,
};

impl RefusalClassifier {
    /// Cosine similarity of `request`'s and `reply`'s [`TOPIC_VIEW`] embeddings (both
    /// L2-normalised, so their dot product, accumulated in f64 in a fixed order).
    pub fn similarity(&self, request: &str, reply: &str) -> Result<f64, EncoderError> {
        let a = self.encoder.features(request, &[TOPIC_VIEW])?;
        let b = self.encoder.features(reply, &[TOPIC_VIEW])?;
        Ok(a.iter().zip(&b).map(|(x, y)| *x as f64 * *y as f64).sum())
    }
}

/// The process-wide classifier for `dir` with the shipped head, loaded on first use.
/// A failed load is not cached (the user may install the weights and retry).
pub fn shared(dir: &Path) -> Result<Arc<RefusalClassifier>, LoadError> {
    static LOADED: OnceLock<Mutex<HashMap<PathBuf, Arc<RefusalClassifier>>>> = OnceLock::new();
    let map = LOADED.get_or_init(Default::default);
    let mut map = map.lock().unwrap_or_else(|e| e.into_inner());
    if let Some(c) = map.get(dir) {
        return Ok(c.clone());
    }
    let c = Arc::new(RefusalClassifier::load(dir, Head::shipped())?);
    map.insert(dir.to_path_buf(), c.clone());
    Ok(c)
}
