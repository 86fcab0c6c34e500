//! Overload control at a hop: admission before the queue, shedding and priority when
//! queueing, expiry drops when dequeuing, and the adaptive limit's samples. Admission's state
//! and decisions are [`OverloadState`](super::overload_state::OverloadState)'s, one per replica
//! (a hop without `replicas` is one replica); this file applies them.
//!
//! Fast path: a hop whose [`crate::model::OverloadSpec`] is the default (FIFO, no shedding, no
//! admission) never calls [`Simulation::admit`] or [`Simulation::admission_sample`] (one
//! predictable `bool` test each), and its queued entries never expire (`drop_at = Nanos::MAX`).

use super::overload_state::Admit;
use super::{Reply, Simulation};
use crate::engine::Handle;
use crate::model::RejectReply;

impl Simulation<'_> {
    /// Admission control for an arriving attempt (already counted in the hop's `in_flight`):
    /// true when admitted; otherwise the attempt is answered 503 or 429 and counted.
    pub(super) fn admit(&mut self, handle: Handle, hop: usize, srv: usize) -> bool {
        let spec = &self.spec.hops[hop].overload;
        let state = &mut self.hops[srv];
        let admit = state.overload.admit(spec.admission, self.now, state.in_flight);
        if spec.admission.is_concurrency_limit() {
            let limit = state.overload.limit() as u32;
            let b = self.bucket();
            self.record.hop_series[hop][b].admission_limit = limit;
        }
        if admit == Admit::No {
            self.record.hops[hop].rejected_by_limit += 1;
            let reply = match spec.reject {
                RejectReply::Unavailable => Reply::Refused,
                RejectReply::Throttled(after) => Reply::Throttled(after),
            };
            self.send_reply(handle, reply);
        }
        admit == Admit::Yes
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
        if !admission.is_adaptive() {
            return;
        }
        let took = self.now - self.attempts.get(handle).expect("live").arrived_at;
        let state = &mut self.hops[srv];
        state.overload.sample(admission, took, reply == Reply::Ok, state.in_flight);
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
