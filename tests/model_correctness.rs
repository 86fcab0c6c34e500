//! Model correctness — an idempotency store that never reports a success without its
//! effect, deadline propagation, invariant warnings that match the retry-budget guide, Retry-After
//! honoured by default, common random numbers for the adaptive throttle. (Counts bounded in validation: `tests/bad_scenarios/hops_too_many.toml`.) Each test
//! runs one of the probe scenarios (bundled under `scenarios/`) or a small inline one.

mod common;
use common::*;
use retrystorm::model::sim;
use retrystorm::runner::run_study;
use retrystorm::scenario::{parse_assignment, Scenario};
use std::process::Command;

fn inline(text: &str, sets: &[&str]) -> Scenario {
    let sets: Vec<_> = sets.iter().map(|s| parse_assignment(s).expect("valid --set")).collect();
    Scenario::from_source("inline", text, &sets).unwrap_or_else(|e| panic!("{e}"))
}

fn validate(args: &[&str]) -> (Option<i32>, String) {
    let out = Command::new(env!("CARGO_BIN_EXE_retrystorm")).arg("validate").args(args).output().expect("runs");
    let text = format!("{}{}", String::from_utf8_lossy(&out.stdout), String::from_utf8_lossy(&out.stderr));
    (out.status.code(), text)
}

fn bundled(name: &str) -> String {
    format!("{}/scenarios/{name}.toml", env!("CARGO_MANIFEST_DIR"))
}

#[test]
fn no_success_without_its_ledger_effect_while_the_ledger_is_down() {
    // Deliveries at 0 s, +5 s and +5 min 5 s; the ledger refuses everything for the first 120 s and
    // every event arrives in the first 100 s. The first two deliveries fail and release the key,
    // the third commits: exactly, in every replication and in both in-progress modes.
    let s = scenario("idempotency-in-flight", &[]);
    let study = run_study(&s, &s.variants, &Default::default());
    for v in &study.variants {
        let events = values(metric(v, "requests"));
        let succeeded = values(metric(v, "succeeded"));
        let ledger_ok = values(hop_metric(v, "ledger", "ok_replies"));
        let released = values(hop_metric(v, "consumer", "released"));
        let executions = values(hop_metric(v, "consumer", "executions"));
        for r in 0..events.len() {
            let at = format!("variant {} replication {r} (seed {})", v.name, s.seed);
            assert!(events[r] > 40.0, "{at}: {} events", events[r]);
            assert_eq!(succeeded[r], events[r], "{at}: every event succeeds in the end");
            assert_eq!(ledger_ok[r], succeeded[r], "{at}: a success without its ledger write");
            assert_eq!(executions[r], events[r], "{at}: one committed effect per event");
            assert_eq!(released[r], 2.0 * events[r], "{at}: the two deliveries in the outage release");
        }
        for zero in ["deduplicated", "in_progress_conflicts", "dlq", "duplicates", "in_flight"] {
            assert_eq!(metric(v, zero).mean, Some(0.0), "variant {}: {zero}", v.name);
        }
    }
}

