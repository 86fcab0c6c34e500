//! Scalar metrics of one run, as catalogued in [`super::catalogue`] and listed in MODEL.md "Metrics".

use super::after::after_trigger;
use super::catalogue::Metric;
use super::recovery::{recovery_outcome, RecoveryOutcome};
use super::{HopBucket, Latencies, RunRecord, RunShape};
use crate::engine::time::{ns_f64_to_secs, ns_to_secs, us_to_secs};

/// Metric values of one scope; `None` is reported as `null`.
pub use super::catalogue::MetricRow;

/// The scalar metrics of one run: overall, per hop, per tenant.
#[derive(Clone, Debug)]
pub struct Scalars {
    /// Whole-system metrics.
    pub global: MetricRow,
    /// One row per hop.
    pub hops: Vec<MetricRow>,
    /// One row per tenant.
    pub tenants: Vec<MetricRow>,
    /// One row per replica of the hops with more than one (`RunRecord::replicas` order).
    pub replicas: Vec<MetricRow>,
    /// Hop 0 was overloaded before the trigger, so recovery was not observable
    /// ([`super::recovery::overloaded_before_trigger`]); the runner warns once per variant.
    pub overloaded_before_trigger: bool,
}

fn ratio(num: f64, den: f64) -> Option<f64> {
    (den > 0.0).then(|| num / den)
}

/// The latency metrics of `latencies`, which sum to `sum_us`: the mean is that sum over the
/// count, exact (HdrHistogram's `mean` estimates it from the buckets' midpoints, and walking
/// every bucket for it was most of a short replication's fixed cost, docs/PERFORMANCE.md); the
/// quantiles and the largest are HdrHistogram's (`Latencies`).
fn latency_rows(latencies: &Latencies, sum_us: u128) -> MetricRow {
    let secs = |us: u64| us_to_secs(us as f64);
    // The largest is the quantile 1 (`Latencies::quantiles`): read with the others, its
    // selection searches only the samples above p99.9's.
    let quantiles = latencies.quantiles([0.5, 0.9, 0.99, 0.999, 1.0]);
    let [p50, p90, p99, p999, max] = quantiles.map_or([None; 5], |q| q.map(|v| Some(secs(v))));
    vec![
        (Metric::LatencySMean, (!latencies.is_empty()).then(|| us_to_secs(sum_us as f64 / latencies.len() as f64))),
        (Metric::LatencySP50, p50),
        (Metric::LatencySP90, p90),
        (Metric::LatencySP99, p99),
        (Metric::LatencySP999, p999),
        (Metric::LatencySMax, max),
    ]
}

fn peak_per_s(series: &[HopBucket], bucket_ns: u64) -> f64 {
    let peak = series.iter().map(|b| b.attempts).max().unwrap_or(0);
    f64::from(peak) / ns_to_secs(bucket_ns)
}

