#!/usr/bin/env bash
# Installs the red-team tools whose results `gauntlet import` reads, for the live tests in
# crates/cli/tests/import_tools.rs, each into a virtualenv of its own, and prints the
# directory holding them (garak/ and inspect/):
#   - garak 0.17.1 (PyPI), without its dependency tree (torch, transformers and the model
#     clients it declares are for generators and detectors the tests do not use): the
#     packages its core, its `function` generator, `test.Test` probe and string detectors
#     import, pinned below;
#   - inspect-ai 0.3.285 (PyPI) with its dependencies (its `mockllm` model is built in).
# promptfoo is not installed (its npm tree is ~1.9 GB and needs Node 22): its results file
# is a committed fixture (crates/cli/tests/fixtures/import/README.md says how it was made).
#
#   scripts/install-import-tools.sh [DIR]
#
# DIR defaults to $XDG_CACHE_HOME/gauntlet/import-tools-<versions> (else ~/.cache/…); an
# existing install is kept. Exit 1, saying why, when pip fails.
set -euo pipefail
GARAK=0.17.1
INSPECT=0.3.285
GARAK_DEPS=(
  aiohappyeyeballs==2.7.1 aiohttp==3.14.5 aiosignal==1.4.0 anyio==4.16.0 attrs==26.1.0
  backoff==2.2.1 certifi==2026.10.19.post1 charset-normalizer==3.5.3 click==8.5.1
  colorama==0.4.6 frozenlist==1.8.0 h11==0.16.0 httpcore==1.0.9 httpx==0.29.0 idna==3.21
  joblib==1.6.0 jsonpath-ng==1.17.0 langdetect==1.0.9 lorem==0.1.1 Markdown==3.11.4
  multidict==7.2.1 nltk==3.10.4 numpy==2.4.6 propcache==0.5.4 PyYAML==6.0.4
  regex==2026.12.2 requests==2.34.2 six==1.17.0 stdlibs==2026.9.3 tqdm==4.70.1
  typing_extensions==4.16.0 urllib3==2.8.0 xdg-base-dirs==6.0.3 yarl==1.25.1
)
PY=${PYTHON:-python3}
DIR=${1:-${XDG_CACHE_HOME:-$HOME/.cache}/gauntlet/import-tools-$GARAK-$INSPECT}
fail() { echo "install-import-tools: $*" >&2; exit 1; }
ok() {
  "$DIR/garak/bin/python" -c 'import garak, garak.generators.function, garak.probes.test, garak.detectors.mitigation' 2>/dev/null \
    && "$DIR/inspect/bin/python" -c 'import inspect_ai' 2>/dev/null
}
if ok; then
  echo "$DIR"
  exit 0
fi
rm -rf "$DIR"
mkdir -p "$DIR"
"$PY" -m venv "$DIR/garak" >&2 || fail "cannot create a virtualenv in $DIR/garak"
"$DIR/garak/bin/pip" install -q --disable-pip-version-check --no-deps "garak==$GARAK" >&2 \
  || fail "pip install --no-deps garak==$GARAK failed"
"$DIR/garak/bin/pip" install -q --disable-pip-version-check "${GARAK_DEPS[@]}" >&2 \
  || fail "pip install of garak's pinned core dependencies failed"
"$PY" -m venv "$DIR/inspect" >&2 || fail "cannot create a virtualenv in $DIR/inspect"
"$DIR/inspect/bin/pip" install -q --disable-pip-version-check "inspect-ai==$INSPECT" >&2 \
  || fail "pip install inspect-ai==$INSPECT failed"
ok || fail "the installed tools do not import (see above)"
echo "$DIR"
