//! Load-dependent latency and autoscaling against exact arithmetic and queueing
//! theory: the multiplier applied at a known utilisation, an M/M/1 whose service rate the
//! multiplier divides, and the target-tracking controller's timeline on deterministic
//! closed-loop scenarios whose utilisation is known at every instant — of workers, and of
//! replicas behind the balancer (a scale-down drains the removed replicas, dropping nothing).

mod common;
use common::*;
use retrystorm::metrics::RunRecord;
use retrystorm::model::sim::run;
use retrystorm::runner::WORKERS_COLUMN;
use retrystorm::scenario::Scenario;

/// A scenario from text (the tests' own small systems).
fn inline(text: &str) -> Scenario {
    Scenario::from_source("inline.toml", text, &[]).unwrap_or_else(|e| panic!("{e}"))
}

/// `clients` closed-loop clients with no think time against one hop: the number of attempts in
/// the hop is exactly `clients` at every instant.
fn closed_loop(clients: u32, hop: &str) -> String {
    format!(
        r#"
name = "closed"
seed = 3
horizon = "150s"
bucket = "1s"
[[tenant]]
name = "t"
clients = {clients}
arrival = {{ kind = "closed", start = "0s", spread = "0s", think = "0s" }}
policy = "once"
[policy.once]
jitter = "none"
max_attempts = 1
[[hop]]
name = "api"
service = {{ dist = "constant", mean = "100ms" }}
{hop}
"#
    )
}

fn one_run(s: &Scenario) -> RunRecord {
    run(&s.base, s.seed, 0)
}

/// Mean success latency of a run, in seconds.
fn mean_latency_s(r: &RunRecord) -> f64 {
    r.tenants[0].latency_us.to_histogram().mean() / 1e6
}

