//! Retry amplification across chained hops, and duplicate processing after the
//! idempotency key expired (webhook-ttl).

mod common;
use common::*;

#[test]
fn amplification_at_the_bottom_is_the_product_of_attempt_limits() {
    // Every call fails (the db is down for the whole run) and nothing else limits retries, so each
    // caller uses all its attempts: the db sees 4 × 4 × 4 attempts per logical request.
    for (attempts, product) in [(4, 64.0), (5, 125.0)] {
        let sets: Vec<String> = ["client", "edge-to-service", "service-to-db"]
            .iter()
            .map(|p| format!("policy.{p}.max_attempts={attempts}"))
            .chain(["replications=2".to_string(), "tenant.main.clients=200".to_string()])
            .collect();
        let sets: Vec<&str> = sets.iter().map(String::as_str).collect();
        let s = scenario("chain-amplification", &sets);
        let variants = vec![s.variants[0].clone()];
        let study = retrystorm::runner::run_study(&s, &variants, &Default::default());
        let v = &study.variants[0];
        let per_hop = |hop: &str| values(hop_metric(v, hop, "amplification"));
        let a = f64::from(attempts);
        assert!(per_hop("edge").iter().all(|&x| x == a), "edge: {:?}", per_hop("edge"));
        assert!(per_hop("service").iter().all(|&x| x == a * a), "service: {:?}", per_hop("service"));
        assert!(per_hop("db").iter().all(|&x| x == product), "db: {:?}", per_hop("db"));
        assert_eq!(metric(v, "dlq").mean, Some(200.0));
    }
}

#[test]
fn retrying_only_at_the_top_bounds_the_bottom_at_the_client_limit() {
    let s = scenario("chain-amplification", &["replications=2", "tenant.main.clients=200"]);
    let study = retrystorm::runner::run_study(&s, &s.variants, &Default::default());
    let top_only = study.variants.iter().find(|v| v.name == "top-only").expect("variant");
    assert_eq!(hop_metric(top_only, "db", "amplification").mean, Some(4.0));
}

#[test]
fn webhook_ttl_duplicates_only_when_the_ttl_is_shorter_than_the_redelivery_horizon() {
    let s = scenario("webhook-ttl", &["replications=3"]);
    let study = retrystorm::runner::run_study(&s, &s.variants, &Default::default());
    let window = study.variants.iter().find(|v| v.name == "ttl-window").expect("variant");
    let short = study.variants.iter().find(|v| v.name == "ttl-1h").expect("variant");
    // Keys live for window + 6 h = 78 h, longer than the whole (36 h) run: no key can expire.
    assert!(values(hop_metric(window, "consumer", "duplicates_ttl_expired")).iter().all(|&d| d == 0.0));
    assert!(values(metric(window, "deduplicated")).iter().all(|&d| d > 0.0), "re-deliveries must occur");
    // One-hour keys expire while re-deliveries wait in the backlog: duplicates in every replication.
    assert!(values(hop_metric(short, "consumer", "duplicates_ttl_expired")).iter().all(|&d| d > 0.0));
    // With a store there are no key-less duplicates.
    assert_eq!(hop_metric(short, "consumer", "duplicates_no_key").mean, Some(0.0));
    // Every delivery reaching the consumer's store either claims the key (and then commits the
    // effect or releases the key) or finds it completed (deduplicated) or in progress (conflict):
    // deliveries = executions + released + deduplicated + conflicts. Every event commits once,
    // and again only after its key expired: executions − duplicates = events. (No fault at the
    // consumer, and the run drains, so every delivery reaches the store.)
    for v in [window, short] {
        let deliveries = values(hop_metric(v, "consumer", "attempts"));
        let events = values(metric(v, "requests"));
        let executions = values(hop_metric(v, "consumer", "executions"));
        let released = values(hop_metric(v, "consumer", "released"));
        let dedup = values(hop_metric(v, "consumer", "deduplicated"));
        let conflicts = values(hop_metric(v, "consumer", "in_progress_conflicts"));
        let dups = values(hop_metric(v, "consumer", "duplicates"));
        for r in 0..deliveries.len() {
            let parts = executions[r] + released[r] + dedup[r] + conflicts[r];
            assert_eq!(deliveries[r], parts, "variant {} replication {r}", v.name);
            assert_eq!(executions[r] - dups[r], events[r], "variant {} replication {r}", v.name);
        }
        assert_eq!(metric(v, "in_flight").mean, Some(0.0), "the run must drain");
    }
    assert!(s.warnings.iter().any(|w| w.contains("keeps idempotency keys for 1h")), "{:?}", s.warnings);
}

#[test]
fn the_chain_warns_when_an_inner_horizon_is_not_smaller() {
    let s = scenario("chain-amplification", &["policy.service-to-db.attempt_timeout=30s"]);
    assert!(s.warnings.iter().any(|w| w.contains("not strictly less than its caller's horizon")), "{:?}", s.warnings);
    let fine = scenario("chain-amplification", &[]);
    // The db is down for the whole run by design (the scenario shows amplification, not
    // recovery): the only warning is that nothing can succeed.
    let expected =
        ["nothing can succeed in this scenario (a hop fails for the whole run, or every request is invalid or poison)"];
    assert_eq!(fine.warnings, expected, "{:?}", fine.warnings);
}
