#!/usr/bin/env bash
# Offline throughput benchmark of the leakage surface (no network, reference memorizers).
#
#   bench/leakage.sh
#   BENCH_CONCURRENCY=64 BENCH_PROBES=10000 bench/leakage.sh
#
# Workload: 10,000 generated probes (bench/gen_leakage.py: fake secrets of 28 B to 4 KB
# from a pool of 400 per category) × the five leakage attacks × a leaky and a guarded
# reference_memorizer × leak_detector (normalised substring + suffix-automaton verbatim
# overlap) × the five leakage metrics with bootstrap CIs = 100,000 attempts. Replies run
# up to ~4 KB (a leaked passage). Runs fresh, then again into the same run directory (a
# complete rerun served from the journal). Figures include transcript writing, the
# journal, the metrics and the reports. Prints attempts/s and peak RSS.
set -euo pipefail
cd "$(dirname "$0")/.."
OUT=${BENCH_OUT:-bench/out/leakage}
CONC=${BENCH_CONCURRENCY:-64}
PROBES=${BENCH_PROBES:-10000}
POOL=${BENCH_POOL:-400}
cargo build --release -q -p gauntlet-cli
BIN=target/release/gauntlet
rm -rf "$OUT"
mkdir -p "$OUT"

measure() { # label name
  local label=$1 name=$2
  /usr/bin/time -f '%M %e' -o "$OUT/time.txt" "$BIN" run "$OUT/$name.yaml" --runs-dir "$OUT/runs" --concurrency "$CONC" --quiet > /dev/null
  read -r rss_kib wall < "$OUT/time.txt"
  local session bytes
  session=$(tail -n 1 "$OUT/runs/$name/sessions.jsonl")
  bytes=$(du -sb "$OUT/runs/$name" | cut -f1)
  python3 - "$label" "$session" "$wall" "$rss_kib" "$bytes" <<'PY'
import json, sys
label, s, wall, rss, size = sys.argv[1], json.loads(sys.argv[2]), float(sys.argv[3]), int(sys.argv[4]), int(sys.argv[5])
a = s["attempts"]
print(f"{label:<38} {a:>8} attempts  {wall:6.2f} s  {a / wall:>9,.0f} attempts/s  "
      f"peak RSS {rss / 1024:6.1f} MiB  {size / a:6.0f} B/attempt on disk  calls {s['model_calls']} (journal {s['cache_hits']})")
PY
}

echo "gauntlet leakage benchmark: $(nproc) cores, concurrency $CONC, $(git rev-parse --short HEAD 2>/dev/null || echo unknown)"
python3 bench/gen_leakage.py "$PROBES" "$POOL" "$(pwd)/$OUT/probes.json" "$OUT/leak.yaml" leak
python3 - "$OUT/probes.json" <<'PY'
import json, sys
b = json.load(open(sys.argv[1]))["behaviors"]
ls = sorted(len(x["target_secret"]) for x in b)
print(f"probes {len(b)}: secret length min {ls[0]} B, median {ls[len(ls)//2]} B, max {ls[-1]} B")
PY
measure "$((PROBES * 10)) leakage attempts, fresh" leak
measure "$((PROBES * 10)) leakage attempts, complete rerun" leak
python3 - "$OUT/runs/leak/results.json" <<'PY'
import json, sys
r = json.load(open(sys.argv[1]))
print("mode:", r["mode"])
for c in r["cells"]:
    print(f'  {c["attack"]:<20} {c["target"]:<8}', "  ".join(
        f'{m["metric"]}={m["value"]:.3f}' if m["value"] is not None else f'{m["metric"]}=N/A'
        for m in c["metrics"]))
PY
