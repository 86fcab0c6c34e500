//! Overload control at a hop (issue 16): admission before the queue, shedding and priority when
//! queueing, expiry drops when dequeuing, and the adaptive limit's samples. The state lives in
//! [`OverloadState`], one per replica (a hop without `replicas` is one replica).
//!
//! Fast path: a hop whose [`crate::model::OverloadSpec`] is the default (FIFO, no shedding, no
//! admission) never calls [`Simulation::admit`] or [`Simulation::admission_sample`] (one
//! predictable `bool` test each), and its queued entries never expire (`drop_at = Nanos::MAX`).

use super::{Reply, Simulation};
use crate::engine::{Handle, Nanos, NS_PER_S};
use crate::model::tokens::TokenBucket;
use crate::model::{Admission, OverloadSpec, RejectReply};

/// The mutable side of a hop's overload control.
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
}

impl OverloadState {
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

impl Simulation<'_> {
    /// Admission control for an arriving attempt (already counted in the hop's `in_flight`):
    /// true when admitted; otherwise the attempt is answered 503 or 429 and counted.
    pub(super) fn admit(&mut self, handle: Handle, hop: usize, srv: usize) -> bool {
        let now = self.now;
        let spec = &self.spec.hops[hop].overload;
        let state = &mut self.hops[srv];
        let admitted = match spec.admission {
            Admission::None => true,
            Admission::Concurrency { .. } | Admission::Aimd { .. } | Admission::Gradient { .. } => {
                f64::from(state.in_flight) <= state.overload.limit
            }
            Admission::TokenBucket { rate_per_s, burst } => {
                let o = &mut state.overload;
                let refill = (now - o.refilled_at) as f64 * rate_per_s / NS_PER_S as f64;
                TokenBucket::new(burst).deposit(&mut o.tokens, refill);
                o.refilled_at = now;
                TokenBucket::try_take(&mut o.tokens, 1.0)
            }
        };
        if spec.admission.is_concurrency_limit() {
            let limit = state.overload.limit as u32;
            let b = self.bucket();
            self.record.hop_series[hop][b].admission_limit = limit;
        }
        if !admitted {
            self.record.hops[hop].rejected_by_limit += 1;
            let reply = match spec.reject {
                RejectReply::Unavailable => Reply::Refused,
                RejectReply::Throttled(after) => Reply::Throttled(after),
            };
            self.send_reply(handle, reply);
        }
        admitted
    }

    /// Queues an attempt that found every worker busy, unless a shed threshold or the queue
    /// limit refuses it (503).
    pub(super) fn enqueue(&mut self, handle: Handle, hop: usize, srv: usize, b: usize) {
        let now = self.now;
        let spec = &self.spec.hops[hop];
        let a = self.attempts.get_mut(handle).expect("queued attempt is live");
        let (tenant, retry, deadline) = (a.tenant, a.retry, a.deadline_at);
        let state = &mut self.hops[srv];
        let len = state.queue.len() as u32;
        let o = &spec.overload;
        if len >= o.shed_queue_length || (retry && len >= o.shed_retries_queue_length) {
            self.record.hops[hop].shed += 1;
            self.send_reply(handle, Reply::Refused);
        } else if state.queue.push(now, tenant, retry, handle, deadline, spec.queue_limit) {
            a.phase = super::Phase::Queued;
            let bucket = &mut self.record.hop_series[hop][b];
            bucket.queue_len_max = bucket.queue_len_max.max(state.queue.len() as u32);
        } else {
            self.record.hops[hop].overflow += 1;
            self.send_reply(handle, Reply::Refused);
        }
    }

    /// The next queued attempt to serve; attempts that expired in the queue (`codel`,
    /// `deadline_drop`) are answered 503 without service and counted on the way.
    pub(super) fn next_queued(&mut self, hop: usize, srv: usize) -> Option<Handle> {
        loop {
            let q = self.hops[srv].queue.pop(self.now)?;
            if q.drop_at > self.now {
                return Some(q.handle);
            }
            self.record.hops[hop].dropped_expired += 1;
            self.send_reply(q.handle, Reply::Refused);
        }
    }

