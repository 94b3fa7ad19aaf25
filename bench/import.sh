#!/usr/bin/env bash
# Import speed and peak memory of `gauntlet import garak` on a synthetic report of LINES
# lines (default 100000: 49999 attempts, each written at status 1 and 2), with
# garak's own verdicts only and with refusal_match as well. PROBES (default 7) is how
# many probes the attempts are spread over (each probe is an attack of the import).
#   [PROBES=30] bench/import.sh [LINES]
# Uses target/release/gauntlet (built here unless GAUNTLET_BIN names another binary).
set -euo pipefail
cd "$(dirname "$0")/.."
LINES=${1:-100000}
PROBES=${PROBES:-7}
BIN=${GAUNTLET_BIN:-target/release/gauntlet}
if [[ -z "${GAUNTLET_BIN:-}" ]]; then cargo build --release -p gauntlet-cli >&2; fi
WORK=$(mktemp -d)
trap 'rm -rf "$WORK"' EXIT
python3 bench/gen_garak.py "$LINES" "$WORK/report.jsonl" "$PROBES"
echo "report: $LINES lines over $PROBES probes, $(du -h "$WORK/report.jsonl" | cut -f1)"
for judges in "" "--judge refusal_match"; do
  rm -rf "$WORK/run"
  /usr/bin/time -f "%e s wall, %M KiB peak RSS" "$BIN" import garak "$WORK/report.jsonl" \
    --out "$WORK/run" --quiet $judges > /dev/null 2> "$WORK/time"
  echo "import garak ${judges:-(the tool verdicts only)}: $(tail -1 "$WORK/time")"
done
