#!/bin/bash
# Retakes every figure of docs/PERFORMANCE.md's first section in one run, printing the load
# average before each step (timings taken under load are only comparable within one run).
#
#   benches/retake.sh                     # retrystorm only
#   PEER=/tmp/stability-sim TSX=/tmp/tsx/node_modules/.bin/tsx benches/retake.sh   # + peers
#
# Needs a release build (`cargo build --release`), /usr/bin/time, and for the peers the Stability
# Sim checkout and tsx (benches/peers/README.md) and `pip install simpy`. Takes 10–30 minutes
# (the 10M-client herds need ~3 GiB of memory each). It is never a test.
set -uo pipefail
cd "$(dirname "$0")/.."
B=target/release/retrystorm
T=(/usr/bin/time -f '%e s wall, %U s user, %M KB peak RSS')
# Timed steps also append "label wall user peak_kb" to $TIMES, for the ratios printed at the end.
TIMES=$(mktemp)
timed() { local label=$1; shift; /usr/bin/time -o "$TIMES.one" -f "%e %U %M" "$@"; echo "$label $(cat "$TIMES.one")" >>"$TIMES"; \
    awk '{printf "%s s wall, %s s user, %s KB peak RSS\n", $1, $2, $3}' "$TIMES.one"; }
BUDGET=(--set 'policy.client.budget={ kind = "token_bucket", scope = "client" }' --set 'policy.client.breaker={ scope = "client" }')
step() { echo "== $1 | $(date -u +%H:%M:%S) | $(uptime | sed 's/.*load/load/')"; }
perf() { python3 -c "import json,sys; d=json.load(open(sys.argv[1])); print({k: d.get(k) for k in ('events','attempts','events_per_attempt','wall_s','peak_memory_bytes')})" "$1/perf.json"; }

step "criterion: full model and bare herd loop at 1M clients, one run"
cargo bench --bench scenarios -- --sample-size 10 'outage_herd/(full_jitter|full_jitter_queued|bare_loop)/1000000'
step "criterion: the same two in CPU time of the benchmarking thread (robust to a shared machine)"
cargo bench --bench scenarios -- outage_herd_cpu
for n in 1000000 10000000; do
    step "outage-herd, $n clients, full jitter, 1 replication"
    timed herd$n $B run scenarios/outage-herd.toml --set tenant.main.clients=$n --set policy.client.jitter=full \
        --replications 1 --threads 1 --out /tmp/retake-h$n --quiet --force
    perf /tmp/retake-h$n
    step "the same with a client-scoped token bucket and breaker"
    timed budget$n $B run scenarios/outage-herd.toml --set tenant.main.clients=$n --set policy.client.jitter=full \
        "${BUDGET[@]}" --replications 1 --threads 1 --out /tmp/retake-hb$n --quiet --force
    perf /tmp/retake-hb$n
    echo "memory estimate (the refusal at 1 MiB prints it):"
    $B run scenarios/outage-herd.toml --set tenant.main.clients=$n "${BUDGET[@]}" --replications 1 \
        --out /tmp/retake-est --quiet --force --max-memory 1MiB 2>&1 | tail -1
done
for h in 1250 5000; do
    step "M/M/1 (open loop) for $h s: memory must not grow with time"
    "${T[@]}" $B run scenarios/mm1.toml --set horizon=${h}s --replications 1 --out /tmp/retake-mm1-$h --quiet --force
    perf /tmp/retake-mm1-$h
done
if [ -n "${PEER:-}" ] && [ -n "${TSX:-}" ]; then
    # Checked now, not only at the start: a runner kept under /tmp can vanish during a long run.
    [ -x "$TSX" ] && [ -d "$PEER/src" ] || echo "retake: the peer steps need TSX=$TSX (executable) and PEER=$PEER (a checkout); see benches/peers/README.md" >&2
    step "Stability Sim, M/M/1 (~1M requests)"
    "${T[@]}" "$TSX" benches/peers/stability_sim.mts --peer "$PEER" --workload mm1
    step "Stability Sim, metastable-retry ×100"
    [ -x "$TSX" ] || echo "retake: $TSX is gone; this step will not run" >&2
    "${T[@]}" "$TSX" benches/peers/stability_sim.mts --peer "$PEER" --workload metastable-x100
    step "retrystorm, metastable-retry ×100"
    "${T[@]}" $B run benches/peers/metastable_retry_x100.toml --out /tmp/retake-meta --quiet --force
    perf /tmp/retake-meta
fi
if python3 -c 'import simpy' 2>/dev/null; then
    step "SimPy, outage-herd 100k clients"
    "${T[@]}" python3 benches/peers/outage_herd_simpy.py --clients 100000
    step "retrystorm, outage-herd 100k clients"
    "${T[@]}" $B run scenarios/outage-herd.toml --set tenant.main.clients=100000 --set policy.client.jitter=full \
        --replications 1 --out /tmp/retake-h100k --quiet --force
    perf /tmp/retake-h100k
fi
step "ratios (each between two figures of this run)"
python3 - "$TIMES" "$(cargo metadata --format-version 1 --no-deps | python3 -c 'import json,sys; print(json.load(sys.stdin)["target_directory"])')/criterion" <<'PY'
import json, os, sys
times = {}
for line in open(sys.argv[1]):
    label, wall, user, kb = line.split()
    times[label] = (float(wall), float(user), int(kb))
def mean(group, name):
    path = os.path.join(sys.argv[2], group, name, "1000000", "new", "estimates.json")
    return json.load(open(path))["mean"]["point_estimate"] if os.path.exists(path) else None
for group, clock in (("outage_herd", "wall time"), ("outage_herd_cpu", "CPU time")):
    full, bare = mean(group, "full_jitter"), mean(group, "bare_loop")
    if full and bare:
        print(f"criterion {group}: full model {full / 1e9:.3f} s / bare loop {bare / 1e9:.3f} s = {full / bare:.2f}x ({clock}; goal <= 1.0x)")
    queued = mean(group, "full_jitter_queued")
    if queued and bare:
        print(f"criterion {group}: full model, every retry queued, {queued / 1e9:.3f} s = {queued / bare:.2f}x the bare loop ({clock})")
# The steps from the bare loop towards the model (benches/bare_herd: run_with), CPU time.
full, bare = mean("outage_herd_cpu", "full_jitter"), mean("outage_herd_cpu", "bare_loop")
for step in ("bare_loop_80b_events", "bare_loop_80b_keyed_draws"):
    t = mean("outage_herd_cpu", step)
    if t and full and bare:
        print(f"criterion outage_herd_cpu: {step} {t / 1e9:.3f} s = {t / bare:.2f}x the bare loop; full model = {full / t:.2f}x it")
for kind in ("herd", "budget"):
    one, ten = times.get(f"{kind}1000000"), times.get(f"{kind}10000000")
    if one and ten:
        print(f"{kind} 10M / 1M: wall {ten[0] / one[0]:.1f}x, user CPU {ten[1] / one[1]:.1f}x (goal <= 12x); "
              f"10M peak RSS {ten[2] / 2**20:.2f} GiB (goal <= 3 GiB)")
PY
rm -f "$TIMES" "$TIMES.one"
step end
