#!/usr/bin/env bash
# Detect-exam accuracy on the corpora that test recorded context: the bundled reference
# corpus (with the benign-explanation extras) and both splits of the benign-context corpus
# (exams/benign-context: dev, developed against; heldout, written with it before the
# detectors read context). Prints recall and precision with their 95% Wilson intervals,
# and every missed attack and false alarm by id.
#
#   bench/detect-context.sh                  # builds the debug CLI
#   BENCH_BIN=path/to/gauntlet bench/detect-context.sh
#
# The figures are counts over labelled rows, not timings: any build gives the same ones.
set -euo pipefail
cd "$(dirname "$0")/.."
if [ -n "${BENCH_BIN:-}" ]; then
  BIN=$BENCH_BIN
else
  cargo build -q -p gauntlet-cli
  BIN=$PWD/target/debug/gauntlet
fi
TMP=$(mktemp -d)
trap 'rm -rf "$TMP"' EXIT
run() {
  local name=$1
  shift
  set +e
  "$BIN" exam-detect "$@" --json > "$TMP/out.json" 2> /dev/null
  set -e
  python3 - "$name" "$TMP/out.json" <<'PY'
import json, sys
name, path = sys.argv[1:]
r = json.load(open(path))
rec, pre = r["recall"], r["precision"]
print(f"{name:<22} recall {rec['numerator']}/{rec['denominator']} ({100 * rec['rate']:.1f}%, "
      f"CI {100 * rec['wilson_low']:.1f}-{100 * rec['wilson_high']:.1f}%)   "
      f"precision {pre['numerator']}/{pre['denominator']} ({100 * pre['rate']:.1f}%, "
      f"CI {100 * pre['wilson_low']:.1f}-{100 * pre['wilson_high']:.1f}%)")
for m in rec["missed"]:
    print(f"  missed       {m['id']}: {', '.join(m['missing'])}")
for f in pre["false_alarms"]:
    print(f"  false alarm  {f['id']}: {', '.join(f['families'])}")
PY
}
run bundled --corpus exams/scenarios --extra-scenarios-dir exams/benign-explanations
run benign-context/dev --corpus exams/benign-context/dev
run benign-context/heldout --corpus exams/benign-context/heldout
