//! Goodput against throughput, hedges and wasted work by cause: the scalar rows.

use super::catalogue::{Metric, MetricRow};
use super::{HopBucket, HopCounters, RunRecord, RunShape};
use crate::engine::time::ns_to_secs;

/// A hop's goodput, throughput, hedges, cancellations and wasted work by cause.
/// The rates are per second of the hop's serving span ([`serving_span_ns`]), so a hop that keeps
/// serving its backlog after the horizon is not credited with more than it can complete.
pub(super) fn hop_rows(c: &HopCounters, series: &[HopBucket], spec: &RunShape) -> MetricRow {
    let span_s = ns_to_secs(serving_span_ns(series, spec));
    let per_s = |n: u64| (span_s > 0.0).then(|| n as f64 / span_s);
    vec![
        (Metric::Hedges, Some(c.hedges as f64)),
        (Metric::Cancelled, Some(c.cancelled as f64)),
        (Metric::ThroughputPerS, per_s(c.served)),
        (Metric::TimelyGoodputPerS, per_s(c.timely_ok)),
        (Metric::GoodputRatio, (c.served > 0).then(|| c.timely_ok as f64 / c.served as f64)),
        (Metric::WastedTimedOutS, Some(ns_to_secs(c.wasted_timed_out_ns))),
        (Metric::WastedHedgeS, Some(ns_to_secs(c.wasted_hedge_ns))),
        (Metric::WastedCancelledS, Some(ns_to_secs(c.wasted_cancelled_ns))),
        (Metric::WastedLostReplyS, Some(ns_to_secs(c.wasted_lost_reply_ns))),
    ]
}

/// The span a hop's per-second rates are taken over: from 0 to the horizon or, when the hop
/// still completed services after it (draining a backlog), to the end of the last bucket in
/// which it completed one.
pub fn serving_span_ns(series: &[HopBucket], spec: &RunShape) -> u64 {
    let last = series.iter().rposition(|b| b.served > 0 || b.timely_ok > 0).map_or(0, |i| (i as u64 + 1) * spec.bucket);
    spec.horizon.max(last)
}

/// The system's: hedges and the goodput ratio of hop 0 (the clients' view), wasted work by cause
/// summed over hops.
pub(super) fn global_rows(record: &RunRecord, hop0: &MetricRow) -> MetricRow {
    let get = |metric: Metric| hop0.iter().find(|(m, _)| *m == metric).and_then(|(_, v)| *v);
    let sum = |f: fn(&HopCounters) -> u64| Some(ns_to_secs(record.hops.iter().map(f).sum::<u64>()));
    vec![
        (Metric::Hedges, get(Metric::Hedges)),
        (Metric::GoodputRatio, get(Metric::GoodputRatio)),
        (Metric::WastedTimedOutS, sum(|c| c.wasted_timed_out_ns)),
        (Metric::WastedHedgeS, sum(|c| c.wasted_hedge_ns)),
        (Metric::WastedCancelledS, sum(|c| c.wasted_cancelled_ns)),
        (Metric::WastedLostReplyS, sum(|c| c.wasted_lost_reply_ns)),
    ]
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn rates_are_taken_over_the_hops_serving_span() {
        // 10 s horizon, 1 s buckets; the hop serves 100/s (its capacity) for 15 s, draining a
        // backlog 5 s past the horizon: 1,500 services over 15 s is 100/s, not 150/s.
        let spec = RunShape {
            bucket: 1_000_000_000,
            horizon: 10_000_000_000,
            recovery_hold: 1_000_000_000,
            trigger_end: None,
            first_trigger_start: None,
            hops: vec![],
            tenants: 1,
            failing_by_design: 0.0,
        };
        let mut series = vec![HopBucket { served: 100, timely_ok: 100, ..HopBucket::default() }; 15];
        series.extend(vec![HopBucket::default(); 5]);
        assert_eq!(serving_span_ns(&series, &spec), 15_000_000_000);
        let c = HopCounters { served: 1500, timely_ok: 1500, ..HopCounters::default() };
        let rows = hop_rows(&c, &series, &spec);
        let get = |m: Metric| rows.iter().find(|(k, _)| *k == m).and_then(|(_, v)| *v);
        assert_eq!(get(Metric::ThroughputPerS), Some(100.0));
        assert_eq!(get(Metric::TimelyGoodputPerS), Some(100.0));
        // A hop idle before the horizon ends keeps the horizon as its span.
        let early = vec![HopBucket { served: 10, ..HopBucket::default() }; 3];
        assert_eq!(serving_span_ns(&early, &spec), 10_000_000_000);
    }
}
