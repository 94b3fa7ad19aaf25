#!/usr/bin/env bash
# Installs the real MCP servers the MCP tests run — the official reference servers:
# everything, filesystem, memory and sequential-thinking from the npm registry (versions
# in scripts/mcp-servers/package.json, every package's sha512 in its package-lock.json:
# `npm ci` refuses a tarball whose digest differs), and git, fetch and time from PyPI
# (scripts/mcp-servers/requirements.txt, every wheel's sha256: `pip --require-hashes`) —
# into a cache directory, and prints that directory. Node, npm and python3-venv come from
# Debian's packages when they are missing.
#
#   scripts/install-mcp-servers.sh [DIR]
#
# DIR defaults to $XDG_CACHE_HOME/gauntlet/mcp-servers-<lock digest> (else ~/.cache/…);
# an install of the same lock is kept. The servers are then
#   DIR/node_modules/@modelcontextprotocol/server-everything/dist/index.js
#   DIR/node_modules/@modelcontextprotocol/server-filesystem/dist/index.js
#   DIR/node_modules/@modelcontextprotocol/server-{memory,sequential-thinking}/dist/index.js
#   DIR/py/bin/mcp-server-{git,fetch,time}
# Exit 1 (with the reason on stderr) when node/npm cannot be had or npm ci fails; with
# CI set the MCP tests then fail rather than skip.
set -euo pipefail
HERE=$(cd "$(dirname "$0")/mcp-servers" && pwd)
DIGEST=$(cat "$HERE/package-lock.json" "$HERE/requirements.txt" | sha256sum | cut -c1-12)
DIR=${1:-${XDG_CACHE_HOME:-$HOME/.cache}/gauntlet/mcp-servers-$DIGEST}
EVERYTHING=$DIR/node_modules/@modelcontextprotocol/server-everything/dist/index.js
FILESYSTEM=$DIR/node_modules/@modelcontextprotocol/server-filesystem/dist/index.js
EXPECTED=("$EVERYTHING" "$FILESYSTEM"
  "$DIR/node_modules/@modelcontextprotocol/server-memory/dist/index.js"
  "$DIR/node_modules/@modelcontextprotocol/server-sequential-thinking/dist/index.js"
  "$DIR/py/bin/mcp-server-git" "$DIR/py/bin/mcp-server-fetch" "$DIR/py/bin/mcp-server-time")
all_there() { local f; for f in "${EXPECTED[@]}"; do [[ -f "$f" ]] || return 1; done; }
if all_there && [[ -f "$DIR/.installed-$DIGEST" ]]; then
  echo "$DIR"
  exit 0
fi
if ! command -v node >/dev/null || ! command -v npm >/dev/null; then
  echo "install-mcp-servers: node/npm missing; installing Debian's nodejs and npm" >&2
  (apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq nodejs npm) >&2 \
    || { echo "install-mcp-servers: apt-get install nodejs npm failed" >&2; exit 1; }
fi
major=$(node -p 'process.versions.node.split(".")[0]')
if (( major < 18 )); then
  echo "install-mcp-servers: node $(node --version) is older than 18, which the servers need" >&2
  exit 1
fi
rm -rf "$DIR"
mkdir -p "$DIR"
cp "$HERE/package.json" "$HERE/package-lock.json" "$DIR/"
(cd "$DIR" && npm ci --no-audit --no-fund --ignore-scripts --loglevel=error) >&2 \
  || { echo "install-mcp-servers: npm ci failed (see above)" >&2; exit 1; }
if ! python3 -c 'import venv, ensurepip' 2>/dev/null; then
  echo "install-mcp-servers: python3 venv missing; installing Debian's python3-venv" >&2
  (apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq python3-venv) >&2 \
    || { echo "install-mcp-servers: apt-get install python3-venv failed" >&2; exit 1; }
fi
(python3 -m venv "$DIR/py" \
  && "$DIR/py/bin/pip" install -q --no-input --disable-pip-version-check --require-hashes \
       --only-binary=:all: -r "$HERE/requirements.txt") >&2 \
  || { echo "install-mcp-servers: pip install of the Python reference servers failed (see above)" >&2; exit 1; }
all_there \
  || { echo "install-mcp-servers: the installs finished but the servers are not where expected under $DIR" >&2; exit 1; }
touch "$DIR/.installed-$DIGEST"
echo "$DIR"
