//! Metrics of the recovery, per hop: the load after the trigger (the last fault or load spike)
//! ends, the time spent above capacity after it, the peak backlog and when the backlog cleared.

use super::HopBucket;
use super::RunShape;
use crate::engine::time::ns_to_secs;

/// The recovery metrics of one hop in one run (`None` where they do not apply).
#[derive(Clone, Copy, Debug, Default, PartialEq)]
pub struct AfterTrigger {
    /// Largest attempts/s in a bucket starting at or after the trigger's end.
    pub peak_after_per_s: Option<f64>,
    /// `peak_after_per_s` over the hop's capacity.
    pub peak_after_over_capacity: Option<f64>,
    /// Seconds of buckets after the trigger whose attempts/s exceed the capacity.
    pub time_over_capacity_after_s: Option<f64>,
    /// Largest number of attempts inside the hop at once (queued + in service + waiting on
    /// downstream calls), over the whole run.
    pub backlog_peak: f64,
    /// Seconds from the trigger's end until, at a bucket boundary, the backlog is back to its
    /// normal level and no more retries to the hop are pending than before the trigger.
    pub backlog_cleared_s: Option<f64>,
}

/// Level of a quantity at every bucket boundary k·bucket (k = 0..=buckets) from its per-bucket
/// inflow and outflow.
pub fn levels(series: &[HopBucket], inflow: fn(&HopBucket) -> u32, outflow: fn(&HopBucket) -> u32) -> Vec<i64> {
    let mut level = 0i64;
    let mut out = Vec::with_capacity(series.len() + 1);
    out.push(0);
    for b in series {
        level += i64::from(inflow(b)) - i64::from(outflow(b));
        out.push(level);
    }
    out
}

/// Backlog (attempts inside the hop) at every bucket boundary.
pub fn backlog_levels(series: &[HopBucket]) -> Vec<i64> {
    levels(series, |b| b.entered, |b| b.left)
}

/// Retries to the hop waiting on a backoff timer at every bucket boundary.
pub fn pending_retry_levels(series: &[HopBucket]) -> Vec<i64> {
    levels(series, |b| b.retries_scheduled, |b| b.retries_fired)
}

/// The recovery metrics of hop `h` given its series and capacity (attempts/s, if known).
pub fn after_trigger(series: &[HopBucket], spec: &RunShape, h: usize, capacity: Option<f64>) -> AfterTrigger {
    let backlog_peak = f64::from(series.iter().map(|b| b.in_flight_max).max().unwrap_or(0));
    let Some(trigger_end) = spec.trigger_end else {
        return AfterTrigger { backlog_peak, ..AfterTrigger::default() };
    };
    let bucket_s = ns_to_secs(spec.bucket);
    let first = (trigger_end.div_ceil(spec.bucket) as usize).min(series.len());
    let after = &series[first..];
    let peak = f64::from(after.iter().map(|b| b.attempts).max().unwrap_or(0)) / bucket_s;
    let workers = spec.hops[h].workers;
    let rate = |b: &HopBucket| f64::from(b.attempts) / bucket_s;
    let over = capacity
        .map(|cap| after.iter().filter(|b| rate(b) > bucket_capacity(cap, b, workers)).count() as f64 * bucket_s);
    AfterTrigger {
        peak_after_per_s: Some(peak),
        peak_after_over_capacity: capacity
            .filter(|&c| c > 0.0)
            .map(|cap| after.iter().map(|b| rate(b) / bucket_capacity(cap, b, workers)).fold(0.0, f64::max)),
        time_over_capacity_after_s: over,
        backlog_peak,
        backlog_cleared_s: backlog_cleared_ns(series, spec, h, trigger_end).map(ns_to_secs),
    }
}

/// The capacity (attempts/s) during bucket `b` of a hop whose capacity is `cap` with its
/// starting `workers`: autoscaling moves the workers (over the replicas serving) at the bucket's
/// end, which the capacity follows in proportion ([`super::capacity::capacity_with_workers`]).
fn bucket_capacity(cap: f64, b: &HopBucket, workers: u32) -> f64 {
    super::capacity::capacity_with_workers(cap, f64::from(b.workers), f64::from(workers))
}

