//! The emulator on real sockets: 127.0.0.1 only, each run a few hundred requests and a few
//! seconds of wall time (a hard `max_seconds` stops it whatever happens).

use retrystorm::emulate::{self, Connections, Options};
use retrystorm::metrics::catalogue::Metric;
use retrystorm::metrics::RunRecord;
use retrystorm::runner::{run_study, Emulation, RunOptions, Study};
use retrystorm::scenario::{Scenario, Variant};
use std::process::Command;

/// An outage-herd in small: 300 clients in the first second, full jitter (8 attempts), an outage of the
/// first 3 s, capacity 200 requests/s (2 workers at 10 ms). About 6 s of wall time.
const TINY_HERD: &str = r#"
name = "tiny-herd"
seed = 7
horizon = "10s"
bucket = "100ms"
replications = 20

[[tenant]]
name = "main"
clients = 300
arrival = { kind = "herd", start = "0s", spread = "1s", requests_per_client = 1 }
policy = "client"

[policy.client]
jitter = "full"
base = "100ms"
multiplier = 2.0
cap = "2s"
max_attempts = 8

[[hop]]
name = "api"
workers = 2
service = { dist = "constant", mean = "10ms" }

[[fault]]
hop = "api"
kind = "outage"
from = "0s"
to = "3s"
"#;

/// The tests' emulator options: real time, 30 s at most, a loaded test machine's late timers
/// recorded, not refused.
fn test_options() -> Options {
    Options { time_scale: 1.0, max_seconds: 30.0, max_requests: 1_000, allow_late: true, ..Options::default() }
}

/// The first variant emulated once (run 0) on loopback with `options`.
fn emulate_with(scenario: &Scenario, variants: &[Variant], options: &Options) -> (RunRecord, Emulation) {
    let spec = &variants[0].spec;
    let checked = emulate::preflight(spec, options).unwrap_or_else(|e| panic!("{e}"));
    emulate::run(spec, (scenario.seed, 0), options, &checked).unwrap_or_else(|e| panic!("{e}"))
}

/// The first variant emulated once with [`test_options`].
fn emulate_once(scenario: &Scenario, variants: &[Variant]) -> (RunRecord, Emulation) {
    emulate_with(scenario, variants, &test_options())
}

/// Emulated run 0 sends its requests when simulated replication 0's arrive (the same stream):
/// the same number in every bucket.
fn assert_arrivals_as_simulated(scenario: &Scenario, variants: &[Variant], record: &RunRecord) {
    let simulated = retrystorm::model::sim::run(&variants[0].spec, scenario.seed, 0);
    let per_bucket = |r: &RunRecord| r.tenant_series[0].iter().map(|b| b.arrivals).collect::<Vec<u32>>();
    assert_eq!(per_bucket(record), per_bucket(&simulated), "emulated run 0 against simulated replication 0");
}

fn values(study: &Study, metric: Metric) -> Vec<f64> {
    study.variants[0].metrics.get(metric).expect("catalogued").values.iter().flatten().copied().collect()
}

fn mean_sd(xs: &[f64]) -> (f64, f64) {
    let n = xs.len() as f64;
    let mean = xs.iter().sum::<f64>() / n;
    let var = xs.iter().map(|x| (x - mean).powi(2)).sum::<f64>() / (n - 1.0);
    (mean, var.sqrt())
}

/// Asserts that one emulated run's `metric` falls within the simulated replications'
/// prediction band and returns their sd. One run is one more draw from the run-to-run
/// distribution, so its tolerance is 4 sd · √(1 + 1/n) (normal theory: a false failure about
/// once in 16,000 runs), with the sd estimated from the replications; `context` goes into the
/// failure message.
fn assert_in_prediction_band(simulated: &Study, measured: &Study, metric: Metric, context: &str) -> f64 {
    let sims = values(simulated, metric);
    let (mean, sd) = mean_sd(&sims);
    let tolerance = 4.0 * sd * (1.0 + 1.0 / sims.len() as f64).sqrt();
    let value = measured.variants[0].metrics.mean(metric).expect("measured");
    assert!(
        (value - mean).abs() <= tolerance,
        "{metric:?}: measured {value}, simulated {mean} ± {tolerance} (sd {sd}){context}"
    );
    sd
}

#[test]
fn a_small_herd_on_loopback_agrees_with_the_simulation() {
    let scenario = Scenario::from_source("tiny-herd", TINY_HERD, &[]).unwrap_or_else(|e| panic!("{e}"));
    let variants = scenario.run_variants();
    let simulated = run_study(&scenario, &variants, &RunOptions { threads: Some(2), progress: false });
    let (record, emulation) = emulate_once(&scenario, &variants);
    assert!(emulation.emulated && emulation.connections > 0 && emulation.timer_samples > 0);
    assert!(record.truncated.is_none(), "the run stopped early: {:?}", record.truncated);
    assert_arrivals_as_simulated(&scenario, &variants, &record);
    // Every retry of the tenant's clients had its own delay measured (the data `client_timing`
    // is fitted from): one per retry the tenant made.
    let retries = record.tenants[0].attempts - record.tenants[0].requests;
    assert!(retries > 0, "the tiny herd retries");
    // Every attempt was answered (no timeouts here), and each answer's loopback time measured:
    // its round trip less the time the hop says it held the attempt.
    assert_eq!(emulation.loopback_samples, record.tenants[0].attempts, "one loopback time per exchange");
    assert!(emulation.loopback_mean_s > 0.0 && emulation.loopback_p99_s >= emulation.loopback_mean_s);
    assert_eq!(emulation.client_delays.n, retries, "one client delay per retry");
    assert!(emulation.client_delays.advice().is_some());
    let measured = retrystorm::runner::assemble(&scenario, &variants, vec![record], 1, emulation.wall_s);
    let got = |m: Metric| measured.variants[0].metrics.mean(m).expect("measured");
    // Every request reached a terminal state and every attempt reached the server on the wire.
    assert_eq!(got(Metric::Requests), 300.0);
    for metric in [Metric::Amplification, Metric::SuccessRatio] {
        // One emulated run against 20 simulated ones, within their prediction band. Both
        // metrics vary from run to run here (full jitter decides which retries fall after the
        // outage), so the band is not a point.
        let timers = format!("; timers {} s off on average", emulation.timer_lateness_mean_s);
        let sd = assert_in_prediction_band(&simulated, &measured, metric, &timers);
        assert!(sd > 0.0, "{metric:?}: no spread among the replications");
    }
}