#[test]
fn a_duplicate_while_the_original_is_in_progress_conflicts_or_waits() {
    // The ledger takes 10 s per write (no failure), the provider waits 3 s per delivery: the second
    // delivery (at 3 s + 5 s = 8 s) finds the first still in progress. `conflict` answers it with a
    // retryable 409 and the third delivery (5 min later) gets the stored result; `wait` holds it
    // until the first commits (at ~10 s, before the provider's 3 s timeout at 11 s) and returns the
    // stored result, so there is no third delivery. Enough consumer workers that no delivery waits
    // in the queue.
    let s = scenario(
        "idempotency-in-flight",
        &[
            "policy.provider.attempt_timeout=3s",
            "hop.consumer.workers=256",
            "policy.ledger-call.attempt_timeout=30s",
            "policy.ledger-call.deadline=1m",
            r#"fault=[{hop="ledger",kind="slow",factor=1000.0,from="0s",to="200s"}]"#,
        ],
    );
    let study = run_study(&s, &s.variants, &Default::default());
    for v in &study.variants {
        let events = values(metric(v, "requests"));
        let deliveries = values(metric(v, "attempts"));
        let conflicts = values(hop_metric(v, "consumer", "in_progress_conflicts"));
        let dedup = values(hop_metric(v, "consumer", "deduplicated"));
        let executions = values(hop_metric(v, "consumer", "executions"));
        let ledger = values(hop_metric(v, "ledger", "attempts"));
        let (per_event_deliveries, per_event_conflicts) = if v.name == "wait" { (2.0, 0.0) } else { (3.0, 1.0) };
        for r in 0..events.len() {
            let at = format!("variant {} replication {r} (seed {})", v.name, s.seed);
            assert_eq!(deliveries[r], per_event_deliveries * events[r], "{at}: deliveries");
            assert_eq!(conflicts[r], per_event_conflicts * events[r], "{at}: conflicts");
            assert_eq!(dedup[r], events[r], "{at}: deduplicated");
            assert_eq!(executions[r], events[r], "{at}: one effect per event");
            assert_eq!(ledger[r], events[r], "{at}: one ledger write per event");
        }
        assert_eq!(metric(v, "duplicates").mean, Some(0.0));
        assert_eq!(metric(v, "succeeded").mean, metric(v, "requests").mean);
    }
}

#[test]
fn with_deadline_propagation_no_inner_attempt_starts_after_the_events_deadline() {
    // Events are created in [0 s, 1 s] with a 2 s deadline, so every deadline is over by 3 s. The
    // db is down; the edge's own policy would retry it for ~40 s.
    let s = scenario("deadline-propagation", &[]);
    let spec_of = |name: &str| &s.variants.iter().find(|v| v.name == name).expect("variant").spec;
    let late_db_attempts = |name: &str, rep: u64| {
        let spec = spec_of(name);
        let record = sim::run(spec, s.seed, rep);
        let first_late = (3_000_000_000 / spec.bucket) as usize;
        record.hop_series[1][first_late..].iter().map(|b| u64::from(b.attempts)).sum::<u64>()
    };
    for rep in 0..3 {
        assert_eq!(late_db_attempts("propagate", rep), 0, "replication {rep} (seed {})", s.seed);
        // The test can fail: without propagation the inner retries run on long after.
        assert!(late_db_attempts("per-call", rep) > 1000, "replication {rep}");
    }
}

#[test]
fn validate_warns_on_the_probes() {
    // An inner store checked end to end, and an outer attempt timeout shorter than the inner horizon.
    let (code, text) = validate(&[&bundled("inner-store-horizon")]);
    assert_eq!(code, Some(0), "{text}");
    assert!(text.contains("can reach hop `consumer` for up to") && text.contains("end to end"), "{text}");
    assert!(text.contains("policy `client` gives each attempt 5s but hop `edge` may retry"), "{text}");
    // A TTL equal to the window violates window < TTL.
    let probe = bundled("idempotency-in-flight");
    let (_, text) = validate(&[&probe, "--set", "hop.consumer.idempotency.ttl=window"]);
    // Warnings wrap at 100 columns: read them unwrapped.
    let text = text.replace("\n  ", " ");
    assert!(text.contains("keeps idempotency keys for 1h but policy `provider` delivers for a window of 1h"), "{text}");
    assert!(text.contains("must be strictly longer than the window"), "{text}");
    let (_, text) = validate(&[&probe, "--set", "hop.consumer.idempotency.ttl=window+1s"]);
    assert!(!text.contains("warning"), "{text}");
    // Retry horizon ≤ window: attempts the deadline would cut are flagged with the count that fits.
    let (_, text) = validate(&[&probe, "--set", "policy.ledger-call.attempt_timeout=5s"]);
    assert!(text.contains("policy `ledger-call` allows 2 attempts but only 1 fit its 10s deadline"), "{text}");
    // The fixed probes are clean, but for deadline-propagation's db, down for the whole run on
    // purpose: its one warning says nothing can succeed.
    let (_, text) = validate(&[&bundled("idempotency-in-flight")]);
    assert!(!text.contains("warning"), "idempotency-in-flight: {text}");
    let (_, text) = validate(&[&bundled("deadline-propagation")]);
    assert_eq!(text.matches("warning").count(), 1, "deadline-propagation: {text}");
    assert!(text.contains("warning: nothing can succeed"), "deadline-propagation: {text}");
}