/// Nanoseconds from `trigger_end` to the first bucket boundary at or after it where the backlog
/// is at most its normal level (the largest boundary level before the first trigger, and at
/// least the hop's workers: requests in service are not a backlog) and pending retries are at
/// most their pre-trigger largest level. `None` when that never happens before the run ends.
pub fn backlog_cleared_ns(series: &[HopBucket], spec: &RunShape, h: usize, trigger_end: u64) -> Option<u64> {
    let backlog = backlog_levels(series);
    let pending = pending_retry_levels(series);
    let start = spec.first_trigger_start.unwrap_or(0);
    // A trigger may start after the last bucket (a fault scheduled past the run).
    let before = ((start / spec.bucket) as usize + 1).min(backlog.len());
    let workers = spec.hops[h].workers;
    let normal_backlog = backlog[..before].iter().copied().max().unwrap_or(0).max(i64::from(workers));
    let normal_pending = pending[..before].iter().copied().max().unwrap_or(0);
    // At boundary k the workers serving are those at the end of bucket k − 1 (autoscaling).
    let serving = |k: usize| k.checked_sub(1).map_or(0, |i| i64::from(series[i].workers));
    let first = trigger_end.div_ceil(spec.bucket) as usize;
    (first..backlog.len())
        .find(|&k| backlog[k] <= normal_backlog.max(serving(k)) && pending[k] <= normal_pending)
        .map(|k| (k as u64 * spec.bucket).saturating_sub(trigger_end))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn flows(entered: u32, left: u32, scheduled: u32, fired: u32) -> HopBucket {
        HopBucket { entered, left, retries_scheduled: scheduled, retries_fired: fired, ..HopBucket::default() }
    }

    #[test]
    fn levels_accumulate_inflow_minus_outflow_at_boundaries() {
        let series = [flows(5, 1, 2, 0), flows(0, 3, 0, 1), flows(2, 3, 0, 1)];
        assert_eq!(backlog_levels(&series), vec![0, 4, 1, 0]);
        assert_eq!(pending_retry_levels(&series), vec![0, 2, 1, 0]);
    }

    #[test]
    fn the_load_after_the_trigger_is_compared_with_each_buckets_capacity() {
        // 1 s buckets, trigger over [0, 1) s; the hop starts with 4 workers and 100/s capacity,
        // autoscaling brings 8 (200/s) from bucket 2 on. Attempts/s after the trigger: 150, 150,
        // 150: over the 100/s of bucket 1 only, not over the 200/s of buckets 2 and 3.
        let spec = RunShape {
            bucket: 1_000_000_000,
            horizon: 4_000_000_000,
            recovery_hold: 1_000_000_000,
            trigger_end: Some(1_000_000_000),
            first_trigger_start: Some(0),
            hops: vec![super::super::HopShape { workers: 4, capacity_per_s: Some(100.0), service_mean_alone_ns: 4e7 }],
            tenants: 1,
            failing_by_design: 0.0,
        };
        let bucket =
            |attempts, workers, entered, left| HopBucket { attempts, workers, entered, left, ..HopBucket::default() };
        // Backlog at the boundaries: 0, 6, 12, 10, 8.
        let series = [bucket(0, 4, 6, 0), bucket(150, 4, 6, 0), bucket(150, 8, 0, 2), bucket(150, 8, 0, 2)];
        let after = after_trigger(&series, &spec, 0, Some(100.0));
        assert_eq!(after.time_over_capacity_after_s, Some(1.0));
        assert_eq!(after.peak_after_over_capacity, Some(1.5), "150/s over bucket 1's 100/s");
        // Pre-trigger normal level: max(0, 4 workers) = 4; at boundary 4 the backlog (8) is
        // within the 8 workers serving at the end of bucket 3: cleared 3 s after the trigger.
        assert_eq!(after.backlog_cleared_s, Some(3.0));
        // Without the workers recorded (0), the starting capacity holds throughout.
        let fixed: Vec<HopBucket> = series.iter().map(|b| HopBucket { workers: 0, ..*b }).collect();
        let after = after_trigger(&fixed, &spec, 0, Some(100.0));
        assert_eq!(after.time_over_capacity_after_s, Some(3.0));
        assert_eq!(after.backlog_cleared_s, None, "8 > 4 workers at every boundary after the trigger");
    }

    fn shape(bucket: u64, trigger_end: Option<u64>) -> RunShape {
        RunShape {
            bucket,
            horizon: 10 * bucket,
            recovery_hold: bucket,
            trigger_end,
            first_trigger_start: trigger_end.map(|_| 0),
            hops: vec![super::super::HopShape { workers: 4, capacity_per_s: Some(100.0), service_mean_alone_ns: 4e7 }],
            tenants: 1,
            failing_by_design: 0.0,
        }
    }

    fn load(attempts: u32, workers: u32) -> HopBucket {
        HopBucket { attempts, workers, ..HopBucket::default() }
    }

    #[test]
    fn time_over_capacity_counts_seconds_of_100ms_buckets() {
        // 100 ms buckets (most bundled scenarios), trigger over [0, 100 ms), 100/s capacity:
        // 15 attempts in a bucket are 150/s. Three buckets over capacity after the trigger are
        // 0.3 s (count × bucket width), not 30 (count ÷ width); the peak is 150/s, 1.5×.
        let spec = shape(100_000_000, Some(100_000_000));
        let series = [load(0, 4), load(15, 4), load(15, 4), load(5, 4), load(15, 4)];
        let after = after_trigger(&series, &spec, 0, Some(100.0));
        assert!((after.time_over_capacity_after_s.unwrap() - 0.3).abs() < 1e-12, "{after:?}");
        assert!((after.peak_after_per_s.unwrap() - 150.0).abs() < 1e-9);
        assert!((after.peak_after_over_capacity.unwrap() - 1.5).abs() < 1e-12);
    }

    #[test]
    fn exactly_at_capacity_is_not_over_it() {
        // 10 attempts in a 100 ms bucket are exactly the 100/s capacity: not over it.
        let spec = shape(100_000_000, Some(100_000_000));
        let series = [load(0, 4), load(10, 4), load(11, 4)];
        let after = after_trigger(&series, &spec, 0, Some(100.0));
        assert!((after.time_over_capacity_after_s.unwrap() - 0.1).abs() < 1e-12, "{after:?}");
    }

    #[test]
    fn a_zero_capacity_has_no_ratio() {
        // A capacity of 0 (a hop that serves nothing) gives no peak ÷ capacity, not ∞ or NaN.
        let spec = shape(1_000_000_000, Some(1_000_000_000));
        let after = after_trigger(&[load(0, 4), load(5, 4)], &spec, 0, Some(0.0));
        assert_eq!(after.peak_after_over_capacity, None);
        assert_eq!(after.time_over_capacity_after_s, Some(1.0), "5/s is over a capacity of 0");
    }

    #[test]
    fn the_peak_backlog_is_read_without_a_trigger() {
        // No fault or spike: no after-trigger metrics, but the largest backlog is still the run's.
        let spec = shape(1_000_000_000, None);
        let series = [
            HopBucket { in_flight_max: 7, ..HopBucket::default() },
            HopBucket { in_flight_max: 3, ..HopBucket::default() },
        ];
        let after = after_trigger(&series, &spec, 0, Some(100.0));
        assert_eq!(after.backlog_peak, 7.0);
        assert_eq!(after.time_over_capacity_after_s, None);
    }

    #[test]
    fn a_scaled_down_hop_is_over_its_smaller_capacity() {
        // 4 workers give 100/s; autoscaling down to 2 gives 50/s (100 × 2 ÷ 4): 60/s is over it
        // (a product, 100 × 2 × 4 = 800/s, would hide it), and 1.2× it. Buckets with the workers
        // unrecorded (0) keep the starting 100/s.
        let spec = shape(1_000_000_000, Some(1_000_000_000));
        let series = [load(0, 4), load(60, 2), load(60, 0)];
        let after = after_trigger(&series, &spec, 0, Some(100.0));
        assert_eq!(after.time_over_capacity_after_s, Some(1.0), "{after:?}");
        assert!((after.peak_after_over_capacity.unwrap() - 1.2).abs() < 1e-12);
        assert_eq!(super::super::capacity::capacity_with_workers(100.0, 0.0, 4.0), 100.0);
        assert_eq!(super::super::capacity::capacity_with_workers(100.0, 2.0, 0.0), 100.0);
        assert_eq!(super::super::capacity::capacity_with_workers(100.0, 6.0, 4.0), 150.0);
    }
}