    /// Feeds an adaptive limit the outcome of an attempt the hop served (before its reply).
    pub(super) fn admission_sample(&mut self, handle: Handle, hop: usize, srv: usize, reply: Reply) {
        let admission = self.spec.hops[hop].overload.admission;
        if !matches!(admission, Admission::Aimd { .. } | Admission::Gradient { .. }) {
            return;
        }
        let took = self.now - self.attempts.get(handle).expect("live").arrived_at;
        let state = &mut self.hops[srv];
        let in_flight = f64::from(state.in_flight);
        let o = &mut state.overload;
        match admission {
            Admission::Aimd { min, max, latency, backoff, .. } => {
                if reply != Reply::Ok || took > latency {
                    o.limit = (o.limit * backoff).max(min);
                } else if in_flight * 2.0 >= o.limit {
                    o.limit = (o.limit + 1.0).min(max);
                }
            }
            Admission::Gradient { min, max, tolerance, smoothing, queue_size, long_window, .. } => {
                o.gradient_sample(
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

    /// Carries the concurrency limit forward over buckets without arrivals (at the end of a run).
    pub(super) fn fill_limit_series(&mut self) {
        for (hop, series) in self.record.hop_series.iter_mut().enumerate() {
            if !self.spec.hops[hop].overload.admission.is_concurrency_limit() {
                continue;
            }
            let mut last = 0;
            for bucket in series.iter_mut() {
                if bucket.admission_limit == 0 {
                    bucket.admission_limit = last;
                }
                last = bucket.admission_limit;
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn gradient_state(limit: f64) -> OverloadState {
        OverloadState { guarded: true, tokens: 0.0, refilled_at: 0, limit, long_rtt: 0.0, samples: 0 }
    }

    #[test]
    fn gradient2_update_matches_netflixs_formula() {
        // tolerance 1.5, smoothing 0.2, queue_size 4, window 600; ten 10 ms samples warm the
        // long average to 10 ms exactly (plain mean).
        let step = |o: &mut OverloadState, rtt: f64, in_flight: f64| {
            o.gradient_sample(rtt, in_flight, (1.0, 1000.0), 1.5, 0.2, 4.0, 600);
        };
        let mut o = gradient_state(100.0);
        for _ in 0..10 {
            // Fewer than half the limit in use: no growth; the limit moves towards
            // 2 × in-flight + queue_size = 24 (ours): L ← 0.8 L + 0.2 × 24.
            step(&mut o, 10e6, 10.0);
        }
        let l10 = 24.0 + 76.0 * 0.8f64.powi(10);
        assert!((o.limit - l10).abs() < 1e-9 && o.long_rtt == 10e6, "{} {}", o.limit, o.long_rtt);
        // Latency at the average: gradient min(1, 1.5) = 1, limit 0.8 L + 0.2 (L + 4) = L + 0.8.
        step(&mut o, 10e6, 60.0);
        assert!((o.limit - (l10 + 0.8)).abs() < 1e-9, "{}", o.limit);
        // Ten times slower: the long average moves by 2/601 of the gap; gradient clamps at 0.5:
        // 0.8 L + 0.2 (0.5 L + 4) = 0.9 L + 0.8.
        let long = 10e6 + (100e6 - 10e6) * 2.0 / 601.0;
        step(&mut o, 100e6, 60.0);
        assert!((o.long_rtt - long).abs() < 1e-3);
        assert!((o.limit - (0.9 * (l10 + 0.8) + 0.8)).abs() < 1e-9, "{}", o.limit);
        // Barely used, the limit never goes below `min` nor grows.
        let mut o = gradient_state(10.0);
        step(&mut o, 10e6, 0.0);
        assert!((o.limit - (0.8 * 10.0 + 0.2 * 4.0)).abs() < 1e-9, "{}", o.limit);
        let mut o = gradient_state(3.0);
        step(&mut o, 10e6, 1.0);
        assert_eq!(o.limit, 3.0, "2 × 1 + 4 = 6 > 3: no growth while app limited");
    }
}
