//! outage-herd: exact attempt counts under un-jittered backoff, and conservation everywhere.

mod common;
use common::*;

#[test]
fn exponential_backoff_makes_exactly_eight_attempts_per_client() {
    // Delays 0.1, 0.2, 0.4, … s put retry k at t0 + 0.1·(2^k − 1) s after the first try t0 ∈ [0, 1).
    // Retry 6 (attempt 7) starts by 1 + 6.3 = 7.3 s, inside the 10 s outage, so attempts 1–7 all
    // fail; retry 7 (attempt 8) starts at ≥ 12.7 s, after it, and nothing times out (no timeout is
    // set, the queue is unbounded), so attempt 8 succeeds. 8 attempts ≥ each client's count, and the
    // total is 8 × clients, so every client makes exactly 8.
    let study = study("outage-herd", &["policy.client.jitter=exponential", "replications=3"]);
    let v = &study.variants[0];
    for r in 0..3 {
        let get = |m: &str| metric(v, m).values[r].expect("present");
        assert_eq!(get("requests"), 10_000.0);
        assert_eq!(get("attempts"), 80_000.0, "replication {r}");
        assert_eq!(get("succeeded"), 10_000.0);
        assert_eq!(get("dlq"), 0.0);
    }
    // Every delay before retry 7 is 6.4 s: one bin (a point mass if 6.4 s is a cap) holds them all.
    let bins: Vec<_> = v.retry_delays.bins().into_iter().filter(|b| b.retry == 7).collect();
    assert_eq!(bins.len(), 1, "{bins:?}");
    let b = &bins[0];
    assert!(b.low_s <= 6.4 && (6.4 < b.high_s || b.low_s == b.high_s), "{b:?}");
    assert_eq!(b.count, 30_000);
}

#[test]
fn every_strategy_conserves_requests() {
    let scenario = scenario("outage-herd", &["replications=2", "tenant.main.clients=2000"]);
    let jitters: Vec<String> =
        ["none", "exponential", "full", "equal", "decorrelated", "decorrelated_v2", "proportional"]
            .map(String::from)
            .to_vec();
    let variants = scenario.jitter_variants(&jitters).expect("valid");
    let options = retrystorm::runner::RunOptions { threads: Some(2), progress: false };
    let study = retrystorm::runner::run_study(&scenario, &variants, &options);
    for v in &study.variants {
        for r in 0..2 {
            let get = |m: &str| metric(v, m).values[r].expect("present");
            let terminal = get("succeeded") + get("rejected") + get("dlq") + get("in_flight");
            assert_eq!(get("requests"), terminal, "variant {} replication {r}", v.name);
            assert_eq!(get("requests"), 2000.0);
        }
    }
    // No jitter at all: ten immediate attempts inside the outage, every request dead-lettered.
    let none = &study.variants[0];
    assert_eq!(metric(none, "dlq").mean, Some(2000.0));
    assert_eq!(metric(none, "attempts").mean, Some(20_000.0));
}

#[test]
fn a_run_cut_off_at_its_drain_limit_has_not_recovered() {
    // One worker at 1 h per request: nothing completes before the 240 s drain limit, retries die
    // down once every client waits on its first-served attempt (no timeout), so arrivals look
    // calm; but the backlog never drains and the run is cut off: recovery is not observable.
    let cut = study("outage-herd", &["hop.api.service.mean=1h", "tenant.main.clients=2000", "replications=2"]);
    let v = &cut.variants[0];
    for r in 0..2 {
        let get = |m: &str| metric(v, m).values[r];
        assert_eq!(get("truncated"), Some(1.0), "replication {r} runs into the drain limit");
        assert_eq!(get("success_ratio"), Some(0.0));
        assert_eq!(get("recovered"), Some(0.0), "replication {r}: a cut-off run did not recover");
        assert_eq!(get("recovery_time_s"), None);
        assert_eq!(get("recovery_unobservable"), Some(1.0));
        assert_eq!(get("recovery_cut_off"), Some(1.0));
        assert_eq!(get("metastable"), Some(0.0));
    }
    // The healthy scenario still recovers, and is not cut off.
    let healthy = study("outage-herd", &["tenant.main.clients=2000", "replications=2"]);
    assert_eq!(metric(&healthy.variants[0], "recovered").values, vec![Some(1.0), Some(1.0)]);
    assert_eq!(metric(&healthy.variants[0], "recovery_cut_off").values, vec![Some(0.0), Some(0.0)]);
}
