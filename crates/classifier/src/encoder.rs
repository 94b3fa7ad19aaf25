//! The sentence encoder: all-MiniLM-L6-v2 run in process by candle.
//!
//! BERT (6 layers, 384 wide) from candle_transformers, the WordPiece tokeniser from
//! `tokenizers`, mean pooling over the window's tokens and L2 normalisation — the
//! sentence-transformers recipe the model was trained with. Every file is checked
//! against its pinned sha256 before it is used. CPU only; candle parallelises a matrix
//! product over `RAYON_NUM_THREADS` threads (default: all cores).

use crate::head::hex;
use crate::view::{self, Pool, View, Window};
use crate::weights;
use candle_core::{DType, Device, Tensor};
use candle_nn::VarBuilder;
use candle_transformers::models::bert::{BertModel, Config};
use sha2::{Digest, Sha256};
use std::path::{Path, PathBuf};
use tokenizers::Tokenizer;

/// Embedding width of all-MiniLM-L6-v2.
pub const DIM: usize = 384;

pub struct Encoder {
    model: BertModel,
    tokenizer: Tokenizer,
    cls: u32,
    sep: u32,
    device: Device,
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
        "{}: sha256 {got}, expected {want} (a different or damaged file); reinstall with `{} {}`",
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
    /// `config.json` is not a BERT config.
    #[error("{}: {cause}", path.display())]
    Config {
        path: PathBuf,
        #[source]
        cause: serde_json::Error,
    },
    /// `tokenizer.json` is not a tokenizer.
    #[error("{}: {cause}", path.display())]
    TokenizerFile {
        path: PathBuf,
        #[source]
        cause: tokenizers::Error,
    },
    /// The tokenizer refused a setting or a text.
    #[error("tokenizer: {0}")]
    Tokenizer(#[source] tokenizers::Error),
    /// The tokenizer lacks a special token (`[CLS]`, `[SEP]`).
    #[error("tokenizer.json has no {token} token")]
    NoSpecialToken { token: &'static str },
    /// `model.safetensors` could not be read as tensors.
    #[error("{}: {cause}", path.display())]
    Safetensors {
        path: PathBuf,
        #[source]
        cause: candle_core::Error,
    },
    /// The tensors are not the BERT the config describes.
    #[error("loading BERT: {0}")]
    Bert(#[source] candle_core::Error),
    /// A forward pass failed.
    #[error("encoder: {0}")]
    Forward(#[source] candle_core::Error),
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
    let got = hex(&Sha256::digest(&bytes));
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
        let config: Config =
            serde_json::from_slice(&read_pinned(dir, "config.json")?).map_err(|cause| {
                EncoderError::Config {
                    path: dir.join("config.json"),
                    cause,
                }
            })?;
        let mut tokenizer =
            Tokenizer::from_bytes(read_pinned(dir, "tokenizer.json")?).map_err(|cause| {
                EncoderError::TokenizerFile {
                    path: dir.join("tokenizer.json"),
                    cause,
                }
            })?;
        // The file asks for truncation and padding to 128; windows are cut by the views.
        tokenizer
            .with_truncation(None)
            .map_err(EncoderError::Tokenizer)?;
        tokenizer.with_padding(None);
        let special = |token: &'static str| {
            tokenizer
                .token_to_id(token)
                .ok_or(EncoderError::NoSpecialToken { token })
        };
        let (cls, sep) = (special("[CLS]")?, special("[SEP]")?);
        let device = Device::Cpu;
        let vb = VarBuilder::from_buffered_safetensors(
            read_pinned(dir, "model.safetensors")?,
            DType::F32,
            &device,
        )
        .map_err(|cause| EncoderError::Safetensors {
            path: dir.join("model.safetensors"),
            cause,
        })?;
        let model = BertModel::load(vb, &config).map_err(EncoderError::Bert)?;
        Ok(Encoder {
            model,
            tokenizer,
            cls,
            sep,
            device,
        })
    }

    /// The reply's token ids (no special tokens) over the characters `view` reads.
    pub fn tokens(&self, text: &str, from_end: bool) -> Result<Vec<u32>, EncoderError> {
        let text = if from_end {
            view::tail_chars(text)
        } else {
            view::head_chars(text)
        };
        let enc = self
            .tokenizer
            .encode(text, false)
            .map_err(EncoderError::Tokenizer)?;
        Ok(enc.get_ids().to_vec())
    }

    /// The encoder's final hidden states for one window (special tokens included):
    /// `len × DIM`, row-major.
    pub fn hidden(&self, window: &[u32]) -> Result<Vec<f32>, EncoderError> {
        let run = || -> candle_core::Result<Vec<f32>> {
            let ids = Tensor::new(window, &self.device)?.unsqueeze(0)?;
            let types = ids.zeros_like()?;
            let hidden = self.model.forward(&ids, &types, None)?; // 1 × len × DIM
            hidden.squeeze(0)?.flatten_all()?.to_vec1::<f32>()
        };
        run().map_err(EncoderError::Forward)
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
                    if slot.is_none() {
                        *slot = Some(self.tokens(text, v.window.from_end())?);
                    }
                    let ids = v
                        .window
                        .ids(slot.as_deref().expect("filled"), self.cls, self.sep);
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
