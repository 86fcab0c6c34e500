//! Metastable at a stated hold time: the judgement `retrystorm map` counts (docs/MODEL.md,
//! "Metastability maps").
//!
//! A run is judged at `trigger_end + hold`, over the `window` before that instant. It is
//! *metastable* when it is still overloaded there: over the window, the requests that succeeded
//! are fewer than `goodput_share` × the requests that arrived, **or** hop 0's backlog grew over
//! the window to more than twice its largest pre-trigger level (a backlog that does not shrink).
//! Otherwise it is *stable*. A run that cannot show either is *not observable*, never counted
//! either way: no trigger, arrivals stopped (the horizon) before the judging instant, or a limit
//! cut the run before it.

use super::after::backlog_levels;
use super::{RunRecord, RunShape};
use crate::engine::Nanos;

/// What "still overloaded" means, and when it is judged.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Judge {
    /// How long after the trigger's end the run is judged.
    pub hold: Nanos,
    /// The span before the judging instant the rates are summed over (at most `hold`).
    pub window: Nanos,
    /// Goodput below this share of the requests arriving is overloaded (0 < share ≤ 1).
    pub goodput_share: f64,
}

/// One run's outcome at the hold time.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Judged {
    /// Not overloaded at `trigger_end + hold`.
    Stable,
    /// Still overloaded at `trigger_end + hold`.
    Metastable,
    /// No trigger, arrivals stopped before the judging instant, or the run was cut before it.
    NotObservable,
}

impl Judge {
    /// The instant a run of `shape` is judged at (None without a trigger).
    pub fn at(&self, shape: &RunShape) -> Option<Nanos> {
        shape.trigger_end.map(|end| end.saturating_add(self.hold))
    }

    /// Judges `record` (see the module's definition).
    pub fn judge(&self, record: &RunRecord, shape: &RunShape) -> Judged {
        let Some(at) = self.at(shape) else { return Judged::NotObservable };
        if at > shape.horizon || record.cut_at_ns.is_some_and(|cut| cut < at) {
            return Judged::NotObservable;
        }
        if self.overloaded(record, shape, at) {
            Judged::Metastable
        } else {
            Judged::Stable
        }
    }

    /// How long after the trigger's end a run judged metastable left its storm: the end of the
    /// first window after the judging instant that is no longer overloaded. `None` when it was
    /// still overloaded at the horizon (censored: stuck for at least `horizon − trigger_end`), or
    /// when the run was not judged metastable.
    pub fn time_to_leave(&self, record: &RunRecord, shape: &RunShape) -> Option<Nanos> {
        let at = self.at(shape)?;
        let trigger_end = shape.trigger_end?;
        let window = Window::new(record, shape, self);
        let first = (at / shape.bucket) as usize;
        let last = (shape.horizon.min(record.cut_at_ns.unwrap_or(Nanos::MAX)) / shape.bucket) as usize;
        if !window.overloaded(first) {
            return None;
        }
        (first + 1..=last).find(|&end| !window.overloaded(end)).map(|end| (end as u64 * shape.bucket) - trigger_end)
    }

    /// Is the run overloaded over the window ending at `at`?
    fn overloaded(&self, record: &RunRecord, shape: &RunShape, at: Nanos) -> bool {
        // Whole buckets: the window ends at the last boundary at or before `at`.
        Window::new(record, shape, self).overloaded((at / shape.bucket) as usize)
    }
}

/// A run's series, ready to judge windows ending at any bucket boundary.
struct Window<'r> {
    record: &'r RunRecord,
    judge: &'r Judge,
    /// Buckets in a window.
    width: usize,
    /// Hop 0's backlog at each bucket boundary: level k is the backlog at the start of bucket k.
    levels: Vec<i64>,
    /// Its largest level before the trigger started (at least 1).
    normal: i64,
}

