//! The metric catalogue and what a run produces agree: every catalogued metric is produced in
//! exactly the scopes the catalogue names, once, and nothing else is produced.

mod common;

use retrystorm::metrics::balance::BALANCE_METRICS;
use retrystorm::metrics::catalogue::{Metric, MetricScope};
use retrystorm::metrics::objective::{MetricRef, Scoped};
use retrystorm::metrics::pool::POOL_METRICS;
use retrystorm::metrics::stats::StatRow;

fn assert_scope(row: &StatRow, scope: MetricScope, what: &str) {
    assert_produced(row, &Metric::in_scope(scope).collect::<Vec<_>>(), &format!("{scope:?}"), what);
}

/// `row` holds each metric of `catalogued` once and nothing else; pool metrics are
/// produced exactly for hops with a connection pool, all together (`pool_metrics_…` below), and
/// balance metrics for balanced hops (`balance_metrics_…`).
fn assert_produced(row: &StatRow, catalogued: &[Metric], scope: &str, what: &str) {
    let produced: Vec<Metric> = row.iter().map(|(m, _)| *m).collect();
    for (i, m) in produced.iter().enumerate() {
        assert!(!produced[..i].contains(m), "{what}: `{m}` produced twice");
        assert!(catalogued.contains(m), "{what}: `{m}` is produced but not catalogued for {scope}");
    }
    for group in [POOL_METRICS, BALANCE_METRICS] {
        let present = group.iter().any(|m| produced.contains(m));
        for m in group.iter().filter(|m| catalogued.contains(m)) {
            assert_eq!(produced.contains(m), present, "{what}: `{m}` and the others of {group:?} come together");
        }
    }
    for m in catalogued {
        if POOL_METRICS.contains(m) || BALANCE_METRICS.contains(m) {
            continue;
        }
        assert!(produced.contains(m), "{what}: `{m}` is catalogued for {scope} but not produced");
    }
}

#[test]
fn pool_metrics_are_produced_exactly_for_hops_with_a_pool() {
    let study = common::study("stability-connection-pool-exhaustion", &["replications=2", "horizon=\"3s\""]);
    for v in &study.variants {
        for (hop, row) in &v.hops {
            assert_scope(row, MetricScope::Hop, &format!("pool/{} hop {hop}", v.name));
            let has = row.get(Metric::PoolWaitersPeak).is_some();
            assert_eq!(
                has,
                hop == "server",
                "{}: only the server has a pool, hop {hop} has pool metrics: {has}",
                v.name
            );
        }
    }
}

#[test]
fn balance_metrics_are_produced_exactly_for_balanced_hops() {
    let study = common::study("stability-lb-sinkholing", &["replications=2", "horizon=\"10s\""]);
    for v in &study.variants {
        for (hop, row) in &v.hops {
            assert_scope(row, MetricScope::Hop, &format!("lb-sinkholing/{} hop {hop}", v.name));
            assert_eq!(row.get(Metric::ReplicaShareMax).is_some(), hop == "servers", "{}: hop {hop}", v.name);
        }
        // Usable in an objective or a requirement, as any hop metric.
        let scoped = Scoped { global: &v.metrics, hops: &v.hops, tenants: &v.tenants };
        let r = MetricRef::parse("hop.servers.replica_share_max").expect("a hop metric");
        let share = r.stat(&scoped).expect("measured").mean.expect("a value");
        assert!((1.0 / 3.0..=1.0).contains(&share), "{}: {share}", v.name);
    }
}

#[test]
fn catalogue_matches_what_a_run_produces() {
    // A chain of hops, several tenants' worth of scopes, faults (recovery) and idempotency.
    for name in ["chain-amplification", "noisy-neighbor"] {
        let study = common::study(name, &["replications=2", "horizon=\"5s\""]);
        for v in &study.variants {
            assert_scope(&v.metrics, MetricScope::Global, &format!("{name}/{}", v.name));
            assert!(!v.hops.is_empty() && !v.tenants.is_empty());
            for (hop, row) in &v.hops {
                assert_scope(row, MetricScope::Hop, &format!("{name}/{} hop {hop}", v.name));
            }
            for (tenant, row) in &v.tenants {
                assert_scope(row, MetricScope::Tenant, &format!("{name}/{} tenant {tenant}", v.name));
            }
        }
    }
    // Replicas of a balanced hop: one row per replica, the replica-scope metrics.
    let study = common::study("stability-lb-sinkholing", &["replications=2", "horizon=\"10s\""]);
    let replica_metrics: Vec<Metric> = Metric::in_replica_scope().collect();
    for v in &study.variants {
        let names: Vec<&str> = v.replicas.iter().map(|(n, _)| n.as_str()).collect();
        assert_eq!(names, ["servers[0]", "servers[1]", "servers[2]"], "{}", v.name);
        for (replica, row) in &v.replicas {
            assert_produced(row, &replica_metrics, "Replica", &format!("lb-sinkholing/{} {replica}", v.name));
        }
    }
    // A chain without replicas has none.
    assert!(common::study("chain-amplification", &["replications=1", "horizon=\"2s\""]).variants[0]
        .replicas
        .is_empty());
    // Every catalogued metric is measured somewhere.
    for m in Metric::ALL {
        let s = m.def().scopes;
        assert!(s.global || s.hop || s.tenant || s.replica, "`{m}` has no scope");
    }
}

