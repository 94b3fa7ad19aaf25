#!/usr/bin/env bash
# gauntlet against AgentDojo's own harness, side by side, on the same scripted agent.
#
#   bench/agentdojo.sh                      # banking, important_instructions, both harnesses
#   BENCH_FULL=1 bench/agentdojo.sh         # also the whole v1.2.2 benchmark with gauntlet
#   BENCH_BIN=target/debug/gauntlet bench/agentdojo.sh
#
# The agent: bench/agentdojo_agent.py --mode obey (a deterministic OpenAI-compatible
# server that follows each task's ground truth and obeys injected instructions), on
# loopback. Workload: the banking suite of v1.2.2 under `important_instructions`:
# AgentDojo runs its 144 attacked cases plus the 9 injection tasks as user tasks
# (`python -m agentdojo.scripts.benchmark --model VLLM_PARSED -s banking --attack
# important_instructions -f`); gauntlet runs the 144 attacked cases (concurrency 4) with
# the sidecar, the journal, transcripts, reports and Wilson intervals. Each harness
# starts cold (a fresh log or run directory). Prints wall seconds, CPU seconds (the
# process and every descendant it waited for: gauntlet's sidecar included) and peak RSS
# of the largest process (KiB), via bench/measure.py.
set -euo pipefail
cd "$(dirname "$0")/.."
ROOT=$(pwd)
OUT=${BENCH_OUT:-bench/out/agentdojo}
VENV=$(scripts/install-agentdojo.sh)
if [ -z "${BENCH_BIN:-}" ]; then
  cargo build --release -q -p gauntlet-cli
  BIN=target/release/gauntlet
else
  BIN=$BENCH_BIN
fi
rm -rf "$OUT"
mkdir -p "$OUT"

"$VENV/bin/python" bench/agentdojo_agent.py --mode obey --port 0 > "$OUT/agent.url" &
AGENT=$!
trap 'kill $AGENT 2>/dev/null || true' EXIT
for _ in $(seq 600); do [ -s "$OUT/agent.url" ] && break; sleep 0.1; done
URL=$(head -1 "$OUT/agent.url")
PORT=${URL#http://127.0.0.1:}
PORT=${PORT%/v1}
echo "scripted agent: $URL"

config() { # suites attacks-yaml
  cat <<EOF
run_name: bench
seed: 0
concurrency: 4
targets: [{name: openai_compat, params: {name: scripted-obey, model: scripted, base_url: "$URL"}}]
scenarios: [{name: agentdojo, params: {version: v1.2.2, suites: [$1], model_name: "Local model"}}]
injections: $2
judges: [agentdojo]
metrics: [utility_baseline, utility_under_attack, injection_success_rate]
EOF
}

config banking '[{name: agentdojo, params: {attack: important_instructions}}]' > "$OUT/banking.yaml"
read -r w c m < <(cd "$OUT" && LOCAL_LLM_PORT=$PORT python3 "$ROOT/bench/measure.py" "$VENV/bin/python" -m agentdojo.scripts.benchmark \
  --model VLLM_PARSED --benchmark-version v1.2.2 -s banking --attack important_instructions -f --logdir logs 2>/dev/null)
echo "agentdojo.scripts.benchmark  banking important_instructions (144 + 9 cases): wall ${w}s  cpu ${c}s  peak ${m} KiB"
AD_WALL=$w
read -r w c m < <(GAUNTLET_AGENTDOJO_VENV=$VENV python3 bench/measure.py "$BIN" run "$OUT/banking.yaml" --quiet --runs-dir "$OUT/runs")
echo "gauntlet run                 banking important_instructions (144 cases):     wall ${w}s  cpu ${c}s  peak ${m} KiB"
python3 -c "print(f'speed-up (wall): {float($AD_WALL) / float($w):.1f}x')"

if [ -n "${BENCH_FULL:-}" ]; then
  config 'workspace, travel, banking, slack' \
    '[{name: agentdojo, params: {attack: important_instructions}}, {name: agentdojo, params: {attack: none}}]' \
    > "$OUT/full.yaml"
  read -r w c m < <(GAUNTLET_AGENTDOJO_VENV=$VENV python3 bench/measure.py "$BIN" run "$OUT/full.yaml" --quiet --runs-dir "$OUT/runs-full")
  echo "gauntlet run                 whole v1.2.2 (949 attacked + 97 benign cases):  wall ${w}s  cpu ${c}s  peak ${m} KiB"
fi
