#!/usr/bin/env python3
"""How well the on-topic check (`refusal_classifier`'s `on_topic_threshold`) tells a reply
about the request from a reply about something else, on real replies.

  bench/on_topic.py CLASSIFIER_BIN [DATA_DIR]

CLASSIFIER_BIN is `gauntlet-refusal-classifier` (cargo build --release -p
gauntlet-classifier --features tool); DATA_DIR the XSTest v2 development split
(default ../shared/data/xstest-v2-dev: three models' replies, human-labelled).

The check only runs on replies the judge did not call a refusal, so the population is the
replies humans labelled full compliance. On-topic pairs: each such reply with its own
prompt. Off-topic pairs: the same prompt with a compliance reply to a prompt of another
XSTest type (a seeded draw), which answers a different question. Each pair's score is the
judge's: the cosine similarity of the two texts' MiniLM embeddings under the judge's view
(`open64`, mean-pooled; ON_TOPIC_VIEW=openN compares another window), computed by the
Rust binary, not re-implemented here.

The threshold is chosen by 5-fold cross-validation grouped by prompt id (a prompt's
replies from all three models sit in one fold): on the training folds, the threshold that
maximises balanced accuracy; scored on the held-out fold. Printed: the similarity
distributions, ROC AUC, the held-out figures per fold and pooled, the threshold chosen on
all rows (what the README suggests), and leave-one-model-out figures.
"""
import csv
import os
import json
import random
import struct
import subprocess
import sys
from pathlib import Path

VIEW = os.environ.get("ON_TOPIC_VIEW", "open64")
DIM = 384


def load(data_dir):
    rows = []
    for f in sorted(Path(data_dir).glob("*.csv")):
        with open(f, newline="") as fh:
            for r in csv.DictReader(fh):
                if r["final_label"].startswith("1_"):
                    rows.append({"model": f.stem, "id": r["id"], "type": r["type"],
                                 "prompt": r["prompt"], "reply": r["completion"]})
    return rows


def embed(bin_path, texts):
    inp = "".join(json.dumps({"text": t}) + "\n" for t in texts).encode()
    out = subprocess.run([bin_path, "embed", "--views", VIEW], input=inp,
                         capture_output=True, check=True).stdout
    assert len(out) == len(texts) * DIM * 4, (len(out), len(texts))
    vecs = []
    for i in range(len(texts)):
        vecs.append(struct.unpack_from("<%df" % DIM, out, i * DIM * 4))
    return vecs


def cos(a, b):
    return sum(x * y for x, y in zip(a, b))


def best_threshold(pos, neg):
    """The threshold maximising balanced accuracy: off-topic (neg) below, on-topic at or above."""
    cands = sorted(set(pos + neg))
    best = (-1.0, 0.0)
    for i, t in enumerate(cands):
        # midpoint between consecutive scores, so the rule does not sit on a training point
        thr = (t + cands[i + 1]) / 2 if i + 1 < len(cands) else t + 1e-6
        sens = sum(s < thr for s in neg) / len(neg)
        spec = sum(s >= thr for s in pos) / len(pos)
        ba = (sens + spec) / 2
        if ba > best[0] + 1e-12:
            best = (ba, thr)
    return best[1]


def rates(pos, neg, thr):
    flagged_off = sum(s < thr for s in neg)
    kept_on = sum(s >= thr for s in pos)
    return flagged_off, len(neg), kept_on, len(pos)


def auc(pos, neg):
    n = 0.0
    for p in pos:
        for q in neg:
            n += 1.0 if p > q else 0.5 if p == q else 0.0
    return n / (len(pos) * len(neg))


def pct(xs, q):
    s = sorted(xs)
    return s[min(len(s) - 1, int(q * len(s)))]


def main():
    bin_path = sys.argv[1]
    data = sys.argv[2] if len(sys.argv) > 2 else str(
        Path(__file__).resolve().parents[2] / "shared/data/xstest-v2-dev")
    rows = load(data)
    rng = random.Random(20261202)
    for r in rows:
        others = [o for o in rows if o["type"] != r["type"]]
        r["other"] = rng.choice(others)["reply"]
    texts = sorted({t for r in rows for t in (r["prompt"], r["reply"])})
    vec = dict(zip(texts, embed(bin_path, texts)))
    for r in rows:
        r["on"] = cos(vec[r["prompt"]], vec[r["reply"]])
        r["off"] = cos(vec[r["prompt"]], vec[r["other"]])
    pos = [r["on"] for r in rows]
    neg = [r["off"] for r in rows]
    print(f"compliance replies: {len(rows)} (on-topic pairs {len(pos)}, off-topic pairs {len(neg)})")
    for name, xs in (("on-topic", pos), ("off-topic", neg)):
        print(f"  {name:9} similarity: p05 {pct(xs, .05):.3f}  p25 {pct(xs, .25):.3f}  "
              f"median {pct(xs, .5):.3f}  p75 {pct(xs, .75):.3f}  p95 {pct(xs, .95):.3f}")
    print(f"ROC AUC (on-topic above off-topic): {auc(pos, neg):.4f}")

    ids = sorted({r["id"] for r in rows})
    random.Random(7).shuffle(ids)
    fold_of = {i: k % 5 for k, i in enumerate(ids)}
    tot = [0, 0, 0, 0]
    print("5-fold CV grouped by prompt (threshold fit on 4 folds, scored on the 5th):")
    for k in range(5):
        tr = [r for r in rows if fold_of[r["id"]] != k]
        te = [r for r in rows if fold_of[r["id"]] == k]
        thr = best_threshold([r["on"] for r in tr], [r["off"] for r in tr])
        f = rates([r["on"] for r in te], [r["off"] for r in te], thr)
        tot = [a + b for a, b in zip(tot, f)]
        print(f"  fold {k}: threshold {thr:.3f}  off-topic flagged {f[0]}/{f[1]}  on-topic kept {f[2]}/{f[3]}")
    print(f"  pooled held-out: off-topic flagged {tot[0]}/{tot[1]} = {tot[0] / tot[1]:.3f}, "
          f"on-topic kept {tot[2]}/{tot[3]} = {tot[2] / tot[3]:.3f}, "
          f"balanced accuracy {(tot[0] / tot[1] + tot[2] / tot[3]) / 2:.3f}")
    print("leave one model out (fit on two models' replies, scored on the third):")
    for m in sorted({r["model"] for r in rows}):
        tr = [r for r in rows if r["model"] != m]
        te = [r for r in rows if r["model"] == m]
        thr = best_threshold([r["on"] for r in tr], [r["off"] for r in tr])
        f = rates([r["on"] for r in te], [r["off"] for r in te], thr)
        print(f"  {m:17} threshold {thr:.3f}  off-topic flagged {f[0]}/{f[1]} = {f[0] / f[1]:.3f}  "
              f"on-topic kept {f[2]}/{f[3]} = {f[2] / f[3]:.3f}")
    thr = best_threshold(pos, neg)
    print(f"threshold fit on every row: {thr:.3f} (use the held-out figures above as its estimate)")
    for t in (0.10, 0.15, 0.20, 0.25):
        f = rates(pos, neg, t)
        print(f"  at {t:.2f}: off-topic flagged {f[0] / f[1]:.3f}, on-topic kept {f[2] / f[3]:.3f}")


if __name__ == "__main__":
    main()
