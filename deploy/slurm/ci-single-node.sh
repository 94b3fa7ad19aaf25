#!/usr/bin/env bash
# The Slurm recipe on a real scheduler: brings up a single-node Slurm cluster on this
# machine (munged, slurmctld and slurmd on localhost, Debian's slurm-wlm and munge),
# submits a 4-shard array of an offline config plus the dependent merge through
# submit.sh, waits, and checks the merged artefacts against a one-machine run byte for
# byte. Everything it starts runs from a private temporary directory (config, munge key
# and socket, state, logs) on non-default ports, and is stopped and removed on exit,
# failure included.
#
#   deploy/slurm/ci-single-node.sh [GAUNTLET_BINARY] [CONFIG]
#
# Needs root (CI runs as root) for apt-get and the daemons. Exit 0: the merge matched,
# or Slurm could not be installed (a loud SKIPPED line says why); 1: it did not match or
# the cluster failed.
set -euo pipefail
root=$(cd "$(dirname "$0")/../.." && pwd)
bin=$(realpath "${1:-$root/target/debug/gauntlet}")
config=$(realpath "${2:-$root/examples/smoke.yaml}")
shards=4
say() { echo "slurm-ci: $*"; }

if ! command -v slurmctld >/dev/null || ! command -v slurmd >/dev/null || ! command -v munged >/dev/null; then
  say "installing slurm-wlm and munge (apt-get)"
  if ! (apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq slurm-wlm munge) >/tmp/gauntlet-apt-slurm.log 2>&1 \
     || ! command -v slurmctld >/dev/null; then
    echo "SKIPPED: the Slurm test did not run: apt-get could not install slurm-wlm and munge (tail of /tmp/gauntlet-apt-slurm.log below)" >&2
    tail -5 /tmp/gauntlet-apt-slurm.log >&2 || true
    exit 0
  fi
fi
[ -x "$bin" ] || { say "no gauntlet binary at $bin (build it first: cargo build -p gauntlet-cli)"; exit 1; }

state=$(mktemp -d /tmp/gauntlet-slurm.XXXXXX)
chmod 755 "$state"
pids=()
cleanup() {
  local rc=$?
  if [ -n "${SLURM_CONF:-}" ] && [ -f "$SLURM_CONF" ]; then
    scancel --quiet --user=root >/dev/null 2>&1 || true
  fi
  # Only the daemons this script started, by the pids they wrote (read once: a daemon
  # removes its pid file as it exits).
  local started=()
  for f in "$state/slurmd.pid" "$state/slurmctld.pid" "$state/munge/munged.pid"; do
    local p
    p=$(cat "$f" 2>/dev/null || true)
    [ -n "$p" ] && started+=("$p")
  done
  for p in "${started[@]}"; do kill "$p" 2>/dev/null || true; done
  for p in "${started[@]}"; do
    for _ in $(seq 50); do kill -0 "$p" 2>/dev/null || break; sleep 0.1; done
  done
  if [ "$rc" -ne 0 ]; then
    say "FAILED; logs:"
    for l in "$state"/*.log "$state"/work/*.out; do [ -f "$l" ] && { echo "--- $l"; tail -20 "$l"; }; done
  fi
  rm -rf "$state"
  exit "$rc"
}
trap cleanup EXIT
trap 'exit 1' INT TERM

# munge: our own key and socket, so nothing of the machine's is touched.
mkdir -p "$state/munge" "$state/ctld" "$state/spool" "$state/work"
chmod 711 "$state/munge"
dd if=/dev/urandom of="$state/munge/munge.key" bs=1024 count=1 status=none
chmod 400 "$state/munge/munge.key"
munged --force --key-file="$state/munge/munge.key" --socket="$state/munge/munge.sock" \
  --pid-file="$state/munge/munged.pid" --log-file="$state/munged.log" --seed-file="$state/munge/munged.seed"

host=$(hostname -s)
cpus=$(nproc)
export SLURM_CONF="$state/slurm.conf"
cat > "$SLURM_CONF" <<CONF
ClusterName=gauntletci
SlurmctldHost=$host(127.0.0.1)
SlurmctldPort=16817
SlurmdPort=16818
SlurmUser=root
SlurmdUser=root
AuthType=auth/munge
AuthInfo=socket=$state/munge/munge.sock
CredType=cred/munge
StateSaveLocation=$state/ctld
SlurmdSpoolDir=$state/spool
SlurmctldPidFile=$state/slurmctld.pid
SlurmdPidFile=$state/slurmd.pid
SlurmctldLogFile=$state/slurmctld.log
SlurmdLogFile=$state/slurmd.log
ProctrackType=proctrack/linuxproc
TaskPlugin=task/none
SwitchType=switch/none
MpiDefault=none
SchedulerType=sched/builtin
SelectType=select/cons_tres
SelectTypeParameters=CR_CPU
ReturnToService=2
JobCompType=jobcomp/none
AccountingStorageType=accounting_storage/none
JobAcctGatherType=jobacct_gather/none
MinJobAge=300
NodeName=$host NodeAddr=127.0.0.1 CPUs=$cpus State=UNKNOWN
PartitionName=ci Nodes=$host Default=YES MaxTime=10 State=UP OverSubscribe=FORCE:4
CONF
slurmctld -f "$SLURM_CONF"
slurmd -f "$SLURM_CONF"
for _ in $(seq 60); do
  st=$(sinfo -h -o %T 2>/dev/null || true)
  [ "$st" = idle ] && break
  sleep 0.5
done
[ "${st:-}" = idle ] || { say "the node did not come up (state '${st:-none}')"; exit 1; }
say "single-node cluster up: $(sinfo -h -o '%P %D %T %c')"

# The one-machine run to compare with.
"$bin" run "$config" --runs-dir "$state/one" --quiet >/dev/null
name=$(python3 -c 'import json,sys; print(json.load(open(sys.argv[1]))["run_name"])' "$state/one"/*/run.json)

cd "$state/work"
ids=$(GAUNTLET="$bin" "$root/deploy/slurm/submit.sh" "$shards" "$state/shards/$name" "$state/merged/$name" -- \
  "$bin" run "$config" --runs-dir "$state/shards" --quiet)
say "submitted: $ids"
merge=${ids##* }
deadline=$((SECONDS + 120))
while squeue -h -j "$merge" 2>/dev/null | grep -q .; do
  [ "$SECONDS" -lt "$deadline" ] || { say "the merge job did not finish within 120 s"; squeue; exit 1; }
  sleep 1
done
[ -f "$state/merged/$name/manifest.json" ] || { say "the merge job wrote no merged run"; exit 1; }
for f in run.json results.json transcripts.jsonl leaderboard.json report.md report.html usage.json manifest.json; do
  if ! cmp -s "$state/one/$name/$f" "$state/merged/$name/$f"; then
    say "MISMATCH: $f of the merged Slurm run differs from the one-machine run"
    exit 1
  fi
done
say "OK: $shards Slurm array tasks + the dependent merge job = the one-machine run, byte for byte"
