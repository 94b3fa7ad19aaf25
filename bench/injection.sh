#!/usr/bin/env bash
# Offline throughput benchmark of the injection surface (no network, reference agents).
#
#   bench/injection.sh
#   BENCH_SCENARIOS=5000 BENCH_CONCURRENCY=64 bench/injection.sh
#
# Workload: 5,000 generated scenarios (bench/gen_injection.py; half messaging, half
# workspace, two-step plans) × 3 injections (none, direct, indirect) × 4 reference_agent
# targets (2 robust, 2 vulnerable) = 60,000 agent runs of 3–4 model calls each, judged by
# injection_detector, with the three injection metrics and their bootstrap CIs.
# Runs fresh, then again into the same run directory (a complete rerun served from the
# journal). Figures include transcripts, the journal, the metrics and the reports.
# Prints agent runs/s and peak RSS.
set -euo pipefail
cd "$(dirname "$0")/.."
OUT=${BENCH_OUT:-bench/out/injection}
CONC=${BENCH_CONCURRENCY:-64}
N=${BENCH_SCENARIOS:-5000}
if [ -z "${BENCH_BIN:-}" ]; then
  cargo build --release -q -p gauntlet-cli
  BIN=target/release/gauntlet
else
  BIN=$BENCH_BIN
fi
rm -rf "$OUT"
mkdir -p "$OUT"


measure() { # label
  local label=$1
  local start end wall rss_kib
  if [ -x /usr/bin/time ]; then
    /usr/bin/time -f '%M %e' -o "$OUT/time.txt" "$BIN" run "$OUT/inj.yaml" --runs-dir "$OUT/runs" --concurrency "$CONC" --quiet > /dev/null
    read -r rss_kib wall < "$OUT/time.txt"
  else
    # No /usr/bin/time: poll the process's VmHWM from /proc while it runs.
    start=$(date +%s.%N)
    "$BIN" run "$OUT/inj.yaml" --runs-dir "$OUT/runs" --concurrency "$CONC" --quiet > /dev/null &
    local pid=$! hwm=0 v
    while kill -0 "$pid" 2> /dev/null; do
      v=$(awk '/VmHWM/ {print $2}' "/proc/$pid/status" 2> /dev/null || echo 0)
      [ -n "$v" ] && [ "$v" -gt "$hwm" ] && hwm=$v
      sleep 0.05
    done
    wait "$pid"
    end=$(date +%s.%N)
    wall=$(echo "$end - $start" | bc)
    rss_kib=$hwm
  fi
  local session
  session=$(tail -n 1 "$OUT/runs/inj/sessions.jsonl")
  python3 - "$label" "$session" "$wall" "$rss_kib" <<'PY'
import json, sys
label, s, wall, rss = sys.argv[1], json.loads(sys.argv[2]), float(sys.argv[3]), int(sys.argv[4])
a = s["attempts"]
print(f"{label:<34} {a:>7} agent runs  {wall:6.2f} s  {a / wall:>9,.0f} agent runs/s  "
      f"peak RSS {rss / 1024:6.1f} MiB  model calls {s['model_calls']} (journal {s['cache_hits']})")
PY
}

echo "gauntlet injection benchmark: $(nproc) cores, concurrency $CONC, $(git rev-parse --short HEAD 2>/dev/null || echo unknown)"
python3 bench/gen_injection.py "$N" "$(pwd)/$OUT/suite.json" "$OUT/inj.yaml" inj
measure "$((N * 12)) agent runs, fresh"
measure "$((N * 12)) agent runs, complete rerun"
python3 - "$OUT/runs/inj/results.json" <<'PY'
import json, sys
r = json.load(open(sys.argv[1]))
print("mode:", r["mode"], "status:", r["status"])
for c in r["cells"]:
    print(f'  {c["attack"]:<20} {c["target"]:<20} errors={c["errors"]}', "  ".join(
        f'{m["metric"]}={m["value"]:.3f}' if m.get("value") is not None else f'{m["metric"]}=N/A'
        for m in c["metrics"]))
PY