impl<'r> Window<'r> {
    fn new(record: &'r RunRecord, shape: &RunShape, judge: &'r Judge) -> Window<'r> {
        let levels = backlog_levels(&record.hop_series[0]);
        let before = shape.first_trigger_start.map_or(0, |s| (s / shape.bucket) as usize + 1).min(levels.len());
        let normal = levels[..before].iter().copied().max().unwrap_or(0).max(1);
        let width = judge.window.div_ceil(shape.bucket).max(1) as usize;
        Window { record, judge, width, levels, normal }
    }

    /// Overloaded over the window of buckets `[end − width, end)`?
    fn overloaded(&self, end: usize) -> bool {
        let start = end.saturating_sub(self.width);
        let sum = |f: fn(&super::TenantBucket) -> u32| -> u64 {
            self.record.tenant_series.iter().flat_map(|s| s.iter().take(end).skip(start)).map(|b| u64::from(f(b))).sum()
        };
        let (arrived, succeeded) = (sum(|b| b.arrivals), sum(|b| b.successes));
        if (succeeded as f64) < self.judge.goodput_share * arrived as f64 {
            return true;
        }
        let level = |k: usize| self.levels.get(k).copied().unwrap_or(0);
        level(end) > 2 * self.normal && level(end) > level(start)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::metrics::{HopBucket, TenantBucket};

    const S: Nanos = 1_000_000_000;

    fn shape(trigger_end: Option<Nanos>, horizon: Nanos) -> RunShape {
        RunShape {
            bucket: S,
            horizon,
            recovery_hold: S,
            trigger_end,
            first_trigger_start: trigger_end.map(|e| e - 2 * S),
            hops: Vec::new(),
            tenants: 1,
            failing_by_design: 0.0,
        }
    }

    /// A run of `n` one-second buckets: `arrivals` and `successes` per bucket, and hop 0's
    /// entered/left flows per bucket.
    fn record(n: usize, tenant: impl Fn(usize) -> (u32, u32), hop: impl Fn(usize) -> (u32, u32)) -> RunRecord {
        let tenant_series = vec![(0..n)
            .map(|i| {
                let (arrivals, successes) = tenant(i);
                TenantBucket { arrivals, successes, ..TenantBucket::default() }
            })
            .collect()];
        let hop_series = vec![(0..n)
            .map(|i| {
                let (entered, left) = hop(i);
                HopBucket { entered, left, ..HopBucket::default() }
            })
            .collect()];
        RunRecord { tenant_series, hop_series, ..RunRecord::default() }
    }

    const JUDGE: Judge = Judge { hold: 10 * S, window: 5 * S, goodput_share: 0.5 };

    #[test]
    fn goodput_below_the_share_over_the_window_is_metastable() {
        // Trigger over [3, 5) s, judged at 15 s over [10, 15) s.
        let shape = shape(Some(5 * S), 30 * S);
        let healthy = record(30, |_| (10, 10), |_| (10, 10));
        assert_eq!(JUDGE.judge(&healthy, &shape), Judged::Stable);
        // 4 of 10 succeed in [10, 15) s: below half.
        let stuck = record(30, |i| (10, if (10..15).contains(&i) { 4 } else { 10 }), |_| (10, 10));
        assert_eq!(JUDGE.judge(&stuck, &shape), Judged::Metastable);
        // The same dip outside the window does not count.
        let dip = record(30, |i| (10, if (5..10).contains(&i) { 4 } else { 10 }), |_| (10, 10));
        assert_eq!(JUDGE.judge(&dip, &shape), Judged::Stable);
    }

    #[test]
    fn a_growing_backlog_past_twice_its_normal_level_is_metastable() {
        let shape = shape(Some(5 * S), 30 * S);
        // 3 in flight before the trigger; from 5 s on the hop takes in 10 and lets out 9 a
        // second while every request still succeeds: the backlog grows past 6 and keeps growing.
        let growing = record(
            30,
            |_| (10, 10),
            |i| {
                if i == 0 {
                    (3, 0)
                } else if i >= 5 {
                    (10, 9)
                } else {
                    (10, 10)
                }
            },
        );
        assert_eq!(JUDGE.judge(&growing, &shape), Judged::Metastable);
        // Level but high (grew before the window, then flat): not growing, so stable.
        let level = record(
            30,
            |_| (10, 10),
            |i| {
                if i == 0 {
                    (3, 0)
                } else if (5..9).contains(&i) {
                    (10, 8)
                } else {
                    (10, 10)
                }
            },
        );
        assert_eq!(JUDGE.judge(&level, &shape), Judged::Stable);
    }

    #[test]
    fn runs_that_cannot_show_the_hold_time_are_not_observable() {
        let run = record(30, |_| (10, 0), |_| (10, 10));
        // No trigger.
        assert_eq!(JUDGE.judge(&run, &shape(None, 30 * S)), Judged::NotObservable);
        // Arrivals stop at 12 s, before the judging instant of 15 s.
        assert_eq!(JUDGE.judge(&run, &shape(Some(5 * S), 12 * S)), Judged::NotObservable);
        // Cut at 14 s by a limit.
        let mut cut = record(30, |_| (10, 0), |_| (10, 10));
        cut.truncated = Some("max_events = 10 reached".into());
        cut.cut_at_ns = Some(14 * S);
        assert_eq!(JUDGE.judge(&cut, &shape(Some(5 * S), 30 * S)), Judged::NotObservable);
        // Cut after the judging instant: judged (and stuck).
        cut.cut_at_ns = Some(20 * S);
        assert_eq!(JUDGE.judge(&cut, &shape(Some(5 * S), 30 * S)), Judged::Metastable);
    }

    #[test]
    fn the_time_to_leave_is_the_end_of_the_first_calm_window_after_the_judgement() {
        // Judged at 15 s (trigger ends at 5 s); goodput is back from 22 s. A 5-bucket window
        // needs 3 good buckets to reach half of the arrivals: the first is [20, 25) s.
        let shape = shape(Some(5 * S), 40 * S);
        let run = record(40, |i| (10, if i >= 22 { 10 } else { 0 }), |_| (10, 10));
        assert_eq!(JUDGE.judge(&run, &shape), Judged::Metastable);
        assert_eq!(JUDGE.time_to_leave(&run, &shape), Some(25 * S - 5 * S));
        // Never back before the horizon: censored.
        let stuck = record(40, |_| (10, 0), |_| (10, 10));
        assert_eq!(JUDGE.time_to_leave(&stuck, &shape), None);
        // Not metastable at the judgement: nothing to leave.
        let fine = record(40, |_| (10, 10), |_| (10, 10));
        assert_eq!(JUDGE.time_to_leave(&fine, &shape), None);
    }
}
