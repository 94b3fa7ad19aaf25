#!/usr/bin/env bash
# Per-reply latency of the `refusal_classifier` judge's model on ONE core: tokenise the
# reply, embed its views with MiniLM, apply the shipped head — the work a verdict costs.
# Pinned to CPU 0 (the encoder runs on one thread).
#
#   bench/classifier.sh                 # the XSTest v2 dev split's 1,221 real replies
#   BENCH_DATA=DIR bench/classifier.sh  # every *.csv in DIR (a completion or reply column)
#
# Needs the weights (fetched on first use, or scripts/install-minilm.sh). Prints mean /
# median / p90 / max ms per reply, replies per second and the one-off model load time.
# Target: <= 20 ms per reply.
set -euo pipefail
cd "$(dirname "$0")/.."
DATA=${BENCH_DATA:-../shared/data/xstest-v2-dev}
[[ -d "$DATA" ]] || DATA=crates/classifier/training
cargo build --release -q --locked -p gauntlet-classifier --features tool --bin gauntlet-refusal-classifier
echo "data: $DATA/*.csv"
taskset -c 0 "${CARGO_TARGET_DIR:-target}"/release/gauntlet-refusal-classifier bench "$DATA"/*.csv
