//! A replica's admission control state and its decisions: the token bucket's level, the
//! concurrency limit and how the adaptive limits (AIMD, gradient) move it with each served
//! attempt. The simulation applies the decisions (`sim/discipline.rs`): counters, the limit's
//! time series, the answer to a refused attempt.

use crate::engine::{Nanos, NS_PER_S};
use crate::model::tokens::TokenBucket;
use crate::model::{Admission, OverloadSpec};

/// The mutable side of a replica's overload control.
#[derive(Clone, Default)]
pub(super) struct OverloadState {
    /// True when the hop's overload spec is not the default (admission and sampling needed).
    pub guarded: bool,
    /// Token bucket: tokens left and when they were last refilled.
    tokens: f64,
    refilled_at: Nanos,
    /// AIMD, gradient, static: the current concurrency limit.
    limit: f64,
    /// Gradient: the long-run average latency (ns) and the samples it has seen.
    long_rtt: f64,
    samples: u32,
}

/// Admission control's answer to an arriving attempt.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) enum Admit {
    Yes,
    /// Refused: answered 503 or 429 without entering the queue.
    No,
}

impl OverloadState {
    pub(super) fn new(spec: &OverloadSpec) -> Self {
        let (tokens, limit) = match spec.admission {
            Admission::TokenBucket { burst, .. } => (burst, 0.0),
            Admission::Aimd { initial, .. } | Admission::Gradient { initial, .. } => (0.0, initial),
            Admission::Concurrency { limit } => (0.0, f64::from(limit)),
            Admission::None => (0.0, f64::INFINITY),
        };
        OverloadState { guarded: spec.is_active(), tokens, refilled_at: 0, limit, long_rtt: 0.0, samples: 0 }
    }

    /// The concurrency limit now (AIMD, gradient, static; infinite without one).
    #[inline]
    pub(super) fn limit(&self) -> f64 {
        self.limit
    }

    /// An attempt arrives at `now` with `in_flight` attempts inside the replica, itself
    /// included: a concurrency limit admits it while that is at most the limit; a token bucket,
    /// refilled for the time since its last arrival, when it has a token, which the attempt takes.
    #[inline]
    pub(super) fn admit(&mut self, admission: Admission, now: Nanos, in_flight: u32) -> Admit {
        let admitted = match admission {
            Admission::None => true,
            Admission::Concurrency { .. } | Admission::Aimd { .. } | Admission::Gradient { .. } => {
                f64::from(in_flight) <= self.limit
            }
            Admission::TokenBucket { rate_per_s, burst } => {
                let refill = (now - self.refilled_at) as f64 * rate_per_s / NS_PER_S as f64;
                TokenBucket::new(burst).deposit(&mut self.tokens, refill);
                self.refilled_at = now;
                TokenBucket::try_take(&mut self.tokens, 1.0)
            }
        };
        if admitted {
            Admit::Yes
        } else {
            Admit::No
        }
    }

    /// An adaptive limit learns from an attempt the replica served: it `took` that long from its
    /// arrival to its reply, `ok` when the reply is a success, while `in_flight` attempts were
    /// inside. AIMD: a failure or a latency above `latency` multiplies the limit by `backoff`
    /// (not below `min`); otherwise, with at least half the limit in use, it grows by 1 (not
    /// above `max`). Gradient: see [`OverloadState::gradient_sample`]. Other kinds learn nothing.
    #[inline]
    pub(super) fn sample(&mut self, admission: Admission, took: Nanos, ok: bool, in_flight: u32) {
        let in_flight = f64::from(in_flight);
        match admission {
            Admission::Aimd { min, max, latency, backoff, .. } => {
                if !ok || took > latency {
                    self.limit = (self.limit * backoff).max(min);
                } else if in_flight * 2.0 >= self.limit {
                    self.limit = (self.limit + 1.0).min(max);
                }
            }
            Admission::Gradient { min, max, tolerance, smoothing, queue_size, long_window, .. } => {
                self.gradient_sample(
                    took.max(1) as f64,
                    in_flight,
                    (min, max),
                    tolerance,
                    smoothing,
                    queue_size,
                    long_window,
                );
            }
            Admission::None | Admission::Concurrency { .. } | Admission::TokenBucket { .. } => {}
        }
    }