/// A chain of two hops in small: 40 clients, `front` (2 attempts) calling `back` (3 attempts
/// per call) over its socket, `back` down throughout: every layer's retries multiply.
const TINY_CHAIN: &str = r#"
name = "tiny-chain"
seed = 5
horizon = "4s"
bucket = "100ms"
replications = 4

[[tenant]]
name = "main"
clients = 40
arrival = { kind = "herd", start = "0s", spread = "1s", requests_per_client = 1 }
policy = "client"

[policy.client]
jitter = "full"
base = "20ms"
max_attempts = 2
attempt_timeout = "2s"

[policy.down]
jitter = "full"
base = "10ms"
max_attempts = 3
attempt_timeout = "500ms"

[[hop]]
name = "front"
workers = 8
service = { dist = "constant", mean = "5ms" }
downstream_policy = "down"

[[hop]]
name = "back"
workers = 8
service = { dist = "constant", mean = "5ms" }

[[fault]]
hop = "back"
kind = "outage"
from = "0s"
to = "10s"
"#;

#[test]
fn a_chain_calls_its_next_hop_over_its_socket_and_the_retries_multiply_as_simulated() {
    // By the rule, and in the simulation: each of the 40 requests makes 2 attempts at `front`,
    // each of which calls `back` 3 times: 80 attempts at front, 240 at back, nothing succeeds.
    let scenario = Scenario::from_source("tiny-chain", TINY_CHAIN, &[]).unwrap_or_else(|e| panic!("{e}"));
    let variants = scenario.run_variants();
    let simulated = run_study(&scenario, &variants, &RunOptions { threads: Some(2), progress: false });
    let (record, emulation) = emulate_once(&scenario, &variants);
    assert!(record.truncated.is_none(), "the run stopped early: {:?}", record.truncated);
    let attempts = |r: &retrystorm::metrics::RunRecord| (r.hops[0].attempts, r.hops[1].attempts);
    assert_eq!(attempts(&record), (80, 240), "measured attempts at front and back");
    assert_eq!((record.hops[1].retries, record.tenants[0].dlq), (160, 40));
    let sim_front = values(&simulated, Metric::Attempts);
    assert!(sim_front.iter().all(|&a| a == 80.0), "simulated attempts at the first hop: {sim_front:?}");
    let measured = retrystorm::runner::assemble(&scenario, &variants, vec![record], 1, emulation.wall_s);
    assert_eq!(measured.variants[0].metrics.mean(Metric::SuccessRatio), Some(0.0));
}

/// Network delays and a rate profile on real sockets: no request before 2 s (the profile's
/// rate is 0 there), then 40/s; each leg of every attempt 40 ms, the service 10 ms.
const DELAYED_PROFILE: &str = r#"
name = "delayed-profile"
seed = 11
horizon = "4s"
bucket = "500ms"
replications = 1

[[tenant]]
name = "main"
clients = 100
arrival = { kind = "profile", steps = [{ from = "0s", rate_per_s = 0.0 }, { from = "2s", rate_per_s = 40.0 }] }
policy = "once"

[policy.once]
jitter = "none"
max_attempts = 1
attempt_timeout = "2s"

[[hop]]
name = "api"
workers = 8
service = { dist = "constant", mean = "10ms" }
network = { dist = "constant", mean = "40ms" }
"#;

#[test]
fn network_delays_and_a_rate_profile_are_emulated() {
    let scenario = Scenario::from_source("delayed-profile", DELAYED_PROFILE, &[]).unwrap_or_else(|e| panic!("{e}"));
    let variants = scenario.run_variants();
    let (record, emulation) = emulate_once(&scenario, &variants);
    assert!(record.truncated.is_none(), "the run stopped early: {:?}", record.truncated);
    let arrivals: Vec<u32> = record.tenant_series[0].iter().map(|b| b.arrivals).collect();
    // The profile: nothing in the first four buckets (0–2 s); after it, 80 expected in 2 s, a
    // Poisson count (± 5 sd = ± 45 keeps a false failure below one in a million).
    assert!(arrivals[..4].iter().all(|&a| a == 0), "arrivals before 2 s: {arrivals:?}");
    assert_arrivals_as_simulated(&scenario, &variants, &record);
    let requests = record.tenants[0].requests;
    assert!((35..=125).contains(&requests), "{requests} requests where 80 are expected");
    // Every request succeeds after 40 + 10 + 40 ms. The emulator wakes each of its timers
    // early by this machine's mean lateness (measured before the run) so that they are on time
    // on average, and a timer is never early otherwise: four waits (the arrival, both legs and
    // the service) can end at most 4 × that early; the histogram's minimum is its bucket's lower
    // edge, within 0.1% (90 µs).
    assert_eq!(record.tenants[0].succeeded, requests);
    let hist = record.tenants[0].latency_us.to_histogram();
    let early_us = 4.0 * emulation.timer_lateness_calibration_mean_s * 1e6;
    assert!(
        hist.min() as f64 >= 90_000.0 - early_us - 90.0,
        "a request took {} µs, under the two legs and the service ({early_us} µs of timers' correction)",
        hist.min()
    );
    let mean_s = record.tenants[0].latency_sum_us as f64 / requests as f64 / 1e6;
    let late = emulation.timer_lateness_p99_s;
    assert!(mean_s < 0.090 + 3.0 * late.max(0.005), "mean latency {mean_s} s; timers p99 {late} s late");
}

/// A ramp tenant (0 → 60 requests/s over 2 s), a trace tenant (a timestamp every 25 ms, each
/// played 1.5 times on average) and a closed loop (5 clients, 100 ms of think time) on one hop
/// with room for all.
const RAMP_AND_TRACE: &str = r#"
name = "ramp-and-trace"
seed = 9
horizon = "3s"
bucket = "250ms"
replications = 1

[[tenant]]
name = "ramp"
clients = 50
arrival = { kind = "ramp", from_rate_per_s = 0.0, rate_per_s = 60.0, over = "2s" }
policy = "once"

