//! The bundled faux dialogues of the few-shot and many-shot transforms (and the
//! `many_shot` attack), and how shots are picked and laid out.

use gauntlet_core::rng::ChaCha8Rng;
use serde::Deserialize;
use std::sync::LazyLock;

/// One bundled faux exchange: a benign question that sounds like a refusal probe, and a
/// short helpful answer.
#[derive(Debug, Clone, Deserialize)]
pub struct Shot {
    pub user: String,
    pub assistant: String,
}

#[derive(Deserialize)]
struct ShotFile {
    shots: Vec<Shot>,
}

/// The bundled faux dialogues (`data/faux_dialogues.json`): gauntlet's own synthetic,
/// benign text, used by `few_shot`, `many_shot` and the `many_shot` attack.
pub static SHOTS: LazyLock<Vec<Shot>> = LazyLock::new(|| {
    let f: ShotFile = serde_json::from_str(include_str!("data/faux_dialogues.json"))
        .expect("the bundled faux dialogues parse (tested)");
    f.shots
});

/// `n` shots in a seeded order: the pool shuffled, repeated (each pass reshuffled) when
/// `n` exceeds it. The first `k` of `n` shots are the same for every `n ≥ k`, so shot
/// counts nest.
pub fn pick_shots(n: usize, rng: &mut ChaCha8Rng) -> Vec<&'static Shot> {
    use rand::seq::SliceRandom;
    let pool = &*SHOTS;
    let mut out = Vec::with_capacity(n);
    while out.len() < n {
        let mut idx: Vec<usize> = (0..pool.len()).collect();
        idx.shuffle(rng);
        out.extend(idx.into_iter().take(n - out.len()).map(|i| &pool[i]));
    }
    out
}

/// Shots as one faux dialogue: `User: …` / `Assistant: …` lines, then the request.
pub fn dialogue(shots: &[&Shot], request: &str) -> String {
    let mut s = String::new();
    for shot in shots {
        s.push_str("User: ");
        s.push_str(&shot.user);
        s.push_str("\nAssistant: ");
        s.push_str(&shot.assistant);
        s.push_str("\n\n");
    }
    s.push_str("User: ");
    s.push_str(request);
    s.push_str("\nAssistant:");
    s
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn bundled_shots_are_benign_and_avoid_the_reference_topics() {
        assert!(SHOTS.len() >= 32, "{} shots", SHOTS.len());
        let topics = gauntlet_models::targets::reference::DEFAULT_REFUSAL_TOPICS;
        for s in SHOTS.iter() {
            for text in [&s.user, &s.assistant] {
                let l = text.to_lowercase();
                for t in topics {
                    assert!(
                        !l.contains(t),
                        "shot {text:?} contains the refusal topic {t:?}"
                    );
                }
                assert!(crate::refusal::first_hit(text, &[]).is_none(), "{text:?}");
                assert!(!text.contains('\n'), "{text:?}");
                assert!(!text.starts_with("User:") && !text.starts_with("Assistant:"));
            }
        }
    }
}
