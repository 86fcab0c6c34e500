//! Server-side overload control against queueing theory and the sources' stated
//! behaviour: LIFO under M/M/1 (same mean, larger variance), CoDel under sustained overload
//! ("Fail at Scale"), deadline drop, adaptive LIFO vs FIFO on the metastable storm, admission
//! limits as hard bounds, and retry priority.
//!
//! Each replication is independent, so a Student-t interval over replications is a valid
//! confidence interval for a long-run quantity; theory must fall inside the 99% interval.

mod common;
use common::*;
use retrystorm::metrics::RunRecord;
use retrystorm::model::sim::run;
use retrystorm::runner::{run_study, RunOptions, Study};
use retrystorm::scenario::Scenario;

/// Per-replication records of a bundled scenario's base spec.
fn records(name: &str, sets: &[&str]) -> Vec<RunRecord> {
    let s = scenario(name, sets);
    (0..u64::from(s.replications)).map(|r| run(&s.base, s.seed, r)).collect()
}

/// The named variants of `s`, run on common random numbers.
fn variants(s: &Scenario, names: &[&str]) -> Study {
    let chosen: Vec<_> = s.run_variants().into_iter().filter(|v| names.contains(&v.name.as_str())).collect();
    assert_eq!(chosen.len(), names.len(), "every named variant exists");
    run_study(s, &chosen, &RunOptions { threads: Some(2), progress: false })
}

/// Mean and variance of the end-to-end latency (s, s²) of one run, from its histogram.
fn latency_mean_var(r: &RunRecord) -> (f64, f64) {
    let h = r.tenants[0].latency_us.to_histogram();
    (h.mean() / 1e6, (h.stdev() / 1e6).powi(2))
}

fn assert_in(xs: &[f64], theory: f64, what: &str) {
    let (lo, hi) = t_interval(xs, 0.99);
    assert!(lo <= theory && theory <= hi, "{what}: 99% CI [{lo:.6e}, {hi:.6e}] misses theory {theory:.6e}");
}

#[test]
fn lifo_mm1_has_fifo_mean_and_the_larger_lcfs_variance() {
    // M/M/1, λ = 800/s, μ = 1000/s, ρ = 0.8. Non-preemptive LCFS and FCFS share the mean wait
    // ρ/(μ(1−ρ)) (both are work-conserving and blind to service times), but
    // E[W²] = 2ρ/(μ²(1−ρ)²) under FCFS and 2ρ/(μ²(1−ρ)³) under LCFS (the wait is a delay busy
    // period started by the residual service; Kleinrock, Queueing Systems vol. 1). The time in
    // system adds an independent Exp(μ) service: Var T = Var W + 1/μ².
    let (lambda, mu) = (800.0_f64, 1000.0_f64);
    let rho = lambda / mu;
    let mean_t = 1.0 / (mu - lambda);
    let mean_w = rho / (mu * (1.0 - rho));
    let var_t = |e_w2: f64| e_w2 - mean_w * mean_w + 1.0 / (mu * mu);
    let var_fifo = var_t(2.0 * rho / (mu * mu * (1.0 - rho).powi(2)));
    let var_lifo = var_t(2.0 * rho / (mu * mu * (1.0 - rho).powi(3)));
    assert!((var_fifo - mean_t * mean_t).abs() < 1e-12, "FIFO's time in system is Exp(μ−λ)");
    for (discipline, var) in [("fifo", var_fifo), ("lifo", var_lifo)] {
        let runs = records("mm1", &[&format!("hop.server.discipline={discipline}")]);
        let (means, vars): (Vec<f64>, Vec<f64>) = runs.iter().map(latency_mean_var).unzip();
        assert_in(&means, mean_t, &format!("{discipline} mean time in system"));
        assert_in(&vars, var, &format!("{discipline} variance of the time in system"));
        let waits: Vec<f64> =
            runs.iter().map(|r| r.hops[0].queue_wait_ns_sum as f64 / 1e9 / r.hops[0].services_started as f64).collect();
        assert_in(&waits, mean_w, &format!("{discipline} mean wait"));
    }
}

