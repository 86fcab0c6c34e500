//! Replicas behind a load balancer: the balancers against queueing theory, faults on
//! one replica, health checks and outlier ejection timed exactly, and the two Stability Sim
//! examples' claims (lb-sinkholing, metastable-retry).
//!
//! Statistical checks use the Student-t interval over independent replications (fixed seeds):
//! a correct engine misses a 99% interval with probability 1%.

mod common;
use common::*;
use retrystorm::runner::VariantResult;

fn variant<'a>(study: &'a retrystorm::runner::Study, name: &str) -> &'a VariantResult {
    study.variants.iter().find(|v| v.name == name).unwrap_or_else(|| panic!("no variant {name}"))
}

/// Metric `metric` of replica `name` (`HOP[i]`) of variant `v`, per replication.
fn replica_values(v: &VariantResult, name: &str, metric: &str) -> Vec<f64> {
    let row = &v.replicas.iter().find(|(n, _)| n == name).unwrap_or_else(|| panic!("no replica {name}")).1;
    values(row.get(catalogued(metric)).unwrap_or_else(|| panic!("no {metric} for {name}")))
}

fn mean(xs: &[f64]) -> f64 {
    xs.iter().sum::<f64>() / xs.len() as f64
}

/// M/M/c split over replicas: λ = 3,200/s, two replicas of two workers each, μ = 1,000/s.
const MMC_SPLIT: [&str; 5] =
    ["hop.server.replicas=2", "hop.server.workers=2", "horizon=\"30s\"", "replications=10", "seed=15"];

#[test]
fn random_split_of_poisson_arrivals_gives_each_replica_an_mmc_queue() {
    // A random split of a Poisson stream is two independent Poisson streams of λ/2, so each
    // replica is M/M/2 with a = 1.6 erlangs (ρ = 0.8): Wq = C(2, 1.6) / (2μ − λ/2) (Erlang C).
    let wq = erlang_c(2, 1.6) / (2000.0 - 1600.0);
    assert!((wq - 0.001_778).abs() < 1e-6, "Erlang C arithmetic: {wq}");
    let mut sets = MMC_SPLIT.to_vec();
    sets.push("hop.server.balancer=\"random\"");
    let study = study("mmc", &sets);
    let v = &study.variants[0];
    let (lo, hi) = t_interval(&values(hop_metric(v, "server", "queue_wait_s_mean")), 0.99);
    assert!(lo <= wq && wq <= hi, "Wq 99% CI [{lo}, {hi}] misses Erlang C {wq}");
    // Each attempt goes to replica 0 with probability 1/2: its count is Binomial(n, 1/2).
    // Over all replications together, |count − n/2| ≤ 4.4 sd (two-sided p ≈ 1e-5).
    let a0: f64 = replica_values(v, "server[0]", "attempts").iter().sum();
    let a1: f64 = replica_values(v, "server[1]", "attempts").iter().sum();
    let n = a0 + a1;
    let sd = (n * 0.25).sqrt();
    assert!((a0 - n / 2.0).abs() <= 4.4 * sd, "replica 0 got {a0} of {n} (sd {sd:.0})");
    let shares = replica_values(v, "server[0]", "traffic_share");
    assert!(shares.iter().all(|s| (s - 0.5).abs() < 0.01), "{shares:?}");
}

#[test]
fn round_robin_splits_exactly_and_queues_less_than_a_random_split() {
    let mut sets = MMC_SPLIT.to_vec();
    sets.push("hop.server.balancer=\"round_robin\"");
    let study = study("mmc", &sets);
    let v = &study.variants[0];
    // Round robin alternates: the counts differ by at most one in every replication.
    let (a0, a1) = (replica_values(v, "server[0]", "attempts"), replica_values(v, "server[1]", "attempts"));
    for (x, y) in a0.iter().zip(&a1) {
        assert!((x - y).abs() <= 1.0, "round robin split {x} / {y}");
    }
    // Every other Poisson arrival is an Erlang-2 stream (less variable than Poisson): each
    // replica is E2/M/2, which waits less than M/M/2 at the same load (Kingman).
    let wq = erlang_c(2, 1.6) / (2000.0 - 1600.0);
    let (_, hi) = t_interval(&values(hop_metric(v, "server", "queue_wait_s_mean")), 0.99);
    assert!(hi < wq, "round robin Wq 99% upper bound {hi} not below M/M/2's {wq}");
}

