#!/usr/bin/env bash
# Offline throughput of a prompt-transform chain against the untransformed baseline.
#
#   bench/transforms.sh
#   BENCH_N=20000 BENCH_ROUNDS=5 bench/transforms.sh
#   BENCH_BIN=/path/to/gauntlet bench/transforms.sh     # measure a given build
#
# Two configs over the same generated dataset (BENCH_N behaviors, default 50,000; prompts
# of 80-220 characters from bench/gen_dataset.py), 2 reference targets (one `blind_to`
# the chain's encoding), refusal_match, asr/refusal_rate/frr with bootstrap CIs:
#   static       the behavior's prompt verbatim
#   chain3       static with transforms [leetspeak, random_caps, base64] (a character
#                map, a seeded perturbation and an encoding: every user turn rewritten
#                three times, the trace hashed into each call key, the longer prompts
#                written to the transcript and journal)
# Each round runs both fresh (new run directory), interleaved, BENCH_ROUNDS times (5);
# prints attempts/s per run over wall time and over CPU time (user + sys, less disturbed
# by other processes on a shared machine), and the median ratios chain3 / static.
# Target: the chain costs at most 2x (ratio >= 0.5). On a shared machine compare ratios.
set -euo pipefail
cd "$(dirname "$0")/.."
N=${BENCH_N:-50000}
ROUNDS=${BENCH_ROUNDS:-5}
CONC=${BENCH_CONCURRENCY:-64}
if [ -n "${BENCH_BIN:-}" ]; then
  BIN=$BENCH_BIN
else
  cargo build --release -q -p gauntlet-cli
  BIN=$PWD/target/release/gauntlet
fi
TMP=$(mktemp -d)
trap 'rm -rf "$TMP"' EXIT
python3 bench/gen_dataset.py "$N" > "$TMP/behaviors.json"

config() { # name attack-spec
  cat > "$TMP/$1.yaml" <<YAML
run_name: $1
seed: 0
targets:
  - {name: reference, params: {name: aligned}}
  - {name: reference, params: {name: blind, blind_to: [base64]}}
attacks: [$2]
datasets:
  - {name: remote, params: {url: 'file://$TMP/behaviors.json', name: generated}}
judges: [refusal_match]
metrics: [asr, refusal_rate, frr]
YAML
}
config static "static"
config chain3 "{name: static, params: {transforms: [leetspeak, random_caps, base64]}}"

run() { # name round -> prints "wall-attempts/s cpu-attempts/s"
  local dir="$TMP/runs-$1-$2"
  /usr/bin/time -f '%e %U %S' -o "$TMP/time.txt" "$BIN" run "$TMP/$1.yaml" --runs-dir "$dir" --concurrency "$CONC" --quiet > /dev/null
  local wall user sys attempts
  read -r wall user sys < <(tail -n 1 "$TMP/time.txt")
  attempts=$(python3 -c 'import json,sys; print(json.loads(open(sys.argv[1]).readlines()[-1])["attempts"])' "$dir/$1/sessions.jsonl")
  python3 -c 'import sys; a=int(sys.argv[1]); print(f"{a / float(sys.argv[2]):.0f} {a / (float(sys.argv[3]) + float(sys.argv[4])):.0f}")' "$attempts" "$wall" "$user" "$sys"
  rm -rf "$dir"
}

echo "gauntlet transform-chain benchmark: $(nproc) cores, load $(cut -d' ' -f1 /proc/loadavg), $N behaviors x 2 targets, concurrency $CONC, $(git rev-parse --short HEAD 2>/dev/null || echo unknown)"
SW=(); SC=(); CW=(); CC=()
for r in $(seq 1 "$ROUNDS"); do
  read -r sw sc < <(run static "$r")
  read -r cw cc < <(run chain3 "$r")
  SW+=("$sw"); SC+=("$sc"); CW+=("$cw"); CC+=("$cc")
  echo "round $r: static $sw attempts/s ($sc per CPU-s), chain3 $cw attempts/s ($cc per CPU-s)"
done
python3 - "${SW[*]}" "${SC[*]}" "${CW[*]}" "${CC[*]}" <<'PY'
import statistics, sys
sw, sc, cw, cc = ([float(x) for x in a.split()] for a in sys.argv[1:5])
m = statistics.median
print(f"median wall: static {m(sw):.0f} attempts/s, chain3 {m(cw):.0f} attempts/s, ratio {m(cw) / m(sw):.2f}")
print(f"median CPU:  static {m(sc):.0f} attempts/CPU-s, chain3 {m(cc):.0f} attempts/CPU-s, ratio {m(cc) / m(sc):.2f} (target >= 0.50)")
PY
