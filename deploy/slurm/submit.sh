#!/bin/bash
# Queues a sharded sweep on Slurm: a job array of N shards, then the merge once all succeeded.
#
#   deploy/slurm/submit.sh N RESULTS SCENARIO [sweep flags…]
#   deploy/slurm/submit.sh 3 results/herd scenarios/outage-herd.toml --vary tenant.main.clients=1000,10000,100000
#
# Prints the merge job's id; logs go to RESULTS/logs/. Extra sbatch options (partition, account,
# cpus) can be given in $SBATCH_ARGS, e.g. SBATCH_ARGS="--partition=batch --cpus-per-task=8".
set -euo pipefail
if [ $# -lt 3 ]; then
    echo "usage: $0 N RESULTS SCENARIO [sweep flags…]" >&2
    exit 2
fi
n=$1 results=$2
case $n in '' | *[!0-9]* | 0) echo "N must be a positive integer, got '$n'" >&2; exit 2 ;; esac
here=$(cd "$(dirname "$0")" && pwd)
mkdir -p "$results/logs"
# shellcheck disable=SC2086 # SBATCH_ARGS is a list of options
array=$(sbatch --parsable ${SBATCH_ARGS:-} --array="1-$n" --output="$results/logs/sweep-%A_%a.out" \
    "$here/sweep.sbatch" "$@")
array=${array%%;*}
# shellcheck disable=SC2086
sbatch --parsable ${SBATCH_ARGS:-} --dependency="afterok:$array" --kill-on-invalid-dep=yes \
    --output="$results/logs/merge-%j.out" "$here/merge.sbatch" "$n" "$results"
