//! Each fault kind and arrival kind doing what docs/MODEL.md says, on small inline scenarios.

mod common;
use common::metric;
use retrystorm::runner::{run_study, Study};
use retrystorm::scenario::{parse_assignment, Scenario};

const BASE: &str = r#"
name = "faults"
seed = 9
horizon = "20s"
bucket = "100ms"
replications = 2

[[tenant]]
name = "main"
clients = 500
arrival = { kind = "herd", start = "0s", spread = "2s" }
policy = "client"

[policy.client]
jitter = "exponential"
base = "100ms"
cap = "2s"
max_attempts = 20
attempt_timeout = "1s"

[[hop]]
name = "api"
workers = 4
service = { dist = "constant", mean = "2ms" }
"#;

fn run(extra: &str, sets: &[&str]) -> Study {
    let text = format!("{BASE}\n{extra}");
    let sets: Vec<_> = sets.iter().map(|s| parse_assignment(s).expect("valid")).collect();
    let s = Scenario::from_source("inline", &text, &sets).unwrap_or_else(|e| panic!("{e}"));
    run_study(&s, &s.run_variants(), &Default::default())
}

fn mean(study: &Study, name: &str) -> f64 {
    metric(&study.variants[0], name).mean.unwrap_or_else(|| panic!("{name} is null"))
}

fn hop_mean(study: &Study, name: &str) -> f64 {
    common::hop_metric(&study.variants[0], "api", name).mean.expect("present")
}

#[test]
fn outage_fails_fast_and_hang_fails_by_timeout() {
    let outage = run("[[fault]]\nhop = \"api\"\nkind = \"outage\"\nfrom = \"0s\"\nto = \"5s\"", &[]);
    let hang = run("[[fault]]\nhop = \"api\"\nkind = \"hang\"\nfrom = \"0s\"\nto = \"5s\"", &[]);
    // An outage answers at once, so retries come every backoff; a hang holds each attempt for the
    // 1 s timeout first, so fewer attempts fit in the 5 s window.
    assert!(mean(&hang, "attempts") < mean(&outage, "attempts"));
    for s in [&outage, &hang] {
        assert_eq!(mean(s, "succeeded"), 500.0, "everyone succeeds after the fault");
    }
    // Under the hang nothing is served, so no service time is wasted; timeouts decide.
    assert_eq!(hop_mean(&hang, "wasted_work_s"), 0.0);
}

#[test]
fn throttle_retry_after_is_honoured_by_default_and_ignored_when_asked() {
    let fault = "[[fault]]\nhop = \"api\"\nkind = \"throttle\"\nretry_after = \"2s\"\nfrom = \"0s\"\nto = \"6s\"";
    let ignore = run(fault, &["policy.client.honor_retry_after=\"ignore\""]);
    let honour = run(fault, &[]);
    // Waiting at least 2 s per retry allows at most ⌈6 / 2⌉ + 1 = 4 attempts in the window per client.
    assert!(mean(&honour, "attempts") <= 500.0 * 4.0, "{}", mean(&honour, "attempts"));
    assert!(mean(&honour, "attempts") < mean(&ignore, "attempts"));
}

#[test]
fn error_rate_fails_the_given_share_of_calls() {
    // One attempt only: the success ratio estimates 1 − p (binomial sd ≈ 0.013 with 1000 requests).
    let s = run(
        "[[fault]]\nhop = \"api\"\nkind = \"error_rate\"\np = 0.3\nfrom = \"0s\"\nto = \"30s\"",
        &["policy.client.max_attempts=1"],
    );
    let ratio = mean(&s, "success_ratio");
    assert!((ratio - 0.7).abs() < 4.0 * 0.0145, "success ratio {ratio}");
}

#[test]
fn slow_and_capacity_faults_change_service_and_workers() {
    let plain = run("", &[]);
    let slow = run("[[fault]]\nhop = \"api\"\nkind = \"slow\"\nfactor = 10.0\nfrom = \"0s\"\nto = \"30s\"", &[]);
    // Every service takes 10 × 2 ms: busy time grows tenfold (all 500 requests are served once).
    assert!((hop_mean(&slow, "busy_s") - 10.0 * hop_mean(&plain, "busy_s")).abs() < 1e-9);
    let starved = run("[[fault]]\nhop = \"api\"\nkind = \"capacity\"\nworkers = 0\nfrom = \"0s\"\nto = \"3s\"", &[]);
    // No worker for 3 s: requests queue, time out after 1 s and retry; nothing succeeds before 3 s.
    assert!(mean(&starved, "retries") > 0.0);
    assert!(mean(&starved, "latency_s_p50") > 1.0, "{}", mean(&starved, "latency_s_p50"));
    assert_eq!(mean(&plain, "retries"), 0.0);
}

#[test]
fn closed_loop_clients_follow_littles_law() {
    // 10 clients, think 100 ms, service 2 ms on 4 workers (no queueing to speak of): each client
    // cycles every ~102 ms, so about 20 s × 10 / 0.102 ≈ 1961 requests.
    let text = BASE.replace(
        "arrival = { kind = \"herd\", start = \"0s\", spread = \"2s\" }",
        "arrival = { kind = \"closed\", think = \"100ms\" }",
    );
    let sets = [parse_assignment("tenant.main.clients=10").expect("valid")];
    let s = Scenario::from_source("inline", &text, &sets).unwrap_or_else(|e| panic!("{e}"));
    let study = run_study(&s, &s.run_variants(), &Default::default());
    let requests = mean(&study, "requests");
    assert!((requests - 1961.0).abs() <= 10.0, "requests {requests}");
}

#[test]
fn lost_replies_cause_retries_and_duplicates_after_the_effect_committed() {
    // Half the replies are lost after the side effect committed: callers time out and retry, and
    // without an idempotency store every re-execution is a duplicate (`no_key`).
    let s = run("[[fault]]\nhop = \"api\"\nkind = \"lost_reply\"\np = 0.5\nfrom = \"0s\"\nto = \"60s\"", &[]);
    let lost = hop_mean(&s, "lost_replies");
    assert!(lost > 0.0);
    assert_eq!(mean(&s, "succeeded"), 500.0, "every request succeeds eventually");
    // Each lost reply is one re-execution, so duplicates = lost replies exactly.
    assert_eq!(mean(&s, "duplicates_no_key"), lost);
    // Attempts = requests + retries, and every retry follows a lost reply (nothing else fails).
    assert_eq!(mean(&s, "retries"), lost);
}
