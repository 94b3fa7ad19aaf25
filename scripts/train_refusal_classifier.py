#!/usr/bin/env python3
"""Trains and cross-validates the head of the `refusal_classifier` judge.

Run through scripts/train-refusal-classifier.sh, which pins the Python packages, builds
the embedding tool and checks the Rust path end to end afterwards. Steps:

1. Data, in groups: the XSTest v2 dev split (real replies of three chat models, human
   labels; read in place from ../shared/data/xstest-v2-dev/, never copied), one group per
   model; and our own labelled replies, one group per authoring source
   (crates/classifier/training/replies.csv, and each crates/classifier/training/sources/
   SOURCE.csv: formal, casual, lecture, terse, multilingual, redirect, persona). A reply
   is a refusal when its label is a full or a partial refusal.
2. Features: the reply's view embeddings from `gauntlet-refusal-classifier embed` — the
   same Rust code the judge runs — cached under target/classifier-train/.
3. Leave-one-group-out (each dev model and each of our sources held out in turn): the
   head is chosen and fitted on the other groups, then scored once on the held-out
   group. Choices (views, regularisation, threshold) come from a nested leave-one-model-
   out over the dev models among the training groups (our other sources always train);
   the held-out rows are never used to tune anything.
4. The shipped head: the same nested selection over all three models, fitted on all the
   data, written to crates/classifier/head/refusal_head.json.

Deterministic: fixed seeds, single-threaded BLAS, sorted inputs, rounded weights.
"""

import argparse
import warnings
import csv
import hashlib
import json
import os
import subprocess
import sys
from pathlib import Path

import numpy as np
from sklearn.linear_model import LogisticRegression
from sklearn.metrics import cohen_kappa_score
from sklearn.neural_network import MLPClassifier
from sklearn.preprocessing import StandardScaler

SEED = 20261130
DIM = 384
MODELS = ["gpt4", "llama2new", "mistralinstruct"]
REFUSAL_LABELS = {"2_full_refusal", "3_partial_refusal"}
COMPLIANCE_LABELS = {"1_full_compliance"}
# Views embedded once; recipes combine them. One window of 32 tokens keeps a verdict
# within a few ms of CPU; poolings of one window share its encoder pass and cost nothing
# extra. (Longer windows, 48 and 64 tokens, cross-validated no better at 1.5-2x the cost
# when the head was first trained; BENCHMARKS.md.)
ALL_VIEWS = ["open32", "open32.first8", "open32.max"]
IN_BUDGET = [
    ["open32"],
    ["open32", "open32.first8"],
    ["open32", "open32.first8", "open32.max"],
]
REFERENCE = []
# Logistic regression over standardised features. (An MLP head — `fit("mlp", …)`, read
# by the Rust head as ReLU layers — cross-validated no better in our trials and is 10x
# slower to select, so the grid holds the linear head only.)
HEADS = [("logistic", {"C": c}) for c in (0.003, 0.01, 0.1)]
SOURCES_DIR = "crates/classifier/training/sources"


def our_groups(ours_csv, sources_dir):
    """Our authoring sources: the first labelled file as `replies`, then one per file."""
    return ["replies"] + sorted(p.stem for p in Path(sources_dir).glob("*.csv"))
THRESHOLDS = np.round(np.arange(0.05, 0.951, 0.01), 2)
ENCODER_SHA256 = "53aa51172d142c89d9012cce15ae4d6cc0ca6895895114379cacb4fab128d9db"


def sha256_file(p):
    return hashlib.sha256(Path(p).read_bytes()).hexdigest()


