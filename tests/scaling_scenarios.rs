//! The bundled scenarios of load-dependent latency and autoscaling: each asserts the
//! behaviour its example claims, and the changes its variants make, with 95% intervals of paired
//! differences over replications (common random numbers: same seeds in every variant).

mod common;
use common::*;
use retrystorm::runner::{Study, VariantResult, WORKERS_COLUMN};

fn variant<'a>(study: &'a Study, name: &str) -> &'a VariantResult {
    study.variants.iter().find(|v| v.name == name).unwrap_or_else(|| panic!("no variant {name}"))
}

/// 95% interval of the paired difference `a − b` of a system metric over the replications.
fn paired(study: &Study, a: &str, b: &str, m: &str) -> (f64, f64) {
    let (xa, xb) = (values(metric(variant(study, a), m)), values(metric(variant(study, b), m)));
    let d: Vec<f64> = xa.iter().zip(&xb).map(|(x, y)| x - y).collect();
    t_interval(&d, 0.95)
}

/// The mean (over replications, then over seconds [from, to)) of a series column of the first
/// hop (`tenant = false`) or tenant.
fn window(v: &VariantResult, tenant: bool, col: usize, from: usize, to: usize) -> f64 {
    let series = if tenant { &v.tenant_series[0] } else { &v.hop_series[0] };
    let rows = &series.rows[from..to];
    rows.iter().map(|r| r[col]).sum::<f64>() / rows.len() as f64
}

const SUCCESSES: usize = 3;
const QUEUE_WAIT_MAX_S: usize = 7;

#[test]
fn gc_death_spiral_never_recovers_and_only_a_concurrency_limit_saves_it() {
    let s = study("stability-gc-death-spiral", &[]);
    // As published (80/s): never recovers in any replication, almost nothing succeeds.
    let published = variant(&s, "as-published");
    // It is collapsed before its burst already, so it has no healthy state to recover to:
    // recovery is not observable (never "recovered after 0 s"), in every replication.
    assert_eq!(values(metric(published, "recovered")), vec![0.0; 20], "as published: never recovers");
    assert_eq!(values(metric(published, "recovery_unobservable")), vec![1.0; 20], "overloaded before the burst");
    assert!(metric(published, "success_ratio").ci95.unwrap()[1] < 0.1);
    // The burst makes no difference at 80/s: without it the system collapses all the same.
    // (Without a trigger `metastable` is not defined; the goodput says it.)
    let no_burst = variant(&s, "no-burst");
    assert!(metric(no_burst, "success_ratio").ci95.unwrap()[1] < 0.1);
    let tail = window(no_burst, true, SUCCESSES, 30, 60);
    assert!(tail < 5.0, "goodput of the last 30 s without the burst: {tail}/s of 80/s");
    // At 30/s the system is healthy without the burst and never recovers after it.
    assert_eq!(values(metric(variant(&s, "30rps-no-burst"), "success_ratio")), vec![1.0; 20]);
    let tipped = variant(&s, "tipping-30rps");
    assert_eq!(values(metric(tipped, "metastable")), vec![1.0; 20], "the burst tips it over for good");
    // Goodput in the last 20 s: a few per second, far under the 30/s offered.
    // (Requests that succeeded: the server still completes ≈ 23/s, for callers long gone.)
    let tail = window(tipped, true, SUCCESSES, 40, 60);
    assert!(tail < 5.0, "goodput after the burst: {tail}/s");
    // Backoff with jitter and a retry budget cut the retries but not the collapse: capacity at
    // full utilisation (10 ÷ (8 ms × e⁴) ≈ 23/s) is under the offered 30/s even without retries.
    for fix in ["30rps-full-jitter", "30rps-retry-budget"] {
        assert_eq!(values(metric(variant(&s, fix), "metastable")), vec![1.0; 20], "{fix} still collapses");
    }
    let (lo, hi) = paired(&s, "30rps-retry-budget", "tipping-30rps", "amplification");
    assert!(hi < -2.0, "the budget cuts amplification by more than 2×: [{lo}, {hi}]");
    // A concurrency limit of 5 keeps u ≤ 0.5: success rises by more than 70 points.
    let (lo, _) = paired(&s, "30rps-concurrency-5", "tipping-30rps", "success_ratio");
    assert!(lo > 0.7, "concurrency limit: success gain {lo}");
    let (lo, _) = paired(&s, "concurrency-5", "as-published", "success_ratio");
    assert!(lo > 0.7, "concurrency limit at 80/s: success gain {lo}");
}

