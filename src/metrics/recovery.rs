//! Recovery time: how long after the last fault the system is calm again, or `None`
//! (metastable) when calm never holds while requests are still arriving.

use super::RunRecord;
use crate::model::SimSpec;

/// Share of arriving attempts that may be retries in a calm bucket.
pub const CALM_RETRY_SHARE_MAX: f64 = 0.05;

/// Recovery time in nanoseconds after the end of the last fault.
///
/// A bucket is calm when retries are at most 5% of the attempts arriving at hop 0 and the
/// longest queue wait of services started in it is under twice the baseline wait. The baseline
/// is hop 0's pre-fault p99 queue wait, floored at one mean service time (a run whose fault
/// starts at 0 has no pre-fault traffic to measure). Calm must hold for `spec.recovery_hold`
/// and must begin before the horizon (after it, arrivals stop and any system drains).
/// The trigger is the last fault or load spike (a profile step above the first rate); without
/// one the system never left its steady state: `Some(0)`.
pub fn recovery_time_ns(record: &RunRecord, spec: &SimSpec) -> Option<u64> {
    let Some(fault_end) = spec.trigger_end() else { return Some(0) };
    let service_mean = spec.hops[0].service.mean_ns(1);
    let baseline = (record.prefault_wait_p99_ns.unwrap_or(0) as f64).max(service_mean);
    let wait_max = 2.0 * baseline;
    let series = &record.hop_series[0];
    let hold = spec.recovery_hold.div_ceil(spec.bucket).max(1) as usize;
    let first = fault_end.div_ceil(spec.bucket) as usize;
    let calm = |b: usize| {
        let s = &series[b];
        let retries_ok = f64::from(s.retries) <= CALM_RETRY_SHARE_MAX * f64::from(s.attempts);
        retries_ok && (s.queue_wait_max_ns as f64) <= wait_max
    };
    let mut run_start = None;
    for b in first..series.len() {
        if !calm(b) {
            run_start = None;
            continue;
        }
        let start = *run_start.get_or_insert(b);
        if (start as u64) * spec.bucket >= spec.horizon {
            return None;
        }
        if b + 1 - start >= hold {
            return Some(((start as u64) * spec.bucket).saturating_sub(fault_end));
        }
    }
    None
}
