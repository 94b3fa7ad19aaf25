#!/usr/bin/env bash
# Installs the virtualenv of gauntlet's AgentDojo sidecar: agentdojo==0.1.35 and every
# dependency at the exact versions of crates/redteam/src/injection/agentdojo/requirements.txt,
# each wheel checked against its pinned sha256 by pip (--require-hashes, --no-deps: nothing
# unpinned comes in), then byte-compiled (the sidecar runs with a read-only filesystem and
# writes no .pyc). No torch: the `transformers_pi_detector` defence is not supported.
#
#   scripts/install-agentdojo.sh [DIR]
#
# DIR defaults to $GAUNTLET_AGENTDOJO_VENV, else $XDG_CACHE_HOME/gauntlet/agentdojo-0.1.35,
# else ~/.cache/gauntlet/agentdojo-0.1.35 — where the sidecar looks by default (it also
# honours $GAUNTLET_AGENTDOJO_VENV). An install whose stamp matches the requirements file's
# sha256 is kept (nothing downloaded). Prints DIR on stdout; progress and errors go to
# stderr; exit status 1 when the venv, a download or a hash check fails. 292 MB on disk.
set -euo pipefail
cd "$(dirname "$0")/.."
REQS=crates/redteam/src/injection/agentdojo/requirements.txt
PY=${PYTHON:-python3}

fail() { echo "install-agentdojo: $*" >&2; exit 1; }

if [[ $# -gt 1 ]]; then echo "usage: $0 [DIR]" >&2; exit 2; fi
if [[ $# -eq 1 ]]; then
  DIR=$1
elif [[ -n "${GAUNTLET_AGENTDOJO_VENV:-}" ]]; then
  DIR=$GAUNTLET_AGENTDOJO_VENV
elif [[ -n "${XDG_CACHE_HOME:-}" ]]; then
  DIR=$XDG_CACHE_HOME/gauntlet/agentdojo-0.1.35
elif [[ -n "${HOME:-}" ]]; then
  DIR=$HOME/.cache/gauntlet/agentdojo-0.1.35
else
  fail "no DIR given and neither GAUNTLET_AGENTDOJO_VENV, XDG_CACHE_HOME nor HOME is set"
fi
[[ -f $REQS ]] || fail "$REQS is missing (run from a gauntlet checkout)"
WANT=$(sha256sum "$REQS" | cut -d' ' -f1)
STAMP=$DIR/.gauntlet-requirements.sha256

if [[ -x $DIR/bin/python && -f $STAMP && "$(cat "$STAMP")" == "$WANT" ]]; then
  echo "install-agentdojo: already installed in $DIR (requirements sha256 $WANT)" >&2
  echo "$DIR"
  exit 0
fi

"$PY" -c 'import sys; sys.exit(0 if sys.version_info[:2] == (3, 11) else 1)' \
  || fail "$PY is $("$PY" --version 2>&1); the pinned wheels are for CPython 3.11 (set PYTHON=python3.11)"
rm -rf "$DIR"
mkdir -p "$(dirname "$DIR")"
echo "install-agentdojo: creating the virtualenv in $DIR" >&2
"$PY" -m venv "$DIR" >&2 || fail "cannot create a virtualenv in $DIR"
echo "install-agentdojo: pip install --require-hashes -r $REQS (agentdojo==0.1.35, 72 packages)" >&2
"$DIR/bin/pip" install --quiet --disable-pip-version-check --no-deps --require-hashes \
  --only-binary=:all: -r "$REQS" >&2 \
  || { rm -rf "$DIR"; fail "pip install from $REQS failed (is PyPI reachable? see pip's message above)"; }
"$DIR/bin/python" -c 'import agentdojo.task_suite.load_suites' >&2 2>/dev/null \
  || { rm -rf "$DIR"; fail "the installed agentdojo does not import"; }
"$DIR/bin/python" -m compileall -q "$DIR/lib" >/dev/null 2>&1 || true
echo "$WANT" > "$STAMP"
echo "install-agentdojo: installed agentdojo==0.1.35 in $DIR" >&2
echo "$DIR"
