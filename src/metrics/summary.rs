//! Scalar metrics of one run (names end in their unit), as listed in MODEL.md "Metrics".

use super::after::after_trigger;
use super::recovery::{recovery_outcome, RecoveryOutcome};
use super::{HopBucket, RunRecord};
use crate::engine::time::ns_to_secs;
use crate::model::SimSpec;
use hdrhistogram::Histogram;

/// Named metric values of one scope; `None` is reported as `null`.
pub type MetricRow = Vec<(&'static str, Option<f64>)>;

/// The scalar metrics of one run: overall, per hop, per tenant.
#[derive(Clone, Debug)]
pub struct Scalars {
    /// Whole-system metrics.
    pub global: MetricRow,
    /// One row per hop.
    pub hops: Vec<MetricRow>,
    /// One row per tenant.
    pub tenants: Vec<MetricRow>,
}

fn ratio(num: f64, den: f64) -> Option<f64> {
    (den > 0.0).then(|| num / den)
}

fn latency_rows(hist: &Histogram<u64>) -> MetricRow {
    let q = |quantile: f64| (!hist.is_empty()).then(|| hist.value_at_quantile(quantile) as f64 / 1e6);
    vec![
        ("latency_s_mean", (!hist.is_empty()).then(|| hist.mean() / 1e6)),
        ("latency_s_p50", q(0.5)),
        ("latency_s_p90", q(0.9)),
        ("latency_s_p99", q(0.99)),
        ("latency_s_p999", q(0.999)),
        ("latency_s_max", (!hist.is_empty()).then(|| hist.max() as f64 / 1e6)),
    ]
}

fn peak_per_s(series: &[HopBucket], bucket_ns: u64) -> f64 {
    let peak = series.iter().map(|b| b.attempts).max().unwrap_or(0);
    f64::from(peak) / ns_to_secs(bucket_ns)
}

/// Derives the scalar metrics of a run.
pub fn scalars(record: &RunRecord, spec: &SimSpec) -> Scalars {
    let requests: u64 = record.tenants.iter().map(|t| t.requests).sum();
    let sum = |f: fn(&super::TenantCounters) -> u64| record.tenants.iter().map(f).sum::<u64>() as f64;
    let succeeded = sum(|t| t.succeeded);
    let mut latency = super::new_latency_histogram();
    for t in &record.tenants {
        latency.add(&t.latency_us).expect("histograms of one config add");
    }
    let hops: Vec<MetricRow> = (0..spec.hops.len()).map(|h| hop_row(record, spec, h, requests)).collect();
    let hop0 = &hops[0];
    let get = |row: &MetricRow, name: &str| row.iter().find(|(n, _)| *n == name).and_then(|(_, v)| *v);
    let outcome = recovery_outcome(record, spec);
    let flag = |b: bool| Some(if b { 1.0 } else { 0.0 });
    let mut global: MetricRow = vec![
        ("requests", Some(requests as f64)),
        ("attempts", get(hop0, "attempts")),
        ("retries", get(hop0, "retries")),
        ("amplification", get(hop0, "amplification")),
        ("succeeded", Some(succeeded)),
        ("rejected", Some(sum(|t| t.rejected))),
        ("dlq", Some(sum(|t| t.dlq))),
        ("dlq_deadline", Some(sum(|t| t.dlq_deadline))),
        ("dlq_budget", Some(sum(|t| t.dlq_budget))),
        ("retries_denied", Some(sum(|t| t.retries_denied))),
        ("local_rejections", Some(sum(|t| t.local_rejections))),
        ("in_flight", Some(record.in_flight.iter().sum::<u64>() as f64)),
        ("success_ratio", ratio(succeeded, requests as f64)),
        ("duplicates", Some(sum(|t| t.duplicates_ttl_expired + t.duplicates_no_key))),
        ("duplicates_ttl_expired", Some(sum(|t| t.duplicates_ttl_expired))),
        ("duplicates_no_key", Some(sum(|t| t.duplicates_no_key))),
        ("deduplicated", Some(sum(|t| t.deduplicated))),
        ("peak_attempts_per_s", get(hop0, "peak_attempts_per_s")),
        ("capacity_per_s", get(hop0, "capacity_per_s")),
        ("peak_over_capacity", get(hop0, "peak_over_capacity")),
        ("peak_after_per_s", get(hop0, "peak_after_per_s")),
        ("peak_after_over_capacity", get(hop0, "peak_after_over_capacity")),
        ("time_over_capacity_after_s", get(hop0, "time_over_capacity_after_s")),
        ("backlog_peak", get(hop0, "backlog_peak")),
        ("backlog_cleared_s", get(hop0, "backlog_cleared_s")),
    ];
    global.extend(latency_rows(&latency));
    let wasted: u64 = record.hops.iter().map(|h| h.wasted_work_ns).sum();
    global.extend([
        ("completion_time_s", Some(ns_to_secs(record.completion_time_ns))),
        ("wasted_work_s", Some(ns_to_secs(wasted))),
        ("recovery_time_s", if let RecoveryOutcome::Recovered(ns) = outcome { Some(ns_to_secs(ns)) } else { None }),
        ("recovered", flag(matches!(outcome, RecoveryOutcome::Recovered(_)))),
        ("metastable", flag(outcome == RecoveryOutcome::Metastable)),
        ("recovery_unobservable", flag(outcome == RecoveryOutcome::NotObservable)),
        ("events", Some(record.events as f64)),
        ("truncated", Some(if record.truncated.is_some() { 1.0 } else { 0.0 })),
    ]);
    let tenants = (0..spec.tenants.len()).map(|t| tenant_row(record, spec, t)).collect();
    Scalars { global, hops, tenants }
}

fn hop_row(record: &RunRecord, spec: &SimSpec, h: usize, requests: u64) -> MetricRow {
    let c = &record.hops[h];
    let hop = &spec.hops[h];
    let peak = peak_per_s(&record.hop_series[h], spec.bucket);
    let service_mean_s = hop.service.mean_ns(hop.workers) / 1e9;
    let capacity = ratio(f64::from(hop.workers), service_mean_s);
    let after = after_trigger(&record.hop_series[h], spec, h, capacity);
    vec![
        ("attempts", Some(c.attempts as f64)),
        ("first_attempts", Some(c.first_attempts as f64)),
        ("retries", Some(c.retries as f64)),
        ("amplification", ratio(c.attempts as f64, requests as f64)),
        ("ok_replies", Some(c.ok_replies as f64)),
        ("overflow", Some(c.overflow as f64)),
        ("lost_replies", Some(c.lost_replies as f64)),
        ("peak_attempts_per_s", Some(peak)),
        ("capacity_per_s", capacity),
        ("peak_over_capacity", capacity.and_then(|cap| ratio(peak, cap))),
        ("peak_after_per_s", after.peak_after_per_s),
        ("peak_after_over_capacity", after.peak_after_over_capacity),
        ("time_over_capacity_after_s", after.time_over_capacity_after_s),
        ("backlog_peak", Some(after.backlog_peak)),
        ("backlog_cleared_s", after.backlog_cleared_s),
        ("executions", Some(c.executions as f64)),
        ("duplicates", Some((c.duplicates_ttl_expired + c.duplicates_no_key) as f64)),
        ("duplicates_ttl_expired", Some(c.duplicates_ttl_expired as f64)),
        ("duplicates_no_key", Some(c.duplicates_no_key as f64)),
        ("deduplicated", Some(c.deduplicated as f64)),
        ("wasted_work_s", Some(ns_to_secs(c.wasted_work_ns))),
        ("busy_s", Some(ns_to_secs(c.busy_ns))),
        ("queue_wait_s_mean", ratio(c.queue_wait_ns_sum as f64 / 1e9, c.services_started as f64)),
    ]
}

fn tenant_row(record: &RunRecord, spec: &SimSpec, t: usize) -> MetricRow {
    let c = &record.tenants[t];
    let series = &record.tenant_series[t];
    let peak = series.iter().map(|b| b.attempts).max().unwrap_or(0);
    let mut row: MetricRow = vec![
        ("requests", Some(c.requests as f64)),
        ("attempts", Some(c.attempts as f64)),
        ("retries", Some(c.retries as f64)),
        ("amplification", ratio(c.attempts as f64, c.requests as f64)),
        ("succeeded", Some(c.succeeded as f64)),
        ("rejected", Some(c.rejected as f64)),
        ("dlq", Some(c.dlq as f64)),
        ("dlq_deadline", Some(c.dlq_deadline as f64)),
        ("dlq_budget", Some(c.dlq_budget as f64)),
        ("retries_denied", Some(c.retries_denied as f64)),
        ("local_rejections", Some(c.local_rejections as f64)),
        ("in_flight", Some(record.in_flight[t] as f64)),
        ("success_ratio", ratio(c.succeeded as f64, c.requests as f64)),
        ("duplicates", Some((c.duplicates_ttl_expired + c.duplicates_no_key) as f64)),
        ("duplicates_ttl_expired", Some(c.duplicates_ttl_expired as f64)),
        ("duplicates_no_key", Some(c.duplicates_no_key as f64)),
        ("deduplicated", Some(c.deduplicated as f64)),
        ("peak_attempts_per_s", Some(f64::from(peak) / ns_to_secs(spec.bucket))),
    ];
    row.extend(latency_rows(&c.latency_us));
    row
}
