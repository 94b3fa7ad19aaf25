#!/usr/bin/env bash
# Side by side with redharness 0.1.0 (the Python harness whose configs gauntlet reads):
# the smoke matrix (2 reference targets × static+template × refusal_match+rubric, five
# metrics) over a generated 5,000-behavior dataset = 40,000 attempts, the same config
# file given to both tools, fresh run directories, concurrency 64.
#
#   bench/redharness.sh            # installs redharness==0.1.0 into a venv under bench/out
#   BENCH_BIN=path/to/gauntlet bench/redharness.sh
#
# Prints wall time, CPU and peak RSS of each, the attempts written, and the speed-up.
set -euo pipefail
cd "$(dirname "$0")/.."
. bench/smoke_matrix.sh
OUT=$(realpath -m "${BENCH_OUT:-bench/out/redharness}")  # absolute, whether BENCH_OUT is or not
BIN=${BENCH_BIN:-target/release/gauntlet}
[ -n "${BENCH_BIN:-}" ] || cargo build --release -q -p gauntlet-cli
rm -rf "$OUT/runs-rh" "$OUT/runs-g"
mkdir -p "$OUT"
if [ ! -x "$OUT/venv/bin/redharness" ]; then
  python3 -m venv "$OUT/venv"
  "$OUT/venv/bin/pip" install -q redharness==0.1.0
fi
python3 bench/gen_dataset.py 5000 > "$OUT/b5k.json"
sha=$(python3 -c 'import hashlib,sys; print(hashlib.sha256(open(sys.argv[1],"rb").read()).hexdigest())' "$OUT/b5k.json")
# redharness's own format: metrics as plain names, a pinned and explicitly allowed file URL.
smoke_matrix smoke5k "url: 'file://$OUT/b5k.json', name: generated, sha256: $sha, allow_download: true" \
  "[asr, asr_at_k, refusal_rate, strongreject_score, frr]" > "$OUT/smoke5k.yaml"
measure() { # label runs-dir command...
  local label=$1 runs=$2; shift 2
  /usr/bin/time -f '%e %U %S %M' -o "$OUT/time.txt" "$@" > /dev/null 2>&1
  read -r wall u s rss < "$OUT/time.txt"
  local n
  n=$(wc -l < "$runs/smoke5k/transcripts.jsonl")
  echo "$label $wall $u $s $rss $n"
}
echo "redharness side by side: $(nproc) cores, $(git rev-parse --short HEAD 2>/dev/null || echo unknown)"
rh=$(measure redharness "$OUT/runs-rh" "$OUT/venv/bin/redharness" run "$OUT/smoke5k.yaml" --runs-dir "$OUT/runs-rh" --concurrency 64)
g=$(measure gauntlet "$OUT/runs-g" "$BIN" run "$OUT/smoke5k.yaml" --runs-dir "$OUT/runs-g" --concurrency 64 --quiet)
python3 - "$rh" "$g" <<'PY'
import sys
rows = [a.split() for a in sys.argv[1:]]
for label, wall, u, s, rss, n in rows:
    print(f"{label:<11} {int(n):>6} attempts  {float(wall):7.2f} s wall  {float(u) + float(s):7.2f} s CPU  "
          f"{int(n) / float(wall):>10,.0f} attempts/s  peak RSS {int(rss) / 1024:6.1f} MiB")
print(f"gauntlet is {float(rows[0][1]) / float(rows[1][1]):.0f}x faster (wall)")
PY
