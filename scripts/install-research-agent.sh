#!/usr/bin/env bash
# Installs the virtualenv of the example agent application examples/apps/research-agent:
# Pydantic AI (pydantic-ai-slim[openai,mcp]) with the OpenTelemetry SDK and the OTLP/HTTP
# exporter, every package at the exact version of examples/apps/research-agent/requirements.txt,
# each wheel checked against its pinned sha256 by pip (--require-hashes, --no-deps: nothing
# unpinned comes in).
#
#   scripts/install-research-agent.sh [DIR]
#
# DIR defaults to $GAUNTLET_RESEARCH_AGENT_VENV, else $XDG_CACHE_HOME/gauntlet/research-agent,
# else ~/.cache/gauntlet/research-agent. An install whose stamp matches the requirements
# file's sha256 is kept (nothing downloaded). Prints DIR on stdout; progress and errors go
# to stderr; exit status 1 when the venv, a download or a hash check fails. 69 wheels,
# 26 MB downloaded, about 190 MB on disk.
set -euo pipefail
cd "$(dirname "$0")/.."
REQS=examples/apps/research-agent/requirements.txt
PY=${PYTHON:-python3}

fail() { echo "install-research-agent: $*" >&2; exit 1; }

if [[ $# -gt 1 ]]; then echo "usage: $0 [DIR]" >&2; exit 2; fi
if [[ $# -eq 1 ]]; then
  DIR=$1
elif [[ -n "${GAUNTLET_RESEARCH_AGENT_VENV:-}" ]]; then
  DIR=$GAUNTLET_RESEARCH_AGENT_VENV
elif [[ -n "${XDG_CACHE_HOME:-}" ]]; then
  DIR=$XDG_CACHE_HOME/gauntlet/research-agent
elif [[ -n "${HOME:-}" ]]; then
  DIR=$HOME/.cache/gauntlet/research-agent
else
  fail "no DIR given and neither GAUNTLET_RESEARCH_AGENT_VENV, XDG_CACHE_HOME nor HOME is set"
fi
[[ -f $REQS ]] || fail "$REQS is missing (run from a gauntlet checkout)"
WANT=$(sha256sum "$REQS" | cut -d' ' -f1)
STAMP=$DIR/.gauntlet-requirements.sha256

if [[ -x $DIR/bin/python && -f $STAMP && "$(cat "$STAMP")" == "$WANT" ]]; then
  echo "install-research-agent: already installed in $DIR (requirements sha256 $WANT)" >&2
  echo "$DIR"
  exit 0
fi

"$PY" -c 'import sys; sys.exit(0 if sys.version_info[:2] == (3, 11) else 1)' \
  || fail "$PY is $("$PY" --version 2>&1); the pinned wheels are for CPython 3.11 (set PYTHON=python3.11)"
rm -rf "$DIR"
mkdir -p "$(dirname "$DIR")"
echo "install-research-agent: creating the virtualenv in $DIR" >&2
"$PY" -m venv "$DIR" >&2 || fail "cannot create a virtualenv in $DIR"
echo "install-research-agent: pip install --require-hashes -r $REQS (pydantic-ai-slim with its MCP client, opentelemetry-sdk, OTLP/HTTP exporter; 69 wheels)" >&2
"$DIR/bin/pip" install --quiet --disable-pip-version-check --no-deps --require-hashes \
  --only-binary=:all: -r "$REQS" >&2 \
  || { rm -rf "$DIR"; fail "pip install from $REQS failed (is PyPI reachable? see pip's message above)"; }
"$DIR/bin/python" -c 'import pydantic_ai, pydantic_ai.mcp, opentelemetry.sdk.trace, opentelemetry.exporter.otlp.proto.http.trace_exporter' >&2 \
  || { rm -rf "$DIR"; fail "the installed packages do not import"; }
echo "$WANT" > "$STAMP"
echo "install-research-agent: installed in $DIR" >&2
echo "$DIR"
