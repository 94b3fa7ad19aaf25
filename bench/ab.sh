#!/usr/bin/env bash
# Interleaved A/B of two gauntlet binaries on the offline and leakage workloads, for a
# change's cost on a shared machine: A and B alternate, each round a fresh run and a
# complete rerun of each workload; prints wall, user + system CPU (wait4's, to 0.1 ms:
# bench/measure.py) and peak RSS per run.
#
#   bench/ab.sh A_BIN B_BIN [ROUNDS]      # e.g. main's target/release/gauntlet vs yours
#
# Ends with the medians per workload and B's change against A (bench/ab_summary.py, which
# also reads a saved log: bench/ab_summary.py LOG).
set -euo pipefail
A=$(realpath "$1"); B=$(realpath "$2"); ROUNDS=${3:-5}
cd "$(dirname "$0")/.."
. bench/smoke_matrix.sh
W=$(realpath -m "${BENCH_OUT:-bench/out/ab}")  # absolute, whether BENCH_OUT is or not
rm -rf "$W"; mkdir -p "$W"
python3 bench/gen_dataset.py 10000 > "$W/b10k.json"
smoke_matrix smoke10k "url: 'file://$W/b10k.json', name: generated" > "$W/smoke10k.yaml"
python3 bench/gen_leakage.py 10000 400 "$W/probes.json" "$W/leak.yaml" leak > /dev/null
LOG=$W/ab.log
: > "$LOG"
t() { # bin config runs-dir label
  local out e c m
  out=$(python3 bench/measure.py "$1" run "$2" --runs-dir "$3" --concurrency 64 --quiet)
  read -r e c m <<< "$out"
  echo "$4 wall=$e cpu=$c rss=$((m / 1024))MiB" | tee -a "$LOG"
}
for r in $(seq 1 "$ROUNDS"); do
  for X in A B; do
    for wl in smoke10k leak; do
      rm -rf "$W/runs-$X"
      t "${!X}" "$W/$wl.yaml" "$W/runs-$X" "round=$r bin=$X $wl fresh"
      t "${!X}" "$W/$wl.yaml" "$W/runs-$X" "round=$r bin=$X $wl rerun"
    done
  done
done
python3 bench/ab_summary.py "$LOG"
