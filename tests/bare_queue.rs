//! The bare queue loop of `benches/bare_queue/` (the floor the served path is timed against)
//! simulates the same model as the simulator: over many seeds, the mean of every count it keeps
//! agrees with the simulator's mean on the same scenario. The two draw different random numbers,
//! so the check is a two-sample comparison of means: |m₁ − m₂| ≤ 4 standard errors of the
//! difference (a false alarm about once in 16,000 per count if the models agree).

#[path = "../benches/bare_queue/mod.rs"]
mod bare_queue;
mod common;

use bare_queue::{Counts, Served, METASTABLE_COLLAPSE, MM1};
use retrystorm::engine::NS_PER_MS;
use retrystorm::runner::{run_study, RunOptions};

/// Reads one count off a bare run.
type CountOf = fn(&Counts) -> u64;

/// Standard errors of the difference within which two means agree.
const Z: f64 = 4.0;

fn mean_var(xs: &[f64]) -> (f64, f64) {
    let n = xs.len() as f64;
    let mean = xs.iter().sum::<f64>() / n;
    (mean, xs.iter().map(|x| (x - mean).powi(2)).sum::<f64>() / (n - 1.0))
}

/// Runs `name` with `sets` for `reps` replications (the variant `variant`, or the base scenario)
/// and `served` over as many seeds, and compares the means of each count.
fn agree(name: &str, variant: Option<&str>, sets: &[&str], served: &Served, reps: u32) {
    let mut sets: Vec<String> = sets.iter().map(|s| s.to_string()).collect();
    sets.push(format!("replications={reps}"));
    let refs: Vec<&str> = sets.iter().map(String::as_str).collect();
    let scenario = common::scenario(name, &refs);
    let variants: Vec<_> = match variant {
        Some(v) => scenario.run_variants().into_iter().filter(|x| x.name == v).collect(),
        None => scenario.run_variants().into_iter().take(1).collect(),
    };
    assert_eq!(variants.len(), 1, "one variant to compare");
    let study = run_study(&scenario, &variants, &RunOptions { threads: Some(2), progress: false });
    let model = &study.variants[0];
    let model_hop = model.hops[0].0.clone();
    let bare: Vec<Counts> = (0..u64::from(reps)).map(|seed| bare_queue::run(served, 1_000 + seed)).collect();
    let counts: [(&str, CountOf); 6] = [
        ("requests", |c| c.requests),
        ("attempts", |c| c.attempts),
        ("succeeded", |c| c.succeeded),
        ("dlq", |c| c.dlq),
        ("in_flight", |c| c.in_flight),
        ("overflow", |c| c.overflow),
    ];
    let mut report = Vec::new();
    for (metric, of) in counts {
        let sim = if metric == "overflow" {
            common::values(common::hop_metric(model, &model_hop, metric))
        } else {
            common::values(common::metric(model, metric))
        };
        let ours: Vec<f64> = bare.iter().map(|c| of(c) as f64).collect();
        let ((m1, v1), (m2, v2)) = (mean_var(&sim), mean_var(&ours));
        let se = (v1 / sim.len() as f64 + v2 / ours.len() as f64).sqrt();
        report.push(format!("{metric}: simulator {m1:.1}, bare loop {m2:.1}, se {se:.2}"));
        assert!(
            (m1 - m2).abs() <= Z * se || (m1 == m2),
            "{name}: {metric} disagrees: simulator mean {m1} vs bare loop {m2} (se of the difference {se})\n{}",
            report.join("\n")
        );
    }
    eprintln!("{name}: {}", report.join("; "));
}

#[test]
fn bare_queue_loop_agrees_with_the_simulator_on_metastable_collapse() {
    agree("metastable-collapse", Some("no-backoff"), &[], &METASTABLE_COLLAPSE, 200);
}

#[test]
fn bare_queue_loop_agrees_with_the_simulator_on_mm1_with_a_queue_limit_timeouts_and_retries() {
    // M/M/1 at ρ = 0.8 with room for 4 waiting: about 9% of attempts find the queue full and are
    // retried at once, three attempts in all; callers give up after 30 ms. The counts of retries
    // and dead letters depend on the queue's whole dynamics.
    let served = Served {
        queue_limit: Some(4),
        attempt_timeout_ns: Some(30 * NS_PER_MS),
        max_attempts: 3,
        ..MM1.with_horizon(20 * 1_000_000_000)
    };
    let sets =
        ["horizon=20s", "hop.server.queue_limit=4", "policy.once.max_attempts=3", "policy.once.attempt_timeout=30ms"];
    agree("mm1", None, &sets, &served, 300);
}
