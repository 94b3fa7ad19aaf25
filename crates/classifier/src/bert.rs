//! A BERT encoder's forward pass on the CPU: what all-MiniLM-L6-v2 computes for one
//! window of token ids.
//!
//! Only the pieces this one model needs — absolute position embeddings, post-layer-norm
//! encoder layers, multi-head self-attention without a mask (one sequence, no padding),
//! the exact (erf) GELU — in plain f32 arrays, with the matrix products done by
//! `matrixmultiply`'s sgemm. Weights come from the model's safetensors file under the
//! names Hugging Face's `BertModel` saves. Layer norms and softmax sums are accumulated
//! in f64, in a fixed order, so a window's states are the same on every run.

use safetensors::{Dtype, SafeTensors};
use serde::Deserialize;

/// Why a model could not be built from its files.
#[derive(Debug, thiserror::Error)]
pub enum BertError {
    #[error("config.json: {0}")]
    Config(#[source] serde_json::Error),
    /// A config value this forward pass does not implement.
    #[error("config.json: {what} is {found}, this encoder implements {want}")]
    Unsupported {
        what: &'static str,
        found: String,
        want: &'static str,
    },
    #[error("model.safetensors: {0}")]
    Safetensors(#[source] safetensors::SafeTensorError),
    #[error("model.safetensors: no tensor `{name}`")]
    Missing { name: String },
    /// A tensor whose type or shape is not what the config implies.
    #[error("model.safetensors: `{name}` is {dtype:?} {shape:?}, expected F32 {want:?}")]
    Shape {
        name: String,
        dtype: Dtype,
        shape: Vec<usize>,
        want: Vec<usize>,
    },
}

/// A window this encoder cannot run.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum InputError {
    #[error("a window of {len} tokens: the model takes 1 to {max}")]
    Length { len: usize, max: usize },
    #[error("token id {id} is outside the vocabulary of {vocab}")]
    Id { id: u32, vocab: usize },
}

#[derive(Deserialize)]
struct Config {
    vocab_size: usize,
    hidden_size: usize,
    num_hidden_layers: usize,
    num_attention_heads: usize,
    intermediate_size: usize,
    hidden_act: String,
    max_position_embeddings: usize,
    type_vocab_size: usize,
    layer_norm_eps: f64,
    #[serde(default = "absolute")]
    position_embedding_type: String,
}

fn absolute() -> String {
    "absolute".to_string()
}

/// `y = x Wᵀ + b` with `W` stored `out × inp`, row-major (PyTorch's layout).
struct Linear {
    w: Vec<f32>,
    b: Vec<f32>,
    out: usize,
    inp: usize,
}

struct Norm {
    gamma: Vec<f32>,
    beta: Vec<f32>,
}

struct Layer {
    query: Linear,
    key: Linear,
    value: Linear,
    attn_out: Linear,
    attn_norm: Norm,
    up: Linear,
    down: Linear,
    out_norm: Norm,
}

/// The encoder: embeddings and layers, ready to run.
pub struct Bert {
    word: Vec<f32>,
    position: Vec<f32>,
    /// Row 0 of the token-type table: every token is of type 0.
    token_type: Vec<f32>,
    embed_norm: Norm,
    layers: Vec<Layer>,
    hidden: usize,
    heads: usize,
    vocab: usize,
    max_len: usize,
    eps: f64,
}

struct Tensors<'a> {
    st: SafeTensors<'a>,
}

impl Tensors<'_> {
    /// The f32 tensor `name` of exactly `shape`, copied out of the file.
    fn get(&self, name: &str, shape: &[usize]) -> Result<Vec<f32>, BertError> {
        let t = self.st.tensor(name).map_err(|_| BertError::Missing {
            name: name.to_string(),
        })?;
        if t.dtype() != Dtype::F32 || t.shape() != shape {
            return Err(BertError::Shape {
                name: name.to_string(),
                dtype: t.dtype(),
                shape: t.shape().to_vec(),
                want: shape.to_vec(),
            });
        }
        Ok(t.data()
            .chunks_exact(4)
            .map(|b| f32::from_le_bytes([b[0], b[1], b[2], b[3]]))
            .collect())
    }

    fn linear(&self, prefix: &str, out: usize, inp: usize) -> Result<Linear, BertError> {
        Ok(Linear {
            w: self.get(&format!("{prefix}.weight"), &[out, inp])?,
            b: self.get(&format!("{prefix}.bias"), &[out])?,
            out,
            inp,
        })
    }

    fn norm(&self, prefix: &str, n: usize) -> Result<Norm, BertError> {
        Ok(Norm {
            gamma: self.get(&format!("{prefix}.weight"), &[n])?,
            beta: self.get(&format!("{prefix}.bias"), &[n])?,
        })
    }
}