#[test]
fn the_inner_store_probe_duplicates_every_event() {
    // What the warning is about: client retries replay the key after the consumer's 70 s TTL.
    let s = scenario("inner-store-horizon", &[]);
    let study = run_study(&s, &s.run_variants(), &Default::default());
    let v = &study.variants[0];
    let (events, dups) = (values(metric(v, "requests")), values(metric(v, "duplicates_ttl_expired")));
    assert!(events.iter().zip(&dups).all(|(e, d)| e == d && *e > 30.0), "{events:?} {dups:?}");
}

const THROTTLED: &str = r#"
name = "retry-after"
seed = 3
horizon = "2s"
bucket = "100ms"

[[tenant]]
name = "main"
clients = 200
arrival = { kind = "herd", start = "0s", spread = "1s" }
policy = "client"

[policy.client]
jitter = "full"
base = "10ms"
cap = "1s"
max_attempts = 3

[[hop]]
name = "api"
workers = 8
service = { dist = "constant", mean = "1ms" }

[[fault]]
hop = "api"
kind = "throttle"
retry_after = "5s"
from = "0s"
to = "1s"
"#;

#[test]
fn retry_after_is_honoured_by_default_and_delays_record_the_wait_taken() {
    let delays = |sets: &[&str]| {
        let s = inline(THROTTLED, sets);
        let record = sim::run(&s.run_variants()[0].spec, s.seed, 0);
        record.retry_delays_ns[0].clone()
    };
    let honoured = delays(&[]);
    assert!(honoured.len() >= 100, "{} first retries recorded", honoured.len());
    assert!(honoured.iter().all(|&d| d >= 5_000_000_000), "min {:?}", honoured.iter().min());
    let ignored = delays(&["policy.client.honor_retry_after=\"ignore\""]);
    assert!(ignored.iter().all(|&d| d <= 10_000_000), "max {:?}", ignored.iter().max());
}

const ADAPTIVE: &str = r#"
name = "adaptive"
seed = 5
horizon = "30s"
bucket = "1s"

[[tenant]]
name = "main"
clients = 50
arrival = { kind = "poisson", rate_per_s = 100.0 }
policy = "client"

[policy.client]
jitter = "full"
base = "10ms"
cap = "100ms"
max_attempts = 3
budget = { kind = "adaptive_throttle", scope = "tenant", k = 2.0, window = "10s" }

[[hop]]
name = "api"
workers = 100
service = { dist = "constant", mean = "1ms" }

[[fault]]
hop = "api"
kind = "outage"
from = "5s"
to = "15s"
"#;

#[test]
fn adding_an_error_rate_fault_does_not_change_throttle_decisions() {
    // An error_rate fault with p = 0 changes no outcome but draws from the faults stream at every
    // arrival; the throttle's coin has its own stream, so every counter stays the same.
    let run = |sets: &[&str]| {
        let s = inline(ADAPTIVE, sets);
        let r = sim::run(&s.run_variants()[0].spec, s.seed, 0);
        let t = &r.tenants[0];
        (t.local_rejections, t.attempts, t.succeeded, t.dlq)
    };
    let plain = run(&[]);
    assert!(plain.0 > 100, "the throttle must reject locally: {plain:?}");
    let with_fault = run(&[
        r#"fault=[{hop="api",kind="outage",from="5s",to="15s"},{hop="api",kind="error_rate",p=0.0,from="0s",to="30s"}]"#,
    ]);
    assert_eq!(plain, with_fault);
}
