//! Whole-model benchmarks: outage-herd at 10k, 100k and 1M clients (each next to the bare herd
//! loop of `bare_herd/`, in the same group, so the ratio of the two comes from one run; at 1M also
//! the model with every retry queued, `full_jitter_queued`, as the bare loop queues them), M/M/1
//! with a million customers, a three-hop chain with timeouts, replications on one versus two
//! threads, a 100-replica hop behind three balancers, and the queue-bound served path
//! (`served`: metastable-collapse at a 10,000 s horizon and M/M/1 at 2,000 s, each beside the bare
//! queue loop of `bare_queue/`; `served_cpu` the same in CPU time) with many short replications
//! (`small_runs`: M/M/1 at a 1 s horizon × 2,000 replications on one and two threads, beside one
//! 2,000 s run of the same events, for the fixed cost per replication).
//!
//! Each benchmark simulates one replication with every metric on, exactly as `retrystorm run`
//! does; throughput is in simulated events per second (criterion's "elem/s"). The event count is
//! taken from a first run, which is deterministic, so it is the same for every iteration.
//!
//! Run: `cargo bench --bench scenarios` (about four minutes; the 1M herd alone takes ~45 s). Every
//! group uses flat sampling (the same iteration count per sample): the runs are long enough that
//! criterion's default linear ramp would need minutes per benchmark.
//! Peak memory is not measured here (criterion runs everything in one process): see
//! `docs/PERFORMANCE.md` for `/usr/bin/time -v` and `perf.json`.

mod bare_herd;
mod bare_queue;
mod cpu_time;

use criterion::measurement::Measurement;
use criterion::{criterion_group, criterion_main, BenchmarkId, Criterion, SamplingMode, Throughput};
use retrystorm::metrics::RunRecord;
use retrystorm::model::{sim, SimSpec};
use retrystorm::runner::{run_study, RunOptions};
use retrystorm::scenario::{parse_assignment, Scenario};
use std::time::Duration;

/// Loads a bundled scenario (paths are relative to the package root, where cargo runs benches).
fn bundled(path: &str, sets: &[&str]) -> Scenario {
    let overrides: Vec<_> = sets.iter().map(|s| parse_assignment(s).expect("valid override")).collect();
    Scenario::load(path, &overrides).unwrap_or_else(|e| panic!("{path}: {e}"))
}

/// Registers one single-replication run of `spec`, with its event count as throughput; returns
/// the record of a first run.
fn bench_run<M: Measurement>(
    group: &mut criterion::BenchmarkGroup<'_, M>,
    id: BenchmarkId,
    scenario: &Scenario,
) -> RunRecord {
    let spec: &SimSpec = &scenario.base;
    let record = sim::run(spec, scenario.seed, 0);
    group.throughput(Throughput::Elements(record.events));
    group.bench_function(id, |b| b.iter(|| sim::run(spec, scenario.seed, 0)));
    record
}

/// The same run with every retry queued (`Simulation::without_run_ahead`): the model's event
/// loop doing what the bare loop does, one queued event per retry, timed beside both.
fn bench_queued<M: Measurement>(group: &mut criterion::BenchmarkGroup<'_, M>, id: BenchmarkId, scenario: &Scenario) {
    let spec: &SimSpec = &scenario.base;
    let queued = || {
        let mut sim = sim::Simulation::new(spec, scenario.seed, 0).without_run_ahead();
        sim.run_to_end();
        sim.finish()
    };
    group.throughput(Throughput::Elements(queued().events));
    group.bench_function(id, |b| b.iter(queued));
}

/// Times the bare herd loop on `clients` next to the full model, after checking it makes the
/// same number of attempts up to chance (see [`check_same_herd`]).
fn bench_bare_herd<M: Measurement>(group: &mut criterion::BenchmarkGroup<'_, M>, clients: u32, model: &RunRecord) {
    let herd = bare_herd::Herd { clients, ..bare_herd::OUTAGE_HERD };
    let bare = bare_herd::run(&herd, 42);
    check_same_herd("bare loop", &bare, clients, model);
    group.throughput(Throughput::Elements(bare.events));
    group.bench_function(BenchmarkId::new("bare_loop", clients), |b| b.iter(|| bare_herd::run(&herd, 42)));
}

