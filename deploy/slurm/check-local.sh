#!/bin/bash
# Opt-in end-to-end check of the Slurm path on this one machine: starts a private single-node
# Slurm (slurmctld + slurmd on localhost, state and logs in a temporary directory), runs a tiny
# sweep as a 3-task job array plus the dependent merge through submit.sh, runs the same sweep
# unsharded, and checks the merged files are byte-identical. Stops the daemons it started.
#
#   sudo deploy/slurm/check-local.sh            # from the repository root, after cargo build --release
#
# Needs root and Slurm from the distribution's packages (Debian/Ubuntu: apt-get install -y
# slurm-wlm, which brings munge). Not part of `cargo test`. $RETRYSTORM overrides the binary
# (default target/release/retrystorm); $KEEP=1 keeps the temporary directory for inspection.
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
root=$(cd "$here/../.." && pwd)
bin=$(realpath "${RETRYSTORM:-$root/target/release/retrystorm}")
fail() { echo "check-local: $*" >&2; exit 2; }
[ "$(id -u)" = 0 ] || fail "run as root (slurmd launches the jobs)"
for tool in slurmctld slurmd sbatch sinfo squeue munged munge unmunge setpriv; do
    command -v "$tool" >/dev/null || fail "$tool not found: apt-get install -y slurm-wlm"
done
[ -x "$bin" ] || fail "$bin not found: cargo build --release (or set RETRYSTORM)"

work=$(mktemp -d /tmp/retrystorm-slurm.XXXXXX)
mkdir -p "$work/state" "$work/spool"
pids=()
cleanup() {
    # Last started, first stopped: slurmd, slurmctld, then munged (if this script started it).
    for ((i = ${#pids[@]} - 1; i >= 0; i--)); do
        kill "${pids[i]}" 2>/dev/null || true
        wait "${pids[i]}" 2>/dev/null || true
    done
    if [ "${KEEP:-0}" = 1 ]; then echo "kept $work"; else rm -rf "$work"; fi
}
trap cleanup EXIT

# Munge authenticates Slurm's messages; start it unless one already answers.
munge_ok() { munge -n </dev/null 2>/dev/null | unmunge >/dev/null 2>&1; }
if ! munge_ok; then
    mkdir -p /run/munge && chown munge:munge /run/munge
    setpriv --reuid=munge --regid=munge --init-groups munged --foreground 2>"$work/munged.log" &
    pids+=($!)
    for _ in $(seq 50); do munge_ok && break; sleep 0.1; done
    munge_ok || fail "munged did not start"
fi

node=$(hostname -s)
cpus=$(nproc)
export SLURM_CONF=$work/slurm.conf
cat >"$SLURM_CONF" <<CONF
ClusterName=retrystorm-check
SlurmctldHost=$node(127.0.0.1)
SlurmUser=root
SlurmctldPort=6817
SlurmdPort=6818
AuthType=auth/munge
StateSaveLocation=$work/state
SlurmdSpoolDir=$work/spool
SlurmctldPidFile=$work/slurmctld.pid
SlurmdPidFile=$work/slurmd.pid
SlurmctldLogFile=$work/slurmctld.log
SlurmdLogFile=$work/slurmd.log
ProctrackType=proctrack/linuxproc
TaskPlugin=task/none
JobAcctGatherType=jobacct_gather/none
SelectType=select/cons_tres
SelectTypeParameters=CR_CPU
ReturnToService=2
NodeName=$node NodeAddr=127.0.0.1 CPUs=$cpus State=UNKNOWN
PartitionName=check Nodes=$node Default=YES MaxTime=INFINITE State=UP
CONF
slurmctld -D -i 2>"$work/slurmctld.stderr" &
pids+=($!)
slurmd -D 2>"$work/slurmd.stderr" &
pids+=($!)
for _ in $(seq 60); do
    state=$(sinfo -h -N -o %T 2>/dev/null || true)
    [ "$state" = idle ] && break
    sleep 1
done
[ "$state" = idle ] || fail "node not idle after 60 s (state '$state'); see $work/slurm*.log (KEEP=1)"

# The tiny sweep: 3 cells × 2 strategies × 2 replications of the bundled outage herd.
sweep=(scenarios/outage-herd.toml --vary tenant.main.clients=100,200,300 --jitter none,full
    --replications 2)
cd "$root"
"$bin" sweep "${sweep[@]}" --quiet --out "$work/unsharded"
export RETRYSTORM=$bin
export SBATCH_ARGS="--cpus-per-task=1"
merge_job=$("$here/submit.sh" 3 "$work/results" "${sweep[@]}")
start=$(date +%s)
while squeue -h 2>/dev/null | grep -q .; do
    [ $(($(date +%s) - start)) -lt 300 ] || fail "jobs still queued after 300 s: $(squeue -h)"
    sleep 1
done
echo "jobs done in $(($(date +%s) - start)) s (merge job $merge_job)"
cat "$work/results/logs/"*.out

status=0
for file in sweep.json sweep.csv report.html sweep_metrics.svg sweep_metrics.png; do
    if cmp -s "$work/unsharded/$file" "$work/results/merged/$file"; then
        echo "identical: $file"
    else
        echo "DIFFERENT: $file" >&2
        status=1
    fi
done
[ $status = 0 ] && echo "PASS: the Slurm-sharded sweep merged byte-identical to the unsharded one"
exit $status
