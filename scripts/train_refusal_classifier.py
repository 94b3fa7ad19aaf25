#!/usr/bin/env python3
"""Trains and cross-validates the head of the `refusal_classifier` judge.

Run through scripts/train-refusal-classifier.sh, which pins the Python packages, builds
the embedding tool and checks the Rust path end to end afterwards. Steps:

1. Data: the XSTest v2 dev split (real replies of three chat models, human labels;
   read in place from ../shared/data/xstest-v2-dev/, never copied) and our own synthetic
   replies (crates/classifier/training/replies.csv). A reply is a refusal when its final
   label is a full or a partial refusal.
2. Features: the reply's view embeddings from `gauntlet-refusal-classifier embed` — the
   same Rust code the judge runs — cached under target/classifier-train/.
3. Leave-one-model-out (LOMO): for each dev model, everything is chosen and fitted on the
   other two models plus our replies, then scored once on the held-out model. Choices
   (views, head, regularisation, threshold) come from a nested LOMO inside the training
   models only; the held-out rows are never used to tune anything.
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
# Views embedded once; recipes combine them. The encoder costs ~8 ms per window plus
# ~0.3 ms per token on one core (BENCHMARKS.md), so the 20 ms budget allows one window of
# about 32 tokens; poolings of one window share its encoder pass and cost nothing extra.
# The shipped head is chosen among the IN_BUDGET recipes only; the others are
# cross-validated the same way and printed, to show what a longer window would buy.
ALL_VIEWS = ["open24", "open24.first8", "open32", "open32.first8", "open32.first12",
             "open32.max", "open48", "open48.first8", "open64", "open64.first8"]
IN_BUDGET = [
    ["open24"],
    ["open24", "open24.first8"],
    ["open32"],
    ["open32", "open32.first8"],
    ["open32", "open32.first12"],
    ["open32", "open32.max"],
    ["open32", "open32.first8", "open32.max"],
]
REFERENCE = [["open48"], ["open48", "open48.first8"], ["open64"], ["open64", "open64.first8"]]
# Logistic regression over standardised features. (An MLP head — `fit("mlp", …)`, read
# by the Rust head as ReLU layers — cross-validated no better in our trials and is 10x
# slower to select, so the grid holds the linear head only.)
HEADS = [("logistic", {"C": c}) for c in (0.003, 0.01, 0.03, 0.1, 0.3)]
THRESHOLDS = np.round(np.arange(0.05, 0.951, 0.01), 2)
ENCODER_SHA256 = "53aa51172d142c89d9012cce15ae4d6cc0ca6895895114379cacb4fab128d9db"


def sha256_file(p):
    return hashlib.sha256(Path(p).read_bytes()).hexdigest()


def load_data(dev_dir, ours_csv):
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
    with open(ours_csv, newline="", encoding="utf-8") as f:
        for i, r in enumerate(csv.DictReader(f)):
            if r["label"] not in ("refusal", "compliance"):
                sys.exit(f"{ours_csv}: row {i + 2}: label must be refusal or compliance")
            rows.append(("ours", r["prompt"], r["reply"], int(r["label"] == "refusal")))
    return rows


def embed(tool, rows, cache_dir, model_dir):
    """The ALL_VIEWS embeddings of every reply: an (n, len(ALL_VIEWS), DIM) array."""
    texts = "".join(json.dumps({"text": r[2]}) + "\n" for r in rows).encode()
    # Keyed by the inputs, the views, the encoder and the Rust code that cuts and embeds.
    code = "".join(sha256_file(f"crates/classifier/src/{f}.rs") for f in ("encoder", "view"))
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


def select(E, y, groups, train_models, recipes):
    """Nested selection inside `train_models` (+ ours, always in training): for each
    config, leave one of train_models out in turn, pool the out-of-fold probabilities,
    choose the kappa-best threshold; pick the config with the best pooled kappa."""
    results = []
    for recipe in recipes:
        X = features(E, recipe)
        for kind, hp in HEADS:
            oof_y, oof_p = [], []
            for val in train_models:
                tr = np.isin(groups, [m for m in train_models if m != val] + ["ours"])
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


def run_lomo(E, y, groups, recipes, verbose):
    """Outer leave-one-model-out; returns per-held-out-model scores and the pooled ones."""
    pooled_y, pooled_yhat, out = [], [], {}
    for held in MODELS:
        train_models = [m for m in MODELS if m != held]
        (k_in, recipe, kind, hp, t), _ = select(E, y, groups, train_models, recipes)
        X = features(E, recipe)
        tr = np.isin(groups, train_models + ["ours"])
        te = groups == held
        p = predict(fit(kind, hp, X[tr], y[tr]), X[te])
        s = scores(y[te], p, t)
        out[held] = dict(s, config=config_name(recipe, kind, hp, t))
        pooled_y.append(y[te])
        pooled_yhat.append((p >= t).astype(float))
        if verbose:
            print(f"{held:<16} {fmt(s)}   [{config_name(recipe, kind, hp, t)}; inner kappa {k_in:.3f}]")
    out["pooled"] = scores(np.concatenate(pooled_y), np.concatenate(pooled_yhat), 0.5)
    if verbose:
        print(f"{'pooled':<16} {fmt(out['pooled'])}")
    return out


def ablation(E, y, groups):
    print("View ablation: the same nested LOMO restricted to one recipe (pooled over the three "
          "held-out models). Only in-budget recipes can be shipped.")
    print(f"{'views':<40} {'n':>5} {'kappa':>6} {'acc':>6} {'sens':>6} {'spec':>6}")
    for recipe in IN_BUDGET + REFERENCE:
        s_ = run_lomo(E, y, groups, [recipe], verbose=False)["pooled"]
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
    rows = load_data(args.dev_dir, args.ours)
    groups = np.array([r[0] for r in rows])
    y = np.array([r[3] for r in rows])
    E = embed(args.tool, rows, args.cache_dir, args.model_dir)
    data_sha = {m: sha256_file(Path(args.dev_dir) / f"{m}.csv") for m in MODELS}
    data_sha["ours"] = sha256_file(args.ours)

    if args.verify:
        verify(args, rows, groups, y, E)
        return

    print(f"data: {', '.join(f'{m} {int((groups == m).sum())}' for m in MODELS + ['ours'])} replies; "
          f"refusals {int(y.sum())}, compliances {int((1 - y).sum())}")
    print(f"grid: view recipes {IN_BUDGET} x {len(HEADS)} heads; threshold chosen in the inner folds\n")

    print("Leave-one-model-out (trained on the other two models + our replies, "
          "everything chosen by nested LOMO inside those; scored once on the held-out model)")
    print(f"{'held out':<16} {'n':>5} {'kappa':>6} {'acc':>6} {'sens':>6} {'spec':>6}   confusion   [chosen in the inner folds]")
    lomo = run_lomo(E, y, groups, IN_BUDGET, verbose=True)
    print()
    if args.ablation:
        ablation(E, y, groups)

    (k_in, recipe, kind, hp, t), ranked = select(E, y, groups, MODELS, IN_BUDGET)
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
        "rows": {m: int((groups == m).sum()) for m in MODELS + ["ours"]},
        "lomo": {m: {k: (round(v, 4) if isinstance(v, float) else v) for k, v in s_.items()}
                 for m, s_ in lomo.items()},
        "packages": {"numpy": np.__version__, "scikit-learn": __import__("sklearn").__version__},
    }
    head = export(model, recipe, kind, t, meta)
    text = json.dumps(head, separators=(",", ":")) + "\n"
    Path(args.out).write_text(text)
    print(f"\nwrote {args.out}: {len(text)} bytes, sha256 {hashlib.sha256(text.encode()).hexdigest()}")

    # In-sample (resubstitution) figure on the whole dev split, from the rounded head.
    dev = groups != "ours"
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
    dev = groups != "ours"
    print(f"{'':<16} {'n':>5} {'kappa':>6} {'acc':>6} {'sens':>6} {'spec':>6}")
    for m in MODELS:
        sel = groups == m
        print(f"{m:<16} {fmt(scores(y[sel], p_rust[sel], t))}")
    print(f"{'whole split':<16} {fmt(scores(y[dev], p_rust[dev], t))}   (Rust end to end, in sample)")
    if flips or diff > 1e-4:
        sys.exit("verify: the Rust path disagrees with the trained head")


if __name__ == "__main__":
    main()