def load_data(dev_dir, ours_csv, sources_dir=SOURCES_DIR):
    rows = []  # (group, prompt, reply, label 1=refusal)
    for m in MODELS:
        path = Path(dev_dir) / f"{m}.csv"
        with open(path, newline="", encoding="utf-8") as f:
            for i, r in enumerate(csv.DictReader(f)):
                lab = r["final_label"]
                if lab in REFUSAL_LABELS:
                    y = 1
                elif lab in COMPLIANCE_LABELS:
                    y = 0
                else:
                    sys.exit(f"{path}: row {i + 2}: unknown final_label {lab!r}")
                rows.append((m, r["prompt"], r["completion"], y))
    for group in our_groups(ours_csv, sources_dir):
        path = ours_csv if group == "replies" else Path(sources_dir) / f"{group}.csv"
        with open(path, newline="", encoding="utf-8") as f:
            for i, r in enumerate(csv.DictReader(f)):
                if r["label"] not in ("refusal", "compliance"):
                    sys.exit(f"{path}: row {i + 2}: label must be refusal or compliance")
                rows.append((group, r["prompt"], r["reply"], int(r["label"] == "refusal")))
    return rows


def embed(tool, rows, cache_dir, model_dir):
    """The ALL_VIEWS embeddings of every reply: an (n, len(ALL_VIEWS), DIM) array."""
    texts = "".join(json.dumps({"text": r[2]}) + "\n" for r in rows).encode()
    # Keyed by the inputs, the views, the encoder and the Rust code that cuts and embeds.
    code = "".join(sha256_file(f"crates/classifier/src/{f}.rs")
                   for f in ("encoder", "view", "bert", "wordpiece"))
    key = hashlib.sha256(
        texts + ",".join(ALL_VIEWS).encode() + ENCODER_SHA256.encode() + code.encode()
    ).hexdigest()[:16]
    cache = Path(cache_dir) / f"emb-{key}.f32"
    if not cache.exists():
        cmd = [tool, "embed", "--views", ",".join(ALL_VIEWS)]
        if model_dir:
            cmd += ["--model-dir", model_dir]
        print(f"embedding {len(rows)} replies x {len(ALL_VIEWS)} views ...", file=sys.stderr)
        out = subprocess.run(cmd, input=texts, stdout=subprocess.PIPE, check=True).stdout
        tmp = cache.with_suffix(".tmp")
        tmp.write_bytes(out)
        tmp.rename(cache)
    x = np.fromfile(cache, dtype="<f4")
    return x.reshape(len(rows), len(ALL_VIEWS), DIM)


def features(E, recipe):
    idx = [ALL_VIEWS.index(v) for v in recipe]
    return E[:, idx, :].reshape(E.shape[0], -1).astype(np.float64)


def fit(kind, hp, X, y):
    # A fixed iteration budget is part of the recipe (deterministic either way).
    warnings.filterwarnings("ignore", message=".*failed to converge.*")
    scaler = StandardScaler().fit(X)
    Xs = scaler.transform(X)
    if kind == "logistic":
        clf = LogisticRegression(C=hp["C"], max_iter=5000, solver="lbfgs")
    else:
        clf = MLPClassifier(
            hidden_layer_sizes=(hp["hidden"],),
            alpha=hp["alpha"],
            max_iter=500,
            early_stopping=False,
            random_state=SEED,
            solver="lbfgs",
        )
    clf.fit(Xs, y)
    return scaler, clf


def predict(model, X):
    scaler, clf = model
    return clf.predict_proba(scaler.transform(X))[:, 1]


def scores(y, p, t):
    yhat = (p >= t).astype(int)
    tp = int(((yhat == 1) & (y == 1)).sum())
    tn = int(((yhat == 0) & (y == 0)).sum())
    fp = int(((yhat == 1) & (y == 0)).sum())
    fn = int(((yhat == 0) & (y == 1)).sum())
    return {
        "n": len(y),
        "kappa": float(cohen_kappa_score(y, yhat)) if len(set(y)) > 1 or len(set(yhat)) > 1 else float("nan"),
        "accuracy": (tp + tn) / len(y),
        "sensitivity": tp / (tp + fn) if tp + fn else float("nan"),
        "specificity": tn / (tn + fp) if tn + fp else float("nan"),
        "tp": tp, "fn": fn, "tn": tn, "fp": fp,
    }