#[test]
fn power_of_two_choices_waits_less_than_random_on_the_same_arrivals() {
    // Ten replicas of one worker at ρ = 0.9: random gives ten M/M/1 queues (Wq = ρ/(μ − λ/10)
    // = 9 ms); two choices shorten queues sharply (Mitzenmacher). Same seeds: paired difference.
    let base = [
        "hop.server.replicas=10",
        "hop.server.workers=1",
        "tenant.customers.arrival.rate_per_s=9000.0",
        "horizon=\"20s\"",
        "replications=10",
        "seed=16",
    ];
    let run = |balancer: &str| {
        let mut sets = base.to_vec();
        let b = format!("hop.server.balancer=\"{balancer}\"");
        sets.push(&b);
        values(hop_metric(&study("mmc", &sets).variants[0], "server", "queue_wait_s_mean"))
    };
    let (random, p2c) = (run("random"), run("power_of_two"));
    let (lo, hi) = t_interval(&random, 0.99);
    assert!(lo <= 0.009 && 0.009 <= hi, "random: Wq 99% CI [{lo}, {hi}] misses M/M/1's 9 ms");
    let diff: Vec<f64> = p2c.iter().zip(&random).map(|(p, r)| p - r).collect();
    let (_, hi) = t_interval(&diff, 0.99);
    assert!(hi < 0.0, "power of two minus random: 99% upper bound {hi} is not below 0");
    assert!(mean(&p2c) < 0.5 * mean(&random), "two choices: {} vs random {}", mean(&p2c), mean(&random));
}

/// A study of the scenario `toml` (written to a scratch file).
fn study_of(toml: &str) -> retrystorm::runner::Study {
    let dir = workdir();
    let path = dir.path().join("replicas.toml");
    std::fs::write(&path, toml).unwrap();
    let s = retrystorm::scenario::Scenario::load(path.to_str().unwrap(), &[]).unwrap_or_else(|e| panic!("{e}"));
    retrystorm::runner::run_study(
        &s,
        &s.run_variants(),
        &retrystorm::runner::RunOptions { threads: Some(2), progress: false },
    )
}

/// Poisson clients at `rate`/s without retries against hop `server`: 3 replicas of 4 workers,
/// Exp(1 ms), round robin; `extra` is appended (hop fields first, then tables).
fn three_replicas(rate: f64, hop_extra: &str, tables: &str) -> String {
    format!(
        r#"name = "replicas"
seed = 7
horizon = "20s"
bucket = "1s"
replications = 4

[[tenant]]
name = "customers"
clients = 1
arrival = {{ kind = "poisson", rate_per_s = {rate} }}
policy = "once"

[policy.once]
jitter = "none"
max_attempts = 1
attempt_timeout = "1s"

[[hop]]
name = "server"
replicas = 3
workers = 4
service = {{ dist = "exponential", mean = "1ms" }}
{hop_extra}
{tables}"#
    )
}

#[test]
fn a_fault_on_one_replica_hits_only_that_replica() {
    // Round robin over 3 replicas; replica 1 fails 30% of its attempts for the whole run, replica
    // 2 is 4× slower. The client does not retry.
    let faults = r#"
[[fault]]
hop = "server"
replica = 1
kind = "error_rate"
p = 0.3
from = "0s"
to = "20s"

[[fault]]
hop = "server"
replica = 2
kind = "slow"
factor = 4.0
from = "0s"
to = "20s"
"#;
    let study = study_of(&three_replicas(600.0, "", faults));
    let v = &study.variants[0];
    let total = |r: &str, m: &str| replica_values(v, r, m).iter().sum::<f64>();
    assert_eq!((total("server[0]", "failed_replies"), total("server[2]", "failed_replies")), (0.0, 0.0));
    // Binomial(n, 0.3) failures at replica 1, within 4.4 sd.
    let n = total("server[1]", "attempts");
    let sd = (n * 0.3 * 0.7).sqrt();
    let failed = total("server[1]", "failed_replies");
    assert!((failed - 0.3 * n).abs() <= 4.4 * sd, "{failed} of {n}");
    // The slow replica works 4× as long per attempt: total busy time is (1 + 0.7 + 4) ms per
    // three attempts, the failed ones at replica 1 taking no service. A sum over ~48,000
    // exponential draws: its relative sd is under 1%; 5% is far outside chance.
    let busy = mean(&values(hop_metric(v, "server", "busy_s")));
    let expected = 20.0 * 600.0 * 0.001 * (1.0 + 0.7 + 4.0) / 3.0;
    assert!((busy - expected).abs() < 0.05 * expected, "busy {busy} s vs {expected} s");
}

/// Replica 0 is down (outage) over `windows`; the rest of the scenario as [`three_replicas`].
fn outages(windows: &[(u32, u32)]) -> String {
    windows
        .iter()
        .map(|(from, to)| {
            format!(
                "\n[[fault]]\nhop = \"server\"\nreplica = 0\nkind = \"outage\"\nfrom = \"{from}s\"\nto = \"{to}s\"\n"
            )
        })
        .collect()
}

