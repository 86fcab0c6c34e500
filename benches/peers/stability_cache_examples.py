"""Stability Sim's two cache examples, re-implemented from its documented semantics (stdlib only).

An independent check of docs/EXPERIMENTS.md 6.4 and 6.5: written from a reading of Stability
Sim's engine (marcbrooker/stability-sim, src/engine/components/{client,cache,queue,database}.ts)
and example definitions (src/examples/index.ts), sharing no code with it or with retrystorm.
The semantics it follows:

- client: open-loop Poisson (a ramp steps the rate at the midpoint of each 1% of the ramp), one
  key drawn uniformly per request; every attempt has a timeout; a timeout or a failed reply is
  retried at once as a new attempt (fixed-N) while the old one runs on, unobserved;
- cache: a live entry (now - inserted < TTL) is a hit; otherwise the expired entry is removed and
  the attempt is forwarded; a successful reply from downstream (late ones too) inserts the key,
  evicting the least recently used entry when full; no coalescing, no timeout of its own;
- queue (stampede only): depth = buffered + in flight; an arrival at depth >= capacity or >= the
  shedding threshold fails at once; at most `concurrency` in flight to the database;
- database: a pool of P connections with an unbounded FIFO wait; a service starting with k
  connections busy (itself included) takes Exp(mean) x (1 + c (k/P)^e), then x the latency
  spike's factor if the spike is active when it starts;
- cache flush: the store is emptied at the instant.

Run:
    python3 benches/peers/stability_cache_examples.py stampede [replications] [spike factor]
    python3 benches/peers/stability_cache_examples.py flush [replications]
"""

import heapq
import math
import random
import sys
from collections import OrderedDict, deque

EXAMPLES = {
    # Client -> cache -> queue -> database; the database is 20x slower from 10 s to 15 s.
    "stampede": dict(rate=200, ramp=0, retries=1, timeout=2, keys=100, ttl=5, cap=80,
                     queue=(100, 20, 80), pool=20, mean=0.005, c=3, e=2, spike=(10, 15, 20),
                     flush=None),
    # Client -> cache -> database; the cache is flushed at 10 s.
    "flush": dict(rate=300, ramp=8, retries=2, timeout=2, keys=50, ttl=30, cap=200,
                  queue=None, pool=30, mean=0.5, c=5, e=3, spike=None, flush=10),
}
HORIZON = 60.0


