#!/usr/bin/env bash
# Do two gauntlet binaries write the same artefacts? Runs every workload with binary A
# and with binary B into separate directories and compares the trees byte for byte:
# red-team runs (offline, leakage, injection: fresh, a complete rerun, 3 shards and their
# merge), the agent exam (golden in process and over loopback HTTP, end-to-end, real mode
# against a scripted server, a budget-cut real exam and its resume, 3 shards of golden
# and of real mode and their merges) and the detect exam (the reference fleet plus the
# external detectors of detectors/, 3 shards and their merge).
#
#   scripts/same-artefacts.sh A_GAUNTLET B_GAUNTLET [SCRIPTED_SERVER]
#
# e.g. a binary built from main and one from a branch (both built with one profile,
# debug or release). SCRIPTED_SERVER (default: gauntlet-scripted or gauntlet-testserver
# beside A, else target/{release,debug}/gauntlet-scripted) answers the real-mode
# exams; one server serves both binaries, so the two see the same replies. Files that hold wall-clock figures by design are left out:
# sessions.jsonl, timings.json, .lock; journals compare as sorted lines. Prints one
# line per workload (same / DIFFERENT with the differing files); exits 1 if any differs.
#
# Before comparing A with B, it checks that A is deterministic on this machine: every
# workload whose A output differs from a second A run is reported as NOT DETERMINISTIC
# (then a difference from B says nothing).
set -euo pipefail
A=$(realpath "$1"); B=$(realpath "$2")
cd "$(dirname "$0")/.."
ROOT=$(pwd)
SERVER=${3:-}
if [ -z "$SERVER" ]; then
  for c in "$(dirname "$A")/gauntlet-scripted" "$(dirname "$A")/gauntlet-testserver" target/release/gauntlet-scripted target/debug/gauntlet-scripted; do
    if [ -x "$c" ]; then SERVER=$c; break; fi
  done
fi
[ -n "$SERVER" ] || { echo "no scripted server binary: build it (cargo build -p gauntlet-scripted) or pass it" >&2; exit 2; }
SERVER=$(realpath "$SERVER")
W=$(mktemp -d /tmp/same-artefacts.XXXXXX)
SRV_PID=
cleanup() { if [ -n "$SRV_PID" ]; then kill "$SRV_PID" 2>/dev/null || true; fi; rm -rf "$W"; }
trap cleanup EXIT

# Inputs shared by both binaries.
python3 bench/gen_dataset.py 3000 > "$W/b3k.json"
. bench/smoke_matrix.sh
smoke_matrix gen3k "url: 'file://$W/b3k.json', name: generated" > "$W/gen3k.yaml"
cp examples/smoke.yaml examples/leakage_smoke.yaml examples/injection_smoke.yaml "$W/"

# The scripted server: every tier answers, so each non-floor scenario walks the whole
# cascade (triage unsure → investigate unsure → deep panel escalates → formatter).
cat > "$W/script.json" <<'EOF'
{"rules": [
  {"when": {"contains": "# GAUNTLET TRIAGE TIER"}, "then": {"kind": "reply", "text": "{\"action\":\"escalate\",\"confidence\":3,\"positive_evidence\":false,\"strong_evidence\":false,\"insufficient_data\":false,\"reason\":\"scripted triage\"}"}},
  {"when": {"contains": "# GAUNTLET INVESTIGATE TIER"}, "then": {"kind": "reply", "text": "{\"action\":\"escalate\",\"confidence\":2,\"positive_evidence\":false,\"strong_evidence\":false,\"insufficient_data\":false,\"reason\":\"scripted investigate\"}"}},
  {"when": {"contains": "# GAUNTLET DEEP TIER"}, "then": {"kind": "reply", "text": "{\"action\":\"resolve\",\"confidence\":4,\"positive_evidence\":true,\"strong_evidence\":false,\"insufficient_data\":false,\"reason\":\"scripted deep\"}"}},
  {"when": {"contains": "# GAUNTLET ESCALATION FORMATTER"}, "then": {"kind": "reply", "text": "Alert: scripted analyst alert."}}
]}
EOF
"$SERVER" --script "$W/script.json" > "$W/server.out" &
SRV_PID=$!
for _ in $(seq 1 100); do grep -q listening "$W/server.out" 2>/dev/null && break; sleep 0.1; done
URL=$(sed -n 's/.*listening on //p' "$W/server.out" | head -n 1)
[ -n "$URL" ] || { echo "the scripted server did not start" >&2; exit 2; }
TARGET="{name: openai_compat, params: {model: scripted, base_url: '$URL/v1', max_retries: 0}}"