impl Bert {
    /// Builds the encoder from `config.json` and `model.safetensors` (already verified
    /// against their pins by the caller).
    pub fn load(config: &[u8], safetensors: &[u8]) -> Result<Bert, BertError> {
        let c: Config = serde_json::from_slice(config).map_err(BertError::Config)?;
        let unsupported = |what, found: String, want| BertError::Unsupported { what, found, want };
        if c.hidden_act != "gelu" {
            return Err(unsupported("hidden_act", c.hidden_act, "gelu"));
        }
        if c.position_embedding_type != "absolute" {
            return Err(unsupported(
                "position_embedding_type",
                c.position_embedding_type,
                "absolute",
            ));
        }
        let (h, heads) = (c.hidden_size, c.num_attention_heads);
        if h == 0 || heads == 0 || h % heads != 0 || c.type_vocab_size == 0 {
            return Err(unsupported(
                "hidden_size / num_attention_heads",
                format!("{h} / {heads}"),
                "a positive hidden size divisible by the head count",
            ));
        }
        let st = Tensors {
            st: SafeTensors::deserialize(safetensors).map_err(BertError::Safetensors)?,
        };
        // Saved from `BertModel` the names have no prefix; from a task model, `bert.`.
        let p = if st.st.tensor("embeddings.word_embeddings.weight").is_ok() {
            ""
        } else {
            "bert."
        };
        let word = st.get(
            &format!("{p}embeddings.word_embeddings.weight"),
            &[c.vocab_size, h],
        )?;
        let position = st.get(
            &format!("{p}embeddings.position_embeddings.weight"),
            &[c.max_position_embeddings, h],
        )?;
        let mut token_type = st.get(
            &format!("{p}embeddings.token_type_embeddings.weight"),
            &[c.type_vocab_size, h],
        )?;
        token_type.truncate(h);
        let embed_norm = st.norm(&format!("{p}embeddings.LayerNorm"), h)?;
        let i = c.intermediate_size;
        let layers = (0..c.num_hidden_layers)
            .map(|l| {
                let q = format!("{p}encoder.layer.{l}");
                Ok(Layer {
                    query: st.linear(&format!("{q}.attention.self.query"), h, h)?,
                    key: st.linear(&format!("{q}.attention.self.key"), h, h)?,
                    value: st.linear(&format!("{q}.attention.self.value"), h, h)?,
                    attn_out: st.linear(&format!("{q}.attention.output.dense"), h, h)?,
                    attn_norm: st.norm(&format!("{q}.attention.output.LayerNorm"), h)?,
                    up: st.linear(&format!("{q}.intermediate.dense"), i, h)?,
                    down: st.linear(&format!("{q}.output.dense"), h, i)?,
                    out_norm: st.norm(&format!("{q}.output.LayerNorm"), h)?,
                })
            })
            .collect::<Result<Vec<_>, BertError>>()?;
        Ok(Bert {
            word,
            position,
            token_type,
            embed_norm,
            layers,
            hidden: h,
            heads,
            vocab: c.vocab_size,
            max_len: c.max_position_embeddings,
            eps: c.layer_norm_eps,
        })
    }

    /// The width of a token's state.
    pub fn hidden_size(&self) -> usize {
        self.hidden
    }

