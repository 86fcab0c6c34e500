//! Overload control at a hop (issue 16): admission before the queue, shedding and priority when
//! queueing, expiry drops when dequeuing, and the adaptive limit's samples. The state lives in
//! [`OverloadState`], one per hop today and one per replica once hops have replicas (issue 15).
//!
//! Fast path: a hop whose [`crate::model::OverloadSpec`] is the default (FIFO, no shedding, no
//! admission) never calls [`Simulation::admit`] or [`Simulation::admission_sample`] (one
//! predictable `bool` test each), and its queued entries never expire (`drop_at = Nanos::MAX`).

use super::{Reply, Simulation};
use crate::engine::{Handle, Nanos, NS_PER_S};
use crate::model::{Admission, OverloadSpec, RejectReply};

/// The mutable side of a hop's overload control.
#[derive(Default)]
pub(super) struct OverloadState {
    /// True when the hop's overload spec is not the default (admission and sampling needed).
    pub guarded: bool,
    /// Token bucket: tokens left and when they were last refilled.
    tokens: f64,
    refilled_at: Nanos,
    /// AIMD: the current concurrency limit.
    limit: f64,
}

impl OverloadState {
    pub(super) fn new(spec: &OverloadSpec) -> Self {
        let (tokens, limit) = match spec.admission {
            Admission::TokenBucket { burst, .. } => (burst, 0.0),
            Admission::Aimd { initial, .. } => (0.0, initial),
            Admission::Concurrency { limit } => (0.0, f64::from(limit)),
            Admission::None => (0.0, f64::INFINITY),
        };
        OverloadState { guarded: spec.is_active(), tokens, refilled_at: 0, limit }
    }
}

impl Simulation<'_> {
    /// Admission control for an arriving attempt (already counted in the hop's `in_flight`):
    /// true when admitted; otherwise the attempt is answered 503 or 429 and counted.
    pub(super) fn admit(&mut self, handle: Handle, hop: usize) -> bool {
        let now = self.now;
        let spec = &self.spec.hops[hop].overload;
        let state = &mut self.hops[hop];
        let admitted = match spec.admission {
            Admission::None => true,
            Admission::Concurrency { .. } | Admission::Aimd { .. } => {
                f64::from(state.in_flight) <= state.overload.limit
            }
            Admission::TokenBucket { rate_per_s, burst } => {
                let o = &mut state.overload;
                let refill = (now - o.refilled_at) as f64 * rate_per_s / NS_PER_S as f64;
                o.tokens = (o.tokens + refill).min(burst);
                o.refilled_at = now;
                let admitted = o.tokens >= 1.0;
                if admitted {
                    o.tokens -= 1.0;
                }
                admitted
            }
        };
        if let Admission::Concurrency { .. } | Admission::Aimd { .. } = spec.admission {
            let limit = state.overload.limit as u32;
            let b = self.bucket();
            self.record.hop_series[hop][b].admission_limit = limit;
        }
        if !admitted {
            self.record.hops[hop].rejected_by_limit += 1;
            let reply = match spec.reject {
                RejectReply::Unavailable => Reply::Failed,
                RejectReply::Throttled(after) => Reply::Throttled(after),
            };
            self.send_reply(handle, reply);
        }
        admitted
    }

    /// Queues an attempt that found every worker busy, unless a shed threshold or the queue
    /// limit refuses it (503).
    pub(super) fn enqueue(&mut self, handle: Handle, hop: usize, b: usize) {
        let now = self.now;
        let spec = &self.spec.hops[hop];
        let a = self.attempts.get_mut(handle).expect("queued attempt is live");
        let (tenant, retry, deadline) = (a.tenant, a.retry, a.deadline_at);
        let state = &mut self.hops[hop];
        let len = state.queue.len() as u32;
        let o = &spec.overload;
        if len >= o.shed_queue_length || (retry && len >= o.shed_retries_queue_length) {
            self.record.hops[hop].shed += 1;
            self.send_reply(handle, Reply::Failed);
        } else if state.queue.push(now, tenant, retry, handle, deadline, spec.queue_limit) {
            a.phase = super::Phase::Queued;
            let bucket = &mut self.record.hop_series[hop][b];
            bucket.queue_len_max = bucket.queue_len_max.max(state.queue.len() as u32);
        } else {
            self.record.hops[hop].overflow += 1;
            self.send_reply(handle, Reply::Failed);
        }
    }

    /// The next queued attempt to serve; attempts that expired in the queue (`codel`,
    /// `deadline_drop`) are answered 503 without service and counted on the way.
    pub(super) fn next_queued(&mut self, hop: usize) -> Option<Handle> {
        loop {
            let q = self.hops[hop].queue.pop(self.now)?;
            if q.drop_at > self.now {
                return Some(q.handle);
            }
            self.record.hops[hop].dropped_expired += 1;
            self.send_reply(q.handle, Reply::Failed);
        }
    }

    /// Feeds an adaptive limit the outcome of an attempt the hop served (before its reply).
    pub(super) fn admission_sample(&mut self, handle: Handle, hop: usize, reply: Reply) {
        let Admission::Aimd { min, max, latency, backoff, .. } = self.spec.hops[hop].overload.admission else {
            return;
        };
        let took = self.now - self.attempts.get(handle).expect("live").arrived_at;
        let state = &mut self.hops[hop];
        let o = &mut state.overload;
        if reply != Reply::Ok || took > latency {
            o.limit = (o.limit * backoff).max(min);
        } else if f64::from(state.in_flight) * 2.0 >= o.limit {
            o.limit = (o.limit + 1.0).min(max);
        }
    }

    /// Carries the concurrency limit forward over buckets without arrivals (at the end of a run).
    pub(super) fn fill_limit_series(&mut self) {
        for (hop, series) in self.record.hop_series.iter_mut().enumerate() {
            if !matches!(self.spec.hops[hop].overload.admission, Admission::Concurrency { .. } | Admission::Aimd { .. })
            {
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