[[tenant]]
name = "trace"
clients = 50
arrival = { kind = "trace", file = "times.csv", unit = "ms", volume_scale = 1.5 }
policy = "once"

[[tenant]]
name = "loop"
clients = 5
arrival = { kind = "closed", start = "0s", spread = "100ms", think = "100ms" }
policy = "once"

[policy.once]
jitter = "none"
max_attempts = 1
attempt_timeout = "2s"

[[hop]]
name = "api"
workers = 32
service = { dist = "constant", mean = "5ms" }
"#;

#[test]
fn ramp_trace_and_closed_loop_arrivals_are_emulated_as_the_simulation_draws_them() {
    let dir = tempfile::tempdir().expect("temp dir");
    let times: String = (0..120).map(|k| format!("{}\n", 25 * k)).collect();
    std::fs::write(dir.path().join("times.csv"), format!("t\n{times}")).expect("write the trace");
    let path = dir.path().join("ramp-and-trace.toml");
    std::fs::write(&path, RAMP_AND_TRACE).expect("write the scenario");
    let scenario = Scenario::load(path.to_str().expect("a UTF-8 temp path"), &[]).unwrap_or_else(|e| panic!("{e}"));
    let variants = scenario.run_variants();
    let (record, emulation) = emulate_once(&scenario, &variants);
    assert!(record.truncated.is_none(), "the run stopped early: {:?}", record.truncated);
    // Run 0 sends each tenant's requests when simulated replication 0's arrive: the same count in
    // every bucket, from the same stream (the ramp's gaps; the trace's copies).
    let simulated = retrystorm::model::sim::run(&variants[0].spec, scenario.seed, 0);
    let per_bucket = |r: &RunRecord, t: usize| r.tenant_series[t].iter().map(|b| b.arrivals).collect::<Vec<u32>>();
    for (t, name) in ["ramp", "trace"].into_iter().enumerate() {
        assert_eq!(per_bucket(&record, t), per_bucket(&simulated, t), "tenant {name}: arrivals per bucket");
        let n = record.tenants[t].requests;
        assert_eq!((n, record.tenants[t].succeeded), (simulated.tenants[t].requests, n), "tenant {name}");
    }
    // The counts themselves: the ramp's is Poisson with mean 60·2/2 + 60·1 = 120; the trace's is
    // 120 timestamps, each played once plus once more with probability 0.5 (mean 180, variance
    // 120 · 0.25). Within 5 sd: a false failure below one in a million.
    let (ramp, trace) = (record.tenants[0].requests as f64, record.tenants[1].requests as f64);
    assert!((ramp - 120.0).abs() <= 5.0 * 120f64.sqrt(), "{ramp} ramp requests where 120 are expected");
    assert!((trace - 180.0).abs() <= 5.0 * (120.0f64 * 0.25).sqrt(), "{trace} trace requests where 180 are expected");
    // The closed loop: each client's next request 100 ms after its last one ended, each taking
    // 5 ms, until 3 s: about 28 each in the simulation. The emulator wakes each timer early by
    // the machine's mean lateness c, and a timer is never early otherwise, so a cycle's two waits
    // (the think time and the service) take at least 105 ms − 2c: a client sends at most
    // 1 + 3 s ÷ (105 ms − 2c) requests. Late timers only lose cycles: 0.8 × the simulated count
    // is a mean lateness of 26 ms per cycle, ten times what a loaded test machine's timers show.
    let (emulated, simulated) = (record.tenants[2].requests, simulated.tenants[2].requests);
    assert!(simulated >= 5 * 25, "simulated closed-loop requests: {simulated}");
    let early = 2.0 * emulation.timer_lateness_calibration_mean_s;
    let most = 5.0 * (1.0 + 3.0 / (0.105 - early));
    assert!(
        emulated as f64 <= most && emulated as f64 >= 0.8 * simulated as f64,
        "closed loop: {emulated} requests emulated (at most {most:.1}), {simulated} simulated"
    );
    assert_eq!(record.tenants[2].succeeded, emulated);
}

/// 300 clients fire within 1 ms into an outage that refuses every attempt at once, and retry
/// at once (2 attempts each).
const HERD_AT_ONCE: &str = r#"
name = "herd-at-once"
seed = 5
horizon = "3s"
bucket = "100ms"
replications = 1

[[tenant]]
name = "main"
clients = 300
arrival = { kind = "herd", start = "0s", spread = "1ms", requests_per_client = 1 }
policy = "eager"

[policy.eager]
jitter = "none"
max_attempts = 2

[[hop]]
name = "api"
workers = 4
service = { dist = "constant", mean = "1ms" }

[[fault]]
hop = "api"
kind = "outage"
from = "0s"
to = "10s"
"#;

