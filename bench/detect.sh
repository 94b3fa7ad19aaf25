#!/usr/bin/env bash
# Detect-exam throughput: generates a corpus of BENCH_N (10,000) synthetic scenarios with
# 10–1,000 events each (log-uniform: most scenarios small, a long tail), pins it, and runs
# `gauntlet exam-detect --json` over it with the reference fleet (release build).
#
#   bench/detect.sh
#   BENCH_N=2000 BENCH_MAX=500 bench/detect.sh
#
# Prints scenarios/s and events/s over the whole process wall time (pin check, YAML
# parsing, projection, 20 isolated detectors per scenario, grading, JSON report) and the
# peak RSS, from /usr/bin/time -f '%M %e'.
set -euo pipefail
cd "$(dirname "$0")/.."
N=${BENCH_N:-10000}
MIN=${BENCH_MIN:-10}
MAX=${BENCH_MAX:-1000}
cargo build --release -q -p gauntlet-cli
BIN=$PWD/target/release/gauntlet
TMP=$(mktemp -d)
trap 'rm -rf "$TMP"' EXIT
EVENTS=$(python3 bench/gen_detect.py "$TMP/corpus" "$N" "$MIN" "$MAX")
"$BIN" corpus pin "$TMP/corpus" > /dev/null
BYTES=$(du -sb "$TMP/corpus" | cut -f1)
set +e
/usr/bin/time -f '%M %e' -o "$TMP/time.txt" "$BIN" exam-detect --corpus "$TMP/corpus" --json > "$TMP/report.json"
CODE=$?
set -e
read -r RSS WALL < <(tail -n 1 "$TMP/time.txt")
python3 - "$N" "$EVENTS" "$BYTES" "$RSS" "$WALL" "$CODE" "$TMP/report.json" <<'PY'
import json, sys
n, events, size, rss, wall, code, path = sys.argv[1:]
n, events, size, rss, wall = int(n), int(events), int(size), int(rss), float(wall)
r = json.load(open(path))
t = r["throughput"]
print(f"corpus           {n} scenarios, {events} events, {size/1e6:.0f} MB of YAML")
print(f"exit code        {code} (labelled {r['totals']['labeled']}, detector errors {r['detector_errors']})")
print(f"wall time        {wall:.2f} s (whole process: pin check, parse, detect, grade, JSON)")
print(f"scenarios/s      {n/wall:.0f}")
print(f"events/s         {events/wall:.0f}")
print(f"detect phase     {t['elapsed_secs']:.2f} s: {t['scenarios_per_sec']:.0f} scenarios/s, {t['events_per_sec']:.0f} events/s")
print(f"peak RSS         {rss/1024:.0f} MiB")
PY