/// The steps from the bare loop towards the model (`bare_herd::run_with`), each timed beside the
/// two: queue entries of the model's 80 bytes, then also the model's keyed jitter draws.
fn bench_bare_steps<M: Measurement>(group: &mut criterion::BenchmarkGroup<'_, M>, clients: u32, model: &RunRecord) {
    use bare_herd::{run_with, Draws};
    let herd = bare_herd::Herd { clients, ..bare_herd::OUTAGE_HERD };
    type Step = fn(&bare_herd::Herd) -> bare_herd::BareRun;
    let steps: [(&str, Step); 2] = [
        ("bare_loop_80b_events", |h| run_with::<15>(h, 42, Draws::Sequential)),
        ("bare_loop_80b_keyed_draws", |h| run_with::<15>(h, 42, Draws::Keyed)),
    ];
    for (name, step) in steps {
        let bare = step(&herd);
        check_same_herd(name, &bare, clients, model);
        group.throughput(Throughput::Elements(bare.events));
        group.bench_function(BenchmarkId::new(name, clients), |b| b.iter(|| step(&herd)));
    }
}

/// A bare loop and the model use different random streams, so their attempt totals differ by a
/// sum of 2N independent per-client deviations (SD √(2N)·σ, σ² estimated from the bare run);
/// more than 5 SD apart means the loops no longer simulate the same herd.
fn check_same_herd(name: &str, bare: &bare_herd::BareRun, clients: u32, model: &RunRecord) {
    let model_attempts = model.hops[0].attempts;
    let sd = (2.0 * f64::from(clients) * bare.attempts_variance(clients)).sqrt();
    let gap = (bare.attempts as f64 - model_attempts as f64).abs();
    assert!(
        gap <= 5.0 * sd,
        "{name} at {clients} clients: {} attempts against the model's {model_attempts} (5 SD = {:.0})",
        bare.attempts,
        5.0 * sd
    );
    eprintln!(
        "outage_herd {clients}: model {model_attempts} attempts, {:.2} events/attempt; {name} {} attempts, \
         {:.2} events/attempt",
        model.events as f64 / model_attempts as f64,
        bare.attempts,
        bare.events as f64 / bare.attempts as f64
    );
}

fn outage_herd(c: &mut Criterion) {
    let mut group = c.benchmark_group("outage_herd");
    group.sample_size(10).sampling_mode(SamplingMode::Flat).warm_up_time(Duration::from_millis(500));
    for clients in [10_000u32, 100_000, 1_000_000] {
        // Ten samples of the 1M herd take ~35 s; smaller herds fit in a few seconds.
        group.measurement_time(Duration::from_secs(if clients >= 1_000_000 { 40 } else { 5 }));
        let clients_set = format!("tenant.main.clients={clients}");
        let scenario = bundled("scenarios/outage-herd.toml", &[&clients_set, "policy.client.jitter=full"]);
        let record = bench_run(&mut group, BenchmarkId::new("full_jitter", clients), &scenario);
        bench_bare_herd(&mut group, clients, &record);
        if clients >= 1_000_000 {
            bench_queued(&mut group, BenchmarkId::new("full_jitter_queued", clients), &scenario);
        }
    }
    group.finish();
}