    /// The final hidden states of `ids` (one sequence, special tokens included):
    /// `ids.len() × hidden_size`, row-major.
    pub fn forward(&self, ids: &[u32]) -> Result<Vec<f32>, InputError> {
        let (n, h) = (ids.len(), self.hidden);
        if n == 0 || n > self.max_len {
            return Err(InputError::Length {
                len: n,
                max: self.max_len,
            });
        }
        if let Some(&id) = ids.iter().find(|&&id| id as usize >= self.vocab) {
            return Err(InputError::Id {
                id,
                vocab: self.vocab,
            });
        }
        let mut x = vec![0f32; n * h];
        for (t, (row, &id)) in x.chunks_exact_mut(h).zip(ids).enumerate() {
            let word = &self.word[id as usize * h..][..h];
            let pos = &self.position[t * h..][..h];
            for (j, v) in row.iter_mut().enumerate() {
                *v = (word[j] + self.token_type[j]) + pos[j];
            }
        }
        self.layer_norm(&mut x, &self.embed_norm);
        let mut scratch = Scratch::new(n, h, self.layers.first().map_or(0, |l| l.up.out));
        for layer in &self.layers {
            self.layer(layer, &mut x, &mut scratch);
        }
        Ok(x)
    }

    fn layer(&self, l: &Layer, x: &mut [f32], s: &mut Scratch) {
        let (n, h) = (x.len() / self.hidden, self.hidden);
        l.query.apply(x, n, &mut s.q);
        l.key.apply(x, n, &mut s.k);
        l.value.apply(x, n, &mut s.v);
        let d = h / self.heads;
        let scale = (d as f32).sqrt();
        for head in 0..self.heads {
            let off = head * d;
            // scores = Q_h K_hᵀ: Q_h is n × d at stride h, K_hᵀ is d × n.
            gemm(
                n,
                d,
                n,
                Mat::new(&s.q[off..], h, 1),
                Mat::new(&s.k[off..], 1, h),
                &mut s.scores,
                n,
            );
            for row in s.scores.chunks_exact_mut(n) {
                row.iter_mut().for_each(|v| *v /= scale);
                softmax(row);
            }
            // context_h = P V_h, written into the head's columns of `ctx`.
            gemm(
                n,
                n,
                d,
                Mat::new(&s.scores, n, 1),
                Mat::new(&s.v[off..], h, 1),
                &mut s.ctx[off..],
                h,
            );
        }
        l.attn_out.apply(&s.ctx, n, &mut s.q);
        s.q.iter_mut().zip(x.iter()).for_each(|(a, b)| *a += *b);
        self.layer_norm(&mut s.q, &l.attn_norm);
        l.up.apply(&s.q, n, &mut s.inter);
        s.inter.iter_mut().for_each(|v| *v = gelu(*v));
        l.down.apply(&s.inter, n, x);
        x.iter_mut().zip(s.q.iter()).for_each(|(a, b)| *a += *b);
        self.layer_norm(x, &l.out_norm);
    }

    fn layer_norm(&self, x: &mut [f32], norm: &Norm) {
        let h = self.hidden as f64;
        for row in x.chunks_exact_mut(self.hidden) {
            let mean = row.iter().map(|&v| f64::from(v)).sum::<f64>() / h;
            let var = row
                .iter()
                .map(|&v| (f64::from(v) - mean).powi(2))
                .sum::<f64>()
                / h;
            let inv = 1.0 / (var + self.eps).sqrt();
            for ((v, g), b) in row.iter_mut().zip(&norm.gamma).zip(&norm.beta) {
                *v = ((f64::from(*v) - mean) * inv) as f32 * g + b;
            }
        }
    }
}

/// Working arrays of one forward pass, sized for its window.
struct Scratch {
    q: Vec<f32>,
    k: Vec<f32>,
    v: Vec<f32>,
    ctx: Vec<f32>,
    scores: Vec<f32>,
    inter: Vec<f32>,
}

impl Scratch {
    fn new(n: usize, h: usize, inter: usize) -> Scratch {
        Scratch {
            q: vec![0.0; n * h],
            k: vec![0.0; n * h],
            v: vec![0.0; n * h],
            ctx: vec![0.0; n * h],
            scores: vec![0.0; n * n],
            inter: vec![0.0; n * inter],
        }
    }
}

