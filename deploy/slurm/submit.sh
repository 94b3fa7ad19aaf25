#!/usr/bin/env bash
# Submits a sharded gauntlet evaluation to Slurm: an array of N shard tasks and the
# merge as a job that starts only when every task succeeded. Prints both job ids.
#
#   deploy/slurm/submit.sh N SHARD_BASE MERGE_OUT -- GAUNTLET_COMMAND…
#
#   deploy/slurm/submit.sh 4 /shared/runs/smoke /shared/merged/smoke -- \
#       gauntlet run /shared/smoke.yaml --runs-dir /shared/runs --quiet
#   deploy/slurm/submit.sh 8 /shared/exam-out /shared/merged/exam-out -- \
#       gauntlet exam --config /shared/exam.yaml --out /shared/exam-out --quiet
#   deploy/slurm/submit.sh 4 /shared/detect-out /shared/merged/detect-out -- \
#       gauntlet exam-detect --corpus /shared/scenarios --out /shared/detect-out
#
# Every path must be on storage all nodes share. Extra sbatch options (partition,
# account, time limit) go in SBATCH_* variables or #SBATCH lines of your copies of the
# two scripts. GAUNTLET names the binary for the merge (default: the command's first word).
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
if [ $# -lt 5 ] || [ "$4" != "--" ]; then
  sed -n '2,18p' "$0" >&2
  exit 2
fi
n=$1 base=$2 out=$3
shift 4
case $n in '' | *[!0-9]* | 0) echo "submit.sh: N must be a whole number ≥ 1, not '$n'" >&2; exit 2 ;; esac
export GAUNTLET_SHARDS=$n GAUNTLET_SHARD_BASE=$base GAUNTLET_MERGE_OUT=$out
export GAUNTLET_SHARD_CMD="$*" GAUNTLET=${GAUNTLET:-$1}
array=$(sbatch --parsable --export=ALL --array="0-$((n - 1))" "$here/gauntlet-shard.sbatch")
array=${array%%;*}
merge=$(sbatch --parsable --export=ALL --dependency="afterok:$array" --kill-on-invalid-dep=yes "$here/gauntlet-merge.sbatch")
merge=${merge%%;*}
echo "array $array merge $merge"
