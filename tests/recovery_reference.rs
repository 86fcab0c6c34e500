//! The load that hits outage-herd's API when it comes back, against an independent reference.
//!
//! The reference is a direct Monte-Carlo of the scenario written from MODEL.md's formulas, with
//! no code from the simulator: 10,000 clients send their first try at U[0, 1) s; the API fails
//! every attempt instantly while it is down (0–10 s) and, once it is up, answers every attempt
//! (no timeout, unbounded queue), so a client's first attempt at or after 10 s is its last. Retry
//! k waits exp(k) = min(cap, base·2^(k−1)) (exponential), U(0, exp(k)) (full),
//! exp(k)/2 + U(0, exp(k)/2) (equal), min(cap, U(base, 3·s_{k−1})) with s₀ = base (decorrelated) or
//! nothing (none); at most 10 attempts. The peak after recovery is the largest count of those
//! post-outage attempts in a 100 ms bucket, per second; the success ratio is the share of clients
//! that made one. The simulator's 10 replications and the reference's 200 are compared with a
//! 99.9% Welch interval of the difference of means (the tolerance comes from the two samples'
//! spread, nothing else).

mod common;
use common::*;
use rand::{RngExt, SeedableRng};
use rand_chacha::ChaCha8Rng;
use statrs::distribution::{ContinuousCDF, StudentsT};

const CLIENTS: usize = 10_000;
const OUTAGE_END: f64 = 10.0;
const BASE: f64 = 0.1;
const CAP: f64 = 10.0;
const ATTEMPTS: u32 = 10;
const BUCKET: f64 = 0.1;

/// One reference replication: (peak attempts/s after the outage, success ratio).
fn reference_run(jitter: &str, rng: &mut ChaCha8Rng) -> (f64, f64) {
    let mut buckets = vec![0u32; 400];
    let mut succeeded = 0usize;
    for _ in 0..CLIENTS {
        let mut t: f64 = rng.random::<f64>();
        let mut sleep = BASE;
        for k in 1..=ATTEMPTS {
            if t >= OUTAGE_END {
                buckets[(t / BUCKET) as usize] += 1;
                succeeded += 1;
                break;
            }
            if k == ATTEMPTS {
                break;
            }
            let exp = (BASE * 2f64.powi(k as i32 - 1)).min(CAP);
            t += match jitter {
                "none" => 0.0,
                "exponential" => exp,
                "full" => rng.random::<f64>() * exp,
                "equal" => exp / 2.0 + rng.random::<f64>() * exp / 2.0,
                "decorrelated" => {
                    sleep = (BASE + rng.random::<f64>() * (3.0 * sleep - BASE)).min(CAP);
                    sleep
                }
                other => panic!("no reference for {other}"),
            };
        }
    }
    let peak = buckets[(OUTAGE_END / BUCKET).round() as usize..].iter().copied().max().unwrap_or(0);
    (f64::from(peak) / BUCKET, succeeded as f64 / CLIENTS as f64)
}

fn mean_var(xs: &[f64]) -> (f64, f64, f64) {
    let (mean, sd) = retrystorm::metrics::stats::mean_sd(xs);
    (mean, sd * sd, xs.len() as f64)
}

/// Asserts the simulator's mean agrees with the reference's (99.9% Welch interval of the
/// difference covers 0); returns the relative difference.
fn agrees(what: &str, sim: &[f64], reference: &[f64]) -> f64 {
    let (ms, vs, ns) = mean_var(sim);
    let (mr, vr, nr) = mean_var(reference);
    let se2 = vs / ns + vr / nr;
    let diff = ms - mr;
    if se2 == 0.0 {
        assert_eq!(diff, 0.0, "{what}: simulator {ms} vs reference {mr}, both without spread");
        return 0.0;
    }
    let freedom = se2 * se2 / ((vs / ns).powi(2) / (ns - 1.0) + (vr / nr).powi(2) / (nr - 1.0));
    let t = StudentsT::new(0.0, 1.0, freedom).expect("positive freedom").inverse_cdf(0.9995);
    let half = t * se2.sqrt();
    assert!(
        diff.abs() <= half,
        "{what}: simulator {ms:.4} vs reference {mr:.4}: difference {diff:.4} outside ±{half:.4}"
    );
    if mr == 0.0 {
        0.0
    } else {
        diff / mr
    }
}

#[test]
fn post_recovery_peak_and_success_match_an_independent_monte_carlo() {
    let jitters = ["none", "exponential", "full", "equal", "decorrelated"];
    let s = scenario("outage-herd", &[]);
    let variants = s.jitter_variants(&jitters.map(String::from)).expect("valid");
    let study = retrystorm::runner::run_study(
        &s,
        &variants,
        &retrystorm::runner::RunOptions { threads: Some(2), progress: false },
    );
    let mut rng = ChaCha8Rng::seed_from_u64(0x5eed_2026);
    let mut peaks_ref = Vec::new();
    for (v, jitter) in study.variants.iter().zip(jitters) {
        let runs: Vec<(f64, f64)> = (0..200).map(|_| reference_run(jitter, &mut rng)).collect();
        let peak_ref: Vec<f64> = runs.iter().map(|r| r.0).collect();
        let success_ref: Vec<f64> = runs.iter().map(|r| r.1).collect();
        let peak =
            agrees(&format!("{jitter} peak_after_per_s"), &values(hop_metric(v, "api", "peak_after_per_s")), &peak_ref);
        let success = agrees(&format!("{jitter} success_ratio"), &values(metric(v, "success_ratio")), &success_ref);
        eprintln!(
            "{jitter}: peak after recovery {:+.2}% vs reference, success ratio {:+.2}%",
            100.0 * peak,
            100.0 * success
        );
        assert!(peak.abs() < 0.05 && success.abs() < 0.05, "{jitter}: more than 5% from the reference");
        peaks_ref.push(mean_var(&peak_ref).0);
    }
    // What hits the API when it comes back: exponential's wall ≈ 10× capacity, decorrelated least.
    let cap = 1000.0;
    assert!(peaks_ref[1] / cap > 9.0, "exponential {:.2}×", peaks_ref[1] / cap);
    assert!(peaks_ref[4] < peaks_ref[2] && peaks_ref[2] < peaks_ref[3] && peaks_ref[3] < peaks_ref[1]);
}