impl Linear {
    /// `out = x Wᵀ + b` for `n` rows of `x`.
    fn apply(&self, x: &[f32], n: usize, out: &mut [f32]) {
        gemm(
            n,
            self.inp,
            self.out,
            Mat::new(x, self.inp, 1),
            Mat::new(&self.w, 1, self.inp),
            out,
            self.out,
        );
        for row in out.chunks_exact_mut(self.out) {
            row.iter_mut().zip(&self.b).for_each(|(v, b)| *v += b);
        }
    }
}

/// A matrix view: element (i, j) is `data[i * row + j * col]`.
#[derive(Clone, Copy)]
struct Mat<'a> {
    data: &'a [f32],
    row: usize,
    col: usize,
}

impl<'a> Mat<'a> {
    fn new(data: &'a [f32], row: usize, col: usize) -> Self {
        Mat { data, row, col }
    }
    /// Whether an `rows × cols` matrix at these strides lies inside the slice.
    fn fits(&self, rows: usize, cols: usize) -> bool {
        rows == 0 || cols == 0 || (rows - 1) * self.row + (cols - 1) * self.col < self.data.len()
    }
}

/// `c = a × b` for an `m × k` matrix `a` and a `k × n` matrix `b`; `c`'s rows are
/// `c_row` apart (columns adjacent), and only its `m × n` elements are written.
fn gemm(m: usize, k: usize, n: usize, a: Mat<'_>, b: Mat<'_>, c: &mut [f32], c_row: usize) {
    assert!(
        a.fits(m, k) && b.fits(k, n) && Mat::new(c, c_row, 1).fits(m, n) && n <= c_row,
        "gemm operands out of bounds"
    );
    // SAFETY: the assertion above checks that every element sgemm reads from `a` and `b`
    // and writes to `c` lies inside its slice; `c` is borrowed mutably, so it does not
    // alias `a` or `b`. Strides fit in isize (they are slice offsets).
    unsafe {
        matrixmultiply::sgemm(
            m,
            k,
            n,
            1.0,
            a.data.as_ptr(),
            a.row as isize,
            a.col as isize,
            b.data.as_ptr(),
            b.row as isize,
            b.col as isize,
            0.0,
            c.as_mut_ptr(),
            c_row as isize,
            1,
        );
    }
}

fn softmax(row: &mut [f32]) {
    let max = row.iter().copied().fold(f32::NEG_INFINITY, f32::max);
    let mut sum = 0f64;
    for v in row.iter_mut() {
        *v = (*v - max).exp();
        sum += f64::from(*v);
    }
    row.iter_mut()
        .for_each(|v| *v = (f64::from(*v) / sum) as f32);
}