#[test]
fn health_checks_take_a_crashed_replica_out_after_the_threshold_and_back_after_recovery() {
    // Probes every 500 ms (t = 0.5, 1, …); replica 0 down over [2 s, 6 s): probes at 2 and 2.5
    // fail → unhealthy at 2.5 s (threshold 2); probes at 6 and 6.5 succeed → healthy at 6.5 s
    // (threshold 2). Out of rotation exactly 4 s; meanwhile it gets no traffic.
    let hc = "health_check = { interval = \"500ms\", unhealthy_threshold = 2, healthy_threshold = 2 }";
    let study = study_of(&three_replicas(300.0, hc, &outages(&[(2, 6)])));
    let v = &study.variants[0];
    assert_eq!(replica_values(v, "server[0]", "out_of_rotation_s"), vec![4.0; 4]);
    assert_eq!(replica_values(v, "server[1]", "out_of_rotation_s"), vec![0.0; 4]);
    // Failures only while the fault is on and the checker has not noticed: 2 s to 2.5 s, a third
    // of 300/s: about 50 failed replies per run, never more than the attempts of that half second.
    let failed = replica_values(v, "server[0]", "failed_replies");
    assert!(failed.iter().all(|&f| f > 10.0 && f < 100.0), "{failed:?}");
    let series = &v.replica_series.iter().find(|s| s.name == "server[0]").unwrap().rows;
    for (b, row) in series.iter().enumerate().take(20) {
        let out = if (2..=6).contains(&b) { 1.0 } else { 0.0 };
        assert_eq!(row[4], out, "bucket {b}: out_of_rotation {}", row[4]);
        if (3..=5).contains(&b) {
            assert_eq!(row[0], 0.0, "bucket {b}: an unhealthy replica got traffic");
        }
    }
}

#[test]
fn outlier_ejection_grows_with_each_ejection_and_respects_the_cap() {
    // 5 consecutive 5xx eject replica 0 for 1 s, then 2 s (base × ejections). Outages at
    // [1, 2) and [5, 6): ejected at ~1.0 s for 1 s, at ~5.0 s for 2 s. Total out ≈ 3 s.
    let od = "outlier_detection = { consecutive_errors = 5, base_ejection_time = \"1s\", max_ejection_percent = 10.0 }";
    let study = study_of(&three_replicas(300.0, od, &outages(&[(1, 2), (5, 6)])));
    let v = &study.variants[0];
    assert_eq!(replica_values(v, "server[0]", "ejections"), vec![2.0; 4]);
    assert_eq!(replica_values(v, "server[0]", "out_of_rotation_s"), vec![3.0; 4]);
    // Ejected at its 5th failure in a row (~17 ms into each outage at 100/s per replica), back
    // after the first outage ended: exactly 5 failures per outage.
    assert_eq!(replica_values(v, "server[0]", "failed_replies"), vec![10.0; 4]);
    // Replicas 0 and 1 down over [1 s, 3 s). With the cap (10% of 3, and Envoy ejects at least
    // one) one is ejected at ~1 s for 1 s; the other only when that ejection ends (~2 s), for 1 s;
    // the first, failing again, cannot be ejected while the second is: one ejection each, 2 s out
    // in total. Without the cap (100%) both go at ~1 s, come back at ~2 s into the outage and go
    // again for 2 s: two ejections each, 6 s out in total.
    let both = format!("{}{}", outages(&[(1, 3)]), outages(&[(1, 3)]).replace("replica = 0", "replica = 1"));
    for (percent, ejections, out) in [(10.0, 2.0, 2.0), (100.0, 4.0, 6.0)] {
        let od = od.replace("10.0", &format!("{percent:.1}"));
        let study = study_of(&three_replicas(300.0, &od, &both));
        let v = &study.variants[0];
        let sum = |m: &str| -> Vec<f64> {
            let (a, b) = (replica_values(v, "server[0]", m), replica_values(v, "server[1]", m));
            a.iter().zip(&b).map(|(x, y)| x + y).collect()
        };
        assert_eq!(sum("ejections"), vec![ejections; 4], "max_ejection_percent {percent}");
        assert_eq!(sum("out_of_rotation_s"), vec![out; 4], "max_ejection_percent {percent}");
    }
}