#[test]
fn clients_on_one_busy_thread_send_no_faster_than_their_work_allows() {
    let scenario = Scenario::from_source("herd-at-once", HERD_AT_ONCE, &[]).unwrap_or_else(|e| panic!("{e}"));
    let variants = scenario.run_variants();
    let run = |client_work| emulate_with(&scenario, &variants, &Options { client_work, ..test_options() });
    let per_bucket = |record: &RunRecord| record.tenant_series[0].iter().map(|b| b.attempts).collect::<Vec<u32>>();
    // Without work the herd's 300 first attempts and their 300 immediate retries all leave in
    // the first 100 ms bucket (on loopback a refusal comes back in well under a millisecond).
    let (free, _) = run(None);
    assert_eq!(free.tenants[0].attempts, 600);
    assert!(per_bucket(&free)[0] >= 300, "{:?}", per_bucket(&free));
    // With 2 ms of work per attempt on the clients' one thread, consecutive attempts leave at
    // least 2 ms apart: at most 50 in a 100 ms bucket (51 where the first sits on its start).
    let work = std::time::Duration::from_millis(2);
    let (busy, emulation) = run(Some(work));
    assert_eq!(busy.tenants[0].attempts, 600, "{:?}", busy.truncated);
    let buckets = per_bucket(&busy);
    assert!(buckets.iter().all(|&a| a <= 51), "attempts per 100 ms: {buckets:?}");
    assert!(buckets.iter().filter(|&&a| a > 0).count() >= 12, "600 attempts need 1.2 s: {buckets:?}");
    // Every retry leaves at least its own work after its backoff asked for it, less the early
    // wake-up of the timer it slept on (the emulator's timer correction).
    let fit = &emulation.client_delays;
    assert_eq!(fit.n, 300);
    let mean_late_s = fit.sum_y / fit.n as f64;
    let floor_s = work.as_secs_f64() - emulation.timer_lateness_calibration_mean_s;
    assert!(mean_late_s >= floor_s, "retries {mean_late_s} s late on average, under {floor_s} s");
    // The process's work is timed on every attempt (at least the 2 ms spun), and so is its
    // thread's whole time on a CPU (the work, connections, HTTP and timers); the advice is the
    // `work` that simulates it: the thread's time per attempt, or the work where the thread's
    // time reads less (the spin is timed on the wall, and the thread may wait for a core).
    assert_eq!(fit.work_n, 600);
    let work_ms = fit.work_sum_s / 600.0 * 1e3;
    assert!(work_ms >= 2.0, "{work_ms} ms of work per attempt on average, under the 2 ms spun");
    assert_eq!(fit.thread_attempts, 600, "the thread's time is measured over the whole run");
    let busy_ms = fit.thread_busy_s / 600.0 * 1e3;
    assert!(busy_ms > 0.0, "the client thread's time on a CPU was not measured");
    let advice = fit.advice().expect("advice");
    let simulated_ms = if busy_ms > work_ms { busy_ms } else { work_ms };
    assert!(advice.ends_with(&format!("client_timing = {{ work = \"{simulated_ms:.3}ms\" }}")), "{advice}");
}

#[test]
fn a_busy_client_writes_each_request_right_after_its_own_work() {
    // The herd at once with 2 ms of work per attempt and pooled connections: the 300 retries
    // go out on connections the first attempts opened, each written in the same turn of the
    // client thread as its work, so they reach the server 2 ms apart. Attempts received in one
    // 10 ms bucket were sent within 10 ms plus the largest delay from send to receipt; at 2 ms
    // apart, delays under 8 ms allow at most 10. A connection driven by a task of its own
    // wrote a request only when that task's turn came, after the work of every attempt due by
    // then: 91 and 118 retries received in consecutive 10 ms buckets.
    let source = HERD_AT_ONCE.replace("bucket = \"100ms\"", "bucket = \"10ms\"");
    let scenario = Scenario::from_source("herd-at-once", &source, &[]).unwrap_or_else(|e| panic!("{e}"));
    let variants = scenario.run_variants();
    let options = Options {
        client_work: Some(std::time::Duration::from_millis(2)),
        connections: Connections::Pooled,
        ..test_options()
    };
    let (record, emulation) = emulate_with(&scenario, &variants, &options);
    assert!(emulation.pooled);
    assert_eq!((record.hops[0].attempts, record.hops[0].retries), (600, 300), "{:?}", record.truncated);
    let retries: Vec<u32> = record.hop_series[0].iter().map(|b| b.retries).collect();
    assert!(retries.iter().all(|&r| r <= 10), "retries received per 10 ms: {retries:?}");
}

#[test]
fn pooled_connections_are_reused_and_one_that_timed_out_is_not() {
    // The tiny herd's 8 attempts per client at most reuse the connections of the attempts
    // before them: far fewer connections than attempts, and the run still agrees with the
    // simulation (the band of `a_small_herd_on_loopback_agrees_with_the_simulation`).
    let pooled = Options { connections: Connections::Pooled, ..test_options() };
    let scenario = Scenario::from_source("tiny-herd", TINY_HERD, &[]).unwrap_or_else(|e| panic!("{e}"));
    let variants = scenario.run_variants();
    let simulated = run_study(&scenario, &variants, &RunOptions { threads: Some(2), progress: false });
    let (record, emulation) = emulate_with(&scenario, &variants, &pooled);
    assert!(record.truncated.is_none(), "the run stopped early: {:?}", record.truncated);
    let attempts = record.tenants[0].attempts;
    assert!(
        emulation.pooled && emulation.connections * 2 < attempts,
        "{} connections for {attempts} attempts",
        emulation.connections
    );
    let measured = retrystorm::runner::assemble(&scenario, &variants, vec![record], 1, emulation.wall_s);
    for metric in [Metric::Amplification, Metric::SuccessRatio] {
        assert_in_prediction_band(&simulated, &measured, metric, "");
    }
    // Every attempt of `abandoned` times out: HTTP/1.1 cannot take a request back, so each
    // closes its connection and the next opens another (one per attempt, pooled or not), and
    // the hop still serves all 40.
    let scenario = Scenario::from_source("abandoned", ABANDONED, &[]).unwrap_or_else(|e| panic!("{e}"));
    let variants = scenario.run_variants();
    let (record, emulation) = emulate_with(&scenario, &variants, &pooled);
    assert_eq!((record.tenants[0].attempts, emulation.connections), (40, 40));
    assert_eq!(record.hops[0].executions, 40, "{:?}", record.truncated);
}

/// Every attempt times out (100 ms) long before its service ends (300 ms): the hop goes on
/// with the work its callers left, as the simulator's hop does, so each request is executed
/// twice.
const ABANDONED: &str = r#"
name = "abandoned"
seed = 3
horizon = "3s"
bucket = "500ms"
replications = 2

[[tenant]]
name = "main"
clients = 20
arrival = { kind = "herd", start = "0s", spread = "2s", requests_per_client = 1 }
policy = "impatient"

[policy.impatient]
jitter = "none"
max_attempts = 2
attempt_timeout = "100ms"

[[hop]]
name = "api"
workers = 100
service = { dist = "constant", mean = "300ms" }
"#;