#[test]
fn codel_bounds_queueing_delay_and_keeps_the_server_busy_under_sustained_overload() {
    // "Fail at Scale" / folly's Codel: a standing queue (the shortest delay of a 100 ms interval
    // above the 5 ms target) makes the hop drop attempts that waited more than 2 × 5 ms for the
    // next interval. M/M/1 at ρ = 1.5 with no retries: FIFO's wait grows without bound
    // (≈ (λ−μ)/μ × t = 9 s at 18 s). Under CoDel the wait cannot keep growing: a served attempt
    // waited at most 2 × target while the hop is overloaded, and an interval judged not
    // overloaded lets the wait grow by at most (λ−μ)/μ × interval = 50 ms, so the mean wait is
    // below 2 × target + 50 ms; and the server keeps completing ≈ μ per second. (Under Poisson
    // overload the minimum delay of an interval often dips below the target, so overloaded and
    // calm intervals alternate: the mean wait is ~3 × target, not the target; see docs.)
    let sets = ["tenant.customers.arrival.rate_per_s=1500.0", "horizon=20s", "replications=5"];
    let fifo = records("mm1", &sets);
    let codel = records("mm1", &[&sets[..], &["hop.server.discipline=codel"]].concat());
    for r in &fifo {
        let last = r.hop_series[0][18].queue_wait_max_ns as f64 / 1e9;
        assert!(last > 5.0, "FIFO at ρ = 1.5: the wait at 18 s should be ≈ 9 s, is {last} s");
    }
    let mean_waits: Vec<f64> =
        codel.iter().map(|r| r.hops[0].queue_wait_ns_sum as f64 / 1e9 / r.hops[0].services_started as f64).collect();
    let (lo, hi) = t_interval(&mean_waits, 0.99);
    assert!(hi < 0.010 + 0.050, "CoDel mean wait 99% CI [{lo}, {hi}] s is not below 2 × target + 50 ms");
    let mut ok_rates = Vec::new();
    for r in &codel {
        assert!(r.hops[0].dropped_expired > 0, "CoDel dropped nothing under overload");
        let served: u32 = r.hop_series[0][1..19].iter().map(|b| b.successes).sum();
        ok_rates.push(f64::from(served) / 18.0);
    }
    // A server that never idles completes a Poisson(μ) stream of services (it idles only when
    // nothing arrived for the last 10 ms, probability e^−15): μ must lie in the 99% interval.
    let (lo, hi) = t_interval(&ok_rates, 0.99);
    assert!(lo <= 1000.0 && 1000.0 <= hi, "CoDel throughput 99% CI [{lo}, {hi}] misses μ = 1000/s");
}

#[test]
fn deadline_drop_never_serves_an_attempt_its_caller_gave_up_on() {
    // overload-shedding: the caller's attempt timeout (200 ms) travels with the attempt; an attempt
    // still queued at that instant is dropped, so no served attempt waited 200 ms or more, while
    // FIFO serves attempts that waited seconds.
    let s = scenario("overload-shedding", &["replications=3"]);
    let fifo = (0..3).map(|r| run(&s.variants[0].spec, s.seed, r)).collect::<Vec<_>>();
    let drop = s.variants.iter().find(|v| v.name == "deadline-drop").expect("variant");
    let drop = (0..3).map(|r| run(&drop.spec, s.seed, r)).collect::<Vec<_>>();
    for (f, d) in fifo.iter().zip(&drop) {
        let max = |r: &RunRecord| r.hop_series[0].iter().map(|b| b.queue_wait_max_ns).max().unwrap_or(0);
        assert!(max(f) > 1_000_000_000, "FIFO's longest wait {} ns should exceed 1 s", max(f));
        assert!(max(d) < 200_000_000, "deadline_drop served an attempt that waited {} ns ≥ 200 ms", max(d));
        assert!(d.hops[0].dropped_expired > 0);
        assert!(d.hops[0].wasted_work_ns < f.hops[0].wasted_work_ns);
    }
}