/// Stability Sim's own engine (marcbrooker/stability-sim at 9c7a811: `SimulationEngine` with its
/// `Client`, `Queue` and `Server`, run headless with tsx on the GC death spiral example exactly
/// as published but with the burst's count set to 0), seeds 1–20: the simulated time at which
/// its queue first held 100 requests (half its capacity of 200). Every seed tipped over before
/// the burst would have come (10 s), and none recovered (0 successes in its last 30 s).
const STABILITY_SIM_TIPPED_AT_S: [f64; 20] = [
    2.141, 3.865, 1.921, 2.172, 5.128, 1.496, 2.775, 2.415, 1.812, 3.186, 2.876, 2.6, 2.021, 2.371, 1.986, 1.99, 3.344,
    2.52, 2.495, 3.082,
];

#[test]
fn gc_death_spiral_as_published_tips_over_before_its_burst_as_in_stability_sims_engine() {
    // 10 ms buckets: the first bucket whose longest queue reached 100 dates the tipping point
    // to within 10 ms (its midpoint is used).
    let s = scenario("stability-gc-death-spiral", &["bucket=10ms"]);
    let variants = s.run_variants();
    let no_burst = &variants.iter().find(|v| v.name == "no-burst").expect("variant no-burst").spec;
    let bucket_s = 0.01;
    let ours: Vec<f64> = (0..STABILITY_SIM_TIPPED_AT_S.len() as u64)
        .map(|r| {
            let record = retrystorm::model::sim::run(no_burst, s.seed, r);
            let first = record.hop_series[0].iter().position(|b| b.queue_len_max >= 100);
            first.unwrap_or_else(|| panic!("replication {r} never queued 100 (seed {})", s.seed)) as f64 * bucket_s
                + bucket_s / 2.0
        })
        .collect();
    // The example's claim "healthy until the burst" fails in both engines: every replication
    // tips over before 10 s without any burst ...
    assert!(ours.iter().all(|&t| t < 10.0), "tipped at {ours:?}");
    // ... and when it does is one distribution: two-sample Kolmogorov–Smirnov at α = 0.01
    // (critical value c(α)·√((n + m)/(n·m)), the one-sample formula at n·m/(n + m) = 10).
    let (n, m) = (ours.len() as f64, STABILITY_SIM_TIPPED_AT_S.len() as f64);
    let share = |xs: &[f64], t: f64| xs.iter().filter(|&&x| x <= t).count() as f64 / xs.len() as f64;
    let d = ours
        .iter()
        .chain(&STABILITY_SIM_TIPPED_AT_S)
        .map(|&t| (share(&ours, t) - share(&STABILITY_SIM_TIPPED_AT_S, t)).abs())
        .fold(0.0, f64::max);
    let critical = ks_critical((n * m / (n + m)) as usize, 0.01);
    assert!(d < critical, "KS distance {d} ≥ {critical}: ours {ours:?}");
}

#[test]
fn timeout_cascade_waits_grow_past_the_timeout_and_shedding_restores_goodput() {
    let s = study("stability-timeout-cascade", &[]);
    let published = variant(&s, "as-published");
    // ρ = 1: the queue is a driftless random walk whose spread grows like √(2λt) ≈ 110
    // requests (≈ 1.1 s of work for 10 servers at 10/s) after 60 s, so the longest queue wait
    // grows (mean over replications: last 20 s ≥ 2.5 × the first 10 s) ...
    let early = window(published, false, QUEUE_WAIT_MAX_S, 0, 10);
    let late = window(published, false, QUEUE_WAIT_MAX_S, 40, 60);
    assert!(late > 2.5 * early, "queue wait: first 10 s {early} s, last 20 s {late} s");
    // ... and in the runs where it passes the 1 s timeout (P(|N(0, 110²)| > 100) ≈ 0.36 of
    // them), goodput collapses: at least 3 of the 30 lose more than half their requests, and
    // the requests served for callers who had left waste minutes of server time.
    let success = values(metric(published, "success_ratio"));
    assert!(success.iter().filter(|&&x| x < 0.5).count() >= 3, "success per replication: {success:?}");
    let (g_early, g_late) = (window(published, true, SUCCESSES, 0, 10), window(published, true, SUCCESSES, 40, 60));
    assert!(g_late < 0.85 * g_early, "goodput {g_early}/s → {g_late}/s");
    assert!(metric(published, "wasted_work_s").mean.unwrap() > 10.0, "served after the caller left");
    // Immediate retries make it worse; deadline drop, a queue limit and CoDel make it better.
    let (_, hi) = paired(&s, "fixed-3", "as-published", "success_ratio");
    assert!(hi < 0.0, "fixed-3 retries lower success");
    for fix in ["deadline-drop", "queue-limit-50", "codel"] {
        let (lo, _) = paired(&s, fix, "as-published", "success_ratio");
        assert!(lo > 0.0, "{fix} raises success (paired 95% lower bound {lo})");
    }
}

