//! The hop's side of an attempt: arrival, faults, queueing, service, side effects, reply.

use super::{Commit, Event, Payload, Phase, Reply, Simulation};
use crate::engine::{Handle, Nanos};
use crate::model::FaultKind;
use rand::Rng;

impl Simulation<'_> {
    pub(super) fn on_arrive(&mut self, handle: Handle) {
        let now = self.now;
        let b = self.bucket();
        let a = self.attempts.get_mut(handle).expect("arriving attempt is live");
        let (hop, payload) = (a.hop as usize, a.payload);
        a.arrived_at = now;
        let state = &mut self.hops[hop];
        state.in_flight += 1;
        let bucket = &mut self.record.hop_series[hop][b];
        bucket.in_flight_max = bucket.in_flight_max.max(state.in_flight);
        bucket.entered += 1;
        if let Some(reply) = self.fault_reply(hop) {
            match reply {
                None => self.drop_unanswered(handle),
                Some(r) => self.send_reply(handle, r),
            }
            return;
        }
        if hop == 0 && payload == Payload::Invalid {
            self.send_reply(handle, Reply::Rejected);
            return;
        }
        if self.spec.hops[hop].occ {
            self.occ_read(handle, hop);
            return;
        }
        let spec = &self.spec.hops[hop];
        let workers = self.effective_workers(hop);
        let state = &mut self.hops[hop];
        if state.busy < workers {
            self.start_service(handle);
        } else if state.queue.push(self.attempts.get(handle).expect("live").tenant, handle, spec.queue_limit) {
            self.attempts.get_mut(handle).expect("live").phase = Phase::Queued;
            let bucket = &mut self.record.hop_series[hop][b];
            bucket.queue_len_max = bucket.queue_len_max.max(state.queue.len() as u32);
        } else {
            self.record.hops[hop].overflow += 1;
            self.send_reply(handle, Reply::Failed);
        }
    }

    /// The answer an active fault forces at arrival: `Some(None)` for a hang (no answer),
    /// `Some(Some(reply))` for a failure, `None` when the hop serves normally.
    pub(super) fn fault_reply(&mut self, hop: usize) -> Option<Option<Reply>> {
        let spec = self.spec;
        for kind in spec.active_faults(hop, self.now) {
            match *kind {
                FaultKind::Outage => return Some(Some(Reply::Failed)),
                FaultKind::Hang => return Some(None),
                FaultKind::Throttle { retry_after } => return Some(Some(Reply::Throttled(retry_after))),
                FaultKind::ErrorRate { p } => {
                    if self.rngs.faults[hop].gen::<f64>() < p {
                        return Some(Some(Reply::Failed));
                    }
                }
                FaultKind::Slow { .. } | FaultKind::Capacity { .. } | FaultKind::LostReply { .. } => {}
            }
        }
        None
    }

    pub(super) fn effective_workers(&self, hop: usize) -> u32 {
        let limited = self.spec.active_faults(hop, self.now).find_map(|kind| match *kind {
            FaultKind::Capacity { workers } => Some(workers),
            _ => None,
        });
        limited.unwrap_or(self.spec.hops[hop].workers)
    }

    pub(super) fn slow_factor(&self, hop: usize) -> f64 {
        self.spec
            .active_faults(hop, self.now)
            .map(|kind| match *kind {
                FaultKind::Slow { factor } => factor,
                _ => 1.0,
            })
            .product()
    }

    pub(super) fn start_service(&mut self, handle: Handle) {
        let now = self.now;
        let b = self.bucket();
        let a = self.attempts.get_mut(handle).expect("served attempt is live");
        let hop = a.hop as usize;
        a.phase = Phase::Service;
        let wait = now - a.arrived_at;
        let state = &mut self.hops[hop];
        state.busy += 1;
        let busy = state.busy;
        let bucket = &mut self.record.hop_series[hop][b];
        bucket.queue_wait_max_ns = bucket.queue_wait_max_ns.max(wait);
        self.record.hops[hop].services_started += 1;
        self.record.hops[hop].queue_wait_ns_sum += u128::from(wait);
        if hop == 0 && now < self.first_fault_start {
            self.prefault_wait_us.record(wait / 1_000).expect("auto-resizing histograms accept any u64");
        }
        let base = self.spec.hops[hop].service.sample(&mut self.rngs.service[hop], busy);
        let factor = self.slow_factor(hop);
        let service = if factor == 1.0 { base } else { (base as f64 * factor).min(u64::MAX as f64) as Nanos };
        self.attempts.get_mut(handle).expect("live").service_ns = service;
        self.record.hops[hop].busy_ns = self.record.hops[hop].busy_ns.saturating_add(service);
        self.queue.push(now.saturating_add(service), Event::ServiceDone { attempt: handle });
    }

    pub(super) fn on_service_done(&mut self, handle: Handle) {
        let a = self.attempts.get(handle).expect("finishing attempt is live");
        let (hop, payload) = (a.hop as usize, a.payload);
        let spec = &self.spec.hops[hop];
        if spec.effect {
            if payload == Payload::Poison {
                self.finish_job(handle, Reply::Failed);
                return;
            }
            if !self.commit_effect(handle) {
                self.finish_job(handle, Reply::Ok);
                return;
            }
        }
        match spec.downstream_policy.filter(|_| hop + 1 < self.spec.hops.len()) {
            Some(policy) => self.call_downstream(handle, hop + 1, policy),
            None => self.finish_job(handle, Reply::Ok),
        }
    }

    /// Commits the side effect with `SET NX PX` semantics; false when the key was live
    /// (deduplicated: acknowledged without a side effect or a downstream call).
    pub(super) fn commit_effect(&mut self, handle: Handle) -> bool {
        let now = self.now;
        let a = self.attempts.get(handle).expect("live");
        let (hop, tenant) = (a.hop as usize, a.tenant as usize);
        let store = self.spec.hops[hop].idempotency.as_ref().map(|s| s.ttl);
        let per_hop = &mut self.commits[hop];
        let index = usize::try_from(a.request_id).expect("request ids fit in memory");
        if per_hop.len() <= index {
            per_hop.resize(index + 1, Commit::default());
        }
        let commit = &mut per_hop[index];
        let counters = &mut self.record.hops[hop];
        let tc = &mut self.record.tenants[tenant];
        if let Some(ttl) = store {
            if commit.executions > 0 && now < commit.key_expires_at {
                counters.deduplicated += 1;
                tc.deduplicated += 1;
                return false;
            }
            commit.key_expires_at = now.saturating_add(ttl);
            if commit.executions > 0 {
                counters.duplicates_ttl_expired += 1;
                tc.duplicates_ttl_expired += 1;
            }
        } else if commit.executions > 0 {
            counters.duplicates_no_key += 1;
            tc.duplicates_no_key += 1;
        }
        commit.executions += 1;
        counters.executions += 1;
        true
    }

    /// The hop is done with an attempt it held a worker for: free the worker, serve the queue,
    /// and send the reply.
    pub(super) fn finish_job(&mut self, handle: Handle, reply: Reply) {
        let hop = self.attempts.get(handle).expect("live").hop as usize;
        self.hops[hop].busy -= 1;
        while self.hops[hop].busy < self.effective_workers(hop) {
            let Some(next) = self.hops[hop].queue.pop() else { break };
            self.start_service(next);
        }
        self.send_reply(handle, reply);
    }

    pub(super) fn send_reply(&mut self, handle: Handle, reply: Reply) {
        let now = self.now;
        let b = self.bucket();
        let a = self.attempts.get_mut(handle).expect("replying attempt is live");
        let hop = a.hop as usize;
        a.phase = Phase::Replying;
        a.reply = reply;
        self.hops[hop].in_flight -= 1;
        let bucket = &mut self.record.hop_series[hop][b];
        bucket.left += 1;
        if reply == Reply::Ok {
            bucket.successes += 1;
            self.record.hops[hop].ok_replies += 1;
        } else {
            bucket.failures += 1;
        }
        if self.reply_lost(hop) {
            let a = self.attempts.get_mut(handle).expect("live");
            a.phase = Phase::Done;
            let (waiting, service_ns) = (a.caller_waiting, a.service_ns);
            // The work was done for nothing: the caller never hears of it.
            let counters = &mut self.record.hops[hop];
            counters.wasted_work_ns = counters.wasted_work_ns.saturating_add(service_ns);
            counters.lost_replies += 1;
            if !waiting {
                self.attempts.remove(handle);
            }
            return;
        }
        let net = self.spec.hops[hop].network.sample(&mut self.rngs.network[hop], 0);
        self.queue.push(now.saturating_add(net), Event::ReplyArrive { attempt: handle });
    }

    /// Whether an active `lost_reply` fault at `hop` drops this reply.
    fn reply_lost(&mut self, hop: usize) -> bool {
        let p = self.spec.active_faults(hop, self.now).find_map(|kind| match *kind {
            FaultKind::LostReply { p } => Some(p),
            _ => None,
        });
        p.is_some_and(|p| self.rngs.faults[hop].gen::<f64>() < p)
    }

    /// A hung hop never answers: the attempt ends on the server side without a reply.
    pub(super) fn drop_unanswered(&mut self, handle: Handle) {
        let b = self.bucket();
        let a = self.attempts.get_mut(handle).expect("live");
        a.phase = Phase::Done;
        self.hops[a.hop as usize].in_flight -= 1;
        self.record.hop_series[a.hop as usize][b].left += 1;
        if !a.caller_waiting {
            self.attempts.remove(handle);
        }
    }
}
