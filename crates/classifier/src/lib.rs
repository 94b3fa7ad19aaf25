//! gauntlet's offline refusal classifier.
//!
//! Decides whether a model's reply is a refusal with a small trained model that runs in
//! process — no network, no API key: the all-MiniLM-L6-v2 sentence encoder (candle)
//! embeds chosen windows of the reply ([`view`]) and a head trained on human-labelled
//! replies ([`head`]) turns the embeddings into a probability. The heavy part (candle,
//! tokenizers) sits behind the `model` feature; without it this crate still knows where
//! the weights belong and how to install them ([`weights`]), so a build without the model
//! can tell the user exactly what to do.
//!
//! Training: `scripts/train-refusal-classifier.sh` (embeddings from this crate's
//! `gauntlet-refusal-classifier embed`, the head fitted by scikit-learn, leave-one-model-out
//! cross-validation printed).

// Files are read through `gauntlet_core::files` only (clippy.toml says why).
#![cfg_attr(not(test), deny(clippy::disallowed_methods))]

pub mod head;
pub mod view;
pub mod weights;

#[cfg(feature = "model")]
pub mod classifier;
#[cfg(feature = "model")]
pub mod encoder;
