//! Hop-level figures over a balanced hop's replicas: the largest traffic share one
//! replica took and the longest time one was out of rotation. They make the per-replica metrics
//! usable in an `[objective]` or `--require` (`hop.api.replica_share_max <= 40%`) without naming
//! a replica, and are produced exactly for hops with more than one replica (or with autoscaled
//! replicas), so the summaries of other scenarios are unchanged.

use super::catalogue::{Metric, MetricRow};
use super::ReplicaRecord;
use crate::engine::time::ns_to_secs;

/// The metrics [`balance_rows`] produces, in catalogue order.
pub const BALANCE_METRICS: &[Metric] = &[Metric::ReplicaShareMax, Metric::ReplicaOutOfRotationSMax];

/// The balance metrics of hop `hop` from a run's replica records, or nothing when the hop has
/// none (one replica).
pub fn balance_rows(records: &[ReplicaRecord], hop: usize) -> MetricRow {
    let mut replicas = records.iter().filter(|r| r.hop == hop).peekable();
    if replicas.peek().is_none() {
        return Vec::new();
    }
    let (mut total, mut most, mut out) = (0u64, 0u64, 0u64);
    for r in replicas {
        total += r.attempts;
        most = most.max(r.attempts);
        out = out.max(r.out_of_rotation_ns);
    }
    vec![
        (Metric::ReplicaShareMax, (total > 0).then(|| most as f64 / total as f64)),
        (Metric::ReplicaOutOfRotationSMax, Some(ns_to_secs(out))),
    ]
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_largest_share_and_time_out_of_rotation_over_a_hops_replicas() {
        let replica =
            |hop, attempts, out| ReplicaRecord { hop, attempts, out_of_rotation_ns: out, ..ReplicaRecord::default() };
        let record = [replica(1, 10, 0), replica(1, 30, 2_000_000_000), replica(1, 60, 500), replica(2, 0, 0)];
        assert!(balance_rows(&record, 0).is_empty(), "hop 0 has one replica");
        assert_eq!(
            balance_rows(&record, 1),
            vec![(Metric::ReplicaShareMax, Some(0.6)), (Metric::ReplicaOutOfRotationSMax, Some(2.0))]
        );
        assert_eq!(balance_rows(&record, 2)[0], (Metric::ReplicaShareMax, None), "no attempts: no share");
    }
}
