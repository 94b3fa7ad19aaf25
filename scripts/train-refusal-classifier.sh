#!/usr/bin/env bash
# Retrains the head of the `refusal_classifier` judge and prints its leave-one-group-out
# cross-validation (Cohen's kappa, accuracy, refusal sensitivity and specificity per
# held-out dev model and per held-out source of our own replies, and pooled), then checks
# the Rust judge path end to end.
#
#   scripts/train-refusal-classifier.sh [--dev-dir DIR]
#   scripts/train-refusal-classifier.sh --band-cv JUDGE_EVAL_JSON [--dev-dir DIR]
#
# With --band-cv, nothing is trained or written: scripts/refusal_band_cv.py chooses the
# judge's abstention band (and whether the rules are a second opinion) by nested
# leave-one-group-out and prints the kappa-coverage curve; JUDGE_EVAL_JSON is
# judge_eval.json of `gauntlet judge-eval DEV/*.csv crates/classifier/training/replies.csv
# crates/classifier/training/sources/*.csv --judge refusal_match`.
#
# Reads the XSTest v2 dev split from ../shared/data/xstest-v2-dev/ (in place; never
# copied into the repo) and our own labelled replies from crates/classifier/training/.
# Writes crates/classifier/head/refusal_head.json and pins its sha256 in
# crates/classifier/src/head.rs. Deterministic: rerunning on the same inputs rewrites
# the same bytes (check with `git diff --exit-code crates/classifier`).
# Python packages are pinned and installed into target/classifier-train/venv.
set -euo pipefail
cd "$(dirname "$0")/.."
VENV=target/classifier-train/venv
PINNED="numpy==2.4.6 scipy==1.17.1 scikit-learn==1.9.1"
TOOL=${CARGO_TARGET_DIR:-target}/release/gauntlet-refusal-classifier

if ! "$VENV/bin/python" - "$PINNED" 2>/dev/null <<'PY'
import sys, numpy, scipy, sklearn
want = dict(p.split("==") for p in sys.argv[1].split())
have = {"numpy": numpy.__version__, "scipy": scipy.__version__, "scikit-learn": sklearn.__version__}
sys.exit(0 if want == have else 1)
PY
then
  python3 -m venv "$VENV"
  # shellcheck disable=SC2086
  "$VENV/bin/pip" install --quiet --disable-pip-version-check $PINNED
fi
MODEL_DIR=$(scripts/install-minilm.sh)
# One BLAS thread: sums in a fixed order, so the fitted weights repeat exactly.
export OMP_NUM_THREADS=1 OPENBLAS_NUM_THREADS=1 MKL_NUM_THREADS=1

build() { cargo build --release -q --locked -p gauntlet-classifier --features tool --bin gauntlet-refusal-classifier; }
build
if [ "${1:-}" = "--band-cv" ]; then
  [ -n "${2:-}" ] || { echo "--band-cv needs the judge_eval.json of refusal_match on the dev split" >&2; exit 2; }
  rules=$2; shift 2
  exec "$VENV/bin/python" scripts/refusal_band_cv.py --tool "$TOOL" --model-dir "$MODEL_DIR" --rules "$rules" "$@"
fi
"$VENV/bin/python" scripts/train_refusal_classifier.py --tool "$TOOL" --model-dir "$MODEL_DIR" "$@"
sha=$(sha256sum crates/classifier/head/refusal_head.json | cut -d' ' -f1)
sed -i "s/^pub const SHIPPED_SHA256: &str = \"[0-9a-f]*\";/pub const SHIPPED_SHA256: \&str = \"$sha\";/" \
  crates/classifier/src/head.rs
grep -q "$sha" crates/classifier/src/head.rs || { echo "could not pin the head's sha256 in head.rs" >&2; exit 1; }
echo
echo "== end-to-end check: the rebuilt Rust tool (head compiled in) over every reply"
build
"$VENV/bin/python" scripts/train_refusal_classifier.py --tool "$TOOL" --model-dir "$MODEL_DIR" --verify "$@"
