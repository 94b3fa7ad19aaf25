//! Prompt transforms, one file per plugin; [`REGISTRY`] is the closed list (adding a
//! transform is one file plus one `entry!` line in `registry.rs`). The seam they plug
//! into — the [`Transform`](crate::transform::seam::Transform) trait, chains, and the wrapper that applies a chain to any attack — is
//! [`crate::transform`]; the trait itself sits below this registry (`transform/seam.rs`),
//! the chains above it.
//!
//! Families: encodings (the whole text in another alphabet, optionally asking for the
//! answer in it too), character-level perturbations (legible to a reader, not to a
//! keyword filter), structural framings (the request inside JSON, code, fiction, a
//! many-shot dialogue, …) and model-driven rewrites (the attacker model translates,
//! paraphrases, persuades). Every bundled template and shot is gauntlet's own benign
//! text.
//!
//! The files beside them hold what several transforms share: the [`Encoded`] transform
//! every encoding is built from (`encoded.rs`), the [`Framed`] and [`Rewrite`] shapes,
//! the reply-decoding heuristics (`text.rs`), common params (`params.rs`), and the
//! bundled faux dialogues of the few-shot and many-shot transforms (and the `many_shot`
//! attack; `shots.rs`).

pub mod atbash;
pub mod base32;
pub mod base64;
pub mod binary;
pub mod caesar;
pub mod char_codes;
pub mod char_noise;
pub mod char_spacing;
pub mod char_swap;
pub mod code_completion;
pub mod diacritics;
pub mod distractors;
pub mod emoji_substitution;
pub mod fake_system;
pub mod few_shot;
pub mod fictional_framing;
pub mod full_width;
pub mod hex;
pub mod homoglyphs;
pub mod json_framing;
pub mod leetspeak;
pub mod many_shot;
pub mod markdown_table;
pub mod morse;
pub mod paraphrase;
pub mod past_tense;
pub mod payload_split;
pub mod persuasion;
pub mod prefix_injection;
pub mod random_caps;
pub mod refusal_suppression;
pub mod reverse_text;
pub mod reverse_words;
pub mod rot13;
pub mod strip_vowels;
pub mod suffix_injection;
pub mod tag_smuggling;
pub mod tense_shift;
pub mod tone_shift;
pub mod translate;
pub mod upside_down;
pub mod url_encode;
pub mod word_scramble;
pub mod yaml_framing;
pub mod zero_width;

// What several transforms share, and the registry.
mod encoded;
mod framed;
mod params;
mod registry;
mod rewrite;
mod shots;
#[cfg(test)]
pub(crate) mod testing;
mod text;

pub use encoded::{Codec, Encoded};
pub use framed::{Framed, TEMPLATE};
pub use params::{ATTACKER, INSTRUCT, MAX_TOKENS, REPLY_ENCODED, flag, float, int, rate};
pub use registry::{Entry, INFOS, REGISTRY, build, family_of};
pub use rewrite::{REWRITE_FORMAT, Rewrite};
pub use shots::{SHOTS, Shot, dialogue, pick_shots};
pub use text::{english_score, map_words, mostly_printable, strip_fences};
