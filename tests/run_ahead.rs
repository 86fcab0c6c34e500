//! Retries run ahead of the clock (`model/sim/run_ahead.rs`) record exactly what the same run
//! records with every retry queued: every counter, series, histogram, sample and terminal state,
//! on every bundled scenario and on herds built to reach each condition of the rule (faults that
//! start with requests in flight, throttles with Retry-After, timeouts, deadlines, error-rate and
//! hang faults inside an outage, chains, several tenants). Only the count of queued events and
//! of retries run ahead may differ, and each test checks that some retries did run ahead where the
//! rule allows it, so the comparison is never between two identical paths.

mod common;

use retrystorm::model::sim::Simulation;
use retrystorm::model::SimSpec;
use retrystorm::scenario::{parse_assignment, Scenario};

/// The record of replication `replication`, with and without running ahead: its `Debug` text
/// with the two engine counts blanked, and the retries run ahead.
fn both_ways(spec: &SimSpec, seed: u64, replication: u64) -> (String, String, u64) {
    let text = |sim: Simulation| {
        let mut sim = sim;
        sim.run_to_end();
        let mut record = sim.finish();
        let ahead = record.retries_run_ahead;
        (record.events, record.retries_run_ahead) = (0, 0);
        (format!("{record:?}"), ahead)
    };
    let (ahead, ran_ahead) = text(Simulation::new(spec, seed, replication));
    let (queued, none) = text(Simulation::new(spec, seed, replication).without_run_ahead());
    assert_eq!(none, 0, "without_run_ahead ran retries ahead");
    (ahead, queued, ran_ahead)
}

/// Compares the two ways for replications `0..replications`; returns the retries run ahead.
fn same_both_ways(name: &str, spec: &SimSpec, seed: u64, replications: u64) -> u64 {
    let mut total = 0;
    for replication in 0..replications {
        let (ahead, queued, ran) = both_ways(spec, seed, replication);
        if ahead != queued {
            let at = ahead.bytes().zip(queued.bytes()).position(|(a, b)| a != b).unwrap_or(0);
            let lo = at.saturating_sub(300);
            panic!(
                "{name} (seed {seed}, replication {replication}): the record differs when retries run ahead, \
                 from byte {at}:\n  ahead:  …{}\n  queued: …{}",
                &ahead[lo..(at + 200).min(ahead.len())],
                &queued[lo..(at + 200).min(queued.len())]
            );
        }
        total += ran;
    }
    total
}

fn herd(extra: &str, sets: &[&str]) -> Scenario {
    let source = format!(
        r#"name = "herd"
seed = 11
horizon = "60s"
bucket = "100ms"
[[tenant]]
name = "main"
clients = 3000
arrival = {{ kind = "herd", start = "0s", spread = "1s", requests_per_client = 1 }}
policy = "client"
[policy.client]
jitter = "full"
base = "100ms"
cap = "5s"
max_attempts = 8
[[hop]]
name = "api"
workers = 2
service = {{ dist = "exponential", mean = "1ms" }}
{extra}"#
    );
    let overrides: Vec<_> = sets.iter().map(|s| parse_assignment(s).expect("valid assignment")).collect();
    Scenario::from_source("herd.toml", &source, &overrides).expect("valid herd")
}

#[test]
fn every_bundled_scenario_and_variant_records_the_same_with_retries_run_ahead() {
    let paths = common::bundled_scenarios();
    assert!(paths.len() >= 20, "bundled scenarios missing");
    let mut ran = Vec::new();
    for path in &paths {
        let scenario = Scenario::load(path.to_str().expect("utf-8"), &[]).expect("bundled scenarios are valid");
        let name = path.file_stem().expect("file").to_string_lossy().to_string();
        if same_both_ways(&name, &scenario.base, scenario.seed, 1) > 0 {
            ran.push(name.clone());
        }
        for variant in &scenario.variants {
            let name = format!("{name} · {}", variant.name);
            if same_both_ways(&name, &variant.spec, scenario.seed, 1) > 0 {
                ran.push(name);
            }
        }
    }
    assert!(ran.iter().any(|n| n == "outage-herd"), "no retry of outage-herd ran ahead (ran: {ran:?})");
}

#[test]
fn every_jitter_strategy_of_the_herd_records_the_same() {
    let scenario = common::scenario("outage-herd", &["tenant.main.clients=3000"]);
    let jitters: Vec<String> =
        ["none", "exponential", "full", "equal", "decorrelated", "decorrelated_v2", "proportional"]
            .map(String::from)
            .to_vec();
    for variant in scenario.jitter_variants(&jitters).expect("valid") {
        let ran = same_both_ways(&variant.name, &variant.spec, scenario.seed, 2);
        // `none` retries at once (a zero delay): its retries run ahead too, to the last attempt.
        assert!(ran > 3000, "{}: only {ran} retries ran ahead", variant.name);
    }
}