def best_threshold(y, p):
    """The threshold maximising Cohen's kappa (ties: the one closest to 0.5)."""
    best = None
    for t in THRESHOLDS:
        k = scores(y, p, t)["kappa"]
        key = (round(k, 12), -abs(t - 0.5))
        if best is None or key > best[0]:
            best = (key, float(t))
    return best[1]


def select(E, y, groups, pool, recipes):
    """Nested selection inside the training groups `pool`: for each config, leave each
    dev model of the pool out in turn (the pool's other groups, our sources included,
    train), pool the out-of-fold probabilities, choose the kappa-best threshold; pick the
    config with the best pooled kappa."""
    train_models = [m for m in MODELS if m in pool]
    results = []
    for recipe in recipes:
        X = features(E, recipe)
        for kind, hp in HEADS:
            oof_y, oof_p = [], []
            for val in train_models:
                tr = np.isin(groups, [g for g in pool if g != val])
                va = groups == val
                model = fit(kind, hp, X[tr], y[tr])
                oof_y.append(y[va])
                oof_p.append(predict(model, X[va]))
            oy, op = np.concatenate(oof_y), np.concatenate(oof_p)
            t = best_threshold(oy, op)
            k = scores(oy, op, t)["kappa"]
            results.append((k, recipe, kind, hp, t))
    # Highest kappa; ties broken towards fewer views, then the listed order (stable).
    results.sort(key=lambda r: (-round(r[0], 12), len(r[1])))
    return results[0], results


def all_groups(groups):
    return MODELS + [g for g in dict.fromkeys(groups) if g not in MODELS]


def run_lomo(E, y, groups, recipes, verbose):
    """Outer leave-one-group-out (each dev model, each of our sources); returns
    per-held-out-group scores and the pooled ones (dev models; our sources)."""
    pooled, out = {"dev": ([], []), "ours": ([], [])}, {}
    for held in all_groups(groups):
        pool = [g for g in all_groups(groups) if g != held]
        (k_in, recipe, kind, hp, t), _ = select(E, y, groups, pool, recipes)
        X = features(E, recipe)
        tr = np.isin(groups, pool)
        te = groups == held
        p = predict(fit(kind, hp, X[tr], y[tr]), X[te])
        s = scores(y[te], p, t)
        out[held] = dict(s, config=config_name(recipe, kind, hp, t))
        k = "dev" if held in MODELS else "ours"
        pooled[k][0].append(y[te])
        pooled[k][1].append((p >= t).astype(float))
        if verbose:
            print(f"{held:<16} {fmt(s)}   [{config_name(recipe, kind, hp, t)}; inner kappa {k_in:.3f}]")
    for k, name in (("dev", "pooled dev"), ("ours", "pooled ours")):
        out[name] = scores(np.concatenate(pooled[k][0]), np.concatenate(pooled[k][1]), 0.5)
        if verbose:
            print(f"{name:<16} {fmt(out[name])}")
    return out


def ablation(E, y, groups):
    print("View ablation: the same nested LOMO restricted to one recipe (pooled over the three "
          "held-out models). Only in-budget recipes can be shipped.")
    print(f"{'views':<40} {'n':>5} {'kappa':>6} {'acc':>6} {'sens':>6} {'spec':>6}")
    for recipe in IN_BUDGET + REFERENCE:
        s_ = run_lomo(E, y, groups, [recipe], verbose=False)["pooled dev"]
        tag = "" if recipe in IN_BUDGET else "   (over the 20 ms budget)"
        print(f"{'+'.join(recipe):<40} {fmt(s_)}{tag}")
    print()