#[test]
fn a_hop_finishes_the_work_its_caller_gave_up_on() {
    let scenario = Scenario::from_source("abandoned", ABANDONED, &[]).unwrap_or_else(|e| panic!("{e}"));
    let variants = scenario.run_variants();
    let simulated = retrystorm::model::sim::run(&variants[0].spec, scenario.seed, 0);
    // The simulator: both attempts of each of the 20 requests are served in full.
    assert_eq!((simulated.hops[0].executions, simulated.hops[0].duplicates_no_key), (40, 20));
    let (record, _) = emulate_once(&scenario, &variants);
    assert_eq!(record.tenants[0].dlq, 20, "every request gives up after two timeouts");
    // On real sockets too, once the hop has finished what it took in (the run waits for it, as
    // the simulator drains its queue). Dropping the work with the caller's connection (as
    // hyper does unless the service runs in a task of its own) counted none.
    assert!(record.truncated.is_none(), "the run stopped early: {:?}", record.truncated);
    let (executions, duplicates) = (record.hops[0].executions, record.hops[0].duplicates_no_key);
    assert_eq!((executions, duplicates), (40, 20), "executions and duplicates on real sockets");
}

/// A store in front of a slow call: `front` keeps idempotency keys and calls `back`, which takes
/// `BACK` ms; the client gives each attempt 100 ms and retries 300 ms, then 600 ms, after it.
/// 20 requests, one every 50 ms.
const STORE_BEFORE_CALL: &str = r#"
name = "store-before-call"
seed = 3
horizon = "1s"
drain_limit = "5s"
bucket = "100ms"
replications = 1

[[tenant]]
name = "main"
clients = 20
arrival = { kind = "poisson", rate_per_s = 20.0 }
policy = "client"

[policy.client]
jitter = "exponential"
base = "300ms"
multiplier = 2.0
max_attempts = 3
attempt_timeout = "100ms"

[policy.down]
jitter = "exponential"
base = "100ms"
max_attempts = 1
attempt_timeout = "5s"

[[hop]]
name = "front"
workers = 64
service = { dist = "constant", mean = "10ms" }
idempotency = { ttl = "1h" }
downstream_policy = "down"

[[hop]]
name = "back"
workers = 64
service = { dist = "constant", mean = "200ms" }
"#;

#[test]
fn a_stored_result_or_a_key_in_progress_answers_without_calling_downstream() {
    // Each request's first delivery times out at the client (100 ms) while `front` waits on
    // `back`; it still commits. With `back` at 200 ms the retry (at 400 ms) finds the stored
    // result: deduplicated, and `back` is not called again. With `back` at 600 ms the first
    // retry finds the key in progress: a 409, and the second retry (at 1,010 ms) the stored
    // result. With `in_progress = "wait"` the first retry waits for the commit (at 610 ms) and is
    // deduplicated then, after its client gave up at 500 ms; the second is deduplicated too.
    // Whatever the case, `back` runs once per request, as in the simulation. (The last request's
    // last retry is sent up to 2.1 s in; the drain limit is 5 s.)
    let cases = [("200ms", "conflict", 2, 1, 0), ("600ms", "conflict", 3, 1, 1), ("600ms", "wait", 3, 2, 0)];
    for (back, in_progress, front_attempts, deduplicated, conflicts) in cases {
        let sets = [
            format!("hop.back.service.mean=\"{back}\""),
            format!("hop.front.idempotency.in_progress=\"{in_progress}\""),
        ];
        let sets: Vec<_> =
            sets.iter().map(|s| retrystorm::scenario::parse_assignment(s).expect("an override")).collect();
        let scenario =
            Scenario::from_source("store-before-call", STORE_BEFORE_CALL, &sets).unwrap_or_else(|e| panic!("{e}"));
        let variants = scenario.run_variants();
        let simulated = retrystorm::model::sim::run(&variants[0].spec, scenario.seed, 0);
        let (record, _) = emulate_once(&scenario, &variants);
        let case = format!("back {back}, in_progress {in_progress}");
        assert!(record.truncated.is_none(), "{case}: the run stopped early: {:?}", record.truncated);
        for (side, r) in [("simulated", &simulated), ("emulated", &record)] {
            let n = r.tenants[0].requests;
            assert!(n > 0, "{side}: no request arrived");
            let (front, back) = (&r.hops[0], &r.hops[1]);
            assert_eq!(
                (front.attempts, front.executions, front.deduplicated, front.in_progress_conflicts, back.attempts),
                (front_attempts * n, n, deduplicated * n, conflicts * n, n),
                "{case}, {side}: attempts, executions, deduplicated and conflicts at front, attempts at back"
            );
            assert_eq!(
                (r.tenants[0].succeeded, front.released, front.duplicates_ttl_expired),
                (n, 0, 0),
                "{case}, {side}"
            );
        }
    }
}

#[test]
fn repeated_emulated_runs_draw_other_jitter_and_compare_means() {
    // Three runs per variant, each with its own seed: the measurement gets an interval, the
    // runs differ (the jitter follows the run's seed), and each measured mean is judged against
    // the simulated one.
    let dir = tempfile::tempdir().expect("temp dir");
    let scenario = dir.path().join("tiny.toml");
    std::fs::write(&scenario, TINY_HERD).expect("write scenario");
    let out = dir.path().join("out");
    let output = Command::new(env!("CARGO_BIN_EXE_retrystorm"))
        .arg("compare")
        .arg(&scenario)
        .args(["--jitter", "full", "--replications", "5", "--emulate", "--emulate-runs", "3", "--allow-late"])
        .args(["--quiet", "--out"])
        .arg(&out)
        .output()
        .expect("binary runs");
    let stdout = String::from_utf8_lossy(&output.stdout);
    assert_eq!(output.status.code(), Some(0), "{stdout}\n{}", String::from_utf8_lossy(&output.stderr));
    assert!(stdout.contains("(3 runs, --time-scale 1, run k") && stdout.contains("measured samples agree"), "{stdout}");
    let summary: serde_json::Value = serde_json::from_str(
        &std::fs::read_to_string(dir.path().join("out-emulated/summary.json")).expect("summary.json"),
    )
    .expect("json");
    assert_eq!(summary["replications"], 3);
    let values: Vec<f64> = summary["variants"][0]["metrics"]["amplification"]["values"]
        .as_array()
        .expect("values")
        .iter()
        .filter_map(serde_json::Value::as_f64)
        .collect();
    assert_eq!(values.len(), 3);
    assert!(values.iter().any(|&v| v != values[0]), "three runs, one outcome: {values:?}");
    // The flag is checked like the others.
    let output = Command::new(env!("CARGO_BIN_EXE_retrystorm"))
        .arg("compare")
        .arg(&scenario)
        .args(["--emulate", "--emulate-runs", "0", "--out"])
        .arg(dir.path().join("refused"))
        .output()
        .expect("binary runs");
    assert_eq!(output.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&output.stderr).contains("--emulate-runs 0: give 1 to 50"));
}

