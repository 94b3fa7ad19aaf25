#!/usr/bin/env bash
# Installs mdBook, which builds the user guide in docs/, and prints the path of its
# `mdbook` command.
#
#   scripts/install-mdbook.sh [ROOT_DIR]
#
# Built from the crates.io source of one pinned version with `cargo install --locked`
# (mdBook's own Cargo.lock, every crate checked against the registry's checksum), without
# the `serve` and `watch` features (no web server or file watcher; `mdbook build` needs
# neither). ROOT_DIR defaults to $XDG_CACHE_HOME/gauntlet/mdbook-<version> (else
# ~/.cache/…); an existing install of the same version is kept. About 2 CPU-minutes from
# empty (BENCHMARKS.md, "Build time"). Exit 1 when the build fails.
set -euo pipefail
VERSION=0.5.4
ROOT=${1:-${XDG_CACHE_HOME:-$HOME/.cache}/gauntlet/mdbook-$VERSION}
BIN=$ROOT/bin/mdbook
if [[ -x "$BIN" ]] && "$BIN" --version 2>/dev/null | grep -qx "mdbook v$VERSION"; then
  echo "$BIN"
  exit 0
fi
# A build directory of its own, removed afterwards: the workspace's target/ is not
# touched, and nothing but the binary stays on disk.
build=$(mktemp -d)
trap 'rm -rf "$build"' EXIT
cargo install --quiet --locked --force "mdbook@$VERSION" --no-default-features --features search \
    --root "$ROOT" --target-dir "$build" >&2 \
  || { echo "install-mdbook: cargo install --locked mdbook@$VERSION failed" >&2; exit 1; }
"$BIN" --version >/dev/null || { echo "install-mdbook: $BIN does not run" >&2; exit 1; }
echo "$BIN"
