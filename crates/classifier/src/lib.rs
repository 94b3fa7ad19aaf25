//! gauntlet's offline refusal classifier.
//!
//! Decides whether a model's reply is a refusal with a small trained model that runs in
//! process — no API key, no model server: the all-MiniLM-L6-v2 sentence encoder
//! ([`encoder`]: its WordPiece tokeniser and BERT forward pass, written for this one
//! model) embeds chosen windows of the reply ([`view`]) and a head trained on labelled
//! replies ([`head`]) turns the embeddings into a probability. The weights are fetched
//! once, sha256-pinned, on first use ([`weights`]).
//!
//! Training: `scripts/train-refusal-classifier.sh` (embeddings from this crate's
//! `gauntlet-refusal-classifier embed`, the head fitted by scikit-learn, leave-one-source-out
//! cross-validation printed).

// Files are read through `gauntlet_core::files` only (clippy.toml says why).
#![cfg_attr(not(test), deny(clippy::disallowed_methods))]

pub mod bert;
pub mod classifier;
pub mod encoder;
pub mod head;
pub mod view;
pub mod weights;
pub mod wordpiece;