/// A real endpoint written with the standard library alone: on 127.0.0.1, it answers each
/// request's first attempt 503 and any later one 200, records the request lines it saw, and
/// stops after `connections` connections (or 30 s).
fn first_attempt_fails_endpoint(connections: usize) -> (std::net::SocketAddr, std::thread::JoinHandle<Vec<String>>) {
    use std::io::{BufRead, BufReader, Write};
    let listener = std::net::TcpListener::bind("127.0.0.1:0").expect("bind 127.0.0.1");
    let addr = listener.local_addr().expect("addr");
    let handle = std::thread::spawn(move || {
        let until = std::time::Instant::now() + std::time::Duration::from_secs(30);
        listener.set_nonblocking(true).expect("nonblocking");
        let mut seen = Vec::new();
        while seen.len() < connections && std::time::Instant::now() < until {
            let Ok((stream, _)) = listener.accept() else {
                std::thread::sleep(std::time::Duration::from_millis(1));
                continue;
            };
            stream.set_nonblocking(false).expect("blocking");
            let mut reader = BufReader::new(stream.try_clone().expect("clone"));
            let mut request_line = String::new();
            let _ = reader.read_line(&mut request_line);
            let mut attempt = 1;
            loop {
                let mut line = String::new();
                if reader.read_line(&mut line).unwrap_or(0) == 0 || line == "\r\n" {
                    break;
                }
                if let Some(v) = line.to_ascii_lowercase().strip_prefix("x-retrystorm-attempt:") {
                    attempt = v.trim().parse().unwrap_or(1);
                }
            }
            let status = if attempt == 1 { "503 Service Unavailable" } else { "200 OK" };
            let mut stream = stream;
            let _ = write!(stream, "HTTP/1.1 {status}\r\ncontent-length: 0\r\nconnection: close\r\n\r\n");
            seen.push(request_line.trim_end().to_string());
        }
        seen
    });
    (addr, handle)
}

#[test]
fn a_target_replaces_a_hop_by_a_real_endpoint_on_this_machine() {
    // 20 requests to an endpoint that fails every first attempt: each takes exactly 2 attempts,
    // counted by the caller (the endpoint counts nothing for us), and every one succeeds.
    let dir = tempfile::tempdir().expect("temp dir");
    let scenario = dir.path().join("tiny.toml");
    let text = TINY_HERD
        .replace("clients = 300", "clients = 20")
        .replace("[[fault]]\nhop = \"api\"\nkind = \"outage\"\nfrom = \"0s\"\nto = \"3s\"\n", "");
    std::fs::write(&scenario, text).expect("write scenario");
    let (addr, endpoint) = first_attempt_fails_endpoint(40);
    let out = dir.path().join("out");
    let output = Command::new(env!("CARGO_BIN_EXE_retrystorm"))
        .arg("emulate")
        .arg(&scenario)
        .arg("--target")
        .arg(format!("api=http://{addr}/hook?x=1"))
        .args(["--allow-late", "--max-seconds", "20", "--quiet", "--out"])
        .arg(&out)
        .output()
        .expect("binary runs");
    assert_eq!(output.status.code(), Some(0), "{}", String::from_utf8_lossy(&output.stderr));
    let seen = endpoint.join().expect("endpoint thread");
    assert_eq!(seen.len(), 40, "the endpoint saw {} requests", seen.len());
    assert!(seen.iter().all(|l| l == "GET /hook?x=1 HTTP/1.1"), "{:?}", &seen[..3]);
    let summary: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(out.join("summary.json")).expect("summary")).expect("json");
    let metric = |name: &str| summary["variants"][0]["metrics"][name]["mean"].as_f64().expect("a mean");
    assert_eq!((metric("requests"), metric("attempts"), metric("succeeded")), (20.0, 40.0, 20.0));
    // A real endpoint does not say how long it held a request: no loopback time is made up.
    assert_eq!(summary["emulation"]["loopback_samples"].as_u64(), Some(0));
    // Off this machine only with the flag; a hop the scenario does not have is named.
    for (target, needle) in [
        ("api=http://192.0.2.1:80/", "not on this machine"),
        ("db=http://127.0.0.1:9/", "has no hop `db`"),
        ("api=https://127.0.0.1:9/", "only http://"),
    ] {
        let output = Command::new(env!("CARGO_BIN_EXE_retrystorm"))
            .arg("emulate")
            .arg(&scenario)
            .args(["--target", target, "--out"])
            .arg(dir.path().join("refused"))
            .output()
            .expect("binary runs");
        assert_eq!(output.status.code(), Some(2), "{target}");
        let stderr = String::from_utf8_lossy(&output.stderr);
        assert!(stderr.contains(needle), "{target}: {stderr}");
        assert!(!dir.path().join("refused").exists());
    }
}

