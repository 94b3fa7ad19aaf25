#!/usr/bin/env bash
# Installs the pinned packages of the two plain OpenTelemetry example applications,
# examples/apps/otel-plain/:
#   DIR/python   a virtualenv with opentelemetry-sdk and opentelemetry-exporter-otlp-proto-http
#                (and what they need), every wheel at the exact version and sha256 of
#                python/requirements.txt (pip --require-hashes --no-deps --only-binary=:all:);
#   DIR/node     node_modules of @opentelemetry/sdk-trace-node, sdk-trace-base and
#                exporter-trace-otlp-http, by `npm ci` from the committed
#                node/package-lock.json (its integrity hashes checked; no install scripts run).
#
#   scripts/install-otel-plain.sh [DIR]
#
# DIR defaults to $GAUNTLET_OTEL_PLAIN_DIR, else $XDG_CACHE_HOME/gauntlet/otel-plain, else
# ~/.cache/gauntlet/otel-plain. An install whose stamp matches the sha256 of the two pin
# files is kept (nothing downloaded). Prints DIR on stdout; progress and errors go to
# stderr; exit status 1 when a download, a hash check or an import fails. Run the Node
# application with NODE_PATH=DIR/node/node_modules.
set -euo pipefail
cd "$(dirname "$0")/.."
APPS=examples/apps/otel-plain
REQS=$APPS/python/requirements.txt
LOCK=$APPS/node/package-lock.json
PY=${PYTHON:-python3}

fail() { echo "install-otel-plain: $*" >&2; exit 1; }

if [[ $# -gt 1 ]]; then echo "usage: $0 [DIR]" >&2; exit 2; fi
if [[ $# -eq 1 ]]; then
  DIR=$1
elif [[ -n "${GAUNTLET_OTEL_PLAIN_DIR:-}" ]]; then
  DIR=$GAUNTLET_OTEL_PLAIN_DIR
elif [[ -n "${XDG_CACHE_HOME:-}" ]]; then
  DIR=$XDG_CACHE_HOME/gauntlet/otel-plain
elif [[ -n "${HOME:-}" ]]; then
  DIR=$HOME/.cache/gauntlet/otel-plain
else
  fail "no DIR given and neither GAUNTLET_OTEL_PLAIN_DIR, XDG_CACHE_HOME nor HOME is set"
fi
[[ -f $REQS && -f $LOCK ]] || fail "$REQS or $LOCK is missing (run from a gauntlet checkout)"
WANT=$(cat "$REQS" "$APPS/node/package.json" "$LOCK" | sha256sum | cut -d' ' -f1)
STAMP=$DIR/.gauntlet-pins.sha256

if [[ -x $DIR/python/bin/python && -d $DIR/node/node_modules && -f $STAMP && "$(cat "$STAMP")" == "$WANT" ]]; then
  echo "install-otel-plain: already installed in $DIR (pins sha256 $WANT)" >&2
  echo "$DIR"
  exit 0
fi

"$PY" -c 'import sys; sys.exit(0 if sys.version_info[:2] == (3, 11) else 1)' \
  || fail "$PY is $("$PY" --version 2>&1); the pinned wheels are for CPython 3.11 (set PYTHON=python3.11)"
command -v node >/dev/null || fail "node is not on PATH (Node.js 18 or later is needed)"
command -v npm >/dev/null || fail "npm is not on PATH"
node -e 'process.exit(Number(process.versions.node.split(".")[0]) >= 18 ? 0 : 1)' \
  || fail "node is $(node --version); Node.js 18 or later is needed"
rm -rf "$DIR"
mkdir -p "$DIR/node"
echo "install-otel-plain: creating the virtualenv in $DIR/python" >&2
"$PY" -m venv "$DIR/python" >&2 || fail "cannot create a virtualenv in $DIR/python"
echo "install-otel-plain: pip install --require-hashes -r $REQS (opentelemetry-sdk, OTLP/HTTP protobuf exporter; 16 wheels)" >&2
"$DIR/python/bin/pip" install --quiet --disable-pip-version-check --no-deps --require-hashes \
  --only-binary=:all: -r "$REQS" >&2 \
  || { rm -rf "$DIR"; fail "pip install from $REQS failed (is PyPI reachable? see pip's message above)"; }
"$DIR/python/bin/python" -c 'import opentelemetry.sdk.trace, opentelemetry.exporter.otlp.proto.http.trace_exporter' >&2 \
  || { rm -rf "$DIR"; fail "the installed Python packages do not import"; }
echo "install-otel-plain: npm ci in $DIR/node (@opentelemetry/sdk-trace-node, exporter-trace-otlp-http; package-lock.json)" >&2
cp "$APPS/node/package.json" "$LOCK" "$DIR/node/"
( cd "$DIR/node" && npm ci --ignore-scripts --omit=dev --no-audit --no-fund --loglevel=error \
    --cache "$DIR/.npm-cache" >&2 ) \
  || { rm -rf "$DIR"; fail "npm ci failed (is the npm registry reachable? see npm's message above)"; }
rm -rf "$DIR/.npm-cache"
NODE_PATH=$DIR/node/node_modules node -e 'require("@opentelemetry/sdk-trace-node"); require("@opentelemetry/exporter-trace-otlp-http")' >&2 \
  || { rm -rf "$DIR"; fail "the installed Node packages do not load"; }
echo "$WANT" > "$STAMP"
echo "install-otel-plain: installed in $DIR" >&2
echo "$DIR"