/// Derives the scalar metrics of a run.
pub fn scalars(record: &RunRecord, spec: &RunShape) -> Scalars {
    let requests: u64 = record.tenants.iter().map(|t| t.requests).sum();
    let sum = |f: fn(&super::TenantCounters) -> u64| record.tenants.iter().map(f).sum::<u64>() as f64;
    let succeeded = sum(|t| t.succeeded);
    // Each tenant's latency metrics, read once; with one tenant they are the system's too (the
    // histograms' walks were a tenth of a short run's cost), more are pooled into a new one.
    let tenant_latency: Vec<MetricRow> =
        record.tenants.iter().map(|t| latency_rows(&t.latency_us, t.latency_sum_us)).collect();
    let latency = match tenant_latency.as_slice() {
        [one] => one.clone(),
        _ => {
            let mut all = Latencies::new();
            for t in &record.tenants {
                all.extend(&t.latency_us);
            }
            latency_rows(&all, record.tenants.iter().map(|t| t.latency_sum_us).sum())
        }
    };
    let mut hops: Vec<MetricRow> = (0..spec.hops.len()).map(|h| hop_row(record, spec, h, requests)).collect();
    let outcome = recovery_outcome(record, spec);
    // A backlog "cleared" in a run that never recovered is not observed: e.g. a hop with a
    // million workers holds its stuck requests in service, within the workers' floor of the
    // normal level, from the trigger's end on (metastable-collapse's no-backoff read "0 s").
    if !matches!(outcome, RecoveryOutcome::Recovered(_)) && spec.trigger_end.is_some() {
        for (m, v) in hops[0].iter_mut() {
            if *m == Metric::BacklogClearedS {
                *v = None;
            }
        }
    }
    let hop0 = &hops[0];
    let get = |row: &MetricRow, metric: Metric| row.iter().find(|(m, _)| *m == metric).and_then(|(_, v)| *v);
    let flag = |b: bool| Some(if b { 1.0 } else { 0.0 });
    let mut global: MetricRow = vec![
        (Metric::Requests, Some(requests as f64)),
        (Metric::Attempts, get(hop0, Metric::Attempts)),
        (Metric::Retries, get(hop0, Metric::Retries)),
        (Metric::Amplification, get(hop0, Metric::Amplification)),
        (Metric::Succeeded, Some(succeeded)),
        (Metric::Rejected, Some(sum(|t| t.rejected))),
        (Metric::Dlq, Some(sum(|t| t.dlq))),
        (Metric::DlqDeadline, Some(sum(|t| t.dlq_deadline))),
        (Metric::DlqBudget, Some(sum(|t| t.dlq_budget))),
        (Metric::RetriesDenied, Some(sum(|t| t.retries_denied))),
        (Metric::LocalRejections, Some(sum(|t| t.local_rejections))),
        (Metric::InFlight, Some(record.in_flight.iter().sum::<u64>() as f64)),
        (Metric::SuccessRatio, ratio(succeeded, requests as f64)),
        (Metric::Duplicates, Some(sum(|t| t.duplicates_ttl_expired + t.duplicates_no_key))),
        (Metric::DuplicatesTtlExpired, Some(sum(|t| t.duplicates_ttl_expired))),
        (Metric::DuplicatesNoKey, Some(sum(|t| t.duplicates_no_key))),
        (Metric::Deduplicated, Some(sum(|t| t.deduplicated))),
        (Metric::InProgressConflicts, Some(sum(|t| t.in_progress_conflicts))),
        (Metric::Released, Some(sum(|t| t.released))),
        (Metric::PeakAttemptsPerS, get(hop0, Metric::PeakAttemptsPerS)),
        (Metric::CapacityPerS, get(hop0, Metric::CapacityPerS)),
        (Metric::PeakOverCapacity, get(hop0, Metric::PeakOverCapacity)),
        (Metric::PeakAfterPerS, get(hop0, Metric::PeakAfterPerS)),
        (Metric::PeakAfterOverCapacity, get(hop0, Metric::PeakAfterOverCapacity)),
        (Metric::TimeOverCapacityAfterS, get(hop0, Metric::TimeOverCapacityAfterS)),
        (Metric::BacklogPeak, get(hop0, Metric::BacklogPeak)),
        (Metric::BacklogClearedS, get(hop0, Metric::BacklogClearedS)),
    ];
    global.extend(latency);
    let wasted: u64 = record.hops.iter().map(|h| h.wasted_work_ns).sum();
    global.extend(super::goodput::global_rows(record, hop0));
    global.extend([
        // The last terminal state is not the run's completion while requests are still in
        // flight at its end (cut by the drain limit or `max_events`): not observed.
        (
            Metric::CompletionTimeS,
            (record.in_flight.iter().sum::<u64>() == 0).then(|| ns_to_secs(record.completion_time_ns)),
        ),
        (Metric::WastedWorkS, Some(ns_to_secs(wasted))),
        (Metric::RecoveryTimeS, if let RecoveryOutcome::Recovered(ns) = outcome { Some(ns_to_secs(ns)) } else { None }),
        (Metric::Recovered, flag(matches!(outcome, RecoveryOutcome::Recovered(_)))),
        (Metric::Metastable, flag(outcome == RecoveryOutcome::Metastable)),
        (
            Metric::RecoveryUnobservable,
            flag(matches!(outcome, RecoveryOutcome::NotObservable | RecoveryOutcome::CutOff)),
        ),
        (Metric::RecoveryCutOff, flag(outcome == RecoveryOutcome::CutOff)),
        (Metric::Events, Some(record.events as f64)),
        (Metric::Truncated, Some(if record.truncated.is_some() { 1.0 } else { 0.0 })),
    ]);
    let tenants =
        tenant_latency.into_iter().enumerate().map(|(t, latency)| tenant_row(record, spec, t, latency)).collect();
    let replicas = record.replicas.iter().map(|r| replica_row(record, r)).collect();
    let overloaded_before_trigger = super::recovery::overloaded_before_trigger(record, spec);
    Scalars { global, hops, tenants, replicas, overloaded_before_trigger }
}