#[test]
fn sinkholing_least_connections_feeds_the_crashed_replica_and_ejection_fixes_it() {
    let study = study("stability-lb-sinkholing", &["replications=8"]);
    let success = |name: &str| values(metric(variant(&study, name), "success_ratio"));
    let share0 = |name: &str| mean(&replica_values(variant(&study, name), "servers[0]", "traffic_share"));
    // As published: the crashed replica fails at once, keeps zero connections and gets most
    // of the traffic while down; the token bucket runs dry and requests fail: ~10 s of 60 lost.
    let published = success("as-published");
    let (lo, hi) = t_interval(&published, 0.99);
    assert!(hi < 0.9 && lo > 0.7, "as-published success 99% CI [{lo}, {hi}]");
    let series = &variant(&study, "as-published").replica_series[0].rows;
    let during: f64 = series[9..17].iter().map(|r| r[0]).sum();
    let all_during: f64 = variant(&study, "as-published")
        .replica_series
        .iter()
        .map(|s| s.rows[9..17].iter().map(|r| r[0]).sum::<f64>())
        .sum();
    assert!(during / all_during > 0.95, "crashed replica's share while down: {}", during / all_during);
    // Round robin sends it a third, retries land elsewhere: every request succeeds.
    assert!((share0("round-robin") - 1.0 / 3.0).abs() < 0.01);
    assert!(success("round-robin").iter().all(|&s| s > 0.999), "{:?}", success("round-robin"));
    // The gap is far larger than chance: paired difference of the success ratio.
    let diff: Vec<f64> = success("round-robin").iter().zip(&published).map(|(r, p)| r - p).collect();
    let (lo, _) = t_interval(&diff, 0.99);
    assert!(lo > 0.1, "round robin − least connections: 99% lower bound {lo}");
    // Outlier ejection takes the sinkhole out after 5 errors: success restored.
    assert!(success("least-connections-ejection").iter().all(|&s| s > 0.999));
    assert_eq!(replica_values(variant(&study, "least-connections-ejection"), "servers[0]", "ejections"), vec![1.0; 8]);
    // Backoff does not help: the retries still go to the sinkhole.
    let jitter = success("least-connections-jitter");
    let (lo, hi) = t_interval(&jitter, 0.99);
    assert!(hi < 0.9 && lo > 0.7, "jitter success 99% CI [{lo}, {hi}]");
}

#[test]
fn metastable_retry_storm_outlives_the_crash_and_a_retry_budget_prevents_it() {
    let study = study("stability-metastable-retry", &["replications=6"]);
    let v = variant(&study, "as-published");
    // Stuck: never recovers before the horizon, and most requests fail.
    assert_eq!(values(metric(v, "metastable")), vec![1.0; 6]);
    assert!(values(metric(v, "success_ratio")).iter().all(|&s| s < 0.3));
    // Load stays above capacity (100/s) long after the crash ended at 10 s: at 50 s, still
    // above 2× capacity in attempts per second.
    let load = &v.hop_series[0].rows;
    assert!(load[50][0] > 200.0, "attempts/s at 50 s: {}", load[50][0]);
    // A 10% retry budget keeps the system out of the storm.
    let b = variant(&study, "retry-budget");
    assert_eq!(values(metric(b, "metastable")), vec![0.0; 6]);
    assert!(values(metric(b, "success_ratio")).iter().all(|&s| s > 0.95));
}

#[test]
fn validation_names_the_hop_and_its_replica_count() {
    let refused = |text: String| {
        let dir = workdir();
        let path = dir.path().join("bad.toml");
        std::fs::write(&path, &text).unwrap();
        match retrystorm::scenario::Scenario::load(path.to_str().unwrap(), &[]) {
            Ok(_) => panic!("accepted:\n{text}"),
            Err(e) => e.to_string(),
        }
    };
    let bad = |hop_extra: &str, tables: &str| refused(three_replicas(100.0, hop_extra, tables));
    let e = bad("", &outages(&[(1, 2)]).replace("replica = 0", "replica = 3"));
    assert!(
        e.contains("fault.0.replica") && e.contains("is 3, but hop `server` has 3 replicas") && e.contains("0 to 2"),
        "{e}"
    );
    let e = bad("balancer = \"least_connection\"", "");
    assert!(e.contains("hop.server.balancer") && e.contains("did you mean `least_connections`"), "{e}");
    let e = bad("health_check = { interval = \"0s\" }", "");
    assert!(e.contains("hop.server.health_check.interval") && e.contains("is 0"), "{e}");
    let e = bad("outlier_detection = { max_ejection_percent = 150.0 }", "");
    assert!(e.contains("max_ejection_percent") && e.contains("[0, 100]"), "{e}");
    let e = bad("outlier_detection = { base_ejection_time = \"60s\", max_ejection_time = \"10s\" }", "");
    assert!(e.contains("max_ejection_time") && e.contains("cannot be shorter"), "{e}");
    let e = refused(three_replicas(100.0, "balancer = \"random\"", "").replace("replicas = 3", "replicas = 1"));
    assert!(e.contains("hop.server.balancer") && e.contains("one replica"), "{e}");
}