#[test]
fn adaptive_lifo_codel_aimd_and_a_budget_end_the_storm_fifo_jitter_and_backoff_do_not() {
    // Fail at Scale: under a standing queue, FIFO serves only requests whose callers have gone
    // (stale), adaptive LIFO serves fresh ones within their deadline. Here: FIFO stays metastable
    // in every replication and most of its service is wasted, with or without jitter or long
    // backoff (which delay retries but do not remove them); adaptive LIFO, CoDel and the AIMD
    // limit recover in every replication and waste little; so does a client retry budget.
    let s = scenario("overload-shedding", &["replications=6"]);
    let names = [
        "fifo",
        "fifo-jitter",
        "fifo-long-backoff",
        "fifo-retry-budget",
        "adaptive-lifo",
        "codel",
        "adaptive-concurrency",
        "gradient-concurrency",
    ];
    let study = variants(&s, &names);
    for v in &study.variants {
        let metastable = values(metric(v, "metastable"));
        let wasted = values(hop_metric(v, "server", "wasted_work_s"));
        let busy = values(hop_metric(v, "server", "busy_s"));
        let wasted_share: Vec<f64> = wasted.iter().zip(&busy).map(|(w, b)| w / b).collect();
        let (lo, hi) = t_interval(&wasted_share, 0.99);
        let success = values(metric(v, "success_ratio"));
        if v.name == "fifo-retry-budget" || v.name == "gradient-concurrency" {
            // A 10% retry budget removes the retries that sustain the storm (client side); the
            // gradient limit ends it too, but can keep refusing work long after (docs/EXPERIMENTS.md, section 5).
            assert!(metastable.iter().all(|&m| m == 0.0), "{}: metastable in a run: {metastable:?}", v.name);
        } else if v.name.starts_with("fifo") {
            assert!(metastable.iter().all(|&m| m == 1.0), "{}: not metastable in every run: {metastable:?}", v.name);
            assert!(lo > 0.5, "{}: wasted share CI [{lo}, {hi}] should be most of the work", v.name);
        } else {
            assert!(metastable.iter().all(|&m| m == 0.0), "{}: metastable in a run: {metastable:?}", v.name);
            // What they still waste is mostly the backlog of the 3 s capacity loss.
            assert!(hi < 0.25, "{}: wasted share CI [{lo}, {hi}] should be small", v.name);
            let (lo, _) = t_interval(&success, 0.99);
            assert!(lo > 0.9, "{}: success ratio CI low end {lo}", v.name);
        }
    }
}

#[test]
fn a_static_concurrency_limit_and_a_token_bucket_are_hard_bounds() {
    let limit = 5;
    let runs = records(
        "overload-shedding",
        &["replications=2", &format!("hop.server.admission={{ kind = \"concurrency\", limit = {limit} }}")],
    );
    for r in &runs {
        let peak = r.hop_series[0].iter().map(|b| b.in_flight_max).max().unwrap_or(0);
        // `in_flight_max` counts the refused arrival too, for the instant before its 503.
        assert!(peak <= limit + 1, "in flight {peak} > limit {limit} + the refused arrival");
        assert!(r.hops[0].rejected_by_limit > 0, "the limit never bit");
    }
    // A token bucket admits at most burst + rate × time.
    let (rate, burst) = (300.0, 50.0);
    let runs = records(
        "overload-shedding",
        &[
            "replications=2",
            &format!("hop.server.admission={{ kind = \"token_bucket\", rate_per_s = {rate}, burst = {burst}, reject = \"429\", retry_after = \"1s\" }}"),
        ],
    );
    for r in &runs {
        let c = &r.hops[0];
        let admitted = (c.attempts - c.rejected_by_limit) as f64;
        let bound = burst + rate * r.completion_time_ns as f64 / 1e9;
        assert!(admitted <= bound, "token bucket admitted {admitted} > {bound}");
        // Far below the offered 600/s, so the bucket is nearly always empty: admitted ≈ the bound.
        assert!(admitted > 0.95 * bound, "token bucket admitted {admitted}, far below {bound}");
    }
}