def fmt(s):
    return (f"{s['n']:>5} {s['kappa']:6.3f} {s['accuracy']:6.3f} "
            f"{s['sensitivity']:6.3f} {s['specificity']:6.3f}   "
            f"tp {s['tp']:>3} fn {s['fn']:>3} tn {s['tn']:>3} fp {s['fp']:>3}")


def config_name(recipe, kind, hp, t):
    h = ", ".join(f"{k}={v}" for k, v in hp.items())
    return f"{'+'.join(recipe)} {kind}({h}) t={t:.2f}"


def export(model, recipe, kind, t, meta):
    """The head file: the scaler folded into the first layer, weights rounded."""
    scaler, clf = model
    mean, scale = scaler.mean_, scaler.scale_
    if kind == "logistic":
        Ws, bs = [clf.coef_], [clf.intercept_]
    else:
        Ws = [w.T for w in clf.coefs_]
        bs = list(clf.intercepts_)
    W0 = Ws[0] / scale
    b0 = bs[0] - Ws[0] @ (mean / scale)
    Ws, bs = [W0] + Ws[1:], [b0] + bs[1:]
    r = lambda x: float(f"{x:.7g}")
    layers = [{"weights": [[r(v) for v in row] for row in W], "bias": [r(v) for v in b]}
              for W, b in zip(Ws, bs)]
    return {
        "format": "gauntlet-refusal-head/1",
        "encoder_sha256": ENCODER_SHA256,
        "views": recipe,
        "dim": DIM,
        "layers": layers,
        "threshold": float(t),
        "training": meta,
    }


def head_probability(head, x):
    """The head file's probability, computed as the Rust code does (f64, ReLU between)."""
    h = x.astype(np.float64)
    for i, layer in enumerate(head["layers"]):
        h = np.array(layer["weights"]) @ h + np.array(layer["bias"])
        if i < len(head["layers"]) - 1:
            h = np.maximum(h, 0.0)
    return 1.0 / (1.0 + np.exp(-h[0]))


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--tool", required=True, help="path to gauntlet-refusal-classifier")
    ap.add_argument("--dev-dir", default="../shared/data/xstest-v2-dev")
    ap.add_argument("--ours", default="crates/classifier/training/replies.csv")
    ap.add_argument("--sources-dir", default=SOURCES_DIR)
    ap.add_argument("--cache-dir", default="target/classifier-train")
    ap.add_argument("--model-dir", default=None)
    ap.add_argument("--out", default="crates/classifier/head/refusal_head.json")
    ap.add_argument("--ablation", action="store_true",
                    help="also cross-validate each view recipe on its own (slow)")
    ap.add_argument("--verify", action="store_true",
                    help="instead of training: score the shipped head through the Rust tool's "
                         "`predict` on every row and compare with the head computed here")
    args = ap.parse_args()
    np.random.seed(SEED)
    Path(args.cache_dir).mkdir(parents=True, exist_ok=True)

    if not (Path(args.dev_dir) / "gpt4.csv").is_file():
        sys.exit(f"no XSTest v2 dev split at {args.dev_dir} (gpt4.csv, llama2new.csv, "
                 "mistralinstruct.csv): pass --dev-dir DIR")
    rows = load_data(args.dev_dir, args.ours, args.sources_dir)
    groups = np.array([r[0] for r in rows])
    y = np.array([r[3] for r in rows])
    E = embed(args.tool, rows, args.cache_dir, args.model_dir)
    data_sha = {m: sha256_file(Path(args.dev_dir) / f"{m}.csv") for m in MODELS}
    for g in our_groups(args.ours, args.sources_dir):
        data_sha[g] = sha256_file(args.ours if g == "replies" else Path(args.sources_dir) / f"{g}.csv")

    if args.verify:
        verify(args, rows, groups, y, E)
        return

    print(f"data: {', '.join(f'{m} {int((groups == m).sum())}' for m in all_groups(groups))} replies; "
          f"refusals {int(y.sum())}, compliances {int((1 - y).sum())}")
    print(f"grid: view recipes {IN_BUDGET} x {len(HEADS)} heads; threshold chosen in the inner folds\n")

    print("Leave-one-group-out (trained on every other group, everything chosen by nested "
          "LOMO over the dev models among them; scored once on the held-out group)")
    print(f"{'held out':<16} {'n':>5} {'kappa':>6} {'acc':>6} {'sens':>6} {'spec':>6}   confusion   [chosen in the inner folds]")
    lomo = run_lomo(E, y, groups, IN_BUDGET, verbose=True)
    print()
    if args.ablation:
        ablation(E, y, groups)

    (k_in, recipe, kind, hp, t), ranked = select(E, y, groups, all_groups(groups), IN_BUDGET)
    print("Shipped head: nested LOMO over all three models chose "
          f"{config_name(recipe, kind, hp, t)} (inner pooled kappa {k_in:.3f}); runner-up configs:")
    for k, rc, kd, h, tt in ranked[1:6]:
        print(f"  {k:.3f}  {config_name(rc, kd, h, tt)}")
    X = features(E, recipe)
    model = fit(kind, hp, X, y)
    meta = {
        "seed": SEED,
        "config": config_name(recipe, kind, hp, t),
        "data_sha256": data_sha,
        "rows": {m: int((groups == m).sum()) for m in all_groups(groups)},
        "lomo": {m: {k: (round(v, 4) if isinstance(v, float) else v) for k, v in s_.items()}
                 for m, s_ in lomo.items()},
        "packages": {"numpy": np.__version__, "scikit-learn": __import__("sklearn").__version__},
    }
    head = export(model, recipe, kind, t, meta)
    text = json.dumps(head, separators=(",", ":")) + "\n"
    Path(args.out).write_text(text)
    print(f"\nwrote {args.out}: {len(text)} bytes, sha256 {hashlib.sha256(text.encode()).hexdigest()}")

    # In-sample (resubstitution) figure on the whole dev split, from the rounded head.
    dev = np.isin(groups, MODELS)
    p = np.array([head_probability(head, x) for x in X[dev]])
    print("Whole dev split, in sample (the shipped head was trained on these rows; "
          "the LOMO table above is the honest estimate):")
    print(f"{'whole split':<16} {fmt(scores(y[dev], p, t))}")


