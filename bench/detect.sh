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
# peak RSS, from /usr/bin/time -f '%M %e'. exam-detect streams: it verifies the pin by
# hashing every file (keeping none), then loads, projects, runs and grades one scenario
# per worker and drops it, so peak RSS is bounded by the scenarios in flight. The
# streamed phase's own timing is read from exam-detect's stderr line (wall-clock figures
# are kept out of the JSON report so that it is byte-identical across reruns).
# BENCH_BIN overrides the binary (no build), e.g. to measure an older build.
set -euo pipefail
cd "$(dirname "$0")/.."
N=${BENCH_N:-10000}
MIN=${BENCH_MIN:-10}
MAX=${BENCH_MAX:-1000}
if [ -n "${BENCH_BIN:-}" ]; then
  BIN=$BENCH_BIN
else
  cargo build --release -q -p gauntlet-cli
  BIN=$PWD/target/release/gauntlet
fi
TMP=$(mktemp -d)
trap 'rm -rf "$TMP"' EXIT
EVENTS=$(python3 bench/gen_detect.py "$TMP/corpus" "$N" "$MIN" "$MAX")
"$BIN" corpus pin "$TMP/corpus" > /dev/null
BYTES=$(du -sb "$TMP/corpus" | cut -f1)
set +e
/usr/bin/time -f '%M %e' -o "$TMP/time.txt" "$BIN" exam-detect --corpus "$TMP/corpus" --json > "$TMP/report.json" 2> "$TMP/stderr.txt"
CODE=$?
set -e
read -r RSS WALL < <(tail -n 1 "$TMP/time.txt")
python3 - "$N" "$EVENTS" "$BYTES" "$RSS" "$WALL" "$CODE" "$TMP/report.json" "$TMP/stderr.txt" <<'PY'
import json, re, sys
n, events, size, rss, wall, code, path, err = sys.argv[1:]
n, events, size, rss, wall = int(n), int(events), int(size), int(rss), float(wall)
r = json.load(open(path))
if "throughput" in r:  # builds before streaming: timing in the JSON, parsing excluded
    t = r["throughput"]
    phase = "detect phase     {:.2f} s: {:.0f} scenarios/s, {:.0f} events/s (projection, fleet, grading; parsing excluded)"
else:
    phase = "streamed phase   {:.2f} s: {:.0f} scenarios/s, {:.0f} events/s (parse, projection, fleet, grading)"
    m = re.search(r"in ([0-9.]+) s \(([0-9]+) scenarios/s, ([0-9]+) events/s\)", open(err).read())
    t = {"elapsed_secs": float(m[1]), "scenarios_per_sec": float(m[2]), "events_per_sec": float(m[3])}
print(f"corpus           {n} scenarios, {events} events, {size/1e6:.0f} MB of YAML")
print(f"exit code        {code} (labelled {r['totals']['labeled']}, detector errors {r['detector_errors']})")
print(f"wall time        {wall:.2f} s (whole process: pin check, parse, detect, grade, JSON)")
print(f"scenarios/s      {n/wall:.0f}")
print(f"events/s         {events/wall:.0f}")
print(phase.format(t['elapsed_secs'], t['scenarios_per_sec'], t['events_per_sec']))
print(f"peak RSS         {rss/1024:.0f} MiB")
PY