#[test]
fn an_unsupported_feature_is_refused_by_name_with_exit_code_2_and_nothing_written() {
    let dir = tempfile::tempdir().expect("temp dir");
    let out = dir.path().join("out");
    let output = Command::new(env!("CARGO_BIN_EXE_retrystorm"))
        .args(["emulate", "scenarios/overload-shedding.toml", "--out"])
        .arg(&out)
        .output()
        .expect("binary runs");
    assert_eq!(output.status.code(), Some(2));
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert!(stderr.contains("a `capacity` fault") && stderr.contains("not emulated"), "{stderr}");
    assert!(!out.exists(), "a refused run wrote {}", out.display());
    // `compare --emulate` refuses before it simulates, writing neither directory.
    let output = Command::new(env!("CARGO_BIN_EXE_retrystorm"))
        .args(["compare", "scenarios/overload-shedding.toml", "--emulate", "--quiet", "--out"])
        .arg(&out)
        .output()
        .expect("binary runs");
    assert_eq!(output.status.code(), Some(2));
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert!(stderr.contains("--emulate, variant") && stderr.contains("`capacity` fault"), "{stderr}");
    assert!(!out.exists() && !dir.path().join("out-emulated").exists());
    // A fault kind the emulator does not reproduce is named too.
    let scenario = dir.path().join("lost.toml");
    let text = TINY_HERD.replace("kind = \"outage\"", "kind = \"lost_reply\"\np = 0.5");
    std::fs::write(&scenario, text).expect("write scenario");
    let output = Command::new(env!("CARGO_BIN_EXE_retrystorm"))
        .arg("emulate")
        .arg(&scenario)
        .arg("--out")
        .arg(&out)
        .output()
        .expect("binary runs");
    assert_eq!(output.status.code(), Some(2));
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert!(stderr.contains("`lost_reply` fault"), "{stderr}");
    assert!(!out.exists());
    // A client's work per attempt outside (0, 100 ms] names the flag and the fix.
    for bad in ["0ms", "1s", "fast"] {
        let output = Command::new(env!("CARGO_BIN_EXE_retrystorm"))
            .args(["emulate", "scenarios/outage-herd.toml", "--client-work", bad, "--out"])
            .arg(&out)
            .output()
            .expect("binary runs");
        assert_eq!(output.status.code(), Some(2));
        let stderr = String::from_utf8_lossy(&output.stderr);
        assert!(stderr.contains(&format!("--client-work {bad}:")) && stderr.contains("e.g. 0.2ms"), "{stderr}");
        assert!(!out.exists());
    }
}

#[test]
fn an_emulated_run_is_marked_and_plot_renders_it_unchanged() {
    let dir = tempfile::tempdir().expect("temp dir");
    let scenario = dir.path().join("tiny.toml");
    // Smaller still: 100 clients, a 1 s outage (about 3 s of wall time).
    let text = TINY_HERD.replace("clients = 300", "clients = 100").replace("to = \"3s\"", "to = \"1s\"");
    std::fs::write(&scenario, text).expect("write scenario");
    let out = dir.path().join("out");
    let output = Command::new(env!("CARGO_BIN_EXE_retrystorm"))
        .arg("emulate")
        .arg(&scenario)
        .args(["--allow-late", "--max-seconds", "30", "--quiet", "--out"])
        .arg(&out)
        .output()
        .expect("binary runs");
    assert!(output.status.success(), "{}", String::from_utf8_lossy(&output.stderr));
    let summary: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(out.join("summary.json")).expect("summary")).expect("json");
    assert_eq!(summary["emulated"], serde_json::Value::Bool(true));
    assert_eq!(summary["replications"], 1);
    assert_eq!(summary["variants"][0]["metrics"]["requests"]["mean"], 100.0);
    let series = std::fs::read_to_string(out.join("timeseries.csv")).expect("timeseries");
    assert!(series.lines().count() > 10, "a series per bucket");
    let plot = Command::new(env!("CARGO_BIN_EXE_retrystorm")).arg("plot").arg(&out).output().expect("binary runs");
    assert!(plot.status.success(), "{}", String::from_utf8_lossy(&plot.stderr));
}

/// The two-sample Kolmogorov–Smirnov statistic: the largest gap between the empirical CDFs.
fn ks_statistic(a: &mut [f64], b: &mut [f64]) -> f64 {
    a.sort_by(f64::total_cmp);
    b.sort_by(f64::total_cmp);
    let (mut i, mut j, mut d) = (0, 0, 0.0f64);
    while i < a.len() && j < b.len() {
        let x = a[i].min(b[j]);
        while i < a.len() && a[i] <= x {
            i += 1;
        }
        while j < b.len() && b[j] <= x {
            j += 1;
        }
        d = d.max((i as f64 / a.len() as f64 - j as f64 / b.len() as f64).abs());
    }
    d
}

#[test]
fn backon_delays_follow_the_simulators_model_of_backon() {
    use rand::SeedableRng;
    use retrystorm::emulate::backon_client;
    use retrystorm::model::policy::{Jitter, JitterState, RetryPolicy};
    // The model of backon's ExponentialBuilder (min 50 ms, max 400 ms, factor 2, 6 retries):
    // equal jitter with base 100 ms and cap 800 ms, 7 attempts.
    let mut model = RetryPolicy::backoff("backon", Jitter::Equal, 100_000_000, 2.0, 800_000_000);
    model.attempts_max = 7;
    backon_client::check(&model, false).unwrap_or_else(|e| panic!("{e}"));
    let n = 2_000;
    let library: Vec<Vec<u64>> = (0..n).map(|i| backon_client::delays(&model, 1_000 + i).collect()).collect();
    // Attempts per request: backon stops after max_attempts − 1 retries, as the policy does.
    assert!(library.iter().all(|d| d.len() == 6), "backon gave {} delays", library[0].len());
    let mut rng = rand_chacha::ChaCha8Rng::seed_from_u64(99);
    // Retry 1 (the first delay), 3 (doubled twice) and 6 (past the cap).
    for retry in [1u32, 3, 6] {
        let mut ours: Vec<f64> =
            (0..n).map(|_| model.delay_before_retry(retry, &mut JitterState::default(), &mut rng) as f64).collect();
        let mut theirs: Vec<f64> = library.iter().map(|d| d[retry as usize - 1] as f64).collect();
        let d = ks_statistic(&mut theirs, &mut ours);
        // Two samples of n each at alpha = 0.01: reject when D > c(alpha)·√(2/n), c(0.01) =
        // √(−ln(0.005)/2) = 1.6276 (the asymptotic Kolmogorov quantile; exact enough at n = 2000).
        let critical = (-(0.005f64).ln() / 2.0).sqrt() * (2.0 / n as f64).sqrt();
        assert!(d <= critical, "retry {retry}: KS D = {d} > {critical}");
    }
    // And the test has power: the model with the cap left at backon's max_delay (400 ms) is
    // rejected at retry 6, where the two laws differ.
    let mut wrong = model.clone();
    wrong.cap = 400_000_000;
    let mut ours: Vec<f64> =
        (0..n).map(|_| wrong.delay_before_retry(6, &mut JitterState::default(), &mut rng) as f64).collect();
    let mut theirs: Vec<f64> = library.iter().map(|d| d[5] as f64).collect();
    assert!(ks_statistic(&mut theirs, &mut ours) > 0.5);
}

