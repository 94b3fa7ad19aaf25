#!/usr/bin/env bash
# Offline throughput benchmark of the red-team engine (no network, reference models).
#
#   bench/offline.sh            # both workloads
#   BENCH_CONCURRENCY=64 bench/offline.sh
#
# Workload 1: the smoke matrix (2 targets × static+template × refusal_match+rubric, five
#   metrics with bootstrap CIs) over a generated 10,000-behavior dataset = 80,000 attempts.
# Workload 2: the same matrix over 125,000 behaviors = 1,000,000 attempts.
# Each workload runs fresh, then again into the same run directory (a complete rerun:
# every call served from the journal). Prints attempts/s, peak RSS and bytes on disk per
# attempt. Figures include transcript writing, the journal and the reports.
set -euo pipefail
cd "$(dirname "$0")/.."
. bench/smoke_matrix.sh
OUT=${BENCH_OUT:-bench/out}
CONC=${BENCH_CONCURRENCY:-64}
cargo build --release -q -p gauntlet-cli
BIN=target/release/gauntlet
rm -rf "$OUT"
mkdir -p "$OUT"

config() { # name dataset-file
  smoke_matrix "$1" "url: 'file://$2', name: generated" > "$OUT/$1.yaml"
}

measure() { # label name
  local label=$1 name=$2
  /usr/bin/time -f '%M %e' -o "$OUT/time.txt" "$BIN" run "$OUT/$name.yaml" --runs-dir "$OUT/runs" --concurrency "$CONC" --quiet > /dev/null
  read -r rss_kib wall < "$OUT/time.txt"
  local session attempts calls hits bytes
  session=$(tail -n 1 "$OUT/runs/$name/sessions.jsonl")
  attempts=$(python3 -c 'import json,sys; print(json.loads(sys.argv[1])["attempts"])' "$session")
  calls=$(python3 -c 'import json,sys; print(json.loads(sys.argv[1])["model_calls"])' "$session")
  hits=$(python3 -c 'import json,sys; print(json.loads(sys.argv[1])["cache_hits"])' "$session")
  bytes=$(du -sb "$OUT/runs/$name" | cut -f1)
  python3 - "$label" "$attempts" "$wall" "$rss_kib" "$bytes" "$calls" "$hits" <<'PY'
import sys
label, attempts, wall, rss, size, calls, hits = sys.argv[1], int(sys.argv[2]), float(sys.argv[3]), int(sys.argv[4]), int(sys.argv[5]), sys.argv[6], sys.argv[7]
print(f"{label:<34} {attempts:>9} attempts  {wall:7.2f} s  {attempts / wall:>10,.0f} attempts/s  "
      f"peak RSS {rss / 1024:6.1f} MiB  {size / attempts:6.0f} B/attempt on disk  calls {calls} (journal {hits})")
PY
}

echo "gauntlet offline benchmark: $(nproc) cores, concurrency $CONC, $(git rev-parse --short HEAD 2>/dev/null || echo unknown)"
python3 bench/gen_dataset.py 10000 > "$OUT/behaviors-10k.json"
config smoke10k "$(pwd)/$OUT/behaviors-10k.json"
measure "80k attempts (10k behaviors), fresh" smoke10k
measure "80k attempts, complete rerun" smoke10k

python3 bench/gen_dataset.py 125000 > "$OUT/behaviors-125k.json"
config smoke1m "$(pwd)/$OUT/behaviors-125k.json"
measure "1M attempts (125k behaviors), fresh" smoke1m
measure "1M attempts, complete rerun" smoke1m