/// Each herd reaches one condition of the rule; `ahead` says whether retries must run ahead.
#[test]
fn herds_at_each_condition_record_the_same() {
    let outage = "[[fault]]\nhop = \"api\"\nkind = \"outage\"\nfrom = \"0s\"\nto = \"6s\"\n";
    let cases: Vec<(&str, String, Vec<&str>, bool)> = vec![
        ("plain outage", outage.to_string(), vec![], true),
        // Traffic is served (and queued) before the outage starts: retries run ahead only once
        // the hop is empty.
        (
            "outage starting mid-run",
            "[[fault]]\nhop = \"api\"\nkind = \"outage\"\nfrom = \"500ms\"\nto = \"6s\"\n".into(),
            vec!["hop.api.workers=1", "hop.api.service={ dist = \"constant\", mean = \"2ms\" }"],
            true,
        ),
        (
            "throttle with Retry-After",
            "[[fault]]\nhop = \"api\"\nkind = \"throttle\"\nretry_after = \"700ms\"\nfrom = \"0s\"\nto = \"6s\"\n".into(),
            vec!["policy.client.honor_retry_after=\"at_least\""],
            true,
        ),
        ("attempt timeout", outage.to_string(), vec!["policy.client.attempt_timeout=\"50ms\""], true),
        ("deadline", outage.to_string(), vec!["policy.client.deadline=\"3s\""], true),
        (
            "error-rate fault inside the outage",
            format!("{outage}[[fault]]\nhop = \"api\"\nkind = \"error_rate\"\np = 0.5\nfrom = \"2s\"\nto = \"3s\"\n"),
            vec![],
            true,
        ),
        (
            "hang inside the outage",
            format!("{outage}[[fault]]\nhop = \"api\"\nkind = \"hang\"\nfrom = \"4s\"\nto = \"4500ms\"\n"),
            vec!["policy.client.attempt_timeout=\"200ms\""],
            true,
        ),
        // The answer changes inside the refusal: the outage answers while both are active (the
        // earlier fault comes first), the throttle once the outage ends at 3 s; a chain that
        // started after 1 s runs through 3 s, and its answer must change there.
        (
            "outage then throttle, overlapping",
            "[[fault]]\nhop = \"api\"\nkind = \"outage\"\nfrom = \"0s\"\nto = \"3s\"\n\
             [[fault]]\nhop = \"api\"\nkind = \"throttle\"\nretry_after = \"300ms\"\nfrom = \"1s\"\nto = \"6s\"\n"
                .into(),
            vec![],
            true,
        ),
        (
            "two outages back to back",
            format!("{outage}[[fault]]\nhop = \"api\"\nkind = \"outage\"\nfrom = \"6s\"\nto = \"9s\"\n"),
            vec![],
            true,
        ),
        (
            "a second, Poisson tenant",
            format!(
                "{outage}[[tenant]]\nname = \"steady\"\nclients = 50\narrival = {{ kind = \"poisson\", rate_per_s = 300 }}\npolicy = \"client\"\n"
            ),
            vec![],
            true,
        ),
        // Throttles are not retried here: every call ends at its first answer, nothing runs ahead.
        (
            "throttles not retried",
            "[[fault]]\nhop = \"api\"\nkind = \"throttle\"\nretry_after = \"1s\"\nfrom = \"0s\"\nto = \"6s\"\n".into(),
            vec!["policy.client.retry_on=[\"transient\"]"],
            false,
        ),
        // The api's outage lets its work complete: a crash of a hop that calls another (below)
        // keeps the links its waiting jobs' calls are cancelled by, and nothing runs ahead.
        (
            "a chain: the api's calls to the db",
            format!(
                "[[hop]]\nname = \"db\"\nworkers = 4\nservice = {{ dist = \"constant\", mean = \"1ms\" }}\n\
                 [[fault]]\nhop = \"db\"\nkind = \"outage\"\nfrom = \"0s\"\nto = \"3s\"\n{}",
                outage.replace("kind = \"outage\"\n", "kind = \"outage\"\nin_service = \"complete\"\n")
            ),
            vec!["hop.api.downstream_policy=client"],
            true,
        ),
        (
            "a chain whose calling hop crashes",
            format!(
                "[[hop]]\nname = \"db\"\nworkers = 4\nservice = {{ dist = \"constant\", mean = \"1ms\" }}\n\
                 [[fault]]\nhop = \"db\"\nkind = \"outage\"\nfrom = \"0s\"\nto = \"3s\"\n{outage}"
            ),
            vec!["hop.api.downstream_policy=client"],
            false,
        ),
        // A client-scoped budget is state the retries share with nothing but their client, but
        // its decisions are summed per bucket in floating point: not run ahead.
        (
            "client-scoped budget",
            outage.to_string(),
            vec!["policy.client.budget={ kind = \"token_bucket\", scope = \"client\" }"],
            false,
        ),
        ("breaker", outage.to_string(), vec!["policy.client.breaker={ scope = \"client\" }"], false),
        ("network delay", outage.to_string(), vec!["hop.api.network={ dist = \"constant\", mean = \"1ms\" }"], false),
    ];
    for (name, extra, sets, ahead) in cases {
        let scenario = herd(&extra, &sets);
        let ran = same_both_ways(name, &scenario.base, scenario.seed, 2);
        assert_eq!(ran > 0, ahead, "{name}: {ran} retries ran ahead");
    }
}