#[test]
fn autoscaling_catches_the_herd_only_when_provisioning_beats_the_storm() {
    let s = study("autoscaling-herd", &[]);
    let hop = |v: &str, m: &str| values(hop_metric(variant(&s, v), "api", m));
    // The controller sees the herd in the first window after the outage (utilisation is 0
    // while the API fails fast): decision at 20 s, serving at 20 s + provisioning.
    assert_eq!(hop("autoscale-5s", "scale_up_after_trigger_s"), vec![25.0; 20]);
    assert_eq!(hop("autoscale-60s", "scale_up_after_trigger_s"), vec![80.0; 20]);
    // Fast provisioning roughly doubles success without jitter ...
    let (lo, _) = paired(&s, "autoscale-5s", "fixed", "success_ratio");
    assert!(lo > 0.2, "fast autoscaling: success gain {lo}");
    // ... while 60 s provisioning lands after the storm: same outcome, more worker-seconds.
    assert_eq!(
        values(metric(variant(&s, "autoscale-60s"), "success_ratio")),
        values(metric(variant(&s, "fixed"), "success_ratio"))
    );
    assert!(hop("autoscale-60s", "worker_seconds")[0] > hop("fixed", "worker_seconds")[0]);
    // With full jitter the storm is over (recovery ≈ 21 s) before even fast capacity serves.
    assert_eq!(
        values(metric(variant(&s, "autoscale-5s-full-jitter"), "success_ratio")),
        values(metric(variant(&s, "full-jitter"), "success_ratio"))
    );
}

#[test]
fn system_autoscaled_replicas_catch_the_surge_and_recover_faster_than_three_fixed() {
    // scenarios/system.toml: 3 api replicas behind least connections (autoscaled 2–10), a cache
    // in front of a database with a pool of 20, a surge from 1,200/s to 4,000/s over [30, 60) s.
    let s = study("system", &[]);
    let hop = |v: &str, m: &str| values(hop_metric(variant(&s, v), "api", m));
    let workers = |v: &str, t: usize| variant(&s, v).hop_series[0].rows[t][WORKERS_COLUMN];
    for (auto, fixed) in [("autoscaled", "fixed"), ("autoscaled-jitter", "fixed-jitter")] {
        // The fixed variant keeps 3 replicas of 8 workers; the autoscaled one adds replicas
        // during the surge, in every replication, and more than doubles its capacity by its end.
        assert!((0..150).all(|t| workers(fixed, t) == 24.0), "{fixed}: 3 × 8 workers throughout");
        assert!(hop(auto, "workers_peak").iter().all(|&w| w > 48.0), "{auto}: {:?}", hop(auto, "workers_peak"));
        assert!(workers(auto, 59) > 2.0 * workers(auto, 29), "{auto}: capacity at the surge's end");
        let after = hop(auto, "scale_up_after_trigger_s");
        assert!(after.iter().all(|&a| a > 0.0 && a < 30.0), "{auto}: a scale-up serves within the surge: {after:?}");
        // It recovers sooner (95% interval of the paired difference above 0) and more requests
        // succeed, at the cost of more worker-seconds.
        let (lo, _) = paired(&s, fixed, auto, "recovery_time_s");
        assert!(lo > 0.0, "{auto} vs {fixed}: recovery gain interval starts at {lo}");
        let (lo, _) = paired(&s, auto, fixed, "success_ratio");
        assert!(lo > 0.05, "{auto} vs {fixed}: success gain interval starts at {lo}");
        assert!(hop(auto, "worker_seconds")[0] > hop(fixed, "worker_seconds")[0]);
        // Per-replica rows: the fixed hop has its 3 replicas; the autoscaled one all 10 it may
        // have, and a replica beyond the first three served attempts in every replication.
        let names = |v: &str| variant(&s, v).replicas.iter().map(|(n, _)| n.clone()).collect::<Vec<_>>();
        assert_eq!(names(fixed), ["api[0]", "api[1]", "api[2]"]);
        assert_eq!(names(auto).len(), 10);
        let fourth = &variant(&s, auto).replicas[3].1;
        let routed = values(fourth.get(catalogued("attempts")).expect("attempts of api[3]"));
        assert!(routed.iter().all(|&a| a > 0.0), "{auto}: api[3] attempts {routed:?}");
    }
}