/// GELU with the exact Gaussian CDF: x · Φ(x) = x · (1 + erf(x / √2)) / 2.
fn gelu(x: f32) -> f32 {
    let x = f64::from(x);
    (0.5 * x * (1.0 + libm::erf(x * std::f64::consts::FRAC_1_SQRT_2))) as f32
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A hand-built one-layer, two-head model (width 4) saved as safetensors.
    fn tiny(layers: usize) -> (Vec<u8>, Vec<u8>) {
        let (h, i, vocab, max) = (4usize, 8usize, 6usize, 5usize);
        let mut tensors: Vec<(String, Vec<usize>, Vec<f32>)> = Vec::new();
        let mut seed = 1u32;
        let mut fill = |n: usize| -> Vec<f32> {
            (0..n)
                .map(|_| {
                    seed = seed.wrapping_mul(1_103_515_245).wrapping_add(12345);
                    ((seed >> 8) % 2000) as f32 / 1000.0 - 1.0
                })
                .collect()
        };
        let mut add = |name: &str, shape: Vec<usize>, data: Vec<f32>| {
            tensors.push((name.to_string(), shape, data));
        };
        add(
            "embeddings.word_embeddings.weight",
            vec![vocab, h],
            fill(vocab * h),
        );
        add(
            "embeddings.position_embeddings.weight",
            vec![max, h],
            fill(max * h),
        );
        add(
            "embeddings.token_type_embeddings.weight",
            vec![2, h],
            fill(2 * h),
        );
        add("embeddings.LayerNorm.weight", vec![h], vec![1.0; h]);
        add("embeddings.LayerNorm.bias", vec![h], vec![0.0; h]);
        for l in 0..layers {
            let p = format!("encoder.layer.{l}");
            for (name, o, inp) in [
                ("attention.self.query", h, h),
                ("attention.self.key", h, h),
                ("attention.self.value", h, h),
                ("attention.output.dense", h, h),
                ("intermediate.dense", i, h),
                ("output.dense", h, i),
            ] {
                add(&format!("{p}.{name}.weight"), vec![o, inp], fill(o * inp));
                add(&format!("{p}.{name}.bias"), vec![o], fill(o));
            }
            for name in ["attention.output.LayerNorm", "output.LayerNorm"] {
                add(&format!("{p}.{name}.weight"), vec![h], fill(h));
                add(&format!("{p}.{name}.bias"), vec![h], fill(h));
            }
        }
        let bytes: Vec<(String, Vec<usize>, Vec<u8>)> = tensors
            .into_iter()
            .map(|(n, s, d)| (n, s, d.iter().flat_map(|v| v.to_le_bytes()).collect()))
            .collect();
        let views: Vec<(String, safetensors::tensor::TensorView<'_>)> = bytes
            .iter()
            .map(|(n, s, d)| {
                (
                    n.clone(),
                    safetensors::tensor::TensorView::new(Dtype::F32, s.clone(), d).unwrap(),
                )
            })
            .collect();
        let st = safetensors::serialize(views, None).unwrap();
        let config = serde_json::json!({
            "vocab_size": vocab, "hidden_size": h, "num_hidden_layers": layers,
            "num_attention_heads": 2, "intermediate_size": i, "hidden_act": "gelu",
            "max_position_embeddings": max, "type_vocab_size": 2, "layer_norm_eps": 1e-12
        });
        (config.to_string().into_bytes(), st)
    }

    /// The embedding step by hand: word + type + position, then a layer norm with
    /// gamma 1 and beta 0 gives rows of mean 0 and variance 1.
    #[test]
    fn embeddings_by_hand() {
        let (config, st) = tiny(0);
        let bert = Bert::load(&config, &st).unwrap();
        let out = bert.forward(&[3, 1]).unwrap();
        assert_eq!(out.len(), 8);
        for row in out.chunks(4) {
            let mean: f32 = row.iter().sum::<f32>() / 4.0;
            let var: f32 = row.iter().map(|v| (v - mean).powi(2)).sum::<f32>() / 4.0;
            assert!(mean.abs() < 1e-6 && (var - 1.0).abs() < 1e-4, "{row:?}");
        }
        // Position matters: the same token at two places gives two different rows.
        let two = bert.forward(&[2, 2]).unwrap();
        assert_ne!(two[..4], two[4..]);
    }

    /// Attention and feed-forward against a plain triple-loop reference.
    #[test]
    fn one_layer_matches_a_naive_reference() {
        let (config, st) = tiny(1);
        let bert = Bert::load(&config, &st).unwrap();
        let ids = [1u32, 4, 0];
        let got = bert.forward(&ids).unwrap();
        let want = naive(&bert, &ids);
        for (g, w) in got.iter().zip(&want) {
            assert!((f64::from(*g) - w).abs() < 1e-5, "{got:?}\n{want:?}");
        }
        assert_eq!(bert.forward(&ids).unwrap(), got, "repeatable");
    }

    fn naive(b: &Bert, ids: &[u32]) -> Vec<f64> {
        let (n, h) = (ids.len(), b.hidden);
        let ln = |x: &mut Vec<Vec<f64>>, norm: &Norm| {
            for r in x.iter_mut() {
                let m = r.iter().sum::<f64>() / h as f64;
                let v = r.iter().map(|a| (a - m).powi(2)).sum::<f64>() / h as f64;
                for (j, a) in r.iter_mut().enumerate() {
                    *a = (*a - m) / (v + 1e-12).sqrt() * f64::from(norm.gamma[j])
                        + f64::from(norm.beta[j]);
                }
            }
        };
        let lin = |x: &Vec<Vec<f64>>, l: &Linear| -> Vec<Vec<f64>> {
            x.iter()
                .map(|r| {
                    (0..l.out)
                        .map(|o| {
                            f64::from(l.b[o])
                                + (0..l.inp)
                                    .map(|k| r[k] * f64::from(l.w[o * l.inp + k]))
                                    .sum::<f64>()
                        })
                        .collect()
                })
                .collect()
        };
        let mut x: Vec<Vec<f64>> = (0..n)
            .map(|t| {
                (0..h)
                    .map(|j| {
                        f64::from(b.word[ids[t] as usize * h + j])
                            + f64::from(b.token_type[j])
                            + f64::from(b.position[t * h + j])
                    })
                    .collect()
            })
            .collect();
        ln(&mut x, &b.embed_norm);
        for l in &b.layers {
            let (q, k, v) = (lin(&x, &l.query), lin(&x, &l.key), lin(&x, &l.value));
            let d = h / b.heads;
            let mut ctx = vec![vec![0f64; h]; n];
            for head in 0..b.heads {
                for i in 0..n {
                    let s: Vec<f64> = (0..n)
                        .map(|j| {
                            (0..d)
                                .map(|e| q[i][head * d + e] * k[j][head * d + e])
                                .sum::<f64>()
                                / (d as f64).sqrt()
                        })
                        .collect();
                    let m = s.iter().copied().fold(f64::MIN, f64::max);
                    let z: f64 = s.iter().map(|a| (a - m).exp()).sum();
                    for j in 0..n {
                        let p = (s[j] - m).exp() / z;
                        for e in 0..d {
                            ctx[i][head * d + e] += p * v[j][head * d + e];
                        }
                    }
                }
            }
            let mut a = lin(&ctx, &l.attn_out);
            a.iter_mut()
                .zip(&x)
                .for_each(|(r, s)| r.iter_mut().zip(s).for_each(|(u, w)| *u += w));
            ln(&mut a, &l.attn_norm);
            let mut up = lin(&a, &l.up);
            up.iter_mut().flatten().for_each(|u| {
                *u = 0.5 * *u * (1.0 + libm::erf(*u / std::f64::consts::SQRT_2));
            });
            let mut out = lin(&up, &l.down);
            out.iter_mut()
                .zip(&a)
                .for_each(|(r, s)| r.iter_mut().zip(s).for_each(|(u, w)| *u += w));
            ln(&mut out, &l.out_norm);
            x = out;
        }
        x.into_iter().flatten().collect()
    }

    #[test]
    fn bad_inputs_and_files_are_errors() {
        let (config, st) = tiny(1);
        let bert = Bert::load(&config, &st).unwrap();
        assert_eq!(
            bert.forward(&[]).unwrap_err(),
            InputError::Length { len: 0, max: 5 }
        );
        assert!(matches!(
            bert.forward(&[0; 6]).unwrap_err(),
            InputError::Length { len: 6, .. }
        ));
        assert_eq!(
            bert.forward(&[9]).unwrap_err(),
            InputError::Id { id: 9, vocab: 6 }
        );
        let e = Bert::load(&config, &st[..st.len() - 4]).err().unwrap();
        assert!(matches!(e, BertError::Safetensors(_)), "{e}");
        let e = Bert::load(&tiny(2).0, &st).err().unwrap().to_string();
        assert!(e.contains("encoder.layer.1"), "{e}");
        let gelu_tanh = String::from_utf8(config.clone())
            .unwrap()
            .replace("\"gelu\"", "\"gelu_new\"");
        let e = Bert::load(gelu_tanh.as_bytes(), &st)
            .err()
            .unwrap()
            .to_string();
        assert!(e.contains("hidden_act"), "{e}");
    }

    #[test]
    fn gelu_and_softmax_by_hand() {
        assert_eq!(gelu(0.0), 0.0);
        assert!((gelu(1.0) - 0.841_344_7).abs() < 1e-6);
        assert!((gelu(-1.0) + 0.158_655_3).abs() < 1e-6);
        let mut r = [0.0f32, (2f32).ln()];
        softmax(&mut r);
        assert!((r[0] - 1.0 / 3.0).abs() < 1e-7 && (r[1] - 2.0 / 3.0).abs() < 1e-7);
    }
}