#[test]
fn summary_json_round_trips_through_its_typed_definition() {
    use retrystorm::report::summary::{Summary, FORMAT_VERSION};
    let study = common::study("chain-amplification", &["replications=2", "horizon=\"5s\""]);
    let summary = Summary::of(&study);
    assert_eq!(summary.format_version, FORMAT_VERSION);
    let bytes = summary.to_bytes();
    let back = Summary::from_json(std::str::from_utf8(&bytes).unwrap()).expect("reads back");
    let again = back.to_bytes();
    if let Some(at) = bytes.iter().zip(&again).position(|(a, b)| a != b) {
        let show = |b: &[u8]| String::from_utf8_lossy(&b[at.saturating_sub(80)..(at + 40).min(b.len())]).into_owned();
        panic!("summary.json changes on a round trip at byte {at}:\n{}\nvs\n{}", show(&bytes), show(&again));
    }
    assert_eq!(again.len(), bytes.len());
    assert!(back == summary, "the summary read back differs from the one written");
    // A metric outside the catalogue, an unknown field or another format version is refused.
    let text = String::from_utf8(bytes).unwrap();
    for (from, to) in [
        ("\"amplification\":", "\"amplificaton\":"),
        ("\"bucket_s\":", "\"bucket_seconds\":"),
        (&format!("\"format_version\": {FORMAT_VERSION}") as &str, "\"format_version\": 99"),
    ] {
        assert!(text.contains(from), "{from}");
        let err = Summary::from_json(&text.replacen(from, to, 1)).expect_err(to);
        assert!(!err.is_empty());
    }
}

/// A metric a run did not observe is null in that run, never 0.
mod not_observed {
    use super::common;

    #[test]
    fn a_metastable_run_has_no_cleared_backlog() {
        // metastable-collapse's server has a million workers: its stuck requests sit in
        // service, within the workers' floor of the normal backlog, so "cleared" read 0 s in
        // the runs that never recovered.
        let study = common::study("metastable-collapse", &["replications=30"]);
        let v = study.variants.iter().find(|v| v.name == "no-backoff").expect("no-backoff");
        let metastable = &common::metric(v, "metastable").values;
        let cleared = &common::metric(v, "backlog_cleared_s").values;
        let hop_cleared = &common::hop_metric(v, "server", "backlog_cleared_s").values;
        let stuck = metastable.iter().filter(|m| **m == Some(1.0)).count();
        assert!(stuck > 0 && stuck < 30, "both outcomes appear: {stuck} of 30 metastable");
        for (r, m) in metastable.iter().enumerate() {
            let recovered = *m == Some(0.0);
            assert_eq!(cleared[r].is_some(), recovered, "run {r}: metastable {m:?}, cleared {:?}", cleared[r]);
            assert_eq!(hop_cleared[r], cleared[r], "run {r}: the system's value is the first hop's");
        }
    }

    #[test]
    fn a_run_cut_with_requests_in_flight_has_no_completion_time_nor_queue_wait() {
        // One-hour services: the drain limit cuts the run with thousands of requests in flight,
        // queued behind workers that never finish; nothing ever finished waiting in the queue.
        let study = common::study("outage-herd", &["hop.api.service.mean=1h", "replications=2"]);
        for v in &study.variants {
            for (r, in_flight) in common::values(common::metric(v, "in_flight")).iter().enumerate() {
                assert!(*in_flight > 0.0, "{} run {r}: requests in flight", v.name);
                assert_eq!(common::metric(v, "completion_time_s").values[r], None, "{} run {r}", v.name);
                assert_eq!(common::hop_metric(v, "api", "queue_wait_s_mean").values[r], None, "{} run {r}", v.name);
            }
        }
        // A run that drains keeps both.
        let study = common::study("outage-herd", &["replications=2"]);
        for v in &study.variants {
            for r in 0..2 {
                assert!(common::metric(v, "completion_time_s").values[r].is_some_and(|t| t > 0.0), "{}", v.name);
                assert!(common::hop_metric(v, "api", "queue_wait_s_mean").values[r].is_some(), "{}", v.name);
            }
        }
    }
}