#[test]
fn a_small_herd_through_backon_agrees_with_the_simulated_equal_jitter() {
    // backon with min 50 ms, max 1 s: the scenario's equal jitter with base 100 ms, cap 2 s.
    let text = TINY_HERD.replace("jitter = \"full\"", "jitter = \"equal\"");
    let scenario = Scenario::from_source("tiny-herd-backon", &text, &[]).unwrap_or_else(|e| panic!("{e}"));
    let variants = scenario.run_variants();
    let simulated = run_study(&scenario, &variants, &RunOptions { threads: Some(2), progress: false });
    let options = Options { client: emulate::ClientMode::Backon, ..test_options() };
    let (record, emulation) = emulate_with(&scenario, &variants, &options);
    assert!(record.truncated.is_none(), "the run stopped early: {:?}", record.truncated);
    assert_arrivals_as_simulated(&scenario, &variants, &record);
    // Every retry of the tenant's clients had its own delay measured (the data `client_timing`
    // is fitted from): one per retry the tenant made.
    let retries = record.tenants[0].attempts - record.tenants[0].requests;
    assert!(retries > 0, "the tiny herd retries");
    assert_eq!(emulation.client_delays.n, retries, "one client delay per retry");
    assert!(emulation.client_delays.advice().is_some());
    let measured = retrystorm::runner::assemble(&scenario, &variants, vec![record], 1, emulation.wall_s);
    // Attempts per request and success, within the same 4-sd prediction band as above. Equal
    // jitter's delays are at least half the exponential's, so every request outlasts the
    // outage: success is 1 in every replication (no spread), and then must be 1 measured too.
    for metric in [Metric::Amplification, Metric::SuccessRatio] {
        let sd = assert_in_prediction_band(&simulated, &measured, metric, "");
        assert!(sd > 0.0 || metric == Metric::SuccessRatio, "{metric:?}: no spread among the replications");
    }
}

/// `compare --emulate` draws the measured load over the simulated range (`load_measured.svg`),
/// whose shaded range holds the simulated mean in every bucket.
#[test]
fn compare_emulate_draws_the_measured_load_over_the_simulated_range() {
    let scenario = Scenario::from_source("tiny-herd", TINY_HERD, &[]).unwrap_or_else(|e| panic!("{e}"));
    let variants = scenario.run_variants();
    let simulated = run_study(&scenario, &variants, &RunOptions { threads: Some(2), progress: false });
    let v = &simulated.variants[0];
    let attempts = retrystorm::runner::ATTEMPTS_COLUMN;
    let range = &v.attempts_range[0];
    assert_eq!(range.len(), v.hop_series[0].rows.len());
    for (b, (r, row)) in range.iter().zip(&v.hop_series[0].rows).enumerate() {
        assert!(r[0] <= row[attempts] + 1e-9 && row[attempts] <= r[1] + 1e-9, "bucket {b}: {r:?} {}", row[attempts]);
    }
    assert!(range.iter().any(|r| r[1] > r[0]), "the replications differ somewhere");
    let dir = tempfile::tempdir().expect("temp dir");
    let file = dir.path().join("tiny.toml");
    std::fs::write(&file, TINY_HERD).expect("write scenario");
    let out = dir.path().join("out");
    let output = Command::new(env!("CARGO_BIN_EXE_retrystorm"))
        .arg("compare")
        .arg(&file)
        .args(["--emulate", "--allow-late", "--replications", "5", "--out"])
        .arg(&out)
        .output()
        .expect("binary runs");
    assert!(output.status.success(), "{}", String::from_utf8_lossy(&output.stderr));
    let svg = std::fs::read_to_string(dir.path().join("out-emulated/load_measured.svg")).expect("the overlay chart");
    assert!(svg.contains("simulated range over 5 replications") && svg.contains("tiny-herd"), "{svg:.300}");
    assert!(dir.path().join("out-emulated/load_measured.png").is_file());
    let manifest = std::fs::read_to_string(dir.path().join("out-emulated/manifest.json")).expect("a manifest");
    assert!(manifest.contains("load_measured.svg") && manifest.contains("load_measured.png"), "{manifest}");
    assert!(manifest.contains("comparison.csv"), "{manifest}");
    // The report says it was measured, where, and leads with the comparison: the same rows as
    // comparison.csv and summary.json, the trigger's peak among them, and the machine's warnings.
    let report = std::fs::read_to_string(dir.path().join("out-emulated/report.html")).expect("report");
    let csv = std::fs::read_to_string(dir.path().join("out-emulated/comparison.csv")).expect("comparison.csv");
    let summary: serde_json::Value = serde_json::from_str(
        &std::fs::read_to_string(dir.path().join("out-emulated/summary.json")).expect("summary.json"),
    )
    .expect("json");
    let rows = summary["emulation"]["comparison"]["rows"].as_array().expect("comparison rows in summary.json");
    assert_eq!(csv.lines().count(), rows.len() + 1, "{csv}");
    assert!(csv.starts_with("variant,metric,simulated,measured,inside"), "{csv}");
    let peak = retrystorm::metrics::catalogue::Metric::PeakOverCapacity.def().label;
    assert!(rows.iter().any(|r| r["metric"] == peak), "no trigger peak row: {rows:?}");
    assert!(report.contains("measured") && report.contains("127.0.0.1"), "{report:.2000}");
    let measured_at = report.find("id=\"measured\"").expect("a Measured section");
    let verdict_at = report.find("id=\"verdict\"").expect("a verdict");
    assert!(measured_at < verdict_at, "the measurement comes first");
    for r in rows {
        let cell = r["simulated"].as_str().expect("a cell");
        assert!(report.contains(cell.replace('&', "&amp;").as_str()), "report lacks {cell}");
    }
    for w in summary["emulation"]["warnings"].as_array().expect("warnings") {
        let w = w.as_str().expect("text");
        let first_words: String = w.chars().take(40).collect();
        assert!(report.contains(&first_words), "report lacks the warning {w}");
    }
    assert!(!summary["emulation"]["warnings"].as_array().unwrap().is_empty() || report.contains("no warnings"));
    let first_chart = report.find("<figure id=\"").map(|i| &report[i + 12..i + 30]);
    assert!(first_chart.is_some_and(|c| c.starts_with("load_measured")), "{first_chart:?}");
}
