#!/usr/bin/env bash
# The OTLP/HTTP trace receiver's ingestion (crates/evidence): spans ingested per second,
# protobuf and JSON, and peak resident memory while 1,000,000 spans stream into 250
# open traces with the per-trace caps engaged. Each measurement runs in a process of its
# own (the ignored tests of crates/evidence/tests/ingest_bench.rs, release build), so
# each peak RSS is that workload's alone. The receiver serves on one thread (its own
# single-threaded runtime), the four exporters on a two-thread runtime in the same
# process.
#
#   bench/evidence.sh [ROUNDS]     # default 3; prints every round's line, then medians
set -euo pipefail
cd "$(dirname "$0")/.."
ROUNDS=${1:-3}
cargo test --release --locked -q -p gauntlet-evidence --test ingest_bench --no-run 2>/dev/null \
  || cargo test --release --locked -p gauntlet-evidence --test ingest_bench --no-run
BIN=$(cargo test --release --locked -q -p gauntlet-evidence --test ingest_bench --no-run --message-format=json 2>/dev/null \
  | python3 -c 'import json,sys
for l in sys.stdin:
    m = json.loads(l)
    if m.get("reason") == "compiler-artifact" and m.get("executable") and m["target"]["name"] == "ingest_bench":
        print(m["executable"])')
LOG=$(mktemp)
for r in $(seq 1 "$ROUNDS"); do
  for t in throughput_protobuf throughput_json peak_memory_protobuf peak_memory_json; do
    "$BIN" --ignored --exact "$t" --nocapture --test-threads 1 2>/dev/null \
      | grep -o 'evidence-bench .*' | sed "s/^/round=$r /" | tee -a "$LOG"
  done
done
python3 - "$LOG" <<'PY'
import re, statistics, sys
rows = [dict(re.findall(r"(\w+)=(\S+)", l)) | {"what": l.split()[2]} for l in open(sys.argv[1])]
print("medians over %d rounds:" % len(set(r["round"] for r in rows)))
for what in ("throughput", "peak-memory"):
    for enc in ("protobuf", "json"):
        sel = [r for r in rows if r["what"] == what and r["encoding"] == enc]
        if not sel:
            continue
        sps = statistics.median(float(r["spans_per_s"]) for r in sel)
        line = "  %-11s %-8s %10.0f spans/s" % (what, enc, sps)
        if what == "peak-memory":
            rss = statistics.median(int(r["peak_rss_kib"]) for r in sel) / 1024
            base = statistics.median(int(r["peak_rss_before_kib"]) for r in sel) / 1024
            line += "  peak RSS %.1f MiB (%.1f MiB before the receiver started)" % (rss, base)
        else:
            line += "  %.1f MB/s of bodies" % statistics.median(float(r["MB_per_s"]) for r in sel)
        print(line)
PY
rm -f "$LOG"
