//! Goodput against throughput, hedges and wasted work by cause (issue 16): the scalar rows.

use super::catalogue::{Metric, MetricRow};
use super::{HopCounters, RunRecord, RunShape};
use crate::engine::time::ns_to_secs;

/// A hop's goodput, throughput, hedges, cancellations and wasted work by cause.
pub(super) fn hop_rows(c: &HopCounters, spec: &RunShape) -> MetricRow {
    let horizon_s = ns_to_secs(spec.horizon);
    let per_s = |n: u64| (horizon_s > 0.0).then(|| n as f64 / horizon_s);
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
