#!/usr/bin/env bash
# Merge benchmark: an offline 1M-attempt run cut into shards, merged back.
#
#   bench/merge.sh                       # 125,000 behaviors = 1,000,000 attempts, 4 shards
#   BENCH_BEHAVIORS=10000 BENCH_SHARDS=8 bench/merge.sh
#   BENCH_VERIFY=0 bench/merge.sh        # skip the one-machine run and the byte comparison
#
# The workload is bench/offline.sh's smoke matrix (2 reference targets × static+template,
# 4 attempts per behavior, refusal_match + rubric with a reference grader, five metrics
# with bootstrap CIs). The shards run one after another (their time is not the figure);
# then `gauntlet merge` is timed: verifying every shard's manifest (sha256 of every
# artefact), rebuilding the plan and the partition, interleaving the transcript lines in
# canonical order, the metric accumulation with its CIs, the reports and the journals'
# concatenation. With BENCH_VERIFY=1 (default) the merged directory is compared byte for
# byte with a one-machine run of the same config.
set -euo pipefail
cd "$(dirname "$0")/.."
. bench/smoke_matrix.sh
OUT=${BENCH_OUT:-bench/out-merge}
N=${BENCH_BEHAVIORS:-125000}
SHARDS=${BENCH_SHARDS:-4}
VERIFY=${BENCH_VERIFY:-1}
cargo build --release -q -p gauntlet-cli
BIN=target/release/gauntlet
rm -rf "$OUT"
mkdir -p "$OUT"
trap 'rm -rf "$OUT"' EXIT

python3 bench/gen_dataset.py "$N" > "$OUT/behaviors.json"
smoke_matrix merge "url: 'file://$(pwd)/$OUT/behaviors.json', name: generated" > "$OUT/merge.yaml"

echo "gauntlet merge benchmark: $(nproc) cores, $N behaviors, $SHARDS shards, $(git rev-parse --short HEAD 2>/dev/null || echo unknown)"
for ((i = 0; i < SHARDS; i++)); do
  /usr/bin/time -f '%M %e' -o "$OUT/time.txt" "$BIN" run "$OUT/merge.yaml" --runs-dir "$OUT/shards" --shard "$i/$SHARDS" --quiet > /dev/null
  read -r rss wall < "$OUT/time.txt"
  echo "shard $i/$SHARDS: $(python3 -c 'import json,sys; print(json.load(open(sys.argv[1]))["attempts"])' "$OUT/shards/merge.shard-$i-of-$SHARDS/run.json") attempts, ${wall} s, peak RSS $((rss / 1024)) MiB"
done
/usr/bin/time -f '%M %e %U %S' -o "$OUT/time.txt" "$BIN" merge "$OUT"/shards/merge.shard-*-of-"$SHARDS" --out "$OUT/merged" > /dev/null
read -r rss wall user sys < "$OUT/time.txt"
attempts=$(python3 -c 'import json,sys; print(json.load(open(sys.argv[1]))["attempts"])' "$OUT/merged/run.json")
bytes=$(du -sb "$OUT/merged/transcripts.jsonl" | cut -f1)
python3 - "$attempts" "$wall" "$user" "$sys" "$rss" "$bytes" <<'PY'
import sys
a, wall, user, sys_, rss, size = int(sys.argv[1]), float(sys.argv[2]), float(sys.argv[3]), float(sys.argv[4]), int(sys.argv[5]), int(sys.argv[6])
print(f"merge: {a:,} attempts in {wall:.2f} s wall ({user + sys_:.2f} CPU s), {a / wall:,.0f} attempts/s, "
      f"peak RSS {rss / 1024:.1f} MiB, transcripts {size / 2**20:.0f} MiB")
PY
if [ "$VERIFY" = 1 ]; then
  "$BIN" run "$OUT/merge.yaml" --runs-dir "$OUT/one" --quiet > /dev/null
  for f in run.json results.json transcripts.jsonl leaderboard.json report.md report.html usage.json manifest.json; do
    cmp -s "$OUT/one/merge/$f" "$OUT/merged/$f" || { echo "MISMATCH: $f differs from the one-machine run" >&2; exit 1; }
  done
  echo "merged artefacts are byte-identical to the one-machine run"
fi
