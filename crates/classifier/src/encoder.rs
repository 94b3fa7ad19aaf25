//! The sentence encoder: all-MiniLM-L6-v2 run in process.
//!
//! The WordPiece tokeniser ([`crate::wordpiece`]) and the BERT forward pass
//! ([`crate::bert`]), mean pooling over the window's tokens and L2 normalisation — the
//! sentence-transformers recipe the model was trained with. Every file is checked
//! against its pinned sha256 before it is parsed. CPU only, one thread per window.

use crate::bert::{Bert, BertError, InputError};
use crate::view::{self, Pool, View, Window};
use crate::weights;
use crate::wordpiece::{TokenizerError, WordPiece};
use std::path::{Path, PathBuf};

/// Embedding width of all-MiniLM-L6-v2.
pub const DIM: usize = 384;

pub struct Encoder {
    model: Bert,
    tokenizer: WordPiece,
}

/// Why the encoder could not be loaded or run. `path` is the model file concerned.
#[derive(Debug, thiserror::Error)]
pub enum EncoderError {
    #[error("{}: {cause}", path.display())]
    Read {
        path: PathBuf,
        #[source]
        cause: std::io::Error,
    },
    /// A file whose sha256 is not the pinned one; `dir` is the model directory.
    #[error(
        "{}: sha256 {got}, expected {want} (a different or damaged file): delete it and the judge fetches the pinned one on first use, or reinstall with `{} {}`",
        path.display(),
        weights::INSTALL_SCRIPT,
        dir.display()
    )]
    Digest {
        path: PathBuf,
        got: String,
        want: &'static str,
        dir: PathBuf,
    },
    #[error(transparent)]
    Tokenizer(#[from] TokenizerError),
    #[error(transparent)]
    Bert(#[from] BertError),
    /// The model gives states of another width than [`DIM`].
    #[error("config.json: hidden_size {got}, the classifier needs {DIM}")]
    Width { got: usize },
    /// A window the model cannot take (a caller bug: windows are at most 256 tokens).
    #[error("encoder: {0}")]
    Input(#[from] InputError),
}

/// Reads a pinned file and checks its sha256.
fn read_pinned(dir: &Path, name: &str) -> Result<Vec<u8>, EncoderError> {
    let path = dir.join(name);
    // A model file is read whole to check its pin: capped, and never a device or a pipe
    // put where the weights should be.
    const MODEL_FILE: gauntlet_core::files::Kind = gauntlet_core::files::Kind {
        what: "model file",
        max_bytes: 1 << 30,
    };
    let bytes = match gauntlet_core::files::read(&path, MODEL_FILE) {
        Ok(b) => b,
        Err(e) => {
            return Err(EncoderError::Read {
                path,
                cause: e.into_io(),
            });
        }
    };
    let want = weights::pinned_sha256(name).expect("only pinned files are read");
    let got = weights::sha256_hex(&bytes);
    if got != want {
        return Err(EncoderError::Digest {
            path,
            got,
            want,
            dir: dir.to_path_buf(),
        });
    }
    Ok(bytes)
}

impl Encoder {
    /// Loads the encoder from `dir` (see [`weights`]), checking every file's sha256.
    pub fn load(dir: &Path) -> Result<Encoder, EncoderError> {
        let config = read_pinned(dir, "config.json")?;
        let tokenizer = WordPiece::from_json(&read_pinned(dir, "tokenizer.json")?)?;
        let model = Bert::load(&config, &read_pinned(dir, "model.safetensors")?)?;
        if model.hidden_size() != DIM {
            return Err(EncoderError::Width {
                got: model.hidden_size(),
            });
        }
        Ok(Encoder { model, tokenizer })
    }

    /// The reply's token ids (no special tokens) over the characters `view` reads.
    pub fn tokens(&self, text: &str, from_end: bool) -> Vec<u32> {
        let text = if from_end {
            view::tail_chars(text)
        } else {
            view::head_chars(text)
        };
        self.tokenizer.encode(text)
    }

    /// The encoder's final hidden states for one window (special tokens included):
    /// `len × DIM`, row-major.
    pub fn hidden(&self, window: &[u32]) -> Result<Vec<f32>, EncoderError> {
        Ok(self.model.forward(window)?)
    }

    /// The concatenated, L2-normalised pooled vectors of `views` of `text`, in order.
    /// Each distinct window is encoded once, whatever the number of its poolings.
    pub fn features(&self, text: &str, views: &[View]) -> Result<Vec<f32>, EncoderError> {
        let mut out = Vec::with_capacity(views.len() * DIM);
        let mut tokens: [Option<Vec<u32>>; 2] = [None, None];
        let mut states: Vec<(Window, usize, Vec<f32>)> = Vec::new();
        for &v in views {
            let i = match states.iter().position(|(w, _, _)| *w == v.window) {
                Some(i) => i,
                None => {
                    let slot = &mut tokens[usize::from(v.window.from_end())];
                    let ids = slot.get_or_insert_with(|| self.tokens(text, v.window.from_end()));
                    let ids = v
                        .window
                        .ids(ids, self.tokenizer.cls(), self.tokenizer.sep());
                    states.push((v.window, ids.len(), self.hidden(&ids)?));
                    states.len() - 1
                }
            };
            let (_, len, h) = &states[i];
            out.extend(pool(h, *len, v.pool));
        }
        Ok(out)
    }
}

/// Pools `len × DIM` states (f64 accumulation, fixed order) and L2-normalises.
fn pool(h: &[f32], len: usize, p: Pool) -> Vec<f32> {
    let (start, end) = p.rows(len);
    let rows = h[start * DIM..end * DIM].chunks_exact(DIM);
    let mut acc = vec![0f64; DIM];
    match p {
        Pool::Mean | Pool::First(_) => {
            for r in rows {
                acc.iter_mut().zip(r).for_each(|(a, &x)| *a += f64::from(x));
            }
            let n = (end - start) as f64;
            acc.iter_mut().for_each(|a| *a /= n);
        }
        Pool::Max => {
            acc.fill(f64::NEG_INFINITY);
            for r in rows {
                acc.iter_mut()
                    .zip(r)
                    .for_each(|(a, &x)| *a = a.max(f64::from(x)));
            }
        }
    }
    let norm = acc.iter().map(|a| a * a).sum::<f64>().sqrt().max(1e-12);
    acc.iter().map(|a| (a / norm) as f32).collect()
}
