//! Recovery time: how long after the last fault the system is calm again, or `None`
//! (metastable) when calm never holds while requests are still arriving.

use super::{HopBucket, RunRecord, RunShape};

/// How a run came out of its trigger (the last fault or load spike).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum RecoveryOutcome {
    /// Calm again this long (ns) after the trigger ended.
    Recovered(u64),
    /// The trigger ended and the system stayed overloaded: never calm before the horizon.
    Metastable,
    /// Recovery cannot be judged: there is no trigger (no fault, no load spike: nothing to
    /// recover from, and "recovered after 0 s" would hide a system that is overloaded on its
    /// own), the trigger lasts until the horizon, or no request succeeded or was even attempted
    /// after it ended (every request was lost during it).
    NotObservable,
    /// Recovery cannot be judged because a limit (`max_events`, the drain limit) cut the run
    /// before the hop's backlog drained: the run did not finish, so it has not recovered.
    CutOff,
}

/// Classifies a run's recovery (see [`RecoveryOutcome`] and [`recovery_time_ns`]): recovered
/// only when a calm window starts before the horizon **and** hop 0's backlog cleared
/// ([`super::after::backlog_cleared_ns`]) before the run ended.
pub fn recovery_outcome(record: &RunRecord, spec: &RunShape) -> RecoveryOutcome {
    let Some(trigger_end) = spec.trigger_end else { return RecoveryOutcome::NotObservable };
    if trigger_end >= spec.horizon {
        return RecoveryOutcome::NotObservable;
    }
    // Nothing succeeded and nothing was even attempted after the trigger: every request ended
    // during it (e.g. immediate retries dead-letter everything in an outage). A system still
    // hammered without success is metastable, not unobservable.
    let first = trigger_end.div_ceil(spec.bucket) as usize;
    let after = |f: fn(&super::TenantBucket) -> u32| -> u64 {
        record.tenant_series.iter().flat_map(|s| s.iter().skip(first)).map(|b| u64::from(f(b))).sum()
    };
    if after(|b| b.successes) == 0 && after(|b| b.attempts) == 0 {
        return RecoveryOutcome::NotObservable;
    }
    // Recovery is judged against the state before the trigger: a run already overloaded then
    // (a full queue from the start) would "recover" to its collapsed normal after 0 s.
    if overloaded_before_trigger(record, spec) {
        return RecoveryOutcome::NotObservable;
    }
    // Recovery needs the backlog drained: calm arrivals at a hop whose backlog never clears
    // (requests held for ever in service) are no recovery. A run cut off before it drained
    // cannot show one at all.
    let drained = super::after::backlog_cleared_ns(&record.hop_series[0], spec, 0, trigger_end).is_some();
    let cut = record.truncated.is_some();
    match recovery_time_ns(record, spec) {
        Some(ns) if drained => RecoveryOutcome::Recovered(ns),
        // Calm arrivals, but the cut came before the backlog drained: whether it would have is
        // not known (e.g. every request held in a one-hour service).
        Some(_) if cut => RecoveryOutcome::CutOff,
        // No calm window before the horizon: the run showed it stayed in the bad state while
        // requests arrived — unless a limit stopped it before the horizon.
        None if cut && record.completion_time_ns < spec.horizon => RecoveryOutcome::CutOff,
        _ => RecoveryOutcome::Metastable,
    }
}

/// Whether hop 0 was already overloaded before the first trigger, judged over the whole buckets
/// before it (none: not judged, `false`): summed over them, its failure replies were more than
/// [`CALM_RETRY_SHARE_MAX`] of its replies beyond the failures by design (invalid and poison
/// payloads): a full queue refusing; or more than a tenth of
/// the attempts that entered it were still inside at the trigger's start with a queue behind its
/// workers (more inside than workers: a backlog growing from the start). Such a run has no
/// healthy state to return to: its recovery is not observable (docs/MODEL.md, "Recovery
/// outcomes"), and the runner warns once per variant.
pub fn overloaded_before_trigger(record: &RunRecord, spec: &RunShape) -> bool {
    let Some(start) = spec.first_trigger_start else { return false };
    if spec.trigger_end.is_none() {
        return false;
    }
    let series = &record.hop_series[0];
    let before = ((start / spec.bucket) as usize).min(series.len());
    let window = &series[..before];
    let sum = |f: fn(&HopBucket) -> u32| window.iter().map(|b| u64::from(f(b))).sum::<u64>();
    if sum(|b| b.attempts) == 0 {
        return false;
    }
    let (ok, failed) = (sum(|b| b.successes), sum(|b| b.failures));
    let (entered, left) = (sum(|b| b.entered), sum(|b| b.left));
    let inside = entered.saturating_sub(left);
    let workers = window.last().map_or(0, |b| b.workers).max(spec.hops[0].workers);
    let failing = (spec.failing_by_design + CALM_RETRY_SHARE_MAX) * (ok + failed) as f64;
    failed as f64 > failing || (inside > u64::from(workers) && 10 * inside > entered)
}

