//! Whole-model benchmarks: outage-herd at 10k, 100k and 1M clients, M/M/1 with a million
//! customers, a three-hop chain with timeouts, and replications on one versus two threads.
//!
//! Each benchmark simulates one replication with every metric on, exactly as `retrystorm run`
//! does; throughput is in simulated events per second (criterion's "elem/s"). The event count is
//! taken from a first run, which is deterministic, so it is the same for every iteration.
//!
//! Run: `cargo bench --bench scenarios` (about three minutes; the 1M herd alone takes ~45 s). Every
//! group uses flat sampling (the same iteration count per sample): the runs are long enough that
//! criterion's default linear ramp would need minutes per benchmark.
//! Peak memory is not measured here (criterion runs everything in one process): see
//! `docs/PERFORMANCE.md` for `/usr/bin/time -v` and `perf.json`.

use criterion::{criterion_group, criterion_main, BenchmarkId, Criterion, SamplingMode, Throughput};
use retrystorm::model::{sim, SimSpec};
use retrystorm::runner::{run_study, RunOptions};
use retrystorm::scenario::{parse_assignment, Scenario};
use std::time::Duration;

/// Loads a bundled scenario (paths are relative to the package root, where cargo runs benches).
fn bundled(path: &str, sets: &[&str]) -> Scenario {
    let overrides: Vec<_> = sets.iter().map(|s| parse_assignment(s).expect("valid override")).collect();
    Scenario::load(path, &overrides).unwrap_or_else(|e| panic!("{path}: {e}"))
}

/// Registers one single-replication run of `spec`, with its event count as throughput.
fn bench_run(
    group: &mut criterion::BenchmarkGroup<'_, criterion::measurement::WallTime>,
    id: BenchmarkId,
    scenario: &Scenario,
) {
    let spec: &SimSpec = &scenario.base;
    let events = sim::run(spec, scenario.seed, 0).events;
    group.throughput(Throughput::Elements(events));
    group.bench_function(id, |b| b.iter(|| sim::run(spec, scenario.seed, 0)));
}

fn outage_herd(c: &mut Criterion) {
    let mut group = c.benchmark_group("outage_herd");
    group.sample_size(10).sampling_mode(SamplingMode::Flat).warm_up_time(Duration::from_millis(500));
    for clients in [10_000u32, 100_000, 1_000_000] {
        // Ten samples of the 1M herd take ~35 s; smaller herds fit in a few seconds.
        group.measurement_time(Duration::from_secs(if clients >= 1_000_000 { 40 } else { 5 }));
        let clients_set = format!("tenant.main.clients={clients}");
        let scenario = bundled("scenarios/outage-herd.toml", &[&clients_set, "policy.client.jitter=full"]);
        bench_run(&mut group, BenchmarkId::new("full_jitter", clients), &scenario);
    }
    group.finish();
}

fn mm1(c: &mut Criterion) {
    let mut group = c.benchmark_group("mm1");
    group
        .sample_size(10)
        .sampling_mode(SamplingMode::Flat)
        .warm_up_time(Duration::from_millis(500))
        .measurement_time(Duration::from_secs(10));
    // λ = 800/s for 1,250 s: a million customers, about four million events.
    let scenario = bundled("scenarios/mm1.toml", &["horizon=1250s"]);
    bench_run(&mut group, BenchmarkId::new("customers", 1_000_000), &scenario);
    group.finish();
}

/// A three-hop chain where every layer retries with its own timeout, and the bottom hop hangs
/// for five seconds. Hops hold a worker while they call downstream, so the hang backs the edge
/// up past the client's timeout and the chain stays in a retry storm until clients give up:
/// attempts time out at every layer, hops keep working for callers that left, and the
/// idempotency store sees duplicates. It exercises the paths the herd does not.
const CHAIN: &str = r#"
name = "chain-bench"
seed = 5
horizon = "20s"
bucket = "100ms"
replications = 1

[[tenant]]
name = "main"
clients = 50000
arrival = { kind = "herd", start = "0s", spread = "10s", requests_per_client = 1 }
policy = "client"

[policy.client]
jitter = "full"
base = "50ms"
cap = "2s"
max_attempts = 5
attempt_timeout = "3s"
deadline = "30s"

[policy.edge-to-service]
jitter = "equal"
base = "20ms"
cap = "500ms"
max_attempts = 3
attempt_timeout = "1s"

[policy.service-to-db]
jitter = "decorrelated"
base = "10ms"
cap = "200ms"
max_attempts = 3
attempt_timeout = "300ms"

[[hop]]
name = "edge"
workers = 2000
service = { dist = "constant", mean = "1ms" }
network = { dist = "constant", mean = "500us" }
downstream_policy = "edge-to-service"

[[hop]]
name = "service"
workers = 1000
service = { dist = "exponential", mean = "2ms" }
network = { dist = "constant", mean = "500us" }
downstream_policy = "service-to-db"

[[hop]]
name = "db"
workers = 32
service = { dist = "lognormal", mean = "3ms", sd = "2ms" }
network = { dist = "constant", mean = "500us" }
idempotency = { ttl = "2s" }

[[fault]]
hop = "db"
kind = "hang"
from = "3s"
to = "8s"
"#;

fn chain(c: &mut Criterion) {
    let mut group = c.benchmark_group("chain");
    group
        .sample_size(10)
        .sampling_mode(SamplingMode::Flat)
        .warm_up_time(Duration::from_millis(500))
        .measurement_time(Duration::from_secs(10));
    let scenario = Scenario::from_source("chain-bench", CHAIN, &[]).unwrap_or_else(|e| panic!("{e}"));
    bench_run(&mut group, BenchmarkId::new("three_hops", 50_000), &scenario);
    group.finish();
}

/// Four replications of the 100k herd on one and on two threads: the ratio of the two times is
/// the parallel speed-up (replications are independent tasks; the goal is ≥ 1.8× on 2 cores).
fn replications(c: &mut Criterion) {
    let mut group = c.benchmark_group("replications");
    group
        .sample_size(10)
        .sampling_mode(SamplingMode::Flat)
        .warm_up_time(Duration::from_millis(500))
        .measurement_time(Duration::from_secs(15));
    let scenario = bundled(
        "scenarios/outage-herd.toml",
        &["tenant.main.clients=100000", "policy.client.jitter=full", "replications=4"],
    );
    let variants = scenario.run_variants();
    let events = run_study(&scenario, &variants, &RunOptions { threads: Some(1), ..RunOptions::default() }).events;
    group.throughput(Throughput::Elements(events));
    for threads in [1, 2] {
        let options = RunOptions { threads: Some(threads), ..RunOptions::default() };
        group.bench_function(BenchmarkId::new("threads", threads), |b| {
            b.iter(|| run_study(&scenario, &variants, &options))
        });
    }
    group.finish();
}

criterion_group!(benches, outage_herd, mm1, chain, replications);
criterion_main!(benches);