#[test]
fn retry_priority_and_retry_shedding_touch_only_retries() {
    // With shed_retries_queue_length = 0 every retry that finds a queue is shed while first
    // attempts still queue: the shed count cannot exceed the retries, and shedding retries first
    // leaves more first attempts served than FIFO does in the storm.
    let sets = ["replications=2", "hop.server.retry_priority=true", "hop.server.shed_retries_queue_length=0"];
    let prio = records("overload-shedding", &sets);
    let fifo = records("overload-shedding", &["replications=2"]);
    for (p, f) in prio.iter().zip(&fifo) {
        assert!(p.hops[0].shed > 0 && p.hops[0].shed <= p.hops[0].retries);
        assert_eq!(f.hops[0].shed, 0);
        assert!(p.tenants[0].succeeded > f.tenants[0].succeeded);
    }
}

#[test]
fn the_aimd_limit_falls_while_latency_exceeds_its_threshold_and_recovers() {
    // Netflix AIMDLimit: a sample slower than `latency` (100 ms) multiplies the limit by 0.9, so
    // during the capacity dip (10–13 s, waits > 100 ms) the limit is cut towards `min` = 8; with
    // capacity back it grows again. The series stays within [min, max] once arrivals started.
    let s = scenario("overload-shedding", &["replications=3"]);
    let v = s.variants.iter().find(|v| v.name == "adaptive-concurrency").expect("variant");
    let bucket_at = |t: f64| (t / 0.25) as usize; // the scenario's 250 ms buckets
    for r in (0..3).map(|rep| run(&v.spec, s.seed, rep)) {
        let series = &r.hop_series[0];
        let mean = |from: f64, to: f64| {
            let bs = &series[bucket_at(from)..bucket_at(to)];
            bs.iter().map(|b| f64::from(b.admission_limit)).sum::<f64>() / bs.len() as f64
        };
        let (before, during, after) = (mean(5.0, 10.0), mean(10.5, 13.0), mean(20.0, 30.0));
        assert!(during < 0.6 * before, "limit during the dip {during} not well below {before} before");
        assert!(after > 2.0 * during, "limit after the dip {after} did not recover from {during}");
        for b in &series[1..bucket_at(60.0)] {
            assert!((8..=200).contains(&b.admission_limit), "limit {} outside [8, 200]", b.admission_limit);
        }
    }
}

#[test]
fn the_gradient_limit_comes_back_to_its_level_before_the_overload() {
    // Gradient2 in overload-shedding with client jitter: at the end of the capacity dip the
    // long-run latency average is still high, the gradient is pinned at 1 and the limit climbs
    // while the retry backlog keeps it half used. Netflix's app-limited rule then froze it there
    // (~70 until the end of the run, against ~15 before the dip); the limit must instead return
    // to its level before the overload once the backlog is gone (within 2× of it, and below 35:
    // twice the in-flight count the 600/s load reaches), in every replication.
    let s = scenario("overload-shedding", &["replications=4"]);
    let bucket_at = |t: f64| (t / 0.25) as usize;
    for name in ["gradient-concurrency", "gradient-concurrency-jitter"] {
        let v = s.variants.iter().find(|v| v.name == name).expect("variant");
        for rep in 0..4 {
            let r = run(&v.spec, s.seed, rep);
            let series = &r.hop_series[0];
            let mean = |from: f64, to: f64| {
                let bs = &series[bucket_at(from)..bucket_at(to)];
                bs.iter().map(|b| f64::from(b.admission_limit)).sum::<f64>() / bs.len() as f64
            };
            let (before, after) = (mean(5.0, 10.0), mean(20.0, 60.0));
            assert!(
                after < 2.0 * before && after < 35.0,
                "{name} replication {rep}: limit {after:.1} after the overload vs {before:.1} before (seed {})",
                s.seed
            );
            let moves = series[bucket_at(20.0)..bucket_at(60.0)]
                .windows(2)
                .filter(|w| w[0].admission_limit != w[1].admission_limit);
            assert!(moves.count() > 10, "{name} replication {rep}: the limit stopped moving after the overload");
        }
    }
}
