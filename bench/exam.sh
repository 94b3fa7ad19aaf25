#!/usr/bin/env bash
# Agent-exam benchmark: golden mode over the reference corpus (exams/scenarios), N=3
# passes with 3 consensus voters, in-process and over loopback HTTP (the golden server
# reached through the `anthropic` target: real HTTP/JSON on 127.0.0.1).
#
#   bench/exam.sh
#   BENCH_CONCURRENCY=16 BENCH_REPEAT=5 bench/exam.sh
#
# BENCH_BIN=path/to/gauntlet skips the build and measures that binary.
# Prints scenarios/s (scenario runs = passes × corpus size, over the whole process wall
# time: corpus load and pin check, cascades, grading and every artefact written), model
# calls/s and peak RSS. Golden mode is a pipeline check: these are harness figures, not
# model figures.
set -euo pipefail
cd "$(dirname "$0")/.."
OUT=${BENCH_OUT:-bench/out/exam}
CONC=${BENCH_CONCURRENCY:-8}
REPEAT=${BENCH_REPEAT:-3}
BIN=${BENCH_BIN:-target/release/gauntlet}
[ -n "${BENCH_BIN:-}" ] || cargo build --release -q -p gauntlet-cli
rm -rf "$OUT"
mkdir -p "$OUT"

measure() { # label extra-args...
  local label=$1; shift
  local best=""
  for i in $(seq 1 "$REPEAT"); do
    /usr/bin/time -f '%M %e' -o "$OUT/time.txt" "$BIN" exam --quiet -n 3 --concurrency "$CONC" \
      --corpus exams/scenarios --out "$OUT/run" "$@" > /dev/null
    read -r rss wall < "$OUT/time.txt"
    best=$(python3 - "$best" "$rss" "$wall" <<'PY'
import sys
best, rss, wall = sys.argv[1], int(sys.argv[2]), float(sys.argv[3])
if best:
    b_rss, b_wall = best.split()
    rss, wall = max(rss, int(b_rss)), min(wall, float(b_wall))
print(rss, wall)
PY
)
  done
  read -r rss wall <<< "$best"
  python3 - "$label" "$OUT/run/report.json" "$wall" "$rss" <<'PY'
import json, sys
label, report, wall, rss = sys.argv[1], sys.argv[2], float(sys.argv[3]), int(sys.argv[4])
r = json.load(open(report))
runs = sum(x["total"] for x in r["runs"])
print(f"{label:<28} {runs} scenario runs ({len(r['runs'])} passes x {r['corpus_count']})  "
      f"{max(wall, 0.01):6.2f} s  {runs / max(wall, 0.01):8.0f} scenarios/s  "
      f"{r['model_calls'] / max(wall, 0.01):9.0f} calls/s  peak RSS {rss / 1024:6.1f} MiB  "
      f"median pass rate {r['median_pass_rate'] * 100:.1f}%")
PY
}

echo "gauntlet agent-exam benchmark: $(nproc) cores, concurrency $CONC, best wall of $REPEAT (max RSS), $(git rev-parse --short HEAD 2>/dev/null || echo unknown)"
measure "golden, in-process"
measure "golden, loopback HTTP" --golden-http

# Peak memory against the number of passes: each scenario run's result and transcript are
# written as it is graded and only counted in memory; report.json reads the results back
# from those files as it is written, so the resident set should not grow with N (runs 2
# and 3 rerun into the same directory). BENCH_PASSES overrides the sweep.
echo "peak RSS by passes (golden, in-process, concurrency $CONC, largest of $REPEAT):"
for n in ${BENCH_PASSES:-1 8 32 100}; do
  rss=0
  for i in $(seq 1 "$REPEAT"); do
    /usr/bin/time -f '%M' -o "$OUT/time.txt" "$BIN" exam --quiet -n "$n" --concurrency "$CONC" \
      --corpus exams/scenarios --out "$OUT/passes-$n" > /dev/null
    r=$(cat "$OUT/time.txt"); [ "$r" -gt "$rss" ] && rss=$r
  done
  runs=$(python3 -c 'import json,sys; r=json.load(open(sys.argv[1])); print(sum(x["total"] for x in r["runs"]))' "$OUT/passes-$n/report.json")
  printf '  %3d passes (%6d scenario runs)  peak RSS %6.1f MiB  artefacts on disk %s\n' "$n" "$runs" \
    "$(awk -v k="$rss" 'BEGIN { print k / 1024 }')" "$(du -sh --apparent-size "$OUT/passes-$n" | cut -f1)"
done