/// Share of arriving attempts that may be retries in a calm bucket.
pub const CALM_RETRY_SHARE_MAX: f64 = 0.05;

/// Recovery time in nanoseconds after the end of the last trigger.
///
/// The system is calm over a window of `spec.recovery_hold` when, summed over the window, retries
/// are at most 5% of the attempts arriving at hop 0, and in every bucket of it the longest queue
/// wait of services started is under twice the baseline wait. (Summing over the window rather
/// than judging bucket by bucket keeps a trickle of long-deferred retries, which comes in bursts,
/// from hiding a recovery.) The baseline is hop 0's pre-trigger p99 queue wait, floored at one
/// mean service time (a run whose fault starts at 0 has no pre-fault traffic to measure). The
/// calm window must begin before the horizon (after it, arrivals stop and any system drains).
/// The trigger is the last fault or load spike (a profile step above the first rate); without
/// one there is nothing to recover from: `None` (and [`recovery_outcome`] says not observable).
pub fn recovery_time_ns(record: &RunRecord, spec: &RunShape) -> Option<u64> {
    let trigger_end = spec.trigger_end?;
    let service_mean = spec.hops[0].service_mean_alone_ns;
    let baseline = (record.prefault_wait_p99_ns.unwrap_or(0) as f64).max(service_mean);
    let wait_max = 2.0 * baseline;
    let series = &record.hop_series[0];
    let hold = spec.recovery_hold.div_ceil(spec.bucket).max(1) as usize;
    let first = trigger_end.div_ceil(spec.bucket) as usize;
    let horizon_bucket = spec.horizon.div_ceil(spec.bucket) as usize;
    let start = calm_window_start(series, hold, first, horizon_bucket, wait_max)?;
    Some(((start as u64) * spec.bucket).saturating_sub(trigger_end))
}

/// The first bucket `start` in `[first, before)` whose window of `hold` buckets is calm (see
/// [`recovery_time_ns`]), using prefix sums so the scan is linear.
pub fn calm_window_start(
    series: &[HopBucket],
    hold: usize,
    first: usize,
    before: usize,
    wait_max: f64,
) -> Option<usize> {
    let mut prefix = vec![(0u64, 0u64, 0u64); series.len() + 1];
    for (i, s) in series.iter().enumerate() {
        let (a, r, w) = prefix[i];
        let slow = u64::from((s.queue_wait_max_ns as f64) > wait_max);
        prefix[i + 1] = (a + u64::from(s.attempts), r + u64::from(s.retries), w + slow);
    }
    (first..before.min((series.len() + 1).saturating_sub(hold))).find(|&start| {
        let (a0, r0, w0) = prefix[start];
        let (a1, r1, w1) = prefix[start + hold];
        (r1 - r0) as f64 <= CALM_RETRY_SHARE_MAX * (a1 - a0) as f64 && w1 == w0
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn bucket(attempts: u32, retries: u32, wait_ns: u64) -> HopBucket {
        HopBucket {
            attempts,
            retries,
            first_attempts: attempts - retries,
            queue_wait_max_ns: wait_ns,
            ..HopBucket::default()
        }
    }

    #[test]
    fn calm_is_judged_over_the_whole_hold_window() {
        // A bursty trickle (one bucket in five at 15% retries) averages 3% over 5 buckets: calm.
        let trickle: Vec<HopBucket> = (0..10).map(|i| bucket(100, if i % 5 == 0 { 15 } else { 0 }, 0)).collect();
        assert_eq!(calm_window_start(&trickle, 5, 0, 10, 1.0), Some(0));
        // Sustained 10% retries never calm down.
        let storm: Vec<HopBucket> = (0..10).map(|_| bucket(100, 10, 0)).collect();
        assert_eq!(calm_window_start(&storm, 5, 0, 10, 1.0), None);
        // One slow bucket spoils every window containing it: the first calm window starts after it.
        let slow: Vec<HopBucket> = (0..12).map(|i| bucket(100, 0, if i == 3 { 10 } else { 0 })).collect();
        assert_eq!(calm_window_start(&slow, 5, 0, 12, 1.0), Some(4));
        // Calm that only starts at or after `before` (the horizon) does not count.
        assert_eq!(calm_window_start(&slow, 5, 0, 4, 1.0), None);
    }
}
