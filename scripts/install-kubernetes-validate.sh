#!/usr/bin/env bash
# Installs kubernetes-validate (PyPI; the Kubernetes JSON schemas of every release ship
# inside the package, so validating needs no cluster and no network) into a virtualenv
# of its own, and prints the path of its `kubernetes-validate` command.
#
#   scripts/install-kubernetes-validate.sh [VENV_DIR]
#
# VENV_DIR defaults to $XDG_CACHE_HOME/gauntlet/kubernetes-validate-<version> (else
# ~/.cache/…); an existing install is kept. Exit 1 when pip fails.
set -euo pipefail
VERSION=1.37.0
PY=${PYTHON:-python3}
DIR=${1:-${XDG_CACHE_HOME:-$HOME/.cache}/gauntlet/kubernetes-validate-$VERSION}
BIN=$DIR/bin/kubernetes-validate
if [[ -x "$BIN" ]] && "$BIN" --version 2>/dev/null | grep -q "$VERSION"; then
  echo "$BIN"
  exit 0
fi
rm -rf "$DIR"
"$PY" -m venv "$DIR" >&2 || { echo "install-kubernetes-validate: cannot create a virtualenv in $DIR" >&2; exit 1; }
"$DIR/bin/pip" install -q --disable-pip-version-check "kubernetes-validate==$VERSION" >&2 \
  || { echo "install-kubernetes-validate: pip install kubernetes-validate==$VERSION failed" >&2; exit 1; }
echo "$BIN"