/// The 1M herd, full model and bare loop, timed in CPU time of the benchmarking thread
/// (`cpu_time::ThreadCpu`): on a shared machine the wall-time ratio of `outage_herd` swings with
/// the load, the CPU-time ratio much less (`outage_herd_cpu/full_jitter/1000000` ÷
/// `outage_herd_cpu/bare_loop/1000000`, from one run).
fn outage_herd_cpu(c: &mut Criterion<cpu_time::ThreadCpu>) {
    let mut group = c.benchmark_group("outage_herd_cpu");
    group.sample_size(10).sampling_mode(SamplingMode::Flat).warm_up_time(Duration::from_millis(500));
    group.measurement_time(Duration::from_secs(40));
    let scenario = bundled("scenarios/outage-herd.toml", &["tenant.main.clients=1000000", "policy.client.jitter=full"]);
    let record = bench_run(&mut group, BenchmarkId::new("full_jitter", 1_000_000), &scenario);
    bench_bare_herd(&mut group, 1_000_000, &record);
    bench_queued(&mut group, BenchmarkId::new("full_jitter_queued", 1_000_000), &scenario);
    bench_bare_steps(&mut group, 1_000_000, &record);
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

/// A hop of 100 replicas (one worker each, Exp(1 ms)) behind each balancer at ρ = 0.8: 80,000
/// Poisson requests/s for 12.5 s, about a million requests and four million events (the
/// balanced hop's goal: ≥ 5M events/s, docs/PERFORMANCE.md).
fn balanced(c: &mut Criterion) {
    let mut group = c.benchmark_group("balanced");
    group
        .sample_size(10)
        .sampling_mode(SamplingMode::Flat)
        .warm_up_time(Duration::from_millis(500))
        .measurement_time(Duration::from_secs(10));
    for balancer in ["round_robin", "power_of_two", "least_connections"] {
        let set = format!("hop.server.balancer=\"{balancer}\"");
        let scenario = bundled(
            "scenarios/mmc.toml",
            &[
                "hop.server.replicas=100",
                "hop.server.workers=1",
                "tenant.customers.arrival.rate_per_s=80000.0",
                "horizon=12.5s",
                &set,
            ],
        );
        bench_run(&mut group, BenchmarkId::new(balancer, 100), &scenario);
    }
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

/// The queue-bound workloads of the served path, each as the bundled scenario at a long horizon
/// and as the bare queue loop with the same parameters.
fn served_workloads() -> [(&'static str, Scenario, bare_queue::Served); 2] {
    use retrystorm::engine::NS_PER_S;
    [
        (
            "metastable_collapse",
            bundled("scenarios/metastable-collapse.toml", &["horizon=10000s"]),
            bare_queue::METASTABLE_COLLAPSE.with_horizon(10_000 * NS_PER_S),
        ),
        ("mm1", bundled("scenarios/mm1.toml", &["horizon=2000s"]), bare_queue::MM1.with_horizon(2_000 * NS_PER_S)),
    ]
}

/// Registers the model (`model`) and the bare queue loop (`bare_loop`) on each served workload;
/// prints both programs' events per attempt.
fn bench_served<M: Measurement>(group: &mut criterion::BenchmarkGroup<'_, M>) {
    for (name, scenario, bare) in served_workloads() {
        let record = bench_run(group, BenchmarkId::new("model", name), &scenario);
        let counts = bare_queue::run(&bare, 42);
        eprintln!(
            "served {name}: model {} events, {:.2} per attempt; bare loop {} events, {:.2} per attempt",
            record.events,
            record.events as f64 / record.hops[0].attempts.max(1) as f64,
            counts.events,
            counts.events as f64 / counts.attempts.max(1) as f64
        );
        group.throughput(Throughput::Elements(counts.events));
        group.bench_function(BenchmarkId::new("bare_loop", name), |b| b.iter(|| bare_queue::run(&bare, 42)));
    }
}

/// The served path beside its bare loop, wall time: `served/model/X` ÷ `served/bare_loop/X` is the
/// ratio the served-path goal is about (≤ 1.5×), from one run.
fn served(c: &mut Criterion) {
    let mut group = c.benchmark_group("served");
    group.sample_size(10).sampling_mode(SamplingMode::Flat).warm_up_time(Duration::from_millis(500));
    group.measurement_time(Duration::from_secs(15));
    bench_served(&mut group);
    group.finish();
}

/// The same in CPU time of the benchmarking thread (robust to a shared machine).
fn served_cpu(c: &mut Criterion<cpu_time::ThreadCpu>) {
    let mut group = c.benchmark_group("served_cpu");
    group.sample_size(10).sampling_mode(SamplingMode::Flat).warm_up_time(Duration::from_millis(500));
    group.measurement_time(Duration::from_secs(15));
    bench_served(&mut group);
    group.finish();
}

/// Many short replications: M/M/1 with a 1 s horizon × 2,000 replications on one and two threads,
/// beside one run of 2,000 s (the same expected events): `small_runs/replications/1` ÷
/// `small_runs/one_long_run` − 1 is the fixed cost per replication as a share, and
/// `replications/1` ÷ `replications/2` the two-thread scaling.
fn small_runs(c: &mut Criterion) {
    let mut group = c.benchmark_group("small_runs");
    group.sample_size(10).sampling_mode(SamplingMode::Flat).warm_up_time(Duration::from_millis(500));
    group.measurement_time(Duration::from_secs(15));
    let long = bundled("scenarios/mm1.toml", &["horizon=2000s"]);
    bench_run(&mut group, BenchmarkId::new("one_long_run", 2_000), &long);
    let short = bundled("scenarios/mm1.toml", &["horizon=1s", "replications=2000"]);
    let variants = short.run_variants();
    let events = run_study(&short, &variants, &RunOptions { threads: Some(1), ..RunOptions::default() }).events;
    group.throughput(Throughput::Elements(events));
    for threads in [1, 2] {
        let options = RunOptions { threads: Some(threads), ..RunOptions::default() };
        group.bench_function(BenchmarkId::new("replications", threads), |b| {
            b.iter(|| run_study(&short, &variants, &options))
        });
    }
    group.finish();
}

criterion_group!(benches, outage_herd, mm1, chain, replications, balanced, served, small_runs);
criterion_group! {
    name = cpu;
    config = Criterion::default().with_measurement(cpu_time::ThreadCpu);
    targets = outage_herd_cpu, served_cpu
}
criterion_main!(benches, cpu);
