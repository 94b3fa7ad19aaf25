#!/usr/bin/env bash
# Live-path throughput benchmark: the engine driving an `openai_compat` target over real
# HTTP on loopback against the fault-injecting test server, which adds a fixed latency to
# every call. With latency L and concurrency C the ideal is C / L calls per second
# (100 ms × 100 → 1,000 calls/s); the script prints what the engine achieved, as a share
# of that ideal, and the gauntlet process's CPU seconds per 1,000 calls.
#
#   bench/live.sh                     # 10,000 calls, 100 ms, concurrency 100
#   BENCH_CALLS=20000 BENCH_LATENCY_MS=100 BENCH_CONCURRENCY=100 bench/live.sh
#
# One static attempt per behavior (one target call each), refusal_match, asr; figures are
# end to end: process start, planning, HTTP, journal, transcripts and reports. The test
# server runs in its own process and its CPU is not counted.
set -euo pipefail
cd "$(dirname "$0")/.."
OUT=${BENCH_OUT:-bench/out/live}
CALLS=${BENCH_CALLS:-10000}
LAT=${BENCH_LATENCY_MS:-100}
CONC=${BENCH_CONCURRENCY:-100}
cargo build --release -q -p gauntlet-cli -p gauntlet-scripted
BIN=target/release/gauntlet
rm -rf "$OUT"
mkdir -p "$OUT"
python3 bench/gen_dataset.py "$CALLS" > "$OUT/behaviors.json"
echo "{\"latency_ms\": $LAT}" > "$OUT/script.json"

target/release/gauntlet-scripted --script "$OUT/script.json" > "$OUT/server.out" &
SERVER=$!
trap 'kill $SERVER 2>/dev/null || true' EXIT
for _ in $(seq 1 100); do grep -q listening "$OUT/server.out" 2>/dev/null && break; sleep 0.05; done
URL=$(sed -n 's/^listening on //p' "$OUT/server.out")

cat > "$OUT/live.yaml" <<YAML
run_name: live
seed: 0
concurrency: $CONC
targets:
  - {name: openai_compat, params: {name: testserver, model: bench, base_url: "$URL/v1", api_key_env: GAUNTLET_BENCH_KEY, max_retries: 0}}
attacks: [static]
datasets:
  - {name: remote, params: {url: 'file://$PWD/$OUT/behaviors.json', name: generated}}
judges: [refusal_match]
metrics: [asr, refusal_rate, token_usage]
YAML

python3 - "$BIN" "$OUT" "$CALLS" "$LAT" "$CONC" <<'PY'
import json, os, resource, subprocess, sys, time
bin_, out, calls, lat, conc = sys.argv[1], sys.argv[2], int(sys.argv[3]), int(sys.argv[4]), int(sys.argv[5])
t = time.monotonic()
p = subprocess.run([bin_, "run", "--quiet", "--runs-dir", f"{out}/runs", f"{out}/live.yaml"],
                   capture_output=True, text=True)
wall = time.monotonic() - t
ru = resource.getrusage(resource.RUSAGE_CHILDREN)
if p.returncode != 0:
    sys.exit(f"gauntlet failed ({p.returncode}):\n{p.stdout}\n{p.stderr}")
sess = json.loads(open(f"{out}/runs/live/sessions.jsonl").read().splitlines()[-1])
made = sess["model_calls"]
cpu = ru.ru_utime + ru.ru_stime
ideal = conc * 1000.0 / lat
rate = made / wall
print(f"live benchmark: {made} calls, latency {lat} ms, concurrency {conc}, {os.cpu_count()} cores")
print(f"  wall {wall:.2f} s end to end (engine session {sess['wall_seconds']:.2f} s)")
print(f"  throughput {rate:.0f} calls/s = {100 * rate / ideal:.1f}% of the ideal {ideal:.0f}/s")
print(f"  session-only throughput {made / sess['wall_seconds']:.0f} calls/s")
print(f"  gauntlet CPU {cpu:.2f} s (user {ru.ru_utime:.2f} + sys {ru.ru_stime:.2f}) = {1000 * cpu / made:.3f} CPU s per 1,000 calls")
print(f"  peak RSS {ru.ru_maxrss / 1024:.0f} MiB; failed calls {sess['failed_calls']}, retries {sess['retries']}")
PY