# workload NAME: runs the workload with binary $BIN into $OUT (a fresh directory).
workload() {
  local name=$1 g=$BIN o=$OUT
  case $name in
    offline|leakage|injection)
      local cfg; case $name in
        offline) cfg=$W/gen3k.yaml;; leakage) cfg=$W/leakage_smoke.yaml;; injection) cfg=$W/injection_smoke.yaml;;
      esac
      "$g" run "$cfg" --runs-dir "$o/runs" --quiet > /dev/null
      "$g" run "$cfg" --runs-dir "$o/runs" --quiet > /dev/null   # a complete rerun
      local dirs=()
      for i in 0 1 2; do
        "$g" run "$cfg" --runs-dir "$o/shards" --shard "$i/3" --quiet > /dev/null
      done
      for d in "$o"/shards/*.shard-*-of-3; do dirs+=("$d"); done
      "$g" merge "${dirs[@]}" --out "$o/merged" --config-dir "$W" > /dev/null
      ;;
    smoke)
      "$g" run "$W/smoke.yaml" --runs-dir "$o/runs" --quiet > /dev/null
      ;;
    exam-golden)
      "$g" exam --quiet -n 3 --corpus exams/scenarios --out "$o/exam" > /dev/null
      for i in 0 1 2; do
        "$g" exam --quiet -n 3 --corpus exams/scenarios --out "$o/exam" --shard "$i/3" > /dev/null
      done
      "$g" merge "$o"/exam.shard-*-of-3 --out "$o/merged" > /dev/null
      ;;
    exam-golden-http)
      "$g" exam --quiet -n 2 --golden-http --corpus exams/scenarios --out "$o/exam" > /dev/null
      ;;
    exam-e2e)
      "$g" exam --quiet -n 2 --mode e2e --corpus exams/scenarios --out "$o/exam" > /dev/null
      ;;
    exam-real)
      "$g" exam --quiet -n 2 --mode real --target "$TARGET" --corpus exams/scenarios --out "$o/exam" > /dev/null
      "$g" exam --quiet -n 2 --mode real --target "$TARGET" --corpus exams/scenarios --out "$o/exam" > /dev/null   # resumed: all journal hits
      for i in 0 1 2; do
        "$g" exam --quiet -n 2 --mode real --target "$TARGET" --corpus exams/scenarios --out "$o/sharded" --shard "$i/3" > /dev/null
      done
      "$g" merge "$o"/sharded.shard-*-of-3 --out "$o/merged" > /dev/null
      ;;
    exam-budget)
      # Cut short by its budget (exit 3, partial artefacts), then resumed to the end.
      "$g" exam --quiet -n 2 --mode real --target "$TARGET" --corpus exams/scenarios --out "$o/exam" --max-queries 40 > /dev/null || [ $? -eq 3 ]
      mkdir -p "$o/partial" && cp -r "$o/exam/." "$o/partial/"
      "$g" exam --quiet -n 2 --mode real --target "$TARGET" --corpus exams/scenarios --out "$o/exam" > /dev/null
      ;;
    detect)
      "$g" exam-detect --corpus exams/scenarios --detectors-dir detectors --out "$o/detect" > /dev/null || [ $? -le 2 ]
      for i in 0 1 2; do
        "$g" exam-detect --corpus exams/scenarios --detectors-dir detectors --out "$o/detect" --shard "$i/3" > /dev/null || [ $? -le 2 ]
      done
      "$g" merge "$o"/detect.shard-*-of-3 --out "$o/merged" > /dev/null || [ $? -le 2 ]
      ;;
  esac
}

# The files of a tree, volatile ones left out, as `sha256  relpath`. A journal
# (journal.jsonl) is a cache appended in completion order, which concurrency makes vary
# from run to run: its lines are compared as a sorted multiset (`sorted-lines` tag).
listing() {
  (cd "$1" && find . -type f ! -name sessions.jsonl ! -name timings.json ! -name .lock -print0 \
    | sort -z | while IFS= read -r -d '' f; do
        case $f in
          */journal.jsonl) printf '%s  %s (sorted-lines)\n' "$(LC_ALL=C sort "$f" | sha256sum | cut -d' ' -f1)" "$f";;
          *) sha256sum "$f";;
        esac
      done)
}

WORKLOADS=(smoke offline leakage injection exam-golden exam-golden-http exam-e2e exam-real exam-budget detect)
status=0
for wl in "${WORKLOADS[@]}"; do
  for run in A A2 B; do
    case $run in A|A2) BIN=$A;; B) BIN=$B;; esac
    # Every run writes to the same path (artefacts may name it), then moves aside.
    OUT=$W/out/$wl
    rm -rf "$W/out" && mkdir -p "$OUT" "$W/$run"
    # The binaries' own messages go to a log, shown when a workload fails (`set -e`
    # holds inside the subshell: it does not run in a condition).
    set +e
    (set -e; cd "$ROOT" && BIN=$BIN OUT=$OUT workload "$wl") 2> "$W/stderr.log"
    rc=$?
    set -e
    if [ $rc -ne 0 ]; then
      echo "$wl: FAILED (exit $rc) with $BIN:"; tail -n 20 "$W/stderr.log" | sed 's/^/    /'
      exit 2
    fi
    listing "$OUT" > "$W/$run.$wl.list"
    mv "$OUT" "$W/$run/$wl"
  done
  if ! cmp -s "$W/A.$wl.list" "$W/A2.$wl.list"; then
    echo "$wl: NOT DETERMINISTIC (two runs of A differ):"
    { diff "$W/A.$wl.list" "$W/A2.$wl.list" || true; } | sed 's/^/    /' | head -n 20
    status=1
  elif cmp -s "$W/A.$wl.list" "$W/B.$wl.list"; then
    echo "$wl: same ($(wc -l < "$W/A.$wl.list") files)"
  else
    echo "$wl: DIFFERENT:"
    { diff "$W/A.$wl.list" "$W/B.$wl.list" || true; } | sed 's/^/    /' | head -n 40
    status=1
  fi
done
exit $status