#[test]
fn the_multiplier_is_applied_exactly_at_a_known_utilisation() {
    // One closed-loop client: every service starts with exactly one busy worker (itself), so
    // u = 1/workers and every service takes 100 ms × factor(u), which is the latency.
    let cases = [
        (r#"load_latency = { kind = "linear", slope = 2.0 }"#, 4, 1.0 + 2.0 * 0.25),
        (r#"load_latency = { kind = "linear", slope = 2.0 }"#, 1, 3.0),
        (r#"load_latency = { kind = "polynomial", coefficient = 4.0, exponent = 3.0 }"#, 4, 1.0 + 4.0 / 64.0),
        (r#"load_latency = { kind = "polynomial", coefficient = 4.0 }"#, 2, 1.0 + 4.0 * 0.25),
        (r#"load_latency = { kind = "exponential", rate = 4.0 }"#, 10, 0.4f64.exp()),
        (r#"load_latency = { kind = "exponential", rate = 4.0 }"#, 1, 4f64.exp()),
    ];
    for (field, workers, factor) in cases {
        let s = inline(&closed_loop(1, &format!("workers = {workers}\n{field}")));
        let r = one_run(&s);
        let expected = 0.1 * factor;
        let per_service = mean_service_s(&r);
        // Service times are whole nanoseconds: the rounding is below 1 ns per service.
        assert!(
            (per_service - expected).abs() < 1e-9,
            "{field}, {workers} workers: {per_service} s per service, expected {expected}"
        );
        let latency = mean_latency_s(&r);
        // The latency histogram keeps 3 significant digits.
        assert!((latency - expected).abs() < expected * 1e-3, "{field}: mean latency {latency}, expected {expected}");
    }
}

/// Mean service time at hop 0 (busy time ÷ services started), in seconds.
fn mean_service_s(r: &RunRecord) -> f64 {
    r.hops[0].busy_ns as f64 / 1e9 / r.hops[0].services_started as f64
}

#[test]
fn a_full_single_worker_is_an_mm1_with_the_service_rate_divided_by_the_multiplier() {
    // One worker: every service starts at u = 1, so the exponential draw is multiplied by
    // 1 + slope exactly: an M/M/1 with μ' = μ/(1 + slope). λ = 400/s, μ = 1,000/s, slope 1:
    // μ' = 500/s, ρ = 0.8, W = 1/(μ' − λ) = 10 ms (twice the plain mm1's 5 ms at the same ρ).
    let s = scenario(
        "mm1",
        &["hop.server.load_latency={ kind = \"linear\", slope = 1.0 }", "tenant.customers.arrival.rate_per_s=400.0"],
    );
    let runs: Vec<RunRecord> = (0..u64::from(s.replications)).map(|r| run(&s.base, s.seed, r)).collect();
    let means: Vec<f64> = runs.iter().map(mean_latency_s).collect();
    let (lo, hi) = t_interval(&means, 0.99);
    assert!(lo <= 0.010 && 0.010 <= hi, "mean time in system: 99% CI [{lo}, {hi}] misses 10 ms");
    // And the mean service time itself: 2 ms (busy time ÷ services), within its own 99% CI.
    let services: Vec<f64> = runs.iter().map(mean_service_s).collect();
    let (lo, hi) = t_interval(&services, 0.99);
    assert!(lo <= 0.002 && 0.002 <= hi, "mean service: 99% CI [{lo}, {hi}] misses 2 ms");
}

/// Workers at the end of bucket `b` (1 s buckets) of hop 0.
fn workers_at(r: &RunRecord, b: usize) -> u32 {
    r.hop_series[0][b].workers
}

#[test]
fn scale_up_waits_for_the_evaluation_period_and_the_provisioning_delay() {
    // 8 clients, 2 workers of 100 ms: utilisation is exactly 1 until capacity reaches 8.
    // Target 0.5, decisions every 10 s, 30 s to provision, max 10 workers:
    //   t = 10: desired ⌈2 × 1 / 0.5⌉ = 4 → launched, serving at t = 40 (ticks at 20 and 30 see
    //           4 = 2 online + 2 provisioning: nothing more);
    //   t = 40: 4 online, u = 1 over [30, 40] → desired 8, serving at t = 70;
    //   t = 70: 8 online, u = 1 → desired 16, clamped to max 10, serving at t = 100;
    //   then u = 0.8 → desired 16 → 10: no change.
    let hop = r#"workers = 2
autoscale = { target = 0.5, evaluation_period = "10s", scale_up_delay = "30s", scale_down_cooldown = "25s", max = 10 }"#;
    let s = inline(&closed_loop(8, hop));
    let r = one_run(&s);
    for (t, w) in [(0, 2), (39, 2), (40, 4), (69, 4), (70, 8), (99, 8), (100, 10), (149, 10)] {
        assert_eq!(workers_at(&r, t), w, "workers at the end of second {t}");
    }
    let c = &r.hops[0];
    assert_eq!((c.workers_peak, c.scale_ups), (10, 3));
    // Worker-seconds over [0, 150]: 2 × 40 + 4 × 30 + 8 × 30 + 10 × 50.
    assert_eq!(c.worker_ns, 940 * 1_000_000_000);
    assert_eq!(c.scale_up_after_trigger_ns, None, "no trigger in this scenario");
    // Throughput follows capacity: 2 workers serve 20/s, 10 workers serve the 8 clients at 80/s.
    assert_eq!(r.hop_series[0][20].successes, 20);
    assert_eq!(r.hop_series[0][120].successes, 80);
}

#[test]
fn scale_down_waits_for_the_cooldown_and_stops_at_min() {
    // One client, 8 workers in units of 2 (4 units): u = 1/8 at every instant, so desired =
    // ⌈4 × 0.125 / 0.5⌉ = 1 unit, clamped to min = 2 units (4 workers). The cooldown of 25 s
    // counts from t = 0: the ticks at 10 and 20 s must wait, the one at 30 s shrinks the hop.
    // Then u = 1/4 → desired 1 → min 2: no further change.
    let hop = r#"workers = 8
autoscale = { target = 0.5, evaluation_period = "10s", scale_up_delay = "0s", scale_down_cooldown = "25s", min = 2, max = 4, step = 2 }"#;
    let s = inline(&closed_loop(1, hop));
    let r = one_run(&s);
    for (t, w) in [(0, 8), (29, 8), (30, 4), (149, 4)] {
        assert_eq!(workers_at(&r, t), w, "workers at the end of second {t}");
    }
    assert_eq!((r.hops[0].workers_peak, r.hops[0].scale_ups), (8, 0));
    assert_eq!(r.hops[0].worker_ns, (8 * 30 + 4 * 120) * 1_000_000_000);
}

#[test]
fn the_first_scale_up_after_a_spike_comes_one_period_plus_the_provisioning_delay_later() {
    // 10/s on one 10 ms worker (u ≈ 0.1, desired 1 = min) until a spike to 300/s at t = 20 s.
    // The window [20, 30) is all spike (u ≈ 1 > 0.5): the tick at 30 s launches, and the new
    // workers serve 5 s later, 15 s after the trigger's start.
    let text = r#"
name = "spike"
seed = 5
horizon = "60s"
bucket = "1s"
[[tenant]]
name = "t"
clients = 100
arrival = { kind = "profile", steps = [{ from = "0s", rate_per_s = 10.0 }, { from = "20s", rate_per_s = 300.0 }, { from = "40s", rate_per_s = 10.0 }] }
policy = "once"
[policy.once]
jitter = "none"
max_attempts = 1
[[hop]]
name = "api"
workers = 1
service = { dist = "constant", mean = "10ms" }
autoscale = { target = 0.5, evaluation_period = "10s", scale_up_delay = "5s", scale_down_cooldown = "60s", max = 8 }
"#;
    let s = inline(text);
    for rep in 0..3 {
        let r = run(&s.base, s.seed, rep);
        assert_eq!(r.hops[0].scale_up_after_trigger_ns, Some(15_000_000_000), "replication {rep}");
        assert_eq!(workers_at(&r, 34), 1, "provisioning: nothing serves before t = 35 s");
        assert_eq!(workers_at(&r, 35), 2, "u ≈ 1 over [20, 30): desired ⌈1 × 1 / 0.5⌉ = 2");
    }
}

#[test]
fn the_workers_series_is_a_timeseries_column() {
    let hop = r#"workers = 2
autoscale = { target = 0.5, evaluation_period = "10s", scale_up_delay = "30s", max = 10 }"#;
    let s = inline(&closed_loop(8, hop));
    let study = retrystorm::runner::run_study(&s, &s.run_variants(), &retrystorm::runner::RunOptions::default());
    let rows = &study.variants[0].hop_series[0].rows;
    assert_eq!((rows[39][WORKERS_COLUMN], rows[40][WORKERS_COLUMN]), (2.0, 4.0));
    let v = &study.variants[0];
    assert_eq!(values(hop_metric(v, "api", "workers_peak")), vec![10.0]);
    assert_eq!(values(hop_metric(v, "api", "worker_seconds")), vec![940.0]);
}

// Autoscaling of replicas (`unit = "replicas"`).

fn refused(text: &str) -> String {
    match Scenario::from_source("inline.toml", text, &[]) {
        Ok(_) => panic!("accepted:\n{text}"),
        Err(e) => e.to_string(),
    }
}

/// Attempts the balancer sent replica `replica` of hop 0 over buckets `from..to`.
fn routed(r: &RunRecord, replica: u32, from: usize, to: usize) -> u64 {
    let rec = r.replicas.iter().find(|x| x.hop == 0 && x.replica == replica).expect("replica record");
    rec.series[from..to].iter().map(|b| u64::from(b.attempts)).sum()
}

#[test]
fn replicas_scale_up_after_the_evaluation_period_and_the_provisioning_delay() {
    // 8 clients on 2 replicas of 1 worker × 100 ms: utilisation is exactly 1 until 8 replicas
    // serve. Target 0.5, decisions every 10 s, 30 s to provision, at most 10 replicas — the
    // timeline of tests/scaling.rs's worker test, in replicas:
    //   t = 10: desired ⌈2 × 1 / 0.5⌉ = 4 → serving at 40; t = 40: 8 → serving at 70;
    //   t = 70: 16 clamped to 10 → serving at 100; then u = 0.8 → desired 16 → 10: no change.
    for balancer in ["least_connections", "round_robin", "random", "power_of_two"] {
        let hop = format!(
            r#"workers = 1
replicas = 2
balancer = "{balancer}"
autoscale = {{ target = 0.5, evaluation_period = "10s", scale_up_delay = "30s", scale_down_cooldown = "25s", max = 10 }}"#
        );
        let s = inline(&closed_loop(8, &hop));
        assert_eq!(s.base.hops[0].replicas.count, 10, "{balancer}: every replica up to max is allocated");
        let r = run(&s.base, s.seed, 0);
        for (t, w) in [(0, 2), (39, 2), (40, 4), (69, 4), (70, 8), (99, 8), (100, 10), (149, 10)] {
            assert_eq!(r.hop_series[0][t].workers, w, "{balancer}: workers (= replicas) at the end of second {t}");
        }
        let c = &r.hops[0];
        assert_eq!((c.workers_peak, c.scale_ups), (10, 3), "{balancer}");
        assert_eq!(c.worker_ns, 940 * 1_000_000_000, "{balancer}: 2 × 40 + 4 × 30 + 8 × 30 + 10 × 50 replica-seconds");
        // The balancer routes only to the active replicas: replica 2 gets its first attempt once
        // 4 serve (at 40 s), replicas 8 and 9 once 10 serve (at 100 s).
        assert_eq!(routed(&r, 2, 0, 40), 0, "{balancer}: replica 2 before it serves");
        assert!(routed(&r, 2, 40, 150) > 0, "{balancer}: replica 2 after it serves");
        assert_eq!(routed(&r, 7, 0, 70), 0, "{balancer}: replica 7 before it serves");
        assert!(routed(&r, 7, 70, 150) > 0, "{balancer}: replica 7 after it serves");
        // (Least connections never needs replicas 8 and 9 for 8 clients: a freed lower replica
        // ties at 0 and wins.)
        assert_eq!(routed(&r, 9, 0, 100), 0, "{balancer}: replica 9 before it serves");
        // Throughput follows capacity: 2 replicas serve 20/s; with 10, least connections gives
        // each of the 8 clients a replica of its own: 80/s (random choices collide).
        assert_eq!(r.hop_series[0][20].successes, 20, "{balancer}");
        if balancer == "least_connections" {
            assert_eq!(r.hop_series[0][120].successes, 80);
        }
    }
}

#[test]
fn a_scale_down_drains_the_removed_replicas_and_drops_nothing() {
    // One closed-loop client (1 s service, 2.2 s think) on 4 round-robin replicas of 1 worker:
    // requests at 0, 3.2, 6.4 and 9.6 s go to replicas 0, 1, 2 and 3. Over [0, 10) the
    // utilisation is 3.4 s ÷ 40 worker-s = 0.085, so the tick at 10 s (cooldown 5 s) wants
    // ⌈4 × 0.085 / 0.5⌉ = 1 replica while replica 3 still serves until 10.6 s: it drains (its
    // reply arrives), and no new request goes to replicas 1 to 3. One replica then stays enough
    // (u = 1 ÷ 3.2 < 0.5).
    let text = r#"
name = "drain"
seed = 9
horizon = "30s"
bucket = "1s"
[[tenant]]
name = "t"
clients = 1
arrival = { kind = "closed", start = "0s", spread = "0s", think = "2200ms" }
policy = "once"
[policy.once]
jitter = "none"
max_attempts = 1
[[hop]]
name = "api"
workers = 1
replicas = 4
balancer = "round_robin"
service = { dist = "constant", mean = "1s" }
autoscale = { target = 0.5, evaluation_period = "10s", scale_up_delay = "0s", scale_down_cooldown = "5s", min = 1, max = 4 }
"#;
    let s = inline(text);
    let r = run(&s.base, s.seed, 0);
    let t = &r.tenants[0];
    assert_eq!((t.succeeded, t.dlq), (t.requests, 0), "nothing is dropped");
    assert_eq!((r.hop_series[0][9].workers, r.hop_series[0][10].workers), (4, 1));
    assert_eq!(r.hop_series[0][29].workers, 1);
    let rec = |replica: u32| r.replicas.iter().find(|x| x.replica == replica).expect("record");
    assert_eq!(rec(3).series[9].attempts, 1, "the request of 9.6 s went to replica 3");
    assert_eq!(rec(3).series[10].successes, 1, "replica 3 finished it after the scale-down");
    for replica in 1..4 {
        assert_eq!(routed(&r, replica, 10, r.hop_series[0].len()), 0, "replica {replica} after the scale-down");
    }
    assert!(routed(&r, 0, 10, 30) >= 6, "the client's later requests all go to replica 0");
    assert_eq!(r.hops[0].worker_ns, (4 * 10 + 20) * 1_000_000_000, "replica-seconds");
}

#[test]
fn the_capacity_series_and_metrics_count_workers_times_replicas() {
    // A fixed 3-replica hop of 4 workers: the workers column is the hop's capacity, 12, and so
    // are workers_peak and worker_seconds (12 × the horizon).
    let s = inline(&closed_loop(2, "workers = 4\nreplicas = 3\nbalancer = \"round_robin\""));
    let study = retrystorm::runner::run_study(&s, &s.run_variants(), &retrystorm::runner::RunOptions::default());
    let v = &study.variants[0];
    assert!(v.hop_series[0].rows.iter().all(|r| r[WORKERS_COLUMN] == 12.0));
    assert_eq!(values(hop_metric(v, "api", "workers_peak")), vec![12.0]);
    assert_eq!(values(hop_metric(v, "api", "worker_seconds")), vec![12.0 * 150.0]);
}

#[test]
fn validation_names_the_field_the_value_and_the_fix() {
    let with = |hop: &str| closed_loop(1, hop);
    let cases = [
        (
            "workers = 2\nreplicas = 3\nautoscale = { target = 0.5, max = 6, unit = \"workers\" }",
            &["hop.api.autoscale.unit", "\"workers\"", "replicas = 3", "unit = \"replicas\""][..],
        ),
        (
            "workers = 2\nreplicas = 3\nautoscale = { target = 0.5, max = 6, unit = \"pods\" }",
            &["hop.api.autoscale.unit", "pods", "replicas, workers"][..],
        ),
        (
            "workers = 2\nreplicas = 3\nautoscale = { target = 0.5, max = 6, step = 2 }",
            &["hop.api.autoscale.step", "is 2", "remove step"][..],
        ),
        (
            "workers = 2\nreplicas = 3\nautoscale = { target = 0.5, min = 4, max = 6 }",
            &["hop.api.autoscale", "replicas = 3", "[4, 6]", "4..=6"][..],
        ),
        (
            "workers = 2\nreplicas = 3\nautoscale = { target = 0.5, max = 1001 }",
            &["hop.api.autoscale.max", "1001", "between 1 and 1000"][..],
        ),
        (
            "workers = 20000\nreplicas = 3\nautoscale = { target = 0.5, max = 1000 }",
            &["hop.api.autoscale.max", "1000 replicas with 20000 workers", "at most 10000000"][..],
        ),
    ];
    for (hop, needles) in cases {
        let e = refused(&with(hop));
        for n in needles {
            assert!(e.contains(n), "`{n}` missing from: {e}");
        }
    }
    // A balancer on a one-replica hop is refused, unless autoscaling may add replicas.
    let e = refused(&with("workers = 1\nbalancer = \"random\""));
    assert!(e.contains("hop.api.balancer"), "{e}");
    let s =
        inline(&with("workers = 1\nbalancer = \"random\"\nautoscale = { unit = \"replicas\", target = 0.5, max = 4 }"));
    assert_eq!((s.base.hops[0].replicas.count, s.base.hops[0].replicas_at_start()), (4, 1));
    // Without `unit`, a one-replica hop scales its workers, as before.
    let s = inline(&with("workers = 4\nautoscale = { target = 0.5, max = 8 }"));
    assert_eq!(s.base.hops[0].replicas.count, 1);
}