def run(p, seed):
    rng = random.Random(seed)
    events, seq = [], [0]

    def push(t, kind, data):
        seq[0] += 1
        heapq.heappush(events, (t, seq[0], kind, data))

    W = int(HORIZON)
    store = OrderedDict()  # key -> inserted at, least recently used first
    qbuf, qin = deque(), [0]
    active, dbwait = [0], deque()
    pending, next_id = set(), [0]
    s = {k: [0] * W for k in ("hits", "looks", "ok", "failed", "shed", "dbstart")}
    busy = [0.0] * W

    def count(name, t):
        if t < W:
            s[name][int(t)] += 1

    def rate(t):
        if p["ramp"] and t < p["ramp"]:
            return min(t + p["ramp"] / 100, p["ramp"]) / p["ramp"] * p["rate"]
        return p["rate"]

    def send(t, key, tries):
        next_id[0] += 1
        att = (next_id[0], key, tries)
        pending.add(att[0])
        push(t + p["timeout"], "timeout", att)
        cache_arrive(t, att)

    def client_done(t, att, success):
        if att[0] not in pending:
            return  # a late reply or the timeout of an answered attempt
        pending.discard(att[0])
        if success:
            count("ok", t)
        elif att[2] < p["retries"]:
            send(t, att[1], att[2] + 1)
        else:
            count("failed", t)

    def cache_arrive(t, att):
        key = att[1]
        count("looks", t)
        if key in store and t - store[key] < p["ttl"]:
            store.move_to_end(key)
            count("hits", t)
            client_done(t, att, True)
            return
        store.pop(key, None)
        (queue_arrive if p["queue"] else db_arrive)(t, att)

    def cache_reply(t, att, failed):
        if not failed:
            if att[1] in store:
                store.pop(att[1])
            elif len(store) >= p["cap"]:
                store.popitem(last=False)
            store[att[1]] = t
        client_done(t, att, not failed)

    def queue_arrive(t, att):
        capacity, _, shed = p["queue"]
        depth = len(qbuf) + qin[0]
        if depth >= capacity or depth >= shed:
            count("shed", t)
            cache_reply(t, att, True)
            return
        qbuf.append(att)
        queue_send(t)

    def queue_send(t):
        if qbuf and qin[0] < p["queue"][1]:
            qin[0] += 1
            db_arrive(t, qbuf.popleft())

    def db_arrive(t, att):
        if active[0] >= p["pool"]:
            dbwait.append(att)
        else:
            db_start(t, att)

    def db_start(t, att):
        active[0] += 1
        u = active[0] / p["pool"]
        service = -p["mean"] * math.log(1 - rng.random()) * (1 + p["c"] * u ** p["e"])
        if p["spike"] and p["spike"][0] <= t < p["spike"][1]:
            service *= p["spike"][2]
        count("dbstart", t)
        x = t
        while x < min(t + service, HORIZON):  # busy connection-seconds per second
            y = min(t + service, math.floor(x) + 1, HORIZON)
            busy[int(x)] += y - x
            x = y
        push(t + service, "dbdone", att)

    def db_done(t, att):
        active[0] -= 1
        if p["queue"]:
            qin[0] -= 1
        cache_reply(t, att, False)
        if p["queue"]:
            queue_send(t)
        if dbwait and active[0] < p["pool"]:
            db_start(t, dbwait.popleft())

    push(-math.log(1 - rng.random()) / rate(0) if rate(0) > 0 else 0.001, "arrival", None)
    flushed = False
    while events:
        t, _, kind, data = heapq.heappop(events)
        if t >= HORIZON:
            break
        if p["flush"] is not None and not flushed and t >= p["flush"]:
            store.clear()
            flushed = True
        if kind == "arrival":
            send(t, int(rng.random() * p["keys"]), 0)
            r = rate(t)
            push(t + (-math.log(1 - rng.random()) / r if r > 0 else 0.001), "arrival", None)
        elif kind == "timeout":
            client_done(t, data, False)
        else:
            db_done(t, data)
    s["busy"] = busy
    s["db_backlog_end"] = len(dbwait) + len(qbuf) + active[0]
    return s


def main():
    name = sys.argv[1] if len(sys.argv) > 1 else "stampede"
    n = int(sys.argv[2]) if len(sys.argv) > 2 else 10
    p = dict(EXAMPLES[name])
    if len(sys.argv) > 3 and p["spike"]:
        p["spike"] = (p["spike"][0], p["spike"][1], float(sys.argv[3]))
    runs = [run(p, seed) for seed in range(1, n + 1)]

    def tot(key, b):
        return sum(r[key][b] for r in runs)

    print(f"{name}: {n} runs, per second, mean over runs")
    print("  s   hit%   ok/s  failed/s  shed/s  db starts/s  db busy")
    for b in range(int(HORIZON)):
        print(f"{b:3d} {100 * tot('hits', b) / max(tot('looks', b), 1):6.1f} {tot('ok', b) / n:6.1f} "
              f"{tot('failed', b) / n:8.1f} {tot('shed', b) / n:7.1f} {tot('dbstart', b) / n:11.1f} "
              f"{tot('busy', b) / n:8.2f}")
    ok = sum(sum(r["ok"]) for r in runs)
    failed = sum(sum(r["failed"]) for r in runs)
    print(f"requests that ended: {100 * ok / (ok + failed):.2f}% succeeded")
    print("database backlog at 60 s, per run:", [r["db_backlog_end"] for r in runs])
    late = [sum(r["hits"][50:60]) / max(sum(r["looks"][50:60]), 1) for r in runs]
    print("hit ratio over 50-60 s, per run:", [round(x, 3) for x in late])


if __name__ == "__main__":
    main()
