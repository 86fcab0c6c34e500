#!/bin/bash
# Retakes every figure of docs/PERFORMANCE.md's first section in one run, printing the load
# average before each step (timings taken under load are only comparable within one run).
#
#   benches/retake.sh                     # retrystorm only
#   PEER=/tmp/stability-sim TSX=/tmp/tsx/node_modules/.bin/tsx benches/retake.sh   # + peers
#
# Needs a release build (`cargo build --release`), /usr/bin/time, and for the peers the Stability
# Sim checkout and tsx (benches/peers/README.md) and `pip install simpy`. Takes 15–35 minutes
# (the 10M-client herds need ~2.2 GiB of memory each, three pairs of each). It is never a test.
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
step "alternated: the served path beside its bare loop, and many short replications (benches/served.rs)"
benches/served.sh
step "instructions: the fixed part of a short replication, counted (benches/served_instructions.sh, needs valgrind)"
benches/served_instructions.sh || echo "skipped: benches/served_instructions.sh needs valgrind"
step "criterion: the same two in CPU time of the benchmarking thread (robust to a shared machine)"
cargo bench --bench scenarios -- outage_herd_cpu
# The 10M runs against the 1M runs, three alternated pairs, each run after a pause: on a virtual
# machine the first touch of freed memory costs what the host charges to back it again, and
# Linux hands free pages back to the host about two seconds after they are freed, so a run
# started right after a large one would find its memory warm and a later one cold.
PAUSE=5
for pair in 1 2 3; do
    for n in 1000000 10000000; do
        sleep $PAUSE
        step "pair $pair: outage-herd, $n clients, full jitter, 1 replication"
        timed herd$n.$pair $B run scenarios/outage-herd.toml --set tenant.main.clients=$n --set policy.client.jitter=full \
            --replications 1 --threads 1 --out /tmp/retake-h$n --quiet --force
        perf /tmp/retake-h$n
    done
    for n in 1000000 10000000; do
        sleep $PAUSE
        step "pair $pair: the same with a client-scoped token bucket and breaker, $n clients"
        timed budget$n.$pair $B run scenarios/outage-herd.toml --set tenant.main.clients=$n --set policy.client.jitter=full \
            "${BUDGET[@]}" --replications 1 --threads 1 --out /tmp/retake-hb$n --quiet --force
        perf /tmp/retake-hb$n
    done
done
for n in 1000000 10000000; do
    echo "memory estimate, $n clients with budget and breaker (the refusal at 1 MiB prints it):"
    $B run scenarios/outage-herd.toml --set tenant.main.clients=$n "${BUDGET[@]}" --replications 1 \
        --out /tmp/retake-est --quiet --force --max-memory 1MiB 2>&1 | tail -1
done
# What the machine itself charges at the two sizes (benches/machine.rs): the first touch of as
# much memory as each herd's peak, and random access to 128-byte records among 1M and 10M.
peak_mib() { python3 -c "import json,sys; print(json.load(open(sys.argv[1]))['peak_memory_bytes'] >> 20)" "$1/perf.json"; }
step "machine: first touch of each herd's peak memory, after a pause"
cargo bench --bench machine -- touch "$(peak_mib /tmp/retake-h1000000)" "$(peak_mib /tmp/retake-h10000000)"
step "machine: random access to 128-byte records (a client's budget and breaker)"
cargo bench --bench machine -- access 1000000 10000000
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
    pairs = [(times[f"{kind}1000000.{p}"], times[f"{kind}10000000.{p}"]) for p in (1, 2, 3)
             if f"{kind}1000000.{p}" in times and f"{kind}10000000.{p}" in times]
    for p, (one, ten) in enumerate(pairs, 1):
        print(f"{kind} pair {p}: 10M {ten[0]:.2f} s wall, {ten[1]:.2f} s user, peak {ten[2] / 2**20:.2f} GiB; "
              f"1M {one[0]:.2f} s wall, {one[1]:.2f} s user: wall {ten[0] / one[0]:.1f}x, user CPU {ten[1] / one[1]:.1f}x")
    if pairs:
        med = lambda xs: sorted(xs)[len(xs) // 2]
        print(f"{kind} 10M / 1M, median of {len(pairs)} pairs: wall {med([t[0] / o[0] for o, t in pairs]):.1f}x, "
              f"user CPU {med([t[1] / o[1] for o, t in pairs]):.1f}x (goal <= 12x); "
              f"10M peak RSS at most {max(t[2] for _, t in pairs) / 2**20:.2f} GiB (goal <= 3 GiB)")
PY
rm -f "$TIMES" "$TIMES.one"
step end
