"""The outage-herd model of scenarios/outage-herd.toml in SimPy, for a speed comparison.

Same model as `retrystorm run scenarios/outage-herd.toml --set policy.client.jitter=full`:
N clients each send one request at U(0, 1 s); the single hop "api" (1 worker, 1 ms constant
service, unbounded FIFO queue, no network delay) fails fast with a 503 during [0 s, 10 s);
a failed attempt is retried after a full-jitter delay U(0, min(10 s, 100 ms x 2^(k-1))) before
retry k, at most 10 attempts in all, then the request goes to the dead-letter queue. The run
stops when no event is left or at the drain limit, 240 s (2 x the 120 s horizon).

Metrics kept, as retrystorm does with all metrics on: per-100 ms bucket attempts, first
attempts, retries, successes and failures; totals; every success latency (for p50/p99).

Install and run (see README.md in this folder):
    pip install simpy
    python3 benches/peers/outage_herd_simpy.py --clients 100000
"""

import argparse
import os
import random
import resource
import sys
import time

import simpy

OUTAGE_END_S = 10.0
SERVICE_S = 0.001
BASE_S, MULTIPLIER, CAP_S = 0.1, 2.0, 10.0
ATTEMPTS_MAX = 10
SPREAD_S = 1.0
DRAIN_LIMIT_S = 240.0
BUCKET_S = 0.1
BUCKETS = int(DRAIN_LIMIT_S / BUCKET_S) + 1


class Metrics:
    """Counters per bucket and in total, plus success latencies."""

    def __init__(self):
        self.attempts = [0] * BUCKETS
        self.first_attempts = [0] * BUCKETS
        self.retries = [0] * BUCKETS
        self.successes = [0] * BUCKETS
        self.failures = [0] * BUCKETS
        self.latencies_s = []
        self.succeeded = 0
        self.dlq = 0
        self.completion_s = 0.0


def client(env, api, rng, metrics, start_s):
    """One client: its one request and every retry of it."""
    yield env.timeout(start_s)
    created_s = env.now
    for attempt in range(1, ATTEMPTS_MAX + 1):
        bucket = int(env.now / BUCKET_S)
        metrics.attempts[bucket] += 1
        if attempt == 1:
            metrics.first_attempts[bucket] += 1
        else:
            metrics.retries[bucket] += 1
        if env.now >= OUTAGE_END_S:
            with api.request() as turn:
                yield turn
                yield env.timeout(SERVICE_S)
            metrics.successes[int(env.now / BUCKET_S)] += 1
            metrics.succeeded += 1
            metrics.latencies_s.append(env.now - created_s)
            metrics.completion_s = env.now
            return
        metrics.failures[bucket] += 1
        if attempt == ATTEMPTS_MAX:
            break
        exp_s = min(CAP_S, BASE_S * MULTIPLIER ** (attempt - 1))
        yield env.timeout(rng.uniform(0.0, exp_s))
    metrics.dlq += 1
    metrics.completion_s = env.now


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--clients", type=int, default=10_000)
    parser.add_argument("--seed", type=int, default=42)
    args = parser.parse_args()

    started = time.perf_counter()
    rng = random.Random(args.seed)
    env = simpy.Environment()
    api = simpy.Resource(env, capacity=1)
    metrics = Metrics()
    for _ in range(args.clients):
        env.process(client(env, api, rng, metrics, rng.uniform(0.0, SPREAD_S)))
    env.run(until=DRAIN_LIMIT_S)
    wall_s = time.perf_counter() - started

    latencies = sorted(metrics.latencies_s)

    def quantile(q):
        return latencies[min(len(latencies) - 1, int(q * len(latencies)))] if latencies else None

    attempts = sum(metrics.attempts)
    print(f"clients            {args.clients}")
    print(f"attempts           {attempts}  (amplification {attempts / args.clients:.3f})")
    print(f"succeeded          {metrics.succeeded}")
    print(f"dlq                {metrics.dlq}")
    print(f"in_flight          {args.clients - metrics.succeeded - metrics.dlq}")
    print(f"latency_s_p50      {quantile(0.5)}")
    print(f"latency_s_p99      {quantile(0.99)}")
    print(f"completion_time_s  {metrics.completion_s:.3f}")
    print(f"wall_s             {wall_s:.2f}")
    # ru_maxrss is in KiB on Linux.
    print(f"peak_memory_bytes  {resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024}")
    sys.stdout.flush()
    # Skip the interpreter's teardown: closing each of the ~700,000 generators still waiting for
    # the api at the drain limit releases its request, and SimPy removes it from a plain list, so
    # teardown is quadratic and takes longer than the simulation (over 15 minutes at 1M clients).
    os._exit(0)


if __name__ == "__main__":
    main()