    /// Netflix `Gradient2Limit._update` with one latency sample `rtt` (ns) taken while `in_flight`
    /// attempts were inside the hop.
    #[allow(clippy::too_many_arguments)]
    fn gradient_sample(
        &mut self,
        rtt: f64,
        in_flight: f64,
        (min, max): (f64, f64),
        tolerance: f64,
        smoothing: f64,
        queue_size: f64,
        long_window: u32,
    ) {
        // ExpAvgMeasurement: a plain mean over the first 10 samples, then factor 2 / (window + 1).
        const WARMUP: u32 = 10;
        self.samples = self.samples.saturating_add(1);
        self.long_rtt = if self.samples <= WARMUP {
            self.long_rtt + (rtt - self.long_rtt) / f64::from(self.samples)
        } else {
            let factor = 2.0 / (f64::from(long_window) + 1.0);
            self.long_rtt * (1.0 - factor) + rtt * factor
        };
        // When the long average is far above the sample (load fell), let it drift back down.
        if self.long_rtt / rtt > 2.0 {
            self.long_rtt *= 0.95;
        }
        if in_flight < self.limit / 2.0 {
            // Netflix returns here ("don't grow the limit if we are app limited"), which also
            // keeps a limit that overshot: after an overload the long average stays above the
            // samples for ~`long_window` of them, the gradient is pinned at 1 and the limit
            // climbs by `smoothing × queue_size` a sample while the retry backlog keeps it half
            // used, then sits far above any load for as long as in-flight stays below half of it
            // (it froze at ~70 against ~15 in overload-shedding's gradient variants). Here it
            // does not grow either, but moves down towards twice the concurrency in use plus the
            // headroom, smoothed as any update (our change; docs/MODEL.md, "Admission control").
            let target = (2.0 * in_flight + queue_size).max(min);
            if target < self.limit {
                self.limit = (self.limit * (1.0 - smoothing) + target * smoothing).clamp(min, max);
            }
            return;
        }
        let gradient = (tolerance * self.long_rtt / rtt).clamp(0.5, 1.0);
        let estimate = self.limit * gradient + queue_size;
        self.limit = (self.limit * (1.0 - smoothing) + estimate * smoothing).clamp(min, max);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const MS: Nanos = 1_000_000;

    fn state(admission: Admission) -> OverloadState {
        OverloadState::new(&OverloadSpec { admission, ..OverloadSpec::default() })
    }

    fn aimd(initial: f64) -> Admission {
        Admission::Aimd { initial, min: 2.0, max: 12.0, latency: 100 * MS, backoff: 0.5 }
    }

    #[test]
    fn a_concurrency_limit_admits_up_to_the_limit_counting_the_arrival() {
        let mut o = state(Admission::Concurrency { limit: 3 });
        assert!(o.guarded);
        for in_flight in 1..=3 {
            assert_eq!(o.admit(Admission::Concurrency { limit: 3 }, 0, in_flight), Admit::Yes);
        }
        assert_eq!(o.admit(Admission::Concurrency { limit: 3 }, 0, 4), Admit::No);
        // A served attempt teaches a static limit nothing.
        o.sample(Admission::Concurrency { limit: 3 }, 10 * MS, false, 3);
        assert_eq!(o.limit(), 3.0);
    }

    #[test]
    fn no_admission_control_admits_everything() {
        let mut o = state(Admission::None);
        assert!(!o.guarded, "the default spec takes the fast path");
        assert_eq!(o.admit(Admission::None, 0, u32::MAX), Admit::Yes);
    }

    #[test]
    fn a_token_bucket_starts_full_refills_at_its_rate_and_holds_at_most_its_burst() {
        let bucket = Admission::TokenBucket { rate_per_s: 10.0, burst: 2.0 };
        let mut o = state(bucket);
        assert_eq!(o.admit(bucket, 0, 1), Admit::Yes);
        assert_eq!(o.admit(bucket, 0, 1), Admit::Yes);
        assert_eq!(o.admit(bucket, 0, 1), Admit::No, "the burst of 2 is spent");
        assert_eq!(o.admit(bucket, 50 * MS, 1), Admit::No, "half a token after 50 ms at 10/s");
        assert_eq!(o.admit(bucket, 100 * MS, 1), Admit::Yes, "a whole one after 100 ms");
        assert_eq!(o.admit(bucket, 100 * MS, 1), Admit::No);
        // Ten seconds refill 100 tokens, of which the bucket keeps 2.
        let at = 10_100 * MS;
        assert_eq!(o.admit(bucket, at, 1), Admit::Yes);
        assert_eq!(o.admit(bucket, at, 1), Admit::Yes);
        assert_eq!(o.admit(bucket, at, 1), Admit::No);
    }

    #[test]
    fn a_token_bucket_counts_tenths_of_a_token_as_whole_ones() {
        // Ten refills of a tenth each make one token, within the buckets' tolerance.
        let bucket = Admission::TokenBucket { rate_per_s: 1.0, burst: 1.0 };
        let mut o = state(bucket);
        assert_eq!(o.admit(bucket, 0, 1), Admit::Yes);
        for tenth in 1..10 {
            assert_eq!(o.admit(bucket, tenth * 100 * MS, 1), Admit::No, "{tenth} tenths");
        }
        assert_eq!(o.admit(bucket, 1_000 * MS, 1), Admit::Yes);
    }

    #[test]
    fn aimd_backs_off_on_failure_or_slowness_and_grows_by_one_when_half_used() {
        let a = aimd(10.0);
        let mut o = state(a);
        assert_eq!(o.admit(a, 0, 10), Admit::Yes);
        assert_eq!(o.admit(a, 0, 11), Admit::No);
        o.sample(a, 10 * MS, true, 5);
        assert_eq!(o.limit(), 11.0, "fast success with half the limit in use: +1");
        o.sample(a, 10 * MS, true, 5);
        assert_eq!(o.limit(), 11.0, "5 × 2 < 11: less than half in use, unchanged");
        o.sample(a, 10 * MS, true, 6);
        assert_eq!(o.limit(), 12.0);
        o.sample(a, 10 * MS, true, 12);
        assert_eq!(o.limit(), 12.0, "never above max");
        o.sample(a, 100 * MS, true, 12);
        assert_eq!(o.limit(), 12.0, "a latency equal to the threshold is not a drop");
        o.sample(a, 100 * MS + 1, true, 12);
        assert_eq!(o.limit(), 6.0, "slower than the threshold: × backoff");
        o.sample(a, 10 * MS, false, 12);
        assert_eq!(o.limit(), 3.0, "a failure: × backoff");
        o.sample(a, 10 * MS, false, 12);
        assert_eq!(o.limit(), 2.0, "never below min");
        assert_eq!(o.admit(a, 0, 2), Admit::Yes);
        assert_eq!(o.admit(a, 0, 3), Admit::No);
    }

    #[test]
    fn gradient2_update_matches_netflixs_formula() {
        // tolerance 1.5, smoothing 0.2, queue_size 4, window 600; ten 10 ms samples warm the
        // long average to 10 ms exactly (plain mean).
        let g = gradient(100.0, 600);
        let mut o = state(g);
        for _ in 0..10 {
            // Fewer than half the limit in use: no growth; the limit moves towards
            // 2 × in-flight + queue_size = 24 (ours): L ← 0.8 L + 0.2 × 24.
            o.sample(g, 10 * MS, true, 10);
        }
        let l10 = 24.0 + 76.0 * 0.8f64.powi(10);
        assert!((o.limit() - l10).abs() < 1e-9 && o.long_rtt == 10e6, "{} {}", o.limit(), o.long_rtt);
        // Latency at the average: gradient min(1, 1.5) = 1, limit 0.8 L + 0.2 (L + 4) = L + 0.8.
        o.sample(g, 10 * MS, true, 60);
        assert!((o.limit() - (l10 + 0.8)).abs() < 1e-9, "{}", o.limit());
        // Ten times slower: the long average moves by 2/601 of the gap; gradient clamps at 0.5:
        // 0.8 L + 0.2 (0.5 L + 4) = 0.9 L + 0.8. A failure counts only through its latency.
        let long = 10e6 + (100e6 - 10e6) * 2.0 / 601.0;
        o.sample(g, 100 * MS, false, 60);
        assert!((o.long_rtt - long).abs() < 1e-3);
        assert!((o.limit() - (0.9 * (l10 + 0.8) + 0.8)).abs() < 1e-9, "{}", o.limit());
        // Barely used, the limit never goes below `min` nor grows.
        let g = gradient(10.0, 600);
        let mut o = state(g);
        o.sample(g, 10 * MS, true, 0);
        assert!((o.limit() - (0.8 * 10.0 + 0.2 * 4.0)).abs() < 1e-9, "{}", o.limit());
        let g = gradient(3.0, 600);
        let mut o = state(g);
        o.sample(g, 10 * MS, true, 1);
        assert_eq!(o.limit(), 3.0, "2 × 1 + 4 = 6 > 3: no growth while app limited");
    }

    /// Gradient2 with tolerance 1.5, smoothing 0.2 and queue_size 4 between limits 1 and 1,000.
    fn gradient(initial: f64, long_window: u32) -> Admission {
        Admission::Gradient {
            initial,
            min: 1.0,
            max: 1000.0,
            tolerance: 1.5,
            smoothing: 0.2,
            queue_size: 4.0,
            long_window,
        }
    }

    /// Gradient2 with `long_window` 3: after the warm-up the exponential average's factor is
    /// 2 / (3 + 1) = 0.5, so every value below is exact in binary.
    fn gradient_w3() -> Admission {
        gradient(100.0, 3)
    }

    #[test]
    fn gradient2_long_average_is_the_plain_mean_of_ten_samples_then_exponential() {
        // Netflix's ExpAvgMeasurement (docs/MODEL.md, "Admission control"): the mean of the first
        // 10 samples, then value × (1 − f) + sample × f with f = 2 / (window + 1). In-flight 0
        // keeps the limit out of it (app limited).
        let g = gradient_w3();
        let mut o = state(g);
        o.sample(g, 10 * MS, true, 0);
        o.sample(g, 30 * MS, true, 0);
        assert_eq!(o.long_rtt, 20e6, "the mean of 10 and 30 ms");
        for _ in 0..7 {
            o.sample(g, 20 * MS, true, 0);
        }
        assert_eq!(o.long_rtt, 20e6, "nine samples summing to 180 ms");
        o.sample(g, 120 * MS, true, 0);
        assert_eq!(o.long_rtt, 30e6, "the tenth sample is still in the mean: 300 ms / 10");
        o.sample(g, 60 * MS, true, 0);
        assert_eq!(o.long_rtt, 45e6, "the eleventh is averaged in with f = 0.5: 15 + 30 ms");
    }

    #[test]
    fn gradient2_long_average_drifts_down_only_when_more_than_twice_the_sample() {
        // Netflix: `if (longRtt / shortRtt > 2) longRtt *= 0.95` after the sample is averaged in.
        let g = gradient_w3();
        let mut o = state(g);
        for _ in 0..10 {
            o.sample(g, 96 * MS, true, 0);
        }
        assert_eq!(o.long_rtt, 96e6);
        o.sample(g, 32 * MS, true, 0);
        assert_eq!(o.long_rtt, 64e6, "48 + 16 = 64 ms is exactly twice 32 ms: no drift");
        o.sample(g, 16 * MS, true, 0);
        assert!((o.long_rtt - 38e6).abs() < 1e-6, "32 + 8 = 40 ms is 2.5 × 16 ms: × 0.95 = 38 ms, got {}", o.long_rtt);
    }

    #[test]
    fn gradient2_updates_a_limit_exactly_half_used() {
        // Netflix returns early only when `inflight < estimatedLimit / 2`. One 10 ms sample: the
        // long average is 10 ms, gradient min(1, 1.5 × 1) = 1, so at half use the limit becomes
        // 0.8 × 10 + 0.2 × (10 + 4) = 10.8; just below half it would move towards 2 × 4 + 4 = 12
        // > 10, so it stays.
        let g = gradient(10.0, 600);
        let mut o = state(g);
        o.sample(g, 10 * MS, true, 5);
        assert!((o.limit() - 10.8).abs() < 1e-9, "5 of 10 in use is not app limited: {}", o.limit());
        let mut o = state(g);
        o.sample(g, 10 * MS, true, 4);
        assert_eq!(o.limit(), 10.0, "4 of 10 in use: app limited, and the target 12 is above it");
    }

    #[test]
    fn gradient2_leaves_an_app_limited_limit_already_at_its_target() {
        // Limit 6, one in flight (below half): the target 2 × 1 + 4 = 6 is not below the limit,
        // so nothing moves it (a smoothed update towards itself would round to 6.000000000000001).
        let g = gradient(6.0, 600);
        let mut o = state(g);
        o.sample(g, 10 * MS, true, 1);
        assert_eq!(o.limit(), 6.0);
    }
}
