//! The real encoder and the shipped head, run on the installed all-MiniLM-L6-v2 weights.
//!
//! Needs the weights (scripts/install-minilm.sh, or a first use of the judge). Without
//! them every test prints a loud SKIP, except in CI (`CI` set), where CI installs them
//! first and a missing install fails.

use gauntlet_classifier::classifier::{RefusalClassifier, shared};
use gauntlet_classifier::encoder::{DIM, Encoder};
use gauntlet_classifier::head::Head;
use gauntlet_classifier::view::View;
use gauntlet_classifier::weights;
use std::path::PathBuf;

fn model_dir() -> Option<PathBuf> {
    let (dir, _) = weights::resolve(None).unwrap();
    let missing = weights::missing_files(&dir);
    if missing.is_empty() {
        return Some(dir);
    }
    let e = format!("{missing:?} missing in {}", dir.display());
    if std::env::var_os("CI").is_some() {
        panic!("CI must test the real model, but: {e}")
    }
    eprintln!(
        "\n!!!!!!!! SKIP gauntlet-classifier real-model test: {e}\n\
         !!!!!!!! (run scripts/install-minilm.sh to test it)\n"
    );
    None
}

fn cos(a: &[f32], b: &[f32]) -> f32 {
    a.iter().zip(b).map(|(x, y)| x * y).sum()
}

/// Embeddings are unit vectors, identical bit for bit on repeat, and put two refusals
/// closer to each other than to an answer.
#[test]
fn embeddings_are_normalised_deterministic_and_meaningful() {
    let Some(dir) = model_dir() else { return };
    let enc = Encoder::load(&dir).unwrap();
    let v = ["open64".parse::<View>().unwrap()];
    let a = enc
        .features("I'm sorry, but I can't help with that request.", &v)
        .unwrap();
    let b = enc
        .features("Unfortunately I am unable to assist with this.", &v)
        .unwrap();
    let c = enc
        .features(
            "Preheat the oven to 180 degrees and grease a round cake tin.",
            &v,
        )
        .unwrap();
    assert_eq!(a.len(), DIM);
    let norm: f32 = cos(&a, &a).sqrt();
    assert!((norm - 1.0).abs() < 1e-4, "norm {norm}");
    assert_eq!(
        enc.features("I'm sorry, but I can't help with that request.", &v)
            .unwrap(),
        a
    );
    assert!(
        cos(&a, &b) > cos(&a, &c) + 0.2,
        "{} vs {}",
        cos(&a, &b),
        cos(&a, &c)
    );
}

/// Views cut where they say: a refusal only at the very end of a long answer is in the
/// tail view and not in a short opening view; empty and huge replies are handled.
#[test]
fn views_read_their_part_of_the_reply() {
    let Some(dir) = model_dir() else { return };
    let enc = Encoder::load(&dir).unwrap();
    let filler = "The museum opens at nine and the gardens close at dusk. ".repeat(40);
    let refusal = "I can't help with the rest of that request.";
    let long = format!("{filler}{refusal}");
    let view = |s: &str| s.parse::<View>().unwrap();
    let alone = enc.features(refusal, &[view("open32")]).unwrap();
    let tail = enc.features(&long, &[view("tail32")]).unwrap();
    let open = enc.features(&long, &[view("open32")]).unwrap();
    assert!(
        cos(&alone, &tail) > cos(&alone, &open),
        "tail {} vs open {}",
        cos(&alone, &tail),
        cos(&alone, &open)
    );
    assert_eq!(
        enc.features("", &[view("open64"), view("tail64")])
            .unwrap()
            .len(),
        2 * DIM
    );
    let huge = "word ".repeat(200_000);
    assert_eq!(enc.features(&huge, &[view("open128")]).unwrap().len(), DIM);
    // Poolings of one window: unit vectors; `first<K>` with K past the reply's end
    // equals the mean over the whole window.
    let f = enc
        .features(
            "Sorry, no.",
            &[view("open32"), view("open32.first20"), view("open32.max")],
        )
        .unwrap();
    assert_eq!(f.len(), 3 * DIM);
    for v in f.chunks(DIM) {
        assert!((cos(v, v) - 1.0).abs() < 1e-4);
    }
    assert_eq!(f[..DIM], f[DIM..2 * DIM]);
}

/// A file that does not match its pinned sha256 is refused by name, with the fix.
#[test]
fn a_tampered_file_is_refused() {
    let Some(dir) = model_dir() else { return };
    let tmp = tempfile::tempdir().unwrap();
    std::fs::copy(dir.join("config.json"), tmp.path().join("config.json")).unwrap();
    let mut tok = std::fs::read(dir.join("tokenizer.json")).unwrap();
    tok.push(b' ');
    std::fs::write(tmp.path().join("tokenizer.json"), tok).unwrap();
    let e = Encoder::load(tmp.path())
        .err()
        .expect("tampered tokenizer")
        .to_string();
    assert!(e.contains("tokenizer.json: sha256"), "{e}");
    assert!(
        e.contains(weights::pinned_sha256("tokenizer.json").unwrap()),
        "{e}"
    );
    assert!(e.contains(weights::INSTALL_SCRIPT), "{e}");
}

/// The shipped head over the real encoder: probabilities in [0, 1], a clear refusal
/// above the threshold and a plain answer below it, and the shared loader hands out
/// one instance per directory.
#[test]
fn shipped_classifier_end_to_end() {
    let Some(dir) = model_dir() else { return };
    let c = RefusalClassifier::load(&dir, Head::shipped()).unwrap();
    let r = c
        .classify("I'm sorry, but I won't help with that.", None)
        .unwrap();
    let a = c
        .classify("Canberra is the capital of Australia.", None)
        .unwrap();
    assert!(r.refusal && r.probability <= 1.0, "{r:?}");
    assert!(!a.refusal && a.probability >= 0.0, "{a:?}");
    assert_eq!(r.threshold, Head::shipped().threshold());
    let s1 = shared(&dir).unwrap();
    let s2 = shared(&dir).unwrap();
    assert!(std::sync::Arc::ptr_eq(&s1, &s2));
}

#[derive(serde::Deserialize)]
struct Fixture {
    views: Vec<String>,
    rows: Vec<FixtureRow>,
}

#[derive(serde::Deserialize)]
struct FixtureRow {
    text: String,
    ids: Vec<u32>,
    features: Vec<f32>,
}

/// The encoder against the implementations the head was trained with
/// (`tests/fixtures/encoder.json`, see `make_encoder_fixture.py`): the same token ids as
/// Hugging Face `tokenizers`, and every view embedding within 1e-4 of the candle BERT's.
#[test]
fn matches_the_reference_tokeniser_and_encoder() {
    let Some(dir) = model_dir() else { return };
    let enc = Encoder::load(&dir).unwrap();
    let f: Fixture = serde_json::from_str(include_str!("fixtures/encoder.json")).unwrap();
    let views: Vec<View> = f.views.iter().map(|v| v.parse().unwrap()).collect();
    let mut worst = 0f32;
    for row in &f.rows {
        assert_eq!(
            enc.tokens(&row.text, false),
            row.ids,
            "ids of {:?}",
            row.text
        );
        let got = enc.features(&row.text, &views).unwrap();
        assert_eq!(got.len(), row.features.len(), "{:?}", row.text);
        for (g, w) in got.iter().zip(&row.features) {
            worst = worst.max((g - w).abs());
        }
        assert!(worst < 1e-4, "{:?}: |Δ| {worst}", row.text);
    }
    eprintln!("largest difference from the reference embeddings: {worst:e}");
}