fn replica_row(record: &RunRecord, r: &super::ReplicaRecord) -> MetricRow {
    let hop_attempts: u64 = record.replicas.iter().filter(|o| o.hop == r.hop).map(|o| o.attempts).sum();
    vec![
        (Metric::Attempts, Some(r.attempts as f64)),
        (Metric::OkReplies, Some(r.ok_replies as f64)),
        (Metric::FailedReplies, Some(r.failed_replies as f64)),
        (Metric::TrafficShare, ratio(r.attempts as f64, hop_attempts as f64)),
        (Metric::Ejections, Some(r.ejections as f64)),
        (Metric::OutOfRotationS, Some(ns_to_secs(r.out_of_rotation_ns))),
    ]
}

/// The idempotency figures of a hop's or a tenant's counters (both have the same five fields).
macro_rules! idempotency_rows {
    ($c:expr) => {
        idempotency_rows([
            $c.duplicates_ttl_expired,
            $c.duplicates_no_key,
            $c.deduplicated,
            $c.in_progress_conflicts,
            $c.released,
        ])
    };
}

fn hop_row(record: &RunRecord, spec: &RunShape, h: usize, requests: u64) -> MetricRow {
    let c = &record.hops[h];
    let hop = &spec.hops[h];
    let peak = peak_per_s(&record.hop_series[h], spec.bucket);
    let capacity = hop.capacity_per_s;
    let after = after_trigger(&record.hop_series[h], spec, h, capacity);
    let mut row: MetricRow = vec![
        (Metric::Attempts, Some(c.attempts as f64)),
        (Metric::FirstAttempts, Some(c.first_attempts as f64)),
        (Metric::Retries, Some(c.retries as f64)),
        (Metric::Amplification, ratio(c.attempts as f64, requests as f64)),
        (Metric::OkReplies, Some(c.ok_replies as f64)),
        (Metric::Overflow, Some(c.overflow as f64)),
        (Metric::LostReplies, Some(c.lost_replies as f64)),
        (Metric::PeakAttemptsPerS, Some(peak)),
        (Metric::CapacityPerS, capacity),
        (Metric::PeakOverCapacity, capacity.and_then(|cap| ratio(peak, cap))),
        (Metric::PeakAfterPerS, after.peak_after_per_s),
        (Metric::PeakAfterOverCapacity, after.peak_after_over_capacity),
        (Metric::TimeOverCapacityAfterS, after.time_over_capacity_after_s),
        (Metric::BacklogPeak, Some(after.backlog_peak)),
        (Metric::BacklogClearedS, after.backlog_cleared_s),
        (Metric::Executions, Some(c.executions as f64)),
    ];
    row.extend(idempotency_rows!(c));
    row.extend([
        (Metric::WastedWorkS, Some(ns_to_secs(c.wasted_work_ns))),
        (Metric::BusyS, Some(ns_to_secs(c.busy_ns))),
        (Metric::QueueWaitSMean, queue_wait_mean(c, &record.hop_series[h], hop.workers)),
        (Metric::Shed, Some(c.shed as f64)),
        (Metric::DroppedExpired, Some(c.dropped_expired as f64)),
        (Metric::RejectedByLimit, Some(c.rejected_by_limit as f64)),
        (Metric::WorkersPeak, Some(f64::from(c.workers_peak))),
        (Metric::WorkerSeconds, Some(ns_f64_to_secs(c.worker_ns as f64))),
        (Metric::ScaleUps, Some(c.scale_ups as f64)),
        (Metric::ScaleUpAfterTriggerS, c.scale_up_after_trigger_ns.map(ns_to_secs)),
        (Metric::CacheHits, Some(c.cache_hits as f64)),
        (Metric::CacheMisses, Some(c.cache_misses as f64)),
        (Metric::CacheCoalesced, Some(c.cache_coalesced as f64)),
        (Metric::CacheHitRatio, ratio(c.cache_hits as f64, (c.cache_hits + c.cache_misses + c.cache_coalesced) as f64)),
    ]);
    if let Some(pool) = &c.pool {
        row.extend(super::pool::pool_rows(pool));
    }
    row.extend(super::balance::balance_rows(&record.replicas, h));
    row.extend(super::goodput::hop_rows(c, &record.hop_series[h], spec));
    row
}

