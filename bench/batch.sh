#!/usr/bin/env bash
# Batch-mode benchmark and equality check: a 10,000-call jailbreak run through each
# batch API of the test server (OpenAI's Batch API, Anthropic's Message Batches API)
# against the same run made call by call. Prints, per API, both wall times, the batch
# ingest throughput (results streamed, parsed, journaled and handed to their callers,
# from the engine's "ingested N response(s) … in S s" notice) and checks that the
# artefacts are byte-identical and that the server was sent every request exactly once.
#
#   bench/batch.sh                    # 10,000 calls per API, release build
#   BENCH_CALLS=2000 BENCH_PROFILE=debug bench/batch.sh
set -euo pipefail
cd "$(dirname "$0")/.."
OUT=${BENCH_OUT:-bench/out/batch}
CALLS=${BENCH_CALLS:-10000}
PROFILE=${BENCH_PROFILE:-release}
if [ "$PROFILE" = release ]; then
  cargo build --release -q -p gauntlet-cli -p gauntlet-scripted
else
  cargo build -q -p gauntlet-cli -p gauntlet-scripted
fi
BIN=target/$PROFILE/gauntlet
rm -rf "$OUT"
mkdir -p "$OUT"
python3 bench/gen_dataset.py "$CALLS" > "$OUT/behaviors.json"

target/$PROFILE/gauntlet-scripted > "$OUT/server.out" &
SERVER=$!
trap 'kill $SERVER 2>/dev/null || true' EXIT
for _ in $(seq 1 100); do grep -q listening "$OUT/server.out" 2>/dev/null && break; sleep 0.05; done
URL=$(sed -n 's/^listening on //p' "$OUT/server.out")

config() { # file target-spec
  cat > "$OUT/$1" <<YAML
run_name: batchbench
seed: 0
concurrency: 100
targets:
  - $2
attacks: [static]
datasets:
  - {name: remote, params: {url: 'file://$PWD/$OUT/behaviors.json', name: generated}}
judges: [refusal_match]
metrics: [asr, refusal_rate, token_usage]
YAML
}
TUNING="batch_poll_s: 0.2, batch_linger_ms: 200, batch_max_requests: 50000"
config openai.yaml "{name: openai_compat, params: {name: ts, model: gpt-4o-mini, base_url: \"$URL/v1\", api_key_env: GAUNTLET_BENCH_KEY, max_retries: 0, $TUNING}}"
config anthropic.yaml "{name: anthropic, params: {name: ts, model: claude-3-5-haiku-latest, base_url: \"$URL\", api_key_env: GAUNTLET_BENCH_KEY, max_retries: 0, $TUNING}}"
export GAUNTLET_BENCH_KEY=sk-bench-not-a-real-key

python3 - "$BIN" "$OUT" "$URL" "$CALLS" <<'PY'
import json, os, re, subprocess, sys, time, urllib.request
bin_, out, url, calls = sys.argv[1], sys.argv[2], sys.argv[3], int(sys.argv[4])
FILES = ["run.json", "results.json", "transcripts.jsonl", "leaderboard.json", "report.md", "report.html", "usage.json"]
print(f"batch benchmark: {calls} calls per API, {os.cpu_count()} cores, binary {bin_}")
def run(cfg, runs, *extra):
    t = time.monotonic()
    # Not --quiet: the ingest figures come from the progress notices on stderr.
    p = subprocess.run([bin_, "run", "--runs-dir", runs, cfg, *extra], capture_output=True, text=True)
    if p.returncode != 0:
        sys.exit(f"gauntlet failed ({p.returncode}):\n{p.stdout}\n{p.stderr}")
    return time.monotonic() - t, p.stderr
def log():
    return json.load(urllib.request.urlopen(f"{url}/batches"))
for api in ["openai", "anthropic"]:
    cfg = f"{out}/{api}.yaml"
    before = len(log())
    w1, _ = run(cfg, f"{out}/{api}-calls")
    w2, err = run(cfg, f"{out}/{api}-batch", "--batch")
    batches = log()[before:]
    ids = [i for b in batches for i in b["custom_ids"]]
    assert len(ids) == len(set(ids)) == calls, (len(ids), len(set(ids)))
    for f in FILES:
        a = open(f"{out}/{api}-calls/batchbench/{f}", "rb").read()
        b = open(f"{out}/{api}-batch/batchbench/{f}", "rb").read()
        assert a == b, f"{api}: {f} differs"
    ing = [(int(n), float(s)) for n, s in re.findall(r"ingested (\d+) response\(s\).* in ([0-9.]+) s", err)]
    n = sum(x for x, _ in ing); s = sum(y for _, y in ing)
    print(f"  {api:<9} call by call {w1:6.2f} s; batch {w2:6.2f} s in {len(batches)} batch(es); "
          f"artefacts byte-identical; {len(ids)} requests each submitted once; "
          f"ingest {n} responses in {s:.2f} s = {n / s if s else float('inf'):,.0f} responses/s")
PY
