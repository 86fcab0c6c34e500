//! Coverage of the reported 95% intervals: over many master seeds, the Student-t interval of a
//! metric whose mean is known exactly must contain that mean about 95% of the time.
//!
//! The metric: attempts per client (`amplification`) when every attempt fails independently with
//! probability p (an `error_rate` fault over the whole run) and a client makes at most M = 10
//! attempts. Attempts per client are then min(Geometric(1 − p), M), whose mean is
//! (1 − p^M)/(1 − p) exactly, whatever the backoff, the queueing or the order of events.
//! Replications are independent runs, so each study's interval is a valid t interval (the
//! per-replication means average 200 clients and are close to normal).
//!
//! The number of intervals that cover is Binomial(studies, 0.95) when the intervals are right.
//! The acceptance region is the central 99.9% of that law: a correct implementation fails with
//! probability 0.1% for random seeds (the seeds here are fixed), while a z instead of a t
//! quantile (≈ 92% coverage with 10 replications), intervals from the sd instead of the standard
//! error (≈ 100%) or correlated replications fall outside it.

mod common;
use common::*;
use retrystorm::runner::{run_study, RunOptions};
use statrs::distribution::{Binomial, DiscreteCDF};

const STUDIES: u64 = 1000;
const MAX_ATTEMPTS: i32 = 10;

/// Mean attempts per client when each attempt fails with probability `p`, at most M attempts.
fn mean_attempts(p: f64) -> f64 {
    (1.0 - p.powi(MAX_ATTEMPTS)) / (1.0 - p)
}

/// The central 99.9% region of Binomial(n, 0.95): [lo, hi] with at most 0.05% outside each side.
fn acceptance(n: u64) -> (u64, u64) {
    let law = Binomial::new(0.95, n).expect("valid binomial");
    let lo = (0..=n).find(|&k| law.cdf(k) > 0.0005).expect("some k");
    let hi = (0..=n).find(|&k| law.cdf(k) >= 0.9995).expect("some k");
    (lo, hi)
}

fn covers(ci: Option<[f64; 2]>, mean: f64) -> bool {
    let [lo, hi] = ci.expect("every replication has the metric");
    lo <= mean && mean <= hi
}

#[test]
fn ci95_of_attempts_per_client_and_of_paired_differences_cover_at_95_percent() {
    let mut scenario = scenario(
        "outage-herd",
        &[
            "tenant.main.clients=200",
            "replications=10",
            "policy.client.jitter=exponential",
            "policy.client.base=10ms",
            "fault.0.kind=error_rate",
            "fault.0.p=0.5",
            "fault.0.to=1000s",
        ],
    );
    let sets = [retrystorm::scenario::parse_assignment("fault.0.p=0.25").expect("valid")];
    let (quarter, _) = scenario.variant_with("p=0.25", &sets).expect("valid variant");
    let variants = vec![retrystorm::scenario::Variant { name: "p=0.5".into(), spec: scenario.base.clone() }, quarter];
    let (half_mean, quarter_mean) = (mean_attempts(0.5), mean_attempts(0.25));
    let (mut covered, mut covered_diff) = (0, 0);
    for seed in 1..=STUDIES {
        scenario.seed = seed;
        let study = run_study(&scenario, &variants, &RunOptions { threads: Some(2), progress: false });
        let amplification = metric(&study.variants[0], "amplification");
        assert_eq!(amplification.values.len(), 10);
        covered += u64::from(covers(amplification.ci95, half_mean));
        let diff =
            &study.comparisons[0].metrics.iter().find(|(m, _)| *m == catalogued("amplification")).expect("compared").1;
        covered_diff += u64::from(covers(diff.paired.ci95, quarter_mean - half_mean));
    }
    let (lo, hi) = acceptance(STUDIES);
    eprintln!("coverage: {covered} and {covered_diff} of {STUDIES} (acceptance {lo}..={hi})");
    assert!(
        (lo..=hi).contains(&covered),
        "{covered} of {STUDIES} 95% intervals of attempts per client contain the true mean {half_mean}; \
         a correct interval gives {lo}..={hi} (99.9% of the time)"
    );
    assert!(
        (lo..=hi).contains(&covered_diff),
        "{covered_diff} of {STUDIES} paired-difference intervals contain the true difference {}; expected {lo}..={hi}",
        quarter_mean - half_mean
    );
}