/// Mean queue wait of the services a hop started, or `None` when attempts still waited in its
/// queue when the run ended (more attempts inside the hop than workers to hold them): their
/// waits, the longest, never ended, and the mean of the others would read short (a one-hour
/// service: 0 s while thousands waited).
fn queue_wait_mean(c: &super::HopCounters, series: &[HopBucket], workers: u32) -> Option<f64> {
    let inside = super::after::backlog_levels(series).last().copied().unwrap_or(0);
    let serving = series.last().map_or(0, |b| b.workers).max(workers);
    if inside > i64::from(serving) {
        return None;
    }
    ratio(ns_f64_to_secs(c.queue_wait_ns_sum as f64), c.services_started as f64)
}

/// The idempotency figures from counters `[ttl_expired, no_key, deduplicated,
/// in_progress_conflicts, released]`; `duplicates` is the sum of the first two.
fn idempotency_rows([ttl_expired, no_key, deduplicated, conflicts, released]: [u64; 5]) -> [(Metric, Option<f64>); 6] {
    [
        (Metric::Duplicates, Some((ttl_expired + no_key) as f64)),
        (Metric::DuplicatesTtlExpired, Some(ttl_expired as f64)),
        (Metric::DuplicatesNoKey, Some(no_key as f64)),
        (Metric::Deduplicated, Some(deduplicated as f64)),
        (Metric::InProgressConflicts, Some(conflicts as f64)),
        (Metric::Released, Some(released as f64)),
    ]
}

fn tenant_row(record: &RunRecord, spec: &RunShape, t: usize, latency: MetricRow) -> MetricRow {
    let c = &record.tenants[t];
    let series = &record.tenant_series[t];
    let peak = series.iter().map(|b| b.attempts).max().unwrap_or(0);
    let mut row: MetricRow = vec![
        (Metric::Requests, Some(c.requests as f64)),
        (Metric::Attempts, Some(c.attempts as f64)),
        (Metric::Retries, Some(c.retries as f64)),
        (Metric::Amplification, ratio(c.attempts as f64, c.requests as f64)),
        (Metric::Succeeded, Some(c.succeeded as f64)),
        (Metric::Rejected, Some(c.rejected as f64)),
        (Metric::Dlq, Some(c.dlq as f64)),
        (Metric::DlqDeadline, Some(c.dlq_deadline as f64)),
        (Metric::DlqBudget, Some(c.dlq_budget as f64)),
        (Metric::RetriesDenied, Some(c.retries_denied as f64)),
        (Metric::LocalRejections, Some(c.local_rejections as f64)),
        (Metric::InFlight, Some(record.in_flight[t] as f64)),
        (Metric::SuccessRatio, ratio(c.succeeded as f64, c.requests as f64)),
    ];
    row.extend(idempotency_rows!(c));
    row.push((Metric::PeakAttemptsPerS, Some(f64::from(peak) / ns_to_secs(spec.bucket))));
    row.extend(latency);
    row
}