def verify(args, rows, groups, y, E):
    """The Rust tool's end-to-end probabilities (tokenise, embed, head) for every row,
    compared with the head applied here to the cached embeddings."""
    head = json.loads(Path(args.out).read_text())
    X = features(E, head["views"])
    texts = "".join(json.dumps({"text": r[2]}) + "\n" for r in rows).encode()
    cmd = [args.tool, "predict"] + (["--model-dir", args.model_dir] if args.model_dir else [])
    out = subprocess.run(cmd, input=texts, stdout=subprocess.PIPE, check=True).stdout.decode()
    p_rust = np.array([float(v) for v in out.split()])
    p_here = np.array([head_probability(head, x) for x in X])
    diff = float(np.abs(p_rust - p_here).max())
    t = head["threshold"]
    flips = int(((p_rust >= t) != (p_here >= t)).sum())
    print(f"verify: Rust `predict` vs the head applied here: max |dp| {diff:.2e}, "
          f"{flips} decision flips over {len(rows)} replies")
    dev = np.isin(groups, MODELS)
    print(f"{'':<16} {'n':>5} {'kappa':>6} {'acc':>6} {'sens':>6} {'spec':>6}")
    for m in MODELS:
        sel = groups == m
        print(f"{m:<16} {fmt(scores(y[sel], p_rust[sel], t))}")
    print(f"{'whole split':<16} {fmt(scores(y[dev], p_rust[dev], t))}   (Rust end to end, in sample)")
    if flips or diff > 1e-4:
        sys.exit("verify: the Rust path disagrees with the trained head")


if __name__ == "__main__":
    main()
