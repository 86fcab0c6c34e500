//! The engine against queueing theory: M/M/1 and M/M/c (Erlang C) on the bundled scenarios.
//!
//! Each replication is an independent run, so the Student-t interval over replications is a valid
//! confidence interval for the long-run mean; the theory value must fall inside the 99% interval.
//! (A correct engine fails this with probability 1% for a given seed; the seeds are fixed.)

mod common;
use common::*;

#[test]
fn mm1_mean_time_in_system_and_wait_match_theory() {
    // λ = 800/s, μ = 1000/s: W = 1/(μ−λ) = 5 ms, Wq = ρ/(μ−λ) = 4 ms.
    let study = study("mm1", &[]);
    let v = &study.variants[0];
    let (lo, hi) = t_interval(&values(hop_metric(v, "server", "queue_wait_s_mean")), 0.99);
    assert!(lo <= 0.004 && 0.004 <= hi, "Wq 99% CI [{lo}, {hi}] misses 4 ms");
    // Latency comes from the HDR histogram (µs, 3 significant digits): its quantisation bias is
    // below 0.1%, far inside the interval's half-width (~2% here).
    let (lo, hi) = t_interval(&values(metric(v, "latency_s_mean")), 0.99);
    assert!(lo <= 0.005 && 0.005 <= hi, "W 99% CI [{lo}, {hi}] misses 5 ms");
    assert_eq!(metric(v, "dlq").mean, Some(0.0));
}

#[test]
fn mmc_mean_wait_matches_erlang_c() {
    let (c, lambda, mu) = (4, 3200.0, 1000.0);
    let wq = erlang_c(c, lambda / mu) / (f64::from(c) * mu - lambda);
    assert!((wq - 0.000_745_5).abs() < 1e-6, "Erlang C arithmetic: {wq}");
    let study = study("mmc", &[]);
    let v = &study.variants[0];
    let (lo, hi) = t_interval(&values(hop_metric(v, "server", "queue_wait_s_mean")), 0.99);
    assert!(lo <= wq && wq <= hi, "Wq 99% CI [{lo}, {hi}] misses Erlang C {wq}");
}
