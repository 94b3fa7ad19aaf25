#!/usr/bin/env bash
# Dashboard benchmark (issues 14, 32): `gauntlet serve` over
#   1. 1,000 run directories (copies of a real smoke run, 40 leaderboard rows each = 40,000
#      rows): time of the first render of the overview and of the pivot (each measured
#      first on a fresh server), the first leaderboard page, a filtered page, and the
#      server's peak RSS;
#   2. one run with a 1,000,000-attempt transcripts.jsonl (a real engine run over a
#      generated 125,000-behavior dataset): time per transcript page at the start, middle
#      and end, before and after the in-memory line index is built, a filtered page, one
#      attempt, and the pivot over it (its paired tests read from the transcripts on a
#      thread: the first request, the time until the pairs are read, the page then).
# Targets: overview, pivot and first leaderboard page <= 200 ms and < 100 MiB; <= 100 ms
# per transcript page.
# Times are curl's time_total on loopback (one request at a time), the recount of the
# runs running in the background meanwhile. Not a timed test: it prints figures.
#
#   bench/web.sh            BENCH_WEB_RUNS=1000 BENCH_WEB_BEHAVIORS=125000 (defaults)
#   BENCH_WEB_PARTS=1 bench/web.sh     part 1 only (the 1,000 runs; no 1M-attempt run)
#   BENCH_BIN=target/debug/gauntlet bench/web.sh   an already-built binary (no release build)
set -euo pipefail
cd "$(dirname "$0")/.."
OUT=${BENCH_OUT:-bench/out/web}
RUNS=${BENCH_WEB_RUNS:-1000}
BEHAVIORS=${BENCH_WEB_BEHAVIORS:-125000}
PORT=${BENCH_WEB_PORT:-18799}
PARTS=${BENCH_WEB_PARTS:-12}
if [ -n "${BENCH_BIN:-}" ]; then BIN=$(realpath "$BENCH_BIN"); else
  cargo build --release -q -p gauntlet-cli
  BIN=$(pwd)/target/release/gauntlet
fi
rm -rf "$OUT"
mkdir -p "$OUT/template" "$OUT/many" "$OUT/big"
echo "gauntlet dashboard benchmark: $(nproc) cores, $(git rev-parse --short HEAD 2>/dev/null || echo unknown), binary ${BIN#$(pwd)/}, load $(cut -d' ' -f1-3 /proc/loadavg)"

"$BIN" run examples/smoke.yaml --runs-dir "$OUT/template" --quiet > /dev/null
python3 bench/gen_web.py "$OUT/template/smoke" "$OUT/many" "$RUNS"

if [[ $PARTS == *2* ]]; then
python3 bench/gen_dataset.py "$BEHAVIORS" > "$OUT/behaviors.json"
cat > "$OUT/big.yaml" <<YAML
run_name: big
seed: 0
concurrency: 64
targets:
  - {name: reference, params: {name: aligned, bypass_markers: [just this once]}}
  - {name: reference, params: {name: permissive, refusal_topics: [ransomware, phishing], bypass_markers: [staying fully in character]}}
attacks: [static, template]
datasets:
  - {name: remote, params: {url: 'file://$(pwd)/$OUT/behaviors.json', name: generated}}
judges: [refusal_match]
metrics: [asr, refusal_rate, frr]
YAML
"$BIN" run "$OUT/big.yaml" --runs-dir "$OUT/big" --quiet > /dev/null
echo "transcripts.jsonl: $(wc -l < "$OUT/big/big/transcripts.jsonl") attempts, $(du -m "$OUT/big/big/transcripts.jsonl" | cut -f1) MiB"
fi

PID=
stop() { if [ -n "$PID" ]; then kill "$PID" 2>/dev/null || true; wait "$PID" 2>/dev/null || true; fi; PID=; }
trap stop EXIT
start() { # roots…
  local t0 t1
  t0=$(date +%s%N)
  # A fresh log: the previous server's "serving" line must not pass for this one's.
  rm -f "$OUT/serve.log"
  "$BIN" serve "$@" --bind "127.0.0.1:$PORT" > "$OUT/serve.log" 2>&1 &
  PID=$!
  until grep -q "serving the dashboard" "$OUT/serve.log" 2>/dev/null; do sleep 0.01; done
  t1=$(date +%s%N)
  echo "  server up (scan of the roots) after $(( (t1 - t0) / 1000000 )) ms"
}
get() { # label path
  curl -s -o /dev/null -w "%{http_code} %{time_total}\n" "http://127.0.0.1:$PORT$2" | {
    read -r code secs
    printf '  %-48s %s %7.1f ms\n' "$1" "$code" "$(python3 -c "print($secs*1000)")"
  }
}
rss() { grep -E "VmHWM|VmRSS" "/proc/$PID/status" | tr -s ' ' | tr '\n' ' '; echo; }

echo "1. $RUNS run directories"
start "$OUT/many"
get "overview, first render (cold)" "/"
get "overview again" "/"
get "pivot asr × refusal_match, first render" "/pivot?metric=asr&judge=refusal_match"
get "pivot again, rubric, split by transform" "/pivot?metric=asr&judge=rubric&split=1"
echo "  server memory: $(rss)"
stop
start "$OUT/many"
get "pivot asr × refusal_match, first render (cold)" "/pivot?metric=asr&judge=refusal_match"
get "overview after it" "/"
get "first leaderboard page" "/?surface=jailbreak"
get "leaderboard page again" "/?surface=jailbreak"
get "filtered: target=aligned metric=asr" "/?surface=jailbreak&target=aligned&metric=asr"
get "sorted by date, page 50" "/?surface=jailbreak&sort=date&page=50"
get "a run page" "/run/run-0500"
echo "  server memory: $(rss)"
sleep 5
get "overview 5 s later (recount running)" "/"
get "pivot 5 s later (recount running)" "/pivot?metric=asr&judge=refusal_match"
echo "  server memory: $(rss)"
stop

[[ $PARTS == *2* ]] || exit 0
echo "2. a 1,000,000-attempt transcript"
start "$OUT/big"
get "page 1 (no index yet)" "/run/big/transcripts"
get "middle page, line 500000 (index building)" "/run/big/transcripts?from=500000"
sleep 3
for i in 1 2 3; do
  get "page 1" "/run/big/transcripts"
  get "middle page, line 500000" "/run/big/transcripts?from=500000"
  get "last page, line 999950" "/run/big/transcripts?from=999950"
done
get "filtered: outcome=success" "/run/big/transcripts?outcome=success"
get "filtered: outcome=success from line 600000" "/run/big/transcripts?outcome=success&from=600000"
get "search: q=gen-0124999 (one behavior, budgeted scan)" "/run/big/transcripts?q=gen-0124999"
get "one attempt, line 777777" "/run/big/transcripts/777777"
echo "  server memory: $(rss)"
# The pivot pairs each cell with its baseline from the transcripts: over 32 MiB they are
# read on a thread, and the first request answers at once ("being computed").
PIVOT="/pivot?metric=asr&judge=refusal_match"
t0=$(date +%s%N)
get "pivot of it, first request (pairs read on a thread)" "$PIVOT"
until ! curl -s "http://127.0.0.1:$PORT$PIVOT" | grep -q "being computed"; do sleep 0.1; done
t1=$(date +%s%N)
echo "  the pivot's pairs read (1M attempts, one judge × metric) after $(( (t1 - t0) / 1000000 )) ms"
get "pivot once its pairs are read" "$PIVOT"
get "pivot again" "$PIVOT"
echo "  server memory: $(rss)"
stop
